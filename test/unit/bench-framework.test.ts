import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { PipelinedCalls } from '../../scripts/bench/framework.js';
import { announcesDrained } from '../../scripts/bench/drain.js';
import { cpuText } from '../../scripts/bench/throughput.js';

/** A scheduler endpoint on 127.0.0.1:0 whose `answer` handles each call (its JSON body parsed); counts connections. */
async function fakeMaster(answer: (body: Record<string, unknown>, req: IncomingMessage, res: ServerResponse) => void): Promise<{ url: string; connections: () => number; close: () => Promise<void> }> {
  let connections = 0;
  const server = createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => answer(JSON.parse(text) as Record<string, unknown>, req, res));
  });
  server.on('connection', () => connections++);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/api/v1/scheduler`,
    connections: () => connections,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(() => r()));
    },
  };
}

test('pipelined calls: one connection, every call answered in order with its own answer, headers as the scheduler API wants', async () => {
  const seen: Array<{ type: unknown; stream: unknown; fw: unknown }> = [];
  const m = await fakeMaster((body, req, res) => {
    seen.push({ type: body['type'], stream: req.headers['mesos-stream-id'], fw: (body['framework_id'] as { value: string }).value });
    const n = (body['acknowledge'] as { uuid: string } | undefined)?.uuid ?? '';
    // Answers of different lengths and statuses, the later calls answered sooner by the handler:
    // HTTP/1.1 still answers in order.
    const text = n === 'u1' ? 'bad uuid, a longer answer' : '';
    setTimeout(() => {
      res.writeHead(n === 'u1' ? 400 : 202, { 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
    }, n === 'u0' ? 20 : 0);
  });
  const calls = new PipelinedCalls(m.url, 'stream-1', 'fw-1');
  try {
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => calls.call('ACKNOWLEDGE', { uuid: `u${i}` })));
    assert.equal(answers.length, 50);
    assert.deepEqual(answers[0], { status: 202, text: '' });
    assert.deepEqual(answers[1], { status: 400, text: 'bad uuid, a longer answer' });
    assert.ok(answers.slice(2).every((a) => a.status === 202 && a.text === ''));
    assert.equal(m.connections(), 1);
    assert.equal(seen.length, 50);
    assert.ok(seen.every((s) => s.type === 'ACKNOWLEDGE' && s.stream === 'stream-1' && s.fw === 'fw-1'));
    // A call without a body has no sub-message.
    assert.deepEqual(await calls.call('REVIVE', {}), { status: 202, text: '' });
  } finally {
    calls.close();
    await m.close();
  }
});

test('pipelined calls: a connection the master closes fails the calls waiting on it; the next call connects again', async () => {
  let dropNext = true;
  const m = await fakeMaster((_body, req, res) => {
    if (dropNext) {
      dropNext = false;
      req.socket.destroy();
      return;
    }
    res.writeHead(202, { 'Content-Length': 0 });
    res.end();
  });
  const calls = new PipelinedCalls(m.url, 's', 'f');
  try {
    await assert.rejects(calls.call('ACKNOWLEDGE', { uuid: 'a' }));
    assert.deepEqual(await calls.call('ACKNOWLEDGE', { uuid: 'b' }), { status: 202, text: '' });
    assert.equal(m.connections(), 2);
  } finally {
    calls.close();
    await m.close();
  }
  await assert.rejects(calls.call('ACKNOWLEDGE', { uuid: 'c' }), /closed/);
});

test("announcesDrained: only Drydock's AGENT_UPDATED of that agent with its drain record DRAINED", () => {
  const updated = (id: string, state: string | undefined): Record<string, unknown> => ({
    type: 'AGENT_UPDATED',
    agent_updated: { change: 'DRAINED', agent: { agent_id: { value: id }, ...(state === undefined ? {} : { drain: { state } }) } },
  });
  assert.equal(announcesDrained(updated('a', 'DRAINED'), 'a'), true);
  assert.equal(announcesDrained(updated('a', 'DRAINING'), 'a'), false);
  assert.equal(announcesDrained(updated('b', 'DRAINED'), 'a'), false);
  assert.equal(announcesDrained(updated('a', undefined), 'a'), false);
  assert.equal(announcesDrained({ type: 'AGENT_ADDED', agent_added: { agent: { agent_info: { id: { value: 'a' } }, drain_info: { state: 'DRAINED' } } } }, 'a'), false);
  // Mesos' GET_AGENTS shape is not Drydock's: no announcement.
  assert.equal(announcesDrained({ type: 'AGENT_UPDATED', agent_updated: { agent: { agent_info: { id: { value: 'a' } }, drain_info: { state: 'DRAINED' } } } }, 'a'), false);
  assert.equal(announcesDrained({ type: 'AGENT_UPDATED' }, 'a'), false);
});

test('cpuText: per-task CPU in the note, nothing when not measured', () => {
  assert.equal(cpuText(undefined), '');
  assert.equal(cpuText({ master: 0.7, agents: 2.612, scheduler: 0.25 }), 'CPU per task: master 0.70 ms, agents 2.61 ms, scheduler 0.25 ms; ');
});

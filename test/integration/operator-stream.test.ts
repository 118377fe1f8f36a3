/**
 * The operator event stream (SUBSCRIBE) of the real built master, read raw (test/helpers/
 * event-stream.ts: fetch's body through shared/recordio.ts's RecordReader). Agents are fake ws agents, so the test
 * decides exactly when they register, update, reconnect and get replaced. Drydock's own events
 * (drains, machines, plans) are on Drydock's stream: test/integration/drydock-api.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, eventually, EVENT_DEADLINE_MS, startMaster } from '../helpers/daemons.js';
import { EventStream, type Rec } from '../helpers/event-stream.js';
import { FakeAgent } from '../helpers/fake-agent.js';
import type { TaskStatus } from '../../shared/mesos.js';

const HEARTBEAT_FLAGS = ['--heartbeat_interval=200ms'];

function status(taskId: string, state: TaskStatus['state'], uuid: string): TaskStatus {
  return { task_id: { value: taskId }, state, source: 'SOURCE_EXECUTOR', timestamp: 1700000000.25, uuid };
}

const isType = (type: string) => (r: Rec): boolean => r.type === type;

test('SUBSCRIBE: SUBSCRIBED with GET_STATE, heartbeats, AGENT_ADDED, TASK_UPDATED on state changes only, AGENT_REMOVED on replacement, nothing for a reconnect', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const a = await FakeAgent.connect(m.url);
  t.after(() => a.close());
  const ra = await a.register();

  // Before SUBSCRIBE: the third heartbeat cannot be written earlier than two intervals after this,
  // however late this process reads it (a loaded machine delays reading, never the master's timer).
  const subscribedAt = performance.now();
  const s = await EventStream.open(m, '/master/api/v1');
  t.after(() => s.close());
  assert.equal(s.status, 200);
  assert.equal(s.headers.get('content-type'), 'application/json');
  assert.equal(s.headers.get('transfer-encoding'), 'chunked');
  assert.equal(s.headers.get('content-length'), null);

  // 1. SUBSCRIBED carries exactly GET_STATE's get_state (nothing changed in between).
  await s.waitFor(isType('HEARTBEAT'), 0, undefined, 'first HEARTBEAT');
  const first = s.records[0] as { type: string; subscribed: { get_state: unknown; heartbeat_interval_seconds: number } };
  assert.equal(first.type, 'SUBSCRIBED');
  assert.equal(first.subscribed.heartbeat_interval_seconds, 0.2);
  const state = await callApi(m.url, { type: 'GET_STATE' });
  assert.deepEqual(first.subscribed.get_state, (state.json as { get_state: unknown }).get_state);
  const agents = (first.subscribed.get_state as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents;
  assert.deepEqual(agents.map((x) => x.agent_info.id.value), [ra.agent_id]);
  // 2. A HEARTBEAT at once, then more every 200 ms.
  assert.equal(s.records[1]?.type, 'HEARTBEAT');
  await eventually(() => (s.records.filter(isType('HEARTBEAT')).length >= 3 ? true : undefined), undefined, 10, '2 more periodic heartbeats');
  // A timer may end up to a millisecond early: 2 x 200 ms, less that.
  assert.ok(performance.now() - subscribedAt >= 398, 'heartbeats are periodic (200 ms apart), not a burst');

  // 3. AGENT_ADDED for a new agent, in GET_AGENTS' shape.
  const b = await FakeAgent.connect(m.url);
  t.after(() => b.close());
  const rb = await b.register();
  const iAdded = await s.waitFor((r) => r.type === 'AGENT_ADDED', 0, undefined, 'AGENT_ADDED');
  const added = s.records[iAdded] as unknown as { agent_added: { agent: { agent_info: { id: { value: string } }; active: boolean } } };
  assert.equal(added.agent_added.agent.agent_info.id.value, rb.agent_id);
  const listed = ((await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents;
  assert.deepEqual(added.agent_added.agent, listed.find((x) => x.agent_info.id.value === rb.agent_id));

  // 4. TASK_UPDATED on a state change; the identical retry gives nothing; the next change does.
  b.statusUpdate('fw-1', status('t1', 'TASK_RUNNING', 'dXVpZC0x'));
  const iRun = await s.waitFor(isType('TASK_UPDATED'), iAdded, undefined, 'TASK_UPDATED running');
  const upd = s.records[iRun] as unknown as { task_updated: { framework_id: { value: string }; state: string; status: TaskStatus } };
  assert.deepEqual(upd.task_updated.framework_id, { value: 'fw-1' });
  assert.equal(upd.task_updated.state, 'TASK_RUNNING');
  assert.equal(upd.task_updated.status.task_id.value, 't1');
  assert.equal(upd.task_updated.status.uuid, 'dXVpZC0x');
  assert.deepEqual(upd.task_updated.status.agent_id, { value: rb.agent_id });
  b.statusUpdate('fw-1', status('t1', 'TASK_RUNNING', 'dXVpZC0x'));
  b.statusUpdate('fw-1', status('t1', 'TASK_FINISHED', 'dXVpZC0y'));
  const iFin = await s.waitFor(isType('TASK_UPDATED'), iRun + 1, undefined, 'TASK_UPDATED finished');
  assert.equal((s.records[iFin] as unknown as { task_updated: { state: string } }).task_updated.state, 'TASK_FINISHED');
  assert.deepEqual(s.eventsBetween(iRun + 1, iFin), [], 'the retried identical update is not an event');

  // 5. A known agent reconnecting is not AGENT_ADDED (nor is its disconnect anything).
  const iBefore = s.records.length;
  b.terminate();
  await m.daemon.waitForMsg('agent disconnected', { agentId: rb.agent_id });
  const b2 = await FakeAgent.connect(m.url, { self: { port: b.self.port } });
  t.after(() => b2.close());
  assert.equal((await b2.register({ agentId: rb.agent_id })).agent_id, rb.agent_id);
  // A sentinel: a brand-new agent. Everything between is heartbeats.
  const c = await FakeAgent.connect(m.url);
  t.after(() => c.close());
  const rc = await c.register();
  const iC = await s.waitFor((r) => r.type === 'AGENT_ADDED' && (r as unknown as { agent_added: { agent: { agent_info: { id: { value: string } } } } }).agent_added.agent.agent_info.id.value === rc.agent_id, iBefore, undefined, 'sentinel AGENT_ADDED');
  assert.deepEqual(s.eventsBetween(iBefore, iC), [], 'disconnect and reconnect are not streamed');

  // 6. A new agent at the ip:port of a disconnected one replaces it: AGENT_REMOVED, then AGENT_ADDED.
  c.terminate();
  await m.daemon.waitForMsg('agent disconnected', { agentId: rc.agent_id });
  const iRepl = s.records.length;
  const d = await FakeAgent.connect(m.url, { self: { port: c.self.port } });
  t.after(() => d.close());
  const rd = await d.register();
  assert.notEqual(rd.agent_id, rc.agent_id);
  const iRemoved = await s.waitFor(isType('AGENT_REMOVED'), iRepl, undefined, 'AGENT_REMOVED');
  assert.deepEqual(s.records[iRemoved], { type: 'AGENT_REMOVED', agent_removed: { agent_id: { value: rc.agent_id } } });
  await s.waitFor((r) => r.type === 'AGENT_ADDED', iRemoved, undefined, 'AGENT_ADDED of the replacement');
  assert.deepEqual(s.eventsBetween(iRepl, s.records.length).slice(0, 2), ['AGENT_REMOVED', 'AGENT_ADDED']);
});

test('SUBSCRIBE goes through the same framing checks, under every API path', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const get = await fetch(`${m.url}/api/v1`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(get.status, 405);
  await get.text();
  const form = await callApi(m.url, { type: 'SUBSCRIBE' }, { 'content-type': 'text/plain' });
  assert.equal(form.status, 415);
  const neither = await callApi(m.url, { type: 'SUBSCRIBE' }, { 'content-type': 'application/json', accept: 'text/html' });
  assert.equal(neither.status, 406);
  for (const path of ['/api/v1', '/master/api/v1', '/mesos/api/v1']) {
    const s = await EventStream.open(m, path);
    await s.waitFor(isType('HEARTBEAT'), 0, undefined, `HEARTBEAT via ${path}`);
    assert.equal(s.records[0]?.type, 'SUBSCRIBED', path);
    s.close();
  }
});

test('past --max_operator_event_stream_subscribers the oldest stream is closed cleanly; the others go on', async (t) => {
  const m = await startMaster(t, { flags: [...HEARTBEAT_FLAGS, '--max_operator_event_stream_subscribers=2'] });
  const s1 = await EventStream.open(m);
  t.after(() => s1.close());
  await s1.waitFor(isType('HEARTBEAT'));
  const s2 = await EventStream.open(m);
  t.after(() => s2.close());
  await s2.waitFor(isType('HEARTBEAT'));
  const s3 = await EventStream.open(m);
  t.after(() => s3.close());
  await s3.waitFor(isType('HEARTBEAT'));
  let timer: NodeJS.Timeout | undefined;
  const ended = await Promise.race([s1.ended, new Promise<string>((r) => (timer = setTimeout(() => r('still open'), EVENT_DEADLINE_MS)))]).finally(() => clearTimeout(timer));
  assert.equal(ended, 'END', 'the oldest stream ends with the chunked terminator');
  await m.daemon.waitForMsg('operator stream closed', { reason: 'TOO_MANY_SUBSCRIBERS', subscribers: 2 });
  // The two newest still get heartbeats.
  const n2 = s2.records.length;
  const n3 = s3.records.length;
  await s2.waitFor(isType('HEARTBEAT'), n2, undefined, 's2 heartbeat');
  await s3.waitFor(isType('HEARTBEAT'), n3, undefined, 's3 heartbeat');
});

test('a client that goes away is forgotten at once: no stream, no bus listener left', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const counts: Array<{ opened: number; closed: number }> = [];
  for (let round = 0; round < 2; round++) {
    const from = m.daemon.records.length;
    const s = await EventStream.open(m);
    await s.waitFor(isType('HEARTBEAT'));
    const opened = await m.daemon.waitForMsg('operator stream opened', {}, undefined, from);
    assert.equal(opened['subscribers'], 1);
    s.close();
    const closed = await m.daemon.waitForMsg('operator stream closed', { reason: 'CLIENT_GONE' }, undefined, from);
    assert.equal(closed['subscribers'], 0);
    counts.push({ opened: Number(opened['eventListeners']), closed: Number(closed['eventListeners']) });
  }
  const [r1, r2] = counts;
  assert.ok(r1 !== undefined && r2 !== undefined);
  assert.equal(r1.closed, r1.opened - 1, 'the stream removed its bus listener');
  assert.deepEqual(r2, r1, 'a second subscriber leaves the same count: nothing leaked');
  // The master still answers normally.
  assert.equal((await callApi(m.url, { type: 'GET_HEALTH' })).status, 200);
});

test("the master's graceful stop ends every stream cleanly, Drydock's own too", async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const s1 = await EventStream.open(m);
  const s2 = await EventStream.open(m);
  const s3 = await EventStream.drydock(m);
  await s1.waitFor(isType('HEARTBEAT'));
  await s2.waitFor(isType('HEARTBEAT'));
  await s3.waitFor(isType('HEARTBEAT'));
  const exit = await m.daemon.stop();
  assert.equal(exit.code, 0);
  assert.equal(await s1.ended, 'END');
  assert.equal(await s2.ended, 'END');
  assert.equal(await s3.ended, 'END');
});

/**
 * Drydock's own API on the real built master: `GET /drydock/v1/agents[/<id>]` and the event
 * stream `GET /drydock/v1/events`, with fake ws agents so the test decides when they register,
 * drain, disconnect and go. The events a plan or a console waits on (AGENT_UPDATED on a drain,
 * DRAINED, deactivate, reactivate, a disconnect; MACHINE_UPDATED on every mode change;
 * AGENT_LEFT) come on Drydock's stream and never on Mesos' SUBSCRIBE; each record is one HTTP
 * chunk of its own (read off the socket); the routes are in the read-only realm and filtered by
 * the view ACLs.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { parseJson } from '../../shared/json.js';
import { callApi, startMaster, tempDir, type MasterHandle, EVENT_DEADLINE_MS } from '../helpers/daemons.js';
import { EventStream, type Rec } from '../helpers/event-stream.js';
import { FakeAgent } from '../helpers/fake-agent.js';

const HEARTBEAT_FLAGS = ['--heartbeat_interval=200ms'];
const isType = (type: string) => (r: Rec): boolean => r.type === type;

/** A Drydock agent as the API writes it: only what these tests read. */
interface DrydockAgent {
  agent_id: { value: string };
  hostname: string;
  ip: string;
  port: number;
  peer?: string;
  phase: string;
  state: string;
  connected: boolean;
  active: boolean;
  deactivated: boolean;
  machine: { id: { hostname?: string; ip?: string }; mode?: string; unavailability?: unknown };
  drain?: { state: string; remaining_tasks: number; waiting_for: unknown[]; config: unknown };
  conditions: Record<string, unknown>;
}

async function get(m: MasterHandle, path: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string; json: unknown; contentType: string | null }> {
  const r = await fetch(`${m.url}${path}`, { headers, signal: AbortSignal.timeout(10_000) });
  const text = await r.text();
  return { status: r.status, text, json: r.headers.get('content-type') === 'application/json' ? parseJson(text) : undefined, contentType: r.headers.get('content-type') };
}

const agentOf = (r: Rec): DrydockAgent & { change?: string } => {
  const u = r['agent_updated'] as { change: string; agent: DrydockAgent };
  return { ...u.agent, change: u.change };
};

test("GET /drydock/v1/agents and /<id>: Drydock's facts about each agent, the same as its stream's AGENT_UPDATED; 404 once the master no longer has it", async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const a = await FakeAgent.connect(m.url, { self: { hostname: 'node8', ip: '127.0.0.8' } });
  t.after(() => a.close());
  const id = (await a.register({ capabilities: ['AGENT_DRAINING'] })).agent_id;

  const list = await get(m, '/drydock/v1/agents');
  assert.equal(list.status, 200);
  assert.equal(list.contentType, 'application/json');
  const agents = (list.json as { agents: DrydockAgent[] }).agents;
  assert.equal(agents.length, 1);
  const one = agents[0] as DrydockAgent;
  assert.deepEqual({ ...one, peer: undefined }, {
    agent_id: { value: id },
    hostname: 'node8',
    ip: '127.0.0.8',
    port: a.self.port,
    peer: undefined,
    phase: 'REGISTERED',
    state: 'ACTIVE',
    connected: true,
    active: true,
    deactivated: false,
    machine: { id: { hostname: 'node8', ip: '127.0.0.8' }, mode: 'UP' },
    conditions: {},
  });
  // The session comes from the test's own address, whatever the agent says its is.
  assert.match(one.peer ?? '', /127\.0\.0\.1$/);
  assert.deepEqual((await get(m, `/drydock/v1/agents/${id}`)).json, one);

  // A window over its machine: the mode and the window show in the agent's machine.
  // The start is an int64 beyond a double's exact integers: written as digits, it must come back the same.
  const sched = '{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{"windows":[{"machine_ids":[{"hostname":"node8","ip":"127.0.0.8"}],"unavailability":{"start":{"nanoseconds":1800000000123456789},"duration":{"nanoseconds":3600000000000}}}]}}}';
  assert.equal((await callApi(m.url, sched)).status, 200);
  const scheduled = await get(m, `/drydock/v1/agents/${id}`);
  assert.match(scheduled.text, /"machine":\{"id":\{"hostname":"node8","ip":"127\.0\.0\.8"\},"mode":"DRAINING","unavailability":\{"start":\{"nanoseconds":1800000000123456789\},"duration":\{"nanoseconds":3600000000000\}\}\}/);
  assert.equal((await callApi(m.url, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: {} } })).status, 200);

  // Drained with mark_gone: AGENT_LEFT on the stream, and the master no longer has it.
  const s = await EventStream.drydock(m);
  t.after(() => s.close());
  await s.waitFor(isType('HEARTBEAT'), 0, EVENT_DEADLINE_MS, 'first HEARTBEAT');
  assert.equal(s.headers.get('content-type'), 'application/recordio');
  const snapshot = s.records[0] as unknown as { type: string; snapshot: { agents: DrydockAgent[]; heartbeat_interval_seconds: number } };
  assert.equal(snapshot.type, 'SNAPSHOT');
  assert.equal(snapshot.snapshot.heartbeat_interval_seconds, 0.2);
  assert.deepEqual(snapshot.snapshot.agents, [(await get(m, `/drydock/v1/agents/${id}`)).json]);
  assert.equal((await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: id }, mark_gone: true } })).status, 200);
  const left = await s.waitFor(isType('AGENT_LEFT'), 0, EVENT_DEADLINE_MS, 'AGENT_LEFT');
  assert.deepEqual(s.records[left], { type: 'AGENT_LEFT', agent_left: { agent_id: { value: id }, reason: 'GONE', message: 'Agent has been marked gone' } });
  const gone = await get(m, `/drydock/v1/agents/${id}`);
  assert.deepEqual([gone.status, gone.text], [404, `Agent '${id}' not found`]);
  assert.deepEqual((await get(m, '/drydock/v1/agents')).json, { agents: [] });
});

test("Drydock's events a plan can wait on come on Drydock's stream, never on Mesos' SUBSCRIBE", async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const agent = await FakeAgent.connect(m.url, { self: { hostname: 'node9', ip: '127.0.0.9' } });
  t.after(() => agent.close());
  const agentId = (await agent.register({ capabilities: ['AGENT_DRAINING'] })).agent_id;
  const s = await EventStream.drydock(m);
  t.after(() => s.close());
  const mesos = await EventStream.open(m);
  t.after(() => mesos.close());
  await s.waitFor(isType('SNAPSHOT'));
  await mesos.waitFor(isType('SUBSCRIBED'));

  let from = s.records.length;
  assert.equal((await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agentId }, max_grace_period: { seconds: 2 } } })).status, 200);
  // No tasks: DRAINING, then DRAINED at once; each record is the agent as /drydock/v1/agents/<id> writes it.
  const draining = await s.waitFor((r) => r.type === 'AGENT_UPDATED' && agentOf(r).change === 'DRAINING', from, EVENT_DEADLINE_MS, 'AGENT_UPDATED (DRAINING)');
  assert.deepEqual([agentOf(s.records[draining]!).state, agentOf(s.records[draining]!).drain?.config], ['DRAINING', { max_grace_period: { nanoseconds: 2_000_000_000 }, mark_gone: false }]);
  const drained = await s.waitFor((r) => r.type === 'AGENT_UPDATED' && agentOf(r).change === 'DRAINED', draining, EVENT_DEADLINE_MS, 'AGENT_UPDATED (DRAINED)');
  const d = agentOf(s.records[drained]!);
  assert.deepEqual([d.state, d.deactivated, d.active, d.drain?.state, d.drain?.remaining_tasks, d.drain?.waiting_for], ['DRAINED', true, false, 'DRAINED', 0, []]);
  from = drained + 1;
  assert.equal((await callApi(m.url, { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: { value: agentId } } })).status, 200);
  const reactivated = agentOf(s.records[await s.waitFor(isType('AGENT_UPDATED'), from, EVENT_DEADLINE_MS, 'AGENT_UPDATED (reactivated)')]!);
  assert.deepEqual([reactivated.change, reactivated.state, reactivated.drain, reactivated.active], ['REACTIVATED', 'ACTIVE', undefined, true]);
  from = s.records.length;
  assert.equal((await callApi(m.url, { type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: { value: agentId } } })).status, 200);
  const deactivated = agentOf(s.records[await s.waitFor(isType('AGENT_UPDATED'), from, EVENT_DEADLINE_MS, 'AGENT_UPDATED (deactivated)')]!);
  assert.deepEqual([deactivated.change, deactivated.state, deactivated.deactivated], ['DEACTIVATED', 'DEACTIVATED', true]);

  // Machines: scheduled (DRAINING), DOWN, UP; each record carries the whole maintenance status.
  const machine = { hostname: 'node9', ip: '127.0.0.9' };
  const statusOf = (r: Rec): { change: string; machine_ids: unknown[]; status: { draining_machines?: unknown[]; down_machines?: unknown[] } } => r['machine_updated'] as never;
  from = s.records.length;
  const sched = { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [machine], unavailability: { start: { nanoseconds: 1 } } }] } } };
  assert.equal((await callApi(m.url, sched)).status, 200);
  let i = await s.waitFor(isType('MACHINE_UPDATED'), from, EVENT_DEADLINE_MS, 'MACHINE_UPDATED (scheduled)');
  assert.deepEqual([statusOf(s.records[i]!).change, statusOf(s.records[i]!).machine_ids], ['SCHEDULED', [machine]]);
  assert.deepEqual(statusOf(s.records[i]!).status.draining_machines, [{ id: machine }]);
  assert.equal((await callApi(m.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [machine] } })).status, 200);
  i = await s.waitFor(isType('MACHINE_UPDATED'), i + 1, EVENT_DEADLINE_MS, 'MACHINE_UPDATED (down)');
  assert.deepEqual([statusOf(s.records[i]!).change, statusOf(s.records[i]!).status.down_machines], ['DOWN', [machine]]);
  // Its agent is removed with its machine DOWN: AGENT_LEFT, as Mesos' stream says AGENT_REMOVED.
  const left = await s.waitFor(isType('AGENT_LEFT'), from, EVENT_DEADLINE_MS, 'AGENT_LEFT');
  assert.deepEqual(s.records[left], { type: 'AGENT_LEFT', agent_left: { agent_id: { value: agentId }, reason: 'REMOVED', message: "Operator initiated 'Machine DOWN'" } });
  await mesos.waitFor(isType('AGENT_REMOVED'), 0, EVENT_DEADLINE_MS, "Mesos' AGENT_REMOVED");
  assert.equal((await callApi(m.url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [machine] } })).status, 200);
  i = await s.waitFor(isType('MACHINE_UPDATED'), i + 1, EVENT_DEADLINE_MS, 'MACHINE_UPDATED (up)');
  assert.deepEqual([statusOf(s.records[i]!).change, statusOf(s.records[i]!).status], ['UP', {}]);

  // A newcomer and a disconnect: AGENT_UPDATED ADDED, then DISCONNECTED (connected: false).
  const b = await FakeAgent.connect(m.url, { self: { hostname: 'node10', ip: '127.0.0.10' } });
  t.after(() => b.close());
  const bId = (await b.register()).agent_id;
  from = s.records.length;
  b.terminate();
  const off = agentOf(s.records[await s.waitFor((r) => r.type === 'AGENT_UPDATED' && agentOf(r).change === 'DISCONNECTED', 0, EVENT_DEADLINE_MS, 'AGENT_UPDATED (DISCONNECTED)')]!);
  assert.deepEqual([off.agent_id.value, off.state, off.connected, off.peer], [bId, 'DISCONNECTED', false, undefined]);
  assert.ok(s.records.some((r) => r.type === 'AGENT_UPDATED' && agentOf(r).change === 'ADDED' && agentOf(r).agent_id.value === bId), 'ADDED came first');

  // Mesos' stream carried none of it (a sentinel event makes sure it is up to date).
  const c = await FakeAgent.connect(m.url);
  t.after(() => c.close());
  const cId = (await c.register()).agent_id;
  await mesos.waitFor((r) => r.type === 'AGENT_ADDED' && (r['agent_added'] as { agent: { agent_info: { id: { value: string } } } }).agent.agent_info.id.value === cId, 0, EVENT_DEADLINE_MS, 'the sentinel AGENT_ADDED');
  const mesosTypes = new Set(mesos.records.map((r) => r.type));
  for (const type of ['AGENT_UPDATED', 'AGENT_LEFT', 'MACHINE_UPDATED', 'SNAPSHOT']) assert.ok(!mesosTypes.has(type), `no ${type} on Mesos' stream`);
  assert.deepEqual([...mesosTypes].sort(), ['AGENT_ADDED', 'AGENT_REMOVED', 'HEARTBEAT', 'SUBSCRIBED']);
});

/**
 * The body of `GET path` read off a raw socket, chunk by chunk as the chunked encoding frames it,
 * until `enough` says so (or the deadline): each HTTP chunk's data as it came.
 */
function rawChunks(m: MasterHandle, path: string, enough: (chunks: Buffer[]) => boolean, timeoutMs: number): Promise<{ head: string; chunks: Buffer[] }> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: m.ip, port: m.port });
    let buf = Buffer.alloc(0);
    let head: string | undefined;
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => finish(new Error(`${chunks.length} chunks after ${timeoutMs} ms`)), timeoutMs);
    const finish = (e?: Error): void => {
      clearTimeout(timer);
      socket.destroy();
      if (e !== undefined) reject(e);
      else resolve({ head: head ?? '', chunks });
    };
    socket.on('error', (e) => finish(e));
    socket.on('data', (data: Buffer) => {
      buf = Buffer.concat([buf, data]);
      if (head === undefined) {
        const end = buf.indexOf('\r\n\r\n');
        if (end === -1) return;
        head = buf.subarray(0, end).toString('latin1');
        buf = buf.subarray(end + 4);
      }
      // <hex size>\r\n<data>\r\n, as many as are whole.
      for (;;) {
        const eol = buf.indexOf('\r\n');
        if (eol === -1) return;
        const size = Number.parseInt(buf.subarray(0, eol).toString('latin1'), 16);
        if (buf.length < eol + 2 + size + 2) return;
        chunks.push(buf.subarray(eol + 2, eol + 2 + size));
        buf = buf.subarray(eol + 2 + size + 2);
        if (enough(chunks)) return finish();
      }
    });
    socket.write(`GET ${path} HTTP/1.1\r\nHost: ${m.address}\r\nAccept: application/recordio\r\n\r\n`);
  });
}

test('one record per HTTP chunk: SNAPSHOT and HEARTBEAT written back to back, and two events of one drain', async (t) => {
  // Heartbeats far apart: the only records are the ones the test makes.
  const m = await startMaster(t, { flags: ['--heartbeat_interval=20secs'] });
  const a = await FakeAgent.connect(m.url);
  t.after(() => a.close());
  const id = (await a.register({ capabilities: ['AGENT_DRAINING'] })).agent_id;
  const types = (chunks: Buffer[]): string[] => chunks.map((c) => {
    const text = c.toString('utf8');
    const nl = text.indexOf('\n');
    return (JSON.parse(text.slice(nl + 1)) as { type: string }).type;
  });
  // An idle agent's drain goes DRAINING then DRAINED in one turn of the master: two records, two chunks.
  const reading = rawChunks(m, '/drydock/v1/events', (chunks) => types(chunks).includes('AGENT_UPDATED') && types(chunks).filter((x) => x === 'AGENT_UPDATED').length === 2, 10_000);
  await m.daemon.waitForMsg('drydock event stream opened', {}, 5_000);
  assert.equal((await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: id } } })).status, 200);
  const { head, chunks } = await reading;
  assert.match(head, /^HTTP\/1\.1 200 /);
  assert.match(head, /\r\ntransfer-encoding: chunked/i);
  assert.deepEqual(types(chunks), ['SNAPSHOT', 'HEARTBEAT', 'AGENT_UPDATED', 'AGENT_UPDATED']);
  for (const c of chunks) {
    // The chunk is exactly `<length>\n<record>`: the length counts what follows, to the byte.
    const nl = c.indexOf('\n');
    assert.equal(Number(c.subarray(0, nl).toString('latin1')), c.length - nl - 1, `one whole record in the chunk: ${c.toString('utf8').slice(0, 60)}`);
  }
});

test('the routes are in the read-only realm and filtered by the view ACLs; GET only', async (t) => {
  const dir = tempDir(t, 'drydock-own-api-');
  const secret = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, 0o600);
    return path;
  };
  const credentials = secret('credentials', 'ops ops-s3cret\nrack2 rack2-s3cret\n');
  const acls = secret('acls.json', JSON.stringify({
    permissive: false,
    register_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }],
    view_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }, { principals: { values: ['rack2'] }, agents: { values: ['rack:r2'] } }],
    get_maintenance_statuses: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
  }));
  const m = await startMaster(t, { flags: ['--authenticate_http_readonly', `--credentials=${credentials}`, `--acls=${acls}`] });
  const a = await FakeAgent.connect(m.url, { self: { hostname: 'acl-a' } });
  t.after(() => a.close());
  const id = (await a.register()).agent_id;
  const as = (p: string, s: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${p}:${s}`).toString('base64')}` });

  const anonymous = await get(m, '/drydock/v1/agents');
  assert.equal(anonymous.status, 401);
  assert.equal((await get(m, '/drydock/v1/events')).status, 401);
  assert.equal((await get(m, '/drydock/v1/agents', as('ops', 'wrong'))).status, 401);
  const ops = (await get(m, `/drydock/v1/agents/${id}`, as('ops', 'ops-s3cret'))).json as DrydockAgent;
  assert.deepEqual([ops.state, ops.machine.mode], ['ACTIVE', 'UP']);
  // rack2 may not see a rack r1 agent: not listed, a 404 by id, not in its stream's snapshot.
  assert.deepEqual((await get(m, '/drydock/v1/agents', as('rack2', 'rack2-s3cret'))).json, { agents: [] });
  assert.equal((await get(m, `/drydock/v1/agents/${id}`, as('rack2', 'rack2-s3cret'))).status, 404);
  const s = await EventStream.drydock(m, as('rack2', 'rack2-s3cret'));
  t.after(() => s.close());
  await s.waitFor(isType('SNAPSHOT'));
  assert.deepEqual((s.records[0]?.['snapshot'] as { agents: unknown[] }).agents, []);
  // Only GET (and HEAD for the agents).
  const post = await fetch(`${m.url}/drydock/v1/events`, { method: 'POST', headers: as('ops', 'ops-s3cret'), signal: AbortSignal.timeout(5000) });
  assert.deepEqual([post.status, post.headers.get('allow')], [405, 'GET']);
  await post.text();
});

/**
 * The operator event stream (SUBSCRIBE) of the real built master, read raw (test/helpers/
 * event-stream.ts: fetch's body through shared/recordio.ts's RecordReader). Agents are fake ws agents, so the test
 * decides exactly when they register, update, reconnect and get replaced.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, eventually, startMaster } from '../helpers/daemons.js';
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
  await s.waitFor(isType('HEARTBEAT'), 0, 5_000, 'first HEARTBEAT');
  const first = s.records[0] as { type: string; subscribed: { get_state: unknown; heartbeat_interval_seconds: number } };
  assert.equal(first.type, 'SUBSCRIBED');
  assert.equal(first.subscribed.heartbeat_interval_seconds, 0.2);
  const state = await callApi(m.url, { type: 'GET_STATE' });
  assert.deepEqual(first.subscribed.get_state, (state.json as { get_state: unknown }).get_state);
  const agents = (first.subscribed.get_state as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents;
  assert.deepEqual(agents.map((x) => x.agent_info.id.value), [ra.agent_id]);
  // 2. A HEARTBEAT at once, then more every 200 ms.
  assert.equal(s.records[1]?.type, 'HEARTBEAT');
  await eventually(() => (s.records.filter(isType('HEARTBEAT')).length >= 3 ? true : undefined), 30_000, 10, '2 more periodic heartbeats');
  // A timer may end up to a millisecond early: 2 x 200 ms, less that.
  assert.ok(performance.now() - subscribedAt >= 398, 'heartbeats are periodic (200 ms apart), not a burst');

  // 3. AGENT_ADDED for a new agent, in GET_AGENTS' shape.
  const b = await FakeAgent.connect(m.url);
  t.after(() => b.close());
  const rb = await b.register();
  const iAdded = await s.waitFor((r) => r.type === 'AGENT_ADDED', 0, 5_000, 'AGENT_ADDED');
  const added = s.records[iAdded] as unknown as { agent_added: { agent: { agent_info: { id: { value: string } }; active: boolean } } };
  assert.equal(added.agent_added.agent.agent_info.id.value, rb.agent_id);
  const listed = ((await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents;
  assert.deepEqual(added.agent_added.agent, listed.find((x) => x.agent_info.id.value === rb.agent_id));

  // 4. TASK_UPDATED on a state change; the identical retry gives nothing; the next change does.
  b.statusUpdate('fw-1', status('t1', 'TASK_RUNNING', 'dXVpZC0x'));
  const iRun = await s.waitFor(isType('TASK_UPDATED'), iAdded, 5_000, 'TASK_UPDATED running');
  const upd = s.records[iRun] as unknown as { task_updated: { framework_id: { value: string }; state: string; status: TaskStatus } };
  assert.deepEqual(upd.task_updated.framework_id, { value: 'fw-1' });
  assert.equal(upd.task_updated.state, 'TASK_RUNNING');
  assert.equal(upd.task_updated.status.task_id.value, 't1');
  assert.equal(upd.task_updated.status.uuid, 'dXVpZC0x');
  assert.deepEqual(upd.task_updated.status.agent_id, { value: rb.agent_id });
  b.statusUpdate('fw-1', status('t1', 'TASK_RUNNING', 'dXVpZC0x'));
  b.statusUpdate('fw-1', status('t1', 'TASK_FINISHED', 'dXVpZC0y'));
  const iFin = await s.waitFor(isType('TASK_UPDATED'), iRun + 1, 5_000, 'TASK_UPDATED finished');
  assert.equal((s.records[iFin] as unknown as { task_updated: { state: string } }).task_updated.state, 'TASK_FINISHED');
  assert.deepEqual(s.eventsBetween(iRun + 1, iFin), [], 'the retried identical update is not an event');

  // 5. A known agent reconnecting is not AGENT_ADDED (nor is its disconnect anything).
  const iBefore = s.records.length;
  b.terminate();
  await m.daemon.waitForMsg('agent disconnected', { agentId: rb.agent_id }, 5_000);
  const b2 = await FakeAgent.connect(m.url, { self: { port: b.self.port } });
  t.after(() => b2.close());
  assert.equal((await b2.register({ agentId: rb.agent_id })).agent_id, rb.agent_id);
  // A sentinel: a brand-new agent. Everything between is heartbeats.
  const c = await FakeAgent.connect(m.url);
  t.after(() => c.close());
  const rc = await c.register();
  const iC = await s.waitFor((r) => r.type === 'AGENT_ADDED' && (r as unknown as { agent_added: { agent: { agent_info: { id: { value: string } } } } }).agent_added.agent.agent_info.id.value === rc.agent_id, iBefore, 5_000, 'sentinel AGENT_ADDED');
  assert.deepEqual(s.eventsBetween(iBefore, iC), [], 'disconnect and reconnect are not streamed');

  // 6. A new agent at the ip:port of a disconnected one replaces it: AGENT_REMOVED, then AGENT_ADDED.
  c.terminate();
  await m.daemon.waitForMsg('agent disconnected', { agentId: rc.agent_id }, 5_000);
  const iRepl = s.records.length;
  const d = await FakeAgent.connect(m.url, { self: { port: c.self.port } });
  t.after(() => d.close());
  const rd = await d.register();
  assert.notEqual(rd.agent_id, rc.agent_id);
  const iRemoved = await s.waitFor(isType('AGENT_REMOVED'), iRepl, 5_000, 'AGENT_REMOVED');
  assert.deepEqual(s.records[iRemoved], { type: 'AGENT_REMOVED', agent_removed: { agent_id: { value: rc.agent_id } } });
  await s.waitFor((r) => r.type === 'AGENT_ADDED', iRemoved, 5_000, 'AGENT_ADDED of the replacement');
  assert.deepEqual(s.eventsBetween(iRepl, s.records.length).slice(0, 2), ['AGENT_REMOVED', 'AGENT_ADDED']);
});

test('SUBSCRIBE goes through the same framing checks, under every API path', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const get = await fetch(`${m.url}/api/v1`, { signal: AbortSignal.timeout(5_000) });
  assert.equal(get.status, 405);
  await get.text();
  const form = await callApi(m.url, { type: 'SUBSCRIBE' }, { 'content-type': 'text/plain' });
  assert.equal(form.status, 415);
  const neither = await callApi(m.url, { type: 'SUBSCRIBE' }, { 'content-type': 'application/json', accept: 'text/html' });
  assert.equal(neither.status, 406);
  for (const path of ['/api/v1', '/master/api/v1', '/mesos/api/v1']) {
    const s = await EventStream.open(m, path);
    await s.waitFor(isType('HEARTBEAT'), 0, 5_000, `HEARTBEAT via ${path}`);
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
  const ended = await Promise.race([s1.ended, new Promise<string>((r) => setTimeout(() => r('still open'), 3_000))]);
  assert.equal(ended, 'END', 'the oldest stream ends with the chunked terminator');
  await m.daemon.waitForMsg('operator stream closed', { reason: 'TOO_MANY_SUBSCRIBERS', subscribers: 2 }, 3_000);
  // The two newest still get heartbeats.
  const n2 = s2.records.length;
  const n3 = s3.records.length;
  await s2.waitFor(isType('HEARTBEAT'), n2, 3_000, 's2 heartbeat');
  await s3.waitFor(isType('HEARTBEAT'), n3, 3_000, 's3 heartbeat');
});

test('a client that goes away is forgotten at once: no stream, no bus listener left', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const counts: Array<{ opened: number; closed: number }> = [];
  for (let round = 0; round < 2; round++) {
    const from = m.daemon.records.length;
    const s = await EventStream.open(m);
    await s.waitFor(isType('HEARTBEAT'));
    const opened = await m.daemon.waitForMsg('operator stream opened', {}, 3_000, from);
    assert.equal(opened['subscribers'], 1);
    s.close();
    const closed = await m.daemon.waitForMsg('operator stream closed', { reason: 'CLIENT_GONE' }, 3_000, from);
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

test("the master's graceful stop ends every stream cleanly", async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const s1 = await EventStream.open(m);
  const s2 = await EventStream.open(m);
  await s1.waitFor(isType('HEARTBEAT'));
  await s2.waitFor(isType('HEARTBEAT'));
  const exit = await m.daemon.stop();
  assert.equal(exit.code, 0);
  assert.equal(await s1.ended, 'END');
  assert.equal(await s2.ended, 'END');
});

test('Drydock events a plan can wait on: AGENT_UPDATED on drain, DRAINED, deactivate, reactivate; MACHINE_UPDATED on every mode change', async (t) => {
  const m = await startMaster(t, { flags: HEARTBEAT_FLAGS });
  const agent = await FakeAgent.connect(m.url, { self: { hostname: 'node9', ip: '127.0.0.9' } });
  t.after(() => agent.close());
  const agentId = (await agent.register({ capabilities: ['AGENT_DRAINING'] })).agent_id;
  const s = await EventStream.open(m);
  t.after(() => s.close());
  await s.waitFor(isType('SUBSCRIBED'));

  const agentUpdated = (r: Rec): { drain_info?: { state: string }; deactivated: boolean; active: boolean } => (r['agent_updated'] as { agent: { drain_info?: { state: string }; deactivated: boolean; active: boolean } }).agent;
  let from = s.records.length;
  assert.equal((await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agentId } } })).status, 200);
  // No tasks: DRAINING, then DRAINED at once; each record is the agent as GET_AGENTS writes it.
  const draining = await s.waitFor((r) => r.type === 'AGENT_UPDATED' && agentUpdated(r).drain_info?.state !== undefined, from, 5000, 'AGENT_UPDATED (draining)');
  const drained = await s.waitFor((r) => r.type === 'AGENT_UPDATED' && agentUpdated(r).drain_info?.state === 'DRAINED', draining, 5000, 'AGENT_UPDATED (DRAINED)');
  assert.equal(agentUpdated(s.records[drained]!).deactivated, true);
  from = drained + 1;
  assert.equal((await callApi(m.url, { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: { value: agentId } } })).status, 200);
  const reactivated = await s.waitFor(isType('AGENT_UPDATED'), from, 5000, 'AGENT_UPDATED (reactivated)');
  assert.equal(agentUpdated(s.records[reactivated]!).drain_info, undefined);
  assert.equal(agentUpdated(s.records[reactivated]!).active, true);
  from = reactivated + 1;
  assert.equal((await callApi(m.url, { type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: { value: agentId } } })).status, 200);
  const deactivated = await s.waitFor(isType('AGENT_UPDATED'), from, 5000, 'AGENT_UPDATED (deactivated)');
  assert.equal(agentUpdated(s.records[deactivated]!).deactivated, true);

  // Machines: scheduled (DRAINING), DOWN, UP; each record carries the whole maintenance status.
  const machine = { hostname: 'node9', ip: '127.0.0.9' };
  const statusOf = (r: Rec): { machine_ids: unknown[]; status: { draining_machines?: unknown[]; down_machines?: unknown[] } } => r['machine_updated'] as never;
  from = s.records.length;
  const sched = { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [machine], unavailability: { start: { nanoseconds: 1 } } }] } } };
  assert.equal((await callApi(m.url, sched)).status, 200);
  let i = await s.waitFor(isType('MACHINE_UPDATED'), from, 5000, 'MACHINE_UPDATED (scheduled)');
  assert.deepEqual(statusOf(s.records[i]!).machine_ids, [machine]);
  assert.deepEqual(statusOf(s.records[i]!).status.draining_machines, [{ id: machine }]);
  assert.equal((await callApi(m.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [machine] } })).status, 200);
  i = await s.waitFor(isType('MACHINE_UPDATED'), i + 1, 5000, 'MACHINE_UPDATED (down)');
  assert.deepEqual(statusOf(s.records[i]!).status.down_machines, [machine]);
  assert.equal((await callApi(m.url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [machine] } })).status, 200);
  i = await s.waitFor(isType('MACHINE_UPDATED'), i + 1, 5000, 'MACHINE_UPDATED (up)');
  assert.deepEqual(statusOf(s.records[i]!).status, {});
});

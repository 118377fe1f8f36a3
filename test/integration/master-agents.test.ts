/**
 * The real built master with fake agents (real ws clients): registration, GET_AGENTS shape,
 * recovery after a restart, liveness (pings, disconnects), re-registration timeout, protocol errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, eventually, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { FakeAgent, registerMessage } from '../helpers/fake-agent.js';
import { CLOSE_CODES } from '../../shared/protocol.js';

interface AgentJson {
  agent_info: { id: { value: string }; hostname: string; port: number; resources: Array<Record<string, unknown>>; checkpoint?: boolean };
  active: boolean;
  deactivated: boolean;
  pid: string;
  registered_time: { nanoseconds: number };
  reregistered_time?: { nanoseconds: number };
  total_resources: Array<Record<string, unknown>>;
  allocated_resources: unknown[];
  offered_resources: unknown[];
  capabilities: Array<{ type: string }>;
  version: string;
}

interface GetAgents {
  agents: AgentJson[];
  recovered_agents: Array<{ id: { value: string }; hostname: string }>;
}

async function getAgents(m: MasterHandle): Promise<GetAgents> {
  const r = await callApi(m.url, { type: 'GET_AGENTS' });
  assert.equal(r.status, 200, r.text);
  return (r.json as { get_agents: GetAgents }).get_agents;
}

function connect(m: MasterHandle, opts: Parameters<typeof FakeAgent.connect>[1] = {}): Promise<FakeAgent> {
  return FakeAgent.connect(m.url, opts);
}

test('an agent registers and GET_AGENTS shows it in the Mesos shape', async (t) => {
  const m = await startMaster(t);
  const a = await connect(m);
  t.after(() => a.close());
  const reg = await a.register();
  assert.match(reg.agent_id, /-S0$/);
  assert.equal(reg.ping_interval_ms, 15_000);
  assert.equal(reg.max_ping_timeouts, 5);

  const { agents, recovered_agents } = await getAgents(m);
  assert.deepEqual(recovered_agents, []);
  assert.equal(agents.length, 1);
  const ag = agents[0]!;
  assert.equal(ag.agent_info.id.value, reg.agent_id);
  assert.equal(ag.agent_info.hostname, 'fake-agent');
  // Exactly mesos.v1.AgentInfo: it has no `checkpoint` (Mesos' agents always checkpoint).
  assert.equal(ag.agent_info.checkpoint, undefined);
  assert.equal(ag.agent_info.resources[0]?.['role'], undefined, 'agent_info resources carry no role');
  assert.equal(ag.total_resources[0]?.['role'], '*', 'total_resources are in endpoint format');
  assert.equal(ag.active, true);
  assert.equal(ag.deactivated, false);
  assert.equal(ag.pid, `slave(1)@127.0.0.1:${a.self.port}`);
  assert.ok(ag.registered_time.nanoseconds > 1.6e18);
  assert.equal(ag.reregistered_time, undefined);
  assert.deepEqual(ag.allocated_resources, []);
  assert.deepEqual(ag.offered_resources, []);
  assert.deepEqual(ag.capabilities, [{ type: 'MULTI_ROLE' }, { type: 'AGENT_DRAINING' }]);

  // registered_time is int64 nanoseconds written as bare digits, not rounded through a double.
  const raw = (await callApi(m.url, { type: 'GET_AGENTS' })).text;
  assert.match(raw, /"registered_time":\{"nanoseconds":[0-9]{19}\}/);

  // A second REGISTER on the same session is idempotent: same id, still one agent.
  const again = await a.register();
  assert.equal(again.agent_id, reg.agent_id);
  assert.equal((await getAgents(m)).agents.length, 1);

  // Closing the socket leaves the agent registered but inactive.
  a.terminate();
  await eventually(async () => ((await getAgents(m)).agents[0]?.active === false ? true : undefined), undefined, 50, 'active:false');
});

test('after a master restart the agent is recovered, then re-registers with the same id', async (t) => {
  const workDir = tempDir(t, 'drydock-master-restart-');
  const m1 = await startMaster(t, { workDir });
  const a1 = await connect(m1);
  const reg = await a1.register();
  const exit = await m1.daemon.stop();
  assert.equal(exit.code, 0, 'graceful stop exits 0');
  assert.equal((await a1.waitClosed()).code, CLOSE_CODES.GOING_AWAY, 'sessions are closed with GOING_AWAY');

  const m2 = await startMaster(t, { workDir });
  const before = await getAgents(m2);
  assert.deepEqual(before.agents, []);
  assert.deepEqual(before.recovered_agents.map((r) => r.id.value), [reg.agent_id]);

  const a2 = await FakeAgent.connect(m2.url, { self: { port: a1.self.port } });
  t.after(() => a2.close());
  const reg2 = await a2.register({ agentId: reg.agent_id });
  assert.equal(reg2.agent_id, reg.agent_id);
  assert.notEqual(reg2.master_id, reg.master_id, 'a new master has a new id');
  const after = await getAgents(m2);
  assert.deepEqual(after.recovered_agents, []);
  assert.equal(after.agents.length, 1);
  assert.equal(after.agents[0]?.agent_info.id.value, reg.agent_id);
  assert.ok(after.agents[0]?.reregistered_time !== undefined, 'reregistered_time is set');
});

test('a recovered agent that does not come back in time becomes unreachable', async (t) => {
  const workDir = tempDir(t, 'drydock-master-rereg-');
  const m1 = await startMaster(t, { workDir });
  const a1 = await connect(m1);
  const reg = await a1.register();
  await m1.daemon.stop();

  const m2 = await startMaster(t, { workDir, flags: ['--agent_reregister_timeout=300ms'] });
  const rec = await m2.daemon.waitForMsg('agent unreachable', { agentId: reg.agent_id, reason: 'REREGISTER_TIMEOUT' });
  assert.ok(rec);
  const after = await getAgents(m2);
  assert.deepEqual(after.agents, []);
  assert.deepEqual(after.recovered_agents, []);
  await m2.daemon.stop();

  // Unreachable is durable: a third master does not list it as recovered; re-registering readmits it.
  const m3 = await startMaster(t, { workDir });
  assert.deepEqual((await getAgents(m3)).recovered_agents, []);
  const a3 = await connect(m3);
  t.after(() => a3.close());
  const reg3 = await a3.register({ agentId: reg.agent_id });
  assert.equal(reg3.agent_id, reg.agent_id);
  const listed = await getAgents(m3);
  assert.deepEqual(listed.agents.map((x) => x.agent_info.id.value), [reg.agent_id]);
  await m3.daemon.waitForMsg('agent reregistered', { agentId: reg.agent_id, kind: 'UNREACHABLE' });
});

test('an agent that stops answering pings becomes unreachable; a dropped one too, after the same time', async (t) => {
  const m = await startMaster(t, { flags: ['--agent_ping_timeout=200ms', '--max_agent_ping_timeouts=2'] });
  const silent = await connect(m, { autoPong: false });
  const dropped = await connect(m);
  const healthy = await connect(m);
  t.after(() => healthy.close());
  const s = await silent.register();
  const d = await dropped.register();
  const h = await healthy.register();
  assert.equal(s.ping_interval_ms, 200);
  assert.equal(s.max_ping_timeouts, 2);

  await silent.waitForPings(1);
  dropped.terminate();
  await eventually(async () => {
    const ag = (await getAgents(m)).agents.find((x) => x.agent_info.id.value === d.agent_id);
    return ag?.active === false ? true : undefined;
  }, undefined, 20, 'dropped agent inactive');

  await m.daemon.waitForMsg('agent unreachable', { agentId: s.agent_id, reason: 'PING_TIMEOUT' });
  await m.daemon.waitForMsg('agent unreachable', { agentId: d.agent_id, reason: 'DISCONNECTED_TIMEOUT' });
  await silent.waitClosed();
  const ids = (await getAgents(m)).agents.map((x) => x.agent_info.id.value);
  assert.deepEqual(ids, [h.agent_id], 'only the agent answering pings is left');
  assert.ok(healthy.pings >= 2, 'the healthy agent was pinged');
  assert.equal(healthy.closed, undefined);
});

test('a malformed frame closes that session with 4400 and a reason; the master and others go on', async (t) => {
  const m = await startMaster(t);
  const good = await connect(m);
  t.after(() => good.close());
  await good.register();
  const bad = await connect(m);
  bad.sendRaw('{"type":"REGISTER","request_id":"x"}' + 'y'.repeat(300));
  const closed = await bad.waitClosed();
  assert.equal(closed.code, CLOSE_CODES.PROTOCOL_ERROR);
  assert.match(closed.reason, /not JSON/);
  assert.ok(Buffer.byteLength(closed.reason) <= 123);

  const bad2 = await connect(m);
  bad2.sendRaw(JSON.stringify({ type: 'REGISTER', request_id: 1 }));
  const closed2 = await bad2.waitClosed();
  assert.equal(closed2.code, CLOSE_CODES.PROTOCOL_ERROR);
  assert.match(closed2.reason, /invalid message: missing field at agent/);
  await m.daemon.waitForMsg('agent session protocol error');

  const health = await callApi(m.url, { type: 'GET_HEALTH' });
  assert.equal(health.status, 200);
  assert.equal(good.closed, undefined);
  // The good session still works: a repeated REGISTER is answered.
  await good.register();
  assert.equal((await getAgents(m)).agents.length, 1);
});

test('a new agent at the ip:port of a disconnected one replaces it; an older session for an agent is closed REPLACED', async (t) => {
  const m = await startMaster(t);
  const first = await connect(m);
  t.after(() => first.close());
  const r1 = await first.register();
  // While the first is connected, another agent reporting its address does not evict it.
  const twin = await FakeAgent.connect(m.url, { self: { port: first.self.port } });
  const rt = await twin.register();
  assert.equal((await getAgents(m)).agents.length, 2);
  // Once the twin is disconnected, a new agent at that address replaces it.
  twin.terminate();
  await eventually(async () => ((await getAgents(m)).agents.find((x) => x.agent_info.id.value === rt.agent_id)?.active === false ? true : undefined), undefined, 20, 'twin inactive');
  const second = await FakeAgent.connect(m.url, { self: { port: first.self.port } });
  t.after(() => second.close());
  const r2 = await second.register();
  assert.notEqual(r2.agent_id, r1.agent_id);
  await m.daemon.waitForMsg('agent removed', { agentId: rt.agent_id, reason: 'REPLACED' });
  const left = (await getAgents(m)).agents.map((x) => x.agent_info.id.value).sort();
  assert.deepEqual(left, [r1.agent_id, r2.agent_id].sort(), 'the disconnected twin is removed, the connected first stays');
  assert.equal(first.closed, undefined);

  // The same agent on a new socket: the old socket is closed with REPLACED.
  const third = await FakeAgent.connect(m.url, { self: { port: first.self.port } });
  t.after(() => third.close());
  const r3 = await third.register({ agentId: r2.agent_id });
  assert.equal(r3.agent_id, r2.agent_id);
  assert.equal((await second.waitClosed()).code, CLOSE_CODES.REPLACED);
  const agent = (await getAgents(m)).agents.find((x) => x.agent_info.id.value === r2.agent_id);
  assert.equal(agent?.active, true);
});

test('a live agent is not taken over: a REGISTER with its id from another address is closed ID_IN_USE and changes nothing; once its session is gone, the id is free', async (t) => {
  const m = await startMaster(t);
  const real = await connect(m);
  t.after(() => real.close());
  const r = await real.register();
  // Another claimed address, the same socket address.
  const other = await connect(m, { self: { hostname: real.self.hostname, ip: '127.0.0.1' } });
  t.after(() => other.close());
  other.send(registerMessage(1, other.self, { agentId: r.agent_id }));
  assert.equal((await other.waitClosed()).code, CLOSE_CODES.ID_IN_USE);
  // The claimed address of the real agent, but a socket from another loopback address.
  const spoof = await connect(m, { self: { ...real.self }, localAddress: '127.0.0.9' });
  t.after(() => spoof.close());
  spoof.send(registerMessage(1, spoof.self, { agentId: r.agent_id }));
  const closed = await spoof.waitClosed();
  assert.deepEqual(closed, { code: CLOSE_CODES.ID_IN_USE, reason: `agent ${r.agent_id} is connected from another address` });
  await m.daemon.waitForMsg('agent refused', { reason: 'ID_IN_USE', agentId: r.agent_id, remote: '127.0.0.9' });
  // Nothing changed: the real session is open and the agent active at its own address.
  assert.equal(real.closed, undefined);
  const agents = (await getAgents(m)).agents;
  assert.deepEqual(agents.map((a) => [a.agent_info.id.value, a.agent_info.port, a.active]), [[r.agent_id, real.self.port, true]]);
  assert.ok(!other.messages.some((x) => x.type === 'REGISTERED') && !spoof.messages.some((x) => x.type === 'REGISTERED'));
  // The same agent on a new socket from its own address still replaces its old session.
  const again = await connect(m, { self: { ...real.self } });
  t.after(() => again.close());
  assert.equal((await again.register({ agentId: r.agent_id })).agent_id, r.agent_id);
  assert.equal((await real.waitClosed()).code, CLOSE_CODES.REPLACED);
  // Once that session is gone, the id may be registered from elsewhere (binding ids to principals needs authentication).
  again.terminate();
  await eventually(async () => ((await getAgents(m)).agents[0]?.active === false ? true : undefined), undefined, 20, 'agent disconnected');
  const moved = await connect(m, { self: { hostname: real.self.hostname }, localAddress: '127.0.0.9' });
  t.after(() => moved.close());
  assert.equal((await moved.register({ agentId: r.agent_id })).agent_id, r.agent_id);
});

test('an agent_id the master never saw is accepted as that id; tasks and status updates show in GET_TASKS', async (t) => {
  const m = await startMaster(t);
  const a = await connect(m);
  t.after(() => a.close());
  const reg = await a.register({
    agentId: 'lost-master-S7',
    tasks: [
      {
        framework_id: 'fw-1',
        task: { name: 't1', task_id: { value: 't1' }, agent_id: { value: 'lost-master-S7' }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }] },
        state: 'TASK_RUNNING',
        statuses: [{ task_id: { value: 't1' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1700000000.5, uuid: 'dXVpZC0x' }],
      },
    ],
  });
  assert.equal(reg.agent_id, 'lost-master-S7');
  a.statusUpdate('fw-1', { task_id: { value: 't1' }, state: 'TASK_FINISHED', source: 'SOURCE_EXECUTOR', timestamp: 1700000001.5, uuid: 'dXVpZC0y' });

  const tasks = await eventually(async () => {
    const r = await callApi(m.url, { type: 'GET_TASKS' });
    const gt = (r.json as { get_tasks: { tasks: Array<Record<string, unknown>>; unreachable_tasks: unknown[]; completed_tasks: unknown[] } }).get_tasks;
    return gt.tasks[0]?.['state'] === 'TASK_FINISHED' ? gt : undefined;
  }, undefined, 50, 'TASK_FINISHED recorded');
  assert.equal(tasks.tasks[0]?.['status_update_uuid'], 'dXVpZC0y');
  assert.equal((tasks.tasks[0]?.['statuses'] as unknown[]).length, 2);
  assert.deepEqual(tasks.completed_tasks, [], 'a terminal task is completed only once acknowledged');
  assert.deepEqual(tasks.unreachable_tasks, []);

  const agent = (await getAgents(m)).agents[0]!;
  assert.deepEqual(agent.allocated_resources, [], 'a terminal task holds no resources');
});

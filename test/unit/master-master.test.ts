/**
 * The Master shell with fake connections, a ManualClock and a registry whose writes we hold:
 * REGISTERED only after the admission is durable; the commands the scheduler API will call.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { silentLogger } from '../../shared/log.js';
import type { AgentMessage, MasterMessage } from '../../shared/protocol.js';
import { Master, type AgentConnection } from '../../master/master.js';
import { resolveMasterConfig } from '../../master/config.js';
import type { DurableAgent, DurableFramework, DurableSchedule, Registry, RegistryState } from '../../master/registry/registry.js';

/** A registry that records writes and commits them only when told to. */
class HeldRegistry implements Registry {
  readonly ops: string[] = [];
  #pending: Array<() => void> = [];
  recover(): Promise<RegistryState> {
    return Promise.resolve({ agents: [], frameworks: [], maintenance: { windows: [] } });
  }
  #hold(op: string): Promise<void> {
    this.ops.push(op);
    return new Promise((resolve) => this.#pending.push(resolve));
  }
  admitAgent(a: DurableAgent): Promise<void> { return this.#hold(`admit ${a.id}`); }
  markAgentUnreachable(id: string): Promise<void> { return this.#hold(`unreachable ${id}`); }
  markAgentReachable(a: DurableAgent): Promise<void> { return this.#hold(`reachable ${a.id}`); }
  removeAgent(id: string): Promise<void> { return this.#hold(`remove ${id}`); }
  addFramework(f: DurableFramework): Promise<void> { return this.#hold(`add framework ${f.id}`); }
  removeFramework(id: string): Promise<void> { return this.#hold(`remove framework ${id}`); }
  drainAgent(id: string): Promise<void> { return this.#hold(`drain ${id}`); }
  markAgentDrained(id: string): Promise<void> { return this.#hold(`drained ${id}`); }
  deactivateAgent(id: string): Promise<void> { return this.#hold(`deactivate ${id}`); }
  reactivateAgent(id: string): Promise<void> { return this.#hold(`reactivate ${id}`); }
  markAgentGone(id: string): Promise<void> { return this.#hold(`gone ${id}`); }
  updateSchedule(s: DurableSchedule): Promise<void> { return this.#hold(`update schedule ${s.windows.length}`); }
  startMaintenance(keys: readonly string[]): Promise<void> { return this.#hold(`start maintenance ${keys.length}`); }
  stopMaintenance(keys: readonly string[]): Promise<void> { return this.#hold(`stop maintenance ${keys.length}`); }
  close(): Promise<void> { return Promise.resolve(); }
  commit(): void {
    for (const r of this.#pending.splice(0)) r();
  }
}

class FakeConn implements AgentConnection {
  readonly sent: MasterMessage[] = [];
  pings = 0;
  closed: { code: number; reason: string } | undefined;
  terminated = false;
  constructor(readonly id: number) {}
  send(m: MasterMessage): void { this.sent.push(m); }
  close(code: number, reason: string): void { this.closed = { code, reason }; }
  terminate(): void { this.terminated = true; }
  ping(): void { this.pings++; }
}

function setup() {
  const r = resolveMasterConfig(['--agent_ping_timeout=1secs', '--max_agent_ping_timeouts=2'], {});
  assert.ok(r.kind === 'ok');
  const registry = new HeldRegistry();
  const clock = new ManualClock();
  const master = new Master({ config: r.config, registry, clock, logger: silentLogger });
  return { master, registry, clock };
}

const REGISTER: AgentMessage = {
  type: 'REGISTER',
  request_id: 3,
  agent: { hostname: 'h', ip: '10.0.0.9', port: 5051, resources: [], attributes: [] },
  version: '0.1.0',
  capabilities: [],
  tasks: [],
  frameworks: [],
};

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

test('REGISTERED is sent only after the admission is durable', async () => {
  const { master, registry } = setup();
  await master.recover();
  master.start(5050);
  const conn = new FakeConn(1);
  master.connected(conn);
  const handled = master.handle(conn, REGISTER);
  await tick();
  assert.equal(registry.ops.length, 1);
  assert.match(registry.ops[0]!, /^admit .*-S0$/);
  assert.equal(conn.sent.length, 0, 'nothing before the commit');
  assert.equal([...master.table.all()].length, 0, 'not listed before the commit');
  registry.commit();
  await handled;
  const reg = conn.sent[0];
  assert.ok(reg?.type === 'REGISTERED');
  assert.equal(reg.request_id, 3);
  assert.equal(reg.master_id, master.id);
  assert.equal(reg.ping_interval_ms, 1000);
  assert.equal(reg.max_ping_timeouts, 2);
  await master.stop();
  assert.equal(conn.closed?.code, 1001);
});

test('runTask, killTask and acknowledge send their messages; a terminal acknowledged task completes', async () => {
  const { master, registry } = setup();
  await master.recover();
  master.start(5050);
  const conn = new FakeConn(1);
  master.connected(conn);
  const p = master.handle(conn, REGISTER);
  await tick();
  registry.commit();
  await p;
  const agentId = (conn.sent[0] as Extract<MasterMessage, { type: 'REGISTERED' }>).agent_id;

  assert.deepEqual(master.runTask('nope', 'fw', { user: 'u', name: 'f' }, { name: 't', task_id: { value: 't' }, agent_id: { value: 'nope' }, resources: [] }), { ok: false, reason: 'UNKNOWN_AGENT' });
  assert.deepEqual(master.runTask(agentId, 'fw', { user: 'u', name: 'f' }, { name: 't', task_id: { value: 't' }, agent_id: { value: agentId }, resources: [] }), { ok: true });
  assert.equal(conn.sent[1]?.type, 'RUN_TASK');
  assert.deepEqual(master.killTask(agentId, 'fw', 't', { grace_period: { nanoseconds: 0 } }), { ok: true });
  assert.deepEqual(conn.sent[2], { type: 'KILL_TASK', framework_id: 'fw', task_id: 't', kill_policy: { grace_period: { nanoseconds: 0 } } });

  await master.handle(conn, { type: 'STATUS_UPDATE', framework_id: 'fw', status: { task_id: { value: 't' }, state: 'TASK_KILLED', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'u1' } });
  assert.deepEqual(master.acknowledge(agentId, 'fw', 't', 'other'), { ok: false, reason: 'UUID_MISMATCH' });
  assert.deepEqual(master.acknowledge(agentId, 'fw', 't', 'u1'), { ok: true });
  assert.deepEqual(conn.sent[3], { type: 'ACKNOWLEDGE', framework_id: 'fw', task_id: 't', uuid: 'u1' });
  assert.equal(master.table.completedTasks.length, 1);

  master.disconnected(conn);
  assert.deepEqual(master.killTask(agentId, 'fw', 't'), { ok: false, reason: 'AGENT_NOT_CONNECTED' });
  await master.stop();
});

test('one timer pings every session; silent agents are terminated and marked unreachable durably', async () => {
  const { master, registry, clock } = setup();
  await master.recover();
  master.start(5050);
  const conn = new FakeConn(1);
  master.connected(conn);
  const p = master.handle(conn, REGISTER);
  await tick();
  registry.commit();
  await p;
  // One liveness timer for all sessions, plus the allocator's round timer (--allocation_interval).
  assert.equal(clock.pending, 2, 'a single liveness timer (and the allocation timer)');
  clock.advance(1000);
  assert.equal(conn.pings, 1);
  clock.advance(1000);
  clock.advance(1000);
  assert.equal(conn.terminated, true);
  assert.match(registry.ops.at(-1)!, /^unreachable /);
  assert.equal([...master.table.all()][0]?.phase, 'UNREACHABLE');
  await master.stop();
});

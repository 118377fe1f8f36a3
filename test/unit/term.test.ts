/**
 * A term with fake connections, a ManualClock and registries whose writes we hold or fail:
 * REGISTERED only after the admission is durable; unreachability written before it is
 * applied; with a registry that fails every write, nothing changes and every caller gets an
 * error; a fenced write ends the term. Then what needs a whole term: GET_STATE's frameworks
 * show only the offers of agents the caller may view, and an attribute ACL still names a DOWN
 * machine after a restart.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { silentLogger } from '../../shared/log.js';
import type { AgentMessage, MasterMessage } from '../../shared/protocol.js';
import type { AgentConnection } from '../../master/term/ports.js';
import { Term } from '../../master/term/term.js';
import { resolveMasterConfig } from '../../master/process/config.js';
import { Authorizer, parseAcls } from '../../shared/acls.js';
import { answerCall } from '../../master/api/dispatch.js';
import { getState } from '../../master/api/operator.js';
import { masterInfoJson } from '../../master/process/master-info.js';
import { viewRights } from '../../shared/visibility.js';
import { openSqliteRegistry } from '../../master/registry/sqlite.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import { tempDir } from '../helpers/daemons.js';
import { RegistryFencedError, type DurableAgent, type DurableFramework, type DurableMaintenancePlan, type DurableSchedule, type Registry, type RegistryState } from '../../master/registry/registry.js';

/** A registry that records writes and commits them only when told to (or fails them all, with `fail`). */
class HeldRegistry implements Registry {
  readonly ops: string[] = [];
  #pending: Array<() => void> = [];
  constructor(
    readonly state: RegistryState = { agents: [], frameworks: [], maintenance: { windows: [] } },
    readonly fail: (() => Error) | undefined = undefined,
  ) {}
  recover(): Promise<RegistryState> {
    return Promise.resolve(this.state);
  }
  #hold(op: string): Promise<void> {
    this.ops.push(op);
    if (this.fail !== undefined) return Promise.reject(this.fail());
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
  createMaintenancePlan(p: DurableMaintenancePlan): Promise<void> { return this.#hold(`create maintenance plan ${p.name}`); }
  updateMaintenancePlanProgress(name: string): Promise<void> { return this.#hold(`maintenance plan progress ${name}`); }
  deleteMaintenancePlan(name: string): Promise<void> { return this.#hold(`delete maintenance plan ${name}`); }
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
  readonly remote = '127.0.0.1';
  readonly principal: string | undefined = undefined;
  constructor(readonly id: number) {}
  send(m: MasterMessage): void { this.sent.push(m); }
  close(code: number, reason: string): void { this.closed = { code, reason }; }
  terminate(): void { this.terminated = true; }
  ping(): void { this.pings++; }
}

async function setup<R extends Registry = HeldRegistry>(registry: R = new HeldRegistry() as Registry as R, security?: MasterSecurity) {
  const r = resolveMasterConfig(['--agent_ping_timeout=1secs', '--max_agent_ping_timeouts=2', '--agent_reregister_timeout=5secs'], {});
  assert.ok(r.kind === 'ok');
  const clock = new ManualClock();
  const ended: string[] = [];
  const term = await Term.start({
    config: r.config,
    ...(security === undefined ? {} : { security }),
    registry,
    master: { id: 'M', info: masterInfoJson({ id: 'M', hostname: 'master', ip: '127.0.0.1', port: 5050 }) },
    epoch: 1n,
    processStartMs: clock.now(),
    clock,
    logger: silentLogger,
    onEnded: (reason) => ended.push(reason),
  });
  return { term, registry, clock, ended };
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

async function registered(term: Term, registry: HeldRegistry, conn: FakeConn): Promise<string> {
  term.services.agents.connected(conn);
  const p = term.services.agents.handle(conn, REGISTER);
  await tick();
  registry.commit();
  await p;
  const reg = conn.sent.find((m) => m.type === 'REGISTERED');
  assert.ok(reg?.type === 'REGISTERED');
  return reg.agent_id;
}

test('REGISTERED is sent only after the admission is durable', async () => {
  const { term, registry } = await setup();
  const conn = new FakeConn(1);
  term.services.agents.connected(conn);
  const handled = term.services.agents.handle(conn, REGISTER);
  await tick();
  assert.equal(registry.ops.length, 1);
  assert.match(registry.ops[0]!, /^admit M-S0$/);
  assert.equal(conn.sent.length, 0, 'nothing before the commit');
  assert.equal([...term.agents.all()].length, 0, 'not listed before the commit');
  registry.commit();
  await handled;
  const reg = conn.sent[0];
  assert.ok(reg?.type === 'REGISTERED');
  assert.equal(reg.request_id, 3);
  assert.equal(reg.master_id, 'M');
  assert.equal(reg.ping_interval_ms, 1000);
  assert.equal(reg.max_ping_timeouts, 2);
  term.dispose();
  assert.equal(conn.closed?.code, 1001);
  assert.equal(term.state, 'ENDED');
});

test('a status update is recorded and announced; the acknowledgement goes to the agent and completes a terminal task', async () => {
  const { term, registry } = await setup();
  const conn = new FakeConn(1);
  const agentId = await registered(term, registry, conn);
  const events: string[] = [];
  term.bus.subscribe((e) => events.push(e.type));
  await term.services.agents.handle(conn, { type: 'STATUS_UPDATE', framework_id: 'fw', status: { task_id: { value: 't' }, state: 'TASK_KILLED', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'u1' } });
  assert.deepEqual(events, ['TASK_UPDATED', 'STATUS_UPDATE']);
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'other'), { ok: false, reason: 'UUID_MISMATCH' });
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'u1'), { ok: true });
  assert.deepEqual(conn.sent.at(-1), { type: 'ACKNOWLEDGE', framework_id: 'fw', task_id: 't', uuid: 'u1' });
  assert.equal(term.agents.completedTasks.length, 1);
  term.services.agents.disconnected(conn);
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'u1'), { ok: false, reason: 'AGENT_NOT_CONNECTED' });
  term.dispose();
});

test('pipelined updates: each acknowledgement reaches the agent, and the end supersedes what is left', async () => {
  const { term, registry } = await setup();
  const conn = new FakeConn(1);
  const agentId = await registered(term, registry, conn);
  const update = (state: 'TASK_STARTING' | 'TASK_RUNNING' | 'TASK_FINISHED', uuid: string): AgentMessage => ({
    type: 'STATUS_UPDATE',
    framework_id: 'fw',
    status: { task_id: { value: 't' }, state, source: 'SOURCE_EXECUTOR', timestamp: 1, uuid },
  });
  for (const [state, uuid] of [['TASK_STARTING', 'u1'], ['TASK_RUNNING', 'u2'], ['TASK_FINISHED', 'u3']] as const) await term.services.agents.handle(conn, update(state, uuid));
  const acks = (): unknown[] => conn.sent.filter((m) => m.type === 'ACKNOWLEDGE').map((m) => (m as { uuid: string }).uuid);
  // The scheduler acknowledges STARTING late, after RUNNING was forwarded: the agent still hears it.
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'u1'), { ok: true });
  assert.deepEqual(acks(), ['u1']);
  // The end, acknowledged before RUNNING: the task completes and RUNNING is acknowledged to the agent with it.
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'u3'), { ok: true });
  assert.deepEqual(acks(), ['u1', 'u3', 'u2']);
  assert.equal(term.agents.completedTasks.length, 1);
  assert.deepEqual(term.services.frameworks.acknowledge(agentId, 'fw', 't', 'u2'), { ok: false, reason: 'UNKNOWN_TASK' });
  assert.deepEqual(acks(), ['u1', 'u3', 'u2'], 'nothing more for the agent');
  term.dispose();
});

test('(health) check updates: each new one is announced to operators, a retry is not; statuses keep one per state (as Mesos)', async () => {
  const { term, registry } = await setup();
  const conn = new FakeConn(1);
  const agentId = await registered(term, registry, conn);
  const announced: unknown[] = [];
  term.bus.subscribe((e) => {
    if (e.type === 'TASK_UPDATED') announced.push(e.status.check_status ?? e.status.healthy ?? e.status.state);
  });
  const running = (uuid: string, extra: Record<string, unknown> = {}): AgentMessage => ({
    type: 'STATUS_UPDATE',
    framework_id: 'fw',
    status: { task_id: { value: 't' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid, ...extra },
  });
  const check = (code: number): Record<string, unknown> => ({ reason: 'REASON_TASK_CHECK_STATUS_UPDATED', check_status: { type: 'COMMAND', command: { exit_code: code } } });
  await term.services.agents.handle(conn, running('u1'));
  await term.services.agents.handle(conn, running('u2', check(1)));
  await term.services.agents.handle(conn, running('u2', check(1)));
  await term.services.agents.handle(conn, running('u3', check(0)));
  await term.services.agents.handle(conn, running('u4', { reason: 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED', healthy: true }));
  // A plain TASK_RUNNING again (no check reason, same state) is not announced.
  await term.services.agents.handle(conn, running('u5'));
  assert.deepEqual(announced, ['TASK_RUNNING', { type: 'COMMAND', command: { exit_code: 1 } }, { type: 'COMMAND', command: { exit_code: 0 } }, true]);
  const task = term.agents.get(agentId)?.tasks?.get('fw\u0000t');
  assert.deepEqual(task?.statuses.map((x) => x.uuid), ['u5']);
  assert.equal(task?.status_update_uuid, 'u5');
  term.dispose();
});

test('one timer pings every session; a silent agent is written unreachable first, then terminated', async () => {
  const { term, registry, clock } = await setup();
  const conn = new FakeConn(1);
  await registered(term, registry, conn);
  // One liveness timer for all sessions, plus the allocator's round timer (--allocation_interval).
  assert.equal(clock.pending, 2, 'a single liveness timer (and the allocation timer)');
  clock.advance(1000);
  assert.equal(conn.pings, 1);
  clock.advance(1000);
  clock.advance(1000);
  await tick();
  assert.match(registry.ops.at(-1)!, /^unreachable /);
  assert.equal(conn.terminated, false, 'nothing acted on before the write is durable');
  assert.equal([...term.agents.all()][0]?.phase, 'REGISTERED');
  registry.commit();
  await tick();
  assert.equal(conn.terminated, true);
  assert.equal([...term.agents.all()][0]?.phase, 'UNREACHABLE');
  term.dispose();
});

test('pings are spread over the round: an agent is first pinged a round after it registered, then once a round', async () => {
  const { term, registry, clock } = await setup(); // --agent_ping_timeout=1secs: 4 slots of 250 ms
  const a = new FakeConn(1);
  const b = new FakeConn(2);
  await registered(term, registry, a);
  clock.advance(600); // slots 0 and 1 visited
  term.services.agents.connected(b);
  const p = term.services.agents.handle(b, { ...REGISTER, agent: { ...REGISTER.agent, hostname: 'h2', port: 5052 } });
  await tick();
  registry.commit();
  await p;
  const pings = (): number[] => [a.pings, b.pings];
  clock.advance(400); // t = 1000: slot 3, a's
  assert.deepEqual(pings(), [1, 0]);
  term.services.agents.pong(a);
  clock.advance(500); // t = 1500: slot 1, b's (it joined the slot visited last, at 500)
  assert.deepEqual(pings(), [1, 1]);
  term.services.agents.pong(b);
  clock.advance(500); // t = 2000: a's again; one liveness timer all along
  assert.deepEqual(pings(), [2, 1]);
  assert.equal(clock.pending, 2, 'a single liveness timer (and the allocation timer)');
  term.dispose();
});

/** A registry with one recovered agent, one recovered framework (failover 0) and a scheduled machine. */
function recoveredState(): RegistryState {
  return {
    agents: [{ id: 'A', info: { hostname: 'h', ip: '10.0.0.9', port: 5051, resources: [], attributes: [] }, version: '1', capabilities: ['AGENT_DRAINING'], registeredTimeNs: 1n, reachability: 'REACHABLE' }],
    frameworks: [{ id: 'F', info: { user: 'u', name: 'f', id: { value: 'F' } }, registeredTimeNs: 1n }],
    maintenance: { windows: [{ unavailability: { startNs: 5n }, machines: [{ key: 'hm\u0000-', id: { hostname: 'm' }, mode: 'DRAINING' }] }] },
  };
}

test('a registry that fails every write: nothing changes in memory and every caller gets an error', async () => {
  const registry = new HeldRegistry(recoveredState(), () => new Error('disk on fire'));
  const { term, clock, ended } = await setup(registry);
  const snapshot = (): string =>
    JSON.stringify({
      agents: [...term.agents.all()].map((a) => [a.id, a.phase, a.deactivated, a.drain?.state ?? null]),
      gone: term.agents.isGone('A'),
      frameworks: [...term.services.frameworks.frameworks.all()].map((f) => [f.id, f.phase]),
      schedule: term.maintenance.scheduleJson(),
      status: term.maintenance.statusJson(),
    }, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  const before = snapshot();
  const refused = (e: { code: string } | undefined): void => assert.equal(e?.code, 'REGISTRY_WRITE_FAILED');

  refused(await term.services.drain.drain('A', { maxGracePeriodNs: undefined, markGone: false }));
  refused(await term.services.drain.deactivate('A'));
  refused(await term.services.drain.markGoneCall('A'));
  refused(await term.services.maintenance.updateSchedule({ windows: [{ machineIds: [{ hostname: 'x' }], unavailability: { startNs: 1n } }] }));
  refused(await term.services.maintenance.startMaintenance([{ hostname: 'm' }]));
  const sub = await term.services.frameworks.subscribe({ user: 'u', name: 'new' }, () => assert.fail('no stream is opened'));
  assert.ok(!sub.ok && sub.error.code === 'REGISTRY_WRITE_FAILED');
  // The agent's registration: refused with 1011, nothing admitted.
  const conn = new FakeConn(1);
  term.services.agents.connected(conn);
  await term.services.agents.handle(conn, { ...REGISTER, agent_id: 'A', agent: { ...(REGISTER as { agent: object }).agent, hostname: 'renamed' } } as AgentMessage);
  assert.equal(conn.closed?.code, 1011);
  // Timers whose effects are writes: the recovered framework's failover (0 s) and the agent's re-registration deadline.
  clock.advance(6000);
  await tick();
  assert.ok(registry.ops.some((op) => op === 'remove framework F'), 'the framework removal was tried');
  assert.ok(registry.ops.some((op) => op === 'unreachable A'), 'the unreachability was tried');
  assert.equal(snapshot(), before);
  assert.deepEqual(ended, [], 'a failed write is not a lost term');
  assert.equal(term.state, 'SERVING');
  term.dispose();
});

test('a fenced write ends the term at once', async () => {
  const registry = new HeldRegistry(recoveredState(), () => new RegistryFencedError('the registry is read-only'));
  const { term, ended } = await setup(registry);
  const e = await term.services.drain.drain('A', { maxGracePeriodNs: undefined, markGone: false });
  assert.equal(e?.code, 'REGISTRY_WRITE_FAILED');
  assert.deepEqual(ended, ['the registry is read-only']);
  assert.equal(term.state, 'ENDED');
  assert.equal(term.agents.get('A')?.drain, undefined);
});

test('an attribute ACL still names a DOWN machine after a restart: its rack team brings it UP (SQLite registry)', async (t) => {
  const acls = parseAcls(
    JSON.stringify({
      permissive: false,
      register_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }],
      stop_maintenances: [{ principals: { values: ['rack-1'] }, machines: { values: ['rack:r1'] } }, { principals: { values: ['rack-2'] }, machines: { values: ['rack:r2'] } }],
    }),
  );
  assert.ok(acls.ok);
  if (!acls.ok) return;
  const security = new MasterSecurity({
    config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
    authorizer: new Authorizer(acls.value),
  });
  const dir = tempDir(t, 'drydock-term-');
  const machine = { hostname: 'h', ip: '10.0.0.9' };
  const stop = (term: Term, principal: string) => answerCall(term, { type: 'STOP_MAINTENANCE', body: { stop_maintenance: { machines: [machine] } } }, new Access(security, principal));

  // First term: an agent of rack r1 registers on the machine; the machine is scheduled, then DOWN (which removes the agent).
  const registry = openSqliteRegistry(dir);
  t.after(() => registry.close());
  const first = (await setup(registry, security)).term;
  t.after(() => first.dispose());
  const conn = new FakeConn(1);
  first.services.agents.connected(conn);
  await first.services.agents.handle(conn, { ...REGISTER, agent: { ...(REGISTER as { agent: object }).agent, attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }] } } as AgentMessage);
  const reg = conn.sent.find((m) => m.type === 'REGISTERED');
  assert.ok(reg?.type === 'REGISTERED');
  assert.equal(await first.services.maintenance.updateSchedule({ windows: [{ machineIds: [machine], unavailability: { startNs: 1n } }] }), undefined);
  assert.equal(await first.services.maintenance.startMaintenance([machine]), undefined);
  for (let i = 0; i < 100 && first.agents.get(reg.agent_id) !== undefined; i++) await new Promise((r) => setTimeout(r, 10));
  assert.equal(first.agents.get(reg.agent_id), undefined, 'the agent of a DOWN machine is removed');
  first.dispose();
  await registry.close();

  // A restart: no agent is left on the machine; the attributes come back with the schedule.
  const reopened = openSqliteRegistry(dir);
  t.after(() => reopened.close());
  const { term } = await setup(reopened, security);
  t.after(() => term.dispose());
  assert.equal([...term.agents.all()].length, 0);
  assert.deepEqual(term.maintenance.attributesOf(machine), { rack: 'r1' });
  const refused = await stop(term, 'rack-2');
  assert.ok(refused !== undefined && !refused.ok && refused.error.code === 'FORBIDDEN', JSON.stringify(refused));
  assert.equal(term.maintenance.get(machine)?.mode, 'DOWN');
  assert.deepEqual(await stop(term, 'rack-1'), { ok: true, json: undefined });
  assert.equal(term.maintenance.get(machine)?.mode, 'UP');
});

/**
 * A machine scheduled before its agent registered (so the schedule was written without its
 * attributes), whose agent registers with `rack:r1` and then leaves the table by `leave`, before
 * the machine is DOWN: a restart on the same SQLite file must still know its attributes, which
 * only the write that made the agent leave could carry. Returns the restarted term and the id.
 */
async function attributesAfterLeaving(t: TestContext, leave: (term: Term, agentId: string, conn: FakeConn) => Promise<void>): Promise<{ term: Term; agentId: string }> {
  const dir = tempDir(t, 'drydock-term-');
  const machine = { hostname: 'h', ip: '10.0.0.9' };
  const registry = openSqliteRegistry(dir);
  t.after(() => registry.close());
  const first = (await setup(registry)).term;
  t.after(() => first.dispose());
  assert.equal(await first.services.maintenance.updateSchedule({ windows: [{ machineIds: [machine], unavailability: { startNs: 1n } }] }), undefined);
  const conn = new FakeConn(1);
  first.services.agents.connected(conn);
  await first.services.agents.handle(conn, { ...REGISTER, agent: { ...(REGISTER as { agent: object }).agent, attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }] } } as AgentMessage);
  const reg = conn.sent.find((m) => m.type === 'REGISTERED');
  assert.ok(reg?.type === 'REGISTERED');
  await leave(first, reg.agent_id, conn);
  first.dispose();
  await registry.close();

  // A restart before DOWN: no agent of the machine is left.
  const reopened = openSqliteRegistry(dir);
  t.after(() => reopened.close());
  const { term } = await setup(reopened);
  t.after(() => term.dispose());
  assert.deepEqual(term.maintenance.attributesOf(machine), { rack: 'r1' });
  assert.equal(term.maintenance.get(machine)?.mode, 'DRAINING');
  return { term, agentId: reg.agent_id };
}

test('a machine scheduled before its agent registered keeps that agent\'s attributes when the agent is removed before DOWN, across a restart (SQLite registry)', async (t) => {
  await attributesAfterLeaving(t, async (first, agentId, conn) => {
    // It goes away, and a new agent (of another machine: another hostname) takes its ip:port: the old one is removed.
    first.services.agents.disconnected(conn);
    const other = new FakeConn(2);
    first.services.agents.connected(other);
    await first.services.agents.handle(other, { ...REGISTER, agent: { ...(REGISTER as { agent: object }).agent, hostname: 'h2' } } as AgentMessage);
    assert.ok(other.sent.some((m) => m.type === 'REGISTERED'));
    assert.equal(first.agents.get(agentId), undefined, 'replaced');
  });
});

test('a machine scheduled before its agent registered keeps that agent\'s attributes when the agent is marked gone before DOWN, across a restart (SQLite registry)', async (t) => {
  const { term, agentId } = await attributesAfterLeaving(t, async (first, id) => {
    // MARK_AGENT_GONE (a mark_gone drain finishing takes the same path): its only agent leaves.
    assert.equal(await first.services.drain.markGoneCall(id), undefined);
    assert.equal(first.agents.isGone(id), true);
  });
  assert.equal(term.agents.isGone(agentId), true);
});

test('GET_STATE / GET_FRAMEWORKS: a framework the caller may view shows only the offers of agents it may view', async () => {
  const acls = parseAcls(
    JSON.stringify({
      permissive: false,
      register_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }],
      view_frameworks: [{ principals: { values: ['rack-1', 'ops', 'no-agents'] }, users: { type: 'ANY' } }],
      view_agents: [{ principals: { values: ['rack-1'] }, agents: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
    }),
  );
  assert.ok(acls.ok);
  if (!acls.ok) return;
  const security = new MasterSecurity({
    config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
    authorizer: new Authorizer(acls.value),
  });
  const registry = new HeldRegistry();
  const { term } = await setup(registry, security);
  // A framework first, then two agents (r1 and r2) whose registration offers their resources to it.
  const events: Array<{ type: string }> = [];
  const subscribed = term.services.frameworks.subscribe({ user: 'web', name: 'f' }, () => ({ id: 's', send: (e) => events.push(e as { type: string }), close: () => {}, onClose: () => {} }));
  await tick();
  registry.commit();
  assert.deepEqual(await subscribed, { ok: true });
  const cpus = (n: number) => [{ name: 'cpus', type: 'SCALAR' as const, scalar: { value: n } }];
  const agentIds: string[] = [];
  for (const [i, rack] of [[1, 'r1'], [2, 'r2']] as const) {
    const conn = new FakeConn(i);
    term.services.agents.connected(conn);
    const agent = { hostname: `h${i}`, ip: `10.0.0.${i}`, port: 5051, resources: cpus(i), attributes: [{ name: 'rack', type: 'TEXT' as const, text: { value: rack } }] };
    const handled = term.services.agents.handle(conn, { ...REGISTER, request_id: i, agent } as AgentMessage);
    await tick();
    registry.commit();
    await handled;
    const reg = conn.sent.find((m) => m.type === 'REGISTERED');
    assert.ok(reg?.type === 'REGISTERED');
    agentIds.push(reg.agent_id);
  }
  // The allocations that follow the registrations run on timers, late on a busy machine: up to 5 s.
  const offered = (): number => events.filter((e) => e.type === 'OFFERS').reduce((n, e) => n + ((e as { offers?: { offers?: unknown[] } }).offers?.offers?.length ?? 0), 0);
  for (const deadline = Date.now() + 5_000; offered() < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
  assert.ok(events.some((e) => e.type === 'OFFERS'), 'the framework got offers');
  const frameworksAs = (principal: string | undefined) => {
    const rights = principal === undefined ? undefined : viewRights(new Access(security, principal));
    const state = getState(term.queries, rights) as { get_frameworks: { frameworks: Array<{ offers: Array<{ agent_id: { value: string }; hostname: string }>; offered_resources: Array<{ scalar: { value: number } }> }> } };
    return state.get_frameworks.frameworks;
  };
  const offersAs = (principal: string | undefined) => frameworksAs(principal)[0]?.offers.map((o) => o.hostname).sort();
  const offeredCpusAs = (principal: string | undefined) => frameworksAs(principal)[0]?.offered_resources.reduce((n, r) => n + r.scalar.value, 0);
  assert.deepEqual(offersAs(undefined), ['h1', 'h2'], 'without ACLs: every offer');
  assert.deepEqual(offersAs('ops'), ['h1', 'h2']);
  assert.deepEqual(offersAs('rack-1'), ['h1'], 'the offer on the r2 agent is left out');
  assert.equal(offeredCpusAs('rack-1'), 1, 'offered_resources sums the offers shown');
  assert.equal(offeredCpusAs('ops'), 3);
  assert.deepEqual(offersAs('no-agents'), [], 'a caller who may view no agent sees the framework without offers');
  assert.deepEqual(frameworksAs('nobody'), [], 'nor the framework without view_frameworks');
  // Both machines scheduled: inverse offers for both agents, filtered the same way.
  const scheduled = term.services.maintenance.updateSchedule({ windows: [{ machineIds: [{ hostname: 'h1', ip: '10.0.0.1' }, { hostname: 'h2', ip: '10.0.0.2' }], unavailability: { startNs: 1n } }] });
  await tick();
  registry.commit();
  assert.equal(await scheduled, undefined);
  const inverseAs = (principal: string | undefined) =>
    ((getState(term.queries, principal === undefined ? undefined : viewRights(new Access(security, principal))) as { get_frameworks: { frameworks: Array<{ inverse_offers: Array<{ agent_id: { value: string } }> }> } }).get_frameworks.frameworks[0]?.inverse_offers ?? []).map((o) => o.agent_id.value).sort();
  // The inverse offers come with the next allocation, on a timer: up to 5 s.
  for (const deadline = Date.now() + 5_000; inverseAs(undefined).length < 2 && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 5));
  assert.deepEqual(inverseAs(undefined), [...agentIds].sort(), 'without ACLs: an inverse offer per agent');
  assert.deepEqual(inverseAs('rack-1'), [agentIds[0]]);
  assert.deepEqual(inverseAs('no-agents'), []);
  term.dispose();
});

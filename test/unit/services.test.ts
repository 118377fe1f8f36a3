/**
 * The term's services alone, with fakes at their ports: a link that records what agents are
 * sent, a registry that holds or fails writes, the bus, a ManualClock. The drain service and
 * the frameworks-and-offers service, each without the other.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { silentLogger } from '../../shared/log.js';
import { messageDigest, type MasterMessage } from '../../shared/protocol.js';
import { AgentTable } from '../../master/cores/agents.js';
import { Commits } from '../../master/term/commit.js';
import { DrainService } from '../../master/services/drain.js';
import { drainRecordJson } from '../../master/cores/drain.js';
import { MasterEvents, type MasterEvent } from '../../master/term/events.js';
import { MaintenanceState } from '../../master/cores/maintenance.js';
import { MaintenanceService } from '../../master/services/maintenance.js';
import type { AgentLink } from '../../master/term/ports.js';
import type { Registry, RegistryState } from '../../master/registry/registry.js';
import { FrameworksService } from '../../master/services/frameworks.js';
import type { FrameworkStream } from '../../master/term/commands.js';
import { parseSchedulerCall } from '../../master/cores/scheduler-calls.js';

/** Records every write; fails them while `failing` is set. */
class FakeRegistry {
  readonly ops: string[] = [];
  failing = false;
  readonly registry: Registry;
  constructor() {
    const write = (op: string) => (): Promise<void> => {
      this.ops.push(op);
      return this.failing ? Promise.reject(new Error('no disk')) : Promise.resolve();
    };
    const state: RegistryState = { agents: [], frameworks: [], maintenance: { windows: [] } };
    this.registry = {
      recover: () => Promise.resolve(state),
      admitAgent: write('admit'),
      markAgentUnreachable: write('unreachable'),
      markAgentReachable: write('reachable'),
      removeAgent: write('remove'),
      drainAgent: write('drain'),
      markAgentDrained: write('drained'),
      deactivateAgent: write('deactivate'),
      reactivateAgent: write('reactivate'),
      markAgentGone: write('gone'),
      addFramework: write('add framework'),
      removeFramework: write('remove framework'),
      updateSchedule: write('schedule'),
      startMaintenance: write('down'),
      stopMaintenance: write('up'),
      createMaintenancePlan: write('create maintenance plan'),
      updateMaintenancePlanProgress: write('maintenance plan progress'),
      deleteMaintenancePlan: write('delete maintenance plan'),
      close: () => Promise.resolve(),
    };
  }
}

class FakeLink implements AgentLink {
  readonly sent: Array<{ agentId: string; msg: MasterMessage; urgent: boolean }> = [];
  readonly closed: Array<{ agentId: string; code: number; reason: string }> = [];
  send(agentId: string, msg: MasterMessage, urgent = false): boolean {
    this.sent.push({ agentId, msg, urgent });
    return true;
  }
  close(agentId: string, code: number, reason: string): void {
    this.closed.push({ agentId, code, reason });
  }
  types(agentId: string): string[] {
    return this.sent.filter((s) => s.agentId === agentId).map((s) => s.msg.type);
  }
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

/** A model with one registered, connected agent `A` on machine h/10.0.0.1, and the ports around it. */
function world() {
  const clock = new ManualClock();
  const bus = new MasterEvents();
  const events: MasterEvent[] = [];
  bus.subscribe((e) => events.push(e));
  const registry = new FakeRegistry();
  const commits = new Commits(registry.registry, silentLogger, () => {});
  const agents = new AgentTable({ pingTimeoutMs: 1000, maxPingTimeouts: 3, reregisterTimeoutMs: 10_000 });
  const req = { agentId: 'A', info: { hostname: 'h', ip: '10.0.0.1', port: 5051, resources: [{ name: 'cpus', type: 'SCALAR' as const, scalar: { value: 2 } }], attributes: [] }, version: '1', capabilities: ['AGENT_DRAINING'] };
  agents.applyRegistration(agents.planRegistration(req, 1n, () => 'A'), req, [], 1, 1n);
  const maintenance = new MaintenanceState();
  maintenance.agentAdded('A', { hostname: 'h', ip: '10.0.0.1' });
  const link = new FakeLink();
  return { clock, bus, events, registry, commits, agents, maintenance, link };
}

describe('Drainer (drain service)', () => {
  function drainer(w: ReturnType<typeof world>): DrainService {
    const d = new DrainService({ agents: w.agents, maintenance: w.maintenance, link: w.link, commits: w.commits, bus: w.bus, clock: w.clock, log: silentLogger });
    d.start();
    return d;
  }

  test('DRAIN_AGENT: written first, then DRAINING, DRAIN sent, AGENT_UPDATED; DRAINED after the last acknowledgement', async () => {
    const w = world();
    const d = drainer(w);
    w.agents.addTask('A', 'f', { name: 't', task_id: { value: 't' }, agent_id: { value: 'A' }, resources: [] });
    assert.equal(await d.drain('A', { maxGracePeriodNs: 0n, markGone: false }), undefined);
    assert.deepEqual(w.registry.ops, ['drain']);
    assert.equal(w.agents.get('A')?.drain?.state, 'DRAINING');
    assert.equal(w.agents.get('A')?.deactivated, true);
    assert.deepEqual(w.link.types('A'), ['DRAIN']);
    // Written at once: the agent's SIGTERMs do not wait for the rest of the turn.
    assert.equal(w.link.sent[0]?.urgent, true);
    assert.deepEqual(w.events.filter((e) => e.type === 'AGENT_UPDATED').map((e) => (e as { change: string }).change), ['DRAINING']);
    // The task ends; its update is acknowledged: the bus tells the drain service.
    w.agents.updateStatus('A', 'f', { task_id: { value: 't' }, state: 'TASK_KILLED', source: 'SOURCE_AGENT', timestamp: 1, uuid: 'u' });
    assert.equal(w.agents.acknowledge('A', 'f', 't', 'u'), 'COMPLETED');
    w.bus.emit({ type: 'TASK_ACKNOWLEDGED', agentId: 'A', frameworkId: 'f', taskId: 't' });
    await tick();
    assert.deepEqual(w.registry.ops, ['drain', 'drained']);
    assert.equal(w.agents.get('A')?.drain?.state, 'DRAINED');
    assert.deepEqual(w.events.filter((e) => e.type === 'AGENT_UPDATED').map((e) => (e as { change: string }).change), ['DRAINING', 'DRAINED']);
  });

  test('a DRAIN the agent refused: in the drain record, not re-sent at registrations until the drain or the agent version changes', async () => {
    const w = world();
    const d = drainer(w);
    w.agents.addTask('A', 'f', { name: 't', task_id: { value: 't' }, agent_id: { value: 'A' }, resources: [] });
    assert.equal(await d.drain('A', { maxGracePeriodNs: 5n, markGone: false }), undefined);
    const sent = w.link.sent[0]?.msg;
    assert.ok(sent !== undefined);
    // A refusal of another message (an earlier drain's, say) changes nothing.
    w.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'DRAIN', digest: '0000000000000000', reason: 'old' } });
    assert.equal(w.agents.get('A')?.drain?.refused, undefined);
    w.clock.advance(1000);
    w.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'DRAIN', digest: messageDigest(sent), reason: 'cannot read it' } });
    const drain = w.agents.get('A')?.drain;
    assert.equal(drain?.refused?.reason, 'cannot read it');
    assert.equal(drain?.refused?.atNs, BigInt(w.clock.now()) * 1_000_000n);
    assert.equal(drain?.sentMs, undefined, 'its tasks were not told to stop');
    assert.deepEqual(drainRecordJson({ ...d.view(w.agents.get('A')!), drain: drain! }, w.clock.now())['refused'], { reason: 'cannot read it', time: { nanoseconds: BigInt(w.clock.now()) * 1_000_000n } });
    assert.deepEqual(w.events.filter((e) => e.type === 'AGENT_UPDATED').map((e) => (e as { change: string }).change), ['DRAINING', 'DRAIN_REFUSED']);
    // The agent registers again (same version): the same DRAIN is not sent again.
    d.agentRegistered('A');
    assert.deepEqual(w.link.types('A'), ['DRAIN']);
    // Back with another version (upgraded): sent again, and the refusal is history until it comes back.
    w.agents.get('A')!.version = '2';
    d.agentRegistered('A');
    assert.deepEqual(w.link.types('A'), ['DRAIN', 'DRAIN']);
    assert.equal(w.agents.get('A')?.drain?.refused, undefined);
    w.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'DRAIN', digest: messageDigest(sent), reason: 'still cannot' } });
    d.agentRegistered('A');
    assert.deepEqual(w.link.types('A'), ['DRAIN', 'DRAIN']);
    // A new DRAIN_AGENT is a new message: sent, whatever was refused before.
    assert.equal(await d.drain('A', { maxGracePeriodNs: 6n, markGone: false }), undefined);
    assert.deepEqual(w.link.types('A'), ['DRAIN', 'DRAIN', 'DRAIN']);
    assert.equal(w.agents.get('A')?.drain?.refused, undefined);
  });

  test('a failed write: the error is the answer and nothing changed', async () => {
    const w = world();
    const d = drainer(w);
    w.registry.failing = true;
    assert.equal((await d.drain('A', { maxGracePeriodNs: undefined, markGone: false }))?.code, 'REGISTRY_WRITE_FAILED');
    assert.equal((await d.deactivate('A'))?.code, 'REGISTRY_WRITE_FAILED');
    assert.equal(w.agents.get('A')?.drain, undefined);
    assert.equal(w.agents.get('A')?.deactivated, false);
    assert.deepEqual(w.link.sent, []);
    assert.deepEqual(w.events, []);
  });

  test('mark_gone: once drained the agent is gone: SHUTDOWN, closed, out of the table, AGENT_GONE with its tasks', async () => {
    const w = world();
    const d = drainer(w);
    assert.equal(await d.drain('A', { maxGracePeriodNs: undefined, markGone: true }), undefined);
    await tick();
    assert.deepEqual(w.registry.ops, ['drain', 'gone']);
    assert.equal(w.agents.get('A'), undefined);
    assert.equal(w.agents.isGone('A'), true);
    assert.deepEqual(w.link.types('A'), ['DRAIN', 'SHUTDOWN']);
    assert.equal(w.link.closed[0]?.reason, 'Agent has been marked gone');
    assert.ok(w.events.some((e) => e.type === 'AGENT_GONE' && e.agentId === 'A'));
  });

  test('drain and maintenance commands share one queue: each validates against what the one before left', async () => {
    const w = world();
    const d = drainer(w);
    const m = new MaintenanceService({ maintenance: w.maintenance, commits: w.commits, bus: w.bus, log: silentLogger });
    // Scheduled first (queued first), so the drain that follows is refused: the agent is part of the schedule (Mesos §4.8).
    const scheduled = m.updateSchedule({ windows: [{ machineIds: [{ hostname: 'h', ip: '10.0.0.1' }], unavailability: { startNs: 1n } }] });
    const drained = d.drain('A', { maxGracePeriodNs: undefined, markGone: false });
    assert.equal(await scheduled, undefined);
    assert.equal((await drained)?.code, 'AGENT_IN_MAINTENANCE_SCHEDULE');
    assert.deepEqual(w.registry.ops, ['schedule']);
    assert.ok(w.events.some((e) => e.type === 'MACHINE_UPDATED' && e.change === 'SCHEDULED' && e.agentIds.includes('A')));
  });
});

describe('Schedulers (frameworks and offers)', () => {
  function stream(): FrameworkStream & { events: Array<{ type: string } & Record<string, unknown>>; closed: boolean } {
    const closers: Array<() => void> = [];
    const s = {
      id: `stream-${Math.random()}`,
      events: [] as Array<{ type: string } & Record<string, unknown>>,
      closed: false,
      send(e: unknown) {
        s.events.push(e as { type: string });
      },
      close() {
        s.closed = true;
        for (const c of closers) c();
      },
      onClose(fn: () => void) {
        closers.push(fn);
      },
    };
    return s;
  }
  function schedulers(w: ReturnType<typeof world>): FrameworksService {
    const s = new FrameworksService({
      masterId: 'M',
      masterInfo: () => ({ id: 'M' }),
      startTimeMs: w.clock.now(),
      allocationIntervalMs: 60_000,
      agents: w.agents,
      maintenance: w.maintenance,
      link: w.link,
      commits: w.commits,
      bus: w.bus,
      clock: w.clock,
      log: silentLogger,
    });
    s.start();
    return s;
  }
  const call = (body: unknown) => {
    const p = parseSchedulerCall(JSON.stringify(body));
    assert.ok(p.ok);
    return p.call;
  };

  test('subscribe (durable first), offers of a registered agent, ACCEPT -> RUN_TASK and TASK_ADDED, updates forwarded', async () => {
    const w = world();
    const s = schedulers(w);
    const st = stream();
    assert.deepEqual(await s.subscribe({ user: 'u', name: 'f' }, () => st), { ok: true });
    assert.deepEqual(w.registry.ops, ['add framework']);
    assert.deepEqual(st.events.map((e) => e.type), ['SUBSCRIBED', 'HEARTBEAT']);
    const fid = (st.events[0]?.['subscribed'] as { framework_id: { value: string } }).framework_id.value;
    w.bus.emit({ type: 'AGENT_ADDED', agentId: 'A', tasksBefore: [], frameworks: [] });
    await tick();
    const offers = st.events.find((e) => e.type === 'OFFERS')?.['offers'] as { offers: Array<{ id: { value: string } }> };
    assert.equal(offers.offers.length, 1);
    const r = await s.call(
      call({
        type: 'ACCEPT',
        framework_id: { value: fid },
        accept: { offer_ids: [offers.offers[0]!.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: 't', task_id: { value: 't' }, agent_id: { value: 'A' }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }], command: { value: 'true' } }] } }] },
      }),
      st.id,
    );
    assert.deepEqual(r, { ok: true });
    assert.deepEqual(w.link.types('A'), ['RUN_TASK']);
    assert.ok(w.events.some((e) => e.type === 'TASK_ADDED' && e.taskId === 't'));
    w.bus.emit({ type: 'STATUS_UPDATE', agentId: 'A', frameworkId: fid, status: { task_id: { value: 't' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'dXVpZA==' } });
    const update = st.events.at(-1);
    assert.equal(update?.type, 'UPDATE');
    assert.equal((update?.['update'] as { status: { agent_id: { value: string } } }).status.agent_id.value, 'A', 'stamped with its agent');
    s.stop();
  });

  test('a launch the agent refused (it could not read the RUN_TASK): the framework hears TASK_ERROR with the reason, the task is done', async () => {
    const w = world();
    const s = schedulers(w);
    const st = stream();
    await s.subscribe({ user: 'u', name: 'f' }, () => st);
    const fid = (st.events[0]?.['subscribed'] as { framework_id: { value: string } }).framework_id.value;
    w.agents.addTask('A', fid, { name: 't', task_id: { value: 't' }, agent_id: { value: 'A' }, resources: [] });
    w.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'RUN_TASK', id: 't', digest: '0123456789abcdef', reason: 'Missing required fields: task.resources' } });
    const updates = st.events.filter((e) => e.type === 'UPDATE').map((e) => (e['update'] as { status: { state: string; reason: string; message: string; source: string } }).status);
    assert.deepEqual(updates.map((u) => [u.state, u.reason, u.source, u.message]), [['TASK_ERROR', 'REASON_TASK_INVALID', 'SOURCE_MASTER', 'The agent refused the launch: Missing required fields: task.resources']]);
    assert.equal(w.agents.get('A')?.tasks?.size ?? 0, 0);
    assert.equal(w.agents.completedTasks.length, 1);
    assert.ok(w.events.some((e) => e.type === 'TASK_UPDATED' && e.state === 'TASK_ERROR'));
    // Another refusal of it (a resent RUN_TASK, say) finds nothing to end.
    w.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'RUN_TASK', id: 't', digest: '0123456789abcdef', reason: 'again' } });
    assert.equal(st.events.filter((e) => e.type === 'UPDATE').length, 1);
    s.stop();
  });

  test('an agent that disconnects: a framework that does not checkpoint loses its task once (tombstoned)', async () => {
    const w = world();
    const s = schedulers(w);
    const st = stream();
    await s.subscribe({ user: 'u', name: 'f', checkpoint: false }, () => st);
    const fid = (st.events[0]?.['subscribed'] as { framework_id: { value: string } }).framework_id.value;
    w.agents.addTask('A', fid, { name: 't', task_id: { value: 't' }, agent_id: { value: 'A' }, resources: [] });
    w.agents.updateStatus('A', fid, { task_id: { value: 't' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1 });
    w.agents.disconnect('A', 1, w.clock.now());
    w.bus.emit({ type: 'AGENT_DISCONNECTED', agentId: 'A' });
    const lost = st.events.filter((e) => e.type === 'UPDATE').map((e) => (e['update'] as { status: { state: string; reason: string } }).status);
    assert.deepEqual(lost.map((x) => `${x.state} ${x.reason}`), ['TASK_LOST REASON_AGENT_DISCONNECTED']);
    assert.equal(w.agents.tombstones.size, 1);
    assert.equal(w.agents.completedTasks.length, 1);
    s.stop();
  });

  test('disk pressure: the outstanding offer is rescinded, none while it lasts (the agent and its tasks stay), offered again once it clears', async () => {
    const w = world();
    const s = schedulers(w);
    const st = stream();
    await s.subscribe({ user: 'u', name: 'f' }, () => st);
    w.bus.emit({ type: 'AGENT_ADDED', agentId: 'A', tasksBefore: [], frameworks: [] });
    await tick();
    const offered = (st.events.find((e) => e.type === 'OFFERS')?.['offers'] as { offers: Array<{ id: { value: string } }> }).offers;
    assert.equal(offered.length, 1);
    const pressure = { since_ms: w.clock.now(), reason: 'NO_SPACE' as const, message: 'no space left on device in /w', path: '/w', free_bytes: 0, total_bytes: 1, free_inodes: 1, total_inodes: 1 };
    const change = w.agents.updateConditions('A', 1, { disk_pressure: pressure }, w.clock.now());
    assert.equal(change, 'DISK_PRESSURE');
    w.bus.emit({ type: 'AGENT_UPDATED', agentId: 'A', change: 'DISK_PRESSURE' });
    assert.deepEqual(st.events.at(-1), { type: 'RESCIND', rescind: { offer_id: offered[0]!.id } });
    assert.equal(s.outstandingOffers, 0);
    // Allocation rounds while it lasts (timer and event driven) offer nothing of it.
    const before = st.events.length;
    s.allocateSoon();
    await tick();
    w.clock.advance(60_000);
    await tick();
    assert.deepEqual(st.events.slice(before).filter((e) => e.type === 'OFFERS'), []);
    assert.equal(w.agents.get('A')?.phase, 'REGISTERED');
    assert.deepEqual(w.link.sent, [], 'nothing is sent to the agent');
    // Cleared: offered again at once.
    assert.equal(w.agents.updateConditions('A', 1, {}, w.clock.now()), 'DISK_PRESSURE_CLEARED');
    w.bus.emit({ type: 'AGENT_UPDATED', agentId: 'A', change: 'DISK_PRESSURE_CLEARED' });
    await tick();
    assert.equal(st.events.filter((e) => e.type === 'OFFERS').length, 2);
    s.stop();
  });

  test('TEARDOWN with a failing registry: the error is the answer and the framework stays', async () => {
    const w = world();
    const s = schedulers(w);
    const st = stream();
    await s.subscribe({ user: 'u', name: 'f' }, () => st);
    const fid = (st.events[0]?.['subscribed'] as { framework_id: { value: string } }).framework_id.value;
    w.registry.failing = true;
    const r = await s.call(call({ type: 'TEARDOWN', framework_id: { value: fid } }), st.id);
    assert.ok(!r.ok && r.error.code === 'REGISTRY_WRITE_FAILED');
    assert.equal(s.frameworks.get(fid)?.phase, 'CONNECTED');
    assert.equal(st.closed, false);
    w.registry.failing = false;
    assert.deepEqual(await s.call(call({ type: 'TEARDOWN', framework_id: { value: fid } }), st.id), { ok: true });
    assert.equal(s.frameworks.get(fid), undefined);
    assert.equal(s.frameworks.isRemoved(fid), true);
    assert.equal(st.closed, true);
    s.stop();
  });
});

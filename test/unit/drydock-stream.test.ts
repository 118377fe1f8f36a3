/**
 * Drydock's own event stream (`GET /drydock/v1/events`, master/api/drydock-stream.ts): what each
 * master event becomes on it (a table), which ACL decides each and on what (a table), and the
 * shell on a loopback server: the snapshot as the subscriber may see it, agents by view_agents
 * with their machine's mode and window by get_maintenance_statuses and _schedules, an agent that
 * leaves decided as it was, a plan by all of its machines, a machine change carrying only the
 * subscriber's machines, a failed hook's output only to those who may run the hook; without
 * ACLs every subscriber gets every event; one heartbeat timer, the slow-reader bound, the cap.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import { ManualClock } from '../../shared/clock.js';
import { stringifyJson } from '../../shared/json.js';
import { Logger } from '../../shared/log.js';
import type { MachineId } from '../../shared/machine.js';
import { MasterEvents, type MasterEvent } from '../../master/term/events.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import { drydockGate, drydockRecord, DrydockStreams, HEARTBEAT_RECORD, snapshotRecord, type DrydockGate, type DrydockObjects, type DrydockView } from '../../master/api/drydock-stream.js';
import type { DrydockRights, MachineSight } from '../../master/api/drydock.js';
import { serveStreams, until } from '../helpers/stream-server.js';

const STATUS = { draining_machines: [{ id: { hostname: 'm1' } }] };

/** Agent A on machine m1 as Drydock writes it, with its machine as `sight` allows. */
function agentA(sight: MachineSight = { mode: true, window: true }): Record<string, unknown> {
  const machine: Record<string, unknown> = { id: { hostname: 'm1' } };
  if (sight.mode) machine['mode'] = 'DRAINING';
  if (sight.window) machine['unavailability'] = { start: { nanoseconds: 1 } };
  return { agent_id: { value: 'A' }, state: 'DRAINING', machine };
}

/** A view that knows agent A only. */
const VIEW: DrydockView = {
  agent: (id, sight) => (id === 'A' ? agentA(sight) : undefined),
  agents: () => [agentA()],
  maintenanceStatus: () => STATUS,
  machineIds: (keys) => keys.map((k) => ({ hostname: k })),
};

describe('drydockRecord', () => {
  const step = { phase: 'r1', name: 'm1', machine: { hostname: 'm1', ip: '10.0.0.1' }, stage: 'WAITING_FRAMEWORKS' as const, status: 'STARTING' as const, waitingFor: 'waiting for inverse offer answers: marathon (DECLINED) — 3s left of 5mins' };
  const cases: Array<[string, MasterEvent, unknown]> = [
    ['a drain starting: AGENT_UPDATED with the change and the agent as /drydock/v1/agents/<id>', { type: 'AGENT_UPDATED', agentId: 'A', change: 'DRAINING' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'DRAINING', agent: agentA() } }],
    ['a drain refused by its agent', { type: 'AGENT_UPDATED', agentId: 'A', change: 'DRAIN_REFUSED' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'DRAIN_REFUSED', agent: agentA() } }],
    ['an agent added', { type: 'AGENT_ADDED', agentId: 'A' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'ADDED', agent: agentA() } }],
    ['an agent reconnected', { type: 'AGENT_RECONNECTED', agentId: 'A' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'RECONNECTED', agent: agentA() } }],
    ['an agent disconnected (its view says connected: false)', { type: 'AGENT_DISCONNECTED', agentId: 'A' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'DISCONNECTED', agent: agentA() } }],
    ['an agent unreachable', { type: 'AGENT_UNREACHABLE', agentId: 'A' }, { type: 'AGENT_UPDATED', agent_updated: { change: 'UNREACHABLE', agent: agentA() } }],
    ['an update of an agent already gone again is skipped (AGENT_LEFT follows)', { type: 'AGENT_UPDATED', agentId: 'B', change: 'DRAINED' }, undefined],
    ['a removal: AGENT_LEFT with the reason', { type: 'AGENT_REMOVED', agentId: 'A', reason: "Operator initiated 'Machine DOWN'" }, { type: 'AGENT_LEFT', agent_left: { agent_id: { value: 'A' }, reason: 'REMOVED', message: "Operator initiated 'Machine DOWN'" } }],
    ['marked gone: AGENT_LEFT GONE', { type: 'AGENT_GONE', agentId: 'A', tasks: [] }, { type: 'AGENT_LEFT', agent_left: { agent_id: { value: 'A' }, reason: 'GONE', message: 'Agent has been marked gone' } }],
    ['MACHINE_UPDATED names the change and the machines, and carries GET_MAINTENANCE_STATUS', { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['m1'], agentIds: [] }, { type: 'MACHINE_UPDATED', machine_updated: { change: 'SCHEDULED', machine_ids: [{ hostname: 'm1' }], status: STATUS } }],
    ['MAINTENANCE_PLAN_ADDED names the plan, its status and machine count', { type: 'MAINTENANCE_PLAN_ADDED', plan: 'kernel', status: 'PENDING', machines: 3 }, { type: 'MAINTENANCE_PLAN_ADDED', maintenance_plan_added: { name: 'kernel', status: 'PENDING', machines: 3 } }],
    [
      'MAINTENANCE_PLAN_UPDATED carries the step: machine, stage, status, waiting-for text',
      { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'kernel', status: 'IN_PROGRESS', step },
      { type: 'MAINTENANCE_PLAN_UPDATED', maintenance_plan_updated: { name: 'kernel', status: 'IN_PROGRESS', step: { phase: 'r1', name: 'm1', machine_id: { hostname: 'm1', ip: '10.0.0.1' }, stage: 'WAITING_FRAMEWORKS', status: 'STARTING', waiting_for: step.waitingFor } } },
    ],
    ['MAINTENANCE_PLAN_UPDATED without a step: only the plan status changed', { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'kernel', status: 'WAITING' }, { type: 'MAINTENANCE_PLAN_UPDATED', maintenance_plan_updated: { name: 'kernel', status: 'WAITING' } }],
    ['MAINTENANCE_PLAN_REMOVED', { type: 'MAINTENANCE_PLAN_REMOVED', plan: 'kernel' }, { type: 'MAINTENANCE_PLAN_REMOVED', maintenance_plan_removed: { name: 'kernel' } }],
    ["tasks are Mesos' stream's", { type: 'TASK_ADDED', agentId: 'A', frameworkId: 'fw', taskId: 't1' }, undefined],
    ["frameworks are Mesos' stream's", { type: 'FRAMEWORK_ADDED', frameworkId: 'fw' }, undefined],
    ['an agent refusing a message says nothing here (a refused drain is DRAIN_REFUSED)', { type: 'AGENT_REFUSED_MESSAGE', agentId: 'A', refused: { type: 'DRAIN', digest: 'd', reason: 'x' } }, undefined],
  ];
  for (const [name, event, want] of cases) test(name, () => assert.deepEqual(drydockRecord(event, VIEW), want));

  test("an agent's machine as the subscriber may see it: without get_maintenance_statuses no mode, without _schedules no window", () => {
    const r = drydockRecord({ type: 'AGENT_UPDATED', agentId: 'A', change: 'DEACTIVATED' }, VIEW, { mode: false, window: false });
    assert.deepEqual((r as unknown as { agent_updated: { agent: { machine: unknown } } }).agent_updated.agent.machine, { id: { hostname: 'm1' } });
  });

  test("a failed hook's output only when the subscriber may run the hook", () => {
    const failed: MasterEvent = { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'k', status: 'ERROR', step: { ...step, stage: 'ERROR', status: 'ERROR', waitingFor: 'hidden', revealed: { hook: 'patch', waitingFor: 'shown' } } };
    const text = (r: unknown): string => (r as { maintenance_plan_updated: { step: { waiting_for: string } } }).maintenance_plan_updated.step.waiting_for;
    assert.equal(text(drydockRecord(failed, VIEW)), 'hidden');
    assert.equal(text(drydockRecord(failed, VIEW, undefined, (h) => h === 'patch')), 'shown');
  });

  test('SNAPSHOT and HEARTBEAT', () => {
    assert.equal(stringifyJson(snapshotRecord([], 200)), '{"type":"SNAPSHOT","snapshot":{"agents":[],"heartbeat_interval_seconds":0.2}}');
    assert.equal(stringifyJson(HEARTBEAT_RECORD), '{"type":"HEARTBEAT"}');
  });
});

describe('drydockGate', () => {
  const machineOf = (id: string): MachineObject | undefined => (id === 'A' ? { hostname: 'm1', attributes: { rack: 'r1' } } : undefined);
  const cases: Array<[string, MasterEvent, DrydockGate]> = [
    ["AGENT_UPDATED: view_agents on the agent, its machine's mode and window on the machine", { type: 'AGENT_UPDATED', agentId: 'A', change: 'DRAINING' }, { kind: 'AGENT', agentId: 'A', machine: { hostname: 'm1', attributes: { rack: 'r1' } } }],
    ['a disconnect: the same', { type: 'AGENT_DISCONNECTED', agentId: 'A' }, { kind: 'AGENT', agentId: 'A', machine: { hostname: 'm1', attributes: { rack: 'r1' } } }],
    ['AGENT_LEFT: view_agents on the agent as it was; no machine shown', { type: 'AGENT_GONE', agentId: 'A', tasks: [] }, { kind: 'AGENT', agentId: 'A', machine: 'NONE' }],
    ['MACHINE_UPDATED: per subscriber, by its machines', { type: 'MACHINE_UPDATED', change: 'DOWN', machineKeys: ['m1'], agentIds: [] }, { kind: 'MACHINES', machineKeys: ['m1'] }],
    ['a plan: every machine of it', { type: 'MAINTENANCE_PLAN_REMOVED', plan: 'p' }, { kind: 'PLAN', plan: 'p' }],
    ["a task: not this stream's", { type: 'TASK_ACKNOWLEDGED', agentId: 'A', frameworkId: 'f', taskId: 't' }, { kind: 'NONE' }],
  ];
  for (const [name, event, want] of cases) test(name, () => assert.deepEqual(drydockGate(event, { agentMachine: machineOf }), want));
});

describe('DrydockStreams (shell)', () => {
  /** Agents A1 (rack r1, machine h1) and A2 (rack r2, machine h2); plans rack-1 (h1) and both (h1, h2). */
  function world() {
    const agents = new Map<string, MachineObject>([
      ['A1', { agentId: 'A1', hostname: 'h1', ip: '10.0.0.1', attributes: { rack: 'r1' } }],
      ['A2', { agentId: 'A2', hostname: 'h2', ip: '10.0.0.2', attributes: { rack: 'r2' } }],
    ]);
    const machines: Record<string, MachineObject> = { h1: { hostname: 'h1', attributes: { rack: 'r1' } }, h2: { hostname: 'h2', attributes: { rack: 'r2' } } };
    const plans: Record<string, string[]> = { 'rack-1': ['h1'], both: ['h1', 'h2'] };
    const machineKeyOf = (id: string): string => (id === 'A1' ? 'h1' : 'h2');
    const objects: DrydockObjects = {
      agent: (a) => agents.get(a),
      agents: () => agents.entries(),
      agentMachine: (a) => (agents.has(a) ? machines[machineKeyOf(a)] : undefined),
      machine: (k) => machines[k],
      planMachines: (p) => plans[p]?.map((k) => machines[k] as MachineObject),
    };
    const agentJson = (id: string, sight?: MachineSight): Record<string, unknown> => {
      const machine: Record<string, unknown> = { id: { hostname: machineKeyOf(id) } };
      if (sight?.mode !== false) machine['mode'] = 'DRAINING';
      if (sight?.window !== false) machine['unavailability'] = { start: { nanoseconds: 1 } };
      return { agent_id: { value: id }, machine };
    };
    const view: DrydockView = {
      agent: (a, sight) => (agents.has(a) ? agentJson(a, sight) : undefined),
      agents: (rights: DrydockRights | undefined) => [...agents.entries()].filter(([, o]) => rights === undefined || rights.agents(o)).map(([id]) => agentJson(id)),
      maintenanceStatus: (visible?: (id: MachineId) => boolean) => ({ draining_machines: ['h1', 'h2'].filter((h) => visible === undefined || visible({ hostname: h, ip: '' })).map((h) => ({ id: { hostname: h } })) }),
      machineIds: (keys) => keys.map((k) => ({ hostname: k })),
    };
    return { agents, objects, view };
  }

  const ACLS = {
    permissive: false,
    view_agents: [{ principals: { values: ['web-team', 'blind'] }, agents: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
    view_maintenance_plans: [{ principals: { values: ['web-team'] }, machines: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
    get_maintenance_statuses: [{ principals: { values: ['web-team'] }, machines: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
    get_maintenance_schedules: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
    run_maintenance_hooks: [{ principals: { values: ['ops'] }, hooks: { values: ['patch'] } }],
  };

  function security(acls: unknown): MasterSecurity {
    const parsed = parseAcls(JSON.stringify(acls));
    assert.ok(parsed.ok);
    return new MasterSecurity({
      config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: 'x' },
      authorizer: parsed.ok ? new Authorizer(parsed.value) : undefined,
    });
  }

  /** A loopback server whose requests subscribe as the principal in `x-principal`. */
  async function setup(t: { after: (fn: () => void | Promise<void>) => void }, sec: MasterSecurity, opts: { maxSubscribers?: number; maxBufferedBytes?: number } = {}) {
    const w = world();
    const events = new MasterEvents();
    const clock = new ManualClock();
    const streams = new DrydockStreams({
      events,
      view: w.view,
      objects: w.objects,
      machineObject: (id) => ({ hostname: id.hostname, attributes: { rack: id.hostname === 'h1' ? 'r1' : 'r2' } }),
      clock,
      logger: new Logger({ level: 'error' }),
      heartbeatIntervalMs: 15_000,
      maxSubscribers: opts.maxSubscribers ?? 100,
      ...(opts.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: opts.maxBufferedBytes }),
    });
    const open = await serveStreams(t, (res, principal) => streams.subscribe(res, new Access(sec, principal)), () => streams.close(), 'GET', (r) => JSON.parse(r) as Record<string, unknown>);
    return { w, events, clock, streams, open };
  }

  /** The events after SNAPSHOT and the first HEARTBEAT, as `TYPE id`. */
  const seen = (records: Array<Record<string, unknown>>): string[] =>
    records.slice(2).map((r) => {
      const type = r['type'] as string;
      const body = r[type.toLowerCase()] as Record<string, unknown>;
      const id =
        (body['agent'] as { agent_id?: { value: string } } | undefined)?.agent_id?.value ??
        (body['agent_id'] as { value: string } | undefined)?.value ??
        (body['name'] as string | undefined) ??
        ((body['machine_ids'] as Array<{ hostname: string }> | undefined)?.map((m) => m.hostname).join('+') ?? '');
      return `${type} ${id}`;
    });

  const EVENTS: MasterEvent[] = [
    { type: 'TASK_ADDED', agentId: 'A1', frameworkId: 'fw-web', taskId: 't-web' },
    { type: 'AGENT_UPDATED', agentId: 'A1', change: 'DRAINING' },
    { type: 'AGENT_UPDATED', agentId: 'A2', change: 'DEACTIVATED' },
    { type: 'MAINTENANCE_PLAN_ADDED', plan: 'rack-1', status: 'PENDING', machines: 1 },
    { type: 'MAINTENANCE_PLAN_ADDED', plan: 'both', status: 'PENDING', machines: 2 },
    { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h1', 'h2'], agentIds: [] },
    { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h2'], agentIds: [] },
  ];

  test('each subscriber gets what its principal may view: its snapshot, its agents and their machines as it may see them, its plans and machines', async (t) => {
    const { w, events, open } = await setup(t, security(ACLS));
    const web = await open('web-team');
    const ops = await open('ops');
    const blind = await open('blind');
    const anon = await open();
    await until(() => [web, ops, blind, anon].every((s) => s.records.length === 2), 'SNAPSHOT + HEARTBEAT each');
    const snapshotIds = (s: { records: Array<Record<string, unknown>> }): string[] =>
      ((s.records[0]?.['snapshot'] as { agents: Array<{ agent_id: { value: string } }> }).agents).map((a) => a.agent_id.value);
    assert.deepEqual(snapshotIds(ops), ['A1', 'A2']);
    assert.deepEqual(snapshotIds(web), ['A1']);
    assert.deepEqual(snapshotIds(anon), []);
    for (const e of EVENTS) events.emit(e);
    // A2 leaves: AGENT_LEFT is sent once it is gone, and decided as it was (rack r2).
    w.agents.delete('A2');
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A2', reason: 'x' });
    w.agents.delete('A1');
    events.emit({ type: 'AGENT_GONE', agentId: 'A1', tasks: [] });
    events.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: 'rack-1' });
    events.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: 'both' });
    const all = [
      'AGENT_UPDATED A1', 'AGENT_UPDATED A2', 'MAINTENANCE_PLAN_ADDED rack-1', 'MAINTENANCE_PLAN_ADDED both', 'MACHINE_UPDATED h1+h2', 'MACHINE_UPDATED h2',
      'AGENT_LEFT A2', 'AGENT_LEFT A1', 'MAINTENANCE_PLAN_REMOVED rack-1', 'MAINTENANCE_PLAN_REMOVED both',
    ];
    await until(() => seen(ops.records).length === all.length, 'ops gets every event');
    assert.deepEqual(seen(ops.records), all);
    const mine = ['AGENT_UPDATED A1', 'MAINTENANCE_PLAN_ADDED rack-1', 'MACHINE_UPDATED h1', 'AGENT_LEFT A1', 'MAINTENANCE_PLAN_REMOVED rack-1'];
    await until(() => seen(web.records).length >= mine.length, 'the web team gets its events');
    assert.deepEqual(seen(web.records), mine);
    // The machine change carries the web team's status only (h1), ops' the whole of it.
    const machineUpdated = (s: { records: Array<Record<string, unknown>> }) => s.records.find((r) => r['type'] === 'MACHINE_UPDATED')?.['machine_updated'] as { change: string; status: { draining_machines: unknown[] } };
    assert.deepEqual(machineUpdated(web).status.draining_machines, [{ id: { hostname: 'h1' } }]);
    assert.equal(machineUpdated(ops).status.draining_machines.length, 2);
    assert.equal(machineUpdated(web).change, 'SCHEDULED');
    // The agent's machine: ops sees mode and window, the web team the mode only (no get_maintenance_schedules), `blind` neither.
    const machineOf = (s: { records: Array<Record<string, unknown>> }) => ((s.records.find((r) => r['type'] === 'AGENT_UPDATED')?.['agent_updated'] as { agent: { machine: Record<string, unknown> } }).agent.machine);
    assert.deepEqual(Object.keys(machineOf(ops)), ['id', 'mode', 'unavailability']);
    assert.deepEqual(Object.keys(machineOf(web)), ['id', 'mode']);
    await until(() => seen(blind.records).length >= 2, 'blind sees its agent come and go');
    assert.deepEqual(seen(blind.records), ['AGENT_UPDATED A1', 'AGENT_LEFT A1']);
    assert.deepEqual(Object.keys(machineOf(blind)), ['id']);
    // Deny by default: the anonymous subscriber gets heartbeats only.
    assert.deepEqual(seen(anon.records), []);
  });

  test("a failed hook's output in a plan step: shown to subscribers allowed run_maintenance_hooks on the hook, hidden from the others", async (t) => {
    const { events, open } = await setup(t, security(ACLS));
    const web = await open('web-team');
    const ops = await open('ops');
    await until(() => web.records.length === 2 && ops.records.length === 2, 'SNAPSHOT + HEARTBEAT each');
    const hidden = 'on_down of h1 failed with exit status 3 (attempt 1); output hidden (needs run_maintenance_hooks)';
    const shown = 'on_down of h1 failed with exit status 3 (attempt 1); last output: the secret';
    const step = { phase: 'all', name: 'h1', machine: { hostname: 'h1', ip: '10.0.0.1' }, stage: 'ERROR' as const, status: 'ERROR' as const, waitingFor: hidden };
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: 'patch', waitingFor: shown } } });
    // Another hook, which ops may not run; and an older master's command (no name): only an ANY grant reveals it.
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: 'reboot', waitingFor: shown } } });
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: undefined, waitingFor: shown } } });
    await until(() => web.records.length === 5 && ops.records.length === 5, 'three events each');
    const texts = (records: Array<Record<string, unknown>>): string[] => records.slice(2).map((r) => (r['maintenance_plan_updated'] as { step: { waiting_for: string } }).step.waiting_for);
    assert.deepEqual(texts(ops.records), [shown, hidden, hidden]);
    assert.deepEqual(texts(web.records), [hidden, hidden, hidden]);
    assert.ok(!JSON.stringify(web.records).includes('the secret'), 'nowhere in what the web team got');
  });

  test("without ACLs every subscriber gets every event, a failed hook's output included", async (t) => {
    const { events, open } = await setup(t, MasterSecurity.open());
    const a = await open('web-team');
    const b = await open();
    await until(() => a.records.length === 2 && b.records.length === 2, 'SNAPSHOT + HEARTBEAT each');
    for (const e of EVENTS) events.emit(e);
    events.emit({
      type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR',
      step: { phase: 'all', name: 'h1', machine: { hostname: 'h1', ip: '10.0.0.1' }, stage: 'ERROR', status: 'ERROR', waitingFor: 'x; output hidden (needs run_maintenance_hooks)', revealed: { hook: 'patch', waitingFor: 'x; last output: ok' } },
    });
    const want = ['AGENT_UPDATED A1', 'AGENT_UPDATED A2', 'MAINTENANCE_PLAN_ADDED rack-1', 'MAINTENANCE_PLAN_ADDED both', 'MACHINE_UPDATED h1+h2', 'MACHINE_UPDATED h2', 'MAINTENANCE_PLAN_UPDATED rack-1'];
    await until(() => seen(a.records).length === want.length && seen(b.records).length === want.length, 'every event to both');
    assert.deepEqual(seen(a.records), want);
    assert.deepEqual(seen(b.records), want);
    assert.equal((a.records.at(-1)?.['maintenance_plan_updated'] as { step: { waiting_for: string } }).step.waiting_for, 'x; last output: ok');
  });

  test('one heartbeat timer and one bus listener for all subscribers, both released by the last one out', async (t) => {
    const { events, clock, streams, open } = await setup(t, MasterSecurity.open());
    const before = events.listenerCount;
    const pendingBefore = clock.pending;
    const a = await open();
    const b = await open();
    await until(() => a.records.length === 2 && b.records.length === 2, 'SNAPSHOT + HEARTBEAT each');
    assert.equal(a.res.headers['content-type'], 'application/recordio');
    assert.equal(streams.count, 2);
    assert.equal(events.listenerCount, before + 1);
    assert.equal(clock.pending, pendingBefore + 1);
    clock.advance(15_000);
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A1', reason: 'x' });
    await until(() => a.records.length === 4 && b.records.length === 4, 'a heartbeat and one event each');
    assert.deepEqual(a.records.slice(2).map((r) => r['type']), ['HEARTBEAT', 'AGENT_LEFT']);
    a.res.destroy();
    b.res.destroy();
    await until(() => streams.count === 0, 'both forgotten');
    assert.equal(events.listenerCount, before);
    assert.equal(clock.pending, pendingBefore);
  });

  test('a subscriber that stops reading is closed once its unsent data passes the bound', async (t) => {
    const { events, streams, open } = await setup(t, MasterSecurity.open(), { maxBufferedBytes: 256 * 1024 });
    const slow = await open();
    await until(() => slow.records.length === 2, 'subscribed');
    slow.res.pause();
    const big = 'x'.repeat(64 * 1024);
    for (let i = 0; i < 2000 && streams.count > 0; i++) events.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: big });
    assert.equal(streams.count, 0, 'the slow subscriber was dropped');
    assert.equal(events.listenerCount, 0);
  });

  test('past maxSubscribers the oldest ends; close() ends the rest and refuses new ones with 503', async (t) => {
    const { streams, open } = await setup(t, MasterSecurity.open(), { maxSubscribers: 1 });
    const a = await open();
    const aEnded = new Promise<void>((r) => a.res.on('end', r));
    const b = await open();
    await aEnded;
    assert.equal(streams.count, 1);
    const bEnded = new Promise<void>((r) => b.res.on('end', r));
    streams.close();
    await bEnded;
    assert.equal(streams.count, 0);
    const c = await open();
    assert.equal(c.res.statusCode, 503);
  });
});

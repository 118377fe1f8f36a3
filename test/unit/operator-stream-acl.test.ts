/**
 * The operator event stream under view ACLs: which ACL decides each master event and on what
 * (`eventGate`, a table), and the shell on a loopback server: each subscriber gets only what its
 * principal may view, the snapshot is its own, an agent that leaves is decided as it was while
 * it was there, a maintenance plan by all of its machines, a machine change carries only the
 * subscriber's machines, a framework only the offers of agents the subscriber may view; without
 * ACLs every subscriber gets every event.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, request, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { ManualClock } from '../../shared/clock.js';
import { Logger } from '../../shared/log.js';
import type { MachineId } from '../../shared/machine.js';
import type { Task } from '../../shared/mesos.js';
import { RecordReader } from '../../shared/recordio.js';
import { MasterEvents, type MasterEvent } from '../../master/events.js';
import { Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import { Access, MasterSecurity } from '../../master/security.js';
import { eventGate, OperatorStreams, type EventGate, type StreamObjects, type StreamView } from '../../master/operator-stream.js';

const task = (id: string, fw: string): Task => ({ name: id, task_id: { value: id }, framework_id: { value: fw }, agent_id: { value: 'A1' }, state: 'TASK_STAGING', resources: [], statuses: [] });

/** Agents A1 (rack r1) and A2 (rack r2); frameworks fw-web (user web) and fw-batch (user batch); tasks t-web, t-batch, t-own (own user web in fw-batch). */
function world() {
  const agents = new Map<string, MachineObject>([
    ['A1', { agentId: 'A1', hostname: 'h1', ip: '10.0.0.1', attributes: { rack: 'r1' } }],
    ['A2', { agentId: 'A2', hostname: 'h2', ip: '10.0.0.2', attributes: { rack: 'r2' } }],
  ]);
  const tasks = new Map<string, Task>([
    ['t-web', task('t-web', 'fw-web')],
    ['t-batch', task('t-batch', 'fw-batch')],
    ['t-own', { ...task('t-own', 'fw-batch'), user: 'web' }],
  ]);
  const users: Record<string, string> = { 'fw-web': 'web', 'fw-batch': 'batch' };
  const machines: Record<string, MachineObject> = { h1: { hostname: 'h1', attributes: { rack: 'r1' } }, h2: { hostname: 'h2', attributes: { rack: 'r2' } } };
  const plans: Record<string, string[]> = { 'rack-1': ['h1'], both: ['h1', 'h2'] };
  const objects: StreamObjects = {
    taskUser: (_a, f, t) => tasks.get(t)?.user ?? users[f],
    frameworkUser: (f) => users[f],
    agent: (a) => agents.get(a),
    agents: () => agents.entries(),
    machine: (k) => machines[k],
    planMachines: (p) => plans[p]?.map((k) => machines[k] as MachineObject),
  };
  const view: StreamView = {
    task: (_a, _f, t) => tasks.get(t),
    agent: (a) => (agents.has(a) ? { agent_info: { id: { value: a } } } : undefined),
    // Each framework holds an offer on A1 and one on A2 (as GET_FRAMEWORKS, only those of agents `mayViewAgent` allows).
    framework: (f, mayViewAgent) =>
      f in users ? { framework_info: { id: { value: f }, user: users[f] }, offers: ['A1', 'A2'].filter((a) => mayViewAgent === undefined || mayViewAgent(agents.get(a))).map((a) => ({ agent_id: { value: a } })) } : undefined,
    frameworkInfo: (f) => (f in users ? { id: { value: f }, user: users[f] } : undefined),
    maintenanceStatus: (visible?: (id: MachineId) => boolean) => ({ draining_machines: ['h1', 'h2'].filter((h) => visible === undefined || visible({ hostname: h, ip: '' })).map((h) => ({ id: { hostname: h } })) }),
    machineIds: (keys) => keys.map((k) => ({ hostname: k })),
  };
  return { agents, objects, view };
}

describe('eventGate', () => {
  const { objects } = world();
  const cases: Array<[string, MasterEvent, EventGate]> = [
    ['TASK_ADDED: view_tasks on the framework\'s user', { type: 'TASK_ADDED', agentId: 'A1', frameworkId: 'fw-web', taskId: 't-web' }, { kind: 'OBJECT', action: 'view_tasks', object: 'web' }],
    ['TASK_UPDATED: view_tasks on the task\'s own user', { type: 'TASK_UPDATED', agentId: 'A1', frameworkId: 'fw-batch', taskId: 't-own', status: { task_id: { value: 't-own' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1 }, state: 'TASK_RUNNING' }, { kind: 'OBJECT', action: 'view_tasks', object: 'web' }],
    ['FRAMEWORK_ADDED: view_frameworks on its user', { type: 'FRAMEWORK_ADDED', frameworkId: 'fw-batch' }, { kind: 'OBJECT', action: 'view_frameworks', object: 'batch' }],
    ['FRAMEWORK_REMOVED of a forgotten framework: an unknown object', { type: 'FRAMEWORK_REMOVED', frameworkId: 'gone' }, { kind: 'OBJECT', action: 'view_frameworks', object: undefined }],
    ['AGENT_ADDED: view_agents on the agent', { type: 'AGENT_ADDED', agentId: 'A2' }, { kind: 'OBJECT', action: 'view_agents', object: { agentId: 'A2', hostname: 'h2', ip: '10.0.0.2', attributes: { rack: 'r2' } } }],
    ['AGENT_REMOVED of an agent nobody remembers: its id alone', { type: 'AGENT_REMOVED', agentId: 'Z', reason: 'x' }, { kind: 'OBJECT', action: 'view_agents', object: { agentId: 'Z' } }],
    ['AGENT_UPDATED: view_agents', { type: 'AGENT_UPDATED', agentId: 'A1', change: 'DRAINING' }, { kind: 'OBJECT', action: 'view_agents', object: { agentId: 'A1', hostname: 'h1', ip: '10.0.0.1', attributes: { rack: 'r1' } } }],
    ['MACHINE_UPDATED: per subscriber, by its machines', { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h1'], agentIds: [] }, { kind: 'MACHINES', machineKeys: ['h1'] }],
    ['MAINTENANCE_PLAN_UPDATED: the plan', { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'both', status: 'IN_PROGRESS' }, { kind: 'PLAN', plan: 'both' }],
    ['a disconnect never reaches the wire', { type: 'AGENT_DISCONNECTED', agentId: 'A1' }, { kind: 'OPEN' }],
  ];
  for (const [name, event, want] of cases) test(name, () => assert.deepEqual(eventGate(event, objects), want));
});

describe('OperatorStreams with view ACLs (shell)', () => {
  const ACLS = {
    permissive: false,
    view_tasks: [{ principals: { values: ['web-team'] }, users: { values: ['web'] } }, { principals: { values: ['ops'] }, users: { type: 'ANY' } }],
    view_frameworks: [{ principals: { values: ['web-team'] }, users: { values: ['web'] } }, { principals: { values: ['ops'] }, users: { type: 'ANY' } }],
    view_agents: [{ principals: { values: ['web-team'] }, agents: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
    view_maintenance_plans: [{ principals: { values: ['web-team'] }, machines: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
    get_maintenance_statuses: [{ principals: { values: ['web-team'] }, machines: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
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
  async function setup(t: { after: (fn: () => void | Promise<void>) => void }, sec: MasterSecurity) {
    const w = world();
    const events = new MasterEvents();
    const streams = new OperatorStreams({
      events,
      view: w.view,
      objects: w.objects,
      machineObject: (id) => ({ hostname: id.hostname, attributes: { rack: id.hostname === 'h1' ? 'r1' : 'r2' } }),
      snapshot: (access) => ({ principal: access?.principal ?? null }),
      clock: new ManualClock(),
      logger: new Logger({ level: 'error' }),
      heartbeatIntervalMs: 15_000,
      maxSubscribers: 100,
    });
    const server: Server = createServer((req, res) => {
      req.resume();
      const p = req.headers['x-principal'];
      streams.subscribe(res, new Access(sec, typeof p === 'string' ? p : undefined));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    t.after(async () => {
      streams.close();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    });
    const port = (server.address() as AddressInfo).port;
    const open = (principal: string | undefined): Promise<{ res: IncomingMessage; records: Array<Record<string, unknown>> }> =>
      new Promise((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port, method: 'POST', headers: principal === undefined ? {} : { 'x-principal': principal } }, (res) => {
          const reader = new RecordReader();
          const records: Array<Record<string, unknown>> = [];
          res.on('data', (c: Buffer) => records.push(...reader.push(c).map((r) => JSON.parse(r) as Record<string, unknown>)));
          res.on('error', () => {});
          resolve({ res, records });
        });
        req.on('error', reject);
        req.end();
      });
    return { w, events, streams, open };
  }

  // Bounded by the tests' one guard, EVENT_DEADLINE_MS (30 s; not imported here, to leave this
  // file's import lines to the master's move): a passing check returns at once.
  const until = async (check: () => boolean, what: string): Promise<void> => {
    for (let i = 0; i < 3_000 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
    assert.ok(check(), what);
  };

  /** The events after SUBSCRIBED and the first HEARTBEAT, as `TYPE id`. */
  const seen = (records: Array<Record<string, unknown>>): string[] =>
    records.slice(2).map((r) => {
      const type = r['type'] as string;
      const body = r[type.toLowerCase()] as Record<string, unknown>;
      const id =
        (body['task'] as { task_id?: { value: string } } | undefined)?.task_id?.value ??
        (body['framework'] as { framework_info?: { id: { value: string } } } | undefined)?.framework_info?.id.value ??
        (body['agent'] as { agent_info?: { id: { value: string } } } | undefined)?.agent_info?.id.value ??
        (body['agent_id'] as { value: string } | undefined)?.value ??
        (body['name'] as string | undefined) ??
        ((body['machine_ids'] as Array<{ hostname: string }> | undefined)?.map((m) => m.hostname).join('+') ?? '');
      return `${type} ${id}`;
    });

  const EVENTS: MasterEvent[] = [
    { type: 'TASK_ADDED', agentId: 'A1', frameworkId: 'fw-web', taskId: 't-web' },
    { type: 'TASK_ADDED', agentId: 'A1', frameworkId: 'fw-batch', taskId: 't-batch' },
    { type: 'TASK_ADDED', agentId: 'A1', frameworkId: 'fw-batch', taskId: 't-own' },
    { type: 'FRAMEWORK_ADDED', frameworkId: 'fw-web' },
    { type: 'FRAMEWORK_UPDATED', frameworkId: 'fw-batch' },
    { type: 'AGENT_ADDED', agentId: 'A1' },
    { type: 'AGENT_ADDED', agentId: 'A2' },
    { type: 'MAINTENANCE_PLAN_ADDED', plan: 'rack-1', status: 'PENDING', machines: 1 },
    { type: 'MAINTENANCE_PLAN_ADDED', plan: 'both', status: 'PENDING', machines: 2 },
    { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h1', 'h2'], agentIds: [] },
    { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h2'], agentIds: [] },
  ];

  test('each subscriber gets what its principal may view, and its own snapshot', async (t) => {
    const { w, events, open } = await setup(t, security(ACLS));
    const web = await open('web-team');
    const ops = await open('ops');
    const anon = await open(undefined);
    await until(() => web.records.length === 2 && ops.records.length === 2 && anon.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    assert.deepEqual((web.records[0]?.['subscribed'] as { get_state: unknown }).get_state, { principal: 'web-team' });
    assert.deepEqual((anon.records[0]?.['subscribed'] as { get_state: unknown }).get_state, { principal: null });
    for (const e of EVENTS) events.emit(e);
    // A2 leaves: AGENT_REMOVED is sent once it is gone, and decided as it was (rack r2).
    w.agents.delete('A2');
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A2', reason: 'x' });
    w.agents.delete('A1');
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A1', reason: 'x' });
    events.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: 'rack-1' });
    events.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: 'both' });
    const all = [
      'TASK_ADDED t-web', 'TASK_ADDED t-batch', 'TASK_ADDED t-own', 'FRAMEWORK_ADDED fw-web', 'FRAMEWORK_UPDATED fw-batch', 'AGENT_ADDED A1', 'AGENT_ADDED A2',
      'MAINTENANCE_PLAN_ADDED rack-1', 'MAINTENANCE_PLAN_ADDED both', 'MACHINE_UPDATED h1+h2', 'MACHINE_UPDATED h2', 'AGENT_REMOVED A2', 'AGENT_REMOVED A1',
      'MAINTENANCE_PLAN_REMOVED rack-1', 'MAINTENANCE_PLAN_REMOVED both',
    ];
    await until(() => seen(ops.records).length === all.length, 'ops gets every event');
    assert.deepEqual(seen(ops.records), all);
    const mine = ['TASK_ADDED t-web', 'TASK_ADDED t-own', 'FRAMEWORK_ADDED fw-web', 'AGENT_ADDED A1', 'MAINTENANCE_PLAN_ADDED rack-1', 'MACHINE_UPDATED h1', 'AGENT_REMOVED A1', 'MAINTENANCE_PLAN_REMOVED rack-1'];
    await until(() => seen(web.records).length >= mine.length, 'the web team gets its events');
    assert.deepEqual(seen(web.records), mine);
    // The machine change carries the web team's status only (h1), ops' the whole of it.
    const webMachine = web.records.find((r) => r['type'] === 'MACHINE_UPDATED')?.['machine_updated'] as { status: { draining_machines: unknown[] } };
    assert.deepEqual(webMachine.status.draining_machines, [{ id: { hostname: 'h1' } }]);
    const opsMachine = ops.records.find((r) => r['type'] === 'MACHINE_UPDATED')?.['machine_updated'] as { status: { draining_machines: unknown[] } };
    assert.equal(opsMachine.status.draining_machines.length, 2);
    // Deny by default: the anonymous subscriber gets heartbeats only.
    assert.deepEqual(seen(anon.records), []);
  });

  test('a framework event carries only the offers of agents the subscriber may view', async (t) => {
    const { events, open } = await setup(t, security(ACLS));
    const web = await open('web-team');
    const ops = await open('ops');
    await until(() => web.records.length === 2 && ops.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    events.emit({ type: 'FRAMEWORK_ADDED', frameworkId: 'fw-web' });
    events.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: 'fw-web' });
    await until(() => web.records.length === 4 && ops.records.length === 4, 'both framework events to each');
    const offers = (records: Array<Record<string, unknown>>): string[][] =>
      records.slice(2).map((r) => ((r[(r['type'] as string).toLowerCase()] as { framework: { offers: Array<{ agent_id: { value: string } }> } }).framework.offers.map((o) => o.agent_id.value)));
    assert.deepEqual(offers(web.records), [['A1'], ['A1']], 'the web team views rack r1 only: not the offer on A2');
    assert.deepEqual(offers(ops.records), [['A1', 'A2'], ['A1', 'A2']]);
  });

  test('a failed hook\'s output in a plan step: shown to subscribers allowed run_maintenance_hooks on the hook, hidden from the others', async (t) => {
    const acls = { ...ACLS, run_maintenance_hooks: [{ principals: { values: ['ops'] }, hooks: { values: ['patch'] } }] };
    const { events, open } = await setup(t, security(acls));
    const web = await open('web-team');
    const ops = await open('ops');
    await until(() => web.records.length === 2 && ops.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    const hidden = 'on_down of h1 failed with exit status 3 (attempt 1); output hidden (needs run_maintenance_hooks)';
    const shown = 'on_down of h1 failed with exit status 3 (attempt 1); last output: the secret';
    const step = { phase: 'all', name: 'h1', machine: { hostname: 'h1', ip: '10.0.0.1' }, stage: 'ERROR' as const, status: 'ERROR' as const, waitingFor: hidden };
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: 'patch', waitingFor: shown } } });
    // Another hook, which ops may not run; and an older master's command (no name): only an ANY grant reveals it.
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: 'reboot', waitingFor: shown } } });
    events.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR', step: { ...step, revealed: { hook: undefined, waitingFor: shown } } });
    await until(() => web.records.length === 5 && ops.records.length === 5, 'three events each');
    const texts = (records: Array<Record<string, unknown>>): string[] =>
      records.slice(2).map((r) => (r['maintenance_plan_updated'] as { step: { waiting_for: string } }).step.waiting_for);
    assert.deepEqual(texts(ops.records), [shown, hidden, hidden]);
    assert.deepEqual(texts(web.records), [hidden, hidden, hidden]);
    assert.ok(!JSON.stringify(web.records).includes('the secret'), 'nowhere in what the web team got');
  });

  test('without ACLs a failed hook\'s output is shown (anyone may run hooks on an open master)', async (t) => {
    const { events, open } = await setup(t, MasterSecurity.open());
    const a = await open(undefined);
    await until(() => a.records.length === 2, 'SUBSCRIBED + HEARTBEAT');
    events.emit({
      type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'ERROR',
      step: { phase: 'all', name: 'h1', machine: { hostname: 'h1', ip: '10.0.0.1' }, stage: 'ERROR', status: 'ERROR', waitingFor: 'x; output hidden (needs run_maintenance_hooks)', revealed: { hook: 'patch', waitingFor: 'x; last output: ok' } },
    });
    await until(() => a.records.length === 3, 'the event');
    assert.equal((a.records[2]?.['maintenance_plan_updated'] as { step: { waiting_for: string } }).step.waiting_for, 'x; last output: ok');
  });

  test('without ACLs every subscriber gets every event, rendered once', async (t) => {
    const { events, open } = await setup(t, MasterSecurity.open());
    const a = await open('web-team');
    const b = await open(undefined);
    await until(() => a.records.length === 2 && b.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    for (const e of EVENTS) events.emit(e);
    await until(() => seen(a.records).length === EVENTS.length && seen(b.records).length === EVENTS.length, 'every event to both');
    assert.deepEqual(seen(a.records), seen(b.records));
    assert.ok(seen(a.records).includes('MACHINE_UPDATED h1+h2'));
    const added = a.records.find((r) => r['type'] === 'FRAMEWORK_ADDED')?.['framework_added'] as { framework: { offers: unknown[] } };
    assert.equal(added.framework.offers.length, 2, 'every offer');
  });
});

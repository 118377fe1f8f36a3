/**
 * The operator event stream under view ACLs: which ACL decides each master event and on what
 * (`eventGate`, a table), and the shell on a loopback server: each subscriber gets only what its
 * principal may view, the snapshot is its own, an agent that leaves is decided as it was while
 * it was there, a framework carries only the offers of agents the subscriber may view; Drydock's
 * own events never reach this stream (test/unit/drydock-stream.test.ts has them); without ACLs
 * every subscriber gets every event.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { Logger } from '../../shared/log.js';
import type { Task } from '../../shared/mesos.js';
import { MasterEvents, type MasterEvent } from '../../master/term/events.js';
import { Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import { eventGate, OperatorStreams, type EventGate, type StreamObjects, type StreamView } from '../../master/api/operator-stream.js';
import { serveStreams, until } from '../helpers/stream-server.js';

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
  const objects: StreamObjects = {
    taskUser: (_a, f, t) => tasks.get(t)?.user ?? users[f],
    frameworkUser: (f) => users[f],
    agent: (a) => agents.get(a),
    agents: () => agents.entries(),
  };
  const view: StreamView = {
    task: (_a, _f, t) => tasks.get(t),
    agent: (a) => (agents.has(a) ? { agent_info: { id: { value: a } } } : undefined),
    // Each framework holds an offer on A1 and one on A2 (as GET_FRAMEWORKS, only those of agents `mayViewAgent` allows).
    framework: (f, mayViewAgent) =>
      f in users ? { framework_info: { id: { value: f }, user: users[f] }, offers: ['A1', 'A2'].filter((a) => mayViewAgent === undefined || mayViewAgent(agents.get(a))).map((a) => ({ agent_id: { value: a } })) } : undefined,
    frameworkInfo: (f) => (f in users ? { id: { value: f }, user: users[f] } : undefined),
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
    ['a disconnect never reaches the wire', { type: 'AGENT_DISCONNECTED', agentId: 'A1' }, { kind: 'OPEN' }],
    // Drydock's own events are on Drydock's stream: nothing to decide here.
    ['AGENT_UPDATED: not on this stream', { type: 'AGENT_UPDATED', agentId: 'A1', change: 'DRAINING' }, { kind: 'OPEN' }],
    ['MACHINE_UPDATED: not on this stream', { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h1'], agentIds: [] }, { kind: 'OPEN' }],
    ['MAINTENANCE_PLAN_UPDATED: not on this stream', { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'both', status: 'IN_PROGRESS' }, { kind: 'OPEN' }],
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
      snapshot: (access) => ({ principal: access?.principal ?? null }),
      clock: new ManualClock(),
      logger: new Logger({ level: 'error' }),
      heartbeatIntervalMs: 15_000,
      maxSubscribers: 100,
    });
    const open = await serveStreams(t, (res, principal) => streams.subscribe(res, new Access(sec, principal)), () => streams.close(), 'POST', (r) => JSON.parse(r) as Record<string, unknown>);
    return { w, events, streams, open };
  }

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
        '';
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
  ];

  /** Drydock's own events: none of them is a record of Mesos' stream, whoever subscribes. */
  const DRYDOCK_EVENTS: MasterEvent[] = [
    { type: 'AGENT_UPDATED', agentId: 'A1', change: 'DRAINING' },
    { type: 'MAINTENANCE_PLAN_ADDED', plan: 'rack-1', status: 'PENDING', machines: 1 },
    { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['h1', 'h2'], agentIds: [] },
    { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'rack-1', status: 'IN_PROGRESS' },
    { type: 'MAINTENANCE_PLAN_REMOVED', plan: 'rack-1' },
  ];

  test('each subscriber gets what its principal may view, and its own snapshot', async (t) => {
    const { w, events, open } = await setup(t, security(ACLS));
    const web = await open('web-team');
    const ops = await open('ops');
    const anon = await open(undefined);
    await until(() => web.records.length === 2 && ops.records.length === 2 && anon.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    assert.deepEqual((web.records[0]?.['subscribed'] as { get_state: unknown }).get_state, { principal: 'web-team' });
    assert.deepEqual((anon.records[0]?.['subscribed'] as { get_state: unknown }).get_state, { principal: null });
    for (const e of [...EVENTS, ...DRYDOCK_EVENTS]) events.emit(e);
    // A2 leaves: AGENT_REMOVED is sent once it is gone, and decided as it was (rack r2).
    w.agents.delete('A2');
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A2', reason: 'x' });
    w.agents.delete('A1');
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A1', reason: 'x' });
    const all = [
      'TASK_ADDED t-web', 'TASK_ADDED t-batch', 'TASK_ADDED t-own', 'FRAMEWORK_ADDED fw-web', 'FRAMEWORK_UPDATED fw-batch', 'AGENT_ADDED A1', 'AGENT_ADDED A2',
      'AGENT_REMOVED A2', 'AGENT_REMOVED A1',
    ];
    await until(() => seen(ops.records).length === all.length, 'ops gets every event');
    assert.deepEqual(seen(ops.records), all);
    const mine = ['TASK_ADDED t-web', 'TASK_ADDED t-own', 'FRAMEWORK_ADDED fw-web', 'AGENT_ADDED A1', 'AGENT_REMOVED A1'];
    await until(() => seen(web.records).length >= mine.length, 'the web team gets its events');
    assert.deepEqual(seen(web.records), mine);
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

  test('without ACLs every subscriber gets every event, rendered once', async (t) => {
    const { events, open } = await setup(t, MasterSecurity.open());
    const a = await open('web-team');
    const b = await open(undefined);
    await until(() => a.records.length === 2 && b.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    for (const e of [...DRYDOCK_EVENTS, ...EVENTS]) events.emit(e);
    await until(() => seen(a.records).length === EVENTS.length && seen(b.records).length === EVENTS.length, 'every event to both');
    assert.deepEqual(seen(a.records), seen(b.records));
    assert.deepEqual(seen(a.records).filter((x) => /^(AGENT_UPDATED|MACHINE_UPDATED|MAINTENANCE_PLAN_)/.test(x)), [], "none of Drydock's own events");
    const added = a.records.find((r) => r['type'] === 'FRAMEWORK_ADDED')?.['framework_added'] as { framework: { offers: unknown[] } };
    assert.equal(added.framework.offers.length, 2, 'every offer');
  });
});

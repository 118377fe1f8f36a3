/**
 * The web console's pure modules (console/*.js, plain ES modules the browser loads as they are):
 * the RecordIO decoder against chunks cut anywhere, and the model's two reducers against tables
 * of the master's events: Mesos' operator stream (agents, frameworks, tasks) and Drydock's own
 * (each agent's state and drain record, machines, plans).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
// @ts-expect-error plain JS module without types (the console has no build step)
import { RecordIODecoder, encodeRecord, MAX_RECORD_BYTES } from '../../console/recordio.js';
// @ts-expect-error plain JS module without types
import { agentCounts, agentDrain, agentMode, agentState, applyDrydockEvent, applyEvent, drydockAgent, emptyModel, machineCounts, machines, serviceUrl, setPlanDetail, MAX_COMPLETED_TASKS } from '../../console/model.js';

const bytes = (s: string): Uint8Array => new TextEncoder().encode(s);

test('RecordIO: records come out whole however the bytes are cut (multi-byte characters included)', () => {
  const records = ['{"type":"HEARTBEAT"}', '{"name":"δοκιμή ✓"}', '{}', 'x'.repeat(300)];
  const wire = new Uint8Array(records.reduce((n, r) => n + encodeRecord(r).length, 0));
  let at = 0;
  for (const r of records) {
    const e = encodeRecord(r);
    wire.set(e, at);
    at += e.length;
  }
  for (const size of [1, 2, 3, 5, 7, 64, wire.length]) {
    const d = new RecordIODecoder();
    const out: string[] = [];
    for (let i = 0; i < wire.length; i += size) out.push(...d.push(wire.subarray(i, i + size)));
    assert.deepEqual(out, records, `chunks of ${size}`);
    assert.equal(d.pendingBytes, 0);
  }
});

test('RecordIO: bytes that are not RecordIO throw an error that says what is wrong', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['a letter in the length', '1a\n{}', /bad record length '1a'/],
    ['an empty length', '\n{}', /bad record length ''/],
    ['a length with no newline', '12345678901', /no newline after the record length/],
    ['a record over the limit', `${MAX_RECORD_BYTES + 1}\n`, /over the .* limit/],
  ];
  for (const [name, text, re] of cases) assert.throws(() => new RecordIODecoder().push(bytes(text)), re, name);
  // A partial record is kept, not an error.
  const d = new RecordIODecoder();
  assert.deepEqual(d.push(bytes('8\n{"a"')), []);
  assert.deepEqual(d.push(bytes(':12}')), ['{"a":12}']);
});

const agent = (id: string, hostname: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  agent_info: { id: { value: id }, hostname, port: 5051 },
  pid: `slave(1)@10.0.0.${id.slice(-1)}:5051`,
  active: true,
  deactivated: false,
  ...extra,
});
/** An agent as Drydock's own API writes it. */
const view = (id: string, hostname: string, state: string, extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  agent_id: { value: id },
  hostname,
  phase: 'REGISTERED',
  state,
  deactivated: false,
  machine: { id: { hostname }, mode: 'UP' },
  conditions: [],
  ...extra,
});
const task = (fw: string, id: string, state: string, agentId = 'a1'): Record<string, unknown> => ({ framework_id: { value: fw }, task_id: { value: id }, agent_id: { value: agentId }, name: id, state, statuses: [] });
const subscribed = {
  type: 'SUBSCRIBED',
  subscribed: {
    heartbeat_interval_seconds: 5,
    get_state: {
      get_agents: { agents: [agent('a1', 'h1'), agent('a2', 'h2', { active: false })], recovered_agents: [{ id: { value: 'a3' }, hostname: 'h3' }] },
      get_frameworks: { frameworks: [{ framework_info: { id: { value: 'f1' }, name: 'svc', webui_url: 'http://10.0.0.9:8088/' }, active: true }], completed_frameworks: [] },
      get_tasks: { tasks: [task('f1', 't1', 'TASK_RUNNING')], completed_tasks: [task('f1', 't0', 'TASK_FINISHED')], unreachable_tasks: [] },
      get_executors: { executors: [] },
    },
  },
};

test('the reducers: a table of events of both streams and what the model says after each', () => {
  const m = emptyModel();
  const mesos = applyEvent;
  const drydock = applyDrydockEvent;
  const a1 = (x: any) => agentState(x.agents.get('a1'), drydockAgent(x, x.agents.get('a1')));
  const steps: Array<[string, typeof applyEvent, unknown, (m: any) => unknown, unknown, unknown[]]> = [
    ['SUBSCRIBED loads the snapshot and asks for the rest', mesos, subscribed, (x) => [x.agents.size, x.recoveredAgents.length, x.frameworks.size, x.tasks.size, x.heartbeatIntervalSeconds], [2, 1, 1, 2, 5], [{ kind: 'INITIAL' }]],
    ["agent states from GET_AGENTS' fields while Drydock's view is not there yet", mesos, { type: 'HEARTBEAT' }, (x) => agentCounts(x), { ACTIVE: 1, DRAINING: 0, DRAINED: 0, DEACTIVATED: 0, DISCONNECTED: 1, RECOVERED: 1, UNREACHABLE: 0 }, []],
    ["Drydock's SNAPSHOT: each agent's view, and the maintenance reads", drydock, { type: 'SNAPSHOT', snapshot: { agents: [view('a1', 'h1', 'ACTIVE'), view('a2', 'h2', 'DISCONNECTED'), view('a9', 'h9', 'UNREACHABLE', { phase: 'UNREACHABLE' })], heartbeat_interval_seconds: 5 } }, (x) => [x.drydockAgents.size, x.drydockSubscribed], [3, true], [{ kind: 'MAINTENANCE' }]],
    ['agent states: unreachable ones are counted from Drydock\'s view', drydock, { type: 'HEARTBEAT' }, (x) => agentCounts(x), { ACTIVE: 1, DRAINING: 0, DRAINED: 0, DEACTIVATED: 0, DISCONNECTED: 1, RECOVERED: 1, UNREACHABLE: 1 }, []],
    ['AGENT_UPDATED with a drain: the state and the drain record', drydock, { type: 'AGENT_UPDATED', agent_updated: { change: 'DRAINING', agent: view('a1', 'h1', 'DRAINING', { deactivated: true, drain: { state: 'DRAINING', waiting_for: [{ kind: 'TASK_RUNNING', message: 'task t1 still running' }] } }) } }, (x) => [a1(x), agentDrain(x.agents.get('a1'), drydockAgent(x, x.agents.get('a1'))).waiting_for.length], ['DRAINING', 1], []],
    ['AGENT_UPDATED to DRAINED (GET_AGENTS\' own copy is not what the page shows)', drydock, { type: 'AGENT_UPDATED', agent_updated: { change: 'DRAINED', agent: view('a1', 'h1', 'DRAINED', { deactivated: true, drain: { state: 'DRAINED', waiting_for: [] } }) } }, (x) => [a1(x), x.agents.get('a1').drain_info], ['DRAINED', undefined], []],
    ['AGENT_ADDED of a recovered agent takes it off the recovered list', mesos, { type: 'AGENT_ADDED', agent_added: { agent: agent('a3', 'h3') } }, (x) => [x.agents.size, x.recoveredAgents.length], [3, 0], []],
    ['AGENT_REMOVED', mesos, { type: 'AGENT_REMOVED', agent_removed: { agent_id: { value: 'a2' } } }, (x) => [...x.agents.keys()].sort(), ['a1', 'a3'], []],
    ['AGENT_LEFT forgets Drydock\'s view', drydock, { type: 'AGENT_LEFT', agent_left: { agent_id: { value: 'a2' }, reason: 'REMOVED', message: 'x' } }, (x) => [...x.drydockAgents.keys()].sort(), ['a1', 'a9'], []],
    ["Drydock's events are not Mesos': the operator stream's reducer ignores them", mesos, { type: 'AGENT_UPDATED', agent_updated: { change: 'REACTIVATED', agent: view('a1', 'h1', 'ACTIVE') } }, a1, 'DRAINED', []],
    ['TASK_ADDED', mesos, { type: 'TASK_ADDED', task_added: { task: task('f1', 't2', 'TASK_STAGING') } }, (x) => x.tasks.get('f1/t2').state, 'TASK_STAGING', []],
    ['TASK_UPDATED', mesos, { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'f1' }, state: 'TASK_KILLED', status: { task_id: { value: 't1' }, state: 'TASK_KILLED' } } }, (x) => [x.tasks.get('f1/t1').state, [...x.tasks.keys()].at(-1)], ['TASK_KILLED', 'f1/t1'], []],
    ['TASK_UPDATED of a task never seen', mesos, { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'f1' }, state: 'TASK_RUNNING', status: { task_id: { value: 't9' }, agent_id: { value: 'a3' }, state: 'TASK_RUNNING' } } }, (x) => [x.tasks.get('f1/t9').state, x.tasks.get('f1/t9').agent_id.value], ['TASK_RUNNING', 'a3'], []],
    ['FRAMEWORK_ADDED', mesos, { type: 'FRAMEWORK_ADDED', framework_added: { framework: { framework_info: { id: { value: 'f2' }, name: 'other' }, active: true } } }, (x) => x.frameworks.size, 2, []],
    ['FRAMEWORK_REMOVED keeps it as completed', mesos, { type: 'FRAMEWORK_REMOVED', framework_removed: { framework_info: { id: { value: 'f2' }, name: 'other' } } }, (x) => [x.frameworks.get('f2').removed, x.frameworks.get('f2').framework.active], [true, false], []],
    ['MACHINE_UPDATED replaces the status and asks for the schedule', drydock, { type: 'MACHINE_UPDATED', machine_updated: { machine_ids: [{ hostname: 'h1' }], status: { down_machines: [{ hostname: 'h1', ip: '10.0.0.1' }] } } }, (x) => agentMode(x, x.agents.get('a1')), 'DOWN', [{ kind: 'SCHEDULE' }]],
    ['MAINTENANCE_PLAN_ADDED asks for its phases', drydock, { type: 'MAINTENANCE_PLAN_ADDED', maintenance_plan_added: { name: 'p', status: 'PENDING', machines: 2 } }, (x) => [x.plans.get('p').status, x.plans.get('p').machines], ['PENDING', 2], [{ kind: 'PLAN', name: 'p' }]],
    ['MAINTENANCE_PLAN_UPDATED without detail yet', drydock, { type: 'MAINTENANCE_PLAN_UPDATED', maintenance_plan_updated: { name: 'p', status: 'IN_PROGRESS' } }, (x) => x.plans.get('p').status, 'IN_PROGRESS', [{ kind: 'PLAN', name: 'p' }]],
    ['an unknown event changes nothing', mesos, { type: 'SOMETHING_NEW' }, (x) => x.plans.size, 1, []],
    ['nor on Drydock\'s stream', drydock, { type: 'SOMETHING_NEW' }, (x) => x.plans.size, 1, []],
  ];
  for (const [name, apply, event, read, want, effects] of steps) {
    const got = apply(m, event, 1000);
    assert.deepEqual(got, effects, `${name}: effects`);
    assert.deepEqual(read(m), want, name);
  }
});

test('the reducer: a plan step event updates the fetched tree in place; a removed plan is gone', () => {
  const m = emptyModel();
  setPlanDetail(m, 'p', { status: 'IN_PROGRESS', phases: [{ name: 'r1', status: 'IN_PROGRESS', steps: [{ name: 'h1', status: 'WAITING', message: '' }, { name: 'h2', status: 'PENDING', message: '' }] }] });
  applyDrydockEvent(m, { type: 'MAINTENANCE_PLAN_UPDATED', maintenance_plan_updated: { name: 'p', status: 'IN_PROGRESS', step: { phase: 'r1', name: 'h1', machine_id: { hostname: 'h1' }, stage: 'DRAINING', status: 'STARTING', waiting_for: 'agent h1 draining' } } });
  const step = m.plans.get('p').detail.phases[0].steps[0];
  assert.deepEqual([step.status, step.stage, step.waiting_for], ['STARTING', 'DRAINING', 'agent h1 draining']);
  assert.equal(m.plans.get('p').detail.phases[0].steps[1].status, 'PENDING');
  applyDrydockEvent(m, { type: 'MAINTENANCE_PLAN_REMOVED', maintenance_plan_removed: { name: 'p' } });
  assert.equal(m.plans.size, 0);
  setPlanDetail(m, 'q', { status: 'COMPLETE', phases: [] });
  setPlanDetail(m, 'q', undefined);
  assert.equal(m.plans.size, 0, 'a 404 on the plan forgets it');
});

test('machines: the schedule, the status and the agents make one row per machine', () => {
  const m = emptyModel();
  applyEvent(m, subscribed);
  const startNs = 1_700_000_000_000_000_000;
  m.schedule = { windows: [{ machine_ids: [{ hostname: 'H1', ip: '10.0.0.1' }, { hostname: 'spare' }], unavailability: { start: { nanoseconds: startNs }, duration: { nanoseconds: 3_600_000_000_000 } } }] };
  m.status = { draining_machines: [{ id: { hostname: 'H1', ip: '10.0.0.1' } }], down_machines: [{ hostname: 'spare' }] };
  const rows = machines(m);
  assert.deepEqual(rows.map((r: any) => [r.id.hostname, r.mode, r.agents.map((a: any) => a.agent_info.hostname), r.window?.endMs - r.window?.startMs]), [
    ['H1', 'DRAINING', ['h1'], 3_600_000],
    ['h2', 'UP', ['h2'], NaN],
    ['spare', 'DOWN', [], 3_600_000],
  ]);
  assert.deepEqual(machineCounts(m), { UP: 1, DRAINING: 1, DOWN: 1 });
});

test('completed tasks are capped; the newest stay', () => {
  const m = emptyModel();
  for (let i = 0; i < MAX_COMPLETED_TASKS + 10; i++) {
    applyEvent(m, { type: 'TASK_ADDED', task_added: { task: task('f', `t${i}`, 'TASK_RUNNING') } });
    applyEvent(m, { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'f' }, state: 'TASK_FINISHED', status: { task_id: { value: `t${i}` } } } });
  }
  assert.equal(m.tasks.size, MAX_COMPLETED_TASKS);
  assert.ok(m.tasks.has(`f/t${MAX_COMPLETED_TASKS + 9}`) && !m.tasks.has('f/t0'));
});

test('serviceUrl: only http(s) URLs, without a trailing slash', () => {
  const cases: Array<[unknown, string | undefined]> = [
    ['http://10.0.0.9:8088/', 'http://10.0.0.9:8088'],
    ['https://svc.example:443', 'https://svc.example:443'],
    ['javascript:alert(1)', undefined],
    [undefined, undefined],
    [42, undefined],
  ];
  for (const [url, want] of cases) assert.equal(serviceUrl({ framework: { framework_info: { webui_url: url } } }), want, String(url));
});

/**
 * `drydock status`'s pure core (cli/status.ts) and the live progress of the long commands
 * (terminal.ts progressBar / fitLine / LiveFrame, drain.ts drainFrame, plan.ts planProgress and
 * the bar on the --watch tree): tables of cases over plain data.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentState, clusterStatus, planStatus, renderStatus, type StatusInput } from '../../cli/status.js';
import { drainFrame, drainView, type AgentJson, type DrainRecordJson, type DrydockAgentJson } from '../../cli/drain.js';
import { planProgress, planPoll, watchStep, WATCH_START, type PlanView } from '../../cli/plan.js';
import { LiveFrame, ansiPaint, fitLine, plainPaint, progressBar, visibleText } from '../../cli/terminal.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const NS = (ms: number): bigint => BigInt(ms) * 1_000_000n;

function agent(id: string, hostname: string, ip: string, over: Partial<AgentJson> = {}): AgentJson {
  return { agent_info: { hostname, id: { value: id } }, active: true, deactivated: false, pid: `slave(1)@${ip}:5051`, ...over };
}

/** An agent as Drydock's own API writes it: its machine in `mode`, its drain record when given. */
function view(id: string, hostname: string, ip: string, state: string, mode = 'UP', drain?: DrainRecordJson): DrydockAgentJson {
  return { agent_id: { value: id }, hostname, ip, state, machine: { id: { hostname, ip }, mode }, ...(drain === undefined ? {} : { drain }) };
}

const step = (name: string, status: string, note?: string) => ({ id: `${name}-id`, name, status, message: `step ${name} [${name}-id] with status: ${status}${note === undefined ? '' : `: ${note}`}` });
const planOf = (status: string, steps: Array<ReturnType<typeof step>>): PlanView => ({ status, strategy: 'serial', errors: [], phases: [{ id: 'p', name: 'r1', strategy: 'serial', status, steps }] });

const BASE: StatusInput = {
  nowMs: NOW,
  master: { master_info: { id: 'M', hostname: 'm1', version: '1.12.0', address: { ip: '10.0.0.1', port: 5050 } }, elected_time: NOW / 1000 - 60, standby_masters: [{ address: { ip: '10.0.0.2', port: 5050 } }] },
  agents: [],
  recovered: [],
  drydockAgents: [],
  maintenance: {},
  schedule: {},
  snapshot: { 'master/slaves_unreachable': 1, 'drydock/agents_gone': 2 },
  maintenancePlans: { plans: [] },
};

test('agent state for the counts: drained, draining, deactivated, active, else disconnected', () => {
  const cases: Array<[Partial<AgentJson>, string]> = [
    [{}, 'active'],
    [{ active: false }, 'disconnected'],
    [{ active: false, deactivated: true }, 'deactivated'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINING' } }, 'draining'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINED' } }, 'drained'],
  ];
  for (const [over, want] of cases) assert.equal(agentState(agent('A', 'h', '1.1.1.1', over)), want, JSON.stringify(over));
});

test('status: counts, machines, drains oldest first, plans in progress, errors named', () => {
  const input: StatusInput = {
    ...BASE,
    agents: [
      agent('A-S1', 'a', '10.0.1.1'),
      agent('A-S2', 'b', '10.0.1.2', { active: false }),
      agent('A-S3', 'c', '10.0.1.3', { active: false, deactivated: true, drain_info: { state: 'DRAINING' } }),
      agent('A-S4', 'd', '10.0.1.4', { active: false, deactivated: true, drain_info: { state: 'DRAINED' } }),
    ],
    recovered: [{ hostname: 'e', id: { value: 'A-S5' } }],
    drydockAgents: [
      view('A-S1', 'a', '10.0.1.1', 'ACTIVE'),
      view('A-S2', 'b', '10.0.1.2', 'DISCONNECTED'),
      view('A-S3', 'c', '10.0.1.3', 'DRAINING', 'DRAINING', { state: 'DRAINING', started_time: { nanoseconds: NS(NOW - 5_000) }, remaining_tasks: 2, waiting_for: [{ message: 'task t1 still running after SIGTERM' }, 'task t2 too'] }),
      view('A-S4', 'd', '10.0.1.4', 'DRAINED', 'UP', { state: 'DRAINED', started_time: { nanoseconds: NS(NOW - 90_000) }, remaining_tasks: 0 }),
      view('A-S5', 'e', '10.0.1.5', 'RECOVERED'),
    ],
    maintenance: { draining_machines: [{ id: { hostname: 'c', ip: '10.0.1.3' } }], down_machines: [{ hostname: 'f', ip: '10.0.1.6' }] },
    schedule: { windows: [{ machine_ids: [{ hostname: 'c', ip: '10.0.1.3' }, { hostname: 'f', ip: '10.0.1.6' }, { hostname: 'g', ip: '10.0.1.7' }] }] },
    maintenancePlans: { plans: [
      { name: 'done', plan: planOf('COMPLETE', [step('x', 'COMPLETE')]) },
      { name: 'kernel', plan: planOf('STARTING', [step('a', 'COMPLETE'), step('c', 'STARTING', 'waiting for the drain of c'), step('g', 'PENDING')]) },
      { name: 'broken', error: '403: Forbidden' },
    ] },
    schedulerPlans: { base: 'http://s:8088', answer: { error: 'cannot reach the scheduler at http://s:8088 (ECONNREFUSED)' } },
  };
  const s = clusterStatus(input);
  assert.deepEqual(s.master, { leader: '10.0.0.1:5050', id: 'M', hostname: 'm1', version: '1.12.0', elected_time: new Date(NOW - 60_000).toISOString(), standbys: ['10.0.0.2:5050'] });
  assert.deepEqual(s.agents, { active: 1, deactivated: 0, draining: 1, drained: 1, disconnected: 2, unreachable: 1, gone: 2 });
  // a, b, d, e and g UP (g only scheduled); c DRAINING; f DOWN.
  assert.deepEqual(s.machines, { UP: 5, DRAINING: 1, DOWN: 1 });
  assert.deepEqual(s.drains, [
    { agent_id: 'A-S4', hostname: 'd', state: 'DRAINED', age_seconds: 90, remaining_tasks: 0, waiting_for: [] },
    { agent_id: 'A-S3', hostname: 'c', state: 'DRAINING', age_seconds: 5, remaining_tasks: 2, waiting_for: ['task t1 still running after SIGTERM', 'task t2 too'] },
  ]);
  assert.equal(s.maintenance_plans.complete, 1);
  assert.deepEqual(s.maintenance_plans.in_progress.map((p) => [p.name, p.status, p.steps.complete, p.steps.total, p.waiting ?? p.error]), [
    ['kernel', 'STARTING', 1, 3, 'c: waiting for the drain of c'],
    ['broken', '?', 0, 0, '403: Forbidden'],
  ]);
  assert.deepEqual(s.errors, ['scheduler plans at http://s:8088: cannot reach the scheduler at http://s:8088 (ECONNREFUSED)']);
  assert.equal(s.scheduler_plans?.scheduler, 'http://s:8088');

  const lines = renderStatus(s, plainPaint);
  assert.deepEqual(lines.slice(0, 3), [
    `master    10.0.0.1:5050 (m1, 1.12.0) leading since ${new Date(NOW - 60_000).toISOString()}; standbys: 10.0.0.2:5050`,
    'agents    1 active, 0 deactivated, 1 draining, 1 drained, 2 disconnected, 1 unreachable, 2 gone',
    'machines  5 UP, 1 DRAINING, 1 DOWN',
  ]);
  const text = lines.join('\n');
  assert.match(text, /\ndrains\nAGENT +HOSTNAME +STATE +AGE +TASKS +WAITING FOR\nA-S4 +d +DRAINED +1m 30s +0 +-\nA-S3 +c +DRAINING +5s +2 +task t1 still running after SIGTERM\n {2}c: also waiting for task t2 too\n/);
  assert.match(text, /\nmaintenance plans \(1 COMPLETE not shown\)\nPLAN +STATUS +STEPS +WAITING\nkernel +STARTING +1\/3 COMPLETE, 1 PENDING, 1 STARTING +c: waiting for the drain of c\nbroken +\? +403: Forbidden\n/);
  assert.match(text, /\nservice plans at http:\/\/s:8088: \?\n\n! could not ask scheduler plans at http:\/\/s:8088: cannot reach/);

  // Colour: the same text under the paint, non-zero counts and statuses painted.
  const painted = renderStatus(s, ansiPaint);
  assert.deepEqual(painted.map(visibleText), lines);
  assert.match(painted[1] ?? '', /\u001b\[32m1 active\u001b\[39m, 0 deactivated, \u001b\[33m1 draining/);
});

test('status: a drain the agent refused says so first, in its WAITING FOR column', () => {
  const s = clusterStatus({
    ...BASE,
    agents: [agent('A-S3', 'c', '10.0.1.3', { active: false, deactivated: true, drain_info: { state: 'DRAINING' } })],
    drydockAgents: [view('A-S3', 'c', '10.0.1.3', 'DRAINING', 'UP', {
      state: 'DRAINING', started_time: { nanoseconds: NS(NOW - 5_000) }, remaining_tasks: 1, refused: { reason: 'invalid DRAIN: bad grace', time: { nanoseconds: NS(NOW) } }, waiting_for: ['task t1 still running; not yet told to stop'],
    })],
  });
  assert.deepEqual(s.drains[0]?.waiting_for, ['the agent refused the drain (nothing was killed; drain again, or upgrade the agent): invalid DRAIN: bad grace', 'task t1 still running; not yet told to stop']);
  assert.match(renderStatus(s, plainPaint).join('\n'), /A-S3 +c +DRAINING +5s +1 +the agent refused the drain/);
});

test('status: a drain of an agent that has not re-registered is still shown, from its drain record', () => {
  const s = clusterStatus({ ...BASE, recovered: [{ hostname: 'e', id: { value: 'A-S5' } }], drydockAgents: [view('A-S5', 'e', '10.0.1.5', 'RECOVERED', 'UP', { state: 'DRAINING', remaining_tasks: 0, waiting_for: [{ kind: 'AGENT_RECOVERING', message: 'agent has not re-registered since the master restarted: drain will be applied when it re-registers' }] })] });
  assert.deepEqual(s.drains.map((d) => [d.agent_id, d.state, d.age_seconds, d.waiting_for[0]]), [['A-S5', 'DRAINING', null, 'agent has not re-registered since the master restarted: drain will be applied when it re-registers']]);
});

test("status: without Drydock's view of the agents, drains from GET_AGENTS' drain_info (no age, no reasons), every agent's machine UP, and the part named", () => {
  const s = clusterStatus({ ...BASE, agents: [agent('A-S3', 'c', '10.0.1.3', { active: false, deactivated: true, drain_info: { state: 'DRAINING' } }), agent('A-S1', 'a', '10.0.1.1')], drydockAgents: { error: '404: this master has no /drydock/v1/agents' } });
  assert.deepEqual(s.drains, [{ agent_id: 'A-S3', hostname: 'c', state: 'DRAINING', age_seconds: null, remaining_tasks: null, waiting_for: [] }]);
  assert.deepEqual(s.machines, { UP: 2, DRAINING: 0, DOWN: 0 });
  assert.deepEqual(s.errors, ['/drydock/v1/agents (machine modes, drain records): 404: this master has no /drydock/v1/agents']);
});

test('status: what could not be asked is null or ?, and named; nothing in progress says so', () => {
  const s = clusterStatus({ ...BASE, master: { error: 'GET_MASTER refused' }, snapshot: { error: '403: Forbidden' }, drydockAgents: { error: 'z' }, maintenance: { error: 'x' }, schedule: { error: 'y' }, maintenancePlans: { error: '404: Not Found' } });
  assert.equal(s.master, null);
  assert.deepEqual([s.agents.unreachable, s.agents.gone], [null, null]);
  assert.equal(s.errors.length, 6);
  const text = renderStatus(s, plainPaint).join('\n');
  assert.match(text, /^master {4}\?\nagents {4}0 active, .*, \? unreachable, \? gone\n/);
  assert.match(text, /\ndrains: none\n\nmaintenance plans: \?\n/);
  const empty = renderStatus(clusterStatus(BASE), plainPaint).join('\n');
  assert.match(empty, /\nmaintenance plans: none in progress$/);
  assert.ok(!empty.includes('could not ask'));
  // Text from the network cannot repaint the terminal.
  const hostile = renderStatus(clusterStatus({ ...BASE, drydockAgents: [view('X-S1', 'evil\u001b[2J', '1.1.1.1', 'DRAINING', 'UP', { state: 'DRAINING', waiting_for: ['evil\u001b[2J too'] })] }), plainPaint).join('\n');
  assert.match(hostile, /X-S1 +evil.*DRAINING/);
  assert.ok(!hostile.includes('\u001b'), hostile);
});

test('plan step counts and the first note of a step not COMPLETE', () => {
  assert.deepEqual(planStatus('k', planOf('IN_PROGRESS', [step('a', 'COMPLETE'), step('b', 'PENDING'), step('c', 'WAITING', 'operator')])), {
    name: 'k', status: 'IN_PROGRESS', steps: { total: 3, complete: 1, by_status: { COMPLETE: 1, PENDING: 1, WAITING: 1 } }, waiting: 'c: operator',
  });
  assert.deepEqual(planStatus('e', planOf('COMPLETE', [])).steps, { total: 0, complete: 0, by_status: {} });
});

test('progress bar: done of total in cells; empty total; clamped', () => {
  const cases: Array<[number, number, number, string]> = [
    [0, 4, 8, '[░░░░░░░░] 0/4'],
    [2, 4, 8, '[████░░░░] 2/4'],
    [4, 4, 8, '[████████] 4/4'],
    [1, 3, 10, '[███░░░░░░░] 1/3'],
    [0, 0, 4, '[░░░░] 0/0'],
    [9, 4, 4, '[████] 4/4'],
    [-1, 4, 4, '[░░░░] 0/4'],
    [1, 2, 0, '[█] 1/2'],
  ];
  for (const [done, total, width, want] of cases) assert.equal(progressBar(done, total, width), want, `${done}/${total}@${width}`);
});

test('fitLine: a line never wider than the terminal; colours kept and not counted', () => {
  assert.equal(fitLine('abcdef', 10), 'abcdef');
  assert.equal(fitLine('abcdef', 6), 'abcdef');
  assert.equal(fitLine('abcdefgh', 6), 'abcde…');
  assert.equal(fitLine(`ab${ansiPaint('cdef', 'red')}`, 6), `ab${ansiPaint('cdef', 'red')}`);
  const cut = fitLine(`ab${ansiPaint('cdefgh', 'red')}`, 5);
  assert.equal(visibleText(cut), 'abcd…');
  assert.ok(cut.endsWith('\u001b[0m'), 'a cut colour is reset');
});

test('LiveFrame: erases the rows it drew, fits lines, skips an unchanged frame', () => {
  const written: string[] = [];
  const frame = new LiveFrame({ size: () => ({ columns: 10, rows: 40 }), write: (t) => void written.push(t) });
  frame.draw(['one', 'two is longer than ten']);
  frame.draw(['one', 'two is longer than ten']);
  frame.draw(['three']);
  assert.deepEqual(written, ['one\ntwo is lo…\n', '\u001b[2F\u001b[Jthree\n']);
});

test('drain frame: state, a bar of tasks ended of the most seen, time waited, what it waits for', () => {
  const a = (drain: DrainRecordJson) => drainView({ ...view('X-S1', 'agent-3', '1.1.1.1', drain.state ?? ''), drain }, 'agent-3');
  const o = { startedMs: NOW, nowMs: NOW + 12_000, mostRemaining: 4, paint: plainPaint };
  assert.deepEqual(drainFrame(a({ state: 'DRAINING', remaining_tasks: 1, waiting_for: ['task t1 still running after SIGTERM'] }), o), [
    'agent-3  DRAINING  [███████████████░░░░░] 3/4 tasks ended  12s',
    '  waiting for: task t1 still running after SIGTERM',
    'Ctrl-C stops waiting; the drain goes on',
  ]);
  assert.deepEqual(drainFrame(a({ state: 'DRAINED', remaining_tasks: 0 }), o), ['agent-3  DRAINED  [████████████████████] 4/4 tasks ended  12s']);
  // An idle agent: nothing to count; a drain record without a count: no bar.
  assert.deepEqual(drainFrame(a({ state: 'DRAINED', remaining_tasks: 0 }), { ...o, mostRemaining: 0 }), ['agent-3  DRAINED  12s']);
  assert.deepEqual(drainFrame(a({ state: 'DRAINING' }), { ...o, mostRemaining: undefined, nowMs: NOW }), ['agent-3  DRAINING  0s', 'Ctrl-C stops waiting; the drain goes on']);
  assert.match(drainFrame(a({ state: 'DRAINING' }), { ...o, paint: ansiPaint })[0] ?? '', /\u001b\[33mDRAINING\u001b\[39m/);
});

test('plan --watch on a terminal: the plan\'s line carries a bar of steps COMPLETE; not on a pipe', () => {
  const plan = planOf('STARTING', [step('a', 'COMPLETE'), step('b', 'STARTING')]);
  assert.equal(planProgress(plan, 4), '[██░░] 1/2 steps COMPLETE');
  const at = { kind: 'master' as const, base: 'http://m:5050' };
  const req = { method: 'GET' as const, path: '/v1/maintenance/plans/k' };
  const answer = { kind: 'http' as const, status: 202, statusText: 'Accepted', body: JSON.stringify(plan) };
  const o = { name: 'k', from: 'master' as const, json: false, tty: true, paint: plainPaint, intervalMs: 1000, giveUpMs: 30_000 };
  const tty = watchStep(WATCH_START, planPoll(at, req, answer), 0, o);
  assert.match(tty.draw ?? '', /^k \(serial\) STARTING {2}\[██████████░░░░░░░░░░\] 1\/2 steps COMPLETE\n/);
  const pipe = watchStep(WATCH_START, planPoll(at, req, answer), 0, { ...o, tty: false });
  assert.match(pipe.draw ?? '', /^k \(serial\) STARTING\n/);
});

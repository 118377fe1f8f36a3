/**
 * One machine's maintenance step as timelines: each moment is an observation at a time, and the
 * stage, actions and "waiting for" text the step machine answers. Every moment is also checked
 * for the machine's promises: advancing again with the same observation and time emits nothing
 * and changes nothing, and the state survives a JSON round trip (the driver stores it as is).
 * At the end, the disruption budget (maintenance-plan-budget.ts), which decides when a step may
 * leave PENDING, as a table of named cases.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseMaintenancePlanSpec, type MaintenancePlanSpec } from '../../master/plans/spec.js';
import { OUTPUT_HIDDEN, parseHooksFile } from '../../master/plans/hooks.js';
import {
  advanceStep,
  errorText,
  verbMayRunHook,
  forceCompleteStep,
  lastRefusal,
  newStepState,
  refuseRestart,
  restartStep,
  restartVerdict,
  shortDuration,
  steadyText,
  stepStatusOf,
  stopStep,
  storedStepState,
  REISSUE_AFTER_MS,
  type AgentObservation,
  type FrameworkObservation,
  type MachineObservation,
  type StepAdvance,
  type StepStage,
  type StepState,
} from '../../master/plans/step.js';
import { machineKey } from '../../shared/machine.js';
import { budgetAllows, PlanBudget, type BudgetAgent, type BudgetInput, type BudgetStep } from '../../master/plans/budget.js';
import { mulberry32 } from '../helpers/random.js';

/** The master's hooks the specs name. */
const HOOKS = (() => {
  const r = parseHooksFile([
    'hooks:',
    '  reboot: { command: ["/usr/local/bin/reboot-host", "{hostname}", "--agents={agent_id}"], timeout: 30mins, env: { CHANNEL: stable } }',
    '  x: { command: ["/bin/x", "{ip}"] }',
    '',
  ].join('\n'));
  if (!r.ok) assert.fail(r.errors.join('\n'));
  return r.hooks;
})();

function spec(extra = '', mode: 'create' | 'stored' | 'legacy' = 'create', hooks = HOOKS): MaintenancePlanSpec {
  const r = parseMaintenancePlanSpec(`name: k\nmachines: all\nwindow: 1hrs\nmax_grace_period: 2mins\n${extra}`, { hooks, mode });
  if (!r.ok) assert.fail(r.errors.join('\n'));
  return r.spec;
}

const HOOKED = spec('on_down: {hook: reboot, timeout: 15mins}\n');
const PLAIN = spec();
const MACHINE = { hostname: 'agent-3', ip: '10.0.0.3' };
/** The clock: a real epoch, so window nanoseconds are large like the master's. */
const T0 = 1_700_000_000_000;
const MIN = 60_000;
const HOUR = 60 * MIN;

const A = (id: string, over: Partial<AgentObservation> = {}): AgentObservation => ({ id, connected: true, active: true, drainState: undefined, ...over });
const F = (name: string, answer?: 'ACCEPT' | 'DECLINE'): FrameworkObservation => ({ id: `fw-${name}`, name, answer });

/** An observation; `window: true` puts the step's own window in the schedule. */
type Obs = Partial<MachineObservation> & { window?: boolean };

function observe(s: StepState, o: Obs): MachineObservation {
  const { window, ...rest } = o;
  const w = s.window;
  const unavailability = window === true && w !== null ? { startNs: BigInt(w.startMs) * 1_000_000n, durationNs: BigInt(w.durationMs) * 1_000_000n } : undefined;
  return { mode: 'UP', unavailability, agents: [], frameworks: [], hook: undefined, continues: 0, ...rest };
}

interface Moment {
  /** ms after T0. */
  readonly at: number;
  readonly obs: Obs;
  readonly stage: StepStage;
  readonly actions?: readonly string[];
  readonly waiting?: string | RegExp;
  readonly check?: (r: StepAdvance) => void;
}

/** Plays moments from a state; returns the last state. */
function play(name: string, sp: MaintenancePlanSpec, moments: readonly Moment[], from: StepState = newStepState(MACHINE, 'agent-3')): StepState {
  let s = from;
  for (const m of moments) {
    const label = `${name} @+${m.at}ms`;
    const o = observe(s, m.obs);
    const r = advanceStep(s, o, sp, T0 + m.at);
    assert.equal(r.state.stage, m.stage, `${label}: stage (${r.waitingFor})`);
    assert.deepEqual(r.actions.map((a) => a.type), m.actions ?? [], `${label}: actions`);
    if (typeof m.waiting === 'string') assert.equal(r.waitingFor, m.waiting, label);
    else if (m.waiting !== undefined) assert.match(r.waitingFor, m.waiting, label);
    m.check?.(r);
    const again = advanceStep(r.state, o, sp, T0 + m.at);
    assert.deepEqual(again.actions, [], `${label}: advancing again emits nothing`);
    assert.deepEqual(again.state, r.state, `${label}: advancing again changes nothing`);
    assert.deepEqual(JSON.parse(JSON.stringify(r.state)), r.state, `${label}: the state is plain JSON`);
    s = r.state;
  }
  return s;
}

const DRAINING_A1 = A('a1', { active: false, drainState: 'DRAINING' });
const DRAINED_A1 = A('a1', { active: false, drainState: 'DRAINED' });

/** From PENDING to DOWN issued: one agent, one framework accepting at once. */
const TO_DOWN: readonly Moment[] = [
  { at: 0, obs: { agents: [A('a1')] }, stage: 'SCHEDULED', actions: ['schedule'] },
  { at: 1000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('spark', 'ACCEPT')] }, stage: 'DRAINING', actions: ['drain'] },
  { at: 2000, obs: { mode: 'DRAINING', window: true, agents: [DRAINED_A1] }, stage: 'DOWN', actions: ['down'] },
];
/** ... and on to HOOK (attempt 1 issued), for specs with on_down. */
const TO_HOOK: readonly Moment[] = [...TO_DOWN, { at: 3000, obs: { mode: 'DOWN', window: true }, stage: 'HOOK', actions: ['run_hook'] }];
const down = (over: Obs = {}): Obs => ({ mode: 'DOWN', window: true, ...over });

test('a full happy path, PENDING to COMPLETE', () => {
  const end = play('happy', HOOKED, [
    {
      at: 0, obs: { agents: [A('a1')], frameworks: [F('spark')] }, stage: 'SCHEDULED', actions: ['schedule'], waiting: 'waiting for its window to show in the maintenance schedule',
      check: (r) => assert.deepEqual(r.actions[0], { type: 'schedule', machine: MACHINE, startNs: BigInt(T0) * 1_000_000n, durationNs: 3_600_000_000_000n }),
    },
    { at: 500, obs: { agents: [A('a1')] }, stage: 'SCHEDULED', waiting: 'waiting for its window to show in the maintenance schedule (mode UP, not in the schedule)' },
    {
      at: 1000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('spark'), F('marathon')] }, stage: 'WAITING_FRAMEWORKS',
      waiting: 'waiting for inverse offer answers: spark (no answer), marathon (no answer) — 5m00s left of 5mins',
      check: (r) => assert.equal(r.nextWakeMs, T0 + 1000 + 5 * MIN, 'wakes when the wait is over'),
    },
    { at: 61_000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('spark', 'ACCEPT'), F('marathon')] }, stage: 'WAITING_FRAMEWORKS',
      waiting: 'waiting for inverse offer answers: marathon (no answer) — 4m00s left of 5mins' },
    {
      // spark's answer was cleared by a schedule update; the step remembers it.
      at: 62_000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('spark'), F('marathon', 'ACCEPT')] }, stage: 'DRAINING', actions: ['drain'],
      check: (r) => assert.deepEqual(r.actions[0], { type: 'drain', agentIds: ['a1'], maxGracePeriodNs: 120_000_000_000n }),
    },
    { at: 63_000, obs: { mode: 'DRAINING', window: true, agents: [DRAINING_A1] }, stage: 'DRAINING', waiting: 'waiting for its agents to drain: a1 DRAINING' },
    // Its agent refused the drain message: the step says so (it will not drain by itself).
    { at: 64_000, obs: { mode: 'DRAINING', window: true, agents: [{ ...DRAINING_A1, drainRefused: true }] }, stage: 'DRAINING',
      waiting: 'waiting for its agents to drain: a1 DRAINING (the agent refused the drain: see its drain record)' },
    { at: 120_000, obs: { mode: 'DRAINING', window: true, agents: [DRAINED_A1] }, stage: 'DOWN', actions: ['down'], waiting: 'waiting for the machine to go DOWN (mode DRAINING)',
      check: (r) => assert.deepEqual(r.entered, ['DRAINED', 'DOWN']) },
    {
      // Its agent was removed when the machine went DOWN.
      at: 121_000, obs: down(), stage: 'HOOK', actions: ['run_hook'], waiting: 'waiting for on_down to start (attempt 1)',
      check: (r) => assert.deepEqual(r.actions[0], {
        type: 'run_hook', machine: MACHINE, attempt: 1, hook: 'reboot', argv: ['/usr/local/bin/reboot-host', 'agent-3', '--agents=a1'], timeoutMs: 15 * MIN,
        hookEnv: { CHANNEL: 'stable' }, values: { hostname: 'agent-3', ip: '10.0.0.3', agent_id: 'a1' },
      }),
    },
    { at: 150_000, obs: down({ hook: { attempt: 1, status: 'running' } }), stage: 'HOOK', waiting: 'on_down running (attempt 1): 29s of 15mins' },
    { at: 400_000, obs: down({ hook: { attempt: 1, status: 'succeeded', code: 0, output: 'rebooted\n' } }), stage: 'UP', actions: ['up'] },
    { at: 401_000, obs: { mode: 'UP' }, stage: 'UP', waiting: 'waiting for an agent of the machine to register and be active (no agent registered)' },
    { at: 500_000, obs: { mode: 'UP', agents: [A('a2')] }, stage: 'SETTLING', waiting: 'settling: a2 active for 0s of 10secs',
      check: (r) => assert.equal(r.nextWakeMs, T0 + 510_000, 'wakes when the settle is over') },
    { at: 505_000, obs: { mode: 'UP', agents: [A('a2')] }, stage: 'SETTLING', waiting: 'settling: a2 active for 5s of 10secs' },
    { at: 510_000, obs: { mode: 'UP', agents: [A('a2')] }, stage: 'COMPLETE', waiting: '' },
  ]);
  assert.equal(stepStatusOf(end), 'COMPLETE');
  assert.deepEqual(end.notes, []);
});

test('a framework that declines: the wait times out and the text names it', () => {
  const declining = { mode: 'DRAINING' as const, window: true, agents: [A('a1')], frameworks: [F('spark', 'DECLINE'), F('marathon'), F('chronos', 'ACCEPT')] };
  const s = play('decline', PLAIN, [
    { at: 0, obs: { agents: [A('a1')] }, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 1000, obs: declining, stage: 'WAITING_FRAMEWORKS', waiting: 'waiting for inverse offer answers: spark (DECLINED), marathon (no answer) — 5m00s left of 5mins' },
    { at: 1000 + 5 * MIN - 1, obs: declining, stage: 'WAITING_FRAMEWORKS', waiting: 'waiting for inverse offer answers: spark (DECLINED), marathon (no answer) — 1s left of 5mins' },
    {
      at: 1000 + 5 * MIN, obs: declining, stage: 'DRAINING', actions: ['drain'],
      waiting: 'waiting for its agents to drain: a1 active (went ahead after wait_for_frameworks (5mins) without an ACCEPT from spark (DECLINED), marathon (no answer))',
    },
  ]);
  assert.deepEqual(s.notes, ['went ahead after wait_for_frameworks (5mins) without an ACCEPT from spark (DECLINED), marathon (no answer)']);
});

test('notice: the drain never starts before the window, unless every framework accepted', () => {
  const noticed = spec('notice: 10mins\n');
  const waiting = { mode: 'DRAINING' as const, window: true, agents: [A('a1')], frameworks: [F('spark')] };
  play('notice, no answer', noticed, [
    { at: 0, obs: {}, stage: 'SCHEDULED', actions: ['schedule'], check: (r) => assert.equal(r.state.window?.startMs, T0 + 10 * MIN) },
    { at: 1000, obs: waiting, stage: 'WAITING_FRAMEWORKS', waiting: 'waiting for inverse offer answers: spark (no answer) — 9m59s left until its window starts' },
    { at: 6 * MIN, obs: waiting, stage: 'WAITING_FRAMEWORKS' },
    { at: 10 * MIN, obs: waiting, stage: 'DRAINING', actions: ['drain'] },
  ]);
  play('notice, all accepted', noticed, [
    { at: 0, obs: {}, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 2000, obs: { ...waiting, frameworks: [F('spark', 'ACCEPT')] }, stage: 'DRAINING', actions: ['drain'] },
  ]);
});

test('a hook that fails goes to ERROR with its exit status; its last output is kept apart, hidden unless revealed; restart runs it again', () => {
  const cases: Array<[string, MachineObservation['hook'], string, string]> = [
    ['exit status', { attempt: 1, status: 'failed', code: 3, output: 'one\ntwo\nthree\nfour\nfive\nsix\n' },
      'on_down of agent-3 failed with exit status 3 (attempt 1)', 'last output: two | three | four | five | six'],
    ['signal', { attempt: 1, status: 'failed', code: null, signal: 'SIGKILL', output: '' }, 'on_down of agent-3 was killed by SIGKILL (attempt 1)', 'no output'],
    ['its own timeout', { attempt: 1, status: 'timed_out', output: 'waiting for ipmi\n' }, 'on_down of agent-3 timed out after 15mins (attempt 1)', 'last output: waiting for ipmi'],
  ];
  for (const [name, hook, message, output] of cases) {
    // What the step machine says by itself is the hidden form: it reaches every reader of the plan.
    const failed = play(name, HOOKED, [...TO_HOOK, { at: 4000, obs: down({ hook }), stage: 'ERROR', waiting: `${message}; ${OUTPUT_HIDDEN}` }]);
    assert.equal(failed.error, message, name);
    assert.equal(failed.hookOutput, output, name);
    assert.equal(errorText(failed, true), `${message}; ${output}`, `${name}: revealed`);
    assert.equal(errorText(failed, false), `${message}; output hidden (needs run_maintenance_hooks)`, `${name}: hidden`);
    assert.equal(failed.failedIn, 'HOOK', name);
    assert.equal(stepStatusOf(failed), 'ERROR', name);
    // The operator restarts the step: the hook runs again as attempt 2, then the step goes on.
    const restarted = restartStep(failed, T0 + 10_000);
    assert.equal(restarted.hookOutput, null, `${name}: a restart forgets the old output`);
    play(`${name}, restarted`, HOOKED, [
      { at: 10_000, obs: down({ hook }), stage: 'HOOK', actions: ['run_hook'], check: (r) => assert.equal(r.actions[0]?.type === 'run_hook' && r.actions[0].attempt, 2) },
      { at: 11_000, obs: down({ hook: { attempt: 2, status: 'succeeded', code: 0, output: '' } }), stage: 'UP', actions: ['up'] },
    ], restarted);
  }
});

test('a hook interrupted by a master restart: retried, or left for the operator, as the spec says', () => {
  const interrupted = down({ hook: { attempt: 1, status: 'interrupted' } });
  const retry = spec('on_down: {hook: reboot, on_interrupted: retry}\n');
  const s = play('retry', retry, [
    ...TO_HOOK,
    { at: 9000, obs: interrupted, stage: 'HOOK', actions: ['run_hook'], waiting: /^waiting for on_down to start \(attempt 2\)/,
      check: (r) => {
        assert.deepEqual(r.entered, ['HOOK']);
        assert.equal(r.actions[0]?.type === 'run_hook' && r.actions[0].attempt, 2);
      } },
  ]);
  assert.deepEqual(s.notes, ['on_down was interrupted by a master restart (attempt 1): ran it again']);

  const operator = spec('on_down: {hook: reboot, on_interrupted: operator}\n');
  play('operator', operator, [
    ...TO_HOOK,
    { at: 9000, obs: interrupted, stage: 'ERROR', waiting: 'agent-3: hook interrupted by a master restart (on_down attempt 1); restart the step to run it again' },
  ]);
});

test('a hook that cannot run goes to ERROR saying why, with nothing run: an older master\'s command, a hook gone from the file, an unsafe value', () => {
  const legacy = spec('on_down: {command: "id > /tmp/marker; exit 3", timeout: 20secs}\n', 'legacy');
  const s1 = play('legacy command', legacy, [...TO_DOWN, { at: 3000, obs: down(), stage: 'ERROR' }]);
  assert.match(s1.error ?? '', /^on_down of agent-3 was not run: this plan was stored by an older master with a shell command, and a master runs only its own hooks now \(on_down: \{ hook: NAME \}, configured with --maintenance_hooks\)/);
  assert.equal(s1.hookOutput, null);
  // Restarted, it fails the same way, and never issues run_hook.
  play('legacy command, restarted', legacy, [{ at: 5000, obs: down(), stage: 'ERROR', actions: [] }], restartStep(s1, T0 + 5000));
  // Interrupted while "running" under the older master, with retry: still nothing runs.
  const retried = spec('on_down: {command: "reboot", on_interrupted: retry}\n', 'legacy');
  const hooking: StepState = { ...newStepState(MACHINE, 'agent-3'), stage: 'HOOK', hookAttempt: 1, sinceMs: T0, startedMs: T0, wentDown: true, downIssued: true, hadAgents: true };
  play('legacy interrupted', retried, [{ at: 1000, obs: down({ hook: { attempt: 1, status: 'interrupted' } }), stage: 'ERROR', actions: [], waiting: /older master with a shell command/ }], hooking);

  const gone = spec('on_down: {hook: reboot}\n', 'stored', new Map());
  play('hook gone', gone, [...TO_DOWN, { at: 3000, obs: down(), stage: 'ERROR', actions: [],
    waiting: 'on_down of agent-3 was not run: hook reboot is not configured on this master (--maintenance_hooks); add it to the hooks file and restart the master, then restart the step' }]);

  const hostile = { hostname: '-oProxyCommand=x', ip: '10.0.0.3' };
  play('unsafe hostname', HOOKED, [
    { at: 0, obs: { agents: [A('a1')] }, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 1000, obs: { mode: 'DRAINING', window: true }, stage: 'DOWN', actions: ['down'] },
    { at: 2000, obs: down(), stage: 'ERROR', actions: [], waiting: /^on_down of -oProxyCommand=x was not run: its hostname "-oProxyCommand=x" holds characters that are not safe/ },
  ], newStepState(hostile, '-oProxyCommand=x'));
});

test('a state an older master stored: new fields filled, a failed hook\'s output split off its error so it is hidden too', () => {
  const old = (over: Record<string, unknown>): StepState => {
    const { hookOutput: _drop, ...rest } = { ...newStepState(MACHINE, 'agent-3'), ...over };
    return rest as unknown as StepState;
  };
  const failed = storedStepState(old({ stage: 'ERROR', failedIn: 'HOOK', error: 'on_down of agent-3 failed with exit status 3 (attempt 1); last output: uid=0(root) | secret' }), MACHINE, 'agent-3');
  assert.deepEqual([failed.error, failed.hookOutput], ['on_down of agent-3 failed with exit status 3 (attempt 1)', 'last output: uid=0(root) | secret']);
  assert.equal(errorText(failed, false), `on_down of agent-3 failed with exit status 3 (attempt 1); ${OUTPUT_HIDDEN}`);
  const quiet = storedStepState(old({ stage: 'ERROR', failedIn: 'HOOK', error: 'on_down of agent-3 was killed by SIGTERM (attempt 2); no output' }), MACHINE, 'agent-3');
  assert.deepEqual([quiet.error, quiet.hookOutput], ['on_down of agent-3 was killed by SIGTERM (attempt 2)', 'no output']);
  // Other errors and other stages keep their text; the new field is null.
  const drain = storedStepState(old({ stage: 'ERROR', failedIn: 'DRAINING', error: 'agent-3 did not drain within 1hrs: a1 DRAINING' }), MACHINE, 'agent-3');
  assert.deepEqual([drain.error, drain.hookOutput], ['agent-3 did not drain within 1hrs: a1 DRAINING', null]);
  assert.equal(storedStepState(old({ stage: 'UP' }), MACHINE, 'agent-3').hookOutput, null);
  // A state of this master's kind is read as it is.
  const mine: StepState = { ...newStepState(MACHINE, 'agent-3'), stage: 'ERROR', failedIn: 'HOOK', error: 'e; last output: not split again', hookOutput: 'last output: x' };
  assert.deepEqual(storedStepState(mine, MACHINE, 'agent-3'), mine);
});

test('which operator verbs may make a step run its hook (so the operator must be allowed to run it too)', () => {
  const { s: hooking } = at('HOOK');
  const { s: awaiting } = at('AWAITING');
  const { s: errUp } = at('ERROR_UP');
  const failedHook = play('failed hook', HOOKED, [...TO_HOOK, { at: 4000, obs: down({ hook: { attempt: 1, status: 'failed', code: 1, output: '' } }), stage: 'ERROR' }]);
  const complete: StepState = { ...newStepState(MACHINE, 'agent-3'), stage: 'COMPLETE' };
  const pending = newStepState(MACHINE, 'agent-3');
  const cases: Array<[string, StepState, boolean, boolean, boolean]> = [
    // name, state, continue, restart, start
    ['PENDING: started by the plan, the hook runs', pending, true, true, true],
    ['running before its hook', at('DRAINING').s, false, true, true],
    ['in HOOK', hooking, false, true, true],
    ['ERROR in HOOK: restart runs it again', failedHook, false, true, true],
    ['past the hook, waiting for the operator', awaiting, false, false, false],
    ['ERROR after UP', errUp, false, false, false],
    ['COMPLETE: a restart runs everything again', complete, false, true, true],
  ];
  for (const [name, state, cont, restart, start] of cases) {
    assert.deepEqual([verbMayRunHook('continue', state), verbMayRunHook('restart', state), verbMayRunHook('start', state)], [cont, restart, start], name);
  }
});

test('up_when operator: DOWN stays DOWN, with no timeout, until the operator continues the step', () => {
  const op = spec('up_when: operator\n');
  play('operator continue', op, [
    ...TO_DOWN,
    { at: 3000, obs: down({ continues: 4 }), stage: 'AWAITING_OPERATOR', waiting: 'waiting for the operator: continue this step to bring the machine UP',
      check: (r) => assert.equal(r.nextWakeMs, undefined, 'nothing to wake for') },
    { at: 3 * HOUR, obs: down({ continues: 4 }), stage: 'AWAITING_OPERATOR' },
    { at: 3 * HOUR + 1, obs: down({ continues: 5 }), stage: 'UP', actions: ['up'] },
  ]);
  play('brought up by hand', op, [
    ...TO_DOWN,
    { at: 3000, obs: down(), stage: 'AWAITING_OPERATOR' },
    { at: 4000, obs: { mode: 'UP', agents: [A('a9')] }, stage: 'SETTLING', check: (r) => assert.deepEqual(r.entered, ['UP', 'SETTLING']) },
  ]);
  // With a hook too: the hook first, then the operator.
  const both = spec('up_when: operator\non_down: x\n');
  assert.equal(both.onDown?.kind === 'hook' && both.onDown.hook, 'x');
  play('hook then operator', both, [...TO_HOOK, { at: 4000, obs: down({ hook: { attempt: 1, status: 'succeeded', code: 0, output: '' } }), stage: 'AWAITING_OPERATOR' }]);
});

test('an agent that never comes back: ERROR after step_timeout, in words', () => {
  const upAt = 4000;
  play('never back', PLAIN, [
    ...TO_DOWN,
    { at: 3000, obs: down(), stage: 'UP', actions: ['up'] },
    { at: upAt, obs: { mode: 'UP' }, stage: 'UP', check: (r) => assert.equal(r.nextWakeMs, T0 + 3000 + HOUR, 'wakes at the step timeout') },
    { at: 3000 + HOUR - 1, obs: { mode: 'UP', agents: [A('a1', { connected: false })] }, stage: 'UP',
      waiting: 'waiting for an agent of the machine to register and be active (a1 active (not connected))' },
    { at: 3000 + HOUR, obs: { mode: 'UP' }, stage: 'ERROR', waiting: 'agent-3 did not come back within 1hrs after UP (no agent registered)' },
  ]);
});

test('a machine without agents skips the framework wait and the drain, and does not wait for one after UP', () => {
  play('no agents', PLAIN, [
    { at: 0, obs: {}, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 1000, obs: { mode: 'DRAINING', window: true }, stage: 'DOWN', actions: ['down'],
      waiting: 'waiting for the machine to go DOWN (mode DRAINING) (no agent is registered on this machine: skipped the framework wait and the drain)' },
    { at: 2000, obs: down(), stage: 'UP', actions: ['up'] },
    { at: 3000, obs: { mode: 'UP' }, stage: 'COMPLETE', waiting: '' },
  ]);
});

test('stages past their step_timeout go to ERROR with a message in words', () => {
  const stuck = A('a1', { active: false, drainState: 'DRAINING', connected: false });
  play('drain', PLAIN, [
    ...TO_DOWN.slice(0, 2),
    { at: 1000 + HOUR - 1, obs: { mode: 'DRAINING', window: true, agents: [stuck] }, stage: 'DRAINING' },
    { at: 1000 + HOUR, obs: { mode: 'DRAINING', window: true, agents: [stuck] }, stage: 'ERROR', waiting: 'agent-3 did not drain within 1hrs: a1 DRAINING (not connected)' },
  ]);
  play('down', PLAIN, [
    ...TO_DOWN,
    { at: 2000 + HOUR, obs: { mode: 'DRAINING', window: true }, stage: 'ERROR', actions: ['down'],
      waiting: 'agent-3 did not go DOWN within 1hrs after machine down was issued (mode DRAINING)' },
  ]);
  // A hook past the step timeout is stopped as the step fails.
  play('hook', HOOKED, [
    ...TO_HOOK,
    { at: 3000 + HOUR, obs: down({ hook: { attempt: 1, status: 'running' } }), stage: 'ERROR', actions: ['cancel_hook'],
      waiting: 'on_down of agent-3 was still running after 1hrs (attempt 1)' },
  ]);
  play('window never shows', PLAIN, [
    { at: 0, obs: {}, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: HOUR, obs: {}, stage: 'ERROR', actions: ['schedule'], waiting: 'agent-3: its maintenance window did not show in the schedule within 1hrs (mode UP, not in the schedule)' },
  ]);
  // Progress seen at the deadline wins over the timeout.
  play('progress at the deadline', PLAIN, [...TO_DOWN.slice(0, 2), { at: 1000 + HOUR, obs: { mode: 'DRAINING', window: true, agents: [DRAINED_A1] }, stage: 'DOWN', actions: ['down'] }]);
});

test('a machine taken out of the schedule by someone else before DOWN stops the step', () => {
  play('unscheduled', PLAIN, [
    { at: 0, obs: { agents: [A('a1')] }, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 1000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('spark')] }, stage: 'WAITING_FRAMEWORKS' },
    { at: 2000, obs: { mode: 'UP', agents: [A('a1')], frameworks: [F('spark')] }, stage: 'ERROR',
      waiting: 'agent-3 left the maintenance schedule outside this plan during WAITING_FRAMEWORKS (mode UP); restart the step to schedule it again' },
  ]);
  // Brought DOWN by hand while draining: it skips ahead instead.
  play('downed by hand', PLAIN, [
    ...TO_DOWN.slice(0, 2),
    { at: 1500, obs: down(), stage: 'UP', actions: ['up'], check: (r) => assert.deepEqual(r.entered, ['DOWN', 'UP']) },
  ]);
});

test('an action whose effect does not show is issued again, once per REISSUE_AFTER_MS', () => {
  const draining = { mode: 'DRAINING' as const, window: true };
  play('reissue down', PLAIN, [
    ...TO_DOWN,
    { at: 2000 + REISSUE_AFTER_MS - 1, obs: draining, stage: 'DOWN' },
    { at: 2000 + REISSUE_AFTER_MS, obs: draining, stage: 'DOWN', actions: ['down'], check: (r) => assert.equal(r.nextWakeMs, T0 + 2000 + 2 * REISSUE_AFTER_MS) },
    { at: 2000 + REISSUE_AFTER_MS + 1, obs: draining, stage: 'DOWN' },
  ]);
  play('an agent that registers during the drain is drained too', PLAIN, [
    ...TO_DOWN.slice(0, 2),
    { at: 1500, obs: { mode: 'DRAINING', window: true, agents: [DRAINING_A1, A('a2')] }, stage: 'DRAINING', actions: ['drain'],
      check: (r) => assert.deepEqual(r.actions[0]?.type === 'drain' && r.actions[0].agentIds, ['a2']) },
  ]);
});

test('an agent this step drained that comes back deactivated is reactivated', () => {
  play('reactivate', PLAIN, [
    ...TO_DOWN,
    { at: 3000, obs: down(), stage: 'UP', actions: ['up'] },
    { at: 4000, obs: { mode: 'UP', agents: [DRAINED_A1] }, stage: 'UP', actions: ['reactivate'],
      check: (r) => assert.deepEqual(r.actions[0], { type: 'reactivate', agentIds: ['a1'] }) },
    { at: 5000, obs: { mode: 'UP', agents: [A('a1')] }, stage: 'SETTLING' },
  ]);
});

// ---------------------------------------------------------------------------------------------
// Operator verbs

/** A state at a stage, reached by a timeline. */
function at(stage: 'SCHEDULED' | 'WAITING' | 'DRAINING' | 'HOOK' | 'AWAITING' | 'SETTLING' | 'ERROR_UP'): { s: StepState; sp: MaintenancePlanSpec } {
  switch (stage) {
    case 'SCHEDULED': return { sp: PLAIN, s: play(stage, PLAIN, TO_DOWN.slice(0, 1)) };
    case 'WAITING': return { sp: PLAIN, s: play(stage, PLAIN, [TO_DOWN[0] as Moment, { at: 1000, obs: { mode: 'DRAINING', window: true, agents: [A('a1')], frameworks: [F('x')] }, stage: 'WAITING_FRAMEWORKS' }]) };
    case 'DRAINING': return { sp: PLAIN, s: play(stage, PLAIN, TO_DOWN.slice(0, 2)) };
    case 'HOOK': return { sp: HOOKED, s: play(stage, HOOKED, TO_HOOK) };
    case 'AWAITING': {
      const sp = spec('up_when: operator\n');
      return { sp, s: play(stage, sp, [...TO_DOWN, { at: 3000, obs: down(), stage: 'AWAITING_OPERATOR' }]) };
    }
    case 'SETTLING': return { sp: PLAIN, s: play(stage, PLAIN, [...TO_DOWN, { at: 3000, obs: down(), stage: 'UP', actions: ['up'] }, { at: 4000, obs: { mode: 'UP', agents: [A('a1')] }, stage: 'SETTLING' }]) };
    case 'ERROR_UP': return { sp: PLAIN, s: play(stage, PLAIN, [...TO_DOWN, { at: 3000, obs: down(), stage: 'UP', actions: ['up'] }, { at: 3000 + HOUR, obs: { mode: 'UP' }, stage: 'ERROR' }]) };
  }
}

test('stop: each machine is left in a stated mode, and only what is safe is undone', () => {
  const cases: Array<[string, Parameters<typeof at>[0] | 'PENDING', string[], string | null, string | null]> = [
    ['not started', 'PENDING', [], null, null],
    ['scheduled: the window is taken out', 'SCHEDULED', ['unschedule'], 'UP', 'UP: its window was taken out of the schedule before any drain'],
    ['waiting for frameworks: same', 'WAITING', ['unschedule'], 'UP', 'UP: its window was taken out of the schedule before any drain'],
    ['draining: a drain cannot be undone', 'DRAINING', [], 'DRAINING',
      'DRAINING, in the schedule, agents a1 drained or draining: bring it down with drydock machine down agent-3=10.0.0.3, or take its window out of the schedule and reactivate them with drydock agent reactivate once DRAINED'],
    ['hook running: stopped, machine left DOWN', 'HOOK', ['cancel_hook'], 'DOWN', 'DOWN; its on_down (attempt 1) was stopped: bring it up with drydock machine up agent-3=10.0.0.3'],
    ['awaiting the operator: DOWN', 'AWAITING', [], 'DOWN', 'DOWN: bring it up with drydock machine up agent-3=10.0.0.3'],
    ['settling: UP', 'SETTLING', [], 'UP', 'UP: machine up was issued; its agent was not watched after the stop'],
    ['error after UP: UP', 'ERROR_UP', [], 'UP', 'UP: machine up was issued; its agent was not watched after the stop'],
  ];
  for (const [name, stage, actions, mode, text] of cases) {
    const s = stage === 'PENDING' ? newStepState(MACHINE, 'agent-3') : at(stage).s;
    const r = stopStep(s);
    assert.deepEqual(r.actions.map((a) => a.type), actions, name);
    assert.equal(r.left?.mode ?? null, mode, name);
    assert.equal(r.left?.text ?? null, text, name);
    assert.equal(r.state.stage, 'PENDING', name);
    assert.deepEqual(r.state.left, r.left, `${name}: listed on the step`);
  }
});

test('a run started after a stop that left the machine DOWN skips to DOWN and finishes', () => {
  const { s, sp } = at('HOOK');
  const stopped = stopStep(s).state;
  play('after stop', sp, [
    { at: 10_000, obs: { mode: 'DOWN', unavailability: { startNs: 1n, durationNs: 2n } }, stage: 'SCHEDULED', actions: ['schedule'] },
    { at: 11_000, obs: down(), stage: 'HOOK', actions: ['run_hook'], waiting: /the machine was DOWN already: skipped the framework wait and the drain/ },
    { at: 12_000, obs: down({ hook: { attempt: 1, status: 'succeeded', code: 0, output: '' } }), stage: 'UP', actions: ['up'] },
    // It had agents in the stopped run, so the new run waits for one.
    { at: 13_000, obs: { mode: 'UP' }, stage: 'UP' },
    { at: 14_000, obs: { mode: 'UP', agents: [A('a5')] }, stage: 'SETTLING' },
  ], stopped);
});

test('force-complete: COMPLETE without the work, the same undo, what is left stated', () => {
  const waiting = at('WAITING').s;
  const r = forceCompleteStep(waiting, T0 + 5000);
  assert.equal(r.state.stage, 'COMPLETE');
  assert.equal(r.state.forced, true);
  assert.deepEqual(r.actions.map((a) => a.type), ['unschedule']);
  assert.equal(r.left?.mode, 'UP');
  const failed = at('ERROR_UP').s;
  const f = forceCompleteStep(failed, T0 + 5000);
  assert.deepEqual([f.state.stage, f.state.error, f.actions.length, f.left?.mode], ['COMPLETE', null, 0, 'UP']);
  assert.deepEqual(forceCompleteStep(f.state, T0 + 6000).state, f.state, 'a COMPLETE step is unchanged');
});

test('restart: where each stage resumes', () => {
  const pending = newStepState(MACHINE, 'agent-3');
  assert.equal(restartStep(pending, T0), pending, 'PENDING: unchanged');
  const { s: settling } = at('SETTLING');
  const done = advanceStep(settling, observe(settling, { mode: 'UP', agents: [A('a1')] }), PLAIN, T0 + 20_000).state;
  assert.equal(done.stage, 'COMPLETE');
  const again = restartStep(done, T0 + 30_000);
  assert.equal(again.stage, 'PENDING', 'COMPLETE: PENDING again');
  assert.equal(again.hadAgents, true, 'what is known of the machine is kept');

  // An ERROR before the drain schedules a new window, so frameworks are asked again.
  const waiting = at('WAITING').s;
  const err = advanceStep(waiting, observe(waiting, { mode: 'UP' }), PLAIN, T0 + 2000).state;
  assert.equal(err.stage, 'ERROR');
  const r = restartStep(err, T0 + 50_000);
  assert.deepEqual([r.stage, r.window, r.error, r.sinceMs], ['SCHEDULED', null, null, T0 + 50_000]);
  play('restart before the drain', PLAIN, [
    { at: 50_000, obs: { mode: 'UP' }, stage: 'SCHEDULED', actions: ['schedule'], check: (x) => assert.equal(x.state.window?.startMs, T0 + 50_000) },
  ], r);

  // An ERROR after UP waits for the agent again, with a fresh step timeout.
  const { s: errUp } = at('ERROR_UP');
  const u = restartStep(errUp, T0 + 2 * HOUR);
  play('restart after UP', PLAIN, [
    { at: 2 * HOUR + 1000, obs: { mode: 'UP' }, stage: 'UP', check: (x) => assert.equal(x.nextWakeMs, T0 + 3 * HOUR) },
    { at: 2 * HOUR + 2000, obs: { mode: 'UP', agents: [A('a1')] }, stage: 'SETTLING' },
  ], u);

  // A running hook is not run twice by a restart: only its timeout is fresh.
  const { s: hooking } = at('HOOK');
  const h = restartStep(hooking, T0 + 5000);
  play('restart while the hook runs', HOOKED, [{ at: 5000, obs: down({ hook: { attempt: 1, status: 'running' } }), stage: 'HOOK' }], h);
});

test('restart: per stage, whether its actions run again (and which) or why not', () => {
  const hookSpec = HOOKED;
  const doneState = (): StepState => {
    const { s: settling } = at('SETTLING');
    return advanceStep(settling, observe(settling, { mode: 'UP', agents: [A('a1')] }), PLAIN, T0 + 20_000).state;
  };
  const hookFailed = (): StepState => play('hook failed', hookSpec, [...TO_HOOK, { at: 4000, obs: down({ hook: { attempt: 1, status: 'failed', code: 3, output: 'no' } }), stage: 'ERROR' }]);
  const rows: Array<{
    what: string; from: () => StepState; sp: MaintenancePlanSpec; hookRunning?: boolean;
    verdict: 'rerun' | 'unchanged' | 'refused'; says?: RegExp;
    /** After restartStep: the stage, and the first advance (observation, stage, actions). */
    then?: { stage: StepStage; obs: Obs; next: StepStage; actions: string[]; check?: (r: StepAdvance) => void };
  }> = [
    { what: 'PENDING: not started', from: () => newStepState(MACHINE, 'agent-3'), sp: PLAIN, verdict: 'unchanged' },
    { what: 'SCHEDULED: its window issued again', from: () => at('SCHEDULED').s, sp: PLAIN, verdict: 'rerun', says: /its window is issued again/,
      then: { stage: 'SCHEDULED', obs: { agents: [A('a1')] }, next: 'SCHEDULED', actions: ['schedule'] } },
    { what: 'WAITING_FRAMEWORKS: a new window, the frameworks asked again', from: () => at('WAITING').s, sp: PLAIN, verdict: 'rerun', says: /new window .* frameworks are asked again/,
      then: { stage: 'SCHEDULED', obs: { mode: 'DRAINING', agents: [A('a1')] }, next: 'SCHEDULED', actions: ['schedule'], check: (r) => assert.equal(r.state.window?.startMs, T0 + 50_000) } },
    { what: 'DRAINING: DRAIN_AGENT again where the drain does not show', from: () => at('DRAINING').s, sp: PLAIN, verdict: 'rerun', says: /DRAIN_AGENT is issued again/,
      then: { stage: 'DRAINING', obs: { mode: 'DRAINING', window: true, agents: [A('a1')] }, next: 'DRAINING', actions: ['drain'] } },
    { what: 'DOWN: machine down again', from: () => play('down', PLAIN, TO_DOWN), sp: PLAIN, verdict: 'rerun', says: /machine down is issued again/,
      then: { stage: 'DOWN', obs: { mode: 'DRAINING', window: true }, next: 'DOWN', actions: ['down'] } },
    { what: 'HOOK while on_down runs: refused', from: () => at('HOOK').s, sp: hookSpec, hookRunning: true, verdict: 'refused', says: /on_down \(attempt 1\) is running.*second time.*stop the plan to cancel it/ },
    { what: 'HOOK with no process: the same attempt issued again', from: () => at('HOOK').s, sp: hookSpec, verdict: 'rerun', says: /on_down attempt 1 is issued again/,
      then: { stage: 'HOOK', obs: down(), next: 'HOOK', actions: ['run_hook'], check: (r) => assert.equal((r.actions[0] as { attempt: number }).attempt, 1) } },
    { what: 'AWAITING_OPERATOR: refused, continue is the verb', from: () => at('AWAITING').s, sp: spec('up_when: operator\n'), verdict: 'refused', says: /continue the step to bring it UP/ },
    { what: 'UP: machine up again, the agent waited for', from: () => play('up', PLAIN, [...TO_DOWN, { at: 3000, obs: down(), stage: 'UP', actions: ['up'] }]), sp: PLAIN, verdict: 'rerun', says: /machine up is issued again/,
      then: { stage: 'UP', obs: down(), next: 'UP', actions: ['up'] } },
    { what: 'SETTLING: the settle counted again', from: () => at('SETTLING').s, sp: PLAIN, verdict: 'rerun', says: /settle is counted again/,
      then: { stage: 'SETTLING', obs: { mode: 'UP', agents: [A('a1')] }, next: 'SETTLING', actions: [], check: (r) => assert.equal(r.state.heldSinceMs, T0 + 50_000) } },
    { what: 'COMPLETE: the whole maintenance again', from: doneState, sp: PLAIN, verdict: 'rerun', says: /whole maintenance runs again/,
      then: { stage: 'PENDING', obs: { agents: [A('a1')] }, next: 'SCHEDULED', actions: ['schedule'] } },
    { what: 'ERROR after UP: up again', from: () => at('ERROR_UP').s, sp: PLAIN, verdict: 'rerun', says: /machine up is issued again/,
      then: { stage: 'UP', obs: down(), next: 'UP', actions: ['up'] } },
    { what: 'ERROR in HOOK, the failed attempt still being stopped: refused', from: hookFailed, sp: hookSpec, hookRunning: true, verdict: 'refused', says: /still being stopped: restart once it has ended/ },
    { what: 'ERROR in HOOK: on_down runs again as the next attempt', from: hookFailed, sp: hookSpec, verdict: 'rerun', says: /on_down runs again \(attempt 2\)/,
      then: { stage: 'HOOK', obs: down(), next: 'HOOK', actions: ['run_hook'], check: (r) => assert.equal((r.actions[0] as { attempt: number }).attempt, 2) } },
  ];
  for (const row of rows) {
    const from = row.from();
    const v = restartVerdict(from, { hookRunning: row.hookRunning ?? false });
    assert.equal(v.kind, row.verdict, row.what);
    if (row.says !== undefined) assert.match(v.kind === 'rerun' ? v.what : v.kind === 'refused' ? v.reason : '', row.says, row.what);
    if (v.kind === 'refused') {
      // Refused: nothing changes but a note, which the step's message shows (an ERROR's too).
      const noted = refuseRestart(from, v.reason);
      assert.deepEqual({ ...noted, notes: from.notes }, from, `${row.what}: only a note`);
      assert.equal(lastRefusal(noted), `restart refused: ${v.reason}`);
      assert.equal(lastRefusal(from), undefined);
      if (from.stage !== 'ERROR') assert.match(advanceStep(noted, observe(noted, down()), row.sp, T0 + 50_000).waitingFor, /\(restart refused: /, `${row.what}: the waiting-for text says why`);
    }
    if (row.then === undefined) continue;
    const r = restartStep(from, T0 + 50_000);
    assert.equal(r.stage, row.then.stage, `${row.what}: stage after the restart`);
    if (from.stage !== 'COMPLETE') {
      assert.equal(r.sinceMs, T0 + 50_000, `${row.what}: a fresh step timeout`);
      assert.match(r.notes.at(-1) ?? '', /^restarted by the operator (during|after an ERROR in) [A-Z_]+: /, row.what);
    }
    play(row.what, row.sp, [{ at: 50_000, obs: row.then.obs, stage: row.then.next, actions: row.then.actions, ...(row.then.check ? { check: row.then.check } : {}) }], r);
  }
});

test('shortDuration', () => {
  const cases: Array<[number, string]> = [[0, '0s'], [1, '1s'], [59_000, '59s'], [60_000, '1m00s'], [192_000, '3m12s'], [3_600_000, '1h00m'], [3_725_000, '1h02m'], [-5, '0s']];
  for (const [ms, want] of cases) assert.equal(shortDuration(ms), want, String(ms));
});

test('steadyText masks countdowns only: a ticking wait is one text for the event stream', () => {
  const cases: Array<[string, string]> = [
    ['waiting for inverse offer answers: fw (DECLINED) — 45s left of 2secs', 'waiting for inverse offer answers: fw (DECLINED) — # left of 2secs'],
    ['on_down running (attempt 1): 3m12s of 15mins', 'on_down running (attempt 1): # of 15mins'],
    ['waiting — 1h02m left until its window starts', 'waiting — # left until its window starts'],
    ['waiting for the operator: continue this step to bring the machine UP', 'waiting for the operator: continue this step to bring the machine UP'],
    ['agents 10s2 and 5secs stay', 'agents 10s2 and 5secs stay'],
  ];
  for (const [text, want] of cases) assert.equal(steadyText(text), want, text);
  for (let ms = 0; ms < 4 * 3_600_000; ms += 61_013) assert.equal(steadyText(`${shortDuration(ms)} left`), '# left', String(ms));
});

const SEED = Number(process.env['STEP_FUZZ_SEED'] ?? 0x57e9);

test(`random observations: never throws, state stays JSON, a repeat emits nothing (seed ${SEED}; rerun with STEP_FUZZ_SEED)`, () => {
  const next = mulberry32(SEED);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(next() * xs.length)] as T;
  const specs = [PLAIN, HOOKED, spec('up_when: operator\non_down: {hook: x, on_interrupted: retry}\nnotice: 1mins\n'), spec('on_down: "x {ip}"\n', 'legacy')];
  const seen = new Set<StepStage>();
  for (let run = 0; run < 200; run++) {
    const sp = pick(specs);
    let s = newStepState(MACHINE, 'agent-3');
    let now = T0;
    for (let i = 0; i < 40; i++) {
      now += Math.floor(next() * 20 * MIN);
      const o = observe(s, {
        mode: pick(['UP', 'DRAINING', 'DOWN', undefined] as const),
        window: next() < 0.7,
        agents: Array.from({ length: Math.floor(next() * 3) }, (_, k) => A(`a${k}`, { connected: next() < 0.8, active: next() < 0.5, drainState: pick([undefined, 'DRAINING', 'DRAINED'] as const) })),
        frameworks: Array.from({ length: Math.floor(next() * 3) }, (_, k) => F(`f${k}`, pick([undefined, 'ACCEPT', 'DECLINE'] as const))),
        hook: next() < 0.3 ? undefined : pick<MachineObservation['hook']>([
          { attempt: s.hookAttempt, status: 'running' },
          { attempt: s.hookAttempt, status: 'succeeded', code: 0, output: 'ok' },
          { attempt: s.hookAttempt, status: 'failed', code: 1, output: 'no' },
          { attempt: s.hookAttempt, status: 'timed_out', output: '' },
          { attempt: s.hookAttempt, status: 'interrupted' },
          { attempt: s.hookAttempt - 1, status: 'succeeded', code: 0, output: 'stale' },
        ]),
        continues: Math.floor(next() * 3),
      });
      const r = advanceStep(s, o, sp, now);
      for (const e of r.entered) seen.add(e);
      assert.deepEqual(JSON.parse(JSON.stringify(r.state)), r.state);
      assert.deepEqual(advanceStep(r.state, o, sp, now).actions, [], `run ${run} step ${i} at ${r.state.stage}`);
      s = r.state;
      if (s.stage === 'ERROR' && next() < 0.5) s = restartStep(s, now);
      if (next() < 0.05) s = stopStep(s).state;
    }
  }
  // The walk is only worth something if it gets everywhere.
  assert.deepEqual([...seen].sort(), ['AWAITING_OPERATOR', 'COMPLETE', 'DOWN', 'DRAINED', 'DRAINING', 'ERROR', 'HOOK', 'SCHEDULED', 'SETTLING', 'UP', 'WAITING_FRAMEWORKS']);
});

// ---------------------------------------------------------------------------------------------
// The budget

const host = (n: number) => ({ hostname: `agent-${n}`, ip: `10.0.0.${n}` });
const bstep = (n: number, stage: StepStage, phase = 'r1'): BudgetStep => ({ phase, name: `agent-${n}`, machine: host(n), stage });
const agent = (n: number, zone: string, active = true): BudgetAgent => ({ id: `S${n}`, machine: host(n), attributes: { zone, rack: n <= 6 ? 'r1' : 'r2' }, active });
/** Twelve agents: 1-11 in zone a, 12 in zone b. */
const AGENTS: BudgetAgent[] = Array.from({ length: 12 }, (_, i) => agent(i + 1, i + 1 === 12 ? 'b' : 'a'));

function input(over: Partial<Omit<BudgetInput, 'candidate'>> & { candidate?: number; phase?: string }): BudgetInput {
  const { candidate = 5, phase = 'r1', ...rest } = over;
  return {
    candidate: { phase, name: `agent-${candidate}`, machine: host(candidate) },
    steps: [],
    otherPlans: [],
    agents: AGENTS,
    budget: { maxDown: undefined, minActiveAgents: undefined },
    maxParallel: undefined,
    ...rest,
  };
}

test('budget: who may start, and the reason shown when not', () => {
  const maxDown2 = { maxDown: 2, minActiveAgents: undefined };
  const zoneA10 = { maxDown: undefined, minActiveAgents: { attributes: { zone: 'a' }, count: 10 } };
  const cases: Array<[string, BudgetInput, string | null]> = [
    ['nothing out, no budget', input({}), null],
    ['a machine another plan works on', input({ otherPlans: [{ plan: 'kernel-2026-12', machines: [{ hostname: 'AGENT-5', ip: '10.0.0.5' }] }] }),
      'budget: agent-5 is in plan kernel-2026-12 (two plans never work on the same machine)'],
    ['max_down reached', input({ budget: maxDown2, steps: [bstep(1, 'DRAINING'), bstep(4, 'HOOK'), bstep(5, 'PENDING')] }), 'budget: 2 of max_down 2 machines out (agent-1, agent-4)'],
    ['an ERROR step holds its share', input({ budget: maxDown2, steps: [bstep(1, 'ERROR'), bstep(4, 'SCHEDULED')] }), 'budget: 2 of max_down 2 machines out (agent-1, agent-4)'],
    ['COMPLETE and PENDING steps are not out', input({ budget: maxDown2, steps: [bstep(1, 'COMPLETE'), bstep(4, 'SETTLING'), bstep(6, 'PENDING')] }), null],
    ['the candidate never counts against itself', input({ budget: { maxDown: 1, minActiveAgents: undefined }, steps: [bstep(5, 'SCHEDULED')] }), null],
    ['max_parallel within the phase', input({ maxParallel: 2, steps: [bstep(1, 'DRAINING'), bstep(2, 'UP'), bstep(7, 'DOWN', 'r2')] }),
      'budget: 2 of max_parallel 2 steps of phase r1 running (agent-1, agent-2)'],
    ['max_parallel counts only its own phase', input({ maxParallel: 2, phase: 'r2', candidate: 8, steps: [bstep(1, 'DRAINING'), bstep(2, 'UP'), bstep(7, 'DOWN', 'r2')] }), null],
    ['min_active_agents: one more would leave 9 of zone a', input({ budget: zoneA10, steps: [bstep(1, 'SCHEDULED')] }),
      'budget: starting agent-5 would leave 9 active agents with zone=a, fewer than min_active_agents 10'],
    ['min_active_agents: an inactive agent already counts as gone', input({ budget: zoneA10, agents: AGENTS.map((a) => (a.id === 'S2' ? { ...a, active: false } : a)) }),
      'budget: starting agent-5 would leave 9 active agents with zone=a, fewer than min_active_agents 10'],
    ['min_active_agents: another plan\'s machines count as gone', input({ budget: zoneA10, otherPlans: [{ plan: 'other', machines: [host(3)] }] }),
      'budget: starting agent-5 would leave 9 active agents with zone=a, fewer than min_active_agents 10'],
    ['min_active_agents: room for exactly one', input({ budget: zoneA10 }), null],
    ['min_active_agents: a machine outside the group takes nothing from it', input({ budget: zoneA10, candidate: 12, steps: [bstep(1, 'SCHEDULED'), bstep(2, 'SCHEDULED')] }), null],
    ['min_active_agents without attributes: the whole cluster', input({ budget: { maxDown: undefined, minActiveAgents: { attributes: {}, count: 12 } } }),
      'budget: starting agent-5 would leave 11 active agents in the cluster, fewer than min_active_agents 12'],
    ['the first rule that refuses is the reason', input({ budget: { maxDown: 1, minActiveAgents: { attributes: { zone: 'a' }, count: 11 } }, maxParallel: 1, steps: [bstep(1, 'DRAINING')] }),
      'budget: 1 of max_down 1 machines out (agent-1)'],
  ];
  for (const [name, given, reason] of cases) {
    assert.deepEqual(budgetAllows(given), reason === null ? { ok: true } : { ok: false, reason }, name);
  }
});

test('budget: a long list of machines out is cut in the reason', () => {
  const steps = Array.from({ length: 8 }, (_, i) => bstep(i + 1, 'DOWN'));
  const r = budgetAllows(input({ candidate: 9, budget: { maxDown: 8, minActiveAgents: undefined }, steps }));
  assert.deepEqual(r, { ok: false, reason: 'budget: 8 of max_down 8 machines out (agent-1, agent-2, agent-3, agent-4, agent-5 and 3 more)' });
});

test('budget within a pass: each step taken counts for the next candidate, in this plan and the others', () => {
  // Two plans share one `busy` map, as the driver's pass builds them.
  const busy = new Map<string, string>();
  const a = new PlanBudget({ plan: 'a', busy, steps: [bstep(1, 'DRAINING'), bstep(2, 'PENDING'), bstep(3, 'PENDING'), bstep(4, 'PENDING')], agents: AGENTS, budget: { maxDown: 3, minActiveAgents: undefined }, maxParallel: undefined });
  const b = new PlanBudget({ plan: 'b', busy, steps: [bstep(4, 'PENDING'), bstep(5, 'PENDING')], agents: AGENTS, budget: { maxDown: undefined, minActiveAgents: { attributes: { zone: 'a' }, count: 8 } }, maxParallel: undefined });
  const c = (n: number) => ({ phase: 'r1', name: `agent-${n}`, machine: host(n) });
  assert.deepEqual(a.allows(c(2)), { ok: true });
  a.take(c(2));
  assert.deepEqual(a.allows(c(3)), { ok: true });
  a.take(c(3));
  // max_down 3 is reached by the two started in this pass.
  assert.deepEqual(a.allows(c(4)), { ok: false, reason: 'budget: 3 of max_down 3 machines out (agent-1, agent-2, agent-3)' });
  // Plan b sees a's machines at once: agent-2 is a's now, and a's three machines count as gone for min_active_agents.
  assert.deepEqual(b.allows(c(2)), { ok: false, reason: 'budget: agent-2 is in plan a (two plans never work on the same machine)' });
  // Zone a has 11 active agents; a's three machines and agent-5 itself leave 7.
  assert.deepEqual(b.allows(c(5)), { ok: false, reason: 'budget: starting agent-5 would leave 7 active agents with zone=a, fewer than min_active_agents 8' });
  // Before plan a took agent-2 and agent-3, the same question had room: 11 - 1 - 1 = 9.
  const fresh = new PlanBudget({ plan: 'b', busy: new Map([[machineKey(host(1)), 'a']]), steps: [], agents: AGENTS, budget: { maxDown: undefined, minActiveAgents: { attributes: { zone: 'a' }, count: 8 } }, maxParallel: undefined });
  assert.deepEqual(fresh.allows(c(5)), { ok: true });
});

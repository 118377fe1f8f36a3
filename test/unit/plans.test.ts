/**
 * The plan engine: aggregation as a table (plans.md §2, with Drydock's answers to the three
 * quirks), each strategy, the canary timelines of §4.4, the coordinator's dirty assets, and the
 * operator verbs with the outcomes `/v1/plans` maps to status codes, and what a restart owes
 * its driver (a rerun, stored with the overrides, refused per step by a driver's veto).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { aggregate, AGGREGATION_RULES, type Status } from '../../shared/plans/status.js';
import { newPhase, newPlan, Step, type Phase, type Plan } from '../../shared/plans/plan.js';
import { conflicts, type StrategyName } from '../../shared/plans/strategy.js';
import { coordinate, byPriority } from '../../shared/plans/coordinator.js';
import { applyOverrides, applyReruns, overridesOf, type PlanOverrides } from '../../shared/plans/overrides.js';
import { continuePlan, forceComplete, interruptPlan, planHttpStatus, planInfo, restartElement, startPlan, stopPlan, type RestartVeto } from '../../shared/plans/commands.js';

const S = (...xs: Status[]): Status[] => xs;

test('aggregation: the rule table decides every worked example of plans.md §2', () => {
  const rows: Array<{ row: number | string; children: Status[]; candidates: Status[]; errors?: boolean; interrupted?: boolean; status: Status; rule: string }> = [
    { row: 1, children: S(), candidates: S(), status: 'COMPLETE', rule: 'all-complete' },
    { row: 2, children: S('PENDING'), candidates: S('PENDING'), errors: true, status: 'ERROR', rule: 'errors' },
    { row: 3, children: S('COMPLETE', 'ERROR'), candidates: S(), status: 'ERROR', rule: 'errors' },
    { row: 4, children: S('COMPLETE', 'COMPLETE'), candidates: S(), interrupted: true, status: 'COMPLETE', rule: 'all-complete' },
    { row: 5, children: S('COMPLETE', 'PENDING'), candidates: S(), interrupted: true, status: 'WAITING', rule: 'interrupted' },
    { row: 6, children: S('PENDING', 'PENDING'), candidates: S('PENDING'), status: 'PENDING', rule: 'pending' },
    { row: 7, children: S('PREPARED', 'PENDING'), candidates: S('PREPARED'), status: 'IN_PROGRESS', rule: 'prepared-child' },
    { row: 8, children: S('STARTING', 'PENDING'), candidates: S('STARTING'), status: 'STARTING', rule: 'starting' },
    { row: 9, children: S('STARTED', 'PENDING'), candidates: S('STARTED'), status: 'STARTED', rule: 'started' },
    { row: 10, children: S('COMPLETE', 'PENDING'), candidates: S('PENDING'), status: 'IN_PROGRESS', rule: 'some-complete-pending' },
    { row: 11, children: S('COMPLETE', 'STARTING'), candidates: S('STARTING'), status: 'IN_PROGRESS', rule: 'some-complete-starting' },
    // Quirk: the SDK says PENDING here; work is in flight.
    { row: 11.5, children: S('COMPLETE', 'STARTED'), candidates: S('STARTED'), status: 'IN_PROGRESS', rule: 'some-complete-started' },
    { row: 12, children: S('STARTING', 'PENDING'), candidates: S('STARTING', 'PENDING'), status: 'IN_PROGRESS', rule: 'started-and-pending' },
    { row: 13, children: S('DELAYED', 'DELAYED'), candidates: S('DELAYED', 'DELAYED'), status: 'DELAYED', rule: 'all-delayed' },
    { row: 14, children: S('DELAYED'), candidates: S(), interrupted: true, status: 'WAITING', rule: 'interrupted' },
    { row: 15, children: S('DELAYED', 'PENDING'), candidates: S('DELAYED', 'PENDING'), status: 'PENDING', rule: 'pending' },
    // Quirk: the SDK falls through to ERROR; the remaining work waits out a back-off.
    { row: 16, children: S('COMPLETE', 'DELAYED'), candidates: S('DELAYED'), status: 'DELAYED', rule: 'delayed' },
    { row: 17, children: S('WAITING', 'PENDING'), candidates: S(), status: 'WAITING', rule: 'waiting-child' },
    { row: 19, children: S('COMPLETE', 'WAITING'), candidates: S('WAITING'), status: 'WAITING', rule: 'waiting-candidate' },
    { row: 20, children: S('COMPLETE', 'IN_PROGRESS'), candidates: S('IN_PROGRESS'), status: 'IN_PROGRESS', rule: 'in-progress-candidate' },
    // Quirk: the SDK falls through to ERROR; the interrupted step's task is still coming up.
    { row: 21, children: S('COMPLETE', 'STARTING'), candidates: S(), status: 'IN_PROGRESS', rule: 'running-child' },
    { row: 22, children: S('STARTED', 'PENDING'), candidates: S('STARTED', 'PENDING'), status: 'IN_PROGRESS', rule: 'started-and-pending' },
  ];
  for (const r of rows) {
    const got = aggregate({ children: r.children, candidates: r.candidates, hasErrors: r.errors ?? false, interrupted: r.interrupted ?? false });
    assert.deepEqual(got, { status: r.status, rule: r.rule }, `row ${r.row}`);
  }
  // Every rule but the fallback is exercised by some row, so no rule is dead weight.
  const used = new Set(rows.map((r) => r.rule));
  assert.deepEqual(AGGREGATION_RULES.map((r) => r.id).filter((id) => !used.has(id) && id !== 'unexpected'), []);
});

const step = (name: string, status: Status extends infer T ? T : never = 'PENDING', pod = name): Step =>
  new Step({ name, asset: { pod, tasks: ['server'] }, status: status as 'PENDING' });
const steps = (n: number, prefix = 's'): Step[] => Array.from({ length: n }, (_, i) => step(`${prefix}${i}`));
const names = (xs: readonly { name: string }[]): string[] => xs.map((x) => x.name);
const onePhasePlan = (strategy: StrategyName, ss: Step[], name = 'deploy'): { plan: Plan; phase: Phase } => {
  const phase = newPhase('hello', strategy, ss);
  return { plan: newPlan(name, 'serial', [phase]), phase };
};

test('aggregation through real elements: an interrupted step that is already starting keeps its phase IN_PROGRESS', () => {
  const [a, b] = [step('a', 'COMPLETE'), step('b', 'STARTING')];
  const phase = newPhase('p', 'serial', [a!, b!]);
  b!.interrupt();
  assert.equal(b!.status(), 'STARTING', 'only PENDING/PREPARED steps show WAITING when interrupted');
  assert.deepEqual(phase.explain(), { status: 'IN_PROGRESS', rule: 'running-child' });
  const c = step('c');
  c.interrupt();
  assert.equal(c.status(), 'WAITING');
  assert.equal(newPhase('q', 'serial', [c, step('d')]).status(), 'WAITING');
});

test('serial: the first incomplete step, and it blocks the rest while it fails or is held', () => {
  const ss = steps(3);
  const { plan, phase } = onePhasePlan('serial', ss);
  assert.deepEqual(names(plan.candidates([])), ['s0']);
  ss[0]!.setStatus('STARTING');
  assert.deepEqual(names(plan.candidates([])), ['s0'], 'an in-flight step keeps its place');
  ss[0]!.setStatus('COMPLETE');
  assert.deepEqual(names(plan.candidates([])), ['s1']);
  ss[1]!.interrupt();
  assert.deepEqual(names(plan.candidates([])), [], 'a held step blocks the ones after it');
  ss[1]!.proceed();
  ss[1]!.addError('bad config');
  assert.deepEqual(names(plan.candidates([])), []);
  assert.equal(phase.status(), 'ERROR');
  assert.equal(plan.status(), 'ERROR');
  assert.deepEqual(plan.errors(), ['bad config']);
});

test('serial: a restarted earlier step goes first again instead of running beside the current one', () => {
  const ss = steps(3);
  const { plan } = onePhasePlan('serial', ss);
  ss[0]!.setStatus('COMPLETE');
  ss[1]!.setStatus('STARTING');
  ss[0]!.restart();
  assert.deepEqual(names(plan.candidates([])), ['s0']);
});

test('parallel: every eligible step, skipping done, failed, held, delayed and busy pods', () => {
  const ss = steps(6);
  const { plan, phase } = onePhasePlan('parallel', ss);
  ss[0]!.setStatus('COMPLETE');
  ss[2]!.interrupt();
  ss[3]!.delay(1000);
  assert.deepEqual(names(plan.candidates([{ pod: 's4', tasks: ['server'] }])), ['s1', 's5']);
  assert.deepEqual(names(plan.candidates([{ pod: 's4', tasks: ['sidecar'] }])), ['s1', 's4', 's5'], 'another task of the same pod does not conflict');
  assert.deepEqual(plan.expireDelays(999), []);
  assert.deepEqual(names(plan.expireDelays(1000)), ['s3']);
  assert.deepEqual(names(plan.candidates([])), ['s1', 's3', 's4', 's5']);
  ss[1]!.addError('x');
  assert.deepEqual(names(phase.candidates([])), ['s3', 's4', 's5'], 'the failed step is skipped within its phase');
  assert.deepEqual(names(plan.candidates([])), [], 'but an error anywhere halts the plan until an operator acts');
});

test('dependency: a step runs once everything it names is COMPLETE', () => {
  const [a, b, c] = [step('a'), step('b'), step('c')];
  const phase = newPhase('p', 'dependency', [a!, b!, c!], { after: new Map([['b', ['a']], ['c', ['a', 'b']]]) });
  assert.deepEqual(names(phase.candidates([])), ['a']);
  a!.setStatus('COMPLETE');
  assert.deepEqual(names(phase.candidates([])), ['b']);
  b!.setStatus('COMPLETE');
  assert.deepEqual(names(phase.candidates([])), ['c']);
});

test('conflicts: same pod and a shared task', () => {
  assert.equal(conflicts({ pod: 'p-0', tasks: ['a', 'b'] }, { pod: 'p-0', tasks: ['b'] }), true);
  assert.equal(conflicts({ pod: 'p-0', tasks: ['a'] }, { pod: 'p-0', tasks: ['b'] }), false);
  assert.equal(conflicts({ pod: 'p-0', tasks: ['a'] }, { pod: 'p-1', tasks: ['a'] }), false);
});

/** Drives a canary phase: finishes whatever it offers, records the candidates after each action. */
function canaryTimeline(strategy: StrategyName, n: number, proceeds?: number): string[] {
  const ss = steps(n);
  const phase = newPhase('hello', strategy, ss, proceeds === undefined ? {} : { requiredProceeds: proceeds });
  const plan = newPlan('deploy', 'serial', [phase]);
  const out: string[] = [];
  const look = (): string => {
    const c = names(plan.candidates([]));
    const s = `[${c.join(',')}]`;
    out.push(s);
    return s;
  };
  for (let i = 0; i < 20 && plan.status() !== 'COMPLETE'; i++) {
    const c = plan.candidates([]);
    look();
    if (c.length === 0) {
      assert.equal(phase.status(), 'WAITING', 'a canary phase with nothing to do waits for the operator');
      out.push('continue');
      assert.equal(continuePlan(plan, 'hello').kind, 'done');
    } else {
      for (const s of c) s.setStatus('COMPLETE');
    }
  }
  return out;
}

test('canary: the timelines of plans.md §4.4', () => {
  assert.deepEqual(canaryTimeline('serial-canary', 5),
    ['[]', 'continue', '[s0]', '[]', 'continue', '[s1]', '[s2]', '[s3]', '[s4]']);
  assert.deepEqual(canaryTimeline('canary', 5), canaryTimeline('serial-canary', 5), 'canary is serial-canary');
  assert.deepEqual(canaryTimeline('parallel-canary', 5),
    ['[]', 'continue', '[s0]', '[]', 'continue', '[s1,s2,s3,s4]']);
  assert.deepEqual(canaryTimeline('serial-canary', 5, 3),
    ['[]', 'continue', '[s0]', '[]', 'continue', '[s1]', '[]', 'continue', '[s2]', '[s3]', '[s4]']);
});

test('canary: steps show WAITING until released; interrupt is ignored while in canary', () => {
  const ss = steps(3);
  const { plan, phase } = onePhasePlan('serial-canary', ss);
  assert.deepEqual(ss.map((s) => s.status()), ['WAITING', 'WAITING', 'PENDING']);
  assert.equal(phase.strategy.name, 'serial-canary');
  assert.equal(interruptPlan(plan, 'hello').kind, 'already', 'a waiting canary phase is already held');
  assert.equal(continuePlan(plan, 'hello').kind, 'done');
  assert.deepEqual(ss.map((s) => s.status()), ['PENDING', 'WAITING', 'PENDING']);
  assert.equal(phase.isInterrupted(), false, 'a released canary step is deploying: the phase is not held');
});

test('canary: a plan-level continue releases the waiting canary phase (the SDK answered 208)', () => {
  const ss = steps(3);
  const done = newPhase('first', 'serial', [step('x', 'COMPLETE')]);
  const canary = newPhase('hello', 'serial-canary', ss);
  const plan = newPlan('deploy', 'serial', [done, canary]);
  assert.equal(plan.status(), 'WAITING');
  assert.deepEqual(continuePlan(plan), { kind: 'done', message: 'Received cmd: continue' });
  assert.deepEqual(names(plan.candidates([])), ['s0']);
  assert.equal(continuePlan(plan).kind, 'already', 'nothing waits for the operator while s0 deploys');
  ss[0]!.setStatus('COMPLETE');
  assert.equal(plan.status(), 'WAITING');
  assert.equal(continuePlan(plan).kind, 'done');
  assert.deepEqual(names(plan.candidates([])), ['s1']);
  // A held plan is released first; its canary gate stays shut until the next continue.
  assert.equal(interruptPlan(plan).kind, 'done');
  assert.equal(plan.status(), 'WAITING');
  assert.equal(continuePlan(plan).kind, 'done');
  assert.equal(plan.isInterrupted(), false);
});

test('coordinator: priority order, and two plans never work on the same pod at once', () => {
  const deployStep = step('hello-0', 'STARTING', 'hello-0');
  const deploy = newPlan('deploy', 'serial', [newPhase('hello', 'parallel', [deployStep, step('hello-1', 'PENDING', 'hello-1')])]);
  const recovery = newPlan('recovery', 'parallel', [
    newPhase('hello-0', 'serial', [step('r0', 'PENDING', 'hello-0')]),
    newPhase('hello-2', 'serial', [step('r2', 'PENDING', 'hello-2')]),
  ]);
  const custom = newPlan('backup', 'serial', [newPhase('b', 'serial', [step('b2', 'PENDING', 'hello-2'), step('b3', 'PENDING', 'hello-3')])]);
  assert.deepEqual(byPriority([custom, recovery, deploy]).map((p) => p.name), ['deploy', 'recovery', 'backup']);
  const run = (): string[] => coordinate([custom, recovery, deploy]).map((c) => `${c.plan.name}:${c.step.name}`);
  // hello-0 is STARTING under deploy (dirty): recovery may not touch it; deploy is not blocked by itself.
  // recovery takes hello-2 this cycle, so the custom plan (serial, blocked at b2) gets nothing.
  assert.deepEqual(run(), ['deploy:hello-0', 'deploy:hello-1', 'recovery:r2']);
  // A STARTED step holds no dirty asset, but as a candidate of a higher plan it still claims its pod this cycle.
  deployStep.setStatus('STARTED');
  assert.deepEqual(deploy.dirtyAssets(), []);
  assert.deepEqual(run(), ['deploy:hello-0', 'deploy:hello-1', 'recovery:r2']);
  // Once deploy is done with hello-0, recovery may have it.
  deployStep.setStatus('COMPLETE');
  assert.deepEqual(run(), ['deploy:hello-1', 'recovery:r0', 'recovery:r2']);
  // An interrupted plan neither runs nor holds pods.
  deployStep.setStatus('STARTING');
  assert.deepEqual(deploy.dirtyAssets(), [{ pod: 'hello-0', tasks: ['server'] }]);
  deploy.interrupt();
  assert.deepEqual(run(), ['recovery:r0', 'recovery:r2']);
  recovery.interrupt();
  assert.deepEqual(run(), ['backup:b2']);
});

test('verbs: outcomes and messages as /v1/plans reports them', () => {
  const ss = steps(2);
  const { plan } = onePhasePlan('serial', ss, 'backup');
  plan.interrupt();
  assert.equal(plan.status(), 'WAITING');
  const refusal = (o: ReturnType<typeof startPlan>): [string, number, string] | undefined =>
    o.kind === 'refused' ? [o.error.code, o.error.status, o.error.message] : undefined;
  assert.deepEqual(refusal(startPlan(plan, { 'BAD-NAME': 'x' })), ['PLAN_BAD_PARAMETERS', 400, "Couldn't parse parameters: BAD-NAME is not a valid environment variable name"]);
  assert.deepEqual(refusal(startPlan(plan, { N: 3 })), ['PLAN_BAD_PARAMETERS', 400, "Couldn't parse parameters: the value of N must be a string"]);
  assert.equal(plan.isInterrupted(), true, 'a refused start changes nothing');
  assert.deepEqual(startPlan(plan, { SNAPSHOT: 'nightly' }), { kind: 'done', message: 'Received cmd: start backup with parameters: {"SNAPSHOT":"nightly"}' });
  assert.deepEqual(ss.map((s) => s.parameters), [{ SNAPSHOT: 'nightly' }, { SNAPSHOT: 'nightly' }]);
  assert.equal(plan.isInterrupted(), false);

  assert.deepEqual(refusal(continuePlan(plan, 'nope')), ['PHASE_NOT_FOUND', 404, 'Phase nope not found']);
  assert.deepEqual(refusal(forceComplete(plan, undefined, 's0')), ['PLAN_MISSING_PHASE', 400, 'Missing phase']);
  assert.deepEqual(refusal(forceComplete(plan, 'hello', 'nope')), ['STEP_NOT_FOUND', 404, 'Step nope not found']);
  assert.deepEqual(forceComplete(plan, 'hello', 's0'), { kind: 'done', message: 'Received cmd: forceComplete for Plan: backup, Phase: hello, Step: s0' });
  assert.equal(forceComplete(plan, 'hello', ss[0]!.id).kind, 'already', 'steps are found by id as well as name');
  assert.equal(restartElement(plan, 'hello', 's1').kind, 'already', 'a PENDING step needs no restart');
  assert.equal(restartElement(plan, 'hello', 's0').kind, 'done');
  assert.equal(ss[0]!.status(), 'PENDING');

  assert.equal(interruptPlan(plan).kind, 'done');
  assert.equal(interruptPlan(plan).kind, 'already');
  assert.equal(continuePlan(plan).kind, 'done');
  ss[0]!.setStatus('STARTING');
  assert.equal(continuePlan(plan, 'hello').kind, 'already', 'a running phase needs no continue');

  assert.equal(stopPlan(plan).kind, 'done');
  assert.deepEqual(ss.map((s) => s.status()), ['PENDING', 'PENDING'], 'stop puts every step back to PENDING');
  assert.equal(plan.status(), 'WAITING');

  assert.equal(forceComplete(plan).kind, 'done');
  assert.equal(plan.status(), 'COMPLETE');
  assert.equal(continuePlan(plan).kind, 'already');
  assert.equal(startPlan(plan, {}).kind, 'done');
  assert.equal(plan.status(), 'PENDING', 'start runs a finished plan again');
});

test('restart: every step it reaches must rerun (even a COMPLETE one) until its driver begins the new run', () => {
  type Verb = (plan: Plan) => unknown;
  const rows: Array<{ what: string; statuses: Status[]; verb: Verb; want: Array<[Status, boolean]> }> = [
    { what: 'a COMPLETE step', statuses: S('COMPLETE', 'COMPLETE'), verb: (p) => restartElement(p, 'hello', 's0'), want: [['PENDING', true], ['COMPLETE', false]] },
    { what: 'a step coming up', statuses: S('COMPLETE', 'STARTED'), verb: (p) => restartElement(p, 'hello', 's1'), want: [['COMPLETE', false], ['PENDING', true]] },
    { what: 'a PENDING step (208: nothing to redo)', statuses: S('COMPLETE', 'PENDING'), verb: (p) => restartElement(p, 'hello', 's1'), want: [['COMPLETE', false], ['PENDING', false]] },
    { what: 'a phase', statuses: S('COMPLETE', 'STARTING'), verb: (p) => restartElement(p, 'hello'), want: [['PENDING', true], ['PENDING', true]] },
    { what: 'the plan', statuses: S('COMPLETE', 'COMPLETE'), verb: (p) => restartElement(p), want: [['PENDING', true], ['PENDING', true]] },
    { what: 'stop (the plan held, every step to run again)', statuses: S('COMPLETE', 'STARTED'), verb: (p) => stopPlan(p), want: [['PENDING', true], ['PENDING', true]] },
    { what: 'start of a COMPLETE plan', statuses: S('COMPLETE', 'COMPLETE'), verb: (p) => startPlan(p, {}), want: [['PENDING', true], ['PENDING', true]] },
    { what: 'restart, then forceComplete (the rerun is dropped)', statuses: S('COMPLETE', 'COMPLETE'), verb: (p) => { restartElement(p, 'hello', 's0'); forceComplete(p, 'hello', 's0'); }, want: [['COMPLETE', false], ['COMPLETE', false]] },
  ];
  for (const row of rows) {
    const ss = row.statuses.map((st, i) => step(`s${i}`, st));
    const { plan } = onePhasePlan('serial', ss);
    row.verb(plan);
    assert.deepEqual(ss.map((x) => [x.storedStatus(), x.rerunPending()]), row.want, row.what);
  }
  // A step in ERROR (an error string) stays in ERROR: nothing to rerun.
  const broken = step('s0');
  broken.addError('two tasks share a resource set');
  broken.restart();
  assert.deepEqual([broken.status(), broken.rerunPending()], ['ERROR', false]);
  // The driver begins the new run: no longer owed; a second restart owes it again.
  const s0 = step('s0', 'COMPLETE');
  s0.restart();
  s0.setStatus('STARTING');
  s0.rerunBegun();
  assert.deepEqual([s0.status(), s0.rerunPending()], ['STARTING', false]);
  s0.restart();
  assert.deepEqual([s0.status(), s0.rerunPending()], ['PENDING', true]);
});

test('restart with a driver\'s veto: refused steps are left as they are and named; nothing left to restart is a 409', () => {
  const busy: RestartVeto = (x) => (x.name === 's1' ? 'on_down is running' : undefined);
  const rows: Array<{ what: string; statuses: Status[]; phase?: string; step?: string; outcome: unknown; after: Array<[Status, boolean]> }> = [
    { what: 'the refused step alone', statuses: S('COMPLETE', 'STARTING'), phase: 'hello', step: 's1',
      outcome: { kind: 'refused', code: 'PLAN_RESTART_REFUSED', status: 409, message: 'Restart refused: s1: on_down is running' }, after: [['COMPLETE', false], ['STARTING', false]] },
    { what: 'a phase: the others restart', statuses: S('COMPLETE', 'STARTING'), phase: 'hello',
      outcome: { kind: 'done', message: 'Received cmd: restart for Plan: deploy, Phase: hello, Step: null; not restarted: s1: on_down is running' }, after: [['PENDING', true], ['STARTING', false]] },
    { what: 'the plan: the others restart', statuses: S('COMPLETE', 'STARTING', 'COMPLETE'),
      outcome: { kind: 'done', message: 'Received cmd: restart for Plan: deploy, Phase: null, Step: null; not restarted: s1: on_down is running' }, after: [['PENDING', true], ['STARTING', false], ['PENDING', true]] },
    { what: 'a phase whose other step is PENDING: nothing to do but the refused one', statuses: S('PENDING', 'STARTING'), phase: 'hello',
      outcome: { kind: 'refused', code: 'PLAN_RESTART_REFUSED', status: 409, message: 'Restart refused: s1: on_down is running' }, after: [['PENDING', false], ['STARTING', false]] },
    { what: 'a step the veto lets through', statuses: S('COMPLETE', 'STARTING'), phase: 'hello', step: 's0',
      outcome: { kind: 'done', message: 'Received cmd: restart for Plan: deploy, Phase: hello, Step: s0' }, after: [['PENDING', true], ['STARTING', false]] },
  ];
  for (const row of rows) {
    const ss = row.statuses.map((st, i) => step(`s${i}`, st));
    const { plan } = onePhasePlan('parallel', ss);
    const o = restartElement(plan, row.phase, row.step, busy);
    const shown = o.kind === 'refused' ? { kind: o.kind, code: o.error.code, status: o.error.status, message: o.error.message } : o;
    assert.deepEqual(shown, row.outcome, row.what);
    assert.deepEqual(ss.map((x) => [x.storedStatus(), x.rerunPending()]), row.after, row.what);
  }
});

test('overrides: a restart not yet carried out is stored and laid back over a rebuilt plan that found the step COMPLETE', () => {
  const build = (): { plan: Plan; ss: Step[] } => {
    const ss = [step('s0', 'COMPLETE'), step('s1', 'COMPLETE')];
    return { plan: newPlan('deploy', 'serial', [newPhase('hello', 'serial', ss)]), ss };
  };
  const before = build();
  assert.deepEqual(overridesOf(before.plan).steps, { 'hello/s0': { interrupted: false, forced: false }, 'hello/s1': { interrupted: false, forced: false } }, 'nothing owed: nothing written');
  assert.equal(restartElement(before.plan, 'hello', 's1').kind, 'done');
  const stored = JSON.parse(JSON.stringify(overridesOf(before.plan))) as PlanOverrides;
  assert.deepEqual(stored.steps['hello/s1'], { interrupted: false, forced: false, rerun: true });

  const after = build();
  applyOverrides(after.plan, stored);
  assert.deepEqual(after.ss.map((x) => [x.status(), x.rerunPending()]), [['COMPLETE', false], ['PENDING', true]]);
  // A new target keeps only the reruns (and the plan's hold, which the driver lays itself).
  const retargeted = build();
  applyReruns(retargeted.plan, { ...stored, steps: { ...stored.steps, 'hello/s0': { interrupted: true, forced: true } } });
  assert.deepEqual(retargeted.ss.map((x) => [x.status(), x.rerunPending(), x.isInterrupted()]), [['COMPLETE', false, false], ['PENDING', true, false]]);
  // Once the driver has begun the new run, nothing is owed any more.
  after.ss[1]!.setStatus('STARTING');
  after.ss[1]!.rerunBegun();
  assert.equal(overridesOf(after.plan).steps['hello/s1']?.rerun, undefined);
});

test('plan JSON and HTTP status: the SDK field names, the plan status read first', () => {
  const ss = [step('hello-0:[server]', 'COMPLETE'), step('hello-1:[server]')];
  ss[1]!.note = 'declined: no agent without maintenance has room';
  const { plan } = onePhasePlan('serial', ss);
  const info = planInfo(plan);
  assert.deepEqual(Object.keys(info), ['phases', 'errors', 'strategy', 'status']);
  assert.equal(info.status, 'IN_PROGRESS');
  assert.equal(info.strategy, 'serial');
  assert.deepEqual(Object.keys(info.phases[0]!), ['id', 'name', 'steps', 'strategy', 'status']);
  assert.deepEqual(info.phases[0]!.steps.map((s) => [s.name, s.status]), [['hello-0:[server]', 'COMPLETE'], ['hello-1:[server]', 'PENDING']]);
  assert.match(info.phases[0]!.steps[1]!.message, /declined: no agent without maintenance has room$/);
  assert.deepEqual([planHttpStatus('COMPLETE'), planHttpStatus('ERROR'), planHttpStatus('WAITING'), planHttpStatus('DELAYED')], [200, 417, 202, 202]);
});

test('overrides: the operator\'s decisions survive a rebuilt plan (a restart never resumes a paused rollout)', () => {
  const build = (done: string[]): { plan: Plan; ss: Step[] } => {
    const ss = steps(5).map((x) => (done.includes(x.name) ? step(x.name, 'COMPLETE') : x));
    return { plan: newPlan('deploy', 'serial', [newPhase('hello', 'serial-canary', ss)]), ss };
  };
  const before = build([]);
  assert.equal(continuePlan(before.plan, 'hello').kind, 'done');
  before.ss[0]!.setStatus('COMPLETE');
  assert.equal(forceComplete(before.plan, 'hello', 's4').kind, 'done');
  assert.equal(interruptPlan(before.plan).kind, 'done');
  const stored = JSON.parse(JSON.stringify(overridesOf(before.plan))) as ReturnType<typeof overridesOf>;

  // Rebuilt from task state alone, the canary would pick s1 and s2 and the plan would not be held.
  const fresh = build(['s0']);
  assert.equal(fresh.plan.isInterrupted(), false);
  assert.equal(fresh.ss[4]!.status(), 'PENDING');

  const after = build(['s0']);
  applyOverrides(after.plan, stored);
  assert.equal(after.plan.isInterrupted(), true, 'the pause holds');
  assert.equal(after.ss[4]!.status(), 'COMPLETE', 'the force-complete holds');
  assert.deepEqual(after.ss.map((x) => x.status()), ['COMPLETE', 'WAITING', 'PENDING', 'PENDING', 'COMPLETE']);
  assert.equal(continuePlan(after.plan).kind, 'done');
  assert.deepEqual(names(after.plan.candidates([])), [], 'the canary still waits for its second continue');
  assert.equal(continuePlan(after.plan).kind, 'done');
  assert.deepEqual(names(after.plan.candidates([])), ['s1']);
  after.ss[1]!.setStatus('COMPLETE');
  assert.deepEqual(names(after.plan.candidates([])), ['s2'], 'then the rest follow serially');
  assert.deepEqual(overridesOf(after.plan).phases, { hello: { interrupted: false, canary: ['s0', 's1'] } });
});

test('/v1/plans: paths, verbs, status codes and bodies', async () => {
  const { plansApi } = await import('../../shared/plans/api.js');
  const ss = steps(2);
  const deploy = newPlan('deploy', 'serial', [newPhase('hello', 'serial', ss)]);
  const backup = newPlan('backup', 'serial', [newPhase('b', 'serial', [step('b0')])]);
  backup.interrupt();
  const plans = [backup, deploy];
  const call = (method: string, path: string, query = '', body = ''): { status: number; body: unknown } => {
    // Segments as the daemons' one reading of a target gives them (shared/paths.ts).
    const a = plansApi(plans, { method, segments: path.split('/').filter((p) => p !== ''), query: new URLSearchParams(query), body });
    return { status: a.status, body: 'json' in a ? a.json : a.text };
  };
  assert.deepEqual(call('GET', ''), { status: 200, body: ['deploy', 'backup'] }, 'listed in priority order');
  assert.equal(call('GET', '/deploy').status, 202);
  assert.deepEqual(call('GET', '/nope'), { status: 404, body: 'Plan nope not found' });
  assert.deepEqual(call('POST', '/nope/continue'), { status: 404, body: 'Plan nope not found' });
  assert.equal(call('POST', '/deploy/explode').status, 404);
  assert.equal(call('GET', '/deploy/continue').status, 405);
  assert.equal(call('DELETE', '/deploy').status, 405);
  assert.deepEqual(call('GET', '/a b'), { status: 404, body: 'Plan a b not found' }, 'a name is taken as decoded, never decoded again');
  assert.deepEqual(call('GET', '/%41'), { status: 404, body: 'Plan %41 not found' });

  assert.deepEqual(call('POST', '/deploy/continue'), { status: 208, body: 'Command has already been reported or completed' });
  assert.deepEqual(call('POST', '/deploy/interrupt'), { status: 200, body: { message: 'Received cmd: interrupt' } });
  assert.equal(deploy.isInterrupted(), true);
  assert.deepEqual(call('POST', '/deploy/interrupt'), { status: 208, body: 'Command has already been reported or completed' });
  assert.deepEqual(call('POST', '/deploy/continue', 'phase=nope'), { status: 404, body: 'Phase nope not found' });
  assert.deepEqual(call('POST', '/deploy/forceComplete', 'step=s0'), { status: 400, body: 'Missing phase' });
  assert.deepEqual(call('POST', '/deploy/forceComplete', `phase=hello&step=${ss[0]!.id}`),
    { status: 200, body: { message: `Received cmd: forceComplete for Plan: deploy, Phase: hello, Step: ${ss[0]!.id}` } });
  assert.deepEqual(call('POST', '/deploy/forceComplete', 'phase=hello'), { status: 200, body: { message: 'Received cmd: forceComplete for Plan: deploy, Phase: hello, Step: null' } });
  assert.deepEqual(call('GET', '/deploy').status, 200, 'a COMPLETE plan answers 200');
  ss[1]!.addError('config rejected');
  assert.equal(call('GET', '/deploy').status, 417);
  assert.deepEqual((call('GET', '/deploy').body as { errors: string[] }).errors, ['config rejected']);

  for (const bad of ['{', '[]', '"x"', '{"A-B":"1"}', '{"N":1}', `{"x":${'['.repeat(100)}${']'.repeat(100)}}`]) {
    const r = call('POST', '/backup/start', '', bad);
    assert.equal(r.status, 400, bad);
    assert.match(String(r.body), /^Couldn't parse parameters: /);
    assert.equal(backup.isInterrupted(), true, `a refused start changes nothing (${bad})`);
  }
  assert.deepEqual(call('POST', '/backup/start', '', '{"SNAPSHOT":"nightly"}'),
    { status: 200, body: { message: 'Received cmd: start backup with parameters: {"SNAPSHOT":"nightly"}' } });
  assert.equal(backup.isInterrupted(), false);
  assert.deepEqual(call('POST', '/backup/stop'), { status: 200, body: { message: 'Received cmd: stop' } });
  assert.equal(call('POST', '/backup/start').status, 200, 'an empty body starts with no parameters');
  assert.deepEqual(call('POST', '/backup/restart', 'phase=b&step=b0'), { status: 208, body: 'Command has already been reported or completed' });
});

test('/v1/plans: hostile paths, queries and bodies never throw and never answer 5xx', async () => {
  const { plansApi } = await import('../../shared/plans/api.js');
  const { normalizePath, segmentsBelow } = await import('../../shared/paths.js');
  const plans = [newPlan('deploy', 'serial', [newPhase('hello', 'serial-canary', steps(3))])];
  let seed = Number(process.env.DRYDOCK_FUZZ_SEED ?? 11);
  const rand = (n: number): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed % n;
  };
  const pieces = ['deploy', 'hello', 's0', '%', '%ZZ', '..', '', 'start', 'continue', 'restart', 'forceComplete', 'interrupt', 'stop', '\u0000', '🙂', 'constructor', '__proto__'];
  const bodies = ['', '{}', 'null', '{"a":"b"}', '{"__proto__":{"x":"1"}}', '[', '{"A":{"B":"c"}}', '1e999', '"\\ud800"', '{"A":"b","A":"c"}'];
  for (let i = 0; i < 2000; i++) {
    const path = Array.from({ length: rand(4) }, () => pieces[rand(pieces.length)]).join('/');
    const query = new URLSearchParams([['phase', pieces[rand(pieces.length)]!], ['step', pieces[rand(pieces.length)]!]]);
    const method = ['GET', 'POST', 'PUT'][rand(3)]!;
    // Through the daemons' one reading of the target, as a request gets there: a refusal is its 400.
    const read = normalizePath(`/v1/plans/${path}`);
    if (!read.ok) {
      assert.equal(read.error.status, 400, `/${path}`);
      continue;
    }
    // `..` may climb out of /v1/plans: another route's business.
    const below = segmentsBelow(read.target, ['v1', 'plans']);
    if (below === undefined) continue;
    const a = plansApi(plans, { method, segments: below, query, body: bodies[rand(bodies.length)]! });
    assert.ok(a.status >= 200 && a.status < 500, `${method} /${path}?${query} answered ${a.status}`);
  }
});

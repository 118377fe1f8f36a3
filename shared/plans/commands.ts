/**
 * The operator's verbs on a plan (start, stop, continue, interrupt, forceComplete, restart) with
 * the outcomes `/v1/plans` turns into status codes, and the plan's JSON. Both daemons that run
 * plans answer through these, so one CLI speaks to both.
 */
import { CanaryStrategy, type StrategyName } from './strategy.js';
import { isRunning, type Status } from './status.js';
import { Phase, Step, type Plan } from './plan.js';
import { fail, type DrydockError } from '../errors.js';

/** What a verb did: `done` (200), `already` (208: nothing to change), or why it could not (404/400). */
export type Outcome =
  | { readonly kind: 'done'; readonly message: string }
  | { readonly kind: 'already' }
  | { readonly kind: 'refused'; readonly error: DrydockError };

const refused = (error: DrydockError): Outcome => ({ kind: 'refused', error });

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

function findPhase(plan: Plan, ref: string): Phase | Outcome {
  return plan.child(ref) ?? refused(fail('PHASE_NOT_FOUND', ref));
}

/** The element a phase/step query names: the plan, one phase, or one step of one phase. */
function target(plan: Plan, phaseRef: string | undefined, stepRef: string | undefined): Plan | Phase | Step | Outcome {
  if (phaseRef === undefined) return stepRef === undefined ? plan : refused(fail('PLAN_MISSING_PHASE'));
  const phase = findPhase(plan, phaseRef);
  if ('kind' in phase) return phase;
  if (stepRef === undefined) return phase;
  return phase.child(stepRef) ?? refused(fail('STEP_NOT_FOUND', stepRef));
}

function label(plan: Plan, phaseRef: string | undefined, stepRef: string | undefined): string {
  return `Plan: ${plan.name}, Phase: ${phaseRef ?? 'null'}, Step: ${stepRef ?? 'null'}`;
}

/**
 * `start` with parameters: each becomes an environment variable of the tasks the plan's steps
 * launch. A COMPLETE plan is restarted first, so `start` runs a finished custom plan again.
 */
export function startPlan(plan: Plan, parameters: Readonly<Record<string, unknown>>): Outcome {
  const entries: Array<[string, string]> = [];
  for (const [key, value] of Object.entries(parameters)) {
    if (!ENV_NAME.test(key)) return refused(fail('PLAN_BAD_PARAMETERS', `${key} is not a valid environment variable name`));
    if (typeof value !== 'string') return refused(fail('PLAN_BAD_PARAMETERS', `the value of ${key} must be a string`));
    entries.push([key, value]);
  }
  // fromEntries defines own properties, so a parameter named __proto__ is a parameter, not a prototype.
  const env: Record<string, string> = Object.fromEntries(entries);
  for (const step of plan.steps()) step.parameters = { ...step.parameters, ...env };
  if (plan.status() === 'COMPLETE') plan.restart();
  plan.proceed();
  return { kind: 'done', message: `Received cmd: start ${plan.name} with parameters: ${JSON.stringify(env)}` };
}

/** `stop`: hold the plan and put every step back to PENDING; `start` or `continue` begins again. */
export function stopPlan(plan: Plan): Outcome {
  plan.interrupt();
  plan.restart();
  return { kind: 'done', message: 'Received cmd: stop' };
}

/**
 * `continue`. With a phase: release each named phase (for a canary, the next held step). Without
 * one: release the plan if it is held, and otherwise release the first canary phase that waits for
 * the operator. The SDK answered 208 there and required `?phase=`; an operator who sees the plan
 * WAITING and says continue means it.
 */
export function continuePlan(plan: Plan, phaseRef?: string): Outcome {
  if (phaseRef !== undefined) {
    const phase = findPhase(plan, phaseRef);
    if ('kind' in phase) return phase;
    if (isRunning(phase.status()) || phase.status() === 'COMPLETE') return { kind: 'already' };
    phase.proceed();
    return { kind: 'done', message: 'Received cmd: continue' };
  }
  if (plan.status() === 'COMPLETE') return { kind: 'already' };
  if (plan.isInterrupted()) {
    plan.proceed();
    return { kind: 'done', message: 'Received cmd: continue' };
  }
  const waiting = plan.phases.find((p) => p.strategy instanceof CanaryStrategy && p.strategy.inCanary() && p.isInterrupted());
  if (waiting === undefined) return { kind: 'already' };
  waiting.proceed();
  return { kind: 'done', message: 'Received cmd: continue' };
}

/** `interrupt`: hold the plan or a phase; work already launched finishes, nothing new starts. */
export function interruptPlan(plan: Plan, phaseRef?: string): Outcome {
  const element = phaseRef === undefined ? plan : findPhase(plan, phaseRef);
  if ('kind' in element) return element;
  if (element.isInterrupted() || element.status() === 'COMPLETE') return { kind: 'already' };
  element.interrupt();
  return { kind: 'done', message: 'Received cmd: interrupt' };
}

/** `forceComplete` of the plan, a phase or a step: marked COMPLETE without doing the work. */
export function forceComplete(plan: Plan, phaseRef?: string, stepRef?: string): Outcome {
  const element = target(plan, phaseRef, stepRef);
  if ('kind' in element) return element;
  if (element.status() === 'COMPLETE') return { kind: 'already' };
  element.forceComplete();
  return { kind: 'done', message: `Received cmd: forceComplete for ${label(plan, phaseRef, stepRef)}` };
}

/**
 * Whether a driver lets a restart rerun this step: undefined lets it, a text says why not (a
 * maintenance step whose on_down is running). The plan engine itself refuses nothing.
 */
export type RestartVeto = (step: Step) => string | undefined;

/** The steps an element stands for: itself, or every step below it. */
function stepsOf(element: Plan | Phase | Step): readonly Step[] {
  if (element instanceof Step) return [element];
  return element instanceof Phase ? element.steps : element.steps();
}

/**
 * `restart` of the plan, a phase or a step: released and put back to PENDING (clearing back-off),
 * each step marked to do its work again (`Step.rerunPending`). A step the driver's `veto` refuses
 * is left as it is and named with its reason in the message; when no step is left to restart
 * (all refused, or refused and PENDING), nothing changes and the answer is 409 with the reasons.
 */
export function restartElement(plan: Plan, phaseRef?: string, stepRef?: string, veto?: RestartVeto): Outcome {
  const element = target(plan, phaseRef, stepRef);
  if ('kind' in element) return element;
  if (element.status() === 'PENDING') return { kind: 'already' };
  const refusals = new Map<Step, string>();
  if (veto !== undefined) {
    for (const step of stepsOf(element)) {
      const why = veto(step);
      if (why !== undefined) refusals.set(step, why);
    }
  }
  const why = [...refusals].map(([step, reason]) => `${step.name}: ${reason}`).join('; ');
  if (refusals.size === 0) {
    element.proceed();
    element.restart();
  } else {
    const rest = stepsOf(element).filter((s) => !refusals.has(s));
    if (rest.every((s) => s.status() === 'PENDING')) return refused(fail('PLAN_RESTART_REFUSED', why));
    // Only a parent gets here (a lone refused step has nothing left): as without refusals, the
    // parent is released and its other steps restarted.
    element.proceed();
    for (const s of rest) s.restart();
  }
  const message = `Received cmd: restart for ${label(plan, phaseRef, stepRef)}`;
  return { kind: 'done', message: refusals.size === 0 ? message : `${message}; not restarted: ${why}` };
}

/** HTTP status of `GET /v1/plans/<plan>`: 200 when COMPLETE, 417 on ERROR, 202 while anything is left. */
export function planHttpStatus(status: Status): 200 | 202 | 417 {
  return status === 'COMPLETE' ? 200 : status === 'ERROR' ? 417 : 202;
}

export interface StepInfo { id: string; name: string; status: Status; message: string }
export interface PhaseInfo { id: string; name: string; steps: StepInfo[]; strategy: StrategyName; status: Status }
export interface PlanInfo { phases: PhaseInfo[]; errors: string[]; strategy: StrategyName; status: Status }

/**
 * The plan as `/v1/plans/<plan>` shows it (the SDK's field names). The plan's status is read
 * before its phases, so a render racing with progress never shows a plan ahead of its phases.
 */
export function planInfo(plan: Plan): PlanInfo {
  const status = plan.status();
  return {
    phases: plan.phases.map((phase) => ({
      id: phase.id,
      name: phase.name,
      steps: phase.steps.map((step) => {
        const s = step.status();
        // A held step says what it waits for, unless its driver said something more precise.
        const note = step.note !== '' ? step.note : s === 'WAITING' ? 'held until an operator continues' : '';
        return { id: step.id, name: step.name, status: s, message: `step ${step.name} [${step.id}] with status: ${s}${note ? `: ${note}` : ''}` };
      }),
      strategy: phase.strategy.name,
      status: phase.status(),
    })),
    errors: plan.errors(),
    strategy: plan.strategy.name,
    status,
  };
}

/**
 * Operator decisions on a plan, as plain data a driver can store and lay back over a plan it
 * rebuilt after a restart. The SDK rebuilt plans fresh and lost them, so a restarted scheduler
 * silently resumed a rollout the operator had paused; Drydock keeps them.
 */
import { CanaryStrategy } from './strategy.js';
import type { Plan } from './plan.js';

export interface PlanOverrides {
  /** The plan's own interrupted flag. */
  readonly interrupted: boolean;
  /** By phase name: its own flag (a canary's wrapped strategy's) and, for a canary, which steps are the canary. */
  readonly phases: Readonly<Record<string, { readonly interrupted: boolean; readonly canary?: readonly string[] }>>;
  /**
   * By `phase/step` name: held by the operator (or a canary gate), forced COMPLETE, and restarted
   * with the new run not yet begun (`rerun`, written only when true: records from before it read
   * as false).
   */
  readonly steps: Readonly<Record<string, StepOverrides>>;
}

/** One step's stored decisions. */
export interface StepOverrides {
  readonly interrupted: boolean;
  readonly forced: boolean;
  readonly rerun?: boolean;
}

/** What the operator has decided on this plan so far. */
export function overridesOf(plan: Plan): PlanOverrides {
  const phases: Record<string, { interrupted: boolean; canary?: string[] }> = {};
  const steps: Record<string, StepOverrides> = {};
  for (const phase of plan.phases) {
    const strategy = phase.strategy;
    phases[phase.name] = strategy instanceof CanaryStrategy
      ? { interrupted: strategy.inner.isInterrupted(), canary: strategy.canarySteps() }
      : { interrupted: strategy.isInterrupted() };
    for (const step of phase.steps) {
      steps[`${phase.name}/${step.name}`] = { interrupted: step.isInterrupted(), forced: step.wasForced(), ...(step.rerunPending() ? { rerun: true } : {}) };
    }
  }
  return { interrupted: plan.strategy.isInterrupted(), phases, steps };
}

/**
 * Lay stored decisions over a freshly built plan. Elements are matched by name (ids are new on
 * every build); phases and steps the stored record does not know keep what the build gave them.
 */
export function applyOverrides(plan: Plan, overrides: PlanOverrides): void {
  if (overrides.interrupted) plan.interrupt(); else plan.proceed();
  for (const phase of plan.phases) {
    const stored = overrides.phases[phase.name];
    if (stored === undefined) continue;
    const strategy = phase.strategy;
    const flagged = strategy instanceof CanaryStrategy ? strategy.inner : strategy;
    if (stored.interrupted) flagged.interrupt(); else flagged.proceed();
    if (strategy instanceof CanaryStrategy && stored.canary !== undefined) strategy.restoreCanary(stored.canary);
    for (const step of phase.steps) {
      const s = overrides.steps[`${phase.name}/${step.name}`];
      if (s === undefined) continue;
      if (s.interrupted) step.interrupt(); else step.proceed();
      // A restart not yet carried out wins over what the rebuilt step found running.
      if (s.rerun === true) step.restart();
      else if (s.forced && step.status() !== 'COMPLETE') step.forceComplete();
    }
  }
}

/**
 * Lay only the restarts not yet carried out over a freshly built plan: a driver that starts a new
 * rollout (a new target) drops the other decisions but still owes the operator those reruns.
 */
export function applyReruns(plan: Plan, overrides: PlanOverrides): void {
  for (const phase of plan.phases) {
    for (const step of phase.steps) if (overrides.steps[`${phase.name}/${step.name}`]?.rerun === true) step.restart();
  }
}

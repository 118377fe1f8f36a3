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
  /** By `phase/step` name: held by the operator (or a canary gate), forced COMPLETE. */
  readonly steps: Readonly<Record<string, { readonly interrupted: boolean; readonly forced: boolean }>>;
}

/** What the operator has decided on this plan so far. */
export function overridesOf(plan: Plan): PlanOverrides {
  const phases: Record<string, { interrupted: boolean; canary?: string[] }> = {};
  const steps: Record<string, { interrupted: boolean; forced: boolean }> = {};
  for (const phase of plan.phases) {
    const strategy = phase.strategy;
    phases[phase.name] = strategy instanceof CanaryStrategy
      ? { interrupted: strategy.inner.isInterrupted(), canary: strategy.canarySteps() }
      : { interrupted: strategy.isInterrupted() };
    for (const step of phase.steps) steps[`${phase.name}/${step.name}`] = { interrupted: step.isInterrupted(), forced: step.wasForced() };
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
      if (s.forced && step.status() !== 'COMPLETE') step.forceComplete();
    }
  }
}

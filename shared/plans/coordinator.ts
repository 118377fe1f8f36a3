/**
 * The coordinator: which steps of all plans run now. Plans are asked in priority order, and each
 * takes the pods it is changing out of reach of the plans after it, so two plans never work on the
 * same pod at once (plans.md §5).
 */
import type { Plan, Step } from './plan.js';
import type { Asset } from './strategy.js';

/**
 * Priority by plan name; custom plans come last in the order they were declared. `maintenance`
 * (Drydock's own: vacating machines before a window) ranks after `decommission`, since moving a pod
 * that is being removed is wasted work, and before custom plans, since a maintenance window has a
 * start time and a custom plan does not.
 */
export const PLAN_PRIORITY: readonly string[] = ['deploy', 'recovery', 'decommission', 'maintenance'];

/** Plans sorted by priority; the sort is stable, so custom plans keep their declared order. */
export function byPriority(plans: readonly Plan[]): Plan[] {
  const rank = (p: Plan): number => {
    const i = PLAN_PRIORITY.indexOf(p.name);
    return i === -1 ? PLAN_PRIORITY.length : i;
  };
  return [...plans].sort((a, b) => rank(a) - rank(b));
}

export interface Candidate {
  readonly plan: Plan;
  readonly step: Step;
}

/**
 * The steps to work on in this cycle, in priority order. Interrupted plans neither run nor hold
 * pods; a plan is never blocked by pods its own steps are changing.
 */
export function coordinate(plans: readonly Plan[]): Candidate[] {
  const ordered = byPriority(plans).filter((p) => !p.isInterrupted());
  const dirty: Array<{ owner: Plan; asset: Asset }> = ordered.flatMap((p) => p.dirtyAssets().map((asset) => ({ owner: p, asset })));
  const out: Candidate[] = [];
  for (const plan of ordered) {
    // A plan's own dirty assets come from its own in-flight steps, which must not block it.
    const relevant = dirty.filter((d) => d.owner !== plan).map((d) => d.asset);
    for (const step of plan.candidates(relevant)) {
      out.push({ plan, step });
      if (step.asset) dirty.push({ owner: plan, asset: step.asset });
    }
  }
  return out;
}

/**
 * The waves of a maintenance plan: which of its machines may be out of service at the same time,
 * in the order the plan takes them, read from its spec and selection before it exists (the impact
 * preview, `POST /drydock/v1/preview` with `maintenance_plan`). Pure.
 *
 * Within a phase, `serial` takes one machine at a time and `parallel` as many as `max_parallel`
 * and the budget's `max_down` allow (all of the phase without either); a canary phase first takes
 * its canary steps one by one (DEFAULT_CANARY_PROCEEDS), then the rest as its strategy says. A
 * `serial` plan runs its phases one after the other; a `parallel` plan runs them side by side, so
 * its waves are the phases' n-th waves together, cut again by `max_down`. The budget's
 * `min_active_agents` can only hold a step back, never add one to a wave, so it is not modelled.
 */

import type { MachineId } from '../../shared/machine.js';
import { DEFAULT_CANARY_PROCEEDS } from '../../shared/plans/strategy.js';
import type { MachineSelection, MaintenancePlanSpec } from './spec.js';

/** Machines that may be out together, and the phases they belong to. */
export interface Wave {
  readonly phases: readonly string[];
  readonly machines: readonly MachineId[];
}

/** What the waves depend on of a spec. */
export type WaveSpec = Pick<MaintenancePlanSpec, 'strategy' | 'phaseStrategy' | 'maxParallel' | 'budget'>;

function chunks<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** The waves of a plan, in order. */
export function planWaves(spec: WaveSpec, selection: MachineSelection): Wave[] {
  const maxDown = spec.budget.maxDown ?? Infinity;
  const parallel = spec.phaseStrategy === 'parallel' || spec.phaseStrategy === 'parallel-canary';
  const canary = spec.phaseStrategy.endsWith('canary');
  const perPhase = selection.phases.map((p) => {
    const held = canary ? p.machines.slice(0, DEFAULT_CANARY_PROCEEDS) : [];
    const rest = p.machines.slice(held.length);
    const size = parallel ? Math.max(1, Math.min(spec.maxParallel ?? Infinity, maxDown, rest.length)) : 1;
    return [...held.map((m) => [m]), ...chunks(rest, size)].map((machines) => ({ phases: [p.name], machines }));
  });
  if (spec.strategy === 'serial') return perPhase.flat();
  // Side by side: the n-th wave of every phase at once, as many machines as max_down allows.
  const out: Wave[] = [];
  const rounds = Math.max(0, ...perPhase.map((w) => w.length));
  for (let n = 0; n < rounds; n++) {
    const together = perPhase.flatMap((w) => (w[n] === undefined ? [] : [w[n] as Wave]));
    const machines = together.flatMap((w) => w.machines.map((m) => ({ m, phase: w.phases[0] as string })));
    for (const part of chunks(machines, Number.isFinite(maxDown) ? maxDown : Math.max(1, machines.length))) {
      out.push({ phases: [...new Set(part.map((x) => x.phase))], machines: part.map((x) => x.m) });
    }
  }
  return out;
}

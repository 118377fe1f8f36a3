/**
 * Strategies: which children of a plan or phase may be worked on now. Each holds its parent's
 * interrupted flag; an interrupted strategy offers nothing.
 */
import type { Status } from './status.js';

/** A pod instance and the task names a step launches: two steps conflict on a shared task of one pod. */
export interface Asset {
  readonly pod: string;
  readonly tasks: readonly string[];
}

export function conflicts(a: Asset, b: Asset): boolean {
  return a.pod === b.pod && a.tasks.some((t) => b.tasks.includes(t));
}

/** What a strategy sees of a child (a phase or a step). */
export interface Child {
  readonly name: string;
  status(): Status;
  isInterrupted(): boolean;
  /** For steps, the pod and tasks they act on; parents have none. */
  readonly asset?: Asset | undefined;
  interrupt(): void;
  proceed(): void;
}

export type StrategyName = 'serial' | 'parallel' | 'serial-canary' | 'canary' | 'parallel-canary' | 'dependency' | 'dependency-canary';

export interface Strategy {
  readonly name: StrategyName;
  /** Children that may be worked on now, in order, given the assets other work holds. */
  candidates(children: readonly Child[], dirty: readonly Asset[]): Child[];
  isInterrupted(): boolean;
  interrupt(): void;
  proceed(): void;
}

/** A child may be worked on unless it is done, failed, interrupted, or its pod is busy elsewhere. */
export function isEligible(child: Child, dirty: readonly Asset[]): boolean {
  const status = child.status();
  if (status === 'COMPLETE' || status === 'ERROR' || child.isInterrupted()) return false;
  const asset = child.asset;
  return asset === undefined || !dirty.some((d) => conflicts(asset, d));
}

abstract class Interruptible {
  private interrupted = false;
  isInterrupted(): boolean { return this.interrupted; }
  interrupt(): void { this.interrupted = true; }
  proceed(): void { this.interrupted = false; }
}

/**
 * One at a time, in order: the first child that is not COMPLETE, if it is eligible. The order is
 * read on every call (the SDK freezes it on first use, so a restarted earlier step would run
 * beside the current one); a restarted earlier child simply becomes the first again.
 */
export class SerialStrategy extends Interruptible implements Strategy {
  readonly name = 'serial' as const;
  candidates(children: readonly Child[], dirty: readonly Asset[]): Child[] {
    if (this.isInterrupted()) return [];
    const first = children.find((c) => c.status() !== 'COMPLETE');
    return first !== undefined && isEligible(first, dirty) ? [first] : [];
  }
}

/** Every eligible child at once. */
export class ParallelStrategy extends Interruptible implements Strategy {
  readonly name = 'parallel' as const;
  candidates(children: readonly Child[], dirty: readonly Asset[]): Child[] {
    if (this.isInterrupted()) return [];
    return children.filter((c) => isEligible(c, dirty));
  }
}

/**
 * An explicit graph: a child is a candidate when it is eligible and every child it depends on
 * (by name) is COMPLETE. Dependencies are not followed transitively; list each one.
 */
export class DependencyStrategy extends Interruptible implements Strategy {
  readonly name = 'dependency' as const;
  constructor(private readonly after: ReadonlyMap<string, readonly string[]>) { super(); }
  candidates(children: readonly Child[], dirty: readonly Asset[]): Child[] {
    if (this.isInterrupted()) return [];
    const byName = new Map(children.map((c) => [c.name, c]));
    return children.filter((c) =>
      isEligible(c, dirty) && (this.after.get(c.name) ?? []).every((d) => byName.get(d)?.status() === 'COMPLETE'));
  }
}

/** Default number of `continue`s a canary phase needs: one to launch the first step, one to release the rest. */
export const DEFAULT_CANARY_PROCEEDS = 2;

/**
 * Canary: the first N pending steps are held (shown WAITING) and each `continue` releases the next
 * one; once every canary step is released, the wrapped strategy takes over. The phase reads as
 * interrupted while it waits for the operator and not while a released canary step is deploying.
 */
export class CanaryStrategy implements Strategy {
  readonly name: StrategyName;
  private canary: Child[];

  constructor(readonly inner: Strategy, private readonly steps: readonly Child[], requiredProceeds = DEFAULT_CANARY_PROCEEDS) {
    this.name = inner.name === 'serial' ? 'serial-canary' : `${inner.name}-canary` as StrategyName;
    this.canary = steps.filter((s) => s.status() === 'PENDING' || s.isInterrupted()).slice(0, requiredProceeds);
    for (const s of this.canary) s.interrupt();
  }

  /** Whether an operator `continue` is still needed before the wrapped strategy runs. */
  inCanary(): boolean { return this.canary.some((s) => s.isInterrupted()); }

  /** Names of the canary steps, held or released: what a restarted driver must restore. */
  canarySteps(): string[] { return this.canary.map((s) => s.name); }

  /**
   * Make these steps the canary again after a restart (the construction picks the first pending
   * ones, which differ once some have completed). Steps it no longer holds are released; whether
   * a restored canary step is held or released is the step's own flag, restored with the step.
   */
  restoreCanary(names: readonly string[]): void {
    const chosen = this.steps.filter((s) => names.includes(s.name));
    for (const s of this.canary) if (!chosen.includes(s)) s.proceed();
    this.canary = chosen;
  }

  candidates(children: readonly Child[], dirty: readonly Asset[]): Child[] {
    if (!this.inCanary()) return this.inner.candidates(children, dirty);
    return this.canary.filter((s) => isEligible(s, dirty));
  }

  isInterrupted(): boolean {
    if (!this.inCanary()) return this.inner.isInterrupted();
    return !this.canary.some((s) => !s.isInterrupted() && s.status() !== 'COMPLETE');
  }

  /** While in canary, one `continue` releases the next held canary step; afterwards it is the wrapped strategy's. */
  proceed(): void {
    const next = this.canary.find((s) => s.isInterrupted());
    if (next !== undefined) next.proceed();
    else this.inner.proceed();
  }

  /** Ignored while in canary (the phase is already held); afterwards it pauses the wrapped strategy. */
  interrupt(): void {
    if (!this.inCanary()) this.inner.interrupt();
  }
}

/** A strategy by its name; `dependency` takes its graph, canaries take their steps. */
export function makeStrategy(name: StrategyName, steps: readonly Child[] = [], options: { after?: ReadonlyMap<string, readonly string[]>; requiredProceeds?: number } = {}): Strategy {
  switch (name) {
    case 'serial': return new SerialStrategy();
    case 'parallel': return new ParallelStrategy();
    case 'dependency': return new DependencyStrategy(options.after ?? new Map());
    case 'serial-canary':
    case 'canary': return new CanaryStrategy(new SerialStrategy(), steps, options.requiredProceeds);
    case 'parallel-canary': return new CanaryStrategy(new ParallelStrategy(), steps, options.requiredProceeds);
    case 'dependency-canary': return new CanaryStrategy(new DependencyStrategy(options.after ?? new Map()), steps, options.requiredProceeds);
  }
}

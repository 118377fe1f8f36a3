/**
 * Plan -> phases -> steps. Steps hold a stored status and their own interrupted flag; phases and
 * plans compute their status from their children through the aggregation table and keep their
 * interrupted flag in their strategy. No I/O and no timers: a driver (the service scheduler, the
 * master's maintenance plans) feeds task outcomes in and carries out the candidates it gets back.
 */
import { randomUUID } from 'node:crypto';
import { aggregate, type Status, type StepStatus } from './status.js';
import { makeStrategy, type Asset, type Child, type Strategy, type StrategyName } from './strategy.js';

/** Overrides every element answers to. */
export interface Element extends Child {
  readonly id: string;
  /** Error strings of this element and everything below it. */
  errors(): string[];
  /**
   * Back to PENDING (steps) or every child back to PENDING (parents), clearing back-off; a step
   * so restarted must do its work again (`rerunPending`), whatever already runs.
   */
  restart(): void;
  /** COMPLETE without doing the work (steps), or every child so (parents). */
  forceComplete(): void;
}

export interface StepOptions {
  readonly name: string;
  readonly id?: string;
  readonly asset?: Asset;
  readonly status?: StepStatus;
  readonly errors?: readonly string[];
}

export class Step implements Element {
  readonly id: string;
  readonly name: string;
  readonly asset: Asset | undefined;
  private stored: StepStatus;
  private interrupted = false;
  /** Set by an operator's forceComplete, so a rebuilt plan can honour it; cleared by restart. */
  private forced = false;
  /**
   * Set by restart: the work must be done again (a deploy step relaunches its pod's tasks), not
   * found done in what already runs. The driver clears it once it has begun the new run
   * (`rerunBegun`); forceComplete clears it too. Stored with the overrides, so a restarted driver
   * still reruns the step.
   */
  private rerun = false;
  private readonly errorList: string[];
  /** When a DELAYED step may be tried again (ms on the driver's clock). */
  private delayedUntilMs: number | undefined;
  /** Environment parameters from `start`, passed to the tasks the step launches. */
  parameters: Readonly<Record<string, string>> = {};
  /** Latest word from the driver about this step (why it waits, what it declined), shown in plan JSON. */
  note = '';

  constructor(options: StepOptions) {
    this.id = options.id ?? randomUUID();
    this.name = options.name;
    this.asset = options.asset;
    this.errorList = [...(options.errors ?? [])];
    this.stored = this.errorList.length > 0 ? 'ERROR' : options.status ?? 'PENDING';
  }

  /** The stored status, with interruption shown as WAITING while nothing has started yet. */
  status(): Status {
    if (this.interrupted && (this.stored === 'PENDING' || this.stored === 'PREPARED')) return 'WAITING';
    return this.stored;
  }

  storedStatus(): StepStatus { return this.stored; }

  /** When a DELAYED step may be tried again (ms on the driver's clock), so a driver can wake then. */
  delayedUntil(): number | undefined { return this.stored === 'DELAYED' ? this.delayedUntilMs : undefined; }

  /** The driver's report of progress: PREPARED, STARTING, STARTED, COMPLETE, PENDING again. */
  setStatus(status: StepStatus): void {
    this.stored = status;
    if (status !== 'DELAYED') this.delayedUntilMs = undefined;
  }

  /** A launch failed: hold the step until `untilMs`, then `expireDelay` lets it try again. */
  delay(untilMs: number): void {
    this.stored = 'DELAYED';
    this.delayedUntilMs = untilMs;
  }

  /** DELAYED flips back to PENDING once its back-off is over. Returns whether it flipped. */
  expireDelay(nowMs: number): boolean {
    if (this.stored !== 'DELAYED' || (this.delayedUntilMs !== undefined && nowMs < this.delayedUntilMs)) return false;
    this.stored = 'PENDING';
    this.delayedUntilMs = undefined;
    return true;
  }

  addError(message: string): void {
    this.errorList.push(message);
    this.stored = 'ERROR';
  }

  errors(): string[] { return [...this.errorList]; }
  isInterrupted(): boolean { return this.interrupted; }
  interrupt(): void { this.interrupted = true; }
  proceed(): void { this.interrupted = false; }

  restart(): void {
    this.stored = this.errorList.length > 0 ? 'ERROR' : 'PENDING';
    this.delayedUntilMs = undefined;
    this.forced = false;
    this.rerun = this.errorList.length === 0;
  }

  forceComplete(): void {
    this.stored = 'COMPLETE';
    this.forced = true;
    this.rerun = false;
  }

  wasForced(): boolean { return this.forced; }

  /** Restarted, and the driver has not yet begun the new run: what runs now does not count as done. */
  rerunPending(): boolean { return this.rerun; }

  /** The driver has begun the restarted run (launched anew, or decided there is nothing to redo). */
  rerunBegun(): void { this.rerun = false; }
}

/** What phases and plans share: a strategy over children, and a status aggregated from them. */
abstract class Parent<C extends Element> implements Element {
  readonly id: string;
  private readonly ownErrors: string[];

  constructor(
    readonly name: string,
    readonly children: readonly C[],
    readonly strategy: Strategy,
    options: { id?: string; errors?: readonly string[] } = {},
  ) {
    this.id = options.id ?? randomUUID();
    this.ownErrors = [...(options.errors ?? [])];
  }

  /** The aggregated status (plans.md §2): candidates are the strategy's, ignoring other plans' dirty assets. */
  status(): Status { return this.explain().status; }

  /** The status with the rule that decided it, for debugging a surprising plan. */
  explain(): { status: Status; rule: string } {
    return aggregate({
      children: this.children.map((c) => c.status()),
      candidates: this.strategy.candidates(this.children, []).map((c) => c.status()),
      hasErrors: this.errors().length > 0,
      interrupted: this.strategy.isInterrupted(),
    });
  }

  errors(): string[] { return [...this.ownErrors, ...this.children.flatMap((c) => c.errors())]; }
  isInterrupted(): boolean { return this.strategy.isInterrupted(); }
  interrupt(): void { this.strategy.interrupt(); }
  proceed(): void { this.strategy.proceed(); }
  restart(): void { for (const c of this.children) c.restart(); }
  forceComplete(): void { for (const c of this.children) c.forceComplete(); }

  /** A child by id or, failing that, by name; undefined when none or several match. */
  child(ref: string): C | undefined {
    const byId = this.children.find((c) => c.id === ref);
    if (byId !== undefined) return byId;
    const named = this.children.filter((c) => c.name === ref);
    return named.length === 1 ? named[0] : undefined;
  }
}

export class Phase extends Parent<Step> {
  get steps(): readonly Step[] { return this.children; }

  /** Steps to work on now; DELAYED ones wait out their back-off. */
  candidates(dirty: readonly Asset[]): Step[] {
    return (this.strategy.candidates(this.children, dirty) as Step[]).filter((s) => s.status() !== 'DELAYED');
  }
}

export class Plan extends Parent<Phase> {
  get phases(): readonly Phase[] { return this.children; }

  /** Steps to work on now: the plan's strategy picks phases, each phase's strategy picks steps. */
  candidates(dirty: readonly Asset[]): Step[] {
    const phases = this.strategy.candidates(this.children, dirty) as Phase[];
    return phases.flatMap((p) => p.candidates(dirty));
  }

  steps(): Step[] { return this.children.flatMap((p) => [...p.steps]); }

  /** Pods this plan is in the middle of changing (steps PREPARED or STARTING): no other plan may touch them. */
  dirtyAssets(): Asset[] {
    return this.steps().filter((s) => s.storedStatus() === 'PREPARED' || s.storedStatus() === 'STARTING').flatMap((s) => (s.asset ? [s.asset] : []));
  }

  /** Flip every DELAYED step whose back-off is over back to PENDING. */
  expireDelays(nowMs: number): Step[] { return this.steps().filter((s) => s.expireDelay(nowMs)); }
}

/** A phase with a strategy by name; a canary strategy holds the first pending steps at once. */
export function newPhase(name: string, strategy: StrategyName, steps: readonly Step[], options: { id?: string; after?: ReadonlyMap<string, readonly string[]>; requiredProceeds?: number } = {}): Phase {
  const { id, ...rest } = options;
  return new Phase(name, steps, makeStrategy(strategy, steps, rest), id === undefined ? {} : { id });
}

/** A plan with a strategy by name (`serial` or `parallel`; `dependency` with its graph of phase names). */
export function newPlan(name: string, strategy: StrategyName, phases: readonly Phase[], options: { id?: string; after?: ReadonlyMap<string, readonly string[]>; errors?: readonly string[] } = {}): Plan {
  const { id, errors, after } = options;
  return new Plan(name, phases, makeStrategy(strategy, phases, after === undefined ? {} : { after }), { ...(id === undefined ? {} : { id }), ...(errors === undefined ? {} : { errors }) });
}

/**
 * The one commit path of every durable change: validate against the current state, await the
 * registry write, apply to memory, announce on the bus. A write that fails changes nothing in
 * memory and is an error to the caller; one that says this master may no longer write (the
 * SQLite file gone read-only, a lost etcd lease) also ends the term at once. Commands that
 * validate against the state the previous one left (drain, maintenance, later plans) run one
 * at a time through `serial`.
 */

import { DrydockError, fail } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { RegistryFencedError, type Registry } from '../registry/registry.js';

export type Committed<T> = { ok: true; value: T } | { ok: false; error: DrydockError };

/**
 * What the metrics hear of registry writes (process/metrics.ts implements it): how long each
 * write took as the caller waited for it (group commit included), and whether it failed. A
 * port, so the commit path knows nothing of Prometheus.
 */
export interface CommitInstruments {
  /** A monotonic clock in milliseconds (the process's Clock.monotonicMs). */
  now(): number;
  onCommit(ms: number, ok: boolean): void;
  /** The term read the registry at its start in `ms` (Mesos' `registrar/state_fetch_ms`). */
  onRecovered?(ms: number): void;
}

export class Commits {
  readonly #registry: Registry;
  readonly #log: Logger;
  readonly #onFenced: (e: Error) => void;
  readonly #instruments: CommitInstruments | undefined;
  #queue: Promise<unknown> = Promise.resolve();
  #applied = 0;
  #pending = 0;

  /** `onFenced` ends the term: called once per fenced write, the term makes it idempotent. */
  constructor(registry: Registry, log: Logger, onFenced: (e: Error) => void, instruments?: CommitInstruments) {
    this.#registry = registry;
    this.#log = log;
    this.#onFenced = onFenced;
    this.#instruments = instruments;
  }

  /**
   * Writes, then applies. `apply` runs only once the write is durable, in the same turn as its
   * completion (nothing else runs between the write and the change in memory).
   */
  async write<T>(op: string, ids: Record<string, unknown>, write: (r: Registry) => Promise<void>, apply: () => T): Promise<Committed<T>> {
    const started = this.#instruments?.now();
    this.#pending++;
    try {
      await write(this.#registry);
    } catch (e) {
      this.#pending--;
      this.#measure(started, false);
      const err = e instanceof Error ? e : new Error(String(e));
      this.#log.error('registry write failed', { op, ...ids, error: err });
      if (err instanceof RegistryFencedError) this.#onFenced(err);
      // A refusal the registry states as a domain error (a maintenance plan name already kept) is the caller's answer as it is.
      if (err instanceof DrydockError && err.code === 'MAINTENANCE_PLAN_EXISTS') return { ok: false, error: err };
      return { ok: false, error: fail('REGISTRY_WRITE_FAILED', err.message) };
    }
    this.#pending--;
    this.#measure(started, true);
    this.#applied++;
    return { ok: true, value: apply() };
  }

  /** Changes applied in memory so far (every durable change: a part of the model's generation). */
  get applied(): number {
    return this.#applied;
  }

  /** Writes waiting for the registry now (Mesos' `registrar/queued_operations`). */
  get pending(): number {
    return this.#pending;
  }

  #measure(started: number | undefined, ok: boolean): void {
    const i = this.#instruments;
    if (i === undefined || started === undefined) return;
    i.onCommit(i.now() - started, ok);
  }

  /** Runs `fn` after every command queued before it has finished (success or not). */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

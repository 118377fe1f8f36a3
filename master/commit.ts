/**
 * The one commit path of every durable change: validate against the current state, await the
 * registry write, apply to memory, announce on the bus. A write that fails changes nothing in
 * memory and is an error to the caller; one that says this master may no longer write (the
 * SQLite file gone read-only, a lost etcd lease) also ends the term at once. Commands that
 * validate against the state the previous one left (drain, maintenance, later plans) run one
 * at a time through `serial`.
 */

import { DrydockError, fail } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { RegistryFencedError, type Registry } from './registry/registry.js';

export type Committed<T> = { ok: true; value: T } | { ok: false; error: DrydockError };

export class Commits {
  readonly #registry: Registry;
  readonly #log: Logger;
  readonly #onFenced: (e: Error) => void;
  #queue: Promise<unknown> = Promise.resolve();

  /** `onFenced` ends the term: called once per fenced write, the term makes it idempotent. */
  constructor(registry: Registry, log: Logger, onFenced: (e: Error) => void) {
    this.#registry = registry;
    this.#log = log;
    this.#onFenced = onFenced;
  }

  /**
   * Writes, then applies. `apply` runs only once the write is durable, in the same turn as its
   * completion (nothing else runs between the write and the change in memory).
   */
  async write<T>(op: string, ids: Record<string, unknown>, write: (r: Registry) => Promise<void>, apply: () => T): Promise<Committed<T>> {
    try {
      await write(this.#registry);
    } catch (e) {
      const err = e instanceof Error ? e : new Error(String(e));
      this.#log.error('registry write failed', { op, ...ids, error: err });
      if (err instanceof RegistryFencedError) this.#onFenced(err);
      // A refusal the registry states as a domain error (a maintenance plan name already kept) is the caller's answer as it is.
      if (err instanceof DrydockError && err.code === 'MAINTENANCE_PLAN_EXISTS') return { ok: false, error: err };
      return { ok: false, error: fail('REGISTRY_WRITE_FAILED', err.message) };
    }
    return { ok: true, value: apply() };
  }

  /** Runs `fn` after every command queued before it has finished (success or not). */
  serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(fn, fn);
    this.#queue = run.catch(() => undefined);
    return run;
  }
}

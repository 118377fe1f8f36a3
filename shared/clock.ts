/**
 * Time, injected. Grace periods, backoff, heartbeats and timeouts take a Clock so that
 * unit tests can jump over seconds instead of sleeping through them.
 */

export interface TimerHandle {
  cancel(): void;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds unless cancelled. */
  setTimer(ms: number, fn: () => void): TimerHandle;
  /**
   * Runs `fn` once the event loop has handled what it read this turn (Node's setImmediate),
   * unless cancelled: how work that many events of one turn ask for is batched into one run.
   */
  immediate(fn: () => void): TimerHandle;
  /** Milliseconds on a monotonic clock (Node's performance.now()): for how long something took; it never jumps with the wall clock. */
  monotonicMs(): number;
}

/** Node fires a timer longer than 2^31-1 ms (24.8 days) at once: longer ones are chained (systemClock), or capped where a duration becomes a timer. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The wall clock and Node's timers. Timers are unref'd: they never keep a process alive by themselves. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimer(ms, fn) {
    let t: NodeJS.Timeout;
    // A framework's failover_timeout is a client's double: a year, or 1e19 seconds, must wait, not fire.
    const arm = (left: number): void => {
      t = left > MAX_TIMER_MS ? setTimeout(() => arm(left - MAX_TIMER_MS), MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
      t.unref();
    };
    arm(ms);
    return { cancel: () => clearTimeout(t) };
  },
  immediate(fn) {
    const i = setImmediate(fn);
    return { cancel: () => clearImmediate(i) };
  },
  monotonicMs: () => performance.now(),
};

/**
 * A clock that only moves when told to. For unit tests. Its monotonic time is its time (nothing
 * takes any time unless the test says so); it does not own the event loop, so its immediates run
 * on the loop's next turn, as the code under test expects (a test awaits one).
 */
export class ManualClock implements Clock {
  #now: number;
  #seq = 0;
  readonly #timers = new Map<number, { at: number; fn: () => void }>();

  constructor(startMs = 1_700_000_000_000) {
    this.#now = startMs;
  }

  now(): number {
    return this.#now;
  }

  setTimer(ms: number, fn: () => void): TimerHandle {
    const id = ++this.#seq;
    this.#timers.set(id, { at: this.#now + Math.max(0, ms), fn });
    return { cancel: () => this.#timers.delete(id) };
  }

  immediate(fn: () => void): TimerHandle {
    const i = setImmediate(fn);
    return { cancel: () => clearImmediate(i) };
  }

  monotonicMs(): number {
    return this.#now;
  }

  /** Moves time forward, firing due timers in order of their deadlines. */
  advance(ms: number): void {
    const target = this.#now + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.#timers) {
        if (entry[1].at <= target && (next === undefined || entry[1].at < next[1].at)) next = entry;
      }
      if (next === undefined) break;
      this.#timers.delete(next[0]);
      this.#now = next[1].at;
      next[1].fn();
    }
    this.#now = target;
  }

  /** How many timers are waiting. */
  get pending(): number {
    return this.#timers.size;
  }
}

/**
 * Reliable status updates: per task, one update in flight at a time, resent with doubling
 * intervals until an ACKNOWLEDGE with its uuid arrives. The queues themselves live in the task
 * records (and so in the checkpoint); this module only owns sending and the resend timers, and
 * holds a timer only for a head that is waiting for its acknowledgement.
 */

import type { Clock, TimerHandle } from '../shared/clock.js';
import type { TaskStatus } from '../shared/mesos.js';
import { statusRetryDelayMs } from './backoff.js';

/** Sends one update to the master; false when there is no registered session to send on. */
export type UpdateSender = (frameworkId: string, status: TaskStatus) => boolean;

interface InFlight {
  frameworkId: string;
  status: TaskStatus;
  attempt: number;
  timer: TimerHandle | undefined;
}

export class StatusUpdateStreams {
  readonly #clock: Clock;
  readonly #initialMs: number;
  readonly #send: UpdateSender;
  readonly #inFlight = new Map<string, InFlight>();

  constructor(options: { clock: Clock; initialRetryMs: number; send: UpdateSender }) {
    this.#clock = options.clock;
    this.#initialMs = options.initialRetryMs;
    this.#send = options.send;
  }

  /** The head of a task's queue is now `status` (undefined: the queue is empty). Sends a new head at once. */
  head(key: string, frameworkId: string, status: TaskStatus | undefined): void {
    const current = this.#inFlight.get(key);
    if (status === undefined) {
      current?.timer?.cancel();
      this.#inFlight.delete(key);
      return;
    }
    if (current !== undefined && current.status.uuid === status.uuid) return;
    current?.timer?.cancel();
    const entry: InFlight = { frameworkId, status, attempt: 0, timer: undefined };
    this.#inFlight.set(key, entry);
    this.#transmit(key, entry);
  }

  /** After (re-)registration: every head goes out now, with its backoff reset (Mesos does the same). */
  resendAll(): void {
    for (const [key, entry] of this.#inFlight) {
      entry.timer?.cancel();
      entry.attempt = 0;
      this.#transmit(key, entry);
    }
  }

  /** The session is gone: stop resending until resendAll. */
  pause(): void {
    for (const entry of this.#inFlight.values()) {
      entry.timer?.cancel();
      entry.timer = undefined;
    }
  }

  /** How many updates are waiting for an acknowledgement. */
  get waiting(): number {
    return this.#inFlight.size;
  }

  #transmit(key: string, entry: InFlight): void {
    entry.timer = undefined;
    if (!this.#send(entry.frameworkId, entry.status)) return;
    const delay = statusRetryDelayMs(entry.attempt, this.#initialMs);
    entry.timer = this.#clock.setTimer(delay, () => {
      if (this.#inFlight.get(key) !== entry) return;
      entry.attempt++;
      this.#transmit(key, entry);
    });
  }
}

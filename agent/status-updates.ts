/**
 * Reliable status updates: per task, a small window of updates in flight (the oldest
 * `STATUS_UPDATE_WINDOW` of its queue), each resent with doubling intervals until an
 * ACKNOWLEDGE with its uuid arrives. The queues themselves live in the task records (and so in
 * the checkpoint); this module only owns sending and the resend timers, and holds a timer only
 * for a task with updates waiting for their acknowledgement.
 *
 * Mesos' agent keeps one update in flight per task, so a task's TASK_RUNNING waits for the
 * framework to acknowledge its TASK_STARTING: a whole round trip through the master and the
 * scheduler. The session with the master is one ordered WebSocket, and every resend repeats
 * the window oldest first, so the master still sees a task's updates in order; it accepts an
 * acknowledgement for any update of the window. The window stays small so that a framework that
 * does not acknowledge is not sent a task's every (health) check change: queued updates beyond
 * the window are superseded instead.
 */

import type { Clock, TimerHandle } from '../shared/clock.js';
import type { TaskStatus } from '../shared/mesos.js';
import { statusRetryDelayMs } from './backoff.js';

/** Updates of one task sent before the oldest is acknowledged: a launch's STARTING and RUNNING, or a kill's KILLING and KILLED. */
export const STATUS_UPDATE_WINDOW = 2;

/** Sends one update to the master; false when there is no registered session to send on. */
export type UpdateSender = (frameworkId: string, status: TaskStatus) => boolean;

interface Stream {
  frameworkId: string;
  /** Sent and not yet acknowledged, oldest first: at most STATUS_UPDATE_WINDOW. */
  sent: TaskStatus[];
  attempt: number;
  timer: TimerHandle | undefined;
}

export class StatusUpdateStreams {
  readonly #clock: Clock;
  readonly #initialMs: number;
  readonly #send: UpdateSender;
  readonly #streams = new Map<string, Stream>();

  constructor(options: { clock: Clock; initialRetryMs: number; send: UpdateSender }) {
    this.#clock = options.clock;
    this.#initialMs = options.initialRetryMs;
    this.#send = options.send;
  }

  /** Is this update of the task in flight (sent, not acknowledged)? */
  inFlight(key: string, status: TaskStatus): boolean {
    return this.#streams.get(key)?.sent.includes(status) === true;
  }

  /**
   * Sends `status` now, behind the task's updates already in flight, and resends it until
   * `acknowledged`. The caller keeps the window: it sends a task's updates in queue order, and
   * only the oldest STATUS_UPDATE_WINDOW of them.
   */
  send(key: string, frameworkId: string, status: TaskStatus): void {
    let stream = this.#streams.get(key);
    if (stream === undefined) {
      stream = { frameworkId, sent: [], attempt: 0, timer: undefined };
      this.#streams.set(key, stream);
    }
    if (stream.sent.includes(status)) return;
    stream.sent.push(status);
    if (!this.#send(frameworkId, status)) return;
    if (stream.timer === undefined) this.#arm(key, stream);
  }

  /**
   * The task's queue is now `pending`: updates in flight that are no longer in it (acknowledged,
   * or superseded) stop being resent. When the oldest was acknowledged, resending starts over
   * from the initial interval for the rest.
   */
  settle(key: string, pending: readonly TaskStatus[]): void {
    const stream = this.#streams.get(key);
    if (stream === undefined) return;
    const oldest = stream.sent[0];
    stream.sent = stream.sent.filter((s) => pending.includes(s));
    if (stream.sent.length === 0) {
      stream.timer?.cancel();
      this.#streams.delete(key);
      return;
    }
    if (stream.sent[0] !== oldest && stream.timer !== undefined) {
      stream.timer.cancel();
      stream.attempt = 0;
      this.#arm(key, stream);
    }
  }

  /** The task is gone: nothing of it is resent. */
  forget(key: string): void {
    this.#streams.get(key)?.timer?.cancel();
    this.#streams.delete(key);
  }

  /** After (re-)registration: every update in flight goes out again now, oldest first, with its backoff reset (Mesos does the same). */
  resendAll(): void {
    for (const [key, stream] of this.#streams) {
      stream.timer?.cancel();
      stream.timer = undefined;
      stream.attempt = 0;
      this.#transmit(key, stream);
    }
  }

  /** The session is gone: stop resending until resendAll. */
  pause(): void {
    for (const stream of this.#streams.values()) {
      stream.timer?.cancel();
      stream.timer = undefined;
    }
  }

  /** How many updates are waiting for an acknowledgement. */
  get waiting(): number {
    let n = 0;
    for (const stream of this.#streams.values()) n += stream.sent.length;
    return n;
  }

  /** Sends the task's window, oldest first; arms the resend timer if the session took them. */
  #transmit(key: string, stream: Stream): void {
    for (const status of stream.sent) if (!this.#send(stream.frameworkId, status)) return;
    this.#arm(key, stream);
  }

  #arm(key: string, stream: Stream): void {
    const delay = statusRetryDelayMs(stream.attempt, this.#initialMs);
    stream.timer = this.#clock.setTimer(delay, () => {
      if (this.#streams.get(key) !== stream) return;
      stream.timer = undefined;
      stream.attempt++;
      this.#transmit(key, stream);
    });
  }
}

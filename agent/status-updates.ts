/**
 * Reliable status updates, the agent's side. Two parts:
 *
 *   TaskUpdates         each task's queue of updates: generated (uuid, timestamp, the check
 *                       results they carry, the drain's reason), checkpointed before they are
 *                       sent, sent in order within the window once their commit is durable,
 *                       and dropped from the queue when acknowledged. The queues live in the task
 *                       records, and so in the checkpoint.
 *   StatusUpdateStreams sending and resending: per task, a small window of updates in flight
 *                       (the oldest `STATUS_UPDATE_WINDOW` of its queue), each resent with
 *                       doubling intervals until an ACKNOWLEDGE with its uuid arrives; a timer
 *                       only for a task with updates waiting for their acknowledgement.
 *
 * Mesos' agent keeps one update in flight per task, so a task's TASK_RUNNING waits for the
 * framework to acknowledge its TASK_STARTING: a whole round trip through the master and the
 * scheduler. The session with the master is one ordered WebSocket, and every resend repeats
 * the window oldest first, so the master still sees a task's updates in order; it accepts an
 * acknowledgement for any update of the window. The window stays small so that a framework that
 * does not acknowledge is not sent a task's every (health) check change: queued updates beyond
 * the window are superseded instead.
 */

import { randomUUID } from 'node:crypto';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { DrainConfigWire } from '../shared/drain.js';
import { hasCapability, isTerminal, type CheckStatusInfo, type TaskState, type TaskStatus, type TaskStatusReason, type TaskStatusSource } from '../shared/mesos.js';
import { statusRetryDelayMs } from './backoff.js';
import type { Checkpoint, TaskRecord } from './checkpoint.js';

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

/** Sends, and resends until acknowledged, the updates each task has in flight. */
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

/** A task's latest check results, which its executor-side updates carry (agent/checks.ts TaskChecking). */
export interface CheckResults {
  readonly checkStatus: CheckStatusInfo | undefined;
  readonly healthy: boolean | undefined;
}

/** What the queue needs of a task: the supervisor's task state has all of it. */
export interface QueuedTask {
  /** taskKey(framework id, task id). */
  readonly key: string;
  readonly record: TaskRecord;
  /** The checkpoint change that last wrote the record. */
  written: number;
  /** A queued update not to be sent yet: TASK_STARTING until the launcher has started. */
  held: TaskStatus | undefined;
  /** The task's check and health check, if it has either. */
  readonly checking: CheckResults | undefined;
  /**
   * A task refused before anything of it was durable (disk pressure, its first commit failed):
   * kept in memory only, its refusal sent and resent without a commit. Nothing was started, so
   * no update of it depends on the disk; an agent restarted meanwhile simply does not know it.
   */
  readonly volatile: boolean;
}

/** What the queue needs of the agent. */
export interface TaskUpdatesOptions {
  checkpoint: Pick<Checkpoint, 'writeTask' | 'durable' | 'after'>;
  streams: StatusUpdateStreams;
  clock: Clock;
  /** The agent id, once known. */
  agentId: () => string | undefined;
  /** The drain the agent is carrying out, if any: kill updates then carry REASON_AGENT_DRAINING. */
  draining: () => DrainConfigWire | undefined;
  /** Is this still a task the supervisor holds? A completed or replaced one is not sent again. */
  holds: (t: QueuedTask) => boolean;
  /** An update was generated and queued (Mesos' valid_status_updates). */
  onStatusUpdate: (state: TaskState) => void;
}

/**
 * Each task's queue of status updates: every update is staged in the checkpoint with the task's
 * record before it may be sent, and goes out in queue order, within the window, once that
 * change is durable.
 */
export class TaskUpdates {
  readonly #o: TaskUpdatesOptions;
  /** The checkpoint change that queued each update not recovered from disk: its send waits for it. */
  readonly #queuedAt = new WeakMap<TaskStatus, number>();

  constructor(options: TaskUpdatesOptions) {
    this.#o = options;
  }

  /** Stages the task's record in the checkpoint (every change to a task, an update's or not); returns the change's number. A volatile task's is 0, durable already. */
  write(t: QueuedTask): number {
    t.written = t.volatile ? 0 : this.#o.checkpoint.writeTask(t.record);
    return t.written;
  }

  /** A status update of a task, in no queue (a duplicate launch's error is sent once, outside the existing task's queue). */
  status(
    taskId: { value: string },
    state: TaskState,
    source: TaskStatusSource,
    message?: string,
    reason?: TaskStatusReason,
    checks: { healthy?: boolean | undefined; check_status?: CheckStatusInfo | undefined } = {},
  ): TaskStatus {
    const agentId = this.#o.agentId();
    return {
      task_id: taskId,
      state,
      source,
      ...(message !== undefined ? { message } : {}),
      ...(reason !== undefined ? { reason } : {}),
      ...(agentId !== undefined ? { agent_id: { value: agentId } } : {}),
      timestamp: this.#o.clock.now() / 1000,
      uuid: newUuid(),
      ...(checks.healthy !== undefined ? { healthy: checks.healthy } : {}),
      ...(checks.check_status !== undefined ? { check_status: checks.check_status } : {}),
    };
  }

  /**
   * Queues a status update: checkpointed first, then sent if it is the head of the queue. As
   * Mesos' agent, a status replaces the task's last one when both have the same state, so check
   * updates do not pile up in `statuses` (and in the checkpoint). `healthy` defaults to the
   * health check's verdict on TASK_RUNNING updates.
   */
  update(t: QueuedTask, state: TaskState, message?: string, reason?: TaskStatusReason, source: TaskStatusSource = 'SOURCE_EXECUTOR', healthy?: boolean): void {
    this.queue(t, state, message, reason, source, healthy);
    this.pump(t);
  }

  /** Generates a status update and stages it in the task's queue and the checkpoint; sending is the caller's. */
  queue(t: QueuedTask, state: TaskState, message?: string, reason?: TaskStatusReason, source: TaskStatusSource = 'SOURCE_EXECUTOR', healthy?: boolean): TaskStatus {
    const status = this.make(t, state, message, reason, source, healthy);
    this.#enqueue(t, status);
    return status;
  }

  /** Generates a status update of the task, queued nowhere. */
  make(t: QueuedTask, state: TaskState, message?: string, reason?: TaskStatusReason, source: TaskStatusSource = 'SOURCE_EXECUTOR', healthy?: boolean): TaskStatus {
    const r = t.record;
    const drain = this.#o.draining();
    // A task its health check killed says so even while the agent drains: that kill came first.
    if (drain !== undefined && (state === 'TASK_KILLING' || state === 'TASK_KILLED') && reason !== 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED') {
      // Mesos: every kill update sent while draining says why; with mark_gone a partition-aware
      // framework learns the task is gone for good.
      reason = 'REASON_AGENT_DRAINING';
      if (drain.mark_gone && hasCapability(r.framework, 'PARTITION_AWARE')) state = 'TASK_GONE_BY_OPERATOR';
    }
    const checking = source === 'SOURCE_EXECUTOR' ? t.checking : undefined;
    const checkStatus = checking?.checkStatus;
    return this.status(r.task.task_id, state, source, message, reason, {
      healthy: healthy ?? (state === 'TASK_RUNNING' ? checking?.healthy : undefined),
      check_status: checkStatus !== undefined ? structuredClone(checkStatus) : undefined,
    });
  }

  /**
   * Queues an update that is durable already (the TASK_RUNNING a launch committed with the task,
   * stamped now that the task runs): it is sent before this write is even staged.
   */
  queueDurable(t: QueuedTask, status: TaskStatus): void {
    status.timestamp = this.#o.clock.now() / 1000;
    this.#enqueue(t, status, () => this.pump(t));
    this.#queuedAt.delete(status);
  }

  /**
   * ACKNOWLEDGE of the update with `uuid`: only an update in flight can be acknowledged (false:
   * ignored). It leaves the queue, and resending follows the rest; writing the record and
   * sending the next update are the caller's.
   */
  acknowledge(t: QueuedTask, uuid: string): boolean {
    const r = t.record;
    const acked = r.pending.find((s) => s.uuid === uuid);
    if (acked === undefined || !this.#o.streams.inFlight(t.key, acked)) return false;
    r.pending = r.pending.filter((s) => s !== acked);
    this.#o.streams.settle(t.key, r.pending);
    return true;
  }

  /**
   * Sends the task's queued updates that may go out: in queue order, within the window, each
   * once the change that queued it is durable, none past one held back (TASK_STARTING before
   * its launcher started).
   */
  pump(t: QueuedTask): void {
    const r = t.record;
    const n = Math.min(r.pending.length, STATUS_UPDATE_WINDOW);
    for (let i = 0; i < n; i++) {
      const status = r.pending[i]!;
      if (this.#o.streams.inFlight(t.key, status)) continue;
      if (status === t.held) return;
      const seq = this.#queuedAt.get(status) ?? 0;
      if (!this.#o.checkpoint.durable(seq)) {
        this.#o.checkpoint.after(seq, () => {
          if (this.#o.holds(t)) this.pump(t);
        });
        return;
      }
      this.#o.streams.send(t.key, r.framework_id, status);
    }
  }

  /** The task is completed: nothing of it is resent. */
  forget(t: QueuedTask): void {
    this.#o.streams.forget(t.key);
  }

  /** Stages `status` in the task's queue and the checkpoint; `beforeWrite` runs once it is queued, before the record is written. */
  #enqueue(t: QueuedTask, status: TaskStatus, beforeWrite?: () => void): void {
    const r = t.record;
    const { state, reason } = status;
    r.state = state;
    // A task that ends without having run never sends the TASK_RUNNING prepared at its launch.
    if (isTerminal(state)) delete r.running;
    if (r.statuses.at(-1)?.state === state) r.statuses.pop();
    r.statuses.push(status);
    if (state === 'TASK_RUNNING' && (reason === 'REASON_TASK_CHECK_STATUS_UPDATED' || reason === 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED')) {
      // A (health) check update still queued behind the window is superseded by this newer one
      // of the same kind, which carries the latest result: a check flapping while the
      // scheduler does not acknowledge cannot grow the queue (and the checkpoint) forever.
      r.pending = r.pending.filter((p, i) => i < STATUS_UPDATE_WINDOW || p.state !== 'TASK_RUNNING' || p.reason !== reason);
    }
    r.pending.push(status);
    beforeWrite?.();
    this.#queuedAt.set(status, this.write(t));
    this.#o.onStatusUpdate(state);
  }
}

/** A status update's uuid: 16 random bytes, base64 (as Mesos' JSON carries bytes). randomUUID draws from a cached pool: randomBytes(16) is a call into the entropy source each time. */
function newUuid(): string {
  return Buffer.from(randomUUID().replaceAll('-', ''), 'hex').toString('base64');
}

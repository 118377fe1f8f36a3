/**
 * Killing a task, the shell around kill-policy.ts's arithmetic: SIGTERM to the task's process
 * group, the grace period, then SIGKILL to the group. Each step is checkpointed in the task's
 * record (`kill`: when it was asked, the grace, the deadline, when each signal was decided)
 * before its signal goes out, so an agent restarted in the middle resumes the kill where it was:
 * the SIGTERM not yet sent goes, a decided SIGKILL goes again, and the deadline stays.
 *
 * A later kill of the same task (a drain's, after a KILL_TASK) only ever shortens the wait. A kill
 * that arrives before the task has a pid is remembered and carried out once it has one. With no
 * grace (a drain with `max_grace_period` 0), SIGKILL follows SIGTERM at once.
 */

import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import { hasCapability, type KillPolicy } from '../shared/mesos.js';
import type { Checkpoint } from './checkpoint.js';
import { gracePeriodMs, killDeadlineMs } from './kill-policy.js';
import type { KillSignal } from './signaller.js';
import type { CheckResults, QueuedTask, TaskUpdates } from './status-updates.js';

/** What kills report as they happen, for the agent's counters; each after its change was checkpointed. */
export interface KillInstruments {
  /** A kill began: SIGTERM went to the task's group (once per task, however often it is asked). */
  onKill(): void;
  /** A kill's grace period ran out and SIGKILL went to the group. */
  onEscalation(): void;
}

/** What a kill needs of a task: the supervisor's task state has all of it. */
export interface KilledTask extends QueuedTask {
  /** staging (no pid yet), running, or ended. */
  readonly phase: 'staging' | 'running' | 'ended';
  /** The SIGKILL to come at the deadline. */
  killTimer: TimerHandle | undefined;
  /** A kill that arrived before the task pid was known: undefined (none), null (no override) or the override. */
  killWanted: KillPolicy | null | undefined;
  /** Its checks, stopped when a kill begins (as Mesos). */
  readonly checking: (CheckResults & { stop(): void }) | undefined;
}

/** What kills need of the agent. */
export interface KillEscalationOptions {
  clock: Clock;
  log: Logger;
  checkpoint: Pick<Checkpoint, 'after'>;
  /** The task's queue: TASK_KILLING, and the record's writes. */
  updates: TaskUpdates;
  /** Sends a signal to a task's process group (the agent's signaller, or kill(2) from here). */
  signal: (pgid: number, signal: KillSignal) => void;
  instruments: KillInstruments | undefined;
}

/** SIGTERM, the grace period, SIGKILL: for every task of the supervisor. */
export class KillEscalation {
  readonly #o: KillEscalationOptions;

  constructor(options: KillEscalationOptions) {
    this.#o = options;
  }

  /** A kill; `healthFailures` when the task's health check asked for it. Checks stop at once (as Mesos). */
  kill(t: KilledTask, override?: KillPolicy, healthFailures?: number): void {
    if (t.phase === 'ended') return;
    const r = t.record;
    const log = { taskId: r.task.task_id.value, frameworkId: r.framework_id };
    t.checking?.stop();
    if (t.phase === 'staging' || r.task_pid === undefined) {
      t.killWanted = override ?? null;
      return;
    }
    const now = this.#o.clock.now();
    const grace = gracePeriodMs(r.task.kill_policy, override);
    if (r.kill !== undefined) {
      const deadline = killDeadlineMs(r.kill.deadline_ms, now, grace);
      if (deadline < r.kill.deadline_ms && r.kill.sigkill_ms === undefined) {
        r.kill.deadline_ms = deadline;
        this.#o.updates.write(t);
        this.#arm(t);
      }
      return;
    }
    // No grace: SIGKILL right behind SIGTERM, decided and checkpointed together (a task that
    // handles SIGTERM gets no time to; one that does not dies of SIGTERM).
    const atOnce = grace <= 0;
    r.kill = {
      requested_ms: now,
      grace_ms: grace,
      deadline_ms: now + grace,
      sigterm_ms: now,
      ...(atOnce ? { sigkill_ms: now } : {}),
      ...(healthFailures !== undefined ? { health_check_failures: healthFailures } : {}),
    };
    // As Mesos, TASK_KILLING goes only to frameworks that declared TASK_KILLING_STATE; either
    // way the kill is checkpointed before the signal goes out.
    if (hasCapability(r.framework, 'TASK_KILLING_STATE')) this.#o.updates.update(t, 'TASK_KILLING');
    else this.#o.updates.write(t);
    this.#o.log.info('killing task', { ...log, pid: r.task_pid, graceMs: grace });
    const pid = r.task_pid;
    this.#o.checkpoint.after(t.written, () => {
      this.#o.signal(pid, 'SIGTERM');
      this.#o.instruments?.onKill();
      if (!atOnce) return;
      // Right behind its SIGTERM, before the next group's: a drain that signalled every group
      // SIGTERM first and then every one SIGKILL ended its tasks later (measured, 100 tasks: the
      // woken shells' forks and exits held up the kills that followed).
      this.#o.signal(pid, 'SIGKILL');
      this.#o.instruments?.onEscalation();
    });
    this.#arm(t);
  }

  /** A kill checkpointed before an agent restart, carried on for a re-adopted task. */
  resume(t: KilledTask): void {
    const r = t.record;
    if (r.kill === undefined || r.task_pid === undefined) return;
    if (r.kill.sigterm_ms === undefined) {
      r.kill.sigterm_ms = this.#o.clock.now();
      const pid = r.task_pid;
      this.#o.checkpoint.after(this.#o.updates.write(t), () => {
        this.#o.signal(pid, 'SIGTERM');
        this.#o.instruments?.onKill();
      });
    }
    // SIGKILL was decided (and checkpointed) before the restart, but may not have gone out: the
    // task is still alive, so it goes now.
    if (r.kill.sigkill_ms !== undefined) this.#o.signal(r.task_pid, 'SIGKILL');
    this.#arm(t);
  }

  /** No SIGKILL will follow: the task ended, or the agent stops (the next one resumes the kill). */
  cancel(t: KilledTask): void {
    t.killTimer?.cancel();
    t.killTimer = undefined;
  }

  /** The SIGKILL at the kill's deadline, unless it was decided already. */
  #arm(t: KilledTask): void {
    const kill = t.record.kill;
    if (kill === undefined || kill.sigkill_ms !== undefined) return;
    t.killTimer?.cancel();
    t.killTimer = this.#o.clock.setTimer(kill.deadline_ms - this.#o.clock.now(), () => {
      t.killTimer = undefined;
      const pid = t.record.task_pid;
      if (t.phase === 'ended' || pid === undefined) return;
      kill.sigkill_ms = this.#o.clock.now();
      this.#o.log.info('grace period over, sending SIGKILL', { taskId: t.record.task.task_id.value, pid, graceMs: kill.grace_ms });
      this.#o.checkpoint.after(this.#o.updates.write(t), () => {
        // Ended while the change was being committed: its group is gone, and the pid may be another's soon.
        if (t.phase === 'ended') return;
        this.#o.signal(pid, 'SIGKILL');
        this.#o.instruments?.onEscalation();
      });
    });
  }
}

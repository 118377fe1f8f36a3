/**
 * The supervisor: every task the agent runs, as a process group under drydock-launch. It
 * launches tasks, re-adopts them after an agent restart, learns how each one ended from the
 * launcher's status file, and answers what the agent knows of its tasks. Its parts:
 *
 *   status-updates.ts   each task's update queue (checkpointed, sent in order, acknowledged)
 *   kill-escalation.ts  kills: SIGTERM to the group, the grace period, SIGKILL
 *   task-checks.ts      checks and health checks while the task runs
 *
 * Every change to a task is checkpointed before it is acted on (the update sent, the signal
 * delivered). Lifecycle of a task: staging → running (pid known) → ended (terminal update
 * queued) → completed (terminal update acknowledged; meta removed, kept in memory only).
 *
 * Short of disk (agent/disk-watch.ts), it refuses rather than starts: a launch while the agent
 * is under disk pressure, or one whose first commit (the task with its TASK_STARTING) fails,
 * ends TASK_FAILED with REASON_CONTAINER_LAUNCH_FAILED and a message that names the cause, and
 * nothing is started. Such a task was never durable and ran nothing, so its refusal depends on
 * no commit: it is kept in memory only (volatile), sent and resent until acknowledged, while
 * every other update still waits for the commit that records it. A task whose end the launcher
 * could not record (its exit file, on a full disk) ends as the launcher reported it instead.
 *
 * Every update the task's executor side sends (source SOURCE_EXECUTOR: STARTING, RUNNING,
 * KILLING, the terminal one) of a task with a check carries `check_status`, the latest result
 * (empty before the first, as Mesos); TASK_RUNNING updates carry `healthy` once the health check
 * has a verdict; a task killed by its health check ends TASK_KILLED with `healthy: false` and
 * reason REASON_TASK_HEALTH_CHECK_STATUS_UPDATED.
 */

import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { getSystemErrorName } from 'node:util';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import {
  hasCapability,
  isTerminal,
  type FrameworkInfo,
  type KillPolicy,
  type Task,
  type TaskInfo,
  type TaskState,
  type TaskStatus,
} from '../shared/mesos.js';
import type { AgentTaskReport } from '../shared/protocol.js';
import { killPolicy, type DrainConfigWire } from '../shared/drain.js';
import type { Checkpoint, TaskRecord } from './checkpoint.js';
import { parseTaskChecks, type Probe, type ProbeRun, type TaskChecking, type TaskChecks } from './checks.js';
import { runProbe, type ProbeContext } from './probes.js';
import { CHECKPOINT_FORMAT } from './checkpoint.js';
import { KillEscalation, type KillInstruments } from './kill-escalation.js';
import type { KillSignal } from './signaller.js';
import { findLauncher, launcherAlive, procPids, procStat, readLauncherEnd, signalGroup, spawnLauncher, type Launched, type LaunchSpec } from './launcher.js';
import { TaskUpdates, type StatusUpdateStreams } from './status-updates.js';
import { taskChecking } from './task-checks.js';
import { terminalOutcome, type LauncherEnd, type LauncherReport } from './termination.js';
import { describeWriteFailure, isSpaceError } from './disk-pressure.js';
import type { DiskPressure } from '../shared/protocol.js';
import { ownerOf, type OwnedTask, type TaskLists } from './views.js';

/** How often re-adopted launchers (not our children, so no exit event) are checked. */
export const ADOPTED_POLL_MS = 250;

/** Completed tasks kept in memory for GET_TASKS. */
export const COMPLETED_TASKS_KEPT = 1000;

/** The environment variables a task inherits from the agent; everything else it must be given. */
const INHERITED_ENV = ['PATH', 'HOME', 'USER', 'LOGNAME', 'LANG', 'LC_ALL', 'TZ', 'TMPDIR'];

type TaskPhase = 'staging' | 'running' | 'ended';

/** One task's state in the supervisor: what the update queue (QueuedTask) and kills (KilledTask) need of it, and more. */
interface Supervised {
  key: string;
  record: TaskRecord;
  phase: TaskPhase;
  adopted: boolean;
  killTimer: TimerHandle | undefined;
  /** A kill that arrived before the task pid was known: undefined (none), null (no override) or the override. */
  killWanted: KillPolicy | null | undefined;
  /** The task's check and health check, if it has either; started once it runs. */
  checking: TaskChecking | undefined;
  /** The checkpoint change that last wrote the record. */
  written: number;
  /** A queued update not to be sent yet: TASK_STARTING until the launcher has started. */
  held: TaskStatus | undefined;
  /** Refused before anything of it was durable: in memory only (status-updates.ts QueuedTask). */
  volatile: boolean;
  /** Launched, its record staged, its launcher waiting for that first commit. */
  awaitingFirstCommit: boolean;
}

export interface SupervisorOptions {
  checkpoint: Checkpoint;
  streams: StatusUpdateStreams;
  clock: Clock;
  log: Logger;
  /** The agent id, once known. */
  agentId: () => string | undefined;
  /** Sends an update that is not tracked (a duplicate launch's error). */
  sendOnce: (frameworkId: string, status: TaskStatus) => void;
  /** How a launcher is started: through the agent's launch server (agent/launch-server.ts); default: forked by the agent. */
  launch?: (spec: LaunchSpec) => Promise<Launched>;
  /** Sends a kill's signal to a task's group (the agent's signaller); default: kill(2) from here. */
  signal?: (pgid: number, signal: KillSignal) => void;
  /** The drain the agent is carrying out, if any: launches are refused and kill updates carry REASON_AGENT_DRAINING. */
  draining?: () => DrainConfigWire | undefined;
  /** The agent's disk pressure as of a reading of this turn (agent/disk-watch.ts): launches are refused while there is one. */
  diskPressure?: () => DiskPressure | undefined;
  /** A write of the supervisor's failed (a sandbox, a launcher's exit file): the disk watch hears of it. */
  writeFailed?: (dir: string, e: NodeJS.ErrnoException) => void;
  /** For tests: replaces the probes of checks and health checks. */
  runProbe?: (probe: Probe, ctx: ProbeContext) => ProbeRun;
  /** Where launches, kills and updates are counted (agent/metrics.ts); none: not counted. */
  instruments?: SupervisorInstruments | undefined;
}

/** Why a RUN_TASK did not become a process: its `reason` label in the metrics. */
export type LaunchFailure = 'duplicate' | 'draining' | 'invalid' | 'launcher' | 'disk_pressure';

/**
 * What the supervisor reports as it happens, for the agent's counters. Every hook is called
 * after the change it reports was checkpointed (or, for a failed launch, decided); the kills'
 * are KillInstruments (agent/kill-escalation.ts).
 */
export interface SupervisorInstruments extends KillInstruments {
  /** A task's process group was started. */
  onLaunch(): void;
  /** A RUN_TASK that produced no process. */
  onLaunchFailure(reason: LaunchFailure): void;
  /** A status update was generated and queued for the master (Mesos' valid_status_updates). */
  onStatusUpdate(state: TaskState): void;
}

/** One task as the metrics count it: plain data. */
export interface SupervisedFacts {
  readonly state: TaskState;
  readonly resources: TaskInfo['resources'];
  /** The task still has a process (or a launch in progress): Mesos' running executor. */
  readonly live: boolean;
  /** Updates not yet acknowledged by the master. */
  readonly pendingUpdates: number;
}

/**
 * One task as the Mesos command executor that would run it (a command task's executor id is its
 * task id): what the agent's `/state`, GET_EXECUTORS, GET_FRAMEWORKS and the sandboxes read.
 * Plain data (agent/state.ts and agent/sandboxes.ts decide from it).
 */
export interface ExecutorFacts {
  readonly frameworkId: string;
  /** The FrameworkInfo the task was launched with (checkpointed with it), its id set. */
  readonly framework: FrameworkInfo;
  readonly task: TaskInfo;
  readonly state: TaskState;
  readonly statuses: readonly TaskStatus[];
  readonly containerId: string;
  /** The task's sandbox directory, absolute: `<work_dir>/sandboxes/<framework>/<task>`. */
  readonly sandbox: string;
  /** The user it is viewed and accessed as (agent/views.ts ownerOf). */
  readonly user: string | undefined;
  /**
   * `live`: the task has not ended; `terminated`: it ended and its terminal update is not yet
   * acknowledged (Mesos keeps the executor then, the task among its completed tasks);
   * `completed`: acknowledged (Mesos' completed executor).
   */
  readonly phase: 'live' | 'terminated' | 'completed';
}

/** A running task with its process group: what the usage answers measure. */
export interface RunningTask {
  readonly frameworkId: string;
  readonly taskId: string;
  readonly task: TaskInfo;
  readonly containerId: string;
  /** The task's pid, which is its process group's id. */
  readonly pid: number;
  readonly user: string | undefined;
}

/** Map key of a task: framework id and task id (task ids are unique per framework only). */
export function taskKey(frameworkId: string, taskId: string): string {
  return `${frameworkId}\u0000${taskId}`;
}

/** Every task the agent runs: launch, re-adoption, end, and what the agent knows of them. */
export class Supervisor {
  readonly #o: SupervisorOptions;
  readonly #tasks = new Map<string, Supervised>();
  /** Each with the user it is viewed as, and as its executor: its record is gone from the checkpoint once completed. */
  readonly #completed: Array<{ owned: OwnedTask; executor: ExecutorFacts }> = [];
  readonly #completedKeys = new Set<string>();
  readonly #updates: TaskUpdates;
  readonly #kills: KillEscalation;
  #poll: TimerHandle | undefined;
  #closed = false;
  #endWaiters: Array<() => void> = [];

  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.#updates = new TaskUpdates({
      checkpoint: options.checkpoint,
      streams: options.streams,
      clock: options.clock,
      agentId: options.agentId,
      draining: () => options.draining?.(),
      holds: (t) => this.#tasks.get(t.key) === t,
      onStatusUpdate: (state) => options.instruments?.onStatusUpdate(state),
    });
    this.#kills = new KillEscalation({
      clock: options.clock,
      log: options.log,
      checkpoint: options.checkpoint,
      updates: this.#updates,
      signal: (pgid, signal) => (options.signal !== undefined ? options.signal(pgid, signal) : signalGroup(pgid, signal)),
      instruments: options.instruments,
    });
  }

  // ---- Queries ----------------------------------------------------------------------------

  /** Tasks the agent still knows (not completed), for REGISTER. */
  reports(): AgentTaskReport[] {
    return [...this.#tasks.values()].map(({ record: r }) => {
      const head = r.pending[0];
      return {
        framework_id: r.framework_id,
        task: r.task,
        state: r.state,
        statuses: r.statuses,
        ...(head !== undefined ? { status_update_state: head.state, ...(head.uuid !== undefined ? { status_update_uuid: head.uuid } : {}) } : {}),
      };
    });
  }

  /** The FrameworkInfos of the tasks the agent knows, one per framework, with their ids. */
  frameworks(): FrameworkInfo[] {
    const byId = new Map<string, FrameworkInfo>();
    for (const { record: r } of this.#tasks.values()) byId.set(r.framework_id, { ...r.framework, id: { value: r.framework_id } });
    return [...byId.values()];
  }

  /** GET_TASKS' five lists (Mesos semantics, reference §3), each task with the user it is viewed as (agent/views.ts filters by it). */
  taskLists(): TaskLists<OwnedTask> {
    const pending: OwnedTask[] = [];
    const launched: OwnedTask[] = [];
    const terminated: OwnedTask[] = [];
    for (const t of this.#tasks.values()) {
      const view = this.#owned(t.record);
      if (isTerminal(t.record.state)) terminated.push(view);
      else if (t.record.state === 'TASK_STAGING') pending.push(view);
      else launched.push(view);
    }
    return { pending_tasks: pending, queued_tasks: [], launched_tasks: launched, terminated_tasks: terminated, completed_tasks: this.#completed.map((c) => c.owned) };
  }

  /** Every task as its command executor: those the agent knows (in launch order), then the completed ones kept in memory (oldest first). */
  executors(): ExecutorFacts[] {
    const out: ExecutorFacts[] = [];
    for (const t of this.#tasks.values()) out.push(this.#executor(t.record, isTerminal(t.record.state) ? 'terminated' : 'live'));
    for (const c of this.#completed) out.push(c.executor);
    return out;
  }

  #executor(r: TaskRecord, phase: ExecutorFacts['phase']): ExecutorFacts {
    return {
      frameworkId: r.framework_id,
      framework: { ...r.framework, id: { value: r.framework_id } },
      task: r.task,
      state: r.state,
      statuses: [...r.statuses],
      containerId: r.container_id,
      // Absolute, as Mesos' `directory` (a relative --work_dir is the agent's working directory's).
      sandbox: resolve(r.sandbox),
      user: ownerOf(r.task, r.framework),
      phase,
    };
  }

  /** Running tasks with a known process group, for GET_CONTAINERS and the usage endpoints; `user` as in taskLists. */
  running(): RunningTask[] {
    const out: RunningTask[] = [];
    for (const t of this.#tasks.values()) {
      const r = t.record;
      if (t.phase !== 'ended' && r.task_pid !== undefined) {
        out.push({ frameworkId: r.framework_id, taskId: r.task.task_id.value, task: r.task, containerId: r.container_id, pid: r.task_pid, user: ownerOf(r.task, r.framework) });
      }
    }
    return out;
  }

  /** How many tasks the agent still knows: running, or ended with an update not yet acknowledged. */
  get known(): number {
    return this.#tasks.size;
  }

  /** Every task the agent still knows, for the metrics (computed on scrape). */
  facts(): SupervisedFacts[] {
    const out: SupervisedFacts[] = [];
    for (const t of this.#tasks.values()) out.push({ state: t.record.state, resources: t.record.task.resources, live: t.phase !== 'ended', pendingUpdates: t.record.pending.length });
    return out;
  }

  /** Updates queued and not yet acknowledged, sent or still being committed. */
  get unacknowledged(): number {
    let n = 0;
    for (const t of this.#tasks.values()) n += t.record.pending.length;
    return n;
  }

  /** How many tasks still have a process (or a launch in progress). */
  get live(): number {
    let n = 0;
    for (const t of this.#tasks.values()) if (t.phase !== 'ended') n++;
    return n;
  }

  #owned(r: TaskRecord): OwnedTask {
    return { task: this.#view(r), user: ownerOf(r.task, r.framework) };
  }

  #view(r: TaskRecord): Task {
    const head = r.pending[0];
    const task: Task = {
      name: r.task.name,
      task_id: r.task.task_id,
      framework_id: { value: r.framework_id },
      agent_id: this.#agentIdValue(r),
      state: r.state,
      resources: r.task.resources,
      statuses: r.statuses,
    };
    if (head !== undefined) {
      task.status_update_state = head.state;
      if (head.uuid !== undefined) task.status_update_uuid = head.uuid;
    }
    if (r.task.kill_policy !== undefined) task.kill_policy = r.task.kill_policy;
    if (r.task.labels !== undefined) task.labels = r.task.labels;
    return task;
  }

  #agentIdValue(r: TaskRecord): { value: string } {
    const id = this.#o.agentId();
    return id !== undefined ? { value: id } : r.task.agent_id;
  }

  // ---- Recovery ---------------------------------------------------------------------------

  /**
   * Takes back the tasks of a checkpoint: live launchers are adopted (and a kill in progress
   * resumed), launchers that ended while the agent was away yield their true end, and
   * unacknowledged updates go back into their queues.
   */
  recover(records: readonly TaskRecord[]): void {
    for (const record of records) {
      const key = taskKey(record.framework_id, record.task.task_id.value);
      const t = supervised(key, record);
      this.#tasks.set(key, t);
      const log = { taskId: record.task.task_id.value, frameworkId: record.framework_id };
      if (isTerminal(record.state)) {
        t.phase = 'ended';
        if (record.pending.length === 0) this.#complete(t);
        else this.#updates.pump(t);
        continue;
      }
      // A launcher started just before a crash, its pid not yet checkpointed, is found in /proc (by its exit file or its sandbox).
      if (record.launcher === undefined) {
        const found = findLauncher(this.#o.checkpoint.exitFile(record), record.sandbox);
        if (found !== undefined) record.launcher = found;
      }
      const launcher = record.launcher;
      if (record.framework.checkpoint !== true) {
        this.#loseUncheckpointed(t, log);
        continue;
      }
      this.#updates.pump(t);
      // No check state was checkpointed: a re-adopted task is checked from scratch.
      const checks = parseTaskChecks(record.task);
      if (checks.ok) t.checking = this.#checking(t, checks.value);
      else this.#o.log.warn('recovered task has invalid checks; not checking it', { ...log, error: checks.error });
      if (launcher !== undefined && launcherAlive(launcher.pid, launcher.start_time)) {
        t.adopted = true;
        if (record.task_pid === undefined) {
          const pid = this.#childOf(launcher.pid);
          if (pid !== undefined) record.task_pid = pid;
        }
        if (record.task_pid !== undefined) {
          t.phase = 'running';
          if (record.state === 'TASK_STAGING' || record.state === 'TASK_STARTING') this.#queueRunning(t);
        }
        this.#o.log.info('task re-adopted', { ...log, launcherPid: launcher.pid, pid: record.task_pid, state: record.state });
        if (record.kill !== undefined) this.#kills.resume(t);
        else this.#startChecks(t);
      } else {
        // The exit file is there if a launcher ran, even one whose pid was never checkpointed.
        const end = readLauncherEnd(this.#o.checkpoint.exitFile(record));
        this.#o.log.info('task ended while the agent was away', { ...log, end });
        this.#finish(t, end, end === undefined ? this.#whyNoEnd(record) : undefined);
      }
    }
    this.#schedulePoll();
  }

  /**
   * Mesos' rule for a framework without `checkpoint: true`: its tasks do not outlive the agent.
   * Whatever survived the restart is SIGKILLed (the agent is starting, there is no grace period
   * to honour and nothing to wait for) and the task is reported TASK_LOST. The updates still
   * queued from before the restart are dropped: Mesos does not recover a non-checkpointing
   * framework's update stream, and the TASK_LOST that replaces them is terminal. TASK_LOST
   * itself is checkpointed and resent until acknowledged, like any update.
   */
  #loseUncheckpointed(t: Supervised, log: { taskId: string; frameworkId: string }): void {
    const r = t.record;
    const launcher = r.launcher;
    if (launcher !== undefined && launcherAlive(launcher.pid, launcher.start_time)) {
      const pid = r.task_pid ?? this.#childOf(launcher.pid);
      // The task has a process group of its own; without its pid, the launcher's group goes.
      signalGroup(pid ?? launcher.pid, 'SIGKILL');
      this.#o.log.info('task of a non-checkpointing framework killed', { ...log, pid, launcherPid: launcher.pid });
    }
    t.phase = 'ended';
    r.pending = [];
    this.#updates.update(t, 'TASK_LOST', `Agent restarted; framework ${r.framework_id} does not checkpoint`, 'REASON_AGENT_RESTARTED', 'SOURCE_AGENT');
  }

  /** The task a launcher forked (its only child), for a crash between launch and the pid checkpoint. */
  #childOf(launcherPid: number): number | undefined {
    // /proc unreadable: no pids, and the task stays without one, watched through its launcher.
    return procPids().find((pid) => procStat(pid)?.[1] === String(launcherPid));
  }

  #schedulePoll(): void {
    if (this.#poll !== undefined || this.#closed) return;
    if (![...this.#tasks.values()].some((t) => t.adopted && t.phase !== 'ended')) return;
    this.#poll = this.#o.clock.setTimer(ADOPTED_POLL_MS, () => {
      this.#poll = undefined;
      for (const t of this.#tasks.values()) {
        const l = t.record.launcher;
        if (!t.adopted || t.phase === 'ended' || l === undefined) continue;
        if (!launcherAlive(l.pid, l.start_time)) {
          const end = readLauncherEnd(this.#o.checkpoint.exitFile(t.record));
          this.#finish(t, end, end === undefined ? this.#whyNoEnd(t.record) : undefined);
        }
      }
      this.#schedulePoll();
    });
  }

  // ---- Launch -----------------------------------------------------------------------------

  /** RUN_TASK. Never throws for a bad task: it becomes a TASK_ERROR or TASK_FAILED. */
  launch(frameworkId: string, framework: FrameworkInfo, task: TaskInfo): void {
    const taskId = task.task_id.value;
    const key = taskKey(frameworkId, taskId);
    const log = { taskId, frameworkId };
    if (this.#tasks.has(key) || this.#completedKeys.has(key)) {
      // The existing task must not be disturbed, so this error is sent once, outside its queue.
      this.#o.log.warn('duplicate task id', log);
      this.#o.instruments?.onLaunchFailure('duplicate');
      this.#o.sendOnce(frameworkId, this.#updates.status(task.task_id, 'TASK_ERROR', 'SOURCE_AGENT', `Task has duplicate ID: ${taskId}`, 'REASON_TASK_INVALID'));
      return;
    }
    const cp = this.#o.checkpoint;
    const drain = this.#o.draining?.();
    const record: TaskRecord = {
      format: CHECKPOINT_FORMAT,
      framework_id: frameworkId,
      framework,
      task,
      container_id: randomUUID(),
      sandbox: cp.sandboxDir(frameworkId, taskId),
      exit_file: cp.exitFileName(frameworkId, taskId),
      state: 'TASK_STAGING',
      statuses: [],
      pending: [],
    };
    const t = supervised(key, record);
    this.#tasks.set(key, t);

    if (drain !== undefined) {
      // Mesos `Slave::run` on a draining agent: refused, reliably (checkpointed, resent until acknowledged).
      t.phase = 'ended';
      const state: TaskState = hasCapability(framework, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
      this.#o.log.warn('task refused: agent is draining', log);
      this.#updates.update(t, state, 'Task was received while agent was already draining', 'REASON_AGENT_DRAINING', 'SOURCE_AGENT');
      this.#o.instruments?.onLaunchFailure('draining');
      return;
    }
    // Refused rather than started: nothing of it is written, nothing runs.
    const pressure = this.#o.diskPressure?.();
    if (pressure !== undefined) {
      this.#refuse(t, `Task not started: the agent is under disk pressure: ${pressure.message}`);
      return;
    }

    const command = task.command;
    if (command?.value === undefined || command.value === '') {
      t.phase = 'ended';
      this.#updates.update(t, 'TASK_ERROR', 'Task has no command value', 'REASON_TASK_INVALID', 'SOURCE_AGENT');
      this.#o.instruments?.onLaunchFailure('invalid');
      return;
    }
    // A bad check or health check refuses the launch, naming the field (Mesos' master does
    // the same validation and refuses with TASK_ERROR too).
    const checks = parseTaskChecks(task);
    if (!checks.ok) {
      t.phase = 'ended';
      this.#o.log.warn('task refused: invalid check', { ...log, error: checks.error });
      this.#updates.update(t, 'TASK_ERROR', checks.error, 'REASON_TASK_INVALID', 'SOURCE_AGENT');
      this.#o.instruments?.onLaunchFailure('invalid');
      return;
    }
    t.checking = this.#checking(t, checks.value);
    // As Mesos: shell (the default) runs `value` with /bin/sh -c; otherwise `value` is the
    // program and `arguments` its whole argv, argv[0] included (the program itself if empty).
    const program = command.shell === false ? command.value : '/bin/sh';
    const args = command.arguments ?? [];
    const argv = command.shell === false ? (args.length > 0 ? args : [command.value]) : ['sh', '-c', command.value];
    const env = taskEnvironment(record, this.#o.agentId());

    const spec: LaunchSpec = {
      program,
      argv,
      cwd: record.sandbox,
      env,
      stdoutPath: `${record.sandbox}/stdout`,
      stderrPath: `${record.sandbox}/stderr`,
      statusFile: cp.exitFile(record),
    };
    try {
      cp.prepareExits();
    } catch (e) {
      const err = e as NodeJS.ErrnoException;
      if (isSpaceError(err.code)) {
        this.#o.writeFailed?.(cp.metaDir, err);
        this.#refuse(t, `Task not started: ${describeWriteFailure({ path: cp.metaDir, code: err.code, message: err.message })}`);
      } else this.#launchFailed(t, err.message);
      return;
    }
    // The task, with its TASK_STARTING and its TASK_RUNNING to be, is on disk before its
    // launcher exists, in one commit. TASK_STARTING goes out once the launcher is started. A
    // crash before the launcher's pid is checkpointed is found out at recovery by looking for
    // this task's launcher in /proc; one that never started makes the task fail.
    record.running = this.#updates.make(t, 'TASK_RUNNING');
    const starting = this.#updates.queue(t, 'TASK_STARTING');
    t.held = starting;
    t.awaitingFirstCommit = true;
    // The sandbox is made on the thread pool while the commit is under way (a directory costs the
    // filesystem about as much as the commit's fdatasync). Its output files and the exit file are
    // the launcher's to make, once the task is forked.
    const sandbox = makeSandbox(record.sandbox);
    this.#o.checkpoint.after(t.written, () => {
      t.awaitingFirstCommit = false;
      // Refused meanwhile (its first commit failed): it was written at last, with its forgetting.
      if (t.volatile || this.#tasks.get(t.key) !== t) return;
      void sandbox.then((error) => {
        if (error === undefined) return this.#start(t, spec, starting);
        if (!isSpaceError(error.code)) return this.#launched(t, { ok: false, error: error.message }, starting);
        const dir = dirname(dirname(record.sandbox));
        this.#o.writeFailed?.(dir, error);
        this.#launched(t, { ok: false, error: `Task not started: cannot create its sandbox: ${describeWriteFailure({ path: dir, code: error.code, message: error.message })}` }, starting, true);
      });
    });
  }

  /**
   * The checkpoint could not commit (`cause`, in words): the launches still waiting for their
   * first commit are refused now instead of waiting for the disk. Their record and its
   * forgetting are both written once the checkpoint writes again; no launcher starts.
   */
  commitFailed(cause: string): void {
    for (const t of this.#tasks.values()) {
      if (!t.awaitingFirstCommit || t.volatile) continue;
      t.awaitingFirstCommit = false;
      const r = t.record;
      const held = t.held;
      r.pending = r.pending.filter((st) => st !== held);
      r.statuses = r.statuses.filter((st) => st !== held);
      t.held = undefined;
      delete r.running;
      this.#o.checkpoint.removeTask(r);
      this.#refuse(t, `Task not started: the agent cannot write its checkpoint: ${cause}`);
    }
  }

  /** Refuses a launch that started nothing and wrote nothing: TASK_FAILED, kept in memory only. */
  #refuse(t: Supervised, message: string): void {
    t.volatile = true;
    t.phase = 'ended';
    this.#o.log.warn('task refused', { taskId: t.record.task.task_id.value, frameworkId: t.record.framework_id, message });
    this.#updates.update(t, 'TASK_FAILED', message, 'REASON_CONTAINER_LAUNCH_FAILED', 'SOURCE_AGENT');
    this.#o.instruments?.onLaunchFailure('disk_pressure');
  }

  /** Starts the launcher of a task whose record (with `starting`, its TASK_STARTING) is durable. */
  #start(t: Supervised, spec: LaunchSpec, starting: TaskStatus): void {
    // Stopping (an agent upgrade): the task stays STAGING without a launcher, and the next agent reports it failed.
    if (this.#closed) return;
    const launch = this.#o.launch ?? spawnLauncher;
    void launch(spec).then(
      (result) => this.#launched(t, result, starting),
      (e: unknown) => this.#launched(t, { ok: false, error: (e as Error).message }, starting),
    );
  }

  /** The launcher is started (and the task forked, with its pid), or the launch failed (`disk`: for want of space, and the error says so). */
  #launched(t: Supervised, result: Launched, starting: TaskStatus, disk = false): void {
    const record = t.record;
    const frameworkId = record.framework_id;
    const taskId = record.task.task_id.value;
    const log = { taskId, frameworkId };
    t.held = undefined;
    if (!result.ok) {
      // TASK_STARTING was never sent: it is taken back, and the task fails.
      record.pending = record.pending.filter((s) => s !== starting);
      record.statuses = record.statuses.filter((s) => s !== starting);
      this.#launchFailed(t, result.error, disk);
      return;
    }
    // Checkpointed with the next change (TASK_RUNNING, or how the task ended).
    record.launcher = { pid: result.launcherPid, start_time: result.startTime };
    // TASK_STARTING, and TASK_RUNNING when the task's pid came with the answer: sent first, logged after.
    this.#updates.pump(t);
    if (result.taskPid !== undefined) this.#running(t, result.taskPid);
    this.#o.instruments?.onLaunch();
    this.#o.log.info('task launched', { ...log, launcherPid: result.launcherPid, sandbox: record.sandbox });
    void result.ended.then((how) => {
      if (how === 'exited') return this.#ended(t, result.report());
      // No longer this process's child to reap: watched through /proc, as a re-adopted launcher.
      t.adopted = true;
      if (record.task_pid === undefined) {
        const pid = this.#childOf(result.launcherPid);
        if (pid !== undefined) this.#running(t, pid);
      }
      this.#schedulePoll();
    });
  }

  /** The task has a pid: TASK_RUNNING, and a kill asked for meanwhile is carried out now. */
  #running(t: Supervised, pid: number): void {
    const record = t.record;
    if (t.phase !== 'staging') return;
    record.task_pid = pid;
    t.phase = 'running';
    this.#queueRunning(t);
    this.#o.log.info('task running', { taskId: record.task.task_id.value, frameworkId: record.framework_id, pid });
    if (t.killWanted !== undefined) this.kill(record.framework_id, record.task.task_id.value, t.killWanted ?? undefined);
    else this.#startChecks(t);
  }

  /**
   * The task has a pid: its TASK_RUNNING is queued. The one prepared at launch was committed
   * before the launcher started, so it goes out now (in the same write as TASK_STARTING, often);
   * the change recording the pid follows, and an agent restarted before it finds the task by its
   * launcher and sends the same update. Without a prepared one (a record from an agent before
   * it), a new update is committed first, as any other.
   */
  #queueRunning(t: Supervised): void {
    const r = t.record;
    const prepared = r.running;
    delete r.running;
    if (prepared === undefined) {
      this.#updates.update(t, 'TASK_RUNNING');
      return;
    }
    // Stamped now, when the task runs (a resend after a restart before the next write carries the
    // launch's time); durable already, so sent before this write is even staged.
    this.#updates.queueDurable(t, prepared);
  }

  #launchFailed(t: Supervised, error: string, disk = false): void {
    this.#o.log.error('task launch failed', { taskId: t.record.task.task_id.value, frameworkId: t.record.framework_id, error });
    t.phase = 'ended';
    if (disk) this.#updates.update(t, 'TASK_FAILED', error, 'REASON_CONTAINER_LAUNCH_FAILED', 'SOURCE_AGENT');
    else this.#updates.update(t, 'TASK_FAILED', `Failed to launch task: ${error}`, 'REASON_COMMAND_EXECUTOR_FAILED', 'SOURCE_AGENT');
    this.#o.instruments?.onLaunchFailure(disk ? 'disk_pressure' : 'launcher');
  }

  /**
   * The launcher this agent started exited: the end it recorded in its exit file; else the end
   * it reported because it could not record it (the write's failure goes to the disk watch);
   * else no end, and why, as far as the agent can tell.
   */
  #ended(t: Supervised, report: LauncherReport | undefined): void {
    const file = this.#o.checkpoint.exitFile(t.record);
    const recorded = readLauncherEnd(file);
    if (recorded !== undefined) return this.#finish(t, recorded);
    if (report === undefined) return this.#finish(t, undefined, this.#whyNoEnd(t.record));
    const code = errnoName(report.errno);
    this.#o.writeFailed?.(dirname(file), Object.assign(new Error(report.error), { code }));
    const { errno: _errno, error: _error, ...end } = report;
    this.#finish(t, end, `the launcher could not record it in ${file}: ${report.error}`);
  }

  /** Why a launcher left no end in its exit file, as far as the agent can tell: the file's state, and its disk. */
  #whyNoEnd(r: TaskRecord): string {
    const file = this.#o.checkpoint.exitFile(r);
    let state = 'is missing';
    try {
      if (existsSync(file)) state = readFileSync(file, 'utf8').trim() === '' ? 'is blank' : 'holds no end';
    } catch (e) {
      state = `cannot be read (${(e as Error).message})`;
    }
    const pressure = this.#o.diskPressure?.();
    return `its exit file ${file} ${state}${pressure === undefined ? '' : `; the agent is under disk pressure: ${pressure.message}`}`;
  }

  // ---- Checks -----------------------------------------------------------------------------

  /** The TaskChecking of a task with a check or a health check; undefined for one with neither. */
  #checking(t: Supervised, checks: TaskChecks): TaskChecking | undefined {
    return taskChecking(t, checks, {
      clock: this.#o.clock,
      log: this.#o.log,
      runProbe: this.#o.runProbe ?? runProbe,
      env: (task) => taskEnvironment(task.record, this.#o.agentId()),
      update: (task, reason) => this.#updates.update(task, 'TASK_RUNNING', undefined, reason),
      kill: (task, failures) => this.#kills.kill(task, undefined, failures),
    });
  }

  /** Starts checking a running task that is not being killed (and not on a closed supervisor). */
  #startChecks(t: Supervised): void {
    if (this.#closed || t.phase !== 'running' || t.record.kill !== undefined) return;
    t.checking?.start();
  }

  // ---- Kill -------------------------------------------------------------------------------

  /** KILL_TASK: SIGTERM to the group now, SIGKILL when the grace period is over. */
  kill(frameworkId: string, taskId: string, override?: KillPolicy): void {
    const t = this.#tasks.get(taskKey(frameworkId, taskId));
    if (t === undefined) {
      this.#o.log.warn('kill for unknown task', { taskId, frameworkId });
      return;
    }
    this.#kills.kill(t, override);
  }

  /**
   * A drain (Mesos `Slave::drain`): every task still running is killed with the drain's
   * kill-policy override (shared/drain.ts killPolicy); one already being killed only ever gets
   * a shorter wait. Recovered tasks are killed again after an agent restart.
   */
  drain(config: DrainConfigWire): void {
    for (const t of [...this.#tasks.values()]) {
      if (t.phase === 'ended') continue;
      this.kill(t.record.framework_id, t.record.task.task_id.value, killPolicy(t.record.task, config));
    }
  }

  /** Kills every task with its own kill policy and resolves when all have ended (or after timeoutMs). */
  killAll(timeoutMs: number): Promise<void> {
    for (const t of this.#tasks.values()) {
      if (t.phase !== 'ended') this.kill(t.record.framework_id, t.record.task.task_id.value);
    }
    return new Promise((resolve) => {
      if (this.live === 0) return resolve();
      const timer = this.#o.clock.setTimer(timeoutMs, () => {
        this.#endWaiters = this.#endWaiters.filter((w) => w !== check);
        resolve();
      });
      const check = (): void => {
        if (this.live > 0) return;
        timer.cancel();
        this.#endWaiters = this.#endWaiters.filter((w) => w !== check);
        resolve();
      };
      this.#endWaiters.push(check);
    });
  }

  // ---- End and acknowledgement ------------------------------------------------------------

  /** The task ended (`end` undefined: how is not known); `unrecorded`: why its exit file does not say. */
  #finish(t: Supervised, end: LauncherEnd | undefined, unrecorded?: string): void {
    if (t.phase === 'ended') return;
    t.phase = 'ended';
    t.checking?.stop();
    this.#kills.cancel(t);
    const r = t.record;
    const killed = r.kill !== undefined || t.killWanted !== undefined;
    const outcome = terminalOutcome(end, killed, unrecorded);
    const healthFailures = r.kill?.health_check_failures;
    this.#o.log.info('task ended', {
      taskId: r.task.task_id.value,
      frameworkId: r.framework_id,
      state: outcome.state,
      message: outcome.message,
      ...(end !== undefined ? ('exit_code' in end ? { exitCode: end.exit_code } : { signal: end.signal }) : {}),
      ...(r.kill !== undefined
        ? { killRequestedMs: r.kill.requested_ms, graceMs: r.kill.grace_ms, escalated: r.kill.sigkill_ms !== undefined, sigkillMs: r.kill.sigkill_ms }
        : {}),
      endedMs: end?.ended_ms,
    });
    if (healthFailures !== undefined) {
      // Mesos' executor only sets healthy:false here; the reason and message say why as well.
      const message = `Task killed after its health check failed ${healthFailures} consecutive time${healthFailures === 1 ? '' : 's'}: ${outcome.message}`;
      this.#updates.update(t, outcome.state, message, 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED', 'SOURCE_EXECUTOR', false);
    } else {
      this.#updates.update(t, outcome.state, outcome.message, outcome.reason);
    }
    for (const w of [...this.#endWaiters]) w();
  }

  /** ACKNOWLEDGE: only an update in flight can be acknowledged; anything else is ignored. */
  acknowledge(frameworkId: string, taskId: string, uuid: string): void {
    const t = this.#tasks.get(taskKey(frameworkId, taskId));
    if (t === undefined || !this.#updates.acknowledge(t, uuid)) {
      this.#o.log.debug('ignoring acknowledgement', { taskId, frameworkId, uuid, expected: t?.record.pending[0]?.uuid });
      return;
    }
    const r = t.record;
    if (t.phase === 'ended' && r.pending.length === 0 && isTerminal(r.state)) {
      this.#complete(t);
      return;
    }
    // The next update was written when it was queued, so it goes out as soon as that write is
    // durable (at once, unless it was queued in this same round of events): the acknowledgement's
    // own write does not hold it back. A crash before that write is durable only resends the
    // acknowledged update, which the master treats as a retry.
    this.#updates.write(t);
    this.#updates.pump(t);
  }

  #complete(t: Supervised): void {
    const r = t.record;
    // A volatile task has nothing on disk (or its forgetting is written already).
    if (!t.volatile) this.#o.checkpoint.removeTask(r);
    this.#tasks.delete(t.key);
    this.#updates.forget(t);
    this.#completed.push({ owned: this.#owned(r), executor: this.#executor(r, 'completed') });
    this.#completedKeys.add(t.key);
    while (this.#completed.length > COMPLETED_TASKS_KEPT) {
      const old = this.#completed.shift()?.owned.task;
      if (old !== undefined) this.#completedKeys.delete(taskKey(old.framework_id.value, old.task_id.value));
    }
    this.#o.log.info('task completed', { taskId: r.task.task_id.value, frameworkId: r.framework_id, state: r.state });
  }

  /** Stops timers and checks; leaves every task running (an agent restart re-adopts them). */
  close(): void {
    this.#closed = true;
    this.#poll?.cancel();
    this.#poll = undefined;
    for (const t of this.#tasks.values()) {
      this.#kills.cancel(t);
      // Checks do not outlive the agent; the next one checks re-adopted tasks from scratch.
      t.checking?.stop();
    }
  }
}

/**
 * The environment of a task (and of its check commands): a few variables inherited from the
 * agent, the task's own, then the sandbox and ids. Computed again for a re-adopted task.
 */
export function taskEnvironment(record: TaskRecord, agentId: string | undefined): Record<string, string> {
  const env: Record<string, string> = {};
  for (const name of INHERITED_ENV) {
    const v = process.env[name];
    if (v !== undefined) env[name] = v;
  }
  env['PATH'] ??= '/usr/local/bin:/usr/bin:/bin';
  for (const v of record.task.command?.environment?.variables ?? []) if (v.value !== undefined) env[v.name] = v.value;
  Object.assign(env, {
    MESOS_SANDBOX: record.sandbox,
    DRYDOCK_SANDBOX: record.sandbox,
    DRYDOCK_TASK_ID: record.task.task_id.value,
    DRYDOCK_FRAMEWORK_ID: record.framework_id,
    DRYDOCK_AGENT_ID: agentId ?? record.task.agent_id.value,
  });
  return env;
}

/** Makes a task's sandbox; the error if that failed. */
async function makeSandbox(dir: string): Promise<NodeJS.ErrnoException | undefined> {
  try {
    await mkdir(dir, { recursive: true });
    return undefined;
  } catch (e) {
    return e as NodeJS.ErrnoException;
  }
}

/** A new task's state in the supervisor. */
function supervised(key: string, record: TaskRecord): Supervised {
  return { key, record, phase: 'staging', adopted: false, killTimer: undefined, killWanted: undefined, checking: undefined, written: 0, held: undefined, volatile: false, awaitingFirstCommit: false };
}

/** An errno number's name (28: ENOSPC), as Node's errors carry it in `code`. */
function errnoName(errno: number): string | undefined {
  try {
    return getSystemErrorName(-Math.abs(errno));
  } catch {
    return undefined;
  }
}

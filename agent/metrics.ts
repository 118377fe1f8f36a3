/**
 * The agent's figures (issue 14): `GET /metrics` in Prometheus text and `GET /metrics/snapshot`
 * with Mesos' agent keys (`slave/tasks_running`, `slave/registered`, …), on the agent API's port.
 *
 * As on the master, two kinds of figures, kept apart:
 * - what the agent holds now (tasks by state, resources in use, updates not yet acknowledged,
 *   registered or not) is computed on scrape: the agent's model is read into plain data
 *   (`AgentFacts`), `summarizeAgent` (pure) counts it, and both the gauges and `agentSnapshot`
 *   (pure) read that one summary;
 * - what happened (launches, kills, kills that escalated to SIGKILL, terminal updates,
 *   checkpoint writes, registrations with the master) is counted where it happens, through the
 *   instrument ports the cores take (`SupervisorInstruments`, `CheckpointInstruments`).
 *
 * prom-client lives here only; the supervisor and the checkpoint know the ports, not the library.
 */

import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Clock } from '../shared/clock.js';
import { isTerminal, TASK_STATES, type Resource, type TaskState } from '../shared/mesos.js';
import { MASTER_MESSAGE_TYPES, type Refusal } from '../shared/protocol.js';
import { scalarOf } from '../shared/resources.js';
import { createMetricsRegistry, RESOURCE_NAMES, resourceKeys, ScrapedGauges, sendSnapshot, systemFacts, systemKeys, type ResourceName, type ResourceUse, type SystemFacts } from '../io/metrics.js';
import type { CheckpointInstruments } from './checkpoint.js';
import type { LaunchFailure, SupervisedFacts, SupervisorInstruments } from './supervisor.js';

// ---- The pure core -------------------------------------------------------------------------

/** The agent's model, as plain data (read on scrape). */
export interface AgentFacts {
  /** Tasks the agent still knows: running, or ended with an update not yet acknowledged. */
  readonly tasks: readonly SupervisedFacts[];
  /** What the agent offers (its --resources, or what it detected). */
  readonly resources: readonly Resource[];
  /** The session with the master is registered. */
  readonly registered: boolean;
  /** Disk pressure now, and the last figures of each filesystem the agent watches (agent/disk-watch.ts). */
  readonly disk?: { readonly pressure: boolean; readonly readings: readonly DiskFigures[] } | undefined;
}

/** One watched filesystem's figures, by the directory it was read at: `work_dir` or `sandboxes`. */
export interface DiskFigures {
  readonly dir: string;
  readonly freeBytes: number;
  readonly freeInodes: number;
}


/** The counts every model figure is read from. */
export interface AgentSummary {
  /** Tasks the agent knows now, by state (a terminal one until its update is acknowledged). */
  tasks: Record<TaskState, number>;
  /** Tasks with a process group (or a launch in progress): Mesos' running executors. */
  executorsRunning: number;
  /** Status updates queued and not yet acknowledged by the master, over every task. */
  pendingUpdates: number;
  resources: Record<ResourceName, ResourceUse>;
  registered: boolean;
  diskPressure: boolean;
  disks: DiskFigures[];
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** Counts the model. Pure. Resources are used by tasks not yet terminal. */
export function summarizeAgent(f: AgentFacts): AgentSummary {
  const tasks = {} as Record<TaskState, number>;
  for (const s of TASK_STATES) tasks[s] = 0;
  const resources = {} as Record<ResourceName, ResourceUse>;
  for (const name of RESOURCE_NAMES) resources[name] = { total: scalarOf(f.resources, name), used: 0 };
  let executorsRunning = 0;
  let pendingUpdates = 0;
  for (const t of f.tasks) {
    tasks[t.state]++;
    if (t.live) executorsRunning++;
    pendingUpdates += t.pendingUpdates;
    if (isTerminal(t.state)) continue;
    for (const name of RESOURCE_NAMES) resources[name].used += scalarOf(t.resources, name);
  }
  // Sums of doubles (0.1 + 0.2): round to what a resource can be written as.
  for (const name of RESOURCE_NAMES) resources[name].used = round3(resources[name].used);
  return { tasks, executorsRunning, pendingUpdates, resources, registered: f.registered, diskPressure: f.disk?.pressure === true, disks: [...(f.disk?.readings ?? [])] };
}

/** What the process counted, and what it knows of its host, for the snapshot. */
export interface AgentProcessFacts {
  readonly uptimeSecs: number;
  /** Terminal updates generated since the process started, by state. */
  readonly terminalTasks: Readonly<Partial<Record<TaskState, number>>>;
  /** Status updates generated since the process started. */
  readonly statusUpdates: number;
  readonly launches: number;
  readonly launchFailures: number;
  readonly kills: number;
  readonly killEscalations: number;
  readonly registrations: number;
  readonly disconnections: number;
  /** Master messages refused (they did not decode; the session went on), every type together. */
  readonly refusedMessages: number;
  readonly system: SystemFacts;
}

/** Mesos' agent task gauges (states a task is in now), by key suffix. */
const TASK_GAUGES: ReadonlyArray<[string, TaskState]> = [
  ['staging', 'TASK_STAGING'],
  ['starting', 'TASK_STARTING'],
  ['running', 'TASK_RUNNING'],
  ['killing', 'TASK_KILLING'],
];

/**
 * Mesos' agent task counters (terminal transitions since the agent started). Mesos' agent has
 * no key of its own for a task marked gone by the operator (a drain with mark_gone): it counts
 * as gone. TASK_ERROR and TASK_DROPPED have no agent key in Mesos; `drydock_agent_task_terminal_total`
 * counts every state.
 */
const TASK_COUNTERS: ReadonlyArray<[string, readonly TaskState[]]> = [
  ['finished', ['TASK_FINISHED']],
  ['failed', ['TASK_FAILED']],
  ['killed', ['TASK_KILLED']],
  ['lost', ['TASK_LOST']],
  ['gone', ['TASK_GONE', 'TASK_GONE_BY_OPERATOR']],
];

/**
 * `/metrics/snapshot`: Mesos' agent keys (docs/monitoring.md), and Drydock's own under
 * `drydock/`. Pure. Percentages are fractions, as Mesos writes them (used / total; 0 without a
 * total). `slave/invalid_status_updates` is always 0: Mesos counts updates its executors send
 * that it must drop; Drydock's command executor is the agent itself, so none can be invalid.
 */
export function agentSnapshot(s: AgentSummary, p: AgentProcessFacts): Record<string, number> {
  const v: Record<string, number> = {
    'slave/uptime_secs': p.uptimeSecs,
    'slave/registered': s.registered ? 1 : 0,
    'slave/executors_running': s.executorsRunning,
    'slave/valid_status_updates': p.statusUpdates,
    'slave/invalid_status_updates': 0,
    ...systemKeys(p.system),
    'drydock/task_launches': p.launches,
    'drydock/task_launch_failures': p.launchFailures,
    'drydock/task_kills': p.kills,
    'drydock/task_kill_escalations': p.killEscalations,
    'drydock/status_updates_pending': s.pendingUpdates,
    'drydock/master_registrations': p.registrations,
    'drydock/master_disconnections': p.disconnections,
    'drydock/master_messages_refused': p.refusedMessages,
    'drydock/disk_pressure': s.diskPressure ? 1 : 0,
  };
  for (const [key, state] of TASK_GAUGES) v[`slave/tasks_${key}`] = s.tasks[state];
  for (const [key, states] of TASK_COUNTERS) v[`slave/tasks_${key}`] = states.reduce((n, st) => n + (p.terminalTasks[st] ?? 0), 0);
  return { ...v, ...resourceKeys('slave', s.resources) };
}

// ---- The shell -----------------------------------------------------------------------------

/** Checkpoint write buckets (s): an fsync on an SSD is under a millisecond, on a busy disk tens to hundreds. */
const WRITE_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];

const LAUNCH_FAILURES: readonly LaunchFailure[] = ['duplicate', 'draining', 'invalid', 'launcher', 'disk_pressure'];

/** What the agent tells the metrics about its session with the master. */
export interface MasterSessionInstruments {
  /** REGISTERED arrived; `reregistered` when the agent came with an id it had before. */
  onRegistered(reregistered: boolean): void;
  /** A registered session dropped (the agent reconnects). */
  onDisconnected(): void;
  /** A master message did not decode and was refused; the session went on. */
  onRefused(type: Refusal['type']): void;
}

export interface AgentMetricsOptions {
  /** Reads the agent's model (called once per scrape). */
  facts: () => AgentFacts;
  /** When the process started (ms since the epoch). */
  processStartMs: number;
  clock: Clock;
}

/** The agent process's metrics. */
export class AgentMetrics {
  readonly registry: Registry;
  /** What the cores are given (agent.ts passes them on). */
  readonly instruments: { supervisor: SupervisorInstruments; checkpoint: CheckpointInstruments; session: MasterSessionInstruments };
  readonly #o: AgentMetricsOptions;
  readonly #gauges: ScrapedGauges<AgentSummary>;
  readonly #counts = {
    statusUpdates: 0,
    launches: 0,
    launchFailures: 0,
    kills: 0,
    killEscalations: 0,
    registrations: 0,
    disconnections: 0,
    refusedMessages: 0,
    terminalTasks: {} as Partial<Record<TaskState, number>>,
  };

  constructor(o: AgentMetricsOptions) {
    this.#o = o;
    const registry = createMetricsRegistry('agent');
    this.registry = registry;
    const registers = [registry];
    const p = 'drydock_agent_';
    // Gauges, computed on scrape from one summary of the model.
    const gauges = new ScrapedGauges(registry, p, () => this.summary());
    this.#gauges = gauges;
    const gauge = gauges.gauge.bind(gauges);
    gauge('tasks', 'Tasks the agent knows now, by state (a terminal one until the master acknowledges its update).', ['state'], (g, s) => {
      for (const st of TASK_STATES) g.set({ state: st }, s.tasks[st]);
    });
    gauge('task_processes', 'Tasks with a live process group (or a launch in progress).', [], (g, s) => g.set(s.executorsRunning));
    gauge('registered', '1 while the agent is registered with a master, else 0.', [], (g, s) => g.set(s.registered ? 1 : 0));
    gauge('status_updates_pending', 'Status updates queued and not yet acknowledged by the master, over every task.', [], (g, s) => g.set(s.pendingUpdates));
    gauge('resource_capacity', 'Scalar resources the agent offers (cpus, mem and disk in MB, gpus).', ['resource'], (g, s) => {
      for (const name of RESOURCE_NAMES) g.set({ resource: name }, s.resources[name].total);
    });
    gauge('resource_used', 'Scalar resources held by tasks not yet terminal.', ['resource'], (g, s) => {
      for (const name of RESOURCE_NAMES) g.set({ resource: name }, s.resources[name].used);
    });
    gauge('disk_pressure', '1 while the agent is short of disk (free space or inodes below --disk_pressure_*, or a write failed for want of space): launches are refused and the master does not offer the agent. Its log says why.', [], (g, s) => g.set(s.diskPressure ? 1 : 0));
    gauge('disk_free_bytes', 'Free bytes (for an unprivileged writer) of the filesystems the agent writes to, as last read: dir="work_dir" (the checkpoint), dir="sandboxes".', ['dir'], (g, s) => {
      for (const d of s.disks) g.set({ dir: d.dir }, d.freeBytes);
    });
    gauge('disk_free_inodes', 'Free inodes of the filesystems the agent writes to, as last read (dir as drydock_agent_disk_free_bytes).', ['dir'], (g, s) => {
      for (const d of s.disks) g.set({ dir: d.dir }, d.freeInodes);
    });

    const launches = new Counter({ name: `${p}task_launches_total`, help: 'Task process groups started.', registers });
    const launchFailures = new Counter({
      name: `${p}task_launch_failures_total`,
      help: 'RUN_TASKs that started no process, by reason: duplicate (task id in use), draining (agent draining), invalid (TASK_ERROR), launcher (the launcher could not start it), disk_pressure (refused: the agent is short of disk, or could not write the task\'s checkpoint or sandbox).',
      labelNames: ['reason'],
      registers,
    });
    for (const reason of LAUNCH_FAILURES) launchFailures.inc({ reason }, 0);
    const kills = new Counter({ name: `${p}task_kills_total`, help: 'Kills begun: SIGTERM sent to a task\'s process group (once per task).', registers });
    const escalations = new Counter({ name: `${p}task_kill_escalations_total`, help: 'Kills whose grace period ran out: SIGKILL sent to the task\'s process group.', registers });
    const terminal = new Counter({ name: `${p}task_terminal_total`, help: 'Tasks that reached a terminal state on this agent, by state.', labelNames: ['state'], registers });
    const updates = new Counter({ name: `${p}status_updates_total`, help: 'Status updates generated and queued for the master (Mesos\' valid_status_updates).', registers });
    const writes = new Histogram({ name: `${p}checkpoint_write_duration_seconds`, help: 'Checkpoint commits (one write and fdatasync of the changes decided together, or a compaction), successful or not.', buckets: WRITE_BUCKETS, registers });
    const writeFailures = new Counter({ name: `${p}checkpoint_write_failures_total`, help: 'Checkpoint writes that failed.', registers });
    const registrations = new Counter({ name: `${p}master_registrations_total`, help: 'Registrations with a master: kind="new" (no agent id yet), kind="reregistered" (with its checkpointed id, after a restart or a reconnect).', labelNames: ['kind'], registers });
    registrations.inc({ kind: 'new' }, 0);
    registrations.inc({ kind: 'reregistered' }, 0);
    const disconnections = new Counter({ name: `${p}master_disconnections_total`, help: 'Registered sessions with the master that dropped (the agent reconnects with backoff).', registers });
    const refused = new Counter({
      name: `${p}master_messages_refused_total`,
      help: 'Master messages the agent refused, by type ("?": a type it does not know): they did not decode, nothing was done with them, the session went on. Each is logged once and named to the master.',
      labelNames: ['type'],
      registers,
    });
    for (const type of [...MASTER_MESSAGE_TYPES, '?']) refused.inc({ type }, 0);

    const c = this.#counts;
    this.instruments = {
      supervisor: {
        onLaunch: () => {
          c.launches++;
          launches.inc();
        },
        onLaunchFailure: (reason) => {
          c.launchFailures++;
          launchFailures.inc({ reason });
        },
        onKill: () => {
          c.kills++;
          kills.inc();
        },
        onEscalation: () => {
          c.killEscalations++;
          escalations.inc();
        },
        onStatusUpdate: (state) => {
          c.statusUpdates++;
          updates.inc();
          if (!isTerminal(state)) return;
          c.terminalTasks[state] = (c.terminalTasks[state] ?? 0) + 1;
          terminal.inc({ state });
        },
      },
      checkpoint: {
        now: () => performance.now(),
        onWrite: (ms, ok) => {
          writes.observe(ms / 1000);
          if (!ok) writeFailures.inc();
        },
      },
      session: {
        onRegistered: (reregistered) => {
          c.registrations++;
          registrations.inc({ kind: reregistered ? 'reregistered' : 'new' });
        },
        onDisconnected: () => {
          c.disconnections++;
          disconnections.inc();
        },
        onRefused: (type) => {
          c.refusedMessages++;
          refused.inc({ type });
        },
      },
    };
  }

  /** The model's summary now. */
  summary(): AgentSummary {
    return summarizeAgent(this.#o.facts());
  }

  /** `GET /metrics`: one scrape, every gauge reading the same summary. */
  sendPrometheus(res: ServerResponse): Promise<void> {
    return this.#gauges.send(res);
  }

  /** `GET /metrics/snapshot`. */
  sendSnapshot(res: ServerResponse): void {
    sendSnapshot(res, this.snapshot());
  }

  /** `/metrics/snapshot`'s values (also the agent API's GET_METRICS). */
  snapshot(): Record<string, number> {
    const c = this.#counts;
    return agentSnapshot(this.summary(), {
      uptimeSecs: Math.max(0, (this.#o.clock.now() - this.#o.processStartMs) / 1000),
      terminalTasks: { ...c.terminalTasks },
      statusUpdates: c.statusUpdates,
      launches: c.launches,
      launchFailures: c.launchFailures,
      kills: c.kills,
      killEscalations: c.killEscalations,
      registrations: c.registrations,
      disconnections: c.disconnections,
      refusedMessages: c.refusedMessages,
      system: systemFacts(),
    });
  }
}

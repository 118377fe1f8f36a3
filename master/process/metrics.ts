/**
 * The master's figures (issue 14): `GET /metrics` in Prometheus text and `GET /metrics/snapshot`
 * with Mesos' flat keys. Every master answers for itself, leader or standby (Mesos does not
 * redirect `/metrics/snapshot` either): a standby says `master/elected 0` and no model figures.
 *
 * Two kinds of figures, kept apart:
 * - counts of what the model holds now (agents by state, machines by mode, tasks, drains,
 *   offers, plan steps) are computed on scrape from the current term, never updated on events:
 *   `factsOf(term)` reads the model into plain data, `summarize` (pure) counts it, and both the
 *   gauges and `snapshotOf` (pure) read that one summary, so one scrape is one consistent view;
 * - what happened (registry writes, acknowledgements, inverse-offer answers, registrations,
 *   terminal task updates, elections) is counted where it happens, through the instrument ports
 *   the services take (`CommitInstruments`, `FrameworkInstruments`) and the term's event bus.
 * Counters belong to the process: they survive terms, as a Prometheus counter must.
 *
 * prom-client lives here only; the services know the ports, not the library.
 */

import type { ServerResponse } from 'node:http';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { sharedAnswers } from '../api/json-stream.js';
import { Counter, Histogram, type Registry } from 'prom-client';
import type { Clock } from '../../shared/clock.js';
import type { DrainState } from '../../shared/drain.js';
import { agentMachineId, machineKey, machineText, type MachineMode } from '../../shared/machine.js';
import { isTerminal, TASK_STATES, type Resource, type TaskState } from '../../shared/mesos.js';
import { scalarOf } from '../../shared/resources.js';
import { MASTER_MESSAGE_TYPES } from '../../shared/protocol.js';
import { createMetricsRegistry, RESOURCE_NAMES, resourceKeys, ScrapedGauges, snapshotJson, systemFacts, systemKeys, type ResourceName, type ResourceUse, type SystemFacts } from '../../io/metrics.js';
import type { AgentPhase } from '../cores/agents.js';
import type { CommitInstruments } from '../term/commit.js';
import type { FrameworkPhase } from '../cores/frameworks.js';
import type { AgentInstruments, FrameworkInstruments } from '../term/ports.js';
import type { ServingTerm } from '../term/ports.js';

// ---- The pure core -------------------------------------------------------------------------

/**
 * An agent's state as the `drydock_master_agents{state}` gauge counts it: exactly one per
 * agent, the first that applies in this order (what needs an operator first): unreachable,
 * disconnected (also: known from the registry, not re-registered yet), drained, draining,
 * deactivated, active. `gone` counts ids marked gone (they are no longer agents of the table).
 */
export type AgentMetricState = 'active' | 'deactivated' | 'draining' | 'drained' | 'disconnected' | 'unreachable' | 'gone';

export const AGENT_METRIC_STATES: readonly AgentMetricState[] = ['active', 'deactivated', 'draining', 'drained', 'disconnected', 'unreachable', 'gone'];

export const MACHINE_MODES: readonly MachineMode[] = ['UP', 'DRAINING', 'DOWN'];

/** A framework's state as `drydock_master_frameworks{state}` counts it (one per framework). */
export type FrameworkMetricState = 'connected' | 'disconnected' | 'recovered';

/** One agent as the metrics see it: plain data. */
export interface AgentFacts {
  /** Its id and hostname: the labels of its disk pressure's series. */
  readonly id: string;
  readonly hostname: string;
  readonly phase: AgentPhase;
  readonly connected: boolean;
  readonly deactivated: boolean;
  readonly drain: { readonly state: DrainState; readonly startedMs: number } | undefined;
  readonly resources: readonly Resource[];
  readonly tasks: ReadonlyArray<{ readonly state: TaskState; readonly resources: readonly Resource[] }>;
  /** Since when (ms, the master's clock) the agent's session reports disk pressure; undefined: none. */
  readonly diskPressureSinceMs?: number | undefined;
}

/** One machine: its name as operators write it, its mode, and when its window ends (ms), if it has an end. */
export interface MachineFacts {
  readonly name: string;
  readonly mode: MachineMode;
  readonly windowEndMs: number | undefined;
}

/** The model of one term, as plain data (`factsOf` reads it from a term). */
export interface ModelFacts {
  readonly agents: readonly AgentFacts[];
  readonly goneAgents: number;
  readonly machines: readonly MachineFacts[];
  readonly frameworks: readonly FrameworkPhase[];
  readonly offersOutstanding: number;
  readonly inverseOffersOutstanding: number;
  readonly planSteps: ReadonlyArray<{ readonly plan: string; readonly status: string; readonly steps: number }>;
}

/** What a standby (or a master between terms) knows of the model: nothing. */
export const NO_FACTS: ModelFacts = Object.freeze({ agents: [], goneAgents: 0, machines: [], frameworks: [], offersOutstanding: 0, inverseOffersOutstanding: 0, planSteps: [] });

/** The counts every figure is read from. */
export interface MasterSummary {
  /** Exclusive agent states (sum = agents known + ids gone). */
  agents: Record<AgentMetricState, number>;
  /** Mesos' agent counts: over REGISTERED agents (recovered and unreachable ones are not registered). */
  mesosAgents: { active: number; inactive: number; connected: number; disconnected: number; unreachable: number };
  machines: Record<MachineMode, number>;
  /** DOWN machines past the end of their window: how far past (s), largest first. */
  downOverdue: Array<{ machine: string; seconds: number }>;
  /** Agents under disk pressure (not offered): for how long (s), longest first. */
  diskPressure: Array<{ agentId: string; hostname: string; seconds: number }>;
  /** Tasks the master holds now, by state (terminal ones stay until acknowledged). */
  tasks: Record<TaskState, number>;
  drainsInProgress: number;
  /** Age of the oldest drain still DRAINING (s); 0 when none. */
  oldestDrainAgeSecs: number;
  frameworks: Record<FrameworkMetricState, number>;
  offersOutstanding: number;
  inverseOffersOutstanding: number;
  resources: Record<'cpus' | 'mem' | 'disk' | 'gpus', ResourceUse>;
  planSteps: Array<{ plan: string; status: string; steps: number }>;
}

function zeros<K extends string>(keys: readonly K[]): Record<K, number> {
  const o = {} as Record<K, number>;
  for (const k of keys) o[k] = 0;
  return o;
}

/** The exclusive state of one agent (see AgentMetricState). */
export function agentMetricState(a: AgentFacts): Exclude<AgentMetricState, 'gone'> {
  if (a.phase === 'UNREACHABLE') return 'unreachable';
  if (a.phase === 'RECOVERED' || !a.connected) return 'disconnected';
  if (a.drain?.state === 'DRAINED') return 'drained';
  if (a.drain?.state === 'DRAINING') return 'draining';
  if (a.deactivated) return 'deactivated';
  return 'active';
}


/** Counts the model. Pure: the same facts and time give the same summary. */
export function summarize(facts: ModelFacts, nowMs: number): MasterSummary {
  const agents = zeros(AGENT_METRIC_STATES);
  agents.gone = facts.goneAgents;
  const mesosAgents = { active: 0, inactive: 0, connected: 0, disconnected: 0, unreachable: 0 };
  const tasks = zeros(TASK_STATES);
  const resources = { cpus: { total: 0, used: 0 }, mem: { total: 0, used: 0 }, disk: { total: 0, used: 0 }, gpus: { total: 0, used: 0 } };
  let drainsInProgress = 0;
  let oldestDrainMs: number | undefined;
  const diskPressure: Array<{ agentId: string; hostname: string; seconds: number }> = [];
  for (const a of facts.agents) {
    agents[agentMetricState(a)]++;
    if (a.diskPressureSinceMs !== undefined) diskPressure.push({ agentId: a.id, hostname: a.hostname, seconds: Math.max(0, (nowMs - a.diskPressureSinceMs) / 1000) });
    for (const t of a.tasks) tasks[t.state]++;
    if (a.drain?.state === 'DRAINING') {
      drainsInProgress++;
      if (oldestDrainMs === undefined || a.drain.startedMs < oldestDrainMs) oldestDrainMs = a.drain.startedMs;
    }
    if (a.phase === 'UNREACHABLE') mesosAgents.unreachable++;
    if (a.phase !== 'REGISTERED') continue;
    // Mesos: an agent is active while connected and not deactivated (a drain deactivates it).
    if (a.connected) mesosAgents.connected++;
    else mesosAgents.disconnected++;
    if (a.connected && !a.deactivated) mesosAgents.active++;
    else mesosAgents.inactive++;
    for (const name of RESOURCE_NAMES) {
      resources[name].total += scalarOf(a.resources, name);
      for (const t of a.tasks) if (!isTerminal(t.state)) resources[name].used += scalarOf(t.resources, name);
    }
  }
  const machines = zeros(MACHINE_MODES);
  const downOverdue: Array<{ machine: string; seconds: number }> = [];
  for (const m of facts.machines) {
    machines[m.mode]++;
    if (m.mode === 'DOWN' && m.windowEndMs !== undefined && nowMs > m.windowEndMs) downOverdue.push({ machine: m.name, seconds: (nowMs - m.windowEndMs) / 1000 });
  }
  downOverdue.sort((x, y) => y.seconds - x.seconds || x.machine.localeCompare(y.machine));
  diskPressure.sort((x, y) => y.seconds - x.seconds || x.agentId.localeCompare(y.agentId));
  const frameworks = { connected: 0, disconnected: 0, recovered: 0 };
  for (const f of facts.frameworks) frameworks[f === 'CONNECTED' ? 'connected' : f === 'DISCONNECTED' ? 'disconnected' : 'recovered']++;
  // Sums of doubles (0.1 + 0.2): round to what a resource can be written as.
  for (const name of RESOURCE_NAMES) {
    resources[name].total = round3(resources[name].total);
    resources[name].used = round3(resources[name].used);
  }
  return {
    agents,
    mesosAgents,
    machines,
    downOverdue,
    diskPressure,
    tasks,
    drainsInProgress,
    oldestDrainAgeSecs: oldestDrainMs === undefined ? 0 : Math.max(0, (nowMs - oldestDrainMs) / 1000),
    frameworks,
    offersOutstanding: facts.offersOutstanding,
    inverseOffersOutstanding: facts.inverseOffersOutstanding,
    resources,
    planSteps: facts.planSteps.map((p) => ({ ...p })),
  };
}

function round3(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** What the process counted and knows of itself and its host, for the snapshot. */
export interface ProcessFacts {
  readonly uptimeSecs: number;
  readonly elected: boolean;
  /** The current term's epoch; 0 without one. */
  readonly epoch: number;
  readonly elections: number;
  readonly registrations: number;
  readonly reregistrations: number;
  readonly removals: number;
  /** Terminal task transitions since the process started, by state. */
  readonly terminalTasks: Readonly<Partial<Record<TaskState, number>>>;
  readonly inverseOffersAccepted: number;
  readonly inverseOffersDeclined: number;
  /** Messages agents refused (they could not decode them; REFUSED), every type together. */
  readonly agentRefusals: number;
  /** How long the last registry write took (ms); 0 before the first. */
  readonly lastStoreMs: number;
  /** The durations of the recent registry writes (ms), for Mesos' timer statistics; oldest first. */
  readonly recentStoreMs: readonly number[];
  /** How long this term's read of the registry took at its start (ms); 0 without a term. */
  readonly fetchMs: number;
  /** Registry writes waiting now. */
  readonly queuedWrites: number;
  /** Bytes the registry holds; undefined when the backend does not say (etcd). */
  readonly registryBytes: number | undefined;
  /** Agents marked unreachable: decided, applied, given up (Mesos' slave_unreachable_*), and of those applied, after a failover. */
  readonly unreachable: { readonly scheduled: number; readonly completed: number; readonly canceled: number; readonly recovery: number };
  /** Requests that joined another's answer in the making (Mesos' master/http_cache_hits). */
  readonly sharedAnswers: number;
  /** The longest event-loop delay of the last seconds (ms): a debug figure (the state benchmark reads it). */
  readonly loopStallMs: number;
  readonly system: SystemFacts;
}

/** Mesos' task gauges (states a task is in now) and counters (terminal transitions), by key suffix. */
const TASK_GAUGES: ReadonlyArray<[string, TaskState]> = [
  ['staging', 'TASK_STAGING'],
  ['starting', 'TASK_STARTING'],
  ['running', 'TASK_RUNNING'],
  ['killing', 'TASK_KILLING'],
  ['unreachable', 'TASK_UNREACHABLE'],
];
const TASK_COUNTERS: ReadonlyArray<[string, TaskState]> = [
  ['finished', 'TASK_FINISHED'],
  ['failed', 'TASK_FAILED'],
  ['killed', 'TASK_KILLED'],
  ['lost', 'TASK_LOST'],
  ['error', 'TASK_ERROR'],
  ['dropped', 'TASK_DROPPED'],
  ['gone', 'TASK_GONE'],
  ['gone_by_operator', 'TASK_GONE_BY_OPERATOR'],
  ['unknown', 'TASK_UNKNOWN'],
];

/**
 * Mesos' timer statistics of a series (libprocess Statistics): count, min, max and percentiles by
 * linear interpolation between the sorted values. Mesos leaves them out under two values; Drydock
 * writes zeros then, so a reader always finds its keys (mesos_exporter warns on every missing one).
 */
export function timerStatistics(key: string, values: readonly number[]): Record<string, number> {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (p: number): number => {
    if (sorted.length < 2) return 0;
    const position = p * (sorted.length - 1);
    const index = Math.floor(position);
    const low = sorted[index] as number;
    const high = sorted[Math.min(index + 1, sorted.length - 1)] as number;
    return low + (position - index) * (high - low);
  };
  const enough = sorted.length >= 2;
  return {
    [`${key}/count`]: enough ? sorted.length : 0,
    [`${key}/max`]: enough ? (sorted[sorted.length - 1] as number) : 0,
    [`${key}/min`]: enough ? (sorted[0] as number) : 0,
    [`${key}/p50`]: at(0.5),
    [`${key}/p90`]: at(0.9),
    [`${key}/p95`]: at(0.95),
    [`${key}/p99`]: at(0.99),
    [`${key}/p999`]: at(0.999),
    [`${key}/p9999`]: at(0.9999),
  };
}

/**
 * `/metrics/snapshot`: Mesos' keys (docs/monitoring.md) with their meanings, and Drydock's own
 * under `drydock/`. Pure. Percentages are fractions as in Mesos (used / total, 0 without a total).
 * Keys of concepts Drydock does not have are written with Mesos' zero (revocable resources,
 * agent shutdowns, the replicated log's ensemble), so readers such as mesos_exporter find them
 * all; docs/observability.md says which keys are which.
 */
export function snapshotOf(s: MasterSummary, p: ProcessFacts): Record<string, number> {
  const v: Record<string, number> = {
    'master/uptime_secs': p.uptimeSecs,
    'master/elected': p.elected ? 1 : 0,
    'master/slaves_active': s.mesosAgents.active,
    'master/slaves_inactive': s.mesosAgents.inactive,
    'master/slaves_connected': s.mesosAgents.connected,
    'master/slaves_disconnected': s.mesosAgents.disconnected,
    'master/slaves_unreachable': s.mesosAgents.unreachable,
    'master/slave_registrations': p.registrations,
    'master/slave_reregistrations': p.reregistrations,
    'master/slave_removals': p.removals,
    // Drydock's frameworks have no deactivation of their own: active is connected, as in Mesos after a disconnect.
    'master/frameworks_active': s.frameworks.connected,
    'master/frameworks_inactive': s.frameworks.disconnected,
    'master/frameworks_connected': s.frameworks.connected,
    'master/frameworks_disconnected': s.frameworks.disconnected,
    'master/outstanding_offers': s.offersOutstanding,
    // Mesos' agent removals after failing health checks: the unreachable transitions took their place, and Mesos keeps these at 0 too.
    'master/slave_shutdowns_scheduled': 0,
    'master/slave_shutdowns_completed': 0,
    'master/slave_shutdowns_canceled': 0,
    'master/slave_unreachable_scheduled': p.unreachable.scheduled,
    'master/slave_unreachable_completed': p.unreachable.completed,
    'master/slave_unreachable_canceled': p.unreachable.canceled,
    'master/recovery_slave_removals': p.unreachable.recovery,
    'master/http_cache_hits': p.sharedAnswers,
    'registrar/queued_operations': p.queuedWrites,
    'registrar/registry_size_bytes': p.registryBytes ?? 0,
    'registrar/state_fetch_ms': p.fetchMs,
    'registrar/state_store_ms': p.lastStoreMs,
    ...timerStatistics('registrar/state_store_ms', p.recentStoreMs),
    'registrar/log/recovered': p.elected ? 1 : 0,
    // No replicated log: the registry is one SQLite file or etcd.
    'registrar/log/ensemble_size': 0,
    ...systemKeys(p.system),
    'drydock/term_epoch': p.epoch,
    'drydock/elections': p.elections,
    'drydock/agents_draining': s.agents.draining,
    'drydock/agents_drained': s.agents.drained,
    'drydock/agents_gone': s.agents.gone,
    'drydock/agents_disk_pressure': s.diskPressure.length,
    'drydock/drains_in_progress': s.drainsInProgress,
    'drydock/drain_oldest_age_secs': s.oldestDrainAgeSecs,
    'drydock/inverse_offers_outstanding': s.inverseOffersOutstanding,
    'drydock/inverse_offers_accepted': p.inverseOffersAccepted,
    'drydock/inverse_offers_declined': p.inverseOffersDeclined,
    'drydock/agent_messages_refused': p.agentRefusals,
    'drydock/machines_up': s.machines.UP,
    'drydock/machines_draining': s.machines.DRAINING,
    'drydock/machines_down': s.machines.DOWN,
    'drydock/machines_down_overdue': s.downOverdue.length,
    'drydock/machine_down_overdue_max_secs': s.downOverdue[0]?.seconds ?? 0,
    'drydock/maintenance_plan_steps': s.planSteps.reduce((n, x) => n + x.steps, 0),
    'drydock/event_loop_stall_max_ms': p.loopStallMs,
  };
  for (const [key, state] of TASK_GAUGES) v[`master/tasks_${key}`] = s.tasks[state];
  for (const [key, state] of TASK_COUNTERS) v[`master/tasks_${key}`] = p.terminalTasks[state] ?? 0;
  const revocable: Record<string, number> = {};
  // Drydock has no revocable resources (oversubscription): Mesos' revocable keys are zeros.
  for (const name of RESOURCE_NAMES) for (const k of ['total', 'used', 'percent']) revocable[`master/${name}_revocable_${k}`] = 0;
  return { ...v, ...resourceKeys('master', s.resources), ...revocable };
}

// ---- The shell -----------------------------------------------------------------------------

/** Reads a term's model into plain data (no copies of tasks beyond their state and resources). */
export function factsOf(term: ServingTerm): ModelFacts {
  const q = term.queries;
  const agents: AgentFacts[] = [];
  for (const a of q.agents()) {
    const tasks: Array<{ state: TaskState; resources: readonly Resource[] }> = [];
    for (const t of a.tasks?.values() ?? []) tasks.push({ state: t.state, resources: t.resources });
    agents.push({
      id: a.id,
      hostname: a.info.hostname,
      diskPressureSinceMs: a.diskPressure?.heardMs,
      phase: a.phase,
      connected: a.connected,
      deactivated: a.deactivated,
      drain: a.drain === undefined ? undefined : { state: a.drain.state, startedMs: Number(a.drain.startedNs / 1_000_000n) },
      resources: a.info.resources,
      tasks,
    });
  }
  // Counted as `drydock status` counts them (cli/status.ts): every machine the schedule names, by
  // its mode, and the machine of every registered agent (UP unless scheduled). The master keeps
  // more: an UP entry for a machine once scheduled or once an agent's, which no agent runs on any
  // longer (brought UP after a schedule named it with the wrong IP, its agent gone).
  const registered = new Set<string>();
  for (const a of q.agents()) if (a.phase === 'REGISTERED') registered.add(machineKey(agentMachineId(a.info.hostname, a.info.ip)));
  const machines: MachineFacts[] = [];
  for (const m of q.machines()) {
    if (m.mode === 'UP' && !registered.has(m.key)) continue;
    const u = m.unavailability;
    const end = u?.durationNs === undefined ? undefined : Number((u.startNs + u.durationNs) / 1_000_000n);
    machines.push({ name: machineText(m.id), mode: m.mode, windowEndMs: end });
  }
  const frameworks: FrameworkPhase[] = [];
  for (const f of q.frameworks()) frameworks.push(f.phase);
  const outstanding = q.outstanding();
  return {
    agents,
    goneAgents: q.goneAgents(),
    machines,
    frameworks,
    offersOutstanding: outstanding.offers,
    inverseOffersOutstanding: outstanding.inverseOffers,
    planSteps: q.planStepCounts(),
  };
}

/** How many registry write durations the timer statistics are taken over (Mesos' TIME_SERIES_CAPACITY). */
const STORE_SERIES = 1000;

/**
 * The event loop's longest delay over the last seconds, from perf_hooks' monitor: a figure of
 * the process itself, on Node's own timers (not the model's clock). The monitor's histogram is
 * read and reset every second into a ring of per-second maxima; `maxMs` is the largest of the
 * last WINDOW seconds, the current one included.
 */
class LoopStalls {
  static readonly WINDOW = 10;
  readonly #histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: 10 });
  readonly #seconds: number[] = [];

  constructor() {
    this.#histogram.enable();
    const roll = setInterval(() => {
      this.#seconds.push(this.#histogram.max);
      if (this.#seconds.length > LoopStalls.WINDOW - 1) this.#seconds.shift();
      this.#histogram.reset();
    }, 1000);
    roll.unref();
  }

  /** The longest delay of the window (ms); the monitor's own 10 ms resolution is not counted as delay. */
  maxMs(): number {
    const ns = Math.max(this.#histogram.max, ...this.#seconds);
    return Number.isFinite(ns) ? Math.max(0, ns / 1e6) : 0;
  }
}

/** Registry write latency buckets (s): SQLite with fsync is about a millisecond, etcd a few. */
const WRITE_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Acknowledgement latency buckets (s): a live scheduler answers in milliseconds, a stalled one in minutes. */
const ACK_BUCKETS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];

export interface MasterMetricsOptions {
  /** The term serving now, if any (a standby has none). */
  current: () => ServingTerm | undefined;
  /** Bytes the registry holds (SQLite); undefined when it does not say (etcd, or none open). */
  registryBytes?: () => number | undefined;
  /** When the process started (ms since the epoch). */
  processStartMs: number;
  clock: Clock;
}

/** The process's metrics: one per master process, across its terms. */
export class MasterMetrics {
  readonly registry: Registry;
  /** What the term's services are given (term/term.ts passes them on). */
  readonly instruments: { commits: CommitInstruments; frameworks: FrameworkInstruments; agents: AgentInstruments };
  readonly #o: MasterMetricsOptions;
  readonly #gauges: ScrapedGauges<MasterSummary>;
  #lastStoreMs = 0;
  /** The recent registry writes' durations (ms), at most STORE_SERIES of them (Mesos' time series keeps 1,000). */
  readonly #storeMs: number[] = [];
  #fetchMs = 0;
  readonly #unreachable = { scheduled: 0, completed: 0, canceled: 0, recovery: 0 };
  readonly #loop = new LoopStalls();
  readonly #counts = {
    elections: 0,
    registrations: 0,
    reregistrations: 0,
    removals: 0,
    inverseOffersAccepted: 0,
    inverseOffersDeclined: 0,
    agentRefusals: 0,
    terminalTasks: {} as Partial<Record<TaskState, number>>,
  };
  readonly #elections: Counter;
  readonly #registrations: Counter<'kind'>;
  readonly #removals: Counter;
  readonly #terminal: Counter<'state'>;
  readonly #refusals: Counter<'type'>;
  readonly #inverseAnswers: { accepted: Counter; declined: Counter };
  readonly #writes: Histogram;
  readonly #writeFailures: Counter;
  readonly #acks: Histogram;

  constructor(o: MasterMetricsOptions) {
    this.#o = o;
    const registry = createMetricsRegistry('master');
    this.registry = registry;
    const registers = [registry];
    const p = 'drydock_master_';
    // Gauges, computed on scrape from one summary of the model.
    const gauges = new ScrapedGauges(registry, p, () => this.summary());
    this.#gauges = gauges;
    const gauge = gauges.gauge.bind(gauges);
    gauge('agents', 'Agents by state, one state each: active, deactivated, draining, drained, disconnected, unreachable, gone (ids marked gone).', ['state'], (g, s) => {
      for (const st of AGENT_METRIC_STATES) g.set({ state: st }, s.agents[st]);
    });
    gauge('machines', 'Machines by maintenance mode (UP, DRAINING, DOWN): every machine the schedule names, and the machine of every registered agent (as drydock status counts them).', ['mode'], (g, s) => {
      for (const m of MACHINE_MODES) g.set({ mode: m }, s.machines[m]);
    });
    gauge('machine_down_overdue_seconds', 'For each DOWN machine past the end of its maintenance window: seconds since the window ended.', ['machine'], (g, s) => {
      for (const d of s.downOverdue) g.set({ machine: d.machine }, d.seconds);
    });
    gauge('agents_disk_pressure', "Agents whose session reports disk pressure: registered, their tasks running, their resources not offered until it clears.", [], (g, s) => g.set(s.diskPressure.length));
    gauge('agent_disk_pressure_seconds', 'For each agent under disk pressure: seconds since this master heard it began (the agent says why: its log, its drydock_agent_disk_* series).', ['agent_id', 'hostname'], (g, s) => {
      for (const d of s.diskPressure) g.set({ agent_id: d.agentId, hostname: d.hostname }, d.seconds);
    });
    gauge('tasks', 'Tasks the master holds now, by state (terminal ones until acknowledged).', ['state'], (g, s) => {
      for (const st of TASK_STATES) g.set({ state: st }, s.tasks[st]);
    });
    gauge('drains_in_progress', 'Agents whose drain is DRAINING.', [], (g, s) => g.set(s.drainsInProgress));
    gauge('drain_oldest_age_seconds', 'Age of the oldest drain still DRAINING (0 when none).', [], (g, s) => g.set(s.oldestDrainAgeSecs));
    gauge('inverse_offers_outstanding', 'Inverse offers sent and not yet answered or rescinded.', [], (g, s) => g.set(s.inverseOffersOutstanding));
    gauge('offers_outstanding', 'Offers sent and not yet accepted, declined or rescinded.', [], (g, s) => g.set(s.offersOutstanding));
    gauge('frameworks', 'Frameworks by state: connected (subscribed), disconnected (within failover timeout), recovered (not re-subscribed since this term began).', ['state'], (g, s) => {
      for (const st of ['connected', 'disconnected', 'recovered'] as const) g.set({ state: st }, s.frameworks[st]);
    });
    gauge('maintenance_plan_steps', 'Maintenance plan steps by plan and status.', ['plan', 'status'], (g, s) => {
      for (const x of s.planSteps) g.set({ plan: x.plan, status: x.status }, x.steps);
    });
    gauge('leader', '1 while this master leads (a term serves), else 0.', [], (g) => g.set(o.current() === undefined ? 0 : 1));
    gauge('term_epoch', "The leading term's epoch (etcd: the election key's create revision; solo: 1); 0 on a standby.", [], (g) => g.set(Number(o.current()?.epoch ?? 0n)));

    // Counters and histograms, fed where things happen.
    this.#elections = new Counter({ name: `${p}elections_total`, help: 'Terms this process started (elections it won).', registers });
    this.#registrations = new Counter({ name: `${p}agent_registrations_total`, help: 'Agents admitted: kind="new" (registration, or re-admission after unreachable or a restart), kind="reconnect" (a known agent reconnected).', labelNames: ['kind'], registers });
    this.#removals = new Counter({ name: `${p}agent_removals_total`, help: 'Agents removed (replaced, or marked gone).', registers });
    this.#terminal = new Counter({ name: `${p}task_terminal_total`, help: 'Tasks that reached a terminal state, by state.', labelNames: ['state'], registers });
    this.#refusals = new Counter({
      name: `${p}agent_messages_refused_total`,
      help: 'Messages of this master that an agent refused, by type: it could not decode them, did nothing with them and kept its session (its REFUSED). A refused DRAIN shows in the drain record.',
      labelNames: ['type'],
      registers,
    });
    for (const type of [...MASTER_MESSAGE_TYPES, '?']) this.#refusals.inc({ type }, 0);
    this.#inverseAnswers = {
      accepted: new Counter({ name: `${p}inverse_offers_accepted_total`, help: 'Inverse offers frameworks accepted.', registers }),
      declined: new Counter({ name: `${p}inverse_offers_declined_total`, help: 'Inverse offers frameworks declined.', registers }),
    };
    this.#writes = new Histogram({ name: `${p}registry_write_duration_seconds`, help: 'Registry writes as the commit path waited for them (group commit included), successful or not.', buckets: WRITE_BUCKETS, registers });
    this.#writeFailures = new Counter({ name: `${p}registry_write_failures_total`, help: 'Registry writes that failed (nothing changed in memory).', registers });
    this.#acks = new Histogram({ name: `${p}status_update_ack_duration_seconds`, help: 'From forwarding a status update to its framework (first time) until the framework acknowledged it.', buckets: ACK_BUCKETS, registers });

    // Durations on the monotonic clock: a registry write or an acknowledgement is timed, never dated.
    const now = (): number => o.clock.monotonicMs();
    this.instruments = {
      commits: {
        now,
        onCommit: (ms, ok) => {
          this.#writes.observe(ms / 1000);
          this.#lastStoreMs = ms;
          this.#storeMs.push(ms);
          if (this.#storeMs.length > STORE_SERIES) this.#storeMs.shift();
          if (!ok) this.#writeFailures.inc();
        },
        onRecovered: (ms) => {
          this.#fetchMs = ms;
        },
      },
      agents: {
        onUnreachable: (stage, reason) => {
          this.#unreachable[stage]++;
          if (stage === 'completed' && reason === 'REREGISTER_TIMEOUT') this.#unreachable.recovery++;
        },
      },
      frameworks: {
        now,
        onAcknowledged: (ms) => this.#acks.observe(ms / 1000),
        onInverseOfferAnswer: (answer) => {
          if (answer === 'ACCEPT') {
            this.#counts.inverseOffersAccepted++;
            this.#inverseAnswers.accepted.inc();
          } else {
            this.#counts.inverseOffersDeclined++;
            this.#inverseAnswers.declined.inc();
          }
        },
      },
    };
  }

  /**
   * A term started in this process: counts the election and follows its bus for the counters
   * Mesos keeps (registrations, removals, terminal tasks). The bus goes with the term.
   */
  termStarted(term: ServingTerm): void {
    this.#counts.elections++;
    this.#elections.inc();
    term.bus.subscribe((e) => {
      switch (e.type) {
        case 'AGENT_ADDED':
          this.#counts.registrations++;
          this.#registrations.inc({ kind: 'new' });
          return;
        case 'AGENT_RECONNECTED':
          this.#counts.reregistrations++;
          this.#registrations.inc({ kind: 'reconnect' });
          return;
        case 'AGENT_REMOVED':
        case 'AGENT_GONE':
          this.#counts.removals++;
          this.#removals.inc();
          return;
        case 'AGENT_REFUSED_MESSAGE':
          this.#counts.agentRefusals++;
          this.#refusals.inc({ type: e.refused.type });
          return;
        case 'TASK_UPDATED':
          if (!isTerminal(e.state)) return;
          this.#counts.terminalTasks[e.state] = (this.#counts.terminalTasks[e.state] ?? 0) + 1;
          this.#terminal.inc({ state: e.state });
          return;
        default:
          return;
      }
    });
  }

  /** The current term's summary (a standby's is all zeros). */
  summary(): MasterSummary {
    const term = this.#o.current();
    return summarize(term === undefined ? NO_FACTS : factsOf(term), this.#o.clock.now());
  }

  /** `GET /metrics`: one scrape, every gauge reading the same summary. */
  sendPrometheus(res: ServerResponse): Promise<void> {
    return this.#gauges.send(res);
  }

  /** `GET /metrics/snapshot`'s JSON (and GET_METRICS'): the snapshot, sorted, every value finite. */
  snapshotJson(): Record<string, number> {
    return snapshotJson(this.snapshot());
  }

  /** `/metrics/snapshot`'s values. */
  snapshot(): Record<string, number> {
    const term = this.#o.current();
    return snapshotOf(this.summary(), {
      uptimeSecs: Math.max(0, (this.#o.clock.now() - this.#o.processStartMs) / 1000),
      elected: term !== undefined,
      epoch: Number(term?.epoch ?? 0n),
      elections: this.#counts.elections,
      registrations: this.#counts.registrations,
      reregistrations: this.#counts.reregistrations,
      removals: this.#counts.removals,
      terminalTasks: { ...this.#counts.terminalTasks },
      inverseOffersAccepted: this.#counts.inverseOffersAccepted,
      inverseOffersDeclined: this.#counts.inverseOffersDeclined,
      agentRefusals: this.#counts.agentRefusals,
      lastStoreMs: this.#lastStoreMs,
      recentStoreMs: this.#storeMs,
      fetchMs: term === undefined ? 0 : this.#fetchMs,
      queuedWrites: term?.queries.pendingWrites() ?? 0,
      registryBytes: this.#o.registryBytes?.(),
      unreachable: { ...this.#unreachable },
      sharedAnswers: sharedAnswers(),
      loopStallMs: this.#loop.maxMs(),
      system: systemFacts(),
    });
  }
}

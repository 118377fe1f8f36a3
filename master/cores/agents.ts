/**
 * The agent table: every agent the master knows, its lifecycle, its tasks, and the indexes that
 * keep every operation off a walk of the whole table (address, phase, task holders). A pure
 * core: no sockets, no timers, no registry. The agents service (services/agents.ts) asks it
 * what to do (planRegistration, tick, expireRecovered), makes the durable writes, then applies.
 * Liveness (the wheel of pings, who is connected or away too long) is liveness.ts's; the table
 * keeps its entries on the wheel.
 *
 * Lifecycle (Mesos master, `Slave` / `Master::_reregisterSlave`):
 *   RECOVERED    known from the registry after a restart, not re-registered yet
 *   REGISTERED   admitted; `connected` says whether its session is up (disconnected = active:false)
 *   UNREACHABLE  stopped answering pings, was disconnected too long, or did not come back after
 *                a restart; keeps its id and comes back by re-registering
 * An agent removed (replaced by a new agent at its ip:port, its machine gone DOWN) leaves the
 * table; the principal its id was bound to stays (removedBindings), as in the registry.
 */

import { MAX_REGISTERED_TASKS, type AgentConditions, type AgentSelf, type AgentTaskReport, type DiskPressure } from '../../shared/protocol.js';
import { isTerminal, taskKey, type Task, type TaskInfo, type TaskState, type TaskStatus } from '../../shared/mesos.js';
import { MAX_REMOVED_BINDINGS, type DurableAgent, type RecoveredAgent, type RemovedBinding } from '../registry/registry.js';
import type { DrainConfig, DrainState } from '../../shared/drain.js';
import { LivenessWheel, type LiveEntry, type LivenessLimits, type TickDecision } from './liveness.js';

/** The master's drain state of one agent (Mesos `Slave::drainInfo` + our record). */
export interface AgentDrain {
  state: DrainState;
  config: DrainConfig;
  /** When DRAIN_AGENT was accepted (ns since the epoch); the drain record's started_time. */
  startedNs: bigint;
  /**
   * Mesos estimated_drain_start_time: set only when the call reached a registered agent,
   * truncated to whole seconds; not set for an agent drained while away.
   */
  estimatedStartNs: bigint | undefined;
  /** When it became DRAINED (ns). */
  drainedNs: bigint | undefined;
  /** When this master last sent DRAIN to the agent's open session (ms): its tasks got SIGTERM about then. */
  sentMs: number | undefined;
  /**
   * The agent refused this drain's DRAIN message (it could not decode it). Kept in memory only,
   * for the drain record: a master that takes over sends the drain again and hears again.
   */
  refused?: DrainRefusal | undefined;
}

/** An agent's refusal of its drain message, as the master heard it (its REFUSED). */
export interface DrainRefusal {
  /** Why, in the agent's words (bounded). */
  reason: string;
  /** When the master heard it (ns since the epoch). */
  atNs: bigint;
  /** messageDigest() of the DRAIN refused: the same message is not sent again at registrations. */
  digest: string;
  /** The agent's version then: back with another version (upgraded), it gets the drain again. */
  agentVersion: string;
}

/** Where an agent is in its life. */
export type AgentPhase = 'RECOVERED' | 'REGISTERED' | 'UNREACHABLE';

/** One agent. Kept small: 10,000 of them must fit comfortably. Its liveness fields are liveness.ts's (LiveEntry). */
export interface AgentEntry extends LiveEntry {
  readonly id: string;
  info: AgentSelf;
  version: string;
  capabilities: string[];
  phase: AgentPhase;
  /** REGISTERED and its session is open. */
  connected: boolean;
  /** The session that speaks for this agent, if any. */
  sessionId: number | undefined;
  registeredTimeNs: bigint;
  reregisteredTimeNs: bigint | undefined;
  unreachableTimeNs: bigint | undefined;
  /** Tasks by taskKey(frameworkId, taskId). Allocated on first task. */
  tasks: Map<string, Task> | undefined;
  /** DEACTIVATE_AGENT / DRAIN_AGENT until REACTIVATE_AGENT: no offers (desired state, kept across re-registration). */
  deactivated: boolean;
  /** The drain, while the master has drain state for the agent (drain.ts). */
  drain: AgentDrain | undefined;
  /** The principal its id is bound to (the first that registered it authenticated); undefined while only anonymous. */
  principal: string | undefined;
  /**
   * Disk pressure as the agent's current session reports it (Drydock's own fact, never part of
   * a Mesos-shaped answer): no offers of its resources while it lasts. Cleared when the session
   * ends; a registration brings the agent's word again.
   */
  diskPressure: AgentDiskPressure | undefined;
}

/** An agent's disk pressure in the master: the agent's report, and when this master first heard of it. */
export interface AgentDiskPressure {
  readonly report: DiskPressure;
  /** When this master heard it began (ms since the epoch, the master's clock): the metrics' age. */
  readonly heardMs: number;
}

/**
 * An agent's conditions in Drydock's own JSON (for Drydock's agent view, never a Mesos-shaped
 * answer): `{}` without any; `{"disk_pressure": {"since": {"nanoseconds": N}, "reason",
 * "message", "path", "free_bytes", "total_bytes", "free_inodes", "total_inodes"}}`, `since`
 * as the agent's clock says it. Pure.
 */
export function conditionsJson(entry: Pick<AgentEntry, 'diskPressure'>): Record<string, unknown> {
  const p = entry.diskPressure?.report;
  if (p === undefined) return {};
  return {
    disk_pressure: {
      since: { nanoseconds: BigInt(Math.trunc(p.since_ms)) * 1_000_000n },
      reason: p.reason,
      message: p.message,
      path: p.path,
      free_bytes: p.free_bytes,
      total_bytes: p.total_bytes,
      free_inodes: p.free_inodes,
      total_inodes: p.total_inodes,
    },
  };
}

/** How an agent's conditions changed: what the agents service announces (AGENT_UPDATED). */
export type ConditionChange = 'DISK_PRESSURE' | 'DISK_PRESSURE_CLEARED' | undefined;

/**
 * An agent's disk pressure after it reported `conditions` at `nowMs`: a pressure that goes on
 * keeps when this master first heard of it. Returns the new value and how it changed
 * ('DISK_PRESSURE' also when only its reason or text changed). Pure.
 */
export function nextDiskPressure(before: AgentDiskPressure | undefined, conditions: AgentConditions | undefined, nowMs: number): { value: AgentDiskPressure | undefined; change: ConditionChange } {
  const report = conditions?.disk_pressure;
  if (report === undefined) return { value: undefined, change: before === undefined ? undefined : 'DISK_PRESSURE_CLEARED' };
  const same = before !== undefined && before.report.reason === report.reason && before.report.message === report.message && before.report.since_ms === report.since_ms;
  return { value: { report, heardMs: before?.heardMs ?? nowMs }, change: same ? undefined : 'DISK_PRESSURE' };
}

/** What a REGISTER needs from the table. */
export interface RegistrationRequest {
  agentId: string | undefined;
  info: AgentSelf;
  version: string;
  capabilities: string[];
  /** Who the session authenticated as; undefined: anonymous. */
  principal?: string | undefined;
}

/** The kind of (re-)registration, named after the case in Mesos' master. */
export type RegistrationKind =
  /** No agent_id: a new agent. */
  | 'NEW'
  /** An agent_id the master does not know: accepted as that id (the master may have lost state). */
  | 'UNKNOWN_ID'
  /** Known from the registry after a restart. */
  | 'RECOVERED'
  /** Already registered (connected or not). */
  | 'REREGISTERED'
  /** Was unreachable: readmitted. */
  | 'UNREACHABLE';

/** The durable write a registration needs before the agent may be told REGISTERED. */
export type RegistrationWrite = 'ADMIT' | 'READMIT' | 'NONE';

export interface RegistrationPlan {
  agentId: string;
  kind: RegistrationKind;
  write: RegistrationWrite;
  /** A disconnected or recovered agent with another id at the same ip:port, to remove (the machine's agent was replaced). */
  replaces: string | undefined;
  /** The durable record to write (for ADMIT / READMIT). */
  durable: DurableAgent;
  /** A known agent, unbound until now, is bound to the request's principal (its first authenticated registration). */
  binds: boolean;
}

/** Key of an agent's address in the address index. Port 0 means "no agent API" and is not indexed. */
function addressKey(info: AgentSelf): string | undefined {
  return info.port === 0 ? undefined : `${info.ip}:${info.port}`;
}

/** Where a registration comes from: its session, the address the agent claims, and the socket's peer address. */
export interface RegistrationOrigin {
  readonly sessionId: number;
  readonly ip: string;
  readonly port: number;
  readonly remote: string;
}

/**
 * Why a principal may not register (or re-register) an agent id, or undefined: the id is bound
 * to another principal. `bound` is the principal the id is bound to (undefined: unknown id, or
 * one only ever registered anonymously, which the first authenticated registration binds);
 * `presented` is who the session authenticated as (undefined: anonymous). An anonymous session
 * never speaks for a bound id, with or without `--authenticate_agents`. The text goes to the
 * refused session, so it does not name the bound principal. Pure.
 */
export function principalRefusal(claimed: string, bound: string | undefined, presented: string | undefined): string | undefined {
  if (bound === undefined || presented === bound) return undefined;
  return presented === undefined ? `agent ${claimed} is bound to a principal; this session is anonymous` : `agent ${claimed} is bound to another principal`;
}

/** The live session as takeoverDecision reads it: the agent's entry. */
export interface LiveAgent {
  readonly phase: AgentPhase;
  readonly connected: boolean;
  readonly sessionId: number | undefined;
  readonly info: { readonly ip: string; readonly port: number };
  /** Liveness rounds in a row whose ping went unanswered. */
  readonly missedPings: number;
}

/** What pinging a live session showed: it answered (a pong came), or stayed silent past the probe's bound. */
export interface ProbeResult {
  readonly sessionId: number;
  readonly answered: boolean;
}

/**
 * What to do with a registration claiming an id some session may hold:
 * - ALLOW: no live session holds it (or this one does), or the live one may be replaced;
 * - PROBE: ping the live session `sessionId`, wait a bounded time, and decide again with the result;
 * - REFUSE: close the newcomer with ID_IN_USE and `reason`; nothing changes.
 */
export type TakeoverDecision = { kind: 'ALLOW' } | { kind: 'PROBE'; sessionId: number } | { kind: 'REFUSE'; reason: string };

/**
 * Whether a registration may take an id over from a live session (registered, connected, on
 * another session whose peer address is known: `liveRemote`). A live session that has missed a
 * ping, or that stays silent when probed, has failed its pings: the id is free. One that answers
 * keeps it:
 * - without `--authenticate_agents`, against another address (another claimed ip:port or another
 *   socket peer). The same agent from its own address (a restarted agent whose old socket has not
 *   been seen to close) replaces its session at once, as it always has;
 * - with `--authenticate_agents`, against any second session, its own address and principal
 *   included: an address proves nothing there, and a principal is shared by many agents. A
 *   restarted agent's old socket is dead, so the probe goes unanswered and it comes back.
 * The principal binding is checked before, by principalRefusal. Pure.
 */
export function takeoverDecision(
  claimed: string,
  live: LiveAgent | undefined,
  liveRemote: string | undefined,
  origin: RegistrationOrigin,
  o: { readonly authenticateAgents: boolean; readonly probe?: ProbeResult | undefined },
): TakeoverDecision {
  if (live === undefined || live.phase !== 'REGISTERED' || !live.connected || live.sessionId === undefined || live.sessionId === origin.sessionId || liveRemote === undefined) return { kind: 'ALLOW' };
  // "Until the live session has failed its pings": one unanswered round is a failure.
  if (live.missedPings > 0) return { kind: 'ALLOW' };
  const sameAddress = live.info.ip === origin.ip && live.info.port === origin.port && liveRemote === origin.remote;
  if (!o.authenticateAgents && sameAddress) return { kind: 'ALLOW' };
  // A probe of another session (the live one changed while it ran) says nothing about this one.
  if (o.probe === undefined || o.probe.sessionId !== live.sessionId) return { kind: 'PROBE', sessionId: live.sessionId };
  if (!o.probe.answered) return { kind: 'ALLOW' };
  return { kind: 'REFUSE', reason: o.authenticateAgents ? `agent ${claimed} has a live session that answers pings` : `agent ${claimed} is connected from another address` };
}

/** How many completed tasks the master remembers (Mesos --max_completed_tasks_per_framework is 1000). */
export const MAX_COMPLETED_TASKS = 1000;

/**
 * Why a registered session may not speak of a task (a session speaks only for its own agent):
 * an `agent_id` naming another agent, a task the master knows on another agent, or more tasks
 * than one registration may report.
 */
export type ForeignTaskReason = 'FOREIGN_AGENT_ID' | 'TASK_OF_ANOTHER_AGENT' | 'TOO_MANY_TASKS';

/** Result of acknowledging an update: values, not exceptions (an unknown task is an expected outcome). */
export type AckOutcome = 'ACKNOWLEDGED' | 'COMPLETED' | 'UNKNOWN_AGENT' | 'UNKNOWN_TASK' | 'UUID_MISMATCH';

export class AgentTable {
  readonly #limits: LivenessLimits;
  readonly #agents = new Map<string, AgentEntry>();
  /** ip:port -> agent id, for REGISTERED and RECOVERED agents. */
  readonly #byAddress = new Map<string, string>();
  /** Connected and disconnected (REGISTERED) agents, and the wheel they are pinged on (liveness.ts). */
  readonly #liveness: LivenessWheel;
  /** Ids in each other phase / condition, so no operation scans the whole table. */
  readonly #recovered = new Set<string>();
  #recoveredDeadlineMs: number | undefined;
  readonly #completed: Task[] = [];
  /** Agents marked gone: their ids are refused forever. */
  readonly #gone = new Set<string>();
  /**
   * Removed agents' ids -> the principal each stays bound to, oldest removal first, at most
   * #maxRemovedBindings (the registry keeps the same list: RemovedBinding). A removed id is
   * unknown, but not free: another principal claiming it is refused as if it were known.
   */
  readonly #removedBindings = new Map<string, string>();
  readonly #maxRemovedBindings: number;
  /**
   * Tasks the master declared ended while their agent may still have them (task-fate.ts
   * tombstoneKey): the agent's later word on them is acknowledged, not forwarded, and a
   * returning agent's copy is killed.
   */
  readonly tombstones = new Set<string>();
  /**
   * Which agents hold each task (taskKey -> agent id, or the ids when several do), so that
   * foreignTask finds another owner without walking every agent: a re-registration storm after
   * a restart reports every task again, and walking 10,000 agents per reported task is
   * quadratic. Kept by every change to an agent's `tasks` (all of them in this class).
   */
  readonly #holders = new Map<string, string | Set<string>>();

  /** `maxRemovedBindings`: as the registry's (MAX_REMOVED_BINDINGS unless a test makes it small). */
  constructor(limits: LivenessLimits, maxRemovedBindings = MAX_REMOVED_BINDINGS) {
    this.#limits = limits;
    this.#maxRemovedBindings = maxRemovedBindings;
    this.#liveness = new LivenessWheel(limits, (id) => this.#agents.get(id));
  }

  /** Slots of the liveness wheel: the shell visits one (tickSlot) every ping timeout / pingSlots. */
  get pingSlots(): number {
    return this.#liveness.slots;
  }

  get limits(): LivenessLimits {
    return this.#limits;
  }

  /** Loads the registry after a restart. Reachable agents become RECOVERED until they re-register. */
  recover(agents: readonly RecoveredAgent[], nowMs: number): void {
    for (const a of agents) {
      const entry = newEntry(a, a.reachability === 'REACHABLE' ? 'RECOVERED' : 'UNREACHABLE');
      entry.unreachableTimeNs = a.unreachableTimeNs;
      entry.deactivated = a.deactivated === true;
      if (a.drain !== undefined) entry.drain = { ...a.drain, estimatedStartNs: undefined, sentMs: undefined };
      this.#agents.set(a.id, entry);
      if (entry.phase === 'RECOVERED') {
        this.#recovered.add(a.id);
        this.#indexAddress(entry);
      }
    }
    this.#recoveredDeadlineMs = nowMs + this.#limits.reregisterTimeoutMs;
  }

  /** When recovered agents that have not re-registered become unreachable (ms), if any are left. */
  get recoveredDeadlineMs(): number | undefined {
    return this.#recovered.size === 0 ? undefined : this.#recoveredDeadlineMs;
  }

  get(agentId: string): AgentEntry | undefined {
    return this.#agents.get(agentId);
  }

  /** Decides what a REGISTER means. `mintId` is called only for a new agent. */
  planRegistration(req: RegistrationRequest, nowNs: bigint, mintId: () => string): RegistrationPlan {
    const known = req.agentId === undefined ? undefined : this.#agents.get(req.agentId);
    const agentId = req.agentId ?? mintId();
    let kind: RegistrationKind;
    let write: RegistrationWrite;
    if (req.agentId === undefined) [kind, write] = ['NEW', 'ADMIT'];
    else if (known === undefined) [kind, write] = ['UNKNOWN_ID', 'ADMIT'];
    else if (known.phase === 'RECOVERED') [kind, write] = ['RECOVERED', infoChanged(known, req) ? 'ADMIT' : 'NONE'];
    else if (known.phase === 'REGISTERED') [kind, write] = ['REREGISTERED', infoChanged(known, req) ? 'ADMIT' : 'NONE'];
    else [kind, write] = ['UNREACHABLE', 'READMIT'];

    const addr = addressKey(req.info);
    const holder = addr === undefined ? undefined : this.#byAddress.get(addr);
    // Mesos removes the old agent at a pid a new agent registers from. We do so only when the old
    // one is not connected: two live sessions cannot both own one ip:port, so a connected holder
    // means reported addresses are not unique (simulated agents, NAT), not that the machine's
    // agent was replaced. A restarted agent's old socket has closed by the time it registers again.
    // Nor is an agent bound to another principal removed: its address is no credential.
    const holderEntry = holder === undefined || holder === agentId ? undefined : this.#agents.get(holder);
    const mayReplace = holderEntry !== undefined && !holderEntry.connected && (holderEntry.principal === undefined || holderEntry.principal === req.principal);
    const replaces = mayReplace ? holderEntry.id : undefined;

    // The binding is kept, a removed agent's too; an unbound agent is bound by its first
    // authenticated registration (the caller refused any other principal before: principalRefusal).
    const principal = (req.agentId === undefined ? undefined : this.boundPrincipal(req.agentId)) ?? req.principal;
    const binds = known !== undefined && known.principal === undefined && principal !== undefined;
    if (binds && write === 'NONE') write = 'ADMIT';
    const durable: DurableAgent = {
      id: agentId,
      info: req.info,
      version: req.version,
      capabilities: req.capabilities,
      registeredTimeNs: known?.registeredTimeNs ?? nowNs,
      ...(principal === undefined ? {} : { principal }),
    };
    return { agentId, kind, write, replaces, durable, binds };
  }

  /**
   * Applies a registration once its write is durable. Returns the session that spoke for the
   * agent before, if another one did (the shell closes it with REPLACED).
   */
  applyRegistration(plan: RegistrationPlan, req: RegistrationRequest, tasks: readonly AgentTaskReport[], sessionId: number, nowNs: bigint, conditions?: AgentConditions): { previousSessionId: number | undefined; conditionChange: ConditionChange } {
    if (plan.replaces !== undefined) this.remove(plan.replaces);
    let entry = this.#agents.get(plan.agentId);
    const previousSessionId = entry?.sessionId !== undefined && entry.sessionId !== sessionId ? entry.sessionId : undefined;
    if (entry === undefined) {
      entry = newEntry(plan.durable, 'REGISTERED');
      this.#agents.set(entry.id, entry);
    } else {
      this.#unindexAddress(entry);
      // Re-registering keeps the first registered_time and records this one (Mesos reregistered_time).
      // A REGISTER repeated on the same session while connected is idempotent: nothing moves.
      const repeated = entry.phase === 'REGISTERED' && entry.connected && entry.sessionId === sessionId;
      if (!repeated) entry.reregisteredTimeNs = nowNs;
      entry.info = req.info;
      entry.version = req.version;
      entry.capabilities = req.capabilities;
      entry.registeredTimeNs = plan.durable.registeredTimeNs;
      entry.principal = plan.durable.principal;
    }
    this.#recovered.delete(entry.id);
    this.#liveness.connect(entry);
    entry.phase = 'REGISTERED';
    entry.connected = true;
    entry.sessionId = sessionId;
    entry.unreachableTimeNs = undefined;
    this.#indexAddress(entry);
    this.#replaceTasks(entry, tasks);
    // What this session says holds now; an agent that says nothing (one that predates conditions) has none known.
    const pressure = nextDiskPressure(entry.diskPressure, conditions, Number(nowNs / 1_000_000n));
    entry.diskPressure = pressure.value;
    return { previousSessionId, conditionChange: pressure.change };
  }

  /**
   * The agent's session reported its conditions (CONDITIONS). Only its current session speaks
   * for it, and only while it is registered and connected. Returns how they changed.
   */
  updateConditions(agentId: string, sessionId: number, conditions: AgentConditions, nowMs: number): ConditionChange {
    const entry = this.#agents.get(agentId);
    if (entry === undefined || entry.phase !== 'REGISTERED' || !entry.connected || entry.sessionId !== sessionId) return undefined;
    const next = nextDiskPressure(entry.diskPressure, conditions, nowMs);
    entry.diskPressure = next.value;
    return next.change;
  }

  /** Agents under disk pressure now (registered and connected), for the metrics and Drydock's views. */
  underDiskPressure(): AgentEntry[] {
    const out: AgentEntry[] = [];
    for (const e of this.#agents.values()) if (e.diskPressure !== undefined) out.push(e);
    return out;
  }

  /** The session closed. Only the agent's current session counts; an older one closing changes nothing. */
  disconnect(agentId: string, sessionId: number, nowMs: number): boolean {
    const entry = this.#agents.get(agentId);
    if (entry === undefined || entry.sessionId !== sessionId || entry.phase !== 'REGISTERED') return false;
    entry.connected = false;
    entry.sessionId = undefined;
    // Only a session speaks for the agent's conditions: unknown until it registers again.
    entry.diskPressure = undefined;
    this.#liveness.disconnect(entry, nowMs);
    return true;
  }

  /** A pong came back: the agent is alive. */
  pong(agentId: string): void {
    const entry = this.#agents.get(agentId);
    if (entry === undefined) return;
    this.#liveness.pong(entry);
  }

  /** One whole liveness round at once (every slot of the wheel): liveness.ts LivenessWheel.tick. */
  tick(nowMs: number): TickDecision {
    return this.#liveness.tick(nowMs);
  }

  /** One slot's share of a liveness round: liveness.ts LivenessWheel.tickSlot. */
  tickSlot(nowMs: number, slot: number): TickDecision {
    return this.#liveness.tickSlot(nowMs, slot);
  }

  /** Recovered agents still not back at the deadline. */
  expireRecovered(nowMs: number): string[] {
    if (this.#recoveredDeadlineMs === undefined || nowMs < this.#recoveredDeadlineMs) return [];
    return [...this.#recovered];
  }

  /** Moves an agent to UNREACHABLE (the shell writes it durably). Returns its old session, to close. */
  markUnreachable(agentId: string, timeNs: bigint): { sessionId: number | undefined } | undefined {
    const entry = this.#agents.get(agentId);
    if (entry === undefined || entry.phase === 'UNREACHABLE') return undefined;
    const sessionId = entry.sessionId;
    this.#liveness.unreachable(entry);
    this.#recovered.delete(agentId);
    this.#unindexAddress(entry);
    entry.phase = 'UNREACHABLE';
    entry.connected = false;
    entry.sessionId = undefined;
    entry.unreachableTimeNs = timeNs;
    entry.diskPressure = undefined;
    return { sessionId };
  }

  /**
   * The principal an agent id is bound to: a known agent's, else a removed one's (kept after its
   * removal); undefined for an id never bound (or whose removal was dropped past the cap).
   * What principalRefusal is asked with.
   */
  boundPrincipal(agentId: string): string | undefined {
    return this.#agents.get(agentId)?.principal ?? this.#removedBindings.get(agentId);
  }

  /** The removed agents' bindings from the registry, oldest first. */
  recoverRemovedBindings(bindings: readonly RemovedBinding[]): void {
    for (const b of bindings) this.#keepBinding(b.id, b.principal);
  }

  /** How many removed agents' bindings are kept (for tests and metrics). */
  get removedBindingsCount(): number {
    return this.#removedBindings.size;
  }

  #keepBinding(agentId: string, principal: string): void {
    // Deleted first: a binding kept again is the newest (Map order is insertion order).
    this.#removedBindings.delete(agentId);
    this.#removedBindings.set(agentId, principal);
    for (const oldest of this.#removedBindings.keys()) {
      if (this.#removedBindings.size <= this.#maxRemovedBindings) break;
      this.#removedBindings.delete(oldest);
    }
  }

  /**
   * Forgets an agent; the principal its id is bound to stays bound (the shell writes it with
   * the removal: AgentRemoval). Returns its session, to close.
   */
  remove(agentId: string): { sessionId: number | undefined } | undefined {
    const entry = this.#forget(agentId);
    if (entry?.principal !== undefined) this.#keepBinding(agentId, entry.principal);
    return entry === undefined ? undefined : { sessionId: entry.sessionId };
  }

  #forget(agentId: string): AgentEntry | undefined {
    const entry = this.#agents.get(agentId);
    if (entry === undefined) return undefined;
    this.#agents.delete(agentId);
    for (const key of entry.tasks?.keys() ?? []) this.#release(key, agentId);
    this.#liveness.forget(entry);
    this.#recovered.delete(agentId);
    this.#unindexAddress(entry);
    return entry;
  }

  /** Ids of agents marked gone, from the registry. */
  recoverGone(ids: Iterable<string>): void {
    for (const id of ids) this.#gone.add(id);
  }

  /** How many agent ids were marked gone (for the metrics). */
  get goneCount(): number {
    return this.#gone.size;
  }

  /** Was this id marked gone? */
  isGone(agentId: string): boolean {
    return this.#gone.has(agentId);
  }

  /** Marks the agent gone: it leaves the table and its id is refused from now on. Returns its session, to close. */
  markGone(agentId: string): { sessionId: number | undefined } | undefined {
    this.#gone.add(agentId);
    // No binding to keep: a gone id is refused to everyone.
    const entry = this.#forget(agentId);
    return entry === undefined ? undefined : { sessionId: entry.sessionId };
  }

  // ---- Tasks ---------------------------------------------------------------------------

  /** Records a task the master asked the agent to run (TASK_STAGING until the agent reports). */
  addTask(agentId: string, frameworkId: string, task: TaskInfo): boolean {
    const entry = this.#agents.get(agentId);
    if (entry === undefined) return false;
    const t: Task = {
      name: task.name,
      task_id: task.task_id,
      framework_id: { value: frameworkId },
      agent_id: { value: agentId },
      state: 'TASK_STAGING',
      resources: task.resources,
      statuses: [],
    };
    if (task.kill_policy !== undefined) t.kill_policy = task.kill_policy;
    if (task.labels !== undefined) t.labels = task.labels;
    // Mesos' Task.user: what view_tasks decides on (else the framework's user).
    if (task.command?.user !== undefined && task.command.user !== '') t.user = task.command.user;
    const key = taskKey(frameworkId, task.task_id.value);
    (entry.tasks ??= new Map()).set(key, t);
    this.#hold(key, agentId);
    return true;
  }

  /**
   * May the session of `agentId` report on this task (a status update, or a task in its
   * registration)? `claimedAgentId` is the agent id the message carries, if any. Undefined
   * when it may. Another owner is looked up in the task index (one lookup, whatever the
   * number of agents).
   */
  foreignTask(agentId: string, frameworkId: string, taskId: string, claimedAgentId: string | undefined): ForeignTaskReason | undefined {
    if (claimedAgentId !== undefined && claimedAgentId !== agentId) return 'FOREIGN_AGENT_ID';
    const key = taskKey(frameworkId, taskId);
    const own = this.#agents.get(agentId)?.tasks;
    if (own?.has(key) === true) return undefined;
    if (this.#heldByAnother(key, agentId)) return 'TASK_OF_ANOTHER_AGENT';
    if ((own?.size ?? 0) >= MAX_REGISTERED_TASKS) return 'TOO_MANY_TASKS';
    return undefined;
  }

  /** The task's latest state, or undefined if the master does not know the task. */
  taskState(agentId: string, frameworkId: string, taskId: string): TaskState | undefined {
    return this.#agents.get(agentId)?.tasks?.get(taskKey(frameworkId, taskId))?.state;
  }

  /**
   * Each task's updates recorded (and so forwarded) and not yet acknowledged, oldest first; the
   * latest is also the task's `status_update_uuid`. An agent may send a task's next update
   * before the previous one is acknowledged (pipelined), so an acknowledgement may name an
   * older update than the latest: it is still the agent's to hear. Kept beside the Task, not
   * in it, so that GET_TASKS renders Tasks as they are; it follows the object into completed.
   */
  readonly #unacknowledged = new WeakMap<Task, string[]>();

  #expectAcknowledgement(task: Task, uuid: string): void {
    const list = this.#unacknowledged.get(task);
    if (list === undefined) this.#unacknowledged.set(task, [uuid]);
    else if (!list.includes(uuid)) list.push(uuid);
  }

  /** The task's recorded updates not yet acknowledged, oldest first. */
  unacknowledged(task: Task): readonly string[] {
    return this.#unacknowledged.get(task) ?? [];
  }

  /**
   * Records a status update from the agent. An update for a task the master never saw creates
   * it. As Mesos' `Master::updateTask`, a status replaces the last one when both have the same
   * state, so a task's (health) check updates do not pile up in `statuses`. 'RETRY' is an update
   * already recorded (the agent resends until acknowledged), 'UNKNOWN_AGENT' one not recorded.
   */
  updateStatus(agentId: string, frameworkId: string, status: TaskStatus): 'RECORDED' | 'RETRY' | 'UNKNOWN_AGENT' {
    const entry = this.#agents.get(agentId);
    if (entry === undefined) return 'UNKNOWN_AGENT';
    const tasks = (entry.tasks ??= new Map());
    const key = taskKey(frameworkId, status.task_id.value);
    let task = tasks.get(key);
    if (task === undefined) {
      task = {
        name: status.task_id.value,
        task_id: status.task_id,
        framework_id: { value: frameworkId },
        agent_id: { value: agentId },
        state: status.state,
        resources: [],
        statuses: [],
      };
      tasks.set(key, task);
      this.#hold(key, agentId);
    }
    const stamped: TaskStatus = status.agent_id === undefined ? { ...status, agent_id: { value: agentId } } : status;
    // A retried update (same uuid) is not a new state: the agent resends until acknowledged.
    // It is forwarded again, so its acknowledgement is expected again (the last one may have
    // been lost with the agent's session).
    if (status.uuid !== undefined && task.statuses.some((s: TaskStatus) => s.uuid === status.uuid)) {
      this.#expectAcknowledgement(task, status.uuid);
      return 'RETRY';
    }
    task.state = status.state;
    if (task.statuses.at(-1)?.state === status.state) task.statuses.pop();
    task.statuses.push(stamped);
    if (status.uuid !== undefined) {
      task.status_update_state = status.state;
      task.status_update_uuid = status.uuid;
      this.#expectAcknowledgement(task, status.uuid);
    }
    return 'RECORDED';
  }

  /**
   * A scheduler acknowledged an update. The task moves to completed only when the acknowledged
   * update is its latest and terminal (GET_TASKS: a task leaves `tasks` once its terminal update
   * is acknowledged). An older update still unacknowledged (the agent sent the next before this
   * one's acknowledgement came) is 'ACKNOWLEDGED' and leaves the task's latest as it was; any
   * other uuid is 'UUID_MISMATCH'. On 'COMPLETED', `superseded` receives the task's earlier
   * updates still unacknowledged: the scheduler has acknowledged how the task ended, the master
   * forgets the task, and their own acknowledgements, should they come, would find no task, so
   * the shell acknowledges them to the agent now (Mesos' agent ends a task's update stream with
   * its terminal acknowledgement all the same).
   */
  acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string, superseded: string[] = []): AckOutcome {
    const entry = this.#agents.get(agentId);
    if (entry === undefined) return 'UNKNOWN_AGENT';
    const key = taskKey(frameworkId, taskId);
    const task = entry.tasks?.get(key);
    if (task === undefined) return 'UNKNOWN_TASK';
    const pending = this.#unacknowledged.get(task);
    const at = pending?.indexOf(uuid) ?? -1;
    if (task.status_update_uuid !== uuid) {
      if (at === -1) return 'UUID_MISMATCH';
      pending?.splice(at, 1);
      return 'ACKNOWLEDGED';
    }
    if (at !== -1) pending?.splice(at, 1);
    const state = task.status_update_state ?? task.state;
    delete task.status_update_uuid;
    delete task.status_update_state;
    if (!isTerminal(state)) return 'ACKNOWLEDGED';
    if (entry.tasks?.delete(key) === true) this.#release(key, agentId);
    if (pending !== undefined && pending.length > 0) superseded.push(...pending.splice(0));
    this.#completed.push(task);
    if (this.#completed.length > MAX_COMPLETED_TASKS) this.#completed.shift();
    return 'COMPLETED';
  }

  /**
   * A master-generated terminal update (no uuid, nothing to acknowledge): the task ends here and
   * moves to completed at once. False when the task is unknown.
   */
  completeTask(agentId: string, frameworkId: string, taskId: string, status: TaskStatus): boolean {
    const entry = this.#agents.get(agentId);
    const key = taskKey(frameworkId, taskId);
    const task = entry?.tasks?.get(key);
    if (entry === undefined || task === undefined) return false;
    task.state = status.state;
    task.statuses.push(status);
    delete task.status_update_uuid;
    delete task.status_update_state;
    if (entry.tasks?.delete(key) === true) this.#release(key, agentId);
    this.#pushCompleted(task);
    return true;
  }

  /** A task no longer in any agent's map (lost with its agent's restart) goes to completed. */
  completeDetached(task: Task, status: TaskStatus): void {
    task.state = status.state;
    task.statuses.push(status);
    delete task.status_update_uuid;
    delete task.status_update_state;
    this.#pushCompleted(task);
  }

  /** Drops a task from an agent's map without completing it (the master already reported its end). */
  forgetTask(agentId: string, frameworkId: string, taskId: string): void {
    const key = taskKey(frameworkId, taskId);
    if (this.#agents.get(agentId)?.tasks?.delete(key) === true) this.#release(key, agentId);
  }

  #pushCompleted(task: Task): void {
    this.#completed.push(task);
    if (this.#completed.length > MAX_COMPLETED_TASKS) this.#completed.shift();
  }

  // ---- Views ---------------------------------------------------------------------------

  /** Every agent, in admission order. */
  all(): IterableIterator<AgentEntry> {
    return this.#agents.values();
  }

  get completedTasks(): readonly Task[] {
    return this.#completed;
  }

  /** Counts for logs and tests. */
  counts(): { registered: number; connected: number; recovered: number; unreachable: number } {
    const live = this.#liveness.sizes;
    const registered = live.connected + live.disconnected;
    return {
      registered,
      connected: live.connected,
      recovered: this.#recovered.size,
      unreachable: this.#agents.size - registered - this.#recovered.size,
    };
  }

  #replaceTasks(entry: AgentEntry, reports: readonly AgentTaskReport[]): void {
    // The agent's report is the truth about its tasks (Mesos reconciles the same way on re-registration).
    // Tasks the master launched that the agent has not reported yet stay only if still STAGING.
    if (reports.length === 0 && entry.tasks === undefined) return; // the common case: nothing before, nothing now
    const next = new Map<string, Task>();
    for (const [key, task] of entry.tasks ?? []) if (task.state === 'TASK_STAGING' && task.statuses.length === 0) next.set(key, task);
    for (const r of reports) {
      const t: Task = {
        name: r.task.name,
        task_id: r.task.task_id,
        framework_id: { value: r.framework_id },
        agent_id: { value: entry.id },
        state: r.state,
        resources: r.task.resources,
        statuses: r.statuses,
      };
      if (r.status_update_state !== undefined) t.status_update_state = r.status_update_state;
      if (r.status_update_uuid !== undefined) t.status_update_uuid = r.status_update_uuid;
      if (r.task.kill_policy !== undefined) t.kill_policy = r.task.kill_policy;
      if (r.task.labels !== undefined) t.labels = r.task.labels;
      if (r.task.command?.user !== undefined && r.task.command.user !== '') t.user = r.task.command.user;
      next.set(taskKey(r.framework_id, r.task.task_id.value), t);
    }
    for (const key of entry.tasks?.keys() ?? []) if (!next.has(key)) this.#release(key, entry.id);
    for (const key of next.keys()) this.#hold(key, entry.id);
    entry.tasks = next.size === 0 ? undefined : next;
  }

  #hold(key: string, agentId: string): void {
    const h = this.#holders.get(key);
    if (h === undefined) this.#holders.set(key, agentId);
    else if (typeof h === 'string') {
      if (h !== agentId) this.#holders.set(key, new Set([h, agentId]));
    } else h.add(agentId);
  }

  #release(key: string, agentId: string): void {
    const h = this.#holders.get(key);
    if (h === undefined) return;
    if (typeof h === 'string') {
      if (h === agentId) this.#holders.delete(key);
      return;
    }
    h.delete(agentId);
    if (h.size === 1) this.#holders.set(key, h.values().next().value as string);
  }

  #heldByAnother(key: string, agentId: string): boolean {
    const h = this.#holders.get(key);
    if (h === undefined) return false;
    if (typeof h === 'string') return h !== agentId;
    return h.size > (h.has(agentId) ? 1 : 0);
  }

  #indexAddress(entry: AgentEntry): void {
    const key = addressKey(entry.info);
    if (key !== undefined) this.#byAddress.set(key, entry.id);
  }

  #unindexAddress(entry: AgentEntry): void {
    const key = addressKey(entry.info);
    if (key !== undefined && this.#byAddress.get(key) === entry.id) this.#byAddress.delete(key);
  }
}

function newEntry(a: DurableAgent, phase: AgentPhase): AgentEntry {
  return {
    id: a.id,
    info: a.info,
    version: a.version,
    capabilities: a.capabilities,
    phase,
    connected: false,
    sessionId: undefined,
    registeredTimeNs: a.registeredTimeNs,
    reregisteredTimeNs: undefined,
    disconnectedAtMs: undefined,
    awaitingPong: false,
    missedPings: 0,
    pingSlot: undefined,
    unreachableTimeNs: undefined,
    tasks: undefined,
    deactivated: false,
    drain: undefined,
    principal: a.principal,
    diskPressure: undefined,
  };
}

/** Does the REGISTER carry a different durable record than the table holds? */
function infoChanged(entry: AgentEntry, req: RegistrationRequest): boolean {
  return (
    entry.version !== req.version ||
    JSON.stringify(entry.info) !== JSON.stringify(req.info) ||
    JSON.stringify(entry.capabilities) !== JSON.stringify(req.capabilities)
  );
}

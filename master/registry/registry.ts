/**
 * The registry: everything the master must not forget across a crash, behind one domain
 * method per durable change (Mesos' registrar operations). A write's promise resolves only
 * once the change is durable, so callers acknowledge nothing before that.
 *
 * Agents (admission, reachability, drain, deactivation, gone, and the principal a removed
 * agent's id stays bound to), frameworks, the maintenance schedule with machine modes, and
 * maintenance plans (spec and progress, opaque text); each backend change is a numbered migration.
 * Every write goes through master/term/commit.ts: written first, applied to memory after.
 *
 * Tasks are not here: agents re-report them when they re-register (Mesos recovery).
 */

import type { DrainConfig, DrainState } from '../../shared/drain.js';
import type { FrameworkInfo } from '../../shared/mesos.js';
import type { AgentSelf } from '../../shared/protocol.js';

/**
 * A write refused because this master may no longer write the registry (the SQLite file is
 * read-only; with etcd, the leader's election key is gone). Not a passing fault: the term
 * that got it ends.
 */
export class RegistryFencedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RegistryFencedError';
  }
}

/** Whether the master may talk to an admitted agent (Mesos keeps `slaves` and `unreachable` lists). */
export type Reachability = 'REACHABLE' | 'UNREACHABLE';

/** What the registry keeps about an admitted agent. */
export interface DurableAgent {
  id: string;
  info: AgentSelf;
  /** The agent's version string, from REGISTER. */
  version: string;
  capabilities: string[];
  /** When this agent was first admitted, in ns since the epoch (beyond 2^53: a bigint). */
  registeredTimeNs: bigint;
  /**
   * The principal the agent id is bound to: the one that first registered it authenticated.
   * Left out while the agent has only registered anonymously. A write carries the whole record,
   * so callers pass the binding on (admitting without it unbinds).
   */
  principal?: string;
}

/** An agent's drain as the registry keeps it (Mesos DrainInfo, plus when it started and ended). */
export interface DurableDrain {
  state: DrainState;
  config: DrainConfig;
  /** When DRAIN_AGENT was accepted, in ns since the epoch. */
  startedNs: bigint;
  /** When it became DRAINED, in ns since the epoch. */
  drainedNs: bigint | undefined;
}

/** An admitted agent as recover() returns it. */
export interface RecoveredAgent extends DurableAgent {
  reachability: Reachability;
  /** Set while UNREACHABLE: when the master marked it so, in ns since the epoch. */
  unreachableTimeNs?: bigint;
  /** Present (true) after DEACTIVATE_AGENT or DRAIN_AGENT, until REACTIVATE_AGENT. */
  deactivated?: true;
  /** Present while the agent has drain state. */
  drain?: DurableDrain;
}

/**
 * Group commit, both registries: at most one grouped write starts per this many ms, and a write
 * arriving after a quiet spell goes at once. Registrations in a storm arrive a few per
 * event-loop turn, and a write's fixed cost dwarfs what each record adds: a SQLite commit is
 * ~0.25 ms of blocked event loop; an etcd transaction about 1 ms of the client's CPU (a gRPC
 * call) and 0.7 ms of etcd's. Measured on the etcd-registry benchmark's second floor (an echo
 * server putting each of 10,000 agents in etcd): started back to back as each ended, 988
 * transactions of about 10 puts; waiting out the window, 330 of about 30, and etcd's CPU over
 * the storm from 0.70 to 0.47 s. The cost is at most this much added latency, only under load.
 */
export const GROUP_COMMIT_WINDOW_MS = 10;

/**
 * How many removed agents' bindings the registry keeps (RemovedBinding), at most; past it the
 * oldest removal is dropped. Mesos bounds its registry's unreachable and gone lists the same way
 * (--registry_max_agent_count, 102,400 by default). A dropped id is unknown again: the next
 * principal to register it binds it, as before the binding was kept.
 */
export const MAX_REMOVED_BINDINGS = 102_400;

/**
 * The principal a removed agent's id stays bound to. An agent is removed (its machine went DOWN,
 * a new agent replaced it at its address) and its record goes, but its id may come back: bound,
 * it is refused to any other principal as if the agent were still known (issue 13).
 */
export interface RemovedBinding {
  id: string;
  principal: string;
  /** When the agent was removed, in ns since the epoch. */
  removedTimeNs: bigint;
}

/** Bounds a backend keeps to (tests make them small). */
export interface RegistryLimits {
  /** Default MAX_REMOVED_BINDINGS. */
  maxRemovedBindings?: number;
}

/** What removeAgent keeps of the agent it forgets, written with the removal (one transaction). */
export interface AgentRemoval {
  /** When it is removed, in ns since the epoch. */
  timeNs: bigint;
  /** The principal its id is bound to, if any: kept as a RemovedBinding. */
  principal?: string;
  /**
   * Its machine, when that is in the maintenance schedule, with the attributes the master knows
   * it by: written into the schedule unless the schedule holds these already. A machine scheduled
   * before its agent registered has none there until then, and once the agent is gone nothing
   * else would tell a restarted master (the ACLs name machines by attribute). markAgentGone
   * takes the same.
   */
  machine?: { key: string; attributes: Readonly<Record<string, string>> };
}

/** An agent marked gone: refused forever (Mesos keeps these in the registry's `gone` list). */
export interface GoneAgent {
  id: string;
  goneTimeNs: bigint;
}

/** What the registry keeps about a framework (Mesos keeps FrameworkInfos so recovered frameworks are known). */
export interface DurableFramework {
  id: string;
  /** The FrameworkInfo it last subscribed with, `id` set. */
  info: FrameworkInfo;
  /** When it first subscribed, in ns since the epoch (undefined: known only from an agent's report). */
  registeredTimeNs: bigint | undefined;
}

/** A scheduled machine as kept: its key (shared/machine.ts machineKey), its MachineID as written, its mode. */
export interface DurableMachine {
  key: string;
  id: { hostname?: string; ip?: string };
  mode: 'DRAINING' | 'DOWN';
  /**
   * The attributes its agents last had (attribute name -> value, as ACL objects name them:
   * `rack:r1`), when any agent on it was seen. Kept so that an attribute ACL still matches the
   * machine once it is DOWN and its agents are gone, across a restart. Left out when none is known.
   */
  attributes?: Readonly<Record<string, string>>;
}

/** Attributes by machine key, as startMaintenance records them. */
export type MachineAttributes = ReadonlyMap<string, Readonly<Record<string, string>>>;

/**
 * A machine's attributes as a backend read them back (parsed JSON): an object of its string
 * values; undefined when there are none or it is no object. What a hand-edited store holds
 * beyond that is dropped: the machine loses attributes, the master does not fail to start.
 */
export function storedMachineAttributes(value: unknown): Record<string, string> | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const out: Record<string, string> = {};
  let any = false;
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'string') continue;
    out[k] = v;
    any = true;
  }
  return any ? out : undefined;
}

/** Do two attribute sets say the same (the same object, or the same names with the same values)? */
export function sameMachineAttributes(a: Readonly<Record<string, string>> | undefined, b: Readonly<Record<string, string>> | undefined): boolean {
  if (a === b) return true;
  if (a === undefined || b === undefined) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((k) => Object.hasOwn(b, k) && a[k] === b[k]);
}

/** The maintenance schedule with each machine's mode (Mesos' `schedules` + `machines`). Times in exact ns. */
export interface DurableSchedule {
  windows: Array<{ unavailability: { startNs: bigint; durationNs?: bigint }; machines: DurableMachine[] }>;
}

/** A maintenance plan as the registry keeps it: its spec and its progress, as JSON text the registry does not read. */
export interface DurableMaintenancePlan {
  /** Unique, [a-z][a-z0-9-]*, at most 63 characters (MAINTENANCE_PLAN_NAME). */
  name: string;
  /** The plan's spec as submitted (canonical JSON text). Written once, at creation. */
  spec: string;
  /** Per-step states and the operator's overrides (JSON text); rewritten as the plan moves. */
  progress: string;
  /** When it was created (ns since the epoch), for ordering. */
  createdNs: bigint;
}

/** What a maintenance plan's name must look like (a DNS label): it is also part of etcd keys. */
export const MAINTENANCE_PLAN_NAME = /^[a-z][a-z0-9-]{0,62}$/;

/**
 * Why a plan cannot be kept as given, or undefined. Both are broken invariants (the driver
 * validates names first; JSON.stringify never makes lone surrogates), so plain Errors: a bad
 * name would address other keys in etcd, and a lone surrogate would not survive UTF-8 (both
 * backends store UTF-8), so the text would not come back as written.
 */
export function maintenancePlanProblem(plan: DurableMaintenancePlan): Error | undefined {
  if (!MAINTENANCE_PLAN_NAME.test(plan.name)) return new Error(`createMaintenancePlan: '${plan.name}' is not a maintenance plan name ([a-z][a-z0-9-]*, at most 63 characters)`);
  return textProblem('createMaintenancePlan', plan.name, { spec: plan.spec, progress: plan.progress });
}

/** Why a progress text cannot be kept, or undefined (see maintenancePlanProblem). */
export function maintenancePlanProgressProblem(name: string, progress: string): Error | undefined {
  return textProblem('updateMaintenancePlanProgress', name, { progress });
}

function textProblem(op: string, name: string, texts: Record<string, string>): Error | undefined {
  for (const [field, text] of Object.entries(texts)) {
    // With the u flag a surrogate pair is one code point: only a lone surrogate matches.
    if (/\p{Cs}/u.test(text)) return new Error(`${op}: the ${field} of maintenance plan '${name}' has a lone surrogate, which UTF-8 cannot keep`);
  }
  return undefined;
}

/** Everything durable, as a freshly started master needs it. */
export interface RegistryState {
  agents: RecoveredAgent[];
  /** Frameworks not removed, in the order they were first added. */
  frameworks: DurableFramework[];
  /** Agents marked gone, oldest first; left out when there are none. */
  goneAgents?: GoneAgent[];
  /** Bindings of removed agents, oldest removal first (at most MAX_REMOVED_BINDINGS); left out when there are none. */
  removedBindings?: RemovedBinding[];
  /** The maintenance schedule (`{windows: []}` when none). */
  maintenance: DurableSchedule;
  /** Maintenance plans, by createdNs then name; left out when there are none. */
  maintenancePlans?: DurableMaintenancePlan[];
}

/** One backend-independent interface, two backends: SQLite (one master, sqlite.ts) and etcd (HA, etcd.ts); the same contract suite runs against both. */
export interface Registry {
  /** Reads everything durable. Call once, before serving. */
  recover(): Promise<RegistryState>;
  /** Admits a new agent, or replaces the record of one with the same id (an unknown id re-registering is admitted as itself). */
  admitAgent(agent: DurableAgent): Promise<void>;
  /** The agent stopped answering or did not come back in time; it keeps its id and record. */
  markAgentUnreachable(agentId: string, timeNs: bigint): Promise<void>;
  /** An unreachable agent came back: readmit it with what it reports now. */
  markAgentReachable(agent: DurableAgent): Promise<void>;
  /**
   * Forgets the agent (e.g. a new agent took over its ip:port), its drain and deactivation
   * included. In the same transaction, keeps what `removal` says: the id's binding (dropping the
   * oldest past MAX_REMOVED_BINDINGS; a binding kept already moves to the newest), and the
   * machine's attributes. Unknown ids forget nothing, and still keep what `removal` says.
   */
  removeAgent(agentId: string, removal?: AgentRemoval): Promise<void>;
  /**
   * DRAIN_AGENT: the agent is DRAINING with this config (a re-drain overwrites the old config
   * and any drained time) and deactivated. The agent must be admitted.
   */
  drainAgent(agentId: string, config: DrainConfig, startedNs: bigint): Promise<void>;
  /** The drain finished: DRAINED at `timeNs`. A no-op unless the agent is DRAINING. */
  markAgentDrained(agentId: string, timeNs: bigint): Promise<void>;
  /** DEACTIVATE_AGENT: no offers for it until reactivated; keeps any drain. The agent must be admitted. */
  deactivateAgent(agentId: string): Promise<void>;
  /** REACTIVATE_AGENT: clears deactivation and drain. Unknown ids are a no-op. */
  reactivateAgent(agentId: string): Promise<void>;
  /**
   * MARK_AGENT_GONE (or a mark_gone drain finishing): forgets the agent and its drain, and
   * refuses its id forever (to every principal, so no binding is kept). In the same transaction,
   * writes `machine`'s attributes as removeAgent does (AgentRemoval.machine).
   */
  markAgentGone(agentId: string, timeNs: bigint, machine?: AgentRemoval['machine']): Promise<void>;
  /** Adds a framework, or replaces the record of one with the same id (re-subscription with new info). */
  addFramework(framework: DurableFramework): Promise<void>;
  /** Forgets a framework (TEARDOWN, failover timeout). Unknown ids are a no-op. */
  removeFramework(frameworkId: string): Promise<void>;
  /** Replaces the whole maintenance schedule, modes included, in one transaction (a schedule POST). */
  updateSchedule(schedule: DurableSchedule): Promise<void>;
  /**
   * Scheduled machines (by key) go DOWN; they stay in the schedule. Unknown keys are a no-op.
   * A machine in `attributes` gets those as its attributes (its agents are about to be removed,
   * so they are kept now); one not in it keeps what it had.
   */
  startMaintenance(machineKeys: readonly string[], attributes?: MachineAttributes): Promise<void>;
  /** Machines (by key) leave the schedule (they are UP again); windows left empty are dropped. */
  stopMaintenance(machineKeys: readonly string[]): Promise<void>;
  /**
   * Keeps a new maintenance plan, spec and first progress together. A name already kept is
   * refused with MAINTENANCE_PLAN_EXISTS (409) and nothing is written. A name that is not
   * MAINTENANCE_PLAN_NAME, or text with a lone surrogate, is refused with a plain Error (a
   * broken invariant: the driver validates first). Spec and progress may be of any size: etcd
   * keeps them in chunks.
   */
  createMaintenancePlan(plan: DurableMaintenancePlan): Promise<void>;
  /**
   * Replaces a plan's progress whole (readers see the old text or the new one, never a mix).
   * An unknown name is refused with a plain Error and nothing is written: the driver writes
   * progress only for plans it holds, so a miss means memory and registry disagree, as for
   * markAgentUnreachable.
   */
  updateMaintenancePlanProgress(name: string, progress: string): Promise<void>;
  /** Forgets a plan, spec and progress. Unknown names are a no-op. */
  deleteMaintenancePlan(name: string): Promise<void>;
  /** Flushes queued writes, then closes. Later writes reject with REGISTRY_CLOSED. */
  close(): Promise<void>;
  /**
   * How many bytes the registry holds now (Mesos' `registrar/registry_size_bytes`), if the
   * backend can say without a round trip: SQLite can (its pages); etcd does not (undefined).
   */
  sizeBytes?(): number | undefined;
}

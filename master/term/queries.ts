/**
 * The queries port: everything the edges (api/) and the process's metrics read of a term, as
 * plain data or as JSON views already in their wire shapes. Read-only: nothing here changes the
 * model, and nothing here hands out a service. The term implements it over its model and
 * services (term.ts `termQueries`); a unit test of an edge fakes it (test/unit/api-calls.test.ts).
 *
 * The records it returns (agents as `AgentEntry`, frameworks as `FrameworkEntry`, offers) are
 * the model's own, not copies: 10,000 agents are read per GET_STATE. They are plain data and
 * the caller treats them as read-only.
 */

import type { MachineObject } from '../../shared/acls.js';
import type { DrydockError } from '../../shared/errors.js';
import type { MachineId } from '../../shared/machine.js';
import type { Resource, Task } from '../../shared/mesos.js';
import type { PlansAnswer } from '../../shared/plans/api.js';
import type { Status } from '../../shared/plans/status.js';
import type { AgentEntry } from '../cores/agents.js';
import type { DrainView } from '../cores/drain.js';
import type { FrameworkEntry } from '../cores/frameworks.js';
import type { KeyedSchedule, Machine } from '../cores/maintenance.js';
import type { Offer } from '../cores/offers.js';

/** GET_MASTER's facts: this master's MasterInfo, when the process started and this term began (ms), the standbys it knows. */
export interface MasterView {
  readonly info: Record<string, unknown>;
  readonly startMs: number;
  readonly electedMs: number;
  readonly others: ReadonlyArray<Record<string, unknown>>;
}

/**
 * A maintenance plan spec read as creating it would (parsed, machines selected), without creating
 * it: what the impact preview shows of a plan, or the error creation would answer.
 */
export type PlanPreview =
  | {
    readonly ok: true;
    readonly name: string;
    readonly strategy: string;
    readonly phaseStrategy: string;
    readonly maxParallel: number | undefined;
    readonly maxDown: number | undefined;
    /** The hook `on_down` names (its caller then needs run_maintenance_hooks on it, as to create the plan). */
    readonly hook: string | undefined;
    readonly phases: ReadonlyArray<{ readonly name: string; readonly machines: readonly MachineId[] }>;
    /** Machines that may be out together, in the order the plan takes them (plans/waves.ts). */
    readonly waves: ReadonlyArray<{ readonly phases: readonly string[]; readonly machines: readonly MachineId[] }>;
  }
  | { readonly ok: false; readonly error: DrydockError };

/** Who may see a failed hook's output in a plan's JSON: whether the reader may run that hook (undefined: an older master's command). */
export type HookReveal = (hook: string | undefined) => boolean;

export interface Queries {
  /** Now on the term's clock (ms since the epoch). */
  nowMs(): number;
  /**
   * The model's generation: a stamp that changes whenever anything an answer shows may have
   * changed (every event on the bus, every durable change applied, every offer made or gone).
   * Two answers of the same question at the same generation are the same bytes.
   */
  generation(): string;
  /** Registry writes waiting now (Mesos' `registrar/queued_operations`). */
  pendingWrites(): number;

  // ---- The master ----
  master(): MasterView;
  /** The flags as GET_FLAGS writes them. */
  flags(): ReadonlyArray<{ readonly name: string; readonly value: string }>;

  // ---- Agents ----
  agent(agentId: string): AgentEntry | undefined;
  /** Every agent the master knows, in any phase. */
  agents(): Iterable<AgentEntry>;
  /** Tasks that completed, oldest first (bounded). */
  completedTasks(): readonly Task[];
  /** How many agent ids are marked gone. */
  goneAgents(): number;
  /** The resources of the outstanding offers of an agent. */
  offeredOnAgent(agentId: string): Resource[];
  /** What the drain core decides an agent's drain from (its record's `waiting for`). */
  drainView(entry: AgentEntry): DrainView;
  /** The machine an agent runs on, as the maintenance state indexes it (its mode and window); undefined: not indexed (an UP machine). */
  agentMachine(agentId: string): Machine | undefined;
  /** The address an agent's open session comes from; undefined without one. */
  agentPeer(agentId: string): string | undefined;
  /** An agent as an ACL object; undefined when the master has no such agent (an unknown object). */
  agentObject(agentId: string): MachineObject | undefined;
  /**
   * Drydock's own facts about an agent's health as its session reports them (cores/agents.ts
   * conditionsJson): `{}`, or `{"disk_pressure": {...}}` while its resources are not offered.
   * Undefined for an agent the master does not know. For Drydock's agent view, never a Mesos answer.
   */
  agentConditions(agentId: string): Record<string, unknown> | undefined;

  // ---- Frameworks and offers ----
  /** A framework the master has now (not a completed one). */
  framework(frameworkId: string): FrameworkEntry | undefined;
  /** A framework the master has, else one it remembers as completed. */
  frameworkEver(frameworkId: string): FrameworkEntry | undefined;
  frameworks(): Iterable<FrameworkEntry>;
  completedFrameworks(): readonly FrameworkEntry[];
  /** Removed for good (TEARDOWN, failover timeout): its id is refused. */
  frameworkRemoved(frameworkId: string): boolean;
  /** The framework whose SUBSCRIBE stream has this id. */
  frameworkOfStream(streamId: string): string | undefined;
  offers(frameworkId: string): Offer[];
  inverseOffers(frameworkId: string): Offer[];
  /** An Offer as the scheduler API and GET_FRAMEWORKS write it. */
  offerJson(offer: Offer): Record<string, unknown>;
  /** An InverseOffer as Mesos writes it. */
  inverseOfferJson(offer: Offer): Record<string, unknown>;
  /** Non-terminal tasks' resources of a framework, over every agent. */
  allocatedTo(frameworkId: string): Resource[];
  /** Offers and inverse offers sent and not yet answered or rescinded. */
  outstanding(): { offers: number; inverseOffers: number };

  // ---- Maintenance ----
  /** The Schedule JSON; with `visible`, only those machines. */
  maintenanceSchedule(visible?: (id: MachineId) => boolean): Record<string, unknown>;
  /** The ClusterStatus JSON; with `visible`, only those machines. */
  maintenanceStatus(visible?: (id: MachineId) => boolean): Record<string, unknown>;
  /** Every machine the master knows. */
  machines(): Iterable<Machine>;
  /** A machine by its key (events name machines by key). */
  machineByKey(key: string): Machine | undefined;
  /** A machine as an ACL object: hostname, ip and the attributes of its agents. */
  machineObject(id: MachineId): MachineObject;
  /** The machines a new schedule adds, removes or moves, compared with the current one. */
  changedMachines(next: KeyedSchedule): MachineId[];

  // ---- Maintenance plans ----
  planNames(): string[];
  /** The machines of a plan; undefined for an unknown plan. */
  planMachines(name: string): MachineId[] | undefined;
  /** Steps by plan and status (metrics). */
  planStepCounts(): Array<{ plan: string; status: Status; steps: number }>;
  /** The hook a verb on a plan could run (its caller then needs run_maintenance_hooks on it). */
  planHookNeededFor(name: string, verb: string, phase: string | undefined, step: string | undefined): string | undefined;
  /** A read of `/v1/maintenance/plans/<name>[/...]` (any method but POST), as the plans API answers it. */
  planAnswer(method: string, segments: readonly string[], query: URLSearchParams, reveal: HookReveal): PlansAnswer;
  /** A new plan's spec (YAML or JSON text) in waves, as creation would read it; nothing is created. */
  planPreview(specText: string): PlanPreview;
}

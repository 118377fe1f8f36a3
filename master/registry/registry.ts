/**
 * The registry: everything the master must not forget across a crash, behind one domain
 * method per durable change (Mesos' registrar operations). A write's promise resolves only
 * once the change is durable, so callers acknowledge nothing before that.
 *
 * Today only agents live here. Later issues add methods, not new ways in: maintenance
 * schedule (updateSchedule), machine modes (startMaintenance / stopMaintenance), drain
 * (drainAgent / markAgentDrained), deactivateAgent / reactivateAgent, markAgentGone,
 * each with a numbered migration in the backend. Frameworks: addFramework / removeFramework.
 *
 * Tasks are not here: agents re-report them when they re-register (Mesos recovery).
 */

import type { FrameworkInfo } from '../../shared/mesos.js';
import type { AgentSelf } from '../../shared/protocol.js';

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
}

/** An admitted agent as recover() returns it. */
export interface RecoveredAgent extends DurableAgent {
  reachability: Reachability;
  /** Set while UNREACHABLE: when the master marked it so, in ns since the epoch. */
  unreachableTimeNs?: bigint;
}

/** What the registry keeps about a framework (Mesos keeps FrameworkInfos so recovered frameworks are known). */
export interface DurableFramework {
  id: string;
  /** The FrameworkInfo it last subscribed with, `id` set. */
  info: FrameworkInfo;
  /** When it first subscribed, in ns since the epoch (undefined: known only from an agent's report). */
  registeredTimeNs: bigint | undefined;
}

/** Everything durable, as a freshly started master needs it. */
export interface RegistryState {
  agents: RecoveredAgent[];
  /** Frameworks not removed, in the order they were first added. */
  frameworks: DurableFramework[];
}

/** One backend-independent interface; SQLite today, etcd later (the same test suite runs against both). */
export interface Registry {
  /** Reads everything durable. Call once, before serving. */
  recover(): Promise<RegistryState>;
  /** Admits a new agent, or replaces the record of one with the same id (an unknown id re-registering is admitted as itself). */
  admitAgent(agent: DurableAgent): Promise<void>;
  /** The agent stopped answering or did not come back in time; it keeps its id and record. */
  markAgentUnreachable(agentId: string, timeNs: bigint): Promise<void>;
  /** An unreachable agent came back: readmit it with what it reports now. */
  markAgentReachable(agent: DurableAgent): Promise<void>;
  /** Forgets the agent (e.g. a new agent took over its ip:port). Unknown ids are a no-op. */
  removeAgent(agentId: string): Promise<void>;
  /** Adds a framework, or replaces the record of one with the same id (re-subscription with new info). */
  addFramework(framework: DurableFramework): Promise<void>;
  /** Forgets a framework (TEARDOWN, failover timeout). Unknown ids are a no-op. */
  removeFramework(frameworkId: string): Promise<void>;
  /** Flushes queued writes, then closes. Later writes reject with REGISTRY_CLOSED. */
  close(): Promise<void>;
}

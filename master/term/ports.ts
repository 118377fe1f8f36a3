/**
 * The narrow interfaces of a term. Inward, what its services receive instead of each other:
 * the agent link here, and the registry (registry/registry.ts, written through commit.ts), the
 * event bus (events.ts) and the clock (shared/clock.ts); no service imports another service's
 * class. Outward, what the process and the edges hold of a term (`ServingTerm`): the queries
 * and commands ports (queries.ts, commands.ts), the bus, and the two edges that stay open on a
 * connection (agent sessions, operator streams), never the Term class.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../../shared/clock.js';
import type { Codec } from '../../shared/codec.js';
import type { Logger } from '../../shared/log.js';
import type { AgentMessage, MasterMessage } from '../../shared/protocol.js';
import type { AgentTable } from '../cores/agents.js';
import type { UnreachableReason } from '../cores/liveness.js';
import type { MaintenanceState } from '../cores/maintenance.js';
import type { Access } from '../security/security.js';
import type { Commands } from './commands.js';
import type { Commits } from './commit.js';
import type { MasterEvents } from './events.js';
import type { Queries } from './queries.js';

/** The master's settings a term reads (the process's MasterConfig has them all; a test may give just these). */
export interface TermConfig {
  readonly agentPingTimeoutMs: number;
  readonly maxAgentPingTimeouts: number;
  readonly agentReregisterTimeoutMs: number;
  readonly allocationIntervalMs: number;
  readonly heartbeatIntervalMs: number;
  readonly maxOperatorEventStreamSubscribers: number;
  /** The flags as GET_FLAGS writes them. */
  readonly flags: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/**
 * What the metrics hear from the frameworks service (process/metrics.ts implements it):
 * acknowledgement latency and inverse-offer answers. A port, so the service knows nothing of
 * Prometheus (registry writes have theirs: commit.ts CommitInstruments).
 */
export interface FrameworkInstruments {
  /** A monotonic clock in milliseconds (the process's Clock.monotonicMs). */
  now(): number;
  /** A scheduler acknowledged an update `ms` after the master first forwarded it. */
  onAcknowledged(ms: number): void;
  /** A framework accepted or declined an outstanding inverse offer. */
  onInverseOfferAnswer(answer: 'ACCEPT' | 'DECLINE'): void;
}

/**
 * What the metrics hear from the agents service (process/metrics.ts implements it): agents marked
 * unreachable, as Mesos counts them (`master/slave_unreachable_*`, `master/recovery_slave_removals`).
 */
export interface AgentInstruments {
  /**
   * `scheduled`: the master decided an agent is unreachable and writes it; then `completed` (the
   * write is applied) or `canceled` (the agent came back meanwhile, was removed, or the write
   * failed). `reason` REREGISTER_TIMEOUT: it did not re-register after a master failover.
   */
  onUnreachable(stage: 'scheduled' | 'completed' | 'canceled', reason: UnreachableReason): void;
}

/** Who this master is, as the process tells its terms: the id ids derive from, and its MasterInfo (process/master-info.ts). */
export interface MasterSelf {
  readonly id: string;
  readonly info: Record<string, unknown>;
}

/** What the process (router, metrics) and the edges hold of the term serving now. */
export interface ServingTerm {
  readonly epoch: bigint;
  /** The term's bus (the metrics count what happens on it). */
  readonly bus: MasterEvents;
  readonly queries: Queries;
  readonly commands: Commands;
  /** The agents' WebSocket upgrades (api/agent-sessions.ts). */
  readonly sessions: AgentUpgrades;
  /** The operator event streams (api/operator-stream.ts). */
  readonly streams: OperatorSubscriptions;
  /** Drydock's own event streams, `GET /drydock/v1/events` (api/drydock-stream.ts). */
  readonly drydockEvents: DrydockSubscriptions;
}

/** The two ports an edge answers from: read through queries, act through commands. */
export type EdgePorts = Pick<ServingTerm, 'queries' | 'commands'>;

/** Takes an agent's WebSocket upgrade; `principal`: who it authenticated as. */
export interface AgentUpgrades {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, principal?: string): void;
}

/** Opens an operator event stream (a validated SUBSCRIBE) on the answer; `codec`: the records' encoding (Accept), JSON by default. */
export interface OperatorSubscriptions {
  subscribe(res: ServerResponse, access?: Access, codec?: Codec): void;
}

/** Opens a Drydock event stream (an authorized `GET /drydock/v1/events`) on the answer. */
export interface DrydockSubscriptions {
  subscribe(res: ServerResponse, access?: Access): void;
}

/** What every service of a term receives: the commit path to the registry, the bus, the clock, its logger. */
export interface ServicePorts {
  commits: Commits;
  bus: MasterEvents;
  clock: Clock;
  log: Logger;
}

/** The model the services share (the frameworks-and-offers service keeps the frameworks). */
export interface ServiceModel {
  agents: AgentTable;
  maintenance: MaintenanceState;
}

/** Talks to agents by id over their open sessions; the agents service (services/agents.ts) implements it. */
export interface AgentLink {
  /**
   * Sends to the agent's open session; false when it has none (the message is lost, as in Mesos:
   * the agent re-registers and resends). `urgent`: written now, not batched with this turn's
   * other messages to the agent (a DRAIN or KILL_TASK, whose signals should not wait for the
   * rest of the turn's work).
   */
  send(agentId: string, msg: MasterMessage, urgent?: boolean): boolean;
  /** Closes the agent's session with a code and a reason (SHUTDOWN, REPLACED, ...). */
  close(agentId: string, code: number, reason: string): void;
}

/**
 * What the agent sessions edge (api/agent-sessions.ts) hands its sessions' events to: the agents
 * service (services/agents.ts) implements it, one decoded message at a time per session.
 */
export interface AgentSessionEvents {
  connected(conn: AgentConnection): void;
  disconnected(conn: AgentConnection): void;
  pong(conn: AgentConnection): void;
  handle(conn: AgentConnection, msg: AgentMessage): Promise<void>;
}

/** One agent session as the master sees it; api/agent-sessions.ts implements it over ws. */
export interface AgentConnection {
  /** Unique per master process. */
  readonly id: number;
  /** The peer's address as the socket sees it (not what the agent claims). */
  readonly remote: string;
  /** The principal the WebSocket upgrade authenticated as; undefined when anonymous. */
  readonly principal: string | undefined;
  /** Sends if the socket is open; drops otherwise (the agent re-registers and resends). `urgent`: see AgentLink.send. */
  send(msg: MasterMessage, urgent?: boolean): void;
  /** Graceful close with a code and a reason (at most 123 bytes; the shell truncates). */
  close(code: number, reason: string): void;
  /** Drops the socket without a close handshake (the peer is not answering anyway). */
  terminate(): void;
  ping(): void;
}

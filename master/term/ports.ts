/**
 * The narrow interfaces the term's services receive instead of each other: the agent link
 * here, and the registry (registry/registry.ts, written through commit.ts), the event bus
 * (events.ts) and the clock (shared/clock.ts). No service imports another service's class.
 */

import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import type { MasterMessage } from '../../shared/protocol.js';
import type { AgentTable } from '../cores/agents.js';
import type { Commits } from './commit.js';
import type { MasterEvents } from './events.js';
import type { MaintenanceState } from '../cores/maintenance.js';

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

/** Talks to agents by id over their open sessions; registration.ts implements it. */
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

/** One agent session as the master sees it; agent-sessions.ts implements it over ws. */
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

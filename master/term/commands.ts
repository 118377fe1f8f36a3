/**
 * The commands port: every change an edge (api/) may ask of a term. Each resolves once the
 * change is durable and applied (or refused), with the error to answer or nothing, as the
 * services do: validation, the registry write and the serial queue are theirs. The term
 * implements it over its services (term.ts `termCommands`); a unit test of an edge fakes it.
 *
 * Authorization is the edge's (api/calls.ts, from the table), made before a command is asked;
 * the exceptions take an `authorize` callback because what is checked is only known inside the
 * command: the machines a plan spec selects, and a plan checked again in the serial queue.
 */

import type { DrainConfig } from '../../shared/drain.js';
import type { DrydockError } from '../../shared/errors.js';
import type { MachineId } from '../../shared/machine.js';
import type { FrameworkInfo } from '../../shared/mesos.js';
import type { PlansAnswer } from '../../shared/plans/api.js';
import type { KeyedSchedule } from '../cores/maintenance.js';
import type { SchedulerCall } from '../cores/scheduler-calls.js';
import type { Access } from '../security/security.js';

/** One open SUBSCRIBE answer of the scheduler API; api/scheduler.ts implements it over an HTTP response. */
export interface FrameworkStream {
  readonly id: string;
  send(event: unknown): void;
  /** Ends the response. */
  close(): void;
  /** Called once when the stream ends, either side. */
  onClose(fn: () => void): void;
}

/** A command's outcome: undefined once done (200, empty body), else the error to answer. */
export type CommandResult = DrydockError | undefined;

/** A scheduler call's outcome: accepted (202, or 200 where Mesos answers 200), or refused with an error. */
export type CallResult = { ok: true; status?: 200 } | { ok: false; error: DrydockError };

/** A plan created: the message the answer carries. */
export type PlanCreated = { ok: true; message: string } | { ok: false; error: DrydockError };

/** Asked by plan creation with the machines the spec selects and the hook it names: the 403, or undefined. */
export type AuthorizePlan = (machines: readonly MachineId[], hook: string | undefined) => DrydockError | undefined;

export interface Commands {
  // ---- Agents (drain service) ----
  drainAgent(agentId: string, config: DrainConfig): Promise<CommandResult>;
  deactivateAgent(agentId: string): Promise<CommandResult>;
  reactivateAgent(agentId: string): Promise<CommandResult>;
  markAgentGone(agentId: string): Promise<CommandResult>;

  // ---- Maintenance (maintenance service) ----
  /** The new schedule replaces the current one whole. */
  updateSchedule(schedule: KeyedSchedule): Promise<CommandResult>;
  /** DRAINING machines go DOWN (their agents are removed). */
  startMaintenance(ids: readonly MachineId[]): Promise<CommandResult>;
  /** DOWN machines come UP and leave the schedule. */
  stopMaintenance(ids: readonly MachineId[]): Promise<CommandResult>;

  // ---- Frameworks (frameworks service) ----
  /** The operator's TEARDOWN of a framework the master has. */
  teardownFramework(frameworkId: string): Promise<CommandResult>;
  /** A SUBSCRIBE of the scheduler API: `open` starts the answer's stream once the framework is durable. */
  subscribeFramework(info: FrameworkInfo, open: () => FrameworkStream, access: Access): Promise<CallResult>;
  /** Any other scheduler call, on the stream `streamId`. */
  frameworkCall(call: SchedulerCall, streamId: string | undefined, access: Access): CallResult | Promise<CallResult>;

  // ---- Maintenance plans ----
  /** `POST /v1/maintenance/plans`: `authorize` is asked about the machines the spec selects and its hook. */
  createPlan(specText: string, authorize: AuthorizePlan, createdBy: string | null): Promise<PlanCreated>;
  /** Only a COMPLETE or stopped plan. */
  deletePlan(name: string): Promise<CommandResult>;
  /** A verb (`POST /v1/maintenance/plans/<name>/<verb>`); `authorize` is asked again in the serial queue, where it runs. */
  planVerb(segments: readonly string[], query: URLSearchParams, body: string, authorize: (name: string) => DrydockError | undefined): Promise<PlansAnswer>;
}

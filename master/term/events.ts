/**
 * The term's one event bus: what happened in the master, announced after it was made durable
 * and applied. Services listen here instead of calling each other (the frameworks service
 * hears of agents, the drain service of acknowledgements, registration of machines going
 * DOWN), and so do the event streams (Mesos' operator stream, Drydock's own). Events carry ids, and the snapshots a
 * listener cannot read back once the change is applied (a removed agent's tasks).
 */

import type { MachineId } from '../../shared/machine.js';
import type { Refusal } from '../../shared/protocol.js';
import type { FrameworkInfo, Task, TaskState, TaskStatus } from '../../shared/mesos.js';
import type { Status, StepStatus } from '../../shared/plans/status.js';
import type { StepStage } from '../plans/step.js';

/**
 * How an agent's drain, activation or conditions changed (`AGENT_UPDATED` on Drydock's event
 * stream); DRAIN_REFUSED: the agent refused its drain message, the drain record says why;
 * DISK_PRESSURE: the agent reported disk pressure (it began, or its cause changed): its offers
 * stop; DISK_PRESSURE_CLEARED: it ended, and its resources are offered again.
 */
export type AgentChange = 'DRAINING' | 'DRAINED' | 'DEACTIVATED' | 'REACTIVATED' | 'DRAIN_REFUSED' | 'DISK_PRESSURE' | 'DISK_PRESSURE_CLEARED';

/** How machines' modes changed (`MACHINE_UPDATED` on Drydock's event stream). */
export type MachineChange = 'SCHEDULED' | 'DOWN' | 'UP';

/** One step of a maintenance plan as it is now (the Drydock `MAINTENANCE_PLAN_UPDATED` event). */
export interface MaintenanceStepChange {
  readonly phase: string;
  readonly name: string;
  readonly machine: MachineId;
  readonly stage: StepStage;
  readonly status: StepStatus;
  /** What the step waits for, as the plan JSON's step message says it ('' once COMPLETE; the error in ERROR, a failed hook's output hidden). */
  readonly waitingFor: string;
  /**
   * A failed hook's step: `waitingFor` with the hook's output, for subscribers allowed
   * run_maintenance_hooks on `hook` (undefined: an older master's command, which only an ANY grant reveals).
   */
  readonly revealed?: { readonly hook: string | undefined; readonly waitingFor: string };
}

export type MasterEvent =
  /**
   * An agent was admitted: a new registration, or a re-registration through the add path
   * (after a master restart, after being unreachable). Not sent when a known, disconnected
   * agent reconnects. `tasksBefore` is what the master knew of its tasks before its report;
   * `frameworks` the frameworks it reported.
   */
  | { type: 'AGENT_ADDED'; agentId: string; tasksBefore?: readonly Task[]; frameworks?: readonly FrameworkInfo[] }
  /** An agent re-registered over a live identity (reconnect); its info may have changed. */
  | { type: 'AGENT_RECONNECTED'; agentId: string; tasksBefore?: readonly Task[]; frameworks?: readonly FrameworkInfo[] }
  /** The agent's session closed; it is still registered (`active: false`). */
  | { type: 'AGENT_DISCONNECTED'; agentId: string }
  /** The agent stopped answering and was marked unreachable. */
  | { type: 'AGENT_UNREACHABLE'; agentId: string }
  /**
   * The agent was removed on purpose (replaced at its address, machine down). `tasks` is what
   * it ran; with `lostMessage` they are lost with that message (Mesos `removeSlave`).
   */
  | { type: 'AGENT_REMOVED'; agentId: string; reason: string; tasks?: readonly Task[]; lostMessage?: string }
  /** The agent was marked gone, durably; `tasks` is what the master knew it ran. */
  | { type: 'AGENT_GONE'; agentId: string; tasks: readonly Task[] }
  /** The agent could not decode one of our messages, did nothing with it and kept its session (its REFUSED). */
  | { type: 'AGENT_REFUSED_MESSAGE'; agentId: string; refused: Refusal }
  /** Drydock: the agent's drain, activation or conditions changed (drain start, DRAINED, deactivate, reactivate, drain refused, disk pressure). */
  | { type: 'AGENT_UPDATED'; agentId: string; change: AgentChange }
  /** Drydock: machines' modes changed; `agentIds` are the agents on them. */
  | { type: 'MACHINE_UPDATED'; change: MachineChange; machineKeys: readonly string[]; agentIds: readonly string[] }
  /** A task launch was accepted and sent to its agent. */
  | { type: 'TASK_ADDED'; agentId: string; frameworkId: string; taskId: string }
  /** A task's status changed (a retried identical update is not an event). */
  | { type: 'TASK_UPDATED'; agentId: string; frameworkId: string; taskId: string; status: TaskStatus; state: TaskState }
  /** An agent's status update, recorded: to forward to its framework (also when retried: at least once). */
  | { type: 'STATUS_UPDATE'; agentId: string; frameworkId: string; status: TaskStatus }
  /** A scheduler's acknowledgement reached the agent's record (a drain may be done now). */
  | { type: 'TASK_ACKNOWLEDGED'; agentId: string; frameworkId: string; taskId: string }
  /** Drydock: a maintenance plan was created (and started); `machines` is the size of its selection. */
  | { type: 'MAINTENANCE_PLAN_ADDED'; plan: string; status: Status; machines: number }
  /**
   * Drydock: a maintenance plan's step changed stage, status or waiting-for text (a countdown
   * ticking is not a change), or, without `step`, the plan's status alone changed (interrupt).
   */
  | { type: 'MAINTENANCE_PLAN_UPDATED'; plan: string; status: Status; step?: MaintenanceStepChange }
  /** Drydock: a COMPLETE or stopped maintenance plan was deleted. */
  | { type: 'MAINTENANCE_PLAN_REMOVED'; plan: string }
  | { type: 'FRAMEWORK_ADDED'; frameworkId: string }
  | { type: 'FRAMEWORK_UPDATED'; frameworkId: string }
  | { type: 'FRAMEWORK_REMOVED'; frameworkId: string };

export type MasterEventListener = (event: MasterEvent) => void;

/** A synchronous event bus. A listener that throws is reported, never breaks the emitter. */
export class MasterEvents {
  readonly #listeners = new Set<MasterEventListener>();
  readonly #onError: (error: unknown, event: MasterEvent) => void;

  constructor(onError: (error: unknown, event: MasterEvent) => void = () => {}) {
    this.#onError = onError;
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: MasterEventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  emit(event: MasterEvent): void {
    for (const l of this.#listeners) {
      try {
        l(event);
      } catch (e) {
        this.#onError(e, event);
      }
    }
  }

  get listenerCount(): number {
    return this.#listeners.size;
  }
}

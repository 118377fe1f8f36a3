/**
 * What happens in the master, as events: the scheduler API (updates, agent failures, offer
 * rescinds) and the operator event stream (SUBSCRIBE) both listen here instead of being
 * called from every place that changes state. Events carry ids; listeners read the current
 * objects from the master when they need the full shape.
 */

import type { TaskState, TaskStatus } from '../shared/mesos.js';

export type MasterEvent =
  /** An agent was admitted: a new registration, or a re-registration through the add path (after a master restart, after being unreachable). Not sent when a known, disconnected agent reconnects. */
  | { type: 'AGENT_ADDED'; agentId: string }
  /** An agent re-registered over a live identity (reconnect); its info may have changed. */
  | { type: 'AGENT_RECONNECTED'; agentId: string }
  /** The agent's session closed; it is still registered (`active: false`). */
  | { type: 'AGENT_DISCONNECTED'; agentId: string }
  /** The agent stopped answering and was marked unreachable. */
  | { type: 'AGENT_UNREACHABLE'; agentId: string }
  /** The agent was removed on purpose (replaced at its address, machine down, shut down). */
  | { type: 'AGENT_REMOVED'; agentId: string; reason: string }
  /** A task launch was accepted and sent to its agent. */
  | { type: 'TASK_ADDED'; agentId: string; frameworkId: string; taskId: string }
  /** A task's status changed (a retried identical update is not an event). */
  | { type: 'TASK_UPDATED'; agentId: string; frameworkId: string; taskId: string; status: TaskStatus; state: TaskState }
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

/**
 * The operator event stream: `POST /api/v1 {"type":"SUBSCRIBE"}` (reference/mesos-api.md §1
 * "SUBSCRIBE"). A chunked RecordIO response per subscriber: SUBSCRIBED with a GET_STATE
 * snapshot, a HEARTBEAT at once and then every heartbeat interval, and the master's events in
 * Mesos' v1 `master::Event` shapes.
 *
 * The core, `eventRecord`, decides what (if anything) an event becomes on the wire, from plain
 * lookups. The shell, `OperatorStreams`, owns the sockets: one bus listener and one heartbeat
 * timer for all subscribers (10,000 agents' worth of events must not be rendered once per
 * stream), a cap on subscribers, and a bound on what a slow reader may leave unsent.
 */

import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../shared/clock.js';
import { stringifyJson } from '../shared/json.js';
import type { Logger } from '../shared/log.js';
import { machineIdJson } from '../shared/machine.js';
import { taskKey, type Task, type TaskState, type TaskStatus } from '../shared/mesos.js';
import { assertNever } from '../shared/protocol.js';
import { encodeRecord } from '../shared/recordio.js';
import type { MasterEvent, MasterEvents } from './events.js';
import type { TermView } from './term-view.js';
import { agentJson, frameworkJson, getState } from './operator-api.js';
import type { Access } from './security.js';

// ---- Core: event -> record ------------------------------------------------------------------

/** What the renderer may look up: the current objects, already in their GET_* JSON shapes. */
export interface StreamView {
  /** The task as GET_TASKS writes it; undefined if the master no longer has it. */
  task(agentId: string, frameworkId: string, taskId: string): Task | undefined;
  /** The agent as GET_AGENTS writes it; undefined unless it is registered. */
  agent(agentId: string): Record<string, unknown> | undefined;
  /** The framework as GET_FRAMEWORKS writes it (GetFrameworks.Framework). */
  framework(frameworkId: string): Record<string, unknown> | undefined;
  /** The FrameworkInfo of a framework, also after its removal. */
  frameworkInfo(frameworkId: string): Record<string, unknown> | undefined;
  /** GET_MAINTENANCE_STATUS's `status` (ClusterStatus). */
  maintenanceStatus(): Record<string, unknown>;
  /** The MachineIDs of machine keys, as the schedule writes them. */
  machineIds(keys: readonly string[]): Array<Record<string, string>>;
}

/** One record of the stream, as Mesos' v1 `master::Event` JSON. */
export type StreamRecord =
  | { type: 'SUBSCRIBED'; subscribed: { get_state: unknown; heartbeat_interval_seconds: number } }
  | { type: 'HEARTBEAT' }
  | { type: 'TASK_ADDED'; task_added: { task: Task } }
  | { type: 'TASK_UPDATED'; task_updated: { framework_id: { value: string }; status: TaskStatus; state: TaskState } }
  | { type: 'AGENT_ADDED'; agent_added: { agent: Record<string, unknown> } }
  | { type: 'AGENT_REMOVED'; agent_removed: { agent_id: { value: string } } }
  | { type: 'FRAMEWORK_ADDED'; framework_added: { framework: Record<string, unknown> } }
  | { type: 'FRAMEWORK_UPDATED'; framework_updated: { framework: Record<string, unknown> } }
  | { type: 'FRAMEWORK_REMOVED'; framework_removed: { framework_info: Record<string, unknown> } }
  /** Drydock: an agent's drain or activation changed; the agent as GET_AGENTS writes it. */
  | { type: 'AGENT_UPDATED'; agent_updated: { agent: Record<string, unknown> } }
  /** Drydock: machines' modes changed; those machines, and the whole GET_MAINTENANCE_STATUS `status`. */
  | { type: 'MACHINE_UPDATED'; machine_updated: { machine_ids: Array<Record<string, string>>; status: Record<string, unknown> } }
  /** Drydock: a maintenance plan was created; its name, status and number of machines. */
  | { type: 'MAINTENANCE_PLAN_ADDED'; maintenance_plan_added: { name: string; status: string; machines: number } }
  /** Drydock: a maintenance plan's step (or, without `step`, only the plan's status) changed. */
  | { type: 'MAINTENANCE_PLAN_UPDATED'; maintenance_plan_updated: { name: string; status: string; step?: MaintenanceStepJson } }
  | { type: 'MAINTENANCE_PLAN_REMOVED'; maintenance_plan_removed: { name: string } };

/** A maintenance plan's step on the stream: the machine as the schedule writes it, and the plan JSON's words. */
export interface MaintenanceStepJson {
  phase: string;
  name: string;
  machine_id: Record<string, string>;
  stage: string;
  status: string;
  waiting_for: string;
}

/** The first record: the snapshot, and how often heartbeats come (Mesos writes a double, 15.0). */
export function subscribedRecord(getStateJson: unknown, heartbeatIntervalMs: number): StreamRecord {
  return { type: 'SUBSCRIBED', subscribed: { get_state: getStateJson, heartbeat_interval_seconds: heartbeatIntervalMs / 1000 } };
}

export const HEARTBEAT_RECORD: StreamRecord = { type: 'HEARTBEAT' };

/**
 * What a master event becomes on the stream, or undefined when Mesos sends nothing for it.
 * Mesos has no event for a reconnect, a disconnect or unreachability (AGENT_REMOVED is for
 * explicit removal only), and an object that is already gone again when the event is
 * rendered is skipped rather than sent half-empty.
 */
export function eventRecord(event: MasterEvent, view: StreamView): StreamRecord | undefined {
  switch (event.type) {
    case 'AGENT_ADDED': {
      const agent = view.agent(event.agentId);
      return agent === undefined ? undefined : { type: 'AGENT_ADDED', agent_added: { agent } };
    }
    case 'AGENT_REMOVED':
      return { type: 'AGENT_REMOVED', agent_removed: { agent_id: { value: event.agentId } } };
    case 'AGENT_RECONNECTED':
    case 'AGENT_DISCONNECTED':
    case 'AGENT_UNREACHABLE':
    case 'AGENT_GONE':
    case 'STATUS_UPDATE':
    case 'TASK_ACKNOWLEDGED':
      return undefined;
    // Drydock extensions (Mesos has no event for these; plans and consoles wait on them).
    case 'AGENT_UPDATED': {
      const agent = view.agent(event.agentId);
      return agent === undefined ? undefined : { type: 'AGENT_UPDATED', agent_updated: { agent } };
    }
    case 'MACHINE_UPDATED':
      return { type: 'MACHINE_UPDATED', machine_updated: { machine_ids: view.machineIds(event.machineKeys), status: view.maintenanceStatus() } };
    case 'MAINTENANCE_PLAN_ADDED':
      return { type: 'MAINTENANCE_PLAN_ADDED', maintenance_plan_added: { name: event.plan, status: event.status, machines: event.machines } };
    case 'MAINTENANCE_PLAN_UPDATED': {
      // The event carries the step as it was when it changed: the plan may have moved on by now.
      const s = event.step;
      const step: MaintenanceStepJson | undefined = s === undefined ? undefined : { phase: s.phase, name: s.name, machine_id: machineIdJson(s.machine), stage: s.stage, status: s.status, waiting_for: s.waitingFor };
      return { type: 'MAINTENANCE_PLAN_UPDATED', maintenance_plan_updated: { name: event.plan, status: event.status, ...(step === undefined ? {} : { step }) } };
    }
    case 'MAINTENANCE_PLAN_REMOVED':
      return { type: 'MAINTENANCE_PLAN_REMOVED', maintenance_plan_removed: { name: event.plan } };
    case 'TASK_ADDED': {
      const task = view.task(event.agentId, event.frameworkId, event.taskId);
      return task === undefined ? undefined : { type: 'TASK_ADDED', task_added: { task } };
    }
    case 'TASK_UPDATED':
      // The bus only emits on a state change or a new (health) check update, so a retried
      // identical update never gets here.
      // The status is the one the master stored, which names its agent (as Mesos' does).
      return {
        type: 'TASK_UPDATED',
        task_updated: {
          framework_id: { value: event.frameworkId },
          status: event.status.agent_id === undefined ? { ...event.status, agent_id: { value: event.agentId } } : event.status,
          state: event.state,
        },
      };
    case 'FRAMEWORK_ADDED': {
      const framework = view.framework(event.frameworkId);
      return framework === undefined ? undefined : { type: 'FRAMEWORK_ADDED', framework_added: { framework } };
    }
    case 'FRAMEWORK_UPDATED': {
      const framework = view.framework(event.frameworkId);
      return framework === undefined ? undefined : { type: 'FRAMEWORK_UPDATED', framework_updated: { framework } };
    }
    case 'FRAMEWORK_REMOVED':
      return {
        type: 'FRAMEWORK_REMOVED',
        // FrameworkInfo's user and name are required: a framework whose info is gone still gets them.
        framework_removed: { framework_info: view.frameworkInfo(event.frameworkId) ?? { user: '', name: '', id: { value: event.frameworkId } } },
      };
    default:
      return assertNever(event);
  }
}

/** A StreamView over a live term, with the operator API's renderers. */
export function termStreamView(term: TermView): StreamView {
  return {
    task: (agentId, frameworkId, taskId) => term.agents.get(agentId)?.tasks?.get(taskKey(frameworkId, taskId)),
    agent: (agentId) => {
      const e = term.agents.get(agentId);
      return e?.phase === 'REGISTERED' ? agentJson(e, term) : undefined;
    },
    framework: (frameworkId) => frameworkJson(term, frameworkId),
    frameworkInfo: (frameworkId) => frameworkJson(term, frameworkId)?.['framework_info'] as Record<string, unknown> | undefined,
    maintenanceStatus: () => term.maintenance.statusJson(),
    machineIds: (keys) => keys.map((k) => machineIdJson(term.maintenance.machineByKey(k)?.id ?? {})),
  };
}

// ---- Shell: the subscribers' sockets ----------------------------------------------------------

/** Unsent bytes one subscriber may leave in its socket buffer before it is closed (a reader that stopped reading must not grow the master's memory). */
export const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export interface OperatorStreamsOptions {
  events: MasterEvents;
  view: StreamView;
  /** The GET_STATE `get_state` object, taken when a subscriber arrives. */
  snapshot: () => unknown;
  clock: Clock;
  logger: Logger;
  /** --heartbeat_interval, in ms. */
  heartbeatIntervalMs: number;
  /** --max_operator_event_stream_subscribers. */
  maxSubscribers: number;
  /** Default DEFAULT_MAX_BUFFERED_BYTES. */
  maxBufferedBytes?: number;
}

/** Why a subscriber's stream ended, in the `operator stream closed` log line. */
export type StreamCloseReason = 'CLIENT_GONE' | 'TOO_MANY_SUBSCRIBERS' | 'TOO_SLOW' | 'MASTER_STOPPING';

/** The heartbeat, framed once. */
const HEARTBEAT_BYTES = encodeRecord(stringifyJson(HEARTBEAT_RECORD));

interface Subscriber {
  readonly id: number;
  readonly res: ServerResponse;
}

/** Every open SUBSCRIBE stream of one master. */
export class OperatorStreams {
  #state: 'OPEN' | 'CLOSED' = 'OPEN';
  /** Insertion order is age: the first entry is the oldest stream. */
  readonly #subscribers = new Map<number, Subscriber>();
  readonly #opts: OperatorStreamsOptions;
  readonly #maxBufferedBytes: number;
  #nextId = 1;
  #unsubscribe: (() => void) | undefined;
  #heartbeat: TimerHandle | undefined;

  constructor(opts: OperatorStreamsOptions) {
    this.#opts = opts;
    this.#maxBufferedBytes = opts.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  /** Open streams. */
  get count(): number {
    return this.#subscribers.size;
  }

  get state(): 'OPEN' | 'CLOSED' {
    return this.#state;
  }

  /**
   * Answers a validated SUBSCRIBE: 200 with a chunked RecordIO body that stays open. The
   * caller has done the framing checks; after close() the answer is 503.
   */
  subscribe(res: ServerResponse, access?: Access): void {
    if (this.#state !== 'OPEN') {
      const text = 'Master is shutting down';
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const sub: Subscriber = { id: this.#nextId++, res };
    // No Content-Length: Node frames the body with Transfer-Encoding: chunked, and each
    // res.write() goes out as one chunk at once (Mesos' Content-Type here is the event's,
    // application/json, not application/recordio).
    res.writeHead(200, { 'Content-Type': 'application/json', 'Cache-Control': 'no-cache' });
    res.socket?.setNoDelay(true);
    res.on('close', () => this.#drop(sub, 'CLIENT_GONE'));
    res.on('error', () => this.#drop(sub, 'CLIENT_GONE'));

    this.#subscribers.set(sub.id, sub);
    if (this.#unsubscribe === undefined) this.#unsubscribe = this.#opts.events.subscribe((e) => this.#onEvent(e));
    if (this.#heartbeat === undefined) this.#scheduleHeartbeat();

    const snapshot = subscribedRecord(this.#opts.snapshot(), this.#opts.heartbeatIntervalMs);
    this.#write(sub, encodeRecord(stringifyJson(snapshot)));
    this.#write(sub, HEARTBEAT_BYTES);
    this.#opts.logger.info('operator stream opened', { subscriberId: sub.id, subscribers: this.#subscribers.size, eventListeners: this.#opts.events.listenerCount });

    // As Mesos: past the cap, the oldest streams make room for the new one.
    for (const oldest of this.#subscribers.values()) {
      if (this.#subscribers.size <= this.#opts.maxSubscribers) break;
      this.#end(oldest, 'TOO_MANY_SUBSCRIBERS');
    }
  }

  /** Graceful stop: ends every stream with the chunked terminator and refuses new ones. */
  close(): void {
    if (this.#state === 'CLOSED') return;
    this.#state = 'CLOSED';
    for (const sub of [...this.#subscribers.values()]) this.#end(sub, 'MASTER_STOPPING');
    this.#release();
  }

  #onEvent(event: MasterEvent): void {
    const record = eventRecord(event, this.#opts.view);
    if (record === undefined) return;
    // Rendered and framed once, whatever the number of subscribers.
    const bytes = encodeRecord(stringifyJson(record));
    for (const sub of [...this.#subscribers.values()]) this.#write(sub, bytes);
  }

  #scheduleHeartbeat(): void {
    this.#heartbeat = this.#opts.clock.setTimer(this.#opts.heartbeatIntervalMs, () => {
      this.#heartbeat = undefined;
      if (this.#subscribers.size === 0) return;
      for (const sub of [...this.#subscribers.values()]) this.#write(sub, HEARTBEAT_BYTES);
      if (this.#subscribers.size > 0) this.#scheduleHeartbeat();
    });
  }

  #write(sub: Subscriber, bytes: Buffer): void {
    if (!this.#subscribers.has(sub.id) || sub.res.destroyed || sub.res.writableEnded) return;
    sub.res.write(bytes);
    if (sub.res.writableLength > this.#maxBufferedBytes) {
      // Its unsent data would grow without bound; it can resubscribe and get a fresh snapshot.
      this.#opts.logger.warn('operator stream subscriber too slow', { subscriberId: sub.id, bufferedBytes: sub.res.writableLength });
      this.#drop(sub, 'TOO_SLOW');
      sub.res.destroy();
    }
  }

  /** Ends a stream cleanly (the client sees the end of the body, not an error). */
  #end(sub: Subscriber, reason: StreamCloseReason): void {
    this.#drop(sub, reason);
    if (!sub.res.writableEnded) sub.res.end();
  }

  /** Forgets a subscriber; the last one out releases the bus listener and the timer. */
  #drop(sub: Subscriber, reason: StreamCloseReason): void {
    if (!this.#subscribers.delete(sub.id)) return;
    if (this.#subscribers.size === 0) this.#release();
    this.#opts.logger.info('operator stream closed', {
      subscriberId: sub.id,
      reason,
      subscribers: this.#subscribers.size,
      eventListeners: this.#opts.events.listenerCount,
    });
  }

  #release(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#heartbeat?.cancel();
    this.#heartbeat = undefined;
  }
}

/** A term's streams, configured from the master's flags. */
export function createOperatorStreams(term: TermView, clock: Clock, logger: Logger): OperatorStreams {
  return new OperatorStreams({
    events: term.bus,
    view: termStreamView(term),
    snapshot: () => getState(term),
    clock,
    logger,
    heartbeatIntervalMs: term.config.heartbeatIntervalMs,
    maxSubscribers: term.config.maxOperatorEventStreamSubscribers,
  });
}

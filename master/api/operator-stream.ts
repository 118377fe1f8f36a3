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
 *
 * Every record is a mesos.v1.master.Event and nothing more: Drydock's own events (an agent's
 * drain or activation, machines' modes, maintenance plans) are on Drydock's own stream,
 * `GET /drydock/v1/events` (drydock-stream.ts).
 *
 * With ACLs (issue 13) each subscriber sees what its principal may view: the snapshot is
 * filtered as GET_STATE is, and each event passes its gate (`eventGate`, pure): tasks by
 * view_tasks, frameworks by view_frameworks (rendered per subscriber, with the offers of the
 * agents its view_agents allows), agents by view_agents. The gate's object is looked up once per
 * event and each subscriber holds one decision function per action, so an event still costs one
 * render; without ACLs none of this runs.
 */

import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { JSON_CODEC, type Codec } from '../../shared/codec.js';
import type { Logger } from '../../shared/log.js';
import { taskKey, type Task, type TaskState, type TaskStatus } from '../../shared/mesos.js';
import { assertNever } from '../../shared/protocol.js';
import type { MasterEvent, MasterEvents } from '../term/events.js';
import type { Queries } from '../term/queries.js';
import { agentJson, frameworkJson, getState } from './operator.js';
import type { Access } from '../security/security.js';
import type { AclAction, AclObject, MachineObject } from '../../shared/acls.js';
import { agentObject } from '../security/acl-objects.js';
import { frameworkUser, taskUser, viewRights, type Approve } from '../../shared/visibility.js';

// ---- Core: event -> record ------------------------------------------------------------------

/** What the renderer may look up: the current objects, already in their GET_* JSON shapes. */
export interface StreamView {
  /** The task as GET_TASKS writes it; undefined if the master no longer has it. */
  task(agentId: string, frameworkId: string, taskId: string): Task | undefined;
  /** The agent as GET_AGENTS writes it; undefined unless it is registered. */
  agent(agentId: string): Record<string, unknown> | undefined;
  /** The framework as GET_FRAMEWORKS writes it (GetFrameworks.Framework); with `mayViewAgent`, only the offers of agents it allows. */
  framework(frameworkId: string, mayViewAgent?: Approve): Record<string, unknown> | undefined;
  /** The FrameworkInfo of a framework, also after its removal. */
  frameworkInfo(frameworkId: string): Record<string, unknown> | undefined;
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
  | { type: 'FRAMEWORK_REMOVED'; framework_removed: { framework_info: Record<string, unknown> } };

/** The first record: the snapshot, and how often heartbeats come (Mesos writes a double, 15.0). */
export function subscribedRecord(getStateJson: unknown, heartbeatIntervalMs: number): StreamRecord {
  return { type: 'SUBSCRIBED', subscribed: { get_state: getStateJson, heartbeat_interval_seconds: heartbeatIntervalMs / 1000 } };
}

export const HEARTBEAT_RECORD: StreamRecord = { type: 'HEARTBEAT' };

/**
 * What a master event becomes on the stream, or undefined when Mesos sends nothing for it.
 * Mesos has no event for a reconnect, a disconnect or unreachability (AGENT_REMOVED is for
 * explicit removal only), nor for Drydock's own events (drydock-stream.ts carries those), and
 * an object that is already gone again when the event is rendered is skipped rather than sent
 * half-empty.
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
    case 'AGENT_REFUSED_MESSAGE':
    case 'STATUS_UPDATE':
    case 'TASK_ACKNOWLEDGED':
    // Drydock's own events: on Drydock's stream, not Mesos'.
    case 'AGENT_UPDATED':
    case 'MACHINE_UPDATED':
    case 'MAINTENANCE_PLAN_ADDED':
    case 'MAINTENANCE_PLAN_UPDATED':
    case 'MAINTENANCE_PLAN_REMOVED':
      return undefined;
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

// ---- Core: who may see an event ------------------------------------------------------------------

/** What the view ACLs need to know of an event's objects; asked only when ACLs are set. */
export interface StreamObjects {
  /** The user a task is viewed as: its own, else its framework's (also just after it completed). */
  taskUser(agentId: string, frameworkId: string, taskId: string): string | undefined;
  /** A framework's user, also after its removal while the master remembers it. */
  frameworkUser(frameworkId: string): string | undefined;
  /** An agent as an ACL object (the shell remembers the last one seen, for AGENT_REMOVED). */
  agent(agentId: string): MachineObject | undefined;
  /** Every agent the master has, as ACL objects: what the shell remembers when filtering starts. */
  agents(): Iterable<[string, MachineObject]>;
}

/** The view actions a subscriber's events are decided on. */
export type GateAction = Extract<AclAction, 'view_tasks' | 'view_frameworks' | 'view_agents'>;

/** Which view ACL decides whether a subscriber gets an event, and on what. */
export type EventGate =
  /** One object, one action. */
  | { kind: 'OBJECT'; action: GateAction; object: AclObject }
  /** Nothing to decide (events that never reach the wire). */
  | { kind: 'OPEN' };

/**
 * The gate of an event. An agent that is gone (AGENT_REMOVED) is decided by what `objects`
 * still knows of it, else by its id alone (only `id:` values, ANY and NONE match it).
 */
export function eventGate(event: MasterEvent, objects: StreamObjects): EventGate {
  switch (event.type) {
    case 'TASK_ADDED':
    case 'TASK_UPDATED':
      return { kind: 'OBJECT', action: 'view_tasks', object: objects.taskUser(event.agentId, event.frameworkId, event.taskId) };
    case 'FRAMEWORK_ADDED':
    case 'FRAMEWORK_UPDATED':
    case 'FRAMEWORK_REMOVED':
      return { kind: 'OBJECT', action: 'view_frameworks', object: objects.frameworkUser(event.frameworkId) };
    case 'AGENT_ADDED':
    case 'AGENT_REMOVED':
      return { kind: 'OBJECT', action: 'view_agents', object: objects.agent(event.agentId) ?? { agentId: event.agentId } };
    case 'AGENT_UPDATED':
    case 'MACHINE_UPDATED':
    case 'MAINTENANCE_PLAN_ADDED':
    case 'MAINTENANCE_PLAN_UPDATED':
    case 'MAINTENANCE_PLAN_REMOVED':
    case 'AGENT_RECONNECTED':
    case 'AGENT_DISCONNECTED':
    case 'AGENT_UNREACHABLE':
    case 'AGENT_GONE':
    case 'AGENT_REFUSED_MESSAGE':
    case 'STATUS_UPDATE':
    case 'TASK_ACKNOWLEDGED':
      return { kind: 'OPEN' };
    default:
      return assertNever(event);
  }
}

/** A subscriber's decision functions, one per action. */
export interface StreamRights {
  readonly may: Readonly<Record<GateAction, Approve>>;
}

/** The rights of a subscriber; undefined when it sees everything (no ACLs). */
export function streamRights(access: Access | undefined): StreamRights | undefined {
  if (access === undefined || !access.filters) return undefined;
  return { may: { view_tasks: access.approver('view_tasks'), view_frameworks: access.approver('view_frameworks'), view_agents: access.approver('view_agents') } };
}

/** How many recently completed tasks are searched for a task that has just completed (its TASK_UPDATED follows at once). */
const RECENT_COMPLETED = 64;

/** The StreamObjects of a live term, read through its queries port. */
export function termStreamObjects(q: Queries): StreamObjects {
  const fwUser = (frameworkId: string): string | undefined => frameworkUser(q.frameworkEver(frameworkId)?.info);
  return {
    taskUser: (agentId, frameworkId, taskId) => {
      let task: Task | undefined = q.agent(agentId)?.tasks?.get(taskKey(frameworkId, taskId));
      if (task === undefined) {
        const done = q.completedTasks();
        for (let i = done.length - 1; i >= Math.max(0, done.length - RECENT_COMPLETED) && task === undefined; i--) {
          const t = done[i] as Task;
          if (t.task_id.value === taskId && t.framework_id.value === frameworkId) task = t;
        }
      }
      return taskUser(task ?? {}, fwUser(frameworkId));
    },
    frameworkUser: fwUser,
    agent: (agentId) => q.agentObject(agentId),
    agents: function* () {
      for (const e of q.agents()) yield [e.id, agentObject(e.id, e.info)];
    },
  };
}

/** A StreamView over a live term's queries, with the operator API's renderers. */
export function termStreamView(q: Queries): StreamView {
  return {
    task: (agentId, frameworkId, taskId) => q.agent(agentId)?.tasks?.get(taskKey(frameworkId, taskId)),
    agent: (agentId) => {
      const e = q.agent(agentId);
      return e?.phase === 'REGISTERED' ? agentJson(e, q) : undefined;
    },
    framework: (frameworkId, mayViewAgent) => frameworkJson(q, frameworkId, mayViewAgent),
    frameworkInfo: (frameworkId) => frameworkJson(q, frameworkId)?.['framework_info'] as Record<string, unknown> | undefined,
  };
}

// ---- Shell: the subscribers' sockets ----------------------------------------------------------

/** Unsent bytes one subscriber may leave in its socket buffer before it is closed (a reader that stopped reading must not grow the master's memory). */
export const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

export interface OperatorStreamsOptions {
  events: MasterEvents;
  view: StreamView;
  /** The GET_STATE `get_state` object, taken when a subscriber arrives, as its caller may see it. */
  snapshot: (access?: Access) => unknown;
  /** What the view ACLs decide events on; without it, every subscriber gets every event. */
  objects?: StreamObjects;
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

/**
 * A record, framed at most once per encoding some subscriber reads (JSON, protobuf), however
 * many subscribers read it. A record an encoding cannot carry frames as undefined, and is not
 * sent in it.
 */
export class FramedRecord {
  readonly #record: StreamRecord;
  #json: Buffer | undefined;
  readonly #others = new Map<Codec, Buffer | undefined>();

  constructor(record: StreamRecord) {
    this.#record = record;
  }

  in(codec: Codec): Buffer | undefined {
    if (codec === JSON_CODEC) return (this.#json ??= JSON_CODEC.record(this.#record));
    if (!this.#others.has(codec)) this.#others.set(codec, codec.record(this.#record));
    return this.#others.get(codec);
  }
}

/** The heartbeat, framed once. */
const HEARTBEAT_BYTES = new FramedRecord(HEARTBEAT_RECORD);

interface Subscriber {
  readonly id: number;
  readonly res: ServerResponse;
  /** The encoding of its records (Accept): JSON, or protobuf `master::Event`s. */
  readonly codec: Codec;
  /** What it may see; undefined: everything (no ACLs). */
  readonly rights: StreamRights | undefined;
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
  /** Subscribers whose events are filtered; while there are none, no gate is worked out. */
  #filtered = 0;
  /** Agents' ACL objects as last seen, so AGENT_REMOVED (sent once the agent is gone) is decided like its AGENT_ADDED. */
  readonly #agentObjects = new Map<string, MachineObject>();
  /** The objects' lookups with agents remembered (made once). */
  #lookups: StreamObjects | undefined;

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
  subscribe(res: ServerResponse, access?: Access, codec: Codec = JSON_CODEC): void {
    if (this.#state !== 'OPEN') {
      const text = 'Master is shutting down';
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const rights = this.#opts.objects === undefined ? undefined : streamRights(access);
    const sub: Subscriber = { id: this.#nextId++, res, codec, rights };
    // No Content-Length: Node frames the body with Transfer-Encoding: chunked, and each
    // res.write() goes out as one chunk of its own: one event per chunk, as Mesos writes them
    // (writes of one turn still leave in one syscall: Node corks the socket until the next
    // tick). Never res.cork(): that would merge the writes into one chunk. Mesos' Content-Type
    // here is the event's encoding (application/json or application/x-protobuf), not
    // application/recordio.
    res.writeHead(200, { 'Content-Type': codec.mediaType, 'Cache-Control': 'no-cache' });
    res.socket?.setNoDelay(true);
    res.on('close', () => this.#drop(sub, 'CLIENT_GONE'));
    res.on('error', () => this.#drop(sub, 'CLIENT_GONE'));

    this.#subscribers.set(sub.id, sub);
    if (rights !== undefined && this.#filtered++ === 0 && this.#opts.objects !== undefined) {
      // Filtering starts: remember every agent now, so one that leaves is decided as it was.
      for (const [id, o] of this.#opts.objects.agents()) this.#agentObjects.set(id, o);
    }
    if (this.#unsubscribe === undefined) this.#unsubscribe = this.#opts.events.subscribe((e) => this.#onEvent(e));
    if (this.#heartbeat === undefined) this.#scheduleHeartbeat();

    const snapshot = subscribedRecord(this.#opts.snapshot(access), this.#opts.heartbeatIntervalMs);
    this.#write(sub, new FramedRecord(snapshot));
    this.#write(sub, HEARTBEAT_BYTES);
    this.#opts.logger.info('operator stream opened', { subscriberId: sub.id, principal: access?.principal ?? null, filtered: rights !== undefined, subscribers: this.#subscribers.size, eventListeners: this.#opts.events.listenerCount });

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
    const objects = this.#opts.objects;
    if (objects === undefined || this.#filtered === 0) {
      // Nobody's view is filtered (no ACLs): one render for everyone.
      const record = eventRecord(event, this.#opts.view);
      if (record === undefined) return;
      // Rendered once and framed once per encoding, whatever the number of subscribers.
      const bytes = new FramedRecord(record);
      for (const sub of [...this.#subscribers.values()]) this.#write(sub, bytes);
      return;
    }
    this.#filteredEvent(event, objects);
  }

  /** One event to subscribers some of whom may not see it: its gate once, a render only if someone gets it. */
  #filteredEvent(event: MasterEvent, objects: StreamObjects): void {
    // A reconnect may bring new attributes: what AGENT_REMOVED is decided on later.
    if (event.type === 'AGENT_RECONNECTED') this.#agentObject(event.agentId, objects);
    const gate = eventGate(event, (this.#lookups ??= { ...objects, agent: (id) => this.#agentObject(id, objects) }));
    // One render, made only if someone gets it; framed once per encoding.
    let shared: FramedRecord | null | undefined = null;
    const bytes = (): FramedRecord | undefined => {
      if (shared === null) {
        const record = eventRecord(event, this.#opts.view);
        shared = record === undefined ? undefined : new FramedRecord(record);
      }
      return shared;
    };
    for (const sub of [...this.#subscribers.values()]) {
      const rights = sub.rights;
      if (rights === undefined || gate.kind === 'OPEN') {
        const b = bytes();
        if (b !== undefined) this.#write(sub, b);
        continue;
      }
      if (!rights.may[gate.action](gate.object)) continue;
      // A framework carries its offers, which name agents: rendered with those this subscriber may view (view_agents).
      const b = event.type === 'FRAMEWORK_ADDED' || event.type === 'FRAMEWORK_UPDATED' ? this.#frameworkFor(rights, event) : bytes();
      if (b !== undefined) this.#write(sub, b);
    }
    // Forget what the event ended, once every subscriber has been decided on.
    if (event.type === 'AGENT_REMOVED' || event.type === 'AGENT_GONE') this.#agentObjects.delete(event.agentId);
  }

  /** FRAMEWORK_ADDED / FRAMEWORK_UPDATED as one subscriber may see it: the offers of the agents it may view. (Framework events are rare: one render each.) */
  #frameworkFor(rights: StreamRights, event: Extract<MasterEvent, { type: 'FRAMEWORK_ADDED' | 'FRAMEWORK_UPDATED' }>): FramedRecord | undefined {
    const view = this.#opts.view;
    const record = eventRecord(event, { ...view, framework: (id) => view.framework(id, rights.may.view_agents) });
    return record === undefined ? undefined : new FramedRecord(record);
  }

  /** An agent's ACL object: live while the master has it (and remembered), else as last seen. */
  #agentObject(agentId: string, objects: StreamObjects): MachineObject | undefined {
    const live = objects.agent(agentId);
    if (live !== undefined) {
      this.#agentObjects.set(agentId, live);
      return live;
    }
    return this.#agentObjects.get(agentId);
  }

  #scheduleHeartbeat(): void {
    this.#heartbeat = this.#opts.clock.setTimer(this.#opts.heartbeatIntervalMs, () => {
      this.#heartbeat = undefined;
      if (this.#subscribers.size === 0) return;
      for (const sub of [...this.#subscribers.values()]) this.#write(sub, HEARTBEAT_BYTES);
      if (this.#subscribers.size > 0) this.#scheduleHeartbeat();
    });
  }

  #write(sub: Subscriber, record: FramedRecord): void {
    if (!this.#subscribers.has(sub.id) || sub.res.destroyed || sub.res.writableEnded) return;
    const bytes = record.in(sub.codec);
    // A record its encoding cannot carry (a Drydock event in protobuf) is not sent.
    if (bytes === undefined) return;
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
    if (sub.rights !== undefined) this.#filtered--;
    if (this.#filtered === 0) {
      // Nobody filters now: the remembered objects would go stale unheard.
      this.#agentObjects.clear();
    }
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

/** What a term gives its operator streams: its bus, its queries port and the master's stream flags. */
export interface TermStreamsOptions {
  events: MasterEvents;
  queries: Queries;
  clock: Clock;
  logger: Logger;
  /** --heartbeat_interval, in ms. */
  heartbeatIntervalMs: number;
  /** --max_operator_event_stream_subscribers. */
  maxSubscribers: number;
}

/** A term's streams: views, snapshots and ACL objects all read through the queries port. */
export function createOperatorStreams(o: TermStreamsOptions): OperatorStreams {
  const q = o.queries;
  return new OperatorStreams({
    events: o.events,
    view: termStreamView(q),
    snapshot: (access) => getState(q, viewRights(access)),
    objects: termStreamObjects(q),
    clock: o.clock,
    logger: o.logger,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    maxSubscribers: o.maxSubscribers,
  });
}

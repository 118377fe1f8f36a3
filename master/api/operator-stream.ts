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
import { JSON_CODEC, type Codec } from '../../shared/codec.js';
import { taskKey, type Task, type TaskState, type TaskStatus } from '../../shared/mesos.js';
import { assertNever } from '../../shared/protocol.js';
import type { MasterEvent } from '../term/events.js';
import type { Queries } from '../term/queries.js';
import { agentJson, frameworkJson, getState } from './operator.js';
import type { Access } from '../security/security.js';
import type { AclAction, AclObject, MachineObject } from '../../shared/acls.js';
import { agentObject } from '../security/acl-objects.js';
import { frameworkUser, taskUser, viewRights, type Approve } from '../../shared/visibility.js';
import { StreamHub, type StreamSettings, type TermStreamsOptions } from './stream-hub.js';

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

export { DEFAULT_MAX_BUFFERED_BYTES, type StreamCloseReason, type TermStreamsOptions } from './stream-hub.js';

/** An operator stream's own: its renderers, its snapshot and its ACL objects. */
export interface OperatorStreamsOptions extends StreamSettings {
  view: StreamView;
  /** The GET_STATE `get_state` object, taken when a subscriber arrives, as its caller may see it. */
  snapshot: (access?: Access) => unknown;
  /** What the view ACLs decide events on; without it, every subscriber gets every event. */
  objects?: StreamObjects;
}

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

/**
 * Every open SUBSCRIBE stream of one master. The sockets are the hub's (stream-hub.ts; its log
 * lines: `operator stream opened`, `operator stream closed`, `operator stream subscriber too
 * slow`); what is Mesos' here: the records, their gates and the GET_STATE snapshot.
 */
export class OperatorStreams {
  /** Each subscriber's `extra` is the encoding of its records (Accept): JSON, or protobuf `master::Event`s. */
  readonly #hub: StreamHub<StreamRights, FramedRecord, Codec>;
  readonly #opts: OperatorStreamsOptions;
  /** The objects' lookups with agents remembered (made once). */
  #lookups: StreamObjects | undefined;

  constructor(opts: OperatorStreamsOptions) {
    this.#opts = opts;
    this.#hub = new StreamHub(opts, {
      name: 'operator stream',
      onEvent: (e) => this.#onEvent(e),
      rights: (access) => (opts.objects === undefined ? undefined : streamRights(access)),
      // A record its encoding cannot carry is not sent.
      bytes: (record, sub) => record.in(sub.extra),
      heartbeat: HEARTBEAT_BYTES,
      objects: opts.objects,
    });
  }

  /** Open streams. */
  get count(): number {
    return this.#hub.count;
  }

  get state(): 'OPEN' | 'CLOSED' {
    return this.#hub.state;
  }

  /**
   * Answers a validated SUBSCRIBE: 200 with a chunked RecordIO body that stays open. The
   * caller has done the framing checks; after close() the answer is 503.
   */
  subscribe(res: ServerResponse, access?: Access, codec: Codec = JSON_CODEC): void {
    this.#hub.subscribe(res, access, {
      // Mesos' Content-Type here is the event's encoding (application/json or
      // application/x-protobuf), not application/recordio.
      headers: { 'Content-Type': codec.mediaType, 'Cache-Control': 'no-cache' },
      extra: codec,
      snapshot: () => new FramedRecord(subscribedRecord(this.#opts.snapshot(access), this.#opts.heartbeatIntervalMs)),
    });
  }

  /** Graceful stop: ends every stream with the chunked terminator and refuses new ones. */
  close(): void {
    this.#hub.close();
  }

  #onEvent(event: MasterEvent): void {
    const objects = this.#opts.objects;
    if (objects === undefined || !this.#hub.filtering) {
      // Nobody's view is filtered (no ACLs): one render for everyone.
      const record = eventRecord(event, this.#opts.view);
      if (record === undefined) return;
      // Rendered once and framed once per encoding, whatever the number of subscribers.
      this.#hub.broadcast(new FramedRecord(record));
      return;
    }
    this.#filteredEvent(event, objects);
  }

  /** One event to subscribers some of whom may not see it: its gate once, a render only if someone gets it. */
  #filteredEvent(event: MasterEvent, objects: StreamObjects): void {
    const hub = this.#hub;
    // A reconnect may bring new attributes: what AGENT_REMOVED is decided on later.
    if (event.type === 'AGENT_RECONNECTED') hub.agentObject(event.agentId);
    const gate = eventGate(event, (this.#lookups ??= { ...objects, agent: (id) => hub.agentObject(id) }));
    // One render, made only if someone gets it; framed once per encoding.
    let shared: FramedRecord | null | undefined = null;
    const bytes = (): FramedRecord | undefined => {
      if (shared === null) {
        const record = eventRecord(event, this.#opts.view);
        shared = record === undefined ? undefined : new FramedRecord(record);
      }
      return shared;
    };
    for (const sub of hub.subscribers()) {
      const rights = sub.rights;
      if (rights === undefined || gate.kind === 'OPEN') {
        const b = bytes();
        if (b !== undefined) hub.write(sub, b);
        continue;
      }
      if (!rights.may[gate.action](gate.object)) continue;
      // A framework carries its offers, which name agents: rendered with those this subscriber may view (view_agents).
      const b = event.type === 'FRAMEWORK_ADDED' || event.type === 'FRAMEWORK_UPDATED' ? this.#frameworkFor(rights, event) : bytes();
      if (b !== undefined) hub.write(sub, b);
    }
    // Forget what the event ended, once every subscriber has been decided on.
    if (event.type === 'AGENT_REMOVED' || event.type === 'AGENT_GONE') hub.forgetAgent(event.agentId);
  }

  /** FRAMEWORK_ADDED / FRAMEWORK_UPDATED as one subscriber may see it: the offers of the agents it may view. (Framework events are rare: one render each.) */
  #frameworkFor(rights: StreamRights, event: Extract<MasterEvent, { type: 'FRAMEWORK_ADDED' | 'FRAMEWORK_UPDATED' }>): FramedRecord | undefined {
    const view = this.#opts.view;
    const record = eventRecord(event, { ...view, framework: (id) => view.framework(id, rights.may.view_agents) });
    return record === undefined ? undefined : new FramedRecord(record);
  }
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

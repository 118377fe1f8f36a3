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
 * With ACLs (issue 13) each subscriber sees what its principal may view: the snapshot is
 * filtered as GET_STATE is, and each event passes its gate (`eventGate`, pure): tasks by
 * view_tasks, frameworks by view_frameworks (rendered per subscriber, with the offers of the
 * agents its view_agents allows), agents by view_agents, maintenance plans by
 * view_maintenance_plans (every machine of the plan), machine changes by
 * get_maintenance_statuses (rendered per subscriber, only its machines); a failed hook's output in
 * a plan's step only to subscribers allowed run_maintenance_hooks on it. The gate's object is
 * looked up once per event and each subscriber holds one decision function per action, so an
 * event still costs one render; without ACLs none of this runs.
 */

import type { ServerResponse } from 'node:http';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { JSON_CODEC, type Codec } from '../../shared/codec.js';
import type { Logger } from '../../shared/log.js';
import { machineIdJson } from '../../shared/machine.js';
import { taskKey, type Task, type TaskState, type TaskStatus } from '../../shared/mesos.js';
import { assertNever } from '../../shared/protocol.js';
import type { MasterEvent, MasterEvents } from '../term/events.js';
import type { Queries } from '../term/queries.js';
import { agentJson, frameworkJson, getState } from './operator.js';
import type { Access } from '../security/security.js';
import type { MachineId } from '../../shared/machine.js';
import type { AclAction, AclObject, MachineObject } from '../../shared/acls.js';
import { agentObject } from '../security/acl-objects.js';
import { allVisible, frameworkUser, taskUser, viewRights, type Approve } from '../../shared/visibility.js';

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
  /** GET_MAINTENANCE_STATUS's `status` (ClusterStatus); with `visible`, only those machines. */
  maintenanceStatus(visible?: (id: MachineId) => boolean): Record<string, unknown>;
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
 * rendered is skipped rather than sent half-empty. A plan step's failed hook shows its output
 * only when `mayRunHook` says the subscriber may run that hook (default: hidden).
 */
export function eventRecord(event: MasterEvent, view: StreamView, mayRunHook: (hook: string | undefined) => boolean = () => false): StreamRecord | undefined {
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
      const waitingFor = s?.revealed !== undefined && mayRunHook(s.revealed.hook) ? s.revealed.waitingFor : s?.waitingFor;
      const step: MaintenanceStepJson | undefined = s === undefined ? undefined : { phase: s.phase, name: s.name, machine_id: machineIdJson(s.machine), stage: s.stage, status: s.status, waiting_for: waitingFor ?? '' };
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
  /** A machine, by its key, as an ACL object. */
  machine(key: string): MachineObject | undefined;
  /** The machines of a maintenance plan as ACL objects; undefined when it is gone or unknown. */
  planMachines(plan: string): MachineObject[] | undefined;
}

/** The view actions a subscriber's events are decided on. */
export type GateAction = Extract<AclAction, 'view_tasks' | 'view_frameworks' | 'view_agents' | 'view_maintenance_plans' | 'get_maintenance_statuses'>;

/** Which view ACL decides whether a subscriber gets an event, and on what. */
export type EventGate =
  /** One object, one action. */
  | { kind: 'OBJECT'; action: 'view_tasks' | 'view_frameworks' | 'view_agents'; object: AclObject }
  /** view_maintenance_plans: every machine of the plan must be allowed. */
  | { kind: 'PLAN'; plan: string }
  /** get_maintenance_statuses: the event is rendered per subscriber with the machines it may see. */
  | { kind: 'MACHINES'; machineKeys: readonly string[] }
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
    case 'AGENT_UPDATED':
    case 'AGENT_REMOVED':
      return { kind: 'OBJECT', action: 'view_agents', object: objects.agent(event.agentId) ?? { agentId: event.agentId } };
    case 'MACHINE_UPDATED':
      return { kind: 'MACHINES', machineKeys: event.machineKeys };
    case 'MAINTENANCE_PLAN_ADDED':
    case 'MAINTENANCE_PLAN_UPDATED':
    case 'MAINTENANCE_PLAN_REMOVED':
      return { kind: 'PLAN', plan: event.plan };
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

/** A subscriber's decision functions, one per action, and its decisions on plans (a plan's machines do not change). */
export interface StreamRights {
  readonly may: Readonly<Record<GateAction, Approve>>;
  readonly plans: Map<string, boolean>;
  /** run_maintenance_hooks: whether a failed hook's output is shown (an unknown hook: only ANY entries match). */
  readonly runHook: (hook: string | undefined) => boolean;
}

/** The rights of a subscriber; undefined when it sees everything (no ACLs). */
export function streamRights(access: Access | undefined): StreamRights | undefined {
  if (access === undefined || !access.filters) return undefined;
  const may = {
    view_tasks: access.approver('view_tasks'),
    view_frameworks: access.approver('view_frameworks'),
    view_agents: access.approver('view_agents'),
    view_maintenance_plans: access.approver('view_maintenance_plans'),
    get_maintenance_statuses: access.approver('get_maintenance_statuses'),
  };
  const hooks = access.approver('run_maintenance_hooks');
  return { may, plans: new Map(), runHook: (hook) => hooks(hook) };
}

/** A MACHINE_UPDATED record with only some machines (a subscriber's), and the status of those it may see. */
export function machineUpdatedRecord(machineIds: Array<Record<string, string>>, status: Record<string, unknown>): StreamRecord {
  return { type: 'MACHINE_UPDATED', machine_updated: { machine_ids: machineIds, status } };
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
    machine: (key) => {
      const m = q.machineByKey(key);
      return m === undefined ? undefined : q.machineObject(m.id);
    },
    planMachines: (name) => q.planMachines(name)?.map((id) => q.machineObject(id)),
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
    maintenanceStatus: (visible) => q.maintenanceStatus(visible),
    machineIds: (keys) => keys.map((k) => machineIdJson(q.machineByKey(k)?.id ?? {})),
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
  /** A machine by id as an ACL object (MACHINE_UPDATED's status, per subscriber); without it, machines are decided by hostname and ip alone. */
  machineObject?: (id: MachineId) => MachineObject;
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
  /** Plans' machines as ACL objects as first seen (a plan's selection never changes), so MAINTENANCE_PLAN_REMOVED is decided like the others. */
  readonly #planObjects = new Map<string, MachineObject[]>();
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
      // Nobody's view is filtered (no ACLs): everyone may run every hook, so its output is shown.
      const record = eventRecord(event, this.#opts.view, () => true);
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
    // At most two renders: with a failed hook's output, for those who may run the hook, and without.
    const shared: Array<FramedRecord | null | undefined> = [null, null];
    const bytes = (reveal = false): FramedRecord | undefined => {
      const i = reveal ? 1 : 0;
      if (shared[i] === null) {
        const record = eventRecord(event, this.#opts.view, () => reveal);
        shared[i] = record === undefined ? undefined : new FramedRecord(record);
      }
      return shared[i];
    };
    const revealed = event.type === 'MAINTENANCE_PLAN_UPDATED' ? event.step?.revealed : undefined;
    for (const sub of [...this.#subscribers.values()]) {
      const rights = sub.rights;
      if (rights === undefined || gate.kind === 'OPEN') {
        const b = bytes(rights === undefined);
        if (b !== undefined) this.#write(sub, b);
        continue;
      }
      switch (gate.kind) {
        case 'OBJECT':
          if (rights.may[gate.action](gate.object)) {
            // A framework carries its offers, which name agents: rendered with those this subscriber may view (view_agents).
            const b = event.type === 'FRAMEWORK_ADDED' || event.type === 'FRAMEWORK_UPDATED' ? this.#frameworkFor(rights, event) : bytes();
            if (b !== undefined) this.#write(sub, b);
          }
          break;
        case 'PLAN':
          if (this.#planVisible(rights, gate.plan, objects)) {
            const b = bytes(revealed !== undefined && rights.runHook(revealed.hook));
            if (b !== undefined) this.#write(sub, b);
          }
          break;
        case 'MACHINES': {
          const b = this.#machinesFor(rights, gate.machineKeys, objects);
          if (b !== undefined) this.#write(sub, b);
          break;
        }
        default:
          assertNever(gate);
      }
    }
    // Forget what the event ended, once every subscriber has been decided on.
    if (event.type === 'AGENT_REMOVED' || event.type === 'AGENT_GONE') this.#agentObjects.delete(event.agentId);
    if (event.type === 'MAINTENANCE_PLAN_REMOVED') {
      this.#planObjects.delete(event.plan);
      for (const sub of this.#subscribers.values()) sub.rights?.plans.delete(event.plan);
    }
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

  /** view_maintenance_plans: every machine of the plan; decided once per subscriber and plan. */
  #planVisible(rights: StreamRights, plan: string, objects: StreamObjects): boolean {
    const known = rights.plans.get(plan);
    if (known !== undefined) return known;
    let machines = this.#planObjects.get(plan);
    if (machines === undefined) {
      machines = objects.planMachines(plan);
      if (machines !== undefined) this.#planObjects.set(plan, machines);
    }
    const decided = allVisible(machines, rights.may.view_maintenance_plans);
    // A plan whose machines are not known yet (or any more) is decided again next time.
    if (machines !== undefined) rights.plans.set(plan, decided);
    return decided;
  }

  /** MACHINE_UPDATED as one subscriber may see it: its machines only, and the status of its machines; undefined when none is its. */
  #machinesFor(rights: StreamRights, keys: readonly string[], objects: StreamObjects): FramedRecord | undefined {
    const may = rights.may.get_maintenance_statuses;
    const mine = keys.filter((k) => may(objects.machine(k)));
    if (mine.length === 0) return undefined;
    const toObject = this.#opts.machineObject ?? ((id: MachineId): MachineObject => ({ hostname: id.hostname === '' ? undefined : id.hostname, ip: id.ip === '' ? undefined : id.ip }));
    const status = this.#opts.view.maintenanceStatus((id) => may(toObject(id)));
    return new FramedRecord(machineUpdatedRecord(this.#opts.view.machineIds(mine), status));
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
      this.#planObjects.clear();
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
    machineObject: (id) => q.machineObject(id),
    clock: o.clock,
    logger: o.logger,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    maxSubscribers: o.maxSubscribers,
  });
}

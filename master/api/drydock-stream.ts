/**
 * Drydock's own event stream: `GET /drydock/v1/events`. A chunked RecordIO body of JSON records
 * (`<length>\n<json>`, one record per HTTP chunk) that stays open: SNAPSHOT first (every agent
 * as `GET /drydock/v1/agents` answers, and the heartbeat interval), a HEARTBEAT at once and
 * then every `--heartbeat_interval`, and Drydock's events as they happen:
 *
 *   AGENT_UPDATED    {"agent_updated":{"change":..., "agent":<as GET /drydock/v1/agents/<id>>}}
 *                    when Drydock's view of an agent changes: it was added, reconnected,
 *                    disconnected or became unreachable; a drain started, was refused by the
 *                    agent or ended DRAINED; it was deactivated or reactivated
 *   AGENT_LEFT       {"agent_left":{"agent_id":..., "reason":"REMOVED"|"GONE", "message":...}}
 *                    when the master no longer has the agent
 *   MACHINE_UPDATED  {"machine_updated":{"change":"SCHEDULED"|"DOWN"|"UP", "machine_ids":[...],
 *                    "status":<as GET_MAINTENANCE_STATUS>}} when machines' modes change
 *   MAINTENANCE_PLAN_ADDED / _UPDATED / _REMOVED   a maintenance plan was created, its step or
 *                    status changed, it was deleted
 *
 * They were extensions of Mesos' operator stream once; they live here so that every record of
 * Mesos' stream is a mesos.v1.master.Event. The names are Drydock's (none is an Event.Type of
 * Mesos but for the shared words HEARTBEAT and the agent/machine nouns).
 *
 * A GET, not a POST of a call: it only reads and takes no input, so curl and a browser open it
 * as they are (the service scheduler's `/v1/plans/stream` is a GET too), and there is no call
 * envelope to mistake for Mesos'.
 *
 * The core (`drydockRecord`, `drydockGate`) is pure: what an event becomes, and which ACL decides
 * who gets it. With ACLs each subscriber sees what its principal may view, as the Mesos calls
 * that read the same facts decide: agents by view_agents (their machine's mode by
 * get_maintenance_statuses, its window by get_maintenance_schedules), machines by
 * get_maintenance_statuses (the status rendered with the subscriber's machines only), plans by
 * view_maintenance_plans on every machine of the plan, a failed hook's output by
 * run_maintenance_hooks on the hook. An event is rendered once without ACLs, and at most once per
 * distinct view with them.
 */

import type { ServerResponse } from 'node:http';
import type { AclObject, MachineObject } from '../../shared/acls.js';
import { stringifyJson } from '../../shared/json.js';
import { machineIdJson, type MachineId } from '../../shared/machine.js';
import { assertNever } from '../../shared/protocol.js';
import { encodeRecord } from '../../shared/recordio.js';
import { allVisible, type Approve } from '../../shared/visibility.js';
import { AGENT_GONE_MESSAGE } from '../cores/drain.js';
import { agentEntryObject } from '../security/acl-objects.js';
import type { Access } from '../security/security.js';
import type { AgentChange, MachineChange, MasterEvent } from '../term/events.js';
import type { Queries } from '../term/queries.js';
import { drydockAgentJson, drydockAgents, drydockRights, type DrydockRights, type MachineSight } from './drydock.js';
import { StreamHub, type StreamSettings, type TermStreamsOptions } from './stream-hub.js';

// ---- Core: event -> record ------------------------------------------------------------------

/** How an agent's view changed: the agents' own events, and the drain's (events.ts AgentChange). */
export type AgentUpdate = 'ADDED' | 'RECONNECTED' | 'DISCONNECTED' | 'UNREACHABLE' | AgentChange;

/** A maintenance plan's step on the stream: the machine as the schedule writes it, and the plan JSON's words. */
export interface MaintenanceStepJson {
  phase: string;
  name: string;
  machine_id: Record<string, string>;
  stage: string;
  status: string;
  waiting_for: string;
}

/** One record of Drydock's event stream. */
export type DrydockRecord =
  | { type: 'SNAPSHOT'; snapshot: { agents: Array<Record<string, unknown>>; heartbeat_interval_seconds: number } }
  | { type: 'HEARTBEAT' }
  | { type: 'AGENT_UPDATED'; agent_updated: { change: AgentUpdate; agent: Record<string, unknown> } }
  | { type: 'AGENT_LEFT'; agent_left: { agent_id: { value: string }; reason: 'REMOVED' | 'GONE'; message: string } }
  | { type: 'MACHINE_UPDATED'; machine_updated: { change: MachineChange; machine_ids: Array<Record<string, string>>; status: Record<string, unknown> } }
  | { type: 'MAINTENANCE_PLAN_ADDED'; maintenance_plan_added: { name: string; status: string; machines: number } }
  /** A plan's step changed (or, without `step`, only the plan's status). */
  | { type: 'MAINTENANCE_PLAN_UPDATED'; maintenance_plan_updated: { name: string; status: string; step?: MaintenanceStepJson } }
  | { type: 'MAINTENANCE_PLAN_REMOVED'; maintenance_plan_removed: { name: string } };

/** What the renderer reads of the master, already in Drydock's shapes. */
export interface DrydockView {
  /** The agent as `GET /drydock/v1/agents/<id>` writes it, its machine as `sight` allows; undefined once the master no longer has it. */
  agent(agentId: string, sight?: MachineSight): Record<string, unknown> | undefined;
  /** Every agent `rights` lets the caller see (all without), as `GET /drydock/v1/agents` writes them. */
  agents(rights: DrydockRights | undefined): Array<Record<string, unknown>>;
  /** GET_MAINTENANCE_STATUS's `status`; with `visible`, only those machines. */
  maintenanceStatus(visible?: (id: MachineId) => boolean): Record<string, unknown>;
  /** The MachineIDs of machine keys, as the schedule writes them. */
  machineIds(keys: readonly string[]): Array<Record<string, string>>;
}

const SEES_ALL: MachineSight = { mode: true, window: true };

/** The first record: the agents as the subscriber may see them, and how often heartbeats come (seconds, a double as Mesos writes it). */
export function snapshotRecord(agents: Array<Record<string, unknown>>, heartbeatIntervalMs: number): DrydockRecord {
  return { type: 'SNAPSHOT', snapshot: { agents, heartbeat_interval_seconds: heartbeatIntervalMs / 1000 } };
}

export const HEARTBEAT_RECORD: DrydockRecord = { type: 'HEARTBEAT' };

/**
 * What a master event becomes on Drydock's stream, or undefined when it says nothing here (task
 * and framework events are Mesos' stream's). An agent already gone again when the event is
 * rendered is skipped (AGENT_LEFT follows). `sight`: what the subscriber may see of an agent's
 * machine; `mayRunHook`: whether it sees a failed hook's output (default: hidden).
 */
export function drydockRecord(event: MasterEvent, view: DrydockView, sight: MachineSight = SEES_ALL, mayRunHook: (hook: string | undefined) => boolean = () => false): DrydockRecord | undefined {
  const updated = (agentId: string, change: AgentUpdate): DrydockRecord | undefined => {
    const agent = view.agent(agentId, sight);
    return agent === undefined ? undefined : { type: 'AGENT_UPDATED', agent_updated: { change, agent } };
  };
  switch (event.type) {
    case 'AGENT_ADDED':
      return updated(event.agentId, 'ADDED');
    case 'AGENT_RECONNECTED':
      return updated(event.agentId, 'RECONNECTED');
    case 'AGENT_DISCONNECTED':
      return updated(event.agentId, 'DISCONNECTED');
    case 'AGENT_UNREACHABLE':
      return updated(event.agentId, 'UNREACHABLE');
    case 'AGENT_UPDATED':
      return updated(event.agentId, event.change);
    case 'AGENT_REMOVED':
      return { type: 'AGENT_LEFT', agent_left: { agent_id: { value: event.agentId }, reason: 'REMOVED', message: event.reason } };
    case 'AGENT_GONE':
      return { type: 'AGENT_LEFT', agent_left: { agent_id: { value: event.agentId }, reason: 'GONE', message: AGENT_GONE_MESSAGE } };
    case 'MACHINE_UPDATED':
      return machineUpdatedRecord(event.change, view.machineIds(event.machineKeys), view.maintenanceStatus());
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
    case 'AGENT_REFUSED_MESSAGE':
    case 'TASK_ADDED':
    case 'TASK_UPDATED':
    case 'STATUS_UPDATE':
    case 'TASK_ACKNOWLEDGED':
    case 'FRAMEWORK_ADDED':
    case 'FRAMEWORK_UPDATED':
    case 'FRAMEWORK_REMOVED':
      return undefined;
    default:
      return assertNever(event);
  }
}

/** A MACHINE_UPDATED record: the machines that changed (a subscriber's own, with ACLs) and the status of the machines it may see. */
export function machineUpdatedRecord(change: MachineChange, machineIds: Array<Record<string, string>>, status: Record<string, unknown>): DrydockRecord {
  return { type: 'MACHINE_UPDATED', machine_updated: { change, machine_ids: machineIds, status } };
}

// ---- Core: who may see an event ----------------------------------------------------------------

/** What the ACLs decide an event on; asked only when ACLs are set. */
export interface DrydockObjects {
  /** An agent as an ACL object; undefined when the master no longer has it (the shell remembers the last one seen). */
  agent(agentId: string): MachineObject | undefined;
  /** Every agent the master has, as ACL objects: what the shell remembers when filtering starts. */
  agents(): Iterable<[string, MachineObject]>;
  /** The machine an agent runs on, as an ACL object (its mode and window are decided on it). */
  agentMachine(agentId: string): MachineObject | undefined;
  /** A machine, by its key, as an ACL object. */
  machine(key: string): MachineObject | undefined;
  /** The machines of a maintenance plan as ACL objects; undefined when it is gone or unknown. */
  planMachines(plan: string): MachineObject[] | undefined;
}

/** Which ACL decides whether a subscriber gets an event, and on what. */
export type DrydockGate =
  /** view_agents on the agent; with `machine`, its mode and window are each decided on it (AGENT_UPDATED). */
  | { kind: 'AGENT'; agentId: string; machine: AclObject | 'NONE' }
  /** view_maintenance_plans: every machine of the plan must be allowed. */
  | { kind: 'PLAN'; plan: string }
  /** get_maintenance_statuses: the event is rendered per subscriber with the machines it may see. */
  | { kind: 'MACHINES'; machineKeys: readonly string[] }
  /** Nothing reaches the wire. */
  | { kind: 'NONE' };

/**
 * The gate of an event. The agent's own object is looked up by the shell (which remembers it
 * for AGENT_LEFT, sent once the agent is gone); AGENT_LEFT shows no machine.
 */
export function drydockGate(event: MasterEvent, objects: Pick<DrydockObjects, 'agentMachine'>): DrydockGate {
  switch (event.type) {
    case 'AGENT_ADDED':
    case 'AGENT_RECONNECTED':
    case 'AGENT_DISCONNECTED':
    case 'AGENT_UNREACHABLE':
    case 'AGENT_UPDATED':
      return { kind: 'AGENT', agentId: event.agentId, machine: objects.agentMachine(event.agentId) };
    case 'AGENT_REMOVED':
    case 'AGENT_GONE':
      return { kind: 'AGENT', agentId: event.agentId, machine: 'NONE' };
    case 'MACHINE_UPDATED':
      return { kind: 'MACHINES', machineKeys: event.machineKeys };
    case 'MAINTENANCE_PLAN_ADDED':
    case 'MAINTENANCE_PLAN_UPDATED':
    case 'MAINTENANCE_PLAN_REMOVED':
      return { kind: 'PLAN', plan: event.plan };
    case 'AGENT_REFUSED_MESSAGE':
    case 'TASK_ADDED':
    case 'TASK_UPDATED':
    case 'STATUS_UPDATE':
    case 'TASK_ACKNOWLEDGED':
    case 'FRAMEWORK_ADDED':
    case 'FRAMEWORK_UPDATED':
    case 'FRAMEWORK_REMOVED':
      return { kind: 'NONE' };
    default:
      return assertNever(event);
  }
}

/** A subscriber's decision functions and its decisions on plans (a plan's machines do not change). */
export interface DrydockStreamRights extends DrydockRights {
  readonly plans: Map<string, boolean>;
  /** view_maintenance_plans, on each machine of a plan. */
  readonly viewPlans: Approve;
  /** run_maintenance_hooks: whether a failed hook's output is shown (an unknown hook: only ANY entries match). */
  readonly runHook: Approve;
}

/** The rights of a subscriber; undefined when it sees everything (no ACLs). */
export function drydockStreamRights(access: Access | undefined): DrydockStreamRights | undefined {
  const base = drydockRights(access);
  if (base === undefined || access === undefined) return undefined;
  return { ...base, plans: new Map(), viewPlans: access.approver('view_maintenance_plans'), runHook: access.approver('run_maintenance_hooks') };
}

/** The objects over a live term's queries. */
export function termDrydockObjects(q: Queries): DrydockObjects {
  return {
    agent: (agentId) => agentEntryObject(q.agent(agentId)),
    *agents() {
      for (const e of q.agents()) yield [e.id, agentEntryObject(e) as MachineObject];
    },
    agentMachine: (agentId) => {
      const e = q.agent(agentId);
      if (e === undefined) return undefined;
      return q.machineObject(q.agentMachine(agentId)?.id ?? { hostname: e.info.hostname, ip: e.info.ip });
    },
    machine: (key) => {
      const m = q.machineByKey(key);
      return m === undefined ? undefined : q.machineObject(m.id);
    },
    planMachines: (name) => q.planMachines(name)?.map((id) => q.machineObject(id)),
  };
}

/** The view over a live term's queries. */
export function termDrydockView(q: Queries): DrydockView {
  return {
    agent: (agentId, sight) => {
      const e = q.agent(agentId);
      return e === undefined ? undefined : drydockAgentJson(e, q, sight);
    },
    agents: (rights) => drydockAgents(q, rights).agents,
    maintenanceStatus: (visible) => q.maintenanceStatus(visible),
    machineIds: (keys) => keys.map((k) => machineIdJson(q.machineByKey(k)?.id ?? {})),
  };
}

// ---- Shell: the subscribers' sockets ------------------------------------------------------------

export { DEFAULT_MAX_BUFFERED_BYTES, type StreamCloseReason } from './stream-hub.js';

/** A Drydock stream's own: its renderers and its ACL objects. */
export interface DrydockStreamsOptions extends StreamSettings {
  view: DrydockView;
  /** What the ACLs decide on; without it, every subscriber gets every event. */
  objects?: DrydockObjects;
  /** A machine by id as an ACL object (MACHINE_UPDATED's status, per subscriber); without it, machines are decided by hostname and ip alone. */
  machineObject?: (id: MachineId) => MachineObject;
}

/** The heartbeat, framed once. */
const HEARTBEAT_BYTES = encodeRecord(stringifyJson(HEARTBEAT_RECORD));

/**
 * Every open `GET /drydock/v1/events` of one term. The sockets are the hub's (stream-hub.ts;
 * its log lines: `drydock event stream opened`, `drydock event stream closed`, `drydock event
 * stream subscriber too slow`); what is Drydock's here: the records, their gates, the plans'
 * decisions and the agents' snapshot. Records are JSON only, framed once as RecordIO bytes.
 */
export class DrydockStreams {
  readonly #hub: StreamHub<DrydockStreamRights, Buffer, undefined>;
  readonly #opts: DrydockStreamsOptions;
  /** Plans' machines as ACL objects as first seen (a plan's selection never changes), so MAINTENANCE_PLAN_REMOVED is decided like the others. */
  readonly #planObjects = new Map<string, MachineObject[]>();

  constructor(opts: DrydockStreamsOptions) {
    this.#opts = opts;
    this.#hub = new StreamHub(opts, {
      name: 'drydock event stream',
      onEvent: (e) => this.#onEvent(e),
      rights: (access) => (opts.objects === undefined ? undefined : drydockStreamRights(access)),
      bytes: (bytes) => bytes,
      heartbeat: HEARTBEAT_BYTES,
      objects: opts.objects,
      forget: () => this.#planObjects.clear(),
    });
  }

  /** Open streams. */
  get count(): number {
    return this.#hub.count;
  }

  get state(): 'OPEN' | 'CLOSED' {
    return this.#hub.state;
  }

  /** Answers an authorized `GET /drydock/v1/events`: 200 with a chunked RecordIO body that stays open; 503 after close(). */
  subscribe(res: ServerResponse, access?: Access): void {
    this.#hub.subscribe(res, access, {
      headers: { 'Content-Type': 'application/recordio', 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' },
      extra: undefined,
      snapshot: (rights) => encodeRecord(stringifyJson(snapshotRecord(this.#opts.view.agents(rights), this.#opts.heartbeatIntervalMs))),
    });
  }

  /** Graceful stop: ends every stream with the chunked terminator and refuses new ones. */
  close(): void {
    this.#hub.close();
  }

  #onEvent(event: MasterEvent): void {
    const objects = this.#opts.objects;
    if (objects === undefined || !this.#hub.filtering) {
      // Nobody's view is filtered (no ACLs): everyone sees every machine and every hook's output.
      const record = drydockRecord(event, this.#opts.view, SEES_ALL, () => true);
      if (record === undefined) return;
      // Rendered and framed once, whatever the number of subscribers.
      this.#hub.broadcast(encodeRecord(stringifyJson(record)));
      return;
    }
    this.#filteredEvent(event, objects);
  }

  /** One event to subscribers some of whom may not see it: its gate once, a render per distinct view that someone gets. */
  #filteredEvent(event: MasterEvent, objects: DrydockObjects): void {
    const hub = this.#hub;
    const gate = drydockGate(event, objects);
    const rendered = new Map<string, Buffer | undefined>();
    const bytes = (sight: MachineSight, reveal: boolean): Buffer | undefined => {
      const key = `${sight.mode ? 'm' : '-'}${sight.window ? 'w' : '-'}${reveal ? 'r' : '-'}`;
      if (!rendered.has(key)) {
        const record = drydockRecord(event, this.#opts.view, sight, () => reveal);
        rendered.set(key, record === undefined ? undefined : encodeRecord(stringifyJson(record)));
      }
      return rendered.get(key);
    };
    const revealed = event.type === 'MAINTENANCE_PLAN_UPDATED' ? event.step?.revealed : undefined;
    // Looked up live (and remembered: a reconnect may bring new attributes) while the master has
    // the agent; once it left, as it was last seen, else by its id alone.
    const agentObject = gate.kind === 'AGENT' ? hub.agentObject(gate.agentId) ?? { agentId: gate.agentId } : undefined;
    for (const sub of hub.subscribers()) {
      const rights = sub.rights;
      if (rights === undefined) {
        const b = bytes(SEES_ALL, true);
        if (b !== undefined) hub.write(sub, b);
        continue;
      }
      let b: Buffer | undefined;
      switch (gate.kind) {
        case 'AGENT':
          if (rights.agents(agentObject)) b = bytes(gate.machine === 'NONE' ? SEES_ALL : { mode: rights.statuses(gate.machine), window: rights.schedules(gate.machine) }, false);
          break;
        case 'PLAN':
          if (this.#planVisible(rights, gate.plan, objects)) b = bytes(SEES_ALL, revealed !== undefined && rights.runHook(revealed.hook));
          break;
        case 'MACHINES':
          b = this.#machinesFor(rights, event, gate.machineKeys, objects);
          break;
        case 'NONE':
          break;
        default:
          assertNever(gate);
      }
      if (b !== undefined) hub.write(sub, b);
    }
    // Forget what the event ended, once every subscriber has been decided on.
    if (event.type === 'AGENT_REMOVED' || event.type === 'AGENT_GONE') hub.forgetAgent(event.agentId);
    if (event.type === 'MAINTENANCE_PLAN_REMOVED') {
      this.#planObjects.delete(event.plan);
      for (const sub of hub.subscribers()) sub.rights?.plans.delete(event.plan);
    }
  }

  /** view_maintenance_plans: every machine of the plan; decided once per subscriber and plan. */
  #planVisible(rights: DrydockStreamRights, plan: string, objects: DrydockObjects): boolean {
    const known = rights.plans.get(plan);
    if (known !== undefined) return known;
    let machines = this.#planObjects.get(plan);
    if (machines === undefined) {
      machines = objects.planMachines(plan);
      if (machines !== undefined) this.#planObjects.set(plan, machines);
    }
    const decided = allVisible(machines, rights.viewPlans);
    // A plan whose machines are not known yet (or any more) is decided again next time.
    if (machines !== undefined) rights.plans.set(plan, decided);
    return decided;
  }

  /** MACHINE_UPDATED as one subscriber may see it: its machines only, and the status of its machines; undefined when none is its. */
  #machinesFor(rights: DrydockStreamRights, event: MasterEvent, keys: readonly string[], objects: DrydockObjects): Buffer | undefined {
    if (event.type !== 'MACHINE_UPDATED') return undefined;
    const may = rights.statuses;
    const mine = keys.filter((k) => may(objects.machine(k)));
    if (mine.length === 0) return undefined;
    const toObject = this.#opts.machineObject ?? ((id: MachineId): MachineObject => ({ hostname: id.hostname === '' ? undefined : id.hostname, ip: id.ip === '' ? undefined : id.ip }));
    const status = this.#opts.view.maintenanceStatus((id) => may(toObject(id)));
    return encodeRecord(stringifyJson(machineUpdatedRecord(event.change, this.#opts.view.machineIds(mine), status)));
  }
}

/** What a term gives its Drydock event streams: its bus, its queries port and the master's stream flags (the operator streams' own). */
export type TermDrydockStreamsOptions = TermStreamsOptions;

/** A term's Drydock event streams: views and ACL objects all read through the queries port. */
export function createDrydockStreams(o: TermDrydockStreamsOptions): DrydockStreams {
  const q = o.queries;
  return new DrydockStreams({
    events: o.events,
    view: termDrydockView(q),
    objects: termDrydockObjects(q),
    machineObject: (id) => q.machineObject(id),
    clock: o.clock,
    logger: o.logger,
    heartbeatIntervalMs: o.heartbeatIntervalMs,
    maxSubscribers: o.maxSubscribers,
  });
}


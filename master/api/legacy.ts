/**
 * The legacy read endpoints Mesos' own tools read (the web UI, the Python CLI, Mesos-DNS,
 * mesos_exporter): `/master/state`, `/master/state-summary`, `/master/slaves`,
 * `/master/frameworks`, `/master/tasks`, `/master/roles`, `/master/flags`, and the v1 calls that
 * read the same facts and had no answer yet (GET_ROLES, GET_METRICS, GET_OPERATIONS). Their
 * shapes are Mesos 1.x's hand-written JSON models (src/master/readonly_handler.cpp and the
 * `json()` / `model()` functions of src/common/http.cpp), not the v1 messages: v0 names
 * (`slave_id`, `slaves`), times in seconds as doubles, resources as `{cpus, gpus, mem, disk,
 * ports: "[31000-31005]"}` objects, labels as arrays of `{key, value}`, and every list written
 * even when empty.
 *
 * What a caller sees is filtered as the v1 calls filter it (shared/visibility.ts): agents by
 * view_agents, frameworks by view_frameworks, tasks by view_tasks (their user, else their
 * framework's), an offer by its agent's view_agents, roles by view_roles, the flags by
 * view_flags. The large answers are written in pieces (json-stream.ts): a handler takes a
 * snapshot of references to the model at once (which agents, frameworks and tasks the answer
 * holds), and each element is rendered when its piece is produced, a few milliseconds later at
 * most.
 */

import { type DrydockError, fail } from '../../shared/errors.js';
import { DURATION_INFO, decodeMessage, message, optional } from '../../shared/proto.js';
import { hasCapability, isTerminal, type Attribute, type Resource, type Task, type TaskState, type TaskStatus } from '../../shared/mesos.js';
import { coalesceRanges } from '../../shared/resources.js';
import { stringifyJson } from '../../shared/json.js';
import { frameworkUser, taskUser, type Approve, type ViewRights } from '../../shared/visibility.js';
import { DRYDOCK_VERSION, MESOS_API_VERSION } from '../../shared/version.js';
import type { AgentEntry } from '../cores/agents.js';
import { drainInfoJson } from '../cores/drain.js';
import { frameworkRoles, type FrameworkEntry } from '../cores/frameworks.js';
import type { Offer } from '../cores/offers.js';
import { agentEntryObject } from '../security/acl-objects.js';
import type { Access } from '../security/security.js';
import type { Queries } from '../term/queries.js';
import { arrayPieces, type JsonPiece } from './json-stream.js';
import type { OperatorCall } from './operator-call.js';
import { versionInfo } from './operator.js';
import { ok, type Answer, type Decoded, type HttpRequest } from './row.js';

// ---- Resources, attributes, times ----------------------------------------------------------------

/** Round a sum of doubles to what Mesos keeps of a scalar (three decimals, Value::Scalar's fixed point). */
function round3(v: number): number {
  return Math.round(v * 1000) / 1000;
}

/**
 * Sums of resources by name, as Mesos' resource model writes them: every role together, scalars
 * added, ranges merged, set items gathered. One pass, no copies (an answer sums every task).
 */
export class ResourceTotals {
  readonly #scalars = new Map<string, number>();
  readonly #ranges = new Map<string, Array<{ begin: number; end: number }>>();
  readonly #sets = new Map<string, Set<string>>();

  add(resources: readonly Resource[]): this {
    for (const r of resources) {
      if (r.type === 'SCALAR') this.#scalars.set(r.name, (this.#scalars.get(r.name) ?? 0) + (r.scalar?.value ?? 0));
      else if (r.type === 'RANGES') {
        let list = this.#ranges.get(r.name);
        if (list === undefined) this.#ranges.set(r.name, (list = []));
        for (const x of r.ranges?.range ?? []) list.push(x);
      } else if (r.type === 'SET') {
        let set = this.#sets.get(r.name);
        if (set === undefined) this.#sets.set(r.name, (set = new Set()));
        for (const i of r.set?.item ?? []) set.add(i);
      }
    }
    return this;
  }

  /** A copy with more resources added (the totals' ranges merged first, so the copy is small). */
  plus(lists: Iterable<readonly Resource[]>): ResourceTotals {
    this.model();
    const copy = new ResourceTotals();
    for (const [name, v] of this.#scalars) copy.#scalars.set(name, v);
    for (const [name, list] of this.#ranges) copy.#ranges.set(name, [...list]);
    for (const [name, set] of this.#sets) copy.#sets.set(name, new Set(set));
    for (const list of lists) copy.add(list);
    return copy;
  }

  /** Adds another's totals to these. */
  merge(other: ResourceTotals): this {
    for (const [name, v] of other.#scalars) this.#scalars.set(name, (this.#scalars.get(name) ?? 0) + v);
    for (const [name, list] of other.#ranges) {
      let mine = this.#ranges.get(name);
      if (mine === undefined) this.#ranges.set(name, (mine = []));
      for (const x of list) mine.push(x);
    }
    for (const [name, items] of other.#sets) {
      let mine = this.#sets.get(name);
      if (mine === undefined) this.#sets.set(name, (mine = new Set()));
      for (const i of items) mine.add(i);
    }
    return this;
  }

  /** A scalar's sum (0 when absent). */
  scalar(name: string): number {
    return round3(this.#scalars.get(name) ?? 0);
  }

  /**
   * Mesos' resources object (`json(writer, Resources)`): `cpus`, `gpus`, `mem` and `disk` always
   * (0 when absent), every other scalar as a number, ranges as `"[31000-31005, 32000-32000]"`,
   * sets as `"{a, b}"`. Drydock has no revocable resources, so no `*_revocable` keys.
   */
  model(): Record<string, number | string> {
    const o: Record<string, number | string> = { cpus: 0, gpus: 0, mem: 0, disk: 0 };
    for (const [name, v] of this.#scalars) o[name] = round3(v);
    for (const [name, list] of this.#ranges) {
      // Kept merged: a framework's 50,000 tasks' ports are sorted once, not again for its `resources`.
      const merged = coalesceRanges(list);
      this.#ranges.set(name, merged);
      o[name] = `[${merged.map((x) => `${x.begin}-${x.end}`).join(', ')}]`;
    }
    for (const [name, set] of this.#sets) o[name] = `{${[...set].join(', ')}}`;
    return o;
  }

  /** Mesos' ResourceQuantities object (`/roles`): only the scalars present, by name. */
  quantities(): Record<string, number> {
    const o: Record<string, number> = {};
    for (const [name, v] of this.#scalars) o[name] = round3(v);
    return o;
  }

  /** The quantities as v1 Resources (GET_ROLES): cpus, mem, disk and gpus only, as Mesos writes them. */
  v1Scalars(): Array<{ name: string; type: 'SCALAR'; scalar: { value: number } }> {
    const out: Array<{ name: string; type: 'SCALAR'; scalar: { value: number } }> = [];
    for (const [name, v] of this.#scalars) if (name === 'cpus' || name === 'mem' || name === 'disk' || name === 'gpus') out.push({ name, type: 'SCALAR', scalar: { value: round3(v) } });
    return out;
  }
}

/** Mesos' resources object of one list. */
export function resourcesModel(resources: readonly Resource[]): Record<string, number | string> {
  return new ResourceTotals().add(resources).model();
}

/** A JSON number as JSON.stringify writes it. */
function num(n: number): string {
  return Number.isFinite(n) ? String(n) : 'null';
}

/** A JSON string. */
const str = JSON.stringify as (s: string) => string;

/**
 * `resourcesModel(resources)` as JSON text, written directly: the same keys in the same order and
 * the same values. An answer writes one per task and three per agent, so this skips the totals'
 * maps and the object for the common lists (scalars, a few ranges); anything else goes the
 * general way.
 */
export function resourcesText(resources: readonly Resource[]): string {
  let cpus = 0;
  let gpus = 0;
  let mem = 0;
  let disk = 0;
  let ranges: Resource[] | undefined;
  for (const r of resources) {
    if (r.type === 'SCALAR') {
      const v = r.scalar?.value ?? 0;
      if (r.name === 'cpus') cpus += v;
      else if (r.name === 'mem') mem += v;
      else if (r.name === 'disk') disk += v;
      else if (r.name === 'gpus') gpus += v;
      else return JSON.stringify(resourcesModel(resources));
    } else if (r.type === 'RANGES') (ranges ??= []).push(r);
    else return JSON.stringify(resourcesModel(resources));
  }
  let s = `{"cpus":${num(round3(cpus))},"gpus":${num(round3(gpus))},"mem":${num(round3(mem))},"disk":${num(round3(disk))}`;
  if (ranges !== undefined) {
    const byName = new Map<string, Array<{ begin: number; end: number }>>();
    for (const r of ranges) {
      let list = byName.get(r.name);
      if (list === undefined) byName.set(r.name, (list = []));
      for (const x of r.ranges?.range ?? []) list.push(x);
    }
    for (const [name, list] of byName) s += `,${str(name)}:${str(`[${coalesceRanges(list).map((x) => `${x.begin}-${x.end}`).join(', ')}]`)}`;
  }
  return `${s}}`;
}

/** Whether a resource is statically reserved (a role other than `*`). */
function reservedRole(r: Resource): string | undefined {
  return r.role === undefined || r.role === '*' ? undefined : r.role;
}

/** Mesos' attributes object: `{name: value}`, scalars as numbers, ranges, sets and text as strings. */
export function attributesModel(attributes: readonly Attribute[]): Record<string, number | string> {
  const o: Record<string, number | string> = {};
  for (const a of attributes) {
    if (a.type === 'SCALAR') o[a.name] = a.scalar?.value ?? 0;
    else if (a.type === 'RANGES') o[a.name] = `[${(a.ranges?.range ?? []).map((x) => `${x.begin}-${x.end}`).join(', ')}]`;
    else if (a.type === 'SET') o[a.name] = `{${(a.set?.item ?? []).join(', ')}}`;
    else o[a.name] = a.text?.value ?? '';
  }
  return o;
}

/** Nanoseconds since the epoch as Mesos' legacy endpoints write times: seconds, a double. */
function seconds(ns: bigint): number {
  return Number(ns / 1000n) / 1e6;
}

// ---- Tasks ---------------------------------------------------------------------------------------

/** The role a task's resources are allocated to: Drydock offers and allocates everything to `*`. */
const ALLOCATION_ROLE = '*';

/** Mesos' TaskStatus model: state, timestamp (s), and health when known (Drydock's statuses carry no labels or container status). */
function statusModel(s: TaskStatus): Record<string, unknown> {
  const o: Record<string, unknown> = { state: s.state, timestamp: s.timestamp };
  if (s.healthy !== undefined) o['healthy'] = s.healthy;
  return o;
}

/** Mesos' Task model (`json(writer, Task)`); `state` overrides the task's (TASK_UNREACHABLE while its agent is). */
export function taskModel(t: Task, state: TaskState = t.state): Record<string, unknown> {
  const o: Record<string, unknown> = {
    id: t.task_id.value,
    name: t.name,
    framework_id: t.framework_id.value,
    // Command tasks: no executor of their own (Mesos writes the empty id; the web UI then shows the task id).
    executor_id: '',
    slave_id: t.agent_id.value,
    state,
    resources: resourcesModel(t.resources),
    role: ALLOCATION_ROLE,
    statuses: t.statuses.map(statusModel),
  };
  if (t.user !== undefined) o['user'] = t.user;
  if (t.labels !== undefined) o['labels'] = t.labels.labels;
  return o;
}

/** A task's text as an answer writes it, with what it was written from (a task changes in place: its state and statuses). */
interface TaskTextMemo {
  readonly state: TaskState;
  readonly statuses: number;
  readonly last: TaskStatus | undefined;
  readonly resources: readonly Resource[];
  readonly text: string;
}

/**
 * Tasks' texts of earlier answers. A task's text changes only with its state (or the state it is
 * shown in) and its statuses (appended, or the last one replaced), so an answer written again
 * (the web UI polls every few seconds) takes the text of each task that did not change. Weak:
 * a task the master forgets takes its text with it.
 */
const taskTexts = new WeakMap<Task, TaskTextMemo>();

/** `taskModel(task, state)` as JSON text (written directly, or the memo's when the task has not changed). */
export function taskText(t: Task, state: TaskState = t.state): string {
  const n = t.statuses.length;
  const last = t.statuses[n - 1];
  const memo = taskTexts.get(t);
  if (memo !== undefined && memo.state === state && memo.statuses === n && memo.last === last && memo.resources === t.resources) return memo.text;
  let s = `{"id":${str(t.task_id.value)},"name":${str(t.name)},"framework_id":${str(t.framework_id.value)},"executor_id":"","slave_id":${str(t.agent_id.value)},"state":${str(state)},"resources":${resourcesText(t.resources)},"role":"${ALLOCATION_ROLE}","statuses":[`;
  for (let i = 0; i < n; i++) {
    const st = t.statuses[i] as TaskStatus;
    s += `${i === 0 ? '' : ','}{"state":${str(st.state)},"timestamp":${num(st.timestamp)}${st.healthy === undefined ? '' : `,"healthy":${st.healthy}`}}`;
  }
  s += ']';
  if (t.user !== undefined) s += `,"user":${str(t.user)}`;
  if (t.labels !== undefined) s += `,"labels":${JSON.stringify(t.labels.labels)}`;
  s += '}';
  taskTexts.set(t, { state, statuses: n, last, resources: t.resources, text: s });
  return s;
}

/** Tasks per block of a task list: the unit a list's text is kept in between answers. */
const TASK_BLOCK = 128;

/** A block of a task list as it was written: its tasks and what their texts were written from, their resources in use, and the text once written. */
interface BlockMemo {
  readonly tasks: Task[];
  readonly states: TaskState[];
  readonly statuses: number[];
  readonly lasts: Array<TaskStatus | undefined>;
  /** The resources of the block's tasks shown in a non-terminal state (a framework's `used_resources` is the sum of its blocks'). */
  readonly used: ResourceTotals;
  /**
   * The block's text as UTF-8, once written: its tasks' texts each after a comma (the list's first
   * block is sent from the second byte, after the `[`). Sent as it is: no string to flatten or
   * encode per answer.
   */
  bytes: Buffer | undefined;
}

/**
 * Blocks of task lists, by their first task. An answer written again finds most blocks as they
 * were (the same tasks, none changed) and takes their text whole: checking its tasks' stamps costs
 * far less than joining their texts again. A block whose tasks changed is written again from the
 * tasks' own memos. A memo holds its block's tasks until it is replaced or its first task is gone.
 */
const blockTexts = new WeakMap<Task, BlockMemo>();

/** The memo of items[from..to) of a task list: the one kept when none of its tasks changed, else a new one (its text not written yet). */
function blockMemo(items: readonly TaskItem[], from: number, to: number): BlockMemo {
  const memo = blockTexts.get((items[from] as TaskItem).task);
  if (memo !== undefined && memo.tasks.length === to - from) {
    let same = true;
    for (let j = 0; j < memo.tasks.length; j++) {
      const x = items[from + j] as TaskItem;
      const t = x.task;
      const n = t.statuses.length;
      if (memo.tasks[j] !== t || memo.states[j] !== x.state || memo.statuses[j] !== n || memo.lasts[j] !== t.statuses[n - 1]) {
        same = false;
        break;
      }
    }
    if (same) return memo;
  }
  const tasks: Task[] = [];
  const states: TaskState[] = [];
  const statuses: number[] = [];
  const lasts: Array<TaskStatus | undefined> = [];
  const used = new ResourceTotals();
  for (let i = from; i < to; i++) {
    const x = items[i] as TaskItem;
    tasks.push(x.task);
    states.push(x.state);
    statuses.push(x.task.statuses.length);
    lasts.push(x.task.statuses[x.task.statuses.length - 1]);
    if (!isTerminal(x.state)) used.add(x.task.resources);
  }
  used.model(); // merges its ranges: a framework sums its blocks', not its tasks'
  const made: BlockMemo = { tasks, states, statuses, lasts, used, bytes: undefined };
  blockTexts.set((items[from] as TaskItem).task, made);
  return made;
}

/** The text of items[from..to) of a task list, each task after a comma, as UTF-8. */
function blockBytes(items: readonly TaskItem[], from: number, to: number): Buffer {
  const memo = blockMemo(items, from, to);
  if (memo.bytes === undefined) {
    const texts: string[] = [];
    for (let i = from; i < to; i++) texts.push(taskText((items[i] as TaskItem).task, (items[i] as TaskItem).state));
    memo.bytes = Buffer.from(`,${texts.join(',')}`, 'utf8');
  }
  return memo.bytes;
}

/** Checks (or makes) the memo of each block of a task list, one empty piece per block. */
function* prepareBlocks(items: readonly TaskItem[]): Generator<JsonPiece> {
  for (let i = 0; i < items.length; i += TASK_BLOCK) {
    blockMemo(items, i, Math.min(items.length, i + TASK_BLOCK));
    yield '';
  }
}

/** The resources in use of a task list's tasks (those shown in a non-terminal state), summed by blocks. */
function listUsed(items: readonly TaskItem[], into: ResourceTotals): void {
  for (let i = 0; i < items.length; i += TASK_BLOCK) into.merge(blockMemo(items, i, Math.min(items.length, i + TASK_BLOCK)).used);
}

/** A task list's pieces: `[`, its blocks, `]`. */
function* taskListPieces(items: readonly TaskItem[]): Generator<JsonPiece> {
  if (items.length === 0) {
    yield '[]';
    return;
  }
  for (let i = 0; i < items.length; i += TASK_BLOCK) {
    const bytes = blockBytes(items, i, Math.min(items.length, i + TASK_BLOCK));
    if (i > 0) yield bytes;
    else {
      yield '[';
      yield bytes.subarray(1);
    }
  }
  yield ']';
}

// ---- The snapshot an answer is written from --------------------------------------------------------

/** A task in an answer, with the state it is shown in. */
interface TaskItem {
  readonly task: Task;
  readonly state: TaskState;
}

/** A framework in an answer, with its tasks as the answer shows them. */
interface FrameworkItem {
  readonly entry: FrameworkEntry;
  readonly completed: boolean;
  readonly tasks: TaskItem[];
  readonly unreachable: TaskItem[];
  readonly completedTasks: TaskItem[];
  /** Its offers of agents the caller may see. */
  readonly offers: Offer[];
}

/**
 * References to what an answer holds, taken at once so the answer is one moment's list of
 * agents, frameworks and tasks, however long it takes to write. Filtered by the caller's rights.
 */
export interface LegacySnapshot {
  /** Registered agents the caller may see. */
  readonly agents: AgentEntry[];
  /** Agents known from the registry after a restart, not re-registered yet, the caller may see. */
  readonly recovered: AgentEntry[];
  readonly frameworks: FrameworkItem[];
  readonly completedFrameworks: FrameworkItem[];
  /** Every outstanding offer's resources by agent (an agent's `offered_resources`). */
  readonly offeredByAgent: Map<string, Resource[][]>;
  /** Counts over every agent (Mesos' `activated_slaves`, ...), not only those the caller sees. */
  readonly counts: { active: number; deactivated: number; unreachable: number };
  /**
   * Puts the tasks into their frameworks' lists, a few hundred agents per piece (empty pieces:
   * the production yields between them). Run once, before any task list is read.
   */
  collect(): Generator<JsonPiece>;
}

/** Agents whose tasks are put into lists per piece of `collect`: a few milliseconds of work. */
const COLLECT_AGENTS = 200;

/** Which agents' offers the caller may see (an agent the master no longer has is an unknown object); decided once per agent. */
function agentVisibility(q: Queries, may: Approve | undefined): ((agentId: string) => boolean) | undefined {
  if (may === undefined) return undefined;
  const decided = new Map<string, boolean>();
  return (agentId) => {
    let yes = decided.get(agentId);
    if (yes === undefined) decided.set(agentId, (yes = may(q.agentObject(agentId))));
    return yes;
  };
}

/** Takes the snapshot: one walk of the agents and their tasks, one of the frameworks and their offers. */
export function legacySnapshot(q: Queries, rights: ViewRights | undefined): LegacySnapshot {
  const agents: AgentEntry[] = [];
  const recovered: AgentEntry[] = [];
  const counts = { active: 0, deactivated: 0, unreachable: 0 };
  const items = new Map<string, FrameworkItem>();
  const item = (entry: FrameworkEntry, completed: boolean): FrameworkItem => ({ entry, completed, tasks: [], unreachable: [], completedTasks: [], offers: [] });
  const frameworks: FrameworkItem[] = [];
  const completedFrameworks: FrameworkItem[] = [];
  const mayFramework = rights?.frameworks;
  for (const f of q.frameworks()) {
    if (mayFramework !== undefined && !mayFramework(frameworkUser(f.info))) continue;
    const it = item(f, false);
    frameworks.push(it);
    items.set(f.id, it);
  }
  for (const f of q.completedFrameworks()) {
    if (items.has(f.id) || (mayFramework !== undefined && !mayFramework(frameworkUser(f.info)))) continue;
    const it = item(f, true);
    completedFrameworks.push(it);
    items.set(f.id, it);
  }
  const mayTask = rights?.tasks;
  const sees = (t: Task, it: FrameworkItem): boolean => mayTask === undefined || mayTask(taskUser(t, frameworkUser(it.entry.info)));
  const mayAgent = rights?.agents;
  const withTasks: AgentEntry[] = [];
  for (const e of q.agents()) {
    if (e.phase === 'REGISTERED') {
      if (e.connected && !e.deactivated) counts.active++;
      else counts.deactivated++;
    } else if (e.phase === 'UNREACHABLE') counts.unreachable++;
    if ((e.phase === 'REGISTERED' || e.phase === 'RECOVERED') && (mayAgent === undefined || mayAgent(agentEntryObject(e)))) (e.phase === 'REGISTERED' ? agents : recovered).push(e);
    if (e.tasks !== undefined) withTasks.push(e);
  }
  const completed = [...q.completedTasks()];
  let collected = false;
  function* collect(): Generator<JsonPiece> {
    if (collected) return;
    collected = true;
    for (let i = 0; i < withTasks.length; i++) {
      const e = withTasks[i] as AgentEntry;
      const unreachableAgent = e.phase === 'UNREACHABLE';
      for (const t of e.tasks?.values() ?? []) {
        // A task of a framework the master does not know (or the caller may not see) is in no framework's list (Mesos' orphan tasks are gone).
        const it = items.get(t.framework_id.value);
        if (it === undefined || !sees(t, it)) continue;
        if (unreachableAgent && !isTerminal(t.state)) it.unreachable.push({ task: t, state: 'TASK_UNREACHABLE' });
        else it.tasks.push({ task: t, state: t.state });
      }
      if (i % COLLECT_AGENTS === COLLECT_AGENTS - 1) yield '';
    }
    for (const t of completed) {
      const it = items.get(t.framework_id.value);
      if (it !== undefined && sees(t, it)) it.completedTasks.push({ task: t, state: t.state });
    }
  }
  // Offers: each framework's once; an agent's offered resources count every offer, a framework lists those of agents the caller may see.
  const offeredByAgent = new Map<string, Resource[][]>();
  const agentVisible = agentVisibility(q, mayAgent);
  for (const f of q.frameworks()) {
    if (q.frameworkRemoved(f.id)) continue;
    const it = items.get(f.id);
    for (const o of q.offers(f.id)) {
      let list = offeredByAgent.get(o.agentId);
      if (list === undefined) offeredByAgent.set(o.agentId, (list = []));
      list.push(o.resources);
      if (it !== undefined && (agentVisible === undefined || agentVisible(o.agentId))) it.offers.push(o);
    }
  }
  return { agents, recovered, frameworks, completedFrameworks, offeredByAgent, counts, collect };
}

// ---- Agents --------------------------------------------------------------------------------------

/** Mesos' SlaveInfo model (`json(writer, SlaveInfo)`): what `recovered_slaves` lists. */
function slaveInfoModel(e: AgentEntry): Record<string, unknown> {
  return { id: e.id, hostname: e.info.hostname, port: e.info.port, attributes: attributesModel(e.info.attributes) };
}

/** Non-terminal tasks' resources of an agent (Mesos' `used_resources`). */
function usedOn(e: AgentEntry): ResourceTotals {
  const used = new ResourceTotals();
  for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) used.add(t.resources);
  return used;
}

/** What an agent's model needs besides the agent. */
export interface SlaveContext {
  readonly offeredByAgent: Map<string, Resource[][]>;
  /** view_roles of the caller (reservations of roles it may not see are left out, as Mesos does); undefined: all. */
  readonly mayRole: Approve | undefined;
}

/** Mesos' SlaveWriter: the agent as `/state`, `/state-summary` and `/slaves` write it. */
export function slaveModel(e: AgentEntry, ctx: SlaveContext): Record<string, unknown> {
  const o = slaveInfoModel(e);
  o['pid'] = `slave(1)@${e.info.ip}:${e.info.port}`;
  o['registered_time'] = seconds(e.registeredTimeNs);
  if (e.reregisteredTimeNs !== undefined) o['reregistered_time'] = seconds(e.reregisteredTimeNs);
  const total = e.info.resources;
  o['resources'] = resourcesModel(total);
  o['used_resources'] = usedOn(e).model();
  const offered = new ResourceTotals();
  for (const list of ctx.offeredByAgent.get(e.id) ?? []) offered.add(list);
  o['offered_resources'] = offered.model();
  const reserved: Record<string, Record<string, number | string>> = {};
  for (const [role, list] of reservations(total)) if (ctx.mayRole === undefined || ctx.mayRole(role)) reserved[role] = resourcesModel(list);
  o['reserved_resources'] = reserved;
  o['unreserved_resources'] = resourcesModel(total.filter((r) => reservedRole(r) === undefined));
  o['active'] = e.connected && !e.deactivated;
  o['deactivated'] = e.deactivated;
  o['version'] = e.version;
  o['capabilities'] = e.capabilities;
  if (e.drain !== undefined) {
    o['drain_info'] = drainInfoJson(e.drain);
    if (e.drain.estimatedStartNs !== undefined) o['estimated_drain_start_time_seconds'] = seconds(e.drain.estimatedStartNs);
  }
  return o;
}

/** Reserved resources by role. */
function reservations(resources: readonly Resource[]): Map<string, Resource[]> {
  const byRole = new Map<string, Resource[]>();
  for (const r of resources) {
    const role = reservedRole(r);
    if (role === undefined) continue;
    let list = byRole.get(role);
    if (list === undefined) byRole.set(role, (list = []));
    list.push(r);
  }
  return byRole;
}

/** A resource in Mesos' endpoint format, as `/slaves`' `*_full` lists write it (unreserved: role `*`). */
function endpointResource(r: Resource): Record<string, unknown> {
  const o: Record<string, unknown> = { name: r.name, type: r.type };
  if (r.scalar !== undefined) o['scalar'] = r.scalar;
  if (r.ranges !== undefined) o['ranges'] = r.ranges;
  if (r.set !== undefined) o['set'] = r.set;
  o['role'] = r.role ?? '*';
  return o;
}

/** `/slaves` adds the full resources, as protobuf JSON, to each agent (SlavesWriter::writeSlave). */
function slaveFullModel(e: AgentEntry, ctx: SlaveContext): Record<string, unknown> {
  const o = slaveModel(e, ctx);
  const total = e.info.resources;
  const reservedFull: Record<string, unknown[]> = {};
  for (const [role, list] of reservations(total)) if (ctx.mayRole === undefined || ctx.mayRole(role)) reservedFull[role] = list.map(endpointResource);
  o['reserved_resources_full'] = reservedFull;
  o['unreserved_resources_full'] = total.filter((r) => reservedRole(r) === undefined).map(endpointResource);
  const used: Resource[] = [];
  for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) used.push(...t.resources);
  o['used_resources_full'] = used.map(endpointResource);
  o['offered_resources_full'] = (ctx.offeredByAgent.get(e.id) ?? []).flat().map(endpointResource);
  return o;
}

/** An agent model's text (its drain config's nanoseconds are int64s: written exactly). */
function modelText(model: Record<string, unknown>): string {
  return 'drain_info' in model ? stringifyJson(model) : JSON.stringify(model);
}

/** What of an agent's text depends only on its info and registration: written once per change of those. */
interface SlaveHeadMemo {
  readonly info: AgentEntry['info'];
  readonly reregisteredTimeNs: bigint | undefined;
  /** From `{"id"` up to the `resources` object. */
  readonly head: string;
  /** `reserved_resources` (every role: only for callers ACLs do not filter) and `unreserved_resources`. */
  readonly reserved: string;
  readonly unreserved: string;
}

const slaveHeads = new WeakMap<AgentEntry, SlaveHeadMemo>();

function slaveHead(e: AgentEntry): SlaveHeadMemo {
  const memo = slaveHeads.get(e);
  if (memo !== undefined && memo.info === e.info && memo.reregisteredTimeNs === e.reregisteredTimeNs) return memo;
  const total = e.info.resources;
  let head = `{"id":${str(e.id)},"hostname":${str(e.info.hostname)},"port":${num(e.info.port)},"attributes":${JSON.stringify(attributesModel(e.info.attributes))},"pid":${str(`slave(1)@${e.info.ip}:${e.info.port}`)},"registered_time":${num(seconds(e.registeredTimeNs))}`;
  if (e.reregisteredTimeNs !== undefined) head += `,"reregistered_time":${num(seconds(e.reregisteredTimeNs))}`;
  head += `,"resources":${resourcesText(total)}`;
  const reserved: Record<string, Record<string, number | string>> = {};
  for (const [role, list] of reservations(total)) reserved[role] = resourcesModel(list);
  const made = { info: e.info, reregisteredTimeNs: e.reregisteredTimeNs, head, reserved: JSON.stringify(reserved), unreserved: resourcesText(total.filter((r) => reservedRole(r) === undefined)) };
  slaveHeads.set(e, made);
  return made;
}

/** An agent's `used_resources` text, with the tasks it was summed from (their states decide which count). */
interface UsedMemo {
  readonly tasks: Task[];
  readonly states: TaskState[];
  readonly text: string;
}

const usedTexts = new WeakMap<AgentEntry, UsedMemo>();

/** An agent's `used_resources` text: its non-terminal tasks' resources, summed again only when its tasks or their states changed. */
function usedText(e: AgentEntry): string {
  const memo = usedTexts.get(e);
  const tasks = e.tasks;
  if (memo !== undefined && tasks !== undefined && memo.tasks.length === tasks.size) {
    let same = true;
    let i = 0;
    for (const t of tasks.values()) {
      if (memo.tasks[i] !== t || memo.states[i] !== t.state) {
        same = false;
        break;
      }
      i++;
    }
    if (same) return memo.text;
  }
  const list = tasks === undefined ? [] : [...tasks.values()];
  const used: Resource[] = [];
  for (const t of list) if (!isTerminal(t.state)) for (const r of t.resources) used.push(r);
  const text = resourcesText(used);
  if (tasks !== undefined) usedTexts.set(e, { tasks: list, states: list.map((t) => t.state), text });
  return text;
}

/** `slaveModel(e, ctx)` as JSON text, written directly (the agent's unchanging part from a memo). */
export function slaveText(e: AgentEntry, ctx: SlaveContext): string {
  const h = slaveHead(e);
  const offeredLists = ctx.offeredByAgent.get(e.id);
  const offered = offeredLists === undefined ? OFFERED_NONE : resourcesText(offeredLists.flat());
  let reserved = h.reserved;
  if (ctx.mayRole !== undefined) {
    const visible: Record<string, Record<string, number | string>> = {};
    for (const [role, list] of reservations(e.info.resources)) if (ctx.mayRole(role)) visible[role] = resourcesModel(list);
    reserved = JSON.stringify(visible);
  }
  let s = `${h.head},"used_resources":${usedText(e)},"offered_resources":${offered},"reserved_resources":${reserved},"unreserved_resources":${h.unreserved},"active":${e.connected && !e.deactivated},"deactivated":${e.deactivated},"version":${str(e.version)},"capabilities":${JSON.stringify(e.capabilities)}`;
  if (e.drain !== undefined) {
    s += `,"drain_info":${stringifyJson(drainInfoJson(e.drain))}`;
    if (e.drain.estimatedStartNs !== undefined) s += `,"estimated_drain_start_time_seconds":${num(seconds(e.drain.estimatedStartNs))}`;
  }
  return `${s}}`;
}

/** The resources object of nothing. */
const OFFERED_NONE = '{"cpus":0,"gpus":0,"mem":0,"disk":0}';

// ---- Frameworks ----------------------------------------------------------------------------------

/** Mesos' Summary<Framework>: what `/state-summary` lists and `/state`'s frameworks start with. */
function frameworkSummaryModel(q: Queries, it: FrameworkItem, used: ResourceTotals = usedBy(it)): Record<string, unknown> {
  const f = it.entry;
  const removed = it.completed || q.frameworkRemoved(f.id);
  const offered = new ResourceTotals();
  for (const o of it.offers) offered.add(o.resources);
  return {
    id: f.id,
    name: f.info.name,
    // No `pid`: every Drydock framework speaks the HTTP scheduler API (Mesos leaves it out for those).
    used_resources: used.model(),
    offered_resources: offered.model(),
    capabilities: (f.info.capabilities ?? []).map((c) => c.type),
    hostname: f.info.hostname ?? '',
    webui_url: f.info.webui_url ?? '',
    active: f.phase === 'CONNECTED' && !removed,
    connected: f.phase === 'CONNECTED' && !removed,
    recovered: f.phase === 'RECOVERED',
  };
}

/** Non-terminal tasks' resources of a framework, over every agent (reachable or not). */
function usedBy(it: FrameworkItem): ResourceTotals {
  const used = new ResourceTotals();
  listUsed(it.tasks, used);
  listUsed(it.unreachable, used);
  return used;
}

/** Mesos' offer model (`json(writer, Offer)`). */
function offerModel(o: Offer): Record<string, unknown> {
  return { id: o.id, framework_id: o.frameworkId, allocation_info: { role: ALLOCATION_ROLE }, slave_id: o.agentId, resources: resourcesModel(o.resources) };
}

/**
 * Mesos' FullFrameworkWriter, in pieces: the framework's fields, then its tasks one piece each.
 * Yields the text of one element of a `frameworks` array (without separators).
 */
function* frameworkFullPieces(q: Queries, it: FrameworkItem): Generator<JsonPiece> {
  const f = it.entry;
  // The blocks' memos first, one piece each: their resources in use are the framework's.
  yield* prepareBlocks(it.tasks);
  yield* prepareBlocks(it.unreachable);
  const used = usedBy(it);
  const o = frameworkSummaryModel(q, it, used);
  o['user'] = f.info.user;
  o['failover_timeout'] = f.info.failover_timeout ?? 0;
  o['checkpoint'] = f.info.checkpoint ?? false;
  o['registered_time'] = f.registeredTimeNs === undefined ? 0 : seconds(f.registeredTimeNs);
  o['unregistered_time'] = f.unregisteredTimeNs === undefined ? 0 : seconds(f.unregisteredTimeNs);
  if (f.info.principal !== undefined) o['principal'] = f.info.principal;
  o['resources'] = (it.offers.length === 0 ? used : used.plus(it.offers.map((x) => x.resources))).model();
  if (f.reregisteredTimeNs !== undefined && f.reregisteredTimeNs !== f.registeredTimeNs) o['reregistered_time'] = seconds(f.reregisteredTimeNs);
  // A MULTI_ROLE framework has `roles`, another its `role` (Mesos mirrors the FrameworkInfo it has).
  if (hasCapability(f.info, 'MULTI_ROLE')) o['roles'] = f.info.roles ?? [];
  else o['role'] = frameworkRoles(f.info)[0] ?? '*';
  const head = JSON.stringify(o);
  yield `${head.slice(0, -1)},"tasks":`;
  yield* taskListPieces(it.tasks);
  yield ',"unreachable_tasks":';
  yield* taskListPieces(it.unreachable);
  yield ',"completed_tasks":';
  yield* taskListPieces(it.completedTasks);
  const tail: Record<string, unknown> = { offers: it.offers.map(offerModel), executors: [] };
  if (f.info.labels !== undefined) tail['labels'] = f.info.labels.labels;
  tail['offer_constraints'] = {};
  yield `,${JSON.stringify(tail).slice(1)}`;
}

/** A list of frameworks written in full, one piece per task. */
function* frameworksPieces(q: Queries, items: readonly FrameworkItem[]): Generator<JsonPiece> {
  yield '[';
  for (const [i, it] of items.entries()) {
    if (i > 0) yield ',';
    yield* frameworkFullPieces(q, it);
  }
  yield ']';
}

// ---- The answers ---------------------------------------------------------------------------------

/** What the legacy answers read of the caller: its view rights, and whether it may see roles and flags. */
export interface LegacyCaller {
  readonly rights: ViewRights | undefined;
  readonly mayRole: Approve | undefined;
  readonly mayViewFlags: boolean;
  /** Whose view this is: callers with the same key get the same bytes. */
  readonly key: string;
}

/** The caller's rights as the legacy answers read them. */
export function legacyCaller(access: Access, rights: ViewRights | undefined): LegacyCaller {
  const filters = access.filters;
  return {
    rights,
    mayRole: filters ? access.approver('view_roles') : undefined,
    mayViewFlags: !filters || access.allows('view_flags', undefined),
    // Rights are a function of the principal (and of the ACLs, which do not change while a master runs).
    key: filters ? (access.principal === undefined ? 'anonymous' : `principal:${access.principal}`) : 'everyone',
  };
}

/** A large answer: its pieces, and the key of the bytes it would get (same key, same bytes, one production). */
function pieces(endpoint: string, input: unknown, q: Queries, caller: LegacyCaller, make: () => Iterable<JsonPiece>): Answer {
  return { kind: 'pieces', pieces: make, share: `${endpoint}\u0000${JSON.stringify(input) ?? ''}\u0000${caller.key}\u0000${q.generation()}` };
}

/** The master's fields of `/state` (ReadOnlyHandler::state), up to the agents. */
function stateHead(q: Queries, s: LegacySnapshot, caller: LegacyCaller): Record<string, unknown> {
  const m = q.master();
  const info = m.info as { id?: string; pid?: string; port?: number; hostname?: string; capabilities?: Array<{ type: string }> };
  const build = versionInfo();
  const o: Record<string, unknown> = {
    version: MESOS_API_VERSION,
    git_tag: `drydock-${DRYDOCK_VERSION}`,
    build_date: build['build_date'] ?? '',
    build_time: build['build_time'] ?? 0,
    build_user: '',
    start_time: m.startMs / 1000,
    elected_time: m.electedMs / 1000,
    id: info.id ?? '',
    pid: info.pid ?? '',
    hostname: info.hostname ?? '',
    capabilities: (info.capabilities ?? []).map((c) => c.type),
    activated_slaves: s.counts.active,
    deactivated_slaves: s.counts.deactivated,
    unreachable_slaves: s.counts.unreachable,
    // This master answers only while it leads: the leader is itself.
    leader: info.pid ?? '',
    leader_info: { id: info.id ?? '', pid: info.pid ?? '', port: info.port ?? 0, hostname: info.hostname ?? '' },
  };
  // The web UI's home page reads `flags.log_dir` and `flags.external_log_file` to offer the log: Drydock has neither.
  if (caller.mayViewFlags) o['flags'] = flagsModel(q.flags());
  return o;
}

/** The flags as `/flags` and `/state` write them: `{name: value}`. */
export function flagsModel(flags: ReadonlyArray<{ readonly name: string; readonly value: string }>): Record<string, string> {
  const o: Record<string, string> = {};
  for (const f of flags) o[f.name] = f.value;
  return o;
}

/** `/master/state` (also `/state`): everything, in Mesos' order. */
export function stateAnswer(q: Queries, caller: LegacyCaller): Answer {
  return pieces('state', null, q, caller, () => {
    const s = legacySnapshot(q, caller.rights);
    const ctx: SlaveContext = { offeredByAgent: s.offeredByAgent, mayRole: caller.mayRole };
    return (function* (): Generator<JsonPiece> {
      yield* s.collect();
      const head = JSON.stringify(stateHead(q, s, caller));
      yield `${head.slice(0, -1)},"slaves":`;
      yield* arrayPieces(s.agents, (e) => slaveText(e, ctx));
      yield ',"recovered_slaves":';
      yield* arrayPieces(s.recovered, (e) => JSON.stringify(slaveInfoModel(e)));
      yield ',"frameworks":';
      yield* frameworksPieces(q, s.frameworks);
      yield ',"completed_frameworks":';
      yield* frameworksPieces(q, s.completedFrameworks);
      // Orphan tasks and unregistered frameworks no longer exist in Mesos either: empty lists, kept for old readers.
      yield ',"orphan_tasks":[],"unregistered_frameworks":[]}';
    })();
  });
}

/** A query's id filter (`framework_id`, `slave_id`, `task_id`): undefined when absent. */
export function idFilter(query: string, name: string): string | undefined {
  const v = new URLSearchParams(query).get(name);
  return v === null ? undefined : v;
}

/** `/master/slaves` (also `/slaves`): registered and recovered agents, `?slave_id=` one of them. */
export function slavesAnswer(q: Queries, caller: LegacyCaller, slaveId: string | undefined): Answer {
  return pieces('slaves', slaveId ?? null, q, caller, () => {
    const s = legacySnapshot(q, caller.rights);
    const ctx: SlaveContext = { offeredByAgent: s.offeredByAgent, mayRole: caller.mayRole };
    const pick = (e: AgentEntry): boolean => slaveId === undefined || e.id === slaveId;
    return (function* (): Generator<JsonPiece> {
      yield '{"slaves":';
      yield* arrayPieces(s.agents.filter(pick), (e) => modelText(slaveFullModel(e, ctx)));
      yield ',"recovered_slaves":';
      yield* arrayPieces(s.recovered.filter(pick), (e) => JSON.stringify(slaveInfoModel(e)));
      yield '}';
    })();
  });
}

/** `/master/frameworks` (also `/frameworks`): frameworks and completed ones in full, `?framework_id=` one of them. */
export function frameworksAnswer(q: Queries, caller: LegacyCaller, frameworkId: string | undefined): Answer {
  return pieces('frameworks', frameworkId ?? null, q, caller, () => {
    const s = legacySnapshot(q, caller.rights);
    const pick = (it: FrameworkItem): boolean => frameworkId === undefined || it.entry.id === frameworkId;
    return (function* (): Generator<JsonPiece> {
      yield* s.collect();
      yield '{"frameworks":';
      yield* frameworksPieces(q, s.frameworks.filter(pick));
      yield ',"completed_frameworks":';
      yield* frameworksPieces(q, s.completedFrameworks.filter(pick));
      yield ',"unregistered_frameworks":[]}';
    })();
  });
}

/** Mesos' per-state task counts of `/state-summary`, in its order. */
const SUMMARY_STATES: readonly TaskState[] = ['TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLING', 'TASK_FINISHED', 'TASK_KILLED', 'TASK_FAILED', 'TASK_LOST', 'TASK_ERROR', 'TASK_UNREACHABLE'];

function countsModel(counts: Map<TaskState, number> | undefined): Record<string, number> {
  const o: Record<string, number> = {};
  for (const st of SUMMARY_STATES) o[st] = counts?.get(st) ?? 0;
  return o;
}

/**
 * `/master/state-summary`: agents and frameworks without their tasks, with per-state task counts
 * and which frameworks run on which agents (over the frameworks the master has now, as Mesos).
 */
export function stateSummaryAnswer(q: Queries, caller: LegacyCaller): Answer {
  return pieces('state-summary', null, q, caller, () => {
    const s = legacySnapshot(q, caller.rights);
    const ctx: SlaveContext = { offeredByAgent: s.offeredByAgent, mayRole: caller.mayRole };
    const byAgent = new Map<string, Map<TaskState, number>>();
    const byFramework = new Map<string, Map<TaskState, number>>();
    const frameworksOn = new Map<string, Set<string>>();
    const agentsOf = new Map<string, Set<string>>();
    const count = (m: Map<string, Map<TaskState, number>>, id: string, st: TaskState): void => {
      let c = m.get(id);
      if (c === undefined) m.set(id, (c = new Map()));
      c.set(st, (c.get(st) ?? 0) + 1);
    };
    const link = (m: Map<string, Set<string>>, from: string, to: string): void => {
      let set = m.get(from);
      if (set === undefined) m.set(from, (set = new Set()));
      set.add(to);
    };
    const head: Record<string, unknown> = { hostname: (q.master().info as { hostname?: string }).hostname ?? '' };
    return (function* (): Generator<JsonPiece> {
      yield* s.collect();
      for (const it of s.frameworks) {
        for (const group of [it.tasks, it.unreachable, it.completedTasks]) {
          for (const x of group) {
            const agentId = x.task.agent_id.value;
            count(byAgent, agentId, x.state);
            count(byFramework, it.entry.id, x.state);
            link(frameworksOn, agentId, it.entry.id);
            link(agentsOf, it.entry.id, agentId);
          }
          yield '';
        }
      }
      yield `${JSON.stringify(head).slice(0, -1)},"slaves":`;
      yield* arrayPieces(s.agents, (e) => modelText({ ...slaveModel(e, ctx), ...countsModel(byAgent.get(e.id)), framework_ids: [...(frameworksOn.get(e.id) ?? [])] }));
      for (const it of s.frameworks) {
        yield* prepareBlocks(it.tasks);
        yield* prepareBlocks(it.unreachable);
      }
      yield ',"frameworks":';
      yield* arrayPieces(s.frameworks, (it) => JSON.stringify({ ...frameworkSummaryModel(q, it), ...countsModel(byFramework.get(it.entry.id)), slave_ids: [...(agentsOf.get(it.entry.id) ?? [])] }));
      yield '}';
    })();
  });
}

// ---- /tasks --------------------------------------------------------------------------------------

/** `/tasks`' query: how many (Mesos' default 100; negative: all, as the Python CLI's `limit=-1`), from where, in which order, which. */
export interface TasksQuery {
  readonly limit: number;
  readonly offset: number;
  readonly order: 'asc' | 'desc';
  readonly frameworkId: string | undefined;
  readonly taskId: string | undefined;
}

/** Mesos' TASK_LIMIT: `/tasks` answers this many unless asked otherwise. */
export const TASK_LIMIT = 100;

/** An integer query parameter, or the 400 that says it is not one. */
function intParam(params: URLSearchParams, name: string, fallback: number, expected: string, valid: (n: number) => boolean): { ok: true; value: number } | { ok: false; error: DrydockError } {
  const raw = params.get(name);
  if (raw === null) return { ok: true, value: fallback };
  const n = /^[+-]?[0-9]{1,15}$/.test(raw.trim()) ? Number(raw.trim()) : Number.NaN;
  if (!Number.isSafeInteger(n) || !valid(n)) return { ok: false, error: fail('QUERY_PARAMETER_INVALID', name, raw, expected) };
  return { ok: true, value: n };
}

/** Reads `/tasks`' query: `limit`, `offset`, `order` (`asc` or `desc`), `framework_id`, `task_id`. */
export function tasksQuery(r: HttpRequest): Decoded<TasksQuery> {
  const params = new URLSearchParams(r.query);
  const limit = intParam(params, 'limit', TASK_LIMIT, 'an integer (-1: every task)', () => true);
  if (!limit.ok) return limit;
  const offset = intParam(params, 'offset', 0, 'an integer of 0 or more', (n) => n >= 0);
  if (!offset.ok) return offset;
  const order = params.get('order');
  // Mesos reads anything but `asc` as descending; a typo is better told.
  if (order !== null && order !== 'asc' && order !== 'desc' && order !== 'des') return { ok: false, error: fail('QUERY_PARAMETER_INVALID', 'order', order, "'asc' or 'desc'") };
  return ok({
    limit: limit.value < 0 ? Number.MAX_SAFE_INTEGER : limit.value,
    offset: offset.value,
    order: order === 'asc' ? 'asc' : 'desc',
    frameworkId: params.get('framework_id') ?? undefined,
    taskId: params.get('task_id') ?? undefined,
  });
}

/** The timestamp tasks are ordered by: their first status's (Mesos' TaskComparator); none for a task without statuses. */
function firstTimestamp(t: Task): number | undefined {
  return t.statuses[0]?.timestamp;
}

/**
 * `/master/tasks` (also `/tasks`): tasks of the frameworks and completed frameworks (live,
 * unreachable, completed), ordered by their first status's time (tasks without a status first
 * in ascending order, last in descending), `limit` of them from `offset`.
 */
export function tasksAnswer(q: Queries, caller: LegacyCaller, query: TasksQuery): Answer {
  return pieces('tasks', query, q, caller, () => {
    const s = legacySnapshot(q, caller.rights);
    return (function* (): Generator<JsonPiece> {
      yield* s.collect();
      const list: TaskItem[] = [];
      for (const it of [...s.frameworks, ...s.completedFrameworks]) {
        if (query.frameworkId !== undefined && it.entry.id !== query.frameworkId) continue;
        for (const group of [it.tasks, it.unreachable, it.completedTasks]) for (const x of group) if (query.taskId === undefined || x.task.task_id.value === query.taskId) list.push(x);
      }
      yield '';
      // Ascending by a stable sort (tasks with the same first timestamp keep the model's order);
      // descending is exactly its reverse, so the two orders page through the same sequence.
      list.sort((a, b) => {
        const ta = firstTimestamp(a.task);
        const tb = firstTimestamp(b.task);
        if (ta === undefined || tb === undefined) return ta === tb ? 0 : ta === undefined ? -1 : 1;
        return ta - tb;
      });
      if (query.order === 'desc') list.reverse();
      const page = list.slice(query.offset, query.offset + query.limit);
      yield '{"tasks":';
      yield* taskListPieces(page);
      yield '}';
    })();
  });
}

// ---- Roles ---------------------------------------------------------------------------------------

/** One role as Drydock knows it: the frameworks subscribed to it, what is allocated and offered to it, reserved for it. */
interface RoleFacts {
  readonly name: string;
  readonly frameworks: string[];
  readonly allocated: ResourceTotals;
  readonly offered: ResourceTotals;
  readonly reserved: ResourceTotals;
}

/** Mesos' default role weight. */
const DEFAULT_WEIGHT = 1;

/**
 * The roles Drydock knows, sorted by name as Mesos' knownRoles: every role a framework the
 * master has now is subscribed to (its `roles`, or its `role`, `*` by default), every role an
 * agent reserves resources for, and `*`, the one role Drydock allocates to (its offers and tasks
 * are all `*`'s). Filtered by view_roles; a role's frameworks by view_frameworks.
 */
function roleFacts(q: Queries, caller: LegacyCaller): RoleFacts[] {
  const roles = new Map<string, RoleFacts>();
  const role = (name: string): RoleFacts => {
    let r = roles.get(name);
    if (r === undefined) roles.set(name, (r = { name, frameworks: [], allocated: new ResourceTotals(), offered: new ResourceTotals(), reserved: new ResourceTotals() }));
    return r;
  };
  const star = role(ALLOCATION_ROLE);
  const mayFramework = caller.rights?.frameworks;
  for (const f of q.frameworks()) {
    if (q.frameworkRemoved(f.id)) continue;
    const visibleFramework = mayFramework === undefined || mayFramework(frameworkUser(f.info));
    for (const name of frameworkRoles(f.info)) {
      const r = role(name);
      if (visibleFramework) r.frameworks.push(f.id);
    }
    for (const o of q.offers(f.id)) star.offered.add(o.resources);
  }
  for (const e of q.agents()) {
    if (e.phase === 'REGISTERED') for (const [name, list] of reservations(e.info.resources)) role(name).reserved.add(list);
    for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) star.allocated.add(t.resources);
  }
  const may = caller.mayRole;
  return [...roles.values()].filter((r) => may === undefined || may(r.name)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** The sum of several totals' quantities. */
function plus(...totals: ResourceTotals[]): Record<string, number> {
  const o: Record<string, number> = {};
  for (const t of totals) for (const [k, v] of Object.entries(t.quantities())) o[k] = round3((o[k] ?? 0) + v);
  return o;
}

/** `/master/roles` (also `/roles`): Mesos' hand-written role model (no quotas in Drydock: empty guarantee and limit). */
export function rolesView(q: Queries, caller: LegacyCaller): Record<string, unknown> {
  return {
    roles: roleFacts(q, caller).map((r) => ({
      name: r.name,
      weight: DEFAULT_WEIGHT,
      quota: { role: r.name, guarantee: {}, limit: {}, consumed: plus(r.reserved, r.allocated) },
      resources: plus(r.allocated, r.offered),
      allocated: r.allocated.quantities(),
      offered: r.offered.quantities(),
      reserved: r.reserved.quantities(),
      frameworks: r.frameworks,
    })),
  };
}

/** GET_ROLES: `roles` as v1 Role messages (name, weight, frameworks, allocated and offered cpus, mem, disk, gpus). */
export function getRoles(q: Queries, caller: LegacyCaller): Record<string, unknown> {
  return {
    roles: roleFacts(q, caller).map((r) => {
      const o: Record<string, unknown> = { name: r.name, weight: DEFAULT_WEIGHT };
      if (r.frameworks.length > 0) o['frameworks'] = r.frameworks.map((value) => ({ value }));
      const both = new ResourceTotals();
      for (const [name, value] of Object.entries(plus(r.allocated, r.offered))) both.add([{ name, type: 'SCALAR', scalar: { value } }]);
      const resources = both.v1Scalars();
      if (resources.length > 0) o['resources'] = resources;
      return o;
    }),
  };
}

// ---- Metrics -------------------------------------------------------------------------------------

const GET_METRICS_CALL = message('Call.GetMetrics', () => ({ timeout: optional(DURATION_INFO) }));

/** GET_METRICS' sub-message: its optional `timeout` is read (and refused when malformed), then not needed: the snapshot is taken at once. */
export function metricsCall(call: OperatorCall): Decoded<undefined> {
  const decoded = decodeMessage(GET_METRICS_CALL, call.body['get_metrics'], 'get_metrics');
  return decoded.ok ? ok(undefined) : { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
}

/** GET_METRICS: the snapshot's keys as v1 Metrics, sorted by name (every value a double). */
export function getMetrics(snapshot: Readonly<Record<string, number>> | undefined): Record<string, unknown> {
  const metrics = Object.keys(snapshot ?? {})
    .sort()
    .map((name) => {
      const v = (snapshot as Record<string, number>)[name] as number;
      return { name, value: Number.isFinite(v) ? v : 0 };
    });
  return metrics.length === 0 ? {} : { metrics };
}


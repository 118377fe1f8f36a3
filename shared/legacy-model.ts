/**
 * Mesos' legacy JSON models: the shapes of the endpoints that predate the v1 API (an agent's
 * `/state`, the master's `/master/state`, `/files/browse`), which Mesos' web UI, its Python CLI,
 * Mesos-DNS and the exporters read. They are not the v1 messages: resources are an object of
 * sums by name (`{"cpus": 0.5, "mem": 64, "gpus": 0, "disk": 0, "ports": "[31000-31000]"}`),
 * attributes an object by name, ids bare strings, labels a list, a file's mode a string like
 * `-rw-r--r--`. The facts of each shape (field names, which fields are always there) are Mesos'
 * `model()` and `json()` functions of src/common/http.cpp; the code is Drydock's. Pure.
 */

import type { Attribute, Resource, TaskState } from './mesos.js';

type Json = Record<string, unknown>;

/** A range list as Mesos prints it: `[31000-32000, 33000-33010]`. */
export function rangesText(ranges: ReadonlyArray<{ begin: number; end: number }>): string {
  return `[${ranges.map((r) => `${r.begin}-${r.end}`).join(', ')}]`;
}

/** A set as Mesos prints it: `{a, b}`. */
export function setText(items: readonly string[]): string {
  return `{${items.join(', ')}}`;
}

/** A resource as Drydock may carry it: its role, a revocable marker, an allocation (passed through from the master). */
type AnyResource = Resource & { revocable?: unknown; allocation_info?: { role?: string } };

/**
 * Resources as one object: scalars summed by name (cpus, gpus, mem and disk always present,
 * 0 when absent), ranges and sets merged by name and printed; revocable ones under
 * `<name>_revocable`.
 */
export function resourcesModel(resources: readonly AnyResource[]): Json {
  const scalars = new Map<string, number>([['cpus', 0], ['gpus', 0], ['mem', 0], ['disk', 0]]);
  const ranges = new Map<string, Array<{ begin: number; end: number }>>();
  const sets = new Map<string, string[]>();
  for (const r of resources) {
    const name = r.revocable !== undefined ? `${r.name}_revocable` : r.name;
    if (r.type === 'SCALAR') scalars.set(name, round3((scalars.get(name) ?? 0) + (r.scalar?.value ?? 0)));
    else if (r.type === 'RANGES') ranges.set(name, [...(ranges.get(name) ?? []), ...(r.ranges?.range ?? [])]);
    else if (r.type === 'SET') sets.set(name, [...(sets.get(name) ?? []), ...(r.set?.item ?? [])]);
  }
  const out: Json = {};
  for (const [name, v] of scalars) out[name] = v;
  for (const [name, v] of ranges) out[name] = rangesText(mergeRanges(v));
  for (const [name, v] of sets) out[name] = setText([...new Set(v)].sort());
  return out;
}

/** Mesos' scalars are fixed point with three decimals: 0.1 + 0.2 is 0.3 there, and here. */
function round3(v: number): number {
  return Math.round(v * 1000) / 1000;
}

/** Sorted, overlapping and adjacent ranges merged (Mesos' Value::Ranges arithmetic). */
function mergeRanges(list: ReadonlyArray<{ begin: number; end: number }>): Array<{ begin: number; end: number }> {
  const sorted = [...list].sort((a, b) => a.begin - b.begin);
  const out: Array<{ begin: number; end: number }> = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.begin <= last.end + 1) last.end = Math.max(last.end, r.end);
    else out.push({ begin: r.begin, end: r.end });
  }
  return out;
}

/** Attributes as one object by name: a scalar's number, a text's string, ranges and sets printed. */
export function attributesModel(attributes: readonly Attribute[]): Json {
  const out: Json = {};
  for (const a of attributes) {
    if (a.type === 'SCALAR') out[a.name] = a.scalar?.value ?? 0;
    else if (a.type === 'RANGES') out[a.name] = rangesText(a.ranges?.range ?? []);
    else if (a.type === 'SET') out[a.name] = setText(a.set?.item ?? []);
    else out[a.name] = a.text?.value ?? '';
  }
  return out;
}

/** Labels as Mesos' legacy endpoints write them: the list itself, not `{"labels": [...]}`. */
export function labelsModel(labels: { labels?: ReadonlyArray<{ key: string; value?: string }> } | undefined): Json[] {
  return (labels?.labels ?? []).map((l) => (l.value === undefined ? { key: l.key } : { key: l.key, value: l.value }));
}

/** What a task status carries into the legacy model. */
export interface StatusFacts {
  readonly state: TaskState;
  readonly timestamp: number;
  readonly labels?: { labels?: ReadonlyArray<{ key: string; value?: string }> } | undefined;
  readonly container_status?: unknown;
  readonly healthy?: boolean | undefined;
}

/** A task status: state and timestamp, then labels, container status and health when set. */
export function statusModel(s: StatusFacts): Json {
  const out: Json = { state: s.state, timestamp: s.timestamp };
  if (s.labels !== undefined) out['labels'] = labelsModel(s.labels);
  if (s.container_status !== undefined) out['container_status'] = s.container_status;
  if (s.healthy !== undefined) out['healthy'] = s.healthy;
  return out;
}

/** What a task carries into the legacy model (a Task, or a TaskInfo with its state). */
export interface TaskFacts {
  readonly id: string;
  readonly name: string;
  readonly frameworkId: string;
  /** '' for a command task: Mesos' Task has no executor_id then, and its model prints the empty value. */
  readonly executorId: string;
  readonly agentId: string;
  readonly state: TaskState;
  readonly resources: readonly Resource[];
  /** The role its resources are allocated to. */
  readonly role: string;
  readonly statuses: readonly StatusFacts[];
  /** Task.user: the command's user, when it set one. */
  readonly user?: string | undefined;
  readonly labels?: { labels?: ReadonlyArray<{ key: string; value?: string }> } | undefined;
  readonly discovery?: unknown;
  readonly container?: unknown;
  readonly healthCheck?: unknown;
}

/** A task, as Mesos' `json(Task)`: ids as strings, resources as one object, the optional fields when set. */
export function taskModel(t: TaskFacts): Json {
  const out: Json = {
    id: t.id,
    name: t.name,
    framework_id: t.frameworkId,
    executor_id: t.executorId,
    slave_id: t.agentId,
    state: t.state,
    resources: resourcesModel(t.resources),
    role: t.role,
    statuses: t.statuses.map(statusModel),
  };
  if (t.user !== undefined) out['user'] = t.user;
  if (t.labels !== undefined) out['labels'] = labelsModel(t.labels);
  if (t.discovery !== undefined) out['discovery'] = t.discovery;
  if (t.container !== undefined) out['container'] = t.container;
  if (t.healthCheck !== undefined) out['health_check'] = t.healthCheck;
  return out;
}

/** The role a task's resources are allocated to: their allocation_info, else their reservation, else the framework's role. */
export function resourcesRole(resources: readonly AnyResource[], frameworkRole: string): string {
  const first = resources[0];
  return first?.allocation_info?.role ?? (first?.role !== undefined && first.role !== '*' ? first.role : frameworkRole);
}

/** A file's facts, from stat(2): what `/files/browse` and LIST_FILES print. */
export interface FileFacts {
  /** The virtual path it was asked by, joined with its name. */
  readonly path: string;
  readonly nlink: number;
  readonly size: number;
  readonly mtimeSecs: number;
  /** st_mode: type and permission bits. */
  readonly mode: number;
  /** The owner's and group's names (their numbers when the host has no name for them). */
  readonly uid: string;
  readonly gid: string;
}

const S_IFMT = 0o170000;
const FILE_TYPES: ReadonlyMap<number, string> = new Map([
  [0o100000, '-'],
  [0o040000, 'd'],
  [0o020000, 'c'],
  [0o060000, 'b'],
  [0o010000, 'p'],
  [0o120000, 'l'],
  [0o140000, 's'],
]);

/** `ls -l`'s mode: the type letter, then rwx for owner, group and others (Mesos ignores set-id and sticky bits). */
export function modeText(mode: number): string {
  const bits = 'rwxrwxrwx';
  let out = FILE_TYPES.get(mode & S_IFMT) ?? '-';
  for (let i = 0; i < 9; i++) out += (mode & (1 << (8 - i))) !== 0 ? bits[i] : '-';
  return out;
}

/** A file as `/files/browse` lists it: mtime in whole seconds, mode as text. */
export function fileModel(f: FileFacts): Json {
  return { path: f.path, nlink: f.nlink, size: f.size, mtime: Math.trunc(f.mtimeSecs), mode: modeText(f.mode), uid: f.uid, gid: f.gid };
}

/** A file as LIST_FILES answers it (v1 FileInfo): mtime as a TimeInfo of whole seconds, mode as st_mode. */
export function fileInfo(f: FileFacts): Json {
  return { path: f.path, nlink: f.nlink, size: f.size, mtime: { nanoseconds: BigInt(Math.trunc(f.mtimeSecs)) * 1_000_000_000n }, mode: f.mode, uid: f.uid, gid: f.gid };
}

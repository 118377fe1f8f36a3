/**
 * `drydock pod`'s decisions, as pure functions: the request each command sends to a service
 * scheduler's `/v1/pod`, reading its answers, the status table, and what each answer means
 * (text, exit status). The shell is pod-command.ts.
 *
 * A pod instance is one copy of a pod type (`hello-0`, `hello-1`); its tasks are named
 * `<instance>-<task>` and their status is the Mesos TaskState without `TASK_`.
 */

import { formatJson } from './client.js';
import type { Checked } from './maintenance.js';
import { renderTable } from './table.js';
import {
  answerJson,
  decodeNames,
  failurePrinted,
  isObj,
  malformedLine,
  oneLine,
  pathSegment,
  printedError,
  printedOk,
  readArray,
  readObject,
  readString,
  type Answer,
  type ApiRequest,
  type Obj,
  type Printed,
  type Target,
} from './service-api.js';

/** What `POST /v1/pod/<name>/<action>` does: restart the tasks in place, or replace them (relaunched anew). */
export type PodAction = 'restart' | 'replace';

/** `GET /v1/pod`. */
export const POD_LIST_REQUEST: ApiRequest = { method: 'GET', path: '/v1/pod' };

/** `GET /v1/pod/status`, or `GET /v1/pod/<name>/status` for one instance. */
export function podStatusRequest(pod: string | undefined): Checked<ApiRequest> {
  if (pod === undefined) return { ok: true, value: { method: 'GET', path: '/v1/pod/status' } };
  const seg = pathSegment('pod', pod);
  return seg.ok ? { ok: true, value: { method: 'GET', path: `/v1/pod/${seg.value}/status` } } : seg;
}

/** `GET /v1/pod/<name>/info`. */
export function podInfoRequest(pod: string): Checked<ApiRequest> {
  const seg = pathSegment('pod', pod);
  return seg.ok ? { ok: true, value: { method: 'GET', path: `/v1/pod/${seg.value}/info` } } : seg;
}

/** `POST /v1/pod/<name>/restart|replace`. */
export function podActionRequest(action: PodAction, pod: string): Checked<ApiRequest> {
  const seg = pathSegment('pod', pod);
  return seg.ok ? { ok: true, value: { method: 'POST', path: `/v1/pod/${seg.value}/${action}` } } : seg;
}

/** One task of a pod instance, as `/v1/pod/.../status` lists it. */
export interface PodTaskView {
  readonly name: string;
  readonly id: string;
  /** The Mesos TaskState without `TASK_`: RUNNING, STAGING, FINISHED, KILLED… */
  readonly status: string;
  /** The agent's hostname, once the task was placed. */
  readonly hostname?: string;
  /** The readiness check's verdict; absent for a task that has none. */
  readonly ready?: boolean;
}

export interface PodInstanceView {
  readonly name: string;
  readonly tasks: readonly PodTaskView[];
}

/** `GET /v1/pod/status`: every instance of every pod type of the service. */
export interface ServiceStatusView {
  readonly service: string;
  readonly pods: ReadonlyArray<{ readonly name: string; readonly instances: readonly PodInstanceView[] }>;
}

/** What restart and replace answer: the instance and the tasks it acts on. */
export interface PodActionView {
  readonly pod: string;
  readonly tasks: readonly string[];
}

function decodeTask(v: unknown, where: string): PodTaskView {
  const t = readObject(v, where);
  const hostname = t['hostname'];
  const ready = t['ready'];
  if (hostname !== undefined && typeof hostname !== 'string') throw new Error(`${where}.hostname is not a string`);
  if (ready !== undefined && typeof ready !== 'boolean') throw new Error(`${where}.ready is not a boolean`);
  return {
    name: readString(t, 'name', where),
    id: readString(t, 'id', where),
    status: readString(t, 'status', where),
    ...(hostname === undefined ? {} : { hostname }),
    ...(ready === undefined ? {} : { ready }),
  };
}

function decodeInstanceObj(o: Obj, where: string): PodInstanceView {
  return { name: readString(o, 'name', where), tasks: readArray(o, 'tasks', where, true).map((t, i) => decodeTask(t, `${where}.tasks[${i}]`)) };
}

function checked<T>(read: () => T): Checked<T> {
  try {
    return { ok: true, value: read() };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/** The one reader of `GET /v1/pod/<name>/status`. */
export function decodeInstanceStatus(value: unknown): Checked<PodInstanceView> {
  return checked(() => decodeInstanceObj(readObject(value, 'pod'), 'pod'));
}

/** The one reader of `GET /v1/pod/status`. */
export function decodeServiceStatus(value: unknown): Checked<ServiceStatusView> {
  return checked(() => {
    const s = readObject(value, 'status');
    return {
      service: readString(s, 'service', 'status', true),
      pods: readArray(s, 'pods', 'status').map((p, i) => {
        const where = `pods[${i}]`;
        const o = readObject(p, where);
        return { name: readString(o, 'name', where), instances: readArray(o, 'instances', where).map((x, j) => decodeInstanceObj(readObject(x, `${where}.instances[${j}]`), `${where}.instances[${j}]`)) };
      }),
    };
  });
}

/** The one reader of restart/replace answers. */
export function decodeAction(value: unknown): Checked<PodActionView> {
  return checked(() => {
    const o = readObject(value, 'answer');
    const tasks = readArray(o, 'tasks', 'answer').map((t, i) => {
      if (typeof t !== 'string') throw new Error(`answer.tasks[${i}] is not a string`);
      return t;
    });
    return { pod: readString(o, 'pod', 'answer'), tasks };
  });
}

/** `GET /v1/pod/<name>/info` is an array of `{info: TaskInfo, status?: TaskStatus}`; only that shape is checked. */
export function decodeInfo(value: unknown): Checked<unknown[]> {
  if (!Array.isArray(value)) return { ok: false, error: 'not an array' };
  const bad = value.findIndex((e) => !isObj(e) || !isObj(e['info']) || (e['status'] !== undefined && !isObj(e['status'])));
  if (bad !== -1) return { ok: false, error: `[${bad}] is not {"info": TaskInfo, "status": TaskStatus}` };
  return { ok: true, value };
}

export const POD_STATUS_HEADER = ['POD', 'TASK', 'STATUS', 'READY', 'HOST', 'TASK ID'] as const;

/**
 * The status table's rows: one per task, in the scheduler's order. READY is yes/no from the
 * readiness check, `-` for a task without one; an instance with no task yet is one row of `-`.
 */
export function podStatusRows(instances: readonly PodInstanceView[]): string[][] {
  const rows: string[][] = [];
  for (const inst of instances) {
    if (inst.tasks.length === 0) rows.push([oneLine(inst.name), '-', '-', '-', '-', '-']);
    for (const t of inst.tasks) {
      rows.push([
        oneLine(inst.name),
        oneLine(t.name),
        oneLine(t.status),
        t.ready === undefined ? '-' : t.ready ? 'yes' : 'no',
        t.hostname === undefined || t.hostname === '' ? '-' : oneLine(t.hostname),
        oneLine(t.id),
      ]);
    }
  }
  return rows;
}

/** The body of a 200 as JSON and decoded, or the error line for a body that is not what the contract says. */
function read200<T>(at: Target, req: ApiRequest, answer: Answer, decode: (v: unknown) => Checked<T>): { ok: true; value: T; json: unknown } | { ok: false; printed: Printed } {
  if (answer.kind !== 'http' || answer.status !== 200) return { ok: false, printed: failurePrinted(at, req, answer) };
  const value = answerJson(answer.body);
  const decoded = value.ok ? decode(value.value) : value;
  if (!value.ok || !decoded.ok) return { ok: false, printed: printedError(malformedLine(at, req, 200, decoded.ok ? '' : decoded.error)) };
  return { ok: true, value: decoded.value, json: value.value };
}

/** `drydock pod list`: the instance names, one a line (or the JSON array). */
export function podListOutcome(at: Target, answer: Answer, json: boolean): Printed {
  const r = read200(at, POD_LIST_REQUEST, answer, decodeNames);
  if (!r.ok) return r.printed;
  return printedOk(json ? [formatJson(r.json)] : r.value.map(oneLine));
}

/** `drydock pod status [<pod>]`: the table (or the JSON). */
export function podStatusOutcome(at: Target, req: ApiRequest, one: boolean, answer: Answer, json: boolean): Printed {
  const r = read200(at, req, answer, one
    ? (v) => { const i = decodeInstanceStatus(v); return i.ok ? { ok: true as const, value: [i.value] } : i; }
    : (v) => { const s = decodeServiceStatus(v); return s.ok ? { ok: true as const, value: s.value.pods.flatMap((p) => p.instances) } : s; });
  if (!r.ok) return r.printed;
  if (json) return printedOk([formatJson(r.json)]);
  return printedOk([renderTable(POD_STATUS_HEADER, podStatusRows(r.value)).trimEnd()]);
}

/**
 * `drydock pod info <pod>`: the tasks' Mesos TaskInfo and latest TaskStatus, as JSON with or
 * without --json (they are Mesos objects; a table would drop what one looks them up for).
 */
export function podInfoOutcome(at: Target, req: ApiRequest, answer: Answer): Printed {
  const r = read200(at, req, answer, decodeInfo);
  return r.ok ? printedOk([formatJson(r.json)]) : r.printed;
}

/** `drydock pod restart|replace <pod>`: which tasks the scheduler acts on. */
export function podActionOutcome(at: Target, action: PodAction, req: ApiRequest, answer: Answer, json: boolean): Printed {
  const r = read200(at, req, answer, decodeAction);
  if (!r.ok) return r.printed;
  if (json) return printedOk([formatJson(r.json)]);
  const tasks = r.value.tasks.length === 0 ? 'no tasks' : r.value.tasks.map(oneLine).join(', ');
  return printedOk([`${oneLine(r.value.pod)}: ${action} requested for ${tasks}`]);
}

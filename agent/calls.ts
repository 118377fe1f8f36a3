/**
 * THE table of the agent's HTTP edge: one row per operation, whether an agent v1 call
 * (`POST /api/v1` by `type`), a Mesos legacy endpoint (`/slave(1)/state`, `/files/read`, ...),
 * or Drydock's own (`/drydock/v1/containers`). In the spirit of the master's master/api/calls.ts,
 * a row says:
 *  - its name, and how it is reached: its v1 `type`, and/or its HTTP paths (GET and HEAD; the
 *    `/slave(1)` prefix Mesos' web UI uses and the bare path libprocess delegates to it), each
 *    with its decoder (a v1 call's sub-message, or the query -> the row's typed input, or a 400);
 *  - its access: the realm it is authenticated in (`read`: mesos-agent-readonly; `write`:
 *    mesos-agent-readwrite, one audit line per call); an HTTP way may be `open` (no credentials:
 *    the health probes) and may answer while the agent still recovers (the metrics);
 *  - its ACL: the actions, how the object is derived (or that the answer is filtered), and the
 *    check run before the handler;
 *  - its handler: typed input, the agent's port and the caller -> an answer (a value, an empty
 *    200, an error, or bytes it writes itself).
 * Routing, authentication, the recovery gate, authorization, audit, JSON/JSONP encoding and the
 * v1 answer wrapper are derived from the rows in one place (agent/api.ts); no handler decides
 * them. The agent::Call types without a row answer 501.
 *
 * Legacy endpoints whose shape differs from their v1 call (`/state` and GET_STATE, `/flags` and
 * GET_FLAGS, `/metrics/snapshot` and GET_METRICS) are rows of their own with the same ACL.
 */

import { pipeline } from 'node:stream/promises';
import type { ServerResponse } from 'node:http';
import { attributeValues, type AclAction } from '../shared/acls.js';
import { fail, type DrydockError } from '../shared/errors.js';
import { fileInfo, fileModel } from '../shared/legacy-model.js';
import type { AgentInfo, TaskInfo } from '../shared/mesos.js';
import { decodeMessage, DURATION_INFO, message, optional, required } from '../shared/proto.js';
import { MESOS_API_VERSION, DRYDOCK_VERSION } from '../shared/version.js';
import { viewRights } from '../shared/visibility.js';
import type { AgentConfig } from './config.js';
import type { SandboxFiles } from './files.js';
import { attachments, locate, mayReadSandbox, readVirtualPath, SANDBOX_ACTIONS, type Attachment, type VirtualPath } from './sandboxes.js';
import type { Caller } from './security.js';
import { executorName, getExecutors, getFrameworks, legacyState, type AgentSelf, type StateRights } from './state.js';
import type { ExecutorFacts, RunningTask } from './supervisor.js';
import type { GroupUsage, ResourceStatistics } from './usage.js';
import { visibleOwned, visibleTaskLists, type OwnedTask, type TaskLists } from './views.js';

// ---- What a row is ---------------------------------------------------------------------------

/** Every agent::Call type of Mesos 1.12 (names outside it are dropped by the parser, like Mesos' optional enum). */
export const AGENT_CALL_TYPES = [
  'GET_HEALTH', 'GET_FLAGS', 'GET_VERSION', 'GET_METRICS', 'GET_LOGGING_LEVEL', 'SET_LOGGING_LEVEL', 'LIST_FILES',
  'READ_FILE', 'GET_STATE', 'GET_CONTAINERS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_OPERATIONS', 'GET_TASKS',
  'GET_AGENT', 'GET_RESOURCE_PROVIDERS', 'LAUNCH_NESTED_CONTAINER', 'WAIT_NESTED_CONTAINER', 'KILL_NESTED_CONTAINER',
  'REMOVE_NESTED_CONTAINER', 'LAUNCH_NESTED_CONTAINER_SESSION', 'ATTACH_CONTAINER_INPUT', 'ATTACH_CONTAINER_OUTPUT',
  'LAUNCH_CONTAINER', 'WAIT_CONTAINER', 'KILL_CONTAINER', 'REMOVE_CONTAINER', 'ADD_RESOURCE_PROVIDER_CONFIG',
  'UPDATE_RESOURCE_PROVIDER_CONFIG', 'REMOVE_RESOURCE_PROVIDER_CONFIG', 'MARK_RESOURCE_PROVIDER_GONE', 'PRUNE_IMAGES',
  'UNKNOWN',
] as const;

export type AgentCallType = (typeof AGENT_CALL_TYPES)[number];

/** A decoder's outcome: the row's input, or the 400 to answer. */
export type Decoded<I> = { ok: true; value: I } | { ok: false; error: DrydockError };

/** What a handler answers; the edge encodes values, errors and empty answers. */
export type AgentAnswer =
  /** A value: a v1 call wraps it in its Response (`{type, <type in lower case>: value}`); an HTTP way writes it as JSON or JSONP. */
  | { kind: 'value'; value: unknown }
  /** 200 with an empty body (a v1 call that changes state). */
  | { kind: 'done' }
  | { kind: 'error'; error: DrydockError }
  /** The handler writes the answer itself: Prometheus text, a download. */
  | { kind: 'raw'; write: (res: ServerResponse, method: string) => void | Promise<void> };

/** The realm a row is authenticated in: read-only calls and endpoints, or calls that may change state. */
export type RowAccess = 'read' | 'write';

/** How a row is reached as an agent v1 call. */
export interface V1Way<I> {
  readonly type: AgentCallType;
  /** The call's body (its sub-message under the type's name) -> the input; none: no input. */
  readonly decode?: (call: Readonly<Record<string, unknown>>) => Decoded<I>;
}

/** How a row is reached over HTTP: GET and HEAD on its paths (any other method: 405 naming GET). */
export interface HttpWay<I> {
  /** Canonical paths (shared/paths.ts), `/slave(1)/...` and the bare one libprocess delegates. */
  readonly paths: readonly string[];
  /** The value as JSON, as JSON or JSONP (`?jsonp=<callback>`), an empty 200, or written by the handler. */
  readonly answer: 'json' | 'jsonp' | 'empty' | 'raw';
  /** No credentials asked, none checked (health probes). */
  readonly open?: true;
  /** Answered while the agent recovers its checkpoint (else 503): what an operator graphs. */
  readonly whileRecovering?: true;
  /** The query -> the input. */
  readonly decode?: (query: URLSearchParams) => Decoded<I>;
}

/** What a check and a handler work with. */
export interface RowContext {
  readonly caller: Caller;
  readonly port: AgentPort;
}

/** How a row is authorized. */
export interface Acl<I> {
  /** The ACL actions it is decided on (none: anyone the realm lets in). */
  readonly actions: readonly AclAction[];
  /** How the object is derived, or how the answer is filtered, in words. */
  readonly object: string;
  /** Decided before the handler, on the decoded input: the 403 to answer, or undefined. */
  readonly check?: (input: I, ctx: RowContext) => DrydockError | undefined;
}

/** One row. `I`: the decoded input. */
export interface Row<I = unknown> {
  readonly name: string;
  readonly summary: string;
  readonly access: RowAccess;
  readonly v1?: V1Way<I>;
  readonly http?: ReadonlyArray<HttpWay<I>>;
  readonly acl: Acl<I>;
  readonly handle: (input: I, ctx: RowContext) => AgentAnswer | Promise<AgentAnswer>;
}

/** What the rows read of the agent and the few things they may do: the agent implements it (agent/agent.ts). */
export interface AgentPort {
  readonly config: AgentConfig;
  /** The agent's own facts, as /state and GET_AGENT print them. */
  self(): AgentSelf;
  taskLists(): TaskLists<OwnedTask>;
  /** Every task as its command executor (agent/supervisor.ts). */
  executors(): ExecutorFacts[];
  running(): RunningTask[];
  /** Measures the process groups of `pids` (agent/usage.ts). */
  usage(pids: readonly number[]): Promise<Map<number, GroupUsage>>;
  /** `/metrics/snapshot`'s values, and the Prometheus text. */
  readonly metrics: { snapshot(): Record<string, number>; sendPrometheus(res: ServerResponse): Promise<void> };
  loggingLevel(): number;
  /** SET_LOGGING_LEVEL, decoded and authorized. */
  setLoggingLevel(level: number, durationNs: number, principal: string | undefined): void;
  readonly files: SandboxFiles;
}

// ---- Helpers of the rows ---------------------------------------------------------------------------

function row<I = undefined>(r: Row<I>): Row {
  return r as unknown as Row;
}

const value = (v: unknown): AgentAnswer => ({ kind: 'value', value: v });
const refusal = (error: DrydockError): AgentAnswer => ({ kind: 'error', error });
const NO_ACL = { actions: [], object: 'none' } as const;

/** A filtered answer: objects the caller may not view are left out (views never 403). */
function filtered(actions: readonly AclAction[], object: string): Acl<never> {
  return { actions, object: `filtered answer: ${object}` };
}

/** One action on one object that does not depend on the input. */
function on(action: AclAction, object: string, of: () => string | undefined): Acl<unknown> {
  return { actions: [action], object, check: (_input, { caller }) => caller.check(action, of()) };
}

/** A path as the agent answers it: `/slave(1)<path>` (what Mesos' web UI asks) and the bare `<path>`. */
function agentPaths(path: string): readonly string[] {
  return [`/slave(1)${path}`, path];
}

/** The caller's view rights on the agent's frameworks, executors and tasks (none: no ACLs, nothing filtered). */
function stateRights(caller: Caller): StateRights {
  const rights = viewRights(caller);
  if (rights === undefined) return { flags: true };
  return { frameworks: rights.frameworks, executors: caller.approver('view_executors'), tasks: rights.tasks, flags: caller.check('view_flags', undefined) === undefined };
}

/** The Mesos version /state prints, and Drydock's release as its git tag (as the master's GET_VERSION). */
export function buildFacts(builtMs: number | undefined): Record<string, string | number> {
  const build: Record<string, string | number> = { version: MESOS_API_VERSION, git_tag: `drydock-${DRYDOCK_VERSION}` };
  if (builtMs !== undefined) {
    build['build_date'] = new Date(builtMs).toISOString().replace('T', ' ').slice(0, 19);
    build['build_time'] = Math.floor(builtMs / 1000);
  }
  build['build_user'] = 'drydock';
  return build;
}

/** GET_AGENT: this agent's AgentInfo, and the drain it is carrying out. */
function getAgent(self: AgentSelf): Record<string, unknown> {
  const info: AgentInfo = { hostname: self.hostname, port: self.port, resources: [...self.resources], attributes: [...self.attributes] };
  if (self.agentId !== undefined) info.id = { value: self.agentId };
  const out: Record<string, unknown> = { agent_info: info };
  if (self.drain !== undefined) {
    out['drain_config'] = self.drain.config;
    out['estimated_drain_start_time'] = { nanoseconds: BigInt(Math.trunc(self.drain.receivedMs)) * 1_000_000n };
  }
  return out;
}

/** The agent as view_agents sees it (the master's object: id, hostname, ip, attributes). */
function agentObject(port: AgentPort): { agentId: string | undefined; hostname: string; ip: string; attributes: Record<string, string> } {
  const self = port.self();
  return { agentId: self.agentId, hostname: self.hostname, ip: port.config.ip, attributes: attributeValues(port.config.attributes) };
}

/** A task's allocation as Mesos' statistics print limits: cpus, and mem in bytes. */
function limits(task: TaskInfo): Pick<ResourceStatistics, 'cpus_limit' | 'mem_limit_bytes'> {
  const scalar = (name: string): number | undefined => {
    const found = task.resources.filter((r) => r.name === name && r.type === 'SCALAR');
    return found.length === 0 ? undefined : found.reduce((a, r) => a + (r.scalar?.value ?? 0), 0);
  };
  const out: Pick<ResourceStatistics, 'cpus_limit' | 'mem_limit_bytes'> = {};
  const cpus = scalar('cpus');
  const mem = scalar('mem');
  if (cpus !== undefined) out.cpus_limit = cpus;
  if (mem !== undefined) out.mem_limit_bytes = Math.round(mem * 1024 * 1024);
  return out;
}

/** The running tasks the caller may view (view_tasks, as GET_TASKS), each with its usage (a group that is gone is left out). */
async function measured(ctx: RowContext): Promise<Array<{ r: RunningTask; usage: GroupUsage | undefined }>> {
  const running = visibleOwned(ctx.port.running(), viewRights(ctx.caller)?.tasks);
  const usage = await ctx.port.usage(running.map((r) => r.pid));
  return running.map((r) => ({ r, usage: usage.get(r.pid) }));
}

// ---- Sandboxes ---------------------------------------------------------------------------------------

/** A files request: the path as read, and for reads the offset and length. */
interface FilesInput {
  readonly path: VirtualPath;
  readonly offset: number;
  readonly length: number | undefined;
  /** `/files/read?offset=-1`: only the size is asked (Mesos' pailer does this first). */
  readonly sizeOnly: boolean;
}

/** `path=` of a files query (Mesos: missing or empty is a 400), read as a virtual path. */
function queryPath(q: URLSearchParams): Decoded<VirtualPath> {
  const path = q.get('path');
  if (path === null || path === '') return { ok: false, error: fail('FILES_PATH_MISSING') };
  const read = readVirtualPath(path);
  return read.ok ? { ok: true, value: read.path } : read;
}

/** `offset=` / `length=` as Mesos reads them: a whole number, -1 allowed; absent: -1. */
function queryNumber(q: URLSearchParams, what: 'offset' | 'length'): Decoded<number> {
  const text = q.get(what);
  if (text === null) return { ok: true, value: -1 };
  if (!/^[+-]?\d+$/.test(text.trim())) return { ok: false, error: fail('FILES_NUMBER_INVALID', what, text) };
  const n = Number(text.trim());
  if (n < -1) return { ok: false, error: fail('FILES_NUMBER_NEGATIVE', what, text.trim()) };
  // Past 2^53 no file reaches: read as "beyond the end".
  return { ok: true, value: Number.isSafeInteger(n) ? n : Number.MAX_SAFE_INTEGER };
}

/** `/files/browse` and `/files/download`: the path alone. */
function pathQuery(q: URLSearchParams): Decoded<FilesInput> {
  const path = queryPath(q);
  return path.ok ? { ok: true, value: { path: path.value, offset: 0, length: undefined, sizeOnly: false } } : path;
}

/** `/files/read`: Mesos' rules: offset -1 (or none) asks for the size only; length -1 (or none) reads to the end. */
function readQuery(q: URLSearchParams): Decoded<FilesInput> {
  const path = queryPath(q);
  if (!path.ok) return path;
  const offset = queryNumber(q, 'offset');
  if (!offset.ok) return offset;
  const length = queryNumber(q, 'length');
  if (!length.ok) return length;
  return { ok: true, value: { path: path.value, offset: Math.max(offset.value, 0), length: length.value === -1 ? undefined : length.value, sizeOnly: offset.value === -1 } };
}

const LIST_FILES = message('agent.Call.ListFiles', () => ({ path: required('string') }));
const READ_FILE = message('agent.Call.ReadFile', () => ({ path: required('string'), offset: required('uint64'), length: optional('uint64') }));

/** LIST_FILES: `list_files.path`. */
function listFilesCall(call: Readonly<Record<string, unknown>>): Decoded<FilesInput> {
  const sub = decodeMessage<{ path: string }>(LIST_FILES, call['list_files'], 'list_files');
  if (!sub.ok) return { ok: false, error: fail('BODY_NOT_CALL', sub.error) };
  const path = readVirtualPath(sub.value.path);
  return path.ok ? { ok: true, value: { path: path.path, offset: 0, length: undefined, sizeOnly: false } } : path;
}

/** READ_FILE: `read_file.path`, `offset` (required), `length` (none: to the end). */
function readFileCall(call: Readonly<Record<string, unknown>>): Decoded<FilesInput> {
  const sub = decodeMessage<{ path: string; offset: number; length?: number }>(READ_FILE, call['read_file'], 'read_file');
  if (!sub.ok) return { ok: false, error: fail('BODY_NOT_CALL', sub.error) };
  const path = readVirtualPath(sub.value.path);
  return path.ok ? { ok: true, value: { path: path.path, offset: sub.value.offset, length: sub.value.length, sizeOnly: false } } : path;
}

/** The sandbox a path is in, if any (agent/sandboxes.ts), from the executors the agent knows now. */
function sandboxOf(input: FilesInput, port: AgentPort): { attachment: Attachment; rest: readonly string[] } | undefined {
  return locate(input.path, attachments(port.executors()));
}

/**
 * The sandbox ACL (access_sandboxes and view_tasks on the executor's user). A path in no sandbox
 * needs none: it is not found (Mesos: nothing attached, nothing to authorize).
 */
const SANDBOX_ACL: Acl<FilesInput> = {
  actions: SANDBOX_ACTIONS,
  object: "the executor's user (its task's command user, else its framework's), of the sandbox the path is in",
  check: (input, { caller, port }) => {
    const found = sandboxOf(input, port);
    return found === undefined ? undefined : mayReadSandbox(caller, found.attachment.executor);
  },
};

/** The file a request reads, located again and checked again by the handler (the table may have changed since the ACL). */
function target(input: FilesInput, ctx: RowContext): { ok: true; value: { attachment: Attachment; rest: readonly string[]; virtual: string } } | { ok: false; error: DrydockError } {
  const found = sandboxOf(input, ctx.port);
  if (found === undefined) return { ok: false, error: fail('FILE_NOT_FOUND', input.path.text) };
  const refused = mayReadSandbox(ctx.caller, found.attachment.executor);
  if (refused !== undefined) return { ok: false, error: refused };
  return { ok: true, value: { ...found, virtual: input.path.text } };
}

/** `Content-Disposition` of a download: the file's name, only characters that need no quoting. */
function disposition(name: string): string {
  const safe = name.replace(/[^A-Za-z0-9._-]/g, '_');
  return `attachment; filename=${safe === '' ? 'file' : safe}`;
}

/** agent::Call.SetLoggingLevel: Mesos' verbosity level and how long it holds. */
const SET_LOGGING_LEVEL = message('agent.Call.SetLoggingLevel', () => ({ level: required('uint32'), duration: required(DURATION_INFO) }));

// ---- The rows ------------------------------------------------------------------------------------------

/** Every row, in routing order. */
export const ROWS: readonly Row[] = [
  // ---- Health, version, flags, metrics, logging ----
  row({
    name: 'GET_HEALTH',
    summary: 'Whether the agent answers. /health is Drydock\'s JSON probe; /slave(1)/health answers as Mesos (an empty 200).',
    access: 'read',
    v1: { type: 'GET_HEALTH' },
    http: [
      { paths: ['/health'], answer: 'json', open: true, whileRecovering: true },
      { paths: ['/slave(1)/health'], answer: 'empty', open: true, whileRecovering: true },
    ],
    acl: NO_ACL,
    handle: () => value({ healthy: true }),
  }),
  row({
    name: 'GET_VERSION',
    summary: 'The Mesos API version Drydock speaks, and its own release as git_tag (as the master answers).',
    access: 'read',
    v1: { type: 'GET_VERSION' },
    acl: NO_ACL,
    handle: (_input, { port }) => value({ version_info: port.self().build }),
  }),
  row({
    name: 'GET_FLAGS',
    summary: 'The flags the agent runs with: name and value.',
    access: 'read',
    v1: { type: 'GET_FLAGS' },
    // view_flags has no object: a principal sees all the flags or none (Mesos).
    acl: on('view_flags', 'none (all the flags or none)', () => undefined),
    handle: (_input, { port }) => value({ flags: port.config.flags.map((f) => ({ name: f.name, value: f.value })) }),
  }),
  row({
    name: 'flags',
    summary: 'The flags as Mesos\' agent /flags writes them: {"flags": {name: value}}.',
    access: 'read',
    http: [{ paths: agentPaths('/flags'), answer: 'jsonp' }],
    acl: on('view_flags', 'none (all the flags or none)', () => undefined),
    handle: (_input, { port }) => value({ flags: Object.fromEntries(port.config.flags.map((f) => [f.name, f.value])) }),
  }),
  row({
    name: 'GET_METRICS',
    summary: '/metrics/snapshot\'s keys as {name, value} pairs.',
    access: 'read',
    v1: { type: 'GET_METRICS' },
    // The same figures as /metrics/snapshot: the same rule.
    acl: on('get_endpoints', "the path '/metrics/snapshot'", () => '/metrics/snapshot'),
    handle: (_input, { port }) => value({ metrics: Object.entries(port.metrics.snapshot()).sort(([a], [b]) => a.localeCompare(b)).map(([name, v]) => ({ name, value: v })) }),
  }),
  row({
    name: 'metrics snapshot',
    summary: 'Mesos\' flat JSON of "slave/...": number, keys sorted (JSONP for the web UI).',
    access: 'read',
    http: [{ paths: ['/metrics/snapshot'], answer: 'jsonp', whileRecovering: true }],
    acl: on('get_endpoints', "the path '/metrics/snapshot'", () => '/metrics/snapshot'),
    handle: (_input, { port }) => {
      const values = port.metrics.snapshot();
      const sorted: Record<string, number> = {};
      for (const key of Object.keys(values).sort()) sorted[key] = Number.isFinite(values[key]) ? (values[key] as number) : 0;
      return value(sorted);
    },
  }),
  row({
    name: 'metrics',
    summary: 'The same figures and more in the Prometheus text format.',
    access: 'read',
    http: [{ paths: ['/metrics'], answer: 'raw', whileRecovering: true }],
    acl: on('get_endpoints', "the path '/metrics'", () => '/metrics'),
    handle: (_input, { port }) => ({ kind: 'raw', write: (res) => port.metrics.sendPrometheus(res) }),
  }),
  row({
    name: 'GET_LOGGING_LEVEL',
    summary: 'The verbosity SET_LOGGING_LEVEL set (0: --log_level).',
    access: 'read',
    v1: { type: 'GET_LOGGING_LEVEL' },
    acl: NO_ACL,
    handle: (_input, { port }) => value({ level: port.loggingLevel() }),
  }),
  row<Readonly<Record<string, unknown>>>({
    name: 'SET_LOGGING_LEVEL',
    summary: 'Debug lines for a while: level 1 and up is debug, for `duration`, then --log_level again.',
    access: 'write',
    // The sub-message is decoded by the handler, after the ACL: a refused caller learns nothing from its validation.
    v1: { type: 'SET_LOGGING_LEVEL', decode: (call) => ({ ok: true, value: call }) },
    acl: on('set_log_level', 'none (ANY or NONE)', () => undefined),
    handle: (call, { port, caller }) => {
      const sub = decodeMessage<{ level: number; duration: { nanoseconds: number } }>(SET_LOGGING_LEVEL, call['set_logging_level'], 'set_logging_level');
      if (!sub.ok) return refusal(fail('BODY_NOT_CALL', sub.error));
      const { level, duration } = sub.value;
      if (duration.nanoseconds < 0) return refusal(fail('AGENT_CALL_INVALID', "Expecting 'set_logging_level.duration' to be non-negative"));
      port.setLoggingLevel(level, duration.nanoseconds, caller.principal);
      return { kind: 'done' };
    },
  }),

  // ---- The agent, its tasks, executors and frameworks ----
  row({
    name: 'GET_AGENT',
    summary: 'This agent\'s AgentInfo, and the drain it is carrying out.',
    access: 'read',
    v1: { type: 'GET_AGENT' },
    acl: { actions: ['view_agents'], object: 'this agent (id, hostname, ip, attributes)', check: (_input, { caller, port }) => caller.check('view_agents', agentObject(port)) },
    handle: (_input, { port }) => value(getAgent(port.self())),
  }),
  row({
    name: 'GET_TASKS',
    summary: 'The tasks: pending, queued (none), launched, terminated (update not yet acknowledged), completed.',
    access: 'read',
    v1: { type: 'GET_TASKS' },
    acl: filtered(['view_tasks'], "each task by its user, else its framework's"),
    handle: (_input, { port, caller }) => value(visibleTaskLists(port.taskLists(), viewRights(caller)?.tasks)),
  }),
  row({
    name: 'GET_FRAMEWORKS',
    summary: 'The frameworks with tasks here (active), and those whose tasks all completed.',
    access: 'read',
    v1: { type: 'GET_FRAMEWORKS' },
    acl: filtered(['view_frameworks'], "each framework by its user"),
    handle: (_input, { port, caller }) => value(getFrameworks(port.executors(), stateRights(caller))),
  }),
  row({
    name: 'GET_EXECUTORS',
    summary: 'Each task\'s command executor (its id is the task\'s), live and completed.',
    access: 'read',
    v1: { type: 'GET_EXECUTORS' },
    acl: filtered(['view_frameworks', 'view_executors'], "each framework by its user, each executor by its task's user"),
    handle: (_input, { port, caller }) => value(getExecutors(port.executors(), stateRights(caller))),
  }),
  row({
    name: 'GET_STATE',
    summary: 'GET_TASKS, GET_EXECUTORS and GET_FRAMEWORKS in one answer.',
    access: 'read',
    v1: { type: 'GET_STATE' },
    acl: filtered(['view_tasks', 'view_executors', 'view_frameworks'], 'as GET_TASKS, GET_EXECUTORS and GET_FRAMEWORKS'),
    handle: (_input, { port, caller }) => {
      const rights = stateRights(caller);
      const executors = port.executors();
      return value({ get_tasks: visibleTaskLists(port.taskLists(), rights.tasks), get_executors: getExecutors(executors, rights), get_frameworks: getFrameworks(executors, rights) });
    },
  }),
  row({
    name: 'state',
    summary: 'Mesos\' agent /state: the agent, its resources, flags, frameworks with their executors (each with its sandbox `directory`) and tasks.',
    access: 'read',
    http: [{ paths: agentPaths('/state'), answer: 'jsonp' }],
    acl: filtered(['view_frameworks', 'view_executors', 'view_tasks', 'view_flags'], 'frameworks, executors and tasks by their user; the flags only with view_flags'),
    handle: (_input, { port, caller }) => value(legacyState(port.self(), port.executors(), stateRights(caller))),
  }),
  row({
    name: 'GET_OPERATIONS',
    summary: 'Operations on resources: none (Drydock has no offer operations on agents).',
    access: 'read',
    v1: { type: 'GET_OPERATIONS' },
    acl: NO_ACL,
    handle: () => value({}),
  }),
  row({
    name: 'GET_RESOURCE_PROVIDERS',
    summary: 'Resource providers: none (Drydock has none).',
    access: 'read',
    v1: { type: 'GET_RESOURCE_PROVIDERS' },
    acl: NO_ACL,
    handle: () => value({ resource_providers: [] }),
  }),

  // ---- Containers and their usage ----
  row({
    name: 'GET_CONTAINERS',
    summary: 'Each running task\'s container, with its pid and resource statistics (Mesos\' fields only).',
    access: 'read',
    v1: { type: 'GET_CONTAINERS' },
    acl: filtered(['view_tasks'], "each container by its task's user"),
    handle: async (_input, ctx) =>
      value({
        containers: (await measured(ctx)).map(({ r, usage }) => ({
          framework_id: { value: r.frameworkId },
          executor_id: { value: r.taskId },
          executor_name: executorName(r.task),
          container_id: { value: r.containerId },
          container_status: { container_id: { value: r.containerId }, executor_pid: r.pid },
          ...(usage === undefined ? {} : { resource_statistics: { ...usage.statistics, ...limits(r.task) } }),
        })),
      }),
  }),
  row({
    name: 'monitor statistics',
    summary: 'Mesos\' /monitor/statistics: each running executor with its ResourceStatistics (the web UI\'s agent pages poll it).',
    access: 'read',
    http: [{ paths: agentPaths('/monitor/statistics'), answer: 'jsonp' }],
    acl: {
      actions: ['get_endpoints', 'view_tasks'],
      object: "the path '/monitor/statistics' (Mesos' rule); then each executor filtered by its task's user, as GET_CONTAINERS",
      check: (_input, { caller }) => caller.check('get_endpoints', '/monitor/statistics'),
    },
    handle: async (_input, ctx) =>
      value(
        (await measured(ctx)).flatMap(({ r, usage }) =>
          usage === undefined ? [] : [{ executor_id: r.taskId, executor_name: executorName(r.task), framework_id: r.frameworkId, source: r.taskId, statistics: { ...usage.statistics, ...limits(r.task) } }],
        ),
      ),
  }),
  row({
    name: 'drydock containers',
    summary: 'Drydock\'s own: each running task with its pid, Mesos\' statistics and the CPU percent Drydock measures (not a Mesos field).',
    access: 'read',
    http: [{ paths: ['/drydock/v1/containers'], answer: 'json' }],
    acl: filtered(['view_tasks'], "each container by its task's user, as GET_CONTAINERS"),
    handle: async (_input, ctx) =>
      value({
        containers: (await measured(ctx)).map(({ r, usage }) => ({
          framework_id: r.frameworkId,
          task_id: r.taskId,
          executor_id: r.taskId,
          container_id: r.containerId,
          pid: r.pid,
          ...(usage === undefined ? {} : { statistics: { ...usage.statistics, ...limits(r.task) }, cpu_usage_percent: usage.cpuPercent }),
        })),
      }),
  }),

  // ---- Sandboxes (Mesos' files API) ----
  row<FilesInput>({
    name: 'LIST_FILES',
    summary: 'The entries of a sandbox directory (v1 FileInfo).',
    access: 'read',
    v1: { type: 'LIST_FILES', decode: listFilesCall },
    acl: SANDBOX_ACL,
    handle: async (input, ctx) => {
      const t = target(input, ctx);
      if (!t.ok) return refusal(t.error);
      const listed = await ctx.port.files.browse(t.value);
      return listed.ok ? value({ file_infos: listed.value.map(fileInfo) }) : refusal(listed.error);
    },
  }),
  row<FilesInput>({
    name: 'browse',
    summary: 'Mesos\' /files/browse: the entries of a sandbox directory, mode as text, mtime in seconds.',
    access: 'read',
    http: [{ paths: ['/files/browse'], answer: 'jsonp', decode: pathQuery }],
    acl: SANDBOX_ACL,
    handle: async (input, ctx) => {
      const t = target(input, ctx);
      if (!t.ok) return refusal(t.error);
      const listed = await ctx.port.files.browse(t.value);
      return listed.ok ? value(listed.value.map(fileModel)) : refusal(listed.error);
    },
  }),
  row<FilesInput>({
    name: 'READ_FILE',
    summary: 'Bytes of a sandbox file from an offset (at most 64 KiB), and its size.',
    access: 'read',
    v1: { type: 'READ_FILE', decode: readFileCall },
    acl: SANDBOX_ACL,
    handle: async (input, ctx) => {
      const t = target(input, ctx);
      if (!t.ok) return refusal(t.error);
      const read = await ctx.port.files.read(t.value, input.offset, input.length);
      return read.ok ? value({ size: read.value.size, data: read.value.data.toString('base64') }) : refusal(read.error);
    },
  }),
  row<FilesInput>({
    name: 'read',
    summary: 'Mesos\' /files/read: {"data", "offset"}; offset=-1 answers the size as the offset; length=-1 reads to the end (at most 64 KiB).',
    access: 'read',
    http: [{ paths: ['/files/read'], answer: 'jsonp', decode: readQuery }],
    acl: SANDBOX_ACL,
    handle: async (input, ctx) => {
      const t = target(input, ctx);
      if (!t.ok) return refusal(t.error);
      const read = await ctx.port.files.read(t.value, input.offset, input.sizeOnly ? 0 : input.length);
      if (!read.ok) return refusal(read.error);
      return value({ data: read.value.data.toString('utf8'), offset: input.sizeOnly ? read.value.size : input.offset });
    },
  }),
  row<FilesInput>({
    name: 'download',
    summary: 'Mesos\' /files/download: the file\'s bytes as an attachment.',
    access: 'read',
    http: [{ paths: ['/files/download'], answer: 'raw', decode: pathQuery }],
    acl: SANDBOX_ACL,
    handle: async (input, ctx) => {
      const t = target(input, ctx);
      if (!t.ok) return refusal(t.error);
      const opened = await ctx.port.files.download(t.value);
      if (!opened.ok) return refusal(opened.error);
      const { handle, size, name } = opened.value;
      return {
        kind: 'raw',
        write: async (res, method) => {
          res.writeHead(200, { 'Content-Type': 'application/octet-stream', 'Content-Disposition': disposition(name), 'Content-Length': size });
          if (size === 0 || method === 'HEAD') {
            await handle.close();
            res.end();
            return;
          }
          // As large as it was when opened: a file still growing (a task's stdout) ends there.
          await pipeline(handle.createReadStream({ start: 0, end: size - 1 }), res).catch(() => res.destroy());
        },
      };
    },
  }),
  row({
    name: 'files debug',
    summary: 'Mesos\' /files/debug: every virtual path and the sandbox directory it serves.',
    access: 'read',
    http: [{ paths: ['/files/debug'], answer: 'jsonp' }],
    acl: {
      actions: ['get_endpoints', ...SANDBOX_ACTIONS],
      object: "the path '/files/debug' (Mesos' rule); then only the sandboxes the caller may read (stricter than Mesos)",
      check: (_input, { caller }) => caller.check('get_endpoints', '/files/debug'),
    },
    handle: (_input, { port, caller }) => {
      const out: Record<string, string> = {};
      for (const [virtual, a] of [...attachments(port.executors())].sort(([x], [y]) => x.localeCompare(y))) if (mayReadSandbox(caller, a.executor) === undefined) out[virtual] = a.directory;
      return value(out);
    },
  }),
];

/** The rows by v1 type. */
export const V1_ROWS: ReadonlyMap<string, Row> = new Map(ROWS.flatMap((r) => (r.v1 === undefined ? [] : [[r.v1.type, r] as const])));

/** The rows' HTTP ways by path. */
export const HTTP_WAYS: ReadonlyMap<string, { row: Row; way: HttpWay<unknown> }> = new Map(ROWS.flatMap((r) => (r.http ?? []).flatMap((way) => way.paths.map((p) => [p, { row: r, way }] as const))));

/** The realm of a v1 call: its row's; a call without a row (501) by its name, GET_* read-only (as the master splits /api/v1). */
export function v1Access(type: string): RowAccess {
  const r = V1_ROWS.get(type);
  if (r !== undefined) return r.access;
  return type.startsWith('GET_') ? 'read' : 'write';
}

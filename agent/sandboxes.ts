/**
 * The sandboxes the files API serves, as Mesos' agent attaches them: each executor's sandbox
 * (a task's, here: `<work_dir>/sandboxes/<framework>/<task>`, which `/state` names as the
 * executor's `directory`) under two virtual paths, the directory itself and
 * `/frameworks/<framework id>/executors/<executor id>/runs/latest` (the executor id of a command
 * task is its task id). A path is looked up by its longest attached prefix; the rest of it is a
 * path inside that sandbox. Nothing else of the host is attached: any other path is not found.
 *
 * Who may read a sandbox: `access_sandboxes`, Mesos' action, and `view_tasks` too (a principal
 * that may not see a framework's tasks may not read what they wrote), both on the executor's
 * user: its task's command user, else its framework's (agent/views.ts ownerOf).
 *
 * Pure: the table is made from the executors the supervisor reports; agent/files.ts reads disk.
 */

import type { AclAction, AclObject } from '../shared/acls.js';
import { fail, type DrydockError } from '../shared/errors.js';
import type { ExecutorFacts } from './supervisor.js';

/** One sandbox under one virtual path. */
export interface Attachment {
  /** The virtual path it is attached as, canonical (`/a/b`, no trailing slash). */
  readonly virtual: string;
  /** The sandbox directory on disk, absolute (the executor's `directory`). */
  readonly directory: string;
  readonly executor: ExecutorFacts;
}

/** A virtual path, read: its canonical text and its segments (none empty, `.` or `..`). */
export interface VirtualPath {
  readonly text: string;
  readonly segments: readonly string[];
}

/** Mesos' virtual path of an executor's latest run. */
export function latestRunPath(frameworkId: string, executorId: string): string {
  return `/frameworks/${frameworkId}/executors/${executorId}/runs/latest`;
}

/**
 * Every sandbox of the executors the agent knows (live, ended, completed and still kept), by
 * virtual path. A later executor of the same path (a task id used again after its executor
 * completed) replaces the earlier one, as Mesos' attach does.
 */
export function attachments(executors: readonly ExecutorFacts[]): Map<string, Attachment> {
  const table = new Map<string, Attachment>();
  for (const e of executors) {
    const directory = canonical(e.sandbox);
    const add = (virtual: string): void => void table.set(virtual, { virtual, directory: e.sandbox, executor: e });
    if (directory !== undefined) add(directory);
    add(latestRunPath(e.frameworkId, e.task.task_id.value));
  }
  return table;
}

/** An absolute path without empty and `.` segments, or undefined when it has `..` or is relative. */
function canonical(path: string): string | undefined {
  const read = readVirtualPath(path);
  return read.ok ? read.path.text : undefined;
}

/**
 * Reads a requested path: absolute, with no `..` and no control character (a NUL would cut a
 * path short); empty segments and `.` are dropped, a trailing slash is not significant. Refused
 * with a 400 that says why, before anything is looked up.
 */
export function readVirtualPath(path: string): { ok: true; path: VirtualPath } | { ok: false; error: DrydockError } {
  if (!path.startsWith('/')) return { ok: false, error: fail('FILES_PATH_INVALID', 'expected an absolute path (a sandbox directory as /state names it, or /frameworks/<id>/executors/<id>/runs/latest)') };
  if (/[\u0000-\u001f\u007f]/.test(path)) return { ok: false, error: fail('FILES_PATH_INVALID', 'the path holds a control character') };
  const segments: string[] = [];
  for (const s of path.split('/')) {
    if (s === '' || s === '.') continue;
    if (s === '..') return { ok: false, error: fail('FILES_PATH_INVALID', "the path holds '..'") };
    segments.push(s);
  }
  return { ok: true, path: { text: `/${segments.join('/')}`, segments } };
}

/** The sandbox a path is in (its longest attached prefix) and the segments below it; undefined: not in any. */
export function locate(path: VirtualPath, table: ReadonlyMap<string, Attachment>): { attachment: Attachment; rest: readonly string[] } | undefined {
  for (let n = path.segments.length; n >= 1; n--) {
    const attachment = table.get(`/${path.segments.slice(0, n).join('/')}`);
    if (attachment !== undefined) return { attachment, rest: path.segments.slice(n) };
  }
  return undefined;
}

/** The checks a caller answers (agent/security.ts Caller). */
export interface SandboxCaller {
  check(action: AclAction, object: AclObject): DrydockError | undefined;
}

/** The actions a sandbox is guarded by, in the order they are asked. */
export const SANDBOX_ACTIONS: readonly AclAction[] = ['access_sandboxes', 'view_tasks'];

/** Undefined when the caller may read the sandbox; else the 403 (naming the first action refused). */
export function mayReadSandbox(caller: SandboxCaller, executor: ExecutorFacts): DrydockError | undefined {
  for (const action of SANDBOX_ACTIONS) {
    const refused = caller.check(action, executor.user);
    if (refused !== undefined) return refused;
  }
  return undefined;
}

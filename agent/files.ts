/**
 * Reading the sandboxes from disk (the I/O of Mesos' files API: `/files/browse`, `/files/read`,
 * `/files/download`, LIST_FILES, READ_FILE), confined to the sandbox a request names
 * (agent/sandboxes.ts decides which one, and who may read it).
 *
 * Confinement. A task owns its sandbox and may put anything there: symlinks to /etc/passwd, to
 * another task's sandbox, FIFOs, device nodes, and it may swap a directory for a symlink while a
 * request is being served. So a path is never trusted as text: it is resolved (realpath) and must
 * lie inside the sandbox's own real path; the file is then opened with O_NOFOLLOW (a last
 * component swapped for a symlink since fails) and O_NONBLOCK (a FIFO cannot hang the agent),
 * and where the descriptor really points (/proc/self/fd) must again be inside the sandbox
 * (catching a directory swapped above it). Only regular files are read and only directories
 * listed; anything else is refused before it is opened. A listing reads its entries through the
 * open directory's descriptor, and follows an entry that is a symlink only when it stays inside.
 *
 * Bounds: a read returns at most MAX_READ_BYTES (Mesos' 16 pages; a client pages through a larger
 * file), a listing at most MAX_LISTING entries; a download streams the file as large as it was
 * when opened.
 */

import { constants, type Stats } from 'node:fs';
import { lstat, open, readdir, readFile, readlink, realpath, stat, type FileHandle } from 'node:fs/promises';
import { basename, join, sep } from 'node:path';
import { fail, type DrydockError } from '../shared/errors.js';
import type { FileFacts } from '../shared/legacy-model.js';
import { parsePasswd } from '../io/passwd.js';
import type { Attachment } from './sandboxes.js';

/** Longest read: Mesos' cap, 16 pages of 4 KiB. */
export const MAX_READ_BYTES = 16 * 4096;

/** Most entries one listing returns (the first by name): a directory of a million files stays an answer of bounded size. */
export const MAX_LISTING = 50_000;

/** How long the owner names read from /etc/passwd and /etc/group are kept. */
const NAMES_TTL_MS = 30_000;

/** What a request reads: a sandbox, the segments below it, and the path as asked (for listings and messages). */
export interface FileTarget {
  readonly attachment: Attachment;
  readonly rest: readonly string[];
  /** The virtual path as read (canonical): what listings are joined to and refusals name. */
  readonly virtual: string;
}

export type FileResult<T> = { ok: true; value: T } | { ok: false; error: DrydockError };

/** A file opened for download: the handle (the caller streams and closes it), its size when opened, its name. */
export interface Download {
  readonly handle: FileHandle;
  readonly size: number;
  readonly name: string;
}

/** Whether `path` is `root` or below it (both real paths). */
export function inside(root: string, path: string): boolean {
  return path === root || path.startsWith(root.endsWith(sep) ? root : `${root}${sep}`);
}

const notFound = (t: FileTarget): FileResult<never> => ({ ok: false, error: fail('FILE_NOT_FOUND', t.virtual) });
const inaccessible = (t: FileTarget): FileResult<never> => ({ ok: false, error: fail('FILES_INACCESSIBLE', t.virtual) });

/** The errno of a failed call. */
function code(e: unknown): string | undefined {
  return (e as NodeJS.ErrnoException).code;
}

/** The sandboxes' files, read safely. One per agent. */
export class SandboxFiles {
  readonly #now: () => number;
  #names: { at: number; users: Map<number, string>; groups: Map<number, string> } | undefined;

  constructor(o: { now: () => number }) {
    this.#now = o.now;
  }

  /**
   * Resolves a target to a real path inside its sandbox, checks its kind, and opens it (read-only,
   * no following, non-blocking), checking again where the descriptor points. `kind`: what may be
   * opened; the refusal for the other kinds says what it is.
   */
  async #open(t: FileTarget, kind: 'file' | 'directory', verb: 'read' | 'download' | 'browse'): Promise<FileResult<{ handle: FileHandle; stats: Stats; root: string }>> {
    let root: string;
    try {
      root = await realpath(t.attachment.directory);
    } catch (e) {
      // The sandbox was never made (a task refused before launch) or is gone.
      if (code(e) === 'ENOENT' || code(e) === 'ENOTDIR') return notFound(t);
      throw e;
    }
    let real: string;
    try {
      real = await realpath(t.rest.length === 0 ? root : join(root, ...t.rest));
    } catch (e) {
      const c = code(e);
      if (c === 'ENOENT' || c === 'ENOTDIR') return notFound(t);
      if (c === 'ELOOP' || c === 'EACCES' || c === 'ENAMETOOLONG') return inaccessible(t);
      throw e;
    }
    if (!inside(root, real)) return inaccessible(t);
    // Its kind before it is opened: a device node is never opened, a FIFO never read.
    let before: Stats;
    try {
      before = await lstat(real);
    } catch (e) {
      if (code(e) === 'ENOENT') return notFound(t);
      throw e;
    }
    const refused = refuseKind(before, kind, verb, t);
    if (refused !== undefined) return refused;
    const flags = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK | (kind === 'directory' ? constants.O_DIRECTORY : 0);
    let handle: FileHandle;
    try {
      handle = await open(real, flags);
    } catch (e) {
      const c = code(e);
      if (c === 'ENOENT') return notFound(t);
      // ELOOP: the last component became a symlink; ENOTDIR: the directory became something else.
      if (c === 'ELOOP' || c === 'ENOTDIR' || c === 'EACCES' || c === 'EISDIR') return inaccessible(t);
      throw e;
    }
    try {
      // A component above it swapped for a symlink between realpath and open shows here.
      const actual = await readlink(`/proc/self/fd/${handle.fd}`);
      const stats = await handle.stat();
      const again = inside(root, actual) ? refuseKind(stats, kind, verb, t) : inaccessible(t);
      if (again !== undefined) {
        await handle.close();
        return again;
      }
      return { ok: true, value: { handle, stats, root } };
    } catch (e) {
      await handle.close();
      throw e;
    }
  }

  /** `/files/browse` and LIST_FILES: the entries of a directory, by name; a file lists as nothing (as Mesos). */
  async browse(t: FileTarget): Promise<FileResult<FileFacts[]>> {
    const opened = await this.#open(t, 'directory', 'browse');
    if (!opened.ok && opened.error.code === 'FILES_NOT_REGULAR' && (await isRegularInside(t))) return { ok: true, value: [] };
    if (!opened.ok) return opened;
    const { handle, root } = opened.value;
    try {
      // Through the descriptor: the directory listed is the one checked, whatever happens to its path.
      const dir = `/proc/self/fd/${handle.fd}`;
      const names = (await readdir(dir)).sort().slice(0, MAX_LISTING);
      const owners = await this.#owners();
      const out: FileFacts[] = [];
      const prefix = t.virtual === '/' ? '' : t.virtual;
      for (const name of names) {
        const facts = await entryStats(join(dir, name), root);
        if (facts === undefined) continue;
        out.push({
          path: `${prefix}/${name}`,
          nlink: facts.nlink,
          size: facts.size,
          mtimeSecs: Math.trunc(facts.mtimeMs / 1000),
          mode: facts.mode,
          uid: owners.users.get(facts.uid) ?? String(facts.uid),
          gid: owners.groups.get(facts.gid) ?? String(facts.gid),
        });
      }
      return { ok: true, value: out };
    } finally {
      await handle.close();
    }
  }

  /**
   * `/files/read` and READ_FILE: up to `length` bytes (none: to the end) from `offset`, at most
   * MAX_READ_BYTES, and the file's size. An offset at or past the end reads nothing.
   */
  async read(t: FileTarget, offset: number, length: number | undefined): Promise<FileResult<{ size: number; data: Buffer }>> {
    const opened = await this.#open(t, 'file', 'read');
    if (!opened.ok) return opened;
    const { handle, stats } = opened.value;
    try {
      const size = stats.size;
      if (offset >= size) return { ok: true, value: { size, data: Buffer.alloc(0) } };
      const want = Math.min(length ?? size - offset, size - offset, MAX_READ_BYTES);
      if (want <= 0) return { ok: true, value: { size, data: Buffer.alloc(0) } };
      const data = Buffer.alloc(want);
      const { bytesRead } = await handle.read(data, 0, want, offset);
      return { ok: true, value: { size, data: data.subarray(0, bytesRead) } };
    } finally {
      await handle.close();
    }
  }

  /** `/files/download`: the file opened, for the caller to stream and close. */
  async download(t: FileTarget): Promise<FileResult<Download>> {
    const opened = await this.#open(t, 'file', 'download');
    if (!opened.ok) return opened;
    return { ok: true, value: { handle: opened.value.handle, size: opened.value.stats.size, name: basename(t.virtual) } };
  }

  /** Owner and group names by number, from /etc/passwd and /etc/group (re-read every NAMES_TTL_MS). */
  async #owners(): Promise<{ users: Map<number, string>; groups: Map<number, string> }> {
    const now = this.#now();
    if (this.#names !== undefined && now - this.#names.at < NAMES_TTL_MS) return this.#names;
    const users = new Map<number, string>();
    const groups = new Map<number, string>();
    try {
      for (const e of parsePasswd(await readFile('/etc/passwd', 'utf8'))) if (!users.has(e.uid)) users.set(e.uid, e.name);
    } catch {
      // No names: numbers are printed instead, as Mesos does for ids it cannot name.
    }
    try {
      for (const [gid, name] of parseGroups(await readFile('/etc/group', 'utf8'))) if (!groups.has(gid)) groups.set(gid, name);
    } catch {
      // As above.
    }
    this.#names = { at: now, users, groups };
    return this.#names;
  }
}

/** group(5) lines: `name:password:gid:members`, as gid -> name. Pure. */
export function parseGroups(text: string): Array<[number, string]> {
  const out: Array<[number, string]> = [];
  for (const line of text.split('\n')) {
    const f = line.split(':');
    if (f.length < 3 || line.startsWith('#')) continue;
    const [name = '', , gid = ''] = f;
    if (name !== '' && /^\d{1,10}$/.test(gid)) out.push([Number(gid), name]);
  }
  return out;
}

/** The refusal for a file of the wrong kind (undefined when it is the kind wanted). */
function refuseKind(s: Stats, kind: 'file' | 'directory', verb: 'read' | 'download' | 'browse', t: FileTarget): FileResult<never> | undefined {
  if (kind === 'directory') return s.isDirectory() ? undefined : { ok: false, error: fail('FILES_NOT_REGULAR', t.virtual) };
  if (s.isFile()) return undefined;
  if (s.isDirectory()) return { ok: false, error: fail('FILES_IS_DIRECTORY', verb === 'download' ? 'download' : 'read') };
  return { ok: false, error: fail('FILES_NOT_REGULAR', t.virtual) };
}

/** Whether a browse target that is no directory is a regular file inside its sandbox (Mesos lists it as nothing). */
async function isRegularInside(t: FileTarget): Promise<boolean> {
  try {
    const root = await realpath(t.attachment.directory);
    const real = await realpath(join(root, ...t.rest));
    return inside(root, real) && (await lstat(real)).isFile();
  } catch {
    return false;
  }
}

/** An entry's stat: its own (lstat), or its target's when it is a symlink that stays inside the sandbox; undefined when it is gone. */
async function entryStats(path: string, root: string): Promise<Stats | undefined> {
  let own: Stats;
  try {
    own = await lstat(path);
  } catch {
    return undefined;
  }
  if (!own.isSymbolicLink()) return own;
  try {
    const target = await realpath(path);
    return inside(root, target) ? await stat(target) : own;
  } catch {
    return own;
  }
}

/**
 * An append-only journal with group commit: the agent checkpoint's one durable file.
 *
 * Each entry is one line, `<crc32 of the JSON, 8 hex digits> <JSON>\n`. Entries appended while
 * the agent handles one round of events (a DRAIN and the hundred kills it decides, a burst of
 * launcher exits, the acknowledgements of one read) are staged in memory and committed together:
 * one write and one fdatasync for all of them, where one file per record cost a write, an fsync
 * and a rename each. What must wait for an entry to be on disk (an update sent, a signal
 * delivered, a launcher started) waits with `afterCommit`, so nothing is ever acted on before
 * it is durable.
 *
 * A round whose entries nothing waits for (an acknowledgement, the pid of a launcher whose
 * TASK_RUNNING already went out, a forgotten task) may be deferred (`deferMs`): it is committed
 * with the next round something waits for, or when the delay is up, whichever comes first. Such
 * an entry was never a condition for acting, so a crash that loses it loses nothing that was
 * acted on: the agent resends an acknowledged update, or finds its launcher in /proc.
 *
 * A crash can leave a torn last line (power lost in the middle of a write). Such a tail was
 * never committed, so nothing was acted on because of it: reading stops before it and the next
 * append truncates it. A damaged line with committed lines after it is corruption, reported
 * with its line number.
 *
 * A commit that fails (a full disk: a write cut short, then ENOSPC) commits nothing: what it
 * wrote is cut off again before the next attempt, its entries stay staged, and what waits for
 * them waits on. It is tried again after `retryMs`, doubling up to `maxRetryMs`, by one timer
 * (entries staged meanwhile join the retry instead of forcing commits of their own), or at once
 * by `commit()` (space came back). `onError` hears each failure with how many in a row,
 * `onRecovered` the first success after them.
 */

import { closeSync, fdatasyncSync, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { crc32 } from 'node:zlib';
import { parseJson } from '../shared/json.js';

/**
 * Where the journal reports its commits (agent/metrics.ts). `now` is a monotonic clock in ms
 * (a wall-clock step must not show up as a slow disk).
 */
export interface JournalInstruments {
  now(): number;
  /** One group commit (write + fdatasync, or a whole rewrite) took `ms`; `ok` false when it threw. */
  onWrite(ms: number, ok: boolean): void;
}

export interface JournalOptions {
  instruments?: JournalInstruments | undefined;
  /** How a commit is scheduled after the first staged entry. Default: setImmediate (after this round of events). */
  schedule?: (fn: () => void) => void;
  /**
   * How long a commit nothing waits for may be put off, to share the fdatasync of the next one
   * something waits for. Default 0: committed after this round of events, as any other.
   */
  deferMs?: number;
  /** A commit failed (disk full, I/O error), the `failures`-th in a row: staged entries are kept and tried again. */
  onError?: (e: Error, failures: number) => void;
  /** A commit succeeded after `failures` that failed in a row. */
  onRecovered?: (failures: number) => void;
  /** Delay before a failed commit is tried again, doubling with each failure in a row. Default 1000 ms. */
  retryMs?: number;
  /** Longest delay between tries of a failed commit. Default 30 s. */
  maxRetryMs?: number;
  /**
   * Asked at each commit: the whole live state as entries (JSON texts), when the file should be
   * rewritten with it instead of appended to (compaction). It must hold every staged change.
   */
  compact?: () => readonly string[] | undefined;
  /** After a rewrite made durable. */
  onRewritten?: () => void;
}

export type JournalRead =
  | { ok: true; entries: unknown[]; validBytes: number; tornTail: boolean }
  | { ok: false; problem: string };

/** One line of the journal. Pure. */
export function encodeEntry(json: string): string {
  return `${crc32(json).toString(16).padStart(8, '0')} ${json}\n`;
}

/**
 * Parses journal text. A bad line is forgiven only at the very end (a torn tail); elsewhere it
 * is corruption. Pure.
 */
export function parseJournal(text: string): JournalRead {
  const entries: unknown[] = [];
  let pos = 0;
  let line = 0;
  while (pos < text.length) {
    line++;
    const nl = text.indexOf('\n', pos);
    const end = nl === -1 ? text.length : nl;
    const raw = text.slice(pos, end);
    const problem = lineProblem(raw, nl === -1);
    if (problem !== undefined) {
      // Only the last line can be torn: bytes after it mean a committed entry follows a bad one.
      const rest = nl === -1 ? '' : text.slice(nl + 1);
      if (rest.length === 0) return { ok: true, entries, validBytes: Buffer.byteLength(text.slice(0, pos)), tornTail: true };
      return { ok: false, problem: `line ${line}: ${problem}` };
    }
    // Exactly: a drain's grace, or an int64 in a task's passthrough field, keeps every digit.
    entries.push(parseJson(raw.slice(9)));
    pos = end + 1;
  }
  return { ok: true, entries, validBytes: Buffer.byteLength(text), tornTail: false };
}

function lineProblem(raw: string, unterminated: boolean): string | undefined {
  if (unterminated) return 'no end of line (torn write)';
  if (raw.length < 10 || raw[8] !== ' ' || !/^[0-9a-f]{8}$/.test(raw.slice(0, 8))) return 'no checksum';
  const json = raw.slice(9);
  if (crc32(json).toString(16).padStart(8, '0') !== raw.slice(0, 8)) return 'checksum mismatch';
  try {
    JSON.parse(json);
  } catch (e) {
    return `not valid JSON (${(e as Error).message})`;
  }
  return undefined;
}

/** Reads a journal file; a missing file reads as empty. */
export function readJournal(path: string): JournalRead {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true, entries: [], validBytes: 0, tornTail: false };
    return { ok: false, problem: `cannot read: ${(e as Error).message}` };
  }
  return parseJournal(text);
}

/** Makes a directory entry (a new or renamed file) durable. */
export function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class Journal {
  readonly path: string;
  readonly #o: JournalOptions;
  #fd: number | undefined;
  #size: number;
  /** Encoded lines staged since the last commit. */
  #staged: string[] = [];
  /** Sequence numbers: of the last entry staged, and of the last one on disk. */
  #stagedSeq = 0;
  #durableSeq = 0;
  /** Waiting for entries up to `seq` to be durable, in the order they were asked. */
  #waiters: Array<{ seq: number; fn: () => void }> = [];
  #scheduled = false;
  /** A deferred commit's timer: staged entries nothing waits for yet. */
  #deferred: NodeJS.Timeout | undefined;
  /** Commits that failed in a row (0: the last one succeeded), and the one timer that tries again. */
  #failures = 0;
  #retry: NodeJS.Timeout | undefined;
  #closed = false;

  /** `validBytes`: how much of the existing file is good (from readJournal); anything after it is cut. */
  constructor(path: string, validBytes: number, options: JournalOptions = {}) {
    this.path = path;
    this.#o = options;
    this.#size = validBytes;
  }

  /** Bytes in the file, committed entries only. */
  get size(): number {
    return this.#size;
  }

  /** Entries staged and not yet committed. */
  get staged(): number {
    return this.#staged.length;
  }

  /** Commits that failed in a row: 0 when the last one succeeded (or none was needed). */
  get failures(): number {
    return this.#failures;
  }

  /** Stages one entry (JSON text); returns its sequence number. The commit follows this round of events. */
  append(json: string): number {
    if (this.#closed) throw new Error(`journal ${this.path} is closed`);
    this.#staged.push(encodeEntry(json));
    this.#stagedSeq++;
    this.#schedule();
    return this.#stagedSeq;
  }

  /** Runs `fn` once every entry staged so far is durable: now if there is none. */
  afterCommit(fn: () => void): void {
    this.after(this.#stagedSeq, fn);
  }

  /** Is entry `seq` (and every one before it) durable? */
  durable(seq: number): boolean {
    return seq <= this.#durableSeq;
  }

  /** Runs `fn` once entry `seq` (and every one before it) is durable: now if it already is. */
  after(seq: number, fn: () => void): void {
    if (seq <= this.#durableSeq) return fn();
    this.#waiters.push({ seq, fn });
    // Something now waits for entries a deferred commit holds: they go after this round.
    if (this.#deferred !== undefined) this.#schedule();
  }

  /**
   * Commits every staged entry now (one write, one fdatasync) and runs the callbacks that were
   * waiting for them. False when the write failed: the entries stay staged and are retried.
   */
  commit(): boolean {
    this.#undefer();
    if (this.#staged.length === 0) return true;
    const whole = this.#o.compact?.();
    if (whole !== undefined) return this.rewrite(whole);
    const text = Buffer.from(this.#staged.join(''), 'utf8');
    const ok = this.#timed(() => {
      const fd = this.#open();
      writeFully(fd, text);
      fdatasyncSync(fd);
    });
    if (!ok) return false;
    this.#size += text.length;
    this.#staged = [];
    this.#durable(this.#stagedSeq);
    return true;
  }

  /**
   * Replaces the whole file with `lines` (JSON texts), which stand for everything staged as
   * well: written to a new file, fsync'd, renamed over the journal, the directory fsync'd. A
   * crash at any point leaves the old journal or the new one, each complete. Used to compact.
   */
  rewrite(lines: readonly string[]): boolean {
    const text = Buffer.from(lines.map(encodeEntry).join(''), 'utf8');
    const tmp = `${this.path}.tmp`;
    const ok = this.#timed(() => {
      const fd = openSync(tmp, 'w', 0o600);
      try {
        writeFully(fd, text);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(tmp, this.path);
      fsyncDir(dirname(this.path));
      if (this.#fd !== undefined) closeSync(this.#fd);
      this.#fd = undefined;
    });
    if (!ok) return false;
    this.#size = text.length;
    this.#staged = [];
    this.#o.onRewritten?.();
    this.#durable(this.#stagedSeq);
    return true;
  }

  /** Commits what is staged, drops the callbacks still waiting (the agent is stopping), and closes the file. */
  close(): void {
    if (this.#closed) return;
    this.commit();
    this.#closed = true;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.#retry = undefined;
    this.#waiters = [];
    if (this.#fd !== undefined) closeSync(this.#fd);
    this.#fd = undefined;
  }

  #open(): number {
    if (this.#fd !== undefined) return this.#fd;
    const created = this.#size === 0;
    const fd = openSync(this.path, 'a+', 0o600);
    // A torn tail left by a crash is cut before anything is appended after it.
    ftruncateSync(fd, this.#size);
    if (created) fsyncDir(dirname(this.path));
    this.#fd = fd;
    return fd;
  }

  #timed(write: () => void): boolean {
    const i = this.#o.instruments;
    const start = i?.now() ?? 0;
    try {
      write();
      i?.onWrite(i.now() - start, true);
    } catch (e) {
      i?.onWrite(i.now() - start, false);
      if (this.#fd !== undefined) {
        try {
          closeSync(this.#fd);
        } catch {
          // Already unusable; the next commit opens the file again (and cuts what this one wrote).
        }
        this.#fd = undefined;
      }
      this.#failures++;
      this.#armRetry();
      this.#o.onError?.(e as Error, this.#failures);
      return false;
    }
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    this.#retry = undefined;
    if (this.#failures > 0) {
      const failures = this.#failures;
      this.#failures = 0;
      this.#o.onRecovered?.(failures);
    }
    return true;
  }

  /** One timer tries a failed commit again, later after each failure in a row. */
  #armRetry(): void {
    if (this.#closed) return;
    if (this.#retry !== undefined) clearTimeout(this.#retry);
    const first = this.#o.retryMs ?? 1_000;
    const delay = Math.min(this.#o.maxRetryMs ?? 30_000, first * 2 ** Math.min(this.#failures - 1, 20));
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      if (!this.#closed) this.commit();
    }, delay);
    this.#retry.unref();
  }

  #durable(seq: number): void {
    this.#durableSeq = seq;
    const ready = this.#waiters.filter((w) => w.seq <= seq);
    if (ready.length === 0) return;
    this.#waiters = this.#waiters.filter((w) => w.seq > seq);
    for (const w of ready) w.fn();
  }

  #schedule(): void {
    // A failed commit is tried again by its timer (or commit()): new entries join it.
    if (this.#scheduled || this.#retry !== undefined) return;
    this.#scheduled = true;
    (this.#o.schedule ?? setImmediate)(() => this.#flushScheduled());
  }

  #flushScheduled(): void {
    this.#scheduled = false;
    if (this.#closed || this.#retry !== undefined) return;
    const deferMs = this.#o.deferMs ?? 0;
    if (deferMs > 0 && this.#waiters.length === 0 && this.#staged.length > 0) {
      // Bounded from the first deferred round: later rounds join it, they do not push it back.
      this.#deferred ??= setTimeout(() => {
        this.#deferred = undefined;
        if (!this.#closed) this.commit();
      }, deferMs);
      return;
    }
    this.commit();
  }

  #undefer(): void {
    if (this.#deferred === undefined) return;
    clearTimeout(this.#deferred);
    this.#deferred = undefined;
  }
}

/**
 * Writes all of `data`: a write(2) cut short (the disk filled up under it) is followed by
 * another for the rest, which says why it cannot go on (ENOSPC, EDQUOT) by throwing.
 */
function writeFully(fd: number, data: Buffer): void {
  let done = 0;
  while (done < data.length) {
    const n = writeSync(fd, data, done, data.length - done);
    if (n <= 0) throw Object.assign(new Error(`write returned ${n} after ${done} of ${data.length} bytes`), { code: 'EIO' });
    done += n;
  }
}

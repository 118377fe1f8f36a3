/**
 * The one process harness, for the tests (test/helpers/daemons.ts) and the benchmarks
 * (scripts/bench/daemon.ts): a `node` child process running a built script, its JSON log
 * lines as records to wait on, and a stop by its PID (a signal, then SIGKILL).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { EVENT_DEADLINE_MS } from './deadline.js';

export { EVENT_DEADLINE_MS };

/** The repository root (this file is scripts/harness/daemon.ts, or dist/scripts/harness/daemon.js once built). */
export const ROOT = ((): string => {
  const here = dirname(fileURLToPath(import.meta.url));
  const up = join(here, '..', '..');
  return up.endsWith('/dist') ? join(up, '..') : up;
})();
/** The built daemons, the same files `npm start` and systemd run. */
export const MASTER_BIN = join(ROOT, 'dist', 'master', 'main.js');
export const AGENT_BIN = join(ROOT, 'dist', 'agent', 'main.js');
export const SCHEDULER_BIN = join(ROOT, 'dist', 'scheduler', 'main.js');
export const CLI_BIN = join(ROOT, 'dist', 'cli', 'main.js');

/** One JSON log line. */
export type LogRecord = Record<string, unknown> & { msg?: string };

/** How a child ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface DaemonOptions {
  /** A pipe on stdin (send()); default ignored. */
  stdin?: boolean;
  /** Named in error messages. */
  name?: string;
  /**
   * Keep at most this many records (the oldest half goes when full), for chatty daemons in
   * long benchmarks. Default: all (tests wait on record indexes).
   */
  maxRecords?: number;
  /** Options for node itself, before the script (`--cpu-prof`, which NODE_OPTIONS refuses). Default none. */
  nodeArgs?: readonly string[];
  /** Run `bin` itself, not `node bin`: a single executable, or `chroot DIR PROGRAM`. Default false. */
  exec?: boolean;
  /** Start from this process's environment (then `env` on top). False: `env` alone, as a systemd unit's. Default true. */
  inheritEnv?: boolean;
  /**
   * A command that runs the daemon, before it: `ip netns exec NS` for a daemon inside a network
   * namespace (it execs the program, so the PID is still the daemon's). Default none.
   */
  prefix?: readonly string[];
}

/** One running daemon and everything it printed. */
export class Daemon {
  readonly child: ChildProcess;
  readonly name: string;
  readonly records: LogRecord[] = [];
  /** Every stdout line, JSON or not (the last 2,000). */
  readonly stdout: string[] = [];
  stderr = '';
  readonly exited: Promise<Exit>;
  #exit: Exit | undefined;
  #waiters: Array<{ pred: (r: LogRecord) => boolean; resolve: (r: LogRecord) => void }> = [];

  /** Runs `node bin args` (or `bin args` with `exec`), with `env` added to this process's environment (or alone, with `inheritEnv: false`). */
  constructor(bin: string, args: readonly string[], env: Record<string, string> = {}, o: DaemonOptions = {}) {
    this.name = o.name ?? bin.split('/').slice(-2).join('/');
    const command = o.exec === true ? [...(o.prefix ?? []), bin, ...args] : [...(o.prefix ?? []), process.execPath, ...(o.nodeArgs ?? []), bin, ...args];
    this.child = spawn(command[0] as string, command.slice(1), {
      stdio: [o.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: o.inheritEnv === false ? { ...env } : { ...process.env, ...env },
    });
    let buf = '';
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.stdout.push(line);
        if (this.stdout.length > 2_000) this.stdout.splice(0, 1_000);
        let rec: LogRecord;
        try {
          rec = JSON.parse(line) as LogRecord;
        } catch {
          continue; // not a log line (a stray print); keep reading
        }
        if (o.maxRecords !== undefined && this.records.length >= o.maxRecords) this.records.splice(0, Math.ceil(o.maxRecords / 2));
        this.records.push(rec);
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.pred(rec)) return true;
          w.resolve(rec);
          return false;
        });
      }
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-64_000);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.#exit = { code, signal };
        resolve(this.#exit);
      });
    });
  }

  get pid(): number {
    return this.child.pid ?? -1;
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  /** Resolves with the first log record (past or future) that matches; rejects after timeoutMs (the one guard by default) or when the process exits. */
  waitForLog(pred: (r: LogRecord) => boolean, timeoutMs = EVENT_DEADLINE_MS, what = 'log line'): Promise<LogRecord> {
    const seen = this.records.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    const context = (): string => `stderr: ${this.stderr.slice(-2_000) || '(empty)'}; last lines: ${this.stdout.slice(-10).join('\n')}`;
    return new Promise((resolve, reject) => {
      const waiter = { pred, resolve: (r: LogRecord): void => { clearTimeout(timer); resolve(r); } };
      const drop = (): void => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
      };
      const timer = setTimeout(() => {
        drop();
        reject(new Error(`${this.name}: timed out after ${timeoutMs} ms waiting for ${what}; ${context()}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
      void this.exited.then((e) => {
        if (!this.#waiters.includes(waiter)) return;
        clearTimeout(timer);
        drop();
        reject(new Error(`${this.name} exited (${JSON.stringify(e)}) while waiting for ${what}; ${context()}`));
      });
    });
  }

  /** Waits for `{"msg": msg}`, optionally with matching fields, at or after index `after` in records. */
  waitForMsg(msg: string, fields: Record<string, unknown> = {}, timeoutMs = EVENT_DEADLINE_MS, after = 0): Promise<LogRecord> {
    const pred = (r: LogRecord): boolean => this.records.indexOf(r) >= after && r.msg === msg && Object.entries(fields).every(([k, v]) => r[k] === v);
    return this.waitForLog(pred, timeoutMs, `msg '${msg}' ${JSON.stringify(fields)}`);
  }

  /** How it ended, or undefined if it still runs after timeoutMs (by default the tests' one guard, EVENT_DEADLINE_MS). */
  async exitWithin(timeoutMs = EVENT_DEADLINE_MS): Promise<Exit | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([this.exited, new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)))]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** Writes one line to the child's stdin (started with stdin: true). */
  send(text: string): void {
    this.child.stdin?.write(text + '\n');
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.child.kill(sig);
  }

  /** `sig` (default SIGTERM), then SIGKILL after graceMs; resolves when the process is gone. */
  async stop(graceMs = 5_000, sig: NodeJS.Signals = 'SIGTERM'): Promise<Exit> {
    if (!this.running) return this.exited;
    this.child.kill(sig);
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const e = await this.exited;
    clearTimeout(timer);
    return e;
  }
}

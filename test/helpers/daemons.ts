/**
 * Integration-test helpers: real daemons as child processes on loopback.
 *
 * startMaster(t) / startAgent(t) bind port 0, wait for the daemon's `listening` log line,
 * return its address, and register their own cleanup: the process is stopped by its PID
 * (SIGTERM, then SIGKILL) and its temp dir removed when the test ends. They run the built
 * daemons in dist/ (`npm test` builds first), the same files `npm start` and systemd run.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { TestContext } from 'node:test';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const MASTER_BIN = join(ROOT, 'dist', 'master', 'main.js');
export const AGENT_BIN = join(ROOT, 'dist', 'agent', 'main.js');
export const CLI_BIN = join(ROOT, 'dist', 'cli', 'main.js');
export const FIXTURES = join(ROOT, 'test', 'fixtures');

type Cleanup = Pick<TestContext, 'after'>;

/** A temp dir removed when the test ends. */
export function tempDir(t: Cleanup, prefix = 'drydock-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => removeDir(dir));
  return dir;
}

/**
 * Removes a dir and never throws: a failing after-hook would skip the hooks after it (and
 * leak their processes).
 */
export function removeDir(dir: string): void {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
  } catch (e) {
    process.stderr.write(`test cleanup: could not remove ${dir}: ${(e as Error).message}\n`);
  }
}

export type LogRecord = Record<string, unknown> & { msg?: string };

export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** One running daemon and everything it printed. */
export class Daemon {
  readonly child: ChildProcess;
  readonly records: LogRecord[] = [];
  readonly stdout: string[] = [];
  stderr = '';
  readonly exited: Promise<Exit>;
  #exit: Exit | undefined;
  #waiters: Array<{ pred: (r: LogRecord) => boolean; resolve: (r: LogRecord) => void }> = [];

  constructor(bin: string, args: readonly string[], env: Record<string, string> = {}) {
    this.child = spawn(process.execPath, [bin, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...env },
    });
    let buf = '';
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        this.stdout.push(line);
        let rec: LogRecord | undefined;
        try {
          rec = JSON.parse(line) as LogRecord;
        } catch {
          continue;
        }
        this.records.push(rec);
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.pred(rec)) return true;
          w.resolve(rec);
          return false;
        });
      }
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr += chunk;
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

  /** Resolves with the first log record (past or future) that matches, or rejects after timeoutMs. */
  waitForLog(pred: (r: LogRecord) => boolean, timeoutMs = 10_000, what = 'log line'): Promise<LogRecord> {
    const seen = this.records.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = { pred, resolve: (r: LogRecord) => { clearTimeout(timer); resolve(r); } };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; stderr: ${this.stderr.slice(-2000)}; last lines: ${this.stdout.slice(-10).join('\n')}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
      void this.exited.then((e) => {
        if (this.#waiters.includes(waiter)) {
          clearTimeout(timer);
          this.#waiters = this.#waiters.filter((w) => w !== waiter);
          reject(new Error(`daemon exited (${JSON.stringify(e)}) while waiting for ${what}; stderr: ${this.stderr.slice(-2000)}; last lines: ${this.stdout.slice(-10).join('\n')}`));
        }
      });
    });
  }

  /** Waits for `{"msg": msg}`, optionally with matching fields, newer than index `after` in records. */
  waitForMsg(msg: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000, after = 0): Promise<LogRecord> {
    const floor = after;
    const pred = (r: LogRecord): boolean =>
      this.records.indexOf(r) >= floor && r.msg === msg && Object.entries(fields).every(([k, v]) => r[k] === v);
    return this.waitForLog(pred, timeoutMs, `msg '${msg}' ${JSON.stringify(fields)}`);
  }

  signal(sig: NodeJS.Signals): void {
    if (this.running) this.child.kill(sig);
  }

  /** SIGTERM, then SIGKILL after graceMs; resolves when the process is gone. */
  async stop(graceMs = 5_000): Promise<Exit> {
    if (!this.running) return this.exited;
    this.child.kill('SIGTERM');
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs);
    const e = await this.exited;
    clearTimeout(timer);
    return e;
  }
}

export interface MasterHandle {
  daemon: Daemon;
  ip: string;
  port: number;
  /** `ip:port`, the agent's --master value. */
  address: string;
  url: string;
  workDir: string;
}

export interface MasterOptions {
  workDir?: string;
  ip?: string;
  port?: number;
  flags?: readonly string[];
  env?: Record<string, string>;
}

/** Starts drydock-master on loopback, port 0 unless given; stopped when the test ends. */
export async function startMaster(t: Cleanup, opts: MasterOptions = {}): Promise<MasterHandle> {
  const ip = opts.ip ?? '127.0.0.1';
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(join(tmpdir(), 'drydock-master-'));
  const daemon = new Daemon(MASTER_BIN, [`--ip=${ip}`, `--port=${opts.port ?? 0}`, `--work_dir=${workDir}`, ...(opts.flags ?? [])], opts.env);
  // One hook, in this order: the daemon must be gone before its dir is removed.
  t.after(async () => {
    await daemon.stop();
    if (ownDir) removeDir(workDir);
  });
  const rec = await daemon.waitForMsg('listening', {}, 15_000);
  const port = Number(rec['port']);
  return { daemon, ip, port, address: `${ip}:${port}`, url: `http://${ip}:${port}`, workDir };
}

export interface AgentHandle {
  daemon: Daemon;
  ip: string;
  port: number;
  url: string;
  workDir: string;
  /** The agent id once registered (when waitRegistered). */
  agentId: string | undefined;
}

export interface AgentOptions {
  master: string;
  workDir?: string;
  ip?: string;
  port?: number;
  hostname?: string;
  resources?: string;
  flags?: readonly string[];
  env?: Record<string, string>;
  /** Wait for the `registered` log line (default true). */
  waitRegistered?: boolean;
}

/** Starts drydock-agent on loopback; stopped (SIGTERM: tasks survive, as under systemd) when the test ends. */
export async function startAgent(t: Cleanup, opts: AgentOptions): Promise<AgentHandle> {
  const ip = opts.ip ?? '127.0.0.1';
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(join(tmpdir(), 'drydock-agent-'));
  const args = [
    `--master=${opts.master}`,
    `--ip=${ip}`,
    `--port=${opts.port ?? 0}`,
    `--work_dir=${workDir}`,
    `--hostname=${opts.hostname ?? 'agent-test'}`,
    `--resources=${opts.resources ?? 'cpus:4;mem:4096;disk:10000;ports:[31000-32000]'}`,
    '--registration_backoff_factor=10ms',
    ...(opts.flags ?? []),
  ];
  const daemon = new Daemon(AGENT_BIN, args, opts.env);
  // One hook, in this order: the daemon must be gone before its dir is removed.
  t.after(async () => {
    await daemon.stop();
    if (ownDir) removeDir(workDir);
  });
  const rec = await daemon.waitForMsg('listening', {}, 15_000);
  const port = Number(rec['port']);
  let agentId: string | undefined;
  if (opts.waitRegistered !== false) {
    const reg = await daemon.waitForMsg('registered', {}, 15_000);
    agentId = String(reg['agentId']);
  }
  return { daemon, ip, port, url: `http://${ip}:${port}`, workDir, agentId };
}

/** POST /api/v1 with a JSON call; returns status, headers and parsed (or raw) body. */
export async function callApi(
  url: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await fetch(`${url}/api/v1`, {
    method: 'POST',
    headers,
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** Polls `check` every intervalMs until it returns a value other than undefined; bounded in time and count. */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = 10_000, intervalMs = 50, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const maxTries = Math.ceil(timeoutMs / intervalMs) + 1;
  for (let i = 0; i < maxTries; i++) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) break;
    await new Promise((r) => setTimeout(r, intervalMs));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** Is a process alive? (signal 0; EPERM still means it exists). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

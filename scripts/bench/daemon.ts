/**
 * Child processes of a benchmark: the real daemons (and floor servers, sim-agent drivers)
 * started with `node`, their JSON log lines, temp dirs, and cleanup by PID.
 *
 * Every child and temp dir is also recorded here so that a benchmark that throws, or a
 * Ctrl-C, still stops the children and removes the dirs (on 'exit', synchronously).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository root (this file is dist/scripts/bench/daemon.js once built). */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The built daemons, as `npm start` and systemd run them. */
export const MASTER_BIN = join(ROOT, 'dist', 'master', 'main.js');
export const AGENT_BIN = join(ROOT, 'dist', 'agent', 'main.js');
/** The built sim-agents script and the storm floor server. */
export const SIM_AGENTS_BIN = join(ROOT, 'dist', 'scripts', 'sim-agents.js');
export const ECHO_SERVER_BIN = join(ROOT, 'dist', 'scripts', 'bench', 'echo-server.js');

const live = new Set<Child>();
const dirs = new Set<string>();

process.on('exit', () => {
  for (const c of live) c.child.kill('SIGKILL');
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stderr.write(`bench: ${sig}, stopping children\n`);
    process.exit(130);
  });
}

/** Throws a clear error when a built file is missing (the benchmarks run dist/, not sources). */
export function requireBuilt(path: string): void {
  if (!existsSync(path)) throw new Error(`${path} does not exist: run \`npm run build\` first`);
}

/** A temp dir removed by removeTempDir() or, at the latest, when the benchmark process exits. */
export function makeTempDir(prefix: string): string {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.add(d);
  return d;
}

export function removeTempDir(dir: string): void {
  rmSync(dir, { recursive: true, force: true });
  dirs.delete(dir);
}

/** One JSON log line. */
export type LogRecord = Record<string, unknown> & { msg?: string };

/** How a child ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** A `node` child process and the JSON lines it printed. */
export class Child {
  readonly child: ChildProcess;
  readonly name: string;
  readonly records: LogRecord[] = [];
  stderr = '';
  readonly exited: Promise<Exit>;
  #exit: Exit | undefined;
  #waiters: Array<{ pred: (r: LogRecord) => boolean; resolve: (r: LogRecord) => void }> = [];

  constructor(name: string, script: string, args: readonly string[], options: { stdin?: boolean; env?: Record<string, string> } = {}) {
    requireBuilt(script);
    this.name = name;
    this.child = spawn(process.execPath, [script, ...args], {
      stdio: [options.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      env: { ...process.env, ...options.env },
    });
    live.add(this);
    let buf = '';
    this.child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buf += chunk;
      let nl: number;
      while ((nl = buf.indexOf('\n')) !== -1) {
        const text = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        let rec: LogRecord;
        try {
          rec = JSON.parse(text) as LogRecord;
        } catch {
          continue; // not a log line (a stray print); keep reading
        }
        // Keep memory bounded for chatty daemons: only the last 2,000 lines are searched.
        if (this.records.length >= 2_000) this.records.splice(0, 1_000);
        this.records.push(rec);
        this.#waiters = this.#waiters.filter((w) => {
          if (!w.pred(rec)) return true;
          w.resolve(rec);
          return false;
        });
      }
    });
    this.child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.stderr = (this.stderr + chunk).slice(-8_000);
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        this.#exit = { code, signal };
        live.delete(this);
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

  /** Resolves with the first record (seen or future) that matches; rejects on timeout or exit. */
  waitFor(pred: (r: LogRecord) => boolean, timeoutMs: number, what: string): Promise<LogRecord> {
    const seen = this.records.find(pred);
    if (seen !== undefined) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const waiter = { pred, resolve: (r: LogRecord): void => { clearTimeout(timer); resolve(r); } };
      const drop = (): void => { this.#waiters = this.#waiters.filter((w) => w !== waiter); };
      const timer = setTimeout(() => {
        drop();
        reject(new Error(`${this.name}: no ${what} within ${timeoutMs} ms; stderr: ${this.stderr.slice(-1_000) || '(empty)'}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
      void this.exited.then((e) => {
        if (!this.#waiters.includes(waiter)) return;
        clearTimeout(timer);
        drop();
        reject(new Error(`${this.name} exited (${JSON.stringify(e)}) while waiting for ${what}; stderr: ${this.stderr.slice(-1_000) || '(empty)'}`));
      });
    });
  }

  /** Waits for `{"msg": msg}`. */
  waitForMsg(msg: string, timeoutMs: number): Promise<LogRecord> {
    return this.waitFor((r) => r.msg === msg, timeoutMs, `'${msg}' line`);
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

/** Starts drydock-master on 127.0.0.1:0 in a temp dir; returns it once it logged `listening`. */
export async function startMaster(flags: readonly string[] = []): Promise<{ daemon: Child; address: string; url: string; workDir: string }> {
  const workDir = makeTempDir('drydock-bench-master-');
  const daemon = new Child('master', MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${workDir}`, ...flags]);
  const rec = await daemon.waitForMsg('listening', 20_000);
  const address = `127.0.0.1:${Number(rec['port'])}`;
  return { daemon, address, url: `http://${address}`, workDir };
}

/** Starts drydock-agent against `master` in a temp dir (on 127.0.0.1 unless `ip`); returns it once it logged `listening`. */
export async function startAgent(master: string, opts: { resources?: string; hostname?: string; ip?: string; flags?: readonly string[] } = {}): Promise<{ daemon: Child; workDir: string }> {
  const workDir = makeTempDir('drydock-bench-agent-');
  const daemon = new Child('agent', AGENT_BIN, [
    `--master=${master}`,
    `--ip=${opts.ip ?? '127.0.0.1'}`,
    '--port=0',
    `--work_dir=${workDir}`,
    `--hostname=${opts.hostname ?? 'bench-agent'}`,
    `--resources=${opts.resources ?? 'cpus:200;mem:200000;disk:100000;ports:[31000-32000]'}`,
    ...(opts.flags ?? []),
  ]);
  await daemon.waitForMsg('listening', 20_000);
  return { daemon, workDir };
}

/**
 * Child processes of a benchmark: the real daemons (and floor servers, sim-agent drivers)
 * started with `node`, their JSON log lines, temp dirs, and cleanup by PID.
 *
 * Every child and temp dir is also recorded here so that a benchmark that throws, or a
 * Ctrl-C, still stops the children and removes the dirs (on 'exit', synchronously).
 */

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_BIN, Daemon, MASTER_BIN, ROOT, SCHEDULER_BIN, type Exit, type LogRecord } from '../harness/daemon.js';

export { AGENT_BIN, MASTER_BIN, ROOT, SCHEDULER_BIN, type Exit, type LogRecord };
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

/**
 * A benchmark's child: the harness's Daemon, remembered so that a benchmark that throws (or
 * a Ctrl-C) still stops it. Records are bounded: benchmarks run long and chatty.
 */
export class Child extends Daemon {
  /** `exec`: `script` is a program of its own (a single executable); `inheritEnv: false`: `env` alone, as a systemd unit's. */
  constructor(name: string, script: string, args: readonly string[], options: { stdin?: boolean; env?: Record<string, string>; nodeArgs?: readonly string[]; exec?: boolean; inheritEnv?: boolean } = {}) {
    requireBuilt(script);
    super(script, args, options.env ?? {}, {
      name,
      maxRecords: 2_000,
      ...(options.stdin === true ? { stdin: true } : {}),
      ...(options.nodeArgs === undefined ? {} : { nodeArgs: options.nodeArgs }),
      ...(options.exec === undefined ? {} : { exec: options.exec }),
      ...(options.inheritEnv === undefined ? {} : { inheritEnv: options.inheritEnv }),
    });
    live.add(this);
    void this.exited.then(() => live.delete(this));
  }

  /** Resolves with the first record (seen or future) that matches; rejects on timeout or exit. */
  waitFor(pred: (r: LogRecord) => boolean, timeoutMs: number, what: string): Promise<LogRecord> {
    return this.waitForLog(pred, timeoutMs, what);
  }
}

/** Starts drydock-master on 127.0.0.1:0 in a temp dir (`nodeArgs` for node itself); returns it once it logged `listening`. */
export async function startMaster(flags: readonly string[] = [], opts: { standby?: boolean; nodeArgs?: readonly string[] } = {}): Promise<{ daemon: Child; address: string; url: string; workDir: string }> {
  const workDir = makeTempDir('drydock-bench-master-');
  const daemon = new Child('master', MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${workDir}`, ...flags], opts.nodeArgs === undefined ? {} : { nodeArgs: opts.nodeArgs });
  const rec = await daemon.waitForMsg('listening', {}, 20_000);
  // An HA master listens before it leads: wait until it serves.
  if (opts.standby !== true && flags.some((f) => f.startsWith('--etcd='))) await daemon.waitForMsg('term started', {}, 20_000);
  const address = `127.0.0.1:${Number(rec['port'])}`;
  return { daemon, address, url: `http://${address}`, workDir };
}

/** Starts drydock-agent against `master` in a temp dir (on 127.0.0.1 unless `ip`); returns it once it logged `listening`. */
export async function startAgent(master: string, opts: { resources?: string; hostname?: string; ip?: string; flags?: readonly string[]; nodeArgs?: readonly string[] } = {}): Promise<{ daemon: Child; workDir: string }> {
  const workDir = makeTempDir('drydock-bench-agent-');
  const daemon = new Child('agent', AGENT_BIN, [
    `--master=${master}`,
    `--ip=${opts.ip ?? '127.0.0.1'}`,
    '--port=0',
    `--work_dir=${workDir}`,
    `--hostname=${opts.hostname ?? 'bench-agent'}`,
    `--resources=${opts.resources ?? 'cpus:200;mem:200000;disk:100000;ports:[31000-32000]'}`,
    ...(opts.flags ?? []),
  ], opts.nodeArgs === undefined ? {} : { nodeArgs: opts.nodeArgs });
  await daemon.waitForMsg('listening', {}, 20_000);
  return { daemon, workDir };
}

/**
 * Starts drydock-scheduler against `master` with the spec file `spec`, its state in a temp dir,
 * its API on 127.0.0.1:0; returns it once it logged `listening`. SIGTERM leaves its tasks
 * running (the framework fails over), so whoever stops it stops the agents with SIGUSR1.
 */
export async function startScheduler(master: string, spec: string, flags: readonly string[] = []): Promise<{ daemon: Child; url: string; workDir: string }> {
  const workDir = makeTempDir('drydock-bench-scheduler-');
  const daemon = new Child('scheduler', SCHEDULER_BIN, [`--master=${master}`, `--spec=${spec}`, `--work_dir=${workDir}`, '--port=0', '--ip=127.0.0.1', ...flags]);
  const rec = await daemon.waitForMsg('listening', {}, 20_000);
  return { daemon, url: `http://127.0.0.1:${Number(rec['port'])}`, workDir };
}

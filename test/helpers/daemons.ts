/**
 * Integration-test helpers: real daemons as child processes on loopback.
 *
 * startMaster(t) / startAgent(t) bind port 0, wait for the daemon's `listening` log line,
 * return its address, and register their own cleanup: the process is stopped by its PID
 * (SIGTERM, then SIGKILL) and its temp dir removed when the test ends. They run the built
 * daemons in dist/ (`npm test` builds first), the same files `npm start` and systemd run,
 * through the one process harness (scripts/harness/daemon.ts) the benchmarks use too.
 */

import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_BIN, Daemon, EVENT_DEADLINE_MS, MASTER_BIN, ROOT, SCHEDULER_BIN } from '../../scripts/harness/daemon.js';
import type { TestContext } from 'node:test';
import { PLAIN_TRANSPORT, type ClientTransport } from '../../io/transport.js';

export { AGENT_BIN, CLI_BIN, Daemon, EVENT_DEADLINE_MS, MASTER_BIN, ROOT, SCHEDULER_BIN, type Exit, type LogRecord } from '../../scripts/harness/daemon.js';
export const FIXTURES = join(ROOT, 'test', 'fixtures');

type Cleanup = Pick<TestContext, 'after'>;

/** A temp dir removed when the test ends. */
export function tempDir(t: Cleanup, prefix = 'drydock-test-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.after(() => removeDir(dir));
  return dir;
}

/** Writes `text` to `path` with exactly `mode` (an existing file's mode is set too): secret files that must be 0600, and ones that must not. */
export function fileWithMode(path: string, text: string, mode: number): string {
  writeFileSync(path, text, { mode });
  chmodSync(path, mode);
  return path;
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

/** One hook of a master's --maintenance_hooks file (maintenance-hooks.ts). */
export interface HookSpec {
  command: string[];
  timeout?: string;
  env?: Record<string, string>;
}

/**
 * A --maintenance_hooks file with these hooks (mode 0644, in a temp dir removed when the test
 * ends), and the master's flags for it: with `--hook_user=root` when the test runs as root (a
 * root master must be told; root is the explicit choice here), or `hookUser` if given.
 */
export function maintenanceHooks(t: Cleanup, hooks: Record<string, HookSpec>, hookUser?: string): string[] {
  const file = fileWithMode(join(tempDir(t, 'drydock-hooks-'), 'hooks.json'), `${JSON.stringify({ hooks }, null, 2)}\n`, 0o644);
  const user = hookUser ?? (process.getuid?.() === 0 ? 'root' : undefined);
  return [`--maintenance_hooks=${file}`, ...(user === undefined ? [] : [`--hook_user=${user}`])];
}

export interface MasterHandle {
  daemon: Daemon;
  ip: string;
  port: number;
  /** `ip:port`, the agent's --master value. */
  address: string;
  /** `http://ip:port`, or `https://` with TLS. */
  url: string;
  workDir: string;
}

/** A daemon's TLS server flags (paths from scripts/harness/certs.ts' makeCertificates). */
export interface ServerTlsFiles {
  certFile: string;
  keyFile: string;
  /** The master's --tls_ca_file (client certificates chain to it). */
  caFile?: string;
  /** The master's --tls_require_client_cert. */
  requireClientCert?: boolean;
}

export interface MasterOptions {
  workDir?: string;
  ip?: string;
  port?: number;
  flags?: readonly string[];
  env?: Record<string, string>;
  /** Serve HTTPS/WSS: --tls_cert_file, --tls_key_file (and --tls_ca_file, --tls_require_client_cert). */
  tls?: ServerTlsFiles;
}

/** The TLS flags of a master's ServerTlsFiles. */
function masterTlsFlags(tls: ServerTlsFiles | undefined): string[] {
  if (tls === undefined) return [];
  return [
    `--tls_cert_file=${tls.certFile}`,
    `--tls_key_file=${tls.keyFile}`,
    ...(tls.caFile === undefined ? [] : [`--tls_ca_file=${tls.caFile}`]),
    ...(tls.requireClientCert === true ? ['--tls_require_client_cert'] : []),
  ];
}

/** Starts drydock-master on loopback, port 0 unless given; stopped when the test ends. */
export async function startMaster(t: Cleanup, opts: MasterOptions = {}): Promise<MasterHandle> {
  const ip = opts.ip ?? '127.0.0.1';
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(join(tmpdir(), 'drydock-master-'));
  const daemon = new Daemon(MASTER_BIN, [`--ip=${ip}`, `--port=${opts.port ?? 0}`, `--work_dir=${workDir}`, ...masterTlsFlags(opts.tls), ...(opts.flags ?? [])], opts.env);
  // One hook, in this order: the daemon must be gone before its dir is removed.
  t.after(async () => {
    await daemon.stop();
    if (ownDir) removeDir(workDir);
  });
  const rec = await daemon.waitForMsg('listening');
  const port = Number(rec['port']);
  return { daemon, ip, port, address: `${ip}:${port}`, url: `${opts.tls === undefined ? 'http' : 'https'}://${ip}:${port}`, workDir };
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
  /** How the agent is stopped at the end: SIGTERM (default; tasks survive) or SIGUSR1 (its tasks are killed first). */
  stopSignal?: 'SIGTERM' | 'SIGUSR1';
  /**
   * TLS: `caFile` verifies the master (wss://); `certFile`/`keyFile` serve the agent API over
   * HTTPS and are the client certificate towards the master.
   */
  tls?: { caFile?: string; certFile?: string; keyFile?: string };
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
    ...(opts.tls?.caFile === undefined ? [] : [`--tls_ca_file=${opts.tls.caFile}`]),
    ...(opts.tls?.certFile === undefined ? [] : [`--tls_cert_file=${opts.tls.certFile}`]),
    ...(opts.tls?.keyFile === undefined ? [] : [`--tls_key_file=${opts.tls.keyFile}`]),
    ...(opts.flags ?? []),
  ];
  const daemon = new Daemon(AGENT_BIN, args, opts.env);
  // One hook, in this order: the daemon must be gone before its dir is removed.
  t.after(async () => {
    await daemon.stop(10_000, opts.stopSignal ?? 'SIGTERM');
    if (ownDir) removeDir(workDir);
  });
  const rec = await daemon.waitForMsg('listening');
  const port = Number(rec['port']);
  let agentId: string | undefined;
  if (opts.waitRegistered !== false) {
    const reg = await daemon.waitForMsg('registered');
    agentId = String(reg['agentId']);
  }
  return { daemon, ip, port, url: `${opts.tls?.certFile === undefined ? 'http' : 'https'}://${ip}:${port}`, workDir, agentId };
}

export interface SchedulerHandle {
  daemon: Daemon;
  port: number;
  /** `127.0.0.1:port`, the CLI's --scheduler value. */
  address: string;
  url: string;
  workDir: string;
}

export interface SchedulerOptions {
  master: string;
  /** Path of the spec file. */
  spec: string;
  workDir?: string;
  port?: number;
  flags?: readonly string[];
}

/** Starts drydock-scheduler on loopback; stopped (SIGTERM: its tasks keep running, as a failover) when the test ends. */
export async function startScheduler(t: Cleanup, opts: SchedulerOptions): Promise<SchedulerHandle> {
  const ownDir = opts.workDir === undefined;
  const workDir = opts.workDir ?? mkdtempSync(join(tmpdir(), 'drydock-scheduler-'));
  const args = [`--master=${opts.master}`, `--spec=${opts.spec}`, '--ip=127.0.0.1', `--port=${opts.port ?? 0}`, `--work_dir=${workDir}`, ...(opts.flags ?? [])];
  const daemon = new Daemon(SCHEDULER_BIN, args);
  t.after(async () => {
    await daemon.stop();
    if (ownDir) removeDir(workDir);
  });
  const rec = await daemon.waitForMsg('listening');
  const port = Number(rec['port']);
  return { daemon, port, address: `127.0.0.1:${port}`, url: `http://127.0.0.1:${port}`, workDir };
}

/**
 * POST /api/v1 with a JSON call; returns status, headers and parsed (or raw) body. `transport`
 * (io/transport.ts) carries a CA and client certificate for https:// URLs, and its headers.
 */
export async function callApi(
  url: string,
  body: unknown,
  headers: Record<string, string> = { 'content-type': 'application/json' },
  transport: ClientTransport = PLAIN_TRANSPORT,
): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  const res = await transport.fetch(`${url}/api/v1`, {
    method: 'POST',
    headers: { ...transport.headers, ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(EVENT_DEADLINE_MS),
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

/**
 * Polls `check` every intervalMs until it returns a value other than undefined; bounded in time
 * and count (by default the one guard, EVENT_DEADLINE_MS: a passing check returns at once).
 */
export async function eventually<T>(check: () => Promise<T | undefined> | T | undefined, timeoutMs = EVENT_DEADLINE_MS, intervalMs = 50, what = 'condition'): Promise<T> {
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

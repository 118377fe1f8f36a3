/**
 * The service scheduler (drydock-scheduler) as the service benchmarks see it: the spec they
 * deploy, its HTTP API read as plain JSON, the times of its log lines, and the master's
 * maintenance calls. The spec and the maintenance body are built by pure functions (tested in
 * test/unit/bench-cores.test.ts); the rest is HTTP.
 */

import type { PlanInfo } from '../../shared/plans/commands.js';
import type { Child, LogRecord } from './daemon.js';

/** Flags every benchmark scheduler gets: offers held 200 ms, as in the integration tests. */
export const SCHEDULER_FLAGS = ['--offer_hold=200ms'] as const;

/** How often the benchmarks poll the scheduler's and the master's HTTP APIs. */
export const POLL_MS = 20;

/** One pod type, one task; what the benchmark spec varies. */
export interface BenchServiceSpec {
  /** Pod instances. */
  count: number;
  /** Strategy of the deploy phase (the plan itself is serial: it has one phase). */
  strategy: 'serial' | 'parallel';
  /** The task's shell command. */
  cmd: string;
  cpus: number;
  memoryMb: number;
  /** A readiness check (`cmd` exits 0 = ready), polled every `intervalS`; none when undefined. */
  readiness?: { cmd: string; intervalS: number } | undefined;
}

/**
 * The YAML of a service `bench` with one pod type `bench`, task `server`, and a deploy plan
 * with one phase of the given strategy. Pure. Strings are written as JSON strings, which YAML
 * reads as double-quoted scalars, so no command needs escaping by hand.
 */
export function benchServiceYaml(s: BenchServiceSpec): string {
  const lines = [
    'name: bench',
    'pods:',
    '  bench:',
    `    count: ${s.count}`,
    '    tasks:',
    '      server:',
    `        cmd: ${JSON.stringify(s.cmd)}`,
    `        cpus: ${s.cpus}`,
    `        memory: ${s.memoryMb}`,
    // SIGTERM ends `sleep` at once; a short grace keeps a stuck task from holding a teardown.
    '        kill-grace-period: 1',
  ];
  if (s.readiness !== undefined) {
    lines.push(`        readiness-check: { cmd: ${JSON.stringify(s.readiness.cmd)}, interval: ${s.readiness.intervalS}, delay: 0, timeout: 5 }`);
  }
  lines.push('plans:', '  deploy:', '    strategy: serial', '    phases:', `      bench-deploy: { pod: bench, strategy: ${s.strategy} }`);
  return lines.join('\n') + '\n';
}

/**
 * POST /maintenance/schedule's body: one window on one machine from `startMs` (epoch ms) for
 * `durationMs`. Pure. Nanoseconds since the epoch pass 2^53, so they are written from a
 * BigInt: a JSON number from a double would be off by hundreds of nanoseconds.
 */
export function maintenanceScheduleBody(hostname: string, ip: string, startMs: number, durationMs: number): string {
  const ns = (ms: number): string => (BigInt(Math.round(ms)) * 1_000_000n).toString();
  return `{"windows":[{"machine_ids":[${JSON.stringify({ hostname, ip })}],"unavailability":{"start":{"nanoseconds":${ns(startMs)}},"duration":{"nanoseconds":${ns(durationMs)}}}}]}`;
}

/** A log record's `time` (ISO, written by shared/log.ts) as epoch ms; NaN when absent. Pure. */
export function logTimeMs(r: LogRecord): number {
  return typeof r['time'] === 'string' ? Date.parse(r['time']) : Number.NaN;
}

/** Differences between consecutive values (in the order given). Pure. */
export function gaps(times: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 1; i < times.length; i++) out.push((times[i] as number) - (times[i - 1] as number));
  return out;
}

/** For each id in both maps, `end - start`; ids missing from either are left out. Pure. */
export function delays(starts: ReadonlyMap<string, number>, ends: ReadonlyMap<string, number>): number[] {
  const out: number[] = [];
  for (const [id, s] of starts) {
    const e = ends.get(id);
    if (e !== undefined) out.push(e - s);
  }
  return out;
}

/** A task as GET /v1/pod/status lists it. */
export interface PodTask {
  name: string;
  id: string;
  status: string;
  hostname: string;
  ready?: boolean;
}

/** GET `url` as JSON (any status: plan GETs answer 202 while in progress, 417 in error). */
export async function getJson(url: string): Promise<unknown> {
  const res = await fetch(url, { signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new Error(`GET ${url}: HTTP ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
}

/** The deploy plan (or another), as GET /v1/plans/<name> shows it. */
export async function planOf(schedulerUrl: string, name: string): Promise<PlanInfo> {
  return (await getJson(`${schedulerUrl}/v1/plans/${name}`)) as PlanInfo;
}

/** Every task of every pod instance, as GET /v1/pod/status lists them. */
export async function podTasks(schedulerUrl: string): Promise<PodTask[]> {
  const body = (await getJson(`${schedulerUrl}/v1/pod/status`)) as { pods?: Array<{ instances?: Array<{ tasks?: PodTask[] }> }> };
  return (body.pods ?? []).flatMap((p) => (p.instances ?? []).flatMap((i) => i.tasks ?? []));
}

/**
 * Polls `check` every POLL_MS until it returns a value; resolves with it and the epoch ms of
 * the answer that satisfied it. Bounded in time; `what` names the wait in the error.
 */
export async function pollUntil<T>(check: () => Promise<T | undefined>, timeoutMs: number, what: string): Promise<{ value: T; atMs: number }> {
  const deadline = performance.now() + timeoutMs;
  for (let i = 0; performance.now() < deadline && i < Math.ceil(timeoutMs / POLL_MS) + 1; i++) {
    const value = await check();
    if (value !== undefined) return { value, atMs: Date.now() };
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
}

/** POST /maintenance/schedule on the master; throws unless 200. */
export async function scheduleMaintenance(masterUrl: string, body: string): Promise<void> {
  const res = await fetch(`${masterUrl}/maintenance/schedule`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`POST /maintenance/schedule answered ${res.status}: ${text.slice(0, 200)}`);
}

/** The inverse-offer answer (ACCEPT/DECLINE) `frameworkId` gave for `hostname`, from GET /maintenance/status. */
export async function maintenanceAnswer(masterUrl: string, hostname: string, frameworkId: string): Promise<string | undefined> {
  const st = (await getJson(`${masterUrl}/maintenance/status`)) as { draining_machines?: Array<{ id: { hostname?: string }; statuses?: Array<{ status: string; framework_id?: { value?: string } }> }> };
  return st.draining_machines?.find((d) => d.id.hostname === hostname)?.statuses?.find((s) => s.framework_id?.value === frameworkId)?.status;
}

/**
 * Waits (bounded) until `daemon` has logged `n` records matching `pred`, checking its records
 * every POLL_MS: no request reaches the daemon while it works.
 */
export async function waitForLines(daemon: Child, pred: (r: LogRecord) => boolean, n: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (daemon.records.filter(pred).length >= n) return;
    if (!daemon.running) throw new Error(`${daemon.name} exited (stderr: ${daemon.stderr.slice(-500)}) before logging ${n} matching lines`);
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${n} matching lines from ${daemon.name}`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}

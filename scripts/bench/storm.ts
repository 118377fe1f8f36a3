/**
 * storm: a registration storm. The real master starts, then N simulated agents
 * (scripts/sim-agents.ts, split over a few child processes so the driver is not the
 * bottleneck on 2 cores) connect and REGISTER at once. The figure is the time from "go"
 * until every agent has its REGISTERED, and the master's RSS afterwards.
 *
 * Floor: the same sim-agent processes against echo-server.ts, a bare ws server that
 * answers each first message: connecting N WebSockets and getting one answer each, with
 * no master logic. ratio = master / floor.
 */

import { callApiAgents } from './operator.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { Child, ECHO_SERVER_BIN, SIM_AGENTS_BIN, removeTempDir, requireBuilt, startMaster, MASTER_BIN } from './daemon.js';
import { rssBytes } from './procfs.js';

/** Knobs of the storm benchmark. */
export interface StormOptions {
  /** Storm sizes. Default 1,000 and 10,000. */
  counts: number[];
  /**
   * Sim-agent processes. Default 2 from 5,000 agents up, else 1: on 2 cores the master needs
   * one core, and with 4 processes the sims' own start-up and contention cost more than the
   * split saves (measured against the echo floor: 1 and 2 processes ~3.5 s, 4 ~7 s, for 10,000).
   */
  processes?: number;
  /** Handshakes in flight over all processes. Default 256, half Node's listen backlog of 511. */
  concurrency: number;
  /** Flags of the master (e.g. --etcd=... for the registry in etcd); called once per master. */
  masterFlags?: () => readonly string[];
  /** Source addresses are ipBase + k. Default 127.1.0.0. */
  ipBase: string;
  /** Floor and master storms per size, alternating; the median is reported. Default 3. */
  repeats: number;
  /** Extra flags of every sim-agents process (e.g. --tls-ca-file, --credential for a secured master). Default none. */
  simFlags?: readonly string[];
}

/** Throw-away sessions each sim process registers before the clock starts (JIT warm-up). */
const WARMUP_SESSIONS = 500;
/** Pause between storms so the previous one's 10,000 closing sockets are not on the clock. */
const SETTLE_MS = 2_000;

const MB = 1024 * 1024;

/** One storm against whatever listens at `address`. */
export interface StormRun {
  elapsedMs: number;
  registered: number;
  failed: number;
  errors: string[];
  /** Server RSS right after the last REGISTERED, and after 2 s more. */
  serverRss: number;
  serverRssSettled: number;
}

/**
 * Starts the sim-agent processes, waits until each is ready, says "go" to all, and waits
 * for every `registered` line. The clock runs from "go" to the last process's end.
 * `keepUp` runs while the sessions are still open (e.g. to ask the master what it knows).
 */
export async function storm(address: string, serverPid: number, n: number, opts: StormOptions, keepUp: () => Promise<void>): Promise<StormRun> {
  const procs = Math.max(1, Math.min(opts.processes ?? (n >= 5_000 ? 2 : 1), n));
  const perProc = Math.ceil(n / procs);
  const concurrency = Math.max(1, Math.floor(opts.concurrency / procs));
  const sims: Child[] = [];
  try {
    let first = 1;
    for (let p = 0; p < procs && first <= n; p++) {
      const count = Math.min(perProc, n - first + 1);
      sims.push(new Child(`sim-agents[${p}]`, SIM_AGENTS_BIN, [
        `--master=${address}`, `--count=${count}`, `--first=${first}`, `--ip-base=${opts.ipBase}`,
        `--concurrency=${concurrency}`, '--wait-go', '--attempt-timeout=30secs', `--warmup=${WARMUP_SESSIONS}`,
        ...(opts.simFlags ?? []),
      ], { stdin: true }));
      first += count;
    }
    await Promise.all(sims.map((s) => s.waitForMsg('ready', {}, 30_000)));
    const goAt = Date.now();
    for (const s of sims) s.send('go');
    // Bounded: 10,000 agents at 30 s per attempt and 3 attempts is the worst case the sims allow.
    const ends = await Promise.all(sims.map((s) => s.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 150_000, 'registered line')));
    const elapsedMs = Math.max(...ends.map((r) => Number(r['endedAt']))) - goAt;
    const serverRss = rssBytes(serverPid) ?? Number.NaN;
    await keepUp();
    await new Promise((r) => setTimeout(r, 2_000));
    const serverRssSettled = rssBytes(serverPid) ?? Number.NaN;
    return {
      elapsedMs,
      registered: ends.reduce((s, r) => s + Number(r['registered']), 0),
      failed: ends.reduce((s, r) => s + Number(r['failed']), 0),
      errors: [...new Set(ends.flatMap((r) => (Array.isArray(r['errors']) ? (r['errors'] as unknown[]).map(String) : [])))].slice(0, 3),
      serverRss,
      serverRssSettled,
    };
  } finally {
    await Promise.all(sims.map((s) => s.stop(10_000)));
  }
}

/** The run with the median elapsed time (the upper median for an even count). */
export function median(runs: readonly StormRun[]): StormRun {
  const sorted = [...runs].sort((a, b) => a.elapsedMs - b.elapsedMs);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function floorStorm(n: number, opts: StormOptions): Promise<StormRun> {
  const echo = new Child('echo-server', ECHO_SERVER_BIN, []);
  try {
    const rec = await echo.waitForMsg('listening', {}, 10_000);
    const run = await storm(`127.0.0.1:${Number(rec['port'])}`, echo.pid, n, opts, async () => {});
    if (run.failed > 0) throw new Error(`floor storm of ${n}: ${run.failed} clients failed (${run.errors.join('; ')})`);
    return run;
  } finally {
    await echo.stop(5_000);
  }
}

/** One storm against a fresh master; `listed` is how many sim agents GET_AGENTS returned. */
async function masterStorm(n: number, opts: StormOptions): Promise<StormRun & { listed?: number; listError?: string; stopNote?: string }> {
  const master = await startMaster(opts.masterFlags?.() ?? []);
  let listed: number | undefined;
  let listError: string | undefined;
  try {
    const run = await storm(master.address, master.daemon.pid, n, opts, async () => {
      try {
        listed = (await callApiAgents(master.url)).filter((a) => a.hostname.startsWith('sim-')).length;
      } catch (e) {
        listError = (e as Error).message;
      }
    });
    return { ...run, ...(listed === undefined ? {} : { listed }), ...(listError === undefined ? {} : { listError }) };
  } finally {
    const e = await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
    if (e.signal === 'SIGKILL') process.stderr.write(`storm: master did not exit within 10 s of SIGTERM\n`);
  }
}

const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export async function runStorm(opts: StormOptions): Promise<BenchResult> {
  const name = 'storm';
  requireBuilt(SIM_AGENTS_BIN);
  requireBuilt(MASTER_BIN);
  const rows: ResultRow[] = [];
  const context: Record<string, unknown> = {};
  for (const n of opts.counts) {
    const floors: StormRun[] = [];
    const masters: Array<Awaited<ReturnType<typeof masterStorm>>> = [];
    // Alternate floor and master so drift in the machine (other load, socket tables) hits both.
    for (let i = 0; i < opts.repeats; i++) {
      floors.push(await floorStorm(n, opts));
      await pause(SETTLE_MS);
      masters.push(await masterStorm(n, opts));
      await pause(SETTLE_MS);
    }
    const floor = median(floors);
    const run = median(masters);
    const worst = masters.reduce((a, b) => (b.elapsedMs > a.elapsedMs ? b : a));
    const maxRss = Math.max(...masters.map((m) => m.serverRss));
    const complete = masters.every((m) => m.failed === 0);
    const big = n >= 10_000;
    const spread = (runs: readonly StormRun[]): string => runs.map((r) => (r.elapsedMs / 1000).toFixed(2)).join('/');
    const listedNote = masters.every((m) => m.listed === n) ? 'GET_AGENTS lists all' : `GET_AGENTS: ${masters.map((m) => m.listed ?? m.listError ?? '?').join(' / ')}`;
    const regNote = [
      complete ? `all ${n} registered` : `FAILED to register: ${masters.map((m) => m.failed).join('/')} of ${n} (${worst.errors.join('; ')})`,
      listedNote,
      `runs ${spread(masters)} s, floor ${spread(floors)} s`,
    ].join('; ');
    rows.push({
      benchmark: name,
      metric: `${n} agents registered in (median)`,
      value: run.elapsedMs / 1000,
      unit: 's',
      ...against('raw ws echo', floor.elapsedMs / 1000, run.elapsedMs / 1000),
      ...(big ? { goal: { text: '< 10 s', pass: complete && run.elapsedMs < 10_000 } } : {}),
      note: regNote,
    });
    rows.push({
      benchmark: name,
      metric: `master RSS after ${n} (max)`,
      value: maxRss / MB,
      unit: 'MB',
      ...against('raw ws echo RSS', floor.serverRss / MB, maxRss / MB),
      ...(big ? { goal: { text: '< 500 MB', pass: maxRss < 500 * MB } } : {}),
      note: `${(run.serverRssSettled / MB).toFixed(0)} MB 2 s later (after GET_AGENTS)`,
    });
    context[`n${n}`] = { masters, floors };
  }
  return { benchmark: name, rows, context };
}

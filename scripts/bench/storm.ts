/**
 * storm: a registration storm. The real master starts, then N simulated agents
 * (scripts/sim-agents.ts, split over a few child processes so the driver is not the
 * bottleneck on 2 cores) connect and REGISTER at once. The figure is the time from "go"
 * until every agent has its REGISTERED, and the master's RSS afterwards.
 *
 * Floor: the same sim-agent processes against echo-server.ts, a bare ws server that
 * answers each first message: connecting N WebSockets and getting one answer each, with
 * no master logic. ratio = master / floor. The server's CPU time over the storm (user + sys)
 * is reported against the echo server's as well: on a shared machine it moves less than
 * wall time does.
 *
 * Goals (issue 15): 10,000 agents at <= 1.2x the floor; 50,000 in < 30 s with the master's
 * RSS < 1 GB.
 *
 * Open files: every agent is one socket in the server (master or echo) and one in the sim
 * process that holds it. Node raises its soft RLIMIT_NOFILE to the hard limit at start, so
 * what counts is the hard limit the benchmark runs under (`ulimit -Hn`). Sizes are split over
 * enough sim processes that each fits; a size the server cannot hold is not run: its row says
 * how many open files it needs and the benchmark fails, naming the limit to raise.
 */

import { readFileSync, readdirSync } from 'node:fs';
import { callApiAgents } from './operator.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { Child, ECHO_SERVER_BIN, SIM_AGENTS_BIN, removeTempDir, requireBuilt, startMaster, MASTER_BIN } from './daemon.js';
import { machineCpu, procStat, rssBytes, type MachineCpu } from './procfs.js';

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
  /** Run each master with `--cpu-prof --cpu-prof-dir=DIR` (one .cpuprofile per master). Default: no profile. */
  cpuProfDir?: string;
  /** Other processes of the master's storms whose CPU time is counted (the etcd server). Default none. */
  alsoPids?: () => readonly number[];
  /** A counter read at go and at the last REGISTERED (etcd's revision: the write transactions over the storm). Default none. */
  counter?: () => Promise<number>;
}

/** Throw-away sessions each sim process registers before the clock starts (JIT warm-up). */
const WARMUP_SESSIONS = 500;
/**
 * Descriptors a process needs besides its sessions: stdio, epoll and eventfds, libuv's pool,
 * the registry (database, WAL, shm), the listening socket, etcd client channels, the operator
 * API call of the benchmark. Measured at 10,000 agents: the master holds ~40 besides them.
 */
const FD_HEADROOM = 256;
/** Sim processes at most, however large the storm: past this the split costs more than it saves. */
const MAX_SIM_PROCESSES = 8;
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
  /** Server CPU time (user + sys, s) from "go" to the last REGISTERED. */
  serverCpuS: number;
  /** The sim processes' CPU time over the same span, all of them together. */
  simCpuS: number;
  /** The CPU time of `alsoPids` over the same span (0 without them). */
  alsoCpuS: number;
  /** The whole machine's CPU time over the same span (every process, every CPU); undefined without /proc/stat. */
  machine: MachineCpu | undefined;
  /** How far StormOptions.counter moved over the same span; undefined without one. */
  counted: number | undefined;
  /** Open descriptors of the server and of each sim process, with every session up. */
  serverFds: number;
  simFds: number[];
  /** RSS of each sim process with every session up. */
  simRss: number[];
}

/** The hard RLIMIT_NOFILE of this process (its children inherit it; Node raises its soft limit to it). */
export function nofileHardLimit(): number {
  try {
    const line = readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith('Max open files'));
    const hard = line?.trim().split(/\s+/)[4];
    return hard === undefined || hard === 'unlimited' ? Number.POSITIVE_INFINITY : Number(hard);
  } catch {
    return Number.POSITIVE_INFINITY;
  }
}

/** Open descriptors of a process, or NaN when it is gone. */
function openFds(pid: number): number {
  try {
    return readdirSync(`/proc/${pid}/fd`).length;
  } catch {
    return Number.NaN;
  }
}

/**
 * Sim processes for a storm of `n`: the default (2 from 5,000 agents, else 1, see
 * StormOptions.processes), or more when one process could not hold its share of sockets
 * under the descriptor limit. Pure.
 */
export function simProcesses(n: number, requested: number | undefined, fdLimit: number): number {
  const byDefault = requested ?? (n >= 5_000 ? 2 : 1);
  const perProcess = fdLimit - FD_HEADROOM;
  const needed = perProcess > 0 ? Math.ceil(n / perProcess) : MAX_SIM_PROCESSES;
  return Math.max(1, Math.min(n, Math.max(byDefault, Math.min(needed, MAX_SIM_PROCESSES))));
}

/** Open files a server (master or echo) needs for `n` agent sessions. Pure. */
export function serverFdsNeeded(n: number): number {
  return n + FD_HEADROOM;
}

/**
 * Starts the sim-agent processes, waits until each is ready, says "go" to all, and waits
 * for every `registered` line. The clock runs from "go" to the last process's end.
 * `keepUp` runs while the sessions are still open (e.g. to ask the master what it knows).
 */
export async function storm(address: string, serverPid: number, n: number, opts: StormOptions, keepUp: () => Promise<void>, alsoPids: readonly number[] = []): Promise<StormRun> {
  const procs = simProcesses(n, opts.processes, nofileHardLimit());
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
    const counterAtGo = await opts.counter?.();
    const cpuOf = (pids: readonly number[]): number => pids.reduce((sum, pid) => sum + (procStat(pid)?.cpuSeconds ?? Number.NaN), 0);
    const cpuAtGo = procStat(serverPid)?.cpuSeconds ?? Number.NaN;
    const simCpuAtGo = cpuOf(sims.map((s) => s.pid));
    const alsoCpuAtGo = cpuOf(alsoPids);
    const machineAtGo = machineCpu();
    const goAt = Date.now();
    for (const s of sims) s.send('go');
    // Bounded: 10,000 agents at 30 s per attempt and 3 attempts is the worst case the sims allow.
    const ends = await Promise.all(sims.map((s) => s.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 150_000, 'registered line')));
    const elapsedMs = Math.max(...ends.map((r) => Number(r['endedAt']))) - goAt;
    const serverCpuS = (procStat(serverPid)?.cpuSeconds ?? Number.NaN) - cpuAtGo;
    const simCpuS = cpuOf(sims.map((s) => s.pid)) - simCpuAtGo;
    const alsoCpuS = cpuOf(alsoPids) - alsoCpuAtGo;
    const machineAtEnd = machineCpu();
    const machine = machineAtGo === undefined || machineAtEnd === undefined ? undefined : {
      busy: machineAtEnd.busy - machineAtGo.busy,
      idle: machineAtEnd.idle - machineAtGo.idle,
      steal: machineAtEnd.steal - machineAtGo.steal,
    };
    const counterAtEnd = await opts.counter?.();
    const serverRss = rssBytes(serverPid) ?? Number.NaN;
    const serverFds = openFds(serverPid);
    const simFds = sims.map((s) => openFds(s.pid));
    const simRss = sims.map((s) => rssBytes(s.pid) ?? Number.NaN);
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
      serverCpuS,
      simCpuS,
      alsoCpuS,
      machine,
      counted: counterAtGo === undefined || counterAtEnd === undefined ? undefined : counterAtEnd - counterAtGo,
      serverFds,
      simFds,
      simRss,
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

/**
 * One storm against a fresh echo server (the floor). `echoArgs`: its arguments (e.g.
 * `--etcd=HOST:PORT` for the floor whose answers wait for a write to etcd); `alsoPids` as storm()'s.
 */
export async function floorStorm(n: number, opts: StormOptions, echoArgs: readonly string[] = [], alsoPids: readonly number[] = []): Promise<StormRun> {
  const echo = new Child('echo-server', ECHO_SERVER_BIN, [...echoArgs]);
  try {
    const rec = await echo.waitForMsg('listening', {}, 10_000);
    const run = await storm(`127.0.0.1:${Number(rec['port'])}`, echo.pid, n, opts, async () => {}, alsoPids);
    if (run.failed > 0) throw new Error(`floor storm of ${n}: ${run.failed} clients failed (${run.errors.join('; ')})`);
    return run;
  } finally {
    await echo.stop(5_000);
  }
}

/** One storm against a fresh master; `listed` is how many sim agents GET_AGENTS returned. */
async function masterStorm(n: number, opts: StormOptions): Promise<StormRun & { listed?: number; listError?: string; stopNote?: string }> {
  const master = await startMaster(opts.masterFlags?.() ?? [], opts.cpuProfDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] });
  let listed: number | undefined;
  let listError: string | undefined;
  try {
    const run = await storm(master.address, master.daemon.pid, n, opts, async () => {
      try {
        listed = (await callApiAgents(master.url)).filter((a) => a.hostname.startsWith('sim-')).length;
      } catch (e) {
        listError = (e as Error).message;
      }
    }, opts.alsoPids?.() ?? []);
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
  const fdLimit = nofileHardLimit();
  const refused: string[] = [];
  for (const n of opts.counts) {
    const big = n >= 10_000;
    const huge = n >= 50_000;
    const timeGoal = huge ? { text: '< 30 s', ms: 30_000 } : undefined;
    const rssGoal = huge ? { text: '< 1 GB', bytes: 1024 * MB } : big ? { text: '< 500 MB', bytes: 500 * MB } : undefined;
    if (serverFdsNeeded(n) > fdLimit) {
      // The server would run out of descriptors part-way (EMFILE on accept): say what it needs instead.
      const why = `${n} agents need ${serverFdsNeeded(n)} open files in the master (one socket per agent + ${FD_HEADROOM}); the hard limit here is ${fdLimit} (ulimit -Hn): raise it for the benchmark (ulimit -Hn, docker --ulimit nofile=N:N, LimitNOFILE= of its unit)`;
      refused.push(why);
      rows.push({ benchmark: name, metric: `${n} agents registered in (median)`, value: Number.NaN, unit: 's', ...(timeGoal === undefined ? {} : { goal: { text: timeGoal.text, pass: false } }), note: `not run: ${why}` });
      continue;
    }
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
    const spread = (runs: readonly StormRun[]): string => runs.map((r) => (r.elapsedMs / 1000).toFixed(2)).join('/');
    const listedNote = masters.every((m) => m.listed === n) ? 'GET_AGENTS lists all' : `GET_AGENTS: ${masters.map((m) => m.listed ?? m.listError ?? '?').join(' / ')}`;
    const regNote = [
      complete ? `all ${n} registered` : `FAILED to register: ${masters.map((m) => m.failed).join('/')} of ${n} (${worst.errors.join('; ')})`,
      listedNote,
      `runs ${spread(masters)} s, floor ${spread(floors)} s`,
    ].join('; ');
    const ratio = run.elapsedMs / floor.elapsedMs;
    // 10,000 (and any size short of 50,000 from it): the ratio goal; 50,000 and up: the time goal.
    const goal = timeGoal !== undefined
      ? { text: timeGoal.text, pass: complete && run.elapsedMs < timeGoal.ms }
      : big ? { text: '<= 1.2x', pass: complete && ratio <= 1.2 } : undefined;
    rows.push({
      benchmark: name,
      metric: `${n} agents registered in (median)`,
      value: run.elapsedMs / 1000,
      unit: 's',
      ...against('raw ws echo', floor.elapsedMs / 1000, run.elapsedMs / 1000),
      ...(goal === undefined ? {} : { goal }),
      note: regNote,
    });
    const cpu = (runs: readonly StormRun[]): number => median(runs).serverCpuS;
    rows.push({
      benchmark: name,
      metric: `master CPU over the storm of ${n} (of the median run)`,
      value: cpu(masters),
      unit: 's',
      ...against('raw ws echo CPU', cpu(floors), cpu(masters)),
      note: `user + sys of the server process from go to the last REGISTERED; runs ${masters.map((m) => m.serverCpuS.toFixed(2)).join('/')} s, floor ${floors.map((f) => f.serverCpuS.toFixed(2)).join('/')} s`,
    });
    const m = run.machine;
    const f = floor.machine;
    if (m !== undefined && f !== undefined) {
      // Every party of the storm shares this machine's cores: where the master's extra time goes.
      // The rest is what no listed process used; the counters tick every 10 ms and are read a
      // moment apart, so it can come out a few ticks below zero: shown as 0.
      const split = (r: StormRun, machine: MachineCpu, server: string): string =>
        `${server} ${r.serverCpuS.toFixed(2)} s, sims ${r.simCpuS.toFixed(2)} s, the rest ${Math.max(0, machine.busy - r.serverCpuS - r.simCpuS - r.alsoCpuS).toFixed(2)} s${r.alsoCpuS > 0 ? ` and ${r.alsoCpuS.toFixed(2)} s of the registry's own processes` : ''}; idle ${machine.idle.toFixed(2)} s, stolen ${machine.steal.toFixed(2)} s`;
      rows.push({
        benchmark: name,
        metric: `machine CPU over the storm of ${n} (of the median run)`,
        value: m.busy,
        unit: 's',
        ...against('raw ws echo run', f.busy, m.busy),
        note: `every process on every CPU (/proc/stat) from go to the last REGISTERED: ${split(run, m, 'master')}; floor: ${split(floor, f, 'echo')}`,
      });
    }
    const most = (xs: readonly number[]): number => Math.max(...xs.filter(Number.isFinite));
    rows.push({
      benchmark: name,
      metric: `master RSS after ${n} (max)`,
      value: maxRss / MB,
      unit: 'MB',
      ...against('raw ws echo RSS', floor.serverRss / MB, maxRss / MB),
      ...(rssGoal === undefined ? {} : { goal: { text: rssGoal.text, pass: maxRss < rssGoal.bytes } }),
      note: `${(run.serverRssSettled / MB).toFixed(0)} MB 2 s later (after GET_AGENTS); open files: master ${most(masters.map((m) => m.serverFds))}, echo ${most(floors.map((f) => f.serverFds))}, each of ${run.simFds.length} sim processes up to ${most(masters.flatMap((m) => m.simFds))} (limit ${fdLimit}); sim RSS up to ${(most(masters.flatMap((m) => m.simRss)) / MB).toFixed(0)} MB each`,
    });
    context[`n${n}`] = { masters, floors };
  }
  return { benchmark: name, rows, context: { ...context, fdLimit }, ...(refused.length === 0 ? {} : { error: refused.join('; ') }) };
}

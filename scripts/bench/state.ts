/**
 * state: `GET /master/state` of a large cluster, the load Mesos-DNS, DC/OS's metrics and PaaSTA
 * backed off from on Mesos masters. 10,000 simulated agents (scripts/sim-agents.ts, split over
 * two processes, each agent on its own loopback address) register with 5 running tasks each (of
 * one framework the master recovers from their reports): 50,000 tasks.
 *
 * Figures:
 * - time to the last byte of one `GET /master/state` (the median of --st-repeats, after one
 *   untimed request), against the floor: `JSON.stringify` of the same object (the body, parsed)
 *   in this process, the median of as many runs;
 * - the master's longest event-loop stall while it serves: its own `drydock/event_loop_stall_max_ms`
 *   (perf_hooks' monitorEventLoopDelay, the largest delay of the last 10 s), read right after
 *   the last byte, once the figure had fallen below 30 ms before the requests (so it is theirs);
 * - ten concurrent requests, from the first sent to the last byte of the last, against ten times
 *   one; how many of them joined another's answer (Mesos' `master/http_cache_hits`);
 * - the master's CPU time per request (/proc, 10 ms ticks) against the floor's CPU time: on a
 *   machine other work shares, CPU time moves less than time to the last byte;
 * - the first request's time (cold: every task's text is written for the first time; later
 *   answers take the unchanged tasks' texts from their memos);
 * - for comparison, the v1 GET_STATE of the same cluster (built at once, then sent).
 *
 * Goals (issue 33): at most 1.5x the floor, no stall over 50 ms, ten concurrent requests cost
 * less than ten times one.
 */

import { request } from 'node:http';
import { performance } from 'node:perf_hooks';
import { against, type BenchResult, type ResultRow } from './report.js';
import { Child, SIM_AGENTS_BIN, removeTempDir, startMaster } from './daemon.js';
import { procStat, rssBytes } from './procfs.js';
import { nofileHardLimit, serverFdsNeeded, simProcesses } from './storm.js';

export interface StateOptions {
  /** Simulated agents. Default 10,000. */
  agents: number;
  /** Running tasks each agent reports. Default 5. */
  tasksPerAgent: number;
  /** Timed single requests (and floor runs); the median is reported. Default 5. */
  repeats: number;
  /** Requests in the concurrent round. Default 10. */
  concurrent: number;
  /** Source addresses of the sims are ipBase + k. */
  ipBase: string;
  /** Run the master with `--cpu-prof --cpu-prof-dir=DIR`. Default: no profile. */
  cpuProfDir?: string;
}

const MB = 1024 * 1024;
/** The stall figure must fall under this before a timed phase, so what it reads after is the phase's. */
const QUIET_MS = 30;

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? (s[mid] as number) : ((s[mid - 1] as number) + (s[mid] as number)) / 2;
}

/** One GET (or POST) to the master: time to the last byte (ms), bytes, and the body when asked for. */
function fetchTimed(url: string, opts: { keep?: boolean; method?: string; body?: string } = {}): Promise<{ ms: number; bytes: number; status: number; body?: Buffer }> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const headers: Record<string, string> = opts.body === undefined ? {} : { 'content-type': 'application/json', accept: 'application/json' };
    const req = request(url, { method: opts.method ?? 'GET', headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      res.on('data', (c: Buffer) => {
        bytes += c.length;
        if (opts.keep === true) chunks.push(c);
      });
      res.on('end', () => resolve({ ms: performance.now() - t0, bytes, status: res.statusCode ?? 0, ...(opts.keep === true ? { body: Buffer.concat(chunks) } : {}) }));
      res.on('error', reject);
    });
    req.setTimeout(120_000, () => req.destroy(new Error(`no answer from ${url} within 120 s`)));
    req.on('error', reject);
    req.end(opts.body);
  });
}

async function snapshot(base: string): Promise<Record<string, number>> {
  const r = await fetchTimed(`${base}/metrics/snapshot`, { keep: true });
  return JSON.parse((r.body as Buffer).toString('utf8')) as Record<string, number>;
}

/**
 * Waits (bounded) until the master's stall figure of the last 10 s is under QUIET_MS, so what it
 * reads after a phase is the phase's; on a machine busy with other work it may never get there:
 * then it goes on after `timeoutMs`. Returns the lowest figure seen: the idle master's stalls on
 * this machine now (another process holding the CPU shows up as a stall too), the baseline a
 * phase's figure is read against.
 */
async function quiet(base: string, timeoutMs = 12_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let lowest = Number.POSITIVE_INFINITY;
  for (let i = 0; i < Math.ceil(timeoutMs / 500) + 1 && Date.now() < deadline; i++) {
    lowest = Math.min(lowest, (await snapshot(base))['drydock/event_loop_stall_max_ms'] ?? 0);
    if (lowest < QUIET_MS) return lowest;
    await new Promise((r) => setTimeout(r, 500));
  }
  return lowest;
}

/** Polls (bounded) until the master holds every reported task. */
async function allTasks(base: string, want: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let seen = 0;
  for (let i = 0; i < Math.ceil(timeoutMs / 500) + 1 && Date.now() < deadline; i++) {
    seen = (await snapshot(base))['master/tasks_running'] ?? 0;
    if (seen >= want) return;
    await new Promise((r) => setTimeout(r, 500));
  }
  throw new Error(`the master holds ${seen} of ${want} tasks after ${timeoutMs} ms`);
}

export async function runState(opts: StateOptions): Promise<BenchResult> {
  const name = 'state';
  const rows: ResultRow[] = [];
  const tasks = opts.agents * opts.tasksPerAgent;
  const context: Record<string, unknown> = { agents: opts.agents, tasks, repeats: opts.repeats, concurrent: opts.concurrent };
  const fdLimit = nofileHardLimit();
  if (serverFdsNeeded(opts.agents) > fdLimit) {
    return { benchmark: name, rows, context, error: `${opts.agents} agents need ${serverFdsNeeded(opts.agents)} open files in the master; the hard limit here is ${fdLimit} (ulimit -Hn)` };
  }
  const master = await startMaster([], opts.cpuProfDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] });
  const procs = simProcesses(opts.agents, undefined, fdLimit);
  const sims: Child[] = [];
  try {
    const per = Math.ceil(opts.agents / procs);
    for (let p = 0; p < procs; p++) {
      const count = Math.min(per, opts.agents - p * per);
      sims.push(new Child(`sim-agents-${p}`, SIM_AGENTS_BIN, [`--master=${master.address}`, `--count=${count}`, `--first=${1 + p * per}`, `--ip-base=${opts.ipBase}`, '--concurrency=128', `--tasks=${opts.tasksPerAgent}`]));
    }
    for (const s of sims) {
      const reg = await s.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 300_000, 'registered line');
      if (reg.msg !== 'registered') throw new Error(`sim agents: ${String(reg['failed'])} failed to register (${JSON.stringify(reg['errors'])})`);
    }
    await allTasks(master.url, tasks, 120_000);
    const stateUrl = `${master.url}/master/state`;

    // Untimed: the JIT compiles the path, the first answer's allocations happen.
    await quiet(master.url, 30_000);
    const cpuOf = (): number => procStat(master.daemon.pid)?.cpuSeconds ?? Number.NaN;
    const firstCpu0 = cpuOf();
    const first = await fetchTimed(stateUrl, { keep: true });
    const firstCpu = (cpuOf() - firstCpu0) * 1000;
    if (first.status !== 200) throw new Error(`GET /master/state answered ${first.status}`);
    const body = first.body as Buffer;
    context['stateBytes'] = body.length;

    // One request at a time.
    const idleStall = await quiet(master.url);
    context['idleStallMs'] = idleStall;
    const singles: number[] = [];
    const singleCpus: number[] = [];
    for (let i = 0; i < opts.repeats; i++) {
      const c0 = cpuOf();
      singles.push((await fetchTimed(stateUrl)).ms);
      singleCpus.push((cpuOf() - c0) * 1000);
    }
    const singleStall = (await snapshot(master.url))['drydock/event_loop_stall_max_ms'] ?? Number.NaN;

    // The floor: JSON.stringify of the same object, in this process.
    const object = JSON.parse(body.toString('utf8')) as unknown;
    const floors: number[] = [];
    const floorCpus: number[] = [];
    let floorBytes = 0;
    for (let i = 0; i < opts.repeats + 1; i++) {
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      const text = JSON.stringify(object);
      const ms = performance.now() - t0;
      const c = process.cpuUsage(c0);
      // The first warms the stringifier up, as the untimed request did the master.
      if (i > 0) {
        floors.push(ms);
        floorCpus.push((c.user + c.system) / 1000);
      }
      floorBytes = text.length;
    }
    context['floorChars'] = floorBytes;
    const single = median(singles);
    const floor = median(floors);
    rows.push({
      benchmark: name,
      metric: `GET /master/state, ${opts.agents.toLocaleString('en')} agents, ${tasks.toLocaleString('en')} tasks: time to the last byte (median of ${opts.repeats})`,
      value: single,
      unit: 'ms',
      ...against('JSON.stringify of the same object', floor, single),
      goal: { text: '<= 1.5x', pass: single <= 1.5 * floor },
      note: `${(body.length / MB).toFixed(1)} MB; runs: ${singles.map((x) => x.toFixed(0)).join(', ')} ms; floor runs: ${floors.map((x) => x.toFixed(0)).join(', ')} ms`,
    });
    rows.push({
      benchmark: name,
      metric: "the master's CPU time per GET /master/state (median)",
      value: median(singleCpus),
      unit: 'ms',
      ...against('CPU time of JSON.stringify of the same object', median(floorCpus), median(singleCpus)),
      note: `runs: ${singleCpus.map((x) => x.toFixed(0)).join(', ')} ms`,
    });
    rows.push({
      benchmark: name,
      metric: 'the first GET /master/state (cold: no task text written before): time to the last byte',
      value: first.ms,
      unit: 'ms',
      ...against('JSON.stringify of the same object', floor, first.ms),
      note: `master CPU ${firstCpu.toFixed(0)} ms`,
    });
    rows.push({
      benchmark: name,
      metric: "the master's longest event-loop stall while serving them (its drydock/event_loop_stall_max_ms)",
      value: singleStall,
      unit: 'ms',
      goal: { text: '<= 50 ms', pass: singleStall <= 50 },
      note: `the idle master's figure just before, on this machine: ${idleStall.toFixed(1)} ms`,
    });

    // Ten at once.
    const idleBefore = await quiet(master.url);
    const hitsBefore = (await snapshot(master.url))['master/http_cache_hits'] ?? 0;
    const t0 = performance.now();
    await Promise.all(Array.from({ length: opts.concurrent }, () => fetchTimed(stateUrl)));
    const concurrentMs = performance.now() - t0;
    const after = await snapshot(master.url);
    const concurrentStall = after['drydock/event_loop_stall_max_ms'] ?? Number.NaN;
    const joined = (after['master/http_cache_hits'] ?? 0) - hitsBefore;
    rows.push({
      benchmark: name,
      metric: `${opts.concurrent} concurrent GET /master/state: first sent to last byte of the last`,
      value: concurrentMs,
      unit: 'ms',
      ...against(`${opts.concurrent} x one request`, opts.concurrent * single, concurrentMs),
      goal: { text: `< ${opts.concurrent}x one`, pass: concurrentMs < opts.concurrent * single },
      note: `${joined} of ${opts.concurrent} joined another's answer (master/http_cache_hits)`,
    });
    rows.push({
      benchmark: name,
      metric: `the master's longest event-loop stall over the ${opts.concurrent} concurrent requests`,
      value: concurrentStall,
      unit: 'ms',
      goal: { text: '<= 50 ms', pass: concurrentStall <= 50 },
      note: `idle just before: ${idleBefore.toFixed(1)} ms`,
    });

    // For comparison: the v1 GET_STATE, built at once.
    await quiet(master.url);
    const v1: number[] = [];
    let v1Bytes = 0;
    for (let i = 0; i < Math.min(3, opts.repeats); i++) {
      const r = await fetchTimed(`${master.url}/api/v1`, { method: 'POST', body: '{"type":"GET_STATE"}' });
      v1.push(r.ms);
      v1Bytes = r.bytes;
    }
    const v1Stall = (await snapshot(master.url))['drydock/event_loop_stall_max_ms'] ?? Number.NaN;
    rows.push({
      benchmark: name,
      metric: 'for comparison: POST /api/v1 GET_STATE of the same cluster, built at once (median)',
      value: median(v1),
      unit: 'ms',
      note: `${(v1Bytes / MB).toFixed(1)} MB; longest stall ${v1Stall.toFixed(0)} ms`,
    });
    const rss = rssBytes(master.daemon.pid);
    if (rss !== undefined) rows.push({ benchmark: name, metric: 'master RSS after the runs', value: rss / MB, unit: 'MB' });
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, context, error: e instanceof Error ? e.message : String(e) };
  } finally {
    for (const s of sims) await s.stop(10_000, 'SIGTERM');
    await master.daemon.stop();
    removeTempDir(master.workDir);
  }
}

/**
 * service-deploy: how long drydock-scheduler takes to deploy 100 pods (one task each, `exec
 * sleep 600`, cpus 0.1, mem 1 MB, no readiness check) onto 10 real agents (127.0.0.2-11, the
 * throughput benchmark's cluster: same master flags, same agent resources), once with the
 * deploy phase `serial` and once `parallel`, each on a fresh master and agents.
 *
 * No readiness check: a step completes on TASK_RUNNING, so the figure is the scheduler (plans,
 * offers, placement, launches, status handling) and the master's launch path, not a check's
 * interval.
 *
 * Figure: from the scheduler's `subscribed` log line (its `time`) to the first GET
 * /v1/plans/deploy (polled every 20 ms) that answers COMPLETE. The plan is polled only once the
 * scheduler has logged its 100th `launching` line (it cannot be COMPLETE before): polling the
 * whole plan every 20 ms through a 6.8 s serial deploy took 0.4 s of the scheduler's 3.3 s of
 * CPU (a CPU profile), which would be on the clock. Floors, measured in the same run
 * on the same master and agents before the scheduler starts, with the bench framework
 * (scripts/bench/framework.ts), which holds every offer it gets and acknowledges at once:
 *  - parallel: the throughput benchmark's measurement at 100 tasks: first ACCEPT -> 100th
 *    TASK_RUNNING, ACCEPTs sent as offers come (launchSpread).
 *  - serial: 100 launches one after another, each ACCEPT (one task, on an offer already in
 *    hand, on the previous launch's agent while it has room, as the scheduler's serial deploy
 *    does) waiting for the previous task's TASK_RUNNING: first ACCEPT -> 100th TASK_RUNNING.
 *    That is the fastest a one-pod-at-a-time deploy can go through this master and these
 *    agents. (The `launch` benchmark's RUN_TASK -> TASK_RUNNING leaves out the master and
 *    the scheduler API, and `accept` uses one agent; both would flatter the floor.) The batch
 *    floor is in the note too, as is the ratio against it.
 *  - serial, per pod: the p50 interval between consecutive `launching` log lines (launch of
 *    pod i -> launch of pod i+1: launch, TASK_RUNNING, step COMPLETE, next step placed),
 *    against the p50 interval between consecutive ACCEPTs of the serial floor (ACCEPT,
 *    TASK_RUNNING, next ACCEPT). The note splits the scheduler's interval at the agent's `task
 *    running` log line: launch path, and the way back (update to the scheduler, step COMPLETE,
 *    next step placed and written).
 * Afterwards the scheduler gets SIGTERM (its tasks stay, as a failing-over framework's do) and
 * the agents SIGUSR1 (they kill their tasks and exit); what is left is reaped and counted.
 */

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize } from './stats.js';
import { makeTempDir, removeTempDir, startAgent, startMaster, startScheduler, type Child, type LogRecord } from './daemon.js';
import { BenchFramework, benchTask, offered, tasksFitting, type BenchOffer } from './framework.js';
import { launchersUnder, reapLeftovers } from './procfs.js';
import { agentResources, launchSpread } from './throughput.js';
import { SCHEDULER_FLAGS, benchServiceYaml, gaps, logTimeMs, planOf, podTasks, pollUntil, waitForLines } from './service.js';

export interface ServiceDeployOptions {
  /** Pod instances to deploy. Default 100. */
  pods: number;
  /** Real agents, on 127.0.0.2 and up. Default 10. */
  agents: number;
  /** Deploy phase strategies, one fresh cluster each. Default serial, parallel. */
  strategies: Array<'serial' | 'parallel'>;
}

/** The task, as the throughput benchmark's (framework.ts TASK_COMMAND, exec'd). */
const POD_CMD = 'exec sleep 600';

/** The floors, measured with the bench framework on the cluster the scheduler then uses. */
interface Floors {
  /** First ACCEPT -> last TASK_RUNNING, ACCEPTs as offers come. */
  batchMs: number;
  /** Serial floor: first ACCEPT -> last TASK_RUNNING, one launch at a time. */
  sequentialMs?: number;
  /** Serial floor: ACCEPT -> next ACCEPT, and ACCEPT -> its TASK_RUNNING. */
  acceptGapsMs?: number[];
  acceptToRunningMs?: number[];
}

/** TEARDOWN `f`, then waits (bounded, 30 s) until no task runs under the agents' work dirs; returns how many still do. */
async function tearDown(f: BenchFramework, workDirs: readonly string[]): Promise<number> {
  await f.teardown();
  const live = (): number => workDirs.reduce((n, d) => n + launchersUnder(d).length, 0);
  for (let i = 0; i < 300 && live() > 0; i++) await new Promise((r) => setTimeout(r, 100));
  return live();
}

/**
 * `n` launches of one task each, every one waiting for the previous TASK_RUNNING. The next
 * launch goes to the agent of the previous one when its offer is back in hand (a busy agent
 * answers fastest, and the scheduler's serial deploy fills one agent at a time too), else to
 * any agent with room.
 */
async function sequentialLaunches(f: BenchFramework, n: number): Promise<{ totalMs: number; acceptGapsMs: number[]; acceptToRunningMs: number[] }> {
  const acceptAt: number[] = [];
  const toRunning: number[] = [];
  let last = Number.NaN;
  let agent: string | undefined;
  const fits = (o: BenchOffer): boolean => tasksFitting(offered(o, 'cpus'), offered(o, 'mem')) >= 1;
  for (let i = 0; i < n; i++) {
    const offer = await f.until(() => f.takeOffer((o) => fits(o) && o.agent_id.value === agent) ?? f.takeOffer(fits), 20_000, `an offer for launch ${i}`);
    agent = offer.agent_id.value;
    const task = benchTask(`seq-${i}`, offer);
    const id = task.task_id.value;
    const t = performance.now();
    acceptAt.push(t);
    await f.launch(offer, [task]);
    last = await f.until(() => {
      const failed = f.failed.get(id);
      if (failed !== undefined) throw new Error(`${id} did not start: ${failed}`);
      return f.runningAt.get(id);
    }, 20_000, `${id} TASK_RUNNING`);
    toRunning.push(last - t);
  }
  return { totalMs: last - (acceptAt[0] ?? Number.NaN), acceptGapsMs: gaps(acceptAt), acceptToRunningMs: toRunning };
}

async function measureFloors(master: string, workDirs: readonly string[], pods: number, perAgent: number, serial: boolean): Promise<Floors> {
  const batch = await BenchFramework.subscribe(master, 'drydock-bench-service-floor');
  let batchMs: number;
  try {
    batchMs = (await launchSpread(batch, { tasks: pods, perAgent, prefix: 'floor', timeoutMs: 120_000 })).elapsedMs;
  } finally {
    const left = await tearDown(batch, workDirs);
    if (left > 0) throw new Error(`${left} floor tasks still alive 30 s after TEARDOWN`);
  }
  if (!serial) return { batchMs };
  const seq = await BenchFramework.subscribe(master, 'drydock-bench-service-serial-floor');
  try {
    const s = await sequentialLaunches(seq, pods);
    return { batchMs, sequentialMs: s.totalMs, acceptGapsMs: s.acceptGapsMs, acceptToRunningMs: s.acceptToRunningMs };
  } finally {
    const left = await tearDown(seq, workDirs);
    if (left > 0) throw new Error(`${left} serial floor tasks still alive 30 s after TEARDOWN`);
  }
}

const ms = (v: number): string => `${Math.round(v)} ms`;

/** One deploy with `strategy` on a fresh master and agents; its rows. */
async function deployOnce(strategy: 'serial' | 'parallel', opts: ServiceDeployOptions): Promise<ResultRow[]> {
  const name = 'service-deploy';
  const perAgent = Math.ceil(opts.pods / opts.agents);
  const notes: string[] = [];
  const master = await startMaster();
  const agents: Array<{ daemon: Child; workDir: string }> = [];
  let scheduler: { daemon: Child; url: string; workDir: string } | undefined;
  const rows: ResultRow[] = [];
  const specDir = makeTempDir('drydock-bench-spec-');
  try {
    agents.push(...await Promise.all(
      Array.from({ length: opts.agents }, (_, i) =>
        startAgent(master.address, { ip: `127.0.0.${i + 2}`, hostname: `bench-agent-${i + 1}`, resources: agentResources(perAgent), flags: ['--registration_backoff_factor=10ms'] }),
      ),
    ));
    await Promise.all(agents.map((a) => a.daemon.waitForMsg('registered', {}, 30_000)));
    const floors = await measureFloors(master.address, agents.map((a) => a.workDir), opts.pods, perAgent, strategy === 'serial');

    const spec = join(specDir, 'service.yml');
    writeFileSync(spec, benchServiceYaml({ count: opts.pods, strategy, cmd: POD_CMD, cpus: 0.1, memoryMb: 1 }));
    scheduler = await startScheduler(master.address, spec, SCHEDULER_FLAGS);
    const s = scheduler;
    const load = loadavg()[0] ?? Number.NaN;
    const t0 = logTimeMs(await s.daemon.waitForMsg('subscribed', {}, 30_000));
    const timeoutMs = strategy === 'serial' ? 600_000 : 120_000;
    // The plan cannot be COMPLETE before the last pod is launched: the API is polled only from
    // then on, so the polling (JSON of every step, every 20 ms) does not load the scheduler
    // while it works.
    const isLaunch = (r: LogRecord): boolean => r.msg === 'launching' && r['plan'] === 'deploy';
    await waitForLines(s.daemon, isLaunch, opts.pods, timeoutMs);
    const done = await pollUntil(async () => {
      const p = await planOf(s.url, 'deploy');
      if (p.status === 'ERROR') throw new Error(`deploy plan ERROR: ${p.errors.join('; ')}`);
      return p.status === 'COMPLETE' ? p : undefined;
    }, timeoutMs, `deploy of ${opts.pods} pods (${strategy}) COMPLETE`);
    const deployMs = done.atMs - t0;

    const launchRecs = s.daemon.records.filter(isLaunch);
    const launches = launchRecs.map(logTimeMs);
    // When each task's agent logged it running (epoch ms), by task id.
    const runningAt = new Map<string, number>();
    for (const a of agents) for (const r of a.daemon.records) if (r.msg === 'task running') runningAt.set(String(r['taskId']), logTimeMs(r));
    const firstTask = (r: LogRecord): string => String((r['tasks'] as unknown[] | undefined)?.[0]);
    const tasks = await podTasks(s.url);
    const running = tasks.filter((t) => t.status === 'RUNNING');
    const perHost = new Map<string, number>();
    for (const t of running) perHost.set(t.hostname, (perHost.get(t.hostname) ?? 0) + 1);
    const warnings = s.daemon.records.filter((r) => r['level'] === 'warn' || r['level'] === 'error').length;
    const lastRunning = Math.max(...runningAt.values());
    notes.push(`${running.length}/${tasks.length} RUNNING, pods per agent ${[...perHost.values()].sort((x, y) => y - x).join(',')}`);
    notes.push(`subscribed -> first 'launching' ${ms((launches[0] ?? Number.NaN) - t0)}, first -> last 'launching' ${ms((launches.at(-1) ?? Number.NaN) - (launches[0] ?? Number.NaN))}, last agent 'task running' -> COMPLETE seen ${ms(done.atMs - lastRunning)}`);
    notes.push(`load average ${load.toFixed(1)} on ${cpus().length} cores`);
    if (warnings > 0) notes.push(`${warnings} warn/error log lines`);

    if (strategy === 'parallel') {
      rows.push({
        benchmark: name,
        metric: `${opts.pods} pods, parallel: subscribed -> deploy COMPLETE`,
        value: deployMs,
        unit: 'ms',
        ...against(`first ACCEPT -> ${opts.pods}th TASK_RUNNING`, floors.batchMs, deployMs),
        note: `${opts.agents} agents, no readiness check, plan polled every 20 ms; ${notes.join('; ')}`,
      });
    } else {
      const seqMs = floors.sequentialMs ?? Number.NaN;
      const batchRatio = deployMs / floors.batchMs;
      rows.push({
        benchmark: name,
        metric: `${opts.pods} pods, serial: subscribed -> deploy COMPLETE`,
        value: deployMs,
        unit: 'ms',
        ...against(`${opts.pods} sequential ACCEPT -> TASK_RUNNING`, seqMs, deployMs),
        note: `${opts.agents} agents, no readiness check; batch floor (first ACCEPT -> ${opts.pods}th TASK_RUNNING) ${ms(floors.batchMs)}, ${batchRatio.toFixed(1)}x; ${notes.join('; ')}`,
      });
      const podGaps = summarize(gaps(launches));
      const floorGaps = summarize(floors.acceptGapsMs ?? []);
      const toRunning = summarize(floors.acceptToRunningMs ?? []);
      // Each pod's interval split at its agent's 'task running' line: launch path, then the way back to the next launch.
      const launchToRunning = summarize(launchRecs.map((r) => (runningAt.get(firstTask(r)) ?? Number.NaN) - logTimeMs(r)).filter(Number.isFinite));
      const runningToNext = summarize(launchRecs.slice(0, -1).map((r, i) => (launches[i + 1] ?? Number.NaN) - (runningAt.get(firstTask(r)) ?? Number.NaN)).filter(Number.isFinite));
      rows.push({
        benchmark: name,
        metric: 'serial, per pod: launching -> next launching p50',
        value: podGaps.p50,
        unit: 'ms',
        ...against('ACCEPT -> next ACCEPT p50', floorGaps.p50, podGaps.p50),
        note: `n=${podGaps.n}, p99 ${ms(podGaps.p99)}, max ${ms(podGaps.max)} (log times, 1 ms resolution); 'launching' -> agent 'task running' p50 ${ms(launchToRunning.p50)}, agent 'task running' -> next 'launching' p50 ${ms(runningToNext.p50)}; floor ACCEPT -> TASK_RUNNING p50 ${toRunning.p50.toFixed(1)} ms, p99 ${toRunning.p99.toFixed(1)} ms`,
      });
    }
    return rows;
  } finally {
    // SIGTERM: the scheduler leaves its tasks (a framework failing over); SIGUSR1: the agents kill them and exit.
    await scheduler?.daemon.stop(10_000);
    await Promise.all(agents.map((a) => a.daemon.stop(15_000, 'SIGUSR1')));
    const reaped = agents.reduce((n, a) => n + reapLeftovers(a.workDir), 0);
    const last = rows.at(-1);
    if (reaped > 0 && last !== undefined) last.note = `${last.note ?? ''}; ${reaped} processes reaped after the agents exited`;
    for (const a of agents) removeTempDir(a.workDir);
    await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
    if (scheduler !== undefined) removeTempDir(scheduler.workDir);
    removeTempDir(specDir);
  }
}

export async function runServiceDeploy(opts: ServiceDeployOptions): Promise<BenchResult> {
  const rows: ResultRow[] = [];
  const context = { pods: opts.pods, agents: opts.agents, strategies: opts.strategies, schedulerFlags: SCHEDULER_FLAGS };
  try {
    for (const s of opts.strategies) rows.push(...(await deployOnce(s, opts)));
    return { benchmark: 'service-deploy', rows, context };
  } catch (e) {
    return { benchmark: 'service-deploy', rows, error: (e as Error).message, context };
  }
}

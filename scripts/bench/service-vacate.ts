/**
 * service-vacate: how long drydock-scheduler takes to move 20 pods off a machine going into
 * maintenance and accept the inverse offer. A real master (the throughput benchmark's flags),
 * agent A (127.0.0.2) alone while the scheduler deploys 20 pods (parallel phase), so all of
 * them land on A; then agent B (127.0.0.3, room for all 20) joins and the cluster settles for
 * a second (B's first offer is held, then declined, as in any steady state); then a
 * maintenance window on A starting now is POSTed to the master.
 *
 * Each pod is `sleep 0.5; touch ready; exec sleep 600` with the readiness check `test -f
 * ready` every 0.1 s: a move is only done once the replacement on B is ready, and the old task
 * on A is killed only then, so readiness is on the critical path by design.
 *
 * Figure: from just before the POST /maintenance/schedule to the first GET /maintenance/status
 * (polled every 20 ms) showing the scheduler's answer for A as ACCEPT. Floor: how long one pod
 * takes from launch to ready in this run's deploy: the scheduler's `launching` log line (its
 * `time`) to the first GET /v1/pod/status (polled every 20 ms) showing the task ready, p50 over
 * the 20 pods, all launched at once on one agent as the replacements are. A vacate cannot beat
 * one readiness: ratio = vacate / readiness p50. The note breaks the vacate down from the
 * scheduler's log lines (inverse offer received, replacements launched, old tasks killed,
 * inverse offer accepted), in ms after the POST, and separates the agents' part from the
 * scheduler's: 'task launched' -> the agent's 'check status changed' to exit 0, for the deploy
 * on A and the move to B, and B's check passing -> the scheduler's kill of that pod's old task.
 */

import { writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize } from './stats.js';
import { makeTempDir, removeTempDir, startAgent, startMaster, startScheduler, type Child, type LogRecord } from './daemon.js';
import { reapLeftovers } from './procfs.js';
import { agentResources } from './throughput.js';
import { SCHEDULER_FLAGS, benchServiceYaml, delays, logTimeMs, maintenanceAnswer, maintenanceScheduleBody, planOf, podTasks, pollUntil, scheduleMaintenance } from './service.js';

export interface ServiceVacateOptions {
  /** Pods on the vacated agent. Default 20. */
  pods: number;
}

const POD_CMD = 'sleep 0.5; touch ready; exec sleep 600';
const READINESS = { cmd: 'test -f ready', intervalS: 0.1 };
const AGENT_A = { ip: '127.0.0.2', hostname: 'bench-vacate-a' };
const AGENT_B = { ip: '127.0.0.3', hostname: 'bench-vacate-b' };
/** After B registers: longer than --offer_hold (200 ms), so B's first offer has been held and declined. */
const SETTLE_MS = 1_000;

const ms = (v: number): string => `${Math.round(v)} ms`;

/** Epoch ms of the first record after index `from` matching `pred`, or NaN. */
function firstTime(records: readonly LogRecord[], from: number, pred: (r: LogRecord) => boolean): number {
  const r = records.slice(from).find(pred);
  return r === undefined ? Number.NaN : logTimeMs(r);
}

/** A task id's pod instance and task (`bench-3-server__<uuid>` -> `bench-3-server`). */
const podOf = (taskId: string): string => taskId.split('__')[0] ?? taskId;

/** From an agent's log: when it launched each task, and when each task's check first passed (epoch ms, by task id). */
function agentTimes(records: readonly LogRecord[]): { launched: Map<string, number>; ready: Map<string, number> } {
  const launched = new Map<string, number>();
  const ready = new Map<string, number>();
  for (const r of records) {
    const id = String(r['taskId']);
    if (r.msg === 'task launched') launched.set(id, logTimeMs(r));
    const passed = (r['checkStatus'] as { command?: { exit_code?: unknown } } | undefined)?.command?.exit_code === 0;
    if (r.msg === 'check status changed' && passed && !ready.has(id)) ready.set(id, logTimeMs(r));
  }
  return { launched, ready };
}

export async function runServiceVacate(opts: ServiceVacateOptions): Promise<BenchResult> {
  const name = 'service-vacate';
  const rows: ResultRow[] = [];
  const notes: string[] = [];
  const context: Record<string, unknown> = { pods: opts.pods, cmd: POD_CMD, readiness: READINESS, schedulerFlags: SCHEDULER_FLAGS, settleMs: SETTLE_MS };
  const master = await startMaster();
  const agents: Array<{ daemon: Child; workDir: string }> = [];
  let scheduler: { daemon: Child; url: string; workDir: string } | undefined;
  const specDir = makeTempDir('drydock-bench-spec-');
  try {
    const a = await startAgent(master.address, { ...AGENT_A, resources: agentResources(opts.pods), flags: ['--registration_backoff_factor=10ms'] });
    agents.push(a);
    await a.daemon.waitForMsg('registered', {}, 30_000);

    const spec = join(specDir, 'service.yml');
    writeFileSync(spec, benchServiceYaml({ count: opts.pods, strategy: 'parallel', cmd: POD_CMD, cpus: 0.1, memoryMb: 1, readiness: READINESS }));
    scheduler = await startScheduler(master.address, spec, SCHEDULER_FLAGS);
    const s = scheduler;
    const frameworkId = String((await s.daemon.waitForMsg('subscribed', {}, 30_000))['frameworkId']);

    // Deploy: when each task is first seen ready.
    const readyAt = new Map<string, number>();
    await pollUntil(async () => {
      const tasks = await podTasks(s.url);
      const now = Date.now();
      for (const t of tasks) if (t.ready === true && !readyAt.has(t.id)) readyAt.set(t.id, now);
      return tasks.length === opts.pods && tasks.every((t) => t.ready === true) ? true : undefined;
    }, 120_000, `${opts.pods} pods ready on ${AGENT_A.hostname}`);
    await pollUntil(async () => ((await planOf(s.url, 'deploy')).status === 'COMPLETE' ? true : undefined), 30_000, 'deploy COMPLETE');
    const launchedAt = new Map<string, number>();
    for (const r of s.daemon.records) {
      if (r.msg !== 'launching' || r['plan'] !== 'deploy') continue;
      for (const id of (r['tasks'] as string[] | undefined) ?? []) launchedAt.set(id, logTimeMs(r));
    }
    const readiness = summarize(delays(launchedAt, readyAt));
    if (readiness.n !== opts.pods) notes.push(`readiness measured for ${readiness.n} of ${opts.pods} pods`);

    const b = await startAgent(master.address, { ...AGENT_B, resources: agentResources(opts.pods), flags: ['--registration_backoff_factor=10ms'] });
    agents.push(b);
    await b.daemon.waitForMsg('registered', {}, 30_000);
    await new Promise((r) => setTimeout(r, SETTLE_MS));

    const load = loadavg()[0] ?? Number.NaN;
    const mark = s.daemon.records.length;
    const t0 = Date.now();
    await scheduleMaintenance(master.url, maintenanceScheduleBody(AGENT_A.hostname, AGENT_A.ip, t0, 3_600_000));
    const accepted = await pollUntil(async () => {
      const answer = await maintenanceAnswer(master.url, AGENT_A.hostname, frameworkId);
      if (answer === 'DECLINE') throw new Error(`the scheduler declined the inverse offer for ${AGENT_A.hostname}`);
      return answer === 'ACCEPT' ? true : undefined;
    }, 120_000, `the inverse offer for ${AGENT_A.hostname} ACCEPTed`);
    const vacateMs = accepted.atMs - t0;

    // Where the time went, from the scheduler's own log lines (epoch ms, 1 ms resolution).
    const recs = s.daemon.records;
    const rel = (t: number): string => ms(t - t0);
    const moveLaunches = recs.slice(mark).filter((r) => r.msg === 'launching' && r['plan'] === 'maintenance').map(logTimeMs);
    const kills = recs.slice(mark).filter((r) => r.msg === 'killing task').map(logTimeMs);
    const breakdown = {
      inverseOfferMs: firstTime(recs, mark, (r) => r.msg === 'inverse offer') - t0,
      firstLaunchMs: (moveLaunches[0] ?? Number.NaN) - t0,
      lastLaunchMs: (moveLaunches.at(-1) ?? Number.NaN) - t0,
      firstKillMs: (kills[0] ?? Number.NaN) - t0,
      lastKillMs: (kills.at(-1) ?? Number.NaN) - t0,
      acceptedMs: firstTime(recs, mark, (r) => r.msg === 'inverse offer accepted') - t0,
    };
    context['breakdownMs'] = breakdown;
    context['readinessMs'] = readiness;
    notes.push(
      `after the POST: inverse offer ${rel(t0 + breakdown.inverseOfferMs)}, ${moveLaunches.length} replacements launched ${rel(t0 + breakdown.firstLaunchMs)}-${rel(t0 + breakdown.lastLaunchMs)}, ` +
      `${kills.length} old tasks killed ${rel(t0 + breakdown.firstKillMs)}-${rel(t0 + breakdown.lastKillMs)}, accepted (scheduler log) ${rel(t0 + breakdown.acceptedMs)}`,
    );
    notes.push(`readiness p99 ${ms(readiness.p99)}, max ${ms(readiness.max)}`);
    // The agents' side of readiness ('task launched' -> check passed), deploy on A and move on B,
    // and how long after B's check passed the scheduler killed the pod's old task on A.
    const onA = agentTimes(a.daemon.records);
    const onB = agentTimes(b.daemon.records);
    const agentDeploy = summarize(delays(onA.launched, onA.ready));
    const agentMove = summarize(delays(onB.launched, onB.ready));
    const killedAt = new Map<string, number>();
    for (const r of recs.slice(mark)) if (r.msg === 'killing task') killedAt.set(podOf(String(r['taskId'])), logTimeMs(r));
    const readyByPod = new Map([...onB.ready].map(([id, t]) => [podOf(id), t]));
    const killLag = summarize(delays(readyByPod, killedAt));
    context['agentReadinessMs'] = { deploy: agentDeploy, move: agentMove };
    context['readyToKillMs'] = killLag;
    notes.push(`agent 'task launched' -> check passed p50: deploy ${ms(agentDeploy.p50)}, move ${ms(agentMove.p50)}; B's check passed -> old task killed p50 ${ms(killLag.p50)}, max ${ms(killLag.max)}`);

    const after = await podTasks(s.url);
    const readyOnB = after.filter((t) => t.hostname === AGENT_B.hostname && t.status === 'RUNNING' && t.ready === true).length;
    const leftOnA = after.filter((t) => t.hostname === AGENT_A.hostname).length;
    notes.push(`${readyOnB}/${opts.pods} ready on ${AGENT_B.hostname}, ${leftOnA} left on ${AGENT_A.hostname}`);
    notes.push(`load average ${load.toFixed(1)} on ${cpus().length} cores`);
    rows.push({
      benchmark: name,
      metric: `vacate ${opts.pods} pods: maintenance POST -> inverse offer ACCEPT`,
      value: vacateMs,
      unit: 'ms',
      ...against('pod readiness p50 (launching -> ready)', readiness.p50, vacateMs),
      note: `readiness check '${READINESS.cmd}' every ${READINESS.intervalS} s after '${POD_CMD}'; polled every 20 ms; ${notes.join('; ')}`,
    });
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message, context };
  } finally {
    // SIGTERM: the scheduler leaves its tasks (a framework failing over); SIGUSR1: the agents kill them and exit.
    await scheduler?.daemon.stop(10_000);
    await Promise.all(agents.map((x) => x.daemon.stop(15_000, 'SIGUSR1')));
    const reaped = agents.reduce((n, x) => n + reapLeftovers(x.workDir), 0);
    const last = rows.at(-1);
    if (reaped > 0 && last !== undefined) last.note = `${last.note ?? ''}; ${reaped} processes reaped after the agents exited`;
    for (const x of agents) removeTempDir(x.workDir);
    await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
    if (scheduler !== undefined) removeTempDir(scheduler.workDir);
    removeTempDir(specDir);
  }
}

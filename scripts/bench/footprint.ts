/**
 * footprint: what the agent costs a machine. RSS (VmRSS) and CPU (utime+stime over a
 * window) of the agent process idle (registered, no tasks) and with 100 running `sleep`
 * tasks. The per-task launchers (`drydock-launch`, one per task) are separate processes;
 * their RSS is summed and reported on its own row rather than hidden.
 *
 * Floor for idle RSS: a bare `node` process doing nothing, which is what the runtime alone
 * costs before any agent code.
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { CommandInfo } from '../../shared/mesos.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { withAgent } from './agent-session.js';
import { anonymousBytes, cpuPercentOver, launchersUnder, pssBytes, rssBytes } from './procfs.js';

/** Knobs of the footprint benchmark. */
export interface FootprintOptions {
  /** Tasks in the loaded measurement. Default 100. */
  tasks: number;
  /** CPU window in ms. Default 5000. */
  windowMs: number;
}

const MB = 1024 * 1024;
const COMMAND: CommandInfo = { shell: true, value: 'sleep 600' };
/** Let start-up work (JIT, first pings, checkpoint writes) finish before measuring. */
const SETTLE_MS = 2_000;

/** RSS and anonymous memory of an idle `node` process, after it settled. */
async function bareNode(): Promise<{ rss: number; anonymous: number }> {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  await once(child, 'spawn');
  await new Promise((r) => setTimeout(r, 1_000));
  const rss = rssBytes(child.pid ?? -1) ?? Number.NaN;
  const anonymous = anonymousBytes(child.pid ?? -1) ?? Number.NaN;
  const gone = once(child, 'exit');
  child.kill('SIGKILL');
  await gone;
  return { rss, anonymous };
}

export async function runFootprint(opts: FootprintOptions): Promise<BenchResult> {
  const name = 'footprint';
  const bare = await bareNode();
  const floorRss = bare.rss;
  const { value: m, leftovers, teardownNote } = await withAgent(async ({ master, agent, workDir }) => {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const idleRss = rssBytes(agent.pid) ?? Number.NaN;
    const idleAnonymous = anonymousBytes(agent.pid) ?? Number.NaN;
    const idleCpu = (await cpuPercentOver(agent.pid, opts.windowMs)) ?? Number.NaN;
    const idleRssAfter = rssBytes(agent.pid) ?? Number.NaN;

    const ids = Array.from({ length: opts.tasks }, (_, i) => `footprint-${i}`);
    const t0 = performance.now();
    for (const id of ids) master.runTask(master.task(id, COMMAND));
    for (const id of ids) {
      const u = await master.waitForState(id, ['TASK_RUNNING', 'TASK_FAILED', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_LOST'], 60_000);
      if (u.status.state !== 'TASK_RUNNING') throw new Error(`task ${id} did not start: ${u.status.state} ${u.status.message ?? ''}`);
    }
    const allRunningMs = performance.now() - t0;
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const loadedRss = rssBytes(agent.pid) ?? Number.NaN;
    const loadedCpu = (await cpuPercentOver(agent.pid, opts.windowMs)) ?? Number.NaN;
    const launchers = launchersUnder(workDir);
    const launcherRss = launchers.reduce((s, l) => s + (rssBytes(l.launcher.pid) ?? 0), 0);
    const launcherPss = launchers.reduce((s, l) => s + (pssBytes(l.launcher.pid) ?? 0), 0);
    const taskRss = launchers.reduce((s, l) => s + l.tasks.reduce((t, p) => t + (rssBytes(p.pid) ?? 0), 0), 0);
    return { idleRss, idleAnonymous, idleRssAfter, idleCpu, loadedRss, loadedCpu, launcherCount: launchers.length, launcherRss, launcherPss, taskRss, allRunningMs };
  });
  const perTask = (m.loadedRss - m.idleRss) / opts.tasks;
  const notes = [teardownNote, leftovers > 0 ? `${leftovers} processes left after SIGUSR1 (reaped)` : undefined].filter((x) => x !== undefined);
  const rows: ResultRow[] = [
    { benchmark: name, metric: 'agent RSS idle', value: m.idleRss / MB, unit: 'MB', ...against('bare node', floorRss / MB, m.idleRss / MB), goal: { text: '< 60 MB', pass: m.idleRss < 60 * MB }, note: `measured ${SETTLE_MS / 1000} s after REGISTERED; ${(m.idleRssAfter / MB).toFixed(1)} MB ${opts.windowMs / 1000} s later` },
    { benchmark: name, metric: 'agent anonymous memory idle', value: m.idleAnonymous / MB, unit: 'MB', ...against('bare node', bare.anonymous / MB, m.idleAnonymous / MB), note: `what the agent alone holds; the rest of its RSS (${((m.idleRss - m.idleAnonymous) / MB).toFixed(1)} MB) is pages of the node binary and libraries, shared with every node process (bare node: ${((bare.rss - bare.anonymous) / MB).toFixed(1)} MB)` },
    { benchmark: name, metric: 'agent CPU idle', value: m.idleCpu, unit: '% core', note: `over ${opts.windowMs / 1000} s` },
    { benchmark: name, metric: `agent RSS, ${opts.tasks} tasks`, value: m.loadedRss / MB, unit: 'MB', note: `${opts.tasks} RUN_TASKs sent at once were all RUNNING after ${m.allRunningMs.toFixed(0)} ms` },
    { benchmark: name, metric: 'agent RSS per extra task', value: perTask / MB, unit: 'MB', goal: { text: '< 0.5 MB', pass: perTask < 0.5 * MB } },
    { benchmark: name, metric: `agent CPU, ${opts.tasks} tasks`, value: m.loadedCpu, unit: '% core', note: `over ${opts.windowMs / 1000} s` },
    { benchmark: name, metric: `launchers RSS sum`, value: m.launcherRss / MB, unit: 'MB', note: `${m.launcherCount} drydock-launch processes, ${(m.launcherCount === 0 ? 0 : m.launcherRss / m.launcherCount / 1024).toFixed(0)} kB each; outside the agent process` },
    { benchmark: name, metric: `launchers PSS sum`, value: m.launcherPss / MB, unit: 'MB', note: 'shared pages (libc) divided among the launchers: what they really add' },
    { benchmark: name, metric: `task processes RSS sum`, value: m.taskRss / MB, unit: 'MB', note: `the tasks themselves (sleep), for scale${notes.length > 0 ? '; ' + notes.join('; ') : ''}` },
  ];
  return { benchmark: name, rows, context: { ...m, floorRss, floorAnonymous: bare.anonymous, tasks: opts.tasks, windowMs: opts.windowMs } };
}

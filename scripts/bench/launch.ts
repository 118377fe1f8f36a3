/**
 * launch: how long the agent takes from RUN_TASK to the TASK_RUNNING update, for a trivial
 * command, against the floor of a bare `child_process.spawn` of the same command until its
 * 'spawn' event. The benchmark plays the master (scripts/harness/master-double.ts), so only the agent and
 * its launcher are on the clock. Launches are sequential, so each one measures latency, not
 * queueing behind the previous.
 */

import { spawn } from 'node:child_process';
import { once } from 'node:events';
import type { CommandInfo } from '../../shared/mesos.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize } from './stats.js';
import { withAgent } from './agent-session.js';

/** Knobs of the launch benchmark. */
export interface LaunchOptions {
  /** Measured launches (after 3 unmeasured warm-ups). Default 50. */
  launches: number;
}

/** The task: a shell command, so the floor can spawn exactly the same argv. */
const COMMAND: CommandInfo = { shell: true, value: 'sleep 30' };
const FLOOR_ARGV = ['/bin/sh', '-c', 'sleep 30'] as const;
const WARMUPS = 3;

/** Time of one bare spawn of the same command, until 'spawn'; the child is killed right after. */
async function bareSpawnMs(): Promise<number> {
  const t0 = performance.now();
  const child = spawn(FLOOR_ARGV[0], FLOOR_ARGV.slice(1), { stdio: 'ignore', detached: true });
  await once(child, 'spawn');
  const ms = performance.now() - t0;
  const gone = once(child, 'exit');
  process.kill(-(child.pid ?? 0), 'SIGKILL');
  await gone;
  return ms;
}

export async function runLaunch(opts: LaunchOptions): Promise<BenchResult> {
  const name = 'launch';
  const agentMs: number[] = [];
  const notStarted: string[] = [];
  const { leftovers, teardownNote } = await withAgent(async ({ master }) => {
    for (let i = 0; i < WARMUPS + opts.launches; i++) {
      const taskId = `launch-${i}`;
      const sentAt = master.runTask(master.task(taskId, COMMAND));
      const u = await master.waitForState(taskId, ['TASK_RUNNING', 'TASK_FAILED', 'TASK_ERROR', 'TASK_DROPPED', 'TASK_LOST'], 20_000);
      if (u.status.state !== 'TASK_RUNNING') {
        notStarted.push(`${taskId}: ${u.status.state} ${u.status.message ?? ''}`.trim());
        if (notStarted.length >= 3) throw new Error(`tasks do not start: ${notStarted.join('; ')}`);
        continue;
      }
      if (i >= WARMUPS) agentMs.push(u.receivedAt - sentAt);
    }
  });
  const floorMs: number[] = [];
  for (let i = 0; i < WARMUPS + opts.launches; i++) {
    const ms = await bareSpawnMs();
    if (i >= WARMUPS) floorMs.push(ms);
  }
  const a = summarize(agentMs);
  const f = summarize(floorMs);
  const notes = [teardownNote, leftovers > 0 ? `${leftovers} processes left after SIGUSR1 (reaped)` : undefined, notStarted.length > 0 ? `${notStarted.length} did not start` : undefined].filter((s) => s !== undefined);
  const rows: ResultRow[] = [
    { benchmark: name, metric: 'RUN_TASK -> TASK_RUNNING p50', value: a.p50, unit: 'ms', ...against('bare spawn p50', f.p50, a.p50), goal: { text: '<= 2x', pass: a.p50 <= 2 * f.p50 }, note: `n=${a.n}, sh -c 'sleep 30'` },
    { benchmark: name, metric: 'RUN_TASK -> TASK_RUNNING p99', value: a.p99, unit: 'ms', ...against('bare spawn p99', f.p99, a.p99), ...(notes.length > 0 ? { note: notes.join('; ') } : {}) },
  ];
  return { benchmark: name, rows, context: { agent: a, floor: f, command: COMMAND, warmups: WARMUPS } };
}

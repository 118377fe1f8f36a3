/**
 * kill: how precisely the agent honours a kill policy's grace period. The task ignores
 * SIGTERM, so only the SIGKILL at the end of the grace period stops it; the figure is the
 * time from KILL_TASK sent to the TASK_KILLED update received, minus the grace period
 * ("overshoot"). The floor is 0 ms: a perfect agent would overshoot by nothing but a
 * loopback round trip.
 */

import type { CommandInfo } from '../../shared/mesos.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize } from './stats.js';
import { withAgent } from './agent-session.js';

/** Knobs of the kill benchmark. */
export interface KillOptions {
  /** Number of kills, one after another. Default 10. */
  samples: number;
  /** Grace period in ms, sent in KILL_TASK's kill_policy (and the task's own). Default 1000. */
  graceMs: number;
}

/** Ignores SIGTERM (the ignore is inherited by each `sleep`, so the group signal hits nothing). */
const COMMAND: CommandInfo = { shell: true, value: "trap '' TERM; while :; do sleep 0.1; done" };
/** Time for the shell to reach `trap` after TASK_RUNNING, so a SIGTERM cannot beat it. */
const SETTLE_MS = 300;
const TERMINAL = ['TASK_KILLED', 'TASK_FAILED', 'TASK_FINISHED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED', 'TASK_GONE'] as const;

export async function runKill(opts: KillOptions): Promise<BenchResult> {
  const name = 'kill';
  const overshootMs: number[] = [];
  const odd: string[] = [];
  const graceNs = opts.graceMs * 1e6;
  const { leftovers, teardownNote } = await withAgent(async ({ master }) => {
    // Start all tasks first, so the kills are not interleaved with launches.
    const ids = Array.from({ length: opts.samples }, (_, i) => `kill-${i}`);
    for (const id of ids) master.runTask(master.task(id, COMMAND, { grace_period: { nanoseconds: graceNs } }));
    for (const id of ids) {
      const u = await master.waitForState(id, ['TASK_RUNNING', ...TERMINAL], 20_000);
      if (u.status.state !== 'TASK_RUNNING') throw new Error(`task ${id} did not start: ${u.status.state} ${u.status.message ?? ''}`);
    }
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    for (const id of ids) {
      const sentAt = master.killTask(id, { grace_period: { nanoseconds: graceNs } });
      const u = await master.waitForState(id, TERMINAL, opts.graceMs + 15_000);
      const over = u.receivedAt - sentAt - opts.graceMs;
      if (u.status.state !== 'TASK_KILLED') odd.push(`${id} ended ${u.status.state}`);
      if (over < 0) odd.push(`${id} ended ${(-over).toFixed(0)} ms before the grace period was over (SIGTERM not ignored?)`);
      overshootMs.push(over);
    }
  });
  const s = summarize(overshootMs);
  const notes = [teardownNote, leftovers > 0 ? `${leftovers} processes left (reaped)` : undefined, ...odd.slice(0, 3)].filter((x) => x !== undefined);
  const rows: ResultRow[] = [
    { benchmark: name, metric: 'overshoot p50', value: s.p50, unit: 'ms', ...against('ideal', 0, s.p50), note: `n=${s.n}, grace ${opts.graceMs} ms, task ignores SIGTERM` },
    { benchmark: name, metric: 'overshoot max', value: s.max, unit: 'ms', ...against('ideal', 0, s.max), ...(notes.length > 0 ? { note: notes.join('; ') } : {}) },
  ];
  return { benchmark: name, rows, context: { overshoot: s, graceMs: opts.graceMs, samplesMs: overshootMs.map((x) => Math.round(x * 10) / 10) } };
}

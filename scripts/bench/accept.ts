/**
 * accept: how long a scheduler waits from its ACCEPT (one LAUNCH of one task) to the task's
 * TASK_RUNNING on its event stream, through the real master and one real agent. The floor is
 * the agent alone (the `launch` benchmark, measured in the same run): the ratio is what the
 * master's scheduler API, allocator bookkeeping and the extra hop add. ACCEPTs are
 * sequential, and the clock starts only once an offer is in hand, so the allocator's offer
 * cadence is not on it.
 */

import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize, type Summary } from './stats.js';
import { removeTempDir, startAgent, startMaster, type Child } from './daemon.js';
import { runLaunch } from './launch.js';
import { reapLeftovers } from './procfs.js';
import { BenchFramework, TASK_CPUS, TASK_MEM_MB, benchTask, offered } from './framework.js';

export interface AcceptOptions {
  /** Measured ACCEPTs (after 3 unmeasured warm-ups). Default 50. */
  samples: number;
}

const WARMUPS = 3;

export async function runAccept(opts: AcceptOptions): Promise<BenchResult> {
  const name = 'accept';
  const samples: number[] = [];
  const notes: string[] = [];
  const master = await startMaster();
  let agent: { daemon: Child; workDir: string } | undefined;
  let fw: BenchFramework | undefined;
  try {
    agent = await startAgent(master.address, { flags: ['--registration_backoff_factor=10ms'] });
    await agent.daemon.waitForMsg('registered', {}, 20_000);
    fw = await BenchFramework.subscribe(master.address, 'drydock-bench-accept');
    const f = fw;
    for (let i = 0; i < WARMUPS + opts.samples; i++) {
      const offer = await f.until(() => f.takeOffer((o) => offered(o, 'cpus') >= TASK_CPUS && offered(o, 'mem') >= TASK_MEM_MB), 20_000, `an offer for task ${i}`);
      const taskId = `accept-${i}`;
      const t0 = performance.now();
      await f.launch(offer, [benchTask(taskId, offer)]);
      const t1 = await f.until(() => {
        const failed = f.failed.get(taskId);
        if (failed !== undefined) throw new Error(`task ${taskId} did not start: ${failed}`);
        return f.runningAt.get(taskId);
      }, 20_000, `TASK_RUNNING of ${taskId}`);
      if (i >= WARMUPS) samples.push(t1 - t0);
    }
    if (f.ackErrors > 0) notes.push(`${f.ackErrors} ACKNOWLEDGE calls failed`);
  } finally {
    await fw?.teardown().catch(() => undefined);
    if (agent !== undefined) {
      const e = await agent.daemon.stop(15_000, 'SIGUSR1');
      if (e.signal === 'SIGKILL') notes.push('agent did not exit within 15 s of SIGUSR1');
      const left = reapLeftovers(agent.workDir);
      if (left > 0) notes.push(`${left} task processes left after TEARDOWN and SIGUSR1 (reaped)`);
      removeTempDir(agent.workDir);
    }
    await master.daemon.stop();
    removeTempDir(master.workDir);
  }
  // The floor, in the same run: RUN_TASK -> TASK_RUNNING with the agent alone.
  const launch = await runLaunch({ launches: opts.samples });
  if (launch.error !== undefined) throw new Error(`the launch floor failed: ${launch.error}`);
  const floor = (launch.context?.['agent'] as Summary | undefined) ?? summarize([]);
  const a = summarize(samples);
  const rows: ResultRow[] = [
    { benchmark: name, metric: 'ACCEPT -> TASK_RUNNING p50', value: a.p50, unit: 'ms', ...against('agent-only launch p50', floor.p50, a.p50), note: `n=${a.n}, real master + 1 agent, sh -c 'sleep 600'` },
    { benchmark: name, metric: 'ACCEPT -> TASK_RUNNING p99', value: a.p99, unit: 'ms', ...against('agent-only launch p99', floor.p99, a.p99), ...(notes.length > 0 ? { note: notes.join('; ') } : {}) },
  ];
  return { benchmark: name, rows, context: { accept: a, floor, warmups: WARMUPS } };
}

/**
 * accept: how long a scheduler waits from its ACCEPT (one LAUNCH of one task) to the task's
 * TASK_RUNNING on its event stream, through the real master and one real agent. The floor is
 * the agent alone (the `launch` benchmark, measured in the same run): the ratio is what the
 * master's scheduler API, allocator bookkeeping and the extra hop add. ACCEPTs are
 * sequential, and the clock starts only once an offer is in hand, so the allocator's offer
 * cadence is not on it.
 *
 * `AcceptRig` is the measurement alone (a master, an agent, a framework; one timed ACCEPT at a
 * time), with the master's and agent's flags and the framework's transport as options: the
 * security benchmark runs a plain and a secured one side by side.
 */

import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize, type Summary } from './stats.js';
import { removeTempDir, startAgent, startMaster, type Child } from './daemon.js';
import { runLaunch } from './launch.js';
import { reapLeftovers } from './procfs.js';
import { BenchFramework, TASK_CPUS, TASK_MEM_MB, benchTask, offered } from './framework.js';
import type { ClientTransport } from '../../io/transport.js';

export interface AcceptOptions {
  /** Measured ACCEPTs (after 3 unmeasured warm-ups). Default 50. */
  samples: number;
}

/** Unmeasured ACCEPTs before the measured ones (JIT, connection set-up). */
export const WARMUPS = 3;

/** How one ACCEPT rig is set up. Default: a plain master and agent, an anonymous framework. */
export interface AcceptSetup {
  /** Extra flags of the master (e.g. the security flags). */
  masterFlags?: readonly string[];
  /** Arguments of node itself for the master (e.g. --cpu-prof). */
  masterNodeArgs?: readonly string[];
  /** Extra flags of the agent (e.g. --tls_ca_file, --credential). */
  agentFlags?: readonly string[];
  /** The framework's TLS and Authorization header. */
  transport?: ClientTransport;
}

/**
 * A fresh master, one agent and a subscribed framework, ready to time ACCEPTs one at a time.
 * Two rigs can be up at once (the security benchmark alternates single ACCEPTs between a plain
 * and a secured one, so load from elsewhere on the machine hits both alike).
 */
export class AcceptRig {
  readonly #master: Awaited<ReturnType<typeof startMaster>>;
  #agent: { daemon: Child; workDir: string } | undefined;
  #fw: BenchFramework | undefined;
  #launched = 0;

  private constructor(master: Awaited<ReturnType<typeof startMaster>>) {
    this.#master = master;
  }

  /** Starts the daemons and subscribes; on failure whatever started is stopped again. */
  static async start(setup: AcceptSetup = {}): Promise<AcceptRig> {
    const rig = new AcceptRig(await startMaster(setup.masterFlags ?? [], setup.masterNodeArgs === undefined ? {} : { nodeArgs: setup.masterNodeArgs }));
    try {
      rig.#agent = await startAgent(rig.#master.address, { flags: ['--registration_backoff_factor=10ms', ...(setup.agentFlags ?? [])] });
      await rig.#agent.daemon.waitForMsg('registered', {}, 20_000);
      rig.#fw = await BenchFramework.subscribe(rig.#master.address, 'drydock-bench-accept', setup.transport);
      return rig;
    } catch (e) {
      await rig.stop();
      throw e;
    }
  }

  /** The master's PID (for CPU and RSS readings). */
  get masterPid(): number {
    return this.#master.daemon.pid;
  }

  /**
   * One ACCEPT of one task on an offer already in hand, timed until its TASK_RUNNING (ms).
   * Throws when the task ends instead, or a step times out.
   */
  async acceptOnce(): Promise<number> {
    const f = this.#fw;
    if (f === undefined) throw new Error('the accept rig is not started');
    const i = this.#launched++;
    const offer = await f.until(() => f.takeOffer((o) => offered(o, 'cpus') >= TASK_CPUS && offered(o, 'mem') >= TASK_MEM_MB), 20_000, `an offer for task ${i}`);
    const taskId = `accept-${i}`;
    const t0 = performance.now();
    await f.launch(offer, [benchTask(taskId, offer)]);
    const t1 = await f.until(() => {
      const failed = f.failed.get(taskId);
      if (failed !== undefined) throw new Error(`task ${taskId} did not start: ${failed}`);
      return f.runningAt.get(taskId);
    }, 20_000, `TASK_RUNNING of ${taskId}`);
    return t1 - t0;
  }

  /** TEARDOWN, then stops the agent (SIGUSR1) and the master and removes their dirs; returns notes on anything amiss. */
  async stop(): Promise<string[]> {
    const notes: string[] = [];
    if (this.#fw !== undefined && this.#fw.ackErrors > 0) notes.push(`${this.#fw.ackErrors} ACKNOWLEDGE calls failed`);
    await this.#fw?.teardown().catch(() => undefined);
    this.#fw = undefined;
    const agent = this.#agent;
    this.#agent = undefined;
    if (agent !== undefined) {
      const e = await agent.daemon.stop(15_000, 'SIGUSR1');
      if (e.signal === 'SIGKILL') notes.push('agent did not exit within 15 s of SIGUSR1');
      const left = reapLeftovers(agent.workDir);
      if (left > 0) notes.push(`${left} task processes left after TEARDOWN and SIGUSR1 (reaped)`);
      removeTempDir(agent.workDir);
    }
    await this.#master.daemon.stop();
    removeTempDir(this.#master.workDir);
    return notes;
  }
}

/**
 * `count` sequential ACCEPT -> TASK_RUNNING latencies (ms, after unmeasured warm-ups) on a
 * fresh rig, and notes on anything that went wrong around them. Throws when a task does not
 * start or a step times out; the daemons are stopped and their dirs removed either way.
 */
export async function measureAccepts(count: number, setup: AcceptSetup = {}): Promise<{ samples: number[]; notes: string[] }> {
  const samples: number[] = [];
  const rig = await AcceptRig.start(setup);
  let notes: string[] = [];
  try {
    for (let i = 0; i < WARMUPS + count; i++) {
      const ms = await rig.acceptOnce();
      if (i >= WARMUPS) samples.push(ms);
    }
  } finally {
    notes = await rig.stop();
  }
  return { samples, notes };
}

export async function runAccept(opts: AcceptOptions): Promise<BenchResult> {
  const name = 'accept';
  const { samples, notes } = await measureAccepts(opts.samples);
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

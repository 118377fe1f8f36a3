/**
 * The setup the agent benchmarks share: a stand-in master, one real agent registered with
 * it, and a teardown that always runs (SIGUSR1 so the agent kills its tasks, then SIGKILL
 * if it hangs, then a reap of any launcher or task left under its work dir).
 */

import { MasterDouble } from '../harness/master-double.js';
import { removeTempDir, startAgent, type Child } from './daemon.js';
import { reapLeftovers } from './procfs.js';

/** The framework every benchmark task belongs to. */
export const BENCH_FRAMEWORK = { user: 'root', name: 'drydock-bench', id: { value: 'drydock-bench-framework' } };

/** A real agent registered with a stand-in master. */
export interface AgentUnderTest {
  master: MasterDouble;
  agent: Child;
  workDir: string;
  agentId: string;
}

/**
 * Runs `body` with a fresh agent; tears everything down afterwards whatever happened.
 * Returns body's value plus what the teardown had to clean up (left-over processes).
 */
export async function withAgent<T>(body: (a: AgentUnderTest) => Promise<T>): Promise<{ value: T; leftovers: number; teardownNote?: string }> {
  // Every update acknowledged at once (the agent's retry timers never fire), pings as the master's, a framework without TASK_KILLING_STATE.
  const master = await MasterDouble.start({ autoAck: true, pingIntervalMs: 5_000, framework: BENCH_FRAMEWORK });
  let agent: Child | undefined;
  let workDir: string | undefined;
  try {
    const started = await startAgent(master.address, { flags: ['--registration_backoff_factor=10ms'] });
    agent = started.daemon;
    workDir = started.workDir;
    const agentId = await master.registered(20_000);
    const value = await body({ master, agent, workDir, agentId });
    return { value, ...(await teardown(agent, workDir, master)) };
  } catch (e) {
    if (agent !== undefined && workDir !== undefined) await teardown(agent, workDir, master);
    else await master.close();
    throw e;
  }
}

async function teardown(agent: Child, workDir: string, master: MasterDouble): Promise<{ leftovers: number; teardownNote?: string }> {
  let teardownNote: string | undefined;
  if (agent.running) {
    // SIGUSR1: the agent kills every task and exits. Give it the default grace (3 s) and more.
    const e = await agent.stop(15_000, 'SIGUSR1');
    if (e.signal === 'SIGKILL') teardownNote = 'agent did not exit within 15 s of SIGUSR1 and was SIGKILLed';
  }
  await master.close();
  const leftovers = reapLeftovers(workDir);
  removeTempDir(workDir);
  return { leftovers, ...(teardownNote === undefined ? {} : { teardownNote }) };
}

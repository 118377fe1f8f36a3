/**
 * The fake master for agent tests: the one master double (scripts/harness/master-double.ts),
 * closed when the test ends; and helpers for the work dirs and task processes of agents.
 */

import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import type { TaskInfo } from '../../shared/mesos.js';
import { MasterDouble, type MasterDoubleOptions } from '../../scripts/harness/master-double.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';
import { checkpointTasks } from './checkpoint.js';

export { FRAMEWORK, FRAMEWORK_ID, MasterDouble as FakeMaster, type MasterDoubleOptions as FakeMasterOptions, type RegisterMessage, type StatusUpdateMessage } from '../../scripts/harness/master-double.js';

/** Starts a fake master on loopback; closed when the test ends. */
export async function startFakeMaster(t: Pick<TestContext, 'after'>, opts: MasterDoubleOptions = {}): Promise<MasterDouble> {
  const master = await MasterDouble.start(opts);
  t.after(() => master.close());
  return master;
}

/** A TaskInfo running `command` with /bin/sh, with an optional grace period. */
export function shellTask(id: string, command: string, gracePeriodMs?: number): TaskInfo {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: 'ignored' },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }],
    command: { value: command },
    ...(gracePeriodMs !== undefined ? { kill_policy: { grace_period: { nanoseconds: gracePeriodMs * 1e6 } } } : {}),
  };
}

/**
 * A work_dir for an agent whose tasks are killed (SIGKILL to each task's process group, found
 * in the checkpoint) and whose files are removed when the test ends, whatever the agent did.
 */
export function agentWorkDir(t: Pick<TestContext, 'after'>): string {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-agent-'));
  // Hooks run in registration order and this one comes before startAgent's: so the agents
  // using this dir are stopped here first, or they would keep writing into it.
  t.after(async () => {
    for (const pid of agentPids(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (let i = 0; i < EVENT_DEADLINE_MS / 20 && agentPids(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    for (const pid of taskPids(dir)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // a leftover temp dir must not fail the test or skip the hooks after this one
    }
  });
  return dir;
}

/** Agent daemons (by their command line) whose --work_dir is `dir`. */
function agentPids(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmd.includes(`--work_dir=${dir}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')) out.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Task pids recorded in an agent's checkpoint (including checkpoints moved aside). */
export function taskPids(workDir: string): number[] {
  const pids: number[] = [];
  let metas: string[];
  try {
    metas = readdirSync(workDir).filter((d) => d.startsWith('meta'));
  } catch {
    return pids;
  }
  for (const meta of metas) {
    for (const rec of checkpointTasks(join(workDir, meta))) if (typeof rec.task_pid === 'number') pids.push(rec.task_pid);
  }
  return pids;
}

/**
 * The task pids of an agent's checkpoint once there are at least `n`: TASK_RUNNING goes out
 * before the commit that records the task's pid (its update was committed with the launch), so
 * a test that reads the pids right after TASK_RUNNING waits for that commit. Rejects after
 * `timeoutMs`, naming what it found.
 */
export async function checkpointedTaskPids(workDir: string, n: number, timeoutMs = EVENT_DEADLINE_MS): Promise<number[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const pids = taskPids(workDir);
    if (pids.length >= n) return pids;
    if (Date.now() > deadline) throw new Error(`${pids.length} task pids in the checkpoint of ${workDir} after ${timeoutMs} ms, expected ${n}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

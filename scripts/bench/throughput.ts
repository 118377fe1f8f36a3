/**
 * throughput: tasks per second from a scheduler's first ACCEPT to its 1,000th TASK_RUNNING,
 * through the real master and 10 real agents (127.0.0.2-127.0.0.11, each looking like its
 * own machine). Each OFFERS event is answered with as many `sleep 600` tasks as the offer
 * fits (up to 100 per agent, so every agent takes a tenth), and every update is
 * acknowledged. The floor is the same number of bare spawns of the same command from one
 * process. Afterwards TEARDOWN must take every task down; what is left is counted, reaped and
 * reported.
 *
 * The note says where the CPU went between the first ACCEPT and the last TASK_RUNNING, per task
 * launched: the master, the agent daemons (not their tasks), and this process as the
 * scheduler. On two cores the run is CPU-bound, so these bound the rate more steadily than the
 * rate itself, which moves with whatever else the machine runs.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { against, type BenchResult, type ResultRow } from './report.js';
import { removeTempDir, startAgent, startMaster, type Child } from './daemon.js';
import { allProcesses, cmdline, launchersUnder, procStat, reapLeftovers } from './procfs.js';
import { BenchFramework, TASK_COMMAND, benchTask, offered, tasksFitting } from './framework.js';

export interface ThroughputOptions {
  /** Tasks to bring to TASK_RUNNING. Default 1000. */
  tasks: number;
  /** Real agents. Default 10. */
  agents: number;
  /**
   * When set, the master and the agents run with `--cpu-prof --cpu-prof-dir=DIR/<master|agent>`
   * (one .cpuprofile each, written when they exit).
   */
  cpuProfDir?: string;
}

/** Offered per agent: room for a bit more than its share, so float sums never leave the last task out. */
export function agentResources(perAgent: number): string {
  return `cpus:${(perAgent * 0.1 + 0.5).toFixed(1)};mem:100000;disk:100000;ports:[31000-32000]`;
}

/** Live processes running the benchmark command (as `sh -c` or exec'd `sleep`), zombies excluded. */
function commandProcesses(): number {
  const [prog, arg] = TASK_COMMAND.split(' ');
  let n = 0;
  for (const p of allProcesses()) {
    const argv = cmdline(p.pid);
    if ((argv[0] === prog && argv[1] === arg) || (argv[0] === 'sh' && argv[1] === '-c' && argv[2] === TASK_COMMAND)) n++;
  }
  return n;
}

/** Waits (bounded, 30 s) until no process runs the benchmark command; returns how many still do. */
async function commandGone(): Promise<number> {
  for (let i = 0; i < 300 && commandProcesses() > 0; i++) await new Promise((r) => setTimeout(r, 100));
  return commandProcesses();
}

/** Spawns `n` detached `sh -c CMD` at once; ms from the first spawn() to the last 'spawn' event. Kills them after. */
async function bareSpawns(n: number): Promise<number> {
  const children: ChildProcess[] = [];
  const t0 = performance.now();
  const spawned: Array<Promise<unknown>> = [];
  for (let i = 0; i < n; i++) {
    const c = spawn('/bin/sh', ['-c', TASK_COMMAND], { stdio: 'ignore', detached: true });
    children.push(c);
    spawned.push(once(c, 'spawn'));
  }
  await Promise.all(spawned);
  const ms = performance.now() - t0;
  const exits = children.map((c) => once(c, 'exit'));
  for (const c of children) {
    try { process.kill(-(c.pid ?? 0), 'SIGKILL'); } catch { /* gone */ }
  }
  await Promise.all(exits);
  return ms;
}

/**
 * Launches `tasks` benchmark tasks (ids `<prefix>-<n>`) from offers as they come, each offer
 * taking as many as it fits and no agent more than `perAgent`, every ACCEPT sent without
 * waiting for the previous; resolves once all are TASK_RUNNING with the ms from the first
 * ACCEPT to the last TASK_RUNNING. Throws when a task fails or after `timeoutMs`.
 */
export async function launchSpread(
  f: BenchFramework,
  o: { tasks: number; perAgent: number; prefix: string; timeoutMs: number; /** Called just before the first ACCEPT goes out. */ atFirstAccept?: () => void },
): Promise<{ elapsedMs: number; acceptCalls: number }> {
  const perAgentLaunched = new Map<string, number>();
  const ids: string[] = [];
  let first: number | undefined;
  let acceptCalls = 0;
  const accepts: Array<Promise<void>> = [];
  // Launch from offers as they come, until every task is launched and running.
  await f.until(() => {
    for (;;) {
      if (ids.length >= o.tasks) break;
      const offer = f.takeOffer();
      if (offer === undefined) break;
      const room = Math.min(tasksFitting(offered(offer, 'cpus'), offered(offer, 'mem')), o.perAgent - (perAgentLaunched.get(offer.agent_id.value) ?? 0), o.tasks - ids.length);
      if (room <= 0) {
        // Keep the offer from coming back for this run; nothing more goes on that agent.
        void f.call('DECLINE', { offer_ids: [offer.id], filters: { refuse_seconds: 600 } });
        continue;
      }
      const tasks = Array.from({ length: room }, (_, k) => benchTask(`${o.prefix}-${ids.length + k}`, offer));
      ids.push(...tasks.map((t) => t.task_id.value));
      perAgentLaunched.set(offer.agent_id.value, (perAgentLaunched.get(offer.agent_id.value) ?? 0) + room);
      if (first === undefined) {
        o.atFirstAccept?.();
        first = performance.now();
      }
      acceptCalls++;
      accepts.push(f.launch(offer, tasks));
    }
    if (f.failed.size > 0) throw new Error(`${f.failed.size} tasks did not start, e.g. ${[...f.failed].slice(0, 2).map(([k, v]) => `${k}: ${v}`).join('; ')}`);
    // runningAt first: walking every id on each event would be the benchmark's own cost.
    return ids.length >= o.tasks && f.runningAt.size >= ids.length && ids.every((id) => f.runningAt.has(id)) ? true : undefined;
  }, o.timeoutMs, `${o.tasks} tasks TASK_RUNNING`);
  await Promise.all(accepts);
  return { elapsedMs: Math.max(...ids.map((id) => f.runningAt.get(id) ?? Number.NaN)) - (first ?? Number.NaN), acceptCalls };
}

/** `CPU per task: master 0.7 ms, agents 2.6 ms, scheduler 0.3 ms; ` (empty when not measured). Pure. */
export function cpuText(c: { master: number; agents: number; scheduler: number } | undefined): string {
  if (c === undefined) return '';
  const ms = (v: number): string => `${v.toFixed(2)} ms`;
  return `CPU per task: master ${ms(c.master)}, agents ${ms(c.agents)}, scheduler ${ms(c.scheduler)}; `;
}

/** CPU seconds (utime + stime) used so far by each of `pids`, and by this process. */
function cpuNow(pids: { master: number; agents: readonly number[] }): { master: number; agents: number; scheduler: number } {
  const of = (pid: number): number => procStat(pid)?.cpuSeconds ?? Number.NaN;
  const own = process.cpuUsage();
  return { master: of(pids.master), agents: pids.agents.reduce((sum, pid) => sum + of(pid), 0), scheduler: (own.user + own.system) / 1e6 };
}

export async function runThroughput(opts: ThroughputOptions): Promise<BenchResult> {
  const name = 'throughput';
  const perAgent = Math.ceil(opts.tasks / opts.agents);
  const notes: string[] = [];
  const prof = (who: string): { nodeArgs?: readonly string[] } => (opts.cpuProfDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}/${who}`] });
  const master = await startMaster([], prof('master'));
  const agents: Array<{ daemon: Child; workDir: string }> = [];
  let fw: BenchFramework | undefined;
  let elapsedMs = Number.NaN;
  let acceptCalls = 0;
  /** CPU ms per task launched, from /proc (the agents' tasks and launchers not included). */
  let cpuMsPerTask: { master: number; agents: number; scheduler: number } | undefined;
  try {
    const started = await Promise.all(
      Array.from({ length: opts.agents }, (_, i) =>
        startAgent(master.address, { ip: `127.0.0.${i + 2}`, hostname: `bench-agent-${i + 1}`, resources: agentResources(perAgent), flags: ['--registration_backoff_factor=10ms'], ...prof('agent') }),
      ),
    );
    agents.push(...started);
    await Promise.all(agents.map((a) => a.daemon.waitForMsg('registered', {}, 30_000)));
    fw = await BenchFramework.subscribe(master.address, 'drydock-bench-throughput');
    const f = fw;
    // Where the CPU goes between the first ACCEPT and the last TASK_RUNNING: the machine's
    // cores are shared by all of these, so each one's cost per task bounds the rate.
    const pids = { master: master.daemon.pid, agents: agents.map((a) => a.daemon.pid) };
    let before: ReturnType<typeof cpuNow> | undefined;
    const spread = await launchSpread(f, { tasks: opts.tasks, perAgent, prefix: 'tp', timeoutMs: 120_000, atFirstAccept: () => (before = cpuNow(pids)) });
    const after = cpuNow(pids);
    if (before !== undefined) {
      const b = before;
      cpuMsPerTask = { master: ((after.master - b.master) * 1000) / opts.tasks, agents: ((after.agents - b.agents) * 1000) / opts.tasks, scheduler: ((after.scheduler - b.scheduler) * 1000) / opts.tasks };
    }
    elapsedMs = spread.elapsedMs;
    acceptCalls = spread.acceptCalls;
    if (f.ackErrors > 0) notes.push(`${f.ackErrors} ACKNOWLEDGE calls failed`);
  } finally {
    // TEARDOWN must take every task down (each gets its kill policy: SIGTERM, `sleep` dies).
    const t0 = performance.now();
    let torn = false;
    if (fw !== undefined) torn = await fw.teardown().then(() => true, () => false);
    const liveTasks = (): number => agents.reduce((n, a) => n + launchersUnder(a.workDir).length, 0);
    if (torn) {
      for (let i = 0; i < 300 && liveTasks() > 0; i++) await new Promise((r) => setTimeout(r, 100));
      const left = liveTasks();
      notes.push(left === 0 ? `TEARDOWN: all tasks gone in ${Math.round(performance.now() - t0)} ms` : `TEARDOWN: ${left} tasks still alive after 30 s`);
    } else if (fw !== undefined) notes.push('TEARDOWN failed');
    const stray = await commandGone();
    notes.push(stray === 0 ? `no '${TASK_COMMAND}' process left` : `${stray} '${TASK_COMMAND}' processes still alive after TEARDOWN`);
    await Promise.all(agents.map((a) => a.daemon.stop(15_000, 'SIGUSR1')));
    const reaped = agents.reduce((n, a) => n + reapLeftovers(a.workDir), 0);
    if (reaped > 0) notes.push(`${reaped} processes reaped after the agents exited`);
    for (const a of agents) removeTempDir(a.workDir);
    await master.daemon.stop();
    removeTempDir(master.workDir);
  }
  const floorMs = await bareSpawns(opts.tasks);
  const floorStray = await commandGone();
  if (floorStray > 0) notes.push(`${floorStray} floor spawns still alive after SIGKILL`);
  const rate = (opts.tasks / elapsedMs) * 1000;
  const floorRate = (opts.tasks / floorMs) * 1000;
  const rows: ResultRow[] = [
    {
      benchmark: name,
      metric: `first ACCEPT -> ${opts.tasks}th TASK_RUNNING`,
      value: rate,
      unit: 'tasks/s',
      // Higher is better here, so the ratio (figure / floor) is the fraction of the bare-spawn rate reached.
      ...against(`${opts.tasks} bare spawns`, floorRate, rate),
      goal: { text: '>= 0.8x', pass: rate >= 0.8 * floorRate },
      note: `${opts.agents} agents, ${acceptCalls} ACCEPTs, ${Math.round(elapsedMs)} ms; ${cpuText(cpuMsPerTask)}${notes.join('; ')}`,
    },
  ];
  return { benchmark: name, rows, context: { elapsedMs, floorMs, acceptCalls, agents: opts.agents, tasks: opts.tasks, ...(cpuMsPerTask === undefined ? {} : { cpuMsPerTask }) } };
}

/**
 * drain: DRAIN_AGENT on a real agent running 100 tasks (launched by the benchmark scheduler,
 * which acknowledges every update), with max_grace_period 0 and 2 s, each on a fresh master
 * and agent. Figures:
 *  - time from the DRAIN_AGENT call to GET_AGENTS showing DRAINED (polled every 10 ms). The
 *    floor is the grace itself: a drain cannot end before the grace of a task that ignores
 *    SIGTERM; ratio = time / grace. With grace 0 the time is reported as is.
 *  - the latency from the call to SIGTERM reaching each task, p50 and max. Each task records
 *    the moment in its sandbox and keeps running (so the grace is really waited out):
 *      exec bash -c 'trap "echo \$EPOCHREALTIME > \"\$MESOS_SANDBOX/term\"" TERM; while :; do sleep 600 & wait; done'
 *    `wait` is interrupted by a trapped signal at once (a foreground `sleep 0.05` loop would
 *    add up to 50 ms and thousands of forks a second), and bash's $EPOCHREALTIME reads the
 *    clock without forking `date` (100 shells forking at once on 2 cores would measure the
 *    scheduler). The SIGTERM to the group also ends the background sleep; the loop starts
 *    another. With grace 0 the SIGKILL may come before the trap runs; tasks that wrote
 *    nothing are counted in the note.
 */

import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { against, type BenchResult, type ResultRow } from './report.js';
import { removeTempDir, startAgent, startMaster } from './daemon.js';
import { BenchFramework, benchTask, offered } from './framework.js';
import type { TaskInfo } from '../../shared/mesos.js';

export interface DrainOptions {
  /** Tasks on the agent. Default 100. */
  tasks: number;
  /** Grace periods to drain with, in ms. Default 0 and 2000. */
  gracesMs: number[];
}

/** A task that records when SIGTERM reached it and otherwise ignores it. */
export const TERM_RECORDING_COMMAND = `exec bash -c 'trap "echo \\$EPOCHREALTIME > \\"\\$MESOS_SANDBOX/term\\"" TERM; while :; do sleep 600 & wait; done'`;

/** `1700000000.123456` ($EPOCHREALTIME, seconds with microseconds) as epoch ns. Pure. */
export function epochRealtimeNs(text: string): bigint | undefined {
  const m = /^([0-9]+)[.,]([0-9]{1,9})$/.exec(text.trim());
  if (m === null) return undefined;
  return BigInt(m[1]!) * 1_000_000_000n + BigInt(m[2]!.padEnd(9, '0'));
}

const POLL_MS = 10;

/** The p-th percentile (nearest rank) of a non-empty list. Pure. */
export function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Epoch time in ns with sub-millisecond precision, from the monotonic clock. */
function epochNs(): bigint {
  return BigInt(Math.round((performance.timeOrigin + performance.now()) * 1_000)) * 1_000n;
}

/** Every `term` file under `dir` (the sandboxes), as epoch ns. */
function termTimes(dir: string): bigint[] {
  const out: bigint[] = [];
  const walk = (d: string, depth: number): void => {
    if (depth > 12) return;
    let names: string[];
    try {
      names = readdirSync(d);
    } catch {
      return;
    }
    for (const n of names) {
      const p = join(d, n);
      let st;
      try {
        st = statSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p, depth + 1);
      else if (n === 'term') {
        const ns = epochRealtimeNs(readFileSync(p, 'utf8'));
        if (ns !== undefined) out.push(ns);
      }
    }
  };
  walk(dir, 0);
  return out;
}

async function callApi(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text() };
}

/** One drain of `tasks` tasks with `graceMs`; its rows. */
async function drainOnce(tasks: number, graceMs: number): Promise<ResultRow[]> {
  const name = 'drain';
  const master = await startMaster(['--allocation_interval=100ms']);
  const agent = await startAgent(master.address, { hostname: 'bench-drain', ip: '127.0.0.2', flags: ['--registration_backoff_factor=10ms'] });
  let fw: BenchFramework | undefined;
  try {
    await agent.daemon.waitForMsg('registered', {}, 20_000);
    fw = await BenchFramework.subscribe(master.address, 'bench-drain');
    const f = fw;
    const offer = await f.until(() => f.takeOffer((o) => offered(o, 'cpus') >= tasks * 0.1), 20_000, 'an offer for the tasks');
    const infos: TaskInfo[] = Array.from({ length: tasks }, (_, i) => ({ ...benchTask(`drain-${i}`, offer), command: { shell: true, value: TERM_RECORDING_COMMAND } }));
    await f.launch(offer, infos);
    await f.until(() => (f.runningAt.size + f.failed.size >= tasks ? true : undefined), 60_000, `${tasks} tasks running`);
    if (f.failed.size > 0) throw new Error(`${f.failed.size} tasks failed to start: ${[...f.failed.values()][0]}`);
    // Let every shell reach its `wait` so the trap is installed before the drain.
    await new Promise((r) => setTimeout(r, 500));

    const agents = (await callApi(master.url, { type: 'GET_AGENTS' }));
    const agentId = (JSON.parse(agents.text) as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents[0]?.agent_info.id.value;
    if (agentId === undefined) throw new Error('the agent is not listed');
    const graceS = Math.floor(graceMs / 1000);
    const call = { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agentId }, max_grace_period: { seconds: graceS, nanos: (graceMs % 1000) * 1_000_000 } } };
    const callNs = epochNs();
    const t0 = performance.now();
    const r = await callApi(master.url, call);
    if (r.status !== 200) throw new Error(`DRAIN_AGENT answered ${r.status}: ${r.text}`);
    let drainedMs = Number.NaN;
    const deadline = t0 + graceMs + 60_000;
    while (performance.now() < deadline) {
      const a = await callApi(master.url, { type: 'GET_AGENTS' });
      if (/"drain_info":\{"state":"DRAINED"/.test(a.text)) {
        drainedMs = performance.now() - t0;
        break;
      }
      await new Promise((res) => setTimeout(res, POLL_MS));
    }
    if (!Number.isFinite(drainedMs)) throw new Error(`not DRAINED within ${graceMs + 60_000} ms (ack errors: ${f.ackErrors})`);

    const latenciesMs = termTimes(agent.workDir).map((ns) => Number(ns - callNs) / 1e6);
    const rows: ResultRow[] = [{
      benchmark: name,
      metric: `DRAIN_AGENT -> DRAINED, ${tasks} tasks, max_grace_period ${graceMs / 1000} s`,
      value: drainedMs,
      unit: 'ms',
      ...(graceMs > 0 ? against('grace', graceMs, drainedMs) : {}),
      note: graceMs > 0 ? 'tasks ignore SIGTERM: SIGKILL at the grace; every update acknowledged' : 'kill at once; every update acknowledged',
    }];
    if (latenciesMs.length > 0) {
      const missing = tasks - latenciesMs.length;
      for (const [label, v] of [['p50', percentile(latenciesMs, 50)], ['max', Math.max(...latenciesMs)]] as const) {
        rows.push({
          benchmark: name,
          metric: `call -> SIGTERM in the task ${label}, grace ${graceMs / 1000} s`,
          value: v,
          unit: 'ms',
          note: `${latenciesMs.length} of ${tasks} tasks recorded it${missing > 0 ? ` (${missing} were SIGKILLed first)` : ''}`,
        });
      }
    } else {
      rows.push({ benchmark: name, metric: `call -> SIGTERM in the task, grace ${graceMs / 1000} s`, value: Number.NaN, unit: 'ms', note: 'no task ran its trap (SIGKILL came first)' });
    }
    return rows;
  } finally {
    if (fw !== undefined) await fw.teardown().catch(() => undefined);
    // SIGUSR1: the agent kills every task (with its policy) and exits, so no task outlives the benchmark.
    await agent.daemon.stop(15_000, 'SIGUSR1');
    await master.daemon.stop(10_000);
    removeTempDir(agent.workDir);
    removeTempDir(master.workDir);
  }
}

export async function runDrain(opts: DrainOptions): Promise<BenchResult> {
  const rows: ResultRow[] = [];
  try {
    for (const g of opts.gracesMs) rows.push(...(await drainOnce(opts.tasks, g)));
    return { benchmark: 'drain', rows, context: { tasks: opts.tasks, gracesMs: opts.gracesMs } };
  } catch (e) {
    return { benchmark: 'drain', rows, error: (e as Error).message, context: { tasks: opts.tasks } };
  }
}

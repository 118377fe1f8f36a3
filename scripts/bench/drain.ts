/**
 * drain: DRAIN_AGENT on a real agent running 100 tasks (launched by the benchmark scheduler,
 * which acknowledges every update), with max_grace_period 0 and 2 s, each on a fresh master
 * and agent. Figures:
 *  - time from the DRAIN_AGENT call to the master's announcement of DRAINED: the AGENT_UPDATED
 *    record on Drydock's event stream (GET /drydock/v1/events, opened before the call) whose
 *    agent's drain record shows DRAINED. The master sends it as it applies the durable DRAINED
 *    state, the moment GET_AGENTS would first show it; watching the stream instead of polling
 *    every 10 ms removes the poll's 0-10 ms of quantization and its load (a drain record lists
 *    what each task keeps it waiting for: rendering it for 100 tasks was a third of the master's
 *    CPU during a drain, measured, and more in this process parsing the answers). The floor is
 *    the grace itself: a drain cannot end before the grace of a task that ignores SIGTERM;
 *    ratio = time / grace. With grace 0 the time is reported as is.
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

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { closeSync, fdatasyncSync, mkdirSync, openSync, readdirSync, readFileSync, statSync, writeSync } from 'node:fs';
import { getPriority, setPriority } from 'node:os';
import { request, type ClientRequest } from 'node:http';
import { join } from 'node:path';
import { parseJson } from '../../shared/json.js';
import { LineBuffer } from '../../shared/lines.js';
import { RecordReader } from '../../shared/recordio.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { makeTempDir, removeTempDir, startAgent, startMaster } from './daemon.js';
import { firstSignalled, SignalTrace } from './signal-trace.js';
import { launcherPath } from '../../agent/launcher.js';
import { BenchFramework, benchTask, offered } from './framework.js';
import type { TaskInfo } from '../../shared/mesos.js';

export interface DrainOptions {
  /** Tasks on the agent. Default 100. */
  tasks: number;
  /** Grace periods to drain with, in ms. Default 0 and 2000. */
  gracesMs: number[];
}

/** A task that records when SIGTERM reached it and otherwise ignores it. */
export const TERM_RECORDING_COMMAND = `exec bash -c 'echo $$ > "$MESOS_SANDBOX/pid"; trap "echo \\$EPOCHREALTIME > \\"\\$MESOS_SANDBOX/term\\"" TERM; while :; do sleep 600 & wait; done'`;

/** `1700000000.123456` ($EPOCHREALTIME, seconds with microseconds) as epoch ns. Pure. */
export function epochRealtimeNs(text: string): bigint | undefined {
  const m = /^([0-9]+)[.,]([0-9]{1,9})$/.exec(text.trim());
  if (m === null) return undefined;
  return BigInt(m[1]!) * 1_000_000_000n + BigInt(m[2]!.padEnd(9, '0'));
}

/** One record of Drydock's event stream, as received. */
type StreamEvent = { type?: string } & Record<string, unknown>;

/** Is this record the master announcing `agentId` DRAINED (Drydock's AGENT_UPDATED, its drain record DRAINED)? Pure. */
export function announcesDrained(e: StreamEvent, agentId: string): boolean {
  if (e.type !== 'AGENT_UPDATED') return false;
  const agent = (e['agent_updated'] as { agent?: { agent_id?: { value?: unknown }; drain?: { state?: unknown } } } | undefined)?.agent;
  return agent?.agent_id?.value === agentId && agent.drain?.state === 'DRAINED';
}

/**
 * Drydock's event stream (GET /drydock/v1/events), read over node:http. `until` resolves with
 * performance.now() at the first record (from now on) that matches.
 */
class DrydockEvents {
  readonly #req: ClientRequest;
  #waiter: { pred: (e: StreamEvent) => boolean; resolve: (at: number) => void; reject: (e: Error) => void } | undefined;
  #failed: Error | undefined;

  private constructor(req: ClientRequest) {
    this.#req = req;
  }

  /** Opens the stream; resolves once SNAPSHOT has arrived. */
  static open(url: string): Promise<DrydockEvents> {
    const u = new URL(`${url}/drydock/v1/events`);
    return new Promise<DrydockEvents>((resolve, reject) => {
      const req = request({ host: u.hostname, port: u.port, path: u.pathname, method: 'GET', headers: { accept: 'application/recordio' } });
      const events = new DrydockEvents(req);
      const fail = (e: Error): void => {
        events.#failed ??= e;
        events.#waiter?.reject(e);
        reject(e);
      };
      req.on('error', fail);
      req.on('response', (res) => {
        if (res.statusCode !== 200) {
          fail(new Error(`GET /drydock/v1/events answered ${res.statusCode ?? 0}`));
          res.resume();
          return;
        }
        const records = new RecordReader();
        res.on('data', (chunk: Buffer) => {
          const at = performance.now();
          for (const r of records.push(chunk)) {
            const e = parseJson(r) as StreamEvent;
            if (e.type === 'SNAPSHOT') resolve(events);
            const w = events.#waiter;
            if (w !== undefined && w.pred(e)) {
              events.#waiter = undefined;
              w.resolve(at);
            }
          }
        });
        res.on('end', () => fail(new Error("Drydock's event stream ended")));
        res.on('error', fail);
      });
      req.end();
    });
  }

  /** performance.now() when the first event matching `pred` arrived; rejects after `timeoutMs` or when the stream fails. */
  until(pred: (e: StreamEvent) => boolean, timeoutMs: number, what: string): Promise<number> {
    if (this.#failed !== undefined) return Promise.reject(this.#failed);
    return new Promise<number>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new Error(`no ${what} within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiter = {
        pred,
        resolve: (at) => {
          clearTimeout(timer);
          resolve(at);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      };
    });
  }

  close(): void {
    this.#req.destroy();
  }
}

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
  return sandboxFiles(dir, 'term').map(epochRealtimeNs).filter((ns): ns is bigint => ns !== undefined);
}

/** Every task's pid under `dir` (the `pid` file each shell writes first). */
function taskPids(dir: string): number[] {
  return sandboxFiles(dir, 'pid').map((t) => Number(t.trim())).filter((n) => Number.isInteger(n) && n > 0);
}

/** The text of every file named `file` under `dir`. */
function sandboxFiles(dir: string, file: string): string[] {
  const out: string[] = [];
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
      else if (n === file) out.push(readFileSync(p, 'utf8'));
    }
  };
  walk(dir, 0);
  return out;
}

/**
 * The floor of the SIGTERM latency: the same `tasks` shells, started by this process in
 * sandboxes of their own, signalled by one fsync of a small write and a SIGTERM to each group,
 * what a drain needs at the least. The SIGTERMs go out as the agent's do: from the real-time
 * signaller when it may run so, else from this process as many nice levels above the tasks as
 * the agent (--priority_boost's default). Returns each task's latency in ms as its trap read
 * it (of those that recorded one within 10 s), how many did not, when each was sent (the
 * kernel trace), and who sent them.
 */
export async function sigtermFloor(tasks: number): Promise<{ latenciesMs: number[]; missing: number; sent: SentTimes; signaller: string }> {
  const dir = makeTempDir('drydock-bench-term-floor-');
  const children: ChildProcess[] = [];
  let signaller: FloorSignaller | string = 'not started';
  let trace: SignalTrace | string = 'not started';
  try {
    for (let i = 0; i < tasks; i++) {
      const sandbox = join(dir, `t${i}`);
      mkdirSync(sandbox);
      const child = spawn('/bin/sh', ['-c', TERM_RECORDING_COMMAND], { cwd: sandbox, env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', MESOS_SANDBOX: sandbox }, detached: true, stdio: 'ignore' });
      children.push(child);
    }
    await Promise.all(children.map((c) => once(c, 'spawn')));
    // As the drain: every shell has reached its `wait` before the signal.
    await new Promise((r) => setTimeout(r, 500));
    // The kills go as the agent's do: from a real-time signaller (the agent's own binary) when
    // it may run so, else from this process, as many nice levels above the tasks as the agent.
    signaller = await FloorSignaller.start();
    const before = getPriority();
    let raised = false;
    if (typeof signaller === 'string') {
      try {
        setPriority(before - FLOOR_PRIORITY_BOOST);
        raised = true;
      } catch {
        // Not permitted: the floor runs at the tasks' priority (the agent, then, too).
      }
    }
    const fd = openSync(join(dir, 'journal'), 'a');
    trace = SignalTrace.start(SIGTERM);
    const callNs = epochNs();
    const callMono = process.hrtime.bigint();
    writeSync(fd, 'x'.repeat(512));
    fdatasyncSync(fd);
    const pids = children.map((c) => c.pid ?? 0);
    if (typeof signaller === 'string') for (const pid of pids) process.kill(-pid, 'SIGTERM');
    else await signaller.term(pids);
    closeSync(fd);
    if (raised) setPriority(before);
    const sent = sentTimes(trace, pids, callMono);
    const deadline = Date.now() + 10_000;
    let times = termTimes(dir);
    while (times.length < tasks && Date.now() < deadline) {
      await new Promise((r) => setTimeout(r, 20));
      times = termTimes(dir);
    }
    return { latenciesMs: times.map((ns) => Number(ns - callNs) / 1e6), missing: tasks - times.length, sent, signaller: typeof signaller === 'string' ? `this process (${signaller})` : 'a real-time signaller' };
  } finally {
    // Read and removed by sentTimes; removed here too when something failed first (a no-op otherwise).
    if (typeof trace === 'object') trace.close();
    if (typeof signaller === 'object') signaller.close();
    const gone = children.filter((c) => c.exitCode === null && c.signalCode === null).map((c) => once(c, 'exit'));
    for (const c of children) {
      try {
        process.kill(-(c.pid ?? 0), 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    await Promise.all(gone);
    removeTempDir(dir);
  }
}

const SIGTERM = 15;

/**
 * When the kernel queued SIGTERM to each task (the tracepoint; see signal-trace.ts), in ms after
 * `fromMono`: `ms` for those signalled, `missing` for the rest; or why it was not traced.
 */
type SentTimes = { ms: number[]; missing: number } | { unavailable: string };

/** Reads and closes `trace` (or passes on why there is none). */
function sentTimes(trace: SignalTrace | string, pids: readonly number[], fromMono: bigint): SentTimes {
  if (typeof trace === 'string') return { unavailable: trace };
  try {
    const { afterNs, missing } = firstSignalled(trace.read(), pids, SIGTERM, fromMono);
    return { ms: afterNs.map((ns) => Number(ns) / 1e6), missing };
  } finally {
    trace.close();
  }
}

/** `drydock-launch --signal` (agent/launcher.c), driven by the floor as the agent drives it. */
class FloorSignaller {
  readonly #child: ChildProcess;
  #lines: string[] = [];
  #waiter: (() => void) | undefined;

  private constructor(child: ChildProcess) {
    this.#child = child;
    const lines = new LineBuffer();
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      this.#lines.push(...lines.push(chunk));
      this.#waiter?.();
    });
    child.on('exit', () => this.#waiter?.());
  }

  /** The signaller once it runs SCHED_FIFO; why not otherwise (it is then stopped). */
  static async start(): Promise<FloorSignaller | string> {
    const child = spawn(launcherPath(), ['--signal'], { stdio: ['pipe', 'pipe', 'inherit'] });
    child.on('error', () => {});
    const s = new FloorSignaller(child);
    const first = await s.#next(5_000);
    if (first === 'R fifo') return s;
    s.close();
    return first === undefined ? 'the signaller did not start' : `the signaller may not run real-time: ${first.slice(2)}`;
  }

  /** SIGTERM to each group; resolves once the signaller has sent them all. */
  async term(pgids: readonly number[]): Promise<void> {
    this.#child.stdin?.write(`${pgids.map((p) => `15 ${p}`).join(' ')}\n`);
    const reply = await this.#next(10_000);
    if (reply !== 'D') throw new Error(`the signaller answered ${reply ?? 'nothing'}`);
  }

  close(): void {
    this.#child.stdin?.end();
  }

  async #next(timeoutMs: number): Promise<string | undefined> {
    const deadline = Date.now() + timeoutMs;
    while (this.#lines.length === 0 && this.#child.exitCode === null && Date.now() < deadline) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, deadline - Date.now()));
        this.#waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#waiter = undefined;
    }
    return this.#lines.shift();
  }
}

/** The agent's --priority_boost default, for the floor's kill loop. */
const FLOOR_PRIORITY_BOOST = 5;

async function callApi(url: string, body: unknown): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text() };
}

/** One drain of `tasks` tasks with `graceMs`; its rows. */
/** The floor's figures a drain's are compared with. */
interface Floor {
  /** SIGTERM in the task, ms: p50 and max. */
  trap: { p50: number; max: number } | undefined;
  /** SIGTERM sent (the kernel trace), ms: p50 and max. */
  sent: { p50: number; max: number } | undefined;
}

async function drainOnce(tasks: number, graceMs: number, floor: Floor): Promise<ResultRow[]> {
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
    const events = await DrydockEvents.open(master.url);
    const trace = SignalTrace.start(SIGTERM);
    const callNs = epochNs();
    const callMono = process.hrtime.bigint();
    let sent: SentTimes = { unavailable: 'the drain failed' };
    let drainedMs: number;
    try {
      const drained = events.until((e) => announcesDrained(e, agentId), graceMs + 60_000, 'DRAINED');
      // Awaited (and its failure thrown) below, once the call is answered.
      drained.catch(() => undefined);
      const t0 = performance.now();
      const r = await callApi(master.url, call);
      if (r.status !== 200) throw new Error(`DRAIN_AGENT answered ${r.status}: ${r.text}`);
      try {
        drainedMs = (await drained) - t0;
      } catch (e) {
        throw new Error(`${(e as Error).message} (ack errors: ${f.ackErrors})`);
      }
      sent = sentTimes(trace, taskPids(agent.workDir), callMono);
    } finally {
      events.close();
      if (typeof trace !== 'string') trace.close();
    }

    const latenciesMs = termTimes(agent.workDir).map((ns) => Number(ns - callNs) / 1e6);
    const rows: ResultRow[] = [{
      benchmark: name,
      metric: `DRAIN_AGENT -> DRAINED, ${tasks} tasks, max_grace_period ${graceMs / 1000} s`,
      value: drainedMs,
      unit: 'ms',
      ...(graceMs > 0 ? against('grace', graceMs, drainedMs) : { goal: { text: '<= 150 ms', pass: drainedMs <= 150 } }),
      note: graceMs > 0 ? 'tasks ignore SIGTERM: SIGKILL at the grace; every update acknowledged' : 'kill at once; every update acknowledged',
    }];
    if ('ms' in sent && sent.ms.length > 0) {
      for (const [label, v, f] of [['p50', percentile(sent.ms, 50), floor.sent?.p50], ['max', Math.max(...sent.ms), floor.sent?.max]] as const) {
        rows.push({
          benchmark: name,
          metric: `call -> SIGTERM sent to the task ${label}, grace ${graceMs / 1000} s`,
          value: v,
          unit: 'ms',
          ...(f !== undefined ? against(`one fsync + ${tasks} kill() ${label}`, f, v) : {}),
          // The issue's goal: every task signalled within 20 ms of the call (the max is what it holds).
          ...(label === 'max' ? { goal: { text: '<= 20 ms', pass: v <= 20 && sent.missing === 0 } } : {}),
          note: `kernel trace (signal_generate): ${sent.ms.length} of ${tasks} tasks signalled${sent.missing > 0 ? `, ${sent.missing} never` : ''}`,
        });
      }
    } else {
      rows.push({ benchmark: name, metric: `call -> SIGTERM sent to the task, grace ${graceMs / 1000} s`, value: Number.NaN, unit: 'ms', note: `not traced: ${'unavailable' in sent ? sent.unavailable : 'no task was signalled'}` });
    }
    if (latenciesMs.length > 0) {
      const missing = tasks - latenciesMs.length;
      for (const [label, v, f] of [['p50', percentile(latenciesMs, 50), floor.trap?.p50], ['max', Math.max(...latenciesMs), floor.trap?.max]] as const) {
        rows.push({
          benchmark: name,
          metric: `call -> SIGTERM in the task ${label}, grace ${graceMs / 1000} s`,
          value: v,
          unit: 'ms',
          ...(f !== undefined ? against(`one fsync + ${tasks} kill() ${label}`, f, v) : {}),
          note: `read by the task's trap: ${latenciesMs.length} of ${tasks} tasks recorded it${missing > 0 ? ` (${missing} were SIGKILLed first)` : ''}`,
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
    const f = await sigtermFloor(opts.tasks);
    const floor: Floor = {
      trap: f.latenciesMs.length > 0 ? { p50: percentile(f.latenciesMs, 50), max: Math.max(...f.latenciesMs) } : undefined,
      sent: 'ms' in f.sent && f.sent.ms.length > 0 ? { p50: percentile(f.sent.ms, 50), max: Math.max(...f.sent.ms) } : undefined,
    };
    for (const g of opts.gracesMs) rows.push(...(await drainOnce(opts.tasks, g, floor)));
    for (const [what, figures, note] of [
      ['sent to the task', floor.sent, 'unavailable' in f.sent ? `not traced: ${f.sent.unavailable}` : `kernel trace (signal_generate); kill() from ${f.signaller}`],
      ['in the task', floor.trap, `read by the task's trap${f.missing > 0 ? `; ${f.missing} recorded nothing` : ''}`],
    ] as const) {
      if (figures === undefined) continue;
      for (const [label, v] of [['p50', figures.p50], ['max', figures.max]] as const) {
        rows.push({ benchmark: 'drain', metric: `floor: one fsync + ${opts.tasks} kill() -> SIGTERM ${what} ${label}`, value: v, unit: 'ms', note: `the same shells, started by this process; ${note}` });
      }
    }
    return { benchmark: 'drain', rows, context: { tasks: opts.tasks, gracesMs: opts.gracesMs } };
  } catch (e) {
    return { benchmark: 'drain', rows, error: (e as Error).message, context: { tasks: opts.tasks } };
  }
}

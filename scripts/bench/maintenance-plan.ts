/**
 * maintenance-plan (issue 12): a maintenance plan over 1,000 simulated agents in 20 racks
 * (scripts/sim-agents.ts with --racks, --draining and --restart-after-shutdown: an agent the
 * master shuts down on DOWN registers again with its id once its machine is UP, as a supervised
 * agent would), `group_by: rack`, `budget: { max_down: 50 }`, plan and phase strategies
 * parallel (so the budget alone keeps 50 machines out, rolling), notice 0, window 1hrs,
 * wait_for_frameworks 0, max_grace_period 0, settle 0, up_when agent_registered.
 *
 * Figure: the POST of the spec until GET /v1/maintenance/plans/<name> answers 200 (COMPLETE),
 * polled every 100 ms. It is compared with two scripts of raw operator calls, each on a fresh
 * identical cluster; the goal (plan overhead < 10 %) is against the faster of the two.
 * Floor 1, the same sequence per machine: a pool of 50 workers over the machines, as the budget
 * rolls. For each machine DRAIN_AGENT (max_grace_period 0), wait DRAINED,
 * UPDATE_MAINTENANCE_SCHEDULE with the script's schedule plus this machine's window (merging: the
 * call replaces the whole schedule, so schedule writes are serialised in the script),
 * START_MAINTENANCE, STOP_MAINTENANCE (which takes the machine out of the schedule; the script's
 * copy forgets it under the same lock), wait until the agent registered again and is active
 * (REACTIVATE_AGENT if it came back deactivated).
 * Floor 2, batched: waves of 50, each call taking the whole wave where the API takes a list
 * (one schedule, one START, one STOP; DRAIN_AGENT and REACTIVATE_AGENT all at once), each wave
 * waiting for its slowest machine.
 * The waits follow Drydock's event stream (GET /drydock/v1/events), not polling. The drain comes before
 * the window because the operator API refuses DRAIN_AGENT on a scheduled machine (Mesos); the
 * plan drains through the master's internal path after scheduling.
 *
 * Second figure: master CPU time (utime+stime from /proc/<pid>/stat over the run) while
 * --mp-plans plans over agents/plans machines each run at once (each `max_down`
 * maxDown/plans, so as many machines are out as in the first figure), on another fresh cluster,
 * against the master's CPU time over the faster script (the same machines, the same 50 out).
 *
 * With --mp-cpu-prof=DIR the masters run with `--cpu-prof --cpu-prof-dir=DIR` (one .cpuprofile
 * per master, written when it stops).
 */

import { RecordReader } from '../../shared/recordio.js';
import { simAgentAddress } from '../sim-agents.js';
import { Child, SIM_AGENTS_BIN, removeTempDir, startMaster } from './daemon.js';
import { procStat } from './procfs.js';
import { against, type BenchResult, type ResultRow } from './report.js';

export interface MaintenancePlanOptions {
  /** Simulated agents, one per machine. Default 1,000. */
  agents: number;
  /** Racks (attribute rack:r1..rN). Default 20. */
  racks: number;
  /** Machines out at once: the plan's max_down, the floor's workers. Default 50. */
  maxDown: number;
  /** Plans run at once for the CPU figure, each over agents/plans machines. Default 10. */
  plans: number;
  /** The sims' restart delay after a SHUTDOWN (a supervisor's RestartSec). Default 100 ms. */
  restartMs: number;
  /** Source addresses of the sims are ipBase + k. */
  ipBase: string;
  /** Write the masters' CPU profiles here. */
  cpuProfDir?: string;
}

/** The longest any one run may take before the benchmark gives up. */
const RUN_TIMEOUT_MS = 600_000;
const HOUR_NS = 3_600_000_000_000n;

/** A machine of the cluster as the sims register it. */
interface SimMachine {
  hostname: string;
  ip: string;
}

/** The spec of a plan over `machines` (all of them when undefined). Pure. */
export function planSpec(name: string, maxDown: number, hostnames?: readonly string[]): string {
  return JSON.stringify({
    name,
    machines: hostnames === undefined ? 'all' : { hostnames },
    group_by: 'rack',
    strategy: 'parallel',
    phase_strategy: 'parallel',
    notice: 0,
    window: '1hrs',
    wait_for_frameworks: 0,
    max_grace_period: 0,
    settle: 0,
    up_when: 'agent_registered',
    budget: { max_down: maxDown },
  });
}

/** POST /api/v1 with a JSON call; throws on anything but 200/202 with the call's type, status and body start. */
async function api(url: string, call: Record<string, unknown>): Promise<string> {
  const res = await fetch(`${url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(call), signal: AbortSignal.timeout(30_000) });
  const text = await res.text();
  if (res.status !== 200 && res.status !== 202) throw new Error(`${String(call['type'])} answered ${res.status}: ${text.slice(0, 300)}`);
  return text;
}

/** What the floor script knows of an agent, from Drydock's event stream. */
interface WatchedAgent {
  id: string;
  hostname: string;
  active: boolean;
  deactivated: boolean;
  drainState: string | undefined;
  present: boolean;
  /** Times this id was added (AGENT_UPDATED `ADDED`: a restarted agent is added again). */
  added: number;
}

/**
 * Drydock's event stream (GET /drydock/v1/events) of one master, folded into a map of agents;
 * `until` resolves when a predicate over the map holds, re-checked on every record.
 */
class AgentWatch {
  readonly agents = new Map<string, WatchedAgent>();
  readonly #abort = new AbortController();
  readonly #waiters = new Set<() => void>();
  #failed: Error | undefined;

  static async open(url: string): Promise<AgentWatch> {
    const w = new AgentWatch();
    const res = await fetch(`${url}/drydock/v1/events`, { signal: w.#abort.signal });
    if (res.status !== 200 || res.body === null) throw new Error(`GET /drydock/v1/events answered ${res.status}`);
    const subscribed = new Promise<void>((resolve, reject) => {
      const reader = new RecordReader();
      void (async () => {
        try {
          for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
            for (const rec of reader.push(Buffer.from(chunk))) {
              if (w.#apply(JSON.parse(rec) as Record<string, unknown>)) resolve();
            }
            for (const f of [...w.#waiters]) f();
          }
        } catch (e) {
          if (!w.#abort.signal.aborted) w.#failed = e as Error;
          reject(e as Error);
        }
        w.#failed ??= new Error("Drydock's event stream ended");
        for (const f of [...w.#waiters]) f();
      })();
    });
    await subscribed;
    return w;
  }

  /** Folds one record in; true for SNAPSHOT. */
  #apply(e: Record<string, unknown>): boolean {
    const put = (a: Record<string, unknown>, added: boolean): void => {
      const id = (a['agent_id'] as { value: string }).value;
      const old = this.agents.get(id);
      this.agents.set(id, {
        id,
        hostname: a['hostname'] as string,
        active: a['active'] === true,
        deactivated: a['deactivated'] === true,
        drainState: (a['drain'] as { state?: string } | undefined)?.state,
        // Unreachable or recovered, it is not registered.
        present: a['phase'] === 'REGISTERED',
        added: (old?.added ?? 0) + (added ? 1 : 0),
      });
    };
    switch (e['type']) {
      case 'SNAPSHOT':
        for (const a of (e['snapshot'] as { agents: Array<Record<string, unknown>> }).agents) put(a, false);
        return true;
      case 'AGENT_UPDATED': {
        const u = e['agent_updated'] as { change: string; agent: Record<string, unknown> };
        put(u.agent, u.change === 'ADDED');
        return false;
      }
      case 'AGENT_LEFT': {
        const a = this.agents.get((e['agent_left'] as { agent_id: { value: string } }).agent_id.value);
        if (a !== undefined) a.present = false;
        return false;
      }
      default: return false;
    }
  }

  until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => done(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)), timeoutMs);
      const check = (): void => {
        if (this.#failed !== undefined) done(this.#failed);
        else if (pred()) done();
      };
      const done = (err?: Error): void => {
        clearTimeout(timer);
        this.#waiters.delete(check);
        if (err === undefined) resolve();
        else reject(err);
      };
      this.#waiters.add(check);
    });
  }

  close(): void {
    this.#abort.abort();
  }
}

/** A master with `agents` sims registered (racks, draining, restarting), and its CPU clock. */
interface Cluster {
  master: Awaited<ReturnType<typeof startMaster>>;
  sims: Child;
  machines: SimMachine[];
}

async function startCluster(opts: MaintenancePlanOptions): Promise<Cluster> {
  const master = await startMaster([], opts.cpuProfDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] });
  const sims = new Child('sim-agents', SIM_AGENTS_BIN, [
    `--master=${master.address}`, `--count=${opts.agents}`, `--ip-base=${opts.ipBase}`, '--concurrency=128',
    `--racks=${opts.racks}`, '--draining', `--restart-after-shutdown=${opts.restartMs}ms`, '--run-tasks=false',
  ]);
  try {
    const reg = await sims.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 120_000, 'registered line');
    if (Number(reg['registered']) !== opts.agents) throw new Error(`only ${String(reg['registered'])} of ${opts.agents} sim agents registered`);
  } catch (e) {
    await stopCluster({ master, sims, machines: [] });
    throw e;
  }
  const machines = Array.from({ length: opts.agents }, (_, i) => ({ hostname: `sim-${i + 1}`, ip: simAgentAddress(opts.ipBase, i + 1) }));
  return { master, sims, machines };
}

async function stopCluster(c: Cluster): Promise<void> {
  await c.sims.stop(10_000);
  await c.master.daemon.stop(20_000);
  removeTempDir(c.master.workDir);
}

/** The master's utime+stime in seconds (NaN when it is gone). */
function cpuSeconds(c: Cluster): number {
  return procStat(c.master.daemon.pid)?.cpuSeconds ?? Number.NaN;
}

/** POSTs each spec, then polls every plan until all answer 200 (COMPLETE); any ERROR throws. Returns ms from the first POST. */
async function runPlans(url: string, specs: ReadonlyArray<{ name: string; text: string }>, pollMs: number): Promise<number> {
  const t0 = performance.now();
  for (const s of specs) {
    const res = await fetch(`${url}/v1/maintenance/plans`, { method: 'POST', body: s.text, signal: AbortSignal.timeout(30_000) });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`POST plan ${s.name} answered ${res.status}: ${text.slice(0, 300)}`);
  }
  const pending = new Set(specs.map((s) => s.name));
  while (pending.size > 0) {
    if (performance.now() - t0 > RUN_TIMEOUT_MS) throw new Error(`plans ${[...pending].join(', ')} not COMPLETE after ${RUN_TIMEOUT_MS} ms`);
    await new Promise((r) => setTimeout(r, pollMs));
    for (const name of [...pending]) {
      const res = await fetch(`${url}/v1/maintenance/plans/${name}`, { signal: AbortSignal.timeout(30_000) });
      const text = await res.text();
      if (res.status === 200) pending.delete(name);
      else if (res.status !== 202) throw new Error(`plan ${name}: ${res.status} ${text.slice(0, 500)}`);
    }
  }
  return performance.now() - t0;
}

/** The raw-call floor: `workers` machines at a time. Returns ms from the first call. */
async function runFloor(c: Cluster, workers: number): Promise<number> {
  const url = c.master.url;
  const watch = await AgentWatch.open(url);
  try {
    const byHost = new Map([...watch.agents.values()].map((a) => [a.hostname, a.id]));
    // The script's copy of the schedule: machine key -> window; the call replaces the whole schedule.
    const schedule = new Map<string, { machine: SimMachine; startNs: bigint }>();
    let lock: Promise<unknown> = Promise.resolve();
    const serial = <T>(f: () => Promise<T>): Promise<T> => {
      const p = lock.then(f);
      lock = p.catch(() => undefined);
      return p;
    };
    const scheduleCall = (): Record<string, unknown> => ({
      type: 'UPDATE_MAINTENANCE_SCHEDULE',
      update_maintenance_schedule: {
        schedule: {
          windows: [...schedule.values()].map((w) => ({
            machine_ids: [w.machine],
            unavailability: { start: { nanoseconds: w.startNs.toString() }, duration: { nanoseconds: HOUR_NS.toString() } },
          })),
        },
      },
    });
    const one = async (m: SimMachine): Promise<void> => {
      const id = byHost.get(m.hostname);
      if (id === undefined) throw new Error(`no agent for ${m.hostname}`);
      await api(url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: id }, max_grace_period: { seconds: 0, nanos: 0 } } });
      await watch.until(() => watch.agents.get(id)?.drainState === 'DRAINED', 120_000, `${m.hostname} DRAINED`);
      const key = `${m.hostname}/${m.ip}`;
      await serial(async () => {
        schedule.set(key, { machine: m, startNs: BigInt(Date.now()) * 1_000_000n });
        await api(url, scheduleCall());
      });
      const addedBefore = watch.agents.get(id)?.added ?? 0;
      await api(url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [m] } });
      await serial(async () => {
        await api(url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [m] } });
        schedule.delete(key);
      });
      await watch.until(() => {
        const a = watch.agents.get(id);
        return a !== undefined && a.present && a.added > addedBefore;
      }, 120_000, `${m.hostname} registered again`);
      if (watch.agents.get(id)?.deactivated === true) await api(url, { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: { value: id } } });
      await watch.until(() => watch.agents.get(id)?.active === true, 120_000, `${m.hostname} active`);
    };
    const t0 = performance.now();
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(workers, c.machines.length) }, async () => {
      while (next < c.machines.length) {
        const m = c.machines[next++];
        if (m !== undefined) await one(m);
      }
    }));
    return performance.now() - t0;
  } finally {
    watch.close();
  }
}

/**
 * The second floor: the best script the operator API allows, in waves of `workers` machines. Per
 * wave: DRAIN_AGENT for every agent at once, wait until all are DRAINED, one
 * UPDATE_MAINTENANCE_SCHEDULE with the wave's windows, one START_MAINTENANCE and one
 * STOP_MAINTENANCE for the whole wave, wait until every agent registered again (REACTIVATE_AGENT
 * any that came back deactivated) and is active. Returns ms from the first call.
 */
async function runWaves(c: Cluster, workers: number): Promise<number> {
  const url = c.master.url;
  const watch = await AgentWatch.open(url);
  try {
    const byHost = new Map([...watch.agents.values()].map((a) => [a.hostname, a.id]));
    const t0 = performance.now();
    for (let i = 0; i < c.machines.length; i += workers) {
      const wave = c.machines.slice(i, i + workers).map((m) => {
        const id = byHost.get(m.hostname);
        if (id === undefined) throw new Error(`no agent for ${m.hostname}`);
        return { m, id };
      });
      await Promise.all(wave.map((w) => api(url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: w.id }, max_grace_period: { seconds: 0, nanos: 0 } } })));
      await watch.until(() => wave.every((w) => watch.agents.get(w.id)?.drainState === 'DRAINED'), 120_000, `wave ${i / workers + 1} DRAINED`);
      const startNs = BigInt(Date.now()) * 1_000_000n;
      const machines = wave.map((w) => w.m);
      await api(url, {
        type: 'UPDATE_MAINTENANCE_SCHEDULE',
        update_maintenance_schedule: { schedule: { windows: [{ machine_ids: machines, unavailability: { start: { nanoseconds: startNs.toString() }, duration: { nanoseconds: HOUR_NS.toString() } } }] } },
      });
      const addedBefore = new Map(wave.map((w) => [w.id, watch.agents.get(w.id)?.added ?? 0]));
      await api(url, { type: 'START_MAINTENANCE', start_maintenance: { machines } });
      await api(url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines } });
      const back = (id: string): boolean => {
        const a = watch.agents.get(id);
        return a !== undefined && a.present && a.added > (addedBefore.get(id) ?? 0);
      };
      await watch.until(() => wave.every((w) => back(w.id)), 120_000, `wave ${i / workers + 1} registered again`);
      await Promise.all(wave.filter((w) => watch.agents.get(w.id)?.deactivated === true).map((w) => api(url, { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: { value: w.id } } })));
      await watch.until(() => wave.every((w) => watch.agents.get(w.id)?.active === true), 120_000, `wave ${i / workers + 1} active`);
    }
    return performance.now() - t0;
  } finally {
    watch.close();
  }
}

/** Runs `work` on a fresh cluster; its ms and the master's CPU seconds over it. */
async function onFreshCluster(opts: MaintenancePlanOptions, work: (c: Cluster) => Promise<number>): Promise<{ ms: number; cpuS: number }> {
  const c = await startCluster(opts);
  try {
    const cpu0 = cpuSeconds(c);
    const ms = await work(c);
    return { ms, cpuS: cpuSeconds(c) - cpu0 };
  } finally {
    await stopCluster(c);
  }
}

const pct = (r: { ms: number; cpuS: number }): string => `${((r.cpuS / (r.ms / 1000)) * 100).toFixed(0)} %`;

export async function runMaintenancePlan(opts: MaintenancePlanOptions): Promise<BenchResult> {
  const name = 'maintenance-plan';
  const rows: ResultRow[] = [];
  const context: Record<string, unknown> = { agents: opts.agents, racks: opts.racks, maxDown: opts.maxDown, plans: opts.plans, restartMs: opts.restartMs };
  const n = opts.agents.toLocaleString('en-US');
  try {
    // Floors: raw calls on fresh clusters, one machine per worker and in batched waves.
    const perMachine = await onFreshCluster(opts, (c) => runFloor(c, opts.maxDown));
    const waves = await onFreshCluster(opts, (c) => runWaves(c, opts.maxDown));
    const best = waves.ms < perMachine.ms ? { ...waves, text: `raw calls batched in waves of ${opts.maxDown}` } : { ...perMachine, text: `raw calls, ${opts.maxDown} machines at a time` };
    context['floorMs'] = Math.round(perMachine.ms);
    context['wavesMs'] = Math.round(waves.ms);
    context['floorMasterCpuS'] = Number(perMachine.cpuS.toFixed(2));
    context['wavesMasterCpuS'] = Number(waves.cpuS.toFixed(2));

    // The figure: one plan over every machine.
    const plan = await onFreshCluster(opts, (c) => runPlans(c.master.url, [{ name: 'bench', text: planSpec('bench', opts.maxDown) }], 100));
    context['planMasterCpuS'] = Number(plan.cpuS.toFixed(2));
    const metric = `plan over ${n} machines, ${opts.racks} racks, max_down ${opts.maxDown}: POST -> COMPLETE`;
    rows.push({
      benchmark: name,
      metric,
      value: plan.ms / 1000,
      unit: 's',
      ...against(`raw calls, ${opts.maxDown} machines at a time, one worker each`, perMachine.ms / 1000, plan.ms / 1000),
      goal: { text: '< 1.1x the faster script', pass: plan.ms < best.ms * 1.1 },
      note: `master CPU ${plan.cpuS.toFixed(1)} s during the plan (${pct(plan)} of a core), ${perMachine.cpuS.toFixed(1)} s during the script (${pct(perMachine)})`,
    });
    rows.push({
      benchmark: name,
      metric,
      value: plan.ms / 1000,
      unit: 's',
      ...against(`raw calls batched in waves of ${opts.maxDown}`, waves.ms / 1000, plan.ms / 1000),
      goal: { text: '< 1.1x the faster script', pass: plan.ms < best.ms * 1.1 },
      note: `master CPU ${waves.cpuS.toFixed(1)} s during the waves (${pct(waves)} of a core); the faster script is the goal's floor`,
    });

    // CPU: `plans` plans at once over disjoint machines, as master CPU time for the whole run.
    const per = Math.ceil(opts.agents / opts.plans);
    const perDown = Math.max(1, Math.floor(opts.maxDown / opts.plans));
    let planCount = 0;
    const many = await onFreshCluster(opts, (c) => {
      const specs = [];
      for (let p = 0; p < opts.plans; p++) {
        const hosts = c.machines.slice(p * per, (p + 1) * per).map((m) => m.hostname);
        if (hosts.length > 0) specs.push({ name: `bench-${p + 1}`, text: planSpec(`bench-${p + 1}`, perDown, hosts) });
      }
      planCount = specs.length;
      return runPlans(c.master.url, specs, 500);
    });
    context['concurrentPlansMs'] = Math.round(many.ms);
    rows.push({
      benchmark: name,
      metric: `master CPU time, ${planCount} plans x ${per} machines at once (max_down ${perDown} each)`,
      value: many.cpuS,
      unit: 's',
      ...against(`${best.text}, same machines`, best.cpuS, many.cpuS),
      note: `utime+stime of the master over the ${(many.ms / 1000).toFixed(1)} s the plans took (${pct(many)} of a core)`,
    });
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message, context };
  }
}

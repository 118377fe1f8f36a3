/**
 * The large cluster the state benchmarks read (GET_STATE in JSON and protobuf, the legacy
 * /master/state): a real master and simulated agents (scripts/sim-agents.ts in child
 * processes: `sim-<k>` on loopback address ipBase + k) that register already running their
 * share of the tasks (`--tasks-per-agent`: each task TASK_RUNNING with its status, of the
 * framework `sim-framework`), as agents re-registering after a master failover do; then that
 * framework subscribes (and suppresses its offers). The master holds what a cluster of that
 * size holds: agents with resources and attributes, a subscribed framework, tasks with their
 * statuses. Registering the tasks rather than launching them one by one keeps the set-up to
 * about a minute on a loaded machine (launching 50,000 through ACCEPTs took over 15 minutes).
 *
 * Also here: reading one HTTP answer to its last byte (the figure of those benchmarks), on a
 * fresh connection, without keeping the body.
 */

import { request } from 'node:http';
import { SchedulerClient } from '../../scheduler/client.js';
import { Child, SIM_AGENTS_BIN, removeTempDir, startMaster } from './daemon.js';

export interface StateClusterOptions {
  /** Simulated agents. */
  agents: number;
  /** Tasks, the same number on every agent: a multiple of `agents`. */
  tasks: number;
  /** Source addresses of the sims are ipBase + k. */
  ipBase: string;
  /** Sim-agent processes (default 2 from 5,000 agents up, else 1, as the storm benchmark found best on 2 cores). */
  processes?: number;
  /** Extra master flags. */
  masterFlags?: readonly string[];
}

export interface StateCluster {
  readonly master: { daemon: Child; address: string; url: string; workDir: string };
  /** The tasks' framework, subscribed (its offers suppressed). */
  readonly framework: SchedulerClient;
  /** How long the set-up took: the sims registering with their tasks, the framework subscribing. */
  readonly setupMs: { register: number; subscribe: number };
  /** Stops the framework, the sims and the master; removes the master's directory. */
  stop(): Promise<void>;
}

/** Starts the cluster and returns once every agent is registered and every task TASK_RUNNING. */
export async function startStateCluster(o: StateClusterOptions): Promise<StateCluster> {
  if (o.tasks % o.agents !== 0) throw new Error(`${o.tasks} tasks do not spread evenly over ${o.agents} agents`);
  const master = await startMaster(o.masterFlags ?? []);
  const processes = o.processes ?? (o.agents >= 5_000 ? 2 : 1);
  const sims: Child[] = [];
  let framework: SchedulerClient | undefined;
  const stop = async (): Promise<void> => {
    framework?.close();
    await Promise.all(sims.map((s) => s.stop(10_000)));
    await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
  };
  try {
    const t0 = performance.now();
    for (let p = 0, first = 1; p < processes; p++) {
      const count = Math.floor(o.agents / processes) + (p < o.agents % processes ? 1 : 0);
      sims.push(new Child(`sim-agents[${p}]`, SIM_AGENTS_BIN, [`--master=${master.address}`, `--count=${count}`, `--first=${first}`, `--ip-base=${o.ipBase}`, `--concurrency=${Math.ceil(256 / processes)}`, `--tasks-per-agent=${o.tasks / o.agents}`, '--attempt-timeout=120secs']));
      first += count;
    }
    const regs = await Promise.all(sims.map((s) => s.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 900_000, 'registered line')));
    const registered = regs.reduce((sum, r) => sum + Number(r['registered']), 0);
    if (registered !== o.agents) throw new Error(`only ${registered} of ${o.agents} sim agents registered`);
    const register = performance.now() - t0;
    const t1 = performance.now();
    framework = await SchedulerClient.subscribe(master.address, { user: 'root', name: 'sim-framework', checkpoint: true, failover_timeout: 3600 }, { frameworkId: 'sim-framework', timeoutMs: 120_000 });
    const suppressed = await framework.call('SUPPRESS');
    if (suppressed.status !== 202) throw new Error(`SUPPRESS answered ${suppressed.status}: ${suppressed.text}`);
    const subscribe = performance.now() - t1;
    return { master, framework, setupMs: { register, subscribe }, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** One answer read to its last byte. */
export interface Timed {
  status: number;
  contentType: string | undefined;
  bytes: number;
  /** From the request's first byte sent to the answer's last byte read. */
  ms: number;
}

/** Sends one request on a fresh connection and reads the answer to its last byte, counting bytes only. */
export function timedRequest(url: string, o: { method: string; path: string; headers?: Record<string, string>; body?: Buffer | string; timeoutMs?: number }): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const u = new URL(url);
    const t0 = performance.now();
    const req = request({ host: u.hostname, port: u.port, method: o.method, path: o.path, headers: o.headers, agent: false, timeout: o.timeoutMs ?? 120_000 }, (res) => {
      let bytes = 0;
      res.on('data', (c: Buffer) => (bytes += c.length));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], bytes, ms: performance.now() - t0 }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to ${o.method} ${o.path} within ${o.timeoutMs ?? 120_000} ms`)));
    req.on('error', reject);
    req.end(o.body);
  });
}

/**
 * HA failover, measured: two masters on a local etcd and N simulated agents that follow the
 * leader (scripts/sim-agents.ts --follow, through the list of masters). kill -9 of the leader
 * -> the standby serving, and -> every agent re-registered with it; then SIGTERM of the new
 * leader -> the restarted standby serving (the graceful handover: a resignation, no TTL).
 * Goals: failover <= TTL + 2 s, handover < 1 s.
 */

import { startEtcdProcess } from '../harness/etcd.js';
import { Child, SIM_AGENTS_BIN, removeTempDir, startMaster } from './daemon.js';
import type { BenchResult, ResultRow } from './report.js';

export interface FailoverOptions {
  agents: number;
  ttlSeconds: number;
}

/** Does this master serve (a term runs), not redirect? */
async function serves(url: string): Promise<boolean> {
  const r = await fetch(`${url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(1_000) }).catch(() => undefined);
  return r?.status === 200;
}

async function activeAgents(url: string): Promise<number> {
  const r = await fetch(`${url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_AGENTS"}', redirect: 'manual', signal: AbortSignal.timeout(5_000) }).catch(() => undefined);
  if (r?.status !== 200) return 0;
  return ((await r.json()) as { get_agents: { agents: Array<{ active: boolean }> } }).get_agents.agents.filter((a) => a.active).length;
}

/** Polls `check` every 10 ms until true; resolves with the elapsed ms since `t0`, bounded by `timeoutMs`. */
async function until(check: () => Promise<boolean>, t0: number, timeoutMs: number, what: string): Promise<number> {
  for (let i = 0; i < timeoutMs / 10; i++) {
    if (await check()) return performance.now() - t0;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error(`${what}: not within ${timeoutMs} ms`);
}

export async function runFailover(opts: FailoverOptions): Promise<BenchResult> {
  const name = 'failover';
  const rows: ResultRow[] = [];
  const etcd = await startEtcdProcess();
  const flags = [`--etcd=etcd://${etcd.endpoint}/failover`, `--etcd_ttl=${opts.ttlSeconds}secs`];
  const ttlMs = opts.ttlSeconds * 1000;
  const started: Array<Awaited<ReturnType<typeof startMaster>>> = [];
  let sims: Child | undefined;
  try {
    const a = await startMaster(flags);
    started.push(a);
    const b = await startMaster(flags, { standby: true });
    started.push(b);
    sims = new Child('sim-agents', SIM_AGENTS_BIN, [`--master=${a.address},${b.address}`, `--count=${opts.agents}`, '--ip-base=127.4.0.0', '--concurrency=128', '--follow']);
    const reg = await sims.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 120_000, 'registered line');
    if (reg['registered'] !== opts.agents) throw new Error(`only ${String(reg['registered'])} of ${opts.agents} sim agents registered`);

    // kill -9 of the leader.
    const t0 = performance.now();
    a.daemon.signal('SIGKILL');
    const serving = await until(() => serves(b.url), t0, ttlMs + 30_000, 'the standby serving');
    const rejoined = await until(async () => (await activeAgents(b.url)) >= opts.agents, t0, ttlMs + 60_000, `all ${opts.agents} agents re-registered`);
    const goal = ttlMs + 2_000;
    rows.push({ benchmark: name, metric: 'kill -9 of the leader -> the standby serving', value: serving, unit: 'ms', floor: { label: 'TTL', value: ttlMs }, ratio: serving / ttlMs, goal: { text: `<= TTL + 2 s`, pass: serving <= goal } });
    rows.push({ benchmark: name, metric: `kill -9 of the leader -> all ${opts.agents.toLocaleString('en-US')} agents re-registered`, value: rejoined, unit: 'ms', floor: { label: 'TTL', value: ttlMs }, ratio: rejoined / ttlMs, goal: { text: `<= TTL + 2 s`, pass: rejoined <= goal } });

    // A standby again, then SIGTERM of the leader: it resigns.
    const c = await startMaster(flags, { standby: true });
    started.push(c);
    await until(async () => (await fetch(`${c.url}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(1_000) }).catch(() => undefined))?.status === 307, performance.now(), 20_000, 'the new standby knowing the leader');
    const t1 = performance.now();
    b.daemon.signal('SIGTERM');
    const handover = await until(() => serves(c.url), t1, 20_000, 'the standby serving after SIGTERM');
    rows.push({ benchmark: name, metric: 'SIGTERM of the leader -> the standby serving', value: handover, unit: 'ms', goal: { text: '< 1 s', pass: handover < 1_000 }, note: 'the leader resigns: no TTL to wait' });
    return { benchmark: name, rows, context: { agents: opts.agents, ttlSeconds: opts.ttlSeconds } };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message };
  } finally {
    await sims?.stop(10_000);
    for (const m of started) {
      await m.daemon.stop(10_000);
      removeTempDir(m.workDir);
    }
    await etcd.stop();
  }
}

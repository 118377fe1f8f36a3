/**
 * Failover under a 2/1 etcd split, measured in network namespaces (root; scripts/harness/
 * netns.ts): three etcd members with etcd's default raft timings (heartbeat 100 ms, election
 * 1000 ms), three masters with --etcd_ttl (default 3 s), and an observer node from which every
 * request is made. etcd's leadership is moved to the member beside the leading master
 * (`etcdctl move-leader`), then the network is split: that master and that member on one
 * side, the two other members and the two standbys on the other. Measured from the split:
 *
 * - until another master serves (GET_MASTER 200): the figure;
 * - until the two members of the majority agree on a new etcd leader: etcd's own election,
 *   which with the TTL makes the floor (the leader's election key cannot go before its lease
 *   expires on a quorum that has a leader); the goal is floor + 2 s;
 * - until the cut-off master answers 503 No leader elected (it fenced itself, and its view of
 *   the election is older than the TTL);
 * - from the new leader's log: when it was elected and when its term started.
 *
 * Each run is a fresh lab; the rows give the median and every run.
 */

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Daemon, MASTER_BIN } from '../harness/daemon.js';
import { EtcdCluster } from '../harness/etcd-cluster.js';
import { NetLab, netnsUnavailable, type LabNode } from '../harness/netns.js';
import { ETCD_BIN } from '../harness/etcd.js';
import { requireBuilt } from './daemon.js';
import type { BenchResult, ResultRow } from './report.js';
import { quantile } from './stats.js';

/** The median, as one of the samples (nearest rank). */
const median = (xs: readonly number[]): number => quantile(xs, 0.5);

export interface SplitFailoverOptions {
  /** Fresh labs, one measurement each. */
  runs: number;
  /** --etcd_ttl of the masters, whole seconds. */
  ttlSeconds: number;
}

/** What one run measured, in ms from the split (undefined: not seen within the run's bound). */
interface Run {
  failoverMs: number;
  etcdElectionMs: number | undefined;
  fencedMs: number | undefined;
  electedMs: number | undefined;
  termStartedMs: number | undefined;
}

/** etcd's default raft timings: what a production etcd runs with. */
const DEFAULT_RAFT = { heartbeatMs: 100, electionMs: 1000 };
/** How often the observer asks (each ask is a process: `ip netns exec … curl`). */
const POLL_MS = 25;

interface LabMaster {
  daemon: Daemon;
  node: LabNode;
  url: string;
  workDir: string;
}

/** Polls `check` every POLL_MS until true; the ms since `t0`, or undefined after `boundMs`. */
async function until(check: () => Promise<boolean>, t0: number, boundMs: number): Promise<number | undefined> {
  for (let i = 0; i < Math.ceil(boundMs / POLL_MS) + 1; i++) {
    if (await check()) return performance.now() - t0;
    if (performance.now() - t0 > boundMs) return undefined;
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
  return undefined;
}

/** When a daemon logged `msg` (at or after record `after`), as ms since the wall time `t0Wall`. */
function loggedAt(d: Daemon, msg: string, after: number, t0Wall: number): number | undefined {
  const r = d.records.slice(after).find((x) => x.msg === msg);
  const time = typeof r?.['time'] === 'string' ? Date.parse(r['time']) : NaN;
  return Number.isNaN(time) ? undefined : time - t0Wall;
}

async function oneRun(o: SplitFailoverOptions): Promise<Run> {
  const lab = await NetLab.create();
  const masters: LabMaster[] = [];
  let etcd: EtcdCluster | undefined;
  try {
    const [e1, e2, e3] = [await lab.addNode('e1'), await lab.addNode('e2'), await lab.addNode('e3')];
    const nodes = [await lab.addNode('m1'), await lab.addNode('m2'), await lab.addNode('m3')];
    const obs = await lab.addNode('obs');
    etcd = await EtcdCluster.start(lab, [e1, e2, e3], obs, DEFAULT_RAFT);
    for (const n of nodes) {
      const workDir = mkdtempSync(join(tmpdir(), 'drydock-bench-split-'));
      lab.removeOnClose(workDir);
      const args = [`--ip=${n.ip}`, '--port=5050', `--work_dir=${workDir}`, `--etcd=etcd://${etcd.endpoints.join(',')}/bench`, `--etcd_ttl=${o.ttlSeconds}secs`];
      const daemon = new Daemon(MASTER_BIN, args, {}, { prefix: lab.wrap(n), name: `master ${n.name}`, maxRecords: 2_000 });
      lab.track(daemon.pid);
      masters.push({ daemon, node: n, url: `http://${n.ip}:5050`, workDir });
    }
    await Promise.all(masters.map((m) => m.daemon.waitForMsg('listening', {}, 30_000)));
    const serves = async (m: LabMaster): Promise<boolean> => (await lab.api(obs, m.url, { type: 'GET_MASTER' }, 1_000)).status === 200;
    const leaderNow = async (): Promise<LabMaster | undefined> => {
      const s = await Promise.all(masters.map(serves));
      return s.filter(Boolean).length === 1 ? masters[s.indexOf(true)] : undefined;
    };
    let leader: LabMaster | undefined;
    const found = await until(async () => (leader = await leaderNow()) !== undefined, performance.now(), 30_000);
    if (found === undefined || leader === undefined) throw new Error('no master led within 30 s');
    const first = leader;
    // etcd's leader beside the leading master, as in the incident; then let the masters settle.
    await etcd.moveLeader(e1);
    if ((await until(async () => (await leaderNow()) === first, performance.now(), 30_000)) === undefined) throw new Error('the leader did not keep leading after move-leader');
    const others = masters.filter((m) => m !== first);
    const marks = new Map(others.map((m) => [m, m.daemon.records.length]));

    const t0 = performance.now();
    const t0Wall = Date.now();
    await lab.split([first.node, e1], [e2, e3, ...others.map((m) => m.node)]);
    const cluster = etcd;
    const [failoverMs, etcdElectionMs, fencedMs] = await Promise.all([
      until(async () => (await Promise.all(others.map(serves))).some(Boolean), t0, 60_000),
      until(async () => {
        const s = await cluster.status([e2, e3]);
        return s.length === 2 && s[0]?.leader !== '0' && s.every((x) => x.leader === s[0]?.leader) && s.some((x) => x.id === x.leader);
      }, t0, 30_000),
      until(async () => {
        const r = await lab.api(obs, first.url, { type: 'GET_MASTER' }, 1_000);
        return r.status === 503 && r.body === 'No leader elected';
      }, t0, 30_000),
    ]);
    if (failoverMs === undefined) throw new Error('no other master served within 60 s of the split');
    const next = (await Promise.all(others.map(async (m) => ((await serves(m)) ? m : undefined)))).find((m) => m !== undefined);
    return {
      failoverMs,
      etcdElectionMs,
      fencedMs,
      electedMs: next === undefined ? undefined : loggedAt(next.daemon, 'elected', marks.get(next) ?? 0, t0Wall),
      termStartedMs: next === undefined ? undefined : loggedAt(next.daemon, 'term started', marks.get(next) ?? 0, t0Wall),
    };
  } finally {
    await Promise.all(masters.map((m) => m.daemon.stop(5_000)));
    await etcd?.stop();
    await lab.close();
    for (const m of masters) rmSync(m.workDir, { recursive: true, force: true });
  }
}

const fmt = (xs: ReadonlyArray<number | undefined>): string => xs.map((x) => (x === undefined ? '?' : `${Math.round(x)}`)).join(', ');
const known = (xs: ReadonlyArray<number | undefined>): number[] => xs.filter((x): x is number => x !== undefined);

export async function runSplitFailover(o: SplitFailoverOptions): Promise<BenchResult> {
  const name = 'split-failover';
  const why = netnsUnavailable() ?? (existsSync(ETCD_BIN) ? undefined : `${ETCD_BIN} is missing (apt-get install etcd-server etcd-client)`);
  if (why !== undefined) return { benchmark: name, rows: [], error: `${why}: this benchmark runs etcd and the masters in network namespaces, as root` };
  requireBuilt(MASTER_BIN);
  const ttlMs = o.ttlSeconds * 1000;
  const runs: Run[] = [];
  const rows: ResultRow[] = [];
  try {
    for (let i = 0; i < o.runs; i++) {
      runs.push(await oneRun(o));
      process.stderr.write(`bench: split-failover run ${i + 1}: ${JSON.stringify(runs[i])}\n`);
    }
  } catch (e) {
    if (runs.length === 0) return { benchmark: name, rows, error: (e as Error).message };
    rows.push(...summary(name, runs, ttlMs));
    return { benchmark: name, rows, error: `after ${runs.length} run(s): ${(e as Error).message}` };
  }
  rows.push(...summary(name, runs, ttlMs));
  return { benchmark: name, rows, context: { runs: o.runs, ttlSeconds: o.ttlSeconds, raft: DEFAULT_RAFT, perRun: runs } };
}

function summary(name: string, runs: readonly Run[], ttlMs: number): ResultRow[] {
  const failover = runs.map((r) => r.failoverMs);
  const elections = known(runs.map((r) => r.etcdElectionMs));
  const election = elections.length === 0 ? DEFAULT_RAFT.electionMs : median(elections);
  const floor = ttlMs + election;
  const goal = floor + 2_000;
  const fig = median(failover);
  const met = failover.filter((f, i) => f <= ttlMs + (runs[i]?.etcdElectionMs ?? DEFAULT_RAFT.electionMs) + 2_000).length;
  const rows: ResultRow[] = [
    {
      benchmark: name,
      metric: `2/1 etcd split, the leader beside the minority member (etcd's leader) -> another master serving (median of ${runs.length}: ${fmt(failover)} ms)`,
      value: fig,
      unit: 'ms',
      floor: { label: `TTL + etcd's election (${fmt(runs.map((r) => r.etcdElectionMs))} ms)`, value: floor },
      ratio: fig / floor,
      goal: { text: `<= TTL + election + 2 s (${Math.round(goal)} ms)`, pass: met === runs.length },
      note: `met in ${met} of ${runs.length} runs; new leader elected at ${fmt(runs.map((r) => r.electedMs))} ms, term started at ${fmt(runs.map((r) => r.termStartedMs))} ms`,
    },
  ];
  const fenced = known(runs.map((r) => r.fencedMs));
  if (fenced.length > 0) {
    const f = median(fenced);
    rows.push({ benchmark: name, metric: `the same split -> the cut-off master answering 503 No leader elected (${fmt(runs.map((r) => r.fencedMs))} ms)`, value: f, unit: 'ms', floor: { label: 'TTL', value: ttlMs }, ratio: f / ttlMs });
  }
  return rows;
}

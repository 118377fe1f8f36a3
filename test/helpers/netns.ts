/**
 * Partition tests in network namespaces (scripts/harness/netns.ts does the namespaces): a lab
 * closed when the test ends (and by the harness's exit and signal hooks if the test process is
 * interrupted), an etcd cluster in it, masters and agents started inside their nodes with
 * `ip netns exec` and stopped by PID, and HTTP from an observer node with curl (the test
 * process, in the root namespace, reaches no lab address itself). Outside CI, a machine where
 * namespaces cannot be made skips with the reason; under CI=true that is an error.
 */

import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { EtcdCluster, type EtcdClusterOptions } from '../../scripts/harness/etcd-cluster.js';
import { NetLab, netnsUnavailable, type LabAnswer, type LabNode } from '../../scripts/harness/netns.js';
import { AGENT_BIN, CLI_BIN, Daemon, MASTER_BIN, removeDir } from './daemons.js';
import { etcdctlMissing } from './etcd.js';

export type { LabAnswer, LabNode, NetLab };

type Cleanup = Pick<TestContext, 'after'>;

/** etcd's fast raft timings for tests (environment.md): a member without a leader knows it within ~100 ms. */
export const FAST_RAFT: EtcdClusterOptions = { heartbeatMs: 10, electionMs: 100 };

/** Why partition tests cannot run here, or undefined; under CI=true a reason is an error. */
export function partitionSkip(): string | undefined {
  const why = etcdctlMissing() ?? netnsUnavailable();
  if (why === undefined) return undefined;
  if (process.env['CI'] === 'true') throw new Error(`${why}: partition tests must run under CI=true (.ci/run runs as root and installs iproute2, nftables and etcd)`);
  return `${why}: partition tests skipped`;
}

/** What to undo before a lab closes, latest first (node:test runs its after-hooks in the order given). */
const undo = new WeakMap<NetLab, Array<() => unknown>>();

/** Runs `fn` when the test ends, before the lab closes: the lab's daemons stop their own way first (an agent's tasks with it). */
function beforeClose(lab: NetLab, fn: () => unknown): void {
  undo.get(lab)?.push(fn);
}

/**
 * A lab closed when the test ends: first what was started in it, latest first, each its own
 * way; then the lab (every process left in its namespaces, the namespaces).
 */
export async function startLab(t: Cleanup): Promise<NetLab> {
  const lab = await NetLab.create();
  const stack: Array<() => unknown> = [];
  undo.set(lab, stack);
  t.after(async () => {
    for (const fn of stack.reverse()) {
      try {
        await fn();
      } catch (e) {
        process.stderr.write(`partition test cleanup: ${(e as Error).message}\n`);
      }
    }
    await lab.close();
  });
  return lab;
}

/** An etcd cluster, one member on each node given, stopped when the test ends (before the lab closes). */
export async function startLabEtcd(lab: NetLab, members: readonly LabNode[], observer: LabNode, o: EtcdClusterOptions = FAST_RAFT): Promise<EtcdCluster> {
  const cluster = await EtcdCluster.start(lab, members, observer, o);
  beforeClose(lab, () => cluster.stop());
  return cluster;
}

/** A daemon inside a node: port 5050 (masters) or 5051 (agents) on the node's address. */
export interface LabDaemon {
  daemon: Daemon;
  node: LabNode;
  /** `ip:port`. */
  address: string;
  url: string;
  workDir: string;
}

async function startIn(lab: NetLab, node: LabNode, bin: string, args: readonly string[], port: number, stopSignal: NodeJS.Signals): Promise<LabDaemon> {
  const workDir = mkdtempSync(join(tmpdir(), `drydock-${node.name}-`));
  lab.removeOnClose(workDir);
  const daemon = new Daemon(bin, [`--ip=${node.ip}`, `--port=${port}`, `--work_dir=${workDir}`, ...args], {}, { prefix: lab.wrap(node), name: `${bin.split('/').slice(-2).join('/')} in ${node.name}` });
  lab.track(daemon.pid);
  beforeClose(lab, async () => {
    await daemon.stop(5_000, stopSignal);
    removeDir(workDir);
  });
  await daemon.waitForMsg('listening', {}, 20_000);
  return { daemon, node, address: `${node.ip}:${port}`, url: `http://${node.ip}:${port}`, workDir };
}

/** drydock-master inside `node` (`--ip` its address, port 5050), with `flags`. */
export function startLabMaster(lab: NetLab, node: LabNode, flags: readonly string[]): Promise<LabDaemon> {
  return startIn(lab, node, MASTER_BIN, flags, 5050, 'SIGTERM');
}

/** drydock-agent inside `node` (port 5051); stopped with SIGUSR1, so its tasks die with it. */
export function startLabAgent(lab: NetLab, node: LabNode, master: string, flags: readonly string[] = []): Promise<LabDaemon> {
  const args = [`--master=${master}`, `--hostname=${node.name}`, '--resources=cpus:2;mem:1024;disk:1000;ports:[31000-31100]', '--registration_backoff_factor=10ms', ...flags];
  return startIn(lab, node, AGENT_BIN, args, 5051, 'SIGUSR1');
}

/** A node script run with tsx inside `node`, its JSON lines as records; stopped (SIGTERM) when the test ends. */
export function startLabScript(lab: NetLab, node: LabNode, script: string, args: readonly string[]): Daemon {
  const daemon = new Daemon(script, args, {}, { prefix: lab.wrap(node), nodeArgs: ['--import', 'tsx'], name: `${script.split('/').pop() ?? script} in ${node.name}` });
  lab.track(daemon.pid);
  beforeClose(lab, () => daemon.stop(5_000));
  return daemon;
}

export { CLI_BIN };

/**
 * One HTTP request from `from` (curl inside its namespace), bounded by timeoutMs; status 0
 * when no answer came (curl's own failure). Redirects are not followed.
 */
export function labHttp(lab: NetLab, from: LabNode, url: string, o: { method?: string; body?: string; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<LabAnswer> {
  return lab.http(from, url, o);
}

/** POST /api/v1 with a JSON call to a master, from `from`. */
export function labApi(lab: NetLab, from: LabNode, base: string, call: unknown, timeoutMs = 2_000): Promise<LabAnswer> {
  return lab.api(from, base, call, timeoutMs);
}

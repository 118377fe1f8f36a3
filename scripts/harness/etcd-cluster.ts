/**
 * A three-member (or larger) etcd cluster in a network lab (netns.ts): one member per node,
 * on the node's address (client port 2379, peer port 2380), its data in a temp dir, and
 * etcdctl run from an observer node to read the members' status and to move etcd's
 * leadership. Raft timings are the caller's: the tests' fast ones (heartbeat 10 ms, election
 * 100 ms) or etcd's defaults (100 ms, 1000 ms) for the split benchmark.
 */

import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ETCD_BIN } from './etcd.js';
import { parseJson } from '../../shared/json.js';
import type { LabNode, NetLab } from './netns.js';

export const ETCDCTL_BIN = '/usr/bin/etcdctl';

/** One member's status as etcdctl reports it (ids in hex, as `move-leader` takes them). */
export interface MemberStatus {
  node: LabNode;
  endpoint: string;
  id: string;
  /** The member it takes for etcd's leader (its own id when it leads); '0' when it knows none. */
  leader: string;
  raftTerm: number;
}

export interface EtcdClusterOptions {
  heartbeatMs: number;
  electionMs: number;
}

/** A running cluster in a lab. */
export class EtcdCluster {
  readonly members: readonly LabNode[];
  readonly #lab: NetLab;
  readonly #observer: LabNode;
  readonly #children: ChildProcess[];
  readonly #dir: string;
  readonly #logs: string[];

  private constructor(lab: NetLab, members: readonly LabNode[], observer: LabNode, children: ChildProcess[], dir: string, logs: string[]) {
    this.#lab = lab;
    this.members = members;
    this.#observer = observer;
    this.#children = children;
    this.#dir = dir;
    this.#logs = logs;
  }

  /** Starts one member on each node and resolves once every member knows a leader (bounded: 30 s). */
  static async start(lab: NetLab, members: readonly LabNode[], observer: LabNode, o: EtcdClusterOptions): Promise<EtcdCluster> {
    if (!existsSync(ETCD_BIN)) throw new Error(`${ETCD_BIN} is missing: apt-get install etcd-server`);
    if (!existsSync(ETCDCTL_BIN)) throw new Error(`${ETCDCTL_BIN} is missing: apt-get install etcd-client`);
    const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'drydock-etcd-lab-'));
    lab.removeOnClose(dir);
    const initial = members.map((m) => `${m.name}=http://${m.ip}:2380`).join(',');
    const logs: string[] = members.map(() => '');
    const children = members.map((m, i) => {
      const child = lab.spawn(m, ETCD_BIN, [
        '--name', m.name, '--data-dir', join(dir, m.name),
        '--listen-client-urls', `http://${m.ip}:2379`, '--advertise-client-urls', `http://${m.ip}:2379`,
        '--listen-peer-urls', `http://${m.ip}:2380`, '--initial-advertise-peer-urls', `http://${m.ip}:2380`,
        '--initial-cluster', initial, '--initial-cluster-state', 'new', '--initial-cluster-token', lab.prefix,
        '--heartbeat-interval', String(o.heartbeatMs), '--election-timeout', String(o.electionMs),
        '--logger', 'zap', '--log-level', 'warn',
      ]);
      child.stdout?.resume();
      child.stderr?.setEncoding('utf8').on('data', (c: string) => (logs[i] = ((logs[i] ?? '') + c).slice(-16_000)));
      return child;
    });
    const cluster = new EtcdCluster(lab, members, observer, children, dir, logs);
    try {
      const deadline = Date.now() + 30_000;
      for (;;) {
        const s = await cluster.status().catch(() => []);
        if (s.length === members.length && s.every((x) => x.leader !== '0' && x.leader === s[0]?.leader)) break;
        if (Date.now() > deadline || children.some((c) => c.exitCode !== null)) throw new Error(`the etcd cluster did not form: ${logs.map((l) => l.slice(-1000)).join('\n---\n')}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    } catch (e) {
      await cluster.stop();
      throw e;
    }
    return cluster;
  }

  /** `ip:2379` of every member, the masters' --etcd endpoints. */
  get endpoints(): string[] {
    return this.members.map((m) => `${m.ip}:2379`);
  }

  /** etcdctl (API v3) from the observer against the members given (default all); bounded. */
  async etcdctl(args: readonly string[], members: readonly LabNode[] = this.members, timeoutMs = 10_000): Promise<string> {
    const r = await this.#lab.exec(this.#observer, ETCDCTL_BIN, [`--endpoints=${members.map((m) => `http://${m.ip}:2379`).join(',')}`, '--command-timeout=3s', '--dial-timeout=2s', ...args], timeoutMs);
    if (r.code !== 0) throw new Error(`etcdctl ${args.join(' ')}: ${r.stderr.trim() || r.stdout.trim()}`);
    return r.stdout;
  }

  /** Each reachable member's status (those that do not answer are left out). */
  async status(members: readonly LabNode[] = this.members): Promise<MemberStatus[]> {
    const out: MemberStatus[] = [];
    await Promise.all(
      members.map(async (m) => {
        try {
          const text = await this.etcdctl(['endpoint', 'status', '-w', 'json'], [m], 5_000);
          // Member ids are uint64: read exactly (JSON.parse would round them, and move-leader needs them exact).
          const [s] = parseJson(text) as Array<{ Endpoint: string; Status: { header: { member_id: number | bigint }; leader: number | bigint; raftTerm: number } }>;
          if (s === undefined) return;
          out.push({ node: m, endpoint: s.Endpoint, id: BigInt(s.Status.header.member_id).toString(16), leader: BigInt(s.Status.leader).toString(16), raftTerm: s.Status.raftTerm });
        } catch {
          // not answering
        }
      }),
    );
    return this.members.filter((m) => out.some((s) => s.node === m)).map((m) => out.find((s) => s.node === m) as MemberStatus);
  }

  /** The member that leads etcd now, as the members say; undefined when they do not agree on one. */
  async leader(): Promise<LabNode | undefined> {
    const s = await this.status();
    const id = s[0]?.leader;
    if (id === undefined || id === '0' || !s.every((x) => x.leader === id)) return undefined;
    return s.find((x) => x.id === id)?.node;
  }

  /** Makes `to` etcd's leader (etcdctl move-leader, sent to the current leader), and waits until every member says so. */
  async moveLeader(to: LabNode, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = await this.status();
      const target = s.find((x) => x.node === to);
      const current = s.find((x) => x.id === x.leader);
      if (target !== undefined && s.length === this.members.length && s.every((x) => x.leader === target.id)) return;
      if (Date.now() > deadline) throw new Error(`etcd leadership did not move to ${to.name}: ${JSON.stringify(s.map((x) => [x.node.name, x.id, x.leader]))}`);
      if (target !== undefined && current !== undefined && current !== target) await this.etcdctl(['move-leader', target.id], [current.node]).catch(() => undefined);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** The members' last log lines (for failure messages). */
  logs(): string {
    return this.#logs.map((l, i) => `${this.members[i]?.name}: ${l.slice(-2000)}`).join('\n');
  }

  /** Stops every member by its PID and removes the data. */
  async stop(): Promise<void> {
    await Promise.all(
      this.#children.map(async (c) => {
        if (c.exitCode !== null || c.signalCode !== null || c.pid === undefined) return;
        const exited = new Promise((r) => c.once('exit', r));
        c.kill('SIGCONT');
        c.kill('SIGTERM');
        const timer = setTimeout(() => c.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }),
    );
    rmSync(this.#dir, { recursive: true, force: true });
  }
}


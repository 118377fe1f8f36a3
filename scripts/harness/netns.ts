/**
 * A network lab of Linux network namespaces, for partition tests and the split benchmark
 * (root only; `ip` from iproute2, `nft` from nftables). Every address lives only inside
 * namespaces the lab creates: one namespace holds a bridge and nothing else, each node (an
 * etcd member, a master, an agent, an observer) gets a namespace of its own joined to the
 * bridge by a veth pair created inside the bridge's namespace, so nothing is ever added to
 * the root namespace. A split is an nftables `bridge` table in the bridge's namespace that
 * drops frames between two sets of ports; heal deletes it.
 *
 * Names carry a per-run prefix `ddnet-<pid>-<hex>-`, so a leftover is identifiable and
 * `sweepStaleLabs` removes those of runs whose process is gone. Processes are started with
 * `ip netns exec <ns> ...` (which execs the program: the PID is the program's) and stopped
 * by PID. `close()` (and `closeSync()`, from exit hooks) stops every tracked process (and
 * any other left in the lab's namespaces), deletes every namespace and removes the temp dirs
 * it was given; the labs still open when the process exits or gets SIGINT,
 * SIGTERM or SIGHUP are closed by hooks installed here.
 */

import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, rmSync } from 'node:fs';

export const IP_BIN = '/usr/sbin/ip';
export const NFT_BIN = '/usr/sbin/nft';
/** Every lab's namespace names start with this, then `<pid>-<hex>-`. */
export const LAB_PREFIX = 'ddnet-';
const LAB_NAME = /^ddnet-(\d+)-[0-9a-f]{4}-/;

/** One namespace on the lab's bridge. */
export interface LabNode {
  /** The lab's name for it (`etcd1`, `m2`). */
  readonly name: string;
  /** The namespace (`ddnet-1234-ab12-etcd1`). */
  readonly ns: string;
  /** Its one address, on the lab's subnet. */
  readonly ip: string;
  /** Its veth's end in the bridge's namespace (the port splits name). */
  readonly port: string;
}

/** An HTTP answer as curl saw it from inside a namespace (status 0: no answer). */
export interface LabAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** curl, with which requests are made from inside a namespace (no process outside reaches a lab address). */
export const CURL_BIN = '/usr/bin/curl';

/** What a command inside a namespace printed and how it ended. */
export interface ExecResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Why a lab cannot be made here, or undefined when it can (a namespace is created and deleted to find out). */
export function netnsUnavailable(): string | undefined {
  if (process.getuid?.() !== 0) return 'network namespaces need root';
  if (!existsSync(IP_BIN)) return `${IP_BIN} is missing (apt-get install iproute2)`;
  if (!existsSync(NFT_BIN)) return `${NFT_BIN} is missing (apt-get install nftables)`;
  if (!existsSync(CURL_BIN)) return `${CURL_BIN} is missing (apt-get install curl)`;
  const probe = `${LAB_PREFIX}${process.pid}-${randomBytes(2).toString('hex')}-probe`;
  try {
    execFileSync(IP_BIN, ['netns', 'add', probe], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  } catch (e) {
    return `ip netns add failed: ${String((e as { stderr?: unknown }).stderr ?? (e as Error).message).trim()}`;
  }
  try {
    execFileSync(IP_BIN, ['-n', probe, 'link', 'add', 'probe-br', 'type', 'bridge'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    execFileSync(IP_BIN, ['netns', 'exec', probe, NFT_BIN, 'list', 'tables', 'bridge'], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  } catch (e) {
    return `a bridge or nftables inside a namespace failed: ${String((e as { stderr?: unknown }).stderr ?? (e as Error).message).trim()}`;
  } finally {
    deleteNamespaceSync(probe);
  }
  return undefined;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** The PIDs of the processes in a namespace (`ip netns pids`); none when it is gone. */
function namespacePids(ns: string): number[] {
  try {
    const out = execFileSync(IP_BIN, ['netns', 'pids', ns], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
    return out.split(/\s+/).filter((p) => /^\d+$/.test(p)).map(Number).filter((p) => p !== process.pid);
  } catch {
    return [];
  }
}

function deleteNamespaceSync(ns: string): void {
  try {
    execFileSync(IP_BIN, ['netns', 'del', ns], { stdio: 'ignore', timeout: 10_000 });
  } catch {
    // gone already
  }
}

/** The lab namespaces on this machine (`ip netns list`). */
function labNamespaces(): string[] {
  let out: string;
  try {
    out = execFileSync(IP_BIN, ['netns', 'list'], { encoding: 'utf8', timeout: 10_000 });
  } catch {
    return [];
  }
  return out
    .split('\n')
    .map((l) => l.trim().split(/\s/)[0] ?? '')
    .filter((n) => n.startsWith(LAB_PREFIX));
}

/** Deletes the namespaces of labs whose process is gone (a run killed with SIGKILL); returns their names. */
export function sweepStaleLabs(): string[] {
  const stale = labNamespaces().filter((n) => {
    const pid = Number(LAB_NAME.exec(n)?.[1]);
    return Number.isInteger(pid) && pid !== process.pid && !alive(pid);
  });
  for (const n of stale) {
    for (const pid of namespacePids(n)) signal(pid, 'SIGKILL');
    deleteNamespaceSync(n);
  }
  return stale;
}

/** Runs a command and resolves with its exit code and output; bounded by timeoutMs (then code -1). */
function run(cmd: string, args: readonly string[], timeoutMs: number, input?: string): Promise<ExecResult> {
  return new Promise((resolve) => {
    const child = execFile(cmd, args, { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const code = err === null ? 0 : typeof (err as { code?: unknown }).code === 'number' ? ((err as { code: number }).code) : -1;
      resolve({ code, stdout: String(stdout), stderr: String(stderr) || (err !== null && code === -1 ? err.message : '') });
    });
    if (input !== undefined) child.stdin?.end(input);
  });
}

async function must(cmd: string, args: readonly string[], input?: string): Promise<void> {
  const r = await run(cmd, args, 15_000, input);
  if (r.code !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.code}): ${r.stderr.trim()}`);
}

const open = new Set<NetLab>();
let hooksInstalled = false;

/** Closes every open lab when the process ends, however it ends (short of SIGKILL: sweepStaleLabs then). */
function installHooks(): void {
  if (hooksInstalled) return;
  hooksInstalled = true;
  process.on('exit', () => {
    for (const lab of open) lab.closeSync();
  });
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    process.on(sig, () => {
      for (const lab of open) lab.closeSync();
      // The default action, now that the namespaces are gone (other listeners may add theirs).
      if (process.listenerCount(sig) === 1) process.exit(128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const)[sig]);
    });
  }
}

/** A lab: a bridge namespace and the nodes on it. */
export class NetLab {
  /** `ddnet-<pid>-<hex>-`: every namespace of this lab starts with it. */
  readonly prefix: string;
  readonly bridgeNs: string;
  readonly #subnet: string;
  readonly #nodes: LabNode[] = [];
  readonly #namespaces: string[] = [];
  readonly #pids = new Set<number>();
  readonly #dirs = new Set<string>();
  #splits = 0;
  #closed = false;

  private constructor(subnet: string) {
    this.prefix = `${LAB_PREFIX}${process.pid}-${randomBytes(2).toString('hex')}-`;
    this.bridgeNs = `${this.prefix}br`;
    this.#subnet = subnet;
  }

  /** Creates the bridge's namespace; `subnet` is the first three octets of the nodes' /24 (default 10.213.0). */
  static async create(subnet = '10.213.0'): Promise<NetLab> {
    sweepStaleLabs();
    installHooks();
    const lab = new NetLab(subnet);
    open.add(lab);
    try {
      await lab.#addNamespace(lab.bridgeNs);
      await must(IP_BIN, ['-n', lab.bridgeNs, 'link', 'add', 'br0', 'type', 'bridge']);
      await must(IP_BIN, ['-n', lab.bridgeNs, 'link', 'set', 'br0', 'up']);
    } catch (e) {
      await lab.close();
      throw e;
    }
    return lab;
  }

  get nodes(): readonly LabNode[] {
    return this.#nodes;
  }

  async #addNamespace(ns: string): Promise<void> {
    await must(IP_BIN, ['netns', 'add', ns]);
    this.#namespaces.push(ns);
    await must(IP_BIN, ['-n', ns, 'link', 'set', 'lo', 'up']);
  }

  /** A node: its namespace, a veth pair from the bridge's namespace (eth0 on its side), the next address. */
  async addNode(name: string): Promise<LabNode> {
    if (this.#closed) throw new Error('the lab is closed');
    const index = this.#nodes.length + 1;
    if (index > 250) throw new Error('a lab holds at most 250 nodes');
    const node: LabNode = { name, ns: `${this.prefix}${name}`, ip: `${this.#subnet}.${index}`, port: `v${index}` };
    await this.#addNamespace(node.ns);
    // Created inside the bridge's namespace with its peer moved straight into the node's: never in the root namespace.
    await must(IP_BIN, ['-n', this.bridgeNs, 'link', 'add', node.port, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', node.ns]);
    await must(IP_BIN, ['-n', this.bridgeNs, 'link', 'set', node.port, 'master', 'br0']);
    await must(IP_BIN, ['-n', this.bridgeNs, 'link', 'set', node.port, 'up']);
    await must(IP_BIN, ['-n', node.ns, 'addr', 'add', `${node.ip}/24`, 'dev', 'eth0']);
    await must(IP_BIN, ['-n', node.ns, 'link', 'set', 'eth0', 'up']);
    this.#nodes.push(node);
    return node;
  }

  /** The command line that runs `cmd args` inside `node`'s namespace. */
  wrap(node: LabNode): string[] {
    return [IP_BIN, 'netns', 'exec', node.ns];
  }

  /** Runs a command inside `node`'s namespace to its end (bounded by timeoutMs). */
  exec(node: LabNode, cmd: string, args: readonly string[], timeoutMs = 10_000, input?: string): Promise<ExecResult> {
    return run(IP_BIN, ['netns', 'exec', node.ns, cmd, ...args], timeoutMs, input);
  }

  /**
   * One HTTP request from inside `from` (curl), bounded by timeoutMs; status 0 when no answer
   * came. Redirects are not followed.
   */
  async http(from: LabNode, url: string, o: { method?: string; body?: string; headers?: Record<string, string>; timeoutMs?: number } = {}): Promise<LabAnswer> {
    const timeoutMs = o.timeoutMs ?? 2_000;
    const args = ['-s', '-S', '-i', '-m', (timeoutMs / 1000).toFixed(3), '-X', o.method ?? (o.body === undefined ? 'GET' : 'POST'), url];
    for (const [k, v] of Object.entries(o.headers ?? {})) args.push('-H', `${k}: ${v}`);
    if (o.body !== undefined) args.push('--data-binary', '@-');
    const r = await this.exec(from, CURL_BIN, args, timeoutMs + 3_000, o.body ?? '');
    if (r.code !== 0) return { status: 0, headers: {}, body: r.stderr.trim() };
    const split = r.stdout.indexOf('\r\n\r\n');
    const head = split === -1 ? r.stdout : r.stdout.slice(0, split);
    const body = split === -1 ? '' : r.stdout.slice(split + 4);
    const lines = head.split('\r\n');
    const status = Number(/^HTTP\/[\d.]+ (\d{3})/.exec(lines[0] ?? '')?.[1] ?? 0);
    const headers: Record<string, string> = {};
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':');
      if (i > 0) headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
    }
    return { status, headers, body };
  }

  /** POST /api/v1 with a JSON call to the master at `base` (`http://ip:port`), from `from`. */
  api(from: LabNode, base: string, call: unknown, timeoutMs = 2_000): Promise<LabAnswer> {
    return this.http(from, `${base}/api/v1`, { body: JSON.stringify(call), headers: { 'content-type': 'application/json' }, timeoutMs });
  }

  /** Starts a long-running process inside `node`'s namespace; it is tracked (stopped by close()). */
  spawn(node: LabNode, cmd: string, args: readonly string[]): ChildProcess {
    const child = spawn(IP_BIN, ['netns', 'exec', node.ns, cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    if (child.pid !== undefined) this.track(child.pid);
    return child;
  }

  /** Tracks a process started elsewhere in one of the lab's namespaces (a Daemon), so close() stops it by its PID. */
  track(pid: number): void {
    this.#pids.add(pid);
  }

  /** A temp dir (a daemon's work dir, etcd's data) removed when the lab closes, however it closes. */
  removeOnClose(dir: string): void {
    this.#dirs.add(dir);
  }

  /**
   * Cuts every frame between the ports of `a` and those of `b` (both directions), as one
   * nftables table in the bridge's namespace; traffic within each side, and of nodes in
   * neither, flows on. Returns the split's table name for heal(name).
   */
  async split(a: readonly LabNode[], b: readonly LabNode[]): Promise<string> {
    const table = `dd_split_${++this.#splits}`;
    const set = (nodes: readonly LabNode[]): string => `{ ${nodes.map((n) => `"${n.port}"`).join(', ')} }`;
    const rules = `table bridge ${table} {\n  chain cut {\n    type filter hook forward priority 0; policy accept;\n    iifname ${set(a)} oifname ${set(b)} drop\n    iifname ${set(b)} oifname ${set(a)} drop\n  }\n}\n`;
    await must(IP_BIN, ['netns', 'exec', this.bridgeNs, NFT_BIN, '-f', '-'], rules);
    return table;
  }

  /** Removes one split (by the name split() returned), or every split. */
  async heal(table?: string): Promise<void> {
    const r = await run(IP_BIN, ['netns', 'exec', this.bridgeNs, NFT_BIN, '-j', 'list', 'tables', 'bridge'], 10_000);
    const tables = [...r.stdout.matchAll(/"name":\s*"(dd_split_\d+)"/g)].map((m) => m[1] as string);
    for (const t of tables) if (table === undefined || t === table) await must(IP_BIN, ['netns', 'exec', this.bridgeNs, NFT_BIN, 'delete', 'table', 'bridge', t]);
  }

  /**
   * Stops every tracked process (SIGTERM, SIGKILL after graceMs), then every other process
   * still in one of the lab's namespaces (what those started: an agent's tasks and their
   * launcher), and deletes every namespace. Idempotent.
   */
  async close(graceMs = 2_000): Promise<void> {
    if (this.#closed) return;
    const live = [...this.#pids].filter(alive);
    for (const pid of live) signal(pid, 'SIGTERM');
    const deadline = Date.now() + graceMs;
    while (live.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    this.closeSync();
  }

  /**
   * The synchronous close for exit hooks: SIGKILL to every tracked process and to every
   * process in the lab's namespaces (by the PIDs `ip netns pids` names: a namespace does not
   * end its processes when it is deleted), then every namespace deleted.
   */
  closeSync(): void {
    if (this.#closed) return;
    this.#closed = true;
    open.delete(this);
    for (const pid of this.#pids) if (alive(pid)) signal(pid, 'SIGKILL');
    for (const ns of this.#namespaces) for (const pid of namespacePids(ns)) signal(pid, 'SIGKILL');
    // Node namespaces first, the bridge's last: deleting a namespace deletes its veth ends.
    for (const ns of [...this.#namespaces].reverse()) deleteNamespaceSync(ns);
    for (const d of this.#dirs) rmSync(d, { recursive: true, force: true });
  }
}

function signal(pid: number, sig: NodeJS.Signals): void {
  try {
    process.kill(pid, sig);
  } catch {
    // gone
  }
}

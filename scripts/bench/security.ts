/**
 * security: what authentication, authorization and TLS cost (issue 13). The same two workloads
 * run, alternating, against a **plain** master (no security flags) and a **secured** one:
 * `--authenticate_agents --authenticate_frameworks --authenticate_http_readwrite
 * --credentials=FILE` (0600), `--acls=FILE` with 1,000 entries (`permissive: false`) and
 * `--tls_cert_file/--tls_key_file` (a throwaway CA, scripts/harness/certs.ts).
 *
 * 1. Registration storm (storm.ts's driver): N sim agents connect and REGISTER at once, against
 *    a fresh master each time, plain and secured storms alternating. Against the secured master
 *    they connect with wss:// verified with the CA and an `Authorization` header, so every
 *    session pays a TLS handshake, an authentication and a `register_agents` decision: that is
 *    what is measured. The sims run on the master's machine, so the clients' half of each
 *    handshake is on the clock too; the master's own CPU time over the storm is reported
 *    beside it (what a real deployment, whose agents handshake on their own machines, pays).
 *    Two more storms per round say where the time goes: the secured master without TLS
 *    (authentication and ACLs alone), and storm.ts's bare ws echo server plain and on a TLS
 *    port (TLS alone, no master).
 * 2. ACCEPT -> TASK_RUNNING (accept.ts's rig): a framework over https with its credential
 *    launches tasks on a real agent that reaches the master over wss:// with its
 *    `--credential`; `register_frameworks` on SUBSCRIBE and `run_tasks` on every ACCEPT. A
 *    plain and a secured rig are up side by side and single ACCEPTs alternate between them, so
 *    load from elsewhere on the machine falls on both alike.
 *
 * The floor of each figure is the plain run; ratio = secured / plain, goal < 1.3x.
 *
 * The ACLs (`benchAcls`, pure): the 1,000 entries are spread over the actions the workload
 * hits, the entry that allows the workload last in each list. Half of the entries before it
 * name other principals: the authorizer drops those once per (action, principal) and caches the
 * rest. The other half name the workload's own principal with objects that do not match (other
 * racks' hostname patterns, other users and roles): those stay in the cached list and are tried
 * on every decision, so the per-request scan is real, not hidden by the cache.
 */

import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { connect as tcpConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { makeCertificates } from '../harness/certs.js';
import { clientTransport, PLAIN_TRANSPORT, type ClientTransport } from '../../io/transport.js';
import { AcceptRig, WARMUPS } from './accept.js';
import { Child, ECHO_SERVER_BIN, MASTER_BIN, SIM_AGENTS_BIN, makeTempDir, removeTempDir, requireBuilt, startMaster } from './daemon.js';
import { callApiAgents } from './operator.js';
import { procStat } from './procfs.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { summarize } from './stats.js';
import { median, storm, type StormOptions, type StormRun } from './storm.js';

/** Knobs of the security benchmark. */
export interface SecurityOptions {
  /** Sim agents in each storm. Default 2,000. */
  agents: number;
  /** Rounds of storms (plain, secured, secured without TLS, echo plain and TLS), alternating; the median of each is reported. Default 3. */
  repeats: number;
  /** Measured ACCEPTs per master, alternating one by one (after accept.ts's warm-ups). Default 150. */
  accepts: number;
  /** ACL entries in all. Default 1,000. */
  aclEntries: number;
  /** Source addresses of the sims are ipBase + k. */
  ipBase: string;
  /** Run the masters with --cpu-prof into DIR/storm-<side> and DIR/accept-<side>. */
  cpuProfDir?: string;
}

/** The goal of both figures: secured within 1.3 times plain. */
export const SECURITY_GOAL_RATIO = 1.3;

/** The principals of the workload. */
export const BENCH_PRINCIPALS = Object.freeze({
  /** Every sim agent and the real agent (agents usually share one principal, as in Mesos). */
  agent: 'bench-agent',
  /** The framework of the ACCEPT figure. */
  framework: 'bench-framework',
  /** The GET_AGENTS check after each storm (off the clock). */
  operator: 'bench-operator',
});

type Entity = { values: string[] } | { type: 'ANY' | 'NONE' };

/**
 * The actions the workload hits, each with its share of the entries, its object field, the entry
 * that allows the workload, and a decoy object the workload's principal does not match (entry i).
 */
const WORKLOAD_ACTIONS: ReadonlyArray<{ action: string; share: number; field: string; principal: string; allow: Entity; decoy: (i: number) => Entity }> = [
  // One decision per registration: the storm's action gets half.
  { action: 'register_agents', share: 0.5, field: 'agents', principal: BENCH_PRINCIPALS.agent, allow: { values: ['hostname:sim-*', 'hostname:bench-*'] }, decoy: (i) => ({ values: [`hostname:rack${i}-*`] }) },
  // One decision per launched task.
  { action: 'run_tasks', share: 0.3, field: 'users', principal: BENCH_PRINCIPALS.framework, allow: { values: ['root'] }, decoy: (i) => ({ values: [`user${i}`] }) },
  // One per SUBSCRIBE.
  { action: 'register_frameworks', share: 0.15, field: 'roles', principal: BENCH_PRINCIPALS.framework, allow: { values: ['*'] }, decoy: (i) => ({ values: [`role${i}`] }) },
  // The GET_AGENTS check (filtering by view_agents); gets the rest.
  { action: 'view_agents', share: 0.05, field: 'agents', principal: BENCH_PRINCIPALS.operator, allow: { type: 'ANY' }, decoy: (i) => ({ values: [`hostname:rack${i}-*`] }) },
];

/**
 * ACLs with exactly `total` entries (at least one per action) in Mesos' format, `permissive:
 * false`: per action, decoys first (alternating another principal with the workload's object,
 * and the workload's principal with an object it does not ask for), then the entry that allows
 * the workload. Pure.
 */
export function benchAcls(total: number): Record<string, unknown> {
  const n = WORKLOAD_ACTIONS.length;
  if (!Number.isInteger(total) || total < n) throw new Error(`ACL entries: at least ${n} (one per action), got ${total}`);
  const counts = WORKLOAD_ACTIONS.map((a) => Math.max(1, Math.floor(total * a.share)));
  // Rounding leftovers (or the minimum of one each) go to, or come from, the largest share.
  counts[0] = (counts[0] as number) + total - counts.reduce((s, c) => s + c, 0);
  const acls: Record<string, unknown> = { permissive: false };
  WORKLOAD_ACTIONS.forEach((a, k) => {
    const count = counts[k] as number;
    const entries: Array<Record<string, Entity>> = [];
    for (let i = 0; i < count - 1; i++) {
      entries.push(i % 2 === 0
        ? { principals: { values: [`tenant${i}`] }, [a.field]: a.allow }
        : { principals: { values: [a.principal] }, [a.field]: a.decoy(i) });
    }
    entries.push({ principals: { values: [a.principal] }, [a.field]: a.allow });
    acls[a.action] = entries;
  });
  return acls;
}

/**
 * One way of running the master and its clients. `plain`: no security flags. `secured`: every
 * flag of the benchmark. `no-tls`: the secured master without TLS (authentication and ACLs alone).
 */
export type Side = 'plain' | 'secured' | 'no-tls';

interface SideSetup {
  masterFlags: readonly string[];
  /** Flags of the sim-agents processes. */
  simFlags: readonly string[];
  /** Flags of the real agent of the ACCEPT rig. */
  agentFlags: readonly string[];
  /** The framework's and the operator's (GET_AGENTS) way in. */
  framework: ClientTransport;
  operator: ClientTransport;
  /** The master's URL scheme. */
  scheme: 'http' | 'https';
}

/** Every side's setup, and the echo floor's TLS arguments, all made in one temp dir. */
interface Setup {
  sides: Record<Side, SideSetup>;
  /** The TLS echo floor: its certificate and key arguments, and the sims' CA flag (TLS without credentials). */
  echoArgs: readonly string[];
  tlsOnlySimFlags: readonly string[];
  /** The CA's PEM, for the handshake figure's own TLS clients. */
  caPem: string;
}

/** A file only its owner may read (io/secrets.ts refuses anything else for a secret). */
function writeSecret(path: string, text: string): string {
  writeFileSync(path, text, { mode: 0o600 });
  chmodSync(path, 0o600); // a file that already existed keeps its mode through writeFileSync
  return path;
}

/** Certificates, credentials and ACLs for the secured masters and their clients. */
function makeSetup(dir: string, aclEntries: number): Setup {
  const certs = makeCertificates(join(dir, 'tls'));
  const secret = (p: string): string => `${p}-secret-${Math.random().toString(36).slice(2)}`;
  const secrets = { agent: secret('agent'), framework: secret('framework'), operator: secret('operator') };
  const credentials = writeSecret(join(dir, 'credentials.json'), JSON.stringify({
    credentials: [
      { principal: BENCH_PRINCIPALS.agent, secret: secrets.agent },
      { principal: BENCH_PRINCIPALS.framework, secret: secrets.framework },
      { principal: BENCH_PRINCIPALS.operator, secret: secrets.operator },
    ],
  }));
  const agentCredential = writeSecret(join(dir, 'agent-credential.json'), JSON.stringify({ principal: BENCH_PRINCIPALS.agent, secret: secrets.agent }));
  const acls = join(dir, 'acls.json');
  writeFileSync(acls, JSON.stringify(benchAcls(aclEntries)));
  const tls = { ca: readFileSync(certs.caFile, 'utf8'), cert: undefined, key: undefined };
  const framework = { kind: 'basic' as const, principal: BENCH_PRINCIPALS.framework, secret: secrets.framework };
  const operator = { kind: 'basic' as const, principal: BENCH_PRINCIPALS.operator, secret: secrets.operator };
  const security = ['--authenticate_agents', '--authenticate_frameworks', '--authenticate_http_readwrite', `--credentials=${credentials}`, `--acls=${acls}`];
  return {
    sides: {
      plain: { masterFlags: [], simFlags: [], agentFlags: [], framework: PLAIN_TRANSPORT, operator: PLAIN_TRANSPORT, scheme: 'http' },
      secured: {
        masterFlags: [...security, `--tls_cert_file=${certs.certFile}`, `--tls_key_file=${certs.keyFile}`],
        simFlags: [`--tls-ca-file=${certs.caFile}`, `--credential=${agentCredential}`],
        agentFlags: [`--tls_ca_file=${certs.caFile}`, `--credential=${agentCredential}`],
        framework: clientTransport({ credential: framework, tls }),
        operator: clientTransport({ credential: operator, tls }),
        scheme: 'https',
      },
      'no-tls': {
        masterFlags: security,
        simFlags: [`--credential=${agentCredential}`],
        agentFlags: [`--credential=${agentCredential}`],
        framework: clientTransport({ credential: framework }),
        operator: clientTransport({ credential: operator }),
        scheme: 'http',
      },
    },
    echoArgs: [certs.certFile, certs.keyFile],
    tlsOnlySimFlags: [`--tls-ca-file=${certs.caFile}`],
    caPem: tls.ca,
  };
}

const profArgs = (opts: SecurityOptions, what: string): readonly string[] | undefined =>
  opts.cpuProfDir === undefined ? undefined : ['--cpu-prof', `--cpu-prof-dir=${join(opts.cpuProfDir, what)}`];

/** CPU seconds (user + system) a process has used so far; NaN once it is gone. */
const cpuSeconds = (pid: number): number => procStat(pid)?.cpuSeconds ?? Number.NaN;

/** A storm, the server's CPU seconds over it, and (masters) how many sims GET_AGENTS then lists. */
type ServerStorm = StormRun & { serverCpuSeconds: number; listed?: number; listError?: string };

function stormOptions(opts: SecurityOptions, simFlags: readonly string[]): StormOptions {
  return { counts: [opts.agents], concurrency: 256, ipBase: opts.ipBase, repeats: 1, simFlags };
}

/** One storm against a fresh master of `side`. */
async function masterStorm(side: Side, setup: SideSetup, opts: SecurityOptions): Promise<ServerStorm> {
  const nodeArgs = profArgs(opts, `storm-${side}`);
  const master = await startMaster(setup.masterFlags, nodeArgs === undefined ? {} : { nodeArgs });
  let listed: number | undefined;
  let listError: string | undefined;
  let cpuAfter = Number.NaN;
  try {
    // The master idles while the sims start and warm up, so its CPU from here to the last REGISTERED is the storm's.
    const cpuBefore = cpuSeconds(master.daemon.pid);
    const run = await storm(master.address, master.daemon.pid, opts.agents, stormOptions(opts, setup.simFlags), async () => {
      cpuAfter = cpuSeconds(master.daemon.pid);
      try {
        listed = (await callApiAgents(`${setup.scheme}://${master.address}`, setup.operator)).filter((a) => a.hostname.startsWith('sim-')).length;
      } catch (e) {
        listError = (e as Error).message;
      }
    });
    return { ...run, serverCpuSeconds: cpuAfter - cpuBefore, ...(listed === undefined ? {} : { listed }), ...(listError === undefined ? {} : { listError }) };
  } finally {
    const e = await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
    if (e.signal === 'SIGKILL') process.stderr.write(`security: ${side} master did not exit within 10 s of SIGTERM\n`);
  }
}

/** One storm against storm.ts's bare ws echo server, plain or on a TLS port (`tlsArgs`): what TLS alone costs, with no master. */
async function echoStorm(tlsArgs: readonly string[] | undefined, simFlags: readonly string[], opts: SecurityOptions): Promise<ServerStorm> {
  const echo = new Child(`echo-server${tlsArgs === undefined ? '' : ' (TLS)'}`, ECHO_SERVER_BIN, tlsArgs ?? []);
  try {
    const rec = await echo.waitForMsg('listening', {}, 10_000);
    const cpuBefore = cpuSeconds(echo.pid);
    let cpuAfter = Number.NaN;
    const run = await storm(`127.0.0.1:${Number(rec['port'])}`, echo.pid, opts.agents, stormOptions(opts, simFlags), async () => {
      cpuAfter = cpuSeconds(echo.pid);
    });
    if (run.failed > 0) throw new Error(`echo storm of ${opts.agents}${tlsArgs === undefined ? '' : ' over TLS'}: ${run.failed} clients failed (${run.errors.join('; ')})`);
    return { ...run, serverCpuSeconds: cpuAfter - cpuBefore };
  } finally {
    await echo.stop(5_000);
  }
}

/** Round r's order of a pair: each goes first every other round, so neither always runs right after the other. */
export function roundOrder<T>(round: number, pair: readonly [T, T]): [T, T] {
  return round % 2 === 0 ? [pair[0], pair[1]] : [pair[1], pair[0]];
}

/** Pause between storms so the previous one's closing sockets are not on the clock (as storm.ts). */
const SETTLE_MS = 2_000;
const pause = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** A row comparing secured with a floor (default: the plain run): ratio = secured / floor, goal < 1.3x when `goal`. */
export function comparisonRow(metric: string, unit: string, plain: number, secured: number, goal: boolean, complete: boolean, note: string, floorLabel = 'plain'): ResultRow {
  const cmp = against(floorLabel, plain, secured);
  return {
    benchmark: 'security',
    metric,
    value: secured,
    unit,
    ...cmp,
    ...(goal ? { goal: { text: `< ${SECURITY_GOAL_RATIO}x`, pass: complete && cmp.ratio !== undefined && cmp.ratio < SECURITY_GOAL_RATIO } } : {}),
    note,
  };
}

/** The middle value (the upper one for an even count); NaN for none. */
function middle(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

type StormKind = Side | 'echo' | 'echo-tls';

async function stormRows(setup: Setup, opts: SecurityOptions, context: Record<string, unknown>): Promise<ResultRow[]> {
  const runs: Record<StormKind, ServerStorm[]> = { plain: [], secured: [], 'no-tls': [], echo: [], 'echo-tls': [] };
  context['storms'] = runs;
  for (let i = 0; i < opts.repeats; i++) {
    // The figure's pair alternates; the breakdown storms follow it.
    const order: StormKind[] = [...roundOrder<StormKind>(i, ['plain', 'secured']), 'no-tls', ...roundOrder<StormKind>(i, ['echo', 'echo-tls'])];
    for (const kind of order) {
      if (kind === 'echo') runs.echo.push(await echoStorm(undefined, [], opts));
      else if (kind === 'echo-tls') runs['echo-tls'].push(await echoStorm(setup.echoArgs, setup.tlsOnlySimFlags, opts));
      else runs[kind].push(await masterStorm(kind, setup.sides[kind], opts));
      await pause(SETTLE_MS);
    }
  }
  const masters = [...runs.plain, ...runs.secured, ...runs['no-tls']];
  const complete = masters.every((r) => r.failed === 0);
  const failures = masters.filter((r) => r.failed > 0);
  const s = (r: StormRun): number => r.elapsedMs / 1000;
  const spread = (list: readonly StormRun[]): string => list.map((r) => s(r).toFixed(2)).join('/');
  const rss = (list: readonly StormRun[]): string => (Math.max(...list.map((r) => r.serverRss)) / 2 ** 20).toFixed(0);
  const m = { plain: median(runs.plain), secured: median(runs.secured), noTls: median(runs['no-tls']), echo: median(runs.echo), echoTls: median(runs['echo-tls']) };
  const cpu = (kind: StormKind): number => middle(runs[kind].map((r) => r.serverCpuSeconds));
  return [
    comparisonRow(`${opts.agents} agents registered, secured (median)`, 's', s(m.plain), s(m.secured), true, complete, [
      complete ? `all ${opts.agents} registered` : `FAILED to register: ${failures.map((r) => r.failed).join('/')} (${failures[0]?.errors.join('; ') ?? ''})`,
      masters.every((r) => r.listed === opts.agents) ? 'GET_AGENTS lists all' : `GET_AGENTS: ${masters.map((r) => r.listed ?? r.listError ?? '?').join(' / ')}`,
      `secured ${spread(runs.secured)} s, plain ${spread(runs.plain)} s`,
    ].join('; ')),
    comparisonRow(`master CPU over the ${opts.agents}-agent storm, secured (median)`, 's', cpu('plain'), cpu('secured'), false, complete,
      `the master's own share (the sims' half of each TLS handshake runs beside it on the same cores); RSS after ${rss(runs.secured)} MB secured, ${rss(runs.plain)} MB plain`),
    comparisonRow(`${opts.agents} agents registered, secured without TLS (median)`, 's', s(m.plain), s(m.noTls), false, complete,
      `authentication + ${opts.aclEntries} ACL entries alone; master CPU ${cpu('no-tls').toFixed(2)} s vs ${cpu('plain').toFixed(2)} s plain; runs ${spread(runs['no-tls'])} s`),
    comparisonRow(`TLS alone: ${opts.agents} sessions to a bare ws echo over TLS (median)`, 's', s(m.echo), s(m.echoTls), false, true, [
      'no master: what one TLS handshake per session costs a storm on this machine',
      `secured master / TLS echo ${(s(m.secured) / s(m.echoTls)).toFixed(2)}x`,
      `echo server CPU ${cpu('echo-tls').toFixed(2)} s TLS, ${cpu('echo').toFixed(2)} s plain`,
      `TLS ${spread(runs['echo-tls'])} s, plain ${spread(runs.echo)} s`,
    ].join('; '), 'plain ws echo'),
  ];
}

/** One round of the handshake figure: `n` connections, at most HANDSHAKE_BATCH at once. */
const HANDSHAKE_BATCH = 200;

/**
 * One connection to the echo server: connect (TLS when `ca` is given, resuming `session` when
 * given), one HTTP request, read the answer to its end. Resolves with the TLS session ticket
 * the server sent (for the resumed round) and whether this one was resumed.
 */
function oneConnection(port: number, ca: string | undefined, session: Buffer | undefined): Promise<{ session: Buffer | undefined; reused: boolean }> {
  return new Promise((resolve, reject) => {
    let ticket: Buffer | undefined;
    let reused = false;
    const request = 'GET /handshake HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n';
    // Whether the session was resumed is known once the handshake is done (not after close).
    const connected = (): void => {
      if (ca !== undefined) reused = (socket as TLSSocket).isSessionReused();
      socket.write(request);
    };
    const socket: Socket | TLSSocket =
      ca === undefined ? tcpConnect({ host: '127.0.0.1', port }, connected) : tlsConnect({ host: '127.0.0.1', port, ca, ...(session === undefined ? {} : { session }) }, connected);
    socket.setTimeout(10_000, () => socket.destroy(new Error('no answer within 10 s')));
    if (ca !== undefined) (socket as TLSSocket).on('session', (t: Buffer) => (ticket = t));
    socket.on('data', () => {});
    socket.on('error', reject);
    socket.on('close', () => resolve({ session: ticket, reused }));
  });
}

/** `n` connections in batches; the echo server's CPU over them (s), their tickets, how many were resumed. */
async function connectionRound(pid: number, port: number, ca: string | undefined, sessions: ReadonlyArray<Buffer | undefined>, n: number): Promise<{ cpu: number; sessions: Array<Buffer | undefined>; reused: number }> {
  const before = cpuSeconds(pid);
  const out: Array<{ session: Buffer | undefined; reused: boolean }> = [];
  for (let i = 0; i < n; i += HANDSHAKE_BATCH) {
    const batch = Array.from({ length: Math.min(HANDSHAKE_BATCH, n - i) }, (_, k) => oneConnection(port, ca, sessions[i + k]));
    out.push(...(await Promise.all(batch)));
  }
  return { cpu: cpuSeconds(pid) - before, sessions: out.map((o) => o.session), reused: out.filter((o) => o.reused).length };
}

/**
 * What one TLS handshake costs a server, full and resumed from a session ticket, against a plain
 * TCP connection: `opts.agents` connections each, one HTTP request apiece, to the bare echo
 * servers (no master), the server's CPU read from /proc. Says whether resumption could bring
 * the TLS storm within the goal.
 */
async function handshakeRows(setup: Setup, opts: SecurityOptions, context: Record<string, unknown>): Promise<ResultRow[]> {
  const n = opts.agents;
  const plain = new Child('echo-server (handshakes, plain)', ECHO_SERVER_BIN, []);
  const tls = new Child('echo-server (handshakes, TLS)', ECHO_SERVER_BIN, setup.echoArgs);
  try {
    const plainPort = Number((await plain.waitForMsg('listening', {}, 10_000))['port']);
    const tlsPort = Number((await tls.waitForMsg('listening', {}, 10_000))['port']);
    const tcp = await connectionRound(plain.pid, plainPort, undefined, [], n);
    const full = await connectionRound(tls.pid, tlsPort, setup.caPem, [], n);
    const resumed = await connectionRound(tls.pid, tlsPort, setup.caPem, full.sessions, n);
    const us = (cpu: number): number => (cpu / n) * 1e6;
    context['handshakes'] = { n, plainCpu: tcp.cpu, fullCpu: full.cpu, resumedCpu: resumed.cpu, tickets: full.sessions.filter((t) => t !== undefined).length, reused: resumed.reused };
    const complete = resumed.reused === n;
    return [
      comparisonRow(`TLS: echo server CPU per connection, full TLS 1.3 handshake (${n} connections)`, 'µs', us(tcp.cpu), us(full.cpu), false, true, 'one HTTP request each; the certificate is ECDSA P-256', 'plain TCP'),
      comparisonRow(`TLS: echo server CPU per connection, resumed from a session ticket (${n} connections)`, 'µs', us(tcp.cpu), us(resumed.cpu), false, complete, [
        `${resumed.reused}/${n} resumed`,
        `resumed / full ${(resumed.cpu / full.cpu).toFixed(2)}x: TLS 1.3 resumption keeps its ECDHE exchange, so a reconnection storm would still pay most of the handshake`,
      ].join('; '), 'plain TCP'),
    ];
  } finally {
    await plain.stop(5_000);
    await tls.stop(5_000);
  }
}

async function acceptRows(setup: Setup, opts: SecurityOptions, context: Record<string, unknown>): Promise<ResultRow[]> {
  const pair = ['plain', 'secured'] as const;
  const rigs: Partial<Record<Side, AcceptRig>> = {};
  const samples: Record<(typeof pair)[number], number[]> = { plain: [], secured: [] };
  const notes: string[] = [];
  try {
    for (const side of pair) {
      const nodeArgs = profArgs(opts, `accept-${side}`);
      const s = setup.sides[side];
      rigs[side] = await AcceptRig.start({ masterFlags: s.masterFlags, agentFlags: s.agentFlags, transport: s.framework, ...(nodeArgs === undefined ? {} : { masterNodeArgs: nodeArgs }) });
    }
    for (let i = 0; i < WARMUPS + opts.accepts; i++) {
      for (const side of roundOrder(i, pair)) {
        const ms = await (rigs[side] as AcceptRig).acceptOnce();
        if (i >= WARMUPS) samples[side].push(ms);
      }
    }
  } finally {
    for (const side of pair) notes.push(...((await rigs[side]?.stop()) ?? []).map((n) => `${side}: ${n}`));
  }
  const p = summarize(samples.plain);
  const s = summarize(samples.secured);
  context['accept'] = { plain: p, secured: s };
  const complete = p.n === opts.accepts && s.n === opts.accepts;
  return [
    comparisonRow('ACCEPT -> TASK_RUNNING p50, secured', 'ms', p.p50, s.p50, true, complete, `n=${s.n} each, alternating; framework over https, agent over wss, both authenticated`),
    comparisonRow('ACCEPT -> TASK_RUNNING p99, secured', 'ms', p.p99, s.p99, false, complete, notes.length > 0 ? notes.join('; ') : `mean ${s.mean.toFixed(1)} ms secured, ${p.mean.toFixed(1)} ms plain`),
  ];
}

export async function runSecurity(opts: SecurityOptions): Promise<BenchResult> {
  requireBuilt(SIM_AGENTS_BIN);
  requireBuilt(MASTER_BIN);
  requireBuilt(ECHO_SERVER_BIN);
  const dir = makeTempDir('drydock-bench-security-');
  const rows: ResultRow[] = [];
  const context: Record<string, unknown> = { agents: opts.agents, repeats: opts.repeats, accepts: opts.accepts, aclEntries: opts.aclEntries };
  try {
    const setup = makeSetup(dir, opts.aclEntries);
    rows.push(...(await stormRows(setup, opts, context)));
    rows.push(...(await handshakeRows(setup, opts, context)));
    rows.push(...(await acceptRows(setup, opts, context)));
    return { benchmark: 'security', rows, context };
  } catch (e) {
    return { benchmark: 'security', rows, context, error: (e as Error).message };
  } finally {
    removeTempDir(dir);
  }
}

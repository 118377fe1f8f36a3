/**
 * `npm start`: a local cluster on loopback. One master on 127.0.0.1:5050 with its registry in
 * ./.drydock/master, and three agents that look like three machines (hostnames agent-1..3,
 * addresses 127.0.0.2..4, port 5051 each). Ctrl-C stops all of it: the agents kill their tasks
 * (SIGTERM, grace, SIGKILL) and exit, then the master closes its registry. Nothing is left
 * behind.
 *
 * With --ha: a local etcd (Debian's etcd-server) on 127.0.0.1:23790, three masters on
 * 127.0.0.1:5050/5070/5080 (not 5060: fetch and browsers refuse that SIP port) electing a
 * leader through it with the registry in it, and agents that follow the leader through etcd.
 *
 * With --secure: TLS from a throwaway CA, credentials and ACLs (scripts/cluster-secure.ts), every
 * daemon told to require them; the banner prints how to call the cluster. The material lives in
 * <work_dir>/secure and is removed when the cluster stops. The work dir defaults to
 * .drydock-secure: agent ids registered under a principal stay bound to it, so a plain cluster
 * must not reuse a secure one's registry (its anonymous agents would be refused).
 *
 * The master gets a maintenance hooks file (<work_dir>/hooks.json) with one harmless hook, `patch`
 * (`/bin/echo patching <hostname>`), so the plan example of docs/maintenance.md (`on_down: { hook: patch }`)
 * runs as written; run as `nobody` when this script is root (the master must be told a hook user).
 *
 * The daemons run in process groups of their own (io/process-run.ts, the runner of processes
 * Node supervises itself, through execa), so the terminal's Ctrl-C reaches only this script,
 * which then stops them in order (agents first, so their tasks die with them): each its own stop
 * signal, and SIGKILL to its whole group if it has not stopped within its grace.
 *
 * Nothing outlives it, however it ends:
 * - SIGINT, SIGTERM and SIGHUP stop the cluster as above. `npm start` execs this script (see
 *   package.json: without `exec`, npm's `sh -c` swallowed a SIGINT sent to npm and died of a
 *   SIGTERM, leaving the cluster running), so npm's forwarding of SIGINT and SIGTERM reaches it;
 *   and when npm itself dies (SIGKILL), this script sees it is reparented and stops too.
 * - Each daemon runs through `drydock-launch --pdeathsig` (agent/launcher.c): if this process
 *   dies, even of SIGKILL, the kernel sends each daemon its stop signal (agents SIGUSR1, so
 *   their tasks die, the others SIGTERM). A pipe per daemon or a supervisor process would do the
 *   same with more parts; PR_SET_PDEATHSIG needs no change to the daemons, and covers etcd too.
 * - The --secure material is removed at exit, and by a janitor (cluster-secure.ts) after a SIGKILL.
 *
 * One cluster per work dir and per master address (scripts/cluster-lock.ts): a second start
 * refuses before it writes or prints anything else, naming the running one's pid, which is also
 * in <work_dir>/cluster.pid.
 */

import { accessSync, chmodSync, constants as fsConstants, createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync, type WriteStream } from 'node:fs';
import { constants as osConstants } from 'node:os';
import { delimiter, join, resolve, dirname } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { clientTransport, PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';
import { sendFollowing } from '../io/client-auth.js';
import { awaitJanitor, makeSecureCluster, removeAtDeath, type Janitor, type SecureCluster } from './cluster-secure.js';
import { lockPath, refusal, takeClusterLock, type LockSubject } from './cluster-lock.js';
import { lookupUser } from '../io/passwd.js';
import { runProcess, type ProcessRun, type StopPolicy } from '../io/process-run.js';
import { systemClock } from '../shared/clock.js';
import { formatText, useColor } from '../shared/log.js';

/**
 * How the banner names the CLI: `drydock` once it is on the PATH (`npm link`,
 * scripts/install-cli.sh), else the path that always works from the checkout.
 */
const CLI = onPath('drydock') ? 'drydock' : 'node dist/cli/main.js';

function onPath(name: string): boolean {
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => {
    if (dir === '') return false;
    try {
      accessSync(join(dir, name), fsConstants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

const here = dirname(fileURLToPath(import.meta.url));
const dist = resolve(here, '..');

const { values: opts } = parseArgs({
  options: {
    agents: { type: 'string', default: '3' },
    work_dir: { type: 'string' },
    port: { type: 'string', default: '5050' },
    agent_port: { type: 'string', default: '5051' },
    quiet: { type: 'boolean', default: false },
    ha: { type: 'boolean', default: false },
    service: { type: 'string' },
    scheduler_port: { type: 'string', default: '8088' },
    secure: { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
  strict: true,
});

if (opts.help) {
  process.stdout.write(`Usage: npm start [-- --agents=3 --work_dir=.drydock --port=5050 --agent_port=5051 --quiet --ha --service=FILE --scheduler_port=8088 --secure]

Starts a local Drydock cluster on loopback: a master on 127.0.0.1:<port> and N agents
(agent-1..N on 127.0.0.2.., port <agent_port>). Logs go to <work_dir>/<name>/daemon.log and, unless
--quiet, to this terminal. Ctrl-C stops everything, as does SIGINT or SIGTERM to this process
(its pid is in <work_dir>/cluster.pid) or to npm's. One cluster per work dir and master port: a
second start refuses and names the running one.

--ha: a local etcd on 127.0.0.1:23790 (Debian's etcd-server), three masters on <port>, <port>+20 and
<port>+30 (5050, 5070, 5080: fetch and browsers refuse 5060) electing a leader through it, and agents
that follow the leader.

--service=FILE: also a drydock-scheduler on 127.0.0.1:<scheduler_port> running the service spec FILE
(for example examples/hello.yml); SIGHUP to the scheduler re-reads the file.

--secure: TLS (HTTPS and WSS) from a throwaway CA, generated credentials and ACLs: the master
requires credentials from operators, agents and frameworks, and so does each agent's own API;
principals ops (everything), viewer (read-only), agent-N (registers agent-N only) and scheduler. With --service, the scheduler's API
serves HTTPS too and requires ops' credentials (it has no ACLs). The banner prints how to call it.
All of it is under <work_dir>/secure (default work dir .drydock-secure) and removed on exit.
`);
  process.exit(0);
}

const agentCount = Number(opts.agents);
if (!Number.isInteger(agentCount) || agentCount < 0 || agentCount > 200) {
  process.stderr.write(`cluster: --agents must be an integer in [0, 200], got '${opts.agents}'\n`);
  process.exit(1);
}
const masterPort = Number(opts.port);
const agentPort = Number(opts.agent_port);
for (const [flag, value] of [['--port', masterPort], ['--agent_port', agentPort]] as const) {
  if (!Number.isInteger(value) || value < 1 || value > 65535) {
    process.stderr.write(`cluster: ${flag} must be a port number, got '${flag === '--port' ? opts.port : opts.agent_port}'\n`);
    process.exit(1);
  }
}
// A secure cluster keeps its own registry: agent ids bound to principals there would refuse the
// anonymous agents of a plain cluster started on the same work dir.
const workDir = resolve(opts.work_dir ?? (opts.secure ? '.drydock-secure' : '.drydock'));
const masterAddress = `127.0.0.1:${masterPort}`;
const schedulerPort = Number(opts.scheduler_port);
if (!Number.isInteger(schedulerPort) || schedulerPort < 1 || schedulerPort > 65535) {
  process.stderr.write(`cluster: --scheduler_port must be a port number, got '${opts.scheduler_port}'\n`);
  process.exit(1);
}
const servicePath = opts.service === undefined ? undefined : resolve(opts.service);
if (servicePath !== undefined && !existsSync(servicePath)) {
  process.stderr.write(`cluster: --service: no such file ${servicePath}\n`);
  process.exit(1);
}
const ETCD_BIN = '/usr/bin/etcd';
const etcdEndpoint = '127.0.0.1:23790';
const etcdUrl = `etcd://${etcdEndpoint}/drydock`;
// Not 5060: fetch (the CLI's, a browser's) refuses it as a SIP port, so the standbys take +20 and +30.
const masterPorts = opts.ha ? [masterPort, masterPort + 20, masterPort + 30] : [masterPort];
if (opts.ha && !existsSync(ETCD_BIN)) {
  process.stderr.write(`cluster: --ha needs etcd: ${ETCD_BIN} is missing. Install it with: sudo apt-get install etcd-server (no service is needed; this script runs its own)\n`);
  process.exit(1);
}

// The lock comes before anything is written or printed: a second start on the same work dir (or
// master address) must leave the running cluster as it is, its files and logs included.
const LAUNCHER = join(dist, 'agent', 'drydock-launch');
if (!existsSync(LAUNCHER)) {
  process.stderr.write(`cluster: ${LAUNCHER} is missing; build first: npm run build\n`);
  process.exit(1);
}
const lockSubjects: LockSubject[] = [
  { kind: 'dir', path: lockPath(workDir) },
  ...masterPorts.map((p): LockSubject => ({ kind: 'address', address: `127.0.0.1:${p}` })),
  ...(opts.ha ? [{ kind: 'address', address: etcdEndpoint } as const] : []),
];
const locked = await takeClusterLock(lockSubjects, { pid: process.pid, workDir });
if (!locked.ok) {
  process.stderr.write(`${refusal(locked.subject, locked.holder, workDir)}\n`);
  process.exit(1);
}
const lock = locked.lock;
mkdirSync(workDir, { recursive: true });
lock.writePidFile();

const agentNames = Array.from({ length: agentCount }, (_, k) => `agent-${k + 1}`);
const agentIps = agentNames.map((_, k) => `127.0.0.${k + 2}`);
let secure: SecureCluster | undefined;
let janitor: Janitor | undefined;
// Every way out of this process: the secrets go (a SIGKILL is the janitor's), and so does the pid file.
process.on('exit', () => {
  // Also what a failed makeSecureCluster left half made.
  if (opts.secure) rmSync(join(workDir, 'secure'), { recursive: true, force: true });
  janitor?.disarm();
  lock.release();
});
if (opts.secure) {
  // A previous cluster killed here may still have its janitor at work on <work_dir>/secure.
  await awaitJanitor(workDir);
  janitor = removeAtDeath(workDir, join(workDir, 'secure'));
  try {
    secure = makeSecureCluster(workDir, agentNames, agentIps);
  } catch (e) {
    process.stderr.write(`cluster: --secure: cannot make the certificates and credentials: ${(e as Error).message}\n`);
    process.exit(1);
  }
}
const scheme = secure === undefined ? 'http' : 'https';
/** How this script asks the master (waiting for the agents): as ops, over TLS, when secure. */
const ops: ClientTransport = secure === undefined
  ? PLAIN_TRANSPORT
  : clientTransport({ credential: { kind: 'basic', principal: secure.ops.principal, secret: secure.ops.secret }, tls: { ca: readPem(secure.certs.caFile), cert: undefined, key: undefined } });

function readPem(path: string): string {
  return readFileSync(path, 'utf8');
}

/** The local cluster's maintenance hooks: one that harms nothing, for the plan example of docs/maintenance.md. */
const LOCAL_HOOKS = { hooks: { patch: { command: ['/bin/echo', 'patching', '{hostname}'], timeout: '5mins' } } } as const;

/**
 * Writes <work_dir>/hooks.json (0644: the master refuses a hooks file its group or others may
 * write) and gives the master's flags for it. A root master must be told the hook user: nobody
 * where the machine has one (echo needs nothing more), else root, explicitly.
 */
function masterHookFlags(): string[] {
  mkdirSync(workDir, { recursive: true });
  const file = join(workDir, 'hooks.json');
  writeFileSync(file, `${JSON.stringify(LOCAL_HOOKS, null, 2)}\n`, { mode: 0o644 });
  chmodSync(file, 0o644);
  if (process.getuid?.() !== 0) return [`--maintenance_hooks=${file}`];
  return [`--maintenance_hooks=${file}`, `--hook_user=${lookupUser('nobody') === undefined ? 'root' : 'nobody'}`];
}

/** The master's security flags with --secure. */
function masterSecurityFlags(): string[] {
  if (secure === undefined) return [];
  return [
    '--authenticate_http_readwrite', '--authenticate_http_readonly', '--authenticate_agents', '--authenticate_frameworks',
    `--credentials=${secure.credentialsFile}`, `--acls=${secure.aclsFile}`,
    `--tls_cert_file=${secure.certs.certFile}`, `--tls_key_file=${secure.certs.keyFile}`,
  ];
}

/**
 * The service scheduler's security flags with --secure: towards the master its principal and the
 * CA; its own API over HTTPS (the same certificate) with credentials required for every call
 * but /v1/health.
 */
function schedulerSecurityFlags(): string[] {
  if (secure === undefined) return [];
  return [
    `--principal=${secure.scheduler.principal}`, `--secret_file=${secure.scheduler.secretFile}`, `--tls_ca_file=${secure.certs.caFile}`,
    `--credentials=${secure.schedulerApiCredentialsFile}`, '--authenticate_http_readwrite', '--authenticate_http_readonly',
    `--tls_cert_file=${secure.certs.certFile}`, `--tls_key_file=${secure.certs.keyFile}`,
  ];
}

/**
 * An agent's security flags with --secure: its credential, the CA to verify the master, its own
 * certificate; and its own API with the master's credentials and ACLs (both realms required), so
 * the principals and rights are the same whichever daemon is asked.
 */
function agentSecurityFlags(name: string): string[] {
  if (secure === undefined) return [];
  return [
    `--credential=${secure.agentCredentialFiles.get(name) ?? ''}`,
    `--tls_ca_file=${secure.certs.caFile}`, `--tls_cert_file=${secure.certs.certFile}`, `--tls_key_file=${secure.certs.keyFile}`,
    '--authenticate_http_readonly', '--authenticate_http_readwrite', `--http_credentials=${secure.credentialsFile}`, `--acls=${secure.aclsFile}`,
  ];
}

interface Member {
  name: string;
  run: ProcessRun;
  log: WriteStream;
  /** Its exit status; null when a signal ended it (or it never started). */
  exited: Promise<number | null>;
  /** How to start it again (agents stopped by the master can be restarted with SIGUSR2). */
  restart: () => Member;
}

/** The current process of each member, by name (a restarted agent replaces its entry). */
const members: Member[] = [];
/** How the members that exited ended, by name (until one is started again). */
const exitCodes = new Map<string, number | null>();
let stopping = false;

const COLORS = ['\x1b[36m', '\x1b[32m', '\x1b[33m', '\x1b[35m', '\x1b[34m'];
/** Colours in the records too, unless NO_COLOR is set. */
const recordColor = useColor(process.stdout.isTTY, process.env);
const color = process.stdout.isTTY ? (i: number, s: string) => `${COLORS[i % COLORS.length]}${s}\x1b[0m` : (_i: number, s: string) => s;

/**
 * One log line for the terminal: the children keep writing JSON (daemon.log stays what journald
 * would hold, for jq), shown here in the daemons' own text format (shared/log.ts) without the
 * time; a stack's frames are tagged like the line. Not JSON (etcd's banner, a stray print): as is.
 */
function humanize(line: string, tag: string): string {
  let r: unknown;
  try {
    r = JSON.parse(line);
  } catch {
    return line;
  }
  if (typeof r !== 'object' || r === null || Array.isArray(r)) return line;
  return formatText(r as Record<string, unknown>, { color: recordColor, time: false }).replaceAll('\n', `\n${tag} | `);
}

/**
 * How a member stops: an agent on SIGUSR1 (it kills its tasks with their kill policies, waits for
 * them, and exits), the others on SIGTERM; the signal goes to the daemon alone, which stops what
 * it started itself (an agent's launch server and signaller would die of SIGUSR1); SIGKILL to the
 * whole group after the grace.
 */
function stopPolicy(name: string): StopPolicy {
  return name.startsWith('agent-') ? { signal: 'SIGUSR1', target: 'process', graceMs: 30_000 } : { signal: 'SIGTERM', target: 'process', graceMs: 10_000 };
}

/** Starts a built daemon (`bin` under dist/), or with `exe` another program (etcd). */
function start(name: string, bin: string, args: string[], index: number, exe?: string): Member {
  const dir = join(workDir, name);
  mkdirSync(dir, { recursive: true });
  const log = createWriteStream(join(dir, 'daemon.log'), { flags: 'a' });
  const tag = color(index, name.padEnd(8));
  const text = new StringDecoder('utf8');
  const onLines = (chunk: Buffer): void => {
    const lines = text.write(chunk);
    log.write(lines);
    if (opts.quiet) return;
    for (const line of lines.split('\n')) if (line.trim() !== '') process.stdout.write(`${tag} | ${humanize(line, tag)}\n`);
  };
  const policy = stopPolicy(name);
  const program = exe === undefined ? [process.execPath, join(dist, bin), ...args] : [exe, ...args];
  const run = runProcess({
    // Through drydock-launch --pdeathsig, which becomes the program (same pid): if this process
    // dies, even of SIGKILL, the kernel sends the daemon its stop signal.
    argv: [LAUNCHER, '--pdeathsig', String(osConstants.signals[policy.signal]), String(process.pid), ...program],
    env: {},
    extendEnv: true,
    cwd: undefined,
    output: onLines,
    stop: policy,
    onKill: () => process.stderr.write(`cluster: ${name} did not stop within ${policy.graceMs} ms; killing it\n`),
    clock: systemClock,
  });
  // The daemon is gone at its exit; its log stays open until its output closes (a child it left may still write).
  const exited = run.exited.then((exit) => exit.code);
  void run.ended.then((end) => {
    if (end.error !== undefined) process.stderr.write(`cluster: ${name} could not be started: ${end.error}\n`);
    log.end(text.end());
  });
  const member: Member = { name, run, log, exited, restart: () => start(name, bin, args, index, exe) };
  exitCodes.delete(name);
  void exited.then((code) => {
    if (members.includes(member)) exitCodes.set(name, code);
    if (stopping) return;
    if (name === 'master' || name === 'etcd') {
      process.stderr.write(`cluster: the master exited (code ${code}); see ${join(dir, 'daemon.log')}. Stopping the cluster.\n`);
      void shutdown(1);
      return;
    }
    if (name === 'scheduler') {
      process.stderr.write(`cluster: the scheduler exited (code ${code}); see ${join(dir, 'daemon.log')}. Its tasks keep running; start the cluster again to resume it.\n`);
      return;
    }
    if (name.startsWith('master-')) {
      // HA: a master killed on purpose; the others go on (a standby takes over). SIGUSR2 starts it again.
      process.stderr.write(`cluster: ${name} exited (code ${code}); a standby takes over. Start it again with: kill -USR2 ${process.pid}\n`);
      return;
    }
    // An agent that the master shut down (machine DOWN, marked gone) exits 0, as a real machine's
    // agent would; the rest of the cluster goes on. SIGUSR2 starts stopped agents again, like
    // `systemctl start drydock-agent` on those machines.
    process.stderr.write(
      `cluster: ${name} exited (code ${code}); see ${join(dir, 'daemon.log')}. ` +
        `Start stopped agents again with: kill -USR2 ${process.pid}\n`,
    );
  });
  const old = members.findIndex((m) => m.name === name);
  if (old === -1) members.push(member);
  else members[old] = member;
  return member;
}

function restartStoppedAgents(): void {
  for (const m of [...members]) {
    if (m.name === 'master' || m.name === 'etcd' || m.run.state === 'running') continue;
    const again = m.restart();
    process.stdout.write(`cluster: started ${m.name} again, pid ${again.run.pid ?? '?'}\n`);
  }
}

/** The agents whose process runs now. */
function runningAgents(): string[] {
  return members.filter((m) => m.name.startsWith('agent-') && m.run.state === 'running').map((m) => m.name);
}

/**
 * Asks the master for GET_AGENTS until every agent still running has registered; bounded.
 * Returns those that have not. An agent counts once it is in `agents` (registered with this
 * master; the ones it only recovered are in `recovered_agents`) and not disconnected: active, or
 * deactivated, as a DRAINED agent stays after a restart (GET_AGENTS says `active: false` for
 * both a disconnected and a deactivated agent; only the latter is `deactivated`). An agent that
 * exited meanwhile (its machine is DOWN or it was marked gone: the master refused it) is not
 * waited for.
 */
async function waitForAgents(timeoutMs: number): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  let missing = runningAgents();
  for (let i = 0; i < 400 && Date.now() < deadline; i++) {
    try {
      // A standby (HA) answers 307: followed with the credential kept.
      const { response: res } = await sendFollowing(ops, `${scheme}://${masterAddress}/api/v1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{"type":"GET_AGENTS"}',
        signal: AbortSignal.timeout(2_000),
      });
      if (res.ok) {
        const body = (await res.json()) as { get_agents: { agents: Array<{ agent_info: { hostname: string }; active: boolean; deactivated?: boolean }> } };
        const registered = new Set(body.get_agents.agents.filter((a) => a.active || a.deactivated === true).map((a) => a.agent_info.hostname));
        missing = runningAgents().filter((name) => !registered.has(name));
        if (missing.length === 0) return [];
      }
    } catch {
      // not up yet
    }
    if (stopping) return missing;
    await new Promise((r) => setTimeout(r, 100));
  }
  return runningAgents().filter((name) => missing.includes(name));
}

/** Stops a member by its stop policy (stopPolicy) and waits for its end. */
async function stopMember(m: Member): Promise<void> {
  if (m.run.state !== 'running') return;
  m.run.stop();
  await m.exited;
}

async function shutdown(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\ncluster: stopping agents (their tasks are killed), then the master...\n');
  // The scheduler first, so it does not relaunch the tasks the agents are about to kill.
  const scheduler = members.find((m) => m.name === 'scheduler');
  if (scheduler !== undefined) await stopMember(scheduler);
  const agents = members.filter((m) => m.name.startsWith('agent-'));
  // SIGUSR1: the agent kills its tasks with their kill policies, waits for them, and exits.
  await Promise.all(agents.map((m) => stopMember(m)));
  await Promise.all(members.filter((m) => m.name.startsWith('master')).map((m) => stopMember(m)));
  const etcd = members.find((m) => m.name === 'etcd');
  if (etcd !== undefined) await stopMember(etcd);
  // The throwaway CA and secrets go with the cluster: a new start makes new ones.
  if (secure !== undefined) rmSync(secure.dir, { recursive: true, force: true });
  process.stdout.write('cluster: stopped.\n');
  process.exit(code);
}

process.on('SIGINT', () => void shutdown(0));
process.on('SIGTERM', () => void shutdown(0));
process.on('SIGHUP', () => void shutdown(0));
process.on('SIGUSR2', () => {
  if (!stopping) restartStoppedAgents();
});
// A reader gone (the terminal closed, `| head`) must not end this process halfway through a stop.
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});

// Under npm, npm is this process's parent (package.json's start script execs it: no shell in
// between to swallow a SIGINT or die of a SIGTERM), and npm forwards SIGINT and SIGTERM here.
// Nothing is forwarded when npm itself dies (SIGKILL, a SIGHUP it does not catch): this process
// is then reparented, and the cluster stops as on Ctrl-C. Run by hand (node dist/scripts/cluster.js
// &), a parent shell that exits is no reason to stop.
if (process.env['npm_lifecycle_event'] !== undefined) {
  const npm = process.ppid;
  const watch = setInterval(() => {
    if (process.ppid === npm) return;
    clearInterval(watch);
    process.stderr.write(`cluster: npm (pid ${npm}) is gone; stopping the cluster.\n`);
    void shutdown(1);
  }, 250);
  watch.unref();
}

const hookFlags = masterHookFlags();
if (opts.ha) {
  start('etcd', '', [
    '--name', 'local', '--data-dir', join(workDir, 'etcd', 'data'),
    '--listen-client-urls', `http://${etcdEndpoint}`, '--advertise-client-urls', `http://${etcdEndpoint}`,
    '--listen-peer-urls', 'http://127.0.0.1:23800', '--initial-advertise-peer-urls', 'http://127.0.0.1:23800',
    '--initial-cluster', 'local=http://127.0.0.1:23800', '--initial-cluster-state', 'new',
    '--logger', 'zap', '--log-level', 'warn',
  ], 4, ETCD_BIN);
  masterPorts.forEach((port, k) =>
    start(`master-${k + 1}`, 'master/main.js', ['--ip=127.0.0.1', `--port=${port}`, `--work_dir=${join(workDir, `master-${k + 1}`)}`, '--hostname=localhost', `--etcd=${etcdUrl}`, ...masterSecurityFlags(), ...hookFlags], k),
  );
} else {
  start('master', 'master/main.js', ['--ip=127.0.0.1', `--port=${masterPort}`, `--work_dir=${join(workDir, 'master')}`, '--hostname=localhost', ...masterSecurityFlags(), ...hookFlags], 0);
}

for (let i = 1; i <= agentCount; i++) {
  const name = `agent-${i}`;
  start(
    name,
    'agent/main.js',
    [
      `--master=${opts.ha ? etcdUrl : masterAddress}`,
      `--hostname=${name}`,
      `--ip=127.0.0.${i + 1}`,
      `--port=${agentPort}`,
      `--work_dir=${join(workDir, name)}`,
      '--resources=cpus:2;mem:2048;disk:10240;ports:[31000-32000]',
      `--attributes=rack:r${((i - 1) % 2) + 1};zone:local`,
      ...agentSecurityFlags(name),
    ],
    i,
  );
}

const unregistered = await waitForAgents(30_000);
const schedulerAddress = `127.0.0.1:${schedulerPort}`;
if (servicePath !== undefined && !stopping) {
  start('scheduler', 'scheduler/main.js', [
    `--master=${opts.ha ? masterPorts.map((p) => `127.0.0.1:${p}`).join(',') : masterAddress}`,
    `--spec=${servicePath}`, '--ip=127.0.0.1', `--port=${schedulerPort}`, `--work_dir=${join(workDir, 'scheduler')}`,
    ...schedulerSecurityFlags(),
  ], agentCount + 1);
}
if (!stopping) {
  const m = `${scheme}://${masterAddress}`;
  const pidOf = (name: string): string => String(members.find((x) => x.name === name)?.run.pid ?? '?');
  const pidFile = join(workDir, 'cluster.pid');
  // An agent that exited before the banner (its machine is DOWN, or it was marked gone) says so instead of a pid.
  const agentLines = agentNames
    .map((name, k) => {
      const where = `  ${name}  ${scheme}://${agentIps[k] ?? '?'}:${agentPort}   `;
      const code = exitCodes.get(name);
      if (code === undefined) return `${where}pid ${pidOf(name)}   work dir ${join(workDir, name)}`;
      return `${where}exited (code ${code}): see ${join(workDir, name, 'daemon.log')}; once its machine is UP, kill -USR2 ${process.pid} starts it again`;
    })
    .join('\n');
  process.stdout.write(`
${unregistered.length === 0 ? 'Drydock is up.' : `Drydock started, but ${unregistered.join(', ')} did not register within 30 s (see ${join(workDir, '<name>', 'daemon.log')}).`}

${
    opts.ha
      ? `  etcd     http://${etcdEndpoint}   pid ${pidOf('etcd')}   data ${join(workDir, 'etcd', 'data')}
${masterPorts.map((p, k) => `  master-${k + 1} ${scheme}://127.0.0.1:${p}   pid ${pidOf(`master-${k + 1}`)}`).join('\n')}
  (standbys answer 307 to the leader; agents find it in etcd: --master=${etcdUrl})
  The CLI finds the leader through etcd too (the master on ${masterPort} may be a standby, or killed):
    export DRYDOCK_MASTER=${etcdUrl}`
      : `  master   ${m}   pid ${pidOf('master')}   registry ${join(workDir, 'master', 'registry.db')}`
  }
${agentLines}${
    servicePath === undefined ? '' : `
  scheduler ${scheme}://${schedulerAddress}   pid ${pidOf('scheduler')}   spec ${servicePath}   state ${join(workDir, 'scheduler')}`
  }
  console  ${m}/   metrics ${m}/metrics
  logs     ${workDir}/<name>/daemon.log
  hooks    ${join(workDir, 'hooks.json')} (patch: /bin/echo patching <hostname>; plans name it: on_down: { hook: patch })

${secure === undefined ? plainTry(m) : secureTry(m, secure)}${servicePath === undefined ? '' : schedulerTry(schedulerAddress, secure)}
${
    opts.ha
      ? `Failover: find the leader with  curl -s${secure === undefined ? '' : ` --cacert ${secure.certs.caFile}`} -o /dev/null -w '%{redirect_url}\\n' ${scheme}://127.0.0.1:${masterPorts[1]}/redirect
then kill it (kill -9 <its pid> above) and watch a standby take over within the TTL (5 s);
the agents re-register with it, keeping their ids and tasks.
`
      : ''
  }This cluster is process ${process.pid} (also in ${pidFile}). Ctrl-C here, or kill ${process.pid}, stops
everything: the agents first (their tasks are killed), then the master. If this process is killed
outright, its daemons stop too.
An agent the master shuts down (machine DOWN, marked gone) stays stopped, as under systemd;
start stopped agents again with: kill -USR2 ${process.pid}

`);
}

/** The banner's examples for a plain cluster. */
function plainTry(m: string): string {
  return `Try:
  curl -s ${m}/health -o /dev/null -w '%{http_code}\\n'
  curl -s -X POST ${m}/api/v1 -H 'Content-Type: application/json' -d '{"type":"GET_AGENTS"}'
  curl -s -X POST ${m}/api/v1 -H 'Content-Type: application/json' -d '{"type":"GET_STATE"}'
  curl -s ${m}/drydock/v1/agents
  curl -s -X POST http://127.0.0.2:${agentPort}/api/v1 -H 'Content-Type: application/json' -d '{"type":"GET_TASKS"}'
  ${CLI}${masterAddress === '127.0.0.1:5050' ? '' : ` --master=${masterAddress}`} status
  curl -s ${m}/metrics/snapshot
`;
}

/**
 * The banner's examples for the service scheduler: the CLI's plan and pod commands; when secure,
 * they are asked over https as ops through the exports of secureTry, and curl shows the same.
 */
function schedulerTry(at: string, s: SecureCluster | undefined): string {
  const cli = `  ${CLI} plan show deploy --scheduler ${at}
  ${CLI} plan continue deploy --scheduler ${at}
  ${CLI} pod status --scheduler ${at}
`;
  if (s === undefined) return cli;
  return `The service scheduler: HTTPS, credentials for every call but /v1/health, ops alone (its API has no ACLs):
${cli}  curl -s --cacert ${s.certs.caFile} -u ${s.ops.principal}:${s.ops.secret} https://${at}/v1/plans
  curl -s --cacert ${s.certs.caFile} -o /dev/null -w '%{http_code}\\n' https://${at}/v1/plans
`;
}

/**
 * The banner's examples for a secure cluster: the CLI as ops through the environment, as the
 * viewer through flags, and curl with Basic, a bearer token and without credentials (401).
 */
function secureTry(m: string, s: SecureCluster): string {
  const ca = s.certs.caFile;
  const master = masterAddress === '127.0.0.1:5050' ? '' : ` --master=${masterAddress}`;
  const json = `-H 'Content-Type: application/json'`;
  return `Secure: HTTPS and WSS with a throwaway CA; the master requires credentials and applies ACLs.
  CA         ${ca}
  principals ops (may do everything, the only one who may run maintenance hooks), viewer (may only look), ${agentNames.length === 0 ? '' : `${agentNames.length === 1 ? 'agent-1' : `agent-1..${agentNames.length}`} (each registers its own machine), `}scheduler
  files      ${s.dir} (credentials.json, acls.json, *.secret, *.credential; removed on exit)

Try, as ops (the CLI reads DRYDOCK_CREDENTIALS and DRYDOCK_TLS_CA_FILE):
  export DRYDOCK_CREDENTIALS=${s.ops.principal}:${s.ops.secret}
  export DRYDOCK_TLS_CA_FILE=${ca}
  ${CLI}${master} agent list
As the read-only viewer (a drain is refused: 403, exit 4):
  ${CLI}${master} --tls_ca_file ${ca} --principal viewer --secret_file ${s.viewer.secretFile} agent list
With curl (Basic, a bearer token, and anonymous: 401):
  curl -s --cacert ${ca} -u ${s.ops.principal}:${s.ops.secret} -X POST ${m}/api/v1 ${json} -d '{"type":"GET_AGENTS"}'
  curl -s --cacert ${ca} -H 'Authorization: Bearer ${s.ops.token}' -X POST ${m}/api/v1 ${json} -d '{"type":"GET_STATE"}'
  curl -s --cacert ${ca} -o /dev/null -w '%{http_code}\\n' -X POST ${m}/api/v1 ${json} -d '{"type":"GET_AGENTS"}'
  curl -s --cacert ${ca} ${m}/health -o /dev/null -w '%{http_code}\\n'${agentNames.length === 0 ? '' : `
An agent's own API takes the same credentials and ACLs (anonymous: 401):
  curl -s --cacert ${ca} -u ${s.ops.principal}:${s.ops.secret} -X POST https://127.0.0.2:${agentPort}/api/v1 ${json} -d '{"type":"GET_TASKS"}'
  curl -s --cacert ${ca} -o /dev/null -w '%{http_code}\\n' -X POST https://127.0.0.2:${agentPort}/api/v1 ${json} -d '{"type":"GET_TASKS"}'`}
`;
}

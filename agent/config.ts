/**
 * The agent's flags and the frozen config they resolve into. Stages: defaults, environment
 * (`DRYDOCK_<FLAG>`), command line, validation (naming the flag and the value), then machine
 * detection for whatever the flags leave open (hostname, IP, resources).
 */

import { hostname as osHostname } from 'node:os';
import type { Attribute, Resource } from '../shared/mesos.js';
import { parseMasterSpec } from '../shared/detection.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../shared/log.js';
import { formatResources, parseAttributes, parseResources } from '../shared/resources.js';
import {
  boolFlag,
  bytesFlag,
  durationFlag,
  flagList,
  intFlag,
  optionalStringFlag,
  percentFlag,
  refine,
  resolveFlags,
  stringFlag,
  type Flag,
  type FlagResult,
  type FlagValues,
} from '../shared/flags.js';
import type { MachineFacts, MachineProbe } from './machine.js';
import type { DiskThresholds } from './disk-pressure.js';
import { parseClientCredential, type ClientCredential } from '../shared/credentials.js';
import { readSecretFile } from '../io/secrets.js';
import { etcdAuthProblem, type EtcdAuthFiles } from '../io/etcd-access.js';
import { tlsCiphersFlag } from '../io/tls-server.js';

export type { MachineProbe };

export const AGENT_PROGRAM = 'drydock-agent';
export const AGENT_SUMMARY =
  'Runs tasks as process groups for a Drydock master, keeps them across restarts, and serves the agent API.';

/**
 * The master: `host:port` (a port in 1-65535; a name, an IPv4 or a bracketed IPv6 host), a
 * list of masters, or `etcd://h1:2379,h2:2379/prefix` (shared/detection.ts).
 */
function masterFlag(): Flag<string | undefined> {
  return {
    help: 'Required. The master as host:port (e.g. 10.0.0.1:5050); several masters as m1:5050,m2:5050 (the agent follows the leader); or etcd://h1:2379,h2:2379/prefix (it reads the election). No default.',
    placeholder: 'host:port',
    default: undefined,
    parse: (t) => {
      const r = parseMasterSpec(t);
      if (!r.ok) return r;
      return { ok: true, value: r.value.kind === 'fixed' ? r.value.address : t.trim() };
    },
  };
}

function resourcesFlag(): Flag<Resource[] | undefined> {
  return {
    help: 'Resources offered, Mesos syntax (cpus:2;mem:1024;disk:4096;ports:[31000-32000]) or a JSON array. Missing cpus, mem, disk and ports are detected (mem and disk minus Mesos\' system reservation).',
    placeholder: 'RESOURCES',
    default: undefined,
    parse: (t) => {
      const r = parseResources(t);
      return r.ok ? { ok: true, value: r.value } : { ok: false, error: r.error };
    },
    format: (v) => formatResources(v ?? []),
  };
}

function attributesFlag(): Flag<Attribute[]> {
  return {
    help: 'Attributes of this machine, e.g. rack:a;zone:1. Default: none.',
    placeholder: 'ATTRIBUTES',
    default: [],
    parse: (t) => {
      const r = parseAttributes(t);
      return r.ok ? { ok: true, value: r.value } : { ok: false, error: r.error };
    },
    format: (v) => v.map(attributeText).join(';'),
  };
}

/** One attribute in --attributes' syntax (`rack:a`, `slots:[1-4]`), for GET_FLAGS. */
function attributeText(a: Attribute): string {
  if (a.scalar !== undefined) return `${a.name}:${a.scalar.value}`;
  if (a.ranges !== undefined) return `${a.name}:[${a.ranges.range.map((r) => `${r.begin}-${r.end}`).join(',')}]`;
  return `${a.name}:${a.text?.value ?? ''}`;
}

function logLevelFlag(): Flag<LogLevel> {
  return {
    help: `Lowest level logged: ${LOG_LEVELS.join(', ')}. Default: info.`,
    placeholder: 'LEVEL',
    default: 'info',
    parse: (t) =>
      (LOG_LEVELS as readonly string[]).includes(t) ? { ok: true, value: t as LogLevel } : { ok: false, error: `expected one of ${LOG_LEVELS.join(', ')}` },
  };
}

function logFormatFlag(): Flag<LogFormat> {
  return {
    help: 'How log lines are written: json (one object per line, for journald and jq) or text (for people at a terminal; coloured when stdout is one and NO_COLOR is unset). Default: json.',
    placeholder: 'FORMAT',
    default: 'json',
    parse: (t) =>
      (LOG_FORMATS as readonly string[]).includes(t) ? { ok: true, value: t as LogFormat } : { ok: false, error: `expected one of ${LOG_FORMATS.join(', ')}` },
  };
}

const positive = (what: string) => (v: number) => (v > 0 ? undefined : `${what} must be positive`);

/** Every agent flag, with Mesos names where Mesos has one. */
export const AGENT_FLAGS = {
  master: masterFlag(),
  hostname: optionalStringFlag('Hostname reported to the master. Default: this machine\'s hostname.', 'NAME'),
  ip: optionalStringFlag('Address the agent API binds and advertises. Default: the primary IPv4 address of this machine.', 'IP'),
  port: intFlag('Port of the agent API; 0 picks a free one. Default: 5051.', 5051, 0, 65535),
  work_dir: refine(stringFlag('Directory for sandboxes and the checkpoint (meta/). Default: /var/lib/drydock/agent.', '/var/lib/drydock/agent', 'DIR'), (v) =>
    v.trim() === '' ? 'must not be empty' : undefined,
  ),
  resources: resourcesFlag(),
  attributes: attributesFlag(),
  registration_backoff_factor: refine(
    durationFlag('Registration retries wait uniform in [0, factor·2^n], capped at 1 min. Default: 1secs.', 1000),
    positive('the backoff factor'),
  ),
  status_update_retry_interval: refine(
    durationFlag('First resend interval of an unacknowledged status update, doubling up to 10mins. Default: 10secs.', 10_000),
    positive('the retry interval'),
  ),
  priority_boost: intFlag(
    "Nice levels the agent runs above its tasks, which keep the nice value it was started with: tasks busy on every core then cannot delay its kills and updates (each signal that wakes a task would otherwise hand that task the CPU). Needs CAP_SYS_NICE (root has it); without it the agent runs at its tasks' priority and logs so. 0: off. Default: 5.",
    5,
    0,
    39,
  ),
  registration_timeout: refine(
    durationFlag('How long to wait for REGISTERED after connecting before trying again. Default: 15secs.', 15_000),
    positive('the registration timeout'),
  ),
  // Disk pressure (issue 36): below any of these the agent refuses launches and the master
  // stops offering it, until the figures are back above 1.25 times the thresholds.
  disk_pressure_free_bytes: bytesFlag(
    'Disk pressure begins when the work dir\'s filesystem (or the sandboxes\', if they are another one) has less free space than this; 0B: off. A full filesystem, or a write that fails for want of space, is pressure whatever the thresholds. Default: 100MB.',
    100 * 2 ** 20,
  ),
  disk_pressure_free_percent: percentFlag('Disk pressure begins below this share of the filesystem free; 0: off. Default: 5.', 5),
  disk_pressure_free_inodes_percent: percentFlag('Disk pressure begins below this share of the filesystem\'s inodes free; 0: off. Default: 5.', 5),
  disk_watch_interval: refine(
    durationFlag('How often the agent reads the free space and inodes of its filesystems (it also does at each launch, and at once on a failed write). Default: 5secs.', 5_000),
    positive('the disk watch interval'),
  ),
  down_retry_interval: durationFlag(
    'When the master shuts this agent down because its machine is DOWN, kill the tasks and register again this often until the machine is UP, instead of exiting. 0: exit 0, as Mesos agents do (the systemd unit sets 5secs). Default: 0.',
    0,
  ),
  // TLS (issue 13), libprocess-style: one certificate serves the agent API and is presented to
  // the master as the client certificate (mutual TLS).
  tls_cert_file: optionalStringFlag('PEM certificate (chain): the agent API serves HTTPS with it, and the agent presents it to the master (for --tls_require_client_cert). Needs --tls_key_file. Default: none, plain HTTP.', 'FILE'),
  tls_key_file: optionalStringFlag('PEM private key of --tls_cert_file; must not be readable by others. Default: none.', 'FILE'),
  // Mesos' agent flag: the principal (and secret) the agent authenticates as on its WebSocket
  // upgrade, for a master with --authenticate_agents. Read once at start; an unsafe mode stops it.
  credential: optionalStringFlag(
    'File with the credential the agent authenticates to the master with: Mesos\' JSON {"principal":...,"secret":...}, one "principal secret" line, or {"token":...} for a bearer token. It must not be readable by others (chmod 600). Default: none, anonymous.',
    'FILE',
  ),
  // The agent API's own authentication and ACLs, with the names and meaning of Mesos' agent flags:
  // without them anybody who reaches --port reads every framework's tasks.
  authenticate_http_readonly: boolFlag(
    'Require credentials (--http_credentials) for the agent API\'s calls that only read: GET_* calls, LIST_FILES, READ_FILE, and every GET endpoint (/state, /flags, /monitor/statistics, /files/*, /metrics, /metrics/snapshot, /drydock/v1/containers; /health and /slave(1)/health stay open). Default: false.',
    false,
  ),
  authenticate_http_readwrite: boolFlag('Require credentials (--http_credentials) for the agent API\'s calls that may change state (SET_LOGGING_LEVEL, the container calls). Default: false.', false),
  http_credentials: optionalStringFlag(
    'File of the principals and secrets the agent API checks, in the master\'s --credentials formats (Mesos\' JSON {"credentials":[...]} with optional "tokens", or one "principal secret" per line). It must not be readable by others. Presented credentials are checked even where not required. Default: none.',
    'FILE',
  ),
  acls: optionalStringFlag(
    'ACLs for the agent API, in the master\'s --acls format (JSON text or a file; one file can serve both): view_tasks, view_executors and view_frameworks filter tasks, executors and frameworks by user (GET_*, /state), access_sandboxes with view_tasks guards the sandboxes (/files/*, LIST_FILES, READ_FILE), view_flags GET_FLAGS and /flags, set_log_level SET_LOGGING_LEVEL, get_endpoints the metrics, /monitor/statistics and /files/debug. Default: none, every caller may do everything.',
    'JSON|FILE',
  ),
  tls_ca_file: optionalStringFlag('PEM CA the master\'s certificate must chain to: the agent then reaches the master over wss:// and https://. With --tls_require_client_cert, also the CA that clients of the agent API must present a certificate from. Default: none, plain ws:// and http://.', 'FILE'),
  // One CA both ways, as libprocess' LIBPROCESS_SSL_CA_FILE: a cluster has one CA, which signs
  // the masters', the agents' and the operators' certificates alike.
  tls_require_client_cert: boolFlag('Mutual TLS on the agent API: refuse clients without a certificate from --tls_ca_file (the same CA that verifies the master), at the TLS handshake. Needs --tls_cert_file, --tls_key_file and --tls_ca_file. Default: false.', false),
  tls_ciphers: tlsCiphersFlag(),
  // With --master=etcd://...: the agent reads the election from a secured etcd, with the
  // master's flags of the same names and meaning.
  etcd_ca_file: optionalStringFlag('With --master=etcd://...: PEM CA that etcd\'s server certificate must chain to; etcd is then read over https. Default: none, plain http.', 'FILE'),
  etcd_cert_file: optionalStringFlag('With --master=etcd://...: PEM client certificate for etcd (needs --etcd_key_file; turns https on, with the system\'s CAs when --etcd_ca_file is not given). With etcd user authentication too, it must have no Common Name (etcd\'s JSON gateway, which the agent reads, refuses one then). Default: none.', 'FILE'),
  etcd_key_file: optionalStringFlag('With --master=etcd://...: PEM private key of --etcd_cert_file; must not be readable by others. Default: none.', 'FILE'),
  etcd_user: optionalStringFlag('With --master=etcd://...: etcd user name (needs --etcd_password_file); it needs read on PREFIX/election/. Default: none.', 'USER'),
  etcd_password_file: optionalStringFlag('With --master=etcd://...: file holding the etcd user\'s password, one line; must not be readable by others. Default: none.', 'FILE'),
  // The single executable (drydock-agent built by `npm run package`) carries its launcher and
  // writes it into the work dir; this points at a file instead (one beside the executable, or
  // a work dir mounted noexec). Run from dist/, the agent uses dist/agent/drydock-launch.
  launcher: optionalStringFlag(
    'The task launcher binary (drydock-launch) to run tasks with. Default: the one the single executable carries, written once to WORK_DIR/launcher/<hash>/drydock-launch; run from dist/, the one beside agent/main.js.',
    'FILE',
  ),
  log_level: logLevelFlag(),
  log_format: logFormatFlag(),
} satisfies Record<string, Flag<unknown>>;

export type AgentFlagValues = FlagValues<typeof AGENT_FLAGS>;

/** Everything the agent runs with, after detection. Units are in the field names. */
export interface AgentConfig {
  readonly master: string;
  readonly hostname: string;
  readonly ip: string;
  readonly port: number;
  readonly workDir: string;
  readonly resources: readonly Resource[];
  readonly attributes: readonly Attribute[];
  readonly registrationBackoffFactorMs: number;
  readonly statusUpdateRetryIntervalMs: number;
  /** --priority_boost: nice levels above the tasks. */
  readonly priorityBoost: number;
  readonly registrationTimeoutMs: number;
  /** 0: exit on a machine-DOWN shutdown. */
  readonly downRetryIntervalMs: number;
  /** --disk_pressure_*: when the agent is short of disk. */
  readonly diskPressure: DiskThresholds;
  /** --disk_watch_interval. */
  readonly diskWatchIntervalMs: number;
  readonly logLevel: LogLevel;
  /** --log_format: json (default) or text. */
  readonly logFormat: LogFormat;
  /** TLS files as given (read by loadAgentTls at start). */
  readonly tls: AgentTlsFiles;
  /** etcd's TLS and user, as given (read by loadEtcdAccess at start; used with --master=etcd://). */
  readonly etcdAuth: EtcdAuthFiles;
  /** --credential as given (read by loadAgentCredential at start); undefined: anonymous. */
  readonly credentialFile: string | undefined;
  /** --launcher as given; undefined: the carried one (single executable) or dist/agent/drydock-launch. */
  readonly launcherFile: string | undefined;
  /** Who may call the agent API (files read by loadAgentSecurity at start). */
  readonly security: AgentSecurityConfig;
  /** The flags as GET_FLAGS writes them: name and Mesos-style text value, sorted by name. */
  readonly flags: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/** The agent API's authentication and ACL flags, as given. */
export interface AgentSecurityConfig {
  /** --authenticate_http_readonly: the read-only realm refuses anonymous callers. */
  readonly authenticateHttpReadonly: boolean;
  /** --authenticate_http_readwrite: the read-write realm refuses anonymous callers. */
  readonly authenticateHttpReadwrite: boolean;
  /** --http_credentials: the principals and secrets to check; undefined: none can be checked. */
  readonly httpCredentialsFile: string | undefined;
  /** --acls as given: JSON text, or a path; undefined: everything allowed. */
  readonly acls: string | undefined;
}

/** The agent's TLS flags: its own certificate (API server, client certificate) and the CA (the master's; its API's clients'). */
export interface AgentTlsFiles {
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly caFile: string | undefined;
  /** --tls_require_client_cert: the API refuses clients without a certificate from caFile. */
  readonly requireClientCert: boolean;
  /** --tls_ciphers: what the API's HTTPS offers (OpenSSL cipher list). */
  readonly ciphers: string;
}

/** Resolves argv and the environment into flag values, or help text, or an error naming the flag. */
export function resolveAgentFlags(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): FlagResult<typeof AGENT_FLAGS> {
  const r = resolveFlags(AGENT_PROGRAM, AGENT_SUMMARY, AGENT_FLAGS, argv, env);
  if (r.kind === 'ok' && r.values.master === undefined) {
    return { kind: 'error', error: "Missing required flag '--master' (host:port of the master; or set DRYDOCK_MASTER)" };
  }
  if (r.kind === 'ok') {
    const problem = agentSecurityProblem(r.values);
    if (problem !== undefined) return { kind: 'error', error: problem };
  }
  return r;
}

/** The security flags that only make sense together, named as the operator typed them. Pure. */
export function agentSecurityProblem(v: AgentFlagValues): string | undefined {
  // As the master's --authenticate_* without --credentials: a realm that requires credentials
  // with nothing to check them against would refuse every caller.
  const auth = (['authenticate_http_readwrite', 'authenticate_http_readonly'] as const).filter((f) => v[f]);
  if (auth.length > 0 && v.http_credentials === undefined) return `--${auth[0]} needs --http_credentials=FILE (the principals and secrets to check)`;
  if ((v.tls_cert_file === undefined) !== (v.tls_key_file === undefined)) return '--tls_cert_file and --tls_key_file go together';
  if (v.tls_require_client_cert && v.tls_ca_file === undefined) return '--tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)';
  if (v.tls_require_client_cert && v.tls_cert_file === undefined) return '--tls_require_client_cert needs --tls_cert_file and --tls_key_file';
  // --master was parsed already: etcd:// here is a valid etcd spec.
  return etcdAuthProblem(etcdAuthFiles(v), v.master?.trim().startsWith('etcd://') === true, '--master=etcd://...');
}

function etcdAuthFiles(v: AgentFlagValues): EtcdAuthFiles {
  return { caFile: v.etcd_ca_file, certFile: v.etcd_cert_file, keyFile: v.etcd_key_file, user: v.etcd_user, passwordFile: v.etcd_password_file };
}

/**
 * The scalar and range resources Mesos detects when `--resources` leaves them out. Memory and
 * disk keep Mesos' system reservation: total - min(1 GB, total/2) and total - min(5 GB, total/2).
 */
export function detectedResources(facts: MachineFacts): Resource[] {
  const memMb = facts.memBytes / 2 ** 20;
  const diskMb = facts.diskBytes / 2 ** 20;
  return [
    { name: 'cpus', type: 'SCALAR', scalar: { value: facts.cpus } },
    { name: 'mem', type: 'SCALAR', scalar: { value: Math.floor(memMb - Math.min(1024, memMb / 2)) } },
    { name: 'disk', type: 'SCALAR', scalar: { value: Math.floor(diskMb - Math.min(5120, diskMb / 2)) } },
    { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } },
  ];
}

/** Fills in what the flags leave open and freezes the result. */
export async function agentConfig(values: AgentFlagValues, probe: MachineProbe): Promise<AgentConfig> {
  const given = values.resources ?? [];
  const missing = ['cpus', 'mem', 'disk', 'ports'].filter((n) => !given.some((r) => r.name === n));
  let resources: Resource[] = [...given];
  if (missing.length > 0) {
    const detected = detectedResources(await probe.facts(values.work_dir));
    resources = [...given, ...detected.filter((r) => missing.includes(r.name))];
  }
  return Object.freeze({
    master: values.master ?? '',
    hostname: values.hostname ?? osHostname(),
    ip: values.ip ?? (await probe.primaryIpv4()),
    port: values.port,
    workDir: values.work_dir,
    resources: Object.freeze(resources),
    attributes: Object.freeze([...values.attributes]),
    registrationBackoffFactorMs: values.registration_backoff_factor,
    statusUpdateRetryIntervalMs: values.status_update_retry_interval,
    priorityBoost: values.priority_boost,
    registrationTimeoutMs: values.registration_timeout,
    downRetryIntervalMs: values.down_retry_interval,
    diskPressure: Object.freeze({ freeBytes: values.disk_pressure_free_bytes, freePercent: values.disk_pressure_free_percent, freeInodesPercent: values.disk_pressure_free_inodes_percent }),
    diskWatchIntervalMs: values.disk_watch_interval,
    logLevel: values.log_level,
    logFormat: values.log_format,
    tls: Object.freeze({ certFile: values.tls_cert_file, keyFile: values.tls_key_file, caFile: values.tls_ca_file, requireClientCert: values.tls_require_client_cert, ciphers: values.tls_ciphers }),
    etcdAuth: Object.freeze(etcdAuthFiles(values)),
    credentialFile: values.credential,
    security: Object.freeze({
      authenticateHttpReadonly: values.authenticate_http_readonly,
      authenticateHttpReadwrite: values.authenticate_http_readwrite,
      httpCredentialsFile: values.http_credentials,
      acls: values.acls,
    }),
    flags: Object.freeze(flagList(AGENT_FLAGS, values)),
    launcherFile: values.launcher,
  });
}

/**
 * Reads `--credential`: refused when others may read it (io/secrets.ts) or when it is no
 * credential; the error names the flag and the file, never the secret.
 */
export function loadAgentCredential(path: string | undefined): { ok: true; credential: ClientCredential | undefined } | { ok: false; error: string } {
  if (path === undefined) return { ok: true, credential: undefined };
  const read = readSecretFile(path, '--credential');
  if (!read.ok) return read;
  const parsed = parseClientCredential(read.text);
  if (!parsed.ok) return { ok: false, error: `--credential ${path}: ${parsed.error}` };
  return { ok: true, credential: parsed.value };
}

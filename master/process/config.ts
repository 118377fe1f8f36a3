/**
 * The master's configuration: Mesos flag names, each also read from `DRYDOCK_<FLAG>`,
 * resolved by shared/flags.ts into one frozen object with units in the field names.
 */

import { hostname as osHostname } from 'node:os';
import { boolFlag, durationFlag, flagList, intFlag, optionalStringFlag, refine, resolveFlags, stringFlag, type FlagResult, type FlagValues } from '../../shared/flags.js';
import { LOG_FORMATS, LOG_LEVELS, type LogFormat, type LogLevel } from '../../shared/log.js';
import { etcdAuthProblem, type EtcdAuthFiles } from '../../io/etcd-access.js';
import { tlsCiphersFlag } from '../../io/tls-server.js';
import type { SecurityConfig } from '../security/security.js';

/** Program name used in --help and error lines. */
export const MASTER_PROGRAM = 'drydock-master';

const SUMMARY = 'The Drydock master: operator API, agent sessions and the registry.';

const positive = (ms: number): string | undefined => (ms > 0 ? undefined : 'must be greater than zero');

/** The flag spec. Order here is the order of --help and GET_FLAGS. */
export const MASTER_FLAGS = {
  ip: stringFlag('Address to listen on (default 0.0.0.0, all interfaces, like Mesos).', '0.0.0.0', 'IP'),
  port: intFlag('Port to listen on (default 5050); 0 picks an ephemeral port, logged in the `listening` line.', 5050, 0, 65535),
  hostname: stringFlag("Hostname the master advertises (default: this machine's hostname).", osHostname(), 'HOST'),
  work_dir: stringFlag('Directory of the registry (registry.db); created if missing (default /var/lib/drydock/master).', '/var/lib/drydock/master', 'DIR'),
  agent_ping_timeout: refine(
    durationFlag('How often the master pings each agent, and how long a pong may take (default 15secs).', 15_000),
    positive,
  ),
  max_agent_ping_timeouts: intFlag('Missed pongs in a row after which an agent is unreachable (default 5).', 5, 1, 1_000_000),
  // Mesos refuses anything under 10mins here; Drydock allows shorter values so tests can watch
  // recovered agents time out in seconds. Production should keep the Mesos default.
  agent_reregister_timeout: refine(
    durationFlag(
      'How long agents recovered from the registry after a restart have to re-register before they become unreachable (default 10mins; Mesos enforces a 10mins minimum, Drydock allows less for tests).',
      600_000,
    ),
    positive,
  ),
  // Not a flag in Mesos (DEFAULT_HEARTBEAT_INTERVAL, 15secs, is compiled in); a flag here so
  // tests can watch heartbeats in milliseconds. Capped because @dcos/mesos-client gives up
  // on a stream after 30 s of silence.
  heartbeat_interval: refine(
    durationFlag("How often each operator event stream (SUBSCRIBE) and each of Drydock's (/drydock/v1/events) gets a HEARTBEAT (default 15secs; at most 20secs, clients give up after 30 s of silence).", 15_000),
    (ms) => (ms <= 0 ? 'must be greater than zero' : ms > 20_000 ? 'must be at most 20secs (clients give up on a stream after 30 s of silence)' : undefined),
  ),
  max_operator_event_stream_subscribers: intFlag(
    "Most open operator event streams (SUBSCRIBE); past it the oldest stream is closed (default 1000). Drydock's event streams (/drydock/v1/events) have the same cap, counted apart.",
    1000,
    1,
    1_000_000,
  ),
  // Mesos --allocation_interval: how often the allocator makes offers of free resources (it
  // also runs soon after events that free resources).
  allocation_interval: refine(durationFlag('How often the allocator offers free resources to frameworks (default 1secs).', 1_000), positive),
  // HA (source document 002): masters contend for leadership through etcd and keep the
  // registry there. Unset: one master with its SQLite file.
  etcd: {
    ...optionalStringFlag('etcd://h1:2379,h2:2379,h3:2379/prefix: several masters elect a leader through these etcd endpoints and keep the registry under the prefix (several clusters can share an etcd). Default: none, one master with SQLite.', 'URL'),
    parse: (t: string) => {
      const r = parseEtcdUrl(t);
      return r.ok ? { ok: true as const, value: t } : { ok: false as const, error: r.error };
    },
  },
  registry_import: optionalStringFlag('With --etcd: the registry.db of a single master to move into etcd, once (skipped, with a warning, when etcd already holds a registry for the prefix). Default: none.', 'FILE'),
  etcd_ttl: refine(durationFlag('TTL of the leader lease in etcd, whole seconds (default 5secs; a dead leader is replaced within about this long).', 5_000), (ms) =>
    ms < 1000 || ms % 1000 !== 0 ? 'must be whole seconds, at least 1secs' : undefined,
  ),
  // Security (issue 13). Mesos' flag names; everything is off by default, as in Mesos.
  authenticate_http_readwrite: boolFlag('Require credentials (--credentials) for calls that change state: the operator API\'s mutating calls, POSTs to the maintenance endpoints and maintenance plans (default false).', false),
  authenticate_http_readonly: boolFlag('Require credentials for calls that only read: GET_* calls, SUBSCRIBE, and GETs of the maintenance endpoints and plans (default false).', false),
  authenticate_frameworks: boolFlag('Require credentials for the scheduler API (/api/v1/scheduler); a framework\'s principal must then be the one it authenticates as (default false).', false),
  authenticate_http_frameworks: boolFlag('Mesos\' name for the same switch for HTTP frameworks: either turns it on (default false).', false),
  authenticate_agents: boolFlag('Require agents to authenticate on their WebSocket upgrade (drydock-agent --credential); an agent id stays bound to the principal that registered it (default false).', false),
  credentials: optionalStringFlag('File of principals and secrets: Mesos\' JSON {"credentials":[{"principal":...,"secret":...,"tokens":[...]}]} or one "principal secret" per line. It must not be readable by others. Presented credentials are checked even where not required. Default: none.', 'FILE'),
  acls: optionalStringFlag('ACLs in Mesos\' format, as JSON text or a file path (file:// allowed): {"permissive":false,"drain_agents":[{"principals":{"values":["ops"]},"agents":{"values":["rack:r1"]}}]}. Default: none, every caller may do everything.', 'JSON|FILE'),
  tls_cert_file: optionalStringFlag('PEM certificate (chain) to serve HTTPS and WSS on --port; needs --tls_key_file. Plain HTTP to the port then gets a clear error. Default: none, plain HTTP.', 'FILE'),
  tls_key_file: optionalStringFlag('PEM private key of --tls_cert_file; must not be readable by others. Default: none.', 'FILE'),
  tls_ca_file: optionalStringFlag('PEM CA certificates that client certificates must chain to (with --tls_require_client_cert). Default: none.', 'FILE'),
  tls_require_client_cert: boolFlag('Mutual TLS: refuse clients (agents, CLI, schedulers) without a certificate from --tls_ca_file (default false).', false),
  tls_ciphers: tlsCiphersFlag(),
  etcd_ca_file: optionalStringFlag('With --etcd: PEM CA that etcd\'s server certificate must chain to; the endpoints are then reached over TLS. Default: none, plain HTTP.', 'FILE'),
  etcd_cert_file: optionalStringFlag('With --etcd: PEM client certificate for etcd (needs --etcd_key_file). Default: none.', 'FILE'),
  etcd_key_file: optionalStringFlag('With --etcd: PEM private key of --etcd_cert_file. Default: none.', 'FILE'),
  etcd_user: optionalStringFlag('With --etcd: etcd user name (needs --etcd_password_file). Default: none.', 'USER'),
  etcd_password_file: optionalStringFlag('With --etcd: file holding the etcd user\'s password; must not be readable by others. Default: none.', 'FILE'),
  // Maintenance hooks: the only commands maintenance plans may run on the master (a plan names one).
  maintenance_hooks: optionalStringFlag(
    'YAML or JSON file of the commands maintenance plans may run once a machine is DOWN: {hooks: {NAME: {command: ["/abs/program", "{hostname}", ...], timeout: 10mins, env: {...}}}}. Read once at start; it must not be writable by its group or others. A plan names a hook (on_down: {hook: NAME}), and whoever names it needs the ACL action run_maintenance_hooks. Default: none, no plan can run anything.',
    'FILE',
  ),
  hook_user: optionalStringFlag('The user maintenance hooks run as (name or uid), with its own groups only. Required when the master runs as root and --maintenance_hooks is set (root is an explicit choice); a master that is not root runs hooks as itself. Default: none.', 'NAME'),
  log_level: {
    ...stringFlag(`Lowest level logged: ${LOG_LEVELS.join(', ')} (default info).`, 'info', 'LEVEL'),
    parse: (t: string) =>
      (LOG_LEVELS as readonly string[]).includes(t) ? { ok: true as const, value: t } : { ok: false as const, error: `expected one of ${LOG_LEVELS.join(', ')}` },
  },
  log_format: {
    ...stringFlag('How log lines are written: json (one object per line, for journald and jq) or text (for people at a terminal; coloured when stdout is one and NO_COLOR is unset). Default: json.', 'json', 'FORMAT'),
    parse: (t: string) =>
      (LOG_FORMATS as readonly string[]).includes(t) ? { ok: true as const, value: t } : { ok: false as const, error: `expected one of ${LOG_FORMATS.join(', ')}` },
  },
} as const;

/** Everything the master needs to start, frozen. */
export interface MasterConfig {
  readonly ip: string;
  readonly port: number;
  readonly hostname: string;
  readonly workDir: string;
  readonly agentPingTimeoutMs: number;
  readonly maxAgentPingTimeouts: number;
  readonly agentReregisterTimeoutMs: number;
  /** --allocation_interval: ms between allocation rounds. */
  readonly allocationIntervalMs: number;
  readonly logLevel: LogLevel;
  /** --log_format: json (default) or text. */
  readonly logFormat: LogFormat;
  /** Between two HEARTBEATs on an operator event stream. */
  readonly heartbeatIntervalMs: number;
  /** Open operator event streams before the oldest is closed. */
  readonly maxOperatorEventStreamSubscribers: number;
  /** HA: the etcd endpoints (`127.0.0.1:2379`) and the cluster's key prefix; undefined for one master with SQLite. */
  readonly etcd: { readonly endpoints: readonly string[]; readonly prefix: string } | undefined;
  /** --etcd_ttl, in ms (whole seconds). */
  readonly etcdTtlMs: number;
  /** --registry_import: a single master's registry.db to move into etcd once. */
  readonly registryImport: string | undefined;
  /** Security flags (issue 13), as given; files are read by security/security.ts at start. */
  readonly security: SecurityConfig;
  /** TLS on --port: undefined for plain HTTP. */
  readonly tls: TlsServerConfig | undefined;
  /** TLS and credentials towards etcd. */
  readonly etcdAuth: EtcdAuthConfig;
  /** --maintenance_hooks: the hooks file (read at start by plans/hooks.ts); undefined: no hooks. */
  readonly maintenanceHooksFile: string | undefined;
  /** --hook_user: the user hooks run as. */
  readonly hookUser: string | undefined;
  /** The flags as GET_FLAGS writes them: name and Mesos-style text value. */
  readonly flags: ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/** A daemon's HTTPS/WSS server side (master and agent). */
export interface TlsServerConfig {
  readonly certFile: string;
  readonly keyFile: string;
  readonly caFile: string | undefined;
  readonly requireClientCert: boolean;
  /** --tls_ciphers: OpenSSL cipher list (io/tls-server.ts' DEFAULT_TLS_CIPHERS unless given). */
  readonly ciphers: string;
}

/** The etcd security flags as given: the agent's too (io/etcd-access.ts). */
export type EtcdAuthConfig = EtcdAuthFiles;

export type ConfigResult = { kind: 'ok'; config: MasterConfig } | { kind: 'help'; text: string } | { kind: 'error'; error: string };

/** Resolves argv and the environment into a MasterConfig (pure apart from the hostname default). */
export function resolveMasterConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): ConfigResult {
  const r: FlagResult<typeof MASTER_FLAGS> = resolveFlags(MASTER_PROGRAM, SUMMARY, MASTER_FLAGS, argv, env);
  if (r.kind !== 'ok') return r;
  const v = r.values;
  const problem = securityProblem(v);
  if (problem !== undefined) return { kind: 'error', error: problem };
  const config: MasterConfig = {
    ip: v.ip,
    port: v.port,
    hostname: v.hostname,
    workDir: v.work_dir,
    agentPingTimeoutMs: v.agent_ping_timeout,
    maxAgentPingTimeouts: v.max_agent_ping_timeouts,
    agentReregisterTimeoutMs: v.agent_reregister_timeout,
    allocationIntervalMs: v.allocation_interval,
    logLevel: v.log_level as LogLevel,
    logFormat: v.log_format as LogFormat,
    heartbeatIntervalMs: v.heartbeat_interval,
    maxOperatorEventStreamSubscribers: v.max_operator_event_stream_subscribers,
    etcd: v.etcd === undefined ? undefined : (parseEtcdUrl(v.etcd) as { ok: true; value: { endpoints: string[]; prefix: string } }).value,
    etcdTtlMs: v.etcd_ttl,
    registryImport: v.registry_import,
    security: Object.freeze({
      authenticateHttpReadwrite: v.authenticate_http_readwrite,
      authenticateHttpReadonly: v.authenticate_http_readonly,
      authenticateFrameworks: v.authenticate_frameworks || v.authenticate_http_frameworks,
      authenticateAgents: v.authenticate_agents,
      credentialsFile: v.credentials,
      acls: v.acls,
    }),
    tls:
      v.tls_cert_file === undefined || v.tls_key_file === undefined
        ? undefined
        : Object.freeze({ certFile: v.tls_cert_file, keyFile: v.tls_key_file, caFile: v.tls_ca_file, requireClientCert: v.tls_require_client_cert, ciphers: v.tls_ciphers }),
    etcdAuth: Object.freeze({ caFile: v.etcd_ca_file, certFile: v.etcd_cert_file, keyFile: v.etcd_key_file, user: v.etcd_user, passwordFile: v.etcd_password_file }),
    maintenanceHooksFile: v.maintenance_hooks,
    hookUser: v.hook_user,
    flags: Object.freeze(flagList(MASTER_FLAGS, v)),
  };
  return { kind: 'ok', config: Object.freeze(config) };
}

/** `etcd://h1:2379,h2:2379/prefix` -> endpoints and prefix (default prefix `/drydock`). */
export function parseEtcdUrl(text: string): { ok: true; value: { endpoints: string[]; prefix: string } } | { ok: false; error: string } {
  const m = /^etcd:\/\/([^/]+)(\/.*)?$/.exec(text.trim());
  if (m === null) return { ok: false, error: `expected etcd://host:port[,host:port...][/prefix], got '${text.slice(0, 80)}'` };
  const endpoints = (m[1] ?? '').split(',').map((h) => h.trim());
  for (const h of endpoints) if (!/^[A-Za-z0-9.\-]+:[0-9]{1,5}$/.test(h)) return { ok: false, error: `'${h.slice(0, 80)}' is not host:port` };
  const prefix = (m[2] ?? '/drydock').replace(/\/+$/, '');
  if (prefix === '') return { ok: false, error: 'the key prefix must not be empty' };
  return { ok: true, value: { endpoints, prefix } };
}

/** Flags that only make sense together, named as the operator typed them. Pure. */
function securityProblem(v: FlagValues<typeof MASTER_FLAGS>): string | undefined {
  const auth = (['authenticate_http_readwrite', 'authenticate_http_readonly', 'authenticate_frameworks', 'authenticate_http_frameworks', 'authenticate_agents'] as const).filter((f) => v[f]);
  if (auth.length > 0 && v.credentials === undefined) return `--${auth[0]} needs --credentials=FILE (the principals and secrets to check)`;
  if ((v.tls_cert_file === undefined) !== (v.tls_key_file === undefined)) return '--tls_cert_file and --tls_key_file go together';
  if (v.tls_require_client_cert && v.tls_ca_file === undefined) return '--tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)';
  if (v.tls_require_client_cert && v.tls_cert_file === undefined) return '--tls_require_client_cert needs --tls_cert_file and --tls_key_file';
  const etcdFiles = { caFile: v.etcd_ca_file, certFile: v.etcd_cert_file, keyFile: v.etcd_key_file, user: v.etcd_user, passwordFile: v.etcd_password_file };
  return etcdAuthProblem(etcdFiles, v.etcd !== undefined, '--etcd');
}

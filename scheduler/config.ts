/**
 * drydock-scheduler's flags, resolved in stages (shared/flags.ts: defaults, `DRYDOCK_<FLAG>`,
 * the command line) and then checked together: what needs what (`--authenticate_*` needs
 * `--credentials`, a certificate needs its key). Pure; main.ts reads the files.
 *
 * Two sides of security, kept apart in the flags' help:
 * - towards the master, the scheduler is a client: `--principal`/`--secret_file` (or
 *   `DRYDOCK_CREDENTIALS=principal:secret`) and `--tls_ca_file`;
 * - its own HTTP API (/v1/plans, /v1/pod, /v1/configurations) is a server: `--credentials`,
 *   `--authenticate_http_readwrite`, `--authenticate_http_readonly`, and `--tls_cert_file` with
 *   `--tls_key_file` for HTTPS, `--tls_require_client_cert` for mutual TLS (client certificates
 *   from `--tls_ca_file`, the one CA both ways). As with the agent (libprocess' one certificate per process), the
 *   same certificate is presented to a master that asks for a client certificate, and as on the
 *   agent only `--tls_ca_file` makes the master be asked over https.
 */

import { boolFlag, durationFlag, intFlag, optionalStringFlag, refine, resolveFlags, stringFlag, type FlagResult, type FlagValues } from '../shared/flags.js';
import { LOG_FORMATS, LOG_LEVELS } from '../shared/log.js';
import { CREDENTIALS_ENV } from '../io/client-auth.js';
import { tlsCiphersFlag } from '../io/tls-server.js';

export const PROGRAM = 'drydock-scheduler';
export const SUMMARY = 'A service scheduler: keeps one service (a YAML spec) running on a Drydock or Mesos master, with plans.';

export const SCHEDULER_FLAGS = {
  master: stringFlag('The master, host:port (https://host:port, or any with --tls_ca_file, for TLS); several separated by commas are tried in turn (default 127.0.0.1:5050).', '127.0.0.1:5050', 'HOST:PORT'),
  spec: stringFlag('The service spec, a YAML file (required).', '', 'FILE'),
  ip: stringFlag('Address the HTTP API listens on (default 0.0.0.0).', '0.0.0.0', 'IP'),
  port: intFlag('Port of the HTTP API (default 8088); 0 picks one, logged in the `listening` line.', 8088, 0, 65535),
  work_dir: stringFlag('Directory of the scheduler state (scheduler.db); created if missing (default /var/lib/drydock/scheduler).', '/var/lib/drydock/scheduler', 'DIR'),
  framework_name: optionalStringFlag('Framework name (default: the service name).', 'NAME'),
  failover_timeout: refine(durationFlag('How long the master keeps the tasks of a disconnected scheduler (default 1weeks).', 7 * 24 * 3600_000), (ms) => (ms > 0 ? undefined : 'must be greater than zero')),
  backoff_initial: refine(durationFlag('First back-off before relaunching a pod that failed again (default 1secs); doubles per failure.', 1_000), (ms) => (ms > 0 ? undefined : 'must be greater than zero')),
  backoff_max: refine(durationFlag('Longest back-off between relaunches (default 60secs).', 60_000), (ms) => (ms > 0 ? undefined : 'must be greater than zero')),
  offer_hold: refine(durationFlag('How long an unused offer is held before it is declined (default 1secs).', 1_000), (ms) => (ms >= 0 ? undefined : 'must be zero or more')),
  log_level: refine(stringFlag('debug, info, warn or error (default info).', 'info', 'LEVEL'), (v) => ((LOG_LEVELS as readonly string[]).includes(v) ? undefined : `must be one of ${LOG_LEVELS.join(', ')}`)),
  log_format: refine(
    stringFlag('How log lines are written: json (one object per line, for journald and jq) or text (for people at a terminal; coloured when stdout is one and NO_COLOR is unset). Default: json.', 'json', 'FORMAT'),
    (v) => ((LOG_FORMATS as readonly string[]).includes(v) ? undefined : `must be one of ${LOG_FORMATS.join(', ')}`),
  ),
  principal: optionalStringFlag('Authenticate to the master as this principal (its secret in --secret_file), and register the framework with it (FrameworkInfo.principal). Or set DRYDOCK_CREDENTIALS=principal:secret (or \'Bearer <token>\'). Default: none, anonymous.', 'NAME'),
  secret_file: optionalStringFlag('File holding the secret of --principal (or \'principal secret\', or {"token": ...}); refused when others can read it. Under systemd: LoadCredential= and %d/secret. Default: none.', 'FILE'),
  tls_ca_file: optionalStringFlag('PEM CA certificate(s) to verify the master with; the master is then asked over https (a --master of http://host:port stays plain). Default: none, plain HTTP.', 'FILE'),
  tls_cert_file: optionalStringFlag('PEM certificate (chain): the HTTP API serves HTTPS with it (plain HTTP to the port then gets a 400 that says to use https://), and, with --tls_ca_file, it is presented to a master that wants a client certificate (mutual TLS). Alone it does not make the master be asked over https. Needs --tls_key_file. Default: none, plain HTTP.', 'FILE'),
  tls_key_file: optionalStringFlag('PEM private key of --tls_cert_file; refused when others can read it. Default: none.', 'FILE'),
  // One CA both ways, as on the agent (libprocess' LIBPROCESS_SSL_CA_FILE): the cluster's CA signs
  // the master's certificate and those of the API's clients alike.
  tls_require_client_cert: boolFlag('Mutual TLS on the HTTP API: refuse clients without a certificate from --tls_ca_file (the same CA that verifies the master), at the TLS handshake. Needs --tls_cert_file, --tls_key_file and --tls_ca_file; as --tls_ca_file also makes the master be asked over https, give --master=http://host:port for a plain master. Default: false.', false),
  tls_ciphers: tlsCiphersFlag(),
  credentials: optionalStringFlag('Principals allowed to call the HTTP API, in the master\'s --credentials formats: JSON {"credentials":[{"principal":...,"secret":...,"tokens":[...]}]} or one "principal secret" per line; refused when others can read it. No ACLs: every principal in it may do everything. Presented credentials are checked even where not required. Command line only (DRYDOCK_CREDENTIALS is the scheduler\'s own credential towards the master); under systemd: LoadCredential= and --credentials=%d/credentials. Default: none.', 'FILE'),
  authenticate_http_readwrite: boolFlag('Require credentials (--credentials) for calls to the HTTP API that change state: POST (plan verbs, pod restart and replace) and every method other than GET and HEAD (default false). /v1/health stays open.', false),
  authenticate_http_readonly: boolFlag('Require credentials for the HTTP API\'s GETs: plans, pods, configurations (default false). /v1/health stays open, for probes.', false),
};

export type SchedulerFlagValues = FlagValues<typeof SCHEDULER_FLAGS>;

/** Who may call the scheduler's HTTP API: the flags as given (the file is read at start). */
export interface ApiSecurityConfig {
  readonly authenticateHttpReadwrite: boolean;
  readonly authenticateHttpReadonly: boolean;
  readonly credentialsFile: string | undefined;
}

/** The API's TLS files: undefined for plain HTTP. */
export interface ApiTlsConfig {
  readonly certFile: string;
  readonly keyFile: string;
  /** With requireClientCert: --tls_ca_file, the CA client certificates must chain to. */
  readonly caFile?: string | undefined;
  /** --tls_require_client_cert: refuse clients without a certificate from caFile. */
  readonly requireClientCert: boolean;
  /** --tls_ciphers: what the API's HTTPS offers (OpenSSL cipher list). */
  readonly ciphers: string;
}

export type SchedulerConfigResult =
  | { kind: 'ok'; values: SchedulerFlagValues; sources: Readonly<Record<keyof typeof SCHEDULER_FLAGS, 'default' | 'env' | 'flag'>>; apiSecurity: ApiSecurityConfig; apiTls: ApiTlsConfig | undefined }
  | { kind: 'help'; text: string }
  | { kind: 'error'; error: string };

/**
 * The environment the flags are resolved from: all of it but DRYDOCK_CREDENTIALS. That variable
 * has meant the scheduler's own credential towards the master (`principal:secret`) from the
 * start, as for the CLI; read as `--credentials` it would become a file name, and the error
 * for a missing file would print the secret. Pure.
 */
export function schedulerFlagEnv(env: Readonly<Record<string, string | undefined>>): Record<string, string | undefined> {
  const out: Record<string, string | undefined> = { ...env };
  delete out[CREDENTIALS_ENV];
  return out;
}

/** What the security flags need of each other, or undefined when they fit. Pure. */
export function apiSecurityProblem(
  v: Pick<SchedulerFlagValues, 'authenticate_http_readwrite' | 'authenticate_http_readonly' | 'credentials' | 'tls_cert_file' | 'tls_key_file' | 'tls_ca_file' | 'tls_require_client_cert'>,
): string | undefined {
  const auth = (['authenticate_http_readwrite', 'authenticate_http_readonly'] as const).filter((f) => v[f]);
  if (auth.length > 0 && v.credentials === undefined) return `--${auth[0]} needs --credentials=FILE (the principals and secrets to check)`;
  if ((v.tls_cert_file === undefined) !== (v.tls_key_file === undefined)) return '--tls_cert_file and --tls_key_file go together';
  if (v.tls_require_client_cert && v.tls_ca_file === undefined) return '--tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)';
  if (v.tls_require_client_cert && v.tls_cert_file === undefined) return '--tls_require_client_cert needs --tls_cert_file and --tls_key_file';
  return undefined;
}

/** Resolves the flags and checks them together. Pure. */
export function resolveSchedulerConfig(argv: readonly string[], env: Readonly<Record<string, string | undefined>>): SchedulerConfigResult {
  const r: FlagResult<typeof SCHEDULER_FLAGS> = resolveFlags(PROGRAM, SUMMARY, SCHEDULER_FLAGS, argv, schedulerFlagEnv(env));
  if (r.kind !== 'ok') return r;
  const v = r.values;
  if (v.spec === '') return { kind: 'error', error: '--spec is required' };
  const problem = apiSecurityProblem(v);
  if (problem !== undefined) return { kind: 'error', error: problem };
  return {
    kind: 'ok',
    values: v,
    sources: r.sources,
    apiSecurity: Object.freeze({ authenticateHttpReadwrite: v.authenticate_http_readwrite, authenticateHttpReadonly: v.authenticate_http_readonly, credentialsFile: v.credentials }),
    apiTls:
      v.tls_cert_file === undefined || v.tls_key_file === undefined
        ? undefined
        : Object.freeze(
            v.tls_require_client_cert
              ? { certFile: v.tls_cert_file, keyFile: v.tls_key_file, caFile: v.tls_ca_file, requireClientCert: true, ciphers: v.tls_ciphers }
              : { certFile: v.tls_cert_file, keyFile: v.tls_key_file, requireClientCert: false, ciphers: v.tls_ciphers },
          ),
  };
}

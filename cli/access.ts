/**
 * The CLI's credential and TLS options, global to every command: `--principal` with
 * `--secret_file`, `DRYDOCK_CREDENTIALS`, `--tls_ca_file` and a client certificate. The master
 * and a service scheduler are asked with the same ones. Which value counts (flags over the
 * environment) is `cliAccessSources`, pure; the files are read by io/client-auth.ts, which
 * refuses a secret file other users can read.
 *
 * With `--master=etcd://...` the CLI reads the election in etcd to find the leader, through
 * etcd's own TLS and user (`--etcd_ca_file`, `--etcd_cert_file`, `--etcd_key_file`,
 * `--etcd_user`, `--etcd_password_file`): the agent's five flags, read with the agent's checks
 * (io/etcd-access.ts). etcd's TLS is not the master's, so the `--tls_*` files are not used for it.
 */

import { Option } from 'commander';
import { CREDENTIALS_ENV, given, loadClientAccess, type ClientAccess, type CredentialSources, type TlsFiles } from '../io/client-auth.js';
import { etcdAuthProblem, loadEtcdAccess, type EtcdAuthFiles, type FileReader } from '../io/etcd-access.js';
import { readSecretFile } from '../io/secrets.js';
import type { Parsed } from '../shared/credentials.js';
import type { EtcdAccess } from '../shared/detection.js';

/** The global flags as commander hands them over. */
export interface AccessFlags {
  principal?: string;
  secret_file?: string;
  tls_ca_file?: string;
  tls_cert_file?: string;
  tls_key_file?: string;
  etcd_ca_file?: string;
  etcd_cert_file?: string;
  etcd_key_file?: string;
  etcd_user?: string;
  etcd_password_file?: string;
}

/** The options, for `program.addOption`. */
export function accessOptions(): Option[] {
  return [
    new Option('--principal <name>', 'authenticate as this principal (default: $DRYDOCK_PRINCIPAL); the secret is in --secret_file'),
    new Option('--secret_file <file>', "file holding the principal's secret, or 'principal secret', or {\"token\": ...}; must not be readable by others (default: $DRYDOCK_SECRET_FILE). Or set DRYDOCK_CREDENTIALS=principal:secret, or 'Bearer <token>'"),
    new Option('--tls_ca_file <file>', "PEM CA certificate(s) to verify the master and the scheduler with; both are then asked over https unless --master or --scheduler says http:// (default: $DRYDOCK_TLS_CA_FILE)"),
    new Option('--tls_cert_file <file>', 'PEM client certificate, for a master that wants one (mutual TLS); with --tls_key_file (default: $DRYDOCK_TLS_CERT_FILE)'),
    new Option('--tls_key_file <file>', 'PEM key of --tls_cert_file; must not be readable by others (default: $DRYDOCK_TLS_KEY_FILE)'),
    new Option('--etcd_ca_file <file>', "with --master=etcd://...: PEM CA certificate(s) to verify etcd with; etcd is then read over https (default: $DRYDOCK_ETCD_CA_FILE)"),
    new Option('--etcd_cert_file <file>', "with --master=etcd://...: PEM client certificate for an etcd with --client-cert-auth; with --etcd_key_file (default: $DRYDOCK_ETCD_CERT_FILE)"),
    new Option('--etcd_key_file <file>', 'PEM key of --etcd_cert_file; must not be readable by others (default: $DRYDOCK_ETCD_KEY_FILE)'),
    new Option('--etcd_user <name>', 'with --master=etcd://...: etcd user (needs read on PREFIX/election/); with --etcd_password_file (default: $DRYDOCK_ETCD_USER)'),
    new Option('--etcd_password_file <file>', "file holding --etcd_user's password, one line; must not be readable by others (default: $DRYDOCK_ETCD_PASSWORD_FILE)"),
  ];
}

/** Which credential and TLS files the flags and the environment name. Pure. */
export function cliAccessSources(flags: AccessFlags, env: Readonly<Record<string, string | undefined>>): { sources: CredentialSources; tls: TlsFiles } {
  const file = (flag: string | undefined, name: string, envName: string): string | undefined => given(flag, name, env, envName)?.value;
  return {
    sources: {
      principal: given(flags.principal, '--principal', env, 'DRYDOCK_PRINCIPAL'),
      secretFile: given(flags.secret_file, '--secret_file', env, 'DRYDOCK_SECRET_FILE'),
      inline: env[CREDENTIALS_ENV],
    },
    tls: {
      caFile: file(flags.tls_ca_file, '--tls_ca_file', 'DRYDOCK_TLS_CA_FILE'),
      certFile: file(flags.tls_cert_file, '--tls_cert_file', 'DRYDOCK_TLS_CERT_FILE'),
      keyFile: file(flags.tls_key_file, '--tls_key_file', 'DRYDOCK_TLS_KEY_FILE'),
    },
  };
}

/** Reads what the flags and environment name into the CLI's access; the error names the flag or variable and the file. */
export function loadCliAccess(flags: AccessFlags, env: Readonly<Record<string, string | undefined>>): Parsed<ClientAccess> {
  const { sources, tls } = cliAccessSources(flags, env);
  return loadClientAccess(sources, tls);
}

/** The etcd flags and their variables, in the order of `EtcdAuthFiles`. */
const ETCD_FLAGS = [
  ['caFile', 'etcd_ca_file', '--etcd_ca_file', 'DRYDOCK_ETCD_CA_FILE'],
  ['certFile', 'etcd_cert_file', '--etcd_cert_file', 'DRYDOCK_ETCD_CERT_FILE'],
  ['keyFile', 'etcd_key_file', '--etcd_key_file', 'DRYDOCK_ETCD_KEY_FILE'],
  ['user', 'etcd_user', '--etcd_user', 'DRYDOCK_ETCD_USER'],
  ['passwordFile', 'etcd_password_file', '--etcd_password_file', 'DRYDOCK_ETCD_PASSWORD_FILE'],
] as const satisfies ReadonlyArray<readonly [keyof EtcdAuthFiles, keyof AccessFlags, string, string]>;

/**
 * Which etcd files and user the flags and the environment name (flags win; an empty variable
 * is unset, an empty flag an error). Pure.
 */
export function cliEtcdFiles(flags: AccessFlags, env: Readonly<Record<string, string | undefined>>): Parsed<EtcdAuthFiles> {
  const files: Record<keyof EtcdAuthFiles, string | undefined> = { caFile: undefined, certFile: undefined, keyFile: undefined, user: undefined, passwordFile: undefined };
  for (const [field, key, flag, envName] of ETCD_FLAGS) {
    const g = given(flags[key], flag, env, envName);
    if (g?.value === '') return { ok: false, error: `${flag} must not be empty` };
    files[field] = g?.value;
  }
  return { ok: true, value: Object.freeze(files) };
}

/** Whether a resolved master spec (client.ts resolveMaster) is etcd's. Pure. */
export function isEtcdMaster(master: string): boolean {
  return master.trim().startsWith('etcd://');
}

/**
 * What is wrong with the etcd flags for this master (resolved: flag, DRYDOCK_MASTER or the
 * default), or undefined: the pairs, and flags given for a master that is not etcd:// (as the
 * agent says it). Pure.
 */
export function cliEtcdProblem(flags: AccessFlags, env: Readonly<Record<string, string | undefined>>, master: string): string | undefined {
  const files = cliEtcdFiles(flags, env);
  if (!files.ok) return files.error;
  return etcdAuthProblem(files.value, isEtcdMaster(master), '--master=etcd://... (or DRYDOCK_MASTER)');
}

/**
 * etcd's access for an etcd:// master, its files read and checked (a key or password file
 * others may read is refused; the error names the flag and the file, never the password);
 * undefined for any other master.
 */
export function loadCliEtcdAccess(flags: AccessFlags, env: Readonly<Record<string, string | undefined>>, master: string, read: FileReader = readSecretFile): Parsed<EtcdAccess | undefined> {
  const problem = cliEtcdProblem(flags, env, master);
  if (problem !== undefined) return { ok: false, error: problem };
  if (!isEtcdMaster(master)) return { ok: true, value: undefined };
  const files = cliEtcdFiles(flags, env);
  if (!files.ok) return files;
  const r = loadEtcdAccess(files.value, read);
  return r.ok ? { ok: true, value: r.access } : r;
}

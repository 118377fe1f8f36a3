/**
 * The CLI's credential and TLS options, global to every command: `--principal` with
 * `--secret_file`, `DRYDOCK_CREDENTIALS`, `--tls_ca_file` and a client certificate. The master
 * and a service scheduler are asked with the same ones. Which value counts (flags over the
 * environment) is `cliAccessSources`, pure; the files are read by io/client-auth.ts, which
 * refuses a secret file other users can read.
 */

import { Option } from 'commander';
import { CREDENTIALS_ENV, given, loadClientAccess, type ClientAccess, type CredentialSources, type TlsFiles } from '../io/client-auth.js';
import type { Parsed } from '../shared/credentials.js';

/** The global flags as commander hands them over. */
export interface AccessFlags {
  principal?: string;
  secret_file?: string;
  tls_ca_file?: string;
  tls_cert_file?: string;
  tls_key_file?: string;
}

/** The options, for `program.addOption`. */
export function accessOptions(): Option[] {
  return [
    new Option('--principal <name>', 'authenticate as this principal (default: $DRYDOCK_PRINCIPAL); the secret is in --secret_file'),
    new Option('--secret_file <file>', "file holding the principal's secret, or 'principal secret', or {\"token\": ...}; must not be readable by others (default: $DRYDOCK_SECRET_FILE). Or set DRYDOCK_CREDENTIALS=principal:secret, or 'Bearer <token>'"),
    new Option('--tls_ca_file <file>', "PEM CA certificate(s) to verify the master and the scheduler with; both are then asked over https unless --master or --scheduler says http:// (default: $DRYDOCK_TLS_CA_FILE)"),
    new Option('--tls_cert_file <file>', 'PEM client certificate, for a master that wants one (mutual TLS); with --tls_key_file (default: $DRYDOCK_TLS_CERT_FILE)'),
    new Option('--tls_key_file <file>', 'PEM key of --tls_cert_file; must not be readable by others (default: $DRYDOCK_TLS_KEY_FILE)'),
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

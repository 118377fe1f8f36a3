/**
 * The options of the master's one etcd client (leadership, the registry and the standby's
 * election watch all share it), from `--etcd` and the etcd security flags: TLS towards etcd
 * (`--etcd_ca_file`, and a client certificate for etcd's `--client-cert-auth`) and etcd's own
 * user/password authentication (`--etcd_user`, `--etcd_password_file`). Files are read through
 * the reader given, so the choice of options is a pure function with table tests. A first read
 * at start tells a refused user (fatal: the flags are wrong) from an etcd not reachable yet.
 */

import { EtcdAuthenticationFailedError, EtcdPermissionDeniedError, GRPCInvalidArgumentError, GRPCUnavailableError, type Etcd3, type IOptions } from 'etcd3';
import { readEtcdSecrets, type FileReader } from '../../io/etcd-access.js';
import type { EtcdAuthConfig } from './config.js';

export type { FileReader };

/**
 * The etcd3 client options, or why the files cannot be used. Any TLS file turns TLS on:
 * `https://` endpoints and gRPC SSL credentials (the system's CAs when no --etcd_ca_file is
 * given).
 */
export function etcdClientOptions(endpoints: readonly string[], auth: EtcdAuthConfig, read: FileReader): { ok: true; options: IOptions } | { ok: false; error: string } {
  // The files are read and checked as the agent's (io/etcd-access.ts); only their shape for gRPC is the master's.
  const r = readEtcdSecrets(auth, read);
  if (!r.ok) return r;
  const { tls, ca, cert, key, user } = r.secrets;
  const options: IOptions = { hosts: endpoints.map((h) => `${tls ? 'https' : 'http'}://${h}`) };
  if (tls) {
    const credentials: { rootCertificate: Buffer; privateKey?: Buffer; certChain?: Buffer } = {
      // gRPC takes a missing root certificate as "the system's CAs"; etcd3's type insists on a Buffer.
      rootCertificate: (ca === undefined ? undefined : Buffer.from(ca)) as Buffer,
    };
    if (cert !== undefined && key !== undefined) {
      credentials.certChain = Buffer.from(cert);
      credentials.privateKey = Buffer.from(key);
    }
    options.credentials = credentials;
  }
  if (user !== undefined) options.auth = { username: user.name, password: user.password };
  return { ok: true, options };
}

/** What a first read of etcd says: fine, refused (the flags are wrong: stop), or not reachable (yet). */
export type EtcdProbe = { kind: 'ok' } | { kind: 'refused'; error: string } | { kind: 'unreachable'; error: string };

/** Classifies a failed first read. Pure; messages name the flags to check, never the password. */
export function classifyEtcdError(e: unknown, auth: EtcdAuthConfig, prefix: string): EtcdProbe {
  const message = e instanceof Error ? e.message : String(e);
  const user = auth.user === undefined ? 'the master' : `user '${auth.user}'`;
  if (e instanceof EtcdAuthenticationFailedError) return { kind: 'refused', error: `etcd refused ${user}: ${message} (check --etcd_user and --etcd_password_file)` };
  if (e instanceof EtcdPermissionDeniedError) return { kind: 'refused', error: `etcd ${user} may not read ${prefix}/: grant it a role with readwrite on that prefix (etcdctl role grant-permission ROLE readwrite ${prefix}/ --prefix=true)` };
  if (e instanceof GRPCInvalidArgumentError && /user name is empty/.test(message)) return { kind: 'refused', error: 'etcd requires authentication: give --etcd_user and --etcd_password_file' };
  if (e instanceof GRPCUnavailableError) {
    const tls = auth.caFile !== undefined || auth.certFile !== undefined;
    const hint = tls
      ? 'if it is up, check that it serves TLS, that --etcd_ca_file is the CA of its certificate, and whether it requires a client certificate (--etcd_cert_file)'
      : 'if it is up and serves TLS, give --etcd_ca_file';
    return { kind: 'unreachable', error: `${message.replace(/\s*Resolution note:\s*$/, '')}; ${hint}` };
  }
  return { kind: 'unreachable', error: message };
}

/** Reads the election prefix once, bounded by `timeoutMs`. */
export async function probeEtcd(client: Etcd3, prefix: string, auth: EtcdAuthConfig, timeoutMs: number): Promise<EtcdProbe> {
  let timer: NodeJS.Timeout | undefined;
  try {
    await Promise.race([
      client.getAll().prefix(`${prefix}/`).limit(1).keys(),
      new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer from etcd within ${timeoutMs} ms`)), timeoutMs))),
    ]);
    return { kind: 'ok' };
  } catch (e) {
    return classifyEtcdError(e, auth, prefix);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * How a reader of the election (the agent, with `--master=etcd://...`) reaches a secured etcd:
 * TLS (`--etcd_ca_file`, and a client certificate for etcd's `--client-cert-auth`) and etcd's
 * own users (`--etcd_user`, `--etcd_password_file`). The flags mean what the master's do and are
 * read with the same checks: certificates may have any mode, the key and the password file must
 * not be readable by others, the password is one line. Files are read through the reader given,
 * so the checks have table tests.
 */

import { plainEtcdAccess, type EtcdAccess, type EtcdUser } from '../shared/detection.js';
import { readPemCertificate, readSecretFile, type SecretRead } from './secrets.js';
import { clientTransport } from './transport.js';

/** The etcd security flags as given (paths; the user name). */
export interface EtcdAuthFiles {
  readonly caFile: string | undefined;
  readonly certFile: string | undefined;
  readonly keyFile: string | undefined;
  readonly user: string | undefined;
  readonly passwordFile: string | undefined;
}

/** No etcd security flag given. */
export const NO_ETCD_AUTH: EtcdAuthFiles = Object.freeze({ caFile: undefined, certFile: undefined, keyFile: undefined, user: undefined, passwordFile: undefined });

/** Reads a file: `what` names the flag in errors; `allowOpenMode` for public material (certificates). */
export type FileReader = (path: string, what: string, allowOpenMode: boolean) => SecretRead;

/** Whether any etcd security flag is given. Pure. */
export function etcdAuthGiven(f: EtcdAuthFiles): boolean {
  return [f.caFile, f.certFile, f.keyFile, f.user, f.passwordFile].some((x) => x !== undefined);
}

/**
 * What the etcd flags need of each other, named as the operator typed them; `forWhat` is the
 * flag they only make sense with (`--master=etcd://...` on the agent). Pure.
 */
export function etcdAuthProblem(f: EtcdAuthFiles, etcdInUse: boolean, forWhat: string): string | undefined {
  if ((f.certFile === undefined) !== (f.keyFile === undefined)) return '--etcd_cert_file and --etcd_key_file go together';
  if ((f.user === undefined) !== (f.passwordFile === undefined)) return '--etcd_user and --etcd_password_file go together';
  if (etcdAuthGiven(f) && !etcdInUse) return `--etcd_ca_file, --etcd_cert_file and --etcd_user need ${forWhat}`;
  return undefined;
}

/** The PEM material and the user, read and checked; no sockets. */
export interface EtcdSecrets {
  /** Whether etcd is reached over TLS: any TLS file turns it on (the system's CAs without --etcd_ca_file). */
  readonly tls: boolean;
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
  readonly user: EtcdUser | undefined;
}

/** Reads the etcd files through `read`; an error names the flag and the file, never the password. */
export function readEtcdSecrets(f: EtcdAuthFiles, read: FileReader = readSecretFile): { ok: true; secrets: EtcdSecrets } | { ok: false; error: string } {
  const tls = f.caFile !== undefined || f.certFile !== undefined;
  let ca: string | undefined;
  let cert: string | undefined;
  let key: string | undefined;
  if (f.caFile !== undefined) {
    const r = readPemCertificate(f.caFile, '--etcd_ca_file', read);
    if (!r.ok) return r;
    ca = r.text;
  }
  if (f.certFile !== undefined && f.keyFile !== undefined) {
    const c = readPemCertificate(f.certFile, '--etcd_cert_file', read);
    if (!c.ok) return c;
    const k = read(f.keyFile, '--etcd_key_file', false);
    if (!k.ok) return k;
    if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(k.text)) return { ok: false, error: `--etcd_key_file ${f.keyFile} holds no PEM private key` };
    cert = c.text;
    key = k.text;
  }
  let user: EtcdUser | undefined;
  if (f.user !== undefined && f.passwordFile !== undefined) {
    const pw = read(f.passwordFile, '--etcd_password_file', false);
    if (!pw.ok) return pw;
    // One line, as `echo secret > file` writes it: the trailing newline is not part of the password.
    const password = pw.text.replace(/\r?\n$/, '');
    if (password === '') return { ok: false, error: `--etcd_password_file ${f.passwordFile} is empty` };
    if (password.includes('\n')) return { ok: false, error: `--etcd_password_file ${f.passwordFile} holds more than one line` };
    user = Object.freeze({ name: f.user, password });
  }
  return { ok: true, secrets: Object.freeze({ tls, ca, cert, key, user }) };
}

/**
 * The gateway access for the files: https with a fetch of its own (etcd's CA and client
 * certificate, never the master's) when TLS is on, else plain http with the global fetch.
 */
export function loadEtcdAccess(f: EtcdAuthFiles, read: FileReader = readSecretFile): { ok: true; access: EtcdAccess } | { ok: false; error: string } {
  const s = readEtcdSecrets(f, read);
  if (!s.ok) return s;
  const { tls, ca, cert, key, user } = s.secrets;
  if (!tls) return { ok: true, access: { ...plainEtcdAccess((url, init) => fetch(url, init)), user } };
  const transport = clientTransport({ tls: { ca, cert, key } });
  return { ok: true, access: { scheme: 'https', fetch: (url, init) => transport.fetch(url, init), user } };
}

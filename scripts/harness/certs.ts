/**
 * A throwaway certificate authority for the local cluster (`npm start -- --secure`), tests and
 * benchmarks: a self-signed CA, a server certificate for loopback and this host (SANs
 * 127.0.0.1, ::1, localhost and the hostname), and a client certificate (for mutual TLS), made
 * with the system's `openssl` (Debian's package; CI installs it). Keys are written 0600.
 */

import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

export const OPENSSL_BIN = '/usr/bin/openssl';

export interface Certificates {
  /** The CA certificate (PEM): what clients pass as --tls_ca_file. */
  caFile: string;
  caKeyFile: string;
  /** Server certificate and key for master and agents (--tls_cert_file, --tls_key_file). */
  certFile: string;
  keyFile: string;
  /** A client certificate and key signed by the same CA (mutual TLS). */
  clientCertFile: string;
  clientKeyFile: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync(OPENSSL_BIN, args, { cwd, stdio: ['ignore', 'ignore', 'pipe'], timeout: 30_000 });
}

/**
 * Makes a CA and its certificates in `dir` (created if missing). `name` prefixes the files so
 * a test can make two unrelated CAs in one directory (a wrong-CA case).
 */
export function makeCertificates(dir: string, name = 'drydock', extraHosts: readonly string[] = []): Certificates {
  if (!existsSync(OPENSSL_BIN)) throw new Error(`${OPENSSL_BIN} is missing: apt-get install openssl`);
  mkdirSync(dir, { recursive: true });
  const f = (s: string): string => join(dir, `${name}-${s}`);
  const c: Certificates = {
    caFile: f('ca.pem'),
    caKeyFile: f('ca-key.pem'),
    certFile: f('server.pem'),
    keyFile: f('server-key.pem'),
    clientCertFile: f('client.pem'),
    clientKeyFile: f('client-key.pem'),
  };
  const days = '3650';
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', c.caKeyFile, '-out', c.caFile, '-days', days, '-subj', `/CN=${name} test CA`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  const hosts = ['localhost', hostname(), ...extraHosts];
  const san = ['IP:127.0.0.1', 'IP:::1', ...[...new Set(hosts)].map((h) => (/^[0-9.]+$/.test(h) ? `IP:${h}` : `DNS:${h}`))].join(',');
  const sign = (key: string, cert: string, cn: string, ext: string): void => {
    const csr = `${cert}.csr`;
    const extFile = `${cert}.ext`;
    writeFileSync(extFile, ext);
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', key, '-out', csr, '-subj', `/CN=${cn}`], dir);
    openssl(['x509', '-req', '-in', csr, '-CA', c.caFile, '-CAkey', c.caKeyFile, '-CAcreateserial', '-out', cert, '-days', days, '-extfile', extFile], dir);
  };
  sign(c.keyFile, c.certFile, 'drydock server', `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  sign(c.clientKeyFile, c.clientCertFile, 'drydock client', 'extendedKeyUsage=clientAuth\n');
  for (const k of [c.caKeyFile, c.keyFile, c.clientKeyFile]) chmodSync(k, 0o600);
  return c;
}

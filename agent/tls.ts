/**
 * The agent's TLS material, read once at start: its own certificate and key serve the agent API
 * over HTTPS and are presented to the master as the client certificate (one certificate for
 * both roles, as libprocess does); `--tls_ca_file` verifies the master, and only its presence
 * turns the master connection into wss:// and https:// (a certificate alone does not: an agent
 * may serve its API over TLS and still reach a plain master). With `--tls_require_client_cert`
 * the same CA is the one the API's clients must present a certificate from (one CA both ways,
 * as libprocess' LIBPROCESS_SSL_CA_FILE).
 */

import { loadServerTls, type ServerTls } from '../io/tls-server.js';
import { loadClientTls, type ClientTls } from '../io/transport.js';
import type { AgentTlsFiles } from './config.js';

export interface AgentTls {
  /** The agent API's server side; undefined: plain HTTP. */
  readonly server: ServerTls | undefined;
  /** Towards the master; undefined: plain ws:// and http://. */
  readonly client: ClientTls | undefined;
}

/** Reads the files; an unsafe key mode or a key that does not match its certificate is an error naming the flag and file. */
export function loadAgentTls(files: AgentTlsFiles): { ok: true; tls: AgentTls } | { ok: false; error: string } {
  let server: ServerTls | undefined;
  if (files.certFile !== undefined && files.keyFile !== undefined) {
    // The CA goes to the server side only for mutual TLS: without it no client certificate is asked for.
    const s = loadServerTls({ certFile: files.certFile, keyFile: files.keyFile, ciphers: files.ciphers, ...(files.requireClientCert ? { caFile: files.caFile, requireClientCert: true } : {}) });
    if (!s.ok) return s;
    server = s.tls;
  }
  let client: ClientTls | undefined;
  if (files.caFile !== undefined) {
    const c = loadClientTls({ caFile: files.caFile, certFile: files.certFile, keyFile: files.keyFile });
    if (!c.ok) return c;
    client = c.tls;
  }
  return { ok: true, tls: { server, client } };
}

/**
 * How a client reaches a Drydock daemon: over TLS that verifies the daemon with `--tls_ca_file`
 * (optionally presenting a client certificate, for `--tls_require_client_cert`), and with the
 * `Authorization` header of its credential. One object per client (the CLI, the service
 * scheduler, the agent's session, test clients), built once from files and reused by every
 * request, so a connection pool is shared.
 *
 * fetch is Node's own; the undici Agent only carries the TLS options (Node's fetch takes a
 * `dispatcher`, but offers no way to set a CA without one). undici is loaded at the first TLS
 * request, not with the module: it takes some 90 ms, a CLI call without TLS most of its time.
 */

import type { Dispatcher } from 'undici';
import { authorizationHeader, type ClientCredential } from '../shared/credentials.js';
import { readPemCertificate, readSecretFile } from './secrets.js';

/** PEM material for the client side of TLS. */
export interface ClientTls {
  readonly ca: string | undefined;
  readonly cert: string | undefined;
  readonly key: string | undefined;
}

export interface ClientTransport {
  /** Global fetch with this transport's TLS options; callers add `headers` themselves. */
  readonly fetch: typeof fetch;
  /** Headers every request carries (Authorization when there is a credential). */
  readonly headers: Readonly<Record<string, string>>;
  /** Options for a `ws` WebSocket client: the same TLS material and headers. */
  readonly ws: { ca?: string; cert?: string; key?: string; headers?: Record<string, string> };
  /** Whether TLS material was given (https:// and wss:// are then the schemes to use). */
  readonly tls: boolean;
}

/** Plain HTTP, no credential: what every client does without security flags. */
const plainFetch: typeof fetch = (input, init) => fetch(input, init);
export const PLAIN_TRANSPORT: ClientTransport = Object.freeze({ fetch: plainFetch, headers: Object.freeze({}), ws: Object.freeze({}), tls: false });

/** Builds a transport. */
export function clientTransport(o: { credential?: ClientCredential | undefined; tls?: ClientTls | undefined }): ClientTransport {
  const headers: Record<string, string> = o.credential === undefined ? {} : { authorization: authorizationHeader(o.credential) };
  const tls = o.tls;
  if (tls === undefined) return { fetch: PLAIN_TRANSPORT.fetch, headers, ws: o.credential === undefined ? {} : { headers }, tls: false };
  const connect = { ...(tls.ca === undefined ? {} : { ca: tls.ca }), ...(tls.cert === undefined ? {} : { cert: tls.cert }), ...(tls.key === undefined ? {} : { key: tls.key }) };
  let dispatcher: Promise<Dispatcher> | undefined;
  const tlsFetch: typeof fetch = async (input, init) => {
    dispatcher ??= import('undici').then(({ Agent }) => new Agent({ connect }));
    return fetch(input, { ...(init ?? {}), dispatcher: await dispatcher } as RequestInit);
  };
  return { fetch: tlsFetch, headers, ws: { ...connect, ...(o.credential === undefined ? {} : { headers }) }, tls: true };
}

/** Reads the client's TLS files (`--tls_ca_file`, and a client certificate and key); undefined when none is given. */
export function loadClientTls(files: { caFile?: string | undefined; certFile?: string | undefined; keyFile?: string | undefined }): { ok: true; tls: ClientTls | undefined } | { ok: false; error: string } {
  if (files.caFile === undefined && files.certFile === undefined && files.keyFile === undefined) return { ok: true, tls: undefined };
  if ((files.certFile === undefined) !== (files.keyFile === undefined)) return { ok: false, error: '--tls_cert_file and --tls_key_file go together' };
  let ca: string | undefined;
  let cert: string | undefined;
  let key: string | undefined;
  if (files.caFile !== undefined) {
    // A CA certificate is public: any mode is fine.
    const r = readPemCertificate(files.caFile, '--tls_ca_file');
    if (!r.ok) return r;
    ca = r.text;
  }
  if (files.certFile !== undefined && files.keyFile !== undefined) {
    const c = readSecretFile(files.certFile, '--tls_cert_file', true);
    if (!c.ok) return c;
    const k = readSecretFile(files.keyFile, '--tls_key_file');
    if (!k.ok) return k;
    cert = c.text;
    key = k.text;
  }
  return { ok: true, tls: { ca, cert, key } };
}

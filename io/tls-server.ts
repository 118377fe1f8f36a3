/**
 * HTTPS and WSS on a daemon's one port (`--tls_cert_file`, `--tls_key_file`), for the master and
 * the agent API alike. The port still accepts plain TCP: the first byte of each connection says
 * which protocol the client speaks (a TLS ClientHello starts with a handshake record, 0x16; an
 * HTTP request starts with a method name in ASCII), so a client that forgot `https://` is told
 * so in an HTTP 400 it can read, instead of hanging or seeing a TLS alert it cannot explain.
 * TLS connections go on to Node's own TLS handling, after the sniffed bytes are pushed back.
 *
 * Without TLS the same entry point builds a plain `node:http` server, so each daemon has one
 * construction path. The sniffing decision and the refusal text are pure and unit-tested.
 *
 * What both kinds of port share:
 * - TLS offers AEAD suites only: TLS 1.3, and on TLS 1.2 ECDHE with AES-GCM or
 *   CHACHA20-POLY1305 (`DEFAULT_TLS_CIPHERS`; `--tls_ciphers` changes the TLS 1.2 list, and the
 *   TLS 1.3 suites too when it names them). Nothing older than TLS 1.2.
 * - A request HTTP cannot parse (headers over Node's limit, garbage) gets its answer, once per
 *   connection (431, 408 or 400, `clientErrorAnswer`), and the connection is closed only after
 *   the client had time to read it: over TLS Node's parser reports the same error again for
 *   every further chunk the client sends, and Node's own answer (written, then destroyed at
 *   once) is lost in the TLS layer, so an oversized header used to end in a dropped connection.
 */

import { createServer as createPlainServer, maxHeaderSize, type IncomingMessage, type RequestListener, type ServerResponse } from 'node:http';
import { Server as HttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext, type SecureVersion } from 'node:tls';
import { readPemCertificate, readSecretFile } from './secrets.js';
import { refine, stringFlag, type Flag } from '../shared/flags.js';

/** The TLS record type of a handshake: every TLS (and SSLv3) ClientHello starts with it. */
export const TLS_HANDSHAKE_RECORD = 0x16;

/** What the first bytes of a connection say: TLS, something else (plain HTTP), or nothing yet. */
export type FirstBytes = 'tls' | 'plain' | 'undecided';

/** Classifies a connection by its first bytes. Pure. */
export function sniffTransport(first: Uint8Array): FirstBytes {
  if (first.length === 0) return 'undecided';
  return first[0] === TLS_HANDSHAKE_RECORD ? 'tls' : 'plain';
}

/** The body a plain-HTTP client gets on a TLS port. */
export const PLAIN_HTTP_ON_TLS_PORT = 'This port speaks TLS: use https:// (and wss:// for agents)';

/**
 * The whole HTTP answer written to a plain-HTTP client on a TLS port: 400, text/plain, and the
 * connection closed. Pure.
 */
export function plainHttpRefusal(message: string = PLAIN_HTTP_ON_TLS_PORT): string {
  const body = `${message}\n`;
  return `HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * The TLS 1.2 suites a daemon offers unless `--tls_ciphers` says otherwise (OpenSSL names):
 * forward secrecy (ECDHE) and authenticated encryption (AES-GCM, CHACHA20-POLY1305) only; no
 * CBC suite (Lucky13-style padding oracles), no RSA key exchange, no SHA-1 MAC. TLS 1.3 keeps
 * OpenSSL's own suites, which are all AEAD.
 */
export const DEFAULT_TLS_CIPHERS = [
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/**
 * `--tls_ciphers`, the same flag on the master, the agent and drydock-scheduler (declared in
 * each daemon's config.ts from here, so the three say the same).
 */
export function tlsCiphersFlag(): Flag<string> {
  return refine(
    stringFlag(
      `Cipher suites the HTTPS port offers, in OpenSSL's cipher list syntax (see 'openssl ciphers'). Names starting with TLS_ set the TLS 1.3 suites; without any, TLS 1.3 keeps OpenSSL's (all AEAD). TLS 1.0 and 1.1 are never offered. Default: ECDHE with AES-GCM or CHACHA20-POLY1305 only (${DEFAULT_TLS_CIPHERS}).`,
      DEFAULT_TLS_CIPHERS,
      'LIST',
    ),
    (v) => (v.trim() === '' ? 'must not be empty' : undefined),
  );
}

/** The oldest protocol a daemon speaks: TLS 1.0 and 1.1 are deprecated (RFC 8996). */
export const TLS_MIN_VERSION: SecureVersion = 'TLSv1.2';

/** PEM material for the server side of TLS, read once at start. */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
  /** CA certificates client certificates must chain to (with requireClientCert). */
  readonly ca: string | undefined;
  /** Mutual TLS: refuse a client without a certificate from `ca`. */
  readonly requireClientCert: boolean;
  /**
   * The cipher list in OpenSSL syntax (`--tls_ciphers`, default `DEFAULT_TLS_CIPHERS`). Names
   * starting with `TLS_` set the TLS 1.3 suites; without any, OpenSSL's TLS 1.3 defaults stay.
   */
  readonly ciphers: string;
}

/**
 * Reads a daemon's TLS files: the certificate and CA may have any mode (they are public), the
 * key must not be readable by others. The pair is tried once here, so a key that does not
 * match its certificate stops the start with a message naming both files, not the first
 * handshake.
 */
export function loadServerTls(files: { certFile: string; keyFile: string; caFile?: string | undefined; requireClientCert?: boolean | undefined; ciphers?: string | undefined }): { ok: true; tls: ServerTls } | { ok: false; error: string } {
  const ciphers = files.ciphers ?? DEFAULT_TLS_CIPHERS;
  // A list OpenSSL cannot use (a typo, nothing it knows) stops the start, not the first handshake.
  try {
    createSecureContext({ ciphers, minVersion: TLS_MIN_VERSION });
  } catch (e) {
    return { ok: false, error: `--tls_ciphers '${ciphers.slice(0, 200)}' is no cipher list OpenSSL can use: ${e instanceof Error ? e.message : String(e)}` };
  }
  const cert = readPemCertificate(files.certFile, '--tls_cert_file');
  if (!cert.ok) return cert;
  const key = readSecretFile(files.keyFile, '--tls_key_file');
  if (!key.ok) return key;
  if (!/-----BEGIN [A-Z ]*PRIVATE KEY-----/.test(key.text)) return { ok: false, error: `--tls_key_file ${files.keyFile} holds no PEM private key` };
  let ca: string | undefined;
  if (files.caFile !== undefined) {
    const c = readPemCertificate(files.caFile, '--tls_ca_file');
    if (!c.ok) return c;
    ca = c.text;
  }
  try {
    createSecureContext({ cert: cert.text, key: key.text, ...(ca === undefined ? {} : { ca }) });
  } catch (e) {
    return { ok: false, error: `--tls_cert_file ${files.certFile} and --tls_key_file ${files.keyFile} cannot serve TLS: ${e instanceof Error ? e.message : String(e)}` };
  }
  return { ok: true, tls: { cert: cert.text, key: key.text, ca, requireClientCert: files.requireClientCert ?? false, ciphers } };
}

/** What a daemon listens with: a net.Server that can also drop its HTTP connections (http.Server's two methods). */
export interface HttpListener extends NetServer {
  closeAllConnections(): void;
  closeIdleConnections(): void;
}

/** The HTTP-level handlers, the same with and without TLS. A request HTTP cannot parse is answered here (`clientErrorAnswer`). */
export interface HttpHandlers {
  request: RequestListener;
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
}

/** Why a connection was refused before HTTP: plain HTTP on the TLS port, or a failed handshake (wrong CA, no client certificate). */
export type TransportRefusal = { kind: 'plain-http'; remote: string } | { kind: 'tls-handshake'; remote: string; error: string };

export interface HttpListenerOptions {
  /** TLS material: HTTPS and WSS on the port. Undefined: plain HTTP. */
  tls?: ServerTls | undefined;
  requestTimeoutMs?: number;
  headersTimeoutMs?: number;
  /** Told of each connection refused below HTTP (for a log line). */
  onRefused?: (r: TransportRefusal) => void;
}

/** How long a new connection may stay silent before its first byte, and a TLS handshake may take. */
export const FIRST_BYTE_TIMEOUT_MS = 10_000;
/** How long a refused client (plain HTTP on the TLS port, a request HTTP cannot parse) has to read its answer before its socket is dropped. */
const REFUSAL_LINGER_MS = 2_000;

/**
 * The whole HTTP answer to a request Node's parser refused, by the error's code: 431 for
 * headers over the limit (as Node answers on plain HTTP), 408 for a request that took too long,
 * 400 for anything else, naming the parser's code. Pure.
 */
export function clientErrorAnswer(code: string | undefined, headerLimit: number = maxHeaderSize): string {
  const [status, reason, detail] =
    code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request Header Fields Too Large', `the request line and headers exceed ${headerLimit} bytes`]
      : code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request Timeout', 'the request did not arrive in time']
        : [400, 'Bad Request', `the request is not valid HTTP/1.1${code === undefined ? '' : ` (${code})`}`];
  const body = `${status} ${reason}: ${detail}\n`;
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`;
}

/**
 * http's 'clientError', once per connection. The first error is answered (unless a response
 * is already on its way there, which the answer would corrupt) and the connection is ended;
 * the socket goes on reading, so the client can finish sending and read the answer, and is
 * dropped after REFUSAL_LINGER_MS. Later errors on the same socket (over TLS, one per chunk
 * still arriving) change nothing.
 */
function clientErrorHandler(): (err: Error, socket: Duplex) => void {
  const answered = new WeakSet<Duplex>();
  return (err, socket) => {
    if (answered.has(socket)) return;
    answered.add(socket);
    // The response on this connection, if any (node's own field, as its default handler reads it).
    const inFlight = (socket as { _httpMessage?: ServerResponse | null })._httpMessage;
    if (!socket.writable || (inFlight !== undefined && inFlight !== null && inFlight.headersSent)) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorAnswer((err as NodeJS.ErrnoException).code));
    const linger = setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
    socket.once('close', () => clearTimeout(linger));
  };
}

/** Builds the daemon's server: plain node:http, or the TLS port. The caller listens. */
export function createHttpListener(handlers: HttpHandlers, options: HttpListenerOptions = {}): HttpListener {
  const tls = options.tls;
  const server = tls === undefined ? createPlainServer(handlers.request) : new TlsPort(tls, handlers.request, options.onRefused);
  if (handlers.upgrade !== undefined) server.on('upgrade', handlers.upgrade);
  server.on('clientError', clientErrorHandler());
  if (options.requestTimeoutMs !== undefined) server.requestTimeout = options.requestTimeoutMs;
  if (options.headersTimeoutMs !== undefined) server.headersTimeout = options.headersTimeoutMs;
  return server;
}

function httpsOptions(tls: ServerTls): HttpsOptions {
  return {
    cert: tls.cert,
    key: tls.key,
    ...(tls.ca === undefined ? {} : { ca: tls.ca }),
    // Mutual TLS is all or nothing: a certificate is asked for only when it is required.
    requestCert: tls.requireClientCert,
    rejectUnauthorized: tls.requireClientCert,
    handshakeTimeout: FIRST_BYTE_TIMEOUT_MS,
    ciphers: tls.ciphers,
    minVersion: TLS_MIN_VERSION,
    // The server's order, not the client's: a client that lists a weaker suite first still gets the strongest both know.
    honorCipherOrder: true,
  };
}

function remoteOf(socket: { remoteAddress?: string | undefined; remotePort?: number | undefined }): string {
  return `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
}

/** OpenSSL's reason (`tlsv1 alert unknown ca`) rather than its whole error line. */
function tlsReason(err: Error, requireClientCert: boolean): string {
  // Node's and undici's clients hang up without an alert when they do not trust the certificate;
  // with mutual TLS a client certificate from another CA ends the same way (seen with Node 20).
  if ((err as NodeJS.ErrnoException).code === 'ECONNRESET') {
    return requireClientCert
      ? 'the client left during the handshake (does it trust the CA of this certificate? is its own certificate from the CA of --tls_ca_file?)'
      : 'the client left during the handshake (does it trust the CA of this certificate?)';
  }
  const reason = (err as { reason?: unknown }).reason;
  return typeof reason === 'string' && reason !== '' ? reason : err.message;
}

/**
 * The TLS port: an https server whose TCP connections are sniffed first. Node's TLS server
 * takes its connections through its one 'connection' listener; that listener is moved behind
 * the sniffing, so listening, timeouts, connection tracking and closing stay the https
 * server's own, and connections still being sniffed are dropped with the idle ones.
 */
class TlsPort extends HttpsServer implements HttpListener {
  readonly #onRefused: ((r: TransportRefusal) => void) | undefined;
  /** Node's TLS connection listener, called once a connection is known to speak TLS. */
  readonly #handOver: (socket: Socket) => void;
  /** Accepted, first byte not seen yet (idle by definition), or refused and lingering. */
  readonly #undecided = new Set<Socket>();
  /**
   * The peer of each raw socket, read at accept: a client that aborts its handshake is gone
   * before the TLS socket could be asked.
   */
  readonly #peers = new WeakMap<Socket, string>();

  constructor(tls: ServerTls, request: RequestListener, onRefused: ((r: TransportRefusal) => void) | undefined) {
    super(httpsOptions(tls), request);
    this.#onRefused = onRefused;
    const own = this.listeners('connection');
    // Fail loudly at start if a Node version ever takes connections another way.
    if (own.length !== 1 || typeof own[0] !== 'function') throw new Error(`the https server has ${own.length} connection listeners, expected Node's one TLS listener`);
    this.#handOver = own[0] as (socket: Socket) => void;
    this.removeAllListeners('connection');
    this.on('connection', (socket: Socket) => this.#accept(socket));
    this.on('tlsClientError', (err: Error, socket: Socket) => {
      // The TLS socket keeps its raw socket as `_parent` (node's own field; a fallback only).
      const parent = (socket as { _parent?: unknown })._parent;
      const remote = socket.remoteAddress !== undefined ? remoteOf(socket) : (parent instanceof Object && this.#peers.get(parent as Socket)) || '?';
      this.#onRefused?.({ kind: 'tls-handshake', remote, error: tlsReason(err, tls.requireClientCert) });
      socket.destroy();
    });
  }

  #accept(socket: Socket): void {
    this.#undecided.add(socket);
    this.#peers.set(socket, remoteOf(socket));
    // Errors on the raw socket (a reset mid-handshake) end it; they are not the daemon's.
    socket.on('error', () => socket.destroy());
    socket.on('close', () => this.#undecided.delete(socket));
    socket.setTimeout(FIRST_BYTE_TIMEOUT_MS, () => socket.destroy());
    socket.once('data', (chunk: Buffer) => {
      socket.pause();
      socket.setTimeout(0);
      if (sniffTransport(chunk) === 'tls') {
        this.#undecided.delete(socket);
        // The TLS socket reads what is buffered on the raw one before its own handle.
        socket.unshift(chunk);
        this.#handOver.call(this, socket);
        return;
      }
      this.#onRefused?.({ kind: 'plain-http', remote: remoteOf(socket) });
      // Answer, then keep reading (and dropping) what the client still sends: closing with
      // unread data would reset the connection before the client reads the 400.
      socket.end(plainHttpRefusal());
      socket.resume();
      setTimeout(() => socket.destroy(), REFUSAL_LINGER_MS).unref();
    });
  }

  // http's close() calls closeIdleConnections: connections still being sniffed go with them.
  override closeIdleConnections(): void {
    super.closeIdleConnections();
    for (const s of this.#undecided) s.destroy();
  }

  override closeAllConnections(): void {
    super.closeAllConnections();
    for (const s of this.#undecided) s.destroy();
  }
}

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
 */

import { createServer as createPlainServer, type IncomingMessage, type RequestListener } from 'node:http';
import { Server as HttpsServer, type ServerOptions as HttpsOptions } from 'node:https';
import type { Server as NetServer, Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { createSecureContext } from 'node:tls';
import { readPemCertificate, readSecretFile } from './secrets.js';

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

/** PEM material for the server side of TLS, read once at start. */
export interface ServerTls {
  readonly cert: string;
  readonly key: string;
  /** CA certificates client certificates must chain to (with requireClientCert). */
  readonly ca: string | undefined;
  /** Mutual TLS: refuse a client without a certificate from `ca`. */
  readonly requireClientCert: boolean;
}

/**
 * Reads a daemon's TLS files: the certificate and CA may have any mode (they are public), the
 * key must not be readable by others. The pair is tried once here, so a key that does not
 * match its certificate stops the start with a message naming both files, not the first
 * handshake.
 */
export function loadServerTls(files: { certFile: string; keyFile: string; caFile?: string | undefined; requireClientCert?: boolean | undefined }): { ok: true; tls: ServerTls } | { ok: false; error: string } {
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
  return { ok: true, tls: { cert: cert.text, key: key.text, ca, requireClientCert: files.requireClientCert ?? false } };
}

/** What a daemon listens with: a net.Server that can also drop its HTTP connections (http.Server's two methods). */
export interface HttpListener extends NetServer {
  closeAllConnections(): void;
  closeIdleConnections(): void;
}

/** The HTTP-level handlers, the same with and without TLS. */
export interface HttpHandlers {
  request: RequestListener;
  upgrade?: (req: IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** A malformed request (http's 'clientError'); default: node's 400. */
  clientError?: (err: Error, socket: Duplex) => void;
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
/** How long a refused plain-HTTP client has to read the 400 before its socket is dropped. */
const REFUSAL_LINGER_MS = 2_000;

/** Builds the daemon's server: plain node:http, or the TLS port. The caller listens. */
export function createHttpListener(handlers: HttpHandlers, options: HttpListenerOptions = {}): HttpListener {
  const tls = options.tls;
  const server = tls === undefined ? createPlainServer(handlers.request) : new TlsPort(tls, handlers.request, options.onRefused);
  if (handlers.upgrade !== undefined) server.on('upgrade', handlers.upgrade);
  if (handlers.clientError !== undefined) server.on('clientError', handlers.clientError);
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

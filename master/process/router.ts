/**
 * The master's HTTP router (node:http), the process's part. Requests are routed by the table of
 * calls (api/calls.ts, served by api/dispatch.ts): the process's rows (`/health`, `/version`,
 * `/redirect`, metrics) answer whether or not a term runs; every other row belongs to the
 * current term, and while no term runs they are all answered from one place here (307 to the
 * leader, or 503). What is not a call stays here: the agents' WebSocket upgrade and the
 * console's static files. Master endpoints are also under /master/ (libprocess delegation) and
 * the API under /mesos/api/v1 (DC/OS clients), as the table's rows say. A bad request never takes
 * the master down: every handler's failure becomes a 500 with a message and a log line.
 *
 * Every request target is read once, first (shared/paths.ts): routing, authentication,
 * authorization and the handlers all see the same canonical path and decoded segments, handed
 * down from here; none of them reads `req.url` again. A target that cannot be read is a 400.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { sendError, sendText } from '../../shared/http.js';
import { normalizePath, type RequestTarget } from '../../shared/paths.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../../io/tls-server.js';
import { AgentSessions } from '../api/agent-sessions.js';
import { isProcessRoute, routeOf, serve } from '../api/dispatch.js';
import type { ProcessPort } from '../api/row.js';
import { MasterSecurity } from '../security/security.js';
import type { ServingTerm } from '../term/ports.js';
import { ConsoleFiles, findConsoleDir, isConsolePath } from './console.js';
import type { MasterMetrics } from './metrics.js';

/** Where the router finds the term, and what it answers while there is none. */
export interface TermRoutes {
  /** The term serving now, if any. */
  current(): ServingTerm | undefined;
  /** Another master's `host:port` when it leads (HA): term routes answer 307 to it. */
  leader(): string | undefined;
  /**
   * This master's `host:port` as its MasterInfo advertises it (master-info.ts), once it listens:
   * what `/redirect` names while this master leads. Never the request's Host header, which the
   * client writes.
   */
  self(): string | undefined;
  /** The answer while no term runs (503: recovering, or no leader). */
  unavailable(): DrydockError;
  /** The process's metrics; without them (unit tests) the metrics routes are 404. */
  metrics?: MasterMetrics | undefined;
  /** This master's flags as GET_FLAGS writes them (`/flags` answers them on every master); none in unit tests. */
  flags?: () => ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/**
 * Builds the HTTP server; the caller listens. With `tls` (--tls_cert_file) the port serves HTTPS
 * and WSS, and a plain-HTTP request on it gets a 400 that says to use https:// (io/tls-server.ts).
 */
export function createMasterServer(routes: TermRoutes, logger: Logger, security: MasterSecurity = MasterSecurity.open(), tls?: ServerTls): HttpListener {
  const log = logger;
  const request = (req: IncomingMessage, res: ServerResponse): void => {
    const read = normalizePath(req.url ?? '/');
    if (!read.ok) {
      req.resume();
      sendError(res, read.error);
      return;
    }
    route(routes, security, read.target, req, res).catch((e: unknown) => {
      log.error('internal error', { where: 'http', method: req.method, url: req.url, error: e });
      if (!res.headersSent) sendText(res, 500, fail('INTERNAL', e instanceof Error ? e.message : String(e)).message);
      else res.destroy();
    });
  };
  const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    socket.on('error', () => socket.destroy());
    const read = normalizePath(req.url ?? '/');
    if (!read.ok) {
      const body = read.error.message;
      socket.end(`HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
      return;
    }
    if (AgentSessions.handles(read.target.path)) {
      const term = routes.current();
      if (term === undefined) {
        socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
        return;
      }
      try {
        const auth = security.authenticate(header(req, 'authorization'), 'drydock-agent');
        if (!auth.ok) {
          const body = auth.error.message;
          socket.end(`HTTP/1.1 401 Unauthorized\r\nConnection: close\r\nWWW-Authenticate: ${auth.headers['WWW-Authenticate'] ?? ''}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
          return;
        }
        term.sessions.handleUpgrade(req, socket, head, auth.access.principal);
      } catch (e) {
        log.error('internal error', { where: 'upgrade', error: e });
        socket.destroy();
      }
      return;
    }
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n\r\n404 Not Found.');
  };
  return createHttpListener(
    { request, upgrade },
    {
      tls,
      // A refused handshake is the client's problem, but an operator setting up mutual TLS needs to see it.
      onRefused: (r) => log.warn(r.kind === 'plain-http' ? 'plain HTTP on the TLS port refused' : 'TLS handshake failed', { ...r }),
    },
  );
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The console's files, read once when the master starts (process/console.ts). */
const consoleFiles = ConsoleFiles.load(findConsoleDir());

/** What the table's process rows ask of the process: who leads, the answer while nobody does, the metrics. */
function processPort(routes: TermRoutes): ProcessPort {
  return {
    // `/redirect` names this master while it leads, as it advertises itself: a Host header is the client's to write.
    leader: () => (routes.current() !== undefined ? routes.self() : routes.leader()),
    unavailable: () => routes.unavailable(),
    metrics: routes.metrics,
    flags: () => routes.flags?.() ?? [],
  };
}

async function route(routes: TermRoutes, security: MasterSecurity, target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const process = processPort(routes);
  const found = routeOf(target, req.method ?? '', process);
  if (found !== undefined && isProcessRoute(found)) return serve(found, { security, process, ports: routes.current() }, target, req, res);
  // The web console is a term route too, so a standby 307s the browser to the leader's console.
  const consoleRoute = found === undefined && isConsolePath(target.path);
  if (found === undefined && !consoleRoute) {
    req.resume();
    return sendError(res, fail('NOT_FOUND'));
  }
  // The one place that answers while no term runs: 307 to the leader (Mesos §7.2), or 503.
  const term = routes.current();
  if (term === undefined) {
    req.resume();
    const leader = routes.leader();
    if (leader === undefined) return sendError(res, routes.unavailable());
    // The canonical path (encoded again) and the query as sent: the leader reads the same target.
    res.writeHead(307, { Location: `//${leader}${target.encodedPath}${target.query}`, 'Content-Length': 0 });
    res.end();
    return;
  }
  // Static files hold no data: no credentials needed (the page's API calls carry them).
  if (found === undefined) return consoleFiles.serve(target.path, req, res);
  return serve(found, { security, process, ports: term }, target, req, res);
}

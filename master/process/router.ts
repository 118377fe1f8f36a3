/**
 * The master's HTTP routing (node:http), the process's part: `/health` and `/version` always
 * answer here; every other route belongs to the current term, and while no term runs they are
 * all answered from one place (503). Master endpoints are also under /master/ (libprocess
 * delegation) and the API under /mesos/api/v1 (DC/OS clients). A bad request never takes the
 * master down: every handler's failure becomes a 500 with a message and a log line.
 *
 * Every request target is read once, first (shared/paths.ts): routing, authentication,
 * authorization and the handlers all see the same canonical path and decoded segments, handed
 * down from here; none of them reads `req.url` again. A target that cannot be read is a 400.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { AgentSessions } from '../api/agent-sessions.js';
import { answerCall, parseApiCall, versionInfo } from '../api/operator.js';
import { handleSchedulerRequest, SCHEDULER_PATHS } from '../api/scheduler.js';
import { answerMaintenanceCall, handleMaintenanceRequest, maintenanceRoute } from '../api/maintenance.js';
import { sendError, sendJson, sendText } from '../../shared/http.js';
import { readApiBody } from '../api/http-exchange.js';
import { handleMaintenancePlansRequest, maintenancePlansRoute } from '../api/plans.js';
import type { Realm } from '../security/authentication.js';
import { MasterSecurity } from '../security/security.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../../io/tls-server.js';
import type { MasterMetrics } from './metrics.js';
import { ConsoleFiles, findConsoleDir, isConsolePath } from './console.js';
import { normalizePath, type RequestTarget } from '../../shared/paths.js';
import type { ServingTerm } from '../term/ports.js';

const API_PATHS = new Set(['/api/v1', '/master/api/v1', '/mesos/api/v1']);
const HEALTH_PATHS = new Set(['/health', '/master/health']);
const VERSION_PATHS = new Set(['/version', '/master/version']);
const REDIRECT_PATHS = new Set(['/redirect', '/master/redirect']);
/** The metrics routes, by the path their `get_endpoints` ACL names (Mesos' GET_ENDPOINT_WITH_PATH). */
const METRICS_PATHS = new Map([
  ['/metrics', '/metrics'],
  ['/metrics/snapshot', '/metrics/snapshot'],
  ['/master/metrics/snapshot', '/metrics/snapshot'],
]);

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

/** GET and HEAD only read; every other method may change state. */
function readOnlyMethod(method: string | undefined): boolean {
  return method === 'GET' || method === 'HEAD';
}

/** The console's files, read once when the master starts (master/console.ts). */
const consoleFiles = ConsoleFiles.load(findConsoleDir());

async function route(routes: TermRoutes, security: MasterSecurity, target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = target.path;
  if (HEALTH_PATHS.has(path)) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendMethodNotAllowed(res, req.method ?? '', 'GET');
    res.writeHead(200, { 'Content-Length': 0 });
    res.end();
    return;
  }
  if (VERSION_PATHS.has(path)) {
    if (req.method !== 'GET' && req.method !== 'HEAD') return sendMethodNotAllowed(res, req.method ?? '', 'GET');
    return sendJson(res, versionInfo());
  }
  if (REDIRECT_PATHS.has(path)) {
    // `/redirect`: 307 to the leading master's base URL (this one when it leads), as that master
    // advertises it: a Host header is the client's to write, and must not become a Location.
    req.resume();
    const leader = routes.current() !== undefined ? routes.self() : routes.leader();
    if (leader === undefined) return sendError(res, routes.unavailable());
    res.writeHead(307, { Location: `//${leader}`, 'Content-Length': 0 });
    res.end();
    return;
  }
  const metricsPath = METRICS_PATHS.get(path);
  if (metricsPath !== undefined && routes.metrics !== undefined) return metrics(routes.metrics, security, metricsPath, req, res);
  const maintenance = maintenanceRoute(path);
  const plansRoute = maintenancePlansRoute(target);
  // The web console is a term route too, so a standby 307s the browser to the leader's console.
  const consoleRoute = isConsolePath(path);
  const termRoute = API_PATHS.has(path) || SCHEDULER_PATHS.has(path) || maintenance !== undefined || plansRoute !== undefined || consoleRoute;
  if (!termRoute) {
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
  if (consoleRoute) return consoleFiles.serve(path, req, res);
  if (API_PATHS.has(path)) return api(term, security, path, req, res);
  // The other routes know their realm from the path and method alone: authenticate first.
  const realm: Realm = SCHEDULER_PATHS.has(path) ? 'mesos-master-scheduler' : readOnlyMethod(req.method) ? 'mesos-master-readonly' : 'mesos-master-readwrite';
  const auth = security.authenticate(header(req, 'authorization'), realm);
  if (!auth.ok) {
    req.resume();
    if (realm !== 'mesos-master-readonly') security.audit({ principal: undefined, action: `${req.method ?? ''} ${path}`, object: '', outcome: 'unauthenticated', status: auth.error.status });
    return sendError(res, auth.error, auth.headers);
  }
  const access = auth.access;
  if (SCHEDULER_PATHS.has(path)) return handleSchedulerRequest(term, security, req, res, access);
  if (realm === 'mesos-master-readwrite') security.auditWhenDone(access, res, `${req.method ?? ''} ${path}`);
  if (maintenance !== undefined) return handleMaintenanceRequest(term, maintenance, target.query, req, res, access);
  if (plansRoute !== undefined) return handleMaintenancePlansRequest(term, plansRoute, target.query, req, res, access);
}

/**
 * `/metrics` and `/metrics/snapshot`: every master answers for itself, leading or not (Mesos
 * does not redirect them either). Read-only realm; with ACLs, `get_endpoints` on the path.
 */
async function metrics(m: MasterMetrics, security: MasterSecurity, aclPath: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  req.resume();
  if (!readOnlyMethod(req.method)) return sendMethodNotAllowed(res, req.method ?? '', 'GET');
  const auth = security.authenticate(header(req, 'authorization'), 'mesos-master-readonly');
  if (!auth.ok) return sendError(res, auth.error, auth.headers);
  const refused = auth.access.check('get_endpoints', aclPath);
  if (refused !== undefined) return sendError(res, refused);
  if (aclPath === '/metrics') return m.sendPrometheus(res);
  m.sendSnapshot(res);
}

/** Operator calls that only read: answered in the read-only realm (Drydock splits /api/v1 by call; Mesos puts all of it under read-write). */
function readOnlyCall(type: string): boolean {
  return type.startsWith('GET_') || type === 'SUBSCRIBE' || type === 'LIST_FILES' || type === 'READ_FILE';
}

async function api(term: ServingTerm, security: MasterSecurity, path: string, req: IncomingMessage, res: ServerResponse): Promise<void> {
  // Wrong credentials are refused before the body is read; missing ones once the call (and so its realm) is known.
  const presented = header(req, 'authorization');
  const early = security.authenticate(presented, 'mesos-master-readonly');
  // With both realms required, no call can pass anonymously: refuse before reading, in Mesos' realm for /api/v1.
  if (!early.ok && (presented !== undefined || (security.requires('mesos-master-readwrite') && security.requires('mesos-master-readonly')))) {
    req.resume();
    // The body is not read from a caller that failed authentication: the audit line names the path.
    security.audit({ principal: undefined, action: `POST ${path}`, object: '', outcome: 'unauthenticated', status: early.error.status });
    return sendError(res, early.error, { 'WWW-Authenticate': 'Basic realm="mesos-master-readwrite"' });
  }
  const body = await readApiBody(req, res);
  if (body === undefined) return;
  const parsed = parseApiCall(body, req.headers['accept']);
  if (!parsed.ok) return sendError(res, parsed.error);
  const realm: Realm = readOnlyCall(parsed.call.type) ? 'mesos-master-readonly' : 'mesos-master-readwrite';
  const auth = security.authenticate(presented, realm);
  if (!auth.ok) {
    if (realm === 'mesos-master-readwrite') security.audit({ principal: undefined, action: parsed.call.type, object: '', outcome: 'unauthenticated', status: auth.error.status });
    return sendError(res, auth.error, auth.headers);
  }
  const access = auth.access;
  // The one call whose answer stays open: same framing checks as the others, then a stream.
  if (parsed.call.type === 'SUBSCRIBE') return term.streams.subscribe(res, access);
  if (realm === 'mesos-master-readwrite') security.auditWhenDone(access, res, parsed.call.type);
  // Maintenance calls write the registry before answering, so they are answered asynchronously.
  const answer = (await answerMaintenanceCall(term, parsed.call, access)) ?? (await answerCall(term, parsed.call, access));
  if (!answer.ok) return sendError(res, answer.error);
  if (answer.json === undefined) {
    res.writeHead(200, { 'Content-Length': 0 });
    res.end();
    return;
  }
  sendJson(res, answer.json);
}

function sendMethodNotAllowed(res: ServerResponse, method: string, allow: string): void {
  const e = fail('METHOD_NOT_ALLOWED', method);
  sendText(res, e.status, e.message.replace("'POST'", `'${allow}'`), { Allow: allow });
}

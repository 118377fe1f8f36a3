/**
 * The agent operator API on --ip:--port: `GET /health`, `GET /metrics` (Prometheus text),
 * `GET /metrics/snapshot` (Mesos' keys) and `POST /api/v1` with Mesos framing (reference §0.3
 * and §3). Bad input gets a 4xx with Mesos' message and changes nothing.
 *
 * Who may call it (agent/security.ts): `/health` is never authenticated (probes); `/metrics`,
 * `/metrics/snapshot` and the calls that only read (GET_*, LIST_FILES, READ_FILE) are in the
 * `mesos-agent-readonly` realm, every other call in `mesos-agent-readwrite`, as on the master.
 * What a call may show or do is decided by the calls themselves (agent.ts) with the caller this
 * router hands them: the master's ACLs and view rules.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fail, type DrydockError } from '../shared/errors.js';
import { readBodyBytesOrAnswer, sendError, sendJson, sendText } from '../shared/http.js';
import type { Logger } from '../shared/log.js';
import { normalizePath } from '../shared/paths.js';
import { callMessage, type CallSpec } from '../shared/proto.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../io/tls-server.js';
import { agentCall, agentFraming } from './api-framing.js';
import type { AgentMetrics } from './metrics.js';
import { AgentSecurity, type AgentRealm, type Caller } from './security.js';

/** Largest request body accepted: agent calls are tiny. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** A call's answer: a JSON value (undefined: an empty 200), or the error to send (403, 400, 501...). */
export type CallAnswer = { ok: true; json: unknown } | { ok: false; error: DrydockError };

/** Answers a decoded call for an authenticated caller. */
export type CallHandler = (type: string, call: Record<string, unknown>, caller: Caller) => Promise<CallAnswer>;

export interface ApiOptions {
  log: Logger;
  /** False while the agent recovers its checkpoint (503). */
  ready: () => boolean;
  handle: CallHandler;
  /** --tls_cert_file: serve HTTPS (plain HTTP on the port gets a 400 saying so). */
  tls?: ServerTls | undefined;
  /** The process's metrics; without them the metrics routes are 404. */
  metrics?: AgentMetrics | undefined;
  /** Authentication and ACLs (--authenticate_http_*, --http_credentials, --acls); default: open. */
  security?: AgentSecurity | undefined;
}

/** The metrics routes, by the path their `get_endpoints` ACL names (Mesos' GET_ENDPOINT_WITH_PATH). */
const METRICS_PATHS = new Map([
  ['/metrics', '/metrics'],
  ['/metrics/snapshot', '/metrics/snapshot'],
]);

/** Calls that only read: the read-only realm (as the master splits /api/v1; Mesos puts all of it under read-write). */
export function readOnlyCall(type: string): boolean {
  return type.startsWith('GET_') || type === 'LIST_FILES' || type === 'READ_FILE';
}

/** The realm a call is authenticated in. Pure. */
export function callRealm(type: string): AgentRealm {
  return readOnlyCall(type) ? 'mesos-agent-readonly' : 'mesos-agent-readwrite';
}

/** Every agent::Call type of Mesos 1.12 (names outside it are dropped by the parser, like Mesos' optional enum). */
export const AGENT_CALL_TYPES = [
  'GET_HEALTH', 'GET_FLAGS', 'GET_VERSION', 'GET_METRICS', 'GET_LOGGING_LEVEL', 'SET_LOGGING_LEVEL', 'LIST_FILES',
  'READ_FILE', 'GET_STATE', 'GET_CONTAINERS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_OPERATIONS', 'GET_TASKS',
  'GET_AGENT', 'GET_RESOURCE_PROVIDERS', 'LAUNCH_NESTED_CONTAINER', 'WAIT_NESTED_CONTAINER', 'KILL_NESTED_CONTAINER',
  'REMOVE_NESTED_CONTAINER', 'LAUNCH_NESTED_CONTAINER_SESSION', 'ATTACH_CONTAINER_INPUT', 'ATTACH_CONTAINER_OUTPUT',
  'LAUNCH_CONTAINER', 'WAIT_CONTAINER', 'KILL_CONTAINER', 'REMOVE_CONTAINER', 'ADD_RESOURCE_PROVIDER_CONFIG',
  'UPDATE_RESOURCE_PROVIDER_CONFIG', 'REMOVE_RESOURCE_PROVIDER_CONFIG', 'MARK_RESOURCE_PROVIDER_GONE', 'PRUNE_IMAGES',
  'UNKNOWN',
] as const;

/** Calls whose sub-message validation requires (`Expecting '<sub>' to be present`), among those Drydock answers. */
const REQUIRED_SUB: Record<string, string> = { SET_LOGGING_LEVEL: 'set_logging_level' };

/** agent::Call; each call that reads its sub-message decodes it itself (agent.ts). */
const AGENT_CALL_SPEC: CallSpec<string> = { message: callMessage('agent.Call', AGENT_CALL_TYPES, Object.values(REQUIRED_SUB)), requiredSub: REQUIRED_SUB, invalid: 'AGENT_CALL_INVALID' };

export class AgentApi {
  readonly #o: ApiOptions;
  readonly #security: AgentSecurity;
  readonly #server: HttpListener;

  constructor(options: ApiOptions) {
    this.#o = options;
    this.#security = options.security ?? AgentSecurity.open();
    const request = (req: IncomingMessage, res: ServerResponse): void => {
      this.#route(req, res).catch((e: unknown) => {
        this.#o.log.error('api request failed', { url: req.url, error: e as Error });
        if (!res.headersSent) sendText(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    };
    this.#server = createHttpListener(
      { request },
      {
        tls: options.tls,
        requestTimeoutMs: 30_000,
        headersTimeoutMs: 10_000,
        onRefused: (r) => this.#o.log.warn(r.kind === 'plain-http' ? 'plain HTTP on the TLS port refused' : 'TLS handshake failed', { ...r }),
      },
    );
  }

  /** Binds; resolves with the actual port (port 0 picks one). */
  listen(ip: string, port: number): Promise<number> {
    return new Promise((resolve, reject) => {
      this.#server.once('error', reject);
      this.#server.listen(port, ip, () => {
        this.#server.off('error', reject);
        resolve((this.#server.address() as AddressInfo).port);
      });
    });
  }

  /** Stops accepting and drops idle keep-alive connections. */
  close(): Promise<void> {
    return new Promise((resolve) => {
      this.#server.close(() => resolve());
      this.#server.closeIdleConnections();
    });
  }

  async #route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    // The one reading of the target (shared/paths.ts), before routing: an unreadable one is a 400.
    const read = normalizePath(req.url ?? '/');
    if (!read.ok) {
      req.resume();
      sendError(res, read.error);
      return;
    }
    const path = read.target.path;
    if (path === '/health') {
      sendJson(res, { healthy: true });
      return;
    }
    const metrics = this.#o.metrics;
    const metricsPath = path === undefined ? undefined : METRICS_PATHS.get(path);
    if (metrics !== undefined && metricsPath !== undefined) {
      req.resume();
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET' }, but received '${req.method ?? ''}'.`, { Allow: 'GET' });
        return;
      }
      // Read-only realm; with ACLs, get_endpoints on the path (the master's rule for its own).
      const auth = this.#security.authenticate(header(req, 'authorization'), 'mesos-agent-readonly');
      if (!auth.ok) {
        sendError(res, auth.error, auth.headers);
        return;
      }
      const refused = auth.caller.check('get_endpoints', metricsPath);
      if (refused !== undefined) {
        sendError(res, refused);
        return;
      }
      // Answered during recovery too: an agent stuck recovering is what an operator graphs.
      if (metricsPath === '/metrics') await metrics.sendPrometheus(res);
      else metrics.sendSnapshot(res);
      return;
    }
    if (path !== '/api/v1' && path !== '/slave(1)/api/v1') {
      req.resume();
      sendError(res, fail('NOT_FOUND'));
      return;
    }
    // Wrong credentials are refused before the body is read, and so is an anonymous caller when
    // both realms require credentials; a missing one otherwise once the call (its realm) is known.
    const presented = header(req, 'authorization');
    const security = this.#security;
    const early = security.authenticate(presented, 'mesos-agent-readonly');
    if (!early.ok && (presented !== undefined || (security.requires('mesos-agent-readonly') && security.requires('mesos-agent-readwrite')))) {
      req.resume();
      security.audit({ principal: undefined, action: `POST ${path}`, object: '', outcome: 'unauthenticated', status: early.error.status });
      sendError(res, early.error, { 'WWW-Authenticate': 'Basic realm="mesos-agent-readwrite"' });
      return;
    }
    if (!this.#o.ready()) {
      req.resume();
      sendError(res, fail('AGENT_NOT_RECOVERED'));
      return;
    }
    // Content-Type and Accept (JSON or protobuf, RecordIO for streams) on the headers, before the body (api-framing.ts).
    const framing = agentFraming({
      method: req.method ?? '',
      contentType: header(req, 'content-type'),
      messageContentType: header(req, 'message-content-type'),
      accept: header(req, 'accept'),
      messageAccept: header(req, 'message-accept'),
    });
    if ('code' in framing) {
      req.resume();
      sendError(res, framing);
      return;
    }
    const body = await readBodyBytesOrAnswer(req, res, MAX_BODY_BYTES);
    if (body === undefined) return;
    // The one v1 call decoder, as the master's APIs (bounded, null is unset, Mesos' messages), whichever codec reads the body.
    const call = agentCall<{ type?: string } & Record<string, unknown>>(framing, body, AGENT_CALL_SPEC);
    if (!call.ok) {
      sendError(res, call.error);
      return;
    }
    const type = call.type;
    const realm = callRealm(type);
    const auth = security.authenticate(presented, realm);
    if (!auth.ok) {
      if (realm === 'mesos-agent-readwrite') security.audit({ principal: undefined, action: type, object: '', outcome: 'unauthenticated', status: auth.error.status });
      sendError(res, auth.error, auth.headers);
      return;
    }
    if (realm === 'mesos-agent-readwrite') security.auditWhenDone(auth.caller, res, type);
    const answer = await this.#o.handle(type, call.body, auth.caller);
    if (!answer.ok) {
      sendError(res, answer.error);
      return;
    }
    if (answer.json === undefined) {
      res.writeHead(200, { 'Content-Length': 0 });
      res.end();
      return;
    }
    // As the JSON codec writes it, or as an agent::Response message.
    framing.answer.write(res, 200, answer.json);
  }
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

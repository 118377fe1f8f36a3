/**
 * The agent's HTTP edge on --ip:--port: `POST /api/v1` (and `/slave(1)/api/v1`) with Mesos
 * framing (reference §0.3 and §3), and the GET endpoints of the table (agent/calls.ts): Mesos'
 * legacy `/slave(1)/state`, `/flags`, `/monitor/statistics`, `/metrics/snapshot`, the sandboxes'
 * `/files/*`, the health probes, and Drydock's own `/drydock/v1/...`. Everything a request goes
 * through is derived from its row here, in one place: routing, the method, authentication in the
 * row's realm, the recovery gate, the decoder, the ACL check, audit, and the answer's encoding
 * (JSON with exact int64s, JSONP with a checked callback, the v1 Response wrapper). Bad input
 * gets a 4xx with Mesos' message and changes nothing.
 *
 * Who may call it (agent/security.ts): the open ways (`/health`, `/slave(1)/health`) never ask
 * for credentials; the rows that only read are in the `mesos-agent-readonly` realm, every call
 * that may change state in `mesos-agent-readwrite`, as on the master.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fail, type DrydockError } from '../shared/errors.js';
import { readBodyBytesOrAnswer, sendError, sendText } from '../shared/http.js';
import { stringifyJson } from '../shared/json.js';
import { jsonpBody, jsonpCallback } from '../shared/jsonp.js';
import type { Logger } from '../shared/log.js';
import { normalizePath, type RequestTarget } from '../shared/paths.js';
import { callMessage, type CallSpec } from '../shared/proto.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../io/tls-server.js';
import { agentCall, agentFraming } from './api-framing.js';
import { AGENT_CALL_TYPES, HTTP_WAYS, v1Access, V1_ROWS, type AgentAnswer, type AgentPort, type HttpWay, type Row, type RowAccess } from './calls.js';
import { AgentSecurity, type AgentRealm, type Caller } from './security.js';

export { AGENT_CALL_TYPES } from './calls.js';

/** Largest request body accepted: agent calls are tiny. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** The paths of the v1 operator API (libprocess delegation: the bare path and the agent process's). */
const V1_PATHS: ReadonlySet<string> = new Set(['/api/v1', '/slave(1)/api/v1']);

export interface ApiOptions {
  log: Logger;
  /** False while the agent recovers its checkpoint (503). */
  ready: () => boolean;
  /** What the rows read and do. */
  port: AgentPort;
  /** --tls_cert_file: serve HTTPS (plain HTTP on the port gets a 400 saying so). */
  tls?: ServerTls | undefined;
  /** Authentication and ACLs (--authenticate_http_*, --http_credentials, --acls); default: open. */
  security?: AgentSecurity | undefined;
}

/** Calls that only read: the read-only realm (as the master splits /api/v1; Mesos puts all of it under read-write). */
export function readOnlyCall(type: string): boolean {
  return v1Access(type) === 'read';
}

/** The realm of a row's access. Pure. */
export function realmOf(access: RowAccess): AgentRealm {
  return access === 'read' ? 'mesos-agent-readonly' : 'mesos-agent-readwrite';
}

/** The realm a call is authenticated in. Pure. */
export function callRealm(type: string): AgentRealm {
  return realmOf(v1Access(type));
}

/** Calls whose sub-message validation requires (`Expecting '<sub>' to be present`), among those Drydock answers. */
const REQUIRED_SUB: Record<string, string> = { SET_LOGGING_LEVEL: 'set_logging_level', LIST_FILES: 'list_files', READ_FILE: 'read_file' };

/** agent::Call; each call that reads its sub-message decodes it itself (calls.ts). */
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
    const target = read.target;
    if (V1_PATHS.has(target.path)) return this.#v1(target, req, res);
    const found = HTTP_WAYS.get(target.path);
    req.resume();
    if (found === undefined) return sendError(res, fail('NOT_FOUND'));
    return this.#http(found.row, found.way, target, req, res);
  }

  /** A GET endpoint of the table: method, credentials, recovery, decoder, ACL, handler, encoding. */
  async #http(r: Row, way: HttpWay<unknown>, target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = req.method ?? '';
    if (method !== 'GET' && method !== 'HEAD') return sendError(res, fail('GET_ONLY', method), { Allow: 'GET' });
    let caller: Caller;
    if (way.open === true) caller = this.#security.anonymous();
    else {
      const auth = this.#security.authenticate(header(req, 'authorization'), realmOf(r.access));
      if (!auth.ok) return sendError(res, auth.error, auth.headers);
      caller = auth.caller;
    }
    if (way.whileRecovering !== true && !this.#o.ready()) return sendError(res, fail('AGENT_NOT_RECOVERED'));
    const query = new URLSearchParams(target.query);
    const callback = way.answer === 'jsonp' ? jsonpCallback(target.query) : { ok: true as const, callback: undefined };
    if (!callback.ok) return sendError(res, callback.error);
    const decoded = way.decode === undefined ? { ok: true as const, value: undefined } : way.decode(query);
    const answer = decoded.ok ? await this.#run(r, decoded.value, caller) : ({ kind: 'error', error: decoded.error } as const);
    switch (answer.kind) {
      case 'error':
        return sendError(res, answer.error);
      case 'raw':
        return answer.write(res, method);
      case 'done':
        return empty(res);
      case 'value': {
        if (way.answer === 'empty') return empty(res);
        const { body, contentType } = jsonpBody(stringifyJson(answer.value), callback.callback);
        res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
        res.end(body);
        return;
      }
    }
  }

  /** The row's ACL check, then its handler. */
  async #run(r: Row, input: unknown, caller: Caller): Promise<AgentAnswer> {
    const ctx = { caller, port: this.#o.port };
    const refused: DrydockError | undefined = r.acl.check?.(input, ctx);
    if (refused !== undefined) return { kind: 'error', error: refused };
    return r.handle(input, ctx);
  }

  /** `POST /api/v1`: Mesos' framing, then the call's row as any other. */
  async #v1(target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = target.path;
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
    const r = V1_ROWS.get(type);
    if (r === undefined || r.v1 === undefined) {
      sendError(res, fail('NOT_IMPLEMENTED', type));
      return;
    }
    const decoded = r.v1.decode === undefined ? { ok: true as const, value: undefined } : r.v1.decode(call.body);
    const answer = decoded.ok ? await this.#run(r, decoded.value, auth.caller) : ({ kind: 'error', error: decoded.error } as const);
    switch (answer.kind) {
      case 'error':
        return sendError(res, answer.error);
      case 'done':
        return empty(res);
      case 'raw':
        return answer.write(res, 'POST');
      case 'value': {
        // agent::Response: the type, and the value under the type's name in lower case, as the
        // JSON codec writes it or as an agent::Response message.
        framing.answer.write(res, 200, { type, [type.toLowerCase()]: answer.value });
        return;
      }
    }
  }
}

function empty(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Length': 0 });
  res.end();
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * The agent operator API on --ip:--port: `GET /health` and `POST /api/v1` with Mesos framing
 * (reference §0.3 and §3). Bad input gets a 4xx with Mesos' message and changes nothing.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fail, type DrydockError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { stringifyJson } from '../shared/json.js';

/** Largest request body accepted: agent calls are tiny. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Calls this API answers, with the answer body; undefined means "not supported here". */
export type CallHandler = (type: string, call: Record<string, unknown>) => Promise<unknown>;

export interface ApiOptions {
  log: Logger;
  /** False while the agent recovers its checkpoint (503). */
  ready: () => boolean;
  handle: CallHandler;
}

const KNOWN_CALLS = new Set([
  'GET_HEALTH', 'GET_FLAGS', 'GET_VERSION', 'GET_METRICS', 'GET_LOGGING_LEVEL', 'SET_LOGGING_LEVEL', 'LIST_FILES',
  'READ_FILE', 'GET_STATE', 'GET_CONTAINERS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_OPERATIONS', 'GET_TASKS',
  'GET_AGENT', 'GET_RESOURCE_PROVIDERS', 'LAUNCH_NESTED_CONTAINER', 'WAIT_NESTED_CONTAINER', 'KILL_NESTED_CONTAINER',
  'REMOVE_NESTED_CONTAINER', 'LAUNCH_NESTED_CONTAINER_SESSION', 'ATTACH_CONTAINER_INPUT', 'ATTACH_CONTAINER_OUTPUT',
  'LAUNCH_CONTAINER', 'WAIT_CONTAINER', 'KILL_CONTAINER', 'REMOVE_CONTAINER', 'ADD_RESOURCE_PROVIDER_CONFIG',
  'UPDATE_RESOURCE_PROVIDER_CONFIG', 'REMOVE_RESOURCE_PROVIDER_CONFIG', 'MARK_RESOURCE_PROVIDER_GONE', 'PRUNE_IMAGES',
  'UNKNOWN',
]);

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, e: DrydockError, headers: Record<string, string> = {}): void {
  sendText(res, e.status, e.message, headers);
}

function sendJson(res: ServerResponse, body: unknown): void {
  // Exact int64s (estimated_drain_start_time is beyond 2^53 ns).
  const text = stringifyJson(body);
  res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

/** Reads the body up to the limit; undefined if it was larger (the request is answered 413). */
function readBody(req: IncomingMessage): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let over = false;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY_BYTES) over = true;
      else chunks.push(c);
    });
    req.on('end', () => resolve(over ? undefined : Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Does the Accept header allow JSON? Absent means anything. */
function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  return accept.split(',').some((part) => {
    const type = (part.split(';')[0] ?? '').trim().toLowerCase();
    return type === 'application/json' || type === 'application/*' || type === '*/*' || type === 'application/x-protobuf';
  });
}

export class AgentApi {
  readonly #o: ApiOptions;
  readonly #server: Server;

  constructor(options: ApiOptions) {
    this.#o = options;
    this.#server = createServer((req, res) => {
      this.#route(req, res).catch((e: unknown) => {
        this.#o.log.error('api request failed', { url: req.url, error: e as Error });
        if (!res.headersSent) sendText(res, 500, 'Internal Server Error');
        else res.destroy();
      });
    });
    this.#server.requestTimeout = 30_000;
    this.#server.headersTimeout = 10_000;
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
    const path = (req.url ?? '/').split('?')[0];
    if (path === '/health') {
      sendJson(res, { healthy: true });
      return;
    }
    if (path !== '/api/v1' && path !== '/slave(1)/api/v1') {
      req.resume();
      sendError(res, fail('NOT_FOUND'));
      return;
    }
    if (!this.#o.ready()) {
      req.resume();
      sendError(res, fail('AGENT_NOT_RECOVERED'));
      return;
    }
    if (req.method !== 'POST') {
      req.resume();
      sendError(res, fail('METHOD_NOT_ALLOWED', req.method ?? ''), { allow: 'POST' });
      return;
    }
    const contentType = req.headers['content-type'];
    if (contentType === undefined || contentType.trim() === '') {
      req.resume();
      sendError(res, fail('CONTENT_TYPE_MISSING'));
      return;
    }
    const mediaType = (contentType.split(';')[0] ?? '').trim().toLowerCase();
    if (mediaType === 'application/x-protobuf') {
      req.resume();
      sendError(res, fail('PROTOBUF_UNSUPPORTED'));
      return;
    }
    // Looser than Mesos on purpose (DESIGN): parameters are fine, and so is curl's default type.
    if (mediaType !== 'application/json' && mediaType !== 'application/x-www-form-urlencoded') {
      req.resume();
      sendError(res, fail('CONTENT_TYPE_UNSUPPORTED'));
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      sendError(res, fail('BODY_TOO_LARGE', MAX_BODY_BYTES));
      return;
    }
    let call: unknown;
    try {
      call = JSON.parse(body);
    } catch (e) {
      sendError(res, fail('BODY_NOT_JSON', (e as Error).message));
      return;
    }
    if (typeof call !== 'object' || call === null || Array.isArray(call)) {
      sendError(res, fail('BODY_NOT_CALL', 'Expecting a JSON object'));
      return;
    }
    const type = (call as Record<string, unknown>)['type'];
    // Mesos drops unknown enum names, so an unknown type reads as a missing one.
    if (typeof type !== 'string' || !KNOWN_CALLS.has(type)) {
      sendError(res, fail('AGENT_CALL_INVALID', "Expecting 'type' to be present"));
      return;
    }
    if (!acceptsJson(req.headers['accept'])) {
      sendError(res, fail('NOT_ACCEPTABLE'));
      return;
    }
    const answer = await this.#o.handle(type, call as Record<string, unknown>);
    if (answer === undefined) {
      sendError(res, fail('NOT_IMPLEMENTED', type));
      return;
    }
    sendJson(res, answer);
  }
}


/**
 * The agent operator API on --ip:--port: `GET /health`, `GET /metrics` (Prometheus text),
 * `GET /metrics/snapshot` (Mesos' keys) and `POST /api/v1` with Mesos framing (reference §0.3
 * and §3). Bad input gets a 4xx with Mesos' message and changes nothing.
 *
 * The agent API has no HTTP authentication (the agent has no --credentials of its own): like
 * `/health`, the metrics are answered to anybody who can reach the port. They hold counts, never
 * task names or ids, so they show no more than /health's neighbours on the same network.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fail } from '../shared/errors.js';
import { acceptsJson, checkApiHeaders, readBodyOrAnswer, sendError, sendJson, sendText } from '../shared/http.js';
import type { Logger } from '../shared/log.js';
import { normalizePath } from '../shared/paths.js';
import { callMessage, decodeCall, type CallSpec } from '../shared/proto.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../io/tls-server.js';
import type { AgentMetrics } from './metrics.js';

/** Largest request body accepted: agent calls are tiny. */
export const MAX_BODY_BYTES = 1024 * 1024;

/** Calls this API answers, with the answer body; undefined means "not supported here". */
export type CallHandler = (type: string, call: Record<string, unknown>) => Promise<unknown>;

export interface ApiOptions {
  log: Logger;
  /** False while the agent recovers its checkpoint (503). */
  ready: () => boolean;
  handle: CallHandler;
  /** --tls_cert_file: serve HTTPS (plain HTTP on the port gets a 400 saying so). */
  tls?: ServerTls | undefined;
  /** The process's metrics; without them the metrics routes are 404. */
  metrics?: AgentMetrics | undefined;
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

/** agent::Call; its sub-messages are not read by any call Drydock answers. */
const AGENT_CALL_SPEC: CallSpec<string> = { message: callMessage('agent.Call', AGENT_CALL_TYPES, []), requiredSub: {}, invalid: 'AGENT_CALL_INVALID' };

export class AgentApi {
  readonly #o: ApiOptions;
  readonly #server: HttpListener;

  constructor(options: ApiOptions) {
    this.#o = options;
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
    if (metrics !== undefined && (path === '/metrics' || path === '/metrics/snapshot')) {
      req.resume();
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET' }, but received '${req.method ?? ''}'.`, { Allow: 'GET' });
        return;
      }
      // Answered during recovery too: an agent stuck recovering is what an operator graphs.
      if (path === '/metrics') await metrics.sendPrometheus(res);
      else metrics.sendSnapshot(res);
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
    const headerError = checkApiHeaders(req.method ?? '', req.headers['content-type']);
    if (headerError !== undefined) {
      req.resume();
      sendError(res, headerError);
      return;
    }
    const body = await readBodyOrAnswer(req, res, MAX_BODY_BYTES);
    if (body === undefined) return;
    // The one v1 call decoder, as the master's APIs (bounded, null is unset, Mesos' messages).
    const call = decodeCall<string, { type?: string } & Record<string, unknown>>(body, AGENT_CALL_SPEC);
    if (!call.ok) {
      sendError(res, call.error);
      return;
    }
    const type = call.type;
    if (!acceptsJson(req.headers['accept'])) {
      sendError(res, fail('NOT_ACCEPTABLE'));
      return;
    }
    const answer = await this.#o.handle(type, call.body);
    if (answer === undefined) {
      sendError(res, fail('NOT_IMPLEMENTED', type));
      return;
    }
    sendJson(res, answer);
  }
}


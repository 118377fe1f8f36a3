/**
 * The scheduler's HTTP API (plans.md §6): `/v1/plans` through the shared plan handler, the pod
 * endpoints (`/v1/pod`, `/v1/pod/status`, `/v1/pod/<name>/status|info|restart|replace`),
 * `/v1/configurations` and `/v1/health`. Bad input gets a 4xx that says what is wrong; a bug
 * answers 500 for that one request and is logged, never taking the scheduler down.
 *
 * Every request is authenticated first (api-auth.ts), from its method and path alone, before its
 * body is read; a mutating call is audited once answered. With TLS (`--tls_cert_file`) the port
 * serves HTTPS, and plain HTTP to it gets a 400 that says to use https:// (io/tls-server.ts).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { plansApi } from '../shared/plans/api.js';
import { isRunning } from '../shared/plans/status.js';
import { fail } from '../shared/errors.js';
import { readBodyOrAnswer, sendError, sendJson, sendText } from '../shared/http.js';
import { stringifyJson } from '../shared/json.js';
import type { Logger } from '../shared/log.js';
import { normalizePath, segmentsBelow, type RequestTarget } from '../shared/paths.js';
import { createHttpListener, type HttpListener, type ServerTls } from '../io/tls-server.js';
import { accessClass, ApiAuth } from './api-auth.js';
import { isLive, parseInstance } from './pods.js';
import type { Service } from './service.js';
import type { SchedulerMetrics } from './metrics.js';
import type { TaskRecord } from './state.js';
import { answerPreflight, corsHeaders, isCorsPath, PLAN_STREAM_PATH, PlanStreams } from './plan-stream.js';

/** Bodies the API reads (plan start parameters) are small. */
const MAX_BODY_BYTES = 1 << 20;
/** `/v1/plans`, as segments. */
const PLANS_PREFIX: readonly string[] = ['v1', 'plans'];
/** What `/v1/pod/<name>/<verb>` may do. */
const POD_VERBS: ReadonlySet<string> = new Set(['status', 'info', 'restart', 'replace']);

export interface ApiPorts {
  readonly service: Service;
  readonly log: Logger;
  /** Stored configurations: ids oldest first, and one by id as JSON text. */
  readonly configIds: () => string[];
  readonly config: (id: string) => string | undefined;
  /** Who may call (default: anybody, no audit lines). */
  readonly auth?: ApiAuth;
  /** HTTPS on the port (default: plain HTTP). */
  readonly tls?: ServerTls | undefined;
  /** `GET /metrics` (a read: --authenticate_http_readonly guards it); without them, 404. */
  readonly metrics?: SchedulerMetrics | undefined;
}

/** JSON with a status other than 200 (plan GETs answer 202/417, health its own code). */
function json(res: ServerResponse, status: number, value: unknown): void {
  const text = stringifyJson(value);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** A task as `/v1/pod/.../status` shows it: the Mesos state without `TASK_`. */
function taskEntry(t: TaskRecord): Record<string, unknown> {
  const e: Record<string, unknown> = { name: t.name, id: t.taskId, status: (t.status?.state ?? 'TASK_STAGING').replace(/^TASK_/, ''), hostname: t.hostname };
  if ((t.info as { check?: unknown }).check !== undefined) e['ready'] = t.ready;
  return e;
}

/**
 * `/v1/health` as the SDK's codes: 318 until subscribed, 500 when the target configuration is in
 * error, 207 while the rollout waits for the operator, 204/202 while it deploys, 203/205 while
 * it recovers, 208 while a step backs off, 200 when all is deployed and nothing recovers.
 */
export function healthOf(service: Service): { code: number; reasons: string[] } {
  if (!service.subscribed) return { code: 318, reasons: ['not subscribed to a master yet'] };
  const plans = service.plans();
  const deploy = plans.find((p) => p.name === 'deploy');
  const recovery = plans.find((p) => p.name === 'recovery');
  const d = deploy?.status() ?? 'COMPLETE';
  const r = recovery?.status() ?? 'COMPLETE';
  if (d === 'ERROR') return { code: 500, reasons: [`deploy plan is in error: ${deploy?.errors().join('; ') ?? ''}`] };
  if (d === 'WAITING') return { code: 207, reasons: ['deploy plan waits for the operator (continue)'] };
  if (d === 'DELAYED' || r === 'DELAYED') return { code: 208, reasons: ['a step is backing off after failures'] };
  if (d === 'PENDING') return { code: 204, reasons: ['deploy plan is pending'] };
  if (isRunning(d)) return { code: 202, reasons: ['deploy plan is in progress'] };
  if (r === 'PENDING') return { code: 203, reasons: ['recovery plan is pending'] };
  if (isRunning(r)) return { code: 205, reasons: ['recovery plan is in progress'] };
  return { code: 200, reasons: [] };
}

/**
 * Routes one request by its canonical target (shared/paths.ts): routes compare the decoded path,
 * and a name in a segment (a plan, a pod, a configuration) is taken from the decoded segments,
 * never decoded a second time.
 */
async function route(ports: ApiPorts, req: IncomingMessage, res: ServerResponse, target: RequestTarget): Promise<void> {
  const path = target.path;
  const [s0, s1, s2, s3, ...more] = target.segments;
  const query = new URLSearchParams(target.query);
  const method = req.method ?? 'GET';
  const { service } = ports;

  const plansBelow = segmentsBelow(target, PLANS_PREFIX);
  if (plansBelow !== undefined) {
    const body = method === 'POST' ? await readBodyOrAnswer(req, res, MAX_BODY_BYTES) : '';
    if (body === undefined) return;
    const answer = plansApi(service.plans(), { method, segments: plansBelow, query, body });
    if (method === 'POST' && answer.status === 200) {
      service.saveOverrides();
      service.kick();
    }
    if ('json' in answer) {
      json(res, answer.status, answer.json);
    } else sendText(res, answer.status, answer.text, answer.allow === undefined ? {} : { Allow: answer.allow });
    return;
  }

  const get = (): boolean => {
    if (method === 'GET') return true;
    sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET' }, but received '${method}'.`, { Allow: 'GET' });
    return false;
  };

  if (path === '/v1/pod') {
    if (get()) sendJson(res, service.instances());
    return;
  }
  if (path === '/v1/pod/status') {
    if (!get()) return;
    const types = service.spec.pods.map((p) => p.type);
    const pods = types.map((type) => ({
      name: type,
      instances: service.instances().filter((n) => parseInstance(n, types)?.podType === type).map((n) => ({ name: n, tasks: service.instanceTasks(n).map(taskEntry) })),
    }));
    sendJson(res, { service: service.spec.name, pods });
    return;
  }
  if (s0 === 'v1' && s1 === 'pod' && s2 !== undefined && s3 !== undefined && more.length === 0 && POD_VERBS.has(s3)) {
    const name = s2;
    const verb = s3;
    const known = service.instances().includes(name);
    if (verb === 'status' || verb === 'info') {
      if (!get()) return;
      if (!known) return sendText(res, 404, `Pod ${name} not found`);
      const tasks = service.instanceTasks(name);
      if (verb === 'status') sendJson(res, { name, tasks: tasks.map(taskEntry) });
      else sendJson(res, tasks.map((t) => (t.status === undefined ? { info: t.info } : { info: t.info, status: t.status })));
      return;
    }
    if (method !== 'POST') {
      sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'POST' }, but received '${method}'.`, { Allow: 'POST' });
      return;
    }
    const tasks = known ? service.restartPod(name, verb === 'replace') : undefined;
    if (tasks === undefined) return sendText(res, 404, `Pod ${name} not found`);
    ports.log.info(verb === 'replace' ? 'pod replace' : 'pod restart', { pod: name, tasks: tasks.map((t) => t.taskId), live: tasks.filter(isLive).length });
    sendJson(res, { pod: name, tasks: tasks.map((t) => t.name) });
    return;
  }
  if (path === '/v1/configurations') {
    if (get()) sendJson(res, ports.configIds());
    return;
  }
  if (path === '/v1/configurations/targetId') {
    if (get()) sendJson(res, service.configId);
    return;
  }
  if (s0 === 'v1' && s1 === 'configurations' && s2 !== undefined && s3 === undefined) {
    if (!get()) return;
    const id = s2 === 'target' ? service.configId : s2;
    const text = ports.config(id);
    if (text === undefined) return sendText(res, 404, `Configuration ${id} not found`);
    res.setHeader('Content-Type', 'application/json');
    res.end(text);
    return;
  }
  if (path === '/metrics' && ports.metrics !== undefined) {
    if (get()) await ports.metrics.sendPrometheus(res);
    return;
  }
  if (path === '/v1/health') {
    if (!get()) return;
    const h = healthOf(service);
    json(res, h.code, query.get('verbose') === 'true' ? { value: h.code, reasons: h.reasons } : { value: h.code });
    return;
  }
  sendText(res, 404, 'Not found');
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * One request: its target read once (shared/paths.ts; an unreadable one is a 400), then
 * authenticated from its method and canonical path (the same target the router then uses, so
 * the guard and the route never disagree on the path), audited when it may change state, then
 * routed.
 */
function handle(ports: ApiPorts, auth: ApiAuth, streams: PlanStreams, req: IncomingMessage, res: ServerResponse): Promise<void> | void {
  const read = normalizePath(req.url ?? '/');
  if (!read.ok) {
    req.resume();
    return sendError(res, read.error);
  }
  const target = read.target;
  const method = req.method ?? 'GET';
  // The master's web console calls the plan routes cross-origin (plan-stream.ts): CORS on every
  // answer there, 401s included, and the preflight answered before authentication.
  if (isCorsPath(target.path)) {
    for (const [k, v] of Object.entries(corsHeaders(header(req, 'origin')))) res.setHeader(k, v);
    if (method === 'OPTIONS') return answerPreflight(req, res);
  }
  const c = accessClass(method, target.path);
  const action = `${method} ${target.path}`;
  const admitted = auth.authenticate(header(req, 'authorization'), c);
  if (!admitted.ok) {
    // The body of a caller that failed authentication is not read.
    req.resume();
    if (c === 'write') auth.audit({ principal: undefined, action, query: target.query.slice(1), status: 401 });
    return sendError(res, fail('UNAUTHORIZED'), admitted.headers);
  }
  if (c === 'write') auth.auditWhenDone(admitted.principal, res, action, target.query.slice(1));
  if (target.path === PLAN_STREAM_PATH) return streams.serve(req, res);
  return route(ports, req, res, target);
}

/** The API server (not yet listening): plain HTTP, or HTTPS with `ports.tls`. */
export function apiServer(ports: ApiPorts): HttpListener {
  const auth = ports.auth ?? ApiAuth.open();
  const streams = new PlanStreams(ports.service);
  const request = (req: IncomingMessage, res: ServerResponse): void => {
    Promise.resolve()
      .then(() => handle(ports, auth, streams, req, res))
      .catch((e: unknown) => {
        ports.log.error('internal error', { path: req.url, error: e });
        if (!res.headersSent) sendText(res, 500, `Internal error: ${(e as Error).message}`);
        else res.destroy();
      });
  };
  return createHttpListener(
    { request },
    {
      tls: ports.tls,
      // A refused handshake is the client's problem, but an operator setting up TLS needs to see it.
      onRefused: (r) => ports.log.warn(r.kind === 'plain-http' ? 'plain HTTP on the TLS port refused' : 'TLS handshake failed', { ...r }),
    },
  );
}

/**
 * `GET /v1/plans/stream`: the scheduler's plans, live, for the master's web console (and
 * anyone with curl). A RecordIO body (`<length>\n<json>`, as the master's operator stream) of
 * `{"type":"PLANS","plans":[{"name":..., <the /v1/plans/<name> JSON>}]}` at once and again after
 * every change, and `{"type":"HEARTBEAT"}` every 15 s so a reader can tell a quiet stream from a
 * dead one.
 *
 * The console is served by the master, so it calls the scheduler cross-origin: `/v1/plans`
 * answers carry CORS headers that echo the caller's Origin and allow the Authorization header,
 * and an OPTIONS preflight is answered before authentication (a preflight never carries
 * credentials). No Allow-Credentials: the browser sends no cookies, only the Authorization
 * header the page sets itself, so echoing the Origin grants a page nothing it could not already
 * do with the operator's secret.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { planInfo } from '../shared/plans/commands.js';
import type { Plan } from '../shared/plans/plan.js';
import { encodeRecord } from '../shared/recordio.js';
import { stringifyJson } from '../shared/json.js';

/** The path of the stream (a plan cannot be named `stream` through the console's eyes: this path wins). */
export const PLAN_STREAM_PATH = '/v1/plans/stream';

/** Streams open at once; past it, the oldest is ended (as the master's operator stream). */
export const MAX_PLAN_STREAMS = 64;
/** Unsent bytes a reader may leave before its stream is closed (a stopped reader must not grow memory). */
const MAX_BUFFERED_BYTES = 4 * 1024 * 1024;
export const PLAN_STREAM_HEARTBEAT_MS = 15_000;

const HEARTBEAT = encodeRecord(stringifyJson({ type: 'HEARTBEAT' }));

/** Whether a path gets CORS headers (the plan routes the console calls). */
export function isCorsPath(path: string): boolean {
  return path === '/v1/plans' || path.startsWith('/v1/plans/');
}

/** The CORS headers of an answer to a request from `origin` (none without an Origin). Pure. */
export function corsHeaders(origin: string | undefined): Record<string, string> {
  if (origin === undefined || origin === '') return {};
  return { 'Access-Control-Allow-Origin': origin, Vary: 'Origin' };
}

/** The answer to an OPTIONS preflight: 204, the methods the plan routes take, and the Authorization header. */
export function answerPreflight(req: IncomingMessage, res: ServerResponse): void {
  req.resume();
  const origin = req.headers['origin'];
  res.writeHead(204, {
    ...corsHeaders(typeof origin === 'string' ? origin : undefined),
    'Access-Control-Allow-Methods': 'GET, POST',
    'Access-Control-Allow-Headers': 'Authorization, Content-Type, Accept',
    'Access-Control-Max-Age': '600',
    'Content-Length': 0,
  });
  res.end();
}

/** The stream's record of the plans. Pure. */
export function plansRecord(plans: readonly Plan[]): string {
  return stringifyJson({ type: 'PLANS', plans: plans.map((p) => ({ name: p.name, ...planInfo(p) })) });
}

export interface PlanSource {
  plans(): Plan[];
  /** Calls `fn` whenever the plans may have changed; returns the unsubscribe. */
  watchPlans(fn: () => void): () => void;
}

/** Every open plan stream of one scheduler: one watcher, one render per change for all of them. */
export class PlanStreams {
  readonly #source: PlanSource;
  readonly #open = new Set<ServerResponse>();
  #last = '';
  #unwatch: (() => void) | undefined;
  #heartbeat: NodeJS.Timeout | undefined;

  constructor(source: PlanSource) {
    this.#source = source;
  }

  get count(): number {
    return this.#open.size;
  }

  /** Answers a GET of the stream (authenticated by the caller): 200 and a body that stays open. */
  serve(req: IncomingMessage, res: ServerResponse): void {
    req.resume();
    if (req.method !== 'GET') {
      res.writeHead(405, { Allow: 'GET', 'Content-Type': 'text/plain; charset=utf-8' });
      res.end(`405 Method Not Allowed. Expecting one of { 'GET' }, but received '${req.method ?? ''}'.`);
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/recordio', 'Cache-Control': 'no-cache', 'X-Content-Type-Options': 'nosniff' });
    res.socket?.setNoDelay(true);
    this.#open.add(res);
    res.on('close', () => this.#drop(res));
    if (this.#unwatch === undefined) {
      this.#last = plansRecord(this.#source.plans());
      this.#unwatch = this.#source.watchPlans(() => this.#changed());
      this.#heartbeat = setInterval(() => this.#broadcast(HEARTBEAT), PLAN_STREAM_HEARTBEAT_MS);
      this.#heartbeat.unref();
    }
    this.#write(res, encodeRecord(this.#last));
    for (const oldest of this.#open) {
      if (this.#open.size <= MAX_PLAN_STREAMS) break;
      this.#drop(oldest);
      oldest.end();
    }
  }

  /** Ends every stream (the scheduler is stopping). */
  close(): void {
    for (const res of [...this.#open]) {
      this.#drop(res);
      res.end();
    }
  }

  #changed(): void {
    const text = plansRecord(this.#source.plans());
    if (text === this.#last) return;
    this.#last = text;
    this.#broadcast(encodeRecord(text));
  }

  #broadcast(bytes: Buffer): void {
    for (const res of [...this.#open]) this.#write(res, bytes);
  }

  #write(res: ServerResponse, bytes: Buffer): void {
    if (res.destroyed || res.writableEnded) return;
    res.write(bytes);
    if (res.writableLength > MAX_BUFFERED_BYTES) {
      this.#drop(res);
      res.destroy();
    }
  }

  #drop(res: ServerResponse): void {
    if (!this.#open.delete(res) || this.#open.size > 0) return;
    this.#unwatch?.();
    this.#unwatch = undefined;
    clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }
}

/**
 * The scheduler's own API URL, advertised as FrameworkInfo.webui_url so the master's console can
 * find its plans: the --ip it listens on, or the host's name when that is a wildcard. Pure.
 */
export function advertisedApiUrl(ip: string, port: number, tls: boolean, hostname: string): string {
  const host = ip === '0.0.0.0' || ip === '::' || ip === '' ? hostname : ip.includes(':') ? `[${ip}]` : ip;
  return `${tls ? 'https' : 'http'}://${host}:${port}`;
}

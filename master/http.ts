/**
 * The master's HTTP routing (node:http): the operator API, /health, /version, and the agent
 * session upgrade. Master endpoints are also under /master/ (libprocess delegation) and the
 * API under /mesos/api/v1 (DC/OS clients). A bad request never takes the master down: every
 * handler's failure becomes a 500 with a message and a log line.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fail, DrydockError } from '../shared/errors.js';
import { stringifyJson } from '../shared/json.js';
import type { Logger } from '../shared/log.js';
import { AgentSessions } from './agent-sessions.js';
import { masterFail } from './errors.js';
import type { OperatorStreams } from './operator-stream.js';
import type { Master } from './master.js';
import { answerCall, checkApiHeaders, MAX_API_BODY_BYTES, parseApiCall, versionInfo } from './operator-api.js';
import { handleSchedulerRequest, SCHEDULER_PATHS } from './scheduler-api.js';
import { answerMaintenanceCall, handleMaintenanceRequest, maintenanceRoute } from './maintenance-api.js';
import type { MasterError } from './errors.js';

const API_PATHS = new Set(['/api/v1', '/master/api/v1', '/mesos/api/v1']);
const HEALTH_PATHS = new Set(['/health', '/master/health']);
const VERSION_PATHS = new Set(['/version', '/master/version']);

/** Builds the HTTP server; the caller listens. */
export function createMasterServer(master: Master, sessions: AgentSessions, streams: OperatorStreams, logger: Logger): Server {
  const log = logger;
  const server = createServer((req, res) => {
    route(master, streams, req, res).catch((e: unknown) => {
      log.error('internal error', { where: 'http', method: req.method, url: req.url, error: e });
      if (!res.headersSent) sendText(res, 500, masterFail('INTERNAL', e instanceof Error ? e.message : String(e)).message);
      else res.destroy();
    });
  });
  server.on('upgrade', (req: IncomingMessage, socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    if (AgentSessions.handles(pathOf(req.url))) {
      try {
        sessions.handleUpgrade(req, socket, head);
      } catch (e) {
        log.error('internal error', { where: 'upgrade', error: e });
        socket.destroy();
      }
      return;
    }
    socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: 14\r\n\r\n404 Not Found.');
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
    else socket.destroy();
  });
  return server;
}

function pathOf(url: string | undefined): string {
  const u = url ?? '/';
  const q = u.indexOf('?');
  return q === -1 ? u : u.slice(0, q);
}

async function route(master: Master, streams: OperatorStreams, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = pathOf(req.url);
  if (API_PATHS.has(path)) return api(master, streams, req, res);
  if (SCHEDULER_PATHS.has(path)) return handleSchedulerRequest(master, req, res);
  const maintenance = maintenanceRoute(path);
  if (maintenance !== undefined) return handleMaintenanceRequest(master, maintenance, req, res);
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
  req.resume();
  sendError(res, fail('NOT_FOUND'));
}

async function api(master: Master, streams: OperatorStreams, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (master.state !== 'SERVING') {
    req.resume();
    return sendError(res, fail('NOT_RECOVERED'));
  }
  const headerError = checkApiHeaders(req.method ?? '', req.headers['content-type']);
  if (headerError !== undefined) {
    req.resume();
    return sendError(res, headerError);
  }
  const body = await readBody(req, MAX_API_BODY_BYTES);
  if (body === undefined) return sendError(res, fail('BODY_TOO_LARGE', MAX_API_BODY_BYTES), true);
  const parsed = parseApiCall(body, req.headers['accept']);
  if (!parsed.ok) return sendError(res, parsed.error);
  // The one call whose answer stays open: same framing checks as the others, then a stream.
  if (parsed.call.type === 'SUBSCRIBE') return streams.subscribe(res);
  // Maintenance calls write the registry before answering, so they are answered asynchronously.
  const answer = (await answerMaintenanceCall(master, parsed.call)) ?? (await answerCall(master, parsed.call));
  if (!answer.ok) return sendError(res, answer.error);
  if (answer.json === undefined) {
    res.writeHead(200, { 'Content-Length': 0 });
    res.end();
    return;
  }
  sendJson(res, answer.json);
}

/** Reads the body as UTF-8; undefined when it exceeds `limit` bytes (the rest is not read). */
function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let done = false;
    req.on('data', (chunk: Buffer) => {
      if (done) return;
      size += chunk.length;
      if (size > limit) {
        done = true;
        resolve(undefined);
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => {
      if (!done) resolve(Buffer.concat(chunks).toString('utf8'));
    });
    req.on('error', (e) => {
      if (!done) reject(e);
    });
  });
}

function sendJson(res: ServerResponse, value: unknown): void {
  const text = stringifyJson(value);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, e: DrydockError | MasterError, closeAfter = false): void {
  const headers: Record<string, string> = {};
  if (e.code === 'METHOD_NOT_ALLOWED') headers['Allow'] = 'POST';
  // After an oversized body we stop reading; the connection cannot be reused.
  if (closeAfter) headers['Connection'] = 'close';
  sendText(res, e.status, e.message, headers);
}

function sendMethodNotAllowed(res: ServerResponse, method: string, allow: string): void {
  const e = fail('METHOD_NOT_ALLOWED', method);
  sendText(res, e.status, e.message.replace("'POST'", `'${allow}'`), { Allow: allow });
}

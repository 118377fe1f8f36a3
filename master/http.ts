/**
 * The master's HTTP routing (node:http): the operator API, /health, /version, and the agent
 * session upgrade. Master endpoints are also under /master/ (libprocess delegation) and the
 * API under /mesos/api/v1 (DC/OS clients). A bad request never takes the master down: every
 * handler's failure becomes a 500 with a message and a log line.
 */

import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { fail } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { AgentSessions } from './agent-sessions.js';
import type { OperatorStreams } from './operator-stream.js';
import type { Master } from './master.js';
import { answerCall, parseApiCall, versionInfo } from './operator-api.js';
import { handleSchedulerRequest, SCHEDULER_PATHS } from './scheduler-api.js';
import { answerMaintenanceCall, handleMaintenanceRequest, maintenanceRoute } from './maintenance-api.js';
import { sendError, sendJson, sendText } from '../shared/http.js';
import { readApiBody } from './http-exchange.js';

const API_PATHS = new Set(['/api/v1', '/master/api/v1', '/mesos/api/v1']);
const HEALTH_PATHS = new Set(['/health', '/master/health']);
const VERSION_PATHS = new Set(['/version', '/master/version']);

/** Builds the HTTP server; the caller listens. */
export function createMasterServer(master: Master, sessions: AgentSessions, streams: OperatorStreams, logger: Logger): Server {
  const log = logger;
  const server = createServer((req, res) => {
    route(master, streams, req, res).catch((e: unknown) => {
      log.error('internal error', { where: 'http', method: req.method, url: req.url, error: e });
      if (!res.headersSent) sendText(res, 500, fail('INTERNAL', e instanceof Error ? e.message : String(e)).message);
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
  const body = await readApiBody(master, req, res);
  if (body === undefined) return;
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

function sendMethodNotAllowed(res: ServerResponse, method: string, allow: string): void {
  const e = fail('METHOD_NOT_ALLOWED', method);
  sendText(res, e.status, e.message.replace("'POST'", `'${allow}'`), { Allow: allow });
}

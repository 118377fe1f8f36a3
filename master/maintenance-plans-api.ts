/**
 * `/v1/maintenance/plans` on the master (issue 12): `GET` the names, `POST` a spec (YAML or JSON
 * text) to create and start a plan; under `/v1/maintenance/plans/<name>` the verbs, codes and JSON
 * of `/v1/plans` (shared/plans/api.ts), plus `DELETE` of a COMPLETE or stopped plan. The router
 * (http.ts) sends these here only while a term runs; otherwise it answers 307/503 like the rest.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBodyOrAnswer, sendError, sendJson, sendText } from '../shared/http.js';
import { stringifyJson } from '../shared/json.js';
import type { MaintenancePlans } from './maintenance-plans.js';
import { MAX_API_BODY_BYTES } from './operator-api.js';
import type { Access } from './security.js';

const PREFIX = '/v1/maintenance/plans';

/** Whether a path is one of these routes. */
export function isMaintenancePlansPath(path: string): boolean {
  return path === PREFIX || path.startsWith(`${PREFIX}/`);
}

/** Handles one request; `plans` is the current term's service. */
export async function handleMaintenancePlansRequest(plans: MaintenancePlans, req: IncomingMessage, res: ServerResponse, access: Access): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://master');
  const sub = url.pathname.slice(PREFIX.length);
  const method = req.method ?? 'GET';
  if (sub === '' || sub === '/') {
    if (method === 'GET' || method === 'HEAD') {
      req.resume();
      return sendJson(res, plans.names());
    }
    if (method !== 'POST') {
      req.resume();
      return sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET', 'POST' }, but received '${method}'.`, { Allow: 'GET, POST' });
    }
    const text = await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
    if (text === undefined) return;
    const created = await plans.create(text);
    if (!created.ok) return sendError(res, created.error);
    return sendJson(res, { message: created.message });
  }
  const parts = sub.split('/').filter((p) => p !== '');
  if (method === 'DELETE' && parts.length === 1) {
    req.resume();
    let name: string;
    try {
      name = decodeURIComponent(parts[0] ?? '');
    } catch {
      return sendText(res, 404, '404 Not Found.');
    }
    const refused = await plans.delete(name);
    if (refused !== undefined) return sendError(res, refused);
    return sendJson(res, { message: `deleted maintenance plan ${name}` });
  }
  const body = method === 'POST' ? await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES) : '';
  if (body === undefined) return;
  if (method !== 'POST') req.resume();
  const answer = await plans.request(method, sub, url.searchParams, body);
  if ('json' in answer) {
    const text = stringifyJson(answer.json);
    res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  sendText(res, answer.status, answer.text, answer.allow === undefined ? {} : { Allow: answer.allow });
}

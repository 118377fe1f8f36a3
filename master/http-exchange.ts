/**
 * The plumbing every master HTTP shell shares: reading a bounded request body and writing
 * JSON, JSONP and plain-text answers. Error answers are plain text, as Mesos writes them.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type DrydockError } from '../shared/errors.js';
import { stringifyJson } from '../shared/json.js';
import type { Master } from './master.js';
import { checkApiHeaders, MAX_API_BODY_BYTES } from './operator-api.js';

/** Reads the body as UTF-8; undefined when it exceeds `limit` bytes (the rest is not read). */
export function readBody(req: IncomingMessage, limit: number): Promise<string | undefined> {
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

/** 200 with JSON (int64 bigints written as bare digits). */
export function sendJson(res: ServerResponse, value: unknown): void {
  sendJsonp(res, value, undefined);
}

/** 200 with JSON, or `callback(json);` as text/javascript when a JSONP callback is given. */
export function sendJsonp(res: ServerResponse, value: unknown, callback: string | undefined): void {
  const json = stringifyJson(value);
  const text = callback === undefined ? json : `${callback}(${json});`;
  res.writeHead(200, { 'Content-Type': callback === undefined ? 'application/json' : 'text/javascript', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * An error with its status and message. A 405 for POST-only endpoints carries `Allow: POST`;
 * after an oversized body the connection is closed, since the rest of the body was not read.
 */
export function sendError(res: ServerResponse, e: DrydockError, headers: Record<string, string> = {}): void {
  const h = { ...headers };
  if (e.code === 'METHOD_NOT_ALLOWED' && h['Allow'] === undefined) h['Allow'] = 'POST';
  if (e.code === 'BODY_TOO_LARGE') h['Connection'] = 'close';
  sendText(res, e.status, e.message, h);
}

/**
 * The framing every v1 endpoint (operator and scheduler) applies before parsing, in Mesos'
 * order (reference §0.3): recovered, method and Content-Type, then a bounded body. Resolves
 * with the body, or undefined once the error has been answered.
 */
export async function readApiBody(master: Master, req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
  if (master.state !== 'SERVING') {
    req.resume();
    sendError(res, fail('NOT_RECOVERED'));
    return undefined;
  }
  const headerError = checkApiHeaders(req.method ?? '', req.headers['content-type']);
  if (headerError !== undefined) {
    req.resume();
    sendError(res, headerError);
    return undefined;
  }
  const body = await readBody(req, MAX_API_BODY_BYTES);
  if (body === undefined) sendError(res, fail('BODY_TOO_LARGE', MAX_API_BODY_BYTES));
  return body;
}

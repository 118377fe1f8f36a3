/**
 * HTTP framing both daemons share (reference/mesos-api.md §0.3): bounded request bodies,
 * Content-Type and Accept rules, and the plain-text and JSON answers Mesos writes. It works
 * on the request and response objects it is handed; nothing listens here.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type DrydockError } from './errors.js';
import { stringifyJson } from './json.js';

/**
 * How much of an oversized body is read and thrown away before the 413 goes out. A client
 * that is still sending when the server answers and closes sees a connection reset, never
 * the 413; reading the rest first lets it read the answer. Past this much, the answer goes
 * out anyway and the connection is closed under the sender.
 */
export const MAX_DISCARD_BYTES = 64 * 1024 * 1024;

/** A request body: its text, or why there is none. */
export type Body =
  | { ok: true; text: string }
  /** Over the limit: answer 413 and close. */
  | { ok: false; reason: 'TOO_LARGE' }
  /** The client went away before the body ended: there is nobody to answer. */
  | { ok: false; reason: 'ABORTED' };

/** Reads the body as UTF-8, at most `limit` bytes. Never rejects. */
export function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (b: Body): void => {
      if (settled) return;
      settled = true;
      resolve(b);
    };
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (size > limit + MAX_DISCARD_BYTES) {
        req.pause();
        settle({ ok: false, reason: 'TOO_LARGE' });
      }
    });
    req.on('end', () => settle(size > limit ? { ok: false, reason: 'TOO_LARGE' } : { ok: true, text: Buffer.concat(chunks).toString('utf8') }));
    // A client that disconnects mid-body is not an error of ours: 'error' (ECONNRESET, "aborted") or 'close' before 'end'.
    req.on('error', () => settle({ ok: false, reason: 'ABORTED' }));
    req.on('close', () => settle({ ok: false, reason: 'ABORTED' }));
  });
}

/** The media type of a header value, without parameters, lowercased (`application/json; charset=utf-8` -> `application/json`). */
export function mediaType(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

/**
 * Checks 4 and 5 of §0.3 (method, Content-Type) on the headers alone, before the body is read.
 * Accepts more than Mesos: Content-Type parameters, and curl's form default on a JSON body.
 */
export function checkApiHeaders(method: string, contentType: string | undefined): DrydockError | undefined {
  if (method !== 'POST') return fail('METHOD_NOT_ALLOWED', method);
  if (contentType === undefined || contentType.trim() === '') return fail('CONTENT_TYPE_MISSING');
  const type = mediaType(contentType);
  if (type === 'application/json') return undefined;
  // `curl -d '{...}'` sends this; the body is still JSON (DESIGN.md: accept curl's default).
  if (type === 'application/x-www-form-urlencoded') return undefined;
  if (type === 'application/x-protobuf') return fail('PROTOBUF_UNSUPPORTED');
  return fail('CONTENT_TYPE_UNSUPPORTED');
}

/** Does an Accept header allow JSON? Absent means anything; `q=0` means "not this one". */
export function acceptsJson(accept: string | undefined): boolean {
  if (accept === undefined || accept.trim() === '') return true;
  for (const part of accept.split(',')) {
    const [range = '', ...params] = part.split(';');
    const type = range.trim().toLowerCase();
    const q = params.map((p) => p.trim()).find((p) => p.startsWith('q='));
    if (q !== undefined && Number(q.slice(2)) === 0) continue;
    if (type === 'application/json' || type === 'application/*' || type === '*/*') return true;
  }
  return false;
}

export function sendText(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...headers, 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** 200 with JSON, or `callback(json);` as text/javascript when a JSONP callback is given. Int64 bigints are bare digits. */
export function sendJson(res: ServerResponse, value: unknown, callback?: string): void {
  const json = stringifyJson(value);
  const text = callback === undefined ? json : `${callback}(${json});`;
  res.writeHead(200, { 'Content-Type': callback === undefined ? 'application/json' : 'text/javascript', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * An error with its status and message. A 405 for POST-only endpoints carries `Allow: POST`;
 * after an oversized body the connection is closed, since the rest of the body may still be
 * on its way.
 */
export function sendError(res: ServerResponse, e: DrydockError, headers: Record<string, string> = {}): void {
  const h = { ...headers };
  if (e.code === 'METHOD_NOT_ALLOWED' && h['Allow'] === undefined) h['Allow'] = 'POST';
  if (e.code === 'BODY_TOO_LARGE') h['Connection'] = 'close';
  sendText(res, e.status, e.message, h);
}

/**
 * Reads a bounded body and answers the failures itself: 413 (then the connection closes),
 * or nothing for a client that went away. Resolves with the text, or undefined when answered.
 */
export async function readBodyOrAnswer(req: IncomingMessage, res: ServerResponse, limit: number): Promise<string | undefined> {
  const body = await readBody(req, limit);
  if (body.ok) return body.text;
  if (body.reason === 'TOO_LARGE') {
    sendError(res, fail('BODY_TOO_LARGE', limit));
    // Still sending past the discard bound: close under it once the 413 is out.
    if (!req.complete) res.on('finish', () => req.socket.destroy());
  } else res.destroy();
  return undefined;
}

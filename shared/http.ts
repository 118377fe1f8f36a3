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

/** A request body as bytes (a protobuf body is not text), or why there is none. */
export type BodyBytes = { ok: true; bytes: Buffer } | { ok: false; reason: 'TOO_LARGE' | 'ABORTED' };

/** Reads the body as UTF-8, at most `limit` bytes. Never rejects. */
export async function readBody(req: IncomingMessage, limit: number): Promise<Body> {
  const b = await readBodyBytes(req, limit);
  return b.ok ? { ok: true, text: b.bytes.toString('utf8') } : b;
}

/** Reads the body's bytes, at most `limit`. Never rejects. */
export function readBodyBytes(req: IncomingMessage, limit: number): Promise<BodyBytes> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (b: BodyBytes): void => {
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
    req.on('end', () => settle(size > limit ? { ok: false, reason: 'TOO_LARGE' } : { ok: true, bytes: chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks) }));
    // A client that disconnects mid-body is not an error of ours: 'error' (ECONNRESET, "aborted") or 'close' before 'end'.
    req.on('error', () => settle({ ok: false, reason: 'ABORTED' }));
    req.on('close', () => settle({ ok: false, reason: 'ABORTED' }));
  });
}

/** The media type of a header value, without parameters, lowercased (`application/json; charset=utf-8` -> `application/json`). */
export function mediaType(value: string): string {
  return (value.split(';')[0] ?? '').trim().toLowerCase();
}

/** The media types of Mesos' v1 APIs (`src/common/http.hpp`). */
export const APPLICATION_JSON = 'application/json';
export const APPLICATION_PROTOBUF = 'application/x-protobuf';
export const APPLICATION_RECORDIO = 'application/recordio';

/** The encoding of a v1 body: JSON or protobuf (a codec: shared/codec.ts). */
export type Encoding = 'json' | 'protobuf';

/**
 * Checks 4 and 5 of §0.3 (method, Content-Type) on the headers alone, before the body is read:
 * the request's encoding, or the error to answer. Accepts more than Mesos: Content-Type
 * parameters and case, and curl's form default on a JSON body.
 */
export function requestEncoding(method: string, contentType: string | undefined): Encoding | DrydockError {
  if (method !== 'POST') return fail('METHOD_NOT_ALLOWED', method);
  if (contentType === undefined || contentType.trim() === '') return fail('CONTENT_TYPE_MISSING');
  const type = mediaType(contentType);
  if (type === APPLICATION_JSON) return 'json';
  // `curl -d '{...}'` sends this; the body is still JSON (DESIGN.md: accept curl's default).
  if (type === 'application/x-www-form-urlencoded') return 'json';
  if (type === APPLICATION_PROTOBUF) return 'protobuf';
  return fail('CONTENT_TYPE_UNSUPPORTED');
}

/** requestEncoding's error alone: undefined when the request may go on. */
export function checkApiHeaders(method: string, contentType: string | undefined): DrydockError | undefined {
  const e = requestEncoding(method, contentType);
  return typeof e === 'string' ? undefined : e;
}

/**
 * Whether a header in Accept's syntax (Accept, Message-Accept) allows `type`, as libprocess
 * decides (`Request::acceptsMediaType`): an absent header allows everything; otherwise the most
 * specific range that names it decides (`type/subtype`, then `type/*`, then `*\/*`), the first
 * such entry in the header, and a `q` of 0 refuses. Drydock also reads an empty header as absent.
 */
export function acceptsMediaType(header: string | undefined, type: string): boolean {
  if (header === undefined || header.trim() === '') return true;
  const slash = type.indexOf('/');
  const candidates = [type, `${type.slice(0, slash)}/*`, '*/*'];
  const entries = header.replace(/[ \t\n]/g, '').split(',').filter((e) => e !== '');
  for (const candidate of candidates) {
    for (const entry of entries) {
      const [range = '', ...params] = entry.split(';');
      if (range.toLowerCase() !== candidate) continue;
      const q = params.filter((p) => p.startsWith('q='));
      // No q, or a malformed one, allows it.
      if (q.length !== 1) return true;
      const v = Number((q[0] as string).slice(2));
      return !Number.isNaN(v) && v > 0;
    }
  }
  return false;
}

/** Does an Accept header allow JSON? */
export function acceptsJson(accept: string | undefined): boolean {
  return acceptsMediaType(accept, APPLICATION_JSON);
}

/**
 * The encoding of a v1 answer from Accept (check 8 of §0.3): JSON when allowed, else protobuf
 * when allowed (JSON first, whatever the request's encoding, as Mesos chooses), else the 406.
 */
export function answerEncoding(accept: string | undefined): Encoding | DrydockError {
  if (acceptsMediaType(accept, APPLICATION_JSON)) return 'json';
  if (acceptsMediaType(accept, APPLICATION_PROTOBUF)) return 'protobuf';
  return fail('NOT_ACCEPTABLE');
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
  const bytes = await readBodyBytesOrAnswer(req, res, limit);
  return bytes === undefined ? undefined : bytes.toString('utf8');
}

/** readBodyOrAnswer for a body of any encoding: its bytes. */
export async function readBodyBytesOrAnswer(req: IncomingMessage, res: ServerResponse, limit: number): Promise<Buffer | undefined> {
  const body = await readBodyBytes(req, limit);
  if (body.ok) return body.bytes;
  if (body.reason === 'TOO_LARGE') {
    sendError(res, fail('BODY_TOO_LARGE', limit));
    // Still sending past the discard bound: close under it once the 413 is out.
    if (!req.complete) res.on('finish', () => req.socket.destroy());
  } else res.destroy();
  return undefined;
}

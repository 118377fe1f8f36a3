/**
 * `?jsonp=<callback>` on the GETs that answer JSON, as libprocess answers them: the body is
 * `callback(json);` as `text/javascript`. Mesos' web UI loads every master and agent endpoint
 * this way (AngularJS' `angular.callbacks._0`, jQuery's `jQuery1234_5678` in the file pailer).
 *
 * Mesos writes whatever callback it is given; Drydock only writes a JavaScript name or a dotted
 * path of names (`cb`, `angular.callbacks._0`), at most 128 characters. Anything else (a
 * parenthesis, a quote, a semicolon, a comment) could turn the answer into a script of the
 * caller's choosing on a page that loads it, so it is refused with a 400 that says what is
 * accepted. Pure.
 */

import { fail, type DrydockError } from './errors.js';

/** Longest callback accepted: generated names are short (`angular.callbacks._12`, `jQuery<digits>_<digits>`). */
export const MAX_JSONP_CALLBACK = 128;

/** A JavaScript identifier (ASCII), then any number of `.identifier`. */
const CALLBACK = /^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$/;

/** The callback of a query (as sent, with or without its `?`): none, a checked name, or the 400. */
export type JsonpCallback = { ok: true; callback: string | undefined } | { ok: false; error: DrydockError };

/** Reads `jsonp` from a query; an empty one is none (libprocess' `jsonp=` writes plain JSON too). */
export function jsonpCallback(query: string): JsonpCallback {
  const cb = new URLSearchParams(query).get('jsonp');
  if (cb === null || cb === '') return { ok: true, callback: undefined };
  if (cb.length > MAX_JSONP_CALLBACK || !CALLBACK.test(cb)) return { ok: false, error: fail('JSONP_CALLBACK_INVALID', cb) };
  return { ok: true, callback: cb };
}

/**
 * A JSON text as the answer's body: itself, or wrapped in the callback; with its Content-Type.
 * In a script, U+2028 and U+2029 (valid inside JSON strings, a task's output may hold them) are
 * line terminators to engines before ES2019: they are written escaped.
 */
export function jsonpBody(json: string, callback: string | undefined): { body: string; contentType: string } {
  if (callback === undefined) return { body: json, contentType: 'application/json' };
  return { body: `${callback}(${json.replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029')});`, contentType: 'text/javascript' };
}

// ---- Written in pieces (the master's large answers, master/api/json-stream.ts) --------------------

/** What comes before the JSON of a JSONP answer written in pieces. */
export function jsonpPrefix(callback: string): string {
  return `${callback}(`;
}

/** What comes after it: libprocess ends the call with `);`. */
export const JSONP_SUFFIX = ');';

/** The Content-Type of an answer, with or without a callback. */
export function jsonContentType(callback: string | undefined): string {
  return callback === undefined ? 'application/json' : 'text/javascript';
}

/** U+2028 and U+2029 as UTF-8 (E2 80 A8, E2 80 A9): no other character's bytes contain E2 80 A8/A9. */
const LINE_SEPARATOR_LEAD = Buffer.from([0xe2, 0x80]);

/**
 * A chunk of a JSONP answer's UTF-8 JSON with U+2028 and U+2029 written escaped, as jsonpBody
 * writes them. A chunk holds whole characters (each is the encoding of a whole text), so a
 * separator is never split between chunks. The chunk itself when it has none (the common case:
 * no copy).
 */
export function escapeLineSeparators(chunk: Buffer): Buffer {
  let at = chunk.indexOf(LINE_SEPARATOR_LEAD);
  while (at !== -1 && chunk[at + 2] !== 0xa8 && chunk[at + 2] !== 0xa9) at = chunk.indexOf(LINE_SEPARATOR_LEAD, at + 1);
  if (at === -1) return chunk;
  return Buffer.from(chunk.toString('utf8').replace(/\u2028/g, '\\u2028').replace(/\u2029/g, '\\u2029'), 'utf8');
}

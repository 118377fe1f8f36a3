/**
 * `?jsonp=<callback>`, as libprocess answers it (`OK(json, jsonp)`): the JSON wrapped as
 * `callback(json);` with `Content-Type: text/javascript`, which a page loads with a <script> tag
 * (Mesos' web UI reads every endpoint this way, to follow a redirect to the leader without
 * CORS). libprocess writes any callback it is given; Drydock takes only a JavaScript name or a
 * dotted path of names (`cb`, `jQuery3600_1`, `angular.callbacks._0`), so the answer can call a
 * function and nothing else: no `alert(1);//`, no markup, no parentheses. Pure: the master and
 * the agent read it the same way.
 */

import { fail, type DrydockError } from './errors.js';

/** Longest callback taken (Angular's and jQuery's are under 40 characters). */
export const MAX_JSONP_CALLBACK = 128;

/** A name of letters, digits, `_` and `$` not starting with a digit; names joined by dots. */
const CALLBACK = /^[A-Za-z_$][A-Za-z0-9_$]*(?:\.[A-Za-z_$][A-Za-z0-9_$]*)*$/;

/** The callback of a query as sent (`?a=1&jsonp=cb`): none (no `jsonp`, or empty: plain JSON), the name, or the 400 to answer. */
export type JsonpRead = { ok: true; callback: string | undefined } | { ok: false; error: DrydockError };

/** Reads `jsonp` from a query string as sent (with or without its `?`); the first one counts. */
export function readJsonpCallback(query: string): JsonpRead {
  const cb = new URLSearchParams(query).get('jsonp');
  if (cb === null || cb === '') return { ok: true, callback: undefined };
  if (cb.length > MAX_JSONP_CALLBACK || !CALLBACK.test(cb)) return { ok: false, error: fail('JSONP_CALLBACK_INVALID', cb) };
  return { ok: true, callback: cb };
}

/** What comes before the JSON of a JSONP answer. */
export function jsonpPrefix(callback: string): string {
  return `${callback}(`;
}

/** What comes after it: libprocess ends the call with `);`. */
export const JSONP_SUFFIX = ');';

/** The Content-Type of an answer, with or without a callback. */
export function jsonContentType(callback: string | undefined): string {
  return callback === undefined ? 'application/json' : 'text/javascript';
}

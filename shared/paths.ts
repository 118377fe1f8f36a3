/**
 * One reading of a request target for every HTTP server of the project (master, agent API,
 * drydock-scheduler): the canonical path that routing and authorization both see, so that no
 * spelling of a path (`//`, `/./`, `%2e%2e`, a trailing slash, `%`-encoded letters) reaches a
 * route, or skips a check, that its canonical form would not. Pure.
 *
 * The rules, in order:
 * - origin form `/path?query`; the absolute form `http://host/path?query` (which HTTP/1.1
 *   servers must accept, RFC 9112 §3.2.2) is read as its path and query, the authority ignored;
 *   anything else (`*`, `host:port`, a relative path) is refused;
 * - the query is split off at the first `?` and kept exactly as sent;
 * - the path is split on `/` and each segment is percent-decoded as UTF-8: a malformed `%`
 *   escape or bytes that are not UTF-8 are refused, and so is a decoded segment holding `/`,
 *   `\`, NUL or any other control character (`%2F` never becomes a separator);
 * - empty segments and `.` are dropped, `..` removes the segment before it and is refused
 *   above the root (RFC 3986 would clamp it there; a client that climbs past the root is
 *   either confused or probing);
 * - the path is `/` and the segments joined by `/`, with no trailing slash (`/` stays `/`).
 */

import { fail, type DrydockError } from './errors.js';

/** A request target, read. */
export interface RequestTarget {
  /** The canonical path, decoded: `/v1/maintenance/plans/p-r1`. What routes compare. */
  readonly path: string;
  /** The decoded segments of `path`, none empty, none `.` or `..`, none holding `/`. */
  readonly segments: readonly string[];
  /** The canonical path with each segment percent-encoded again: safe in a Location header. */
  readonly encodedPath: string;
  /** The query as the client sent it, with its `?` (`''` when there is none). */
  readonly query: string;
}

/** The outcome: the target, or the 400 that says what is wrong with it. */
export type TargetResult = { readonly ok: true; readonly target: RequestTarget } | { readonly ok: false; readonly error: DrydockError };

/** `http://host` or `https://host` at the start of an absolute-form target (scheme case-insensitive). */
const ABSOLUTE_FORM = /^https?:\/\/[^/?#]*/i;
/** What a decoded segment may never hold: a separator of either kind, NUL and the other controls. */
const FORBIDDEN_IN_SEGMENT = /[/\\\u0000-\u001f\u007f]/;
/** A `%` not followed by two hex digits. */
const MALFORMED_ESCAPE = /%(?![0-9A-Fa-f]{2})/;

const refuse = (detail: string): TargetResult => ({ ok: false, error: fail('PATH_INVALID', detail) });

/** Shortens what a refusal quotes: a target may be kilobytes long. */
function quote(text: string): string {
  return JSON.stringify(text.length > 80 ? `${text.slice(0, 80)}...` : text);
}

/** Reads a request target (`req.url`) into its canonical path and its query, or refuses it. Pure. */
export function normalizePath(raw: string): TargetResult {
  let rest = raw;
  const absolute = ABSOLUTE_FORM.exec(rest);
  if (absolute !== null) {
    rest = rest.slice(absolute[0].length);
    // `http://host` and `http://host?q` name the root.
    if (!rest.startsWith('/')) rest = `/${rest}`;
  }
  const q = rest.indexOf('?');
  const rawPath = q === -1 ? rest : rest.slice(0, q);
  const query = q === -1 ? '' : rest.slice(q);
  if (!rawPath.startsWith('/')) return refuse(`the request target ${quote(raw)} is not a path starting with '/'`);
  // Node's parser refuses these already; the function must not rely on the server in front of it.
  if (/[^\x21-\x7e]/.test(rawPath)) return refuse(`the path ${quote(rawPath)} holds a space, a control character or a byte outside ASCII (percent-encode it)`);
  if (rawPath.includes('#')) return refuse(`the path ${quote(rawPath)} holds a fragment ('#'), which a request never carries`);
  const segments: string[] = [];
  for (const piece of rawPath.split('/')) {
    if (MALFORMED_ESCAPE.test(piece)) return refuse(`the path segment ${quote(piece)} holds a '%' that is not followed by two hex digits`);
    let segment: string;
    try {
      segment = decodeURIComponent(piece);
    } catch {
      return refuse(`the path segment ${quote(piece)} does not decode to UTF-8`);
    }
    if (FORBIDDEN_IN_SEGMENT.test(segment)) return refuse(`the path segment ${quote(piece)} decodes to a '/', '\\', NUL or another control character`);
    if (segment === '' || segment === '.') continue;
    if (segment === '..') {
      if (segments.pop() === undefined) return refuse(`the path ${quote(rawPath)} climbs above the root ('..')`);
      continue;
    }
    segments.push(segment);
  }
  return {
    ok: true,
    target: {
      path: `/${segments.join('/')}`,
      segments,
      encodedPath: `/${segments.map(encodeURIComponent).join('/')}`,
      query,
    },
  };
}

/**
 * The segments of `target` below a route's `prefix` (given as segments), or undefined when the
 * target is not under it. `[]` is the prefix itself: a list route's own path. Pure.
 */
export function segmentsBelow(target: RequestTarget, prefix: readonly string[]): readonly string[] | undefined {
  if (target.segments.length < prefix.length) return undefined;
  for (let i = 0; i < prefix.length; i++) if (target.segments[i] !== prefix[i]) return undefined;
  return target.segments.slice(prefix.length);
}

// Calls to the master (and to service schedulers) with the operator's credentials. Every call is
// made with `credentials: 'omit'` and an explicit Authorization header: the browser then never
// shows its own Basic dialog on a 401, and the page shows its sign-in form instead.
//
// Calls to the master use `redirect: 'manual'`: a standby answers 307 to the leader, which a
// script may not follow across origins; the page instead reloads `/`, which the standby
// redirects to the leader's console.

const KEY = 'drydock.console.credentials';

/** The signed-in principal and secret (this tab only: sessionStorage), or undefined. */
export function credentials() {
  try {
    const v = sessionStorage.getItem(KEY);
    return v === null ? undefined : JSON.parse(v);
  } catch {
    return undefined;
  }
}

export function signIn(principal, secret) {
  sessionStorage.setItem(KEY, JSON.stringify({ principal, secret }));
}

export function signOut() {
  sessionStorage.removeItem(KEY);
}

/** HTTP Basic of UTF-8 `principal:secret` (btoa alone takes Latin-1 only). */
export function basicAuth(principal, secret) {
  const bytes = new TextEncoder().encode(`${principal}:${secret}`);
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return `Basic ${btoa(bin)}`;
}

/** A refusal with the server's own message (401, 403, 4xx, 5xx). */
export class ApiError extends Error {
  constructor(status, message, url) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.url = url;
  }
}

/** This master does not lead (it answered 307): the page must go to `/` again. */
export class LeaderMoved extends Error {
  constructor() {
    super('this master is not the leader');
  }
}

/**
 * One request. `external`: a service scheduler (follows redirects, CORS). Answers with a status
 * of 400 and up are thrown as ApiError, except `okStatuses` (plan GETs answer 202 and 417).
 */
export async function request(url, { method = 'GET', body, headers = {}, signal, external = false, okStatuses = [] } = {}) {
  const h = { ...headers };
  const c = credentials();
  if (c !== undefined) h.Authorization = basicAuth(c.principal, c.secret);
  const res = await fetch(url, { method, headers: h, body, signal, credentials: 'omit', redirect: external ? 'follow' : 'manual', cache: 'no-store' });
  if (res.type === 'opaqueredirect') throw new LeaderMoved();
  if (res.status >= 400 && !okStatuses.includes(res.status)) {
    const text = (await res.text().catch(() => '')).trim();
    throw new ApiError(res.status, text, url);
  }
  return res;
}

/** An operator call (POST /api/v1); its JSON answer, or undefined for an empty 200. */
export async function call(body, signal) {
  const res = await request('/api/v1', { method: 'POST', body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, signal });
  const text = await res.text();
  return text === '' ? undefined : JSON.parse(text);
}

export async function getJson(url, opts = {}) {
  const res = await request(url, { ...opts, okStatuses: [202, 417] });
  return res.json();
}

export async function postJson(url, opts = {}) {
  const res = await request(url, { ...opts, method: 'POST' });
  const text = await res.text();
  try {
    return text === '' ? undefined : JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Reads a RecordIO body to its end, handing each record's parsed JSON to `onRecord`. Resolves
 * when the body ends; rejects on a network error, an abort, or bytes that are not RecordIO.
 */
export async function readRecords(res, decoder, onRecord) {
  const reader = res.body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return;
      for (const text of decoder.push(value)) onRecord(JSON.parse(text));
    }
  } finally {
    reader.releaseLock();
  }
}

/**
 * The one place the HTTP edge's rules are carried out, read from the table (calls.ts): which
 * row a request is (routing, the 405 of a path some row answers with another method),
 * authentication in the row's realm, the audit line of a call that writes, the decoder, the
 * ACL check, the handler, and the answer written by the codec or as the error. Nothing here
 * knows a call by name; a row says everything.
 *
 * The order is Mesos' and is the same for every row: a v1 call is framed (method, Content-Type,
 * body), read (parse, convert, validate, Accept), then authenticated in its row's realm (wrong
 * credentials are refused before the body is read), audited, decoded, authorized and answered;
 * a legacy endpoint is authenticated in the realm of its method, audited, checked for its
 * method, decoded (its body read first), authorized and answered. The process's rows (`/health`,
 * `/version`, `/redirect`, metrics) check their method first, and need no term.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { fail, type DrydockError } from '../../shared/errors.js';
import { parseJson } from '../../shared/json.js';
import { readBodyOrAnswer, sendError, sendText } from '../../shared/http.js';
import { warningValues } from '../../shared/warning.js';
import type { RequestTarget } from '../../shared/paths.js';
import type { Realm } from '../security/authentication.js';
import { Access, type MasterSecurity } from '../security/security.js';
import type { EdgePorts, ServingTerm } from '../term/ports.js';

/** The ports a handler works with: the term's queries, commands and operator streams. */
export type TermPorts = Pick<ServingTerm, 'queries' | 'commands' | 'streams' | 'drydockEvents'>;
import { CALLS, V1_CALLS, V1_PATHS } from './calls.js';
import { JSON_CODEC, MAX_API_BODY_BYTES, readApiRequest, type Codec } from './codecs.js';
import { jsonpCallback } from '../../shared/jsonp.js';
import { writeJsonPieces } from './json-stream.js';
import { readApiCall, type OperatorCall } from './operator-call.js';
import type { Answer, CallContext, HttpWay, ProcessPort, Row, RowAccess, V1Way } from './row.js';

/** Where the table sends a request. */
export type Route =
  /** The operator API v1: the row is found by the call's type once the body is read. */
  | { kind: 'v1' }
  /** A row reached by this method and path; `below`: the path's segments below the way's prefix. */
  | { kind: 'row'; row: Row; way: HttpWay<unknown>; below: readonly string[] }
  /** A path some row answers, with another method: 405 with the methods that are (Allow). */
  | { kind: 'method'; allowed: readonly string[]; process: boolean };

/** The route of a request, or undefined when no row answers its path (the router's own routes, else 404). */
export function routeOf(target: RequestTarget, method: string, process: ProcessPort): Route | undefined {
  if (V1_PATHS.has(target.path)) return { kind: 'v1' };
  const allowed: string[] = [];
  let processPath = false;
  let known = false;
  for (const r of CALLS) {
    if (r.http === undefined || (r.present !== undefined && !r.present(process))) continue;
    for (const way of r.http) {
      const below = way.paths.match(target);
      if (below === undefined) continue;
      if (way.methods === 'ANY' || way.methods.includes(method)) return { kind: 'row', row: r, way, below };
      known = true;
      processPath ||= way.process === true;
      // Allow names what a client would send: HEAD goes with GET.
      for (const m of way.methods) if (m !== 'HEAD' && !allowed.includes(m)) allowed.push(m);
    }
  }
  return known ? { kind: 'method', allowed, process: processPath } : undefined;
}

/** Whether a route is answered without a term (the process's own rows). */
export function isProcessRoute(route: Route): boolean {
  return route.kind === 'row' ? route.way.process === true : route.kind === 'method' && route.process;
}

/** A realm of a row's access; undefined: no credentials asked. */
function realmOf(access: RowAccess): Realm | undefined {
  switch (access) {
    case 'read':
      return 'mesos-master-readonly';
    case 'write':
      return 'mesos-master-readwrite';
    case 'framework':
      return 'mesos-master-scheduler';
    case 'open':
      return undefined;
  }
}

/** GET and HEAD only read: the realm of a legacy path's method when no row takes it. */
function readOnlyMethod(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** The 405 of a path: the methods its rows take (libprocess' MethodNotAllowed, as Mesos writes it). */
function methodNotAllowed(res: ServerResponse, allowed: readonly string[], method: string): void {
  sendError(res, fail('MAINTENANCE_METHOD_NOT_ALLOWED', allowed, method), { Allow: allowed.join(', ') });
}

/** What serving a request needs besides the request: the process's security and answers, and the term when one serves. */
export interface Serving {
  readonly security: MasterSecurity;
  readonly process: ProcessPort;
  /** The ports of the term serving now; undefined only for the process's rows. */
  readonly ports: TermPorts | undefined;
}

/**
 * Serves a routed request. The router has read the target, and for a term route checked that a
 * term serves (307/503 otherwise).
 */
export async function serve(route: Route, s: Serving, target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  if (route.kind === 'v1') return serveV1(s, target, req, res);
  const method = req.method ?? '';
  const processRoute = isProcessRoute(route);
  // The process's rows answer a wrong method first, before any credentials.
  if (processRoute && route.kind === 'method') {
    req.resume();
    return methodNotAllowed(res, route.allowed, method);
  }
  const way = route.kind === 'row' ? route.way : undefined;
  const access = route.kind === 'row' ? (way?.open === true ? 'open' : route.row.access) : readOnlyMethod(method) ? 'read' : 'write';
  const realm = realmOf(access);
  const action = `${method} ${target.path}`;
  let caller: Access | undefined;
  if (realm !== undefined) {
    const auth = s.security.authenticate(header(req, 'authorization'), realm);
    if (!auth.ok) {
      req.resume();
      // Every refusal of a call that could change state is audited (the scheduler's too).
      if (realm !== 'mesos-master-readonly') s.security.audit({ principal: undefined, action, object: '', outcome: 'unauthenticated', status: auth.error.status });
      return sendError(res, auth.error, auth.headers);
    }
    caller = auth.access;
    if (realm === 'mesos-master-readwrite') s.security.auditWhenDone(caller, res, action);
  }
  if (route.kind === 'method') {
    req.resume();
    return methodNotAllowed(res, route.allowed, method);
  }
  const r = route.row;
  const w = route.way;
  // The body: read before decoding, for the handler after authorization, by the handler itself, or none.
  let body = '';
  if (w.body === 'decode' && method === 'POST') {
    const text = await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
    if (text === undefined) return;
    body = text;
  } else if (w.body !== 'handler' && w.body !== 'raw') req.resume();
  // `?jsonp=` is read with the input: a callback that is not a name is refused before any work.
  const jsonp = w.answer === 'jsonp' ? jsonpCallback(target.query) : { ok: true as const, callback: undefined };
  const input = w.decode === undefined ? { ok: true as const, value: undefined } : w.decode({ method, below: route.below, query: target.query, body });
  const decoded = input.ok && !jsonp.ok ? { ok: false as const, error: jsonp.error } : input;
  const callback = jsonp.ok ? jsonp.callback : undefined;
  const run = await authorizeAndHandle(r, decoded, s, caller ?? new Access(s.security, undefined), req, method, JSON_CODEC, async () => {
    // A plan verb's body is read once it is authorized; another method's request has none to read.
    if (w.body !== 'handler') return '';
    if (method !== 'POST') {
      req.resume();
      return '';
    }
    return readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
  });
  if (run === undefined) return;
  if (run.kind === 'refused' && w.body === 'handler') req.resume();
  const answer = run.kind === 'refused' ? ({ kind: 'error', error: run.error } as const) : run.answer;
  return write(res, answer, JSON_CODEC, callback, w.answer === 'empty');
}

/** The outcome of a row's decode, ACL and handler: its answer, or the refusal to send; undefined once answered (a body that did not come). */
type Ran = { kind: 'answer'; answer: Answer } | { kind: 'refused'; error: DrydockError };

/** Decoder outcome -> ACL (check, then the deferred decision) -> the body for the handler -> the handler. */
async function authorizeAndHandle(r: Row, decoded: { ok: true; value: unknown } | { ok: false; error: DrydockError }, s: Serving, access: Access, req: IncomingMessage | undefined, method: string, codec: Codec, handlerBody: () => Promise<string | undefined>): Promise<Ran | undefined> {
  if (!decoded.ok) return { kind: 'refused', error: decoded.error };
  const ports = s.ports ?? NO_TERM;
  const aclContext = { access, queries: ports.queries };
  const refused = r.acl.check?.(decoded.value, aclContext);
  if (refused !== undefined) return { kind: 'refused', error: refused };
  const later = r.acl.later?.(decoded.value, aclContext);
  const body = await handlerBody();
  if (body === undefined) return undefined;
  const ctx: CallContext<unknown> = { access, security: s.security, process: s.process, queries: ports.queries, commands: ports.commands, streams: ports.streams, drydockEvents: ports.drydockEvents, later, body, method, req, codec };
  return { kind: 'answer', answer: await r.handle(decoded.value, ctx) };
}

/** The ports of no term: a process row (answered without one) that reads them is a bug, and says so. */
const NO_TERM: TermPorts = (() => {
  const missing = (): never => {
    throw new Error('a process row of the table read a term port');
  };
  return { queries: new Proxy({}, { get: missing }) as TermPorts['queries'], commands: new Proxy({}, { get: missing }) as TermPorts['commands'], streams: { subscribe: missing }, drydockEvents: { subscribe: missing } };
})();

/** Writes an answer: a value through the codec (`callback`: JSONP; `empty`: the way answers an empty 200), else as it says. */
async function write(res: ServerResponse, answer: Answer, codec: Codec, callback?: string, empty = false): Promise<void> {
  // Set before the status line is written, which merges them in, whatever writes it.
  if (answer.kind !== 'raw' && answer.warnings !== undefined && answer.warnings.length > 0) res.setHeader('Warning', warningValues(answer.warnings));
  switch (answer.kind) {
    case 'value':
      if (empty) return done(res);
      return codec.write(res, answer.status ?? 200, answer.value, callback);
    case 'done':
      return done(res);
    case 'error':
      return sendError(res, answer.error, answer.headers);
    case 'text':
      return sendText(res, answer.status, answer.text, answer.headers);
    case 'pieces':
      return writeJsonPieces(res, 200, answer.pieces, callback, answer.share);
    case 'raw':
      return answer.write(res);
  }
}

function done(res: ServerResponse): void {
  res.writeHead(200, { 'Content-Length': 0 });
  res.end();
}

// ---- The operator API v1 ------------------------------------------------------------------------

/** `POST /api/v1` (and its aliases): frame and read the call, then its row as any other. */
async function serveV1(s: Serving, target: RequestTarget, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const security = s.security;
  // Wrong credentials are refused before the body is read; missing ones once the call (and so its realm) is known.
  const presented = header(req, 'authorization');
  const early = security.authenticate(presented, 'mesos-master-readonly');
  // With both realms required, no call can pass anonymously: refuse before reading, in Mesos' realm for /api/v1.
  if (!early.ok && (presented !== undefined || (security.requires('mesos-master-readwrite') && security.requires('mesos-master-readonly')))) {
    req.resume();
    // The body is not read from a caller that failed authentication: the audit line names the path.
    security.audit({ principal: undefined, action: `POST ${target.path}`, object: '', outcome: 'unauthenticated', status: early.error.status });
    return sendError(res, early.error, { 'WWW-Authenticate': 'Basic realm="mesos-master-readwrite"' });
  }
  const request = await readApiRequest(req, res);
  if (request === undefined) return;
  const read = readApiCall(request.codec, request.body, req.headers['accept']);
  if (!read.ok) return sendError(res, read.error);
  const call = read.call;
  const r = V1_CALLS.get(call.type) as Row;
  const realm = realmOf(r.access) as Realm;
  const auth = security.authenticate(presented, realm);
  if (!auth.ok) {
    if (realm === 'mesos-master-readwrite') security.audit({ principal: undefined, action: call.type, object: '', outcome: 'unauthenticated', status: auth.error.status });
    return sendError(res, auth.error, auth.headers);
  }
  if (realm === 'mesos-master-readwrite') security.auditWhenDone(auth.access, res, call.type);
  const answer = await answerV1(r, call, s, auth.access, req, read.answer);
  return write(res, answer, read.answer);
}

/** A v1 call's answer message: `{type, <type in lower case>: value}`, or `{... : {<field>: value}}` when the row names the field. */
function v1Answer(way: V1Way<unknown>, answer: Answer): Answer {
  if (answer.kind !== 'value') return answer;
  const sub = way.type.toLowerCase();
  return { ...answer, value: { type: way.type, [sub]: way.field === undefined ? answer.value : { [way.field]: answer.value } } };
}

async function answerV1(r: Row, call: OperatorCall, s: Serving, access: Access, req: IncomingMessage | undefined, codec: Codec): Promise<Answer> {
  const way = r.v1 as V1Way<unknown>;
  const decoded = way.decode === undefined ? { ok: true as const, value: undefined } : way.decode(call);
  const run = (await authorizeAndHandle(r, decoded, s, access, req, 'POST', codec, () => Promise.resolve(''))) as Ran;
  return run.kind === 'refused' ? { kind: 'error', error: run.error } : v1Answer(way, run.answer);
}

/** A v1 call's answer as a value: its JSON, or an empty 200 (`json` undefined), or the error; with the Warning texts it carries. */
export type CallAnswer = { ok: true; json: unknown; warnings?: readonly string[] } | { ok: false; error: DrydockError; warnings?: readonly string[] };

/**
 * Answers a decoded v1 call from a term's ports, as `POST /api/v1` would once the caller is
 * authenticated (unit tests; the stream call answers nothing here). Calls that change durable
 * state answer once the registry has the change.
 */
export async function answerCall(term: EdgePorts & Partial<Pick<ServingTerm, 'streams' | 'drydockEvents'>>, call: OperatorCall, access: Access, process?: ProcessPort): Promise<CallAnswer> {
  const r = V1_CALLS.get(call.type);
  if (r === undefined) return { ok: false, error: fail('NOT_IMPLEMENTED', call.type) };
  const s: Serving = {
    security: access.security,
    process: process ?? { leader: () => undefined, unavailable: () => fail('NOT_RECOVERED'), metrics: undefined },
    ports: { queries: term.queries, commands: term.commands, streams: term.streams ?? { subscribe: () => undefined }, drydockEvents: term.drydockEvents ?? { subscribe: () => undefined } },
  };
  const answer = await answerV1(r, call, s, access, undefined, JSON_CODEC);
  const warnings = answer.kind === 'raw' || answer.warnings === undefined ? {} : { warnings: answer.warnings };
  switch (answer.kind) {
    case 'value':
      return { ok: true, json: answer.value, ...warnings };
    case 'done':
      return { ok: true, json: undefined, ...warnings };
    case 'pieces':
      return { ok: true, json: parseJson(Buffer.concat([...answer.pieces()].map((x) => (typeof x === 'string' ? Buffer.from(x) : x))).toString('utf8')), ...warnings };
    case 'error':
      return { ok: false, error: answer.error, ...warnings };
    default:
      return { ok: false, error: fail('INTERNAL', `${call.type} answers with a stream`) };
  }
}

/**
 * The CLI's way to the plan and pod HTTP APIs: a service scheduler's (`drydock-scheduler`:
 * `/v1/plans`, `/v1/pod`) and the master's maintenance plans (`/v1/maintenance/plans`, the same
 * verbs, codes and JSON): where the scheduler is, one request, and how an answer a command did
 * not expect is put to the operator. What each command asks and makes of the answer is in
 * plan.ts and pod.ts; the only I/O here is `ask`.
 */

import { sendFollowing } from '../io/client-auth.js';
import { tlsTrouble } from './client.js';
import { parseWireJson } from '../shared/json.js';
import { PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';
import type { Checked } from './maintenance.js';
import { EXIT_FAILED, EXIT_FORBIDDEN, EXIT_OK, EXIT_UNAUTHENTICATED } from './exit-codes.js';

/** Where `drydock-scheduler` listens unless told otherwise. */
export const DEFAULT_SCHEDULER = '127.0.0.1:8088';
const DEFAULT_PORT = '8088';

/** How long one request may take, in milliseconds, before the scheduler counts as unreachable. */
export const SCHEDULER_TIMEOUT_MS = 10_000;

/** Exit statuses of `drydock plan`, `drydock pod` and `drydock maintenance plan`: the CLI's one table (exit-codes.ts). */
export { EXIT_FAILED, EXIT_FORBIDDEN, EXIT_OK, EXIT_UNAUTHENTICATED, EXIT_USAGE } from './exit-codes.js';
/** What a command talks to: a service scheduler or the (leading) master, and its base URL. */
export interface Target {
  readonly kind: 'scheduler' | 'master';
  /** `http://host:port`, with a path prefix for a scheduler behind a proxy. */
  readonly base: string;
  /**
   * The credential sent, in words (`principal 'ops' (from --secret_file …)`); undefined when none
   * is. The master and a scheduler are sent the same one.
   */
  readonly credential?: string | undefined;
}

/** How the operator points the CLI elsewhere, for the line that says a target is unreachable. */
const SET_TARGET: Readonly<Record<Target['kind'], string>> = {
  scheduler: '--scheduler or DRYDOCK_SCHEDULER',
  master: '--master or DRYDOCK_MASTER',
};

/** One request: path below the base, query included; a body is JSON unless `contentType` says otherwise. */
export interface ApiRequest {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: string;
  /** The body's media type; default application/json. */
  readonly contentType?: string;
}

/** What came back: an HTTP answer of any status, or why there was none. */
export type Answer =
  | { readonly kind: 'http'; readonly status: number; readonly statusText: string; readonly body: string }
  | { readonly kind: 'unreachable'; readonly reason: string };

/** What a command prints and how it exits: the pure parts decide it, the shells write it. */
export interface Printed {
  readonly exitCode: number;
  /** Lines for stdout (one entry may hold several lines, e.g. pretty JSON). */
  readonly out: readonly string[];
  /** Lines for stderr; the shell puts `drydock: ` in front. */
  readonly err: readonly string[];
}

/** Success (exit 0) with these stdout lines. */
export const printedOk = (out: readonly string[]): Printed => ({ exitCode: EXIT_OK, out, err: [] });
/** One error line on stderr, exit 1 unless told. */
export const printedError = (line: string, exitCode = EXIT_FAILED): Printed => ({ exitCode, out: [], err: [line] });

const SCHEME = /^[a-z][a-z0-9+.-]*:\/\//i;
/** host, host:port, [v6], [v6]:port, each with an optional /path prefix. */
const HOST_PORT = /^(\[[0-9a-f:.]+\]|[^:/[\]\s]+)(:[0-9]+)?(\/.*)?$/i;

/**
 * The scheduler's base URL from `--scheduler`, else DRYDOCK_SCHEDULER, else 127.0.0.1:8088.
 * `host` alone means port 8088. Without a scheme it is https when TLS material is given
 * (`--tls_ca_file`, as for the master: one CA verifies the cluster), else http; a scheme
 * (http:// or https://) and a path prefix are kept, for a scheduler behind a proxy
 * (`https://proxy/service/hello`) or a plain one next to a TLS master.
 */
export function resolveScheduler(flag: string | undefined, env: Readonly<Record<string, string | undefined>>, tls = false): Checked<string> {
  const fromEnv = env['DRYDOCK_SCHEDULER'];
  const source = flag !== undefined ? '--scheduler' : fromEnv !== undefined && fromEnv !== '' ? 'DRYDOCK_SCHEDULER' : undefined;
  const raw = (flag ?? (source === undefined ? DEFAULT_SCHEDULER : fromEnv ?? '')).trim();
  const bad = (why: string): Checked<string> => ({ ok: false, error: `${source ?? 'scheduler'} '${raw}': ${why}; write host:port (e.g. ${DEFAULT_SCHEDULER})` });
  if (raw === '') return bad('empty');
  let text = raw;
  if (!SCHEME.test(raw)) {
    const m = HOST_PORT.exec(raw);
    if (m === null) return bad('not host:port');
    text = `${tls ? 'https' : 'http'}://${m[1] ?? ''}${m[2] ?? `:${DEFAULT_PORT}`}${m[3] ?? ''}`;
  }
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    return bad('not host:port');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return bad(`${url.protocol}// is not http:// or https://`);
  if (url.search !== '' || url.hash !== '' || url.username !== '' || url.password !== '') return bad('no query, fragment or credentials here');
  return { ok: true, value: `${url.protocol}//${url.host}${url.pathname.replace(/\/+$/, '')}` };
}

/**
 * One line of text from the network, safe for a terminal: tabs and line breaks become spaces,
 * other control characters (an escape sequence would repaint the operator's screen) `?`.
 */
export function oneLine(text: string): string {
  return text.replace(/[\t\n\r]+/g, ' ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

/** The longest stretch of an unexpected body put in an error line. */
const MAX_BODY_IN_ERROR = 300;

function bodyText(body: string): string {
  const t = oneLine(body.trim());
  if (t === '') return '(no body)';
  return t.length > MAX_BODY_IN_ERROR ? `${t.slice(0, MAX_BODY_IN_ERROR)}…` : t;
}

/** The most lines of a refusal's text shown (the master lists every error of a spec, a line each). */
const MAX_REFUSAL_LINES = 20;

/**
 * A refusal's text: its lines, each made safe and bounded, the later ones indented under the
 * first (the master's 400 for a bad spec is `Invalid maintenance plan spec:` and an error a line).
 */
function refusalText(body: string): string {
  const lines = body.trim().split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '');
  if (lines.length <= 1) return bodyText(body);
  const shown = lines.slice(0, MAX_REFUSAL_LINES).map(bodyText);
  if (lines.length > MAX_REFUSAL_LINES) shown.push(`(${lines.length - MAX_REFUSAL_LINES} more lines)`);
  return shown.join('\n  ');
}

/** The line for a scheduler (or master) that cannot be reached. */
export function unreachableLine(at: Target, reason: string): string {
  return `cannot reach the ${at.kind} at ${at.base} (${reason}); set ${SET_TARGET[at.kind]}`;
}

/**
 * The error line for an answer a command does not take as success. A refusal the API defines
 * (400, 404: `Plan deploy not found`; the master's 409) is shown with the target's own text, every
 * line of it; anything else also names the request, as it points at the wrong address or a
 * target in trouble.
 */
export function failureLine(at: Target, req: ApiRequest, answer: Answer): string {
  if (answer.kind === 'unreachable') return unreachableLine(at, answer.reason);
  if (answer.status === 400 || answer.status === 404 || answer.status === 409) return `${at.kind} at ${at.base} answered ${answer.status}: ${refusalText(answer.body)}`;
  const status = `${answer.status}${answer.statusText === '' ? '' : ` ${answer.statusText}`}`;
  return `${at.kind} at ${at.base} answered ${status} to ${req.method} ${req.path}: ${bodyText(answer.body)}`;
}

/** What to do when the master (or a scheduler) wants credentials: the line a 401 without any prints. */
export function wantsCredentials(kind: Target['kind']): string {
  return `the ${kind} wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS`;
}

/** The master's line for a 401 without credentials. */
export const WANTS_CREDENTIALS = wantsCredentials('master');

/**
 * A 401 or 403 from the master or a scheduler, put to the operator with its own exit status, or
 * undefined for any other answer. A 401 without a credential says how to give one; with one,
 * that the target refused it (wrong secret, unknown principal or token). A 403 shows the
 * target's message, which on the master names the action and the principal (a scheduler has no
 * ACLs and sends none, but a proxy in front of one may).
 */
export function accessRefusal(kind: Target['kind'], status: number, body: string, credential: string | undefined): Printed | undefined {
  if (status === 401) {
    const line = credential === undefined ? wantsCredentials(kind) : `the ${kind} refused the credential of ${credential} (401): wrong principal or secret, or an unknown token`;
    return printedError(line, EXIT_UNAUTHENTICATED);
  }
  if (status === 403) return printedError(`${kind} answered 403: ${refusalText(body)}`, EXIT_FORBIDDEN);
  return undefined;
}

/** An answer a command does not take as success, printed: a 401/403 (accessRefusal), else failureLine with exit 1. */
export function failurePrinted(at: Target, req: ApiRequest, answer: Answer): Printed {
  const refused = answer.kind === 'http' ? accessRefusal(at.kind, answer.status, answer.body, at.credential) : undefined;
  return refused ?? printedError(failureLine(at, req, answer));
}

/** The line for a success status whose body is not what the contract says. */
export function malformedLine(at: Target, req: ApiRequest, status: number, why: string): string {
  return `${at.kind} at ${at.base} answered ${status} to ${req.method} ${req.path} with a body drydock cannot read: ${why}`;
}

/** An answer's body as JSON, read with the network bounds (shared/json.ts). */
export function answerJson(body: string): Checked<unknown> {
  try {
    return { ok: true, value: parseWireJson(body) };
  } catch (e) {
    return { ok: false, error: e instanceof Error ? e.message : String(e) };
  }
}

/** A plan or pod name as a path segment; `.` and `..` would be folded away by URL rules. */
export function pathSegment(what: string, name: string): Checked<string> {
  if (name === '') return { ok: false, error: `name a ${what}` };
  if (name === '.' || name === '..') return { ok: false, error: `'${name}' is not a ${what} name` };
  return { ok: true, value: encodeURIComponent(name) };
}

/**
 * A JSON object read from the network. The readers below are what the decoders in plan.ts and
 * pod.ts are made of: each throws an Error naming the field, which the decoder turns into its
 * Checked error.
 */
export type Obj = Record<string, unknown>;
export const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A string field; an optional one left out reads as ''. */
export function readString(o: Obj, key: string, where: string, optional = false): string {
  const v = o[key];
  if (typeof v === 'string') return v;
  if (v === undefined && optional) return '';
  throw new Error(`${where}.${key} is ${v === undefined ? 'missing' : 'not a string'}`);
}

/** An array field; an optional one left out reads as []. */
export function readArray(o: Obj, key: string, where: string, optional = false): unknown[] {
  const v = o[key];
  if (Array.isArray(v)) return v;
  if (v === undefined && optional) return [];
  throw new Error(`${where}.${key} is ${v === undefined ? 'missing' : 'not an array'}`);
}

/** A value that must be an object. */
export function readObject(v: unknown, where: string): Obj {
  if (!isObj(v)) throw new Error(`${where} is not an object`);
  return v;
}

/** The names of `GET /v1/plans` and `GET /v1/pod`. */
export function decodeNames(value: unknown): Checked<string[]> {
  if (!Array.isArray(value) || !value.every((v) => typeof v === 'string')) return { ok: false, error: 'not an array of names' };
  return { ok: true, value: value as string[] };
}

/** Why fetch failed, in a word the operator can search for: ECONNREFUSED, ENOTFOUND, a timeout. */
function reasonOf(e: unknown, timeoutMs: number, base: string): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `no answer within ${timeoutMs / 1000}s`;
  if (err.cause?.message === 'bad port') return 'fetch refuses this port (5060/5061 are blocked as SIP ports)';
  const code = err.cause?.code ?? '';
  const tls = tlsTrouble(base, code);
  if (tls !== undefined) return `${code}: ${tls}`;
  return err.cause?.code ?? err.cause?.message ?? err.message ?? String(e);
}

/**
 * Sends one request with the transport (TLS options, its Authorization header); never throws: a
 * network failure is an `unreachable` answer. A standby master's 307 to the leader is followed
 * with the same method, body and credential.
 */
export async function ask(base: string, req: ApiRequest, timeoutMs = SCHEDULER_TIMEOUT_MS, transport: ClientTransport = PLAIN_TRANSPORT): Promise<Answer> {
  try {
    const { response: res } = await sendFollowing(transport, `${base}${req.path}`, {
      method: req.method,
      headers: req.body === undefined ? { accept: 'application/json' } : { accept: 'application/json', 'content-type': req.contentType ?? 'application/json' },
      ...(req.body === undefined ? {} : { body: req.body }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    return { kind: 'http', status: res.status, statusText: res.statusText, body: await res.text() };
  } catch (e) {
    return { kind: 'unreachable', reason: reasonOf(e, timeoutMs, base) };
  }
}

/**
 * What a row of the table of calls (calls.ts) is made of: its ways in (a v1 call type, HTTP
 * methods and paths) with their decoders, its access, its ACL, its handler, and the answers a
 * handler gives. The modules that hold decoders and handlers (operator.ts, maintenance.ts,
 * plans.ts) import these types; the table and the dispatcher (dispatch.ts) read them.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AclAction } from '../../shared/acls.js';
import type { DrydockError } from '../../shared/errors.js';
import type { RequestTarget } from '../../shared/paths.js';
import { segmentsBelow } from '../../shared/paths.js';
import type { Access, MasterSecurity } from '../security/security.js';
import type { Commands } from '../term/commands.js';
import type { DrydockSubscriptions, OperatorSubscriptions } from '../term/ports.js';
import type { Queries } from '../term/queries.js';
import type { Codec } from '../../shared/codec.js';
import type { CallType, OperatorCall } from './operator-call.js';

/** A decoder's outcome: the row's typed input, or the error to answer (400 with Mesos' words). */
export type Decoded<I> = { ok: true; value: I } | { ok: false; error: DrydockError };

/**
 * What a handler answers; the codec writes values, the dispatcher errors. `warnings` (any kind
 * but raw) go out as `Warning: 299 drydock "<text>"` headers, one value each (shared/warning.ts):
 * what the caller should know about an answer Mesos' body has no room for.
 */
export type Answer =
  /** A value, written by the codec (a v1 call wraps it in its answer message); `status` 200 unless given; `warnings` become Warning headers. */
  | { kind: 'value'; value: unknown; status?: number; warnings?: readonly string[] }
  /** 200 with an empty body (what a v1 call that changes state answers). */
  | { kind: 'done'; warnings?: readonly string[] }
  /** The error to answer, with its status and message (shared/errors.ts), and any headers. */
  | { kind: 'error'; error: DrydockError; headers?: Record<string, string>; warnings?: readonly string[] }
  /** Plain text with a status (the plans API's refusals). */
  | { kind: 'text'; status: number; text: string; headers?: Record<string, string>; warnings?: readonly string[] }
  /**
   * A large JSON value written in slices (json-stream.ts): `pieces` is called only when a
   * production starts; requests whose `share` keys are equal get the same bytes from one production.
   */
  | { kind: 'pieces'; pieces: () => Iterable<string | Buffer>; share?: string; warnings?: readonly string[] }
  /** The handler writes the answer itself: a stream that stays open, Prometheus text, a redirect. */
  | { kind: 'raw'; write: (res: ServerResponse) => void | Promise<void> };

/** The realm and kind of a row: read-only calls, calls that change state, the scheduler API, or none at all. */
export type RowAccess = 'read' | 'write' | 'framework' | 'open';

/** How a row is reached as an operator v1 call. */
export interface V1Way<I> {
  readonly type: CallType;
  /** The field of the answer's sub-message that holds the value (`schedule` in `get_maintenance_schedule`); none: the value is the sub-message. */
  readonly field?: string;
  /** The call -> the row's input; none: the row takes no input. */
  readonly decode?: (call: OperatorCall) => Decoded<I>;
}

/** What an HTTP way's decoder reads: the method, the segments below its path (plans), the query as sent, the body when read. */
export interface HttpRequest {
  readonly method: string;
  readonly below: readonly string[];
  readonly query: string;
  readonly body: string;
}

/** Which paths an HTTP way answers: exact canonical paths, or everything below a prefix of segments. */
export interface PathMatch {
  /** As the table is read by people: `/maintenance/schedule, /master/maintenance/schedule`. */
  readonly describe: string;
  /** The segments below the way's prefix when the target is one of its paths (`[]` for an exact path). */
  match(target: RequestTarget): readonly string[] | undefined;
}

/** How a row is reached over HTTP. */
export interface HttpWay<I> {
  /** The methods taken; `ANY`: the handler (or the API it speaks) answers every method. */
  readonly methods: readonly string[] | 'ANY';
  readonly paths: PathMatch;
  /** Answered by every master, leading or not, before any term route (`/health`, `/version`, `/redirect`, metrics). */
  readonly process?: true;
  /** No credentials asked, none checked (`/health`, `/version`, `/redirect`). */
  readonly open?: true;
  /** The value as JSON (default), as JSON or JSONP (`?jsonp=<callback>`), or an empty 200. */
  readonly answer?: 'json' | 'jsonp' | 'empty';
  /**
   * When a POST's body is read (bounded, MAX_API_BODY_BYTES): before decoding (`decode`), after
   * authorization for the handler (`handler`: a plan verb is refused before its body is read),
   * or by the handler itself (`raw`: the scheduler API frames its own). Default: no body.
   */
  readonly body?: 'decode' | 'handler' | 'raw';
  readonly decode?: (r: HttpRequest) => Decoded<I>;
}

/** What an ACL check reads. */
export interface AclContext {
  readonly access: Access;
  readonly queries: Queries;
}

/** How a row is authorized. */
export interface Acl<I, L> {
  /** The ACL actions it is decided on (none: anyone the realm lets in). */
  readonly actions: readonly AclAction[];
  /** How the object is derived, or how the answer is filtered, in words. */
  readonly object: string;
  /**
   * Decided before the handler: the 403 to answer, or undefined. Runs after the decoder, on its
   * input, so an unknown object is decided as such (only ANY entries match it).
   */
  readonly check?: (input: I, ctx: AclContext) => DrydockError | undefined;
  /**
   * A decision only the command can make (the machines a plan spec selects; a plan checked again
   * in the serial queue): made here from the caller's rights, handed to the handler as `ctx.later`.
   */
  readonly later?: (input: I, ctx: AclContext) => L;
}

/** What the process answers for: who leads, what to answer while nobody does, its metrics. */
export interface ProcessPort {
  /** The leading master's `host:port` as it advertises itself (this one's own while it leads); undefined: none known. */
  leader(): string | undefined;
  /** The answer while no term runs (503). */
  unavailable(): DrydockError;
  /** The process's metrics; without them (unit tests) the metrics routes are not there (404). */
  readonly metrics: { sendPrometheus(res: ServerResponse): Promise<void>; snapshotJson(): Record<string, number> } | undefined;
  /** This master's flags as GET_FLAGS writes them (every master answers `/flags` for itself); none in unit tests. */
  flags?(): ReadonlyArray<{ readonly name: string; readonly value: string }>;
}

/** What a handler works with. A term row always has the term's ports; a process row may have none (reading them is a bug). */
export interface CallContext<L = undefined> {
  readonly access: Access;
  readonly security: MasterSecurity;
  readonly process: ProcessPort;
  readonly queries: Queries;
  readonly commands: Commands;
  readonly streams: OperatorSubscriptions;
  /** Drydock's own event streams (`GET /drydock/v1/events`). */
  readonly drydockEvents: DrydockSubscriptions;
  /** The ACL's deferred decision (Acl.later). */
  readonly later: L;
  /** The body read for the handler (HttpWay.body `handler`); '' otherwise. */
  readonly body: string;
  readonly method: string;
  /** The request, for the rows that frame their own (the scheduler API). */
  readonly req: IncomingMessage | undefined;
  /** The codec the answer is written with (a v1 call's Accept; JSON for the HTTP ways): a stream frames its records with it. */
  readonly codec: Codec;
}

/** One row. `I`: the decoded input; `L`: the ACL's deferred decision. */
export interface Row<I = unknown, L = unknown> {
  readonly name: string;
  readonly summary: string;
  readonly access: RowAccess;
  readonly v1?: V1Way<I>;
  readonly http?: ReadonlyArray<HttpWay<I>>;
  /** Whether the row exists on this master (the metrics rows need the process's metrics). Default: yes. */
  readonly present?: (p: ProcessPort) => boolean;
  readonly acl: Acl<I, L>;
  readonly handle: (input: I, ctx: CallContext<L>) => Answer | Promise<Answer>;
}

// ---- Small helpers for rows ------------------------------------------------------------------

/** An answer value. */
export const value = (v: unknown, status?: number): Answer => (status === undefined ? { kind: 'value', value: v } : { kind: 'value', value: v, status });
/** A command's outcome: 200 empty, or its error. */
export const outcome = (e: DrydockError | undefined): Answer => (e === undefined ? { kind: 'done' } : { kind: 'error', error: e });
/** An error answer. */
export const refusal = (e: DrydockError): Answer => ({ kind: 'error', error: e });
/** The answer with these warnings added (none: the answer as it is). */
export function warned(answer: Answer, warnings: readonly string[]): Answer {
  if (warnings.length === 0 || answer.kind === 'raw') return answer;
  return { ...answer, warnings: [...(answer.warnings ?? []), ...warnings] };
}
/** A decoder's success. */
export const ok = <I>(v: I): Decoded<I> => ({ ok: true, value: v });

/** Canonical paths, each also under `/master/` (libprocess delegation). */
export function withMasterAlias(...paths: string[]): PathMatch {
  return exactPaths(...paths.flatMap((p) => [p, `/master${p}`]));
}

/** Exactly these canonical paths. */
export function exactPaths(...paths: string[]): PathMatch {
  const set = new Set(paths);
  return { describe: paths.join(', '), match: (t) => (set.has(t.path) ? [] : undefined) };
}

/** Everything below a prefix of segments whose segments below pass `fits` (their count, usually). */
export function below(prefix: readonly string[], fits: (segments: readonly string[]) => boolean, describe: string): PathMatch {
  return {
    describe,
    match: (t) => {
      const s = segmentsBelow(t, prefix);
      return s !== undefined && fits(s) ? s : undefined;
    },
  };
}

/**
 * Who may call the scheduler's HTTP API (issue 13): the master's authentication, made small.
 * One realm, `drydock-scheduler`; `--authenticate_http_readwrite` guards every call that may
 * change state (any method but GET and HEAD), `--authenticate_http_readonly` the GETs, and
 * `/v1/health` is always open (load balancers and systemd probes have no credential). Wrong
 * credentials are a 401 even where none are required, as on the master (shared/authentication.ts
 * `admit`).
 *
 * No ACLs: an authenticated principal may do everything the API offers. The scheduler serves one
 * service, and whoever operates it needs all of its verbs; who may operate it is decided by who
 * is in its `--credentials` file.
 *
 * Every mutating call writes one audit line (`msg: 'audit'`, principal, action = method and path,
 * outcome, status) once its answer is sent, refusals included.
 */

import type { ServerResponse } from 'node:http';
import { admit, Authenticator, basicChallenge } from '../shared/authentication.js';
import type { Logger } from '../shared/log.js';
import { readCredentialsFile } from '../io/secrets.js';
import type { ApiSecurityConfig } from './config.js';

/** The realm of the scheduler's API, in its 401's `WWW-Authenticate`. */
export const SCHEDULER_REALM = 'drydock-scheduler';

/** How a request is guarded: never (health), as a read, or as a call that may change state. */
export type ApiAccessClass = 'open' | 'read' | 'write';

/** The paths answered to anybody: the health probe. */
const OPEN_PATHS: ReadonlySet<string> = new Set(['/v1/health']);

/** How a request is guarded, from its method and path alone (before anything is read). Pure. */
export function accessClass(method: string, path: string): ApiAccessClass {
  if (OPEN_PATHS.has(path)) return 'open';
  return method === 'GET' || method === 'HEAD' ? 'read' : 'write';
}

/** What the audit line says of a call's end. */
export type AuditOutcome = 'allowed' | 'unauthenticated' | 'failed';

/** The outcome of a status: 401 unauthenticated, other 4xx and 5xx failed. Pure. */
export function outcomeOf(status: number): AuditOutcome {
  if (status === 401) return 'unauthenticated';
  return status < 400 ? 'allowed' : 'failed';
}

/** A request let through, with its principal; or the 401's headers. */
export type ApiAdmission = { ok: true; principal: string | undefined } | { ok: false; headers: Record<string, string> };

/** The query of an audited call, bounded: plan verbs name their phase and step there. */
const MAX_AUDIT_QUERY = 200;

export class ApiAuth {
  readonly config: ApiSecurityConfig;
  readonly authenticator: Authenticator | undefined;
  readonly #log: Logger | undefined;
  readonly #audit: Logger | undefined;

  constructor(o: { config: ApiSecurityConfig; authenticator?: Authenticator | undefined; log?: Logger | undefined }) {
    this.config = o.config;
    this.authenticator = o.authenticator;
    this.#log = o.log?.child({ component: 'security' });
    this.#audit = o.log?.child({ component: 'audit' });
  }

  /** No authentication and no audit lines: the API without security flags (and unit tests). */
  static open(): ApiAuth {
    return new ApiAuth({ config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, credentialsFile: undefined } });
  }

  /** Whether a class of request refuses anonymous callers. */
  requires(c: ApiAccessClass): boolean {
    if (c === 'open') return false;
    return c === 'read' ? this.config.authenticateHttpReadonly : this.config.authenticateHttpReadwrite;
  }

  /** Authenticates one request of a class; an open one is never asked for credentials. */
  authenticate(header: string | undefined, c: ApiAccessClass): ApiAdmission {
    if (c === 'open') return { ok: true, principal: undefined };
    const a = admit(this.authenticator, header, this.requires(c));
    if (a.ok) return a;
    this.#log?.info('authentication refused', { realm: SCHEDULER_REALM, reason: a.reason });
    return { ok: false, headers: { 'WWW-Authenticate': basicChallenge(SCHEDULER_REALM) } };
  }

  /** Writes the audit line of a mutating call once its answer is sent: the outcome follows the status. */
  auditWhenDone(principal: string | undefined, res: ServerResponse, action: string, query: string): void {
    res.once('finish', () => this.audit({ principal, action, query, status: res.statusCode }));
  }

  /** One audit line: who did what, and how it ended. */
  audit(entry: { principal: string | undefined; action: string; query: string; status: number }): void {
    const query = entry.query.length > MAX_AUDIT_QUERY ? `${entry.query.slice(0, MAX_AUDIT_QUERY)}…` : entry.query;
    this.#audit?.info('audit', { principal: entry.principal ?? null, action: entry.action, ...(query === '' ? {} : { query }), outcome: outcomeOf(entry.status), status: entry.status });
  }
}

/** Reads `--credentials` into the API's authentication; an error names the flag and what is wrong. */
export function loadApiAuth(config: ApiSecurityConfig, log: Logger): { ok: true; auth: ApiAuth } | { ok: false; error: string } {
  let authenticator: Authenticator | undefined;
  if (config.credentialsFile !== undefined) {
    const read = readCredentialsFile(config.credentialsFile);
    if (!read.ok) return { ok: false, error: read.error };
    authenticator = new Authenticator(read.credentials);
  }
  return { ok: true, auth: new ApiAuth({ config, authenticator, log }) };
}

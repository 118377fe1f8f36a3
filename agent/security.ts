/**
 * Who may call the agent API, and what they may see: Mesos' agent flags
 * `--authenticate_http_readonly`, `--authenticate_http_readwrite` and `--http_credentials`, and
 * the master's `--acls` format. The authenticator (shared/authentication.ts), the ACL evaluation
 * (shared/acls.ts) and the view rules (shared/visibility.ts) are the master's own code; this
 * module only knows the agent's two realms and writes its audit lines.
 *
 * Realms as Mesos names them: `mesos-agent-readonly` (GET_* calls, LIST_FILES, READ_FILE, and
 * every GET endpoint: `/state`, `/files/*`, `/metrics`...) and `mesos-agent-readwrite` (every call
 * that may change state). Presented credentials are always
 * checked: a wrong secret is a 401 even where none are required, as on the master.
 */

import type { ServerResponse } from 'node:http';
import { Authorizer, describeObject, type AclAction, type AclObject } from '../shared/acls.js';
import { admit, Authenticator, basicChallenge } from '../shared/authentication.js';
import { fail, type DrydockError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { Approve, ViewAccess } from '../shared/visibility.js';
import { readAcls } from '../io/acls.js';
import { readCredentialsFile } from '../io/secrets.js';
import type { AgentSecurityConfig } from './config.js';

/** The agent API's realms, as Mesos' agent names them (in `WWW-Authenticate`). */
export type AgentRealm = 'mesos-agent-readonly' | 'mesos-agent-readwrite';

/** A request let through, as whom; or the 401 and its challenge. */
export type Admitted = { ok: true; caller: Caller } | { ok: false; error: DrydockError; headers: Record<string, string> };

/** What the audit line says of a call's end. */
export type AuditOutcome = 'allowed' | 'denied' | 'unauthenticated' | 'failed';

const OPEN: AgentSecurityConfig = Object.freeze({ authenticateHttpReadonly: false, authenticateHttpReadwrite: false, httpCredentialsFile: undefined, acls: undefined });

export class AgentSecurity {
  readonly config: AgentSecurityConfig;
  readonly authenticator: Authenticator | undefined;
  readonly authorizer: Authorizer;
  readonly #log: Logger | undefined;
  readonly #audit: Logger | undefined;

  constructor(o: { config: AgentSecurityConfig; authenticator?: Authenticator | undefined; authorizer?: Authorizer | undefined; log?: Logger | undefined }) {
    this.config = o.config;
    this.authenticator = o.authenticator;
    this.authorizer = o.authorizer ?? new Authorizer(undefined);
    this.#log = o.log?.child({ component: 'security' });
    this.#audit = o.log?.child({ component: 'audit' });
  }

  /** No authentication, no ACLs, no audit lines: the agent without security flags (and unit tests). */
  static open(): AgentSecurity {
    return new AgentSecurity({ config: OPEN });
  }

  /** Whether a realm refuses anonymous callers. */
  requires(realm: AgentRealm): boolean {
    return realm === 'mesos-agent-readonly' ? this.config.authenticateHttpReadonly : this.config.authenticateHttpReadwrite;
  }

  /** Authenticates one request in a realm (shared/authentication.ts `admit`, the master's rule). */
  authenticate(header: string | undefined, realm: AgentRealm): Admitted {
    const a = admit(this.authenticator, header, this.requires(realm));
    if (a.ok) return { ok: true, caller: new Caller(this.authorizer, a.principal) };
    this.#log?.info('authentication refused', { realm, reason: a.reason });
    return { ok: false, error: fail('UNAUTHORIZED'), headers: { 'WWW-Authenticate': basicChallenge(realm) } };
  }

  /** The caller of a way that asks for no credentials (the health probes): anonymous, decided by the ACLs as such. */
  anonymous(): Caller {
    return new Caller(this.authorizer, undefined);
  }

  /** Writes the audit line of a call that may change state once its answer is sent. */
  auditWhenDone(caller: Caller, res: ServerResponse, call: string): void {
    res.once('finish', () => {
      const noted = caller.noted;
      this.audit({ principal: caller.principal, action: noted === undefined ? call : `${call} ${noted.action}`, object: noted?.object ?? '', outcome: outcomeOf(res.statusCode), status: res.statusCode });
    });
  }

  /** One audit line: who did what, and how it ended (the master's fields). */
  audit(entry: { principal: string | undefined; action: string; object: string; outcome: AuditOutcome; status: number }): void {
    this.#audit?.info('audit', { principal: entry.principal ?? null, action: entry.action, object: entry.object, outcome: entry.outcome, status: entry.status });
  }
}

function outcomeOf(status: number): AuditOutcome {
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'denied';
  return status < 400 ? 'allowed' : 'failed';
}

/** One caller of one request: its principal (undefined: anonymous) and the checks the calls ask. */
export class Caller implements ViewAccess {
  readonly principal: string | undefined;
  readonly #authorizer: Authorizer;
  /** The action and object the call checked last: what the audit line names. */
  noted: { action: string; object: string } | undefined;

  constructor(authorizer: Authorizer, principal: string | undefined) {
    this.#authorizer = authorizer;
    this.principal = principal;
  }

  /** undefined when allowed, else the 403 to answer (naming action, principal and object). */
  check(action: AclAction, object: AclObject): DrydockError | undefined {
    const described = describeObject(object);
    this.noted = { action, object: described };
    if (this.#authorizer.allows(action, this.principal, object)) return undefined;
    return fail('FORBIDDEN', action, this.principal, described);
  }

  /** A decision function for filtering many objects of one action. */
  approver(action: AclAction): Approve {
    return this.#authorizer.approver(action, this.principal);
  }

  /** Whether views need filtering at all (no ACLs: everything is visible). */
  get filters(): boolean {
    return this.#authorizer.enabled;
  }
}

/**
 * Reads `--http_credentials` (a secret file: refused when others may read it) and `--acls`; an
 * error names the flag and the file, never a secret.
 */
export function loadAgentSecurity(config: AgentSecurityConfig, log: Logger): { ok: true; security: AgentSecurity } | { ok: false; error: string } {
  let authenticator: Authenticator | undefined;
  if (config.httpCredentialsFile !== undefined) {
    const read = readCredentialsFile(config.httpCredentialsFile, '--http_credentials');
    if (!read.ok) return read;
    authenticator = new Authenticator(read.credentials);
  }
  let authorizer: Authorizer | undefined;
  if (config.acls !== undefined) {
    const read = readAcls(config.acls);
    if (!read.ok) return read;
    authorizer = new Authorizer(read.acls);
    log.info('acls loaded', { entries: read.acls.count, permissive: read.acls.permissive });
  }
  return { ok: true, security: new AgentSecurity({ config, authenticator, authorizer, log }) };
}

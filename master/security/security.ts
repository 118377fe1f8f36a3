/**
 * The master's security, one object for the process: the authenticator (`--credentials`), which
 * realms require it (`--authenticate_*`), the authorizer (`--acls`) and the audit log. Built once
 * at start from the files (`loadSecurity`), handed to the router and to every term.
 *
 * Per request the router makes an `Access`: the caller's principal, and the checks the handlers
 * ask (`check` answers the 403 to send, `approver` filters views). The router writes one `audit`
 * line per mutating call from what the checks noted: principal, action, object, outcome.
 */

import type { ServerResponse } from 'node:http';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { readCredentialsFile } from '../../io/secrets.js';
import { readAcls } from '../../io/acls.js';
import { Authenticator, challenge, type Realm } from './authentication.js';
import { admit } from '../../shared/authentication.js';
import { Authorizer, describeObject, type AclAction, type AclObject } from '../../shared/acls.js';

/** The security flags as given (process/config.ts resolves them); the files are read by `loadSecurity`. */
export interface SecurityConfig {
  readonly authenticateHttpReadwrite: boolean;
  readonly authenticateHttpReadonly: boolean;
  readonly authenticateFrameworks: boolean;
  readonly authenticateAgents: boolean;
  readonly credentialsFile: string | undefined;
  /** --acls as given: JSON text, or a path. */
  readonly acls: string | undefined;
}

/** What the audit line says of a call's end. */
export type AuditOutcome = 'allowed' | 'denied' | 'unauthenticated' | 'failed';

export type Authenticated = { ok: true; access: Access } | { ok: false; error: DrydockError; headers: Record<string, string> };

export class MasterSecurity {
  readonly config: SecurityConfig;
  readonly authenticator: Authenticator | undefined;
  readonly authorizer: Authorizer;
  readonly #audit: Logger | undefined;
  readonly #log: Logger | undefined;

  constructor(o: { config: SecurityConfig; authenticator?: Authenticator | undefined; authorizer?: Authorizer | undefined; log?: Logger | undefined }) {
    this.config = o.config;
    this.authenticator = o.authenticator;
    this.authorizer = o.authorizer ?? new Authorizer(undefined);
    this.#log = o.log?.child({ component: 'security' });
    this.#audit = o.log?.child({ component: 'audit' });
  }

  /** No authentication, no ACLs, no audit lines: what the master does without security flags (and unit tests). */
  static open(): MasterSecurity {
    return new MasterSecurity({ config: OPEN });
  }

  /** Whether a realm refuses anonymous callers. */
  requires(realm: Realm): boolean {
    switch (realm) {
      case 'mesos-master-readonly':
        return this.config.authenticateHttpReadonly;
      case 'mesos-master-readwrite':
        return this.config.authenticateHttpReadwrite;
      case 'mesos-master-scheduler':
        return this.config.authenticateFrameworks;
      case 'drydock-agent':
        return this.config.authenticateAgents;
    }
  }

  /**
   * Authenticates one request in a realm. Presented credentials are always checked (a wrong
   * secret is a 401 even where none is required: a caller must not be silently anonymous);
   * none presented is anonymous unless the realm requires them.
   */
  authenticate(header: string | undefined, realm: Realm): Authenticated {
    const a = admit(this.authenticator, header, this.requires(realm));
    return a.ok ? { ok: true, access: new Access(this, a.principal) } : this.#unauthorized(realm, a.reason);
  }

  #unauthorized(realm: Realm, reason: string): Authenticated {
    this.#log?.info('authentication refused', { realm, reason });
    return { ok: false, error: fail('UNAUTHORIZED'), headers: { 'WWW-Authenticate': challenge(realm) } };
  }

  /** Writes the audit line of a mutating call once its answer is sent: the outcome follows the status. */
  auditWhenDone(access: Access, res: ServerResponse, call: string): void {
    res.once('finish', () => {
      const noted = access.noted;
      this.audit({ principal: access.principal, action: noted === undefined ? call : `${call} ${noted.action}`, object: noted?.object ?? '', outcome: outcomeOf(res.statusCode), status: res.statusCode });
    });
  }

  /** One audit line: who did what to what, and how it ended; `argv`: the command a maintenance hook ran. */
  audit(entry: { principal: string | undefined; action: string; object: string; outcome: AuditOutcome; status?: number; detail?: string; argv?: readonly string[] }): void {
    this.#audit?.info('audit', {
      principal: entry.principal ?? null,
      action: entry.action,
      object: entry.object,
      outcome: entry.outcome,
      ...(entry.status === undefined ? {} : { status: entry.status }),
      ...(entry.detail === undefined ? {} : { detail: entry.detail }),
      ...(entry.argv === undefined ? {} : { argv: [...entry.argv] }),
    });
  }
}

function outcomeOf(status: number): AuditOutcome {
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'denied';
  return status < 400 ? 'allowed' : 'failed';
}

const OPEN: SecurityConfig = Object.freeze({
  authenticateHttpReadwrite: false,
  authenticateHttpReadonly: false,
  authenticateFrameworks: false,
  authenticateAgents: false,
  credentialsFile: undefined,
  acls: undefined,
});

/** One caller's rights for one request. */
export class Access {
  readonly security: MasterSecurity;
  /** Undefined: anonymous. */
  readonly principal: string | undefined;
  /** The action and object the handler checked last: what the audit line names. */
  noted: { action: string; object: string } | undefined;

  constructor(security: MasterSecurity, principal: string | undefined) {
    this.security = security;
    this.principal = principal;
  }

  /** Whether this caller may do `action` to `object`. */
  allows(action: AclAction, object: AclObject): boolean {
    return this.security.authorizer.allows(action, this.principal, object);
  }

  /** undefined when allowed, else the 403 to answer. Notes the action and object for the audit line. */
  check(action: AclAction, object: AclObject): DrydockError | undefined {
    const described = describeObject(object);
    this.noted = { action, object: described };
    if (this.allows(action, object)) return undefined;
    return fail('FORBIDDEN', action, this.principal, described);
  }

  /** Checks every object (all must be allowed: a schedule update, a list of machines); the first refusal is answered. */
  checkAll(action: AclAction, objects: readonly AclObject[]): DrydockError | undefined {
    const may = this.approver(action);
    this.noted = { action, object: objects.length === 1 ? describeObject(objects[0]) : `${objects.length} machines` };
    for (const o of objects) if (!may(o)) return fail('FORBIDDEN', action, this.principal, describeObject(o));
    return undefined;
  }

  /** Notes what a call acts on without an ACL check (calls with no action: the audit line still names them). */
  note(action: string, object: string): void {
    this.noted = { action, object };
  }

  /** A decision function for filtering many objects of one action. */
  approver(action: AclAction): (object: AclObject) => boolean {
    return this.security.authorizer.approver(action, this.principal);
  }

  /** Whether views need filtering at all (no ACLs: everything is visible). */
  get filters(): boolean {
    return this.security.authorizer.enabled;
  }
}

/** Reads `--credentials` and `--acls` into the process's security; an error names the flag and what is wrong. */
export function loadSecurity(config: SecurityConfig, log: Logger): { ok: true; security: MasterSecurity } | { ok: false; error: string } {
  let authenticator: Authenticator | undefined;
  if (config.credentialsFile !== undefined) {
    const read = readCredentialsFile(config.credentialsFile);
    if (!read.ok) return { ok: false, error: read.error };
    authenticator = new Authenticator(read.credentials);
  }
  let authorizer: Authorizer | undefined;
  if (config.acls !== undefined) {
    const read = readAcls(config.acls);
    if (!read.ok) return { ok: false, error: read.error };
    authorizer = new Authorizer(read.acls);
    log.info('acls loaded', { entries: read.acls.count, permissive: read.acls.permissive });
  }
  return { ok: true, security: new MasterSecurity({ config, authenticator, authorizer, log }) };
}

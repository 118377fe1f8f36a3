/**
 * Who is calling, for every Drydock daemon that takes a `--credentials` file (the master, the
 * service scheduler): HTTP Basic as Mesos' basic authenticator, and bearer tokens from the same
 * file. Secrets are kept only as SHA-256 digests and compared in constant time; a token is looked
 * up by its digest.
 *
 * Pure (hashing is computation, not I/O): the daemons read the file through io/secrets.ts and
 * hand the parsed credentials here. Realms are each daemon's own (master/authentication.ts,
 * scheduler/api-auth.ts); the rule that decides a request (`admit`) is the same everywhere.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import { parseAuthorization, type Credential } from './credentials.js';

/**
 * The outcome for one header: no credentials presented, a principal, or credentials that do not
 * check (with why, for the log only: the client gets Mesos' bare 401).
 */
export type Authentication = { kind: 'anonymous' } | { kind: 'principal'; principal: string } | { kind: 'refused'; reason: string };

const ANONYMOUS: Authentication = { kind: 'anonymous' };

function digest(s: string): Buffer {
  return createHash('sha256').update(s, 'utf8').digest();
}

export class Authenticator {
  /** principal -> digest of its secret (token-only principals are absent). */
  readonly #secrets = new Map<string, Buffer>();
  /** hex digest of a token -> principal. */
  readonly #tokens = new Map<string, string>();
  /**
   * Headers already checked -> principal. A client sends the same header on every call, so the
   * digest is computed once per header; bounded, and only successes are kept (a wrong guess
   * costs a digest each time).
   */
  readonly #known = new Map<string, string>();

  constructor(credentials: readonly Credential[]) {
    for (const c of credentials) {
      if (c.secret !== undefined) this.#secrets.set(c.principal, digest(c.secret));
      for (const t of c.tokens) this.#tokens.set(digest(t).toString('hex'), c.principal);
    }
  }

  /** How many principals the file gave. */
  get size(): number {
    return new Set([...this.#secrets.keys(), ...this.#tokens.values()]).size;
  }

  /** Checks an `Authorization` header (undefined: none sent). */
  authenticate(header: string | undefined): Authentication {
    if (header === undefined || header === '') return ANONYMOUS;
    const cached = this.#known.get(header);
    if (cached !== undefined) return { kind: 'principal', principal: cached };
    const presented = parseAuthorization(header);
    let principal: string | undefined;
    switch (presented.kind) {
      case 'malformed':
        return { kind: 'refused', reason: presented.reason };
      case 'bearer':
        principal = this.#tokens.get(digest(presented.token).toString('hex'));
        if (principal === undefined) return { kind: 'refused', reason: 'unknown bearer token' };
        break;
      case 'basic': {
        const want = this.#secrets.get(presented.principal);
        // Digest either way, so an unknown principal costs what a known one does.
        const got = digest(presented.secret);
        if (want === undefined || !timingSafeEqual(want, got)) return { kind: 'refused', reason: `wrong principal or secret for '${presented.principal.slice(0, 64)}'` };
        principal = presented.principal;
        break;
      }
    }
    if (this.#known.size >= 4096) this.#known.clear();
    this.#known.set(header, principal);
    return { kind: 'principal', principal };
  }
}

/** Whether a request may go on, and as whom (undefined: anonymous); or why it gets a 401 (for the log). */
export type Admission = { ok: true; principal: string | undefined } | { ok: false; reason: string };

/**
 * The authentication rule of a request, as the master applies it per realm. Presented
 * credentials are always checked (a wrong secret is a 401 even where none is required: a caller
 * must not be silently anonymous); none presented is anonymous unless `required`. A daemon with
 * no credentials file (`authenticator` undefined) cannot check any: it lets them pass as
 * anonymous where none are required (its configuration refuses `required` without a file). Pure.
 */
export function admit(authenticator: Authenticator | undefined, header: string | undefined, required: boolean): Admission {
  const presented = header !== undefined && header !== '';
  if (!presented) return required ? { ok: false, reason: 'no credentials' } : { ok: true, principal: undefined };
  if (authenticator === undefined) return required ? { ok: false, reason: 'no credentials configured' } : { ok: true, principal: undefined };
  const a = authenticator.authenticate(header);
  if (a.kind === 'principal') return { ok: true, principal: a.principal };
  if (a.kind === 'anonymous') return required ? { ok: false, reason: 'no credentials' } : { ok: true, principal: undefined };
  return { ok: false, reason: a.reason };
}

/** The `WWW-Authenticate` challenge of a realm (Mesos' basic authenticator's). */
export function basicChallenge(realm: string): string {
  return `Basic realm="${realm}"`;
}

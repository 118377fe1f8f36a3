/**
 * Who is calling: the master's authenticator over the `--credentials` file. HTTP Basic as Mesos'
 * basic authenticator, and bearer tokens from the same file. Secrets are kept only as SHA-256
 * digests and compared in constant time; a token is looked up by its digest.
 *
 * Realms as Mesos names them: `mesos-master-readonly`, `mesos-master-readwrite` and
 * `mesos-master-scheduler` for HTTP, plus `drydock-agent` for the agents' WebSocket upgrade.
 */

import { createHash, timingSafeEqual } from 'node:crypto';
import { parseAuthorization, type Credential } from '../shared/credentials.js';

export type Realm = 'mesos-master-readonly' | 'mesos-master-readwrite' | 'mesos-master-scheduler' | 'drydock-agent';

/**
 * The outcome for one request: no credentials presented, a principal, or credentials that do not
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

/** The `WWW-Authenticate` challenge of a realm (Mesos' basic authenticator's). */
export function challenge(realm: Realm): string {
  return `Basic realm="${realm}"`;
}

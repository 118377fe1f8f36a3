/**
 * A client's way in, for the CLI (`drydock`) and the service scheduler (`drydock-scheduler`):
 * which credential it presents (`--principal` with `--secret_file`, or `DRYDOCK_CREDENTIALS`),
 * its TLS material (`--tls_ca_file`, and a client certificate for mutual TLS), and requests that
 * keep both across a standby master's 307 to the leader.
 *
 * The choice of credential is pure (`credentialPlan`, `credentialFromSecretFile`, table-tested);
 * `loadClientAccess` reads the files (through io/secrets.ts, which refuses a secret file
 * readable by others) and builds the one `ClientTransport` every request uses.
 *
 * Why redirects are followed here and not by fetch: fetch drops the `Authorization` header on a
 * redirect to another origin (a standby on :5070 naming the leader on :5050 is one), so the
 * leader would see an anonymous call. Following by hand keeps the header, and refuses a
 * redirect from https to plain http, which would put the credential on the wire in clear.
 */

import { parseClientCredential, parseInlineCredential, type ClientCredential, type Parsed } from '../shared/credentials.js';
import { readSecretFile } from './secrets.js';
import { clientTransport, loadClientTls, PLAIN_TRANSPORT, type ClientTransport } from './transport.js';

/** One value from the command line or the environment, and where it came from (for messages). */
export interface Given {
  readonly value: string;
  /** `--principal`, `DRYDOCK_PRINCIPAL`, ... */
  readonly origin: string;
  /** From the command line (flags win over the environment). */
  readonly fromFlag: boolean;
}

/** Where a client's credential may come from. */
export interface CredentialSources {
  /** `--principal` or `DRYDOCK_PRINCIPAL`. */
  readonly principal?: Given | undefined;
  /** `--secret_file` or `DRYDOCK_SECRET_FILE`. */
  readonly secretFile?: Given | undefined;
  /** `DRYDOCK_CREDENTIALS`: `principal:secret` (as curl -u) or `Bearer <token>`. */
  readonly inline?: string | undefined;
}

/** What to present, before any file is read. */
export type CredentialPlan =
  | { readonly kind: 'none' }
  | { readonly kind: 'inline'; readonly credential: ClientCredential }
  | { readonly kind: 'file'; readonly path: string; readonly origin: string; readonly principal: string | undefined };

/** The environment variable of an inline credential. */
export const CREDENTIALS_ENV = 'DRYDOCK_CREDENTIALS';

/**
 * A `Given` from a flag's value or, failing that, an environment variable; an empty variable
 * counts as unset (`DRYDOCK_PRINCIPAL= drydock ...` turns it off).
 */
export function given(flag: string | undefined, flagName: string, env: Readonly<Record<string, string | undefined>>, envName: string): Given | undefined {
  if (flag !== undefined) return { value: flag, origin: flagName, fromFlag: true };
  const v = env[envName];
  return v === undefined || v === '' ? undefined : { value: v, origin: envName, fromFlag: false };
}

/**
 * Which credential a client presents. Flags win over the environment: with `--principal` or
 * `--secret_file` on the command line, `DRYDOCK_CREDENTIALS` is not looked at. In the
 * environment alone, `DRYDOCK_CREDENTIALS` and `DRYDOCK_PRINCIPAL`/`DRYDOCK_SECRET_FILE` are
 * two answers to one question, so both set is an error rather than a silent pick. A principal
 * without a secret file is an error too (it would be sent as anonymous). Pure; errors never
 * repeat a secret.
 */
export function credentialPlan(s: CredentialSources): Parsed<CredentialPlan> {
  const fromFlags = s.principal?.fromFlag === true || s.secretFile?.fromFlag === true;
  const inline = s.inline === undefined || s.inline === '' ? undefined : s.inline;
  if (inline !== undefined && !fromFlags) {
    const also = [s.principal?.origin, s.secretFile?.origin].filter((o): o is string => o !== undefined);
    if (also.length > 0) return { ok: false, error: `${CREDENTIALS_ENV} and ${also.join(' and ')} are both set; unset one` };
    const c = parseInlineCredential(inline);
    if (!c.ok) return { ok: false, error: `${CREDENTIALS_ENV}: ${c.error}` };
    return { ok: true, value: { kind: 'inline', credential: c.value } };
  }
  if (s.secretFile !== undefined) {
    if (s.secretFile.value === '') return { ok: false, error: `${s.secretFile.origin} must not be empty` };
    return { ok: true, value: { kind: 'file', path: s.secretFile.value, origin: s.secretFile.origin, principal: s.principal?.value } };
  }
  if (s.principal !== undefined) {
    const pair = s.principal.fromFlag ? '--secret_file FILE' : 'DRYDOCK_SECRET_FILE';
    return { ok: false, error: `${s.principal.origin} needs ${pair} (the file holding its secret), or set ${CREDENTIALS_ENV}=principal:secret` };
  }
  return { ok: true, value: { kind: 'none' } };
}

/**
 * The credential in a secret file. With a principal given, the file holds its secret alone (one
 * line; what `LoadCredential=` and `openssl rand` produce), or a whole credential for that same
 * principal. Without one, it holds a whole credential: `principal secret`, Mesos' JSON
 * `{"principal":…,"secret":…}`, or `{"token":…}` for a bearer token. Pure.
 */
export function credentialFromSecretFile(text: string, principal: string | undefined, what: string): Parsed<ClientCredential> {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, error: `${what} is empty` };
  const single = !/\s/.test(trimmed) && !trimmed.startsWith('{');
  if (principal !== undefined && single) {
    // The secret alone; parseInlineCredential checks principal and secret with the same rules.
    const c = parseInlineCredential(`${principal}:${trimmed}`);
    if (!c.ok) return { ok: false, error: `${what}: ${c.error}` };
    return c;
  }
  if (principal === undefined && single) return { ok: false, error: `${what} holds a secret alone: give its principal with --principal (or DRYDOCK_PRINCIPAL), or write 'principal secret' in the file` };
  const c = parseClientCredential(trimmed);
  if (!c.ok) return { ok: false, error: `${what}: ${c.error}` };
  if (principal !== undefined && c.value.kind === 'basic' && c.value.principal !== principal) {
    return { ok: false, error: `${what} is a credential of principal '${c.value.principal}', not of '${principal}' (--principal)` };
  }
  return c;
}

/** The principal a credential speaks for (a token's is only known when given alongside). */
export function credentialPrincipal(c: ClientCredential | undefined, stated: string | undefined): string | undefined {
  if (c === undefined) return undefined;
  return c.kind === 'basic' ? c.principal : stated;
}

/** A credential in words, for the line that says the master refused it: never the secret. */
export function describeCredential(c: ClientCredential, origin: string): string {
  return c.kind === 'basic' ? `principal '${c.principal}' (from ${origin})` : `a bearer token (from ${origin})`;
}

/** Where a client's TLS material is: `--tls_ca_file`, `--tls_cert_file`, `--tls_key_file`. */
export interface TlsFiles {
  readonly caFile?: string | undefined;
  readonly certFile?: string | undefined;
  readonly keyFile?: string | undefined;
}

/** What a client presents, ready to use. */
export interface ClientAccess {
  /** fetch with the TLS options, and the Authorization header to add. */
  readonly transport: ClientTransport;
  /** The principal to name in FrameworkInfo.principal (undefined: anonymous, or a token alone). */
  readonly principal: string | undefined;
  /** The credential in words (undefined: none), for a 401's line. */
  readonly credential: string | undefined;
}

/** No credential, no TLS. */
export const ANONYMOUS_ACCESS: ClientAccess = Object.freeze({ transport: PLAIN_TRANSPORT, principal: undefined, credential: undefined });

/** Reads the credential and the TLS files and builds the transport; an error names the flag (or variable) and the file. */
export function loadClientAccess(sources: CredentialSources, tlsFiles: TlsFiles): Parsed<ClientAccess> {
  const plan = credentialPlan(sources);
  if (!plan.ok) return plan;
  let credential: ClientCredential | undefined;
  let origin = '';
  switch (plan.value.kind) {
    case 'none':
      break;
    case 'inline':
      credential = plan.value.credential;
      origin = CREDENTIALS_ENV;
      break;
    case 'file': {
      const { path, principal } = plan.value;
      origin = `${plan.value.origin} ${path}`;
      const read = readSecretFile(path, plan.value.origin);
      if (!read.ok) return { ok: false, error: read.error };
      const c = credentialFromSecretFile(read.text, principal, `${plan.value.origin} ${path}`);
      if (!c.ok) return c;
      credential = c.value;
      break;
    }
  }
  const tls = loadClientTls(tlsFiles);
  if (!tls.ok) return tls;
  if (credential === undefined && tls.tls === undefined) return { ok: true, value: ANONYMOUS_ACCESS };
  const stated = plan.value.kind === 'file' ? plan.value.principal : undefined;
  return {
    ok: true,
    value: {
      transport: clientTransport({ credential, tls: tls.tls }),
      principal: credentialPrincipal(credential, stated),
      credential: credential === undefined ? undefined : describeCredential(credential, origin),
    },
  };
}

/** How many redirects one request follows (a standby names the leader: one is the usual). */
export const MAX_REDIRECTS = 4;

/** A request's options; the body is a string so it can be sent again after a 307. */
export interface SendInit {
  readonly method: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
  readonly signal?: AbortSignal;
}

/** Where a redirect leads, or why it is not followed. Pure. */
export function redirectTarget(from: string, location: string | null): { ok: true; url: string } | { ok: false; error: string } {
  if (location === null || location === '') return { ok: false, error: `${new URL(from).origin} answered a redirect without a Location` };
  let next: URL;
  try {
    next = new URL(location, from);
  } catch {
    return { ok: false, error: `${new URL(from).origin} answered a redirect to '${location.slice(0, 200)}', which is no URL` };
  }
  const was = new URL(from);
  if (next.protocol !== 'http:' && next.protocol !== 'https:') return { ok: false, error: `${was.origin} redirected to ${next.protocol}//, which is not http or https` };
  if (was.protocol === 'https:' && next.protocol !== 'https:') return { ok: false, error: `${was.origin} redirected to ${next.origin}: not following from https to ${next.protocol}// (the credential would travel in clear)` };
  return { ok: true, url: next.href };
}

/**
 * Sends a request with the transport (TLS options, Authorization header) and follows 307 and 308
 * with the same method, headers and body, up to MAX_REDIRECTS. Resolves with the last answer and
 * its URL; rejects as fetch does when there is none, and with an Error that says why when a
 * redirect is not followed.
 */
export async function sendFollowing(transport: ClientTransport, url: string, init: SendInit): Promise<{ response: Response; url: string }> {
  const headers = { ...transport.headers, ...(init.headers ?? {}) };
  let at = url;
  for (let hop = 0; ; hop++) {
    const req: RequestInit = { method: init.method, headers, redirect: 'manual' };
    if (init.body !== undefined) req.body = init.body;
    if (init.signal !== undefined) req.signal = init.signal;
    const response = await transport.fetch(at, req);
    if (response.status !== 307 && response.status !== 308) return { response, url: at };
    await response.body?.cancel().catch(() => undefined);
    if (hop >= MAX_REDIRECTS) throw new Error(`more than ${MAX_REDIRECTS} redirects from ${new URL(url).origin}`);
    const next = redirectTarget(at, response.headers.get('location'));
    if (!next.ok) throw new Error(next.error);
    at = next.url;
  }
}

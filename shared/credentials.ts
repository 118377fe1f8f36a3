/**
 * Credentials, both sides of the wire, pure:
 * - the master's `--credentials` file: Mesos' JSON `{"credentials":[{"principal":…,"secret":…}]}`
 *   (each entry may add `"tokens": [...]`, bearer tokens for automation), or Mesos' plain form,
 *   one `principal secret` per line;
 * - one client credential (the agent's `--credential`, the CLI's and the scheduler's): Mesos'
 *   JSON `{"principal":…,"secret":…}` or one `principal secret` line, or `{"token":…}`;
 * - the `Authorization` header that carries it (HTTP Basic, as Mesos' basic authenticator, or
 *   `Bearer <token>`).
 * Error messages name the entry and field, never a secret.
 */

/** One entry of the master's credentials: a principal with a secret (Basic) and/or bearer tokens. */
export interface Credential {
  readonly principal: string;
  /** Undefined for a token-only principal. */
  readonly secret: string | undefined;
  readonly tokens: readonly string[];
}

/** What a client presents. */
export type ClientCredential = { readonly kind: 'basic'; readonly principal: string; readonly secret: string } | { readonly kind: 'bearer'; readonly token: string };

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

/** A principal is printable, without spaces or colons (Basic splits at the first colon). */
const PRINCIPAL = /^[\x21-\x39\x3b-\x7e]{1,256}$/;
/** A secret or token is printable, without spaces (the plain form splits on whitespace). */
const SECRET = /^[\x21-\x7e]{1,4096}$/;

/** Parses the master's credentials file (JSON or plain lines). */
export function parseCredentials(text: string): Parsed<Credential[]> {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, error: 'no credentials in it' };
  const parsed = trimmed.startsWith('{') ? parseCredentialsJson(trimmed) : parseCredentialLines(trimmed);
  if (!parsed.ok) return parsed;
  const seen = new Set<string>();
  const tokens = new Set<string>();
  for (const c of parsed.value) {
    if (seen.has(c.principal)) return { ok: false, error: `principal '${c.principal}' appears more than once` };
    seen.add(c.principal);
    for (const t of c.tokens) {
      if (tokens.has(t)) return { ok: false, error: `a token of principal '${c.principal}' is also given to another principal` };
      tokens.add(t);
    }
  }
  return parsed;
}

function parseCredentialsJson(text: string): Parsed<Credential[]> {
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `not valid JSON: ${(e as Error).message}` };
  }
  const list = (json as { credentials?: unknown }).credentials;
  if (!Array.isArray(list)) return { ok: false, error: "expected {\"credentials\": [{\"principal\": ..., \"secret\": ...}, ...]}: 'credentials' is not a list" };
  if (list.length === 0) return { ok: false, error: "'credentials' is empty" };
  const out: Credential[] = [];
  for (const [i, entry] of list.entries()) {
    const c = credentialEntry(entry, `credentials[${i}]`);
    if (!c.ok) return c;
    out.push(c.value);
  }
  return { ok: true, value: out };
}

function credentialEntry(entry: unknown, at: string): Parsed<Credential> {
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) return { ok: false, error: `${at} is not an object` };
  const e = entry as Record<string, unknown>;
  for (const k of Object.keys(e)) if (k !== 'principal' && k !== 'secret' && k !== 'tokens') return { ok: false, error: `${at}.${k} is not a credential field (principal, secret, tokens)` };
  const principal = e['principal'];
  if (typeof principal !== 'string' || !PRINCIPAL.test(principal)) return { ok: false, error: `${at}.principal must be a non-empty string without spaces or ':'` };
  const secret = e['secret'] ?? undefined;
  if (secret !== undefined && (typeof secret !== 'string' || !SECRET.test(secret))) return { ok: false, error: `${at}.secret must be a non-empty string without spaces` };
  const rawTokens = e['tokens'] ?? [];
  if (!Array.isArray(rawTokens)) return { ok: false, error: `${at}.tokens must be a list of strings` };
  const tokens: string[] = [];
  for (const [j, t] of rawTokens.entries()) {
    if (typeof t !== 'string' || !SECRET.test(t) || t.length < 16) return { ok: false, error: `${at}.tokens[${j}] must be a string of at least 16 characters without spaces` };
    tokens.push(t);
  }
  if (secret === undefined && tokens.length === 0) return { ok: false, error: `${at} has neither a secret nor tokens` };
  return { ok: true, value: { principal, secret: secret as string | undefined, tokens } };
}

function parseCredentialLines(text: string): Parsed<Credential[]> {
  const out: Credential[] = [];
  for (const [i, raw] of text.split('\n').entries()) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#')) continue;
    const fields = line.split(/\s+/);
    if (fields.length !== 2) return { ok: false, error: `line ${i + 1}: expected 'principal secret', got ${fields.length} field${fields.length === 1 ? '' : 's'}` };
    const [principal, secret] = fields as [string, string];
    if (!PRINCIPAL.test(principal)) return { ok: false, error: `line ${i + 1}: the principal must not contain ':'` };
    out.push({ principal, secret, tokens: [] });
  }
  if (out.length === 0) return { ok: false, error: 'no credentials in it' };
  return { ok: true, value: out };
}

/** Parses one client credential (agent `--credential`, CLI/scheduler credential file). */
export function parseClientCredential(text: string): Parsed<ClientCredential> {
  const trimmed = text.trim();
  if (trimmed === '') return { ok: false, error: 'it is empty' };
  if (trimmed.startsWith('{')) {
    let json: unknown;
    try {
      json = JSON.parse(trimmed);
    } catch (e) {
      return { ok: false, error: `not valid JSON: ${(e as Error).message}` };
    }
    if (typeof json !== 'object' || json === null || Array.isArray(json)) return { ok: false, error: 'expected an object {"principal": ..., "secret": ...} or {"token": ...}' };
    const j = json as Record<string, unknown>;
    if (j['token'] !== undefined && j['token'] !== null) {
      const token = j['token'];
      if (typeof token !== 'string' || !SECRET.test(token)) return { ok: false, error: "'token' must be a non-empty string without spaces" };
      return { ok: true, value: { kind: 'bearer', token } };
    }
    return basic(j['principal'], j['secret']);
  }
  const fields = trimmed.split(/\s+/);
  if (fields.length !== 2) return { ok: false, error: `expected 'principal secret', got ${fields.length} field${fields.length === 1 ? '' : 's'}` };
  return basic(fields[0], fields[1]);
}

/** `principal:secret` (DRYDOCK_CREDENTIALS, as curl -u) or `Bearer <token>`. */
export function parseInlineCredential(text: string): Parsed<ClientCredential> {
  const t = text.trim();
  const bearer = /^bearer\s+(\S+)$/i.exec(t);
  if (bearer !== null) return SECRET.test(bearer[1] ?? '') ? { ok: true, value: { kind: 'bearer', token: bearer[1] as string } } : { ok: false, error: 'the token must be printable, without spaces' };
  const colon = t.indexOf(':');
  if (colon <= 0) return { ok: false, error: "expected 'principal:secret' or 'Bearer <token>'" };
  return basic(t.slice(0, colon), t.slice(colon + 1));
}

function basic(principal: unknown, secret: unknown): Parsed<ClientCredential> {
  if (typeof principal !== 'string' || !PRINCIPAL.test(principal)) return { ok: false, error: "'principal' must be a non-empty string without spaces or ':'" };
  if (typeof secret !== 'string' || !SECRET.test(secret)) return { ok: false, error: "'secret' must be a non-empty string without spaces" };
  return { ok: true, value: { kind: 'basic', principal, secret } };
}

/** The `Authorization` header value for a client credential. */
export function authorizationHeader(c: ClientCredential): string {
  return c.kind === 'bearer' ? `Bearer ${c.token}` : `Basic ${Buffer.from(`${c.principal}:${c.secret}`, 'utf8').toString('base64')}`;
}

/** What an `Authorization` header presents: Basic principal and secret, a bearer token, or something unusable (with why). */
export type Presented = { kind: 'basic'; principal: string; secret: string } | { kind: 'bearer'; token: string } | { kind: 'malformed'; reason: string };

/** Reads an `Authorization` header value. Pure. */
export function parseAuthorization(header: string): Presented {
  const sp = header.indexOf(' ');
  const scheme = (sp === -1 ? header : header.slice(0, sp)).toLowerCase();
  const rest = sp === -1 ? '' : header.slice(sp + 1).trim();
  if (scheme === 'bearer') return rest === '' ? { kind: 'malformed', reason: 'empty bearer token' } : { kind: 'bearer', token: rest };
  if (scheme !== 'basic') return { kind: 'malformed', reason: `unsupported authentication scheme '${scheme.slice(0, 20)}' (use Basic or Bearer)` };
  if (!/^[A-Za-z0-9+/]+=*$/.test(rest)) return { kind: 'malformed', reason: 'Basic credentials are not base64' };
  const decoded = Buffer.from(rest, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon <= 0) return { kind: 'malformed', reason: "Basic credentials are not 'principal:secret'" };
  return { kind: 'basic', principal: decoded.slice(0, colon), secret: decoded.slice(colon + 1) };
}

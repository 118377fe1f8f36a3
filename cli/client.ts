/**
 * The CLI's only way to the cluster: HTTP calls to the master's operator API.
 *
 * Bodies go through shared/json.ts both ways: Mesos times are int64 nanoseconds
 * (1443830400000000000), past a double's exact integers, so they arrive as bigints and are
 * sent back as the same digits. `JSON.parse` here would silently round them.
 */

import { ANONYMOUS_ACCESS, sendFollowing, type ClientAccess } from '../io/client-auth.js';
import { EtcdGateway, findLeader, parseMasterSpec, plainEtcdAccess, type EtcdAccess, type EtcdLeaderRead, type MasterSpec } from '../shared/detection.js';
import { parseJson, stringifyJson } from '../shared/json.js';
import { parseWarnings } from '../shared/warning.js';
import type { ClientTransport } from '../io/transport.js';

/** An answer the operator should see: HTTP status and the master's message. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Where the master is: --master, else DRYDOCK_MASTER, else 127.0.0.1:5050; without http:// or https:// (see masterScheme). */
export function resolveMaster(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const raw = flag ?? env['DRYDOCK_MASTER'] ?? '127.0.0.1:5050';
  if (raw.trim().startsWith('etcd://')) return raw.trim().replace(/\/+$/, '');
  return raw
    .split(',')
    .map((m) => m.trim().replace(/^https?:\/\//i, '').replace(/\/+$/, ''))
    .join(',');
}

/**
 * How to speak to the master: https when --master (or DRYDOCK_MASTER) says https://, or when
 * TLS material is given (--tls_ca_file, a client certificate) and it names no scheme; else http.
 * An explicit http:// wins over the TLS flags.
 */
export function masterScheme(flag: string | undefined, env: Readonly<Record<string, string | undefined>>, tls: boolean): 'http' | 'https' {
  const raw = flag ?? env['DRYDOCK_MASTER'] ?? '';
  const schemes = raw.split(',').map((m) => /^\s*(https?):\/\//i.exec(m)?.[1]?.toLowerCase());
  if (schemes.includes('https')) return 'https';
  if (schemes.includes('http')) return 'http';
  return tls ? 'https' : 'http';
}

/**
 * The leader found through a master spec, or why none was: `why` undefined when the spec was
 * read and no master leads (or no master of a list answered), else what stood in the way (etcd
 * refused the CLI's user or certificate, or could not be read).
 */
export type LeaderSearch = { found: true; address: string } | { found: false; why: string | undefined };

/** How long one read of etcd or one master's /redirect may take. */
const LEADER_PROBE_TIMEOUT_MS = 2_000;

/**
 * The leading master's host:port through a spec: the masters of a list are asked for /redirect
 * over `scheme` with the transport's TLS options; etcd (an etcd:// spec) through `etcd`, etcd's
 * own TLS and user (the --etcd_* flags; default plain http, no user), as its TLS is not the
 * master's.
 */
export async function leaderOf(spec: MasterSpec, transport: ClientTransport, scheme: 'http' | 'https', etcd?: EtcdAccess): Promise<LeaderSearch> {
  if (spec.kind !== 'etcd') {
    const address = await findLeader(spec, transport.fetch, LEADER_PROBE_TIMEOUT_MS, scheme);
    return address === undefined ? { found: false, why: undefined } : { found: true, address };
  }
  const access = etcd ?? plainEtcdAccess((url, init) => fetch(url, init));
  return etcdSearch(await new EtcdGateway(access).leader(spec.endpoints, spec.prefix, LEADER_PROBE_TIMEOUT_MS), access.scheme);
}

/**
 * A read of the election as a search result, with the flag to look at when etcd's TLS is
 * the trouble (`scheme`: how etcd was asked). Pure.
 */
export function etcdSearch(read: EtcdLeaderRead, scheme: 'http' | 'https'): LeaderSearch {
  switch (read.kind) {
    case 'leader':
      return { found: true, address: read.address };
    case 'none':
      return { found: false, why: undefined };
    case 'refused':
      return { found: false, why: read.error };
    case 'unreachable': {
      const hint = etcdTlsTrouble(read.error, scheme);
      return { found: false, why: hint === undefined ? read.error : `${read.error}: ${hint}` };
    }
  }
}

/** What etcd's TLS has to do with a failed read (undefined: nothing it can tell). Pure. */
export function etcdTlsTrouble(error: string, scheme: 'http' | 'https'): string | undefined {
  if (/HTTP request to an HTTPS server/i.test(error)) return 'etcd speaks TLS: give its CA with --etcd_ca_file (or DRYDOCK_ETCD_CA_FILE)';
  // etcd's TLS port drops a plain request without an answer.
  if (scheme === 'http') return /UND_ERR_SOCKET|ECONNRESET/.test(error) ? 'etcd closed the connection: does it speak TLS? give its CA with --etcd_ca_file (or DRYDOCK_ETCD_CA_FILE)' : undefined;
  if (/CERT_HAS_EXPIRED|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER|ERR_TLS_CERT_ALTNAME|HOSTNAME/.test(error) && !/CERTIFICATE_REQUIRED/.test(error)) return "etcd's certificate does not verify: is --etcd_ca_file its CA?";
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/.test(error)) return 'etcd does not speak TLS here: leave out --etcd_ca_file and --etcd_cert_file';
  if (/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|ECONNRESET|UND_ERR_SOCKET/.test(error)) return 'etcd closed the TLS connection: does it want a client certificate (--etcd_cert_file, --etcd_key_file)?';
  return undefined;
}

/** The line for a `--master` (or DRYDOCK_MASTER) that is no master spec. */
export function badMasterLine(master: string, why: string): string {
  return `--master ${master}: ${why}`;
}

/** The line for a master spec through which no leader was found, with why when known. */
export function noLeaderLine(master: string, why?: string): string {
  if (why !== undefined) return `no leading master found through ${master}: ${why}`;
  return `no leading master found through ${master}; set --master or DRYDOCK_MASTER`;
}

export interface MasterClientOptions {
  /** How long one call may take (default 15 s). */
  readonly timeoutMs?: number;
  /** Credential and TLS (default: none). */
  readonly access?: ClientAccess;
  /** http or https (default http; see masterScheme). */
  readonly scheme?: 'http' | 'https';
  /** How etcd is read for an etcd:// master (default: plain http, no user). */
  readonly etcd?: EtcdAccess | undefined;
}

export class MasterClient {
  readonly #master: string;
  readonly #timeoutMs: number;
  readonly #access: ClientAccess;
  readonly #scheme: 'http' | 'https';
  readonly #etcd: EtcdAccess | undefined;
  #base: string | undefined;
  /**
   * The Warning texts the last `call` or `post` answer carried (shared/warning.ts), refusals
   * included: what the master says beside Mesos' body (a machine that names an agent by half).
   */
  lastWarnings: readonly string[] = [];

  /** `master`: host:port, a list of masters, or etcd://endpoints/prefix (the leader is found at the first call). */
  constructor(master: string, o: MasterClientOptions = {}) {
    this.#master = master;
    this.#timeoutMs = o.timeoutMs ?? 15_000;
    this.#access = o.access ?? ANONYMOUS_ACCESS;
    this.#scheme = o.scheme ?? 'http';
    this.#etcd = o.etcd;
  }

  /** The credential in words (undefined: none was sent), for the line a 401 prints. */
  get credential(): string | undefined {
    return this.#access.credential;
  }

  async #leader(): Promise<string> {
    if (this.#base !== undefined) return this.#base;
    const spec = parseMasterSpec(this.#master);
    if (!spec.ok) throw new ApiError(0, badMasterLine(this.#master, spec.error));
    const leader = await leaderOf(spec.value, this.#access.transport, this.#scheme, this.#etcd);
    if (!leader.found) throw new ApiError(0, noLeaderLine(this.#master, leader.why));
    this.#base = `${this.#scheme}://${leader.address}`;
    return this.#base;
  }

  /**
   * POST /api/v1 with a call; resolves with the parsed answer (undefined for an empty 200). A
   * standby's 307 is followed with the credential (and the leader asked directly from then on).
   */
  async call<T = unknown>(call: Record<string, unknown>): Promise<T> {
    const base = await this.#leader();
    let res: Response;
    try {
      const sent = await sendFollowing(this.#access.transport, `${base}/api/v1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: stringifyJson(call),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      res = sent.response;
      if (sent.url !== `${base}/api/v1`) this.#base = new URL(sent.url).origin;
    } catch (e) {
      throw new ApiError(0, unreachableMaster(base, e));
    }
    this.lastWarnings = parseWarnings(res.headers.get('warning')).map((w) => w.text);
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, text.trim() || `${res.status} ${res.statusText}`);
    return (text === '' ? undefined : parseJson(text)) as T;
  }

  /**
   * POST JSON to a path of the leading master (`/drydock/v1/preview`): its status and body
   * whatever the status, as `get`; a master that cannot be reached is an ApiError with status 0.
   */
  async post(path: string, value: unknown): Promise<{ status: number; body: string }> {
    const base = await this.#leader();
    try {
      const sent = await sendFollowing(this.#access.transport, `${base}${path}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: stringifyJson(value),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      this.lastWarnings = parseWarnings(sent.response.headers.get('warning')).map((w) => w.text);
      return { status: sent.response.status, body: await sent.response.text() };
    } catch (e) {
      throw new ApiError(0, unreachableMaster(base, e));
    }
  }

  /**
   * GET a path on the leading master (`/metrics/snapshot`, `/v1/maintenance/plans`): its status
   * and body whatever the status, so the caller decides what a 403 or 404 means. A master that
   * cannot be reached is an ApiError with status 0, as for `call`.
   */
  async get(path: string): Promise<{ status: number; body: string }> {
    const base = await this.#leader();
    try {
      const sent = await sendFollowing(this.#access.transport, `${base}${path}`, {
        method: 'GET',
        headers: { accept: 'application/json' },
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
      return { status: sent.response.status, body: await sent.response.text() };
    } catch (e) {
      throw new ApiError(0, unreachableMaster(base, e));
    }
  }

  /**
   * GET a JSON answer of the leading master (Drydock's own API, `/drydock/v1/...`): the parsed
   * body of a 200 (int64s exact), undefined for a 404 (no such object, or a master without the
   * endpoint), an ApiError for any other status or a body that is not JSON, as `call`.
   */
  async getJson<T = unknown>(path: string): Promise<T | undefined> {
    const r = await this.get(path);
    if (r.status === 404) return undefined;
    if (r.status !== 200) throw new ApiError(r.status, r.body.trim() || String(r.status));
    try {
      return parseJson(r.body) as T;
    } catch (e) {
      throw new ApiError(r.status, `${path}: a body drydock cannot read: ${(e as Error).message}`);
    }
  }
}

/**
 * What TLS trouble a failed request's error code points at, for `base` (undefined: none): a
 * certificate that does not verify, or a TLS connection the server closed (it wants a client
 * certificate, or does not speak TLS). Pure.
 */
export function tlsTrouble(base: string, code: string): string | undefined {
  if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS_|HOSTNAME|ALTNAME/.test(code) && !/CERTIFICATE_REQUIRED/.test(code)) return 'its certificate does not verify: give its CA with --tls_ca_file (or DRYDOCK_TLS_CA_FILE)';
  if (!base.startsWith('https:')) return undefined;
  if (/WRONG_VERSION_NUMBER|PACKET_LENGTH_TOO_LONG/.test(code)) return 'it does not speak TLS: use http:// (and leave out --tls_ca_file)';
  if (/CERTIFICATE_REQUIRED|HANDSHAKE_FAILURE|ECONNRESET|UND_ERR_SOCKET/.test(code)) return 'it closed the TLS connection: does it want a client certificate (--tls_cert_file, --tls_key_file)?';
  return undefined;
}

/** Why the master could not be asked, in a line: the socket's error code, TLS trouble, a refused redirect. */
export function unreachableMaster(base: string, e: unknown): string {
  const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
  const cause = err.cause;
  // fetch refuses a few ports outright (5060 and 5061 are SIP): say so, not "cannot reach".
  if (cause?.message === 'bad port') return `${base}: fetch refuses this port (5060/5061 are blocked as SIP ports); run the master on another port`;
  if (err.name === 'TimeoutError' || err.name === 'AbortError') return `the master at ${base} did not answer in time; set --master or DRYDOCK_MASTER`;
  const code = cause?.code ?? '';
  const tls = tlsTrouble(base, code);
  if (tls !== undefined) return `cannot talk to the master at ${base} (${code}): ${tls}`;
  if (cause === undefined && err.message !== undefined && err.name === 'Error') return `the master at ${base}: ${err.message}`;
  return `cannot reach the master at ${base} (${code !== '' ? code : cause?.message ?? err.message ?? String(e)}); set --master or DRYDOCK_MASTER`;
}

/**
 * Pretty JSON for `--json` output, with bigints written as bare digits (JSON.stringify
 * throws on a bigint, and a float would lose the last digits of a nanosecond time).
 */
export function formatJson(value: unknown): string {
  const MARK = '\u0000int64:';
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? MARK + v.toString() : v), 2) ?? 'null';
  return text.replace(/"\\u0000int64:(-?[0-9]+)"/g, '$1');
}

/**
 * Where the leading master is, as the agent's and the CLI's `--master` say it (reference/
 * mesos-api.md §7, reference/etcd.md §6.2): one `host:port`; a list `m1:5050,m2:5050` (ask
 * each for `/redirect`, which names the leader); or `etcd://h1:2379,h2:2379/prefix` (read the
 * oldest key under the election prefix, the leader's MasterInfo, through etcd's JSON gateway,
 * so no etcd client is loaded into the agent). The agent and the CLI hand `findLeader` their
 * fetch: nothing here opens a socket by itself.
 *
 * A secured etcd (`--etcd_ca_file`, `--etcd_cert_file`, `--etcd_user`) is read through an
 * `EtcdGateway`: https with etcd's CA and client certificate (in the fetch it is lent), and
 * etcd's own users through a token from `/v3/auth/authenticate`, sent as `Authorization`.
 */

import { parseWireJson } from './json.js';

export type MasterSpec =
  | { kind: 'fixed'; address: string }
  | { kind: 'list'; addresses: string[] }
  | { kind: 'etcd'; endpoints: string[]; prefix: string };

const HOST_PORT = /^(?:master@)?(\[[^\]]+\]|[^:/\s,]+):([0-9]{1,5})$/;

function hostPort(text: string): string | undefined {
  const m = HOST_PORT.exec(text.trim());
  if (m === null) return undefined;
  const port = Number(m[2]);
  return port >= 1 && port <= 65535 ? `${m[1]}:${port}` : undefined;
}

/** Parses `host:port`, `h1:p1,h2:p2` or `etcd://h1:2379,h2:2379[/prefix]` (prefix default `/drydock`). */
export function parseMasterSpec(text: string): { ok: true; value: MasterSpec } | { ok: false; error: string } {
  const t = text.trim();
  if (t.startsWith('etcd://')) {
    const m = /^etcd:\/\/([^/]+)(\/.*)?$/.exec(t);
    const endpoints = (m?.[1] ?? '').split(',').map(hostPort);
    if (m === null || endpoints.some((e) => e === undefined)) return { ok: false, error: 'expected etcd://host:port[,host:port...][/prefix]' };
    const prefix = (m[2] ?? '/drydock').replace(/\/+$/, '');
    if (prefix === '') return { ok: false, error: 'the etcd key prefix must not be empty' };
    return { ok: true, value: { kind: 'etcd', endpoints: endpoints as string[], prefix } };
  }
  const parts = t.split(',').map(hostPort);
  if (parts.length === 0 || parts.some((p) => p === undefined)) return { ok: false, error: 'expected host:port, a list host:port,host:port, or etcd://host:port/prefix' };
  return { ok: true, value: parts.length === 1 ? { kind: 'fixed', address: parts[0] as string } : { kind: 'list', addresses: parts as string[] } };
}

/** The body of an etcd v3 JSON-gateway range request for the oldest key under the election prefix. */
export function leaderRangeRequest(prefix: string): Record<string, unknown> {
  const key = Buffer.from(`${prefix}/election/master/`);
  const end = Buffer.from(key);
  end[end.length - 1] = (end[end.length - 1] as number) + 1;
  return { key: key.toString('base64'), range_end: end.toString('base64'), sort_order: 'ASCEND', sort_target: 'CREATE', limit: 1 };
}

/** The leader's `host:port` and epoch from a range answer (decoded JSON), or undefined when there is no leader. */
export function leaderFromRange(answer: unknown): { address: string; epoch: bigint } | undefined {
  const kv = (answer as { kvs?: Array<{ value?: string; create_revision?: string }> } | null)?.kvs?.[0];
  if (kv?.value === undefined) return undefined;
  try {
    const info = JSON.parse(Buffer.from(kv.value, 'base64').toString('utf8')) as { address?: { ip?: string; hostname?: string; port?: number } };
    const a = info.address;
    if (a?.port === undefined) return undefined;
    return { address: `${a.ip ?? a.hostname}:${a.port}`, epoch: BigInt(kv.create_revision ?? '0') };
  } catch {
    return undefined;
  }
}

/** The leader a master's `/redirect` names: `Location: //host:port`. */
export function leaderFromRedirect(location: string | null): string | undefined {
  if (location === null) return undefined;
  const m = /^(?:https?:)?\/\/([^/]+)/.exec(location);
  return m === null ? undefined : hostPort(m[1] ?? '');
}

/**
 * The headers of every JSON-gateway request: JSON, and etcd's require-leader metadata
 * (`hasleader: true`, which the gateway passes on from `Grpc-Metadata-Hasleader`): a member
 * that has lost its leader (cut off from its quorum) answers 503 `etcdserver: no leader` at
 * once instead of holding the read until etcd's own request timeout, and the next endpoint is
 * asked.
 */
export const ETCD_GATEWAY_HEADERS: Readonly<Record<string, string>> = Object.freeze({ 'content-type': 'application/json', 'grpc-metadata-hasleader': 'true' });

/** The fetch a caller lends `findLeader` (the global one, in the agent and the CLI). */
export type Fetch = (
  url: string,
  init: { method?: string; body?: string; redirect?: 'manual'; signal?: AbortSignal; headers?: Record<string, string> },
) => Promise<{ ok: boolean; status: number; headers: { get(name: string): string | null }; text(): Promise<string> }>;

/** etcd's own user (`--etcd_user`, and the password from `--etcd_password_file`). */
export interface EtcdUser {
  readonly name: string;
  readonly password: string;
}

/** How etcd's JSON gateway is reached. */
export interface EtcdAccess {
  /** https when etcd's TLS flags are given (`--etcd_ca_file`, `--etcd_cert_file`). */
  readonly scheme: 'http' | 'https';
  /** A fetch carrying etcd's TLS options (its CA, the client certificate); not the master's. */
  readonly fetch: Fetch;
  /** etcd's user authentication; undefined: none. */
  readonly user: EtcdUser | undefined;
}

/** Plain etcd: http, no user. */
export function plainEtcdAccess(fetchFn: Fetch): EtcdAccess {
  return { scheme: 'http', fetch: fetchFn, user: undefined };
}

/**
 * One read of the election: the leader, no leader (etcd answered, no master leads), refused
 * (etcd turned the reader away: its flags are wrong, and another endpoint would say the same),
 * or unreachable (down, or speaking another protocol).
 */
export type EtcdLeaderRead =
  | { kind: 'leader'; address: string }
  | { kind: 'none' }
  | { kind: 'refused'; error: string }
  | { kind: 'unreachable'; error: string };

/**
 * etcd answers a gateway request whose client certificate has a Common Name with this 400 (and
 * no JSON) when it checks client certificates and users at once: the gateway cannot pass the
 * name on as the user.
 */
const ETCD_GATEWAY_CN = /CommonName of client sending a request against gateway/;

/** The `error` of an etcd gateway answer (`{"error":..., "code":...}`), or its text. Pure. */
function etcdErrorText(text: string): string {
  try {
    const body = parseWireJson(text) as { error?: unknown; message?: unknown } | undefined;
    const e = body?.error ?? body?.message;
    if (typeof e === 'string' && e !== '') return e;
  } catch {
    // not JSON: the text itself
  }
  return text.trim().slice(0, 300) || '(empty answer)';
}

/**
 * What a failed gateway answer means for the reader, naming the flags to check and never the
 * password. `request` is what was asked (`authenticate` or the election `range`). Pure.
 */
export function classifyEtcdAnswer(status: number, text: string, user: string | undefined, prefix: string, request: 'authenticate' | 'range'): EtcdLeaderRead {
  const error = etcdErrorText(text);
  if (status === 400 && ETCD_GATEWAY_CN.test(text)) {
    return { kind: 'refused', error: `etcd refuses a client certificate with a Common Name on its JSON gateway (which agents read) while it checks both client certificates and users: give --etcd_cert_file a certificate without a CN (${error})` };
  }
  if (/authentication failed/.test(error)) return { kind: 'refused', error: `etcd refused user '${user ?? ''}': ${error} (check --etcd_user and --etcd_password_file)` };
  if (/user name is empty/.test(error)) return { kind: 'refused', error: 'etcd requires authentication: give --etcd_user and --etcd_password_file' };
  if (/authentication is not enabled/.test(error)) return { kind: 'refused', error: `etcd has no authentication enabled: leave out --etcd_user and --etcd_password_file (${error})` };
  if (status === 403 || /permission denied/.test(error)) {
    const who = user === undefined ? 'the agent' : `user '${user}'`;
    return { kind: 'refused', error: `etcd ${who} may not read ${prefix}/election/: grant it a role with read on that prefix (etcdctl role grant-permission ROLE read ${prefix}/election/ --prefix=true)` };
  }
  return { kind: 'unreachable', error: `etcd answered the ${request} request with HTTP ${status}: ${error}` };
}

/** The reason of a failed fetch: undici's cause code (ECONNREFUSED, UND_ERR_SOCKET) when it has one. */
function fetchFailure(e: unknown): string {
  const cause = (e as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  const detail = typeof cause?.code === 'string' ? cause.code : typeof cause?.message === 'string' ? cause.message : undefined;
  const message = e instanceof Error ? e.message : String(e);
  return detail === undefined ? message : `${message} (${detail})`;
}

/** The endpoints in the order to ask them: `first` (if among them), then the others as given. Pure. */
export function endpointOrder(endpoints: readonly string[], first: string | undefined): string[] {
  return first === undefined || !endpoints.includes(first) ? [...endpoints] : [first, ...endpoints.filter((e) => e !== first)];
}

/**
 * Reads the election through etcd's JSON gateway, with etcd's TLS (in the lent fetch) and
 * user. The user's token is kept between reads, and asked for again when etcd calls it invalid
 * (simple tokens expire after etcd's --auth-token-ttl, JWTs after theirs): one authentication
 * per reader and token lifetime, not one per read, since etcd checks a password with bcrypt and
 * a fleet of agents reconnecting after a failover would otherwise load it at once.
 */
export class EtcdGateway {
  readonly #access: EtcdAccess;
  #token: string | undefined;
  /** The endpoint that answered last: asked first next time (one that failed goes to the back). */
  #answered: string | undefined;

  constructor(access: EtcdAccess) {
    this.#access = access;
  }

  /** The scheme the endpoints are asked with (for log lines). */
  get scheme(): 'http' | 'https' {
    return this.#access.scheme;
  }

  /**
   * The leading master through the endpoints in turn, starting with the one that answered
   * last: the first that answers decides; a refusal ends the search (the next endpoint would
   * refuse alike). An endpoint that fails (down, no leader, no answer in time) passes the
   * question to the next.
   */
  async leader(endpoints: readonly string[], prefix: string, timeoutMs: number): Promise<EtcdLeaderRead> {
    let last: EtcdLeaderRead = { kind: 'unreachable', error: 'no etcd endpoint given' };
    for (const e of endpointOrder(endpoints, this.#answered)) {
      last = await this.#readAt(e, prefix, timeoutMs);
      if (last.kind !== 'unreachable') {
        this.#answered = e;
        return last;
      }
      if (this.#answered === e) this.#answered = undefined;
    }
    return last;
  }

  async #readAt(endpoint: string, prefix: string, timeoutMs: number): Promise<EtcdLeaderRead> {
    const user = this.#access.user;
    // A token etcd calls invalid (expired) is replaced once per read.
    for (let attempt = 0; attempt < 2; attempt++) {
      const headers: Record<string, string> = { ...ETCD_GATEWAY_HEADERS };
      if (user !== undefined) {
        if (this.#token === undefined) {
          const t = await this.#authenticate(endpoint, user, prefix, timeoutMs);
          if (typeof t !== 'string') return t;
          this.#token = t;
        }
        headers['authorization'] = this.#token;
      }
      let status: number;
      let text: string;
      try {
        const r = await this.#access.fetch(`${this.#access.scheme}://${endpoint}/v3/kv/range`, { method: 'POST', headers, body: JSON.stringify(leaderRangeRequest(prefix)), signal: AbortSignal.timeout(timeoutMs) });
        status = r.status;
        text = await r.text();
      } catch (e) {
        return { kind: 'unreachable', error: `etcd ${endpoint}: ${fetchFailure(e)}` };
      }
      if (status === 200) {
        let answer: unknown;
        try {
          answer = parseWireJson(text);
        } catch {
          return { kind: 'unreachable', error: `etcd ${endpoint} answered the range request with no JSON` };
        }
        const leader = leaderFromRange(answer);
        return leader === undefined ? { kind: 'none' } : { kind: 'leader', address: leader.address };
      }
      if (status === 401 && user !== undefined) {
        this.#token = undefined;
        if (attempt === 0) continue;
        return { kind: 'refused', error: `etcd refused a fresh token of user '${user.name}': ${etcdErrorText(text)} (check etcd's --auth-token settings)` };
      }
      return classifyEtcdAnswer(status, text, user?.name, prefix, 'range');
    }
    // Unreached: the second attempt always returns.
    return { kind: 'unreachable', error: `etcd ${endpoint}: no answer` };
  }

  async #authenticate(endpoint: string, user: EtcdUser, prefix: string, timeoutMs: number): Promise<string | EtcdLeaderRead> {
    let status: number;
    let text: string;
    try {
      const r = await this.#access.fetch(`${this.#access.scheme}://${endpoint}/v3/auth/authenticate`, {
        method: 'POST',
        headers: { ...ETCD_GATEWAY_HEADERS },
        body: JSON.stringify({ name: user.name, password: user.password }),
        signal: AbortSignal.timeout(timeoutMs),
      });
      status = r.status;
      text = await r.text();
    } catch (e) {
      return { kind: 'unreachable', error: `etcd ${endpoint}: ${fetchFailure(e)}` };
    }
    if (status !== 200) return classifyEtcdAnswer(status, text, user.name, prefix, 'authenticate');
    let token: unknown;
    try {
      token = (parseWireJson(text) as { token?: unknown } | undefined)?.token;
    } catch {
      token = undefined;
    }
    return typeof token === 'string' && token !== '' ? token : { kind: 'unreachable', error: `etcd ${endpoint} answered the authentication with no token` };
  }
}

/**
 * The leading master's `host:port`, or undefined when none is known (each probe bounded by
 * `timeoutMs`). `masterScheme` is how the masters of a list are asked for `/redirect` (https
 * when the caller verifies them with a CA); etcd is read through `etcd` (default: plain http
 * with `fetchFn`, no user).
 */
export async function findLeader(spec: MasterSpec, fetchFn: Fetch, timeoutMs = 2_000, masterScheme: 'http' | 'https' = 'http', etcd?: EtcdGateway): Promise<string | undefined> {
  switch (spec.kind) {
    case 'fixed':
      return spec.address;
    case 'list':
      for (const m of spec.addresses) {
        try {
          const r = await fetchFn(`${masterScheme}://${m}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(timeoutMs) });
          const leader = r.status === 307 ? leaderFromRedirect(r.headers.get('location')) : undefined;
          if (leader !== undefined) return leader;
        } catch {
          // down or unreachable: ask the next one
        }
      }
      return undefined;
    case 'etcd': {
      const read = await (etcd ?? new EtcdGateway(plainEtcdAccess(fetchFn))).leader(spec.endpoints, spec.prefix, timeoutMs);
      return read.kind === 'leader' ? read.address : undefined;
    }
  }
}

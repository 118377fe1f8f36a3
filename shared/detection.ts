/**
 * Where the leading master is, as the agent's and the CLI's `--master` say it (reference/
 * mesos-api.md §7, reference/etcd.md §6.2): one `host:port`; a list `m1:5050,m2:5050` (ask
 * each for `/redirect`, which names the leader); or `etcd://h1:2379,h2:2379/prefix` (read the
 * oldest key under the election prefix, the leader's MasterInfo, through etcd's JSON gateway,
 * so no etcd client is loaded into the agent). The agent and the CLI hand `findLeader` their
 * fetch: nothing here opens a socket by itself.
 */

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

/** The leader's `host:port` and epoch from a range answer, or undefined when there is no leader. */
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

/** The fetch a caller lends `findLeader` (the global one, in the agent and the CLI). */
export type Fetch = (url: string, init: { method?: string; body?: string; redirect?: 'manual'; signal?: AbortSignal }) => Promise<{ ok: boolean; status: number; headers: { get(name: string): string | null }; json(): Promise<unknown> }>;

/**
 * The leading master's `host:port`, or undefined when none is known (each probe bounded by
 * `timeoutMs`). `masterScheme` is how the masters of a list are asked for `/redirect` (https
 * when the caller verifies them with a CA); etcd's JSON gateway is always asked over http.
 */
export async function findLeader(spec: MasterSpec, fetchFn: Fetch, timeoutMs = 2_000, masterScheme: 'http' | 'https' = 'http'): Promise<string | undefined> {
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
    case 'etcd':
      for (const e of spec.endpoints) {
        try {
          const r = await fetchFn(`http://${e}/v3/kv/range`, { method: 'POST', body: JSON.stringify(leaderRangeRequest(spec.prefix)), signal: AbortSignal.timeout(timeoutMs) });
          if (r.ok) return leaderFromRange(await r.json())?.address;
        } catch {
          // this etcd endpoint is down: try the next
        }
      }
      return undefined;
  }
}

/**
 * The CLI's only way to the cluster: HTTP calls to the master's operator API.
 *
 * Bodies go through shared/json.ts both ways: Mesos times are int64 nanoseconds
 * (1443830400000000000), past a double's exact integers, so they arrive as bigints and are
 * sent back as the same digits. `JSON.parse` here would silently round them.
 */

import { findLeader, parseMasterSpec } from '../shared/detection.js';
import { parseJson, stringifyJson } from '../shared/json.js';

/** An answer the operator should see: HTTP status and the master's message. */
export class ApiError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'ApiError';
  }
}

/** Where the master is: --master, else DRYDOCK_MASTER, else 127.0.0.1:5050. */
export function resolveMaster(flag: string | undefined, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const raw = flag ?? env['DRYDOCK_MASTER'] ?? '127.0.0.1:5050';
  return raw.replace(/^https?:\/\//, '').replace(/\/+$/, '');
}

/** The line for a `--master` (or DRYDOCK_MASTER) that is no master spec. */
export function badMasterLine(master: string, why: string): string {
  return `--master ${master}: ${why}`;
}

/** The line for a master spec through which no leader was found. */
export function noLeaderLine(master: string): string {
  return `no leading master found through ${master}; set --master or DRYDOCK_MASTER`;
}

export class MasterClient {
  readonly #master: string;
  readonly #timeoutMs: number;
  #base: string | undefined;

  /** `master`: host:port, a list of masters, or etcd://endpoints/prefix (the leader is found at the first call). */
  constructor(master: string, timeoutMs = 15_000) {
    this.#master = master;
    this.#timeoutMs = timeoutMs;
  }

  async #leader(): Promise<string> {
    if (this.#base !== undefined) return this.#base;
    const spec = parseMasterSpec(this.#master);
    if (!spec.ok) throw new ApiError(0, badMasterLine(this.#master, spec.error));
    const leader = await findLeader(spec.value, fetch);
    if (leader === undefined) throw new ApiError(0, noLeaderLine(this.#master));
    this.#base = `http://${leader}`;
    return this.#base;
  }

  /** POST /api/v1 with a call; resolves with the parsed answer (undefined for an empty 200). A standby's 307 is followed. */
  async call<T = unknown>(call: Record<string, unknown>): Promise<T> {
    const base = await this.#leader();
    let res: Response;
    try {
      res = await fetch(`${base}/api/v1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: stringifyJson(call),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string; message?: string } }).cause;
      // fetch refuses a few ports outright (5060 and 5061 are SIP): say so, not "cannot reach".
      if (cause?.message === 'bad port') throw new ApiError(0, `${base}: fetch refuses this port (5060/5061 are blocked as SIP ports); run the master on another port`);
      throw new ApiError(0, `cannot reach the master at ${base} (${cause?.code ?? (e as Error).message}); set --master or DRYDOCK_MASTER`);
    }
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, text.trim() || `${res.status} ${res.statusText}`);
    return (text === '' ? undefined : parseJson(text)) as T;
  }
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

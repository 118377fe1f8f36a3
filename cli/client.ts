/**
 * The CLI's only way to the cluster: HTTP calls to the master's operator API.
 */

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

export class MasterClient {
  readonly #base: string;
  readonly #timeoutMs: number;

  constructor(master: string, timeoutMs = 15_000) {
    this.#base = `http://${master}`;
    this.#timeoutMs = timeoutMs;
  }

  /** POST /api/v1 with a call; resolves with the parsed answer (undefined for an empty 200). */
  async call<T = unknown>(call: Record<string, unknown>): Promise<T> {
    let res: Response;
    try {
      res = await fetch(`${this.#base}/api/v1`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: JSON.stringify(call),
        signal: AbortSignal.timeout(this.#timeoutMs),
      });
    } catch (e) {
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      throw new ApiError(0, `cannot reach the master at ${this.#base} (${cause}); set --master or DRYDOCK_MASTER`);
    }
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, text.trim() || `${res.status} ${res.statusText}`);
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}

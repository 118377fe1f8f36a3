/**
 * The event streams of a real master, read raw: Mesos' operator stream (SUBSCRIBE) or Drydock's
 * own (GET /drydock/v1/events), fetch's body stream through shared/recordio.ts's RecordReader,
 * every record kept in order so a test can assert on order.
 */
import { EVENT_DEADLINE_MS, type MasterHandle } from './daemons.js';
import { RecordReader } from '../../shared/recordio.js';

export type Rec = Record<string, unknown> & { type: string };

/** One stream's response, read as it arrives. */
export class EventStream {
  readonly records: Rec[] = [];
  readonly status: number;
  readonly headers: Headers;
  /** Resolves when the body ends: 'END' for a clean end, or the error's message. */
  readonly ended: Promise<string>;
  readonly #abort: AbortController;
  #waiters: Array<() => void> = [];

  private constructor(res: Response, abort: AbortController) {
    this.status = res.status;
    this.headers = res.headers;
    this.#abort = abort;
    this.ended = this.#pump(res);
  }

  static async open(m: MasterHandle, path = '/api/v1'): Promise<EventStream> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), EVENT_DEADLINE_MS);
    const res = await fetch(`${m.url}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify({ type: 'SUBSCRIBE' }),
      signal: abort.signal,
    });
    clearTimeout(timer);
    return new EventStream(res, abort);
  }

  /** Drydock's own event stream, `GET /drydock/v1/events` (SNAPSHOT, then Drydock's events). */
  static async drydock(m: MasterHandle, headers: Record<string, string> = {}): Promise<EventStream> {
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), 10_000);
    const res = await fetch(`${m.url}/drydock/v1/events`, { headers, signal: abort.signal });
    clearTimeout(timer);
    return new EventStream(res, abort);
  }

  async #pump(res: Response): Promise<string> {
    const reader = new RecordReader();
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        for (const text of reader.push(Buffer.from(chunk))) this.records.push(JSON.parse(text) as Rec);
        this.#notify();
      }
      return 'END';
    } catch (e) {
      return (e as Error).message;
    } finally {
      this.#notify();
    }
  }

  /** Index of the first record at or after `from` matching `pred`; rejects after timeoutMs (the one guard by default). */
  waitFor(pred: (r: Rec) => boolean, from = 0, timeoutMs = EVENT_DEADLINE_MS, what = 'record'): Promise<number> {
    const find = (): number => this.records.findIndex((r, i) => i >= from && pred(r));
    return new Promise((resolve, reject) => {
      const check = (): void => {
        const i = find();
        if (i === -1) return;
        clearTimeout(timer);
        this.#waiters = this.#waiters.filter((w) => w !== check);
        resolve(i);
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== check);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; got ${this.records.map((r) => r.type).join(',')}`));
      }, timeoutMs);
      this.#waiters.push(check);
      check();
    });
  }

  /** Types of the records in [from, to), heartbeats left out. */
  eventsBetween(from: number, to: number): string[] {
    return this.records.slice(from, to).map((r) => r.type).filter((t) => t !== 'HEARTBEAT');
  }

  close(): void {
    this.#abort.abort();
  }

  #notify(): void {
    for (const w of [...this.#waiters]) w();
  }
}

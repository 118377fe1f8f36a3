/**
 * Large JSON answers written in slices (`/master/state` of 10,000 agents and 50,000 tasks is tens
 * of megabytes). Mesos builds such an answer while its master actor waits, and every agent and
 * framework waits with it; here the answer's text comes from a lazy sequence of pieces (one per
 * agent, task, framework, ...), which a production turns into chunks a few milliseconds of work
 * at a time, yielding to the event loop between slices, so the master keeps serving agents,
 * frameworks and other requests while it writes. Each response takes the chunks at its own pace
 * (backpressure: it waits for `drain` when the socket's buffer is full).
 *
 * Requests that would get the same bytes share one production: the handler names the answer by
 * a key (the endpoint, its query, the caller's view rights and the model's generation, a counter
 * every change bumps); a request whose key names a production still running joins it and is sent
 * every chunk from the first. Nothing is kept once a production is done: a request after that
 * starts a new one (so memory holds at most one answer per key, only while it is being sent).
 */

import type { ServerResponse } from 'node:http';
import { performance } from 'node:perf_hooks';
import { escapeLineSeparators, JSONP_SUFFIX, jsonContentType, jsonpPrefix } from '../../shared/jsonp.js';

/** Work per slice before the production yields to the event loop (ms). */
export const SLICE_MS = 8;
/** A chunk is sent once this many characters are ready (and at the end of each slice). */
const CHUNK_CHARS = 64 * 1024;

/** A piece of an answer: text, or bytes already encoded (UTF-8), such as a memo's that are sent as they are. */
export type JsonPiece = string | Buffer;

/** One answer's text being produced: its chunks so far, and whether it is complete. */
class Production {
  readonly chunks: Buffer[] = [];
  #done = false;
  #failed: unknown = undefined;
  #waiting: Array<() => void> = [];

  /** Starts producing at once: the first slice runs now, in the caller's turn. */
  constructor(pieces: Iterable<JsonPiece>, onEnd: () => void) {
    void this.#run(pieces).finally(onEnd);
  }

  get done(): boolean {
    return this.#done;
  }

  get failed(): unknown {
    return this.#failed;
  }

  /** Resolves once another chunk is there, or the production ended. */
  next(): Promise<void> {
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  #push(text: string): void {
    if (text !== '') this.chunks.push(Buffer.from(text, 'utf8'));
    this.#wake();
  }

  #pushBytes(bytes: Buffer): void {
    if (bytes.length > 0) this.chunks.push(bytes);
    this.#wake();
  }

  #wake(): void {
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) w();
  }

  async #run(pieces: Iterable<JsonPiece>): Promise<void> {
    try {
      const it = pieces[Symbol.iterator]();
      let text = '';
      let sliceStart = performance.now();
      for (;;) {
        const r = it.next();
        if (r.done === true) break;
        if (typeof r.value === 'string') text += r.value;
        else {
          // Bytes go out as they are (no copy): the text before them first.
          this.#push(text);
          text = '';
          this.#pushBytes(r.value);
        }
        if (text.length >= CHUNK_CHARS) {
          this.#push(text);
          text = '';
        }
        // A look at the clock costs a tenth of a microsecond: one per piece keeps a slice near SLICE_MS whatever the pieces cost.
        if (performance.now() - sliceStart >= SLICE_MS) {
          // What is ready goes out while the event loop does other work.
          this.#push(text);
          text = '';
          await new Promise<void>((resolve) => setImmediate(resolve));
          sliceStart = performance.now();
        }
      }
      this.#push(text);
      this.#done = true;
    } catch (e) {
      this.#failed = e;
    } finally {
      this.#wake();
    }
  }
}

/** Productions running now, by share key. */
const running = new Map<string, Production>();

/** How many requests joined a production another request had started (a debug figure for the benchmark and tests). */
let joinedCount = 0;

/** Requests that joined a running production since the process started. */
export function sharedAnswers(): number {
  return joinedCount;
}

/** Resolves when the response may take more (`drain`), or has gone (`close`). */
function drained(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Writes a JSON answer made of `pieces` (lazily: the function is called only by a request that
 * starts a production), as JSON or as JSONP when `callback` is given. `share`: the key under
 * which requests that would get the same bytes share one production. Resolves once the answer is
 * written (or the client has gone); rejects if producing the pieces threw (the response is
 * destroyed: its headers were sent).
 */
export async function writeJsonPieces(res: ServerResponse, status: number, pieces: () => Iterable<JsonPiece>, callback: string | undefined, share: string | undefined): Promise<void> {
  res.writeHead(status, { 'Content-Type': jsonContentType(callback), ...(callback === undefined ? {} : { 'X-Content-Type-Options': 'nosniff' }) });
  if (res.req?.method === 'HEAD') {
    res.end();
    return;
  }
  let production = share === undefined ? undefined : running.get(share);
  if (production !== undefined) joinedCount++;
  else {
    const made: Production = new Production(pieces(), () => {
      if (share !== undefined && running.get(share) === made) running.delete(share);
    });
    production = made;
    if (share !== undefined && !made.done && made.failed === undefined) running.set(share, made);
  }
  if (callback !== undefined) res.write(jsonpPrefix(callback));
  let sent = 0;
  for (;;) {
    while (sent < production.chunks.length) {
      if (res.destroyed) return;
      const chunk = production.chunks[sent++] as Buffer;
      // A shared production's bytes are plain JSON: a JSONP response escapes its line separators as it sends them.
      if (!res.write(callback === undefined ? chunk : escapeLineSeparators(chunk))) await drained(res);
    }
    if (production.failed !== undefined) {
      res.destroy();
      throw production.failed;
    }
    if (production.done) break;
    await production.next();
  }
  if (!res.destroyed) res.end(callback === undefined ? undefined : JSONP_SUFFIX);
}

// ---- Writing pieces ------------------------------------------------------------------------------

/** The pieces of a JSON array: `[`, each element's text (comma-separated), `]`. */
export function* arrayPieces<T>(items: Iterable<T>, render: (item: T) => string): Generator<string> {
  let first = true;
  for (const item of items) {
    yield first ? `[${render(item)}` : `,${render(item)}`;
    first = false;
  }
  yield first ? '[]' : ']';
}

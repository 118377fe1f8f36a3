/**
 * A client of the Mesos scheduler API v1 (`POST /api/v1/scheduler`, JSON): SUBSCRIBE opens a
 * RecordIO event stream and returns the `Mesos-Stream-Id`; every other call carries that id
 * and the framework id. Used by `drydock run`, by the tests and by the benchmarks. Events are
 * parsed with exact int64s: nanosecond times above 2^53 arrive as bigints.
 *
 * With a transport, every request (SUBSCRIBE and each call) goes over its TLS and carries its
 * Authorization header; a standby's 307 to the leader is followed with the header kept
 * (io/client-auth.ts), and the calls then go to the leader directly.
 */

import { sendFollowing } from '../io/client-auth.js';
import { parseJson, stringifyJson } from '../shared/json.js';
import { RecordReader } from '../shared/recordio.js';
import { PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';

/** One scheduler event as received (`{"type":"OFFERS","offers":{...}}`). */
export type SchedulerEvent = { type: string } & Record<string, unknown>;

export interface SubscribeOptions {
  /** Re-subscribe as this framework (failover). */
  frameworkId?: string;
  /** How long to wait for SUBSCRIBED. */
  timeoutMs?: number;
  /** TLS options and the Authorization header (default: plain HTTP, anonymous). */
  transport?: ClientTransport;
}

/**
 * The scheduler API's URL at a master: `host:port` over https when the transport has TLS
 * material, else http; a master given as `http://host:port` or `https://host:port` keeps its scheme.
 */
export function schedulerUrl(master: string, transport: ClientTransport): string {
  const m = /^(https?):\/\/(.+?)\/*$/i.exec(master.trim());
  if (m !== null) return `${(m[1] as string).toLowerCase()}://${m[2] as string}/api/v1/scheduler`;
  return `${transport.tls ? 'https' : 'http'}://${master}/api/v1/scheduler`;
}

export class SubscribeError extends Error {
  constructor(readonly status: number, message: string) {
    super(message);
    this.name = 'SubscribeError';
  }
}

interface Waiter {
  pred: (e: SchedulerEvent) => boolean;
  resolve: (e: SchedulerEvent) => void;
}

export class SchedulerClient {
  readonly url: string;
  readonly streamId: string;
  readonly frameworkId: string;
  readonly heartbeatIntervalSeconds: number;
  /** Every event received, in order (SUBSCRIBED first). */
  readonly received: SchedulerEvent[] = [];
  readonly #pending: SchedulerEvent[] = [];
  #waiters: Waiter[] = [];
  readonly #abort: AbortController;
  readonly #transport: ClientTransport;
  #closed = false;
  /** Resolves when the stream ends (closed by either side), with the reason. */
  readonly ended: Promise<string>;
  /** Called for every event as it arrives (after it is queued). */
  onEvent: ((e: SchedulerEvent) => void) | undefined;

  private constructor(url: string, streamId: string, subscribed: SchedulerEvent, abort: AbortController, ended: Promise<string>, transport: ClientTransport) {
    this.url = url;
    this.#transport = transport;
    this.streamId = streamId;
    const s = subscribed['subscribed'] as { framework_id: { value: string }; heartbeat_interval_seconds?: number };
    this.frameworkId = s.framework_id.value;
    this.heartbeatIntervalSeconds = s.heartbeat_interval_seconds ?? 15;
    this.#abort = abort;
    this.ended = ended;
    this.received.push(subscribed);
  }

  /** SUBSCRIBE as `frameworkInfo` to the master at `host:port` (or a URL, see schedulerUrl); resolves after SUBSCRIBED. */
  static async subscribe(master: string, frameworkInfo: Record<string, unknown>, opts: SubscribeOptions = {}): Promise<SchedulerClient> {
    const transport = opts.transport ?? PLAIN_TRANSPORT;
    let url = schedulerUrl(master, transport);
    const abort = new AbortController();
    const info = opts.frameworkId === undefined ? frameworkInfo : { ...frameworkInfo, id: { value: opts.frameworkId } };
    const body: Record<string, unknown> = { type: 'SUBSCRIBE', subscribe: { framework_info: info } };
    if (opts.frameworkId !== undefined) body['framework_id'] = { value: opts.frameworkId };
    const timer = setTimeout(() => abort.abort(new Error('timed out waiting for SUBSCRIBED')), opts.timeoutMs ?? 15_000);
    let res: Response;
    try {
      // A standby answers 307 to the leader: the stream and every later call go there.
      const sent = await sendFollowing(transport, url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json' },
        body: stringifyJson(body),
        signal: abort.signal,
      });
      res = sent.response;
      url = sent.url;
    } catch (e) {
      clearTimeout(timer);
      const cause = (e as { cause?: { code?: string } }).cause?.code ?? (e as Error).message;
      const where = master.replace(/^https?:\/\//i, '');
      if (/CERT|SELF_SIGNED|UNABLE_TO_VERIFY|ERR_TLS|ALTNAME/.test(cause)) throw new SubscribeError(0, `cannot verify the master at ${where} (${cause}): give its CA with --tls_ca_file`);
      throw new SubscribeError(0, `cannot reach the master at ${where} (${cause})`);
    }
    if (res.status !== 200 || res.body === null) {
      clearTimeout(timer);
      throw new SubscribeError(res.status, (await res.text()).trim() || `${res.status} ${res.statusText}`);
    }
    const streamId = res.headers.get('mesos-stream-id') ?? '';
    const reader = res.body.getReader();
    const records = new RecordReader();
    const queue: SchedulerEvent[] = [];

    // Read until SUBSCRIBED, then hand the rest of the stream to the client.
    let subscribed: SchedulerEvent | undefined;
    while (subscribed === undefined) {
      let chunk: ReadableStreamReadResult<Uint8Array>;
      try {
        chunk = await reader.read();
      } catch (e) {
        clearTimeout(timer);
        throw new SubscribeError(0, `stream failed before SUBSCRIBED: ${(e as Error).message}`);
      }
      if (chunk.done) {
        clearTimeout(timer);
        throw new SubscribeError(0, 'stream ended before SUBSCRIBED');
      }
      for (const r of records.push(Buffer.from(chunk.value))) {
        const e = parseJson(r) as SchedulerEvent;
        if (subscribed === undefined && e.type === 'SUBSCRIBED') subscribed = e;
        else if (subscribed === undefined && e.type === 'ERROR') {
          clearTimeout(timer);
          abort.abort();
          throw new SubscribeError(200, String((e['error'] as { message?: string } | undefined)?.message ?? 'ERROR event'));
        } else queue.push(e);
      }
    }
    clearTimeout(timer);

    let client: SchedulerClient | undefined;
    const ended = (async (): Promise<string> => {
      for (;;) {
        let chunk: ReadableStreamReadResult<Uint8Array>;
        try {
          chunk = await reader.read();
        } catch (e) {
          return `stream failed: ${(e as Error).message}`;
        }
        if (chunk.done) return 'stream ended';
        for (const r of records.push(Buffer.from(chunk.value))) client?.deliver(parseJson(r) as SchedulerEvent);
      }
    })();
    client = new SchedulerClient(url, streamId, subscribed, abort, ended, transport);
    for (const e of queue) client.deliver(e);
    void ended.then(() => (client.#closed = true));
    return client;
  }

  /** Queues an event (or hands it to a waiter). */
  private deliver(e: SchedulerEvent): void {
    this.received.push(e);
    const w = this.#waiters.find((x) => x.pred(e));
    if (w !== undefined) {
      this.#waiters = this.#waiters.filter((x) => x !== w);
      w.resolve(e);
    } else this.#pending.push(e);
    this.onEvent?.(e);
  }

  /**
   * Takes the first unconsumed event that matches (waiting up to timeoutMs for one). The default
   * is a guard against hanging, as the tests' EVENT_DEADLINE_MS (scripts/harness/deadline.ts):
   * a matching event returns at once, so only a wait that would fail anyway waits it out.
   */
  next(pred: (e: SchedulerEvent) => boolean = () => true, timeoutMs = 30_000, what = 'event'): Promise<SchedulerEvent> {
    const i = this.#pending.findIndex(pred);
    if (i !== -1) return Promise.resolve(this.#pending.splice(i, 1)[0] as SchedulerEvent);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        pred,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== waiter);
        reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}; received: ${this.received.map((e) => e.type).join(',')}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  /** Waits for the next event of a type (`OFFERS`, `UPDATE`, ...). */
  nextOfType(type: string, timeoutMs = 30_000): Promise<SchedulerEvent> {
    return this.next((e) => e.type === type, timeoutMs, `a ${type} event`);
  }

  /** Sends a call with this stream's id and framework id; resolves with the HTTP answer. */
  async call(type: string, body: Record<string, unknown> = {}): Promise<{ status: number; text: string }> {
    const key = type.toLowerCase();
    const payload: Record<string, unknown> = { framework_id: { value: this.frameworkId }, type };
    if (Object.keys(body).length > 0) payload[key] = body;
    const { response: res } = await sendFollowing(this.#transport, this.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'mesos-stream-id': this.streamId },
      body: stringifyJson(payload),
      signal: AbortSignal.timeout(15_000),
    });
    return { status: res.status, text: await res.text() };
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Closes the stream (the master sees the scheduler disconnect). */
  close(): void {
    this.#closed = true;
    this.#abort.abort();
  }
}

/**
 * The scheduler the master benchmarks play: a framework on the real master's scheduler API
 * (scheduler/client.ts) that keeps the outstanding offers, launches `sleep` tasks on
 * them, acknowledges every update at once and notes when each task reached TASK_RUNNING
 * (performance.now(), in this process, as the scheduler sees it).
 *
 * Its calls (ACCEPT, DECLINE, ACKNOWLEDGE) are pipelined on one kept-alive connection, as
 * Mesos' scheduler library sends them, rather than one fetch() each: the benchmark process
 * shares the machine's two cores with the master and the agents, and fetch's per-request cost
 * (a Request, an AbortSignal, web streams, new sockets when many calls are in flight) made
 * this process the busiest of the throughput run (profiled: ~1.8 ms of CPU per task launched,
 * nearly all of it fetch). With a transport (TLS, credentials) the calls keep using the
 * client's fetch.
 */

import { connect, type Socket } from 'node:net';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { stringifyJson } from '../../shared/json.js';
import type { Resource, TaskInfo } from '../../shared/mesos.js';
import type { ClientTransport } from '../../io/transport.js';

/** An outstanding offer, as OFFERS carries it. */
export interface BenchOffer {
  id: { value: string };
  agent_id: { value: string };
  hostname: string;
  resources: Resource[];
}

/** What one benchmark task asks for. */
export const TASK_CPUS = 0.1;
export const TASK_MEM_MB = 1;
export const TASK_COMMAND = 'sleep 600';

/** The scalar total of `name` in an offer. */
export function offered(o: BenchOffer, name: string): number {
  let sum = 0;
  for (const r of o.resources) if (r.name === name && r.type === 'SCALAR') sum += r.scalar?.value ?? 0;
  return sum;
}

/**
 * How many benchmark tasks fit an offer. Pure. The small epsilon absorbs float sums (the
 * master subtracts 0.1 a hundred times), so a task that fits on paper is not lost to 1e-15.
 */
export function tasksFitting(cpus: number, memMb: number): number {
  return Math.max(0, Math.min(Math.floor(cpus / TASK_CPUS + 1e-6), Math.floor(memMb / TASK_MEM_MB + 1e-6)));
}

/** A TaskInfo for a benchmark task on `offer`, with resources shaped like the offer's. */
export function benchTask(taskId: string, offer: BenchOffer): TaskInfo {
  const shaped = (name: string, value: number): Resource => {
    const src = offer.resources.find((r) => r.name === name && r.type === 'SCALAR');
    const { scalar: _s, ...shape } = src ?? { name, type: 'SCALAR' as const };
    return { ...shape, name, type: 'SCALAR', scalar: { value } } as Resource;
  };
  return {
    name: taskId,
    task_id: { value: taskId },
    agent_id: offer.agent_id,
    resources: [shaped('cpus', TASK_CPUS), shaped('mem', TASK_MEM_MB)],
    command: { shell: true, value: TASK_COMMAND },
  };
}

/** A scheduler call's answer. */
export interface CallAnswer {
  status: number;
  text: string;
}

/** Bytes of answers a connection may hold unparsed before it is taken for a broken server. */
const MAX_ANSWER_BYTES = 16 << 20;

/**
 * Scheduler calls pipelined on one kept-alive HTTP/1.1 connection, as Mesos' scheduler library
 * (libprocess' http::Connection) sends them: each call is written at once without waiting for
 * the previous answer, the answers come back in order. Calls made in one turn of the event loop
 * leave in one write. Plain HTTP, no redirects (the benchmarks' masters lead); an answer must
 * carry Content-Length (every master answer does). A closed or broken connection fails the calls
 * waiting on it, and the next call opens a new one.
 */
export class PipelinedCalls {
  readonly #host: string;
  readonly #port: number;
  readonly #path: string;
  /** The request head up to Content-Length, the same for every call. */
  readonly #head: string;
  readonly #frameworkId: string;
  #socket: Socket | undefined;
  #waiting: Array<{ resolve: (a: CallAnswer) => void; reject: (e: Error) => void }> = [];
  #buffered: Buffer = Buffer.alloc(0);
  #corked = false;
  #closed = false;

  constructor(url: string, streamId: string, frameworkId: string) {
    const u = new URL(url);
    this.#host = u.hostname;
    this.#port = Number(u.port === '' ? 80 : u.port);
    this.#path = u.pathname;
    this.#frameworkId = frameworkId;
    this.#head = `POST ${this.#path} HTTP/1.1\r\nHost: ${u.host}\r\nContent-Type: application/json\r\nAccept: application/json\r\nMesos-Stream-Id: ${streamId}\r\nContent-Length: `;
  }

  call(type: string, body: Record<string, unknown>): Promise<CallAnswer> {
    if (this.#closed) return Promise.reject(new Error('the calls are closed'));
    const payload: Record<string, unknown> = { framework_id: { value: this.#frameworkId }, type };
    if (Object.keys(body).length > 0) payload[type.toLowerCase()] = body;
    const data = stringifyJson(payload);
    const socket = this.#connection();
    return new Promise<CallAnswer>((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      if (!this.#corked) {
        this.#corked = true;
        socket.cork();
        setImmediate(() => {
          this.#corked = false;
          socket.uncork();
        });
      }
      socket.write(`${this.#head}${Buffer.byteLength(data)}\r\n\r\n${data}`);
    });
  }

  close(): void {
    this.#closed = true;
    this.#socket?.destroy();
  }

  #connection(): Socket {
    if (this.#socket !== undefined && !this.#socket.destroyed) return this.#socket;
    const socket = connect({ host: this.#host, port: this.#port, noDelay: true });
    this.#socket = socket;
    this.#buffered = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => this.#read(socket, chunk));
    const fail = (e: Error): void => this.#fail(socket, e);
    socket.on('error', fail);
    socket.on('close', () => fail(new Error('the master closed the connection')));
    return socket;
  }

  /** Parses every complete answer in what has arrived; each settles the oldest call. */
  #read(socket: Socket, chunk: Buffer): void {
    this.#buffered = this.#buffered.length === 0 ? chunk : Buffer.concat([this.#buffered, chunk]);
    for (;;) {
      const end = this.#buffered.indexOf('\r\n\r\n');
      if (end === -1) break;
      const head = this.#buffered.subarray(0, end).toString('latin1');
      const status = /^HTTP\/1\.[01] ([0-9]{3})/.exec(head);
      const length = /\r\ncontent-length: *([0-9]+)/i.exec(head);
      if (status === null || length === null) {
        this.#fail(socket, new Error(`unreadable answer: ${head.slice(0, 80)}`));
        return;
      }
      const bodyEnd = end + 4 + Number(length[1]);
      if (this.#buffered.length < bodyEnd) break;
      const text = this.#buffered.subarray(end + 4, bodyEnd).toString('utf8');
      this.#buffered = this.#buffered.subarray(bodyEnd);
      this.#waiting.shift()?.resolve({ status: Number(status[1]), text });
    }
    if (this.#buffered.length > MAX_ANSWER_BYTES) this.#fail(socket, new Error('answer too large'));
  }

  #fail(socket: Socket, e: Error): void {
    if (this.#socket !== socket) return;
    this.#socket = undefined;
    socket.destroy();
    const waiting = this.#waiting;
    this.#waiting = [];
    for (const w of waiting) w.reject(e);
  }
}

export class BenchFramework {
  readonly client: SchedulerClient;
  /** Pipelined calls when the framework is on plain HTTP, anonymous; else the client's fetch. */
  readonly #calls: PipelinedCalls | undefined;
  /** Outstanding offers by id (RESCIND and our own ACCEPT/DECLINE remove them). */
  readonly offers = new Map<string, BenchOffer>();
  /** When each task's TASK_RUNNING arrived. */
  readonly runningAt = new Map<string, number>();
  /** Tasks that ended before (or instead of) running, with state and message. */
  readonly failed = new Map<string, string>();
  /** ACKNOWLEDGE calls that did not get 202. */
  ackErrors = 0;
  #waiters: Array<() => void> = [];

  private constructor(client: SchedulerClient, plain: boolean) {
    this.client = client;
    this.#calls = plain ? new PipelinedCalls(client.url, client.streamId, client.frameworkId) : undefined;
    client.onEvent = (e) => this.#event(e);
    for (const e of client.received.slice(1)) this.#event(e);
  }

  /** `transport`: TLS and the Authorization header of a secured master (the security benchmark); default plain, anonymous. */
  static async subscribe(master: string, name: string, transport?: ClientTransport): Promise<BenchFramework> {
    const client = await SchedulerClient.subscribe(master, { user: 'root', name, failover_timeout: 0, checkpoint: true }, { timeoutMs: 20_000, ...(transport === undefined ? {} : { transport }) });
    return new BenchFramework(client, transport === undefined && client.url.startsWith('http:'));
  }

  /** Sends a scheduler call with this framework's stream id; resolves with the HTTP answer. */
  call(type: string, body: Record<string, unknown> = {}): Promise<CallAnswer> {
    return this.#calls === undefined ? this.client.call(type, body) : this.#calls.call(type, body);
  }

  #event(e: SchedulerEvent): void {
    if (e.type === 'OFFERS') {
      for (const o of ((e['offers'] as { offers?: BenchOffer[] } | undefined)?.offers ?? [])) this.offers.set(o.id.value, o);
    } else if (e.type === 'RESCIND') {
      this.offers.delete(String((e['rescind'] as { offer_id?: { value?: string } } | undefined)?.offer_id?.value));
    } else if (e.type === 'UPDATE') {
      const s = (e['update'] as { status: { task_id: { value: string }; state: string; message?: string; agent_id?: { value: string }; uuid?: string } }).status;
      const taskId = s.task_id.value;
      if (s.state === 'TASK_RUNNING' && !this.runningAt.has(taskId)) this.runningAt.set(taskId, performance.now());
      else if (s.state !== 'TASK_STAGING' && s.state !== 'TASK_STARTING' && s.state !== 'TASK_RUNNING' && !this.runningAt.has(taskId)) {
        this.failed.set(taskId, `${s.state} ${s.message ?? ''}`.trim());
      }
      if (s.uuid !== undefined && s.agent_id !== undefined) {
        this.call('ACKNOWLEDGE', { agent_id: s.agent_id, task_id: s.task_id, uuid: s.uuid }).then((r) => { if (r.status !== 202) this.ackErrors++; }, () => { this.ackErrors++; });
      }
    } else return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Waits (bounded) until `check` returns something other than undefined, re-checking after each event. */
  async until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const v = check();
      if (v !== undefined) return v;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      if (this.client.closed) throw new Error(`the scheduler stream ended while waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.#waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  /** Takes an outstanding offer (removing it), the first that `fits`. */
  takeOffer(fits: (o: BenchOffer) => boolean = () => true): BenchOffer | undefined {
    for (const o of this.offers.values()) {
      if (fits(o)) {
        this.offers.delete(o.id.value);
        return o;
      }
    }
    return undefined;
  }

  /** ACCEPT `offer` with one LAUNCH of `tasks`; unused resources come back at once (refuse 0 s). */
  async launch(offer: BenchOffer, tasks: TaskInfo[]): Promise<void> {
    const r = await this.call('ACCEPT', {
      offer_ids: [offer.id],
      operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }],
      filters: { refuse_seconds: 0 },
    });
    if (r.status !== 202) throw new Error(`ACCEPT answered ${r.status}: ${r.text.trim()}`);
  }

  /** TEARDOWN (the master kills every task of the framework), then close the stream. */
  async teardown(): Promise<void> {
    try {
      await this.call('TEARDOWN');
    } finally {
      this.#calls?.close();
      this.client.close();
    }
  }
}

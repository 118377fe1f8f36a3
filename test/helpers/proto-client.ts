/**
 * A Mesos v1 scheduler client built the way third-party framework libraries build theirs:
 * generated at run time by protobufjs from a .proto description of the Mesos wire (Drydock's
 * description of Mesos' v1 messages, shared/mesos-proto, complete), speaking JSON over HTTP.
 *
 * What makes it a faithful stand-in is how it writes and reads:
 * - Every call is `Call.fromObject(...)` then `Call.toObject(msg, WIRE_OPTIONS)`: defaults on,
 *   so every unset message field goes out as `null`, every unset scalar as its proto2 default
 *   (`"role": "*"`, `"shell": true`, `"hostname": ""`), every unset repeated field as `[]` and
 *   every map as `{}`; int64s go out as strings, enums as names, bytes as base64.
 * - Every event is checked before it is used, more strictly than such a library would (it
 *   would silently drop what it does not know, and the test would only time out): the
 *   envelope must be a Mesos 1.x one (`type` plus that type's own field, nothing else), every
 *   key must be a field of the message at that place, enums must be known names, nothing may
 *   be `null` (Mesos writes set fields only), and `Event.verify` must pass (types and required
 *   fields). Then `Event.fromObject` converts it. A failed check is a decode failure: it
 *   rejects whoever is waiting for an event and stays listed in `decodeFailures`.
 *
 * Every wait is bounded; SUBSCRIBE's stream is aborted by close().
 */

import protobuf from 'protobufjs';
import type { Enum, Field, IConversionOptions, Type } from 'protobufjs';
import { parseJson } from '../../shared/json.js';
import { mesosSchema } from '../../shared/mesos-proto/schema.js';
import { RecordReader } from '../../shared/recordio.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';

// Loaded with keepCase: protobufjs camel-cases field names by default; Mesos' JSON is
// snake_case, so a client that works against Mesos at all loads its protos this way.
const root = mesosSchema();

/** The reflected `mesos.v1.scheduler.Call` and `Event`. */
export const CallType: Type = root.lookupType('mesos.v1.scheduler.Call');
export const EventType: Type = root.lookupType('mesos.v1.scheduler.Event');

/** How a generated Mesos client turns a message into JSON (protobufjs `toObject`). */
export const WIRE_OPTIONS: IConversionOptions = { defaults: true, longs: String, enums: String, bytes: String, arrays: true };

/** How events are shown to the test: only what was set, int64s as exact decimal strings. */
const VIEW_OPTIONS: IConversionOptions = { longs: String, enums: String, bytes: String, arrays: true };

const INT64_TYPES: ReadonlySet<string> = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

/** A bigint as the `{low, high}` pair protobufjs accepts wherever it takes a Long (signedness comes from the field). */
function longBits(v: bigint): { low: number; high: number } {
  const u = BigInt.asUintN(64, v);
  return { low: Number(u & 0xffffffffn) | 0, high: Number(u >> 32n) | 0 };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Uint8Array);

/**
 * Walks `value` as a `type` in Mesos' JSON form and returns it in the form protobufjs'
 * `verify` and `fromObject` take (enum numbers, int64 bits), listing every key, enum name
 * or null that a Mesos 1.x message of that type could not carry.
 */
function toMessageForm(type: Type, value: unknown, path: string, problems: string[]): unknown {
  if (!isPlainObject(value)) {
    problems.push(`${path}: expected a JSON object for ${type.name}, got ${value === null ? 'null' : Array.isArray(value) ? 'an array' : typeof value}`);
    return value;
  }
  const out: Record<string, unknown> = {};
  for (const [key, v] of Object.entries(value)) {
    const field: Field | undefined = type.fields[key];
    const at = `${path}.${key}`;
    if (field === undefined) {
      problems.push(`${at}: no such field in ${type.name}`);
      continue;
    }
    if (v === null) {
      problems.push(`${at}: null (Mesos writes set fields only)`);
      continue;
    }
    if (field.map) {
      if (!isPlainObject(v)) {
        problems.push(`${at}: expected a JSON object (a map)`);
        continue;
      }
      out[key] = Object.fromEntries(Object.entries(v).map(([k, x]) => [k, fieldValue(field, x, `${at}.${k}`, problems)]));
    } else if (field.repeated) {
      if (!Array.isArray(v)) {
        problems.push(`${at}: expected a JSON array`);
        continue;
      }
      out[key] = v.map((x, i) => fieldValue(field, x, `${at}[${i}]`, problems));
    } else {
      out[key] = fieldValue(field, v, at, problems);
    }
  }
  return out;
}

function fieldValue(field: Field, v: unknown, path: string, problems: string[]): unknown {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Enum) {
    const e: Enum = resolved;
    if (typeof v !== 'string') {
      problems.push(`${path}: enum ${e.name} written as ${typeof v === 'bigint' ? v.toString() : JSON.stringify(v)}; Mesos writes value names`);
      return v;
    }
    const n = e.values[v];
    if (n === undefined) {
      problems.push(`${path}: '${v}' is not a ${e.name} value`);
      return v;
    }
    return n;
  }
  if (resolved instanceof protobuf.Type) return toMessageForm(resolved, v, path, problems);
  // Exact int64s (the JSON was parsed keeping digits past 2^53) as the bits protobufjs takes.
  if (typeof v === 'bigint' && INT64_TYPES.has(field.type)) return longBits(v);
  return v;
}

/** The problems of one received record, and the record. */
export interface DecodeFailure {
  raw: string;
  problems: string[];
}

export type Decoded = { ok: true; event: ProtoEvent } | { ok: false; failure: DecodeFailure };

/** One event as the test sees it: its type, and the set fields (protobufjs `toObject`). */
export interface ProtoEvent {
  type: string;
  view: Record<string, unknown>;
  raw: string;
}

/**
 * Decodes one RecordIO record as a Mesos 1.x scheduler event, strictly (see the module
 * comment). Returns the event or the list of problems.
 */
export function decodeEvent(raw: string): Decoded {
  const problems: string[] = [];
  const fail = (): { ok: false; failure: DecodeFailure } => ({ ok: false, failure: { raw, problems } });
  let json: unknown;
  try {
    json = parseJson(raw);
  } catch (e) {
    problems.push(`not JSON: ${(e as Error).message}`);
    return fail();
  }
  if (!isPlainObject(json)) {
    problems.push('an event must be a JSON object');
    return fail();
  }
  const type = json['type'];
  const typeEnum = EventType.fields['type']?.resolvedType as Enum;
  if (typeof type !== 'string' || typeEnum.values[type] === undefined || type === 'UNKNOWN') {
    problems.push(`'type' is ${JSON.stringify(type)}, not a Mesos 1.x event type`);
    return fail();
  }
  // The 1.x envelope: the payload field is the type in lower case; HEARTBEAT has none.
  const payload = type === 'HEARTBEAT' ? undefined : type.toLowerCase();
  for (const key of Object.keys(json)) {
    if (key !== 'type' && key !== payload) problems.push(`a ${type} event carries '${key}', which a Mesos 1.x ${type} event does not have`);
  }
  if (payload !== undefined && !(payload in json)) problems.push(`a ${type} event without its '${payload}' field`);
  const form = toMessageForm(EventType, json, 'event', problems);
  const verified = EventType.verify(form as Record<string, unknown>);
  if (verified !== null) problems.push(`Event.verify: ${verified}`);
  if (problems.length > 0) return fail();
  let view: Record<string, unknown>;
  try {
    view = EventType.toObject(EventType.fromObject(form as Record<string, unknown>), VIEW_OPTIONS);
  } catch (e) {
    problems.push(`Event.fromObject: ${(e as Error).message}`);
    return fail();
  }
  return { ok: true, event: { type, view, raw } };
}

/**
 * Builds the JSON a generated client sends for `call` (Mesos field names, enum names, int64s
 * as numbers, bigints or strings, bytes as base64 or Uint8Array). Throws on a key or enum name
 * the proto does not know, or a missing required field: those are bugs in the test, and
 * protobufjs would silently drop the first two.
 */
export function encodeCall(call: Record<string, unknown>): Record<string, unknown> {
  const problems: string[] = [];
  const form = toMessageForm(CallType, call, 'call', problems);
  if (problems.length > 0) throw new Error(`bad call in the test: ${problems.join('; ')}`);
  const message = CallType.fromObject(form as Record<string, unknown>);
  const missing = CallType.verify(message);
  if (missing !== null) throw new Error(`bad call in the test: Call.verify: ${missing}`);
  return CallType.toObject(message, WIRE_OPTIONS);
}

// ---- Views of the event fields the tests read ------------------------------------------------

export interface IdView {
  value: string;
}
export interface ResourceView {
  name: string;
  type: string;
  scalar?: { value: number };
  role?: string;
  allocation_info?: { role?: string };
}
export interface UnavailabilityView {
  start: { nanoseconds: string };
  duration?: { nanoseconds: string };
}
export interface OfferView {
  id: IdView;
  framework_id: IdView;
  agent_id: IdView;
  hostname: string;
  resources: ResourceView[];
  unavailability?: UnavailabilityView;
}
export interface InverseOfferView {
  id: IdView;
  framework_id: IdView;
  agent_id?: IdView;
  unavailability: UnavailabilityView;
  resources: ResourceView[];
}
export interface TaskStatusView {
  task_id: IdView;
  state: string;
  message?: string;
  source?: string;
  reason?: string;
  agent_id?: IdView;
  executor_id?: IdView;
  timestamp?: number;
  /** base64 of 16 bytes, on updates that must be acknowledged. */
  uuid?: string;
}

const field = <T>(e: ProtoEvent, name: string): T => e.view[name] as T;
export const offersOf = (e: ProtoEvent): OfferView[] => (e.type === 'OFFERS' ? field<{ offers: OfferView[] }>(e, 'offers').offers : []);
export const inverseOffersOf = (e: ProtoEvent): InverseOfferView[] =>
  e.type === 'INVERSE_OFFERS' ? field<{ inverse_offers: InverseOfferView[] }>(e, 'inverse_offers').inverse_offers : [];
export const statusOf = (e: ProtoEvent): TaskStatusView | undefined => (e.type === 'UPDATE' ? field<{ status: TaskStatusView }>(e, 'update').status : undefined);

// ---- The client --------------------------------------------------------------------------------

/** One HTTP answer to a call, with the JSON that was sent (for failure messages). */
export interface CallResult {
  status: number;
  text: string;
  sent: Record<string, unknown>;
}

export class SubscribeFailed extends Error {
  constructor(readonly status: number, readonly text: string, readonly sent: Record<string, unknown>, readonly headers?: Headers) {
    super(`SUBSCRIBE answered ${status}: ${text}; sent ${JSON.stringify(sent)}`);
    this.name = 'SubscribeFailed';
  }
}

interface Waiter {
  pred: (e: ProtoEvent) => boolean;
  resolve: (e: ProtoEvent) => void;
  reject: (err: Error) => void;
}

export interface ProtoSubscribeOptions {
  /** How long to wait for the answer and the SUBSCRIBED event (default: the one guard, EVENT_DEADLINE_MS). */
  timeoutMs?: number;
  /** The `Authorization` header of the SUBSCRIBE and of every later call (shared/credentials.ts authorizationHeader). */
  authorization?: string;
}

/** Overrides for one call: another framework's id or stream id (a stranger's call), other credentials. */
export interface ProtoCallOptions {
  frameworkId?: string;
  streamId?: string;
  /** The `Authorization` header; null sends none (anonymous). Default: the client's. */
  authorization?: string | null;
}

export class ProtoScheduler {
  /** `http://host:port/api/v1/scheduler`. */
  readonly url: string;
  readonly streamId: string;
  readonly frameworkId: string;
  /** The SUBSCRIBED event. */
  readonly subscribed: ProtoEvent;
  /** The JSON the SUBSCRIBE call sent. */
  readonly subscribeSent: Record<string, unknown>;
  /** Every event decoded, in order (SUBSCRIBED first). */
  readonly received: ProtoEvent[] = [];
  /** Every record that failed the strict decode. */
  readonly decodeFailures: DecodeFailure[] = [];
  /** Resolves when the stream ends (either side), with the reason. */
  readonly ended: Promise<string>;
  readonly #pending: ProtoEvent[] = [];
  #waiters: Waiter[] = [];
  /** Decode failures no waiter has been told about yet. */
  #unreported: DecodeFailure[] = [];
  readonly #abort: AbortController;
  /** The Authorization header this client sends, if any. */
  readonly authorization: string | undefined;

  private constructor(url: string, streamId: string, subscribed: ProtoEvent, sent: Record<string, unknown>, abort: AbortController, ended: Promise<string>, authorization: string | undefined) {
    this.authorization = authorization;
    this.url = url;
    this.streamId = streamId;
    this.subscribed = subscribed;
    this.subscribeSent = sent;
    this.frameworkId = (subscribed.view['subscribed'] as { framework_id: IdView }).framework_id.value;
    this.#abort = abort;
    this.ended = ended;
  }

  /**
   * SUBSCRIBE to the master at `masterUrl` (`http://host:port`) as `frameworkInfo` (Mesos
   * field names); resolves once SUBSCRIBED has been decoded. The caller must close() it.
   */
  static async subscribe(masterUrl: string, frameworkInfo: Record<string, unknown>, opts: ProtoSubscribeOptions = {}): Promise<ProtoScheduler> {
    const url = `${masterUrl}/api/v1/scheduler`;
    // A framework that fails over names its id twice, as Mesos requires: in the call and in its FrameworkInfo.
    const id = frameworkInfo['id'];
    const sent = encodeCall({ type: 'SUBSCRIBE', ...(id === undefined ? {} : { framework_id: id }), subscribe: { framework_info: frameworkInfo } });
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(new Error('timed out waiting for SUBSCRIBED')), opts.timeoutMs ?? EVENT_DEADLINE_MS);
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json', ...(opts.authorization === undefined ? {} : { authorization: opts.authorization }) },
        body: JSON.stringify(sent),
        signal: abort.signal,
      });
      if (res.status !== 200 || res.body === null) throw new SubscribeFailed(res.status, await res.text(), sent, res.headers);
      const streamId = res.headers.get('mesos-stream-id');
      if (streamId === null) throw new SubscribeFailed(res.status, 'no Mesos-Stream-Id header on the SUBSCRIBE answer', sent);
      const reader = res.body.getReader();
      const records = new RecordReader();
      const early: Decoded[] = [];
      let subscribed: ProtoEvent | undefined;
      while (subscribed === undefined) {
        const chunk = await reader.read();
        if (chunk.done) throw new SubscribeFailed(200, `stream ended before SUBSCRIBED; records: ${JSON.stringify(early)}`, sent);
        for (const r of records.push(Buffer.from(chunk.value))) {
          const d = decodeEvent(r);
          if (subscribed === undefined && d.ok && d.event.type === 'SUBSCRIBED') subscribed = d.event;
          else if (subscribed === undefined && !d.ok) throw new SubscribeFailed(200, `first record fails the strict decode: ${d.failure.problems.join('; ')}; record: ${r}`, sent);
          else early.push(d);
        }
      }
      clearTimeout(timer);
      // Records read before the client exists wait in `early`; `take` hands them over after.
      let take = (d: Decoded): void => void early.push(d);
      const ended = (async (): Promise<string> => {
        for (;;) {
          let chunk: ReadableStreamReadResult<Uint8Array>;
          try {
            chunk = await reader.read();
          } catch (e) {
            return `stream failed: ${(e as Error).message}`;
          }
          if (chunk.done) return 'stream ended';
          let recs: string[];
          try {
            recs = records.push(Buffer.from(chunk.value));
          } catch (e) {
            take({ ok: false, failure: { raw: '', problems: [`RecordIO: ${(e as Error).message}`] } });
            return 'stream unusable';
          }
          for (const r of recs) take(decodeEvent(r));
        }
      })();
      const client = new ProtoScheduler(url, streamId, subscribed, sent, abort, ended, opts.authorization);
      client.received.push(subscribed);
      for (const d of early.splice(0)) client.#take(d);
      take = (d) => client.#take(d);
      void ended.then((why) => client.#endWaiters(why));
      return client;
    } catch (e) {
      clearTimeout(timer);
      abort.abort();
      throw e;
    }
  }

  #take(d: Decoded): void {
    if (d.ok) this.#deliver(d.event);
    else this.#fail(d.failure);
  }

  #deliver(e: ProtoEvent): void {
    this.received.push(e);
    const w = this.#waiters.find((x) => x.pred(e));
    if (w === undefined) {
      this.#pending.push(e);
      return;
    }
    this.#waiters = this.#waiters.filter((x) => x !== w);
    w.resolve(e);
  }

  #fail(f: DecodeFailure): void {
    this.decodeFailures.push(f);
    if (this.#waiters.length === 0) {
      this.#unreported.push(f);
      return;
    }
    const err = decodeError([f]);
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w.reject(err);
  }

  #endWaiters(why: string): void {
    const ws = this.#waiters;
    this.#waiters = [];
    for (const w of ws) w.reject(new Error(`the event stream closed (${why}) while waiting; received: ${this.#summary()}`));
  }

  #summary(): string {
    return this.received.map((e) => e.type).join(',');
  }

  /**
   * Takes the first not yet taken event that matches, waiting up to timeoutMs (undefined: the
   * one guard, EVENT_DEADLINE_MS). Rejects at once if an event failed the strict decode since
   * the last wait (each failure is reported to one wait; all stay in decodeFailures).
   */
  next(pred: (e: ProtoEvent) => boolean, timeoutMs: number | undefined, what: string): Promise<ProtoEvent> {
    const guardMs = timeoutMs ?? EVENT_DEADLINE_MS;
    if (this.#unreported.length > 0) {
      const err = decodeError(this.#unreported);
      this.#unreported = [];
      return Promise.reject(err);
    }
    const i = this.#pending.findIndex(pred);
    if (i !== -1) return Promise.resolve(this.#pending.splice(i, 1)[0] as ProtoEvent);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((x) => x !== waiter);
        reject(new Error(`timed out after ${guardMs} ms waiting for ${what}; received: ${this.#summary()}`));
      }, guardMs);
      const waiter: Waiter = {
        pred,
        resolve: (e) => {
          clearTimeout(timer);
          resolve(e);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(new Error(`while waiting for ${what}: ${err.message}`));
        },
      };
      this.#waiters.push(waiter);
    });
  }

  /**
   * Sends a call of `type` with this framework's id and stream id; `body` (Mesos field names)
   * goes under the type's own field (`accept`, `kill`, ...) when given.
   */
  async call(type: string, body?: Record<string, unknown>, opts: ProtoCallOptions = {}): Promise<CallResult> {
    const call: Record<string, unknown> = { framework_id: { value: opts.frameworkId ?? this.frameworkId }, type };
    if (body !== undefined) call[type.toLowerCase()] = body;
    const sent = encodeCall(call);
    const authorization = opts.authorization === undefined ? this.authorization : (opts.authorization ?? undefined);
    const res = await fetch(this.url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json',
        'mesos-stream-id': opts.streamId ?? this.streamId,
        ...(authorization === undefined ? {} : { authorization }),
      },
      body: JSON.stringify(sent),
      signal: AbortSignal.timeout(EVENT_DEADLINE_MS),
    });
    return { status: res.status, text: await res.text(), sent };
  }

  /** Closes the event stream (the master sees the scheduler disconnect). */
  close(): void {
    this.#abort.abort();
  }
}

function decodeError(failures: readonly DecodeFailure[]): Error {
  return new Error(
    `event(s) failed the strict Mesos 1.x decode: ${failures.map((f) => `[${f.problems.join('; ')}] in ${f.raw.slice(0, 1500)}`).join(' | ')}`,
  );
}

/**
 * The two encodings of Mesos' v1 APIs (the master's and the agent's operator API, the scheduler
 * API), as codecs at the edge over the same calls: JSON, and protobuf over Drydock's description
 * of Mesos' v1 messages (shared/protobuf.ts). A codec reads a request body into the one JSON
 * model the call decoders take (shared/proto.ts decodeCall: the same checks and messages
 * whatever the encoding), and writes an answer or an event from the value the JSON codec writes.
 * Which codec reads a request is its Content-Type's; which writes the answer, Accept's
 * (shared/http.ts). The master and the agent pick their codecs here. Pure, but for writing an
 * answer on the response it is handed.
 */

import type { ServerResponse } from 'node:http';
import { fail, type DrydockError, type ErrorCode } from './errors.js';
import { APPLICATION_JSON, APPLICATION_PROTOBUF, type Encoding } from './http.js';
import { stringifyJson } from './json.js';
import { jsonpBody } from './jsonp.js';
import { convertCall, decodeCall, type CallSpec, type DecodedCall } from './proto.js';
import { decodeProtobuf, encodeProtobuf, messageType } from './protobuf.js';
import { encodeRecord, frameRecord } from './recordio.js';

/** The messages of one v1 API, by their full names in the schema. */
export interface ApiMessages {
  /** What a request body is. */
  readonly call: string;
  /** What a call's answer is (none: the API answers no values, only events). */
  readonly response?: string;
  /** What a stream's record is (none: the API has no stream). */
  readonly event?: string;
  /** The 400 of a protobuf body that is not a Call (the master's and the agent's words differ). */
  readonly unparsable: ErrorCode;
}

/** The master's operator API (`POST /api/v1`). */
export const MASTER_API: ApiMessages = { call: 'mesos.v1.master.Call', response: 'mesos.v1.master.Response', event: 'mesos.v1.master.Event', unparsable: 'BODY_NOT_PROTOBUF_CALL' };
/** The scheduler API (`POST /api/v1/scheduler`). */
export const SCHEDULER_API: ApiMessages = { call: 'mesos.v1.scheduler.Call', event: 'mesos.v1.scheduler.Event', unparsable: 'BODY_NOT_PROTOBUF_CALL' };
/** The agent's operator API (agent `POST /api/v1`). */
export const AGENT_API: ApiMessages = { call: 'mesos.v1.agent.Call', response: 'mesos.v1.agent.Response', unparsable: 'AGENT_BODY_NOT_PROTOBUF' };

/** One encoding of one API. */
export interface Codec {
  readonly encoding: Encoding;
  /** The media type of its bodies, and of a stream's (Mesos names the event's type, not RecordIO). */
  readonly mediaType: string;
  /** A v1 call from a body: read, convert to the Call message, validate (shared/proto.ts decodeCall). */
  decodeCall<T extends string, B extends { type?: T }>(body: Buffer | string, spec: CallSpec<T>): DecodedCall<T, B>;
  /** An answer message's bytes (JSON: its text). */
  answer(value: unknown): Buffer | string;
  /**
   * One event, framed as a RecordIO record; undefined when this encoding cannot carry it (a
   * record whose `type` the API's Event does not know: protobuf has no way to say it).
   */
  record(event: unknown): Buffer | undefined;
  /** An answer's value with its status; `callback`: JSONP (JSON only). */
  write(res: ServerResponse, status: number, value: unknown, callback?: string): void;
}

/** JSON with exact int64s (shared/json.ts): bigints are written as bare digits. One codec serves every API. */
export const JSON_CODEC: Codec = {
  encoding: 'json',
  mediaType: APPLICATION_JSON,
  decodeCall: (body, spec) => decodeCall(typeof body === 'string' ? body : body.toString('utf8'), spec),
  answer: (value) => stringifyJson(value),
  record: (event) => encodeRecord(stringifyJson(event)),
  write(res, status, value, callback) {
    // JSONP as the agent writes it (shared/jsonp.ts); the callback was checked by the dispatcher. nosniff: the script is only ever a script.
    const { body, contentType } = jsonpBody(stringifyJson(value), callback);
    const sniff = callback === undefined ? {} : { 'X-Content-Type-Options': 'nosniff' };
    res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body), ...sniff });
    res.end(body);
  },
};

const PROTOBUF_CODECS = new Map<ApiMessages, Codec>();

/** The names of an Event message's `type` enum: what a protobuf stream can carry. */
function eventTypes(event: string): ReadonlySet<string> {
  const field = messageType(event).fields['type'];
  const values = (field?.resolve().resolvedType as { values?: Record<string, number> } | null)?.values;
  return new Set(Object.keys(values ?? {}));
}

/** The protobuf codec of an API. */
export function protobufCodec(api: ApiMessages): Codec {
  const known = PROTOBUF_CODECS.get(api);
  if (known !== undefined) return known;
  let types: ReadonlySet<string> | undefined;
  const codec: Codec = {
    encoding: 'protobuf',
    mediaType: APPLICATION_PROTOBUF,
    decodeCall<T extends string, B extends { type?: T }>(body: Buffer | string, spec: CallSpec<T>): DecodedCall<T, B> {
      const read = decodeProtobuf(api.call, typeof body === 'string' ? Buffer.from(body, 'utf8') : body);
      if (!read.ok) return { ok: false, error: fail(api.unparsable) };
      // From here on as a JSON body: the same description, the same checks, the same messages.
      return convertCall(read.value, spec);
    },
    answer(value) {
      if (api.response === undefined) throw new Error(`${api.call}: this API answers no values`);
      return encodeProtobuf(api.response, value);
    },
    record(event) {
      if (api.event === undefined) throw new Error(`${api.call}: this API has no events`);
      types ??= eventTypes(api.event);
      const type = (event as { type?: unknown } | null)?.type;
      if (typeof type !== 'string' || !types.has(type)) return undefined;
      return frameRecord(encodeProtobuf(api.event, event));
    },
    write(res, status, value) {
      const bytes = codec.answer(value) as Buffer;
      res.writeHead(status, { 'Content-Type': APPLICATION_PROTOBUF, 'Content-Length': bytes.length });
      res.end(bytes);
    },
  };
  PROTOBUF_CODECS.set(api, codec);
  return codec;
}

/** The codec of an encoding for an API. */
export function codecFor(encoding: Encoding, api: ApiMessages): Codec {
  return encoding === 'json' ? JSON_CODEC : protobufCodec(api);
}

/** Whether a choice (shared/http.ts requestEncoding, answerEncoding) is an error rather than an encoding. */
export function isRefusal(choice: Encoding | DrydockError): choice is DrydockError {
  return typeof choice !== 'string';
}

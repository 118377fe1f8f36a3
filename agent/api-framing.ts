/**
 * The framing of the agent's `POST /api/v1`, in the order Mesos' agent reads it
 * (`src/slave/http.cpp` `Http::api`, reference/mesos-api.md §3): Content-Type (JSON, protobuf,
 * or RecordIO for a streaming request, whose records' encoding Message-Content-Type names),
 * then Accept (JSON first, then protobuf, then RecordIO for a streaming answer, whose records'
 * encoding Message-Accept names), all on the headers before the body is read; then the body
 * (a streaming request's first record) read by its codec into the one call decoder; then the
 * checks that a streaming request or answer fits its call. Drydock has none of Mesos' streaming
 * calls (container attach and nested sessions answer 501), so those checks only refuse.
 * Pure: headers and bytes in, a decision out.
 */

import { AGENT_API, codecFor, isRefusal, type Codec } from '../shared/codec.js';
import { fail, type DrydockError } from '../shared/errors.js';
import { acceptsMediaType, APPLICATION_JSON, APPLICATION_PROTOBUF, APPLICATION_RECORDIO, mediaType, requestEncoding } from '../shared/http.js';
import type { CallSpec, DecodedCall } from '../shared/proto.js';

/** The header values the framing reads (lower-case names, as Node gives them). */
export interface FramingHeaders {
  readonly method: string;
  readonly contentType: string | undefined;
  readonly messageContentType: string | undefined;
  readonly accept: string | undefined;
  readonly messageAccept: string | undefined;
}

/** How a request is read and answered: each side a codec, and whether it streams (RecordIO of that codec's messages). */
export interface AgentFraming {
  readonly request: Codec;
  readonly streamingRequest: boolean;
  readonly answer: Codec;
  readonly streamingAnswer: boolean;
}

/** The only calls Mesos takes a streaming request for, and gives a streaming answer to. */
const STREAMING_REQUEST_CALLS: ReadonlySet<string> = new Set(['ATTACH_CONTAINER_INPUT']);
const STREAMING_ANSWER_CALLS: ReadonlySet<string> = new Set(['ATTACH_CONTAINER_OUTPUT', 'LAUNCH_NESTED_CONTAINER_SESSION']);

/** The codec of a message media type (Message-Content-Type), exactly JSON or protobuf; undefined otherwise. */
function messageCodec(value: string): Codec | undefined {
  const type = mediaType(value);
  if (type === APPLICATION_JSON) return codecFor('json', AGENT_API);
  if (type === APPLICATION_PROTOBUF) return codecFor('protobuf', AGENT_API);
  return undefined;
}

/** The headers' checks, before the body is read: the framing, or the error to answer (405, 400, 415, 406). */
export function agentFraming(h: FramingHeaders): AgentFraming | DrydockError {
  let request: Codec;
  let streamingRequest = false;
  const streaming = h.contentType !== undefined && mediaType(h.contentType) === APPLICATION_RECORDIO;
  if (streaming) {
    if (h.method !== 'POST') return fail('METHOD_NOT_ALLOWED', h.method);
    if (h.messageContentType === undefined) return fail('MESSAGE_CONTENT_TYPE_MISSING');
    const codec = messageCodec(h.messageContentType);
    if (codec === undefined) return fail('MESSAGE_CONTENT_TYPE_UNSUPPORTED');
    request = codec;
    streamingRequest = true;
  } else {
    const encoding = requestEncoding(h.method, h.contentType);
    if (isRefusal(encoding)) return encoding.code === 'CONTENT_TYPE_UNSUPPORTED' ? fail('AGENT_CONTENT_TYPE_UNSUPPORTED') : encoding;
    if (h.messageContentType !== undefined) return fail('MESSAGE_CONTENT_TYPE_UNEXPECTED');
    request = codecFor(encoding, AGENT_API);
  }
  let answer: Codec;
  let streamingAnswer = false;
  if (acceptsMediaType(h.accept, APPLICATION_JSON)) answer = codecFor('json', AGENT_API);
  else if (acceptsMediaType(h.accept, APPLICATION_PROTOBUF)) answer = codecFor('protobuf', AGENT_API);
  else if (acceptsMediaType(h.accept, APPLICATION_RECORDIO)) {
    streamingAnswer = true;
    // An absent Message-Accept allows anything: JSON records.
    if (acceptsMediaType(h.messageAccept, APPLICATION_JSON)) answer = codecFor('json', AGENT_API);
    else if (acceptsMediaType(h.messageAccept, APPLICATION_PROTOBUF)) answer = codecFor('protobuf', AGENT_API);
    else return fail('MESSAGE_NOT_ACCEPTABLE');
  } else return fail('AGENT_NOT_ACCEPTABLE');
  if (!streamingAnswer && h.messageAccept !== undefined) return fail('MESSAGE_ACCEPT_UNEXPECTED');
  return { request, streamingRequest, answer, streamingAnswer };
}

/**
 * The call in a body: a plain body whole, a streaming one's first RecordIO record (the rest
 * would be the call's input, which no Drydock call reads). Decoded by the request's codec,
 * then checked against the call's streaming: the call, or the error to answer.
 */
export function agentCall<B extends { type?: string }>(framing: AgentFraming, body: Buffer, spec: CallSpec<string>): DecodedCall<string, B> {
  let message = body;
  if (framing.streamingRequest) {
    const first = firstRecord(body);
    // No whole first record (nothing, or not RecordIO): there is no call to read.
    if (first === undefined) return { ok: false, error: fail('STREAM_BODY_EMPTY') };
    message = first;
  }
  const call = framing.request.decodeCall<string, B>(message, spec);
  if (!call.ok) return call;
  if (framing.streamingRequest && !STREAMING_REQUEST_CALLS.has(call.type)) return { ok: false, error: fail('STREAMING_REQUEST_UNSUPPORTED', call.type) };
  if (!framing.streamingRequest && STREAMING_REQUEST_CALLS.has(call.type)) return { ok: false, error: fail('STREAMING_REQUEST_EXPECTED', call.type) };
  if (framing.streamingAnswer && !STREAMING_ANSWER_CALLS.has(call.type)) return { ok: false, error: fail('STREAMING_RESPONSE_UNSUPPORTED', call.type) };
  return call;
}

/** The first record of a RecordIO body; undefined when the body ends before one is whole (Mesos: EOF). */
function firstRecord(body: Buffer): Buffer | undefined {
  const nl = body.indexOf(0x0a);
  if (nl <= 0 || nl > 20) return undefined;
  const prefix = body.subarray(0, nl).toString('ascii');
  if (!/^[0-9]+$/.test(prefix)) return undefined;
  const len = Number(prefix);
  if (body.length < nl + 1 + len) return undefined;
  return body.subarray(nl + 1, nl + 1 + len);
}

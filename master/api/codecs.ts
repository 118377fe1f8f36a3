/**
 * Encoding at the edge. A row of the table (calls.ts) decodes its input from a typed call and
 * returns a value; a codec turns bytes into that call and the value into bytes. JSON is the
 * one codec today (with `?jsonp=<callback>` on the GETs Mesos answers that way); protobuf
 * (`application/x-protobuf`, chosen by Content-Type and Accept as Mesos chooses) will be a
 * second `Codec`, not a second API.
 *
 * The framing of the v1 endpoints (operator and scheduler) is here too, in Mesos' order
 * (reference/mesos-api.md §0.3): method and Content-Type on the headers (which codec reads the
 * request), a bounded body, then the call, then Accept (which codec writes the answer).
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DrydockError } from '../../shared/errors.js';
import { fail } from '../../shared/errors.js';
import { acceptsJson, checkApiHeaders, readBodyOrAnswer, sendError } from '../../shared/http.js';
import { stringifyJson } from '../../shared/json.js';
import { JSONP_SUFFIX, jsonContentType, jsonpPrefix, readJsonpCallback, type JsonpRead } from '../../shared/jsonp.js';
import { decodeCall, type CallSpec, type DecodedCall } from '../../shared/proto.js';

/** Largest request body accepted (a maintenance schedule for thousands of machines fits). */
export const MAX_API_BODY_BYTES = 4 * 1024 * 1024;

/** One encoding of the API: how a v1 call is read from a body, and how an answer's value is written. */
export interface Codec {
  /** The media type it reads and writes. */
  readonly mediaType: string;
  /** A v1 call (operator, scheduler) from a body: parse, convert to the Call message, validate (shared/proto.ts). */
  decodeCall<T extends string, B extends { type?: T }>(body: string, spec: CallSpec<T>): DecodedCall<T, B>;
  /** An answer's value, with its status; `callback`: JSONP (JSON only). */
  write(res: ServerResponse, status: number, value: unknown, callback?: string): void;
}

/** JSON with exact int64s (shared/json.ts): bigints are written as bare digits. */
export const JSON_CODEC: Codec = {
  mediaType: 'application/json',
  decodeCall: (body, spec) => decodeCall(body, spec),
  write(res, status, value, callback) {
    const json = stringifyJson(value);
    const text = callback === undefined ? json : `${jsonpPrefix(callback)}${json}${JSONP_SUFFIX}`;
    const sniff = callback === undefined ? {} : { 'X-Content-Type-Options': 'nosniff' };
    res.writeHead(status, { 'Content-Type': jsonContentType(callback), 'Content-Length': Buffer.byteLength(text), ...sniff });
    res.end(text);
  },
};

/**
 * The codec that reads a v1 request, from its method and Content-Type (checks 4 and 5 of §0.3,
 * before the body is read); the error to answer otherwise (405, 400, 415: protobuf is refused
 * until its codec exists).
 */
export function requestCodec(method: string, contentType: string | undefined): Codec | DrydockError {
  const refused = checkApiHeaders(method, contentType);
  return refused ?? JSON_CODEC;
}

/** The codec that writes the answer, from Accept (check 8 of §0.3); the 406 otherwise. */
export function answerCodec(accept: string | undefined): Codec | DrydockError {
  return acceptsJson(accept) ? JSON_CODEC : fail('NOT_ACCEPTABLE');
}

/** Whether a choice is an error rather than a codec. */
export function refused(choice: Codec | DrydockError): choice is DrydockError {
  return !('decodeCall' in choice);
}

/**
 * The framing of a v1 endpoint before its call is parsed: the request's codec from the headers,
 * then a bounded body. Resolves with both, or undefined once the error has been answered (or
 * the client has gone).
 */
export async function readApiRequest(req: IncomingMessage, res: ServerResponse): Promise<{ codec: Codec; body: string } | undefined> {
  const codec = requestCodec(req.method ?? '', req.headers['content-type']);
  if (refused(codec)) {
    req.resume();
    sendError(res, codec);
    return undefined;
  }
  const body = await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
  return body === undefined ? undefined : { codec, body };
}

/** `?jsonp=<cb>` of a query as sent: none, the callback, or the 400 of one that is not a JavaScript name (shared/jsonp.ts). */
export function jsonpCallback(query: string): JsonpRead {
  return readJsonpCallback(query);
}

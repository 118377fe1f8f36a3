/**
 * Encoding at the edge. A row of the table (calls.ts) decodes its input from a typed call and
 * returns a value; a codec turns bytes into that call and the value into bytes. The codecs are
 * shared/codec.ts's: JSON (with `?jsonp=<callback>` on the GETs Mesos answers that way) and
 * protobuf (`application/x-protobuf`, over Drydock's description of Mesos' v1 messages),
 * chosen by Content-Type (the request) and Accept (the answer) as Mesos chooses; a v1 call is
 * the same call whichever reads it, and its answer the same value whichever writes it.
 *
 * The framing of the v1 endpoints (operator and scheduler) is here too, in Mesos' order
 * (reference/mesos-api.md §0.3): method and Content-Type on the headers (which codec reads the
 * request), a bounded body, then the call, then Accept (which codec writes the answer).
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { DrydockError } from '../../shared/errors.js';
import { codecFor, isRefusal, JSON_CODEC, MASTER_API, type ApiMessages, type Codec } from '../../shared/codec.js';
import { answerEncoding, readBodyBytesOrAnswer, requestEncoding, sendError } from '../../shared/http.js';

export { JSON_CODEC, type Codec } from '../../shared/codec.js';

/** Largest request body accepted (a maintenance schedule for thousands of machines fits). */
export const MAX_API_BODY_BYTES = 4 * 1024 * 1024;

/**
 * The codec that reads a v1 request, from its method and Content-Type (checks 4 and 5 of §0.3,
 * before the body is read); the error to answer otherwise (405, 400, 415).
 */
export function requestCodec(method: string, contentType: string | undefined, api: ApiMessages = MASTER_API): Codec | DrydockError {
  const e = requestEncoding(method, contentType);
  return isRefusal(e) ? e : codecFor(e, api);
}

/** The codec that writes the answer, from Accept (check 8 of §0.3: JSON if allowed, else protobuf); the 406 otherwise. */
export function answerCodec(accept: string | undefined, api: ApiMessages = MASTER_API): Codec | DrydockError {
  const e = answerEncoding(accept);
  return isRefusal(e) ? e : codecFor(e, api);
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
export async function readApiRequest(req: IncomingMessage, res: ServerResponse, api: ApiMessages = MASTER_API): Promise<{ codec: Codec; body: Buffer } | undefined> {
  const codec = requestCodec(req.method ?? '', req.headers['content-type'], api);
  if (refused(codec)) {
    req.resume();
    sendError(res, codec);
    return undefined;
  }
  const body = await readBodyBytesOrAnswer(req, res, MAX_API_BODY_BYTES);
  return body === undefined ? undefined : { codec, body };
}

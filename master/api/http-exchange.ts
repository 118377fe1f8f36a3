/**
 * The framing every master v1 endpoint (operator and scheduler) applies before parsing, in
 * Mesos' order (reference §0.3). The rest of the HTTP plumbing is shared/http.ts.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkApiHeaders, readBodyOrAnswer, sendError } from '../../shared/http.js';
import { MAX_API_BODY_BYTES } from './operator.js';

/**
 * Method and Content-Type, then a bounded body (whether a term serves is the router's check).
 * Resolves with the body, or undefined once the error has been answered (or the client has gone).
 */
export async function readApiBody(req: IncomingMessage, res: ServerResponse): Promise<string | undefined> {
  const headerError = checkApiHeaders(req.method ?? '', req.headers['content-type']);
  if (headerError !== undefined) {
    req.resume();
    sendError(res, headerError);
    return undefined;
  }
  return readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
}

/**
 * The scheduler API v1 over HTTP (`POST /api/v1/scheduler`): the thin shell that parses a call
 * (scheduler-calls.ts), opens the RecordIO event stream of a SUBSCRIBE, and hands every other
 * call to the term's frameworks-and-offers service.
 */

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { stringifyJson } from '../shared/json.js';
import type { FrameworkInfo } from '../shared/mesos.js';
import { parseSchedulerCall } from './scheduler-calls.js';
import { encodeRecord } from '../shared/recordio.js';
import type { TermView } from './term-view.js';
import type { FrameworkStream } from './schedulers.js';
import { sendError } from '../shared/http.js';
import { readApiBody } from './http-exchange.js';
import type { Access } from './security.js';

/** Paths of the scheduler endpoint (libprocess delegation and the DC/OS prefix, as for /api/v1). */
export const SCHEDULER_PATHS: ReadonlySet<string> = new Set(['/api/v1/scheduler', '/master/api/v1/scheduler', '/mesos/api/v1/scheduler']);

// ---- The HTTP shell ------------------------------------------------------------------------

/** Handles one request on a scheduler path. */
export async function handleSchedulerRequest(term: TermView, req: IncomingMessage, res: ServerResponse, access: Access): Promise<void> {
  const body = await readApiBody(req, res);
  if (body === undefined) return;
  const parsed = parseSchedulerCall(body);
  if (!parsed.ok) return sendError(res, parsed.error);
  const call = parsed.call;
  if (call.type === 'SUBSCRIBE') {
    const subscribed = await term.schedulers.subscribe((call.body.subscribe as { framework_info: FrameworkInfo }).framework_info, () => openStream(res));
    if (!subscribed.ok) sendError(res, subscribed.error);
    return;
  }
  const header = req.headers['mesos-stream-id'];
  const streamId = Array.isArray(header) ? header[0] : header;
  const result = await term.schedulers.call(call, streamId);
  if (!result.ok) return sendError(res, result.error);
  res.writeHead(result.status ?? 202, { 'Content-Length': 0 });
  res.end();
}

/** Starts the 200 chunked RecordIO answer of a SUBSCRIBE; each event is written (and so flushed) at once. */
function openStream(res: ServerResponse): FrameworkStream {
  const id = randomUUID();
  res.writeHead(200, { 'Content-Type': 'application/json', 'Mesos-Stream-Id': id, 'Cache-Control': 'no-cache' });
  res.flushHeaders();
  // No Nagle: a heartbeat or an update must leave now, not with the next one.
  res.socket?.setNoDelay(true);
  const closers: Array<() => void> = [];
  let closed = false;
  const onGone = (): void => {
    if (closed) return;
    closed = true;
    for (const fn of closers) fn();
  };
  res.on('close', onGone);
  return {
    id,
    send(event: unknown): void {
      if (!closed && !res.writableEnded) res.write(encodeRecord(stringifyJson(event)));
    },
    close(): void {
      if (!res.writableEnded) res.end();
      onGone();
    },
    onClose(fn: () => void): void {
      if (closed) fn();
      else closers.push(fn);
    },
  };
}


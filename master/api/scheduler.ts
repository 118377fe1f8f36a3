/**
 * The scheduler API v1 over HTTP (`POST /api/v1/scheduler`): the thin shell that parses a call
 * (cores/scheduler-calls.ts), opens the RecordIO event stream of a SUBSCRIBE, and hands every other
 * call to the term's frameworks-and-offers service with the caller the router authenticated
 * (frameworks are bound to principals, cores/frameworks.ts). It writes the audit line of every
 * SUBSCRIBE and TEARDOWN, and of every call refused 401 or 403 (the router writes the 401s it
 * answers itself).
 */

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FrameworkInfo } from '../../shared/mesos.js';
import { parseSchedulerCall } from '../cores/scheduler-calls.js';
import type { EdgePorts } from '../term/ports.js';
import type { FrameworkStream } from '../term/commands.js';
import { sendError } from '../../shared/http.js';
import { SCHEDULER_API, type Codec } from '../../shared/codec.js';
import type { CallSpec } from '../../shared/proto.js';
import { answerCodec, readApiRequest, refused } from './codecs.js';
import type { Access, AuditOutcome, MasterSecurity } from '../security/security.js';
import type { SchedulerCall } from '../cores/scheduler-calls.js';

/** Paths of the scheduler endpoint (libprocess delegation and the DC/OS prefix, as for /api/v1). */
export const SCHEDULER_PATHS: ReadonlySet<string> = new Set(['/api/v1/scheduler', '/master/api/v1/scheduler', '/mesos/api/v1/scheduler']);

// ---- The HTTP shell ------------------------------------------------------------------------

/** Handles one request on a scheduler path. */
export async function handleSchedulerRequest(term: EdgePorts, security: MasterSecurity, req: IncomingMessage, res: ServerResponse, access: Access): Promise<void> {
  const request = await readApiRequest(req, res, SCHEDULER_API);
  if (request === undefined) return;
  const parsed = parseSchedulerCall(request.body, <T extends string, B extends { type?: T }>(body: Buffer, spec: CallSpec<T>) => request.codec.decodeCall<T, B>(body, spec));
  if (!parsed.ok) return sendError(res, parsed.error);
  const call = parsed.call;
  // As Mesos: Accept is read only for the calls that answer a body (a stream, for SUBSCRIBE).
  let answer: Codec | undefined;
  if (call.type === 'SUBSCRIBE' || call.type === 'RECONCILE_OPERATIONS') {
    const chosen = answerCodec(req.headers['accept'], SCHEDULER_API);
    if (refused(chosen)) return sendError(res, chosen);
    answer = chosen;
  }
  if (call.type === 'SUBSCRIBE') {
    const info = (call.body.subscribe as { framework_info: FrameworkInfo }).framework_info;
    let opened: FrameworkStream | undefined;
    const codec = answer as Codec;
    const subscribed = await term.commands.subscribeFramework(info, () => (opened = openStream(res, codec)), access);
    // The stream stays open: the line is written now, not when the answer ends. A new framework is named by the id it got.
    const fid = opened === undefined ? undefined : term.queries.frameworkOfStream(opened.id);
    audit(security, access, call, fid ?? call.frameworkId, subscribed.ok ? 200 : subscribed.error.status);
    if (!subscribed.ok) sendError(res, subscribed.error);
    return;
  }
  const header = req.headers['mesos-stream-id'];
  const streamId = Array.isArray(header) ? header[0] : header;
  const result = await term.commands.frameworkCall(call, streamId, access);
  audit(security, access, call, call.frameworkId, result.ok ? (result.status ?? 202) : result.error.status);
  if (!result.ok) return sendError(res, result.error);
  res.writeHead(result.status ?? 202, { 'Content-Length': 0 });
  res.end();
}

/**
 * The audit line of a scheduler call: SUBSCRIBE and TEARDOWN whatever their outcome, any other
 * call only when refused (an ACCEPT a second is not an audit event; a stranger's is). It names
 * the framework, and the ACL action the call was decided on, if any.
 */
function audit(security: MasterSecurity, access: Access, call: SchedulerCall, frameworkId: string | undefined, status: number): void {
  if (call.type !== 'SUBSCRIBE' && call.type !== 'TEARDOWN' && status !== 401 && status !== 403) return;
  const framework = frameworkId === undefined ? 'new framework' : `framework ${frameworkId}`;
  const noted = access.noted;
  security.audit({
    principal: access.principal,
    action: noted === undefined ? call.type : `${call.type} ${noted.action}`,
    object: noted === undefined ? framework : noted.object,
    outcome: outcomeOf(status),
    status,
    ...(noted === undefined ? {} : { detail: framework }),
  });
}

function outcomeOf(status: number): AuditOutcome {
  if (status === 401) return 'unauthenticated';
  if (status === 403) return 'denied';
  return status < 400 ? 'allowed' : 'failed';
}

/**
 * Starts the 200 chunked RecordIO answer of a SUBSCRIBE, its records in the encoding Accept
 * chose (the Content-Type says which, as Mesos writes it). Events are framed as they are sent
 * and written once the event loop has handled what it read this turn (setImmediate): each is
 * its own HTTP chunk, as Mesos writes them and as framework libraries that read one record per
 * chunk need, and the writes of one turn leave in one syscall (Node corks the socket until the
 * next tick; res.cork() would merge them into one chunk, so it is never used). The order is
 * kept, and nothing waits for more than that turn.
 */
function openStream(res: ServerResponse, codec: Codec): FrameworkStream {
  const id = randomUUID();
  res.writeHead(200, { 'Content-Type': codec.mediaType, 'Mesos-Stream-Id': id, 'Cache-Control': 'no-cache' });
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
  let pending: Buffer[] = [];
  let flushQueued = false;
  const flush = (): void => {
    flushQueued = false;
    if (pending.length === 0) return;
    const records = pending;
    pending = [];
    if (closed || res.writableEnded) return;
    // One write, so one chunk, per event.
    for (const record of records) res.write(record);
  };
  return {
    id,
    send(event: unknown): void {
      if (closed || res.writableEnded) return;
      const record = codec.record(event);
      // An event the encoding cannot carry (none today: every scheduler event is Mesos') is not sent.
      if (record === undefined) return;
      pending.push(record);
      if (!flushQueued) {
        flushQueued = true;
        setImmediate(flush);
      }
    },
    close(): void {
      // What was sent before the close (an ERROR, a last UPDATE) still goes out.
      flush();
      if (!res.writableEnded) res.end();
      onGone();
    },
    onClose(fn: () => void): void {
      if (closed) fn();
      else closers.push(fn);
    },
  };
}


/**
 * The scheduler API v1 over HTTP (`POST /api/v1/scheduler`): framing and call validation as
 * pure functions (exact Mesos messages), and the thin shell that opens the RecordIO event
 * stream of a SUBSCRIBE and hands every other call to the master's Schedulers.
 */

import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DrydockError, fail } from '../shared/errors.js';
import { parseJson, stringifyJson } from '../shared/json.js';
import { encodeRecord } from '../shared/recordio.js';
import type { Master } from './master.js';
import type { FrameworkStream } from './schedulers.js';
import { readApiBody, sendError } from './http-exchange.js';

/** Paths of the scheduler endpoint (libprocess delegation and the DC/OS prefix, as for /api/v1). */
export const SCHEDULER_PATHS: ReadonlySet<string> = new Set(['/api/v1/scheduler', '/master/api/v1/scheduler', '/mesos/api/v1/scheduler']);

/** Every scheduler::Call type of Mesos 1.12. Unknown names are dropped by the parser (optional enum), then fail as "type not present". */
export const SCHEDULER_CALL_TYPES = [
  'UNKNOWN', 'SUBSCRIBE', 'TEARDOWN', 'ACCEPT', 'DECLINE', 'ACCEPT_INVERSE_OFFERS', 'DECLINE_INVERSE_OFFERS', 'REVIVE',
  'KILL', 'SHUTDOWN', 'ACKNOWLEDGE', 'ACKNOWLEDGE_OPERATION_STATUS', 'RECONCILE', 'RECONCILE_OPERATIONS', 'MESSAGE',
  'REQUEST', 'SUPPRESS', 'UPDATE_FRAMEWORK',
] as const;

export type SchedulerCallType = (typeof SCHEDULER_CALL_TYPES)[number];

const KNOWN = new Set<string>(SCHEDULER_CALL_TYPES);

/** Sub-messages validation requires (`Expecting '<sub>' to be present`). */
const REQUIRED_SUB: Partial<Record<SchedulerCallType, string>> = {
  SUBSCRIBE: 'subscribe',
  ACCEPT: 'accept',
  DECLINE: 'decline',
  ACCEPT_INVERSE_OFFERS: 'accept_inverse_offers',
  DECLINE_INVERSE_OFFERS: 'decline_inverse_offers',
  KILL: 'kill',
  SHUTDOWN: 'shutdown',
  ACKNOWLEDGE: 'acknowledge',
  ACKNOWLEDGE_OPERATION_STATUS: 'acknowledge_operation_status',
  RECONCILE: 'reconcile',
  MESSAGE: 'message',
  REQUEST: 'request',
  UPDATE_FRAMEWORK: 'update_framework',
};

/** A parsed, validated scheduler call. */
export interface SchedulerCall {
  type: SchedulerCallType;
  /** Top-level framework_id (required for everything but SUBSCRIBE). */
  frameworkId: string | undefined;
  body: Record<string, unknown>;
}

export type ParsedSchedulerCall = { ok: true; call: SchedulerCall } | { ok: false; error: DrydockError };

const invalid = (detail: string): ParsedSchedulerCall => ({ ok: false, error: fail('SCHEDULER_CALL_INVALID', detail) });

function idOf(v: unknown): string | undefined {
  const value = (v as { value?: unknown } | null | undefined)?.value;
  return typeof value === 'string' ? value : undefined;
}

/** Is `text` the base64 of a 16-byte UUID (TaskStatus.uuid as JSON writes bytes)? */
export function isBase64Uuid(text: unknown): boolean {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return false;
  return Buffer.from(text, 'base64').length === 16;
}

/** Parses and validates a scheduler call body (Mesos `validation::scheduler::call::validate`). */
export function parseSchedulerCall(text: string): ParsedSchedulerCall {
  let json: unknown;
  try {
    json = parseJson(text);
  } catch (e) {
    return { ok: false, error: fail('BODY_NOT_JSON', (e as Error).message) };
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return { ok: false, error: fail('BODY_NOT_CALL', 'Expecting a JSON object') };
  const body = json as Record<string, unknown>;
  const type = body['type'];
  if (typeof type !== 'string' || !KNOWN.has(type)) return invalid("Expecting 'type' to be present");
  const callType = type as SchedulerCallType;
  const sub = REQUIRED_SUB[callType];
  if (sub !== undefined) {
    const v = body[sub];
    if (v === undefined || v === null) return invalid(`Expecting '${sub}' to be present`);
    if (typeof v !== 'object' || Array.isArray(v)) return { ok: false, error: fail('BODY_NOT_CALL', `Not expecting a JSON ${Array.isArray(v) ? 'array' : typeof v} for field '${sub}'`) };
  }
  const frameworkId = idOf(body['framework_id']);
  if (callType === 'SUBSCRIBE') {
    const info = (body['subscribe'] as Record<string, unknown>)['framework_info'];
    if (typeof info !== 'object' || info === null || Array.isArray(info)) return invalid("Expecting 'framework_info' to be present");
    const fi = info as Record<string, unknown>;
    if (typeof fi['user'] !== 'string' || typeof fi['name'] !== 'string') return invalid("Expecting 'framework_info.user' and 'framework_info.name' to be present");
    const infoId = idOf(fi['id']);
    if (frameworkId !== infoId && (frameworkId !== undefined || infoId !== undefined)) {
      return invalid("'framework_id' differs from 'subscribe.framework_info.id'");
    }
  } else {
    if (frameworkId === undefined) return invalid("Expecting 'framework_id' to be present");
    if (callType === 'ACKNOWLEDGE') {
      const ack = body['acknowledge'] as Record<string, unknown>;
      if (idOf(ack['agent_id']) === undefined || idOf(ack['task_id']) === undefined) return invalid("Expecting 'acknowledge.agent_id' and 'acknowledge.task_id' to be present");
      if (!isBase64Uuid(ack['uuid'])) return invalid("'acknowledge.uuid' is not a valid base64-encoded UUID");
    }
    if (callType === 'KILL' && idOf((body['kill'] as Record<string, unknown>)['task_id']) === undefined) return invalid("Expecting 'kill.task_id' to be present");
  }
  if (callType === 'UNKNOWN') return { ok: false, error: fail('SCHEDULER_CALL_UNSUPPORTED', callType) };
  return { ok: true, call: { type: callType, frameworkId, body } };
}

// ---- The HTTP shell ------------------------------------------------------------------------

/** Handles one request on a scheduler path. */
export async function handleSchedulerRequest(master: Master, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = await readApiBody(master, req, res);
  if (body === undefined) return;
  const parsed = parseSchedulerCall(body);
  if (!parsed.ok) return sendError(res, parsed.error);
  const call = parsed.call;
  if (call.type === 'SUBSCRIBE') {
    const info = (call.body['subscribe'] as Record<string, unknown>)['framework_info'] as Record<string, unknown>;
    await master.schedulers.subscribe(info, () => openStream(res));
    return;
  }
  const header = req.headers['mesos-stream-id'];
  const streamId = Array.isArray(header) ? header[0] : header;
  const result = master.schedulers.call(call, streamId);
  if (!result.ok) return sendError(res, result.error);
  res.writeHead(202, { 'Content-Length': 0 });
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


/**
 * The operator API v1's call (`POST /api/v1`): every master::Call type Mesos 1.12 knows, the
 * sub-message validation requires of each, and the reading of a call in the exact order of
 * Mesos' `Master::Http::api` (reference/mesos-api.md §0.3). Which of these Drydock answers, and
 * how, is the table's (calls.ts); the others answer 501.
 */

import { type DrydockError, fail } from '../../shared/errors.js';
import { callMessage, type CallSpec } from '../../shared/proto.js';
import { answerCodec, JSON_CODEC, refused, type Codec } from './codecs.js';

/** Every master::Call type Mesos 1.12 knows. Names outside this list are dropped by the parser, like Mesos' optional enum. */
export const CALL_TYPES = [
  'UNKNOWN', 'GET_HEALTH', 'GET_FLAGS', 'GET_VERSION', 'GET_METRICS', 'GET_LOGGING_LEVEL', 'SET_LOGGING_LEVEL',
  'LIST_FILES', 'READ_FILE', 'GET_STATE', 'GET_AGENTS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_OPERATIONS',
  'GET_TASKS', 'GET_ROLES', 'GET_WEIGHTS', 'UPDATE_WEIGHTS', 'GET_MASTER', 'SUBSCRIBE', 'RESERVE_RESOURCES',
  'UNRESERVE_RESOURCES', 'CREATE_VOLUMES', 'DESTROY_VOLUMES', 'GROW_VOLUME', 'SHRINK_VOLUME',
  'GET_MAINTENANCE_STATUS', 'GET_MAINTENANCE_SCHEDULE', 'UPDATE_MAINTENANCE_SCHEDULE', 'START_MAINTENANCE',
  'STOP_MAINTENANCE', 'DRAIN_AGENT', 'DEACTIVATE_AGENT', 'REACTIVATE_AGENT', 'GET_QUOTA', 'UPDATE_QUOTA',
  'SET_QUOTA', 'REMOVE_QUOTA', 'TEARDOWN', 'MARK_AGENT_GONE',
] as const;

export type CallType = (typeof CALL_TYPES)[number];

/** Calls whose sub-message validation requires (`Expecting '<sub>' to be present`). */
const REQUIRED_SUB: Record<string, string> & Partial<Record<CallType, string>> = {
  GET_METRICS: 'get_metrics',
  SET_LOGGING_LEVEL: 'set_logging_level',
  LIST_FILES: 'list_files',
  READ_FILE: 'read_file',
  UPDATE_WEIGHTS: 'update_weights',
  RESERVE_RESOURCES: 'reserve_resources',
  UNRESERVE_RESOURCES: 'unreserve_resources',
  CREATE_VOLUMES: 'create_volumes',
  DESTROY_VOLUMES: 'destroy_volumes',
  GROW_VOLUME: 'grow_volume',
  SHRINK_VOLUME: 'shrink_volume',
  UPDATE_MAINTENANCE_SCHEDULE: 'update_maintenance_schedule',
  START_MAINTENANCE: 'start_maintenance',
  STOP_MAINTENANCE: 'stop_maintenance',
  DRAIN_AGENT: 'drain_agent',
  DEACTIVATE_AGENT: 'deactivate_agent',
  REACTIVATE_AGENT: 'reactivate_agent',
  UPDATE_QUOTA: 'update_quota',
  SET_QUOTA: 'set_quota',
  REMOVE_QUOTA: 'remove_quota',
  TEARDOWN: 'teardown',
  MARK_AGENT_GONE: 'mark_agent_gone',
};

/** A parsed, validated call: its type and the whole JSON object (sub-messages are read by each call). */
export interface OperatorCall {
  type: CallType;
  body: Record<string, unknown>;
}

/** master::Call, with every sub-message validation may require. */
const OPERATOR_CALL: CallSpec<CallType> = {
  message: callMessage('master.Call', CALL_TYPES, Object.values(REQUIRED_SUB)),
  requiredSub: REQUIRED_SUB,
  invalid: 'CALL_INVALID',
};

/** A call read: the call, and the codec its answer is written with (Accept). */
export type ReadCall = { ok: true; call: OperatorCall; answer: Codec } | { ok: false; error: DrydockError };

/**
 * Checks 6 to 9 of §0.3 on the body: parse, convert, validate (the request's codec, shared/proto.ts
 * decodeCall), Accept (the answer's codec), UNKNOWN.
 */
export function readApiCall(codec: Codec, body: Buffer | string, accept: string | undefined): ReadCall {
  const decoded = codec.decodeCall<CallType, { type?: CallType } & Record<string, unknown>>(body, OPERATOR_CALL);
  if (!decoded.ok) return decoded;
  const answer = answerCodec(accept);
  if (refused(answer)) return { ok: false, error: answer };
  if (decoded.type === 'UNKNOWN') return { ok: false, error: fail('NOT_IMPLEMENTED', decoded.type) };
  return { ok: true, call: { type: decoded.type, body: decoded.body }, answer };
}

/** A JSON body read as a call (readApiCall with the JSON codec). */
export function parseApiCall(text: string, accept: string | undefined): { ok: true; call: OperatorCall } | { ok: false; error: DrydockError } {
  const read = readApiCall(JSON_CODEC, text, accept);
  return read.ok ? { ok: true, call: read.call } : read;
}

/**
 * Scheduler API v1 calls (`POST /api/v1/scheduler`), decoded and validated: a pure function of
 * the body, with Mesos' exact messages, and the typed call the frameworks service carries out.
 */

import { type DrydockError, fail } from '../../shared/errors.js';
import type { FrameworkInfo, IdValue, KillPolicy, TaskInfo } from '../../shared/mesos.js';
import { decodeCall, SCHEDULER_CALL, SCHEDULER_CALL_TYPES, type CallSpec, type DecodedCall } from '../../shared/proto.js';

export { SCHEDULER_CALL_TYPES };
export type SchedulerCallType = (typeof SCHEDULER_CALL_TYPES)[number];

/** Sub-messages validation requires (`Expecting '<sub>' to be present`). */
const REQUIRED_SUB: Partial<Record<SchedulerCallType, keyof SchedulerCallBody & string>> = {
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

/** Filters of ACCEPT, DECLINE and the inverse-offer answers. */
export interface Filters {
  refuse_seconds?: number;
}

/** The answer to an inverse offer (ACCEPT_INVERSE_OFFERS / DECLINE_INVERSE_OFFERS). */
export interface InverseOfferAnswer {
  inverse_offer_ids?: IdValue[];
  filters?: Filters;
}

/**
 * A scheduler::Call as shared/proto.ts decodes it: only the fields Drydock knows, each of its
 * proto type, no nulls; empty repeated fields are absent.
 */
export interface SchedulerCallBody {
  framework_id?: IdValue;
  type?: SchedulerCallType;
  subscribe?: { framework_info: FrameworkInfo; suppressed_roles?: string[] };
  accept?: { offer_ids?: IdValue[]; operations?: Array<{ type?: string; launch?: { task_infos?: TaskInfo[] }; launch_group?: unknown }>; filters?: Filters };
  decline?: { offer_ids?: IdValue[]; filters?: Filters };
  accept_inverse_offers?: InverseOfferAnswer;
  decline_inverse_offers?: InverseOfferAnswer;
  revive?: { roles?: string[] };
  suppress?: { roles?: string[] };
  kill?: { task_id: IdValue; agent_id?: IdValue; kill_policy?: KillPolicy };
  shutdown?: { executor_id: IdValue; agent_id: IdValue };
  acknowledge?: { agent_id: IdValue; task_id: IdValue; uuid: string };
  acknowledge_operation_status?: unknown;
  reconcile?: { tasks?: Array<{ task_id: IdValue; agent_id?: IdValue }> };
  reconcile_operations?: unknown;
  message?: { agent_id: IdValue; executor_id: IdValue; data: string };
  request?: { requests?: unknown[] };
  update_framework?: { framework_info: FrameworkInfo; suppressed_roles?: string[] };
}

/** A parsed, validated scheduler call. */
export interface SchedulerCall {
  type: SchedulerCallType;
  /** Top-level framework_id (required for everything but SUBSCRIBE). */
  frameworkId: string | undefined;
  body: SchedulerCallBody;
}

export type ParsedSchedulerCall = { ok: true; call: SchedulerCall } | { ok: false; error: DrydockError };

const invalid = (detail: string): ParsedSchedulerCall => ({ ok: false, error: fail('SCHEDULER_CALL_INVALID', detail) });

/** Is `text` the base64 of a 16-byte UUID (TaskStatus.uuid as JSON writes bytes)? */
export function isBase64Uuid(text: unknown): boolean {
  if (typeof text !== 'string' || !/^[A-Za-z0-9+/]+={0,2}$/.test(text)) return false;
  return Buffer.from(text, 'base64').length === 16;
}

/** How a body becomes a call message: the edge's codec (JSON: shared/proto.ts decodeCall; or protobuf, shared/codec.ts). */
export type CallDecoder<Body = string> = <T extends string, B extends { type?: T }>(body: Body, spec: CallSpec<T>) => DecodedCall<T, B>;

/**
 * Parses and validates a scheduler call body in Mesos' order: the encoding (JSON by default:
 * bounded, null is unset), conversion to scheduler::Call (shared/proto.ts), then
 * `validation::scheduler::call::validate`.
 */
export function parseSchedulerCall<In = string>(input: In, decode: CallDecoder<In> = decodeCall as unknown as CallDecoder<In>): ParsedSchedulerCall {
  const decoded = decode<SchedulerCallType, SchedulerCallBody>(input, { message: SCHEDULER_CALL, requiredSub: REQUIRED_SUB, invalid: 'SCHEDULER_CALL_INVALID' });
  if (!decoded.ok) return decoded;
  const body = decoded.body;
  const callType = decoded.type;
  const frameworkId = body.framework_id?.value;
  if (callType === 'SUBSCRIBE') {
    const infoId = body.subscribe?.framework_info.id?.value;
    if (frameworkId !== infoId) return invalid("'framework_id' differs from 'subscribe.framework_info.id'");
  } else {
    if (frameworkId === undefined) return invalid("Expecting 'framework_id' to be present");
    if (callType === 'ACKNOWLEDGE' && !isBase64Uuid(body.acknowledge?.uuid)) return invalid("'acknowledge.uuid' is not a valid base64-encoded UUID");
  }
  if (callType === 'UNKNOWN') return { ok: false, error: fail('SCHEDULER_CALL_UNSUPPORTED', callType) };
  return { ok: true, call: { type: callType, frameworkId, body } };
}

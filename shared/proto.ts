/**
 * Mesos v1 messages read from JSON the way Mesos reads them (stout's protobuf parser,
 * reference/mesos-api.md §0.1), so that a client generated from Mesos' .proto files works
 * unmodified: keys are the proto's snake_case names and anything else is ignored (camelCase
 * included); null is unset (parseWireJson already dropped it); integers may come as numeric
 * strings and bools as "true"/"false"; an unknown name in an optional enum leaves it unset.
 *
 * A message description lists the fields Drydock knows with their proto types. Decoding keeps
 * exactly those fields, checked and normalised, so what is stored and echoed is never the
 * client's raw object. A repeated field is an array exactly when the client sent one. Sub-messages Drydock carries but never reads (a TaskInfo's container,
 * discovery) are `json`: kept as sent, already bounded by parseWireJson.
 * Pure: descriptions are plain data, decoding is a function of its input.
 */

import { fail, type DrydockError } from './errors.js';
import { parseWireJson } from './json.js';
import { TASK_STATES } from './mesos.js';

/**
 * A proto scalar type, an enum, a message, `json` (any value, passed through) or `object` (a
 * message Drydock reads later, field by field: it must be a JSON object, kept as sent).
 */
export type FieldType = 'string' | 'bytes' | 'bool' | 'double' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'int64-exact' | 'json' | 'object' | EnumType | MessageType;

/**
 * The integer field types. `int64` and `uint64` are read into JavaScript numbers, so only
 * within ±(2^53-1) (104 days in nanoseconds); `int64-exact` is an int64 read to the digit into a
 * bigint, over the whole int64 range: for the values Drydock keeps exactly (a drain's
 * max_grace_period, which DRAIN_AGENT accepts up to int64's ~292 years).
 */
export const INTEGER_TYPES: ReadonlySet<FieldType> = new Set<FieldType>(['int32', 'uint32', 'int64', 'uint64', 'int64-exact']);

export interface EnumType {
  readonly kind: 'enum';
  readonly values: ReadonlySet<string>;
}

export interface MessageType {
  readonly kind: 'message';
  readonly name: string;
  /** A thunk, so that descriptions may refer to each other in any order. */
  readonly fields: () => Readonly<Record<string, Field>>;
}

export interface Field {
  readonly type: FieldType;
  readonly label: 'optional' | 'required' | 'repeated';
}

export const optional = (type: FieldType): Field => ({ type, label: 'optional' });
export const required = (type: FieldType): Field => ({ type, label: 'required' });
export const repeated = (type: FieldType): Field => ({ type, label: 'repeated' });
export const enumOf = (values: readonly string[]): EnumType => ({ kind: 'enum', values: new Set(values) });
export const message = (name: string, fields: () => Readonly<Record<string, Field>>): MessageType => ({ kind: 'message', name, fields });

export type Decoded<T> = { ok: true; value: T } | { ok: false; error: string };

/** What stout says when a required field is missing, or a value does not convert. */
class ConversionError extends Error {}

/**
 * Decodes `value` as message `type`. `path` prefixes field paths in messages
 * (`update_framework.framework_info.user`). The error is stout's wording where Mesos has one
 * (`Not expecting a JSON string for field 'x'`, `Missing required fields: a.b, c`), and
 * Drydock's, naming the field, for what Mesos does not check (int64 range, non-integers).
 */
export function decodeMessage<T>(type: MessageType, value: unknown, path = ''): Decoded<T> {
  const missing: string[] = [];
  try {
    if (!isObject(value)) throw new ConversionError(path === '' ? 'Expecting a JSON object' : `Not expecting a JSON ${kindOf(value)} for field '${lastName(path)}'`);
    const out = readMessage(type, value, path, missing);
    if (missing.length > 0) return { ok: false, error: `Missing required fields: ${missing.join(', ')}` };
    return { ok: true, value: out as T };
  } catch (e) {
    if (e instanceof ConversionError) return { ok: false, error: e.message };
    throw e;
  }
}

/**
 * A description's fields, listed once per description: the thunk builds a new record (and new
 * nested descriptions) at every call, which made decoding every status update and scheduler
 * call allocate its whole schema again. Descriptions are constants, so the list never changes.
 */
const FIELD_LISTS = new WeakMap<MessageType, ReadonlyArray<readonly [string, Field]>>();

function fieldList(type: MessageType): ReadonlyArray<readonly [string, Field]> {
  let list = FIELD_LISTS.get(type);
  if (list === undefined) FIELD_LISTS.set(type, (list = Object.entries(type.fields())));
  return list;
}

function readMessage(type: MessageType, o: Record<string, unknown>, path: string, missing: string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, field] of fieldList(type)) {
    const v = o[name];
    if (v === undefined || v === null) {
      if (field.label === 'required') missing.push(path === '' ? name : `${path}.${name}`);
      continue;
    }
    const at = path === '' ? name : `${path}.${name}`;
    if (field.label === 'repeated') {
      if (!Array.isArray(v)) throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
      const items: unknown[] = [];
      for (let i = 0; i < v.length; i++) {
        const item = readValue(field.type, v[i], name, `${at}[${i}]`, missing);
        if (item !== undefined) items.push(item);
      }
      out[name] = items;
      continue;
    }
    const read = readValue(field.type, v, name, at, missing);
    if (read !== undefined) out[name] = read;
    // An unknown name in a required enum cannot be dropped (stout: "Failed to find enum").
    else if (field.label === 'required') throw new ConversionError(`Failed to find enum for '${preview(v)}'`);
  }
  return out;
}

/** One value of a field; undefined when it is an unknown enum name (left unset). */
function readValue(type: FieldType, v: unknown, name: string, at: string, missing: string[]): unknown {
  if (v === undefined || v === null) return undefined;
  if (typeof type === 'object') {
    if (type.kind === 'enum') {
      if (typeof v !== 'string') throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
      return type.values.has(v) ? v : undefined;
    }
    if (!isObject(v)) throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
    return readMessage(type, v, at, missing);
  }
  switch (type) {
    case 'json':
      return v;
    case 'object':
      if (!isObject(v)) throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
      return v;
    case 'string':
    case 'bytes':
      if (typeof v !== 'string') throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
      if (type === 'bytes' && !BASE64.test(v)) throw new ConversionError(`Field '${at}' is not valid base64`);
      return v;
    case 'bool':
      if (typeof v === 'boolean') return v;
      if (v === 'true' || v === 'false') return v === 'true';
      throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
    case 'double': {
      const n = typeof v === 'string' && v.trim() !== '' ? Number(v) : typeof v === 'bigint' ? Number(v) : v;
      if (typeof n !== 'number') throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
      if (!Number.isFinite(n)) throw new ConversionError(`Field '${at}' is not a finite number`);
      return n;
    }
    case 'int64-exact':
      return readExactInteger('int64', v, name, at);
    default:
      return readInteger(type, v, name, at);
  }
}

const RANGES = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
} as const;

const SAFE = BigInt(Number.MAX_SAFE_INTEGER);

/**
 * An integer field, from a JSON number (a bigint beyond 2^53, from parseWireJson) or a numeric
 * string. Outside the proto type's range is refused, naming the field. Drydock computes with
 * these as JavaScript numbers (grace periods, ports), so int64 values beyond 2^53 (104 days in
 * nanoseconds) are refused too; int64s that need every digit are `int64-exact` fields (a drain's
 * config) or read by their own parser (schedules, master/maintenance.ts). The master and the
 * agent read the same fields with this one reader, so the agent takes whatever the master took.
 */
function readInteger(type: keyof typeof RANGES, v: unknown, name: string, at: string): number {
  const n = readExactInteger(type, v, name, at);
  if (n > SAFE || n < -SAFE) throw new ConversionError(`Field '${at}' is beyond 2^53, more than Drydock handles for ${type}`);
  return Number(n);
}

/**
 * An integer field read to the digit: a JSON number (an integer beyond 2^53 arrives as a bigint
 * from parseWireJson, exact; a double beyond 2^53 that is not one is refused, its digits are
 * already lost) or a numeric string, within the proto type's range.
 */
function readExactInteger(type: keyof typeof RANGES, v: unknown, name: string, at: string): bigint {
  let n: bigint;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new ConversionError(`Field '${at}' must be an integer, got ${preview(v)}`);
    if (!Number.isSafeInteger(v)) throw new ConversionError(`Field '${at}' is out of range for ${type}`);
    n = BigInt(v);
  } else if (typeof v === 'string' && /^\s*-?[0-9]{1,25}\s*$/.test(v)) n = BigInt(v.trim());
  else if (typeof v === 'string') throw new ConversionError(`Failed to convert '${preview(v)}' to number for field '${name}'`);
  else throw new ConversionError(`Not expecting a JSON ${kindOf(v)} for field '${name}'`);
  const [min, max] = RANGES[type];
  if (n < min || n > max) throw new ConversionError(`Field '${at}' is out of range for ${type}`);
  return n;
}

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The JSON kind of a value, as stout names it in its messages. */
export function kindOf(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

/** A short, bounded rendering of a value for an error message: never the whole input. */
export function preview(v: unknown): string {
  if (typeof v === 'string') return v.length > 40 ? `${v.slice(0, 40)}...` : v;
  if (typeof v === 'number' || typeof v === 'bigint' || typeof v === 'boolean') {
    const s = String(v);
    return s.length > 40 ? `${s.slice(0, 40)}...` : s;
  }
  return `a JSON ${kindOf(v)}`;
}

function lastName(path: string): string {
  return path.slice(path.lastIndexOf('.') + 1).replace(/\[[0-9]+\]$/, '');
}

// ---- Mesos v1 messages Drydock reads (include/mesos/v1/mesos.proto) --------------------------

const ID = (name: string): MessageType => message(name, () => ({ value: required('string') }));
export const FRAMEWORK_ID = ID('FrameworkID');
export const AGENT_ID = ID('AgentID');
export const TASK_ID = ID('TaskID');
export const OFFER_ID = ID('OfferID');
export const EXECUTOR_ID = ID('ExecutorID');

export const DURATION_INFO = message('DurationInfo', () => ({ nanoseconds: required('int64') }));

/** DurationInfo read to the digit (a bigint over the whole int64 range): where Drydock keeps a duration exactly. */
export const EXACT_DURATION_INFO = message('DurationInfo', () => ({ nanoseconds: required('int64-exact') }));

/**
 * Mesos DrainConfig (mesos.proto), as the master sends it to the agent and the agent
 * checkpoints it. `max_grace_period` is exact: DRAIN_AGENT takes any int64 of nanoseconds, and
 * whatever the master accepts the agent wire carries to the digit. Drydock always writes
 * `mark_gone`.
 */
export const DRAIN_CONFIG = message('DrainConfig', () => ({ max_grace_period: optional(EXACT_DURATION_INFO), mark_gone: required('bool') }));

const LABELS = message('Labels', () => ({
  labels: repeated(message('Label', () => ({ key: required('string'), value: optional('string') }))),
}));

export const RESOURCE = message('Resource', () => ({
  provider_id: optional('json'),
  name: required('string'),
  type: required(enumOf(['SCALAR', 'RANGES', 'SET', 'TEXT'])),
  scalar: optional(message('Value.Scalar', () => ({ value: required('double') }))),
  ranges: optional(
    message('Value.Ranges', () => ({
      range: repeated(message('Value.Range', () => ({ begin: required('uint64'), end: required('uint64') }))),
    })),
  ),
  set: optional(message('Value.Set', () => ({ item: repeated('string') }))),
  role: optional('string'),
  allocation_info: optional('json'),
  reservation: optional('json'),
  reservations: repeated('json'),
  disk: optional('json'),
  revocable: optional('json'),
  shared: optional('json'),
}));

export const KILL_POLICY = message('KillPolicy', () => ({ grace_period: optional(DURATION_INFO) }));

const COMMAND_INFO = message('CommandInfo', () => ({
  uris: repeated('json'),
  environment: optional(
    message('Environment', () => ({
      variables: repeated(
        message('Environment.Variable', () => ({
          name: required('string'),
          type: optional(enumOf(['UNKNOWN', 'VALUE', 'SECRET'])),
          value: optional('string'),
          secret: optional('json'),
        })),
      ),
    })),
  ),
  shell: optional('bool'),
  value: optional('string'),
  arguments: repeated('string'),
  user: optional('string'),
}));

const CHECK_TYPES = ['UNKNOWN', 'COMMAND', 'HTTP', 'TCP'] as const;
const NETWORK_PROTOCOL = enumOf(['IPv4', 'IPv6']);

/**
 * CheckInfo (Mesos 1.4+ generalized check). The master decodes a TaskInfo's check with it (a
 * wrong JSON type is a 400, as in Mesos) and passes it on; the agent decodes it again and
 * validates what it means (agent/checks.ts: a negative interval, a missing command value are a
 * TASK_ERROR).
 */
export const CHECK_INFO = message('CheckInfo', () => ({
  type: optional(enumOf(CHECK_TYPES)),
  command: optional(message('CheckInfo.Command', () => ({ command: required(COMMAND_INFO) }))),
  http: optional(message('CheckInfo.Http', () => ({ port: required('uint32'), path: optional('string') }))),
  tcp: optional(message('CheckInfo.Tcp', () => ({ port: required('uint32') }))),
  delay_seconds: optional('double'),
  interval_seconds: optional('double'),
  timeout_seconds: optional('double'),
}));

/** HealthCheck, decoded like CHECK_INFO. */
export const HEALTH_CHECK = message('HealthCheck', () => ({
  type: optional(enumOf(CHECK_TYPES)),
  command: optional(COMMAND_INFO),
  http: optional(
    message('HealthCheck.HTTPCheckInfo', () => ({
      protocol: optional(NETWORK_PROTOCOL),
      scheme: optional('string'),
      port: required('uint32'),
      path: optional('string'),
      statuses: repeated('uint32'),
    })),
  ),
  tcp: optional(message('HealthCheck.TCPCheckInfo', () => ({ protocol: optional(NETWORK_PROTOCOL), port: required('uint32') }))),
  delay_seconds: optional('double'),
  interval_seconds: optional('double'),
  timeout_seconds: optional('double'),
  consecutive_failures: optional('uint32'),
  grace_period_seconds: optional('double'),
}));

/** CheckStatusInfo, in a TaskStatus: typed, so what the master stores and forwards is checked. */
export const CHECK_STATUS_INFO = message('CheckStatusInfo', () => ({
  type: optional(enumOf(CHECK_TYPES)),
  command: optional(message('CheckStatusInfo.Command', () => ({ exit_code: optional('int32') }))),
  http: optional(message('CheckStatusInfo.Http', () => ({ status_code: optional('uint32') }))),
  tcp: optional(message('CheckStatusInfo.Tcp', () => ({ succeeded: optional('bool') }))),
}));

export const TASK_INFO = message('TaskInfo', () => ({
  name: required('string'),
  task_id: required(TASK_ID),
  agent_id: required(AGENT_ID),
  resources: repeated(RESOURCE),
  executor: optional('json'),
  command: optional(COMMAND_INFO),
  container: optional('json'),
  health_check: optional(HEALTH_CHECK),
  check: optional(CHECK_INFO),
  kill_policy: optional(KILL_POLICY),
  data: optional('bytes'),
  labels: optional(LABELS),
  discovery: optional('json'),
  max_completion_time: optional(DURATION_INFO),
  limits: optional('json'),
}));

/** FrameworkInfo.Capability.Type of Mesos 1.x. */
export const FRAMEWORK_CAPABILITIES = [
  'UNKNOWN', 'REVOCABLE_RESOURCES', 'TASK_KILLING_STATE', 'GPU_RESOURCES', 'SHARED_RESOURCES',
  'PARTITION_AWARE', 'MULTI_ROLE', 'RESERVATION_REFINEMENT', 'REGION_AWARE',
] as const;

export const FRAMEWORK_INFO = message('FrameworkInfo', () => ({
  user: required('string'),
  name: required('string'),
  id: optional(FRAMEWORK_ID),
  failover_timeout: optional('double'),
  checkpoint: optional('bool'),
  role: optional('string'),
  roles: repeated('string'),
  hostname: optional('string'),
  principal: optional('string'),
  webui_url: optional('string'),
  capabilities: repeated(message('FrameworkInfo.Capability', () => ({ type: optional(enumOf(FRAMEWORK_CAPABILITIES)) }))),
  labels: optional(LABELS),
  offer_filters: optional('json'),
}));

const FILTERS = message('Filters', () => ({ refuse_seconds: optional('double') }));

const OFFER_OPERATION = message('Offer.Operation', () => ({
  type: optional(enumOf(['UNKNOWN', 'LAUNCH', 'LAUNCH_GROUP', 'RESERVE', 'UNRESERVE', 'CREATE', 'DESTROY', 'GROW_VOLUME', 'SHRINK_VOLUME', 'CREATE_DISK', 'DESTROY_DISK'])),
  id: optional('json'),
  launch: optional(message('Offer.Operation.Launch', () => ({ task_infos: repeated(TASK_INFO) }))),
  launch_group: optional('json'),
  reserve: optional('json'),
  unreserve: optional('json'),
  create: optional('json'),
  destroy: optional('json'),
  grow_volume: optional('json'),
  shrink_volume: optional('json'),
  create_disk: optional('json'),
  destroy_disk: optional('json'),
}));

// ---- scheduler::Call (include/mesos/v1/scheduler/scheduler.proto) ----------------------------

/** Every scheduler::Call type of Mesos 1.12. */
export const SCHEDULER_CALL_TYPES = [
  'UNKNOWN', 'SUBSCRIBE', 'TEARDOWN', 'ACCEPT', 'DECLINE', 'ACCEPT_INVERSE_OFFERS', 'DECLINE_INVERSE_OFFERS', 'REVIVE',
  'KILL', 'SHUTDOWN', 'ACKNOWLEDGE', 'ACKNOWLEDGE_OPERATION_STATUS', 'RECONCILE', 'RECONCILE_OPERATIONS', 'MESSAGE',
  'REQUEST', 'SUPPRESS', 'UPDATE_FRAMEWORK',
] as const;

const INVERSE_ANSWER = (name: string): MessageType => message(name, () => ({ inverse_offer_ids: repeated(OFFER_ID), filters: optional(FILTERS) }));

export const SCHEDULER_CALL = message('scheduler.Call', () => ({
  framework_id: optional(FRAMEWORK_ID),
  type: optional(enumOf(SCHEDULER_CALL_TYPES)),
  subscribe: optional(
    message('Call.Subscribe', () => ({ framework_info: required(FRAMEWORK_INFO), suppressed_roles: repeated('string'), offer_constraints: optional('json') })),
  ),
  accept: optional(message('Call.Accept', () => ({ offer_ids: repeated(OFFER_ID), operations: repeated(OFFER_OPERATION), filters: optional(FILTERS) }))),
  decline: optional(message('Call.Decline', () => ({ offer_ids: repeated(OFFER_ID), filters: optional(FILTERS) }))),
  accept_inverse_offers: optional(INVERSE_ANSWER('Call.AcceptInverseOffers')),
  decline_inverse_offers: optional(INVERSE_ANSWER('Call.DeclineInverseOffers')),
  revive: optional(message('Call.Revive', () => ({ roles: repeated('string') }))),
  suppress: optional(message('Call.Suppress', () => ({ roles: repeated('string') }))),
  kill: optional(message('Call.Kill', () => ({ task_id: required(TASK_ID), agent_id: optional(AGENT_ID), kill_policy: optional(KILL_POLICY) }))),
  shutdown: optional(message('Call.Shutdown', () => ({ executor_id: required(EXECUTOR_ID), agent_id: required(AGENT_ID) }))),
  acknowledge: optional(message('Call.Acknowledge', () => ({ agent_id: required(AGENT_ID), task_id: required(TASK_ID), uuid: required('bytes') }))),
  acknowledge_operation_status: optional('json'),
  reconcile: optional(
    message('Call.Reconcile', () => ({
      tasks: repeated(message('Call.Reconcile.Task', () => ({ task_id: required(TASK_ID), agent_id: optional(AGENT_ID) }))),
    })),
  ),
  reconcile_operations: optional('json'),
  message: optional(message('Call.Message', () => ({ agent_id: required(AGENT_ID), executor_id: required(EXECUTOR_ID), data: required('bytes') }))),
  request: optional(message('Call.Request', () => ({ requests: repeated('json') }))),
  update_framework: optional(
    message('Call.UpdateFramework', () => ({ framework_info: required(FRAMEWORK_INFO), suppressed_roles: repeated('string'), offer_constraints: optional('json') })),
  ),
}));

// ---- Operator calls that name an agent (include/mesos/v1/master/master.proto) ----------------

/** `{agent_id}`: DEACTIVATE_AGENT, REACTIVATE_AGENT, MARK_AGENT_GONE. */
export const AGENT_CALL = message('Call.AgentId', () => ({ agent_id: required(AGENT_ID) }));

/**
 * DRAIN_AGENT. `max_grace_period` is a google.protobuf.Duration in Mesos; Drydock also takes
 * a duration string, so it is read by shared/drain.ts `parseMaxGracePeriod`.
 */
export const DRAIN_AGENT_CALL = message('Call.DrainAgent', () => ({
  agent_id: required(AGENT_ID),
  max_grace_period: optional('json'),
  mark_gone: optional('bool'),
}));

/** A TaskStatus as an agent reports it (the agent wire; Drydock's reasons are a subset of Mesos'). */
export const TASK_STATUS = message('TaskStatus', () => ({
  task_id: required(TASK_ID),
  state: required(enumOf(TASK_STATES)),
  message: optional('string'),
  source: required(enumOf(['SOURCE_MASTER', 'SOURCE_AGENT', 'SOURCE_EXECUTOR'])),
  reason: optional('string'),
  agent_id: optional(AGENT_ID),
  executor_id: optional(EXECUTOR_ID),
  timestamp: required('double'),
  uuid: optional('bytes'),
  healthy: optional('bool'),
  check_status: optional(CHECK_STATUS_INFO),
}));

// ---- The v1 call decoder ---------------------------------------------------------------------

/** What one v1 API's Call is: its message, the sub-message each type requires, how validation failures are worded. */
export interface CallSpec<T extends string> {
  message: MessageType;
  /** `Expecting '<sub>' to be present` when missing. */
  requiredSub: Partial<Record<T, string>>;
  /** `Failed to validate master::Call: ...`, `agent::Call`, `scheduler::Call`. */
  invalid: 'CALL_INVALID' | 'AGENT_CALL_INVALID' | 'SCHEDULER_CALL_INVALID';
}

export type DecodedCall<T extends string, B> = { ok: true; type: T; body: B } | { ok: false; error: DrydockError };

/**
 * The one decoder of v1 calls (operator, scheduler and agent APIs), in Mesos' order: parse the
 * JSON (bounded, null is unset), convert it to the Call message (400 `Failed to convert JSON
 * into Call protobuf: ...`), then validate that a known type and its sub-message are present.
 */
export function decodeCall<T extends string, B extends { type?: T }>(text: string, spec: CallSpec<T>): DecodedCall<T, B> {
  let json: unknown;
  try {
    json = parseWireJson(text);
  } catch (e) {
    return { ok: false, error: fail('BODY_NOT_JSON', (e as Error).message) };
  }
  return convertCall(json, spec);
}

/**
 * The steps of decodeCall after the body's encoding is read: the JSON model (of a JSON body, or
 * of a protobuf one: shared/codec.ts) converted to the Call message, then validated.
 */
export function convertCall<T extends string, B extends { type?: T }>(json: unknown, spec: CallSpec<T>): DecodedCall<T, B> {
  const decoded = decodeMessage<B>(spec.message, json);
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  const type = decoded.value.type;
  // An unknown name in the optional enum was dropped, so it fails as "not present".
  if (type === undefined) return { ok: false, error: fail(spec.invalid, "Expecting 'type' to be present") };
  const sub = spec.requiredSub[type];
  if (sub !== undefined && (decoded.value as Record<string, unknown>)[sub] === undefined) return { ok: false, error: fail(spec.invalid, `Expecting '${sub}' to be present`) };
  return { ok: true, type, body: decoded.value };
}

/** A Call message whose sub-messages are read later by each call: `type` and every sub-message by name, as objects. */
export function callMessage(name: string, types: readonly string[], subs: readonly string[]): MessageType {
  const fields: Record<string, Field> = { type: optional(enumOf(types)) };
  for (const sub of subs) fields[sub] = optional('object');
  return message(name, () => fields);
}

/**
 * The agent <-> master wire: one WebSocket per agent, JSON text frames, one discriminated
 * union per direction. Raw frames are decoded and validated here and nowhere else; a frame
 * that does not decode never reaches the daemons. Message types are only ever added, never
 * changed.
 *
 * What a frame that does not decode does to the session depends on how far it got:
 * - garbled (binary, not JSON, over the JSON bounds, not an object with a string `type`): the
 *   peer is not speaking this protocol; the session is closed (PROTOCOL_ERROR) with the reason.
 * - agent -> master, a type the master does not know or a body that does not validate: closed
 *   too (the master trusts no agent further than that).
 * - master -> agent, a type the agent does not know (a newer master) or a known type whose body
 *   does not validate: refused. The agent does nothing with it, keeps its session, and tells
 *   the master which message it refused (REFUSED): closing would only bring the same message
 *   back at the next registration, for ever.
 *
 * Integers: the agent reads every master message with the proto reader (shared/proto.ts) the
 * master read its content with, so an int64 the master accepted is one the agent takes, to the
 * digit (bigints travel as bare digits, encode() below).
 *
 * Liveness is WebSocket ping/pong: the master pings every `ping_interval_ms`; the agent
 * treats `max_ping_timeouts` missed pings as a lost master and reconnects.
 */

import { createHash } from 'node:crypto';
import { parseWireJson, stringifyJson } from './json.js';
import { decodeMessage, DRAIN_CONFIG, FRAMEWORK_INFO, KILL_POLICY, message, optional, preview, repeated, required, TASK_INFO, TASK_STATUS, type Field, type MessageType } from './proto.js';
import { arr, bool, num, obj, oneOf, opt, str, tagged, literal, type Check } from './schema.js';
import type { AgentInfo, FrameworkInfo, KillPolicy, TaskInfo, TaskState, TaskStatus } from './mesos.js';
import { TASK_STATES } from './mesos.js';
import type { DrainConfigWire } from './drain.js';

/** Path of the agent session on the master's HTTP port. */
export const AGENT_SESSION_PATH = '/agent/session';

/** Largest frame either side accepts: a registration with thousands of tasks fits easily. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** WebSocket close codes (4000-4999 are for applications). */
/** What an agent registering from a DOWN machine is told, backticks included (Mesos §4.7). */
export const MACHINE_DOWN_MESSAGE = 'Machine is `DOWN`';
/** The ShutdownMessage (and the removal reason) of `/machine/down` (Mesos §2). */
export const MACHINE_DOWN_REMOVAL = "Operator initiated 'Machine DOWN'";

export const CLOSE_CODES = {
  /** The peer sent a frame that does not decode. */
  PROTOCOL_ERROR: 4400,
  /** The master told the agent to shut down; the agent must not reconnect. */
  SHUTDOWN: 4401,
  /**
   * The agent id is held by a live session that still answers pings: from another address,
   * or (with `--authenticate_agents`) from anywhere. Refused until that session fails its
   * pings. The agent backs off and tries again.
   */
  ID_IN_USE: 4403,
  /**
   * This principal may not register this agent: its id is bound to another principal, or the
   * `register_agents` ACL refuses it. Nothing changed. The agent logs it as an error and keeps
   * trying with backoff (the operator may fix its credential or the ACLs meanwhile).
   */
  NOT_ALLOWED: 4405,
  /** A newer session for the same agent replaced this one. */
  REPLACED: 4409,
  /** The daemon is stopping. */
  GOING_AWAY: 1001,
} as const;

/** ws refuses close reasons longer than 123 bytes (125-byte control frame minus the code). */
const MAX_CLOSE_REASON_BYTES = 123;

/** Cuts a close reason to 123 UTF-8 bytes without splitting a character. */
export function closeReason(text: string): string {
  if (Buffer.byteLength(text) <= MAX_CLOSE_REASON_BYTES) return text;
  let out = text.slice(0, MAX_CLOSE_REASON_BYTES);
  while (Buffer.byteLength(out) > MAX_CLOSE_REASON_BYTES) out = out.slice(0, -1);
  return out;
}

// ---- Shared pieces -------------------------------------------------------------------------

/** Every master message type, in MASTER_MESSAGES' order (the keys of its description table). */
export const MASTER_MESSAGE_TYPES: readonly MasterMessageType[] = ['REGISTERED', 'SHUTDOWN', 'RUN_TASK', 'KILL_TASK', 'ACKNOWLEDGE', 'DRAIN'];

const idValue = obj({ value: str({ min: 1 }) });

const rangeSchema = obj({ begin: num({ int: true, min: 0 }), end: num({ int: true, min: 0 }) });
const ranges = opt(obj({ range: arr(rangeSchema) }));
const scalar = opt(obj({ value: num() }));
const set = opt(obj({ item: arr(str()) }));

const resourceSchema = obj({
  name: str({ min: 1 }),
  type: oneOf(['SCALAR', 'RANGES', 'SET']),
  scalar,
  ranges,
  set,
  role: opt(str()),
});

const attributeSchema = obj({
  name: str({ min: 1 }),
  type: oneOf(['SCALAR', 'RANGES', 'SET', 'TEXT']),
  scalar,
  ranges,
  set,
  text: opt(obj({ value: str() })),
});

const taskState = oneOf(TASK_STATES);

const taskStatusFields = {
  task_id: idValue,
  state: taskState,
  message: opt(str()),
  source: oneOf(['SOURCE_MASTER', 'SOURCE_AGENT', 'SOURCE_EXECUTOR']),
  reason: opt(str()),
  agent_id: opt(idValue),
  timestamp: num(),
  uuid: opt(str()),
};
const taskStatusSchema = obj(taskStatusFields);

const killPolicySchema = obj({ grace_period: opt(obj({ nanoseconds: num({ min: 0 }) })) });

const taskInfoSchema = obj({
  name: str(),
  task_id: idValue,
  agent_id: idValue,
  resources: arr(resourceSchema),
  command: opt(
    obj({
      shell: opt(bool()),
      value: opt(str()),
      arguments: opt(arr(str())),
      environment: opt(obj({ variables: arr(obj({ name: str(), value: opt(str()) })) })),
    }),
  ),
  kill_policy: opt(killPolicySchema),
});

const frameworkInfoSchema = obj({ user: str(), name: str(), id: opt(idValue), checkpoint: opt(bool()) });

// ---- Agent -> master -----------------------------------------------------------------------

/** What the agent reports about itself. `ip` is the address it binds and advertises. */
export interface AgentSelf {
  hostname: string;
  ip: string;
  port: number;
  resources: AgentInfo['resources'];
  attributes: AgentInfo['attributes'];
}

/** A task as the agent knows it, sent when (re-)registering. */
export interface AgentTaskReport {
  framework_id: string;
  task: TaskInfo;
  /** Latest state the agent has observed. */
  state: TaskState;
  /** Latest status the agent sent (or would send), newest last. */
  statuses: TaskStatus[];
  /** State and uuid of the oldest update not yet acknowledged, if any (Mesos' status_update_state). */
  status_update_state?: TaskState;
  status_update_uuid?: string;
}

/**
 * Why an agent is short of disk: free space below --disk_pressure_free_bytes (none at all:
 * NO_SPACE), below --disk_pressure_free_percent (LOW_SPACE), free inodes below
 * --disk_pressure_free_inodes_percent (LOW_INODES), or a write that failed for want of space
 * or quota (WRITE_FAILED: the checkpoint, a sandbox, a launcher's exit file).
 */
export type DiskPressureReason = 'NO_SPACE' | 'LOW_SPACE' | 'LOW_INODES' | 'WRITE_FAILED';

export const DISK_PRESSURE_REASONS: readonly DiskPressureReason[] = ['NO_SPACE', 'LOW_SPACE', 'LOW_INODES', 'WRITE_FAILED'];

/**
 * An agent's disk pressure as it reports it: since when (its clock, ms since the epoch), why, a
 * sentence that names the cause and the directory (`no space left on device in
 * /var/lib/drydock/agent`), and the filesystem's figures when it began (or when its reason last
 * changed). Bounded on the wire: MAX_CONDITION_TEXT characters of text.
 */
export interface DiskPressure {
  since_ms: number;
  reason: DiskPressureReason;
  message: string;
  /** The directory whose filesystem is short: the work dir, or the sandboxes' directory when it is another filesystem. */
  path: string;
  free_bytes: number;
  total_bytes: number;
  free_inodes: number;
  total_inodes: number;
}

/**
 * The conditions an agent reports about itself (Drydock's, not Mesos'): each present while it
 * holds. Only `disk_pressure` so far; an agent without any sends `{}`.
 */
export interface AgentConditions {
  disk_pressure?: DiskPressure;
}

/** Longest `message` or `path` of a condition the master keeps: an agent's text, bounded. */
export const MAX_CONDITION_TEXT = 1000;

export type AgentMessage =
  | {
      type: 'REGISTER';
      /** Echoed in REGISTERED, so a late answer to an older attempt is recognised. */
      request_id: number;
      /** Present when the agent re-registers with a checkpointed identity. */
      agent_id?: string;
      agent: AgentSelf;
      version: string;
      capabilities: string[];
      tasks: AgentTaskReport[];
      frameworks: FrameworkInfo[];
      /** The agent's conditions as it registers (absent from agents that predate them: none known). */
      conditions?: AgentConditions;
    }
  | {
      type: 'STATUS_UPDATE';
      framework_id: string;
      /** The status, with `uuid` set: the master acknowledges it by that uuid. */
      status: TaskStatus;
    }
  | {
      /**
       * The agent could not decode a master message (a known type whose body does not
       * validate, or a type it does not know): it did nothing with it and kept its session.
       * Sent only to a master that lists 'REFUSED' in REGISTERED's capabilities (an older
       * master closes a session on a type it does not know).
       */
      type: 'REFUSED';
      refused: Refusal;
    }
  | {
      /**
       * The agent's conditions changed (disk pressure began, changed its reason, or ended): all
       * of them as they hold now, not a difference. Sent only to a master that lists
       * 'CONDITIONS' in REGISTERED's capabilities (an older one closes a session on a type it
       * does not know); REGISTER carries them too, so a master learns them at registration.
       */
      type: 'CONDITIONS';
      conditions: AgentConditions;
    };

/** A master message the agent refused, as REFUSED tells the master. */
export interface Refusal {
  /** The message's type when it is one of MasterMessage's; '?' for one the agent does not know. */
  type: MasterMessageType | '?';
  /** The task the message is about (RUN_TASK, KILL_TASK, ACKNOWLEDGE), when it can be read. */
  id?: string;
  /** messageDigest() of the message as the agent received it: which of its messages the master should look at. */
  digest: string;
  /** Why, as the decoder says it (at most MAX_REFUSAL_REASON characters). */
  reason: string;
}

/** Longest `reason` a refusal carries: the decoder's messages are short; a longer one is cut. */
export const MAX_REFUSAL_REASON = 500;

const conditionsSchema = obj({
  disk_pressure: opt(
    obj({
      since_ms: num({ min: 0 }),
      reason: oneOf(DISK_PRESSURE_REASONS),
      message: str(),
      path: str(),
      free_bytes: num({ min: 0 }),
      total_bytes: num({ min: 0 }),
      free_inodes: num({ min: 0 }),
      total_inodes: num({ min: 0 }),
    }),
  ),
});

const agentMessageSchema: Check = tagged('type', {
  REGISTER: obj({
    type: literal('REGISTER'),
    request_id: num({ int: true }),
    agent_id: opt(str({ min: 1 })),
    agent: obj({
      hostname: str({ min: 1 }),
      ip: str({ min: 1 }),
      port: num({ int: true, min: 0, max: 65535 }),
      resources: arr(resourceSchema),
      attributes: arr(attributeSchema),
    }),
    version: str(),
    capabilities: arr(str()),
    tasks: arr(
      obj({
        framework_id: str({ min: 1 }),
        task: taskInfoSchema,
        state: taskState,
        statuses: arr(taskStatusSchema),
        status_update_state: opt(taskState),
        status_update_uuid: opt(str()),
      }),
    ),
    frameworks: arr(frameworkInfoSchema),
    conditions: opt(conditionsSchema),
  }),
  STATUS_UPDATE: obj({
    type: literal('STATUS_UPDATE'),
    framework_id: str({ min: 1 }),
    status: obj({ ...taskStatusFields, uuid: str({ min: 1 }) }),
  }),
  REFUSED: obj({
    type: literal('REFUSED'),
    refused: obj({ type: oneOf([...MASTER_MESSAGE_TYPES, '?']), id: opt(str()), digest: str({ min: 1 }), reason: str() }),
  }),
  CONDITIONS: obj({
    type: literal('CONDITIONS'),
    conditions: conditionsSchema,
  }),
});

// ---- Master -> agent -----------------------------------------------------------------------

/**
 * Everything a master sends carries its leadership epoch (HA: the election key's
 * create_revision, decimal; a single master: 1), so an agent can refuse a master deposed
 * since (it has seen a higher one). Absent from masters that predate it.
 */
export type MasterMessage = MasterMessageBody & { epoch?: string };

/** The type of a master message. */
export type MasterMessageType = MasterMessage['type'];

type MasterMessageBody =
  | {
      type: 'REGISTERED';
      request_id: number;
      agent_id: string;
      master_id: string;
      /** The master pings this often; the agent gives up on it after `max_ping_timeouts` silent intervals. */
      ping_interval_ms: number;
      max_ping_timeouts: number;
      /** Agent messages beyond REGISTER and STATUS_UPDATE this master understands (MASTER_CAPABILITIES). Absent from masters that predate it. */
      capabilities?: string[];
    }
  | {
      /**
       * The agent must stop its tasks and go away. For MACHINE_DOWN_MESSAGE / MACHINE_DOWN_REMOVAL
       * it is welcome back once its machine is UP (the agent registers again after
       * --down_retry_interval); for any other message (an agent marked gone) never.
       */
      type: 'SHUTDOWN';
      message: string;
    }
  | {
      type: 'RUN_TASK';
      framework_id: string;
      framework: FrameworkInfo;
      task: TaskInfo;
    }
  | {
      type: 'KILL_TASK';
      framework_id: string;
      task_id: string;
      /** Overrides the task's own kill policy for this kill. */
      kill_policy?: KillPolicy;
    }
  | {
      /** The scheduler acknowledged this update; the agent may forget it. */
      type: 'ACKNOWLEDGE';
      framework_id: string;
      task_id: string;
      uuid: string;
    }
  | {
      /**
       * Drain yourself with this config (Mesos DrainSlaveMessage): kill every task with the
       * kill-policy override and refuse launches. The master re-sends it on every
       * re-registration of a draining or drained agent, unless the agent refused this very
       * message (REFUSED) and has not changed version since.
       */
      type: 'DRAIN';
      config: DrainConfigWire;
    };

/** What a master announces in REGISTERED's `capabilities`: the agent messages it understands beyond REGISTER and STATUS_UPDATE. */
export const MASTER_CAPABILITIES: readonly string[] = ['REFUSED', 'CONDITIONS'];

/** A master message's description: its own fields, between `type` and `epoch`. */
function masterMessage(type: MasterMessageType, fields: () => Record<string, Field>): MessageType {
  return message(type, () => ({ type: required('string'), ...fields(), epoch: optional('string') }));
}

/**
 * Every master -> agent message, field by field with its proto type (shared/proto.ts). The
 * agent decodes each with the reader the master decoded the content with (TaskInfo,
 * FrameworkInfo, KillPolicy as a scheduler's call; DrainConfig exactly, as DRAIN_AGENT took
 * it), so what the master accepted the agent takes, every int64 to the digit. The wire's int64
 * round-trip test (test/unit/wire-int64.test.ts) walks these descriptions for its fields.
 */
export const MASTER_MESSAGES: { readonly [K in MasterMessageType]: MessageType } = {
  REGISTERED: masterMessage('REGISTERED', () => ({
    request_id: required('int64'),
    agent_id: required('string'),
    master_id: required('string'),
    ping_interval_ms: required('double'),
    max_ping_timeouts: required('uint32'),
    capabilities: repeated('string'),
  })),
  SHUTDOWN: masterMessage('SHUTDOWN', () => ({ message: required('string') })),
  RUN_TASK: masterMessage('RUN_TASK', () => ({ framework_id: required('string'), framework: required(FRAMEWORK_INFO), task: required(TASK_INFO) })),
  KILL_TASK: masterMessage('KILL_TASK', () => ({ framework_id: required('string'), task_id: required('string'), kill_policy: optional(KILL_POLICY) })),
  ACKNOWLEDGE: masterMessage('ACKNOWLEDGE', () => ({ framework_id: required('string'), task_id: required('string'), uuid: required('string') })),
  DRAIN: masterMessage('DRAIN', () => ({ config: required(DRAIN_CONFIG) })),
};

/** What a decoded master message must be beyond its proto types: non-empty ids, positive liveness, a grace that is not negative, a decimal epoch. */
function masterMessageProblem(m: MasterMessage): string | undefined {
  if (m.epoch !== undefined && !/^[0-9]{1,20}$/.test(m.epoch)) return "Field 'epoch' must be a decimal string";
  const empty = (field: string, v: string): string | undefined => (v === '' ? `Field '${field}' must not be empty` : undefined);
  switch (m.type) {
    case 'REGISTERED':
      if (!(m.ping_interval_ms > 0)) return "Field 'ping_interval_ms' must be positive";
      if (m.max_ping_timeouts < 1) return "Field 'max_ping_timeouts' must be positive";
      return empty('agent_id', m.agent_id) ?? empty('master_id', m.master_id);
    case 'SHUTDOWN':
      return undefined;
    case 'RUN_TASK':
      // The master always lists the task's resources (it checked them against its offers).
      if (m.task.resources === undefined) return "Missing required fields: task.resources";
      return empty('framework_id', m.framework_id);
    case 'KILL_TASK':
      return empty('framework_id', m.framework_id) ?? empty('task_id', m.task_id);
    case 'ACKNOWLEDGE':
      return empty('framework_id', m.framework_id) ?? empty('task_id', m.task_id) ?? empty('uuid', m.uuid);
    case 'DRAIN': {
      const ns = m.config.max_grace_period?.nanoseconds;
      return ns !== undefined && ns < 0n ? "Field 'config.max_grace_period.nanoseconds' must not be negative" : undefined;
    }
    default:
      return assertNever(m);
  }
}

/**
 * A short fingerprint of a master message, its epoch left out: sha-256 of its JSON as the
 * master encodes it, first 16 hex digits. The agent computes it over the message as it parsed
 * it (same keys, same order, same digits), so REFUSED names a message the master can recognise
 * even if it has sent another of the same type since.
 */
export function messageDigest(msg: object): string {
  const { epoch: _epoch, ...body } = msg as Record<string, unknown>;
  return createHash('sha256').update(stringifyJson(body)).digest('hex').slice(0, 16);
}

// ---- Decoding ------------------------------------------------------------------------------

export type Decoded<T> = { ok: true; message: T } | { ok: false; error: string };

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** A text frame read as JSON (bounded, null is unset); anything else is garbled. */
function parseFrame(frame: unknown, isBinary: boolean): { ok: true; json: unknown } | { ok: false; error: string } {
  if (isBinary) return { ok: false, error: 'binary frames are not part of the protocol' };
  const text = typeof frame === 'string' ? frame : Buffer.isBuffer(frame) ? frame.toString('utf8') : Array.isArray(frame) ? Buffer.concat(frame).toString('utf8') : Buffer.from(frame as ArrayBuffer).toString('utf8');
  try {
    // Bounded, null is unset: a frame 10,000 levels deep is refused here, before any walk.
    return { ok: true, json: parseWireJson(text) };
  } catch (e) {
    return { ok: false, error: `frame is not JSON: ${(e as Error).message}` };
  }
}

function decode<T>(check: Check, frame: unknown, isBinary: boolean): Decoded<T> {
  const f = parseFrame(frame, isBinary);
  if (!f.ok) return f;
  const problem = check(f.json, '');
  if (problem !== undefined) return { ok: false, error: `invalid message: ${problem}` };
  return { ok: true, message: f.json as T };
}

/** Most tasks one registration may report: far above what one machine runs, far below what would exhaust the master. */
export const MAX_REGISTERED_TASKS = 10_000;
/** Most frameworks one registration may report. */
export const MAX_REGISTERED_FRAMEWORKS = 1_000;

/**
 * Decodes one frame from an agent (on the master). The frameworks and tasks of a REGISTER are
 * kept as their Mesos messages (shared/proto.ts), unknown fields dropped, so the master never
 * stores or echoes what an agent made up; their counts are bounded.
 */
export function decodeAgentMessage(frame: unknown, isBinary = false): Decoded<AgentMessage> {
  const d = decode<AgentMessage>(agentMessageSchema, frame, isBinary);
  if (!d.ok) return d;
  const m = d.message;
  if (m.type === 'REFUSED') return d;
  if (m.type === 'CONDITIONS') return { ok: true, message: { type: 'CONDITIONS', conditions: keptConditions(m.conditions) } };
  if (m.type === 'STATUS_UPDATE') {
    const status = decodeMessage<TaskStatus>(TASK_STATUS, m.status, 'status');
    return status.ok ? { ok: true, message: { ...m, status: status.value } } : { ok: false, error: `invalid message: ${status.error}` };
  }
  if (m.tasks.length > MAX_REGISTERED_TASKS) return { ok: false, error: `invalid message: more than ${MAX_REGISTERED_TASKS} tasks` };
  if (m.frameworks.length > MAX_REGISTERED_FRAMEWORKS) return { ok: false, error: `invalid message: more than ${MAX_REGISTERED_FRAMEWORKS} frameworks` };
  const frameworks: FrameworkInfo[] = [];
  for (const [i, f] of m.frameworks.entries()) {
    const info = decodeMessage<FrameworkInfo>(FRAMEWORK_INFO, f, `frameworks[${i}]`);
    if (!info.ok) return { ok: false, error: `invalid message: ${info.error}` };
    frameworks.push(info.value);
  }
  const tasks: AgentTaskReport[] = [];
  for (const [i, t] of m.tasks.entries()) {
    const task = decodeMessage<TaskInfo>(TASK_INFO, t.task, `tasks[${i}].task`);
    if (!task.ok) return { ok: false, error: `invalid message: ${task.error}` };
    const statuses: TaskStatus[] = [];
    for (const [j, st] of t.statuses.entries()) {
      const status = decodeMessage<TaskStatus>(TASK_STATUS, st, `tasks[${i}].statuses[${j}]`);
      if (!status.ok) return { ok: false, error: `invalid message: ${status.error}` };
      statuses.push(status.value);
    }
    tasks.push({ ...t, task: task.value, statuses });
  }
  const { conditions, ...rest } = m;
  return { ok: true, message: { ...rest, frameworks, tasks, ...(conditions === undefined ? {} : { conditions: keptConditions(conditions) }) } };
}

/**
 * An agent's conditions as the master keeps them: the known fields only, texts cut to
 * MAX_CONDITION_TEXT (an agent's words, logged and shown to operators). Pure.
 */
export function keptConditions(c: AgentConditions): AgentConditions {
  const p = c.disk_pressure;
  if (p === undefined) return {};
  const cut = (t: string): string => (t.length > MAX_CONDITION_TEXT ? `${t.slice(0, MAX_CONDITION_TEXT - 3)}...` : t);
  return {
    disk_pressure: {
      since_ms: p.since_ms,
      reason: p.reason,
      message: cut(p.message),
      path: cut(p.path),
      free_bytes: p.free_bytes,
      total_bytes: p.total_bytes,
      free_inodes: p.free_inodes,
      total_inodes: p.total_inodes,
    },
  };
}

/**
 * A master frame the agent cannot act on. With `refusal`, the frame was a JSON object with a
 * type: the agent refuses that one message and keeps its session; without, it was garbled and
 * the session is closed.
 */
export type MasterDecoded = { ok: true; message: MasterMessage } | { ok: false; error: string; refusal?: Refusal };

/**
 * Decodes one frame from the master (on the agent): each type with its description in
 * MASTER_MESSAGES (unknown fields dropped), then masterMessageProblem.
 */
export function decodeMasterMessage(frame: unknown, isBinary = false): MasterDecoded {
  const f = parseFrame(frame, isBinary);
  if (!f.ok) return f;
  const json = f.json;
  if (!isObject(json) || typeof json['type'] !== 'string') return { ok: false, error: "invalid message: expected a JSON object with a string 'type'" };
  const type = json['type'];
  if (!Object.hasOwn(MASTER_MESSAGES, type)) return refused(json, '?', `unknown message type ${JSON.stringify(preview(type))}; expected one of ${MASTER_MESSAGE_TYPES.join(', ')}`);
  const known = type as MasterMessageType;
  const d = decodeMessage<MasterMessage>(MASTER_MESSAGES[known], json);
  if (!d.ok) return refused(json, known, d.error);
  const problem = masterMessageProblem(d.value);
  if (problem !== undefined) return refused(json, known, problem);
  return { ok: true, message: d.value };
}

/** The refusal of a master message the agent parsed but cannot act on. */
function refused(json: Record<string, unknown>, type: MasterMessageType | '?', problem: string): MasterDecoded {
  const reason = problem.length > MAX_REFUSAL_REASON ? `${problem.slice(0, MAX_REFUSAL_REASON - 3)}...` : problem;
  const refusal: Refusal = { type, digest: messageDigest(json), reason };
  const task = json['task'];
  const id = isObject(task) && isObject(task['task_id']) ? task['task_id']['value'] : json['task_id'];
  if (typeof id === 'string' && id !== '') refusal.id = id.length > 200 ? id.slice(0, 200) : id;
  return { ok: false, error: `invalid ${type === '?' ? 'message' : type}: ${reason}`, refusal };
}

/** One message as a frame. Int64s held as bigints are written as bare digits, exactly. */
export function encode(message: AgentMessage | MasterMessage): string {
  return stringifyJson(message);
}

/** Exhaustiveness check for `switch (msg.type)`. */
export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}

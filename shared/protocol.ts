/**
 * The agent <-> master wire: one WebSocket per agent, JSON text frames, one discriminated
 * union per direction. Raw frames are decoded and validated here and nowhere else; a frame
 * that does not decode closes the session with the reason, it never reaches the daemons.
 * Message types are only ever added, never changed.
 *
 * Liveness is WebSocket ping/pong: the master pings every `ping_interval_ms`; the agent
 * treats `max_ping_timeouts` missed pings as a lost master and reconnects.
 */

import { parseWireJson } from './json.js';
import { decodeMessage, FRAMEWORK_INFO, TASK_INFO, TASK_STATUS } from './proto.js';
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
    }
  | {
      type: 'STATUS_UPDATE';
      framework_id: string;
      /** The status, with `uuid` set: the master acknowledges it by that uuid. */
      status: TaskStatus;
    };

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
  }),
  STATUS_UPDATE: obj({
    type: literal('STATUS_UPDATE'),
    framework_id: str({ min: 1 }),
    status: obj({ ...taskStatusFields, uuid: str({ min: 1 }) }),
  }),
});

// ---- Master -> agent -----------------------------------------------------------------------

/**
 * Everything a master sends carries its leadership epoch (HA: the election key's
 * create_revision, decimal; a single master: 1), so an agent can refuse a master deposed
 * since (it has seen a higher one). Absent from masters that predate it.
 */
export type MasterMessage = MasterMessageBody & { epoch?: string };

type MasterMessageBody =
  | {
      type: 'REGISTERED';
      request_id: number;
      agent_id: string;
      master_id: string;
      /** The master pings this often; the agent gives up on it after `max_ping_timeouts` silent intervals. */
      ping_interval_ms: number;
      max_ping_timeouts: number;
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
       * re-registration of a draining or drained agent.
       */
      type: 'DRAIN';
      config: DrainConfigWire;
    };

const masterMessageSchema: Check = tagged('type', {
  REGISTERED: obj({
    type: literal('REGISTERED'),
    request_id: num({ int: true }),
    agent_id: str({ min: 1 }),
    master_id: str({ min: 1 }),
    ping_interval_ms: num({ positive: true }),
    max_ping_timeouts: num({ int: true, positive: true }),
  }),
  SHUTDOWN: obj({ type: literal('SHUTDOWN'), message: str() }),
  RUN_TASK: obj({ type: literal('RUN_TASK'), framework_id: str({ min: 1 }), framework: frameworkInfoSchema, task: taskInfoSchema }),
  KILL_TASK: obj({ type: literal('KILL_TASK'), framework_id: str({ min: 1 }), task_id: str({ min: 1 }), kill_policy: opt(killPolicySchema) }),
  ACKNOWLEDGE: obj({ type: literal('ACKNOWLEDGE'), framework_id: str({ min: 1 }), task_id: str({ min: 1 }), uuid: str({ min: 1 }) }),
  DRAIN: obj({ type: literal('DRAIN'), config: obj({ max_grace_period: opt(obj({ nanoseconds: num({ min: 0 }) })), mark_gone: bool() }) }),
});

// ---- Decoding ------------------------------------------------------------------------------

export type Decoded<T> = { ok: true; message: T } | { ok: false; error: string };

function decode<T>(check: Check, frame: unknown, isBinary: boolean): Decoded<T> {
  if (isBinary) return { ok: false, error: 'binary frames are not part of the protocol' };
  const text = typeof frame === 'string' ? frame : Buffer.isBuffer(frame) ? frame.toString('utf8') : Array.isArray(frame) ? Buffer.concat(frame).toString('utf8') : Buffer.from(frame as ArrayBuffer).toString('utf8');
  let json: unknown;
  try {
    // Bounded, null is unset: a frame 10,000 levels deep is refused here, before any walk.
    json = parseWireJson(text);
  } catch (e) {
    return { ok: false, error: `frame is not JSON: ${(e as Error).message}` };
  }
  const problem = check(json, '');
  if (problem !== undefined) return { ok: false, error: `invalid message: ${problem}` };
  return { ok: true, message: json as T };
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
  return { ok: true, message: { ...m, frameworks, tasks } };
}

/** Decodes one frame from the master (on the agent). */
export function decodeMasterMessage(frame: unknown, isBinary = false): Decoded<MasterMessage> {
  const d = decode<MasterMessage>(masterMessageSchema, frame, isBinary);
  if (d.ok && d.message.epoch !== undefined && (typeof d.message.epoch !== 'string' || !/^[0-9]{1,20}$/.test(d.message.epoch))) {
    return { ok: false, error: 'invalid message: epoch must be a decimal string' };
  }
  return d;
}

export function encode(message: AgentMessage | MasterMessage): string {
  return JSON.stringify(message);
}

/** Exhaustiveness check for `switch (msg.type)`. */
export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}

/**
 * The agent <-> master wire: one WebSocket per agent, JSON text frames, one discriminated
 * union per direction. Raw frames are decoded and validated here and nowhere else; a frame
 * that does not decode closes the session with the reason, it never reaches the daemons.
 * Message types are only ever added, never changed.
 *
 * Liveness is WebSocket ping/pong: the master pings every `ping_interval_ms`; the agent
 * treats `max_ping_timeouts` missed pings as a lost master and reconnects.
 */

import { z } from 'zod';
import type { AgentInfo, FrameworkInfo, KillPolicy, TaskInfo, TaskState, TaskStatus } from './mesos.js';
import { TASK_STATES } from './mesos.js';

/** Path of the agent session on the master's HTTP port. */
export const AGENT_SESSION_PATH = '/agent/session';

/** Largest frame either side accepts: a registration with thousands of tasks fits easily. */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** WebSocket close codes (4000-4999 are for applications). */
export const CLOSE_CODES = {
  /** The peer sent a frame that does not decode. */
  PROTOCOL_ERROR: 4400,
  /** The master told the agent to shut down; the agent must not reconnect. */
  SHUTDOWN: 4401,
  /** A newer session for the same agent replaced this one. */
  REPLACED: 4409,
  /** The daemon is stopping. */
  GOING_AWAY: 1001,
} as const;

// ---- Shared pieces -------------------------------------------------------------------------

const idValue = z.object({ value: z.string().min(1) });

const rangeSchema = z.object({ begin: z.number().int().nonnegative(), end: z.number().int().nonnegative() });

const resourceSchema = z.looseObject({
  name: z.string().min(1),
  type: z.enum(['SCALAR', 'RANGES', 'SET']),
  scalar: z.object({ value: z.number() }).optional(),
  ranges: z.object({ range: z.array(rangeSchema) }).optional(),
  set: z.object({ item: z.array(z.string()) }).optional(),
  role: z.string().optional(),
});

const attributeSchema = z.looseObject({
  name: z.string().min(1),
  type: z.enum(['SCALAR', 'RANGES', 'SET', 'TEXT']),
  scalar: z.object({ value: z.number() }).optional(),
  ranges: z.object({ range: z.array(rangeSchema) }).optional(),
  set: z.object({ item: z.array(z.string()) }).optional(),
  text: z.object({ value: z.string() }).optional(),
});

const taskState = z.enum(TASK_STATES as [TaskState, ...TaskState[]]);

const taskStatusSchema = z.looseObject({
  task_id: idValue,
  state: taskState,
  message: z.string().optional(),
  source: z.enum(['SOURCE_MASTER', 'SOURCE_AGENT', 'SOURCE_EXECUTOR']),
  reason: z.string().optional(),
  agent_id: idValue.optional(),
  timestamp: z.number(),
  uuid: z.string().optional(),
});

const killPolicySchema = z.looseObject({
  grace_period: z.object({ nanoseconds: z.number().nonnegative() }).optional(),
});

const taskInfoSchema = z.looseObject({
  name: z.string(),
  task_id: idValue,
  agent_id: idValue,
  resources: z.array(resourceSchema),
  command: z
    .looseObject({
      shell: z.boolean().optional(),
      value: z.string().optional(),
      arguments: z.array(z.string()).optional(),
      environment: z
        .object({ variables: z.array(z.looseObject({ name: z.string(), value: z.string().optional() })) })
        .optional(),
    })
    .optional(),
  kill_policy: killPolicySchema.optional(),
});

const frameworkInfoSchema = z.looseObject({
  user: z.string(),
  name: z.string(),
  id: idValue.optional(),
  checkpoint: z.boolean().optional(),
});

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

const agentMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('REGISTER'),
    request_id: z.number().int(),
    agent_id: z.string().min(1).optional(),
    agent: z.object({
      hostname: z.string().min(1),
      ip: z.string().min(1),
      port: z.number().int().min(0).max(65535),
      resources: z.array(resourceSchema),
      attributes: z.array(attributeSchema),
    }),
    version: z.string(),
    capabilities: z.array(z.string()),
    tasks: z.array(
      z.object({
        framework_id: z.string().min(1),
        task: taskInfoSchema,
        state: taskState,
        statuses: z.array(taskStatusSchema),
        status_update_state: taskState.optional(),
        status_update_uuid: z.string().optional(),
      }),
    ),
    frameworks: z.array(frameworkInfoSchema),
  }),
  z.object({
    type: z.literal('STATUS_UPDATE'),
    framework_id: z.string().min(1),
    status: taskStatusSchema.extend({ uuid: z.string().min(1) }),
  }),
]);

// ---- Master -> agent -----------------------------------------------------------------------

export type MasterMessage =
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
      /** The agent must stop its tasks and exit; it is not welcome back (e.g. ``Machine is `DOWN` ``). */
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
    };

const masterMessageSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('REGISTERED'),
    request_id: z.number().int(),
    agent_id: z.string().min(1),
    master_id: z.string().min(1),
    ping_interval_ms: z.number().positive(),
    max_ping_timeouts: z.number().int().positive(),
  }),
  z.object({ type: z.literal('SHUTDOWN'), message: z.string() }),
  z.object({
    type: z.literal('RUN_TASK'),
    framework_id: z.string().min(1),
    framework: frameworkInfoSchema,
    task: taskInfoSchema,
  }),
  z.object({
    type: z.literal('KILL_TASK'),
    framework_id: z.string().min(1),
    task_id: z.string().min(1),
    kill_policy: killPolicySchema.optional(),
  }),
  z.object({
    type: z.literal('ACKNOWLEDGE'),
    framework_id: z.string().min(1),
    task_id: z.string().min(1),
    uuid: z.string().min(1),
  }),
]);

// ---- Decoding ------------------------------------------------------------------------------

export type Decoded<T> = { ok: true; message: T } | { ok: false; error: string };

function decode<T>(schema: z.ZodType, frame: unknown, isBinary: boolean): Decoded<T> {
  if (isBinary) return { ok: false, error: 'binary frames are not part of the protocol' };
  const text = typeof frame === 'string' ? frame : Buffer.isBuffer(frame) ? frame.toString('utf8') : String(frame);
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `frame is not JSON: ${(e as Error).message}` };
  }
  const r = schema.safeParse(json);
  if (!r.success) {
    const issue = r.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
    return { ok: false, error: `invalid message${where}: ${issue?.message ?? 'does not match the protocol'}` };
  }
  return { ok: true, message: r.data as T };
}

/** Decodes one frame from an agent (on the master). */
export function decodeAgentMessage(frame: unknown, isBinary = false): Decoded<AgentMessage> {
  return decode<AgentMessage>(agentMessageSchema, frame, isBinary);
}

/** Decodes one frame from the master (on the agent). */
export function decodeMasterMessage(frame: unknown, isBinary = false): Decoded<MasterMessage> {
  return decode<MasterMessage>(masterMessageSchema, frame, isBinary);
}

export function encode(message: AgentMessage | MasterMessage): string {
  return JSON.stringify(message);
}

/** Exhaustiveness check for `switch (msg.type)`. */
export function assertNever(x: never): never {
  throw new Error(`unexpected value: ${JSON.stringify(x)}`);
}

/**
 * Mesos v1 JSON shapes, as the operator and scheduler APIs write them (snake_case keys,
 * enum names as strings). Only the fields Drydock uses are typed; the rest are passed through.
 */

export interface IdValue {
  value: string;
}

export type ValueType = 'SCALAR' | 'RANGES' | 'SET' | 'TEXT';

export interface Range {
  begin: number;
  end: number;
}

/** A Resource. Unreserved resources carry no `role` in agent_info and `"role":"*"` in endpoint format. */
export interface Resource {
  name: string;
  type: 'SCALAR' | 'RANGES' | 'SET';
  scalar?: { value: number };
  ranges?: { range: Range[] };
  set?: { item: string[] };
  role?: string;
}

export interface Attribute {
  name: string;
  type: ValueType;
  scalar?: { value: number };
  ranges?: { range: Range[] };
  set?: { item: string[] };
  text?: { value: string };
}

/** Task states with Mesos spellings. */
export type TaskState =
  | 'TASK_STAGING'
  | 'TASK_STARTING'
  | 'TASK_RUNNING'
  | 'TASK_KILLING'
  | 'TASK_FINISHED'
  | 'TASK_FAILED'
  | 'TASK_KILLED'
  | 'TASK_ERROR'
  | 'TASK_LOST'
  | 'TASK_DROPPED'
  | 'TASK_UNREACHABLE'
  | 'TASK_GONE'
  | 'TASK_GONE_BY_OPERATOR'
  | 'TASK_UNKNOWN';

export const TASK_STATES: readonly TaskState[] = [
  'TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLING', 'TASK_FINISHED', 'TASK_FAILED',
  'TASK_KILLED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED', 'TASK_UNREACHABLE', 'TASK_GONE',
  'TASK_GONE_BY_OPERATOR', 'TASK_UNKNOWN',
];

const TERMINAL: ReadonlySet<TaskState> = new Set<TaskState>([
  'TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED',
  'TASK_GONE', 'TASK_GONE_BY_OPERATOR',
]);

/** Key of a task among one agent's tasks (task ids are unique per framework). */
export function taskKey(frameworkId: string, taskId: string): string {
  return `${frameworkId}\u0000${taskId}`;
}

/** Does the framework declare this capability (`PARTITION_AWARE`, `TASK_KILLING_STATE`, ...)? */
export function hasCapability(info: Pick<FrameworkInfo, 'capabilities'>, type: string): boolean {
  return (info.capabilities ?? []).some((c) => c.type === type);
}

/** Terminal states never change again (TASK_UNREACHABLE and TASK_UNKNOWN are not terminal). */
export function isTerminal(state: TaskState): boolean {
  return TERMINAL.has(state);
}

export type TaskStatusSource = 'SOURCE_MASTER' | 'SOURCE_AGENT' | 'SOURCE_EXECUTOR';

/** The reasons Drydock sends. Mesos has more; these are the ones with a meaning here. */
export type TaskStatusReason =
  | 'REASON_COMMAND_EXECUTOR_FAILED'
  /** The agent could not prepare the task (its sandbox or checkpoint) and started nothing: disk pressure. */
  | 'REASON_CONTAINER_LAUNCH_FAILED'
  | 'REASON_EXECUTOR_TERMINATED'
  | 'REASON_TASK_KILLED_DURING_LAUNCH'
  | 'REASON_TASK_INVALID'
  | 'REASON_TASK_UNKNOWN'
  | 'REASON_AGENT_DRAINING'
  | 'REASON_AGENT_REMOVED'
  | 'REASON_AGENT_REMOVED_BY_OPERATOR'
  | 'REASON_AGENT_DISCONNECTED'
  | 'REASON_AGENT_RESTARTED'
  | 'REASON_AGENT_UNKNOWN'
  | 'REASON_RECONCILIATION'
  | 'REASON_INVALID_OFFERS'
  | 'REASON_RESOURCES_UNKNOWN'
  | 'REASON_FRAMEWORK_REMOVED'
  | 'REASON_TASK_GROUP_INVALID'
  /** The run_tasks ACL refused the task's user (issue 13). */
  | 'REASON_TASK_UNAUTHORIZED'
  | 'REASON_TASK_CHECK_STATUS_UPDATED'
  | 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED';

/** CheckInfo.Type / HealthCheck.Type without UNKNOWN (which no valid check has). */
export type CheckType = 'COMMAND' | 'HTTP' | 'TCP';

/**
 * CheckStatusInfo: the result of a task's check (TaskInfo.check), as Mesos' built-in executors
 * report it. The member of the check's type is always present; it is empty when there is no
 * result (no check has completed yet, or the last one timed out or could not run).
 */
export interface CheckStatusInfo {
  type?: CheckType | 'UNKNOWN';
  /** WEXITSTATUS of the check command. */
  command?: { exit_code?: number };
  /** The HTTP status code of the response. */
  http?: { status_code?: number };
  /** Whether the TCP connection succeeded. */
  tcp?: { succeeded?: boolean };
}

export interface TaskStatus {
  task_id: IdValue;
  state: TaskState;
  message?: string;
  source: TaskStatusSource;
  reason?: TaskStatusReason;
  agent_id?: IdValue;
  executor_id?: IdValue;
  /** Seconds since the epoch, a double (Mesos writes TaskStatus.timestamp this way). */
  timestamp: number;
  /** 16 random bytes, base64. Updates without a uuid (master-generated) need no acknowledgement. */
  uuid?: string;
  /** The task's health (TaskInfo.health_check) as of this update; see agent/checks.ts for when it is set. */
  healthy?: boolean;
  /** The latest result of the task's check (TaskInfo.check); see agent/checks.ts for when it is set. */
  check_status?: CheckStatusInfo;
  /** When the agent became unreachable (TASK_UNREACHABLE from the master), exact int64 ns. */
  unreachable_time?: { nanoseconds: bigint };
}

export interface EnvironmentVariable {
  name: string;
  type?: 'VALUE' | 'SECRET' | 'UNKNOWN';
  value?: string;
}

export interface CommandInfo {
  /** Default true: run `value` with `/bin/sh -c`. With false, `value` is the program and `arguments` its argv. */
  shell?: boolean;
  value?: string;
  arguments?: string[];
  environment?: { variables: EnvironmentVariable[] };
  user?: string;
}

export interface DurationInfo {
  nanoseconds: number;
}

export interface KillPolicy {
  grace_period?: DurationInfo;
}

export interface TaskInfo {
  name: string;
  task_id: IdValue;
  agent_id: IdValue;
  resources: Resource[];
  command?: CommandInfo;
  kill_policy?: KillPolicy;
  labels?: { labels: Array<{ key: string; value?: string }> };
  /**
   * A Mesos CheckInfo (shared/proto.ts CHECK_INFO). Unknown here: the agent decodes and
   * validates it again at launch (agent/checks.ts), whoever sent it.
   */
  check?: unknown;
  /** A Mesos HealthCheck (shared/proto.ts HEALTH_CHECK); read like `check`. */
  health_check?: unknown;
}

export interface AgentInfo {
  hostname: string;
  port: number;
  resources: Resource[];
  attributes: Attribute[];
  id?: IdValue;
}

export interface FrameworkInfo {
  user: string;
  name: string;
  id?: IdValue;
  failover_timeout?: number;
  checkpoint?: boolean;
  roles?: string[];
  role?: string;
  hostname?: string;
  principal?: string;
  webui_url?: string;
  capabilities?: Array<{ type: string }>;
  labels?: { labels: Array<{ key: string; value?: string }> };
}

/** A Task as GET_TASKS writes it. */
export interface Task {
  name: string;
  task_id: IdValue;
  framework_id: IdValue;
  agent_id: IdValue;
  state: TaskState;
  resources: Resource[];
  statuses: TaskStatus[];
  status_update_state?: TaskState;
  status_update_uuid?: string;
  kill_policy?: KillPolicy;
  labels?: { labels: Array<{ key: string; value?: string }> };
  /** The user its command runs as (TaskInfo.command.user), when the task set one; view_tasks reads it. */
  user?: string;
}

/** The default kill grace period of Mesos' command executor. */
export const DEFAULT_GRACE_PERIOD_NS = 3_000_000_000;

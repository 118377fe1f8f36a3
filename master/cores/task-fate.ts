/**
 * What happens to an agent's tasks when something happens to the agent, and what a
 * reconciliation answers: Mesos' rules as a pure core. Each function takes the agent's tasks
 * as the master knows them and what the frameworks declared (checkpointing, partition-aware,
 * removed), and returns what to do: the updates the master sends in the agent's place, kills
 * to send, updates to acknowledge on the agent, tombstones to keep. The frameworks-and-offers
 * service (services/frameworks-tasks.ts) carries it out.
 */

import { isTerminal, taskKey, type Task, type TaskState, type TaskStatusReason } from '../../shared/mesos.js';

/** What the decisions read about a task's framework. */
export interface FateFramework {
  /** FrameworkInfo.checkpoint: its tasks outlive an agent restart. */
  checkpoint: boolean;
  /** The PARTITION_AWARE capability: TASK_UNREACHABLE / TASK_GONE_BY_OPERATOR instead of TASK_LOST. */
  partitionAware: boolean;
  /** Torn down or timed out: its tasks are killed wherever they turn up. */
  removed: boolean;
}

/** Looks up a framework; undefined for one the master does not know. */
export type FrameworkLookup = (frameworkId: string) => FateFramework | undefined;

/** An update the master sends in the agent's place (no uuid: nothing to acknowledge). */
export interface MasterUpdate {
  frameworkId: string;
  /** Absent when no agent can be named (a launch on invalid offers). */
  agentId: string | undefined;
  taskId: string;
  state: TaskState;
  reason: TaskStatusReason;
  message: string;
  /** The task ends in the master's records with this update (it moves to completed). */
  completes: boolean;
}

export interface TaskRef {
  frameworkId: string;
  taskId: string;
}

/** What to carry out. Every list may be empty. */
export interface Fate {
  updates: MasterUpdate[];
  /** Tasks to kill on the agent. */
  kills: TaskRef[];
  /** Updates the agent keeps resending that the master consumes itself: acknowledge them on the agent. */
  acks: Array<TaskRef & { uuid: string }>;
  /** Tasks to drop from the agent's record without an update (the master already reported their end). */
  forget: TaskRef[];
  /** Ended tasks to move to completed as they are (their last update will never be acknowledged). */
  complete: TaskRef[];
  /** Tombstones to add: tasks the master declared lost while the agent still has them. */
  tombstones: string[];
}

const none = (): Fate => ({ updates: [], kills: [], acks: [], forget: [], complete: [], tombstones: [] });

/** The key of a tombstone: this agent's task the master already ended. */
export function tombstoneKey(agentId: string, frameworkId: string, taskId: string): string {
  return `${agentId}\u0000${taskKey(frameworkId, taskId)}`;
}

const ref = (t: Task): TaskRef => ({ frameworkId: t.framework_id.value, taskId: t.task_id.value });

/**
 * The agent (re-)registered and reported `reported` (its task map now); `before` is what the
 * master had before the report. Tasks the master had declared lost come back only to be
 * killed (or, if already ended, to have their update acknowledged); known tasks the agent no
 * longer has are lost (it restarted without them; STAGING ones may still be on their way);
 * tasks of removed frameworks are killed.
 */
export function onRegistered(agentId: string, before: readonly Task[], reported: readonly Task[], tombstones: ReadonlySet<string>, frameworkOf: FrameworkLookup): Fate {
  const fate = none();
  const now = new Set<string>();
  for (const t of reported) {
    const key = taskKey(t.framework_id.value, t.task_id.value);
    now.add(key);
    if (tombstones.has(tombstoneKey(agentId, t.framework_id.value, t.task_id.value))) {
      fate.forget.push(ref(t));
      if (!isTerminal(t.state)) fate.kills.push(ref(t));
      else if (t.status_update_uuid !== undefined) fate.acks.push({ ...ref(t), uuid: t.status_update_uuid });
      continue;
    }
    if (frameworkOf(t.framework_id.value)?.removed === true && !isTerminal(t.state)) fate.kills.push(ref(t));
  }
  for (const t of before) {
    if (now.has(taskKey(t.framework_id.value, t.task_id.value)) || isTerminal(t.state) || t.state === 'TASK_STAGING') continue;
    if (tombstones.has(tombstoneKey(agentId, t.framework_id.value, t.task_id.value))) continue;
    fate.updates.push({ ...ref(t), agentId, state: 'TASK_LOST', reason: 'REASON_AGENT_RESTARTED', message: 'Agent restarted without this task', completes: true });
  }
  return fate;
}

/**
 * The agent's session dropped (Mesos §4.4): tasks of frameworks that do not checkpoint are lost
 * at once, and tombstoned so that the agent's later word on them is not taken as news.
 */
export function onDisconnected(agentId: string, tasks: readonly Task[], frameworkOf: FrameworkLookup): Fate {
  const fate = none();
  for (const t of tasks) {
    if (isTerminal(t.state) || frameworkOf(t.framework_id.value)?.checkpoint === true) continue;
    fate.tombstones.push(tombstoneKey(agentId, t.framework_id.value, t.task_id.value));
    fate.updates.push({ ...ref(t), agentId, state: 'TASK_LOST', reason: 'REASON_AGENT_DISCONNECTED', message: 'Agent disconnected', completes: true });
  }
  return fate;
}

/**
 * The agent became unreachable: partition-aware frameworks hear TASK_UNREACHABLE, the others
 * TASK_LOST; the tasks stay known (GET_TASKS `unreachable_tasks`) and come back with the agent.
 */
export function onUnreachable(agentId: string, tasks: readonly Task[], frameworkOf: FrameworkLookup): Fate {
  const fate = none();
  for (const t of tasks) {
    if (isTerminal(t.state)) continue;
    const pa = frameworkOf(t.framework_id.value)?.partitionAware === true;
    fate.updates.push({ ...ref(t), agentId, state: pa ? 'TASK_UNREACHABLE' : 'TASK_LOST', reason: 'REASON_AGENT_REMOVED', message: 'Agent is unreachable', completes: false });
  }
  return fate;
}

/**
 * The agent was removed on purpose (machine DOWN, Mesos `removeSlave`): every live task is
 * TASK_LOST, REASON_AGENT_REMOVED, with `message`, whatever the framework declared.
 */
export function onRemoved(agentId: string, tasks: readonly Task[], message: string): Fate {
  const fate = none();
  for (const t of tasks) {
    if (!isTerminal(t.state)) fate.updates.push({ ...ref(t), agentId, state: 'TASK_LOST', reason: 'REASON_AGENT_REMOVED', message, completes: true });
  }
  return fate;
}

/**
 * The agent refused a RUN_TASK of task `taskId` (it could not decode it, and launched nothing):
 * the task, if the master still has it STAGING on that agent (of any framework: a refusal names
 * only the task), ends TASK_ERROR (REASON_TASK_INVALID, as the master's own refusals of a bad
 * task; no mapping per framework), with the agent's reason; a tombstone keeps a late word from
 * the agent about it from counting.
 */
export function onLaunchRefused(agentId: string, tasks: readonly Task[], taskId: string, reason: string): Fate {
  const fate = none();
  for (const t of tasks) {
    if (t.task_id.value !== taskId || t.state !== 'TASK_STAGING') continue;
    fate.updates.push({ ...ref(t), agentId, state: 'TASK_ERROR', reason: 'REASON_TASK_INVALID', message: `The agent refused the launch: ${reason}`, completes: true });
    fate.tombstones.push(tombstoneKey(agentId, t.framework_id.value, taskId));
  }
  return fate;
}

/**
 * The agent was marked gone (MARK_AGENT_GONE): partition-aware frameworks hear
 * TASK_GONE_BY_OPERATOR (REASON_AGENT_REMOVED_BY_OPERATOR), the others TASK_LOST
 * (REASON_AGENT_REMOVED). Ended tasks whose update was never acknowledged move to completed:
 * the agent will not resend it.
 */
export function onGone(agentId: string, tasks: readonly Task[], frameworkOf: FrameworkLookup): Fate {
  const fate = none();
  for (const t of tasks) {
    if (isTerminal(t.state)) {
      fate.complete.push(ref(t));
      continue;
    }
    const pa = frameworkOf(t.framework_id.value)?.partitionAware === true;
    fate.updates.push({
      ...ref(t),
      agentId,
      state: pa ? 'TASK_GONE_BY_OPERATOR' : 'TASK_LOST',
      reason: pa ? 'REASON_AGENT_REMOVED_BY_OPERATOR' : 'REASON_AGENT_REMOVED',
      message: 'Agent has been marked gone',
      completes: true,
    });
  }
  return fate;
}

/** Where a task asked about in a reconciliation stands, as the master sees it. */
export type ReconcileFinding =
  | { kind: 'KNOWN'; agentId: string; task: Task; agentUnreachable: boolean }
  /** Not known on any agent; `agent` is the phase of the agent the framework named, if it named one. */
  | { kind: 'UNKNOWN'; agentId: string | undefined; agent: 'RECOVERED' | 'UNREACHABLE' | 'OTHER' | undefined };

/**
 * A reconciliation's answer for one task (Mesos `Master::reconcile`): its latest state; for an
 * unreachable agent TASK_UNREACHABLE (or TASK_LOST); for an unknown task TASK_UNKNOWN (or
 * TASK_LOST); nothing while the named agent is recovered and may still report it.
 */
export function reconcileAnswer(frameworkId: string, taskId: string, found: ReconcileFinding, partitionAware: boolean): MasterUpdate | undefined {
  const update = (agentId: string | undefined, state: TaskState, message: string): MasterUpdate => ({ frameworkId, agentId, taskId, state, reason: 'REASON_RECONCILIATION', message, completes: false });
  if (found.kind === 'KNOWN') {
    const unreachable = found.agentUnreachable && !isTerminal(found.task.state);
    if (unreachable) return update(found.agentId, partitionAware ? 'TASK_UNREACHABLE' : 'TASK_LOST', 'Reconciliation: Task is unreachable');
    return update(found.agentId, found.task.state, 'Reconciliation: Latest task state');
  }
  if (found.agent === 'RECOVERED') return undefined;
  if (found.agent === 'UNREACHABLE') return update(found.agentId, partitionAware ? 'TASK_UNREACHABLE' : 'TASK_LOST', 'Reconciliation: Task is unreachable');
  return update(found.agentId, partitionAware ? 'TASK_UNKNOWN' : 'TASK_LOST', 'Reconciliation: Task is unknown');
}

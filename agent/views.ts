/**
 * What a caller of the agent API may see of the tasks on this agent: the master's view rules
 * (shared/visibility.ts), applied to the agent's own answers. A task is viewed by its user: its
 * command's user, else its framework's (`view_tasks`, object `users`), exactly as the master
 * decides it; a container is its task's. Pure: the supervisor hands over each task with its
 * user, the caller's decision function decides.
 */

import type { Task } from '../shared/mesos.js';
import { taskUser, visible, type Approve } from '../shared/visibility.js';

/** GET_TASKS' five lists (Mesos' agent::Response.GetTasks). */
export interface TaskLists<T> {
  pending_tasks: T[];
  queued_tasks: T[];
  launched_tasks: T[];
  terminated_tasks: T[];
  completed_tasks: T[];
}

/** A task and the user view_tasks decides it by (undefined: unknown, only ANY and NONE entries match). */
export interface OwnedTask {
  readonly task: Task;
  readonly user: string | undefined;
}

/**
 * The user a task is viewed as, from what the agent was told at launch and checkpointed with it:
 * the TaskInfo's `command.user`, else the FrameworkInfo's `user` (shared/visibility.ts taskUser).
 */
export function ownerOf(task: { command?: { user?: string | undefined } | undefined }, framework: { user?: string | undefined }): string | undefined {
  return taskUser(task, framework.user);
}

/** The lists as the caller may see them, in order; all of them when `may` is undefined (no ACLs). */
export function visibleTaskLists(lists: TaskLists<OwnedTask>, may: Approve | undefined): TaskLists<Task> {
  const show = (items: readonly OwnedTask[]): Task[] => visibleOwned(items, may).map((o) => o.task);
  return {
    pending_tasks: show(lists.pending_tasks),
    queued_tasks: show(lists.queued_tasks),
    launched_tasks: show(lists.launched_tasks),
    terminated_tasks: show(lists.terminated_tasks),
    completed_tasks: show(lists.completed_tasks),
  };
}

/** The items (tasks, containers) whose user the caller may view; all of them without ACLs. */
export function visibleOwned<T extends { readonly user: string | undefined }>(items: readonly T[], may: Approve | undefined): T[] {
  return visible(items, may, (item) => item.user);
}

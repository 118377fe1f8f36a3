/**
 * What may change between two configurations of a service, and what a change means for running
 * pods (plans.md §7.2): the rules a new target must pass, and which instances must be relaunched
 * to reach it. Pure: two checked specs in, messages or booleans out.
 */
import { taskShape } from './spec-shape.js';
import type { PodSpec, ServiceSpec, TaskSpec } from './spec-types.js';

/**
 * What a new configuration may not change from the target one (plans.md §7.2). Empty: the new
 * one may become the target. Each rule:
 * - `name`: it is the framework's identity; tasks and stored state are found by it.
 * - a pod type's `count` may shrink only when the new spec says `allow-decommission: true` for it
 *   (the SDK's `PodSpecsCannotShrink`): removing instances is a decision, not a typo's side effect.
 * - a pod type may disappear only when the old spec allowed decommission for it, or had count 0
 *   (then there is nothing to remove).
 * - a task's `goal` may not change: the goal says what a stored task state means (a RUNNING
 *   task that exited failed and is recovered; a FINISH or ONCE task that exited 0 is done), so a
 *   change would reinterpret the state of instances already running. Rename the task instead:
 *   the old one goes away with its pods' relaunch and the new one starts from nothing.
 * Placement, resources, commands, env and checks may change: they only need a relaunch.
 */
export function validateUpdate(previous: ServiceSpec, next: ServiceSpec): string[] {
  const errors: string[] = [];
  if (previous.name !== next.name) errors.push(`name cannot change (from ${JSON.stringify(previous.name)} to ${JSON.stringify(next.name)}): it identifies the service and its state`);
  for (const old of previous.pods) {
    const path = `pods.${old.type}`;
    const now = next.pods.find((p) => p.type === old.type);
    if (now === undefined) {
      if (!old.allowDecommission && old.count > 0) errors.push(`${path} cannot be removed: its ${old.count} instances may only be decommissioned when the current configuration has allow-decommission: true`);
      continue;
    }
    if (now.count < old.count && !now.allowDecommission) {
      errors.push(`${path}.count cannot shrink from ${old.count} to ${now.count} unless ${path}.allow-decommission is true`);
    }
    for (const task of old.tasks) {
      const after = now.tasks.find((t) => t.name === task.name);
      if (after !== undefined && after.goal !== task.goal) {
        errors.push(`${path}.tasks.${task.name}.goal cannot change from ${task.goal} to ${after.goal}; give the task a new name instead`);
      }
    }
  }
  return errors;
}

/**
 * Whether an instance launched from `previous` must be relaunched to be at `next`: when its set of
 * tasks changed or any task changed in a way that reaches the process. `count`, `placement` and
 * `allow-decommission` say where and how many, not what runs, so they do not (the SDK's cleanup
 * rewrites the label instead of relaunching for those, plans.md §7.2).
 */
export function podNeedsRelaunch(previous: PodSpec, next: PodSpec): boolean {
  if (previous.type !== next.type || previous.tasks.length !== next.tasks.length) return true;
  return previous.tasks.some((t) => {
    const after = next.tasks.find((n) => n.name === t.name);
    return after === undefined || taskNeedsRelaunch(t, after);
  });
}

/**
 * Whether a task launched from `previous` must be relaunched to be at `next`: every field reaches
 * the process or its supervision (command, resources, env, kill grace, checks, goal, essential).
 * The order of env entries does not.
 */
export function taskNeedsRelaunch(previous: TaskSpec, next: TaskSpec): boolean {
  return JSON.stringify(taskShape(previous, true)) !== JSON.stringify(taskShape(next, true));
}

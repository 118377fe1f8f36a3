/**
 * What a caller may see: the view ACLs' objects and one decision function per action, for the
 * master's read calls and event stream and for the agent's own API (the same rules on both). Pure.
 *
 * As Mesos: a framework is viewed by its user (`view_frameworks`), a task by its own user, else
 * its framework's (`view_tasks`); an agent by what master/acl-objects.ts makes of it (`view_agents`,
 * where Drydock's machine values apply: `rack:r1`, `hostname:web-*`). Something whose object is
 * unknown (a task of a framework long forgotten) is decided as an unknown object: only ANY and
 * NONE entries match it.
 */

import type { AclAction, AclObject } from './acls.js';

/** A decision function of one action for one caller (Access.approver). */
export type Approve = (object: AclObject) => boolean;

/** One caller's view rights, one decision function per action. */
export interface ViewRights {
  readonly frameworks: Approve;
  readonly tasks: Approve;
  readonly agents: Approve;
}

/** What viewRights needs of a caller (the master's Access, the agent's caller): whether ACLs filter, and a decision function per action. */
export interface ViewAccess {
  readonly filters: boolean;
  approver(action: AclAction): Approve;
}

/** The caller's view rights; undefined when nothing is filtered (no ACLs), so callers skip all the work. */
export function viewRights(access: ViewAccess | undefined): ViewRights | undefined {
  if (access === undefined || !access.filters) return undefined;
  return { frameworks: access.approver('view_frameworks'), tasks: access.approver('view_tasks'), agents: access.approver('view_agents') };
}

/** A user name as an ACL object: '' (a generated client's unset string) is unknown. */
function userObject(user: string | undefined): string | undefined {
  return user === undefined || user === '' ? undefined : user;
}

/**
 * The user a task is viewed and run as: its own (Task.user, or a TaskInfo's `command.user`),
 * else its framework's; undefined when neither is known.
 */
export function taskUser(task: { user?: string | undefined; command?: { user?: string | undefined } | undefined }, frameworkUser: string | undefined): string | undefined {
  return userObject(task.user) ?? userObject(task.command?.user) ?? userObject(frameworkUser);
}

/** A framework as view_frameworks sees it: its user. */
export function frameworkUser(info: { user?: string | undefined } | undefined): string | undefined {
  return userObject(info?.user);
}

/** The items the caller may see, in order; all of them when `may` is undefined (no ACLs). */
export function visible<T>(items: readonly T[], may: Approve | undefined, objectOf: (item: T) => AclObject): T[] {
  if (may === undefined) return [...items];
  return items.filter((item) => may(objectOf(item)));
}

/** Whether the caller may see something made of several machines (a maintenance plan): all must be allowed; unknown ones decide as an unknown object. */
export function allVisible(objects: readonly AclObject[] | undefined, may: Approve): boolean {
  if (objects === undefined) return may(undefined);
  for (const o of objects) if (!may(o)) return false;
  return true;
}

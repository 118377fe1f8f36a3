/**
 * What the agent says of itself, its frameworks and their executors, in Mesos' shapes: the
 * legacy `/state` (`/slave(1)/state`) that Mesos' web UI reads for its agent, framework,
 * executor and sandbox pages, and the v1 GET_FRAMEWORKS, GET_EXECUTORS and GET_STATE.
 *
 * Drydock runs command tasks; Mesos runs each command task under a command executor whose id is
 * the task's id, so every task is one executor here (agent/supervisor.ts ExecutorFacts): its
 * `directory` is the task's sandbox, its container the task's, its name Mesos' "Command
 * Executor (Task: ...) (Command: ...)". An executor is live while the agent knows its task
 * (until the terminal update is acknowledged; the ended task is then among its completed
 * tasks, as Mesos lists terminated tasks), and completed after; a framework is active while
 * one of its executors is, completed when all are.
 *
 * What a caller sees follows the master's view rules, as Mesos' agent filters: frameworks by
 * `view_frameworks`, executors by `view_executors`, tasks by `view_tasks` (each by its user:
 * the task's command user, else its framework's), the flags only with `view_flags`. Pure.
 */

import type { DrainConfigWire } from '../shared/drain.js';
import { attributesModel, labelsModel, resourcesModel, resourcesRole, taskModel } from '../shared/legacy-model.js';
import { hasCapability, type Attribute, type FrameworkInfo, type Resource, type TaskInfo } from '../shared/mesos.js';
import { frameworkUser, visible, type Approve } from '../shared/visibility.js';
import type { ExecutorFacts } from './supervisor.js';

type Json = Record<string, unknown>;

/** The agent's own facts, as /state reads them. */
export interface AgentSelf {
  /** Undefined before the first registration ('' in /state, as Mesos' unset id). */
  readonly agentId: string | undefined;
  readonly hostname: string;
  readonly ip: string;
  readonly port: number;
  readonly resources: readonly Resource[];
  readonly attributes: readonly Attribute[];
  readonly capabilities: readonly string[];
  /** When the process started, seconds since the epoch. */
  readonly startSecs: number;
  /** The drain being carried out, and when the agent got it (epoch ms). */
  readonly drain: { readonly config: DrainConfigWire; readonly receivedMs: number } | undefined;
  /** The host of the master it is registered with, if it is. */
  readonly masterHost: string | undefined;
  /** GET_FLAGS' list: name and value. */
  readonly flags: ReadonlyArray<{ readonly name: string; readonly value: string }>;
  /** version, git_tag, build_date, build_time, build_user, as /state prints them. */
  readonly build: Readonly<Record<string, string | number>>;
}

/** One caller's view rights on the agent; an approver left out lets everything through (no ACLs). */
export interface StateRights {
  readonly frameworks?: Approve | undefined;
  readonly executors?: Approve | undefined;
  readonly tasks?: Approve | undefined;
  /** view_flags: whether /state carries the flags. */
  readonly flags: boolean;
}

/** The libprocess id of the agent process, as Mesos' master reports an agent's pid (`slave(1)@ip:port`). */
export const AGENT_PROCESS_ID = 'slave(1)';

/** Mesos' name of a command executor: the task id and the start of its command. */
export function executorName(task: TaskInfo): string {
  const c = task.command;
  let command: string;
  if (c?.shell === false) {
    if (c.value === undefined) command = '(Command: NO EXECUTABLE)';
    else {
      const args = [c.value, ...(c.arguments ?? [])].join(', ');
      command = `(Command: [${args.length > 15 ? `${args.slice(0, 12)}...` : args}])`;
    }
  } else if (c?.value === undefined) command = '(Command: NO COMMAND)';
  else command = `(Command: sh -c '${c.value.length > 15 ? `${c.value.slice(0, 12)}...` : c.value}')`;
  return `Command Executor (Task: ${task.task_id.value}) ${command}`;
}

/** A framework's role when it has one (Mesos' FrameworkInfo.role defaults to `*`). */
function frameworkRole(f: FrameworkInfo): string {
  return f.roles?.[0] ?? f.role ?? '*';
}

/** The executors grouped by framework, in first-seen order; each framework with its latest FrameworkInfo. */
function byFramework(executors: readonly ExecutorFacts[]): Array<{ id: string; info: FrameworkInfo; executors: ExecutorFacts[]; active: boolean }> {
  const groups = new Map<string, { id: string; info: FrameworkInfo; executors: ExecutorFacts[]; active: boolean }>();
  for (const e of executors) {
    let g = groups.get(e.frameworkId);
    if (g === undefined) groups.set(e.frameworkId, (g = { id: e.frameworkId, info: e.framework, executors: [], active: false }));
    // A later launch carries the FrameworkInfo as the framework last updated it.
    if (e.phase !== 'completed' || !g.active) g.info = e.framework;
    g.executors.push(e);
    if (e.phase !== 'completed') g.active = true;
  }
  return [...groups.values()];
}

const allowed = (may: Approve | undefined, user: string | undefined): boolean => may === undefined || may(user);

/** A task of an executor in the legacy model. */
function taskOf(e: ExecutorFacts, agentId: string): Json {
  const t = e.task as TaskInfo & { discovery?: unknown; container?: unknown };
  return taskModel({
    id: t.task_id.value,
    name: t.name,
    frameworkId: e.frameworkId,
    executorId: '',
    agentId,
    state: e.state,
    resources: t.resources,
    role: resourcesRole(t.resources, frameworkRole(e.framework)),
    statuses: e.statuses,
    user: t.command?.user,
    labels: t.labels,
    discovery: t.discovery,
    container: t.container,
    healthCheck: t.health_check,
  });
}

/** An executor in the legacy model: Mesos' ExecutorWriter, its tasks filtered by view_tasks. */
function executorModel(e: ExecutorFacts, agentId: string, rights: StateRights): Json {
  const task = allowed(rights.tasks, e.user) ? [taskOf(e, agentId)] : [];
  const out: Json = {
    id: e.task.task_id.value,
    name: executorName(e.task),
    source: e.task.task_id.value,
    container: e.containerId,
    directory: e.sandbox,
    // What is allocated to it: the task's resources while it runs, nothing once it ended.
    resources: resourcesModel(e.phase === 'live' ? e.task.resources : []),
    role: resourcesRole(e.task.resources, frameworkRole(e.framework)),
  };
  if (e.task.labels !== undefined) out['labels'] = labelsModel(e.task.labels);
  out['tasks'] = e.phase === 'live' ? task : [];
  out['queued_tasks'] = [];
  out['completed_tasks'] = e.phase === 'live' ? [] : task;
  return out;
}

/** A framework in the legacy model: Mesos' FrameworkWriter, its executors filtered by view_executors. */
function frameworkModel(g: { id: string; info: FrameworkInfo; executors: ExecutorFacts[] }, agentId: string, rights: StateRights): Json {
  const f = g.info;
  const out: Json = {
    id: g.id,
    name: f.name,
    user: f.user,
    failover_timeout: f.failover_timeout ?? 0,
    checkpoint: f.checkpoint ?? false,
    hostname: f.hostname ?? '',
  };
  if (f.principal !== undefined) out['principal'] = f.principal;
  // As Mesos: a MULTI_ROLE framework's roles, another's role.
  if (hasCapability(f, 'MULTI_ROLE')) out['roles'] = f.roles ?? [];
  else out['role'] = f.role ?? '*';
  const shown = visible(g.executors, rights.executors, (e) => e.user);
  out['executors'] = shown.filter((e) => e.phase !== 'completed').map((e) => executorModel(e, agentId, rights));
  out['completed_executors'] = shown.filter((e) => e.phase === 'completed').map((e) => executorModel(e, agentId, rights));
  return out;
}

/** Resources as `/state`'s *_full lists write them: the endpoint format, unreserved ones with role `*`. */
function endpointFormat(resources: readonly Resource[]): Json[] {
  return resources.map((r) => ({ ...r, role: r.role ?? '*' }));
}

/** The agent's `/state`: Mesos' agent state endpoint, field for field. */
export function legacyState(self: AgentSelf, executors: readonly ExecutorFacts[], rights: StateRights): Json {
  const agentId = self.agentId ?? '';
  const reserved = new Map<string, Resource[]>();
  const unreserved: Resource[] = [];
  for (const r of self.resources) {
    if (r.role === undefined || r.role === '*') unreserved.push(r);
    else reserved.set(r.role, [...(reserved.get(r.role) ?? []), r]);
  }
  const allocated: Resource[] = executors.filter((e) => e.phase === 'live').flatMap((e) => e.task.resources);
  const byRole = (m: ReadonlyMap<string, Resource[]>, f: (rs: Resource[]) => unknown): Json => Object.fromEntries([...m].map(([role, rs]) => [role, f(rs)]));
  const out: Json = {
    ...self.build,
    start_time: self.startSecs,
    id: agentId,
    pid: `${AGENT_PROCESS_ID}@${self.ip}:${self.port}`,
    hostname: self.hostname,
    capabilities: [...self.capabilities],
  };
  if (self.drain !== undefined) {
    out['drain_config'] = self.drain.config;
    out['estimated_drain_start_time_seconds'] = Math.trunc(self.drain.receivedMs / 1000);
  }
  Object.assign(out, {
    resources: resourcesModel(self.resources),
    reserved_resources: byRole(reserved, resourcesModel),
    unreserved_resources: resourcesModel(unreserved),
    reserved_resources_full: byRole(reserved, endpointFormat),
    unreserved_resources_full: endpointFormat(unreserved),
    // Tasks are allocated unreserved resources here (Drydock's master offers no reservations).
    reserved_resources_allocated: {},
    unreserved_resources_allocated: resourcesModel(allocated),
    resource_providers: [],
    attributes: attributesModel(self.attributes),
  });
  if (self.masterHost !== undefined) out['master_hostname'] = self.masterHost;
  if (rights.flags) out['flags'] = Object.fromEntries(self.flags.map((f) => [f.name, f.value]));
  const groups = byFramework(executors).filter((g) => allowed(rights.frameworks, frameworkUser(g.info)));
  out['frameworks'] = groups.filter((g) => g.active).map((g) => frameworkModel(g, agentId, rights));
  out['completed_frameworks'] = groups.filter((g) => !g.active).map((g) => frameworkModel(g, agentId, rights));
  return out;
}

/** v1 ExecutorInfo of a command executor: what Mesos' agent makes of a command task (its id, name, source; the task's labels, user, environment). */
export function executorInfo(e: ExecutorFacts): Json {
  const t = e.task as TaskInfo & { discovery?: unknown; container?: unknown };
  const out: Json = { executor_id: { value: t.task_id.value }, framework_id: { value: e.frameworkId }, name: executorName(t), source: t.task_id.value };
  // Mesos copies the command's environment and user into its executor's command (the user is
  // what view_executors and access_sandboxes decide by); Drydock has no executor program to name.
  const command: Json = {};
  if (t.command?.environment !== undefined) command['environment'] = t.command.environment;
  if (t.command?.user !== undefined) command['user'] = t.command.user;
  if (Object.keys(command).length > 0) out['command'] = command;
  if (t.container !== undefined) out['container'] = t.container;
  if (t.discovery !== undefined) out['discovery'] = t.discovery;
  if (t.labels !== undefined) out['labels'] = t.labels;
  return out;
}

/** v1 GET_FRAMEWORKS: each framework's FrameworkInfo, active and completed, by view_frameworks. */
export function getFrameworks(executors: readonly ExecutorFacts[], rights: StateRights): Json {
  const groups = byFramework(executors).filter((g) => allowed(rights.frameworks, frameworkUser(g.info)));
  return {
    frameworks: groups.filter((g) => g.active).map((g) => ({ framework_info: g.info })),
    completed_frameworks: groups.filter((g) => !g.active).map((g) => ({ framework_info: g.info })),
  };
}

/** v1 GET_EXECUTORS: the executors of the frameworks the caller may view, by view_executors. */
export function getExecutors(executors: readonly ExecutorFacts[], rights: StateRights): Json {
  const groups = byFramework(executors).filter((g) => allowed(rights.frameworks, frameworkUser(g.info)));
  const shown = groups.flatMap((g) => visible(g.executors, rights.executors, (e) => e.user));
  return {
    executors: shown.filter((e) => e.phase !== 'completed').map((e) => ({ executor_info: executorInfo(e) })),
    completed_executors: shown.filter((e) => e.phase === 'completed').map((e) => ({ executor_info: executorInfo(e) })),
  };
}

/**
 * Offers and what a framework does with them: the outstanding offer record, its Mesos JSON,
 * and the pure validation of an ACCEPT (offers + task infos -> launches and per-task errors),
 * after Mesos' `validation::offer` and `validation::task` in `src/master/validation.cpp`.
 */

import type { KillPolicy, Resource, TaskInfo } from '../../shared/mesos.js';
import { addResources, containsResources, subtractResources } from '../../shared/resources.js';

/** An outstanding offer. */
export interface Offer {
  id: string;
  frameworkId: string;
  agentId: string;
  resources: Resource[];
}

/** Where an agent is, for the offer's `hostname` and `url`. */
export interface OfferAgentAddress {
  hostname: string;
  ip: string;
  port: number;
  attributes: unknown[];
}

/**
 * The Offer JSON of an OFFERS event and GET_FRAMEWORKS `offers`. As Mesos' `Master::offer`:
 * `allocation_info` (the offer's and each resource's) only for MULTI_ROLE frameworks, whose
 * role here is always `*`; the others never see it. Empty repeated fields are left out.
 */
export function offerJson(o: Offer, agent: OfferAgentAddress, multiRole: boolean): Record<string, unknown> {
  const j: Record<string, unknown> = {
    id: { value: o.id },
    framework_id: { value: o.frameworkId },
    agent_id: { value: o.agentId },
    hostname: agent.hostname,
    url: { scheme: 'http', address: { hostname: agent.hostname, ip: agent.ip, port: agent.port }, path: '/slave(1)' },
    resources: o.resources.map((r) => (multiRole ? { ...r, role: r.role ?? '*', allocation_info: { role: '*' } } : { ...r, role: r.role ?? '*' })),
  };
  if (agent.attributes.length > 0) j['attributes'] = agent.attributes;
  if (multiRole) j['allocation_info'] = { role: '*' };
  return j;
}

/** Resources as the master keeps them: no allocation_info, no `role:"*"` (unreserved). */
export function normalizeResources(resources: readonly Resource[]): Resource[] {
  return resources.map((r) => {
    const c: Resource = { name: r.name, type: r.type };
    if (r.scalar !== undefined) c.scalar = { value: r.scalar.value };
    if (r.ranges !== undefined) c.ranges = { range: r.ranges.range.map((x) => ({ begin: x.begin, end: x.end })) };
    if (r.set !== undefined) c.set = { item: [...r.set.item] };
    if (r.role !== undefined && r.role !== '*') c.role = r.role;
    return c;
  });
}

/** What the ACCEPT validation needs. */
export interface AcceptInput {
  frameworkId: string;
  offerIds: readonly string[];
  /** Every outstanding offer. */
  offers: ReadonlyMap<string, Offer>;
  /** The LAUNCH operations' task infos, as sent (unchecked JSON). */
  taskInfos: readonly unknown[];
  /** Ids of the framework's tasks the master knows and that are not completed. */
  liveTaskIds: ReadonlySet<string>;
}

/** One task that will not run, and why (TASK_ERROR, REASON_TASK_INVALID). */
export interface TaskRejection {
  taskId: string;
  message: string;
}

export type AcceptPlan =
  | {
      kind: 'LAUNCH';
      agentId: string;
      /** The offers consumed. */
      offerIds: string[];
      /** Everything offered, and what is left once the launches are taken out. */
      offered: Resource[];
      unused: Resource[];
      launches: TaskInfo[];
      rejected: TaskRejection[];
    }
  | {
      /** Every task is lost/dropped with REASON_INVALID_OFFERS; the valid offers among them go back to the pool. */
      kind: 'INVALID_OFFERS';
      message: string;
      /** Offers of this framework named in the call, still to be removed (their resources recovered). */
      validOfferIds: string[];
      taskIds: string[];
    };

function taskIdOf(raw: unknown): string {
  const v = (raw as { task_id?: { value?: unknown } } | null)?.task_id?.value;
  return typeof v === 'string' ? v : '';
}

function isResource(r: unknown): r is Resource {
  if (typeof r !== 'object' || r === null) return false;
  const x = r as Record<string, unknown>;
  if (typeof x['name'] !== 'string' || x['name'] === '') return false;
  if (x['type'] === 'SCALAR') return typeof (x['scalar'] as { value?: unknown } | undefined)?.value === 'number';
  if (x['type'] === 'RANGES') {
    const range = (x['ranges'] as { range?: unknown } | undefined)?.range;
    return Array.isArray(range) && range.every((g) => Number.isInteger((g as Record<string, unknown>)?.['begin']) && Number.isInteger((g as Record<string, unknown>)?.['end']));
  }
  if (x['type'] === 'SET') {
    const item = (x['set'] as { item?: unknown } | undefined)?.item;
    return Array.isArray(item) && item.every((i) => typeof i === 'string');
  }
  return false;
}

/** Checks the offers of an ACCEPT (Mesos `validation::offer::validate`). Undefined when they are fine. */
function checkOffers(input: AcceptInput): string | undefined {
  if (input.offerIds.length === 0) return 'No offers specified';
  const seen = new Set<string>();
  let agentId: string | undefined;
  for (const id of input.offerIds) {
    if (seen.has(id)) return `Duplicate offer ${id} in offer list`;
    seen.add(id);
    const o = input.offers.get(id);
    if (o === undefined) return `Offer ${id} is no longer valid`;
    if (o.frameworkId !== input.frameworkId) return `Offer ${id} has invalid framework ${o.frameworkId} while framework ${input.frameworkId} is expected`;
    if (agentId !== undefined && o.agentId !== agentId) return `Aggregated offers must belong to one single agent but offer ${id} uses agent ${o.agentId} and agent ${agentId}`;
    agentId = o.agentId;
  }
  return undefined;
}

/** Checks one task info against the agent and what is left of the offers. Returns the problem, or the task. */
function checkTask(raw: unknown, agentId: string, left: readonly Resource[], taken: ReadonlySet<string>, live: ReadonlySet<string>): { ok: true; task: TaskInfo } | { ok: false; message: string } {
  if (typeof raw !== 'object' || raw === null) return { ok: false, message: 'Task info is not an object' };
  const t = raw as Record<string, unknown>;
  const taskId = taskIdOf(raw);
  if (taskId === '') return { ok: false, message: "Task ID must not be empty" };
  if (taken.has(taskId)) return { ok: false, message: `Task ID '${taskId}' is duplicated in this call` };
  if (live.has(taskId)) return { ok: false, message: `Task has duplicate ID: ${taskId}` };
  const agent = (t['agent_id'] as { value?: unknown } | undefined)?.value;
  if (agent !== agentId) return { ok: false, message: `Task uses agent ${typeof agent === 'string' ? agent : '(none)'} while the offers are for agent ${agentId}` };
  const resources = t['resources'];
  if (!Array.isArray(resources) || !resources.every(isResource)) return { ok: false, message: 'Task resources are missing or malformed' };
  const normalized = normalizeResources(resources);
  if (!containsResources(left, normalized)) return { ok: false, message: `Task uses more resources than offered (or left by earlier tasks in this call)` };
  const command = t['command'] as { value?: unknown; shell?: unknown; arguments?: unknown } | undefined;
  if (command === undefined || typeof command !== 'object' || command === null) return { ok: false, message: "Task must set 'command' (Drydock runs commands only: no executors, no containers)" };
  if (typeof command.value !== 'string' || command.value === '') return { ok: false, message: "Task's 'command.value' must be present" };
  if (command.arguments !== undefined && (!Array.isArray(command.arguments) || !command.arguments.every((a) => typeof a === 'string'))) {
    return { ok: false, message: "Task's 'command.arguments' must be strings" };
  }
  const name = t['name'];
  const task: TaskInfo = {
    ...(t as unknown as TaskInfo),
    name: typeof name === 'string' ? name : '',
    task_id: { value: taskId },
    agent_id: { value: agentId },
    resources: normalized,
  };
  if (task.kill_policy !== undefined) task.kill_policy = clampKillPolicy(task.kill_policy);
  return { ok: true, task };
}

/**
 * A kill policy as the agent takes it: a negative grace period means "at once" in Mesos (its
 * timer fires immediately), so it is 0 here; the agent wire carries no negative durations.
 */
export function clampKillPolicy(p: KillPolicy): KillPolicy {
  const ns = p.grace_period?.nanoseconds;
  return ns !== undefined && ns < 0 ? { ...p, grace_period: { nanoseconds: 0 } } : p;
}

/** Decides an ACCEPT with LAUNCH operations: pure. Other tasks are never disturbed. */
export function planAccept(input: AcceptInput): AcceptPlan {
  const offerProblem = checkOffers(input);
  if (offerProblem !== undefined) {
    const validOfferIds = input.offerIds.filter((id) => input.offers.get(id)?.frameworkId === input.frameworkId);
    return { kind: 'INVALID_OFFERS', message: `Task launched with invalid offers: ${offerProblem}`, validOfferIds: [...new Set(validOfferIds)], taskIds: input.taskInfos.map(taskIdOf) };
  }
  const offers = input.offerIds.map((id) => input.offers.get(id) as Offer);
  const agentId = (offers[0] as Offer).agentId;
  let offered: Resource[] = [];
  for (const o of offers) offered = addResources(offered, o.resources);
  let left = offered;
  const launches: TaskInfo[] = [];
  const rejected: TaskRejection[] = [];
  const taken = new Set<string>();
  for (const raw of input.taskInfos) {
    const r = checkTask(raw, agentId, left, taken, input.liveTaskIds);
    if (!r.ok) {
      rejected.push({ taskId: taskIdOf(raw), message: r.message });
      continue;
    }
    taken.add(r.task.task_id.value);
    left = subtractResources(left, r.task.resources);
    launches.push(r.task);
  }
  return { kind: 'LAUNCH', agentId, offerIds: [...input.offerIds], offered, unused: left, launches, rejected };
}

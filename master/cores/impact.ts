/**
 * What taking agents out would do, decided before anything is done (the impact preview,
 * `POST /drydock/v1/preview`): the tasks that would be killed, the service pods that would lose
 * their last running instance, and whether the agents that remain could hold what is displaced.
 * A pure function of the agents as plain data; the edge (api/preview.ts) builds them from the
 * queries port and writes the answer.
 *
 * The placement is an estimate, stated as such: every live task of a vacated agent is taken as
 * launched again elsewhere with the resources it has now (a pod instance's tasks together, on one
 * agent, as drydock-scheduler places them), best-fit decreasing over the free resources (total
 * minus what live tasks use) of the agents that take new tasks. Scalars (cpus, mem, disk, gpus)
 * are compared by amount, ranges (ports) by how many values are free: a relaunch gets new ports.
 * Roles, attributes, placement constraints and the frameworks' own choices are not modelled.
 */

import { isTerminal, type Resource, type TaskState } from '../../shared/mesos.js';
import { podOfTask, type LabelsJson } from '../../shared/pod-labels.js';
import { subtractResources, sumResources } from '../../shared/resources.js';

/** A task on an agent, as the preview reads it. */
export interface ImpactTask {
  readonly frameworkId: string;
  readonly taskId: string;
  readonly name: string;
  readonly state: TaskState;
  readonly resources: readonly Resource[];
  readonly labels?: LabelsJson | undefined;
}

/** An agent, as the preview reads it. */
export interface ImpactAgent {
  readonly id: string;
  readonly hostname: string;
  /** Registered now (not recovered after a restart, not unreachable). */
  readonly registered: boolean;
  readonly connected: boolean;
  readonly deactivated: boolean;
  /** Has a drain (DRAINING or DRAINED): its tasks are already going. */
  readonly draining: boolean;
  /** Its machine is DOWN. */
  readonly down: boolean;
  readonly total: readonly Resource[];
  readonly tasks: readonly ImpactTask[];
}

/** A task the action would kill. */
export interface KilledTask {
  readonly agentId: string;
  readonly hostname: string;
  readonly frameworkId: string;
  readonly taskId: string;
  readonly name: string;
  readonly state: TaskState;
}

/** A pod type of a framework whose every running instance is on the vacated agents. */
export interface PodLoss {
  readonly frameworkId: string;
  readonly podType: string;
  /** Its running instances the action would stop (`hello-0`), sorted. */
  readonly instances: readonly string[];
}

/** One resource over the whole displacement: what the displaced tasks use, what the remaining agents have free. */
export interface ResourceTotal {
  readonly name: string;
  readonly needed: number;
  readonly free: number;
  readonly enough: boolean;
}

/** Something displaced that found no agent: a pod instance's tasks, or one task. */
export interface Unplaced {
  readonly frameworkId: string;
  /** `hello-0`, or the task's name. */
  readonly what: string;
  readonly taskIds: readonly string[];
  /** By resource name (`ports`: how many). */
  readonly needs: Readonly<Record<string, number>>;
  /** The resources that failed it (`cpus`), or `agents` when no agent remains. */
  readonly constraints: readonly string[];
  readonly reason: string;
}

/** Whether the agents that remain could hold what is displaced. */
export interface Capacity {
  readonly fits: boolean;
  /** Agents that take new tasks and are not vacated. */
  readonly agents: number;
  /** Per resource the displaced tasks use, in order cpus, mem, disk, ports, then by name. */
  readonly resources: readonly ResourceTotal[];
  readonly unplaced: readonly Unplaced[];
  /** Every constraint that fails, over the totals and the unplaced items, in the same order. */
  readonly failing: readonly string[];
}

export interface Impact {
  /** Live tasks of the vacated agents, by framework, then hostname, then name. */
  readonly killed: readonly KilledTask[];
  readonly pods: readonly PodLoss[];
  readonly capacity: Capacity;
}

/** Whether new tasks may land on an agent: registered, connected, not deactivated or draining, its machine not DOWN. */
export function takesTasks(a: ImpactAgent): boolean {
  return a.registered && a.connected && !a.deactivated && !a.draining && !a.down;
}

/** Where a running pod instance still counts as running after the action: a registered agent not vacated and not already draining. */
function keepsRunning(a: ImpactAgent, vacated: ReadonlySet<string>): boolean {
  return a.registered && !a.draining && !vacated.has(a.id);
}

const live = (t: ImpactTask): boolean => !isTerminal(t.state);

/** What the action does: `vacated` are the agent ids it takes out (drained, or shut down by DOWN). */
export function impactOf(agents: readonly ImpactAgent[], vacated: ReadonlySet<string>): Impact {
  const killed: KilledTask[] = [];
  for (const a of agents) {
    if (!vacated.has(a.id)) continue;
    for (const t of a.tasks) if (live(t)) killed.push({ agentId: a.id, hostname: a.hostname, frameworkId: t.frameworkId, taskId: t.taskId, name: t.name, state: t.state });
  }
  killed.sort((x, y) => cmp(x.frameworkId, y.frameworkId) || cmp(x.hostname, y.hostname) || cmp(x.name, y.name) || cmp(x.taskId, y.taskId));
  return { killed, pods: podLosses(agents, vacated), capacity: capacity(agents, vacated) };
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

// ---- Pods ------------------------------------------------------------------------------------------

/** Pod types whose running instances are all on vacated agents (shared/pod-labels.ts names them). */
function podLosses(agents: readonly ImpactAgent[], vacated: ReadonlySet<string>): PodLoss[] {
  const going = new Map<string, { frameworkId: string; podType: string; instances: Set<string> }>();
  const staying = new Set<string>();
  for (const a of agents) {
    const leaves = vacated.has(a.id);
    const stays = keepsRunning(a, vacated);
    if (!leaves && !stays) continue;
    for (const t of a.tasks) {
      if (t.state !== 'TASK_RUNNING') continue;
      const pod = podOfTask(t.name, t.labels);
      if (pod === undefined) continue;
      const key = `${t.frameworkId}\u0000${pod.type}`;
      if (stays) staying.add(key);
      else {
        let g = going.get(key);
        if (g === undefined) going.set(key, (g = { frameworkId: t.frameworkId, podType: pod.type, instances: new Set() }));
        g.instances.add(pod.instance);
      }
    }
  }
  return [...going.entries()]
    .filter(([key]) => !staying.has(key))
    .map(([, g]) => ({ frameworkId: g.frameworkId, podType: g.podType, instances: [...g.instances].sort() }))
    .sort((x, y) => cmp(x.frameworkId, y.frameworkId) || cmp(x.podType, y.podType));
}

// ---- Capacity ---------------------------------------------------------------------------------------

/** Resource amounts by name: scalars by value, ranges by how many values they hold. */
type Amounts = Map<string, number>;

function amounts(resources: readonly Resource[]): Amounts {
  const out: Amounts = new Map();
  for (const r of resources) {
    let n: number;
    if (r.type === 'SCALAR') n = r.scalar?.value ?? 0;
    else if (r.type === 'RANGES') n = (r.ranges?.range ?? []).reduce((s, x) => s + (x.end - x.begin + 1), 0);
    else continue;
    if (n > 0) out.set(r.name, (out.get(r.name) ?? 0) + n);
  }
  return out;
}

const round3 = (n: number): number => Math.round(n * 1000) / 1000;
/** Floating sums of 0.1 cpus drift; something that fits on paper must not be refused by 1e-12. */
const EPSILON = 1e-9;

/** The order resources are shown in: the four everyone has, then the rest by name. */
function resourceOrder(a: string, b: string): number {
  const known = ['cpus', 'mem', 'disk', 'ports'];
  const ia = known.indexOf(a);
  const ib = known.indexOf(b);
  if (ia !== -1 || ib !== -1) return (ia === -1 ? known.length : ia) - (ib === -1 ? known.length : ib);
  return cmp(a, b);
}

/** Something to place: a pod instance's live tasks together, or one task. */
interface Item {
  readonly frameworkId: string;
  readonly what: string;
  readonly taskIds: string[];
  readonly needs: Amounts;
}

/** A receiving agent and what it has free. */
interface Bin {
  readonly hostname: string;
  readonly free: Amounts;
}

function capacity(agents: readonly ImpactAgent[], vacated: ReadonlySet<string>): Capacity {
  // What is displaced: each vacated agent's live tasks, a pod instance's tasks as one item.
  const items: Item[] = [];
  for (const a of agents) {
    if (!vacated.has(a.id)) continue;
    const byInstance = new Map<string, Item>();
    for (const t of a.tasks) {
      if (!live(t)) continue;
      const pod = podOfTask(t.name, t.labels);
      const key = pod === undefined ? undefined : `${t.frameworkId}\u0000${pod.instance}`;
      let item = key === undefined ? undefined : byInstance.get(key);
      if (item === undefined) {
        item = { frameworkId: t.frameworkId, what: pod?.instance ?? t.name, taskIds: [], needs: new Map() };
        items.push(item);
        if (key !== undefined) byInstance.set(key, item);
      }
      item.taskIds.push(t.taskId);
      for (const [name, n] of amounts(t.resources)) item.needs.set(name, (item.needs.get(name) ?? 0) + n);
    }
  }
  // Where it could go: agents that take tasks and are not vacated, with what their live tasks leave free.
  const bins: Bin[] = agents
    .filter((a) => takesTasks(a) && !vacated.has(a.id))
    .map((a) => ({ hostname: a.hostname, free: amounts(subtractResources(a.total, sumResources(a.tasks.filter(live).map((t) => t.resources)))) }))
    .sort((x, y) => cmp(x.hostname, y.hostname));

  const names = new Set<string>();
  for (const i of items) for (const n of i.needs.keys()) names.add(n);
  const ordered = [...names].sort(resourceOrder);
  const resources: ResourceTotal[] = ordered.map((name) => {
    const needed = round3(items.reduce((s, i) => s + (i.needs.get(name) ?? 0), 0));
    const free = round3(bins.reduce((s, b) => s + (b.free.get(name) ?? 0), 0));
    return { name, needed, free, enough: needed <= free + EPSILON };
  });

  // Best-fit decreasing: the largest first, each to the agent it leaves least cpus (then mem) on.
  const size = (i: Item): [number, number] => [i.needs.get('cpus') ?? 0, i.needs.get('mem') ?? 0];
  const sorted = [...items].sort((x, y) => size(y)[0] - size(x)[0] || size(y)[1] - size(x)[1] || cmp(x.what, y.what));
  const unplaced: Unplaced[] = [];
  for (const item of sorted) {
    let best: Bin | undefined;
    let bestLeft: [number, number] = [Infinity, Infinity];
    for (const b of bins) {
      if (![...item.needs].every(([n, v]) => (b.free.get(n) ?? 0) + EPSILON >= v)) continue;
      const left: [number, number] = [(b.free.get('cpus') ?? 0) - (item.needs.get('cpus') ?? 0), (b.free.get('mem') ?? 0) - (item.needs.get('mem') ?? 0)];
      if (left[0] < bestLeft[0] - EPSILON || (Math.abs(left[0] - bestLeft[0]) <= EPSILON && left[1] < bestLeft[1])) {
        best = b;
        bestLeft = left;
      }
    }
    if (best !== undefined) {
      for (const [n, v] of item.needs) best.free.set(n, (best.free.get(n) ?? 0) - v);
      continue;
    }
    unplaced.push(whyUnplaced(item, bins));
  }
  unplaced.sort((x, y) => cmp(x.frameworkId, y.frameworkId) || cmp(x.what, y.what));

  const failing = new Set<string>();
  for (const r of resources) if (!r.enough) failing.add(r.name);
  for (const u of unplaced) for (const c of u.constraints) failing.add(c);
  return { fits: unplaced.length === 0, agents: bins.length, resources, unplaced, failing: [...failing].sort(resourceOrder) };
}

/** Why nothing took an item, from what the agents have left once the larger items were placed. */
function whyUnplaced(item: Item, bins: readonly Bin[]): Unplaced {
  const needs = Object.fromEntries([...item.needs].sort(([a], [b]) => resourceOrder(a, b)).map(([n, v]) => [n, round3(v)]));
  const base = { frameworkId: item.frameworkId, what: item.what, taskIds: [...item.taskIds].sort(), needs };
  if (bins.length === 0) return { ...base, constraints: ['agents'], reason: 'no agent remains that takes new tasks' };
  const short: string[] = [];
  const constraints: string[] = [];
  for (const [name, v] of [...item.needs].sort(([a], [b]) => resourceOrder(a, b))) {
    const most = Math.max(...bins.map((b) => b.free.get(name) ?? 0));
    if (v > most + EPSILON) {
      constraints.push(name);
      short.push(`${name}: needs ${round3(v)}, at most ${round3(Math.max(0, most))} free on one agent`);
    }
  }
  if (short.length > 0) return { ...base, constraints, reason: short.join('; ') };
  const all = Object.entries(needs).map(([n, v]) => `${n} ${v}`).join(', ');
  return { ...base, constraints: Object.keys(needs), reason: `no remaining agent has ${all} free at once` };
}

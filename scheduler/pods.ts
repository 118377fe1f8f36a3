/**
 * Pods as the scheduler reasons about them, as pure functions: instance and task names, the
 * TaskInfo a task is launched with, whether a task is at its goal, and where a pod may go
 * (placement, with maintenance: an agent whose offer carries an unavailability is the last
 * resort, and then the one whose window starts latest).
 */
import { randomUUID } from 'node:crypto';
import type { Resource, TaskInfo, TaskState, TaskStatus } from '../shared/mesos.js';
import { isTerminal } from '../shared/mesos.js';
import { POD_INDEX_LABEL, POD_TYPE_LABEL, TASK_TYPE_LABEL } from '../shared/pod-labels.js';
import type { PodSpec, TaskSpec } from './spec-types.js';
import type { TaskRecord } from './state.js';

/** The label every task carries with the configuration it was launched from (plans.md §7.2). */
export const TARGET_CONFIGURATION_LABEL = 'target_configuration';

export const instanceName = (podType: string, index: number): string => `${podType}-${index}`;
export const taskName = (podType: string, index: number, task: string): string => `${podType}-${index}-${task}`;

/** A step's name as the SDK writes it: `<pod>-<index>:[task1, task2]`. */
export const stepName = (podType: string, index: number, tasks: readonly string[]): string => `${instanceName(podType, index)}:[${tasks.join(', ')}]`;

/** A fresh task id: the task's name, two underscores, a UUID (the SDK's form). */
export const newTaskId = (name: string): string => `${name}__${randomUUID()}`;

/** Splits `hello-0` into its pod type and index, given the pod types a spec knows. */
export function parseInstance(name: string, podTypes: readonly string[]): { podType: string; index: number } | undefined {
  const m = /^(.+)-(0|[1-9][0-9]{0,8})$/.exec(name);
  if (m === null || !podTypes.includes(m[1] as string)) return undefined;
  return { podType: m[1] as string, index: Number(m[2]) };
}

/** A task's last state, or undefined when nothing was heard since the launch. */
export const stateOf = (t: TaskRecord): TaskState | undefined => t.status?.state;

/** Not known to have ended: launched and not yet terminal. */
export function isLive(t: TaskRecord): boolean {
  const s = stateOf(t);
  return s === undefined || !isTerminal(s);
}

/**
 * At its goal: RUNNING (and ready, when it has a readiness check) for goal RUNNING; exited 0 for
 * FINISH and ONCE.
 */
export function atGoal(t: TaskRecord, spec: TaskSpec): boolean {
  const s = stateOf(t);
  if (spec.goal === 'RUNNING') return s === 'TASK_RUNNING' && (spec.readinessCheck === undefined || t.ready);
  return s === 'TASK_FINISHED';
}

/** A status update's readiness verdict: the check's exit code when it carries one. */
export function readinessOf(status: TaskStatus): boolean | undefined {
  const check = (status as { check_status?: { command?: { exit_code?: unknown } } }).check_status;
  if (check === undefined) return undefined;
  return check.command?.exit_code === 0;
}

/** An offer as the scheduler holds it, with what is left of it after launches planned in this cycle. */
export interface HeldOffer {
  readonly id: string;
  readonly agentId: string;
  readonly hostname: string;
  /** Start of the agent's maintenance window (ns since the epoch), when the offer carries one. */
  readonly unavailableFromNs: bigint | undefined;
  readonly resources: readonly Resource[];
  cpus: number;
  memMb: number;
  readonly receivedAtMs: number;
}

/** What a pod instance (or some of its tasks) needs of one agent. */
export interface PlacementNeed {
  readonly cpus: number;
  readonly memMb: number;
  /** hostname:UNIQUE: hosts that already run another instance of the pod type. */
  readonly avoidHosts: ReadonlySet<string>;
  /** The instance already has live tasks there: its other tasks must join them. */
  readonly agentId: string | undefined;
  /** Never these agents (the one being vacated, or the one a `replace` moves away from). */
  readonly excludeAgents: ReadonlySet<string>;
  /** Where the instance ran before, for a relaunch in place (a config change, a restart), when it fits. */
  readonly preferAgent?: string | undefined;
}

export type Placement =
  | { readonly ok: true; readonly offer: HeldOffer }
  | { readonly ok: false; readonly reason: string };

/** Floating sums of 0.1 cpus drift; a task that fits on paper must not be refused by 1e-12. */
const EPSILON = 1e-9;

/**
 * The offer to launch on. Offers without an unavailability come first; among offers with one,
 * the window that starts latest. Then the agent the instance ran on (a relaunch in place keeps
 * its sandbox's neighbourhood and the operator's picture of where things run); then the agent
 * with most cpus left, so pods spread.
 */
export function choosePlacement(need: PlacementNeed, offers: readonly HeldOffer[]): Placement {
  const fitting = offers.filter((o) =>
    !need.excludeAgents.has(o.agentId) &&
    (need.agentId === undefined || o.agentId === need.agentId) &&
    !need.avoidHosts.has(o.hostname) &&
    o.cpus + EPSILON >= need.cpus && o.memMb + EPSILON >= need.memMb);
  const rank = (o: HeldOffer): [number, bigint, number, number] => [o.unavailableFromNs === undefined ? 0 : 1, -(o.unavailableFromNs ?? 0n), o.agentId === need.preferAgent ? 0 : 1, -o.cpus];
  fitting.sort((a, b) => {
    const [a0, a1, a2, a3] = rank(a);
    const [b0, b1, b2, b3] = rank(b);
    return a0 - b0 || (a1 < b1 ? -1 : a1 > b1 ? 1 : 0) || a2 - b2 || a3 - b3 || a.hostname.localeCompare(b.hostname);
  });
  const best = fitting[0];
  if (best !== undefined) return { ok: true, offer: best };
  const what = `cpus ${round(need.cpus)}, mem ${round(need.memMb)} MB`;
  if (need.agentId !== undefined) return { ok: false, reason: `waiting for an offer of ${what} from agent ${need.agentId}, where the pod's other tasks run` };
  const rules: string[] = [];
  if (need.avoidHosts.size > 0) rules.push(`hostname:UNIQUE rules out ${[...need.avoidHosts].sort().join(', ')}`);
  if (need.excludeAgents.size > 0) rules.push(`not on ${[...need.excludeAgents].sort().join(', ')}`);
  return { ok: false, reason: `no offer fits ${what}${rules.length > 0 ? ` (${rules.join('; ')})` : ''}` };
}

const round = (n: number): string => String(Math.round(n * 1000) / 1000);

/** What a set of tasks asks of one agent. */
export function demand(tasks: readonly TaskSpec[]): { cpus: number; memMb: number } {
  return { cpus: tasks.reduce((s, t) => s + t.cpus, 0), memMb: tasks.reduce((s, t) => s + t.memoryMb, 0) };
}

/** A scalar resource shaped like the offer's (same role, no allocation info beyond what it had). */
function scalar(offer: HeldOffer, name: string, value: number): Resource {
  const src = offer.resources.find((r) => r.name === name && r.type === 'SCALAR');
  const r: Resource = { name, type: 'SCALAR', scalar: { value } };
  if (src?.role !== undefined) r.role = src.role;
  const alloc = (src as { allocation_info?: unknown } | undefined)?.allocation_info;
  if (alloc !== undefined) (r as { allocation_info?: unknown }).allocation_info = alloc;
  return r;
}

export interface LaunchContext {
  readonly serviceName: string;
  readonly frameworkName: string;
  readonly configId: string;
  readonly pod: PodSpec;
  readonly index: number;
  /** Plan parameters (`POST /v1/plans/<plan>/start`), added to the task's environment. */
  readonly parameters: Readonly<Record<string, string>>;
}

/**
 * The TaskInfo of one task: its command with the spec's environment, the plan's parameters and
 * the SDK's standard variables; its kill grace period; the readiness check as a Mesos check and
 * the health check as a Mesos health check (the agent runs both); labels naming its config.
 */
export function taskInfo(ctx: LaunchContext, task: TaskSpec, offer: HeldOffer, taskId: string): TaskInfo {
  const name = taskName(ctx.pod.type, ctx.index, task.name);
  const env: Record<string, string> = {
    ...task.env,
    ...ctx.parameters,
    TASK_NAME: name,
    POD_INSTANCE_INDEX: String(ctx.index),
    FRAMEWORK_NAME: ctx.frameworkName,
    SERVICE_NAME: ctx.serviceName,
  };
  const info: TaskInfo & Record<string, unknown> = {
    name,
    task_id: { value: taskId },
    agent_id: { value: offer.agentId },
    resources: [scalar(offer, 'cpus', task.cpus), scalar(offer, 'mem', task.memoryMb)],
    command: { shell: true, value: task.cmd, environment: { variables: Object.entries(env).map(([n, value]) => ({ name: n, type: 'VALUE' as const, value })) } },
    kill_policy: { grace_period: { nanoseconds: Math.round(task.killGracePeriodS * 1e9) } },
    labels: {
      labels: [
        { key: TARGET_CONFIGURATION_LABEL, value: ctx.configId },
        // The pod labels (shared/pod-labels.ts): the master's impact preview reads which pod type
        // and instance a task is, to say which service would lose its last running instance.
        { key: POD_TYPE_LABEL, value: ctx.pod.type },
        { key: TASK_TYPE_LABEL, value: task.name },
        { key: POD_INDEX_LABEL, value: String(ctx.index) },
        { key: 'goal', value: task.goal },
        { key: 'offer_hostname', value: offer.hostname },
      ],
    },
  };
  if (task.readinessCheck !== undefined) {
    const c = task.readinessCheck;
    info['check'] = { type: 'COMMAND', command: { command: { shell: true, value: c.cmd } }, delay_seconds: c.delayS, interval_seconds: c.intervalS, timeout_seconds: c.timeoutS };
  }
  if (task.healthCheck !== undefined) {
    const h = task.healthCheck;
    info['health_check'] = {
      type: 'COMMAND', command: { shell: true, value: h.cmd }, delay_seconds: h.delayS, interval_seconds: h.intervalS,
      timeout_seconds: h.timeoutS, grace_period_seconds: h.gracePeriodS, consecutive_failures: h.maxConsecutiveFailures,
    };
  }
  return info;
}

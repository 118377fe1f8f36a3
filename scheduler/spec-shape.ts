/**
 * The shape of a service spec as data, and the one decoder of it. A `ServiceSpec` (spec-types.ts)
 * is only ever built here, by `decodeSpecShape`, from a plain object of this shape:
 *
 *   the YAML reader   spec.ts turns the operator's YAML into the shape (SDK key names, defaults,
 *                     placement and steps forms, every error in the operator's terms) and then
 *                     decodes it here;
 *   the store         the configuration store keeps the canonical JSON of the shape (`specJson`)
 *                     and reads a row back through the same decoder (`specFromJson`).
 *
 * The rules both share are here too: names, limits, goals and strategies. Pure: nothing here
 * throws on any input, since a store row may be damaged; a problem is a message that names the
 * first bad field, what was wrong and what was there.
 */
import type { StrategyName } from '../shared/plans/strategy.js';
import { clip } from '../shared/yaml-tree.js';
import type { Goal, HealthCheckSpec, PhaseSpec, PlanSpec, PodSpec, ReadinessCheckSpec, ServiceSpec, StepsSpec, TaskSpec } from './spec-types.js';

// ---------------------------------------------------------------------------------------------
// The rules of the shape

/** Largest pod `count`: far above any cluster Drydock runs, and it keeps instance indexes small. */
export const MAX_COUNT = 10_000;
/**
 * Longest duration, in seconds, for kill grace periods and check timings: one year. A bound keeps
 * `seconds * 1e9` far inside an int64 of nanoseconds when the agent builds a Mesos `KillPolicy`.
 */
export const MAX_SECONDS = 31_536_000;
/** Largest `max-consecutive-failures`. */
export const MAX_FAILURES = 1_000_000;
/** Longest name (service, pod type, task, plan, phase): one DNS label. */
export const MAX_NAME_LENGTH = 63;

/** A task's goals. */
export const GOALS: readonly Goal[] = ['RUNNING', 'FINISH', 'ONCE'];
/** A plan's strategies: canary is phase-only by design (plans.md §4.3), a canary plan would gate every phase. */
export const PLAN_STRATEGIES: readonly StrategyName[] = ['serial', 'parallel'];
/** A phase's strategies. */
export const PHASE_STRATEGIES: readonly StrategyName[] = ['serial', 'parallel', 'serial-canary', 'canary', 'parallel-canary'];

/**
 * Service name: a DNS label (lowercase letters, digits, '-', not at either end), since it becomes
 * the framework's name and appears in task ids. The SDK also accepts folder paths
 * (`/team/hello`); Drydock does not.
 */
export const SERVICE_NAME = /^[a-z0-9]([a-z0-9-]*[a-z0-9])?$/;
/**
 * Pod type and task names: parts of lowercase letters and digits joined by '-', each part starting
 * with a letter. No part is all digits, so in `<type>-<index>` and `<type>-<index>-<task>` the index
 * is the first all-digit part and the names can always be split back (`hello-0-server`).
 */
export const POD_OR_TASK_NAME = /^[a-z][a-z0-9]*(-[a-z][a-z0-9]*)*$/;
/** Plan and phase names: they appear in `/v1/plans/<plan>` and `?phase=<phase>`. */
export const PLAN_NAME = /^[a-z][a-z0-9-]*$/;
/** Environment variable names as POSIX shells accept them. */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
/** An instance index written as a string (JSON keys are always strings): decimal, no sign or leading zero. */
export const DECIMAL_INDEX = /^(0|[1-9][0-9]*)$/;

// ---------------------------------------------------------------------------------------------
// The shape: plain data, field names and order of spec-types.ts, absent checks and steps as null

/** A readiness check as data. */
export interface CheckShape {
  cmd: string;
  intervalS: number;
  delayS: number;
  timeoutS: number;
}

/** A health check as data. */
export interface HealthShape extends CheckShape {
  gracePeriodS: number;
  maxConsecutiveFailures: number;
}

/** A task as data; env values are strings, in the order written. */
export interface TaskShape {
  name: string;
  goal: Goal;
  essential: boolean;
  cmd: string;
  cpus: number;
  memoryMb: number;
  env: Record<string, string>;
  killGracePeriodS: number;
  readinessCheck: CheckShape | null;
  healthCheck: HealthShape | null;
}

/** A pod type as data. */
export interface PodShape {
  type: string;
  count: number;
  placement: { uniqueHostname: boolean; text: string };
  allowDecommission: boolean;
  tasks: TaskShape[];
}

/** A phase's custom steps as data: task groups by instance index (decimal keys), and the default. */
export interface StepsShape {
  byIndex: Record<string, string[][]>;
  default: string[][] | null;
}

/** A phase as data. */
export interface PhaseShape {
  name: string;
  strategy: StrategyName;
  pod: string;
  steps: StepsShape | null;
}

/** A plan as data. */
export interface PlanShape {
  name: string;
  strategy: StrategyName;
  phases: PhaseShape[];
}

/** A whole service spec as data. */
export interface ServiceShape {
  name: string;
  pods: PodShape[];
  plans: PlanShape[];
}

// ---------------------------------------------------------------------------------------------
// The canonical form, for the configuration store

/**
 * The spec as data in canonical form: fields in the declaration order of spec-types.ts, absent
 * checks and steps as null, env in its YAML order, step indexes ascending. The same spec always
 * gives the same shape, and so the same JSON text.
 */
export function specShape(spec: ServiceSpec): ServiceShape {
  return {
    name: spec.name,
    pods: spec.pods.map((p) => ({
      type: p.type,
      count: p.count,
      placement: { uniqueHostname: p.placement.uniqueHostname, text: p.placement.text },
      allowDecommission: p.allowDecommission,
      tasks: p.tasks.map((t) => taskShape(t, false)),
    })),
    plans: spec.plans.map((plan) => ({
      name: plan.name,
      strategy: plan.strategy,
      phases: plan.phases.map((ph) => ({
        name: ph.name,
        strategy: ph.strategy,
        pod: ph.pod,
        steps: ph.steps === undefined ? null : {
          byIndex: Object.fromEntries(Object.keys(ph.steps.byIndex).sort((a, b) => Number(a) - Number(b)).map((k) => [k, (ph.steps?.byIndex[k] ?? []).map((g) => [...g])])),
          default: ph.steps.default === undefined ? null : ph.steps.default.map((g) => [...g]),
        },
      })),
    })),
  };
}

/** A task in canonical form; `sortEnv` for comparisons where the order of env entries does not matter. */
export function taskShape(t: TaskSpec, sortEnv: boolean): TaskShape {
  const env = Object.entries(t.env);
  if (sortEnv) env.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return {
    name: t.name,
    goal: t.goal,
    essential: t.essential,
    cmd: t.cmd,
    cpus: t.cpus,
    memoryMb: t.memoryMb,
    env: Object.fromEntries(env),
    killGracePeriodS: t.killGracePeriodS,
    readinessCheck: t.readinessCheck === undefined ? null : { cmd: t.readinessCheck.cmd, intervalS: t.readinessCheck.intervalS, delayS: t.readinessCheck.delayS, timeoutS: t.readinessCheck.timeoutS },
    healthCheck: t.healthCheck === undefined ? null : {
      cmd: t.healthCheck.cmd, intervalS: t.healthCheck.intervalS, delayS: t.healthCheck.delayS, timeoutS: t.healthCheck.timeoutS,
      gracePeriodS: t.healthCheck.gracePeriodS, maxConsecutiveFailures: t.healthCheck.maxConsecutiveFailures,
    },
  };
}

/** The spec as the configuration store keeps it: the canonical shape as JSON, so equal configurations are equal strings. */
export function specJson(spec: ServiceSpec): string {
  return JSON.stringify(specShape(spec));
}

/** Same configuration: equal canonical JSON (so env order counts; a reordered env is a new configuration that relaunches nothing). */
export function specEquals(a: ServiceSpec, b: ServiceSpec): boolean {
  return specJson(a) === specJson(b);
}

// ---------------------------------------------------------------------------------------------
// The decoder

/** The shape decoded, or the first bad field. */
export type DecodedSpec = { ok: true; spec: ServiceSpec } | { ok: false; error: string };

/**
 * Decodes a value of the shape into a checked `ServiceSpec`: the one place a spec is built. A
 * missing or mistyped field, or a phase naming a pod that is not there, gives an error naming the
 * first bad field, never an exception or a half-typed spec that fails later in the plan builder
 * (an exception of another kind would be a bug here, and is not hidden).
 */
export function decodeSpecShape(raw: unknown): DecodedSpec {
  try {
    return { ok: true, spec: decodeService(raw) };
  } catch (e) {
    if (e instanceof ShapeError) return { ok: false, error: e.message };
    throw e;
  }
}

/** The first bad field; caught by decodeSpecShape, never seen outside. */
class ShapeError extends Error {}

function shown(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(clip(v));
  if (Array.isArray(v)) return 'a list';
  if (v === null) return 'null';
  if (typeof v === 'object') return 'an object';
  return clip(String(v));
}

function bad(path: string, what: string, v: unknown): never {
  throw new ShapeError(`${path} must be ${what}, got ${shown(v)}`);
}

function obj(v: unknown, path: string): Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) bad(path, 'an object', v);
  return v as Record<string, unknown>;
}

function list(v: unknown, path: string): unknown[] {
  if (!Array.isArray(v)) bad(path, 'a list', v);
  return v;
}

/** A field of a stored object: own properties only, so `constructor` or `__proto__` are never read from a prototype. */
function own(o: Record<string, unknown>, key: string): unknown {
  return Object.hasOwn(o, key) ? o[key] : undefined;
}

function str(v: unknown, path: string, nonEmpty = true): string {
  if (typeof v !== 'string' || (nonEmpty && v === '')) bad(path, 'a string', v);
  return v;
}

function num(v: unknown, path: string, ok: (n: number) => boolean, what: string): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || !ok(v)) bad(path, what, v);
  return v === 0 ? 0 : v;
}

function bool(v: unknown, path: string): boolean {
  if (typeof v !== 'boolean') bad(path, 'true or false', v);
  return v;
}

function pick<T extends string>(v: unknown, path: string, allowed: readonly T[]): T {
  if (typeof v !== 'string' || !(allowed as readonly string[]).includes(v)) bad(path, `one of ${allowed.join(', ')}`, v);
  return v as T;
}

function named(v: unknown, path: string, pattern: RegExp): string {
  const s = str(v, path);
  if (s.length > MAX_NAME_LENGTH || !pattern.test(s)) bad(path, 'a valid name', s);
  return s;
}

function decodeService(raw: unknown): ServiceSpec {
  const o = obj(raw, 'spec');
  const name = named(own(o, 'name'), 'name', SERVICE_NAME);
  const pods = list(own(o, 'pods'), 'pods').map((p, i) => decodePod(p, `pods[${i}]`));
  if (pods.length === 0) bad('pods', 'a non-empty list', []);
  unique(pods.map((p) => p.type), 'pods', 'pod type');
  const plans = list(own(o, 'plans'), 'plans').map((p, i) => decodePlan(p, `plans[${i}]`, pods));
  unique(plans.map((p) => p.name), 'plans', 'plan');
  return { name, pods, plans };
}

/** Names that were keys of one YAML mapping, so a row with the same one twice was not written by specJson. */
function unique(names: readonly string[], path: string, what: string): void {
  const seen = new Set<string>();
  for (const n of names) {
    if (seen.has(n)) throw new ShapeError(`${path} has the ${what} ${JSON.stringify(clip(n))} twice`);
    seen.add(n);
  }
}

function decodePod(raw: unknown, path: string): PodSpec {
  const o = obj(raw, path);
  const placement = obj(own(o, 'placement'), `${path}.placement`);
  const tasks = list(own(o, 'tasks'), `${path}.tasks`).map((t, i) => decodeTask(t, `${path}.tasks[${i}]`));
  if (tasks.length === 0) bad(`${path}.tasks`, 'a non-empty list', []);
  unique(tasks.map((t) => t.name), `${path}.tasks`, 'task');
  return {
    type: named(own(o, 'type'), `${path}.type`, POD_OR_TASK_NAME),
    count: num(own(o, 'count'), `${path}.count`, (n) => Number.isInteger(n) && n >= 0 && n <= MAX_COUNT, `an integer from 0 to ${MAX_COUNT}`),
    placement: { uniqueHostname: bool(own(placement, 'uniqueHostname'), `${path}.placement.uniqueHostname`), text: str(own(placement, 'text'), `${path}.placement.text`, false) },
    allowDecommission: bool(own(o, 'allowDecommission'), `${path}.allowDecommission`),
    tasks,
  };
}

const isPositive = (n: number): boolean => n > 0;
const isSeconds = (n: number): boolean => n >= 0 && n <= MAX_SECONDS;

function decodeTask(raw: unknown, path: string): TaskSpec {
  const o = obj(raw, path);
  const envObj = obj(own(o, 'env'), `${path}.env`);
  const env = Object.fromEntries(Object.entries(envObj).map(([k, v]) => {
    if (!ENV_NAME.test(k)) bad(`${path}.env`, 'keyed by environment variable names', k);
    return [k, str(v, `${path}.env.${k}`, false)];
  }));
  const rc = own(o, 'readinessCheck');
  const hc = own(o, 'healthCheck');
  return {
    name: named(own(o, 'name'), `${path}.name`, POD_OR_TASK_NAME),
    goal: pick(own(o, 'goal'), `${path}.goal`, GOALS),
    essential: bool(own(o, 'essential'), `${path}.essential`),
    cmd: str(own(o, 'cmd'), `${path}.cmd`),
    cpus: num(own(o, 'cpus'), `${path}.cpus`, isPositive, 'a positive number'),
    memoryMb: num(own(o, 'memoryMb'), `${path}.memoryMb`, isPositive, 'a positive number'),
    env,
    killGracePeriodS: num(own(o, 'killGracePeriodS'), `${path}.killGracePeriodS`, isSeconds, 'a number of seconds'),
    readinessCheck: rc === null || rc === undefined ? undefined : decodeTimings(rc, `${path}.readinessCheck`),
    healthCheck: hc === null || hc === undefined ? undefined : decodeHealth(hc, `${path}.healthCheck`),
  };
}

function decodeTimings(raw: unknown, path: string): ReadinessCheckSpec {
  const o = obj(raw, path);
  return {
    cmd: str(own(o, 'cmd'), `${path}.cmd`),
    intervalS: num(own(o, 'intervalS'), `${path}.intervalS`, isPositive, 'a positive number'),
    delayS: num(own(o, 'delayS'), `${path}.delayS`, isSeconds, 'a number of seconds'),
    timeoutS: num(own(o, 'timeoutS'), `${path}.timeoutS`, isPositive, 'a positive number'),
  };
}

function decodeHealth(raw: unknown, path: string): HealthCheckSpec {
  const o = obj(raw, path);
  return {
    ...decodeTimings(raw, path),
    gracePeriodS: num(own(o, 'gracePeriodS'), `${path}.gracePeriodS`, isSeconds, 'a number of seconds'),
    maxConsecutiveFailures: num(own(o, 'maxConsecutiveFailures'), `${path}.maxConsecutiveFailures`, (n) => Number.isInteger(n) && n >= 1, 'a positive integer'),
  };
}

function decodePlan(raw: unknown, path: string, pods: readonly PodSpec[]): PlanSpec {
  const o = obj(raw, path);
  const phases = list(own(o, 'phases'), `${path}.phases`).map((p, i) => decodePhase(p, `${path}.phases[${i}]`, pods));
  unique(phases.map((p) => p.name), `${path}.phases`, 'phase');
  return {
    name: named(own(o, 'name'), `${path}.name`, PLAN_NAME),
    strategy: pick(own(o, 'strategy'), `${path}.strategy`, PLAN_STRATEGIES),
    phases,
  };
}

function decodePhase(raw: unknown, path: string, pods: readonly PodSpec[]): PhaseSpec {
  const o = obj(raw, path);
  const podName = str(own(o, 'pod'), `${path}.pod`);
  const pod = pods.find((p) => p.type === podName);
  if (pod === undefined) bad(`${path}.pod`, 'a pod type of the spec', podName);
  const rawSteps = own(o, 'steps');
  let steps: StepsSpec | undefined;
  if (rawSteps !== null && rawSteps !== undefined) {
    const s = obj(rawSteps, `${path}.steps`);
    const groups = (v: unknown, p: string): string[][] => list(v, p).map((g, i) => list(g, `${p}[${i}]`).map((t, k) => {
      const name = str(t, `${p}[${i}][${k}]`);
      if (!pod.tasks.some((x) => x.name === name)) bad(`${p}[${i}][${k}]`, `a task of pod ${pod.type}`, name);
      return name;
    }));
    const byIndex = Object.fromEntries(Object.entries(obj(own(s, 'byIndex'), `${path}.steps.byIndex`)).map(([k, v]) => {
      if (!DECIMAL_INDEX.test(k)) bad(`${path}.steps.byIndex`, 'keyed by instance indexes', k);
      return [k, groups(v, `${path}.steps.byIndex.${k}`)];
    }));
    const d = own(s, 'default');
    steps = { byIndex, default: d === null || d === undefined ? undefined : groups(d, `${path}.steps.default`) };
  }
  return {
    name: named(own(o, 'name'), `${path}.name`, PLAN_NAME),
    strategy: pick(own(o, 'strategy'), `${path}.strategy`, PHASE_STRATEGIES),
    pod: pod.type,
    steps,
  };
}

/** A stored spec read back, or why it cannot be. */
export type StoredSpecResult = { ok: true; spec: ServiceSpec } | { ok: false; error: string };

/** Reads a spec written by `specJson`, through the decoder; a damaged row gives an error naming its first bad field. */
export function specFromJson(text: string): StoredSpecResult {
  try {
    let raw: unknown;
    try {
      raw = JSON.parse(text);
    } catch (e) {
      return { ok: false, error: `stored spec is not JSON: ${e instanceof Error ? e.message : String(e)}` };
    }
    const decoded = decodeSpecShape(raw);
    return decoded.ok ? decoded : { ok: false, error: `stored spec: ${decoded.error}` };
  } catch (e) {
    return { ok: false, error: `stored spec could not be read: ${e instanceof Error ? e.message : String(e)}` };
  }
}

/**
 * The service spec as an operator writes it: YAML (plans.md §7.1, the subset Drydock runs) read
 * into the shape of a spec (spec-shape.ts) and then decoded there, by the one decoder the
 * configuration store uses too. This module is the YAML side: the guards of shared/yaml-tree.ts,
 * the SDK's key names, every default filled in, the placement and steps forms, and every error in
 * the operator's terms (all of them, with the path as written). What a new configuration may
 * change is spec-changes.ts.
 *
 * Pure: text in, plain data out. Nothing here throws on any input: every problem is returned as a
 * message that names the path, what was wrong and what was there.
 */
import type { StrategyName } from '../shared/plans/strategy.js';
import { checkKeys, childPath, clip, describe, ErrorList, field, readYaml, type YamlLimits, type YamlMap, type YamlValue } from '../shared/yaml-tree.js';
import type { Goal, ServiceSpec } from './spec-types.js';
import {
  DECIMAL_INDEX, ENV_NAME, GOALS, MAX_COUNT, MAX_FAILURES, MAX_NAME_LENGTH, MAX_SECONDS, PHASE_STRATEGIES, PLAN_NAME, PLAN_STRATEGIES, POD_OR_TASK_NAME, SERVICE_NAME,
  decodeSpecShape, type CheckShape, type HealthShape, type PhaseShape, type PlanShape, type PodShape, type ServiceShape, type StepsShape, type TaskShape,
} from './spec-shape.js';

/**
 * Longest spec accepted, in characters. Real specs are a few KiB; 256 Ki bounds the parser's work
 * on hostile text to about a second.
 */
export const MAX_SPEC_CHARS = 256 * 1024;
/**
 * Alias uses (`*name`) allowed in one spec, each expansion counted: enough to share an `env:` or a
 * check between tasks, far too few for an alias bomb ("billion laughs") to grow. The same guard as
 * the `yaml` package's `maxAliasCount`, which only applies to `toJS()`; shared/yaml-tree.ts walks
 * the document itself (to keep numbers as written, see `readEnv`), so it counts.
 */
export const MAX_ALIASES = 50;
/** Deepest nesting read; the deepest place a spec uses, a step's task list, is 9 levels down. */
export const MAX_DEPTH = 32;
/** Values (scalars, lists, mappings, aliases expanded) in one spec: bounds the walk whatever the aliases do. */
export const MAX_VALUES = 100_000;
/** Errors reported for one spec; the rest are counted in a last line. */
export { MAX_ERRORS } from '../shared/yaml-tree.js';

/** Plans the scheduler builds itself (shared/plans/coordinator.ts ranks them); a YAML plan may not take their names. */
const RESERVED_PLANS: readonly string[] = ['recovery', 'decommission', 'maintenance'];

// ---------------------------------------------------------------------------------------------
// Reading the YAML (shared/yaml-tree.ts does the parsing and its guards)

/** The limits a spec is read with. */
const SPEC_LIMITS: YamlLimits = { maxChars: MAX_SPEC_CHARS, maxAliases: MAX_ALIASES, maxDepth: MAX_DEPTH, maxValues: MAX_VALUES };

/** Outcome of parsing: the spec or every error found (at most MAX_ERRORS, then a count). */
export type ParseResult = { ok: true; spec: ServiceSpec } | { ok: false; errors: string[] };

/** The YAML read into the shape, or every error found. */
type ShapeResult = { ok: true; shape: ServiceShape } | { ok: false; errors: string[] };

/**
 * Reads a service spec written in YAML 1.2 (JSON is YAML too). Refuses duplicate keys, more than
 * one document, anything but a mapping at the top, `%YAML` versions other than 1.2, unknown tags,
 * and every key it does not know (a typo such as `cpu:` must not be silently dropped). Fills in
 * every default. Never throws.
 */
export function parseServiceSpec(text: string): ParseResult {
  const read = readYaml(text, 'the spec', SPEC_LIMITS, { empty: 'the spec is empty: expected a mapping with name and pods' });
  if (!read.ok) return read;
  try {
    const shape = readService(read.value);
    if (!shape.ok) return shape;
    const decoded = decodeSpecShape(shape.shape);
    // The reader checked everything the decoder checks, in the operator's terms: a refusal here is a bug, still an answer.
    return decoded.ok ? decoded : fail(`the spec could not be read: ${decoded.error}`);
  } catch (e) {
    // Nothing below should throw; if it does on some input, it is still an answer.
    return { ok: false, errors: [`the spec could not be read: ${e instanceof Error ? e.message : String(e)}`] };
  }
}

function fail(message: string): { ok: false; errors: string[] } {
  return { ok: false, errors: [message] };
}

// ---------------------------------------------------------------------------------------------
// Messages

/** A compact rendering of a small value (placement rules), cut at about 80 characters. */
function preview(v: YamlValue): string {
  let out = '';
  const walk = (x: YamlValue): void => {
    if (out.length > 80) return;
    if (x.kind === 'scalar') out += typeof x.value === 'string' ? JSON.stringify(clip(x.value, 40)) : clip(x.text, 40);
    else if (x.kind === 'seq') {
      out += '[';
      x.items.forEach((item, i) => { if (i > 0) out += ','; walk(item); });
      out += ']';
    } else {
      out += '{';
      x.entries.forEach((e, i) => { if (i > 0) out += ','; out += `${JSON.stringify(clip(e.key, 40))}:`; walk(e.value); });
      out += '}';
    }
  };
  walk(v);
  return clip(out, 80);
}

// ---------------------------------------------------------------------------------------------
// Field readers: each reports its own error and returns undefined when the value is unusable.

function asMap(v: YamlValue, path: string, errors: ErrorList): YamlMap | undefined {
  if (v.kind === 'map') return v;
  errors.add(`${path} must be a mapping, got ${describe(v)}`);
  return undefined;
}

function requireField(map: YamlMap, key: string, path: string, errors: ErrorList): YamlValue | undefined {
  const v = field(map, key);
  if (v === undefined) errors.add(`${childPath(path, key)} is required`);
  return v;
}

/** A command for a shell: not blank, and without NUL, which execve cannot pass. */
function readString(v: YamlValue, path: string, errors: ErrorList): string | undefined {
  if (v.kind !== 'scalar' || typeof v.value !== 'string' || v.value.trim() === '') {
    errors.add(`${path} must be a non-empty string, got ${describe(v)}`);
    return undefined;
  }
  if (v.value.includes('\u0000')) {
    errors.add(`${path} must not contain a NUL character`);
    return undefined;
  }
  return v.value;
}

function readNumber(v: YamlValue, path: string, errors: ErrorList, ok: (n: number) => boolean, what: string): number | undefined {
  // -0 (YAML `-0`) becomes 0: JSON writes both as 0, and a stored spec must read back equal.
  if (v.kind === 'scalar' && typeof v.value === 'number' && Number.isFinite(v.value) && ok(v.value)) return v.value === 0 ? 0 : v.value;
  errors.add(`${path} must be ${what}, got ${describe(v)}`);
  return undefined;
}

const positive = (v: YamlValue, path: string, errors: ErrorList): number | undefined => readNumber(v, path, errors, (n) => n > 0, 'a positive number');
const positiveSeconds = (v: YamlValue, path: string, errors: ErrorList): number | undefined =>
  readNumber(v, path, errors, (n) => n > 0 && n <= MAX_SECONDS, `a positive number of seconds, at most ${MAX_SECONDS}`);
const seconds = (v: YamlValue, path: string, errors: ErrorList): number | undefined =>
  readNumber(v, path, errors, (n) => n >= 0 && n <= MAX_SECONDS, `a number of seconds from 0 to ${MAX_SECONDS}`);
const integer = (v: YamlValue, path: string, errors: ErrorList, min: number, max: number): number | undefined =>
  readNumber(v, path, errors, (n) => Number.isInteger(n) && n >= min && n <= max, `an integer from ${min} to ${max}`);

function readBool(v: YamlValue, path: string, errors: ErrorList): boolean | undefined {
  if (v.kind === 'scalar' && typeof v.value === 'boolean') return v.value;
  errors.add(`${path} must be true or false, got ${describe(v)}`);
  return undefined;
}

function oneOf<T extends string>(v: YamlValue, path: string, errors: ErrorList, allowed: readonly T[], hint = ''): T | undefined {
  if (v.kind === 'scalar' && typeof v.value === 'string' && (allowed as readonly string[]).includes(v.value)) return v.value as T;
  errors.add(`${path} must be one of ${allowed.join(', ')}, got ${describe(v)}${hint}`);
  return undefined;
}

/** An optional field: its default when absent, its reading when present (undefined when unusable). */
function optional<T>(map: YamlMap, key: string, path: string, fallback: T, read: (v: YamlValue, path: string) => T | undefined): T | undefined {
  const v = field(map, key);
  return v === undefined ? fallback : read(v, childPath(path, key));
}

/** Checks a name key; `what` says which kind of name, `rule` how to write one. */
function checkName(name: string, path: string, pattern: RegExp, what: string, rule: string, errors: ErrorList): boolean {
  if (name.length <= MAX_NAME_LENGTH && pattern.test(name)) return true;
  errors.add(`${path} is not a valid ${what} name: ${rule}, at most ${MAX_NAME_LENGTH} characters`);
  return false;
}

const POD_RULE = "lowercase letters and digits in parts joined by '-', each part starting with a letter";
const PLAN_RULE = "a lowercase letter, then lowercase letters, digits or '-'";

// ---------------------------------------------------------------------------------------------
// The spec, section by section

/** SDK keys Drydock does not run, per section: named "not supported" rather than "unknown". */
const UNSUPPORTED_SERVICE = ['web-url', 'replacement-failure-policy'];
const UNSUPPORTED_POD = [
  'image', 'container', 'networks', 'rlimits', 'uris', 'resource-sets', 'volume', 'volumes', 'pre-reserved-role', 'secrets',
  'share-pid-namespace', 'host-volumes', 'user', 'seccomp-unconfined', 'seccomp-profile-name', 'ipc-mode', 'shm-size',
  'strategy', 'avoid-types', 'colocate-types',
];
const UNSUPPORTED_TASK = [
  'labels', 'configs', 'gpus', 'ports', 'volume', 'volumes', 'resource-set', 'discovery', 'transport-encryption', 'uris',
  'secrets', 'rlimits',
];

function readService(root: YamlValue): ShapeResult {
  const errors = new ErrorList();
  if (root.kind !== 'map') return fail(`the spec must be a mapping with name and pods, got ${describe(root)}`);
  // `scheduler:` (principal, user, …) configures the SDK's own process; Drydock takes those from flags.
  checkKeys(root, '', ['name', 'scheduler', 'pods', 'plans'], errors, UNSUPPORTED_SERVICE);

  let name: string | undefined;
  const nameValue = requireField(root, 'name', '', errors);
  if (nameValue !== undefined) {
    if (nameValue.kind === 'scalar' && typeof nameValue.value === 'string' && nameValue.value.length <= MAX_NAME_LENGTH && SERVICE_NAME.test(nameValue.value)) name = nameValue.value;
    else errors.add(`name must be lowercase letters, digits and '-' (not first or last), at most ${MAX_NAME_LENGTH} characters, got ${describe(nameValue)}`);
  }

  const pods: PodShape[] = [];
  /** Every pod type key and its task keys, valid or not: plans are checked against what was written, so one bad pod does not cascade. */
  const written = new Map<string, Set<string>>();
  const podsValue = requireField(root, 'pods', '', errors);
  const podsMap = podsValue === undefined ? undefined : asMap(podsValue, 'pods', errors);
  if (podsMap !== undefined) {
    if (podsMap.entries.length === 0) errors.add('pods must have at least one pod type');
    for (const { key, value } of podsMap.entries) {
      const pod = readPod(key, value, childPath('pods', key), errors, written);
      if (pod !== undefined) pods.push(pod);
    }
  }

  const plans: PlanShape[] = [];
  const plansValue = field(root, 'plans');
  const plansMap = plansValue === undefined ? undefined : asMap(plansValue, 'plans', errors);
  for (const { key, value } of plansMap?.entries ?? []) {
    const plan = readPlan(key, value, childPath('plans', key), errors, written);
    if (plan !== undefined) plans.push(plan);
  }
  // Without a `deploy` plan, the SDK's default: the pod types one after the other, each one
  // instance at a time. It comes first, as the plan the scheduler runs first.
  if (!(plansMap?.entries ?? []).some((e) => e.key === 'deploy')) {
    plans.unshift({ name: 'deploy', strategy: 'serial', phases: pods.map((p) => ({ name: p.type, strategy: 'serial', pod: p.type, steps: null })) });
  }

  if (errors.any() || name === undefined) return { ok: false, errors: errors.list() };
  return { ok: true, shape: { name, pods, plans } };
}

function readPod(type: string, value: YamlValue, path: string, errors: ErrorList, written: Map<string, Set<string>>): PodShape | undefined {
  const nameOk = checkName(type, path, POD_OR_TASK_NAME, 'pod type', POD_RULE, errors);
  const taskKeys = new Set<string>();
  written.set(type, taskKeys);
  const map = asMap(value, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['count', 'placement', 'allow-decommission', 'tasks'], errors, UNSUPPORTED_POD);

  const countValue = requireField(map, 'count', path, errors);
  const count = countValue === undefined ? undefined : integer(countValue, childPath(path, 'count'), errors, 0, MAX_COUNT);
  const placement = readPlacement(field(map, 'placement'), childPath(path, 'placement'), errors);
  const allowDecommission = optional(map, 'allow-decommission', path, false, (v, p) => readBool(v, p, errors));

  const tasks: TaskShape[] = [];
  let tasksOk = true;
  const tasksValue = requireField(map, 'tasks', path, errors);
  const tasksMap = tasksValue === undefined ? undefined : asMap(tasksValue, childPath(path, 'tasks'), errors);
  if (tasksMap !== undefined) {
    if (tasksMap.entries.length === 0) errors.add(`${childPath(path, 'tasks')} must have at least one task`);
    for (const { key, value: taskValue } of tasksMap.entries) {
      taskKeys.add(key);
      const task = readTask(key, taskValue, childPath(childPath(path, 'tasks'), key), errors);
      if (task === undefined) tasksOk = false;
      else tasks.push(task);
    }
  }
  if (!nameOk || count === undefined || placement === undefined || allowDecommission === undefined || tasksMap === undefined || !tasksOk) return undefined;
  return { type, count, placement, allowDecommission, tasks };
}

/** A pod's placement as data. */
type Placement = PodShape['placement'];

const NO_PLACEMENT: Placement = { uniqueHostname: false, text: '' };
const UNIQUE = 'hostname:UNIQUE';

/**
 * `hostname:UNIQUE`, `[["hostname","UNIQUE"]]` as a YAML list, or the SDK's string form
 * `'[["hostname","UNIQUE"]]'`. Absent, empty (`''`, what an SDK template renders when its
 * placement variable is unset) and `[]` mean no rule. Marathon's other operators (GROUP_BY, LIKE,
 * CLUSTER, MAX_PER, …) are refused rather than ignored: a rule that is not enforced is a surprise.
 */
function readPlacement(v: YamlValue | undefined, path: string, errors: ErrorList): Placement | undefined {
  if (v === undefined) return NO_PLACEMENT;
  const refuse = (shown: string): undefined => {
    errors.add(`${path}: unsupported placement rule ${shown} (Drydock supports ${UNIQUE})`);
    return undefined;
  };
  if (v.kind === 'scalar' && typeof v.value === 'string') {
    const text = v.value.trim();
    if (text === '') return NO_PLACEMENT;
    if (text === UNIQUE) return { uniqueHostname: true, text };
    if (text.startsWith('[')) {
      let rules: unknown;
      try {
        rules = JSON.parse(text);
      } catch {
        return refuse(describe(v));
      }
      const kind = placementRules(rules);
      if (kind === 'none') return NO_PLACEMENT;
      if (kind === 'unique') return { uniqueHostname: true, text };
    }
    return refuse(describe(v));
  }
  if (v.kind === 'seq') {
    const plain = v.items.map((rule) => (rule.kind === 'seq' ? rule.items.map((x) => (x.kind === 'scalar' ? x.value : undefined)) : undefined));
    const kind = placementRules(plain);
    if (kind === 'none') return NO_PLACEMENT;
    if (kind === 'unique') return { uniqueHostname: true, text: JSON.stringify(plain) };
    return refuse(preview(v));
  }
  return refuse(v.kind === 'map' ? preview(v) : describe(v));
}

/** Marathon constraints as data: `[]`, `[["hostname","UNIQUE"]]`, or something Drydock does not enforce. */
function placementRules(rules: unknown): 'none' | 'unique' | 'other' {
  if (!Array.isArray(rules)) return 'other';
  if (rules.length === 0) return 'none';
  const [rule] = rules as unknown[];
  return rules.length === 1 && Array.isArray(rule) && rule.length === 2 && rule[0] === 'hostname' && rule[1] === 'UNIQUE' ? 'unique' : 'other';
}

function readTask(name: string, value: YamlValue, path: string, errors: ErrorList): TaskShape | undefined {
  const nameOk = checkName(name, path, POD_OR_TASK_NAME, 'task', POD_RULE, errors);
  const map = asMap(value, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['goal', 'essential', 'cmd', 'cpus', 'memory', 'env', 'kill-grace-period', 'readiness-check', 'health-check'], errors, UNSUPPORTED_TASK);

  const goal = optional<Goal>(map, 'goal', path, 'RUNNING', (v, p) => oneOf(v, p, errors, GOALS));
  const essential = optional(map, 'essential', path, true, (v, p) => readBool(v, p, errors));
  const cmdValue = requireField(map, 'cmd', path, errors);
  const cmd = cmdValue === undefined ? undefined : readString(cmdValue, childPath(path, 'cmd'), errors);
  const cpusValue = requireField(map, 'cpus', path, errors);
  const cpus = cpusValue === undefined ? undefined : positive(cpusValue, childPath(path, 'cpus'), errors);
  const memoryValue = requireField(map, 'memory', path, errors);
  const memoryMb = memoryValue === undefined ? undefined : positive(memoryValue, childPath(path, 'memory'), errors);
  const env = optional<Record<string, string>>(map, 'env', path, {}, (v, p) => readEnv(v, p, errors));
  const killGracePeriodS = optional(map, 'kill-grace-period', path, 3, (v, p) => seconds(v, p, errors));
  const readinessCheck = optional<CheckShape | undefined | null>(map, 'readiness-check', path, null, (v, p) => readReadiness(v, p, errors));
  const healthCheck = optional<HealthShape | undefined | null>(map, 'health-check', path, null, (v, p) => readHealth(v, p, errors));

  if (!nameOk || goal === undefined || essential === undefined || cmd === undefined || cpus === undefined || memoryMb === undefined || env === undefined ||
    killGracePeriodS === undefined || readinessCheck === undefined || healthCheck === undefined) return undefined;
  // null stands for "absent" (undefined already means "unusable"), as in the shape.
  return { name, goal, essential, cmd, cpus, memoryMb, env, killGracePeriodS, readinessCheck, healthCheck };
}

/**
 * Environment values may be strings, numbers or booleans, all passed as the text written
 * (`1.10` stays "1.10", `0755` stays "0755", `yes` is just a string in YAML 1.2).
 */
function readEnv(v: YamlValue, path: string, errors: ErrorList): Record<string, string> | undefined {
  const map = asMap(v, path, errors);
  if (map === undefined) return undefined;
  const out: Array<[string, string]> = [];
  let ok = true;
  for (const { key, value } of map.entries) {
    const p = childPath(path, key);
    if (!ENV_NAME.test(key)) {
      errors.add(`${p} is not a valid environment variable name: letters, digits and '_', not starting with a digit`);
      ok = false;
      continue;
    }
    if (value.kind !== 'scalar' || value.value === null) {
      errors.add(`${p} must be a string, number or boolean, got ${describe(value)}`);
      ok = false;
      continue;
    }
    const text = typeof value.value === 'string' ? value.value : value.text;
    if (text.includes('\u0000')) {
      errors.add(`${p} must not contain a NUL character`);
      ok = false;
      continue;
    }
    out.push([key, text]);
  }
  // fromEntries defines own properties, so even an env var named __proto__ is plain data.
  return ok ? Object.fromEntries(out) : undefined;
}

/** The four timings both checks share: interval 5 s, delay 0 s, timeout 10 s by default. */
function readTimings(map: YamlMap, path: string, errors: ErrorList): CheckShape | undefined {
  const cmdValue = requireField(map, 'cmd', path, errors);
  const cmd = cmdValue === undefined ? undefined : readString(cmdValue, childPath(path, 'cmd'), errors);
  const intervalS = optional(map, 'interval', path, 5, (v, p) => positiveSeconds(v, p, errors));
  const delayS = optional(map, 'delay', path, 0, (v, p) => seconds(v, p, errors));
  const timeoutS = optional(map, 'timeout', path, 10, (v, p) => positiveSeconds(v, p, errors));
  if (cmd === undefined || intervalS === undefined || delayS === undefined || timeoutS === undefined) return undefined;
  return { cmd, intervalS, delayS, timeoutS };
}

function readReadiness(v: YamlValue, path: string, errors: ErrorList): CheckShape | undefined {
  const map = asMap(v, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['cmd', 'interval', 'delay', 'timeout'], errors);
  return readTimings(map, path, errors);
}

function readHealth(v: YamlValue, path: string, errors: ErrorList): HealthShape | undefined {
  const map = asMap(v, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['cmd', 'interval', 'delay', 'timeout', 'grace-period', 'max-consecutive-failures'], errors);
  const timings = readTimings(map, path, errors);
  const gracePeriodS = optional(map, 'grace-period', path, 30, (x, p) => seconds(x, p, errors));
  const maxConsecutiveFailures = optional(map, 'max-consecutive-failures', path, 3, (x, p) => integer(x, p, errors, 1, MAX_FAILURES));
  if (timings === undefined || gracePeriodS === undefined || maxConsecutiveFailures === undefined) return undefined;
  return { ...timings, gracePeriodS, maxConsecutiveFailures };
}

function readPlan(name: string, value: YamlValue, path: string, errors: ErrorList, pods: ReadonlyMap<string, ReadonlySet<string>>): PlanShape | undefined {
  let nameOk = checkName(name, path, PLAN_NAME, 'plan', PLAN_RULE, errors);
  if (nameOk && RESERVED_PLANS.includes(name)) {
    errors.add(`${path} is the name of a plan the scheduler builds itself; choose another name`);
    nameOk = false;
  }
  const map = asMap(value, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['strategy', 'phases'], errors);
  // Canary is phase-only by design (plans.md §4.3): a canary plan would gate every phase.
  const strategy = optional<StrategyName>(map, 'strategy', path, 'serial', (v, p) => oneOf(v, p, errors, PLAN_STRATEGIES, ' (canary strategies go on phases)'));
  const phasesValue = requireField(map, 'phases', path, errors);
  const phasesMap = phasesValue === undefined ? undefined : asMap(phasesValue, childPath(path, 'phases'), errors);
  const phases: PhaseShape[] = [];
  let phasesOk = phasesMap !== undefined;
  if (phasesMap !== undefined) {
    if (phasesMap.entries.length === 0) {
      errors.add(`${childPath(path, 'phases')} must have at least one phase`);
      phasesOk = false;
    }
    for (const { key, value: phaseValue } of phasesMap.entries) {
      const phase = readPhase(key, phaseValue, childPath(childPath(path, 'phases'), key), errors, pods);
      if (phase === undefined) phasesOk = false;
      else phases.push(phase);
    }
  }
  if (!nameOk || strategy === undefined || !phasesOk) return undefined;
  return { name, strategy, phases };
}

function readPhase(name: string, value: YamlValue, path: string, errors: ErrorList, pods: ReadonlyMap<string, ReadonlySet<string>>): PhaseShape | undefined {
  const nameOk = checkName(name, path, PLAN_NAME, 'phase', PLAN_RULE, errors);
  const map = asMap(value, path, errors);
  if (map === undefined) return undefined;
  checkKeys(map, path, ['strategy', 'pod', 'steps'], errors);
  const strategy = optional<StrategyName>(map, 'strategy', path, 'serial', (v, p) => oneOf(v, p, errors, PHASE_STRATEGIES));
  let pod: string | undefined;
  const podValue = requireField(map, 'pod', path, errors);
  if (podValue !== undefined) {
    if (podValue.kind === 'scalar' && typeof podValue.value === 'string' && pods.has(podValue.value)) pod = podValue.value;
    else errors.add(`${childPath(path, 'pod')} must be a pod type under pods (${clip([...pods.keys()].map((k) => clip(k, 20)).join(', '), 120)}), got ${describe(podValue)}`);
  }
  // Steps name tasks, so they can only be checked against a known pod.
  const stepsValue = field(map, 'steps');
  const steps = stepsValue === undefined ? null : pod === undefined ? undefined : readSteps(stepsValue, childPath(path, 'steps'), errors, pod, pods.get(pod) ?? new Set());
  if (!nameOk || strategy === undefined || pod === undefined || steps === undefined) return undefined;
  return { name, strategy, pod, steps };
}

/**
 * `steps:` is a list of one-key mappings: `- default: [[a], [b]]` or `- 0: [[a, b]]`. Each key is
 * `default` or an instance index; an index need not be below the pod's count, since the count
 * may grow later, but it must be below MAX_COUNT, since no instance could ever have it. Each
 * value is a list of task groups, each group one step. Indexes without an entry use `default`;
 * whether one is needed is the plan builder's question, as it knows the count at the time.
 */
function readSteps(v: YamlValue, path: string, errors: ErrorList, pod: string, tasks: ReadonlySet<string>): StepsShape | null | undefined {
  if (v.kind !== 'seq' || v.items.length === 0) {
    errors.add(`${path} must be a non-empty list of mappings such as - default: [[first], [second]], got ${describe(v)}`);
    return undefined;
  }
  const byIndex: Array<[string, string[][]]> = [];
  let fallback: string[][] | null = null;
  let ok = true;
  const seen = new Set<string>();
  v.items.forEach((item, i) => {
    const p = `${path}[${i}]`;
    if (item.kind !== 'map' || item.entries.length !== 1) {
      errors.add(`${p} must be a mapping with one key (default or an instance index), got ${item.kind === 'map' ? `${item.entries.length} keys` : describe(item)}`);
      ok = false;
      return;
    }
    const entry = item.entries[0];
    if (entry === undefined) return;
    const index = entry.key === 'default' ? 'default' : DECIMAL_INDEX.test(entry.key) && Number(entry.key) < MAX_COUNT ? String(Number(entry.key)) : undefined;
    if (index === undefined) {
      errors.add(`${p} key must be default or an instance index from 0 to ${MAX_COUNT - 1}, got ${JSON.stringify(clip(entry.key))}`);
      ok = false;
      return;
    }
    if (seen.has(index)) {
      errors.add(`${p} repeats ${index === 'default' ? 'default' : `index ${index}`}`);
      ok = false;
      return;
    }
    seen.add(index);
    const groups = readGroups(entry.value, childPath(p, entry.key), errors, pod, tasks);
    if (groups === undefined) ok = false;
    else if (index === 'default') fallback = groups;
    else byIndex.push([index, groups]);
  });
  return ok ? { byIndex: Object.fromEntries(byIndex), default: fallback } : undefined;
}

function readGroups(v: YamlValue, path: string, errors: ErrorList, pod: string, tasks: ReadonlySet<string>): string[][] | undefined {
  if (v.kind !== 'seq' || v.items.length === 0) {
    errors.add(`${path} must be a non-empty list of task lists such as [[first], [second]], got ${describe(v)}`);
    return undefined;
  }
  const groups: string[][] = [];
  // A task twice in one entry would be launched by one step and found already running by the next.
  const listed = new Set<string>();
  let ok = true;
  v.items.forEach((group, g) => {
    const gp = `${path}[${g}]`;
    if (group.kind !== 'seq' || group.items.length === 0) {
      errors.add(`${gp} must be a non-empty list of task names, got ${describe(group)}`);
      ok = false;
      return;
    }
    const names: string[] = [];
    group.items.forEach((t, k) => {
      const tp = `${gp}[${k}]`;
      if (t.kind !== 'scalar' || typeof t.value !== 'string' || !tasks.has(t.value)) {
        errors.add(`${tp} must be a task of pod ${pod} (${clip([...tasks].join(', '), 120)}), got ${describe(t)}`);
        ok = false;
      } else if (listed.has(t.value)) {
        errors.add(`${tp} lists task ${t.value} a second time`);
        ok = false;
      } else {
        listed.add(t.value);
        names.push(t.value);
      }
    });
    groups.push(names);
  });
  return ok ? groups : undefined;
}


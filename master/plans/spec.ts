/**
 * A maintenance plan spec (issue 12): the YAML or JSON an operator writes to take a fleet through
 * maintenance, read into one frozen `MaintenancePlanSpec` with units in field names and every
 * default filled; the machines it selects, grouped into phases; and the `Plan` of shared/plans
 * the driver runs (one phase per group, one step per machine).
 *
 * Pure: text in, plain data out. Nothing here throws on any input; every problem comes back as a
 * line that names the field path and what was received, all of them at once (up to 50).
 *
 * How the driver (the master's maintenance-plan service) uses this module:
 *  1. `parseMaintenancePlanSpec(text, {hooks})` on `POST /v1/maintenance/plans`; errors go back as
 *     400. The driver stores the text itself and parses it again after a restart (parsing is
 *     deterministic), with `mode: 'stored'` (a hook the master no longer has is the step's error
 *     then, not the plan's), or `mode: 'legacy'` for a plan an older master stored, whose
 *     `on_down` was a shell command: read, so the plan is kept, and never run.
 *  2. `selectMachines(spec, clusterMachines)` once, when the plan is created: the phases and the
 *     machines of each. `unmatched` hostnames and an empty selection are the driver's to refuse.
 *     The selection is stored with the plan: a machine that registers later does not join a
 *     running plan, and one that leaves stays in it (its step then finds no agent).
 *  3. `planFromSpec(spec, selection)` whenever the plan object is (re)built; `planSteps(selection)`
 *     gives each step's machine and its name, for `newStepState` of step.ts.
 */
import { parseDuration, formatDuration } from '../../shared/duration.js';
import { machineKey, machineText, type MachineId } from '../../shared/machine.js';
import { newPhase, newPlan, Step, type Plan } from '../../shared/plans/plan.js';
import type { StrategyName } from '../../shared/plans/strategy.js';
import { checkKeys, childPath, describe, ErrorList, field, readYaml, DEFAULT_YAML_LIMITS, type YamlMap, type YamlValue } from '../../shared/yaml-tree.js';
import { isIPv4 } from '../cores/maintenance.js';
import { DEFAULT_HOOK_TIMEOUT_MS, HOOK_NAME, hookNamesText, NO_HOOKS, type HookCatalog, type MaintenanceHook } from './hooks.js';

// ---------------------------------------------------------------------------------------------
// The spec

/** Plan strategies: how phases follow each other. */
export type PlanStrategy = Extract<StrategyName, 'serial' | 'parallel'>;
/** Phase strategies: how the machines of one phase follow each other. */
export type PhaseStrategy = Extract<StrategyName, 'serial' | 'parallel' | 'serial-canary' | 'canary' | 'parallel-canary'>;
/** When a machine that went DOWN is brought UP: right after `on_down` (or at once), or on the operator's continue. */
export type UpWhen = 'agent_registered' | 'operator';
/** What a hook interrupted by a master restart becomes: run again, or ERROR for the operator. */
export type OnInterrupted = 'retry' | 'operator';

/** Which machines a plan takes through maintenance. */
export type MachineSelector =
  /** Every machine the master knows (one per agent's hostname and ip). */
  | { readonly kind: 'all' }
  /** Known machines by hostname (case-insensitive, as Mesos compares hostnames); one hostname may match several machines. */
  | { readonly kind: 'hostnames'; readonly hostnames: readonly string[] }
  /** Exactly these machines, known or not (a machine without an agent is still maintained). */
  | { readonly kind: 'list'; readonly machines: readonly MachineId[] }
  /** Known machines whose attributes match every pair. */
  | { readonly kind: 'attributes'; readonly attributes: Readonly<Record<string, string>> };

/**
 * What runs once a machine is DOWN: one of the master's hooks by name (hooks.ts), or,
 * in a plan an older master stored, the shell command it had, which is read and never run.
 */
export type OnDownSpec =
  | {
    readonly kind: 'hook';
    /** The hook's name, as the plan wrote it. */
    readonly hook: string;
    /** The master's hook of that name; undefined when the master no longer has it (a stored plan): the step then goes to ERROR. */
    readonly definition: MaintenanceHook | undefined;
    /** How long it may run before it is killed and the step goes to ERROR (ms): the plan's, else the hook's, never more than the hook's. */
    readonly timeoutMs: number;
    /** A hook that was running when the master restarted: run again, or ERROR (default `operator`). */
    readonly onInterrupted: OnInterrupted;
  }
  | {
    readonly kind: 'command';
    /** The shell command an older master would have run; this master never runs it. */
    readonly command: string;
    readonly timeoutMs: number;
    readonly onInterrupted: OnInterrupted;
  };

export interface MinActiveAgents {
  /** The group: agents whose attributes match every pair (none: every agent). */
  readonly attributes: Readonly<Record<string, string>>;
  /** Fewest active agents of the group a step may leave (≥ 1). */
  readonly count: number;
}

export interface BudgetSpec {
  /** Most machines of this plan out at once (past PENDING and not COMPLETE); undefined: no cap. */
  readonly maxDown: number | undefined;
  /** A group that must keep this many active agents; undefined: none. */
  readonly minActiveAgents: MinActiveAgents | undefined;
}

/** A maintenance plan spec, checked, every default filled, frozen. Durations in ms. */
export interface MaintenancePlanSpec {
  /** The plan's name, `[a-z][a-z0-9-]*`, at most 63 characters: it appears in URLs. */
  readonly name: string;
  readonly machines: MachineSelector;
  /** Attribute whose values make the phases (ordered by value, `(none)` last); undefined: one phase `all`. */
  readonly groupBy: string | undefined;
  /** How phases follow each other (default `serial`). */
  readonly strategy: PlanStrategy;
  /** How the steps of a phase follow each other (default `serial`). */
  readonly phaseStrategy: PhaseStrategy;
  /** Most steps of one phase running at once (≥ 1); undefined: no cap beyond the strategy's. */
  readonly maxParallel: number | undefined;
  /** How far ahead of its start each window is scheduled (default 0: it starts when the step starts). */
  readonly noticeMs: number;
  /** The unavailability's duration told to frameworks (required). */
  readonly windowMs: number;
  /** At most this long (from the window showing in the schedule) for inverse offers to be accepted (default 5 minutes). */
  readonly waitForFrameworksMs: number;
  /** DRAIN_AGENT's max_grace_period; undefined (the default): every task keeps its own kill policy. */
  readonly maxGracePeriodMs: number | undefined;
  /** Run once the machine is DOWN; undefined: none. */
  readonly onDown: OnDownSpec | undefined;
  /** When to bring the machine UP again (default `agent_registered`: as soon as it is DOWN and `on_down` is done). */
  readonly upWhen: UpWhen;
  /** How long a re-registered agent must stay active before the step is COMPLETE (default 10 seconds). */
  readonly settleMs: number;
  /** A step that stays in one stage longer than this goes to ERROR (default 1 hour). */
  readonly stepTimeoutMs: number;
  readonly budget: BudgetSpec;
}

export const DEFAULT_WAIT_FOR_FRAMEWORKS_MS = 5 * 60_000;
export const DEFAULT_SETTLE_MS = 10_000;
export const DEFAULT_STEP_TIMEOUT_MS = 60 * 60_000;
/** Longest plan name: one DNS label, as plan names of the service scheduler. */
export const MAX_NAME_LENGTH = 63;
/** Most machines a list or `hostnames` may name: far above a fleet, and it bounds the checks. */
export const MAX_LISTED_MACHINES = 20_000;
/** Longest `on_down.command` an older master accepted, in characters. */
export const MAX_COMMAND_CHARS = 4096;
/** Largest `max_parallel`, `max_down` and `min_active_agents.count`. */
export const MAX_COUNT = 100_000;

/** Plan names: they appear in `/v1/maintenance/plans/<plan>`. */
const PLAN_NAME = /^[a-z][a-z0-9-]*$/;
/** Hostnames as a spec may write them: DNS-like, nothing a shell or a URL would read specially. */
const HOSTNAME = /^[A-Za-z0-9_][A-Za-z0-9._-]*$/;
const MAX_HOSTNAME = 253;

const PLAN_STRATEGIES: readonly PlanStrategy[] = ['serial', 'parallel'];
const PHASE_STRATEGIES: readonly PhaseStrategy[] = ['serial', 'parallel', 'serial-canary', 'canary', 'parallel-canary'];
const UP_WHEN: readonly UpWhen[] = ['agent_registered', 'operator'];
const ON_INTERRUPTED: readonly OnInterrupted[] = ['retry', 'operator'];
const TOP_KEYS = [
  'name', 'machines', 'group_by', 'strategy', 'phase_strategy', 'max_parallel', 'notice', 'window', 'wait_for_frameworks',
  'max_grace_period', 'on_down', 'up_when', 'settle', 'step_timeout', 'budget',
];

export type SpecParse = { ok: true; spec: MaintenancePlanSpec } | { ok: false; errors: string[] };

/**
 * How a spec is read:
 *  - `create` (a POST): `on_down` must name one of `hooks`, with a timeout no longer than its own;
 *    a command is refused;
 *  - `stored` (a plan this master's kind stored, read again after a restart): the same syntax, but a
 *    hook no longer configured, or one whose timeout shrank, does not refuse the plan;
 *  - `legacy` (a plan stored by an older master): `on_down` in the old syntax, a shell command,
 *    kept as `kind: 'command'` so the plan is recovered and its step says why nothing runs.
 */
export type SpecMode = 'create' | 'stored' | 'legacy';

export interface SpecOptions {
  /** The master's hooks (default: none). */
  readonly hooks?: HookCatalog;
  /** Default `create`. */
  readonly mode?: SpecMode;
}

/**
 * Reads a maintenance plan spec written in YAML 1.2 or JSON. Refuses unknown keys (a typo such as
 * `max_paralel:` must not be dropped silently), fills every default, and checks the fields against
 * each other (a timeout that would always fire first). Never throws.
 */
export function parseMaintenancePlanSpec(text: string, options: SpecOptions = {}): SpecParse {
  const read = readYaml(text, 'the spec', DEFAULT_YAML_LIMITS);
  if (!read.ok) return read;
  try {
    return readSpec(read.value, { hooks: options.hooks ?? NO_HOOKS, mode: options.mode ?? 'create' });
  } catch (e) {
    // Nothing in the reading should throw; if it does on some input, it is still an answer.
    return { ok: false, errors: [`the spec could not be read: ${e instanceof Error ? e.message.slice(0, 200) : 'unknown error'}`] };
  }
}

// ---------------------------------------------------------------------------------------------
// Field readers: each reports its own error and returns undefined when the value is unusable.

function readSpec(root: YamlValue, o: Required<SpecOptions>): SpecParse {
  const errors = new ErrorList();
  if (root.kind !== 'map') return { ok: false, errors: [`the spec must be a mapping with name, machines and window, got ${describe(root)}`] };
  checkKeys(root, '', TOP_KEYS, errors);

  const name = required(root, 'name', errors, (v, p) => readPlanName(v, p, errors));
  const machines = required(root, 'machines', errors, (v, p) => readMachines(v, p, errors));
  const groupBy = optional(root, 'group_by', undefined, (v, p) => readAttributeName(v, p, errors));
  const strategy = optional(root, 'strategy', 'serial', (v, p) => oneOf(v, p, errors, PLAN_STRATEGIES));
  const phaseStrategy = optional(root, 'phase_strategy', 'serial', (v, p) => oneOf(v, p, errors, PHASE_STRATEGIES));
  const maxParallel = optional(root, 'max_parallel', undefined, (v, p) => readCount(v, p, errors));
  const noticeMs = optional(root, 'notice', 0, (v, p) => readDurationMs(v, p, errors, false));
  const windowMs = required(root, 'window', errors, (v, p) => readDurationMs(v, p, errors, true));
  const waitForFrameworksMs = optional(root, 'wait_for_frameworks', DEFAULT_WAIT_FOR_FRAMEWORKS_MS, (v, p) => readDurationMs(v, p, errors, false));
  const maxGracePeriodMs = optional(root, 'max_grace_period', undefined, (v, p) => readDurationMs(v, p, errors, false));
  const onDown = optional(root, 'on_down', undefined, (v, p) => (o.mode === 'legacy' ? readLegacyOnDown(v, p, errors) : readOnDown(v, p, errors, o)));
  const upWhen = optional(root, 'up_when', 'agent_registered', (v, p) => oneOf(v, p, errors, UP_WHEN));
  const settleMs = optional(root, 'settle', DEFAULT_SETTLE_MS, (v, p) => readDurationMs(v, p, errors, false));
  const stepTimeoutMs = optional(root, 'step_timeout', DEFAULT_STEP_TIMEOUT_MS, (v, p) => readDurationMs(v, p, errors, true));
  const budget = optional(root, 'budget', { maxDown: undefined, minActiveAgents: undefined }, (v, p) => readBudget(v, p, errors));

  // Cross-field checks, only between fields that read well (a broken one already has its error).
  // Each names both fields: the step timeout is a backstop and must never be the first to fire.
  if (stepTimeoutMs.ok) {
    const timeout = stepTimeoutMs.value;
    const longer = (what: string, ms: number, why: string): void => {
      if (ms >= timeout) errors.add(`step_timeout (${fmt(timeout)}) must be longer than ${what} (${fmt(ms)}): ${why}`);
    };
    if (noticeMs.ok) longer('notice', noticeMs.value, 'the drain waits for the window to start, and the step would time out first');
    if (waitForFrameworksMs.ok) longer('wait_for_frameworks', waitForFrameworksMs.value, 'the step would time out before the frameworks\' time is up');
    // Only when the plan is made: a stored plan must come back even if its hook's file changed since.
    if (o.mode === 'create' && onDown.ok && onDown.value !== undefined) longer('on_down.timeout', onDown.value.timeoutMs, 'the step would time out before the hook does, losing its output');
    if (settleMs.ok) longer('settle', settleMs.value, 'no agent could ever settle');
  }

  if (
    errors.any() || !name.ok || !machines.ok || !groupBy.ok || !strategy.ok || !phaseStrategy.ok || !maxParallel.ok || !noticeMs.ok ||
    !windowMs.ok || !waitForFrameworksMs.ok || !maxGracePeriodMs.ok || !onDown.ok || !upWhen.ok || !settleMs.ok || !stepTimeoutMs.ok || !budget.ok
  ) {
    const list = errors.list();
    return { ok: false, errors: list.length > 0 ? list : ['the spec is not valid'] };
  }
  const spec: MaintenancePlanSpec = {
    name: name.value,
    machines: machines.value,
    groupBy: groupBy.value,
    strategy: strategy.value,
    phaseStrategy: phaseStrategy.value,
    maxParallel: maxParallel.value,
    noticeMs: noticeMs.value,
    windowMs: windowMs.value,
    waitForFrameworksMs: waitForFrameworksMs.value,
    maxGracePeriodMs: maxGracePeriodMs.value,
    onDown: onDown.value,
    upWhen: upWhen.value,
    settleMs: settleMs.value,
    stepTimeoutMs: stepTimeoutMs.value,
    budget: budget.value,
  };
  return { ok: true, spec: deepFreeze(spec) };
}

/** A field's reading: its value (a default counts) or "unusable" (its error is already listed). */
type Read<T> = { ok: true; value: T } | { ok: false };

function required<T>(map: YamlMap, key: string, errors: ErrorList, read: (v: YamlValue, path: string) => T | undefined): Read<T> {
  const v = field(map, key);
  if (v === undefined) {
    errors.add(`${key} is required`);
    return { ok: false };
  }
  const value = read(v, key);
  return value === undefined ? { ok: false } : { ok: true, value };
}

/** An optional top-level field: its default when absent (or null), its reading when present. */
function optional<T>(map: YamlMap, key: string, fallback: T, read: (v: YamlValue, path: string) => T | undefined): Read<T> {
  const v = field(map, key);
  if (v === undefined) return { ok: true, value: fallback };
  const value = read(v, key);
  return value === undefined ? { ok: false } : { ok: true, value };
}

const fmt = (ms: number): string => formatDuration(BigInt(ms) * 1_000_000n);

function scalarString(v: YamlValue): string | undefined {
  return v.kind === 'scalar' && typeof v.value === 'string' ? v.value : undefined;
}

function readPlanName(v: YamlValue, path: string, errors: ErrorList): string | undefined {
  const s = scalarString(v);
  if (s !== undefined && s.length <= MAX_NAME_LENGTH && PLAN_NAME.test(s)) return s;
  errors.add(`${path} must be a lowercase letter, then lowercase letters, digits or '-', at most ${MAX_NAME_LENGTH} characters, got ${describe(v)}`);
  return undefined;
}

function oneOf<T extends string>(v: YamlValue, path: string, errors: ErrorList, allowed: readonly T[]): T | undefined {
  const s = scalarString(v);
  if (s !== undefined && (allowed as readonly string[]).includes(s)) return s as T;
  errors.add(`${path} must be one of ${allowed.join(', ')}, got ${describe(v)}`);
  return undefined;
}

function readCount(v: YamlValue, path: string, errors: ErrorList): number | undefined {
  if (v.kind === 'scalar' && typeof v.value === 'number' && Number.isInteger(v.value) && v.value >= 1 && v.value <= MAX_COUNT) return v.value;
  errors.add(`${path} must be an integer from 1 to ${MAX_COUNT}, got ${describe(v)}`);
  return undefined;
}

/**
 * A duration in Drydock's spelling (`10mins`, `30secs`, `1.5hrs`; shared/duration.ts), kept in
 * whole milliseconds: the plan's clock is a millisecond clock. A bare `0` is accepted (it needs no
 * unit); any other bare number is refused, since "600" could mean seconds or milliseconds.
 */
function readDurationMs(v: YamlValue, path: string, errors: ErrorList, positive: boolean): number | undefined {
  if (v.kind === 'scalar' && typeof v.value === 'number') {
    if (v.value === 0 && !positive) return 0;
    errors.add(`${path} must be a duration with a unit, such as 10mins or 30secs, got ${describe(v)}`);
    return undefined;
  }
  const s = scalarString(v);
  if (s === undefined) {
    errors.add(`${path} must be a duration such as 10mins or 30secs, got ${describe(v)}`);
    return undefined;
  }
  const d = parseDuration(s.slice(0, 80));
  if (!d.ok) {
    errors.add(`${path}: ${d.error}`);
    return undefined;
  }
  if (d.ns % 1_000_000n !== 0n) {
    errors.add(`${path} must be a whole number of milliseconds, got ${describe(v)}`);
    return undefined;
  }
  if (positive && d.ns === 0n) {
    errors.add(`${path} must be longer than 0, got ${describe(v)}`);
    return undefined;
  }
  // At most int64 ns (parseDuration's cap) = 9.2e12 ms: far inside a double's exact integers.
  return Number(d.ns / 1_000_000n);
}

function readAttributeName(v: YamlValue, path: string, errors: ErrorList): string | undefined {
  const s = scalarString(v);
  // Mesos attribute names are free text; refuse only what could not be one (empty, control characters).
  if (s !== undefined && s.length >= 1 && s.length <= 128 && !/[\u0000-\u001f\u007f]/.test(s)) return s;
  errors.add(`${path} must be an attribute name (1 to 128 characters, no control characters), got ${describe(v)}`);
  return undefined;
}

/** An attribute's value as written: `rack: 1` means the text "1", as Mesos' attribute text would be. */
function readAttributeValue(v: YamlValue, path: string, errors: ErrorList): string | undefined {
  if (v.kind === 'scalar' && v.value !== null && v.text.length >= 1 && v.text.length <= 256 && !/[\u0000-\u001f\u007f]/.test(v.text)) {
    return typeof v.value === 'string' ? v.value : v.text;
  }
  errors.add(`${path} must be an attribute value (text of 1 to 256 characters), got ${describe(v)}`);
  return undefined;
}

/** Pairs of attribute name and value; `reserved` keys are left to the caller. */
function readAttributes(map: YamlMap, path: string, errors: ErrorList, reserved: readonly string[] = []): Record<string, string> | undefined {
  const pairs: Array<[string, string]> = [];
  let ok = true;
  for (const { key, value } of map.entries) {
    if (reserved.includes(key)) continue;
    const p = childPath(path, key);
    if (key === '' || key.length > 128 || /[\u0000-\u001f\u007f]/.test(key)) {
      errors.add(`${p} is not an attribute name (1 to 128 characters, no control characters)`);
      ok = false;
      continue;
    }
    const text = readAttributeValue(value, p, errors);
    if (text === undefined) ok = false;
    else pairs.push([key, text]);
  }
  // fromEntries defines own properties: an attribute named __proto__ is an attribute, not a prototype.
  return ok ? Object.fromEntries(pairs) : undefined;
}

function hostnameProblem(h: string): string | undefined {
  if (h.length === 0 || h.length > MAX_HOSTNAME || !HOSTNAME.test(h)) return `letters, digits, '.', '-' and '_', at most ${MAX_HOSTNAME} characters`;
  return undefined;
}

const MACHINES_FORMS = 'all, {hostnames: [...]}, {attributes: {...}} or a list of HOST=IP';

function readMachines(v: YamlValue, path: string, errors: ErrorList): MachineSelector | undefined {
  if (v.kind === 'scalar') {
    if (v.value === 'all') return { kind: 'all' };
    errors.add(`${path} must be one of ${MACHINES_FORMS}, got ${describe(v)}`);
    return undefined;
  }
  if (v.kind === 'seq') return readMachineList(v.items, path, errors);
  checkKeys(v, path, ['hostnames', 'attributes'], errors);
  const hostnames = field(v, 'hostnames');
  const attributes = field(v, 'attributes');
  if ((hostnames === undefined) === (attributes === undefined)) {
    errors.add(`${path} must have exactly one of hostnames and attributes`);
    return undefined;
  }
  if (hostnames !== undefined) {
    const p = childPath(path, 'hostnames');
    if (hostnames.kind !== 'seq' || hostnames.items.length === 0 || hostnames.items.length > MAX_LISTED_MACHINES) {
      errors.add(`${p} must be a list of 1 to ${MAX_LISTED_MACHINES} hostnames, got ${describe(hostnames)}`);
      return undefined;
    }
    const out: string[] = [];
    const seen = new Set<string>();
    let ok = true;
    hostnames.items.forEach((item, i) => {
      const s = scalarString(item);
      const problem = s === undefined ? 'a hostname' : hostnameProblem(s);
      if (s === undefined || problem !== undefined) {
        errors.add(`${p}[${i}] must be a hostname (${problem ?? 'text'}), got ${describe(item)}`);
        ok = false;
      } else if (seen.has(s.toLowerCase())) {
        errors.add(`${p}[${i}] names ${s} a second time (hostnames compare without case)`);
        ok = false;
      } else {
        seen.add(s.toLowerCase());
        out.push(s);
      }
    });
    return ok ? { kind: 'hostnames', hostnames: out } : undefined;
  }
  const p = childPath(path, 'attributes');
  if (attributes === undefined || attributes.kind !== 'map' || attributes.entries.length === 0) {
    errors.add(`${p} must be a mapping of at least one attribute to its value, got ${attributes === undefined ? 'nothing' : describe(attributes)}`);
    return undefined;
  }
  const pairs = readAttributes(attributes, p, errors);
  return pairs === undefined ? undefined : { kind: 'attributes', attributes: pairs };
}

/**
 * A list of exact machines: `HOST=IP` or `{hostname, ip}`, both parts required. Mesos tells
 * machines apart by which of hostname and ip are set, and an agent's machine always has both, so
 * a bare hostname here would schedule a machine no agent runs on; `{hostnames: [...]}` resolves
 * hostnames against the known machines instead.
 */
function readMachineList(items: readonly YamlValue[], path: string, errors: ErrorList): MachineSelector | undefined {
  if (items.length === 0 || items.length > MAX_LISTED_MACHINES) {
    errors.add(`${path} must list 1 to ${MAX_LISTED_MACHINES} machines, got ${items.length}`);
    return undefined;
  }
  const out: MachineId[] = [];
  const seen = new Set<string>();
  let ok = true;
  items.forEach((item, i) => {
    const p = `${path}[${i}]`;
    let hostname: string | undefined;
    let ip: string | undefined;
    const s = scalarString(item);
    if (s !== undefined) {
      const eq = s.indexOf('=');
      if (eq <= 0) {
        errors.add(`${p} must be HOST=IP (use machines: {hostnames: [...]} to pick machines by hostname), got ${describe(item)}`);
        ok = false;
        return;
      }
      hostname = s.slice(0, eq);
      ip = s.slice(eq + 1);
    } else if (item.kind === 'map') {
      checkKeys(item, p, ['hostname', 'ip'], errors);
      const h = field(item, 'hostname');
      const a = field(item, 'ip');
      hostname = h === undefined ? undefined : scalarString(h);
      ip = a === undefined ? undefined : scalarString(a);
      if (hostname === undefined) errors.add(`${p}.hostname must be a hostname, got ${h === undefined ? 'nothing' : describe(h)}`);
      if (ip === undefined) errors.add(`${p}.ip must be an IPv4 address, got ${a === undefined ? 'nothing' : describe(a)}`);
      if (hostname === undefined || ip === undefined) {
        ok = false;
        return;
      }
    } else {
      errors.add(`${p} must be HOST=IP or {hostname, ip}, got ${describe(item)}`);
      ok = false;
      return;
    }
    const problem = hostnameProblem(hostname);
    if (problem !== undefined) {
      errors.add(`${p} has an invalid hostname ${JSON.stringify(hostname.slice(0, 60))}: ${problem}`);
      ok = false;
    }
    if (!isIPv4(ip)) {
      errors.add(`${p} has an invalid ip ${JSON.stringify(ip.slice(0, 60))}: expected a dotted-quad IPv4 address`);
      ok = false;
    }
    if (problem !== undefined || !isIPv4(ip)) return;
    const id: MachineId = { hostname, ip };
    const key = machineKey(id);
    if (seen.has(key)) {
      errors.add(`${p} lists ${machineText(id)} a second time`);
      ok = false;
      return;
    }
    seen.add(key);
    out.push(id);
  });
  return ok ? { kind: 'list', machines: out } : undefined;
}

/** What a plan writes instead of a command, for the refusals. */
const COMMAND_REFUSED = "on_down.command is not accepted: a plan names one of the master's hooks (on_down: { hook: NAME }); the master's hooks are configured with --maintenance_hooks";

/**
 * `on_down`: `{hook: NAME, timeout?, on_interrupted?}`, or just the hook's name. A command (the
 * old `{command: ...}`, or a string that is no hook name) is refused: running a command on the
 * master is the master operator's to configure, and a plan only names what they configured.
 */
function readOnDown(v: YamlValue, path: string, errors: ErrorList, o: Required<SpecOptions>): OnDownSpec | undefined {
  if (v.kind === 'scalar') {
    const name = scalarString(v);
    if (name === undefined || !HOOK_NAME.test(name)) {
      errors.add(`${path} must name one of the master's hooks, got ${describe(v)}: commands are not accepted; a plan names one of the master's hooks (on_down: NAME or on_down: { hook: NAME }); the master's hooks are configured with --maintenance_hooks`);
      return undefined;
    }
    return resolveHook(name, undefined, 'operator', childPath(path, 'hook'), errors, o);
  }
  if (v.kind !== 'map') {
    errors.add(`${path} must be a mapping with hook (and timeout, on_interrupted), or a hook's name, got ${describe(v)}`);
    return undefined;
  }
  if (field(v, 'command') !== undefined) {
    errors.add(COMMAND_REFUSED);
    return undefined;
  }
  checkKeys(v, path, ['hook', 'timeout', 'on_interrupted'], errors);
  const h = field(v, 'hook');
  const hookPath = childPath(path, 'hook');
  let name: string | undefined;
  if (h === undefined) errors.add(`${hookPath} is required: the name of one of the master's hooks (${hookNamesText(o.hooks)})`);
  else {
    name = scalarString(h);
    if (name === undefined || !HOOK_NAME.test(name)) {
      errors.add(`${hookPath} must be a hook's name (a lowercase letter, then lowercase letters, digits, '-' or '_'), got ${describe(h)}`);
      name = undefined;
    }
  }
  const t = field(v, 'timeout');
  const timeoutMs = t === undefined ? undefined : readDurationMs(t, childPath(path, 'timeout'), errors, true);
  const i = field(v, 'on_interrupted');
  const onInterrupted = i === undefined ? 'operator' : oneOf(i, childPath(path, 'on_interrupted'), errors, ON_INTERRUPTED);
  if (name === undefined || (t !== undefined && timeoutMs === undefined) || onInterrupted === undefined) return undefined;
  return resolveHook(name, timeoutMs, onInterrupted, hookPath, errors, o);
}

/** The hook a plan names, against the master's: unknown names and a longer timeout are refused at creation. */
function resolveHook(name: string, timeoutMs: number | undefined, onInterrupted: OnInterrupted, path: string, errors: ErrorList, o: Required<SpecOptions>): OnDownSpec | undefined {
  const definition = o.hooks.get(name);
  if (o.mode === 'create') {
    if (definition === undefined) {
      errors.add(`${path} '${name}' is not one of the master's hooks: ${hookNamesText(o.hooks)}`);
      return undefined;
    }
    if (timeoutMs !== undefined && timeoutMs > definition.timeoutMs) {
      errors.add(`on_down.timeout (${fmt(timeoutMs)}) is longer than hook ${name}'s own timeout (${fmt(definition.timeoutMs)}): a plan may ask for less, never more`);
      return undefined;
    }
  }
  // Stored: the hook's present timeout caps the plan's, and its default fills in for a plan that gave none.
  const own = definition?.timeoutMs;
  const effective = timeoutMs === undefined ? (own ?? DEFAULT_HOOK_TIMEOUT_MS) : own === undefined ? timeoutMs : Math.min(timeoutMs, own);
  return { kind: 'hook', hook: name, definition, timeoutMs: effective, onInterrupted };
}

/** An older master's `on_down`: a command, or `{command, timeout, on_interrupted}`; kept, never run. */
function readLegacyOnDown(v: YamlValue, path: string, errors: ErrorList): OnDownSpec | undefined {
  if (v.kind === 'scalar') {
    const command = readLegacyCommand(v, childPath(path, 'command'), errors);
    return command === undefined ? undefined : { kind: 'command', command, timeoutMs: DEFAULT_HOOK_TIMEOUT_MS, onInterrupted: 'operator' };
  }
  if (v.kind !== 'map') {
    errors.add(`${path} must be a mapping with command (and timeout, on_interrupted), got ${describe(v)}`);
    return undefined;
  }
  checkKeys(v, path, ['command', 'timeout', 'on_interrupted'], errors);
  const c = field(v, 'command');
  let command: string | undefined;
  if (c === undefined) errors.add(`${childPath(path, 'command')} is required`);
  else command = readLegacyCommand(c, childPath(path, 'command'), errors);
  const t = field(v, 'timeout');
  const timeoutMs = t === undefined ? DEFAULT_HOOK_TIMEOUT_MS : readDurationMs(t, childPath(path, 'timeout'), errors, true);
  const o = field(v, 'on_interrupted');
  const onInterrupted = o === undefined ? 'operator' : oneOf(o, childPath(path, 'on_interrupted'), errors, ON_INTERRUPTED);
  if (command === undefined || timeoutMs === undefined || onInterrupted === undefined) return undefined;
  return { kind: 'command', command, timeoutMs, onInterrupted };
}

function readLegacyCommand(v: YamlValue, path: string, errors: ErrorList): string | undefined {
  const s = scalarString(v);
  if (s === undefined || s.trim() === '' || s.length > MAX_COMMAND_CHARS) {
    errors.add(`${path} must be a non-empty command of at most ${MAX_COMMAND_CHARS} characters, got ${describe(v)}`);
    return undefined;
  }
  return s;
}

function readBudget(v: YamlValue, path: string, errors: ErrorList): BudgetSpec | undefined {
  if (v.kind !== 'map') {
    errors.add(`${path} must be a mapping with max_down and/or min_active_agents, got ${describe(v)}`);
    return undefined;
  }
  checkKeys(v, path, ['max_down', 'min_active_agents'], errors);
  const d = field(v, 'max_down');
  const maxDown = d === undefined ? undefined : readCount(d, childPath(path, 'max_down'), errors);
  const m = field(v, 'min_active_agents');
  let minActiveAgents: MinActiveAgents | undefined;
  let ok = (d === undefined || maxDown !== undefined);
  if (m !== undefined) {
    const p = childPath(path, 'min_active_agents');
    if (m.kind !== 'map') {
      errors.add(`${p} must be a mapping of attributes and count (e.g. {zone: a, count: 10}), got ${describe(m)}`);
      ok = false;
    } else {
      const c = field(m, 'count');
      const count = c === undefined ? undefined : readCount(c, childPath(p, 'count'), errors);
      if (c === undefined) errors.add(`${childPath(p, 'count')} is required`);
      const attributes = readAttributes(m, p, errors, ['count']);
      if (count === undefined || attributes === undefined) ok = false;
      else minActiveAgents = { attributes, count };
    }
  }
  return ok ? { maxDown, minActiveAgents } : undefined;
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

// ---------------------------------------------------------------------------------------------
// Selecting machines

/** A machine as the driver knows it: its id (an agent's hostname and ip) and the attributes of its agent. */
export interface ClusterMachine {
  readonly id: MachineId;
  readonly attributes: Readonly<Record<string, string>>;
}

/** One phase of the plan: its name and its machines, in the order their steps run. */
export interface PhaseMachines {
  readonly name: string;
  readonly machines: readonly MachineId[];
}

export interface MachineSelection {
  readonly phases: readonly PhaseMachines[];
  /** Hostnames of `{hostnames: [...]}` that matched no known machine (the driver refuses or reports them). */
  readonly unmatched: readonly string[];
}

/** Name of the phase of machines without the `group_by` attribute. */
export const NO_GROUP_PHASE = '(none)';
/** Name of the one phase of a plan without `group_by`. */
export const SINGLE_PHASE = 'all';

/**
 * Orders text as people read numbered racks: `r2` before `r10`. Runs of digits compare by value,
 * the rest by code unit, and a tie falls back to plain order so the result is total.
 */
export function naturalCompare(a: string, b: string): number {
  const re = /(\d+)|(\D+)/g;
  const pa = a.match(re) ?? [];
  const pb = b.match(re) ?? [];
  for (let i = 0; i < Math.min(pa.length, pb.length); i++) {
    const x = pa[i] ?? '';
    const y = pb[i] ?? '';
    if (x === y) continue;
    const dx = /^\d/.test(x);
    const dy = /^\d/.test(y);
    if (dx && dy) {
      const nx = x.replace(/^0+/, '');
      const ny = y.replace(/^0+/, '');
      if (nx.length !== ny.length) return nx.length - ny.length;
      if (nx !== ny) return nx < ny ? -1 : 1;
      continue;
    }
    return x < y ? -1 : 1;
  }
  if (pa.length !== pb.length) return pa.length - pb.length;
  return a < b ? -1 : a > b ? 1 : 0;
}

function compareMachines(a: MachineId, b: MachineId): number {
  return naturalCompare((a.hostname ?? '').toLowerCase(), (b.hostname ?? '').toLowerCase()) || naturalCompare(a.ip ?? '', b.ip ?? '');
}

const own = (r: Readonly<Record<string, string>>, k: string): string | undefined => (Object.hasOwn(r, k) ? r[k] : undefined);

/** Whether attributes match every pair (an empty set of pairs matches everything). */
export function attributesMatch(attributes: Readonly<Record<string, string>>, wanted: Readonly<Record<string, string>>): boolean {
  return Object.keys(wanted).every((k) => own(attributes, k) === own(wanted, k));
}

/**
 * The machines a spec selects among the known ones, grouped into phases. `all` and `attributes`
 * order each phase by hostname (`r1-2` before `r1-10`); `hostnames` and lists keep the order
 * written. One machine per key: if the driver lists a machine twice, the first entry counts.
 * Phases are ordered by group value the same way, machines without the attribute last.
 */
export function selectMachines(spec: MaintenancePlanSpec, machines: readonly ClusterMachine[]): MachineSelection {
  const known = new Map<string, ClusterMachine>();
  for (const m of machines) if (!known.has(machineKey(m.id))) known.set(machineKey(m.id), m);
  const sel = spec.machines;
  let chosen: MachineId[] = [];
  const unmatched: string[] = [];
  switch (sel.kind) {
    case 'all':
      chosen = [...known.values()].map((m) => m.id).sort(compareMachines);
      break;
    case 'attributes':
      chosen = [...known.values()].filter((m) => attributesMatch(m.attributes, sel.attributes)).map((m) => m.id).sort(compareMachines);
      break;
    case 'hostnames': {
      // Indexed once: a list of 20,000 hostnames against a fleet must not be a product of the two.
      const byHostname = new Map<string, MachineId[]>();
      for (const m of known.values()) {
        if (m.id.hostname === undefined) continue;
        const h = m.id.hostname.toLowerCase();
        byHostname.set(h, [...(byHostname.get(h) ?? []), m.id]);
      }
      // Hostnames are unique (case-insensitively) in a parsed spec, so no machine is taken twice.
      for (const h of sel.hostnames) {
        const found = [...(byHostname.get(h.toLowerCase()) ?? [])].sort(compareMachines);
        if (found.length === 0) unmatched.push(h);
        chosen.push(...found);
      }
      break;
    }
    case 'list':
      chosen = [...sel.machines];
      break;
  }
  if (spec.groupBy === undefined) return { phases: chosen.length === 0 ? [] : [{ name: SINGLE_PHASE, machines: chosen }], unmatched };
  const groupBy = spec.groupBy;
  // Keyed by value, with the attribute-less group apart, so a value spelled "(none)" cannot merge into it.
  const groups = new Map<string, MachineId[]>();
  const none: MachineId[] = [];
  for (const id of chosen) {
    const m = known.get(machineKey(id));
    const value = m === undefined ? undefined : own(m.attributes, groupBy);
    if (value === undefined) none.push(id);
    else {
      let g = groups.get(value);
      if (g === undefined) groups.set(value, (g = []));
      g.push(id);
    }
  }
  const phases: PhaseMachines[] = [...groups.keys()].sort(naturalCompare).map((value) => ({ name: value, machines: groups.get(value) ?? [] }));
  if (none.length > 0) phases.push({ name: NO_GROUP_PHASE, machines: none });
  return { phases, unmatched };
}

// ---------------------------------------------------------------------------------------------
// The plan

/** A step of the plan: the phase it is in, its name, and the machine it maintains. */
export interface PlanStepMachine {
  readonly phase: string;
  readonly step: string;
  readonly machine: MachineId;
}

/**
 * Each machine's step and its name: the hostname when no other machine of the plan shares it
 * (case-insensitively), else `hostname (ip)`; `(ip)` for a machine without a hostname. Names are
 * unique in the plan, so `?step=<name>` finds one step and stored overrides match by name.
 */
export function planSteps(selection: MachineSelection): PlanStepMachine[] {
  const all = selection.phases.flatMap((p) => p.machines);
  const count = new Map<string, number>();
  for (const id of all) if (id.hostname !== undefined) count.set(id.hostname.toLowerCase(), (count.get(id.hostname.toLowerCase()) ?? 0) + 1);
  return selection.phases.flatMap((p) =>
    p.machines.map((machine) => ({
      phase: p.name,
      step: machine.hostname !== undefined && count.get(machine.hostname.toLowerCase()) === 1 ? machine.hostname : machineText(machine),
      machine,
    })));
}

/**
 * The plan of shared/plans for a spec and its selection: the spec's plan strategy over one phase
 * per group, each with the phase strategy over one step per machine. The plan engine has no cap
 * on running steps, so `max_parallel` is not here: `budgetAllows` (budget.ts)
 * enforces it, and the driver asks it before starting any step the strategy offers.
 */
export function planFromSpec(spec: MaintenancePlanSpec, selection: MachineSelection): Plan {
  const steps = planSteps(selection);
  let at = 0;
  const phases = selection.phases.map((p) => {
    // planSteps keeps phase order, so each phase takes the next run of steps (by position, not by
    // name: two phases may share a name if a group value is spelled like NO_GROUP_PHASE).
    const mine = steps.slice(at, at + p.machines.length);
    at += p.machines.length;
    return newPhase(p.name, spec.phaseStrategy, mine.map((s) => new Step({ name: s.step })));
  });
  return newPlan(spec.name, spec.strategy, phases);
}

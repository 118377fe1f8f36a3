/**
 * Task checks and health checks (Mesos `TaskInfo.check` and `TaskInfo.health_check`), as the
 * command executor runs them (src/checks/ in Mesos): the pure core and the clock-driven loop.
 *
 *   parseTaskChecks   what a task's CheckInfo / HealthCheck mean, or why the launch is refused
 *   nextCheck         when a check result becomes a status update
 *   nextHealth        when a health result becomes a status update, and when it kills the task
 *   Checker           when to probe: delay, interval, timeout (a Clock and a ProbeRunner are
 *                     injected, so tests jump over seconds and use no processes)
 *   TaskChecking      a task's check and health check together
 *
 * The probes themselves (a command in the task's sandbox, an HTTP GET, a TCP connect) are
 * agent/probes.ts; the updates and the kill are agent/supervisor.ts.
 *
 * What a scheduler sees (the updates are reliable, like every other one from the agent):
 * - Check: the first probe runs `delay_seconds` after the task is RUNNING, the next one
 *   `interval_seconds` after the previous one ended (as Mesos). Each time the result differs
 *   from the previous one, a TASK_RUNNING update with reason REASON_TASK_CHECK_STATUS_UPDATED
 *   and `check_status` = the result. A probe longer than `timeout_seconds` (0: no limit) is
 *   killed and has no result: `{"type":"COMMAND","command":{}}`. As in Mesos, the state before
 *   the first result is that same empty result, so a first probe that times out sends nothing.
 * - Health check: a probe passes on exit code 0 (HTTP: status 200-399; TCP: connected) and fails
 *   otherwise, a timeout included. A TASK_RUNNING update with reason
 *   REASON_TASK_HEALTH_CHECK_STATUS_UPDATED and `healthy` is sent when the health changes: the
 *   first pass (true), the first counted failure (false), the first pass after failures (true).
 *   (Mesos' executor repeats `healthy:false` on every failure; Drydock sends it once.) Failures
 *   within `grace_period_seconds` of the task start are not counted until a probe has passed
 *   once. After `consecutive_failures` counted failures in a row the task is killed with its
 *   kill policy; it ends TASK_KILLED, `healthy: false`, reason
 *   REASON_TASK_HEALTH_CHECK_STATUS_UPDATED, a message giving the count.
 * - Fields: every update of a task with a check that the executor side sends (STARTING, RUNNING,
 *   KILLING, the terminal one) carries `check_status`, the latest result; TASK_RUNNING updates
 *   carry `healthy` once there is a verdict. A (health) check update still queued behind an
 *   unacknowledged one is replaced by a newer one of its kind (agent/supervisor.ts).
 * - HTTP probes GET http://127.0.0.1:<port><path> (::1 with protocol IPv6) and report the first
 *   status code without following redirects (3xx passes a health check, as in Mesos); a refused
 *   connection has no result. TCP probes report `succeeded` true or false. HTTPS is refused.
 * - Checking stops when the task is killed (a drain's kill included) or ends, and when the agent
 *   stops; the probe under way is killed. Nothing is checkpointed: after a restart a re-adopted
 *   task is checked from scratch.
 */

import type { Clock, TimerHandle } from '../shared/clock.js';
import type { CheckStatusInfo, CheckType, CommandInfo, TaskInfo } from '../shared/mesos.js';
import { CHECK_INFO, HEALTH_CHECK, decodeMessage } from '../shared/proto.js';

// ---- Specs ---------------------------------------------------------------------------------

/** What one probe does. Ports are the task's own (not mapped), on loopback, as in Mesos. */
export type Probe =
  | { type: 'COMMAND'; command: CommandInfo }
  | { type: 'HTTP'; port: number; path: string; ipv6: boolean }
  | { type: 'TCP'; port: number; ipv6: boolean };

/** When to probe. */
export interface CheckTiming {
  /** Before the first probe, from the task start. */
  delayMs: number;
  /** From the end of one probe to the start of the next. */
  intervalMs: number;
  /** Longest a probe may take; undefined: no limit (Mesos: timeout_seconds 0). */
  timeoutMs: number | undefined;
}

/** A validated TaskInfo.check. */
export interface CheckSpec {
  probe: Probe;
  timing: CheckTiming;
}

/** A validated TaskInfo.health_check. */
export interface HealthSpec {
  probe: Probe;
  timing: CheckTiming;
  /** Counted failures in a row that kill the task. */
  consecutiveFailures: number;
  /** Failures this long after the task start are not counted, until a probe has passed once. */
  gracePeriodMs: number;
}

/** A task's checks; each undefined when the TaskInfo has none. */
export interface TaskChecks {
  check: CheckSpec | undefined;
  health: HealthSpec | undefined;
}

/** CheckInfo's defaults in Mesos (include/mesos/mesos.proto), in seconds. */
export const CHECK_DEFAULTS = { delaySeconds: 15, intervalSeconds: 10, timeoutSeconds: 20 } as const;
/** HealthCheck's defaults in Mesos, in seconds (consecutive_failures a count). */
export const HEALTH_CHECK_DEFAULTS = { ...CHECK_DEFAULTS, consecutiveFailures: 3, gracePeriodSeconds: 10 } as const;

/**
 * The shortest interval between probes. Mesos allows 0 (and warns); here a check that fails at
 * once with interval 0 would fork without pause, so the agent waits at least this long.
 */
export const MIN_INTERVAL_MS = 10;

/** A parse result: the value, or the TASK_ERROR message. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

type RawType = CheckType | 'UNKNOWN';
interface RawTiming {
  delay_seconds?: number;
  interval_seconds?: number;
  timeout_seconds?: number;
}
interface RawCheck extends RawTiming {
  type?: RawType;
  command?: { command: CommandInfo };
  http?: { port: number; path?: string };
  tcp?: { port: number };
}
interface RawHealth extends RawTiming {
  type?: RawType;
  command?: CommandInfo;
  http?: { protocol?: 'IPv4' | 'IPv6'; scheme?: string; port: number; path?: string };
  tcp?: { protocol?: 'IPv4' | 'IPv6'; port: number };
  consecutive_failures?: number;
  grace_period_seconds?: number;
}

/**
 * Reads and validates a task's `check` and `health_check`. An error names the field and is the
 * TASK_ERROR (REASON_TASK_INVALID) message, prefixed as Mesos' master prefixes its own:
 * `Task's check is invalid: ...`, `Task's health check is invalid: ...`. Pure; never throws.
 */
export function parseTaskChecks(task: Pick<TaskInfo, 'check' | 'health_check'>): Parsed<TaskChecks> {
  let check: CheckSpec | undefined;
  let health: HealthSpec | undefined;
  if (task.check !== undefined) {
    const c = parseCheck(task.check);
    if (!c.ok) return { ok: false, error: `Task's check is invalid: ${c.error}` };
    check = c.value;
  }
  if (task.health_check !== undefined) {
    const h = parseHealthCheck(task.health_check);
    if (!h.ok) return { ok: false, error: `Task's health check is invalid: ${h.error}` };
    health = h.value;
  }
  return { ok: true, value: { check, health } };
}

function parseCheck(json: unknown): Parsed<CheckSpec> {
  const d = decodeMessage<RawCheck>(CHECK_INFO, json, 'check');
  if (!d.ok) return d;
  const raw = d.value;
  const probe = parseProbe('check', raw.type, raw.command?.command, 'check.command.command', raw.command !== undefined, raw.http, raw.tcp);
  if (!probe.ok) return probe;
  const timing = parseTiming('check', raw, CHECK_DEFAULTS);
  if (!timing.ok) return timing;
  return { ok: true, value: { probe: probe.value, timing: timing.value } };
}

function parseHealthCheck(json: unknown): Parsed<HealthSpec> {
  const d = decodeMessage<RawHealth>(HEALTH_CHECK, json, 'health_check');
  if (!d.ok) return d;
  const raw = d.value;
  if (raw.http?.scheme !== undefined && raw.http.scheme !== 'http') {
    return { ok: false, error: `'health_check.http.scheme' must be 'http' (Drydock runs no HTTPS checks), got '${raw.http.scheme}'` };
  }
  const probe = parseProbe('health_check', raw.type, raw.command, 'health_check.command', raw.command !== undefined, raw.http, raw.tcp);
  if (!probe.ok) return probe;
  const timing = parseTiming('health_check', raw, HEALTH_CHECK_DEFAULTS);
  if (!timing.ok) return timing;
  const grace = raw.grace_period_seconds ?? HEALTH_CHECK_DEFAULTS.gracePeriodSeconds;
  if (grace < 0) return { ok: false, error: `Expecting 'health_check.grace_period_seconds' to be non-negative, got ${grace}` };
  return {
    ok: true,
    value: {
      probe: probe.value,
      timing: timing.value,
      // As Mesos, 0 kills at the first counted failure (consecutiveFailures >= 0 always holds).
      consecutiveFailures: raw.consecutive_failures ?? HEALTH_CHECK_DEFAULTS.consecutiveFailures,
      gracePeriodMs: grace * 1000,
    },
  };
}

function parseProbe(
  field: 'check' | 'health_check',
  type: RawType | undefined,
  command: CommandInfo | undefined,
  commandPath: string,
  hasCommand: boolean,
  http: { protocol?: 'IPv4' | 'IPv6'; port: number; path?: string } | undefined,
  tcp: { protocol?: 'IPv4' | 'IPv6'; port: number } | undefined,
): Parsed<Probe> {
  switch (type) {
    case 'COMMAND': {
      if (!hasCommand || command === undefined) return { ok: false, error: `Expecting '${commandPath}' to be set for a COMMAND check` };
      if (command.value === undefined || command.value === '') return { ok: false, error: `Expecting '${commandPath}.value' to be set for a COMMAND check` };
      // spawn() refuses these: better a clear TASK_ERROR than a check that can never run.
      const texts: Array<[string, string]> = [[`${commandPath}.value`, command.value]];
      for (const [i, a] of (command.arguments ?? []).entries()) texts.push([`${commandPath}.arguments[${i}]`, a]);
      for (const [i, v] of (command.environment?.variables ?? []).entries()) {
        texts.push([`${commandPath}.environment.variables[${i}].name`, v.name]);
        if (v.value !== undefined) texts.push([`${commandPath}.environment.variables[${i}].value`, v.value]);
      }
      const bad = texts.find(([, text]) => text.includes('\u0000'));
      if (bad !== undefined) return { ok: false, error: `'${bad[0]}' must not contain NUL characters` };
      const badName = (command.environment?.variables ?? []).findIndex((v) => v.name === '' || v.name.includes('='));
      if (badName !== -1) return { ok: false, error: `'${commandPath}.environment.variables[${badName}].name' must be a non-empty name without '='` };
      return { ok: true, value: { type: 'COMMAND', command } };
    }
    case 'HTTP': {
      if (http === undefined) return { ok: false, error: `Expecting '${field}.http' to be set for an HTTP check` };
      const port = checkPort(`${field}.http.port`, http.port);
      if (port !== undefined) return { ok: false, error: port };
      const path = http.path ?? '/';
      if (!path.startsWith('/')) return { ok: false, error: `'${field}.http.path' must start with '/', got '${path.length > 40 ? `${path.slice(0, 40)}...` : path}'` };
      if (/[\u0000-\u0020\u007f]/.test(path)) return { ok: false, error: `'${field}.http.path' must not contain spaces or control characters` };
      return { ok: true, value: { type: 'HTTP', port: http.port, path, ipv6: http.protocol === 'IPv6' } };
    }
    case 'TCP': {
      if (tcp === undefined) return { ok: false, error: `Expecting '${field}.tcp' to be set for a TCP check` };
      const port = checkPort(`${field}.tcp.port`, tcp.port);
      if (port !== undefined) return { ok: false, error: port };
      return { ok: true, value: { type: 'TCP', port: tcp.port, ipv6: tcp.protocol === 'IPv6' } };
    }
    default:
      // Absent, UNKNOWN, or a name this agent does not know (decoding left it unset).
      return { ok: false, error: `Expecting '${field}.type' to be COMMAND, HTTP or TCP` };
  }
}

function checkPort(path: string, port: number): string | undefined {
  return port >= 1 && port <= 65535 ? undefined : `'${path}' must be a port between 1 and 65535, got ${port}`;
}

function parseTiming(
  field: 'check' | 'health_check',
  raw: RawTiming,
  defaults: { delaySeconds: number; intervalSeconds: number; timeoutSeconds: number },
): Parsed<CheckTiming> {
  const values: Array<[keyof RawTiming, number]> = [
    ['delay_seconds', raw.delay_seconds ?? defaults.delaySeconds],
    ['interval_seconds', raw.interval_seconds ?? defaults.intervalSeconds],
    ['timeout_seconds', raw.timeout_seconds ?? defaults.timeoutSeconds],
  ];
  for (const [name, v] of values) {
    if (v < 0) return { ok: false, error: `Expecting '${field}.${name}' to be non-negative, got ${v}` };
  }
  const [delay, interval, timeout] = values.map(([, v]) => v * 1000) as [number, number, number];
  return { ok: true, value: { delayMs: delay, intervalMs: Math.max(MIN_INTERVAL_MS, interval), timeoutMs: timeout > 0 ? timeout : undefined } };
}

// ---- Results -------------------------------------------------------------------------------

/** The result of a probe that has none (timed out, killed by a signal, could not start). */
export function emptyStatus(type: CheckType): CheckStatusInfo {
  switch (type) {
    case 'COMMAND':
      return { type, command: {} };
    case 'HTTP':
      return { type, http: {} };
    case 'TCP':
      return { type, tcp: {} };
  }
}

/** Field by field: the results are small and built by the agent, never by a client. */
export function sameStatus(a: CheckStatusInfo, b: CheckStatusInfo): boolean {
  return (
    a.type === b.type &&
    (a.command === undefined) === (b.command === undefined) &&
    a.command?.exit_code === b.command?.exit_code &&
    (a.http === undefined) === (b.http === undefined) &&
    a.http?.status_code === b.http?.status_code &&
    (a.tcp === undefined) === (b.tcp === undefined) &&
    a.tcp?.succeeded === b.tcp?.succeeded
  );
}

/** How a health check reads a result (Mesos `interpretCheckStatusInfo`); no result is a failure. */
export function passed(result: CheckStatusInfo): boolean {
  const code = result.http?.status_code;
  switch (result.type) {
    case 'COMMAND':
      return result.command?.exit_code === 0;
    case 'HTTP':
      return code !== undefined && code >= 200 && code < 400;
    case 'TCP':
      return result.tcp?.succeeded === true;
    default:
      return false;
  }
}

/** A check's memory: the last result, which the scheduler has (or will have) seen. */
export interface CheckState {
  last: CheckStatusInfo;
}

/** The state before the first result: the empty result the first TASK_RUNNING already carries. */
export function initialCheck(type: CheckType): CheckState {
  return { last: emptyStatus(type) };
}

/** A check result: an update is due exactly when it differs from the last one. */
export function nextCheck(state: CheckState, result: CheckStatusInfo): { state: CheckState; update: CheckStatusInfo | undefined } {
  if (sameStatus(state.last, result)) return { state, update: undefined };
  return { state: { last: result }, update: result };
}

/** A health check's memory. */
export interface HealthState {
  /** When checking began (the task start, for the grace period). */
  startedMs: number;
  /** No probe has passed yet: failures within the grace period are not counted. */
  initializing: boolean;
  /** Counted failures in a row. */
  failures: number;
  /** The health the scheduler was last told; undefined before the first verdict. */
  reported: boolean | undefined;
}

/** The state when checking begins at `startedMs`. */
export function initialHealth(startedMs: number): HealthState {
  return { startedMs, initializing: true, failures: 0, reported: undefined };
}

/** What a health result means for the task. */
export interface HealthDecision {
  state: HealthState;
  /** Send a TASK_RUNNING update with this `healthy`. */
  update: boolean | undefined;
  /** Kill the task: this many counted failures in a row. */
  kill: number | undefined;
}

/** A health result, as Mesos' HealthChecker reads it, with updates sent on a change only. */
export function nextHealth(spec: Pick<HealthSpec, 'consecutiveFailures' | 'gracePeriodMs'>, state: HealthState, ok: boolean, nowMs: number): HealthDecision {
  if (ok) {
    return { state: { ...state, initializing: false, failures: 0, reported: true }, update: state.reported === true ? undefined : true, kill: undefined };
  }
  if (state.initializing && spec.gracePeriodMs > 0 && nowMs - state.startedMs <= spec.gracePeriodMs) {
    return { state, update: undefined, kill: undefined };
  }
  const failures = state.failures + 1;
  return {
    state: { ...state, failures, reported: false },
    update: state.reported === false ? undefined : false,
    kill: failures >= spec.consecutiveFailures ? failures : undefined,
  };
}

// ---- The probing loop ----------------------------------------------------------------------

/** One probe under way: its result (never rejects) and a way to stop it (kills its process group). */
export interface ProbeRun {
  readonly result: Promise<CheckStatusInfo>;
  abort(): void;
}

/** Starts a probe (agent/probes.ts runProbe, bound to a task's sandbox and environment). */
export type ProbeRunner = (probe: Probe) => ProbeRun;

/** A Checker's lifecycle: not started, between probes, a probe under way, stopped for good. */
export type CheckerState = 'idle' | 'waiting' | 'probing' | 'stopped';

/** What a Checker probes, when, and whom it tells. */
export interface CheckerOptions {
  clock: Clock;
  probe: Probe;
  timing: CheckTiming;
  run: ProbeRunner;
  /** Every result, a timeout included (as the empty result). */
  onResult: (result: CheckStatusInfo) => void;
  /** onResult threw: reported here, and probing goes on. */
  onError: (e: unknown) => void;
}

/**
 * Probes on a schedule: `delayMs` after start(), then `intervalMs` after each result. A probe
 * still running at `timeoutMs` is aborted and yields the empty result at once. stop() aborts
 * the probe under way and ignores whatever it still reports. Lifecycle: idle → waiting ⇄
 * probing → stopped.
 */
export class Checker {
  readonly #o: CheckerOptions;
  #state: CheckerState = 'idle';
  #timer: TimerHandle | undefined;
  #current: { run: ProbeRun; timeout: TimerHandle | undefined } | undefined;

  constructor(options: CheckerOptions) {
    this.#o = options;
  }

  get state(): CheckerState {
    return this.#state;
  }

  start(): void {
    if (this.#state !== 'idle') return;
    this.#wait(this.#o.timing.delayMs);
  }

  stop(): void {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    this.#timer?.cancel();
    this.#timer = undefined;
    const current = this.#current;
    this.#current = undefined;
    current?.timeout?.cancel();
    current?.run.abort();
  }

  #wait(ms: number): void {
    this.#state = 'waiting';
    this.#timer = this.#o.clock.setTimer(ms, () => {
      this.#timer = undefined;
      if (this.#state === 'waiting') this.#probe();
    });
  }

  #probe(): void {
    this.#state = 'probing';
    const empty = emptyStatus(this.#o.probe.type);
    let run: ProbeRun;
    try {
      run = this.#o.run(this.#o.probe);
    } catch {
      run = { result: Promise.resolve(empty), abort: () => {} };
    }
    const current: { run: ProbeRun; timeout: TimerHandle | undefined } = { run, timeout: undefined };
    this.#current = current;
    const timeoutMs = this.#o.timing.timeoutMs;
    if (timeoutMs !== undefined) {
      current.timeout = this.#o.clock.setTimer(timeoutMs, () => {
        if (this.#current !== current) return;
        run.abort();
        this.#settle(current, empty);
      });
    }
    run.result.then(
      (result) => this.#settle(current, result),
      () => this.#settle(current, empty),
    );
  }

  #settle(current: { run: ProbeRun; timeout: TimerHandle | undefined }, result: CheckStatusInfo): void {
    if (this.#current !== current || this.#state !== 'probing') return;
    this.#current = undefined;
    current.timeout?.cancel();
    try {
      this.#o.onResult(result);
    } catch (e) {
      this.#o.onError(e);
    }
    // onResult may have stopped us (the task is being killed).
    if (this.#state === 'probing') this.#wait(this.#o.timing.intervalMs);
  }
}

/** What a TaskChecking needs: time, a probe runner, and the supervisor's hands. */
export interface TaskCheckingOptions {
  clock: Clock;
  run: ProbeRunner;
  /** The check result changed: send a TASK_RUNNING update carrying it. */
  checkChanged: (status: CheckStatusInfo) => void;
  /** The health changed: send a TASK_RUNNING update with `healthy`. */
  healthChanged: (healthy: boolean) => void;
  /** `failures` counted health check failures in a row: kill the task. Called after healthChanged. */
  unhealthy: (failures: number) => void;
  /** A callback threw (say, the checkpoint could not be written): logged; checking goes on. */
  onError: (e: unknown) => void;
}

/** A TaskChecking's lifecycle: created with its task, checking while it runs, stopped when it is killed or ends. */
export type TaskCheckingState = 'idle' | 'checking' | 'stopped';

/**
 * A task's check and health check, each with its own Checker, and what the scheduler was told.
 * Nothing of it is checkpointed: a re-adopted task starts checking from scratch.
 */
export class TaskChecking {
  readonly #spec: TaskChecks;
  readonly #o: TaskCheckingOptions;
  #state: TaskCheckingState = 'idle';
  #check: CheckState | undefined;
  #health: HealthState | undefined;
  readonly #checkers: Checker[] = [];

  constructor(spec: TaskChecks, options: TaskCheckingOptions) {
    this.#spec = spec;
    this.#o = options;
    if (spec.check !== undefined) this.#check = initialCheck(spec.check.probe.type);
  }

  get state(): TaskCheckingState {
    return this.#state;
  }

  /** The latest check result for the task's updates: empty before the first; undefined without a check. */
  get checkStatus(): CheckStatusInfo | undefined {
    return this.#check?.last;
  }

  /** The health last reported; undefined without a health check or before its first verdict. */
  get healthy(): boolean | undefined {
    return this.#health?.reported;
  }

  /** Starts both checkers; the grace period counts from now. */
  start(): void {
    if (this.#state !== 'idle') return;
    this.#state = 'checking';
    const { check, health } = this.#spec;
    if (check !== undefined) {
      this.#checkers.push(
        new Checker({
          clock: this.#o.clock,
          probe: check.probe,
          timing: check.timing,
          run: this.#o.run,
          onError: this.#o.onError,
          onResult: (result) => {
            if (this.#state !== 'checking' || this.#check === undefined) return;
            const next = nextCheck(this.#check, result);
            this.#check = next.state;
            if (next.update !== undefined) this.#o.checkChanged(next.update);
          },
        }),
      );
    }
    if (health !== undefined) {
      this.#health = initialHealth(this.#o.clock.now());
      this.#checkers.push(
        new Checker({
          clock: this.#o.clock,
          probe: health.probe,
          timing: health.timing,
          run: this.#o.run,
          onError: this.#o.onError,
          onResult: (result) => {
            if (this.#state !== 'checking' || this.#health === undefined) return;
            const next = nextHealth(health, this.#health, passed(result), this.#o.clock.now());
            this.#health = next.state;
            try {
              if (next.update !== undefined) this.#o.healthChanged(next.update);
            } finally {
              // Even when the update could not be queued, an unhealthy task is still killed.
              if (next.kill !== undefined && this.#state === 'checking') this.#o.unhealthy(next.kill);
            }
          },
        }),
      );
    }
    for (const c of this.#checkers) c.start();
  }

  /** Stops probing for good; a probe under way is killed. */
  stop(): void {
    if (this.#state === 'stopped') return;
    this.#state = 'stopped';
    for (const c of this.#checkers) c.stop();
  }
}

/**
 * One machine's step of a maintenance plan (issue 12), as a pure state machine: the step's stored
 * state and what the driver observes of the machine go in; the next state, the actions to carry
 * out and the one line an operator sees ("waiting for ...") come out. No I/O, no timers; the
 * time is an argument.
 *
 *   PENDING -> SCHEDULED           schedule issued: the window goes into the maintenance schedule
 *           -> WAITING_FRAMEWORKS  the window shows (machine DRAINING, frameworks get inverse offers);
 *                                  until every framework with resources there ACCEPTed, or
 *                                  wait_for_frameworks passed (and the window started)
 *           -> DRAINING            DRAIN_AGENT (max_grace_period) issued for each agent of the machine
 *           -> DRAINED             every agent DRAINED (passed through in the same call)
 *           -> DOWN                machine down issued, until seen DOWN
 *           -> HOOK                on_down running, if the spec has one
 *           -> AWAITING_OPERATOR   if up_when is operator, until the operator continues the step
 *           -> UP                  machine up issued, until seen UP and an agent of the machine is
 *                                  registered and active
 *           -> SETTLING            that agent held active for `settle`
 *           -> COMPLETE
 *   any stage but AWAITING_OPERATOR older than step_timeout -> ERROR, with a message in words.
 *
 * How the driver uses it, on every wake-up (an event about the machine, or a timer at the latest
 * `nextWakeMs`):
 *   1. build a `MachineObservation` from the master's state (below: what each field means);
 *   2. `advanceStep(state, obs, spec, nowMs)`; write `result.state` to the registry *first*, then
 *      carry out `result.actions` in order, then show `result.waitingFor` on the step and emit
 *      `result.entered` as step events. If the master dies between the write and the actions,
 *      nothing is lost: an action whose effect is not seen is issued again after REISSUE_AFTER_MS.
 *   3. set the plan engine's step to `stepStatusOf(state)` (and its note to `waitingFor`).
 * A PENDING step is started by the first `advanceStep` on it, so the driver calls it for a PENDING
 * step only once the plan's strategy offers the step and `budgetAllows` (budget.ts)
 * says yes. Calling it again with the same observation and time emits nothing new.
 *
 * Carrying out actions: each is safe to repeat. `schedule` merges one window for one machine into
 * the schedule (replacing that machine's unavailability); `unschedule` removes the machine from it;
 * `drain` is DRAIN_AGENT through the master's internal path (the operator API refuses agents of
 * scheduled machines, as Mesos does); `down`/`up` are START/STOP_MAINTENANCE for one machine (an
 * answer "already DOWN/UP" counts as done); `run_hook` runs an attempt at most once (keep a durable
 * record per attempt: a re-issued `run_hook` of an attempt already started is ignored) and reports
 * it in `obs.hook`; a hook found without its process after a restart is reported `interrupted`.
 *
 * A hook's output is never part of `error`: a failed hook's last lines are kept in `hookOutput`,
 * and `errorText(state, reveal)` shows them only where the caller may (principals allowed
 * run_maintenance_hooks on the hook); everything this module writes by itself is the hidden form.
 */
import { formatDuration } from '../../shared/duration.js';
import type { DrainState } from '../../shared/drain.js';
import type { MachineId, MachineMode } from '../../shared/machine.js';
import type { StepStatus } from '../../shared/plans/status.js';
import type { MaintenancePlanSpec } from './spec.js';
import { fillHookArgv, OUTPUT_HIDDEN, type HookPlaceholder } from './hooks.js';

// ---------------------------------------------------------------------------------------------
// State

/** Where a step is. Stages are the issue's states, in order; ERROR can follow any of them. */
export type StepStage =
  | 'PENDING' | 'SCHEDULED' | 'WAITING_FRAMEWORKS' | 'DRAINING' | 'DRAINED' | 'DOWN' | 'HOOK' | 'AWAITING_OPERATOR' | 'UP' | 'SETTLING'
  | 'COMPLETE' | 'ERROR';

/** A framework's remembered answer to the inverse offer of this window. */
export interface RememberedAnswer {
  readonly frameworkId: string;
  readonly name: string;
  readonly answer: 'ACCEPT' | 'DECLINE';
}

/** What stopping (or force-completing) a step left the machine in, listed in the plan. */
export interface LeftMachine {
  readonly mode: MachineMode;
  /** In words, with the command that finishes the job ("DOWN: bring it up with drydock machine up h=10.0.0.3"). */
  readonly text: string;
}

/**
 * A step's state: plain JSON (numbers, strings, booleans, arrays, null; never undefined or bigint),
 * so the driver stores it in the registry as it is and reads back an equal value.
 */
export interface StepState {
  readonly machine: MachineId;
  /** The step's name in the plan (planSteps): how messages name the machine. */
  readonly name: string;
  readonly stage: StepStage;
  /** When the stage was entered (ms); for HOOK, when the current attempt was issued. The step timeout counts from here. */
  readonly sinceMs: number | null;
  /** When this run left PENDING. */
  readonly startedMs: number | null;
  /** The window this run scheduled (ms); null until scheduled. */
  readonly window: { readonly startMs: number; readonly durationMs: number } | null;
  /** When the window was first seen in the schedule: the framework wait counts from here. */
  readonly windowSeenMs: number | null;
  /**
   * Answers seen so far. Remembered because the master forgets them whenever the schedule is
   * written again for this machine (Mesos clears answers on every schedule update that lists it),
   * and another step's window going in is such an update.
   */
  readonly answers: readonly RememberedAnswer[];
  /** Agents seen on the machine between scheduling and DOWN: the hook's {agent_id}. */
  readonly agents: readonly string[];
  /** Whether an agent ran on the machine when its window showed (kept across stop/start); null: not known yet. */
  readonly hadAgents: boolean | null;
  /** Agents this step issued DRAIN_AGENT for (and so may reactivate when they come back). */
  readonly drained: readonly string[];
  /** The machine was seen DOWN in this run. */
  readonly wentDown: boolean;
  /** Machine down was issued in this run. */
  readonly downIssued: boolean;
  /** The current on_down attempt (0: none issued). */
  readonly hookAttempt: number;
  /** `obs.continues` when AWAITING_OPERATOR began: a higher count is the operator's continue. */
  readonly continuesSeen: number | null;
  /** Machine up was issued in this run. */
  readonly upIssued: boolean;
  /** Agents this step sent REACTIVATE_AGENT for. */
  readonly reactivated: readonly string[];
  /** When the current stage's action was last issued; null: issue it at the next advance unless its effect is seen. */
  readonly issuedMs: number | null;
  /** SETTLING: since when an agent has been registered and active without a break. */
  readonly heldSinceMs: number | null;
  /** ERROR: what went wrong, in words (never a hook's output: see hookOutput). */
  readonly error: string | null;
  /**
   * ERROR of a hook that ran: its last output lines (`last output: a | b`, or `no output`), shown
   * after `error` only to those allowed to run the hook (`errorText`); null otherwise. Absent from
   * states stored by older masters (read as null).
   */
  readonly hookOutput: string | null;
  /** ERROR: the stage that failed (restart resumes there). */
  readonly failedIn: StepStage | null;
  /** Remarks of this run an operator should read (a skipped drain, frameworks that did not accept, a retried hook); the last 10. */
  readonly notes: readonly string[];
  /** COMPLETE by the operator's force-complete, not by doing the work. */
  readonly forced: boolean;
  /** What the last stop or force-complete left the machine in; null while the plan works on it. */
  readonly left: LeftMachine | null;
}

/** The state of a step that has not started. */
export function newStepState(machine: MachineId, name: string): StepState {
  return {
    machine: { ...machine }, name, stage: 'PENDING', sinceMs: null, startedMs: null, window: null, windowSeenMs: null, answers: [], agents: [],
    hadAgents: null, drained: [], wentDown: false, downIssued: false, hookAttempt: 0, continuesSeen: null, upIssued: false, reactivated: [],
    issuedMs: null, heldSinceMs: null, error: null, hookOutput: null, failedIn: null, notes: [], forced: false, left: null,
  };
}

/** The last output lines an older master wrote into a hook's error: `; last output: …` or `; no output` at the end. */
const LEGACY_OUTPUT = /; (last output: .*|no output)$/s;

/**
 * A step state as the registry kept it, with the fields newer masters added filled in. An older
 * master's state has no hookOutput and put a failed hook's output into its error: that is split
 * off here, so it is hidden like any hook's output. Pure.
 */
export function storedStepState(state: StepState, machine: MachineId, name: string): StepState {
  const s: StepState = { ...newStepState(machine, name), ...state };
  if (state.hookOutput !== undefined) return s;
  if (s.stage === 'ERROR' && s.failedIn === 'HOOK' && s.error !== null) {
    const m = LEGACY_OUTPUT.exec(s.error);
    if (m !== null) return { ...s, error: s.error.slice(0, m.index), hookOutput: m[1] ?? null };
  }
  return { ...s, hookOutput: null };
}

// ---------------------------------------------------------------------------------------------
// Observation

/** An agent whose hostname and ip are the machine's, as the master sees it now. */
export interface AgentObservation {
  readonly id: string;
  /** Registered and its session open now (not recovered, unreachable or disconnected). */
  readonly connected: boolean;
  /** Not deactivated (DEACTIVATE_AGENT or DRAIN_AGENT until REACTIVATE_AGENT): it gets offers. */
  readonly active: boolean;
  /** The master's drain state of the agent, if it has one. */
  readonly drainState: DrainState | undefined;
  /** The agent refused its drain message (the drain record's `refused`): it will not drain by itself. */
  readonly drainRefused?: boolean;
}

/** A framework with resources (tasks or offers) on the machine's agents, and its answer to the window's inverse offer. */
export interface FrameworkObservation {
  readonly id: string;
  /** For the operator's text; the id is shown when empty. */
  readonly name: string;
  readonly answer: 'ACCEPT' | 'DECLINE' | undefined;
}

/** The driver's report of an on_down attempt. A report of another attempt than the step's current one is ignored. */
export type HookReport =
  | { readonly attempt: number; readonly status: 'running' }
  | { readonly attempt: number; readonly status: 'succeeded'; readonly code: number; readonly output: string }
  /** Exited non-zero (`code`) or was killed by a signal (`code` null, `signal` set). */
  | { readonly attempt: number; readonly status: 'failed'; readonly code: number | null; readonly signal?: string | undefined; readonly output: string }
  /** Killed by the driver after on_down.timeout. */
  | { readonly attempt: number; readonly status: 'timed_out'; readonly output: string }
  /** Was running when the master stopped; no process is left to report on. */
  | { readonly attempt: number; readonly status: 'interrupted' };

/** What the driver reads from the master about one machine, just before advancing its step. */
export interface MachineObservation {
  /** The machine's mode; undefined when the master knows no such machine (never scheduled, no agent). */
  readonly mode: MachineMode | undefined;
  /** The machine's unavailability while it is in the schedule (the step compares it with its own window). */
  readonly unavailability: { readonly startNs: bigint; readonly durationNs?: bigint | undefined } | undefined;
  readonly agents: readonly AgentObservation[];
  readonly frameworks: readonly FrameworkObservation[];
  readonly hook: HookReport | undefined;
  /** How many times the operator has continued this step (a durable counter the driver keeps). */
  readonly continues: number;
}

// ---------------------------------------------------------------------------------------------
// Actions

/** What the driver carries out, in order, after storing the new state. */
export type StepAction =
  /** Put the machine in the schedule with this unavailability (replacing any it has). */
  | { readonly type: 'schedule'; readonly machine: MachineId; readonly startNs: bigint; readonly durationNs: bigint }
  /** Take the machine out of the schedule (it becomes UP; refused by Mesos once it is DOWN, so only issued before). */
  | { readonly type: 'unschedule'; readonly machine: MachineId }
  /** DRAIN_AGENT each agent with this max_grace_period (undefined: the tasks' own kill policies). */
  | { readonly type: 'drain'; readonly agentIds: readonly string[]; readonly maxGracePeriodNs: bigint | undefined }
  | { readonly type: 'down'; readonly machine: MachineId }
  /**
   * Run on_down, the master's hook `hook` (its argv with the placeholders filled, no shell), at
   * most once per attempt; kill it after timeoutMs. `hookEnv` is the hook's own variables (from its
   * file) and `values` the machine's, for the minimal environment (hooks.ts hookEnvironment).
   */
  | {
    readonly type: 'run_hook';
    readonly machine: MachineId;
    readonly attempt: number;
    readonly hook: string;
    readonly argv: readonly string[];
    readonly hookEnv: Readonly<Record<string, string>>;
    readonly values: Readonly<Record<HookPlaceholder, string>>;
    readonly timeoutMs: number;
  }
  /** Kill the attempt if it still runs (SIGTERM, then SIGKILL), and record that it was stopped. */
  | { readonly type: 'cancel_hook'; readonly machine: MachineId; readonly attempt: number }
  | { readonly type: 'up'; readonly machine: MachineId }
  /** REACTIVATE_AGENT: agents this step drained came back still deactivated. */
  | { readonly type: 'reactivate'; readonly agentIds: readonly string[] };

export interface StepAdvance {
  readonly state: StepState;
  readonly actions: readonly StepAction[];
  /** One line for the operator: what the step waits for now (the error, once in ERROR; '' once COMPLETE). */
  readonly waitingFor: string;
  /** Stages entered by this call, in order (a stage may repeat: a retried hook), for the event stream. */
  readonly entered: readonly StepStage[];
  /** When to advance again at the latest if nothing is heard (a deadline, a settle, a re-issue); undefined: only on an event. */
  readonly nextWakeMs: number | undefined;
}

/**
 * How long an issued action may go without its effect showing before it is issued again. Covers a
 * master that stopped between storing the state and carrying out the action, and a registry write
 * that failed; every action is safe to repeat.
 */
export const REISSUE_AFTER_MS = 30_000;
/** Notes kept per step: a hook retried on every master restart must not grow the state without end. */
export const MAX_NOTES = 10;
/** Lines of a hook's output kept in its ERROR message. */
export const HOOK_OUTPUT_LINES = 5;

// ---------------------------------------------------------------------------------------------
// Words

const fmt = (ms: number): string => formatDuration(BigInt(Math.max(0, Math.trunc(ms))) * 1_000_000n);

/** An elapsed or remaining time, short: `45s`, `3m12s`, `1h02m`. */
export function shortDuration(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
}

/**
 * A waiting-for text with its running times (shortDuration's `45s`, `3m12s`, `1h02m`) masked: two
 * texts that differ only as a countdown ticks say the same thing, and the event stream sends one.
 */
export function steadyText(text: string): string {
  return text.replace(/\b\d+(?:h\d{2}m|m\d{2}s|s)\b/g, '#');
}

/** A list for a one-line text: the first five, then how many more. */
function listText(items: readonly string[]): string {
  return items.length <= 5 ? items.join(', ') : `${items.slice(0, 5).join(', ')} and ${items.length - 5} more`;
}

/** The machine as `drydock machine up|down` takes it: HOST=IP, HOST or =IP. */
export function machineArg(m: MachineId): string {
  if (m.hostname !== undefined && m.ip !== undefined) return `${m.hostname}=${m.ip}`;
  return m.hostname ?? `=${m.ip ?? ''}`;
}

function modeText(obs: MachineObservation): string {
  return obs.mode === undefined ? 'unknown to the master' : `mode ${obs.mode}`;
}

function lastLines(output: string): string {
  const lines = output.replace(/\s+$/, '').split('\n').map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
  if (lines.length === 0) return 'no output';
  return `last output: ${lines.slice(-HOOK_OUTPUT_LINES).map((l) => (l.length > 200 ? `${l.slice(0, 200)}…` : l)).join(' | ')}`;
}

function agentText(a: AgentObservation): string {
  const state = a.drainState ?? (a.active ? 'active' : 'deactivated');
  const what = a.drainRefused === true ? `${state} (the agent refused the drain: see its drain record)` : state;
  return a.connected ? `${a.id} ${what}` : `${a.id} ${what} (not connected)`;
}

// ---------------------------------------------------------------------------------------------
// The machine

interface Context {
  readonly obs: MachineObservation;
  readonly spec: MaintenancePlanSpec;
  readonly now: number;
  readonly actions: StepAction[];
  readonly entered: StepStage[];
}

/** A stage handler's verdict: move on (handle the new state too), or stay and say why. */
type Outcome =
  | { readonly kind: 'move'; readonly state: StepState }
  | { readonly kind: 'stay'; readonly state: StepState; readonly waiting: string; readonly late: string | undefined; readonly wakeMs?: number | undefined };

const move = (state: StepState): Outcome => ({ kind: 'move', state });
const stay = (state: StepState, waiting: string, late: string | undefined, wakeMs?: number): Outcome => ({ kind: 'stay', state, waiting, late, wakeMs });

function enter(s: StepState, stage: StepStage, ctx: Context, patch: Partial<StepState> = {}): StepState {
  ctx.entered.push(stage);
  return { ...s, stage, sinceMs: ctx.now, issuedMs: ctx.now, ...patch };
}

function note(s: StepState, text: string): StepState {
  return { ...s, notes: [...s.notes, text].slice(-MAX_NOTES) };
}

/** To ERROR with `message`; `hookOutput` when a hook that ran failed (its last lines, kept apart). */
function fail(s: StepState, ctx: Context, message: string, hookOutput: string | null = null): StepState {
  ctx.entered.push('ERROR');
  return { ...s, stage: 'ERROR', failedIn: s.stage, error: message, hookOutput, sinceMs: ctx.now, issuedMs: null };
}

/**
 * A step's error as a reader sees it: the message, then a failed hook's last output lines when
 * `reveal` (the reader may run the hook), else OUTPUT_HIDDEN in their place. '' when not in ERROR.
 */
export function errorText(state: StepState, reveal: boolean): string {
  if (state.stage !== 'ERROR') return '';
  const error = state.error ?? 'ERROR';
  const output = state.hookOutput ?? null;
  return output === null ? error : `${error}; ${reveal ? output : OUTPUT_HIDDEN}`;
}

/** Whether an action issued at `issuedMs` whose effect is not seen is due again. */
const due = (s: StepState, ctx: Context): boolean => s.issuedMs === null || ctx.now - s.issuedMs >= REISSUE_AFTER_MS;
const reissued = (s: StepState, ctx: Context): StepState => ({ ...s, issuedMs: ctx.now });
/** When a not-yet-seen effect makes its action due again. */
const reissueAt = (s: StepState): number | undefined => (s.issuedMs === null ? undefined : s.issuedMs + REISSUE_AFTER_MS);

const ns = (ms: number): bigint => BigInt(ms) * 1_000_000n;

/** The machine is in the schedule with exactly this step's window. */
function windowShows(s: StepState, obs: MachineObservation): boolean {
  const u = obs.unavailability;
  if (u === undefined || s.window === null) return false;
  return u.startNs === ns(s.window.startMs) && u.durationNs === ns(s.window.durationMs);
}

function addIds(list: readonly string[], ids: readonly string[]): string[] {
  return [...list, ...ids.filter((id) => !list.includes(id))];
}

/** A framework as the operator knows it: its name, or its id when it has none. */
function frameworkLabel(f: FrameworkObservation): string {
  return f.name !== '' ? f.name : f.id;
}

// ---- SCHEDULED -------------------------------------------------------------------------------

function scheduleAction(s: StepState): StepAction {
  const w = s.window as NonNullable<StepState['window']>;
  return { type: 'schedule', machine: s.machine, startNs: ns(w.startMs), durationNs: ns(w.durationMs) };
}

function scheduled(s: StepState, ctx: Context): Outcome {
  const { obs, spec, now } = ctx;
  if (s.window === null) {
    // A new window: at the start of a run, and on a restart before the drain (frameworks must be asked again).
    const next = { ...s, window: { startMs: now + spec.noticeMs, durationMs: spec.windowMs }, windowSeenMs: null, answers: [], issuedMs: now };
    ctx.actions.push(scheduleAction(next));
    return stay(next, 'waiting for its window to show in the maintenance schedule', undefined, now + REISSUE_AFTER_MS);
  }
  if (windowShows(s, obs) && obs.mode === 'DRAINING') {
    const ids = obs.agents.map((a) => a.id);
    const seen = { ...s, windowSeenMs: now, agents: addIds(s.agents, ids), hadAgents: s.hadAgents === true || ids.length > 0 };
    if (ids.length === 0) return move(issueDown(note(seen, 'no agent is registered on this machine: skipped the framework wait and the drain'), ctx));
    return move(enter(seen, 'WAITING_FRAMEWORKS', ctx));
  }
  if (windowShows(s, obs) && obs.mode === 'DOWN') {
    // Left DOWN by a stopped run (or brought down by hand): its agents are gone already.
    return move(enter(note({ ...s, windowSeenMs: now }, 'the machine was DOWN already: skipped the framework wait and the drain'), 'DOWN', ctx, { wentDown: true }));
  }
  let next = s;
  if (due(s, ctx)) {
    ctx.actions.push(scheduleAction(s));
    next = reissued(s, ctx);
  }
  const where = obs.unavailability === undefined ? `${modeText(obs)}, not in the schedule` : `${modeText(obs)}, with another window`;
  return stay(next, `waiting for its window to show in the maintenance schedule (${where})`, `${s.name}: its maintenance window did not show in the schedule within ${fmt(ctx.spec.stepTimeoutMs)} (${where})`, reissueAt(next));
}

/**
 * Before DOWN the machine must stay in the schedule with this step's window: someone who takes it
 * out (or gives it another window) has cancelled this step's maintenance, and carrying on would
 * drain or take down a machine nobody scheduled. Brought DOWN by hand, it simply skips ahead.
 */
function offSchedule(s: StepState, ctx: Context): Outcome | undefined {
  const { obs } = ctx;
  if (windowShows(s, obs) && obs.mode === 'DRAINING') return undefined;
  if (windowShows(s, obs) && obs.mode === 'DOWN') {
    return move(enter(note(s, `the machine went DOWN outside the plan during ${s.stage}: skipped the rest of the drain`), 'DOWN', ctx, { wentDown: true }));
  }
  const what = obs.unavailability === undefined ? 'left the maintenance schedule' : 'got another maintenance window';
  return move(fail(s, ctx, `${s.name} ${what} outside this plan during ${s.stage} (${modeText(obs)}); restart the step to schedule it again`));
}

// ---- WAITING_FRAMEWORKS ----------------------------------------------------------------------

function rememberAnswers(s: StepState, obs: MachineObservation): RememberedAnswer[] {
  const out = [...s.answers];
  for (const f of obs.frameworks) {
    if (f.answer === undefined) continue;
    const i = out.findIndex((a) => a.frameworkId === f.id);
    const a = { frameworkId: f.id, name: f.name, answer: f.answer };
    if (i === -1) out.push(a);
    else out[i] = a;
  }
  return out;
}

function waitingFrameworks(s0: StepState, ctx: Context): Outcome {
  const off = offSchedule(s0, ctx);
  if (off !== undefined) return off;
  const { obs, spec, now } = ctx;
  const answers = rememberAnswers(s0, obs);
  const s = { ...s0, answers, agents: addIds(s0.agents, obs.agents.map((a) => a.id)) };
  if (obs.agents.length === 0) return move(issueDown(note(s, 'its agents left before the drain: skipped the drain'), ctx));
  const answerOf = (f: FrameworkObservation): 'ACCEPT' | 'DECLINE' | undefined => f.answer ?? answers.find((a) => a.frameworkId === f.id)?.answer;
  const pending = obs.frameworks.filter((f) => answerOf(f) !== 'ACCEPT');
  const pendingText = listText(pending.map((f) => `${frameworkLabel(f)} (${answerOf(f) === 'DECLINE' ? 'DECLINED' : 'no answer'})`));
  const w = s.window as NonNullable<StepState['window']>;
  const seenMs = s.windowSeenMs ?? s.sinceMs ?? now;
  // Never drain before the window frameworks were told about, unless all of them accepted it.
  const deadline = Math.max(w.startMs, seenMs + spec.waitForFrameworksMs);
  if (pending.length === 0) return move(startDrain(s, ctx));
  if (now >= deadline) {
    return move(startDrain(note(s, `went ahead after wait_for_frameworks (${fmt(spec.waitForFrameworksMs)}) without an ACCEPT from ${pendingText}`), ctx));
  }
  const left = seenMs + spec.waitForFrameworksMs >= w.startMs
    ? `${shortDuration(deadline - now)} left of ${fmt(spec.waitForFrameworksMs)}`
    : `${shortDuration(deadline - now)} left until its window starts`;
  return stay(s, `waiting for inverse offer answers: ${pendingText} — ${left}`, `${s.name}: still waiting for inverse offer answers after ${fmt(spec.stepTimeoutMs)}: ${pendingText}`, deadline);
}

// ---- DRAINING --------------------------------------------------------------------------------

function drainAction(ids: readonly string[], spec: MaintenancePlanSpec): StepAction {
  return { type: 'drain', agentIds: [...ids], maxGracePeriodNs: spec.maxGracePeriodMs === undefined ? undefined : ns(spec.maxGracePeriodMs) };
}

/** Enter DRAINING: DRAIN_AGENT for every agent not draining yet (one drained by someone else is left as it is). */
function startDrain(s: StepState, ctx: Context): StepState {
  const ids = ctx.obs.agents.filter((a) => a.drainState === undefined).map((a) => a.id);
  if (ids.length > 0) ctx.actions.push(drainAction(ids, ctx.spec));
  return enter({ ...s, drained: addIds(s.drained, ids) }, 'DRAINING', ctx);
}

function draining(s0: StepState, ctx: Context): Outcome {
  const off = offSchedule(s0, ctx);
  if (off !== undefined) return off;
  const { obs, spec } = ctx;
  let s: StepState = { ...s0, agents: addIds(s0.agents, obs.agents.map((a) => a.id)) };
  // An agent that registered on the machine after the drain began is drained too; one this step
  // already drained whose drain does not show yet gets the call again once it is due.
  const fresh = obs.agents.filter((a) => a.drainState === undefined && !s.drained.includes(a.id)).map((a) => a.id);
  const lagging = obs.agents.filter((a) => a.drainState === undefined && s.drained.includes(a.id)).map((a) => a.id);
  const send = [...fresh, ...(due(s, ctx) ? lagging : [])];
  if (send.length > 0) {
    ctx.actions.push(drainAction(send, spec));
    // One clock for the whole call: an agent drained now must not look overdue at the next advance.
    s = { ...s, drained: addIds(s.drained, fresh), issuedMs: ctx.now };
  }
  // Agents gone from the master (removed, marked gone) hold nothing any more.
  if (obs.agents.every((a) => a.drainState === 'DRAINED')) {
    ctx.entered.push('DRAINED');
    return move(issueDown(s, ctx));
  }
  const open = obs.agents.filter((a) => a.drainState !== 'DRAINED').map(agentText);
  const stillLagging = obs.agents.some((a) => a.drainState === undefined);
  return stay(s, `waiting for its agents to drain: ${listText(open)}`, `${s.name} did not drain within ${fmt(spec.stepTimeoutMs)}: ${listText(open)}`, stillLagging ? reissueAt(s) : undefined);
}

// ---- DOWN ------------------------------------------------------------------------------------

function issueDown(s: StepState, ctx: Context): StepState {
  ctx.actions.push({ type: 'down', machine: s.machine });
  return enter(s, 'DOWN', ctx, { downIssued: true });
}

function down(s: StepState, ctx: Context): Outcome {
  const { obs, spec } = ctx;
  if (obs.mode === 'DOWN') return move(afterDown({ ...s, wentDown: true }, ctx));
  if (!windowShows(s, obs)) {
    return move(fail(s, ctx, `${s.name} left the maintenance schedule outside this plan before it went DOWN (${modeText(obs)}); restart the step to schedule it again`));
  }
  let next = s;
  if (due(s, ctx)) {
    ctx.actions.push({ type: 'down', machine: s.machine });
    next = reissued(s, ctx);
  }
  return stay(next, `waiting for the machine to go DOWN (${modeText(obs)})`, `${s.name} did not go DOWN within ${fmt(spec.stepTimeoutMs)} after machine down was issued (${modeText(obs)})`, reissueAt(next));
}

/** Once DOWN: the hook if there is one, else the operator if the spec waits for one, else UP. */
function afterDown(s: StepState, ctx: Context): StepState {
  if (ctx.spec.onDown !== undefined) return startHook(s, s.hookAttempt + 1, ctx);
  return afterHook(s, ctx);
}

function afterHook(s: StepState, ctx: Context): StepState {
  if (ctx.spec.upWhen === 'operator') return enter(s, 'AWAITING_OPERATOR', ctx, { continuesSeen: ctx.obs.continues, issuedMs: null });
  return issueUp(s, ctx);
}

// ---- HOOK ------------------------------------------------------------------------------------

function hookAction(s: StepState, attempt: number, ctx: Context): StepAction | string {
  const onDown = ctx.spec.onDown as NonNullable<MaintenancePlanSpec['onDown']>;
  if (onDown.kind === 'command') {
    return `on_down of ${s.name} was not run: this plan was stored by an older master with a shell command, and a master runs only its own hooks now (on_down: { hook: NAME }, configured with --maintenance_hooks); force-complete the step, or stop and delete the plan and create it again naming a hook`;
  }
  const hook = onDown.definition;
  if (hook === undefined) {
    return `on_down of ${s.name} was not run: hook ${onDown.hook} is not configured on this master (--maintenance_hooks); add it to the hooks file and restart the master, then restart the step`;
  }
  const values = { hostname: s.machine.hostname ?? '', ip: s.machine.ip ?? '', agent_id: s.agents.join(',') };
  const filled = fillHookArgv(hook.argv, values);
  if (!filled.ok) return `on_down of ${s.name} was not run: ${filled.error}`;
  return { type: 'run_hook', machine: s.machine, attempt, hook: hook.name, argv: filled.argv, hookEnv: hook.env, values, timeoutMs: onDown.timeoutMs };
}

function startHook(s: StepState, attempt: number, ctx: Context): StepState {
  const action = hookAction(s, attempt, ctx);
  const next = enter(s, 'HOOK', ctx, { hookAttempt: attempt });
  if (typeof action === 'string') return fail(next, ctx, action);
  ctx.actions.push(action);
  return next;
}

function hook(s: StepState, ctx: Context): Outcome {
  const { obs, spec, now } = ctx;
  const onDown = spec.onDown;
  if (onDown === undefined) return move(afterHook(s, ctx)); // the spec lost its hook (not expected: specs are immutable)
  const report = obs.hook !== undefined && obs.hook.attempt === s.hookAttempt ? obs.hook : undefined;
  const attempt = `attempt ${s.hookAttempt}`;
  const late = `on_down of ${s.name} was still running after ${fmt(spec.stepTimeoutMs)} (${attempt})`;
  if (report === undefined) {
    let next = s;
    if (due(s, ctx)) {
      const action = hookAction(s, s.hookAttempt, ctx);
      if (typeof action === 'string') return move(fail(s, ctx, action));
      ctx.actions.push(action);
      next = reissued(s, ctx);
    }
    return stay(next, `waiting for on_down to start (${attempt})`, late, reissueAt(next));
  }
  switch (report.status) {
    case 'running': {
      const ranMs = now - (s.sinceMs ?? now);
      return stay(s, `on_down running (${attempt}): ${shortDuration(ranMs)} of ${fmt(onDown.timeoutMs)}`, late);
    }
    case 'succeeded':
      return move(afterHook(s, ctx));
    case 'failed': {
      const how = report.code === null ? `was killed by ${report.signal ?? 'a signal'}` : `failed with exit status ${report.code}`;
      return move(fail(s, ctx, `on_down of ${s.name} ${how} (${attempt})`, lastLines(report.output)));
    }
    case 'timed_out':
      return move(fail(s, ctx, `on_down of ${s.name} timed out after ${fmt(onDown.timeoutMs)} (${attempt})`, lastLines(report.output)));
    case 'interrupted':
      if (onDown.onInterrupted === 'retry') {
        return move(startHook(note(s, `on_down was interrupted by a master restart (${attempt}): ran it again`), s.hookAttempt + 1, ctx));
      }
      return move(fail(s, ctx, `${s.name}: hook interrupted by a master restart (on_down ${attempt}); restart the step to run it again`));
  }
}

// ---- AWAITING_OPERATOR -----------------------------------------------------------------------

function awaitingOperator(s: StepState, ctx: Context): Outcome {
  const { obs } = ctx;
  if (obs.continues > (s.continuesSeen ?? obs.continues)) return move(issueUp(s, ctx));
  // `drydock machine up` by hand is as good as a continue: the machine is back either way.
  if (obs.mode === 'UP' || obs.mode === undefined) return move(enter(note(s, 'the machine was brought UP outside the plan'), 'UP', ctx, { issuedMs: null }));
  return stay(s, 'waiting for the operator: continue this step to bring the machine UP', undefined);
}

// ---- UP and SETTLING -------------------------------------------------------------------------

function issueUp(s: StepState, ctx: Context): StepState {
  ctx.actions.push({ type: 'up', machine: s.machine });
  return enter(s, 'UP', ctx, { upIssued: true });
}

const upSeen = (obs: MachineObservation): boolean => obs.mode === 'UP' || obs.mode === undefined;
const ready = (obs: MachineObservation): AgentObservation[] => obs.agents.filter((a) => a.connected && a.active);

/** Agents this step drained that came back connected but still deactivated: reactivate each once. */
function reactivate(s: StepState, ctx: Context): StepState {
  const ids = ctx.obs.agents
    .filter((a) => a.connected && !a.active && a.drainState !== 'DRAINING' && s.drained.includes(a.id) && !s.reactivated.includes(a.id))
    .map((a) => a.id);
  if (ids.length === 0) return s;
  ctx.actions.push({ type: 'reactivate', agentIds: ids });
  return { ...s, reactivated: addIds(s.reactivated, ids) };
}

function up(s0: StepState, ctx: Context): Outcome {
  const { obs, spec } = ctx;
  const timeout = fmt(spec.stepTimeoutMs);
  if (!upSeen(obs)) {
    let next = s0;
    // Only a DOWN machine can be brought up; any other mode is someone else's doing, and waits.
    if (obs.mode === 'DOWN' && due(s0, ctx)) {
      ctx.actions.push({ type: 'up', machine: s0.machine });
      next = { ...reissued(s0, ctx), upIssued: true };
    }
    return stay(next, `waiting for the machine to come UP (${modeText(obs)})`, `${s0.name} did not come UP within ${timeout} after machine up was issued (${modeText(obs)})`, obs.mode === 'DOWN' ? reissueAt(next) : undefined);
  }
  // A machine that had no agent is done once UP: waiting for one would only end in ERROR. Found
  // DOWN before this run, its agents (if any) were already removed, so none is known to wait for.
  if (s0.hadAgents !== true) {
    const why = s0.hadAgents === null ? 'it was DOWN before this run, so no agent of it is known' : 'no agent ran on this machine before';
    return move(enter(note(s0, `${why}: did not wait for one to register`), 'COMPLETE', ctx, { issuedMs: null }));
  }
  const s = reactivate(s0, ctx);
  if (ready(obs).length > 0) return move(enter(s, 'SETTLING', ctx, { heldSinceMs: ctx.now, issuedMs: null }));
  const detail = obs.agents.length === 0 ? 'no agent registered' : listText(obs.agents.map(agentText));
  return stay(s, `waiting for an agent of the machine to register and be active (${detail})`, `${s.name} did not come back within ${timeout} after UP (${detail})`);
}

function settling(s0: StepState, ctx: Context): Outcome {
  const { obs, spec, now } = ctx;
  const s = reactivate(s0, ctx);
  const up = ready(obs);
  const late = `${s.name} did not stay up for settle (${fmt(spec.settleMs)}) within ${fmt(spec.stepTimeoutMs)}`;
  if (up.length === 0) {
    const detail = obs.agents.length === 0 ? 'no agent registered' : listText(obs.agents.map(agentText));
    return stay({ ...s, heldSinceMs: null }, `its agent went away while settling; waiting for it again (${detail})`, `${late} (${detail})`);
  }
  const held = s.heldSinceMs ?? now;
  if (now - held >= spec.settleMs) return move(enter({ ...s, heldSinceMs: held }, 'COMPLETE', ctx, { issuedMs: null }));
  return stay({ ...s, heldSinceMs: held }, `settling: ${listText(up.map((a) => a.id))} active for ${shortDuration(now - held)} of ${fmt(spec.settleMs)}`, late, held + spec.settleMs);
}

// ---- Dispatch --------------------------------------------------------------------------------

function handle(s: StepState, ctx: Context): Outcome {
  switch (s.stage) {
    case 'PENDING': {
      // Starting a run: a fresh run record (what the machine is known to be stays), then schedule.
      const fresh = newStepState(s.machine, s.name);
      return move(enter({ ...fresh, hadAgents: s.hadAgents, startedMs: ctx.now }, 'SCHEDULED', ctx, { issuedMs: null }));
    }
    case 'SCHEDULED': return scheduled(s, ctx);
    case 'WAITING_FRAMEWORKS': return waitingFrameworks(s, ctx);
    case 'DRAINING': return draining(s, ctx);
    // Only passed through; a stored DRAINED (from an older driver) goes on to DOWN.
    case 'DRAINED': return move(issueDown(s, ctx));
    case 'DOWN': return down(s, ctx);
    case 'HOOK': return hook(s, ctx);
    case 'AWAITING_OPERATOR': return awaitingOperator(s, ctx);
    case 'UP': return up(s, ctx);
    case 'SETTLING': return settling(s, ctx);
    case 'COMPLETE': return stay(s, '', undefined);
    case 'ERROR': return stay(s, errorText(s, false), undefined);
  }
}

/** More stage changes than this in one call is a loop, not progress (a full run has 10). */
const MAX_MOVES = 32;

/**
 * Advances one step as far as the observation allows. Pure; the same state, observation and time
 * give the same answer, and an answer's state advanced again with the same observation and time
 * emits no action. A stage older than `spec.stepTimeoutMs` (except AWAITING_OPERATOR: the operator
 * is the clock there) goes to ERROR; progress seen in the same call wins over the timeout.
 */
export function advanceStep(state: StepState, obs: MachineObservation, spec: MaintenancePlanSpec, nowMs: number): StepAdvance {
  const ctx: Context = { obs, spec, now: Math.trunc(nowMs), actions: [], entered: [] };
  let s = state;
  for (let moves = 0; ; moves++) {
    const out = handle(s, ctx);
    if (out.kind === 'move' && moves < MAX_MOVES) {
      s = out.state;
      continue;
    }
    s = out.state;
    if (out.kind === 'move') {
      // A bug, not an input: stop in ERROR with a message rather than spin.
      s = fail(s, ctx, `${s.name}: the step machine did not settle in ${MAX_MOVES} moves (at ${s.stage}); this is a bug`);
      return finish(s, ctx, errorText(s, false), undefined);
    }
    const waiting = out.waiting;
    const timed = out.late !== undefined && s.sinceMs !== null;
    if (timed && ctx.now - (s.sinceMs as number) >= spec.stepTimeoutMs) {
      // A hook past the step timeout is still running somewhere: have it stopped.
      if (s.stage === 'HOOK') ctx.actions.push({ type: 'cancel_hook', machine: s.machine, attempt: s.hookAttempt });
      s = fail(s, ctx, out.late as string);
      return finish(s, ctx, errorText(s, false), undefined);
    }
    const deadline = timed ? (s.sinceMs as number) + spec.stepTimeoutMs : undefined;
    const wakes = [out.wakeMs, deadline].filter((x): x is number => x !== undefined);
    return finish(s, ctx, waiting, wakes.length === 0 ? undefined : Math.min(...wakes));
  }
}

function finish(s: StepState, ctx: Context, waitingFor: string, nextWakeMs: number | undefined): StepAdvance {
  const notes = s.stage === 'ERROR' || s.stage === 'COMPLETE' || s.notes.length === 0 ? '' : ` (${s.notes[s.notes.length - 1] ?? ''})`;
  return { state: s, actions: ctx.actions, waitingFor: waitingFor === '' ? '' : `${waitingFor}${notes}`, entered: ctx.entered, nextWakeMs };
}

// ---------------------------------------------------------------------------------------------
// Operator verbs

/** What a stop or force-complete does to one machine. */
export interface StepRelease {
  readonly state: StepState;
  /** Undo what is safe to undo (a window no agent was drained for; a running hook). */
  readonly actions: readonly StepAction[];
  /** The machine's stated mode afterwards; null when the step had not touched it. */
  readonly left: LeftMachine | null;
}

/**
 * Where the machine stands and what to undo, read from what this run issued. Nothing is undone
 * that cannot be undone cleanly: a drain cannot be cancelled (Mesos refuses REACTIVATE_AGENT while
 * DRAINING), and a DOWN machine cannot leave the schedule except by coming UP, which the operator
 * may not want yet; those are left as they are and the text says how to finish.
 */
function release(s: StepState): { actions: StepAction[]; left: LeftMachine | null } {
  const arg = machineArg(s.machine);
  const actions: StepAction[] = [];
  if (s.stage === 'PENDING') return { actions, left: s.left };
  if (s.stage === 'COMPLETE') return { actions, left: s.left ?? { mode: 'UP', text: 'UP: its maintenance is done' } };
  if (s.stage === 'HOOK') actions.push({ type: 'cancel_hook', machine: s.machine, attempt: s.hookAttempt });
  if (s.upIssued) return { actions, left: { mode: 'UP', text: 'UP: machine up was issued; its agent was not watched after the stop' } };
  if (s.downIssued || s.wentDown) {
    const hook = s.stage === 'HOOK' ? `; its on_down (attempt ${s.hookAttempt}) was stopped` : '';
    return { actions, left: { mode: 'DOWN', text: `DOWN${hook}: bring it up with drydock machine up ${arg}` } };
  }
  if (s.drained.length > 0) {
    const ids = listText(s.drained);
    return {
      actions,
      left: {
        mode: 'DRAINING',
        text: `DRAINING, in the schedule, agents ${ids} drained or draining: bring it down with drydock machine down ${arg}, or take its window out of the schedule and reactivate them with drydock agent reactivate once DRAINED`,
      },
    };
  }
  if (s.window !== null) {
    actions.push({ type: 'unschedule', machine: s.machine });
    return { actions, left: { mode: 'UP', text: 'UP: its window was taken out of the schedule before any drain' } };
  }
  return { actions, left: null };
}

/**
 * Stopping the plan, for this machine. Like the plan engine's stop (every step back to PENDING,
 * so a later start runs the plan from the beginning), the state becomes PENDING; it keeps `left`,
 * listed in the plan until the step starts again, and whether the machine had agents. Undone: a
 * window no drain was issued for (unscheduled: the machine is UP again), a running hook
 * (cancelled). Left: a drain issued (DRAINING), a machine down issued (DOWN), with the command
 * that finishes the job. A restarted run copes with what was left: a machine found DOWN with its
 * new window skips straight to DOWN, and already DRAINED agents are not drained again.
 */
export function stopStep(state: StepState): StepRelease {
  const { actions, left } = release(state);
  const fresh = newStepState(state.machine, state.name);
  return { state: { ...fresh, hadAgents: state.hadAgents, left }, actions, left };
}

/**
 * Force-complete: the operator says this machine is done. The step is COMPLETE without doing the
 * rest of the work; the same undo as a stop is carried out (a window nobody will finish, a hook
 * still running), and what is left is stated. A COMPLETE step is unchanged.
 */
export function forceCompleteStep(state: StepState, nowMs: number): StepRelease {
  if (state.stage === 'COMPLETE') return { state, actions: [], left: state.left };
  const { actions, left } = release(state);
  return {
    state: { ...state, stage: 'COMPLETE', forced: true, sinceMs: Math.trunc(nowMs), issuedMs: null, error: null, hookOutput: null, failedIn: null, left },
    actions,
    left,
  };
}

/** What the driver knows of a step beside its state, for a restart. */
export interface RestartContext {
  /** A process of one of the step's on_down attempts still runs (or is still being stopped). */
  readonly hookRunning: boolean;
}

/** Whether an operator's restart may run a step's actions again, decided by `restartVerdict`. */
export type RestartVerdict =
  /** Carried out by `restartStep`; `what` says what runs again. */
  | { readonly kind: 'rerun'; readonly what: string }
  /** Not started: nothing to run again (the plan engine answers 208). */
  | { readonly kind: 'unchanged' }
  /** Not safe now: why, and what to do instead (the answer is 409 when no other step restarts). */
  | { readonly kind: 'refused'; readonly reason: string };

/** The stage a restart runs again: an ERROR's failed stage, or the stage the step is in. */
function rerunStage(s: StepState): StepStage {
  return s.stage === 'ERROR' ? s.failedIn ?? 'PENDING' : s.stage;
}

/** In words, what a restart of a step at this stage runs again. */
function rerunText(s: StepState): string {
  switch (rerunStage(s)) {
    case 'COMPLETE': return 'its whole maintenance runs again: schedule, drain, DOWN, on_down, UP';
    case 'SCHEDULED': return s.stage === 'ERROR' ? 'a new window is scheduled and the frameworks are asked again' : 'its window is issued again';
    case 'WAITING_FRAMEWORKS': return 'a new window is scheduled and the frameworks are asked again';
    case 'DRAINING': return 'DRAIN_AGENT is issued again to its agents whose drain does not show';
    case 'DRAINED':
    case 'DOWN': return 'machine down is issued again';
    case 'HOOK': return s.stage === 'ERROR' ? `on_down runs again (attempt ${s.hookAttempt + 1})` : `on_down attempt ${s.hookAttempt} is issued again (an attempt runs at most once)`;
    case 'UP': return 'machine up is issued again, and an agent of the machine waited for';
    case 'SETTLING': return 'the settle is counted again from the start';
    default: return 'its maintenance runs again from the start';
  }
}

/**
 * What an operator's restart does to a step, by stage (the step's actions are each safe to issue
 * again, so most stages simply run again with a fresh step timeout):
 *
 *   PENDING                 unchanged: not started
 *   COMPLETE                the whole maintenance again: schedule, drain, DOWN, on_down, UP
 *   SCHEDULED               its window issued again unless it shows
 *   WAITING_FRAMEWORKS      a new window: the frameworks are asked again (nothing is drained yet)
 *   DRAINING                DRAIN_AGENT again to agents whose drain does not show
 *   DRAINED, DOWN           machine down again unless DOWN
 *   HOOK, a process runs    refused: a second on_down beside the first is not safe
 *   HOOK, none runs         the current attempt issued again (it runs at most once)
 *   AWAITING_OPERATOR       refused: the operator's verb there is continue
 *   UP                      machine up again unless UP, and the agent waited for
 *   SETTLING                the settle counted again
 *   ERROR                   the failed stage as above, with a fresh step timeout; a failed on_down
 *                           runs again as the next attempt, refused while the failed attempt's
 *                           process is still being stopped
 */
export function restartVerdict(state: StepState, ctx: RestartContext): RestartVerdict {
  const s = state;
  switch (s.stage) {
    case 'PENDING': return { kind: 'unchanged' };
    case 'AWAITING_OPERATOR':
      return { kind: 'refused', reason: 'it waits for the operator with the machine DOWN: continue the step to bring it UP (a restart has nothing to run again)' };
    case 'HOOK':
      if (ctx.hookRunning) {
        return { kind: 'refused', reason: `its on_down (attempt ${s.hookAttempt}) is running, and a restart would run it a second time beside it: wait for it to end (a failure puts the step in ERROR, and a restart then runs it again), or stop the plan to cancel it` };
      }
      return { kind: 'rerun', what: rerunText(s) };
    case 'ERROR':
      if (s.failedIn === 'HOOK' && ctx.hookRunning) {
        return { kind: 'refused', reason: `its failed on_down (attempt ${s.hookAttempt}) is still being stopped: restart once it has ended` };
      }
      return { kind: 'rerun', what: rerunText(s) };
    default:
      return { kind: 'rerun', what: rerunText(s) };
  }
}

const RESTART_REFUSED = 'restart refused:';

/** The note a refused restart leaves on the step, so its message says why (`lastRefusal`). */
export function refuseRestart(state: StepState, reason: string): StepState {
  return note(state, `${RESTART_REFUSED} ${reason}`);
}

/** The step's last note when it is a refused restart (shown with an ERROR's message too); else undefined. */
export function lastRefusal(state: StepState): string | undefined {
  const last = state.notes[state.notes.length - 1];
  return last?.startsWith(RESTART_REFUSED) === true ? last : undefined;
}

/**
 * Restart of a step by the operator, for a step `restartVerdict` lets rerun (see its table):
 * PENDING unchanged; COMPLETE back to PENDING (the next start runs the whole maintenance again);
 * ERROR back into the stage that failed; any other stage runs again. Each with a fresh step
 * timeout and its action issued again unless its effect shows; the step's notes say what runs
 * again.
 */
export function restartStep(state: StepState, nowMs: number): StepState {
  const now = Math.trunc(nowMs);
  const s = state;
  const what = rerunText(s);
  switch (s.stage) {
    case 'PENDING': return s;
    case 'COMPLETE': return { ...newStepState(s.machine, s.name), hadAgents: s.hadAgents };
    case 'ERROR': {
      const failed = s.failedIn ?? 'PENDING';
      const base = note({ ...s, sinceMs: now, issuedMs: null, error: null, hookOutput: null, failedIn: null }, `restarted by the operator after an ERROR in ${failed}: ${what}`);
      switch (failed) {
        case 'SCHEDULED':
        case 'WAITING_FRAMEWORKS':
          return { ...base, stage: 'SCHEDULED', window: null, windowSeenMs: null, answers: [] };
        case 'HOOK':
          return { ...base, stage: 'HOOK', hookAttempt: s.hookAttempt + 1 };
        case 'SETTLING':
          return { ...base, stage: 'SETTLING', heldSinceMs: null };
        case 'DRAINING':
        case 'DRAINED':
        case 'DOWN':
        case 'UP':
          return { ...base, stage: failed };
        default:
          return { ...newStepState(s.machine, s.name), hadAgents: s.hadAgents };
      }
    }
    case 'WAITING_FRAMEWORKS': {
      // Asking again takes a new window: Mesos forgets the answers whenever the schedule lists it anew.
      const base = note({ ...s, sinceMs: now, issuedMs: null }, `restarted by the operator during WAITING_FRAMEWORKS: ${what}`);
      return { ...base, stage: 'SCHEDULED', window: null, windowSeenMs: null, answers: [] };
    }
    default:
      return note({ ...s, sinceMs: now, issuedMs: null, heldSinceMs: s.stage === 'SETTLING' ? null : s.heldSinceMs }, `restarted by the operator during ${s.stage}: ${what}`);
  }
}

// ---------------------------------------------------------------------------------------------
// For the plan engine and the budget

/**
 * The plan engine's status of a step: PENDING until started, STARTED while settling (the machine is
 * back, readiness pending), STARTING for everything in between, ERROR and COMPLETE as they are.
 * Set an ERROR with `Step.setStatus('ERROR')` and the message as the note, not `addError`: the
 * engine's errors are permanent and would keep a restarted step in ERROR.
 */
export function stepStatusOf(state: StepState): StepStatus {
  switch (state.stage) {
    case 'PENDING': return 'PENDING';
    case 'COMPLETE': return 'COMPLETE';
    case 'ERROR': return 'ERROR';
    case 'SETTLING': return 'STARTED';
    default: return 'STARTING';
  }
}

/** Stages of a run whose on_down has not finished yet: a step here may still run it. */
const HOOK_AHEAD: readonly StepStage[] = ['PENDING', 'SCHEDULED', 'WAITING_FRAMEWORKS', 'DRAINING', 'DRAINED', 'DOWN', 'HOOK'];

/**
 * Whether an operator's verb may make this step run the plan's on_down (so the operator, not only
 * the plan's creator, must be allowed run_maintenance_hooks): `continue` releases PENDING steps,
 * which then run it; `restart` and `start` also take a COMPLETE step through everything again and
 * put an ERROR before or in the hook back into that stage. A step past its hook (waiting for the
 * operator, UP, settling) runs it no more in this run, whatever the verb.
 */
export function verbMayRunHook(verb: 'start' | 'continue' | 'restart', state: StepState): boolean {
  if (verb === 'continue') return state.stage === 'PENDING';
  if (state.stage === 'COMPLETE') return true;
  if (state.stage === 'ERROR') return state.failedIn === null || HOOK_AHEAD.includes(state.failedIn);
  return HOOK_AHEAD.includes(state.stage);
}

/** Out of service as far as budgets count: started and not COMPLETE (an ERROR is still out). */
export function isOut(stage: StepStage): boolean {
  return stage !== 'PENDING' && stage !== 'COMPLETE';
}

/**
 * `drydock plan`'s and `drydock maintenance plan`'s decisions, as pure functions: the request
 * each command sends to a service scheduler's `/v1/plans` (plans.md §6.1) or the master's
 * `/v1/maintenance/plans` (issue 12: the same verbs, codes and JSON, plus create and delete),
 * reading a plan's JSON, drawing it as a tree, what an answer means (text, exit status), and
 * what `plan show --watch` does at each poll. The shell is plan-command.ts.
 *
 * The verbs and their aliases follow the SDK CLI (plans.md §6.2): `pause` is interrupt, `resume`
 * is continue, `force-restart` is restart. A 208 ("already reported or completed") is news, not a
 * failure; a 417 from `GET` still carries the plan, which is shown.
 */

import { formatJson } from './client.js';
import { formatDuration, msToNs, parseDuration } from '../shared/duration.js';
import { stringifyJson } from '../shared/json.js';
import type { Checked } from './maintenance.js';
import {
  EXIT_FAILED,
  EXIT_OK,
  answerJson,
  accessRefusal,
  decodeNames,
  failureLine,
  failurePrinted,
  isObj,
  malformedLine,
  oneLine,
  pathSegment,
  readArray,
  readObject,
  readString,
  printedError,
  printedOk,
  unreachableLine,
  type Answer,
  type ApiRequest,
  type Printed,
  type Target,
} from './service-api.js';
import { progressBar, type Colour, type Paint } from './terminal.js';

/** The verbs of `POST /v1/plans/<plan>/<verb>`, spelled as the API spells them. */
export type PlanVerb = 'start' | 'stop' | 'continue' | 'interrupt' | 'forceComplete' | 'restart';

/** Each CLI command name, aliases included, and the verb it sends. */
export const PLAN_COMMANDS: Readonly<Record<string, PlanVerb>> = {
  start: 'start',
  stop: 'stop',
  continue: 'continue',
  resume: 'continue',
  interrupt: 'interrupt',
  pause: 'interrupt',
  'force-complete': 'forceComplete',
  restart: 'restart',
  'force-restart': 'restart',
};

/** Which of --phase / --step each verb takes (the API ignores the others; the CLI refuses them). */
const TARGETS: Readonly<Record<PlanVerb, { phase: boolean; step: boolean }>> = {
  start: { phase: false, step: false },
  stop: { phase: false, step: false },
  continue: { phase: true, step: false },
  interrupt: { phase: true, step: false },
  forceComplete: { phase: true, step: true },
  restart: { phase: true, step: true },
};

/** The flags of the verb commands, as commander hands them over. */
export interface VerbFlags {
  /** Phase name or id (continue, interrupt, force-complete, restart). */
  phase?: string;
  /** Step name or id, within --phase (force-complete, restart). */
  step?: string;
  /** `-p KEY=VALUE`, each as given (start). */
  parameter?: string[];
}

/** Where a plan API lives: a service scheduler's plans, or the master's maintenance plans. */
export type PlanRoot = '/v1/plans' | '/v1/maintenance/plans';

/** A service scheduler's plans. */
export const SERVICE_PLANS: PlanRoot = '/v1/plans';
/** The master's maintenance plans. */
export const MAINTENANCE_PLANS: PlanRoot = '/v1/maintenance/plans';

/** `GET <root>`. */
export function planListRequest(root: PlanRoot): ApiRequest {
  return { method: 'GET', path: root };
}

/** `<method> <root>/<plan>`: show (GET) or, for a maintenance plan, delete (DELETE). */
function onePlanRequest(method: 'GET' | 'DELETE', root: PlanRoot, plan: string): Checked<ApiRequest> {
  const seg = pathSegment('plan', plan);
  return seg.ok ? { ok: true, value: { method, path: `${root}/${seg.value}` } } : seg;
}

/** `GET <root>/<plan>`. */
export function planShowRequest(root: PlanRoot, plan: string): Checked<ApiRequest> {
  return onePlanRequest('GET', root, plan);
}

/** `DELETE /v1/maintenance/plans/<plan>`: only the master deletes plans (a COMPLETE or stopped one). */
export function planDeleteRequest(plan: string): Checked<ApiRequest> {
  return onePlanRequest('DELETE', MAINTENANCE_PLANS, plan);
}

/**
 * `POST /v1/maintenance/plans` with a spec's text as it is: the master reads YAML or JSON (YAML
 * holds JSON) and lists every error itself (400), so the CLI only refuses an empty file.
 */
export function planCreateRequest(spec: string, source: string): Checked<ApiRequest> {
  if (spec.trim() === '') return { ok: false, error: `${source} is empty; write a maintenance plan spec (YAML or JSON)` };
  return { ok: true, value: { method: 'POST', path: MAINTENANCE_PLANS, body: spec, contentType: 'application/yaml' } };
}

/**
 * `-p KEY=VALUE` flags as the JSON object `start` sends: split at the first `=` (a value may
 * hold more), an empty value allowed, the last of a repeated key wins (as the SDK CLI's map).
 * Whether a key is a valid environment variable name is the scheduler's to say (400).
 */
export function startParameters(flags: readonly string[]): Checked<Record<string, string>> {
  const entries: Array<[string, string]> = [];
  for (const f of flags) {
    const eq = f.indexOf('=');
    if (eq === -1) return { ok: false, error: `-p '${f}': expected KEY=VALUE` };
    if (eq === 0) return { ok: false, error: `-p '${f}': empty KEY; expected KEY=VALUE` };
    entries.push([f.slice(0, eq), f.slice(eq + 1)]);
  }
  // fromEntries defines own properties: a key named __proto__ is a parameter, not a prototype.
  return { ok: true, value: Object.fromEntries(entries) };
}

/** `POST <root>/<plan>/<verb>[?phase=&step=]`, with `start`'s parameters as its body. */
export function planVerbRequest(root: PlanRoot, verb: PlanVerb, plan: string, flags: VerbFlags): Checked<ApiRequest> {
  const seg = pathSegment('plan', plan);
  if (!seg.ok) return seg;
  const takes = TARGETS[verb];
  if (flags.phase !== undefined && !takes.phase) return { ok: false, error: `${verb} takes no --phase` };
  if (flags.step !== undefined && !takes.step) return { ok: false, error: `${verb} takes no --step` };
  if (flags.phase === '') return { ok: false, error: '--phase: empty; name a phase (its name or id)' };
  if (flags.step === '') return { ok: false, error: '--step: empty; name a step (its name or id)' };
  // The scheduler would answer 400 `Missing phase`; say it before sending anything.
  if (flags.step !== undefined && flags.phase === undefined) return { ok: false, error: '--step needs --phase (the phase the step is in)' };
  if (flags.parameter !== undefined && flags.parameter.length > 0 && verb !== 'start') return { ok: false, error: `${verb} takes no -p` };
  const query = new URLSearchParams();
  if (flags.phase !== undefined) query.set('phase', flags.phase);
  if (flags.step !== undefined) query.set('step', flags.step);
  const q = query.toString() === '' ? '' : `?${query.toString()}`;
  const path = `${root}/${seg.value}/${verb}${q}`;
  if (verb !== 'start') return { ok: true, value: { method: 'POST', path } };
  // The SDK CLI always sends an object, `{}` when there are no parameters.
  const params = startParameters(flags.parameter ?? []);
  if (!params.ok) return params;
  return { ok: true, value: { method: 'POST', path, body: JSON.stringify(params.value) } };
}

/**
 * A plan as the CLI reads it: PlanInfo (shared/plans/commands.ts) with statuses and strategies
 * as plain strings, so a status or strategy newer than this CLI is still shown. PlanInfo is
 * assignable to it (the unit test checks).
 */
export interface PlanView {
  readonly phases: readonly PhaseView[];
  readonly errors: readonly string[];
  readonly strategy: string;
  readonly status: string;
}
export interface PhaseView {
  readonly id: string;
  readonly name: string;
  readonly steps: readonly StepView[];
  readonly strategy: string;
  readonly status: string;
}
export interface StepView {
  readonly id: string;
  readonly name: string;
  readonly status: string;
  readonly message: string;
  /** A maintenance plan step's on_down hook record (the master's plans only). */
  readonly hook?: StepHookView;
}

/**
 * A maintenance plan step's hook record as the master writes it: `hook: {name, attempt, status,
 * code, signal, output}`, output the last 4 KiB of stdout and stderr, or OUTPUT_HIDDEN for a
 * reader not allowed run_maintenance_hooks on the hook.
 */
export interface StepHookView {
  readonly name: string | null;
  readonly attempt: number;
  /** running, succeeded, failed, timed_out, interrupted. */
  readonly status: string;
  readonly code: number | null;
  readonly signal: string | null;
  readonly output: string;
}

/** How many of the last lines of a hook's output `plan show` prints under its step (--json has all it keeps). */
export const HOOK_TAIL_LINES = 5;

/** A step's `hook`, read leniently: undefined when absent or not the master's shape. */
function decodeStepHook(v: unknown): StepHookView | undefined {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const h = v as Record<string, unknown>;
  if (typeof h['status'] !== 'string') return undefined;
  return {
    name: typeof h['name'] === 'string' ? h['name'] : null,
    attempt: typeof h['attempt'] === 'number' ? h['attempt'] : 0,
    status: h['status'],
    code: typeof h['code'] === 'number' ? h['code'] : null,
    signal: typeof h['signal'] === 'string' ? h['signal'] : null,
    output: typeof h['output'] === 'string' ? h['output'] : '',
  };
}

/**
 * The lines `plan show` prints under a step with a hook record: what ran and how it ended, then
 * the last HOOK_TAIL_LINES lines of its output, each behind `| ` (made safe for a terminal). Pure.
 *
 *     on_down mark: succeeded, exit 0 (attempt 1)
 *     | rebooted host-a
 */
export function hookLines(hook: StepHookView, tailLines = HOOK_TAIL_LINES): string[] {
  const ended = hook.code !== null ? `, exit ${hook.code}` : hook.signal !== null ? `, ${oneLine(hook.signal)}` : '';
  const head = `on_down${hook.name === null ? '' : ` ${oneLine(hook.name)}`}: ${oneLine(hook.status)}${ended} (attempt ${hook.attempt})`;
  const text = hook.output.replace(/\n$/, '');
  if (text === '') return [head];
  const lines = text.split('\n');
  const shown = lines.slice(-tailLines).map((l) => `| ${oneLine(l)}`);
  return lines.length > tailLines ? [head, `| ... (${lines.length - tailLines} lines before; --json has the last 4 KiB)`, ...shown] : [head, ...shown];
}

/** The one reader of a plan's JSON: checks the shape the contract gives (plans.md §6.3). */
export function decodePlan(value: unknown): Checked<PlanView> {
  try {
    const p = readObject(value, 'plan');
    const phases = readArray(p, 'phases', 'plan').map((v, i) => {
      const where = `phases[${i}]`;
      const ph = readObject(v, where);
      const steps = readArray(ph, 'steps', where).map((sv, j) => {
        const sw = `${where}.steps[${j}]`;
        const s = readObject(sv, sw);
        const step: StepView = { id: readString(s, 'id', sw), name: readString(s, 'name', sw), status: readString(s, 'status', sw), message: readString(s, 'message', sw, true) };
        const hook = decodeStepHook(s['hook']);
        return hook === undefined ? step : { ...step, hook };
      });
      return { id: readString(ph, 'id', where), name: readString(ph, 'name', where), steps, strategy: readString(ph, 'strategy', where), status: readString(ph, 'status', where) };
    });
    const errors = readArray(p, 'errors', 'plan', true).map((e, i) => {
      if (typeof e !== 'string') throw new Error(`errors[${i}] is not a string`);
      return e;
    });
    return { ok: true, value: { phases, errors, strategy: readString(p, 'strategy', 'plan'), status: readString(p, 'status', 'plan') } };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  }
}

/**
 * The note a step's message carries after its status: the message is
 * `step <name> [<id>] with status: <STATUS>: <note>` (shared/plans/commands.ts planInfo), and
 * the note says why the step waits or failed. The SDK's messages (`…DeploymentStep: <name>
 * [<id>] with status: COMPLETE`) carry none. Undefined when there is no note.
 */
export function stepNote(step: StepView): string | undefined {
  const marker = `] with status: ${step.status}: `;
  const exact = `step ${step.name} [${step.id}${marker}`;
  let at: number;
  if (step.message.startsWith(exact)) at = exact.length;
  else {
    const i = step.message.indexOf(`[${step.id}${marker}`);
    if (i === -1) return undefined;
    at = i + step.id.length + 1 + marker.length;
  }
  const note = oneLine(step.message.slice(at)).trim();
  return note === '' ? undefined : note;
}

/** The colour of a status on a terminal; PENDING (and anything unknown) stays plain. */
export function statusColour(status: string): Colour | undefined {
  switch (status) {
    case 'COMPLETE': return 'green';
    case 'ERROR': return 'red';
    case 'WAITING':
    case 'DELAYED': return 'yellow';
    case 'IN_PROGRESS':
    case 'PREPARED':
    case 'STARTING':
    case 'STARTED': return 'cyan';
    default: return undefined;
  }
}

function paintStatus(status: string, paint: Paint): string {
  const text = oneLine(status);
  const colour = statusColour(status);
  return colour === undefined ? text : paint(text, colour);
}

/**
 * The plan as a tree, one line each (no trailing newline):
 *
 *     deploy (serial) IN_PROGRESS
 *     ├─ hello-deploy (serial-canary) WAITING
 *     │  ├─ hello-0:[server] COMPLETE
 *     │  └─ hello-1:[server] WAITING: waiting for drydock plan continue
 *     └─ world-deploy (serial) PENDING
 *        └─ world-0:[server] PENDING
 *              on_down mark: succeeded, exit 0 (attempt 1)     (a maintenance step's hook: hookLines)
 *              | its last output lines
 *     errors:
 *       <each error of the plan, its phases and steps>
 *
 * Names and texts from the scheduler are made safe for a terminal (oneLine).
 */
export function renderPlan(name: string, plan: PlanView, paint: Paint): string[] {
  const lines = [`${oneLine(name)} (${oneLine(plan.strategy)}) ${paintStatus(plan.status, paint)}`];
  plan.phases.forEach((phase, i) => {
    const lastPhase = i === plan.phases.length - 1;
    lines.push(`${lastPhase ? '└─' : '├─'} ${oneLine(phase.name)} (${oneLine(phase.strategy)}) ${paintStatus(phase.status, paint)}`);
    const indent = lastPhase ? '   ' : '│  ';
    phase.steps.forEach((step, j) => {
      const note = stepNote(step);
      const branch = j === phase.steps.length - 1 ? '└─' : '├─';
      lines.push(`${indent}${branch} ${oneLine(step.name)} ${paintStatus(step.status, paint)}${note === undefined ? '' : `: ${note}`}`);
      if (step.hook !== undefined) {
        const under = `${indent}${j === phase.steps.length - 1 ? '   ' : '│  '}   `;
        for (const l of hookLines(step.hook)) lines.push(`${under}${l}`);
      }
    });
  });
  if (plan.errors.length > 0) {
    lines.push(paint('errors:', 'red'));
    for (const e of plan.errors) lines.push(`  ${oneLine(e)}`);
  }
  return lines;
}

/** `[████░░░░] 2/4 steps COMPLETE`: how far a plan is, for the live tree's first line. */
export function planProgress(plan: PlanView, width = 20): string {
  const steps = plan.phases.flatMap((p) => p.steps);
  return `${progressBar(steps.filter((s) => s.status === 'COMPLETE').length, steps.length, width)} steps COMPLETE`;
}

/** `drydock plan list`: the names, one a line (or the JSON array). */
export function listOutcome(at: Target, req: ApiRequest, answer: Answer, json: boolean): Printed {
  if (answer.kind !== 'http' || answer.status !== 200) return failurePrinted(at, req, answer);
  const value = answerJson(answer.body);
  const names = value.ok ? decodeNames(value.value) : value;
  if (!names.ok || !value.ok) return printedError(malformedLine(at, req, answer.status, names.ok ? '' : names.error));
  return printedOk(json ? [formatJson(value.value)] : names.value.map(oneLine));
}

/**
 * What one `GET /v1/plans/<plan>` brought: the plan (200, 202, 417), a failure worth retrying
 * while watching (no answer, a 5xx), or one that is final (400, 404, anything else, a body that
 * is not a plan).
 */
export type PlanPoll =
  | { readonly kind: 'plan'; readonly plan: PlanView; readonly json: unknown }
  | { readonly kind: 'transient'; readonly error: string }
  | { readonly kind: 'fatal'; readonly error: string; readonly exitCode: number };

/** Classifies one answer to `GET /v1/plans/<plan>` (see PlanPoll). */
export function planPoll(at: Target, req: ApiRequest, answer: Answer): PlanPoll {
  if (answer.kind === 'unreachable') return { kind: 'transient', error: unreachableLine(at, answer.reason) };
  if (answer.status === 200 || answer.status === 202 || answer.status === 417) {
    const value = answerJson(answer.body);
    const plan = value.ok ? decodePlan(value.value) : value;
    if (!value.ok || !plan.ok) return { kind: 'fatal', error: malformedLine(at, req, answer.status, plan.ok ? '' : plan.error), exitCode: EXIT_FAILED };
    return { kind: 'plan', plan: plan.value, json: value.value };
  }
  // 401 and 403 end a watch at once: waiting does not bring a credential or a right.
  const refused = accessRefusal(at.kind, answer.status, answer.body, at.credential);
  if (refused !== undefined) return { kind: 'fatal', error: refused.err.join('\n'), exitCode: refused.exitCode };
  if (answer.status >= 500) return { kind: 'transient', error: failureLine(at, req, answer) };
  return { kind: 'fatal', error: failureLine(at, req, answer), exitCode: EXIT_FAILED };
}

/**
 * `drydock plan show <plan>` once: the tree (or the JSON) and exit 0 whatever the plan's status,
 * ERROR included (417): the command's job is to show it, and the status is in what it prints.
 * Anything but a plan is an error, exit 1.
 */
export function showOutcome(at: Target, name: string, req: ApiRequest, answer: Answer, json: boolean, paint: Paint): Printed {
  const poll = planPoll(at, req, answer);
  if (poll.kind !== 'plan') return printedError(poll.error, poll.kind === 'fatal' ? poll.exitCode : EXIT_FAILED);
  return printedOk(json ? [formatJson(poll.json)] : renderPlan(name, poll.plan, paint));
}

/** The API's 208 text, shown when a 208 comes without a body. */
const ALREADY = 'Command has already been reported or completed';

/**
 * A verb's answer (and create's and delete's): 200 prints the scheduler's or master's message
 * (exit 0); 208 prints that the command was already reported or completed (exit 0; on stderr
 * with --json, which keeps stdout JSON); 400, 404 and 409 print the reason, every line of it,
 * anything else what came back (exit 1).
 */
export function verbOutcome(at: Target, req: ApiRequest, answer: Answer, json: boolean): Printed {
  if (answer.kind === 'http' && answer.status === 200) {
    const value = answerJson(answer.body);
    if (!value.ok) return json ? printedError(malformedLine(at, req, 200, value.error)) : printedOk([oneLine(answer.body.trim())]);
    if (json) return printedOk([formatJson(value.value)]);
    const message = isObj(value.value) && typeof value.value['message'] === 'string' ? value.value['message'] : stringifyJson(value.value);
    return printedOk([oneLine(message)]);
  }
  if (answer.kind === 'http' && answer.status === 208) {
    const text = oneLine(answer.body.trim()) || ALREADY;
    return json ? { exitCode: EXIT_OK, out: [], err: [text] } : printedOk([text]);
  }
  return failurePrinted(at, req, answer);
}

/** `--interval` for `--watch`: a Mesos duration (`1secs`, `500ms`), from 100ms to 1hrs. */
export function watchIntervalMs(text: string | undefined): Checked<number> {
  if (text === undefined) return { ok: true, value: 1000 };
  const d = parseDuration(text);
  if (!d.ok) return { ok: false, error: `--interval: ${d.error}` };
  // Faster than 100ms only loads the scheduler; slower than an hour is not watching.
  if (d.ns < 100_000_000n || d.ns > 3_600_000_000_000n) return { ok: false, error: `--interval '${text}': between 100ms and 1hrs` };
  return { ok: true, value: Number(d.ns / 1_000_000n) };
}

/** How long `--watch` keeps trying a scheduler (or master) that does not answer (or answers 5xx), in ms. */
export const WATCH_GIVE_UP_MS = 30_000;

/** What `--watch` remembers between polls. */
export interface WatchState {
  /** The last plan as drawn (tree lines, or one JSON line), without the footer. */
  readonly plan: string | undefined;
  /** What is on the screen (TTY) or was printed last (pipe): the unit of "changed?". */
  readonly shown: string | undefined;
  /** When the current run of failed polls began (ms); undefined while the target answers. */
  readonly failingSinceMs: number | undefined;
}

/** The state before the first poll: nothing shown, nothing failing. */
export const WATCH_START: WatchState = { plan: undefined, shown: undefined, failingSinceMs: undefined };

export interface WatchOptions {
  readonly name: string;
  /** What is polled, for the line that says it answers again. */
  readonly from: Target['kind'];
  /** One compact JSON line per change instead of the tree. */
  readonly json: boolean;
  /** Redraw in place with a footer (a terminal), or append (a pipe). */
  readonly tty: boolean;
  readonly paint: Paint;
  readonly intervalMs: number;
  readonly giveUpMs: number;
}

/** What the shell does after one poll. */
export interface WatchStep {
  readonly state: WatchState;
  /** A frame to show: on a TTY it replaces the previous one; on a pipe it is appended. */
  readonly draw?: string;
  /** A line for stderr. */
  readonly err?: string;
  /** Stop with this exit status. */
  readonly exitCode?: number;
}

function seconds(ms: number): string {
  return `${Math.round(ms / 1000)}s`;
}

/**
 * One poll of `drydock plan show --watch`. The plan is drawn when what would be shown changed;
 * the watch ends with 0 when the plan is COMPLETE. ERROR does not end it: an operator may
 * restart the failed step or force it complete, and the plan goes on. A 400/404 (or a body that
 * is no plan) ends it with 1; no answer or a 5xx is retried until `giveUpMs` have passed since
 * the first failure of a run, then it ends with 1. On a terminal a footer says what is watched
 * and what fails; on a pipe a failure is said once on stderr, and again when it ends.
 */
export function watchStep(state: WatchState, poll: PlanPoll, nowMs: number, o: WatchOptions): WatchStep {
  const footer = (line: string): string => (o.tty && !o.json ? `${line}\n` : '');
  const frame = (plan: string | undefined, foot: string): string => `${plan ?? ''}${foot}`;
  switch (poll.kind) {
    case 'plan': {
      const done = poll.plan.status === 'COMPLETE';
      const tree = o.json ? [] : renderPlan(o.name, poll.plan, o.paint);
      // A terminal gets a progress bar on the plan's line: steps COMPLETE of all steps.
      if (o.tty && tree.length > 0) tree[0] = `${tree[0] ?? ''}  ${planProgress(poll.plan)}`;
      const plan = o.json ? `${stringifyJson(poll.json)}\n` : `${tree.join('\n')}\n`;
      const shown = frame(plan, done ? '' : footer(`watching ${oneLine(o.name)} every ${formatDuration(msToNs(o.intervalMs))} until COMPLETE; Ctrl-C stops watching`));
      const back = state.failingSinceMs !== undefined && !(o.tty && !o.json) ? { err: `the ${o.from} answers again` } : {};
      const next: WatchState = { plan, shown, failingSinceMs: undefined };
      return { state: next, ...back, ...(shown !== state.shown ? { draw: shown } : {}), ...(done ? { exitCode: EXIT_OK } : {}) };
    }
    case 'fatal':
      return { state, err: poll.error, exitCode: poll.exitCode };
    case 'transient': {
      const since = state.failingSinceMs ?? nowMs;
      const failing = nowMs - since;
      if (failing > o.giveUpMs) return { state, err: `${poll.error}; gave up watching after ${seconds(failing)} without an answer`, exitCode: EXIT_FAILED };
      const next: WatchState = { ...state, failingSinceMs: since };
      if (o.tty && !o.json) {
        const shown = frame(state.plan, footer(`${poll.error}; retrying for ${seconds(o.giveUpMs - failing)} more`));
        return { state: { ...next, shown }, ...(shown !== state.shown ? { draw: shown } : {}) };
      }
      return { state: next, ...(state.failingSinceMs === undefined ? { err: `${poll.error}; retrying for up to ${seconds(o.giveUpMs)}` } : {}) };
    }
  }
}

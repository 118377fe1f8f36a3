/**
 * `drydock run`'s decisions, as pure functions (mesos-execute's behaviour): the flags checked
 * into one request, which offer to take, the TaskInfo to launch, how an update is printed and
 * which exit status a terminal update means. The shell that talks to the master is
 * run-command.ts.
 */

import { parseDuration } from '../shared/duration.js';
import { EXIT_RUN_FAILED } from './exit-codes.js';
import type { FrameworkInfo, Resource, TaskInfo, TaskState } from '../shared/mesos.js';

/** `drydock run`'s flags as commander hands them over (strings, unchecked). */
export interface RunFlags {
  name?: string;
  command?: string;
  cpus?: string;
  mem?: string;
  grace_period?: string;
  hostname?: string;
  framework_name?: string;
  checkpoint?: boolean;
  offer_timeout?: string;
  json?: boolean;
}

/** A checked `drydock run` request. Units are in the field names. */
export interface RunRequest {
  name: string;
  command: string;
  cpus: number;
  memMb: number;
  gracePeriodNs: bigint;
  /** Only offers from this agent (compared case-insensitively); any agent when undefined. */
  hostname: string | undefined;
  frameworkName: string;
  checkpoint: boolean;
  offerTimeoutMs: number;
  json: boolean;
}

export const RUN_DEFAULTS = {
  cpus: '0.1',
  mem: '32',
  gracePeriod: '3secs',
  frameworkName: 'drydock-run',
  offerTimeout: '30secs',
} as const;

export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

function positiveNumber(flag: string, text: string): Checked<number> {
  const n = Number(text);
  if (text.trim() === '' || !Number.isFinite(n) || n <= 0) return { ok: false, error: `--${flag} must be a positive number, got '${text}'` };
  return { ok: true, value: n };
}

function duration(flag: string, text: string, allowZero: boolean): Checked<bigint> {
  const d = parseDuration(text);
  if (!d.ok) return { ok: false, error: `--${flag}: ${d.error}` };
  if (d.ns < 0n || (!allowZero && d.ns === 0n)) return { ok: false, error: `--${flag} must be ${allowZero ? 'zero or more' : 'more than zero'}, got '${text}'` };
  return { ok: true, value: d.ns };
}

/**
 * Checks the flags. The name becomes part of a task id, which Mesos forbids to contain '/' or
 * whitespace (and which must not be '.' or '..').
 */
export function checkRunFlags(f: RunFlags): Checked<RunRequest> {
  const name = f.name ?? '';
  if (name === '') return { ok: false, error: '--name is required' };
  if (/[\s/]/.test(name) || name === '.' || name === '..') return { ok: false, error: `--name must not contain '/' or whitespace, got '${name}'` };
  const command = f.command ?? '';
  if (command.trim() === '') return { ok: false, error: '--command is required' };
  const cpus = positiveNumber('cpus', f.cpus ?? RUN_DEFAULTS.cpus);
  if (!cpus.ok) return cpus;
  const mem = positiveNumber('mem', f.mem ?? RUN_DEFAULTS.mem);
  if (!mem.ok) return mem;
  const grace = duration('grace_period', f.grace_period ?? RUN_DEFAULTS.gracePeriod, true);
  if (!grace.ok) return grace;
  const offerTimeout = duration('offer_timeout', f.offer_timeout ?? RUN_DEFAULTS.offerTimeout, false);
  if (!offerTimeout.ok) return offerTimeout;
  const hostname = f.hostname?.trim();
  if (hostname === '') return { ok: false, error: '--hostname must not be empty' };
  const frameworkName = f.framework_name ?? RUN_DEFAULTS.frameworkName;
  if (frameworkName.trim() === '') return { ok: false, error: '--framework_name must not be empty' };
  return {
    ok: true,
    value: {
      name,
      command,
      cpus: cpus.value,
      memMb: mem.value,
      gracePeriodNs: grace.value,
      hostname,
      frameworkName,
      checkpoint: f.checkpoint === true,
      // Rounded up so a timer never fires early; capped to what setTimeout can hold.
      offerTimeoutMs: Math.min(2 ** 31 - 1, Number((offerTimeout.value + 999_999n) / 1_000_000n)),
      json: f.json === true,
    },
  };
}

/**
 * The framework `drydock run` subscribes as: gone as soon as it disconnects (failover_timeout
 * 0, as mesos-execute), checkpointing only when asked, and able to see TASK_KILLING.
 */
export function runFramework(req: RunRequest, user: string): FrameworkInfo {
  return {
    user,
    name: req.frameworkName,
    failover_timeout: 0,
    checkpoint: req.checkpoint,
    capabilities: [{ type: 'TASK_KILLING_STATE' }],
  };
}

/** An offer as the scheduler API sends it; only the fields `drydock run` reads. */
export interface OfferJson {
  id: { value: string };
  agent_id: { value: string };
  hostname: string;
  resources?: Array<Resource & Record<string, unknown>>;
}

/** The total of a scalar resource in an offer (all roles). */
export function scalarTotal(resources: readonly Resource[] | undefined, name: string): number {
  let sum = 0;
  for (const r of resources ?? []) if (r.name === name && r.type === 'SCALAR') sum += r.scalar?.value ?? 0;
  return sum;
}

/** Why an offer does not fit the request, or undefined when it does. */
export function offerMismatch(offer: OfferJson, req: RunRequest): string | undefined {
  if (req.hostname !== undefined && offer.hostname.toLowerCase() !== req.hostname.toLowerCase()) return `hostname ${offer.hostname}`;
  const cpus = scalarTotal(offer.resources, 'cpus');
  // A small tolerance: offers are sums of decimal fractions (0.1 + 0.2 !== 0.3).
  if (cpus + 1e-9 < req.cpus) return `only ${round(cpus)} cpus`;
  const mem = scalarTotal(offer.resources, 'mem');
  if (mem + 1e-9 < req.memMb) return `only ${round(mem)} MB mem`;
  return undefined;
}

function round(n: number): number {
  return Math.round(n * 1000) / 1000;
}

/** What to do with one OFFERS event: accept at most one offer, decline the rest. */
export interface OfferChoice {
  accept: OfferJson | undefined;
  decline: OfferJson[];
  /** Why each declined offer did not fit (for the no-offer message). */
  mismatches: string[];
}

/** Picks the first fitting offer when `wanted`; every other offer is declined. */
export function chooseOffer(offers: readonly OfferJson[], req: RunRequest, wanted: boolean): OfferChoice {
  let accept: OfferJson | undefined;
  const decline: OfferJson[] = [];
  const mismatches: string[] = [];
  for (const o of offers) {
    const why = offerMismatch(o, req);
    if (wanted && accept === undefined && why === undefined) accept = o;
    else {
      decline.push(o);
      if (why !== undefined) mismatches.push(`${o.hostname}: ${why}`);
    }
  }
  return { accept, decline, mismatches };
}

/** What was asked for, for messages: `hostname agent-2, cpus 0.1, mem 32 MB`. */
export function describeRequest(req: RunRequest): string {
  return `${req.hostname !== undefined ? `hostname ${req.hostname}, ` : ''}cpus ${req.cpus}, mem ${req.memMb} MB`;
}

/**
 * `amount` of the scalar `name`, shaped like the offer's own resource of that name (role,
 * allocation_info, reservations copied), which is what the master matches an ACCEPT against.
 */
function takeScalar(offer: OfferJson, name: string, amount: number): Resource {
  const source = offer.resources?.find((r) => r.name === name && r.type === 'SCALAR');
  const { scalar: _scalar, ...shape } = source ?? { name, type: 'SCALAR' as const };
  return { ...shape, name, type: 'SCALAR', scalar: { value: amount } } as Resource;
}

/** The one task `drydock run` launches on `offer`; `suffix` makes the task id unique. */
export function runTaskInfo(req: RunRequest, offer: OfferJson, suffix: string): TaskInfo {
  return {
    name: req.name,
    task_id: { value: `${req.name}-${suffix}` },
    agent_id: { value: offer.agent_id.value },
    resources: [takeScalar(offer, 'cpus', req.cpus), takeScalar(offer, 'mem', req.memMb)],
    command: { shell: true, value: req.command },
    // int64 nanoseconds: exact as a JSON number up to 104 days, far beyond any grace period.
    kill_policy: { grace_period: { nanoseconds: Number(req.gracePeriodNs) } },
  };
}

/** A status as the scheduler API's UPDATE carries it; only what `drydock run` reads. */
export interface StatusJson {
  task_id: { value: string };
  state: TaskState | string;
  message?: string;
  reason?: string;
  source?: string;
  agent_id?: { value: string };
  timestamp?: number;
  uuid?: string;
}

const TERMINAL_STATES: ReadonlySet<string> = new Set([
  'TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED',
  'TASK_GONE', 'TASK_GONE_BY_OPERATOR',
]);

export function isTerminalState(state: string): boolean {
  return TERMINAL_STATES.has(state);
}

/** `HH:MM:SS.mmm` (UTC) of an epoch-seconds timestamp. */
function clockTime(seconds: number): string {
  return new Date(Math.round(seconds * 1000)).toISOString().slice(11, 23);
}

/**
 * One readable line per update: time, state, the agent's hostname, and the message with the
 * reason when there is one. `nowSeconds` stands in for an update without a timestamp.
 */
export function formatUpdate(s: StatusJson, agentHostname: string | undefined, nowSeconds: number): string {
  const parts = [clockTime(s.timestamp ?? nowSeconds), s.state.padEnd(13), agentHostname ?? s.agent_id?.value ?? '-'];
  const message = s.message !== undefined && s.message !== '' ? s.message : undefined;
  if (message !== undefined) parts.push(s.reason !== undefined ? `${message} (${s.reason})` : message);
  else if (s.reason !== undefined) parts.push(s.reason);
  return parts.join('  ').trimEnd();
}

/** strsignal() spellings the agent prints ("terminated with signal Terminated"), to numbers. */
const SIGNAL_NUMBERS: Readonly<Record<string, number>> = {
  Hangup: 1, Interrupt: 2, Quit: 3, 'Illegal instruction': 4, 'Trace/breakpoint trap': 5,
  Aborted: 6, 'Bus error': 7, 'Floating point exception': 8, Killed: 9, 'User defined signal 1': 10,
  'Segmentation fault': 11, 'User defined signal 2': 12, 'Broken pipe': 13, 'Alarm clock': 14,
  Terminated: 15, 'CPU time limit exceeded': 24, 'File size limit exceeded': 25,
};

/** How the command ended, read from the executor's message (`Command exited with status 3`). */
export function commandEnd(message: string | undefined): { exitCode: number } | { signal: number } | undefined {
  if (message === undefined) return undefined;
  const exited = /exited with status (\d+)/.exec(message);
  if (exited !== null) return { exitCode: Number(exited[1]) };
  const signalled = /terminated with signal (.+?)\s*$/.exec(message);
  if (signalled !== null) {
    const name = signalled[1] ?? '';
    const known = SIGNAL_NUMBERS[name];
    if (known !== undefined) return { signal: known };
    const unknown = /^Unknown signal (\d+)$/.exec(name);
    if (unknown !== null) return { signal: Number(unknown[1]) };
  }
  return undefined;
}

/** The CLI's exit status for a terminal update, and what to say on stderr when it is not the task's own. */
export interface RunOutcome {
  exitCode: number;
  /** Set when the task did not run to its own end (error, lost, dropped...). */
  problem?: string;
}

/**
 * The exit status, as a shell would report the command: 0 for TASK_FINISHED, the command's
 * status for TASK_FAILED, 128+signal for a command ended by a signal (a kill: 143 for
 * SIGTERM, 137 for SIGKILL). Anything else is not the task's own status and is 125, drydock
 * run's own failure (exit-codes.ts), with the message: a kill the command survived with status
 * 0, an error, a lost, dropped or gone task.
 */
export function runOutcome(s: StatusJson): RunOutcome {
  const end = commandEnd(s.message);
  const problem = `task ${s.task_id.value} ${s.state}${s.message !== undefined && s.message !== '' ? `: ${s.message}` : ''}${s.reason !== undefined ? ` (${s.reason})` : ''}`;
  switch (s.state) {
    case 'TASK_FINISHED':
      return { exitCode: 0 };
    case 'TASK_FAILED':
    case 'TASK_KILLED':
      if (end === undefined) return { exitCode: EXIT_RUN_FAILED, problem };
      if ('signal' in end) return { exitCode: 128 + end.signal };
      return end.exitCode === 0 ? { exitCode: EXIT_RUN_FAILED, problem } : { exitCode: Math.min(end.exitCode, 255) };
    default:
      return { exitCode: EXIT_RUN_FAILED, problem };
  }
}

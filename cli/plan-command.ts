/**
 * The plan commands' shell, for both plan APIs (plan.ts PlanRoot): `drydock plan` against a
 * service scheduler's `/v1/plans` and `drydock maintenance plan` against the master's
 * `/v1/maintenance/plans`: list, show [--watch], the verbs (start, stop, continue/resume,
 * interrupt/pause, force-complete, restart/force-restart), and the master's create and delete.
 * It finds the target, sends the requests, prints, polls, sleeps and handles Ctrl-C; every
 * decision is in plan.ts. Each function returns the exit status (service-api.ts: 0, 1, 2; 130
 * after Ctrl-C).
 */

import { readFile } from 'node:fs/promises';
import { badMasterLine, leaderOf, masterScheme, noLeaderLine, resolveMaster, type LeaderSearch } from './client.js';
import {
  MAINTENANCE_PLANS,
  PLAN_COMMANDS,
  SERVICE_PLANS,
  WATCH_GIVE_UP_MS,
  WATCH_START,
  listOutcome,
  planCreateRequest,
  planDeleteRequest,
  planListRequest,
  planPoll,
  planShowRequest,
  planVerbRequest,
  showOutcome,
  verbOutcome,
  watchIntervalMs,
  watchStep,
  type PlanRoot,
  type VerbFlags,
  type WatchOptions,
} from './plan.js';
import { EXIT_TIMEOUT } from './exit-codes.js';
import { waitTimeoutMs } from './nanotime.js';
import { formatDuration, msToNs } from '../shared/duration.js';
import { PREVIEW_PATH, previewPrinted } from './preview.js';
import { previewFailure } from './preview-command.js';
import { stringifyJson } from '../shared/json.js';
import { EXIT_FAILED, EXIT_USAGE, SCHEDULER_TIMEOUT_MS, ask, printedError, unreachableLine, resolveScheduler, type Answer, type ApiRequest, type Printed, type Target } from './service-api.js';
import { EXIT_INTERRUPTED, ansiPaint, eraseFrame, plainPaint, screenIo, screenRows, type ScreenIo, type TerminalIo } from './terminal.js';
import { parseMasterSpec, type EtcdAccess, type MasterSpec } from '../shared/detection.js';
import { ANONYMOUS_ACCESS, type ClientAccess } from '../io/client-auth.js';

/** The real terminal; `drydock: ` in front of errors. */
export const processScreen: ScreenIo = screenIo('drydock');

/** The shells' way to the scheduler or master: `ask` in the process, a fake in a test. */
export type Send = (at: Target, req: ApiRequest) => Promise<Answer>;

/** The flags every `drydock plan` and `drydock pod` command takes. */
export interface SchedulerFlags {
  /** host:port of the scheduler (default $DRYDOCK_SCHEDULER, else 127.0.0.1:8088). */
  scheduler?: string;
  /** Print the scheduler's JSON answer instead of text. */
  json?: boolean;
}

/** The flags every `drydock maintenance plan` command takes (--master is the program's). */
export interface MasterFlags {
  /** The master: host:port, a list, or etcd://… (default $DRYDOCK_MASTER, else 127.0.0.1:5050). */
  master?: string;
  /** Print the master's JSON answer instead of text. */
  json?: boolean;
}

/** The flags of a plan command, whichever API it speaks to. */
export type PlanFlags = SchedulerFlags & MasterFlags;

export interface ShowFlags extends PlanFlags {
  watch?: boolean;
  /** Mesos duration between polls with --watch (default 1secs). */
  interval?: string;
  /** With --watch: stop watching after this Mesos duration (exit 124); the plan goes on. */
  timeout?: string;
}

/** Where the commands run: the process's environment, terminal and files, and a way to the API. */
export interface Shell {
  readonly io: ScreenIo;
  readonly send: Send;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** The leading master's host:port through a master spec (shared/detection.ts), or why none was found. */
  readonly findLeader: (spec: MasterSpec) => Promise<LeaderSearch>;
  /** A file's text; `-` is stdin. Rejects with the file's error. */
  readonly readInput: (file: string) => Promise<string>;
  /** The credential and TLS the master and the scheduler are asked with (default: none); decides http or https too. */
  readonly access?: ClientAccess;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * The process's shell with a credential and TLS material (main.ts builds it from the global
 * flags). The master and the scheduler get the same credential and TLS options; `etcd` gives
 * etcd's access for an etcd:// master when one is looked for.
 */
export function processShellWith(access: ClientAccess, flags: { master?: string | undefined } = {}, etcd: () => EtcdAccess | undefined = () => undefined): Shell {
  const tls = access.transport.tls;
  return {
    io: processScreen,
    send: (at, req) => ask(at.base, req, SCHEDULER_TIMEOUT_MS, access.transport),
    env: process.env,
    // etcd's files are read only when a master is looked for (the scheduler's commands need none).
    findLeader: (spec) => leaderOf(spec, access.transport, masterScheme(flags.master, process.env, tls), etcd()),
    readInput: (file) => (file === '-' ? readStdin() : readFile(file, 'utf8')),
    access,
  };
}

/** The process's shell without credentials or TLS. */
export const processShell: Shell = processShellWith(ANONYMOUS_ACCESS);

/** Writes what a pure part decided; returns its exit status. */
export function print(io: TerminalIo, p: Printed): number {
  for (const line of p.out) io.out(line);
  for (const line of p.err) io.err(line);
  return p.exitCode;
}

/**
 * The scheduler (https when TLS material is given and --scheduler names no scheme), with the
 * credential it is sent; or undefined after saying why the flag or variable is wrong.
 */
export function schedulerTarget(flags: SchedulerFlags, shell: Shell): Target | undefined {
  const access = shell.access ?? ANONYMOUS_ACCESS;
  const r = resolveScheduler(flags.scheduler, shell.env, access.transport.tls);
  if (r.ok) return { kind: 'scheduler', base: r.value, credential: access.credential };
  shell.io.err(r.error);
  return undefined;
}

/**
 * The leading master, found as the other master commands find it (client.ts): --master, else
 * DRYDOCK_MASTER, else 127.0.0.1:5050; a list or etcd:// asks for the leader. A standby named
 * directly answers 307 to the leader, which `ask` follows. A bad spec is exit 2 (nothing was
 * sent), no leader found exit 1.
 */
async function leadingMaster(flags: MasterFlags, shell: Shell): Promise<Target | number> {
  const master = resolveMaster(flags.master, shell.env);
  const spec = parseMasterSpec(master);
  if (!spec.ok) return usage(shell.io, badMasterLine(master, spec.error));
  const leader = await shell.findLeader(spec.value);
  if (!leader.found) {
    shell.io.err(noLeaderLine(master, leader.why));
    return EXIT_FAILED;
  }
  const access = shell.access ?? ANONYMOUS_ACCESS;
  return { kind: 'master', base: `${masterScheme(flags.master, shell.env, access.transport.tls)}://${leader.address}`, credential: access.credential };
}

/** Which plans a command works on: where they are (root) and who serves them (target). */
export interface PlanApi {
  readonly root: PlanRoot;
  /** The target, or the exit status after saying why there is none. */
  locate(flags: PlanFlags, shell: Shell): Promise<Target | number>;
}

/** `drydock plan`: a service scheduler's plans. */
export const SCHEDULER_PLANS: PlanApi = {
  root: SERVICE_PLANS,
  locate: async (flags, shell) => schedulerTarget(flags, shell) ?? EXIT_USAGE,
};

/** `drydock maintenance plan`: the master's maintenance plans. */
export const MASTER_PLANS: PlanApi = {
  root: MAINTENANCE_PLANS,
  locate: leadingMaster,
};

function usage(io: TerminalIo, error: string): number {
  io.err(error);
  return EXIT_USAGE;
}

/** `drydock [maintenance] plan list`. */
export async function listPlans(api: PlanApi, flags: PlanFlags, shell: Shell = processShell): Promise<number> {
  const at = await api.locate(flags, shell);
  if (typeof at === 'number') return at;
  const req = planListRequest(api.root);
  return print(shell.io, listOutcome(at, req, await shell.send(at, req), flags.json === true));
}

/** `drydock [maintenance] plan show <plan> [--watch [--interval D]]`. */
export async function showPlan(api: PlanApi, name: string, flags: ShowFlags, shell: Shell = processShell): Promise<number> {
  const { io } = shell;
  const req = planShowRequest(api.root, name);
  if (!req.ok) return usage(io, req.error);
  if (flags.watch !== true && flags.interval !== undefined) return usage(io, '--interval is for --watch');
  const interval = watchIntervalMs(flags.interval);
  if (!interval.ok) return usage(io, interval.error);
  const timeout = waitTimeoutMs(flags.timeout, flags.watch === true, '--watch');
  if (!timeout.ok) return usage(io, timeout.error);
  const at = await api.locate(flags, shell);
  if (typeof at === 'number') return at;
  const json = flags.json === true;
  const paint = io.colour && !json ? ansiPaint : plainPaint;
  if (flags.watch !== true) return print(io, showOutcome(at, name, req.value, await shell.send(at, req.value), json, paint));
  return watchPlan(at, req.value, { name, from: at.kind, json, tty: io.tty, paint, intervalMs: interval.value, giveUpMs: WATCH_GIVE_UP_MS }, shell, timeout.value);
}

/**
 * Polls the plan every interval and draws it (watchStep decides what and when to stop). On a
 * terminal the previous frame is erased first, so the tree redraws in place. Ctrl-C ends the
 * watch at once, even mid-request or mid-sleep, with 130; the plan is the scheduler's and goes on.
 * So does `--timeout` (`timeoutMs`), with 124.
 */
async function watchPlan(at: Target, req: ApiRequest, o: WatchOptions, shell: Shell, timeoutMs?: number): Promise<number> {
  const { io } = shell;
  let stop: () => void = () => undefined;
  const stopped = new Promise<'stopped'>((resolve) => (stop = () => resolve('stopped')));
  const off = io.onSignal(() => stop());
  // Its timer is cleared when the watch ends, so a long --timeout does not hold the process.
  const done = new AbortController();
  const expired = timeoutMs === undefined ? new Promise<never>(() => undefined) : io.sleep(timeoutMs, done.signal).then(() => 'expired' as const);
  const timedOut = (): number => {
    io.err(`stopped watching ${o.name} after ${formatDuration(msToNs(timeoutMs ?? 0))} (--timeout); the plan goes on`);
    return EXIT_TIMEOUT;
  };
  let drawnRows = 0;
  try {
    let state = WATCH_START;
    for (;;) {
      const answer = await Promise.race([shell.send(at, req), stopped, expired]);
      if (answer === 'stopped') break;
      if (answer === 'expired') return timedOut();
      const step = watchStep(state, planPoll(at, req, answer), io.nowMs(), o);
      state = step.state;
      if (step.draw !== undefined) {
        if (o.tty && !o.json) {
          const size = io.size();
          io.write(eraseFrame(drawnRows, size?.rows) + step.draw);
          drawnRows = screenRows(step.draw, size?.columns ?? 80);
        } else io.write(step.draw);
      }
      if (step.err !== undefined) io.err(step.err);
      if (step.exitCode !== undefined) return step.exitCode;
      const slept = await Promise.race([io.sleep(o.intervalMs, done.signal), stopped, expired]);
      if (slept === 'stopped') break;
      if (slept === 'expired') return timedOut();
    }
    io.err(`stopped watching ${o.name}; the plan goes on`);
    return EXIT_INTERRUPTED;
  } finally {
    done.abort();
    off();
  }
}

/** Checks the request first (a usage error sends nothing), then finds the target, sends it and prints the answer. */
async function sendOne(api: PlanApi, req: { ok: true; value: ApiRequest } | { ok: false; error: string }, flags: PlanFlags, shell: Shell): Promise<number> {
  if (!req.ok) return usage(shell.io, req.error);
  const at = await api.locate(flags, shell);
  if (typeof at === 'number') return at;
  return print(shell.io, verbOutcome(at, req.value, await shell.send(at, req.value), flags.json === true));
}

/**
 * `drydock [maintenance] plan <command> <plan>` for the verbs; `command` is the CLI's name for
 * it (aliases included, see PLAN_COMMANDS).
 */
export async function planVerb(api: PlanApi, command: string, name: string, flags: PlanFlags & VerbFlags, shell: Shell = processShell): Promise<number> {
  const verb = Object.hasOwn(PLAN_COMMANDS, command) ? PLAN_COMMANDS[command] : undefined;
  if (verb === undefined) return usage(shell.io, `unknown plan command '${command}'`);
  return sendOne(api, planVerbRequest(api.root, verb, name, flags), flags, shell);
}

/**
 * `drydock maintenance plan create FILE|-`: the spec's text as it is, to the master, which
 * checks it, creates the plan and starts it (200, its message), or lists every error (400).
 * With --dry-run the master's impact preview instead: the plan's waves and what each would do
 * (preview.ts); nothing is created.
 */
export async function createPlan(file: string, flags: MasterFlags & { dryRun?: boolean }, shell: Shell = processShell): Promise<number> {
  const source = file === '-' ? 'stdin' : file;
  let text: string;
  try {
    text = await shell.readInput(file);
  } catch (e) {
    // Nothing was sent: the file named on the command line is the trouble.
    shell.io.err(`cannot read ${source}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return EXIT_USAGE;
  }
  const req = planCreateRequest(text, source);
  if (flags.dryRun !== true) return sendOne(MASTER_PLANS, req, flags, shell);
  if (!req.ok) return usage(shell.io, req.error);
  const at = await MASTER_PLANS.locate(flags, shell);
  if (typeof at === 'number') return at;
  const answer = await shell.send(at, { method: 'POST', path: PREVIEW_PATH, body: stringifyJson({ maintenance_plan: text }) });
  if (answer.kind === 'unreachable') return print(shell.io, printedError(unreachableLine(at, answer.reason)));
  const printed = previewPrinted(answer.status, answer.body, flags.json === true, 'the plan') ?? previewFailure(answer.status, answer.body, at.credential);
  return print(shell.io, printed);
}

/** `drydock maintenance plan delete <plan>`: the master deletes a COMPLETE or stopped plan (else 409). */
export async function deletePlan(name: string, flags: MasterFlags, shell: Shell = processShell): Promise<number> {
  return sendOne(MASTER_PLANS, planDeleteRequest(name), flags, shell);
}

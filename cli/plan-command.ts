/**
 * `drydock plan`'s shell: list, show [--watch], and the verbs (start, stop, continue/resume,
 * interrupt/pause, force-complete, restart/force-restart) against a service scheduler's
 * `/v1/plans`. It sends the requests, prints, polls, sleeps and handles Ctrl-C; every decision
 * is in plan.ts. Each function returns the exit status (service-api.ts: 0, 1, 2; 130 after
 * Ctrl-C).
 */

import {
  PLAN_COMMANDS,
  PLAN_LIST_REQUEST,
  WATCH_GIVE_UP_MS,
  WATCH_START,
  listOutcome,
  planPoll,
  planShowRequest,
  planVerbRequest,
  showOutcome,
  verbOutcome,
  watchIntervalMs,
  watchStep,
  type VerbFlags,
  type WatchOptions,
} from './plan.js';
import { EXIT_USAGE, ask, resolveScheduler, type Answer, type ApiRequest, type Printed } from './service-api.js';
import { EXIT_INTERRUPTED, ansiPaint, eraseFrame, plainPaint, screenIo, screenRows, type ScreenIo, type TerminalIo } from './terminal.js';

/** The real terminal; `drydock: ` in front of errors. */
export const processScreen: ScreenIo = screenIo('drydock');

/** The shells' way to the scheduler: `ask` in the process, a fake in a test. */
export type Send = (base: string, req: ApiRequest) => Promise<Answer>;

/** The flags every `drydock plan` and `drydock pod` command takes. */
export interface SchedulerFlags {
  /** host:port of the scheduler (default $DRYDOCK_SCHEDULER, else 127.0.0.1:8088). */
  scheduler?: string;
  /** Print the scheduler's JSON answer instead of text. */
  json?: boolean;
}

export interface ShowFlags extends SchedulerFlags {
  watch?: boolean;
  /** Mesos duration between polls with --watch (default 1secs). */
  interval?: string;
}

/** Where the commands run: the process's environment and terminal, and a way to the scheduler. */
export interface Shell {
  readonly io: ScreenIo;
  readonly send: Send;
  readonly env: Readonly<Record<string, string | undefined>>;
}

export const processShell: Shell = { io: processScreen, send: ask, env: process.env };

/** Writes what a pure part decided; returns its exit status. */
export function print(io: TerminalIo, p: Printed): number {
  for (const line of p.out) io.out(line);
  for (const line of p.err) io.err(line);
  return p.exitCode;
}

/** The scheduler's base URL, or undefined after saying why the flag or variable is wrong. */
export function schedulerBase(flags: SchedulerFlags, shell: Shell): string | undefined {
  const r = resolveScheduler(flags.scheduler, shell.env);
  if (r.ok) return r.value;
  shell.io.err(r.error);
  return undefined;
}

function usage(io: TerminalIo, error: string): number {
  io.err(error);
  return EXIT_USAGE;
}

/** `drydock plan list`. */
export async function listPlans(flags: SchedulerFlags, shell: Shell = processShell): Promise<number> {
  const base = schedulerBase(flags, shell);
  if (base === undefined) return EXIT_USAGE;
  return print(shell.io, listOutcome(base, await shell.send(base, PLAN_LIST_REQUEST), flags.json === true));
}

/** `drydock plan show <plan> [--watch [--interval D]]`. */
export async function showPlan(name: string, flags: ShowFlags, shell: Shell = processShell): Promise<number> {
  const { io } = shell;
  const base = schedulerBase(flags, shell);
  if (base === undefined) return EXIT_USAGE;
  const req = planShowRequest(name);
  if (!req.ok) return usage(io, req.error);
  if (flags.watch !== true && flags.interval !== undefined) return usage(io, '--interval is for --watch');
  const interval = watchIntervalMs(flags.interval);
  if (!interval.ok) return usage(io, interval.error);
  const json = flags.json === true;
  const paint = io.colour && !json ? ansiPaint : plainPaint;
  if (flags.watch !== true) return print(io, showOutcome(base, name, req.value, await shell.send(base, req.value), json, paint));
  return watchPlan(base, req.value, { name, json, tty: io.tty, paint, intervalMs: interval.value, giveUpMs: WATCH_GIVE_UP_MS }, shell);
}

/**
 * Polls the plan every interval and draws it (watchStep decides what and when to stop). On a
 * terminal the previous frame is erased first, so the tree redraws in place. Ctrl-C ends the
 * watch at once, even mid-request or mid-sleep, with 130; the plan is the scheduler's and goes on.
 */
async function watchPlan(base: string, req: ApiRequest, o: WatchOptions, shell: Shell): Promise<number> {
  const { io } = shell;
  let stop: () => void = () => undefined;
  const stopped = new Promise<'stopped'>((resolve) => (stop = () => resolve('stopped')));
  const off = io.onSignal(() => stop());
  let drawnRows = 0;
  try {
    let state = WATCH_START;
    for (;;) {
      const answer = await Promise.race([shell.send(base, req), stopped]);
      if (answer === 'stopped') break;
      const step = watchStep(state, planPoll(base, req, answer), io.nowMs(), o);
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
      if ((await Promise.race([io.sleep(o.intervalMs), stopped])) === 'stopped') break;
    }
    io.err(`stopped watching ${o.name}; the plan goes on`);
    return EXIT_INTERRUPTED;
  } finally {
    off();
  }
}

/**
 * `drydock plan <command> <plan>` for the verbs; `command` is the CLI's name for it (aliases
 * included, see PLAN_COMMANDS).
 */
export async function planVerb(command: string, name: string, flags: SchedulerFlags & VerbFlags, shell: Shell = processShell): Promise<number> {
  const { io } = shell;
  const verb = Object.hasOwn(PLAN_COMMANDS, command) ? PLAN_COMMANDS[command] : undefined;
  if (verb === undefined) return usage(io, `unknown plan command '${command}'`);
  const base = schedulerBase(flags, shell);
  if (base === undefined) return EXIT_USAGE;
  const req = planVerbRequest(verb, name, flags);
  if (!req.ok) return usage(io, req.error);
  return print(io, verbOutcome(base, req.value, await shell.send(base, req.value), flags.json === true));
}

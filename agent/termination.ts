/**
 * How a task ended, as the launcher recorded it, turned into the terminal status Mesos' command
 * executor would send. Pure.
 */

import type { TaskState, TaskStatusReason } from '../shared/mesos.js';

/** What drydock-launch writes to its status file when the task ends. */
export type LauncherEnd =
  | { pid: number; exit_code: number; ended_ms: number }
  | { pid: number; signal: number; core_dumped: boolean; ended_ms: number };

/** strsignal() spellings, which Mesos' WSTRINGIFY prints ("terminated with signal Killed"). */
const SIGNAL_NAMES: Readonly<Record<number, string>> = {
  1: 'Hangup', 2: 'Interrupt', 3: 'Quit', 4: 'Illegal instruction', 5: 'Trace/breakpoint trap',
  6: 'Aborted', 7: 'Bus error', 8: 'Floating point exception', 9: 'Killed', 10: 'User defined signal 1',
  11: 'Segmentation fault', 12: 'User defined signal 2', 13: 'Broken pipe', 14: 'Alarm clock',
  15: 'Terminated', 24: 'CPU time limit exceeded', 25: 'File size limit exceeded',
};

/** The strsignal() name of a signal number, e.g. 15 → "Terminated". */
export function signalName(signal: number): string {
  return SIGNAL_NAMES[signal] ?? `Unknown signal ${signal}`;
}

/** Mesos' WSTRINGIFY of a wait status: "exited with status 3", "terminated with signal Killed". */
export function describeEnd(end: LauncherEnd): string {
  return 'exit_code' in end ? `exited with status ${end.exit_code}` : `terminated with signal ${signalName(end.signal)}`;
}

/**
 * What a launcher said on its report channel of a task's end it could not record in its exit
 * file (its `T` line, agent/launcher.c): the end, and the errno and strerror() text of the
 * write that failed.
 */
export type LauncherReport = LauncherEnd & { errno: number; error: string };

/** Reads a launcher's `T` line's JSON; undefined if it is not one. */
export function parseLauncherReport(json: string): LauncherReport | undefined {
  let data: unknown;
  try {
    data = JSON.parse(json);
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  const o = data as Record<string, unknown>;
  if (typeof o['pid'] !== 'number' || typeof o['ended_ms'] !== 'number' || typeof o['errno'] !== 'number' || typeof o['error'] !== 'string') return undefined;
  const why = { errno: o['errno'], error: o['error'].slice(0, 200) };
  if (typeof o['exit_code'] === 'number') return { pid: o['pid'], exit_code: o['exit_code'], ended_ms: o['ended_ms'], ...why };
  if (typeof o['signal'] === 'number') return { pid: o['pid'], signal: o['signal'], core_dumped: o['core_dumped'] === true, ended_ms: o['ended_ms'], ...why };
  return undefined;
}

export interface TerminalOutcome {
  state: TaskState;
  message: string;
  reason?: TaskStatusReason;
}

/**
 * The terminal state: a kill we asked for is TASK_KILLED whatever the exit (as in Mesos'
 * command executor); otherwise exit 0 is TASK_FINISHED and anything else TASK_FAILED.
 * `end` undefined means the launcher vanished without recording anything. `unrecorded` says
 * why the end is not in the exit file, when that is known: after the end the launcher reported
 * instead, or after the message that it could not be learnt.
 */
export function terminalOutcome(end: LauncherEnd | undefined, killRequested: boolean, unrecorded?: string): TerminalOutcome {
  if (end === undefined) {
    return {
      state: killRequested ? 'TASK_KILLED' : 'TASK_FAILED',
      message: `Task launcher exited without recording how the task ended${unrecorded === undefined ? '' : `: ${unrecorded}`}`,
      reason: 'REASON_EXECUTOR_TERMINATED',
    };
  }
  const message = `Command ${describeEnd(end)}${unrecorded === undefined ? '' : ` (${unrecorded})`}`;
  if (killRequested) return { state: 'TASK_KILLED', message };
  if ('exit_code' in end && end.exit_code === 0) return { state: 'TASK_FINISHED', message };
  return { state: 'TASK_FAILED', message };
}

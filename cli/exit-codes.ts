/**
 * Every exit status of `drydock`, in one table: the constants the commands return and the text
 * `drydock --help` prints under "Exit status". Scripts branch on these numbers, so they are
 * stable: a new meaning gets a new number, an old number never changes meaning.
 *
 * `drydock run` is the one command whose status is mostly not its own: once its task ran, it
 * exits with the task's status (0, the command's status, 128+signal), which may be any number.
 * So run's own failures, usage errors included, are all 125 (as `docker run` and coreutils'
 * `env`/`timeout` report their own failures above what a command usually returns), never 1 to 4.
 */

/** Done (also a 208 "already reported or completed", and `plan show` of a plan in ERROR). */
export const EXIT_OK = 0;
/** The master or scheduler refused (400, 404, 409), answered something unexpected, or could not be reached; a wait gave up on an unreachable master. */
export const EXIT_FAILED = 1;
/** The command line is wrong: a bad flag or argument, or an unusable credential, TLS or etcd file; nothing was sent. */
export const EXIT_USAGE = 2;
/** The master (or the scheduler) wants credentials, or refused the ones given (401). */
export const EXIT_UNAUTHENTICATED = 3;
/** The master's ACLs do not let this principal do this (403; a scheduler has no ACLs). */
export const EXIT_FORBIDDEN = 4;
/** A --timeout ran out while waiting or watching; the operation goes on. 124, as coreutils' `timeout` reports it. */
export const EXIT_TIMEOUT = 124;
/** `drydock run` only: drydock run itself failed (a usage error, refused, no offer, lost master), not its task. */
export const EXIT_RUN_FAILED = 125;
/** Ctrl-C (or SIGTERM) while waiting or watching: 128 + SIGINT, as shells report it. */
export const EXIT_INTERRUPTED = 130;

/** One documented exit status. */
export interface ExitCode {
  readonly code: number;
  readonly meaning: string;
}

/** The table, in order; `drydock run` adds the task's own status (see its help). */
export const EXIT_CODES: readonly ExitCode[] = [
  { code: EXIT_OK, meaning: 'done; also when nothing had to change (deactivating a deactivated agent), and when a pipe reading the output closed early (| head)' },
  { code: EXIT_FAILED, meaning: 'the master or scheduler refused (400, 404, 409), answered something unexpected, or could not be reached' },
  { code: EXIT_USAGE, meaning: 'usage: a bad flag or argument (a machine that names an agent by half, without --force), or a credential, TLS or etcd file that cannot be used (nothing was sent)' },
  { code: EXIT_UNAUTHENTICATED, meaning: 'the master (or scheduler; for task logs, the agent) wants credentials (401), or refused the ones given' },
  { code: EXIT_FORBIDDEN, meaning: 'the master\'s ACLs (for task logs, the agent\'s) do not allow it (403); the message names the action and principal' },
  { code: EXIT_TIMEOUT, meaning: '--timeout ran out while waiting, watching or following (--wait, --watch, task logs -f); the operation goes on' },
  { code: EXIT_RUN_FAILED, meaning: 'drydock run only: drydock run itself failed (usage, refused, no offer, no master, the task never ended on its own); its task\'s own status otherwise' },
  { code: EXIT_INTERRUPTED, meaning: 'Ctrl-C while waiting, watching or following (drain --wait, plan show --watch, status --watch, task logs -f); the operation goes on' },
];

/** The table as help text: `  CODE  meaning`, one a line. Pure. */
export function exitCodeHelp(codes: readonly ExitCode[] = EXIT_CODES): string {
  return codes.map((c) => `  ${String(c.code).padEnd(4)} ${c.meaning}`).join('\n');
}

/** The line under a usage error: where the command's help is (`drydock agent drain`). */
export function usageHint(commandPath: string): string {
  return `Run '${commandPath} --help' for usage.`;
}

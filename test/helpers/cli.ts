/**
 * The built CLI (`dist/cli/main.js`) as a child process against a test master: output
 * captured, killed by its pid when the test ends, and waited for with a bound.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { CLI_BIN, EVENT_DEADLINE_MS, type MasterHandle } from './daemons.js';

export interface CliProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** The exit code; -1 when a signal ended it. */
  exited: Promise<number | null>;
}

/** Starts `drydock ARGS --master=<master>`. */
export function startCli(t: { after(fn: () => unknown): void }, master: MasterHandle, args: readonly string[]): CliProcess {
  return spawnCli(t, [`--master=${master.address}`, ...args]);
}

/**
 * Starts `drydock ARGS` as it is (for commands that talk to something other than the master,
 * like `drydock plan --scheduler=...`). `env` changes the test's environment for it: a value
 * replaces, undefined removes.
 */
export function spawnCli(t: { after(fn: () => unknown): void }, args: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): CliProcess {
  const childEnv: Record<string, string | undefined> = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete childEnv[k];
  const child = spawn(process.execPath, [CLI_BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: childEnv });
  const run: CliProcess = {
    child,
    stdout: '',
    stderr: '',
    // 'close', not 'exit': a child may exit before its stdout and stderr are read to the end.
    exited: new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal !== null ? -1 : null)))),
  };
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (run.stdout += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (run.stderr += c));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await run.exited;
    }
  });
  return run;
}

/** Waits for the CLI to exit (rejects after timeoutMs with what it printed). */
export async function cliFinished(run: CliProcess, timeoutMs = EVENT_DEADLINE_MS): Promise<{ code: number | null; stdout: string; stderr: string }> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const code = await Promise.race([
      run.exited,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`drydock did not exit; stdout: ${run.stdout}; stderr: ${run.stderr}`)), timeoutMs))),
    ]);
    return { code, stdout: run.stdout, stderr: run.stderr };
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The built CLI (`dist/cli/main.js`) as a child process against a test master: output
 * captured, killed by its pid when the test ends, and waited for with a bound.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { CLI_BIN, type MasterHandle } from './daemons.js';

export interface CliProcess {
  child: ChildProcess;
  stdout: string;
  stderr: string;
  /** The exit code; -1 when a signal ended it. */
  exited: Promise<number | null>;
}

/** Starts `drydock ARGS --master=<master>`. */
export function startCli(t: { after(fn: () => unknown): void }, master: MasterHandle, args: readonly string[]): CliProcess {
  const child = spawn(process.execPath, [CLI_BIN, `--master=${master.address}`, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  const run: CliProcess = {
    child,
    stdout: '',
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve(code ?? (signal !== null ? -1 : null)))),
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
export async function cliFinished(run: CliProcess, timeoutMs = 30_000): Promise<{ code: number | null; stdout: string; stderr: string }> {
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

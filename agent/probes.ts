/**
 * The probes of agent/checks.ts, the I/O shell: a command run in the task's sandbox with the
 * task's environment, an HTTP GET and a TCP connect to the task on loopback.
 *
 * A check command is run by the runner of Node-supervised processes (io/process-run.ts, execa),
 * in a process group of its own (it may fork), so that a timeout, the end of its task or the
 * agent stopping kills all of it (SIGKILL at once); whatever it leaves behind in its group when
 * it exits is killed too. Its stdin, stdout and stderr are /dev/null: a check run every
 * tenth of a second must not fill the sandbox (Mesos sends them to the executor's stderr).
 * The agent cannot clean up after a `kill -9` of itself: a command under way then runs to its
 * own end.
 */

import { request, type ClientRequest } from 'node:http';
import { connect } from 'node:net';
import { systemClock } from '../shared/clock.js';
import type { CheckStatusInfo, CommandInfo } from '../shared/mesos.js';
import type { ProcessRun } from '../io/process-run.js';
import { emptyStatus, type Probe, type ProbeRun } from './checks.js';

/** Where a task's check commands run. */
export interface ProbeContext {
  /** The task's sandbox. */
  cwd: string;
  /** The task's environment; a check's own variables are added to it. */
  env: Readonly<Record<string, string>>;
}

/** Starts one probe. Never throws; the result never rejects. */
export function runProbe(probe: Probe, ctx: ProbeContext): ProbeRun {
  switch (probe.type) {
    case 'COMMAND':
      return runCommand(probe.command, ctx);
    case 'HTTP':
      return runHttp(probe.port, probe.path, probe.ipv6);
    case 'TCP':
      return runTcp(probe.port, probe.ipv6);
  }
}

const settled = (result: CheckStatusInfo): ProbeRun => ({ result: Promise.resolve(result), abort: () => {} });

/**
 * The runner, loaded on the first command check: execa and its modules add about 16 MB to a
 * process that loads them (measured: 16.6-16.9 MB RSS, 0.2 s), more than a quarter of an idle
 * agent, which most agents would carry without ever running a check command.
 */
let runner: Promise<typeof import('../io/process-run.js')> | undefined;

function runCommand(command: CommandInfo, ctx: ProbeContext): ProbeRun {
  const empty = emptyStatus('COMMAND');
  const value = command.value ?? '';
  const env: Record<string, string> = { ...ctx.env };
  for (const v of command.environment?.variables ?? []) if (v.value !== undefined) env[v.name] = v.value;
  // As the task itself (and Mesos): a shell command runs with /bin/sh -c; otherwise `value` is
  // the program and `arguments` its whole argv, argv[0] included.
  const shell = command.shell !== false;
  const args = command.arguments ?? [];
  const argv = shell ? ['sh', '-c', value] : args.length > 0 ? args : [value];
  let aborted = false;
  let run: ProcessRun | undefined;
  const result = (runner ??= import('../io/process-run.js')).then(
    ({ runProcess }) => {
      if (aborted) return empty;
      run = runProcess({
        argv: [shell ? '/bin/sh' : value, ...argv.slice(1)],
        argv0: argv[0] ?? value,
        env,
        extendEnv: false,
        cwd: ctx.cwd,
        output: 'ignore',
        // A timeout, the task's end or the agent stopping: the whole group at once (a check has no grace).
        stop: { signal: 'SIGKILL', target: 'group', graceMs: 0 },
        killGroupOnExit: true,
        clock: systemClock,
      });
      // Could not start (no such program, the sandbox is gone), or killed by a signal (a timeout
      // included): no exit code, so no result, as in Mesos. Once the command has ended its pid
      // may be reused: the runner killed its group then, and stops nothing after.
      return run.ended.then((end): CheckStatusInfo => (end.error === undefined && end.code !== null ? { type: 'COMMAND', command: { exit_code: end.code } } : empty));
    },
    (): CheckStatusInfo => empty,
  );
  return {
    result,
    abort: () => {
      aborted = true;
      run?.stop();
    },
  };
}

function runHttp(port: number, path: string, ipv6: boolean): ProbeRun {
  const empty = emptyStatus('HTTP');
  let req: ClientRequest | undefined;
  const result = new Promise<CheckStatusInfo>((resolve) => {
    try {
      req = request({ host: ipv6 ? '::1' : '127.0.0.1', port, path, method: 'GET', agent: false, headers: { 'user-agent': 'drydock-agent-check' } }, (res) => {
        // The status line is the result; the body is not read (it might never end).
        const code = res.statusCode;
        resolve(code !== undefined ? { type: 'HTTP', http: { status_code: code } } : empty);
        res.destroy();
      });
      // Refused, reset, or destroyed by abort(): no result (curl fails in Mesos).
      req.on('error', () => resolve(empty));
      req.end();
    } catch {
      resolve(empty);
    }
  });
  return { result, abort: () => void req?.destroy() };
}

function runTcp(port: number, ipv6: boolean): ProbeRun {
  let socket: ReturnType<typeof connect> | undefined;
  const result = new Promise<CheckStatusInfo>((resolve) => {
    try {
      const s = connect({ host: ipv6 ? '::1' : '127.0.0.1', port });
      socket = s;
      s.once('connect', () => {
        s.destroy();
        resolve({ type: 'TCP', tcp: { succeeded: true } });
      });
      s.once('error', () => {
        s.destroy();
        resolve({ type: 'TCP', tcp: { succeeded: false } });
      });
    } catch {
      resolve({ type: 'TCP', tcp: { succeeded: false } });
    }
  });
  return { result, abort: () => void socket?.destroy() };
}

/**
 * The probes of agent/checks.ts, the I/O shell: a command run in the task's sandbox with the
 * task's environment, an HTTP GET and a TCP connect to the task on loopback.
 *
 * A check command gets a process group of its own (it may fork), so that a timeout, the end
 * of its task or the agent stopping kills all of it; whatever it leaves behind in its group
 * when it exits is killed too. Its stdin, stdout and stderr are /dev/null: a check run every
 * tenth of a second must not fill the sandbox (Mesos sends them to the executor's stderr).
 * The agent cannot clean up after a `kill -9` of itself: a command under way then runs to its
 * own end.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { request, type ClientRequest } from 'node:http';
import { connect } from 'node:net';
import type { CheckStatusInfo, CommandInfo } from '../shared/mesos.js';
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
  let child: ChildProcess;
  try {
    child = spawn(shell ? '/bin/sh' : value, argv.slice(1), { argv0: argv[0] ?? value, cwd: ctx.cwd, env, detached: true, stdio: 'ignore' });
  } catch {
    return settled(empty);
  }
  const pgid = child.pid;
  let ended = false;
  const killGroup = (): void => {
    if (pgid === undefined) return;
    try {
      process.kill(-pgid, 'SIGKILL');
    } catch {
      // The group is already gone.
    }
  };
  const result = new Promise<CheckStatusInfo>((resolve) => {
    // Could not start (no such program, the sandbox is gone): no result, as in Mesos.
    child.once('error', () => {
      ended = true;
      resolve(empty);
    });
    child.once('exit', (code) => {
      ended = true;
      killGroup();
      // Killed by a signal (a timeout included): no exit code, so no result.
      resolve(code !== null ? { type: 'COMMAND', command: { exit_code: code } } : empty);
    });
  });
  // Once the command has exited and been reaped its pid may be reused: the group was killed then.
  return { result, abort: () => void (ended ? undefined : killGroup()) };
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

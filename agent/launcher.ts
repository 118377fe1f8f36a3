/**
 * The agent's side of drydock-launch (agent/launcher.c): where the binary is, starting it in a
 * session of its own, reading the task pid it reports on fd 3 (and, when it cannot record the
 * task's end in its status file, the end itself on the same pipe), reading the status file it
 * leaves, and telling a live launcher from a dead one or from a stranger that reused its pid.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { getPriority } from 'node:os';
import { fileURLToPath } from 'node:url';
import type { Readable } from 'node:stream';
import { parseLauncherReport, type LauncherEnd, type LauncherReport } from './termination.js';

/**
 * The launcher binary. From dist/agent/*.js it sits next to the module; when the agent runs from
 * source under tsx (unit tests), it is the built one in <repo>/dist/agent/.
 */
export function launcherPath(): string {
  const beside = fileURLToPath(new URL('./drydock-launch', import.meta.url));
  if (existsSync(beside)) return beside;
  return fileURLToPath(new URL('../dist/agent/drydock-launch', import.meta.url));
}

/** What to run and where. */
export interface LaunchSpec {
  /** The program, looked up in PATH. */
  program: string;
  /** Its argv, argv[0] included (Mesos' `arguments` for a shell:false command). */
  argv: readonly string[];
  cwd: string;
  env: Record<string, string>;
  stdoutPath: string;
  stderrPath: string;
  statusFile: string;
}

export type LaunchResult =
  | { ok: true; child: ChildProcess; launcherPid: number; startTime: string; taskPid: Promise<number | undefined>; report: () => LauncherReport | undefined; reported: Promise<void>; holdChannel: () => void }
  | { ok: false; error: string };

/** How a launcher stopped being watched: it `exited`, or it was `lost` (no longer this process's to reap; watch it through /proc). */
export type LauncherGone = 'exited' | 'lost';

/**
 * A launcher started (with its task's pid once it reported one), or why not. Once `ended` says
 * 'exited', `report()` is the end the launcher reported because it could not record it in its
 * status file (undefined when it recorded it, or said nothing).
 */
export type Launched =
  | { ok: true; launcherPid: number; startTime: string; taskPid: number | undefined; ended: Promise<LauncherGone>; report: () => LauncherReport | undefined }
  | { ok: false; error: string };

/**
 * Forks a launcher from the agent itself (when there is no launch server): resolves once the
 * launcher reported the task's pid (or closed its pipe without one).
 */
export async function spawnLauncher(spec: LaunchSpec, binary: string = launcherPath()): Promise<Launched> {
  const r = startLauncher(spec, binary);
  if (!r.ok) return r;
  // Ended once it exited and its pipe is read to the end (a report comes before its exit).
  // Once it exited, its channel is held until read to its end: the exit may be seen before the
  // pipe's end, and a process with nothing else to do must not end in between.
  const exited = new Promise<void>((resolve) => r.child.once('exit', () => (r.holdChannel(), resolve())));
  const ended = Promise.all([exited, r.reported]).then((): LauncherGone => 'exited');
  r.child.on('error', () => {});
  const taskPid = await r.taskPid;
  return { ok: true, launcherPid: r.launcherPid, startTime: r.startTime, taskPid, ended, report: r.report };
}

/**
 * The nice value tasks run at: the one the agent was started with, read before the agent
 * raises its own priority (--priority_boost). Launchers get it in DRYDOCK_TASK_NICE, which they
 * apply to the task and keep out of its environment.
 */
export const TASK_NICE = ((): number => {
  try {
    return getPriority();
  } catch {
    return 0;
  }
})();

/** The launcher's environment: `env` and the tasks' nice value. */
export function launcherEnv(env: NodeJS.ProcessEnv | Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined) out[k] = v;
  out['DRYDOCK_TASK_NICE'] = String(TASK_NICE);
  return out;
}

/**
 * Starts drydock-launch detached (own session, so neither a terminal's signals nor systemd's
 * KillMode=process stop of the agent reach it), with the sandbox files as stdout and stderr.
 * `taskPid` resolves with the pid the launcher reports, or undefined if it never does.
 */
export function startLauncher(spec: LaunchSpec, binary: string = launcherPath()): LaunchResult {
  let out: number | undefined;
  let err: number | undefined;
  try {
    out = openSync(spec.stdoutPath, 'a');
    err = openSync(spec.stderrPath, 'a');
    const child = spawn(binary, [spec.statusFile, spec.program, ...spec.argv], {
      cwd: spec.cwd,
      env: launcherEnv(spec.env),
      detached: true,
      stdio: ['ignore', out, err, 'pipe'],
    });
    if (child.pid === undefined) {
      // spawn reports ENOENT/EACCES asynchronously; a missing pid means it failed.
      child.on('error', () => {});
      return { ok: false, error: `cannot start the launcher '${binary}'` };
    }
    const launcherPid = child.pid;
    const channel = readChannel(child.stdio[3] as Readable | null | undefined);
    return { ok: true, child, launcherPid, startTime: procStartTime(launcherPid) ?? '', taskPid: channel.pid, report: channel.report, reported: channel.closed, holdChannel: channel.hold };
  } catch (e) {
    return { ok: false, error: (e as Error).message };
  } finally {
    // The child holds its own copies; the agent must not keep one open per task.
    if (out !== undefined) closeSync(out);
    if (err !== undefined) closeSync(err);
  }
}

/**
 * A launcher's fd 3: its first line is the task's pid; a later `T LAUNCHER_PID JSON` line is the
 * end it could not record. Held open until the launcher closes it, without keeping the agent's
 * process alive.
 */
function readChannel(stream: Readable | null | undefined): { pid: Promise<number | undefined>; report: () => LauncherReport | undefined; closed: Promise<void>; hold: () => void } {
  let report: LauncherReport | undefined;
  if (stream === null || stream === undefined) return { pid: Promise.resolve(undefined), report: () => undefined, closed: Promise.resolve(), hold: () => {} };
  let resolvePid: (pid: number | undefined) => void = () => {};
  const pid = new Promise<number | undefined>((r) => (resolvePid = r));
  const closed = new Promise<void>((resolve) => {
    let buf = '';
    let lines = 0;
    const done = (): void => {
      resolvePid(undefined);
      stream.removeAllListeners('data');
      stream.destroy();
      resolve();
    };
    stream.setEncoding('utf8');
    stream.on('data', (chunk: string) => {
      buf += chunk;
      for (let nl = buf.indexOf('\n'); nl !== -1; nl = buf.indexOf('\n')) {
        const line = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (lines++ === 0) {
          const n = Number(line);
          resolvePid(Number.isInteger(n) && n > 0 ? n : undefined);
        } else if (line.startsWith('T ')) {
          report = parseLauncherReport(line.slice(line.indexOf(' ', 2) + 1));
        }
      }
      // A launcher says two short lines at most: anything longer is not one.
      if (buf.length > 4096) done();
    });
    stream.on('error', done);
    stream.on('end', done);
  });
  const handle = stream as Readable & { unref?: () => void; ref?: () => void };
  handle.unref?.();
  return { pid, report: () => report, closed, hold: () => (stream.destroyed ? undefined : handle.ref?.()) };
}

/** Every process id in /proc (none when /proc cannot be read). */
export function procPids(): number[] {
  let names: string[];
  try {
    names = readdirSync('/proc');
  } catch {
    return [];
  }
  const pids: number[] = [];
  for (const name of names) {
    const pid = Number(name);
    if (Number.isInteger(pid) && pid > 0) pids.push(pid);
  }
  return pids;
}

/** The fields of /proc/<pid>/stat after the command name, or undefined if the process is gone. */
export function procStat(pid: number): string[] | undefined {
  let text: string;
  try {
    text = readFileSync(`/proc/${pid}/stat`, 'latin1');
  } catch {
    return undefined;
  }
  // The command name is in parentheses and may itself contain spaces or ')'.
  const close = text.lastIndexOf(')');
  if (close === -1) return undefined;
  return text.slice(close + 2).trim().split(' ');
}

/**
 * The live launcher of a task, found in /proc: for a task whose launcher was started just
 * before the agent crashed, before its pid was checkpointed. A launcher the agent forked has the
 * task's exit file as its first argument; one the launch server forked has the server's command
 * line, and is known by what it did after the fork: it leads a session of its own and works in
 * the task's sandbox (the task it forks shares that directory but not the session).
 */
export function findLauncher(statusFile: string, sandbox: string): { pid: number; start_time: string } | undefined {
  let cwd = sandbox;
  try {
    cwd = realpathSync(sandbox);
  } catch {
    // Gone: no launcher works in it.
  }
  for (const pid of procPids()) {
    let argv: string[];
    try {
      argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    } catch {
      continue;
    }
    if (!(argv[0] ?? '').endsWith('drydock-launch')) continue;
    if (argv[1] !== statusFile && !(argv[1] === '--serve' && servedLauncherOf(pid, cwd))) continue;
    const start = procStartTime(pid);
    if (start !== undefined && launcherAlive(pid, start)) return { pid, start_time: start };
  }
  return undefined;
}

/** Is `pid` a launcher the server forked for the task of `sandbox`: a session leader working in it? */
function servedLauncherOf(pid: number, sandbox: string): boolean {
  if (procStat(pid)?.[3] !== String(pid)) return false;
  try {
    return readlinkSync(`/proc/${pid}/cwd`) === sandbox;
  } catch {
    return false;
  }
}

/** Start time of a process in clock ticks since boot (field 22), which tells a pid's reuse apart. */
export function procStartTime(pid: number): string | undefined {
  return procStat(pid)?.[19];
}

/**
 * Is this still the launcher we started? Alive, not a zombie (an orphaned launcher whose new
 * parent does not reap it would look alive to kill(0)), and the same start time.
 */
export function launcherAlive(pid: number, startTime: string): boolean {
  const fields = procStat(pid);
  if (fields === undefined) return false;
  if (fields[0] === 'Z' || fields[0] === 'X') return false;
  return startTime === '' || fields[19] === startTime;
}

/**
 * The size of the blank exit file a launcher makes once its task is forked
 * (agent/launcher.c: EXIT_FILE_SIZE), to write the end over it in place, so that making the end
 * durable is a data write alone. Blank, it reads as no end yet.
 */
export const EXIT_FILE_SIZE = 256;

/** Reads the launcher's status file; undefined if it is missing or not what the launcher writes. */
export function readLauncherEnd(statusFile: string): LauncherEnd | undefined {
  let data: unknown;
  try {
    data = JSON.parse(readFileSync(statusFile, 'utf8'));
  } catch {
    return undefined;
  }
  if (typeof data !== 'object' || data === null) return undefined;
  const o = data as Record<string, unknown>;
  if (typeof o['pid'] !== 'number' || typeof o['ended_ms'] !== 'number') return undefined;
  if (typeof o['exit_code'] === 'number') return { pid: o['pid'], exit_code: o['exit_code'], ended_ms: o['ended_ms'] };
  if (typeof o['signal'] === 'number') {
    return { pid: o['pid'], signal: o['signal'], core_dumped: o['core_dumped'] === true, ended_ms: o['ended_ms'] };
  }
  return undefined;
}

/** Sends a signal to a whole process group; false if the group no longer exists. */
export function signalGroup(pgid: number, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false;
  }
}

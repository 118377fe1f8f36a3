/**
 * The agent's launch server: one `drydock-launch --serve` process, started with the agent, that
 * forks a launcher per task on request (protocol in agent/launcher.c). The agent asks instead of
 * forking: a fork copies the forking process's page tables, some 2 ms for an agent of 60 MB and
 * far less for the small server, and the agent's event loop does not stop for it.
 *
 * Launchers started this way are the server's children, so the server reports their ends. If
 * the server goes away, every launcher it started is handed back as `lost`: the supervisor
 * then watches it through /proc, as it watches launchers re-adopted after an agent restart.
 * When the server cannot be started (or restarted) a launch forks the launcher directly.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { LineBuffer } from '../shared/lines.js';
import type { Logger } from '../shared/log.js';
import { launcherEnv, launcherPath, procStartTime, spawnLauncher, type Launched, type LauncherGone, type LaunchSpec } from './launcher.js';
import { parseLauncherReport, type LauncherReport } from './termination.js';

/** Encodes one request: a u32 little-endian length, then NUL-terminated fields. Pure. */
export function encodeLaunchRequest(id: string, spec: LaunchSpec): Buffer {
  const env = Object.entries(spec.env).map(([k, v]) => `${k}=${v}`);
  const fields = [id, spec.statusFile, spec.cwd, spec.stdoutPath, spec.stderrPath, spec.program, String(spec.argv.length), ...spec.argv, String(env.length), ...env];
  const body = Buffer.from(fields.map((f) => `${f}\0`).join(''), 'utf8');
  const head = Buffer.alloc(4);
  head.writeUInt32LE(body.length, 0);
  return Buffer.concat([head, body]);
}

interface Pending {
  resolve: (r: Launched) => void;
  launcherPid: number | undefined;
}

/** A launcher of the current server: how to tell its watcher it ended, and the end it reported (its `T` line), if any. */
interface Live {
  done: (how: LauncherGone) => void;
  report: LauncherReport | undefined;
}

export class LaunchServer {
  readonly #binary: string;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  readonly #lines = new LineBuffer();
  #nextId = 1;
  readonly #pending = new Map<string, Pending>();
  /** Launchers started through the current server, by pid. */
  readonly #live = new Map<number, Live>();
  #closed = false;

  constructor(log: Logger, binary: string = launcherPath()) {
    this.#log = log;
    this.#binary = binary;
  }

  /** Starts the server if it is not running; false if it cannot be started. */
  start(): boolean {
    if (this.#child !== undefined) return true;
    if (this.#closed) return false;
    let child: ChildProcess;
    try {
      child = spawn(this.#binary, ['--serve'], { stdio: ['pipe', 'pipe', 'inherit'], env: launcherEnv(process.env) });
    } catch (e) {
      this.#log.warn('launch server cannot start; launchers are forked by the agent', { error: e as Error });
      return false;
    }
    if (child.pid === undefined) {
      child.on('error', () => {});
      this.#log.warn('launch server cannot start; launchers are forked by the agent', { binary: this.#binary });
      return false;
    }
    this.#child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => this.#onData(chunk));
    child.stdin?.on('error', () => {}); // a server gone shows as its exit
    child.on('error', (e) => this.#log.warn('launch server error', { error: e }));
    child.on('exit', (code, signal) => this.#onExit(child, code, signal));
    // Its stdout at an end, the server is gone or going: held until its exit is seen, which
    // hands its launchers back (else a process with nothing else to do could end first).
    child.stdout?.on('end', () => child.ref());
    // The server keeps the process alive only while it has something to report.
    child.unref();
    for (const s of [child.stdin, child.stdout] as Array<{ unref?: () => void } | null>) s?.unref?.();
    this.#watching();
    this.#log.info('launch server started', { pid: child.pid });
    return true;
  }

  /** Starts a launcher for `spec`: resolves once the task has a pid, or the launch failed. */
  launch(spec: LaunchSpec): Promise<Launched> {
    if (!this.start()) return spawnLauncher(spec, this.#binary);
    const id = String(this.#nextId++);
    return new Promise((resolve) => {
      this.#pending.set(id, { resolve, launcherPid: undefined });
      this.#watching();
      this.#child?.stdin?.write(encodeLaunchRequest(id, spec));
    });
  }

  /** The agent is stopping: the server exits once its stdin closes; launchers and tasks keep running. */
  close(): void {
    this.#closed = true;
    this.#child?.stdin?.end();
  }

  /** Holds the process alive (refs the server's stdout) while a launch or a launcher's end is awaited. */
  #watching(): void {
    const out = this.#child?.stdout as { ref?: () => void; unref?: () => void } | null | undefined;
    if (this.#pending.size > 0 || this.#live.size > 0) out?.ref?.();
    else out?.unref?.();
  }

  #onData(chunk: string): void {
    for (const line of this.#lines.push(chunk)) this.#onReply(line);
    this.#watching();
  }

  #onReply(line: string): void {
    const [kind, a, b, c, d] = line.split(' ');
    switch (kind) {
      case 'S': {
        const p = this.#pending.get(a ?? '');
        if (p !== undefined) p.launcherPid = Number(b);
        return;
      }
      case 'P': {
        const p = this.#pending.get(a ?? '');
        if (p === undefined) return;
        this.#pending.delete(a ?? '');
        const launcherPid = Number(b);
        const taskPid = Number(c);
        const live: Live = { done: () => {}, report: undefined };
        p.resolve({
          ok: true,
          launcherPid,
          // The launcher says its own start time; read here only if it could not.
          startTime: d !== undefined && /^[0-9]+$/.test(d) ? d : (procStartTime(launcherPid) ?? ''),
          taskPid: Number.isInteger(taskPid) && taskPid > 0 ? taskPid : undefined,
          ended: new Promise((done) => {
            live.done = done;
            this.#live.set(launcherPid, live);
          }),
          report: () => live.report,
        });
        return;
      }
      case 'T': {
        // The end a launcher could not record (before its E: it writes this, then exits).
        const live = this.#live.get(Number(a));
        if (live !== undefined) live.report = parseLauncherReport(line.slice(line.indexOf(' ', 2) + 1));
        return;
      }
      case 'F': {
        const p = this.#pending.get(a ?? '');
        if (p === undefined) return;
        this.#pending.delete(a ?? '');
        p.resolve({ ok: false, error: line.split(' ').slice(2).join(' ') });
        return;
      }
      case 'E': {
        const pid = Number(a);
        this.#live.get(pid)?.done('exited');
        this.#live.delete(pid);
        // A launcher that ended before it reported the task (or why not): its launch failed. It
        // reports the task the moment after forking it, so a task left behind is all but impossible.
        for (const [id, p] of this.#pending) {
          if (p.launcherPid !== pid) continue;
          this.#pending.delete(id);
          p.resolve({ ok: false, error: `the launcher ended before it reported the task (wait status ${b ?? '?'})` });
        }
        return;
      }
      default:
        this.#log.warn('launch server said something unexpected', { line: line.slice(0, 200) });
    }
  }

  #onExit(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#child !== child) return;
    this.#child = undefined;
    this.#lines.reset();
    if (!this.#closed) this.#log.warn('launch server exited; its launchers are watched through /proc', { code, signal, launchers: this.#live.size });
    for (const live of this.#live.values()) live.done('lost');
    this.#live.clear();
    // Its launchers hold the reply pipe open until they end (to report an end they could not
    // record): no longer read, so it keeps nothing alive.
    child.stdout?.destroy();
    for (const p of this.#pending.values()) {
      // A launcher forked but not yet heard from runs on, not ours to wait for: watched through /proc.
      if (p.launcherPid !== undefined) {
        p.resolve({ ok: true, launcherPid: p.launcherPid, startTime: procStartTime(p.launcherPid) ?? '', taskPid: undefined, ended: Promise.resolve('lost'), report: () => undefined });
      } else {
        p.resolve({ ok: false, error: 'the launch server exited before starting the launcher' });
      }
    }
    this.#pending.clear();
  }
}

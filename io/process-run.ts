/**
 * One run of a program that Node supervises itself, through execa: the master's maintenance
 * hooks (io/hook-process.ts), the agent's check commands (agent/probes.ts) and the local
 * cluster's daemons (scripts/cluster.ts). Tasks are not run here: they must outlive the agent, so
 * the agent starts them through its C launcher (agent/launcher.c).
 *
 * Every run is in a process group of its own (`detached`), so a stop reaches everything it
 * started: a shell's background child would otherwise keep an output pipe open and the run
 * would never end (execa's own kill signals the process alone). A stop sends its signal to the
 * group (or to the process alone, for a daemon that stops its children itself), then SIGKILL to
 * the whole group once the grace is over; the grace timer runs on the injected clock, and
 * execa's own escalation is set to the same grace for a kill that went through it. A run ends
 * by itself, by `stop()`, or by its timeout; `ended` says which, and never rejects. `exited`
 * comes first, when the process itself is gone: its output may stay open longer, held by a
 * child it left behind (the group's SIGKILL still reaches that child).
 */
import type { Readable } from 'node:stream';
import { execa } from 'execa';
import type { Clock, TimerHandle } from '../shared/clock.js';

/** How a run is stopped. */
export interface StopPolicy {
  /** The first signal; SIGKILL needs no grace after it. */
  readonly signal: NodeJS.Signals;
  /** Where it goes: the whole process group, or the process alone. SIGKILL after the grace always goes to the group. */
  readonly target: 'group' | 'process';
  /** From the first signal to SIGKILL to the group. */
  readonly graceMs: number;
}

/** What to run, and how. */
export interface ProcessRunOptions {
  /** The program and its arguments. */
  readonly argv: readonly string[];
  /** argv[0] as the program sees it; default the program. */
  readonly argv0?: string | undefined;
  /** Environment variables. */
  readonly env: Readonly<Record<string, string>>;
  /** false: `env` is the whole environment; true: added to this process's. */
  readonly extendEnv: boolean;
  /** Working directory; undefined: this process's. */
  readonly cwd: string | undefined;
  /** Run as this uid and gid (only a root process may); undefined: as this process. */
  readonly uid?: number | undefined;
  readonly gid?: number | undefined;
  /** stdout and stderr: not opened, or each chunk as it arrives (both interleaved, in arrival order). stdin is never opened. */
  readonly output: 'ignore' | ((chunk: Buffer) => void);
  /** Stopped (`stoppedBy: 'timeout'`) after this long; undefined: no timeout. */
  readonly timeoutMs?: number | undefined;
  readonly stop: StopPolicy;
  /** Once the program exits, SIGKILL to its group: nothing it left behind outlives it. */
  readonly killGroupOnExit?: boolean | undefined;
  /** The grace ran out and SIGKILL went to the group. */
  readonly onKill?: (() => void) | undefined;
  /** The timers of the timeout and the grace. */
  readonly clock: Clock;
}

/** How a run ended. */
export interface ProcessEnd {
  /** The exit status; null when a signal ended it or it never started. */
  readonly code: number | null;
  /** The signal that ended it, if one did. */
  readonly signal: NodeJS.Signals | null;
  /** What stopped it, if we did. */
  readonly stoppedBy: 'timeout' | 'stop' | undefined;
  /** Why it could not be started (or could not be watched); undefined when it ran. */
  readonly error: string | undefined;
}

/** A run's lifecycle: running (asked to stop or not), exited (its output may still be open), ended (exited and its output closed). */
export type ProcessRunState = 'running' | 'exited' | 'ended';

/** How the process itself ended. */
export interface ProcessExit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
}

/** A program under way. */
export interface ProcessRun {
  /** The process id (also its group's id); undefined when it could not be started (the end says why). */
  readonly pid: number | undefined;
  readonly state: ProcessRunState;
  /** Resolves once the process itself has exited (or could not start); never rejects. */
  readonly exited: Promise<ProcessExit>;
  /** Resolves once the process and its output are done; never rejects. */
  readonly ended: Promise<ProcessEnd>;
  /** The stop policy's signal, then SIGKILL to the group after its grace. Safe to repeat and after the end. */
  stop(): void;
}

/** Starts a run. */
export function runProcess(o: ProcessRunOptions): ProcessRun {
  const [file = '', ...args] = o.argv;
  const output = o.output;
  const child = execa(file, args, {
    env: { ...o.env },
    extendEnv: o.extendEnv,
    ...(o.cwd === undefined ? {} : { cwd: o.cwd }),
    ...(o.argv0 === undefined ? {} : { argv0: o.argv0 }),
    stdin: 'ignore',
    ...(output === 'ignore' ? { stdout: 'ignore', stderr: 'ignore' } : { all: true }),
    buffer: false,
    reject: false,
    // Its own process group, so a stop reaches its children too (see the module comment).
    detached: true,
    // execa's own escalation, for a kill that went through it (below); ours goes to the whole group.
    forceKillAfterDelay: o.stop.signal === 'SIGKILL' || o.stop.graceMs <= 0 ? false : o.stop.graceMs,
    ...(o.uid === undefined ? {} : { uid: o.uid }),
    ...(o.gid === undefined ? {} : { gid: o.gid }),
  });
  const pid = child.pid;
  if (typeof output === 'function') {
    // execa's types tie `all` to the options' literal types; with `all: true` it is the interleaved stream.
    const all = (child as unknown as { all?: Readable }).all;
    all?.on('data', (chunk: Buffer | string) => output(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk));
  }
  let state: ProcessRunState = 'running';
  let stoppedBy: 'timeout' | 'stop' | undefined;
  let escalation: TimerHandle | undefined;
  const send = (signal: NodeJS.Signals, target: 'group' | 'process'): void => {
    // Once it has exited its pid may be another's; its group is there as long as a member is.
    if (pid === undefined || state === 'ended' || (state === 'exited' && target === 'process')) return;
    try {
      process.kill(target === 'group' ? -pid : pid, signal);
    } catch {
      // The group is gone already (or never formed): the process itself, if it is still there.
      try {
        child.kill(signal);
      } catch {
        // gone
      }
    }
  };
  const stop = (why: 'timeout' | 'stop'): void => {
    if (state === 'ended' || stoppedBy !== undefined) return;
    stoppedBy = why;
    send(o.stop.signal, o.stop.target);
    if (o.stop.signal === 'SIGKILL' && o.stop.target === 'group') return;
    escalation = o.clock.setTimer(o.stop.graceMs, () => {
      if (state === 'ended') return;
      // Only the process itself not stopping is news; what it left in its group goes quietly.
      if (state === 'running') o.onKill?.();
      send('SIGKILL', 'group');
    });
  };
  const timer = o.timeoutMs === undefined ? undefined : o.clock.setTimer(o.timeoutMs, () => stop('timeout'));
  const finish = (): void => {
    state = 'ended';
    timer?.cancel();
    escalation?.cancel();
  };
  const exitEvent = new Promise<ProcessExit>((resolve) =>
    child.once('exit', (code, signal) => {
      if (state === 'running') state = 'exited';
      if (o.killGroupOnExit === true && pid !== undefined) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // Nothing was left behind.
        }
      }
      resolve({ code, signal });
    }),
  );
  const ended: Promise<ProcessEnd> = child.then(
    (r): ProcessEnd => {
      finish();
      const startError = r.failed && r.exitCode === undefined && r.signal === undefined;
      return {
        code: r.exitCode ?? null,
        signal: (r.signal as NodeJS.Signals | undefined) ?? null,
        stoppedBy,
        error: startError ? (r.originalMessage ?? r.shortMessage) : undefined,
      };
    },
    (e: unknown): ProcessEnd => {
      // reject: false makes execa resolve; this is for the unforeseen, still an answer.
      finish();
      return { code: null, signal: null, stoppedBy: undefined, error: e instanceof Error ? e.message : String(e) };
    },
  );
  return {
    pid,
    get state() {
      return state;
    },
    // A process that never started has no exit event: its end stands for it.
    exited: Promise.race([exitEvent, ended.then((e): ProcessExit => ({ code: e.code, signal: e.signal }))]),
    ended,
    stop: () => stop('stop'),
  };
}

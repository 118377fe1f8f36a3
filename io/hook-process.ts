/**
 * One run of a command the operator configured (the master's maintenance hooks), through execa:
 * an argv (no shell), exactly the environment given (nothing inherited), working directory `/`,
 * stdin ignored, optionally as another uid/gid (Node's spawn then clears the supplementary
 * groups), in a process group of its own. It ends by itself, or by `stop()` / its timeout:
 * SIGTERM to the whole group, then SIGKILL to the group after `killAfterMs` (a shell's children
 * would otherwise keep the output pipe open and the run would never end). Its output is kept as
 * the last `outputBytes` of stdout and stderr interleaved, in the order they arrived.
 */
import { execa } from 'execa';
import type { Clock, TimerHandle } from '../shared/clock.js';

export interface HookProcessOptions {
  /** The program (absolute path) and its arguments. */
  readonly argv: readonly string[];
  /** The whole environment of the process. */
  readonly env: Readonly<Record<string, string>>;
  /** Run as this uid and gid (only a root process may); undefined: as this process. */
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  /** Stopped (and reported `timed_out`) after this long. */
  readonly timeoutMs: number;
  /** After SIGTERM to the group, SIGKILL to the group this much later. */
  readonly killAfterMs: number;
  /** Bytes of output kept (the tail). */
  readonly outputBytes: number;
  /** The timers of the timeout and the kill escalation. */
  readonly clock: Clock;
}

/** How a run ended. */
export type HookProcessEnd =
  | { readonly status: 'succeeded'; readonly code: 0; readonly signal: null; readonly output: string }
  /** Exited non-zero (`code`), was killed by a signal not sent by us (`signal`), or could not start (`code` and `signal` null; the reason ends the output). */
  | { readonly status: 'failed'; readonly code: number | null; readonly signal: string | null; readonly output: string }
  /** Stopped after its timeout. */
  | { readonly status: 'timed_out'; readonly code: number | null; readonly signal: string | null; readonly output: string }
  /** Stopped by `stop()`. */
  | { readonly status: 'stopped'; readonly code: number | null; readonly signal: string | null; readonly output: string };

export interface HookProcess {
  /** The process id; undefined when it could not be started (the end says why). */
  readonly pid: number | undefined;
  /** Resolves once the process (and its output pipe) is done; never rejects. */
  readonly ended: Promise<HookProcessEnd>;
  /** SIGTERM to its group, then SIGKILL after killAfterMs. Safe to repeat and after the end. */
  stop(): void;
}

/** Starts a run. */
export function startHookProcess(o: HookProcessOptions): HookProcess {
  const [file = '', ...args] = o.argv;
  const child = execa(file, args, {
    env: { ...o.env },
    extendEnv: false,
    cwd: '/',
    stdin: 'ignore',
    all: true,
    buffer: false,
    reject: false,
    // Its own process group, so a stop reaches its children too (see the module comment).
    detached: true,
    // execa's own escalation, for a kill through it; ours goes to the whole group.
    forceKillAfterDelay: o.killAfterMs,
    ...(o.uid === undefined ? {} : { uid: o.uid }),
    ...(o.gid === undefined ? {} : { gid: o.gid }),
  });
  const pid = child.pid;
  let output = Buffer.alloc(0);
  child.all?.on('data', (chunk: Buffer | string) => {
    const b = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    output = Buffer.concat([output, b]);
    if (output.length > o.outputBytes * 2) output = output.subarray(output.length - o.outputBytes);
  });
  let stoppedBy: 'timed_out' | 'stopped' | undefined;
  let escalation: TimerHandle | undefined;
  let done = false;
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (pid === undefined || done) return;
    try {
      process.kill(-pid, signal);
    } catch {
      // The group is gone already (or never formed): the process itself, if it is still there.
      try {
        child.kill(signal);
      } catch {
        // gone
      }
    }
  };
  const stop = (why: 'timed_out' | 'stopped'): void => {
    if (done || stoppedBy !== undefined) return;
    stoppedBy = why;
    signalGroup('SIGTERM');
    escalation = o.clock.setTimer(o.killAfterMs, () => signalGroup('SIGKILL'));
  };
  const timer = o.clock.setTimer(o.timeoutMs, () => stop('timed_out'));
  const ended: Promise<HookProcessEnd> = child.then(
    (r): HookProcessEnd => {
      done = true;
      timer.cancel();
      escalation?.cancel();
      const startError = r.failed && r.exitCode === undefined && r.signal === undefined;
      const text = tail(startError ? Buffer.concat([output, Buffer.from(`${r.originalMessage ?? r.shortMessage}\n`, 'utf8')]) : output, o.outputBytes);
      const code = r.exitCode ?? null;
      const signal = r.signal ?? null;
      if (stoppedBy === 'timed_out') return { status: 'timed_out', code, signal, output: text };
      if (stoppedBy === 'stopped') return { status: 'stopped', code, signal, output: text };
      if (code === 0) return { status: 'succeeded', code: 0, signal: null, output: text };
      return { status: 'failed', code, signal, output: text };
    },
    (e: unknown): HookProcessEnd => {
      // reject: false makes execa resolve; this is for the unforeseen, still an answer.
      done = true;
      timer.cancel();
      escalation?.cancel();
      return { status: 'failed', code: null, signal: null, output: tail(Buffer.concat([output, Buffer.from(`${e instanceof Error ? e.message : String(e)}\n`, 'utf8')]), o.outputBytes) };
    },
  );
  return { pid, ended, stop: () => stop('stopped') };
}

/** The last `bytes` bytes as text, cut at a character boundary (no replacement character at the start). */
function tail(buf: Buffer, bytes: number): string {
  const cut = buf.length <= bytes ? buf : buf.subarray(buf.length - bytes);
  return cut.toString('utf8').replace(/^\uFFFD+/, '');
}

/**
 * One run of a command the operator configured (the master's maintenance hooks), on the one
 * runner of Node-supervised processes (io/process-run.ts, execa): an argv (no shell), exactly the
 * environment given (nothing inherited), working directory `/`, stdin ignored, optionally as
 * another uid/gid (Node's spawn then clears the supplementary groups), in a process group of its
 * own. It ends by itself, or by `stop()` / its timeout: SIGTERM to the whole group, then SIGKILL
 * to the group after `killAfterMs` (a shell's children would otherwise keep the output pipe open
 * and the run would never end). Its output is kept as the last `outputBytes` of stdout and stderr
 * interleaved, in the order they arrived.
 */
import type { Clock } from '../shared/clock.js';
import { runProcess } from './process-run.js';

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
  let output = Buffer.alloc(0);
  const run = runProcess({
    argv: o.argv,
    env: o.env,
    extendEnv: false,
    cwd: '/',
    uid: o.uid,
    gid: o.gid,
    output: (b) => {
      output = Buffer.concat([output, b]);
      if (output.length > o.outputBytes * 2) output = output.subarray(output.length - o.outputBytes);
    },
    timeoutMs: o.timeoutMs,
    stop: { signal: 'SIGTERM', target: 'group', graceMs: o.killAfterMs },
    clock: o.clock,
  });
  const ended = run.ended.then((r): HookProcessEnd => {
    const text = tail(r.error === undefined ? output : Buffer.concat([output, Buffer.from(`${r.error}\n`, 'utf8')]), o.outputBytes);
    const { code, signal } = r;
    if (r.stoppedBy === 'timeout') return { status: 'timed_out', code, signal, output: text };
    if (r.stoppedBy === 'stop') return { status: 'stopped', code, signal, output: text };
    if (code === 0 && r.error === undefined) return { status: 'succeeded', code: 0, signal: null, output: text };
    return { status: 'failed', code, signal, output: text };
  });
  return { pid: run.pid, ended, stop: () => run.stop() };
}

/** The last `bytes` bytes as text, cut at a character boundary (no replacement character at the start). */
function tail(buf: Buffer, bytes: number): string {
  const cut = buf.length <= bytes ? buf : buf.subarray(buf.length - bytes);
  return cut.toString('utf8').replace(/^\uFFFD+/, '');
}

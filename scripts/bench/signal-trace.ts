/**
 * The kernel's own record of when a signal was sent: the `signal:signal_generate` tracepoint,
 * read through tracefs in a trace instance of its own (so nothing else using ftrace on the
 * machine is disturbed) with the `mono` clock, the clock process.hrtime.bigint() reads. It fires
 * inside kill() as the signal is queued to each process, before the target is woken or runs,
 * so it says when a task was signalled, apart from when the machine got round to running it.
 *
 * Needs root and a mounted tracefs; `SignalTrace.start` says why not otherwise, and the
 * benchmark that uses it reports that reason instead of the figure.
 */

import { mkdirSync, readFileSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const TRACEFS = ['/sys/kernel/tracing', '/sys/kernel/debug/tracing'];

/** One signal_generate event: when, which signal, to which process. */
export interface SignalEvent {
  /** CLOCK_MONOTONIC, ns. */
  atNs: bigint;
  sig: number;
  pid: number;
}

/**
 * The signal_generate events in a trace buffer's text. A line reads
 * `  node-1234  [001] d..1.  5678.123456: signal_generate: sig=15 errno=0 code=0 comm=bash pid=4321 grp=1 res=0`;
 * the timestamp is seconds with microseconds. Lines that are not such an event are skipped. Pure.
 */
export function parseSignalTrace(text: string): SignalEvent[] {
  const out: SignalEvent[] = [];
  const re = /\s([0-9]+)\.([0-9]{1,9}):\s+signal_generate:\s.*?\bsig=([0-9]+)\b.*?\spid=([0-9]+)\b/;
  for (const line of text.split('\n')) {
    const m = re.exec(line);
    if (m === null) continue;
    out.push({ atNs: BigInt(m[1]!) * 1_000_000_000n + BigInt(m[2]!.padEnd(9, '0')), sig: Number(m[3]), pid: Number(m[4]) });
  }
  return out;
}

/**
 * For each pid in `pids`, the first event of signal `sig` sent to it at or after `fromNs`, as ns
 * after `fromNs`; pids never signalled are counted in `missing`. Pure.
 */
export function firstSignalled(events: readonly SignalEvent[], pids: readonly number[], sig: number, fromNs: bigint): { afterNs: bigint[]; missing: number } {
  const first = new Map<number, bigint>();
  for (const e of events) {
    if (e.sig !== sig || e.atNs < fromNs) continue;
    const seen = first.get(e.pid);
    if (seen === undefined || e.atNs < seen) first.set(e.pid, e.atNs);
  }
  const afterNs: bigint[] = [];
  let missing = 0;
  for (const pid of pids) {
    const at = first.get(pid);
    if (at === undefined) missing++;
    else afterNs.push(at - fromNs);
  }
  return { afterNs, missing };
}

/** A running trace of signal_generate for one signal number. */
export class SignalTrace {
  readonly #dir: string;

  private constructor(dir: string) {
    this.#dir = dir;
  }

  /** Starts tracing signal `sig` (every process); a string saying why it cannot, otherwise. */
  static start(sig: number): SignalTrace | string {
    const root = TRACEFS.find((d) => {
      try {
        readFileSync(join(d, 'trace_clock'), 'utf8');
        return true;
      } catch {
        return false;
      }
    });
    if (root === undefined) return 'no tracefs mounted (or not readable: the signal trace needs root)';
    const dir = join(root, 'instances', `drydock-bench-${process.pid}`);
    try {
      mkdirSync(dir);
    } catch (e) {
      return `cannot create a trace instance at ${dir}: ${(e as Error).message}`;
    }
    const t = new SignalTrace(dir);
    try {
      writeFileSync(join(dir, 'trace_clock'), 'mono');
      writeFileSync(join(dir, 'events/signal/signal_generate/filter'), `sig == ${sig}`);
      writeFileSync(join(dir, 'events/signal/signal_generate/enable'), '1');
      writeFileSync(join(dir, 'tracing_on'), '1');
    } catch (e) {
      t.close();
      return `cannot enable signal:signal_generate in ${dir}: ${(e as Error).message}`;
    }
    return t;
  }

  /** Stops tracing and returns what was recorded. */
  read(): SignalEvent[] {
    writeFileSync(join(this.#dir, 'tracing_on'), '0');
    return parseSignalTrace(readFileSync(join(this.#dir, 'trace'), 'utf8'));
  }

  /** Removes the trace instance (its buffer goes with it). */
  close(): void {
    try {
      writeFileSync(join(this.#dir, 'events/signal/signal_generate/enable'), '0');
    } catch {
      // Removing the instance below disables it as well.
    }
    try {
      rmdirSync(this.#dir);
    } catch {
      // Already gone.
    }
  }
}

/**
 * The agent's signaller: one `drydock-launch --signal` process (protocol in agent/launcher.c),
 * started with the agent, that sends the signals of its kills from the SCHED_FIFO class. A
 * signal wakes its task, and a woken task takes the CPU from an agent of the normal class
 * between two of its kill(2)s, however far above the tasks its nice value is: on 2 busy cores
 * the 100 SIGTERMs of a drain went out over 20 to 90 ms from the agent, in about 1 ms from a
 * real-time process (the kernel's signal_generate tracepoint).
 *
 * Signals asked for in one turn of the event loop (a drain's, committed together) leave as one
 * line, in the order they were asked, once the turn's synchronous work is done (a microtask).
 * A line the signaller has not confirmed when it goes away is sent again by the agent itself,
 * so no signal is lost (one of that line may then go twice). Without the real-time class (no
 * CAP_SYS_NICE), without the binary, with --priority_boost=0, or once the signaller is gone,
 * the agent signals the groups itself, as before.
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { LineBuffer } from '../shared/lines.js';
import type { Logger } from '../shared/log.js';
import { launcherPath, signalGroup } from './launcher.js';

/** Signals per request line: the signaller's MAX_PAIRS (agent/launcher.c); at most about 49 kB, under its 64 kB line. */
export const MAX_LINE_SIGNALS = 4096;

/** The signals the agent sends to task groups. */
export type KillSignal = 'SIGTERM' | 'SIGKILL';

/** One request line: `SIG PGID` pairs. Pure. */
export function encodeSignalLine(signals: ReadonlyArray<{ pgid: number; signal: KillSignal }>): string {
  return `${signals.map((s) => `${constants.signals[s.signal]} ${s.pgid}`).join(' ')}\n`;
}

export class Signaller {
  readonly #binary: string;
  readonly #log: Logger;
  #child: ChildProcess | undefined;
  /** The signaller said it runs SCHED_FIFO: signals go through it. */
  #realtime = false;
  readonly #lines = new LineBuffer();
  /** Signals asked for in this turn, sent at its end as one line. */
  #queue: Array<{ pgid: number; signal: KillSignal }> = [];
  /** Lines written and not yet confirmed, oldest first. */
  #inFlight: Array<Array<{ pgid: number; signal: KillSignal }>> = [];
  #closed = false;

  constructor(log: Logger, binary: string = launcherPath()) {
    this.#log = log;
    this.#binary = binary;
  }

  /** Starts the signaller; signals go through it once it says it runs real-time. */
  start(): void {
    if (this.#child !== undefined || this.#closed) return;
    let child: ChildProcess;
    try {
      child = spawn(this.#binary, ['--signal'], { stdio: ['pipe', 'pipe', 'inherit'] });
    } catch (e) {
      this.#log.warn('signaller cannot start; the agent sends its signals itself', { error: e as Error });
      return;
    }
    child.on('error', (e) => this.#log.warn('signaller cannot start; the agent sends its signals itself', { error: e }));
    if (child.pid === undefined) return;
    this.#child = child;
    child.stdout?.setEncoding('utf8');
    child.stdout?.on('data', (chunk: string) => {
      for (const line of this.#lines.push(chunk)) this.#onReply(line);
    });
    child.stdin?.on('error', () => {}); // a signaller gone shows as its exit
    // 'close', not 'exit': every reply it wrote has been read by then, so only the lines it
    // really left undone are sent again.
    child.on('close', (code, signal) => this.#gone(child, code, signal));
    // It keeps nothing alive: the agent's own work does.
    child.unref();
    for (const s of [child.stdin, child.stdout] as Array<{ unref?: () => void } | null>) s?.unref?.();
  }

  /** The signaller's pid while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Is it carrying the signals (running SCHED_FIFO)? */
  get realtime(): boolean {
    return this.#realtime;
  }

  /** Sends `signal` to the group `pgid`: through the signaller at the end of this turn, or now. */
  signal(pgid: number, signal: KillSignal): void {
    // Once closed, the signaller's stdin is ended: a signal asked for then (a kill whose
    // checkpoint the agent's last commit made durable) goes from the agent at once.
    if (!this.#realtime || this.#closed) {
      signalGroup(pgid, signal);
      return;
    }
    if (this.#queue.length === 0) queueMicrotask(() => this.#flush());
    this.#queue.push({ pgid, signal });
  }

  /** The agent is stopping: what is queued goes out, then the signaller exits (its stdin closes). */
  close(): void {
    this.#flush();
    this.#closed = true;
    this.#child?.stdin?.end();
  }

  #flush(): void {
    const batch = this.#queue;
    if (batch.length === 0) return;
    this.#queue = [];
    const stdin = this.#child?.stdin;
    if (!this.#realtime || this.#closed || stdin === undefined || stdin === null || stdin.destroyed || stdin.writableEnded) {
      for (const s of batch) signalGroup(s.pgid, s.signal);
      return;
    }
    // A line holds at most MAX_LINE_SIGNALS pairs (the signaller refuses longer ones).
    for (let i = 0; i < batch.length; i += MAX_LINE_SIGNALS) {
      const line = batch.slice(i, i + MAX_LINE_SIGNALS);
      this.#inFlight.push(line);
      stdin.write(encodeSignalLine(line));
    }
  }

  #onReply(line: string): void {
    if (line === 'R fifo') {
      this.#realtime = true;
      this.#log.info('signaller running real-time', { pid: this.#child?.pid });
      return;
    }
    if (line.startsWith('R ')) {
      this.#log.warn('signaller may not run real-time (needs CAP_SYS_NICE); the agent sends its signals itself', { reason: line.slice(2) });
      this.#stop();
      return;
    }
    const batch = this.#inFlight.shift();
    if (line.startsWith('X ')) {
      // Not expected (the agent writes only its tasks' groups, in lines it may hold): the agent
      // sends that line's signals itself, and the warning carries the signaller's reason.
      this.#log.warn('signaller refused a line; the agent sends those signals itself', { problem: line.slice(2), signals: batch?.length ?? 0 });
      for (const s of batch ?? []) signalGroup(s.pgid, s.signal);
    }
  }

  /** Stops using the signaller: signals from now on are the agent's. */
  #stop(): void {
    this.#realtime = false;
    this.#child?.stdin?.end();
  }

  #gone(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (this.#child !== child) return;
    const wasRealtime = this.#realtime;
    this.#realtime = false;
    this.#child = undefined;
    // Lines it may not have carried out: sent again here, in order (what is still queued then
    // goes from the agent too). After close() it read its stdin to the end first: nothing is.
    const unconfirmed = this.#inFlight.splice(0);
    if (!this.#closed) for (const batch of unconfirmed) for (const s of batch) signalGroup(s.pgid, s.signal);
    if (!this.#closed && wasRealtime) {
      this.#log.warn('signaller exited; the agent sends its signals itself', { code, signal, resent: unconfirmed.reduce((n, b) => n + b.length, 0) });
    }
  }
}

/**
 * Who leads, as a master that does not lead knows it (HA), and how fresh that is: the router
 * answers 307 to the leader only while its last read of the election is recent. A master that
 * cannot read etcd for longer than the TTL does not know who leads any more (the leader it
 * last saw may have fenced itself since, as Mesos' detector says "no leader" once its
 * ZooKeeper session is lost): it answers 503 No leader elected until a read names a leader
 * again. `LeaderView` is the pure part (time from the clock given); `ElectionFollower` reads
 * the election on every change of it and at least every `refreshMs`, and feeds the view.
 */

import type { Etcd3, Watcher } from 'etcd3';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import { candidates, electionPrefix } from './leadership.js';
import { addressOf } from './master-info.js';

/** The leader a read of the election named (another master's `host:port`, or none) and when that read began. */
interface Seen {
  at: number;
  leader: string | undefined;
}

/** The last read of the election, and whether it is fresh enough to redirect on. */
export class LeaderView {
  readonly #staleAfterMs: number;
  readonly #clock: Pick<Clock, 'now'>;
  #seen: Seen | undefined;

  /** `staleAfterMs`: the TTL (a leader not renewed within it has lost its lease, or fenced itself). */
  constructor(staleAfterMs: number, clock: Pick<Clock, 'now'>) {
    this.#staleAfterMs = staleAfterMs;
    this.#clock = clock;
  }

  /**
   * A read of the election that began at `startedAt` named `leader` (undefined: no other
   * master leads). A read that began before the one already seen changes nothing: its
   * answer is older.
   */
  read(startedAt: number, leader: string | undefined): void {
    if (this.#seen !== undefined && startedAt < this.#seen.at) return;
    this.#seen = { at: startedAt, leader };
  }

  /** Forgets what was read (this master now leads: it is its own answer). */
  clear(): void {
    this.#seen = undefined;
  }

  /** The leader to send clients to: the last read's, while that read began within the TTL; else none. */
  leader(): string | undefined {
    const s = this.#seen;
    if (s === undefined || this.#clock.now() - s.at > this.#staleAfterMs) return undefined;
    return s.leader;
  }

  /** Milliseconds since the last read began; undefined before the first. */
  age(): number | undefined {
    return this.#seen === undefined ? undefined : this.#clock.now() - this.#seen.at;
  }
}

/** The `host:port` of a MasterInfo's address, as the router redirects to it. */
export function masterAddress(info: Record<string, unknown> | undefined): string | undefined {
  const a = info?.['address'] as { hostname?: string; ip?: string; port?: number } | undefined;
  return a?.port === undefined ? undefined : addressOf({ ...a, port: a.port });
}

export interface ElectionFollowerOptions {
  client: Etcd3;
  prefix: string;
  /** This master's id: its own key is never "another master". */
  selfId: string;
  view: LeaderView;
  /** Read at least this often (the keepalive period, TTL/3), so a reachable etcd keeps the view fresh. */
  refreshMs: number;
  clock: Clock;
  log: Logger;
}

/**
 * Follows the election for a standby: a watch on the election prefix (any change: read
 * again) and a read at least every `refreshMs` (a watch can fall silent; the view must stay
 * fresh). Each read names the leader (the oldest key, unless it is this master's) and the
 * other candidates (GET_MASTER's standbys).
 */
export class ElectionFollower {
  readonly #o: ElectionFollowerOptions;
  #others: Array<Record<string, unknown>> = [];
  #reading: Promise<void> | undefined;
  #again = false;
  #timer: TimerHandle | undefined;
  #watcher: Watcher | undefined;
  #stopped = false;
  #failing = false;

  constructor(o: ElectionFollowerOptions) {
    this.#o = o;
  }

  /** The other masters in the election, as last read. */
  get others(): Array<Record<string, unknown>> {
    return this.#others;
  }

  /**
   * Starts the watch (in the background: with etcd out of reach its creation waits) and the
   * reads; resolves after the first read, successful or not (each read is bounded by the etcd
   * client's deadlines).
   */
  async start(): Promise<void> {
    const { client, prefix, log } = this.#o;
    void client
      .watch()
      .prefix(electionPrefix(prefix))
      .create()
      .then((w) => {
        if (this.#stopped) return void w.cancel().catch(() => undefined);
        this.#watcher = w;
        // Events only: a response without any (a progress answer, etcd-calls.ts) changes nothing.
        w.on('put', () => void this.refresh());
        w.on('delete', () => void this.refresh());
        w.on('connected', () => void this.refresh());
        // etcd3 re-creates the watch by itself; an unhandled 'error' would end the process.
        w.on('error', (e) => log.warn('election watch error', { error: e }));
      })
      // The periodic read still follows the election; the watch only makes it quicker.
      .catch((e: unknown) => log.warn('election watch not created', { error: e }));
    await this.refresh();
  }

  /** Reads the election now (or once more after the read under way). */
  refresh(): Promise<void> {
    if (this.#stopped) return Promise.resolve();
    if (this.#reading !== undefined) {
      this.#again = true;
      return this.#reading;
    }
    this.#timer?.cancel();
    this.#reading = this.#read().finally(() => {
      this.#reading = undefined;
      if (this.#stopped) return;
      if (this.#again) {
        this.#again = false;
        void this.refresh();
        return;
      }
      this.#timer = this.#o.clock.setTimer(this.#o.refreshMs, () => void this.refresh());
    });
    return this.#reading;
  }

  async #read(): Promise<void> {
    const { client, prefix, selfId, view, clock, log } = this.#o;
    const startedAt = clock.now();
    try {
      const all = await candidates(client, prefix);
      const first = all[0];
      view.read(startedAt, first === undefined || first['id'] === selfId ? undefined : masterAddress(first));
      this.#others = all.filter((m) => m['id'] !== selfId);
      if (this.#failing) log.info('election readable again', { leader: view.leader() ?? null });
      this.#failing = false;
    } catch (e) {
      // Said once per outage: the view goes stale by itself (503 after the TTL).
      if (!this.#failing) log.warn('election not readable', { error: e });
      this.#failing = true;
    }
  }

  stop(): void {
    this.#stopped = true;
    this.#timer?.cancel();
    void this.#watcher?.cancel().catch(() => undefined);
  }
}

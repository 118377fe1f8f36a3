/**
 * Leadership: whether this master may run a term. One interface, two implementations: solo
 * (one master with its SQLite file: it wins at start and never loses) and, with HA, etcd
 * (campaign, epoch, self-fencing; reference/etcd.md). The process (main.ts) starts a term
 * when elected and disposes of it when deposed.
 */

import type { Etcd3, Lease, Watcher } from 'etcd3';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';

/** What winning gives a term: its epoch, and (etcd) the election key every registry write is guarded by. */
export interface Win {
  epoch: bigint;
  /** The election key (etcd); absent for solo. */
  key?: string;
}

export interface Leadership {
  /** Resolves when this master leads, with the term's epoch (1 for solo; etcd: the election key's create_revision). */
  campaign(): Promise<Win>;
  /** Calls `fn` once when leadership is lost (never for solo). */
  onLost(fn: (reason: string) => void): void;
  /** Gives leadership up (SIGTERM on a leader), so a standby can take over at once. */
  resign(): Promise<void>;
}

/** One master, no election: it leads from its start until it stops. */
export class SoloLeadership implements Leadership {
  campaign(): Promise<Win> {
    return Promise.resolve({ epoch: 1n });
  }

  onLost(_fn: (reason: string) => void): void {
    // Nothing to lose.
  }

  resign(): Promise<void> {
    return Promise.resolve();
  }
}

/** Where the election lives under a cluster's prefix (reference/etcd.md §6.2). */
export function electionPrefix(clusterPrefix: string): string {
  return `${clusterPrefix.replace(/\/+$/, '')}/election/master/`;
}

/** Every candidate's MasterInfo, oldest (the leader) first. */
export async function candidates(client: Etcd3, clusterPrefix: string): Promise<Array<Record<string, unknown>>> {
  const r = await client.getAll().prefix(electionPrefix(clusterPrefix)).sort('Create', 'Ascend').exec();
  return r.kvs.map((kv) => JSON.parse(kv.value.toString('utf8')) as Record<string, unknown>);
}

/** The leader as the election says it: its MasterInfo JSON and epoch; undefined when none. */
export async function currentLeader(client: Etcd3, clusterPrefix: string): Promise<{ info: Record<string, unknown>; epoch: bigint } | undefined> {
  const r = await client.getAll().prefix(electionPrefix(clusterPrefix)).sort('Create', 'Ascend').limit(1).exec();
  const kv = r.kvs[0];
  if (kv === undefined) return undefined;
  return { info: JSON.parse(kv.value.toString('utf8')) as Record<string, unknown>, epoch: BigInt(kv.create_revision) };
}

export interface EtcdLeadershipOptions {
  client: Etcd3;
  /** The cluster's key prefix (`/drydock`). */
  prefix: string;
  /** This master's MasterInfo, the value of its election key (what detectors read). */
  info: Record<string, unknown>;
  /** --etcd_ttl in seconds (whole: etcd leases are). */
  ttlSeconds: number;
  clock: Clock;
  log: Logger;
  /**
   * How often a candidate reads the election whatever its watch says (default: a third of
   * the TTL, the keepalive period).
   */
  recheckMs?: number;
}

/**
 * Leadership through etcd, the v3 recipe of reference/etcd.md §1 and §3.4 on the etcd3
 * client's primitives (not its Election, which can report phantom leadership): a lease, a key
 * `<prefix>/election/master/<lease hex>` holding this master's MasterInfo, created only if
 * absent; the oldest key leads, and its create_revision is the epoch. A candidate waits
 * until no older key is left, reading the election on every change of it and at least every
 * third of a TTL (a watch on a member cut off from its quorum can stay silent); it gives up,
 * revoking its lease, when its own key is gone (its lease expired: a standby whose keepalives
 * did not reach the quorum during a split), and campaigns again. Once first it verifies its
 * own key with a guarded transaction before acting (rule 6).
 *
 * While leading it fences itself (rule 3): every acknowledged keepalive moves a local
 * deadline to (when it was sent) + TTL - margin, and missing that deadline, the lease's loss,
 * or the deletion of its key ends leadership at once. The registry's writes are guarded by
 * the key and epoch as well (registry/etcd.ts), so a paused leader that resumes cannot write.
 */
export class EtcdLeadership implements Leadership {
  readonly #o: EtcdLeadershipOptions;
  #lease: Lease | undefined;
  #key: string | undefined;
  #lostHandlers: Array<(reason: string) => void> = [];
  #fence: TimerHandle | undefined;
  #leading = false;
  #stopWatch: (() => void) | undefined;

  constructor(o: EtcdLeadershipOptions) {
    this.#o = o;
  }

  get #recheckMs(): number {
    return this.#o.recheckMs ?? Math.max(100, (this.#o.ttlSeconds * 1000) / 3);
  }

  async campaign(): Promise<Win> {
    const { client, clock, log } = this.#o;
    const ttlMs = this.#o.ttlSeconds * 1000;
    // Fence a little before etcd would expire the lease: a third of a TTL, at most 1 s.
    const marginMs = Math.min(1000, ttlMs / 3);
    const lease = client.lease(this.#o.ttlSeconds);
    this.#lease = lease;
    let validUntil = clock.now() + ttlMs - marginMs;
    let sentAt = clock.now();
    lease.on('keepaliveFired', () => (sentAt = clock.now()));
    lease.on('keepaliveSucceeded', () => (validUntil = sentAt + ttlMs - marginMs));
    lease.on('lost', (e) => this.#lose(`lease lost: ${e.message}`));
    let id: bigint;
    try {
      id = BigInt(await lease.grant());
    } catch (e) {
      this.#abandon(lease);
      throw e;
    }
    const key = `${electionPrefix(this.#o.prefix)}${id.toString(16)}`;
    this.#key = key;
    let epoch: bigint;
    let verifiedAt: bigint;
    try {
      const value = JSON.stringify(this.#o.info);
      const created = await client.if(key, 'Create', '==', 0).then(client.put(key).value(value).lease(id.toString())).else(client.get(key)).commit();
      epoch = created.succeeded ? BigInt(created.header.revision) : BigInt(created.responses[0]?.response_range?.kvs?.[0]?.create_revision ?? 0);
      log.info('campaigning', { key, epoch });
      await this.#waitForTurn(lease, key, epoch);
      // Rule 6: before acting, the key is still mine with my epoch (and so my lease is alive).
      const verified = await client.if(key, 'Create', '==', Number(epoch)).then(client.get(key)).commit();
      if (!verified.succeeded) throw new Error('elected without an election key: the lease expired while campaigning');
      verifiedAt = BigInt(verified.header.revision);
    } catch (e) {
      // Never leave a key behind that would stand in the queue for a campaign that gave up.
      this.#abandon(lease);
      throw e;
    }
    this.#leading = true;
    validUntil = Math.max(validUntil, clock.now() + marginMs);
    const check = (): void => {
      if (!this.#leading) return;
      if (clock.now() > validUntil) return this.#lose(`no keepalive acknowledged for ${ttlMs - marginMs} ms`);
      this.#fence = clock.setTimer(Math.max(50, Math.min(250, ttlMs / 10)), check);
    };
    check();
    // From the revision the key was verified at: a deletion in between is not missed.
    this.#stopWatch = this.#onDelete(key, verifiedAt + 1n, () => this.#lose('election key deleted'));
    log.info('elected', { key, epoch });
    return { epoch, key };
  }

  /**
   * Waits until no key older than mine is left. The election is read again on any change of
   * it (a watch on the prefix) and at least every `recheckMs` whatever the watch says (a
   * watch stream on a member cut off from its quorum can stay open and silent), so a
   * predecessor's deletion is seen within that bound. Throws when my own key is gone (my
   * lease expired: during a split, the keepalives of a standby may not have reached the
   * quorum) or my lease is lost: the caller campaigns again with a new lease.
   */
  async #waitForTurn(lease: Lease, key: string, epoch: bigint): Promise<void> {
    const { client, clock, log } = this.#o;
    const prefix = electionPrefix(this.#o.prefix);
    let wake: () => void = () => undefined;
    let lost: string | undefined;
    const onLost = (e: Error): void => {
      lost = `lease lost while campaigning: ${e.message}`;
      wake();
    };
    lease.on('lost', onLost);
    let watcher: Watcher | undefined;
    let done = false;
    // In the background: its creation waits for a member that answers, and the reads below do not need it.
    void client
      .watch()
      .prefix(prefix)
      .create()
      .then((w) => {
        if (done) return void w.cancel().catch(() => undefined);
        watcher = w;
        // Events only: a response without any (a progress answer, etcd-calls.ts) changes nothing.
        w.on('put', () => wake());
        w.on('delete', () => wake());
        w.on('connected', () => wake());
        w.on('error', (e) => log.warn('election watch error', { key, error: e }));
        wake();
      })
      .catch((e: unknown) => log.warn('election watch not created: reading the election every recheck', { key, error: e }));
    try {
      for (;;) {
        if (lost !== undefined) throw new Error(lost);
        let all: Array<{ key: string; createRevision: bigint }> | undefined;
        try {
          const r = await client.getAll().prefix(prefix).sort('Create', 'Ascend').exec();
          all = r.kvs.map((kv) => ({ key: kv.key.toString('utf8'), createRevision: BigInt(kv.create_revision) }));
        } catch (e) {
          // Every member failed this read: the key and the lease may well be fine; look again.
          log.warn('election not readable while campaigning', { key, error: e });
        }
        if (all !== undefined) {
          const mine = all.find((k) => k.key === key);
          if (mine === undefined || mine.createRevision !== epoch) throw new Error('election key gone while campaigning: the lease expired');
          if (!all.some((k) => k.createRevision < epoch)) return;
        }
        await new Promise<void>((resolve) => {
          const timer = clock.setTimer(this.#recheckMs, () => resolve());
          wake = () => {
            timer.cancel();
            resolve();
          };
        });
      }
    } finally {
      done = true;
      lease.off('lost', onLost);
      // Not awaited: cancelling a watch on a silent stream waits for an answer that may never come.
      void watcher?.cancel().catch(() => undefined);
    }
  }

  /**
   * Revokes a campaign's lease without waiting, which deletes its key: a campaign that gave up
   * must not stand in the queue. When etcd cannot be told, the lease is released (no more
   * keepalives) and expires with its key.
   */
  #abandon(lease: Lease): void {
    if (this.#lease === lease) this.#lease = undefined;
    void lease.revoke().catch(() => lease.release());
  }

  onLost(fn: (reason: string) => void): void {
    this.#lostHandlers.push(fn);
  }

  /** Deletes the election key (if still this term's) and revokes the lease: a standby takes over at once. */
  async resign(): Promise<void> {
    const wasLeading = this.#leading;
    this.#leading = false;
    this.#fence?.cancel();
    this.#stopWatch?.();
    const lease = this.#lease;
    this.#lease = undefined;
    try {
      if (this.#key !== undefined) await this.#o.client.delete().key(this.#key).exec();
      await lease?.revoke();
    } catch (e) {
      this.#o.log.warn('resign incomplete', { error: e, wasLeading });
    }
  }

  #lose(reason: string): void {
    if (!this.#leading) return;
    this.#leading = false;
    this.#fence?.cancel();
    this.#stopWatch?.();
    // Never keep a lease alive for a term that has ended: let it expire (or it is gone already).
    this.#lease?.release();
    this.#o.log.error('leadership lost', { reason, key: this.#key });
    for (const fn of this.#lostHandlers) fn(reason);
  }

  /**
   * Calls `fn` once when `key` is deleted at or after `fromRevision`; returns the stop function
   * at once (the watch is created in the background: the leader's own fence does not wait for it).
   */
  #onDelete(key: string, fromRevision: bigint, fn: () => void): () => void {
    let done = false;
    let watcher: Watcher | undefined;
    const stop = (): void => {
      if (done) return;
      done = true;
      void watcher?.cancel().catch(() => undefined);
    };
    void this.#o.client
      .watch()
      .key(key)
      .startRevision(fromRevision.toString())
      .create()
      .then((w) => {
        watcher = w;
        if (done) return void w.cancel().catch(() => undefined);
        w.on('delete', () => {
          if (done) return;
          stop();
          fn();
        });
        // The client reconnects watches by itself; an unhandled 'error' would end the process.
        w.on('error', (e) => this.#o.log.warn('election watch error', { key, error: e }));
      })
      .catch((e: unknown) => this.#o.log.warn('election key watch not created', { key, error: e }));
    return stop;
  }
}

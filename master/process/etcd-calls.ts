/**
 * How the master's etcd calls behave when a member cannot serve them: an etcd member cut off
 * from its quorum holds a linearizable read or a write until etcd's own request timeout (7 s
 * with the default raft timings), answers nothing at all when the network drops its packets,
 * and keeps a watch stream open and silent. The master's one etcd client (leadership, the
 * registry, the standby's view of the election) therefore gets, through options of the etcd3
 * client and a gRPC interceptor:
 *
 * - **require-leader**: every call and stream carries etcd's `hasleader: true` metadata
 *   (`MetadataRequireLeaderKey`), so a member that has lost its leader fails it at once with
 *   `etcdserver: no leader` (gRPC Unavailable) instead of holding it, and cancels such streams
 *   after three election timeouts without a leader;
 * - **a deadline on every call**, derived from --etcd_ttl (`etcdCallLimits`): reads and other
 *   calls that are safe to repeat TTL/3 (at least 500 ms), writes the TTL. A read past its
 *   deadline is reported as Unavailable, so that it is retried; a write past it is not (it may
 *   have been applied) and fails to its caller;
 * - **another member for the next attempt**: a member that failed a call (Unavailable, a
 *   deadline, a silent stream) is skipped, as long as another member is not, until a probe of
 *   its own (a linearizable read, every read deadline) finds it serving again; a call that
 *   failed that way is retried (etcd3 tries the members of one call in a shuffled order: each
 *   attempt goes to another member), with a short pause once every member failed;
 * - **silent streams noticed**: a watch stream that has been quiet for the read deadline is
 *   sent a progress request (etcd answers it at once, with watch id -1, which the interceptor
 *   hands on to etcd3 as a no-op for a watcher it knows: `StreamWatchers`); no answer within
 *   the read deadline cancels the stream as Unavailable, and etcd3 re-creates it (on another
 *   member: the failed one is skipped). A lease keepalive unanswered for the read deadline
 *   cancels its stream alike, and etcd3 re-opens it 100 ms later.
 *
 * etcd3 1.1.2 (on @grpc/grpc-js) is configured, not patched: `defaultCallOptions` gives each
 * call its deadline and the interceptor, `faultHandling` the member policy, the retry and a
 * watch backoff capped at half a read deadline (etcd3's own grows to 30 s).
 */

import { InterceptingCall, status as GrpcStatus, type CallOptions, type Interceptor, type InterceptorOptions, type StatusObject } from '@grpc/grpc-js';
import { Etcd3, GRPCDeadlineExceededError, GRPCUnavailableError, isRecoverableError, type CallContext, type IOptions } from 'etcd3';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';

/** etcd's require-leader metadata (rpctypes.MetadataRequireLeaderKey / MetadataHasLeader). */
export const REQUIRE_LEADER_KEY = 'hasleader';
export const REQUIRE_LEADER_VALUE = 'true';

/** The time limits of the master's etcd calls, all from --etcd_ttl. */
export interface EtcdCallLimits {
  /** Deadline of a read (and of any call safe to repeat), and the silence after which a watch is probed and a probe given up. */
  readonly readMs: number;
  /** Deadline of a write. */
  readonly writeMs: number;
  /** How often a member that failed is probed (it is skipped until a probe succeeds, while another member has not failed). */
  readonly probeEveryMs: number;
  /** How long a call that keeps failing on every member is retried before its error is returned. */
  readonly retryForMs: number;
}

/**
 * The limits for a lease TTL. Pure. A read gets a third of the TTL (at least 500 ms, at most
 * 5 s): the keepalive period, so a standby can try two members within the time a leader
 * fences itself in. A write gets the TTL (at least 1 s, at most 7 s, etcd's own request
 * timeout with its default raft timings): a guarded write held longer than that outlives
 * the lease that guards it.
 */
export function etcdCallLimits(ttlMs: number): EtcdCallLimits {
  const readMs = Math.round(Math.min(5_000, Math.max(500, ttlMs / 3)));
  const writeMs = Math.round(Math.min(7_000, Math.max(1_000, ttlMs)));
  return Object.freeze({ readMs, writeMs, probeEveryMs: readMs, retryForMs: writeMs });
}

/** How a call may be treated: repeated after a deadline, or not; streams have no deadline. */
export type CallClass = 'repeatable' | 'write' | 'stream';

/** Unary calls that change nothing, or whose repetition is harmless (a second lease granted expires unused). */
const REPEATABLE = new Set(['KV.range', 'Lease.leaseGrant', 'Lease.leaseRevoke', 'Lease.leaseTimeToLive', 'Lease.leaseLeases', 'Cluster.memberList', 'Maintenance.status', 'Auth.authenticate']);

interface TxnLike {
  success?: ReadonlyArray<OpLike> | undefined;
  failure?: ReadonlyArray<OpLike> | undefined;
}
interface OpLike {
  request_range?: unknown;
  request_put?: unknown;
  request_delete_range?: unknown;
  request_txn?: TxnLike | undefined;
}

/** Does a transaction only read (its compares aside)? Pure. */
export function readOnlyTxn(txn: TxnLike | undefined): boolean {
  const ops = [...(txn?.success ?? []), ...(txn?.failure ?? [])];
  return ops.every((op) => op.request_put === undefined && op.request_delete_range === undefined && (op.request_txn === undefined || readOnlyTxn(op.request_txn)));
}

/** The class of an etcd3 call, from its context (service, method, stream, request). Pure. */
export function classifyCall(c: { service: string; method: string; isStream: boolean; params?: unknown }): CallClass {
  if (c.isStream) return 'stream';
  if (REPEATABLE.has(`${c.service}.${c.method}`)) return 'repeatable';
  if (c.service === 'KV' && c.method === 'txn' && readOnlyTxn(c.params as TxnLike | undefined)) return 'repeatable';
  return 'write';
}

/** The fields of an etcd watch response this file reads. */
export interface WatchResponseLike {
  watch_id?: unknown;
  created?: unknown;
  canceled?: unknown;
  events?: unknown;
  header?: { revision?: unknown } | null;
}

/**
 * Is a watch response the answer to a progress request (watch id -1, neither a creation nor a
 * cancellation, no events)? Pure.
 */
export function isProgressAnswer(res: WatchResponseLike | null | undefined): boolean {
  if (res === null || typeof res !== 'object') return false;
  return String(res.watch_id) === '-1' && res.created !== true && res.canceled !== true && (!Array.isArray(res.events) || res.events.length === 0);
}

/**
 * The watchers of one watch stream, as its responses tell (created, cancelled), each with the
 * revision of the last response it was given. etcd3 throws on a response for a watcher it does
 * not know (the answer to a progress request names watcher -1), and a response cannot be kept
 * from it without stalling the stream (gRPC reads the next message once this one is taken),
 * so the answer is handed on as what etcd3 takes as a no-op: a response with no events for a
 * watcher it knows, at the revision that watcher already has (etcd 3.4 answers a progress
 * request with the store's revision even for a watcher still catching up, so that revision
 * must not reach the watcher: a re-created watch would resume after events never delivered).
 * Pure.
 */
export class StreamWatchers {
  readonly #last = new Map<string, string>();

  get size(): number {
    return this.#last.size;
  }

  /** Takes in a response on its way to etcd3 and returns what etcd3 is given. */
  pass(res: WatchResponseLike): WatchResponseLike {
    const id = String(res.watch_id);
    const revision = String(res.header?.revision ?? '0');
    if (isProgressAnswer(res)) {
      const first = this.#last.entries().next();
      if (first.done === true) return res;
      const [watcher, last] = first.value;
      return { ...res, watch_id: watcher, header: { ...res.header, revision: last } };
    }
    if (res.canceled === true) this.#last.delete(id);
    else if (res.created === true || this.#last.has(id)) this.#last.set(id, revision);
    return res;
  }
}

/**
 * Does an error say the member could not serve the call, so that another member should be
 * tried next: Unavailable (no leader, not reachable, a read past its deadline, a silent
 * stream) or a deadline. Not the other errors etcd3 calls recoverable (a cancelled stream is
 * most often etcd3's own doing).
 */
export function memberFailure(e: unknown): boolean {
  return e instanceof GRPCUnavailableError || e instanceof GRPCDeadlineExceededError;
}

/**
 * Is a failed call tried again: what etcd3 retries by default (Unavailable, and the other
 * errors it calls recoverable), except a deadline, which only a write still reports (a read's
 * is Unavailable by then): the write may have been applied.
 */
export function retryable(e: unknown): boolean {
  return e instanceof Error && isRecoverableError(e) && !(e instanceof GRPCDeadlineExceededError);
}

/**
 * Which members failed. A member that failed is skipped by every call, as long as another
 * member has not failed, until a probe of its own (`due`: every `probeEveryMs`) or a call
 * made while every member had failed succeeds on it. Real calls are not how a member comes
 * back: a member cut off for the length of a split would otherwise take one call in three
 * back at the end of each skip and hold it until its deadline, and that call could be the one
 * a failover waits on. Time from the clock given.
 */
export class MemberHealth {
  /** Failed members, and when each is probed next. */
  readonly #failed = new Map<string, number>();
  readonly #members: readonly string[];
  readonly #probeEveryMs: number;
  readonly #clock: Pick<Clock, 'now'>;

  constructor(members: readonly string[], probeEveryMs: number, clock: Pick<Clock, 'now'>) {
    this.#members = members;
    this.#probeEveryMs = probeEveryMs;
    this.#clock = clock;
  }

  failed(member: string): void {
    this.#failed.set(member, this.#clock.now() + this.#probeEveryMs);
  }

  succeeded(member: string): void {
    this.#failed.delete(member);
  }

  /** Should a call skip `member` now? While it is failed and another member is not. */
  skip(member: string): boolean {
    return this.#failed.has(member) && this.#members.some((m) => m !== member && !this.#failed.has(m));
  }

  /** Has every member failed? */
  allFailed(): boolean {
    return this.#members.every((m) => this.#failed.has(m));
  }

  /** The failed members to probe now; each is due again `probeEveryMs` later unless it comes back. */
  due(): string[] {
    const now = this.#clock.now();
    const out: string[] = [];
    for (const [m, at] of this.#failed) {
      if (at > now) continue;
      this.#failed.set(m, now + this.#probeEveryMs);
      out.push(m);
    }
    return out;
  }
}

type FaultHandling = NonNullable<IOptions['faultHandling']>;
type HostPolicy = ReturnType<NonNullable<FaultHandling['host']>>;
type GlobalPolicy = NonNullable<FaultHandling['global']>;
type WatchBackoff = NonNullable<FaultHandling['watchBackoff']>;

/** The error a skipped member answers with, without being called: etcd3 then tries the next member. */
export class MemberSkippedError extends Error {
  constructor(member: string) {
    super(`etcd member ${member} failed lately: another member is tried`);
    this.name = 'MemberSkippedError';
  }
}

const noEvent = (): { dispose(): void } => ({ dispose: () => undefined });

/** A policy that only calls through: a probe goes to its one member, once. */
const passThrough = policyOf(async (fn) => fn({ signal: new AbortController().signal }));

/** A policy object as etcd3 (cockatiel) calls it: only `execute` is used. */
function policyOf(execute: <T>(fn: (context: { signal: AbortSignal }) => PromiseLike<T> | T) => Promise<T>): HostPolicy & GlobalPolicy {
  return { _altReturn: undefined as never, onSuccess: noEvent, onFailure: noEvent, execute } as unknown as HostPolicy & GlobalPolicy;
}

/** Backoff of etcd3's watch reconnects: 50 ms doubling to at most `capMs` (half a read deadline; etcd3's own goes up to 30 s). */
function watchBackoff(capMs: number, n = 0): WatchBackoff {
  return { duration: Math.min(capMs, 50 * 2 ** n), next: () => watchBackoff(capMs, n + 1) } as WatchBackoff;
}

/** One open stream the monitor looks after. */
interface TrackedStream {
  readonly kind: 'watch' | 'keepalive';
  readonly call: InterceptingCall;
  lastReceived: number;
  /** Since when an answer is awaited: a watch's creation or progress request, the oldest unanswered keepalive. */
  waitingSince: number | undefined;
  /** A watch stream's watchers (a progress request is sent only while it has one). */
  readonly watchers: StreamWatchers;
}

/**
 * The options that make the etcd3 client behave as this file's header says, added to `base`
 * (endpoints, TLS, user). `stop()` ends the stream monitor's timer (with the client's close).
 */
export function resilientEtcdOptions(base: IOptions, limits: EtcdCallLimits, clock: Clock, log: Logger, probeKey: string): { options: IOptions; stop: () => void } {
  const hosts = typeof base.hosts === 'string' ? [base.hosts] : [...base.hosts];
  const health = new MemberHealth(hosts, limits.probeEveryMs, clock);
  // One client per member for the probes, calling that member alone: a linearizable read
  // (which a member without quorum cannot answer) of `probeKey`, require-leader and the read
  // deadline; any answer but Unavailable or a deadline (a permission refused too) is a member
  // that serves.
  const probes = new Map(
    hosts.map((h) => [
      h,
      new Etcd3({
        ...base,
        hosts: [h],
        defaultCallOptions: () => ({ deadline: clock.now() + limits.readMs, interceptors: [interceptorFor('repeatable', limits.readMs)] }),
        faultHandling: { host: () => passThrough, global: passThrough },
      }),
    ]),
  );
  const probing = new Set<string>();
  const probe = (member: string): void => {
    const client = probes.get(member);
    if (client === undefined || probing.has(member)) return;
    probing.add(member);
    void client
      .get(probeKey)
      .exec()
      .then(
        () => health.succeeded(member),
        (e: unknown) => (memberFailure(e) ? health.failed(member) : health.succeeded(member)),
      )
      .finally(() => probing.delete(member));
  };
  const streams = new Set<TrackedStream>();

  const interceptorFor =
    (cls: CallClass, deadlineMs: number): Interceptor =>
    (options: InterceptorOptions, nextCall) => {
      const path = options.method_definition.path;
      let tracked: TrackedStream | undefined;
      const call: InterceptingCall = new InterceptingCall(nextCall(options), {
        start(metadata, _listener, next) {
          // A copy: etcd3 hands every call the same Metadata (its auth token).
          const md = metadata.clone();
          md.set(REQUIRE_LEADER_KEY, REQUIRE_LEADER_VALUE);
          next(md, {
            onReceiveMessage(message: unknown, nextMessage) {
              if (tracked === undefined) return nextMessage(message);
              tracked.lastReceived = clock.now();
              tracked.waitingSince = undefined;
              // Every message goes on (gRPC reads the next one only then); our probe's answer as a no-op.
              nextMessage(tracked.kind === 'watch' ? tracked.watchers.pass(message as WatchResponseLike) : message);
            },
            onReceiveStatus(s: StatusObject, nextStatus) {
              if (tracked !== undefined) streams.delete(tracked);
              if (s.code === GrpcStatus.DEADLINE_EXCEEDED && cls === 'repeatable') {
                // Unavailable is what etcd3 retries on another member: a read held by a member without quorum.
                nextStatus({ ...s, code: GrpcStatus.UNAVAILABLE, details: `etcd ${path} got no answer within ${deadlineMs} ms (${s.details})` });
                return;
              }
              nextStatus(s);
            },
          });
        },
        sendMessage(message: unknown, next) {
          if (tracked?.kind === 'keepalive' && tracked.waitingSince === undefined) tracked.waitingSince = clock.now();
          next(message);
        },
      });
      if (path.endsWith('/Watch') || path.endsWith('/LeaseKeepAlive')) {
        const kind = path.endsWith('/Watch') ? 'watch' : 'keepalive';
        // A new watch stream waits for the answer to its first request (etcd3 sends the watchers' creations at once).
        tracked = { kind, call, lastReceived: clock.now(), waitingSince: kind === 'watch' ? clock.now() : undefined, watchers: new StreamWatchers() };
        streams.add(tracked);
      }
      return call;
    };

  // One timer for the client: probes failed members, probes quiet watches, cancels silent streams.
  let timer: TimerHandle | undefined;
  let stopped = false;
  const tickMs = Math.max(100, Math.round(limits.readMs / 4));
  const tick = (): void => {
    if (stopped) return;
    for (const m of health.due()) probe(m);
    const now = clock.now();
    for (const s of streams) {
      if (s.waitingSince !== undefined && now - s.waitingSince > limits.readMs) {
        streams.delete(s);
        const what = s.kind === 'watch' ? 'watch stream: no answer to a progress request' : 'lease keepalive stream: a keepalive unanswered';
        log.warn('etcd stream silent: re-created on another member', { stream: s.kind, silentMs: now - s.lastReceived });
        s.call.cancelWithStatus(GrpcStatus.UNAVAILABLE, `etcd ${what} within ${limits.readMs} ms`);
      } else if (s.kind === 'watch' && s.waitingSince === undefined && s.watchers.size > 0 && now - s.lastReceived >= limits.readMs) {
        s.waitingSince = now;
        s.call.sendMessage({ progress_request: {} });
      }
    }
    timer = clock.setTimer(tickMs, tick);
  };
  timer = clock.setTimer(tickMs, tick);

  const defaultCallOptions = (c: CallContext): CallOptions => {
    const cls = classifyCall(c as { service: string; method: string; isStream: boolean; params?: unknown });
    if (cls === 'stream') return { interceptors: [interceptorFor(cls, 0)] };
    const ms = cls === 'repeatable' ? limits.readMs : limits.writeMs;
    return { deadline: clock.now() + ms, interceptors: [interceptorFor(cls, ms)] };
  };

  const host = (member: string): HostPolicy =>
    policyOf(async (fn) => {
      if (health.skip(member)) throw new MemberSkippedError(member);
      try {
        const v = await fn({ signal: new AbortController().signal });
        health.succeeded(member);
        return v;
      } catch (e) {
        if (memberFailure(e)) health.failed(member);
        throw e;
      }
    });

  // Retries what a member could not serve, each attempt on another member (etcd3's shuffle,
  // skipping those that failed), pausing once every member failed, for at most retryForMs.
  const global = policyOf(async (fn) => {
    const started = clock.now();
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn({ signal: new AbortController().signal });
      } catch (e) {
        // A skipped member only ever says "ask another": when etcd3's draw for one attempt held only skipped ones.
        if (!(retryable(e) || e instanceof MemberSkippedError) || clock.now() - started > limits.retryForMs) throw e;
        log.debug('etcd call tried again', { attempt, afterMs: clock.now() - started, error: (e as Error).message });
        if (attempt >= hosts.length || health.allFailed()) await new Promise<void>((r) => clock.setTimer(Math.min(500, 50 * 2 ** Math.min(4, attempt - 1)), r));
      }
    }
  });

  const options: IOptions = {
    ...base,
    defaultCallOptions,
    faultHandling: { host, global, watchBackoff: watchBackoff(Math.max(100, limits.readMs / 2)) },
  };
  return {
    options,
    stop: () => {
      stopped = true;
      timer?.cancel();
      for (const c of probes.values()) c.close();
    },
  };
}

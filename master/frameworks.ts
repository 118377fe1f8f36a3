/**
 * The framework table: every framework the master knows, its lifecycle, failover deadline,
 * offer filters and suppression. A pure core: no streams, no timers, no registry; the shell
 * (schedulers.ts) asks it what a SUBSCRIBE or a closed stream means, makes the durable write,
 * then applies.
 *
 * Lifecycle (Mesos master `Framework`):
 *   CONNECTED     subscribed, its event stream is open (active, connected)
 *   DISCONNECTED  its stream closed; removed if not back within failover_timeout
 *   RECOVERED     known from the registry or an agent's report after a master restart, not
 *                 re-subscribed yet; the failover timeout counts from the master's start
 * A removed framework (TEARDOWN, failover timeout) leaves the table for `completed`; its id
 * can never subscribe again ("Framework has been removed").
 */

import type { FrameworkInfo } from '../shared/mesos.js';
import type { DurableFramework } from './registry/registry.js';

/** Where a framework is in its life. */
export type FrameworkPhase = 'CONNECTED' | 'DISCONNECTED' | 'RECOVERED';

/** One framework. */
export interface FrameworkEntry {
  readonly id: string;
  /** FrameworkInfo with `id` set. */
  info: FrameworkInfo;
  phase: FrameworkPhase;
  /** The Mesos-Stream-Id of its open stream (CONNECTED only). */
  streamId: string | undefined;
  registeredTimeNs: bigint | undefined;
  reregisteredTimeNs: bigint | undefined;
  unregisteredTimeNs: bigint | undefined;
  /** When the failover timeout started counting (ms): the stream closed, or the master started. */
  disconnectedAtMs: number | undefined;
  suppressed: boolean;
  /** agent id -> refuse offers of that agent until (ms). */
  filters: Map<string, number>;
}

/** What a SUBSCRIBE means. */
export type SubscribeKind =
  /** No id: a new framework. */
  | 'NEW'
  /** An id the master knows: it takes over (closing the old stream if one is open). */
  | 'FAILOVER'
  /** An id the master never saw (it lost its state): accepted as that id, as Mesos does. */
  | 'UNKNOWN_ID'
  /** The id of a removed framework: refused. */
  | 'REMOVED';

export interface SubscribePlan {
  kind: SubscribeKind;
  frameworkId: string;
  /** The stream to close with "Framework failed over", if one is open. */
  previousStreamId: string | undefined;
  /** The durable record to write before SUBSCRIBED (undefined when nothing changes). */
  durable: DurableFramework | undefined;
}

/** How many completed frameworks the master remembers (Mesos --max_completed_frameworks is 50). */
export const MAX_COMPLETED_FRAMEWORKS = 50;

/** The failover timeout in ms (FrameworkInfo.failover_timeout is seconds, a double; default 0). */
export function failoverTimeoutMs(info: FrameworkInfo): number {
  const s = info.failover_timeout;
  return typeof s === 'number' && Number.isFinite(s) && s > 0 ? s * 1000 : 0;
}

export class FrameworkTable {
  readonly #frameworks = new Map<string, FrameworkEntry>();
  readonly #removed = new Set<string>();
  readonly #completed: FrameworkEntry[] = [];

  /** Loads the registry after a restart: every framework is RECOVERED, its timeout counting from `nowMs`. */
  recover(frameworks: readonly DurableFramework[], nowMs: number): void {
    for (const f of frameworks) this.addRecovered(f.info, f.registeredTimeNs, nowMs);
  }

  /** Adds a framework known only from the registry or an agent's report. No-op when known or removed. */
  addRecovered(info: FrameworkInfo, registeredTimeNs: bigint | undefined, nowMs: number): FrameworkEntry | undefined {
    const id = info.id?.value;
    if (id === undefined || this.#frameworks.has(id) || this.#removed.has(id)) return undefined;
    const entry = newEntry(id, info, 'RECOVERED');
    entry.registeredTimeNs = registeredTimeNs;
    entry.disconnectedAtMs = nowMs;
    this.#frameworks.set(id, entry);
    return entry;
  }

  get(id: string): FrameworkEntry | undefined {
    return this.#frameworks.get(id);
  }

  isRemoved(id: string): boolean {
    return this.#removed.has(id);
  }

  /** Decides what a SUBSCRIBE means. `mintId` is called only for a new framework. */
  planSubscribe(info: FrameworkInfo, nowNs: bigint, mintId: () => string): SubscribePlan {
    const claimed = info.id?.value;
    if (claimed !== undefined && this.#removed.has(claimed)) return { kind: 'REMOVED', frameworkId: claimed, previousStreamId: undefined, durable: undefined };
    const known = claimed === undefined ? undefined : this.#frameworks.get(claimed);
    const frameworkId = claimed ?? mintId();
    const withId: FrameworkInfo = { ...info, id: { value: frameworkId } };
    const kind: SubscribeKind = claimed === undefined ? 'NEW' : known === undefined ? 'UNKNOWN_ID' : 'FAILOVER';
    const changed = known === undefined || known.phase === 'RECOVERED' || JSON.stringify(known.info) !== JSON.stringify(withId);
    return {
      kind,
      frameworkId,
      previousStreamId: known?.streamId,
      durable: changed ? { id: frameworkId, info: withId, registeredTimeNs: known?.registeredTimeNs ?? nowNs } : undefined,
    };
  }

  /** Applies a subscription once durable: the framework is CONNECTED on `streamId`. */
  applySubscribe(plan: SubscribePlan, info: FrameworkInfo, streamId: string, nowNs: bigint): FrameworkEntry {
    let entry = this.#frameworks.get(plan.frameworkId);
    const withId: FrameworkInfo = { ...info, id: { value: plan.frameworkId } };
    if (entry === undefined) {
      entry = newEntry(plan.frameworkId, withId, 'CONNECTED');
      entry.registeredTimeNs = nowNs;
      this.#frameworks.set(entry.id, entry);
    } else {
      entry.info = withId;
      // A recovered framework never subscribed to this master: its first subscription is a
      // re-registration in Mesos' terms (it keeps its first registered_time when known).
      entry.registeredTimeNs ??= nowNs;
      entry.reregisteredTimeNs = nowNs;
    }
    entry.phase = 'CONNECTED';
    entry.streamId = streamId;
    entry.disconnectedAtMs = undefined;
    entry.unregisteredTimeNs = undefined;
    // Mesos clears a framework's filters and suppression when it (re-)subscribes.
    entry.suppressed = false;
    entry.filters.clear();
    return entry;
  }

  /** Its stream closed. Only the current stream counts: an old one closing after a failover changes nothing. */
  disconnect(id: string, streamId: string, nowMs: number, nowNs: bigint): boolean {
    const entry = this.#frameworks.get(id);
    if (entry === undefined || entry.phase !== 'CONNECTED' || entry.streamId !== streamId) return false;
    entry.phase = 'DISCONNECTED';
    entry.streamId = undefined;
    entry.disconnectedAtMs = nowMs;
    entry.unregisteredTimeNs = nowNs;
    return true;
  }

  /** When a disconnected or recovered framework's failover timeout ends (ms), or undefined. */
  deadlineMs(entry: FrameworkEntry): number | undefined {
    if (entry.phase === 'CONNECTED' || entry.disconnectedAtMs === undefined) return undefined;
    return entry.disconnectedAtMs + failoverTimeoutMs(entry.info);
  }

  /** Frameworks whose failover timeout has passed at `nowMs`. */
  expired(nowMs: number): string[] {
    const out: string[] = [];
    for (const e of this.#frameworks.values()) {
      const d = this.deadlineMs(e);
      if (d !== undefined && nowMs >= d) out.push(e.id);
    }
    return out;
  }

  /** Removes a framework for good: it moves to completed and its id is refused from now on. */
  remove(id: string, nowNs: bigint): FrameworkEntry | undefined {
    const entry = this.#frameworks.get(id);
    if (entry === undefined) return undefined;
    this.#frameworks.delete(id);
    this.#removed.add(id);
    entry.phase = 'DISCONNECTED';
    entry.streamId = undefined;
    entry.unregisteredTimeNs = nowNs;
    entry.disconnectedAtMs = undefined;
    this.#completed.push(entry);
    if (this.#completed.length > MAX_COMPLETED_FRAMEWORKS) this.#completed.shift();
    return entry;
  }

  /** Refuses `agentId`'s offers to the framework for `refuseMs` (0 or less: no filter). */
  filter(id: string, agentId: string, untilMs: number, nowMs: number): void {
    const entry = this.#frameworks.get(id);
    if (entry === undefined || untilMs <= nowMs) return;
    entry.filters.set(agentId, Math.max(untilMs, entry.filters.get(agentId) ?? 0));
  }

  /** REVIVE: clears filters and suppression. */
  revive(id: string): void {
    const entry = this.#frameworks.get(id);
    if (entry === undefined) return;
    entry.filters.clear();
    entry.suppressed = false;
  }

  /** SUPPRESS: no offers until REVIVE (or re-subscription). */
  suppress(id: string): void {
    const entry = this.#frameworks.get(id);
    if (entry !== undefined) entry.suppressed = true;
  }

  /** Drops filters that have ended, so the filter maps stay small. */
  pruneFilters(nowMs: number): void {
    for (const e of this.#frameworks.values()) for (const [agentId, until] of e.filters) if (until <= nowMs) e.filters.delete(agentId);
  }

  /** Every known (not removed) framework, in subscription order. */
  all(): IterableIterator<FrameworkEntry> {
    return this.#frameworks.values();
  }

  get completed(): readonly FrameworkEntry[] {
    return this.#completed;
  }
}

function newEntry(id: string, info: FrameworkInfo, phase: FrameworkPhase): FrameworkEntry {
  return {
    id,
    info: { ...info, id: { value: id } },
    phase,
    streamId: undefined,
    registeredTimeNs: undefined,
    reregisteredTimeNs: undefined,
    unregisteredTimeNs: undefined,
    disconnectedAtMs: undefined,
    suppressed: false,
    filters: new Map(),
  };
}

/**
 * The framework table: every framework the master knows, its lifecycle, failover deadline,
 * offer filters and suppression. A pure core: no streams, no timers, no registry; the shell
 * (services/frameworks.ts) asks it what a SUBSCRIBE or a closed stream means, makes the durable write,
 * then applies.
 *
 * Lifecycle (Mesos master `Framework`):
 *   CONNECTED     subscribed, its event stream is open (active, connected)
 *   DISCONNECTED  its stream closed; removed if not back within failover_timeout
 *   RECOVERED     known from the registry or an agent's report after a master restart, not
 *                 re-subscribed yet; the failover timeout counts from the master's start
 * A removed framework (TEARDOWN, failover timeout) leaves the table for `completed`; its id
 * can never subscribe again ("Framework has been removed").
 *
 * Principals (issue 13): a framework belongs to the principal in its FrameworkInfo, which is
 * the one it authenticated as when it registered (`subscribeAs` fills and checks it), and is
 * kept with it in the registry. Only that principal may subscribe with its id or call for it
 * (`callRefusal`). A framework without one is unbound: any caller the scheduler realm admits
 * may use it, and the first authenticated SUBSCRIBE for it binds it. On a master without
 * `--credentials` nobody can prove a principal, so principals are claims and nothing is bound.
 */

import { fail, type DrydockError } from '../../shared/errors.js';
import { hasCapability, type FrameworkInfo } from '../../shared/mesos.js';
import type { DurableFramework } from '../registry/registry.js';

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

// ---- Principals ------------------------------------------------------------------------------

/** A FrameworkInfo's principal; unset and '' (what generated clients send for unset) are none. */
export function frameworkPrincipal(info: FrameworkInfo): string | undefined {
  return info.principal === undefined || info.principal === '' ? undefined : info.principal;
}

/** Who makes a scheduler call, as far as frameworks' principals are concerned. */
export interface FrameworkCaller {
  /** The principal the call authenticated as; undefined: anonymous. */
  readonly principal: string | undefined;
  /** Whether the master checks credentials at all (`--credentials`); without, principals are claims and nothing is bound. */
  readonly authenticates: boolean;
}

export type Bound = { ok: true; info: FrameworkInfo } | { ok: false; error: DrydockError };

/**
 * SUBSCRIBE: the FrameworkInfo to register, or the 403. `known` is the FrameworkInfo of the
 * framework the call names, when the master knows it. A principal in the info must be the one
 * the call authenticated as (Mesos' check; an anonymous caller cannot claim one). An info
 * without one gets the caller's (Drydock fills it where Mesos refuses: generated clients send
 * `"principal": ""`, and the Authorization header already says who it is). A known framework
 * bound to a principal takes only that principal.
 */
export function subscribeAs(info: FrameworkInfo, caller: FrameworkCaller, known: FrameworkInfo | undefined): Bound {
  if (!caller.authenticates) return { ok: true, info };
  const claimed = frameworkPrincipal(info);
  if (claimed !== undefined && claimed !== caller.principal) return { ok: false, error: fail('FRAMEWORK_PRINCIPAL_NOT_AUTHENTICATED', claimed, caller.principal) };
  const owner = known === undefined ? undefined : frameworkPrincipal(known);
  const id = info.id?.value;
  if (owner !== undefined && owner !== caller.principal && id !== undefined) return { ok: false, error: fail('FRAMEWORK_PRINCIPAL_MISMATCH', id, owner, caller.principal) };
  if (claimed === undefined && caller.principal !== undefined) return { ok: true, info: { ...info, principal: caller.principal } };
  return { ok: true, info };
}

/** Any call but SUBSCRIBE naming a framework: undefined when the caller may make it, else the 403. */
export function callRefusal(frameworkId: string, info: FrameworkInfo, caller: FrameworkCaller): DrydockError | undefined {
  if (!caller.authenticates) return undefined;
  const owner = frameworkPrincipal(info);
  if (owner === undefined || owner === caller.principal) return undefined;
  return fail('FRAMEWORK_PRINCIPAL_MISMATCH', frameworkId, owner, caller.principal);
}

/**
 * UPDATE_FRAMEWORK's info with an unset principal taken as the framework's own (a generated
 * client sends `""`): only a principal actually named can be a change of principal.
 */
export function withOwnPrincipal(info: FrameworkInfo, current: FrameworkInfo): FrameworkInfo {
  if (frameworkPrincipal(info) !== undefined) return info;
  const { principal: _dropped, ...rest } = info;
  return current.principal === undefined ? rest : { ...rest, principal: current.principal };
}

/** The roles a framework subscribes with (register_frameworks checks each): `roles` with MULTI_ROLE, else `role`, default `*` (Mesos). */
export function frameworkRoles(info: FrameworkInfo): string[] {
  if (hasCapability(info, 'MULTI_ROLE')) return [...new Set(info.roles ?? [])];
  return [info.role === undefined || info.role === '' ? '*' : info.role];
}

/**
 * The frameworks service's offers (a part of services/frameworks.ts): the outstanding offers and
 * inverse offers, their rescinding, the inverse-offer answers and filters, and when allocation
 * runs: every allocation interval, and soon after events that free or change resources, batched
 * (one allocation for a turn's events) and spaced so that allocation keeps to about a third of
 * the CPU. All of its timing goes through the term's clock. What to offer is the allocator's
 * (cores/allocator.ts); the offers' JSON the offers core's (cores/offers.ts).
 */

import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import { nowNs } from '../../shared/duration.js';
import { hasCapability, isTerminal, type Resource } from '../../shared/mesos.js';
import { addResources, subtractResources, sumResources } from '../../shared/resources.js';
import type { AgentTable } from '../cores/agents.js';
import { generateInverseOffers, generateOffers, inverseOfferKey, type AllocatorAgent, type AllocatorFramework, type MaintenanceAgent } from '../cores/allocator.js';
import type { FrameworkTable } from '../cores/frameworks.js';
import { unavailabilityJson, type MaintenanceState } from '../cores/maintenance.js';
import { offerJson, type Offer } from '../cores/offers.js';
import type { InverseOfferAnswer } from '../cores/scheduler-calls.js';
import type { FrameworkInstruments } from '../term/ports.js';

/** Default refuse_seconds of DECLINE / ACCEPT filters (Mesos Filters.refuse_seconds). */
export const DEFAULT_REFUSE_SECONDS = 5;

/** What the offers part needs of the service and the term. */
export interface AllocationNeeds {
  /** Offer ids are derived from it. */
  readonly masterId: string;
  readonly agents: AgentTable;
  readonly maintenance: MaintenanceState;
  readonly frameworks: FrameworkTable;
  readonly clock: Clock;
  readonly allocationIntervalMs: number;
  readonly instruments: FrameworkInstruments | undefined;
  readonly log: Logger;
  /** Whether the service runs (between start and stop). */
  running(): boolean;
  /** Sends an event on the framework's stream, if it has one open. */
  send(frameworkId: string, event: unknown): void;
}

/** Filters.refuse_seconds in ms: default 5 s; negative falls back to the default; capped at 365 days (Mesos). */
export function refuseMs(filters: { refuse_seconds?: number } | undefined): number {
  const v = filters?.refuse_seconds;
  const s = v === undefined ? DEFAULT_REFUSE_SECONDS : v < 0 ? DEFAULT_REFUSE_SECONDS : Math.min(v, 365 * 86_400);
  return s * 1000;
}

export class Allocation {
  readonly #n: AllocationNeeds;
  /** Outstanding offers, by id. */
  readonly offers = new Map<string, Offer>();
  /** Outstanding inverse offers (same id space as offers; resources always empty: the whole agent). */
  readonly #inverseOffers = new Map<string, Offer>();
  /** Inverse-offer refuse filters: framework id -> agent id -> until (ms). Separate from offer filters, as in Mesos. */
  readonly #inverseFilters = new Map<string, Map<string, number>>();
  #nextOffer = 0;
  #allocationTimer: TimerHandle | undefined;
  #allocationSoon = false;
  /** How long the last allocation took (ms, monotonic): event-driven allocations are spaced by twice that. */
  #lastAllocationMs = 0;
  #lastAllocationAt = 0;

  constructor(needs: AllocationNeeds) {
    this.#n = needs;
  }

  /** Starts the allocation cycle (every --allocation_interval). */
  start(): void {
    this.#scheduleAllocation();
  }

  stop(): void {
    this.#allocationTimer?.cancel();
  }

  // ---- Views ---------------------------------------------------------------------------------

  offersOfFramework(frameworkId: string): Offer[] {
    return [...this.offers.values()].filter((o) => o.frameworkId === frameworkId);
  }

  offeredOnAgent(agentId: string): Resource[] {
    let sum: Resource[] = [];
    for (const o of this.offers.values()) if (o.agentId === agentId) sum = addResources(sum, o.resources);
    return sum;
  }

  inverseOffersOfFramework(frameworkId: string): Offer[] {
    return [...this.#inverseOffers.values()].filter((o) => o.frameworkId === frameworkId);
  }

  /** Offers sent and not yet accepted, declined or rescinded. */
  get outstandingOffers(): number {
    return this.offers.size;
  }

  /** Inverse offers sent and not yet answered or rescinded. */
  get outstandingInverseOffers(): number {
    return this.#inverseOffers.size;
  }

  /**
   * Changes whenever the outstanding offers or inverse offers change: every one made takes the
   * next number, so the set changed if that number moved or a count went down without it.
   */
  get offerStamp(): string {
    return `${this.#nextOffer}.${this.offers.size}.${this.#inverseOffers.size}`;
  }

  offerJson(o: Offer): Record<string, unknown> {
    const a = this.#n.agents.get(o.agentId);
    const fw = this.#n.frameworks.get(o.frameworkId);
    const j = offerJson(o, { hostname: a?.info.hostname ?? '', ip: a?.info.ip ?? '', port: a?.info.port ?? 0, attributes: a?.info.attributes ?? [] }, fw !== undefined && hasCapability(fw.info, 'MULTI_ROLE'));
    // Mesos §4.6: every offer of an agent on a DRAINING machine carries the machine's unavailability.
    const u = this.#n.maintenance.unavailabilityOfAgent(o.agentId);
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    return j;
  }

  /** An InverseOffer as Mesos writes it: `{id, url, framework_id, agent_id, unavailability, resources: []}`. */
  inverseOfferJson(o: Offer): Record<string, unknown> {
    const a = this.#n.agents.get(o.agentId);
    const hostname = a?.info.hostname ?? '';
    const j: Record<string, unknown> = {
      id: { value: o.id },
      url: { scheme: 'http', address: { hostname, ip: a?.info.ip ?? '', port: a?.info.port ?? 0 }, path: '/slave(1)' },
      framework_id: { value: o.frameworkId },
      agent_id: { value: o.agentId },
    };
    const u = this.#n.maintenance.machineOfAgent(o.agentId)?.unavailability;
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    j['resources'] = [];
    return j;
  }

  // ---- Answers and rescinds ------------------------------------------------------------------

  /** DECLINE: the framework's offers among `offerIds` are gone; each agent is filtered for it for `refuse` ms. */
  decline(frameworkId: string, offerIds: readonly string[], refuse: number): void {
    const clock = this.#n.clock;
    for (const id of offerIds) {
      const o = this.offers.get(id);
      if (o === undefined || o.frameworkId !== frameworkId) continue;
      this.offers.delete(id);
      this.#n.frameworks.filter(frameworkId, o.agentId, clock.now() + refuse, clock.now());
    }
    this.allocateSoon();
  }

  /**
   * ACCEPT_INVERSE_OFFERS / DECLINE_INVERSE_OFFERS (Mesos allocator `updateInverseOffer`): the
   * answer is recorded on the agent's machine, the inverse offer is no longer outstanding, and
   * a refuse filter is installed (default 5 s; 0 = none, so the next allocation re-offers).
   * Unknown or stale ids are ignored, as in Mesos.
   */
  answerInverseOffers(frameworkId: string, answer: 'ACCEPT' | 'DECLINE', body: InverseOfferAnswer): void {
    const ids = (body.inverse_offer_ids ?? []).map((o) => o.value);
    const refuse = refuseMs(body.filters);
    const now = this.#n.clock.now();
    for (const id of ids) {
      const o = this.#inverseOffers.get(id);
      if (o === undefined || o.frameworkId !== frameworkId) {
        this.#n.log.debug('inverse offer answer ignored', { frameworkId, inverseOfferId: id });
        continue;
      }
      this.#inverseOffers.delete(id);
      this.#n.instruments?.onInverseOfferAnswer(answer);
      this.#n.maintenance.recordAnswer(o.agentId, { status: answer, frameworkId, timestampNs: nowNs(now) });
      if (refuse > 0) {
        let f = this.#inverseFilters.get(frameworkId);
        if (f === undefined) this.#inverseFilters.set(frameworkId, (f = new Map()));
        f.set(o.agentId, now + refuse);
      }
    }
    this.allocateSoon();
  }

  /** Forgets the offers and inverse offers `pred` picks; `tell`: their frameworks hear RESCIND / RESCIND_INVERSE_OFFER. */
  rescind(pred: (o: Offer) => boolean, tell: boolean): void {
    for (const o of [...this.offers.values()]) {
      if (!pred(o)) continue;
      this.offers.delete(o.id);
      if (tell) this.#n.send(o.frameworkId, { type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
    }
    // Inverse offers go wherever the offers of the same framework and agent go.
    for (const o of [...this.#inverseOffers.values()]) {
      if (!pred(o)) continue;
      this.#inverseOffers.delete(o.id);
      if (tell) this.#n.send(o.frameworkId, { type: 'RESCIND_INVERSE_OFFER', rescind_inverse_offer: { inverse_offer_id: { value: o.id } } });
    }
  }

  /** Forgets the offers (not the inverse offers) `pred` picks; their frameworks hear RESCIND. */
  rescindOffers(pred: (o: Offer) => boolean): void {
    for (const o of [...this.offers.values()]) {
      if (!pred(o)) continue;
      this.offers.delete(o.id);
      this.#n.send(o.frameworkId, { type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
    }
  }

  /**
   * The unavailability of these agents' machines was (re)applied or cleared (schedule POST,
   * /machine/up): outstanding offers and inverse offers are rescinded and inverse-offer filters
   * dropped (Mesos `updateUnavailability`), then new offers carry the new unavailability.
   */
  maintenanceChanged(agentIds: readonly string[]): void {
    if (agentIds.length === 0) return;
    const agents = new Set(agentIds);
    this.rescind((o) => agents.has(o.agentId), true);
    for (const f of this.#inverseFilters.values()) for (const a of agents) f.delete(a);
    this.allocateSoon();
  }

  // ---- When allocation runs ------------------------------------------------------------------

  /** Runs an allocation soon (batched: many events in one turn make one allocation). */
  allocateSoon(): void {
    if (this.#allocationSoon || !this.#n.running()) return;
    this.#allocationSoon = true;
    const clock = this.#n.clock;
    // Events come in bursts (10,000 agents registering after a master restart): batch them,
    // and keep allocation to about a third of the CPU by waiting twice as long as the last
    // allocation took, counted from its start.
    const wait = Math.max(0, this.#lastAllocationAt + 3 * this.#lastAllocationMs - clock.monotonicMs());
    const run = (): void => {
      this.#allocationSoon = false;
      this.#allocate();
    };
    if (wait < 1) clock.immediate(run);
    else clock.setTimer(wait, run);
  }

  #scheduleAllocation(): void {
    this.#allocationTimer = this.#n.clock.setTimer(this.#n.allocationIntervalMs, () => {
      if (!this.#n.running()) return;
      this.#allocate();
      this.#scheduleAllocation();
    });
  }

  #allocate(): void {
    if (!this.#n.running()) return;
    const clock = this.#n.clock;
    const now = clock.now();
    const frameworks = this.#n.frameworks;
    frameworks.pruneFilters(now);
    // Nobody to offer to (no framework subscribed): skip the per-agent resource arithmetic.
    if (![...frameworks.all()].some((f) => f.phase === 'CONNECTED')) return;
    const started = clock.monotonicMs();
    try {
      this.#allocateNow(now);
    } finally {
      this.#lastAllocationAt = started;
      this.#lastAllocationMs = clock.monotonicMs() - started;
    }
  }

  // ---- What allocation does ------------------------------------------------------------------

  #allocateNow(now: number): void {
    // The resource lists are gathered first and summed once each (sumResources): adding them
    // one at a time copied the running total per task, the round's main cost with many tasks.
    const offered = new Map<string, Resource[][]>();
    const held = new Map<string, Resource[][]>();
    const push = (m: Map<string, Resource[][]>, k: string, r: Resource[]): void => {
      const lists = m.get(k);
      if (lists === undefined) m.set(k, [r]);
      else lists.push(r);
    };
    for (const o of this.offers.values()) {
      push(offered, o.agentId, o.resources);
      push(held, o.frameworkId, o.resources);
    }
    const agents: AllocatorAgent[] = [];
    for (const a of this.#n.agents.all()) {
      if (a.phase !== 'REGISTERED') continue;
      const active = a.connected && !a.deactivated;
      const diskPressure = a.diskPressure !== undefined;
      const used: Resource[][] = [];
      for (const t of a.tasks?.values() ?? []) {
        if (isTerminal(t.state)) continue;
        used.push(t.resources);
        push(held, t.framework_id.value, t.resources);
      }
      // A deactivated (or draining) agent gets no offers until REACTIVATE_AGENT (Mesos §4.5), one
      // under disk pressure until it clears; what it has free is only worked out for agents
      // that can be offered.
      const available = active && !diskPressure ? subtractResources(subtractResources(a.info.resources, sumResources(used)), sumResources(offered.get(a.id) ?? [])) : [];
      agents.push({ id: a.id, active, diskPressure, total: a.info.resources, available });
    }
    const frameworks: AllocatorFramework[] = [];
    const filters = new Map<string, Map<string, number>>();
    for (const f of this.#n.frameworks.all()) {
      frameworks.push({ id: f.id, active: f.phase === 'CONNECTED', suppressed: f.suppressed, allocated: sumResources(held.get(f.id) ?? []) });
      filters.set(f.id, f.filters);
    }
    const planned = generateOffers({ agents, frameworks, filters, nowMs: now });
    const byFramework = new Map<string, Offer[]>();
    for (const p of planned) {
      const offer: Offer = { id: `${this.#n.masterId}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: p.resources };
      this.offers.set(offer.id, offer);
      byFramework.set(p.frameworkId, [...(byFramework.get(p.frameworkId) ?? []), offer]);
    }
    for (const [fid, offers] of byFramework) this.#n.send(fid, { type: 'OFFERS', offers: { offers: offers.map((o) => this.offerJson(o)) } });
    this.#allocateInverse(agents, frameworks, now);
  }

  /**
   * Inverse offers for agents on DRAINING machines, in their own INVERSE_OFFERS event (Mesos
   * 1.x scheduler.proto; OFFERS carries only offers since 1.0).
   */
  #allocateInverse(agents: readonly AllocatorAgent[], frameworks: readonly AllocatorFramework[], now: number): void {
    const draining = [...this.#n.maintenance.drainingAgents()];
    if (draining.length === 0) return;
    const active = new Map(agents.map((a) => [a.id, a.active]));
    const holders = new Map<string, Set<string>>();
    for (const d of draining) holders.set(d.agentId, new Set());
    for (const o of this.offers.values()) holders.get(o.agentId)?.add(o.frameworkId);
    for (const d of draining) {
      const set = holders.get(d.agentId) as Set<string>;
      for (const t of this.#n.agents.get(d.agentId)?.tasks?.values() ?? []) if (!isTerminal(t.state)) set.add(t.framework_id.value);
    }
    const outstanding = new Set<string>();
    for (const o of this.#inverseOffers.values()) outstanding.add(inverseOfferKey(o.frameworkId, o.agentId));
    for (const f of this.#inverseFilters.values()) for (const [aid, until] of f) if (until <= now) f.delete(aid);
    const input: MaintenanceAgent[] = draining.map((d) => ({ id: d.agentId, active: active.get(d.agentId) === true, frameworks: holders.get(d.agentId) as Set<string> }));
    const planned = generateInverseOffers({
      agents: input,
      activeFrameworks: new Set(frameworks.filter((f) => f.active).map((f) => f.id)),
      outstanding,
      filters: this.#inverseFilters,
      nowMs: now,
    });
    const byFramework = new Map<string, Offer[]>();
    for (const p of planned) {
      const io: Offer = { id: `${this.#n.masterId}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: [] };
      this.#inverseOffers.set(io.id, io);
      let list = byFramework.get(p.frameworkId);
      if (list === undefined) byFramework.set(p.frameworkId, (list = []));
      list.push(io);
    }
    for (const [fid, list] of byFramework) this.#n.send(fid, { type: 'INVERSE_OFFERS', inverse_offers: { inverse_offers: list.map((o) => this.inverseOfferJson(o)) } });
  }
}

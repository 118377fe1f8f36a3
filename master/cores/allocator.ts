/**
 * The allocator's decision: which framework gets an offer of which agent's free resources.
 * A pure function of plain data (agents, frameworks, filters, now); the shell (services/frameworks-allocation.ts)
 * runs it every --allocation_interval and soon after events that free resources, and turns
 * its answer into OFFERS events.
 *
 * Policy: Mesos' hierarchical DRF allocator reduced to one role ("*"): each agent's whole
 * available resources go to the eligible framework with the lowest dominant share, counting
 * what it was offered earlier in the same round. Ties go to the framework listed first.
 *
 * Maintenance: offers of an agent on a DRAINING machine carry its unavailability (added when
 * the shell writes the offer), and inverse offers come from `generateInverseOffers` below,
 * as in Mesos' `hierarchical.cpp`.
 */

import type { Resource } from '../../shared/mesos.js';
import { addResources, isEmptyResource, scalarOf, sumResources } from '../../shared/resources.js';

/** An agent as the allocator sees it. */
export interface AllocatorAgent {
  id: string;
  /** Registered, connected and not deactivated: only active agents are offered. */
  active: boolean;
  /**
   * It reports disk pressure (Drydock): not offered while it lasts, as if deactivated, but it
   * stays active for inverse offers (maintenance goes on) and keeps its tasks.
   */
  diskPressure: boolean;
  /** What it has: used for the cluster total in dominant shares. */
  total: Resource[];
  /** total - allocated (non-terminal tasks) - offered (outstanding offers). */
  available: Resource[];
}

/** A framework as the allocator sees it. */
export interface AllocatorFramework {
  id: string;
  /** Subscribed and connected: disconnected and recovered frameworks get nothing. */
  active: boolean;
  /** SUPPRESS: no offers until REVIVE. */
  suppressed: boolean;
  /** Resources it holds now (allocated + offered), for its dominant share. */
  allocated: Resource[];
}

/** Refuse filters: framework id -> agent id -> until when (ms since the epoch). */
export type OfferFilters = ReadonlyMap<string, ReadonlyMap<string, number>>;

export interface AllocationInput {
  agents: readonly AllocatorAgent[];
  frameworks: readonly AllocatorFramework[];
  filters: OfferFilters;
  nowMs: number;
}

/** One offer to make: all of `agentId`'s available resources to `frameworkId`. */
export interface PlannedOffer {
  frameworkId: string;
  agentId: string;
  resources: Resource[];
}

/** Is (framework, agent) filtered at `nowMs`? A filter ends at its deadline. */
export function isFiltered(filters: OfferFilters, frameworkId: string, agentId: string, nowMs: number): boolean {
  const until = filters.get(frameworkId)?.get(agentId);
  return until !== undefined && nowMs < until;
}

/** The names of scalar resources in `resources`. */
function scalarNames(resources: readonly Resource[]): string[] {
  return [...new Set(resources.filter((r) => r.type === 'SCALAR').map((r) => r.name))];
}

/** DRF: the largest share of any scalar resource of the cluster total (0 when the cluster has none). */
export function dominantShare(allocated: readonly Resource[], total: readonly Resource[]): number {
  let share = 0;
  for (const name of scalarNames(total)) {
    const t = scalarOf(total, name);
    if (t > 0) share = Math.max(share, scalarOf(allocated, name) / t);
  }
  return share;
}

/** May the agent's resources be offered: active and not under disk pressure. Pure. */
export function offerable(agent: Pick<AllocatorAgent, 'active' | 'diskPressure'>): boolean {
  return agent.active && !agent.diskPressure;
}

/** Decides this round's offers. Each agent with something available goes to at most one framework. */
export function generateOffers(input: AllocationInput): PlannedOffer[] {
  const total = sumResources(input.agents.map((a) => a.total));
  const held = new Map<string, Resource[]>();
  for (const f of input.frameworks) if (f.active && !f.suppressed) held.set(f.id, f.allocated);
  if (held.size === 0) return [];

  const offers: PlannedOffer[] = [];
  for (const agent of input.agents) {
    if (!offerable(agent)) continue;
    const available = agent.available.filter((r) => !isEmptyResource(r));
    if (available.length === 0) continue;
    let best: { id: string; share: number } | undefined;
    for (const [id, allocated] of held) {
      if (isFiltered(input.filters, id, agent.id, input.nowMs)) continue;
      const share = dominantShare(allocated, total);
      if (best === undefined || share < best.share) best = { id, share };
    }
    if (best === undefined) continue;
    offers.push({ frameworkId: best.id, agentId: agent.id, resources: available });
    held.set(best.id, addResources(held.get(best.id) ?? [], available));
  }
  return offers;
}

// ---- Inverse offers (maintenance) -----------------------------------------------------------

/** An agent on a DRAINING machine, as inverse-offer generation sees it. */
export interface MaintenanceAgent {
  id: string;
  /** Inverse offers are only made for active agents (Mesos drops them for the others). */
  active: boolean;
  /** Frameworks with resources offered or allocated on this agent. */
  frameworks: ReadonlySet<string>;
}

export interface InverseOfferInput {
  /** Agents whose machine is DRAINING. */
  agents: readonly MaintenanceAgent[];
  /** Subscribed, connected frameworks. */
  activeFrameworks: ReadonlySet<string>;
  /** (framework, agent) pairs with an outstanding inverse offer: inverseOfferKey(). */
  outstanding: ReadonlySet<string>;
  /** Inverse-offer refuse filters (separate from the offer filters, as in Mesos). */
  filters: OfferFilters;
  nowMs: number;
}

/** Key of a (framework, agent) pair in InverseOfferInput.outstanding. */
export function inverseOfferKey(frameworkId: string, agentId: string): string {
  return `${frameworkId}\u0000${agentId}`;
}

/**
 * Mesos' `generateInverseOffers` (hierarchical.cpp): one inverse offer per active agent under
 * maintenance and per active framework holding resources there, unless one is outstanding for
 * that pair or the pair is filtered.
 */
export function generateInverseOffers(input: InverseOfferInput): Array<{ frameworkId: string; agentId: string }> {
  const out: Array<{ frameworkId: string; agentId: string }> = [];
  for (const agent of input.agents) {
    if (!agent.active) continue;
    for (const fid of agent.frameworks) {
      if (!input.activeFrameworks.has(fid)) continue;
      if (input.outstanding.has(inverseOfferKey(fid, agent.id))) continue;
      if (isFiltered(input.filters, fid, agent.id, input.nowMs)) continue;
      out.push({ frameworkId: fid, agentId: agent.id });
    }
  }
  return out;
}

/**
 * Moving a single master's registry (its SQLite file) into etcd, once, when a cluster becomes
 * highly available: everything durable is written through the destination's own operations,
 * so the result is what that registry would hold had it been there all along.
 */

import type { Registry, RegistryState } from './registry.js';

/** What an import wrote. */
export interface ImportSummary {
  agents: number;
  goneAgents: number;
  removedBindings: number;
  frameworks: number;
  machines: number;
  maintenancePlans: number;
}

/** Is a registry empty (nothing to overwrite)? */
export function isEmptyRegistry(s: RegistryState): boolean {
  return s.agents.length === 0 && s.frameworks.length === 0 && (s.goneAgents ?? []).length === 0 && (s.removedBindings ?? []).length === 0 && s.maintenance.windows.length === 0 && (s.maintenancePlans ?? []).length === 0;
}

/** Writes `from` into `to`, in the order the original writes happened. */
export async function importRegistry(from: RegistryState, to: Registry): Promise<ImportSummary> {
  // Removed agents' bindings first, oldest first: removing an id the destination does not hold
  // yet forgets nothing and keeps the binding (an agent admitted again after its removal is
  // admitted below, and keeps it too).
  for (const b of from.removedBindings ?? []) await to.removeAgent(b.id, { timeNs: b.removedTimeNs, principal: b.principal });
  for (const a of from.agents) {
    await to.admitAgent({ id: a.id, info: a.info, version: a.version, capabilities: a.capabilities, registeredTimeNs: a.registeredTimeNs, ...(a.principal === undefined ? {} : { principal: a.principal }) });
    if (a.reachability === 'UNREACHABLE') await to.markAgentUnreachable(a.id, a.unreachableTimeNs ?? 0n);
    if (a.drain !== undefined) {
      await to.drainAgent(a.id, a.drain.config, a.drain.startedNs);
      if (a.drain.state === 'DRAINED') await to.markAgentDrained(a.id, a.drain.drainedNs ?? a.drain.startedNs);
    } else if (a.deactivated === true) await to.deactivateAgent(a.id);
  }
  for (const g of from.goneAgents ?? []) await to.markAgentGone(g.id, g.goneTimeNs);
  for (const f of from.frameworks) await to.addFramework(f);
  if (from.maintenance.windows.length > 0) await to.updateSchedule(from.maintenance);
  // Progress and all: a plan that was running resumes in etcd at the step it was in.
  for (const p of from.maintenancePlans ?? []) await to.createMaintenancePlan(p);
  return {
    agents: from.agents.length,
    goneAgents: (from.goneAgents ?? []).length,
    removedBindings: (from.removedBindings ?? []).length,
    frameworks: from.frameworks.length,
    machines: from.maintenance.windows.reduce((n, w) => n + w.machines.length, 0),
    maintenancePlans: (from.maintenancePlans ?? []).length,
  };
}

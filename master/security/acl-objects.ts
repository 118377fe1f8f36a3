/**
 * The model's things as ACL objects (shared/acls.ts): an agent is its id, hostname, ip and
 * attributes; a machine is its hostname and ip plus the attributes of the agents on it, so
 * `rack:r1` names a scheduled machine as soon as an agent on it has registered. Pure reads.
 */

import { machineKey, type MachineId } from '../../shared/machine.js';
import type { AgentSelf } from '../../shared/protocol.js';
import { attributeValues, type MachineObject } from '../../shared/acls.js';
import type { AgentEntry, AgentTable } from '../cores/agents.js';
import type { MaintenanceState } from '../cores/maintenance.js';

/** An agent as it registered (or asks to register). */
export function agentObject(id: string | undefined, info: AgentSelf): MachineObject {
  return { agentId: id, hostname: info.hostname, ip: info.ip, attributes: attributeValues(info.attributes) };
}

/** A known agent; undefined (an unknown object, ANY) when the master has no such agent. */
export function agentEntryObject(entry: AgentEntry | undefined): MachineObject | undefined {
  return entry === undefined ? undefined : agentObject(entry.id, entry.info);
}

/** A machine by its id, with the attributes of the agents on it (the first agent's win on a clash). */
export function machineObject(id: MachineId, maintenance: MaintenanceState, agents: AgentTable): MachineObject {
  const attributes: Record<string, string> = {};
  for (const agentId of maintenance.agentsOn(machineKey(id))) {
    const a = agents.get(agentId);
    if (a === undefined) continue;
    for (const [k, v] of Object.entries(attributeValues(a.info.attributes))) if (!(k in attributes)) attributes[k] = v;
  }
  // No agent on it now (a DOWN machine): the attributes its agents had, kept in the registry
  // with the schedule, so they are known again after a restart.
  const known = Object.keys(attributes).length > 0 ? attributes : (maintenance.attributesOf(id) ?? {});
  return { hostname: id.hostname === '' ? undefined : id.hostname, ip: id.ip === '' ? undefined : id.ip, attributes: known };
}

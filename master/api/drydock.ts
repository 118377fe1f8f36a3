/**
 * Drydock's own API on the master (`/drydock/v1/...`): the facts Drydock knows about an agent
 * beyond Mesos, in Drydock's own shape, so that no Mesos-named answer has to carry them (a
 * Mesos answer is exactly Mesos-shaped). `GET /drydock/v1/agents` and `/drydock/v1/agents/<id>`
 * answer with `drydockAgentJson`; the event stream `GET /drydock/v1/events`
 * (drydock-stream.ts) carries the same JSON in its AGENT_UPDATED records.
 *
 * Who sees what is decided as for the Mesos calls that read the same facts: an agent by
 * view_agents (GET_AGENTS), its machine's mode by get_maintenance_statuses
 * (GET_MAINTENANCE_STATUS) and its window by get_maintenance_schedules
 * (GET_MAINTENANCE_SCHEDULE), each on the machine as an ACL object.
 *
 * The shape only ever grows: every fact is an object's field, so a later round adds fields
 * (`conditions` holds what the master observes on an agent: disk pressure).
 */

import type { AclObject } from '../../shared/acls.js';
import { agentMachineId, machineIdJson, type MachineId } from '../../shared/machine.js';
import type { Approve, ViewAccess } from '../../shared/visibility.js';
import { conditionsJson, type AgentEntry } from '../cores/agents.js';
import { drainRecordJson } from '../cores/drain.js';
import { unavailabilityJson } from '../cores/maintenance.js';
import { agentEntryObject } from '../security/acl-objects.js';
import type { Queries } from '../term/queries.js';

/** The path prefix of Drydock's own API on the master. */
export const DRYDOCK_V1 = ['drydock', 'v1'] as const;

/**
 * One word for an agent, as operators read it: where it is in its life when it is not
 * registered (RECOVERED, UNREACHABLE), else its drain's state, else DEACTIVATED, else ACTIVE
 * or DISCONNECTED (its session).
 */
export type AgentState = 'ACTIVE' | 'DEACTIVATED' | 'DRAINING' | 'DRAINED' | 'DISCONNECTED' | 'RECOVERED' | 'UNREACHABLE';

/** The state word of an agent. Pure. */
export function agentState(e: Pick<AgentEntry, 'phase' | 'connected' | 'deactivated' | 'drain'>): AgentState {
  if (e.phase === 'RECOVERED' || e.phase === 'UNREACHABLE') return e.phase;
  if (e.drain !== undefined) return e.drain.state;
  if (e.deactivated) return 'DEACTIVATED';
  return e.connected ? 'ACTIVE' : 'DISCONNECTED';
}

/** A caller's rights over Drydock's agent facts, one decision function per action; undefined: no ACLs, everything is shown. */
export interface DrydockRights {
  /** view_agents, on the agent. */
  readonly agents: Approve;
  /** get_maintenance_statuses, on the agent's machine: its mode. */
  readonly statuses: Approve;
  /** get_maintenance_schedules, on the agent's machine: its window. */
  readonly schedules: Approve;
}

/** The rights of a caller; undefined when nothing is filtered (no ACLs). */
export function drydockRights(access: ViewAccess | undefined): DrydockRights | undefined {
  if (access === undefined || !access.filters) return undefined;
  return { agents: access.approver('view_agents'), statuses: access.approver('get_maintenance_statuses'), schedules: access.approver('get_maintenance_schedules') };
}

/** What a caller may see of an agent's machine: its mode and its window. Without ACLs, both. */
export interface MachineSight {
  readonly mode: boolean;
  readonly window: boolean;
}

const SEES_ALL: MachineSight = { mode: true, window: true };

/** The agent's machine: the one the maintenance state indexes it under, else its hostname and ip (an UP machine). */
function machineIdOf(e: AgentEntry, q: Queries): MachineId {
  return q.agentMachine(e.id)?.id ?? agentMachineId(e.info.hostname, e.info.ip);
}

/** What `rights` lets the caller see of the agent's machine; every part when there are no ACLs. */
export function machineSight(e: AgentEntry, q: Queries, rights: DrydockRights | undefined): MachineSight {
  if (rights === undefined) return SEES_ALL;
  const object: AclObject = q.machineObject(machineIdOf(e, q));
  return { mode: rights.statuses(object), window: rights.schedules(object) };
}

/**
 * One agent in Drydock's words (the answer of `GET /drydock/v1/agents/<id>`):
 *
 *     agent_id      {"value": ...}, as Mesos writes it
 *     hostname, ip, port   where the agent says it is (its API at ip:port)
 *     peer          the address its session comes from, while connected
 *     phase         REGISTERED, RECOVERED (not re-registered since a master restart), UNREACHABLE
 *     state         one word (AgentState)
 *     connected, active, deactivated   its session is up; it gets offers; an operator (or a drain) deactivated it
 *     machine       {id, mode, unavailability}: the machine's maintenance mode and window
 *                   (mode and window each only for callers their ACL lets see the machine)
 *     drain         while it has one: state, started_time, config, remaining_tasks, waiting_for,
 *                   drained_time, refused (cores/drain.ts drainRecordJson)
 *     conditions    what the master observes on the agent (cores/agents.ts conditionsJson): `{}`, or
 *                   `{"disk_pressure": {...}}` while its resources are not offered
 */
export function drydockAgentJson(e: AgentEntry, q: Queries, sight: MachineSight = SEES_ALL): Record<string, unknown> {
  const j: Record<string, unknown> = {
    agent_id: { value: e.id },
    hostname: e.info.hostname,
    ip: e.info.ip,
    port: e.info.port,
  };
  const peer = e.connected ? q.agentPeer(e.id) : undefined;
  if (peer !== undefined) j['peer'] = peer;
  j['phase'] = e.phase;
  j['state'] = agentState(e);
  j['connected'] = e.connected;
  j['active'] = e.connected && !e.deactivated;
  j['deactivated'] = e.deactivated;
  const m = q.agentMachine(e.id);
  const machine: Record<string, unknown> = { id: machineIdJson(m?.id ?? agentMachineId(e.info.hostname, e.info.ip)) };
  if (sight.mode) machine['mode'] = m?.mode ?? 'UP';
  if (sight.window && m?.unavailability !== undefined) machine['unavailability'] = unavailabilityJson(m.unavailability);
  j['machine'] = machine;
  if (e.drain !== undefined) j['drain'] = drainRecordJson({ ...q.drainView(e), drain: e.drain }, q.nowMs());
  j['conditions'] = conditionsJson(e);
  return j;
}

/** Whether the caller may see the agent at all (view_agents). */
function maySee(e: AgentEntry, rights: DrydockRights | undefined): boolean {
  return rights === undefined || rights.agents(agentEntryObject(e));
}

/** `GET /drydock/v1/agents`: every agent the master has (registered, recovered, unreachable) that view_agents lets the caller see. */
export function drydockAgents(q: Queries, rights: DrydockRights | undefined): { agents: Array<Record<string, unknown>> } {
  const agents: Array<Record<string, unknown>> = [];
  for (const e of q.agents()) if (maySee(e, rights)) agents.push(drydockAgentJson(e, q, machineSight(e, q, rights)));
  return { agents };
}

/**
 * `GET /drydock/v1/agents/<id>`: the agent, or undefined when the master has no such agent or
 * the caller may not see it (the same 404 either way: a principal limited to some agents learns
 * nothing of the others, as GET_AGENTS leaves them out).
 */
export function drydockAgent(q: Queries, agentId: string, rights: DrydockRights | undefined): Record<string, unknown> | undefined {
  const e = q.agent(agentId);
  return e === undefined || !maySee(e, rights) ? undefined : drydockAgentJson(e, q, machineSight(e, q, rights));
}

/**
 * The operator API v1's answers (reference/mesos-api.md §1): the decoders of the calls'
 * sub-messages and the JSON views (GET_STATE, GET_AGENTS, GET_TASKS, GET_FRAMEWORKS,
 * GET_MASTER, VersionInfo) the table's rows (calls.ts) answer with, read through the queries
 * port. The same renderers serve the operator event stream (operator-stream.ts).
 */

import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DrydockError, fail } from '../../shared/errors.js';
import { AGENT_CALL, decodeMessage, DRAIN_AGENT_CALL, FRAMEWORK_ID, kindOf, message, required } from '../../shared/proto.js';
import { isTerminal, type AgentInfo, type Resource, type Task } from '../../shared/mesos.js';
import { addResources, toEndpointFormat } from '../../shared/resources.js';
import { DRYDOCK_VERSION, MESOS_API_VERSION } from '../../shared/version.js';
import type { AgentEntry } from '../cores/agents.js';
import { parseMaxGracePeriod, type DrainConfig } from '../../shared/drain.js';
import { drainInfoJson } from '../cores/drain.js';
import type { FrameworkEntry } from '../cores/frameworks.js';
import type { Queries } from '../term/queries.js';
import type { Decoded } from './row.js';
import type { OperatorCall } from './operator-call.js';
import { frameworkPrincipal } from '../cores/frameworks.js';
import { agentEntryObject } from '../security/acl-objects.js';
import { frameworkUser, taskUser, visible, type Approve, type ViewRights } from '../../shared/visibility.js';

// ---- Decoders of the calls' sub-messages (the table's v1 ways) -----------------------------------

/** DEACTIVATE_AGENT, REACTIVATE_AGENT, MARK_AGENT_GONE: the sub-message's `agent_id.value` (stout's error: `Missing required fields: mark_agent_gone.agent_id`). */
export function agentCall(call: OperatorCall, subName: string): Decoded<string> {
  const decoded = decodeMessage<{ agent_id: { value: string } }>(AGENT_CALL, call.body[subName], subName);
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  return { ok: true, value: decoded.value.agent_id.value };
}

/**
 * DRAIN_AGENT's input: the agent, and its config as read (a bad `max_grace_period` is answered
 * only once drain_agents is allowed: the config is read after the agent is authorized).
 */
export interface DrainInput {
  readonly agentId: string;
  readonly config: Decoded<DrainConfig>;
}

/** DRAIN_AGENT: `drain_agent.agent_id` (converted as the Call is), and the config (parseDrainConfig). */
export function drainCall(call: OperatorCall): Decoded<DrainInput> {
  const decoded = decodeMessage<{ agent_id: { value: string } } & Record<string, unknown>>(DRAIN_AGENT_CALL, call.body['drain_agent'], 'drain_agent');
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  const parsed = parseDrainConfig(decoded.value);
  return { ok: true, value: { agentId: decoded.value.agent_id.value, config: parsed.ok ? { ok: true, value: parsed.config } : parsed } };
}

/** DRAIN_AGENT's config: `max_grace_period` (Duration, or "10mins"), `mark_gone` (bool or "true"/"false"). */
export function parseDrainConfig(sub: Record<string, unknown>): { ok: true; config: DrainConfig } | { ok: false; error: DrydockError } {
  const grace = parseMaxGracePeriod(sub['max_grace_period']);
  if (!grace.ok) return { ok: false, error: fail('DRAIN_CALL_INVALID', grace.error) };
  const mg = sub['mark_gone'];
  let markGone: boolean;
  if (mg === undefined) markGone = false;
  else if (typeof mg === 'boolean') markGone = mg;
  else if (mg === 'true' || mg === 'false') markGone = mg === 'true';
  else return { ok: false, error: fail('DRAIN_CALL_INVALID', `Not expecting a JSON ${kindOf(mg)} for field 'mark_gone'`) };
  return { ok: true, config: { maxGracePeriodNs: grace.ns, markGone } };
}

const TEARDOWN_CALL = message('Call.Teardown', () => ({ framework_id: required(FRAMEWORK_ID) }));

/** The operator's TEARDOWN: `teardown.framework_id.value`. */
export function teardownCall(call: OperatorCall): Decoded<string> {
  const decoded = decodeMessage<{ framework_id: { value: string } }>(TEARDOWN_CALL, call.body['teardown'], 'teardown');
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  return { ok: true, value: decoded.value.framework_id.value };
}

/**
 * The principal TEARDOWN is authorized on: the framework's (teardown_frameworks). An unknown
 * framework, or one without a principal, is an unknown object that only ANY entries match, so a
 * principal limited to some frameworks learns nothing.
 */
export function frameworkOwner(q: Queries, frameworkId: string): string | undefined {
  const entry = q.framework(frameworkId);
  return entry === undefined ? undefined : frameworkPrincipal(entry.info);
}

// ---- Answers ---------------------------------------------------------------------------------

/** When dist was built: the mtime of this compiled file (there is no build step that stamps it). */
const BUILT = ((): Date | undefined => {
  try {
    return statSync(fileURLToPath(import.meta.url)).mtime;
  } catch {
    return undefined;
  }
})();

/** Mesos VersionInfo; `version` is the Mesos API Drydock speaks, git_tag names the Drydock release. */
export function versionInfo(): Record<string, unknown> {
  const info: Record<string, unknown> = { version: MESOS_API_VERSION };
  if (BUILT !== undefined) {
    info['build_date'] = BUILT.toISOString().replace('T', ' ').slice(0, 19);
    info['build_time'] = Math.floor(BUILT.getTime() / 1000);
  }
  info['git_tag'] = `drydock-${DRYDOCK_VERSION}`;
  return info;
}

export function getMaster(q: Queries): Record<string, unknown> {
  const m = q.master();
  const j: Record<string, unknown> = {
    master_info: m.info,
    start_time: m.startMs / 1000,
    elected_time: m.electedMs / 1000,
  };
  // Drydock: with HA, the standbys this leader knows (their MasterInfo), as the election lists them.
  const others = m.others;
  if (others.length > 0) j['standby_masters'] = others;
  return j;
}

/**
 * AgentInfo as agent_info / recovered_agents write it: resources without a role. Exactly
 * mesos.v1.AgentInfo (Mesos' agent checkpoints always, but AgentInfo has no field that says so).
 */
function agentInfo(e: AgentEntry): AgentInfo {
  return {
    hostname: e.info.hostname,
    port: e.info.port,
    resources: e.info.resources,
    attributes: e.info.attributes,
    id: { value: e.id },
  };
}

function allocated(e: AgentEntry): Resource[] {
  let sum: Resource[] = [];
  for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) sum = addResources(sum, t.resources);
  return sum;
}

/**
 * One Agent as GET_AGENTS writes it (also the operator stream's AGENT_ADDED): exactly
 * GetAgents.Agent. What Drydock knows beyond it (the machine's mode and window, the drain
 * record) is Drydock's own agent view (drydock.ts, `GET /drydock/v1/agents`).
 */
export function agentJson(e: AgentEntry, q?: Queries): Record<string, unknown> {
  const a: Record<string, unknown> = {
    agent_info: agentInfo(e),
    active: e.connected && !e.deactivated,
    deactivated: e.deactivated,
    version: e.version,
    pid: `slave(1)@${e.info.ip}:${e.info.port}`,
    registered_time: { nanoseconds: e.registeredTimeNs },
  };
  if (e.reregisteredTimeNs !== undefined) a['reregistered_time'] = { nanoseconds: e.reregisteredTimeNs };
  a['total_resources'] = toEndpointFormat(e.info.resources);
  a['allocated_resources'] = toEndpointFormat(allocated(e));
  a['offered_resources'] = q === undefined ? [] : toEndpointFormat(q.offeredOnAgent(e.id));
  a['capabilities'] = e.capabilities.map((type) => ({ type }));
  if (e.drain !== undefined) {
    a['drain_info'] = drainInfoJson(e.drain);
    if (e.drain.estimatedStartNs !== undefined) a['estimated_drain_start_time'] = { nanoseconds: e.drain.estimatedStartNs };
  }
  return a;
}

/**
 * GET_STATE's `get_state` (also the operator stream's SUBSCRIBED snapshot): the four
 * sub-objects in Mesos' order, each filtered by its view ACL when `rights` is given.
 */
export function getState(q: Queries, rights?: ViewRights): Record<string, unknown> {
  return { get_tasks: getTasks(q, rights), get_executors: { executors: [] }, get_frameworks: getFrameworks(q, rights), get_agents: getAgents(q, rights) };
}

/** GET_AGENTS: the agents view_agents lets the caller see (all of them without `rights`). */
export function getAgents(q: Queries, rights?: ViewRights): { agents: unknown[]; recovered_agents: unknown[] } {
  const agents: unknown[] = [];
  const recovered: unknown[] = [];
  const may = rights?.agents;
  for (const e of q.agents()) {
    if (e.phase !== 'REGISTERED' && e.phase !== 'RECOVERED') continue;
    if (may !== undefined && !may(agentEntryObject(e))) continue;
    if (e.phase === 'REGISTERED') agents.push(agentJson(e, q));
    else recovered.push(agentInfo(e));
  }
  return { agents, recovered_agents: recovered };
}

/** The user of a known or completed framework, by id; looked up once per id for a whole answer. */
function frameworkUsers(q: Queries): (frameworkId: string) => string | undefined {
  const cache = new Map<string, string | undefined>();
  return (id) => {
    if (cache.has(id)) return cache.get(id);
    const user = frameworkUser(q.frameworkEver(id)?.info);
    cache.set(id, user);
    return user;
  };
}

/** GET_TASKS: the tasks view_tasks lets the caller see, by their user, else their framework's. */
export function getTasks(q: Queries, rights?: ViewRights): { tasks: Task[]; unreachable_tasks: Task[]; completed_tasks: Task[] } {
  const tasks: Task[] = [];
  const unreachable: Task[] = [];
  const may = rights?.tasks;
  const users = may === undefined ? undefined : frameworkUsers(q);
  const sees = (t: Task): boolean => may === undefined || may(taskUser(t, users?.(t.framework_id.value)));
  for (const e of q.agents()) {
    if (e.tasks === undefined) continue;
    for (const t of e.tasks.values()) {
      if (!sees(t)) continue;
      if (e.phase === 'UNREACHABLE' && !isTerminal(t.state)) unreachable.push({ ...t, state: 'TASK_UNREACHABLE' });
      else tasks.push(t);
    }
  }
  return { tasks, unreachable_tasks: unreachable, completed_tasks: may === undefined ? [...q.completedTasks()] : q.completedTasks().filter(sees) };
}

/**
 * GET_FRAMEWORKS: the frameworks view_frameworks lets the caller see, by their user; in each,
 * the offers and inverse offers of agents view_agents lets it see.
 */
export function getFrameworks(q: Queries, rights?: ViewRights): { frameworks: unknown[]; completed_frameworks: unknown[] } {
  const may = rights?.frameworks;
  const userOf = (f: FrameworkEntry): string | undefined => frameworkUser(f.info);
  const agents = offerAgents(q, rights?.agents);
  const frameworks = visible([...q.frameworks()], may, userOf).map((f) => frameworkEntryJson(q, f, agents));
  const completed = visible(q.completedFrameworks(), may, userOf).map((f) => frameworkEntryJson(q, f, agents));
  return { frameworks, completed_frameworks: completed };
}

/**
 * Which agents' offers the caller may see: an offer names its agent (id, hostname, address,
 * attributes, the machine's resources), so it is shown only to a caller view_agents lets see
 * that agent, decided on the same object as GET_AGENTS. Undefined without ACLs (all of them).
 * An agent the master no longer has is an unknown object. Each agent is decided once per answer.
 */
function offerAgents(q: Queries, may: Approve | undefined): ((agentId: string) => boolean) | undefined {
  if (may === undefined) return undefined;
  const decided = new Map<string, boolean>();
  return (agentId) => {
    let ok = decided.get(agentId);
    if (ok === undefined) decided.set(agentId, (ok = may(q.agentObject(agentId))));
    return ok;
  };
}

/**
 * One Framework as GET_FRAMEWORKS writes it, for a known or completed framework id (the
 * operator stream's FRAMEWORK_ADDED / FRAMEWORK_UPDATED); undefined for an id never seen.
 * With `mayViewAgent` (view_agents of the caller), only the offers of agents it may see.
 */
export function frameworkJson(q: Queries, frameworkId: string, mayViewAgent?: Approve): Record<string, unknown> | undefined {
  const entry = q.frameworkEver(frameworkId);
  return entry === undefined ? undefined : frameworkEntryJson(q, entry, offerAgents(q, mayViewAgent));
}

function frameworkEntryJson(q: Queries, f: FrameworkEntry, agentVisible: ((agentId: string) => boolean) | undefined): Record<string, unknown> {
  const removed = q.frameworkRemoved(f.id);
  let offers = removed ? [] : q.offers(f.id);
  let inverseOffers = removed ? [] : q.inverseOffers(f.id);
  if (agentVisible !== undefined) {
    offers = offers.filter((o) => agentVisible(o.agentId));
    inverseOffers = inverseOffers.filter((o) => agentVisible(o.agentId));
  }
  // Of the offers shown: the resources of agents the caller may not see are not summed either.
  let offered: Resource[] = [];
  for (const o of offers) offered = addResources(offered, o.resources);
  const j: Record<string, unknown> = {
    framework_info: f.info,
    active: f.phase === 'CONNECTED' && !removed,
    connected: f.phase === 'CONNECTED' && !removed,
    recovered: f.phase === 'RECOVERED',
  };
  if (f.registeredTimeNs !== undefined) j['registered_time'] = { nanoseconds: f.registeredTimeNs };
  if (f.reregisteredTimeNs !== undefined) j['reregistered_time'] = { nanoseconds: f.reregisteredTimeNs };
  if (f.unregisteredTimeNs !== undefined) j['unregistered_time'] = { nanoseconds: f.unregisteredTimeNs };
  j['offers'] = offers.map((o) => q.offerJson(o));
  j['inverse_offers'] = inverseOffers.map((o) => q.inverseOfferJson(o));
  j['allocated_resources'] = removed ? [] : toEndpointFormat(q.allocatedTo(f.id));
  j['offered_resources'] = toEndpointFormat(offered);
  return j;
}

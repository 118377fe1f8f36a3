/**
 * The master operator API v1 (`POST /api/v1`): framing and parsing in the exact order of
 * Mesos' `Master::Http::api` (reference/mesos-api.md §0.3), and the JSON answers (§1).
 * Framing and parsing are pure functions of the request; answers read the master's state.
 */

import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { type DrydockError, fail } from '../../shared/errors.js';
import { acceptsJson } from '../../shared/http.js';
import { AGENT_CALL, callMessage, decodeCall, decodeMessage, DRAIN_AGENT_CALL, FRAMEWORK_ID, kindOf, message, required, type CallSpec } from '../../shared/proto.js';
import { isTerminal, type AgentInfo, type Resource, type Task } from '../../shared/mesos.js';
import { addResources, toEndpointFormat } from '../../shared/resources.js';
import { DRYDOCK_VERSION, MESOS_API_VERSION } from '../../shared/version.js';
import type { AgentEntry } from '../cores/agents.js';
import { parseMaxGracePeriod, type DrainConfig } from '../../shared/drain.js';
import { drainInfoJson, drainRecordJson } from '../cores/drain.js';
import type { FrameworkEntry } from '../cores/frameworks.js';
import type { Queries } from '../term/queries.js';
import type { EdgePorts } from '../term/ports.js';
import type { AclAction } from '../../shared/acls.js';
import type { Access } from '../security/security.js';
import { describeObject } from '../../shared/acls.js';
import { frameworkPrincipal } from '../cores/frameworks.js';
import { agentEntryObject } from '../security/acl-objects.js';
import { frameworkUser, taskUser, viewRights, visible, type Approve, type ViewRights } from '../../shared/visibility.js';

/** Every master::Call type Mesos 1.12 knows. Names outside this list are dropped by the parser, like Mesos' optional enum. */
export const CALL_TYPES = [
  'UNKNOWN', 'GET_HEALTH', 'GET_FLAGS', 'GET_VERSION', 'GET_METRICS', 'GET_LOGGING_LEVEL', 'SET_LOGGING_LEVEL',
  'LIST_FILES', 'READ_FILE', 'GET_STATE', 'GET_AGENTS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_OPERATIONS',
  'GET_TASKS', 'GET_ROLES', 'GET_WEIGHTS', 'UPDATE_WEIGHTS', 'GET_MASTER', 'SUBSCRIBE', 'RESERVE_RESOURCES',
  'UNRESERVE_RESOURCES', 'CREATE_VOLUMES', 'DESTROY_VOLUMES', 'GROW_VOLUME', 'SHRINK_VOLUME',
  'GET_MAINTENANCE_STATUS', 'GET_MAINTENANCE_SCHEDULE', 'UPDATE_MAINTENANCE_SCHEDULE', 'START_MAINTENANCE',
  'STOP_MAINTENANCE', 'DRAIN_AGENT', 'DEACTIVATE_AGENT', 'REACTIVATE_AGENT', 'GET_QUOTA', 'UPDATE_QUOTA',
  'SET_QUOTA', 'REMOVE_QUOTA', 'TEARDOWN', 'MARK_AGENT_GONE',
] as const;

export type CallType = (typeof CALL_TYPES)[number];

/** Calls whose sub-message validation requires (`Expecting '<sub>' to be present`). */
const REQUIRED_SUB: Record<string, string> & Partial<Record<CallType, string>> = {
  GET_METRICS: 'get_metrics',
  SET_LOGGING_LEVEL: 'set_logging_level',
  LIST_FILES: 'list_files',
  READ_FILE: 'read_file',
  UPDATE_WEIGHTS: 'update_weights',
  RESERVE_RESOURCES: 'reserve_resources',
  UNRESERVE_RESOURCES: 'unreserve_resources',
  CREATE_VOLUMES: 'create_volumes',
  DESTROY_VOLUMES: 'destroy_volumes',
  GROW_VOLUME: 'grow_volume',
  SHRINK_VOLUME: 'shrink_volume',
  UPDATE_MAINTENANCE_SCHEDULE: 'update_maintenance_schedule',
  START_MAINTENANCE: 'start_maintenance',
  STOP_MAINTENANCE: 'stop_maintenance',
  DRAIN_AGENT: 'drain_agent',
  DEACTIVATE_AGENT: 'deactivate_agent',
  REACTIVATE_AGENT: 'reactivate_agent',
  UPDATE_QUOTA: 'update_quota',
  SET_QUOTA: 'set_quota',
  REMOVE_QUOTA: 'remove_quota',
  TEARDOWN: 'teardown',
  MARK_AGENT_GONE: 'mark_agent_gone',
};

/** A parsed, validated call: its type and the whole JSON object (sub-messages are read by each call). */
export interface OperatorCall {
  type: CallType;
  body: Record<string, unknown>;
}

/** Largest request body accepted (a maintenance schedule for thousands of machines fits). */
export const MAX_API_BODY_BYTES = 4 * 1024 * 1024;

/** master::Call, with every sub-message validation may require. */
const OPERATOR_CALL: CallSpec<CallType> = {
  message: callMessage('master.Call', CALL_TYPES, Object.values(REQUIRED_SUB)),
  requiredSub: REQUIRED_SUB,
  invalid: 'CALL_INVALID',
};

/** Checks 6 to 9 of §0.3 on the body: parse, convert, validate (shared/proto.ts decodeCall), Accept, UNKNOWN. */
export function parseApiCall(text: string, accept: string | undefined): { ok: true; call: OperatorCall } | { ok: false; error: DrydockError } {
  const decoded = decodeCall<CallType, { type?: CallType } & Record<string, unknown>>(text, OPERATOR_CALL);
  if (!decoded.ok) return decoded;
  if (!acceptsJson(accept)) return { ok: false, error: fail('NOT_ACCEPTABLE') };
  if (decoded.type === 'UNKNOWN') return { ok: false, error: fail('NOT_IMPLEMENTED', decoded.type) };
  return { ok: true, call: { type: decoded.type, body: decoded.body } };
}

// ---- Answers -----------------------------------------------------------------------------

/** A successful answer: a JSON value (written with exact int64s), or an empty 200 body. */
export type CallAnswer = { ok: true; json: unknown } | { ok: false; error: DrydockError };

/**
 * Answers a validated call from the master's state. Calls that change durable state answer
 * once the registry has the change (a promise); the others at once.
 */
export function answerCall(term: EdgePorts, call: OperatorCall, access: Access): CallAnswer | Promise<CallAnswer> {
  switch (call.type) {
    case 'DRAIN_AGENT':
    case 'DEACTIVATE_AGENT':
    case 'REACTIVATE_AGENT':
    case 'MARK_AGENT_GONE':
      return answerAgentCall(term, call, access);
    case 'GET_HEALTH':
      return ok({ type: 'GET_HEALTH', get_health: { healthy: true } });
    case 'GET_VERSION':
      return ok({ type: 'GET_VERSION', get_version: { version_info: versionInfo() } });
    case 'GET_FLAGS': {
      // view_flags has no object: a principal sees all the flags or none (Mesos).
      const refused = access.check('view_flags', undefined);
      if (refused !== undefined) return { ok: false, error: refused };
      return ok({ type: 'GET_FLAGS', get_flags: { flags: term.queries.flags().map((f) => ({ name: f.name, value: f.value })) } });
    }
    case 'GET_MASTER':
      return ok({ type: 'GET_MASTER', get_master: getMaster(term.queries) });
    case 'GET_AGENTS':
      return ok({ type: 'GET_AGENTS', get_agents: getAgents(term.queries, viewRights(access)) });
    case 'GET_TASKS':
      return ok({ type: 'GET_TASKS', get_tasks: getTasks(term.queries, viewRights(access)) });
    case 'GET_FRAMEWORKS':
      return ok({ type: 'GET_FRAMEWORKS', get_frameworks: getFrameworks(term.queries, viewRights(access)) });
    case 'GET_EXECUTORS':
      return ok({ type: 'GET_EXECUTORS', get_executors: { executors: [] } });
    case 'GET_STATE':
      return ok({ type: 'GET_STATE', get_state: getState(term.queries, viewRights(access)) });
    case 'TEARDOWN':
      return teardown(term, call, access);
    default:
      return { ok: false, error: fail('NOT_IMPLEMENTED', call.type) };
  }
}

// ---- Draining and deactivation (reference §1) ---------------------------------------------------

/** The sub-message's `agent_id.value`, or stout's error (`Missing required fields: drain_agent.agent_id`). */
function agentIdOf(call: OperatorCall, subName: string): { ok: true; id: string; sub: Record<string, unknown> } | { ok: false; error: DrydockError } {
  const decoded = decodeMessage<{ agent_id: { value: string } } & Record<string, unknown>>(call.type === 'DRAIN_AGENT' ? DRAIN_AGENT_CALL : AGENT_CALL, call.body[subName], subName);
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  return { ok: true, id: decoded.value.agent_id.value, sub: decoded.value };
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

/** The ACL action of each agent call (Mesos' names). */
const AGENT_CALL_ACTIONS = {
  DRAIN_AGENT: 'drain_agents',
  DEACTIVATE_AGENT: 'deactivate_agents',
  REACTIVATE_AGENT: 'reactivate_agents',
  MARK_AGENT_GONE: 'mark_agents_gone',
} as const satisfies Partial<Record<CallType, AclAction>>;

async function answerAgentCall(term: EdgePorts, call: OperatorCall, access: Access): Promise<CallAnswer> {
  const subName = call.type.toLowerCase();
  const id = agentIdOf(call, subName);
  if (!id.ok) return { ok: false, error: id.error };
  const sub = id.sub;
  // Authorization comes before any lookup answer (as in Mesos): an unknown agent is an unknown
  // object, which only ANY/NONE entries match, so a principal limited to some machines learns nothing.
  const object = term.queries.agentObject(id.id) ?? { agentId: id.id };
  const refused = access.check(AGENT_CALL_ACTIONS[call.type as keyof typeof AGENT_CALL_ACTIONS], object);
  if (refused !== undefined) return { ok: false, error: refused };
  let error: DrydockError | undefined;
  switch (call.type) {
    case 'DRAIN_AGENT': {
      const parsed = parseDrainConfig(sub);
      if (!parsed.ok) return { ok: false, error: parsed.error };
      // mark_gone also needs the right to mark the agent gone (Mesos).
      if (parsed.config.markGone) {
        const gone = access.check('mark_agents_gone', object);
        if (gone !== undefined) return { ok: false, error: gone };
        access.note('drain_agents', describeObject(object));
      }
      error = await term.commands.drainAgent(id.id, parsed.config);
      break;
    }
    case 'DEACTIVATE_AGENT':
      error = await term.commands.deactivateAgent(id.id);
      break;
    case 'REACTIVATE_AGENT':
      error = await term.commands.reactivateAgent(id.id);
      break;
    default:
      error = await term.commands.markAgentGone(id.id);
  }
  return error === undefined ? { ok: true, json: undefined } : { ok: false, error };
}

function ok(json: unknown): CallAnswer {
  return { ok: true, json };
}

// ---- TEARDOWN (reference §1) ------------------------------------------------------------------

const TEARDOWN_CALL = message('Call.Teardown', () => ({ framework_id: required(FRAMEWORK_ID) }));

/**
 * The operator's TEARDOWN: removes a framework (its tasks are killed), answered 200 once
 * durable. Authorized by teardown_frameworks on the framework's principal before the lookup
 * answers (as the agent calls): an unknown framework, or one without a principal, is an unknown
 * object that only ANY entries match, so a principal limited to some frameworks learns nothing.
 */
async function teardown(term: EdgePorts, call: OperatorCall, access: Access): Promise<CallAnswer> {
  const decoded = decodeMessage<{ framework_id: { value: string } }>(TEARDOWN_CALL, call.body['teardown'], 'teardown');
  if (!decoded.ok) return { ok: false, error: fail('BODY_NOT_CALL', decoded.error) };
  const id = decoded.value.framework_id.value;
  const entry = term.queries.framework(id);
  const owner = entry === undefined ? undefined : frameworkPrincipal(entry.info);
  const refused = access.check('teardown_frameworks', owner);
  access.note('teardown_frameworks', owner === undefined ? `framework ${id}` : `framework ${id} of '${owner}'`);
  if (refused !== undefined) return { ok: false, error: refused };
  if (entry === undefined) return { ok: false, error: fail('FRAMEWORK_UNKNOWN') };
  const refusedByService = await term.commands.teardownFramework(id);
  return refusedByService === undefined ? { ok: true, json: undefined } : { ok: false, error: refusedByService };
}

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

function getMaster(q: Queries): Record<string, unknown> {
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

/** AgentInfo as agent_info / recovered_agents write it: resources without a role, checkpoint:true. */
function agentInfo(e: AgentEntry): AgentInfo & { checkpoint: boolean } {
  return {
    hostname: e.info.hostname,
    port: e.info.port,
    resources: e.info.resources,
    attributes: e.info.attributes,
    id: { value: e.id },
    checkpoint: true,
  };
}

function allocated(e: AgentEntry): Resource[] {
  let sum: Resource[] = [];
  for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) sum = addResources(sum, t.resources);
  return sum;
}

/** One Agent as GET_AGENTS writes it (also the operator stream's AGENT_ADDED). */
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
    // Beyond Mesos: what the drain is waiting for (master/drain.ts drainRecordJson).
    if (q !== undefined) a['drain_record'] = drainRecordJson({ ...q.drainView(e), drain: e.drain }, q.nowMs());
  }
  // Drydock's addition (extra fields are fine for Mesos clients): the machine's mode and window.
  if (q !== undefined) a['maintenance'] = q.agentMaintenance(e.id);
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
function getAgents(q: Queries, rights?: ViewRights): { agents: unknown[]; recovered_agents: unknown[] } {
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
function getTasks(q: Queries, rights?: ViewRights): { tasks: Task[]; unreachable_tasks: Task[]; completed_tasks: Task[] } {
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
function getFrameworks(q: Queries, rights?: ViewRights): { frameworks: unknown[]; completed_frameworks: unknown[] } {
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

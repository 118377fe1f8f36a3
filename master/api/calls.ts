/**
 * THE table of calls of the master's HTTP edge: one row per operation, whether an operator v1
 * call (`POST /api/v1` by `type`), a Mesos legacy endpoint, or Drydock's own. A row says:
 *  - its name, and how it is reached: its v1 `type` and/or its HTTP ways in (methods and paths,
 *    the `/master/` alias included), each way with its decoder (a v1 call's sub-message, or the
 *    body / path / query of a legacy endpoint -> the row's typed input, or the error to answer);
 *  - its access: the realm it is authenticated in, and whether it only reads or writes
 *    (`read`: mesos-master-readonly; `write`: mesos-master-readwrite, one audit line per call;
 *    `framework`: mesos-master-scheduler; an HTTP way may be `open`: no credentials at all);
 *  - its ACL: the actions, how the object is derived (or that the answer is filtered), and the
 *    check run before the handler;
 *  - its handler: typed input, the queries and commands ports and the caller -> an answer value
 *    (or the error, or the bytes of a stream).
 * Routing, authentication, authorization, the read-only check, audit, encoding and the error
 * mapping are derived from these rows in one place (dispatch.ts); no handler decides them. A
 * legacy endpoint and its v1 call are one row with two ways in (`POST /machine/down` and
 * START_MAINTENANCE). The calls Mesos has that Drydock does not answer are derived too (501).
 *
 * How to add an operator call: a row here (its decoder and handler next to the answers it
 * shares, operator.ts, maintenance.ts, plans.ts), and a command or query in term/ if it needs
 * one the ports do not have yet. A second encoding is a codec (codecs.ts), not a row.
 *
 * The router (process/router.ts) keeps only what is not a call: the agents' WebSocket upgrade,
 * the console's static files, and the 307/503 of every term route while no term runs.
 */

import { describeObject, type AclAction, type AclObject } from '../../shared/acls.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { MachineId } from '../../shared/machine.js';
import { viewRights } from '../../shared/visibility.js';
import type { KeyedSchedule } from '../cores/maintenance.js';
import type { AuthorizePlan } from '../term/commands.js';
import type { Queries } from '../term/queries.js';
import { machinesFromBody, machinesFromCall, machineWarnings, mayChangeSchedule, scheduleFromBody, scheduleFromCall, scheduleMachines, scheduleView, statusView } from './maintenance.js';
import { CALL_TYPES, type CallType } from './operator-call.js';
import { agentCall, drainCall, frameworkOwner, getAgents, getFrameworks, getMaster, getState, getTasks, teardownCall, versionInfo, type DrainInput } from './operator.js';
import { authorizePlanCreation, createPlan, deletePlan, hookNeededCheck, planCheck, planCheckLater, planNamesView, planRead, planTarget, planVerb, type PlanTarget } from './plans.js';
import { below, exactPaths, ok, outcome, refusal, value, warned, withMasterAlias, type Acl, type Decoded, type HttpRequest, type Row, type V1Way } from './row.js';
import { flagsModel, frameworksAnswer, getMetrics, getRoles, idFilter, legacyCaller, metricsCall, rolesView, slavesAnswer, stateAnswer, stateSummaryAnswer, tasksAnswer, tasksQuery, type TasksQuery } from './legacy.js';
import { preview, previewCheck, previewFromBody, type PreviewInput } from './preview.js';
import { handleSchedulerRequest, SCHEDULER_PATHS } from './scheduler.js';
import { DRYDOCK_V1, drydockAgent, drydockAgents, drydockRights } from './drydock.js';

/** A row of the table, its input and deferred decision types erased (each is checked where the row is written). */
function row<I = undefined, L = undefined>(r: Row<I, L>): Row {
  return r as unknown as Row;
}

/** No ACL: anyone the realm lets in. */
const NO_ACL = { actions: [], object: 'none' } as const;

/** An answer filtered by view ACLs, object by object, in its handler (views never 403). */
function filtered<I = never>(actions: readonly AclAction[], object: string): Acl<I, undefined> {
  return { actions, object: `filtered answer: ${object}` };
}

/** One action on one object derived from the input. */
function onObject<I>(action: AclAction, object: string, of: (input: I, q: Queries) => AclObject): Acl<I, undefined> {
  return { actions: [action], object, check: (input, { access, queries }) => access.check(action, of(input, queries)) };
}

/** One action on every object of a list (all must be allowed: the first refusal is answered). */
function onAll<I>(action: AclAction, object: string, of: (input: I, q: Queries) => readonly AclObject[]): Acl<I, undefined> {
  return { actions: [action], object, check: (input, { access, queries }) => access.checkAll(action, of(input, queries)) };
}

/** What the legacy state endpoints filter by: as GET_STATE, plus the flags and the roles of reservations. */
const LEGACY_VIEWS: readonly AclAction[] = ['view_tasks', 'view_frameworks', 'view_agents', 'view_flags', 'view_roles'];

/** The verbs of libprocess' files process. */
const FILE_VERBS: ReadonlySet<string> = new Set(['browse', 'read', 'download', 'debug']);

/** A request of the master's files API: the verb and the path asked for. */
interface FileRequest {
  readonly verb: string;
  readonly path: string;
}

/**
 * `/files/<verb>?path=...` of the master, read as libprocess reads it: a path is required
 * (but for debug), and `/files/read`'s `offset` and `length` must be integers of -1 or more.
 */
function masterFilesRequest(r: HttpRequest): Decoded<FileRequest> {
  const verb = r.below[0] as string;
  const params = new URLSearchParams(r.query);
  const path = params.get('path') ?? '';
  if (verb === 'debug') return ok({ verb, path });
  if (path === '') return { ok: false, error: fail('FILES_PATH_MISSING') };
  if (verb === 'read') {
    for (const name of ['offset', 'length']) {
      const v = params.get(name);
      if (v !== null && !/^(-1|[0-9]{1,15})$/.test(v)) return { ok: false, error: fail('QUERY_PARAMETER_INVALID', name, v, 'an integer of -1 or more') };
    }
  }
  return ok({ verb, path });
}

/** A machine list's ACL objects. */
const machineObjects = (ids: readonly MachineId[], q: Queries): AclObject[] => ids.map((id) => q.machineObject(id));

// ---- The paths of the edges ------------------------------------------------------------------

/** The operator API v1 (libprocess delegation and the DC/OS prefix). */
export const V1_PATHS: ReadonlySet<string> = new Set(['/api/v1', '/master/api/v1', '/mesos/api/v1']);
const PLANS = ['v1', 'maintenance', 'plans'] as const;
const PLANS_DESCRIBED = '/v1/maintenance/plans';
const DRYDOCK_AGENTS_PATH = `/${DRYDOCK_V1.join('/')}/agents`;

/** Who sees what of Drydock's agents: as GET_AGENTS, GET_MAINTENANCE_STATUS and GET_MAINTENANCE_SCHEDULE decide the same facts. */
const DRYDOCK_AGENT_ACL = {
  actions: ['view_agents', 'get_maintenance_statuses', 'get_maintenance_schedules'],
  object: "filtered answer: each agent by view_agents; its machine's mode by get_maintenance_statuses, its window by get_maintenance_schedules",
} as const;

// ---- The rows ----------------------------------------------------------------------------------

/**
 * Every row, in routing order (the first row whose way takes the method and path answers it). v1
 * calls are found by type; the 501 rows for the calls Mesos has and Drydock does not answer are
 * appended by `notAnswered`.
 */
const ROWS: readonly Row[] = [
  // ---- The process: answered by every master, leading or not ----
  row({
    name: 'GET_HEALTH',
    summary: 'Whether the master answers (load balancers ask /health).',
    access: 'read',
    v1: { type: 'GET_HEALTH' },
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/health'), process: true, open: true, answer: 'empty' }],
    acl: NO_ACL,
    handle: () => value({ healthy: true }),
  }),
  row({
    name: 'GET_VERSION',
    summary: 'The Mesos API version Drydock speaks and its own release.',
    access: 'read',
    v1: { type: 'GET_VERSION', field: 'version_info' },
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/version'), process: true, open: true, answer: 'jsonp' }],
    acl: NO_ACL,
    handle: () => value(versionInfo()),
  }),
  row({
    name: 'REDIRECT',
    summary: "307 to the leading master's base URL, as it advertises itself (never the request's Host).",
    access: 'open',
    http: [{ methods: 'ANY', paths: withMasterAlias('/redirect'), process: true, open: true }],
    acl: NO_ACL,
    handle: (_input, { process }) => {
      const leader = process.leader();
      if (leader === undefined) return refusal(process.unavailable());
      return {
        kind: 'raw',
        write: (res) => {
          res.writeHead(307, { Location: `//${leader}`, 'Content-Length': 0 });
          res.end();
        },
      };
    },
  }),
  row<'/metrics' | '/metrics/snapshot'>({
    name: 'METRICS',
    summary: 'This master\'s figures in Prometheus text (every master answers for itself, leading or not).',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: exactPaths('/metrics'), process: true, decode: () => ok('/metrics') }],
    present: (p) => p.metrics !== undefined,
    acl: onObject('get_endpoints', 'the endpoint path (Mesos GET_ENDPOINT_WITH_PATH): /metrics', (path) => path),
    handle: (_path, { process }) => ({ kind: 'raw', write: (res) => process.metrics?.sendPrometheus(res) }),
  }),
  row<'/metrics' | '/metrics/snapshot'>({
    name: 'METRICS_SNAPSHOT',
    summary: "This master's figures with Mesos' flat keys.",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: exactPaths('/metrics/snapshot', '/master/metrics/snapshot'), process: true, answer: 'jsonp', decode: () => ok('/metrics/snapshot') }],
    present: (p) => p.metrics !== undefined,
    acl: onObject('get_endpoints', 'the endpoint path: /metrics/snapshot (also under /master/)', (path) => path),
    handle: (_path, { process }) => value(process.metrics?.snapshotJson() ?? {}),
  }),
  row({
    name: 'FLAGS',
    summary: "This master's flags as `{flags: {name: value}}` (every master answers for itself, leading or not, as Mesos).",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/flags'), process: true, answer: 'jsonp' }],
    acl: { actions: ['view_flags'], object: 'none (all the flags or none)', check: (_input, { access }) => access.check('view_flags', undefined) },
    handle: (_input, { process }) => value({ flags: flagsModel(process.flags?.() ?? []) }),
  }),
  row<FileRequest>({
    name: 'MASTER_FILES',
    summary: "The master's files API: nothing is attached (it logs to journald), so every path is 404; /files/debug is {}.",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: below(['files'], (s) => s.length === 1 && FILE_VERBS.has(s[0] as string), '/files/browse, /files/read, /files/download, /files/debug'), process: true, answer: 'jsonp', decode: masterFilesRequest }],
    acl: {
      actions: ['get_endpoints'],
      object: '/files/debug: the endpoint path; the other verbs: none (no file is attached, none is served)',
      check: (r, { access }) => (r.verb === 'debug' ? access.check('get_endpoints', '/files/debug') : undefined),
    },
    handle: (r) => (r.verb === 'debug' ? value({}) : refusal(fail('MASTER_FILE_NOT_FOUND', r.path))),
  }),

  // ---- The operator API: the master ----
  row({
    name: 'GET_FLAGS',
    summary: 'The master\'s flags.',
    access: 'read',
    v1: { type: 'GET_FLAGS' },
    // view_flags has no object: a principal sees all the flags or none (Mesos).
    acl: { actions: ['view_flags'], object: 'none (all the flags or none)', check: (_input, { access }) => access.check('view_flags', undefined) },
    handle: (_input, { queries }) => value({ flags: queries.flags().map((f) => ({ name: f.name, value: f.value })) }),
  }),
  row({
    name: 'GET_MASTER',
    summary: 'MasterInfo, start and election times, the standbys this leader knows.',
    access: 'read',
    v1: { type: 'GET_MASTER' },
    acl: NO_ACL,
    handle: (_input, { queries }) => value(getMaster(queries)),
  }),
  row({
    name: 'GET_STATE',
    summary: 'Tasks, executors, frameworks and agents in one answer.',
    access: 'read',
    v1: { type: 'GET_STATE' },
    acl: filtered(['view_tasks', 'view_frameworks', 'view_agents'], 'each task, framework and agent by its view action'),
    handle: (_input, { queries, access }) => value(getState(queries, viewRights(access))),
  }),
  row({
    name: 'GET_AGENTS',
    summary: 'Registered and recovered agents, as Mesos writes them (Drydock\'s facts about them: DRYDOCK_AGENTS).',
    access: 'read',
    v1: { type: 'GET_AGENTS' },
    acl: filtered(['view_agents'], 'each agent (id, hostname, ip, attributes)'),
    handle: (_input, { queries, access }) => value(getAgents(queries, viewRights(access))),
  }),
  row({
    name: 'GET_TASKS',
    summary: 'Tasks: live, unreachable, completed.',
    access: 'read',
    v1: { type: 'GET_TASKS' },
    acl: filtered(['view_tasks'], "each task by its user, else its framework's"),
    handle: (_input, { queries, access }) => value(getTasks(queries, viewRights(access))),
  }),
  row({
    name: 'GET_FRAMEWORKS',
    summary: 'Frameworks and completed frameworks, with their offers and inverse offers.',
    access: 'read',
    v1: { type: 'GET_FRAMEWORKS' },
    acl: filtered(['view_frameworks', 'view_agents'], "each framework by its user; its offers by their agent's view_agents"),
    handle: (_input, { queries, access }) => value(getFrameworks(queries, viewRights(access))),
  }),
  row({
    name: 'GET_EXECUTORS',
    summary: 'Executors: none (Drydock runs command tasks).',
    access: 'read',
    v1: { type: 'GET_EXECUTORS' },
    acl: NO_ACL,
    handle: () => value({ executors: [] }),
  }),
  row({
    name: 'GET_ROLES',
    summary: "Roles: those of the frameworks, of agents' reservations, and `*` (Drydock allocates everything to it), with their allocations.",
    access: 'read',
    v1: { type: 'GET_ROLES' },
    acl: filtered(['view_roles', 'view_frameworks'], "each role by its name; a role's frameworks by view_frameworks"),
    handle: (_input, { queries, access }) => value(getRoles(queries, legacyCaller(access, viewRights(access)))),
  }),
  row({
    name: 'GET_OPERATIONS',
    summary: 'Offer operations on resources (reserve, create volumes, ...): Drydock has none, so the list is empty.',
    access: 'read',
    v1: { type: 'GET_OPERATIONS' },
    acl: NO_ACL,
    handle: () => value({}),
  }),
  row({
    name: 'GET_METRICS',
    summary: "This master's /metrics/snapshot as v1 Metrics; the optional timeout is read and not needed (the snapshot is taken at once).",
    access: 'read',
    v1: { type: 'GET_METRICS', decode: metricsCall },
    // The same figures as /metrics/snapshot: the same rule (as the agent's GET_METRICS), so a principal refused the endpoint cannot read them through the API.
    acl: onObject('get_endpoints', "the path '/metrics/snapshot'", () => '/metrics/snapshot'),
    handle: (_input, { process }) => value(getMetrics(process.metrics?.snapshotJson())),
  }),
  row({
    name: 'SUBSCRIBE',
    summary: 'The operator event stream: SUBSCRIBED with a GET_STATE snapshot, then Mesos\' events and heartbeats.',
    access: 'read',
    v1: { type: 'SUBSCRIBE' },
    acl: filtered(['view_tasks', 'view_frameworks', 'view_agents'], 'the snapshot as GET_STATE, each event by its gate (operator-stream.ts)'),
    handle: (_input, { streams, access, codec }) => ({ kind: 'raw', write: (res) => streams.subscribe(res, access, codec) }),
  }),

  // ---- Agents: drain and deactivation ----
  row<DrainInput>({
    name: 'DRAIN_AGENT',
    summary: "Drains an agent: its tasks are killed (SIGTERM, grace, SIGKILL), it becomes DRAINED; with mark_gone, then gone.",
    access: 'write',
    v1: { type: 'DRAIN_AGENT', decode: drainCall },
    acl: {
      actions: ['drain_agents', 'mark_agents_gone'],
      object: 'the agent (id, hostname, ip, attributes; an unknown agent: its id alone); mark_agents_gone too with mark_gone',
      // The config is read after drain_agents (a refused caller learns nothing of it); mark_gone also needs mark_agents_gone.
      check: (input, { access, queries }) => {
        const object = queries.agentObject(input.agentId) ?? { agentId: input.agentId };
        const refused = access.check('drain_agents', object);
        if (refused !== undefined || !input.config.ok || !input.config.value.markGone) return refused;
        const gone = access.check('mark_agents_gone', object);
        if (gone !== undefined) return gone;
        access.note('drain_agents', describeObject(object));
        return undefined;
      },
    },
    handle: async (input, { commands }) => (input.config.ok ? outcome(await commands.drainAgent(input.agentId, input.config.value)) : refusal(input.config.error)),
  }),
  row<string>({
    name: 'DEACTIVATE_AGENT',
    summary: 'No more offers of the agent; its tasks run on.',
    access: 'write',
    v1: { type: 'DEACTIVATE_AGENT', decode: (call) => agentCall(call, 'deactivate_agent') },
    acl: onObject('deactivate_agents', 'the agent (an unknown agent: its id alone)', agentObjectOf),
    handle: async (agentId, { commands }) => outcome(await commands.deactivateAgent(agentId)),
  }),
  row<string>({
    name: 'REACTIVATE_AGENT',
    summary: 'Clears deactivation and drain.',
    access: 'write',
    v1: { type: 'REACTIVATE_AGENT', decode: (call) => agentCall(call, 'reactivate_agent') },
    acl: onObject('reactivate_agents', 'the agent (an unknown agent: its id alone)', agentObjectOf),
    handle: async (agentId, { commands }) => outcome(await commands.reactivateAgent(agentId)),
  }),
  row<string>({
    name: 'MARK_AGENT_GONE',
    summary: 'The agent is gone for good: SHUTDOWN, its id refused, its tasks end.',
    access: 'write',
    v1: { type: 'MARK_AGENT_GONE', decode: (call) => agentCall(call, 'mark_agent_gone') },
    acl: onObject('mark_agents_gone', 'the agent (an unknown agent: its id alone)', agentObjectOf),
    handle: async (agentId, { commands }) => outcome(await commands.markAgentGone(agentId)),
  }),

  // ---- Frameworks ----
  row<string>({
    name: 'TEARDOWN',
    summary: "Removes a framework (its tasks are killed), answered once durable.",
    access: 'write',
    v1: { type: 'TEARDOWN', decode: teardownCall },
    acl: {
      actions: ['teardown_frameworks'],
      object: "the framework's principal (an unknown framework, or one without a principal: an unknown object)",
      check: (id, { access, queries }) => {
        const owner = frameworkOwner(queries, id);
        const refused = access.check('teardown_frameworks', owner);
        access.note('teardown_frameworks', owner === undefined ? `framework ${id}` : `framework ${id} of '${owner}'`);
        return refused;
      },
    },
    handle: async (id, { queries, commands }) => (queries.framework(id) === undefined ? refusal(fail('FRAMEWORK_UNKNOWN')) : outcome(await commands.teardownFramework(id))),
  }),
  row({
    name: 'SCHEDULER_API',
    summary: "The Mesos scheduler API v1: a framework's SUBSCRIBE stream and its calls.",
    access: 'framework',
    http: [{ methods: 'ANY', paths: exactPaths(...SCHEDULER_PATHS), body: 'raw' }],
    acl: {
      actions: ['register_frameworks', 'run_tasks'],
      object: "decided per call by the frameworks service: the framework's principal binding, register_frameworks per role, run_tasks per task user",
    },
    // Its framing (method, Content-Type, body) is the v1 framing; its audit lines are its own (SUBSCRIBE, TEARDOWN and refusals).
    handle: (_input, { queries, commands, security, access, req }) => ({
      kind: 'raw',
      write: (res) => (req === undefined ? undefined : handleSchedulerRequest({ queries, commands }, security, req, res, access)),
    }),
  }),

  // ---- Mesos' legacy read endpoints (the web UI, the Python CLI, Mesos-DNS, exporters), each under /master/ too ----
  row({
    name: 'STATE',
    summary: "Everything, in Mesos 1.x's /state shape (v0 names, seconds, resource objects), written in slices; concurrent equal requests share one.",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/state'), answer: 'jsonp' }],
    acl: filtered(LEGACY_VIEWS, 'as GET_STATE (each agent, framework, task and offer by its view action), flags by view_flags, reservations by view_roles'),
    handle: (_input, { queries, access }) => stateAnswer(queries, legacyCaller(access, viewRights(access))),
  }),
  row({
    name: 'STATE_SUMMARY',
    summary: 'Agents and frameworks without their tasks, with per-state task counts.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/state-summary'), answer: 'jsonp' }],
    acl: filtered(LEGACY_VIEWS, 'as /state'),
    handle: (_input, { queries, access }) => stateSummaryAnswer(queries, legacyCaller(access, viewRights(access))),
  }),
  row<string | undefined>({
    name: 'SLAVES',
    summary: 'Registered and recovered agents (`?slave_id=` one of them), with their full resources.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/slaves'), answer: 'jsonp', decode: (r) => ok(idFilter(r.query, 'slave_id')) }],
    acl: filtered(['view_agents', 'view_roles'], 'each agent by view_agents, reservations by view_roles'),
    handle: (slaveId, { queries, access }) => slavesAnswer(queries, legacyCaller(access, viewRights(access)), slaveId),
  }),
  row<string | undefined>({
    name: 'FRAMEWORKS',
    summary: 'Frameworks and completed frameworks in full, with their tasks and offers (`?framework_id=` one of them).',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/frameworks'), answer: 'jsonp', decode: (r) => ok(idFilter(r.query, 'framework_id')) }],
    acl: filtered(['view_frameworks', 'view_tasks', 'view_agents'], 'as GET_FRAMEWORKS, tasks by view_tasks'),
    handle: (frameworkId, { queries, access }) => frameworksAnswer(queries, legacyCaller(access, viewRights(access)), frameworkId),
  }),
  row<TasksQuery>({
    name: 'TASKS',
    summary: 'Tasks by their first status time: `limit` (default 100, -1 all), `offset`, `order` (asc, desc), `framework_id`, `task_id`.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/tasks'), answer: 'jsonp', decode: tasksQuery }],
    acl: filtered(['view_frameworks', 'view_tasks'], 'as GET_TASKS, and only tasks of frameworks view_frameworks lets the caller see (as Mesos)'),
    handle: (query, { queries, access }) => tasksAnswer(queries, legacyCaller(access, viewRights(access)), query),
  }),
  row({
    name: 'ROLES',
    summary: "Roles with their weight, quota (none), allocations, offers, reservations and frameworks (Mesos' /roles model).",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: withMasterAlias('/roles'), answer: 'jsonp' }],
    acl: filtered(['view_roles', 'view_frameworks'], "each role by its name; a role's frameworks by view_frameworks"),
    handle: (_input, { queries, access }) => value(rolesView(queries, legacyCaller(access, viewRights(access)))),
  }),

  // ---- Maintenance: the v1 calls and the legacy endpoints, one row each ----
  row({
    name: 'GET_MAINTENANCE_SCHEDULE',
    summary: 'The maintenance schedule.',
    access: 'read',
    v1: { type: 'GET_MAINTENANCE_SCHEDULE', field: 'schedule' },
    http: [{ methods: ['GET'], paths: withMasterAlias('/maintenance/schedule'), answer: 'jsonp' }],
    acl: filtered(['get_maintenance_schedules'], 'each machine (hostname, ip, its agents\' attributes); a window left empty is dropped'),
    handle: (_input, { queries, access }) => value(scheduleView(queries, access)),
  }),
  row({
    name: 'GET_MAINTENANCE_STATUS',
    summary: 'DRAINING machines with their frameworks\' answers, and DOWN machines.',
    access: 'read',
    v1: { type: 'GET_MAINTENANCE_STATUS', field: 'status' },
    http: [{ methods: ['GET'], paths: withMasterAlias('/maintenance/status'), answer: 'jsonp' }],
    acl: filtered(['get_maintenance_statuses'], 'each machine'),
    handle: (_input, { queries, access }) => value(statusView(queries, access)),
  }),
  row<KeyedSchedule>({
    name: 'UPDATE_MAINTENANCE_SCHEDULE',
    summary: 'Replaces the schedule: machines enter DRAINING, leave it, or move to another window.',
    access: 'write',
    v1: { type: 'UPDATE_MAINTENANCE_SCHEDULE', decode: scheduleFromCall },
    http: [{ methods: ['POST'], paths: withMasterAlias('/maintenance/schedule'), body: 'decode', decode: scheduleFromBody }],
    acl: {
      actions: ['update_maintenance_schedules'],
      object: 'every machine the update adds, removes or moves to another time (all must be allowed)',
      check: (next, { access, queries }) => mayChangeSchedule(queries, access, next),
    },
    // Mesos' answer, with a Warning for each machine that names an agent only by half (it affects none).
    handle: async (next, { commands, queries, access }) => {
      const warnings = machineWarnings(queries, access, scheduleMachines(next));
      return warned(outcome(await commands.updateSchedule(next)), warnings);
    },
  }),
  row<MachineId[]>({
    name: 'START_MAINTENANCE',
    summary: 'DRAINING machines go DOWN; their agents are shut down and removed.',
    access: 'write',
    v1: { type: 'START_MAINTENANCE', decode: (call) => machinesFromCall(call, 'start_maintenance') },
    http: [{ methods: ['POST'], paths: withMasterAlias('/machine/down'), body: 'decode', decode: machinesFromBody }],
    acl: onAll('start_maintenances', 'every machine of the list', machineObjects),
    handle: async (ids, { commands, queries, access }) => {
      const warnings = machineWarnings(queries, access, ids);
      return warned(outcome(await commands.startMaintenance(ids)), warnings);
    },
  }),
  row<MachineId[]>({
    name: 'STOP_MAINTENANCE',
    summary: 'DOWN machines come UP and leave the schedule.',
    access: 'write',
    v1: { type: 'STOP_MAINTENANCE', decode: (call) => machinesFromCall(call, 'stop_maintenance') },
    http: [{ methods: ['POST'], paths: withMasterAlias('/machine/up'), body: 'decode', decode: machinesFromBody }],
    acl: onAll('stop_maintenances', 'every machine of the list', machineObjects),
    handle: async (ids, { commands, queries, access }) => {
      const warnings = machineWarnings(queries, access, ids);
      return warned(outcome(await commands.stopMaintenance(ids)), warnings);
    },
  }),

  // ---- Drydock's own: the impact preview ----
  row<PreviewInput, AuthorizePlan>({
    name: 'PREVIEW',
    summary: 'What a drain, a DOWN or a maintenance plan would do (tasks killed by framework, pods losing their last running instance, room on the other agents, a plan\'s waves); nothing changes.',
    access: 'read',
    http: [{ methods: ['POST'], paths: exactPaths('/drydock/v1/preview'), body: 'decode', decode: previewFromBody }],
    acl: {
      actions: ['drain_agents', 'mark_agents_gone', 'start_maintenances', 'create_maintenance_plans', 'run_maintenance_hooks'],
      object: 'as the action previewed: the agent (drain_agent; mark_agents_gone too with mark_gone), every machine (start_maintenance), every machine the spec selects and its hook (maintenance_plan, decided once the spec is read); what it lists is filtered by view_tasks, view_frameworks and view_agents',
      check: previewCheck,
      later: (_input, { access, queries }) => authorizePlanCreation(access, queries),
    },
    handle: (input, { queries, access, later }) => preview(input, queries, access, later),
  }),

  // ---- Maintenance plans (Drydock's; the verbs, codes and JSON of /v1/plans) ----
  row({
    name: 'MAINTENANCE_PLANS',
    summary: 'The names of the maintenance plans.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: below(PLANS, (s) => s.length === 0, PLANS_DESCRIBED), answer: 'jsonp' }],
    acl: filtered(['view_maintenance_plans'], 'each plan by every machine of it'),
    handle: (_input, { queries, access }) => value(planNamesView(queries, access)),
  }),
  row<string, AuthorizePlan>({
    name: 'CREATE_MAINTENANCE_PLAN',
    summary: 'Creates a plan from a spec (YAML or JSON) and starts it.',
    access: 'write',
    http: [{ methods: ['POST'], paths: below(PLANS, (s) => s.length === 0, PLANS_DESCRIBED), body: 'decode', decode: (r) => ok(r.body) }],
    acl: {
      actions: ['create_maintenance_plans', 'run_maintenance_hooks'],
      object: 'every machine the spec selects, and the hook it names (decided by the plans service once it has selected them)',
      later: (_text, { access, queries }) => authorizePlanCreation(access, queries),
    },
    handle: (text, ctx) => createPlan(text, ctx),
  }),
  row<string>({
    name: 'DELETE_MAINTENANCE_PLAN',
    summary: 'Deletes a COMPLETE or stopped plan.',
    access: 'write',
    http: [{ methods: ['DELETE'], paths: below(PLANS, (s) => s.length === 1, `${PLANS_DESCRIBED}/<name>`), decode: (r) => ok(r.below[0] as string) }],
    acl: { actions: ['delete_maintenance_plans'], object: 'every machine of the plan (an unknown plan: its 404)', check: (name, { access, queries }) => planCheck(access, queries, 'delete_maintenance_plans', name) },
    handle: (name, { commands }) => deletePlan(commands, name),
  }),
  row<PlanTarget>({
    name: 'GET_MAINTENANCE_PLAN',
    summary: 'A plan, a phase or a step as the plans API writes it; a failed hook\'s output only for those who may run the hook.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: below(PLANS, (s) => s.length >= 1, `${PLANS_DESCRIBED}/<name>[/...]`), answer: 'jsonp', decode: planTarget }],
    acl: {
      actions: ['view_maintenance_plans', 'run_maintenance_hooks'],
      object: 'every machine of the plan; run_maintenance_hooks on its hook to see a failed run\'s output',
      check: (t, { access, queries }) => planCheck(access, queries, 'view_maintenance_plans', t.name),
    },
    handle: (t, { queries, access, method }) => planRead(queries, access, method, t),
  }),
  row<PlanTarget, (name: string) => DrydockError | undefined>({
    name: 'MAINTENANCE_PLAN_VERB',
    summary: 'start, stop, continue, interrupt, restart, forceComplete on a plan, phase or step (and the plans API\'s answer to any other method).',
    access: 'write',
    http: [{ methods: 'ANY', paths: below(PLANS, (s) => s.length >= 1, `${PLANS_DESCRIBED}/<name>/<verb>`), body: 'handler', decode: planTarget }],
    acl: {
      actions: ['update_maintenance_plans', 'run_maintenance_hooks'],
      object: 'every machine of the plan, again in the serial queue where the verb runs; run_maintenance_hooks on its hook when the verb would run it',
      check: (t, { access, queries }) => planCheck(access, queries, 'update_maintenance_plans', t.name) ?? hookNeededCheck(access, queries, t),
      later: (_t, { access, queries }) => planCheckLater(access, queries, 'update_maintenance_plans'),
    },
    handle: (t, ctx) => planVerb(t, ctx),
  }),

  // ---- Drydock's own API (/drydock/v1/): Drydock's facts, in Drydock's shapes ----
  row({
    name: 'DRYDOCK_AGENTS',
    summary: "Every agent the master has, with what Drydock knows beyond Mesos: state, addresses, its machine's mode and window, the drain record.",
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: exactPaths(DRYDOCK_AGENTS_PATH) }],
    acl: DRYDOCK_AGENT_ACL,
    handle: (_input, { queries, access }) => value(drydockAgents(queries, drydockRights(access))),
  }),
  row<string>({
    name: 'DRYDOCK_AGENT',
    summary: 'One agent as DRYDOCK_AGENTS writes it; 404 for an agent the master does not have or the caller may not see.',
    access: 'read',
    http: [{ methods: ['GET', 'HEAD'], paths: below([...DRYDOCK_V1, 'agents'], (s) => s.length === 1, `${DRYDOCK_AGENTS_PATH}/<agent id>`), decode: (r) => ok(r.below[0] as string) }],
    acl: DRYDOCK_AGENT_ACL,
    handle: (agentId, { queries, access }) => {
      const agent = drydockAgent(queries, agentId, drydockRights(access));
      return agent === undefined ? refusal(fail('AGENT_NOT_FOUND', agentId)) : value(agent);
    },
  }),
  row({
    name: 'DRYDOCK_EVENTS',
    summary: "Drydock's event stream: SNAPSHOT of the agents, then AGENT_UPDATED, AGENT_LEFT, MACHINE_UPDATED, MAINTENANCE_PLAN_* and heartbeats (RecordIO, one record per chunk).",
    access: 'read',
    http: [{ methods: ['GET'], paths: exactPaths(`/${DRYDOCK_V1.join('/')}/events`) }],
    acl: {
      actions: ['view_agents', 'get_maintenance_statuses', 'get_maintenance_schedules', 'view_maintenance_plans', 'run_maintenance_hooks'],
      object: 'filtered answer: the snapshot as DRYDOCK_AGENTS, each event by its gate (drydock-stream.ts)',
    },
    handle: (_input, { drydockEvents, access }) => ({ kind: 'raw', write: (res) => drydockEvents.subscribe(res, access) }),
  }),
];


function agentObjectOf(agentId: string, q: Queries): AclObject {
  // Authorization comes before any lookup answer (as in Mesos): an unknown agent is an unknown
  // object, which only ANY/NONE entries match, so a principal limited to some machines learns nothing.
  return q.agentObject(agentId) ?? { agentId };
}

/** Calls Mesos has that only read (answered in the read-only realm; Mesos puts all of /api/v1 under read-write). */
function mesosReadOnly(type: CallType): boolean {
  return type.startsWith('GET_') || type === 'SUBSCRIBE' || type === 'LIST_FILES' || type === 'READ_FILE';
}

/** A row for each call Mesos has and this table does not answer: 501, after authentication as for any call. */
function notAnswered(rows: readonly Row[]): Row[] {
  const answered = new Set(rows.map((r) => r.v1?.type));
  return CALL_TYPES.filter((t) => t !== 'UNKNOWN' && !answered.has(t)).map((type) =>
    row({
      name: type,
      summary: 'Mesos has it; Drydock does not answer it.',
      access: mesosReadOnly(type) ? 'read' : 'write',
      v1: { type },
      acl: NO_ACL,
      handle: () => refusal(fail('NOT_IMPLEMENTED', type)),
    }),
  );
}

/** THE table: every row, the 501 rows last. */
export const CALLS: readonly Row[] = [...ROWS, ...notAnswered(ROWS)];

/** The rows of v1 calls, by type. */
export const V1_CALLS: ReadonlyMap<CallType, Row> = new Map(CALLS.filter((r) => r.v1 !== undefined).map((r) => [(r.v1 as V1Way<unknown>).type, r]));

/** The v1 calls Mesos has and Drydock answers 501 (derived from the table). */
export const NOT_ANSWERED: readonly CallType[] = CALLS.filter((r) => r.v1 !== undefined && !ROWS.includes(r)).map((r) => (r.v1 as V1Way<unknown>).type);

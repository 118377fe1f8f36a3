/**
 * The maintenance endpoints' shell (reference/mesos-api.md §1, §2): the legacy routes
 * (`/maintenance/schedule`, `/maintenance/status`, `/machine/down`, `/machine/up`, also under
 * `/master/`) and the operator API v1 maintenance calls. Parsing and validation are in
 * maintenance.ts; the commands in maintainer.ts.
 *
 * Like Mesos, the legacy endpoints never look at Content-Type: the body is JSON whatever the
 * header says, so the source document's `curl -d @machines.json` (a form content type) works.
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import { type DrydockError, fail } from '../../shared/errors.js';
import { parseWireJson } from '../../shared/json.js';
import type { MachineId } from '../../shared/machine.js';
import { keyed, parseMachineList, parseMachinesMessage, parseSchedule, type KeyedSchedule, type Parsed } from '../cores/maintenance.js';
import type { Access } from '../security/security.js';
import { describeObject } from '../../shared/acls.js';
import type { EdgePorts } from '../term/ports.js';
import { MAX_API_BODY_BYTES, type CallAnswer, type OperatorCall } from './operator.js';
import { readBodyOrAnswer, sendError, sendJson } from '../../shared/http.js';

type Route = 'SCHEDULE' | 'STATUS' | 'DOWN' | 'UP';

const ROUTES: ReadonlyMap<string, Route> = new Map([
  ['/maintenance/schedule', 'SCHEDULE'],
  ['/maintenance/status', 'STATUS'],
  ['/machine/down', 'DOWN'],
  ['/machine/up', 'UP'],
]);

/** The methods each route takes (a wrong one gets 405 with Allow). */
const METHODS: Record<Route, readonly string[]> = { SCHEDULE: ['GET', 'POST'], STATUS: ['GET'], DOWN: ['POST'], UP: ['POST'] };

/** The maintenance route of a canonical path (`/x` or `/master/x`, libprocess delegation), if it is one. */
export function maintenanceRoute(path: string): Route | undefined {
  return ROUTES.get(path.startsWith('/master/') ? path.slice('/master'.length) : path);
}

/** Handles one request on a maintenance route; `query` is the target's query as sent (`?jsonp=cb`, or ''), from the router. */
export async function handleMaintenanceRequest(term: EdgePorts, route: Route, query: string, req: IncomingMessage, res: ServerResponse, access: Access): Promise<void> {
  const method = req.method ?? '';
  const allowed = METHODS[route];
  if (!allowed.includes(method)) {
    req.resume();
    return sendError(res, fail('MAINTENANCE_METHOD_NOT_ALLOWED', allowed, method), { Allow: allowed.join(', ') });
  }
  if (method === 'GET') {
    req.resume();
    const json = route === 'SCHEDULE' ? scheduleView(term, access) : statusView(term, access);
    return sendJson(res, json, jsonpCallback(query));
  }
  const text = await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
  if (text === undefined) return;
  let json: unknown;
  try {
    json = parseWireJson(text);
  } catch (e) {
    return sendError(res, fail('MAINTENANCE_BODY_INVALID', (e as Error).message));
  }
  let outcome: DrydockError | undefined;
  if (route === 'SCHEDULE') {
    if (typeof json !== 'object' || json === null || Array.isArray(json)) return sendError(res, fail('MAINTENANCE_BODY_INVALID', 'Unexpected JSON type parsed'));
    const schedule = parseSchedule(json as Record<string, unknown>);
    if (!schedule.ok) return sendError(res, fail('MAINTENANCE_BODY_INVALID', schedule.message));
    const next = keyed(schedule.value);
    outcome = mayUpdate(term, access, next) ?? (await term.commands.updateSchedule(next));
  } else {
    const ids = parseMachineList(json);
    if (!ids.ok) return sendError(res, fail('MAINTENANCE_BODY_INVALID', ids.message));
    outcome =
      route === 'DOWN'
        ? (mayMove(term, access, 'start_maintenances', ids.value) ?? (await term.commands.startMaintenance(ids.value)))
        : (mayMove(term, access, 'stop_maintenances', ids.value) ?? (await term.commands.stopMaintenance(ids.value)));
  }
  if (outcome !== undefined) return sendError(res, outcome);
  res.writeHead(200, { 'Content-Length': 0 });
  res.end();
}

/**
 * The v1 maintenance calls; undefined for any other call. Conversion errors are wrapped as
 * Mesos wraps them (`Failed to convert JSON into Call protobuf: ...`); validation failures
 * carry the same bare messages as the legacy endpoints (Mesos returns them unwrapped).
 */
export async function answerMaintenanceCall(term: EdgePorts, call: OperatorCall, access: Access): Promise<CallAnswer | undefined> {
  switch (call.type) {
    case 'GET_MAINTENANCE_SCHEDULE':
      return { ok: true, json: { type: call.type, get_maintenance_schedule: { schedule: scheduleView(term, access) } } };
    case 'GET_MAINTENANCE_STATUS':
      return { ok: true, json: { type: call.type, get_maintenance_status: { status: statusView(term, access) } } };
    case 'UPDATE_MAINTENANCE_SCHEDULE': {
      const sub = call.body['update_maintenance_schedule'] as Record<string, unknown>;
      const raw = sub['schedule'];
      if (raw === undefined) return converted('Missing required fields: update_maintenance_schedule.schedule');
      if (typeof raw !== 'object' || Array.isArray(raw)) return converted(`Not expecting a JSON ${Array.isArray(raw) ? 'array' : typeof raw} for field 'schedule'`);
      const schedule = parseSchedule(raw as Record<string, unknown>, 'update_maintenance_schedule.schedule.');
      if (!schedule.ok) return converted(schedule.message);
      // Keyed once for the ACL comparison and the command.
      const next = keyed(schedule.value);
      return done(mayUpdate(term, access, next) ?? (await term.commands.updateSchedule(next)));
    }
    case 'START_MAINTENANCE':
    case 'STOP_MAINTENANCE': {
      const sub = call.body[call.type.toLowerCase()] as Record<string, unknown>;
      const ids: Parsed<MachineId[]> = parseMachinesMessage(sub);
      if (!ids.ok) return converted(ids.message);
      if (call.type === 'START_MAINTENANCE') return done(mayMove(term, access, 'start_maintenances', ids.value) ?? (await term.commands.startMaintenance(ids.value)));
      return done(mayMove(term, access, 'stop_maintenances', ids.value) ?? (await term.commands.stopMaintenance(ids.value)));
    }
    default:
      return undefined;
  }
}

// ---- Authorization: machines by hostname, ip and the attributes of their agents -------------------

/** The schedule as this caller may see it (get_maintenance_schedules): other machines left out. */
function scheduleView(term: EdgePorts, access: Access): Record<string, unknown> {
  const q = term.queries;
  if (!access.filters) return q.maintenanceSchedule();
  const may = access.approver('get_maintenance_schedules');
  return q.maintenanceSchedule((id) => may(q.machineObject(id)));
}

/** The cluster status as this caller may see it (get_maintenance_statuses). */
function statusView(term: EdgePorts, access: Access): Record<string, unknown> {
  const q = term.queries;
  if (!access.filters) return q.maintenanceStatus();
  const may = access.approver('get_maintenance_statuses');
  return q.maintenanceStatus((id) => may(q.machineObject(id)));
}

/**
 * update_maintenance_schedules: allowed only if every machine the update adds, removes or moves
 * to another time is allowed (a rack team cannot drop another rack's window by leaving it out).
 */
function mayUpdate(term: EdgePorts, access: Access, next: KeyedSchedule): DrydockError | undefined {
  const q = term.queries;
  const changed = q.changedMachines(next);
  if (changed.length === 0) {
    access.note('update_maintenance_schedules', 'no machine changed');
    return undefined;
  }
  // Without ACLs every machine is allowed: the audit line names what changed, nothing is built per machine.
  if (!access.filters) {
    access.note('update_maintenance_schedules', changed.length === 1 ? describeObject(q.machineObject(changed[0] as MachineId)) : `${changed.length} machines`);
    return undefined;
  }
  return access.checkAll('update_maintenance_schedules', changed.map((id) => q.machineObject(id)));
}

/** start_maintenances / stop_maintenances: every machine of the list. */
function mayMove(term: EdgePorts, access: Access, action: 'start_maintenances' | 'stop_maintenances', ids: readonly MachineId[]): DrydockError | undefined {
  return access.checkAll(action, ids.map((id) => term.queries.machineObject(id)));
}

function converted(message: string): CallAnswer {
  return { ok: false, error: fail('BODY_NOT_CALL', message) };
}

/** 200 with an empty body, or the validation error. */
function done(outcome: DrydockError | undefined): CallAnswer {
  return outcome === undefined ? { ok: true, json: undefined } : { ok: false, error: outcome };
}

/** `?jsonp=<cb>` of a GET, if given. */
function jsonpCallback(query: string): string | undefined {
  const cb = new URLSearchParams(query).get('jsonp');
  return cb === null || cb === '' ? undefined : cb;
}


/**
 * Maintenance at the edge (reference/mesos-api.md §1, §2): the decoders of the v1 calls'
 * sub-messages and of the legacy endpoints' bodies (`/maintenance/schedule`, `/machine/down`,
 * `/machine/up`), the schedule and status views as a caller may see them, and the ACL of a
 * schedule update. The table (calls.ts) puts a legacy endpoint and its v1 call on one row: two
 * decoders, one handler. Parsing and validation are the maintenance core's (cores/maintenance.ts);
 * the commands the maintenance service's.
 *
 * Like Mesos, the legacy endpoints never look at Content-Type: the body is JSON whatever the
 * header says, so the source document's `curl -d @machines.json` (a form content type) works.
 * Their errors are Mesos' bare messages; a v1 call's conversion errors are wrapped as Mesos
 * wraps them (`Failed to convert JSON into Call protobuf: ...`).
 */

import { describeObject } from '../../shared/acls.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import { parseWireJson } from '../../shared/json.js';
import type { MachineId } from '../../shared/machine.js';
import { machineMismatches, mismatchText, type MatchAgent } from '../../shared/machine-match.js';
import { keyed, parseMachineList, parseMachinesMessage, parseSchedule, type KeyedSchedule } from '../cores/maintenance.js';
import { agentEntryObject } from '../security/acl-objects.js';
import type { Access } from '../security/security.js';
import type { Queries } from '../term/queries.js';
import type { OperatorCall } from './operator-call.js';
import type { Decoded, HttpRequest } from './row.js';

// ---- Decoders ----------------------------------------------------------------------------------

/** UPDATE_MAINTENANCE_SCHEDULE's `update_maintenance_schedule.schedule`, keyed once (the ACL comparison and the command share the keys). */
export function scheduleFromCall(call: OperatorCall): Decoded<KeyedSchedule> {
  const sub = call.body['update_maintenance_schedule'] as Record<string, unknown>;
  const raw = sub['schedule'];
  if (raw === undefined) return converted('Missing required fields: update_maintenance_schedule.schedule');
  if (typeof raw !== 'object' || Array.isArray(raw)) return converted(`Not expecting a JSON ${Array.isArray(raw) ? 'array' : typeof raw} for field 'schedule'`);
  const schedule = parseSchedule(raw as Record<string, unknown>, 'update_maintenance_schedule.schedule.');
  if (!schedule.ok) return converted(schedule.message);
  return { ok: true, value: keyed(schedule.value) };
}

/** `POST /maintenance/schedule`'s body: a Schedule, keyed once. */
export function scheduleFromBody(r: HttpRequest): Decoded<KeyedSchedule> {
  const json = wireJson(r.body);
  if (!json.ok) return json;
  if (typeof json.value !== 'object' || json.value === null || Array.isArray(json.value)) return invalid('Unexpected JSON type parsed');
  const schedule = parseSchedule(json.value as Record<string, unknown>);
  if (!schedule.ok) return invalid(schedule.message);
  return { ok: true, value: keyed(schedule.value) };
}

/** START_MAINTENANCE / STOP_MAINTENANCE's `{"machines":[MachineID]}`. */
export function machinesFromCall(call: OperatorCall, subName: 'start_maintenance' | 'stop_maintenance'): Decoded<MachineId[]> {
  const ids = parseMachinesMessage(call.body[subName] as Record<string, unknown>);
  return ids.ok ? ids : converted(ids.message);
}

/** `POST /machine/down` and `/machine/up`'s body: a JSON array of MachineIDs. */
export function machinesFromBody(r: HttpRequest): Decoded<MachineId[]> {
  const json = wireJson(r.body);
  if (!json.ok) return json;
  const ids = parseMachineList(json.value);
  return ids.ok ? ids : invalid(ids.message);
}

function wireJson(text: string): Decoded<unknown> {
  try {
    return { ok: true, value: parseWireJson(text) };
  } catch (e) {
    return invalid((e as Error).message);
  }
}

function converted(message: string): Decoded<never> {
  return { ok: false, error: fail('BODY_NOT_CALL', message) };
}

function invalid(message: string): Decoded<never> {
  return { ok: false, error: fail('MAINTENANCE_BODY_INVALID', message) };
}

// ---- Views: machines by hostname, ip and the attributes of their agents ---------------------------

/** The schedule as this caller may see it (get_maintenance_schedules): other machines left out. */
export function scheduleView(q: Queries, access: Access): Record<string, unknown> {
  if (!access.filters) return q.maintenanceSchedule();
  const may = access.approver('get_maintenance_schedules');
  return q.maintenanceSchedule((id) => may(q.machineObject(id)));
}

/** The cluster status as this caller may see it (get_maintenance_statuses). */
export function statusView(q: Queries, access: Access): Record<string, unknown> {
  if (!access.filters) return q.maintenanceStatus();
  const may = access.approver('get_maintenance_statuses');
  return q.maintenanceStatus((id) => may(q.machineObject(id)));
}

// ---- Authorization -------------------------------------------------------------------------------

/**
 * update_maintenance_schedules: allowed only if every machine the update adds, removes or moves
 * to another time is allowed (a rack team cannot drop another rack's window by leaving it out).
 */
export function mayChangeSchedule(q: Queries, access: Access, next: KeyedSchedule): DrydockError | undefined {
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

// ---- What a machine of a request matches -----------------------------------------------------------

/**
 * The warnings a schedule, DOWN or UP request carries (the rows answer Mesos' body with them as
 * Warning headers): each machine that shares its hostname or its IP with an agent the master
 * knows (registered or recovered), but not both, so it affects no agent (shared/machine-match.ts).
 * Only agents the caller may view are named: a warning must not tell a rack team of another
 * rack's agent. Read before the command runs: DOWN removes the agents it matches.
 */
export function machineWarnings(q: Queries, access: Access, machines: readonly MachineId[]): string[] {
  if (machines.length === 0) return [];
  const may = access.filters ? access.approver('view_agents') : undefined;
  const agents: MatchAgent[] = [];
  for (const e of q.agents()) {
    if (e.phase !== 'REGISTERED' && e.phase !== 'RECOVERED') continue;
    if (may !== undefined && !may(agentEntryObject(e))) continue;
    agents.push({ id: e.id, hostname: e.info.hostname, ip: e.info.ip });
  }
  return machineMismatches(machines, agents).map(mismatchText);
}

/** Every machine of a schedule, window by window. */
export function scheduleMachines(s: KeyedSchedule): MachineId[] {
  return s.schedule.windows.flatMap((w) => w.machineIds);
}

/**
 * The maintenance commands' decisions, as pure functions: MachineID arguments, reading a
 * schedule file, the schedule and status tables, and what a schedule update changed. The
 * shell that calls the master is maintenance-command.ts.
 *
 * The CLI does not validate schedules: the master does (reference/mesos-api.md §2), and its
 * 400 message is shown as it is. Reading a file only checks that it is a JSON object, and
 * keeps int64 nanoseconds as bigints so they reach the master digit for digit.
 */

import { parseJson } from '../shared/json.js';
import { formatSpan, isoTime, nanosOf } from './nanotime.js';

export type Checked<T> = { ok: true; value: T } | { ok: false; error: string };

import { machineKey, type MachineId, type MachineMode } from '../shared/machine.js';
import { machineArg, mismatchText, type MachineMismatch, type MatchAgent } from '../shared/machine-match.js';

/** One window of a Mesos Schedule, as the master writes it (fields optional: we only read). */
export interface WindowJson {
  machine_ids?: MachineId[];
  unavailability?: { start?: { nanoseconds?: unknown }; duration?: { nanoseconds?: unknown } };
}

export interface ScheduleJson {
  windows?: WindowJson[];
}


/** One framework's answer to an inverse offer, as GET_MAINTENANCE_STATUS carries it. */
export interface InverseOfferStatusJson {
  status?: string;
  framework_id?: { value?: string };
  timestamp?: { nanoseconds?: unknown };
}

/** Mesos ClusterStatus (`get_maintenance_status.status`). Empty lists are omitted by the master. */
export interface ClusterStatusJson {
  draining_machines?: Array<{ id?: MachineId; statuses?: InverseOfferStatusJson[] }>;
  down_machines?: MachineId[];
}

/**
 * A MachineID from the command line: `host`, `host=ip` or `=ip`. The IP is not checked here:
 * the master answers `Failed to parse IPv4: <ip>` itself.
 */
export function parseMachineArg(arg: string): Checked<MachineId> {
  const eq = arg.indexOf('=');
  const hostname = (eq === -1 ? arg : arg.slice(0, eq)).trim();
  const ip = eq === -1 ? undefined : arg.slice(eq + 1).trim();
  if (ip !== undefined && ip === '') return { ok: false, error: `'${arg}': nothing after '='; write HOST, HOST=IP or =IP` };
  if (hostname === '' && ip === undefined) return { ok: false, error: `'${arg}': empty machine; write HOST, HOST=IP or =IP` };
  const m: MachineId = {};
  if (hostname !== '') m.hostname = hostname;
  if (ip !== undefined) m.ip = ip;
  return { ok: true, value: m };
}

/** Every argument as a MachineID, or the first error. At least one is needed. */
export function parseMachineArgs(args: readonly string[]): Checked<MachineId[]> {
  if (args.length === 0) return { ok: false, error: 'name at least one machine: HOST, HOST=IP or =IP' };
  const out: MachineId[] = [];
  for (const a of args) {
    const m = parseMachineArg(a);
    if (!m.ok) return m;
    out.push(m.value);
  }
  return { ok: true, value: out };
}

/** `host (ip)`, `host` or `(ip)`: how Mesos prints a MachineID in its messages. */
export function machineLabel(m: MachineId | undefined): string {
  const host = m?.hostname ?? '';
  const ip = m?.ip ?? '';
  if (host !== '' && ip !== '') return `${host} (${ip})`;
  if (host !== '') return host;
  if (ip !== '') return `(${ip})`;
  return '(no machine)';
}

/**
 * The schedule in a file's text. Accepted: a Mesos Schedule object (`{"windows":[...]}`,
 * `{}` to clear), and for convenience what `drydock maintenance schedule --json` prints (the
 * GET_MAINTENANCE_SCHEDULE answer) or a `{"schedule": ...}` wrapper. Nothing else is checked.
 */
export function readSchedule(text: string, source: string): Checked<Record<string, unknown>> {
  if (text.trim() === '') return { ok: false, error: `${source} is empty; to clear the schedule, write {}` };
  let value: unknown;
  try {
    value = parseJson(text);
  } catch (e) {
    return { ok: false, error: `${source} is not JSON: ${(e as Error).message}` };
  }
  if (!isObject(value)) return { ok: false, error: `${source} must hold a JSON object, a Mesos Schedule like {"windows":[...]}` };
  const wrapped = isObject(value['get_maintenance_schedule']) ? value['get_maintenance_schedule'] : value;
  const keys = Object.keys(wrapped);
  if (keys.length === 1 && keys[0] === 'schedule' && isObject(wrapped['schedule'])) return { ok: true, value: wrapped['schedule'] };
  return { ok: true, value: wrapped };
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Each machine's mode and inverse-offer answers from a ClusterStatus; machines not listed are UP. */
export interface MachineState {
  mode: MachineMode;
  statuses: InverseOfferStatusJson[];
}

export function machineStates(status: ClusterStatusJson | undefined): Map<string, MachineState> {
  const out = new Map<string, MachineState>();
  for (const d of status?.draining_machines ?? []) out.set(machineKey(d.id), { mode: 'DRAINING', statuses: d.statuses ?? [] });
  for (const m of status?.down_machines ?? []) out.set(machineKey(m), { mode: 'DOWN', statuses: [] });
  return out;
}

/** A window's start, duration and end for the table; a window without a duration never ends. */
function windowTimes(w: WindowJson): { start: string; duration: string; end: string } {
  const start = nanosOf(w.unavailability?.start);
  const duration = nanosOf(w.unavailability?.duration);
  return {
    start: start === undefined ? '?' : isoTime(start),
    duration: duration === undefined ? 'open-ended' : formatSpan(duration),
    end: start === undefined || duration === undefined ? '-' : isoTime(start + duration),
  };
}

export const SCHEDULE_HEADER = ['WINDOW', 'MACHINE', 'MODE', 'AGENT', 'START', 'DURATION', 'END'] as const;

/**
 * One row per scheduled machine: its window (1-based, in schedule order), `host (ip)`, its
 * mode (from GET_MAINTENANCE_STATUS; '?' when unknown), the agent registered on it (if any),
 * and the window's exact times.
 */
export function scheduleRows(schedule: ScheduleJson | undefined, states: ReadonlyMap<string, MachineState>, agents: ReadonlyMap<string, string> = new Map()): string[][] {
  const rows: string[][] = [];
  (schedule?.windows ?? []).forEach((w, i) => {
    const t = windowTimes(w);
    for (const m of w.machine_ids ?? []) {
      const key = machineKey(m);
      rows.push([String(i + 1), machineLabel(m), states.get(key)?.mode ?? '?', agents.get(key) ?? '-', t.start, t.duration, t.end]);
    }
  });
  return rows;
}

export const STATUS_HEADER = ['MACHINE', 'MODE', 'FRAMEWORK', 'ANSWER', 'ANSWERED AT'] as const;

/**
 * The maintenance status: each draining machine with one row per framework that answered its
 * inverse offers (frameworks that have not answered are simply absent, as in Mesos), then the
 * down machines. `frameworkNames` turns ids into `name (id)` where known.
 */
export function statusRows(status: ClusterStatusJson | undefined, frameworkNames: ReadonlyMap<string, string> = new Map()): string[][] {
  const rows: string[][] = [];
  for (const d of status?.draining_machines ?? []) {
    const statuses = d.statuses ?? [];
    if (statuses.length === 0) rows.push([machineLabel(d.id), 'DRAINING', '-', 'no answers yet', '-']);
    for (const s of statuses) {
      const id = s.framework_id?.value ?? '?';
      const name = frameworkNames.get(id);
      const at = nanosOf(s.timestamp);
      rows.push([machineLabel(d.id), 'DRAINING', name === undefined ? id : `${name} (${id})`, s.status ?? '?', at === undefined ? '-' : isoTime(at)]);
    }
  }
  for (const m of status?.down_machines ?? []) rows.push([machineLabel(m), 'DOWN', '-', '-', '-']);
  return rows;
}

/** Where a machine is in a schedule: its window and that window's times. */
interface Placement {
  machine: MachineId;
  window: number;
  start: bigint | undefined;
  duration: bigint | undefined;
}

function placements(s: ScheduleJson | undefined): Map<string, Placement> {
  const out = new Map<string, Placement>();
  (s?.windows ?? []).forEach((w, i) => {
    for (const m of w.machine_ids ?? []) {
      out.set(machineKey(m), { machine: m, window: i + 1, start: nanosOf(w.unavailability?.start), duration: nanosOf(w.unavailability?.duration) });
    }
  });
  return out;
}

function when(p: Placement): string {
  const start = p.start === undefined ? '?' : isoTime(p.start);
  return p.duration === undefined ? `from ${start}, open-ended` : `${start} for ${formatSpan(p.duration)}`;
}

/**
 * What replacing `before` with `after` did, one line per machine that changed and a summary:
 * `+` scheduled (now DRAINING), `-` removed (back UP), `~` new times. Machines listed in both
 * with the same times are only counted: Mesos still re-applies their unavailability, which
 * clears the frameworks' inverse-offer answers, and the summary says so.
 */
export function describeScheduleChange(before: ScheduleJson | undefined, after: ScheduleJson | undefined): string[] {
  const old = placements(before);
  const now = placements(after);
  const lines: string[] = [];
  let unchanged = 0;
  for (const [key, p] of now) {
    const o = old.get(key);
    if (o === undefined) lines.push(`+ ${machineLabel(p.machine)}: window ${p.window}, ${when(p)}`);
    else if (o.start !== p.start || o.duration !== p.duration) lines.push(`~ ${machineLabel(p.machine)}: ${when(o)} -> ${when(p)}`);
    else unchanged++;
  }
  for (const [key, o] of old) if (!now.has(key)) lines.push(`- ${machineLabel(o.machine)}: removed from the schedule (UP)`);
  const windows = after?.windows?.length ?? 0;
  const added = lines.filter((l) => l.startsWith('+')).length;
  const removed = lines.filter((l) => l.startsWith('-')).length;
  const changed = lines.length - added - removed;
  const summary = now.size === 0
    ? `schedule cleared${removed > 0 ? `: ${removed} machine${removed === 1 ? '' : 's'} back UP` : ' (it was empty)'}`
    : `schedule replaced: ${now.size} machine${now.size === 1 ? '' : 's'} in ${windows} window${windows === 1 ? '' : 's'} (${added} added, ${removed} removed, ${changed} changed, ${unchanged} unchanged)`;
  return [...lines, summary];
}

/**
 * The MachineID of each registered agent (hostname as reported, IP from its pid), mapped to
 * a label for the schedule table. An agent's MachineID always has both fields (reference §5).
 */
export function agentMachines(agents: ReadonlyArray<{ agent_info: { hostname: string; id?: { value: string } }; pid?: string }>): Map<string, string> {
  const out = new Map<string, string>();
  for (const a of agents) {
    const ip = agentIp(a.pid);
    if (ip === undefined) continue;
    out.set(machineKey({ hostname: a.agent_info.hostname, ip }), a.agent_info.id?.value ?? a.agent_info.hostname);
  }
  return out;
}

/** The IP of a libprocess pid `slave(1)@10.0.0.1:5051`. */
export function agentIp(pid: string | undefined): string | undefined {
  const m = /@([^:@]+):\d+$/.exec(pid ?? '');
  return m?.[1];
}

/**
 * For a machine the master says is not in the schedule: the scheduled machines the operator
 * probably meant, written as arguments. Mesos matches a MachineID only when both sides give
 * the same fields, so `agent-2` does not name the scheduled `agent-2=127.0.0.3`.
 */
export function machineSuggestions(wanted: MachineId, schedule: ScheduleJson | undefined): string[] {
  const out: string[] = [];
  for (const w of schedule?.windows ?? []) {
    for (const m of w.machine_ids ?? []) {
      if (machineKey(m) === machineKey(wanted)) continue;
      const sameHost = wanted.hostname !== undefined && m.hostname?.toLowerCase() === wanted.hostname.toLowerCase();
      const sameIp = wanted.ip !== undefined && m.ip === wanted.ip;
      if (sameHost || sameIp) out.push(`${m.hostname ?? ''}${m.ip === undefined ? '' : `=${m.ip}`}`);
    }
  }
  return out;
}

// ---- What a machine names, and what happened to it ------------------------------------------------

/** The registered agents of a GET_AGENTS answer as the machine check reads them (hostname, IP from the pid). */
export function registeredAgents(agents: ReadonlyArray<{ agent_info: { hostname: string; id?: { value: string } }; pid?: string }>): MatchAgent[] {
  const out: MatchAgent[] = [];
  for (const a of agents) {
    const ip = agentIp(a.pid);
    if (ip !== undefined) out.push({ id: a.agent_info.id?.value ?? '', hostname: a.agent_info.hostname, ip });
  }
  return out;
}

/** Every MachineID of a Schedule object as read from a file (fields not checked: the master does that). */
export function scheduledMachines(schedule: Record<string, unknown>): MachineId[] {
  const windows = Array.isArray(schedule['windows']) ? schedule['windows'] : [];
  const out: MachineId[] = [];
  for (const w of windows) {
    const ids = isObject(w) && Array.isArray(w['machine_ids']) ? w['machine_ids'] : [];
    for (const m of ids) {
      if (!isObject(m)) continue;
      const id: MachineId = {};
      if (typeof m['hostname'] === 'string') id.hostname = m['hostname'];
      if (typeof m['ip'] === 'string') id.ip = m['ip'];
      out.push(id);
    }
  }
  return out;
}

/**
 * The refusal of machines that name an agent by half: each one, then what to do. Nothing was
 * sent; `--force` sends it as it is (Mesos accepts machines no agent runs on).
 */
export function refuseMismatches(mismatches: readonly MachineMismatch[]): string[] {
  return [
    ...mismatches.map(mismatchText),
    `refused, nothing was sent: write each machine as HOST=IP of its agent (drydock agent list shows the addresses), or add --force to send ${mismatches.length === 1 ? 'it' : 'them'} as written`,
  ];
}

/**
 * What `drydock machine down|up` says of each machine once the master took the change, from the
 * agents registered before it (undefined: they could not be read): which agents DOWN shut down,
 * or that no agent matched and nothing was shut down.
 */
export function machineChangeLines(direction: 'down' | 'up', machines: readonly MachineId[], agents: readonly MatchAgent[] | undefined): string[] {
  return machines.map((m) => {
    if (direction === 'up') return `${machineLabel(m)} is UP and out of the schedule; agents on it may register again`;
    if (agents === undefined) return `${machineLabel(m)} is DOWN: any agent on it is shut down and may not register until it is brought up`;
    const on = agents.filter((a) => machineKey({ hostname: a.hostname, ip: a.ip }) === machineKey(m));
    if (on.length === 0) return `${machineLabel(m)} is DOWN: no agent matched: nothing was shut down`;
    const names = on.map((a) => `${a.hostname} (${a.id})`).join(', ');
    return `${machineLabel(m)} is DOWN: its agent${on.length === 1 ? '' : 's'} ${names} ${on.length === 1 ? 'is' : 'are'} shut down and may not register until it is brought up`;
  });
}

/**
 * For Mesos' refusal of a schedule that leaves a DOWN machine out (`Machine '<json>' is
 * deactivated and cannot be removed from the schedule`), what it means and what to do; undefined
 * for any other message.
 */
export function downLeftOut(message: string): string | undefined {
  const m = /^Machine '(\{.*\})' is deactivated and cannot be removed from the schedule/.exec(message.trim());
  if (m === null) return undefined;
  let id: MachineId = {};
  try {
    const v = JSON.parse(m[1] as string) as unknown;
    if (isObject(v)) id = { ...(typeof v['hostname'] === 'string' ? { hostname: v['hostname'] } : {}), ...(typeof v['ip'] === 'string' ? { ip: v['ip'] } : {}) };
  } catch {
    return undefined;
  }
  return `${machineLabel(id)} is DOWN ("deactivated" in Mesos' words): a schedule may leave it out only once it is UP. Bring it up first: drydock machine up ${machineArg(id)} (that also takes it out of the schedule)`;
}

/**
 * Mesos maintenance primitives, the pure core (reference/mesos-api.md §1, §2, §4.6, §5): the
 * schedule, each machine's mode (`UP` / `DRAINING` / `DOWN`) and unavailability, which agents
 * run on which machine, and the frameworks' answers to inverse offers. Parsing and validation
 * follow Mesos' `maintenance::validation` in order and word for word; every check runs before
 * anything changes (all or nothing). No sockets, no registry, no timers: the maintenance
 * service (services/maintenance.ts) validates here, writes the registry, then applies here.
 */

import { fail, type DrydockError } from '../../shared/errors.js';
import { machineIdJson, machineIdText, machineKey, type MachineId, type MachineMode } from '../../shared/machine.js';
import { MAX_INT64 } from '../../shared/duration.js';
import { preview } from '../../shared/proto.js';
import type { DurableMachine, DurableSchedule, MachineAttributes } from '../registry/registry.js';

/** Mesos Unavailability, in int64 nanoseconds (beyond 2^53: bigints). */
export interface Unavailability {
  startNs: bigint;
  durationNs?: bigint;
}

export interface MaintenanceWindow {
  machineIds: MachineId[];
  unavailability: Unavailability;
}

export interface Schedule {
  windows: MaintenanceWindow[];
}

/**
 * A schedule with each machine's key, made once per update: the ACL comparison, validation,
 * the durable form and the apply all look machines up by key, and with 10,000 machines
 * building and hashing a key at every step cost more than the steps themselves. The schedule
 * must not change once keyed (nothing changes a parsed or built schedule; commands build a new one).
 */
export class KeyedSchedule {
  /** machineKey of each machine, window by window, in the order of `schedule.windows[i].machineIds`. */
  readonly keys: ReadonlyArray<readonly string[]>;
  /** Every key, in order of first appearance (smaller than `machines` when a machine is listed twice). */
  readonly keySet: ReadonlySet<string>;
  /** Machines listed, over all windows. */
  readonly machines: number;

  constructor(readonly schedule: Schedule) {
    const keys: string[][] = [];
    const keySet = new Set<string>();
    let machines = 0;
    for (const w of schedule.windows) {
      const ks = w.machineIds.map(machineKey);
      for (const k of ks) keySet.add(k);
      machines += ks.length;
      keys.push(ks);
    }
    this.keys = keys;
    this.keySet = keySet;
    this.machines = machines;
  }
}

/** The schedule keyed, once: a KeyedSchedule as it is, a plain one keyed now. */
export function keyed(schedule: Schedule | KeyedSchedule): KeyedSchedule {
  return schedule instanceof KeyedSchedule ? schedule : new KeyedSchedule(schedule);
}

/** A framework's answer to an inverse offer (InverseOfferStatus; UNKNOWN never appears, §4.6). */
export type InverseOfferAnswer = 'ACCEPT' | 'DECLINE';

export interface InverseOfferStatus {
  status: InverseOfferAnswer;
  frameworkId: string;
  timestampNs: bigint;
}

/** One machine the master knows: scheduled, or the machine of an agent that registered. */
export interface Machine {
  /** Its machineKey, the very string it is kept under (kept windows list these, so a schedule's own keys are not kept). */
  readonly key: string;
  /** As last written (the schedule's spelling, or the agent's). */
  id: MachineId;
  mode: MachineMode;
  /**
   * Set exactly while the machine is in the schedule (DRAINING or DOWN), and then the very
   * unavailability of its window: what the machine was scheduled for is read here, not searched for in the windows.
   */
  unavailability: Unavailability | undefined;
  /** Answers to inverse offers, one per framework (latest wins); cleared when unavailability is re-applied. */
  statuses: Map<string, InverseOfferStatus>;
}

/** Unavailability as JSON: `{"start":{"nanoseconds":N},"duration":{"nanoseconds":D}?}` (bigints: write with stringifyJson). */
export function unavailabilityJson(u: Unavailability): Record<string, unknown> {
  const j: Record<string, unknown> = { start: { nanoseconds: u.startNs } };
  if (u.durationNs !== undefined) j['duration'] = { nanoseconds: u.durationNs };
  return j;
}

// ---- Parsing (stout's JSON -> protobuf rules, §0.1) ----------------------------------------

/** A parse outcome: the value, or Mesos' message. */
export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

class ParseFailure extends Error {}

function kind(v: unknown): string {
  if (Array.isArray(v)) return 'array';
  if (v === null) return 'null';
  if (typeof v === 'bigint') return 'number';
  return typeof v === 'object' ? 'object' : typeof v;
}

const unset = (v: unknown): boolean => v === undefined || v === null;

function objectField(parent: Record<string, unknown>, name: string): Record<string, unknown> | undefined {
  const v = parent[name];
  if (unset(v)) return undefined;
  if (typeof v !== 'object' || Array.isArray(v)) throw new ParseFailure(`Not expecting a JSON ${kind(v)} for field '${name}'`);
  return v as Record<string, unknown>;
}

function arrayField(parent: Record<string, unknown>, name: string): unknown[] {
  const v = parent[name];
  if (unset(v)) return [];
  if (!Array.isArray(v)) throw new ParseFailure(`Not expecting a JSON ${kind(v)} for field '${name}'`);
  return v;
}

function stringField(parent: Record<string, unknown>, name: string): string | undefined {
  const v = parent[name];
  if (unset(v)) return undefined;
  if (typeof v !== 'string') throw new ParseFailure(`Not expecting a JSON ${kind(v)} for field '${name}'`);
  return v;
}

/** An int64: a JSON number (bigint beyond 2^53, from parseJson) or a numeric string; exact to the digit. */
function int64Field(parent: Record<string, unknown>, name: string): bigint | undefined {
  const v = parent[name];
  if (unset(v)) return undefined;
  let n: bigint;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number' && Number.isFinite(v)) n = BigInt(Math.trunc(v));
  else if (typeof v === 'string' && /^\s*-?[0-9]{1,40}\s*$/.test(v)) n = BigInt(v.trim());
  else if (typeof v === 'string') throw new ParseFailure(`Failed to convert '${preview(v)}' to number for field '${name}'`);
  else throw new ParseFailure(`Not expecting a JSON ${kind(v)} for field '${name}'`);
  // SQLite INTEGER and Mesos' int64 hold the same range: beyond it is the client's error, never the registry's.
  if (n > MAX_INT64 || n < -MAX_INT64 - 1n) throw new ParseFailure(`Value ${preview(v)} of field '${name}' is out of range for int64`);
  return n;
}

function parseMachineId(raw: unknown, field: string): MachineId {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new ParseFailure(`Not expecting a JSON ${kind(raw)} for field '${field}'`);
  const o = raw as Record<string, unknown>;
  const id: MachineId = {};
  const hostname = stringField(o, 'hostname');
  const ip = stringField(o, 'ip');
  if (hostname !== undefined) id.hostname = hostname;
  if (ip !== undefined) id.ip = ip;
  return id;
}

/** Parses a TimeInfo / DurationInfo; records its missing `nanoseconds` (`at` makes the path, only then). */
function parseNanos(parent: Record<string, unknown>, name: string, at: (rest: string) => string, missing: string[]): bigint | undefined {
  const o = objectField(parent, name);
  if (o === undefined) return undefined;
  const ns = int64Field(o, 'nanoseconds');
  if (ns === undefined) missing.push(at(`.${name}.nanoseconds`));
  return ns;
}

/**
 * Parses a Schedule object. `path` prefixes the paths of missing required fields: `''` for
 * `/maintenance/schedule` (`windows[0].unavailability`), `update_maintenance_schedule.schedule.`
 * for the v1 call.
 */
export function parseSchedule(raw: Record<string, unknown>, path = ''): Parsed<Schedule> {
  try {
    const missing: string[] = [];
    const windows: MaintenanceWindow[] = [];
    arrayField(raw, 'windows').forEach((w, i) => {
      if (typeof w !== 'object' || w === null || Array.isArray(w)) throw new ParseFailure(`Not expecting a JSON ${kind(w)} for field 'windows'`);
      const wo = w as Record<string, unknown>;
      const machineIds = arrayField(wo, 'machine_ids').map((m) => parseMachineId(m, 'machine_ids'));
      // The path of a missing field, built only when one is (1,000 windows per schedule have none).
      const at = (rest: string): string => `${path}windows[${i}].unavailability${rest}`;
      const u = objectField(wo, 'unavailability');
      let unavailability: Unavailability = { startNs: 0n };
      if (u === undefined) missing.push(at(''));
      else {
        if (unset(u['start'])) missing.push(at('.start'));
        const startNs = parseNanos(u, 'start', at, missing);
        const durationNs = parseNanos(u, 'duration', at, missing);
        unavailability = { startNs: startNs ?? 0n };
        if (durationNs !== undefined) unavailability.durationNs = durationNs;
      }
      windows.push({ machineIds, unavailability });
    });
    if (missing.length > 0) return { ok: false, message: `Missing required fields: ${missing.join(', ')}` };
    return { ok: true, value: { windows } };
  } catch (e) {
    if (e instanceof ParseFailure) return { ok: false, message: e.message };
    throw e;
  }
}

/** Parses the JSON array of MachineIDs of `/machine/down` and `/machine/up` (legacy). */
export function parseMachineList(raw: unknown): Parsed<MachineId[]> {
  if (!Array.isArray(raw)) return { ok: false, message: 'Unexpected JSON type parsed' };
  const ids: MachineId[] = [];
  try {
    for (const m of raw) {
      if (typeof m !== 'object' || m === null || Array.isArray(m)) return { ok: false, message: 'Expecting a JSON object' };
      ids.push(parseMachineId(m, 'machine_ids'));
    }
  } catch (e) {
    if (e instanceof ParseFailure) return { ok: false, message: e.message };
    throw e;
  }
  return { ok: true, value: ids };
}

/** Parses `start_maintenance` / `stop_maintenance` (`{"machines":[MachineID]}`) of the v1 calls. */
export function parseMachinesMessage(raw: Record<string, unknown>): Parsed<MachineId[]> {
  try {
    return { ok: true, value: arrayField(raw, 'machines').map((m) => parseMachineId(m, 'machines')) };
  } catch (e) {
    if (e instanceof ParseFailure) return { ok: false, message: e.message };
    throw e;
  }
}

// ---- Validation (Mesos `maintenance::validation`, in its order) -----------------------------

const OCTET = '(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])';
const IPV4 = new RegExp(`^${OCTET}(\\.${OCTET}){3}$`);

/** Dotted-quad IPv4 as inet_pton(AF_INET) accepts it: four decimal octets, no leading zeros. */
export function isIPv4(ip: string): boolean {
  return IPV4.test(ip);
}

/** `validation::machine`: at least one of hostname and ip non-empty; a non-empty ip is IPv4. */
export function validateMachineId(id: MachineId): DrydockError | undefined {
  if ((id.hostname ?? '') === '' && (id.ip ?? '') === '') return fail('MACHINE_ID_EMPTY');
  if ((id.ip ?? '') !== '' && !isIPv4(id.ip as string)) return fail('MACHINE_IP_INVALID', id.ip as string);
  return undefined;
}

/** What validation needs of the master's machines: each known machine's mode, by machineKey. */
export type MachineModes = ReadonlyMap<string, { id: MachineId; mode: MachineMode }>;

/** `validation::schedule`: window by window, then every DOWN machine must still be listed. */
export function validateSchedule(schedule: Schedule | KeyedSchedule, machines: MachineModes): DrydockError | undefined {
  const k = keyed(schedule);
  // Which machine is the first repeat only matters when there is one: the key set says whether.
  const seen = k.keySet.size === k.machines ? undefined : new Set<string>();
  const windows = k.schedule.windows;
  for (let i = 0; i < windows.length; i++) {
    const w = windows[i] as MaintenanceWindow;
    if (w.machineIds.length === 0) return fail('MAINTENANCE_WINDOW_EMPTY');
    if (w.unavailability.durationNs !== undefined && w.unavailability.durationNs < 0n) return fail('UNAVAILABILITY_DURATION_NEGATIVE');
    const keys = k.keys[i] as readonly string[];
    for (let j = 0; j < w.machineIds.length; j++) {
      const id = w.machineIds[j] as MachineId;
      const bad = validateMachineId(id);
      if (bad !== undefined) return bad;
      if (seen === undefined) continue;
      const key = keys[j] as string;
      if (seen.has(key)) return fail('MACHINE_DUPLICATE', machineIdText(id));
      seen.add(key);
    }
  }
  // The first DOWN machine, in the order machines are kept, that the schedule leaves out. (forEach: a
  // for-of over entries allocates a pair per machine, and every machine the master knows is visited.)
  let downLeft: MachineId | undefined;
  machines.forEach((m, key) => {
    if (downLeft === undefined && m.mode === 'DOWN' && !k.keySet.has(key)) downLeft = m.id;
  });
  return downLeft === undefined ? undefined : fail('MACHINE_DOWN_NOT_IN_SCHEDULE', machineIdText(downLeft));
}

/** `validation::machines` (the list of `/machine/down` and `/machine/up`). */
export function validateMachineList(ids: readonly MachineId[]): DrydockError | undefined {
  if (ids.length === 0) return fail('MACHINE_LIST_EMPTY');
  const seen = new Set<string>();
  for (const id of ids) {
    const bad = validateMachineId(id);
    if (bad !== undefined) return bad;
    const key = machineKey(id);
    // Mesos reuses the schedule's wording here, "in the schedule" included.
    if (seen.has(key)) return fail('MACHINE_DUPLICATE', machineIdText(id));
    seen.add(key);
  }
  return undefined;
}

/** The list checks, then each machine in order: known, and DRAINING (down) or DOWN (up). */
export function validateTransition(direction: 'DOWN' | 'UP', ids: readonly MachineId[], machines: MachineModes): DrydockError | undefined {
  const bad = validateMachineList(ids);
  if (bad !== undefined) return bad;
  for (const id of ids) {
    const m = machines.get(machineKey(id));
    if (m === undefined) return fail('MACHINE_NOT_SCHEDULED', machineIdText(id));
    if (direction === 'DOWN' && m.mode !== 'DRAINING') return fail('MACHINE_NOT_DRAINING', machineIdText(id));
    if (direction === 'UP' && m.mode !== 'DOWN') return fail('MACHINE_NOT_DOWN', machineIdText(id));
  }
  return undefined;
}

// ---- State ---------------------------------------------------------------------------------

/** A window as kept: its unavailability and the keys of its machines, in order. */
interface KeptWindow {
  unavailability: Unavailability;
  keys: readonly string[];
}

/** What a change touched: the machines whose unavailability was (re)applied or cleared, and their agents. */
export interface MaintenanceChange {
  machineKeys: string[];
  agentIds: string[];
}

/**
 * The master's maintenance state: machines (by machineKey), the schedule, and the agent index
 * (agent id <-> machine key) so that nothing loops over machines x agents.
 */
export class MaintenanceState {
  readonly #machines = new Map<string, Machine>();
  #windows: KeptWindow[] = [];
  readonly #agentsOn = new Map<string, Set<string>>();
  readonly #machineOf = new Map<string, string>();
  /**
   * Last known agent attributes by machine key. Scheduled machines keep theirs in the registry
   * (written with the schedule and when they go DOWN, recovered here); the others are learnt
   * again from the registered agents each term.
   */
  readonly #attributes = new Map<string, Readonly<Record<string, string>>>();

  /** Loads the registry's schedule (modes and attributes included) after a restart. Answers to inverse offers are not durable (§4.6). */
  recover(durable: DurableSchedule): void {
    this.#windows = [];
    for (const w of durable.windows) {
      const keys: string[] = [];
      for (const m of w.machines) {
        keys.push(m.key);
        this.#machines.set(m.key, { key: m.key, id: m.id, mode: m.mode, unavailability: w.unavailability, statuses: new Map() });
        if (m.attributes !== undefined && Object.keys(m.attributes).length > 0) this.#attributes.set(m.key, m.attributes);
      }
      this.#windows.push({ unavailability: w.unavailability, keys });
    }
  }

  /** Machines as validation sees them. */
  get machines(): MachineModes {
    return this.#machines;
  }

  /** Every machine, in the order they became known. */
  all(): IterableIterator<Machine> {
    return this.#machines.values();
  }

  /** The machine under a key (maintenance events name machines by key). */
  machineByKey(key: string): Machine | undefined {
    return this.#machines.get(key);
  }

  get(id: MachineId): Machine | undefined {
    return this.#machines.get(machineKey(id));
  }

  // ---- Agents ----------------------------------------------------------------------------

  /** An agent registered (or re-registered, possibly with a new hostname): index it, and keep an UP entry for its machine (§2). */
  agentAdded(agentId: string, id: MachineId): void {
    const key = machineKey(id);
    const old = this.#machineOf.get(agentId);
    if (old === key) return;
    if (old !== undefined) this.agentRemoved(agentId);
    this.#machineOf.set(agentId, key);
    let set = this.#agentsOn.get(key);
    if (set === undefined) this.#agentsOn.set(key, (set = new Set()));
    set.add(agentId);
    if (!this.#machines.has(key)) this.#machines.set(key, { key, id, mode: 'UP', unavailability: undefined, statuses: new Map() });
  }

  /** The agent left the master (removed, replaced): drop it from the index. */
  agentRemoved(agentId: string): void {
    const key = this.#machineOf.get(agentId);
    if (key === undefined) return;
    this.#machineOf.delete(agentId);
    const set = this.#agentsOn.get(key);
    set?.delete(agentId);
    if (set?.size === 0) this.#agentsOn.delete(key);
  }

  /** Remembers the attributes of a machine's agents (for ACLs that name machines by attribute). */
  noteAttributes(id: MachineId, attributes: Readonly<Record<string, string>>): void {
    if (Object.keys(attributes).length > 0) this.#attributes.set(machineKey(id), attributes);
  }

  /** The last attributes an agent on this machine had, if any was seen (or recovered with the schedule). */
  attributesOf(id: MachineId): Readonly<Record<string, string>> | undefined {
    return this.#attributes.get(machineKey(id));
  }

  /** The known attributes of these machines (by key), for the registry write that takes them DOWN. */
  attributesByKey(keys: readonly string[]): MachineAttributes {
    const out = new Map<string, Readonly<Record<string, string>>>();
    for (const key of keys) {
      const a = this.#attributes.get(key);
      if (a !== undefined) out.set(key, a);
    }
    return out;
  }

  /**
   * The agent's machine by key with the attributes known of it, when the machine is in the
   * schedule (DRAINING or DOWN) and any are known: what the registry write that removes the
   * agent keeps (AgentRemoval.machine). Call before agentRemoved.
   */
  scheduledMachineOfAgent(agentId: string): { key: string; attributes: Readonly<Record<string, string>> } | undefined {
    const m = this.machineOfAgent(agentId);
    if (m === undefined || m.mode === 'UP') return undefined;
    const attributes = this.#attributes.get(m.key);
    return attributes === undefined ? undefined : { key: m.key, attributes };
  }

  /** The machine an agent runs on, if indexed. */
  machineOfAgent(agentId: string): Machine | undefined {
    const key = this.#machineOf.get(agentId);
    return key === undefined ? undefined : this.#machines.get(key);
  }

  /** The agent's unavailability while its machine is DRAINING (what its offers carry). */
  unavailabilityOfAgent(agentId: string): Unavailability | undefined {
    const m = this.machineOfAgent(agentId);
    return m?.mode === 'DRAINING' ? m.unavailability : undefined;
  }

  /** Agents on a machine (by key). */
  agentsOn(key: string): ReadonlySet<string> {
    return this.#agentsOn.get(key) ?? new Set();
  }

  /** Agents whose machine is DRAINING, with its unavailability (the allocator's input for inverse offers). */
  *drainingAgents(): IterableIterator<{ agentId: string; unavailability: Unavailability }> {
    for (const [agentId, key] of this.#machineOf) {
      const m = this.#machines.get(key);
      if (m?.mode === 'DRAINING' && m.unavailability !== undefined) yield { agentId, unavailability: m.unavailability };
    }
  }

  /** Is the (hostname, ip) an agent registers with on a DOWN machine? */
  isDown(id: MachineId): boolean {
    return this.#machines.get(machineKey(id))?.mode === 'DOWN';
  }

  // ---- Schedule update -------------------------------------------------------------------

  /**
   * The durable form of `schedule` as it will be once applied (modes: DOWN stays DOWN, the rest
   * DRAINING), each machine with the attributes known of it (the very objects kept here, so a
   * backend can tell an unchanged one by identity).
   */
  durableSchedule(schedule: Schedule | KeyedSchedule): DurableSchedule {
    const k = keyed(schedule);
    const attributes = this.#attributes;
    return {
      windows: k.schedule.windows.map((w, i) => {
        const keys = k.keys[i] as readonly string[];
        return {
          unavailability: w.unavailability,
          machines: w.machineIds.map((id, j): DurableMachine => {
            const key = keys[j] as string;
            const mode = this.#machines.get(key)?.mode === 'DOWN' ? 'DOWN' : 'DRAINING';
            const a = attributes.size === 0 ? undefined : attributes.get(key);
            return a === undefined ? { key, id, mode } : { key, id, mode, attributes: a };
          }),
        };
      }),
    };
  }

  /**
   * Applies a validated schedule (`___updateMaintenanceSchedule`): listed machines get the
   * window's unavailability (new ones become DRAINING, DOWN stays DOWN) and lose their inverse-
   * offer answers even if nothing changed; machines no longer listed become UP.
   */
  applySchedule(schedule: Schedule | KeyedSchedule): MaintenanceChange {
    const k = keyed(schedule);
    const listed = k.keySet;
    const windows: KeptWindow[] = [];
    // What stays is what was there: a machine already known keeps its key string and, when
    // spelled the same, its MachineID, so the schedule just applied can be collected young.
    k.schedule.windows.forEach((w, i) => {
      const keys = k.keys[i] as readonly string[];
      const kept: string[] = [];
      for (let j = 0; j < keys.length; j++) {
        const key = keys[j] as string;
        const id = w.machineIds[j] as MachineId;
        const m = this.#machines.get(key);
        if (m === undefined) {
          this.#machines.set(key, { key, id, mode: 'DRAINING', unavailability: w.unavailability, statuses: new Map() });
          kept.push(key);
        } else {
          if (m.id.hostname !== id.hostname || m.id.ip !== id.ip) m.id = id;
          if (m.mode === 'UP') m.mode = 'DRAINING';
          m.unavailability = w.unavailability;
          // Clearing an empty Map still allocates a new table in V8: 10,000 of them per update.
          if (m.statuses.size > 0) m.statuses.clear();
          kept.push(m.key);
        }
      }
      windows.push({ unavailability: w.unavailability, keys: kept });
    });
    const touched = [...listed];
    for (const w of this.#windows) {
      for (const key of w.keys) {
        if (listed.has(key)) continue;
        const m = this.#machines.get(key);
        if (m !== undefined) {
          m.mode = 'UP';
          m.unavailability = undefined;
          m.statuses.clear();
        }
        touched.push(key);
      }
    }
    this.#windows = windows;
    return this.#change(touched);
  }

  /** `/machine/down`: validated machines become DOWN (they stay in the schedule, with their unavailability). */
  applyDown(ids: readonly MachineId[]): MaintenanceChange {
    const keys = ids.map(machineKey);
    for (const key of keys) {
      const m = this.#machines.get(key);
      if (m !== undefined) {
        m.mode = 'DOWN';
        m.statuses.clear();
      }
    }
    return this.#change(keys);
  }

  /** `/machine/up`: validated machines become UP, leave their window; empty windows are dropped. */
  applyUp(ids: readonly MachineId[]): MaintenanceChange {
    const keys = ids.map(machineKey);
    const gone = new Set(keys);
    for (const key of keys) {
      const m = this.#machines.get(key);
      if (m !== undefined) {
        m.mode = 'UP';
        m.unavailability = undefined;
        m.statuses.clear();
      }
    }
    this.#windows = this.#windows
      .map((w) => ({ unavailability: w.unavailability, keys: w.keys.filter((k) => !gone.has(k)) }))
      .filter((w) => w.keys.length > 0);
    return this.#change(keys);
  }

  #change(machineKeys: string[]): MaintenanceChange {
    const agentIds: string[] = [];
    for (const key of machineKeys) {
      // Most scheduled machines have no agent: no empty list made for each of them.
      const on = this.#agentsOn.get(key);
      if (on !== undefined) for (const a of on) agentIds.push(a);
    }
    return { machineKeys, agentIds };
  }

  // ---- Inverse offers ----------------------------------------------------------------------

  /** A framework answered an inverse offer for an agent: kept on the agent's machine (latest per framework). */
  recordAnswer(agentId: string, status: InverseOfferStatus): void {
    const m = this.machineOfAgent(agentId);
    if (m === undefined || m.mode !== 'DRAINING') return;
    m.statuses.delete(status.frameworkId);
    m.statuses.set(status.frameworkId, status);
  }

  // ---- Views -----------------------------------------------------------------------------

  /**
   * The machines `next` adds, removes, or moves to another window time, compared with the
   * schedule as kept (scheduleChanges, without copying the current schedule first: a schedule
   * of 10,000 machines is compared on every update). A kept machine's window time is its
   * `unavailability` (set exactly while it is scheduled).
   */
  changedMachines(next: Schedule | KeyedSchedule): MachineId[] {
    const k = keyed(next);
    const machines = this.#machines;
    const changed = changesIn(k, (key) => machines.get(key)?.unavailability);
    for (const w of this.#windows) for (const key of w.keys) if (!k.keySet.has(key)) changed.push(machines.get(key)?.id ?? {});
    return changed;
  }

  /** The schedule as kept now, as a `Schedule` a command can change and submit again. */
  currentSchedule(): Schedule {
    return {
      windows: this.#windows.map((w) => ({
        machineIds: w.keys.map((k) => ({ ...(this.#machines.get(k)?.id ?? {}) })),
        unavailability: { ...w.unavailability },
      })),
    };
  }

  /** The Schedule JSON (`{}` when empty): machine ids as scheduled. */
  scheduleJson(visible?: (id: MachineId) => boolean): Record<string, unknown> {
    const windows: unknown[] = [];
    for (const w of this.#windows) {
      const ids = w.keys.map((k) => this.#machines.get(k)?.id ?? {}).filter((id) => visible === undefined || visible(id));
      // As Mesos: machines the caller may not see are left out, and a window left empty is dropped.
      if (ids.length === 0) continue;
      windows.push({ machine_ids: ids.map(machineIdJson), unavailability: unavailabilityJson(w.unavailability) });
    }
    return windows.length === 0 ? {} : { windows };
  }

  /** The ClusterStatus JSON (`{}` when empty): UP machines are never listed, empty lists are left out. */
  statusJson(visible?: (id: MachineId) => boolean): Record<string, unknown> {
    const draining: unknown[] = [];
    const down: unknown[] = [];
    for (const m of this.#machines.values()) {
      if (visible !== undefined && m.mode !== 'UP' && !visible(m.id)) continue;
      if (m.mode === 'DRAINING') {
        const entry: Record<string, unknown> = { id: machineIdJson(m.id) };
        if (m.statuses.size > 0) {
          entry['statuses'] = [...m.statuses.values()].map((s) => ({ status: s.status, framework_id: { value: s.frameworkId }, timestamp: { nanoseconds: s.timestampNs } }));
        }
        draining.push(entry);
      } else if (m.mode === 'DOWN') down.push(machineIdJson(m.id));
    }
    const j: Record<string, unknown> = {};
    if (draining.length > 0) j['draining_machines'] = draining;
    if (down.length > 0) j['down_machines'] = down;
    return j;
  }
}

/**
 * The machines a new schedule adds, removes, or moves to another window time, compared with the
 * current one (what update_maintenance_schedules must allow, machine by machine). Pure.
 */
export function scheduleChanges(current: Schedule, next: Schedule): MachineId[] {
  const before = new Map<string, { id: MachineId; at: Unavailability }>();
  for (const w of current.windows) for (const id of w.machineIds) before.set(machineKey(id), { id, at: w.unavailability });
  const k = keyed(next);
  const changed = changesIn(k, (key) => before.get(key)?.at);
  for (const [key, b] of before) if (!k.keySet.has(key)) changed.push(b.id);
  return changed;
}

/**
 * The machines of `next` that are new or at another time than before (`timeBefore` of their
 * key: undefined when not scheduled), in `next`'s order; the callers add those `next` drops. Pure.
 */
function changesIn(next: KeyedSchedule, timeBefore: (key: string) => Unavailability | undefined): MachineId[] {
  const changed: MachineId[] = [];
  next.schedule.windows.forEach((w, i) => {
    const keys = next.keys[i] as readonly string[];
    for (let j = 0; j < keys.length; j++) {
      const at = timeBefore(keys[j] as string);
      if (at === undefined || !sameTime(at, w.unavailability)) changed.push(w.machineIds[j] as MachineId);
    }
  });
  return changed;
}

/** Same start and same duration (both unset, or equal). */
function sameTime(a: Unavailability, b: Unavailability): boolean {
  return a.startNs === b.startNs && a.durationNs === b.durationNs;
}

/**
 * The registry in etcd (HA masters): the same Registry interface and contract as SQLite, with
 * the key layout of reference/etcd.md §6.2 under the cluster's prefix:
 *
 *   <prefix>/registry/agents/<id>          admitted agent (DurableAgent, with the principal it is bound to)
 *   <prefix>/registry/unreachable/<id>     when it was marked unreachable
 *   <prefix>/registry/deactivated/<id>     present while deactivated
 *   <prefix>/registry/drains/<id>          its drain: config, started
 *   <prefix>/registry/drained/<id>         when the drain became DRAINED
 *   <prefix>/registry/gone/<id>            marked gone, refused forever
 *   <prefix>/registry/bindings/<id>        a removed agent's binding: {principal, removedTimeNs}
 *   <prefix>/registry/frameworks/<id>      DurableFramework
 *   <prefix>/registry/maintenance/current  the chunks that make the current schedule (ScheduleRecord)
 *   <prefix>/registry/maintenance/g<n>/w<i> window times written by generation n, in chunks
 *   <prefix>/registry/maintenance/g<n>/<i>  machines written by generation n, in chunks
 *   <prefix>/registry/maintenance-plans/<name>                  a maintenance plan's record (StoredPlan)
 *   <prefix>/registry/maintenance-plan-chunks/<name>/spec/<i>   its spec's UTF-8, in chunks, written once
 *   <prefix>/registry/maintenance-plan-chunks/<name>/g<n>/<i>   progress generation n's UTF-8, in chunks
 *
 * Every change is one transaction of a few small keys, so no value nears etcd's request limit
 * however large the cluster. The exceptions are written in chunks as a new generation and
 * made current by one transaction, so they too change atomically: a schedule of tens of
 * thousands of machines (a generation writes only the chunks that changed and names the
 * others, so moving windows or bringing machines DOWN writes kilobytes, not the whole
 * schedule; a schedule in the first format, `{generation, chunks}`, is read and replaced by
 * the next generation), and a maintenance plan's spec and progress (the progress of 10,000
 * steps is ~4.5 MB of JSON; etcd refuses any request over 1.5 MiB, and the etcd3 client then
 * opens its circuit breaker), whose small record says which chunks are current. With a fence
 * (the leader's election key and its create_revision, the epoch) every transaction is guarded
 * by it: a deposed master's write fails with RegistryFencedError and changes nothing. Order of
 * recovery is creation order (create_revision), as SQLite's rowid; plans by createdNs, then name.
 */

import type { Etcd3, IOperation } from 'etcd3';
import type { DrainConfig } from '../../shared/drain.js';
import { fail } from '../../shared/errors.js';
import { parseJson, stringifyJson } from '../../shared/json.js';
import {
  GROUP_COMMIT_WINDOW_MS,
  MAINTENANCE_PLAN_NAME,
  maintenancePlanProblem,
  maintenancePlanProgressProblem,
  MAX_REMOVED_BINDINGS,
  RegistryFencedError,
  sameMachineAttributes,
  storedMachineAttributes,
  type AgentRemoval,
  type DurableAgent,
  type DurableFramework,
  type DurableMachine,
  type DurableMaintenancePlan,
  type DurableSchedule,
  type GoneAgent,
  type MachineAttributes,
  type RecoveredAgent,
  type Registry,
  type RegistryLimits,
  type RegistryState,
  type RemovedBinding,
} from './registry.js';

/** The leader's election key and its create_revision: every write is guarded by both. */
export interface Fence {
  key: string;
  epoch: bigint;
}

/** Machines per chunk of a schedule generation: about 100 kB of JSON (more with attributes). */
const MACHINES_PER_CHUNK = 1_000;
/**
 * Most bytes of one schedule chunk: a chunk over it (machines with many attributes) is cut in
 * two, so that a transaction of one chunk stays under etcd's 1.5 MiB request.
 */
const SCHEDULE_CHUNK_BYTES = 512 * 1024;
/** Windows per window chunk of a schedule generation: a window's times are under 60 bytes of JSON. */
const WINDOWS_PER_CHUNK = 2_000;
/** Records per page when recovering. */
const SCAN_PAGE = 1_000;
/** Chunks per transaction: well under etcd's 1.5 MiB request and 128 operations. */
const CHUNKS_PER_TXN = 8;
/** Chunk bytes per schedule transaction (as PLAN_TXN_BYTES): the rest of the 1.5 MiB is room for keys and framing. */
const SCHEDULE_TXN_BYTES = 1024 * 1024;

/** Operations per grouped transaction: under etcd's default --max-txn-ops of 128. */
export const MAX_OPS = 120;

/** Bytes per chunk of a maintenance plan's spec or progress (raw UTF-8, no JSON escaping to inflate it). */
const PLAN_CHUNK_BYTES = 512 * 1024;
/**
 * Chunk bytes per transaction: etcd refuses a request over --max-request-bytes (1.5 MiB by
 * default) with an opaque gRPC error; the other 0.5 MiB is room for keys, the plan's record,
 * compares and framing. Reads stay far below gRPC's 4 MiB message limit: one chunk per get.
 */
const PLAN_TXN_BYTES = 1024 * 1024;

/** A maintenance plan's record: where its text is. Plain JSON (createdNs in decimal: exact beyond 2^53). */
interface StoredPlan {
  name: string;
  createdNs: string;
  /** Chunks under maintenance-plan-chunks/<name>/spec/, and their total length in bytes. */
  spec: { chunks: number; bytes: number };
  /** The current generation: chunks under maintenance-plan-chunks/<name>/g<generation>/. */
  progress: { generation: number; chunks: number; bytes: number };
}

/** A compare of a transaction: a key's create or mod revision against a number. */
type Compare = readonly [string, 'Create' | 'Mod', '>' | '==', number];

interface QueuedWrite {
  /** A plain write, groupable with its neighbours. */
  ops?: IOperation[];
  /** A write that runs alone (compares, or several transactions). */
  run?: () => Promise<void>;
  resolve: () => void;
  reject: (e: Error) => void;
}

interface StoredDrain {
  config: { maxGracePeriodNs?: bigint; markGone: boolean };
  startedNs: bigint;
}

/** A piece of one window in a chunk of the first format (a window larger than a chunk spans several). Read only. */
interface LegacyPiece {
  window: number;
  startNs: bigint;
  durationNs?: bigint;
  machines: DurableMachine[];
}

/** A window's machines in a machine chunk (a window larger than a chunk spans several): its times are in the window chunks. */
interface MachinePiece {
  window: number;
  machines: DurableMachine[];
}

/**
 * `maintenance/current` of the second format: the chunks, under `maintenance/`, that make the
 * current schedule. Its windows' times in `windows` (WINDOWS_PER_CHUNK each); its machines in
 * groups of MACHINES_PER_CHUNK by position, each group one chunk, or several when cut by bytes.
 * A new generation writes only the chunks that changed and lists the others as they are, so a
 * window moved, or machines brought DOWN or UP, write kilobytes where the whole schedule was
 * megabytes (etcd keeps every revision until it compacts, so this is also its disk).
 */
interface ScheduleRecord {
  format: 2;
  generation: number;
  windows: string[];
  machines: string[][];
  /**
   * Always 1, for a master of the first format, which knows no `format` and reads chunks
   * g<generation>/0..chunks-1 as windows with their times: it then stops at a missing chunk,
   * or at one without times, instead of taking the schedule for empty.
   */
  chunks: 1;
}

/** The current schedule's chunks as this master knows them: what the next generation can keep. */
interface StoredSchedule {
  windows: Array<{ key: string; times: ReadonlyArray<DurableSchedule['windows'][number]['unavailability']> }>;
  machines: Array<{ keys: string[]; pieces: MachinePiece[] }>;
  /** Other keys `current` references (the first format's chunks): dropped by the next generation. */
  legacy: string[];
}

/** Every key (under `maintenance/`) a stored schedule references. */
function storedKeys(s: StoredSchedule): string[] {
  return [...s.windows.map((w) => w.key), ...s.machines.flatMap((g) => g.keys), ...s.legacy];
}

/** Does a group of machines say the same as a stored one (windows, order, ids, modes, attributes)? */
function samePieces(a: readonly MachinePiece[], b: readonly MachinePiece[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) {
    const p = a[i] as MachinePiece;
    const q = b[i] as MachinePiece;
    if (p.window !== q.window || p.machines.length !== q.machines.length) return false;
    for (let j = 0; j < p.machines.length; j++) {
      const m = p.machines[j] as DurableMachine;
      const n = q.machines[j] as DurableMachine;
      if (m === n) continue;
      if (m.key !== n.key || m.mode !== n.mode || m.id.hostname !== n.id.hostname || m.id.ip !== n.id.ip || !sameMachineAttributes(m.attributes, n.attributes)) return false;
    }
  }
  return true;
}

function sameTimes(a: StoredSchedule['windows'][number]['times'], b: StoredSchedule['windows'][number]['times']): boolean {
  return a.length === b.length && a.every((t, i) => t.startNs === b[i]?.startNs && t.durationNs === b[i]?.durationNs);
}

/** A window chunk's JSON: `[{"startNs":…,"durationNs":…}]`, the times as exact int64 numbers (as stringifyJson writes them). */
export function windowsJson(times: StoredSchedule['windows'][number]['times']): string {
  return `[${times.map((t) => `{"startNs":${t.startNs.toString()}${t.durationNs === undefined ? '' : `,"durationNs":${t.durationNs.toString()}`}}`).join(',')}]`;
}

/** A window chunk's times, exact (int64 beyond 2^53 included). */
export function windowTimes(text: string): Array<DurableSchedule['windows'][number]['unavailability']> {
  const times = parseJson(text) as Array<{ startNs?: unknown; durationNs?: unknown } | null>;
  if (!Array.isArray(times)) throw new Error('not a list of window times');
  const int64 = (v: unknown): bigint => {
    if ((typeof v !== 'number' || !Number.isInteger(v)) && typeof v !== 'bigint') throw new Error(`${JSON.stringify(String(v))} is not a time in nanoseconds`);
    return BigInt(v);
  };
  return times.map((t) => (t?.durationNs === undefined ? { startNs: int64(t?.startNs) } : { startNs: int64(t.startNs), durationNs: int64(t.durationNs) }));
}

/**
 * A machine group's JSON (plain JSON.stringify: a machine holds no int64), cut in two (by
 * machines) while over SCHEDULE_CHUNK_BYTES and of more than one machine: machines with many
 * attributes make larger chunks. Reading joins the pieces of one window again, however cut.
 */
function machineChunkTexts(pieces: readonly MachinePiece[]): string[] {
  const text = JSON.stringify(pieces);
  // UTF-8 takes at most 3 bytes per UTF-16 unit: most chunks are known small without counting.
  if (text.length * 3 <= SCHEDULE_CHUNK_BYTES || Buffer.byteLength(text) <= SCHEDULE_CHUNK_BYTES) return [text];
  const machines = pieces.reduce((n, p) => n + p.machines.length, 0);
  if (machines <= 1) return [text];
  let left = Math.floor(machines / 2);
  const first: MachinePiece[] = [];
  const second: MachinePiece[] = [];
  for (const p of pieces) {
    if (left >= p.machines.length) {
      first.push(p);
      left -= p.machines.length;
    } else if (left === 0) second.push(p);
    else {
      first.push({ window: p.window, machines: p.machines.slice(0, left) });
      second.push({ window: p.window, machines: p.machines.slice(left) });
      left = 0;
    }
  }
  return [...machineChunkTexts(first), ...machineChunkTexts(second)];
}

/** A machine chunk's pieces, checked for their shape (the machines as a SQLite file's: addMachines). */
function machinePieces(value: unknown): MachinePiece[] {
  if (!Array.isArray(value)) throw new Error('not a list of pieces');
  for (const p of value as Array<Partial<MachinePiece> | null>) {
    if (typeof p !== 'object' || p === null || !Number.isSafeInteger(p.window) || !Array.isArray(p.machines)) throw new Error('a piece without its window or machines');
    for (const m of p.machines as Array<Partial<DurableMachine> | null>) {
      if (typeof m?.key !== 'string' || typeof m.id !== 'object' || m.id === null || (m.mode !== 'DRAINING' && m.mode !== 'DOWN')) throw new Error('a machine without its key, id or mode');
    }
  }
  return value as MachinePiece[];
}

/** Appends stored machines to a window, their attributes checked as a SQLite file's are (storedMachineAttributes). */
function addMachines(into: DurableMachine[], machines: readonly DurableMachine[]): void {
  for (const m of machines) {
    if (m.attributes === undefined) {
      into.push(m);
      continue;
    }
    const { attributes, ...rest } = m;
    const a = storedMachineAttributes(attributes);
    into.push(a === undefined ? rest : { ...rest, attributes: a });
  }
}

/** `maintenance/current` checked: the first format (`{generation, chunks}`) or the second (ScheduleRecord). */
function scheduleRecord(value: unknown): ScheduleRecord | { format: 1; generation: number; chunks: number } {
  const r = value as Partial<ScheduleRecord> & { chunks?: unknown } | null;
  if (typeof r !== 'object' || r === null || !Number.isSafeInteger(r.generation) || (r.generation as number) < 0) throw new Error('no generation');
  if (r.format === undefined) {
    if (!Number.isSafeInteger(r.chunks) || (r.chunks as number) < 0) throw new Error('no chunk count');
    return { format: 1, generation: r.generation as number, chunks: r.chunks as number };
  }
  if (r.format !== 2) throw new Error(`format ${String(r.format)} is not one this master reads (2)`);
  const strings = (v: unknown): v is string[] => Array.isArray(v) && v.every((k) => typeof k === 'string' && /^g\d+\/[\w.]+$/.test(k));
  if (!strings(r.windows)) throw new Error('windows is not a list of chunk keys');
  if (!Array.isArray(r.machines) || !r.machines.every((g) => strings(g) && g.length > 0)) throw new Error('machines is not a list of chunk key groups');
  return r as ScheduleRecord;
}

export class EtcdRegistry implements Registry {
  readonly #client: Etcd3;
  readonly #p: string;
  readonly #fence: Fence | undefined;
  /** Writes in the order they were made: consecutive plain ones share a transaction (group commit). */
  #queue: QueuedWrite[] = [];
  #draining: Promise<void> | undefined;
  /** When the last grouped transaction started (performance.now()): the next waits out GROUP_COMMIT_WINDOW_MS from it. */
  #lastGroupMs = Number.NEGATIVE_INFINITY;
  #closed = false;
  /** The schedule as last read or written: DOWN and UP change modes in it and write a new generation. */
  #schedule: DurableSchedule | undefined;
  /** The chunks of #schedule: what the next generation keeps. Set and cleared with #schedule (a failed write clears both: read again then). */
  #stored: StoredSchedule | undefined;
  /** The next generation's number: past every generation seen in etcd, and never used twice by this master. */
  #nextGeneration = 1;
  /** Keys under `maintenance/` that `current` does not reference (a failed write's, a dropped follow-up's): the next generation deletes them. */
  #orphans = new Set<string>();
  /** The machines of #schedule by key, made when first needed (a removal looks its machine up). */
  #machineIndex: { of: DurableSchedule; byKey: Map<string, DurableMachine> } | undefined;
  readonly #maxRemovedBindings: number;
  /**
   * The ids under bindings/, oldest removal first, as this registry's writes leave them: read by
   * recover(), then kept by the writes as they are queued (this master is the only writer), so a
   * removal knows which binding the cap drops without a read. A write that then fails leaves it a
   * key off, which costs the cap one binding too many or too few until the next recovery.
   * Undefined before recovery (an import into an empty etcd): the cap is not applied then.
   */
  #bindings: Set<string> | undefined;

  /** `prefix` is the cluster's key prefix (`/drydock`); `fence` guards every write (HA). */
  constructor(client: Etcd3, prefix: string, fence?: Fence, limits: RegistryLimits = {}) {
    this.#client = client;
    this.#p = `${prefix.replace(/\/+$/, '')}/registry/`;
    this.#fence = fence;
    this.#maxRemovedBindings = limits.maxRemovedBindings ?? MAX_REMOVED_BINDINGS;
  }

  async recover(): Promise<RegistryState> {
    if (this.#closed) throw fail('REGISTRY_CLOSED');
    const kinds = ['agents', 'unreachable', 'deactivated', 'drains', 'drained', 'gone', 'frameworks', 'bindings'];
    const byKind = new Map<string, Array<{ id: string; value: unknown; mod: bigint }>>();
    await Promise.all(
      kinds.map(async (kind) => {
        const list: Array<{ id: string; value: unknown; mod: bigint }> = [];
        for await (const kv of this.#scan(`${this.#p}${kind}/`)) list.push({ id: kv.key.slice(this.#p.length + kind.length + 1), value: decodeRecord(kv.key, () => parseJson(kv.value)), mod: kv.mod });
        byKind.set(kind, list);
      }),
    );
    const map = (kind: string): Map<string, unknown> => new Map((byKind.get(kind) ?? []).map((e) => [e.id, e.value]));
    const unreachable = map('unreachable');
    const deactivated = map('deactivated');
    const drains = map('drains');
    const drained = map('drained');
    const key = (kind: string, id: string): string => `${this.#p}${kind}/${id}`;
    const agents: RecoveredAgent[] = (byKind.get('agents') ?? []).map(({ id, value }) => decodeRecord(key('agents', id), () => {
      const a = value as DurableAgent;
      const r: RecoveredAgent = { ...a, id, registeredTimeNs: BigInt(a.registeredTimeNs), reachability: unreachable.has(id) ? 'UNREACHABLE' : 'REACHABLE' };
      if (unreachable.has(id)) r.unreachableTimeNs = BigInt(unreachable.get(id) as bigint);
      if (deactivated.has(id)) r.deactivated = true;
      const d = drains.get(id) as StoredDrain | undefined;
      if (d !== undefined) {
        const done = drained.get(id);
        const config: DrainConfig = { maxGracePeriodNs: d.config.maxGracePeriodNs === undefined ? undefined : BigInt(d.config.maxGracePeriodNs), markGone: d.config.markGone };
        r.drain = { state: done === undefined ? 'DRAINING' : 'DRAINED', config, startedNs: BigInt(d.startedNs), drainedNs: done === undefined ? undefined : BigInt(done as bigint) };
      }
      return r;
    }));
    const frameworks: DurableFramework[] = (byKind.get('frameworks') ?? []).map(({ id, value }) => decodeRecord(key('frameworks', id), () => {
      const f = value as { id: string; info: DurableFramework['info']; registeredTimeNs?: bigint };
      return { id: f.id, info: f.info, registeredTimeNs: f.registeredTimeNs === undefined ? undefined : BigInt(f.registeredTimeNs) };
    }));
    const gone: GoneAgent[] = (byKind.get('gone') ?? []).map(({ id, value }) => decodeRecord(key('gone', id), () => ({ id, goneTimeNs: BigInt(value as bigint) })));
    // By removal: a binding removed again was rewritten (a later mod_revision), not created again.
    const bindings: RemovedBinding[] = (byKind.get('bindings') ?? [])
      .sort((a, b) => (a.mod < b.mod ? -1 : a.mod > b.mod ? 1 : 0))
      .map(({ id, value }) => decodeRecord(key('bindings', id), () => {
        const b = value as { principal?: unknown; removedTimeNs?: unknown } | null;
        // The binding decides who may register the id: nothing but a principal's name will do.
        if (typeof b?.principal !== 'string' || b.principal === '') throw new Error('no principal');
        return { id, principal: b.principal, removedTimeNs: BigInt(b.removedTimeNs as bigint) };
      }));
    this.#bindings = new Set(bindings.map((b) => b.id));
    const maintenance = await this.#loadSchedule();
    const plans = await this.#loadPlans();
    const state: RegistryState = { agents, frameworks, maintenance };
    if (gone.length > 0) state.goneAgents = gone;
    if (bindings.length > 0) state.removedBindings = bindings;
    if (plans.length > 0) state.maintenancePlans = plans;
    return state;
  }

  admitAgent(agent: DurableAgent): Promise<void> {
    return this.#txn([], [this.#putText(`agents/${agent.id}`, agentText(agent)), this.#del(`unreachable/${agent.id}`)]);
  }

  markAgentUnreachable(agentId: string, timeNs: bigint): Promise<void> {
    return this.#txn([`agents/${agentId}`], [this.#put(`unreachable/${agentId}`, timeNs)], `markAgentUnreachable: agent ${agentId} is not in the registry`);
  }

  markAgentReachable(agent: DurableAgent): Promise<void> {
    return this.admitAgent(agent);
  }

  removeAgent(agentId: string, removal?: AgentRemoval): Promise<void> {
    const ops = this.#forget(agentId);
    if (removal?.principal !== undefined) ops.push(...this.#keepBinding(agentId, removal.principal, removal.timeNs));
    return this.#forgetWithMachine(ops, removal?.machine);
  }

  /**
   * Writes `ops` (an agent forgotten) in one transaction, with its machine's attributes when the
   * schedule lacks them (AgentRemoval.machine): then a new generation of the schedule becomes
   * current in that transaction.
   */
  #forgetWithMachine(ops: IOperation[], machine: AgentRemoval['machine']): Promise<void> {
    // Most removals: nothing of the schedule to write, and the removal groups with its neighbours.
    if (machine === undefined || Object.keys(machine.attributes).length === 0 || this.#scheduleHolds(machine) === true) return this.#txn([], ops);
    // The schedule may lack them: decided when the write runs, on the schedule as it is then.
    return this.#track(async () => {
      const s = await this.#currentSchedule();
      if (this.#scheduleHolds(machine) !== false) {
        await this.#txnIf([], ops);
        return;
      }
      const windows = s.windows.map((w) => (w.machines.some((m) => m.key === machine.key) ? { ...w, machines: w.machines.map((m) => (m.key === machine.key ? { ...m, attributes: machine.attributes } : m)) } : w));
      // The new generation becomes current in the transaction that removes the agent.
      await this.#writeSchedule({ windows }, ops);
    });
  }

  /**
   * Whether the schedule as last read or written needs nothing for this machine: true when it
   * holds these attributes or does not list the machine, false when it lacks them, undefined
   * while the schedule is not loaded.
   */
  #scheduleHolds(machine: NonNullable<AgentRemoval['machine']>): boolean | undefined {
    const s = this.#schedule;
    if (s === undefined) return undefined;
    if (this.#machineIndex?.of !== s) {
      const byKey = new Map<string, DurableMachine>();
      for (const w of s.windows) for (const m of w.machines) byKey.set(m.key, m);
      this.#machineIndex = { of: s, byKey };
    }
    const m = this.#machineIndex.byKey.get(machine.key);
    return m === undefined || sameMachineAttributes(m.attributes, machine.attributes);
  }

  /** The operations that keep an id's binding as the newest, dropping the oldest past the cap (see #bindings). */
  #keepBinding(agentId: string, principal: string, timeNs: bigint): IOperation[] {
    const ops = [this.#put(`bindings/${agentId}`, { principal, removedTimeNs: timeNs })];
    const kept = this.#bindings;
    if (kept === undefined) return ops;
    kept.delete(agentId);
    kept.add(agentId);
    for (const oldest of kept) {
      if (kept.size <= this.#maxRemovedBindings) break;
      kept.delete(oldest);
      ops.push(this.#del(`bindings/${oldest}`));
    }
    return ops;
  }

  drainAgent(agentId: string, config: DrainConfig, startedNs: bigint): Promise<void> {
    const drain: StoredDrain = { config: config.maxGracePeriodNs === undefined ? { markGone: config.markGone } : { maxGracePeriodNs: config.maxGracePeriodNs, markGone: config.markGone }, startedNs };
    return this.#txn(
      [`agents/${agentId}`],
      [this.#put(`drains/${agentId}`, drain), this.#del(`drained/${agentId}`), this.#put(`deactivated/${agentId}`, true)],
      `drainAgent: agent ${agentId} is not in the registry`,
    );
  }

  markAgentDrained(agentId: string, timeNs: bigint): Promise<void> {
    // A no-op unless the agent is DRAINING: a drain exists and is not drained yet.
    return this.#track(async () => {
      await this.#txnIf([this.#exists(`drains/${agentId}`), this.#absent(`drained/${agentId}`)], [this.#put(`drained/${agentId}`, timeNs)]);
    });
  }

  deactivateAgent(agentId: string): Promise<void> {
    return this.#txn([`agents/${agentId}`], [this.#put(`deactivated/${agentId}`, true)], `deactivateAgent: agent ${agentId} is not in the registry`);
  }

  reactivateAgent(agentId: string): Promise<void> {
    return this.#txn([], [this.#del(`deactivated/${agentId}`), this.#del(`drains/${agentId}`), this.#del(`drained/${agentId}`)]);
  }

  markAgentGone(agentId: string, timeNs: bigint, machine?: AgentRemoval['machine']): Promise<void> {
    return this.#forgetWithMachine([...this.#forget(agentId), this.#put(`gone/${agentId}`, timeNs)], machine);
  }

  addFramework(framework: DurableFramework): Promise<void> {
    const doc = framework.registeredTimeNs === undefined ? { id: framework.id, info: framework.info } : framework;
    return this.#txn([], [this.#put(`frameworks/${framework.id}`, doc)]);
  }

  removeFramework(frameworkId: string): Promise<void> {
    return this.#txn([], [this.#del(`frameworks/${frameworkId}`)]);
  }

  updateSchedule(schedule: DurableSchedule): Promise<void> {
    return this.#track(() => this.#writeSchedule(schedule));
  }

  startMaintenance(machineKeys: readonly string[], attributes?: MachineAttributes): Promise<void> {
    const keys = new Set(machineKeys);
    const down = (m: DurableMachine): DurableMachine => {
      const a = attributes?.get(m.key);
      // Attributes given replace the machine's; none given, it keeps what it had.
      return a === undefined || Object.keys(a).length === 0 ? { ...m, mode: 'DOWN' } : { ...m, mode: 'DOWN', attributes: a };
    };
    return this.#track(async () => {
      const s = await this.#currentSchedule();
      await this.#writeSchedule({ windows: s.windows.map((w) => ({ ...w, machines: w.machines.map((m) => (keys.has(m.key) ? down(m) : m)) })) });
    });
  }

  stopMaintenance(machineKeys: readonly string[]): Promise<void> {
    const keys = new Set(machineKeys);
    return this.#track(async () => {
      const s = await this.#currentSchedule();
      const windows = s.windows.map((w) => ({ ...w, machines: w.machines.filter((m) => !keys.has(m.key)) })).filter((w) => w.machines.length > 0);
      await this.#writeSchedule({ windows });
    });
  }

  createMaintenancePlan(plan: DurableMaintenancePlan): Promise<void> {
    const problem = maintenancePlanProblem(plan);
    if (problem !== undefined) return Promise.reject(problem);
    const { name } = plan;
    const record = `maintenance-plans/${name}`;
    const base = `maintenance-plan-chunks/${name}/`;
    return this.#track(async () => {
      // First clear what a create that failed half-way may have left under this name; guarded
      // by the name being free, that transaction is also the check: refused, nothing written.
      if (!(await this.#txnIf([this.#absent(record)], [this.#client.delete().prefix(this.#p + base)]))) throw fail('MAINTENANCE_PLAN_EXISTS', name);
      const spec = chunksOf(plan.spec);
      const progress = chunksOf(plan.progress);
      const stored: StoredPlan = { name, createdNs: plan.createdNs.toString(), spec: { chunks: spec.chunks.length, bytes: spec.bytes }, progress: { generation: 1, chunks: progress.chunks.length, bytes: progress.bytes } };
      const puts = [...spec.chunks.map((value, i) => ({ key: `${base}spec/${i}`, value })), ...progress.chunks.map((value, i) => ({ key: `${base}g1/${i}`, value }))];
      // The record comes last: until it exists the plan does not, whatever chunks are there.
      // Writes run one at a time and only this master writes (fenced), so the name is still free.
      if (!(await this.#writeChunks([this.#absent(record)], puts, [this.#putText(record, JSON.stringify(stored))]))) throw fail('MAINTENANCE_PLAN_EXISTS', name);
    });
  }

  updateMaintenancePlanProgress(name: string, progress: string): Promise<void> {
    const problem = maintenancePlanProgressProblem(name, progress);
    if (problem !== undefined) return Promise.reject(problem);
    const unknown = (): Error => new Error(`updateMaintenancePlanProgress: maintenance plan '${name}' is not in the registry`);
    const record = `maintenance-plans/${name}`;
    const base = `maintenance-plan-chunks/${name}/`;
    return this.#track(async () => {
      if (!MAINTENANCE_PLAN_NAME.test(name)) throw unknown();
      const kv = (await this.#client.get(this.#p + record).exec()).kvs[0];
      if (kv === undefined) throw unknown();
      const stored = JSON.parse(kv.value.toString('utf8')) as StoredPlan;
      const old = stored.progress.generation;
      const generation = old + 1;
      const text = chunksOf(progress);
      const next: StoredPlan = { ...stored, progress: { generation, chunks: text.chunks.length, bytes: text.bytes } };
      // A new generation, made current by the transaction that rewrites the record and drops the
      // old one. Chunks an earlier failed attempt left under g<generation> are overwritten or,
      // past the count, dropped with that generation. Guarded by the record being the one read.
      const ok = await this.#writeChunks(
        [[this.#p + record, 'Mod', '==', Number(kv.mod_revision)]],
        text.chunks.map((value, i) => ({ key: `${base}g${generation}/${i}`, value })),
        [this.#putText(record, JSON.stringify(next)), this.#client.delete().prefix(`${this.#p}${base}g${old}/`)],
      );
      if (!ok) throw new Error(`updateMaintenancePlanProgress: maintenance plan '${name}' was deleted or changed while its progress was written`);
    });
  }

  deleteMaintenancePlan(name: string): Promise<void> {
    // A name no plan can have is unknown, so a no-op; it must not become part of a key either.
    if (!MAINTENANCE_PLAN_NAME.test(name)) return this.#track(() => Promise.resolve());
    return this.#txn([], [this.#del(`maintenance-plans/${name}`), this.#client.delete().prefix(`${this.#p}maintenance-plan-chunks/${name}/`)]);
  }

  /** Refuses new writes, then waits for those already made. The etcd client is its owner's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#draining !== undefined) await this.#draining;
  }

  // ---- Transactions ----------------------------------------------------------------------------

  #put(key: string, value: unknown): IOperation {
    return this.#client.put(this.#p + key).value(stringifyJson(value));
  }

  #putText(key: string, value: string | Buffer): IOperation {
    return this.#client.put(this.#p + key).value(value);
  }

  #del(key: string): IOperation {
    return this.#client.delete().key(this.#p + key);
  }

  #forget(agentId: string): IOperation[] {
    return ['agents', 'unreachable', 'deactivated', 'drains', 'drained'].map((k) => this.#del(`${k}/${agentId}`));
  }

  #exists(key: string): Compare {
    return [this.#p + key, 'Create', '>', 0];
  }

  #absent(key: string): Compare {
    return [this.#p + key, 'Create', '==', 0];
  }

  /**
   * One guarded transaction: `ops` if every key in `mustExist` exists; else rejects with
   * `missing`. Writes that need nothing to exist are grouped with their neighbours.
   */
  #txn(mustExist: readonly string[], ops: IOperation[], missing = 'a key the write needs is not in the registry'): Promise<void> {
    if (mustExist.length === 0) return this.#enqueue({ ops });
    return this.#track(async () => {
      const ok = await this.#txnIf(mustExist.map((k) => this.#exists(k)), ops);
      if (!ok) throw new Error(missing);
    });
  }

  /**
   * Commits `ops` if the compares hold and, when fenced, this master still holds its election
   * key with its epoch. False when a compare failed; a lost fence throws RegistryFencedError.
   */
  async #txnIf(compares: readonly Compare[], ops: IOperation[]): Promise<boolean> {
    const all: Compare[] = [...compares];
    if (this.#fence !== undefined) all.push([this.#fence.key, 'Create', '==', Number(this.#fence.epoch)]);
    // A transaction starts with a compare: with none to make, one that always holds (any key's create_revision is > -1).
    const first: Compare = all[0] ?? [this.#p, 'Create', '>', -1];
    let b = this.#client.if(first[0], first[1], first[2], first[3]);
    for (const c of all.slice(1)) b = b.and(c[0], c[1], c[2], c[3]);
    const r = await b.then(...ops).commit();
    if (r.succeeded) return true;
    await this.#checkFence();
    return false;
  }

  /** Throws RegistryFencedError when this master's election key is gone or is another term's. */
  async #checkFence(): Promise<void> {
    if (this.#fence === undefined) return;
    const r = await this.#client.get(this.#fence.key).exec();
    const kv = r.kvs[0];
    if (kv === undefined || BigInt(kv.create_revision) !== this.#fence.epoch) {
      throw new RegistryFencedError(`this master no longer holds its election key (epoch ${this.#fence.epoch})`);
    }
  }

  /** Runs a write in its turn, unless closed; close() waits for it. */
  #track(run: () => Promise<void>): Promise<void> {
    return this.#enqueue({ run });
  }

  #enqueue(job: { ops?: IOperation[]; run?: () => Promise<void> }): Promise<void> {
    if (this.#closed) return Promise.reject(fail('REGISTRY_CLOSED'));
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ ...job, resolve, reject });
      this.#kick();
    });
  }

  /** Starts draining unless under way; a write queued just as a drain ends starts the next one. */
  #kick(): void {
    if (this.#draining !== undefined) return;
    this.#draining = this.#drain().finally(() => {
      this.#draining = undefined;
      if (this.#queue.length > 0) this.#kick();
    });
  }

  /**
   * Commits queued writes one transaction after another, in order: the record of an agent
   * admitted first comes first after a restart, as with SQLite. Consecutive plain writes go
   * in one transaction (at most MAX_OPS operations); one that failed fails them all, so a
   * batch that fails is retried write by write and each gets its own outcome.
   */
  async #drain(): Promise<void> {
    // Let the writes of this turn gather first.
    await new Promise((r) => setImmediate(r));
    while (this.#queue.length > 0) {
      const first = this.#queue[0] as QueuedWrite;
      if (first.ops === undefined) {
        this.#queue.shift();
        await (first.run as () => Promise<void>)().then(first.resolve, first.reject);
        continue;
      }
      // The writes that arrive meanwhile join this transaction (group commit, as SQLite's).
      const wait = this.#lastGroupMs + GROUP_COMMIT_WINDOW_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      this.#lastGroupMs = performance.now();
      const batch: QueuedWrite[] = [];
      let ops = 0;
      for (const w of this.#queue) {
        if (w.ops === undefined || (batch.length > 0 && ops + w.ops.length > MAX_OPS)) break;
        batch.push(w);
        ops += w.ops.length;
      }
      this.#queue.splice(0, batch.length);
      try {
        await this.#txnIf([], batch.flatMap((w) => w.ops as IOperation[]));
        for (const w of batch) w.resolve();
      } catch (e) {
        if (batch.length === 1 || e instanceof RegistryFencedError) for (const w of batch) w.reject(e instanceof Error ? e : new Error(String(e)));
        else for (const w of batch) await this.#txnIf([], w.ops as IOperation[]).then(w.resolve, w.reject);
      }
    }
  }

  // ---- The schedule, by generation ----------------------------------------------------------------

  /**
   * The keys under a prefix in creation order, a page at a time: one range of 10,000 agents'
   * records would pass gRPC's 4 MiB message limit.
   */
  async *#scan(prefix: string): AsyncGenerator<{ key: string; value: string; mod: bigint }> {
    let from = 0n;
    for (;;) {
      const page = await this.#client.getAll().prefix(prefix).sort('Create', 'Ascend').minCreateRevision(String(from)).limit(SCAN_PAGE).exec();
      for (const kv of page.kvs) yield { key: kv.key.toString('utf8'), value: kv.value.toString('utf8'), mod: BigInt(kv.mod_revision) };
      const last = page.kvs.at(-1);
      if (last === undefined || page.kvs.length < SCAN_PAGE) return;
      from = BigInt(last.create_revision) + 1n;
    }
  }

  async #currentSchedule(): Promise<DurableSchedule> {
    return this.#schedule ?? this.#loadSchedule();
  }

  /**
   * The current generation's chunks, read and reassembled into windows (and remembered, with
   * which chunk holds what). Keys under `maintenance/` that `current` does not reference (left
   * by a write that failed half-way) are remembered too, for the next generation to delete.
   */
  async #loadSchedule(): Promise<DurableSchedule> {
    const base = `${this.#p}maintenance/`;
    const [current, keys] = await Promise.all([this.#client.get(`${base}current`).string(), this.#client.getAll().prefix(base).keys()]);
    const record = current === null ? undefined : decodeRecord(`${base}current`, () => scheduleRecord(parseJson(current)));
    const read = async (key: string): Promise<string> => {
      const text = await this.#client.get(base + key).string();
      if (text === null) throw new Error(`the maintenance schedule in etcd is missing chunk ${key} of generation ${record?.generation}`);
      return text;
    };
    const windows: DurableSchedule['windows'] = [];
    const stored: StoredSchedule = { windows: [], machines: [], legacy: [] };
    if (record?.format === 1) {
      const texts = await Promise.all(Array.from({ length: record.chunks }, (_, i) => read((stored.legacy[i] = `g${record.generation}/${i}`))));
      let last = -1;
      texts.forEach((text, i) => {
        for (const piece of decodeRecord(`${base}${stored.legacy[i]}`, () => parseJson(text) as LegacyPiece[])) {
          if (piece.window !== last) {
            const unavailability: { startNs: bigint; durationNs?: bigint } = { startNs: BigInt(piece.startNs) };
            if (piece.durationNs !== undefined) unavailability.durationNs = BigInt(piece.durationNs);
            windows.push({ unavailability, machines: [] });
            last = piece.window;
          }
          addMachines((windows[windows.length - 1] as DurableSchedule['windows'][number]).machines, piece.machines);
        }
      });
    } else if (record !== undefined) {
      const [windowTexts, groupTexts] = await Promise.all([Promise.all(record.windows.map(read)), Promise.all(record.machines.map((g) => Promise.all(g.map(read))))]);
      windowTexts.forEach((text, i) => {
        const key = record.windows[i] as string;
        const times = decodeRecord(base + key, () => windowTimes(text));
        for (const unavailability of times) windows.push({ unavailability, machines: [] });
        stored.windows.push({ key, times });
      });
      groupTexts.forEach((texts, i) => {
        const keys = record.machines[i] as string[];
        const pieces: MachinePiece[] = [];
        texts.forEach((text, j) =>
          decodeRecord(base + (keys[j] as string), () => {
            for (const piece of machinePieces(JSON.parse(text))) {
              const into = windows[piece.window]?.machines;
              if (into === undefined) throw new Error(`window ${piece.window} is not in the schedule`);
              const start = into.length;
              addMachines(into, piece.machines);
              // The very objects of the schedule, so an unchanged machine is known by identity.
              const machines = into.slice(start);
              const last = pieces[pieces.length - 1];
              if (last?.window === piece.window) last.machines.push(...machines);
              else pieces.push({ window: piece.window, machines });
            }
          }),
        );
        stored.machines.push({ keys, pieces });
      });
    }
    const referenced = new Set(storedKeys(stored));
    let highest = record?.generation ?? 0;
    for (const k of keys) {
      const key = k.slice(base.length);
      if (key === 'current' || referenced.has(key)) continue;
      this.#orphans.add(key);
      const g = /^g(\d+)\//.exec(key);
      if (g !== null) highest = Math.max(highest, Number(g[1]));
    }
    this.#nextGeneration = Math.max(this.#nextGeneration, highest + 1);
    this.#stored = stored;
    this.#schedule = { windows };
    return this.#schedule;
  }

  /**
   * Writes the schedule as a new generation: the chunks that differ from the current ones
   * (several guarded transactions when large), then `current` naming its chunks, with the
   * deletion of those no longer named, in one guarded transaction: readers see the old schedule
   * or the new one, never a mix. After a failure the schedule is read again before the next
   * write, so nothing is kept or deleted on a guess about what etcd holds.
   */
  async #writeSchedule(schedule: DurableSchedule, alsoOps: readonly IOperation[] = []): Promise<void> {
    if (this.#stored === undefined) await this.#loadSchedule();
    const old = this.#stored as StoredSchedule;
    const generation = this.#nextGeneration++;
    const puts: Array<{ key: string; text: string }> = [];
    let n = 0;
    const stored: StoredSchedule = { windows: [], machines: [], legacy: [] };
    for (let i = 0, c = 0; i < schedule.windows.length; i += WINDOWS_PER_CHUNK, c++) {
      const times = schedule.windows.slice(i, i + WINDOWS_PER_CHUNK).map((w) => w.unavailability);
      const was = old.windows[c];
      if (was !== undefined && sameTimes(was.times, times)) stored.windows.push(was);
      else {
        const key = `g${generation}/w${c}`;
        puts.push({ key, text: windowsJson(times) });
        stored.windows.push({ key, times });
      }
    }
    // Machine groups by position: MACHINES_PER_CHUNK machines each, a window's machines spanning groups.
    const groups: MachinePiece[][] = [[]];
    let room = MACHINES_PER_CHUNK;
    schedule.windows.forEach((w, window) => {
      for (let from = 0; from < w.machines.length; ) {
        if (room === 0) {
          groups.push([]);
          room = MACHINES_PER_CHUNK;
        }
        const machines = w.machines.slice(from, from + room);
        from += machines.length;
        room -= machines.length;
        (groups[groups.length - 1] as MachinePiece[]).push({ window, machines });
      }
    });
    groups.forEach((pieces, c) => {
      if (pieces.length === 0) return;
      const was = old.machines[c];
      if (was !== undefined && samePieces(was.pieces, pieces)) {
        stored.machines.push(was);
        return;
      }
      const keys = machineChunkTexts(pieces).map((text) => {
        const key = `g${generation}/${n++}`;
        puts.push({ key, text });
        return key;
      });
      stored.machines.push({ keys, pieces });
    });
    const kept = new Set(storedKeys(stored));
    const dropKeys = [...new Set([...storedKeys(old), ...this.#orphans])].filter((k) => !kept.has(k));
    const drop = dropKeys.map((k) => this.#del(`maintenance/${k}`));
    const record: ScheduleRecord = { format: 2, generation, windows: stored.windows.map((w) => w.key), machines: stored.machines.map((g) => g.keys), chunks: 1 };
    // Chunk transactions by count and bytes, under etcd's request and operation limits.
    const txns: IOperation[][] = [];
    let bytes = 0;
    for (const p of puts) {
      const size = Buffer.byteLength(p.text);
      let txn = txns[txns.length - 1];
      if (txn === undefined || txn.length === CHUNKS_PER_TXN || bytes + size > SCHEDULE_TXN_BYTES) {
        txns.push((txn = []));
        bytes = 0;
      }
      txn.push(this.#putText(`maintenance/${p.key}`, p.text));
      bytes += size;
    }
    const makeCurrent = [this.#putText('maintenance/current', JSON.stringify(record)), ...alsoOps];
    // Deletions ride with `current` while the transaction stays under etcd's operation limit; the rest follow it.
    const inline = txns.length <= 1 && (txns[0]?.length ?? 0) + makeCurrent.length + drop.length <= MAX_OPS;
    try {
      if (txns.length <= 1) {
        // Small changes (up to CHUNKS_PER_TXN chunks): made current in the same transaction.
        await this.#txnIf([], [...(txns[0] ?? []), ...makeCurrent, ...(inline ? drop : [])]);
      } else {
        // The chunk transactions are independent (nothing reads a generation before it is
        // current): sent together, they cost one round trip to etcd instead of one each.
        const sent = await Promise.allSettled(txns.map((t) => this.#txnIf([], t)));
        const failed = sent.find((r): r is PromiseRejectedResult => r.status === 'rejected');
        if (failed !== undefined) throw failed.reason;
        await this.#txnIf([], makeCurrent);
      }
    } catch (e) {
      // Whether `current` moved is not known: read it again before the next write.
      this.#stored = undefined;
      this.#schedule = undefined;
      throw e;
    }
    this.#stored = stored;
    this.#schedule = schedule;
    this.#orphans.clear();
    // No longer referenced: a failure here leaves keys nothing reads, for the next generation to delete.
    for (let i = inline ? drop.length : 0; i < drop.length; i += MAX_OPS) {
      try {
        await this.#txnIf([], drop.slice(i, i + MAX_OPS));
      } catch {
        for (const k of dropKeys.slice(i)) this.#orphans.add(k);
        break;
      }
    }
  }

  // ---- Maintenance plans, in chunks -------------------------------------------------------------

  /**
   * Puts chunks in transactions of at most PLAN_TXN_BYTES each, every one guarded by `guard`;
   * the last also carries `last` (the record that makes them current). False as soon as a
   * guard fails: what the earlier transactions wrote is not current, so it is not seen.
   */
  async #writeChunks(guard: readonly Compare[], chunks: ReadonlyArray<{ key: string; value: Buffer }>, last: IOperation[]): Promise<boolean> {
    const groups: Array<Array<{ key: string; value: Buffer }>> = [[]];
    let bytes = 0;
    for (const c of chunks) {
      const group = groups[groups.length - 1] as Array<{ key: string; value: Buffer }>;
      if (group.length > 0 && bytes + c.value.length > PLAN_TXN_BYTES) {
        groups.push([c]);
        bytes = c.value.length;
      } else {
        group.push(c);
        bytes += c.value.length;
      }
    }
    for (const [i, group] of groups.entries()) {
      const ops = group.map((c) => this.#putText(c.key, c.value));
      if (i === groups.length - 1) ops.push(...last);
      if (!(await this.#txnIf(guard, ops))) return false;
    }
    return true;
  }

  /** Every plan's record, then its spec and current progress chunk by chunk; by createdNs, then name. */
  async #loadPlans(): Promise<DurableMaintenancePlan[]> {
    const records: StoredPlan[] = [];
    for await (const kv of this.#scan(`${this.#p}maintenance-plans/`)) records.push(JSON.parse(kv.value) as StoredPlan);
    const plans = await Promise.all(
      records.map(async (r): Promise<DurableMaintenancePlan> => {
        const base = `maintenance-plan-chunks/${r.name}/`;
        const [spec, progress] = await Promise.all([
          this.#readChunks(`${base}spec/`, r.spec, `the spec of maintenance plan '${r.name}'`),
          this.#readChunks(`${base}g${r.progress.generation}/`, r.progress, `the progress of maintenance plan '${r.name}'`),
        ]);
        return { name: r.name, spec, progress, createdNs: BigInt(r.createdNs) };
      }),
    );
    return plans.sort((a, b) => (a.createdNs !== b.createdNs ? (a.createdNs < b.createdNs ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** One text from its chunks, one get each (a range of them could pass gRPC's 4 MiB message limit). */
  async #readChunks(prefix: string, size: { chunks: number; bytes: number }, what: string): Promise<string> {
    const parts = await Promise.all(
      Array.from({ length: size.chunks }, async (_, i) => {
        const b = await this.#client.get(`${this.#p}${prefix}${i}`).buffer();
        if (b === null) throw new Error(`${what} in etcd is missing chunk ${i} of ${size.chunks}`);
        return b;
      }),
    );
    const all = Buffer.concat(parts);
    if (all.length !== size.bytes) throw new Error(`${what} in etcd is ${all.length} bytes where its record says ${size.bytes}`);
    return all.toString('utf8');
  }
}

/**
 * A text's UTF-8 in chunks of PLAN_CHUNK_BYTES. Cut at byte offsets, a chunk may end inside a
 * character; the text is decoded only once its chunks are joined again.
 */
function chunksOf(text: string): { chunks: Buffer[]; bytes: number } {
  const all = Buffer.from(text, 'utf8');
  const chunks: Buffer[] = [];
  for (let i = 0; i < all.length; i += PLAN_CHUNK_BYTES) chunks.push(all.subarray(i, i + PLAN_CHUNK_BYTES));
  return { chunks, bytes: all.length };
}

/** Decodes one stored record: one that does not decode says which key it is (the term then fails to start with that). */
function decodeRecord<T>(key: string, decode: () => T): T {
  try {
    return decode();
  } catch (e) {
    throw new Error(`the registry in etcd has a malformed record at ${key}: ${(e as Error).message}`);
  }
}

/**
 * An agent's record as stored: `{id, info, version, capabilities, registeredTimeNs, principal}`,
 * registeredTimeNs an exact int64. Written at every registration, so without stringifyJson's
 * replacer (which visits every value of the AgentInfo for the one bigint): what it would write,
 * byte for byte (a unit test holds them equal), unless the info holds a bigint of its own.
 */
export function agentText(a: DurableAgent): string {
  let head: string;
  try {
    head = JSON.stringify({ id: a.id, info: a.info, version: a.version, capabilities: a.capabilities });
  } catch {
    // A bigint somewhere in the info: the general writer.
    return stringifyJson(agentDoc(a));
  }
  const principal = a.principal === undefined ? '' : `,"principal":${JSON.stringify(a.principal)}`;
  return `${head.slice(0, -1)},"registeredTimeNs":${a.registeredTimeNs.toString()}${principal}}`;
}

function agentDoc(a: DurableAgent): DurableAgent {
  const doc: DurableAgent = { id: a.id, info: a.info, version: a.version, capabilities: a.capabilities, registeredTimeNs: a.registeredTimeNs };
  // The binding travels with the record: a leader elected after a failover enforces it too.
  if (a.principal !== undefined) doc.principal = a.principal;
  return doc;
}

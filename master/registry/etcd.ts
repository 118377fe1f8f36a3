/**
 * The registry in etcd (HA masters): the same Registry interface and contract as SQLite, with
 * the key layout of reference/etcd.md §6.2 under the cluster's prefix:
 *
 *   <prefix>/registry/agents/<id>          admitted agent (DurableAgent)
 *   <prefix>/registry/unreachable/<id>     when it was marked unreachable
 *   <prefix>/registry/deactivated/<id>     present while deactivated
 *   <prefix>/registry/drains/<id>          its drain: config, started
 *   <prefix>/registry/drained/<id>         when the drain became DRAINED
 *   <prefix>/registry/gone/<id>            marked gone, refused forever
 *   <prefix>/registry/frameworks/<id>      DurableFramework
 *   <prefix>/registry/maintenance/current  which generation of the schedule is current
 *   <prefix>/registry/maintenance/g<n>/<i> that generation's schedule, in chunks
 *
 * Every change is one transaction of a few small keys, so no value nears etcd's request limit
 * however large the cluster; the one exception, a schedule of tens of thousands of machines,
 * is written as a new generation in chunks and made current by one transaction, so it too
 * changes atomically. With a fence (the leader's election key and its create_revision, the
 * epoch) every transaction is guarded by it: a deposed master's write fails with
 * RegistryFencedError and changes nothing. Order of recovery is creation order
 * (create_revision), as SQLite's rowid.
 */

import type { Etcd3, IOperation } from 'etcd3';
import type { DrainConfig } from '../../shared/drain.js';
import { fail } from '../../shared/errors.js';
import { parseJson, stringifyJson } from '../../shared/json.js';
import {
  RegistryFencedError,
  type DurableAgent,
  type DurableFramework,
  type DurableMachine,
  type DurableSchedule,
  type GoneAgent,
  type RecoveredAgent,
  type Registry,
  type RegistryState,
} from './registry.js';

/** The leader's election key and its create_revision: every write is guarded by both. */
export interface Fence {
  key: string;
  epoch: bigint;
}

/** Machines per chunk of a schedule generation: about 100 kB of JSON. */
const MACHINES_PER_CHUNK = 1_000;
/** Records per page when recovering. */
const SCAN_PAGE = 1_000;
/** Chunks per transaction: well under etcd's 1.5 MiB request and 128 operations. */
const CHUNKS_PER_TXN = 8;

/** Operations per grouped transaction: under etcd's default --max-txn-ops of 128. */
const MAX_OPS = 120;

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

/** A piece of one window in a chunk (a window larger than a chunk spans several). */
interface StoredPiece {
  window: number;
  startNs: bigint;
  durationNs?: bigint;
  machines: DurableMachine[];
}

export class EtcdRegistry implements Registry {
  readonly #client: Etcd3;
  readonly #p: string;
  readonly #fence: Fence | undefined;
  /** Writes in the order they were made: consecutive plain ones share a transaction (group commit). */
  #queue: QueuedWrite[] = [];
  #draining: Promise<void> | undefined;
  #closed = false;
  /** The schedule as last read or written: DOWN and UP change modes in it and write a new generation. */
  #schedule: DurableSchedule | undefined;
  #generation: number | undefined;

  /** `prefix` is the cluster's key prefix (`/drydock`); `fence` guards every write (HA). */
  constructor(client: Etcd3, prefix: string, fence?: Fence) {
    this.#client = client;
    this.#p = `${prefix.replace(/\/+$/, '')}/registry/`;
    this.#fence = fence;
  }

  async recover(): Promise<RegistryState> {
    if (this.#closed) throw fail('REGISTRY_CLOSED');
    const kinds = ['agents', 'unreachable', 'deactivated', 'drains', 'drained', 'gone', 'frameworks'];
    const byKind = new Map<string, Array<{ id: string; value: unknown }>>();
    await Promise.all(
      kinds.map(async (kind) => {
        const list: Array<{ id: string; value: unknown }> = [];
        for await (const kv of this.#scan(`${this.#p}${kind}/`)) list.push({ id: kv.key.slice(this.#p.length + kind.length + 1), value: parseJson(kv.value) });
        byKind.set(kind, list);
      }),
    );
    const map = (kind: string): Map<string, unknown> => new Map((byKind.get(kind) ?? []).map((e) => [e.id, e.value]));
    const unreachable = map('unreachable');
    const deactivated = map('deactivated');
    const drains = map('drains');
    const drained = map('drained');
    const agents: RecoveredAgent[] = (byKind.get('agents') ?? []).map(({ id, value }) => {
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
    });
    const frameworks: DurableFramework[] = (byKind.get('frameworks') ?? []).map(({ value }) => {
      const f = value as { id: string; info: DurableFramework['info']; registeredTimeNs?: bigint };
      return { id: f.id, info: f.info, registeredTimeNs: f.registeredTimeNs === undefined ? undefined : BigInt(f.registeredTimeNs) };
    });
    const gone: GoneAgent[] = (byKind.get('gone') ?? []).map(({ id, value }) => ({ id, goneTimeNs: BigInt(value as bigint) }));
    const maintenance = await this.#loadSchedule();
    const state: RegistryState = { agents, frameworks, maintenance };
    if (gone.length > 0) state.goneAgents = gone;
    return state;
  }

  admitAgent(agent: DurableAgent): Promise<void> {
    return this.#txn([], [this.#put(`agents/${agent.id}`, agentDoc(agent)), this.#del(`unreachable/${agent.id}`)]);
  }

  markAgentUnreachable(agentId: string, timeNs: bigint): Promise<void> {
    return this.#txn([`agents/${agentId}`], [this.#put(`unreachable/${agentId}`, timeNs)], `markAgentUnreachable: agent ${agentId} is not in the registry`);
  }

  markAgentReachable(agent: DurableAgent): Promise<void> {
    return this.admitAgent(agent);
  }

  removeAgent(agentId: string): Promise<void> {
    return this.#txn([], this.#forget(agentId));
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

  markAgentGone(agentId: string, timeNs: bigint): Promise<void> {
    return this.#txn([], [...this.#forget(agentId), this.#put(`gone/${agentId}`, timeNs)]);
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

  startMaintenance(machineKeys: readonly string[]): Promise<void> {
    const keys = new Set(machineKeys);
    return this.#track(async () => {
      const s = await this.#currentSchedule();
      await this.#writeSchedule({ windows: s.windows.map((w) => ({ ...w, machines: w.machines.map((m) => (keys.has(m.key) ? { ...m, mode: 'DOWN' as const } : m)) })) });
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

  /** Refuses new writes, then waits for those already made. The etcd client is its owner's to close. */
  async close(): Promise<void> {
    this.#closed = true;
    while (this.#draining !== undefined) await this.#draining;
  }

  // ---- Transactions ----------------------------------------------------------------------------

  #put(key: string, value: unknown): IOperation {
    return this.#client.put(this.#p + key).value(stringifyJson(value));
  }

  #del(key: string): IOperation {
    return this.#client.delete().key(this.#p + key);
  }

  #forget(agentId: string): IOperation[] {
    return ['agents', 'unreachable', 'deactivated', 'drains', 'drained'].map((k) => this.#del(`${k}/${agentId}`));
  }

  #exists(key: string): [string, 'Create', '>', number] {
    return [this.#p + key, 'Create', '>', 0];
  }

  #absent(key: string): [string, 'Create', '==', number] {
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
  async #txnIf(compares: ReadonlyArray<readonly [string, 'Create', '>' | '==', number]>, ops: IOperation[]): Promise<boolean> {
    const all = [...compares];
    if (this.#fence !== undefined) all.push([this.#fence.key, 'Create', '==', Number(this.#fence.epoch)]);
    // A transaction starts with a compare: with none to make, one that always holds (any key's create_revision is > -1).
    const first = all[0] ?? ([this.#p, 'Create', '>', -1] as const);
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
  async *#scan(prefix: string): AsyncGenerator<{ key: string; value: string }> {
    let from = 0n;
    for (;;) {
      const page = await this.#client.getAll().prefix(prefix).sort('Create', 'Ascend').minCreateRevision(String(from)).limit(SCAN_PAGE).exec();
      for (const kv of page.kvs) yield { key: kv.key.toString('utf8'), value: kv.value.toString('utf8') };
      const last = page.kvs.at(-1);
      if (last === undefined || page.kvs.length < SCAN_PAGE) return;
      from = BigInt(last.create_revision) + 1n;
    }
  }

  async #currentSchedule(): Promise<DurableSchedule> {
    return this.#schedule ?? this.#loadSchedule();
  }

  /** The current generation's chunks, read one by one and reassembled into windows (and remembered). */
  async #loadSchedule(): Promise<DurableSchedule> {
    const current = await this.#client.get(`${this.#p}maintenance/current`).string();
    if (current === null) {
      this.#generation = 0;
      this.#schedule = { windows: [] };
      return this.#schedule;
    }
    const { generation, chunks } = parseJson(current) as { generation: number; chunks: number };
    const windows: DurableSchedule['windows'] = [];
    let last = -1;
    for (let i = 0; i < chunks; i++) {
      const text = await this.#client.get(`${this.#p}maintenance/g${generation}/${i}`).string();
      if (text === null) throw new Error(`the maintenance schedule in etcd is missing chunk ${i} of generation ${generation}`);
      for (const piece of parseJson(text) as StoredPiece[]) {
        if (piece.window !== last) {
          const unavailability: { startNs: bigint; durationNs?: bigint } = { startNs: BigInt(piece.startNs) };
          if (piece.durationNs !== undefined) unavailability.durationNs = BigInt(piece.durationNs);
          windows.push({ unavailability, machines: [] });
          last = piece.window;
        }
        (windows[windows.length - 1] as DurableSchedule['windows'][number]).machines.push(...piece.machines);
      }
    }
    this.#generation = generation;
    this.#schedule = { windows };
    return this.#schedule;
  }

  /**
   * Writes the schedule as a new generation (chunks, several guarded transactions), then makes
   * it current and drops the old one in one guarded transaction: readers see the old schedule
   * or the new one, never a mix.
   */
  async #writeSchedule(schedule: DurableSchedule): Promise<void> {
    if (this.#generation === undefined) await this.#currentSchedule();
    const generation = (this.#generation ?? 0) + 1;
    const chunks: StoredPiece[][] = [[]];
    let room = MACHINES_PER_CHUNK;
    schedule.windows.forEach((w, window) => {
      let machines = w.machines;
      do {
        if (room === 0) {
          chunks.push([]);
          room = MACHINES_PER_CHUNK;
        }
        const take = machines.slice(0, room);
        machines = machines.slice(take.length);
        room -= take.length;
        const piece: StoredPiece = { window, startNs: w.unavailability.startNs, machines: take };
        if (w.unavailability.durationNs !== undefined) piece.durationNs = w.unavailability.durationNs;
        (chunks[chunks.length - 1] as StoredPiece[]).push(piece);
      } while (machines.length > 0);
    });
    const prefix = `maintenance/g${generation}/`;
    // A previous attempt at this generation may have left chunks: start clean.
    await this.#txnIf([], [this.#client.delete().prefix(this.#p + prefix)]);
    for (let i = 0; i < chunks.length; i += CHUNKS_PER_TXN) {
      const ops = chunks.slice(i, i + CHUNKS_PER_TXN).map((c, j) => this.#put(`${prefix}${i + j}`, c));
      await this.#txnIf([], ops);
    }
    const old = this.#generation ?? 0;
    await this.#txnIf([], [this.#put('maintenance/current', { generation, chunks: chunks.length }), this.#client.delete().prefix(`${this.#p}maintenance/g${old}/`)]);
    this.#generation = generation;
    this.#schedule = schedule;
  }
}

function agentDoc(a: DurableAgent): DurableAgent {
  return { id: a.id, info: a.info, version: a.version, capabilities: a.capabilities, registeredTimeNs: a.registeredTimeNs };
}

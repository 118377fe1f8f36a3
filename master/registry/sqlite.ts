/**
 * The SQLite registry (better-sqlite3): WAL, synchronous=FULL, numbered migrations, prepared
 * statements made once. This is the only file with SQL in it.
 *
 * Group commit: every write is queued and everything queued during one event-loop turn is
 * committed in ONE transaction (one fsync) on setImmediate; each write's promise resolves
 * after that commit is on disk. 10,000 agents registering at once thus cost a handful of
 * fsyncs, not 10,000. Each write runs in its own savepoint, so one failing write rejects alone.
 *
 * The fsync is off the event loop. With `synchronous=FULL` SQLite fsyncs the WAL inside COMMIT,
 * and better-sqlite3 is synchronous: every commit blocked the master for the length of an fsync
 * (a registration storm of 10,000 agents spent 2.4 of its ~10 s blocked there, accepting no
 * connection). So the connection runs `synchronous=NORMAL`, under which COMMIT writes the WAL
 * frames but does not sync them, and the registry syncs the WAL file itself with fdatasync on
 * libuv's thread pool, resolving a batch's writes only once a sync that started after its
 * COMMIT has completed. Durability is the same as FULL: nothing is acknowledged (and nothing
 * applied to memory) before its WAL frames are on disk; a crash before that loses only writes
 * nobody was told of. The WAL is one file for the life of the connection (SQLite deletes it only
 * when the last connection closes, and resets it in place after a checkpoint, which under NORMAL
 * syncs the WAL and the database file itself). Where the WAL file cannot be opened, the
 * connection stays at FULL and commits sync in place as before.
 */

import { fail } from '../../shared/errors.js';
import Database from 'better-sqlite3';
import { closeSync, fdatasync, mkdirSync, openSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentSelf } from '../../shared/protocol.js';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import type { DrainConfig } from '../../shared/drain.js';
import {
  GROUP_COMMIT_WINDOW_MS,
  MAINTENANCE_PLAN_NAME,
  maintenancePlanProblem,
  maintenancePlanProgressProblem,
  MAX_REMOVED_BINDINGS,
  RegistryFencedError,
  storedMachineAttributes,
  type AgentRemoval,
  type DurableAgent,
  type DurableFramework,
  type DurableMachine,
  type DurableMaintenancePlan,
  type DurableSchedule,
  type GoneAgent,
  type MachineAttributes,
  type Reachability,
  type RecoveredAgent,
  type Registry,
  type RegistryLimits,
  type RegistryState,
  type RemovedBinding,
} from './registry.js';

/** File name of the registry inside --work_dir. */
export const REGISTRY_FILE = 'registry.db';

interface QueuedWrite {
  run: () => void;
  /** Called once the transaction holding this write has committed (before the WAL sync). */
  committed: (() => void) | undefined;
  resolve: () => void;
  reject: (e: Error) => void;
}

/**
 * The maintenance rows as they are in the file (kept by the schedule writes, read at recovery),
 * so that replacing a schedule writes only the rows that change: a new schedule of 10,000
 * machines whose windows moved rewrites 1,000 window rows, not 11,000 rows. Undefined while not
 * known (before recovery, after a write that failed): the next schedule is then written whole.
 * A schedule write brings them to the new schedule in place (the rows of machines that stay are
 * the same objects), inside its write: were it to fail, they are dropped as unknown.
 */
interface ScheduleRows {
  windows: Map<number, { startNs: bigint; durationNs: bigint | null }>;
  machines: Map<string, MachineRowState>;
}

/**
 * Whether more of the rows would leave than stay. Most updates keep their machines: 32 of them,
 * spread evenly, say so without looking every machine up; only when most of those are new is
 * every machine counted.
 */
export function moreLeaveThanStay(rows: ReadonlyMap<string, unknown>, windows: DurableSchedule['windows']): boolean {
  if (rows.size === 0) return false;
  let total = 0;
  for (const w of windows) total += w.machines.length;
  const step = Math.max(1, Math.floor(total / 32));
  let sampled = 0;
  let missing = 0;
  let next = 0;
  let at = 0;
  for (const w of windows) {
    while (next < at + w.machines.length) {
      sampled++;
      if (!rows.has((w.machines[next - at] as DurableMachine).key)) missing++;
      next += step;
    }
    at += w.machines.length;
  }
  if (missing * 2 <= sampled) return false;
  let kept = 0;
  for (const w of windows) for (const m of w.machines) if (rows.has(m.key)) kept++;
  return rows.size - kept > kept;
}

interface MachineRowState {
  window: number;
  position: number;
  hostname: string | null;
  ip: string | null;
  mode: 'DRAINING' | 'DOWN';
  /** attributes_json as in the file. */
  attributes: string | null;
  /**
   * The attributes object `attributes` was last written or read from: the model hands the same
   * object on every schedule write until an agent brings new ones, so only a new object is
   * turned into JSON (10,000 machines per update).
   */
  attributesFrom: Readonly<Record<string, string>> | undefined;
  /** The schedule write that last listed this machine (ScheduleRows are swept by it). */
  written: number;
}

/** What is stored in info_json: everything of DurableAgent but the id and the time. */
interface StoredInfo {
  info: AgentSelf;
  version: string;
  capabilities: string[];
}

interface AgentRow {
  id: string;
  info_json: string;
  registered_time_ns: bigint;
  reachability: Reachability;
  unreachable_time_ns: bigint | null;
  principal: string | null;
}

interface DrainRow {
  agent_id: string;
  drain_state: 'DRAINING' | 'DRAINED' | null;
  max_grace_period_ns: bigint | null;
  mark_gone: bigint;
  started_time_ns: bigint | null;
  drained_time_ns: bigint | null;
}

interface FrameworkRow {
  id: string;
  info_json: string;
  registered_time_ns: bigint | null;
}

interface WindowRow {
  position: bigint;
  start_ns: bigint;
  duration_ns: bigint | null;
}

interface PlanRow {
  name: string;
  spec: string;
  progress: string;
  created_ns: bigint;
}

interface MachineRow {
  machine_key: string;
  window: bigint;
  position: bigint;
  hostname: string | null;
  ip: string | null;
  mode: 'DRAINING' | 'DOWN';
  attributes_json: string | null;
}

/** Counters, so tests (and metrics later) can see group commit at work. */
export interface RegistryStats {
  /** Transactions committed. */
  commits: number;
  /** Writes committed. */
  writes: number;
  /** Largest number of writes in one transaction. */
  largestBatch: number;
}

/** Opens (creating dir and file if needed) and migrates the registry in `dir`. Throws REGISTRY_SCHEMA_TOO_NEW. */
export function openSqliteRegistry(dir: string, limits?: RegistryLimits): SqliteRegistry {
  mkdirSync(dir, { recursive: true });
  return new SqliteRegistry(join(dir, REGISTRY_FILE), limits);
}

export class SqliteRegistry implements Registry {
  readonly #db: Database.Database;
  readonly #stmt: {
    upsert: Database.Statement;
    unreachable: Database.Statement;
    reachable: Database.Statement;
    remove: Database.Statement;
    all: Database.Statement;
    upsertFramework: Database.Statement;
    removeFramework: Database.Statement;
    allFrameworks: Database.Statement;
    clearWindows: Database.Statement;
    clearMachines: Database.Statement;
    insertWindow: Database.Statement;
    insertMachine: Database.Statement;
    updateWindow: Database.Statement;
    deleteWindow: Database.Statement;
    updateMachine: Database.Statement;
    machineDown: Database.Statement;
    machineUp: Database.Statement;
    dropEmptyWindows: Database.Statement;
    allWindows: Database.Statement;
    allMachines: Database.Statement;
  };
  /** Drain, deactivation and gone agents (migration 4). */
  readonly #drainStmt: {
    drain: Database.Statement;
    drained: Database.Statement;
    deactivate: Database.Statement;
    reactivate: Database.Statement;
    goneInsert: Database.Statement;
    agentExists: Database.Statement;
    all: Database.Statement;
    allGone: Database.Statement;
  };
  /** Removed agents' bindings (migration 8). */
  readonly #bindingStmt: {
    remove: Database.Statement;
    insert: Database.Statement;
    dropOldest: Database.Statement;
    count: Database.Statement;
    all: Database.Statement;
    machineAttributes: Database.Statement;
  };
  readonly #maxRemovedBindings: number;
  /**
   * Rows of removed_bindings, as the transaction under way sees them; undefined while not known
   * (before recovery, after a commit that failed), and then counted when next needed.
   */
  #removedBindings: number | undefined;
  /** Maintenance plans (migration 5). */
  readonly #planStmt: {
    insert: Database.Statement;
    progress: Database.Statement;
    remove: Database.Statement;
    all: Database.Statement;
  };
  readonly #writeOne: (w: QueuedWrite) => void;
  readonly #commitBatch: (batch: QueuedWrite[]) => Map<QueuedWrite, Error>;
  #queue: QueuedWrite[] = [];
  #scheduled = false;
  #closed = false;
  #lastCommitMs = Number.NEGATIVE_INFINITY;
  /** The WAL file, fdatasync'd off the event loop after each commit; undefined: commits sync in place (FULL). */
  #walFd: number | undefined;
  /** The maintenance rows in the file, when known (ScheduleRows). */
  #scheduleRows: ScheduleRows | undefined;
  /** Schedule writes so far (MachineRowState.written). */
  #scheduleWrites = 0;
  /** Committed writes waiting for the next sync of the WAL, and whether a sync is under way. */
  #unsynced: QueuedWrite[] = [];
  #syncing: Promise<void> | undefined;
  readonly stats: RegistryStats = { commits: 0, writes: 0, largestBatch: 0 };

  constructor(file: string, limits: RegistryLimits = {}) {
    this.#maxRemovedBindings = limits.maxRemovedBindings ?? MAX_REMOVED_BINDINGS;
    const db = new Database(file);
    let walFd: number | undefined;
    try {
      db.pragma('journal_mode = WAL');
      // FULL: a commit is on disk before the master answers anyone (durable before acknowledged).
      db.pragma('synchronous = FULL');
      db.pragma('busy_timeout = 5000');
      migrate(db);
      // migrate() read the database, so the WAL file exists now and stays until the connection closes.
      walFd = openWal(file);
      // The same guarantee, kept by #sync: COMMIT writes the WAL, a write is acknowledged once it is synced.
      if (walFd !== undefined) db.pragma('synchronous = NORMAL');
    } catch (e) {
      if (walFd !== undefined) closeSync(walFd);
      db.close();
      throw e;
    }
    this.#walFd = walFd;
    this.#db = db;
    this.#stmt = {
      upsert: db.prepare(
        `INSERT INTO agents (id, info_json, registered_time_ns, reachability, unreachable_time_ns, principal)
         VALUES (?, ?, ?, 'REACHABLE', NULL, ?)
         ON CONFLICT (id) DO UPDATE SET info_json = excluded.info_json, registered_time_ns = excluded.registered_time_ns,
           reachability = 'REACHABLE', unreachable_time_ns = NULL, principal = excluded.principal`,
      ),
      unreachable: db.prepare(`UPDATE agents SET reachability = 'UNREACHABLE', unreachable_time_ns = ? WHERE id = ?`),
      reachable: db.prepare(
        `UPDATE agents SET reachability = 'REACHABLE', unreachable_time_ns = NULL, info_json = ?, principal = ? WHERE id = ?`,
      ),
      remove: db.prepare(`DELETE FROM agents WHERE id = ?`),
      all: db.prepare(`SELECT id, info_json, registered_time_ns, reachability, unreachable_time_ns, principal FROM agents ORDER BY rowid`).safeIntegers(true),
      upsertFramework: db.prepare(
        `INSERT INTO frameworks (id, info_json, registered_time_ns) VALUES (?, ?, ?)
         ON CONFLICT (id) DO UPDATE SET info_json = excluded.info_json, registered_time_ns = excluded.registered_time_ns`,
      ),
      removeFramework: db.prepare(`DELETE FROM frameworks WHERE id = ?`),
      allFrameworks: db.prepare(`SELECT id, info_json, registered_time_ns FROM frameworks ORDER BY rowid`).safeIntegers(true),
      clearWindows: db.prepare(`DELETE FROM maintenance_windows`),
      clearMachines: db.prepare(`DELETE FROM maintenance_machines`),
      insertWindow: db.prepare(`INSERT INTO maintenance_windows (position, start_ns, duration_ns) VALUES (?, ?, ?)`),
      insertMachine: db.prepare(`INSERT INTO maintenance_machines (machine_key, window, position, hostname, ip, mode, attributes_json) VALUES (?, ?, ?, ?, ?, ?, ?)`),
      updateWindow: db.prepare(`UPDATE maintenance_windows SET start_ns = ?, duration_ns = ? WHERE position = ?`),
      deleteWindow: db.prepare(`DELETE FROM maintenance_windows WHERE position = ?`),
      updateMachine: db.prepare(`UPDATE maintenance_machines SET window = ?, position = ?, hostname = ?, ip = ?, mode = ?, attributes_json = ? WHERE machine_key = ?`),
      // NULL attributes: the machine keeps those it has.
      machineDown: db.prepare(`UPDATE maintenance_machines SET mode = 'DOWN', attributes_json = coalesce(?, attributes_json) WHERE machine_key = ?`),
      machineUp: db.prepare(`DELETE FROM maintenance_machines WHERE machine_key = ?`),
      dropEmptyWindows: db.prepare(`DELETE FROM maintenance_windows WHERE position NOT IN (SELECT window FROM maintenance_machines)`),
      allWindows: db.prepare(`SELECT position, start_ns, duration_ns FROM maintenance_windows ORDER BY position`).safeIntegers(true),
      allMachines: db.prepare(`SELECT machine_key, window, position, hostname, ip, mode, attributes_json FROM maintenance_machines ORDER BY window, position`).safeIntegers(true),
    };
    this.#drainStmt = {
      drain: db.prepare(
        `INSERT INTO agent_drains (agent_id, drain_state, max_grace_period_ns, mark_gone, started_time_ns, drained_time_ns)
         VALUES (?, 'DRAINING', ?, ?, ?, NULL)
         ON CONFLICT (agent_id) DO UPDATE SET drain_state = 'DRAINING', max_grace_period_ns = excluded.max_grace_period_ns,
           mark_gone = excluded.mark_gone, started_time_ns = excluded.started_time_ns, drained_time_ns = NULL`,
      ),
      drained: db.prepare(`UPDATE agent_drains SET drain_state = 'DRAINED', drained_time_ns = ? WHERE agent_id = ? AND drain_state = 'DRAINING'`),
      deactivate: db.prepare(`INSERT INTO agent_drains (agent_id) VALUES (?) ON CONFLICT (agent_id) DO NOTHING`),
      reactivate: db.prepare(`DELETE FROM agent_drains WHERE agent_id = ?`),
      goneInsert: db.prepare(`INSERT INTO gone_agents (id, gone_time_ns) VALUES (?, ?) ON CONFLICT (id) DO NOTHING`),
      agentExists: db.prepare(`SELECT 1 FROM agents WHERE id = ?`),
      all: db.prepare(`SELECT agent_id, drain_state, max_grace_period_ns, mark_gone, started_time_ns, drained_time_ns FROM agent_drains`).safeIntegers(true),
      allGone: db.prepare(`SELECT id, gone_time_ns FROM gone_agents ORDER BY rowid`).safeIntegers(true),
    };
    this.#bindingStmt = {
      // Deleted and inserted again (not updated): a new seq, so a binding removed again is the newest.
      remove: db.prepare(`DELETE FROM removed_bindings WHERE id = ?`),
      insert: db.prepare(`INSERT INTO removed_bindings (id, principal, removed_time_ns) VALUES (?, ?, ?)`),
      dropOldest: db.prepare(`DELETE FROM removed_bindings WHERE seq IN (SELECT seq FROM removed_bindings ORDER BY seq LIMIT ?)`),
      count: db.prepare(`SELECT count(*) AS n FROM removed_bindings`),
      all: db.prepare(`SELECT id, principal, removed_time_ns FROM removed_bindings ORDER BY seq`).safeIntegers(true),
      // Only when the schedule does not hold these already (a no-op for a machine not in it).
      machineAttributes: db.prepare(`UPDATE maintenance_machines SET attributes_json = ? WHERE machine_key = ? AND attributes_json IS NOT ?`),
    };
    this.#planStmt = {
      // DO NOTHING, then `changes` says whether the name was free: no read before the write.
      insert: db.prepare(`INSERT INTO maintenance_plans (name, spec, progress, created_ns) VALUES (?, ?, ?, ?) ON CONFLICT (name) DO NOTHING`),
      progress: db.prepare(`UPDATE maintenance_plans SET progress = ? WHERE name = ?`),
      remove: db.prepare(`DELETE FROM maintenance_plans WHERE name = ?`),
      all: db.prepare(`SELECT name, spec, progress, created_ns FROM maintenance_plans ORDER BY created_ns, name`).safeIntegers(true),
    };
    // Nested better-sqlite3 transactions are savepoints: one write failing rolls back only itself.
    this.#writeOne = db.transaction((w: QueuedWrite) => w.run());
    this.#commitBatch = db.transaction((batch: QueuedWrite[]) => {
      const failed = new Map<QueuedWrite, Error>();
      for (const w of batch) {
        try {
          this.#writeOne(w);
        } catch (e) {
          failed.set(w, classify(e));
        }
      }
      return failed;
    });
  }

  recover(): Promise<RegistryState> {
    if (this.#closed) return Promise.reject(fail('REGISTRY_CLOSED'));
    const rows = this.#stmt.all.all() as AgentRow[];
    const agents = rows.map((row): RecoveredAgent => {
      const stored = JSON.parse(row.info_json) as StoredInfo;
      const agent: RecoveredAgent = {
        id: row.id,
        info: stored.info,
        version: stored.version,
        capabilities: stored.capabilities,
        registeredTimeNs: BigInt(row.registered_time_ns),
        reachability: row.reachability,
      };
      if (row.unreachable_time_ns !== null) agent.unreachableTimeNs = BigInt(row.unreachable_time_ns);
      if (row.principal !== null) agent.principal = row.principal;
      return agent;
    });
    const frameworks = (this.#stmt.allFrameworks.all() as FrameworkRow[]).map(
      (row): DurableFramework => ({
        id: row.id,
        info: JSON.parse(row.info_json) as DurableFramework['info'],
        registeredTimeNs: row.registered_time_ns === null ? undefined : BigInt(row.registered_time_ns),
      }),
    );
    const goneAgents = this.#recoverDrains(agents);
    const removedBindings = (this.#bindingStmt.all.all() as Array<{ id: string; principal: string; removed_time_ns: bigint }>).map(
      (r): RemovedBinding => ({ id: r.id, principal: r.principal, removedTimeNs: BigInt(r.removed_time_ns) }),
    );
    this.#removedBindings = removedBindings.length;
    const maintenancePlans = (this.#planStmt.all.all() as PlanRow[]).map(
      (row): DurableMaintenancePlan => ({ name: row.name, spec: row.spec, progress: row.progress, createdNs: BigInt(row.created_ns) }),
    );
    return Promise.resolve({
      agents,
      frameworks,
      maintenance: this.#recoverSchedule(),
      ...(goneAgents.length > 0 ? { goneAgents } : {}),
      ...(removedBindings.length > 0 ? { removedBindings } : {}),
      ...(maintenancePlans.length > 0 ? { maintenancePlans } : {}),
    });
  }

  createMaintenancePlan(plan: DurableMaintenancePlan): Promise<void> {
    const problem = maintenancePlanProblem(plan);
    if (problem !== undefined) return Promise.reject(problem);
    const { name, spec, progress, createdNs } = plan;
    return this.#enqueue(() => {
      // Throwing rolls back this write's savepoint only; the rest of the batch commits.
      if (this.#planStmt.insert.run(name, spec, progress, createdNs).changes === 0) throw fail('MAINTENANCE_PLAN_EXISTS', name);
    });
  }

  updateMaintenancePlanProgress(name: string, progress: string): Promise<void> {
    const problem = maintenancePlanProgressProblem(name, progress);
    if (problem !== undefined) return Promise.reject(problem);
    return this.#enqueue(() => {
      if (this.#planStmt.progress.run(progress, name).changes === 0) throw new Error(`updateMaintenancePlanProgress: maintenance plan '${name}' is not in the registry`);
    });
  }

  deleteMaintenancePlan(name: string): Promise<void> {
    return this.#enqueue(() => {
      // A name no plan can have is unknown, so a no-op (as etcd, where it must not become a key).
      if (MAINTENANCE_PLAN_NAME.test(name)) this.#planStmt.remove.run(name);
    });
  }

  #recoverSchedule(): DurableSchedule {
    const windows = new Map<bigint, DurableSchedule['windows'][number]>();
    const rows: ScheduleRows = { windows: new Map(), machines: new Map() };
    for (const w of this.#stmt.allWindows.all() as WindowRow[]) {
      const unavailability: { startNs: bigint; durationNs?: bigint } = { startNs: BigInt(w.start_ns) };
      if (w.duration_ns !== null) unavailability.durationNs = BigInt(w.duration_ns);
      windows.set(BigInt(w.position), { unavailability, machines: [] });
      rows.windows.set(Number(w.position), { startNs: BigInt(w.start_ns), durationNs: w.duration_ns === null ? null : BigInt(w.duration_ns) });
    }
    for (const m of this.#stmt.allMachines.all() as MachineRow[]) {
      const id: DurableMachine['id'] = {};
      if (m.hostname !== null) id.hostname = m.hostname;
      if (m.ip !== null) id.ip = m.ip;
      const attributes = storedAttributes(m.attributes_json);
      const machine: DurableMachine = { key: m.machine_key, id, mode: m.mode };
      if (attributes !== undefined) machine.attributes = attributes;
      windows.get(BigInt(m.window))?.machines.push(machine);
      rows.machines.set(m.machine_key, {
        window: Number(m.window),
        position: Number(m.position),
        hostname: m.hostname,
        ip: m.ip,
        mode: m.mode,
        attributes: attributes === undefined ? null : m.attributes_json,
        // The very object handed to the model, which hands it back on the next schedule write.
        attributesFrom: attributes,
        written: this.#scheduleWrites,
      });
    }
    this.#scheduleRows = rows;
    return { windows: [...windows.values()].filter((w) => w.machines.length > 0) };
  }

  updateSchedule(schedule: DurableSchedule): Promise<void> {
    let rows: ScheduleRows | undefined;
    return this.#enqueue(
      () => {
        // One write, so one savepoint inside the group commit: the schedule is replaced whole or not at all.
        rows = this.#scheduleRows;
        // Unknown until this write commits (a failure rolls it back and leaves them unknown).
        this.#scheduleRows = undefined;
        if (rows === undefined) {
          this.#stmt.clearMachines.run();
          this.#stmt.clearWindows.run();
          rows = { windows: new Map(), machines: new Map() };
        }
        this.#writeScheduleChanges(rows, schedule);
      },
      () => {
        this.#scheduleRows = rows;
      },
    );
  }

  /**
   * Writes the rows that differ between what the file holds (`rows`) and `schedule`, and brings
   * `rows` to it. (forEach: a for-of over entries allocates a pair per row.)
   */
  #writeScheduleChanges(rows: ScheduleRows, schedule: DurableSchedule): void {
    const st = this.#stmt;
    const windows = schedule.windows;
    windows.forEach((w, i) => {
      const startNs = w.unavailability.startNs;
      const durationNs = w.unavailability.durationNs ?? null;
      const was = rows.windows.get(i);
      if (was === undefined) {
        st.insertWindow.run(i, startNs, durationNs);
        rows.windows.set(i, { startNs, durationNs });
      } else if (was.startNs !== startNs || was.durationNs !== durationNs) {
        st.updateWindow.run(startNs, durationNs, i);
        was.startNs = startNs;
        was.durationNs = durationNs;
      }
    });
    // Windows are numbered 0..n-1 by the schedule; the file may hold others (higher, or left by STOP_MAINTENANCE).
    rows.windows.forEach((_w, i) => {
      if (i >= windows.length) {
        st.deleteWindow.run(i);
        rows.windows.delete(i);
      }
    });
    const written = ++this.#scheduleWrites;
    // When more rows leave than stay (a schedule that names other machines), one DELETE of them
    // all and the inserts cost less than a delete by key per row leaving (10,000 machines
    // replaced: 37 -> 24 ms in a bare SQLite file). The loop below then inserts every machine.
    if (moreLeaveThanStay(rows.machines, windows)) {
      st.clearMachines.run();
      rows.machines.clear();
    }
    windows.forEach((w, i) => {
      const machines = w.machines;
      for (let j = 0; j < machines.length; j++) {
        const m = machines[j] as DurableMachine;
        const hostname = m.id.hostname ?? null;
        const ip = m.id.ip ?? null;
        const from = m.attributes;
        const was = rows.machines.get(m.key);
        if (was === undefined) {
          const attributes = attributesText(from);
          st.insertMachine.run(m.key, i, j, hostname, ip, m.mode, attributes);
          rows.machines.set(m.key, { window: i, position: j, hostname, ip, mode: m.mode, attributes, attributesFrom: from, written });
          continue;
        }
        // The same object as last time: the same JSON, not made again.
        const attributes = from === was.attributesFrom ? was.attributes : attributesText(from);
        was.attributesFrom = from;
        if (was.window !== i || was.position !== j || was.hostname !== hostname || was.ip !== ip || was.mode !== m.mode || was.attributes !== attributes) {
          st.updateMachine.run(i, j, hostname, ip, m.mode, attributes, m.key);
          was.window = i;
          was.position = j;
          was.hostname = hostname;
          was.ip = ip;
          was.mode = m.mode;
          was.attributes = attributes;
        }
        was.written = written;
      }
    });
    // Machines this schedule did not list leave it (deleting the entry being visited is safe in forEach).
    rows.machines.forEach((row, key) => {
      if (row.written !== written) {
        st.machineUp.run(key);
        rows.machines.delete(key);
      }
    });
  }

  startMaintenance(machineKeys: readonly string[], attributes?: MachineAttributes): Promise<void> {
    const keys = [...machineKeys];
    // Turned into JSON now: the caller's objects may be replaced before the write runs, not changed.
    const given = new Map<string, { from: Readonly<Record<string, string>>; text: string }>();
    for (const k of keys) {
      const from = attributes?.get(k);
      const text = attributesText(from);
      if (from !== undefined && text !== null) given.set(k, { from, text });
    }
    let rows: ScheduleRows | undefined;
    return this.#enqueue(
      () => {
        rows = this.#scheduleRows;
        this.#scheduleRows = undefined;
        for (const k of keys) this.#stmt.machineDown.run(given.get(k)?.text ?? null, k);
      },
      () => {
        // Rows unknown when this write ran (another write of its batch ran first and failed, or replaced them): still unknown.
        if (rows === undefined) return void (this.#scheduleRows = undefined);
        for (const k of keys) {
          const m = rows.machines.get(k);
          if (m === undefined) continue;
          m.mode = 'DOWN';
          const g = given.get(k);
          if (g !== undefined) {
            m.attributes = g.text;
            m.attributesFrom = g.from;
          }
        }
        this.#scheduleRows = rows;
      },
    );
  }

  stopMaintenance(machineKeys: readonly string[]): Promise<void> {
    const keys = [...machineKeys];
    let rows: ScheduleRows | undefined;
    return this.#enqueue(
      () => {
        rows = this.#scheduleRows;
        this.#scheduleRows = undefined;
        for (const k of keys) this.#stmt.machineUp.run(k);
        this.#stmt.dropEmptyWindows.run();
      },
      () => {
        if (rows === undefined) return void (this.#scheduleRows = undefined);
        for (const k of keys) rows.machines.delete(k);
        // As dropEmptyWindows: a window no machine is in is gone.
        const used = new Set<number>();
        for (const m of rows.machines.values()) used.add(m.window);
        for (const i of [...rows.windows.keys()]) if (!used.has(i)) rows.windows.delete(i);
        this.#scheduleRows = rows;
      },
    );
  }

  addFramework(framework: DurableFramework): Promise<void> {
    const json = JSON.stringify(framework.info);
    return this.#enqueue(() => {
      this.#stmt.upsertFramework.run(framework.id, json, framework.registeredTimeNs ?? null);
    });
  }

  removeFramework(frameworkId: string): Promise<void> {
    return this.#enqueue(() => {
      this.#stmt.removeFramework.run(frameworkId);
    });
  }

  admitAgent(agent: DurableAgent): Promise<void> {
    const json = storedJson(agent);
    return this.#enqueue(() => {
      this.#stmt.upsert.run(agent.id, json, agent.registeredTimeNs, agent.principal ?? null);
    });
  }

  markAgentUnreachable(agentId: string, timeNs: bigint): Promise<void> {
    return this.#enqueue(() => {
      const r = this.#stmt.unreachable.run(timeNs, agentId);
      if (r.changes === 0) throw new Error(`markAgentUnreachable: agent ${agentId} is not in the registry`);
    });
  }

  markAgentReachable(agent: DurableAgent): Promise<void> {
    const json = storedJson(agent);
    return this.#enqueue(() => {
      const r = this.#stmt.reachable.run(json, agent.principal ?? null, agent.id);
      // Readmitting an id the registry lost (e.g. a restored backup) admits it as itself.
      if (r.changes === 0) this.#stmt.upsert.run(agent.id, json, agent.registeredTimeNs, agent.principal ?? null);
    });
  }

  removeAgent(agentId: string, removal?: AgentRemoval): Promise<void> {
    const principal = removal?.principal;
    const timeNs = removal?.timeNs ?? 0n;
    return this.#forgetWithMachine(agentId, removal?.machine, principal === undefined ? undefined : () => this.#keepBinding(agentId, principal, timeNs));
  }

  /**
   * One write: forgets the agent with its drain and deactivation, writes its machine's
   * attributes when the schedule lacks them (AgentRemoval.machine), then runs `then`.
   */
  #forgetWithMachine(agentId: string, machine: AgentRemoval['machine'], then: (() => void) | undefined): Promise<void> {
    const text = machine === undefined ? null : attributesText(machine.attributes);
    const forget = (): void => {
      this.#stmt.remove.run(agentId);
      this.#drainStmt.reactivate.run(agentId);
    };
    // Most removals: nothing of the schedule to write.
    if (machine === undefined || text === null) {
      return this.#enqueue(() => {
        forget();
        then?.();
      });
    }
    let rows: ScheduleRows | undefined;
    let touched = false;
    return this.#enqueue(
      () => {
        forget();
        rows = this.#scheduleRows;
        const row = rows?.machines.get(machine.key);
        // Known to be in the file already, or known not to be scheduled: nothing to write.
        if (rows === undefined || (row !== undefined && row.attributes !== text)) {
          touched = true;
          this.#scheduleRows = undefined;
          this.#bindingStmt.machineAttributes.run(text, machine.key, text);
        }
        // Last: a binding kept counts the bindings, which a later statement failing would leave wrong.
        then?.();
      },
      () => {
        if (!touched) return;
        if (rows === undefined) return void (this.#scheduleRows = undefined);
        const row = rows.machines.get(machine.key);
        if (row !== undefined) {
          row.attributes = text;
          row.attributesFrom = machine.attributes;
        }
        this.#scheduleRows = rows;
      },
    );
  }

  /** Inside a write: the id's binding as the newest, and the oldest dropped past the cap. */
  #keepBinding(agentId: string, principal: string, timeNs: bigint): void {
    const st = this.#bindingStmt;
    let n = this.#removedBindings ?? Number((st.count.get() as { n: number }).n);
    if (st.remove.run(agentId).changes === 0) n++;
    st.insert.run(agentId, principal, timeNs);
    if (n > this.#maxRemovedBindings) {
      st.dropOldest.run(n - this.#maxRemovedBindings);
      n = this.#maxRemovedBindings;
    }
    this.#removedBindings = n;
  }

  /** Attaches drain and deactivation to the recovered agents; returns the gone agents. */
  #recoverDrains(agents: RecoveredAgent[]): GoneAgent[] {
    const byId = new Map(agents.map((a) => [a.id, a]));
    for (const row of this.#drainStmt.all.all() as DrainRow[]) {
      const a = byId.get(row.agent_id);
      if (a === undefined) continue;
      a.deactivated = true;
      if (row.drain_state !== null) {
        a.drain = {
          state: row.drain_state,
          config: { maxGracePeriodNs: row.max_grace_period_ns === null ? undefined : BigInt(row.max_grace_period_ns), markGone: row.mark_gone !== 0n },
          startedNs: row.started_time_ns === null ? 0n : BigInt(row.started_time_ns),
          drainedNs: row.drained_time_ns === null ? undefined : BigInt(row.drained_time_ns),
        };
      }
    }
    return (this.#drainStmt.allGone.all() as Array<{ id: string; gone_time_ns: bigint }>).map((r) => ({ id: r.id, goneTimeNs: BigInt(r.gone_time_ns) }));
  }

  drainAgent(agentId: string, config: DrainConfig, startedNs: bigint): Promise<void> {
    return this.#enqueue(() => {
      this.#requireAgent(agentId, 'drainAgent');
      this.#drainStmt.drain.run(agentId, config.maxGracePeriodNs ?? null, config.markGone ? 1 : 0, startedNs);
    });
  }

  markAgentDrained(agentId: string, timeNs: bigint): Promise<void> {
    return this.#enqueue(() => {
      this.#drainStmt.drained.run(timeNs, agentId);
    });
  }

  deactivateAgent(agentId: string): Promise<void> {
    return this.#enqueue(() => {
      this.#requireAgent(agentId, 'deactivateAgent');
      this.#drainStmt.deactivate.run(agentId);
    });
  }

  reactivateAgent(agentId: string): Promise<void> {
    return this.#enqueue(() => {
      this.#drainStmt.reactivate.run(agentId);
    });
  }

  markAgentGone(agentId: string, timeNs: bigint, machine?: AgentRemoval['machine']): Promise<void> {
    return this.#forgetWithMachine(agentId, machine, () => this.#drainStmt.goneInsert.run(agentId, timeNs));
  }

  #requireAgent(agentId: string, op: string): void {
    if (this.#drainStmt.agentExists.get(agentId) === undefined) throw new Error(`${op}: agent ${agentId} is not in the registry`);
  }

  /** The database's pages, as SQLite counts them (the WAL's committed pages included): what the registry holds. */
  sizeBytes(): number | undefined {
    if (this.#closed) return undefined;
    const pages = this.#db.pragma('page_count', { simple: true }) as number;
    const size = this.#db.pragma('page_size', { simple: true }) as number;
    return pages * size;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#flush();
    this.#closed = true;
    // Every committed write is synced (and answered) before the connection goes.
    while (this.#syncing !== undefined) await this.#syncing;
    if (this.#walFd !== undefined) closeSync(this.#walFd);
    this.#walFd = undefined;
    this.#db.close();
  }

  #enqueue(run: () => void, committed?: () => void): Promise<void> {
    if (this.#closed) return Promise.reject(fail('REGISTRY_CLOSED'));
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ run, committed, resolve, reject });
      if (!this.#scheduled) {
        this.#scheduled = true;
        // setImmediate runs after the I/O callbacks of this turn: everything that arrived
        // in one batch of socket reads lands in the same transaction. Right after a commit,
        // wait out the window so a trickle of writes still shares transactions.
        const wait = this.#lastCommitMs + GROUP_COMMIT_WINDOW_MS - performance.now();
        if (wait > 0) setTimeout(() => this.#flush(), wait);
        else setImmediate(() => this.#flush());
      }
    });
  }

  #flush(): void {
    this.#scheduled = false;
    const batch = this.#queue;
    this.#queue = [];
    if (batch.length === 0 || this.#closed) {
      for (const w of batch) w.reject(fail('REGISTRY_CLOSED'));
      return;
    }
    let failed: Map<QueuedWrite, Error>;
    try {
      failed = this.#commitBatch(batch);
    } catch (e) {
      // The commit itself failed (disk full, I/O error, read-only): nothing in the batch is durable.
      const err = classify(e);
      // Counted by writes that rolled back.
      this.#removedBindings = undefined;
      for (const w of batch) w.reject(err);
      return;
    }
    this.#lastCommitMs = performance.now();
    this.stats.commits++;
    this.stats.writes += batch.length - failed.size;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
    const committed: QueuedWrite[] = [];
    for (const w of batch) {
      const err = failed.get(w);
      if (err !== undefined) w.reject(err);
      else {
        w.committed?.();
        committed.push(w);
      }
    }
    if (this.#walFd === undefined) {
      // synchronous=FULL: the COMMIT above was synced in place.
      for (const w of committed) w.resolve();
      return;
    }
    for (const w of committed) this.#unsynced.push(w);
    this.#startSync();
  }

  /** Starts syncing the WAL unless a sync is under way (it takes what waits when it ends) or nothing waits. */
  #startSync(): void {
    if (this.#syncing !== undefined || this.#unsynced.length === 0) return;
    this.#syncing = this.#sync().finally(() => {
      this.#syncing = undefined;
      this.#startSync();
    });
  }

  /**
   * Syncs the WAL until no committed write waits: each round covers every write committed before
   * it started, and resolves them in commit order. Writes committed while a round runs wait for
   * the next one (their frames may have been written after the sync began). A sync that fails
   * (an I/O error) rejects the writes it covered: none of them is acknowledged.
   */
  async #sync(): Promise<void> {
    const fd = this.#walFd as number;
    while (this.#unsynced.length > 0) {
      const covered = this.#unsynced;
      this.#unsynced = [];
      const error = await new Promise<Error | null>((resolve) => fdatasync(fd, resolve));
      for (const w of covered) {
        if (error === null) w.resolve();
        else w.reject(classify(error));
      }
    }
  }
}

/** A descriptor of the WAL of the database `file` (read-only is enough to sync it), or undefined when it cannot be opened. */
function openWal(file: string): number | undefined {
  try {
    return openSync(`${file}-wal`, 'r');
  } catch {
    return undefined;
  }
}

/**
 * A read-only database file (remounted, permissions taken away) means this master may no
 * longer write: a fenced error, which ends the term. Anything else is a failed write.
 */
function classify(e: unknown): Error {
  const code = (e as { code?: unknown } | null)?.code;
  if (typeof code === 'string' && code.startsWith('SQLITE_READONLY')) return new RegistryFencedError(`the registry is read-only: ${(e as Error).message}`);
  return e instanceof Error ? e : new Error(String(e));
}

/** A machine's attributes as attributes_json: NULL when there are none. */
function attributesText(attributes: Readonly<Record<string, string>> | undefined): string | null {
  return attributes === undefined || Object.keys(attributes).length === 0 ? null : JSON.stringify(attributes);
}

/** attributes_json as the model takes it (storedMachineAttributes); undefined when NULL or not JSON. */
function storedAttributes(text: string | null): Record<string, string> | undefined {
  if (text === null) return undefined;
  try {
    return storedMachineAttributes(JSON.parse(text));
  } catch {
    return undefined;
  }
}

function storedJson(agent: DurableAgent): string {
  const stored: StoredInfo = { info: agent.info, version: agent.version, capabilities: agent.capabilities };
  return JSON.stringify(stored);
}

/** Brings the schema up to SCHEMA_VERSION, one transaction per migration; refuses a newer one. */
function migrate(db: Database.Database): void {
  db.exec('CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)');
  const row = db.prepare('SELECT version FROM schema_version').get() as { version: number } | undefined;
  let version = row?.version ?? 0;
  if (row === undefined) db.prepare('INSERT INTO schema_version (version) VALUES (0)').run();
  if (version > SCHEMA_VERSION) throw fail('REGISTRY_SCHEMA_TOO_NEW', version, SCHEMA_VERSION);
  const setVersion = db.prepare('UPDATE schema_version SET version = ?');
  while (version < SCHEMA_VERSION) {
    const sql = MIGRATIONS[version];
    if (sql === undefined) break;
    const next = version + 1;
    db.transaction(() => {
      db.exec(sql);
      setVersion.run(next);
    })();
    version = next;
  }
}

/**
 * The SQLite registry (better-sqlite3): WAL, synchronous=FULL, numbered migrations, prepared
 * statements made once. This is the only file with SQL in it.
 *
 * Group commit: every write is queued and everything queued during one event-loop turn is
 * committed in ONE transaction (one fsync) on setImmediate; each write's promise resolves
 * after that commit. 10,000 agents registering at once thus cost a handful of fsyncs, not
 * 10,000. Each write runs in its own savepoint, so one failing write rejects alone.
 */

import { fail } from '../../shared/errors.js';
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentSelf } from '../../shared/protocol.js';
import { MIGRATIONS, SCHEMA_VERSION } from './migrations.js';
import type { DrainConfig } from '../../shared/drain.js';
import {
  MAINTENANCE_PLAN_NAME,
  maintenancePlanProblem,
  maintenancePlanProgressProblem,
  RegistryFencedError,
  type DurableAgent,
  type DurableFramework,
  type DurableMachine,
  type DurableMaintenancePlan,
  type DurableSchedule,
  type GoneAgent,
  type Reachability,
  type RecoveredAgent,
  type Registry,
  type RegistryState,
} from './registry.js';

/**
 * At most one commit per this many ms. When registrations trickle in one per event-loop turn,
 * committing each turn would mean one transaction per agent (~0.25 ms each, 2.5 s of blocked
 * event loop for 10,000 agents); waiting out the window after a commit batches them instead,
 * at a cost of at most this much added latency.
 */
export const GROUP_COMMIT_WINDOW_MS = 10;

/** File name of the registry inside --work_dir. */
export const REGISTRY_FILE = 'registry.db';

interface QueuedWrite {
  run: () => void;
  resolve: () => void;
  reject: (e: Error) => void;
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
  hostname: string | null;
  ip: string | null;
  mode: 'DRAINING' | 'DOWN';
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
export function openSqliteRegistry(dir: string): SqliteRegistry {
  mkdirSync(dir, { recursive: true });
  return new SqliteRegistry(join(dir, REGISTRY_FILE));
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
  readonly stats: RegistryStats = { commits: 0, writes: 0, largestBatch: 0 };

  constructor(file: string) {
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      // FULL: a commit is on disk before the master answers anyone (durable before acknowledged).
      db.pragma('synchronous = FULL');
      db.pragma('busy_timeout = 5000');
      migrate(db);
    } catch (e) {
      db.close();
      throw e;
    }
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
      insertMachine: db.prepare(`INSERT INTO maintenance_machines (machine_key, window, position, hostname, ip, mode) VALUES (?, ?, ?, ?, ?, ?)`),
      machineDown: db.prepare(`UPDATE maintenance_machines SET mode = 'DOWN' WHERE machine_key = ?`),
      machineUp: db.prepare(`DELETE FROM maintenance_machines WHERE machine_key = ?`),
      dropEmptyWindows: db.prepare(`DELETE FROM maintenance_windows WHERE position NOT IN (SELECT window FROM maintenance_machines)`),
      allWindows: db.prepare(`SELECT position, start_ns, duration_ns FROM maintenance_windows ORDER BY position`).safeIntegers(true),
      allMachines: db.prepare(`SELECT machine_key, window, hostname, ip, mode FROM maintenance_machines ORDER BY window, position`).safeIntegers(true),
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
    const maintenancePlans = (this.#planStmt.all.all() as PlanRow[]).map(
      (row): DurableMaintenancePlan => ({ name: row.name, spec: row.spec, progress: row.progress, createdNs: BigInt(row.created_ns) }),
    );
    return Promise.resolve({
      agents,
      frameworks,
      maintenance: this.#recoverSchedule(),
      ...(goneAgents.length > 0 ? { goneAgents } : {}),
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
    for (const w of this.#stmt.allWindows.all() as WindowRow[]) {
      const unavailability: { startNs: bigint; durationNs?: bigint } = { startNs: BigInt(w.start_ns) };
      if (w.duration_ns !== null) unavailability.durationNs = BigInt(w.duration_ns);
      windows.set(BigInt(w.position), { unavailability, machines: [] });
    }
    for (const m of this.#stmt.allMachines.all() as MachineRow[]) {
      const id: DurableMachine['id'] = {};
      if (m.hostname !== null) id.hostname = m.hostname;
      if (m.ip !== null) id.ip = m.ip;
      windows.get(BigInt(m.window))?.machines.push({ key: m.machine_key, id, mode: m.mode });
    }
    return { windows: [...windows.values()].filter((w) => w.machines.length > 0) };
  }

  updateSchedule(schedule: DurableSchedule): Promise<void> {
    return this.#enqueue(() => {
      // One write, so one savepoint inside the group commit: the schedule is replaced whole or not at all.
      this.#stmt.clearMachines.run();
      this.#stmt.clearWindows.run();
      schedule.windows.forEach((w, i) => {
        this.#stmt.insertWindow.run(i, w.unavailability.startNs, w.unavailability.durationNs ?? null);
        w.machines.forEach((m, j) => {
          this.#stmt.insertMachine.run(m.key, i, j, m.id.hostname ?? null, m.id.ip ?? null, m.mode);
        });
      });
    });
  }

  startMaintenance(machineKeys: readonly string[]): Promise<void> {
    const keys = [...machineKeys];
    return this.#enqueue(() => {
      for (const k of keys) this.#stmt.machineDown.run(k);
    });
  }

  stopMaintenance(machineKeys: readonly string[]): Promise<void> {
    const keys = [...machineKeys];
    return this.#enqueue(() => {
      for (const k of keys) this.#stmt.machineUp.run(k);
      this.#stmt.dropEmptyWindows.run();
    });
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

  removeAgent(agentId: string): Promise<void> {
    return this.#enqueue(() => {
      this.#stmt.remove.run(agentId);
      this.#drainStmt.reactivate.run(agentId);
    });
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

  markAgentGone(agentId: string, timeNs: bigint): Promise<void> {
    return this.#enqueue(() => {
      this.#stmt.remove.run(agentId);
      this.#drainStmt.reactivate.run(agentId);
      this.#drainStmt.goneInsert.run(agentId, timeNs);
    });
  }

  #requireAgent(agentId: string, op: string): void {
    if (this.#drainStmt.agentExists.get(agentId) === undefined) throw new Error(`${op}: agent ${agentId} is not in the registry`);
  }

  close(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#flush();
    this.#closed = true;
    this.#db.close();
    return Promise.resolve();
  }

  #enqueue(run: () => void): Promise<void> {
    if (this.#closed) return Promise.reject(fail('REGISTRY_CLOSED'));
    return new Promise<void>((resolve, reject) => {
      this.#queue.push({ run, resolve, reject });
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
      for (const w of batch) w.reject(err);
      return;
    }
    this.#lastCommitMs = performance.now();
    this.stats.commits++;
    this.stats.writes += batch.length - failed.size;
    this.stats.largestBatch = Math.max(this.stats.largestBatch, batch.length);
    for (const w of batch) {
      const err = failed.get(w);
      if (err === undefined) w.resolve();
      else w.reject(err);
    }
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

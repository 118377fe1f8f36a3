/**
 * The scheduler's durable state, in one SQLite file in its work dir: the framework id, every
 * configuration (the target and the ones tasks still run), each task as launched with its last
 * status, and the operator's plan overrides. Plans themselves are not stored: they are rebuilt
 * from this at start (plans.md §11.7). Every change is written (WAL, synchronous=FULL) before
 * the scheduler acts on it. No SQL outside this module.
 */
import Database from 'better-sqlite3';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseJson, stringifyJson } from '../shared/json.js';
import type { TaskInfo, TaskStatus } from '../shared/mesos.js';

/** A task as the scheduler knows it: what it launched, where, from which configuration, and what it last heard. */
export interface TaskRecord {
  readonly taskId: string;
  /** `<pod>-<index>-<task>`. */
  readonly name: string;
  readonly podType: string;
  readonly index: number;
  /** The task's key under `tasks:` in the spec. */
  readonly task: string;
  readonly configId: string;
  readonly agentId: string;
  readonly hostname: string;
  readonly info: TaskInfo;
  readonly status: TaskStatus | undefined;
  /** The readiness check has passed (its last result was exit code 0). */
  readonly ready: boolean;
  /** `pod replace` or a lost agent: relaunch elsewhere on the target configuration. */
  readonly permanentlyFailed: boolean;
  /**
   * Being taken out of service on purpose (a replacement runs or is coming, the pod is being
   * decommissioned, or a config change relaunches it): its exit is expected, not a failure.
   */
  readonly retiring: boolean;
  readonly launchedAtMs: number;
}

/** The schema, by version: each entry upgrades from the version before it. */
const MIGRATIONS: readonly string[] = [
  `CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
   CREATE TABLE configs (id TEXT PRIMARY KEY, spec TEXT NOT NULL, created_ms INTEGER NOT NULL);
   CREATE TABLE tasks (
     task_id TEXT PRIMARY KEY, name TEXT NOT NULL, pod_type TEXT NOT NULL, pod_index INTEGER NOT NULL,
     task TEXT NOT NULL, config_id TEXT NOT NULL, agent_id TEXT NOT NULL, hostname TEXT NOT NULL,
     info TEXT NOT NULL, status TEXT, ready INTEGER NOT NULL, permanently_failed INTEGER NOT NULL,
     retiring INTEGER NOT NULL, launched_ms INTEGER NOT NULL);
   CREATE INDEX tasks_by_name ON tasks (name);
   CREATE TABLE overrides (plan TEXT PRIMARY KEY, config_id TEXT NOT NULL, value TEXT NOT NULL);`,
];

interface TaskRow {
  task_id: string; name: string; pod_type: string; pod_index: number; task: string; config_id: string;
  agent_id: string; hostname: string; info: string; status: string | null; ready: number;
  permanently_failed: number; retiring: number; launched_ms: number;
}

function fromRow(r: TaskRow): TaskRecord {
  return {
    taskId: r.task_id, name: r.name, podType: r.pod_type, index: r.pod_index, task: r.task, configId: r.config_id,
    agentId: r.agent_id, hostname: r.hostname, info: parseJson(r.info) as TaskInfo,
    status: r.status === null ? undefined : (parseJson(r.status) as TaskStatus),
    ready: r.ready === 1, permanentlyFailed: r.permanently_failed === 1, retiring: r.retiring === 1, launchedAtMs: r.launched_ms,
  };
}

export class StateStore {
  readonly #db: Database.Database;
  readonly #put: Database.Statement;

  private constructor(db: Database.Database) {
    this.#db = db;
    this.#put = db.prepare(`INSERT OR REPLACE INTO tasks VALUES (@task_id, @name, @pod_type, @pod_index, @task, @config_id, @agent_id, @hostname, @info, @status, @ready, @permanently_failed, @retiring, @launched_ms)`);
  }

  /** Opens (creating) `<workDir>/scheduler.db`; refuses a schema newer than this code knows. */
  static open(workDir: string): StateStore {
    mkdirSync(workDir, { recursive: true });
    const db = new Database(join(workDir, 'scheduler.db'));
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    const version = db.pragma('user_version', { simple: true }) as number;
    if (version > MIGRATIONS.length) {
      db.close();
      throw new Error(`${join(workDir, 'scheduler.db')} has schema version ${version}, newer than this scheduler knows (${MIGRATIONS.length}); use a newer drydock-scheduler`);
    }
    db.transaction(() => {
      for (let v = version; v < MIGRATIONS.length; v++) db.exec(MIGRATIONS[v] as string);
      db.pragma(`user_version = ${MIGRATIONS.length}`);
    })();
    return new StateStore(db);
  }

  close(): void { this.#db.close(); }

  #meta(key: string): string | undefined {
    return (this.#db.prepare('SELECT value FROM meta WHERE key = ?').get(key) as { value: string } | undefined)?.value;
  }

  #setMeta(key: string, value: string | undefined): void {
    if (value === undefined) this.#db.prepare('DELETE FROM meta WHERE key = ?').run(key);
    else this.#db.prepare('INSERT OR REPLACE INTO meta VALUES (?, ?)').run(key, value);
  }

  frameworkId(): string | undefined { return this.#meta('framework_id'); }
  setFrameworkId(id: string): void { this.#setMeta('framework_id', id); }

  targetConfigId(): string | undefined { return this.#meta('target_config'); }

  /** Whether a deploy has completed once (from then on an `update` plan, if the spec has one, rolls changes out). */
  deployedOnce(): boolean { return this.#meta('deployed') === '1'; }
  setDeployedOnce(): void { this.#setMeta('deployed', '1'); }

  /** Stores a configuration and makes it the target, in one transaction. */
  setTarget(id: string, specJson: string, nowMs: number): void {
    this.#db.transaction(() => {
      this.#db.prepare('INSERT OR IGNORE INTO configs VALUES (?, ?, ?)').run(id, specJson, nowMs);
      this.#setMeta('target_config', id);
    })();
  }

  config(id: string): string | undefined {
    return (this.#db.prepare('SELECT spec FROM configs WHERE id = ?').get(id) as { spec: string } | undefined)?.spec;
  }

  /** Configuration ids, oldest first. */
  configIds(): string[] {
    return (this.#db.prepare('SELECT id FROM configs ORDER BY created_ms, id').all() as Array<{ id: string }>).map((r) => r.id);
  }

  /** Drops configurations neither the target nor any task uses. */
  pruneConfigs(): void {
    this.#db.prepare(`DELETE FROM configs WHERE id <> coalesce((SELECT value FROM meta WHERE key = 'target_config'), '') AND id NOT IN (SELECT config_id FROM tasks)`).run();
  }

  tasks(): TaskRecord[] {
    return (this.#db.prepare('SELECT * FROM tasks ORDER BY launched_ms, task_id').all() as TaskRow[]).map(fromRow);
  }

  /** Inserts or replaces task records, all or none. */
  putTasks(records: readonly TaskRecord[]): void {
    this.#db.transaction(() => {
      for (const t of records) {
        this.#put.run({
          task_id: t.taskId, name: t.name, pod_type: t.podType, pod_index: t.index, task: t.task, config_id: t.configId,
          agent_id: t.agentId, hostname: t.hostname, info: stringifyJson(t.info), status: t.status === undefined ? null : stringifyJson(t.status),
          ready: t.ready ? 1 : 0, permanently_failed: t.permanentlyFailed ? 1 : 0, retiring: t.retiring ? 1 : 0, launched_ms: t.launchedAtMs,
        });
      }
    })();
  }

  deleteTasks(taskIds: readonly string[]): void {
    this.#db.transaction(() => {
      for (const id of taskIds) this.#db.prepare('DELETE FROM tasks WHERE task_id = ?').run(id);
    })();
  }

  /** Overrides of a plan, as stored for a configuration; undefined when none or stored for another one. */
  overrides(plan: string): { configId: string; value: unknown } | undefined {
    const row = this.#db.prepare('SELECT config_id, value FROM overrides WHERE plan = ?').get(plan) as { config_id: string; value: string } | undefined;
    return row === undefined ? undefined : { configId: row.config_id, value: parseJson(row.value) };
  }

  setOverrides(plan: string, configId: string, value: unknown): void {
    this.#db.prepare('INSERT OR REPLACE INTO overrides VALUES (?, ?, ?)').run(plan, configId, stringifyJson(value));
  }
}

/**
 * The SQLite registry's schema, as numbered migrations in one place. Migration N moves the
 * schema from version N-1 to N; they only ever get appended. A master refuses a registry
 * whose schema_version is greater than MIGRATIONS.length: a newer master wrote it.
 */

/** Migration i (0-based) brings the schema to version i + 1. */
export const MIGRATIONS: readonly string[] = [
  // 1: admitted agents. Mesos keeps admitted and unreachable agents as two lists; one table with
  // a reachability column keeps an agent's identity and record in one row across the move.
  `CREATE TABLE agents (
     id TEXT PRIMARY KEY,
     info_json TEXT NOT NULL,
     registered_time_ns INTEGER NOT NULL,
     reachability TEXT NOT NULL CHECK (reachability IN ('REACHABLE', 'UNREACHABLE')),
     unreachable_time_ns INTEGER
   ) STRICT`,
  // 2: frameworks (scheduler API), so that after a restart they are known as recovered until
  // they re-subscribe. registered_time_ns is NULL for one known only from an agent's report.
  `CREATE TABLE frameworks (
     id TEXT PRIMARY KEY,
     info_json TEXT NOT NULL,
     registered_time_ns INTEGER
   ) STRICT`,
  // 3: the maintenance schedule (Mesos keeps `schedules` and `machines` in its registry). One
  // row per window and one per scheduled machine with its mode; UP machines are not kept (a
  // machine leaves the schedule when it comes back up). machine_key is shared/machine.ts's
  // machineKey (case-insensitive hostname, exact ip, presence-sensitive); times are exact int64 ns.
  `CREATE TABLE maintenance_windows (
     position INTEGER PRIMARY KEY,
     start_ns INTEGER NOT NULL,
     duration_ns INTEGER
   ) STRICT;
   CREATE TABLE maintenance_machines (
     machine_key TEXT PRIMARY KEY,
     window INTEGER NOT NULL,
     position INTEGER NOT NULL,
     hostname TEXT,
     ip TEXT,
     mode TEXT NOT NULL CHECK (mode IN ('DRAINING', 'DOWN'))
   ) STRICT;
   CREATE INDEX maintenance_machines_by_window ON maintenance_machines (window, position)`,
  // 4: agent draining and deactivation (one row per agent with either; a deactivated agent
  // without a drain has drain_state NULL), and gone agents, which leave `agents` and stay
  // here forever so that their id is refused. Times are exact int64 ns.
  `CREATE TABLE agent_drains (
     agent_id TEXT PRIMARY KEY,
     drain_state TEXT CHECK (drain_state IN ('DRAINING', 'DRAINED')),
     max_grace_period_ns INTEGER,
     mark_gone INTEGER NOT NULL DEFAULT 0,
     started_time_ns INTEGER,
     drained_time_ns INTEGER
   ) STRICT;
   CREATE TABLE gone_agents (
     id TEXT PRIMARY KEY,
     gone_time_ns INTEGER NOT NULL
   ) STRICT`,
  // 5: maintenance plans (issue 12). Spec and progress are the driver's JSON text, kept as
  // written and never read here; progress is rewritten as the plan moves. created_ns orders
  // them on recovery (exact int64 ns).
  `CREATE TABLE maintenance_plans (
     name TEXT PRIMARY KEY,
     spec TEXT NOT NULL,
     progress TEXT NOT NULL,
     created_ns INTEGER NOT NULL
   ) STRICT`,
  // 6: the principal an agent id is bound to (issue 13): NULL while the agent has only
  // registered anonymously. A column, not part of info_json: it is not what the agent reports.
  `ALTER TABLE agents ADD COLUMN principal TEXT`,
  // 7: the attributes a scheduled machine's agents last had (issue 13), as a JSON object of
  // name -> value; NULL when none is known. ACLs name machines by attribute (rack:r1), and a
  // DOWN machine has no agent left to learn them from after a restart.
  `ALTER TABLE maintenance_machines ADD COLUMN attributes_json TEXT`,
  // 8: the principals removed agents' ids stay bound to (issue 13), so that a removed id is not
  // free for another principal to claim. seq orders them by removal (a binding removed again is
  // written anew, so it moves to the newest); the oldest go past MAX_REMOVED_BINDINGS.
  `CREATE TABLE removed_bindings (
     seq INTEGER PRIMARY KEY,
     id TEXT NOT NULL UNIQUE,
     principal TEXT NOT NULL,
     removed_time_ns INTEGER NOT NULL
   ) STRICT`,
];

/** The schema version this code writes and understands. */
export const SCHEMA_VERSION = MIGRATIONS.length;

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
];

/** The schema version this code writes and understands. */
export const SCHEMA_VERSION = MIGRATIONS.length;

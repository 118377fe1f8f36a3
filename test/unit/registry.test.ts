/**
 * The registry contract (test/helpers/registry-contract.ts) on SQLite, then what only SQLite
 * has (schema versions, group commit).
 */
import { DrydockError } from '../../shared/errors.js';
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { tempDir } from '../helpers/daemons.js';
import { agent, maintenancePlan, registrySuite } from '../helpers/registry-contract.js';
import { openSqliteRegistry, REGISTRY_FILE } from '../../master/registry/sqlite.js';
import { MIGRATIONS, SCHEMA_VERSION } from '../../master/registry/migrations.js';

registrySuite({
  name: 'sqlite',
  create(t) {
    const dir = tempDir(t, 'drydock-registry-');
    return () => openSqliteRegistry(dir);
  },
});

describe('SQLite registry specifics', () => {
  test('WAL and synchronous=FULL; schema_version is the latest migration', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const r = openSqliteRegistry(dir);
    await r.close();
    const db = new Database(join(dir, REGISTRY_FILE), { readonly: true });
    t.after(() => db.close());
    assert.equal(db.pragma('journal_mode', { simple: true }), 'wal');
    assert.equal((db.prepare('SELECT version FROM schema_version').get() as { version: number }).version, SCHEMA_VERSION);
  });

  test('refuses a registry written by a newer master', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    await openSqliteRegistry(dir).close();
    const db = new Database(join(dir, REGISTRY_FILE));
    db.prepare('UPDATE schema_version SET version = ?').run(SCHEMA_VERSION + 1);
    db.close();
    assert.throws(
      () => openSqliteRegistry(dir),
      (e: unknown) => e instanceof DrydockError && e.code === 'REGISTRY_SCHEMA_TOO_NEW' && e.message.includes(`version ${SCHEMA_VERSION + 1} is newer`),
    );
  });

  test('a registry of schema 4 (before maintenance plans) migrates to the latest and keeps what it had', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const db = new Database(join(dir, REGISTRY_FILE));
    db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (4)');
    for (const sql of MIGRATIONS.slice(0, 4)) db.exec(sql);
    db.prepare(`INSERT INTO agents (id, info_json, registered_time_ns, reachability) VALUES ('a', ?, 5, 'REACHABLE')`).run(JSON.stringify({ info: agent('a').info, version: '0.1.0', capabilities: [] }));
    db.close();
    const r = openSqliteRegistry(dir);
    await r.createMaintenancePlan(maintenancePlan('p'));
    const state = await r.recover();
    assert.deepEqual(state.agents.map((a) => a.id), ['a']);
    assert.equal(state.agents[0]?.principal, undefined, 'an agent admitted before principals were kept is unbound');
    assert.deepEqual(state.maintenancePlans, [maintenancePlan('p')]);
    await r.close();
    const check = new Database(join(dir, REGISTRY_FILE), { readonly: true });
    t.after(() => check.close());
    assert.equal((check.prepare('SELECT version FROM schema_version').get() as { version: number }).version, SCHEMA_VERSION);
  });

  test('maintenance plan writes share the group commit: one transaction, and a refused create rolls back alone', async (t) => {
    const r = openSqliteRegistry(tempDir(t, 'drydock-registry-'));
    t.after(() => void r.close());
    await r.createMaintenancePlan(maintenancePlan('p'));
    const commits = r.stats.commits;
    const results = await Promise.allSettled([
      r.updateMaintenancePlanProgress('p', '{"a":1}'),
      r.createMaintenancePlan(maintenancePlan('p', { progress: '{"clobbered":true}' })),
      r.createMaintenancePlan(maintenancePlan('q')),
      r.admitAgent(agent('x')),
      r.deleteMaintenancePlan('q'),
      r.updateMaintenancePlanProgress('p', '{"a":2}'),
    ]);
    assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled', 'fulfilled']);
    assert.equal(r.stats.commits, commits + 1);
    const state = await r.recover();
    assert.deepEqual(state.maintenancePlans, [maintenancePlan('p', { progress: '{"a":2}' })]);
    assert.deepEqual(state.agents.map((a) => a.id), ['x']);
  });

  test('group commit: many concurrent admits land in one transaction, each promise after the commit', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const r = openSqliteRegistry(dir);
    t.after(() => void r.close());
    const n = 2_000;
    let resolvedBeforeCommit = 0;
    const writes = Array.from({ length: n }, (_, i) =>
      r.admitAgent(agent(`g${i}`, { info: { ...agent('x').info, port: 10_000 + i } })).then(() => {
        if (r.stats.commits === 0) resolvedBeforeCommit++;
      }),
    );
    assert.equal(r.stats.commits, 0, 'nothing is committed synchronously');
    await Promise.all(writes);
    assert.equal(resolvedBeforeCommit, 0);
    assert.equal(r.stats.commits, 1, 'one transaction for the whole batch');
    assert.equal(r.stats.largestBatch, n);
    assert.equal((await r.recover()).agents.length, n);
  });
});

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
import type { DurableSchedule } from '../../master/registry/registry.js';

registrySuite({
  name: 'sqlite',
  create(t, limits) {
    const dir = tempDir(t, 'drydock-registry-');
    return () => openSqliteRegistry(dir, limits);
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

  test('a registry of schema 6 (before machine attributes) migrates: its schedule loads without attributes, then keeps them', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const db = new Database(join(dir, REGISTRY_FILE));
    db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (6)');
    for (const sql of MIGRATIONS.slice(0, 6)) db.exec(sql);
    db.exec(`INSERT INTO maintenance_windows (position, start_ns, duration_ns) VALUES (0, 1, 2);
             INSERT INTO maintenance_machines (machine_key, window, position, hostname, ip, mode) VALUES ('k', 0, 0, 'h', NULL, 'DOWN')`);
    db.close();
    const r = openSqliteRegistry(dir);
    const before = await r.recover();
    assert.deepEqual(before.maintenance, { windows: [{ unavailability: { startNs: 1n, durationNs: 2n }, machines: [{ key: 'k', id: { hostname: 'h' }, mode: 'DOWN' }] }] });
    await r.startMaintenance(['k'], new Map([['k', { rack: 'r1' }]]));
    await r.close();
    const again = openSqliteRegistry(dir);
    t.after(() => void again.close());
    assert.deepEqual((await again.recover()).maintenance.windows[0]?.machines, [{ key: 'k', id: { hostname: 'h' }, mode: 'DOWN', attributes: { rack: 'r1' } }]);
  });

  test('a registry of schema 7 (before removed agents\' bindings) migrates: it loads with none, then keeps them', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const db = new Database(join(dir, REGISTRY_FILE));
    db.exec('CREATE TABLE schema_version (version INTEGER NOT NULL); INSERT INTO schema_version (version) VALUES (7)');
    for (const sql of MIGRATIONS.slice(0, 7)) db.exec(sql);
    db.prepare(`INSERT INTO agents (id, info_json, registered_time_ns, reachability, principal) VALUES ('a', ?, 5, 'REACHABLE', 'p1')`).run(JSON.stringify({ info: agent('a').info, version: '0.1.0', capabilities: [] }));
    db.exec(`INSERT INTO maintenance_windows (position, start_ns, duration_ns) VALUES (0, 1, 2);
             INSERT INTO maintenance_machines (machine_key, window, position, hostname, ip, mode, attributes_json) VALUES ('k', 0, 0, 'h', NULL, 'DRAINING', NULL)`);
    db.close();
    const r = openSqliteRegistry(dir);
    const before = await r.recover();
    assert.deepEqual(before.agents.map((a) => [a.id, a.principal]), [['a', 'p1']]);
    assert.equal(before.removedBindings, undefined);
    await r.removeAgent('a', { timeNs: 9n, principal: 'p1', machine: { key: 'k', attributes: { rack: 'r1' } } });
    await r.close();
    const again = openSqliteRegistry(dir);
    t.after(() => void again.close());
    const state = await again.recover();
    assert.deepEqual([state.agents, state.removedBindings], [[], [{ id: 'a', principal: 'p1', removedTimeNs: 9n }]]);
    assert.deepEqual(state.maintenance.windows[0]?.machines, [{ key: 'k', id: { hostname: 'h' }, mode: 'DRAINING', attributes: { rack: 'r1' } }]);
  });

  test('removed bindings stay at the cap: counted from the file when not recovered, and across a batch with a write that fails', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const first = openSqliteRegistry(dir, { maxRemovedBindings: 2 });
    await first.removeAgent('a', { timeNs: 1n, principal: 'p' });
    await first.close();
    // Not recovered: the count is read from the file by the first binding written.
    const r = openSqliteRegistry(dir, { maxRemovedBindings: 2 });
    t.after(() => void r.close());
    // A batch whose binding write fails alone (its savepoint rolls back): the count stays right.
    const results = await Promise.allSettled([r.removeAgent('b', { timeNs: 2n, principal: 'p' }), r.markAgentUnreachable('ghost', 1n), r.removeAgent('c', { timeNs: 3n, principal: 'p' })]);
    assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
    await r.removeAgent('d', { timeNs: 4n, principal: 'p' });
    assert.deepEqual((await r.recover()).removedBindings?.map((b) => b.id), ['c', 'd']);
  });

  test('machine attributes that are not an object of strings load as none (or without the other values)', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    await openSqliteRegistry(dir).close();
    const db = new Database(join(dir, REGISTRY_FILE));
    db.exec(`INSERT INTO maintenance_windows (position, start_ns) VALUES (0, 1);
             INSERT INTO maintenance_machines (machine_key, window, position, hostname, mode, attributes_json) VALUES
               ('a', 0, 0, 'a', 'DOWN', '{"rack":"r1","n":3}'), ('b', 0, 1, 'b', 'DOWN', 'not json'), ('c', 0, 2, 'c', 'DOWN', '["r1"]'), ('d', 0, 3, 'd', 'DOWN', '{}')`);
    db.close();
    const r = openSqliteRegistry(dir);
    t.after(() => void r.close());
    const machines = (await r.recover()).maintenance.windows[0]?.machines;
    assert.deepEqual(machines?.map((m) => m.attributes), [{ rack: 'r1' }, undefined, undefined, undefined]);
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

  test('schedule writes of only the rows that change: what the file holds always equals the model (reopened)', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    let r = openSqliteRegistry(dir);
    t.after(() => void r.close());
    // A model of the schedule, changed by random operations, some in one batch (group commit), one failing batch.
    type Machine = { key: string; id: { hostname?: string; ip?: string }; mode: 'DRAINING' | 'DOWN'; attributes?: Record<string, string> };
    let model: DurableSchedule = { windows: [] };
    let seed = 7;
    const rand = (n: number): number => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      // The high bits: an LCG's low bits repeat with a short period.
      return Math.floor(seed / 65_536) % n;
    };
    // Half the time a small change of the current one (a window's time, one machine's mode), so rows carry over.
    const randomSchedule = (): DurableSchedule => (rand(2) === 0 ? perturbed(model) : fresh());
    const perturbed = (s: DurableSchedule): DurableSchedule => {
      const i = rand(Math.max(1, s.windows.length));
      return {
        windows: s.windows.map((w, j) => ({
          unavailability: j === i && rand(2) === 0 ? { startNs: w.unavailability.startNs + 1n } : w.unavailability,
          machines: w.machines.map((m) => {
            if (j !== i) return m;
            const r = rand(4);
            if (r === 0) return { ...m, mode: m.mode === 'DOWN' ? ('DRAINING' as const) : ('DOWN' as const) };
            // A new object: the same attributes again (written as they were), or others.
            if (r === 1) return { ...m, attributes: rand(2) === 0 && m.attributes !== undefined ? { ...m.attributes } : attributes() };
            return m;
          }),
        })),
      };
    };
    const fresh = (): DurableSchedule => {
      const windows: DurableSchedule['windows'] = [];
      const used = new Set<string>();
      for (let w = 0, nw = rand(5); w < nw; w++) {
        const machines: Machine[] = [];
        for (let k = 0, nm = 1 + rand(4); k < nm; k++) {
          const key = `m${rand(12)}`;
          if (used.has(key)) continue;
          used.add(key);
          const m: Machine = { key, id: rand(2) === 0 ? { hostname: key } : { hostname: key, ip: `10.0.0.${rand(3)}` }, mode: rand(4) === 0 ? 'DOWN' : 'DRAINING' };
          if (rand(2) === 0) m.attributes = attributes();
          machines.push(m);
        }
        if (machines.length > 0) windows.push({ unavailability: rand(2) === 0 ? { startNs: BigInt(rand(3)) } : { startNs: BigInt(rand(3)), durationNs: BigInt(rand(2)) }, machines });
      }
      return { windows };
    };
    const attributes = (): Record<string, string> => (rand(2) === 0 ? { rack: `r${rand(3)}` } : { rack: `r${rand(3)}`, zone: `z${rand(2)}` });
    const keysOf = (s: DurableSchedule): string[] => s.windows.flatMap((w) => w.machines.map((m) => m.key));
    // DOWN with attributes for some of the machines (and some keys not scheduled): those replace theirs.
    const downAttributes = (keys: Set<string>): Map<string, Record<string, string>> => new Map([...keys, 'not-scheduled'].filter(() => rand(2) === 0).map((k) => [k, attributes()]));
    const down = (s: DurableSchedule, keys: Set<string>, given: Map<string, Record<string, string>>): DurableSchedule => ({
      windows: s.windows.map((w) => ({
        ...w,
        machines: w.machines.map((m) => {
          if (!keys.has(m.key)) return m;
          const a = given.get(m.key);
          return a === undefined ? { ...m, mode: 'DOWN' as const } : { ...m, mode: 'DOWN' as const, attributes: a };
        }),
      })),
    });
    const up = (s: DurableSchedule, keys: Set<string>): DurableSchedule => ({ windows: s.windows.map((w) => ({ ...w, machines: w.machines.filter((m) => !keys.has(m.key)) })).filter((w) => w.machines.length > 0) });
    // An agent removed from a machine (scheduled or not: the key may be none of the schedule's), with the attributes it is known by.
    const removal = (s: DurableSchedule): { key: string; attributes: Record<string, string> } => {
      const keys = keysOf(s);
      const key = rand(3) === 0 || keys.length === 0 ? `m${rand(12)}` : (keys[rand(keys.length)] as string);
      const held = s.windows.flatMap((w) => w.machines).find((m) => m.key === key)?.attributes;
      return { key, attributes: held !== undefined && rand(2) === 0 ? held : attributes() };
    };
    const removed = (s: DurableSchedule, machine: { key: string; attributes: Record<string, string> }): DurableSchedule => ({
      windows: s.windows.map((w) => ({ ...w, machines: w.machines.map((m) => (m.key === machine.key ? { ...m, attributes: machine.attributes } : m)) })),
    });
    for (let round = 0; round < 250; round++) {
      const op = rand(6);
      if (op <= 1) {
        const next = randomSchedule();
        await r.updateSchedule(next);
        model = next;
      } else if (op === 2) {
        const keys = new Set(keysOf(model).filter(() => rand(2) === 0));
        const given = downAttributes(keys);
        await r.startMaintenance([...keys], given);
        model = down(model, keys, given);
      } else if (op === 3) {
        const keys = new Set(keysOf(model).filter(() => rand(3) === 0));
        await r.stopMaintenance([...keys]);
        model = up(model, keys);
      } else if (op === 4) {
        const machine = removal(model);
        await r.removeAgent(`agent-${round}`, { timeNs: 1n, machine });
        model = removed(model, machine);
      } else {
        // One batch: a schedule, then machines of it down, an agent removed, a write that fails alone, and some up.
        const next = randomSchedule();
        const downKeys = new Set(keysOf(next).filter(() => rand(2) === 0));
        const upKeys = new Set(keysOf(next).filter(() => rand(3) === 0));
        const given = downAttributes(downKeys);
        const afterDown = down(next, downKeys, given);
        const machine = removal(afterDown);
        const results = await Promise.allSettled([
          r.updateSchedule(next),
          r.startMaintenance([...downKeys], given),
          r.removeAgent(`agent-${round}`, { timeNs: 1n, principal: 'p', machine }),
          r.markAgentUnreachable('no-such-agent', 1n),
          r.stopMaintenance([...upKeys]),
        ]);
        assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'fulfilled', 'fulfilled', 'rejected', 'fulfilled']);
        model = up(removed(afterDown, machine), upKeys);
      }
      if (round % 10 === 9) {
        await r.close();
        r = openSqliteRegistry(dir);
      }
      // Read through another connection: recover() on `r` would reload its idea of the rows from the file.
      const check = openSqliteRegistry(dir);
      assert.deepEqual((await check.recover()).maintenance, model, `round ${round}`);
      await check.close();
    }
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

describe('etcd schedule chunks', () => {
  test('a window chunk is what stringifyJson writes for the times, byte for byte, and reads back exactly; a bad one is refused', async () => {
    const { windowsJson, windowTimes } = await import('../../master/registry/etcd.js');
    const { stringifyJson } = await import('../../shared/json.js');
    const cases = [
      [],
      [{ startNs: 1443830400000000001n }],
      [{ startNs: -9223372036854775808n, durationNs: 9223372036854775807n }, { startNs: 0n, durationNs: 0n }, { startNs: 5n }],
    ];
    for (const times of cases) {
      assert.equal(windowsJson(times), stringifyJson(times));
      assert.deepEqual(windowTimes(windowsJson(times)), times);
    }
    assert.throws(() => windowTimes('{"startNs":1}'), /not a list of window times/);
    assert.throws(() => windowTimes('[{"startNs":"soon"}]'), /"soon" is not a time in nanoseconds/);
    assert.throws(() => windowTimes('[{"durationNs":1}]'), /"undefined" is not a time/);
  });
});

describe('SQLite schedule rows after a schedule write that fails half-way', () => {
  test('the rows it changed before failing are forgotten: the next write is whole, and the file equals the model', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const r = openSqliteRegistry(dir);
    t.after(() => void r.close());
    const m = (k: string, mode: 'DRAINING' | 'DOWN' = 'DRAINING') => ({ key: k, id: { hostname: k }, mode });
    const first: DurableSchedule = { windows: [{ unavailability: { startNs: 1n }, machines: [m('a'), m('b'), m('c')] }, { unavailability: { startNs: 2n, durationNs: 5n }, machines: [m('d')] }] };
    await r.updateSchedule(first);
    // Window 0 moves and 'a' goes DOWN before 'b' breaks the mode CHECK: the write is rolled back whole.
    const broken = { windows: [{ unavailability: { startNs: 9n }, machines: [m('a', 'DOWN'), { ...m('b'), mode: 'UP' as unknown as 'DOWN' }, m('c')] }] };
    await assert.rejects(r.updateSchedule(broken));
    const check = openSqliteRegistry(dir);
    assert.deepEqual((await check.recover()).maintenance, first, 'nothing of the failed write is in the file');
    await check.close();
    // Had the half-changed rows been kept, this write would skip window 0 and 'a' (as they were to be).
    const next: DurableSchedule = { windows: [{ unavailability: { startNs: 9n }, machines: [m('a', 'DOWN'), m('c')] }] };
    await r.updateSchedule(next);
    const again = openSqliteRegistry(dir);
    assert.deepEqual((await again.recover()).maintenance, next);
    await again.close();
  });
});

describe('SQLite schedule rows when a schedule names other machines', () => {
  test('the rows are cleared at once only when more would leave than stay', async () => {
    const { moreLeaveThanStay } = await import('../../master/registry/sqlite.js');
    const keys = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => ({ key: `k${from + i}`, id: {}, mode: 'DRAINING' as const }));
    const rows = (from: number, to: number) => new Map(keys(from, to).map((m) => [m.key, true]));
    const cases: Array<[string, Map<string, boolean>, DurableSchedule['windows'], boolean]> = [
      ['no rows yet', rows(0, 0), [{ unavailability: { startNs: 1n }, machines: keys(0, 100) }], false],
      ['the same machines', rows(0, 1000), [{ unavailability: { startNs: 1n }, machines: keys(0, 500) }, { unavailability: { startNs: 2n }, machines: keys(500, 1000) }], false],
      ['every machine replaced', rows(0, 1000), [{ unavailability: { startNs: 1n }, machines: keys(1000, 2000) }], true],
      ['mostly new, none leaving', rows(0, 100), [{ unavailability: { startNs: 1n }, machines: keys(0, 1000) }], false],
      ['mostly new, more leaving than staying', rows(0, 100), [{ unavailability: { startNs: 1n }, machines: [...keys(0, 40), ...keys(100, 1000)] }], true],
      ['half leaving, half staying', rows(0, 100), [{ unavailability: { startNs: 1n }, machines: [...keys(50, 100), ...keys(100, 1000)] }], false],
      ['few sampled new although most leave', rows(0, 1000), [{ unavailability: { startNs: 1n }, machines: keys(0, 400) }], false],
      ['an empty schedule', rows(0, 10), [], false],
    ];
    for (const [name, r, windows, want] of cases) assert.equal(moreLeaveThanStay(r, windows), want, name);
  });

  test('whether more rows leave than stay or fewer, the file equals each schedule written, modes and attributes included', async (t) => {
    const dir = tempDir(t, 'drydock-registry-');
    const r = openSqliteRegistry(dir);
    t.after(() => void r.close());
    const m = (i: number, mode: 'DRAINING' | 'DOWN' = 'DRAINING') => ({ key: `k${i}`, id: { hostname: `h${i}` }, mode, ...(i % 3 === 0 ? { attributes: { rack: `r${i % 2}` } } : {}) });
    const range = (from: number, to: number, down: readonly number[] = []) => Array.from({ length: to - from }, (_, i) => m(from + i, down.includes(from + i) ? 'DOWN' : 'DRAINING'));
    const schedules: DurableSchedule[] = [
      { windows: [{ unavailability: { startNs: 1n }, machines: range(0, 10, [4]) }] },
      // 3 stay (one of them DOWN, one moved to another window), 7 leave, 20 come: more leave than stay.
      { windows: [{ unavailability: { startNs: 2n }, machines: [...range(7, 9), ...range(10, 30)] }, { unavailability: { startNs: 3n, durationNs: 4n }, machines: [m(4, 'DOWN')] }] },
      // 22 stay, one leaves, two come: fewer leave than stay.
      { windows: [{ unavailability: { startNs: 3n, durationNs: 4n }, machines: [m(4, 'DOWN'), ...range(30, 32)] }, { unavailability: { startNs: 2n }, machines: [...range(7, 9, [8]), ...range(11, 30)] }] },
      // Every machine replaced.
      { windows: [{ unavailability: { startNs: 5n }, machines: range(100, 140) }] },
      // Mostly new machines, but none leaves: every one stays in place, one goes DOWN.
      { windows: [{ unavailability: { startNs: 5n }, machines: range(60, 100) }, { unavailability: { startNs: 6n }, machines: range(100, 200, [120]) }] },
    ];
    for (const [i, schedule] of schedules.entries()) {
      await r.updateSchedule(schedule);
      const check = openSqliteRegistry(dir);
      assert.deepEqual((await check.recover()).maintenance, schedule, `schedule ${i}`);
      await check.close();
    }
  });
});

describe('etcd agent records', () => {
  test('agentText writes what stringifyJson writes, byte for byte, and reads back to the digit', async () => {
    const { agentText } = await import('../../master/registry/etcd.js');
    const { parseJson, stringifyJson } = await import('../../shared/json.js');
    const cases = [
      agent('a1'),
      agent('a2', { principal: 'rack-\u00e9"team\u2028', registeredTimeNs: 0n }),
      agent('a3', { version: undefined as unknown as string, capabilities: undefined as unknown as string[], registeredTimeNs: -9223372036854775808n }),
      agent('a4', { info: { hostname: 'h\\"\u0000', ip: '10.0.0.2', port: 5051, resources: [], attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }] } }),
    ];
    for (const a of cases) {
      // What the record was written as before: the document through the general writer.
      const doc: Record<string, unknown> = { id: a.id, info: a.info, version: a.version, capabilities: a.capabilities, registeredTimeNs: a.registeredTimeNs };
      if (a.principal !== undefined) doc['principal'] = a.principal;
      assert.equal(agentText(a), stringifyJson(doc), a.id);
      assert.equal((parseJson(agentText(a)) as { registeredTimeNs: bigint | number }).registeredTimeNs.toString(), a.registeredTimeNs.toString());
    }
    // A bigint inside the info (no AgentInfo field is one today) still writes, through the general writer.
    const odd = agent('a5', { info: { hostname: 'h', port: 5051, resources: [], attributes: [], extra: 12345678901234567890n } as never });
    assert.match(agentText(odd), /"extra":12345678901234567890/);
  });
});

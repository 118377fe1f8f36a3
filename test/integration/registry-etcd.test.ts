/**
 * The registry contract on etcd (a real etcd-server): the same suite as SQLite, each test
 * under its own cluster prefix of one etcd; then what only etcd has: fencing by the leader's
 * election key, and a schedule or a maintenance plan too large for one etcd request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Etcd3 } from 'etcd3';
import { GROUP_COMMIT_WINDOW_MS, RegistryFencedError } from '../../master/registry/registry.js';
import { EtcdRegistry } from '../../master/registry/etcd.js';
import { importRegistry, isEmptyRegistry } from '../../master/registry/import.js';
import { openSqliteRegistry } from '../../master/registry/sqlite.js';
import { tempDir } from '../helpers/daemons.js';
import { etcdMissing, startEtcd, type EtcdHandle } from '../helpers/etcd.js';
import { agent, bigProgress, maintenancePlan, registrySuite } from '../helpers/registry-contract.js';

const skip = etcdMissing();

if (skip !== undefined) {
  test('registry contract: etcd', { skip }, () => {});
} else {
  let etcd: EtcdHandle;
  let client: Etcd3;
  const hooks: Array<() => unknown> = [];
  before(async () => {
    etcd = await startEtcd({ after: (fn) => hooks.push(fn) });
    client = etcd.client();
  });
  after(async () => {
    for (const fn of hooks.reverse()) await fn();
  });
  let n = 0;
  registrySuite({
    name: 'etcd',
    create(_t, limits) {
      const prefix = `/contract-${++n}`;
      return () => new EtcdRegistry(client, prefix, undefined, limits);
    },
  });

  describe('etcd registry specifics', () => {
    test('every write is guarded by the leader election key: a deposed master writes nothing', async () => {
      const electionKey = '/fenced/election/master/a';
      const put = await client.put(electionKey).value('{"id":"a"}').exec();
      const epoch = BigInt(put.header.revision);
      const r = new EtcdRegistry(client, '/fenced', { key: electionKey, epoch });
      await r.admitAgent(agent('before'));
      // Deposed: its key is gone (a lease that expired), then another master's key exists.
      await client.delete().key(electionKey).exec();
      await client.put('/fenced/election/master/b').value('{"id":"b"}').exec();
      await assert.rejects(r.admitAgent(agent('after')), (e: unknown) => e instanceof RegistryFencedError);
      await assert.rejects(r.updateSchedule({ windows: [{ unavailability: { startNs: 1n }, machines: [{ key: 'k', id: { hostname: 'h' }, mode: 'DRAINING' }] }] }), RegistryFencedError);
      // A key of the same name but a later term is not this master's epoch either.
      await client.put(electionKey).value('{"id":"a-again"}').exec();
      await assert.rejects(r.removeAgent('before'), RegistryFencedError);
      const state = await new EtcdRegistry(client, '/fenced').recover();
      assert.deepEqual(state.agents.map((a) => a.id), ['before']);
      assert.deepEqual(state.maintenance, { windows: [] });
      await r.close();
    });

    test('group commit: writes that trickle in share transactions, at most one started per window, in the order they were made', async () => {
      const p = '/trickle/registry/';
      const r = new EtcdRegistry(client, '/trickle');
      await r.recover();
      // One admission a millisecond or so, as in a registration storm: each would be its own
      // transaction if one started as soon as the previous ended (a local etcd answers in ~2 ms).
      const n = 40;
      const started = performance.now();
      const writes: Array<Promise<void>> = [];
      for (let i = 0; i < n; i++) {
        writes.push(r.admitAgent(agent(`t${String(i).padStart(2, '0')}`)));
        await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await Promise.all(writes);
      const spanMs = performance.now() - started;
      const kvs = (await client.getAll().prefix(`${p}agents/`).exec()).kvs.map((kv) => ({ id: kv.key.toString().slice(`${p}agents/`.length), revision: BigInt(kv.mod_revision) }));
      assert.equal(kvs.length, n);
      kvs.sort((a, b) => a.id.localeCompare(b.id));
      // In order: an admission made later is never in an earlier transaction.
      for (let i = 1; i < n; i++) assert.ok(kvs[i]!.revision >= kvs[i - 1]!.revision, `${kvs[i]!.id} before ${kvs[i - 1]!.id}`);
      const transactions = new Set(kvs.map((k) => k.revision)).size;
      // Starts a window apart, all within the span; less a millisecond, as Node's timers run on
      // the event loop's millisecond clock and a wait can end up to 1 ms early.
      const most = Math.floor(spanMs / (GROUP_COMMIT_WINDOW_MS - 1)) + 1;
      assert.ok(transactions <= most, `${n} admissions over ${spanMs.toFixed(0)} ms took ${transactions} transactions; at most ${most} may start in that time`);
      assert.ok(transactions > 1, 'the writes were spread over more than one window');
      await r.close();
    });

    test('a single master\'s SQLite registry moves into etcd whole (--registry_import)', async (t) => {
      const from = openSqliteRegistry(tempDir(t, 'drydock-import-'));
      await from.admitAgent(agent('a'));
      await from.admitAgent(agent('b'));
      await from.admitAgent(agent('c'));
      await from.admitAgent(agent('d'));
      // Removed while bound (then one of them admitted again by its principal): the bindings move too, in order.
      await from.admitAgent(agent('e', { principal: 'p-e' }));
      await from.removeAgent('e', { timeNs: 5n, principal: 'p-e' });
      await from.removeAgent('c', { timeNs: 6n, principal: 'p-c' });
      await from.admitAgent(agent('c', { principal: 'p-c' }));
      await from.markAgentUnreachable('b', 7n);
      await from.drainAgent('a', { maxGracePeriodNs: 5n, markGone: false }, 1_700_000_000_123_456_789n);
      await from.markAgentDrained('a', 9n);
      await from.deactivateAgent('c');
      await from.markAgentGone('d', 11n);
      await from.addFramework({ id: 'f', info: { user: 'u', name: 'f', id: { value: 'f' } }, registeredTimeNs: 3n });
      await from.updateSchedule({ windows: [{ unavailability: { startNs: 1_443_830_400_000_000_001n }, machines: [{ key: 'k', id: { hostname: 'h', ip: '10.0.0.1' }, mode: 'DRAINING' }] }] });
      await from.startMaintenance(['k']);
      await from.createMaintenancePlan(maintenancePlan('later', { createdNs: 2n }));
      await from.createMaintenancePlan(maintenancePlan('running', { createdNs: 1n, progress: bigProgress(6_000) }));
      await from.updateMaintenancePlanProgress('running', bigProgress(6_001, 'at step 4,000'));
      const state = await from.recover();
      assert.equal(state.maintenancePlans?.length, 2);
      await from.close();
      const to = new EtcdRegistry(client, '/imported');
      assert.equal(isEmptyRegistry(await to.recover()), true);
      assert.deepEqual(await importRegistry(state, to), { agents: 3, goneAgents: 1, removedBindings: 2, frameworks: 1, machines: 1, maintenancePlans: 2 });
      assert.deepEqual(await new EtcdRegistry(client, '/imported').recover(), state);
      assert.equal(isEmptyRegistry(await to.recover()), false);
      await to.close();
    });

    test('maintenance plan writes are guarded by the election key too', async () => {
      const electionKey = '/fenced-plans/election/master/a';
      const epoch = BigInt((await client.put(electionKey).value('{"id":"a"}').exec()).header.revision);
      const r = new EtcdRegistry(client, '/fenced-plans', { key: electionKey, epoch });
      await r.createMaintenancePlan(maintenancePlan('p'));
      await client.delete().key(electionKey).exec();
      await assert.rejects(r.createMaintenancePlan(maintenancePlan('q')), RegistryFencedError);
      await assert.rejects(r.updateMaintenancePlanProgress('p', bigProgress(3_000)), RegistryFencedError);
      await assert.rejects(r.deleteMaintenancePlan('p'), RegistryFencedError);
      assert.deepEqual((await new EtcdRegistry(client, '/fenced-plans').recover()).maintenancePlans, [maintenancePlan('p')]);
      await r.close();
    });

    test('a plan\'s progress over etcd\'s request limit is written in chunks; only the current generation is kept', async () => {
      // 10,000 steps at ~390 bytes: one request this size is refused by etcd (--max-request-bytes, 1.5 MiB).
      const progress = bigProgress(10_000);
      assert.ok(Buffer.byteLength(progress) > 1.5 * 1024 * 1024);
      // (On a client of its own: the etcd3 client counts the refusal as a failing host and opens
      // its circuit breaker, so every request after it fails for a while. A master must never send one.)
      const probe = etcd.client();
      await assert.rejects(probe.put('/too-big/one-request').value(progress).exec(), /RESOURCE_EXHAUSTED|too large/);
      const r = new EtcdRegistry(client, '/plans');
      await r.createMaintenancePlan(maintenancePlan('fleet', { progress }));
      await r.updateMaintenancePlanProgress('fleet', bigProgress(10_000, 'again'));
      await r.updateMaintenancePlanProgress('fleet', bigProgress(2_000, 'smaller'));
      const keys = await client.getAll().prefix('/plans/registry/maintenance-plan').keys();
      assert.deepEqual(keys.sort(), ['/plans/registry/maintenance-plan-chunks/fleet/g3/0', '/plans/registry/maintenance-plan-chunks/fleet/g3/1', '/plans/registry/maintenance-plan-chunks/fleet/spec/0', '/plans/registry/maintenance-plans/fleet']);
      const record = JSON.parse((await client.get('/plans/registry/maintenance-plans/fleet').string()) ?? '') as Record<string, unknown>;
      assert.deepEqual(record, { name: 'fleet', createdNs: '1764000000123456789', spec: { chunks: 1, bytes: Buffer.byteLength(maintenancePlan('fleet').spec) }, progress: { generation: 3, chunks: 2, bytes: Buffer.byteLength(bigProgress(2_000, 'smaller')) } });
      await r.deleteMaintenancePlan('fleet');
      assert.deepEqual(await client.getAll().prefix('/plans/registry/maintenance-plan').keys(), []);
      await r.close();
    });

    test('chunks a failed write left are never read: no plan without its record; the next write clears or supersedes them', async () => {
      const p = '/leftovers/registry/';
      // A create that died before its record: chunks, no plan.
      await client.put(`${p}maintenance-plan-chunks/x/spec/0`).value('stale spec').exec();
      await client.put(`${p}maintenance-plan-chunks/x/g1/7`).value('stale progress').exec();
      const r = new EtcdRegistry(client, '/leftovers');
      assert.equal((await r.recover()).maintenancePlans, undefined);
      await r.createMaintenancePlan(maintenancePlan('x'));
      assert.deepEqual((await client.getAll().prefix(`${p}maintenance-plan-chunks/x/`).keys()).sort(), [`${p}maintenance-plan-chunks/x/g1/0`, `${p}maintenance-plan-chunks/x/spec/0`]);
      // An update that died before its record: the next generation's chunks, not current.
      await client.put(`${p}maintenance-plan-chunks/x/g2/0`).value('half-written').exec();
      await client.put(`${p}maintenance-plan-chunks/x/g2/5`).value('half-written').exec();
      assert.deepEqual((await new EtcdRegistry(client, '/leftovers').recover()).maintenancePlans, [maintenancePlan('x')]);
      await r.updateMaintenancePlanProgress('x', '{"next":1}');
      await r.updateMaintenancePlanProgress('x', '{"next":2}');
      assert.deepEqual((await client.getAll().prefix(`${p}maintenance-plan-chunks/x/`).keys()).sort(), [`${p}maintenance-plan-chunks/x/g3/0`, `${p}maintenance-plan-chunks/x/spec/0`]);
      assert.deepEqual((await new EtcdRegistry(client, '/leftovers').recover()).maintenancePlans, [maintenancePlan('x', { progress: '{"next":2}' })]);
      await r.close();
    });

    test('a malformed record stops the recovery with its key named: bad JSON, a binding without a principal, an int64 that is not one', async () => {
      const cases: Array<[string, string, RegExp]> = [
        ['agents/a1', '{"id":', /malformed record at \/malformed-1\/registry\/agents\/a1: /],
        ['bindings/a2', '{"removedTimeNs":"1"}', /malformed record at \/malformed-2\/registry\/bindings\/a2: no principal/],
        ['bindings/a3', '{"principal":"p","removedTimeNs":"soon"}', /malformed record at \/malformed-3\/registry\/bindings\/a3: .*soon/],
        ['gone/a4', '"yesterday"', /malformed record at \/malformed-4\/registry\/gone\/a4: .*yesterday/],
      ];
      for (const [i, [k, v, problem]] of cases.entries()) {
        await client.put(`/malformed-${i + 1}/registry/${k}`).value(v).exec();
        await assert.rejects(new EtcdRegistry(client, `/malformed-${i + 1}`).recover(), problem);
      }
    });

    test('schedule chunks a failed write left are never read, and the next generation deletes them; a small schedule is one transaction', async () => {
      const p = '/schedule-leftovers/registry/';
      const machine = (i: number): { key: string; id: { hostname: string }; mode: 'DRAINING' } => ({ key: `h${i}`, id: { hostname: `host-${i}` }, mode: 'DRAINING' });
      const first = new EtcdRegistry(client, '/schedule-leftovers');
      await first.recover();
      await first.updateSchedule({ windows: [{ unavailability: { startNs: 1n }, machines: [machine(1)] }] });
      await first.close();
      // A master that died during its next update, after some chunks of generation 2, before `current`.
      for (const i of ['0', '1', 'w0', '7']) await client.put(`${p}maintenance/g2/${i}`).value('half-written').exec();
      const r = new EtcdRegistry(client, '/schedule-leftovers');
      const before = (await r.recover()).maintenance;
      assert.deepEqual(before.windows.map((w) => w.machines.map((m) => m.key)), [['h1']]);
      const revision = BigInt((await client.get(`${p}maintenance/current`).exec()).header.revision);
      await r.updateSchedule({ windows: [{ unavailability: { startNs: 2n }, machines: [machine(2), machine(3)] }] });
      // One transaction: the new chunks, `current`, and the deletion of what it no longer names.
      const current = JSON.parse((await client.get(`${p}maintenance/current`).string()) ?? '{}') as { generation: number; windows: string[]; machines: string[][]; chunks: number };
      assert.ok(current.generation > 2, `generation ${current.generation} is past the leftovers'`);
      // A master of the first format reads g<generation>/0 as windows with their times: it finds none there, and stops.
      assert.equal(current.chunks, 1);
      const chunk0 = await client.get(`${p}maintenance/g${current.generation}/0`).string();
      assert.ok(chunk0 === null || !chunk0.includes('startNs'), chunk0 ?? '');
      const keys = (await client.getAll().prefix(`${p}maintenance/`).keys()).sort();
      assert.deepEqual(keys, [`${p}maintenance/current`, ...[...current.windows, ...current.machines.flat()].map((k) => `${p}maintenance/${k}`)].sort());
      const revisions = await Promise.all(keys.map(async (k) => BigInt((await client.get(k).exec()).kvs[0]?.mod_revision ?? 0)));
      assert.deepEqual(revisions, keys.map(() => revision + 1n));
      // ...and nothing after it: the leftovers went in that transaction too.
      assert.equal(BigInt((await client.get(`${p}maintenance/current`).exec()).header.revision), revision + 1n);
      const after = (await new EtcdRegistry(client, '/schedule-leftovers').recover()).maintenance;
      assert.deepEqual(after.windows.map((w) => w.machines.map((m) => m.key)), [['h2', 'h3']]);
      assert.deepEqual(after.windows.map((w) => w.unavailability), [{ startNs: 2n }]);
      await r.close();
    });

    test('a new generation writes only the chunks that changed: moved windows write their times, DOWN and UP the groups of those machines', async () => {
      const p = '/schedule-incremental/registry/maintenance/';
      const machines = Array.from({ length: 5_000 }, (_, i) => ({ key: `h${i}`, id: { hostname: `host-${i}` }, mode: 'DRAINING' as const }));
      const windows = (start: bigint) => Array.from({ length: 50 }, (_, w) => ({ unavailability: { startNs: start + BigInt(w), durationNs: 3_600n }, machines: machines.slice(w * 100, w * 100 + 100) }));
      const r = new EtcdRegistry(client, '/schedule-incremental');
      await r.recover();
      await r.updateSchedule({ windows: windows(1_000n) });
      const chunks = async (): Promise<Map<string, bigint>> => {
        const all = await client.getAll().prefix(p).exec();
        return new Map(all.kvs.map((kv) => [kv.key.toString().slice(p.length), BigInt(kv.mod_revision)]));
      };
      const changed = (a: Map<string, bigint>, b: Map<string, bigint>): string[] => [...b].filter(([k, rev]) => a.get(k) !== rev).map(([k]) => k).sort();
      const one = await chunks();
      assert.equal(one.size, 1 + 1 + 5, [...one.keys()].join(' ')); // current, one window chunk, five groups of 1,000
      // Every window moved by an hour: the machines' chunks stay as they are.
      await r.updateSchedule({ windows: windows(3_601_000n) });
      const two = await chunks();
      const moved = changed(one, two);
      assert.equal(moved.length, 2, moved.join(' '));
      assert.ok(moved.includes('current') && moved.some((k) => /\/w0$/.test(k)), moved.join(' '));
      // Two machines DOWN, in the first and fourth groups: those two groups are written again, nothing else.
      await r.startMaintenance(['h10', 'h3500']);
      const three = await chunks();
      const down = changed(two, three).filter((k) => k !== 'current');
      assert.equal(down.length, 2, down.join(' '));
      assert.equal(three.size, two.size, 'the replaced chunks are deleted');
      // UP: both machines leave the schedule; every group from the first on moves up by one or two machines.
      await r.stopMaintenance(['h10', 'h3500']);
      const back = (await new EtcdRegistry(client, '/schedule-incremental').recover()).maintenance;
      assert.equal(back.windows.length, 50);
      assert.deepEqual(back.windows[0]?.unavailability, { startNs: 3_601_000n, durationNs: 3_600n });
      assert.deepEqual(back.windows.map((w) => w.machines.length), windows(0n).map((_w, i) => (i === 0 || i === 35 ? 99 : 100)));
      assert.ok(back.windows.every((w) => w.machines.every((m) => m.mode === 'DRAINING')));
      const live = await chunks();
      const record = JSON.parse((await client.get(`${p}current`).string()) ?? '{}') as { windows: string[]; machines: string[][] };
      assert.deepEqual([...live.keys()].sort(), ['current', ...record.windows, ...record.machines.flat()].sort());
      await r.close();
    });

    test('a schedule written in the first format (chunks of whole windows with their times) is read, and replaced by the next generation', async () => {
      const p = '/schedule-v1/registry/maintenance/';
      const m = (i: number, mode = 'DRAINING'): string => `{"key":"h${i}","id":{"hostname":"host-${i}"},"mode":"${mode}"}`;
      await client.put(`${p}g4/0`).value(`[{"window":0,"startNs":1443830400000000001,"machines":[${m(1)},${m(2, 'DOWN')}],"durationNs":3600000000000},{"window":1,"startNs":5,"machines":[${m(3)}]}]`).exec();
      await client.put(`${p}g4/1`).value(`[{"window":1,"startNs":5,"machines":[${m(4)}]}]`).exec();
      await client.put(`${p}current`).value('{"generation":4,"chunks":2}').exec();
      const r = new EtcdRegistry(client, '/schedule-v1');
      const read = (await r.recover()).maintenance;
      assert.deepEqual(read, {
        windows: [
          { unavailability: { startNs: 1_443_830_400_000_000_001n, durationNs: 3_600_000_000_000n }, machines: [{ key: 'h1', id: { hostname: 'host-1' }, mode: 'DRAINING' }, { key: 'h2', id: { hostname: 'host-2' }, mode: 'DOWN' }] },
          { unavailability: { startNs: 5n }, machines: [3, 4].map((i) => ({ key: `h${i}`, id: { hostname: `host-${i}` }, mode: 'DRAINING' })) },
        ],
      });
      await r.startMaintenance(['h3']);
      const keys = await client.getAll().prefix(p).keys();
      assert.ok(keys.every((k) => !k.startsWith(`${p}g4/`)), keys.join(' '));
      const back = (await new EtcdRegistry(client, '/schedule-v1').recover()).maintenance;
      assert.deepEqual(back.windows.map((w) => w.machines.map((x) => `${x.key}:${x.mode}`)), [['h1:DRAINING', 'h2:DOWN'], ['h3:DOWN', 'h4:DRAINING']]);
      assert.deepEqual(back.windows[0]?.unavailability, read.windows[0]?.unavailability);
      await r.close();
    });

    test('a malformed schedule record or chunk stops the recovery with its key named', async () => {
      const cases: Array<[Record<string, string>, RegExp]> = [
        [{ current: '{"format":3,"generation":1}' }, /malformed record at \/bad-schedule-1\/registry\/maintenance\/current: format 3/],
        [{ current: '{"format":2,"generation":1,"windows":["g1/w0"],"machines":[["../x"]]}' }, /maintenance\/current: machines is not a list/],
        [{ current: '{"format":2,"generation":1,"windows":["g1/w0"],"machines":[["g1/0"]]}', 'g1/w0': '[{"startNs":1}]', 'g1/0': '[{"window":3,"machines":[]}]' }, /maintenance\/g1\/0: window 3 is not in the schedule/],
        [{ current: '{"format":2,"generation":1,"windows":["g1/w0"],"machines":[["g1/0"]]}', 'g1/w0': '[{"startNs":1}]', 'g1/0': '[{"window":0,"machines":[{"key":"h"}]}]' }, /maintenance\/g1\/0: a machine without its key, id or mode/],
        [{ current: '{"format":2,"generation":1,"windows":["g1/w0"],"machines":[]}' }, /missing chunk g1\/w0/],
      ];
      for (const [i, [kvs, problem]] of cases.entries()) {
        for (const [k, v] of Object.entries(kvs)) await client.put(`/bad-schedule-${i + 1}/registry/maintenance/${k}`).value(v).exec();
        await assert.rejects(new EtcdRegistry(client, `/bad-schedule-${i + 1}`).recover(), problem);
      }
    });

    test('a schedule of 50,000 machines fits: written as chunks, made current in one transaction', async () => {
      const machines = Array.from({ length: 50_000 }, (_, i) => ({ key: `h${i}`, id: { hostname: `host-${i}.rack-${i % 40}.example.org`, ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}` }, mode: 'DRAINING' as const }));
      const schedule = { windows: [{ unavailability: { startNs: 1_443_830_400_000_000_001n, durationNs: 3_600_000_000_000n }, machines: machines.slice(0, 30_000) }, { unavailability: { startNs: 5n }, machines: machines.slice(30_000) }] };
      const r = new EtcdRegistry(client, '/big');
      await r.updateSchedule(schedule);
      await r.startMaintenance(['h1', 'h49999']);
      const back = (await new EtcdRegistry(client, '/big').recover()).maintenance;
      assert.equal(back.windows.length, 2);
      assert.equal(back.windows[0]?.machines.length, 30_000);
      assert.equal(back.windows[1]?.machines.length, 20_000);
      assert.equal(back.windows[0]?.unavailability.startNs, 1_443_830_400_000_000_001n);
      assert.deepEqual([back.windows[0]?.machines[1]?.mode, back.windows[1]?.machines.at(-1)?.mode, back.windows[0]?.machines[2]?.mode], ['DOWN', 'DOWN', 'DRAINING']);
      // Only what `current` names is kept: DOWN wrote the two groups holding those machines again.
      const keys = (await client.getAll().prefix('/big/registry/maintenance/').keys()).map((k) => k.slice('/big/registry/maintenance/'.length));
      const record = JSON.parse((await client.get('/big/registry/maintenance/current').string()) ?? '{}') as { windows: string[]; machines: string[][] };
      assert.deepEqual(keys.sort(), ['current', ...record.windows, ...record.machines.flat()].sort());
      assert.equal(record.machines.length, 50);
      assert.deepEqual(keys.filter((k) => k.startsWith('g2/')).length, 2, keys.join(' '));
      await r.close();
    });

    test('machines with many attributes: chunks are cut by bytes, so every request stays under etcd\'s limit', async () => {
      // ~1.2 kB of attributes a machine: 1,000 machines (one chunk by count) would be ~1.3 MB, and 8 such chunks one 10 MB request.
      const attributes = (i: number): Record<string, string> => Object.fromEntries(Array.from({ length: 20 }, (_, j) => [`label-${j}`, `value-${j}-${String(i).padStart(40, '0')}`]));
      const machines = Array.from({ length: 5_000 }, (_, i) => ({ key: `h${i}`, id: { hostname: `host-${i}` }, mode: 'DRAINING' as const, attributes: attributes(i) }));
      const schedule = { windows: [{ unavailability: { startNs: 1n }, machines: machines.slice(0, 3_500) }, { unavailability: { startNs: 2n }, machines: machines.slice(3_500) }] };
      const r = new EtcdRegistry(client, '/big-attributes');
      await r.updateSchedule(schedule);
      await r.startMaintenance(['h0', 'h4999'], new Map([['h4999', { rack: 'r1' }]]));
      const back = (await new EtcdRegistry(client, '/big-attributes').recover()).maintenance;
      assert.deepEqual(back.windows.map((w) => w.machines.length), [3_500, 1_500]);
      assert.deepEqual(back.windows[0]?.machines[0], { ...machines[0], mode: 'DOWN' });
      assert.deepEqual(back.windows[0]?.machines[3_499], machines[3_499]);
      assert.deepEqual(back.windows[1]?.machines.at(-1), { key: 'h4999', id: { hostname: 'host-4999' }, mode: 'DOWN', attributes: { rack: 'r1' } });
      const chunks = await client.getAll().prefix('/big-attributes/registry/maintenance/g').keys();
      assert.ok(chunks.length > 10, `${chunks.length} chunks`);
      for (const key of chunks) {
        const value = await client.get(key).buffer();
        assert.ok(value !== null && value.length <= 512 * 1024, `${key}: ${value?.length} bytes`);
      }
      await r.close();
    });
  });
}

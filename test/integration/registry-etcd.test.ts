/**
 * The registry contract on etcd (a real etcd-server): the same suite as SQLite, each test
 * under its own cluster prefix of one etcd; then what only etcd has: fencing by the leader's
 * election key, and a schedule too large for one etcd request.
 */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { Etcd3 } from 'etcd3';
import { RegistryFencedError } from '../../master/registry/registry.js';
import { EtcdRegistry } from '../../master/registry/etcd.js';
import { importRegistry, isEmptyRegistry } from '../../master/registry/import.js';
import { openSqliteRegistry } from '../../master/registry/sqlite.js';
import { tempDir } from '../helpers/daemons.js';
import { etcdMissing, startEtcd, type EtcdHandle } from '../helpers/etcd.js';
import { agent, registrySuite } from '../helpers/registry-contract.js';

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
    create() {
      const prefix = `/contract-${++n}`;
      return () => new EtcdRegistry(client, prefix);
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

    test('a single master\'s SQLite registry moves into etcd whole (--registry_import)', async (t) => {
      const from = openSqliteRegistry(tempDir(t, 'drydock-import-'));
      await from.admitAgent(agent('a'));
      await from.admitAgent(agent('b'));
      await from.admitAgent(agent('c'));
      await from.admitAgent(agent('d'));
      await from.markAgentUnreachable('b', 7n);
      await from.drainAgent('a', { maxGracePeriodNs: 5n, markGone: false }, 1_700_000_000_123_456_789n);
      await from.markAgentDrained('a', 9n);
      await from.deactivateAgent('c');
      await from.markAgentGone('d', 11n);
      await from.addFramework({ id: 'f', info: { user: 'u', name: 'f', id: { value: 'f' } }, registeredTimeNs: 3n });
      await from.updateSchedule({ windows: [{ unavailability: { startNs: 1_443_830_400_000_000_001n }, machines: [{ key: 'k', id: { hostname: 'h', ip: '10.0.0.1' }, mode: 'DRAINING' }] }] });
      await from.startMaintenance(['k']);
      const state = await from.recover();
      await from.close();
      const to = new EtcdRegistry(client, '/imported');
      assert.equal(isEmptyRegistry(await to.recover()), true);
      assert.deepEqual(await importRegistry(state, to), { agents: 3, goneAgents: 1, frameworks: 1, machines: 1 });
      assert.deepEqual(await new EtcdRegistry(client, '/imported').recover(), state);
      assert.equal(isEmptyRegistry(await to.recover()), false);
      await to.close();
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
      // Only the current generation is kept.
      const keys = await client.getAll().prefix('/big/registry/maintenance/').keys();
      assert.ok(keys.every((k) => k === '/big/registry/maintenance/current' || k.startsWith('/big/registry/maintenance/g2/')), keys.slice(0, 5).join(', '));
      await r.close();
    });
  });
}

/**
 * The registry contract, written as a function of a backend factory: the SQLite suite
 * (test/unit/registry.test.ts) and the etcd suite (test/integration/registry-etcd.test.ts)
 * run the same tests.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { DrydockError } from '../../shared/errors.js';
import type { DurableAgent, Registry } from '../../master/registry/registry.js';

/** A backend under test: `open` may be called again on the same place after close (a restart). */
export interface RegistryBackend {
  name: string;
  /** A fresh, empty place to keep a registry; returns an opener for it. */
  create(t: { after(fn: () => void): void }): () => Registry;
}

/** An admitted agent's record (its registered time beyond 2^53 on purpose). */
export function agent(id: string, over: Partial<DurableAgent> = {}): DurableAgent {
  return {
    id,
    info: { hostname: `host-${id}`, ip: '10.0.0.1', port: 5051, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 4 } }], attributes: [] },
    version: '0.1.0',
    capabilities: ['MULTI_ROLE'],
    // Beyond 2^53 on purpose: must round-trip to the digit.
    registeredTimeNs: 1_700_000_000_123_456_789n,
    ...over,
  };
}

/** The contract every Registry backend must meet. */
export function registrySuite(backend: RegistryBackend): void {
  describe(`Registry contract: ${backend.name}`, () => {
    test('a fresh registry recovers nothing', async (t) => {
      const r = backend.create(t)();
      assert.deepEqual(await r.recover(), { agents: [], frameworks: [], maintenance: { windows: [] } });
      await r.close();
    });

    test('maintenance: schedule replaced whole, down and up by key, exact ns, survives reopen', async (t) => {
      const open = backend.create(t);
      const r = open();
      const m = (key: string, id: { hostname?: string; ip?: string }, mode: 'DRAINING' | 'DOWN' = 'DRAINING') => ({ key, id, mode });
      await r.updateSchedule({ windows: [{ unavailability: { startNs: 1n, durationNs: 2n }, machines: [m('x', { hostname: 'x' })] }] });
      await r.updateSchedule({
        windows: [
          { unavailability: { startNs: 1_443_830_400_000_000_001n, durationNs: 3_600_000_000_000n }, machines: [m('a', { hostname: 'A', ip: '10.0.0.1' }), m('b', { ip: '10.0.0.2' })] },
          { unavailability: { startNs: -5n }, machines: [m('c', { hostname: '' })] },
        ],
      });
      await r.startMaintenance(['a', 'nope']);
      await r.close();
      const r2 = open();
      assert.deepEqual((await r2.recover()).maintenance, {
        windows: [
          { unavailability: { startNs: 1_443_830_400_000_000_001n, durationNs: 3_600_000_000_000n }, machines: [m('a', { hostname: 'A', ip: '10.0.0.1' }, 'DOWN'), m('b', { ip: '10.0.0.2' })] },
          { unavailability: { startNs: -5n }, machines: [m('c', { hostname: '' })] },
        ],
      });
      await r2.stopMaintenance(['c']);
      await r2.close();
      const r3 = open();
      const state = await r3.recover();
      assert.equal(state.maintenance.windows.length, 1);
      assert.deepEqual(state.maintenance.windows[0]?.machines.map((x) => x.key), ['a', 'b']);
      await r3.updateSchedule({ windows: [] });
      assert.deepEqual((await r3.recover()).maintenance, { windows: [] });
      await r3.close();
    });

    test('admitted agents survive close and reopen, with exact int64 times', async (t) => {
      const open = backend.create(t);
      const r = open();
      await Promise.all([r.admitAgent(agent('a')), r.admitAgent(agent('b'))]);
      await r.close();
      const again = open();
      const state = await again.recover();
      assert.deepEqual(state.agents.map((a) => a.id), ['a', 'b']);
      const a = state.agents[0]!;
      assert.equal(a.registeredTimeNs, 1_700_000_000_123_456_789n);
      assert.equal(a.reachability, 'REACHABLE');
      assert.deepEqual(a.info, agent('a').info);
      assert.deepEqual(a.capabilities, ['MULTI_ROLE']);
      assert.equal(a.unreachableTimeNs, undefined);
      await again.close();
    });

    test('drain, drained, deactivate, reactivate, gone: survive a reopen; removal erases drain state', async (t) => {
      const open = backend.create(t);
      const r = open();
      await Promise.all(['a', 'b', 'c', 'd', 'e'].map((id) => r.admitAgent(agent(id))));
      await r.drainAgent('a', { maxGracePeriodNs: 1_000_000_000n, markGone: false }, 1_700_000_000_123_456_789n);
      await r.markAgentDrained('a', 1_700_000_001_000_000_001n);
      await r.drainAgent('b', { maxGracePeriodNs: undefined, markGone: true }, 5n);
      await r.deactivateAgent('c');
      await r.deactivateAgent('d');
      await r.reactivateAgent('d');
      await r.drainAgent('e', { maxGracePeriodNs: 0n, markGone: false }, 7n);
      await r.removeAgent('e');
      await r.markAgentGone('b', 9n);
      await assert.rejects(r.drainAgent('never', { maxGracePeriodNs: undefined, markGone: false }, 1n));
      await r.close();
      const again = open();
      const state = await again.recover();
      const byId = new Map(state.agents.map((a) => [a.id, a]));
      assert.deepEqual([...byId.keys()], ['a', 'c', 'd']);
      assert.deepEqual(byId.get('a')!.drain, { state: 'DRAINED', config: { maxGracePeriodNs: 1_000_000_000n, markGone: false }, startedNs: 1_700_000_000_123_456_789n, drainedNs: 1_700_000_001_000_000_001n });
      assert.equal(byId.get('a')!.deactivated, true);
      assert.deepEqual([byId.get('c')!.deactivated, byId.get('c')!.drain], [true, undefined]);
      assert.deepEqual([byId.get('d')!.deactivated, byId.get('d')!.drain], [undefined, undefined]);
      assert.deepEqual(state.goneAgents, [{ id: 'b', goneTimeNs: 9n }]);
      // A re-drain overwrites the config and goes back to DRAINING.
      await again.drainAgent('a', { maxGracePeriodNs: undefined, markGone: false }, 11n);
      await again.close();
      const third = open();
      const s3 = await third.recover();
      assert.deepEqual(s3.agents.find((a) => a.id === 'a')!.drain, { state: 'DRAINING', config: { maxGracePeriodNs: undefined, markGone: false }, startedNs: 11n, drainedNs: undefined });
      await third.close();
    });

    test('frameworks: added, updated, removed; they survive a reopen with exact times', async (t) => {
      const open = backend.create(t);
      const r = open();
      const info = (id: string, name: string) => ({ user: 'u', name, id: { value: id }, failover_timeout: 60, checkpoint: true, capabilities: [{ type: 'PARTITION_AWARE' }] });
      await Promise.all([
        r.addFramework({ id: 'f1', info: info('f1', 'one'), registeredTimeNs: 1_700_000_000_123_456_789n }),
        r.addFramework({ id: 'f2', info: info('f2', 'two'), registeredTimeNs: undefined }),
        r.addFramework({ id: 'f3', info: info('f3', 'three'), registeredTimeNs: 5n }),
      ]);
      await r.addFramework({ id: 'f1', info: info('f1', 'one-v2'), registeredTimeNs: 1_700_000_000_123_456_789n });
      await r.removeFramework('f3');
      await r.removeFramework('never-there');
      await r.close();
      const again = open();
      const state = await again.recover();
      assert.deepEqual(state.frameworks, [
        { id: 'f1', info: info('f1', 'one-v2'), registeredTimeNs: 1_700_000_000_123_456_789n },
        { id: 'f2', info: info('f2', 'two'), registeredTimeNs: undefined },
      ]);
      assert.deepEqual(state.agents, []);
      await again.close();
    });

    test('unreachable, then readmitted with new info', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.admitAgent(agent('a'));
      await r.markAgentUnreachable('a', 1_800_000_000_000_000_001n);
      await r.close();
      let r2 = open();
      let a = (await r2.recover()).agents[0]!;
      assert.equal(a.reachability, 'UNREACHABLE');
      assert.equal(a.unreachableTimeNs, 1_800_000_000_000_000_001n);
      await r2.markAgentReachable(agent('a', { version: '0.2.0' }));
      await r2.close();
      r2 = open();
      a = (await r2.recover()).agents[0]!;
      assert.equal(a.reachability, 'REACHABLE');
      assert.equal(a.unreachableTimeNs, undefined);
      assert.equal(a.version, '0.2.0');
      await r2.close();
    });

    test('marking an unknown agent unreachable fails; removing one is a no-op', async (t) => {
      const r = backend.create(t)();
      await assert.rejects(r.markAgentUnreachable('nope', 1n));
      await r.removeAgent('nope');
      await r.close();
    });

    test('removed agents are forgotten; one failing write does not fail the others', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.admitAgent(agent('a'));
      const results = await Promise.allSettled([r.removeAgent('a'), r.markAgentUnreachable('ghost', 1n), r.admitAgent(agent('c'))]);
      assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
      await r.close();
      const r2 = open();
      assert.deepEqual((await r2.recover()).agents.map((a) => a.id), ['c']);
      await r2.close();
    });

    test('admitting an existing id replaces its record (an unknown id re-registering is admitted as itself)', async (t) => {
      const r = backend.create(t)();
      await r.admitAgent(agent('a'));
      await r.markAgentUnreachable('a', 5n);
      await r.admitAgent(agent('a', { version: '9' }));
      const agents = (await r.recover()).agents;
      assert.equal(agents.length, 1);
      assert.equal(agents[0]?.version, '9');
      assert.equal(agents[0]?.reachability, 'REACHABLE');
      await r.close();
    });

    test('writes after close are refused, writes queued before close are flushed', async (t) => {
      const open = backend.create(t);
      const r = open();
      const queued = r.admitAgent(agent('q'));
      await r.close();
      await queued;
      await assert.rejects(r.admitAgent(agent('late')), (e: unknown) => e instanceof DrydockError && e.code === 'REGISTRY_CLOSED');
      const r2 = open();
      assert.deepEqual((await r2.recover()).agents.map((a) => a.id), ['q']);
      await r2.close();
    });
  });
}

/**
 * The registry contract, written as a function of a backend factory: the SQLite suite
 * (test/unit/registry.test.ts) and the etcd suite (test/integration/registry-etcd.test.ts)
 * run the same tests.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { DrydockError } from '../../shared/errors.js';
import type { DurableAgent, DurableMaintenancePlan, Registry, RegistryLimits } from '../../master/registry/registry.js';

/** A backend under test: `open` may be called again on the same place after close (a restart). */
export interface RegistryBackend {
  name: string;
  /** A fresh, empty place to keep a registry; returns an opener for it (with these limits). */
  create(t: { after(fn: () => void): void }, limits?: RegistryLimits): () => Registry;
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

/** A maintenance plan's record; createdNs beyond 2^53 on purpose. */
export function maintenancePlan(name: string, over: Partial<DurableMaintenancePlan> = {}): DurableMaintenancePlan {
  return {
    name,
    spec: JSON.stringify({ name, machines: { attributes: { zone: 'a' } }, group_by: 'rack', strategy: 'serial', budget: { max_down: 2 } }),
    progress: JSON.stringify({ steps: [{ machine: 'h1', status: 'PENDING' }], overrides: [] }),
    createdNs: 1_764_000_000_123_456_789n,
    ...over,
  };
}

/**
 * The progress of a plan over `steps` machines as the driver might keep it (~450 bytes a step),
 * with 2- and 4-byte UTF-8 characters so that chunks cut at byte offsets split characters.
 */
export function bigProgress(steps: number, tag = ''): string {
  return JSON.stringify({
    steps: Array.from({ length: steps }, (_, i) => ({
      id: `6f1c2b9e-4d3a-4f7e-9b1a-${String(i).padStart(12, '0')}`,
      machine: { hostname: `host-${String(i).padStart(5, '0')}.rack-${i % 40}.zone-a.example.org`, ip: `10.${(i >> 8) & 255}.${i & 255}.7` },
      status: i % 3 === 0 ? 'COMPLETE' : 'PENDING',
      mode: 'UP',
      agentId: `2c3f9a1e-7b6d-4c5e-8f9a-0b1c2d3e4f50-S${i}`,
      drain: { state: 'DRAINED', startedNs: '1764000000123456789', drainedNs: '1764000042123456789' },
      waitingFor: `${tag}réponse de « framework-${i % 7} » 😀`.slice(0, 20 + (i % 13)),
      updatedNs: '1764000200123456789',
    })),
    overrides: [{ step: 'host-00001', action: 'force-complete', by: tag }],
  });
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

    test('maintenance: machine attributes kept with the schedule, replaced by DOWN when given, survive reopen', async (t) => {
      const open = backend.create(t);
      const r = open();
      const r1 = { rack: 'r1', zone: 'é-1' };
      const at = { startNs: 1n, durationNs: 2n };
      await r.updateSchedule({
        windows: [
          {
            unavailability: at,
            machines: [
              { key: 'a', id: { hostname: 'a' }, mode: 'DRAINING', attributes: r1 },
              { key: 'b', id: { hostname: 'b' }, mode: 'DRAINING' },
              { key: 'c', id: { hostname: 'c' }, mode: 'DRAINING', attributes: { rack: 'r3' } },
            ],
          },
        ],
      });
      // b's agent registered after the schedule was written: DOWN brings its attributes; a and c keep theirs.
      await r.startMaintenance(['a', 'b', 'c'], new Map([['b', { rack: 'r2' }]]));
      await r.close();
      const r2 = open();
      const machines = (await r2.recover()).maintenance.windows[0]?.machines;
      assert.deepEqual(machines, [
        { key: 'a', id: { hostname: 'a' }, mode: 'DOWN', attributes: r1 },
        { key: 'b', id: { hostname: 'b' }, mode: 'DOWN', attributes: { rack: 'r2' } },
        { key: 'c', id: { hostname: 'c' }, mode: 'DOWN', attributes: { rack: 'r3' } },
      ]);
      // A schedule is written whole: a machine listed without attributes has none; one that leaves takes them along.
      await r2.updateSchedule({ windows: [{ unavailability: at, machines: [{ ...machines![0]!, attributes: { rack: 'r9' } }, { key: 'b', id: { hostname: 'b' }, mode: 'DOWN' }] }] });
      await r2.stopMaintenance(['b']);
      await r2.close();
      const r3 = open();
      assert.deepEqual((await r3.recover()).maintenance, { windows: [{ unavailability: at, machines: [{ key: 'a', id: { hostname: 'a' }, mode: 'DOWN', attributes: { rack: 'r9' } }] }] });
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

    test('after a recovery, admissions and unreachability in any order, queued together or not, leave the last word in the registry', async (t) => {
      const open = backend.create(t);
      const seed = open();
      await seed.admitAgent(agent('old'));
      await seed.markAgentUnreachable('old', 7n);
      await seed.close();
      const r = open();
      await r.recover();
      // Unreachable at recovery, admitted again; new, made unreachable, admitted again.
      await r.admitAgent(agent('old'));
      await r.admitAgent(agent('b'));
      await r.markAgentUnreachable('b', 8n);
      await r.admitAgent(agent('b'));
      // Queued in one turn: the order they were asked in is the order they land in.
      await Promise.all([r.admitAgent(agent('c')), r.markAgentUnreachable('c', 9n), r.admitAgent(agent('c', { version: '2' }))]);
      await Promise.all([r.admitAgent(agent('d')), r.markAgentUnreachable('d', 10n)]);
      await r.close();
      const again = open();
      const byId = new Map((await again.recover()).agents.map((a) => [a.id, a]));
      assert.deepEqual(
        ['old', 'b', 'c', 'd'].map((id) => [id, byId.get(id)?.reachability, byId.get(id)?.unreachableTimeNs]),
        [['old', 'REACHABLE', undefined], ['b', 'REACHABLE', undefined], ['c', 'REACHABLE', undefined], ['d', 'UNREACHABLE', 10n]],
      );
      assert.equal(byId.get('c')?.version, '2');
      await again.close();
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

    test('the principal an agent is bound to survives a reopen, unreachability and readmission; a new record replaces it; removal forgets it', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.admitAgent(agent('bound', { principal: 'rack1-agents' }));
      await r.admitAgent(agent('anon'));
      await r.admitAgent(agent('later'));
      await r.admitAgent(agent('gone-then-back', { principal: 'p-old' }));
      await r.markAgentUnreachable('bound', 5n);
      await r.close();
      const r2 = open();
      let byId = new Map((await r2.recover()).agents.map((a) => [a.id, a]));
      assert.equal(byId.get('bound')?.principal, 'rack1-agents');
      assert.equal(byId.get('bound')?.reachability, 'UNREACHABLE');
      assert.equal('principal' in byId.get('anon')!, false, 'an agent registered anonymously has no principal field');
      // Readmitted (it came back), with the binding passed on.
      await r2.markAgentReachable(agent('bound', { principal: 'rack1-agents', version: '0.2.0' }));
      // Bound on its first authenticated registration.
      await r2.admitAgent(agent('later', { principal: 'rack2-agents' }));
      // Removal forgets the binding with the record.
      await r2.removeAgent('gone-then-back');
      await r2.admitAgent(agent('gone-then-back'));
      await r2.close();
      const r3 = open();
      byId = new Map((await r3.recover()).agents.map((a) => [a.id, a]));
      assert.deepEqual(
        [...byId.values()].map((a) => [a.id, a.principal, a.reachability]),
        [
          ['bound', 'rack1-agents', 'REACHABLE'],
          ['anon', undefined, 'REACHABLE'],
          ['later', 'rack2-agents', 'REACHABLE'],
          ['gone-then-back', undefined, 'REACHABLE'],
        ],
      );
      assert.equal(byId.get('bound')?.version, '0.2.0');
      await r3.close();
    });

    test('a removed agent\'s binding is kept with its removal: it survives reopens, oldest first; removed again it is the newest; past the cap the oldest goes', async (t) => {
      const open = backend.create(t, { maxRemovedBindings: 3 });
      const r = open();
      assert.equal((await r.recover()).removedBindings, undefined, 'none: left out');
      await Promise.all(['a', 'b', 'c'].map((id) => r.admitAgent(agent(id, { principal: `p-${id}` }))));
      await r.removeAgent('a', { timeNs: 1_700_000_000_000_000_001n, principal: 'p-a' });
      await r.removeAgent('b', { timeNs: 2n, principal: 'p-b' });
      // Removed without a principal (it was never bound): nothing kept.
      await r.removeAgent('c', { timeNs: 3n });
      await r.close();
      const r2 = open();
      let state = await r2.recover();
      assert.deepEqual(state.agents, []);
      assert.deepEqual(state.removedBindings, [
        { id: 'a', principal: 'p-a', removedTimeNs: 1_700_000_000_000_000_001n },
        { id: 'b', principal: 'p-b', removedTimeNs: 2n },
      ]);
      // Readmitted by its principal, then removed again: one binding, now the newest.
      await r2.admitAgent(agent('a', { principal: 'p-a' }));
      await r2.removeAgent('a', { timeNs: 4n, principal: 'p-a' });
      // An id the registry does not hold: nothing to forget, the binding is kept all the same.
      await r2.removeAgent('d', { timeNs: 5n, principal: 'p-d' });
      await r2.removeAgent('e', { timeNs: 6n, principal: 'p-e' });
      await r2.close();
      const r3 = open();
      state = await r3.recover();
      assert.deepEqual(state.removedBindings?.map((b) => [b.id, b.principal, b.removedTimeNs]), [['a', 'p-a', 4n], ['d', 'p-d', 5n], ['e', 'p-e', 6n]], 'b, the oldest, went past the cap');
      // Several in one group commit: still at most the cap, the newest kept.
      await Promise.all(['f', 'g'].map((id, i) => r3.removeAgent(id, { timeNs: 7n + BigInt(i), principal: `p-${id}` })));
      await r3.close();
      const r4 = open();
      assert.deepEqual((await r4.recover()).removedBindings?.map((b) => b.id), ['e', 'f', 'g']);
      await r4.close();
    });

    test('a removal writes its scheduled machine\'s attributes when the schedule lacks them, with the removal; not otherwise', async (t) => {
      const open = backend.create(t);
      const r = open();
      const at = { startNs: 1n, durationNs: 2n };
      // Scheduled before their agents registered: no attributes known.
      await r.updateSchedule({ windows: [{ unavailability: at, machines: [{ key: 'm1', id: { hostname: 'm1' }, mode: 'DRAINING' }, { key: 'm2', id: { hostname: 'm2' }, mode: 'DRAINING', attributes: { rack: 'r2' } }] }] });
      await Promise.all(['a1', 'a2', 'a3'].map((id) => r.admitAgent(agent(id))));
      await r.removeAgent('a1', { timeNs: 1n, principal: 'p', machine: { key: 'm1', attributes: { rack: 'r1' } } });
      // Held already: the schedule is left as it is.
      await r.removeAgent('a2', { timeNs: 2n, machine: { key: 'm2', attributes: { rack: 'r2' } } });
      // A machine the schedule does not list: nothing added to it.
      await r.removeAgent('a3', { timeNs: 3n, machine: { key: 'elsewhere', attributes: { rack: 'r3' } } });
      await r.close();
      const r2 = open();
      const state = await r2.recover();
      assert.deepEqual(state.agents, []);
      assert.deepEqual(state.removedBindings?.map((b) => b.id), ['a1']);
      assert.deepEqual(state.maintenance, {
        windows: [{ unavailability: at, machines: [{ key: 'm1', id: { hostname: 'm1' }, mode: 'DRAINING', attributes: { rack: 'r1' } }, { key: 'm2', id: { hostname: 'm2' }, mode: 'DRAINING', attributes: { rack: 'r2' } }] }],
      });
      // Then DOWN without attributes given: kept.
      await r2.startMaintenance(['m1']);
      await r2.close();
      const r3 = open();
      assert.deepEqual((await r3.recover()).maintenance.windows[0]?.machines[0], { key: 'm1', id: { hostname: 'm1' }, mode: 'DOWN', attributes: { rack: 'r1' } });
      // A schedule is still written whole: one listing m1 without attributes leaves it none.
      const again = { windows: [{ unavailability: at, machines: [{ key: 'm1', id: { hostname: 'm1' }, mode: 'DOWN' as const }] }] };
      await r3.updateSchedule(again);
      await r3.removeAgent('a4', { timeNs: 4n, machine: { key: 'm1', attributes: { rack: 'r4' } } });
      await r3.updateSchedule(again);
      await r3.close();
      const r4 = open();
      assert.deepEqual((await r4.recover()).maintenance, again);
      await r4.close();
    });

    test('marking an agent gone writes its scheduled machine\'s attributes when the schedule lacks them, with the mark; not otherwise; no binding kept', async (t) => {
      const open = backend.create(t);
      const r = open();
      const at = { startNs: 1n, durationNs: 2n };
      const m = (key: string, attributes?: Record<string, string>) => ({ key, id: { hostname: key }, mode: 'DRAINING' as const, ...(attributes === undefined ? {} : { attributes }) });
      // Scheduled before their agents registered (m1, m3): no attributes known.
      await r.updateSchedule({ windows: [{ unavailability: at, machines: [m('m1'), m('m2', { rack: 'r2' }), m('m3')] }] });
      await Promise.all(['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((id) => r.admitAgent(agent(id, { principal: `p-${id}` }))));
      // A mark_gone drain finishing.
      await r.drainAgent('a1', { maxGracePeriodNs: undefined, markGone: true }, 1n);
      await r.markAgentGone('a1', 11n, { key: 'm1', attributes: { rack: 'r1' } });
      // Held already: the schedule is left as it is.
      await r.markAgentGone('a2', 12n, { key: 'm2', attributes: { rack: 'r2' } });
      // A machine the schedule does not list: nothing added to it.
      await r.markAgentGone('a3', 13n, { key: 'elsewhere', attributes: { rack: 'x' } });
      // In one group commit with a removal of the same machine, and a write that fails alone.
      const results = await Promise.allSettled([
        r.markAgentGone('a4', 14n, { key: 'm3', attributes: { rack: 'r3' } }),
        r.markAgentUnreachable('no-such-agent', 1n),
        r.removeAgent('a5', { timeNs: 15n, principal: 'p-a5', machine: { key: 'm3', attributes: { rack: 'r3' } } }),
      ]);
      assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
      // No machine given: only the mark.
      await r.markAgentGone('a6', 16n);
      await r.close();
      const r2 = open();
      const state = await r2.recover();
      assert.deepEqual(state.agents, []);
      assert.deepEqual(state.goneAgents?.map((g) => [g.id, g.goneTimeNs]), [['a1', 11n], ['a2', 12n], ['a3', 13n], ['a4', 14n], ['a6', 16n]]);
      // A gone id is refused to everyone: only the removed one is bound.
      assert.deepEqual(state.removedBindings?.map((b) => b.id), ['a5']);
      assert.deepEqual(state.maintenance, { windows: [{ unavailability: at, machines: [m('m1', { rack: 'r1' }), m('m2', { rack: 'r2' }), m('m3', { rack: 'r3' })] }] });
      // Then DOWN without attributes given: kept.
      await r2.startMaintenance(['m1']);
      await r2.close();
      const r3 = open();
      assert.deepEqual((await r3.recover()).maintenance.windows[0]?.machines[0], { ...m('m1', { rack: 'r1' }), mode: 'DOWN' });
      await r3.close();
    });

    test('maintenance plans: spec and progress come back exactly as written, createdNs to the digit', async (t) => {
      const open = backend.create(t);
      const r = open();
      // Quotes, backslashes, newlines, NUL, 2- and 4-byte UTF-8: the registry keeps text, it reads nothing.
      const a = maintenancePlan('kernel-2026-11', { spec: '{"name":"kernel-2026-11","on_down":{"command":"reboot \\"{hostname}\\"\\n"},"note":"é 😀 \u0000 end"}', createdNs: 9_223_372_036_854_775_807n });
      const b = maintenancePlan('b', { progress: '', spec: ' not even JSON ' });
      await r.createMaintenancePlan(a);
      await r.createMaintenancePlan(b);
      await r.close();
      const r2 = open();
      const state = await r2.recover();
      assert.deepEqual(state.maintenancePlans, [b, a]);
      assert.equal(typeof state.maintenancePlans?.[1]?.createdNs, 'bigint');
      await r2.close();
    });

    test('maintenance plans: a name taken is refused with MAINTENANCE_PLAN_EXISTS and changes nothing', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.createMaintenancePlan(maintenancePlan('p'));
      await r.updateMaintenancePlanProgress('p', '{"steps":"moved"}');
      const isExists = (e: unknown) => e instanceof DrydockError && e.code === 'MAINTENANCE_PLAN_EXISTS' && e.status === 409 && e.message === "Maintenance plan 'p' already exists";
      await assert.rejects(r.createMaintenancePlan(maintenancePlan('p', { spec: '{"other":1}', progress: '{}', createdNs: 1n })), isExists);
      // Made together: the first wins, the second is refused, and the write beside them still lands.
      const results = await Promise.allSettled([r.createMaintenancePlan(maintenancePlan('q', { spec: '"first"' })), r.createMaintenancePlan(maintenancePlan('q', { spec: '"second"' })), r.admitAgent(agent('a'))]);
      assert.deepEqual(results.map((x) => x.status), ['fulfilled', 'rejected', 'fulfilled']);
      assert.ok(results[1]?.status === 'rejected' && results[1].reason instanceof DrydockError && results[1].reason.message === "Maintenance plan 'q' already exists");
      await r.close();
      const r2 = open();
      const state = await r2.recover();
      assert.deepEqual(state.maintenancePlans, [maintenancePlan('p', { progress: '{"steps":"moved"}' }), maintenancePlan('q', { spec: '"first"' })]);
      assert.deepEqual(state.agents.map((x) => x.id), ['a']);
      await r2.close();
    });

    test('maintenance plans: progress is replaced whole, the last write wins across a reopen; an unknown name is refused', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.createMaintenancePlan(maintenancePlan('p'));
      await r.createMaintenancePlan(maintenancePlan('other'));
      await Promise.all([1, 2, 3, 4, 5].map((i) => r.updateMaintenancePlanProgress('p', `{"step":${i}}`)));
      await r.updateMaintenancePlanProgress('other', '{"long":"' + 'x'.repeat(1000) + '"}');
      await r.updateMaintenancePlanProgress('other', '{}');
      // Unknown (or never a name): refused, and nothing is created by it.
      await assert.rejects(r.updateMaintenancePlanProgress('nope', '{}'), (e: unknown) => e instanceof Error && !(e instanceof DrydockError) && e.message.includes("maintenance plan 'nope' is not in the registry"));
      await assert.rejects(r.updateMaintenancePlanProgress('../p', '{}'));
      await r.close();
      const r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans, [maintenancePlan('other', { progress: '{}' }), maintenancePlan('p', { progress: '{"step":5}' })]);
      await r2.updateMaintenancePlanProgress('p', '{"step":6}');
      await r2.close();
      const r3 = open();
      assert.deepEqual((await r3.recover()).maintenancePlans?.map((p) => p.progress), ['{}', '{"step":6}']);
      await r3.close();
    });

    test('maintenance plans: deleted with their progress; unknown names are a no-op; a name can be reused', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.createMaintenancePlan(maintenancePlan('p'));
      await r.createMaintenancePlan(maintenancePlan('keep'));
      await r.updateMaintenancePlanProgress('p', '{"old":true}');
      await r.deleteMaintenancePlan('p');
      await r.deleteMaintenancePlan('p');
      await r.deleteMaintenancePlan('never-there');
      await r.deleteMaintenancePlan('Not/A/Name');
      await assert.rejects(r.updateMaintenancePlanProgress('p', '{}'));
      assert.deepEqual((await r.recover()).maintenancePlans?.map((p) => p.name), ['keep']);
      await r.createMaintenancePlan(maintenancePlan('p', { progress: '{"fresh":true}', createdNs: 1_764_000_000_123_456_790n }));
      await r.deleteMaintenancePlan('keep');
      await r.close();
      const r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans, [maintenancePlan('p', { progress: '{"fresh":true}', createdNs: 1_764_000_000_123_456_790n })]);
      await r2.deleteMaintenancePlan('p');
      // None left: the field is left out, as goneAgents.
      assert.deepEqual(await r2.recover(), { agents: [], frameworks: [], maintenance: { windows: [] } });
      await r2.close();
    });

    test('maintenance plans: recovered by createdNs, then name, whatever the order of creation', async (t) => {
      const open = backend.create(t);
      const r = open();
      const plans = [
        maintenancePlan('zeta', { createdNs: 5n }),
        maintenancePlan('last', { createdNs: 9_223_372_036_854_775_807n }),
        maintenancePlan('alpha', { createdNs: 5n }),
        maintenancePlan('first', { createdNs: 3n }),
        maintenancePlan('beyond-2-53', { createdNs: 9_007_199_254_740_993n }),
        maintenancePlan('beyond-2-53-too', { createdNs: 9_007_199_254_740_992n }),
      ];
      await Promise.all(plans.map((p) => r.createMaintenancePlan(p)));
      await r.close();
      const r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans?.map((p) => p.name), ['first', 'alpha', 'zeta', 'beyond-2-53-too', 'beyond-2-53', 'last']);
      await r2.close();
    });

    test('maintenance plans: a 2 MB progress and a 1 MB spec round-trip, through several rewrites', async (t) => {
      const open = backend.create(t);
      const r = open();
      const spec = JSON.stringify({ name: 'fleet', machines: { hostnames: Array.from({ length: 20_000 }, (_, i) => `host-${i}.rack-${i % 40}.zone-a.example.org=10.${(i >> 8) & 255}.${i & 255}.7 é`) } });
      const first = bigProgress(6_000, 'first');
      const second = bigProgress(11_000, 'second');
      assert.ok(Buffer.byteLength(spec) > 1_000_000 && Buffer.byteLength(first) > 2_000_000 && Buffer.byteLength(second) > 4_000_000);
      await r.createMaintenancePlan(maintenancePlan('fleet', { spec, progress: first }));
      await r.createMaintenancePlan(maintenancePlan('small'));
      await r.close();
      let r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans, [maintenancePlan('fleet', { spec, progress: first }), maintenancePlan('small')]);
      await r2.updateMaintenancePlanProgress('fleet', second);
      await r2.close();
      r2 = open();
      const back = (await r2.recover()).maintenancePlans?.[0];
      assert.equal(back?.spec, spec);
      assert.equal(back?.progress, second);
      await r2.updateMaintenancePlanProgress('fleet', '{"done":true}');
      await r2.close();
      r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans, [maintenancePlan('fleet', { spec, progress: '{"done":true}' }), maintenancePlan('small')]);
      await r2.close();
    });

    test('maintenance plans: a bad name or text UTF-8 cannot keep is refused, nothing written', async (t) => {
      const r = backend.create(t)();
      for (const name of ['', 'Upper', '9lives', 'a/b', 'a'.repeat(64), 'trailing\n']) {
        await assert.rejects(r.createMaintenancePlan(maintenancePlan(name)), (e: unknown) => e instanceof Error && !(e instanceof DrydockError), name);
      }
      await r.createMaintenancePlan(maintenancePlan('a'.repeat(63)));
      await assert.rejects(r.createMaintenancePlan(maintenancePlan('lone', { progress: '{"x":"\ud800"}' })), /lone surrogate/);
      await assert.rejects(r.updateMaintenancePlanProgress('a'.repeat(63), '"\udc00"'), /lone surrogate/);
      assert.deepEqual((await r.recover()).maintenancePlans, [maintenancePlan('a'.repeat(63))]);
      await r.close();
    });

    test('maintenance plans: writes after close are refused, those queued before are flushed', async (t) => {
      const open = backend.create(t);
      const r = open();
      await r.createMaintenancePlan(maintenancePlan('p'));
      const queued = [r.createMaintenancePlan(maintenancePlan('q')), r.updateMaintenancePlanProgress('p', '{"queued":true}')];
      await r.close();
      await Promise.all(queued);
      const closed = (e: unknown) => e instanceof DrydockError && e.code === 'REGISTRY_CLOSED';
      await assert.rejects(r.createMaintenancePlan(maintenancePlan('late')), closed);
      await assert.rejects(r.updateMaintenancePlanProgress('p', '{"late":true}'), closed);
      await assert.rejects(r.deleteMaintenancePlan('p'), closed);
      const r2 = open();
      assert.deepEqual((await r2.recover()).maintenancePlans, [maintenancePlan('p', { progress: '{"queued":true}' }), maintenancePlan('q')]);
      await r2.close();
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

/** Pure cores of the scheduler API: allocator (DRF, filters), framework table, ACCEPT validation, call parsing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { generateOffers, type AllocatorAgent, type AllocatorFramework } from '../../master/cores/allocator.js';
import { FrameworkTable } from '../../master/cores/frameworks.js';
import { planAccept, type Offer } from '../../master/cores/offers.js';
import { parseSchedulerCall } from '../../master/cores/scheduler-calls.js';
import type { Resource } from '../../shared/mesos.js';

const cpus = (n: number): Resource => ({ name: 'cpus', type: 'SCALAR', scalar: { value: n } });
const agent = (id: string, avail: number, over: Partial<AllocatorAgent> = {}): AllocatorAgent => ({ id, active: true, diskPressure: false, total: [cpus(4)], available: avail > 0 ? [cpus(avail)] : [], ...over });
const fw = (id: string, held: number, over: Partial<AllocatorFramework> = {}): AllocatorFramework => ({ id, active: true, suppressed: false, allocated: held > 0 ? [cpus(held)] : [], ...over });

test('generateOffers: DRF choice, filters, suppressed/inactive frameworks, inactive agents, disk pressure, nothing available', () => {
  const now = 1000;
  const cases: Array<[string, AllocatorAgent[], AllocatorFramework[], Record<string, Record<string, number>>, Array<[string, string]>]> = [
    ['lowest dominant share wins', [agent('a', 4)], [fw('f1', 2), fw('f2', 1)], {}, [['f2', 'a']]],
    ['offers count within a round', [agent('a', 2), agent('b', 2)], [fw('f1', 0), fw('f2', 0)], {}, [['f1', 'a'], ['f2', 'b']]],
    ['filtered framework skipped', [agent('a', 4)], [fw('f1', 0), fw('f2', 3)], { f1: { a: 2000 } }, [['f2', 'a']]],
    ['filter expired', [agent('a', 4)], [fw('f1', 0), fw('f2', 3)], { f1: { a: 1000 } }, [['f1', 'a']]],
    ['suppressed gets nothing', [agent('a', 4)], [fw('f1', 0, { suppressed: true })], {}, []],
    ['inactive framework gets nothing', [agent('a', 4)], [fw('f1', 0, { active: false })], {}, []],
    ['inactive agent not offered', [agent('a', 4, { active: false })], [fw('f1', 0)], {}, []],
    ['agent under disk pressure not offered', [agent('a', 4, { diskPressure: true })], [fw('f1', 0)], {}, []],
    ['disk pressure on one agent: the other is offered', [agent('a', 4, { diskPressure: true }), agent('b', 2)], [fw('f1', 0)], {}, [['f1', 'b']]],
    ['disk pressure cleared: offered again', [agent('a', 4, { diskPressure: false })], [fw('f1', 0)], {}, [['f1', 'a']]],
    ['nothing available, no offer', [agent('a', 0)], [fw('f1', 0)], {}, []],
  ];
  for (const [name, agents, frameworks, f, want] of cases) {
    const filters = new Map(Object.entries(f).map(([k, v]) => [k, new Map(Object.entries(v))]));
    const got = generateOffers({ agents, frameworks, filters, nowMs: now }).map((o) => [o.frameworkId, o.agentId]);
    assert.deepEqual(got, want, name);
  }
});

test('framework table: subscribe, failover, disconnect, failover timeout on the clock, removal', () => {
  const t = new FrameworkTable();
  const info = { user: 'u', name: 'n', failover_timeout: 10 };
  const p = t.planSubscribe(info, 1n, () => 'm-0000');
  assert.equal(p.kind, 'NEW');
  assert.ok(p.durable !== undefined);
  t.applySubscribe(p, info, 's1', 1n);
  assert.equal(t.get('m-0000')?.phase, 'CONNECTED');
  const again = t.planSubscribe({ ...info, id: { value: 'm-0000' } }, 2n, () => 'never');
  assert.equal(again.kind, 'FAILOVER');
  assert.equal(again.previousStreamId, 's1');
  t.applySubscribe(again, info, 's2', 2n);
  assert.equal(t.disconnect('m-0000', 's1', 0, 3n), false, 'an old stream closing changes nothing');
  assert.equal(t.disconnect('m-0000', 's2', 5_000, 3n), true);
  assert.deepEqual(t.expired(14_999), []);
  assert.deepEqual(t.expired(15_000), ['m-0000']);
  t.remove('m-0000', 4n);
  assert.equal(t.planSubscribe({ ...info, id: { value: 'm-0000' } }, 5n, () => 'x').kind, 'REMOVED');
  assert.equal(t.completed.length, 1);
  // Recovered: counts from the master's start; filters and suppression.
  t.recover([{ id: 'r', info: { user: 'u', name: 'r', id: { value: 'r' } }, registeredTimeNs: 7n }], 100);
  assert.equal(t.get('r')?.phase, 'RECOVERED');
  assert.deepEqual(t.expired(100), ['r'], 'failover_timeout 0: due at once');
  t.filter('r', 'a', 200, 100);
  t.suppress('r');
  t.revive('r');
  assert.equal(t.get('r')?.filters.size, 0);
  assert.equal(t.get('r')?.suppressed, false);
});

test('planAccept: launches, per-task errors, invalid offers', () => {
  const offers = new Map<string, Offer>([
    ['o1', { id: 'o1', frameworkId: 'f', agentId: 'a', resources: [cpus(2)] }],
    ['o2', { id: 'o2', frameworkId: 'f', agentId: 'b', resources: [cpus(2)] }],
    ['o3', { id: 'o3', frameworkId: 'g', agentId: 'a', resources: [cpus(2)] }],
  ]);
  const ti = (id: string, n: number, agentId = 'a', cmd: unknown = { value: 'true' }) => ({ name: id, task_id: { value: id }, agent_id: { value: agentId }, resources: [{ ...cpus(n), role: '*' }], command: cmd });
  const plan = planAccept({ frameworkId: 'f', offerIds: ['o1'], offers, taskInfos: [ti('t1', 1), ti('t2', 1.5), ti('live', 0.1), ti('t3', 0.5, 'b'), ti('t4', 0.1, 'a', {}), ti('', 0.1), ti('t1', 0.1)], liveTaskIds: new Set(['live']) });
  assert.equal(plan.kind, 'LAUNCH');
  if (plan.kind !== 'LAUNCH') return;
  assert.deepEqual(plan.launches.map((t) => t.task_id.value), ['t1']);
  assert.deepEqual(plan.launches[0]?.resources, [cpus(1)], 'role * dropped: unreserved');
  assert.deepEqual(plan.rejected.map((r) => r.taskId), ['t2', 'live', 't3', 't4', '', 't1']);
  assert.match(plan.rejected[0]!.message, /more resources than offered/);
  assert.deepEqual(plan.unused, [cpus(1)]);
  for (const [ids, want] of [[['nope'], 'Offer nope is no longer valid'], [['o3'], 'Offer o3 has invalid framework g'], [['o1', 'o2'], 'Aggregated offers must belong to one single agent'], [[], 'No offers specified']] as const) {
    const p = planAccept({ frameworkId: 'f', offerIds: ids, offers, taskInfos: [ti('x', 1)], liveTaskIds: new Set() });
    assert.equal(p.kind, 'INVALID_OFFERS');
    if (p.kind === 'INVALID_OFFERS') {
      assert.ok(p.message.startsWith(`Task launched with invalid offers: ${want}`), p.message);
      assert.deepEqual(p.taskIds, ['x']);
    }
  }
});

test('parseSchedulerCall: exact messages', () => {
  const cases: Array<[unknown, number, string | undefined]> = [
    [{ type: 'SUBSCRIBE' }, 400, "Failed to validate scheduler::Call: Expecting 'subscribe' to be present"],
    [{ type: 'SUBSCRIBE', framework_id: { value: 'a' }, subscribe: { framework_info: { user: 'u', name: 'n' } } }, 400, "Failed to validate scheduler::Call: 'framework_id' differs from 'subscribe.framework_info.id'"],
    [{ type: 'SUBSCRIBE', framework_id: { value: 'a' }, subscribe: { framework_info: { user: 'u', name: 'n', id: { value: 'a' } } } }, 0, undefined],
    [{ type: 'REVIVE' }, 400, "Failed to validate scheduler::Call: Expecting 'framework_id' to be present"],
    [{ type: 'ACCEPT', framework_id: { value: 'a' } }, 400, "Failed to validate scheduler::Call: Expecting 'accept' to be present"],
    [{ type: 'KILL', framework_id: { value: 'a' } }, 400, "Failed to validate scheduler::Call: Expecting 'kill' to be present"],
    [{ type: 'ACKNOWLEDGE', framework_id: { value: 'a' }, acknowledge: { agent_id: { value: 'x' }, task_id: { value: 't' }, uuid: 'bad' } }, 400, "Failed to validate scheduler::Call: 'acknowledge.uuid' is not a valid base64-encoded UUID"],
    [{ type: 'ACKNOWLEDGE', framework_id: { value: 'a' }, acknowledge: { agent_id: { value: 'x' }, task_id: { value: 't' }, uuid: Buffer.alloc(16, 1).toString('base64') } }, 0, undefined],
    [{ type: 'NOPE' }, 400, "Failed to validate scheduler::Call: Expecting 'type' to be present"],
    [{ type: 'REVIVE', framework_id: { value: 'a' }, extra: 1 }, 0, undefined],
  ];
  for (const [body, status, message] of cases) {
    const r = parseSchedulerCall(JSON.stringify(body));
    if (status === 0) assert.ok(r.ok, JSON.stringify(body));
    else {
      assert.ok(!r.ok);
      if (!r.ok) {
        assert.equal(r.error.status, status);
        assert.equal(r.error.message, message);
      }
    }
  }
  const bad = parseSchedulerCall('{');
  assert.ok(!bad.ok && bad.error.message.startsWith('Failed to parse body into JSON'));
});

/**
 * The pure pieces of the security benchmark: the 1,000-entry ACLs it gives the secured master
 * (they must parse, allow exactly the workload, and put real entries in front of the one that
 * allows it), the alternation of plain and secured runs, and its comparison rows.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Authorizer, parseAcls, type AclAction } from '../../shared/acls.js';
import { BENCH_PRINCIPALS, SECURITY_GOAL_RATIO, benchAcls, comparisonRow, roundOrder } from '../../scripts/bench/security.js';

const ACTIONS = ['register_agents', 'run_tasks', 'register_frameworks', 'view_agents'] as const;

function authorizer(total: number): Authorizer {
  const parsed = parseAcls(JSON.stringify(benchAcls(total)));
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
  assert.equal(parsed.value.count, total);
  assert.equal(parsed.value.permissive, false);
  return new Authorizer(parsed.value);
}

test('benchAcls: exactly the entries asked for, spread over the workload actions, the allowing one last', () => {
  for (const total of [4, 5, 7, 100, 1000, 1001]) {
    const acls = benchAcls(total) as Record<string, unknown>;
    assert.equal(acls['permissive'], false);
    const lists = ACTIONS.map((a) => acls[a] as Array<{ principals: { values: string[] } }>);
    assert.equal(lists.reduce((s, l) => s + l.length, 0), total, `total ${total}`);
    for (const l of lists) assert.ok(l.length >= 1);
    // The workload's principal names the last entry of each action.
    assert.deepEqual(lists.map((l) => l.at(-1)?.principals.values), [[BENCH_PRINCIPALS.agent], [BENCH_PRINCIPALS.framework], [BENCH_PRINCIPALS.framework], [BENCH_PRINCIPALS.operator]]);
  }
  const thousand = benchAcls(1000) as Record<string, Array<{ principals: { values: string[] } }>>;
  assert.equal(thousand['register_agents']?.length, 500);
  // Half the entries before the allowing one are the workload's own principal: tried on every decision.
  const own = (thousand['register_agents'] ?? []).slice(0, -1).filter((e) => e.principals.values[0] === BENCH_PRINCIPALS.agent).length;
  assert.equal(own, 249);
  assert.throws(() => benchAcls(3), /at least 4/);
});

test('benchAcls: the workload is allowed, anything else is refused', () => {
  for (const total of [4, 1000]) {
    const az = authorizer(total);
    const cases: Array<[AclAction, string | undefined, Parameters<Authorizer['allows']>[2], boolean]> = [
      ['register_agents', BENCH_PRINCIPALS.agent, { hostname: 'sim-17', ip: '127.6.0.17' }, true],
      ['register_agents', BENCH_PRINCIPALS.agent, { hostname: 'bench-agent', ip: '127.0.0.1' }, true],
      ['register_agents', BENCH_PRINCIPALS.agent, { hostname: 'web-1', ip: '10.0.0.1' }, false],
      // A decoy naming the workload's principal is an entry like any other: it allows its own rack.
      ['register_agents', BENCH_PRINCIPALS.agent, { hostname: total > 4 ? 'rack1-web-1' : 'sim-1' }, true],
      ['register_agents', BENCH_PRINCIPALS.framework, { hostname: 'sim-17' }, false],
      ['register_agents', undefined, { hostname: 'sim-17' }, false],
      ['run_tasks', BENCH_PRINCIPALS.framework, 'root', true],
      ['run_tasks', BENCH_PRINCIPALS.framework, 'nobody', false],
      ['run_tasks', BENCH_PRINCIPALS.agent, 'root', false],
      ['register_frameworks', BENCH_PRINCIPALS.framework, '*', true],
      ['register_frameworks', BENCH_PRINCIPALS.framework, 'prod', false],
      ['view_agents', BENCH_PRINCIPALS.operator, { hostname: 'sim-1' }, true],
      ['view_agents', BENCH_PRINCIPALS.agent, { hostname: 'sim-1' }, false],
      ['drain_agents', BENCH_PRINCIPALS.operator, { hostname: 'sim-1' }, false],
    ];
    for (const [action, principal, object, want] of cases) {
      assert.equal(az.allows(action, principal, object), want, `${total} entries: ${action} by ${principal ?? 'anonymous'} on ${JSON.stringify(object)}`);
    }
  }
});

test('roundOrder: the two of a pair take turns going first', () => {
  const pair = ['plain', 'secured'] as const;
  assert.deepEqual([0, 1, 2, 3].map((r) => roundOrder(r, pair)), [['plain', 'secured'], ['secured', 'plain'], ['plain', 'secured'], ['secured', 'plain']]);
});

test('comparisonRow: floor is plain, ratio secured / plain, goal met only below the ratio and when complete', () => {
  const cases: Array<[number, number, boolean, boolean, boolean | undefined, number | undefined]> = [
    // plain, secured, goal, complete -> pass, ratio
    [10, 12, true, true, true, 1.2],
    [10, 13, true, true, false, 1.3],
    [10, 12, true, false, false, 1.2],
    [10, 30, false, true, undefined, 3],
    [0, 5, true, true, false, undefined],
  ];
  for (const [plain, secured, goal, complete, pass, ratio] of cases) {
    const row = comparisonRow('m', 'ms', plain, secured, goal, complete, 'n');
    assert.deepEqual(row.floor, { label: 'plain', value: plain });
    assert.equal(row.value, secured);
    assert.equal(row.ratio === undefined ? undefined : Number(row.ratio.toFixed(6)), ratio);
    assert.equal(row.goal?.pass, pass, `${plain} -> ${secured}`);
    if (goal) assert.equal(row.goal?.text, `< ${SECURITY_GOAL_RATIO}x`);
  }
});

test('comparisonRow: another floor keeps its label', () => {
  assert.deepEqual(comparisonRow('m', 's', 1, 3, false, true, 'n', 'plain ws echo').floor, { label: 'plain ws echo', value: 1 });
});

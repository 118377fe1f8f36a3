/**
 * The maintenance core, table-driven: parsing (exact int64s, Mesos' missing-field paths),
 * schedule and machine-list validation (each message, in Mesos' order), machine matching,
 * mode transitions, and inverse-offer generation with its filters.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson } from '../../shared/json.js';
import { machineKey, type MachineId } from '../../shared/machine.js';
import {
  KeyedSchedule,
  MaintenanceState,
  parseMachineList,
  parseMachinesMessage,
  parseSchedule,
  scheduleChanges,
  validateSchedule,
  validateTransition,
  type MachineModes,
  type Schedule,
} from '../../master/cores/maintenance.js';
import { generateInverseOffers, inverseOfferKey } from '../../master/cores/allocator.js';

const U = { startNs: 1443830400000000000n, durationNs: 3600000000000n };
const win = (...ids: MachineId[]) => ({ machineIds: ids, unavailability: U });
const modes = (entries: Array<[MachineId, 'UP' | 'DRAINING' | 'DOWN']>): MachineModes => new Map(entries.map(([id, mode]) => [machineKey(id), { id, mode }]));

describe('parsing', () => {
  test('nanoseconds beyond 2^53 round-trip to the digit', () => {
    const text = '{"windows":[{"machine_ids":[{"hostname":"m1","ip":"10.0.0.1"}],"unavailability":{"start":{"nanoseconds":1443830400000000001},"duration":{"nanoseconds":3600000000001}}}]}';
    const parsed = parseSchedule(parseJson(text) as Record<string, unknown>);
    assert.ok(parsed.ok);
    assert.equal(parsed.value.windows[0]?.unavailability.startNs, 1443830400000000001n);
    const s = new MaintenanceState();
    s.applySchedule(parsed.value);
    assert.equal(stringifyJson(s.scheduleJson()), text);
  });

  const missing: Array<[string, string, string]> = [
    ['no unavailability', '{"windows":[{"machine_ids":[{"hostname":"a"}]}]}', 'Missing required fields: windows[0].unavailability'],
    ['second window', '{"windows":[{"machine_ids":[{"hostname":"a"}],"unavailability":{"start":{"nanoseconds":1}}},{"machine_ids":[]}]}', 'Missing required fields: windows[1].unavailability'],
    ['no start', '{"windows":[{"machine_ids":[{"hostname":"a"}],"unavailability":{}}]}', 'Missing required fields: windows[0].unavailability.start'],
    ['no start nanoseconds', '{"windows":[{"machine_ids":[{"hostname":"a"}],"unavailability":{"start":{}}}]}', 'Missing required fields: windows[0].unavailability.start.nanoseconds'],
    ['no duration nanoseconds, then a second window without start', '{"windows":[{"machine_ids":[{"hostname":"a"}],"unavailability":{"start":{"nanoseconds":1},"duration":{}}},{"machine_ids":[{"hostname":"b"}],"unavailability":{"duration":{}}}]}', 'Missing required fields: windows[0].unavailability.duration.nanoseconds, windows[1].unavailability.start, windows[1].unavailability.duration.nanoseconds'],
    ['string machine', '{"windows":[{"machine_ids":["a"],"unavailability":{"start":{"nanoseconds":1}}}]}', "Not expecting a JSON string for field 'machine_ids'"],
    ['numeric hostname', '{"windows":[{"machine_ids":[{"hostname":5}],"unavailability":{"start":{"nanoseconds":1}}}]}', "Not expecting a JSON number for field 'hostname'"],
  ];
  for (const [name, text, message] of missing) {
    test(`schedule parse error: ${name}`, () => {
      assert.deepEqual(parseSchedule(parseJson(text) as Record<string, unknown>), { ok: false, message });
    });
  }

  test('v1 paths are prefixed; numeric strings are int64s; {} is an empty schedule', () => {
    assert.deepEqual(parseSchedule({ windows: [{ machine_ids: [{ ip: '1.2.3.4' }] }] }, 'update_maintenance_schedule.schedule.'), {
      ok: false,
      message: 'Missing required fields: update_maintenance_schedule.schedule.windows[0].unavailability',
    });
    const p = parseSchedule({ windows: [{ machine_ids: [{ ip: '1.2.3.4' }], unavailability: { start: { nanoseconds: '600' } } }] });
    assert.ok(p.ok);
    assert.equal(p.value.windows[0]?.unavailability.startNs, 600n);
    assert.equal(p.value.windows[0]?.unavailability.durationNs, undefined);
    assert.deepEqual(parseSchedule({}), { ok: true, value: { windows: [] } });
  });

  test('machine lists: array of objects only', () => {
    assert.deepEqual(parseMachineList({}), { ok: false, message: 'Unexpected JSON type parsed' });
    assert.deepEqual(parseMachineList([1]), { ok: false, message: 'Expecting a JSON object' });
    assert.deepEqual(parseMachineList([{ hostname: 'A', ip: null }]), { ok: true, value: [{ hostname: 'A' }] });
    assert.deepEqual(parseMachinesMessage({ machines: [{ hostname: 'h', ip: '1.1.1.1' }] }), { ok: true, value: [{ hostname: 'h', ip: '1.1.1.1' }] });
  });
});

describe('machine matching', () => {
  const cases: Array<[MachineId, MachineId, boolean]> = [
    [{ hostname: 'Machine1', ip: '10.0.0.1' }, { hostname: 'machine1', ip: '10.0.0.1' }, true],
    [{ hostname: 'm', ip: '10.0.0.1' }, { hostname: 'm', ip: '10.0.0.01' }, false],
    [{ hostname: 'm' }, { hostname: 'm', ip: '10.0.0.1' }, false],
    [{ hostname: 'm' }, { hostname: 'M' }, true],
    [{ hostname: '' , ip: '1.1.1.1' }, { ip: '1.1.1.1' }, false],
    [{ ip: '1.1.1.1' }, { ip: '1.1.1.1' }, true],
  ];
  for (const [a, b, same] of cases) {
    test(`${JSON.stringify(a)} ${same ? '==' : '!='} ${JSON.stringify(b)}`, () => assert.equal(machineKey(a) === machineKey(b), same));
  }
});

describe('schedule validation, in Mesos order', () => {
  const M1 = { hostname: 'Machine1', ip: '10.0.0.1' };
  const cases: Array<[string, Schedule, MachineModes, string | undefined]> = [
    ['valid', { windows: [win(M1), win({ hostname: 'm2' })] }, new Map(), undefined],
    ['empty window first', { windows: [{ machineIds: [], unavailability: { startNs: 0n, durationNs: -1n } }] }, new Map(), 'List of machines in the maintenance window is empty'],
    ['negative duration before machines', { windows: [{ machineIds: [{}], unavailability: { startNs: 0n, durationNs: -1n } }] }, new Map(), "Unavailability 'duration' is negative"],
    ['negative start is fine', { windows: [{ machineIds: [M1], unavailability: { startNs: -5n } }] }, new Map(), undefined],
    ['both empty', { windows: [win({ hostname: '', ip: '' })] }, new Map(), "Both 'hostname' and 'ip' for a machine are empty"],
    ['unset both', { windows: [win({})] }, new Map(), "Both 'hostname' and 'ip' for a machine are empty"],
    ['bad ip', { windows: [win({ hostname: 'h', ip: '10.0.0.256' })] }, new Map(), 'Failed to parse IPv4: 10.0.0.256'],
    ['ipv6', { windows: [win({ ip: '::1' })] }, new Map(), 'Failed to parse IPv4: ::1'],
    ['duplicate across windows, case-insensitive', { windows: [win(M1), win({ hostname: 'MACHINE1', ip: '10.0.0.1' })] }, new Map(), 'Machine \'{"hostname":"MACHINE1","ip":"10.0.0.1"}\' appears more than once in the schedule'],
    ['DOWN machine dropped', { windows: [win({ hostname: 'other' })] }, modes([[M1, 'DOWN']]), 'Machine \'{"hostname":"Machine1","ip":"10.0.0.1"}\' is deactivated and cannot be removed from the schedule'],
    ['{} with a DOWN machine', { windows: [] }, modes([[{ hostname: 'Machine1' }, 'DOWN']]), 'Machine \'{"hostname":"Machine1"}\' is deactivated and cannot be removed from the schedule'],
    ['DOWN machine kept (any case)', { windows: [win({ hostname: 'machine1', ip: '10.0.0.1' })] }, modes([[M1, 'DOWN']]), undefined],
    ['window errors come before the DOWN check', { windows: [win({})] }, modes([[M1, 'DOWN']]), "Both 'hostname' and 'ip' for a machine are empty"],
    ['the first repeat is named, not the first machine repeated', { windows: [win({ hostname: 'a' }, { hostname: 'b' }, { hostname: 'B' }, { hostname: 'A' })] }, new Map(), 'Machine \'{"hostname":"B"}\' appears more than once in the schedule'],
    ['a bad machine after a repeat: the repeat', { windows: [win({ hostname: 'a' }, { hostname: 'A' }, {})] }, new Map(), 'Machine \'{"hostname":"A"}\' appears more than once in the schedule'],
    ['a repeat after a bad machine: the bad machine', { windows: [win({ hostname: 'a' }, {}, { hostname: 'A' })] }, new Map(), "Both 'hostname' and 'ip' for a machine are empty"],
    ['the first DOWN machine left out, in the order machines are known', { windows: [win({ hostname: 'kept' })] }, modes([[{ hostname: 'up' }, 'UP'], [{ hostname: 'd1' }, 'DOWN'], [{ hostname: 'kept' }, 'DOWN'], [{ hostname: 'd2' }, 'DOWN']]), 'Machine \'{"hostname":"d1"}\' is deactivated and cannot be removed from the schedule'],
  ];
  for (const [name, schedule, machines, message] of cases) {
    test(name, () => {
      const e = validateSchedule(schedule, machines);
      assert.equal(e?.message, message);
      if (e !== undefined) assert.equal(e.status, 400);
      assert.equal(validateSchedule(new KeyedSchedule(schedule), machines)?.message, message, 'keyed');
    });
  }
});

describe('down/up validation', () => {
  const A = { hostname: 'a', ip: '10.0.0.1' };
  const B = { hostname: 'b', ip: '10.0.0.2' };
  const known = modes([[A, 'DRAINING'], [B, 'DOWN'], [{ hostname: 'up', ip: '10.0.0.9' }, 'UP']]);
  const cases: Array<['DOWN' | 'UP', MachineId[], string | undefined]> = [
    ['DOWN', [], 'List of machines is empty'],
    ['DOWN', [{}], "Both 'hostname' and 'ip' for a machine are empty"],
    ['DOWN', [{ ip: 'x' }], 'Failed to parse IPv4: x'],
    ['DOWN', [A, { hostname: 'A', ip: '10.0.0.1' }], 'Machine \'{"hostname":"A","ip":"10.0.0.1"}\' appears more than once in the schedule'],
    ['DOWN', [{ hostname: 'zz' }], 'Machine \'{"hostname":"zz"}\' is not part of a maintenance schedule'],
    ['DOWN', [{ hostname: 'up', ip: '10.0.0.9' }], 'Machine \'{"hostname":"up","ip":"10.0.0.9"}\' is not in DRAINING mode and cannot be brought down'],
    ['DOWN', [A, B], 'Machine \'{"hostname":"b","ip":"10.0.0.2"}\' is not in DRAINING mode and cannot be brought down'],
    ['DOWN', [{ hostname: 'A', ip: '10.0.0.1' }], undefined],
    ['UP', [A], 'Machine \'{"hostname":"a","ip":"10.0.0.1"}\' is not in DOWN mode and cannot be brought up'],
    ['UP', [B], undefined],
    ['UP', [{ hostname: 'b' }], 'Machine \'{"hostname":"b"}\' is not part of a maintenance schedule'],
  ];
  for (const [dir, ids, message] of cases) {
    test(`${dir} ${JSON.stringify(ids)}`, () => assert.equal(validateTransition(dir, ids, known)?.message, message));
  }
});

describe('mode transitions', () => {
  const A = { hostname: 'a', ip: '10.0.0.1' };
  const B = { hostname: 'b', ip: '10.0.0.2' };
  const modeOf = (s: MaintenanceState, id: MachineId) => s.get(id)?.mode;

  test('POST: new machines DRAINING; re-POST re-applies and clears answers; dropped machines UP; agents touched', () => {
    const s = new MaintenanceState();
    s.agentAdded('agent-a', { hostname: 'A', ip: '10.0.0.1' });
    assert.equal(modeOf(s, A), 'UP');
    const c1 = s.applySchedule({ windows: [win(A, B)] });
    assert.deepEqual(c1.agentIds, ['agent-a']);
    assert.equal(modeOf(s, A), 'DRAINING');
    assert.equal(s.unavailabilityOfAgent('agent-a'), U);
    s.recordAnswer('agent-a', { status: 'ACCEPT', frameworkId: 'f', timestampNs: 7n });
    assert.deepEqual(s.statusJson(), {
      draining_machines: [
        { id: { hostname: 'a', ip: '10.0.0.1' }, statuses: [{ status: 'ACCEPT', framework_id: { value: 'f' }, timestamp: { nanoseconds: 7n } }] },
        { id: B },
      ],
    });
    s.applySchedule({ windows: [win(A, B)] });
    assert.equal(s.get(A)?.statuses.size, 0);
    const c3 = s.applySchedule({ windows: [win(B)] });
    assert.deepEqual(c3.machineKeys.sort(), [machineKey(A), machineKey(B)].sort());
    assert.equal(modeOf(s, A), 'UP');
    assert.equal(s.unavailabilityOfAgent('agent-a'), undefined);
  });

  test('down keeps the window; up removes it and drops empty windows; {} empties the schedule', () => {
    const s = new MaintenanceState();
    s.applySchedule({ windows: [win(A), win(B)] });
    s.applyDown([A]);
    assert.equal(modeOf(s, A), 'DOWN');
    assert.deepEqual(s.statusJson(), { draining_machines: [{ id: B }], down_machines: [A] });
    assert.equal((s.scheduleJson()['windows'] as unknown[]).length, 2);
    // A POST keeps DOWN machines DOWN.
    s.applySchedule({ windows: [win(A, B)] });
    assert.equal(modeOf(s, A), 'DOWN');
    assert.equal(s.durableSchedule({ windows: [win(A, B)] }).windows[0]?.machines[0]?.mode, 'DOWN');
    s.applyUp([A]);
    assert.equal(modeOf(s, A), 'UP');
    assert.deepEqual(s.scheduleJson(), { windows: [{ machine_ids: [B], unavailability: { start: { nanoseconds: U.startNs }, duration: { nanoseconds: U.durationNs } } }] });
    s.applySchedule({ windows: [] });
    assert.deepEqual(s.scheduleJson(), {});
    assert.deepEqual(s.statusJson(), {});
  });

  test('a known machine keeps its MachineID when spelled the same, and takes the new spelling otherwise', () => {
    const s = new MaintenanceState();
    const first = { hostname: 'Mixed', ip: '10.0.0.1' };
    s.applySchedule({ windows: [win(first)] });
    s.applySchedule({ windows: [win({ hostname: 'Mixed', ip: '10.0.0.1' })] });
    assert.equal(s.get(first)?.id, first, 'the same object');
    s.applySchedule({ windows: [win({ hostname: 'MIXED', ip: '10.0.0.1' })] });
    assert.deepEqual(s.get(first)?.id, { hostname: 'MIXED', ip: '10.0.0.1' });
    assert.deepEqual((s.scheduleJson()['windows'] as Array<{ machine_ids: unknown }>)[0]?.machine_ids, [{ hostname: 'MIXED', ip: '10.0.0.1' }]);
  });

  test('a keyed schedule applies as the plain one', () => {
    const plain = new MaintenanceState();
    const keyedState = new MaintenanceState();
    for (const schedule of [{ windows: [win(A, B)] }, { windows: [win(B), { machineIds: [A], unavailability: { startNs: 5n } }] }, { windows: [] }]) {
      const c1 = plain.applySchedule(schedule);
      const c2 = keyedState.applySchedule(new KeyedSchedule(schedule));
      assert.deepEqual(c2, c1);
      assert.deepEqual(keyedState.scheduleJson(), plain.scheduleJson());
      assert.deepEqual(keyedState.statusJson(), plain.statusJson());
    }
  });

  test('recover restores modes; agents re-indexed by machine', () => {
    const s = new MaintenanceState();
    s.recover({ windows: [{ unavailability: U, machines: [{ key: machineKey(A), id: A, mode: 'DOWN' }] }] });
    assert.ok(s.isDown({ hostname: 'A', ip: '10.0.0.1' }));
    assert.ok(!s.isDown({ hostname: 'A' }));
    s.agentAdded('x', B);
    s.agentAdded('x', A);
    assert.equal(s.machineOfAgent('x')?.mode, 'DOWN');
    assert.deepEqual([...s.agentsOn(machineKey(B))], []);
  });
});

describe('generateInverseOffers', () => {
  const base = { activeFrameworks: new Set(['f1', 'f2']), outstanding: new Set<string>(), filters: new Map(), nowMs: 1000 };
  const cases: Array<[string, Parameters<typeof generateInverseOffers>[0], string[]]> = [
    ['one per framework holding resources', { ...base, agents: [{ id: 'a', active: true, frameworks: new Set(['f1', 'f2']) }] }, ['f1/a', 'f2/a']],
    ['inactive agent: none', { ...base, agents: [{ id: 'a', active: false, frameworks: new Set(['f1']) }] }, []],
    ['inactive framework: none', { ...base, agents: [{ id: 'a', active: true, frameworks: new Set(['f3']) }] }, []],
    ['outstanding: none', { ...base, outstanding: new Set([inverseOfferKey('f1', 'a')]), agents: [{ id: 'a', active: true, frameworks: new Set(['f1']) }] }, []],
    ['filtered until 2000', { ...base, filters: new Map([['f1', new Map([['a', 2000]])]]), agents: [{ id: 'a', active: true, frameworks: new Set(['f1']) }] }, []],
    ['filter expired', { ...base, nowMs: 2000, filters: new Map([['f1', new Map([['a', 2000]])]]), agents: [{ id: 'a', active: true, frameworks: new Set(['f1']) }] }, ['f1/a']],
    ['no holders: none', { ...base, agents: [{ id: 'a', active: true, frameworks: new Set() }] }, []],
  ];
  for (const [name, input, expected] of cases) {
    test(name, () => assert.deepEqual(generateInverseOffers(input).map((p) => `${p.frameworkId}/${p.agentId}`), expected));
  }
});

describe('MaintenanceState.changedMachines: scheduleChanges against the schedule as kept', () => {
  const w = (start: bigint, ...hosts: string[]): Schedule['windows'][number] => ({ machineIds: hosts.map((h) => ({ hostname: h, ip: '10.0.0.1' })), unavailability: { startNs: start, durationNs: 10n } });
  const cases: Array<[string, Schedule, Schedule, string[]]> = [
    ['nothing', { windows: [w(1n, 'a')] }, { windows: [w(1n, 'a')] }, []],
    ['added', { windows: [w(1n, 'a')] }, { windows: [w(1n, 'a', 'b')] }, ['b']],
    ['removed', { windows: [w(1n, 'a', 'b')] }, { windows: [w(1n, 'a')] }, ['b']],
    ['moved to another time', { windows: [w(1n, 'a'), w(2n, 'b')] }, { windows: [w(2n, 'a', 'b')] }, ['a']],
    ['duration changed', { windows: [w(1n, 'a')] }, { windows: [{ machineIds: [{ hostname: 'a', ip: '10.0.0.1' }], unavailability: { startNs: 1n } }] }, ['a']],
    ['same time, another window object', { windows: [w(1n, 'a'), w(1n, 'b')] }, { windows: [w(1n, 'a', 'b')] }, []],
    ['hostname case is the same machine', { windows: [w(1n, 'A')] }, { windows: [w(1n, 'a')] }, []],
    ['a duplicate listed twice, unchanged', { windows: [w(1n, 'a')] }, { windows: [w(1n, 'a'), w(1n, 'a')] }, []],
    ['cleared', { windows: [w(1n, 'a', 'b')] }, { windows: [] }, ['a', 'b']],
  ];
  test('in order: the machines of the new schedule as listed, then those it drops as kept', () => {
    const s = new MaintenanceState();
    s.applySchedule({ windows: [w(1n, 'd', 'a'), w(2n, 'c', 'e')] });
    assert.deepEqual(s.changedMachines({ windows: [w(3n, 'z', 'a'), w(2n, 'c', 'y')] }).map((m) => m.hostname), ['z', 'a', 'y', 'd', 'e']);
  });

  test('after recover, START and STOP maintenance, and agents on machines not scheduled', () => {
    const s = new MaintenanceState();
    const id = (h: string): MachineId => ({ hostname: h, ip: '10.0.0.1' });
    s.recover({ windows: [{ unavailability: { startNs: 1n, durationNs: 10n }, machines: [{ key: machineKey(id('a')), id: id('a'), mode: 'DRAINING' }, { key: machineKey(id('b')), id: id('b'), mode: 'DOWN' }] }] });
    s.agentAdded('agent-u', id('u'));
    const hosts = (next: Schedule): string[] => s.changedMachines(next).map((m) => m.hostname ?? '');
    assert.deepEqual(hosts({ windows: [w(1n, 'a', 'b')] }), [], 'as recovered');
    assert.deepEqual(hosts({ windows: [w(1n, 'a', 'b', 'u')] }), ['u'], 'a machine known by its agent only is not scheduled');
    s.applyDown([id('a')]);
    assert.deepEqual(hosts({ windows: [w(1n, 'a', 'b')] }), [], 'DOWN stays at its time');
    s.applyUp([id('a')]);
    assert.deepEqual(hosts({ windows: [w(1n, 'a', 'b')] }), ['a'], 'UP left the schedule');
    assert.deepEqual(hosts({ windows: [w(1n, 'b')] }), []);
  });

  for (const [name, before, after, want] of cases) {
    test(name, () => {
      const s = new MaintenanceState();
      s.applySchedule(before);
      const got = s.changedMachines(after).map((m) => m.hostname?.toLowerCase()).sort();
      assert.deepEqual(got, want);
      assert.deepEqual(got, scheduleChanges(s.currentSchedule(), after).map((m) => m.hostname?.toLowerCase()).sort(), 'as scheduleChanges');
    });
  }
});

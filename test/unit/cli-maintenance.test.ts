import { test } from 'node:test';
import assert from 'node:assert/strict';
import { machineKey } from '../../shared/machine.js';
import {
  agentIp,
  agentMachines,
  describeScheduleChange,
  machineLabel,
  machineStates,
  machineSuggestions,
  parseMachineArg,
  parseMachineArgs,
  readSchedule,
  scheduleRows,
  statusRows,
  type ScheduleJson,
} from '../../cli/maintenance.js';
import { formatSpan, isoTime, nanosOf, protobufDuration, toBigInt } from '../../cli/nanotime.js';
import { formatJson } from '../../cli/client.js';
import { stringifyJson } from '../../shared/json.js';

test('MachineID arguments: HOST, HOST=IP, =IP; empty parts are errors', () => {
  const cases: Array<[string, ReturnType<typeof parseMachineArg>]> = [
    ['agent-2', { ok: true, value: { hostname: 'agent-2' } }],
    ['agent-2=127.0.0.3', { ok: true, value: { hostname: 'agent-2', ip: '127.0.0.3' } }],
    ['=10.0.0.1', { ok: true, value: { ip: '10.0.0.1' } }],
    [' Agent-2 = 127.0.0.3 ', { ok: true, value: { hostname: 'Agent-2', ip: '127.0.0.3' } }],
    // Not checked here: the master answers `Failed to parse IPv4: not-an-ip` itself.
    ['h=not-an-ip', { ok: true, value: { hostname: 'h', ip: 'not-an-ip' } }],
  ];
  for (const [arg, want] of cases) assert.deepEqual(parseMachineArg(arg), want, arg);
  for (const bad of ['', '=', 'h=', '  ']) {
    const r = parseMachineArg(bad);
    assert.equal(r.ok, false, JSON.stringify(bad));
    assert.match(r.ok ? '' : r.error, /HOST, HOST=IP or =IP/);
  }
  assert.deepEqual(parseMachineArgs(['a', '=1.2.3.4']), { ok: true, value: [{ hostname: 'a' }, { ip: '1.2.3.4' }] });
  assert.equal(parseMachineArgs([]).ok, false);
  assert.equal(parseMachineArgs(['a', 'b=']).ok, false);
});

test('machine labels and keys follow Mesos (host (ip); hostname case-insensitive; presence matters)', () => {
  assert.equal(machineLabel({ hostname: 'h', ip: '1.2.3.4' }), 'h (1.2.3.4)');
  assert.equal(machineLabel({ hostname: 'h' }), 'h');
  assert.equal(machineLabel({ ip: '1.2.3.4' }), '(1.2.3.4)');
  assert.equal(machineKey({ hostname: 'Agent-2', ip: '127.0.0.3' }), machineKey({ hostname: 'agent-2', ip: '127.0.0.3' }));
  assert.notEqual(machineKey({ hostname: 'agent-2' }), machineKey({ hostname: 'agent-2', ip: '127.0.0.3' }));
  assert.notEqual(machineKey({ ip: '127.0.0.3' }), machineKey({ hostname: '', ip: '127.0.0.3' }));
  assert.equal(agentIp('slave(1)@127.0.0.3:5051'), '127.0.0.3');
  assert.equal(agentIp(undefined), undefined);
});

test('nanosecond times: ISO, exact to the digit, with BigInt math', () => {
  const cases: Array<[bigint, string]> = [
    [1443830400000000000n, '2015-10-03T00:00:00Z'],
    [1443830400000000001n, '2015-10-03T00:00:00.000000001Z'],
    [1443830400123456789n, '2015-10-03T00:00:00.123456789Z'],
    [1443830400500000000n, '2015-10-03T00:00:00.5Z'],
    [0n, '1970-01-01T00:00:00Z'],
    [-1n, '1969-12-31T23:59:59.999999999Z'],
    [9223372036854775807n, '2262-04-11T23:47:16.854775807Z'],
  ];
  for (const [ns, iso] of cases) assert.equal(isoTime(ns), iso, String(ns));
});

test('durations for people: exact, largest units first', () => {
  const cases: Array<[bigint, string]> = [
    [0n, '0s'],
    [7n, '7ns'],
    [1_500n, '1.5us'],
    [250_000_000n, '250ms'],
    [1_000_000_001n, '1.000000001s'],
    [45_000_000_000n, '45s'],
    [3_600_000_000_000n, '1h'],
    [5_400_000_000_000n, '1h 30m'],
    [93_784_500_000_000n, '1d 2h 3m 4.5s'],
    [86_400_000_000_000n * 14n, '14d'],
    [-60_000_000_000n, '-1m'],
  ];
  for (const [ns, text] of cases) assert.equal(formatSpan(ns), text, String(ns));
});

test('int64 values from JSON: bigint, safe number or numeric string; never a rounded float', () => {
  assert.equal(toBigInt(1443830400000000001n), 1443830400000000001n);
  assert.equal(toBigInt(3600), 3600n);
  assert.equal(toBigInt('600'), 600n);
  assert.equal(toBigInt(1.5), undefined);
  assert.equal(toBigInt(2 ** 60), undefined);
  assert.equal(toBigInt(null), undefined);
  assert.equal(nanosOf({ nanoseconds: 5n }), 5n);
  assert.equal(nanosOf({}), undefined);
  assert.deepEqual(protobufDuration(30_000_000_000n), { seconds: 30, nanos: 0 });
  assert.deepEqual(protobufDuration(1_500_000_000n), { seconds: 1, nanos: 500_000_000 });
  assert.deepEqual(protobufDuration(0n), { seconds: 0, nanos: 0 });
});

test('reading a schedule file: passthrough of any JSON object, int64 kept exact', () => {
  const text = '{"windows":[{"machine_ids":[{"hostname":"agent-2","ip":"127.0.0.3"}],"unavailability":{"start":{"nanoseconds":1443830400000000001},"duration":{"nanoseconds":3600000000000}}}]}';
  const r = readSchedule(text, 'f.json');
  assert.ok(r.ok);
  // What goes to the master is the same digits, not 1443830400000000000.
  assert.equal(stringifyJson(r.value), text);
  const cases: Array<[string, unknown]> = [
    ['{}', {}],
    ['{"windows":[]}', { windows: [] }],
    // Not validated here: the master answers with its own message.
    ['{"windows":[{"machine_ids":[]}]}', { windows: [{ machine_ids: [] }] }],
    ['{"schedule":{"windows":[]}}', { windows: [] }],
    ['{"type":"GET_MAINTENANCE_SCHEDULE","get_maintenance_schedule":{"schedule":{}}}', {}],
  ];
  for (const [t, want] of cases) assert.deepEqual(readSchedule(t, 'f'), { ok: true, value: want }, t);
  const bad: Array<[string, RegExp]> = [
    ['', /f is empty; to clear the schedule, write \{\}/],
    ['  \n', /is empty/],
    ['{"windows":', /f is not JSON: /],
    ['[]', /must hold a JSON object/],
    ['null', /must hold a JSON object/],
    ['"x"', /must hold a JSON object/],
  ];
  for (const [t, re] of bad) {
    const x = readSchedule(t, 'f');
    assert.equal(x.ok, false, t);
    assert.match(x.ok ? '' : x.error, re, t);
  }
});

const SCHEDULE: ScheduleJson = {
  windows: [
    {
      machine_ids: [{ hostname: 'agent-2', ip: '127.0.0.3' }, { hostname: 'spare' }],
      unavailability: { start: { nanoseconds: 1443830400000000001n }, duration: { nanoseconds: 3_600_000_000_000 } },
    },
    { machine_ids: [{ ip: '10.0.0.9' }], unavailability: { start: { nanoseconds: 1443834000000000000n } } },
  ],
};

test('schedule table: window, machine, mode, agent, exact start, duration, end', () => {
  const states = machineStates({
    draining_machines: [{ id: { hostname: 'AGENT-2', ip: '127.0.0.3' } }, { id: { hostname: 'spare' } }],
    down_machines: [{ ip: '10.0.0.9' }],
  });
  const agents = agentMachines([{ agent_info: { hostname: 'agent-2', id: { value: 'M-S1' } }, pid: 'slave(1)@127.0.0.3:5051' }]);
  assert.deepEqual(scheduleRows(SCHEDULE, states, agents), [
    ['1', 'agent-2 (127.0.0.3)', 'DRAINING', 'M-S1', '2015-10-03T00:00:00.000000001Z', '1h', '2015-10-03T01:00:00.000000001Z'],
    ['1', 'spare', 'DRAINING', '-', '2015-10-03T00:00:00.000000001Z', '1h', '2015-10-03T01:00:00.000000001Z'],
    ['2', '(10.0.0.9)', 'DOWN', '-', '2015-10-03T01:00:00Z', 'open-ended', '-'],
  ]);
  assert.deepEqual(scheduleRows(undefined, new Map()), []);
  assert.deepEqual(scheduleRows({}, new Map()), []);
  // Mode unknown (no status answer): '?'.
  assert.equal(scheduleRows(SCHEDULE, new Map())[0]?.[2], '?');
});

test('status table: one row per framework answer, draining without answers, then down machines', () => {
  const rows = statusRows(
    {
      draining_machines: [
        {
          id: { hostname: 'agent-2', ip: '127.0.0.3' },
          statuses: [
            { status: 'ACCEPT', framework_id: { value: 'F1' }, timestamp: { nanoseconds: 1443830400000000001n } },
            { status: 'DECLINE', framework_id: { value: 'F2' } },
          ],
        },
        { id: { hostname: 'quiet' } },
      ],
      down_machines: [{ hostname: 'agent-3', ip: '127.0.0.4' }],
    },
    new Map([['F1', 'web']]),
  );
  assert.deepEqual(rows, [
    ['agent-2 (127.0.0.3)', 'DRAINING', 'web (F1)', 'ACCEPT', '2015-10-03T00:00:00.000000001Z'],
    ['agent-2 (127.0.0.3)', 'DRAINING', 'F2', 'DECLINE', '-'],
    ['quiet', 'DRAINING', '-', 'no answers yet', '-'],
    ['agent-3 (127.0.0.4)', 'DOWN', '-', '-', '-'],
  ]);
  assert.deepEqual(statusRows({}), []);
});

test('what a schedule update changed', () => {
  const w = (ids: Array<{ hostname?: string; ip?: string }>, start: bigint, duration?: bigint) => ({
    machine_ids: ids,
    unavailability: { start: { nanoseconds: start }, ...(duration === undefined ? {} : { duration: { nanoseconds: duration } }) },
  });
  const H = 3_600_000_000_000n;
  const t0 = 1443830400000000000n;
  const cases: Array<[string, ScheduleJson | undefined, ScheduleJson | undefined, string[]]> = [
    ['empty to one', {}, { windows: [w([{ hostname: 'agent-2', ip: '127.0.0.3' }], t0, H)] }, [
      '+ agent-2 (127.0.0.3): window 1, 2015-10-03T00:00:00Z for 1h',
      'schedule replaced: 1 machine in 1 window (1 added, 0 removed, 0 changed, 0 unchanged)',
    ]],
    ['same again (case differs: same machine)', { windows: [w([{ hostname: 'agent-2', ip: '127.0.0.3' }], t0, H)] }, { windows: [w([{ hostname: 'AGENT-2', ip: '127.0.0.3' }], t0, H)] }, [
      'schedule replaced: 1 machine in 1 window (0 added, 0 removed, 0 changed, 1 unchanged)',
    ]],
    ['moved by one nanosecond, one removed, one added', {
      windows: [w([{ hostname: 'a' }, { hostname: 'b' }], t0, H)],
    }, {
      windows: [w([{ hostname: 'a' }], t0 + 1n, H), w([{ ip: '10.0.0.1' }], t0)],
    }, [
      '~ a: 2015-10-03T00:00:00Z for 1h -> 2015-10-03T00:00:00.000000001Z for 1h',
      '+ (10.0.0.1): window 2, from 2015-10-03T00:00:00Z, open-ended',
      '- b: removed from the schedule (UP)',
      'schedule replaced: 2 machines in 2 windows (1 added, 1 removed, 1 changed, 0 unchanged)',
    ]],
    ['cleared', { windows: [w([{ hostname: 'a' }], t0, H)] }, {}, ['- a: removed from the schedule (UP)', 'schedule cleared: 1 machine back UP']],
    ['cleared when empty', undefined, undefined, ['schedule cleared (it was empty)']],
  ];
  for (const [name, before, after, want] of cases) assert.deepEqual(describeScheduleChange(before, after), want, name);
});

test('--json output keeps int64 digits', () => {
  assert.equal(formatJson({ a: { nanoseconds: 1443830400000000001n }, b: [1, 'x'] }), '{\n  "a": {\n    "nanoseconds": 1443830400000000001\n  },\n  "b": [\n    1,\n    "x"\n  ]\n}');
  assert.equal(formatJson(undefined), 'null');
});

test('suggestions for a machine named with other fields than the schedule has', () => {
  const schedule: ScheduleJson = { windows: [{ machine_ids: [{ hostname: 'agent-2', ip: '127.0.0.3' }, { hostname: 'spare' }, { ip: '10.0.0.1' }] }] };
  assert.deepEqual(machineSuggestions({ hostname: 'Agent-2' }, schedule), ['agent-2=127.0.0.3']);
  assert.deepEqual(machineSuggestions({ ip: '127.0.0.3' }, schedule), ['agent-2=127.0.0.3']);
  assert.deepEqual(machineSuggestions({ hostname: 'spare', ip: '10.0.0.1' }, schedule), ['spare', '=10.0.0.1']);
  assert.deepEqual(machineSuggestions({ hostname: 'spare' }, schedule), []);
  assert.deepEqual(machineSuggestions({ hostname: 'x' }, undefined), []);
});

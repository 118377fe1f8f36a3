/**
 * The pure pieces of the benchmarks and sim agents: quantiles, table rendering, /proc/<pid>/stat
 * parsing, sim-agent source addresses, and the service benchmarks' spec, maintenance body and
 * log-time arithmetic. Tables of cases, no processes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { quantile, summarize } from '../../scripts/bench/stats.js';
import { against, allGoalsMet, formatNumber, renderTable, type BenchResult } from '../../scripts/bench/report.js';
import { parseMachineCpu, parseProcStat } from '../../scripts/bench/procfs.js';
import { firstSignalled, parseSignalTrace } from '../../scripts/bench/signal-trace.js';
import { intToIpv4, ipv4ToInt, simAgentAddress } from '../../scripts/sim-agents.js';
import { benchServiceYaml, delays, gaps, logTimeMs, maintenanceScheduleBody } from '../../scripts/bench/service.js';
import { parseServiceSpec } from '../../scheduler/spec.js';

test('quantile: nearest rank, always a measured sample', () => {
  const fifty = Array.from({ length: 50 }, (_, i) => 50 - i); // 50..1, unsorted on purpose
  const cases: Array<[readonly number[], number, number]> = [
    [[7], 0.5, 7],
    [[7], 0.99, 7],
    [[1, 2, 3, 4], 0.5, 2],
    [[4, 3, 2, 1], 1, 4],
    [fifty, 0.5, 25],
    [fifty, 0.99, 50],
    [fifty, 0, 1],
  ];
  for (const [samples, q, want] of cases) assert.equal(quantile(samples, q), want, `q=${q} of ${samples.length}`);
  assert.ok(Number.isNaN(quantile([], 0.5)));
});

test('summarize: min, p50, p99, max, mean; NaN when empty', () => {
  assert.deepEqual(summarize([3, 1, 2]), { n: 3, min: 1, p50: 2, p99: 3, max: 3, mean: 2 });
  const empty = summarize([]);
  assert.equal(empty.n, 0);
  assert.ok(Number.isNaN(empty.p50));
});

test('against: ratio only when the floor is a non-zero number', () => {
  assert.deepEqual(against('spawn', 2, 6), { floor: { label: 'spawn', value: 2 }, ratio: 3 });
  assert.deepEqual(against('ideal', 0, 6), { floor: { label: 'ideal', value: 0 } });
  assert.deepEqual(against('x', Number.NaN, 6), { floor: { label: 'x', value: Number.NaN } });
});

test('formatNumber: digits by magnitude', () => {
  const cases: Array<[number, string]> = [[0, '0'], [1.234, '1.23'], [12.34, '12.3'], [123.4, '123'], [Number.NaN, 'NaN']];
  for (const [v, want] of cases) assert.equal(formatNumber(v), want);
});

test('renderTable: aligned columns, PASS/FAIL from goals, error line', () => {
  const result: BenchResult = {
    benchmark: 'storm',
    rows: [
      { benchmark: 'storm', metric: 'registered in', value: 5.5, unit: 's', ...against('raw ws echo', 3.5, 5.5), goal: { text: '< 10 s', pass: true }, note: 'all registered' },
      { benchmark: 'storm', metric: 'master RSS', value: 600, unit: 'MB', goal: { text: '< 500 MB', pass: false } },
    ],
    error: 'boom',
  };
  const lines = renderTable(result).split('\n');
  assert.match(lines[0] ?? '', /^benchmark \| figure\s+\| floor\s+\| ratio \| goal\s+\| note$/);
  assert.match(lines[2] ?? '', /registered in = 5.50 s \| raw ws echo = 3.50 s \| 1.57x \| < 10 s\s+\| PASS: all registered/);
  assert.match(lines[3] ?? '', /master RSS = 600 MB\s+\| -\s+\| -\s+\| < 500 MB \| FAIL$/);
  assert.equal(lines[4], 'storm FAILED: boom');
  // Every table line has the same column boundaries.
  assert.equal(new Set(lines.slice(0, 4).map((l) => l.indexOf('|'))).size, 1);
  assert.equal(allGoalsMet([result]), false);
  assert.equal(allGoalsMet([{ benchmark: 'x', rows: [{ benchmark: 'x', metric: 'm', value: 1, unit: '', goal: { text: '', pass: true } }] }]), true);
});

test('parseProcStat: fields counted from the last parenthesis', () => {
  // comm with a space and a parenthesis, as a process may name itself.
  const line = '1234 (node (x) y) S 1 1234 1234 0 -1 4194304 100 0 0 0 250 50 0 0 20 0 11 0 100 1000 200 0';
  assert.deepEqual(parseProcStat(line), { pid: 1234, comm: 'node (x) y', ppid: 1, pgid: 1234, cpuSeconds: 3 });
  assert.equal(parseProcStat('garbage'), undefined);
});

test('parseMachineCpu: busy, idle and stolen time from the cpu line of /proc/stat', () => {
  // user nice system idle iowait irq softirq steal guest guest_nice, then the per-CPU lines.
  const text = 'cpu  2257182 121 488203 3880487 35355 0 31469 7146 0 0\ncpu0 1 2 3 4 5 6 7 8 9 10\nintr 1\n';
  const m = parseMachineCpu(text);
  assert.ok(m !== undefined);
  assert.equal(m.busy.toFixed(2), ((2257182 + 121 + 488203 + 0 + 31469) / 100).toFixed(2));
  assert.equal(m.idle.toFixed(2), ((3880487 + 35355) / 100).toFixed(2));
  assert.equal(m.steal, 71.46);
  // A kernel without steal (or any short line), another first line, or a non-number: unreadable.
  assert.equal(parseMachineCpu('cpu  1 2 3 4 5 6 7\n'), undefined);
  assert.equal(parseMachineCpu('cpu0 1 2 3 4 5 6 7 8 9 10\n'), undefined);
  assert.equal(parseMachineCpu('cpu  1 2 x 4 5 6 7 8 9 10\n'), undefined);
});

test('sim agent addresses: base + k inside 127.0.0.0/8', () => {
  assert.equal(ipv4ToInt('127.1.0.0'), 0x7f010000);
  assert.equal(intToIpv4(0x7f010203), '127.1.2.3');
  const cases: Array<[string, number, string]> = [
    ['127.1.0.0', 1, '127.1.0.1'],
    ['127.1.0.0', 256, '127.1.1.0'],
    ['127.1.0.0', 10_000, '127.1.39.16'],
  ];
  for (const [base, k, want] of cases) assert.equal(simAgentAddress(base, k), want);
  assert.throws(() => simAgentAddress('127.255.255.0', 300), /leaves 127/);
  assert.throws(() => ipv4ToInt('127.1.0'), /not an IPv4/);
});

test('benchServiceYaml: a spec the scheduler accepts, with the strategy, command and check asked for', () => {
  const cases: Array<[Parameters<typeof benchServiceYaml>[0], { strategy: string; check: string | undefined }]> = [
    [{ count: 100, strategy: 'serial', cmd: 'exec sleep 600', cpus: 0.1, memoryMb: 1 }, { strategy: 'serial', check: undefined }],
    [{ count: 20, strategy: 'parallel', cmd: 'sleep 0.5; touch ready; exec sleep 600', cpus: 0.1, memoryMb: 1, readiness: { cmd: 'test -f "ready"', intervalS: 0.1 } }, { strategy: 'parallel', check: 'test -f "ready"' }],
  ];
  for (const [input, want] of cases) {
    const r = parseServiceSpec(benchServiceYaml(input));
    assert.ok(r.ok, r.ok ? '' : r.errors.join('; '));
    const pod = r.spec.pods[0];
    assert.equal(pod?.count, input.count);
    assert.equal(pod?.tasks[0]?.cmd, input.cmd, 'the command reaches the task verbatim');
    assert.equal(pod?.tasks[0]?.readinessCheck?.cmd, want.check);
    if (want.check !== undefined) assert.equal(pod?.tasks[0]?.readinessCheck?.intervalS, 0.1);
    assert.equal(r.spec.plans.find((p) => p.name === 'deploy')?.phases[0]?.strategy, want.strategy);
  }
});

test('maintenanceScheduleBody: exact nanoseconds past 2^53, the machine as given', () => {
  const text = maintenanceScheduleBody('agent-a', '127.0.0.2', 1_763_881_234_567, 3_600_000);
  // Matched as text: JSON.parse would round the start to a double.
  assert.match(text, /"start":\{"nanoseconds":1763881234567000000\}/);
  const body = JSON.parse(text) as { windows: Array<{ machine_ids: unknown[]; unavailability: { duration: { nanoseconds: number } } }> };
  assert.equal(body.windows.length, 1);
  assert.deepEqual(body.windows[0]?.machine_ids, [{ hostname: 'agent-a', ip: '127.0.0.2' }]);
  assert.equal(body.windows[0]?.unavailability.duration.nanoseconds, 3_600_000_000_000);
});

test('logTimeMs, gaps, delays: log times and differences', () => {
  assert.equal(logTimeMs({ time: '2026-11-23T07:10:09.240Z' }), Date.UTC(2026, 10, 23, 7, 10, 9, 240));
  assert.ok(Number.isNaN(logTimeMs({ msg: 'no time' })));
  const gapCases: Array<[number[], number[]]> = [[[], []], [[5], []], [[1, 4, 10], [3, 6]]];
  for (const [times, want] of gapCases) assert.deepEqual(gaps(times), want);
  const starts = new Map([['a', 10], ['b', 20], ['c', 30]]);
  const ends = new Map([['a', 15], ['c', 100], ['d', 1]]);
  assert.deepEqual(delays(starts, ends), [5, 70], 'ids in only one map are left out');
});

test('parseSignalTrace: signal_generate lines of a trace buffer, with mono timestamps in ns; other lines skipped', () => {
  const text = [
    '# tracer: nop',
    '#           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION',
    '       node-29879   [001] d..1. 29187.373132: signal_generate: sig=15 errno=0 code=0 comm=bash pid=29893 grp=1 res=0',
    ' drydock-launch-2149 [000] d..2. 5.000007: signal_generate: sig=9 errno=0 code=0 comm=my task (x) pid=7 grp=1 res=0',
    '       node-29879   [001] d..1. 29187.373200: sched_switch: prev_comm=node prev_pid=1 ==> next_comm=bash next_pid=2',
    '',
  ].join('\n');
  assert.deepEqual(parseSignalTrace(text), [
    { atNs: 29187_373132000n, sig: 15, pid: 29893 },
    { atNs: 5_000007000n, sig: 9, pid: 7 },
  ]);
});

test('firstSignalled: the first signal of that number to each pid at or after the start; the rest counted missing', () => {
  const ev = [
    { atNs: 90n, sig: 15, pid: 1 }, // before the start: an earlier run's
    { atNs: 130n, sig: 15, pid: 1 },
    { atNs: 120n, sig: 15, pid: 1 }, // out of order in the buffer (per-CPU): the earliest counts
    { atNs: 110n, sig: 9, pid: 2 }, // another signal
    { atNs: 150n, sig: 15, pid: 2 },
    { atNs: 105n, sig: 15, pid: 9 }, // not a task of ours
  ];
  assert.deepEqual(firstSignalled(ev, [1, 2, 3], 15, 100n), { afterNs: [20n, 50n], missing: 1 });
  assert.deepEqual(firstSignalled([], [1], 15, 0n), { afterNs: [], missing: 1 });
});

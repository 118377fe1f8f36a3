/**
 * Which machines of a maintenance request name a registered agent only by half (shared/
 * machine-match.ts), and the Warning header that says so (shared/warning.ts): the decision the
 * master's Warning and the CLI's --force refusal share, and the header's quoting both ways.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { machineArg, machineMismatches, mismatchText, type MatchAgent } from '../../shared/machine-match.js';
import type { MachineId } from '../../shared/machine.js';
import { MAX_WARNINGS, parseWarnings, quotedString, warningValue, warningValues } from '../../shared/warning.js';

const AGENTS: MatchAgent[] = [
  { id: 'M-S0', hostname: 'agent-1', ip: '127.0.0.2' },
  { id: 'M-S1', hostname: 'agent-2', ip: '127.0.0.3' },
  { id: 'M-S2', hostname: 'agent-3', ip: '127.0.0.4' },
];

/** [case, machines, agents, what is reported: `machine arg -> agent id by what`]. */
const CASES: Array<[string, MachineId[], MatchAgent[], string[]]> = [
  ['exact: nothing to say', [{ hostname: 'agent-2', ip: '127.0.0.3' }], AGENTS, []],
  ['exact, hostname in other case', [{ hostname: 'AGENT-2', ip: '127.0.0.3' }], AGENTS, []],
  ['the issue: right hostname, wrong IP', [{ hostname: 'agent-2', ip: '127.0.0.9' }], AGENTS, ['agent-2=127.0.0.9 -> M-S1 by hostname']],
  ['hostname without IP (Mesos compares presence too)', [{ hostname: 'agent-2' }], AGENTS, ['agent-2 -> M-S1 by hostname']],
  ['IP without hostname', [{ ip: '127.0.0.4' }], AGENTS, ['=127.0.0.4 -> M-S2 by ip']],
  ['wrong hostname, right IP', [{ hostname: 'agent-9', ip: '127.0.0.2' }], AGENTS, ['agent-9=127.0.0.2 -> M-S0 by ip']],
  ['hostname of one agent, IP of another: both named', [{ hostname: 'agent-1', ip: '127.0.0.3' }], AGENTS, ['agent-1=127.0.0.3 -> M-S0 by hostname', 'agent-1=127.0.0.3 -> M-S1 by ip']],
  ['nothing in common: a machine without an agent is fine', [{ hostname: 'spare', ip: '10.0.0.1' }], AGENTS, []],
  ['empty fields match nothing', [{ hostname: '', ip: '127.0.0.2' }, { hostname: 'agent-3', ip: '' }], AGENTS, ['=127.0.0.2 -> M-S0 by ip', 'agent-3= -> M-S2 by hostname']],
  ['listed twice: reported once', [{ hostname: 'agent-2' }, { hostname: 'Agent-2' }], AGENTS, ['agent-2 -> M-S1 by hostname']],
  ['no agents', [{ hostname: 'agent-2' }], [], []],
  [
    'an exact match wins over a half match with another agent',
    [{ hostname: 'web', ip: '10.0.0.1' }],
    [{ id: 'A', hostname: 'web', ip: '10.0.0.1' }, { id: 'B', hostname: 'web', ip: '10.0.0.2' }],
    [],
  ],
  [
    'two agents share a hostname: both named',
    [{ hostname: 'web', ip: '10.0.0.9' }],
    [{ id: 'A', hostname: 'web', ip: '10.0.0.1' }, { id: 'B', hostname: 'web', ip: '10.0.0.2' }],
    ['web=10.0.0.9 -> A by hostname', 'web=10.0.0.9 -> B by hostname'],
  ],
];

for (const [name, machines, agents, want] of CASES) {
  test(`machineMismatches: ${name}`, () => {
    const got = machineMismatches(machines, agents).map((m) => `${machineArg(m.machine)} -> ${m.agent.id} by ${m.by}`);
    assert.deepEqual(got, want);
  });
}

test('mismatchText names the machine as typed, the agent, its address and its real machine', () => {
  const [m] = machineMismatches([{ hostname: 'agent-2', ip: '127.0.0.9' }], AGENTS);
  assert.ok(m !== undefined);
  assert.equal(mismatchText(m), 'machine agent-2=127.0.0.9 matches agent agent-2 (127.0.0.3) by hostname only: it will not affect that agent, whose machine is agent-2=127.0.0.3');
  const [byIp] = machineMismatches([{ ip: '127.0.0.4' }], AGENTS);
  assert.ok(byIp !== undefined);
  assert.match(mismatchText(byIp), /^machine =127\.0\.0\.4 matches agent agent-3 \(127\.0\.0\.4\) by IP only: /);
});

test('machineMismatches is linear: 10,000 machines against 10,000 agents', () => {
  const agents: MatchAgent[] = Array.from({ length: 10_000 }, (_, i) => ({ id: `S${i}`, hostname: `h${i}`, ip: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}` }));
  const machines: MachineId[] = agents.map((a, i) => (i % 2 === 0 ? { hostname: a.hostname, ip: a.ip } : { hostname: a.hostname }));
  const got = machineMismatches(machines, agents);
  assert.equal(got.length, 5_000);
});

test('Warning values: quoted and escaped, one per text, bounded', () => {
  assert.equal(warningValue('plain'), '299 drydock "plain"');
  assert.equal(quotedString('say "hi" \\ bye'), '"say \\"hi\\" \\\\ bye"');
  // A line break would end the header; a character past Latin-1 makes Node throw: both become '?'.
  assert.equal(quotedString('a\r\nb\u00e9\u2603'), '"a??b??"');
  assert.equal(quotedString('x'.repeat(600)).length, 512 + 2);
  assert.deepEqual(warningValues([]), []);
  const many = warningValues(Array.from({ length: 30 }, (_, i) => `w${i}`));
  assert.equal(many.length, MAX_WARNINGS);
  assert.equal(many.at(-1), '299 drydock "and 11 more warnings like these"');
});

test('parseWarnings reads what fetch joins, commas and quotes inside texts included', () => {
  const texts = ['machine a=1.2.3.4 matches agent a (1.2.3.5) by hostname only: x, y', 'a "quoted" \\ word', 'plain'];
  const joined = texts.map(warningValue).join(', ');
  assert.deepEqual(parseWarnings(joined).map((w) => w.text), texts);
  assert.deepEqual(parseWarnings(joined).map((w) => [w.code, w.agent]), texts.map(() => [299, 'drydock']));
  // Another server's warning with a date, then ours.
  assert.deepEqual(parseWarnings('110 proxy "Response is stale" "Sun, 06 Nov 1994 08:49:37 GMT", 299 drydock "x"').map((w) => w.text), ['Response is stale', 'x']);
  for (const bad of [undefined, null, '', 'garbage', '299 drydock unquoted', '299 drydock "unterminated']) assert.deepEqual(parseWarnings(bad), [], String(bad));
  // What came before a malformed value is kept.
  assert.deepEqual(parseWarnings('299 drydock "ok", nonsense').map((w) => w.text), ['ok']);
});

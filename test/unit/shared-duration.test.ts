import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatDuration, parseDuration, UNIT_SPELLINGS, UNITS_TEXT } from '../../shared/duration.js';

const PARSE: Array<[string, bigint | string]> = [
  ['10mins', 600_000_000_000n],
  ['30secs', 30_000_000_000n],
  ['1hrs', 3_600_000_000_000n],
  ['1.5hrs', 5_400_000_000_000n],
  ['100ms', 100_000_000n],
  ['250us', 250_000n],
  ['7ns', 7n],
  ['2days', 172_800_000_000_000n],
  ['1weeks', 604_800_000_000_000n],
  ['15s', 15_000_000_000n],
  // `m` is minutes (as Go and kubectl read it); milliseconds are only `ms`.
  ['3m', 180_000_000_000n],
  ['2h', 7_200_000_000_000n],
  ['1d', 86_400_000_000_000n],
  ['1w', 604_800_000_000_000n],
  ['90seconds', 90_000_000_000n],
  ['0secs', 0n],
  ['0.001secs', 1_000_000n],
  ['10', 'expected a number and a unit'],
  ['mins', 'expected a number and a unit'],
  ['10years', "unknown unit 'years'"],
  ['-5secs', 'expected a number and a unit'],
  ['', 'expected a number and a unit'],
];

for (const [text, want] of PARSE) {
  test(`parseDuration(${JSON.stringify(text)})`, () => {
    const r = parseDuration(text);
    if (typeof want === 'bigint') assert.deepEqual(r, { ok: true, ns: want });
    else {
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, new RegExp(want.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')));
    }
  });
}

const FORMAT: Array<[bigint, string]> = [
  [15_000_000_000n, '15secs'],
  [600_000_000_000n, '10mins'],
  [1_500_000_000n, '1.5secs'],
  [200_000_000n, '200ms'],
  [0n, '0ns'],
  [3_600_000_000_000n, '1hrs'],
];

for (const [ns, want] of FORMAT) {
  test(`formatDuration(${ns}) = ${want}, and it parses back`, () => {
    assert.equal(formatDuration(ns), want);
    assert.deepEqual(parseDuration(want), { ok: true, ns });
  });
}


test('the parser and its message agree: every unit the message lists parses, and every unit that parses is listed', () => {
  const listed = UNITS_TEXT.split(/[ ,()]+/).filter((w) => w !== '');
  assert.deepEqual([...listed].sort(), [...UNIT_SPELLINGS].sort());
  for (const unit of listed) assert.equal(parseDuration(`2${unit}`).ok, true, unit);
  // Both refusals name the units, so an operator never has to guess.
  for (const bad of ['3', '3parsecs', 'soon']) {
    const r = parseDuration(bad);
    assert.ok(!r.ok && r.error.endsWith(UNITS_TEXT), bad);
  }
  // Object's own keys are no units.
  assert.equal(parseDuration('3constructor').ok, false);
  assert.equal(parseDuration('3toString').ok, false);
});

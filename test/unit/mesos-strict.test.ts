/**
 * The strict reader of Mesos' JSON (test/helpers/mesos-strict.ts) finds exactly the
 * deviations each sample has, with their paths, and reads clean samples cleanly.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readStrict } from '../helpers/mesos-strict.js';
import { STRICT_CASES } from '../helpers/mesos-strict-cases.js';

for (const c of STRICT_CASES) {
  test(`readStrict: ${c.name}`, () => {
    assert.deepEqual(readStrict(c.type, c.json), c.expect);
  });
}

test('readStrict refuses a type the schema does not have (a bug in the test)', () => {
  assert.throws(() => readStrict('mesos.v1.NoSuchMessage', {}), /no such type/);
});

test('readStrict reads JSON parsed with exact int64s', () => {
  assert.deepEqual(readStrict('mesos.v1.TimeInfo', { nanoseconds: 2n ** 62n }), []);
  assert.deepEqual(readStrict('mesos.v1.TimeInfo', { nanoseconds: 2 ** 62 }), [], 'a double that holds an integer exactly');
  assert.deepEqual(readStrict('mesos.v1.TimeInfo', { nanoseconds: 2 ** 64 }), ['nanoseconds: out-of-range integer 18446744073709551616 for int64']);
});

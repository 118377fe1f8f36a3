import { test } from 'node:test';
import assert from 'node:assert/strict';
import { arr, bool, num, obj, oneOf, opt, str, tagged, literal } from '../../shared/schema.js';

const check = tagged('type', {
  A: obj({ type: literal('A'), n: num({ int: true, min: 0, max: 9 }), tags: opt(arr(str({ min: 1 }))), on: opt(bool()) }),
  B: obj({ type: literal('B'), color: oneOf(['red', 'blue']) }),
});

const CASES: Array<[unknown, string | undefined]> = [
  [{ type: 'A', n: 3 }, undefined],
  [{ type: 'A', n: 3, tags: ['x'], on: true, extra: 'ignored' }, undefined],
  [{ type: 'A', n: 3.5 }, 'expected an integer at n'],
  [{ type: 'A', n: 10 }, 'expected a number <= 9 at n'],
  [{ type: 'A' }, 'missing field at n'],
  [{ type: 'A', n: 1, tags: ['ok', ''] }, 'expected a non-empty string at tags.1'],
  [{ type: 'A', n: 1, tags: null }, 'expected an array at tags, got null'],
  [{ type: 'A', n: 1, on: 'yes' }, 'expected a boolean at on, got string'],
  [{ type: 'B', color: 'green' }, 'expected one of red, blue at color, got "green"'],
  [{ type: 'C' }, 'unknown type "C"; expected one of A, B'],
  [{ type: 'toString' }, 'unknown type "toString"; expected one of A, B'],
  [[], 'expected an object, got an array'],
  ['x', 'expected an object, got string'],
];

for (const [value, want] of CASES) {
  test(`check ${JSON.stringify(value)}`, () => {
    assert.equal(check(value, ''), want);
  });
}

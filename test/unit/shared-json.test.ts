import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson, stringifyJson } from '../../shared/json.js';

test('int64 nanoseconds round-trip to the digit', () => {
  const text = '{"start":{"nanoseconds":1443830400000000001},"duration":{"nanoseconds":3600000000000}}';
  const v = parseJson(text) as { start: { nanoseconds: unknown }; duration: { nanoseconds: unknown } };
  assert.equal(v.start.nanoseconds, 1443830400000000001n);
  assert.equal(v.duration.nanoseconds, 3600000000000);
  assert.equal(stringifyJson(v), text);
});

test('digits inside strings are left alone', () => {
  const text = '{"id":"12345678901234567890","n":-9223372036854775808,"s":"a\\"99999999999999999"}';
  const v = parseJson(text) as Record<string, unknown>;
  assert.equal(v['id'], '12345678901234567890');
  assert.equal(v['n'], -9223372036854775808n);
  assert.equal(v['s'], 'a"99999999999999999');
  assert.equal(stringifyJson(v), text);
});

test('floats and exponents stay numbers', () => {
  const v = parseJson('[1.5, 1e21, 12345678901234567.5]') as unknown[];
  assert.deepEqual(v, [1.5, 1e21, 12345678901234567.5]);
});

test('bad JSON throws a SyntaxError', () => {
  assert.throws(() => parseJson('{"a":'), SyntaxError);
  assert.throws(() => parseJson('{"a":12345678901234567890'), SyntaxError);
});

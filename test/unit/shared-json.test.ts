import { test } from 'node:test';
import assert from 'node:assert/strict';
import { JsonLimitError, parseJson, parseWireJson, stringifyJson, WIRE_LIMITS } from '../../shared/json.js';

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

test('parseWireJson: null is unset, in objects and arrays, at any depth', () => {
  const v = parseWireJson('{"a":null,"b":{"c":null,"d":1},"e":[null,2,null],"f":[{"g":null}]}');
  assert.deepEqual(v, { b: { d: 1 }, e: [2], f: [{}] });
});

test('parseWireJson: int64s stay exact and strings that look like numbers stay strings', () => {
  const v = parseWireJson('{"n":1443830400000000001,"s":"12345678901234567890","m":-9223372036854775808}') as Record<string, unknown>;
  assert.equal(v['n'], 1443830400000000001n);
  assert.equal(v['s'], '12345678901234567890');
  assert.equal(v['m'], -9223372036854775808n);
});

test('parseWireJson: bounds on depth, strings and arrays, with messages that never repeat the input', () => {
  const cases: Array<[string, string, RegExp]> = [
    ['10,000-deep array', '['.repeat(10_000) + ']'.repeat(10_000), /nests deeper than 64 levels/],
    ['10,000-deep object', '{"a":'.repeat(10_000) + '1' + '}'.repeat(10_000), /nests deeper than 64 levels/],
    ['deep value with a big integer', '{"a":'.repeat(5_000) + '18446744073709551616' + '}'.repeat(5_000), /nests deeper/],
    ['long string', JSON.stringify({ s: 'x'.repeat(WIRE_LIMITS.maxStringLength + 1) }), /string at 's' is longer than/],
    ['big array', JSON.stringify({ a: new Array(WIRE_LIMITS.maxArrayLength + 1).fill(0) }), /array at 'a' has more than 100000 elements/],
  ];
  for (const [name, text, want] of cases) {
    assert.throws(() => parseWireJson(text), (e: Error) => e instanceof JsonLimitError && want.test(e.message) && e.message.length < 200, name);
  }
  // 64 levels are fine; brackets inside strings do not count.
  assert.doesNotThrow(() => parseWireJson('['.repeat(64) + ']'.repeat(64)));
  assert.deepEqual(parseWireJson('{"s":"[[[[{{{{"}'), { s: '[[[[{{{{' });
  assert.throws(() => parseWireJson('{"a":'), SyntaxError);
});

test('parseWireJson: __proto__ never becomes a prototype', () => {
  const v = parseWireJson('{"__proto__":{"polluted":true},"a":1}') as Record<string, unknown>;
  assert.deepEqual(Object.keys(v), ['a']);
  assert.equal(Object.getPrototypeOf(v), Object.prototype);
  assert.equal((v as { polluted?: unknown }).polluted, undefined);
});

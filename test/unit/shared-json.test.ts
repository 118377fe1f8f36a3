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

/**
 * parseWireJson as it was before it cleaned in place and built paths only on error: the
 * reference the current one must match on every input, value or error (class and message).
 */
function referenceWireJson(text: string, limits: typeof WIRE_LIMITS): unknown {
  const BIG = '\u0000int64:';
  const at = (path: string): string => (path === '' ? '' : ` at '${path.length > 80 ? `${path.slice(0, 80)}...` : path}'`);
  const clean = (value: unknown, path: string, marked: boolean): unknown => {
    if (typeof value === 'string') {
      if (value.length > limits.maxStringLength) throw new JsonLimitError(`string${at(path)} is longer than ${limits.maxStringLength} characters`);
      return marked && value.startsWith(BIG) ? BigInt(value.slice(BIG.length)) : value;
    }
    if (typeof value !== 'object' || value === null) return value;
    if (Array.isArray(value)) {
      if (value.length > limits.maxArrayLength) throw new JsonLimitError(`array${at(path)} has more than ${limits.maxArrayLength} elements`);
      const out: unknown[] = [];
      for (let i = 0; i < value.length; i++) if (value[i] !== null) out.push(clean(value[i], `${path}[${i}]`, marked));
      return out;
    }
    const o = value as Record<string, unknown>;
    for (const key of Object.keys(o)) {
      const v = o[key];
      if (v === null || key === '__proto__') delete o[key];
      else o[key] = clean(v, path === '' ? key : `${path}.${key}`, marked);
    }
    return o;
  };
  // The marking pass is shared (unchanged); only the walk after JSON.parse is the reference's own.
  const marked = referenceMark(text, limits.maxDepth);
  return clean(JSON.parse(marked), '', marked !== text);
}

function referenceMark(text: string, maxDepth: number): string {
  let out = '';
  let last = 0;
  let depth = 0;
  let i = 0;
  const needDigits = /[0-9]{16}/.test(text);
  while (i < text.length) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      i++;
      while (i < text.length) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) { i++; break; } else i++;
      }
      continue;
    }
    if (c === 0x7b || c === 0x5b) {
      if (++depth > maxDepth) throw new JsonLimitError(`JSON nests deeper than ${maxDepth} levels`);
    } else if (c === 0x7d || c === 0x5d) depth--;
    else if (needDigits && (c === 0x2d || (c >= 0x30 && c <= 0x39))) {
      const start = i++;
      while (i < text.length && /[0-9.eE+-]/.test(text[i] as string)) i++;
      const token = text.slice(start, i);
      if (i - start > 15 && /^-?[0-9]+$/.test(token) && !Number.isSafeInteger(Number(token))) {
        out += text.slice(last, start) + JSON.stringify('\u0000int64:' + token);
        last = i;
      }
      continue;
    }
    i++;
  }
  return last === 0 ? text : out + text.slice(last);
}

/** The outcome of a parse, comparable with deepEqual: the value, or the error's class and message. */
function outcome(parse: () => unknown): unknown {
  try {
    return { value: parse() };
  } catch (e) {
    return { error: (e as Error).constructor.name, message: (e as Error).message };
  }
}

/** Random JSON text, with what hostile clients send: nulls, duplicate keys, __proto__, huge and odd numbers, escapes, marker look-alikes. */
function randomJson(rand: () => number, depth: number): string {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)] as T;
  const scalars = [
    'null', 'true', 'false', '0', '-1', '1.5', '1e21', '-0', '9007199254740991', '9007199254740993', '-9223372036854775808',
    '18446744073709551616', '12345678901234567.5', '1234567890123456e3', '"x"', '"12345678901234567890"', '"a\\"b"', '"\\\\"',
    '"\\u0000int64:7"', '"[{"', '"xxxxxxxxxxxx"', '""',
  ] as const;
  const r = rand();
  if (depth <= 0 || r < 0.35) return pick(scalars);
  const n = Math.floor(rand() * 6);
  const items: string[] = [];
  if (r < 0.65) {
    for (let i = 0; i < n; i++) items.push(randomJson(rand, depth - 1));
    return `[${items.join(rand() < 0.5 ? ',' : ' , ')}]`;
  }
  const keys = ['a', 'b', 'a', '__proto__', '0', '10', 'hostname', 'k.l', 'x[1]'] as const;
  for (let i = 0; i < n; i++) items.push(`${JSON.stringify(pick(keys))}:${randomJson(rand, depth - 1)}`);
  return `{${items.join(',')}}`;
}

test('parseWireJson: the same value or error as the reference walk, on hostile and random input', () => {
  const small = { maxDepth: 5, maxStringLength: 10, maxArrayLength: 4 };
  const fixed = [
    '{"a":1,"a":null}', '{"a":null,"a":2}', '{"a":[[[[[[1]]]]]],"a":1}', '[null,null,"xxxxxxxxxxxxxxxx"]',
    '{"k":[null,{"s":"xxxxxxxxxxxxxxxxxx"}]}', '[1,2,3,4,5]', '{"a":{"b":[0,1,2,3,4,null]}}', '[null,[1,2,3,4,5]]',
    '{"__proto__":null,"n":18446744073709551616}', '{"s":"\\u0000int64:12","n":18446744073709551616}',
    '{"s":"\\u0000int64:zz","n":18446744073709551616}', '{"a":', '[1,]', '{"a" 1}', '', ' ', '"\\u0000int64:5"',
    // Runs of backslashes before a quote: an even run ends the string, an odd one escapes it.
    '["\\\\",18446744073709551616]', '["\\\\\\"",18446744073709551616]', '["\\\\\\\\\\"18446744073709551616"]',
    '["\\\\\\\\",18446744073709551616,"\\""]', '["abc', '["a\\"', '["a\\\\"', '"\\',
    `{"${'k'.repeat(100)}":{"b":"xxxxxxxxxxxxxxxxxxxx"}}`, '[[[[[[[[', '[[[[[[[["', '{"a":"[[[[[[[["}',
  ];
  let seed = 15;
  const rand = (): number => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const texts = [...fixed];
  for (let i = 0; i < 3000; i++) texts.push(randomJson(rand, 7));
  for (const text of texts) {
    for (const limits of [small, WIRE_LIMITS]) {
      assert.deepEqual(outcome(() => parseWireJson(text, limits)), outcome(() => referenceWireJson(text, limits)), text);
    }
  }
});

test('parseWireJson: a limit error names the path, counting the nulls skipped before it', () => {
  const limits = { maxDepth: 64, maxStringLength: 3, maxArrayLength: 100 };
  assert.throws(() => parseWireJson('{"w":[null,{"m":[null,null,{"h":"long"}]}]}', limits), { name: 'JsonLimitError', message: "string at 'w[1].m[2].h' is longer than 3 characters" });
  assert.throws(() => parseWireJson('[null,"long"]', limits), { message: "string at '[1]' is longer than 3 characters" });
  assert.throws(() => parseWireJson('"long"', limits), { message: 'string is longer than 3 characters' });
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  addResources, containsResources, formatResources, parseAttributes, parseResources, subtractResources, sumResources, toEndpointFormat,
} from '../../shared/resources.js';

test('parses the Mesos resource syntax', () => {
  const r = parseResources('cpus:2;mem:1024;disk:4096;ports:[31000-32000]');
  assert.deepEqual(r, {
    ok: true,
    value: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 2 } },
      { name: 'mem', type: 'SCALAR', scalar: { value: 1024 } },
      { name: 'disk', type: 'SCALAR', scalar: { value: 4096 } },
      { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } },
    ],
  });
});

const BAD: Array<[string, RegExp]> = [
  ['cpus', /expected name:value/],
  ['cpus:two', /not a number/],
  ['cpus:-1', /negative/],
  ['ports:[32000-31000]', /ends before it begins/],
  ['ports:[a-b]', /not a range/],
  ['cpus:1;cpus:2', /more than once/],
  ['[{"name":"cpus"}]', /needs type/],
  ['[oops', /Invalid resources JSON/],
];
for (const [text, want] of BAD) {
  test(`rejects resources ${JSON.stringify(text)}`, () => {
    const r = parseResources(text);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, want);
  });
}

test('roles, sets and JSON input', () => {
  const r = parseResources('cpus(*):1;gpus(ml):2;zones:{a,b}');
  assert.ok(r.ok);
  if (r.ok) assert.equal(formatResources(r.value), 'cpus:1;gpus(ml):2;zones:{a,b}');
  const j = parseResources('[{"name":"cpus","type":"SCALAR","scalar":{"value":3}}]');
  assert.deepEqual(j, { ok: true, value: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 3 } }] });
});

test('parses attributes into SCALAR, RANGES and TEXT', () => {
  assert.deepEqual(parseAttributes('rack:a;zone:1;slots:[1-4]'), {
    ok: true,
    value: [
      { name: 'rack', type: 'TEXT', text: { value: 'a' } },
      { name: 'zone', type: 'SCALAR', scalar: { value: 1 } },
      { name: 'slots', type: 'RANGES', ranges: { range: [{ begin: 1, end: 4 }] } },
    ],
  });
  assert.equal(parseAttributes('rack').ok, false);
  assert.equal(parseAttributes('rack:').ok, false);
});

test('arithmetic: add, subtract, contains', () => {
  const total = parseResources('cpus:4;mem:1024;ports:[31000-31009]');
  const used = parseResources('cpus:1.5;mem:1024;ports:[31002-31003]');
  assert.ok(total.ok && used.ok);
  if (!total.ok || !used.ok) return;
  const left = subtractResources(total.value, used.value);
  assert.equal(formatResources(left), 'cpus:2.5;ports:[31000-31001,31004-31009]');
  assert.equal(formatResources(addResources(left, used.value)), 'cpus:4;ports:[31000-31009];mem:1024');
  assert.ok(containsResources(total.value, used.value));
  assert.ok(!containsResources(left, used.value));
  assert.ok(containsResources(left, parseResources('cpus:2.5').ok ? [{ name: 'cpus', type: 'SCALAR', scalar: { value: 2.5 } }] : []));
  assert.deepEqual(toEndpointFormat([{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }]), [
    { name: 'cpus', type: 'SCALAR', scalar: { value: 1 }, role: '*' },
  ]);
});

test('sumResources equals folding addResources, whatever the lists', () => {
  const lists = ['cpus:0.1;mem:1', 'cpus:0.1;mem:1;ports:[31000-31001]', 'gpus(web):1;cpus:0.3', 'zones:{a,b};ports:[31002-31004]', 'zones:{b,c};cpus(web):2', ''].map((t) => {
    const r = parseResources(t);
    assert.ok(r.ok);
    return r.ok ? r.value : [];
  });
  // 100 tasks of 0.1 cpus: the sum stays on Mesos' three decimals, as the fold does.
  const many = [...Array.from({ length: 100 }, () => lists[0] ?? []), ...lists];
  for (const input of [[], [lists[0] ?? []], lists, many]) {
    const folded = input.reduce<ReturnType<typeof addResources>>((acc, l) => addResources(acc, l), []);
    assert.equal(formatResources(sumResources(input)), formatResources(folded));
  }
  assert.equal(formatResources(sumResources(many)), 'cpus:10.5;mem:102;ports:[31000-31004];gpus(web):1;zones:{a,b,c};cpus(web):2');
});

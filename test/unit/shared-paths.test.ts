/**
 * The one reading of a request target (shared/paths.ts), as tables: every spelling of a path
 * that a client or an attacker may send, and what routes see of it (canonical path, decoded
 * segments, the path encoded again for a Location, the query untouched), or the 400 and why.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizePath, segmentsBelow } from '../../shared/paths.js';

test('normalizePath: slashes, dot segments, escapes and trailing slashes give one canonical path; the query is kept as sent', () => {
  const cases: Array<[raw: string, path: string, segments: string[], query: string]> = [
    ['/', '/', [], ''],
    ['//', '/', [], ''],
    ['///', '/', [], ''],
    ['/./', '/', [], ''],
    ['/.//', '/', [], ''],
    ['/.', '/', [], ''],
    ['/health', '/health', ['health'], ''],
    ['/health/', '/health', ['health'], ''],
    ['/health//', '/health', ['health'], ''],
    ['//health', '/health', ['health'], ''],
    ['/./health', '/health', ['health'], ''],
    ['/%68ealth', '/health', ['health'], ''],
    ['/%2e/health', '/health', ['health'], ''],
    ['/a/../b', '/b', ['b'], ''],
    ['/a/./../b/', '/b', ['b'], ''],
    ['/a/%2e%2e/b', '/b', ['b'], ''],
    ['/a/%2E%2E/b', '/b', ['b'], ''],
    ['/a/.%2e/b', '/b', ['b'], ''],
    ['/a/b/..', '/a', ['a'], ''],
    ['/a/..', '/', [], ''],
    ['/..a/b..', '/..a/b..', ['..a', 'b..'], ''],
    ['/...', '/...', ['...'], ''],
    ['/%41', '/A', ['A'], ''],
    ['/v1/maintenance/plans//', '/v1/maintenance/plans', ['v1', 'maintenance', 'plans'], ''],
    ['/v1/maintenance/plans///', '/v1/maintenance/plans', ['v1', 'maintenance', 'plans'], ''],
    ['/v1/maintenance/plans/.//', '/v1/maintenance/plans', ['v1', 'maintenance', 'plans'], ''],
    ['/v1/maintenance/plans/%70-r2', '/v1/maintenance/plans/p-r2', ['v1', 'maintenance', 'plans', 'p-r2'], ''],
    ['/v1/plans/a%20b', '/v1/plans/a b', ['v1', 'plans', 'a b'], ''],
    ['/v1/plans/%25', '/v1/plans/%', ['v1', 'plans', '%'], ''],
    ['/v1/plans/%2541', '/v1/plans/%41', ['v1', 'plans', '%41'], ''],
    ['/v1/plans/%C3%A9t%C3%A9', '/v1/plans/été', ['v1', 'plans', 'été'], ''],
    ['/v1/plans/a+b', '/v1/plans/a+b', ['v1', 'plans', 'a+b'], ''],
    ['/slave(1)/api/v1', '/slave(1)/api/v1', ['slave(1)', 'api', 'v1'], ''],
    ['/master/frameworks/', '/master/frameworks', ['master', 'frameworks'], ''],
    ['/maintenance/schedule?jsonp=cb', '/maintenance/schedule', ['maintenance', 'schedule'], '?jsonp=cb'],
    ['//maintenance/./schedule/?jsonp=cb', '/maintenance/schedule', ['maintenance', 'schedule'], '?jsonp=cb'],
    ['/x?', '/x', ['x'], '?'],
    ['/x?a=%2F&b=/../&c=%zz#', '/x', ['x'], '?a=%2F&b=/../&c=%zz#'],
    ['/?a=1?b=2', '/', [], '?a=1?b=2'],
    ['http://evil.example/v1/plans/', '/v1/plans', ['v1', 'plans'], ''],
    ['HTTPS://h:5050//api/v1?x=1', '/api/v1', ['api', 'v1'], '?x=1'],
    ['http://h', '/', [], ''],
    ['http://h?x', '/', [], '?x'],
  ];
  for (const [raw, path, segments, query] of cases) {
    const r = normalizePath(raw);
    assert.ok(r.ok, `${raw}: ${r.ok ? '' : r.error.message}`);
    assert.deepEqual({ path: r.target.path, segments: r.target.segments, query: r.target.query }, { path, segments, query }, raw);
    // Canonical means a fixed point: reading the encoded canonical path again changes nothing.
    const again = normalizePath(`${r.target.encodedPath}${r.target.query}`);
    assert.ok(again.ok, raw);
    assert.deepEqual(again.target, r.target, `${raw} is not a fixed point`);
  }
});

test('normalizePath: the encoded path is safe in a Location and names the same segments', () => {
  const cases: Array<[string, string]> = [
    ['/v1/plans/a%20b%3F/continue', '/v1/plans/a%20b%3F/continue'],
    ['/v1/plans/%C3%A9', '/v1/plans/%C3%A9'],
    ['/v1/plans/%25', '/v1/plans/%25'],
    ['/v1/plans/a%23b', '/v1/plans/a%23b'],
    ['//./a/../api/v1/', '/api/v1'],
  ];
  for (const [raw, encoded] of cases) {
    const r = normalizePath(raw);
    assert.ok(r.ok, raw);
    assert.equal(r.target.encodedPath, encoded, raw);
    assert.doesNotMatch(r.target.encodedPath, /[^\x21-\x7e]|[?#]/, `${raw}: nothing a header or a URL would misread`);
  }
});

test('normalizePath: malformed escapes, encoded separators, NUL and climbing above the root are a 400 that says why', () => {
  const cases: Array<[string, RegExp]> = [
    ['', /is not a path starting with '\/'/],
    ['*', /is not a path starting with '\/'/],
    ['health', /is not a path starting with '\/'/],
    ['example.com:443', /is not a path starting with '\/'/],
    ['?x=1', /is not a path starting with '\/'/],
    ['/%zz', /'%' that is not followed by two hex digits/],
    ['/%', /'%' that is not followed by two hex digits/],
    ['/a%2', /'%' that is not followed by two hex digits/],
    ['/%E0%A4%A', /'%' that is not followed by two hex digits/],
    ['/%FF', /does not decode to UTF-8/],
    ['/%C0%AF', /does not decode to UTF-8/],
    ['/%ED%A0%80', /does not decode to UTF-8/],
    ['/a%2Fb', /decodes to a '\/', '\\', NUL/],
    ['/a%2fb', /decodes to a '\/'/],
    ['/v1/plans/..%2F..%2Fetc', /decodes to a '\/'/],
    ['/a%5Cb', /decodes to a '\/', '\\'/],
    ['/a\\b', /decodes to a '\/', '\\'/],
    ['/a%00', /NUL/],
    ['/%00', /NUL/],
    ['/a%0Ab', /control character/],
    ['/a%7F', /control character/],
    ['/..', /climbs above the root/],
    ['/../health', /climbs above the root/],
    ['/%2e%2e', /climbs above the root/],
    ['/%2e%2e/%2e%2e/etc/passwd', /climbs above the root/],
    ['/a/../..', /climbs above the root/],
    ['/a/./.././../b', /climbs above the root/],
    ['/a b', /holds a space, a control character or a byte outside ASCII/],
    ['/é', /byte outside ASCII/],
    ['/a\u0000', /control character/],
    ['/a#b', /fragment/],
  ];
  for (const [raw, why] of cases) {
    const r = normalizePath(raw);
    assert.equal(r.ok, false, `${raw} must be refused`);
    if (r.ok) continue;
    assert.equal(r.error.code, 'PATH_INVALID', raw);
    assert.equal(r.error.status, 400, raw);
    assert.match(r.error.message, /^Bad request target: /, raw);
    assert.match(r.error.message, why, raw);
  }
});

test('normalizePath: a very long target is read in one pass, and a refusal quotes only its start', () => {
  const long = `/${'a'.repeat(100_000)}//${'./'.repeat(10_000)}b/`;
  const r = normalizePath(long);
  assert.ok(r.ok);
  assert.deepEqual(r.target.segments, ['a'.repeat(100_000), 'b']);
  const deep = `/${'x/'.repeat(20_000)}${'../'.repeat(20_000)}y`;
  const d = normalizePath(deep);
  assert.ok(d.ok);
  assert.equal(d.target.path, '/y');
  const bad = normalizePath(`/${'a'.repeat(10_000)}%zz`);
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.ok(bad.error.message.length < 300, `the message is bounded: ${bad.error.message.length} chars`);
});

test('segmentsBelow: a route prefix and what lies below it; [] is the list itself', () => {
  const read = (raw: string) => {
    const r = normalizePath(raw);
    assert.ok(r.ok, raw);
    return r.target;
  };
  const prefix = ['v1', 'maintenance', 'plans'];
  const cases: Array<[string, string[] | undefined]> = [
    ['/v1/maintenance/plans', []],
    ['/v1/maintenance/plans//', []],
    ['/v1/maintenance/plans/.//', []],
    ['/v1/maintenance/plans/p-r1', ['p-r1']],
    ['/v1/maintenance/plans/p-r1/continue', ['p-r1', 'continue']],
    ['/v1/maintenance/plansx', undefined],
    ['/v1/maintenance', undefined],
    ['/v1/maintenance/plans/../x', undefined],
    ['/', undefined],
  ];
  for (const [raw, want] of cases) assert.deepEqual(segmentsBelow(read(raw), prefix), want, raw);
});

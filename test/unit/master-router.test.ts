/**
 * The process's router while no term runs: every term route answers 503 from one place (the
 * agent session upgrade included), and /health and /version still answer; 307s carry the
 * canonical path, and `/redirect` names the leader as it advertises itself (never the Host
 * header). An in-process server on 127.0.0.1:0 with no term behind it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { fail } from '../../shared/errors.js';
import { silentLogger } from '../../shared/log.js';
import { createMasterServer } from '../../master/process/router.js';
import type { ServingTerm } from '../../master/term/ports.js';
import { request as httpRequest } from 'node:http';

test('no term: 503 from the router for every API, the scheduler API, maintenance and agent sessions; /health and /version answer', async (t) => {
  let reason = fail('NOT_RECOVERED');
  let leader: string | undefined;
  const server = createMasterServer({ current: () => undefined, leader: () => leader, self: () => '127.0.0.5:5050', unavailable: () => reason }, silentLogger);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const json = { 'content-type': 'application/json' };
  const calls: Array<[string, string, string | undefined]> = [
    ['POST', '/api/v1', '{"type":"GET_HEALTH"}'],
    ['POST', '/master/api/v1', '{"type":"GET_STATE"}'],
    ['POST', '/api/v1/scheduler', '{"type":"SUBSCRIBE"}'],
    ['GET', '/maintenance/schedule', undefined],
    ['POST', '/machine/down', '[]'],
  ];
  for (const [method, path, body] of calls) {
    const r = await fetch(`${base}${path}`, { method, headers: json, ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(5000) });
    assert.deepEqual([r.status, await r.text()], [503, 'Master has not finished recovery'], `${method} ${path}`);
  }
  reason = fail('NO_LEADER');
  const r = await fetch(`${base}/api/v1`, { method: 'POST', headers: json, body: '{"type":"GET_HEALTH"}', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([r.status, await r.text()], [503, 'No leader elected']);
  assert.equal((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) })).status, 200);
  assert.equal((await fetch(`${base}/version`, { signal: AbortSignal.timeout(5000) })).status, 200);
  assert.equal((await fetch(`${base}/nope`, { signal: AbortSignal.timeout(5000) })).status, 404);
  // Another master leads (HA): 307 to it, path and query kept; /redirect to its base URL.
  leader = '127.0.0.9:5050';
  const moved = await fetch(`${base}/master/api/v1?x=1`, { method: 'POST', headers: json, body: '{}', redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([moved.status, moved.headers.get('location')], [307, '//127.0.0.9:5050/master/api/v1?x=1']);
  // The Location carries the canonical path (encoded again) and the query exactly as sent.
  const spelled = await fetch(`${base}//master/./%61pi/v1/?x=%2F&y`, { method: 'POST', headers: json, body: '{}', redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([spelled.status, spelled.headers.get('location')], [307, '//127.0.0.9:5050/master/api/v1?x=%2F&y']);
  const plan = await fetch(`${base}/v1/maintenance/plans/a%20b%3F/continue?phase=p`, { method: 'POST', redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([plan.status, plan.headers.get('location')], [307, '//127.0.0.9:5050/v1/maintenance/plans/a%20b%3F/continue?phase=p']);
  const redirect = await fetch(`${base}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([redirect.status, redirect.headers.get('location')], [307, '//127.0.0.9:5050']);
  assert.equal((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) })).status, 200, '/health answers locally');
  leader = undefined;
  const ws = new WebSocket(`${base.replace('http', 'ws')}/agent/session`);
  const [err] = (await once(ws, 'error')) as [Error];
  assert.match(err.message, /503/);
});

/** A GET with a Host header of our choosing (fetch does not let a caller set Host). */
function getWithHost(port: number, path: string, host: string): Promise<{ status: number; location: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, path, headers: { host }, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, location: res.headers.location, body }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 5 s')));
    req.on('error', reject);
    req.end();
  });
}

test('/redirect names the leader as it advertises itself, never the Host header; unreadable targets are 400 before routing', async (t) => {
  let leading = true;
  // /redirect asks only whether a term runs: a stand-in term is enough here.
  const server = createMasterServer({ current: () => (leading ? ({} as ServingTerm) : undefined), leader: () => '127.0.0.9:5050', self: () => '127.0.0.5:5050', unavailable: () => fail('NO_LEADER') }, silentLogger);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  for (const path of ['/redirect', '/master/redirect', '//redirect/', '/%72edirect?x=1']) {
    const r = await getWithHost(port, path, 'evil.example');
    assert.deepEqual([r.status, r.location], [307, '//127.0.0.5:5050'], `${path} while leading`);
  }
  leading = false;
  const standby = await getWithHost(port, '/redirect', 'evil.example');
  assert.deepEqual([standby.status, standby.location], [307, '//127.0.0.9:5050'], 'a standby names the elected leader');
  for (const [path, why] of [
    ['/%zz', /'%' that is not followed by two hex digits/],
    ['/..', /climbs above the root/],
    ['/health/%2F..', /decodes to a '\/'/],
    ['/a%00b', /NUL/],
    ['/%C0%AF', /does not decode to UTF-8/],
  ] as const) {
    const r = await getWithHost(port, path, 'evil.example');
    assert.equal(r.status, 400, path);
    assert.match(r.body, /^Bad request target: /, path);
    assert.match(r.body, why, path);
  }
});

test("a standby and Mesos' legacy endpoints: /state and friends 307 to the leader (503 with none), /flags and /files/* answered here", async (t) => {
  let leader: string | undefined = '127.0.0.9:5050';
  const flags = [{ name: 'port', value: '5050' }, { name: 'work_dir', value: '/var/lib/drydock' }];
  const server = createMasterServer({ current: () => undefined, leader: () => leader, self: () => '127.0.0.5:5050', unavailable: () => fail('NO_LEADER'), flags: () => flags }, silentLogger);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const get = (path: string) => fetch(`${base}${path}`, { redirect: 'manual', signal: AbortSignal.timeout(5000) });
  // Mesos §7.2: these are the leader's; the web UI's jsonp query goes along.
  const redirected = ['/master/state?jsonp=angular.callbacks._0', '/state', '/master/state-summary', '/state-summary', '/master/slaves', '/slaves', '/master/frameworks/', '/frameworks', '/master/tasks?order=asc&limit=-1', '/tasks', '/master/roles', '/roles'];
  for (const path of redirected) {
    const r = await get(path);
    const canonical = path.replace('/master/frameworks/', '/master/frameworks');
    assert.deepEqual([r.status, r.headers.get('location')], [307, `//127.0.0.9:5050${canonical}`], path);
  }
  // Not redirected (Mesos: /flags, /metrics/snapshot, /health, /version): this master's own answer.
  for (const path of ['/flags', '/master/flags']) {
    const r = await get(path);
    assert.deepEqual([r.status, await r.json()], [200, { flags: { port: '5050', work_dir: '/var/lib/drydock' } }], path);
  }
  const jsonp = await get('/flags?jsonp=cb');
  assert.deepEqual([jsonp.status, jsonp.headers.get('content-type'), await jsonp.text()], [200, 'text/javascript', 'cb({"flags":{"port":"5050","work_dir":"/var/lib/drydock"}});']);
  assert.deepEqual([(await get('/files/debug')).status, await (await get('/files/debug')).text()], [200, '{}']);
  assert.equal((await get('/files/read?path=/master/log&offset=-1')).status, 404);
  // No leader known: the leader's endpoints are 503, the process's still answer.
  leader = undefined;
  for (const path of redirected) {
    const r = await get(path);
    assert.deepEqual([r.status, await r.text()], [503, 'No leader elected'], path);
  }
  assert.equal((await get('/flags')).status, 200);
});

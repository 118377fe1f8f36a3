/**
 * The process's router while no term runs: every term route answers 503 from one place (the
 * agent session upgrade included), and /health and /version still answer. An in-process
 * server on 127.0.0.1:0 with no term behind it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { fail } from '../../shared/errors.js';
import { silentLogger } from '../../shared/log.js';
import { createMasterServer } from '../../master/http.js';

test('no term: 503 from the router for every API, the scheduler API, maintenance and agent sessions; /health and /version answer', async (t) => {
  let reason = fail('NOT_RECOVERED');
  let leader: string | undefined;
  const server = createMasterServer({ current: () => undefined, leader: () => leader, unavailable: () => reason }, silentLogger);
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
  const redirect = await fetch(`${base}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([redirect.status, redirect.headers.get('location')], [307, '//127.0.0.9:5050']);
  assert.equal((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) })).status, 200, '/health answers locally');
  leader = undefined;
  const ws = new WebSocket(`${base.replace('http', 'ws')}/agent/session`);
  const [err] = (await once(ws, 'error')) as [Error];
  assert.match(err.message, /503/);
});

/**
 * The real built master over HTTP: operator API framing with exact messages, the read calls'
 * shapes, /health and /version, unknown paths, and the daemon's flag and registry errors.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { join } from 'node:path';
import { WebSocket } from 'ws';
import { callApi, Daemon, MASTER_BIN, startMaster, tempDir } from '../helpers/daemons.js';

test('operator API framing errors have the Mesos status codes and messages', async (t) => {
  const m = await startMaster(t);
  const json = { 'content-type': 'application/json' };
  const cases: Array<{ body: string; headers: Record<string, string>; status: number; text: string; prefix?: boolean }> = [
    { body: '{"type":"GET_HEALTH"}', headers: { 'content-type': 'text/plain' }, status: 415, text: "Expecting 'Content-Type' of application/json or application/x-protobuf" },
    { body: 'x', headers: { 'content-type': 'application/x-protobuf' }, status: 400, text: 'Failed to parse body into Call protobuf' },
    { body: '{"type":', headers: json, status: 400, text: 'Failed to parse body into JSON: ', prefix: true },
    { body: '[]', headers: json, status: 400, text: 'Failed to convert JSON into Call protobuf: Expecting a JSON object' },
    { body: '{"type":1}', headers: json, status: 400, text: "Failed to convert JSON into Call protobuf: Not expecting a JSON number for field 'type'" },
    { body: '{}', headers: json, status: 400, text: "Failed to validate master::Call: Expecting 'type' to be present" },
    { body: '{"type":"BOGUS"}', headers: json, status: 400, text: "Failed to validate master::Call: Expecting 'type' to be present" },
    { body: '{"type":"GET_HEALTH"}', headers: { ...json, accept: 'text/html' }, status: 406, text: "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'" },
    { body: '{"type":"UNKNOWN"}', headers: json, status: 501, text: 'Call type UNKNOWN is not supported' },
    { body: '{"type":"GET_HEALTH"}', headers: { 'content-type': 'application/json; charset=utf-8' }, status: 200, text: '{"type":"GET_HEALTH","get_health":{"healthy":true}}' },
  ];
  for (const c of cases) {
    const r = await callApi(m.url, c.body, c.headers);
    assert.equal(r.status, c.status, `${c.body} ${JSON.stringify(c.headers)}: ${r.text}`);
    if (c.prefix === true) assert.ok(r.text.startsWith(c.text), r.text);
    else assert.equal(r.text, c.text);
    assert.match(r.headers.get('content-type') ?? '', c.status === 200 ? /^application\/json/ : /^text\/plain/);
  }

  // fetch adds text/plain to a string body; a byte body goes without a Content-Type.
  const noType = await fetch(`${m.url}/api/v1`, { method: 'POST', body: new TextEncoder().encode('{"type":"GET_HEALTH"}') });
  assert.equal(noType.status, 400);
  assert.equal(await noType.text(), "Expecting 'Content-Type' to be present");

  const get = await fetch(`${m.url}/api/v1`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal(await get.text(), "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'.");

  const big = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: json, body: `{"type":"GET_HEALTH","pad":"${'x'.repeat(5 * 1024 * 1024)}"}` });
  assert.equal(big.status, 413);

  // The master is unharmed by all of that.
  assert.equal((await callApi(m.url, { type: 'GET_HEALTH' })).status, 200);
});

test('read calls answer on every API path, with their arrays always present', async (t) => {
  const m = await startMaster(t, { flags: ['--agent_ping_timeout=2secs', '--hostname=master.test'] });
  for (const path of ['/api/v1', '/master/api/v1', '/mesos/api/v1']) {
    const r = await fetch(`${m.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_STATE"}' });
    assert.equal(r.status, 200, path);
    assert.equal(
      await r.text(),
      '{"type":"GET_STATE","get_state":{"get_tasks":{"tasks":[],"unreachable_tasks":[],"completed_tasks":[]},"get_executors":{"executors":[]},"get_frameworks":{"frameworks":[],"completed_frameworks":[]},"get_agents":{"agents":[],"recovered_agents":[]}}}',
    );
  }
  const master = (await callApi(m.url, { type: 'GET_MASTER' })).json as { get_master: { master_info: Record<string, unknown>; start_time: number; elected_time: number } };
  const info = master.get_master.master_info;
  assert.equal(info['ip'], 16777343);
  assert.equal(info['port'], m.port);
  assert.equal(info['pid'], `master@127.0.0.1:${m.port}`);
  assert.equal(info['hostname'], 'master.test');
  assert.deepEqual(info['address'], { hostname: 'master.test', ip: '127.0.0.1', port: m.port });
  assert.deepEqual(info['capabilities'], [{ type: 'AGENT_UPDATE' }, { type: 'AGENT_DRAINING' }]);
  assert.ok(Math.abs(master.get_master.start_time - Date.now() / 1000) < 60);

  const flags = (await callApi(m.url, { type: 'GET_FLAGS' })).json as { get_flags: { flags: Array<{ name: string; value: string }> } };
  assert.deepEqual(flags.get_flags.flags.find((f) => f.name === 'agent_ping_timeout'), { name: 'agent_ping_timeout', value: '2secs' });
  assert.deepEqual(flags.get_flags.flags.find((f) => f.name === 'max_agent_ping_timeouts'), { name: 'max_agent_ping_timeouts', value: '5' });

  const version = (await callApi(m.url, { type: 'GET_VERSION' })).json as { get_version: { version_info: { version: string } } };
  assert.equal(version.get_version.version_info.version, '1.12.0');
  for (const [call, key, arrays] of [['GET_TASKS', 'get_tasks', ['tasks', 'unreachable_tasks', 'completed_tasks']], ['GET_FRAMEWORKS', 'get_frameworks', ['frameworks', 'completed_frameworks']], ['GET_EXECUTORS', 'get_executors', ['executors']]] as const) {
    const body = (await callApi(m.url, { type: call })).json as Record<string, Record<string, unknown>>;
    for (const a of arrays) assert.deepEqual(body[key]?.[a], [], `${call}.${a}`);
  }
});

test('GET /health, /version (also under /master/), unknown paths and upgrades get 404', async (t) => {
  const m = await startMaster(t);
  for (const p of ['/health', '/master/health']) {
    const r = await fetch(`${m.url}${p}`);
    assert.equal(r.status, 200);
    assert.equal(await r.text(), '');
  }
  for (const p of ['/version', '/master/version']) {
    const r = await fetch(`${m.url}${p}`);
    assert.equal(r.status, 200);
    const v = (await r.json()) as Record<string, unknown>;
    assert.equal(v['version'], '1.12.0');
    assert.equal(typeof v['build_date'], 'string');
  }
  const nf = await fetch(`${m.url}/nope`);
  assert.equal(nf.status, 404);
  assert.equal(await nf.text(), '404 Not Found.');

  const ws = new WebSocket(`ws://127.0.0.1:${m.port}/not/a/session`);
  const status = await new Promise<number>((resolve, reject) => {
    ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
    ws.on('open', () => reject(new Error('upgrade on an unknown path succeeded')));
    ws.on('error', () => {});
  });
  assert.equal(status, 404);
});

test('bad flags exit 1 naming the flag; --help exits 0', async (t) => {
  for (const [args, env, pattern] of [
    [['--bogus=1'], {}, /--bogus/],
    [['--agent_ping_timeout=fast'], {}, /--agent_ping_timeout/],
    [[], { DRYDOCK_PORT: 'x' }, /DRYDOCK_PORT/],
  ] as const) {
    const d = new Daemon(MASTER_BIN, [...args], { ...env });
    t.after(() => d.stop());
    const exit = await d.exited;
    assert.equal(exit.code, 1, `${args.join(' ')}: ${d.stderr}`);
    assert.match(d.stderr, pattern);
  }
  const help = new Daemon(MASTER_BIN, ['--help']);
  t.after(() => help.stop());
  assert.equal((await help.exited).code, 0);
  assert.match(help.stdout.join('\n'), /--agent_reregister_timeout/);
});

test('a registry with a newer schema is refused with a clear error and exit 1', async (t) => {
  const workDir = tempDir(t, 'drydock-master-schema-');
  const m = await startMaster(t, { workDir });
  await m.daemon.stop();
  const db = new Database(join(workDir, 'registry.db'));
  db.prepare('UPDATE schema_version SET version = version + 100').run();
  db.close();
  const d = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${workDir}`]);
  t.after(() => d.stop());
  const exit = await d.exited;
  assert.equal(exit.code, 1);
  assert.match(d.stderr, /newer than this master knows/);
});

/**
 * The console's static files as the master serves them (master/console.ts): the allow-list, the
 * headers, 304s, and the scheduler's side (scheduler/plan-stream.ts): CORS headers and the URL it
 * advertises as webui_url.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { CONSOLE_FILES, consoleFile, ConsoleFiles, findConsoleDir, isConsolePath } from '../../master/process/console.js';
import { advertisedApiUrl, corsHeaders, isCorsPath } from '../../scheduler/plan-stream.js';
import { ROOT } from '../helpers/daemons.js';

test('console paths: the allow-list alone names files', () => {
  const cases: Array<[string, boolean, string | undefined]> = [
    ['/', true, 'index.html'],
    ['/console', true, 'index.html'],
    ['/console/', true, 'index.html'],
    ['/console/app.js', true, 'app.js'],
    ['/console/style.css', true, 'style.css'],
    ['/console/../package.json', true, undefined],
    ['/console/%2e%2e/package.json', true, undefined],
    ['/console/nope.js', true, undefined],
    ['/console/constructor', true, undefined],
    ['/consoles', false, undefined],
    ['/api/v1', false, undefined],
  ];
  for (const [path, is, file] of cases) {
    assert.equal(isConsolePath(path), is, path);
    if (is) assert.equal(consoleFile(path), file, path);
  }
});

test('every file of console/ is on the allow-list, and the list names only files that exist', (t) => {
  const dir = findConsoleDir(new URL('../../master/process/console.ts', import.meta.url).href);
  assert.equal(dir, join(ROOT, 'console'));
  assert.deepEqual(readdirSync(join(ROOT, 'console')).sort(), Object.keys(CONSOLE_FILES).sort());
  const total = Object.keys(CONSOLE_FILES).reduce((n, f) => n + statSync(join(ROOT, 'console', f)).size, 0);
  const gz = Object.keys(CONSOLE_FILES).reduce((n, f) => n + gzipSync(readFileSync(join(ROOT, 'console', f))).length, 0);
  t.diagnostic(`console bundle: ${total} bytes, ${gz} bytes gzipped (file by file)`);
  // Agent and task pages, previews and the sandbox reader took it past 100 kB; still one small page.
  assert.ok(total < 130_000, `the console stays small (${total} bytes)`);
});

async function serve(files: ConsoleFiles): Promise<{ server: Server; url: string }> {
  const server = createServer((req, res) => files.serve(new URL(req.url ?? '/', 'http://x').pathname, req, res));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const a = server.address() as { port: number };
  return { server, url: `http://127.0.0.1:${a.port}` };
}

test('answers: Content-Type, CSP, nosniff, ETag and 304; 404 and 405', async (t) => {
  const { server, url } = await serve(ConsoleFiles.load(join(ROOT, 'console')));
  t.after(() => server.close());
  const index = await fetch(`${url}/`);
  assert.equal(index.status, 200);
  assert.equal(index.headers.get('content-type'), 'text/html; charset=utf-8');
  assert.match(index.headers.get('content-security-policy') ?? '', /^default-src 'self'/);
  assert.equal(index.headers.get('x-content-type-options'), 'nosniff');
  assert.equal(index.headers.get('cache-control'), 'no-cache');
  assert.match(await index.text(), /<script type="module" src="\/console\/app.js">/);
  const js = await fetch(`${url}/console/app.js`);
  assert.equal(js.headers.get('content-type'), 'text/javascript; charset=utf-8');
  const etag = js.headers.get('etag') ?? '';
  assert.match(etag, /^"[A-Za-z0-9_-]+"$/);
  assert.equal((await fetch(`${url}/console/app.js`, { headers: { 'If-None-Match': etag } })).status, 304);
  assert.equal((await fetch(`${url}/console/app.js`, { headers: { 'If-None-Match': '"other"' } })).status, 200);
  const head = await fetch(`${url}/console/style.css`, { method: 'HEAD' });
  assert.equal(head.status, 200);
  assert.equal(await head.text(), '');
  // The sandbox reader runs agents' JSONP: sandboxed (an opaque origin) and framed by the console alone.
  const frame = await fetch(`${url}/console/sandbox.html`);
  assert.match(frame.headers.get('content-security-policy') ?? '', /^sandbox allow-scripts; default-src 'none'; script-src http: https:; frame-ancestors 'self'/);
  assert.equal(frame.headers.get('x-frame-options'), 'SAMEORIGIN');
  assert.equal(index.headers.get('x-frame-options'), 'DENY');
  assert.equal((await fetch(`${url}/console/secret.txt`)).status, 404);
  const post = await fetch(`${url}/`, { method: 'POST', body: 'x' });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET, HEAD');
});

test('a master without console/ answers 404 with the reason, and does not crash', async (t) => {
  const { server, url } = await serve(ConsoleFiles.load(join(ROOT, 'no-such-dir')));
  t.after(() => server.close());
  const r = await fetch(`${url}/`);
  assert.equal(r.status, 404);
  assert.match(await r.text(), /incomplete: cannot read index.html/);
  const none = await serve(ConsoleFiles.load(undefined));
  t.after(() => none.server.close());
  assert.match(await (await fetch(`${none.url}/`)).text(), /not installed/);
});

test('the scheduler: CORS on the plan routes only; the advertised API URL', () => {
  assert.deepEqual(corsHeaders('http://10.0.0.1:5050'), { 'Access-Control-Allow-Origin': 'http://10.0.0.1:5050', Vary: 'Origin' });
  assert.deepEqual(corsHeaders(undefined), {});
  assert.deepEqual(['/v1/plans', '/v1/plans/stream', '/v1/plans/deploy/continue', '/v1/pod', '/v1/plansx'].map(isCorsPath), [true, true, true, false, false]);
  const cases: Array<[string, number, boolean, string]> = [
    ['127.0.0.1', 8088, false, 'http://127.0.0.1:8088'],
    ['0.0.0.0', 8088, true, 'https://node-7:8088'],
    ['::', 8088, false, 'http://node-7:8088'],
    ['fd00::5', 9000, false, 'http://[fd00::5]:9000'],
  ];
  for (const [ip, port, tls, want] of cases) assert.equal(advertisedApiUrl(ip, port, tls, 'node-7'), want);
});

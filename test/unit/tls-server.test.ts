/**
 * The TLS port (shared/tls-server.ts): the first-byte decision and the plain-HTTP refusal as
 * tables, the files as loadServerTls reads them (modes, PEM, a key that does not match), and an
 * in-process listener on 127.0.0.1:0: HTTPS with the right CA, the wrong CA refused, plain HTTP
 * answered with the 400, mutual TLS, WSS, and close() with connections open.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { once } from 'node:events';
import { connect as netConnect, type AddressInfo, type Socket } from 'node:net';
import { join } from 'node:path';
import { WebSocket, WebSocketServer } from 'ws';
import { makeCertificates } from '../../scripts/harness/certs.js';
import { clientTransport } from '../../io/transport.js';
import { createHttpListener, loadServerTls, PLAIN_HTTP_ON_TLS_PORT, plainHttpRefusal, sniffTransport, type HttpListener, type ServerTls, type TransportRefusal } from '../../io/tls-server.js';
import { tempDir } from '../helpers/daemons.js';

test('sniffTransport: a TLS handshake record is TLS, anything else is plain, nothing yet is undecided', () => {
  const cases: Array<[string, Uint8Array, ReturnType<typeof sniffTransport>]> = [
    ['TLS ClientHello', Uint8Array.from([0x16, 0x03, 0x01, 0x02, 0x00]), 'tls'],
    ['the handshake byte alone', Uint8Array.from([0x16]), 'tls'],
    ['GET', Buffer.from('GET /health HTTP/1.1\r\n'), 'plain'],
    ['POST', Buffer.from('POST /api/v1 HTTP/1.1\r\n'), 'plain'],
    ['HTTP/2 prior knowledge', Buffer.from('PRI * HTTP/2.0\r\n'), 'plain'],
    ['SSLv2-style hello', Uint8Array.from([0x80, 0x2e, 0x01]), 'plain'],
    ['a TLS alert record', Uint8Array.from([0x15, 0x03, 0x03]), 'plain'],
    ['empty', new Uint8Array(0), 'undecided'],
  ];
  for (const [name, bytes, want] of cases) assert.equal(sniffTransport(bytes), want, name);
});

test('plainHttpRefusal: an HTTP/1.1 400 with a text body, its length, and Connection: close', () => {
  const answer = plainHttpRefusal();
  const [head, body] = answer.split('\r\n\r\n') as [string, string];
  assert.match(head, /^HTTP\/1\.1 400 Bad Request\r\n/);
  assert.match(head, /\r\nContent-Type: text\/plain; charset=utf-8/);
  assert.match(head, /\r\nConnection: close/);
  assert.equal(body, `${PLAIN_HTTP_ON_TLS_PORT}\n`);
  assert.match(head, new RegExp(`Content-Length: ${Buffer.byteLength(body)}(\r|$)`));
  assert.match(plainHttpRefusal('é'), /Content-Length: 3\r/, 'length in bytes, not characters');
});

test('loadServerTls: the key must not be readable by others, files must hold PEM, and the key must match the certificate', (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const other = makeCertificates(dir, 'other');
  const openKey = join(dir, 'open-key.pem');
  copyFileSync(c.keyFile, openKey);
  chmodSync(openKey, 0o644);
  const notPem = join(dir, 'not-pem.txt');
  writeFileSync(notPem, 'hello\n', { mode: 0o600 });
  const openCert = join(dir, 'open-cert.pem');
  copyFileSync(c.certFile, openCert);
  chmodSync(openCert, 0o644);
  const cases: Array<[string, Parameters<typeof loadServerTls>[0], RegExp | 'ok']> = [
    ['cert and key', { certFile: c.certFile, keyFile: c.keyFile }, 'ok'],
    ['a world-readable certificate is fine (it is public)', { certFile: openCert, keyFile: c.keyFile, caFile: c.caFile }, 'ok'],
    ['key readable by others', { certFile: c.certFile, keyFile: openKey }, new RegExp(`^--tls_key_file ${openKey} is readable by others \\(mode 0644\\); run chmod 600 on it$`)],
    ['no certificate file', { certFile: join(dir, 'missing.pem'), keyFile: c.keyFile }, /^--tls_cert_file .*missing\.pem cannot be read: no such file$/],
    ['certificate is not PEM', { certFile: notPem, keyFile: c.keyFile }, /^--tls_cert_file .*not-pem\.txt holds no PEM certificate$/],
    ['key is not PEM', { certFile: c.certFile, keyFile: notPem }, /^--tls_key_file .*not-pem\.txt holds no PEM private key$/],
    ['CA is not PEM', { certFile: c.certFile, keyFile: c.keyFile, caFile: notPem }, /^--tls_ca_file .*not-pem\.txt holds no PEM certificate$/],
    ['key of another certificate', { certFile: c.certFile, keyFile: other.keyFile }, /^--tls_cert_file .* and --tls_key_file .*other-server-key\.pem cannot serve TLS: .*key values mismatch/],
  ];
  for (const [name, files, want] of cases) {
    const r = loadServerTls(files);
    if (want === 'ok') {
      assert.ok(r.ok, `${name}: ${r.ok ? '' : r.error}`);
      continue;
    }
    assert.equal(r.ok, false, name);
    if (!r.ok) assert.match(r.error, want, name);
  }
  const mutual = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, requireClientCert: true });
  assert.ok(mutual.ok && mutual.tls.requireClientCert && mutual.tls.ca === readFileSync(c.caFile, 'utf8'));
});

async function listen(t: { after(fn: () => unknown): void }, tls: ServerTls | undefined, refusals: TransportRefusal[] = []): Promise<{ server: HttpListener; port: number }> {
  const wss = new WebSocketServer({ noServer: true });
  const server = createHttpListener(
    {
      request: (req, res) => {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end(`hello ${req.url ?? ''}`);
      },
      upgrade: (req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.on('message', (m) => ws.send(`echo ${String(m)}`))),
    },
    { tls, onRefused: (r) => refusals.push(r) },
  );
  // Every raw connection, upgraded ones included (closeAllConnections, like http's, leaves those).
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => {
    server.closeAllConnections();
    for (const s of sockets) s.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  });
  return { server, port: (server.address() as AddressInfo).port };
}

/** Raw bytes to the port and everything it answers until it closes (bounded). */
function rawExchange(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = netConnect(port, '127.0.0.1', () => s.write(text));
    let got = '';
    s.setEncoding('utf8').on('data', (d: string) => (got += d));
    s.on('error', reject);
    s.on('close', () => resolve(got));
    setTimeout(() => {
      s.destroy();
      reject(new Error(`no close within 5 s; got ${JSON.stringify(got)}`));
    }, 5000).unref();
  });
}

test('the TLS port: HTTPS with the right CA, the wrong CA refused, plain HTTP answered with the 400 that says https, WSS works', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const other = makeCertificates(dir, 'other');
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile });
  assert.ok(loaded.ok);
  const refusals: TransportRefusal[] = [];
  const { port } = await listen(t, loaded.tls, refusals);
  const ca = readFileSync(c.caFile, 'utf8');

  const right = clientTransport({ tls: { ca, cert: undefined, key: undefined } });
  const ok = await right.fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(5000) });
  assert.deepEqual([ok.status, await ok.text()], [200, 'hello /x']);
  const byName = await right.fetch(`https://localhost:${port}/y`, { signal: AbortSignal.timeout(5000) });
  assert.equal(await byName.text(), 'hello /y', 'the certificate names localhost too');

  const wrong = clientTransport({ tls: { ca: readFileSync(other.caFile, 'utf8'), cert: undefined, key: undefined } });
  await assert.rejects(wrong.fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(5000) }), (e: Error) => {
    assert.match(String((e.cause as { code?: string } | undefined)?.code), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
    return true;
  });
  await assert.rejects(fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(5000) }), 'no CA: the system CAs do not know ours');

  const plain = await fetch(`http://127.0.0.1:${port}/api/v1`, { method: 'POST', body: '{"type":"GET_HEALTH"}', signal: AbortSignal.timeout(5000) });
  assert.equal(plain.status, 400);
  assert.equal(plain.headers.get('content-type'), 'text/plain; charset=utf-8');
  assert.equal(await plain.text(), `${PLAIN_HTTP_ON_TLS_PORT}\n`);
  // A client that is still sending a large body reads the 400 too (no reset under it).
  const big = await rawExchange(port, `POST /api/v1 HTTP/1.1\r\nHost: x\r\nContent-Length: 300000\r\n\r\n${'x'.repeat(300_000)}`);
  assert.match(big, /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*This port speaks TLS: use https:\/\//);
  assert.ok(refusals.some((r) => r.kind === 'plain-http' && r.remote.startsWith('127.0.0.1:')), JSON.stringify(refusals));
  assert.ok(refusals.some((r) => r.kind === 'tls-handshake' && /does it trust the CA/.test(r.error) && r.remote.startsWith('127.0.0.1:')), JSON.stringify(refusals));

  // wss:// through the same port, verified with the CA; plain ws:// gets the 400.
  const ws = new WebSocket(`wss://127.0.0.1:${port}/ws`, right.ws);
  t.after(() => ws.terminate());
  await once(ws, 'open');
  ws.send('hi');
  const [msg] = (await once(ws, 'message')) as [Buffer];
  assert.equal(String(msg), 'echo hi');
  const plainWs = new WebSocket(`ws://127.0.0.1:${port}/ws`);
  const [err] = (await once(plainWs, 'error')) as [Error];
  assert.match(err.message, /Unexpected server response: 400/);
});

test('the TLS port with mutual TLS: a client without a certificate is refused, one with a certificate from the CA is served, one from another CA is refused', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const other = makeCertificates(dir, 'other');
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, requireClientCert: true });
  assert.ok(loaded.ok);
  const refusals: TransportRefusal[] = [];
  const { port } = await listen(t, loaded.tls, refusals);
  const ca = readFileSync(c.caFile, 'utf8');
  const url = `https://127.0.0.1:${port}/m`;

  const anonymous = clientTransport({ tls: { ca, cert: undefined, key: undefined } });
  await assert.rejects(anonymous.fetch(url, { signal: AbortSignal.timeout(5000) }));
  const foreign = clientTransport({ tls: { ca, cert: readFileSync(other.clientCertFile, 'utf8'), key: readFileSync(other.clientKeyFile, 'utf8') } });
  await assert.rejects(foreign.fetch(url, { signal: AbortSignal.timeout(5000) }));
  const mutual = clientTransport({ tls: { ca, cert: readFileSync(c.clientCertFile, 'utf8'), key: readFileSync(c.clientKeyFile, 'utf8') } });
  const ok = await mutual.fetch(url, { signal: AbortSignal.timeout(5000) });
  assert.deepEqual([ok.status, await ok.text()], [200, 'hello /m']);
  assert.ok(refusals.some((r) => r.kind === 'tls-handshake' && /certificate/.test(r.error)), JSON.stringify(refusals));
});

test('the TLS port closes: close() waits for an open WebSocket and drops a silent socket; closeAllConnections ends HTTP keep-alive', { timeout: 30_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile });
  assert.ok(loaded.ok);
  const { server, port } = await listen(t, loaded.tls);
  const ca = readFileSync(c.caFile, 'utf8');
  const transport = clientTransport({ tls: { ca, cert: undefined, key: undefined } });
  const r = await transport.fetch(`https://127.0.0.1:${port}/k`, { signal: AbortSignal.timeout(5000) });
  await r.text();
  const ws = new WebSocket(`wss://127.0.0.1:${port}/ws`, transport.ws);
  await once(ws, 'open');
  const silent = netConnect(port, '127.0.0.1');
  await once(silent, 'connect');
  silent.on('error', () => {});
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  let done = false;
  void closed.then(() => (done = true));
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(done, false, 'an open WebSocket keeps close() waiting');
  server.closeAllConnections();
  ws.terminate();
  const t0 = Date.now();
  await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error('close() did not finish within 5 s')), 5000).unref())]);
  t.diagnostic(`closed after ${Date.now() - t0} ms; silent destroyed: ${silent.destroyed}`);
  assert.ok(silent.destroyed || (await Promise.race([once(silent, 'close').then(() => true), new Promise((res) => setTimeout(() => res(false), 2000))])), 'the silent socket was dropped');
});

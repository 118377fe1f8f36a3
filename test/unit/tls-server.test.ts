/**
 * The TLS port (io/tls-server.ts): the first-byte decision, the plain-HTTP refusal and the
 * answers to unparseable requests as tables, the files as loadServerTls reads them (modes, PEM,
 * a key that does not match, a cipher list), and an in-process listener on 127.0.0.1:0: HTTPS
 * with the right CA, the wrong CA refused, plain HTTP answered with the 400, mutual TLS, WSS,
 * close() with connections open, oversized headers answered on both kinds of port, and the
 * suites offered (AEAD only by default; the list changes them).
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
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { maxHeaderSize } from 'node:http';
import { clientErrorAnswer, createHttpListener, DEFAULT_TLS_CIPHERS, loadServerTls, PLAIN_HTTP_ON_TLS_PORT, plainHttpRefusal, sniffTransport, type HttpListener, type ServerTls, type TransportRefusal } from '../../io/tls-server.js';
import { EVENT_DEADLINE_MS, tempDir } from '../helpers/daemons.js';

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
      reject(new Error(`no close within ${EVENT_DEADLINE_MS} ms; got ${JSON.stringify(got)}`));
    }, EVENT_DEADLINE_MS).unref();
  });
}

test('the TLS port: HTTPS with the right CA, the wrong CA refused, plain HTTP answered with the 400 that says https, WSS works', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const other = makeCertificates(dir, 'other');
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile });
  assert.ok(loaded.ok);
  const refusals: TransportRefusal[] = [];
  const { port } = await listen(t, loaded.tls, refusals);
  const ca = readFileSync(c.caFile, 'utf8');

  const right = clientTransport({ tls: { ca, cert: undefined, key: undefined } });
  const ok = await right.fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.deepEqual([ok.status, await ok.text()], [200, 'hello /x']);
  const byName = await right.fetch(`https://localhost:${port}/y`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(await byName.text(), 'hello /y', 'the certificate names localhost too');

  const wrong = clientTransport({ tls: { ca: readFileSync(other.caFile, 'utf8'), cert: undefined, key: undefined } });
  await assert.rejects(wrong.fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }), (e: Error) => {
    assert.match(String((e.cause as { code?: string } | undefined)?.code), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED|UNABLE_TO_GET_ISSUER/);
    return true;
  });
  await assert.rejects(fetch(`https://127.0.0.1:${port}/x`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }), 'no CA: the system CAs do not know ours');

  const plain = await fetch(`http://127.0.0.1:${port}/api/v1`, { method: 'POST', body: '{"type":"GET_HEALTH"}', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
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

test('the TLS port with mutual TLS: a client without a certificate is refused, one with a certificate from the CA is served, one from another CA is refused', { timeout: 60_000 }, async (t) => {
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
  await assert.rejects(anonymous.fetch(url, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }));
  const foreign = clientTransport({ tls: { ca, cert: readFileSync(other.clientCertFile, 'utf8'), key: readFileSync(other.clientKeyFile, 'utf8') } });
  await assert.rejects(foreign.fetch(url, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }));
  const mutual = clientTransport({ tls: { ca, cert: readFileSync(c.clientCertFile, 'utf8'), key: readFileSync(c.clientKeyFile, 'utf8') } });
  const ok = await mutual.fetch(url, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.deepEqual([ok.status, await ok.text()], [200, 'hello /m']);
  assert.ok(refusals.some((r) => r.kind === 'tls-handshake' && /certificate/.test(r.error)), JSON.stringify(refusals));
});

test('the TLS port closes: close() waits for an open WebSocket and drops a silent socket; closeAllConnections ends HTTP keep-alive', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile });
  assert.ok(loaded.ok);
  const { server, port } = await listen(t, loaded.tls);
  const ca = readFileSync(c.caFile, 'utf8');
  const transport = clientTransport({ tls: { ca, cert: undefined, key: undefined } });
  const r = await transport.fetch(`https://127.0.0.1:${port}/k`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  await r.text();
  const ws = new WebSocket(`wss://127.0.0.1:${port}/ws`, transport.ws);
  await once(ws, 'open');
  const silent = netConnect(port, '127.0.0.1');
  await once(silent, 'connect');
  silent.on('error', () => {});
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  let done = false;
  void closed.then(() => (done = true));
  // An observation window (its length is the check's sensitivity): close() must not finish while the WebSocket is open.
  await new Promise((res) => setTimeout(res, 100));
  assert.equal(done, false, 'an open WebSocket keeps close() waiting');
  server.closeAllConnections();
  ws.terminate();
  const t0 = Date.now();
  await Promise.race([closed, new Promise((_, reject) => setTimeout(() => reject(new Error(`close() did not finish within ${EVENT_DEADLINE_MS} ms`)), EVENT_DEADLINE_MS).unref())]);
  t.diagnostic(`closed after ${Date.now() - t0} ms; silent destroyed: ${silent.destroyed}`);
  assert.ok(silent.destroyed || (await Promise.race([once(silent, 'close').then(() => true), new Promise((res) => setTimeout(() => res(false), EVENT_DEADLINE_MS).unref())])), 'the silent socket was dropped');
});

test('clientErrorAnswer: 431 for headers over the limit, 408 for a slow request, 400 naming the parser code otherwise; whole HTTP answers that close', () => {
  const cases: Array<[string | undefined, RegExp, RegExp]> = [
    ['HPE_HEADER_OVERFLOW', /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, /^431 Request Header Fields Too Large: the request line and headers exceed 16384 bytes\n$/],
    ['ERR_HTTP_REQUEST_TIMEOUT', /^HTTP\/1\.1 408 Request Timeout\r\n/, /^408 Request Timeout: /],
    ['HPE_INVALID_METHOD', /^HTTP\/1\.1 400 Bad Request\r\n/, /^400 Bad Request: the request is not valid HTTP\/1\.1 \(HPE_INVALID_METHOD\)\n$/],
    [undefined, /^HTTP\/1\.1 400 Bad Request\r\n/, /^400 Bad Request: the request is not valid HTTP\/1\.1\n$/],
  ];
  for (const [code, head, text] of cases) {
    const answer = clientErrorAnswer(code, 16384);
    const [h, body] = answer.split('\r\n\r\n') as [string, string];
    assert.match(h, head, String(code));
    assert.match(h, /\r\nConnection: close(\r|$)/, String(code));
    assert.match(h, new RegExp(`\r\nContent-Length: ${Buffer.byteLength(body)}(\r|$)`), String(code));
    assert.match(body, text, String(code));
  }
});

/**
 * Sends `text` on a fresh connection (TLS when `ca` is given) and collects everything the port
 * answers until it closes (bounded). A write refused under it (the server closed) is expected.
 */
function exchange(port: number, text: string, ca?: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = ca === undefined ? netConnect(port, '127.0.0.1', () => s.write(text)) : tlsConnect({ port, host: '127.0.0.1', ca, servername: 'localhost' }, () => s.write(text));
    let got = '';
    s.setEncoding('utf8').on('data', (d: string) => (got += d));
    s.on('error', () => s.destroy());
    s.on('close', () => resolve(got));
    setTimeout(() => {
      s.destroy();
      reject(new Error(`no close within ${EVENT_DEADLINE_MS} ms; got ${JSON.stringify(got.slice(0, 200))}`));
    }, EVENT_DEADLINE_MS).unref();
  });
}

test('a request HTTP cannot parse is answered once and then closed, on plain HTTP and over TLS, however much the client still sends', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile });
  assert.ok(loaded.ok);
  const ca = readFileSync(c.caFile, 'utf8');
  const plain = await listen(t, undefined);
  const secure = await listen(t, loaded.tls);
  const big = (n: number): string => `GET /x HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(n)}\r\n\r\n`;
  const cases: Array<[string, string, RegExp]> = [
    ['headers just over the limit', big(maxHeaderSize + 100), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n[\s\S]*\r\n\r\n431 Request Header Fields Too Large: /],
    // Over TLS, every further chunk made the parser report the error again: the second report
    // used to destroy the socket before the first answer was out.
    ['300 kB of headers', big(300_000), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/],
    ['3 MB of headers', big(3_000_000), /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/],
    ['no HTTP at all', 'HELLO THERE\r\n\r\n', /^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*\(HPE_INVALID_METHOD\)/],
  ];
  for (const [name, text, want] of cases) {
    for (const [kind, port, tlsCa] of [['plain', plain.port, undefined], ['TLS', secure.port, ca]] as const) {
      const got = await exchange(port, text, tlsCa);
      assert.match(got, want, `${name} over ${kind}: ${JSON.stringify(got.slice(0, 120))}`);
      assert.equal(got.match(/HTTP\/1\.1 \d{3} /g)?.length, 1, `${name} over ${kind}: one answer`);
    }
  }
  // The port still serves after all of that.
  const ok = await clientTransport({ tls: { ca, cert: undefined, key: undefined } }).fetch(`https://127.0.0.1:${secure.port}/after`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.deepEqual([ok.status, await ok.text()], [200, 'hello /after']);
});

/** One TLS handshake with the client's options: the protocol and suite agreed, or the error. */
function handshake(port: number, ca: string, options: ConnectionOptions): Promise<{ ok: true; protocol: string | null; cipher: string } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const s = tlsConnect({ port, host: '127.0.0.1', ca, servername: 'localhost', ...options }, () => {
      resolve({ ok: true, protocol: s.getProtocol(), cipher: s.getCipher().name });
      s.end();
    });
    s.on('error', (e) => resolve({ ok: false, error: e.message }));
    s.setTimeout(EVENT_DEADLINE_MS, () => s.destroy(new Error(`no handshake within ${EVENT_DEADLINE_MS} ms`)));
  });
}

test('TLS suites: AEAD only on TLS 1.2 by default (CBC refused), TLS 1.3 as OpenSSL has it, nothing before TLS 1.2; --tls_ciphers changes the list', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const ca = readFileSync(c.caFile, 'utf8');
  const CBC = { ciphers: 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA', maxVersion: 'TLSv1.2' } as const;
  const AEAD12 = { ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256', maxVersion: 'TLSv1.2' } as const;
  const CHACHA12 = { ciphers: 'ECDHE-ECDSA-CHACHA20-POLY1305', maxVersion: 'TLSv1.2' } as const;
  const TLS13_AES128 = { ciphers: 'TLS_AES_128_GCM_SHA256', minVersion: 'TLSv1.3' } as const;
  const TLS11 = { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' } as const;
  const cases: Array<[list: string | undefined, client: string, options: ConnectionOptions, want: string | RegExp]> = [
    [undefined, 'CBC suites only, TLS 1.2', CBC, /handshake failure/],
    [undefined, 'AES-GCM, TLS 1.2', AEAD12, 'TLSv1.2 ECDHE-ECDSA-AES128-GCM-SHA256'],
    [undefined, 'CHACHA20-POLY1305, TLS 1.2', CHACHA12, 'TLSv1.2 ECDHE-ECDSA-CHACHA20-POLY1305'],
    [undefined, 'TLS 1.3', TLS13_AES128, 'TLSv1.3 TLS_AES_128_GCM_SHA256'],
    [undefined, 'TLS 1.1 at most', TLS11, /protocol version|unsupported protocol/],
    ['ECDHE-ECDSA-AES128-SHA', 'CBC suites only, TLS 1.2', CBC, 'TLSv1.2 ECDHE-ECDSA-AES128-SHA'],
    ['ECDHE-ECDSA-AES128-SHA', 'AES-GCM, TLS 1.2', AEAD12, /handshake failure/],
    ['ECDHE-ECDSA-AES128-SHA', 'TLS 1.3 (OpenSSL\'s suites kept: the list names none)', TLS13_AES128, 'TLSv1.3 TLS_AES_128_GCM_SHA256'],
    ['ECDHE-ECDSA-AES128-SHA', 'TLS 1.1 at most', TLS11, /protocol version|unsupported protocol/],
    ['ECDHE-ECDSA-AES256-GCM-SHA384:TLS_AES_256_GCM_SHA384', 'TLS 1.3 with a suite the list leaves out', TLS13_AES128, /handshake failure/],
    ['ECDHE-ECDSA-AES256-GCM-SHA384:TLS_AES_256_GCM_SHA384', 'TLS 1.3', { minVersion: 'TLSv1.3' }, 'TLSv1.3 TLS_AES_256_GCM_SHA384'],
  ];
  const ports = new Map<string | undefined, number>();
  for (const [list, client, options, want] of cases) {
    let port = ports.get(list);
    if (port === undefined) {
      const loaded = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile, ...(list === undefined ? {} : { ciphers: list }) });
      assert.ok(loaded.ok, loaded.ok ? '' : loaded.error);
      assert.equal(loaded.tls.ciphers, list ?? DEFAULT_TLS_CIPHERS);
      port = (await listen(t, loaded.tls)).port;
      ports.set(list, port);
    }
    const r = await handshake(port, ca, options);
    const name = `server ${list ?? 'default'}, client ${client}`;
    if (typeof want === 'string') assert.deepEqual(r, { ok: true, protocol: want.split(' ')[0], cipher: want.split(' ')[1] }, name);
    else {
      assert.equal(r.ok, false, `${name}: ${JSON.stringify(r)}`);
      if (!r.ok) assert.match(r.error, want, name);
    }
  }
  const bad = loadServerTls({ certFile: c.certFile, keyFile: c.keyFile, ciphers: 'NOT-A-SUITE' });
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.match(bad.error, /^--tls_ciphers 'NOT-A-SUITE' is no cipher list OpenSSL can use: .*no cipher match/);
});

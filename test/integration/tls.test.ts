/**
 * TLS on the wire (issue 13, Transport): the master serves HTTPS and WSS on its one port, a real
 * agent verifies it with --tls_ca_file and registers over wss://, an operator with the right CA
 * is served and one with the wrong CA is not, plain HTTP gets a 400 that says to use https://,
 * mutual TLS refuses clients without a certificate from the CA, a key readable by others stops
 * the start. The agent API serves HTTPS too, and like the scheduler's API can require client
 * certificates. In HA mode the masters reach etcd over TLS (with a client certificate) and as an
 * etcd user, and agents given --master=etcd://... read the election the same ways. All three
 * daemons offer AEAD suites only (--tls_ciphers changes that) and answer oversized headers
 * with 431 over TLS. Certificates come from a throwaway CA (openssl).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { connect as tlsConnect, type ConnectionOptions } from 'node:tls';
import { join } from 'node:path';
import { makeCertificates, type Certificates } from '../../scripts/harness/certs.js';
import { AgentDouble } from '../../scripts/harness/agent-double.js';
import { clientTransport, type ClientTransport } from '../../io/transport.js';
import { AGENT_BIN, callApi, Daemon, EVENT_DEADLINE_MS, eventually, fileWithMode, MASTER_BIN, removeDir, startAgent, startMaster, startScheduler, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { addDrydockUsers, etcdctl, etcdctlMissing, etcdMissing, startEtcd } from '../helpers/etcd.js';

const PLAIN_ANSWER = 'This port speaks TLS: use https:// (and wss:// for agents)\n';
const skipEtcd = etcdMissing();
const skipEtcdctl = etcdctlMissing();

/** A CA with its certificates, and an unrelated second CA (the wrong-CA cases). */
function pki(t: { after(fn: () => unknown): void }): { c: Certificates; other: Certificates; dir: string } {
  const dir = tempDir(t, 'drydock-tls-');
  return { c: makeCertificates(dir), other: makeCertificates(dir, 'other'), dir };
}

/** A client trusting `caFile`, presenting a client certificate when given. */
function client(caFile: string, cert?: { certFile: string; keyFile: string }): ClientTransport {
  return clientTransport({ tls: { ca: readFileSync(caFile, 'utf8'), cert: cert === undefined ? undefined : readFileSync(cert.certFile, 'utf8'), key: cert === undefined ? undefined : readFileSync(cert.keyFile, 'utf8') } });
}

type Agents = { get_agents: { agents: Array<{ agent_info: { id: { value: string }; hostname: string } }> } };

/** POST a call over plain HTTP to a port; resolves with status, content type and body. */
async function plainCall(address: string, body: string): Promise<[number, string | null, string]> {
  const r = await fetch(`http://${address}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  return [r.status, r.headers.get('content-type'), await r.text()];
}

test('a TLS master: an agent with --tls_ca_file registers over wss, an operator with the CA is served over https, the wrong CA and plain HTTP are refused', { timeout: 420_000 }, async (t) => {
  const { c, other } = pki(t);
  const m = await startMaster(t, { tls: { certFile: c.certFile, keyFile: c.keyFile } });
  assert.match(m.url, /^https:\/\//);
  assert.equal((await m.daemon.waitForMsg('listening'))['tls'], true);
  const agent = await startAgent(t, { master: m.address, tls: { caFile: c.caFile } });
  assert.ok(agent.daemon.records.some((r) => r.msg === 'registering' && r['master'] === m.address));

  // The operator with the CA sees the agent.
  const ok = await callApi(m.url, { type: 'GET_AGENTS' }, undefined, client(c.caFile));
  assert.equal(ok.status, 200);
  assert.deepEqual((ok.json as Agents).get_agents.agents.map((a) => a.agent_info.id.value), [agent.agentId]);

  // The wrong CA: the handshake fails, nothing is answered.
  await assert.rejects(callApi(m.url, { type: 'GET_AGENTS' }, undefined, client(other.caFile)), (e: Error) => {
    assert.match(String((e.cause as { code?: string } | undefined)?.code), /UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED/);
    return true;
  });
  await m.daemon.waitForMsg('TLS handshake failed');

  // Plain HTTP to the TLS port: a 400 that says what to do, and the master stays up.
  assert.deepEqual(await plainCall(m.address, '{"type":"GET_HEALTH"}'), [400, 'text/plain; charset=utf-8', PLAIN_ANSWER]);
  await m.daemon.waitForMsg('plain HTTP on the TLS port refused');
  assert.equal((await callApi(m.url, { type: 'GET_HEALTH' }, undefined, client(c.caFile))).status, 200);

  // An agent that forgot --tls_ca_file is told why it cannot connect, and does not register.
  const plainAgent = await startAgent(t, { master: m.address, hostname: 'plain-agent', port: 0, waitRegistered: false });
  const err = await plainAgent.daemon.waitForMsg('master connection error');
  assert.match(String(err['error']), /Unexpected server response: 400/);
  assert.match(String(err['hint']), /--tls_ca_file/);
  assert.equal(plainAgent.daemon.records.some((r) => r.msg === 'registered'), false);

  // The stop path closes the TLS port with sessions open: SIGTERM, exit 0.
  assert.deepEqual(await m.daemon.stop(5_000), { code: 0, signal: null });
});

test('mutual TLS (--tls_require_client_cert): clients without a certificate from the CA are refused; the agent presents its own and serves its API over https', { timeout: 420_000 }, async (t) => {
  const { c, other } = pki(t);
  const m = await startMaster(t, { tls: { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, requireClientCert: true } });
  // The agent's one certificate serves its API and is its client certificate towards the master.
  const agent = await startAgent(t, { master: m.address, tls: { caFile: c.caFile, certFile: c.certFile, keyFile: c.keyFile } });
  assert.ok(agent.agentId !== undefined);

  const call = { type: 'GET_AGENTS' };
  await assert.rejects(callApi(m.url, call, undefined, client(c.caFile)), 'no client certificate');
  await assert.rejects(callApi(m.url, call, undefined, client(c.caFile, { certFile: other.clientCertFile, keyFile: other.clientKeyFile })), 'a certificate from another CA');
  const ok = await callApi(m.url, call, undefined, client(c.caFile, { certFile: c.clientCertFile, keyFile: c.clientKeyFile }));
  assert.equal(ok.status, 200);
  assert.deepEqual((ok.json as Agents).get_agents.agents.map((a) => a.agent_info.id.value), [agent.agentId]);
  assert.ok(m.daemon.records.some((r) => r.msg === 'TLS handshake failed' && /certificate/.test(String(r['error']))), 'the refusal is logged with its reason');

  // WebSocket sessions: refused without a client certificate, accepted with one.
  await assert.rejects(AgentDouble.connect(m.url, { transport: client(c.caFile) }).then((d) => d.register({ timeoutMs: 3000 })));
  const double = await AgentDouble.connect(m.url, { transport: client(c.caFile, { certFile: c.clientCertFile, keyFile: c.clientKeyFile }) });
  t.after(() => double.close());
  assert.equal((await double.register()).type, 'REGISTERED');

  // An agent with the CA but no certificate of its own never registers.
  const bare = await startAgent(t, { master: m.address, hostname: 'no-cert', waitRegistered: false, tls: { caFile: c.caFile } });
  await bare.daemon.waitForMsg('master connection error');
  assert.equal(bare.daemon.records.some((r) => r.msg === 'registered'), false);

  // The agent API over https: the CA verifies it, plain HTTP gets the 400.
  assert.match(agent.url, /^https:\/\//);
  const health = await callApi(agent.url, { type: 'GET_HEALTH' }, undefined, client(c.caFile));
  assert.deepEqual([health.status, health.json], [200, { type: 'GET_HEALTH', get_health: { healthy: true } }]);
  assert.deepEqual(await plainCall(`${agent.ip}:${agent.port}`, '{"type":"GET_HEALTH"}'), [400, 'text/plain; charset=utf-8', PLAIN_ANSWER]);
  await assert.rejects(callApi(agent.url, { type: 'GET_HEALTH' }, undefined, client(other.caFile)));
  // Its API closes with a keep-alive TLS connection open: SIGTERM, exit 0, in time.
  assert.deepEqual(await agent.daemon.stop(5_000), { code: 0, signal: null });
});

/** What a client without an acceptable certificate sees: the handshake ends (a TLS alert, or the socket closed). */
function refusedAtHandshake(e: Error): boolean {
  const cause = e.cause as { code?: string; message?: string } | undefined;
  assert.match(`${cause?.code ?? ''} ${cause?.message ?? ''}`, /CERTIFICATE_REQUIRED|certificate required|UND_ERR_SOCKET|ECONNRESET|other side closed|UNKNOWN_CA|unknown ca/i);
  return true;
}

test('mutual TLS on the agent API and the scheduler API (--tls_require_client_cert, the CA of --tls_ca_file): no certificate or one from another CA is refused at the handshake, one from the CA is served, plain HTTP still gets the 400', { timeout: 360_000 }, async (t) => {
  const { c, other, dir } = pki(t);
  const m = await startMaster(t, { tls: { certFile: c.certFile, keyFile: c.keyFile } });
  const own = { certFile: c.clientCertFile, keyFile: c.clientKeyFile };
  const foreign = { certFile: other.clientCertFile, keyFile: other.clientKeyFile };
  const health = { type: 'GET_HEALTH' };

  // The agent: --tls_ca_file verifies the master and is the CA of its API's clients.
  const agent = await startAgent(t, { master: m.address, tls: { caFile: c.caFile, certFile: c.certFile, keyFile: c.keyFile }, flags: ['--tls_require_client_cert'] });
  assert.ok(agent.agentId !== undefined, 'registered with the master over wss');
  await assert.rejects(callApi(agent.url, health, undefined, client(c.caFile)), refusedAtHandshake, 'no client certificate');
  await assert.rejects(callApi(agent.url, health, undefined, client(c.caFile, foreign)), refusedAtHandshake, 'a certificate from another CA');
  const ok = await callApi(agent.url, health, undefined, client(c.caFile, own));
  assert.deepEqual([ok.status, ok.json], [200, { type: 'GET_HEALTH', get_health: { healthy: true } }]);
  assert.deepEqual(await plainCall(`${agent.ip}:${agent.port}`, '{"type":"GET_HEALTH"}'), [400, 'text/plain; charset=utf-8', PLAIN_ANSWER]);
  const logged = await eventually(() => agent.daemon.records.find((r) => r.msg === 'TLS handshake failed' && /certificate/i.test(String(r['error']))), undefined, 50, 'the refusal logged');
  assert.match(String(logged['remote']), /^127\.0\.0\.1:\d+$/);

  // The scheduler: the same flag and meaning on its HTTP API.
  const spec = join(dir, 'service.yml');
  // A pod no agent here can hold (64 cpus): nothing is launched, so no task outlives the test.
  writeFileSync(spec, 'name: hello\npods:\n  hello:\n    count: 1\n    tasks:\n      server: { cmd: "exec sleep 1000", cpus: 64, memory: 16 }\n');
  const s = await startScheduler(t, { master: m.address, spec, flags: [`--tls_cert_file=${c.certFile}`, `--tls_key_file=${c.keyFile}`, `--tls_ca_file=${c.caFile}`, '--tls_require_client_cert'] });
  const listening = await s.daemon.waitForMsg('listening');
  assert.deepEqual([listening['tls'], listening['requireClientCert'], listening['masterTls']], [true, true, true]);
  const url = `https://127.0.0.1:${s.port}/v1/health`;
  const get = (transport: ClientTransport): Promise<Response> => transport.fetch(url, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  await assert.rejects(get(client(c.caFile)), refusedAtHandshake, 'no client certificate');
  await assert.rejects(get(client(c.caFile, foreign)), refusedAtHandshake, 'a certificate from another CA');
  // Served: /v1/health answers with the SDK's codes (318 until subscribed, 20x while deploying).
  const served = await get(client(c.caFile, own));
  assert.ok(served.status === 318 || (served.status >= 200 && served.status < 300), `health ${served.status}`);
  const plain = await fetch(`http://127.0.0.1:${s.port}/v1/health`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.deepEqual([plain.status, await plain.text()], [400, PLAIN_ANSWER]);
  await s.daemon.waitForMsg('subscribed');

  // Refused at start: the flag without the CA it needs.
  const bad = new Daemon(AGENT_BIN, ['--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'bad')}`, `--tls_cert_file=${c.certFile}`, `--tls_key_file=${c.keyFile}`, '--tls_require_client_cert']);
  t.after(() => bad.stop());
  assert.deepEqual(await bad.exited, { code: 1, signal: null });
  assert.equal(bad.stderr, 'drydock-agent: --tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)\n');
});

/** One TLS handshake to 127.0.0.1:port with the client's options: the protocol and suite agreed, or the error. */
function handshake(port: number, caFile: string, options: ConnectionOptions): Promise<{ ok: true; protocol: string | null; cipher: string } | { ok: false; error: string }> {
  return new Promise((resolve) => {
    const s = tlsConnect({ port, host: '127.0.0.1', ca: readFileSync(caFile, 'utf8'), servername: 'localhost', ...options }, () => {
      resolve({ ok: true, protocol: s.getProtocol(), cipher: s.getCipher().name });
      s.end();
    });
    s.on('error', (e) => resolve({ ok: false, error: e.message }));
    s.setTimeout(EVENT_DEADLINE_MS, () => s.destroy(new Error(`no handshake within ${EVENT_DEADLINE_MS} ms`)));
  });
}

/** A request whose headers are far over Node's limit, over TLS: everything the port answers until it closes (bounded). */
function oversizedOverTls(port: number, caFile: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ port, host: '127.0.0.1', ca: readFileSync(caFile, 'utf8'), servername: 'localhost' }, () => s.write(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(300_000)}\r\n\r\n`));
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

test('the master, the agent API and drydock-scheduler offer AEAD suites only (a CBC-only TLS 1.2 client is refused), answer oversized headers with 431 over TLS, and --tls_ciphers changes the suites', { timeout: 360_000 }, async (t) => {
  const { c, dir } = pki(t);
  const tlsFiles = [`--tls_cert_file=${c.certFile}`, `--tls_key_file=${c.keyFile}`];
  const CBC = { ciphers: 'ECDHE-ECDSA-AES128-SHA:ECDHE-RSA-AES128-SHA', maxVersion: 'TLSv1.2' } as const;
  const AEAD = { ciphers: 'ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256', maxVersion: 'TLSv1.2' } as const;
  const spec = join(dir, 'service.yml');
  // A pod no agent here can hold (64 cpus): nothing is launched, so no task outlives the test.
  writeFileSync(spec, 'name: hello\npods:\n  hello:\n    count: 1\n    tasks:\n      server: { cmd: "exec sleep 1000", cpus: 64, memory: 16 }\n');
  /** The three daemons, serving TLS with `extra` flags; the agent and the scheduler follow the master. */
  const daemons = async (extra: string[], hostname: string): Promise<Array<[string, number]>> => {
    const m = await startMaster(t, { tls: { certFile: c.certFile, keyFile: c.keyFile }, flags: extra });
    const agent = await startAgent(t, { master: m.address, hostname, tls: { caFile: c.caFile, certFile: c.certFile, keyFile: c.keyFile }, flags: extra });
    const s = await startScheduler(t, { master: m.address, spec, workDir: tempDir(t), flags: [...tlsFiles, `--tls_ca_file=${c.caFile}`, ...extra] });
    return [['master', m.port], ['agent', agent.port], ['scheduler', s.port]];
  };

  for (const [name, port] of await daemons([], 'default-suites')) {
    const cbc = await handshake(port, c.caFile, CBC);
    assert.equal(cbc.ok, false, `${name}: a CBC-only client must be refused: ${JSON.stringify(cbc)}`);
    if (!cbc.ok) assert.match(cbc.error, /handshake failure/, name);
    assert.deepEqual(await handshake(port, c.caFile, AEAD), { ok: true, protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES128-GCM-SHA256' }, name);
    const tls13 = await handshake(port, c.caFile, { minVersion: 'TLSv1.3' });
    assert.ok(tls13.ok && tls13.protocol === 'TLSv1.3', `${name}: ${JSON.stringify(tls13)}`);
    const old = await handshake(port, c.caFile, { minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT:@SECLEVEL=0' });
    assert.equal(old.ok, false, `${name}: TLS 1.1 must be refused`);
    // The answer arrives: Node's own one used to be lost in the TLS layer (the connection dropped).
    const big = await oversizedOverTls(port, c.caFile);
    assert.match(big, /^HTTP\/1\.1 431 Request Header Fields Too Large\r\n/, `${name}: ${JSON.stringify(big.slice(0, 100))}`);
  }

  // --tls_ciphers: the CBC client is served, the AEAD one is not; TLS 1.3 keeps OpenSSL's suites.
  for (const [name, port] of await daemons(['--tls_ciphers=ECDHE-ECDSA-AES128-SHA'], 'cbc-suites')) {
    assert.deepEqual(await handshake(port, c.caFile, CBC), { ok: true, protocol: 'TLSv1.2', cipher: 'ECDHE-ECDSA-AES128-SHA' }, name);
    assert.equal((await handshake(port, c.caFile, AEAD)).ok, false, name);
    assert.equal((await handshake(port, c.caFile, { minVersion: 'TLSv1.3' })).ok, true, name);
  }

  // A list OpenSSL cannot use stops the start, naming the flag.
  const bad = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${tempDir(t)}`, ...tlsFiles, '--tls_ciphers=NOT-A-SUITE']);
  t.after(() => bad.stop());
  assert.equal((await bad.exited).code, 1);
  assert.match(bad.stderr, /^drydock-master: --tls_ciphers 'NOT-A-SUITE' is no cipher list OpenSSL can use: .*no cipher match\n$/);
});

test('a key readable by others stops the start (exit 1, the message names the file): master and agent', { timeout: 60_000 }, async (t) => {
  const { c, dir } = pki(t);
  const openKey = join(dir, 'open-key.pem');
  copyFileSync(c.keyFile, openKey);
  chmodSync(openKey, 0o644);
  const work = tempDir(t);
  const master = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${join(work, 'm')}`, `--tls_cert_file=${c.certFile}`, `--tls_key_file=${openKey}`]);
  t.after(() => master.stop());
  assert.deepEqual(await master.exited, { code: 1, signal: null });
  assert.equal(master.stderr, `drydock-master: --tls_key_file ${openKey} is readable by others (mode 0644); run chmod 600 on it\n`);
  assert.equal(master.records.some((r) => r.msg === 'listening'), false);

  const agent = new Daemon(AGENT_BIN, ['--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${join(work, 'a')}`, '--resources=cpus:1;mem:128;disk:128;ports:[31000-31001]', `--tls_cert_file=${c.certFile}`, `--tls_key_file=${openKey}`]);
  t.after(() => agent.stop());
  assert.deepEqual(await agent.exited, { code: 1, signal: null });
  assert.equal(agent.stderr, `drydock-agent: --tls_key_file ${openKey} is readable by others (mode 0644); run chmod 600 on it\n`);

  // A key that is not the certificate's is refused at start too, naming both files.
  const other = makeCertificates(dir, 'third');
  const mismatch = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${join(work, 'm2')}`, `--tls_cert_file=${c.certFile}`, `--tls_key_file=${other.keyFile}`]);
  t.after(() => mismatch.stop());
  assert.deepEqual(await mismatch.exited, { code: 1, signal: null });
  assert.match(mismatch.stderr, new RegExp(`--tls_cert_file ${c.certFile} and --tls_key_file ${other.keyFile} cannot serve TLS: .*key values mismatch`));
});

async function leaderOf(masters: readonly MasterHandle[]): Promise<MasterHandle> {
  return eventually(() => masters.find((m) => m.daemon.running && m.daemon.records.some((r) => r.msg === 'term started')), undefined, 50, 'a leader');
}

test('HA over etcd with TLS and client certificates: TLS masters elect a leader; an agent given both masters finds it over https and registers over wss; an agent given etcd reads it with its etcd certificate', { skip: skipEtcd, timeout: 420_000 }, async (t) => {
  const { c } = pki(t);
  const etcd = await startEtcd(t, { tls: { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, clientCertAuth: true, clientCertFile: c.clientCertFile, clientKeyFile: c.clientKeyFile } });
  const prefix = '/tls-ha';
  const flags = [`--etcd=etcd://${etcd.endpoint}${prefix}`, `--etcd_ca_file=${c.caFile}`, `--etcd_cert_file=${c.clientCertFile}`, `--etcd_key_file=${c.clientKeyFile}`, '--etcd_ttl=2secs'];
  const tls = { certFile: c.certFile, keyFile: c.keyFile };
  const a = await startMaster(t, { flags, tls });
  const b = await startMaster(t, { flags, tls });
  const leader = await leaderOf([a, b]);
  const standby = leader === a ? b : a;
  // The election is in etcd, read over TLS with the test's own client.
  const keys = await etcd.client().getAll().prefix(`${prefix}/election/master/`).keys();
  assert.equal(keys.length, 2);

  const agent = await startAgent(t, { master: `${standby.address},${leader.address}`, tls: { caFile: c.caFile } });
  const r = await callApi(leader.url, { type: 'GET_AGENTS' }, undefined, client(c.caFile));
  assert.deepEqual((r.json as Agents).get_agents.agents.map((x) => x.agent_info.id.value), [agent.agentId]);
  assert.ok(agent.daemon.records.some((x) => x.msg === 'leading master' && x['master'] === leader.address), 'found through the standby\'s /redirect over https');

  // An agent given etcd itself reads the election over TLS with its own etcd client certificate.
  const etcdTls = [`--etcd_ca_file=${c.caFile}`, `--etcd_cert_file=${c.clientCertFile}`, `--etcd_key_file=${c.clientKeyFile}`];
  const viaEtcd = await startAgent(t, { master: `etcd://${etcd.endpoint}${prefix}`, hostname: 'via-etcd', tls: { caFile: c.caFile }, flags: etcdTls });
  assert.ok(viaEtcd.daemon.records.some((x) => x.msg === 'leading master' && x['master'] === leader.address), 'found through etcd over TLS');
  // Without the certificate etcd requires, it finds no leader and says why.
  const noEtcdCert = await startAgent(t, { master: `etcd://${etcd.endpoint}${prefix}`, hostname: 'no-etcd-cert', tls: { caFile: c.caFile }, flags: [`--etcd_ca_file=${c.caFile}`], waitRegistered: false });
  const lost = await noEtcdCert.daemon.waitForMsg('no leading master found');
  assert.equal(lost['scheme'], 'https');
  assert.match(String(lost['error']), /^etcd 127\.0\.0\.1:\d+: fetch failed/);

  // A master without the client certificate cannot reach this etcd, and says so.
  const work = mkdtempSync(join(tmpdir(), 'drydock-master-'));
  const noCert = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${work}`, `--etcd=etcd://${etcd.endpoint}${prefix}`, `--etcd_ca_file=${c.caFile}`]);
  t.after(async () => {
    await noCert.stop();
    removeDir(work);
  });
  const warn = await noCert.waitForMsg('etcd not reachable yet');
  assert.match(String(warn['error']), /--etcd_ca_file is the CA of its certificate, and whether it requires a client certificate \(--etcd_cert_file\)/);
});

test('etcd user and password: a master with --etcd_user leads and an agent with it finds the leader; a wrong password or a password file readable by others stops the master\'s start (the agent says why and retries; an open file stops it too)', { skip: skipEtcdctl, timeout: 540_000 }, async (t) => {
  const { c, dir } = pki(t);
  const etcd = await startEtcd(t, { tls: { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile } });
  const prefix = '/auth-test';
  const ctl = etcdctl(etcd.endpoint, c.caFile);
  // etcd's own users: root to enable auth, and a drydock user with readwrite on the prefix only.
  addDrydockUsers(ctl, prefix);
  ctl('user', 'add', 'outsider:out-secret');
  ctl('auth', 'enable');
  const secret = (name: string, text: string, mode: number): string => fileWithMode(join(dir, name), text, mode);
  const base = [`--etcd=etcd://${etcd.endpoint}${prefix}`, `--etcd_ca_file=${c.caFile}`, '--etcd_ttl=2secs'];

  const pw = secret('pw', 'dd-secret\n', 0o600);
  const m = await startMaster(t, { flags: [...base, '--etcd_user=drydock', `--etcd_password_file=${pw}`] });
  await leaderOf([m]);
  assert.equal((await callApi(m.url, { type: 'GET_HEALTH' })).status, 200);

  // Agents read the election as an etcd user too, with the same flags.
  const master = `etcd://${etcd.endpoint}${prefix}`;
  const agentEtcd = [`--etcd_ca_file=${c.caFile}`, '--etcd_user=drydock'];
  const agent = await startAgent(t, { master, hostname: 'etcd-user', flags: [...agentEtcd, `--etcd_password_file=${pw}`] });
  assert.ok(agent.daemon.records.some((x) => x.msg === 'leading master' && x['master'] === m.address));
  // A wrong password: said at error, naming the flags, never a password; the agent keeps trying.
  const wrong = await startAgent(t, { master, hostname: 'etcd-wrong', flags: [...agentEtcd, `--etcd_password_file=${secret('agent-wrong', 'not-it\n', 0o600)}`], waitRegistered: false });
  const refusedLine = await wrong.daemon.waitForMsg('etcd refused the agent');
  assert.match(String(refusedLine['error']), /^etcd refused user 'drydock': .*authentication failed.*\(check --etcd_user and --etcd_password_file\)$/);
  assert.doesNotMatch(wrong.daemon.stdout.join('\n'), /dd-secret|not-it/, 'no password in the log');
  // No user: etcd says it wants one.
  const anonymous = await startAgent(t, { master, hostname: 'etcd-anonymous', flags: [`--etcd_ca_file=${c.caFile}`], waitRegistered: false });
  assert.equal(String((await anonymous.daemon.waitForMsg('etcd refused the agent'))['error']), 'etcd requires authentication: give --etcd_user and --etcd_password_file');
  // A password file others may read stops the agent's start, as the master's.
  const openPw = secret('agent-open', 'dd-secret\n', 0o644);
  const openAgent = new Daemon(AGENT_BIN, [`--master=${master}`, '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'agent-open-work')}`, ...agentEtcd, `--etcd_password_file=${openPw}`]);
  t.after(() => openAgent.stop());
  assert.deepEqual(await openAgent.exited, { code: 1, signal: null });
  assert.equal(openAgent.stderr, `drydock-agent: --etcd_password_file ${openPw} is readable by others (mode 0644); run chmod 600 on it\n`);

  const refused = async (flags: string[], stderr: RegExp): Promise<void> => {
    const work = mkdtempSync(join(tmpdir(), 'drydock-master-'));
    const d = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${work}`, ...flags]);
    t.after(async () => {
      await d.stop();
      removeDir(work);
    });
    const exit = (await d.exitWithin()) ?? 'running';
    assert.deepEqual(exit, { code: 1, signal: null }, `${flags.join(' ')}: ${d.stderr}`);
    assert.match(d.stderr, stderr);
    assert.doesNotMatch(d.stderr, /dd-secret|not-it|out-secret/, 'no password in the message');
  };
  await refused([...base, '--etcd_user=drydock', `--etcd_password_file=${secret('wrong', 'not-it\n', 0o600)}`], /^drydock-master: etcd refused user 'drydock': .*authentication failed.*\(check --etcd_user and --etcd_password_file\)$/m);
  const open = secret('open', 'dd-secret\n', 0o644);
  await refused([...base, '--etcd_user=drydock', `--etcd_password_file=${open}`], new RegExp(`^drydock-master: --etcd_password_file ${open} is readable by others`, 'm'));
  await refused([...base, '--etcd_user=outsider', `--etcd_password_file=${secret('out', 'out-secret', 0o600)}`], /^drydock-master: etcd user 'outsider' may not read \/auth-test\/: grant it a role/m);
  await refused(base, /^drydock-master: etcd requires authentication: give --etcd_user and --etcd_password_file$/m);
});

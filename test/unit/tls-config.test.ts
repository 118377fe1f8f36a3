/**
 * TLS and credentials as configuration, pure: the master's etcd client options from the etcd
 * security flags (with a fake file reader), the agent's TLS flags and files, and the hints the
 * agent's session adds to a transport mismatch.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, copyFileSync } from 'node:fs';
import { join } from 'node:path';
import { EtcdAuthenticationFailedError, EtcdPermissionDeniedError, GRPCInvalidArgumentError, GRPCUnavailableError } from 'etcd3';
import { classifyEtcdError, etcdClientOptions, type FileReader } from '../../master/process/etcd-client.js';
import type { EtcdAuthConfig } from '../../master/process/config.js';
import { resolveAgentFlags, agentConfig } from '../../agent/config.js';
import { loadAgentTls } from '../../agent/tls.js';
import { transportHint } from '../../agent/session.js';
import { makeCertificates } from '../../scripts/harness/certs.js';
import { tempDir } from '../helpers/daemons.js';
import { DEFAULT_TLS_CIPHERS } from '../../io/tls-server.js';

import { CA, CERT, KEY, reader } from '../helpers/file-reader.js';

const none: EtcdAuthConfig = { caFile: undefined, certFile: undefined, keyFile: undefined, user: undefined, passwordFile: undefined };

test('etcdClientOptions: TLS files make https endpoints and gRPC credentials, a user makes auth; errors name the flag and file', () => {
  const files = { '/ca.pem': CA, '/c.pem': CERT, '/k.pem': KEY, '/pw': 'hunter2\n', '/pw2': 'a\nb\n', '/empty': '\n', '/junk': 'nope' };
  const read = reader(files, ['/ca.pem', '/c.pem', '/k.pem', '/pw']);
  const readOpen = reader(files, ['/ca.pem', '/c.pem']);
  const eps = ['127.0.0.1:2379', 'e2:2379'];
  type Want = { hosts: string[]; root?: string | null; chain?: string; key?: string; auth?: { username: string; password: string } } | RegExp;
  const cases: Array<[string, Partial<EtcdAuthConfig>, FileReader, Want]> = [
    ['nothing: plain http', {}, read, { hosts: ['http://127.0.0.1:2379', 'http://e2:2379'] }],
    ['a CA: https and its root certificate', { caFile: '/ca.pem' }, readOpen, { hosts: ['https://127.0.0.1:2379', 'https://e2:2379'], root: CA }],
    ['CA and client certificate', { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' }, readOpen, { hosts: ['https://127.0.0.1:2379', 'https://e2:2379'], root: CA, chain: CERT, key: KEY }],
    ['a client certificate alone: https with the system CAs', { certFile: '/c.pem', keyFile: '/k.pem' }, readOpen, { hosts: ['https://127.0.0.1:2379', 'https://e2:2379'], root: null, chain: CERT, key: KEY }],
    ['user and password, the newline dropped', { user: 'drydock', passwordFile: '/pw2x' }, reader({ '/pw2x': 's3cret\n' }), { hosts: ['http://127.0.0.1:2379', 'http://e2:2379'], auth: { username: 'drydock', password: 's3cret' } }],
    ['TLS and a user together', { caFile: '/ca.pem', user: 'u', passwordFile: '/pwok' }, reader({ '/ca.pem': CA, '/pwok': 'p' }), { hosts: ['https://127.0.0.1:2379', 'https://e2:2379'], root: CA, auth: { username: 'u', password: 'p' } }],
    ['the key readable by others', { caFile: '/ca.pem', certFile: '/c.pem', keyFile: '/k.pem' }, read, /^--etcd_key_file \/k\.pem is readable by others/],
    ['the password file readable by others', { user: 'u', passwordFile: '/pw' }, read, /^--etcd_password_file \/pw is readable by others/],
    ['a missing CA', { caFile: '/nope.pem' }, read, /^--etcd_ca_file \/nope\.pem cannot be read: no such file$/],
    ['a CA that is no PEM', { caFile: '/junk' }, read, /^--etcd_ca_file \/junk holds no PEM certificate$/],
    ['a key that is no PEM', { certFile: '/c.pem', keyFile: '/junk' }, readOpen, /^--etcd_key_file \/junk holds no PEM private key$/],
    ['an empty password', { user: 'u', passwordFile: '/empty' }, read, /^--etcd_password_file \/empty is empty$/],
    ['a password of two lines', { user: 'u', passwordFile: '/pw2' }, read, /^--etcd_password_file \/pw2 holds more than one line$/],
  ];
  for (const [name, auth, rd, want] of cases) {
    const r = etcdClientOptions(eps, { ...none, ...auth }, rd);
    if (want instanceof RegExp) {
      assert.equal(r.ok, false, name);
      if (!r.ok) {
        assert.match(r.error, want, name);
        assert.doesNotMatch(r.error, /hunter2|s3cret/, `${name}: no secret in the message`);
      }
      continue;
    }
    assert.ok(r.ok, `${name}: ${r.ok ? '' : r.error}`);
    if (!r.ok) continue;
    const o = r.options;
    assert.deepEqual(o.hosts, want.hosts, name);
    if (want.root === undefined) assert.equal(o.credentials, undefined, name);
    else {
      assert.equal(want.root === null ? o.credentials?.rootCertificate : o.credentials?.rootCertificate.toString(), want.root ?? undefined, name);
      assert.equal(o.credentials?.certChain?.toString(), want.chain, name);
      assert.equal(o.credentials?.privateKey?.toString(), want.key, name);
    }
    assert.deepEqual(o.auth, want.auth, name);
  }
});

test('classifyEtcdError: a refused user or permission stops the start with the flags to check; an unreachable etcd is waited for, with a TLS hint', () => {
  const user: EtcdAuthConfig = { ...none, user: 'dd', passwordFile: '/pw' };
  const tls: EtcdAuthConfig = { ...none, caFile: '/ca.pem' };
  const cases: Array<[string, unknown, EtcdAuthConfig, 'refused' | 'unreachable', RegExp]> = [
    ['wrong password', new EtcdAuthenticationFailedError('3 INVALID_ARGUMENT: etcdserver: authentication failed, invalid user ID or password'), user, 'refused', /^etcd refused user 'dd': .*invalid user ID or password \(check --etcd_user and --etcd_password_file\)$/],
    ['no role on the prefix', new EtcdPermissionDeniedError('7 PERMISSION_DENIED: etcdserver: permission denied'), user, 'refused', /^etcd user 'dd' may not read \/drydock\/: grant it a role .*readwrite \/drydock\/ --prefix=true/],
    ['auth on, no user given', new GRPCInvalidArgumentError('3 INVALID_ARGUMENT: etcdserver: user name is empty'), none, 'refused', /^etcd requires authentication: give --etcd_user and --etcd_password_file$/],
    ['TLS client, handshake fails', new GRPCUnavailableError('14 UNAVAILABLE: No connection established. Last error: null. Resolution note: '), tls, 'unreachable', /Last error: null\.; if it is up, check that it serves TLS, that --etcd_ca_file is the CA/],
    ['plain client to a TLS etcd', new GRPCUnavailableError('14 UNAVAILABLE: No connection established. Last error: null. Resolution note: '), none, 'unreachable', /if it is up and serves TLS, give --etcd_ca_file$/],
    ['something else', new Error('no answer from etcd within 10000 ms'), none, 'unreachable', /^no answer from etcd within 10000 ms$/],
  ];
  for (const [name, e, auth, kind, want] of cases) {
    const r = classifyEtcdError(e, auth, '/drydock');
    assert.equal(r.kind, kind, name);
    assert.match('error' in r ? r.error : '', want, name);
  }
});

test('agent TLS flags: cert and key go together; the files are read with the key mode checked', async (t) => {
  const half = resolveAgentFlags(['--master=m:5050', '--tls_cert_file=/c.pem'], {});
  assert.deepEqual(half, { kind: 'error', error: '--tls_cert_file and --tls_key_file go together' });
  const dir = tempDir(t);
  const c = makeCertificates(dir);
  const r = resolveAgentFlags(['--master=m:5050', `--tls_cert_file=${c.certFile}`, `--tls_key_file=${c.keyFile}`, '--ip=127.0.0.1'], { DRYDOCK_TLS_CA_FILE: c.caFile });
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  const config = await agentConfig(r.values, { primaryIpv4: async () => '127.0.0.1', facts: async () => ({ cpus: 1, memBytes: 2 ** 30, diskBytes: 2 ** 34 }) });
  assert.deepEqual(config.tls, { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });

  const both = loadAgentTls(config.tls);
  assert.ok(both.ok && both.tls.server !== undefined && both.tls.client?.ca !== undefined && both.tls.client.cert === both.tls.server.cert, 'one certificate for both roles');
  const serverOnly = loadAgentTls({ certFile: c.certFile, keyFile: c.keyFile, caFile: undefined, requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });
  assert.ok(serverOnly.ok && serverOnly.tls.server !== undefined && serverOnly.tls.client === undefined, 'a certificate alone does not make the master connection TLS');
  const clientOnly = loadAgentTls({ certFile: undefined, keyFile: undefined, caFile: c.caFile, requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });
  assert.ok(clientOnly.ok && clientOnly.tls.server === undefined && clientOnly.tls.client?.cert === undefined);
  const openKey = join(dir, 'open-key.pem');
  copyFileSync(c.keyFile, openKey);
  chmodSync(openKey, 0o644);
  const refused = loadAgentTls({ certFile: c.certFile, keyFile: openKey, caFile: c.caFile, requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });
  assert.deepEqual(refused, { ok: false, error: `--tls_key_file ${openKey} is readable by others (mode 0644); run chmod 600 on it` });
});

test('transportHint: a 400 on plain ws:// suggests --tls_ca_file, a TLS error on wss:// suggests the master is plain, anything else gets no hint', () => {
  const cases: Array<[string, boolean, RegExp | undefined]> = [
    ['Unexpected server response: 400', false, /--tls_ca_file/],
    ['Unexpected server response: 400', true, undefined],
    ['Unexpected server response: 401', false, undefined],
    ['write EPROTO 40E7:error:0A00010B:SSL routines:ssl3_get_record:wrong version number', true, /may not serve TLS/],
    ['read ECONNRESET', true, /may not serve TLS/],
    ['connect ECONNREFUSED 127.0.0.1:5050', true, undefined],
    ['self-signed certificate in certificate chain', true, undefined],
  ];
  for (const [error, tls, want] of cases) {
    const h = transportHint(error, tls) as { hint?: string };
    if (want === undefined) assert.equal(h.hint, undefined, `${error} (tls ${tls})`);
    else assert.match(h.hint ?? '', want, `${error} (tls ${tls})`);
  }
});

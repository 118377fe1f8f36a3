/**
 * Reading the election from a secured etcd, as the agent does with --master=etcd://...: the
 * etcd flags' files (fake reader), what etcd's JSON gateway answers mean (a table), and the
 * user's token (fake fetch): asked for once, sent as Authorization, asked for again when etcd
 * calls it invalid.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { classifyEtcdAnswer, endpointOrder, EtcdGateway, findLeader, type EtcdAccess, type Fetch } from '../../shared/detection.js';
import { etcdAuthProblem, loadEtcdAccess, NO_ETCD_AUTH, readEtcdSecrets, type EtcdAuthFiles, type FileReader } from '../../io/etcd-access.js';

import { CA, CERT, KEY, reader } from '../helpers/file-reader.js';

test('readEtcdSecrets: the master\'s checks: certificates any mode, the key and password not readable by others, one line of password', () => {
  const files = { '/ca.pem': CA, '/c.pem': CERT, '/k.pem': KEY, '/pw': 'hunter2\n', '/pw2': 'a\nb\n', '/empty': '\n', '/junk': 'nope' };
  const read = reader(files, ['/ca.pem', '/c.pem']);
  const readOpen = reader(files, ['/ca.pem', '/c.pem', '/k.pem', '/pw']);
  type Want = { tls: boolean; ca?: string; cert?: string; user?: { name: string; password: string } } | string;
  const cases: Array<[string, Partial<EtcdAuthFiles>, FileReader, Want]> = [
    ['nothing', {}, read, { tls: false }],
    ['a CA', { caFile: '/ca.pem' }, read, { tls: true, ca: CA }],
    ['a client certificate alone (system CAs)', { certFile: '/c.pem', keyFile: '/k.pem' }, read, { tls: true, cert: CERT }],
    ['a user', { user: 'dd', passwordFile: '/pw' }, read, { tls: false, user: { name: 'dd', password: 'hunter2' } }],
    ['a key readable by others', { certFile: '/c.pem', keyFile: '/k.pem' }, readOpen, '--etcd_key_file /k.pem is readable by others (mode 0644); run chmod 600 on it'],
    ['a password file readable by others', { user: 'dd', passwordFile: '/pw' }, readOpen, '--etcd_password_file /pw is readable by others (mode 0644); run chmod 600 on it'],
    ['a missing CA', { caFile: '/nope' }, read, '--etcd_ca_file /nope cannot be read: no such file'],
    ['a CA that is no PEM', { caFile: '/junk' }, read, '--etcd_ca_file /junk holds no PEM certificate'],
    ['a certificate that is no PEM', { certFile: '/junk', keyFile: '/k.pem' }, read, '--etcd_cert_file /junk holds no PEM certificate'],
    ['a key that is no PEM', { certFile: '/c.pem', keyFile: '/junk' }, read, '--etcd_key_file /junk holds no PEM private key'],
    ['two lines of password', { user: 'dd', passwordFile: '/pw2' }, read, '--etcd_password_file /pw2 holds more than one line'],
    ['an empty password', { user: 'dd', passwordFile: '/empty' }, read, '--etcd_password_file /empty is empty'],
  ];
  for (const [name, given, r, want] of cases) {
    const got = readEtcdSecrets({ ...NO_ETCD_AUTH, ...given }, r);
    if (typeof want === 'string') {
      assert.deepEqual(got, { ok: false, error: want }, name);
      assert.doesNotMatch(want, /hunter2/);
      continue;
    }
    assert.ok(got.ok, name);
    assert.deepEqual(got.secrets, { tls: want.tls, ca: want.ca, cert: want.cert, key: want.cert === undefined ? undefined : KEY, user: want.user }, name);
  }
  // The access: https with TLS files, http without.
  const plain = loadEtcdAccess({ ...NO_ETCD_AUTH, user: 'dd', passwordFile: '/pw' }, read);
  assert.ok(plain.ok && plain.access.scheme === 'http' && plain.access.user?.name === 'dd');
  const tls = loadEtcdAccess({ ...NO_ETCD_AUTH, caFile: '/ca.pem' }, read);
  assert.ok(tls.ok && tls.access.scheme === 'https' && tls.access.user === undefined);
});

test('etcdAuthProblem: pairs go together, and the flags need etcd', () => {
  const cases: Array<[Partial<EtcdAuthFiles>, boolean, string | undefined]> = [
    [{}, false, undefined],
    [{ caFile: '/ca' }, true, undefined],
    [{ certFile: '/c' }, true, '--etcd_cert_file and --etcd_key_file go together'],
    [{ keyFile: '/k' }, true, '--etcd_cert_file and --etcd_key_file go together'],
    [{ user: 'dd' }, true, '--etcd_user and --etcd_password_file go together'],
    [{ passwordFile: '/pw' }, true, '--etcd_user and --etcd_password_file go together'],
    [{ caFile: '/ca' }, false, '--etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://...'],
  ];
  for (const [given, inUse, want] of cases) assert.equal(etcdAuthProblem({ ...NO_ETCD_AUTH, ...given }, inUse, '--master=etcd://...'), want, JSON.stringify(given));
});

test('classifyEtcdAnswer: what etcd\'s gateway refusals mean, naming the flags to check and never the password', () => {
  const err = (e: string, code: number): string => JSON.stringify({ error: e, message: e, code });
  const cases: Array<[number, string, string | undefined, 'refused' | 'unreachable', RegExp]> = [
    [400, err('etcdserver: authentication failed, invalid user ID or password', 3), 'dd', 'refused', /^etcd refused user 'dd': etcdserver: authentication failed, invalid user ID or password \(check --etcd_user and --etcd_password_file\)$/],
    [400, err('etcdserver: user name is empty', 3), undefined, 'refused', /^etcd requires authentication: give --etcd_user and --etcd_password_file$/],
    [403, err('etcdserver: permission denied', 7), 'dd', 'refused', /^etcd user 'dd' may not read \/dd\/election\/: grant it a role with read on that prefix \(etcdctl role grant-permission ROLE read \/dd\/election\/ --prefix=true\)$/],
    [400, 'CommonName of client sending a request against gateway will be ignored and not used as expected\n', 'dd', 'refused', /give --etcd_cert_file a certificate without a CN/],
    [400, err('etcdserver: authentication is not enabled', 9), 'dd', 'refused', /leave out --etcd_user/],
    [503, err('etcdserver: request timed out', 14), undefined, 'unreachable', /^etcd answered the range request with HTTP 503: etcdserver: request timed out$/],
    [404, '404 page not found', undefined, 'unreachable', /HTTP 404: 404 page not found/],
  ];
  for (const [status, text, user, kind, want] of cases) {
    const r = classifyEtcdAnswer(status, text, user, '/dd', 'range');
    assert.equal(r.kind, kind, text);
    assert.match((r as { error: string }).error, want);
  }
});

/** A fake etcd gateway: a user 'dd' with password 'pw', tokens it may expire, a leader under /dd. */
function fakeEtcd(o: { leader?: boolean; down?: readonly string[] } = {}): { fetch: Fetch; calls: string[]; expire(): void } {
  const calls: string[] = [];
  let valid = new Set<string>();
  let n = 0;
  const value = Buffer.from(JSON.stringify({ address: { ip: '10.0.0.9', port: 5050 } })).toString('base64');
  const answer = (status: number, body: unknown) => ({ ok: status === 200, status, headers: { get: () => null }, text: async () => JSON.stringify(body) });
  const fetchFn: Fetch = async (url, init) => {
    const u = new URL(url);
    calls.push(`${u.protocol}//${u.host}${u.pathname}${init.headers?.['authorization'] === undefined ? '' : ` token=${init.headers['authorization']}`}`);
    if (o.down?.includes(u.host)) throw Object.assign(new TypeError('fetch failed'), { cause: { code: 'ECONNREFUSED' } });
    if (u.pathname === '/v3/auth/authenticate') {
      const b = JSON.parse(init.body ?? '{}') as { name?: string; password?: string };
      if (b.name !== 'dd' || b.password !== 'pw') return answer(400, { error: 'etcdserver: authentication failed, invalid user ID or password', code: 3 });
      const t = `tok${++n}`;
      valid.add(t);
      return answer(200, { token: t });
    }
    const token = init.headers?.['authorization'];
    if (token === undefined) return answer(400, { error: 'etcdserver: user name is empty', code: 3 });
    if (!valid.has(token)) return answer(401, { error: 'etcdserver: invalid auth token', code: 16 });
    return answer(200, o.leader === false ? { header: {} } : { header: {}, kvs: [{ key: 'x', value, create_revision: '7' }] });
  };
  return { fetch: fetchFn, calls, expire: () => (valid = new Set()) };
}

test('EtcdGateway: one authentication for many reads, the token sent as Authorization, a new one when etcd calls it invalid', async () => {
  const etcd = fakeEtcd();
  const access: EtcdAccess = { scheme: 'https', fetch: etcd.fetch, user: { name: 'dd', password: 'pw' } };
  const gw = new EtcdGateway(access);
  assert.deepEqual(await gw.leader(['e1:2379'], '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  assert.deepEqual(await gw.leader(['e1:2379'], '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  etcd.expire();
  assert.deepEqual(await gw.leader(['e1:2379'], '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  assert.deepEqual(etcd.calls, [
    'https://e1:2379/v3/auth/authenticate',
    'https://e1:2379/v3/kv/range token=tok1',
    'https://e1:2379/v3/kv/range token=tok1',
    'https://e1:2379/v3/kv/range token=tok1',
    'https://e1:2379/v3/auth/authenticate',
    'https://e1:2379/v3/kv/range token=tok2',
  ]);
  // findLeader takes the gateway for an etcd spec.
  assert.equal(await findLeader({ kind: 'etcd', endpoints: ['e1:2379'], prefix: '/dd' }, etcd.fetch, 1000, 'http', gw), '10.0.0.9:5050');
});

test('EtcdGateway: a down endpoint is skipped, a refusal ends the search, no leader is no leader', async () => {
  const down = fakeEtcd({ down: ['e1:2379'] });
  const gw = new EtcdGateway({ scheme: 'http', fetch: down.fetch, user: { name: 'dd', password: 'pw' } });
  assert.deepEqual(await gw.leader(['e1:2379', 'e2:2379'], '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  const allDown = await new EtcdGateway({ scheme: 'http', fetch: down.fetch, user: undefined }).leader(['e1:2379'], '/dd', 1000);
  assert.deepEqual(allDown, { kind: 'unreachable', error: 'etcd e1:2379: fetch failed (ECONNREFUSED)' });

  const wrong = fakeEtcd();
  const refused = await new EtcdGateway({ scheme: 'http', fetch: wrong.fetch, user: { name: 'dd', password: 'nope' } }).leader(['e1:2379', 'e2:2379'], '/dd', 1000);
  assert.equal(refused.kind, 'refused');
  assert.doesNotMatch((refused as { error: string }).error, /nope/, 'never the password');
  assert.deepEqual(wrong.calls, ['http://e1:2379/v3/auth/authenticate'], 'the second endpoint would refuse alike');

  const anonymous = await new EtcdGateway({ scheme: 'http', fetch: fakeEtcd().fetch, user: undefined }).leader(['e1:2379'], '/dd', 1000);
  assert.deepEqual(anonymous, { kind: 'refused', error: 'etcd requires authentication: give --etcd_user and --etcd_password_file' });

  const none = await new EtcdGateway({ scheme: 'http', fetch: fakeEtcd({ leader: false }).fetch, user: { name: 'dd', password: 'pw' } }).leader(['e1:2379'], '/dd', 1000);
  assert.deepEqual(none, { kind: 'none' });
});

test('EtcdGateway: every request requires a leader; a member without one passes the question on, and the member that answered is asked first next time', async () => {
  const value = Buffer.from(JSON.stringify({ address: { ip: '10.0.0.9', port: 5050 } })).toString('base64');
  const noLeader = new Set(['e1:2379']);
  const asked: string[] = [];
  const fetchFn: Fetch = async (url, init) => {
    const host = new URL(url).host;
    asked.push(host);
    // What etcd 3.4's gateway answers with Grpc-Metadata-Hasleader on a member cut off from its quorum.
    assert.equal(init.headers?.['grpc-metadata-hasleader'], 'true');
    const [status, body] = noLeader.has(host) ? [503, { error: 'etcdserver: no leader', message: 'etcdserver: no leader', code: 14 }] : [200, { header: {}, kvs: [{ key: 'x', value, create_revision: '7' }] }];
    return { ok: status === 200, status, headers: { get: () => null }, text: async () => JSON.stringify(body) };
  };
  const gw = new EtcdGateway({ scheme: 'http', fetch: fetchFn, user: undefined });
  const endpoints = ['e1:2379', 'e2:2379', 'e3:2379'];
  assert.deepEqual(await gw.leader(endpoints, '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  assert.deepEqual(asked.splice(0), ['e1:2379', 'e2:2379']);
  assert.deepEqual(await gw.leader(endpoints, '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  assert.deepEqual(asked.splice(0), ['e2:2379'], 'the member that answered, first');
  noLeader.add('e2:2379');
  assert.deepEqual(await gw.leader(endpoints, '/dd', 1000), { kind: 'leader', address: '10.0.0.9:5050' });
  assert.deepEqual(asked.splice(0), ['e2:2379', 'e1:2379', 'e3:2379']);
  noLeader.add('e3:2379');
  const none = await gw.leader(endpoints, '/dd', 1000);
  assert.deepEqual(none, { kind: 'unreachable', error: 'etcd answered the range request with HTTP 503: etcdserver: no leader' });
});

test('endpointOrder: the endpoint that answered last first, the others as given', () => {
  const cases: Array<[string[], string | undefined, string[]]> = [
    [['a', 'b', 'c'], undefined, ['a', 'b', 'c']],
    [['a', 'b', 'c'], 'b', ['b', 'a', 'c']],
    [['a', 'b', 'c'], 'c', ['c', 'a', 'b']],
    [['a', 'b', 'c'], 'z', ['a', 'b', 'c']],
    [[], 'a', []],
  ];
  for (const [endpoints, first, want] of cases) assert.deepEqual(endpointOrder(endpoints, first), want, `${first}`);
});

/**
 * The clients' credentials and TLS options (io/client-auth.ts, cli/access.ts): which
 * credential a flag or variable names, what a secret file may hold, https or http, how a 401 or
 * 403 is put to the operator and with which exit status, which redirects are followed; etcd's
 * TLS and user for `--master=etcd://...` (the --etcd_* flags and their variables, the files read
 * with the agent's checks, and why no leader was found). Tables of cases; one shell case reads
 * real files for the mode check.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentialFromSecretFile, credentialPlan, loadClientAccess, redirectTarget, type CredentialSources, type Given } from '../../io/client-auth.js';
import { cliAccessSources, cliEtcdFiles, cliEtcdProblem, loadCliEtcdAccess, type AccessFlags } from '../../cli/access.js';
import { etcdSearch, etcdTlsTrouble, masterScheme, noLeaderLine, resolveMaster, tlsTrouble } from '../../cli/client.js';
import type { EtcdLeaderRead } from '../../shared/detection.js';
import { CA, CERT, KEY, reader } from '../helpers/file-reader.js';
import { EXIT_FAILED, EXIT_FORBIDDEN, EXIT_UNAUTHENTICATED, WANTS_CREDENTIALS, accessRefusal, failurePrinted, type Answer, type Target } from '../../cli/service-api.js';
import { planPoll, showOutcome, verbOutcome } from '../../cli/plan.js';
import { plainPaint } from '../../cli/terminal.js';
import { schedulerUrl } from '../../scheduler/client.js';
import { PLAIN_TRANSPORT, clientTransport } from '../../io/transport.js';

const flag = (value: string, origin: string): Given => ({ value, origin, fromFlag: true });
const env = (value: string, origin: string): Given => ({ value, origin, fromFlag: false });

test('credentialPlan: flags over the environment, one answer from the environment, no principal without a secret', () => {
  const cases: Array<[string, CredentialSources, unknown]> = [
    ['nothing', {}, { kind: 'none' }],
    ['empty DRYDOCK_CREDENTIALS is unset', { inline: '' }, { kind: 'none' }],
    ['--principal and --secret_file', { principal: flag('ops', '--principal'), secretFile: flag('/s', '--secret_file') }, { kind: 'file', path: '/s', origin: '--secret_file', principal: 'ops' }],
    ['--secret_file alone (a whole credential in it)', { secretFile: flag('/s', '--secret_file') }, { kind: 'file', path: '/s', origin: '--secret_file', principal: undefined }],
    ['DRYDOCK_CREDENTIALS', { inline: 'ops:s3cret' }, { kind: 'inline', credential: { kind: 'basic', principal: 'ops', secret: 's3cret' } }],
    ['a secret with colons', { inline: 'ops:a:b' }, { kind: 'inline', credential: { kind: 'basic', principal: 'ops', secret: 'a:b' } }],
    ['a bearer token', { inline: 'Bearer tok-0123456789abcdef' }, { kind: 'inline', credential: { kind: 'bearer', token: 'tok-0123456789abcdef' } }],
    ['flags win over DRYDOCK_CREDENTIALS', { inline: 'ops:s3cret', principal: flag('viewer', '--principal'), secretFile: flag('/v', '--secret_file') }, { kind: 'file', path: '/v', origin: '--secret_file', principal: 'viewer' }],
    ['a flag principal with the env secret file', { principal: flag('ops', '--principal'), secretFile: env('/e', 'DRYDOCK_SECRET_FILE') }, { kind: 'file', path: '/e', origin: 'DRYDOCK_SECRET_FILE', principal: 'ops' }],
    ['DRYDOCK_PRINCIPAL and DRYDOCK_SECRET_FILE', { principal: env('ops', 'DRYDOCK_PRINCIPAL'), secretFile: env('/e', 'DRYDOCK_SECRET_FILE') }, { kind: 'file', path: '/e', origin: 'DRYDOCK_SECRET_FILE', principal: 'ops' }],
  ];
  for (const [name, sources, want] of cases) assert.deepEqual(credentialPlan(sources), { ok: true, value: want }, name);

  const refused: Array<[string, CredentialSources, RegExp]> = [
    ['--principal without a secret file', { principal: flag('ops', '--principal') }, /^--principal needs --secret_file FILE \(the file holding its secret\), or set DRYDOCK_CREDENTIALS=principal:secret$/],
    ['DRYDOCK_PRINCIPAL without DRYDOCK_SECRET_FILE', { principal: env('ops', 'DRYDOCK_PRINCIPAL') }, /^DRYDOCK_PRINCIPAL needs DRYDOCK_SECRET_FILE/],
    ['--principal and DRYDOCK_CREDENTIALS, no secret file', { principal: flag('ops', '--principal'), inline: 'ops:x' }, /^--principal needs --secret_file/],
    ['two answers in the environment', { inline: 'ops:x', secretFile: env('/e', 'DRYDOCK_SECRET_FILE') }, /^DRYDOCK_CREDENTIALS and DRYDOCK_SECRET_FILE are both set; unset one$/],
    ['no colon', { inline: 'opssecret' }, /^DRYDOCK_CREDENTIALS: expected 'principal:secret' or 'Bearer <token>'$/],
    ['empty principal', { inline: ':secret' }, /^DRYDOCK_CREDENTIALS: /],
    ['empty secret', { inline: 'ops:' }, /^DRYDOCK_CREDENTIALS: 'secret' must be/],
    ['a space in the secret', { inline: 'ops:a b' }, /^DRYDOCK_CREDENTIALS: 'secret' must be/],
  ];
  for (const [name, sources, want] of refused) {
    const r = credentialPlan(sources);
    assert.equal(r.ok, false, name);
    assert.match(r.ok ? '' : r.error, want, name);
  }
  const leak = credentialPlan({ inline: 'ops:has space' });
  assert.ok(!leak.ok && !leak.error.includes('has space'), 'the secret is not in the error');
});

test('credentialFromSecretFile: the secret alone with a principal, a whole credential without', () => {
  const ok: Array<[string, string, string | undefined, unknown]> = [
    ['the secret alone', 's3cret\n', 'ops', { kind: 'basic', principal: 'ops', secret: 's3cret' }],
    ['principal secret, same principal', 'ops s3cret\n', 'ops', { kind: 'basic', principal: 'ops', secret: 's3cret' }],
    ['principal secret, no principal given', 'ops s3cret', undefined, { kind: 'basic', principal: 'ops', secret: 's3cret' }],
    ['Mesos JSON', '{"principal":"ops","secret":"s3cret"}', undefined, { kind: 'basic', principal: 'ops', secret: 's3cret' }],
    ['a token file', '{"token":"tok-0123456789abcdef"}', undefined, { kind: 'bearer', token: 'tok-0123456789abcdef' }],
    ['a token file for a named principal', '{"token":"tok-0123456789abcdef"}', 'ops', { kind: 'bearer', token: 'tok-0123456789abcdef' }],
  ];
  for (const [name, text, principal, want] of ok) assert.deepEqual(credentialFromSecretFile(text, principal, '--secret_file /s'), { ok: true, value: want }, name);
  const bad: Array<[string, string, string | undefined, RegExp]> = [
    ['empty', ' \n', 'ops', /^--secret_file \/s is empty$/],
    ['a secret without a principal', 's3cret', undefined, /^--secret_file \/s holds a secret alone: give its principal with --principal/],
    ['another principal', 'viewer v', 'ops', /^--secret_file \/s is a credential of principal 'viewer', not of 'ops' \(--principal\)$/],
    ['three fields', 'a b c', 'ops', /^--secret_file \/s: expected 'principal secret', got 3 fields$/],
    ['broken JSON', '{"principal":', undefined, /^--secret_file \/s: not valid JSON/],
  ];
  for (const [name, text, principal, want] of bad) {
    const r = credentialFromSecretFile(text, principal, '--secret_file /s');
    assert.equal(r.ok, false, name);
    assert.match(r.ok ? '' : r.error, want, name);
  }
});

test('cli options: flags, then DRYDOCK_* variables; an empty variable is unset', () => {
  const e = { DRYDOCK_PRINCIPAL: 'envp', DRYDOCK_SECRET_FILE: '/env/s', DRYDOCK_TLS_CA_FILE: '/env/ca.pem', DRYDOCK_CREDENTIALS: 'a:b', DRYDOCK_TLS_CERT_FILE: '' };
  assert.deepEqual(cliAccessSources({}, e), {
    sources: { principal: { value: 'envp', origin: 'DRYDOCK_PRINCIPAL', fromFlag: false }, secretFile: { value: '/env/s', origin: 'DRYDOCK_SECRET_FILE', fromFlag: false }, inline: 'a:b' },
    tls: { caFile: '/env/ca.pem', certFile: undefined, keyFile: undefined },
  });
  const f = cliAccessSources({ principal: 'ops', secret_file: '/s', tls_ca_file: '/ca', tls_cert_file: '/c', tls_key_file: '/k' }, e);
  assert.deepEqual(f.sources.principal, { value: 'ops', origin: '--principal', fromFlag: true });
  assert.deepEqual(f.sources.secretFile, { value: '/s', origin: '--secret_file', fromFlag: true });
  assert.deepEqual(f.tls, { caFile: '/ca', certFile: '/c', keyFile: '/k' });
  assert.deepEqual(cliAccessSources({}, {}), { sources: { principal: undefined, secretFile: undefined, inline: undefined }, tls: { caFile: undefined, certFile: undefined, keyFile: undefined } });
});

test('the master: https when --master says so or TLS material is given; an explicit http:// wins', () => {
  const cases: Array<[string | undefined, Record<string, string>, boolean, 'http' | 'https', string]> = [
    [undefined, {}, false, 'http', '127.0.0.1:5050'],
    [undefined, {}, true, 'https', '127.0.0.1:5050'],
    ['m:5050', {}, true, 'https', 'm:5050'],
    ['https://m:5050/', {}, false, 'https', 'm:5050'],
    ['HTTPS://m:5050', {}, false, 'https', 'm:5050'],
    ['http://m:5050', {}, true, 'http', 'm:5050'],
    [undefined, { DRYDOCK_MASTER: 'https://m:5050' }, false, 'https', 'm:5050'],
    ['https://m1:5050,https://m2:5070', {}, false, 'https', 'm1:5050,m2:5070'],
    ['m1:5050, m2:5070', {}, false, 'http', 'm1:5050,m2:5070'],
    ['etcd://e:2379/drydock', {}, true, 'https', 'etcd://e:2379/drydock'],
  ];
  for (const [flagValue, e, tls, scheme, spec] of cases) {
    assert.equal(masterScheme(flagValue, e, tls), scheme, `${flagValue} ${JSON.stringify(e)} tls=${tls}`);
    assert.equal(resolveMaster(flagValue, e), spec, `${flagValue}`);
  }
});

const MASTER: Target = { kind: 'master', base: 'https://127.0.0.1:5050' };
const AS_OPS: Target = { ...MASTER, credential: "principal 'ops' (from DRYDOCK_CREDENTIALS)" };
const SCHEDULER: Target = { kind: 'scheduler', base: 'http://127.0.0.1:8088' };
const http = (status: number, body: string): Answer => ({ kind: 'http', status, statusText: '', body });
const FORBIDDEN = "Forbidden: principal 'viewer' may not drain_agents on agent S0 on agent-1 (127.0.0.2)";

test('401 and 403 from the master or a scheduler: the line and the exit status (3, 4)', () => {
  const cases: Array<[string, Target, number, string, { exitCode: number; err: string[] }]> = [
    ['no credential', MASTER, 401, '401 Unauthorized.', { exitCode: EXIT_UNAUTHENTICATED, err: [WANTS_CREDENTIALS] }],
    ['a refused credential', AS_OPS, 401, '401 Unauthorized.', { exitCode: EXIT_UNAUTHENTICATED, err: ["the master refused the credential of principal 'ops' (from DRYDOCK_CREDENTIALS) (401): wrong principal or secret, or an unknown token"] }],
    ['forbidden', AS_OPS, 403, FORBIDDEN, { exitCode: EXIT_FORBIDDEN, err: [`master answered 403: ${FORBIDDEN}`] }],
    ['forbidden, escapes made safe', AS_OPS, 403, 'Forbidden: \u001b[31mred', { exitCode: EXIT_FORBIDDEN, err: ['master answered 403: Forbidden: ?[31mred'] }],
  ];
  for (const [name, at, status, body, want] of cases) {
    assert.deepEqual(accessRefusal(at.kind, status, body, at.credential), { out: [], ...want }, name);
    assert.deepEqual(failurePrinted(at, { method: 'GET', path: '/v1/maintenance/plans' }, http(status, body)), { out: [], ...want }, `${name} (failurePrinted)`);
  }
  assert.equal(WANTS_CREDENTIALS, 'the master wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS');
  assert.equal(accessRefusal('master', 404, 'x', undefined), undefined);
  // The scheduler's API takes the same credential (issue 13): its 401 is said the same way, naming it.
  assert.deepEqual(failurePrinted(SCHEDULER, { method: 'GET', path: '/v1/plans' }, http(401, '401 Unauthorized.')), { exitCode: EXIT_UNAUTHENTICATED, out: [], err: ['the scheduler wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS'] });
  assert.deepEqual(accessRefusal('scheduler', 401, '401 Unauthorized.', "principal 'ops' (from DRYDOCK_CREDENTIALS)")?.err, ["the scheduler refused the credential of principal 'ops' (from DRYDOCK_CREDENTIALS) (401): wrong principal or secret, or an unknown token"]);
  assert.equal(accessRefusal('scheduler', 403, 'Forbidden', undefined)?.exitCode, EXIT_FORBIDDEN);
  assert.equal(accessRefusal('scheduler', 404, 'Plan x not found', undefined), undefined);
  assert.equal(failurePrinted(SCHEDULER, { method: 'GET', path: '/v1/plans/x' }, http(404, 'Plan x not found')).exitCode, EXIT_FAILED);
  assert.deepEqual(verbOutcome(MASTER, { method: 'POST', path: '/v1/maintenance/plans/k/interrupt' }, http(403, FORBIDDEN), false).exitCode, EXIT_FORBIDDEN);
});

test('plan show (--watch too) stops at a 401 or 403 with its exit status: waiting brings no credential', () => {
  const req = { method: 'GET', path: '/v1/maintenance/plans/k' } as const;
  const poll = planPoll(MASTER, req, http(401, '401 Unauthorized.'));
  assert.deepEqual(poll, { kind: 'fatal', error: WANTS_CREDENTIALS, exitCode: EXIT_UNAUTHENTICATED });
  assert.equal(planPoll(AS_OPS, req, http(403, FORBIDDEN)).kind, 'fatal');
  assert.equal(planPoll(MASTER, req, http(503, 'busy')).kind, 'transient');
  assert.equal(showOutcome(MASTER, 'k', req, http(403, FORBIDDEN), false, plainPaint).exitCode, EXIT_FORBIDDEN);
});

test('redirects: relative and protocol-relative Locations; never from https to http', () => {
  const from = 'https://127.0.0.1:5070/api/v1';
  const cases: Array<[string | null, { ok: true; url: string } | RegExp]> = [
    ['//127.0.0.1:5050/api/v1', { ok: true, url: 'https://127.0.0.1:5050/api/v1' }],
    ['https://m2:5050/api/v1', { ok: true, url: 'https://m2:5050/api/v1' }],
    ['/master/api/v1', { ok: true, url: 'https://127.0.0.1:5070/master/api/v1' }],
    ['http://127.0.0.1:5050/api/v1', /not following from https to http:\/\/ \(the credential would travel in clear\)$/],
    [null, /answered a redirect without a Location$/],
    ['ftp://x/', /which is not http or https$/],
  ];
  for (const [location, want] of cases) {
    const r = redirectTarget(from, location);
    if (want instanceof RegExp) {
      assert.equal(r.ok, false, String(location));
      assert.match(r.ok ? '' : r.error, want);
    } else assert.deepEqual(r, want, String(location));
  }
  assert.deepEqual(redirectTarget('http://a:1/x', '//b:2/x'), { ok: true, url: 'http://b:2/x' });
});

test('the scheduler API URL: http, https with TLS material, a given scheme kept', () => {
  const tls = clientTransport({ tls: { ca: undefined, cert: undefined, key: undefined } });
  assert.equal(schedulerUrl('127.0.0.1:5050', PLAIN_TRANSPORT), 'http://127.0.0.1:5050/api/v1/scheduler');
  assert.equal(schedulerUrl('127.0.0.1:5050', tls), 'https://127.0.0.1:5050/api/v1/scheduler');
  assert.equal(schedulerUrl('http://m:5050/', tls), 'http://m:5050/api/v1/scheduler');
  assert.equal(schedulerUrl('HTTPS://m:5050', PLAIN_TRANSPORT), 'https://m:5050/api/v1/scheduler');
});

test('loadClientAccess reads the secret file: 0644 refused with how to fix it, 0600 used; the header carries it', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-cli-access-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'ops.secret');
  writeFileSync(file, 's3cret\n');
  chmodSync(file, 0o644);
  const open = loadClientAccess({ principal: flag('ops', '--principal'), secretFile: flag(file, '--secret_file') }, {});
  assert.deepEqual(open, { ok: false, error: `--secret_file ${file} is readable by others (mode 0644); run chmod 600 on it` });
  chmodSync(file, 0o600);
  const r = loadClientAccess({ principal: flag('ops', '--principal'), secretFile: flag(file, '--secret_file') }, {});
  assert.ok(r.ok);
  assert.equal(r.value.transport.headers['authorization'], `Basic ${Buffer.from('ops:s3cret').toString('base64')}`);
  assert.equal(r.value.principal, 'ops');
  assert.equal(r.value.credential, `principal 'ops' (from --secret_file ${file})`);
  assert.equal(r.value.transport.tls, false);
  const missing = loadClientAccess({ secretFile: env(join(dir, 'nope'), 'DRYDOCK_SECRET_FILE') }, {});
  assert.deepEqual(missing, { ok: false, error: `DRYDOCK_SECRET_FILE ${join(dir, 'nope')} cannot be read: no such file` });
  const anon = loadClientAccess({}, {});
  assert.ok(anon.ok && anon.value.credential === undefined && Object.keys(anon.value.transport.headers).length === 0);
  const ca = loadClientAccess({}, { caFile: file });
  assert.deepEqual(ca, { ok: false, error: `--tls_ca_file ${file} holds no PEM certificate` });
  const bearer = loadClientAccess({ inline: 'Bearer tok-0123456789abcdef' }, {});
  assert.ok(bearer.ok && bearer.value.transport.headers['authorization'] === 'Bearer tok-0123456789abcdef' && bearer.value.principal === undefined);
});

test('TLS trouble in words: a certificate that does not verify, a server that wants a client certificate or speaks no TLS', () => {
  const cases: Array<[string, string, RegExp | undefined]> = [
    ['https://m:5050', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', /^its certificate does not verify: give its CA with --tls_ca_file/],
    ['https://m:5050', 'DEPTH_ZERO_SELF_SIGNED_CERT', /^its certificate does not verify/],
    ['https://m:5050', 'ERR_TLS_CERT_ALTNAME_INVALID', /^its certificate does not verify/],
    ['https://m:5050', 'UND_ERR_SOCKET', /client certificate \(--tls_cert_file, --tls_key_file\)\?$/],
    ['https://m:5050', 'ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED', /client certificate/],
    ['https://m:5050', 'ERR_SSL_WRONG_VERSION_NUMBER', /^it does not speak TLS: use http:\/\//],
    ['https://m:5050', 'ECONNREFUSED', undefined],
    ['http://m:5050', 'UND_ERR_SOCKET', undefined],
    ['http://m:5050', 'ECONNRESET', undefined],
  ];
  for (const [base, code, want] of cases) {
    const r = tlsTrouble(base, code);
    if (want === undefined) assert.equal(r, undefined, `${base} ${code}`);
    else assert.match(r ?? '', want, `${base} ${code}`);
  }
});

const ETCD_MASTER = 'etcd://e1:2379,e2:2379/dd';
const NEEDS_ETCD = '--etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://... (or DRYDOCK_MASTER)';

test('etcd flags: flags over DRYDOCK_ETCD_* variables, an empty variable is unset, an empty flag refused', () => {
  const env = { DRYDOCK_ETCD_CA_FILE: '/env/ca.pem', DRYDOCK_ETCD_CERT_FILE: '/env/c.pem', DRYDOCK_ETCD_KEY_FILE: '/env/k.pem', DRYDOCK_ETCD_USER: 'envu', DRYDOCK_ETCD_PASSWORD_FILE: '/env/pw' };
  const cases: Array<[string, AccessFlags, Record<string, string>, unknown]> = [
    ['nothing', {}, {}, { caFile: undefined, certFile: undefined, keyFile: undefined, user: undefined, passwordFile: undefined }],
    ['the variables', {}, env, { caFile: '/env/ca.pem', certFile: '/env/c.pem', keyFile: '/env/k.pem', user: 'envu', passwordFile: '/env/pw' }],
    ['flags win, one by one', { etcd_ca_file: '/ca', etcd_user: 'dd' }, env, { caFile: '/ca', certFile: '/env/c.pem', keyFile: '/env/k.pem', user: 'dd', passwordFile: '/env/pw' }],
    ['every flag', { etcd_ca_file: '/ca', etcd_cert_file: '/c', etcd_key_file: '/k', etcd_user: 'dd', etcd_password_file: '/pw' }, {}, { caFile: '/ca', certFile: '/c', keyFile: '/k', user: 'dd', passwordFile: '/pw' }],
    ['an empty variable is unset', {}, { DRYDOCK_ETCD_CA_FILE: '', DRYDOCK_ETCD_USER: '' }, { caFile: undefined, certFile: undefined, keyFile: undefined, user: undefined, passwordFile: undefined }],
  ];
  for (const [name, flags, e, want] of cases) assert.deepEqual(cliEtcdFiles(flags, e), { ok: true, value: want }, name);
  for (const key of ['etcd_ca_file', 'etcd_cert_file', 'etcd_key_file', 'etcd_user', 'etcd_password_file'] as const) {
    assert.deepEqual(cliEtcdFiles({ [key]: '' }, env), { ok: false, error: `--${key} must not be empty` }, key);
  }
});

test('etcd flags need each other and an etcd:// master (resolved: the flag, DRYDOCK_MASTER, the default)', () => {
  const cases: Array<[string, AccessFlags, Record<string, string>, string, string | undefined]> = [
    ['no etcd flag, any master', {}, {}, 'm:5050', undefined],
    ['no etcd flag, etcd', {}, {}, ETCD_MASTER, undefined],
    ['CA only', { etcd_ca_file: '/ca' }, {}, ETCD_MASTER, undefined],
    ['client certificate', { etcd_ca_file: '/ca', etcd_cert_file: '/c', etcd_key_file: '/k' }, {}, ETCD_MASTER, undefined],
    ['user and password file', { etcd_user: 'dd', etcd_password_file: '/pw' }, {}, ETCD_MASTER, undefined],
    ['user flag, password file from the environment', { etcd_user: 'dd' }, { DRYDOCK_ETCD_PASSWORD_FILE: '/pw' }, ETCD_MASTER, undefined],
    ['certificate without key', { etcd_cert_file: '/c' }, {}, ETCD_MASTER, '--etcd_cert_file and --etcd_key_file go together'],
    ['key without certificate (variable)', {}, { DRYDOCK_ETCD_KEY_FILE: '/k' }, ETCD_MASTER, '--etcd_cert_file and --etcd_key_file go together'],
    ['user without password file', { etcd_user: 'dd' }, {}, ETCD_MASTER, '--etcd_user and --etcd_password_file go together'],
    ['password file without user (variable)', {}, { DRYDOCK_ETCD_PASSWORD_FILE: '/pw' }, ETCD_MASTER, '--etcd_user and --etcd_password_file go together'],
    ['a CA for a host:port master', { etcd_ca_file: '/ca' }, {}, 'm:5050', NEEDS_ETCD],
    ['a user for a list of masters', { etcd_user: 'dd', etcd_password_file: '/pw' }, {}, 'm1:5050,m2:5050', NEEDS_ETCD],
    ['a variable for the default master', {}, { DRYDOCK_ETCD_CA_FILE: '/ca' }, '127.0.0.1:5050', NEEDS_ETCD],
    ['an empty flag', { etcd_password_file: '', etcd_user: 'dd' }, {}, ETCD_MASTER, '--etcd_password_file must not be empty'],
  ];
  for (const [name, flags, e, master, want] of cases) assert.equal(cliEtcdProblem(flags, e, master), want, name);
  // The master as the commands resolve it: DRYDOCK_MASTER=etcd://... counts.
  assert.equal(cliEtcdProblem({ etcd_ca_file: '/ca' }, {}, resolveMaster(undefined, { DRYDOCK_MASTER: `${ETCD_MASTER}/` })), undefined);
});

test('etcd files: read with the agent\'s checks (key and password not readable by others, one line), https with a CA or certificate, undefined for another master', () => {
  const files = { '/ca': CA, '/c': CERT, '/k': KEY, '/pw': 'dd-secret\n', '/pw2': 'a\nb\n', '/empty': '\n', '/notpem': 'hello', '/k-open': KEY, '/pw-open': 'dd-secret\n' };
  // Certificates may be readable by anyone; the key and the password file may not.
  const read = reader(files, ['/ca', '/c', '/k-open', '/pw-open']);
  const ok: Array<[string, AccessFlags, string, { scheme: 'http' | 'https'; user: unknown } | undefined]> = [
    ['another master: nothing read', {}, 'm:5050', undefined],
    ['etcd, no flag: plain http', {}, ETCD_MASTER, { scheme: 'http', user: undefined }],
    ['a CA (any mode): https', { etcd_ca_file: '/ca' }, ETCD_MASTER, { scheme: 'https', user: undefined }],
    ['a client certificate (any mode) and its key: https', { etcd_cert_file: '/c', etcd_key_file: '/k' }, ETCD_MASTER, { scheme: 'https', user: undefined }],
    ['a user, the newline is not the password\'s', { etcd_user: 'dd', etcd_password_file: '/pw' }, ETCD_MASTER, { scheme: 'http', user: { name: 'dd', password: 'dd-secret' } }],
  ];
  for (const [name, flags, master, want] of ok) {
    const r = loadCliEtcdAccess(flags, {}, master, read);
    assert.ok(r.ok, `${name}: ${r.ok ? '' : r.error}`);
    assert.deepEqual(r.value === undefined ? undefined : { scheme: r.value.scheme, user: r.value.user }, want, name);
  }
  const refused: Array<[string, AccessFlags, Record<string, string>, string, string]> = [
    ['a flag for another master', { etcd_ca_file: '/ca' }, {}, 'm:5050', NEEDS_ETCD],
    ['half a pair', { etcd_key_file: '/k' }, {}, ETCD_MASTER, '--etcd_cert_file and --etcd_key_file go together'],
    ['a missing CA', { etcd_ca_file: '/nope' }, {}, ETCD_MASTER, '--etcd_ca_file /nope cannot be read: no such file'],
    ['a CA that is no certificate', { etcd_ca_file: '/notpem' }, {}, ETCD_MASTER, '--etcd_ca_file /notpem holds no PEM certificate'],
    ['a key others may read', { etcd_cert_file: '/c', etcd_key_file: '/k-open' }, {}, ETCD_MASTER, '--etcd_key_file /k-open is readable by others (mode 0644); run chmod 600 on it'],
    ['a password file others may read (variable)', { etcd_user: 'dd' }, { DRYDOCK_ETCD_PASSWORD_FILE: '/pw-open' }, ETCD_MASTER, '--etcd_password_file /pw-open is readable by others (mode 0644); run chmod 600 on it'],
    ['two lines', { etcd_user: 'dd', etcd_password_file: '/pw2' }, {}, ETCD_MASTER, '--etcd_password_file /pw2 holds more than one line'],
    ['an empty password', { etcd_user: 'dd', etcd_password_file: '/empty' }, {}, ETCD_MASTER, '--etcd_password_file /empty is empty'],
  ];
  for (const [name, flags, e, master, want] of refused) assert.deepEqual(loadCliEtcdAccess(flags, e, master, read), { ok: false, error: want }, name);
});

test('etcd password file on disk: 0644 refused with how to fix it, 0600 used', (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-cli-etcd-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const pw = join(dir, 'pw');
  writeFileSync(pw, 'dd-secret\n');
  chmodSync(pw, 0o644);
  assert.deepEqual(loadCliEtcdAccess({ etcd_user: 'dd', etcd_password_file: pw }, {}, ETCD_MASTER), { ok: false, error: `--etcd_password_file ${pw} is readable by others (mode 0644); run chmod 600 on it` });
  chmodSync(pw, 0o600);
  const r = loadCliEtcdAccess({}, { DRYDOCK_ETCD_USER: 'dd', DRYDOCK_ETCD_PASSWORD_FILE: pw }, ETCD_MASTER);
  assert.deepEqual(r.ok ? r.value?.user : r.error, { name: 'dd', password: 'dd-secret' });
});

test('no leader through etcd: why, with the --etcd_* flag to look at', () => {
  const cases: Array<[string, EtcdLeaderRead, 'http' | 'https', unknown]> = [
    ['a leader', { kind: 'leader', address: '10.0.0.9:5050' }, 'https', { found: true, address: '10.0.0.9:5050' }],
    ['nobody leads', { kind: 'none' }, 'http', { found: false, why: undefined }],
    ['refused', { kind: 'refused', error: 'etcd requires authentication: give --etcd_user and --etcd_password_file' }, 'https', { found: false, why: 'etcd requires authentication: give --etcd_user and --etcd_password_file' }],
    ['plain http to TLS', { kind: 'unreachable', error: 'etcd answered the range request with HTTP 400: Client sent an HTTP request to an HTTPS server.' }, 'http',
      { found: false, why: 'etcd answered the range request with HTTP 400: Client sent an HTTP request to an HTTPS server.: etcd speaks TLS: give its CA with --etcd_ca_file (or DRYDOCK_ETCD_CA_FILE)' }],
    ['down', { kind: 'unreachable', error: 'etcd e1:2379: fetch failed (ECONNREFUSED)' }, 'http', { found: false, why: 'etcd e1:2379: fetch failed (ECONNREFUSED)' }],
  ];
  for (const [name, read, scheme, want] of cases) assert.deepEqual(etcdSearch(read, scheme), want, name);
  const hints: Array<[string, 'http' | 'https', string | undefined]> = [
    ['etcd e:2379: fetch failed (SELF_SIGNED_CERT_IN_CHAIN)', 'https', "etcd's certificate does not verify: is --etcd_ca_file its CA?"],
    ['etcd e:2379: fetch failed (UNABLE_TO_VERIFY_LEAF_SIGNATURE)', 'https', "etcd's certificate does not verify: is --etcd_ca_file its CA?"],
    ['etcd e:2379: fetch failed (ERR_SSL_WRONG_VERSION_NUMBER)', 'https', 'etcd does not speak TLS here: leave out --etcd_ca_file and --etcd_cert_file'],
    ['etcd e:2379: fetch failed (ERR_SSL_TLSV13_ALERT_CERTIFICATE_REQUIRED)', 'https', 'etcd closed the TLS connection: does it want a client certificate (--etcd_cert_file, --etcd_key_file)?'],
    ['etcd e:2379: fetch failed (ECONNRESET)', 'https', 'etcd closed the TLS connection: does it want a client certificate (--etcd_cert_file, --etcd_key_file)?'],
    ['etcd e:2379: fetch failed (UND_ERR_SOCKET)', 'http', 'etcd closed the connection: does it speak TLS? give its CA with --etcd_ca_file (or DRYDOCK_ETCD_CA_FILE)'],
    ['etcd e:2379: fetch failed (ECONNREFUSED)', 'http', undefined],
    ['etcd e:2379: fetch failed (ECONNREFUSED)', 'https', undefined],
  ];
  for (const [error, scheme, want] of hints) assert.equal(etcdTlsTrouble(error, scheme), want, `${error} ${scheme}`);
  assert.equal(noLeaderLine('etcd://e:2379/dd', 'etcd requires authentication'), 'no leading master found through etcd://e:2379/dd: etcd requires authentication');
  assert.equal(noLeaderLine('etcd://e:2379/dd'), 'no leading master found through etcd://e:2379/dd; set --master or DRYDOCK_MASTER');
});

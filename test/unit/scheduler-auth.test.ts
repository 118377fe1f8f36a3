/**
 * The scheduler API's authentication, pure parts (issue 13 follow-up): the shared admission rule
 * (shared/authentication.ts `admit`, the master's per-realm rule), which requests are guarded
 * how (scheduler/api-auth.ts), its 401 headers and audit lines, and the scheduler's security
 * flags (scheduler/config.ts), DRYDOCK_CREDENTIALS staying the scheduler's own credential.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { admit, Authenticator, basicChallenge } from '../../shared/authentication.js';
import { Authenticator as MasterAuthenticator, challenge } from '../../master/security/authentication.js';
import { authorizationHeader } from '../../shared/credentials.js';
import { Logger } from '../../shared/log.js';
import { accessClass, ApiAuth, loadApiAuth, outcomeOf, SCHEDULER_REALM, type ApiAccessClass } from '../../scheduler/api-auth.js';
import { apiSecurityProblem, resolveSchedulerConfig, schedulerFlagEnv, type ApiSecurityConfig } from '../../scheduler/config.js';
import { DEFAULT_TLS_CIPHERS } from '../../io/tls-server.js';

const TOKEN = 'tok-0123456789abcdef';
const CREDENTIALS = [
  { principal: 'ops', secret: 's1', tokens: [TOKEN] },
  { principal: 'viewer', secret: 's2', tokens: [] },
];
const basic = (p: string, s: string): string => authorizationHeader({ kind: 'basic', principal: p, secret: s });
const GOOD = basic('ops', 's1');
const WRONG = basic('ops', 'nope');

describe('admit: the authentication rule the master and the scheduler share', () => {
  const a = new Authenticator(CREDENTIALS);
  const cases: Array<[string, Authenticator | undefined, string | undefined, boolean, string]> = [
    ['required, none', a, undefined, true, 'refused: no credentials'],
    ['required, empty header', a, '', true, 'refused: no credentials'],
    ['required, good', a, GOOD, true, 'ops'],
    ['required, token', a, `Bearer ${TOKEN}`, true, 'ops'],
    ['required, wrong secret', a, WRONG, true, "refused: wrong principal or secret for 'ops'"],
    ['required, unknown principal', a, basic('nobody', 's1'), true, "refused: wrong principal or secret for 'nobody'"],
    ['required, other scheme', a, 'Negotiate abc', true, "refused: unsupported authentication scheme 'negotiate' (use Basic or Bearer)"],
    ['not required, none: anonymous', a, undefined, false, 'anonymous'],
    ['not required, good: known', a, GOOD, false, 'ops'],
    ['not required, wrong: still refused', a, WRONG, false, "refused: wrong principal or secret for 'ops'"],
    ['no file, not required, presented: anonymous', undefined, GOOD, false, 'anonymous'],
    ['no file, required, presented', undefined, GOOD, true, 'refused: no credentials configured'],
    ['no file, not required, none', undefined, undefined, false, 'anonymous'],
  ];
  for (const [name, authenticator, header, required, want] of cases) {
    test(name, () => {
      const r = admit(authenticator, header, required);
      assert.equal(r.ok ? (r.principal ?? 'anonymous') : `refused: ${r.reason}`, want);
    });
  }
  test('the master re-exports the same authenticator and challenge', () => {
    assert.equal(MasterAuthenticator, Authenticator);
    assert.equal(challenge('mesos-master-readwrite'), 'Basic realm="mesos-master-readwrite"');
    assert.equal(basicChallenge(SCHEDULER_REALM), 'Basic realm="drydock-scheduler"');
  });
});

describe('which scheduler requests are guarded how', () => {
  const cases: Array<[string, string, ApiAccessClass]> = [
    ['GET', '/v1/health', 'open'],
    ['POST', '/v1/health', 'open'],
    ['GET', '/v1/plans', 'read'],
    ['HEAD', '/v1/plans/deploy', 'read'],
    ['GET', '/v1/pod/status', 'read'],
    ['GET', '/v1/configurations/target', 'read'],
    ['GET', '/nope', 'read'],
    ['POST', '/v1/plans/deploy/continue', 'write'],
    ['POST', '/v1/pod/hello-0/restart', 'write'],
    ['PUT', '/v1/plans/deploy', 'write'],
    ['DELETE', '/v1/pod', 'write'],
    ['OPTIONS', '/v1/plans', 'write'],
    ['GET', '/v1/health/', 'read'],
  ];
  for (const [method, path, want] of cases) test(`${method} ${path}: ${want}`, () => assert.equal(accessClass(method, path), want));
  test('audit outcomes follow the status', () => {
    assert.deepEqual([200, 208, 400, 401, 404, 405, 500].map(outcomeOf), ['allowed', 'allowed', 'failed', 'unauthenticated', 'failed', 'failed', 'failed']);
  });
});

describe('ApiAuth: the flags decide what needs credentials; 401s carry the realm', () => {
  const authenticator = new Authenticator(CREDENTIALS);
  const config = (rw: boolean, ro: boolean): ApiSecurityConfig => ({ authenticateHttpReadwrite: rw, authenticateHttpReadonly: ro, credentialsFile: '/unused' });
  const both = new ApiAuth({ config: config(true, true), authenticator });
  const rwOnly = new ApiAuth({ config: config(true, false), authenticator });
  const checkOnly = new ApiAuth({ config: config(false, false), authenticator });
  const open = ApiAuth.open();
  const cases: Array<[string, ApiAuth, string | undefined, ApiAccessClass, string]> = [
    ['both: anonymous read', both, undefined, 'read', '401'],
    ['both: anonymous write', both, undefined, 'write', '401'],
    ['both: anonymous health', both, undefined, 'open', 'anonymous'],
    ['both: wrong health: open means open', both, WRONG, 'open', 'anonymous'],
    ['both: good read', both, GOOD, 'read', 'ops'],
    ['both: token write', both, `Bearer ${TOKEN}`, 'write', 'ops'],
    ['both: wrong read', both, WRONG, 'read', '401'],
    ['readwrite: anonymous read', rwOnly, undefined, 'read', 'anonymous'],
    ['readwrite: anonymous write', rwOnly, undefined, 'write', '401'],
    ['readwrite: wrong read', rwOnly, WRONG, 'read', '401'],
    ['credentials only: anonymous write', checkOnly, undefined, 'write', 'anonymous'],
    ['credentials only: wrong write', checkOnly, WRONG, 'write', '401'],
    ['credentials only: viewer write (no ACLs)', checkOnly, basic('viewer', 's2'), 'write', 'viewer'],
    ['no flags: anything', open, WRONG, 'write', 'anonymous'],
  ];
  for (const [name, auth, header, c, want] of cases) {
    test(name, () => {
      const r = auth.authenticate(header, c);
      assert.equal(r.ok ? (r.principal ?? 'anonymous') : '401', want);
      if (!r.ok) assert.deepEqual(r.headers, { 'WWW-Authenticate': 'Basic realm="drydock-scheduler"' });
    });
  }

  test('audit lines: principal, action, query, outcome, status; written once the answer is sent', () => {
    const lines: Array<Record<string, unknown>> = [];
    const auth = new ApiAuth({ config: config(true, false), authenticator, log: new Logger({ sink: (l) => lines.push(JSON.parse(l) as Record<string, unknown>) }) });
    auth.audit({ principal: undefined, action: 'POST /v1/plans/deploy/interrupt', query: '', status: 401 });
    const res = Object.assign(new EventEmitter(), { statusCode: 200 }) as unknown as ServerResponse;
    auth.auditWhenDone('ops', res, 'POST /v1/plans/deploy/force-complete', `phase=p&step=${'s'.repeat(300)}`);
    assert.equal(lines.filter((l) => l['msg'] === 'audit').length, 1, 'nothing before the answer is sent');
    res.emit('finish');
    res.emit('finish');
    const audits = lines.filter((l) => l['msg'] === 'audit').map(({ time: _t, level: _l, ...rest }) => rest);
    assert.deepEqual(audits, [
      { msg: 'audit', component: 'audit', principal: null, action: 'POST /v1/plans/deploy/interrupt', outcome: 'unauthenticated', status: 401 },
      { msg: 'audit', component: 'audit', principal: 'ops', action: 'POST /v1/plans/deploy/force-complete', query: `phase=p&step=${'s'.repeat(200 - 'phase=p&step='.length)}…`, outcome: 'allowed', status: 200 },
    ]);
    // A refused authentication is logged (why, never the secret) for the operator.
    assert.equal(auth.authenticate(WRONG, 'write').ok, false);
    const refused = lines.find((l) => l['msg'] === 'authentication refused');
    assert.deepEqual(refused === undefined ? undefined : { realm: refused['realm'], reason: refused['reason'] }, { realm: 'drydock-scheduler', reason: "wrong principal or secret for 'ops'" });
    assert.ok(!lines.some((l) => JSON.stringify(l).includes('nope')), 'no secret in any line');
  });
});

describe('loadApiAuth reads --credentials as the master does', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-scheduler-auth-'));
  test.after(() => rmSync(dir, { recursive: true, force: true }));
  const silent = new Logger({ sink: () => {} });
  const file = (name: string, text: string, mode: number): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, mode);
    return path;
  };
  const config = (credentialsFile: string | undefined): ApiSecurityConfig => ({ authenticateHttpReadwrite: true, authenticateHttpReadonly: false, credentialsFile });
  const cases: Array<[string, string | undefined, RegExp | number]> = [
    ['json', file('json', JSON.stringify({ credentials: CREDENTIALS }), 0o600), 2],
    ['lines', file('lines', 'ops s1\nviewer s2\n', 0o640), 2],
    ['none', undefined, 0],
    ['readable by others', file('open', 'ops s1\n', 0o644), /^--credentials \S+open is readable by others \(mode 0644\); run chmod 600 on it$/],
    ['not credentials', file('bad', 'ops s1 extra\n', 0o600), /^--credentials \S+bad: line 1: expected 'principal secret', got 3 fields$/],
    ['missing', join(dir, 'nope'), /^--credentials \S+nope cannot be read: no such file$/],
  ];
  for (const [name, path, want] of cases) {
    test(name, () => {
      const r = loadApiAuth(config(path), silent);
      if (typeof want === 'number') {
        assert.ok(r.ok, r.ok ? '' : r.error);
        assert.equal(r.auth.authenticator?.size ?? 0, want);
      } else {
        assert.equal(r.ok, false);
        assert.match(r.ok ? '' : r.error, want);
        assert.doesNotMatch(r.ok ? '' : r.error, /\bs1\b/, 'never the secret');
      }
    });
  }
});

describe('the scheduler\'s security flags', () => {
  const base = ['--spec=/s.yml'];
  test('resolved into the API security and TLS config', () => {
    const r = resolveSchedulerConfig([...base, '--credentials=/c.json', '--authenticate_http_readwrite', '--tls_cert_file=/c.pem', '--tls_key_file=/k.pem'], {});
    assert.equal(r.kind, 'ok');
    if (r.kind !== 'ok') return;
    assert.deepEqual(r.apiSecurity, { authenticateHttpReadwrite: true, authenticateHttpReadonly: false, credentialsFile: '/c.json' });
    assert.deepEqual(r.apiTls, { certFile: '/c.pem', keyFile: '/k.pem', requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });
    assert.ok(Object.isFrozen(r.apiSecurity));
    const ciphers = resolveSchedulerConfig([...base, '--tls_cert_file=/c.pem', '--tls_key_file=/k.pem', '--tls_ciphers=ECDHE-ECDSA-AES128-SHA'], {});
    assert.ok(ciphers.kind === 'ok' && ciphers.apiTls?.ciphers === 'ECDHE-ECDSA-AES128-SHA', '--tls_ciphers');
    assert.deepEqual(resolveSchedulerConfig([...base, '--tls_ciphers='], {}).kind, 'error', 'an empty list is refused');
    const plain = resolveSchedulerConfig(base, {});
    assert.ok(plain.kind === 'ok' && plain.apiTls === undefined && plain.apiSecurity.credentialsFile === undefined && !plain.apiSecurity.authenticateHttpReadonly);
  });
  test('from the environment (systemd): DRYDOCK_AUTHENTICATE_HTTP_READONLY, DRYDOCK_TLS_CERT_FILE', () => {
    const r = resolveSchedulerConfig([...base, '--credentials=/c'], { DRYDOCK_AUTHENTICATE_HTTP_READONLY: 'true', DRYDOCK_TLS_CERT_FILE: '/c.pem', DRYDOCK_TLS_KEY_FILE: '/k.pem' });
    assert.ok(r.kind === 'ok' && r.apiSecurity.authenticateHttpReadonly && r.apiTls?.keyFile === '/k.pem');
  });
  test('DRYDOCK_CREDENTIALS stays the scheduler\'s credential towards the master: never read as --credentials', () => {
    const env = { DRYDOCK_CREDENTIALS: 'ops:s3cret', DRYDOCK_PORT: '9000' };
    assert.deepEqual(schedulerFlagEnv(env), { DRYDOCK_PORT: '9000' });
    assert.deepEqual(env, { DRYDOCK_CREDENTIALS: 'ops:s3cret', DRYDOCK_PORT: '9000' }, 'the given environment is left alone');
    const r = resolveSchedulerConfig(base, env);
    assert.ok(r.kind === 'ok' && r.apiSecurity.credentialsFile === undefined && r.values.port === 9000);
    // And so a switch that needs --credentials says so, without printing the variable's secret.
    const needs = resolveSchedulerConfig([...base, '--authenticate_http_readonly'], env);
    assert.deepEqual(needs, { kind: 'error', error: '--authenticate_http_readonly needs --credentials=FILE (the principals and secrets to check)' });
  });
  test('--tls_require_client_cert: the API asks for client certificates from --tls_ca_file (one CA both ways)', () => {
    const r = resolveSchedulerConfig([...base, '--tls_cert_file=/c.pem', '--tls_key_file=/k.pem', '--tls_require_client_cert'], { DRYDOCK_TLS_CA_FILE: '/ca.pem' });
    assert.ok(r.kind === 'ok');
    assert.deepEqual(r.apiTls, { certFile: '/c.pem', keyFile: '/k.pem', caFile: '/ca.pem', requireClientCert: true, ciphers: DEFAULT_TLS_CIPHERS });
    assert.ok(Object.isFrozen(r.apiTls));
    const env = resolveSchedulerConfig(base, { DRYDOCK_TLS_CERT_FILE: '/c.pem', DRYDOCK_TLS_KEY_FILE: '/k.pem', DRYDOCK_TLS_CA_FILE: '/ca.pem', DRYDOCK_TLS_REQUIRE_CLIENT_CERT: 'true' });
    assert.ok(env.kind === 'ok' && env.apiTls?.requireClientCert === true);
    const off = resolveSchedulerConfig([...base, '--tls_cert_file=/c.pem', '--tls_key_file=/k.pem', '--tls_ca_file=/ca.pem'], {});
    assert.ok(off.kind === 'ok');
    assert.deepEqual(off.apiTls, { certFile: '/c.pem', keyFile: '/k.pem', requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS }, 'the CA alone only verifies the master');
  });
  const bad: Array<[string, string[], string]> = [
    ['readwrite without credentials', ['--authenticate_http_readwrite'], '--authenticate_http_readwrite needs --credentials=FILE (the principals and secrets to check)'],
    ['readonly without credentials', ['--authenticate_http_readonly'], '--authenticate_http_readonly needs --credentials=FILE (the principals and secrets to check)'],
    ['certificate without key', ['--tls_cert_file=/c.pem'], '--tls_cert_file and --tls_key_file go together'],
    ['key without certificate', ['--tls_key_file=/k.pem'], '--tls_cert_file and --tls_key_file go together'],
    ['client certificates without a CA', ['--tls_cert_file=/c.pem', '--tls_key_file=/k.pem', '--tls_require_client_cert'], '--tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)'],
    ['client certificates without TLS', ['--tls_ca_file=/ca.pem', '--tls_require_client_cert'], '--tls_require_client_cert needs --tls_cert_file and --tls_key_file'],
    ['client certificates, a boolean with a value', ['--tls_require_client_cert=sometimes'], "Invalid value 'sometimes' for --tls_require_client_cert: expected true or false"],
    ['empty credentials', ['--credentials='], "Invalid value '' for --credentials: must not be empty"],
    ['a boolean with a value', ['--authenticate_http_readonly=maybe'], "Invalid value 'maybe' for --authenticate_http_readonly: expected true or false"],
  ];
  for (const [name, argv, error] of bad) test(`refused: ${name}`, () => assert.deepEqual(resolveSchedulerConfig([...base, ...argv], {}), { kind: 'error', error }));
  test('--spec is still required; --help lists the new flags', () => {
    assert.deepEqual(resolveSchedulerConfig([], {}), { kind: 'error', error: '--spec is required' });
    const help = resolveSchedulerConfig(['--help'], {});
    assert.ok(help.kind === 'help');
    for (const f of ['--credentials=FILE', '--[no-]authenticate_http_readwrite', '--[no-]authenticate_http_readonly', '--tls_cert_file=FILE', '--[no-]tls_require_client_cert']) assert.ok(help.text.includes(f), f);
  });
  test('apiSecurityProblem: none when the flags fit', () => {
    const off = { tls_ca_file: undefined, tls_require_client_cert: false };
    assert.equal(apiSecurityProblem({ authenticate_http_readwrite: true, authenticate_http_readonly: true, credentials: '/c', tls_cert_file: undefined, tls_key_file: undefined, ...off }), undefined);
    assert.equal(apiSecurityProblem({ authenticate_http_readwrite: false, authenticate_http_readonly: false, credentials: undefined, tls_cert_file: '/c', tls_key_file: '/k', ...off }), undefined);
    assert.equal(apiSecurityProblem({ authenticate_http_readwrite: false, authenticate_http_readonly: false, credentials: undefined, tls_cert_file: '/c', tls_key_file: '/k', tls_ca_file: '/ca', tls_require_client_cert: true }), undefined);
  });
});

/**
 * The security cores, pure: credential files and headers, the authenticator, ACL parsing and
 * Mesos' match/allow semantics with machine objects, schedule changes, secret file modes, and
 * the per-realm authentication decision.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authorizationHeader, parseAuthorization, parseClientCredential, parseCredentials, parseInlineCredential } from '../../shared/credentials.js';
import { readSecretFile, unsafeModeReason } from '../../io/secrets.js';
import { Authenticator } from '../../master/security/authentication.js';
import { Authorizer, parseAcls, type AclAction, type AclObject } from '../../shared/acls.js';
import { scheduleChanges, type Schedule } from '../../master/cores/maintenance.js';
import { loadSecurity, MasterSecurity } from '../../master/security/security.js';
import type { SecurityConfig } from '../../master/security/security.js';
import { Logger } from '../../shared/log.js';

const TOKEN = 'tok-0123456789abcdef';

describe('credential files', () => {
  test('Mesos JSON, with tokens', () => {
    const r = parseCredentials(JSON.stringify({ credentials: [{ principal: 'ops', secret: 's1' }, { principal: 'ci', tokens: [TOKEN] }] }));
    assert.ok(r.ok);
    assert.deepEqual(r.value, [
      { principal: 'ops', secret: 's1', tokens: [] },
      { principal: 'ci', secret: undefined, tokens: [TOKEN] },
    ]);
  });
  test('plain lines, comments and blanks skipped', () => {
    const r = parseCredentials('# operators\nops s1\n\nviewer   s2\n');
    assert.ok(r.ok);
    assert.deepEqual(r.value.map((c) => [c.principal, c.secret]), [['ops', 's1'], ['viewer', 's2']]);
  });
  const bad: Array<[string, string, RegExp]> = [
    ['empty', '  ', /no credentials/],
    ['not a list', '{"credentials": {}}', /not a list/],
    ['empty list', '{"credentials": []}', /empty/],
    ['unknown field', '{"credentials": [{"principal": "a", "secret": "b", "role": "x"}]}', /credentials\[0\]\.role is not a credential field/],
    ['no secret nor token', '{"credentials": [{"principal": "a"}]}', /neither a secret nor tokens/],
    ['short token', '{"credentials": [{"principal": "a", "tokens": ["short"]}]}', /tokens\[0\] must be a string of at least 16/],
    ['colon in principal', '{"credentials": [{"principal": "a:b", "secret": "s"}]}', /principal must be/],
    ['duplicate principal', 'a s\na t', /'a' appears more than once/],
    ['shared token', JSON.stringify({ credentials: [{ principal: 'a', tokens: [TOKEN] }, { principal: 'b', tokens: [TOKEN] }] }), /also given to another principal/],
    ['three fields', 'a b c', /line 1: expected 'principal secret', got 3 fields/],
    ['bad JSON', '{"credentials": [', /not valid JSON/],
  ];
  for (const [name, text, message] of bad) {
    test(`refused: ${name}`, () => {
      const r = parseCredentials(text);
      assert.equal(r.ok, false);
      if (!r.ok) {
        assert.match(r.error, message);
        assert.doesNotMatch(r.error, /\bs1\b|tok-/, 'an error never prints a secret');
      }
    });
  }
  test('client credentials: JSON, line, token, inline', () => {
    assert.deepEqual(parseClientCredential('{"principal":"agent","secret":"x"}'), { ok: true, value: { kind: 'basic', principal: 'agent', secret: 'x' } });
    assert.deepEqual(parseClientCredential('agent x\n'), { ok: true, value: { kind: 'basic', principal: 'agent', secret: 'x' } });
    assert.deepEqual(parseClientCredential(`{"token":"${TOKEN}"}`), { ok: true, value: { kind: 'bearer', token: TOKEN } });
    assert.deepEqual(parseInlineCredential('ops:se:cret'), { ok: true, value: { kind: 'basic', principal: 'ops', secret: 'se:cret' } });
    assert.deepEqual(parseInlineCredential(`Bearer ${TOKEN}`), { ok: true, value: { kind: 'bearer', token: TOKEN } });
    assert.equal(parseInlineCredential('nocolon').ok, false);
    assert.equal(parseClientCredential('{"principal":"a"}').ok, false);
  });
  test('Authorization headers round-trip', () => {
    const h = authorizationHeader({ kind: 'basic', principal: 'ops', secret: 'p:w' });
    assert.equal(h, `Basic ${Buffer.from('ops:p:w').toString('base64')}`);
    assert.deepEqual(parseAuthorization(h), { kind: 'basic', principal: 'ops', secret: 'p:w' });
    assert.deepEqual(parseAuthorization(`bearer ${TOKEN}`), { kind: 'bearer', token: TOKEN });
    assert.equal(parseAuthorization('Digest abc').kind, 'malformed');
    assert.equal(parseAuthorization('Basic !!!').kind, 'malformed');
    assert.equal(parseAuthorization(`Basic ${Buffer.from('nocolon').toString('base64')}`).kind, 'malformed');
  });
});

describe('Authenticator', () => {
  const a = new Authenticator([
    { principal: 'ops', secret: 's1', tokens: [TOKEN] },
    { principal: 'viewer', secret: 's2', tokens: [] },
  ]);
  const basic = (p: string, s: string): string => authorizationHeader({ kind: 'basic', principal: p, secret: s });
  const cases: Array<[string, string | undefined, string]> = [
    ['none', undefined, 'anonymous'],
    ['right secret', basic('ops', 's1'), 'principal:ops'],
    ['right secret, other principal', basic('viewer', 's2'), 'principal:viewer'],
    ['wrong secret', basic('ops', 's2'), 'refused'],
    ['unknown principal', basic('nobody', 's1'), 'refused'],
    ['token', `Bearer ${TOKEN}`, 'principal:ops'],
    ['unknown token', 'Bearer tok-ffffffffffffffff', 'refused'],
    ['other scheme', 'Negotiate abc', 'refused'],
  ];
  for (const [name, header, want] of cases) {
    test(name, () => {
      // Twice: the second answer comes from the cache of checked headers and must agree.
      for (let i = 0; i < 2; i++) {
        const r = a.authenticate(header);
        assert.equal(r.kind === 'principal' ? `principal:${r.principal}` : r.kind, want);
      }
    });
  }
  test('size counts principals', () => assert.equal(a.size, 2));
});

describe('ACLs: parsing', () => {
  const bad: Array<[string, unknown, RegExp]> = [
    ['not an object', [], /expected a JSON object/],
    ['unknown action', { drain_everything: [] }, /'drain_everything' is not an action/],
    ['permissive not a boolean', { permissive: 'no' }, /'permissive' must be true or false/],
    ['entry not an object', { drain_agents: [1] }, /drain_agents\[0\] must be an object/],
    ['wrong object field', { drain_agents: [{ principals: { type: 'ANY' }, machines: { type: 'ANY' } }] }, /drain_agents\[0\]\.machines is not a field of drain_agents \(principals, agents\)/],
    ['missing object', { drain_agents: [{ principals: { type: 'ANY' } }] }, /drain_agents\[0\]\.agents is missing/],
    ['bad type', { drain_agents: [{ principals: { type: 'SOME' }, agents: { type: 'ANY' } }] }, /principals\.type must be ANY or NONE/],
    ['empty values', { drain_agents: [{ principals: { values: [] }, agents: { type: 'ANY' } }] }, /principals\.values must be a non-empty list/],
    ['empty pattern', { drain_agents: [{ principals: { type: 'ANY' }, agents: { values: ['rack:'] } }] }, /agents\.values\[0\]: 'rack:' must be KEY:PATTERN/],
  ];
  for (const [name, json, message] of bad) {
    test(`refused: ${name}`, () => {
      const r = parseAcls(JSON.stringify(json));
      assert.equal(r.ok, false);
      if (!r.ok) assert.match(r.error, message);
    });
  }
  test('permissive defaults to true, as in Mesos', () => {
    const r = parseAcls('{"drain_agents": []}');
    assert.ok(r.ok);
    assert.equal(r.value.permissive, true);
  });
});

describe('ACLs: decisions (Mesos local authorizer semantics, machine objects)', () => {
  const acls = parseAcls(
    JSON.stringify({
      permissive: false,
      drain_agents: [
        { principals: { values: ['r1-team'] }, agents: { values: ['rack:r1', 'hostname:web-*'] } },
        { principals: { values: ['ops'] }, agents: { type: 'ANY' } },
        { principals: { values: ['banned'] }, agents: { type: 'NONE' } },
        { principals: { type: 'ANY' }, agents: { values: ['id:shared-agent'] } },
      ],
      teardown_frameworks: [{ principals: { values: ['ops'] }, framework_principals: { values: ['svc'] } }],
      view_tasks: [{ principals: { type: 'NONE' }, users: { values: ['root'] } }],
      view_flags: [{ principals: { type: 'ANY' }, flags: { type: 'ANY' } }],
    }),
  );
  assert.ok(acls.ok);
  const z = new Authorizer(acls.value);
  const r1 = { agentId: 'a1', hostname: 'db-1', ip: '10.0.1.1', attributes: { rack: 'r1' } };
  const r2 = { agentId: 'a2', hostname: 'db-2', ip: '10.0.2.1', attributes: { rack: 'r2' } };
  const web = { agentId: 'a3', hostname: 'WEB-7', ip: '10.0.2.7', attributes: { rack: 'r2' } };
  const shared = { agentId: 'shared-agent', hostname: 'x', attributes: {} };
  const cases: Array<[AclAction, string | undefined, AclObject, boolean, string]> = [
    ['drain_agents', 'r1-team', r1, true, 'its rack'],
    ['drain_agents', 'r1-team', r2, false, 'another rack'],
    ['drain_agents', 'r1-team', web, true, 'a hostname glob, without case'],
    ['drain_agents', 'r1-team', undefined, false, 'an unknown agent only matches ANY/NONE entries'],
    ['drain_agents', 'ops', r2, true, 'ANY object'],
    ['drain_agents', 'ops', undefined, true, 'ANY object allows an unknown agent'],
    ['drain_agents', 'banned', r1, false, 'NONE object is a deny'],
    ['drain_agents', undefined, shared, true, 'anonymous matches an ANY principal'],
    ['drain_agents', undefined, r1, false, 'anonymous, nothing matches, not permissive'],
    ['drain_agents', 'stranger', r1, false, 'no entry for the principal'],
    ['drain_agents', 'r1-team', shared, true, 'a later ANY-principal entry for an id'],
    ['teardown_frameworks', 'ops', 'svc', true, 'a plain object value'],
    ['teardown_frameworks', 'ops', 'other', false, 'another framework principal'],
    ['view_tasks', 'anyone', 'root', false, 'NONE principals: nobody'],
    ['view_tasks', 'anyone', 'alice', false, 'no matching entry, not permissive'],
    ['view_flags', undefined, undefined, true, 'ANY/ANY allows the anonymous'],
    ['mark_agents_gone', 'ops', r1, false, 'no entries for the action: permissive decides'],
  ];
  for (const [action, principal, object, want, why] of cases) {
    test(`${action} ${principal ?? '(anonymous)'}: ${why}`, () => {
      assert.equal(z.allows(action, principal, object), want);
      // The approver (views) must say the same as the single question.
      assert.equal(z.approver(action, principal)(object), want);
    });
  }
  test('the first matching entry wins', () => {
    const p = parseAcls(JSON.stringify({ permissive: true, drain_agents: [{ principals: { values: ['x'] }, agents: { type: 'NONE' } }, { principals: { values: ['x'] }, agents: { type: 'ANY' } }] }));
    assert.ok(p.ok);
    assert.equal(new Authorizer(p.value).allows('drain_agents', 'x', r1), false);
  });
  test('without ACLs everything is allowed', () => {
    const open = new Authorizer(undefined);
    assert.equal(open.enabled, false);
    assert.equal(open.allows('drain_agents', undefined, r1), true);
  });
});

describe('ACLs: run_maintenance_hooks is denied unless an entry grants it, whatever permissive says', () => {
  const entries = [
    { principals: { values: ['ops'] }, hooks: { type: 'ANY' } },
    { principals: { values: ['patcher'] }, hooks: { values: ['patch'] } },
    { principals: { values: ['banned'] }, hooks: { type: 'NONE' } },
  ];
  for (const permissive of [true, false]) {
    const r = parseAcls(JSON.stringify({ permissive, run_maintenance_hooks: entries, drain_agents: [] }));
    assert.ok(r.ok);
    const z = new Authorizer(r.value);
    const cases: Array<[string | undefined, string | undefined, boolean, string]> = [
      ['ops', 'patch', true, 'an ANY grant'],
      ['ops', undefined, true, 'an ANY grant covers an unknown hook (an older master\'s command)'],
      ['patcher', 'patch', true, 'a grant by name'],
      ['patcher', 'reboot', false, 'another hook: no entry matches, and permissive does not apply'],
      ['patcher', undefined, false, 'an unknown hook: only ANY entries match'],
      ['banned', 'patch', false, 'a NONE entry'],
      ['r1-team', 'patch', false, 'no entry for the principal'],
      [undefined, 'patch', false, 'anonymous'],
    ];
    for (const [principal, hook, want, why] of cases) {
      test(`permissive ${permissive}: ${principal ?? '(anonymous)'} ${hook ?? '(unknown hook)'}: ${why}`, () => {
        assert.equal(z.allows('run_maintenance_hooks', principal, hook), want);
        assert.equal(z.approver('run_maintenance_hooks', principal)(hook), want);
      });
    }
    test(`permissive ${permissive}: the rule is for run_maintenance_hooks alone`, () => {
      assert.equal(z.allows('mark_agents_gone', 'r1-team', undefined), permissive, 'other actions without entries: permissive decides');
    });
  }
  test('ACLs that predate hooks (no entry for the action at all), permissive: still denied', () => {
    const r = parseAcls(JSON.stringify({ permissive: true, drain_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }] }));
    assert.ok(r.ok);
    assert.equal(new Authorizer(r.value).allows('run_maintenance_hooks', 'ops', 'patch'), false);
    assert.equal(new Authorizer(r.value).allows('create_maintenance_plans', 'ops', { hostname: 'a' }), true);
  });
  test('without ACLs (an open master) any principal may name a hook', () => {
    assert.equal(new Authorizer(undefined).allows('run_maintenance_hooks', undefined, 'patch'), true);
  });
  test('the object field is hooks', () => {
    const r = parseAcls(JSON.stringify({ run_maintenance_hooks: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }] }));
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /run_maintenance_hooks\[0\]\.machines is not a field of run_maintenance_hooks \(principals, hooks\)/);
  });
});

describe('scheduleChanges', () => {
  const w = (start: bigint, ...hosts: string[]): Schedule['windows'][number] => ({ machineIds: hosts.map((h) => ({ hostname: h, ip: '10.0.0.1' })), unavailability: { startNs: start, durationNs: 10n } });
  const cases: Array<[string, Schedule, Schedule, string[]]> = [
    ['nothing', { windows: [w(1n, 'a')] }, { windows: [w(1n, 'a')] }, []],
    ['added', { windows: [w(1n, 'a')] }, { windows: [w(1n, 'a', 'b')] }, ['b']],
    ['removed', { windows: [w(1n, 'a', 'b')] }, { windows: [w(1n, 'a')] }, ['b']],
    ['moved to another time', { windows: [w(1n, 'a'), w(2n, 'b')] }, { windows: [w(2n, 'a', 'b')] }, ['a']],
    ['same time, another window object', { windows: [w(1n, 'a'), w(1n, 'b')] }, { windows: [w(1n, 'a', 'b')] }, []],
    ['hostname case is the same machine', { windows: [w(1n, 'A')] }, { windows: [w(1n, 'a')] }, []],
    ['cleared', { windows: [w(1n, 'a', 'b')] }, { windows: [] }, ['a', 'b']],
  ];
  for (const [name, before, after, want] of cases) {
    test(name, () => assert.deepEqual(scheduleChanges(before, after).map((m) => m.hostname?.toLowerCase()).sort(), want));
  }
});

describe('secret files', () => {
  const modes: Array<[number, boolean]> = [
    [0o600, true],
    [0o400, true],
    [0o640, true],
    [0o644, false],
    [0o660, false],
    [0o602, false],
  ];
  for (const [mode, safe] of modes) test(`mode ${mode.toString(8)}: ${safe ? 'read' : 'refused'}`, () => assert.equal(unsafeModeReason(mode) === undefined, safe));

  test('readSecretFile refuses others-readable files and names the flag and path', (t) => {
    const dir = mkdtempSync(join(tmpdir(), 'drydock-secret-'));
    t.after(() => rmSync(dir, { recursive: true, force: true }));
    const f = join(dir, 'creds');
    writeFileSync(f, 'ops s1\n');
    chmodSync(f, 0o644);
    const r = readSecretFile(f, '--credentials');
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^--credentials .*creds is readable by others \(mode 0644\); run chmod 600 on it$/);
    chmodSync(f, 0o600);
    assert.deepEqual(readSecretFile(f, '--credentials'), { ok: true, text: 'ops s1\n' });
    assert.match((readSecretFile(join(dir, 'missing'), '--x') as { error: string }).error, /no such file/);
    assert.match((readSecretFile(dir, '--x') as { error: string }).error, /is not a regular file/);
  });
});

describe('MasterSecurity.authenticate: per realm', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-sec-'));
  const creds = join(dir, 'credentials');
  writeFileSync(creds, 'ops s1\n', { mode: 0o600 });
  const config = (over: Partial<SecurityConfig>): SecurityConfig => ({
    authenticateHttpReadwrite: false,
    authenticateHttpReadonly: false,
    authenticateFrameworks: false,
    authenticateAgents: false,
    credentialsFile: creds,
    acls: undefined,
    ...over,
  });
  const silent = new Logger({ sink: () => {} });
  const load = (over: Partial<SecurityConfig>): MasterSecurity => {
    const r = loadSecurity(config(over), silent);
    assert.ok(r.ok);
    return r.security;
  };
  const good = authorizationHeader({ kind: 'basic', principal: 'ops', secret: 's1' });
  const wrong = authorizationHeader({ kind: 'basic', principal: 'ops', secret: 'nope' });
  const rw = load({ authenticateHttpReadwrite: true });
  const cases: Array<[string, MasterSecurity, string | undefined, Parameters<MasterSecurity['authenticate']>[1], string]> = [
    ['required, none', rw, undefined, 'mesos-master-readwrite', '401'],
    ['required, good', rw, good, 'mesos-master-readwrite', 'ops'],
    ['required, wrong', rw, wrong, 'mesos-master-readwrite', '401'],
    ['not required, none', rw, undefined, 'mesos-master-readonly', 'anonymous'],
    ['not required, wrong: still refused', rw, wrong, 'mesos-master-readonly', '401'],
    ['not required, good: known', rw, good, 'mesos-master-readonly', 'ops'],
    ['agents not required', rw, undefined, 'drydock-agent', 'anonymous'],
  ];
  for (const [name, sec, header, realm, want] of cases) {
    test(name, () => {
      const r = sec.authenticate(header, realm);
      const got = r.ok ? (r.access.principal ?? 'anonymous') : String(r.error.status);
      assert.equal(got, want);
      if (!r.ok) {
        assert.equal(r.error.message, '401 Unauthorized.');
        assert.equal(r.headers['WWW-Authenticate'], `Basic realm="${realm}"`);
      }
    });
  }
  test('load errors name the flag', () => {
    const r = loadSecurity(config({ acls: '{"drain_agents": 3}' }), silent);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, /^--acls: 'drain_agents' must be a list/);
    const missing = loadSecurity(config({ acls: join(dir, 'nope.json') }), silent);
    assert.equal(missing.ok, false);
    if (!missing.ok) assert.match(missing.error, /neither JSON nor a readable file \(no such file\)/);
  });
  test('Access.check: 403 names action, principal and object; noted for the audit line', () => {
    const acls = loadSecurity(config({ acls: JSON.stringify({ permissive: false, drain_agents: [{ principals: { values: ['ops'] }, agents: { values: ['rack:r1'] } }] }) }), silent);
    assert.ok(acls.ok);
    const r = acls.security.authenticate(good, 'mesos-master-readwrite');
    assert.ok(r.ok);
    const refused = r.access.check('drain_agents', { agentId: 'a2', hostname: 'h2', ip: '10.0.0.2', attributes: { rack: 'r2' } });
    assert.equal(refused?.status, 403);
    assert.equal(refused?.message, "Forbidden: principal 'ops' may not drain_agents on agent a2 on h2 (10.0.0.2)");
    assert.deepEqual(r.access.noted, { action: 'drain_agents', object: 'agent a2 on h2 (10.0.0.2)' });
    assert.equal(r.access.check('drain_agents', { agentId: 'a1', hostname: 'h1', attributes: { rack: 'r1' } }), undefined);
  });
  test.after(() => rmSync(dir, { recursive: true, force: true }));
});

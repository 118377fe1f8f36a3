/**
 * Frameworks bound to principals (frameworks.ts), as tables: what a SUBSCRIBE registers or why
 * it is refused, which callers may make the other calls, UPDATE_FRAMEWORK's principal, and the
 * roles register_frameworks checks. Plus the view decisions of shared/visibility.ts.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { FrameworkInfo } from '../../shared/mesos.js';
import { callRefusal, frameworkPrincipal, frameworkRoles, subscribeAs, withOwnPrincipal, type FrameworkCaller } from '../../master/cores/frameworks.js';
import { Authorizer, parseAcls } from '../../shared/acls.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import { allVisible, frameworkUser, taskUser, viewRights, visible } from '../../shared/visibility.js';

const ALICE: FrameworkCaller = { principal: 'alice', authenticates: true };
const BOB: FrameworkCaller = { principal: 'bob', authenticates: true };
const ANON: FrameworkCaller = { principal: undefined, authenticates: true };
/** A master without --credentials: every caller is anonymous and principals are claims. */
const OPEN: FrameworkCaller = { principal: undefined, authenticates: false };

const info = (o: Partial<FrameworkInfo> = {}): FrameworkInfo => ({ user: 'u', name: 'fw', ...o });

describe('subscribeAs', () => {
  // [name, requested, caller, known framework's info, expected principal registered | error code]
  const cases: Array<[string, FrameworkInfo, FrameworkCaller, FrameworkInfo | undefined, { principal: string | undefined } | string]> = [
    ['new framework, no principal: filled with the caller\'s', info(), ALICE, undefined, { principal: 'alice' }],
    ["new framework, '' (a generated client's unset): filled", info({ principal: '' }), ALICE, undefined, { principal: 'alice' }],
    ['new framework naming its own principal', info({ principal: 'alice' }), ALICE, undefined, { principal: 'alice' }],
    ['new framework naming another principal', info({ principal: 'bob' }), ALICE, undefined, 'FRAMEWORK_PRINCIPAL_NOT_AUTHENTICATED'],
    ['anonymous caller claiming a principal', info({ principal: 'alice' }), ANON, undefined, 'FRAMEWORK_PRINCIPAL_NOT_AUTHENTICATED'],
    ['anonymous caller, no principal: unbound', info(), ANON, undefined, { principal: undefined }],
    ['failover by its owner', info({ id: { value: 'F' } }), ALICE, info({ id: { value: 'F' }, principal: 'alice' }), { principal: 'alice' }],
    ['failover by another principal (hijack)', info({ id: { value: 'F' } }), BOB, info({ id: { value: 'F' }, principal: 'alice' }), 'FRAMEWORK_PRINCIPAL_MISMATCH'],
    ['hijack naming the owner as its principal', info({ id: { value: 'F' }, principal: 'alice' }), BOB, info({ id: { value: 'F' }, principal: 'alice' }), 'FRAMEWORK_PRINCIPAL_NOT_AUTHENTICATED'],
    ['failover anonymously of a bound framework', info({ id: { value: 'F' } }), ANON, info({ id: { value: 'F' }, principal: 'alice' }), 'FRAMEWORK_PRINCIPAL_MISMATCH'],
    ['an unbound framework is claimed by the first authenticated SUBSCRIBE', info({ id: { value: 'F' } }), BOB, info({ id: { value: 'F' } }), { principal: 'bob' }],
    ['an unbound framework stays open to anonymous callers', info({ id: { value: 'F' } }), ANON, info({ id: { value: 'F' } }), { principal: undefined }],
    ['no credentials on the master: a claimed principal is taken as is', info({ principal: 'alice' }), OPEN, undefined, { principal: 'alice' }],
    ['no credentials on the master: nothing is bound', info({ id: { value: 'F' } }), OPEN, info({ id: { value: 'F' }, principal: 'alice' }), { principal: undefined }],
  ];
  for (const [name, requested, caller, known, want] of cases) {
    test(name, () => {
      const got = subscribeAs(requested, caller, known);
      if (typeof want === 'string') {
        assert.equal(got.ok, false);
        if (!got.ok) {
          assert.equal(got.error.code, want);
          assert.equal(got.error.status, 403);
        }
      } else {
        assert.ok(got.ok, got.ok ? '' : got.error.message);
        if (got.ok) assert.equal(frameworkPrincipal(got.info), want.principal);
      }
    });
  }

  test('the messages name the principals', () => {
    const hijack = subscribeAs(info({ id: { value: 'F' } }), BOB, info({ id: { value: 'F' }, principal: 'alice' }));
    assert.ok(!hijack.ok);
    if (!hijack.ok) assert.equal(hijack.error.message, "Framework 'F' belongs to principal 'alice', not to 'bob'");
    const claim = subscribeAs(info({ principal: 'root' }), ALICE, undefined);
    assert.ok(!claim.ok);
    if (!claim.ok) assert.equal(claim.error.message, "Framework principal 'root' does not match authenticated principal 'alice'");
    const anon = subscribeAs(info({ principal: 'root' }), ANON, undefined);
    assert.ok(!anon.ok);
    if (!anon.ok) assert.equal(anon.error.message, "Framework principal 'root' is not authenticated: send that principal's credentials");
  });
});

describe('callRefusal', () => {
  const bound = info({ id: { value: 'F' }, principal: 'alice' });
  const cases: Array<[string, FrameworkInfo, FrameworkCaller, string | undefined]> = [
    ['the owner', bound, ALICE, undefined],
    ['another principal', bound, BOB, "Framework 'F' belongs to principal 'alice', not to 'bob'"],
    ['an anonymous caller', bound, ANON, "Framework 'F' belongs to principal 'alice', not to an anonymous caller"],
    ['an unbound framework: anyone', info({ id: { value: 'F' } }), BOB, undefined],
    ["an unbound framework ('' principal): anyone", info({ id: { value: 'F' }, principal: '' }), ANON, undefined],
    ['a master without credentials: nothing is bound', bound, OPEN, undefined],
  ];
  for (const [name, fw, caller, want] of cases) {
    test(name, () => {
      assert.equal(callRefusal('F', fw, caller)?.message, want);
    });
  }
});

describe('withOwnPrincipal (UPDATE_FRAMEWORK)', () => {
  const cases: Array<[string, FrameworkInfo, FrameworkInfo, string | undefined]> = [
    ['unset takes the framework\'s own', info(), info({ principal: 'alice' }), 'alice'],
    ["'' takes the framework's own", info({ principal: '' }), info({ principal: 'alice' }), 'alice'],
    ['a named principal is kept (a change is refused by the caller)', info({ principal: 'bob' }), info({ principal: 'alice' }), 'bob'],
    ['unbound stays unbound', info({ principal: '' }), info(), undefined],
  ];
  for (const [name, requested, current, want] of cases) {
    test(name, () => {
      const got = withOwnPrincipal(requested, current);
      assert.equal(got.principal, want);
      assert.equal('principal' in got, want !== undefined);
    });
  }
});

describe('frameworkRoles', () => {
  const cases: Array<[string, FrameworkInfo, string[]]> = [
    ['no role: *', info(), ['*']],
    ["'' role: *", info({ role: '' }), ['*']],
    ['role', info({ role: 'web' }), ['web']],
    ['MULTI_ROLE: roles, once each', info({ roles: ['a', 'b', 'a'], role: 'ignored', capabilities: [{ type: 'MULTI_ROLE' }] }), ['a', 'b']],
    ['roles without MULTI_ROLE are not read (Mesos)', info({ roles: ['a'] }), ['*']],
  ];
  for (const [name, fw, want] of cases) test(name, () => assert.deepEqual(frameworkRoles(fw), want));
});

describe('visibility', () => {
  test('taskUser: the task\'s own user, else its command\'s, else its framework\'s', () => {
    const cases: Array<[Parameters<typeof taskUser>[0], string | undefined, string | undefined]> = [
      [{ user: 'alice' }, 'fw', 'alice'],
      [{ command: { user: 'bob' } }, 'fw', 'bob'],
      [{ user: '', command: { user: '' } }, 'fw', 'fw'],
      [{}, 'fw', 'fw'],
      [{}, '', undefined],
      [{}, undefined, undefined],
    ];
    for (const [task, fw, want] of cases) assert.equal(taskUser(task, fw), want, JSON.stringify([task, fw]));
  });

  test('frameworkUser', () => {
    assert.equal(frameworkUser({ user: 'web' }), 'web');
    assert.equal(frameworkUser({ user: '' }), undefined);
    assert.equal(frameworkUser(undefined), undefined);
  });

  test('visible and allVisible', () => {
    const may = (o: unknown): boolean => o === 'a' || o === undefined;
    assert.deepEqual(visible(['a', 'b', 'a'], may, (x) => x), ['a', 'a']);
    assert.deepEqual(visible(['a', 'b'], undefined, (x) => x), ['a', 'b']);
    assert.equal(allVisible(['a', 'a'], may), true);
    assert.equal(allVisible(['a', 'b'], may), false);
    assert.equal(allVisible([], (o) => o === 'a'), true);
    assert.equal(allVisible(undefined, may), true, 'unknown: decided as an unknown object');
    assert.equal(allVisible(undefined, (o) => o !== undefined), false);
  });

  test('viewRights: undefined without ACLs; with them, one decision per action', () => {
    assert.equal(viewRights(new Access(MasterSecurity.open(), 'alice')), undefined);
    assert.equal(viewRights(undefined), undefined);
    const acls = parseAcls(
      JSON.stringify({
        permissive: false,
        view_frameworks: [{ principals: { values: ['alice'] }, users: { values: ['web'] } }],
        view_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
        view_agents: [{ principals: { values: ['alice'] }, agents: { values: ['rack:r1'] } }],
      }),
    );
    assert.ok(acls.ok);
    if (!acls.ok) return;
    const security = new MasterSecurity({
      config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
      authorizer: new Authorizer(acls.value),
    });
    const rights = viewRights(new Access(security, 'alice'));
    assert.ok(rights !== undefined);
    assert.equal(rights.frameworks('web'), true);
    assert.equal(rights.frameworks('batch'), false);
    assert.equal(rights.frameworks(undefined), false, 'an unknown user matches only ANY');
    assert.equal(rights.tasks(undefined), true);
    assert.equal(rights.agents({ agentId: 'A', hostname: 'h', attributes: { rack: 'r1' } }), true);
    assert.equal(rights.agents({ agentId: 'B', hostname: 'h', attributes: { rack: 'r2' } }), false);
    const bob = viewRights(new Access(security, 'bob'));
    assert.equal(bob?.frameworks('web'), false);
  });
});

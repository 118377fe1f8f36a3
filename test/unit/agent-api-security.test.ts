/**
 * The agent API's security as pure decisions: which realm a call is in, who gets through
 * (agent/security.ts over shared/authentication.ts), and what GET_TASKS and GET_CONTAINERS show
 * a caller (agent/views.ts over the master's ACLs and view rules, shared/acls.ts and
 * shared/visibility.ts). The real agent is driven in test/integration/agent-api-auth.test.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callRealm, readOnlyCall } from '../../agent/api.js';
import { AgentSecurity } from '../../agent/security.js';
import { ownerOf, visibleOwned, visibleTaskLists, type OwnedTask, type TaskLists } from '../../agent/views.js';
import { Authenticator } from '../../shared/authentication.js';
import { Authorizer, parseAcls } from '../../shared/acls.js';
import { authorizationHeader } from '../../shared/credentials.js';
import type { Task, TaskState } from '../../shared/mesos.js';
import { viewRights } from '../../shared/visibility.js';

const ANY = { type: 'ANY' };
const only = (...values: string[]): { values: string[] } => ({ values });

/** web-team sees framework user web's tasks, ops everything; nobody else anything (permissive false). */
const ACLS = {
  permissive: false,
  view_tasks: [
    { principals: only('ops'), users: ANY },
    { principals: only('web-team'), users: only('web') },
  ],
  view_flags: [{ principals: only('ops'), flags: ANY }],
  set_log_level: [{ principals: only('ops'), level: ANY }],
  get_endpoints: [{ principals: ANY, paths: only('/metrics') }],
};

function authorizer(acls: unknown): Authorizer {
  const parsed = parseAcls(JSON.stringify(acls));
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
  return new Authorizer(parsed.value);
}

function security(o: { readonly?: boolean; readwrite?: boolean; acls?: unknown; credentials?: boolean } = {}): AgentSecurity {
  return new AgentSecurity({
    config: { authenticateHttpReadonly: o.readonly ?? false, authenticateHttpReadwrite: o.readwrite ?? false, httpCredentialsFile: o.credentials === false ? undefined : '/c.json', acls: o.acls === undefined ? undefined : JSON.stringify(o.acls) },
    authenticator: o.credentials === false ? undefined : new Authenticator(['ops', 'web-team', 'viewer'].map((p) => ({ principal: p, secret: `${p}-secret`, tokens: [] }))),
    authorizer: o.acls === undefined ? undefined : authorizer(o.acls),
  });
}

const basic = (principal: string, secret = `${principal}-secret`): string => authorizationHeader({ kind: 'basic', principal, secret });

function task(id: string, frameworkId: string, state: TaskState = 'TASK_RUNNING'): Task {
  return { name: id, task_id: { value: id }, framework_id: { value: frameworkId }, agent_id: { value: 'S1' }, state, resources: [], statuses: [] };
}

/** Two frameworks on one agent: web's (user web) and batch's (user batch), plus a task whose command names its own user, and one whose user is unknown. */
function lists(): TaskLists<OwnedTask> {
  const owned = (t: Task, user: string | undefined): OwnedTask => ({ task: t, user });
  return {
    pending_tasks: [owned(task('web-staging', 'F-web', 'TASK_STAGING'), 'web')],
    queued_tasks: [],
    launched_tasks: [owned(task('web-1', 'F-web'), 'web'), owned(task('batch-1', 'F-batch'), 'batch'), owned(task('web-as-batch', 'F-web'), 'batch'), owned(task('nobody', 'F-old'), undefined)],
    terminated_tasks: [owned(task('batch-done', 'F-batch', 'TASK_FINISHED'), 'batch')],
    completed_tasks: [owned(task('web-done', 'F-web', 'TASK_FINISHED'), 'web'), owned(task('batch-old', 'F-batch', 'TASK_KILLED'), 'batch')],
  };
}

const ids = (l: TaskLists<Task>): string[][] => [l.pending_tasks, l.queued_tasks, l.launched_tasks, l.terminated_tasks, l.completed_tasks].map((x) => x.map((t) => t.task_id.value));

test('GET_TASKS as each caller sees it: view_tasks on the task\'s user, in every list, order kept', () => {
  const sec = security({ acls: ACLS });
  const cases: Array<[string | undefined, string[][]]> = [
    ['ops', [['web-staging'], [], ['web-1', 'batch-1', 'web-as-batch', 'nobody'], ['batch-done'], ['web-done', 'batch-old']]],
    ['web-team', [['web-staging'], [], ['web-1'], [], ['web-done']]],
    // No entry names viewer, and an unknown user matches only ANY entries: nothing.
    ['viewer', [[], [], [], [], []]],
    [undefined, [[], [], [], [], []]],
  ];
  for (const [principal, want] of cases) {
    const caller = sec.authenticate(principal === undefined ? undefined : basic(principal), 'mesos-agent-readonly');
    assert.ok(caller.ok);
    assert.deepEqual(ids(visibleTaskLists(lists(), viewRights(caller.caller)?.tasks)), want, String(principal));
  }
});

test('without ACLs nothing is filtered (and no decision is asked)', () => {
  const caller = security().authenticate(undefined, 'mesos-agent-readonly');
  assert.ok(caller.ok);
  assert.equal(viewRights(caller.caller), undefined);
  assert.deepEqual(ids(visibleTaskLists(lists(), undefined)), ids(visibleTaskLists(lists(), () => true)));
  assert.equal(visibleTaskLists(lists(), undefined).launched_tasks.length, 4);
});

test('GET_CONTAINERS: a container is its task\'s, decided by the same user', () => {
  const containers = [
    { taskId: 'web-1', user: 'web' },
    { taskId: 'batch-1', user: 'batch' },
    { taskId: 'nobody', user: undefined },
  ];
  const sec = security({ acls: ACLS });
  const seen = (p: string): string[] => {
    const c = sec.authenticate(basic(p), 'mesos-agent-readonly');
    assert.ok(c.ok);
    return visibleOwned(containers, viewRights(c.caller)?.tasks).map((x) => x.taskId);
  };
  assert.deepEqual(seen('ops'), ['web-1', 'batch-1', 'nobody']);
  assert.deepEqual(seen('web-team'), ['web-1']);
  assert.deepEqual(seen('viewer'), []);
});

test('a task is viewed as its command\'s user, else its framework\'s; an empty user is unknown', () => {
  const cases: Array<[{ command?: { user?: string } }, { user?: string }, string | undefined]> = [
    [{}, { user: 'web' }, 'web'],
    [{ command: {} }, { user: 'web' }, 'web'],
    [{ command: { user: 'batch' } }, { user: 'web' }, 'batch'],
    [{ command: { user: '' } }, { user: 'web' }, 'web'],
    [{}, { user: '' }, undefined],
    [{}, {}, undefined],
  ];
  for (const [t, f, want] of cases) assert.equal(ownerOf(t, f), want, JSON.stringify([t, f]));
});

test('realms: GET_* (and the files calls) read; everything else may change state', () => {
  const cases: Array<[string, boolean]> = [
    ['GET_TASKS', true], ['GET_CONTAINERS', true], ['GET_AGENT', true], ['GET_FLAGS', true], ['GET_LOGGING_LEVEL', true], ['GET_METRICS', true],
    ['LIST_FILES', true], ['READ_FILE', true],
    ['SET_LOGGING_LEVEL', false], ['LAUNCH_NESTED_CONTAINER', false], ['KILL_CONTAINER', false], ['PRUNE_IMAGES', false], ['UNKNOWN', false],
  ];
  for (const [type, read] of cases) {
    assert.equal(readOnlyCall(type), read, type);
    assert.equal(callRealm(type), read ? 'mesos-agent-readonly' : 'mesos-agent-readwrite', type);
  }
});

test('authentication: required per realm, a wrong secret is 401 even where none is required, the challenge names the realm', () => {
  type Case = [string, AgentSecurity, string | undefined, 'mesos-agent-readonly' | 'mesos-agent-readwrite', string | undefined | 401];
  const open = security();
  const both = security({ readonly: true, readwrite: true });
  const writes = security({ readwrite: true });
  const cases: Case[] = [
    ['open, anonymous', open, undefined, 'mesos-agent-readonly', undefined],
    ['open, right secret', open, basic('ops'), 'mesos-agent-readwrite', 'ops'],
    ['open, wrong secret', open, basic('ops', 'guess'), 'mesos-agent-readonly', 401],
    ['open, unknown principal', open, basic('mallory'), 'mesos-agent-readonly', 401],
    ['open, not Basic', open, 'Digest x', 'mesos-agent-readonly', 401],
    ['both, anonymous read', both, undefined, 'mesos-agent-readonly', 401],
    ['both, anonymous write', both, undefined, 'mesos-agent-readwrite', 401],
    ['both, right secret', both, basic('web-team'), 'mesos-agent-readonly', 'web-team'],
    ['writes only, anonymous read', writes, undefined, 'mesos-agent-readonly', undefined],
    ['writes only, anonymous write', writes, undefined, 'mesos-agent-readwrite', 401],
    // Without --http_credentials nothing can be checked: presented credentials pass as anonymous where none are required (the master's rule).
    ['no credentials file, something presented', security({ credentials: false }), basic('ops'), 'mesos-agent-readonly', undefined],
  ];
  for (const [what, sec, header, realm, want] of cases) {
    const a = sec.authenticate(header, realm);
    if (want === 401) {
      assert.equal(a.ok, false, what);
      if (!a.ok) {
        assert.equal(a.error.status, 401, what);
        assert.equal(a.error.message, '401 Unauthorized.', what);
        assert.deepEqual(a.headers, { 'WWW-Authenticate': `Basic realm="${realm}"` }, what);
      }
    } else {
      assert.ok(a.ok, what);
      if (a.ok) assert.equal(a.caller.principal, want, what);
    }
  }
});

test('checks: a refusal is a 403 naming action, principal and object; without ACLs everything is allowed', () => {
  const sec = security({ acls: ACLS });
  const as = (p: string | undefined) => {
    const a = sec.authenticate(p === undefined ? undefined : basic(p), 'mesos-agent-readwrite');
    assert.ok(a.ok);
    return a.caller;
  };
  assert.equal(as('ops').check('set_log_level', undefined), undefined);
  assert.equal(as('ops').check('view_flags', undefined), undefined);
  const refused = as('viewer').check('set_log_level', undefined);
  assert.equal(refused?.status, 403);
  assert.equal(refused?.message, "Forbidden: principal 'viewer' may not set_log_level");
  assert.equal(as(undefined).check('view_flags', undefined)?.message, 'Forbidden: an anonymous caller may not view_flags');
  assert.equal(as('web-team').check('get_endpoints', '/metrics'), undefined);
  assert.equal(as('web-team').check('get_endpoints', '/metrics/snapshot')?.message, "Forbidden: principal 'web-team' may not get_endpoints on '/metrics/snapshot'");
  const caller = as('web-team');
  caller.check('set_log_level', undefined);
  assert.deepEqual(caller.noted, { action: 'set_log_level', object: '' }, 'the audit line names what was checked');

  const open = security().authenticate(undefined, 'mesos-agent-readwrite');
  assert.ok(open.ok);
  assert.equal(open.caller.filters, false);
  assert.equal(open.caller.check('set_log_level', undefined), undefined);
});

test('the ACL table knows set_log_level (Mesos\' agent action, object level), and both daemons parse one file', () => {
  const parsed = parseAcls(JSON.stringify({ set_log_level: [{ principals: only('ops'), level: ANY }], register_agents: [{ principals: ANY, agents: ANY }] }));
  assert.ok(parsed.ok, parsed.ok ? '' : parsed.error);
  const bad = parseAcls(JSON.stringify({ set_log_level: [{ principals: only('ops'), users: ANY }] }));
  assert.equal(bad.ok, false);
  if (!bad.ok) assert.match(bad.error, /set_log_level\[0\]\.users is not a field of set_log_level \(principals, level\)/);
});

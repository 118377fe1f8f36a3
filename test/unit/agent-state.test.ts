/**
 * The agent's Mesos-shaped answers as pure functions, table-driven: the legacy JSON models
 * (shared/legacy-model.ts), the JSONP callback rule (shared/jsonp.ts), the agent's /state,
 * GET_FRAMEWORKS and GET_EXECUTORS with their view filters (agent/state.ts), the sandboxes'
 * virtual paths and ACL (agent/sandboxes.ts), and the table of calls itself (agent/calls.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AGENT_CALL_TYPES, HTTP_WAYS, ROWS, V1_ROWS, v1Access } from '../../agent/calls.js';
import { callRealm } from '../../agent/api.js';
import { attachments, latestRunPath, locate, mayReadSandbox, readVirtualPath } from '../../agent/sandboxes.js';
import { executorName, getExecutors, getFrameworks, legacyState, type AgentSelf, type StateRights } from '../../agent/state.js';
import type { ExecutorFacts } from '../../agent/supervisor.js';
import { Authorizer, parseAcls, type AclAction, type AclObject } from '../../shared/acls.js';
import { fail } from '../../shared/errors.js';
import { jsonpBody, jsonpCallback } from '../../shared/jsonp.js';
import { attributesModel, fileInfo, fileModel, labelsModel, modeText, resourcesModel, taskModel } from '../../shared/legacy-model.js';
import type { FrameworkInfo, TaskInfo, TaskState } from '../../shared/mesos.js';

type Json = Record<string, unknown>;

test('resources as one object: scalars summed (cpus, gpus, mem, disk always there), ranges merged and printed, sets, revocable apart', () => {
  const cases: Array<[string, Parameters<typeof resourcesModel>[0], Json]> = [
    ['none', [], { cpus: 0, gpus: 0, mem: 0, disk: 0 }],
    ['scalars, summed as Mesos\' fixed point', [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }, { name: 'cpus', type: 'SCALAR', scalar: { value: 0.2 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 64 } }], { cpus: 0.3, gpus: 0, mem: 64, disk: 0 }],
    ['ranges merged', [{ name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31005, end: 31010 }, { begin: 31000, end: 31004 }] } }, { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 32000, end: 32000 }] } }], { cpus: 0, gpus: 0, mem: 0, disk: 0, ports: '[31000-31010, 32000-32000]' }],
    ['a set', [{ name: 'zones', type: 'SET', set: { item: ['b', 'a'] } }], { cpus: 0, gpus: 0, mem: 0, disk: 0, zones: '{a, b}' }],
    ['revocable apart', [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 }, revocable: {} } as never], { cpus: 0, gpus: 0, mem: 0, disk: 0, cpus_revocable: 1 }],
  ];
  for (const [name, input, want] of cases) assert.deepEqual(resourcesModel(input), want, name);
});

test('attributes, labels, modes and files in the legacy shapes', () => {
  assert.deepEqual(
    attributesModel([
      { name: 'rack', type: 'TEXT', text: { value: 'r1' } },
      { name: 'slots', type: 'SCALAR', scalar: { value: 4 } },
      { name: 'ids', type: 'RANGES', ranges: { range: [{ begin: 1, end: 3 }] } },
      { name: 'tags', type: 'SET', set: { item: ['x', 'y'] } },
    ]),
    { rack: 'r1', slots: 4, ids: '[1-3]', tags: '{x, y}' },
  );
  assert.deepEqual(labelsModel({ labels: [{ key: 'a', value: '1' }, { key: 'b' }] }), [{ key: 'a', value: '1' }, { key: 'b' }]);
  assert.deepEqual(labelsModel(undefined), []);
  const modes: Array<[number, string]> = [
    [0o100644, '-rw-r--r--'],
    [0o040755, 'drwxr-xr-x'],
    [0o120777, 'lrwxrwxrwx'],
    [0o010600, 'prw-------'],
    [0o140700, 'srwx------'],
    [0o020666, 'crw-rw-rw-'],
    [0o060660, 'brw-rw----'],
    [0o104755, '-rwxr-xr-x'],
  ];
  for (const [mode, text] of modes) assert.equal(modeText(mode), text, mode.toString(8));
  const f = { path: '/s/stdout', nlink: 1, size: 12, mtimeSecs: 1_700_000_000.9, mode: 0o100644, uid: 'root', gid: 'root' };
  assert.deepEqual(fileModel(f), { path: '/s/stdout', nlink: 1, size: 12, mtime: 1_700_000_000, mode: '-rw-r--r--', uid: 'root', gid: 'root' });
  assert.deepEqual(fileInfo(f), { path: '/s/stdout', nlink: 1, size: 12, mtime: { nanoseconds: 1_700_000_000_000_000_000n }, mode: 0o100644, uid: 'root', gid: 'root' });
  const model = taskModel({ id: 't', name: 'n', frameworkId: 'F', executorId: '', agentId: 'S0', state: 'TASK_RUNNING', resources: [], role: '*', statuses: [{ state: 'TASK_RUNNING', timestamp: 1.5, healthy: true }] });
  assert.deepEqual(model, { id: 't', name: 'n', framework_id: 'F', executor_id: '', slave_id: 'S0', state: 'TASK_RUNNING', resources: { cpus: 0, gpus: 0, mem: 0, disk: 0 }, role: '*', statuses: [{ state: 'TASK_RUNNING', timestamp: 1.5, healthy: true }] });
});

test('JSONP: a JavaScript name or dotted path, at most 128 characters; anything else is a 400; none or empty is JSON', () => {
  const ok = ['cb', 'angular.callbacks._0', 'jQuery1234_5678', '$x.y$', '_'];
  const bad = ['alert(1)', 'a;b', 'a b', '1a', 'a..b', '.a', 'a.', 'a[0]', 'a-b', 'x'.repeat(129), 'é', '</script>'];
  for (const cb of ok) assert.deepEqual(jsonpCallback(`?jsonp=${encodeURIComponent(cb)}`), { ok: true, callback: cb }, cb);
  for (const cb of bad) {
    const r = jsonpCallback(`jsonp=${encodeURIComponent(cb)}&path=/x`);
    assert.equal(r.ok, false, cb);
    if (!r.ok) assert.equal(r.error.status, 400);
  }
  assert.deepEqual(jsonpCallback(''), { ok: true, callback: undefined });
  assert.deepEqual(jsonpCallback('?jsonp='), { ok: true, callback: undefined });
  assert.deepEqual(jsonpBody('{"a":1}', 'cb'), { body: 'cb({"a":1});', contentType: 'text/javascript' });
  assert.deepEqual(jsonpBody('{"a":1}', undefined), { body: '{"a":1}', contentType: 'application/json' });
  assert.equal(jsonpBody(JSON.stringify({ d: 'a\u2028b\u2029' }), 'cb').body, 'cb({"d":"a\\u2028b\\u2029"});', 'line separators escaped in a script');
});

test("a command executor's name, as Mesos' agent makes it", () => {
  const t = (command: TaskInfo['command']): TaskInfo => ({ name: 'x', task_id: { value: 'web-1' }, agent_id: { value: 'S0' }, resources: [], ...(command === undefined ? {} : { command }) });
  const cases: Array<[TaskInfo['command'], string]> = [
    [{ value: 'sleep 60' }, "Command Executor (Task: web-1) (Command: sh -c 'sleep 60')"],
    [{ value: 'python3 -m http.server 8080' }, "Command Executor (Task: web-1) (Command: sh -c 'python3 -m h...')"],
    [{ shell: false, value: '/bin/echo', arguments: ['echo', 'hi'] }, 'Command Executor (Task: web-1) (Command: [/bin/echo, e...])'],
    [{ shell: false, value: 'ls' }, 'Command Executor (Task: web-1) (Command: [ls])'],
    [{ shell: false }, 'Command Executor (Task: web-1) (Command: NO EXECUTABLE)'],
    [undefined, 'Command Executor (Task: web-1) (Command: NO COMMAND)'],
  ];
  for (const [command, want] of cases) assert.equal(executorName(t(command)), want, JSON.stringify(command));
});

// ---- /state, GET_FRAMEWORKS, GET_EXECUTORS -------------------------------------------------------

const fw = (id: string, user: string, extra: Partial<FrameworkInfo> = {}): FrameworkInfo => ({ id: { value: id }, user, name: `${id}-name`, ...extra });

function executor(id: string, framework: FrameworkInfo, phase: ExecutorFacts['phase'], state: TaskState, user = framework.user): ExecutorFacts {
  return {
    frameworkId: framework.id?.value ?? '',
    framework,
    task: { name: id, task_id: { value: id }, agent_id: { value: 'S0' }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }], command: { value: 'sleep 1' } },
    state,
    statuses: [{ task_id: { value: id }, state, source: 'SOURCE_EXECUTOR', timestamp: 10 }],
    containerId: `c-${id}`,
    sandbox: `/w/sandboxes/${framework.id?.value ?? ''}/${id}`,
    user,
    phase,
  };
}

const WEB = fw('F-web', 'web', { capabilities: [{ type: 'MULTI_ROLE' }], roles: ['web'] });
const BATCH = fw('F-batch', 'batch');
const OLD = fw('F-old', 'web');
/** web: one live, one ended awaiting its acknowledgement, one completed; batch: one live; old: all completed. */
const EXECUTORS: ExecutorFacts[] = [
  executor('web-1', WEB, 'live', 'TASK_RUNNING'),
  executor('web-2', WEB, 'terminated', 'TASK_FAILED'),
  executor('batch-1', BATCH, 'live', 'TASK_RUNNING'),
  executor('web-0', WEB, 'completed', 'TASK_FINISHED'),
  executor('old-1', OLD, 'completed', 'TASK_KILLED'),
];

const SELF: AgentSelf = {
  agentId: 'S0',
  hostname: 'h1',
  ip: '10.0.0.1',
  port: 5051,
  resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 4 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 100 }, role: 'web' }],
  attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }],
  capabilities: ['MULTI_ROLE'],
  startSecs: 5,
  drain: undefined,
  masterHost: undefined,
  flags: [{ name: 'port', value: '5051' }],
  build: { version: '1.12.0' },
};

const ALL: StateRights = { flags: true };
const by = (allowed: string[]): ((o: AclObject) => boolean) => (o) => typeof o === 'string' && allowed.includes(o);

test('/state: frameworks active while one executor is, executors live while their task is known, tasks where Mesos lists them', () => {
  const s = legacyState(SELF, EXECUTORS, ALL);
  assert.equal(s['pid'], 'slave(1)@10.0.0.1:5051');
  assert.equal(s['id'], 'S0');
  assert.deepEqual(s['reserved_resources'], { web: { cpus: 0, gpus: 0, mem: 100, disk: 0 } });
  assert.deepEqual(s['unreserved_resources'], { cpus: 4, gpus: 0, mem: 0, disk: 0 });
  assert.deepEqual(s['unreserved_resources_allocated'], { cpus: 1, gpus: 0, mem: 0, disk: 0 }, 'the live tasks');
  assert.deepEqual(s['flags'], { port: '5051' });
  assert.equal(s['drain_config'], undefined);
  const frameworks = s['frameworks'] as Json[];
  assert.deepEqual(frameworks.map((f) => f['id']), ['F-web', 'F-batch']);
  assert.deepEqual((s['completed_frameworks'] as Json[]).map((f) => f['id']), ['F-old']);
  const web = frameworks[0] as Json;
  assert.deepEqual(web['roles'], ['web'], 'a MULTI_ROLE framework: roles');
  assert.equal(web['role'], undefined);
  assert.equal((frameworks[1] as Json)['role'], '*', 'another: role');
  const live = web['executors'] as Json[];
  assert.deepEqual(live.map((e) => e['id']), ['web-1', 'web-2']);
  assert.deepEqual(((live[0] as Json)['tasks'] as Json[]).map((t) => t['id']), ['web-1']);
  assert.deepEqual((live[1] as Json)['tasks'], [], 'an ended task awaiting its acknowledgement is among the completed tasks');
  assert.deepEqual(((live[1] as Json)['completed_tasks'] as Json[]).map((t) => t['state']), ['TASK_FAILED']);
  assert.deepEqual((live[1] as Json)['resources'], { cpus: 0, gpus: 0, mem: 0, disk: 0 });
  assert.equal((live[0] as Json)['directory'], '/w/sandboxes/F-web/web-1');
  assert.deepEqual(((web['completed_executors'] as Json[])[0] as Json)['id'], 'web-0');
  const drained = legacyState({ ...SELF, drain: { config: { mark_gone: false, max_grace_period: { nanoseconds: 5n } }, receivedMs: 1_700_000_000_999 } }, [], ALL);
  assert.deepEqual(drained['drain_config'], { mark_gone: false, max_grace_period: { nanoseconds: 5n } });
  assert.equal(drained['estimated_drain_start_time_seconds'], 1_700_000_000);
});

test('/state, GET_FRAMEWORKS, GET_EXECUTORS as a caller sees them: view_frameworks, view_executors, view_tasks by user; flags with view_flags', () => {
  const rights: StateRights = { frameworks: by(['web']), executors: by(['web']), tasks: by([]), flags: false };
  const s = legacyState(SELF, EXECUTORS, rights);
  assert.equal(s['flags'], undefined);
  assert.deepEqual((s['frameworks'] as Json[]).map((f) => f['id']), ['F-web']);
  assert.deepEqual((s['completed_frameworks'] as Json[]).map((f) => f['id']), ['F-old']);
  const live = ((s['frameworks'] as Json[])[0] as Json)['executors'] as Json[];
  assert.deepEqual(live.map((e) => e['id']), ['web-1', 'web-2'], 'the executors shown');
  assert.deepEqual(live.map((e) => [e['tasks'], e['completed_tasks']]), [[[], []], [[], []]], 'their tasks not (no view_tasks)');
  // A task whose command names another user is an executor of that user.
  const other = [executor('web-as-batch', WEB, 'live', 'TASK_RUNNING', 'batch')];
  assert.deepEqual((((legacyState(SELF, other, { ...rights, tasks: by(['web']) })['frameworks'] as Json[])[0] as Json)['executors'] as Json[]), []);
  assert.deepEqual(getFrameworks(EXECUTORS, rights), { frameworks: [{ framework_info: WEB }], completed_frameworks: [{ framework_info: OLD }] });
  const ex = getExecutors(EXECUTORS, { ...rights, executors: by(['batch']) });
  assert.deepEqual(ex, { executors: [], completed_executors: [] }, "batch's executors are batch's framework's, which is not shown");
  const all = getExecutors(EXECUTORS, ALL);
  assert.deepEqual((all['executors'] as Array<{ executor_info: Json }>).map((e) => (e.executor_info['executor_id'] as { value: string }).value), ['web-1', 'web-2', 'batch-1']);
  assert.deepEqual((all['completed_executors'] as Array<{ executor_info: Json }>).map((e) => (e.executor_info['executor_id'] as { value: string }).value), ['web-0', 'old-1']);
  assert.deepEqual((all['executors'] as Array<{ executor_info: Json }>)[0]?.executor_info, {
    executor_id: { value: 'web-1' },
    framework_id: { value: 'F-web' },
    name: "Command Executor (Task: web-1) (Command: sh -c 'sleep 1')",
    source: 'web-1',
  });
});

// ---- Sandboxes -----------------------------------------------------------------------------------

test('virtual paths: absolute, no .., no control characters; empty and . segments dropped', () => {
  const cases: Array<[string, string | undefined]> = [
    ['/a/b', '/a/b'],
    ['/a//b/./', '/a/b'],
    ['/', '/'],
    ['a/b', undefined],
    ['', undefined],
    ['/a/../b', undefined],
    ['/a/..', undefined],
    ['/a/b\u0000', undefined],
    ['/a/\nb', undefined],
    ['/a/...', '/a/...'],
  ];
  for (const [input, want] of cases) {
    const r = readVirtualPath(input);
    assert.equal(r.ok ? r.path.text : undefined, want, JSON.stringify(input));
    if (!r.ok) assert.equal(r.error.status, 400);
  }
});

test('attachments: each sandbox by its directory and by runs/latest; the longest prefix wins; nothing else is attached', () => {
  const table = attachments(EXECUTORS);
  assert.equal(table.size, EXECUTORS.length * 2);
  const at = (p: string): [string | undefined, readonly string[] | undefined] => {
    const r = readVirtualPath(p);
    assert.ok(r.ok);
    const found = locate(r.path, table);
    return [found?.attachment.executor.task.task_id.value, found?.rest];
  };
  assert.deepEqual(at('/w/sandboxes/F-web/web-1/stdout'), ['web-1', ['stdout']]);
  assert.deepEqual(at('/w/sandboxes/F-web/web-1'), ['web-1', []]);
  assert.deepEqual(at(`${latestRunPath('F-batch', 'batch-1')}/sub/f`), ['batch-1', ['sub', 'f']]);
  assert.deepEqual(at('/w/sandboxes/F-web'), [undefined, undefined], 'the directory above a sandbox is not attached');
  assert.deepEqual(at('/w/sandboxes/F-web/web-10/stdout'), [undefined, undefined], 'a sibling with a longer name is not a sandbox');
  assert.deepEqual(at('/etc/passwd'), [undefined, undefined]);
  assert.deepEqual(at('/frameworks/F-web/executors/web-1/runs'), [undefined, undefined]);
});

test("a sandbox is read with access_sandboxes and view_tasks on its executor's user", () => {
  const parsed = parseAcls(JSON.stringify({
    permissive: false,
    access_sandboxes: [{ principals: { values: ['ops', 'auditor'] }, users: { type: 'ANY' } }, { principals: { values: ['web-team'] }, users: { values: ['web'] } }],
    view_tasks: [{ principals: { values: ['ops', 'peeker'] }, users: { type: 'ANY' } }, { principals: { values: ['web-team'] }, users: { values: ['web'] } }],
  }));
  assert.ok(parsed.ok);
  const authz = new Authorizer(parsed.value);
  const caller = (principal: string | undefined): { check(action: AclAction, object: AclObject): ReturnType<typeof fail> | undefined } => ({
    check: (action, object) => (authz.allows(action, principal, object) ? undefined : fail('FORBIDDEN', action, principal, typeof object === 'string' ? `'${object}'` : '')),
  });
  const web = EXECUTORS[0] as ExecutorFacts;
  const batch = EXECUTORS[2] as ExecutorFacts;
  const cases: Array<[string | undefined, ExecutorFacts, string | undefined]> = [
    ['ops', batch, undefined],
    ['web-team', web, undefined],
    ['web-team', batch, "Forbidden: principal 'web-team' may not access_sandboxes on 'batch'"],
    ['peeker', web, "Forbidden: principal 'peeker' may not access_sandboxes on 'web'"],
    ['auditor', web, "Forbidden: principal 'auditor' may not view_tasks on 'web'"],
    [undefined, web, "Forbidden: an anonymous caller may not access_sandboxes on 'web'"],
  ];
  for (const [principal, e, want] of cases) assert.equal(mayReadSandbox(caller(principal), e)?.message, want, `${principal} ${e.user}`);
});

// ---- The table -----------------------------------------------------------------------------------

test('the table of calls: one row per way in; GET endpoints that answer JSON honour JSONP; the realms come from the rows', () => {
  const paths = ROWS.flatMap((r) => (r.http ?? []).flatMap((w) => w.paths));
  assert.equal(new Set(paths).size, paths.length, 'no path in two rows');
  assert.equal(HTTP_WAYS.size, paths.length);
  const types = ROWS.flatMap((r) => (r.v1 === undefined ? [] : [r.v1.type]));
  assert.equal(new Set(types).size, types.length, 'no v1 type in two rows');
  for (const t of types) assert.ok((AGENT_CALL_TYPES as readonly string[]).includes(t), t);
  for (const r of ROWS) {
    assert.ok(r.summary.length > 10, `${r.name} says what it is`);
    assert.ok(r.acl.object.length > 0, `${r.name} says how it is authorized`);
  }
  // Mesos' legacy GETs that answer JSON are JSONP too; Drydock's own /drydock/v1 and /health are JSON.
  for (const [path, { way }] of HTTP_WAYS) {
    if (path.startsWith('/drydock/') || path === '/health') assert.equal(way.answer, 'json', path);
    else if (path === '/metrics' || path === '/files/download') assert.equal(way.answer, 'raw', path);
    else if (path === '/slave(1)/health') assert.equal(way.answer, 'empty', path);
    else assert.equal(way.answer, 'jsonp', path);
  }
  for (const p of ['/slave(1)/state', '/state', '/slave(1)/flags', '/flags', '/slave(1)/monitor/statistics', '/monitor/statistics', '/files/browse', '/files/read', '/files/download', '/files/debug', '/metrics/snapshot']) assert.ok(HTTP_WAYS.has(p), p);
  assert.deepEqual(['GET_STATE', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'LIST_FILES', 'READ_FILE', 'GET_CONTAINERS'].filter((t) => !V1_ROWS.has(t)), []);
  assert.equal(v1Access('SET_LOGGING_LEVEL'), 'write');
  assert.equal(callRealm('LIST_FILES'), 'mesos-agent-readonly');
  assert.equal(callRealm('READ_FILE'), 'mesos-agent-readonly');
  assert.equal(callRealm('LAUNCH_CONTAINER'), 'mesos-agent-readwrite', 'a call without a row: by its name');
  // Only the health probes are open.
  const open = [...HTTP_WAYS].filter(([, { way }]) => way.open === true).map(([p]) => p).sort();
  assert.deepEqual(open, ['/health', '/slave(1)/health']);
});

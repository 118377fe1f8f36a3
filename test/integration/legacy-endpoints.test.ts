/**
 * The legacy read endpoints Mesos' own tools read, against a real master with two agents and a
 * framework (a task running, one finished): every field the web UI, the Python CLI, Mesos-DNS and
 * mesos_exporter read is there with Mesos 1.x's type (tables of paths and types, read from
 * src/master/readonly_handler.cpp and src/common/http.cpp), with and without `/master`; `/tasks`'
 * query parameters; `?jsonp=` on every JSON GET (a callback that is not a name: 400); the
 * snapshot keys mesos_exporter reads; GET_ROLES, GET_METRICS, GET_OPERATIONS; the master's
 * `/files/*`. A second master with credentials and ACLs shows each endpoint filtered as the v1
 * call that reads the same data.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { authorizationHeader } from '../../shared/credentials.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { labelledTask } from '../helpers/tasks.js';

// ---- Shapes: a small table language of what must be there, with its JSON type ----------------------

/** A JSON type, a nested shape, or `[shape]`: an array whose every element has that shape. */
type Shape = 'string' | 'number' | 'boolean' | 'array' | 'object' | { readonly [key: string]: Shape } | readonly [Shape];

function kind(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v;
}

/** Every deviation of `value` from `shape`, as `path: what` lines (empty: it has the shape). */
function deviations(value: unknown, shape: Shape, path = '$'): string[] {
  if (typeof shape === 'string') return kind(value) === shape ? [] : [`${path}: ${kind(value)} where ${shape} is expected`];
  if (Array.isArray(shape)) {
    if (!Array.isArray(value)) return [`${path}: ${kind(value)} where an array is expected`];
    return value.flatMap((v, i) => deviations(v, shape[0] as Shape, `${path}[${i}]`));
  }
  if (kind(value) !== 'object') return [`${path}: ${kind(value)} where an object is expected`];
  const o = value as Record<string, unknown>;
  return Object.entries(shape as Record<string, Shape>).flatMap(([k, s]) => (k in o ? deviations(o[k], s, `${path}.${k}`) : [`${path}.${k}: missing`]));
}

/** Mesos' resources object: these four always, numbers. */
const RESOURCES: Shape = { cpus: 'number', gpus: 'number', mem: 'number', disk: 'number' };
/** A TaskStatus as the legacy task model writes it. */
const STATUS: Shape = { state: 'string', timestamp: 'number' };
/** Mesos' Task model (what the web UI, Mesos-DNS and the CLI's `task list` read). */
const TASK: Shape = { id: 'string', name: 'string', framework_id: 'string', executor_id: 'string', slave_id: 'string', state: 'string', resources: RESOURCES, role: 'string', statuses: [STATUS] };
/** SlaveWriter: what `/state`, `/state-summary` and `/slaves` write of an agent. */
const SLAVE: Shape = {
  id: 'string', hostname: 'string', port: 'number', attributes: 'object', pid: 'string', registered_time: 'number',
  resources: RESOURCES, used_resources: RESOURCES, offered_resources: RESOURCES, reserved_resources: 'object', unreserved_resources: RESOURCES,
  active: 'boolean', deactivated: 'boolean', version: 'string', capabilities: ['string'],
};
const OFFER: Shape = { id: 'string', framework_id: 'string', allocation_info: { role: 'string' }, slave_id: 'string', resources: RESOURCES };
/** Summary<Framework>. */
const FRAMEWORK_SUMMARY: Shape = {
  id: 'string', name: 'string', used_resources: RESOURCES, offered_resources: RESOURCES, capabilities: ['string'], hostname: 'string', webui_url: 'string',
  active: 'boolean', connected: 'boolean', recovered: 'boolean',
};
/** FullFrameworkWriter (the web UI's frameworks pages, Mesos-DNS, the CLI's `framework list`). */
const FRAMEWORK: Shape = {
  ...(FRAMEWORK_SUMMARY as Record<string, Shape>),
  user: 'string', failover_timeout: 'number', checkpoint: 'boolean', registered_time: 'number', unregistered_time: 'number', resources: RESOURCES, roles: ['string'],
  tasks: [TASK], unreachable_tasks: [TASK], completed_tasks: [TASK], offers: [OFFER], executors: 'array', labels: [{ key: 'string', value: 'string' }], offer_constraints: 'object',
};
/** ReadOnlyHandler::state. */
const STATE: Shape = {
  version: 'string', git_tag: 'string', build_date: 'string', build_time: 'number', build_user: 'string', start_time: 'number', elected_time: 'number',
  id: 'string', pid: 'string', hostname: 'string', capabilities: ['string'], activated_slaves: 'number', deactivated_slaves: 'number', unreachable_slaves: 'number',
  leader: 'string', leader_info: { id: 'string', pid: 'string', port: 'number', hostname: 'string' }, flags: 'object',
  slaves: [SLAVE], recovered_slaves: 'array', frameworks: [FRAMEWORK], completed_frameworks: [FRAMEWORK], orphan_tasks: 'array', unregistered_frameworks: 'array',
};
const COUNTS = Object.fromEntries(['TASK_STAGING', 'TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLING', 'TASK_FINISHED', 'TASK_KILLED', 'TASK_FAILED', 'TASK_LOST', 'TASK_ERROR', 'TASK_UNREACHABLE'].map((s) => [s, 'number' as const]));
const STATE_SUMMARY: Shape = {
  hostname: 'string',
  slaves: [{ ...(SLAVE as Record<string, Shape>), ...COUNTS, framework_ids: ['string'] }],
  frameworks: [{ ...(FRAMEWORK_SUMMARY as Record<string, Shape>), ...COUNTS, slave_ids: ['string'] }],
};
const FULL_RESOURCE: Shape = { name: 'string', type: 'string', role: 'string' };
const SLAVES: Shape = { slaves: [{ ...(SLAVE as Record<string, Shape>), reserved_resources_full: 'object', unreserved_resources_full: [FULL_RESOURCE], used_resources_full: [FULL_RESOURCE], offered_resources_full: [FULL_RESOURCE] }], recovered_slaves: 'array' };
const FRAMEWORKS: Shape = { frameworks: [FRAMEWORK], completed_frameworks: [FRAMEWORK], unregistered_frameworks: 'array' };
const ROLES: Shape = { roles: [{ name: 'string', weight: 'number', quota: { role: 'string', guarantee: 'object', limit: 'object', consumed: 'object' }, resources: 'object', allocated: 'object', offered: 'object', reserved: 'object', frameworks: ['string'] }] };

// ---- The cluster -------------------------------------------------------------------------------------

const FRAMEWORK_INFO = {
  user: userInfo().username,
  name: 'legacy',
  hostname: 'legacy-scheduler',
  webui_url: 'http://legacy-scheduler:8080/ui',
  failover_timeout: 60,
  checkpoint: true,
  roles: ['legacy'],
  capabilities: [{ type: 'MULTI_ROLE' }],
  labels: { labels: [{ key: 'team', value: 'drydock' }] },
};

type Status = { task_id: { value: string }; agent_id?: unknown; state: string; uuid?: string };
const statusOf = (e: SchedulerEvent): Status | undefined => (e.type === 'UPDATE' ? (e['update'] as { status: Status }).status : undefined);
const offersOf = (e: SchedulerEvent): Array<{ id: { value: string }; agent_id: { value: string } }> => (e.type === 'OFFERS' ? (e['offers'] as { offers: Array<{ id: { value: string }; agent_id: { value: string } }> }).offers : []);

const taskInfo = (id: string, agentId: string, cmd: string): Record<string, unknown> => labelledTask(id, agentId, cmd);

/** Subscribes a framework and runs `runs` (sleeps) and `ends` (exits 0) on the agent, acknowledging until RUNNING and FINISHED. */
async function runTasks(t: TestContext, master: string, agentId: string, info: Record<string, unknown> = FRAMEWORK_INFO): Promise<SchedulerClient> {
  const s = await SchedulerClient.subscribe(master, info);
  t.after(() => s.close());
  const e = await s.next((x) => offersOf(x).some((o) => o.agent_id.value === agentId), EVENT_DEADLINE_MS, 'an offer of the agent');
  const offer = offersOf(e).find((o) => o.agent_id.value === agentId) as { id: { value: string } };
  const accepted = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [taskInfo('runs', agentId, 'sleep 600'), taskInfo('ends', agentId, 'exit 0')] } }], filters: { refuse_seconds: 0 } });
  assert.equal(accepted.status, 202, accepted.text);
  for (const [id, final] of [['runs', 'TASK_RUNNING'], ['ends', 'TASK_FINISHED']] as const) {
    for (;;) {
      const u = await s.next((x) => statusOf(x)?.task_id.value === id, EVENT_DEADLINE_MS, `updates of ${id}`);
      const st = statusOf(u) as Status;
      if (st.uuid !== undefined) assert.equal((await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid })).status, 202);
      if (st.state === final) break;
    }
  }
  return s;
}

async function get(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; type: string | null; text: string; json: unknown }> {
  const res = await fetch(`${base}${path}`, { headers, signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get('content-type'), text, json };
}

/** The completed task lands in completed_tasks once its acknowledgement is in: wait for the master to show it. */
async function settledState(m: MasterHandle): Promise<Record<string, unknown>> {
  return eventually(async () => {
    const s = (await get(m.url, '/master/state')).json as { frameworks: Array<{ tasks: unknown[]; completed_tasks: unknown[] }> };
    const f = s.frameworks[0];
    return f !== undefined && f.tasks.length === 1 && f.completed_tasks.length === 1 ? (s as unknown as Record<string, unknown>) : undefined;
  }, EVENT_DEADLINE_MS, 100, 'one task running and one completed in /master/state');
}

test('the legacy endpoints in Mesos 1.x shapes, /tasks parameters, JSONP everywhere, the snapshot keys, GET_ROLES / GET_METRICS / GET_OPERATIONS, /files', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'legacy-a', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const b = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'legacy-b', resources: 'cpus:2;mem:1024;disk:100;ports:[31000-31010];gpus(web):1', flags: ['--attributes=rack:r2'], stopSignal: 'SIGUSR1' });
  const aId = a.agentId as string;
  const s = await runTasks(t, m.address, aId);
  const state = await settledState(m);

  await t.test('/master/state and /state: every field Mesos writes, with its type', async () => {
    assert.deepEqual(deviations(state, STATE), []);
    assert.deepEqual((await get(m.url, '/state')).json === undefined ? ['no JSON'] : deviations((await get(m.url, '/state')).json, STATE), []);
    const st = state as { slaves: Array<Record<string, unknown>>; frameworks: Array<Record<string, unknown>>; leader_info: Record<string, unknown>; pid: string; activated_slaves: number; flags: Record<string, string> };
    assert.equal(st.activated_slaves, 2);
    assert.match(st.pid, /^master@127\.0\.0\.1:\d+$/);
    assert.deepEqual(st.leader_info['port'], m.port, 'the web UI polls the leader at leader_info.hostname:port');
    assert.equal(st.flags['work_dir'], m.workDir, 'flags as {name: value} strings');
    const slaveA = st.slaves.find((x) => x['id'] === aId) as Record<string, unknown>;
    assert.equal(slaveA['hostname'], 'legacy-a');
    assert.match(slaveA['pid'] as string, /^slave\(1\)@127\.0\.0\.2:\d+$/, 'the web UI reaches the agent at the port of its pid');
    assert.deepEqual(slaveA['attributes'], { rack: 'r1' });
    assert.equal((slaveA['resources'] as Record<string, unknown>)['ports'], '[31000-32000]', 'ranges as Mesos prints them');
    assert.deepEqual(slaveA['used_resources'], { cpus: 0.1, gpus: 0, mem: 16, disk: 0 }, 'the running task, not the finished one');
    const slaveB = st.slaves.find((x) => x['id'] === b.agentId) as Record<string, unknown>;
    assert.deepEqual(slaveB['reserved_resources'], { web: { cpus: 0, gpus: 1, mem: 0, disk: 0 } });
    assert.equal((slaveB['unreserved_resources'] as Record<string, unknown>)['cpus'], 2);
    const f = st.frameworks[0] as Record<string, unknown>;
    assert.deepEqual([f['id'], f['name'], f['active'], f['webui_url'], f['roles'], f['capabilities']], [s.frameworkId, 'legacy', true, 'http://legacy-scheduler:8080/ui', ['legacy'], ['MULTI_ROLE']]);
    const [running] = f['tasks'] as Array<Record<string, unknown>>;
    const [finished] = f['completed_tasks'] as Array<Record<string, unknown>>;
    assert.deepEqual([running?.['id'], running?.['state'], running?.['slave_id'], running?.['executor_id']], ['runs', 'TASK_RUNNING', aId, '']);
    assert.deepEqual([finished?.['id'], finished?.['state']], ['ends', 'TASK_FINISHED']);
    assert.deepEqual(running?.['labels'], [{ key: 'purpose', value: 'runs' }]);
    assert.deepEqual(f['labels'], [{ key: 'team', value: 'drydock' }]);
  });

  await t.test('state-summary, slaves, frameworks (as the CLI asks: /master/frameworks/), tasks, roles, flags: with and without /master', async () => {
    const table: Array<[string, Shape]> = [
      ['/master/state-summary', STATE_SUMMARY],
      ['/state-summary', STATE_SUMMARY],
      ['/master/slaves', SLAVES],
      ['/slaves', SLAVES],
      ['/master/frameworks/', FRAMEWORKS],
      ['/frameworks', FRAMEWORKS],
      ['/master/tasks', { tasks: [TASK] }],
      ['/tasks?order=asc&limit=-1', { tasks: [TASK] }],
      ['/master/roles', ROLES],
      ['/roles', ROLES],
      ['/master/flags', { flags: 'object' }],
      ['/flags', { flags: 'object' }],
    ];
    for (const [path, shape] of table) {
      const r = await get(m.url, path);
      assert.deepEqual([r.status, r.type], [200, 'application/json'], path);
      assert.deepEqual(deviations(r.json, shape), [], path);
    }
    const summary = (await get(m.url, '/master/state-summary')).json as { slaves: Array<Record<string, unknown>>; frameworks: Array<Record<string, unknown>> };
    const sa = summary.slaves.find((x) => x['id'] === aId) as Record<string, unknown>;
    assert.deepEqual([sa['TASK_RUNNING'], sa['TASK_FINISHED'], sa['framework_ids']], [1, 1, [s.frameworkId]]);
    assert.deepEqual(summary.frameworks[0]?.['slave_ids'], [aId]);
    const slaves = (await get(m.url, `/slaves?slave_id=${encodeURIComponent(aId)}`)).json as { slaves: Array<Record<string, unknown>> };
    assert.deepEqual(slaves.slaves.map((x) => x['id']), [aId], '?slave_id= picks one agent');
    assert.deepEqual(((await get(m.url, '/frameworks?framework_id=nope')).json as { frameworks: unknown[] }).frameworks, []);
    const roles = (await get(m.url, '/roles')).json as { roles: Array<{ name: string; frameworks: string[]; allocated: Record<string, number>; reserved: Record<string, number> }> };
    assert.deepEqual(roles.roles.map((r) => r.name), ['*', 'legacy', 'web'], "frameworks' roles, reservations' roles and *, sorted");
    assert.deepEqual(roles.roles.find((r) => r.name === 'legacy')?.frameworks, [s.frameworkId]);
    assert.deepEqual(roles.roles.find((r) => r.name === '*')?.allocated, { cpus: 0.1, mem: 16 }, 'Drydock allocates to *');
    assert.deepEqual(roles.roles.find((r) => r.name === 'web')?.reserved, { gpus: 1 });
    const flags = (await get(m.url, '/flags')).json as { flags: Record<string, string> };
    assert.equal(flags.flags['allocation_interval'], '100ms');
  });

  await t.test("/tasks' parameters: limit (-1: all), offset, order, framework_id, task_id; a bad one is a 400", async () => {
    const ids = async (q: string): Promise<string[]> => ((await get(m.url, `/tasks${q}`)).json as { tasks: Array<{ id: string }> }).tasks.map((x) => x.id);
    const all = await ids('?order=asc&limit=-1');
    assert.deepEqual([...all].sort(), ['ends', 'runs']);
    assert.deepEqual(await ids('?order=desc'), [...all].reverse(), 'descending: the latest first status first');
    const cases: Array<[string, string[]]> = [
      ['?limit=1&order=asc', all.slice(0, 1)],
      ['?offset=1&order=asc', all.slice(1)],
      ['?offset=5', []],
      ['?limit=0', []],
      [`?framework_id=${s.frameworkId}&order=asc`, all],
      ['?framework_id=nope', []],
      ['?task_id=runs', ['runs']],
      ['?task_id=ends&limit=-1', ['ends']],
    ];
    for (const [q, want] of cases) assert.deepEqual(await ids(q), want, q);
    for (const [q, name] of [['?limit=abc', 'limit'], ['?limit=1.5', 'limit'], ['?offset=-1', 'offset'], ['?order=sideways', 'order']] as const) {
      const r = await get(m.url, `/master/tasks${q}`);
      assert.equal(r.status, 400, q);
      assert.match(r.text, new RegExp(`^Invalid '${name}' query parameter `), q);
    }
  });

  await t.test('?jsonp= on every GET that answers JSON; a callback that is not a JavaScript name is a 400', async () => {
    const paths = [
      '/master/state', '/state', '/master/state-summary', '/state-summary', '/master/slaves', '/slaves', '/master/frameworks', '/frameworks', '/master/tasks', '/tasks',
      '/master/roles', '/roles', '/master/flags', '/flags', '/metrics/snapshot', '/master/metrics/snapshot', '/version', '/master/version', '/maintenance/schedule',
      '/master/maintenance/schedule', '/maintenance/status', '/master/maintenance/status', '/v1/maintenance/plans', '/files/debug',
    ];
    for (const path of paths) {
      const plain = await get(m.url, path);
      assert.equal(plain.status, 200, path);
      for (const cb of ['angular.callbacks._0', 'jQuery36000123_456', '$cb']) {
        const r = await get(m.url, `${path}?jsonp=${encodeURIComponent(cb)}`);
        assert.deepEqual([r.status, r.type], [200, 'text/javascript'], `${path} ${cb}`);
        assert.ok(r.text.startsWith(`${cb}(`) && r.text.endsWith(');'), `${path}: ${r.text.slice(0, 60)}`);
        assert.equal(typeof JSON.parse(r.text.slice(cb.length + 1, -2)), 'object', `${path}: the JSON inside`);
      }
      for (const cb of ['alert(1)//', 'a b', '<script>', '1abc', 'a..b', 'a.', 'x'.repeat(129), 'cb;alert(1)', 'é']) {
        const r = await get(m.url, `${path}?jsonp=${encodeURIComponent(cb)}`);
        assert.equal(r.status, 400, `${path} ${cb}`);
        assert.match(r.text, /^Invalid 'jsonp' callback /, `${path} ${cb}`);
      }
    }
    // The empty callback is no callback (plain JSON), as before.
    assert.equal((await get(m.url, '/master/state?jsonp=')).type, 'application/json');
  });

  await t.test('/metrics/snapshot: the keys mesos_exporter reads, numbers, real where Drydock has the fact', async () => {
    const snap = (await get(m.url, '/metrics/snapshot')).json as Record<string, number>;
    const keys = [
      ...['cpus', 'mem', 'disk', 'gpus'].flatMap((r) => ['total', 'used', 'percent'].map((x) => `master/${r}_revocable_${x}`)),
      'master/slave_shutdowns_scheduled', 'master/slave_shutdowns_completed', 'master/slave_shutdowns_canceled',
      'master/slave_unreachable_scheduled', 'master/slave_unreachable_completed', 'master/slave_unreachable_canceled',
      'master/recovery_slave_removals', 'registrar/queued_operations', 'registrar/registry_size_bytes', 'registrar/state_fetch_ms',
      ...['max', 'min', 'p50', 'p90', 'p95', 'p99', 'p999', 'p9999'].map((x) => `registrar/state_store_ms/${x}`),
      'registrar/log/ensemble_size',
    ];
    for (const k of keys) assert.equal(typeof snap[k], 'number', k);
    assert.ok((snap['registrar/registry_size_bytes'] as number) > 0, 'the SQLite file holds something');
    assert.ok((snap['registrar/state_store_ms/count'] as number) >= 2, 'writes were timed');
    assert.ok((snap['registrar/state_store_ms/max'] as number) >= (snap['registrar/state_store_ms/min'] as number));
    assert.equal(snap['master/cpus_revocable_total'], 0);
    const metrics = await callApi(m.url, { type: 'GET_METRICS', get_metrics: { timeout: { nanoseconds: 1_000_000_000 } } });
    assert.equal(metrics.status, 200, metrics.text);
    const list = (metrics.json as { type: string; get_metrics: { metrics: Array<{ name: string; value: number }> } }).get_metrics.metrics;
    assert.equal(list.find((x) => x.name === 'master/elected')?.value, 1);
    assert.deepEqual(list.map((x) => x.name), [...list.map((x) => x.name)].sort(), 'sorted by name');
    const bad = await callApi(m.url, { type: 'GET_METRICS', get_metrics: { timeout: 'soon' } });
    assert.equal(bad.status, 400, bad.text);
  });

  await t.test('GET_ROLES and GET_OPERATIONS as v1 messages', async () => {
    const roles = await callApi(m.url, { type: 'GET_ROLES' });
    assert.equal(roles.status, 200, roles.text);
    const list = (roles.json as { get_roles: { roles: Array<{ name: string; weight: number; frameworks?: Array<{ value: string }>; resources?: unknown[] }> } }).get_roles.roles;
    assert.deepEqual(list.map((r) => r.name), ['*', 'legacy', 'web']);
    assert.deepEqual(list.find((r) => r.name === 'legacy')?.frameworks, [{ value: s.frameworkId }]);
    // `*` holds what is allocated (the running task) and what is offered now (the framework keeps its offers).
    const star = (list.find((r) => r.name === '*')?.resources ?? []) as Array<{ name: string; type: string; scalar: { value: number } }>;
    assert.ok(star.every((r) => ['cpus', 'mem', 'disk', 'gpus'].includes(r.name) && r.type === 'SCALAR'), JSON.stringify(star));
    assert.ok((star.find((r) => r.name === 'cpus')?.scalar.value ?? 0) >= 0.1);
    const ops = await callApi(m.url, { type: 'GET_OPERATIONS' });
    assert.deepEqual([ops.status, ops.json], [200, { type: 'GET_OPERATIONS', get_operations: {} }]);
  });

  await t.test("the master's /files/*: no file attached (the web UI's log link), never a 5xx", async () => {
    const cases: Array<[string, number, RegExp]> = [
      ['/files/read?path=/master/log&offset=-1', 404, /^No file or directory at '\/master\/log'/],
      ['/files/read?path=/master/log&offset=0&length=50000', 404, /^No file or directory/],
      ['/files/browse?path=/', 404, /^No file or directory/],
      ['/files/download?path=/master/log', 404, /^No file or directory/],
      ['/files/read', 400, /^Expecting 'path=value' in query\.\n$/],
      ['/files/browse?path=', 400, /^Expecting 'path=value' in query/],
      ['/files/read?path=/master/log&offset=abc', 400, /^Invalid 'offset' query parameter/],
      ['/files/read?path=/master/log&length=-2', 400, /^Invalid 'length' query parameter/],
      ['/files/debug', 200, /^\{\}$/],
    ];
    for (const [path, status, body] of cases) {
      const r = await get(m.url, path);
      assert.equal(r.status, status, path);
      assert.match(r.text, body, path);
    }
  });
});

// ---- ACLs ----------------------------------------------------------------------------------------------

const SECRETS = { admin: 'admin-secret', r1: 'rack-one-secret', nobody: 'nobody-secret' } as const;
const as = (principal: keyof typeof SECRETS): Record<string, string> => ({ authorization: authorizationHeader({ kind: 'basic', principal, secret: SECRETS[principal] }) });

/** admin sees everything; r1 the agents of rack r1, the role `legacy`, no framework, task or flag; nobody nothing. */
function viewAcls(): string {
  const any = (field: string) => [{ principals: { values: ['admin'] }, [field]: { type: 'ANY' } }];
  return JSON.stringify({
    permissive: false,
    register_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }],
    register_frameworks: [{ principals: { type: 'ANY' }, roles: { type: 'ANY' } }],
    run_tasks: [{ principals: { type: 'ANY' }, users: { type: 'ANY' } }],
    view_agents: [...any('agents'), { principals: { values: ['r1'] }, agents: { values: ['rack:r1'] } }],
    view_frameworks: any('users'),
    view_tasks: any('users'),
    view_flags: any('flags'),
    view_roles: [...any('roles'), { principals: { values: ['r1'] }, roles: { values: ['legacy'] } }],
    get_endpoints: [{ principals: { values: ['admin'] }, paths: { values: ['/metrics/snapshot'] } }],
  });
}

test('the legacy endpoints filter as the v1 calls do: agents, frameworks, tasks, offers, roles, flags', async (t) => {
  const dir = tempDir(t);
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: Object.entries(SECRETS).map(([principal, secret]) => ({ principal, secret })) }), { mode: 0o600 });
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms', '--authenticate_http_readonly', `--credentials=${credentials}`, `--acls=${viewAcls()}`] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'acl-r1', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const b = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'acl-r2', flags: ['--attributes=rack:r2'], stopSignal: 'SIGUSR1' });
  const s = await runTasks(t, m.address, a.agentId as string);
  await eventually(async () => {
    const st = (await get(m.url, '/master/state', as('admin'))).json as { frameworks: Array<{ completed_tasks: unknown[] }> };
    return st.frameworks[0]?.completed_tasks.length === 1 ? true : undefined;
  }, EVENT_DEADLINE_MS, 100, 'the finished task completed');

  type View = { agents: string[]; frameworks: number; tasks: number; flags: boolean; roles: string[] };
  const view = async (who: keyof typeof SECRETS): Promise<View> => {
    const st = (await get(m.url, '/master/state', as(who))).json as { slaves: Array<{ hostname: string }>; frameworks: Array<{ tasks: unknown[]; completed_tasks: unknown[] }>; flags?: unknown };
    const tasks = (await get(m.url, '/tasks?limit=-1', as(who))).json as { tasks: unknown[] };
    const roles = (await get(m.url, '/roles', as(who))).json as { roles: Array<{ name: string }> };
    return { agents: st.slaves.map((x) => x.hostname).sort(), frameworks: st.frameworks.length, tasks: tasks.tasks.length, flags: st.flags !== undefined, roles: roles.roles.map((r) => r.name) };
  };
  assert.deepEqual(await view('admin'), { agents: ['acl-r1', 'acl-r2'], frameworks: 1, tasks: 2, flags: true, roles: ['*', 'legacy'] });
  assert.deepEqual(await view('r1'), { agents: ['acl-r1'], frameworks: 0, tasks: 0, flags: false, roles: ['legacy'] });
  assert.deepEqual(await view('nobody'), { agents: [], frameworks: 0, tasks: 0, flags: false, roles: [] });

  // The other endpoints, as r1: the same filters.
  const r1 = as('r1');
  const slaves = (await get(m.url, '/slaves', r1)).json as { slaves: Array<{ hostname: string }> };
  assert.deepEqual(slaves.slaves.map((x) => x.hostname), ['acl-r1']);
  const summary = (await get(m.url, '/state-summary', r1)).json as { slaves: Array<{ hostname: string; framework_ids: string[] }>; frameworks: unknown[] };
  assert.deepEqual([summary.slaves.map((x) => x.hostname), summary.frameworks, summary.slaves[0]?.framework_ids], [['acl-r1'], [], []]);
  assert.deepEqual(((await get(m.url, '/frameworks', r1)).json as { frameworks: unknown[] }).frameworks, []);
  const flags = await get(m.url, '/flags', r1);
  assert.equal(flags.status, 403);
  assert.match(flags.text, /^Forbidden: principal 'r1' may not view_flags/);
  assert.equal((await get(m.url, '/flags', as('admin'))).status, 200);
  const roles = await callApi(m.url, { type: 'GET_ROLES' }, { 'content-type': 'application/json', ...r1 });
  assert.deepEqual((roles.json as { get_roles: { roles: Array<{ name: string; frameworks?: unknown }> } }).get_roles.roles, [{ name: 'legacy', weight: 1 }], 'its frameworks hidden by view_frameworks');
  // GET_METRICS carries /metrics/snapshot's figures: the endpoint's rule guards both.
  const metricsAs = async (who: keyof typeof SECRETS): Promise<number[]> => [
    (await get(m.url, '/metrics/snapshot', as(who))).status,
    (await callApi(m.url, { type: 'GET_METRICS', get_metrics: {} }, { 'content-type': 'application/json', ...as(who) })).status,
  ];
  assert.deepEqual([await metricsAs('admin'), await metricsAs('r1')], [[200, 200], [403, 403]]);
  // A framework's offers name their agent: r2's are not shown to a principal that may see the framework but not rack r2.
  const admin = (await get(m.url, '/master/frameworks', as('admin'))).json as { frameworks: Array<{ offers: Array<{ slave_id: string }> }> };
  assert.ok(admin.frameworks[0]?.offers.every((o) => [a.agentId, b.agentId].includes(o.slave_id)));
  // Anonymous callers are refused in the read-only realm.
  for (const path of ['/master/state', '/state-summary', '/slaves', '/frameworks', '/tasks', '/roles', '/flags']) {
    const r = await get(m.url, path);
    assert.equal(r.status, 401, path);
  }
  assert.equal(s.frameworkId.length > 0, true);
});

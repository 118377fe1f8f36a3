/**
 * One path normalisation for every route (shared/paths.ts), end to end: for every route family
 * of the master (the operator API and its /master/ and /mesos/ aliases, the scheduler API, the
 * maintenance endpoints, machine down and up, maintenance plans as list, item and verbs,
 * metrics, health, version, redirect, the console's files), of the agent API and of
 * drydock-scheduler's API, each canonical request and its spellings (`//x`, `/./x`, `/x/`,
 * `%`-encoded letters, `/x/y/..`) get the same status and the same body, and so the same
 * authentication and ACL decision. The master runs with credentials and `--acls`
 * (permissive: false); most requests come from `r1-team`, a principal that may only maintain
 * rack r1. The reproduction (`GET /v1/maintenance/plans//`, `///`, `/.//` listing a plan
 * on rack r2) is among them, and spellings no route may see (`%2F`, `..` above the root, NUL,
 * malformed escapes) are a 400 on all three servers. Afterwards nothing has changed: plans,
 * schedule, machine modes, agents, the service's plans.
 *
 * Requests go out through node:http with the path exactly as written: fetch() would resolve
 * `.` and `..` (and `%2e`) before sending.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { authorizationHeader } from '../../shared/credentials.js';
import { EVENT_DEADLINE_MS, eventually, fileWithMode, startAgent, startMaster, startScheduler, tempDir } from '../helpers/daemons.js';

const R1_SECRET = 'rack-one-secret';
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';
const OPS_SECRET = 'scheduler-ops-secret';

type Who = 'anonymous' | 'r1-team' | 'admin' | 'ops';

function credentialsOf(who: Who): Record<string, string> {
  switch (who) {
    case 'anonymous':
      return {};
    case 'r1-team':
      return { authorization: authorizationHeader({ kind: 'basic', principal: 'r1-team', secret: R1_SECRET }) };
    case 'admin':
      return { authorization: `Bearer ${ADMIN_TOKEN}` };
    case 'ops':
      return { authorization: authorizationHeader({ kind: 'basic', principal: 'ops', secret: OPS_SECRET }) };
  }
}

/** admin may do everything; r1-team only on rack r1's machines and agents; nobody reads the metrics but admin. */
function acls(): string {
  const machineActions = [
    'get_maintenance_schedules', 'get_maintenance_statuses', 'update_maintenance_schedules', 'start_maintenances', 'stop_maintenances',
    'view_maintenance_plans', 'create_maintenance_plans', 'update_maintenance_plans', 'delete_maintenance_plans',
  ];
  const j: Record<string, unknown> = { permissive: false };
  for (const a of ['drain_agents', 'deactivate_agents', 'reactivate_agents', 'mark_agents_gone', 'view_agents']) {
    j[a] = [{ principals: { values: ['admin'] }, agents: { type: 'ANY' } }, { principals: { values: ['r1-team'] }, agents: { values: ['rack:r1'] } }];
  }
  for (const a of machineActions) j[a] = [{ principals: { values: ['admin'] }, machines: { type: 'ANY' } }, { principals: { values: ['r1-team'] }, machines: { values: ['rack:r1'] } }];
  j['register_agents'] = [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }];
  j['register_frameworks'] = [{ principals: { values: ['admin'] }, roles: { type: 'ANY' } }, { principals: { values: ['r1-team'] }, roles: { values: ['r1'] } }];
  j['view_flags'] = [{ principals: { values: ['admin'] }, flags: { type: 'ANY' } }];
  j['view_frameworks'] = [{ principals: { values: ['admin'] }, users: { type: 'ANY' } }];
  j['view_tasks'] = [{ principals: { values: ['admin'] }, users: { type: 'ANY' } }];
  j['get_endpoints'] = [{ principals: { values: ['admin'] }, paths: { type: 'ANY' } }];
  return JSON.stringify(j);
}

interface Reply {
  status: number;
  body: string;
  location: string | undefined;
  wwwAuthenticate: string | undefined;
}

/** One request with the target exactly as written (bounded: 10 s). */
function send(port: number, method: string, target: string, headers: Record<string, string>, body?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path: target, headers: { ...headers, ...(body === undefined ? {} : { 'content-length': String(Buffer.byteLength(body)) }) }, agent: false, timeout: EVENT_DEADLINE_MS }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text, location: res.headers.location, wwwAuthenticate: res.headers['www-authenticate'] }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error(`no answer to ${method} ${target} within 10 s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Spellings of a canonical path that every server must read as that path. */
function spellings(path: string): string[] {
  const out = new Set<string>();
  out.add(`/${path}`); // `//x`
  out.add(`/.${path}`); // `/./x`
  out.add(`/%2e${path}`); // `/%2e/x`: an encoded dot segment
  out.add(path === '/' ? '///' : `${path}/`); // a trailing slash
  out.add(path === '/' ? '/.//' : `${path}//`);
  out.add(path === '/' ? '/z/..' : `${path}/z/..`); // a segment and its `..`
  out.add(path === '/' ? '/z/%2E%2E/' : `/z/%2E%2E${path}`);
  out.add(path.replace(/\/+/g, '//'));
  // A letter percent-encoded (upper- and lower-case hex), the first and the last one.
  const first = path.search(/[A-Za-z]/);
  if (first !== -1) out.add(`${path.slice(0, first)}%${path.charCodeAt(first).toString(16).toUpperCase()}${path.slice(first + 1)}`);
  const lastMatch = /[A-Za-z](?=[^A-Za-z]*$)/.exec(path);
  if (lastMatch !== null) out.add(`${path.slice(0, lastMatch.index)}%${path.charCodeAt(lastMatch.index).toString(16).toLowerCase()}${path.slice(lastMatch.index + 1)}`);
  out.delete(path);
  return [...out];
}

/** What must agree between a canonical request and its spellings. */
type Compare = 'body' | 'metric-names';

/**
 * The metrics a Prometheus text declares (its `# TYPE` lines) or the keys of a JSON snapshot:
 * the values move between two requests, the declared names do not. (Sample names move too: a
 * labelled histogram has no sample until its first observation, and Node's GC histogram gets its
 * first whenever a collection happens, which a loaded machine may make fall between two requests.)
 */
function metricNames(body: string): string {
  const t = body.trim();
  if (t.startsWith('{')) return Object.keys(JSON.parse(t) as Record<string, unknown>).sort().join(',');
  return [...new Set(t.split('\n').flatMap((l) => /^# TYPE (\S+) /.exec(l)?.[1] ?? []))].sort().join(',');
}

interface Row {
  server: 'master' | 'agent' | 'scheduler';
  method: string;
  path: string;
  /** The query, with its `?`, kept on every spelling. */
  query?: string;
  who: Who;
  body?: string;
  json?: boolean;
  /** The canonical request's status: the table means what it says. */
  want: number;
  /** A text the canonical body must hold. */
  holds?: RegExp;
  compare?: Compare;
}

test('every route family of the master, the agent API and drydock-scheduler: each spelling of a path gets the canonical answer and ACL decision; unreadable targets are 400; nothing changes', { timeout: 600_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-paths-');
  const credentials = fileWithMode(
    join(dir, 'credentials.json'),
    JSON.stringify({ credentials: [{ principal: 'admin', secret: 'admin-secret', tokens: [ADMIN_TOKEN] }, { principal: 'r1-team', secret: R1_SECRET }] }),
    0o600,
  );
  const m = await startMaster(t, { flags: ['--authenticate_http_readwrite', '--authenticate_http_readonly', '--authenticate_frameworks', `--credentials=${credentials}`, `--acls=${acls()}`] });
  // host-a (rack r1) and host-b (rack r2) are taken DOWN by the plans below (their agents then
  // exit); host-c (rack r1) stays up and serves the agent API.
  await startAgent(t, { master: m.address, hostname: 'host-a', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  await startAgent(t, { master: m.address, hostname: 'host-b', flags: ['--attributes=rack:r2'], stopSignal: 'SIGUSR1' });
  const agent = await startAgent(t, { master: m.address, hostname: 'host-c', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });

  // drydock-scheduler behind its own credentials, against a master of its own with no agents:
  // its deploy plan stays where it is (nothing can be offered).
  const plainMaster = await startMaster(t);
  const spec = join(dir, 'service.yml');
  writeFileSync(spec, 'name: hello\npods:\n  hello:\n    count: 1\n    tasks:\n      server: { cmd: "exec sleep 1000", cpus: 1, memory: 16 }\n');
  const schedulerCredentials = fileWithMode(join(dir, 'scheduler-credentials.json'), JSON.stringify({ credentials: [{ principal: 'ops', secret: OPS_SECRET }] }), 0o600);
  const s = await startScheduler(t, { master: plainMaster.address, spec, flags: [`--credentials=${schedulerCredentials}`, '--authenticate_http_readwrite', '--authenticate_http_readonly'] });
  await s.daemon.waitForMsg('subscribed');

  const ports = { master: m.port, agent: agent.port, scheduler: s.port };
  const json = { 'content-type': 'application/json' };
  const asAdmin = (method: string, path: string, body?: string): Promise<Reply> => send(m.port, method, path, { ...credentialsOf('admin'), ...(body === undefined ? {} : json) }, body);

  // Two plans, each then interrupted: ops-r2 on rack r2 by admin, r1-plan on rack r1 by r1-team.
  // Each takes its machine DOWN and then waits for the operator to bring it UP: the state holds
  // still from then on.
  const planSpec = (name: string, host: string): string =>
    JSON.stringify({ name, machines: { hostnames: [host] }, window: '1hrs', notice: '900hrs', step_timeout: '1000hrs', wait_for_frameworks: '0secs', up_when: 'operator' });
  assert.equal((await asAdmin('POST', '/v1/maintenance/plans', planSpec('ops-r2', 'host-b'))).status, 200);
  assert.equal((await send(m.port, 'POST', '/v1/maintenance/plans', { ...credentialsOf('r1-team'), ...json }, planSpec('r1-plan', 'host-a'))).status, 200);
  for (const plan of ['ops-r2', 'r1-plan']) assert.equal((await asAdmin('POST', `/v1/maintenance/plans/${plan}/interrupt`)).status, 200, plan);

  /** The state no request of the table may change, read as admin. */
  const snapshot = async (): Promise<string> => {
    const call = async (type: string): Promise<string> => (await asAdmin('POST', '/api/v1', JSON.stringify({ type }))).body;
    const agents = (JSON.parse(await call('GET_AGENTS')) as { get_agents: { agents: Array<Record<string, unknown>> } }).get_agents.agents
      .map((ag) => ({ id: (ag['agent_info'] as { id: { value: string } }).id.value, active: ag['active'], deactivated: ag['deactivated'] ?? null, drain: ag['drain_info'] ?? null }))
      .sort((x, y) => x.id.localeCompare(y.id));
    const plans = (await asAdmin('GET', '/v1/maintenance/plans')).body;
    const each = await Promise.all(['ops-r2', 'r1-plan'].map(async (p) => (await asAdmin('GET', `/v1/maintenance/plans/${p}`)).body));
    const service = (await send(s.port, 'GET', '/v1/plans/deploy', credentialsOf('ops'))).body;
    return JSON.stringify({ agents, schedule: await call('GET_MAINTENANCE_SCHEDULE'), status: await call('GET_MAINTENANCE_STATUS'), plans, each, service });
  };
  // The interrupts may still be settling. They have settled once each plan's machine is DOWN,
  // its agent gone (host-c alone is left) and its step waits for the operator: nothing moves from then on.
  const before = await eventually(
    async () => {
      const now = await snapshot();
      const seen = JSON.parse(now) as { agents: unknown[]; each: string[] };
      return seen.agents.length === 1 && seen.each.every((p) => p.includes('waiting for the operator')) ? now : undefined;
    },
    undefined,
    50,
    'both plans waiting for the operator, their agents gone',
  );

  const call = (type: string, extra: Record<string, unknown> = {}): string => JSON.stringify({ type, ...extra });
  const hostB = JSON.stringify([{ hostname: 'host-b', ip: '127.0.0.1' }]);
  const rows: Row[] = [
    // The issue's reproduction: the list, whatever its spelling, hides rack r2's plan.
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans', who: 'r1-team', want: 200, holds: /^\["r1-plan"\]$/ },
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans', who: 'admin', want: 200, holds: /ops-r2/ },
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans', who: 'anonymous', want: 401 },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans', who: 'r1-team', body: planSpec('r1-sneaky', 'host-b'), want: 403, holds: /may not create_maintenance_plans/ },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans', who: 'r1-team', body: '{"name":"Bad Name"}', want: 400 },
    { server: 'master', method: 'PUT', path: '/v1/maintenance/plans', who: 'r1-team', want: 405 },
    // Items and verbs: another rack's plan is refused by name, one's own is served.
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans/ops-r2', who: 'r1-team', want: 403, holds: /principal 'r1-team' may not view_maintenance_plans/ },
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans/r1-plan', who: 'r1-team', want: 202 },
    { server: 'master', method: 'GET', path: '/v1/maintenance/plans/nope', who: 'r1-team', want: 404 },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans/ops-r2/continue', who: 'r1-team', want: 403, holds: /may not update_maintenance_plans/ },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans/ops-r2/forceComplete', query: '?phase=all', who: 'r1-team', want: 403 },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans/r1-plan/interrupt', who: 'r1-team', want: 208 },
    { server: 'master', method: 'POST', path: '/v1/maintenance/plans/r1-plan/explode', who: 'r1-team', want: 404 },
    { server: 'master', method: 'DELETE', path: '/v1/maintenance/plans/ops-r2', who: 'r1-team', want: 403, holds: /may not delete_maintenance_plans/ },
    { server: 'master', method: 'DELETE', path: '/v1/maintenance/plans/nope', who: 'r1-team', want: 404 },
    // The operator API and its aliases.
    ...['/api/v1', '/master/api/v1', '/mesos/api/v1'].flatMap((path): Row[] => [
      { server: 'master', method: 'POST', path, who: 'r1-team', json: true, body: call('GET_MAINTENANCE_SCHEDULE'), want: 200, holds: /host-a/ },
      { server: 'master', method: 'POST', path, who: 'r1-team', json: true, body: call('GET_AGENTS'), want: 200, holds: /host-c/ },
      { server: 'master', method: 'POST', path, who: 'r1-team', json: true, body: call('GET_FLAGS'), want: 403, holds: /may not view_flags/ },
      { server: 'master', method: 'POST', path, who: 'r1-team', json: true, body: call('START_MAINTENANCE', { start_maintenance: { machines: [{ hostname: 'host-b', ip: '127.0.0.1' }] } }), want: 403 },
      { server: 'master', method: 'POST', path, who: 'anonymous', json: true, body: call('GET_HEALTH'), want: 401 },
      { server: 'master', method: 'POST', path, who: 'admin', json: true, body: call('GET_VERSION'), want: 200 },
    ]),
    // The scheduler API (a call of a framework nobody registered: nothing to act on).
    ...['/api/v1/scheduler', '/master/api/v1/scheduler', '/mesos/api/v1/scheduler'].flatMap((path): Row[] => [
      { server: 'master', method: 'POST', path, who: 'r1-team', json: true, body: call('TEARDOWN', { framework_id: { value: 'x' } }), want: 404, holds: /Framework 'x' not found/ },
      { server: 'master', method: 'POST', path, who: 'anonymous', json: true, body: call('TEARDOWN', { framework_id: { value: 'x' } }), want: 401 },
    ]),
    // The maintenance endpoints, machine down and up, with their /master/ aliases.
    ...['', '/master'].flatMap((prefix): Row[] => [
      { server: 'master', method: 'GET', path: `${prefix}/maintenance/schedule`, who: 'r1-team', want: 200, holds: /host-a/ },
      { server: 'master', method: 'GET', path: `${prefix}/maintenance/schedule`, query: '?jsonp=cb', who: 'r1-team', want: 200, holds: /^cb\(/ },
      { server: 'master', method: 'GET', path: `${prefix}/maintenance/status`, who: 'r1-team', want: 200 },
      { server: 'master', method: 'GET', path: `${prefix}/maintenance/status`, who: 'anonymous', want: 401 },
      { server: 'master', method: 'POST', path: `${prefix}/maintenance/schedule`, who: 'r1-team', body: '{"windows":[]}', want: 403, holds: /may not update_maintenance_schedules/ },
      { server: 'master', method: 'POST', path: `${prefix}/machine/down`, who: 'r1-team', body: hostB, want: 403, holds: /may not start_maintenances/ },
      { server: 'master', method: 'POST', path: `${prefix}/machine/up`, who: 'r1-team', body: hostB, want: 403, holds: /may not stop_maintenances/ },
      { server: 'master', method: 'POST', path: `${prefix}/machine/up`, who: 'r1-team', body: '[]', want: 400 },
      { server: 'master', method: 'DELETE', path: `${prefix}/machine/up`, who: 'r1-team', want: 405 },
    ]),
    // Metrics (get_endpoints: admin only), health, version, redirect, the console, an unknown path.
    { server: 'master', method: 'GET', path: '/metrics', who: 'r1-team', want: 403, holds: /get_endpoints/ },
    { server: 'master', method: 'GET', path: '/metrics/snapshot', who: 'r1-team', want: 403 },
    { server: 'master', method: 'GET', path: '/master/metrics/snapshot', who: 'r1-team', want: 403 },
    { server: 'master', method: 'GET', path: '/metrics', who: 'admin', want: 200, compare: 'metric-names' },
    { server: 'master', method: 'GET', path: '/metrics/snapshot', who: 'admin', want: 200, compare: 'metric-names' },
    { server: 'master', method: 'GET', path: '/health', who: 'anonymous', want: 200 },
    { server: 'master', method: 'GET', path: '/master/health', who: 'anonymous', want: 200 },
    { server: 'master', method: 'GET', path: '/version', who: 'anonymous', want: 200, holds: /"version"/ },
    { server: 'master', method: 'GET', path: '/master/version', who: 'anonymous', want: 200 },
    { server: 'master', method: 'GET', path: '/redirect', who: 'anonymous', want: 307 },
    { server: 'master', method: 'GET', path: '/master/redirect', who: 'anonymous', want: 307 },
    { server: 'master', method: 'GET', path: '/', who: 'anonymous', want: 200, holds: /<html/i },
    { server: 'master', method: 'GET', path: '/console', who: 'anonymous', want: 200, holds: /<html/i },
    { server: 'master', method: 'GET', path: '/console/app.js', who: 'anonymous', want: 200 },
    { server: 'master', method: 'GET', path: '/console/nope.js', who: 'anonymous', want: 404 },
    { server: 'master', method: 'GET', path: '/nope', who: 'r1-team', want: 404 },
    // The agent API.
    ...['/api/v1', '/slave(1)/api/v1'].flatMap((path): Row[] => [
      { server: 'agent', method: 'POST', path, who: 'anonymous', json: true, body: call('GET_HEALTH'), want: 200, holds: /healthy/ },
      { server: 'agent', method: 'POST', path, who: 'anonymous', json: true, body: call('GET_TASKS'), want: 200 },
      { server: 'agent', method: 'GET', path, who: 'anonymous', want: 405 },
    ]),
    { server: 'agent', method: 'GET', path: '/health', who: 'anonymous', want: 200 },
    { server: 'agent', method: 'GET', path: '/metrics', who: 'anonymous', want: 200, compare: 'metric-names' },
    { server: 'agent', method: 'GET', path: '/metrics/snapshot', who: 'anonymous', want: 200, compare: 'metric-names' },
    { server: 'agent', method: 'GET', path: '/nope', who: 'anonymous', want: 404 },
    // The agent's Mesos legacy endpoints and its files API (agent/calls.ts).
    { server: 'agent', method: 'GET', path: '/slave(1)/state', who: 'anonymous', want: 200, holds: /"pid":"slave\(1\)@/ },
    { server: 'agent', method: 'GET', path: '/state', query: '?jsonp=cb', who: 'anonymous', want: 200, holds: /^cb\(\{"version"/ },
    { server: 'agent', method: 'GET', path: '/slave(1)/flags', who: 'anonymous', want: 200, holds: /host-c/ },
    { server: 'agent', method: 'GET', path: '/slave(1)/health', who: 'anonymous', want: 200 },
    { server: 'agent', method: 'POST', path: '/slave(1)/state', who: 'anonymous', want: 405 },
    { server: 'agent', method: 'GET', path: '/files/debug', who: 'anonymous', want: 200 },
    { server: 'agent', method: 'GET', path: '/files/browse', who: 'anonymous', want: 400, holds: /Expecting 'path=value'/ },
    { server: 'agent', method: 'GET', path: '/files/read', query: '?path=/etc/passwd&offset=0', who: 'anonymous', want: 404 },
    // drydock-scheduler's API: /v1/plans list, item and verbs, pods, configurations, health, metrics.
    { server: 'scheduler', method: 'GET', path: '/v1/plans', who: 'ops', want: 200, holds: /deploy/ },
    { server: 'scheduler', method: 'GET', path: '/v1/plans', who: 'anonymous', want: 401 },
    { server: 'scheduler', method: 'GET', path: '/v1/plans/deploy', who: 'ops', want: 202 },
    { server: 'scheduler', method: 'GET', path: '/v1/plans/deploy/continue', who: 'ops', want: 405 },
    { server: 'scheduler', method: 'POST', path: '/v1/plans/nope/continue', who: 'ops', want: 404 },
    { server: 'scheduler', method: 'POST', path: '/v1/plans/deploy/interrupt', who: 'anonymous', want: 401 },
    { server: 'scheduler', method: 'GET', path: '/v1/pod', who: 'ops', want: 200 },
    { server: 'scheduler', method: 'GET', path: '/v1/pod/status', who: 'ops', want: 200 },
    { server: 'scheduler', method: 'GET', path: '/v1/pod/hello-0/info', who: 'ops', want: 200 },
    { server: 'scheduler', method: 'POST', path: '/v1/pod/nope-0/restart', who: 'ops', want: 404 },
    { server: 'scheduler', method: 'GET', path: '/v1/configurations', who: 'ops', want: 200 },
    { server: 'scheduler', method: 'GET', path: '/v1/configurations/targetId', who: 'ops', want: 200 },
    { server: 'scheduler', method: 'GET', path: '/v1/configurations/target', who: 'ops', want: 200, holds: /hello/ },
    { server: 'scheduler', method: 'GET', path: '/v1/health', who: 'anonymous', want: 204 },
    { server: 'scheduler', method: 'GET', path: '/metrics', who: 'ops', want: 200, compare: 'metric-names' },
    { server: 'scheduler', method: 'GET', path: '/nope', who: 'ops', want: 404 },
  ];

  let checked = 0;
  for (const row of rows) {
    const headers = { ...credentialsOf(row.who), ...(row.json === true ? json : {}) };
    const ask = (path: string): Promise<Reply> => send(ports[row.server], row.method, `${path}${row.query ?? ''}`, headers, row.body);
    const label = `${row.server} ${row.method} ${row.path}${row.query ?? ''} as ${row.who}`;
    const canonical = await ask(row.path);
    assert.equal(canonical.status, row.want, `${label}: ${canonical.body.slice(0, 300)}`);
    if (row.holds !== undefined) assert.match(canonical.body, row.holds, label);
    const seen = (r: Reply): unknown => ({
      status: r.status,
      body: row.compare === 'metric-names' ? metricNames(r.body) : r.body,
      location: r.location,
      wwwAuthenticate: r.wwwAuthenticate,
    });
    for (const spelling of spellings(row.path)) {
      const r = await ask(spelling);
      assert.deepEqual(seen(r), seen(canonical), `${label}, spelled ${spelling}`);
      checked++;
    }
  }
  t.diagnostic(`${rows.length} canonical requests, ${checked} spellings`);

  // The exact reproduction, as it was written.
  for (const path of ['/v1/maintenance/plans//', '/v1/maintenance/plans///', '/v1/maintenance/plans/.//']) {
    const r = await send(m.port, 'GET', path, credentialsOf('r1-team'));
    assert.deepEqual([r.status, JSON.parse(r.body)], [200, ['r1-plan']], path);
  }

  // /redirect names the master as it advertises itself, whatever Host the client wrote.
  const redirect = await send(m.port, 'GET', '/redirect', { host: 'evil.example' });
  assert.deepEqual([redirect.status, redirect.location], [307, `//${m.address}`]);

  // Spellings no route may see: 400 on every server, before authentication, saying why.
  const refused: Array<[string, RegExp]> = [
    ['/v1/maintenance/plans/%2F', /decodes to a '\/'/],
    ['/v1/maintenance/plans/..%2Fops-r2', /decodes to a '\/'/],
    ['/v1/maintenance/plans/ops-r2%00', /NUL/],
    ['/v1/maintenance/plans/%zz', /not followed by two hex digits/],
    ['/v1/maintenance/plans/%FF', /UTF-8/],
    ['/v1/maintenance/plans/ops-r2%5Ccontinue', /'\\'/],
    ['/..', /climbs above the root/],
    ['/%2e%2e/%2e%2e/etc/passwd', /climbs above the root/],
    ['/api/v1/../../../health', /climbs above the root/],
  ];
  for (const [server, port] of Object.entries(ports)) {
    for (const [path, why] of refused) {
      for (const method of ['GET', 'POST']) {
        const r = await send(port, method, path, credentialsOf('r1-team'), method === 'POST' ? '{}' : undefined);
        assert.equal(r.status, 400, `${server} ${method} ${path}: ${r.body}`);
        assert.match(r.body, /^Bad request target: /, `${server} ${method} ${path}`);
        assert.match(r.body, why, `${server} ${method} ${path}`);
      }
    }
  }

  assert.equal(await snapshot(), before, 'no request of the table changed the master\'s or the service\'s state');
});

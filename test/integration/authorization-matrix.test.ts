/**
 * The authorization matrix (issue 13): every operator and maintenance call, legacy and v1, and
 * the maintenance-plan calls, each tried as {anonymous, wrong secret, a principal with no rights,
 * a rack-r1 principal on a rack-r2 machine, the rack-r1 principal on its own machine}, against a
 * real master with --authenticate_http_readwrite/readonly, credentials and ACLs that name racks.
 * Refusals answer 401 (with WWW-Authenticate) or 403 (naming the action and the principal) and
 * leave the master's state exactly as it was; the allowed call goes through.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { authorizationHeader } from '../../shared/credentials.js';
import { EVENT_DEADLINE_MS, eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';

const SECRETS = { admin: 'admin-secret', r1: 'rack-one-secret', nobody: 'nobody-secret' } as const;
const ADMIN_TOKEN = 'admin-token-0123456789abcdef';

type Who = 'anonymous' | 'wrong' | 'nobody' | 'r1-on-r2' | 'r1';

const header = (who: Who): Record<string, string> => {
  switch (who) {
    case 'anonymous':
      return {};
    case 'wrong':
      return { authorization: authorizationHeader({ kind: 'basic', principal: 'r1', secret: 'not-the-secret' }) };
    case 'nobody':
      return { authorization: authorizationHeader({ kind: 'basic', principal: 'nobody', secret: SECRETS.nobody }) };
    case 'r1':
    case 'r1-on-r2':
      return { authorization: authorizationHeader({ kind: 'basic', principal: 'r1', secret: SECRETS.r1 }) };
  }
};
const ADMIN = { authorization: `Bearer ${ADMIN_TOKEN}` };

/** Every action of the matrix: admin may do all, r1 only on rack r1, nobody nothing (permissive false). */
function acls(): string {
  const rackActions = ['drain_agents', 'deactivate_agents', 'reactivate_agents', 'mark_agents_gone', 'view_agents'];
  const machineActions = [
    'get_maintenance_schedules',
    'get_maintenance_statuses',
    'update_maintenance_schedules',
    'start_maintenances',
    'stop_maintenances',
    'view_maintenance_plans',
    'create_maintenance_plans',
    'update_maintenance_plans',
    'delete_maintenance_plans',
  ];
  const j: Record<string, unknown> = { permissive: false };
  for (const a of rackActions) j[a] = [{ principals: { values: ['admin'] }, agents: { type: 'ANY' } }, { principals: { values: ['r1'] }, agents: { values: ['rack:r1'] } }];
  for (const a of machineActions) j[a] = [{ principals: { values: ['admin'] }, machines: { type: 'ANY' } }, { principals: { values: ['r1'] }, machines: { values: ['rack:r1'] } }];
  j['register_agents'] = [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }];
  j['register_frameworks'] = [{ principals: { values: ['admin'] }, roles: { type: 'ANY' } }, { principals: { values: ['r1'] }, roles: { values: ['r1'] } }];
  j['teardown_frameworks'] = [{ principals: { values: ['admin'] }, framework_principals: { type: 'ANY' } }];
  j['view_flags'] = [{ principals: { values: ['admin'] }, flags: { type: 'ANY' } }];
  j['view_frameworks'] = [{ principals: { values: ['admin'] }, users: { type: 'ANY' } }];
  j['view_tasks'] = [{ principals: { values: ['admin'] }, users: { type: 'ANY' } }];
  return JSON.stringify(j);
}

interface Answer {
  status: number;
  text: string;
  wwwAuthenticate: string | null;
}

async function post(m: MasterHandle, path: string, body: unknown, headers: Record<string, string>, contentType = true): Promise<Answer> {
  const res = await fetch(`${m.url}${path}`, {
    method: 'POST',
    headers: { ...(contentType ? { 'content-type': 'application/json' } : {}), ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  return { status: res.status, text: await res.text(), wwwAuthenticate: res.headers.get('www-authenticate') };
}

async function send(m: MasterHandle, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  const res = await fetch(`${m.url}${path}`, { method, headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), wwwAuthenticate: res.headers.get('www-authenticate') };
}

const call = (m: MasterHandle, body: unknown, headers: Record<string, string>): Promise<Answer> => post(m, '/api/v1', body, headers);

/** What must not change on a refusal: agents (drain, deactivation, presence), schedule, machine modes, plans. */
async function snapshot(m: MasterHandle): Promise<string> {
  const agents = JSON.parse((await call(m, { type: 'GET_AGENTS' }, ADMIN)).text) as { get_agents: { agents: Array<Record<string, unknown>> } };
  const slim = agents.get_agents.agents
    .map((a) => ({ id: (a['agent_info'] as { id: { value: string } }).id.value, active: a['active'], deactivated: a['deactivated'] ?? null, drain: a['drain_info'] ?? null }))
    .sort((x, y) => x.id.localeCompare(y.id));
  const schedule = (await call(m, { type: 'GET_MAINTENANCE_SCHEDULE' }, ADMIN)).text;
  const status = (await call(m, { type: 'GET_MAINTENANCE_STATUS' }, ADMIN)).text;
  const plans = (await send(m, 'GET', '/v1/maintenance/plans', ADMIN)).text;
  return JSON.stringify({ slim, schedule, status, plans });
}

test('authorization matrix: operator, scheduler and maintenance calls x callers -> 401/403/200, state unchanged on refusal', async (t) => {
  const dir = tempDir(t);
  const credentials = join(dir, 'credentials.json');
  writeFileSync(
    credentials,
    JSON.stringify({ credentials: [{ principal: 'admin', secret: SECRETS.admin, tokens: [ADMIN_TOKEN] }, { principal: 'r1', secret: SECRETS.r1 }, { principal: 'nobody', secret: SECRETS.nobody }] }),
    { mode: 0o600 },
  );
  const m = await startMaster(t, { flags: ['--authenticate_http_readwrite', '--authenticate_http_readonly', '--authenticate_frameworks', `--credentials=${credentials}`, `--acls=${acls()}`] });
  // Agent calls act on mx-*, maintenance calls on my-*, plans on mz-*; rack r2 is only ever refused.
  const agentOf: Record<string, string> = {};
  const daemonOf: Record<string, Awaited<ReturnType<typeof startAgent>>['daemon']> = {};
  for (const [hostname, rack] of [['mx-r1', 'r1'], ['mx-r2', 'r2'], ['my-r1', 'r1'], ['my-r2', 'r2'], ['mz-r1', 'r1']] as const) {
    const a = await startAgent(t, { master: m.address, hostname, flags: [`--attributes=rack:${rack}`], stopSignal: 'SIGUSR1' });
    agentOf[hostname] = a.agentId as string;
    daemonOf[hostname] = a.daemon;
  }
  /** An allowed call that shuts an agent down goes on after its answer: its agent exits, the master says why. */
  const shutDown = (host: string, msg: string) => async (): Promise<void> => {
    assert.equal((await daemonOf[host]?.exitWithin())?.code, 0, `${host} exits`);
    await m.daemon.waitForMsg(msg, { agentId: agentOf[host] });
  };
  const machine = (h: string): { hostname: string; ip: string } => ({ hostname: h, ip: '127.0.0.1' });
  const T0 = 4_000_000_000_000_000_000n; // a window far in the future: no inverse offer deadline passes during the test
  const window = (hosts: string[], startNs: bigint): Record<string, unknown> => ({ machine_ids: hosts.map(machine), unavailability: { start: { nanoseconds: startNs.toString() }, duration: { nanoseconds: '3600000000000' } } });
  // my-r2 is scheduled by the admin: every r1 update must leave it alone.
  assert.equal((await call(m, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [window(['my-r2'], T0)] } } }, ADMIN)).status, 200);
  /** A schedule that keeps my-r2 as it is and puts the target's machine at `start`; for r2, my-r2 itself moves. */
  const scheduleFor = (target: 'r1' | 'r2', start: bigint, withR1 = true): Record<string, unknown> =>
    target === 'r2' ? { windows: [window(['my-r2'], start)] } : { windows: [window(['my-r2'], T0), ...(withR1 ? [window(['my-r1'], start)] : [])] };

  interface Row {
    name: string;
    /** The call as `who`, acting on rack r1's object, or on rack r2's for 'r1-on-r2'. */
    run: (who: Who, target: 'r1' | 'r2') => Promise<Answer>;
    /** The allowed call's status (default 200). */
    allowed?: number;
    /** What the allowed call goes on doing after its answer, waited for before the next row compares states. */
    after?: () => Promise<void>;
  }
  const agentCall = (type: string, host: 'mx', extra: Record<string, unknown> = {}) => (who: Who, target: 'r1' | 'r2') =>
    call(m, { type, [type.toLowerCase()]: { agent_id: { value: agentOf[`${host}-${target}`] }, ...extra } }, header(who));
  const rows: Row[] = [
    { name: 'DEACTIVATE_AGENT', run: agentCall('DEACTIVATE_AGENT', 'mx') },
    { name: 'REACTIVATE_AGENT', run: agentCall('REACTIVATE_AGENT', 'mx') },
    { name: 'DRAIN_AGENT', run: agentCall('DRAIN_AGENT', 'mx', { max_grace_period: { seconds: 0 } }) },
    { name: 'UPDATE_MAINTENANCE_SCHEDULE', run: (who, target) => call(m, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: scheduleFor(target, T0 + 1n) } }, header(who)) },
    { name: 'POST /machine/down', run: (who, target) => post(m, '/machine/down', [machine(`my-${target}`)], header(who), false), after: shutDown('my-r1', 'agent removed') },
    { name: 'STOP_MAINTENANCE', run: (who, target) => call(m, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [machine(`my-${target}`)] } }, header(who)) },
    { name: 'POST /maintenance/schedule', run: (who, target) => post(m, '/maintenance/schedule', scheduleFor(target, T0 + 2n), header(who), false) },
    { name: 'START_MAINTENANCE', run: (who, target) => call(m, { type: 'START_MAINTENANCE', start_maintenance: { machines: [machine(`my-${target}`)] } }, header(who)) },
    { name: 'POST /machine/up', run: (who, target) => post(m, '/machine/up', [machine(`my-${target}`)], header(who), false) },
    { name: 'MARK_AGENT_GONE', run: agentCall('MARK_AGENT_GONE', 'mx'), after: shutDown('mx-r1', 'agent marked gone') },
  ];

  for (const row of rows) {
    for (const who of ['anonymous', 'wrong', 'nobody', 'r1-on-r2'] as const) {
      const before = await snapshot(m);
      const a = await row.run(who, who === 'r1-on-r2' ? 'r2' : 'r1');
      const want = who === 'anonymous' || who === 'wrong' ? 401 : 403;
      assert.equal(a.status, want, `${row.name} as ${who}: ${a.text}`);
      if (want === 401) {
        assert.equal(a.text, '401 Unauthorized.');
        assert.match(a.wwwAuthenticate ?? '', /^Basic realm="mesos-master-readwrite"$/);
      } else {
        const principal = who === 'nobody' ? 'nobody' : 'r1';
        assert.match(a.text, new RegExp(`^Forbidden: principal '${principal}' may not [a-z_]+`), `${row.name} as ${who}`);
      }
      assert.equal(await snapshot(m), before, `${row.name} as ${who} changed the master's state`);
    }
    const ok = await row.run('r1', 'r1');
    assert.equal(ok.status, row.allowed ?? 200, `${row.name} as r1 on its own rack: ${ok.text}`);
    // An allowed call may go on after its answer (a DOWN machine's agent is shut down): wait for that.
    await row.after?.();
  }

  // Reads: anonymous and wrong secrets are refused; views are filtered by rack.
  for (const who of ['anonymous', 'wrong'] as const) {
    const a = await call(m, { type: 'GET_MAINTENANCE_SCHEDULE' }, header(who));
    assert.equal(a.status, 401, `GET_MAINTENANCE_SCHEDULE as ${who}`);
    // /api/v1 refuses in Mesos' realm for it; a legacy GET in the read-only realm.
    assert.match(a.wwwAuthenticate ?? '', /realm="mesos-master-readwrite"/);
    const g = await send(m, 'GET', '/maintenance/status', header(who));
    assert.equal(g.status, 401);
    assert.match(g.wwwAuthenticate ?? '', /realm="mesos-master-readonly"/);
  }
  const admin = await call(m, { type: 'GET_MAINTENANCE_SCHEDULE' }, ADMIN);
  assert.match(admin.text, /my-r2/);
  const r1View = await call(m, { type: 'GET_MAINTENANCE_SCHEDULE' }, header('r1'));
  assert.equal(r1View.status, 200);
  assert.doesNotMatch(r1View.text, /my-r2/, 'r1 sees no r2 machine');
  assert.deepEqual(JSON.parse((await call(m, { type: 'GET_MAINTENANCE_SCHEDULE' }, header('nobody'))).text), { type: 'GET_MAINTENANCE_SCHEDULE', get_maintenance_schedule: { schedule: {} } });
  const legacy = await send(m, 'GET', '/maintenance/schedule', header('r1'));
  assert.equal(legacy.status, 200);
  assert.doesNotMatch(legacy.text, /my-r2/);

  // Views: agents and flags.
  const agentsSeen = async (who: Record<string, string>): Promise<string[]> =>
    (JSON.parse((await call(m, { type: 'GET_AGENTS' }, who)).text) as { get_agents: { agents: Array<{ agent_info: { hostname: string } }> } }).get_agents.agents.map((a) => a.agent_info.hostname).sort();
  const all = await agentsSeen(ADMIN);
  assert.ok(all.includes('mx-r2') && all.includes('mz-r1'), `admin sees every agent: ${all.join(',')}`);
  assert.ok((await agentsSeen(header('r1'))).every((h) => h.endsWith('-r1')), 'r1 sees only rack r1 agents');
  assert.deepEqual(await agentsSeen(header('nobody')), []);
  assert.equal((await call(m, { type: 'GET_FLAGS' }, ADMIN)).status, 200);
  const flags = await call(m, { type: 'GET_FLAGS' }, header('r1'));
  assert.equal(flags.status, 403);
  assert.match(flags.text, /principal 'r1' may not view_flags/);

  // The scheduler API: SUBSCRIBE as each caller; r1 may register in role r1 only.
  const subscribe = async (who: Who, role: string): Promise<{ status: number; text: string; streamId: string | null; frameworkId?: string; close: () => void }> => {
    const abort = new AbortController();
    const res = await fetch(`${m.url}/api/v1/scheduler`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...header(who) },
      body: JSON.stringify({ type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'root', name: `fw-${who}`, roles: [role], capabilities: [{ type: 'MULTI_ROLE' }] } } }),
      signal: abort.signal,
    });
    if (res.status !== 200) return { status: res.status, text: await res.text(), streamId: null, close: () => abort.abort() };
    // The first record is SUBSCRIBED: read until it has arrived (bounded by the timeout below).
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let text = '';
    const deadline = Date.now() + EVENT_DEADLINE_MS;
    while (!text.includes('framework_id') && Date.now() < deadline) {
      const chunk = await reader.read();
      if (chunk.done) break;
      text += Buffer.from(chunk.value).toString('utf8');
    }
    const frameworkId = /"framework_id":\{"value":"([^"]+)"/.exec(text)?.[1];
    return { status: 200, text, streamId: res.headers.get('mesos-stream-id'), ...(frameworkId === undefined ? {} : { frameworkId }), close: () => abort.abort() };
  };
  for (const who of ['anonymous', 'wrong', 'nobody', 'r1-on-r2'] as const) {
    const before = (await call(m, { type: 'GET_FRAMEWORKS' }, ADMIN)).text;
    const s = await subscribe(who, who === 'r1-on-r2' ? 'r2' : 'r1');
    s.close();
    assert.equal(s.status, who === 'anonymous' || who === 'wrong' ? 401 : 403, `SUBSCRIBE as ${who}: ${s.text}`);
    if (s.status === 403) assert.match(s.text, /may not register_frameworks/);
    assert.equal((await call(m, { type: 'GET_FRAMEWORKS' }, ADMIN)).text, before, `SUBSCRIBE as ${who} changed the frameworks`);
  }
  const r1Frameworks = JSON.parse((await call(m, { type: 'GET_FRAMEWORKS' }, header('r1'))).text) as { get_frameworks: { frameworks?: unknown[] } };
  assert.deepEqual(r1Frameworks.get_frameworks.frameworks ?? [], [], 'r1 may view no framework');
  const fw = await subscribe('r1', 'r1');
  t.after(() => fw.close());
  assert.equal(fw.status, 200, fw.text);
  assert.ok(fw.frameworkId !== undefined && fw.streamId !== null);
  // Another principal cannot tear it down, over either API; the framework stays.
  const teardown = { type: 'TEARDOWN', framework_id: { value: fw.frameworkId } };
  const viaScheduler = await fetch(`${m.url}/api/v1/scheduler`, { method: 'POST', headers: { 'content-type': 'application/json', 'mesos-stream-id': fw.streamId ?? '', ...header('nobody') }, body: JSON.stringify(teardown), signal: AbortSignal.timeout(10_000) });
  assert.equal(viaScheduler.status, 403, await viaScheduler.text());
  const viaOperator = await call(m, { type: 'TEARDOWN', teardown: { framework_id: { value: fw.frameworkId } } }, header('r1'));
  assert.equal(viaOperator.status, 403, viaOperator.text);
  assert.match(viaOperator.text, /may not teardown_frameworks/);
  const frameworks = JSON.parse((await call(m, { type: 'GET_FRAMEWORKS' }, ADMIN)).text) as { get_frameworks: { frameworks?: Array<{ framework_info: { id: { value: string } } }> } };
  assert.ok((frameworks.get_frameworks.frameworks ?? []).some((f) => f.framework_info.id.value === fw.frameworkId), 'the framework is still there');
  assert.equal((await call(m, { type: 'TEARDOWN', teardown: { framework_id: { value: fw.frameworkId } } }, ADMIN)).status, 200);

  // Maintenance plans: create, view, a verb, delete; each refused for the others and for r2's machines.
  const spec = (name: string, host: string): string => JSON.stringify({ name, machines: { hostnames: [host] }, window: '1hrs', wait_for_frameworks: 0, settle: '1secs', up_when: 'agent_registered' });
  for (const who of ['anonymous', 'wrong', 'nobody', 'r1-on-r2'] as const) {
    const before = (await send(m, 'GET', '/v1/maintenance/plans', ADMIN)).text;
    const a = await post(m, '/v1/maintenance/plans', spec('p-refused', who === 'r1-on-r2' ? 'mx-r2' : 'mz-r1'), header(who), false);
    assert.equal(a.status, who === 'anonymous' || who === 'wrong' ? 401 : 403, `create plan as ${who}: ${a.text}`);
    if (a.status === 403) assert.match(a.text, /may not create_maintenance_plans/);
    assert.equal((await send(m, 'GET', '/v1/maintenance/plans', ADMIN)).text, before);
  }
  assert.equal((await post(m, '/v1/maintenance/plans', spec('p-r1', 'mz-r1'), header('r1'), false)).status, 200);
  assert.equal((await post(m, '/v1/maintenance/plans', spec('p-r2', 'mx-r2'), ADMIN, false)).status, 200);
  // Listing is filtered; another rack's plan is refused by name.
  assert.deepEqual(JSON.parse((await send(m, 'GET', '/v1/maintenance/plans', header('r1'))).text), ['p-r1']);
  assert.deepEqual(JSON.parse((await send(m, 'GET', '/v1/maintenance/plans', ADMIN)).text).sort(), ['p-r1', 'p-r2']);
  // 202 while the plan works, 200 once COMPLETE (the SDK's codes): either way not refused.
  assert.ok([200, 202].includes((await send(m, 'GET', '/v1/maintenance/plans/p-r1', header('r1'))).status));
  const view = await send(m, 'GET', '/v1/maintenance/plans/p-r2', header('r1'));
  assert.equal(view.status, 403);
  assert.match(view.text, /principal 'r1' may not view_maintenance_plans/);
  assert.equal((await send(m, 'GET', '/v1/maintenance/plans/p-r1', header('nobody'))).status, 403);
  const verb = await post(m, '/v1/maintenance/plans/p-r2/interrupt', '', header('r1'), false);
  assert.equal(verb.status, 403);
  assert.match(verb.text, /may not update_maintenance_plans/);
  const del = await send(m, 'DELETE', '/v1/maintenance/plans/p-r2', header('r1'));
  assert.equal(del.status, 403);
  assert.match(del.text, /may not delete_maintenance_plans/);
  assert.equal((await post(m, '/v1/maintenance/plans/p-r1/interrupt', '', header('r1'), false)).status, 200);

  // Every refused mutating call left an audit line with its principal and outcome (read from the
  // master's stdout: an answer can arrive before its log line).
  const audited = (what: string, pred: (r: Record<string, unknown>) => boolean): Promise<true> =>
    eventually(() => (m.daemon.records.some((r) => r['msg'] === 'audit' && pred(r)) ? true : undefined), undefined, 20, what);
  await audited('an unauthenticated call, body never read', (r) => r['outcome'] === 'unauthenticated' && r['action'] === 'POST /api/v1' && r['principal'] === null);
  await audited('an unauthenticated legacy call', (r) => r['outcome'] === 'unauthenticated' && r['action'] === 'POST /machine/down');
  await audited('a denied drain naming principal and object', (r) => r['outcome'] === 'denied' && r['principal'] === 'r1' && String(r['action']).includes('drain_agents') && String(r['object']).includes('mx-r2'));
  await audited('an allowed call', (r) => r['outcome'] === 'allowed' && r['principal'] === 'r1' && String(r['action']).includes('mark_agents_gone'));
});

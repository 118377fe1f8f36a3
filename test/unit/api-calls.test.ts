/**
 * The HTTP edge against fakes of its two ports (term/queries.ts, term/commands.ts): no term, no
 * services, no registry. The table of calls (master/api/calls.ts) decides routing, the realm,
 * the decoder, the ACL and the answer's encoding; these tests drive it through the real router
 * on 127.0.0.1:0 and through `answerCall`, with queries and commands that record what they are
 * asked. And the table's own rules: every Mesos call has a row (an answer or a 501), a legacy
 * endpoint and its v1 call are one row, a path's 405 names the methods its rows take.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import type { DrainConfig } from '../../shared/drain.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import { silentLogger } from '../../shared/log.js';
import type { MachineId } from '../../shared/machine.js';
import { normalizePath } from '../../shared/paths.js';
import { CALLS, NOT_ANSWERED, V1_CALLS } from '../../master/api/calls.js';
import { answerCall, isProcessRoute, routeOf, type Route } from '../../master/api/dispatch.js';
import { CALL_TYPES } from '../../master/api/operator-call.js';
import { createMasterServer } from '../../master/process/router.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import type { KeyedSchedule } from '../../master/cores/maintenance.js';
import type { Commands } from '../../master/term/commands.js';
import type { ServingTerm } from '../../master/term/ports.js';
import type { Queries } from '../../master/term/queries.js';

/** A port whose every method throws unless faked: an edge that reaches for more than it should fails the test. */
function fake<T extends object>(name: string, methods: Partial<T>): T {
  return new Proxy(methods as T, {
    get(target, key) {
      const v = (target as Record<string | symbol, unknown>)[key];
      if (v !== undefined || typeof key === 'symbol' || key === 'then') return v;
      throw new Error(`${name}.${String(key)} is not faked`);
    },
  });
}

const MACHINE: MachineId = { hostname: 'h1', ip: '10.0.0.1' };

/** Fake ports: one agent A on rack r1; every command recorded and answered `answer`. */
function ports(answer: DrydockError | undefined = undefined) {
  const asked: string[] = [];
  const queries = fake<Queries>('queries', {
    agentObject: (id: string): MachineObject | undefined => (id === 'A' ? { agentId: 'A', hostname: 'h1', ip: '10.0.0.1', attributes: { rack: 'r1' } } : undefined),
    machineObject: (id: MachineId): MachineObject => ({ hostname: id.hostname, ip: id.ip, attributes: id.hostname === 'h1' ? { rack: 'r1' } : { rack: 'r2' } }),
    maintenanceSchedule: () => ({ windows: [{ machine_ids: [{ hostname: 'h1', ip: '10.0.0.1' }], unavailability: { start: { nanoseconds: 1n } } }] }),
    changedMachines: (next: KeyedSchedule) => next.schedule.windows.flatMap((w) => w.machineIds),
  });
  const commands = fake<Commands>('commands', {
    drainAgent: async (id: string, config: DrainConfig) => {
      asked.push(`drain ${id} ${String(config.maxGracePeriodNs)} ${config.markGone}`);
      return answer;
    },
    startMaintenance: async (ids: readonly MachineId[]) => {
      asked.push(`down ${ids.map((m) => m.hostname).join(',')}`);
      return answer;
    },
    updateSchedule: async (s: KeyedSchedule) => {
      asked.push(`schedule ${s.machines}`);
      return answer;
    },
  });
  return { queries, commands, asked };
}

/** Security with ACLs: `ops` may drain and mark gone anything; `rack1` may drain rack r1 only, and take its machines down. */
function acls(): MasterSecurity {
  const parsed = parseAcls(
    JSON.stringify({
      permissive: false,
      drain_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }, { principals: { values: ['rack1'] }, agents: { values: ['rack:r1'] } }],
      mark_agents_gone: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
      start_maintenances: [{ principals: { values: ['rack1'] }, machines: { values: ['rack:r1'] } }],
    }),
  );
  assert.ok(parsed.ok);
  if (!parsed.ok) throw new Error('acls');
  return new MasterSecurity({
    config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
    authorizer: new Authorizer(parsed.value),
  });
}

test('DRAIN_AGENT against fake ports: authorized on the agent first, its config read after, mark_gone needs its own right, then the command', async () => {
  const security = acls();
  const drain = (body: Record<string, unknown>) => ({ type: 'DRAIN_AGENT' as const, body: { type: 'DRAIN_AGENT', drain_agent: body } });
  const p = ports();
  // A refused caller learns nothing of its config, not even that it is wrong.
  const stranger = await answerCall(p, drain({ agent_id: { value: 'A' }, max_grace_period: 'soon' }), new Access(security, 'nobody'));
  assert.ok(!stranger.ok && stranger.error.code === 'FORBIDDEN', JSON.stringify(stranger));
  const bad = await answerCall(p, drain({ agent_id: { value: 'A' }, max_grace_period: 'soon' }), new Access(security, 'rack1'));
  assert.ok(!bad.ok && bad.error.code === 'DRAIN_CALL_INVALID');
  const gone = await answerCall(p, drain({ agent_id: { value: 'A' }, mark_gone: true }), new Access(security, 'rack1'));
  assert.ok(!gone.ok && gone.error.code === 'FORBIDDEN' && gone.error.message.includes('mark_agents_gone'), JSON.stringify(gone));
  // An unknown agent is an unknown object: only ANY entries match it.
  const unknown = await answerCall(p, drain({ agent_id: { value: 'B' } }), new Access(security, 'rack1'));
  assert.ok(!unknown.ok && unknown.error.code === 'FORBIDDEN');
  assert.deepEqual(p.asked, [], 'no command ran');
  assert.deepEqual(await answerCall(p, drain({ agent_id: { value: 'A' }, max_grace_period: '10mins' }), new Access(security, 'rack1')), { ok: true, json: undefined });
  assert.deepEqual(await answerCall(p, drain({ agent_id: { value: 'B' }, mark_gone: 'true' }), new Access(security, 'ops')), { ok: true, json: undefined });
  assert.deepEqual(p.asked, ['drain A 600000000000 false', 'drain B undefined true']);
  // The command's refusal is the answer.
  const refused = ports(fail('AGENT_UNKNOWN'));
  const r = await answerCall(refused, drain({ agent_id: { value: 'A' } }), new Access(security, 'ops'));
  assert.ok(!r.ok && r.error.code === 'AGENT_UNKNOWN');
  // A sub-message that does not convert: 400 before anything is asked.
  const malformed = await answerCall(p, drain({ agent_id: 7 }), new Access(security, 'ops'));
  assert.ok(!malformed.ok && malformed.error.code === 'BODY_NOT_CALL');
});

test('the router over fake ports: a legacy endpoint and its v1 call reach one command, views come from queries, JSONP where Mesos does it', async (t) => {
  const security = acls();
  const p = ports();
  const term = { epoch: 1n, queries: p.queries, commands: p.commands } as unknown as ServingTerm;
  const server = createMasterServer({ current: () => term, leader: () => undefined, self: () => '127.0.0.1:5050', unavailable: () => fail('NOT_RECOVERED') }, silentLogger, security);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const post = (path: string, body: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { method: 'POST', body, headers, signal: AbortSignal.timeout(5000) });

  // POST /machine/down and START_MAINTENANCE: one row, two decoders, one command.
  let r = await post('/master/machine/down', JSON.stringify([MACHINE]));
  assert.equal(r.status, 403, 'anonymous: start_maintenances refused');
  assert.match(await r.text(), /start_maintenances/);
  assert.deepEqual(p.asked, []);
  r = await post('/machine/down', '[1]');
  assert.deepEqual([r.status, await r.text()], [400, 'Expecting a JSON object'], 'the legacy decoder: Mesos\' bare message');
  r = await post('/api/v1', JSON.stringify({ type: 'START_MAINTENANCE', start_maintenance: { machines: [7] } }), { 'content-type': 'application/json' });
  assert.equal(r.status, 400);
  assert.match(await r.text(), /^Failed to convert JSON into Call protobuf: /, 'the v1 decoder: wrapped as Mesos wraps it');
  // Methods the path does not take: 405 with the methods its rows do.
  r = await fetch(`${base}/machine/down`, { signal: AbortSignal.timeout(5000) });
  assert.deepEqual([r.status, r.headers.get('allow')], [405, 'POST']);
  await r.text();
  r = await fetch(`${base}/maintenance/schedule`, { method: 'PUT', body: '{}', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([r.status, r.headers.get('allow'), await r.text()], [405, 'GET, POST', "405 Method Not Allowed. Expecting one of { 'GET', 'POST' }, but received 'PUT'."]);

  // Views: from the queries port, wrapped in the v1 answer or written as is (with JSONP on the legacy GET).
  r = await fetch(`${base}/maintenance/schedule?jsonp=cb`, { signal: AbortSignal.timeout(5000) });
  assert.deepEqual([r.status, r.headers.get('content-type'), await r.text()], [200, 'text/javascript', 'cb({"windows":[{"machine_ids":[{"hostname":"h1","ip":"10.0.0.1"}],"unavailability":{"start":{"nanoseconds":1}}}]});']);
  r = await post('/api/v1', JSON.stringify({ type: 'GET_MAINTENANCE_SCHEDULE' }), { 'content-type': 'application/json' });
  assert.deepEqual(await r.json(), { type: 'GET_MAINTENANCE_SCHEDULE', get_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'h1', ip: '10.0.0.1' }], unavailability: { start: { nanoseconds: 1 } } }] } } });

  // A call Mesos has and Drydock does not answer: 501, from the table.
  r = await post('/api/v1', JSON.stringify({ type: 'GET_WEIGHTS' }), { 'content-type': 'application/json' });
  assert.deepEqual([r.status, await r.text()], [501, 'Call type GET_WEIGHTS is not supported']);
  // /health and /version are the process's: answered without asking a port anything.
  assert.equal((await fetch(`${base}/health`, { signal: AbortSignal.timeout(5000) })).status, 200);
});

test('the table: every Mesos call has a row, answered or 501; legacy endpoints share their v1 row; no two rows take one method and path', () => {
  const types = CALL_TYPES.filter((t) => t !== 'UNKNOWN');
  assert.deepEqual([...V1_CALLS.keys()].sort(), [...types].sort(), 'one row per Mesos call type');
  assert.deepEqual(
    [...NOT_ANSWERED].sort(),
    ['CREATE_VOLUMES', 'DESTROY_VOLUMES', 'GET_LOGGING_LEVEL', 'GET_QUOTA', 'GET_WEIGHTS', 'GROW_VOLUME', 'LIST_FILES', 'READ_FILE', 'REMOVE_QUOTA', 'RESERVE_RESOURCES', 'SET_LOGGING_LEVEL', 'SET_QUOTA', 'SHRINK_VOLUME', 'UNRESERVE_RESOURCES', 'UPDATE_QUOTA', 'UPDATE_WEIGHTS'],
  );
  const row = (name: string) => CALLS.find((r) => r.name === name);
  for (const [name, path] of [['START_MAINTENANCE', '/machine/down'], ['STOP_MAINTENANCE', '/machine/up'], ['UPDATE_MAINTENANCE_SCHEDULE', '/maintenance/schedule'], ['GET_MAINTENANCE_SCHEDULE', '/maintenance/schedule'], ['GET_MAINTENANCE_STATUS', '/maintenance/status']] as const) {
    const r = row(name);
    assert.equal(r?.v1?.type, name);
    for (const q of [path, `/master${path}`]) assert.ok(r?.http?.some((w) => w.paths.match(target(q)) !== undefined), `${name} is reached at ${q}`);
  }
  // Writes are audited, reads are not: every row that changes state is in the read-write realm.
  for (const r of CALLS) if (r.v1 !== undefined && /^(UPDATE|START|STOP|DRAIN|DEACTIVATE|REACTIVATE|MARK|TEARDOWN|RESERVE|UNRESERVE|CREATE|DESTROY|GROW|SHRINK|SET|REMOVE)_?/.test(r.name)) assert.equal(r.access, 'write', r.name);
  // Routing is by the table: the first row whose way takes the method and path.
  const process = { leader: () => undefined, unavailable: () => fail('NOT_RECOVERED'), metrics: undefined };
  const at = (method: string, path: string) => routeOf(target(path), method, process);
  const named = (method: string, path: string) => {
    const r = at(method, path);
    return r?.kind === 'row' ? r.row.name : r?.kind;
  };
  assert.equal(named('POST', '/master/machine/down'), 'START_MAINTENANCE');
  assert.equal(named('GET', '/v1/maintenance/plans'), 'MAINTENANCE_PLANS');
  assert.equal(named('POST', '/v1/maintenance/plans'), 'CREATE_MAINTENANCE_PLAN');
  assert.equal(named('DELETE', '/v1/maintenance/plans/p'), 'DELETE_MAINTENANCE_PLAN');
  assert.equal(named('DELETE', '/v1/maintenance/plans/p/x'), 'MAINTENANCE_PLAN_VERB');
  assert.equal(named('HEAD', '/v1/maintenance/plans/p/phases'), 'GET_MAINTENANCE_PLAN');
  assert.equal(named('POST', '/mesos/api/v1'), 'v1');
  assert.equal(named('GET', '/master/api/v1/scheduler'), 'SCHEDULER_API');
  assert.equal(named('GET', '/metrics'), undefined, 'without the process\'s metrics the metrics rows are not there');
  // Mesos' legacy read endpoints: each with and without /master (libprocess delegation), JSONP from the row.
  for (const [path, name] of [['/state', 'STATE'], ['/state-summary', 'STATE_SUMMARY'], ['/slaves', 'SLAVES'], ['/frameworks', 'FRAMEWORKS'], ['/tasks', 'TASKS'], ['/roles', 'ROLES'], ['/flags', 'FLAGS']] as const) {
    for (const q of [path, `/master${path}`]) {
      const r = at('GET', q);
      assert.equal(r?.kind === 'row' ? `${r.row.name} ${r.way.answer ?? 'json'}` : r?.kind, `${name} jsonp`, q);
    }
  }
  assert.equal(at('GET', '/flags')?.kind === 'row' && isProcessRoute(at('GET', '/flags') as Route), true, '/flags is answered by every master (Mesos does not redirect it)');
  assert.equal(isProcessRoute(at('GET', '/master/state') as Route), false, '/master/state is the leader\'s');
  for (const verb of ['browse', 'read', 'download', 'debug']) assert.equal(named('GET', `/files/${verb}`), 'MASTER_FILES');
  assert.equal(named('GET', '/files/other'), undefined);
  assert.equal(named('GET', '/nowhere'), undefined);
  assert.deepEqual(at('DELETE', '/v1/maintenance/plans'), { kind: 'method', allowed: ['GET', 'POST'], process: false });
  assert.deepEqual(at('POST', '/master/health'), { kind: 'method', allowed: ['GET'], process: true });
});

function target(path: string) {
  const t = normalizePath(path);
  assert.ok(t.ok);
  if (!t.ok) throw new Error(path);
  return t.target;
}

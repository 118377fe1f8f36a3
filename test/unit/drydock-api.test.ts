/**
 * Drydock's own agent API (master/api/drydock.ts): the state word of an agent (a table), one
 * agent in Drydock's words in each of its lives, and the rows `GET /drydock/v1/agents` and
 * `/drydock/v1/agents/<id>` through the real router over fake ports: the read-only realm, GET
 * and HEAD only, a 404 for an agent the master does not have or the caller may not see, and
 * the view ACLs of the Mesos calls that read the same facts (view_agents for the agent,
 * get_maintenance_statuses for its machine's mode, get_maintenance_schedules for its window).
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import type { AddressInfo } from 'node:net';
import { attributeValues, Authorizer, parseAcls, type MachineObject } from '../../shared/acls.js';
import { Authenticator } from '../../shared/authentication.js';
import { fail } from '../../shared/errors.js';
import { parseJson } from '../../shared/json.js';
import { silentLogger } from '../../shared/log.js';
import { machineKey, type MachineId } from '../../shared/machine.js';
import type { Task } from '../../shared/mesos.js';
import { normalizePath } from '../../shared/paths.js';
import { routeOf } from '../../master/api/dispatch.js';
import { agentState, drydockAgentJson } from '../../master/api/drydock.js';
import type { AgentDrain, AgentEntry } from '../../master/cores/agents.js';
import type { Machine } from '../../master/cores/maintenance.js';
import { createMasterServer } from '../../master/process/router.js';
import { MasterSecurity } from '../../master/security/security.js';
import type { ServingTerm } from '../../master/term/ports.js';
import type { Queries } from '../../master/term/queries.js';

const DRAINING: AgentDrain = { state: 'DRAINING', config: { maxGracePeriodNs: 5_000_000_000n, markGone: false }, startedNs: 1_700_000_000_000_000_000n, estimatedStartNs: undefined, drainedNs: undefined, sentMs: 1_700_000_000_000 };

function agent(id: string, hostname: string, ip: string, rack: string, over: Partial<AgentEntry> = {}): AgentEntry {
  return {
    id,
    info: { hostname, ip, port: 5051, resources: [], attributes: [{ name: 'rack', type: 'TEXT', text: { value: rack } }] },
    version: '1.12.0',
    capabilities: ['AGENT_DRAINING'],
    phase: 'REGISTERED',
    connected: true,
    sessionId: 1,
    registeredTimeNs: 1n,
    reregisteredTimeNs: undefined,
    unreachableTimeNs: undefined,
    tasks: undefined,
    deactivated: false,
    drain: undefined,
    principal: undefined,
    disconnectedAtMs: undefined,
    awaitingPong: false,
    missedPings: 0,
    pingSlot: undefined,
    diskPressure: undefined,
    ...over,
  };
}

test("an agent under disk pressure shows it in Drydock's view (conditions), never in a Mesos-shaped answer", () => {
  const report = { since_ms: 1_700_000_000_000, reason: 'NO_SPACE' as const, message: 'no space left on device in /w (0 B free of 4.0 MB)', path: '/w', free_bytes: 0, total_bytes: 4_194_304, free_inodes: 10, total_inodes: 1000 };
  const a = agent('A', 'h1', '10.0.0.1', 'r1', { diskPressure: { report, heardMs: 1_700_000_000_500 } });
  const j = drydockAgentJson(a, queries([a], [], { A: '10.0.0.1' }));
  assert.deepEqual(j['conditions'], {
    disk_pressure: { since: { nanoseconds: 1_700_000_000_000_000_000n }, reason: 'NO_SPACE', message: report.message, path: '/w', free_bytes: 0, total_bytes: 4_194_304, free_inodes: 10, total_inodes: 1000 },
  });
});

describe('agentState', () => {
  const cases: Array<[string, Partial<AgentEntry>, string]> = [
    ['connected', {}, 'ACTIVE'],
    ['its session closed', { connected: false }, 'DISCONNECTED'],
    ['deactivated', { deactivated: true }, 'DEACTIVATED'],
    ['draining (a drain deactivates too)', { deactivated: true, drain: DRAINING }, 'DRAINING'],
    ['drained and disconnected: the drain says more', { deactivated: true, connected: false, drain: { ...DRAINING, state: 'DRAINED' } }, 'DRAINED'],
    ['not re-registered since a master restart, drain or not', { phase: 'RECOVERED', connected: false, drain: DRAINING }, 'RECOVERED'],
    ['unreachable', { phase: 'UNREACHABLE', connected: false }, 'UNREACHABLE'],
  ];
  for (const [name, over, want] of cases) test(name, () => assert.equal(agentState(agent('A', 'h', '10.0.0.1', 'r1', over)), want));
});

/** A task that keeps a drain waiting. */
const RUNNING: Task = { name: 't1', task_id: { value: 't1' }, framework_id: { value: 'fw' }, agent_id: { value: 'A' }, state: 'TASK_RUNNING', resources: [], statuses: [] };

/** Fake queries over a few agents and machines; `peers` by agent id. */
function queries(agents: AgentEntry[], machines: Machine[] = [], peers: Record<string, string> = {}): Queries {
  const byAgent = (id: string): Machine | undefined => {
    const e = agents.find((a) => a.id === id);
    return e === undefined ? undefined : machines.find((m) => machineKey(m.id) === machineKey({ hostname: e.info.hostname, ip: e.info.ip }));
  };
  const q: Partial<Queries> = {
    nowMs: () => 1_700_000_002_000,
    agent: (id) => agents.find((a) => a.id === id),
    agents: () => agents,
    agentMachine: byAgent,
    agentPeer: (id) => peers[id],
    drainView: (e) => ({ phase: e.phase, connected: e.connected, drain: e.drain, tasks: [...(e.tasks?.values() ?? [])], markingGone: false }),
    machineObject: (id: MachineId): MachineObject => {
      const on = agents.find((a) => a.info.hostname === id.hostname);
      return { hostname: id.hostname, ip: id.ip, attributes: on === undefined ? {} : attributeValues(on.info.attributes) };
    },
  };
  return new Proxy(q as Queries, {
    get(target, key) {
      const v = (target as unknown as Record<string | symbol, unknown>)[key];
      if (v !== undefined || typeof key === 'symbol' || key === 'then') return v;
      throw new Error(`queries.${String(key)} is not faked`);
    },
  });
}

const WINDOW: Machine = { key: 'h1|10.0.0.1', id: { hostname: 'h1', ip: '10.0.0.1' }, mode: 'DRAINING', unavailability: { startNs: 1_800_000_000_000_000_000n, durationNs: 3_600_000_000_000n }, statuses: new Map() };

test("one agent in Drydock's words: addresses, phase and state, its machine's mode and window, the drain record, conditions", () => {
  const a = agent('A', 'h1', '10.0.0.1', 'r1', { deactivated: true, drain: DRAINING, tasks: new Map([['fw/t1', RUNNING]]) });
  const j = drydockAgentJson(a, queries([a], [WINDOW], { A: '10.0.0.1' }));
  assert.deepEqual(Object.keys(j), ['agent_id', 'hostname', 'ip', 'port', 'peer', 'phase', 'state', 'connected', 'active', 'deactivated', 'machine', 'drain', 'conditions']);
  assert.deepEqual({ ...j, drain: undefined }, {
    agent_id: { value: 'A' },
    hostname: 'h1',
    ip: '10.0.0.1',
    port: 5051,
    peer: '10.0.0.1',
    phase: 'REGISTERED',
    state: 'DRAINING',
    connected: true,
    active: false,
    deactivated: true,
    machine: { id: { hostname: 'h1', ip: '10.0.0.1' }, mode: 'DRAINING', unavailability: { start: { nanoseconds: 1_800_000_000_000_000_000n }, duration: { nanoseconds: 3_600_000_000_000n } } },
    drain: undefined,
    conditions: {},
  });
  const drain = j['drain'] as { state: string; started_time: unknown; config: unknown; remaining_tasks: number; waiting_for: Array<{ kind: string; task_id: string; message: string }> };
  assert.deepEqual([drain.state, drain.started_time, drain.config, drain.remaining_tasks], ['DRAINING', { nanoseconds: 1_700_000_000_000_000_000n }, { max_grace_period: { nanoseconds: 5_000_000_000n }, mark_gone: false }, 1]);
  assert.equal(drain.waiting_for[0]?.kind, 'TASK_RUNNING');
  // The task has no kill policy: its default 3 s grace, under the drain's 5 s max.
  assert.match(drain.waiting_for[0]?.message ?? '', /^task t1 still running after SIGTERM \(2 s of 3 s grace\)$/);
});

test('an agent without a drain, on an UP machine nobody scheduled; a recovered agent has no peer and is not connected', () => {
  const up = agent('B', 'h2', '10.0.0.2', 'r2');
  const j = drydockAgentJson(up, queries([up], [], { B: '10.0.0.99' }));
  assert.deepEqual([j['state'], j['active'], j['peer'], j['machine'], j['drain']], ['ACTIVE', true, '10.0.0.99', { id: { hostname: 'h2', ip: '10.0.0.2' }, mode: 'UP' }, undefined]);
  const recovered = agent('C', 'h3', '10.0.0.3', 'r3', { phase: 'RECOVERED', connected: false, sessionId: undefined, drain: DRAINING });
  const r = drydockAgentJson(recovered, queries([recovered], [], { C: 'stale' }));
  assert.deepEqual([r['phase'], r['state'], r['connected'], r['active'], r['peer']], ['RECOVERED', 'RECOVERED', false, false, undefined]);
  assert.deepEqual((r['drain'] as { waiting_for: Array<{ kind: string }> }).waiting_for.map((w) => w.kind), ['AGENT_RECOVERING'], 'the drain record says what it waits for');
});

describe('the rows GET /drydock/v1/agents and /drydock/v1/agents/<id> (router over fake ports)', () => {
  const A = agent('A', 'h1', '10.0.0.1', 'r1', { deactivated: true, drain: DRAINING });
  const B = agent('B', 'h2', '10.0.0.2', 'r2');
  const MACHINES: Machine[] = [WINDOW];

  async function serve(t: { after: (fn: () => Promise<void>) => void }, security: MasterSecurity): Promise<string> {
    const term = { epoch: 1n, queries: queries([A, B], MACHINES), commands: {} } as unknown as ServingTerm;
    const server = createMasterServer({ current: () => term, leader: () => undefined, self: () => '127.0.0.1:5050', unavailable: () => fail('NOT_RECOVERED') }, silentLogger, security);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const get = async (url: string, init: RequestInit = {}): Promise<{ status: number; text: string; json: unknown }> => {
    const r = await fetch(url, { ...init, signal: AbortSignal.timeout(5000) });
    const text = await r.text();
    return { status: r.status, text, json: r.headers.get('content-type') === 'application/json' && text !== '' ? parseJson(text) : undefined };
  };

  test('without ACLs: every agent, an agent by id, 404 for one the master does not have, GET and HEAD only', async (t) => {
    const base = await serve(t, MasterSecurity.open());
    const all = await get(`${base}/drydock/v1/agents`);
    assert.equal(all.status, 200);
    const agents = (all.json as { agents: Array<Record<string, unknown>> }).agents;
    assert.deepEqual(agents.map((a) => [(a['agent_id'] as { value: string }).value, a['state']]), [['A', 'DRAINING'], ['B', 'ACTIVE']]);
    const one = await get(`${base}/drydock/v1/agents/A`);
    assert.deepEqual(one.json, agents[0]);
    assert.deepEqual([(await get(`${base}/drydock/v1/agents/Z`)).status, (await get(`${base}/drydock/v1/agents/Z`)).text], [404, "Agent 'Z' not found"]);
    const head = await fetch(`${base}/drydock/v1/agents`, { method: 'HEAD', signal: AbortSignal.timeout(5000) });
    assert.equal(head.status, 200);
    const post = await get(`${base}/drydock/v1/agents`, { method: 'POST', body: '{}' });
    assert.equal(post.status, 405);
    assert.equal((await get(`${base}/drydock/v1/nothing`)).status, 404);
  });

  test('with ACLs: the agents view_agents allows; the mode by get_maintenance_statuses, the window by get_maintenance_schedules; an agent not allowed is a 404', async (t) => {
    const parsed = parseAcls(JSON.stringify({
      permissive: false,
      view_agents: [{ principals: { values: ['rack1', 'modes'] }, agents: { values: ['rack:r1'] } }, { principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
      get_maintenance_statuses: [{ principals: { values: ['ops', 'modes'] }, machines: { type: 'ANY' } }],
      get_maintenance_schedules: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
    }));
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    const security = new MasterSecurity({
      config: { authenticateHttpReadwrite: false, authenticateHttpReadonly: false, authenticateFrameworks: false, authenticateAgents: false, credentialsFile: undefined, acls: '{}' },
      authenticator: new Authenticator(['ops', 'rack1', 'modes', 'nobody'].map((principal) => ({ principal, secret: 'x', tokens: [] }))),
      authorizer: new Authorizer(parsed.value),
    });
    const base = await serve(t, security);
    const as = (principal: string): RequestInit => ({ headers: { authorization: `Basic ${Buffer.from(`${principal}:x`).toString('base64')}` } });
    const machineOf = async (principal: string, id: string): Promise<unknown> => ((await get(`${base}/drydock/v1/agents/${id}`, as(principal))).json as { machine: unknown } | undefined)?.machine;
    const ids = async (principal: string): Promise<string[]> => ((await get(`${base}/drydock/v1/agents`, as(principal))).json as { agents: Array<{ agent_id: { value: string } }> }).agents.map((a) => a.agent_id.value);
    assert.deepEqual(await ids('ops'), ['A', 'B']);
    assert.deepEqual(await ids('rack1'), ['A']);
    assert.deepEqual(await ids('nobody'), []);
    assert.deepEqual(Object.keys((await machineOf('ops', 'A')) as object), ['id', 'mode', 'unavailability']);
    assert.deepEqual(Object.keys((await machineOf('modes', 'A')) as object), ['id', 'mode']);
    assert.deepEqual(await machineOf('rack1', 'A'), { id: { hostname: 'h1', ip: '10.0.0.1' } });
    // B exists, but rack1 may not see it: the same 404 as an agent that does not exist.
    const hidden = await get(`${base}/drydock/v1/agents/B`, as('rack1'));
    assert.deepEqual([hidden.status, hidden.text], [404, "Agent 'B' not found"]);
  });

  test('routing: the rows by method and path', () => {
    const process = { leader: () => undefined, unavailable: () => fail('NOT_RECOVERED'), metrics: undefined };
    const named = (method: string, path: string): string | undefined => {
      const t = normalizePath(path);
      assert.ok(t.ok);
      const r = t.ok ? routeOf(t.target, method, process) : undefined;
      return r?.kind === 'row' ? r.row.name : r?.kind;
    };
    assert.equal(named('GET', '/drydock/v1/agents'), 'DRYDOCK_AGENTS');
    assert.equal(named('HEAD', '/drydock/v1/agents/x-S1'), 'DRYDOCK_AGENT');
    assert.equal(named('GET', '/drydock/v1/agents/x-S1/more'), undefined);
    assert.equal(named('GET', '/drydock/v1/events'), 'DRYDOCK_EVENTS');
    assert.equal(named('POST', '/drydock/v1/events'), 'method');
    assert.equal(named('GET', '/master/drydock/v1/agents'), undefined, "Drydock's own API has no /master/ alias");
  });
});

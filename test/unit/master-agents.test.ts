/**
 * The agent table's transitions, pure: registration kinds, liveness ticks driven by a
 * ManualClock, recovery deadline, tasks and acknowledgements.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { nowNs } from '../../shared/duration.js';
import type { AgentSelf, AgentTaskReport } from '../../shared/protocol.js';
import { pingSlots } from '../../master/cores/liveness.js';
import { AgentTable, conditionsJson, nextDiskPressure, principalRefusal, takeoverDecision, type LiveAgent, type ProbeResult, type RegistrationKind, type RegistrationRequest, type RegistrationWrite, type TakeoverDecision } from '../../master/cores/agents.js';
import type { RecoveredAgent } from '../../master/registry/registry.js';

const LIMITS = { pingTimeoutMs: 1_000, maxPingTimeouts: 3, reregisterTimeoutMs: 10_000 };

function self(port: number, over: Partial<AgentSelf> = {}): AgentSelf {
  return { hostname: `h${port}`, ip: '10.0.0.1', port, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }], attributes: [], ...over };
}

function req(agentId: string | undefined, port: number, over: Partial<AgentSelf> = {}): RegistrationRequest {
  return { agentId, info: self(port, over), version: '0.1.0', capabilities: [] };
}

function recovered(id: string, port: number, reachability: 'REACHABLE' | 'UNREACHABLE' = 'REACHABLE', principal?: string): RecoveredAgent {
  return { id, info: self(port), version: '0.1.0', capabilities: [], registeredTimeNs: 1n, reachability, ...(principal === undefined ? {} : { principal }) };
}

/** A request presented by `principal`. */
function as(principal: string, r: RegistrationRequest): RegistrationRequest {
  return { ...r, principal };
}

/** Registers through plan + apply, as the master does once the write is durable. */
function register(table: AgentTable, clock: ManualClock, r: RegistrationRequest, sessionId: number, mint = 'new-id') {
  const plan = table.planRegistration(r, nowNs(clock.now()), () => mint);
  const applied = table.applyRegistration(plan, r, [], sessionId, nowNs(clock.now()));
  return { plan, applied };
}

describe('planRegistration', () => {
  const cases: Array<{ name: string; setup: (t: AgentTable, c: ManualClock) => void; request: RegistrationRequest; kind: RegistrationKind; write: RegistrationWrite; id: string; replaces?: string; principal?: string; binds?: boolean }> = [
    { name: 'no id: a new agent', setup: () => {}, request: req(undefined, 1), kind: 'NEW', write: 'ADMIT', id: 'minted' },
    { name: 'unknown id: accepted as itself', setup: () => {}, request: req('x', 1), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'x' },
    { name: 'recovered, same info: no write', setup: (t, c) => t.recover([recovered('r', 1)], c.now()), request: req('r', 1), kind: 'RECOVERED', write: 'NONE', id: 'r' },
    { name: 'recovered, changed info: written again', setup: (t, c) => t.recover([recovered('r', 1)], c.now()), request: req('r', 1, { hostname: 'renamed' }), kind: 'RECOVERED', write: 'ADMIT', id: 'r' },
    { name: 'unreachable: readmitted', setup: (t, c) => t.recover([recovered('u', 1, 'UNREACHABLE')], c.now()), request: req('u', 1), kind: 'UNREACHABLE', write: 'READMIT', id: 'u' },
    { name: 'registered: re-registration', setup: (t, c) => void register(t, c, req('a', 1), 1), request: req('a', 1), kind: 'REREGISTERED', write: 'NONE', id: 'a' },
    { name: 'new agent at a disconnected agent\'s address replaces it', setup: (t, c) => { register(t, c, req('old', 7), 1); t.disconnect('old', 1, c.now()); }, request: req(undefined, 7), kind: 'NEW', write: 'ADMIT', id: 'minted', replaces: 'old' },
    { name: 'new agent at a recovered agent\'s address replaces it', setup: (t, c) => t.recover([recovered('old', 7)], c.now()), request: req(undefined, 7), kind: 'NEW', write: 'ADMIT', id: 'minted', replaces: 'old' },
    { name: 'a connected agent at the same address is not replaced', setup: (t, c) => void register(t, c, req('old', 7), 1), request: req(undefined, 7), kind: 'NEW', write: 'ADMIT', id: 'minted' },
    { name: 'port 0 is never an address conflict', setup: (t, c) => void register(t, c, req('old', 0), 1), request: req(undefined, 0), kind: 'NEW', write: 'ADMIT', id: 'minted' },
    // Principals (issue 13): the id is bound to the first principal that registers it.
    { name: 'a new agent is bound to its principal', setup: () => {}, request: as('p1', req(undefined, 1)), kind: 'NEW', write: 'ADMIT', id: 'minted', principal: 'p1' },
    { name: 'an unknown id is bound to its principal', setup: () => {}, request: as('p1', req('x', 1)), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'x', principal: 'p1' },
    { name: 'anonymous: no binding', setup: () => {}, request: req(undefined, 1), kind: 'NEW', write: 'ADMIT', id: 'minted' },
    { name: 'bound, same principal, same info: no write, still bound', setup: (t, c) => t.recover([recovered('r', 1, 'REACHABLE', 'p1')], c.now()), request: as('p1', req('r', 1)), kind: 'RECOVERED', write: 'NONE', id: 'r', principal: 'p1' },
    { name: 'registered anonymously, first authenticated registration: bound, written', setup: (t, c) => void register(t, c, req('a', 1), 1), request: as('p1', req('a', 1)), kind: 'REREGISTERED', write: 'ADMIT', id: 'a', principal: 'p1', binds: true },
    { name: 'recovered unbound, first authenticated registration: bound, written', setup: (t, c) => t.recover([recovered('r', 1)], c.now()), request: as('p1', req('r', 1)), kind: 'RECOVERED', write: 'ADMIT', id: 'r', principal: 'p1', binds: true },
    { name: 'unreachable and bound: readmitted with its binding', setup: (t, c) => t.recover([recovered('u', 1, 'UNREACHABLE', 'p1')], c.now()), request: as('p1', req('u', 1)), kind: 'UNREACHABLE', write: 'READMIT', id: 'u', principal: 'p1' },
    { name: 'a disconnected agent bound to another principal is not replaced at its address', setup: (t, c) => { register(t, c, as('p1', req('old', 7)), 1); t.disconnect('old', 1, c.now()); }, request: as('p2', req(undefined, 7)), kind: 'NEW', write: 'ADMIT', id: 'minted', principal: 'p2' },
    { name: 'a disconnected agent bound to the same principal is replaced at its address', setup: (t, c) => { register(t, c, as('p1', req('old', 7)), 1); t.disconnect('old', 1, c.now()); }, request: as('p1', req(undefined, 7)), kind: 'NEW', write: 'ADMIT', id: 'minted', replaces: 'old', principal: 'p1' },
    { name: 'a bound recovered agent is not replaced by an anonymous one at its address', setup: (t, c) => t.recover([recovered('old', 7, 'REACHABLE', 'p1')], c.now()), request: req(undefined, 7), kind: 'NEW', write: 'ADMIT', id: 'minted' },
    // A removed agent's id stays bound (its machine went DOWN, it was replaced at its address).
    { name: 'removed and bound, its principal again: an unknown id, admitted with the binding kept (not a new one)', setup: (t, c) => { register(t, c, as('p1', req('gone', 1)), 1); t.remove('gone'); }, request: as('p1', req('gone', 2)), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'gone', principal: 'p1' },
    { name: 'removed and bound, from the registry after a restart, its principal: admitted, still bound', setup: (t) => t.recoverRemovedBindings([{ id: 'gone', principal: 'p1', removedTimeNs: 5n }]), request: as('p1', req('gone', 2)), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'gone', principal: 'p1' },
    { name: 'replaced at its address while bound: its id stays bound', setup: (t, c) => { register(t, c, as('p1', req('old', 7)), 1); t.disconnect('old', 1, c.now()); register(t, c, as('p1', req(undefined, 7)), 2, 'new'); }, request: as('p1', req('old', 8)), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'old', principal: 'p1' },
    { name: 'removed while unbound: nothing kept, the next principal binds it', setup: (t, c) => { register(t, c, req('anon', 1), 1); t.remove('anon'); }, request: as('p2', req('anon', 1)), kind: 'UNKNOWN_ID', write: 'ADMIT', id: 'anon', principal: 'p2' },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const clock = new ManualClock();
      const table = new AgentTable(LIMITS);
      c.setup(table, clock);
      const plan = table.planRegistration(c.request, nowNs(clock.now()), () => 'minted');
      assert.equal(plan.kind, c.kind);
      assert.equal(plan.write, c.write);
      assert.equal(plan.agentId, c.id);
      assert.equal(plan.replaces, c.replaces);
      assert.equal(plan.durable.principal, c.principal);
      assert.equal(plan.binds, c.binds ?? false);
      // Applied, the table holds the binding the registry is told.
      table.applyRegistration(plan, c.request, [], 99, nowNs(clock.now()));
      assert.equal(table.get(plan.agentId)?.principal, c.principal);
    });
  }
});

describe('applyRegistration', () => {
  test('re-registration keeps registered_time, sets reregistered_time, and reports the older session', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    const first = table.get('a')!.registeredTimeNs;
    assert.equal(table.get('a')!.reregisteredTimeNs, undefined);
    clock.advance(5_000);
    const { applied } = register(table, clock, req('a', 1), 2);
    assert.equal(applied.previousSessionId, 1);
    const e = table.get('a')!;
    assert.equal(e.registeredTimeNs, first);
    assert.equal(e.reregisteredTimeNs, nowNs(clock.now()));
    assert.equal(e.sessionId, 2);
  });

  test('a REGISTER repeated on the same session is idempotent', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    const { applied } = register(table, clock, req('a', 1), 1);
    assert.equal(applied.previousSessionId, undefined);
    assert.equal(table.get('a')!.reregisteredTimeNs, undefined);
    assert.deepEqual(table.counts(), { registered: 1, connected: 1, recovered: 0, unreachable: 0 });
  });

  test('replacing by address removes the old agent', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('old', 7), 1);
    table.disconnect('old', 1, clock.now());
    register(table, clock, req(undefined, 7), 2, 'new');
    assert.equal(table.get('old'), undefined);
    assert.equal(table.get('new')?.phase, 'REGISTERED');
  });
});

describe('liveness', () => {
  test('pings each round; max missed pongs in a row make an agent unreachable; a pong resets the count', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    register(table, clock, req('b', 2), 2);
    const rounds: string[][] = [];
    for (let i = 0; i < 4; i++) {
      clock.advance(LIMITS.pingTimeoutMs);
      const d = table.tick(clock.now());
      rounds.push(d.unreachable.map((u) => `${u.agentId}:${u.reason}`));
      table.pong('b'); // b answers every ping, a never does
      if (i < 3) assert.deepEqual(d.ping.sort(), ['a', 'b']);
    }
    // Round 1 pings; rounds 2, 3, 4 see misses 1, 2, 3 -> unreachable at the 3rd miss.
    assert.deepEqual(rounds, [[], [], [], ['a:PING_TIMEOUT']]);
    assert.equal(table.get('b')!.missedPings, 0);
  });

  test('a disconnected agent gets ping timeout x max timeouts to come back', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    assert.equal(table.disconnect('a', 99, clock.now()), false, 'an older session closing changes nothing');
    assert.equal(table.disconnect('a', 1, clock.now()), true);
    assert.equal(table.get('a')!.connected, false);
    clock.advance(2_999);
    assert.deepEqual(table.tick(clock.now()).unreachable, []);
    clock.advance(1);
    assert.deepEqual(table.tick(clock.now()).unreachable, [{ agentId: 'a', reason: 'DISCONNECTED_TIMEOUT' }]);
  });

  test('reconnecting before the deadline keeps the agent', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    table.disconnect('a', 1, clock.now());
    clock.advance(2_000);
    register(table, clock, req('a', 1), 2);
    clock.advance(5_000);
    assert.deepEqual(table.tick(clock.now()).unreachable, []);
    assert.equal(table.get('a')!.connected, true);
  });

  test('recovered agents not back by the re-registration deadline expire; those back do not', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    table.recover([recovered('r1', 1), recovered('r2', 2), recovered('gone', 3, 'UNREACHABLE')], clock.now());
    assert.equal(table.recoveredDeadlineMs, clock.now() + LIMITS.reregisterTimeoutMs);
    register(table, clock, req('r1', 1), 1);
    clock.advance(9_999);
    assert.deepEqual(table.expireRecovered(clock.now()), []);
    clock.advance(1);
    assert.deepEqual(table.expireRecovered(clock.now()), ['r2']);
    table.markUnreachable('r2', 5n);
    assert.equal(table.recoveredDeadlineMs, undefined, 'nothing left to wait for');
    assert.deepEqual(table.counts(), { registered: 1, connected: 1, recovered: 0, unreachable: 2 });
  });

  test('pingSlots: a round is spread over slots of 250 ms or more, 1 to 64 of them', () => {
    const cases: Array<[number, number]> = [[100, 1], [499, 1], [500, 2], [1_000, 4], [15_000, 60], [16_000, 64], [60_000, 64]];
    for (const [ms, slots] of cases) assert.equal(pingSlots(ms), slots, `${ms} ms`);
    assert.equal(new AgentTable({ ...LIMITS, pingTimeoutMs: 15_000 }).pingSlots, 60);
  });

  test('the wheel: an agent joins the slot visited last, so its first ping is a whole round later; each is visited once a round', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS); // 4 slots
    const visit = (slot: number): string[] => table.tickSlot(clock.now(), slot).ping.sort();
    register(table, clock, req('a', 1), 1); // before any visit: the last slot
    assert.deepEqual([visit(0), visit(1), visit(2)], [[], [], []]);
    register(table, clock, req('b', 2), 2); // slot 2 was visited last
    assert.deepEqual(visit(3), ['a']);
    register(table, clock, req('c', 3), 3);
    // The next round: each agent once, in the slot it joined.
    assert.deepEqual([visit(0), visit(1), visit(2), visit(3)], [[], [], ['b'], ['a', 'c']]);
    // The whole round at once (tick) sees the same agents.
    assert.deepEqual(table.tick(clock.now()).ping.sort(), ['a', 'b', 'c']);
  });

  test('the wheel: misses count per agent across rounds; a disconnected, removed or re-registered agent leaves its slot', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS); // 4 slots, 3 misses
    register(table, clock, req('a', 1), 1);
    register(table, clock, req('b', 2), 2);
    const round = (): string[] => {
      const out: string[] = [];
      for (let slot = 0; slot < table.pingSlots; slot++) {
        const d = table.tickSlot(clock.now(), slot);
        out.push(...d.ping.map((id) => `${id}@${slot}`), ...d.unreachable.map((u) => `${u.agentId}:${u.reason}`));
      }
      table.pong('b');
      return out.sort();
    };
    assert.deepEqual(round(), ['a@3', 'b@3']);
    assert.deepEqual(round(), ['a@3', 'b@3']);
    assert.deepEqual(round(), ['a@3', 'b@3']);
    assert.deepEqual(round(), ['a:PING_TIMEOUT', 'b@3'], 'a missed 3 pings in a row');
    table.markUnreachable('a', 1n);
    table.tickSlot(clock.now(), 1); // slot 1 visited last: b re-registering on a new session joins it
    register(table, clock, req('b', 2), 3);
    assert.deepEqual(round(), ['b@1'], 'b moved to slot 1, and is only there');
    table.disconnect('b', 3, clock.now());
    assert.deepEqual(round(), [], 'a disconnected agent is not pinged');
    table.remove('b');
    assert.deepEqual(round(), []);
  });

  test('the wheel: a disconnected agent expires at whichever slot comes after its deadline', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    table.disconnect('a', 1, clock.now());
    clock.advance(2_999);
    assert.deepEqual(table.tickSlot(clock.now(), 1).unreachable, []);
    clock.advance(1);
    assert.deepEqual(table.tickSlot(clock.now(), 2).unreachable, [{ agentId: 'a', reason: 'DISCONNECTED_TIMEOUT' }]);
  });

  test('markUnreachable returns the session to drop and clears liveness', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 4);
    assert.deepEqual(table.markUnreachable('a', 9n), { sessionId: 4 });
    assert.equal(table.markUnreachable('a', 9n), undefined, 'only once');
    const e = table.get('a')!;
    assert.equal(e.phase, 'UNREACHABLE');
    assert.equal(e.unreachableTimeNs, 9n);
    clock.advance(10_000);
    assert.deepEqual(table.tick(clock.now()), { ping: [], unreachable: [] });
  });
});

describe('tasks', () => {
  const status = (state: 'TASK_RUNNING' | 'TASK_FINISHED', uuid: string) => ({ task_id: { value: 't' }, state, source: 'SOURCE_EXECUTOR' as const, timestamp: 1, uuid });

  test('a launched task is STAGING, updates move it, and only an acknowledged terminal update completes it', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    table.addTask('a', 'fw', { name: 't', task_id: { value: 't' }, agent_id: { value: 'a' }, resources: [] });
    assert.equal(table.get('a')!.tasks!.get('fw\u0000t')!.state, 'TASK_STAGING');
    table.updateStatus('a', 'fw', status('TASK_RUNNING', 'u1'));
    assert.equal(table.acknowledge('a', 'fw', 't', 'wrong'), 'UUID_MISMATCH');
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'ACKNOWLEDGED');
    table.updateStatus('a', 'fw', status('TASK_FINISHED', 'u2'));
    const task = table.get('a')!.tasks!.get('fw\u0000t')!;
    assert.equal(task.state, 'TASK_FINISHED');
    assert.equal(task.status_update_uuid, 'u2');
    assert.equal(task.statuses.length, 2);
    assert.equal(task.statuses[0]?.agent_id?.value, 'a', 'the master stamps the agent id');
    assert.equal(table.completedTasks.length, 0);
    assert.equal(table.acknowledge('a', 'fw', 't', 'u2'), 'COMPLETED');
    assert.equal(table.completedTasks.length, 1);
    assert.equal(table.get('a')!.tasks?.size ?? 0, 0);
    assert.equal(table.acknowledge('a', 'fw', 't', 'u2'), 'UNKNOWN_TASK');
    assert.equal(table.acknowledge('nope', 'fw', 't', 'u2'), 'UNKNOWN_AGENT');
  });

  test('pipelined updates: an older unacknowledged update may be acknowledged; the latest stays what GET_TASKS and drains read', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    const st = (state: 'TASK_STARTING' | 'TASK_RUNNING' | 'TASK_KILLED', uuid: string) => ({ task_id: { value: 't' }, state, source: 'SOURCE_EXECUTOR' as const, timestamp: 1, uuid });
    const task = () => table.get('a')!.tasks!.get('fw\u0000t')!;
    // STARTING then RUNNING, the second sent before the first is acknowledged.
    assert.equal(table.updateStatus('a', 'fw', st('TASK_STARTING', 'u1')), 'RECORDED');
    assert.equal(table.updateStatus('a', 'fw', st('TASK_RUNNING', 'u2')), 'RECORDED');
    assert.deepEqual(table.unacknowledged(task()), ['u1', 'u2']);
    assert.equal(task().status_update_uuid, 'u2');
    // The older one: acknowledged, the latest untouched.
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'ACKNOWLEDGED');
    assert.equal(task().status_update_uuid, 'u2');
    assert.equal(task().status_update_state, 'TASK_RUNNING');
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'UUID_MISMATCH', 'an update is acknowledged once');
    assert.equal(table.acknowledge('a', 'fw', 't', 'nope'), 'UUID_MISMATCH');
    // Acknowledgements in any order: the latest first, then the older one.
    assert.equal(table.updateStatus('a', 'fw', st('TASK_KILLED', 'u3')), 'RECORDED');
    assert.equal(table.acknowledge('a', 'fw', 't', 'u2'), 'ACKNOWLEDGED');
    assert.equal(task().status_update_uuid, 'u3', 'the terminal update is still unacknowledged: a drain waits for it');
    assert.equal(task().state, 'TASK_KILLED');
    const superseded: string[] = [];
    assert.equal(table.acknowledge('a', 'fw', 't', 'u3', superseded), 'COMPLETED');
    assert.deepEqual(superseded, []);
    assert.equal(table.get('a')!.tasks?.size ?? 0, 0);
  });

  test('pipelined updates: acknowledging the end supersedes the earlier updates still unacknowledged', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    const st = (state: 'TASK_RUNNING' | 'TASK_FINISHED', uuid: string) => ({ task_id: { value: 't' }, state, source: 'SOURCE_EXECUTOR' as const, timestamp: 1, uuid });
    table.updateStatus('a', 'fw', st('TASK_RUNNING', 'u1'));
    table.updateStatus('a', 'fw', st('TASK_FINISHED', 'u2'));
    const superseded: string[] = [];
    assert.equal(table.acknowledge('a', 'fw', 't', 'u2', superseded), 'COMPLETED', 'the terminal update ends the task');
    assert.deepEqual(superseded, ['u1']);
    assert.equal(table.completedTasks.length, 1);
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'UNKNOWN_TASK', 'a late acknowledgement finds no task');
  });

  test('a retried update is acknowledgeable again (its acknowledgement may have been lost with the session)', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    table.updateStatus('a', 'fw', status('TASK_RUNNING', 'u1'));
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'ACKNOWLEDGED');
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'UUID_MISMATCH');
    assert.equal(table.updateStatus('a', 'fw', status('TASK_RUNNING', 'u1')), 'RETRY');
    const t = table.get('a')!.tasks!.get('fw\u0000t')!;
    assert.equal(t.status_update_uuid, undefined, 'a retry does not make the update latest again');
    assert.equal(t.statuses.length, 1);
    assert.equal(table.acknowledge('a', 'fw', 't', 'u1'), 'ACKNOWLEDGED');
  });

  test('re-registration replaces tasks with the agent report', () => {
    const clock = new ManualClock();
    const table = new AgentTable(LIMITS);
    register(table, clock, req('a', 1), 1);
    table.updateStatus('a', 'fw', status('TASK_RUNNING', 'u1'));
    const r = req('a', 1);
    const plan = table.planRegistration(r, 0n, () => 'x');
    table.applyRegistration(plan, r, [
      { framework_id: 'fw', task: { name: 'other', task_id: { value: 'o' }, agent_id: { value: 'a' }, resources: [] }, state: 'TASK_RUNNING', statuses: [] },
    ], 2, 0n);
    assert.deepEqual([...table.get('a')!.tasks!.keys()], ['fw\u0000o']);
  });
});

describe('foreignTask: a session speaks only for its own agent', () => {
  const clock = new ManualClock();
  const table = new AgentTable(LIMITS);
  register(table, clock, req('a', 1), 1);
  register(table, clock, req('b', 2), 2);
  table.addTask('a', 'f', { name: 't', task_id: { value: 'on-a' }, agent_id: { value: 'a' }, resources: [] });
  table.addTask('b', 'f', { name: 't', task_id: { value: 'on-b' }, agent_id: { value: 'b' }, resources: [] });
  const cases: Array<[string, string, string, string | undefined, ReturnType<AgentTable['foreignTask']>]> = [
    ['its own task', 'a', 'on-a', undefined, undefined],
    ['its own task, its own id', 'a', 'on-a', 'a', undefined],
    ['its own task, another agent\'s id', 'a', 'on-a', 'b', 'FOREIGN_AGENT_ID'],
    ['another agent\'s task, no id', 'a', 'on-b', undefined, 'TASK_OF_ANOTHER_AGENT'],
    ['another agent\'s task, that agent\'s id', 'a', 'on-b', 'b', 'FOREIGN_AGENT_ID'],
    ['another agent\'s task, claiming it as its own', 'a', 'on-b', 'a', 'TASK_OF_ANOTHER_AGENT'],
    ['a task nobody has (the agent runs it; Mesos forwards these)', 'a', 'new', undefined, undefined],
  ];
  for (const [name, agent, task, claimed, want] of cases) test(name, () => assert.equal(table.foreignTask(agent, 'f', task, claimed), want));
});

test('foreignTask: the task index follows every way a task comes and goes (reported, launched, updated, completed, forgotten, agent removed)', () => {
  const clock = new ManualClock();
  const table = new AgentTable(LIMITS);
  const report = (id: string): AgentTaskReport => ({ framework_id: 'f', task: { name: id, task_id: { value: id }, agent_id: { value: 'x' }, resources: [] }, state: 'TASK_RUNNING', statuses: [] });
  const taken = (agent: string, task: string): boolean => table.foreignTask(agent, 'f', task, undefined) === 'TASK_OF_ANOTHER_AGENT';
  const reg = (id: string, port: number, session: number, tasks: AgentTaskReport[]): void => {
    const r = req(id, port);
    table.applyRegistration(table.planRegistration(r, 1n, () => id), r, tasks, session, 1n);
  };
  reg('a', 1, 1, [report('r1'), report('r2')]);
  reg('b', 2, 2, []);
  assert.deepEqual([taken('b', 'r1'), taken('b', 'r2'), taken('a', 'r1')], [true, true, false], 'reported in a registration');
  reg('a', 1, 3, [report('r2')]);
  assert.deepEqual([taken('b', 'r1'), taken('b', 'r2')], [false, true], 'a re-registration that no longer reports r1 frees it');
  table.addTask('b', 'f', { name: 'l', task_id: { value: 'l' }, agent_id: { value: 'b' }, resources: [] });
  table.updateStatus('b', 'f', { task_id: { value: 'u' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'u1' });
  assert.deepEqual([taken('a', 'l'), taken('a', 'u')], [true, true], 'launched, and first heard of in an update');
  table.addTask('a', 'f', { name: 'l', task_id: { value: 'l' }, agent_id: { value: 'a' }, resources: [] });
  assert.deepEqual([taken('a', 'l'), taken('b', 'l'), taken('c', 'l')], [false, false, true], 'a task on two agents: each holds its own, a third agent sees it taken');
  table.forgetTask('a', 'f', 'l');
  assert.deepEqual([taken('a', 'l'), taken('b', 'l')], [true, false], 'forgotten on a: b alone holds it');
  table.completeTask('b', 'f', 'l', { task_id: { value: 'l' }, state: 'TASK_KILLED', source: 'SOURCE_MASTER', timestamp: 2 });
  assert.equal(taken('a', 'l'), false, 'completed');
  table.updateStatus('b', 'f', { task_id: { value: 'u' }, state: 'TASK_FINISHED', source: 'SOURCE_EXECUTOR', timestamp: 2, uuid: 'u2' });
  assert.equal(table.acknowledge('b', 'f', 'u', 'u2'), 'COMPLETED');
  assert.equal(taken('a', 'u'), false, 'its terminal update acknowledged');
  table.remove('a');
  assert.equal(taken('b', 'r2'), false, 'its agent removed');
  void clock;
});

test('principalRefusal: an id bound to a principal is refused to any other, anonymous included', () => {
  const cases: Array<[string, string | undefined, string | undefined, string | undefined]> = [
    ['unknown or unbound id, anonymous', undefined, undefined, undefined],
    ['unbound id, a principal (it binds)', undefined, 'p1', undefined],
    ['bound id, its principal', 'p1', 'p1', undefined],
    ['bound id, another principal', 'p1', 'p2', 'agent S1 is bound to another principal'],
    ['bound id, anonymous', 'p1', undefined, 'agent S1 is bound to a principal; this session is anonymous'],
    ['principals compare exactly', 'p1', 'P1', 'agent S1 is bound to another principal'],
  ];
  for (const [name, bound, presented, want] of cases) assert.equal(principalRefusal('S1', bound, presented), want, name);
});

test('a removed agent\'s id stays bound: refused to another principal and to anonymous sessions as a known one; a gone id keeps no binding', () => {
  const clock = new ManualClock();
  const table = new AgentTable(LIMITS);
  register(table, clock, as('p1', req('a', 1)), 1);
  register(table, clock, req('anon', 2), 2);
  const known = principalRefusal('a', table.boundPrincipal('a'), 'p2');
  table.remove('a');
  table.remove('anon');
  assert.equal(table.get('a'), undefined);
  assert.equal(table.boundPrincipal('a'), 'p1');
  // The very refusal a known agent's id gets (same reason: the close says the same).
  assert.equal(principalRefusal('a', table.boundPrincipal('a'), 'p2'), known);
  assert.equal(known, 'agent a is bound to another principal');
  assert.equal(principalRefusal('a', table.boundPrincipal('a'), undefined), 'agent a is bound to a principal; this session is anonymous');
  assert.equal(principalRefusal('a', table.boundPrincipal('a'), 'p1'), undefined);
  assert.equal(table.boundPrincipal('anon'), undefined, 'never bound: nothing kept');
  assert.equal(table.removedBindingsCount, 1);
  // Readmitted by its principal and removed again: still one binding, the newest.
  register(table, clock, as('p1', req('a', 1)), 3);
  table.remove('a');
  assert.equal(table.removedBindingsCount, 1);
  // Marked gone: refused forever by isGone, no binding kept for it.
  register(table, clock, as('p1', req('g', 3)), 4);
  table.markGone('g');
  assert.equal(table.isGone('g'), true);
  assert.equal(table.boundPrincipal('g'), undefined);
  assert.equal(table.removedBindingsCount, 1);
});

test('removed bindings are capped: past the cap the oldest removal is dropped (a binding removed again is the newest)', () => {
  const clock = new ManualClock();
  const table = new AgentTable(LIMITS, 3);
  table.recoverRemovedBindings([
    { id: 'r1', principal: 'p', removedTimeNs: 1n },
    { id: 'r2', principal: 'p', removedTimeNs: 2n },
  ]);
  for (const [id, port] of [['a', 1], ['r1', 2], ['b', 3]] as const) {
    register(table, clock, as('p', req(id, port)), port);
    table.remove(id);
  }
  // r2 was the oldest once r1 was removed again: dropped; the rest stay.
  assert.deepEqual(['r1', 'r2', 'a', 'b'].map((id) => table.boundPrincipal(id)), ['p', undefined, 'p', 'p']);
  assert.equal(table.removedBindingsCount, 3);
});

test('takeoverDecision: a live session keeps its id while it answers pings; from its own address it is replaced at once only without --authenticate_agents', () => {
  const live: LiveAgent = { phase: 'REGISTERED', connected: true, sessionId: 1, info: { ip: '10.0.0.1', port: 5051 }, missedPings: 0 };
  const origin = { sessionId: 2, ip: '10.0.0.1', port: 5051, remote: '10.0.0.1' };
  const ALLOW: TakeoverDecision = { kind: 'ALLOW' };
  const PROBE: TakeoverDecision = { kind: 'PROBE', sessionId: 1 };
  const refusedAddress: TakeoverDecision = { kind: 'REFUSE', reason: 'agent S1 is connected from another address' };
  const refusedLive: TakeoverDecision = { kind: 'REFUSE', reason: 'agent S1 has a live session that answers pings' };
  const answered: ProbeResult = { sessionId: 1, answered: true };
  const silent: ProbeResult = { sessionId: 1, answered: false };
  const otherSession: ProbeResult = { sessionId: 7, answered: false };
  type Case = [string, LiveAgent | undefined, string | undefined, Partial<typeof origin>, boolean, ProbeResult | undefined, TakeoverDecision];
  const cases: Case[] = [
    // Without --authenticate_agents.
    ['the same agent from its own address replaces its session at once', live, '10.0.0.1', {}, false, undefined, ALLOW],
    ['another claimed ip: the live session is asked first', live, '10.0.0.1', { ip: '10.0.0.9' }, false, undefined, PROBE],
    ['another claimed ip, the live session answered: refused', live, '10.0.0.1', { ip: '10.0.0.9' }, false, answered, refusedAddress],
    ['another claimed port, the live session answered: refused', live, '10.0.0.1', { port: 5052 }, false, answered, refusedAddress],
    ['its claimed address from another socket peer, answered: refused', live, '10.0.0.1', { remote: '10.0.0.9' }, false, answered, refusedAddress],
    ['another address, the live session stayed silent: it failed its ping, replaced', live, '10.0.0.1', { ip: '10.0.0.9' }, false, silent, ALLOW],
    ['another address, the live session has missed a ping: replaced without asking', { ...live, missedPings: 1 }, '10.0.0.1', { ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['a probe of another session says nothing: asked again', live, '10.0.0.1', { ip: '10.0.0.9' }, false, otherSession, PROBE],
    ['an id the master does not know', undefined, undefined, { ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['a disconnected agent: the id is free', { ...live, connected: false }, '10.0.0.1', { ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['an unreachable agent: the id is free', { ...live, phase: 'UNREACHABLE' }, '10.0.0.1', { ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['a recovered agent not back yet', { ...live, phase: 'RECOVERED', connected: false, sessionId: undefined }, undefined, { ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['a REGISTER repeated on the live session itself', live, '10.0.0.1', { sessionId: 1, ip: '10.0.0.9' }, false, undefined, ALLOW],
    ['the live session already gone from the connections', live, undefined, { ip: '10.0.0.9' }, false, undefined, ALLOW],
    // With --authenticate_agents: a second live session is refused from anywhere.
    ['auth: its own address too is asked first', live, '10.0.0.1', {}, true, undefined, PROBE],
    ['auth: its own address, the live session answered: refused', live, '10.0.0.1', {}, true, answered, refusedLive],
    ['auth: another address, answered: refused', live, '10.0.0.1', { ip: '10.0.0.9', remote: '10.0.0.9' }, true, answered, refusedLive],
    ['auth: a restarted agent whose old socket is dead (silent): replaced', live, '10.0.0.1', {}, true, silent, ALLOW],
    ['auth: the live session has missed a ping: replaced without asking', { ...live, missedPings: 2 }, '10.0.0.1', {}, true, undefined, ALLOW],
    ['auth: a disconnected agent: the id is free', { ...live, connected: false }, '10.0.0.1', {}, true, undefined, ALLOW],
    ['auth: a REGISTER repeated on the live session itself', live, '10.0.0.1', { sessionId: 1 }, true, undefined, ALLOW],
  ];
  for (const [name, l, liveRemote, over, authenticateAgents, probe, want] of cases) {
    assert.deepEqual(takeoverDecision('S1', l, liveRemote, { ...origin, ...over }, { authenticateAgents, probe }), want, name);
  }
});

test('disk pressure: the current session reports it, a change is announced once, a session that ends takes it along', () => {
  const table = new AgentTable(LIMITS);
  const clock = new ManualClock(1_000_000);
  const pressure = { since_ms: 999_000, reason: 'NO_SPACE' as const, message: 'no space left on device in /w', path: '/w', free_bytes: 0, total_bytes: 4096, free_inodes: 1, total_inodes: 10 };
  // Registered under pressure: announced with the registration.
  const plan = table.planRegistration(req('a', 1), nowNs(clock.now()), () => 'x');
  assert.equal(table.applyRegistration(plan, req('a', 1), [], 1, nowNs(clock.now()), { disk_pressure: pressure }).conditionChange, 'DISK_PRESSURE');
  assert.deepEqual(table.get('a')?.diskPressure, { report: pressure, heardMs: 1_000_000 });
  assert.deepEqual(table.underDiskPressure().map((e) => e.id), ['a']);
  // The same word again is no change; its heard time stays.
  clock.advance(5_000);
  assert.equal(table.updateConditions('a', 1, { disk_pressure: pressure }, clock.now()), undefined);
  // Another reason is a change, heard since the start all the same.
  const failed = { ...pressure, reason: 'WRITE_FAILED' as const, message: 'no space left on device in /w/meta' };
  assert.equal(table.updateConditions('a', 1, { disk_pressure: failed }, clock.now()), 'DISK_PRESSURE');
  assert.equal(table.get('a')?.diskPressure?.heardMs, 1_000_000);
  // Another session does not speak for the agent.
  assert.equal(table.updateConditions('a', 2, {}, clock.now()), undefined);
  assert.ok(table.get('a')?.diskPressure !== undefined);
  // Drydock's JSON of it (never a Mesos answer's field).
  assert.deepEqual(conditionsJson(table.get('a')!), { disk_pressure: { since: { nanoseconds: 999_000_000_000n }, reason: 'WRITE_FAILED', message: failed.message, path: '/w', free_bytes: 0, total_bytes: 4096, free_inodes: 1, total_inodes: 10 } });
  // Cleared.
  assert.equal(table.updateConditions('a', 1, {}, clock.now()), 'DISK_PRESSURE_CLEARED');
  assert.deepEqual(conditionsJson(table.get('a')!), {});
  assert.deepEqual(table.underDiskPressure(), []);
  // Again, then the session ends: unknown until the agent registers again (an older agent says nothing: none).
  table.updateConditions('a', 1, { disk_pressure: pressure }, clock.now());
  assert.equal(table.disconnect('a', 1, clock.now()), true);
  assert.equal(table.get('a')?.diskPressure, undefined);
  const again = table.planRegistration(req('a', 1), nowNs(clock.now()), () => 'x');
  assert.equal(table.applyRegistration(again, req('a', 1), [], 3, nowNs(clock.now())).conditionChange, undefined);
  assert.equal(table.get('a')?.diskPressure, undefined);
  table.updateConditions('a', 3, { disk_pressure: pressure }, clock.now());
  table.markUnreachable('a', 5n);
  assert.equal(table.get('a')?.diskPressure, undefined);
});

test('nextDiskPressure: a table of before, report and change', () => {
  const p = { since_ms: 1, reason: 'LOW_SPACE' as const, message: 'm', path: '/w', free_bytes: 1, total_bytes: 2, free_inodes: 1, total_inodes: 2 };
  const cases: Array<[string, Parameters<typeof nextDiskPressure>[0], Parameters<typeof nextDiskPressure>[1], ReturnType<typeof nextDiskPressure>['change']]> = [
    ['nothing before, nothing now', undefined, {}, undefined],
    ['nothing before, an old agent says nothing', undefined, undefined, undefined],
    ['begins', undefined, { disk_pressure: p }, 'DISK_PRESSURE'],
    ['goes on', { report: p, heardMs: 5 }, { disk_pressure: { ...p, free_bytes: 0 } }, undefined],
    ['reason changes', { report: p, heardMs: 5 }, { disk_pressure: { ...p, reason: 'LOW_INODES' } }, 'DISK_PRESSURE'],
    ['begins again (another since)', { report: p, heardMs: 5 }, { disk_pressure: { ...p, since_ms: 9 } }, 'DISK_PRESSURE'],
    ['ends', { report: p, heardMs: 5 }, {}, 'DISK_PRESSURE_CLEARED'],
  ];
  for (const [name, before, now, change] of cases) assert.equal(nextDiskPressure(before, now, 100).change, change, name);
});

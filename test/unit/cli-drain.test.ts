import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  agentMode,
  agentStatus,
  drainCall,
  drainFrame,
  drainView,
  progressLines,
  resolveAgent,
  waitOutcome,
  type AgentJson,
  type DrainRecordJson,
  type DrainView,
  type DrydockAgentJson,
} from '../../cli/drain.js';
import { machineKey } from '../../shared/machine.js';
import { stringifyJson } from '../../shared/json.js';

function agent(id: string, hostname: string, ip: string, over: Partial<AgentJson> = {}): AgentJson {
  return { agent_info: { hostname, port: 5051, id: { value: id } }, active: true, deactivated: false, pid: `slave(1)@${ip}:5051`, ...over };
}

/** An agent as Drydock's own API writes it, with its drain record when given. */
function drydock(id: string, hostname: string, state: string, drain?: DrainRecordJson, mode?: string): DrydockAgentJson {
  return { agent_id: { value: id }, hostname, state, machine: { id: { hostname }, ...(mode === undefined ? {} : { mode }) }, ...(drain === undefined ? {} : { drain }) };
}

const AGENTS = [
  agent('M-S0', 'agent-1', '127.0.0.2'),
  agent('M-S1', 'agent-2', '127.0.0.3'),
  agent('M-S2', 'twin', '127.0.0.4'),
  agent('M-S3', 'TWIN', '127.0.0.5'),
];

test('agent resolution: id, hostname (any case), ambiguous hostname lists the ids', () => {
  assert.deepEqual(resolveAgent('M-S1', AGENTS), { ok: true, value: 'M-S1' });
  assert.deepEqual(resolveAgent('agent-2', AGENTS), { ok: true, value: 'M-S1' });
  assert.deepEqual(resolveAgent('AGENT-1', AGENTS), { ok: true, value: 'M-S0' });
  assert.deepEqual(resolveAgent('old', AGENTS, [{ hostname: 'old', id: { value: 'M-S9' } }]), { ok: true, value: 'M-S9' });
  const twin = resolveAgent('twin', AGENTS);
  assert.equal(twin.ok, false);
  assert.equal(twin.ok ? '' : twin.error, "hostname 'twin' matches 2 agents; name one by id:\n  M-S2  (127.0.0.4:5051)\n  M-S3  (127.0.0.5:5051)");
  const none = resolveAgent('nosuch', AGENTS);
  assert.equal(none.ok ? '' : none.error, "no agent with id or hostname 'nosuch' (drydock agent list shows them)");
  // Unreachable or gone agents are not listed; an id-shaped argument goes to the master as is.
  assert.deepEqual(resolveAgent('2b1c-S7', AGENTS), { ok: true, value: '2b1c-S7' });
  assert.equal(resolveAgent('  ', AGENTS).ok, false);
});

test('DRAIN_AGENT call: max_grace_period as {seconds, nanos}, mark_gone only when asked', () => {
  const cases: Array<[Parameters<typeof drainCall>[1], string]> = [
    [{}, '{"type":"DRAIN_AGENT","drain_agent":{"agent_id":{"value":"A"}}}'],
    [{ max_grace_period: '30secs' }, '{"type":"DRAIN_AGENT","drain_agent":{"agent_id":{"value":"A"},"max_grace_period":{"seconds":30,"nanos":0}}}'],
    [{ max_grace_period: '0secs', mark_gone: true }, '{"type":"DRAIN_AGENT","drain_agent":{"agent_id":{"value":"A"},"max_grace_period":{"seconds":0,"nanos":0},"mark_gone":true}}'],
    [{ max_grace_period: '1.5secs' }, '{"type":"DRAIN_AGENT","drain_agent":{"agent_id":{"value":"A"},"max_grace_period":{"seconds":1,"nanos":500000000}}}'],
    [{ max_grace_period: '10mins', mark_gone: false, wait: true }, '{"type":"DRAIN_AGENT","drain_agent":{"agent_id":{"value":"A"},"max_grace_period":{"seconds":600,"nanos":0}}}'],
  ];
  for (const [flags, want] of cases) {
    const r = drainCall('A', flags);
    assert.ok(r.ok, JSON.stringify(flags));
    assert.equal(stringifyJson(r.value), want);
  }
  const bad = drainCall('A', { max_grace_period: '30' });
  assert.equal(bad.ok, false);
  assert.match(bad.ok ? '' : bad.error, /^--max_grace_period: Invalid duration '30'/);
});

test("STATUS column: Drydock's state word, (REFUSED) when the agent refused its drain; without it, GET_AGENTS' drain state, then deactivated, active, disconnected", () => {
  const cases: Array<[Partial<AgentJson>, DrydockAgentJson | undefined, string]> = [
    [{}, undefined, 'ACTIVE'],
    [{ active: false }, undefined, 'DISCONNECTED'],
    [{ active: false, deactivated: true }, undefined, 'DEACTIVATED'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINING' } }, undefined, 'DRAINING'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINED' } }, undefined, 'DRAINED'],
    [{}, drydock('X', 'h', 'DISCONNECTED'), 'DISCONNECTED'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINING' } }, drydock('X', 'h', 'DRAINING', { state: 'DRAINING' }), 'DRAINING'],
    [{ active: false, deactivated: true, drain_info: { state: 'DRAINING' } }, drydock('X', 'h', 'DRAINING', { state: 'DRAINING', refused: { reason: 'x', time: { nanoseconds: 1 } } }), 'DRAINING (REFUSED)'],
  ];
  for (const [over, d, want] of cases) assert.equal(agentStatus(agent('X', 'h', '1.2.3.4', over), d), want, JSON.stringify([over, d]));
});

test("MODE column: the machine's mode in Drydock's view (? when the caller may not see it); without the view, from the maintenance status, else UP", () => {
  const modes = new Map([[machineKey({ hostname: 'agent-2', ip: '127.0.0.3' }), 'DRAINING' as const]]);
  assert.equal(agentMode(agent('X', 'Agent-2', '127.0.0.3'), undefined, modes), 'DRAINING');
  assert.equal(agentMode(agent('X', 'agent-2', '127.0.0.9'), undefined, modes), 'UP');
  assert.equal(agentMode(agent('X', 'agent-1', '127.0.0.2'), drydock('X', 'agent-1', 'ACTIVE', undefined, 'DOWN'), modes), 'DOWN');
  assert.equal(agentMode(agent('X', 'agent-2', '127.0.0.3'), drydock('X', 'agent-2', 'ACTIVE'), modes), '?', 'the view says it: no mode for this caller');
  assert.equal(agentMode({ agent_info: { hostname: 'h' }, active: true }, undefined, modes), 'UP');
});

test('drain view: remaining tasks as a count or a list, waiting_for as strings or objects', () => {
  assert.deepEqual(drainView(undefined, 'agent-3'), { present: false, hostname: 'agent-3', state: undefined, remaining: undefined, remainingTasks: [], waitingFor: [], refused: undefined });
  const listed = drainView(drydock('X', 'agent-3', 'DRAINING', {
    state: 'DRAINING',
    remaining_tasks: [{ task_id: { value: 't1' }, state: 'TASK_RUNNING' }, 't2'],
    waiting_for: ['task t1: SIGTERM sent, grace 2s', { message: 'acknowledgement of TASK_KILLED for t2' }, { code: 7 }],
  }), 'agent-3');
  assert.deepEqual(listed, {
    present: true, hostname: 'agent-3', state: 'DRAINING', remaining: 2, remainingTasks: ['t1', 't2'], waitingFor: listed.waitingFor, refused: undefined,
  });
  assert.deepEqual(listed.waitingFor.map((w) => w.text), ['task t1: SIGTERM sent, grace 2s', 'acknowledgement of TASK_KILLED for t2', '{"code":7}']);
  assert.equal(drainView(drydock('X', 'h', 'DRAINING', { state: 'DRAINING', remaining_tasks: 3n }), 'h').remaining, 3);
  assert.equal(drainView(drydock('X', 'h', 'DRAINING', { state: 'DRAINING', remaining_tasks: { count: 4 } }), 'h').remaining, 4);
  assert.equal(drainView(drydock('X', 'h', 'DRAINING', { state: 'DRAINING' }), 'h').remaining, undefined);
  // No drain (reactivated): present, with no state.
  assert.deepEqual([drainView(drydock('X', 'h', 'ACTIVE'), 'h').present, drainView(drydock('X', 'h', 'ACTIVE'), 'h').state], [true, undefined]);
});

/** A view; `waiting` entries are what the master writes (strings or objects). */
function view(over: Partial<Omit<DrainView, 'waitingFor'>> & { waiting?: unknown[] }): DrainView {
  const { waiting = [], ...rest } = over;
  return { ...drainView(drydock('X', 'agent-3', 'DRAINING', { state: 'DRAINING', waiting_for: waiting }), 'agent-3'), ...rest };
}

test('progress lines: only what changed', () => {
  const T = Date.UTC(2025, 0, 1, 12, 0, 1, 250);
  const cases: Array<[string, DrainView | undefined, DrainView, string[]]> = [
    ['first poll', undefined, view({ remaining: 2, remainingTasks: ['t1', 't2'], waiting: ['t1: SIGTERM sent'] }), [
      '12:00:01.250  DRAINING  agent-3  2 tasks left: t1, t2',
      '12:00:01.250    waiting for: t1: SIGTERM sent',
    ]],
    ['nothing changed', view({ remaining: 2, waiting: ['a'] }), view({ remaining: 2, waiting: ['a'] }), []],
    ['a new message only', view({ remaining: 2, waiting: ['a'] }), view({ remaining: 2, waiting: ['a', 'b'] }), ['12:00:01.250    waiting for: b']],
    ['a message went away: silent', view({ remaining: 2, waiting: ['a', 'b'] }), view({ remaining: 2, waiting: ['b'] }), []],
    ['a countdown ticking is not news', view({ remaining: 1, waiting: [{ kind: 'TASK_RUNNING', task_id: 't1', message: 'task t1 still running after SIGTERM (0.3s of 2s grace)' }] }),
      view({ remaining: 1, waiting: [{ kind: 'TASK_RUNNING', task_id: 't1', message: 'task t1 still running after SIGTERM (1.55s of 2s grace)' }] }), []],
    ['the same task waiting for something else is', view({ remaining: 1, waiting: [{ kind: 'TASK_RUNNING', task_id: 't1', message: 'task t1 still running after SIGTERM (1.9s of 2s grace)' }] }),
      view({ remaining: 1, waiting: [{ kind: 'UPDATE_UNACKNOWLEDGED', task_id: 't1', framework_id: 'F', message: 'update TASK_KILLED of task t1 not yet acknowledged by framework F' }] }),
      ['12:00:01.250    waiting for: update TASK_KILLED of task t1 not yet acknowledged by framework F']],
    ['one task fewer', view({ remaining: 2 }), view({ remaining: 1 }), ['12:00:01.250  DRAINING  agent-3  1 task left']],
    ['drained', view({ remaining: 1 }), view({ state: 'DRAINED', remaining: 0 }), ['12:00:01.250  DRAINED   agent-3']],
    ['a drain record without a count', undefined, view({}), ['12:00:01.250  DRAINING  agent-3']],
    ['gone: nothing (the outcome line says it)', view({}), view({ present: false }), []],
    ['the agent refused the drain: said once', view({ remaining: 1 }), view({ remaining: 1, refused: "invalid DRAIN: Field 'config.mark_gone' ..." }), [
      "12:00:01.250    the agent refused the drain (nothing was killed; drain again, or upgrade the agent): invalid DRAIN: Field 'config.mark_gone' ...",
    ]],
    ['still refused: nothing new', view({ remaining: 1, refused: 'r' }), view({ remaining: 1, refused: 'r' }), []],
  ];
  for (const [name, prev, next, want] of cases) assert.deepEqual(progressLines(prev, next, T), want, name);
});

test('when --wait ends', () => {
  const cases: Array<[string, DrainView, boolean, ReturnType<typeof waitOutcome>]> = [
    ['draining', view({}), false, { done: false }],
    ['drained', view({ state: 'DRAINED' }), false, { done: true, exitCode: 0, line: 'agent-3 is DRAINED' }],
    ['gone with --mark_gone', view({ present: false }), true, { done: true, exitCode: 0, line: 'agent-3 drained and marked gone' }],
    ['still draining with --mark_gone', view({}), true, { done: false }],
  ];
  for (const [name, v, markGone, want] of cases) assert.deepEqual(waitOutcome(v, markGone), want, name);
  const vanished = waitOutcome(view({ present: false }), false);
  assert.ok(vanished.done && vanished.exitCode === 1 && /no longer registered/.test(vanished.line));
  const lifted = waitOutcome(view({ state: undefined }), false);
  assert.ok(lifted.done && lifted.exitCode === 1 && /no longer draining/.test(lifted.line));
});

test('a refused drain, from the drain record: the view, the live frame, the status column', () => {
  const v = drainView(drydock('X', 'agent-3', 'DRAINING', { state: 'DRAINING', remaining_tasks: 1, refused: { reason: 'invalid DRAIN: bad', time: { nanoseconds: 5 } } }), 'agent-3');
  assert.equal(v.refused, 'invalid DRAIN: bad');
  assert.ok(drainFrame(v, { startedMs: 0, nowMs: 1000, mostRemaining: 1, paint: (t) => t }).includes('  the agent refused the drain (nothing was killed; drain again, or upgrade the agent): invalid DRAIN: bad'));
  // A master that writes no reason still says it was refused.
  assert.equal(drainView(drydock('X', 'h', 'DRAINING', { state: 'DRAINING', refused: {} }), 'h').refused, 'no reason given');
});

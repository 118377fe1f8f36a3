/**
 * Draining's pure cores, table-driven: max_grace_period parsing, the kill-policy override,
 * DRAINING -> DRAINED, what a drain waits for, and each call's refusals.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { drainGraceNs, killPolicy, parseMaxGracePeriod } from '../../shared/drain.js';
import type { Task } from '../../shared/mesos.js';
import { nextDrainState, planMarkGone, refuseDrain, refuseReactivate, waitingFor, type AgentDrain, type CallTarget, type DrainView } from '../../master/cores/drain.js';

test('max_grace_period parsing', () => {
  const cases: Array<[unknown, bigint | undefined | 'error']> = [
    [{ seconds: 600, nanos: 0 }, 600_000_000_000n],
    [{ seconds: '600' }, 600_000_000_000n],
    [{ seconds: 1, nanos: 5 }, 1_000_000_005n],
    [{}, 0n],
    ['10mins', 600_000_000_000n],
    ['30secs', 30_000_000_000n],
    ['1hrs', 3_600_000_000_000n],
    ['600', 600_000_000_000n],
    [undefined, undefined],
    [null, undefined],
    ['soon', 'error'],
    [5, 'error'],
    [[1], 'error'],
    [{ seconds: 'x' }, 'error'],
    [{ seconds: -1 }, 'error'],
    [{ nanos: 2_000_000_000 }, 'error'],
  ];
  for (const [input, want] of cases) {
    const r = parseMaxGracePeriod(input);
    if (want === 'error') {
      assert.equal(r.ok, false, JSON.stringify(input));
      if (!r.ok) assert.match(r.error, /max_grace_period/);
    } else assert.deepEqual(r, { ok: true, ns: want }, JSON.stringify(input));
  }
});

test('kill-policy override arithmetic (Mesos calculateKillPolicy)', () => {
  const g = (ns: number) => ({ kill_policy: { grace_period: { nanoseconds: ns } } });
  const INT64_MAX = 2n ** 63n - 1n;
  const cases: Array<[string, { kill_policy?: { grace_period: { nanoseconds: number } } }, bigint | undefined, number | undefined]> = [
    ['max unset: own policy', g(30e9), undefined, undefined],
    ['no grace of its own: max', {}, 5_000_000_000n, 5e9],
    ['own grace longer than max: max', g(30e9), 1_000_000_000n, 1e9],
    ['own grace within max: own (no override)', g(2e9), 10_000_000_000n, undefined],
    ['{} = 0: kill at once', g(30e9), 0n, 0],
    ['{} = 0 without own grace', {}, 0n, 0],
    // DRAIN_AGENT takes any int64: a cap of 136 years leaves every shorter grace alone...
    ['136 years: own grace (no override)', g(1e9), 4_294_967_296_000_000_000n, undefined],
    ['int64 max: own grace (no override)', g(2 ** 53 - 1), INT64_MAX, undefined],
    // ...and, for a task without its own, is written within 2^53 (the kill's timer caps it at 24.8 days).
    ['136 years without own grace: 2^53-1', {}, 4_294_967_296_000_000_000n, Number.MAX_SAFE_INTEGER],
    ['2^53+1 without own grace: 2^53-1', {}, 2n ** 53n + 1n, Number.MAX_SAFE_INTEGER],
    ['2^53-1 without own grace: exact', {}, 2n ** 53n - 1n, Number.MAX_SAFE_INTEGER],
  ];
  for (const [name, task, max, want] of cases) {
    const p = killPolicy(task, max === undefined ? { mark_gone: false } : { max_grace_period: { nanoseconds: max }, mark_gone: false });
    assert.equal(p?.grace_period?.nanoseconds, want, name);
  }
  assert.equal(drainGraceNs(undefined, undefined), undefined);
});

const drain = (over: Partial<AgentDrain> = {}): AgentDrain => ({ state: 'DRAINING', config: { maxGracePeriodNs: 30_000_000_000n, markGone: false }, startedNs: 1n, estimatedStartNs: undefined, drainedNs: undefined, sentMs: 1_000_000, ...over });
const task = (id: string, state: Task['state'], over: Partial<Task> = {}): Task => ({ name: id, task_id: { value: id }, framework_id: { value: 'fw' }, agent_id: { value: 'a' }, state, resources: [], statuses: [], ...over });
const view = (over: Partial<DrainView> = {}): DrainView => ({ phase: 'REGISTERED', connected: true, drain: drain(), tasks: [], markingGone: false, ...over });

test('nextDrainState', () => {
  const cases: Array<[string, DrainView, string]> = [
    ['idle: drained at once', view(), 'MARK_DRAINED'],
    ['idle with mark_gone: gone', view({ drain: drain({ config: { maxGracePeriodNs: undefined, markGone: true } }) }), 'MARK_GONE'],
    ['a running task', view({ tasks: [task('t', 'TASK_RUNNING')] }), 'NONE'],
    ['a terminal update unacknowledged', view({ tasks: [task('t', 'TASK_KILLED', { status_update_uuid: 'u', status_update_state: 'TASK_KILLED' })] }), 'NONE'],
    ['terminal and acknowledged', view({ tasks: [task('t', 'TASK_KILLED')] }), 'MARK_DRAINED'],
    ['already drained', view({ drain: drain({ state: 'DRAINED' }) }), 'NONE'],
    ['no drain', view({ drain: undefined }), 'NONE'],
    ['being marked gone', view({ markingGone: true }), 'NONE'],
    ['recovered: tasks unknown', view({ phase: 'RECOVERED', connected: false }), 'NONE'],
    ['unreachable', view({ phase: 'UNREACHABLE', connected: false }), 'NONE'],
    ['disconnected, idle: drained (Mesos)', view({ connected: false }), 'MARK_DRAINED'],
  ];
  for (const [name, v, want] of cases) assert.equal(nextDrainState(v), want, name);
});

test('the drain record says what it waits for', () => {
  const running = task('x', 'TASK_RUNNING', { kill_policy: { grace_period: { nanoseconds: 60e9 } } });
  const w = waitingFor(view({ tasks: [running, task('y', 'TASK_KILLED', { status_update_uuid: 'u', status_update_state: 'TASK_KILLED', framework_id: { value: 'Z' } })] }), 1_000_000 + 12_400);
  assert.deepEqual(w.map((x) => [x.kind, x.task_id, x.message]), [
    ['TASK_RUNNING', 'x', 'task x still running after SIGTERM (12 s of 30 s grace)'],
    ['UPDATE_UNACKNOWLEDGED', 'y', 'update TASK_KILLED of task y not yet acknowledged by framework Z'],
  ]);
  // The times behind the text, for a reader that counts on (the console ticks every second).
  assert.deepEqual([w[0]?.sigterm_time, w[0]?.grace_period], [{ nanoseconds: 1_000_000n * 1_000_000n }, { nanoseconds: 30e9 }]);
  assert.equal(w[1]?.sigterm_time, undefined);
  assert.match(waitingFor(view({ tasks: [running] }), 1_000_000 + 45_000)[0]!.message, /45 s after SIGTERM; its 30 s grace is over/);
  assert.deepEqual(waitingFor(view({ connected: false }), 0).map((x) => x.message), ['agent disconnected: drain will be applied when it re-registers']);
  assert.deepEqual(waitingFor(view({ phase: 'UNREACHABLE', connected: false }), 0).map((x) => x.kind), ['AGENT_UNREACHABLE']);
  assert.deepEqual(waitingFor(view({ drain: drain({ state: 'DRAINED' }) }), 0), []);
});

const target = (over: Partial<CallTarget> = {}): CallTarget => ({ phase: 'REGISTERED', gone: false, markingGone: false, capabilities: ['AGENT_DRAINING'], deactivated: false, drainState: undefined, scheduledMachine: undefined, ...over });

test('call refusals', () => {
  assert.deepEqual(refuseDrain('a', target({ phase: undefined })), { code: 'AGENT_UNKNOWN', args: [] });
  assert.deepEqual(refuseDrain('a', target({ gone: true })), { code: 'AGENT_UNKNOWN', args: [] });
  assert.deepEqual(refuseDrain('a', target({ scheduledMachine: 'h (1.2.3.4)' })), { code: 'AGENT_IN_MAINTENANCE_SCHEDULE', args: ['a', 'h (1.2.3.4)'] });
  assert.deepEqual(refuseDrain('a', target({ capabilities: [] })), { code: 'AGENT_NOT_CAPABLE_OF_DRAINING', args: ['a'] });
  assert.deepEqual(refuseDrain('a', target({ markingGone: true })), { code: 'AGENT_BEING_MARKED_GONE', args: [] });
  assert.equal(refuseDrain('a', target({ phase: 'UNREACHABLE', capabilities: [] })), undefined);
  assert.equal(refuseDrain('a', target({ drainState: 'DRAINED' })), undefined);
  assert.deepEqual(refuseReactivate(target()), { code: 'AGENT_NOT_DEACTIVATED', args: [] });
  assert.deepEqual(refuseReactivate(target({ deactivated: true, drainState: 'DRAINING' })), { code: 'AGENT_STILL_DRAINING', args: [] });
  assert.equal(refuseReactivate(target({ deactivated: true, drainState: 'DRAINED' })), undefined);
  assert.equal(planMarkGone('a', target({ gone: true, phase: undefined })), 'DONE');
  assert.deepEqual(planMarkGone('a', target({ markingGone: true })), { code: 'AGENT_ALREADY_TRANSITIONING', args: ['a', 'gone'] });
  assert.deepEqual(planMarkGone('a', target({ phase: undefined })), { code: 'AGENT_NOT_FOUND', args: ['a'] });
  assert.equal(planMarkGone('a', target()), 'MARK');
});

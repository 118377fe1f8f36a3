import { test } from 'node:test';
import assert from 'node:assert/strict';
import { MAX_REGISTRATION_BACKOFF_MS, registrationDelayMs, statusRetryDelayMs } from '../../agent/backoff.js';
import { gracePeriodMs, killDeadlineMs, MAX_GRACE_MS } from '../../agent/kill-policy.js';
import { parseLauncherReport, terminalOutcome } from '../../agent/termination.js';
import type { KillPolicy } from '../../shared/mesos.js';

const secs = (s: number): KillPolicy => ({ grace_period: { nanoseconds: s * 1e9 } });

test('kill policy: override, task policy, default 3 s (a drain cap arrives as an override)', () => {
  const cases: Array<[string, KillPolicy | undefined, KillPolicy | undefined, number]> = [
    ['default', undefined, undefined, 3000],
    ['task policy', secs(10), undefined, 10_000],
    ['override wins', secs(10), secs(1), 1000],
    ['override of 0 kills at once', secs(10), secs(0), 0],
    ['empty policy is the default', {}, undefined, 3000],
    ['sub-millisecond rounds up', { grace_period: { nanoseconds: 1 } }, undefined, 1],
    ['negative: at once', { grace_period: { nanoseconds: -5 } }, undefined, 0],
    // A grace becomes a timer here: Node fires one beyond 2^31-1 ms at once, so it is capped (24.8 days).
    ['24.8 days: as asked', { grace_period: { nanoseconds: (2 ** 31 - 1) * 1e6 } }, undefined, 2 ** 31 - 1],
    ['104 days (2^53-1 ns, the most a kill policy carries): capped', { grace_period: { nanoseconds: Number.MAX_SAFE_INTEGER } }, undefined, MAX_GRACE_MS],
    ['a drain of 136 years without a grace of its own: capped', undefined, { grace_period: { nanoseconds: Number.MAX_SAFE_INTEGER } }, MAX_GRACE_MS],
  ];
  for (const [name, task, override, want] of cases) assert.equal(gracePeriodMs(task, override), want, name);
});

test('kill deadline: a second kill may shorten, never extend', () => {
  assert.equal(killDeadlineMs(undefined, 1000, 3000), 4000);
  assert.equal(killDeadlineMs(4000, 2000, 500), 2500);
  assert.equal(killDeadlineMs(4000, 2000, 5000), 4000);
});

test('registration backoff: uniform in [0, factor·2^n], capped at 1 min', () => {
  const cases: Array<[number, number, number, number]> = [
    // attempt, factor ms, random, want
    [0, 1000, 0, 0],
    [0, 1000, 0.5, 500],
    [1, 1000, 0.5, 1000],
    [3, 1000, 0.999, 7992],
    [6, 1000, 1, 60_000],
    [20, 1000, 1, MAX_REGISTRATION_BACKOFF_MS],
    [1000, 1000, 1, MAX_REGISTRATION_BACKOFF_MS],
    [2, 10, 1, 40],
  ];
  for (const [attempt, factor, r, want] of cases) assert.equal(registrationDelayMs(attempt, factor, () => r), want, `attempt ${attempt}`);
});

test('status update resends double from the interval up to 10 min', () => {
  assert.deepEqual([0, 1, 2, 3].map((n) => statusRetryDelayMs(n, 10_000)), [10_000, 20_000, 40_000, 80_000]);
  assert.equal(statusRetryDelayMs(10, 10_000), 600_000);
  assert.equal(statusRetryDelayMs(2, 200, 500), 500);
});

test('terminal outcome: exit code, signal, kill requested', () => {
  const cases: Array<[Parameters<typeof terminalOutcome>[0], boolean, string, string]> = [
    [{ pid: 1, exit_code: 0, ended_ms: 0 }, false, 'TASK_FINISHED', 'Command exited with status 0'],
    [{ pid: 1, exit_code: 3, ended_ms: 0 }, false, 'TASK_FAILED', 'Command exited with status 3'],
    [{ pid: 1, signal: 15, core_dumped: false, ended_ms: 0 }, true, 'TASK_KILLED', 'Command terminated with signal Terminated'],
    [{ pid: 1, signal: 9, core_dumped: false, ended_ms: 0 }, true, 'TASK_KILLED', 'Command terminated with signal Killed'],
    [{ pid: 1, signal: 9, core_dumped: false, ended_ms: 0 }, false, 'TASK_FAILED', 'Command terminated with signal Killed'],
    [{ pid: 1, signal: 11, core_dumped: true, ended_ms: 0 }, false, 'TASK_FAILED', 'Command terminated with signal Segmentation fault'],
    [{ pid: 1, exit_code: 0, ended_ms: 0 }, true, 'TASK_KILLED', 'Command exited with status 0'],
  ];
  for (const [end, killed, state, message] of cases) {
    const o = terminalOutcome(end, killed);
    assert.equal(o.state, state);
    assert.equal(o.message, message);
  }
  assert.equal(terminalOutcome(undefined, false).state, 'TASK_FAILED');
});

test('terminal outcome when the exit file does not say: the end the launcher reported, or why it is not known', () => {
  const reported = terminalOutcome({ pid: 1, exit_code: 0, ended_ms: 0 }, false, 'the launcher could not record it in /w/meta/exits/f.t.json: No space left on device');
  assert.equal(reported.state, 'TASK_FINISHED');
  assert.equal(reported.message, 'Command exited with status 0 (the launcher could not record it in /w/meta/exits/f.t.json: No space left on device)');
  const unknown = terminalOutcome(undefined, false, 'its exit file /w/x is missing; the agent is under disk pressure: no space left on device in /w');
  assert.deepEqual(unknown, { state: 'TASK_FAILED', message: 'Task launcher exited without recording how the task ended: its exit file /w/x is missing; the agent is under disk pressure: no space left on device in /w', reason: 'REASON_EXECUTOR_TERMINATED' });
  assert.equal(terminalOutcome(undefined, true, 'x').state, 'TASK_KILLED');
});

test('a launcher\'s report of an end it could not record: read, or refused when it is not one', () => {
  assert.deepEqual(parseLauncherReport('{"pid":7,"exit_code":3,"ended_ms":5,"errno":28,"error":"No space left on device"}'), { pid: 7, exit_code: 3, ended_ms: 5, errno: 28, error: 'No space left on device' });
  assert.deepEqual(parseLauncherReport('{"pid":7,"signal":9,"core_dumped":false,"ended_ms":5,"errno":122,"error":"Disk quota exceeded"}'), { pid: 7, signal: 9, core_dumped: false, ended_ms: 5, errno: 122, error: 'Disk quota exceeded' });
  for (const bad of ['', 'nope', '{"pid":7,"exit_code":3,"ended_ms":5}', '{"pid":7,"ended_ms":5,"errno":28,"error":"x"}', '[1]', 'null']) assert.equal(parseLauncherReport(bad), undefined, bad);
});

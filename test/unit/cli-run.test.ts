import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  checkRunFlags,
  chooseOffer,
  commandEnd,
  formatUpdate,
  offerMismatch,
  runFramework,
  runOutcome,
  runTaskInfo,
  type OfferJson,
  type RunFlags,
  type RunRequest,
  type StatusJson,
} from '../../cli/run.js';

function request(over: Partial<RunRequest> = {}): RunRequest {
  const r = checkRunFlags({ name: 'hello', command: 'echo hi' });
  assert.ok(r.ok);
  return { ...r.value, ...over };
}

function offer(id: string, hostname: string, cpus: number, mem: number): OfferJson {
  return {
    id: { value: id },
    agent_id: { value: `agent-${id}` },
    hostname,
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: cpus }, role: '*', allocation_info: { role: '*' } },
      { name: 'mem', type: 'SCALAR', scalar: { value: mem }, role: '*', allocation_info: { role: '*' } },
      { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] }, role: '*' },
    ],
  };
}

test('flags: defaults and conversions', () => {
  const r = checkRunFlags({ name: 'hello', command: 'echo hi' });
  assert.deepEqual(r, {
    ok: true,
    value: {
      name: 'hello', command: 'echo hi', cpus: 0.1, memMb: 32, gracePeriodNs: 3_000_000_000n, hostname: undefined,
      frameworkName: 'drydock-run', checkpoint: false, offerTimeoutMs: 30_000, json: false,
    },
  });
  const s = checkRunFlags({ name: 'x', command: 'c', cpus: '2', mem: '1024', grace_period: '500ms', offer_timeout: '1secs', hostname: 'Agent-2', checkpoint: true, json: true });
  assert.ok(s.ok);
  assert.equal(s.value.gracePeriodNs, 500_000_000n);
  assert.equal(s.value.offerTimeoutMs, 1000);
  assert.equal(s.value.hostname, 'Agent-2');
  assert.equal(s.value.checkpoint, true);
});

test('flags: bad values are errors that name the flag and the value', () => {
  const cases: Array<[string, RunFlags, RegExp]> = [
    ['no name', { command: 'c' }, /--name is required/],
    ['slash in name', { name: 'a/b', command: 'c' }, /--name must not contain/],
    ['no command', { name: 'a', command: '  ' }, /--command is required/],
    ['cpus not a number', { name: 'a', command: 'c', cpus: 'lots' }, /--cpus must be a positive number, got 'lots'/],
    ['cpus zero', { name: 'a', command: 'c', cpus: '0' }, /--cpus must be a positive number, got '0'/],
    ['cpus negative', { name: 'a', command: 'c', cpus: '-1' }, /--cpus/],
    ['mem empty', { name: 'a', command: 'c', mem: '' }, /--mem must be a positive number/],
    ['grace without unit', { name: 'a', command: 'c', grace_period: '3' }, /--grace_period: Invalid duration '3'/],
    ['grace bad unit', { name: 'a', command: 'c', grace_period: '3parsecs' }, /--grace_period: Invalid duration '3parsecs': unknown unit/],
    ['offer timeout zero', { name: 'a', command: 'c', offer_timeout: '0secs' }, /--offer_timeout must be more than zero/],
    ['empty hostname', { name: 'a', command: 'c', hostname: ' ' }, /--hostname must not be empty/],
  ];
  for (const [what, flags, error] of cases) {
    const r = checkRunFlags(flags);
    assert.equal(r.ok, false, what);
    if (!r.ok) assert.match(r.error, error, what);
  }
  assert.equal(checkRunFlags({ name: 'a', command: 'c', grace_period: '0secs' }).ok, true, 'a zero grace period is allowed (SIGKILL at once)');
});

test('framework: no failover, checkpoint as asked, TASK_KILLING_STATE', () => {
  assert.deepEqual(runFramework(request(), 'alice'), {
    user: 'alice', name: 'drydock-run', failover_timeout: 0, checkpoint: false, capabilities: [{ type: 'TASK_KILLING_STATE' }],
  });
  assert.equal(runFramework(request({ checkpoint: true }), 'alice').checkpoint, true);
});

test('offer matching: hostname (case-insensitive), cpus, mem', () => {
  const cases: Array<[string, OfferJson, Partial<RunRequest>, string | undefined]> = [
    ['any agent fits', offer('1', 'agent-1', 4, 4096), {}, undefined],
    ['hostname matches ignoring case', offer('1', 'Agent-2', 4, 4096), { hostname: 'agent-2' }, undefined],
    ['other hostname', offer('1', 'agent-1', 4, 4096), { hostname: 'agent-2' }, 'hostname agent-1'],
    ['too few cpus', offer('1', 'agent-1', 0.05, 4096), { cpus: 0.1 }, 'only 0.05 cpus'],
    ['exactly enough cpus, float sums', offer('1', 'agent-1', 0.1 + 0.2, 4096), { cpus: 0.3 }, undefined],
    ['too little mem', offer('1', 'agent-1', 4, 16), { memMb: 32 }, 'only 16 MB mem'],
  ];
  for (const [what, o, over, want] of cases) assert.equal(offerMismatch(o, request(over)), want, what);
  const noResources: OfferJson = { id: { value: 'x' }, agent_id: { value: 'a' }, hostname: 'h' };
  assert.equal(offerMismatch(noResources, request()), 'only 0 cpus');
});

test('chooseOffer: accepts the first fitting offer, declines the rest; declines all once launched', () => {
  const offers = [offer('1', 'agent-1', 4, 4096), offer('2', 'agent-2', 4, 4096), offer('3', 'agent-3', 4, 4096)];
  const c = chooseOffer(offers, request({ hostname: 'AGENT-2' }), true);
  assert.equal(c.accept?.id.value, '2');
  assert.deepEqual(c.decline.map((o) => o.id.value), ['1', '3']);
  assert.deepEqual(c.mismatches, ['agent-1: hostname agent-1', 'agent-3: hostname agent-3']);
  const any = chooseOffer(offers, request(), true);
  assert.equal(any.accept?.id.value, '1');
  assert.deepEqual(any.decline.map((o) => o.id.value), ['2', '3']);
  const after = chooseOffer(offers, request(), false);
  assert.equal(after.accept, undefined);
  assert.equal(after.decline.length, 3);
  const none = chooseOffer(offers, request({ hostname: 'nosuch' }), true);
  assert.equal(none.accept, undefined);
  assert.equal(none.decline.length, 3);
});

test('the TaskInfo: id NAME-suffix, the offer agent, resources shaped like the offer, shell command, grace in ns', () => {
  const t = runTaskInfo(request({ cpus: 0.5, memMb: 64, gracePeriodNs: 10_000_000_000n, command: 'echo hi; exit 3' }), offer('9', 'agent-9', 4, 4096), 'ab12cd');
  assert.deepEqual(t, {
    name: 'hello',
    task_id: { value: 'hello-ab12cd' },
    agent_id: { value: 'agent-9' },
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 }, role: '*', allocation_info: { role: '*' } },
      { name: 'mem', type: 'SCALAR', scalar: { value: 64 }, role: '*', allocation_info: { role: '*' } },
    ],
    command: { shell: true, value: 'echo hi; exit 3' },
    kill_policy: { grace_period: { nanoseconds: 10_000_000_000 } },
  });
});

function status(state: string, message?: string, reason?: string): StatusJson {
  return { task_id: { value: 't-1' }, state, ...(message !== undefined ? { message } : {}), ...(reason !== undefined ? { reason } : {}) };
}

test('exit status of a terminal update', () => {
  const cases: Array<[StatusJson, number, boolean]> = [
    [status('TASK_FINISHED', 'Command exited with status 0'), 0, false],
    [status('TASK_FINISHED'), 0, false],
    [status('TASK_FAILED', 'Command exited with status 3'), 3, false],
    [status('TASK_FAILED', 'Command exited with status 255'), 255, false],
    [status('TASK_FAILED', 'Command terminated with signal Segmentation fault'), 139, false],
    [status('TASK_FAILED', 'Command terminated with signal Unknown signal 34'), 162, false],
    [status('TASK_KILLED', 'Command terminated with signal Terminated'), 143, false],
    [status('TASK_KILLED', 'Command terminated with signal Killed'), 137, false],
    [status('TASK_KILLED', 'Command exited with status 2'), 2, false],
    // Not the task's own status: drydock run's own failure, 125 (exit-codes.ts), never 1 (a task's).
    [status('TASK_KILLED', 'Command exited with status 0'), 125, true],
    [status('TASK_FAILED', 'Task launcher exited without recording how the task ended', 'REASON_EXECUTOR_TERMINATED'), 125, true],
    [status('TASK_ERROR', 'Task has no command value', 'REASON_TASK_INVALID'), 125, true],
    [status('TASK_LOST', 'Agent restarted; framework f does not checkpoint', 'REASON_AGENT_RESTARTED'), 125, true],
    [status('TASK_DROPPED', 'offer rescinded'), 125, true],
    [status('TASK_GONE'), 125, true],
  ];
  for (const [s, code, problem] of cases) {
    const o = runOutcome(s);
    assert.equal(o.exitCode, code, `${s.state} ${s.message ?? ''}`);
    assert.equal(o.problem !== undefined, problem, `${s.state} ${s.message ?? ''} problem`);
  }
  assert.equal(runOutcome(status('TASK_ERROR', 'bad', 'REASON_TASK_INVALID')).problem, 'task t-1 TASK_ERROR: bad (REASON_TASK_INVALID)');
  assert.deepEqual(commandEnd('Command exited with status 7'), { exitCode: 7 });
  assert.deepEqual(commandEnd('something else'), undefined);
});

test('update lines: time, state, agent hostname, message (reason)', () => {
  const ts = Date.UTC(2026, 0, 2, 3, 4, 5, 678) / 1000;
  const cases: Array<[StatusJson, string | undefined, string]> = [
    [{ ...status('TASK_RUNNING'), timestamp: ts }, 'agent-2', '03:04:05.678  TASK_RUNNING   agent-2'],
    [{ ...status('TASK_FAILED', 'Command exited with status 3'), timestamp: ts }, 'agent-2', '03:04:05.678  TASK_FAILED    agent-2  Command exited with status 3'],
    [{ ...status('TASK_LOST', 'Agent restarted', 'REASON_AGENT_RESTARTED'), timestamp: ts }, 'agent-1', '03:04:05.678  TASK_LOST      agent-1  Agent restarted (REASON_AGENT_RESTARTED)'],
    [{ ...status('TASK_DROPPED', undefined, 'REASON_INVALID_OFFERS'), timestamp: ts, agent_id: { value: 'a-7' } }, undefined, '03:04:05.678  TASK_DROPPED   a-7  REASON_INVALID_OFFERS'],
    [status('TASK_STARTING'), undefined, '00:00:01.000  TASK_STARTING  -'],
  ];
  for (const [s, host, line] of cases) assert.equal(formatUpdate(s, host, 1), line);
});

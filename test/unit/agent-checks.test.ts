/**
 * The check and health-check core of agent/checks.ts: spec parsing, the two state machines as
 * tables, and the probing loop on a ManualClock with a scripted probe runner (no processes).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  Checker,
  MIN_INTERVAL_MS,
  TaskChecking,
  emptyStatus,
  initialCheck,
  initialHealth,
  nextCheck,
  nextHealth,
  parseTaskChecks,
  passed,
  type HealthState,
  type Probe,
  type ProbeRun,
  type TaskChecks,
} from '../../agent/checks.js';
import { ManualClock } from '../../shared/clock.js';
import { decodeAgentMessage, encode } from '../../shared/protocol.js';
import { parseWireJson } from '../../shared/json.js';
import { TASK_INFO, decodeMessage } from '../../shared/proto.js';
import type { CheckStatusInfo } from '../../shared/mesos.js';

const exit = (code: number): CheckStatusInfo => ({ type: 'COMMAND', command: { exit_code: code } });
const TIMED_OUT = emptyStatus('COMMAND');
const cmd = (value: string): Record<string, unknown> => ({ type: 'COMMAND', command: { command: { value } } });

// ---- Parsing -------------------------------------------------------------------------------

test('parse: Mesos defaults, fractional seconds, numeric strings, timeout 0 is no limit', () => {
  const d = parseTaskChecks({ check: cmd('test -f ready'), health_check: { type: 'COMMAND', command: { value: 'true' } } });
  assert.ok(d.ok);
  assert.deepEqual(d.value.check, { probe: { type: 'COMMAND', command: { value: 'test -f ready' } }, timing: { delayMs: 15_000, intervalMs: 10_000, timeoutMs: 20_000 } });
  assert.deepEqual(d.value.health, {
    probe: { type: 'COMMAND', command: { value: 'true' } },
    timing: { delayMs: 15_000, intervalMs: 10_000, timeoutMs: 20_000 },
    consecutiveFailures: 3,
    gracePeriodMs: 10_000,
  });
  const f = parseTaskChecks({ check: { ...cmd('x'), delay_seconds: 0, interval_seconds: 0.2, timeout_seconds: '0.5' } });
  assert.ok(f.ok);
  assert.deepEqual(f.value.check?.timing, { delayMs: 0, intervalMs: 200, timeoutMs: 500 });
  const z = parseTaskChecks({ check: { ...cmd('x'), interval_seconds: 0, timeout_seconds: 0 } });
  assert.ok(z.ok);
  assert.deepEqual(z.value.check?.timing, { delayMs: 15_000, intervalMs: MIN_INTERVAL_MS, timeoutMs: undefined });
  assert.deepEqual(parseTaskChecks({}), { ok: true, value: { check: undefined, health: undefined } });
});

test('parse: HTTP and TCP probes on loopback', () => {
  const h = parseTaskChecks({ health_check: { type: 'HTTP', http: { port: 8080, path: '/health', scheme: 'http' }, consecutive_failures: 1, grace_period_seconds: 0 } });
  assert.ok(h.ok);
  assert.deepEqual(h.value.health?.probe, { type: 'HTTP', port: 8080, path: '/health', ipv6: false });
  assert.equal(h.value.health?.consecutiveFailures, 1);
  assert.equal(h.value.health?.gracePeriodMs, 0);
  const c = parseTaskChecks({ check: { type: 'TCP', tcp: { port: '9000' } } });
  assert.ok(c.ok);
  assert.deepEqual(c.value.check?.probe, { type: 'TCP', port: 9000, ipv6: false });
  const p = parseTaskChecks({ check: { type: 'HTTP', http: { port: 80 } } });
  assert.ok(p.ok);
  assert.deepEqual(p.value.check?.probe, { type: 'HTTP', port: 80, path: '/', ipv6: false });
});

test('parse: a bad spec is refused with a message naming the field', () => {
  const cases: Array<[string, Record<string, unknown>, string]> = [
    ['no command value', { check: { type: 'COMMAND', command: { command: {} } } }, "Task's check is invalid: Expecting 'check.command.command.value' to be set for a COMMAND check"],
    ['empty command value', { check: cmd('') }, "Task's check is invalid: Expecting 'check.command.command.value' to be set for a COMMAND check"],
    ['no command at all', { check: { type: 'COMMAND' } }, "Task's check is invalid: Expecting 'check.command.command' to be set for a COMMAND check"],
    ['command without its CommandInfo', { check: { type: 'COMMAND', command: {} } }, "Task's check is invalid: Missing required fields: check.command.command"],
    ['negative interval', { check: { ...cmd('x'), interval_seconds: -1 } }, "Task's check is invalid: Expecting 'check.interval_seconds' to be non-negative, got -1"],
    ['negative delay', { health_check: { type: 'COMMAND', command: { value: 'x' }, delay_seconds: -0.5 } }, "Task's health check is invalid: Expecting 'health_check.delay_seconds' to be non-negative, got -0.5"],
    ['negative grace', { health_check: { type: 'COMMAND', command: { value: 'x' }, grace_period_seconds: -3 } }, "Task's health check is invalid: Expecting 'health_check.grace_period_seconds' to be non-negative, got -3"],
    ['health command without value', { health_check: { type: 'COMMAND', command: { shell: true } } }, "Task's health check is invalid: Expecting 'health_check.command.value' to be set for a COMMAND check"],
    ['no type', { check: { command: { command: { value: 'x' } } } }, "Task's check is invalid: Expecting 'check.type' to be COMMAND, HTTP or TCP"],
    ['unknown type', { check: { type: 'GRPC' } }, "Task's check is invalid: Expecting 'check.type' to be COMMAND, HTTP or TCP"],
    ['UNKNOWN type', { health_check: { type: 'UNKNOWN' } }, "Task's health check is invalid: Expecting 'health_check.type' to be COMMAND, HTTP or TCP"],
    ['interval not a number', { check: { ...cmd('x'), interval_seconds: 'soon' } }, "Task's check is invalid: Field 'check.interval_seconds' is not a finite number"],
    ['interval an object', { check: { ...cmd('x'), interval_seconds: {} } }, "Task's check is invalid: Not expecting a JSON object for field 'interval_seconds'"],
    ['not an object', { check: 'test -f ready' }, "Task's check is invalid: Not expecting a JSON string for field 'check'"],
    ['HTTP without http', { check: { type: 'HTTP' } }, "Task's check is invalid: Expecting 'check.http' to be set for an HTTP check"],
    ['HTTP port 0', { check: { type: 'HTTP', http: { port: 0 } } }, "Task's check is invalid: 'check.http.port' must be a port between 1 and 65535, got 0"],
    ['HTTP port too big', { health_check: { type: 'HTTP', http: { port: 70000 } } }, "Task's health check is invalid: 'health_check.http.port' must be a port between 1 and 65535, got 70000"],
    ['HTTP relative path', { check: { type: 'HTTP', http: { port: 80, path: 'health' } } }, "Task's check is invalid: 'check.http.path' must start with '/', got 'health'"],
    ['HTTPS', { health_check: { type: 'HTTP', http: { port: 443, scheme: 'https' } } }, "Task's health check is invalid: 'health_check.http.scheme' must be 'http' (Drydock runs no HTTPS checks), got 'https'"],
    ['TCP without tcp', { health_check: { type: 'TCP' } }, "Task's health check is invalid: Expecting 'health_check.tcp' to be set for a TCP check"],
    ['TCP without port', { check: { type: 'TCP', tcp: {} } }, "Task's check is invalid: Missing required fields: check.tcp.port"],
    ['NUL in command', { check: cmd('a\u0000b') }, "Task's check is invalid: 'check.command.command.value' must not contain NUL characters"],
    ['bad env name', { check: { type: 'COMMAND', command: { command: { value: 'x', environment: { variables: [{ name: 'A=B', value: '1' }] } } } } }, "Task's check is invalid: 'check.command.command.environment.variables[0].name' must be a non-empty name without '='"],
    ['negative failures', { health_check: { type: 'COMMAND', command: { value: 'x' }, consecutive_failures: -1 } }, "Task's health check is invalid: Field 'health_check.consecutive_failures' is out of range for uint32"],
  ];
  for (const [name, task, error] of cases) assert.deepEqual(parseTaskChecks(task), { ok: false, error }, name);
});

// ---- The check state machine ---------------------------------------------------------------

test('check: the first result sends, the same one does not, each change does; a timeout has no exit code', () => {
  // Each row: the results in order, and the updates they send (undefined: none).
  const cases: Array<[string, CheckStatusInfo[], Array<CheckStatusInfo | undefined>]> = [
    ['first result sends', [exit(1)], [exit(1)]],
    ['same result does not', [exit(1), exit(1), exit(1)], [exit(1), undefined, undefined]],
    ['a change sends', [exit(1), exit(1), exit(0), exit(0)], [exit(1), undefined, exit(0), undefined]],
    ['exit code to timeout and back', [exit(0), TIMED_OUT, TIMED_OUT, exit(0)], [exit(0), TIMED_OUT, undefined, exit(0)]],
    // As Mesos: before any result the state is the empty result (which TASK_RUNNING already carried).
    ['a first timeout is no change', [TIMED_OUT, exit(3)], [undefined, exit(3)]],
    ['any exit code counts', [exit(0), exit(2), exit(3)], [exit(0), exit(2), exit(3)]],
  ];
  for (const [name, results, want] of cases) {
    let state = initialCheck('COMMAND');
    const got: Array<CheckStatusInfo | undefined> = [];
    for (const r of results) {
      const next = nextCheck(state, r);
      state = next.state;
      got.push(next.update);
    }
    assert.deepEqual(got, want, name);
  }
  assert.deepEqual(TIMED_OUT, { type: 'COMMAND', command: {} });
});

test('health: how a result reads (exit 0; HTTP 200-399; TCP connected; nothing is a failure)', () => {
  const cases: Array<[CheckStatusInfo, boolean]> = [
    [exit(0), true],
    [exit(1), false],
    [TIMED_OUT, false],
    [{ type: 'HTTP', http: { status_code: 200 } }, true],
    [{ type: 'HTTP', http: { status_code: 302 } }, true],
    [{ type: 'HTTP', http: { status_code: 404 } }, false],
    [{ type: 'HTTP', http: { status_code: 500 } }, false],
    [{ type: 'HTTP', http: {} }, false],
    [{ type: 'TCP', tcp: { succeeded: true } }, true],
    [{ type: 'TCP', tcp: { succeeded: false } }, false],
    [{ type: 'TCP', tcp: {} }, false],
  ];
  for (const [result, want] of cases) assert.equal(passed(result), want, JSON.stringify(result));
});

test('health: updates on a change only, grace period until the first pass, consecutive failures kill', () => {
  type Row = [atMs: number, ok: boolean, update: boolean | undefined, kill: number | undefined];
  const cases: Array<[string, { consecutiveFailures: number; gracePeriodMs: number }, Row[]]> = [
    ['first pass is healthy, then silence', { consecutiveFailures: 3, gracePeriodMs: 0 }, [[0, true, true, undefined], [10, true, undefined, undefined]]],
    [
      'failures within the grace period are ignored',
      { consecutiveFailures: 1, gracePeriodMs: 1000 },
      [[100, false, undefined, undefined], [1000, false, undefined, undefined], [1001, false, false, 1]],
    ],
    [
      'after the first pass the grace period no longer applies',
      { consecutiveFailures: 2, gracePeriodMs: 10_000 },
      [[100, true, true, undefined], [200, false, false, undefined], [300, false, undefined, 2]],
    ],
    [
      'consecutive failures kill; healthy:false is sent once',
      { consecutiveFailures: 3, gracePeriodMs: 0 },
      [[0, false, false, undefined], [1, false, undefined, undefined], [2, false, undefined, 3]],
    ],
    [
      'a pass resets the count and reports healthy again',
      { consecutiveFailures: 2, gracePeriodMs: 0 },
      [[0, true, true, undefined], [1, false, false, undefined], [2, true, true, undefined], [3, false, false, undefined], [4, false, undefined, 2]],
    ],
    ['grace 0: the first failure counts', { consecutiveFailures: 2, gracePeriodMs: 0 }, [[0, false, false, undefined], [0, false, undefined, 2]]],
    ['consecutive_failures 0 kills at the first counted failure (as Mesos)', { consecutiveFailures: 0, gracePeriodMs: 0 }, [[0, false, false, 1]]],
  ];
  for (const [name, spec, rows] of cases) {
    let state: HealthState = initialHealth(0);
    for (const [i, [at, ok, update, kill]] of rows.entries()) {
      const d = nextHealth(spec, state, ok, at);
      state = d.state;
      assert.deepEqual({ update: d.update, kill: d.kill }, { update, kill }, `${name}, row ${i}`);
    }
  }
});

// ---- The probing loop ----------------------------------------------------------------------

/** A probe runner whose probes finish when the test says so. */
class ScriptedRunner {
  readonly started: Array<{ probe: Probe; finish: (r: CheckStatusInfo) => void; aborted: boolean }> = [];
  readonly run = (probe: Probe): ProbeRun => {
    let finish: (r: CheckStatusInfo) => void = () => {};
    const result = new Promise<CheckStatusInfo>((resolve) => (finish = resolve));
    const entry = { probe, finish, aborted: false };
    this.started.push(entry);
    return { result, abort: () => void (entry.aborted = true) };
  };
  last(): { finish: (r: CheckStatusInfo) => void; aborted: boolean } {
    const e = this.started.at(-1);
    assert.ok(e, 'a probe was started');
    return e;
  }
}

const flush = (): Promise<void> => new Promise((r) => setImmediate(r));
const PROBE: Probe = { type: 'COMMAND', command: { value: 'true' } };

test('checker: first probe after the delay, the next an interval after each result', async () => {
  const clock = new ManualClock();
  const runner = new ScriptedRunner();
  const results: CheckStatusInfo[] = [];
  const c = new Checker({ clock, probe: PROBE, timing: { delayMs: 1000, intervalMs: 200, timeoutMs: 5000 }, run: runner.run, onResult: (r) => results.push(r), onError: (e) => assert.fail(String(e)) });
  assert.equal(c.state, 'idle');
  c.start();
  clock.advance(999);
  assert.equal(runner.started.length, 0);
  clock.advance(1);
  assert.equal(runner.started.length, 1);
  assert.equal(c.state, 'probing');
  // A slow probe: the interval counts from its end.
  clock.advance(700);
  runner.last().finish(exit(1));
  await flush();
  assert.deepEqual(results, [exit(1)]);
  assert.equal(c.state, 'waiting');
  clock.advance(199);
  assert.equal(runner.started.length, 1);
  clock.advance(1);
  assert.equal(runner.started.length, 2);
  runner.last().finish(exit(0));
  await flush();
  assert.deepEqual(results, [exit(1), exit(0)]);
  c.stop();
  clock.advance(10_000);
  assert.equal(runner.started.length, 2);
  assert.equal(clock.pending, 0);
});

test('checker: a probe past its timeout is aborted and has no result; its late answer is ignored', async () => {
  const clock = new ManualClock();
  const runner = new ScriptedRunner();
  const results: CheckStatusInfo[] = [];
  const c = new Checker({ clock, probe: PROBE, timing: { delayMs: 0, intervalMs: 100, timeoutMs: 500 }, run: runner.run, onResult: (r) => results.push(r), onError: (e) => assert.fail(String(e)) });
  c.start();
  clock.advance(0);
  const slow = runner.last();
  clock.advance(499);
  assert.equal(slow.aborted, false);
  clock.advance(1);
  assert.equal(slow.aborted, true);
  assert.deepEqual(results, [TIMED_OUT]);
  slow.finish(exit(0));
  await flush();
  assert.deepEqual(results, [TIMED_OUT], 'the aborted probe does not report');
  clock.advance(100);
  assert.equal(runner.started.length, 2);
});

test('checker: stop() kills the probe under way and nothing is reported after it', async () => {
  const clock = new ManualClock();
  const runner = new ScriptedRunner();
  const results: CheckStatusInfo[] = [];
  const c = new Checker({ clock, probe: PROBE, timing: { delayMs: 0, intervalMs: 100, timeoutMs: undefined }, run: runner.run, onResult: (r) => results.push(r), onError: () => {} });
  c.start();
  clock.advance(0);
  c.stop();
  assert.equal(runner.last().aborted, true);
  runner.last().finish(exit(0));
  await flush();
  assert.deepEqual(results, []);
  assert.equal(c.state, 'stopped');
  assert.equal(clock.pending, 0);
});

test('checker: a throwing result handler is reported and probing goes on; a throwing runner is no result', async () => {
  const clock = new ManualClock();
  const errors: unknown[] = [];
  let calls = 0;
  const c = new Checker({
    clock,
    probe: PROBE,
    timing: { delayMs: 0, intervalMs: 50, timeoutMs: undefined },
    run: () => {
      calls++;
      throw new Error('spawn EAGAIN');
    },
    onResult: (r) => {
      assert.deepEqual(r, TIMED_OUT);
      throw new Error('disk full');
    },
    onError: (e) => errors.push(e),
  });
  c.start();
  clock.advance(0);
  await flush();
  clock.advance(50);
  await flush();
  assert.equal(calls, 2);
  assert.equal(errors.length, 2);
  c.stop();
});

test('task checking: check updates carry the result; a failing health check reports once, then kills', async () => {
  const clock = new ManualClock();
  const runner = new ScriptedRunner();
  const events: string[] = [];
  const spec: TaskChecks = {
    check: { probe: { type: 'COMMAND', command: { value: 'test -f ready' } }, timing: { delayMs: 0, intervalMs: 100, timeoutMs: 1000 } },
    health: { probe: { type: 'COMMAND', command: { value: 'false' } }, timing: { delayMs: 0, intervalMs: 100, timeoutMs: 1000 }, consecutiveFailures: 2, gracePeriodMs: 0 },
  };
  let checking: TaskChecking | undefined;
  checking = new TaskChecking(spec, {
    clock,
    run: runner.run,
    checkChanged: (s) => events.push(`check ${s.command?.exit_code ?? 'none'}`),
    healthChanged: (h) => events.push(`healthy ${h}`),
    unhealthy: (n) => {
      events.push(`kill ${n}`);
      checking?.stop();
    },
    onError: (e) => assert.fail(String(e)),
  });
  assert.deepEqual(checking.checkStatus, TIMED_OUT, 'before the first result: the empty result');
  assert.equal(checking.healthy, undefined);
  checking.start();
  clock.advance(0);
  const [check1, health1] = runner.started;
  assert.equal(check1?.probe.type === 'COMMAND' && check1.probe.command.value, 'test -f ready');
  check1?.finish(exit(1));
  health1?.finish(exit(1));
  await flush();
  assert.deepEqual(events, ['check 1', 'healthy false']);
  assert.deepEqual(checking.checkStatus, exit(1));
  assert.equal(checking.healthy, false);
  clock.advance(100);
  const [check2, health2] = runner.started.slice(2);
  check2?.finish(exit(0));
  health2?.finish(exit(1));
  await flush();
  assert.deepEqual(events, ['check 1', 'healthy false', 'check 0', 'kill 2']);
  assert.equal(checking.state, 'stopped');
  clock.advance(10_000);
  assert.equal(runner.started.length, 4, 'no probe after the kill');
});

// ---- The wire --------------------------------------------------------------------------------

test('wire: the master keeps check_status, healthy and reason as the agent sent them, typed and checked', () => {
  const update = (status: Record<string, unknown>): string =>
    JSON.stringify({ type: 'STATUS_UPDATE', framework_id: 'f', status: { task_id: { value: 't' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'dXVpZA==', ...status } });
  const ok = decodeAgentMessage(update({ reason: 'REASON_TASK_CHECK_STATUS_UPDATED', healthy: false, check_status: { type: 'COMMAND', command: { exit_code: 3, extra: 1 }, junk: true } }));
  assert.ok(ok.ok && ok.message.type === 'STATUS_UPDATE');
  assert.equal(ok.message.status.reason, 'REASON_TASK_CHECK_STATUS_UPDATED');
  assert.equal(ok.message.status.healthy, false);
  assert.deepEqual(ok.message.status.check_status, { type: 'COMMAND', command: { exit_code: 3 } }, 'unknown fields are dropped');
  const empty = decodeAgentMessage(update({ check_status: { type: 'TCP', tcp: {} } }));
  assert.ok(empty.ok && empty.message.type === 'STATUS_UPDATE');
  assert.deepEqual(empty.message.status.check_status, { type: 'TCP', tcp: {} }, 'an empty result stays present and empty');
  const cases: Array<[Record<string, unknown>, RegExp]> = [
    [{ check_status: { type: 'COMMAND', command: { exit_code: 'x' } } }, /exit_code/],
    [{ check_status: { type: 'COMMAND', command: { exit_code: 2 ** 40 } } }, /out of range for int32/],
    [{ check_status: { type: 'HTTP', http: { status_code: -1 } } }, /out of range for uint32/],
    [{ check_status: 'COMMAND' }, /check_status/],
    [{ healthy: 'yes' }, /healthy/],
  ];
  for (const [status, error] of cases) {
    const d = decodeAgentMessage(update(status));
    assert.equal(d.ok, false, JSON.stringify(status));
    if (!d.ok) assert.match(d.error, error);
  }
});

test('wire: the master decodes a TaskInfo check and health check as typed messages (numbers as numbers, wrong types refused)', () => {
  const task = (extra: string): unknown => parseWireJson(`{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},${extra}}`);
  const big = decodeMessage<Record<string, unknown>>(TASK_INFO, task('"check":{"type":"COMMAND","command":{"command":{"value":"true"}},"delay_seconds":100000000000000000000,"junk":1}'));
  assert.ok(big.ok);
  assert.deepEqual(big.value['check'], { type: 'COMMAND', command: { command: { value: 'true' } }, delay_seconds: 1e20 });
  // What the master sends on must encode (a bigint would not).
  assert.match(encode({ type: 'RUN_TASK', framework_id: 'f', framework: { user: 'u', name: 'n' }, task: big.value as never }), /"delay_seconds":100000000000000000000/);
  const health = decodeMessage<Record<string, unknown>>(TASK_INFO, task('"health_check":{"type":"HTTP","http":{"port":"8080","path":"/h"},"consecutive_failures":"2"}'));
  assert.ok(health.ok);
  assert.deepEqual(health.value['health_check'], { type: 'HTTP', http: { port: 8080, path: '/h' }, consecutive_failures: 2 });
  const bad = decodeMessage(TASK_INFO, task('"check":{"type":"COMMAND","interval_seconds":[1]}'));
  assert.deepEqual(bad, { ok: false, error: "Not expecting a JSON array for field 'interval_seconds'" });
});

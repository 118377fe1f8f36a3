/**
 * `drydock plan` and `drydock pod` without a scheduler: the requests each command sends, reading
 * and drawing plans, what every answer means (text and exit status), the --watch decisions, the
 * pod status table; and the shells driven through a fake scheduler and a fake terminal.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  MAINTENANCE_PLANS,
  PLAN_COMMANDS,
  SERVICE_PLANS,
  WATCH_START,
  decodePlan,
  listOutcome,
  planCreateRequest,
  planDeleteRequest,
  planListRequest,
  planPoll,
  planShowRequest,
  planVerbRequest,
  renderPlan,
  hookLines,
  showOutcome,
  startParameters,
  stepNote,
  verbOutcome,
  watchIntervalMs,
  watchStep,
  type PlanPoll,
  type PlanView,
  type VerbFlags,
  type WatchOptions,
  type WatchState,
} from '../../cli/plan.js';
import {
  decodeServiceStatus,
  podActionOutcome,
  podActionRequest,
  podInfoOutcome,
  podInfoRequest,
  podListOutcome,
  podStatusOutcome,
  podStatusRequest,
  podStatusRows,
} from '../../cli/pod.js';
import { resolveScheduler, failureLine, oneLine, type Answer, type ApiRequest, type Target } from '../../cli/service-api.js';
import { ansiPaint, eraseFrame, plainPaint, screenRows, visibleText, wantsColour, type ScreenIo } from '../../cli/terminal.js';
import { MASTER_PLANS, SCHEDULER_PLANS, createPlan, deletePlan, listPlans, planVerb, showPlan, type Shell } from '../../cli/plan-command.js';
import { podStatus } from '../../cli/pod-command.js';
import type { PlanInfo } from '../../shared/plans/commands.js';

const BASE: Target = { kind: 'scheduler', base: 'http://127.0.0.1:8088' };
const LIST = planListRequest(SERVICE_PLANS);

const http = (status: number, body: unknown, statusText = ''): Answer => ({
  kind: 'http',
  status,
  statusText,
  body: typeof body === 'string' ? body : JSON.stringify(body),
});
const DOWN: Answer = { kind: 'unreachable', reason: 'ECONNREFUSED' };

/** A plan as the scheduler's planInfo writes it (shared/plans/commands.ts). */
function planJson(status: string, over: Partial<PlanInfo> = {}): PlanInfo {
  return {
    phases: [
      {
        id: 'ph-1',
        name: 'hello-deploy',
        strategy: 'serial-canary',
        status: status === 'COMPLETE' ? 'COMPLETE' : 'WAITING',
        steps: [
          { id: 's-1', name: 'hello-0:[server]', status: 'COMPLETE', message: 'step hello-0:[server] [s-1] with status: COMPLETE' },
          {
            id: 's-2',
            name: 'hello-1:[server]',
            status: status === 'COMPLETE' ? 'COMPLETE' : 'WAITING',
            message: status === 'COMPLETE' ? 'step hello-1:[server] [s-2] with status: COMPLETE' : 'step hello-1:[server] [s-2] with status: WAITING: canary: waiting for drydock plan continue',
          },
        ],
      },
      {
        id: 'ph-2',
        name: 'world-deploy',
        strategy: 'serial',
        status: status === 'COMPLETE' ? 'COMPLETE' : 'PENDING',
        steps: [{ id: 's-3', name: 'world-0:[server]', status: status === 'COMPLETE' ? 'COMPLETE' : 'PENDING', message: '' }],
      },
    ],
    errors: [],
    strategy: 'serial',
    status: status as PlanInfo['status'],
    ...over,
  };
}

test('PlanInfo from shared/plans is readable as the CLI\'s PlanView (a type check)', () => {
  const info: PlanInfo = planJson('WAITING');
  const view: PlanView = info;
  assert.equal(view.phases.length, 2);
});

test('requests: list, show, and every verb and alias with its path, query and body', () => {
  assert.deepEqual(planShowRequest(SERVICE_PLANS, 'deploy'), { ok: true, value: { method: 'GET', path: '/v1/plans/deploy' } });
  assert.deepEqual(planShowRequest(SERVICE_PLANS, 'a b/c'), { ok: true, value: { method: 'GET', path: '/v1/plans/a%20b%2Fc' } });
  assert.equal(planShowRequest(SERVICE_PLANS, '..').ok, false);
  assert.equal(planShowRequest(SERVICE_PLANS, '').ok, false);

  const cases: Array<[string, VerbFlags, string, string | undefined]> = [
    ['start', {}, '/v1/plans/deploy/start', '{}'],
    ['start', { parameter: ['A=1', 'B=x=y', 'C=', 'A=2'] }, '/v1/plans/deploy/start', '{"A":"2","B":"x=y","C":""}'],
    ['stop', {}, '/v1/plans/deploy/stop', undefined],
    ['continue', {}, '/v1/plans/deploy/continue', undefined],
    ['resume', { phase: 'hello-deploy' }, '/v1/plans/deploy/continue?phase=hello-deploy', undefined],
    ['interrupt', {}, '/v1/plans/deploy/interrupt', undefined],
    ['pause', { phase: 'ph 1' }, '/v1/plans/deploy/interrupt?phase=ph+1', undefined],
    ['force-complete', {}, '/v1/plans/deploy/forceComplete', undefined],
    ['force-complete', { phase: 'hello-deploy', step: 'hello-0:[server]' }, '/v1/plans/deploy/forceComplete?phase=hello-deploy&step=hello-0%3A%5Bserver%5D', undefined],
    ['restart', { phase: 'p' }, '/v1/plans/deploy/restart?phase=p', undefined],
    ['force-restart', { phase: 'p', step: 's' }, '/v1/plans/deploy/restart?phase=p&step=s', undefined],
  ];
  for (const [command, flags, path, body] of cases) {
    const verb = PLAN_COMMANDS[command];
    assert.ok(verb !== undefined, command);
    const r = planVerbRequest(SERVICE_PLANS, verb, 'deploy', flags);
    assert.ok(r.ok, `${command} ${JSON.stringify(flags)}: ${r.ok ? '' : r.error}`);
    assert.deepEqual(r.value, body === undefined ? { method: 'POST', path } : { method: 'POST', path, body }, command);
  }
  assert.deepEqual(Object.keys(PLAN_COMMANDS).sort(), ['continue', 'force-complete', 'force-restart', 'interrupt', 'pause', 'restart', 'resume', 'start', 'stop']);
});

test('requests: flags a verb does not take, --step without --phase, empty names, bad -p are refused before sending', () => {
  const refused: Array<[Parameters<typeof planVerbRequest>[1], VerbFlags, RegExp]> = [
    ['stop', { phase: 'p' }, /stop takes no --phase/],
    ['continue', { phase: 'p', step: 's' }, /continue takes no --step/],
    ['interrupt', { step: 's' }, /interrupt takes no --step/],
    ['restart', { step: 's' }, /--step needs --phase/],
    ['forceComplete', { step: 's' }, /--step needs --phase/],
    ['restart', { phase: '' }, /--phase: empty/],
    ['stop', { parameter: ['A=1'] }, /stop takes no -p/],
    ['start', { parameter: ['A'] }, /-p 'A': expected KEY=VALUE/],
    ['start', { parameter: ['=1'] }, /-p '=1': empty KEY/],
  ];
  for (const [verb, flags, want] of refused) {
    const r = planVerbRequest(SERVICE_PLANS, verb, 'deploy', flags);
    assert.equal(r.ok, false, `${verb} ${JSON.stringify(flags)}`);
    assert.match(r.ok ? '' : r.error, want);
  }
  assert.equal(planVerbRequest(SERVICE_PLANS, 'stop', '', {}).ok, false);
  // A parameter named __proto__ is a parameter.
  const p = startParameters(['__proto__=x']);
  assert.ok(p.ok);
  assert.equal(JSON.stringify(p.value), '{"__proto__":"x"}');
});

test('scheduler address: flag, then DRYDOCK_SCHEDULER, then 127.0.0.1:8088; host alone gets 8088; scheme and path prefix kept', () => {
  const cases: Array<[string | undefined, Record<string, string>, string]> = [
    [undefined, {}, 'http://127.0.0.1:8088'],
    [undefined, { DRYDOCK_SCHEDULER: '10.0.0.1:9000' }, 'http://10.0.0.1:9000'],
    [undefined, { DRYDOCK_SCHEDULER: '' }, 'http://127.0.0.1:8088'],
    ['sched:1234', { DRYDOCK_SCHEDULER: '10.0.0.1:9000' }, 'http://sched:1234'],
    ['sched', {}, 'http://sched:8088'],
    ['sched:80', {}, 'http://sched'],
    ['[::1]:8088', {}, 'http://[::1]:8088'],
    ['[::1]', {}, 'http://[::1]:8088'],
    ['http://h:1/', {}, 'http://h:1'],
    ['https://proxy/service/hello/', {}, 'https://proxy/service/hello'],
    ['h:1/prefix', {}, 'http://h:1/prefix'],
  ];
  for (const [flag, env, want] of cases) assert.deepEqual(resolveScheduler(flag, env), { ok: true, value: want }, `${flag} ${JSON.stringify(env)}`);
  for (const bad of ['', 'h:port', 'ftp://h', 'http://h/?x=1', 'a b']) {
    const r = resolveScheduler(bad, {});
    assert.equal(r.ok, false, bad);
    assert.match(r.ok ? '' : r.error, /^--scheduler '.*': .+; write host:port/);
  }
  const env = resolveScheduler(undefined, { DRYDOCK_SCHEDULER: 'x:y' });
  assert.match(env.ok ? '' : env.error, /^DRYDOCK_SCHEDULER 'x:y'/);
});

test('scheduler address with TLS material (--tls_ca_file): https unless a scheme says otherwise', () => {
  const cases: Array<[string | undefined, Record<string, string>, string]> = [
    [undefined, {}, 'https://127.0.0.1:8088'],
    ['sched:1234', {}, 'https://sched:1234'],
    [undefined, { DRYDOCK_SCHEDULER: '10.0.0.1:9000' }, 'https://10.0.0.1:9000'],
    ['http://sched:1234', {}, 'http://sched:1234'],
    ['https://proxy/service/hello', {}, 'https://proxy/service/hello'],
    ['sched:443', {}, 'https://sched'],
  ];
  for (const [flag, env, want] of cases) assert.deepEqual(resolveScheduler(flag, env, true), { ok: true, value: want }, `${flag} ${JSON.stringify(env)}`);
  assert.deepEqual(resolveScheduler('sched:1234', {}, false), { ok: true, value: 'http://sched:1234' });
});

test('step notes: the text after the status in the message, none for SDK-style or bare messages', () => {
  const step = (message: string, status = 'WAITING'): Parameters<typeof stepNote>[0] => ({ id: 'id-1', name: 'hello-0:[server]', status, message });
  assert.equal(stepNote(step('step hello-0:[server] [id-1] with status: WAITING: canary: waiting for continue')), 'canary: waiting for continue');
  assert.equal(stepNote(step('step hello-0:[server] [id-1] with status: WAITING')), undefined);
  assert.equal(stepNote(step('step hello-0:[server] [id-1] with status: WAITING: ')), undefined);
  assert.equal(stepNote(step('com.mesosphere.sdk.scheduler.plan.DeploymentStep: hello-0:[server] [id-1] with status: COMPLETE', 'COMPLETE')), undefined);
  assert.equal(stepNote(step('X: hello-0:[server] [id-1] with status: DELAYED: back-off 4s', 'DELAYED')), 'back-off 4s');
  assert.equal(stepNote(step('')), undefined);
  // Line breaks and escape sequences from the network do not reach the terminal.
  assert.equal(stepNote(step('step hello-0:[server] [id-1] with status: ERROR: exit 1\n\u001b[2Jboom', 'ERROR')), 'exit 1 ?[2Jboom');
});

test('plan tree: phases and steps with branches, notes, errors; colours only when painted', () => {
  const plan = planJson('WAITING', { errors: ['hello-1:[server]: task exited 1'], status: 'WAITING' });
  assert.deepEqual(renderPlan('deploy', plan, plainPaint), [
    'deploy (serial) WAITING',
    '├─ hello-deploy (serial-canary) WAITING',
    '│  ├─ hello-0:[server] COMPLETE',
    '│  └─ hello-1:[server] WAITING: canary: waiting for drydock plan continue',
    '└─ world-deploy (serial) PENDING',
    '   └─ world-0:[server] PENDING',
    'errors:',
    '  hello-1:[server]: task exited 1',
  ]);
  const coloured = renderPlan('deploy', { ...plan, status: 'IN_PROGRESS' }, ansiPaint);
  assert.equal(coloured[0], 'deploy (serial) \u001b[36mIN_PROGRESS\u001b[39m');
  assert.equal(coloured[2], '│  ├─ hello-0:[server] \u001b[32mCOMPLETE\u001b[39m');
  assert.equal(coloured[3], '│  └─ hello-1:[server] \u001b[33mWAITING\u001b[39m: canary: waiting for drydock plan continue');
  assert.equal(coloured[5], '   └─ world-0:[server] PENDING', 'PENDING stays plain');
  assert.equal(coloured[6], '\u001b[31merrors:\u001b[39m');
  assert.deepEqual(coloured.map(visibleText), renderPlan('deploy', { ...plan, status: 'IN_PROGRESS' }, plainPaint));
  const error = renderPlan('p', { phases: [], errors: [], strategy: 'parallel', status: 'ERROR' }, ansiPaint);
  assert.deepEqual(error, ['p (parallel) \u001b[31mERROR\u001b[39m']);
});

test('plan decoding: the contract\'s shape, message and errors optional; anything else named', () => {
  assert.ok(decodePlan(planJson('COMPLETE')).ok);
  assert.ok(decodePlan({ phases: [{ id: 'a', name: 'n', strategy: 's', status: 'X', steps: [{ id: 'i', name: 'n', status: 'NEW' }] }], strategy: 's', status: 'X' }).ok);
  const bad: Array<[unknown, string]> = [
    [[], 'plan is not an object'],
    [{ strategy: 's', status: 'X' }, 'plan.phases is missing'],
    [{ phases: [{}], strategy: 's', status: 'X' }, 'phases[0].steps is missing'],
    [{ phases: [{ id: 'a', name: 'n', strategy: 's', status: 'X', steps: [{ id: 1 }] }], strategy: 's', status: 'X' }, 'phases[0].steps[0].id is not a string'],
    [{ phases: [], errors: [3], strategy: 's', status: 'X' }, 'errors[0] is not a string'],
  ];
  for (const [value, error] of bad) assert.deepEqual(decodePlan(value), { ok: false, error });
});

test('exit statuses: show, verbs and list for 200/202/208/400/404/417/500/unreachable', () => {
  const show: ApiRequest = { method: 'GET', path: '/v1/plans/deploy' };
  const verb: ApiRequest = { method: 'POST', path: '/v1/plans/deploy/continue' };
  type Row = [string, Answer, number, RegExp, RegExp | undefined];
  const showCases: Row[] = [
    ['200', http(200, planJson('COMPLETE')), 0, /^deploy \(serial\) COMPLETE\n/, undefined],
    ['202', http(202, planJson('WAITING')), 0, /^deploy \(serial\) WAITING\n/, undefined],
    ['417', http(417, planJson('ERROR', { errors: ['boom'] })), 0, /^deploy \(serial\) ERROR\n[^]*errors:\n {2}boom$/, undefined],
    ['404', http(404, 'Plan deploy not found'), 1, /^$/, /^scheduler at http:\/\/127\.0\.0\.1:8088 answered 404: Plan deploy not found$/],
    ['400', http(400, 'bad'), 1, /^$/, /answered 400: bad$/],
    ['500', http(500, 'oops', 'Internal Server Error'), 1, /^$/, /answered 500 Internal Server Error to GET \/v1\/plans\/deploy: oops$/],
    ['204', http(204, ''), 1, /^$/, /answered 204 to GET \/v1\/plans\/deploy: \(no body\)$/],
    ['200 not a plan', http(200, '{"x":1}'), 1, /^$/, /answered 200 to GET \/v1\/plans\/deploy with a body drydock cannot read: plan\.phases is missing$/],
    ['200 not JSON', http(200, '<html>'), 1, /^$/, /with a body drydock cannot read: /],
    ['unreachable', DOWN, 1, /^$/, /^cannot reach the scheduler at http:\/\/127\.0\.0\.1:8088 \(ECONNREFUSED\); set --scheduler or DRYDOCK_SCHEDULER$/],
  ];
  for (const [name, answer, code, out, err] of showCases) {
    const p = showOutcome(BASE, 'deploy', show, answer, false, plainPaint);
    assert.equal(p.exitCode, code, `show ${name}`);
    assert.match(p.out.join('\n'), out, `show ${name}`);
    if (err === undefined) assert.deepEqual(p.err, [], `show ${name}`);
    else assert.match(p.err.join('\n'), err, `show ${name}`);
  }
  // --json: the answer as it is, pretty-printed, for 417 as well.
  const json = showOutcome(BASE, 'deploy', show, http(417, planJson('ERROR')), true, plainPaint);
  assert.equal(json.exitCode, 0);
  assert.deepEqual(JSON.parse(json.out.join('')), planJson('ERROR'));

  const verbCases: Array<[string, Answer, boolean, number, string[], string[]]> = [
    ['200', http(200, { message: 'Received cmd: continue' }), false, 0, ['Received cmd: continue'], []],
    ['200 --json', http(200, { message: 'Received cmd: continue' }), true, 0, ['{\n  "message": "Received cmd: continue"\n}'], []],
    ['208', http(208, 'Command has already been reported or completed'), false, 0, ['Command has already been reported or completed'], []],
    ['208 empty', http(208, ''), false, 0, ['Command has already been reported or completed'], []],
    ['208 --json', http(208, 'Command has already been reported or completed'), true, 0, [], ['Command has already been reported or completed']],
    ['400', http(400, 'Missing phase'), false, 1, [], ['scheduler at http://127.0.0.1:8088 answered 400: Missing phase']],
    ['404', http(404, 'Phase nope not found'), true, 1, [], ['scheduler at http://127.0.0.1:8088 answered 404: Phase nope not found']],
    ['417', http(417, 'x'), false, 1, [], ['scheduler at http://127.0.0.1:8088 answered 417 to POST /v1/plans/deploy/continue: x']],
    ['500', http(500, 'oops', 'Internal Server Error'), false, 1, [], ['scheduler at http://127.0.0.1:8088 answered 500 Internal Server Error to POST /v1/plans/deploy/continue: oops']],
    ['unreachable', DOWN, false, 1, [], ['cannot reach the scheduler at http://127.0.0.1:8088 (ECONNREFUSED); set --scheduler or DRYDOCK_SCHEDULER']],
  ];
  for (const [name, answer, asJson, code, out, err] of verbCases) {
    assert.deepEqual(verbOutcome(BASE, verb, answer, asJson), { exitCode: code, out, err }, `verb ${name}`);
  }

  assert.deepEqual(listOutcome(BASE, LIST, http(200, ['deploy', 'recovery']), false), { exitCode: 0, out: ['deploy', 'recovery'], err: [] });
  assert.deepEqual(listOutcome(BASE, LIST, http(200, ['deploy']), true), { exitCode: 0, out: ['[\n  "deploy"\n]'], err: [] });
  assert.equal(listOutcome(BASE, LIST, http(200, [1]), false).exitCode, 1);
  assert.equal(listOutcome(BASE, LIST, http(503, ''), false).exitCode, 1);
  assert.equal(listOutcome(BASE, LIST, DOWN, false).exitCode, 1);
});

test('unexpected bodies in error lines are one line, bounded, without escape sequences', () => {
  const line = failureLine(BASE, { method: 'GET', path: '/v1/plans' }, http(502, `a\n\u001b[31m${'x'.repeat(1000)}`, 'Bad Gateway'));
  assert.ok(!line.includes('\n') && !line.includes('\u001b'));
  assert.ok(line.length < 450, String(line.length));
  assert.match(line, /answered 502 Bad Gateway to GET \/v1\/plans: a \?\[31mx+…$/);
  assert.equal(oneLine('a\tb\r\nc\u0007'), 'a b c?');
});

test('--watch: drawn when changed, COMPLETE ends it with 0, ERROR does not, 404 ends it with 1', () => {
  const o: WatchOptions = { name: 'deploy', from: 'scheduler', json: false, tty: false, paint: plainPaint, intervalMs: 1000, giveUpMs: 30_000 };
  const req: ApiRequest = { method: 'GET', path: '/v1/plans/deploy' };
  const poll = (a: Answer): PlanPoll => planPoll(BASE, req, a);
  let s: WatchState = WATCH_START;

  const first = watchStep(s, poll(http(202, planJson('WAITING'))), 0, o);
  assert.match(first.draw ?? '', /^deploy \(serial\) WAITING\n[^]*PENDING\n$/);
  assert.equal(first.exitCode, undefined);
  s = first.state;
  const same = watchStep(s, poll(http(202, planJson('WAITING'))), 1000, o);
  assert.equal(same.draw, undefined, 'nothing changed: nothing drawn');
  assert.equal(same.err, undefined);
  s = same.state;
  const failed = watchStep(s, poll(http(417, planJson('ERROR'))), 2000, o);
  assert.match(failed.draw ?? '', /^deploy \(serial\) ERROR\n/);
  assert.equal(failed.exitCode, undefined, 'ERROR: an operator may restart the step; keep watching');
  s = failed.state;
  const done = watchStep(s, poll(http(200, planJson('COMPLETE'))), 3000, o);
  assert.match(done.draw ?? '', /^deploy \(serial\) COMPLETE\n/);
  assert.equal(done.exitCode, 0);
  const gone = watchStep(s, poll(http(404, 'Plan deploy not found')), 3000, o);
  assert.deepEqual([gone.exitCode, gone.err, gone.draw], [1, 'scheduler at http://127.0.0.1:8088 answered 404: Plan deploy not found', undefined]);

  // --json: one compact line per change.
  const j = watchStep(WATCH_START, poll(http(202, planJson('WAITING'))), 0, { ...o, json: true });
  assert.deepEqual(JSON.parse(j.draw ?? ''), planJson('WAITING'));
  assert.equal((j.draw ?? '').split('\n').length, 2);
  assert.equal(watchStep(j.state, poll(http(202, planJson('WAITING'))), 1, { ...o, json: true }).draw, undefined);
});

test('--watch: an unreachable scheduler (or a 5xx) is retried, said once on a pipe, given up after the bound', () => {
  const o: WatchOptions = { name: 'deploy', from: 'scheduler', json: false, tty: false, paint: plainPaint, intervalMs: 1000, giveUpMs: 30_000 };
  const req: ApiRequest = { method: 'GET', path: '/v1/plans/deploy' };
  let s = watchStep(WATCH_START, planPoll(BASE, req, http(202, planJson('WAITING'))), 0, o).state;
  const f1 = watchStep(s, planPoll(BASE, req, DOWN), 1000, o);
  assert.deepEqual([f1.exitCode, f1.draw], [undefined, undefined]);
  assert.match(f1.err ?? '', /^cannot reach the scheduler at .+; retrying for up to 30s$/);
  s = f1.state;
  const f2 = watchStep(s, planPoll(BASE, req, http(503, 'starting', 'Service Unavailable')), 2000, o);
  assert.deepEqual([f2.exitCode, f2.err, f2.draw], [undefined, undefined, undefined], 'said once');
  s = f2.state;
  const f3 = watchStep(s, planPoll(BASE, req, DOWN), 31_000, o);
  assert.equal(f3.exitCode, undefined, 'exactly the bound: still trying');
  const f4 = watchStep(f3.state, planPoll(BASE, req, DOWN), 31_001, o);
  assert.equal(f4.exitCode, 1);
  assert.match(f4.err ?? '', /ECONNREFUSED.*; gave up watching after 30s without an answer$/);
  // Back before the bound: the run of failures is over, and said so; the plan is not redrawn unchanged.
  const back = watchStep(s, planPoll(BASE, req, http(202, planJson('WAITING'))), 20_000, o);
  assert.deepEqual([back.err, back.draw, back.state.failingSinceMs], ['the scheduler answers again', undefined, undefined]);
});

test('--watch on a terminal: a footer says what is watched or what fails; COMPLETE drops it', () => {
  const o: WatchOptions = { name: 'deploy', from: 'scheduler', json: false, tty: true, paint: plainPaint, intervalMs: 2000, giveUpMs: 30_000 };
  const req: ApiRequest = { method: 'GET', path: '/v1/plans/deploy' };
  const a = watchStep(WATCH_START, planPoll(BASE, req, http(202, planJson('WAITING'))), 0, o);
  assert.match(a.draw ?? '', /PENDING\nwatching deploy every 2secs until COMPLETE; Ctrl-C stops watching\n$/);
  const b = watchStep(a.state, planPoll(BASE, req, DOWN), 2000, o);
  assert.equal(b.err, undefined, 'on a terminal, failures are in the footer');
  assert.match(b.draw ?? '', /PENDING\ncannot reach the scheduler .+; retrying for 30s more\n$/);
  const c = watchStep(b.state, planPoll(BASE, req, DOWN), 12_000, o);
  assert.match(c.draw ?? '', /retrying for 20s more\n$/);
  const d = watchStep(c.state, planPoll(BASE, req, http(200, planJson('COMPLETE'))), 14_000, o);
  assert.equal(d.exitCode, 0);
  assert.equal(d.err, undefined);
  assert.match(d.draw ?? '', /world-0:\[server\] COMPLETE\n$/);
});

test('--interval: Mesos durations from 100ms to 1hrs, default 1s', () => {
  assert.deepEqual(watchIntervalMs(undefined), { ok: true, value: 1000 });
  assert.deepEqual(watchIntervalMs('250ms'), { ok: true, value: 250 });
  assert.deepEqual(watchIntervalMs('2secs'), { ok: true, value: 2000 });
  assert.deepEqual(watchIntervalMs('1hrs'), { ok: true, value: 3_600_000 });
  for (const bad of ['1', '50ms', '2hrs', 'soon']) assert.equal(watchIntervalMs(bad).ok, false, bad);
});

test('terminal: rows a frame takes (wrapping, colours not counted), how it is erased, when to colour', () => {
  assert.equal(screenRows('', 80), 0);
  assert.equal(screenRows('a\nb\n', 80), 2);
  assert.equal(screenRows(`${'x'.repeat(80)}\n`, 80), 1);
  assert.equal(screenRows(`${'x'.repeat(81)}\n\n`, 80), 3);
  assert.equal(screenRows(`${ansiPaint('x'.repeat(80), 'red')}\n`, 80), 1);
  assert.equal(screenRows('├─ é\n', 4), 1);
  assert.equal(eraseFrame(0, 24), '');
  assert.equal(eraseFrame(5, 24), '\u001b[5F\u001b[J');
  assert.equal(eraseFrame(30, 24), '\u001b[H\u001b[2J');
  const tty = { isTTY: true, hasColors: () => true };
  assert.equal(wantsColour(tty, {}), true);
  assert.equal(wantsColour(tty, { NO_COLOR: '1' }), false);
  assert.equal(wantsColour(tty, { TERM: 'dumb' }), false);
  assert.equal(wantsColour({ isTTY: false }, {}), false);
  assert.equal(wantsColour({ isTTY: false }, { FORCE_COLOR: '1' }), true);
  assert.equal(wantsColour(tty, { FORCE_COLOR: '0' }), false);
});

test('pod requests and the status table', () => {
  assert.deepEqual(podStatusRequest(undefined), { ok: true, value: { method: 'GET', path: '/v1/pod/status' } });
  assert.deepEqual(podStatusRequest('hello-0'), { ok: true, value: { method: 'GET', path: '/v1/pod/hello-0/status' } });
  assert.deepEqual(podInfoRequest('hello-0'), { ok: true, value: { method: 'GET', path: '/v1/pod/hello-0/info' } });
  assert.deepEqual(podActionRequest('restart', 'hello-0'), { ok: true, value: { method: 'POST', path: '/v1/pod/hello-0/restart' } });
  assert.deepEqual(podActionRequest('replace', 'a/b'), { ok: true, value: { method: 'POST', path: '/v1/pod/a%2Fb/replace' } });
  assert.equal(podActionRequest('replace', '..').ok, false);

  const status = {
    service: 'hello',
    pods: [
      {
        name: 'hello',
        instances: [
          { name: 'hello-0', tasks: [{ name: 'hello-0-server', id: 'hello-0-server__1', status: 'RUNNING', hostname: 'agent-1', ready: true }] },
          { name: 'hello-1', tasks: [{ name: 'hello-1-server', id: 'hello-1-server__2', status: 'STAGING' }, { name: 'hello-1-sidecar', id: 'hello-1-sidecar__3', status: 'RUNNING', hostname: 'agent-2', ready: false }] },
          { name: 'hello-2', tasks: [] },
        ],
      },
    ],
  };
  const decoded = decodeServiceStatus(status);
  assert.ok(decoded.ok);
  assert.deepEqual(podStatusRows(decoded.value.pods.flatMap((p) => p.instances)), [
    ['hello-0', 'hello-0-server', 'RUNNING', 'yes', 'agent-1', 'hello-0-server__1'],
    ['hello-1', 'hello-1-server', 'STAGING', '-', '-', 'hello-1-server__2'],
    ['hello-1', 'hello-1-sidecar', 'RUNNING', 'no', 'agent-2', 'hello-1-sidecar__3'],
    ['hello-2', '-', '-', '-', '-', '-'],
  ]);
  const all = podStatusOutcome(BASE, { method: 'GET', path: '/v1/pod/status' }, false, http(200, status), false);
  assert.equal(all.exitCode, 0);
  assert.equal(all.out.join('\n'), [
    'POD      TASK             STATUS   READY  HOST     TASK ID',
    'hello-0  hello-0-server   RUNNING  yes    agent-1  hello-0-server__1',
    'hello-1  hello-1-server   STAGING  -      -        hello-1-server__2',
    'hello-1  hello-1-sidecar  RUNNING  no     agent-2  hello-1-sidecar__3',
    'hello-2  -                -        -      -        -',
  ].join('\n'));
  const one = podStatusOutcome(BASE, { method: 'GET', path: '/v1/pod/hello-0/status' }, true, http(200, status.pods[0]?.instances[0]), false);
  assert.equal(one.out.join('\n').split('\n').length, 2);
  const missing = podStatusOutcome(BASE, { method: 'GET', path: '/v1/pod/hello-9/status' }, true, http(404, 'Pod hello-9 not found'), false);
  assert.deepEqual(missing, { exitCode: 1, out: [], err: ['scheduler at http://127.0.0.1:8088 answered 404: Pod hello-9 not found'] });
  const wrongShape = podStatusOutcome(BASE, { method: 'GET', path: '/v1/pod/status' }, false, http(200, { pods: [{ name: 'x', instances: [{ name: 'x-0', tasks: [{ name: 't', id: 'i', status: 'RUNNING', ready: 'yes' }] }] }] }), false);
  assert.match(wrongShape.err.join(''), /pods\[0\]\.instances\[0\]\.tasks\[0\]\.ready is not a boolean/);
  assert.deepEqual(JSON.parse(podStatusOutcome(BASE, { method: 'GET', path: '/v1/pod/status' }, false, http(200, status), true).out.join('')), status);

  assert.deepEqual(podListOutcome(BASE, http(200, ['hello-0', 'hello-1']), false), { exitCode: 0, out: ['hello-0', 'hello-1'], err: [] });
  const info = [{ info: { name: 'hello-0-server', task_id: { value: 'x' } }, status: { state: 'TASK_RUNNING' } }, { info: { name: 'y' } }];
  const infoReq = { method: 'GET', path: '/v1/pod/hello-0/info' } as const;
  assert.deepEqual(JSON.parse(podInfoOutcome(BASE, infoReq, http(200, info)).out.join('')), info);
  assert.equal(podInfoOutcome(BASE, infoReq, http(200, [{ status: {} }])).exitCode, 1);
  const actReq = { method: 'POST', path: '/v1/pod/hello-0/replace' } as const;
  assert.deepEqual(podActionOutcome(BASE, 'replace', actReq, http(200, { pod: 'hello-0', tasks: ['hello-0-server', 'hello-0-sidecar'] }), false), {
    exitCode: 0,
    out: ['hello-0: replace requested for hello-0-server, hello-0-sidecar'],
    err: [],
  });
  assert.equal(podActionOutcome(BASE, 'restart', actReq, DOWN, false).exitCode, 1);
});

/** A fake terminal: what was written, a clock that sleeping advances, and a Ctrl-C to press. */
function fakeShell(answers: (req: ApiRequest, n: number) => Answer, over: Partial<ScreenIo> = {}): { shell: Shell; out: string[]; err: string[]; raw: string[]; sent: ApiRequest[]; sigint: () => void } {
  let now = 0;
  const handlers = new Set<(s: NodeJS.Signals) => void>();
  const out: string[] = [];
  const err: string[] = [];
  const raw: string[] = [];
  const sent: ApiRequest[] = [];
  const io: ScreenIo = {
    out: (l) => void out.push(l),
    err: (l) => void err.push(l),
    nowMs: () => now,
    // Time jumps; a turn of the event loop lets a test press Ctrl-C between polls.
    sleep: async (ms) => {
      now += ms;
      await new Promise((r) => setImmediate(r));
    },
    onSignal: (h) => {
      handlers.add(h);
      return () => void handlers.delete(h);
    },
    tty: false,
    colour: false,
    size: () => undefined,
    write: (t) => void raw.push(t),
    ...over,
  };
  return {
    shell: {
      io,
      env: {},
      send: async (_b, req) => { sent.push(req); return answers(req, sent.length); },
      // A fixed master is the leader; a list finds none; etcd refuses (as a secured etcd does without --etcd_user).
      findLeader: async (spec) =>
        spec.kind === 'fixed' ? { found: true, address: spec.address } : { found: false, why: spec.kind === 'etcd' ? 'etcd requires authentication: give --etcd_user and --etcd_password_file' : undefined },
      readInput: async (file) => { if (file === 'missing.yaml') throw Object.assign(new Error('no such file'), { code: 'ENOENT' }); return file === 'empty.yaml' ? ' \n' : 'name: kernel\n'; },
    },
    out,
    err,
    raw,
    sent,
    sigint: () => { for (const h of handlers) h('SIGINT'); },
  };
}

test('shell: list, a verb, usage errors (exit 2, nothing sent), pod status', async () => {
  const f = fakeShell(() => http(200, ['deploy']));
  assert.equal(await listPlans(SCHEDULER_PLANS, {}, f.shell), 0);
  assert.deepEqual(f.out, ['deploy']);

  const v = fakeShell(() => http(208, 'Command has already been reported or completed'));
  assert.equal(await planVerb(SCHEDULER_PLANS, 'pause', 'deploy', { phase: 'p' }, v.shell), 0);
  assert.deepEqual(v.sent, [{ method: 'POST', path: '/v1/plans/deploy/interrupt?phase=p' }]);
  assert.deepEqual(v.out, ['Command has already been reported or completed']);

  const u = fakeShell(() => http(200, {}));
  assert.equal(await planVerb(SCHEDULER_PLANS, 'start', 'deploy', { parameter: ['NOPE'] }, u.shell), 2);
  assert.equal(await planVerb(SCHEDULER_PLANS, 'restart', 'deploy', { step: 's' }, u.shell), 2);
  assert.equal(await showPlan(SCHEDULER_PLANS, 'deploy', { interval: '1secs' }, u.shell), 2);
  assert.equal(await showPlan(SCHEDULER_PLANS, 'deploy', { watch: true, interval: '1' }, u.shell), 2);
  assert.equal(await listPlans(SCHEDULER_PLANS, { scheduler: 'a b' }, u.shell), 2);
  assert.deepEqual(u.sent, []);
  assert.equal(u.err.length, 5);

  const p = fakeShell(() => http(404, 'Pod hello-9 not found'));
  assert.equal(await podStatus('hello-9', {}, p.shell), 1);
  assert.deepEqual(p.err, ['scheduler at http://127.0.0.1:8088 answered 404: Pod hello-9 not found']);
});

test('shell: --watch on a pipe prints each change and ends on COMPLETE', async () => {
  const sequence = ['WAITING', 'WAITING', 'ERROR', 'ERROR', 'COMPLETE'];
  const f = fakeShell((_req, n) => {
    const status = sequence[n - 1] ?? 'COMPLETE';
    return http(status === 'COMPLETE' ? 200 : status === 'ERROR' ? 417 : 202, planJson(status));
  });
  assert.equal(await showPlan(SCHEDULER_PLANS, 'deploy', { watch: true }, f.shell), 0);
  assert.equal(f.sent.length, 5);
  assert.deepEqual(f.raw.map((r) => r.split('\n')[0]), ['deploy (serial) WAITING', 'deploy (serial) ERROR', 'deploy (serial) COMPLETE']);
  assert.ok(f.raw.every((r) => !r.includes('\u001b')), 'no escape sequences on a pipe');
});

test('shell: --watch on a terminal erases the previous frame; gives up after 30s unreachable; Ctrl-C exits 130', async () => {
  let n = 0;
  const t = fakeShell(() => (++n === 1 ? http(202, planJson('WAITING')) : DOWN), { tty: true, colour: true, size: () => ({ columns: 80, rows: 50 }) });
  assert.equal(await showPlan(SCHEDULER_PLANS, 'deploy', { watch: true, interval: '5secs' }, t.shell), 1);
  assert.match(t.raw[0] ?? '', /^deploy \(serial\) \u001b\[33mWAITING/, 'coloured on a terminal, nothing to erase at first');
  assert.match(t.raw[1] ?? '', /^\u001b\[7F\u001b\[J/, '6 tree lines and the footer erased');
  assert.match(t.raw[2] ?? '', /^\u001b\[8F\u001b\[J/, 'the failure footer wraps at 80 columns: one row more');
  assert.match(t.err.at(-1) ?? '', /gave up watching after 3\ds without an answer$/);
  assert.ok(n <= 9, `bounded: ${n} polls`);

  const c = fakeShell(() => http(202, planJson('WAITING')));
  const running = showPlan(SCHEDULER_PLANS, 'deploy', { watch: true }, c.shell);
  await new Promise((r) => setImmediate(r));
  c.sigint();
  assert.equal(await running, 130);
  assert.deepEqual(c.err, ['stopped watching deploy; the plan goes on']);
});

test('maintenance plans: the same requests under /v1/maintenance/plans, plus create (the spec as it is) and delete', () => {
  assert.deepEqual(planListRequest(MAINTENANCE_PLANS), { method: 'GET', path: '/v1/maintenance/plans' });
  assert.deepEqual(planShowRequest(MAINTENANCE_PLANS, 'kernel-2026-11'), { ok: true, value: { method: 'GET', path: '/v1/maintenance/plans/kernel-2026-11' } });
  const verbs: Array<[string, VerbFlags, string]> = [
    ['continue', { phase: 'r1' }, '/v1/maintenance/plans/kernel/continue?phase=r1'],
    ['interrupt', {}, '/v1/maintenance/plans/kernel/interrupt'],
    ['stop', {}, '/v1/maintenance/plans/kernel/stop'],
    ['force-complete', { phase: 'r1', step: 'maint-a' }, '/v1/maintenance/plans/kernel/forceComplete?phase=r1&step=maint-a'],
    ['restart', { phase: 'r1', step: 'maint-a' }, '/v1/maintenance/plans/kernel/restart?phase=r1&step=maint-a'],
  ];
  for (const [command, flags, path] of verbs) {
    const verb = PLAN_COMMANDS[command];
    assert.ok(verb !== undefined, command);
    assert.deepEqual(planVerbRequest(MAINTENANCE_PLANS, verb, 'kernel', flags), { ok: true, value: { method: 'POST', path } }, command);
  }
  assert.deepEqual(planDeleteRequest('a b'), { ok: true, value: { method: 'DELETE', path: '/v1/maintenance/plans/a%20b' } });
  assert.equal(planDeleteRequest('..').ok, false);
  const spec = 'name: kernel\nmachines: all\n';
  assert.deepEqual(planCreateRequest(spec, 'plan.yaml'), { ok: true, value: { method: 'POST', path: '/v1/maintenance/plans', body: spec, contentType: 'application/yaml' } });
  assert.deepEqual(planCreateRequest(' \n', 'stdin'), { ok: false, error: 'stdin is empty; write a maintenance plan spec (YAML or JSON)' });
});

test('master answers: its name and --master in the lines, 409 and every line of a 400 shown', () => {
  const at: Target = { kind: 'master', base: 'http://127.0.0.1:5050' };
  const create: ApiRequest = { method: 'POST', path: '/v1/maintenance/plans', body: 'x' };
  assert.deepEqual(verbOutcome(at, create, http(200, { message: 'created maintenance plan k: 1 machines in 1 phases' }), false), { exitCode: 0, out: ['created maintenance plan k: 1 machines in 1 phases'], err: [] });
  assert.deepEqual(verbOutcome(at, create, http(400, 'Invalid maintenance plan spec:\nwindw is not a known key\nname must be \u001b[31m\n'), false), {
    exitCode: 1,
    out: [],
    err: ['master at http://127.0.0.1:5050 answered 400: Invalid maintenance plan spec:\n  windw is not a known key\n  name must be ?[31m'],
  });
  assert.deepEqual(verbOutcome(at, create, http(409, 'Maintenance plan k already exists'), false).err, ['master at http://127.0.0.1:5050 answered 409: Maintenance plan k already exists']);
  assert.deepEqual(verbOutcome(at, create, DOWN, false).err, ['cannot reach the master at http://127.0.0.1:5050 (ECONNREFUSED); set --master or DRYDOCK_MASTER']);
  const many = failureLine(at, create, http(400, Array.from({ length: 30 }, (_, i) => `e${i}`).join('\n')));
  assert.equal(many.split('\n').length, 21, 'the first 20 lines and how many more');
  assert.match(many, /\n {2}\(10 more lines\)$/);
  const o: WatchOptions = { name: 'k', from: 'master', json: false, tty: false, paint: plainPaint, intervalMs: 1000, giveUpMs: 30_000 };
  const failing = watchStep(WATCH_START, { kind: 'transient', error: 'down' }, 0, o);
  assert.equal(watchStep(failing.state, planPoll(at, { method: 'GET', path: '/v1/maintenance/plans/k' }, http(202, planJson('WAITING'))), 1000, o).err, 'the master answers again');
});

test('shell, maintenance plans: the master from --master / DRYDOCK_MASTER, create from a file, delete, usage and lookup failures', async () => {
  const f = fakeShell(() => http(200, ['kernel']));
  assert.equal(await listPlans(MASTER_PLANS, { master: '10.0.0.1:5050' }, f.shell), 0);
  assert.deepEqual([f.out, f.sent], [['kernel'], [{ method: 'GET', path: '/v1/maintenance/plans' }]]);

  const c = fakeShell(() => http(200, { message: 'created maintenance plan kernel: 2 machines in 1 phases' }));
  assert.equal(await createPlan('plan.yaml', {}, c.shell), 0);
  assert.deepEqual(c.sent, [{ method: 'POST', path: '/v1/maintenance/plans', body: 'name: kernel\n', contentType: 'application/yaml' }]);
  assert.deepEqual(c.out, ['created maintenance plan kernel: 2 machines in 1 phases']);

  const d = fakeShell(() => http(409, 'only a COMPLETE or stopped plan can be deleted'));
  assert.equal(await deletePlan('kernel', {}, d.shell), 1);
  assert.deepEqual(d.sent, [{ method: 'DELETE', path: '/v1/maintenance/plans/kernel' }]);
  assert.deepEqual(d.err, ['master at http://127.0.0.1:5050 answered 409: only a COMPLETE or stopped plan can be deleted']);

  const v = fakeShell(() => http(200, { message: 'Received cmd: continue' }));
  assert.equal(await planVerb(MASTER_PLANS, 'continue', 'kernel', { phase: 'all' }, v.shell), 0);
  assert.deepEqual(v.sent, [{ method: 'POST', path: '/v1/maintenance/plans/kernel/continue?phase=all' }]);

  const u = fakeShell(() => http(200, {}));
  // A file that cannot be read is the command line's trouble: 2, nothing sent.
  assert.equal(await createPlan('missing.yaml', {}, u.shell), 2);
  assert.equal(await createPlan('empty.yaml', {}, u.shell), 2);
  assert.equal(await deletePlan('', {}, u.shell), 2);
  assert.equal(await listPlans(MASTER_PLANS, { master: 'not a master' }, u.shell), 2);
  // A list of masters is asked for the leader (this fake finds none): exit 1, nothing sent.
  assert.equal(await showPlan(MASTER_PLANS, 'kernel', { master: 'm1:5050,m2:5050' }, u.shell), 1);
  // etcd turned the CLI away: the line says why (exit 1, nothing sent).
  assert.equal(await listPlans(MASTER_PLANS, { master: 'etcd://e1:2379/dd' }, u.shell), 1);
  assert.deepEqual(u.sent, []);
  assert.deepEqual(u.err, [
    'cannot read missing.yaml: ENOENT',
    'empty.yaml is empty; write a maintenance plan spec (YAML or JSON)',
    'name a plan',
    "--master not a master: expected host:port, a list host:port,host:port, or etcd://host:port/prefix",
    'no leading master found through m1:5050,m2:5050; set --master or DRYDOCK_MASTER',
    'no leading master found through etcd://e1:2379/dd: etcd requires authentication: give --etcd_user and --etcd_password_file',
  ]);
});

test('a maintenance step\'s hook: read from the step JSON, drawn under the step with its last lines', () => {
  const json = {
    name: 'kernel', status: 'WAITING', strategy: 'serial', errors: [],
    phases: [{
      id: 'p1', name: 'all', status: 'WAITING', strategy: 'serial',
      steps: [
        { id: 's1', name: 'host-a', status: 'WAITING', message: 'step host-a [s1] with status: WAITING: waiting for the operator', hook: { name: 'mark', attempt: 1, status: 'succeeded', code: 0, signal: null, output: 'one\ntwo\n' } },
        { id: 's2', name: 'host-b', status: 'PENDING', message: '' },
      ],
    }],
  };
  const plan = decodePlan(json);
  assert.ok(plan.ok);
  assert.deepEqual(plan.value.phases[0]?.steps[0]?.hook, { name: 'mark', attempt: 1, status: 'succeeded', code: 0, signal: null, output: 'one\ntwo\n' });
  assert.equal(plan.value.phases[0]?.steps[1]?.hook, undefined);
  assert.deepEqual(renderPlan('kernel', plan.value, plainPaint), [
    'kernel (serial) WAITING',
    '└─ all (serial) WAITING',
    '   ├─ host-a WAITING: waiting for the operator',
    '   │     on_down mark: succeeded, exit 0 (attempt 1)',
    '   │     | one',
    '   │     | two',
    '   └─ host-b PENDING',
  ]);
  // Hidden output, a signal, a long output (its last lines), control characters made safe.
  assert.deepEqual(hookLines({ name: 'mark', attempt: 2, status: 'failed', code: 3, signal: null, output: 'output hidden (needs run_maintenance_hooks)' }), [
    'on_down mark: failed, exit 3 (attempt 2)',
    '| output hidden (needs run_maintenance_hooks)',
  ]);
  assert.deepEqual(hookLines({ name: 'mark', attempt: 1, status: 'timed_out', code: null, signal: 'SIGKILL', output: '' }), ['on_down mark: timed_out, SIGKILL (attempt 1)']);
  assert.deepEqual(hookLines({ name: 'm', attempt: 1, status: 'succeeded', code: 0, signal: null, output: '1\n2\n3\n\u001b[31m4\n' }, 2), [
    'on_down m: succeeded, exit 0 (attempt 1)',
    '| ... (2 lines before; --json has the last 4 KiB)',
    '| 3',
    '| ?[31m4',
  ]);
});

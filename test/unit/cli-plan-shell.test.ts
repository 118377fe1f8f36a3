/**
 * The shell of `drydock plan` and `drydock pod`, as the built CLI, against a fake at its seam: a
 * tiny HTTP server in this file that answers the `/v1/plans` and `/v1/pod` contract (plans.md
 * §6.1) and can answer what the real scheduler never does on cue (a 500, a plan turning COMPLETE
 * on the third look): exit statuses, stdout and stderr, --json, --watch. The end-to-end test
 * against a real drydock-scheduler is test/integration/scheduler-service.test.ts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { cliFinished, spawnCli, type CliProcess } from '../helpers/cli.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';
import type { PlanInfo } from '../../shared/plans/commands.js';

interface Seen {
  method: string;
  url: string;
  body: string;
}

/** The test's scheduler: plans whose answers the test sets, and every request it saw. */
interface FakeScheduler {
  address: string;
  seen: Seen[];
  plans: Map<string, PlanInfo>;
  /** GETs of a plan before it turns COMPLETE (for --watch); undefined: never by itself. */
  completeAfter: Map<string, number>;
}

/** A plan of two phases, as shared/plans/commands.ts planInfo writes it. */
function plan(status: 'WAITING' | 'ERROR' | 'COMPLETE' | 'IN_PROGRESS'): PlanInfo {
  const done = status === 'COMPLETE';
  return {
    phases: [
      {
        id: 'ph-1',
        name: 'hello-deploy',
        strategy: 'serial-canary',
        status: done ? 'COMPLETE' : status,
        steps: [
          { id: 's-1', name: 'hello-0:[server]', status: 'COMPLETE', message: 'step hello-0:[server] [s-1] with status: COMPLETE' },
          {
            id: 's-2',
            name: 'hello-1:[server]',
            status: done ? 'COMPLETE' : status === 'ERROR' ? 'ERROR' : 'WAITING',
            message: done ? 'step hello-1:[server] [s-2] with status: COMPLETE' : `step hello-1:[server] [s-2] with status: ${status === 'ERROR' ? 'ERROR: task exited 3' : 'WAITING: canary: drydock plan continue deploy'}`,
          },
        ],
      },
    ],
    errors: status === 'ERROR' ? ['hello-1:[server]: task exited 3'] : [],
    strategy: 'serial',
    status,
  };
}

const TASK = { name: 'hello-0-server', id: 'hello-0-server__7f0c', status: 'RUNNING', hostname: 'agent-1', ready: true };
const POD_STATUS = {
  service: 'hello',
  pods: [{ name: 'hello', instances: [{ name: 'hello-0', tasks: [TASK] }, { name: 'hello-1', tasks: [{ name: 'hello-1-server', id: 'hello-1-server__9a1d', status: 'STAGING' }] }] }],
};

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  res.writeHead(status, { 'content-type': typeof body === 'string' ? 'text/plain' : 'application/json' });
  res.end(text);
}

/** Answers one request by the contract. */
function answer(s: FakeScheduler, req: IncomingMessage, body: string, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x');
  const parts = url.pathname.split('/').filter((p) => p !== '').map(decodeURIComponent);
  const [v1, area, name, verb] = parts;
  if (v1 !== 'v1') return send(res, 404, 'not found');
  if (area === 'plans') {
    if (name === undefined) return send(res, 200, [...s.plans.keys()]);
    if (name === 'broken') return send(res, 500, 'database on fire');
    const p = s.plans.get(name);
    if (p === undefined) return send(res, 404, `Plan ${name} not found`);
    if (verb === undefined && req.method === 'GET') {
      const left = s.completeAfter.get(name);
      if (left !== undefined) {
        if (left <= 1) s.plans.set(name, plan('COMPLETE'));
        s.completeAfter.set(name, left - 1);
      }
      const now = s.plans.get(name) ?? p;
      return send(res, now.status === 'COMPLETE' ? 200 : now.status === 'ERROR' ? 417 : 202, now);
    }
    const phase = url.searchParams.get('phase');
    if (phase !== null && !p.phases.some((ph) => ph.name === phase || ph.id === phase)) return send(res, 404, `Phase ${phase} not found`);
    if (verb === 'start') return send(res, 200, { message: `Received cmd: start ${name} with parameters: ${body}` });
    if (p.status === 'COMPLETE') return send(res, 208, 'Command has already been reported or completed');
    return send(res, 200, { message: `Received cmd: ${verb ?? ''}` });
  }
  if (area === 'pod') {
    if (name === undefined) return send(res, 200, ['hello-0', 'hello-1']);
    if (name === 'status') return send(res, 200, POD_STATUS);
    const inst = POD_STATUS.pods[0]?.instances.find((i) => i.name === name);
    if (inst === undefined) return send(res, 404, `Pod ${name} not found`);
    if (verb === 'status') return send(res, 200, inst);
    if (verb === 'info') return send(res, 200, inst.tasks.map((t) => ({ info: { name: t.name, task_id: { value: t.id } }, status: { task_id: { value: t.id }, state: `TASK_${t.status}` } })));
    if (verb === 'restart' || verb === 'replace') return send(res, 200, { pod: inst.name, tasks: inst.tasks.map((t) => t.name) });
  }
  return send(res, 404, 'not found');
}

/** Starts the fake scheduler on 127.0.0.1, closed when the test ends. */
async function startScheduler(t: TestContext): Promise<FakeScheduler> {
  const s: FakeScheduler = { address: '', seen: [], plans: new Map([['deploy', plan('WAITING')], ['recovery', plan('COMPLETE')], ['failing', plan('ERROR')]]), completeAfter: new Map() };
  const server = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => {
      s.seen.push({ method: req.method ?? '', url: req.url ?? '', body });
      answer(s, req, body, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  s.address = `127.0.0.1:${(server.address() as AddressInfo).port}`;
  t.after(() => new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  }));
  return s;
}

/** No colour settings from the test's environment reach the CLI. */
const PLAIN = { NO_COLOR: undefined, FORCE_COLOR: undefined, DRYDOCK_SCHEDULER: undefined };

function start(t: TestContext, s: FakeScheduler, ...args: string[]): CliProcess {
  return spawnCli(t, [...args, `--scheduler=${s.address}`], PLAIN);
}

function drydock(t: TestContext, s: FakeScheduler, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(start(t, s, ...args));
}

test('drydock plan list / show: names, the tree (no colour on a pipe), --json, 417 shown, 404 and 500 exit 1', { timeout: 300_000 }, async (t) => {
  const s = await startScheduler(t);
  const list = await drydock(t, s, 'plan', 'list');
  assert.deepEqual([list.code, list.stdout, list.stderr], [0, 'deploy\nrecovery\nfailing\n', '']);
  const listJson = await drydock(t, s, 'plan', 'list', '--json');
  assert.deepEqual(JSON.parse(listJson.stdout), ['deploy', 'recovery', 'failing']);

  const show = await drydock(t, s, 'plan', 'show', 'deploy');
  assert.equal(show.code, 0, show.stderr);
  assert.equal(show.stdout, [
    'deploy (serial) WAITING',
    '└─ hello-deploy (serial-canary) WAITING',
    '   ├─ hello-0:[server] COMPLETE',
    '   └─ hello-1:[server] WAITING: canary: drydock plan continue deploy',
    '',
  ].join('\n'));

  const failing = await drydock(t, s, 'plan', 'show', 'failing');
  assert.equal(failing.code, 0, 'a 417 still carries the plan, which is shown');
  assert.match(failing.stdout, /^failing \(serial\) ERROR\n[^]*└─ hello-1:\[server\] ERROR: task exited 3\nerrors:\n {2}hello-1:\[server\]: task exited 3\n$/);
  const failingJson = await drydock(t, s, 'plan', 'show', 'failing', '--json');
  assert.deepEqual(JSON.parse(failingJson.stdout), plan('ERROR'));

  const missing = await drydock(t, s, 'plan', 'show', 'nosuch');
  assert.deepEqual([missing.code, missing.stdout, missing.stderr], [1, '', `drydock: scheduler at http://${s.address} answered 404: Plan nosuch not found\n`]);
  const broken = await drydock(t, s, 'plan', 'show', 'broken');
  assert.equal(broken.code, 1);
  assert.equal(broken.stderr, `drydock: scheduler at http://${s.address} answered 500 Internal Server Error to GET /v1/plans/broken: database on fire\n`);

  // FORCE_COLOR colours even a pipe.
  const coloured = await cliFinished(spawnCli(t, ['plan', 'show', 'deploy', `--scheduler=${s.address}`], { ...PLAIN, FORCE_COLOR: '1' }));
  assert.match(coloured.stdout, /^deploy \(serial\) \u001b\[33mWAITING\u001b\[39m\n/);
});

test('drydock plan verbs: paths and aliases, -p as the start body, 208 is news (exit 0), 404 exit 1, usage errors exit 2 and send nothing', { timeout: 600_000 }, async (t) => {
  const s = await startScheduler(t);
  const cases: Array<[string[], string, string]> = [
    [['start', 'deploy', '-p', 'A=1', '-p', 'URL=http://x?a=b'], 'POST /v1/plans/deploy/start {"A":"1","URL":"http://x?a=b"}', 'Received cmd: start deploy with parameters: {"A":"1","URL":"http://x?a=b"}\n'],
    [['stop', 'deploy'], 'POST /v1/plans/deploy/stop ', 'Received cmd: stop\n'],
    [['resume', 'deploy', '--phase', 'hello-deploy'], 'POST /v1/plans/deploy/continue?phase=hello-deploy ', 'Received cmd: continue\n'],
    [['pause', 'deploy'], 'POST /v1/plans/deploy/interrupt ', 'Received cmd: interrupt\n'],
    [['force-complete', 'deploy', '--phase', 'ph-1', '--step', 'hello-1:[server]'], 'POST /v1/plans/deploy/forceComplete?phase=ph-1&step=hello-1%3A%5Bserver%5D ', 'Received cmd: forceComplete\n'],
    [['force-restart', 'deploy', '--phase', 'ph-1'], 'POST /v1/plans/deploy/restart?phase=ph-1 ', 'Received cmd: restart\n'],
    [['continue', 'recovery'], 'POST /v1/plans/recovery/continue ', 'Command has already been reported or completed\n'],
  ];
  for (const [args, request, stdout] of cases) {
    const before = s.seen.length;
    const r = await drydock(t, s, 'plan', ...args);
    assert.deepEqual([r.code, r.stdout, r.stderr], [0, stdout, ''], args.join(' '));
    const seen = s.seen.slice(before).map((q) => `${q.method} ${q.url} ${q.body}`);
    assert.deepEqual(seen, [request], args.join(' '));
  }
  // --json keeps stdout JSON: the 208 text goes to stderr.
  const already = await drydock(t, s, 'plan', 'interrupt', 'recovery', '--json');
  assert.deepEqual([already.code, already.stdout, already.stderr], [0, '', 'drydock: Command has already been reported or completed\n']);
  const json = await drydock(t, s, 'plan', 'stop', 'deploy', '--json');
  assert.deepEqual(JSON.parse(json.stdout), { message: 'Received cmd: stop' });

  const noPhase = await drydock(t, s, 'plan', 'restart', 'deploy', '--phase', 'nope');
  assert.deepEqual([noPhase.code, noPhase.stderr], [1, `drydock: scheduler at http://${s.address} answered 404: Phase nope not found\n`]);

  const before = s.seen.length;
  const usage: string[][] = [
    ['start', 'deploy', '-p', 'NOVALUE'],
    ['restart', 'deploy', '--step', 's'],
    ['stop', 'deploy', '--phase', 'p'],
    ['show', 'deploy', '--interval', '1secs'],
    ['show', 'deploy', '--watch', '--interval', '10ms'],
    ['show'],
    ['bogus', 'deploy'],
  ];
  for (const args of usage) {
    const r = await drydock(t, s, 'plan', ...args);
    assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
    assert.notEqual(r.stderr, '');
  }
  const badAddress = await cliFinished(spawnCli(t, ['plan', 'list', '--scheduler', 'h:port'], PLAIN));
  assert.deepEqual([badAddress.code, badAddress.stderr], [2, "drydock: --scheduler 'h:port': not host:port; write host:port (e.g. 127.0.0.1:8088)\nRun 'drydock plan list --help' for usage.\n"]);
  assert.equal(s.seen.length, before, 'usage errors send nothing');
});

test('drydock plan: an unreachable scheduler is exit 1 naming the address; DRYDOCK_SCHEDULER is used without --scheduler', { timeout: 120_000 }, async (t) => {
  // A port that was just free: nothing listens there.
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
  const port = (probe.address() as AddressInfo).port;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  const down = await cliFinished(spawnCli(t, ['plan', 'list', '--scheduler', `127.0.0.1:${port}`], PLAIN));
  assert.deepEqual([down.code, down.stdout], [1, '']);
  assert.equal(down.stderr, `drydock: cannot reach the scheduler at http://127.0.0.1:${port} (ECONNREFUSED); set --scheduler or DRYDOCK_SCHEDULER\n`);

  const s = await startScheduler(t);
  const viaEnv = await cliFinished(spawnCli(t, ['pod', 'list'], { ...PLAIN, DRYDOCK_SCHEDULER: s.address }));
  assert.deepEqual([viaEnv.code, viaEnv.stdout], [0, 'hello-0\nhello-1\n']);
});

test('drydock plan show --watch on a pipe: each change once, exit 0 when the plan turns COMPLETE', { timeout: 120_000 }, async (t) => {
  const s = await startScheduler(t);
  s.completeAfter.set('deploy', 5);
  const r = await drydock(t, s, 'plan', 'show', 'deploy', '--watch', '--interval', '100ms');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, '');
  // Four GETs of WAITING draw one tree; the fifth, COMPLETE, a second; no footer and no escapes on a pipe.
  assert.deepEqual(r.stdout.split('\n').filter((l) => /^deploy /.test(l)), ['deploy (serial) WAITING', 'deploy (serial) COMPLETE']);
  assert.ok(!r.stdout.includes('\u001b') && !r.stdout.includes('watching'), r.stdout);
  assert.equal(s.seen.filter((q) => q.url === '/v1/plans/deploy').length, 5);

  s.plans.set('deploy', plan('WAITING'));
  s.completeAfter.set('deploy', 3);
  const json = await drydock(t, s, 'plan', 'show', 'deploy', '--watch', '--interval', '100ms', '--json');
  assert.equal(json.code, 0, json.stderr);
  assert.deepEqual(json.stdout.trim().split('\n').map((l) => (JSON.parse(l) as PlanInfo).status), ['WAITING', 'COMPLETE']);
});

test('drydock plan show --watch: Ctrl-C exits 130; a plan in ERROR is still watched', { timeout: 120_000 }, async (t) => {
  const s = await startScheduler(t);
  const watch = start(t, s, 'plan', 'show', 'failing', '--watch', '--interval', '100ms');
  const deadline = Date.now() + EVENT_DEADLINE_MS;
  while (s.seen.filter((q) => q.url === '/v1/plans/failing').length < 3) {
    assert.ok(Date.now() < deadline, `no polls; stderr: ${watch.stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  assert.equal(watch.child.exitCode, null, 'ERROR does not end the watch');
  watch.child.kill('SIGINT');
  const r = await cliFinished(watch);
  assert.equal(r.code, 130);
  assert.match(r.stdout, /^failing \(serial\) ERROR\n/);
  assert.equal(r.stderr, 'drydock: stopped watching failing; the plan goes on\n');
});

test('drydock plan show --watch --timeout: 124 once it runs out, the plan goes on; a long one does not hold the process once the plan is COMPLETE', { timeout: 240_000 }, async (t) => {
  const s = await startScheduler(t);
  const r = await drydock(t, s, 'plan', 'show', 'failing', '--watch', '--interval', '100ms', '--timeout', '600ms');
  assert.equal(r.code, 124, r.stderr);
  assert.equal(r.stderr, 'drydock: stopped watching failing after 600ms (--timeout); the plan goes on\n');
  assert.match(r.stdout, /^failing \(serial\) ERROR\n/);
  assert.ok(s.seen.filter((q) => q.url === '/v1/plans/failing').length >= 2, 'it watched until then');
  // An hour's timeout: the watch ends at COMPLETE with 0 and the process exits then, not in an hour.
  s.completeAfter.set('deploy', 2);
  const done = await drydock(t, s, 'plan', 'show', 'deploy', '--watch', '--interval', '100ms', '--timeout', '1hrs');
  assert.equal(done.code, 0, done.stderr);
  // --timeout bounds a watch: without --watch it is a usage error, and so is a bad duration (its units listed).
  const alone = await drydock(t, s, 'plan', 'show', 'deploy', '--timeout', '1secs');
  assert.deepEqual([alone.code, alone.stderr], [2, "drydock: --timeout is for --watch: without it nothing waits\nRun 'drydock plan show --help' for usage.\n"]);
  const bad = await drydock(t, s, 'plan', 'show', 'deploy', '--watch', '--timeout', '5parsecs');
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /^drydock: --timeout: Invalid duration '5parsecs': unknown unit 'parsecs'; the units are ns, us, ms, secs \(s, sec, second, seconds\), mins \(m, min, minute, minutes\), /);
});

test('drydock pod: list, status table (all and one), info JSON, restart/replace, 404 exit 1', { timeout: 300_000 }, async (t) => {
  const s = await startScheduler(t);
  const status = await drydock(t, s, 'pod', 'status');
  assert.equal(status.code, 0, status.stderr);
  assert.equal(status.stdout, [
    'POD      TASK            STATUS   READY  HOST     TASK ID',
    'hello-0  hello-0-server  RUNNING  yes    agent-1  hello-0-server__7f0c',
    'hello-1  hello-1-server  STAGING  -      -        hello-1-server__9a1d',
    '',
  ].join('\n'));
  const one = await drydock(t, s, 'pod', 'status', 'hello-1');
  assert.equal(one.stdout.split('\n')[1], 'hello-1  hello-1-server  STAGING  -      -     hello-1-server__9a1d');
  const json = await drydock(t, s, 'pod', 'status', '--json');
  assert.deepEqual(JSON.parse(json.stdout), POD_STATUS);

  const info = await drydock(t, s, 'pod', 'info', 'hello-0');
  assert.equal(info.code, 0, info.stderr);
  assert.deepEqual(JSON.parse(info.stdout), [{ info: { name: 'hello-0-server', task_id: { value: 'hello-0-server__7f0c' } }, status: { task_id: { value: 'hello-0-server__7f0c' }, state: 'TASK_RUNNING' } }]);

  const restart = await drydock(t, s, 'pod', 'restart', 'hello-0');
  assert.deepEqual([restart.code, restart.stdout], [0, 'hello-0: restart requested for hello-0-server\n']);
  const replace = await drydock(t, s, 'pod', 'replace', 'hello-1', '--json');
  assert.deepEqual(JSON.parse(replace.stdout), { pod: 'hello-1', tasks: ['hello-1-server'] });
  assert.deepEqual(s.seen.filter((q) => q.method === 'POST').map((q) => q.url), ['/v1/pod/hello-0/restart', '/v1/pod/hello-1/replace']);

  const missing = await drydock(t, s, 'pod', 'status', 'hello-9');
  assert.deepEqual([missing.code, missing.stderr], [1, `drydock: scheduler at http://${s.address} answered 404: Pod hello-9 not found\n`]);
  const usage = await drydock(t, s, 'pod', 'info');
  assert.equal(usage.code, 2);
});

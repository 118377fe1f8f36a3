/**
 * drydock-scheduler end to end: a real master, real agents running real tasks, the scheduler as
 * a child process, driven through its HTTP API the way an operator (or the CLI) does: deploy
 * gated by readiness checks and a canary, a config change that moves only the pods that differ,
 * recovery after kill -9, pod replace, decommission, a scheduler restart mid-rollout that keeps
 * the operator's overrides, and maintenance: pods moved off a machine before its window
 * (inverse offer accepted), or the inverse offer declined when there is no room. Restart of a
 * step, a phase or the plan relaunches the pods (the plan COMPLETE only through the new tasks),
 * and a restart outlives a scheduler restart.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { alive, Daemon, EVENT_DEADLINE_MS, eventually, SCHEDULER_BIN, startAgent, startMaster, startScheduler, tempDir, type AgentHandle, type MasterHandle, type SchedulerHandle } from '../helpers/daemons.js';
import type { PlanInfo } from '../../shared/plans/commands.js';
import { cliFinished, spawnCli } from '../helpers/cli.js';

interface TaskEntry { name: string; id: string; status: string; hostname: string; ready?: boolean }
interface PodStatus { service: string; pods: Array<{ name: string; instances: Array<{ name: string; tasks: TaskEntry[] }> }> }

async function request(url: string, method = 'GET', body?: string): Promise<{ status: number; text: string; json: unknown }> {
  const res = await fetch(url, { method, ...(body === undefined ? {} : { body, headers: { 'content-type': 'application/json' } }), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try { json = JSON.parse(text); } catch { json = undefined; }
  return { status: res.status, text, json };
}

const plan = async (s: SchedulerHandle, name: string): Promise<PlanInfo> => (await request(`${s.url}/v1/plans/${name}`)).json as PlanInfo;
const pods = async (s: SchedulerHandle): Promise<TaskEntry[]> => ((await request(`${s.url}/v1/pod/status`)).json as PodStatus).pods.flatMap((p) => p.instances.flatMap((i) => i.tasks));
const steps = (p: PlanInfo): Record<string, string> => Object.fromEntries(p.phases.flatMap((ph) => ph.steps.map((st) => [st.name, st.status])));

async function waitPlan(s: SchedulerHandle, name: string, check: (p: PlanInfo) => boolean, what: string, timeoutMs = 20_000): Promise<PlanInfo> {
  let last: PlanInfo | undefined;
  try {
    return await eventually(async () => {
      const r = await request(`${s.url}/v1/plans/${name}`);
      if (r.status === 404) return undefined;
      last = r.json as PlanInfo;
      return check(last) ? last : undefined;
    }, timeoutMs, 100, what);
  } catch (e) {
    throw new Error(`${(e as Error).message}; last ${name} plan: ${JSON.stringify(last)}`);
  }
}

interface Cluster { master: MasterHandle; agents: AgentHandle[]; dir: string }

/** A master and agents (killing their tasks when the test ends). */
async function cluster(t: TestContext, hostnames: readonly string[], resources = 'cpus:2;mem:1024'): Promise<Cluster> {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const agents = await Promise.all(hostnames.map((hostname) => startAgent(t, { master: master.address, hostname, resources, stopSignal: 'SIGUSR1' })));
  return { master, agents, dir: tempDir(t, 'drydock-service-') };
}

function spec(dir: string, yaml: string, file = 'service.yml'): string {
  const path = join(dir, file);
  writeFileSync(path, yaml);
  return path;
}

/** One pod type `hello` with `count` instances; readiness waits for a gate file unless `gate` is undefined. */
function helloYaml(o: { count: number; env?: string; strategy?: string; gate?: string; placement?: string; extra?: string; allowDecommission?: boolean }): string {
  const ready = o.gate === undefined ? 'test -f ready' : `test -f ${o.gate}/$TASK_NAME`;
  return `name: hello
pods:
  hello:
    count: ${o.count}
${o.placement === undefined ? '' : `    placement: ${o.placement}\n`}${o.allowDecommission ? '    allow-decommission: true\n' : ''}    tasks:
      server:
        cmd: 'echo $$ > pid; touch ready; exec sleep 1000'
        cpus: 0.1
        memory: 16
        env: { GREETING: ${o.env ?? 'hi'} }
        kill-grace-period: 1
        readiness-check: { cmd: '${ready}', interval: 0.1, delay: 0, timeout: 5 }
${o.extra ?? ''}plans:
  deploy:
    strategy: serial
    phases:
      hello-deploy: { pod: hello, strategy: ${o.strategy ?? 'serial'} }
`;
}

const SCHEDULER_FLAGS = ['--offer_hold=200ms', '--backoff_initial=200ms', '--backoff_max=2secs'];

test('deploy: a step stays STARTED until its readiness check passes; a canary waits for continue, and a plan-level continue releases it', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const gate = tempDir(t, 'drydock-gate-');
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 3, strategy: 'serial-canary', gate })), flags: SCHEDULER_FLAGS });

  // The canary holds the first step: nothing launches until the operator says continue.
  let p = await waitPlan(s, 'deploy', (x) => x.status === 'WAITING', 'deploy WAITING on the canary');
  assert.deepEqual(steps(p), { 'hello-0:[server]': 'WAITING', 'hello-1:[server]': 'WAITING', 'hello-2:[server]': 'PENDING' });
  await eventually(async () => ((await request(`${s.url}/v1/health`)).status === 207 ? true : undefined), undefined, 100, 'health 207: waiting for the operator');
  assert.equal((await pods(s)).length, 0);
  // The CLI draws the tree.
  const shown = await cliFinished(spawnCli(t, ['plan', 'show', 'deploy', `--scheduler=${s.address}`]));
  assert.equal(shown.code, 0, shown.stderr);
  assert.match(shown.stdout, /^deploy \(serial\) WAITING\n.*hello-deploy \(serial-canary\) WAITING\n.*hello-0:\[server\] WAITING/s);

  // A plan-level continue (here through the CLI) releases the waiting canary phase (the SDK answered 208 here).
  const r = await cliFinished(spawnCli(t, ['plan', 'continue', 'deploy', `--scheduler=${s.address}`]));
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /Received cmd: continue/);
  p = await waitPlan(s, 'deploy', (x) => steps(x)['hello-0:[server]'] === 'STARTED', 'hello-0 STARTED (running, not ready)');
  const running = await eventually(async () => (await pods(s)).find((x) => x.name === 'hello-0-server' && x.status === 'RUNNING'), undefined, 100, 'hello-0-server RUNNING');
  assert.equal(running.ready, false);
  // Still not ready once its readiness check has run and failed: the step does not complete on TASK_RUNNING alone.
  await eventually(() => c.agents.flatMap((a) => a.daemon.records).find((x) => x.msg === 'check status changed' && x['taskId'] === running.id && (x['checkStatus'] as { command?: { exit_code?: number } }).command?.exit_code === 1), undefined, 50, 'a failed readiness check of hello-0');
  assert.equal(steps(await plan(s, 'deploy'))['hello-0:[server]'], 'STARTED');
  assert.equal(steps(await plan(s, 'deploy'))['hello-1:[server]'], 'WAITING');

  writeFileSync(join(gate, 'hello-0-server'), '');
  p = await waitPlan(s, 'deploy', (x) => steps(x)['hello-0:[server]'] === 'COMPLETE', 'hello-0 COMPLETE once ready');
  // The second canary step still waits for the operator.
  assert.equal(steps(p)['hello-1:[server]'], 'WAITING');
  assert.equal(p.status, 'WAITING');

  for (const n of ['hello-1-server', 'hello-2-server']) writeFileSync(join(gate, n), '');
  assert.equal((await request(`${s.url}/v1/plans/deploy/continue?phase=hello-deploy`, 'POST')).status, 200);
  // `plan show --watch` redraws until the plan is COMPLETE, then exits 0.
  const watched = await cliFinished(spawnCli(t, ['plan', 'show', 'deploy', '--watch', '--interval=100ms', `--scheduler=${s.address}`]));
  assert.equal(watched.code, 0, watched.stderr);
  assert.match(watched.stdout, /deploy \(serial\) COMPLETE/);
  p = await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy COMPLETE');
  const again = await cliFinished(spawnCli(t, ['plan', 'continue', 'deploy', `--scheduler=${s.address}`]));
  assert.equal(again.code, 0, 'continue of a COMPLETE plan: 208, informational');
  const missing = await cliFinished(spawnCli(t, ['pod', 'status', 'hello-9', `--scheduler=${s.address}`]));
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /Pod hello-9 not found/);
  assert.equal((await request(`${s.url}/v1/plans/deploy`)).status, 200);
  const tasks = await pods(s);
  assert.deepEqual(tasks.map((x) => [x.name, x.status, x.ready]), [['hello-0-server', 'RUNNING', true], ['hello-1-server', 'RUNNING', true], ['hello-2-server', 'RUNNING', true]]);
  // Every task carries its configuration.
  const info = (await request(`${s.url}/v1/pod/hello-1/info`)).json as Array<{ info: { labels: { labels: Array<{ key: string; value: string }> } } }>;
  const target = (await request(`${s.url}/v1/configurations/targetId`)).json as string;
  assert.equal(info[0]?.info.labels.labels.find((l) => l.key === 'target_configuration')?.value, target);
  assert.equal((await request(`${s.url}/v1/health`)).status, 200);
});

test('config change: only the pods that differ are relaunched, in plan order, onto the new target', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const world = (greeting: string): string => `  world:
    count: 2
    tasks:
      server:
        cmd: 'touch ready; exec sleep 1000'
        cpus: 0.1
        memory: 16
        env: { GREETING: ${greeting} }
        readiness-check: { cmd: 'test -f ready', interval: 0.1 }
`;
  const yaml = (greeting: string): string => helloYaml({ count: 2 }).replace('plans:\n  deploy:\n    strategy: serial\n    phases:\n      hello-deploy: { pod: hello, strategy: serial }\n', '') + world(greeting);
  const path = spec(c.dir, yaml('one'));
  const s = await startScheduler(t, { master: c.master.address, spec: path, flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'first deploy');
  const before = new Map((await pods(s)).map((x) => [x.name, x.id]));
  const firstTarget = (await request(`${s.url}/v1/configurations/targetId`)).json;

  writeFileSync(path, yaml('two'));
  s.daemon.signal('SIGHUP');
  await eventually(async () => ((await request(`${s.url}/v1/configurations/targetId`)).json !== firstTarget ? true : undefined), undefined, 100, 'a new target');
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE' && Object.keys(steps(x)).length === 4, 'deploy of the change');
  const after = new Map((await pods(s)).map((x) => [x.name, x.id]));
  // hello did not change: same tasks. world changed: new tasks.
  assert.equal(after.get('hello-0-server'), before.get('hello-0-server'));
  assert.equal(after.get('hello-1-server'), before.get('hello-1-server'));
  assert.notEqual(after.get('world-0-server'), before.get('world-0-server'));
  assert.notEqual(after.get('world-1-server'), before.get('world-1-server'));
  // world-0 was relaunched before world-1 (serial phase, plan order).
  const launches = s.daemon.records.filter((r) => r.msg === 'launching' && String(r['step']).startsWith('world')).map((r) => String(r['step']));
  assert.deepEqual(launches.slice(-2), ['world-0:[server]', 'world-1:[server]']);

  // A spec that may not become the target (count shrinks without allow-decommission) leaves the target alone and shows on the plan.
  writeFileSync(path, yaml('two').replace('count: 2\n    tasks', 'count: 1\n    tasks'));
  s.daemon.signal('SIGHUP');
  const refused = await waitPlan(s, 'deploy', (x) => x.status === 'ERROR', 'deploy ERROR with the refused spec');
  assert.match(refused.errors.join('\n'), /count/);
  assert.equal((await request(`${s.url}/v1/plans/deploy`)).status, 417);
  assert.equal((await pods(s)).length, 4);
});

test('recovery: a task killed with kill -9 is relaunched in place with back-off; pod replace moves it; count shrink decommissions', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const path = spec(c.dir, helloYaml({ count: 2, allowDecommission: true }));
  const s = await startScheduler(t, { master: c.master.address, spec: path, flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const first = (await pods(s)).find((x) => x.name === 'hello-0-server');
  assert.ok(first);
  // The task's pid, as its agent logged it when the task started running.
  const pid = Number(c.agents.flatMap((a) => a.daemon.records).find((r) => r.msg === 'task running' && r['taskId'] === first.id)?.['pid']);
  assert.ok(pid > 0, 'the agent logs the pid of the task it launched');
  process.kill(pid, 'SIGKILL');

  const recovery = await waitPlan(s, 'recovery', (x) => x.status === 'COMPLETE' && x.phases.length === 1, 'recovery of hello-0');
  assert.equal(recovery.phases[0]?.name, 'hello-0:[server]');
  const relaunched = await eventually(async () => (await pods(s)).find((x) => x.name === 'hello-0-server' && x.id !== first.id && x.ready === true), undefined, 100, 'hello-0 relaunched and ready');
  assert.equal(relaunched.hostname, first.hostname, 'relaunched in place');

  // replace: relaunched on the other agent.
  const r = await request(`${s.url}/v1/pod/hello-0/replace`, 'POST');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { pod: 'hello-0', tasks: ['hello-0-server'] });
  const moved = await eventually(async () => (await pods(s)).find((x) => x.name === 'hello-0-server' && x.id !== relaunched.id && x.ready === true), undefined, 100, 'hello-0 replaced');
  assert.notEqual(moved.hostname, first.hostname, 'replace relaunches elsewhere');
  assert.equal((await request(`${s.url}/v1/pod/hello-9/replace`, 'POST')).status, 404);

  // count 2 -> 1 with allow-decommission: hello-1 is killed and forgotten.
  writeFileSync(path, helloYaml({ count: 1, allowDecommission: true }));
  s.daemon.signal('SIGHUP');
  await waitPlan(s, 'decommission', (x) => x.status === 'COMPLETE', 'decommission of hello-1');
  await eventually(async () => ((await pods(s)).map((x) => x.name).join() === 'hello-0-server' ? true : undefined), undefined, 100, 'only hello-0 left');
  assert.deepEqual((await request(`${s.url}/v1/pod`)).json, ['hello-0']);
});

test('a scheduler restarted mid-rollout takes its tasks back and keeps the operator\'s overrides', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const workDir = tempDir(t, 'drydock-scheduler-state-');
  const path = spec(c.dir, helloYaml({ count: 3, strategy: 'serial-canary' }));
  const opts = { master: c.master.address, spec: path, workDir, flags: SCHEDULER_FLAGS };
  let s = await startScheduler(t, opts);
  const firstRun = s;
  await waitPlan(s, 'deploy', (x) => x.status === 'WAITING', 'canary');
  assert.equal((await request(`${s.url}/v1/plans/deploy/continue?phase=hello-deploy`, 'POST')).status, 200);
  await waitPlan(s, 'deploy', (x) => steps(x)['hello-0:[server]'] === 'COMPLETE', 'hello-0 deployed');
  // The operator pauses the rollout, then the scheduler restarts.
  assert.equal((await request(`${s.url}/v1/plans/deploy/interrupt`, 'POST')).status, 200);
  const before = await pods(s);
  await s.daemon.stop();

  s = await startScheduler(t, opts);
  const p = await waitPlan(s, 'deploy', (x) => steps(x)['hello-0:[server]'] === 'COMPLETE', 'the rebuilt plan');
  assert.equal(p.status, 'WAITING', 'still paused after the restart');
  assert.equal(steps(p)['hello-1:[server]'], 'WAITING', 'the second canary step still waits');
  // The restarted scheduler re-subscribed with the same framework id and kept the running task.
  const after = await eventually(async () => {
    const x = await pods(s);
    return x.length === 1 && x[0]?.status === 'RUNNING' ? x : undefined;
  }, undefined, 100, 'hello-0 reconciled');
  assert.equal(after[0]?.id, before[0]?.id);
  const sub = await s.daemon.waitForMsg('subscribed');
  assert.equal(sub['frameworkId'], firstRun.daemon.records.find((r) => r.msg === 'subscribed')?.['frameworkId']);
  // The plan stays put: nothing new launches while it is interrupted, though offers come (the
  // restarted scheduler has held and declined one: it looked and launched nothing).
  const counter = async (name: string): Promise<number> => Number(new RegExp(`^drydock_scheduler_${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(await (await fetch(`${s.url}/metrics`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) })).text())?.[1] ?? NaN);
  await eventually(async () => ((await counter('offers_declined_total')) >= 1 ? true : undefined), undefined, 50, 'an offer declined by the restarted scheduler');
  assert.equal(await counter('tasks_launched_total'), 0);
  assert.equal((await pods(s)).length, 1);
  // continue (plan level) releases the plan; the next continue the canary's second step.
  assert.equal((await request(`${s.url}/v1/plans/deploy/continue`, 'POST')).status, 200);
  assert.equal((await request(`${s.url}/v1/plans/deploy/continue`, 'POST')).status, 200);
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy finished after the restart');
});

/** The pid of a task's process, as its agent logged it when the task started running. */
function pidOf(c: Cluster, taskId: string | undefined): number {
  return Number(c.agents.flatMap((a) => a.daemon.records).find((r) => r.msg === 'task running' && r['taskId'] === taskId)?.['pid']);
}

/**
 * The task of each name, by name: a task other than the one `old` names wins (a replaced task
 * shows in the pod's status until it has stopped).
 */
async function currentIds(s: SchedulerHandle, old: ReadonlyMap<string, string | TaskEntry | undefined> = new Map()): Promise<Map<string, TaskEntry>> {
  const oldId = (name: string): string | undefined => {
    const o = old.get(name);
    return typeof o === 'string' ? o : o?.id;
  };
  const out = new Map<string, TaskEntry>();
  for (const x of await pods(s)) if (!out.has(x.name) || out.get(x.name)?.id === oldId(x.name)) out.set(x.name, x);
  return out;
}

test('restart of a COMPLETE deploy step relaunches its pod: the old process stops, a new task runs, the plan is COMPLETE only once it is ready; with a failing readiness check it stays STARTED and forceComplete answers 200', async (t) => {
  const c = await cluster(t, ['agent-a']);
  const gate = tempDir(t, 'drydock-gate-');
  for (const n of ['hello-0-server', 'hello-1-server']) writeFileSync(join(gate, n), '');
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 2, gate })), flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const first = new Map((await pods(s)).map((x) => [x.name, x.id]));
  const firstPid = pidOf(c, first.get('hello-0-server'));
  assert.ok(firstPid > 0, 'the agent logs the pid of the task it launched');
  const restart = `${s.url}/v1/plans/deploy/restart?phase=hello-deploy&step=${encodeURIComponent('hello-0:[server]')}`;

  // hello-0's readiness check fails from now on: the relaunched task can never be ready.
  unlinkSync(join(gate, 'hello-0-server'));
  const r = await request(restart, 'POST');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { message: 'Received cmd: restart for Plan: deploy, Phase: hello-deploy, Step: hello-0:[server]' });
  await eventually(() => (alive(firstPid) ? undefined : true), undefined, 50, 'the old hello-0 process stopped');
  const second = await eventually(async () => (await pods(s)).find((x) => x.name === 'hello-0-server' && x.id !== first.get('hello-0-server') && x.status === 'RUNNING'), undefined, 100, 'a new hello-0 task RUNNING');
  // The agent has run the new task's readiness check and seen it fail.
  await eventually(() => c.agents[0]?.daemon.records.find((x) => x.msg === 'check status changed' && x['taskId'] === second.id && (x['checkStatus'] as { command?: { exit_code?: number } }).command?.exit_code === 1), undefined, 50, 'a failed readiness check of the new task');
  const held = await waitPlan(s, 'deploy', (x) => steps(x)['hello-0:[server]'] === 'STARTED', 'hello-0 STARTED: running, not ready');
  assert.notEqual(held.status, 'COMPLETE');
  assert.equal((await request(`${s.url}/v1/plans/deploy`)).status, 202, 'a plan with work left answers 202');
  assert.equal(steps(held)['hello-1:[server]'], 'COMPLETE');
  assert.equal((await currentIds(s)).get('hello-1-server')?.id, first.get('hello-1-server'), 'only the restarted step\'s pod is relaunched');
  const forced = await request(`${s.url}/v1/plans/deploy/forceComplete?phase=hello-deploy&step=${encodeURIComponent('hello-0:[server]')}`, 'POST');
  assert.equal(forced.status, 200, `forceComplete of a step that is not COMPLETE: ${forced.text}`);
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy COMPLETE by force');

  // With the check passing again, another restart: the plan is COMPLETE only through a third task, ready.
  writeFileSync(join(gate, 'hello-0-server'), '');
  const cli = await cliFinished(spawnCli(t, ['plan', 'restart', 'deploy', '--phase', 'hello-deploy', '--step', 'hello-0:[server]', `--scheduler=${s.address}`]));
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, /Received cmd: restart for Plan: deploy, Phase: hello-deploy, Step: hello-0:\[server\]/);
  const third = await eventually(async () => {
    const p = await plan(s, 'deploy');
    if (p.status !== 'COMPLETE') return undefined;
    // Read after the plan: the task that made it COMPLETE must show, new and ready.
    const now = (await pods(s)).filter((x) => x.name === 'hello-0-server' && x.status === 'RUNNING');
    assert.equal(now.length, 1, `one hello-0 task runs once the plan is COMPLETE: ${JSON.stringify(now)}`);
    assert.ok(now[0]?.id !== first.get('hello-0-server') && now[0]?.id !== second.id, `plan COMPLETE with an old task: ${JSON.stringify(now)}`);
    assert.equal(now[0]?.ready, true);
    return now[0];
  }, undefined, 50, 'deploy COMPLETE through a new hello-0 task');
  assert.ok(!alive(pidOf(c, second.id)), 'the second process is gone too');
  assert.ok(pidOf(c, third.id) > 0);
  const kills = s.daemon.records.filter((x) => x.msg === 'killing task').map((x) => x['taskId']);
  assert.ok(kills.includes(first.get('hello-0-server')) && kills.includes(second.id), 'each relaunch killed the task it replaced');
});

test('restart of a phase and of the plan relaunches every pod, in the phase\'s order, and the plan is COMPLETE only once all are ready', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const gate = tempDir(t, 'drydock-gate-');
  const names = ['hello-0-server', 'hello-1-server', 'hello-2-server'];
  for (const n of names) writeFileSync(join(gate, n), '');
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 3, gate })), flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const first = new Map((await pods(s)).map((x) => [x.name, x.id]));

  // Phase restart, hello-2 unable to get ready: the serial phase relaunches hello-0, then hello-1, then hello-2, and waits there.
  unlinkSync(join(gate, 'hello-2-server'));
  const mark = s.daemon.records.length;
  const r = await request(`${s.url}/v1/plans/deploy/restart?phase=hello-deploy`, 'POST');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { message: 'Received cmd: restart for Plan: deploy, Phase: hello-deploy, Step: null' });
  const held = await waitPlan(s, 'deploy', (x) => steps(x)['hello-2:[server]'] === 'STARTED', 'hello-0 and hello-1 relaunched, hello-2 running but not ready', 30_000);
  assert.deepEqual(steps(held), { 'hello-0:[server]': 'COMPLETE', 'hello-1:[server]': 'COMPLETE', 'hello-2:[server]': 'STARTED' });
  assert.notEqual(held.status, 'COMPLETE');
  const launched = s.daemon.records.slice(mark).filter((x) => x.msg === 'launching').map((x) => String(x['step']));
  assert.deepEqual(launched, ['hello-0:[server]', 'hello-1:[server]', 'hello-2:[server]']);
  writeFileSync(join(gate, 'hello-2-server'), '');
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy COMPLETE after the phase restart');
  const second = await currentIds(s, first);
  for (const n of names) {
    assert.notEqual(second.get(n)?.id, first.get(n), `${n} relaunched by the phase restart`);
    assert.equal(second.get(n)?.ready, true);
  }

  // Plan restart: every pod again; COMPLETE only with three new tasks, all ready.
  assert.equal((await request(`${s.url}/v1/plans/deploy/restart`, 'POST')).status, 200);
  await eventually(async () => {
    const p = await plan(s, 'deploy');
    if (p.status !== 'COMPLETE') return undefined;
    const now = await currentIds(s, second);
    for (const n of names) {
      assert.notEqual(now.get(n)?.id, second.get(n)?.id, `plan COMPLETE while ${n} still runs its old task`);
      assert.equal(now.get(n)?.ready, true, `${n} ready`);
    }
    return true;
  }, undefined, 50, 'deploy COMPLETE through three new tasks');
});

test('a restart outlives a scheduler restart: stop (every step restarted, plan held) is still owed after it, and start relaunches every pod; a restarted recovery step relaunches its pod in place', async (t) => {
  const c = await cluster(t, ['agent-a']);
  const workDir = tempDir(t, 'drydock-scheduler-state-');
  const opts = { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 2 })), workDir, flags: SCHEDULER_FLAGS };
  let s = await startScheduler(t, opts);
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const first = new Map((await pods(s)).map((x) => [x.name, x.id]));
  assert.equal((await request(`${s.url}/v1/plans/deploy/stop`, 'POST')).status, 200);
  const stopped = await waitPlan(s, 'deploy', (x) => x.status === 'WAITING', 'deploy held with every step to run again');
  assert.deepEqual(Object.values(steps(stopped)), ['PENDING', 'PENDING']);
  await s.daemon.stop();

  s = await startScheduler(t, opts);
  const rebuilt = await waitPlan(s, 'deploy', (x) => x.phases.length > 0, 'the rebuilt plan');
  assert.equal(rebuilt.status, 'WAITING', `the stop is still owed: ${JSON.stringify(rebuilt)}`);
  assert.deepEqual(Object.values(steps(rebuilt)), ['PENDING', 'PENDING']);
  // Nothing was relaunched while the plan is held.
  const held = await eventually(async () => {
    const x = await pods(s);
    return x.length === 2 && x.every((y) => y.status === 'RUNNING') ? x : undefined;
  }, undefined, 100, 'both tasks reconciled');
  assert.deepEqual(held.map((x) => x.id).sort(), [...first.values()].sort());
  assert.equal((await request(`${s.url}/v1/plans/deploy/start`, 'POST', '{}')).status, 200);
  await eventually(async () => {
    const p = await plan(s, 'deploy');
    if (p.status !== 'COMPLETE') return undefined;
    const now = await currentIds(s, first);
    for (const [n, id] of first) assert.notEqual(now.get(n)?.id, id, `plan COMPLETE while ${n} still runs its old task`);
    return true;
  }, undefined, 50, 'deploy COMPLETE through new tasks');

  // A recovery step: kill -9 hello-0, recovery relaunches it; a restart of that COMPLETE step relaunches it again, in place.
  const before = await currentIds(s);
  const victim = before.get('hello-0-server');
  process.kill(pidOf(c, victim?.id), 'SIGKILL');
  const recovered = await waitPlan(s, 'recovery', (x) => x.status === 'COMPLETE' && x.phases.length === 1, 'recovery of hello-0', 20_000);
  const recoveredId = await eventually(async () => {
    const x = (await pods(s)).find((y) => y.name === 'hello-0-server' && y.id !== victim?.id && y.ready === true);
    return x?.id;
  }, undefined, 100, 'hello-0 recovered');
  const name = recovered.phases[0]?.name ?? '';
  const r = await request(`${s.url}/v1/plans/recovery/restart?phase=${encodeURIComponent(name)}&step=${encodeURIComponent(name)}`, 'POST');
  assert.equal(r.status, 200, r.text);
  const again = await eventually(async () => {
    const p = await plan(s, 'recovery');
    if (p.status !== 'COMPLETE') return undefined;
    const x = (await pods(s)).filter((y) => y.name === 'hello-0-server' && y.status === 'RUNNING');
    assert.equal(x.length, 1);
    assert.notEqual(x[0]?.id, recoveredId, 'recovery COMPLETE while the recovered task still runs');
    assert.equal(x[0]?.ready, true);
    return x[0];
  }, undefined, 50, 'recovery COMPLETE through a relaunched hello-0');
  assert.equal(again.hostname, victim?.hostname, 'relaunched in place');
});

/** Schedules a maintenance window on one machine, starting now. */
async function scheduleMaintenance(m: MasterHandle, hostname: string, ip = '127.0.0.1'): Promise<void> {
  const now = BigInt(Date.now()) * 1_000_000n;
  const body = `{"windows":[{"machine_ids":[{"hostname":"${hostname}","ip":"${ip}"}],"unavailability":{"start":{"nanoseconds":${now}},"duration":{"nanoseconds":3600000000000}}}]}`;
  const r = await request(`${m.url}/maintenance/schedule`, 'POST', body);
  assert.equal(r.status, 200, r.text);
}

async function maintenanceAnswer(m: MasterHandle, hostname: string): Promise<string | undefined> {
  const st = (await request(`${m.url}/maintenance/status`)).json as { draining_machines?: Array<{ id: { hostname: string }; statuses?: Array<{ status: string }> }> };
  return st.draining_machines?.find((d) => d.id.hostname === hostname)?.statuses?.[0]?.status;
}

test('maintenance: pods leave a machine before its window, replacement first, and the inverse offer is accepted', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b', 'agent-c']);
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 3 })), flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const tasks = await pods(s);
  const host = tasks[0]?.hostname ?? '';
  const onHost = tasks.filter((x) => x.hostname === host).length;
  assert.ok(onHost >= 1);

  // Watch the ready count while the machine is vacated: it must never drop below 3.
  let minReady = Infinity;
  let watching = true;
  const watcher = (async () => {
    for (let i = 0; watching && i < 400; i++) {
      const ready = (await pods(s)).filter((x) => x.status === 'RUNNING' && x.ready === true).length;
      minReady = Math.min(minReady, ready);
      await new Promise((res) => setTimeout(res, 25));
    }
  })();
  await scheduleMaintenance(c.master, host);
  const p = await waitPlan(s, 'maintenance', (x) => x.status === 'COMPLETE' && x.phases.length === 1, 'pods moved off the machine');
  assert.equal(p.phases[0]?.name, host);
  assert.equal(p.phases[0]?.steps.length, onHost);
  await eventually(async () => ((await maintenanceAnswer(c.master, host)) === 'ACCEPT' ? true : undefined), undefined, 100, 'inverse offer ACCEPT');
  watching = false;
  await watcher;
  const now = await pods(s);
  assert.equal(now.filter((x) => x.hostname === host).length, 0, 'nothing of the service left on the machine');
  assert.equal(now.filter((x) => x.status === 'RUNNING' && x.ready === true).length, 3);
  assert.ok(minReady >= 3, `ready pods dropped to ${minReady} during the move`);
});

test('maintenance: with no room elsewhere the inverse offer is declined and the step says why', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 2, placement: 'hostname:UNIQUE' })), flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  await scheduleMaintenance(c.master, 'agent-a');
  await eventually(async () => ((await maintenanceAnswer(c.master, 'agent-a')) === 'DECLINE' ? true : undefined), undefined, 100, 'inverse offer DECLINE');
  const p = await plan(s, 'maintenance');
  const step = p.phases[0]?.steps[0];
  assert.equal(step?.status, 'PENDING');
  assert.match(step?.message ?? '', /cannot move: no offer fits .*hostname:UNIQUE rules out agent-b/);
  // The pod stays where it is, running.
  assert.ok((await pods(s)).some((x) => x.hostname === 'agent-a' && x.status === 'RUNNING'));
});

test('bad input: the API answers 4xx with a reason and never 5xx; a bad spec or flag stops the start with a clear error', async (t) => {
  const master = await startMaster(t);
  const dir = tempDir(t, 'drydock-service-');
  const s = await startScheduler(t, { master: master.address, spec: spec(dir, helloYaml({ count: 1 })), flags: SCHEDULER_FLAGS });
  const cases: Array<[string, string, string | undefined, number, RegExp?]> = [
    // A target that cannot be read is refused before routing (shared/paths.ts), saying why.
    ['GET', '/v1/plans/%ZZ', undefined, 400, /^Bad request target: .*not followed by two hex digits/],
    ['GET', '/v1/plans/deploy%2Fcontinue', undefined, 400, /^Bad request target: .*decodes to a '\/'/],
    ['GET', '/v1/plans/nope', undefined, 404, /^Plan nope not found$/],
    ['POST', '/v1/plans', undefined, 405],
    ['GET', '/v1/plans/deploy/continue', undefined, 405],
    ['POST', '/v1/plans/deploy/start', '{"not a name":"x"}', 400, /not a valid environment variable name/],
    ['POST', '/v1/plans/deploy/start', '{"A":{"nested":1}}', 400, /must be a string/],
    ['POST', '/v1/plans/deploy/start', '[', 400],
    ['POST', '/v1/plans/deploy/start', '['.repeat(100_000), 400],
    ['POST', '/v1/plans/deploy/start', `{"A":"${'x'.repeat(2 << 20)}"}`, 413],
    ['POST', '/v1/plans/deploy/forceComplete?step=x', undefined, 400, /Missing phase/],
    ['POST', '/v1/plans/deploy/restart?phase=nope', undefined, 404, /^Phase nope not found$/],
    ['POST', '/v1/plans/deploy/restart?phase=hello-deploy&step=nope', undefined, 404, /^Step nope not found$/],
    ['GET', '/v1/pod/%E0%A4%A/status', undefined, 400, /^Bad request target: /],
    ['GET', '/v1/pod/%E0%A4/status', undefined, 400, /^Bad request target: .*does not decode to UTF-8/],
    ['GET', '/v1/pod/hello-7/status', undefined, 404, /^Pod hello-7 not found$/],
    ['POST', '/v1/pod/hello-0/status', undefined, 405],
    ['PUT', '/v1/pod/hello-0/restart', undefined, 405],
    ['POST', '/v1/pod/__proto__/replace', undefined, 404],
    ['GET', '/v1/configurations/nope', undefined, 404],
    ['DELETE', '/v1/health', undefined, 405],
    ['GET', '/v1/nothing', undefined, 404],
  ];
  for (const [method, path, body, status, text] of cases) {
    const r = await request(`${s.url}${path}`, method, body);
    assert.equal(r.status, status, `${method} ${path}: ${r.text.slice(0, 200)}`);
    if (text !== undefined) assert.match(r.text, text, `${method} ${path}`);
  }
  assert.equal((await request(`${s.url}/v1/plans`)).status, 200, 'still serving');

  // Starting with a spec that cannot run, or a bad flag: exit 1 with what is wrong, nothing listens.
  const bad = spec(dir, 'name: hello\npods:\n  hello:\n    count: -1\n    tasks: {}\n', 'bad.yml');
  for (const [args, expected] of [
    [[`--spec=${bad}`], /pods\.hello\.count/],
    [[`--spec=${join(dir, 'missing.yml')}`], /cannot read the spec file/],
    [[], /--spec is required/],
    [[`--spec=${bad}`, '--port=70000'], /port/],
  ] as const) {
    const d = new Daemon(SCHEDULER_BIN, [`--master=${master.address}`, `--work_dir=${join(dir, 'state')}`, ...args]);
    t.after(() => d.stop());
    const exit = await d.exited;
    assert.equal(exit.code, 1, `${args.join(' ')}: ${d.stderr}`);
    assert.match(d.stderr, expected);
  }
});

test('an agent drained without a window: its pods are relaunched elsewhere by the maintenance plan, not in place', async (t) => {
  const c = await cluster(t, ['agent-a', 'agent-b']);
  const s = await startScheduler(t, { master: c.master.address, spec: spec(c.dir, helloYaml({ count: 2 })), flags: SCHEDULER_FLAGS });
  await waitPlan(s, 'deploy', (x) => x.status === 'COMPLETE', 'deploy');
  const host = (await pods(s))[0]?.hostname ?? '';
  const agent = c.agents[['agent-a', 'agent-b'].indexOf(host)];
  assert.ok(agent?.agentId);
  const r = await request(`${c.master.url}/api/v1`, 'POST', JSON.stringify({ type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agent.agentId } } }));
  assert.equal(r.status, 200, r.text);
  const p = await waitPlan(s, 'maintenance', (x) => x.status === 'COMPLETE' && x.phases.length === 1, 'pods relaunched off the drained agent');
  assert.equal(p.phases[0]?.name, host);
  const now = await eventually(async () => {
    const x = await pods(s);
    return x.length === 2 && x.every((y) => y.ready === true && y.hostname !== host) ? x : undefined;
  }, undefined, 100, 'both pods ready elsewhere');
  assert.equal(now.length, 2);
  assert.equal((await plan(s, 'recovery')).phases.length, 0, 'recovery did not try to relaunch them in place');
});

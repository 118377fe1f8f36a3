/**
 * The service's decisions with a fake at its seam (the Mesos port) and a manual clock, over a
 * real state store in a temp dir: what it launches on which offer, when a readiness check
 * completes a step, the back-off of a crash-looping pod, and when an inverse offer is declined
 * (only after a pod there has found no room for a while) or accepted.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import { silentLogger } from '../../shared/log.js';
import type { TaskInfo, TaskState, TaskStatus } from '../../shared/mesos.js';
import { Service, type MesosPort } from '../../scheduler/service.js';
import { restartElement } from '../../shared/plans/commands.js';
import type { PlanOverrides } from '../../shared/plans/overrides.js';
import type { Plan } from '../../shared/plans/plan.js';
import { parseServiceSpec } from '../../scheduler/spec.js';
import { StateStore } from '../../scheduler/state.js';
import { tempDir } from '../helpers/daemons.js';

class FakeMesos implements MesosPort {
  readonly launched: Array<{ offerId: string; tasks: TaskInfo[] }> = [];
  readonly killed: string[] = [];
  readonly declinedOffers: string[] = [];
  readonly inverse: Array<['ACCEPT' | 'DECLINE', string[]]> = [];
  async launch(offerId: string, tasks: readonly TaskInfo[]): Promise<void> { this.launched.push({ offerId, tasks: [...tasks] }); }
  async decline(ids: readonly string[]): Promise<void> { this.declinedOffers.push(...ids); }
  async kill(taskId: string): Promise<void> { this.killed.push(taskId); }
  async acknowledge(): Promise<void> {}
  async reconcile(): Promise<void> {}
  async revive(): Promise<void> {}
  async acceptInverseOffers(ids: readonly string[]): Promise<void> { this.inverse.push(['ACCEPT', [...ids]]); }
  async declineInverseOffers(ids: readonly string[]): Promise<void> { this.inverse.push(['DECLINE', [...ids]]); }
}

/** Lets the service's coalesced cycle run. */
const tick = (): Promise<void> => new Promise((r) => setImmediate(() => setImmediate(r)));

const YAML = `name: hello
pods:
  hello:
    count: 2
    tasks:
      server:
        cmd: exec sleep 1000
        cpus: 0.5
        memory: 64
        readiness-check: { cmd: test -f ready, interval: 1 }
`;

function setup(t: TestContext, yaml = YAML): { service: Service; mesos: FakeMesos; clock: ManualClock } {
  const parsed = parseServiceSpec(yaml);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const store = StateStore.open(tempDir(t, 'drydock-service-unit-'));
  t.after(() => store.close());
  const clock = new ManualClock();
  const service = new Service(
    { store, clock, log: silentLogger, frameworkName: 'hello', backoffInitialMs: 1_000, backoffMaxMs: 8_000, offerHoldMs: 0, configOf: () => parsed.spec },
    parsed.spec,
    'cfg-1',
  );
  t.after(() => service.close());
  const mesos = new FakeMesos();
  service.onSubscribed(mesos);
  return { service, mesos, clock };
}

let offerSeq = 0;
function offer(agent: string, cpus = 2, mem = 1024, unavailableFromNs?: bigint): Record<string, unknown> {
  const o: Record<string, unknown> = {
    id: { value: `offer-${++offerSeq}` }, agent_id: { value: agent }, hostname: agent,
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: cpus } }, { name: 'mem', type: 'SCALAR', scalar: { value: mem } }],
  };
  if (unavailableFromNs !== undefined) o['unavailability'] = { start: { nanoseconds: unavailableFromNs } };
  return o;
}

function update(info: TaskInfo, state: TaskState, extra: Partial<TaskStatus> & Record<string, unknown> = {}): TaskStatus {
  return { task_id: info.task_id, agent_id: info.agent_id, state, source: 'SOURCE_EXECUTOR', timestamp: 0, ...extra } as TaskStatus;
}

const ready = (info: TaskInfo): TaskStatus => update(info, 'TASK_RUNNING', { check_status: { type: 'COMMAND', command: { exit_code: 0 } } });
const stepStatuses = (s: Service, plan: string): string[] => s.plans().find((p) => p.name === plan)?.steps().map((x) => `${x.name} ${x.status()}`) ?? [];

test('deploy: one instance at a time, each step COMPLETE only once its readiness check passes', async (t) => {
  const { service, mesos } = setup(t);
  service.onOffers([offer('a')]);
  await tick();
  assert.equal(mesos.launched.length, 1, 'serial: one launch');
  const first = mesos.launched[0]?.tasks[0] as TaskInfo;
  assert.equal(first.name, 'hello-0-server');
  service.onUpdate(update(first, 'TASK_RUNNING'));
  await tick();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] STARTED', 'hello-1:[server] PENDING']);
  service.onUpdate(update(first, 'TASK_RUNNING', { check_status: { type: 'COMMAND', command: { exit_code: 1 } } }));
  await tick();
  assert.equal(stepStatuses(service, 'deploy')[0], 'hello-0:[server] STARTED', 'a failing check keeps the step STARTED');
  service.onUpdate(ready(first));
  service.onOffers([offer('a', 1.5, 960)]);
  await tick();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] COMPLETE', 'hello-1:[server] STARTING']);
  assert.equal(mesos.launched[1]?.tasks[0]?.name, 'hello-1-server');
});

test('recovery: a crash loop backs off 0, 1, 2, 4 s, and a task that outlived the longest back-off starts afresh', async (t) => {
  const { service, mesos, clock } = setup(t, YAML.replace('count: 2', 'count: 1'));
  const launchReady = async (): Promise<TaskInfo> => {
    service.onOffers([offer('a')]);
    await tick();
    const info = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
    service.onUpdate(ready(info));
    await tick();
    return info;
  };
  let info = await launchReady();
  assert.equal(service.plans().find((p) => p.name === 'deploy')?.status(), 'COMPLETE');
  const gaps: number[] = [];
  for (let i = 0; i < 4; i++) {
    const launches = mesos.launched.length;
    service.onUpdate(update(info, 'TASK_FAILED'));
    await tick();
    let waited = 0;
    while (mesos.launched.length === launches && waited < 10_000) {
      service.onOffers([offer('a')]);
      await tick();
      if (mesos.launched.length > launches) break;
      clock.advance(250);
      waited += 250;
      await tick();
    }
    gaps.push(waited);
    info = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
    assert.equal(info.agent_id.value, 'a', 'relaunched in place');
    service.onUpdate(ready(info));
    await tick();
  }
  assert.deepEqual(gaps, [0, 1_000, 2_000, 4_000]);
  // Stable for longer than the longest back-off: the next failure relaunches at once.
  clock.advance(9_000);
  const launches = mesos.launched.length;
  service.onUpdate(update(info, 'TASK_FAILED'));
  service.onOffers([offer('a')]);
  await tick();
  assert.equal(mesos.launched.length, launches + 1);
});

test('maintenance: no room elsewhere is declined only after a while; once the pod has moved the inverse offer is accepted', async (t) => {
  const { service, mesos, clock } = setup(t, YAML.replace('count: 2', 'count: 1'));
  service.onOffers([offer('a')]);
  await tick();
  const old = mesos.launched[0]?.tasks[0] as TaskInfo;
  service.onUpdate(ready(old));
  await tick();

  service.onInverseOffers([{ id: { value: 'inv-1' }, agent_id: { value: 'a' }, url: { address: { hostname: 'a' } } }]);
  await tick();
  assert.deepEqual(mesos.inverse, [], 'no answer yet: no offer has been seen, so no room is not known');
  clock.advance(3_500);
  service.onOffers([offer('b', 0.1, 16)]); // too small
  await tick();
  assert.deepEqual(mesos.inverse, [['DECLINE', ['inv-1']]]);
  assert.match(stepStatuses(service, 'maintenance')[0] ?? '', /PENDING/);

  // Room appears: the replacement goes first, the old task is killed once the replacement is ready.
  service.onOffers([offer('c', 2, 1024, 10n ** 18n), offer('d')]);
  await tick();
  const replacement = mesos.launched[1]?.tasks[0] as TaskInfo;
  assert.equal(replacement.agent_id.value, 'd', 'an agent without a window is preferred');
  assert.deepEqual(mesos.killed, [], 'the old task runs until the replacement is ready');
  service.onUpdate(ready(replacement));
  await tick();
  assert.deepEqual(mesos.killed, [old.task_id.value]);
  service.onInverseOffers([{ id: { value: 'inv-2' }, agent_id: { value: 'a' } }]);
  await tick();
  assert.equal(mesos.inverse.length, 1, 'still holding a task there: no answer');
  service.onUpdate(update(old, 'TASK_KILLED'));
  await tick();
  assert.deepEqual(mesos.inverse.at(-1), ['ACCEPT', ['inv-1', 'inv-2']]);
  assert.deepEqual(stepStatuses(service, 'maintenance'), ['hello-0:[server] COMPLETE']);
  assert.equal(stepStatuses(service, 'recovery').length, 0, 'the expected exit of the old task is not a failure');
});

test('custom steps and goals: an init task (FINISH) then the server in the same pod on the same agent; a custom plan waits for start and passes its parameters', async (t) => {
  const yaml = `name: app
pods:
  app:
    count: 1
    tasks:
      init: { goal: FINISH, cmd: "true", cpus: 0.1, memory: 16 }
      server: { cmd: exec sleep 1000, cpus: 0.1, memory: 16 }
      backup: { goal: ONCE, cmd: echo $TARGET, cpus: 0.1, memory: 16 }
plans:
  deploy:
    phases:
      app-deploy: { pod: app, steps: [ { default: [[init], [server]] } ] }
  backup:
    phases:
      save: { pod: app, steps: [ { default: [[backup]] } ] }
`;
  const { service, mesos } = setup(t, yaml);
  assert.equal(service.plans().find((p) => p.name === 'backup')?.status(), 'WAITING', 'a custom plan waits for start');
  service.onOffers([offer('a'), offer('b')]);
  await tick();
  assert.deepEqual(mesos.launched.flatMap((l) => l.tasks.map((x) => x.name)), ['app-0-init']);
  const init = mesos.launched[0]?.tasks[0] as TaskInfo;
  service.onUpdate(update(init, 'TASK_RUNNING'));
  await tick();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['app-0:[init] STARTED', 'app-0:[server] PENDING'], 'FINISH is not done while it runs');
  service.onUpdate(update(init, 'TASK_FINISHED'));
  service.onOffers([offer('b'), offer(init.agent_id.value)]);
  await tick();
  const server = mesos.launched[1]?.tasks[0] as TaskInfo;
  assert.equal(server.name, 'app-0-server');
  service.onUpdate(update(server, 'TASK_RUNNING'));
  await tick();
  assert.equal(service.plans().find((p) => p.name === 'deploy')?.status(), 'COMPLETE');
  assert.deepEqual(stepStatuses(service, 'recovery'), [], 'an init task that finished is not recovered');

  // start with parameters: the backup runs beside the server, on its agent, with TARGET set.
  const backup = service.plans().find((p) => p.name === 'backup');
  assert.ok(backup);
  const { startPlan } = await import('../../shared/plans/commands.js');
  assert.equal(startPlan(backup, { TARGET: 's3://bucket' }).kind, 'done');
  service.onOffers([offer('b'), offer(server.agent_id.value)]);
  await tick();
  const job = mesos.launched[2]?.tasks[0] as TaskInfo;
  assert.equal(job.name, 'app-0-backup');
  assert.equal(job.agent_id.value, server.agent_id.value, 'a pod lives on one agent');
  assert.equal(job.command?.environment?.variables.find((v) => v.name === 'TARGET')?.value, 's3://bucket');
  service.onUpdate(update(job, 'TASK_FINISHED'));
  await tick();
  assert.equal(backup.status(), 'COMPLETE');
});

/** A service over an existing store (a scheduler started again on its work dir), subscribed to its own fake. */
function serviceOn(t: TestContext, store: StateStore, yaml = YAML): { service: Service; mesos: FakeMesos } {
  const parsed = parseServiceSpec(yaml);
  assert.ok(parsed.ok, JSON.stringify(parsed));
  const service = new Service(
    { store, clock: new ManualClock(), log: silentLogger, frameworkName: 'hello', backoffInitialMs: 1_000, backoffMaxMs: 8_000, offerHoldMs: 0, configOf: () => parsed.spec },
    parsed.spec,
    'cfg-1',
  );
  t.after(() => service.close());
  const mesos = new FakeMesos();
  service.onSubscribed(mesos);
  return { service, mesos };
}

const planOf = (s: Service, name: string): Plan => {
  const p = s.plans().find((x) => x.name === name);
  assert.ok(p, name);
  return p;
};

test('restart: a COMPLETE step kills its task (PREPARED until it ended), launches anew (STARTING) and is COMPLETE only through the new task; the restart outlives the service', async (t) => {
  const yaml = YAML.replace('count: 2', 'count: 1');
  const store = StateStore.open(tempDir(t, 'drydock-service-unit-'));
  t.after(() => store.close());
  let { service, mesos } = serviceOn(t, store, yaml);
  const deployed = async (): Promise<TaskInfo> => {
    service.onOffers([offer('a')]);
    await tick();
    const info = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
    service.onUpdate(ready(info));
    await tick();
    return info;
  };
  const t1 = await deployed();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] COMPLETE']);
  const restart = async (plan: string, phase?: string, step?: string): Promise<void> => {
    assert.equal(restartElement(planOf(service, plan), phase, step).kind, 'done');
    service.saveOverrides(); // as the API does after a 200
    service.kick();
    await tick();
  };

  // Each row: an event, then what the step shows and what was sent.
  await restart('deploy', 'hello', 'hello-0:[server]');
  const rows: Array<{ what: string; event: () => void; step: string; killed: string[]; launches: number }> = [
    { what: 'restarted: the running task is killed first', event: () => {}, step: 'PREPARED', killed: [t1.task_id.value], launches: 1 },
    { what: 'an offer while it still runs: no launch beside it', event: () => service.onOffers([offer('a')]), step: 'PREPARED', killed: [t1.task_id.value], launches: 1 },
    { what: 'it ended', event: () => service.onUpdate(update(t1, 'TASK_KILLED')), step: 'PREPARED', killed: [t1.task_id.value], launches: 1 },
    { what: 'an offer: launched anew', event: () => service.onOffers([offer('a')]), step: 'STARTING', killed: [t1.task_id.value], launches: 2 },
  ];
  for (const row of rows) {
    row.event();
    await tick();
    assert.deepEqual([stepStatuses(service, 'deploy')[0], mesos.killed, mesos.launched.length], [`hello-0:[server] ${row.step}`, row.killed, row.launches], row.what);
  }
  const t2 = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
  assert.notEqual(t2.task_id.value, t1.task_id.value);
  service.onUpdate(update(t2, 'TASK_RUNNING', { check_status: { type: 'COMMAND', command: { exit_code: 1 } } }));
  await tick();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] STARTED'], 'running, its readiness check failing');
  assert.deepEqual(stepStatuses(service, 'recovery'), [], 'the killed task is the restart\'s doing, not a failure');
  service.onUpdate(ready(t2));
  await tick();
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] COMPLETE']);

  // Restarted again, and the scheduler stops before it acts: the next one still owes the relaunch.
  assert.equal(restartElement(planOf(service, 'deploy'), 'hello', 'hello-0:[server]').kind, 'done');
  service.saveOverrides();
  service.close();
  ({ service, mesos } = serviceOn(t, store, yaml));
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] PENDING'], 'rebuilt from a ready task, the step is still to rerun');
  await tick();
  assert.deepEqual(mesos.killed, [t2.task_id.value]);
  service.onUpdate(update(t2, 'TASK_KILLED'));
  const t3 = await deployed();
  assert.notEqual(t3.task_id.value, t2.task_id.value);
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] COMPLETE']);
  const owed = (store.overrides('deploy')?.value as PlanOverrides | undefined)?.steps['hello/hello-0:[server]'];
  assert.deepEqual(owed, { interrupted: false, forced: false }, 'nothing owed once relaunched');

  // A recovery step restarted, the scheduler stopping before it acts: it comes back and relaunches in place.
  service.onUpdate(update(t3, 'TASK_FAILED'));
  await tick();
  service.onOffers([offer('b'), offer('a')]);
  await tick();
  const t4 = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
  assert.equal(t4.agent_id.value, 'a', 'recovered in place');
  service.onUpdate(ready(t4));
  await tick();
  assert.deepEqual(stepStatuses(service, 'recovery'), ['hello-0:[server] COMPLETE']);
  assert.equal(restartElement(planOf(service, 'recovery'), 'hello-0:[server]', 'hello-0:[server]').kind, 'done');
  service.saveOverrides();
  service.close();
  ({ service, mesos } = serviceOn(t, store, yaml));
  assert.deepEqual(stepStatuses(service, 'recovery'), ['hello-0:[server] PENDING'], 'the restarted recovery step is back');
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] COMPLETE']);
  await tick();
  assert.deepEqual(mesos.killed, [t4.task_id.value]);
  service.onUpdate(update(t4, 'TASK_KILLED'));
  service.onOffers([offer('b'), offer('a')]);
  await tick();
  const t5 = mesos.launched.at(-1)?.tasks[0] as TaskInfo;
  assert.equal(t5.agent_id.value, 'a', 'relaunched in place');
  service.onUpdate(ready(t5));
  await tick();
  assert.deepEqual([...stepStatuses(service, 'recovery'), ...stepStatuses(service, 'deploy')], ['hello-0:[server] COMPLETE', 'hello-0:[server] COMPLETE']);

  // Restarted again, its kill sent before the stop: the next scheduler finds no task in service,
  // so deploy relaunches the pod and the recovery step is not brought back to fight it.
  await restart('recovery', 'hello-0:[server]', 'hello-0:[server]');
  assert.equal(mesos.killed.at(-1), t5.task_id.value);
  service.close();
  ({ service, mesos } = serviceOn(t, store, yaml));
  assert.deepEqual(stepStatuses(service, 'recovery'), []);
  assert.deepEqual(stepStatuses(service, 'deploy'), ['hello-0:[server] PENDING']);
  await tick();
  assert.deepEqual(mesos.killed, [t5.task_id.value], 'the kill is sent again (it may never have left)');
  service.onUpdate(update(t5, 'TASK_KILLED'));
  const t6 = await deployed();
  assert.deepEqual([...stepStatuses(service, 'recovery'), ...stepStatuses(service, 'deploy')], ['hello-0:[server] COMPLETE']);
  assert.equal(mesos.launched.length, 1, `one relaunch: ${t6.task_id.value}`);
});

test('restart of a move step: nothing of the pod left on the machine it vacated, so it completes at once and says so', async (t) => {
  const { service, mesos } = setup(t, YAML.replace('count: 2', 'count: 1'));
  service.onOffers([offer('a')]);
  await tick();
  const old = mesos.launched[0]?.tasks[0] as TaskInfo;
  service.onUpdate(ready(old));
  service.onInverseOffers([{ id: { value: 'inv-1' }, agent_id: { value: 'a' }, url: { address: { hostname: 'a' } } }]);
  service.onOffers([offer('d')]);
  await tick();
  const replacement = mesos.launched[1]?.tasks[0] as TaskInfo;
  service.onUpdate(ready(replacement));
  await tick();
  service.onUpdate(update(old, 'TASK_KILLED'));
  await tick();
  assert.deepEqual(stepStatuses(service, 'maintenance'), ['hello-0:[server] COMPLETE']);
  assert.equal(restartElement(planOf(service, 'maintenance'), 'a', 'hello-0:[server]').kind, 'done');
  service.kick();
  await tick();
  assert.deepEqual(stepStatuses(service, 'maintenance'), ['hello-0:[server] COMPLETE']);
  assert.match(planOf(service, 'maintenance').steps()[0]?.note ?? '', /nothing of hello-0 runs on the machine any more/);
  assert.equal(mesos.launched.length, 2, 'nothing relaunched');
  assert.deepEqual(mesos.killed, [old.task_id.value], 'and nothing killed');
});

/**
 * Maintenance plans end to end (issue 12): a real master and three real agents on loopback, with
 * distinct hostnames and rack attributes. A machine taken DOWN shuts its agent down (exit 0);
 * the test then restarts the agent once the machine is UP again, as `npm start`'s cluster would.
 * An agent with --down_retry_interval (as the systemd unit runs it) instead stays, and registers
 * again by itself once the machine is UP. Also: a master restart mid-plan resumes at
 * the step it was in, and a table of bad input (400/404/405/409, never 5xx). And: a framework
 * that declines the inverse offer (the wait says so, then the drain goes on; Drydock's event
 * stream, GET /drydock/v1/events, shows each change once), an on_down hook that fails (ERROR, the plan pauses, restart
 * goes on), a restart that runs a COMPLETE step's whole maintenance again and one refused with
 * its reason, and with etcd a kill -9 failover mid-plan. Hooks are the master's own
 * (--maintenance_hooks): each test that runs one gives its master a hooks file and names a hook.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { steadyText } from '../../master/plans/step.js';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, eventually, maintenanceHooks, startAgent, startMaster, tempDir, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
import { etcdMissing, startEtcd } from '../helpers/etcd.js';
import { EventStream, type Rec } from '../helpers/event-stream.js';
import { freePort } from '../helpers/ports.js';

interface Answer { status: number; text: string; json: unknown }

async function call(url: string, method: string, path: string, body?: string): Promise<Answer> {
  const res = await fetch(`${url}${path}`, { method, ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

interface MachineSpec { hostname: string; rack: string }

/**
 * Keeps an agent running per machine: when one exits (its machine went DOWN), waits until the
 * master says the machine is no longer DOWN, then starts a fresh agent with the same hostname.
 */
class Fleet {
  readonly exits: Array<{ hostname: string; code: number | null }> = [];
  readonly current = new Map<string, AgentHandle>();
  #stopped = false;

  constructor(readonly t: TestContext, readonly master: () => string, readonly masterUrl: () => string, readonly machines: readonly MachineSpec[]) {}

  async start(): Promise<void> {
    await Promise.all(this.machines.map((m) => this.#run(m)));
  }

  stop(): void {
    this.#stopped = true;
  }

  async #run(m: MachineSpec): Promise<void> {
    const a = await startAgent(this.t, { master: this.master(), hostname: m.hostname, flags: [`--attributes=rack:${m.rack}`], stopSignal: 'SIGUSR1' });
    this.current.set(m.hostname, a);
    void a.daemon.exited.then(async (exit) => {
      if (this.#stopped) return;
      this.exits.push({ hostname: m.hostname, code: exit.code });
      await eventually(async () => {
        const s = await call(this.masterUrl(), 'GET', '/maintenance/status').catch(() => undefined);
        if (s === undefined || s.status !== 200) return undefined;
        return s.text.includes(`"hostname":"${m.hostname}"`) && s.text.includes('down_machines') ? undefined : true;
      }, 60_000, 100, `${m.hostname} UP again`);
      if (!this.#stopped) await this.#run(m);
    });
  }
}

const MACHINES: MachineSpec[] = [
  { hostname: 'maint-a', rack: 'r1' },
  { hostname: 'maint-b', rack: 'r1' },
  { hostname: 'maint-c', rack: 'r2' },
];

async function planOf(url: string, name: string): Promise<{ status: number; plan: { status: string; phases: Array<{ name: string; status: string; steps: Array<{ name: string; status: string; message: string }> }> } }> {
  const r = await call(url, 'GET', `/v1/maintenance/plans/${name}`);
  assert.ok(r.status === 200 || r.status === 202 || r.status === 417, `GET plan: ${r.status} ${r.text}`);
  return { status: r.status, plan: r.json as never };
}

test('a two-rack plan takes every machine DRAINING -> DOWN -> UP and completes; agents come back', async (t) => {
  const m = await startMaster(t, { flags: maintenanceHooks(t, { down: { command: ['/bin/echo', 'down', '{hostname}'], timeout: '1mins' } }) });
  const fleet = new Fleet(t, () => m.address, () => m.url, MACHINES);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = [
    'name: racks',
    'machines: all',
    'group_by: rack',
    'strategy: serial',
    'phase_strategy: serial',
    'notice: 0',
    'window: 1hrs',
    'wait_for_frameworks: 1secs',
    'settle: 1secs',
    'up_when: agent_registered',
    'on_down: { hook: down, timeout: 30secs }',
    '',
  ].join('\n');
  const created = await call(m.url, 'POST', '/v1/maintenance/plans', spec);
  assert.equal(created.status, 200, created.text);
  assert.deepEqual(created.json, { message: 'created maintenance plan racks: 3 machines in 2 phases' });
  assert.deepEqual((await call(m.url, 'GET', '/v1/maintenance/plans')).json, ['racks']);

  const done = await eventually(async () => {
    const p = await planOf(m.url, 'racks');
    assert.notEqual(p.plan.status, 'ERROR', JSON.stringify(p.plan));
    return p.status === 200 ? p.plan : undefined;
  }, 90_000, 250, 'plan COMPLETE');
  assert.deepEqual(done.phases.map((p) => [p.name, p.steps.map((s) => s.name)]), [['r1', ['maint-a', 'maint-b']], ['r2', ['maint-c']]]);

  // Each machine went through the stages in order, one at a time (serial), and its agent exited 0 on DOWN.
  for (const h of ['maint-a', 'maint-b', 'maint-c']) {
    const stages: string[] = [];
    for (const stage of ['WAITING_FRAMEWORKS', 'DRAINING', 'DOWN', 'HOOK', 'UP', 'SETTLING', 'COMPLETE']) {
      await m.daemon.waitForLog((r) => r['msg'] === 'maintenance step moved' && String(r['step']).endsWith(`/${h}`) && (r['stages'] as string[]).includes(stage), undefined, `${h} ${stage}`);
      stages.push(stage);
    }
    assert.equal(stages.length, 7);
    await m.daemon.waitForLog((r) => r['msg'] === 'on_down ended' && String(r['step']).endsWith(`/${h}`) && r['status'] === 'succeeded', undefined, `${h} hook`);
  }
  assert.deepEqual(fleet.exits.map((e) => e.code), [0, 0, 0]);
  assert.deepEqual(fleet.exits.map((e) => e.hostname), ['maint-a', 'maint-b', 'maint-c']);
  // Everything is UP again and out of the schedule; the agents are back and active.
  assert.equal((await call(m.url, 'GET', '/maintenance/status')).text, '{}');
  assert.equal((await call(m.url, 'GET', '/maintenance/schedule')).text, '{}');
  const agents = await callApi(m.url, { type: 'GET_AGENTS' });
  const list = (agents.json as { get_agents: { agents: Array<{ active: boolean; agent_info: { hostname: string } }> } }).get_agents.agents;
  for (const h of ['maint-a', 'maint-b', 'maint-c']) assert.ok(list.some((a) => a.agent_info.hostname === h && a.active), `${h} active: ${agents.text}`);

  // A COMPLETE plan can be deleted.
  assert.equal((await call(m.url, 'DELETE', '/v1/maintenance/plans/racks')).status, 200);
  assert.deepEqual((await call(m.url, 'GET', '/v1/maintenance/plans')).json, []);
});

test('an agent with --down_retry_interval stays through DOWN: refused while DOWN, registered again with its id once UP, no restart', async (t) => {
  const m = await startMaster(t, { flags: maintenanceHooks(t, { pause: { command: ['/bin/sleep', '1'] } }) });
  const a = await startAgent(t, { master: m.address, hostname: 'stay-a', flags: ['--attributes=rack:r1', '--down_retry_interval=200ms'], stopSignal: 'SIGUSR1' });
  // The hook keeps the machine DOWN for a second: the agent tries to register meanwhile and is refused.
  const spec = JSON.stringify({ name: 'stay', machines: { hostnames: ['stay-a'] }, window: '1hrs', wait_for_frameworks: 0, settle: '1secs', up_when: 'agent_registered', on_down: { hook: 'pause', timeout: '30secs' } });
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);
  await eventually(async () => {
    const p = await planOf(m.url, 'stay');
    assert.notEqual(p.plan.status, 'ERROR', JSON.stringify(p.plan));
    return p.status === 200 ? true : undefined;
  }, 60_000, 250, 'plan COMPLETE');
  assert.ok(a.daemon.running, `the agent is still running: ${a.daemon.stderr.slice(-500)}`);
  const down = await a.daemon.waitForMsg('machine is DOWN: killing tasks, registering again until it is UP');
  assert.equal(down['retryMs'], 200);
  await m.daemon.waitForLog((r) => r['msg'] === 'agent refused' && r['reason'] === 'Machine is `DOWN`' && r['hostname'] === 'stay-a', undefined, 'a registration refused while DOWN');
  const back = await a.daemon.waitForMsg('machine is UP again: registered');
  assert.ok(Number(back['downForMs']) >= 1000, JSON.stringify(back));
  const registered = a.daemon.records.filter((r) => r.msg === 'registered');
  assert.deepEqual(registered.map((r) => r['agentId']), [a.agentId, a.agentId]);
  const agents = await callApi(m.url, { type: 'GET_AGENTS' });
  const list = (agents.json as { get_agents: { agents: Array<{ active: boolean; agent_info: { hostname: string; id: { value: string } } }> } }).get_agents.agents;
  assert.deepEqual(list.map((x) => [x.agent_info.hostname, x.agent_info.id.value, x.active]), [['stay-a', a.agentId, true]]);
});

test('a master restart mid-plan resumes at the step it was in (up_when: operator, then continue)', async (t) => {
  const workDir = tempDir(t, 'drydock-mplan-master-');
  const port = await freePort();
  let m: MasterHandle = await startMaster(t, { workDir, port });
  const fleet = new Fleet(t, () => m.address, () => m.url, [MACHINES[0] as MachineSpec]);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = JSON.stringify({ name: 'one', machines: { hostnames: ['maint-a'] }, window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs', up_when: 'operator' });
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);
  const waiting = await eventually(async () => {
    const p = await planOf(m.url, 'one');
    const step = p.plan.phases[0]?.steps[0];
    return step?.message.includes('waiting for the operator') === true ? step : undefined;
  }, undefined, 100, 'AWAITING_OPERATOR');
  assert.equal(waiting.status, 'STARTING');
  assert.match((await call(m.url, 'GET', '/maintenance/status')).text, /down_machines.*maint-a/);

  await m.daemon.stop(10_000, 'SIGTERM');
  m = await startMaster(t, { workDir, port });
  const after = await planOf(m.url, 'one');
  const step = after.plan.phases[0]?.steps[0];
  assert.equal(step?.status, 'STARTING', JSON.stringify(after.plan));
  assert.match(step?.message ?? '', /waiting for the operator/);
  assert.equal(after.status, 202);

  const cont = await call(m.url, 'POST', '/v1/maintenance/plans/one/continue');
  assert.equal(cont.status, 200, cont.text);
  await eventually(async () => ((await planOf(m.url, 'one')).status === 200 ? true : undefined), 60_000, 250, 'plan COMPLETE after restart');
  assert.equal((await call(m.url, 'GET', '/maintenance/status')).text, '{}');
  assert.deepEqual(fleet.exits.map((e) => e.code), [0]);
});

test('restart: refused while the step waits for the operator (409, the reason in the answer and the step); a COMPLETE step restarted runs the machine\'s whole maintenance again', { timeout: 300_000 }, async (t) => {
  const m = await startMaster(t);
  const fleet = new Fleet(t, () => m.address, () => m.url, [MACHINES[0] as MachineSpec]);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = JSON.stringify({ name: 'again', machines: { hostnames: ['maint-a'] }, window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs', up_when: 'operator' });
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);
  const awaiting = async (what: string): Promise<void> => {
    await eventually(async () => {
      const step = (await planOf(m.url, 'again')).plan.phases[0]?.steps[0];
      return step?.message.includes('waiting for the operator') === true ? step : undefined;
    }, undefined, 100, what);
  };
  await awaiting('AWAITING_OPERATOR');

  // Nothing to run again while it waits for the operator: refused, with the reason, and nothing changes.
  for (const path of ['/v1/maintenance/plans/again/restart?phase=all&step=maint-a', '/v1/maintenance/plans/again/restart']) {
    const r = await call(m.url, 'POST', path);
    assert.equal(r.status, 409, `${path}: ${r.text}`);
    assert.match(r.text, /^Restart refused: maint-a: it waits for the operator with the machine DOWN: continue the step to bring it UP/);
  }
  const refused = await eventually(async () => {
    const step = (await planOf(m.url, 'again')).plan.phases[0]?.steps[0];
    return step?.message.includes('restart refused: it waits for the operator') === true ? step : undefined;
  }, undefined, 100, 'the refusal in the step\'s message');
  assert.equal(refused.status, 'STARTING');
  assert.match(refused.message, /waiting for the operator: continue this step to bring the machine UP \(restart refused: /);
  assert.match((await call(m.url, 'GET', '/maintenance/status')).text, /down_machines.*maint-a/, 'still DOWN');
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans/again/continue')).status, 200);
  await eventually(async () => ((await planOf(m.url, 'again')).status === 200 ? true : undefined), 60_000, 250, 'plan COMPLETE');
  assert.deepEqual(fleet.exits.map((e) => e.code), [0]);

  // A COMPLETE step restarted: schedule, drain, DOWN again (its agent exits a second time), up to the operator again.
  const mark = m.daemon.records.length;
  const r = await call(m.url, 'POST', '/v1/maintenance/plans/again/restart?phase=all&step=maint-a');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(r.json, { message: 'Received cmd: restart for Plan: again, Phase: all, Step: maint-a' });
  assert.notEqual((await planOf(m.url, 'again')).status, 200, 'not COMPLETE once restarted');
  await awaiting('AWAITING_OPERATOR a second time');
  await eventually(() => (fleet.exits.length === 2 ? true : undefined), undefined, 100, 'the agent stopped by the second DOWN');
  const stages = m.daemon.records.slice(mark).filter((x) => x['msg'] === 'maintenance step moved').flatMap((x) => x['stages'] as string[]);
  assert.deepEqual(stages.filter((x, i) => stages.indexOf(x) === i), ['SCHEDULED', 'WAITING_FRAMEWORKS', 'DRAINING', 'DRAINED', 'DOWN', 'AWAITING_OPERATOR'], JSON.stringify(stages));
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans/again/continue')).status, 200);
  await eventually(async () => ((await planOf(m.url, 'again')).status === 200 ? true : undefined), 60_000, 250, 'plan COMPLETE again');
  assert.equal((await call(m.url, 'GET', '/maintenance/status')).text, '{}');
});

test('bad input: 400 with every error, 404, 405, 409; nothing is written', async (t) => {
  const m = await startMaster(t);
  await startAgent(t, { master: m.address, hostname: 'bad-a', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const ok = JSON.stringify({ name: 'held', machines: 'all', window: '1hrs', phase_strategy: 'canary' });
  const cases: Array<[string, string, string, string | undefined, number, RegExp | undefined]> = [
    ['not YAML', 'POST', '/v1/maintenance/plans', 'name: [', 400, /Invalid maintenance plan spec/],
    ['two errors at once', 'POST', '/v1/maintenance/plans', 'name: Bad_Name\nmachines: all\nwindw: 1hrs\n', 400, /^Invalid maintenance plan spec:\n(?=[\s\S]*windw is not a known key)(?=[\s\S]*\nname must be)/],
    ['empty body', 'POST', '/v1/maintenance/plans', '', 400, /Invalid maintenance plan spec/],
    ['no machine matches', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'none', machines: { attributes: { rack: 'r9' } }, window: '1hrs' }), 400, /no usable machines/],
    ['unknown hostname', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'none', machines: { hostnames: ['nope'] }, window: '1hrs' }), 400, /nope/],
    ['a shell command in on_down', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'cmd', machines: 'all', window: '1hrs', on_down: { command: 'id', timeout: '20secs' } }), 400,
      /\non_down\.command is not accepted: a plan names one of the master's hooks \(on_down: \{ hook: NAME \}\); the master's hooks are configured with --maintenance_hooks$/],
    ['a hook on a master without hooks', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'hook', machines: 'all', window: '1hrs', on_down: 'patch' }), 400,
      /on_down\.hook 'patch' is not one of the master's hooks: this master has no hooks \(none are configured: --maintenance_hooks\)/],
    ['create', 'POST', '/v1/maintenance/plans', ok, 200, /created maintenance plan held: 1 machine in 1 phase/],
    ['same name', 'POST', '/v1/maintenance/plans', ok, 409, /already exists/],
    ['list PUT', 'PUT', '/v1/maintenance/plans', '', 405, undefined],
    ['unknown plan', 'GET', '/v1/maintenance/plans/nope', undefined, 404, /Plan nope not found/],
    ['unknown plan verb', 'POST', '/v1/maintenance/plans/nope/continue', '', 404, /Plan nope not found/],
    ['unknown verb', 'POST', '/v1/maintenance/plans/held/explode', '', 404, undefined],
    ['bad escape (read before routing: shared/paths.ts)', 'GET', '/v1/maintenance/plans/%E0%A4%A', undefined, 400, /^Bad request target: .*not followed by two hex digits/],
    ['an encoded separator', 'GET', '/v1/maintenance/plans/held%2Fstop', undefined, 400, /^Bad request target: .*decodes to a '\/'/],
    ['unknown phase', 'POST', '/v1/maintenance/plans/held/continue?phase=zz', '', 404, /Phase zz not found/],
    ['unknown step', 'POST', '/v1/maintenance/plans/held/restart?phase=all&step=zz', '', 404, /Step zz not found/],
    ['step without phase', 'POST', '/v1/maintenance/plans/held/forceComplete?step=bad-a', '', 400, /Missing phase/],
    ['verb GET', 'GET', '/v1/maintenance/plans/held/stop', undefined, 405, undefined],
    ['delete unknown', 'DELETE', '/v1/maintenance/plans/nope', undefined, 404, /Plan nope not found/],
    ['delete held (a canary waits: not stopped)', 'DELETE', '/v1/maintenance/plans/held', undefined, 409, /only a COMPLETE or stopped plan/],
    ['stop', 'POST', '/v1/maintenance/plans/held/stop', '', 200, /Received cmd: stop/],
    ['delete stopped', 'DELETE', '/v1/maintenance/plans/held', undefined, 200, /deleted/],
  ];
  for (const [what, method, path, body, status, text] of cases) {
    const r = await call(m.url, method, path, body);
    assert.equal(r.status, status, `${what}: ${r.status} ${r.text}`);
    if (text !== undefined) assert.match(r.text, text, what);
  }
  assert.deepEqual((await call(m.url, 'GET', '/v1/maintenance/plans')).json, []);
  assert.equal((await call(m.url, 'GET', '/maintenance/schedule')).text, '{}');
});

// ---- A framework that declines -------------------------------------------------------------

type Offer = { id: { value: string }; agent_id: { value: string } };
type UpdateStatus = { state: string; uuid?: string; agent_id: unknown; task_id: { value: string } };
const statusOf = (e: SchedulerEvent): UpdateStatus => (e['update'] as { status: UpdateStatus }).status;

/** The plan events of the stream for one plan, as `maintenance_plan_updated` bodies. */
interface StepJson { phase: string; name: string; machine_id: Record<string, string>; stage: string; status: string; waiting_for: string }
const planUpdates = (s: EventStream, plan: string): Array<{ index: number; status: string; step?: StepJson }> =>
  s.records.flatMap((r: Rec, index) => {
    if (r.type !== 'MAINTENANCE_PLAN_UPDATED') return [];
    const u = r['maintenance_plan_updated'] as { name: string; status: string; step?: StepJson };
    return u.name === plan ? [{ index, status: u.status, ...(u.step === undefined ? {} : { step: u.step }) }] : [];
  });

test('a framework that declines: the step says who declines while it waits wait_for_frameworks, then drains (the task is killed); the event stream shows each change once, in order', { timeout: 420_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const fleet = new Fleet(t, () => m.address, () => m.url, [{ hostname: 'decl-a', rack: 'r1' }]);
  t.after(() => fleet.stop());
  await fleet.start();
  const agentId = fleet.current.get('decl-a')?.agentId as string;

  // A framework with a task on the machine: it acknowledges every update and declines every inverse offer.
  const fw = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'decliner' });
  t.after(() => fw.close());
  const declined: number[] = [];
  fw.onEvent = (e) => {
    if (e.type === 'UPDATE') {
      const st = statusOf(e);
      if (st.uuid !== undefined) void fw.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid }).catch(() => undefined);
    }
    if (e.type === 'INVERSE_OFFERS') {
      const ids = (e['inverse_offers'] as { inverse_offers: Array<{ id: { value: string } }> }).inverse_offers.map((o) => o.id);
      declined.push(fw.received.length - 1);
      void fw.call('DECLINE_INVERSE_OFFERS', { inverse_offer_ids: ids, filters: { refuse_seconds: 0 } }).catch(() => undefined);
    }
  };
  const offerEvent = await fw.next((e) => e.type === 'OFFERS' && (e['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === agentId), undefined, 'an offer for decl-a');
  const offer = (e => (e['offers'] as { offers: Offer[] }).offers.find((o) => o.agent_id.value === agentId) as Offer)(offerEvent);
  const task = { name: 'sleeper', task_id: { value: 'sleeper' }, agent_id: { value: agentId }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }], command: { value: 'sleep 600' } };
  const launched = await fw.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }], filters: { refuse_seconds: 0 } });
  assert.equal(launched.status, 202, launched.text);
  await fw.next((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'sleeper' && statusOf(e).state === 'TASK_RUNNING', undefined, 'sleeper RUNNING');

  // The plan's events are Drydock's own: on its stream, not Mesos' SUBSCRIBE.
  const stream = await EventStream.drydock(m);
  t.after(() => stream.close());
  await stream.waitFor((r) => r.type === 'HEARTBEAT', 0, undefined, 'first HEARTBEAT');

  const spec = JSON.stringify({ name: 'decline', machines: { hostnames: ['decl-a'] }, window: '1hrs', wait_for_frameworks: '2secs', max_grace_period: '1secs', settle: '1secs', up_when: 'agent_registered' });
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);
  const addedAt = await stream.waitFor((r) => r.type === 'MAINTENANCE_PLAN_ADDED', 0, undefined, 'MAINTENANCE_PLAN_ADDED');
  assert.deepEqual(stream.records[addedAt]?.['maintenance_plan_added'], { name: 'decline', status: 'PENDING', machines: 1 });

  // While it waits, the step names the framework as declining.
  const waiting = await eventually(async () => {
    const step = (await planOf(m.url, 'decline')).plan.phases[0]?.steps[0];
    return step !== undefined && /decliner \(DECLINED\)/.test(step.message) ? step : undefined;
  }, undefined, 50, 'the step naming decliner as DECLINED');
  assert.match(waiting.message, /: waiting for inverse offer answers: decliner \(DECLINED\) — \d+s left of 2secs$/);
  assert.equal(waiting.status, 'STARTING');
  assert.ok(declined.length >= 1, 'the framework declined');
  const killedBefore = fw.received.length;
  assert.ok(!fw.received.some((e) => e.type === 'UPDATE' && statusOf(e).state === 'TASK_KILLED'), 'nothing killed while the step waits');

  // After the wait the drain kills the task, and the plan completes once the agent is back.
  const killed = await fw.next((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'sleeper' && statusOf(e).state === 'TASK_KILLED', undefined, 'sleeper KILLED by the drain');
  assert.ok(fw.received.indexOf(killed) >= killedBefore);
  await eventually(async () => {
    const p = await planOf(m.url, 'decline');
    assert.notEqual(p.plan.status, 'ERROR', JSON.stringify(p.plan));
    return p.status === 200 ? true : undefined;
  }, 60_000, 250, 'plan COMPLETE');
  await stream.waitFor((r) => r.type === 'MAINTENANCE_PLAN_UPDATED' && (r['maintenance_plan_updated'] as { status: string }).status === 'COMPLETE', addedAt, undefined, 'the COMPLETE event');

  // The stream: the step's changes in stage order, DECLINED shown before DRAINING, each change once (a countdown is not a change).
  const updates = planUpdates(stream, 'decline').filter((u) => u.step !== undefined);
  const steps = updates.map((u) => u.step as StepJson);
  for (const st of steps) assert.deepEqual([st.phase, st.name, st.machine_id], ['all', 'decl-a', { hostname: 'decl-a', ip: '127.0.0.1' }]);
  const stages = steps.map((st) => st.stage).filter((x, i, all) => all[i - 1] !== x);
  assert.deepEqual(stages, ['SCHEDULED', 'WAITING_FRAMEWORKS', 'DRAINING', 'DOWN', 'UP', 'SETTLING', 'COMPLETE'], JSON.stringify(steps));
  const declinedAt = steps.findIndex((st) => st.stage === 'WAITING_FRAMEWORKS' && /decliner \(DECLINED\)/.test(st.waiting_for));
  assert.ok(declinedAt !== -1 && declinedAt < steps.findIndex((st) => st.stage === 'DRAINING'), JSON.stringify(steps));
  for (let i = 1; i < steps.length; i++) {
    const [a, b] = [steps[i - 1] as StepJson, steps[i] as StepJson];
    assert.notDeepEqual([a.stage, a.status, steadyText(a.waiting_for)], [b.stage, b.status, steadyText(b.waiting_for)], `event ${i} repeats ${JSON.stringify(b)}`);
  }
  assert.ok(steps.filter((st) => st.stage === 'WAITING_FRAMEWORKS').length <= 3, `a ticking wait is not an event per tick: ${JSON.stringify(steps)}`);
  assert.deepEqual(steps.at(-1), { phase: 'all', name: 'decl-a', machine_id: { hostname: 'decl-a', ip: '127.0.0.1' }, stage: 'COMPLETE', status: 'COMPLETE', waiting_for: '' });

  // Deleting the plan is MAINTENANCE_PLAN_REMOVED.
  assert.equal((await call(m.url, 'DELETE', '/v1/maintenance/plans/decline')).status, 200);
  const removed = await stream.waitFor((r) => r.type === 'MAINTENANCE_PLAN_REMOVED', addedAt, undefined, 'MAINTENANCE_PLAN_REMOVED');
  assert.deepEqual(stream.records[removed]?.['maintenance_plan_removed'], { name: 'decline' });
});

// ---- A hook that fails -----------------------------------------------------------------------

test('an on_down hook that fails: the step goes to ERROR with the exit status and output, the plan pauses there, restart with the hook fixed goes on to COMPLETE', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-mplan-hook-');
  const hookFile = join(dir, 'hook.sh');
  writeFileSync(hookFile, 'echo broken; exit 3\n');
  const m = await startMaster(t, { flags: maintenanceHooks(t, { check: { command: ['/bin/sh', hookFile] } }) });
  const fleet = new Fleet(t, () => m.address, () => m.url, [{ hostname: 'hook-a', rack: 'r1' }, { hostname: 'hook-b', rack: 'r1' }]);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = JSON.stringify({
    name: 'hooks', machines: { hostnames: ['hook-a', 'hook-b'] }, phase_strategy: 'serial', window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs',
    up_when: 'agent_registered', on_down: { hook: 'check', timeout: '30secs' },
  });
  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);

  const failed = await eventually(async () => {
    const p = await planOf(m.url, 'hooks');
    return p.plan.phases[0]?.steps[0]?.status === 'ERROR' ? p : undefined;
  }, undefined, 100, 'hook-a in ERROR');
  const [a, b] = failed.plan.phases[0]?.steps ?? [];
  assert.equal(a?.name, 'hook-a');
  assert.match(a?.message ?? '', /: on_down of hook-a failed with exit status 3 \(attempt 1\); last output: broken$/);
  assert.equal(failed.plan.status, 'ERROR');
  assert.equal(failed.status, 417);
  // The plan pauses there: hook-b does not start, and hook-a stays DOWN (a stated mode). A pass of
  // the plans' driver is not observable from outside: this look is an observation window (its
  // length is the check's sensitivity), which a correct master passes however slow the machine.
  await new Promise((r) => setTimeout(r, 2000));
  const paused = await planOf(m.url, 'hooks');
  assert.equal(paused.plan.phases[0]?.steps[1]?.status, 'PENDING', JSON.stringify(paused.plan));
  assert.equal(b?.status, 'PENDING');
  const status = (await call(m.url, 'GET', '/maintenance/status')).text;
  assert.match(status, /down_machines.*hook-a/);
  assert.doesNotMatch(status, /hook-b/);

  // Fix the hook, restart the step: the hook runs again (attempt 2), and the plan goes on through hook-b.
  writeFileSync(hookFile, 'echo fixed; exit 0\n');
  const restarted = await call(m.url, 'POST', '/v1/maintenance/plans/hooks/restart?phase=all&step=hook-a');
  assert.equal(restarted.status, 200, restarted.text);
  const done = await eventually(async () => {
    const p = await planOf(m.url, 'hooks');
    return p.status === 200 ? p.plan : undefined;
  }, 90_000, 250, 'plan COMPLETE after restart');
  assert.deepEqual(done.phases[0]?.steps.map((s) => [s.name, s.status]), [['hook-a', 'COMPLETE'], ['hook-b', 'COMPLETE']]);
  await m.daemon.waitForLog((r) => r['msg'] === 'on_down ended' && String(r['step']).endsWith('/hook-a') && r['attempt'] === 2 && r['status'] === 'succeeded', undefined, 'hook-a attempt 2');
  await m.daemon.waitForLog((r) => r['msg'] === 'on_down ended' && String(r['step']).endsWith('/hook-b') && r['status'] === 'succeeded', undefined, 'hook-b');
  // hook-b went DOWN only after hook-a's restart.
  assert.deepEqual(fleet.exits.map((e) => e.hostname), ['hook-a', 'hook-b']);
  assert.equal((await call(m.url, 'GET', '/maintenance/status')).text, '{}');
});

// ---- Failover mid-plan (etcd) ------------------------------------------------------------------

const skipEtcd = etcdMissing();

async function leaderOf(masters: readonly MasterHandle[], after: ReadonlyMap<MasterHandle, number> = new Map()): Promise<MasterHandle> {
  return eventually(() => masters.find((m) => m.daemon.running && m.daemon.records.slice(after.get(m) ?? 0).some((r) => r['msg'] === 'term started')), undefined, 50, 'a leader');
}

test('with etcd: kill -9 of the leader while a step waits for the operator; the standby has the plan at the same step, continue through it, COMPLETE', { skip: skipEtcd, timeout: 240_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/mplan-ha`, '--etcd_ttl=2secs'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  let leader = await leaderOf([a, b]);
  const fleet = new Fleet(t, () => `etcd://${etcd.endpoint}/mplan-ha`, () => leader.url, [{ hostname: 'ha-a', rack: 'r1' }]);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = JSON.stringify({ name: 'ha', machines: { hostnames: ['ha-a'] }, window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs', up_when: 'operator' });
  assert.equal((await call(leader.url, 'POST', '/v1/maintenance/plans', spec)).status, 200);
  await eventually(async () => {
    const step = (await planOf(leader.url, 'ha')).plan.phases[0]?.steps[0];
    return step?.message.includes('waiting for the operator') === true ? step : undefined;
  }, undefined, 100, 'AWAITING_OPERATOR on the first leader');

  const standby = leader === a ? b : a;
  const seen = new Map([[standby, standby.daemon.records.length]]);
  leader.daemon.signal('SIGKILL');
  await leader.daemon.exited;
  leader = await leaderOf([standby], seen);
  const after = await eventually(async () => {
    const r = await call(leader.url, 'GET', '/v1/maintenance/plans/ha').catch(() => undefined);
    return r !== undefined && r.status !== 503 && r.status !== 307 ? r : undefined;
  }, undefined, 100, 'the new leader serving the plan');
  const plan = after.json as { phases: Array<{ steps: Array<{ name: string; status: string; message: string }> }> };
  assert.equal(after.status, 202, after.text);
  assert.equal(plan.phases[0]?.steps[0]?.status, 'STARTING');
  assert.match(plan.phases[0]?.steps[0]?.message ?? '', /waiting for the operator/);
  assert.match((await call(leader.url, 'GET', '/maintenance/status')).text, /down_machines.*ha-a/);

  const cont = await call(leader.url, 'POST', '/v1/maintenance/plans/ha/continue');
  assert.equal(cont.status, 200, cont.text);
  await eventually(async () => ((await planOf(leader.url, 'ha')).status === 200 ? true : undefined), 60_000, 250, 'plan COMPLETE on the new leader');
  assert.equal((await call(leader.url, 'GET', '/maintenance/status')).text, '{}');
  assert.deepEqual(fleet.exits.map((e) => e.code), [0]);
});

test('a three-rack plan with a canary per rack: each rack\'s first machines wait for continue; racks go one after another', async (t) => {
  const m = await startMaster(t);
  const machines: MachineSpec[] = [
    { hostname: 'canary-a', rack: 'r1' }, { hostname: 'canary-b', rack: 'r1' },
    { hostname: 'canary-c', rack: 'r2' }, { hostname: 'canary-d', rack: 'r3' },
  ];
  const fleet = new Fleet(t, () => m.address, () => m.url, machines);
  t.after(() => fleet.stop());
  await fleet.start();
  const spec = JSON.stringify({
    name: 'three-racks', machines: 'all', group_by: 'rack', strategy: 'serial', phase_strategy: 'serial-canary',
    notice: '0secs', window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs', up_when: 'agent_registered',
  });
  const created = await call(m.url, 'POST', '/v1/maintenance/plans', spec);
  assert.equal(created.status, 200, created.text);

  // Each rack's canary holds its first machines: nothing is scheduled until the operator says continue.
  let p = await planOf(m.url, 'three-racks');
  assert.equal(p.plan.status, 'WAITING');
  assert.deepEqual(p.plan.phases.map((ph) => [ph.name, ph.status]), [['r1', 'WAITING'], ['r2', 'WAITING'], ['r3', 'WAITING']]);
  // An observation window, as above: nothing may be scheduled however long it lasts.
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await call(m.url, 'GET', '/maintenance/schedule')).text, '{}', 'a held canary schedules nothing');

  assert.equal((await call(m.url, 'POST', '/v1/maintenance/plans/three-racks/continue?phase=r1')).status, 200);
  await eventually(async () => {
    const x = await planOf(m.url, 'three-racks');
    const [a, b] = x.plan.phases[0]?.steps ?? [];
    return a?.status === 'COMPLETE' && b?.status === 'WAITING' ? true : undefined;
  }, 60_000, 250, 'canary-a done, canary-b held');
  // The second canary step needs its own continue; r2 and r3 each wait for theirs, and only after r1 (serial).
  assert.equal(fleet.exits.length, 1, 'only canary-a has been taken down so far');
  for (const phase of ['r1', 'r2', 'r3']) {
    await eventually(async () => {
      const x = await planOf(m.url, 'three-racks');
      const ph = x.plan.phases.find((y) => y.name === phase);
      if (ph?.status === 'COMPLETE') return true;
      if (ph?.steps.some((s) => s.status === 'WAITING')) await call(m.url, 'POST', `/v1/maintenance/plans/three-racks/continue?phase=${phase}`);
      return undefined;
    }, 60_000, 250, `${phase} COMPLETE`);
  }
  p = await planOf(m.url, 'three-racks');
  assert.equal(p.status, 200);
  assert.deepEqual(fleet.exits.map((e) => e.hostname), ['canary-a', 'canary-b', 'canary-c', 'canary-d'], 'one machine at a time, in rack order');
});

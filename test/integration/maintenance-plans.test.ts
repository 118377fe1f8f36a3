/**
 * Maintenance plans end to end (issue 12): a real master and three real agents on loopback, with
 * distinct hostnames and rack attributes. A machine taken DOWN shuts its agent down (exit 0);
 * the test then restarts the agent once the machine is UP again, as a systemd unit
 * (`Restart=always`) or `npm start`'s cluster would. Also: a master restart mid-plan resumes at
 * the step it was in, and a table of bad input (400/404/405/409, never 5xx).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, eventually, startAgent, startMaster, tempDir, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
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
  const m = await startMaster(t);
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
    'on_down: { command: "echo down {hostname}", timeout: 30secs }',
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
      await m.daemon.waitForLog((r) => r['msg'] === 'maintenance step moved' && String(r['step']).endsWith(`/${h}`) && (r['stages'] as string[]).includes(stage), 1000, `${h} ${stage}`);
      stages.push(stage);
    }
    assert.equal(stages.length, 7);
    await m.daemon.waitForLog((r) => r['msg'] === 'on_down ended' && String(r['step']).endsWith(`/${h}`) && r['status'] === 'succeeded', 1000, `${h} hook`);
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
  }, 30_000, 100, 'AWAITING_OPERATOR');
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
    ['create', 'POST', '/v1/maintenance/plans', ok, 200, /created maintenance plan held: 1 machines in 1 phases/],
    ['same name', 'POST', '/v1/maintenance/plans', ok, 409, /already exists/],
    ['list PUT', 'PUT', '/v1/maintenance/plans', '', 405, undefined],
    ['unknown plan', 'GET', '/v1/maintenance/plans/nope', undefined, 404, /Plan nope not found/],
    ['unknown plan verb', 'POST', '/v1/maintenance/plans/nope/continue', '', 404, /Plan nope not found/],
    ['unknown verb', 'POST', '/v1/maintenance/plans/held/explode', '', 404, undefined],
    ['bad escape', 'GET', '/v1/maintenance/plans/%E0%A4%A', undefined, 404, undefined],
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

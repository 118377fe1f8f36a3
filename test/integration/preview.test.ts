/**
 * Before acting, and telling what a machine name matches, end to end on a real master with three
 * agents on loopback and a framework whose tasks carry drydock-scheduler's pod labels:
 *  - the impact preview (`POST /drydock/v1/preview`, and `drydock agent drain --dry-run`,
 *    `machine down --dry-run`, `maintenance plan create --dry-run`): the tasks killed by
 *    framework, the pod that loses its last running instance, the placement that fails and why,
 *    a plan's waves; and that nothing changes;
 *  - the Warning header on schedule / DOWN / UP answers for a machine that names an agent by half
 *    (the issue's `agent-3=127.0.0.9` for an agent at 127.0.0.4), the CLI's refusal without
 *    --force, what DOWN says when no agent matched;
 *  - the master's machine metric and `drydock status` counting machines alike afterwards.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { parseWarnings } from '../../shared/warning.js';
import { callApi, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli } from '../helpers/cli.js';
import { daemonSample, scrapeMetrics } from '../helpers/exposition.js';

type Offer = { id: { value: string }; agent_id: { value: string } };
type Status = { task_id: { value: string }; state: string; uuid?: string; agent_id?: { value: string } };
const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;

/** A task on `agentId` using `cpus`; a pod instance's task (drydock-scheduler's labels) when `pod` is given. */
function task(name: string, agentId: string, cpus: number, pod?: [string, number]): Record<string, unknown> {
  const labels = pod === undefined ? undefined : { labels: [{ key: 'pod_type', value: pod[0] }, { key: 'index', value: String(pod[1]) }, { key: 'task_type', value: 'server' }] };
  return {
    name,
    task_id: { value: `${name}-id` },
    agent_id: { value: agentId },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: cpus } }, { name: 'mem', type: 'SCALAR', scalar: { value: 32 } }],
    command: { value: 'exec sleep 600' },
    ...(labels === undefined ? {} : { labels }),
  };
}

/** Launches tasks on agents (agent id -> its tasks) from their offers, and acknowledges updates until every one is RUNNING. */
async function launch(s: SchedulerClient, byAgent: ReadonlyMap<string, Array<Record<string, unknown>>>): Promise<void> {
  // One OFFERS event may carry several agents' offers: gather until each agent has one.
  const offers = new Map<string, Offer>();
  while ([...byAgent.keys()].some((a) => !offers.has(a))) {
    const e = await s.nextOfType('OFFERS', 10_000);
    for (const o of (e['offers'] as { offers: Offer[] }).offers) if (byAgent.has(o.agent_id.value)) offers.set(o.agent_id.value, o);
  }
  for (const [agentId, tasks] of byAgent) {
    const r = await s.call('ACCEPT', { offer_ids: [(offers.get(agentId) as Offer).id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: 0 } });
    assert.equal(r.status, 202, r.text);
  }
  const running = new Set<string>();
  const all = [...byAgent.values()].flat().length;
  while (running.size < all) {
    const u = await s.next((x) => x.type === 'UPDATE', 15_000, 'an update');
    const st = statusOf(u);
    if (st.uuid !== undefined) await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
    if (st.state === 'TASK_RUNNING') running.add(st.task_id.value);
    else assert.ok(['TASK_STAGING', 'TASK_STARTING'].includes(st.state), JSON.stringify(st));
  }
}

async function post(m: MasterHandle, path: string, body: string): Promise<{ status: number; text: string; warning: string | null }> {
  const r = await fetch(`${m.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(10_000) });
  return { status: r.status, text: await r.text(), warning: r.headers.get('warning') };
}

async function drydock(t: Parameters<typeof startCli>[0], m: MasterHandle, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(startCli(t, m, args), 30_000);
}

/** What the preview must leave as it was: agents (without offers, which the allocator moves), tasks, schedule, status, plans. */
async function snapshot(m: MasterHandle): Promise<string> {
  const agents = (await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<Record<string, unknown>> } };
  for (const a of agents.get_agents.agents) delete a['offered_resources'];
  const parts = [
    agents,
    (await callApi(m.url, { type: 'GET_TASKS' })).json,
    (await callApi(m.url, { type: 'GET_MAINTENANCE_SCHEDULE' })).json,
    (await callApi(m.url, { type: 'GET_MAINTENANCE_STATUS' })).json,
    await (await fetch(`${m.url}/v1/maintenance/plans`)).text(),
  ];
  return JSON.stringify(parts);
}

interface PreviewJson {
  action: string;
  refused?: { status: number; message: string };
  warnings?: string[];
  agents: Array<{ agent_id: string; hostname: string; ip: string }>;
  machines?: Array<{ hostname?: string; ip?: string; mode: string | null; agents: string[] }>;
  impact: {
    tasks: { count: number; hidden: number; frameworks: Array<{ framework_id: string; name: string; tasks: Array<{ task_id: string; name: string; state: string; agent_id: string; hostname: string }> }> };
    pods_losing_last_instance: Array<{ framework_id: string; framework_name: string; pod_type: string; instances: string[] }>;
    capacity: { fits: boolean; agents: number; failing: string[]; resources: Array<{ name: string; needed: number; free: number; enough: boolean }>; unplaced: Array<{ what: string; reason: string; constraints: string[] }> };
  };
  plan?: { name: string; phases: Array<{ name: string; machines: Array<{ hostname: string; ip: string }> }> };
  waves?: Array<{ wave: number; phases: string[]; machines: Array<{ hostname: string; ip: string }>; impact: PreviewJson['impact'] }>;
}

test('impact preview, machine warnings and machine counts, end to end', { timeout: 180_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a1 = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'agent-1', resources: 'cpus:2;mem:1024;disk:1000;ports:[31000-31009]', stopSignal: 'SIGUSR1' });
  const a2 = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'agent-2', resources: 'cpus:1;mem:512;disk:1000', stopSignal: 'SIGUSR1' });
  const a3 = await startAgent(t, { master: m.address, ip: '127.0.0.4', hostname: 'agent-3', resources: 'cpus:1;mem:512;disk:1000', stopSignal: 'SIGUSR1' });
  const s = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'svc', failover_timeout: 600, checkpoint: true });
  t.after(() => s.close());
  const fw = s.frameworkId;
  // agent-1: hello's only instance (1.5 cpus), web-0, and a task that is no pod; agent-2: web-1.
  const [id1, id2] = [String(a1.agentId), String(a2.agentId)];
  await launch(s, new Map([
    [id1, [task('hello-0-server', id1, 1.5, ['hello', 0]), task('web-0-server', id1, 0.2, ['web', 0]), task('batch', id1, 0.1)]],
    [id2, [task('web-1-server', id2, 0.2, ['web', 1])]],
  ]));

  const before = await snapshot(m);

  // ---- A drain of agent-1 -------------------------------------------------------------------------
  const drain = await post(m, '/drydock/v1/preview', JSON.stringify({ drain_agent: { agent_id: { value: a1.agentId } } }));
  assert.equal(drain.status, 200, drain.text);
  const d = JSON.parse(drain.text) as PreviewJson;
  assert.equal(d.action, 'drain_agent');
  assert.equal(d.refused, undefined);
  assert.deepEqual(d.agents, [{ agent_id: a1.agentId, hostname: 'agent-1', ip: '127.0.0.2' }]);
  assert.equal(d.impact.tasks.count, 3);
  assert.deepEqual(d.impact.tasks.frameworks.map((f) => [f.framework_id, f.name, f.tasks.map((x) => x.name)]), [[fw, 'svc', ['batch', 'hello-0-server', 'web-0-server']]]);
  // hello has no instance elsewhere; web-1 keeps running on agent-2.
  assert.deepEqual(d.impact.pods_losing_last_instance, [{ framework_id: fw, framework_name: 'svc', pod_type: 'hello', instances: ['hello-0'] }]);
  // 1.8 cpus to move and 1.8 free in all (0.8 on agent-2, 1 on agent-3), but hello-0's 1.5 fits on neither.
  const c = d.impact.capacity;
  assert.deepEqual([c.fits, c.agents, c.failing], [false, 2, ['cpus']]);
  assert.deepEqual(c.resources.find((r) => r.name === 'cpus'), { name: 'cpus', needed: 1.8, free: 1.8, enough: true });
  assert.deepEqual(c.unplaced.map((u) => [u.what, u.reason]), [['hello-0', 'cpus: needs 1.5, at most 1 free on one agent']]);

  // The CLI says it readably, and asks nothing else of the master.
  const dry = await drydock(t, m, ['agent', 'drain', 'agent-1', '--dry-run']);
  assert.equal(dry.code, 0, dry.stderr);
  assert.equal(dry.stdout, [
    `draining agent-1 (${a1.agentId}) would take out agent-1 (127.0.0.2):`,
    '  kills 3 tasks of 1 framework:',
    `    svc (${fw}): batch on agent-1, hello-0-server on agent-1, web-0-server on agent-1`,
    `  leaves pod hello of svc without a running instance (stops hello-0)`,
    '  room: NOT enough on the 2 other active agents: cpus (cpus 1.8 of 1.8 free, mem 96 of 992 free)',
    '    hello-0: cpus: needs 1.5, at most 1 free on one agent',
    'nothing was changed (--dry-run)',
    '',
  ].join('\n'));
  const dryJson = await drydock(t, m, ['agent', 'drain', 'agent-1', '--dry-run', '--json']);
  assert.deepEqual(JSON.parse(dryJson.stdout), d);

  // ---- A schedule with the machine: the right hostname, the wrong IP ------------------
  const schedule = { windows: [{ machine_ids: [{ hostname: 'agent-2', ip: '127.0.0.3' }, { hostname: 'agent-3', ip: '127.0.0.9' }], unavailability: { start: { nanoseconds: 1795341600000000000n.toString() } } }] };
  const dir = tempDir(t);
  const file = join(dir, 'schedule.json');
  writeFileSync(file, JSON.stringify(schedule));
  const WARNING = 'machine agent-3=127.0.0.9 matches agent agent-3 (127.0.0.4) by hostname only: it will not affect that agent, whose machine is agent-3=127.0.0.4';
  // The CLI refuses it without --force, naming the agent and its address; nothing was sent.
  const refused = await drydock(t, m, ['maintenance', 'schedule', file]);
  assert.equal(refused.code, 2);
  assert.match(refused.stderr, new RegExp(`^drydock: ${WARNING.replace(/[.()]/g, '\\$&')}\ndrydock: refused, nothing was sent: `));
  assert.equal(await snapshot(m), before, 'the refused schedule was not sent');
  // The API keeps Mesos' behaviour: accepted, Mesos' empty body, and the Warning header.
  const set = await post(m, '/maintenance/schedule', JSON.stringify(schedule));
  assert.deepEqual([set.status, set.text], [200, '']);
  assert.equal(set.warning, `299 drydock "${WARNING}"`);
  assert.deepEqual(parseWarnings(set.warning).map((w) => w.text), [WARNING]);

  // ---- DOWN, previewed: agent-2's tasks, and the machine no agent is on ------------------------
  const downBody = { start_maintenance: { machines: [{ hostname: 'agent-2', ip: '127.0.0.3' }, { hostname: 'agent-3', ip: '127.0.0.9' }] } };
  const afterSchedule = await snapshot(m);
  const down = JSON.parse((await post(m, '/drydock/v1/preview', JSON.stringify(downBody))).text) as PreviewJson;
  assert.equal(down.refused, undefined);
  assert.deepEqual(down.warnings, [WARNING]);
  assert.deepEqual(down.machines, [
    { hostname: 'agent-2', ip: '127.0.0.3', mode: 'DRAINING', agents: [a2.agentId] },
    { hostname: 'agent-3', ip: '127.0.0.9', mode: 'DRAINING', agents: [] },
  ]);
  assert.deepEqual(down.impact.tasks.frameworks.flatMap((f) => f.tasks.map((x) => x.name)), ['web-1-server']);
  assert.deepEqual(down.impact.pods_losing_last_instance, [], 'web-0 still runs on agent-1');
  assert.equal(down.impact.capacity.fits, true);
  const downDry = await drydock(t, m, ['machine', 'down', 'agent-2=127.0.0.3', 'agent-3=127.0.0.9', '--dry-run']);
  assert.equal(downDry.code, 0, downDry.stderr);
  assert.match(downDry.stdout, /^warning: machine agent-3=127\.0\.0\.9 matches agent agent-3 /);
  assert.match(downDry.stdout, /\nagent-2 \(127\.0\.0\.3\) \(DRAINING\): 1 agent would be shut down\nagent-3 \(127\.0\.0\.9\) \(DRAINING\): no agent matched: nothing would be shut down\n/);
  assert.match(downDry.stdout, /\n {2}room: the 2 other active agents can hold what is displaced \(cpus 0\.2 of /);
  // A machine that is not DRAINING: the master would refuse, and the preview says so (exit 1, as the action).
  const notScheduled = await drydock(t, m, ['machine', 'down', 'agent-1=127.0.0.2', '--dry-run']);
  assert.equal(notScheduled.code, 1);
  assert.match(notScheduled.stdout, /^the master would refuse this \(400\): Machine '\{"hostname":"agent-1","ip":"127\.0\.0\.2"\}' is not in DRAINING mode and cannot be brought down\nagent-1 \(127\.0\.0\.2\) \(UP\): 1 agent would be shut down\nif it were accepted, bringing them DOWN would take out agent-1 \(127\.0\.0\.2\):\n/);

  // ---- A plan, previewed: its waves in order, each with what it would do -------------------------
  const spec = join(dir, 'plan.yml');
  writeFileSync(spec, 'name: kernel\nmachines: { hostnames: [agent-1, agent-3] }\nwindow: 1hrs\n');
  // By hostname, the spec also selects the scheduled agent-3=127.0.0.9, which no agent runs on: the preview shows it, with the warning.
  const plan = JSON.parse((await post(m, '/drydock/v1/preview', JSON.stringify({ maintenance_plan: 'name: kernel\nmachines: { hostnames: [agent-1, agent-3] }\nwindow: 1hrs\n' }))).text) as PreviewJson;
  assert.deepEqual(plan.plan?.phases, [{ name: 'all', machines: [{ hostname: 'agent-1', ip: '127.0.0.2' }, { hostname: 'agent-3', ip: '127.0.0.4' }, { hostname: 'agent-3', ip: '127.0.0.9' }] }]);
  assert.deepEqual(plan.warnings, [WARNING]);
  assert.deepEqual(plan.waves?.map((w) => [w.wave, w.phases, w.machines.map((x) => x.ip), w.impact.tasks.count]), [[1, ['all'], ['127.0.0.2'], 3], [2, ['all'], ['127.0.0.4'], 0], [3, ['all'], ['127.0.0.9'], 0]]);
  const planDry = await drydock(t, m, ['maintenance', 'plan', 'create', spec, '--dry-run']);
  assert.equal(planDry.code, 0, planDry.stderr);
  assert.match(planDry.stdout, /^warning: machine agent-3=127\.0\.0\.9 matches agent agent-3 [^\n]+\nplan kernel \(serial, phases serial\): 3 machines in 1 phase, 3 waves\nwave 1 \(all\): agent-1 \(127\.0\.0\.2\)\n {2}kills 3 tasks of 1 framework:\n/);
  assert.match(planDry.stdout, /\nwave 2 \(all\): agent-3 \(127\.0\.0\.4\)\n {2}kills no task\nwave 3 \(all\): agent-3 \(127\.0\.0\.9\)\n {2}kills no task\nnothing was changed \(--dry-run\)\n$/);
  // A bad spec: the 400 creation would answer, as a refusal (exit 1).
  const badPlan = JSON.parse((await post(m, '/drydock/v1/preview', JSON.stringify({ maintenance_plan: 'name: x\n' }))).text) as PreviewJson;
  assert.equal(badPlan.refused?.status, 400);
  assert.match(badPlan.refused?.message ?? '', /^Invalid maintenance plan spec:/);

  // A preview request that names no action, or two, is a 400 that says so.
  for (const [body, want] of [['{}', 'name exactly one action'], ['{"drain_agent":{},"start_maintenance":{}}', 'name exactly one action'], ['{"teardown":{}}', "unknown field 'teardown'"], ['[]', 'expected a JSON object']] as const) {
    const r = await post(m, '/drydock/v1/preview', body);
    assert.equal(r.status, 400, body);
    assert.match(r.text, new RegExp(`^Invalid preview request: ${want}`), body);
  }

  // Nothing any preview asked has changed anything.
  assert.equal(await snapshot(m), afterSchedule, 'previews change nothing');

  // ---- DOWN with the wrong IP: said as it is ------------------------------------------------------
  const noForce = await drydock(t, m, ['machine', 'down', 'agent-3=127.0.0.9']);
  assert.equal(noForce.code, 2);
  const forced = await drydock(t, m, ['machine', 'down', 'agent-3=127.0.0.9', '--force']);
  assert.equal(forced.code, 0, forced.stderr);
  assert.equal(forced.stdout, 'agent-3 (127.0.0.9) is DOWN: no agent matched: nothing was shut down\n');
  assert.equal(forced.stderr, `drydock: warning: ${WARNING}\n`);
  // agent-3 is still ACTIVE, its machine UP.
  const agents = (await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; active: boolean; maintenance: { mode: string } }> } };
  const three = agents.get_agents.agents.find((a) => a.agent_info.id.value === a3.agentId);
  assert.deepEqual([three?.active, three?.maintenance.mode], [true, 'UP']);
  // UP through the v1 call: the Warning there too.
  const up = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [{ hostname: 'agent-3', ip: '127.0.0.9' }] } }) });
  assert.equal(up.status, 200, await up.text());
  assert.equal(up.headers.get('warning'), `299 drydock "${WARNING}"`);

  // ---- The metric and drydock status count machines alike -------------------------------------
  // The master still keeps an UP entry for agent-3=127.0.0.9 (no agent runs on it): neither counts it.
  const st = JSON.parse((await drydock(t, m, ['status', '--json'])).stdout) as { machines: Record<string, number> };
  const metrics = await scrapeMetrics(`${m.url}/metrics`);
  const gauge = (mode: string): number | undefined => daemonSample(metrics, 'master', 'drydock_master_machines', { mode });
  assert.deepEqual(st.machines, { UP: 2, DRAINING: 1, DOWN: 0 });
  assert.deepEqual({ UP: gauge('UP'), DRAINING: gauge('DRAINING'), DOWN: gauge('DOWN') }, st.machines);
});

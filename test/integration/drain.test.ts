/**
 * Agent draining end to end: a real master, real agents, a framework through
 * scheduler/client.ts. DRAIN_AGENT caps grace periods, tags kill updates with
 * REASON_AGENT_DRAINING, waits for acknowledgements before DRAINED, survives restarts of
 * either daemon, and marks agents gone; DEACTIVATE / REACTIVATE stop and resume offers.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, eventually, FIXTURES, startAgent, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { agentWorkDir, FRAMEWORK, FRAMEWORK_ID, shellTask, startFakeMaster } from '../helpers/fake-master.js';
import { AllocationWitness } from '../helpers/allocation.js';

const AGENT_FLAGS = ['--status_update_retry_interval=500ms'];
const FW = { user: 'root', name: 'drain-fw', checkpoint: true, failover_timeout: 60, capabilities: [{ type: 'TASK_KILLING_STATE' }] };

type Offer = { id: { value: string }; agent_id: { value: string } };
type Status = { task_id: { value: string }; state: string; uuid?: string; reason?: string; message?: string; agent_id?: { value: string } };
type AgentJson = {
  agent_info: { id: { value: string } };
  active: boolean;
  deactivated: boolean;
  drain_info?: { state: string; config: { max_grace_period?: { nanoseconds: number }; mark_gone: boolean } };
  estimated_drain_start_time?: { nanoseconds: number };
};
/** Drydock's drain record: what a drain waits for, beyond Mesos' drain_info. */
type DrainRecord = { state: string; started_time: { nanoseconds: number }; remaining_tasks: number; waiting_for: Array<{ kind: string; task_id?: string; message: string }>; drained_time?: unknown };

const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;
const updateFor = (taskId: string, state?: string) => (e: SchedulerEvent): boolean =>
  e.type === 'UPDATE' && statusOf(e).task_id.value === taskId && (state === undefined || statusOf(e).state === state);

async function agents(m: MasterHandle): Promise<AgentJson[]> {
  return ((await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: AgentJson[] } }).get_agents.agents;
}
async function agentOf(m: MasterHandle, id: string): Promise<AgentJson | undefined> {
  return (await agents(m)).find((a) => a.agent_info.id.value === id);
}
/** The agent's drain record, from Drydock's own view of it (GET /drydock/v1/agents/<id>); undefined without a drain. */
async function drainRecordOf(m: MasterHandle, id: string): Promise<DrainRecord | undefined> {
  const r = await fetch(`${m.url}/drydock/v1/agents/${encodeURIComponent(id)}`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(r.status, 200, `Drydock's view of agent ${id}`);
  return ((await r.json()) as { drain?: DrainRecord }).drain;
}

function task(id: string, agentId: string, cmd: string, graceSecs?: number): Record<string, unknown> {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: agentId },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }],
    command: { value: cmd },
    ...(graceSecs !== undefined ? { kill_policy: { grace_period: { nanoseconds: graceSecs * 1e9 } } } : {}),
  };
}

async function offerFor(s: SchedulerClient, agentId: string, timeoutMs?: number): Promise<Offer> {
  const e = await s.next((x) => x.type === 'OFFERS' && (x['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === agentId), timeoutMs, `an offer for ${agentId}`);
  return (e['offers'] as { offers: Offer[] }).offers.find((o) => o.agent_id.value === agentId)!;
}

async function ack(s: SchedulerClient, e: SchedulerEvent): Promise<void> {
  const st = statusOf(e);
  if (st.uuid === undefined) return;
  const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
  assert.equal(r.status, 202, r.text);
}

async function launchRunning(s: SchedulerClient, agentId: string, id: string, cmd: string, graceSecs?: number): Promise<void> {
  const o = await offerFor(s, agentId);
  const r = await s.call('ACCEPT', { offer_ids: [o.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task(id, agentId, cmd, graceSecs)] } }], filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202, r.text);
  for (;;) {
    const u = await s.next(updateFor(id), undefined, `an update of ${id}`);
    await ack(s, u);
    if (statusOf(u).state === 'TASK_RUNNING') return;
    assert.ok(['TASK_STARTING', 'TASK_STAGING'].includes(statusOf(u).state), JSON.stringify(statusOf(u)));
  }
}

/** Waits until a fixture task printed "ready" in its sandbox (the agent's `sandboxes/<framework>/<task>/stdout`). */
async function fixtureReady(workDir: string, frameworkId: string, taskId: string): Promise<void> {
  const stdout = join(workDir, 'sandboxes', frameworkId, taskId, 'stdout');
  await eventually(() => (existsSync(stdout) && readFileSync(stdout, 'utf8').includes('ready') ? true : undefined), undefined, 20, `${taskId} ready`);
}

const drainCall = (agentId: string, extra: Record<string, unknown> = {}) => ({ type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agentId }, ...extra } });
const call = (type: string, agentId: string) => ({ type, [type.toLowerCase()]: { agent_id: { value: agentId } } });

test('DRAIN_AGENT with max_grace_period 1secs: SIGKILL after ~1 s, REASON_AGENT_DRAINING, DRAINED only after the ack, no offers meanwhile, REACTIVATE', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'd1', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS });
  const id = a.agentId!;
  const witness = await AllocationWitness.start(t, m);
  const s = await SchedulerClient.subscribe(m.address, FW);
  t.after(() => s.close());
  // Its own grace is 30 s and it ignores SIGTERM: only the drain's cap can end it quickly.
  await launchRunning(s, id, 'stubborn', `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 30);
  // TASK_RUNNING comes with the spawn; the shell ignores SIGTERM only once its trap is set ("ready").
  await fixtureReady(a.workDir, s.frameworkId, 'stubborn');

  // Measured from before the drain is asked for: the cap cannot have run out earlier.
  const t0 = Date.now();
  const r = await callApi(m.url, drainCall(id, { max_grace_period: '1secs' }));
  assert.deepEqual([r.status, r.text], [200, '']);
  const killing = await s.next(updateFor('stubborn', 'TASK_KILLING'));
  assert.equal(statusOf(killing).reason, 'REASON_AGENT_DRAINING');
  await ack(s, killing);

  let ag = (await agentOf(m, id))!;
  assert.equal(ag.drain_info?.state, 'DRAINING');
  assert.deepEqual(ag.drain_info?.config, { max_grace_period: { nanoseconds: 1_000_000_000 }, mark_gone: false });
  assert.equal(ag.deactivated, true);
  assert.equal(ag.active, false);
  assert.equal(ag.estimated_drain_start_time!.nanoseconds % 1e9, 0);
  let rec = await drainRecordOf(m, id);
  assert.equal(rec?.state, 'DRAINING');
  assert.equal(rec?.remaining_tasks, 1);
  assert.match(rec!.waiting_for[0]!.message, /task stubborn still running after SIGTERM \(\d+ s of 1 s grace\)/);

  const killed = await s.next(updateFor('stubborn', 'TASK_KILLED'));
  const elapsed = Date.now() - t0;
  assert.ok(elapsed >= 999, `killed after ${elapsed} ms, before the 1 s cap`);
  assert.equal(statusOf(killed).reason, 'REASON_AGENT_DRAINING');
  // SIGKILL came from the drain's 1 s cap (the task's own grace is 30 s): the agent says so.
  await a.daemon.waitForMsg('grace period over, sending SIGKILL', { taskId: 'stubborn', graceMs: 1000 });
  // Not acknowledged yet: the master still waits for the framework. An allocation round after
  // the task's resources came free (the master forwarded TASK_KILLED) offers the witness, not this agent.
  await witness.round(s);
  ag = (await agentOf(m, id))!;
  assert.equal(ag.drain_info?.state, 'DRAINING');
  const w = (await drainRecordOf(m, id))!.waiting_for;
  assert.equal(w.length, 1);
  assert.equal(w[0]!.kind, 'UPDATE_UNACKNOWLEDGED');
  assert.match(w[0]!.message, new RegExp(`update TASK_KILLED of task stubborn not yet acknowledged by framework ${s.frameworkId}`));
  // No offers for a draining agent, though its resources are free again.
  assert.ok(!s.received.some((e) => e.type === 'OFFERS' && s.received.indexOf(e) > s.received.indexOf(killing) && (e['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === id)));
  const before = s.received.length;
  await ack(s, killed);
  ag = await eventually(async () => {
    const x = await agentOf(m, id);
    return x?.drain_info?.state === 'DRAINED' ? x : undefined;
  }, undefined, 100, 'DRAINED');
  rec = await drainRecordOf(m, id);
  assert.equal(rec?.state, 'DRAINED');
  assert.equal(rec?.remaining_tasks, 0);
  assert.deepEqual(rec?.waiting_for, []);
  assert.ok(rec?.drained_time !== undefined);
  await witness.round(s);
  assert.ok(!s.received.slice(before).some((e) => e.type === 'OFFERS' && (e['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === id)), 'no offers for a drained, deactivated agent');

  // The agent left draining by itself once the ack arrived.
  const ga = await eventually(async () => {
    const j = (await callApi(a.url, { type: 'GET_AGENT' })).json as { get_agent: Record<string, unknown> };
    return j.get_agent['drain_config'] === undefined ? j : undefined;
  }, undefined, 100, 'agent leaves draining');
  assert.ok(ga);

  // REACTIVATE: answers, then offers resume.
  assert.deepEqual((await callApi(m.url, call('REACTIVATE_AGENT', id))).status, 200);
  assert.deepEqual(await callApi(m.url, call('REACTIVATE_AGENT', id)).then((x) => [x.status, x.text]), [400, 'Agent is not deactivated']);
  await offerFor(s, id);
  ag = (await agentOf(m, id))!;
  assert.equal(ag.drain_info, undefined);
  assert.equal(await drainRecordOf(m, id), undefined);
  assert.equal(ag.deactivated, false);
});

test('DRAIN_AGENT with max_grace_period of 2^32 seconds (136 years, an int64 of ns beyond 2^53): the agent takes it exactly, kills with the task\'s own grace, DRAINED, never reconnects', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'd136', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS });
  const id = a.agentId!;
  const s = await SchedulerClient.subscribe(m.address, FW);
  t.after(() => s.close());
  // Its own grace is 1 s and it ignores SIGTERM: SIGKILL after 1 s says which grace was used.
  await launchRunning(s, id, 'own-grace', `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 1);
  await fixtureReady(a.workDir, s.frameworkId, 'own-grace');

  const from = a.daemon.records.length;
  const r = await callApi(m.url, drainCall(id, { max_grace_period: { seconds: 4294967296 } }));
  assert.deepEqual([r.status, r.text], [200, '']);
  // The agent got every digit, and carries out the drain (before: "expected a number ... got bigint", and a reconnect loop).
  const draining = await a.daemon.waitForMsg('draining', {}, undefined, from);
  assert.equal(draining['maxGracePeriodNs'], '4294967296000000000');
  const killing = await s.next(updateFor('own-grace', 'TASK_KILLING'));
  assert.equal(statusOf(killing).reason, 'REASON_AGENT_DRAINING');
  await ack(s, killing);
  // The cap is far above the task's own grace: the task keeps its 1 s (no override, no 136-year timer).
  const kill = await a.daemon.waitForMsg('killing task', { taskId: 'own-grace' }, undefined, from);
  assert.equal(kill['graceMs'], 1000);
  const killed = await s.next(updateFor('own-grace', 'TASK_KILLED'));
  assert.equal(statusOf(killed).reason, 'REASON_AGENT_DRAINING');
  assert.match(statusOf(killed).message ?? '', /Killed/);
  await a.daemon.waitForMsg('grace period over, sending SIGKILL', { graceMs: 1000 }, undefined, from);
  await ack(s, killed);
  await eventually(async () => ((await agentOf(m, id))?.drain_info?.state === 'DRAINED' ? true : undefined), undefined, 100, 'DRAINED');
  // GET_AGENTS keeps every digit too.
  assert.match((await callApi(m.url, { type: 'GET_AGENTS' })).text, /"max_grace_period":\{"nanoseconds":4294967296000000000\}/);

  // One session from start to DRAINED: no refusal, no reconnect (a loop registered a few hundred times a second).
  const msgs = a.daemon.records.map((x) => x['msg']);
  assert.equal(msgs.filter((x) => x === 'registered').length, 1, 'the agent registered once');
  assert.deepEqual(msgs.filter((x) => x === 'invalid master message' || x === 'master message refused' || x === 'master connection closed'), []);
  const snap = (await (await fetch(`${m.url}/metrics/snapshot`)).json()) as Record<string, number>;
  assert.equal(snap['master/slave_reregistrations'], 0);
  assert.equal(snap['drydock/agent_messages_refused'], 0);
});

test('idle agent DRAINED at once; 003 curl bodies; errors; mark_gone: agent exits 0, gone, refused forever', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'idle', flags: AGENT_FLAGS });
  const id = a.agentId!;
  // The source document's body, as curl sends it (form content type, "10mins").
  const r = await callApi(m.url, `{"type": "DRAIN_AGENT", "drain_agent": {"agent_id": {"value": "${id}"}, "max_grace_period": "10mins"}}`, { 'content-type': 'application/x-www-form-urlencoded' });
  assert.deepEqual([r.status, r.text], [200, '']);
  let ag = (await agentOf(m, id))!;
  assert.equal(ag.drain_info?.state, 'DRAINED');
  assert.deepEqual(ag.drain_info?.config.max_grace_period, { nanoseconds: 600_000_000_000 });

  assert.deepEqual(await callApi(m.url, call('REACTIVATE_AGENT', id)).then((x) => x.status), 200);
  assert.deepEqual(await callApi(m.url, `{"type": "DEACTIVATE_AGENT", "deactivate_agent": {"agent_id": {"value": "${id}"}}}`, { 'content-type': 'application/x-www-form-urlencoded' }).then((x) => x.status), 200);
  ag = (await agentOf(m, id))!;
  assert.deepEqual([ag.deactivated, ag.active, ag.drain_info], [true, false, undefined]);
  assert.deepEqual(await callApi(m.url, `{"type": "REACTIVATE_AGENT", "reactivate_agent": {"agent_id": {"value": "${id}"}}}`, { 'content-type': 'application/x-www-form-urlencoded' }).then((x) => x.status), 200);

  const answers = async (body: unknown): Promise<[number, string]> => callApi(m.url, body).then((x) => [x.status, x.text]);
  assert.deepEqual(await answers(drainCall('nope')), [400, 'Unknown agent']);
  assert.deepEqual(await answers(call('DEACTIVATE_AGENT', 'nope')), [400, 'Unknown agent']);
  assert.deepEqual(await answers(call('MARK_AGENT_GONE', 'nope')), [404, "Agent 'nope' not found"]);
  assert.deepEqual(await answers({ type: 'DRAIN_AGENT', drain_agent: {} }), [400, 'Failed to convert JSON into Call protobuf: Missing required fields: drain_agent.agent_id']);
  const bad = await answers(drainCall(id, { max_grace_period: 'soon' }));
  assert.equal(bad[0], 400);
  assert.match(bad[1], /max_grace_period/);

  // mark_gone on an idle agent: gone at once, the agent is told and exits 0.
  assert.deepEqual(await answers(drainCall(id, { mark_gone: true })), [200, '']);
  const exit = await a.daemon.exited;
  assert.equal(exit.code, 0);
  assert.equal(await agentOf(m, id), undefined);
  assert.deepEqual(await answers(call('MARK_AGENT_GONE', id)), [200, '']);
  assert.deepEqual(await answers(drainCall(id)), [400, 'Unknown agent']);
  // A restart with the same work dir (same id) is refused, nothing admitted.
  const again = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'idle', workDir: a.workDir, flags: AGENT_FLAGS, waitRegistered: false });
  const e2 = await again.daemon.exited;
  assert.equal(e2.code, 0);
  assert.match(again.daemon.stderr, /Agent has been marked gone/);
  assert.equal(await agentOf(m, id), undefined);
});

test('DEACTIVATE keeps tasks running and stops offers, across a master restart; a drain resumes after the restart and reaches DRAINED', async (t) => {
  const m1 = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m1.address, ip: '127.0.0.2', hostname: 'dx', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS });
  const id = a.agentId!;
  const witness1 = await AllocationWitness.start(t, m1);
  const s1 = await SchedulerClient.subscribe(m1.address, FW);
  await launchRunning(s1, id, 'sleeper', 'sleep 60');
  assert.equal((await callApi(m1.url, call('DEACTIVATE_AGENT', id))).status, 200);
  const mark = s1.received.length;
  // An allocation round after DEACTIVATE answered offers the witness, and nothing of this agent.
  await witness1.round(s1);
  assert.ok(!s1.received.slice(mark).some((e) => e.type === 'OFFERS' && (e['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === id)), 'no offers after DEACTIVATE');
  s1.close();

  // Restart the master on the same work dir and port.
  await m1.daemon.stop();
  const m2 = await startMaster(t, { workDir: m1.workDir, port: m1.port, flags: ['--allocation_interval=200ms'] });
  const s2 = await SchedulerClient.subscribe(m2.address, FW, { frameworkId: s1.frameworkId });
  t.after(() => s2.close());
  const witness2 = await AllocationWitness.start(t, m2);
  const back = await eventually(async () => (await agentOf(m2, id))?.active === false && (await agentOf(m2, id))?.deactivated === true ? true : undefined, undefined, 100, 'agent back, still deactivated');
  assert.ok(back);
  const tasksNow = ((await callApi(m2.url, { type: 'GET_TASKS' })).json as { get_tasks: { tasks: Array<{ state: string }> } }).get_tasks.tasks;
  assert.deepEqual(tasksNow.map((x) => x.state), ['TASK_RUNNING']);
  const mark2 = s2.received.length;
  await witness2.round(s2);
  assert.ok(!s2.received.slice(mark2).some((e) => e.type === 'OFFERS' && (e['offers'] as { offers: Offer[] }).offers.some((o) => o.agent_id.value === id)), 'still no offers after the restart');

  // Drain with no cap: the task's default 3 s grace (sleep dies on SIGTERM at once).
  assert.equal((await callApi(m2.url, drainCall(id))).status, 200);
  await ack(s2, await s2.next(updateFor('sleeper', 'TASK_KILLING')));
  const killed = await s2.next(updateFor('sleeper', 'TASK_KILLED'));
  assert.equal(statusOf(killed).reason, 'REASON_AGENT_DRAINING');
  // Restart the master again before acknowledging: the drain resumes from the registry.
  await m2.daemon.stop();
  const m3 = await startMaster(t, { workDir: m1.workDir, port: m1.port, flags: ['--allocation_interval=200ms'] });
  const s3 = await SchedulerClient.subscribe(m3.address, FW, { frameworkId: s1.frameworkId });
  t.after(() => s3.close());
  const resent = await s3.next(updateFor('sleeper', 'TASK_KILLED'));
  await ack(s3, resent);
  const drained = await eventually(async () => ((await agentOf(m3, id))?.drain_info?.state === 'DRAINED' ? true : undefined), undefined, 100, 'DRAINED after restart');
  assert.ok(drained);
});

test('a drain of a disconnected agent is applied when it returns, with the full grace', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'away', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS });
  const id = a.agentId!;
  const s = await SchedulerClient.subscribe(m.address, FW);
  t.after(() => s.close());
  await launchRunning(s, id, 'patient', `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 30);
  await fixtureReady(a.workDir, s.frameworkId, 'patient');
  await a.daemon.stop();
  await eventually(async () => ((await agentOf(m, id))?.active === false ? true : undefined), undefined, 50, 'agent disconnected');
  assert.equal((await callApi(m.url, drainCall(id, { max_grace_period: { seconds: 2 } }))).status, 200);
  const ag = (await agentOf(m, id))!;
  assert.equal(ag.drain_info?.state, 'DRAINING');
  assert.ok((await drainRecordOf(m, id))!.waiting_for.some((w) => w.kind === 'AGENT_DISCONNECTED' && /drain will be applied when it re-registers/.test(w.message)));
  // Away for longer than the grace: the grace counts from its return.
  // (Not a wait for an event: the condition the test sets up; a slower machine only makes the absence longer.)
  await new Promise((res) => setTimeout(res, 2500));
  const back = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'away', resources: 'cpus:2;mem:1024', workDir: a.workDir, flags: AGENT_FLAGS });
  const killing = await s.next(updateFor('patient', 'TASK_KILLING'));
  assert.equal(statusOf(killing).reason, 'REASON_AGENT_DRAINING');
  // The agent starts the grace when it gets the drain: the whole 2 s, counted from its return.
  const kill = await back.daemon.waitForMsg('killing task', { taskId: 'patient' });
  assert.equal(kill['graceMs'], 2000);
  await ack(s, killing);
  const killed = await s.next(updateFor('patient', 'TASK_KILLED'));
  assert.equal(statusOf(killed).reason, 'REASON_AGENT_DRAINING');
  // The agent shows the drain while its update waits for the acknowledgement.
  const gaDrain = (await callApi(back.url, { type: 'GET_AGENT' })).json as { get_agent: Record<string, unknown> };
  assert.deepEqual(gaDrain.get_agent['drain_config'], { max_grace_period: { nanoseconds: 2_000_000_000 }, mark_gone: false });
  await ack(s, killed);
  assert.ok(await eventually(async () => ((await agentOf(m, id))?.drain_info?.state === 'DRAINED' ? true : undefined), undefined, 100, 'DRAINED'));
});

test('agent level: a launch on a draining agent is refused; an agent restart replays the drain', async (t) => {
  const fm = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const a = await startAgent(t, { master: fm.address, workDir, flags: AGENT_FLAGS });
  fm.runTask(shellTask('long', `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 30_000));
  await eventually(() => fm.updates.find((u) => u.status.state === 'TASK_RUNNING' && u.status.task_id.value === 'long'), undefined, 50, 'running');
  fm.send({ type: 'DRAIN', config: { max_grace_period: { nanoseconds: 60_000_000_000 }, mark_gone: false } });
  await eventually(() => fm.updates.find((u) => u.status.state === 'TASK_KILLING' && u.status.task_id.value === 'long'), undefined, 50, 'killing');
  const ga = (await callApi(a.url, { type: 'GET_AGENT' })).json as { get_agent: Record<string, unknown> };
  assert.deepEqual(ga.get_agent['drain_config'], { max_grace_period: { nanoseconds: 60_000_000_000 }, mark_gone: false });
  assert.ok(ga.get_agent['estimated_drain_start_time'] !== undefined);

  fm.runTask(shellTask('late', 'sleep 5'));
  const lost = await eventually(() => fm.updates.find((u) => u.status.task_id.value === 'late'), undefined, 50, 'late refused');
  assert.equal(lost.status.state, 'TASK_LOST');
  assert.equal(lost.status.reason, 'REASON_AGENT_DRAINING');
  assert.equal(lost.status.message, 'Task was received while agent was already draining');
  fm.runTask(shellTask('late-pa', 'sleep 5'), { ...FRAMEWORK, capabilities: [{ type: 'PARTITION_AWARE' }] });
  const dropped = await eventually(() => fm.updates.find((u) => u.status.task_id.value === 'late-pa'), undefined, 50, 'late-pa refused');
  assert.equal(dropped.status.state, 'TASK_DROPPED');

  // Restart the agent with a much shorter drain coming from nowhere: the checkpointed one is replayed.
  await a.daemon.stop();
  const n = fm.updates.length;
  const b = await startAgent(t, { master: fm.address, workDir, flags: AGENT_FLAGS });
  await b.daemon.waitForMsg('recovered', { draining: true });
  // A shorter drain shortens the kill in progress: SIGKILL at once.
  fm.send({ type: 'DRAIN', config: { max_grace_period: { nanoseconds: 0 }, mark_gone: false } });
  const killed = await eventually(() => fm.updates.slice(n).find((u) => u.status.state === 'TASK_KILLED' && u.status.task_id.value === 'long'), undefined, 50, 'killed');
  assert.equal(killed.status.reason, 'REASON_AGENT_DRAINING');
  assert.equal(FRAMEWORK_ID, killed.framework_id);
});

/**
 * The scheduler API end to end: a real master, real agents on 127.0.0.2 / 127.0.0.3, and the
 * Mesos scheduler client of scheduler/client.ts.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { alive, callApi, eventually, EVENT_DEADLINE_MS, startAgent, startMaster, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
import { AllocationWitness } from '../helpers/allocation.js';

const AGENT_FLAGS = ['--status_update_retry_interval=500ms'];
const FW = { user: 'root', name: 'test-fw' };

type Offer = { id: { value: string }; agent_id: { value: string }; resources: Array<{ name: string; scalar?: { value: number } }> };
type Status = { task_id: { value: string }; state: string; uuid?: string; reason?: string; source: string; message?: string; agent_id?: { value: string } };

function offersOf(e: SchedulerEvent): Offer[] {
  return (e['offers'] as { offers: Offer[] }).offers;
}
function statusOf(e: SchedulerEvent): Status {
  return (e['update'] as { status: Status }).status;
}
const updateFor = (taskId: string, state?: string) => (e: SchedulerEvent): boolean =>
  e.type === 'UPDATE' && statusOf(e).task_id.value === taskId && (state === undefined || statusOf(e).state === state);

async function cluster(t: Parameters<typeof startMaster>[0], masterOpts: Parameters<typeof startMaster>[1] = {}): Promise<{ m: MasterHandle; a1: AgentHandle; a2: AgentHandle }> {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'], ...masterOpts });
  const [a1, a2] = await Promise.all([
    startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'a1', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS }),
    startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'a2', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS }),
  ]);
  return { m, a1, a2 };
}

/** Collects offers until both agents have been offered; returns one per agent. */
async function offersForAgents(s: SchedulerClient, agentIds: string[], timeoutMs = EVENT_DEADLINE_MS): Promise<Map<string, Offer>> {
  const got = new Map<string, Offer>();
  const deadline = Date.now() + timeoutMs;
  while (agentIds.some((id) => !got.has(id))) {
    const e = await s.nextOfType('OFFERS', Math.max(1, deadline - Date.now()));
    for (const o of offersOf(e)) got.set(o.agent_id.value, o);
  }
  return got;
}

function task(id: string, agentId: string, cpus = 0.5, cmd = 'sleep 30'): Record<string, unknown> {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: agentId },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: cpus }, role: '*' }, { name: 'mem', type: 'SCALAR', scalar: { value: 32 } }],
    command: { value: cmd },
  };
}

async function ackUpdate(s: SchedulerClient, e: SchedulerEvent): Promise<void> {
  const st = statusOf(e);
  if (st.uuid === undefined) return;
  const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
  assert.equal(r.status, 202, r.text);
}

async function tasks(m: MasterHandle): Promise<{ tasks: Array<{ task_id: { value: string }; state: string }>; completed_tasks: Array<{ task_id: { value: string }; state: string }> }> {
  return ((await callApi(m.url, { type: 'GET_TASKS' })).json as { get_tasks: never }).get_tasks;
}

test('subscribe, offers, launch, updates with acks, kill, decline and revive, suppress, bad launches, errors, reconcile', async (t) => {
  const { m, a1, a2 } = await cluster(t);
  const s = await SchedulerClient.subscribe(m.address, FW);
  t.after(() => s.close());
  assert.match(s.frameworkId, new RegExp(`-0000$`));
  assert.match(s.streamId, /^[0-9a-f-]{36}$/);
  const subscribed = s.received[0]!['subscribed'] as { heartbeat_interval_seconds: number; master_info: { port: number } };
  assert.equal(subscribed.heartbeat_interval_seconds, 15);
  assert.equal(subscribed.master_info.port, m.port);

  const offers = await offersForAgents(s, [a1.agentId!, a2.agentId!]);
  const o1 = offers.get(a1.agentId!)!;
  assert.equal(o1.resources.find((r) => r.name === 'cpus')?.scalar?.value, 2);

  // Launch on agent 1; STARTING then RUNNING (the agent sends the next only once acked).
  let r = await s.call('ACCEPT', { offer_ids: [o1.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('t1', a1.agentId!)] } }], filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202, r.text);
  assert.equal(r.text, '');
  await ackUpdate(s, await s.next(updateFor('t1', 'TASK_STARTING')));
  const running = await s.next(updateFor('t1', 'TASK_RUNNING'));
  assert.equal(statusOf(running).agent_id?.value, a1.agentId);
  await ackUpdate(s, running);

  const fw = ((await callApi(m.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: Array<Record<string, unknown>> } }).get_frameworks.frameworks;
  assert.equal(fw.length, 1);
  assert.equal(fw[0]!['active'], true);
  assert.equal(fw[0]!['connected'], true);
  assert.equal(fw[0]!['recovered'], false);
  assert.deepEqual((fw[0]!['framework_info'] as { id: unknown }).id, { value: s.frameworkId });
  assert.ok((fw[0]!['allocated_resources'] as unknown[]).length > 0);

  // Bad launches on a fresh offer of agent 1: duplicate id, too many cpus; t1 keeps running.
  const fresh = await s.next((e) => e.type === 'OFFERS' && offersOf(e).some((o) => o.agent_id.value === a1.agentId), undefined, 'an offer of agent 1');
  const o1b = offersOf(fresh).find((o) => o.agent_id.value === a1.agentId)!;
  r = await s.call('ACCEPT', { offer_ids: [o1b.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('t1', a1.agentId!), task('big', a1.agentId!, 64)] } }], filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202);
  const dup = statusOf(await s.next(updateFor('t1', 'TASK_ERROR')));
  assert.equal(dup.reason, 'REASON_TASK_INVALID');
  assert.equal(dup.source, 'SOURCE_MASTER');
  assert.equal(dup.uuid, undefined);
  assert.equal(statusOf(await s.next(updateFor('big', 'TASK_ERROR'))).reason, 'REASON_TASK_INVALID');
  // A stale offer (already used): every task of the call is lost.
  r = await s.call('ACCEPT', { offer_ids: [o1b.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('stale', a1.agentId!)] } }] });
  assert.equal(r.status, 202);
  const lost = statusOf(await s.next(updateFor('stale', 'TASK_LOST')));
  assert.equal(lost.reason, 'REASON_INVALID_OFFERS');
  assert.match(lost.message ?? '', /^Task launched with invalid offers: /);
  assert.equal((await tasks(m)).tasks.find((x) => x.task_id.value === 't1')?.state, 'TASK_RUNNING');

  // Errors.
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${m.url}/api/v1/scheduler`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) }).then(async (x) => ({ status: x.status, text: await x.text() }));
  assert.deepEqual(await post({ type: 'REVIVE', framework_id: { value: 'nope' } }, { 'mesos-stream-id': s.streamId }), { status: 404, text: "Framework 'nope' not found" });
  assert.deepEqual(await post({ type: 'REVIVE', framework_id: { value: s.frameworkId } }), { status: 400, text: "All non-subscribe calls should include the 'Mesos-Stream-Id' header" });
  const other = await SchedulerClient.subscribe(m.address, { ...FW, name: 'other' });
  t.after(() => other.close());
  assert.deepEqual(await post({ type: 'REVIVE', framework_id: { value: s.frameworkId } }, { 'mesos-stream-id': other.streamId }), {
    status: 400,
    text: `The stream ID '${other.streamId}' included in this request didn't match the stream ID currently associated with framework ID ${s.frameworkId}`,
  });
  assert.deepEqual(await post({ type: 'ACCEPT', framework_id: { value: s.frameworkId } }, { 'mesos-stream-id': s.streamId }), { status: 400, text: "Failed to validate scheduler::Call: Expecting 'accept' to be present" });
  assert.deepEqual(await post({ type: 'SUBSCRIBE' }), { status: 400, text: "Failed to validate scheduler::Call: Expecting 'subscribe' to be present" });
  assert.deepEqual(await post({ type: 'SUBSCRIBE', framework_id: { value: 'x' }, subscribe: { framework_info: FW } }), { status: 400, text: "Failed to validate scheduler::Call: 'framework_id' differs from 'subscribe.framework_info.id'" });
  other.close();

  // Reconcile: explicit (known and unknown), implicit.
  r = await s.call('RECONCILE', { tasks: [{ task_id: { value: 't1' } }, { task_id: { value: 'ghost' } }] });
  assert.equal(r.status, 202);
  const rec = statusOf(await s.next(updateFor('t1', 'TASK_RUNNING')));
  assert.equal(rec.reason, 'REASON_RECONCILIATION');
  assert.equal(rec.uuid, undefined);
  assert.equal(statusOf(await s.next(updateFor('ghost'))).state, 'TASK_LOST');
  r = await s.call('RECONCILE', { tasks: [] });
  assert.equal(statusOf(await s.next(updateFor('t1'))).state, 'TASK_RUNNING');

  // DECLINE agent 2 for an hour: not offered in an allocation round after the decline (the
  // witness's); REVIVE brings it back (it can only be REVIVE: the filter outlasts the test).
  const witness = await AllocationWitness.start(t, m);
  const declineFrom = s.received.length;
  // Agent 2's first offer is still outstanding (offers do not time out).
  r = await s.call('DECLINE', { offer_ids: [offers.get(a2.agentId!)!.id], filters: { refuse_seconds: 3600 } });
  assert.equal(r.status, 202);
  await witness.round(s);
  const a2Offers = () => s.received.slice(declineFrom).filter((e) => e.type === 'OFFERS' && offersOf(e).some((o) => o.agent_id.value === a2.agentId));
  assert.equal(a2Offers().length, 0, 'agent 2 offered inside the refuse window');
  r = await s.call('REVIVE');
  assert.equal(r.status, 202);
  await eventually(() => (a2Offers().length > 0 ? true : undefined), undefined, 50, 'an offer of agent 2 after REVIVE');

  // SUPPRESS: no offers at all, though every offer goes back to the pool.
  r = await s.call('SUPPRESS');
  assert.equal(r.status, 202);
  r = await s.call('DECLINE', { offer_ids: s.received.flatMap((e) => (e.type === 'OFFERS' ? offersOf(e) : [])).map((o) => o.id), filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202);
  // Offers sent before the suppression may still be on their way: the answer to a reconciliation
  // asked for after it comes behind them on the same stream.
  r = await s.call('RECONCILE', { tasks: [{ task_id: { value: 't1' } }] });
  assert.equal(r.status, 202);
  const behind = await s.next((e) => updateFor('t1')(e) && statusOf(e).reason === 'REASON_RECONCILIATION', undefined, 'the reconciliation answer behind the suppression');
  const suppressedFrom = s.received.indexOf(behind) + 1;
  // A framework that subscribes now is offered both agents: an allocation round ran after the
  // suppression with their resources free, and offered this framework nothing.
  const unsuppressed = await SchedulerClient.subscribe(m.address, { ...FW, name: 'not-suppressed' });
  t.after(() => unsuppressed.close());
  await offersForAgents(unsuppressed, [a1.agentId!, a2.agentId!]);
  unsuppressed.close();
  assert.equal(s.received.slice(suppressedFrom).filter((e) => e.type === 'OFFERS').length, 0);

  // KILL: TASK_KILLED; GET_TASKS moves it to completed only after the ack.
  r = await s.call('KILL', { task_id: { value: 't1' }, agent_id: { value: a1.agentId } });
  assert.equal(r.status, 202);
  // The agent may send TASK_KILLING first (a framework acknowledges each update; the agent keeps at most two in flight).
  let killed = await s.next((e) => updateFor('t1', 'TASK_KILLING')(e) || updateFor('t1', 'TASK_KILLED')(e), undefined, 'TASK_KILLING or TASK_KILLED');
  if (statusOf(killed).state === 'TASK_KILLING') {
    await ackUpdate(s, killed);
    killed = await s.next(updateFor('t1', 'TASK_KILLED'), undefined, 'TASK_KILLED');
  }
  let ts = await tasks(m);
  assert.equal(ts.tasks.find((x) => x.task_id.value === 't1')?.state, 'TASK_KILLED');
  assert.equal(ts.completed_tasks.some((x) => x.task_id.value === 't1'), false);
  await ackUpdate(s, killed);
  ts = await eventually(async () => {
    const v = await tasks(m);
    return v.completed_tasks.some((x) => x.task_id.value === 't1') ? v : undefined;
  });
  assert.equal(ts.tasks.some((x) => x.task_id.value === 't1'), false);
});

test('framework failover within failover_timeout keeps the task; expiry kills it and removes the framework', async (t) => {
  const { m, a1 } = await cluster(t);
  const s1 = await SchedulerClient.subscribe(m.address, { ...FW, failover_timeout: 3 });
  const offers = await offersForAgents(s1, [a1.agentId!]);
  await s1.call('ACCEPT', { offer_ids: [offers.get(a1.agentId!)!.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('f1', a1.agentId!)] } }] });
  await ackUpdate(s1, await s1.next(updateFor('f1', 'TASK_STARTING')));
  // Do not ack RUNNING on the first stream: the agent's retry delivers it to the new one.
  await s1.next(updateFor('f1', 'TASK_RUNNING'));
  s1.close();
  await eventually(async () => {
    const f = ((await callApi(m.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: Array<{ connected: boolean; active: boolean }> } }).get_frameworks.frameworks[0];
    return f?.connected === false && f.active === false ? true : undefined;
  });
  const s2 = await SchedulerClient.subscribe(m.address, { ...FW, failover_timeout: 1 }, { frameworkId: s1.frameworkId });
  t.after(() => s2.close());
  assert.equal(s2.frameworkId, s1.frameworkId);
  const again = await s2.next(updateFor('f1', 'TASK_RUNNING'));
  assert.ok(statusOf(again).uuid !== undefined);
  await ackUpdate(s2, again);
  // A third subscription takes over from the second, which is told and closed.
  const s3 = await SchedulerClient.subscribe(m.address, { ...FW, failover_timeout: 1 }, { frameworkId: s1.frameworkId });
  const err = await s2.nextOfType('ERROR');
  assert.deepEqual(err['error'], { message: 'Framework failed over' });
  assert.equal(await s2.ended, 'stream ended');
  // Gone for good after failover_timeout (1 s): the task is killed at the agent.
  s3.close();
  await eventually(async () => {
    const v = (await callApi(m.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: unknown[]; completed_frameworks: Array<{ framework_info: { id: { value: string } } }> } };
    return v.get_frameworks.frameworks.length === 0 && v.get_frameworks.completed_frameworks[0]?.framework_info.id.value === s1.frameworkId ? true : undefined;
  }, undefined, 100, 'the framework removed');
  await eventually(async () => {
    const v = await tasks(m);
    const c = v.completed_tasks.find((x) => x.task_id.value === 'f1');
    return c?.state === 'TASK_KILLED' ? true : undefined;
  }, undefined, 100, 'f1 killed and completed');
  await assert.rejects(SchedulerClient.subscribe(m.address, FW, { frameworkId: s1.frameworkId }), /Framework has been removed/);
});

test('master restart: a checkpointing framework gets its running task back; unacked RUNNING is redelivered', async (t) => {
  const m1 = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a1 = await startAgent(t, { master: m1.address, ip: '127.0.0.2', hostname: 'a1', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS });
  const s1 = await SchedulerClient.subscribe(m1.address, { ...FW, checkpoint: true, failover_timeout: 60 });
  const offers = await offersForAgents(s1, [a1.agentId!]);
  await s1.call('ACCEPT', { offer_ids: [offers.get(a1.agentId!)!.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('r1', a1.agentId!)] } }] });
  await ackUpdate(s1, await s1.next(updateFor('r1', 'TASK_STARTING')));
  const firstRunning = statusOf(await s1.next(updateFor('r1', 'TASK_RUNNING')));
  const agentTasks = async (): Promise<Array<{ task_id: { value: string }; state: string }>> =>
    ((await callApi(a1.url, { type: 'GET_TASKS' })).json as { get_tasks: { launched_tasks: Array<{ task_id: { value: string }; state: string }> } }).get_tasks.launched_tasks ?? [];
  const pidOf = async (): Promise<number | undefined> => {
    const c = (await callApi(a1.url, { type: 'GET_CONTAINERS' })).json as { get_containers?: { containers?: Array<{ container_status?: { executor_pid?: number } }> } } | undefined;
    return c?.get_containers?.containers?.[0]?.container_status?.executor_pid;
  };
  const pid = await pidOf();
  s1.close();

  await m1.daemon.stop();
  const m2 = await startMaster(t, { workDir: m1.workDir, port: m1.port, flags: ['--allocation_interval=200ms'] });
  const recovered = ((await callApi(m2.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: Array<{ recovered: boolean; connected: boolean; framework_info: { id: { value: string } } }> } }).get_frameworks.frameworks;
  assert.equal(recovered[0]?.framework_info.id.value, s1.frameworkId);
  assert.equal(recovered[0]?.recovered, true);
  assert.equal(recovered[0]?.connected, false);
  await eventually(async () => ((await tasks(m2)).tasks.some((x) => x.task_id.value === 'r1') ? true : undefined), undefined, 100, 'the agent re-registered with r1');

  const s2 = await SchedulerClient.subscribe(m2.address, { ...FW, checkpoint: true, failover_timeout: 60 }, { frameworkId: s1.frameworkId });
  t.after(() => s2.close());
  const redelivered = statusOf(await s2.next(updateFor('r1', 'TASK_RUNNING')));
  assert.equal(redelivered.uuid, firstRunning.uuid);
  await s2.call('ACKNOWLEDGE', { agent_id: redelivered.agent_id, task_id: redelivered.task_id, uuid: redelivered.uuid });
  const before = s2.received.length;
  await s2.call('RECONCILE', { tasks: [] });
  const rec = statusOf(await s2.next((e) => updateFor('r1')(e) && statusOf(e).reason === 'REASON_RECONCILIATION'));
  assert.equal(rec.state, 'TASK_RUNNING');
  assert.equal((await agentTasks()).find((x) => x.task_id.value === 'r1')?.state, 'TASK_RUNNING');
  if (pid !== undefined) assert.ok(alive(pid), 'the task process kept running');
  // The acknowledgement reached the agent: it resends nothing any more.
  await eventually(async () => ((await (await fetch(`${a1.url}/metrics/snapshot`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) })).json()) as Record<string, number>)['drydock/status_updates_pending'] === 0 || undefined, undefined, 50, 'no update pending on the agent');
  // A resend already on its way would be forwarded within moments; how long this looks is how
  // sensitive the check is, not a bound a correct master must beat.
  await new Promise((res) => setTimeout(res, 1_000));
  // Nothing but the reconciliation answer and offers/heartbeats after the ack: no state delivered twice.
  const extra = s2.received.slice(before).filter((e) => e.type === 'UPDATE' && statusOf(e).uuid !== undefined);
  assert.deepEqual(extra, []);
});

test('TEARDOWN kills every task and removes the framework; a disconnected framework gets 403', async (t) => {
  const { m, a1 } = await cluster(t);

  // A framework whose stream closed is still known (failover_timeout) but not subscribed.
  const away = await SchedulerClient.subscribe(m.address, { ...FW, name: 'away', failover_timeout: 60 });
  away.close();
  await eventually(async () => {
    const fw = ((await callApi(m.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: Array<{ framework_info: { id: { value: string } }; connected: boolean }> } }).get_frameworks.frameworks;
    return fw.some((f) => f.framework_info.id.value === away.frameworkId && !f.connected) ? true : undefined;
  }, undefined, 50, 'the framework to show as disconnected');
  const refused = await away.call('REVIVE');
  assert.equal(refused.status, 403);
  assert.equal(refused.text, 'Framework is not subscribed');

  const s = await SchedulerClient.subscribe(m.address, { ...FW, name: 'doomed', failover_timeout: 60 });
  t.after(() => s.close());
  const offer = (await offersForAgents(s, [a1.agentId!])).get(a1.agentId!)!;
  const r = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task('d1', a1.agentId!), task('d2', a1.agentId!)] } }] });
  assert.equal(r.status, 202, r.text);
  for (const id of ['d1', 'd2']) {
    await ackUpdate(s, await s.next(updateFor(id, 'TASK_STARTING')));
    await ackUpdate(s, await s.next(updateFor(id, 'TASK_RUNNING')));
  }

  const td = await s.call('TEARDOWN');
  assert.equal(td.status, 202, td.text);
  assert.equal(await s.ended, 'stream ended');
  await eventually(async () => {
    const v = await tasks(m);
    const done = ['d1', 'd2'].every((id) => v.completed_tasks.find((x) => x.task_id.value === id)?.state === 'TASK_KILLED');
    return done && !v.tasks.some((x) => x.task_id.value.startsWith('d')) ? true : undefined;
  }, undefined, 100, 'both tasks killed and completed');
  const fw = ((await callApi(m.url, { type: 'GET_FRAMEWORKS' })).json as { get_frameworks: { frameworks: Array<{ framework_info: { id: { value: string } } }>; completed_frameworks: Array<{ framework_info: { id: { value: string } } }> } }).get_frameworks;
  assert.ok(!fw.frameworks.some((f) => f.framework_info.id.value === s.frameworkId));
  assert.ok(fw.completed_frameworks.some((f) => f.framework_info.id.value === s.frameworkId));
  // The agent's own view agrees: nothing of that framework still runs.
  const agentTasks = (await callApi(a1.url, { type: 'GET_TASKS' })).json as { get_tasks: { launched_tasks: Array<{ framework_id: { value: string } }> } };
  assert.ok(!agentTasks.get_tasks.launched_tasks.some((x) => x.framework_id.value === s.frameworkId));
  await assert.rejects(SchedulerClient.subscribe(m.address, FW, { frameworkId: s.frameworkId }), /Framework has been removed/);
});

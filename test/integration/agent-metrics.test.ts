/**
 * The agent's metrics end to end (issue 14): a real master, a real agent, a framework through
 * scheduler/client.ts. `/metrics` parses as the Prometheus text format and its figures move as
 * tasks launch, run and are killed, including a kill that escalates to SIGKILL (a task that
 * ignores SIGTERM, with a short grace period); `/metrics/snapshot` has Mesos' `slave/*` keys.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, EVENT_DEADLINE_MS, eventually, FIXTURES, startAgent, startMaster, type AgentHandle } from '../helpers/daemons.js';
import { daemonSample, fetchSnapshot, scrapeMetrics, type Exposition } from '../helpers/exposition.js';

const FW = { user: 'root', name: 'metrics-fw', checkpoint: true, failover_timeout: 60, capabilities: [{ type: 'TASK_KILLING_STATE' }] };
type Offer = { id: { value: string }; agent_id: { value: string } };
type Status = { task_id: { value: string }; state: string; uuid?: string; agent_id?: { value: string } };

function task(id: string, agentId: string, cmd: string, graceMs?: number): Record<string, unknown> {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: agentId },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 64 } }],
    command: { value: cmd },
    ...(graceMs !== undefined ? { kill_policy: { grace_period: { nanoseconds: graceMs * 1e6 } } } : {}),
  };
}

function snapshot(a: AgentHandle): Promise<Record<string, number>> {
  return fetchSnapshot(`${a.url}/metrics/snapshot`);
}

/** One series of the agent's exposition; every series carries daemon="agent". */
function value(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return daemonSample(e, 'agent', name, labels);
}

test('agent /metrics and /metrics/snapshot: launches, kills, an escalation to SIGKILL, checkpoint writes', async (t) => {
  const master = await startMaster(t);
  // SIGUSR1 at the end: the agent kills its tasks before it exits.
  const agent = await startAgent(t, { master: master.address, stopSignal: 'SIGUSR1', resources: 'cpus:4;mem:4096;disk:10000' });
  const agentId = agent.agentId!;

  // Before anything runs: registered, nothing launched, every Mesos key present.
  const before = await scrapeMetrics(`${agent.url}/metrics`);
  assert.equal(value(before, 'drydock_agent_registered'), 1);
  assert.equal(value(before, 'drydock_agent_tasks', { state: 'TASK_RUNNING' }), 0);
  assert.equal(value(before, 'drydock_agent_task_launches_total'), 0);
  assert.equal(value(before, 'drydock_agent_task_kill_escalations_total'), 0);
  assert.equal(value(before, 'drydock_agent_master_registrations_total', { kind: 'new' }), 1);
  assert.equal(before.types.get('drydock_agent_checkpoint_write_duration_seconds'), 'histogram');
  // The agent id was checkpointed before `registered` was logged: at least one timed write.
  assert.ok((value(before, 'drydock_agent_checkpoint_write_duration_seconds_count') ?? 0) >= 1);
  assert.ok(value(before, 'nodejs_eventloop_lag_seconds') !== undefined, 'the process figures are there');
  const snap0 = await snapshot(agent);
  assert.equal(snap0['slave/registered'], 1);
  assert.equal(snap0['slave/tasks_running'], 0);
  assert.equal(snap0['slave/cpus_total'], 4);
  assert.equal(snap0['slave/mem_total'], 4096);
  assert.ok(snap0['slave/uptime_secs']! >= 0);
  assert.ok(snap0['system/cpus_total']! >= 1);

  // A framework launches two tasks; one ignores SIGTERM and has a 300 ms grace period.
  const s = await SchedulerClient.subscribe(master.address, FW);
  t.after(() => s.close());
  s.onEvent = (e: SchedulerEvent): void => {
    if (e.type !== 'UPDATE') return;
    const st = (e['update'] as { status: Status }).status;
    if (st.uuid !== undefined) void s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid }).catch(() => {});
  };
  const offers = await s.nextOfType('OFFERS');
  const offer = (offers['offers'] as { offers: Offer[] }).offers.find((o) => o.agent_id.value === agentId);
  assert.ok(offer !== undefined, 'an offer for the agent');
  const accepted = await s.call('ACCEPT', {
    offer_ids: [offer.id],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [task('sleeper', agentId, 'sleep 60'), task('stubborn', agentId, `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 300)] } }],
    filters: { refuse_seconds: 0 },
  });
  assert.equal(accepted.status, 202, accepted.text);

  const running = await eventually(async () => {
    const v = await snapshot(agent);
    return v['slave/tasks_running'] === 2 ? v : undefined;
  }, undefined, 100, 'two tasks running on the agent');
  assert.equal(running['slave/executors_running'], 2);
  assert.equal(running['slave/cpus_used'], 1);
  assert.equal(running['slave/cpus_percent'], 0.25);
  assert.equal(running['slave/mem_used'], 128);
  assert.ok(running['slave/valid_status_updates']! >= 4, 'STARTING and RUNNING of each task');
  const up = await scrapeMetrics(`${agent.url}/metrics`);
  assert.equal(value(up, 'drydock_agent_tasks', { state: 'TASK_RUNNING' }), 2);
  assert.equal(value(up, 'drydock_agent_task_processes'), 2);
  assert.equal(value(up, 'drydock_agent_task_launches_total'), 2);
  assert.equal(value(up, 'drydock_agent_resource_used', { resource: 'cpus' }), 1);
  assert.ok(value(up, 'drydock_agent_checkpoint_write_duration_seconds_count')! > value(before, 'drydock_agent_checkpoint_write_duration_seconds_count')!);

  // The fixture must have installed its trap before it is signalled.
  const stdout = join(agent.workDir, 'sandboxes', s.frameworkId, 'stubborn', 'stdout');
  await eventually(() => (existsSync(stdout) && readFileSync(stdout, 'utf8').includes('ready') ? true : undefined), undefined, 20, 'stubborn ready');

  for (const id of ['sleeper', 'stubborn']) {
    const r = await s.call('KILL', { task_id: { value: id }, agent_id: { value: agentId } });
    assert.equal(r.status, 202, r.text);
  }
  const after = await eventually(async () => {
    const e = await scrapeMetrics(`${agent.url}/metrics`);
    return value(e, 'drydock_agent_task_terminal_total', { state: 'TASK_KILLED' }) === 2 ? e : undefined;
  }, undefined, 100, 'both tasks killed');
  assert.equal(value(after, 'drydock_agent_task_kills_total'), 2);
  // Only the task that ignored SIGTERM needed SIGKILL.
  assert.equal(value(after, 'drydock_agent_task_kill_escalations_total'), 1);

  // Once the master acknowledged the terminal updates, nothing is pending and nothing holds resources.
  const done = await eventually(async () => {
    const v = await snapshot(agent);
    return v['drydock/status_updates_pending'] === 0 && v['slave/tasks_killing'] === 0 ? v : undefined;
  }, undefined, 100, 'terminal updates acknowledged');
  assert.equal(done['slave/tasks_running'], 0);
  assert.equal(done['slave/tasks_killed'], 2);
  assert.equal(done['slave/executors_running'], 0);
  assert.equal(done['slave/cpus_used'], 0);
  assert.equal(done['drydock/task_kill_escalations'], 1);
  assert.equal(done['drydock/task_launches'], 2);

  // GET_METRICS on the agent API: the same keys as {name, value}.
  const gm = await callApi(agent.url, { type: 'GET_METRICS' });
  assert.equal(gm.status, 200, gm.text);
  const metrics = (gm.json as { get_metrics: { metrics: Array<{ name: string; value: number }> } }).get_metrics.metrics;
  assert.equal(metrics.find((m) => m.name === 'slave/tasks_killed')?.value, 2);

  // Only GET: a POST is refused and changes nothing.
  const post = await fetch(`${agent.url}/metrics`, { method: 'POST', body: 'x', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET');
});

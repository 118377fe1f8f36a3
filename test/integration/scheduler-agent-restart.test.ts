/**
 * Reliable status across an agent restart, end to end: a real master, a real agent killed with
 * `kill -9` and restarted, and two schedulers. The checkpointing framework's task keeps running
 * and its later updates arrive; the other framework's task is lost exactly once.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { alive, eventually, startAgent, startMaster, tempDir } from '../helpers/daemons.js';
import { taskPids } from '../helpers/fake-master.js';
import { checkpointTask } from '../helpers/checkpoint.js';

type Offer = { id: { value: string }; agent_id: { value: string } };
type Status = { task_id: { value: string }; state: string; uuid?: string; reason?: string; agent_id?: { value: string } };

/** The task's pid from the agent's checkpoint, once it is there: TASK_RUNNING goes out before the commit that records the pid. */
function taskPid(workDir: string, frameworkId: string, taskId: string): Promise<number> {
  return eventually(() => checkpointTask(workDir, frameworkId, taskId)?.task_pid, undefined, 10, `the pid of ${taskId} in the checkpoint`);
}

const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;
const isUpdate = (taskId: string, state: string) => (e: SchedulerEvent): boolean =>
  e.type === 'UPDATE' && statusOf(e).task_id.value === taskId && statusOf(e).state === state;

async function ack(s: SchedulerClient, e: SchedulerEvent): Promise<void> {
  const st = statusOf(e);
  if (st.uuid === undefined) return;
  const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
  assert.equal(r.status, 202, r.text);
}

async function launch(s: SchedulerClient, taskId: string): Promise<void> {
  const offer = (await s.nextOfType('OFFERS'))['offers'] as { offers: Offer[] };
  const o = offer.offers[0]!;
  const r = await s.call('ACCEPT', {
    offer_ids: [o.id],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [{
      name: taskId, task_id: { value: taskId }, agent_id: o.agent_id,
      resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }],
      command: { value: 'sleep 60' },
    }] } }],
    filters: { refuse_seconds: 0 },
  });
  assert.equal(r.status, 202, r.text);
  await ack(s, await s.next(isUpdate(taskId, 'TASK_STARTING'), undefined, `${taskId} STARTING`));
  await ack(s, await s.next(isUpdate(taskId, 'TASK_RUNNING'), undefined, `${taskId} RUNNING`));
}

test('kill -9 of an agent: a checkpointing framework keeps its task, the other loses it once', { timeout: 600_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const workDir = tempDir(t, 'drydock-agent-restart-');
  const agentOpts = { master: m.address, ip: '127.0.0.4', hostname: 'restarted', workDir, resources: 'cpus:4;mem:1024', flags: ['--status_update_retry_interval=300ms'] };
  const a1 = await startAgent(t, agentOpts);
  t.after(() => {
    for (const pid of taskPids(workDir)) if (alive(pid)) process.kill(-pid, 'SIGKILL');
  });

  const durable = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'durable', checkpoint: true, failover_timeout: 3600 });
  t.after(() => durable.close());
  await launch(durable, 'keeps');
  // Give the rest of the agent back, so the second framework gets an offer: as in Mesos,
  // SUPPRESS stops new offers and the ones already held are declined.
  assert.equal((await durable.call('SUPPRESS')).status, 202);
  const held = durable.received.filter((e) => e.type === 'OFFERS').flatMap((e) => (e['offers'] as { offers: Offer[] }).offers).slice(1);
  if (held.length > 0) assert.equal((await durable.call('DECLINE', { offer_ids: held.map((o) => o.id) })).status, 202);
  const fleeting = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'fleeting' });
  t.after(() => fleeting.close());
  await launch(fleeting, 'goes');
  const keepsPid = await taskPid(workDir, durable.frameworkId, 'keeps');
  const goesPid = await taskPid(workDir, fleeting.frameworkId, 'goes');

  a1.daemon.signal('SIGKILL');
  await a1.daemon.exited;
  const a2 = await startAgent(t, agentOpts);
  assert.equal(a2.agentId, a1.agentId, 'the restarted agent keeps its id');

  // The non-checkpointing framework's task is lost, once, and its process is gone.
  const lost = await fleeting.next(isUpdate('goes', 'TASK_LOST'), undefined, 'goes TASK_LOST');
  await ack(fleeting, lost);
  // Nothing left on the agent to resend (only this acknowledgement was ever sent), and anything
  // the master said of the task is on the stream before its answer to a reconciliation.
  await eventually(async () => ((await (await fetch(`${a2.url}/metrics/snapshot`)).json()) as Record<string, number>)['drydock/status_updates_pending'] === 0 || undefined, undefined, 50, 'no update pending on the agent');
  assert.equal((await fleeting.call('RECONCILE', { tasks: [{ task_id: { value: 'goes' } }] })).status, 202);
  await fleeting.next((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'goes' && statusOf(e).reason === 'REASON_RECONCILIATION', undefined, 'the reconciliation answer for goes');
  const terminal = fleeting.received.filter((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'goes' && statusOf(e).reason !== 'REASON_RECONCILIATION' && ['TASK_LOST', 'TASK_KILLED', 'TASK_FAILED', 'TASK_FINISHED'].includes(statusOf(e).state));
  assert.equal(new Set(terminal.map((e) => `${statusOf(e).state}/${statusOf(e).uuid ?? 'master'}`)).size, 1, `one terminal state: ${JSON.stringify(terminal.map(statusOf))}`);

  assert.equal(alive(goesPid), false, 'the lost task\'s process is gone');

  // The checkpointing framework's task kept running through the restart and is still killable.
  assert.equal(alive(keepsPid), true, 'the checkpointed task survived the agent');
  assert.equal(durable.received.some((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'keeps' && statusOf(e).state === 'TASK_LOST'), false);
  const kill = await durable.call('KILL', { task_id: { value: 'keeps' }, agent_id: { value: a2.agentId } });
  assert.equal(kill.status, 202, kill.text);
  const killed = await durable.next(isUpdate('keeps', 'TASK_KILLED'), undefined, 'keeps TASK_KILLED');
  await ack(durable, killed);
  assert.equal(alive(keepsPid), false);
  assert.equal(statusOf(killed).agent_id?.value, a2.agentId);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FrameworkInfo } from '../../shared/mesos.js';
import { alive, eventually, startAgent } from '../helpers/daemons.js';
import { FRAMEWORK, agentWorkDir, shellTask, startFakeMaster } from '../helpers/fake-master.js';
import { checkpointTask } from '../helpers/checkpoint.js';

/** A framework that does not ask for checkpointing: its tasks must not outlive the agent. */
const EPHEMERAL: FrameworkInfo = { user: 'root', name: 'ephemeral', id: { value: 'fw-ephemeral' } };

test('after kill -9, tasks of a checkpointing framework are re-adopted; the others are killed and reported TASK_LOST', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const first = await startAgent(t, { master: master.address, workDir });
  master.runTask(shellTask('kept', 'sleep 60'), FRAMEWORK);
  master.runTask(shellTask('lost', 'sleep 60'), EPHEMERAL);
  await master.waitForUpdate('kept', 'TASK_RUNNING');
  await master.waitForUpdate('lost', 'TASK_RUNNING');
  const keptPid = await taskPid(workDir, 'fw-test', 'kept');
  const lostPid = await taskPid(workDir, 'fw-ephemeral', 'lost');
  assert.ok(keptPid > 0 && lostPid > 0);
  // Their acknowledgements checkpointed too: else the restarted agent rightly resends TASK_STARTING
  // (two updates are in flight at once, and an acknowledgement's write is not waited for).
  await eventually(
    () => (['kept', 'lost'].every((id) => checkpointTask(workDir, id === 'kept' ? 'fw-test' : 'fw-ephemeral', id)?.pending.length === 0) ? true : undefined),
    undefined,
    20,
    'both acknowledgements in the checkpoint',
  );

  first.daemon.child.kill('SIGKILL');
  await first.daemon.exited;
  // Both tasks outlive the agent process itself (own sessions); recovery decides their fate.
  assert.equal(alive(keptPid), true);
  assert.equal(alive(lostPid), true);

  const before = master.updates.length;
  const second = await startAgent(t, { master: master.address, workDir });
  assert.equal(second.agentId, first.agentId);

  const lost = await master.waitForUpdate('lost', 'TASK_LOST', undefined, before);
  assert.equal(lost.framework_id, 'fw-ephemeral');
  assert.equal(lost.status.source, 'SOURCE_AGENT');
  assert.equal(lost.status.reason, 'REASON_AGENT_RESTARTED');
  assert.equal(lost.status.message, 'Agent restarted; framework fw-ephemeral does not checkpoint');
  assert.ok(lost.status.uuid !== undefined, 'TASK_LOST is a reliable update (it has a uuid to acknowledge)');
  await eventually(() => (alive(lostPid) ? undefined : true), undefined, 50, 'the non-checkpointed task to be gone');

  const reg = await master.waitForRegister(1);
  assert.equal(reg.tasks.find((x) => x.task.task_id.value === 'kept')?.state, 'TASK_RUNNING');
  assert.equal(alive(keptPid), true);
  assert.equal(master.updates.slice(before).some((u) => u.status.task_id.value === 'kept' && u.status.state !== 'TASK_RUNNING'), false);

  // The re-adopted task is still under the agent's control.
  master.killTask('kept', 2000);
  await master.waitForUpdate('kept', 'TASK_KILLED', undefined, before);
  assert.equal(alive(keptPid), false);
});

test('TASK_LOST of a non-checkpointing framework is resent until acknowledged, also across another restart', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const first = await startAgent(t, { master: master.address, workDir });
  master.runTask(shellTask('gone', 'sleep 60'), EPHEMERAL);
  await master.waitForUpdate('gone', 'TASK_RUNNING');
  first.daemon.child.kill('SIGKILL');
  await first.daemon.exited;

  // No acknowledgements now: the update must stay queued (and checkpointed).
  master.autoAck = false;
  const before = master.updates.length;
  const second = await startAgent(t, { master: master.address, workDir });
  const lost = await master.waitForUpdate('gone', 'TASK_LOST', undefined, before);
  second.daemon.child.kill('SIGKILL');
  await second.daemon.exited;

  const mid = master.updates.length;
  master.autoAck = true;
  await startAgent(t, { master: master.address, workDir });
  const again = await master.waitForUpdate('gone', 'TASK_LOST', undefined, mid);
  assert.equal(again.status.uuid, lost.status.uuid, 'the same update, resent, not a new one');
  assert.equal(master.states('gone').filter((s) => s === 'TASK_LOST').length, 1);
});

/**
 * The task's pid, from the agent's checkpoint (ids here need no path escaping), once it is
 * there: TASK_RUNNING goes out before the commit that records the pid.
 */
function taskPid(workDir: string, frameworkId: string, taskId: string): Promise<number> {
  return eventually(() => checkpointTask(workDir, frameworkId, taskId)?.task_pid, undefined, 10, `the pid of ${taskId} in the checkpoint`);
}

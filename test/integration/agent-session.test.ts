import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { alive, eventually, startAgent } from '../helpers/daemons.js';
import { agentWorkDir, shellTask, startFakeMaster, checkpointedTaskPids } from '../helpers/fake-master.js';

test('a garbled master frame (not JSON) closes with PROTOCOL_ERROR; the agent re-registers with the same id and its tasks', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t) });
  master.runTask(shellTask('keep', 'sleep 60'));
  await master.waitForUpdate('keep', 'TASK_RUNNING');
  const socket = master.socket;
  assert.ok(socket);
  const closed = once(socket, 'close', { signal: AbortSignal.timeout(10_000) });
  // A message that parses but does not validate is refused with the session kept (agent-refusals.test.ts).
  master.sendRaw('{"type":"RUN_TASK"');
  const [code, reason] = (await closed) as [number, Buffer];
  assert.equal(code, 4400);
  assert.match(reason.toString(), /frame is not JSON/);
  await agent.daemon.waitForMsg('invalid master message');
  const reg = await master.waitForRegister(1);
  assert.equal(reg.agent_id, agent.agentId);
  assert.deepEqual(reg.tasks.map((x) => [x.task.task_id.value, x.state]), [['keep', 'TASK_RUNNING']]);

  // A master that vanishes (no close frame) is also survived.
  master.dropAgent();
  const again = await master.waitForRegister(2);
  assert.equal(again.agent_id, agent.agentId);
  assert.equal(agent.daemon.running, true);
});

test('SIGUSR1 kills every task with its kill policy and exits 0; SIGTERM leaves tasks running', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const agent = await startAgent(t, { master: master.address, workDir });
  master.runTask(shellTask('a', 'sleep 60'));
  await master.waitForUpdate('a', 'TASK_RUNNING');
  const [pid] = await checkpointedTaskPids(workDir, 1);
  assert.ok(pid);

  agent.daemon.signal('SIGTERM');
  assert.equal((await agent.daemon.exited).code, 0);
  assert.equal(alive(pid), true, 'SIGTERM of the agent must leave tasks running');

  const second = await startAgent(t, { master: master.address, workDir });
  await master.waitForRegister(1);
  second.daemon.signal('SIGUSR1');
  const killed = await master.waitForUpdate('a', 'TASK_KILLED');
  assert.equal(killed.status.message, 'Command terminated with signal Terminated');
  assert.equal((await second.daemon.exited).code, 0);
  await eventually(() => (alive(pid) ? undefined : true));
});

test('commands from a master with an older epoch than the agent has seen are refused (a deposed master cannot launch or kill)', async (t) => {
  const master = await startFakeMaster(t, { epoch: '5', autoAck: true });
  const workDir = agentWorkDir(t);
  const agent = await startAgent(t, { master: master.address, workDir });
  const register = await master.waitForRegister();
  assert.ok(register !== undefined);
  const before = agent.daemon.records.length;
  master.send({ type: 'RUN_TASK', framework_id: 'fw-test', framework: { user: 'root', name: 'f', id: { value: 'fw-test' } }, task: shellTask('stale', 'sleep 30'), epoch: '4' });
  await agent.daemon.waitForMsg('message from a deposed master refused', { type: 'RUN_TASK', epoch: '4' }, undefined, before);
  master.runTask(shellTask('current', 'sleep 30'));
  master.send({ type: 'RUN_TASK', framework_id: 'fw-test', framework: { user: 'root', name: 'f', id: { value: 'fw-test' } }, task: shellTask('same-epoch', 'sleep 30'), epoch: '5' });
  await master.waitForUpdate('current', 'TASK_RUNNING');
  await master.waitForUpdate('same-epoch', 'TASK_RUNNING');
  assert.deepEqual(master.states('stale'), [], 'the stale command launched nothing');
});

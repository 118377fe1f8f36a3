import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AGENT_BIN, Daemon, alive, type Exit, eventually, startAgent } from '../helpers/daemons.js';
import { agentWorkDir, shellTask, startFakeMaster, checkpointedTaskPids } from '../helpers/fake-master.js';
import { checkpointTask } from '../helpers/checkpoint.js';

/** The daemon's exit, or a rejection after timeoutMs (the one guard by default). */
async function exitOf(d: Daemon, timeoutMs?: number): Promise<Exit> {
  const exit = await d.exitWithin(timeoutMs);
  if (exit === undefined) throw new Error('agent did not exit');
  return exit;
}

test('after kill -9 the agent re-adopts live tasks, reports those that ended meanwhile, keeps its id', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const first = await startAgent(t, { master: master.address, workDir });
  master.runTask(shellTask('long', 'sleep 60'));
  master.runTask(shellTask('short', 'sleep 1; exit 7'));
  await master.waitForUpdate('long', 'TASK_RUNNING');
  await master.waitForUpdate('short', 'TASK_RUNNING');
  const pids = await checkpointedTaskPids(workDir, 2);
  assert.equal(pids.length, 2);

  first.daemon.child.kill('SIGKILL');
  await first.daemon.exited;
  // The short task ends while no agent is watching; the long one keeps running.
  await eventually(() => (pids.filter(alive).length === 1 ? true : undefined), undefined, 50, 'the short task to exit');

  const second = await startAgent(t, { master: master.address, workDir });
  assert.equal(second.agentId, first.agentId);
  const reg = await master.waitForRegister(1);
  assert.equal(reg.agent_id, first.agentId);
  const long = reg.tasks.find((x) => x.task.task_id.value === 'long');
  assert.equal(long?.state, 'TASK_RUNNING');
  assert.deepEqual(reg.frameworks.map((f) => f.id?.value), ['fw-test']);
  const failed = await master.waitForUpdate('short', 'TASK_FAILED');
  assert.equal(failed.status.message, 'Command exited with status 7');

  master.killTask('long', 2000);
  const killed = await master.waitForUpdate('long', 'TASK_KILLED');
  assert.equal(killed.status.message, 'Command terminated with signal Terminated');
  for (const pid of pids) assert.equal(alive(pid), false);
});

test('a corrupt checkpoint is moved aside and the agent starts as a new one', async (t) => {
  const master = await startFakeMaster(t);
  const workDir = agentWorkDir(t);
  mkdirSync(join(workDir, 'meta'), { recursive: true });
  writeFileSync(join(workDir, 'meta', 'agent.json'), '{"format":1,"hostname":"agent-te');
  const agent = await startAgent(t, { master: master.address, workDir });
  const reg = await master.waitForRegister();
  assert.equal(reg.agent_id, undefined);
  assert.ok(agent.agentId);
  const err = await agent.daemon.waitForMsg('corrupt checkpoint, starting as a new agent');
  assert.match(String(err['file']), /meta\/agent\.json$/);
  assert.match(String(err['problem']), /not valid JSON/);
  assert.equal(readdirSync(workDir).filter((d) => d.startsWith('meta.corrupt-')).length, 1);
  assert.ok(existsSync(join(workDir, 'meta', 'journal')), 'the new agent has a checkpoint of its own');
});

test('a checkpoint written for another hostname/ip stops the agent with exit 78', async (t) => {
  const master = await startFakeMaster(t);
  const workDir = agentWorkDir(t);
  mkdirSync(join(workDir, 'meta'), { recursive: true });
  writeFileSync(join(workDir, 'meta', 'agent.json'), JSON.stringify({ format: 1, hostname: 'elsewhere', ip: '127.0.0.9', agent_id: 'a1' }));
  const d = new Daemon(AGENT_BIN, [`--master=${master.address}`, '--ip=127.0.0.1', '--port=0', `--work_dir=${workDir}`, '--hostname=agent-test', '--resources=cpus:1;mem:100;disk:100']);
  t.after(() => d.stop());
  const exit = await exitOf(d);
  assert.equal(exit.code, 78);
  assert.match(d.stderr, /elsewhere/);
  assert.match(d.stderr, /remove .*meta/);
  assert.equal(d.stderr.trim().split('\n').length, 1);
  assert.equal(master.registrations.length, 0);
});

for (const [name, args, flag] of [
  ['unknown flag', ['--master=127.0.0.1:1', '--bogus=1'], '--bogus'],
  ['bad --resources', ['--master=127.0.0.1:1', '--resources=cpus:lots'], '--resources'],
  ['missing --master', ['--resources=cpus:1;mem:1;disk:1;ports:[1-2]', '--ip=127.0.0.1'], '--master'],
  ['bad --port', ['--master=127.0.0.1:1', '--port=99999'], '--port'],
] as const) {
  test(`flags: ${name} exits non-zero naming the flag`, async (t) => {
    const d = new Daemon(AGENT_BIN, [...args]);
    t.after(() => d.stop());
    const exit = await exitOf(d);
    assert.notEqual(exit.code, 0);
    assert.ok(d.stderr.includes(flag), `stderr does not name ${flag}: ${d.stderr}`);
  });
}

test('SHUTDOWN before registration: message on stderr, exit 0, no reconnect', async (t) => {
  const master = await startFakeMaster(t, { refuse: 'Machine is `DOWN`' });
  const workDir = agentWorkDir(t);
  const agent = await startAgent(t, { master: master.address, workDir, waitRegistered: false });
  const exit = await exitOf(agent.daemon);
  assert.equal(exit.code, 0);
  assert.match(agent.daemon.stderr, /Machine is `DOWN`/);
  assert.equal(master.registrations.length, 1);
});

test('TASK_RUNNING is committed with the launch: an agent killed before the pid was recorded sends the same update again', async (t) => {
  const master = await startFakeMaster(t);
  const workDir = agentWorkDir(t);
  const first = await startAgent(t, { master: master.address, workDir });
  master.runTask(shellTask('prep', 'sleep 60'));
  const starting = await master.waitForUpdate('prep', 'TASK_STARTING');
  // Sent without waiting for TASK_STARTING's acknowledgement (nothing is acknowledged here).
  const running = await master.waitForUpdate('prep', 'TASK_RUNNING');
  const [pid] = await checkpointedTaskPids(workDir, 1);
  assert.ok(pid !== undefined && alive(pid));
  first.daemon.child.kill('SIGKILL');
  await first.daemon.exited;

  // Back to the checkpoint as it was when the launcher started: the task, its TASK_STARTING and
  // the prepared TASK_RUNNING, no pid. Every change after that line is cut.
  const journal = join(workDir, 'meta', 'journal');
  const lines = readFileSync(journal, 'utf8').split('\n');
  const launchLine = lines.findIndex((l) => l.includes('"value":"prep"') && l.includes('"state":"TASK_STARTING"'));
  assert.ok(launchLine >= 0, 'the launch is in the journal');
  writeFileSync(journal, lines.slice(0, launchLine + 1).join('\n') + '\n');
  const atLaunch = checkpointTask(workDir, 'fw-test', 'prep');
  assert.equal(atLaunch?.task_pid, undefined);
  assert.equal(atLaunch?.running?.uuid, running.status.uuid, 'the update sent is the one committed at launch');
  assert.deepEqual(atLaunch?.pending.map((s) => s.uuid), [starting.status.uuid]);

  const sentBefore = master.updates.length;
  await startAgent(t, { master: master.address, workDir });
  await master.waitForRegister(1);
  // The task is re-adopted and the same two updates go out again: nothing new is made up.
  await master.waitFor(() => (master.updates.slice(sentBefore).some((u) => u.status.uuid === running.status.uuid) ? true : undefined), undefined, 'TASK_RUNNING resent');
  assert.deepEqual(master.states('prep'), ['TASK_STARTING', 'TASK_RUNNING']);
  assert.equal(alive(pid), true);
  master.ack(starting);
  master.ack(running);
  master.killTask('prep', 0);
  await master.waitForUpdate('prep', 'TASK_KILLED');
  assert.equal(alive(pid), false);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { FIXTURES, alive, callApi, eventually, startAgent } from '../helpers/daemons.js';
import { FRAMEWORK, agentWorkDir, shellTask, startFakeMaster, checkpointedTaskPids } from '../helpers/fake-master.js';

test('a task runs STARTING, RUNNING, FINISHED; a failing one reports its exit code', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t) });
  const reg = await master.waitForRegister();
  assert.equal(reg.agent.hostname, 'agent-test');
  assert.equal(reg.agent.port, agent.port);

  master.runTask(shellTask('ok', 'echo hello; sleep 0.2'));
  master.runTask(shellTask('bad', 'exit 3'));
  const finished = await master.waitForUpdate('ok', 'TASK_FINISHED');
  assert.equal(finished.status.message, 'Command exited with status 0');
  assert.equal(finished.status.source, 'SOURCE_EXECUTOR');
  assert.equal(finished.status.agent_id?.value, agent.agentId);
  assert.equal(Buffer.from(finished.status.uuid ?? '', 'base64').length, 16);
  assert.deepEqual(master.states('ok'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_FINISHED']);
  const failed = await master.waitForUpdate('bad', 'TASK_FAILED');
  assert.equal(failed.status.message, 'Command exited with status 3');
  assert.deepEqual(master.states('bad'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_FAILED']);

  // The sandbox holds the task's output, and both tasks end up completed.
  const tasks = await eventually(async () => {
    const r = await callApi(agent.url, { type: 'GET_TASKS' });
    const lists = (r.json as { get_tasks: Record<string, Array<{ task_id: { value: string }; state: string }>> }).get_tasks;
    return lists['completed_tasks']?.length === 2 ? lists : undefined;
  });
  assert.deepEqual(tasks['completed_tasks']?.map((x) => x.state).sort(), ['TASK_FAILED', 'TASK_FINISHED']);
  const { readFileSync } = await import('node:fs');
  const { readdirSync } = await import('node:fs');
  const fwDir = join(agent.workDir, 'sandboxes');
  const [fw] = readdirSync(fwDir);
  assert.equal(readFileSync(join(fwDir, fw ?? '', 'ok', 'stdout'), 'utf8'), 'hello\n');
});

test('shell:false runs `value` with `arguments` as the whole argv, argv[0] included', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t) });
  await master.waitForRegister();
  const task = shellTask('argv', 'unused');
  // The shell prints its own argv from /proc: argv[0] is ours, not the program path.
  task.command = { shell: false, value: '/bin/sh', arguments: ['my-argv0', '-c', 'tr "\\0" " " < /proc/$$/cmdline; echo "$0"', 'zero'] };
  master.runTask(task);
  await master.waitForUpdate('argv', 'TASK_FINISHED');
  const { readFileSync, readdirSync } = await import('node:fs');
  const fwDir = join(agent.workDir, 'sandboxes');
  const [fw] = readdirSync(fwDir);
  const out = readFileSync(join(fwDir, fw ?? '', 'argv', 'stdout'), 'utf8');
  assert.match(out, /^my-argv0 -c /);
  assert.match(out, /zero\n$/);
});

test('kill: SIGTERM ends a normal task; a task ignoring SIGTERM gets SIGKILL after the grace period', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  const agent = await startAgent(t, { master: master.address, workDir });
  await master.waitForRegister();

  master.runTask(shellTask('stubborn', `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, 1000));
  // This framework did not declare TASK_KILLING_STATE: it must not get TASK_KILLING (as Mesos).
  master.runTask(shellTask('polite', 'sleep 60'), { ...FRAMEWORK, capabilities: [] });
  await master.waitForUpdate('stubborn', 'TASK_RUNNING');
  await master.waitForUpdate('polite', 'TASK_RUNNING');
  const pids = await checkpointedTaskPids(workDir, 2);
  assert.equal(pids.length, 2);
  // The fixture prints `ready` once its trap is installed: it is signalled only after that.
  const { readFileSync, readdirSync } = await import('node:fs');
  const sandboxes = join(workDir, 'sandboxes');
  const stdout = (): string => {
    try {
      return readFileSync(join(sandboxes, readdirSync(sandboxes)[0] ?? '', 'stubborn', 'stdout'), 'utf8');
    } catch {
      return '';
    }
  };
  await eventually(() => (stdout().includes('ready') ? true : undefined), undefined, 20, 'the fixture to trap SIGTERM');

  // Measured from before the kill is sent: the grace cannot have run out earlier.
  const started = Date.now();
  master.killTask('stubborn');
  master.killTask('polite');
  const polite = await master.waitForUpdate('polite', 'TASK_KILLED');
  assert.equal(polite.status.message, 'Command terminated with signal Terminated');
  const stubborn = await master.waitForUpdate('stubborn', 'TASK_KILLED');
  const elapsed = Date.now() - started;
  assert.equal(stubborn.status.message, 'Command terminated with signal Killed');
  assert.ok(elapsed >= 999, `SIGKILL came after ${elapsed} ms, before the 1 s grace`);
  // The SIGKILL was the grace period's (not an upper bound on time: the agent says why it sent it).
  const escalation = await agent.daemon.waitForMsg('grace period over, sending SIGKILL', { taskId: 'stubborn' });
  assert.equal(escalation['graceMs'], 1000);
  assert.deepEqual(master.states('stubborn'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLING', 'TASK_KILLED']);
  assert.deepEqual(master.states('polite'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_KILLED']);
  for (const pid of pids) assert.equal(alive(pid), false);
});

test('unacknowledged updates are resent until acknowledged, in order, two in flight at a time', async (t) => {
  const master = await startFakeMaster(t);
  await startAgent(t, { master: master.address, workDir: agentWorkDir(t), flags: ['--status_update_retry_interval=200ms'] });
  await master.waitForRegister();
  master.runTask(shellTask('r', 'exit 0'));
  const first = await master.waitForUpdate('r', 'TASK_STARTING');
  const second = await master.waitForUpdate('r', 'TASK_RUNNING');
  // Both resent (same uuids, oldest first), and the third (the task has exited) waits for the oldest's acknowledgement.
  await master.waitFor(() => (master.updates.filter((u) => u.status.uuid === second.status.uuid).length >= 3 ? true : undefined), undefined, 'two resends');
  const uuids = master.updates.filter((u) => u.status.task_id.value === 'r').map((u) => u.status.uuid);
  assert.deepEqual(new Set(uuids), new Set([first.status.uuid, second.status.uuid]), 'only the window was sent');
  for (let i = 0; i < uuids.length; i += 2) assert.deepEqual(uuids.slice(i, i + 2), [first.status.uuid, second.status.uuid], 'resent oldest first');
  // An acknowledgement for another uuid is ignored: nothing moves (had it moved the window, the
  // agent would have sent TASK_FINISHED while handling it, before answering the barrier's ping).
  master.send({ type: 'ACKNOWLEDGE', framework_id: 'fw-test', task_id: 'r', uuid: 'AAAAAAAAAAAAAAAAAAAAAA==' });
  await master.barrier();
  assert.equal(master.updates.some((u) => u.status.state === 'TASK_FINISHED'), false);
  master.ack(first);
  const done = await master.waitForUpdate('r', 'TASK_FINISHED');
  // The window is now RUNNING and FINISHED: acknowledging the newer one first leaves the older resent alone.
  // Counted from the barrier: a resend already on its way when the acknowledgement went out is no fault.
  master.ack(done);
  await master.barrier();
  const resentAfter = master.updates.length;
  await master.waitFor(() => (master.updates.slice(resentAfter).some((u) => u.status.uuid === second.status.uuid) ? true : undefined), undefined, 'RUNNING resent');
  // A window resent is sent at once, oldest first: a FINISHED resent with it is in before the pong.
  await master.barrier();
  assert.equal(master.updates.slice(resentAfter).some((u) => u.status.uuid === done.status.uuid), false, 'the acknowledged FINISHED was resent');
  master.ack(second);
  await master.barrier();
  const count = master.updates.length;
  // Nothing is left to resend. How long this looks is how sensitive the check is (longer than the
  // resend intervals so far), not a bound a correct agent must beat: it passes however slow the machine.
  await new Promise((r) => setTimeout(r, 1_000));
  assert.equal(master.updates.length, count, 'updates kept coming after the acknowledgements');
  assert.deepEqual(master.states('r'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_FINISHED']);
});

test('a duplicate task id is refused without disturbing the running task', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = agentWorkDir(t);
  await startAgent(t, { master: master.address, workDir });
  await master.waitForRegister();
  master.runTask(shellTask('dup', 'sleep 60'));
  await master.waitForUpdate('dup', 'TASK_RUNNING');
  const [pid] = await checkpointedTaskPids(workDir, 1);
  master.runTask(shellTask('dup', 'exit 1'));
  const err = await master.waitForUpdate('dup', 'TASK_ERROR');
  assert.match(err.status.message ?? '', /duplicate/);
  // Undisturbed: the same process runs, and nothing else was said about the task.
  assert.ok(pid !== undefined && alive(pid), 'the running task is gone');
  assert.deepEqual(master.states('dup'), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_ERROR']);
  // With a grace period, not none: with none, SIGKILL goes right behind SIGTERM, and a task
  // forked a moment before (TASK_RUNNING goes out with its pid) that has not yet unblocked its
  // signals, as on a loaded machine, dies of the SIGKILL and ends `Killed`. With a grace, the
  // SIGTERM waits for the unblock and ends it.
  master.killTask('dup', 10_000);
  const killed = await master.waitForUpdate('dup', 'TASK_KILLED');
  assert.equal(killed.status.message, 'Command terminated with signal Terminated');
  assert.equal(alive(pid), false);
});

test('the agent runs above its tasks: a task gets the nice value the agent was started with, and not the variable that carries it', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t) });
  await master.waitForRegister();
  master.runTask(shellTask('nice', 'echo "$(nice) ${DRYDOCK_TASK_NICE-unset}"'));
  await master.waitForUpdate('nice', 'TASK_FINISHED');
  const { readFileSync, readdirSync } = await import('node:fs');
  const { getPriority } = await import('node:os');
  const fwDir = join(agent.workDir, 'sandboxes');
  const [fw] = readdirSync(fwDir);
  assert.equal(readFileSync(join(fwDir, fw ?? '', 'nice', 'stdout'), 'utf8'), `${getPriority()} unset\n`);
  // Root (CI) may raise the agent's priority; anyone else is told it cannot.
  const raised = agent.daemon.records.find((r) => r.msg === 'running above the tasks');
  const refused = agent.daemon.records.find((r) => r.msg === 'cannot run above the tasks (needs CAP_SYS_NICE); busy tasks may delay kills and updates');
  assert.ok(raised !== undefined || refused !== undefined, 'the agent says at which priority it runs');
  if (raised !== undefined) assert.deepEqual([raised['nice'], raised['taskNice']], [Math.max(-20, getPriority() - 5), getPriority()]);
  if (raised !== undefined && agent.daemon.child.pid !== undefined) assert.equal(getPriority(agent.daemon.child.pid), Math.max(-20, getPriority() - 5));
});

/**
 * Task checks and health checks end to end: a real master, a real agent on 127.0.0.1 and the
 * scheduler client. The agent runs the checks (agent/checks.ts); the updates travel through the
 * master unchanged; every update is acknowledged. Agents are stopped with SIGUSR1, which kills
 * their tasks, and no check process may outlive its task or its agent.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { alive, callApi, eventually, EVENT_DEADLINE_MS, startAgent, startMaster, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
import { agentWorkDir, shellTask, startFakeMaster, checkpointedTaskPids } from '../helpers/fake-master.js';
import { checkpointTasks } from '../helpers/checkpoint.js';

const FW = { user: 'root', name: 'checks-fw', checkpoint: true };
const AGENT_FLAGS = ['--status_update_retry_interval=500ms'];

type CheckStatus = { type?: string; command?: { exit_code?: number }; http?: { status_code?: number }; tcp?: { succeeded?: boolean } };
type Status = {
  task_id: { value: string };
  state: string;
  uuid?: string;
  reason?: string;
  source: string;
  message?: string;
  healthy?: boolean;
  check_status?: CheckStatus;
  agent_id?: { value: string };
};
type Offer = { id: { value: string }; agent_id: { value: string } };

const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;
const offersOf = (e: SchedulerEvent): Offer[] => (e['offers'] as { offers: Offer[] }).offers;

interface Cluster {
  m: MasterHandle;
  a: AgentHandle;
  s: SchedulerClient;
  /** Starts the agent again on the same work dir (after a restart). */
  restartAgent(): Promise<AgentHandle>;
}

/**
 * A master, an agent and a subscribed scheduler. The agents are stopped with SIGUSR1 (their
 * tasks die) by a hook registered before startAgent's own, so it runs first.
 */
async function cluster(t: TestContext): Promise<Cluster> {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const agents: AgentHandle[] = [];
  t.after(async () => {
    for (const a of agents) await a.daemon.stop(15_000, 'SIGUSR1');
  });
  // Then, whatever a failed test left behind: agents SIGKILLed, task groups from the checkpoint.
  const workDir = agentWorkDir(t);
  const a = await startAgent(t, { master: m.address, workDir, flags: AGENT_FLAGS });
  agents.push(a);
  const s = await SchedulerClient.subscribe(m.address, FW);
  t.after(() => s.close());
  const restartAgent = async (): Promise<AgentHandle> => {
    const again = await startAgent(t, { master: m.address, workDir: a.workDir, flags: AGENT_FLAGS });
    agents.push(again);
    return again;
  };
  return { m, a, s, restartAgent };
}

function task(id: string, agentId: string, cmd: string, extra: Record<string, unknown>): Record<string, unknown> {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: agentId },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 16 } }],
    command: { value: cmd },
    ...extra,
  };
}

/** Launches tasks on the agent's next offer. */
async function launch(c: Cluster, tasks: Array<Record<string, unknown>>): Promise<void> {
  const e = await c.s.next((x) => x.type === 'OFFERS' && offersOf(x).some((o) => o.agent_id.value === c.a.agentId), undefined, 'an offer');
  const offer = offersOf(e).find((o) => o.agent_id.value === c.a.agentId)!;
  const r = await c.s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202, r.text);
}

/**
 * Takes the updates of `taskId` in order, acknowledging each, until one matches `until`;
 * returns them all (the matching one last).
 */
async function updatesUntil(s: SchedulerClient, taskId: string, until: (st: Status) => boolean, timeoutMs = EVENT_DEADLINE_MS, what = 'update'): Promise<Status[]> {
  const out: Status[] = [];
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const e = await s.next((x) => x.type === 'UPDATE' && statusOf(x).task_id.value === taskId, Math.max(1, deadline - Date.now()), `${what} of ${taskId} (so far: ${JSON.stringify(out.map(brief))})`);
    const st = statusOf(e);
    out.push(st);
    if (st.uuid !== undefined) {
      const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
      assert.equal(r.status, 202, r.text);
    }
    if (until(st)) return out;
  }
}

/** A status in a few words, for assertions on sequences. */
function brief(st: Status): string {
  const parts = [st.state];
  if (st.reason !== undefined) parts.push(st.reason.replace(/^REASON_TASK_/, ''));
  if (st.check_status !== undefined) parts.push(`check=${st.check_status.command?.exit_code ?? st.check_status.http?.status_code ?? st.check_status.tcp?.succeeded ?? 'none'}`);
  if (st.healthy !== undefined) parts.push(`healthy=${st.healthy}`);
  return parts.join(' ');
}

/** The sandbox of a task (one framework per test). */
function sandboxOf(workDir: string, taskId: string): string {
  const root = join(workDir, 'sandboxes');
  const [fw] = readdirSync(root);
  return join(root, fw ?? '', taskId);
}

/** Pids a check command appended to `<sandbox>/check-pids`. */
function checkPids(sandbox: string): number[] {
  const file = join(sandbox, 'check-pids');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').map(Number);
}

async function masterTask(m: MasterHandle, taskId: string): Promise<{ state: string; statuses: Status[] } | undefined> {
  const r = await callApi(m.url, { type: 'GET_TASKS' });
  const lists = (r.json as { get_tasks: { tasks: Array<{ task_id: { value: string }; state: string; statuses: Status[] }>; completed_tasks: Array<{ task_id: { value: string }; state: string; statuses: Status[] }> } }).get_tasks;
  return [...lists.tasks, ...lists.completed_tasks].find((x) => x.task_id.value === taskId);
}

const EMPTY_COMMAND = { type: 'COMMAND', command: {} };

test('a readiness check: exit code 1, then 0 once the task is ready, each change a reliable TASK_RUNNING update', async (t) => {
  const c = await cluster(t);
  // Each probe leaves a line in `probes` (the sandbox is its working directory): the test counts them.
  const check = { type: 'COMMAND', command: { command: { value: 'echo >> probes; test -f ready' } }, delay_seconds: 0, interval_seconds: 0.1, timeout_seconds: 5 };
  await launch(c, [task('web', c.a.agentId!, 'sleep 1; touch ready; exec sleep 60', { check })]);

  const updates = await updatesUntil(c.s, 'web', (st) => st.check_status?.command?.exit_code === 0, undefined, 'a check update with exit code 0');
  assert.deepEqual(updates.map(brief), [
    'TASK_STARTING check=none',
    'TASK_RUNNING check=none',
    'TASK_RUNNING CHECK_STATUS_UPDATED check=1',
    'TASK_RUNNING CHECK_STATUS_UPDATED check=0',
  ]);
  // Before the first result, the executor's updates carry the empty result (as Mesos).
  assert.deepEqual(updates[0]?.check_status, EMPTY_COMMAND);
  const [, , notReady, ready] = updates;
  assert.deepEqual(notReady?.check_status, { type: 'COMMAND', command: { exit_code: 1 } });
  assert.deepEqual(ready?.check_status, { type: 'COMMAND', command: { exit_code: 0 } });
  for (const u of [notReady, ready]) {
    assert.equal(u?.source, 'SOURCE_EXECUTOR');
    assert.equal(u?.agent_id?.value, c.a.agentId);
    assert.equal(u?.healthy, undefined, 'no health check, no healthy');
    assert.equal(Buffer.from(u?.uuid ?? '', 'base64').length, 16);
  }

  // The result stays 0: no more updates while the check keeps passing. Three more probes passed
  // (counted in the sandbox) before the kill below, whose updates must then be all that follows.
  const probes = (): number => {
    const file = join(sandboxOf(c.a.workDir, 'web'), 'probes');
    return existsSync(file) ? readFileSync(file, 'utf8').length : 0;
  };
  const probed = probes();
  await eventually(() => (probes() >= probed + 3 ? true : undefined), undefined, 20, 'three more passing probes');
  assert.equal(c.s.received.filter((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'web').length, 4);

  // The master shows the latest status (one per state, as Mesos) with its check_status.
  const mt = await masterTask(c.m, 'web');
  assert.equal(mt?.state, 'TASK_RUNNING');
  assert.deepEqual(mt?.statuses.map((x) => x.state), ['TASK_STARTING', 'TASK_RUNNING']);
  assert.deepEqual(mt?.statuses.at(-1)?.check_status, { type: 'COMMAND', command: { exit_code: 0 } });
  assert.equal(mt?.statuses.at(-1)?.reason, 'REASON_TASK_CHECK_STATUS_UPDATED');

  // A kill: the terminal update carries the latest result too (and nothing came between).
  assert.equal((await c.s.call('KILL', { task_id: { value: 'web' }, agent_id: { value: c.a.agentId } })).status, 202);
  const end = await updatesUntil(c.s, 'web', (st) => st.state === 'TASK_KILLED');
  assert.deepEqual(end.map(brief), ['TASK_KILLED check=0']);
});

test('a failing health check: healthy=false once, then the task is killed: TASK_KILLED healthy=false with the reason', async (t) => {
  const c = await cluster(t);
  const health = { type: 'COMMAND', command: { value: 'false' }, delay_seconds: 0, interval_seconds: 0.1, timeout_seconds: 5, consecutive_failures: 2, grace_period_seconds: 0 };
  await launch(c, [task('sick', c.a.agentId!, 'exec sleep 60', { health_check: health, kill_policy: { grace_period: { nanoseconds: 1e9 } } })]);
  const updates = await updatesUntil(c.s, 'sick', (st) => st.state === 'TASK_KILLED', undefined, 'TASK_KILLED');
  assert.deepEqual(updates.map(brief), ['TASK_STARTING', 'TASK_RUNNING', 'TASK_RUNNING HEALTH_CHECK_STATUS_UPDATED healthy=false', 'TASK_KILLED HEALTH_CHECK_STATUS_UPDATED healthy=false']);
  const killed = updates.at(-1)!;
  assert.equal(killed.message, 'Task killed after its health check failed 2 consecutive times: Command terminated with signal Terminated');
  assert.equal(killed.source, 'SOURCE_EXECUTOR');
  const mt = await eventually(async () => {
    const x = await masterTask(c.m, 'sick');
    return x?.state === 'TASK_KILLED' ? x : undefined;
  });
  assert.equal(mt.statuses.at(-1)?.healthy, false);
  assert.equal(mt.statuses.at(-1)?.reason, 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED');
});

test('a passing health check reports healthy=true once; HTTP and TCP checks probe the task on 127.0.0.1', async (t) => {
  const c = await cluster(t);
  const port = await freePort();
  const server = `exec node -e "require('http').createServer((q, r) => { r.statusCode = q.url === '/health' ? 204 : 404; r.end(); }).listen(${port}, '127.0.0.1')"`;
  const health = { type: 'HTTP', http: { port, path: '/health' }, delay_seconds: 0, interval_seconds: 0.1, timeout_seconds: 2, grace_period_seconds: 30 };
  const check = { type: 'TCP', tcp: { port }, delay_seconds: 0, interval_seconds: 0.1, timeout_seconds: 2 };
  await launch(c, [task('api', c.a.agentId!, server, { health_check: health, check })]);
  const seen: Status[] = [];
  // Before node listens, the TCP check fails and the HTTP one is within its grace period.
  await updatesUntil(c.s, 'api', (st) => {
    seen.push(st);
    return seen.some((x) => x.healthy === true) && seen.some((x) => x.check_status?.tcp?.succeeded === true);
  }, undefined, 'healthy and connected');
  const brs = seen.map(brief);
  assert.equal(brs.filter((b) => b.includes('HEALTH_CHECK_STATUS_UPDATED')).length, 1, brs.join('; '));
  assert.ok(!seen.some((x) => x.healthy === false), 'failures within the grace period are not reported');
  const healthy = seen.find((x) => x.reason === 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED')!;
  assert.equal(healthy.healthy, true);
  assert.equal(healthy.state, 'TASK_RUNNING');
  assert.equal(healthy.check_status?.type, 'TCP', 'a health update carries the latest check result too');
  const lastCheck = seen.filter((x) => x.reason === 'REASON_TASK_CHECK_STATUS_UPDATED').at(-1)!;
  assert.deepEqual(lastCheck.check_status, { type: 'TCP', tcp: { succeeded: true } });
});

test('a probe past its timeout is killed and reported without exit code; checks die with the agent and restart with it', async (t) => {
  const c = await cluster(t);
  // Once ready, each probe records its pid and hangs: it must be killed at the 0.4 s timeout.
  const check = {
    type: 'COMMAND',
    command: { command: { value: 'test -f ready || exit 1; echo $$ >> check-pids; exec sleep 30' } },
    delay_seconds: 0,
    interval_seconds: 0.1,
    timeout_seconds: 0.4,
  };
  await launch(c, [task('slow', c.a.agentId!, 'sleep 0.5; touch ready; exec sleep 60', { check })]);
  const updates = await updatesUntil(c.s, 'slow', (st) => st.reason !== undefined && st.check_status?.command?.exit_code === undefined, undefined, 'a timed-out check');
  assert.deepEqual(updates.map(brief), ['TASK_STARTING check=none', 'TASK_RUNNING check=none', 'TASK_RUNNING CHECK_STATUS_UPDATED check=1', 'TASK_RUNNING CHECK_STATUS_UPDATED check=none']);
  assert.deepEqual(updates.at(-1)?.check_status, EMPTY_COMMAND);

  const sandbox = sandboxOf(c.a.workDir, 'slow');
  // Timed-out probes are gone; at most the one under way is alive.
  await eventually(() => (checkPids(sandbox).length >= 3 ? true : undefined), undefined, 50, 'three timed-out probes');
  await eventually(() => (checkPids(sandbox).filter(alive).length <= 1 ? true : undefined), undefined, 50, 'timed-out probes killed');

  // SIGTERM: the agent leaves its task running, but not its checks.
  const [taskPid] = await checkpointedTaskPids(c.a.workDir, 1);
  assert.ok(taskPid !== undefined);
  assert.equal((await c.a.daemon.stop(10_000, 'SIGTERM')).code, 0);
  const before = checkPids(sandbox);
  await eventually(() => (before.some(alive) ? undefined : true), undefined, 50, 'no check process after the agent stopped');
  assert.equal(alive(taskPid), true, 'the task survives an agent SIGTERM');

  // The next agent re-adopts the task and checks it from scratch.
  const again = await c.restartAgent();
  assert.equal(again.agentId, c.a.agentId);
  await eventually(() => (checkPids(sandbox).length > before.length ? true : undefined), undefined, 50, 'a probe after the restart');

  // SIGUSR1: the task is killed, and with it every check.
  const exit = await again.daemon.stop(15_000, 'SIGUSR1');
  assert.equal(exit.code, 0);
  await eventually(() => (alive(taskPid) || checkPids(sandbox).some(alive) ? undefined : true), undefined, 50, 'task and checks gone');
});

test('a drain is not held up by checks: a hanging probe is killed with its task, the agent reaches DRAINED', async (t) => {
  const c = await cluster(t);
  // Every probe hangs with no timeout: only the task's kill can stop it.
  const check = { type: 'COMMAND', command: { command: { value: 'echo $$ >> check-pids; exec sleep 30' } }, delay_seconds: 0, interval_seconds: 0.1, timeout_seconds: 0 };
  const health = { type: 'COMMAND', command: { value: 'true' }, delay_seconds: 0, interval_seconds: 0.1, grace_period_seconds: 0 };
  await launch(c, [task('svc', c.a.agentId!, 'exec sleep 60', { check, health_check: health })]);
  await updatesUntil(c.s, 'svc', (st) => st.healthy === true, undefined, 'healthy');
  const sandbox = sandboxOf(c.a.workDir, 'svc');
  const [probe] = await eventually(() => (checkPids(sandbox).length > 0 ? checkPids(sandbox) : undefined), undefined, 50, 'a probe under way');
  assert.ok(probe !== undefined && alive(probe));

  const r = await callApi(c.m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: c.a.agentId } } });
  assert.equal(r.status, 200, r.text);
  const end = await updatesUntil(c.s, 'svc', (st) => st.state === 'TASK_KILLED', undefined, 'TASK_KILLED');
  const killed = end.at(-1)!;
  assert.equal(killed.reason, 'REASON_AGENT_DRAINING');
  assert.equal(killed.healthy, undefined, 'a drain kill is not a health kill');
  assert.deepEqual(killed.check_status, EMPTY_COMMAND, 'the probe never finished');
  // Killed at once: its SIGTERM ended it (not a SIGKILL after the default 3 s grace, nor a wait for the probe).
  assert.equal(killed.message, 'Command terminated with signal Terminated', 'the task was killed at once');
  await eventually(() => (alive(probe) ? undefined : true), undefined, 50, 'the hanging probe killed with its task');
  await eventually(async () => {
    const agents = (await callApi(c.m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; drain_info?: { state: string } }> } };
    return agents.get_agents.agents.find((x) => x.agent_info.id.value === c.a.agentId)?.drain_info?.state === 'DRAINED' ? true : undefined;
  }, undefined, 100, 'DRAINED');
});

test('a check flapping while nothing is acknowledged: queued check updates are superseded, the queue stays short', async (t) => {
  const master = await startFakeMaster(t, { autoAck: false });
  let agent: AgentHandle | undefined;
  t.after(async () => void (await agent?.daemon.stop(15_000, 'SIGUSR1')));
  const workDir = agentWorkDir(t);
  agent = await startAgent(t, { master: master.address, workDir });
  await master.registered();
  const flap = shellTask('flap', 'while :; do touch flag; sleep 0.1; rm -f flag; sleep 0.1; done');
  flap.check = { type: 'COMMAND', command: { command: { value: 'test -f flag' } }, delay_seconds: 0, interval_seconds: 0.02, timeout_seconds: 5 };
  master.runTask(flap);
  // Nothing acknowledged: STARTING stays in flight while the check flips some 20 times.
  const record = (): { pending: Array<{ state: string; reason?: string }> } => {
    const rec = checkpointTasks(join(workDir, 'meta')).find((r) => r.task.task_id.value === 'flap');
    assert.ok(rec !== undefined, 'the task is in the checkpoint');
    return rec;
  };
  await eventually(() => (agent!.daemon.records.filter((r) => r.msg === 'check status changed').length >= 10 ? true : undefined), undefined, 50, 'ten check changes');
  const pending = record().pending.map((p) => `${p.state} ${p.reason ?? ''}`.trim());
  assert.deepEqual(pending, ['TASK_STARTING', 'TASK_RUNNING', 'TASK_RUNNING REASON_TASK_CHECK_STATUS_UPDATED']);
  // Acknowledged one by one, the queue drains to the latest results.
  for (let i = 0; i < 3; i++) {
    const head = await master.waitFor(() => master.updates.filter((u) => u.status.task_id.value === 'flap').at(-1));
    master.ack(head);
    await eventually(() => (master.updates.filter((u) => u.status.task_id.value === 'flap').at(-1) !== head ? true : undefined), undefined, 20, 'the next update');
  }
  const sent = new Set(master.statuses('flap').map((x) => x.uuid));
  assert.ok(sent.size <= 6, `at most a few distinct updates were sent, got ${sent.size}`);
});

test('a bad check spec is refused: TASK_ERROR REASON_TASK_INVALID naming the field', async (t) => {
  const c = await cluster(t);
  await launch(c, [
    task('neg', c.a.agentId!, 'sleep 60', { check: { type: 'COMMAND', command: { command: { value: 'true' } }, interval_seconds: -1 } }),
    task('novalue', c.a.agentId!, 'sleep 60', { health_check: { type: 'COMMAND', command: {} } }),
  ]);
  const neg = (await updatesUntil(c.s, 'neg', (st) => st.state === 'TASK_ERROR'))[0]!;
  assert.equal(neg.reason, 'REASON_TASK_INVALID');
  assert.equal(neg.source, 'SOURCE_AGENT');
  assert.equal(neg.message, "Task's check is invalid: Expecting 'check.interval_seconds' to be non-negative, got -1");
  const novalue = (await updatesUntil(c.s, 'novalue', (st) => st.state === 'TASK_ERROR'))[0]!;
  assert.equal(novalue.reason, 'REASON_TASK_INVALID');
  assert.equal(novalue.message, "Task's health check is invalid: Expecting 'health_check.command.value' to be set for a COMMAND check");
  // The agent is unharmed and still launches.
  await launch(c, [task('fine', c.a.agentId!, 'exit 0', {})]);
  await updatesUntil(c.s, 'fine', (st) => st.state === 'TASK_FINISHED');
});

/** A loopback port nothing listens on (bound, then released). */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * An agent out of disk (issue 36), on a small filesystem the test mounts (a 4 MB tmpfs, as root;
 * skipped with the reason where it cannot be mounted, run under CI=true): the checkpoint's
 * journal on a filesystem that fills up under it; a launch on a full disk refused with a message
 * that names the cause, nothing started and the refusal on no disk; a launch whose first commit
 * fails, refused the same way; a task whose end the launcher cannot record, reported with its
 * real exit status; a task that ended unrecorded while its agent was away, reported with why it
 * is not known; and, with a real master, the condition seen there, its offers stopped, then back
 * with the space, and the next task finishing normally. Every status update the fake master
 * gets is checked against the agent's journal as it arrives: no update goes out before the
 * commit that records it (the refusals, which depend on none, excepted).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Journal, parseJournal, readJournal } from '../../agent/journal.js';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { safePathComponent } from '../../agent/checkpoint.js';
import { callApi, eventually, startAgent, startMaster, tempDir, type AgentHandle, EVENT_DEADLINE_MS } from '../helpers/daemons.js';
import { FRAMEWORK_ID, shellTask, startFakeMaster, taskPids, type FakeMaster } from '../helpers/fake-master.js';
import { daemonSample, scrapeMetrics } from '../helpers/exposition.js';
import { mountSmallFs, smallFsSkip, type SmallFs } from '../helpers/small-fs.js';
import { cliFinished, startCli } from '../helpers/cli.js';

const skip = smallFsSkip();

/** Thresholds for a 4 MB filesystem: pressure below 1 MB free (a full one always is), read every 200 ms. */
const SMALL_DISK_FLAGS = ['--disk_pressure_free_bytes=1MB', '--disk_pressure_free_percent=0', '--disk_pressure_free_inodes_percent=0', '--disk_watch_interval=200ms'];

/** The agent's journal as text now (empty before its first commit). */
function journalText(workDir: string): string {
  const file = join(workDir, 'meta', 'journal');
  return existsSync(file) ? readFileSync(file, 'utf8') : '';
}

/**
 * Records, as each update arrives at the fake master, whether the agent had committed it (its
 * uuid is in the journal's committed lines): the rule the agent keeps on a full disk.
 */
function watchCommits(master: FakeMaster, workDir: string): Map<string, boolean> {
  const onDisk = new Map<string, boolean>();
  master.onUpdate = (u) => {
    const uuid = u.status.uuid ?? '';
    if (onDisk.get(uuid) === true) return;
    const read = parseJournal(journalText(workDir));
    onDisk.set(uuid, read.ok && JSON.stringify(read.entries).includes(uuid));
  };
  return onDisk;
}

/** Kills (by the pids in its checkpoint) the task groups an agent on `fs` may have left, before the filesystem goes. */
function killTasksOnCleanup(fs: SmallFs, workDir: string): void {
  fs.cleanup.after(() => {
    for (const pid of taskPids(workDir)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });
}

/** An agent on the small filesystem, its tasks killed when it stops (SIGUSR1). */
async function agentOn(fs: SmallFs, master: string, flags: readonly string[] = SMALL_DISK_FLAGS, hostname = 'df-a'): Promise<AgentHandle> {
  const workDir = join(fs.dir, 'agent');
  mkdirSync(workDir, { recursive: true });
  killTasksOnCleanup(fs, workDir);
  return startAgent(fs.cleanup, { master, workDir, hostname, flags, stopSignal: 'SIGUSR1' });
}

test('the journal on a filesystem that fills up: a commit cut short commits nothing and is tried again; with space back every entry reads back', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const path = join(fs.dir, 'journal');
  const errors: string[] = [];
  let recovered = 0;
  const j = new Journal(path, 0, { retryMs: 60_000, onError: (e) => errors.push((e as NodeJS.ErrnoException).code ?? e.message), onRecovered: () => recovered++ });
  t.after(() => j.close());
  j.append(JSON.stringify({ k: 0 }));
  assert.equal(j.commit(), true);
  fs.fill();
  // Entries that fit what is left of the journal's last page are written; the first that does
  // not is cut short by the full disk, and the commit fails (its staged entries kept).
  const big = 'x'.repeat(3000);
  let n = 1;
  for (; n < 20; n++) {
    j.append(JSON.stringify({ k: n, big }));
    if (!j.commit()) break;
  }
  assert.ok(n < 20, 'a commit failed once the disk was full');
  assert.deepEqual(errors, ['ENOSPC']);
  assert.equal(j.failures, 1);
  // A crash now would read only what was committed (the cut-short tail is a torn line).
  const now = readJournal(path);
  assert.ok(now.ok);
  assert.equal(now.entries.length, n);
  j.append(JSON.stringify({ k: n + 1 }));
  fs.free();
  assert.equal(j.commit(), true);
  assert.equal(recovered, 1);
  const read = readJournal(path);
  assert.ok(read.ok && !read.tornTail);
  assert.deepEqual(read.entries.map((e) => (e as { k: number }).k), Array.from({ length: n + 2 }, (_, i) => i));
  assert.equal(read.validBytes, statSync(path).size);
});

test('a launch on a full disk: TASK_FAILED naming the cause, nothing started, nothing written; the condition reported, then cleared; the next task finishes', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const master = await startFakeMaster(t);
  const agent = await agentOn(fs, master.address);
  const onDisk = watchCommits(master, agent.workDir);
  const reg = await master.waitForRegister();
  assert.deepEqual(reg.conditions, {}, 'registered without pressure');

  fs.fill();
  // Caught while the filler was being written, it begins as LOW_SPACE and becomes NO_SPACE.
  const reported = await master.waitFor(() => master.conditions.find((c) => c.disk_pressure?.reason === 'NO_SPACE'), EVENT_DEADLINE_MS, 'the agent to report no space left');
  const p = reported.disk_pressure!;
  assert.equal(p.message, `no space left on device in ${agent.workDir} (0 B free of 4.0 MB)`);
  assert.equal(p.path, agent.workDir);
  assert.equal(p.free_bytes, 0);
  assert.equal(p.total_bytes, 4 * 2 ** 20);
  await agent.daemon.waitForLog((r) => r.msg?.startsWith('disk pressure') === true && r['reason'] === 'NO_SPACE', 5_000, 'the agent to log the pressure');

  master.runTask(shellTask('hi', 'echo hi'));
  const refused = await master.waitForUpdate('hi', 'TASK_FAILED');
  assert.equal(refused.status.reason, 'REASON_CONTAINER_LAUNCH_FAILED');
  assert.equal(refused.status.source, 'SOURCE_AGENT');
  assert.equal(refused.status.message, `Task not started: the agent is under disk pressure: no space left on device in ${agent.workDir} (0 B free of 4.0 MB)`);
  assert.deepEqual(master.states('hi'), ['TASK_FAILED'], 'never STARTING or RUNNING');
  // Nothing started, nothing written: no sandbox, no exit file, not in the journal.
  assert.equal(existsSync(join(agent.workDir, 'sandboxes', safePathComponent(FRAMEWORK_ID), 'hi')), false);
  assert.equal(existsSync(join(agent.workDir, 'meta', 'exits', `${safePathComponent(FRAMEWORK_ID)}.hi.json`)), false);
  assert.equal(journalText(agent.workDir).includes('"hi"'), false);
  assert.equal(onDisk.get(refused.status.uuid!), false, 'the refusal depends on no commit');
  // Until acknowledged, it is resent like any update; the agent's metrics say why.
  const e = await scrapeMetrics(`${agent.url}/metrics`);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_disk_pressure', {}), 1);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_disk_free_bytes', { dir: 'work_dir' }), 0);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_task_launch_failures_total', { reason: 'disk_pressure' }), 1);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_task_launches_total', {}), 0);
  // GET_HEALTH is the process's health (it serves), and the Mesos answer has no extra field.
  const health = await callApi(agent.url, { type: 'GET_HEALTH' });
  assert.deepEqual(health.json, { type: 'GET_HEALTH', get_health: { healthy: true } });
  master.ack(refused);

  // Space back: the condition clears (above 1.25 times the threshold), and is reported.
  const before = master.conditions.length;
  fs.free();
  await master.waitFor(() => (master.conditions.slice(before).some((c) => c.disk_pressure === undefined) ? true : undefined), EVENT_DEADLINE_MS, 'the agent to report the pressure cleared');
  await agent.daemon.waitForMsg('disk pressure cleared: launches are accepted and the master offers this agent again');
  master.autoAck = true;
  master.runTask(shellTask('hi-again', 'echo hi'));
  const finished = await master.waitForUpdate('hi-again', 'TASK_FINISHED');
  assert.equal(finished.status.message, 'Command exited with status 0');
  assert.equal(readFileSync(join(agent.workDir, 'sandboxes', safePathComponent(FRAMEWORK_ID), 'hi-again', 'stdout'), 'utf8'), 'hi\n');
  for (const u of master.updates.filter((x) => x.status.task_id.value === 'hi-again')) assert.equal(onDisk.get(u.status.uuid!), true, `${u.status.state} was committed before it was sent`);
});

test('a launch whose first commit fails (the disk fills under a large task): refused, nothing started; the condition says the checkpoint; it all clears with space', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const master = await startFakeMaster(t);
  // Thresholds off: only a full disk or a failed write is pressure.
  const agent = await agentOn(fs, master.address, ['--disk_pressure_free_bytes=0B', '--disk_pressure_free_percent=0', '--disk_pressure_free_inodes_percent=0', '--disk_watch_interval=200ms']);
  const onDisk = watchCommits(master, agent.workDir);
  await master.waitForRegister();

  // 64 KB left: not a full disk, but less than the record of a task with 100 KB of environment.
  fs.fill();
  fs.free(64 * 1024);
  const task = shellTask('big', 'echo big');
  task.command = { value: 'echo big', environment: { variables: [{ name: 'BIG', value: 'x'.repeat(100 * 1024) }] } };
  master.runTask(task);
  const refused = await master.waitForUpdate('big', 'TASK_FAILED');
  assert.equal(refused.status.reason, 'REASON_CONTAINER_LAUNCH_FAILED');
  assert.equal(refused.status.message, `Task not started: the agent cannot write its checkpoint: no space left on device in ${join(agent.workDir, 'meta')}`);
  assert.deepEqual(master.states('big'), ['TASK_FAILED']);
  assert.equal(onDisk.get(refused.status.uuid!), false);
  assert.equal(existsSync(join(agent.workDir, 'meta', 'exits', `${safePathComponent(FRAMEWORK_ID)}.big.json`)), false, 'no launcher started');
  const p = (await master.waitFor(() => master.conditions.find((c) => c.disk_pressure?.reason === 'WRITE_FAILED'), EVENT_DEADLINE_MS, 'WRITE_FAILED reported')).disk_pressure!;
  assert.equal(p.message, `no space left on device in ${join(agent.workDir, 'meta')}`);
  await agent.daemon.waitForMsg('checkpoint write failed: retrying with backoff; updates, kills and launches that wait for it wait on');
  master.ack(refused);

  const before = master.conditions.length;
  fs.free();
  await master.waitFor(() => (master.conditions.slice(before).some((c) => c.disk_pressure === undefined) ? true : undefined), EVENT_DEADLINE_MS, 'the pressure cleared');
  await agent.daemon.waitForMsg('checkpoint writes work again');
  // The refused task's record was written at last, with its forgetting: a restart would not bring it back.
  const entries = (readJournal(join(agent.workDir, 'meta', 'journal')) as { ok: true; entries: Array<{ k: string; task_id?: string; v?: { task?: { task_id: { value: string } } } }> }).entries;
  const about = entries.filter((x) => x.task_id === 'big' || x.v?.task?.task_id.value === 'big').map((x) => x.k);
  assert.ok(about.length === 0 || about.at(-1) === 'forget', `the journal forgets the refused task: ${about.join(', ')}`);
  master.autoAck = true;
  master.runTask(shellTask('small', 'exit 0'));
  await master.waitForUpdate('small', 'TASK_FINISHED');
  for (const u of master.updates.filter((x) => x.status.task_id.value === 'small')) assert.equal(onDisk.get(u.status.uuid!), true, `${u.status.state} committed before it was sent`);
});

test('a task whose end its launcher cannot record (the disk filled while it ran): its real exit status is reported, once committed', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const master = await startFakeMaster(t);
  const agent = await agentOn(fs, master.address);
  const onDisk = watchCommits(master, agent.workDir);
  await master.waitForRegister();
  const gate = join(tempDir(t), 'go');
  master.runTask(shellTask('runner', `while [ ! -e ${gate} ]; do sleep 0.05; done; exit 3`));
  const running = await master.waitForUpdate('runner', 'TASK_RUNNING');
  master.ack(running);
  // Its blank exit file (which the end would be written over without new space) is lost, and
  // the disk fills: the launcher can write the end nowhere.
  const exitFile = join(agent.workDir, 'meta', 'exits', `${safePathComponent(FRAMEWORK_ID)}.runner.json`);
  await eventually(() => (existsSync(exitFile) ? true : undefined), EVENT_DEADLINE_MS, 20, 'the blank exit file');
  rmSync(exitFile);
  fs.fill();
  await master.waitFor(() => master.conditions.find((c) => c.disk_pressure !== undefined), EVENT_DEADLINE_MS, 'disk pressure reported');
  writeFileSync(gate, '');
  // The launcher tells the agent instead. The terminal update goes out only once it is
  // committed: at once if the journal's last page had room, else once space is back.
  const failed = await Promise.race([
    master.waitForUpdate('runner', 'TASK_FAILED', 10_000),
    agent.daemon.waitForMsg('checkpoint write failed: retrying with backoff; updates, kills and launches that wait for it wait on', {}, 10_000).then(() => undefined),
  ]);
  if (failed === undefined) {
    assert.equal(master.states('runner').includes('TASK_FAILED'), false, 'not sent before its commit');
    fs.free();
  }
  const end = failed ?? (await master.waitForUpdate('runner', 'TASK_FAILED'));
  assert.equal(end.status.message, `Command exited with status 3 (the launcher could not record it in ${exitFile}: No space left on device)`);
  assert.equal(end.status.source, 'SOURCE_EXECUTOR');
  assert.equal(onDisk.get(end.status.uuid!), true, 'committed before it was sent');
  assert.equal(existsSync(exitFile), false);
  await agent.daemon.waitForLog((r) => r.msg === 'task ended' && r['taskId'] === 'runner' && r['exitCode'] === 3, 5_000, 'the task ended with its exit code');
});

test('a task that ended unrecorded while its agent was away: reported failed, saying why its end is not known', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const master = await startFakeMaster(t, { autoAck: true });
  const workDir = join(fs.dir, 'agent');
  mkdirSync(workDir);
  killTasksOnCleanup(fs, workDir);
  const gate = join(tempDir(t), 'go');
  // The first agent stops with SIGTERM: its task runs on (an upgrade).
  const first = await startAgent(t, { master: master.address, workDir, hostname: 'df-a', flags: SMALL_DISK_FLAGS });
  master.runTask(shellTask('orphan', `while [ ! -e ${gate} ]; do sleep 0.05; done; exit 0`));
  await master.waitForUpdate('orphan', 'TASK_RUNNING');
  const exitFile = join(workDir, 'meta', 'exits', `${safePathComponent(FRAMEWORK_ID)}.orphan.json`);
  await eventually(() => (existsSync(exitFile) ? true : undefined), EVENT_DEADLINE_MS, 20, 'the blank exit file');
  await first.daemon.stop();
  rmSync(exitFile);
  fs.fill();
  const [pid] = taskPids(workDir);
  assert.ok(pid !== undefined);
  writeFileSync(gate, '');
  await eventually(() => (existsSync(`/proc/${pid}`) ? undefined : true), EVENT_DEADLINE_MS, 20, 'the task to end');
  // The next agent finds the launcher gone and no end: it says so, and why.
  const updates = master.updates.length;
  const second = await startAgent(fs.cleanup, { master: master.address, workDir, hostname: 'df-a', flags: SMALL_DISK_FLAGS, stopSignal: 'SIGUSR1', waitRegistered: false });
  const ended = await second.daemon.waitForLog((r) => r.msg === 'task ended' && r['taskId'] === 'orphan', 10_000, 'the orphan task ended');
  assert.equal(ended['state'], 'TASK_FAILED');
  // In the work dir, or in its meta/ when the agent's own first commit found no room either.
  const message = String(ended['message']);
  assert.ok(
    message.startsWith(`Task launcher exited without recording how the task ended: its exit file ${exitFile} is missing; the agent is under disk pressure: no space left on device in ${workDir}`),
    message,
  );
  fs.free();
  const failed = await master.waitForUpdate('orphan', 'TASK_FAILED', 10_000, updates);
  assert.equal(failed.status.message, message);
  assert.equal(failed.status.reason, 'REASON_EXECUTOR_TERMINATED');
});

type Offer = { id: { value: string }; agent_id: { value: string }; hostname: string };
type Status = { task_id: { value: string }; state: string; uuid?: string; agent_id?: { value: string }; message?: string };

test('with a real master: an agent out of disk is not offered while it lasts and shows why; with space back it is offered again and its next task finishes', { skip }, async (t) => {
  const fs = mountSmallFs(t);
  const master = await startMaster(fs.cleanup, { flags: ['--allocation_interval=100ms'] });
  const full = await agentOn(fs, master.address);
  const witness = await startAgent(fs.cleanup, { master: master.address, hostname: 'df-b', stopSignal: 'SIGUSR1' });
  const fullId = full.agentId!;

  const s = await SchedulerClient.subscribe(master.address, { user: 'root', name: 'disk-fw', checkpoint: true, failover_timeout: 60 });
  fs.cleanup.after(() => s.close());
  const offers: Array<{ at: number; offer: Offer }> = [];
  const rescinded: string[] = [];
  const updates: Status[] = [];
  const onEvent = (e: SchedulerEvent): void => {
    if (e.type === 'OFFERS') for (const o of (e['offers'] as { offers: Offer[] }).offers) offers.push({ at: Date.now(), offer: o });
    if (e.type === 'RESCIND') rescinded.push((e['rescind'] as { offer_id: { value: string } }).offer_id.value);
    if (e.type === 'UPDATE') {
      const st = (e['update'] as { status: Status }).status;
      updates.push(st);
      if (st.uuid !== undefined) void s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid }).catch(() => {});
    }
  };
  // The events that came before the handler (the first offers may have), then every one as it comes.
  const early = [...s.received];
  s.onEvent = onEvent;
  for (const e of early) onEvent(e);
  // Hold the full agent's offer; decline the witness's so that it comes back every round.
  const held = await eventually(() => offers.find((o) => o.offer.agent_id.value === fullId)?.offer, EVENT_DEADLINE_MS, 50, 'an offer of df-a');
  const decline = (o: Offer): void => void s.call('DECLINE', { offer_ids: [o.id], filters: { refuse_seconds: 0 } }).catch(() => {});
  const declined = new Set<string>();
  const declineWitness = setInterval(() => {
    for (const { offer } of offers) if (offer.agent_id.value !== fullId && !declined.has(offer.id.value)) {
      declined.add(offer.id.value);
      decline(offer);
    }
  }, 20);
  fs.cleanup.after(() => clearInterval(declineWitness));

  fs.fill();
  // The master hears it: the metric names the agent, the log says why; the held offer is rescinded.
  const metrics = await eventually(async () => {
    const e = await scrapeMetrics(`${master.url}/metrics`);
    return daemonSample(e, 'master', 'drydock_master_agents_disk_pressure', {}) === 1 ? e : undefined;
  }, 10_000, 100, 'the master to count the agent under disk pressure');
  assert.ok((daemonSample(metrics, 'master', 'drydock_master_agent_disk_pressure_seconds', { agent_id: fullId, hostname: 'df-a' }) ?? -1) >= 0);
  const logged = await master.daemon.waitForMsg('agent under disk pressure: not offered', { agentId: fullId, reason: 'NO_SPACE' });
  assert.equal(logged['message'], `no space left on device in ${full.workDir} (0 B free of 4.0 MB)`);
  await eventually(() => (rescinded.includes(held.id.value) ? true : undefined), EVENT_DEADLINE_MS, 20, 'the held offer rescinded');
  // Registered and active as Mesos says it, tasks and all; no field of Drydock's in the Mesos answer.
  const agents = await callApi(master.url, { type: 'GET_AGENTS' });
  const entry = (agents.json as { get_agents: { agents: Array<Record<string, unknown> & { agent_info: { id: { value: string } } }> } }).get_agents.agents.find((a) => a.agent_info.id.value === fullId);
  assert.equal(entry?.['active'], true);
  assert.equal(JSON.stringify(agents.json).includes('pressure'), false);
  // Offers stop: three rounds of the witness's offers after the rescind, none of df-a.
  const mark = Date.now();
  await eventually(() => (offers.filter((o) => o.at > mark && o.offer.agent_id.value === witness.agentId).length >= 3 ? true : undefined), EVENT_DEADLINE_MS, 20, 'three more offers of df-b');
  assert.deepEqual(offers.filter((o) => o.at > mark && o.offer.agent_id.value === fullId), [], 'no offer of df-a while it is short of disk');

  // The CLI says it: agent list, agent show, status, and a run that gets no offer there.
  const cli = async (args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> => cliFinished(startCli(fs.cleanup, master, args), 60_000);
  const list = await cli(['agent', 'list']);
  assert.match(list.stdout, /\bdf-a\b.*\bACTIVE, DISK PRESSURE\b/, list.stdout);
  assert.doesNotMatch(list.stdout.split('\n').find((l) => l.includes('df-b')) ?? '', /PRESSURE/);
  const pressure = `DISK PRESSURE \\(NO_SPACE: no space left on device in ${full.workDir} \\(0 B free of 4\\.0 MB\\)\\) since [0-9T:-]+Z \\([0-9hms ]+ ago\\)`;
  const show = await cli(['agent', 'show', 'df-a']);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, new RegExp(`\\nstate {6}ACTIVE, DISK PRESSURE \\(no offers of its resources while it lasts\\)\\n`), show.stdout);
  assert.match(show.stdout, new RegExp(`\\ncondition  ${pressure}\\n`), show.stdout);
  const status = await cli(['status']);
  assert.match(status.stdout, new RegExp(`\\nagents {4}2 active, .*; 1 under DISK PRESSURE\\n {10}df-a: ${pressure}\\n`), status.stdout);
  const statusJson = JSON.parse((await cli(['status', '--json'])).stdout) as { disk_pressure: Array<{ hostname: string; reason: string }> };
  assert.deepEqual(statusJson.disk_pressure.map((p) => [p.hostname, p.reason]), [['df-a', 'NO_SPACE']]);
  const run = await cli(['run', '--name', 'nowhere', '--command', 'true', '--hostname', 'df-a', '--offer_timeout', '1secs']);
  assert.equal(run.code, 125, run.stderr);
  assert.match(run.stderr, new RegExp(`\\ndrydock run: df-a is under ${pressure}: the master offers none of its resources while it lasts\\n`), run.stderr);

  // Space back: offered again, and the issue's `echo hi` finishes there.
  fs.free();
  const back = await eventually(() => offers.find((o) => o.at > mark && o.offer.agent_id.value === fullId)?.offer, EVENT_DEADLINE_MS, 20, 'an offer of df-a again');
  await master.daemon.waitForMsg('agent disk pressure cleared: offered again', { agentId: fullId });
  const r = await s.call('ACCEPT', {
    offer_ids: [back.id],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: 'hi', task_id: { value: 'hi' }, agent_id: { value: fullId }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }], command: { value: 'echo hi' } }] } }],
  });
  assert.equal(r.status, 202, r.text);
  const done = await eventually(() => updates.find((u) => u.task_id.value === 'hi' && u.state === 'TASK_FINISHED'), EVENT_DEADLINE_MS, 20, 'hi to finish');
  assert.equal(done.message, 'Command exited with status 0');
  const after = await scrapeMetrics(`${master.url}/metrics`);
  assert.equal(daemonSample(after, 'master', 'drydock_master_agents_disk_pressure', {}), 0);
});

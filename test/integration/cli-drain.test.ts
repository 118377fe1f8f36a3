/**
 * The agent commands end to end: the built CLI as a child process against a real master and
 * real agents on loopback. A task started with `drydock run` (which acknowledges its updates)
 * keeps the drain waiting until its kill is acknowledged.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { eventually, startAgent, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli } from '../helpers/cli.js';

/** Runs `drydock ARGS` to its end. */
function drydock(t: { after(fn: () => unknown): void }, master: MasterHandle, ...args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(startCli(t, master, args));
}

/** The agent list's row for a hostname, as cells. */
function row(list: string, hostname: string): string[] {
  const line = list.split('\n').find((l) => l.split(/\s+/)[1] === hostname);
  assert.ok(line !== undefined, `no row for ${hostname} in\n${list}`);
  return line.split(/\s{2,}/);
}

test('drydock agent drain --wait: progress until DRAINED; list shows it; reactivate', { timeout: 420_000 }, async (t) => {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a = await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'agent-a' });
  await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'agent-b' });

  // The task ignores SIGTERM, so the drain waits out the (capped) grace and then SIGKILLs it.
  const task = startCli(t, master, ['run', '--name', 'sleeper', '--command', "trap '' TERM; sleep 60", '--grace_period', '5secs', '--hostname', 'agent-a']);
  await eventually(() => (/TASK_RUNNING/.test(task.stdout) ? true : undefined), undefined, 50, 'TASK_RUNNING printed');

  const before = await drydock(t, master, 'agent', 'list');
  assert.equal(before.code, 0, before.stderr);
  assert.match(before.stdout, /^ID\s+HOSTNAME\s+ADDRESS\s+STATUS\s+MODE\s+RESOURCES/);
  assert.deepEqual(row(before.stdout, 'agent-a').slice(1, 5), ['agent-a', `127.0.0.2:${a.port}`, 'ACTIVE', 'UP']);

  // By hostname, in another case; the 5 s task grace is capped to 1 s.
  const drain = await drydock(t, master, 'agent', 'drain', 'AGENT-A', '--max_grace_period', '1secs', '--wait');
  assert.equal(drain.code, 0, `${drain.stdout}\n${drain.stderr}`);
  assert.match(drain.stderr, new RegExp(`draining agent-a \\(${a.agentId}\\): max grace 1s`));
  assert.match(drain.stdout, /\d\d:\d\d:\d\d\.\d{3}  DRAINING  agent-a  1 task left/);
  assert.match(drain.stdout, /waiting for: task sleeper-[0-9a-f]+ /);
  assert.match(drain.stdout, /DRAINED   agent-a\nagent-a is DRAINED\n$/);
  assert.match(drain.stdout, /waiting for: task sleeper-[0-9a-f]+ still running after SIGTERM/);
  // The task was SIGKILLed by the drain after the capped grace, and `drydock run` saw it.
  assert.equal(await cliFinished(task).then((r) => r.code), 137);

  const after = await drydock(t, master, 'agent', 'list');
  assert.deepEqual(row(after.stdout, 'agent-a').slice(3, 4), ['DRAINED']);
  assert.deepEqual(row(after.stdout, 'agent-b').slice(3, 4), ['ACTIVE']);

  const json = await drydock(t, master, 'agent', 'list', '--json');
  const listed = JSON.parse(json.stdout) as { agents: Array<{ agent_info: { hostname: string }; deactivated: boolean; drain_info?: { state: string; config: { max_grace_period?: { nanoseconds: number } } } }> };
  const entry = listed.agents.find((x) => x.agent_info.hostname === 'agent-a');
  assert.equal(entry?.drain_info?.state, 'DRAINED');
  assert.equal(entry?.drain_info?.config.max_grace_period?.nanoseconds, 1_000_000_000);
  assert.equal(entry?.deactivated, true);

  const re = await drydock(t, master, 'agent', 'reactivate', String(a.agentId));
  assert.equal(re.code, 0, re.stderr);
  assert.match(re.stdout, /agent-a \(.+\) is ACTIVE again/);
  const last = await drydock(t, master, 'agent', 'list');
  assert.deepEqual(row(last.stdout, 'agent-a').slice(3, 4), ['ACTIVE']);
});

test('drydock agent drain --wait on an idle agent is DRAINED at once; drain without --wait returns', { timeout: 180_000 }, async (t) => {
  const master = await startMaster(t);
  await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'idle' });
  const r = await drydock(t, master, 'agent', 'drain', 'idle', '--wait');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stderr, /draining idle \(.+\): each task's own grace period/);
  assert.match(r.stdout, /idle is DRAINED\n$/);
  const again = await drydock(t, master, 'agent', 'drain', 'idle', '--max_grace_period', '0secs');
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /idle is DRAINING \(drydock agent list shows when it is DRAINED\)/);
});

test('drydock agent deactivate / reactivate; hostname resolution; master errors are shown with exit 1', { timeout: 600_000 }, async (t) => {
  const master = await startMaster(t);
  const b = await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'agent-b' });
  await startAgent(t, { master: master.address, ip: '127.0.0.4', hostname: 'twin' });
  const twin2 = await startAgent(t, { master: master.address, ip: '127.0.0.5', hostname: 'TWIN' });

  const de = await drydock(t, master, 'agent', 'deactivate', 'agent-b');
  assert.equal(de.code, 0, de.stderr);
  assert.equal(de.stdout, `agent-b (${b.agentId}) is DEACTIVATED: no new offers; running tasks are untouched\n`);
  const list = await drydock(t, master, 'agent', 'list');
  assert.deepEqual(row(list.stdout, 'agent-b').slice(3, 5), ['DEACTIVATED', 'UP']);
  // Deactivating twice and reactivating twice are alike: exit 0, saying it was already so.
  const twice = await drydock(t, master, 'agent', 'deactivate', 'agent-b');
  assert.deepEqual([twice.code, twice.stdout], [0, `agent-b (${b.agentId}) was already DEACTIVATED: nothing changed\n`]);
  assert.equal((await drydock(t, master, 'agent', 'reactivate', 'agent-b')).code, 0);
  assert.deepEqual(row((await drydock(t, master, 'agent', 'list')).stdout, 'agent-b').slice(3, 4), ['ACTIVE']);
  const again = await drydock(t, master, 'agent', 'reactivate', 'agent-b');
  assert.deepEqual([again.code, again.stdout, again.stderr], [0, `agent-b (${b.agentId}) was already ACTIVE: nothing changed\n`, '']);
  const againJson = await drydock(t, master, 'agent', 'reactivate', 'agent-b', '--json');
  assert.equal((JSON.parse(againJson.stdout) as { changed: boolean }).changed, false);

  const ambiguous = await drydock(t, master, 'agent', 'drain', 'twin');
  assert.equal(ambiguous.code, 1);
  assert.match(ambiguous.stderr, /hostname 'twin' matches 2 agents; name one by id:\n {2}\S+-S\d+ {2}\(127\.0\.0\.[45]:\d+\)\n {2}\S+-S\d+ {2}\(127\.0\.0\.[45]:\d+\)/);
  // By id it works.
  assert.equal((await drydock(t, master, 'agent', 'deactivate', String(twin2.agentId))).code, 0);

  const unknown = await drydock(t, master, 'agent', 'deactivate', 'nosuch');
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no agent with id or hostname 'nosuch'/);
  const unknownId = await drydock(t, master, 'agent', 'drain', 'ffff-S99');
  assert.equal(unknownId.code, 1);
  assert.equal(unknownId.stderr, 'drydock: master answered 400: Unknown agent\n');

  // A bad flag value is a usage error: 2, nothing sent, the pointer to the command's help.
  const badFlag = await drydock(t, master, 'agent', 'drain', 'agent-b', '--max_grace_period', '30');
  assert.equal(badFlag.code, 2);
  assert.match(badFlag.stderr, /--max_grace_period: Invalid duration '30'.*\nRun 'drydock agent drain --help' for usage\.\n$/);
});

test('drydock agent gone: marked gone, no longer listed; drain --mark_gone --wait ends when it is gone', { timeout: 300_000 }, async (t) => {
  const master = await startMaster(t);
  const g = await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'doomed' });
  await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'doomed-too' });
  const r = await drydock(t, master, 'agent', 'gone', 'doomed');
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`doomed \\(${g.agentId}\\) is marked gone`));
  await eventually(async () => (/\sdoomed\s/.test((await drydock(t, master, 'agent', 'list')).stdout) ? undefined : true), undefined, 200, 'doomed to leave the list');

  const m = await drydock(t, master, 'agent', 'drain', 'doomed-too', '--mark_gone', '--wait');
  assert.equal(m.code, 0, `${m.stdout}\n${m.stderr}`);
  assert.match(m.stdout, /doomed-too drained and marked gone\n$/);
});

test('drydock agent drain --wait: Ctrl-C stops waiting (exit 130); the drain goes on', { timeout: 360_000 }, async (t) => {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'slow' });
  const task = startCli(t, master, ['run', '--name', 'stubborn', '--command', "trap '' TERM; sleep 60", '--grace_period', '4secs', '--hostname', 'slow']);
  await eventually(() => (/TASK_RUNNING/.test(task.stdout) ? true : undefined), undefined, 50, 'TASK_RUNNING printed');
  const wait = startCli(t, master, ['agent', 'drain', 'slow', '--wait']);
  await eventually(() => (/waiting for: task stubborn-/.test(wait.stdout) ? true : undefined), undefined, 50, 'a waiting-for line');
  wait.child.kill('SIGINT');
  const r = await cliFinished(wait);
  assert.equal(r.code, 130);
  assert.match(r.stderr, /stopped waiting; the drain of slow goes on/);
  assert.deepEqual(row((await drydock(t, master, 'agent', 'list')).stdout, 'slow').slice(3, 4), ['DRAINING']);
  // ...and ends without us: SIGKILL after the task's 4 s grace, acknowledged by `drydock run`.
  await eventually(async () => (row((await drydock(t, master, 'agent', 'list')).stdout, 'slow')[3] === 'DRAINED' ? true : undefined), undefined, 250, 'DRAINED');
  assert.equal((await cliFinished(task)).code, 137);
});

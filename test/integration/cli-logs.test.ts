/**
 * `drydock task logs` end to end: the built CLI against a real master and a real agent, reading
 * a task's sandbox through the agent's API: stdout and stderr byte for byte, --tail, -f
 * catching what the task prints after it started and ending when the task ends, a closed pipe,
 * an agent whose ACLs refuse access_sandboxes (403 named), an agent that is down, and an agent
 * the master no longer has.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_BIN, eventually, fileWithMode, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli } from '../helpers/cli.js';

type Ctx = Parameters<typeof startMaster>[0];

/** `drydock ARGS` against `master`, to its end; stdout as bytes too. */
async function drydock(t: Ctx, master: MasterHandle, args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(startCli(t, master, args), 60_000);
}

/** The task id `drydock run` launched (from its stderr). */
function launched(stderr: string): string {
  const id = /launching task (\S+)/.exec(stderr)?.[1];
  assert.ok(id !== undefined, stderr);
  return id;
}

/** The raw bytes `drydock ARGS` writes to stdout. */
function stdoutBytes(master: MasterHandle, args: string[]): Promise<{ code: number | null; bytes: Buffer }> {
  const child = spawn(process.execPath, [CLI_BIN, `--master=${master.address}`, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });
  const chunks: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => chunks.push(c));
  return new Promise((resolve) => child.on('close', (code) => resolve({ code, bytes: Buffer.concat(chunks) })));
}

test('task logs: stdout and stderr byte for byte, --tail, -f until the task ends, a closed pipe', { timeout: 240_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-logs-');
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'logs-a', stopSignal: 'SIGUSR1' });

  // A task that ran: five lines on each stream, and two bytes that are not UTF-8.
  const ran = await drydock(t, m, ['run', '--name', 'printer', '--command', "for i in 1 2 3 4 5; do echo out $i; echo err $i >&2; done; printf '\\377\\376\\n'"]);
  assert.equal(ran.code, 0, ran.stderr);
  const id = launched(ran.stderr);

  const all = await stdoutBytes(m, ['task', 'logs', id]);
  assert.equal(all.code, 0);
  assert.deepEqual(all.bytes, Buffer.concat([Buffer.from('out 1\nout 2\nout 3\nout 4\nout 5\n'), Buffer.from([0xff, 0xfe, 0x0a])]));
  const err = await drydock(t, m, ['task', 'logs', 'printer', '--stderr']);
  assert.deepEqual([err.code, err.stdout, err.stderr], [0, 'err 1\nerr 2\nerr 3\nerr 4\nerr 5\n', '']);
  const tail = await drydock(t, m, ['task', 'logs', id.slice(0, -2), '--stderr', '--tail', '2']);
  assert.deepEqual([tail.code, tail.stdout], [0, 'err 4\nerr 5\n']);
  const unknown = await drydock(t, m, ['task', 'logs', 'no-such-task']);
  assert.deepEqual([unknown.code, unknown.stderr], [1, "drydock: no task 'no-such-task' is known to the master (drydock tasks --all lists them)\n"]);
  const badTail = await drydock(t, m, ['task', 'logs', id, '--tail', 'x']);
  assert.equal(badTail.code, 2);

  // -f on a task that prints, waits for a file the test writes, prints again and ends.
  const go = join(dir, 'go');
  const task = startCli(t, m, ['run', '--name', 'waiter', '--command', `echo before; while [ ! -e ${go} ]; do sleep 0.05; done; echo after; echo late >&2`]);
  await eventually(() => (/launching task/.test(task.stderr) ? true : undefined), undefined, 50, 'the waiter launched');
  const waiter = launched(task.stderr);
  const follow = startCli(t, m, ['task', 'logs', waiter, '-f']);
  await eventually(() => (follow.stdout.includes('before\n') ? true : undefined), undefined, 50, '-f printed what was there');
  assert.equal(follow.child.exitCode, null, 'still following');
  writeFileSync(go, '');
  const followed = await cliFinished(follow, 60_000);
  assert.deepEqual([followed.code, followed.stdout, followed.stderr], [0, 'before\nafter\n', '']);
  assert.equal((await cliFinished(task, 60_000)).code, 0);

  // A task that prints forever, read into `head -1`: a quiet 0, no stack trace.
  const chatty = startCli(t, m, ['run', '--name', 'chatty', '--command', 'while :; do echo chatter; sleep 0.01; done']);
  await eventually(() => (/launching task/.test(chatty.stderr) ? true : undefined), undefined, 50, 'chatty launched');
  const chattyId = launched(chatty.stderr);
  const piped = spawn('sh', ['-c', `node ${CLI_BIN} --master=${m.address} task logs ${chattyId} -f | head -1; echo "status \${PIPESTATUS:-}"`], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let errText = '';
  piped.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  piped.stderr.setEncoding('utf8').on('data', (c: string) => (errText += c));
  await new Promise((resolve) => piped.on('close', resolve));
  assert.match(out, /^chatter\n/);
  assert.equal(errText, '', 'no stack trace, no message');
  // --timeout ends following with 124; the task goes on.
  const timed = await drydock(t, m, ['task', 'logs', chattyId, '-f', '--timeout', '500ms']);
  assert.equal(timed.code, 124, timed.stderr);
  assert.match(timed.stderr, /stopped following after 500ms \(--timeout\); the task goes on\n$/);
  chatty.child.kill('SIGINT');
  await cliFinished(chatty, 60_000);
});

test('task logs: an agent whose ACLs refuse access_sandboxes is a 403 that says so; an agent down, and one gone, are named', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-logs-acl-');
  const acls = fileWithMode(join(dir, 'acls.json'), JSON.stringify({ permissive: true, access_sandboxes: [{ principals: { type: 'ANY' }, users: { type: 'NONE' } }] }), 0o644);
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'locked', flags: [`--acls=${acls}`], stopSignal: 'SIGUSR1' });
  const ran = await drydock(t, m, ['run', '--name', 'secret', '--command', 'echo hidden']);
  assert.equal(ran.code, 0, ran.stderr);
  const refused = await drydock(t, m, ['task', 'logs', 'secret']);
  assert.equal(refused.code, 4, refused.stderr);
  assert.match(refused.stderr, /^drydock: the agent locked at 127\.0\.0\.3:[0-9]+ refused to serve the sandbox: Forbidden: .*access_sandboxes.* \(the agent's ACLs: access_sandboxes and view_tasks on the task's user\)\n$/);
  assert.equal(refused.stdout, '');

  // The agent down (its process stopped): the master still has it; the read cannot be made.
  await a.daemon.stop(10_000, 'SIGUSR1');
  const down = await drydock(t, m, ['task', 'logs', 'secret']);
  assert.equal(down.code, 1);
  assert.match(down.stderr, /^drydock: cannot read task secret-\S+'s stdout from the agent locked at 127\.0\.0\.3:[0-9]+.*: ECONNREFUSED\n$/);

  // Marked gone: the master keeps the task, not the agent.
  assert.equal((await drydock(t, m, ['agent', 'gone', 'locked'])).code, 0);
  const gone = await drydock(t, m, ['task', 'logs', 'secret']);
  assert.equal(gone.code, 1, gone.stderr);
  assert.match(gone.stderr, /^drydock: task secret-\S+ ran on agent \S+-S0, which the master no longer has \(removed or marked gone\): its sandbox cannot be read through Drydock\n$/);
});

/**
 * `drydock maintenance plan` end to end: the built CLI as a child process against a real master
 * and one real agent on loopback. The plan waits for the operator once its machine is DOWN
 * (`up_when: operator`), so the test decides when it goes on; the agent, shut down when its
 * machine went DOWN, is started again once the machine is UP, as systemd's `Restart=always` would.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli } from '../helpers/cli.js';

const drydock = (t: { after(fn: () => unknown): void }, master: MasterHandle, args: readonly string[]) => cliFinished(startCli(t, master, args));

const SPEC = [
  'name: cli',
  'machines: { hostnames: [cli-a] }',
  'window: 1hrs',
  'wait_for_frameworks: 1secs',
  'settle: 1secs',
  'up_when: operator',
  '',
].join('\n');

test('drydock maintenance plan: create, list, show with the step\'s note, continue, show --watch to COMPLETE, delete; a bad spec is exit 1 with the master\'s errors', { timeout: 300_000 }, async (t) => {
  const master = await startMaster(t);
  const agent = await startAgent(t, { master: master.address, hostname: 'cli-a', stopSignal: 'SIGUSR1' });
  const dir = tempDir(t);

  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'name: Bad_Name\nmachines: all\nwindw: 1hrs\n');
  const refused = await drydock(t, master, ['maintenance', 'plan', 'create', bad]);
  assert.equal(refused.code, 1, refused.stderr);
  assert.equal(refused.stdout, '');
  assert.match(refused.stderr, /^drydock: master at http:\/\/[0-9.:]+ answered 400: Invalid maintenance plan spec:\n/);
  assert.match(refused.stderr, /\n {2}.*windw is not a known key/);
  assert.match(refused.stderr, /\n {2}.*name must be/);

  const file = join(dir, 'cli.yaml');
  writeFileSync(file, SPEC);
  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'create', file]), { code: 0, stdout: 'created maintenance plan cli: 1 machine in 1 phase\n', stderr: '' });
  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'list']), { code: 0, stdout: 'cli\n', stderr: '' });
  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'list', '--json']), { code: 0, stdout: '[\n  "cli"\n]\n', stderr: '' });

  // The machine goes DOWN (its agent is shut down) and the step waits for the operator, saying so.
  await agent.daemon.exited;
  const waiting = await eventually(async () => {
    const r = await drydock(t, master, ['maintenance', 'plan', 'show', 'cli']);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout.includes('waiting for the operator') ? r.stdout : undefined;
  }, undefined, 200, 'the step waits for the operator');
  assert.equal(waiting, [
    'cli (serial) STARTING',
    '└─ all (serial) STARTING',
    '   └─ cli-a STARTING: waiting for the operator: continue this step to bring the machine UP',
    '',
  ].join('\n'));

  const watch = startCli(t, master, ['maintenance', 'plan', 'show', 'cli', '--watch', '--interval', '200ms']);
  // The watch draws the held step before the operator continues (a loaded machine may start it late).
  await eventually(() => (watch.stdout.includes('waiting for the operator') ? true : undefined), undefined, 50, 'the watch to draw the held step');
  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'continue', 'cli']), { code: 0, stdout: 'Received cmd: continue\n', stderr: '' });
  // Once the machine is UP again, its agent comes back and the step settles.
  await eventually(async () => {
    const res = await fetch(`${master.url}/maintenance/status`);
    return (await res.text()).includes('down_machines') ? undefined : true;
  }, undefined, 100, 'cli-a UP');
  await startAgent(t, { master: master.address, hostname: 'cli-a', stopSignal: 'SIGUSR1' });

  const watched = await cliFinished(watch, 60_000);
  assert.equal(watched.code, 0, watched.stderr);
  assert.match(watched.stdout, /waiting for the operator/);
  assert.match(watched.stdout, /cli \(serial\) COMPLETE\n└─ all \(serial\) COMPLETE\n {3}└─ cli-a COMPLETE/);
  assert.ok(watched.stdout.endsWith('COMPLETE\n'), watched.stdout);

  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'delete', 'cli']), { code: 0, stdout: 'deleted maintenance plan cli\n', stderr: '' });
  assert.deepEqual(await drydock(t, master, ['maintenance', 'plan', 'list']), { code: 0, stdout: '', stderr: '' });
  const gone = await drydock(t, master, ['maintenance', 'plan', 'show', 'cli']);
  assert.equal(gone.code, 1);
  assert.match(gone.stderr, /answered 404: Plan cli not found/);
});

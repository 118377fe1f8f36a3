/**
 * The unit files verify cleanly. `systemd-analyze verify` reports unknown keys and bad values
 * only as warnings on stderr with exit 0, so any stderr output fails the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from '../helpers/daemons.js';

function verify(path: string): { status: number | null; stderr: string } {
  const r = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8', timeout: 20_000 });
  if (r.error !== undefined) throw r.error;
  return { status: r.status, stderr: `${r.stdout}${r.stderr}`.trim() };
}

for (const unit of ['drydock-master.service', 'drydock-agent.service', 'drydock-scheduler.service']) {
  test(`systemd-analyze verify ${unit} passes without a warning`, () => {
    const r = verify(join(ROOT, 'systemd', unit));
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
  });
}

test('the verify check catches a warning (a unit with an unknown key)', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'drydock-broken.service');
  copyFileSync(join(ROOT, 'systemd', 'drydock-agent.service'), path);
  writeFileSync(path, readFileSync(path, 'utf8').replace('KillMode=process', 'KillMode=process\nBogusKey=1'));
  const r = verify(path);
  assert.match(r.stderr, /BogusKey/);
});

test('the agent unit lets tasks outlive an agent restart and never loops on a refusal', () => {
  const text = readFileSync(join(ROOT, 'systemd', 'drydock-agent.service'), 'utf8');
  assert.match(text, /^KillMode=process$/m);
  assert.match(text, /^Restart=on-failure$/m);
  assert.match(text, /^RestartPreventExitStatus=.*\b78\b/m);
});

/**
 * --launcher=FILE: the agent runs its launch server, signaller and launchers from that file
 * (a launcher beside a single executable, or outside a noexec work dir), and says so at start.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, startAgent, startMaster, tempDir } from '../helpers/daemons.js';

test('--launcher=FILE is the launcher the agent runs', async (t) => {
  const dir = tempDir(t);
  const launcher = join(dir, 'bin', 'drydock-launch');
  mkdirSync(join(dir, 'bin'));
  copyFileSync(join(ROOT, 'dist', 'agent', 'drydock-launch'), launcher);
  const m = await startMaster(t);
  const a = await startAgent(t, { master: m.address, flags: [`--launcher=${launcher}`] });
  const starting = await a.daemon.waitForMsg('starting');
  assert.equal(starting['launcher'], launcher);
  assert.equal(starting['launcherSource'], 'flag');
  const server = await a.daemon.waitForMsg('launch server started');
  assert.equal(readlinkSync(`/proc/${Number(server['pid'])}/exe`), launcher);
});

test('drydock-agent --version prints package.json\'s version, without --master', () => {
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const r = spawnSync(process.execPath, [join(ROOT, 'dist', 'agent', 'main.js'), '--version'], { encoding: 'utf8', timeout: 20_000, env: { PATH: process.env['PATH'] ?? '' } });
  assert.equal(r.stdout, `drydock-agent ${version}\n`);
  assert.equal(r.status, 0);
});

/**
 * `drydock` on the PATH: scripts/install-cli.sh writes a wrapper (or, with --link, a symlink)
 * into a bin directory without sudo, and the installed command runs from any directory. A temp
 * prefix stands in for ~/.local/bin; it is removed when the test ends.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, lstatSync, readFileSync, writeFileSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { ROOT, tempDir } from '../helpers/daemons.js';

const SCRIPT = join(ROOT, 'scripts', 'install-cli.sh');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** Runs a command with a bounded time; PATH gets `bin` first. */
function run(cmd: string, args: readonly string[], o: { cwd?: string; bin?: string } = {}) {
  const env = { ...process.env, ...(o.bin === undefined ? {} : { PATH: `${o.bin}${delimiter}${process.env['PATH'] ?? ''}` }) };
  return spawnSync(cmd, args, { encoding: 'utf8', timeout: 20_000, cwd: o.cwd ?? ROOT, env });
}

test('install-cli.sh: a wrapper in --prefix, drydock --version from another directory, --uninstall', (t) => {
  const bin = join(tempDir(t), 'bin');
  const elsewhere = tempDir(t);
  const r = run('sh', [SCRIPT, '--prefix', bin]);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`^wrote ${bin}/drydock: runs node ${ROOT}/dist/cli/main.js\n`));
  assert.match(r.stdout, /is not on your PATH/);

  // Found through the PATH (the shell's lookup, as an operator types it), from elsewhere.
  const v = run('sh', ['-c', 'drydock --version'], { cwd: elsewhere, bin });
  assert.deepEqual([v.status, v.stdout, v.stderr], [0, `${VERSION}\n`, '']);
  const help = run('sh', ['-c', 'drydock --help'], { cwd: elsewhere, bin });
  assert.match(help.stdout, /Exit status/);

  // Again: replaces its own wrapper; says the prefix is on the PATH now.
  const again = run('sh', [SCRIPT, `--prefix=${bin}`], { bin });
  assert.equal(again.status, 0, again.stderr);
  assert.match(again.stdout, /is on your PATH/);

  const gone = run('sh', [SCRIPT, '--prefix', bin, '--uninstall']);
  assert.deepEqual([gone.status, gone.stdout], [0, `removed ${bin}/drydock\n`]);
  assert.equal(existsSync(join(bin, 'drydock')), false);
});

test('install-cli.sh --link: a symlink that runs; a file it did not write is left alone; bad arguments exit 2', (t) => {
  const bin = tempDir(t);
  const r = run('sh', [SCRIPT, '--prefix', bin, '--link']);
  assert.equal(r.status, 0, r.stderr);
  assert.ok(lstatSync(join(bin, 'drydock')).isSymbolicLink());
  const v = run('sh', ['-c', 'drydock --version'], { cwd: tempDir(t), bin });
  assert.deepEqual([v.status, v.stdout], [0, `${VERSION}\n`], v.stderr);

  const other = tempDir(t);
  writeFileSync(join(other, 'drydock'), '#!/bin/sh\necho mine\n');
  const refused = run('sh', [SCRIPT, '--prefix', other]);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /exists and is not one this script installed/);
  assert.equal(readFileSync(join(other, 'drydock'), 'utf8'), '#!/bin/sh\necho mine\n');

  assert.equal(run('sh', [SCRIPT, '--bogus']).status, 2);
  assert.equal(run('sh', [SCRIPT, '--prefix']).status, 2);
});

/**
 * The launcher a single executable carries is written into the work dir under a path named by
 * its hash, atomically, and never over the file of another version (agent/launcher-file.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { chooseLauncher, writeCarriedLauncher } from '../../agent/launcher-file.js';
import { tempDir } from '../helpers/daemons.js';

test('the carried launcher is written once, executable, under a directory named by its hash', (t) => {
  const work = tempDir(t);
  const v1 = Buffer.from('#!/bin/sh\necho v1\n');
  const path = writeCarriedLauncher(v1, work);
  assert.match(path, new RegExp(`^${work}/launcher/[0-9a-f]{16}/drydock-launch$`));
  assert.deepEqual(readFileSync(path), v1);
  assert.equal(statSync(path).mode & 0o777, 0o755);
  // Same bytes: the same file, not rewritten (its inode stays).
  const ino = statSync(path).ino;
  assert.equal(writeCarriedLauncher(v1, work), path);
  assert.equal(statSync(path).ino, ino);
  assert.deepEqual(readdirSync(join(work, 'launcher', path.split('/').at(-2) as string)), ['drydock-launch']);
});

test('another version writes beside, never over, and the old directory goes (its running launchers keep their file)', (t) => {
  const work = tempDir(t);
  const old = writeCarriedLauncher(Buffer.from('old'), work);
  const fresh = writeCarriedLauncher(Buffer.from('new'), work);
  assert.notEqual(fresh, old);
  assert.equal(readFileSync(fresh, 'utf8'), 'new');
  assert.equal(existsSync(old), false);
  assert.deepEqual(readdirSync(join(work, 'launcher')), [fresh.split('/').at(-2)]);
});

test('a damaged copy (wrong bytes or mode) and a crashed write\'s temporary file are replaced', (t) => {
  const work = tempDir(t);
  const bytes = Buffer.from('launcher bytes');
  const path = writeCarriedLauncher(bytes, work);
  writeFileSync(path, 'torn', { mode: 0o755 });
  writeFileSync(join(path, '..', '.drydock-launch.99999.tmp'), 'left by a crash');
  assert.equal(writeCarriedLauncher(bytes, work), path);
  assert.deepEqual(readFileSync(path), bytes);
  assert.deepEqual(readdirSync(join(path, '..')), ['drydock-launch']);
});

test('--launcher wins; outside a single executable the default stays the module\'s', (t) => {
  const work = tempDir(t);
  assert.deepEqual(chooseLauncher('/opt/x/drydock-launch', work), { ok: true, path: '/opt/x/drydock-launch', source: 'flag' });
  assert.deepEqual(chooseLauncher(undefined, work), { ok: true, path: undefined, source: 'module' });
  mkdirSync(join(work, 'unused'));
  assert.equal(existsSync(join(work, 'launcher')), false, 'nothing written when not a single executable');
});

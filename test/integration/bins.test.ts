/**
 * After `npm ci` (whose prepare step builds dist/), the three bin entries run with plain node
 * and answer --help; a bad flag is an error that names it, with a non-zero exit.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_DEADLINE_MS, ROOT } from '../helpers/daemons.js';

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { bin: Record<string, string> };

for (const [name, path] of Object.entries(pkg.bin)) {
  test(`${name} --help`, () => {
    const r = spawnSync(process.execPath, [join(ROOT, path), '--help'], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /Usage/i);
    assert.ok(readFileSync(join(ROOT, path), 'utf8').startsWith('#!/usr/bin/env node'), 'runs as a bin');
  });
}

for (const name of ['drydock-master', 'drydock-agent']) {
  test(`${name} rejects an unknown flag by name`, () => {
    const path = pkg.bin[name] ?? '';
    const r = spawnSync(process.execPath, [join(ROOT, path), '--no_such_flag=1'], { encoding: 'utf8', timeout: EVENT_DEADLINE_MS });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /no_such_flag/);
  });
}

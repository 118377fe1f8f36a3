/**
 * The dependency direction is a rule: shared/ is the leaf and pure; agent/ and master/ import
 * shared/ and never each other; cli/ talks HTTP only. This walks every import and fails on a
 * wrong one.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative, resolve, dirname } from 'node:path';
import { ROOT } from '../helpers/daemons.js';

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sources(path));
    else if (name.endsWith('.ts')) out.push(path);
  }
  return out;
}

const IMPORT = /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

function importsOf(file: string): string[] {
  const text = readFileSync(file, 'utf8');
  const out: string[] = [];
  for (const m of text.matchAll(IMPORT)) out.push(m[1] ?? m[2] ?? '');
  return out;
}

/** Top-level folder an import resolves into, or the package name for bare specifiers. */
function target(file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec;
  return relative(ROOT, resolve(dirname(file), spec)).split('/')[0] ?? '';
}

const RULES: Record<string, (to: string) => string | undefined> = {
  shared: (to) =>
    ['agent', 'master', 'cli', 'scripts'].includes(to) ? `shared/ must not import ${to}/` :
    ['node:fs', 'node:net', 'node:http', 'node:child_process', 'ws', 'better-sqlite3', 'execa', 'systeminformation', 'pidusage'].includes(to)
      ? `shared/ is pure: no ${to}` : undefined,
  agent: (to) => (['master', 'cli', 'scripts', 'better-sqlite3'].includes(to) ? `agent/ must not import ${to}` : undefined),
  master: (to) => (['agent', 'cli', 'scripts', 'execa', 'pidusage', 'systeminformation'].includes(to) ? `master/ must not import ${to}` : undefined),
  cli: (to) => (['agent', 'master', 'scripts', 'ws', 'better-sqlite3'].includes(to) ? `cli/ talks HTTP only: no ${to}` : undefined),
};

test('imports follow the dependency direction', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const [top, rule] of Object.entries(RULES)) {
    for (const file of sources(join(ROOT, top))) {
      for (const spec of importsOf(file)) {
        checked++;
        const problem = rule(target(file, spec));
        if (problem !== undefined) problems.push(`${relative(ROOT, file)}: imports '${spec}': ${problem}`);
      }
    }
  }
  assert.ok(checked > 10, 'the walk found imports to check');
  assert.deepEqual(problems, []);
});

test('the import walk sees a wrong import (self-check)', () => {
  assert.equal(target(join(ROOT, 'agent', 'x.ts'), '../master/master.js'), 'master');
  assert.notEqual(RULES['agent']?.('master'), undefined);
  assert.notEqual(RULES['shared']?.('node:fs'), undefined);
});

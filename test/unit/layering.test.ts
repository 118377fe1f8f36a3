/**
 * The dependency direction is a rule: shared/ is the leaf and pure; io/ (shared I/O) sits on it; agent/ and master/ import
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

const IMPORT = /(?:^|\n)\s*(?:import|export)\s([^'"]*?)from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|createRequire\(import\.meta\.url\)\(\s*['"]([^'"]+)['"]\s*\)/g;

/** Every import of a file; `import type` is erased at build time, so it is marked. */
function importsOf(file: string): Array<{ spec: string; typeOnly: boolean }> {
  const text = readFileSync(file, 'utf8');
  const out: Array<{ spec: string; typeOnly: boolean }> = [];
  for (const m of text.matchAll(IMPORT)) out.push({ spec: m[2] ?? m[3] ?? m[4] ?? '', typeOnly: (m[1] ?? '').startsWith('type ') });
  return out;
}

/** Node built-ins that would make shared/ do I/O at run time (their types alone are fine: they are erased). */
const IMPURE = ['node:fs', 'node:net', 'node:http', 'node:https', 'node:tls', 'node:child_process', 'ws', 'undici', 'better-sqlite3', 'execa', 'systeminformation', 'pidusage'];

/** Top-level folder an import resolves into, or the package name for bare specifiers. */
function target(file: string, spec: string): string {
  if (!spec.startsWith('.')) return spec;
  return relative(ROOT, resolve(dirname(file), spec)).split('/')[0] ?? '';
}

const RULES: Record<string, (to: string, typeOnly: boolean) => string | undefined> = {
  shared: (to, typeOnly) =>
    ['agent', 'master', 'scheduler', 'cli', 'scripts'].includes(to) ? `shared/ must not import ${to}/` :
    IMPURE.includes(to) && !typeOnly ? `shared/ is pure: no ${to}` : to === 'io' ? 'shared/ is pure: no io/' : undefined,
  // io/: the I/O the daemons and clients share (secret files, TLS listeners, client transports).
  // It sits on shared/ and under everything else.
  io: (to) => (['agent', 'master', 'scheduler', 'cli', 'scripts', 'ws', 'better-sqlite3'].includes(to) ? `io/ must not import ${to}/` : undefined),
  agent: (to) => (['master', 'scheduler', 'cli', 'scripts', 'better-sqlite3'].includes(to) ? `agent/ must not import ${to}` : undefined),
  master: (to) => (['agent', 'scheduler', 'cli', 'scripts', 'execa', 'pidusage', 'systeminformation'].includes(to) ? `master/ must not import ${to}` : undefined),
  // The service scheduler is a framework: it speaks to the master over the scheduler API only.
  scheduler: (to) => (['agent', 'master', 'cli', 'scripts', 'ws', 'execa', 'pidusage', 'systeminformation'].includes(to) ? `scheduler/ must not import ${to}` : undefined),
  cli: (to) => (['agent', 'master', 'scripts', 'ws', 'better-sqlite3'].includes(to) ? `cli/ talks HTTP only: no ${to}` : undefined),
};

test('imports follow the dependency direction', () => {
  const problems: string[] = [];
  let checked = 0;
  for (const [top, rule] of Object.entries(RULES)) {
    for (const file of sources(join(ROOT, top))) {
      for (const { spec, typeOnly } of importsOf(file)) {
        checked++;
        const problem = rule(target(file, spec), typeOnly);
        if (problem !== undefined) problems.push(`${relative(ROOT, file)}: imports '${spec}': ${problem}`);
      }
    }
  }
  assert.ok(checked > 10, 'the walk found imports to check');
  assert.deepEqual(problems, []);
});

test('the import walk sees a wrong import (self-check)', () => {
  assert.equal(target(join(ROOT, 'agent', 'x.ts'), '../master/master.js'), 'master');
  assert.notEqual(RULES['agent']?.('master', false), undefined);
  assert.notEqual(RULES['shared']?.('node:fs', false), undefined);
  assert.equal(RULES['shared']?.('node:http', true), undefined, 'types only: erased at build time');
  assert.ok(importsOf(join(ROOT, 'agent', 'session.ts')).some((i) => i.spec === 'ws' && !i.typeOnly), 'a package loaded with createRequire(import.meta.url)(...) counts as an import');
});

/** Every relative import of every source file, as repo paths (`master/term.ts` -> `master/agents.ts`), type-only ones included. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const top of ['shared', 'io', 'master', 'agent', 'cli', 'scripts', 'test']) {
    for (const file of sources(join(ROOT, top))) {
      const to = importsOf(file)
        .filter(({ spec }) => spec.startsWith('.'))
        .map(({ spec }) => relative(ROOT, resolve(dirname(file), spec.replace(/\.js$/, '.ts'))));
      graph.set(relative(ROOT, file), to);
    }
  }
  return graph;
}

/** The import cycles of a graph: its strongly connected components of more than one file (or a file importing itself). */
function importCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const cycles: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const component: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      component.push(w);
    } while (w !== v);
    if (component.length > 1 || (graph.get(v) ?? []).includes(v)) cycles.push(component.sort());
  };
  for (const v of graph.keys()) if (!index.has(v)) visit(v);
  return cycles;
}

test('no import cycle anywhere (type-only imports count: they tie modules together all the same)', () => {
  const graph = importGraph();
  assert.ok(graph.size > 50, 'the walk found the sources');
  assert.deepEqual(importCycles(graph), []);
});

test('the cycle finder sees a cycle (self-check)', () => {
  const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a', 'd']], ['d', []], ['e', ['e']]]);
  assert.deepEqual(importCycles(g), [['a', 'b', 'c'], ['e']]);
  assert.deepEqual(importCycles(new Map([['a', ['b']], ['b', []]])), []);
});

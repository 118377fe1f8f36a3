/**
 * The dependency direction is a rule: shared/ is the leaf and pure; io/ (shared I/O) sits on it; agent/ and master/ import
 * shared/ and never each other; cli/ talks HTTP only. Inside master/, each room has its rules
 * (the door signs, master/<room>/README.md): cores are pure and import only cores, the registry's
 * interface and shared/; the edges (api/) read and act through the term's ports, never a service
 * or a core's class; a service never imports another; nothing imports process/. This walks
 * every import and fails on a wrong one, and each rule is shown to catch a violation.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
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

const IMPORT = /(?:^|\n)\s*(?:import|export)\s([^'"]*?)from\s+['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)|createRequire\(import\.meta\.url\)\(\s*['"]([^'"]+)['"]\s*\)|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g;

/** The names a value import brings in (`{ a, type B, c as d }` -> a, c; types are erased); `*` for a namespace or side-effect import. */
function valueNames(clause: string): string[] {
  if (clause.startsWith('type ')) return [];
  const braces = /\{([^}]*)\}/.exec(clause);
  const names = (braces?.[1] ?? '').split(',').map((n) => n.trim()).filter((n) => n !== '' && !n.startsWith('type '));
  const outside = clause.replace(/\{[^}]*\}/, '').replace(/,/g, ' ').trim();
  if (outside.startsWith('* as')) names.push('*');
  else if (outside !== '' && outside !== 'type') names.push('default');
  return names.map((n) => n.split(/\s+as\s+/)[0] ?? n);
}

/** Every import of a file; `import type` is erased at build time, so it is marked; `names`: the value bindings it takes. */
function importsOf(file: string): Array<{ spec: string; typeOnly: boolean; names: string[] }> {
  const text = readFileSync(file, 'utf8');
  const out: Array<{ spec: string; typeOnly: boolean; names: string[] }> = [];
  for (const m of text.matchAll(IMPORT)) {
    const clause = (m[1] ?? '').trim();
    const names = m[1] !== undefined ? valueNames(clause) : ['*'];
    out.push({ spec: m[2] ?? m[3] ?? m[4] ?? m[5] ?? '', typeOnly: m[1] !== undefined && names.length === 0, names });
  }
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

// ---- master/: the rooms -------------------------------------------------------------------------

/** The rooms of master/ (each opens with a README.md door sign), and the entry master/main.ts. */
const ROOMS = ['process', 'term', 'cores', 'services', 'api', 'security', 'plans', 'registry'] as const;
type Room = (typeof ROOMS)[number] | 'main';

/** The room of a repo path under master/ (`master/cores/agents.ts` -> cores; `master/main.ts` -> main), else undefined. */
function roomOf(path: string): Room | undefined {
  const parts = path.split('/');
  if (parts[0] !== 'master') return undefined;
  if (parts.length === 2) return parts[1] === 'main.ts' ? 'main' : undefined;
  return (ROOMS as readonly string[]).includes(parts[1] ?? '') ? (parts[1] as Room) : undefined;
}

/** A service's name: its file's, up to the first dash (`frameworks-streams.ts` is a part of the frameworks service). */
function serviceOf(path: string): string {
  return (path.split('/').pop() ?? '').replace(/\.ts$/, '').split('-')[0] ?? '';
}

/** One import between two repo paths. */
interface Edge {
  from: string;
  to: string;
  typeOnly: boolean;
  /** The value bindings taken (empty for `import type`). */
  names: readonly string[];
}

/** The term's own modules the edges may read: its ports and its bus (never term.ts or the commit path). */
const TERM_PORTS = new Set(['master/term/queries.ts', 'master/term/commands.ts', 'master/term/ports.ts', 'master/term/events.ts']);

/**
 * What is wrong with an import inside master/, or undefined. `isClass` says whether a module's
 * export is a class (the edges may call a core's pure functions and read its data types, never
 * hold one of its stateful classes).
 */
function masterProblem(e: Edge, isClass: (module: string, name: string) => boolean): string | undefined {
  const from = roomOf(e.from);
  const to = roomOf(e.to);
  if (from === undefined || to === undefined) return undefined;
  // Nothing imports the process but the process (and the executable that starts it).
  if (to === 'process' && from !== 'process' && from !== 'main') return 'nothing imports process/ but process/';
  if (to === 'main') return 'nothing imports the executable';
  switch (from) {
    case 'main':
      return to === 'process' ? undefined : 'master/main.ts only starts process/';
    case 'process':
      return undefined;
    case 'cores':
      // Pure decisions: other cores, the registry's interface (its types and limits), shared/.
      if (to === 'cores') return undefined;
      if (e.to === 'master/registry/registry.ts') return undefined;
      return `cores import only cores, registry/registry.ts and shared/, not ${to}/`;
    case 'term':
      // The term builds services, plans and edges; its ports and bus depend on none of them.
      if (e.from === 'master/term/term.ts') return undefined;
      if (to === 'services' || to === 'api') return `term/ ports import no ${to}/ (only term.ts builds them)`;
      if (to === 'plans' && !e.typeOnly) return 'term/ ports read plans/ types only';
      return undefined;
    case 'services':
      if (to === 'services') return serviceOf(e.from) === serviceOf(e.to) ? undefined : `a service never imports another (${serviceOf(e.from)} -> ${serviceOf(e.to)})`;
      if (to === 'api' || to === 'plans') return `services import no ${to}/`;
      if (e.to === 'master/term/term.ts') return 'services get ports, never the Term';
      if (to === 'registry' && e.to !== 'master/registry/registry.ts') return 'services write through the commit path, never a registry backend';
      return undefined;
    case 'api': {
      // The edges: the term's ports and bus, security, other edges; cores' functions and data types only.
      if (to === 'api' || to === 'security') return undefined;
      if (to === 'term') return TERM_PORTS.has(e.to) ? undefined : `the edges read the term through its ports, not ${e.to}`;
      if (to === 'cores') {
        const classes = e.names.filter((n) => n === '*' || n === 'default' || isClass(e.to, n));
        return classes.length === 0 ? undefined : `the edges never hold a core's class (${classes.join(', ')} of ${e.to})`;
      }
      return `the edges import no ${to}/ (only ports, security, codecs and shared/)`;
    }
    case 'security':
      if (to === 'security') return undefined;
      if (to === 'cores' && e.typeOnly) return undefined;
      return `security imports only security/, shared/, io/ and cores' types, not ${to}/`;
    case 'plans':
      if (to === 'services' || to === 'api') return `plans act through the term's ports, never ${to}/`;
      if (e.to === 'master/term/term.ts') return 'plans get ports, never the Term';
      if (to === 'registry' && e.to !== 'master/registry/registry.ts') return 'plans write through the commit path, never a registry backend';
      return undefined;
    case 'registry':
      return to === 'registry' ? undefined : `registry/ imports only registry/ and shared/, not ${to}/`;
  }
}

/** Imports that leave master/ for folders a room may not use (cores and api stay off I/O; the registry keeps to itself). */
function masterOutsideProblem(file: string, spec: string, typeOnly: boolean): string | undefined {
  const room = roomOf(file);
  if (room === undefined || spec.startsWith('.') === false) {
    if (room === 'cores' && !typeOnly && IMPURE.includes(spec)) return `cores are pure: no ${spec}`;
    return undefined;
  }
  const to = relative(ROOT, resolve(dirname(join(ROOT, file)), spec)).split('/')[0] ?? '';
  if (room === 'cores' && to === 'io') return 'cores are pure: no io/';
  if (room === 'registry' && to === 'io') return 'registry/ keeps to itself: no io/';
  return undefined;
}

/** Whether a module's export is a class: loaded (tsx) and asked. */
const loaded = new Map<string, Record<string, unknown>>();
async function classesOf(edges: readonly Edge[]): Promise<(module: string, name: string) => boolean> {
  for (const e of edges) {
    if (roomOf(e.from) !== 'api' || roomOf(e.to) !== 'cores' || e.names.length === 0 || loaded.has(e.to)) continue;
    loaded.set(e.to, (await import(join(ROOT, e.to))) as Record<string, unknown>);
  }
  return (module, name) => {
    const v = loaded.get(module)?.[name];
    return typeof v === 'function' && /^class[\s{]/.test(Function.prototype.toString.call(v));
  };
}

/** Every import between two files of master/, as repo paths. */
function masterEdges(): Edge[] {
  const edges: Edge[] = [];
  for (const file of sources(join(ROOT, 'master'))) {
    for (const { spec, typeOnly, names } of importsOf(file)) {
      if (!spec.startsWith('.')) continue;
      edges.push({ from: relative(ROOT, file), to: relative(ROOT, resolve(dirname(file), spec.replace(/\.js$/, '.ts'))), typeOnly, names });
    }
  }
  return edges;
}

test('master/ rooms: each import follows its room\'s rules', async () => {
  const edges = masterEdges();
  assert.ok(edges.length > 200, 'the walk found the master\'s imports');
  const isClass = await classesOf(edges);
  const problems: string[] = [];
  for (const e of edges) {
    const problem = masterProblem(e, isClass);
    if (problem !== undefined) problems.push(`${e.from}: imports ${e.to}: ${problem}`);
  }
  for (const file of sources(join(ROOT, 'master'))) {
    for (const { spec, typeOnly } of importsOf(file)) {
      const problem = masterOutsideProblem(relative(ROOT, file), spec, typeOnly);
      if (problem !== undefined) problems.push(`${relative(ROOT, file)}: imports '${spec}': ${problem}`);
    }
  }
  assert.deepEqual(problems, []);
});

test('master/ rooms: every room has its door sign, and no file lies outside a room', () => {
  for (const room of ROOMS) assert.ok(existsSync(join(ROOT, 'master', room, 'README.md')), `master/${room}/README.md`);
  const loose = readdirSync(join(ROOT, 'master')).filter((n) => !(ROOMS as readonly string[]).includes(n) && n !== 'main.ts');
  assert.deepEqual(loose, [], 'master/ holds its rooms and the executable only');
});

test('master/ rooms: each rule catches a violation (a synthetic import graph)', () => {
  const noClass = (): boolean => false;
  const edge = (from: string, to: string, o: { typeOnly?: boolean; names?: string[] } = {}): Edge => ({ from, to, typeOnly: o.typeOnly ?? false, names: o.names ?? (o.typeOnly === true ? [] : ['x']) });
  const bad: Array<[Edge, RegExp]> = [
    [edge('master/cores/drain.ts', 'master/services/drain.ts'), /cores import only/],
    [edge('master/cores/agents.ts', 'master/term/events.ts', { typeOnly: true }), /cores import only/],
    [edge('master/cores/agents.ts', 'master/registry/sqlite.ts'), /cores import only/],
    [edge('master/api/operator.ts', 'master/services/frameworks.ts', { typeOnly: true }), /the edges import no services/],
    [edge('master/api/operator.ts', 'master/term/term.ts', { typeOnly: true }), /through its ports/],
    [edge('master/api/operator.ts', 'master/term/commit.ts', { typeOnly: true }), /through its ports/],
    [edge('master/api/plans.ts', 'master/plans/driver.ts', { typeOnly: true }), /the edges import no plans/],
    [edge('master/api/maintenance.ts', 'master/cores/maintenance.ts', { names: ['MaintenanceState'] }), /never hold a core's class \(MaintenanceState/],
    [edge('master/services/drain.ts', 'master/services/maintenance.ts'), /a service never imports another \(drain -> maintenance\)/],
    [edge('master/services/frameworks-calls.ts', 'master/services/agents.ts', { typeOnly: true }), /a service never imports another/],
    [edge('master/services/drain.ts', 'master/api/operator.ts'), /services import no api/],
    [edge('master/services/drain.ts', 'master/term/term.ts', { typeOnly: true }), /never the Term/],
    [edge('master/services/drain.ts', 'master/registry/sqlite.ts'), /never a registry backend/],
    [edge('master/term/ports.ts', 'master/services/agents.ts', { typeOnly: true }), /term\/ ports import no services/],
    [edge('master/term/events.ts', 'master/plans/step.ts'), /plans\/ types only/],
    [edge('master/security/security.ts', 'master/cores/agents.ts'), /security imports only/],
    [edge('master/security/security.ts', 'master/term/ports.ts', { typeOnly: true }), /security imports only/],
    [edge('master/plans/driver.ts', 'master/services/drain.ts', { typeOnly: true }), /plans act through the term's ports/],
    [edge('master/registry/etcd.ts', 'master/cores/agents.ts', { typeOnly: true }), /registry\/ imports only/],
    [edge('master/term/term.ts', 'master/process/config.ts', { typeOnly: true }), /nothing imports process/],
    [edge('master/api/calls.ts', 'master/process/console.ts'), /nothing imports process/],
    [edge('master/main.ts', 'master/term/term.ts'), /only starts process/],
  ];
  for (const [e, why] of bad) {
    const isClass = (m: string, n: string): boolean => m === 'master/cores/maintenance.ts' && n === 'MaintenanceState';
    const problem = masterProblem(e, isClass);
    assert.ok(problem !== undefined && why.test(problem), `${e.from} -> ${e.to}: ${problem ?? 'allowed'}`);
  }
  const good: Edge[] = [
    edge('master/cores/drain.ts', 'master/cores/agents.ts', { typeOnly: true }),
    edge('master/cores/agents.ts', 'master/registry/registry.ts'),
    edge('master/api/maintenance.ts', 'master/cores/maintenance.ts', { names: ['parseSchedule', 'keyed'] }),
    edge('master/api/operator.ts', 'master/term/queries.ts', { typeOnly: true }),
    edge('master/services/frameworks.ts', 'master/services/frameworks-streams.ts'),
    edge('master/services/drain.ts', 'master/term/ports.ts', { typeOnly: true }),
    edge('master/term/term.ts', 'master/services/drain.ts'),
    edge('master/term/events.ts', 'master/plans/step.ts', { typeOnly: true }),
    edge('master/security/acl-objects.ts', 'master/cores/agents.ts', { typeOnly: true }),
    edge('master/process/main.ts', 'master/term/term.ts'),
    edge('master/main.ts', 'master/process/main.ts'),
  ];
  for (const e of good) assert.equal(masterProblem(e, noClass), undefined, `${e.from} -> ${e.to}`);
  // Out of master/: cores stay pure.
  assert.match(masterOutsideProblem('master/cores/agents.ts', 'node:fs', false) ?? '', /cores are pure/);
  assert.match(masterOutsideProblem('master/cores/agents.ts', '../../io/secrets.js', false) ?? '', /cores are pure/);
  assert.equal(masterOutsideProblem('master/cores/agents.ts', 'node:fs', true), undefined, 'types only: erased');
  // The import reader sees value bindings, and types as erased.
  assert.deepEqual(valueNames('{ keyed, type KeyedSchedule, parseSchedule as ps }'), ['keyed', 'parseSchedule']);
  assert.deepEqual(valueNames('type { A, B }'), []);
  assert.deepEqual(valueNames('* as ns'), ['*']);
});

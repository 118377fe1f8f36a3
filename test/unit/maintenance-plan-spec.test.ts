/**
 * The maintenance plan spec, table-driven: the issue's example read whole, defaults, every
 * refusal naming its field and what it got, hostile text, a seeded fuzz; on_down naming one of the
 * master's hooks (commands refused, unknown hooks, a timeout above the hook's; a stored plan and an
 * older master's command); selecting machines into phases; and the plan built from it.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringify } from 'yaml';
import {
  naturalCompare,
  parseMaintenancePlanSpec,
  planFromSpec,
  planSteps,
  selectMachines,
  type ClusterMachine,
  type MaintenancePlanSpec,
} from '../../master/plans/spec.js';
import { MAX_ERRORS } from '../../shared/yaml-tree.js';
import { parseHooksFile, type HookCatalog } from '../../master/plans/hooks.js';
import { mulberry32 } from '../helpers/random.js';

const ISSUE_EXAMPLE = `
name: kernel-2026-11
machines: { attributes: { zone: a } }          # or hostnames / HOST=IP list / all
group_by: rack                                   # one phase per rack, in order
strategy: serial                                 # phases: serial | parallel
phase_strategy: parallel-canary                  # within a phase
max_parallel: 2
notice: 10mins                                   # schedule each window this far ahead
window: 1hrs                                     # unavailability duration
wait_for_frameworks: 5mins                       # wait for inverse offers to be accepted, at most
max_grace_period: 2mins                          # of the drain
on_down: { hook: reboot, timeout: 15mins }       # optional: one of the master's hooks
up_when: agent_registered                        # or: operator (wait for continue)
budget: { max_down: 2, min_active_agents: { zone: a, count: 10 } }
`;

/** The master's hooks the specs below name. */
const HOOKS: HookCatalog = (() => {
  const r = parseHooksFile([
    'hooks:',
    '  reboot: { command: ["/usr/local/bin/reboot-host", "{hostname}"], timeout: 20mins }',
    '  patch: { command: ["/usr/local/sbin/patch-host", "{hostname}", "{ip}"] }',
    '  x: { command: ["/bin/true"], timeout: 2mins }',
    '',
  ].join('\n'));
  if (!r.ok) assert.fail(r.errors.join('\n'));
  return r.hooks;
})();
const REBOOT = HOOKS.get('reboot');
const PATCH = HOOKS.get('patch');
const X = HOOKS.get('x');

function parsed(text: string, hooks: HookCatalog = HOOKS): MaintenancePlanSpec {
  const r = parseMaintenancePlanSpec(text, { hooks });
  if (!r.ok) assert.fail(`expected the spec to parse, got:\n${r.errors.join('\n')}`);
  return r.spec;
}

function errorsOf(text: string, hooks: HookCatalog = HOOKS): string[] {
  const r = parseMaintenancePlanSpec(text, { hooks });
  assert.equal(r.ok, false, `expected errors for:\n${text}`);
  return r.ok ? [] : r.errors;
}

const MIN = 'name: k\nmachines: all\nwindow: 1hrs\n';

test("the issue's example reads whole, units in field names", () => {
  assert.deepEqual(parsed(ISSUE_EXAMPLE), {
    name: 'kernel-2026-11',
    machines: { kind: 'attributes', attributes: { zone: 'a' } },
    groupBy: 'rack',
    strategy: 'serial',
    phaseStrategy: 'parallel-canary',
    maxParallel: 2,
    noticeMs: 600_000,
    windowMs: 3_600_000,
    waitForFrameworksMs: 300_000,
    maxGracePeriodMs: 120_000,
    onDown: { kind: 'hook', hook: 'reboot', definition: REBOOT, timeoutMs: 900_000, onInterrupted: 'operator' },
    upWhen: 'agent_registered',
    settleMs: 10_000,
    stepTimeoutMs: 3_600_000,
    budget: { maxDown: 2, minActiveAgents: { attributes: { zone: 'a' }, count: 10 } },
  });
});

test('every default is filled, and the result is frozen all the way down', () => {
  const spec = parsed(MIN);
  assert.deepEqual(spec, {
    name: 'k', machines: { kind: 'all' }, groupBy: undefined, strategy: 'serial', phaseStrategy: 'serial', maxParallel: undefined,
    noticeMs: 0, windowMs: 3_600_000, waitForFrameworksMs: 300_000, maxGracePeriodMs: undefined, onDown: undefined, upWhen: 'agent_registered',
    settleMs: 10_000, stepTimeoutMs: 3_600_000, budget: { maxDown: undefined, minActiveAgents: undefined },
  });
  const full = parsed(ISSUE_EXAMPLE);
  for (const o of [full, full.machines, full.onDown, full.budget, full.budget.minActiveAgents, full.budget.minActiveAgents?.attributes]) {
    assert.ok(Object.isFrozen(o), JSON.stringify(o));
  }
});

test('accepted forms, each read as written', () => {
  const cases: Array<[string, string, (s: MaintenancePlanSpec) => unknown, unknown]> = [
    ['JSON text', JSON.stringify({ name: 'j', machines: 'all', window: '30mins' }), (s) => s.windowMs, 1_800_000],
    ['hostnames', `${MIN}`.replace('machines: all', 'machines: {hostnames: [agent-1, Agent-2]}'), (s) => s.machines, { kind: 'hostnames', hostnames: ['agent-1', 'Agent-2'] }],
    ['HOST=IP list and {hostname, ip}', MIN.replace('machines: all', 'machines: [a1=10.0.0.1, {hostname: a2, ip: 10.0.0.2}]'), (s) => s.machines,
      { kind: 'list', machines: [{ hostname: 'a1', ip: '10.0.0.1' }, { hostname: 'a2', ip: '10.0.0.2' }] }],
    ['attributes written as numbers keep their text', MIN.replace('machines: all', 'machines: {attributes: {rack: 01, zone: a}}'), (s) => s.machines,
      { kind: 'attributes', attributes: { rack: '01', zone: 'a' } }],
    ['notice: 0 needs no unit', `${MIN}notice: 0\n`, (s) => s.noticeMs, 0],
    ['fractional duration', `${MIN}settle: 1.5secs\n`, (s) => s.settleMs, 1500],
    ['max_grace_period 0secs: kill at once', `${MIN}max_grace_period: 0secs\n`, (s) => s.maxGracePeriodMs, 0],
    ['on_down as just a hook name: the hook\'s own timeout', `${MIN}on_down: patch\n`, (s) => s.onDown,
      { kind: 'hook', hook: 'patch', definition: PATCH, timeoutMs: 900_000, onInterrupted: 'operator' }],
    ['on_down.hook with no timeout: the hook\'s', `${MIN}on_down: {hook: reboot}\n`, (s) => s.onDown?.timeoutMs, 1_200_000],
    ['on_interrupted retry, a shorter timeout than the hook\'s', `${MIN}on_down: {hook: x, on_interrupted: retry, timeout: 1mins}\n`, (s) => s.onDown,
      { kind: 'hook', hook: 'x', definition: X, timeoutMs: 60_000, onInterrupted: 'retry' }],
    ['a timeout equal to the hook\'s', `${MIN}on_down: {hook: x, timeout: 2mins}\n`, (s) => s.onDown?.timeoutMs, 120_000],
    ['min_active_agents without attributes: the whole cluster', `${MIN}budget: {min_active_agents: {count: 3}}\n`, (s) => s.budget, { maxDown: undefined, minActiveAgents: { attributes: {}, count: 3 } }],
    ['explicit null is absent', `${MIN}notice:\nbudget:\n`, (s) => [s.noticeMs, s.budget.maxDown], [0, undefined]],
    ['up_when operator, phase canary', `${MIN}up_when: operator\nphase_strategy: canary\nstrategy: parallel\n`, (s) => [s.upWhen, s.phaseStrategy, s.strategy], ['operator', 'canary', 'parallel']],
  ];
  for (const [name, text, pick, want] of cases) assert.deepEqual(pick(parsed(text)), want, name);
});

test('each refusal names the field and what it got', () => {
  const cases: Array<[string, string, string]> = [
    ['name missing', 'machines: all\nwindow: 1hrs\n', 'name is required'],
    ['name upper case', MIN.replace('name: k', 'name: Kernel'), `name must be a lowercase letter, then lowercase letters, digits or '-', at most 63 characters, got "Kernel"`],
    ['name too long', MIN.replace('name: k', `name: ${'k'.repeat(64)}`), 'name must be a lowercase letter'],
    ['window missing', 'name: k\nmachines: all\n', 'window is required'],
    ['window zero', MIN.replace('1hrs', '0secs'), 'window must be longer than 0, got "0secs"'],
    ['window without unit', MIN.replace('1hrs', '3600'), 'window must be a duration with a unit, such as 10mins or 30secs, got 3600'],
    ['window words', MIN.replace('1hrs', '"1 hour"'), `window: Invalid duration '1 hour': expected a number and a unit`],
    ['sub-millisecond', `${MIN}settle: 5us\n`, 'settle must be a whole number of milliseconds, got "5us"'],
    ['unknown key with a near one', `${MIN}max_paralel: 2\n`, 'max_paralel is not a known key; did you mean max_parallel?'],
    ['unknown key', `${MIN}colour: red\n`, 'colour is not a known key (expected name, machines,'],
    ['machines some word', MIN.replace('machines: all', 'machines: everything'), 'machines must be one of all, {hostnames: [...]}, {attributes: {...}} or a list of HOST=IP, got "everything"'],
    ['machines both forms', MIN.replace('machines: all', 'machines: {hostnames: [a], attributes: {r: x}}'), 'machines must have exactly one of hostnames and attributes'],
    ['machines bare hostname in a list', MIN.replace('machines: all', 'machines: [agent-1]'), 'machines[0] must be HOST=IP (use machines: {hostnames: [...]} to pick machines by hostname), got "agent-1"'],
    ['machines bad ip', MIN.replace('machines: all', 'machines: [a=10.0.0.256]'), 'machines[0] has an invalid ip "10.0.0.256": expected a dotted-quad IPv4 address'],
    ['machines twice', MIN.replace('machines: all', 'machines: [a=10.0.0.1, A=10.0.0.1]'), 'machines[1] lists A (10.0.0.1) a second time'],
    ['machines map item without ip', MIN.replace('machines: all', 'machines: [{hostname: a}]'), 'machines[0].ip must be an IPv4 address, got nothing'],
    ['hostnames empty', MIN.replace('machines: all', 'machines: {hostnames: []}'), 'machines.hostnames must be a list of 1 to 20000 hostnames, got a list'],
    ['hostnames twice', MIN.replace('machines: all', 'machines: {hostnames: [a, A]}'), 'machines.hostnames[1] names A a second time (hostnames compare without case)'],
    ['hostname with a space', MIN.replace('machines: all', 'machines: {hostnames: ["a b"]}'), `machines.hostnames[0] must be a hostname (letters, digits, '.', '-' and '_', at most 253 characters), got "a b"`],
    ['attributes empty', MIN.replace('machines: all', 'machines: {attributes: {}}'), 'machines.attributes must be a mapping of at least one attribute to its value, got a mapping'],
    ['attribute value a list', MIN.replace('machines: all', 'machines: {attributes: {rack: [a]}}'), 'machines.attributes.rack must be an attribute value (text of 1 to 256 characters), got a list'],
    ['strategy', `${MIN}strategy: canary\n`, 'strategy must be one of serial, parallel, got "canary"'],
    ['phase_strategy', `${MIN}phase_strategy: dependency\n`, 'phase_strategy must be one of serial, parallel, serial-canary, canary, parallel-canary, got "dependency"'],
    ['max_parallel zero', `${MIN}max_parallel: 0\n`, 'max_parallel must be an integer from 1 to 100000, got 0'],
    ['max_parallel text', `${MIN}max_parallel: two\n`, 'max_parallel must be an integer from 1 to 100000, got "two"'],
    ['group_by a list', `${MIN}group_by: [rack]\n`, 'group_by must be an attribute name (1 to 128 characters, no control characters), got a list'],
    ['on_down.command refused, saying what to do instead', `${MIN}on_down: {command: "echo {hostname}", timeout: 1mins}\n`,
      "on_down.command is not accepted: a plan names one of the master's hooks (on_down: { hook: NAME }); the master's hooks are configured with --maintenance_hooks"],
    ['the old shorthand command refused', `${MIN}on_down: "reboot {hostname}"\n`,
      `on_down must name one of the master's hooks, got "reboot {hostname}": commands are not accepted; a plan names one of the master's hooks (on_down: NAME or on_down: { hook: NAME }); the master's hooks are configured with --maintenance_hooks`],
    ['a command next to a hook refused', `${MIN}on_down: {hook: patch, command: "id"}\n`, 'on_down.command is not accepted'],
    ['unknown hook: the names the master has', `${MIN}on_down: {hook: patchh}\n`, "on_down.hook 'patchh' is not one of the master's hooks: this master's hooks are patch, reboot, x"],
    ['unknown hook by shorthand', `${MIN}on_down: reboot-all\n`, "on_down.hook 'reboot-all' is not one of the master's hooks"],
    ['a timeout above the hook\'s', `${MIN}on_down: {hook: x, timeout: 3mins}\n`, "on_down.timeout (3mins) is longer than hook x's own timeout (2mins): a plan may ask for less, never more"],
    ['on_down without hook', `${MIN}on_down: {timeout: 1mins}\n`, "on_down.hook is required: the name of one of the master's hooks (this master's hooks are patch, reboot, x)"],
    ['on_down blank', `${MIN}on_down: "  "\n`, `on_down must name one of the master's hooks, got "  "`],
    ['on_down hook not a name', `${MIN}on_down: {hook: [a]}\n`, "on_down.hook must be a hook's name"],
    ['on_down unknown key', `${MIN}on_down: {hook: x, timout: 1mins}\n`, 'on_down.timout is not a known key; did you mean timeout?'],
    ['on_interrupted', `${MIN}on_down: {hook: x, on_interrupted: ignore}\n`, 'on_down.on_interrupted must be one of retry, operator, got "ignore"'],
    ['up_when', `${MIN}up_when: later\n`, 'up_when must be one of agent_registered, operator, got "later"'],
    ['budget max_down zero', `${MIN}budget: {max_down: 0}\n`, 'budget.max_down must be an integer from 1 to 100000, got 0'],
    ['budget unknown key', `${MIN}budget: {maxdown: 1}\n`, 'budget.maxdown is not a known key; did you mean max_down?'],
    ['min_active_agents without count', `${MIN}budget: {min_active_agents: {zone: a}}\n`, 'budget.min_active_agents.count is required'],
    ['min_active_agents count text', `${MIN}budget: {min_active_agents: {zone: a, count: many}}\n`, 'budget.min_active_agents.count must be an integer from 1 to 100000, got "many"'],
    ['step_timeout shorter than notice', `${MIN}notice: 2hrs\n`, 'step_timeout (1hrs) must be longer than notice (2hrs): the drain waits for the window to start, and the step would time out first'],
    ['step_timeout shorter than the hook', `${MIN}step_timeout: 10mins\non_down: patch\n`, 'step_timeout (10mins) must be longer than on_down.timeout (15mins): the step would time out before the hook does, losing its output'],
    ['settle as long as the timeout', `${MIN}settle: 1hrs\n`, 'step_timeout (1hrs) must be longer than settle (1hrs): no agent could ever settle'],
    ['top level a list', '- a\n', 'the spec must be a mapping with name, machines and window, got a list'],
    ['duplicate key', `${MIN}notice: 1mins\nnotice: 2mins\n`, 'line 5, column 1: key "notice" appears twice in one mapping'],
    ['two documents', `${MIN}---\n${MIN}`, 'the spec must be one YAML document, got 2 (separated by ---)'],
    ['YAML 1.1', `%YAML 1.1\n---\n${MIN}`, '%YAML 1.1 is not accepted'],
  ];
  for (const [name, text, want] of cases) {
    const errors = errorsOf(text);
    assert.ok(errors.some((e) => e.startsWith(want)), `${name}: wanted "${want}", got:\n${errors.join('\n')}`);
  }
});

test('all errors are collected, not just the first (in the order the fields are documented)', () => {
  const errors = errorsOf('name: K\nmachines: some\nwindow: soon\nstrategy: x\nbudget: {max_down: -1}\n');
  assert.deepEqual(errors.map((e) => e.split(' ')[0]), ['name', 'machines', 'strategy', 'window:', 'budget.max_down']);
});

test('a master without hooks: any on_down is refused, saying none are configured', () => {
  const none: HookCatalog = new Map();
  assert.ok(errorsOf(`${MIN}on_down: patch\n`, none).includes("on_down.hook 'patch' is not one of the master's hooks: this master has no hooks (none are configured: --maintenance_hooks)"));
  assert.equal(parseMaintenancePlanSpec(`${MIN}on_down: patch\n`).ok, false, 'no hooks by default');
  assert.deepEqual(parsed(MIN, none).onDown, undefined);
});

test('a stored plan comes back whatever the hooks are now; an older master\'s command is kept, as a command', () => {
  const stored = (text: string, hooks: HookCatalog, mode: 'stored' | 'legacy'): MaintenancePlanSpec => {
    const r = parseMaintenancePlanSpec(text, { hooks, mode });
    if (!r.ok) assert.fail(r.errors.join('\n'));
    return r.spec;
  };
  // The hook is gone: the plan reads, the hook has no definition (its step will say so).
  assert.deepEqual(stored(`${MIN}on_down: {hook: gone, timeout: 5mins}\n`, HOOKS, 'stored').onDown, { kind: 'hook', hook: 'gone', definition: undefined, timeoutMs: 300_000, onInterrupted: 'operator' });
  // The hook's timeout shrank below the plan's: the hook's caps it; the step_timeout check is not a refusal.
  assert.equal(stored(`${MIN}on_down: {hook: x, timeout: 50mins}\n`, HOOKS, 'stored').onDown?.timeoutMs, 120_000);
  assert.equal(stored(`${MIN}step_timeout: 10mins\non_down: {hook: gone}\n`, new Map(), 'stored').onDown?.timeoutMs, 900_000);
  // An older master's plan: its command, in either of the old forms, never a hook.
  assert.deepEqual(stored(`${MIN}on_down: {command: "id > /tmp/x; exit 3", timeout: 20secs}\n`, HOOKS, 'legacy').onDown, { kind: 'command', command: 'id > /tmp/x; exit 3', timeoutMs: 20_000, onInterrupted: 'operator' });
  assert.deepEqual(stored(`${MIN}on_down: patch\n`, HOOKS, 'legacy').onDown, { kind: 'command', command: 'patch', timeoutMs: 900_000, onInterrupted: 'operator' });
  // A stored plan of this master's kind cannot smuggle a command in either.
  assert.equal(parseMaintenancePlanSpec(`${MIN}on_down: {command: id}\n`, { hooks: HOOKS, mode: 'stored' }).ok, false);
});

test('hostile text is refused with a reason, never thrown', () => {
  const bomb = `a: &a [x, x, x, x, x, x, x, x, x, x]\n${Array.from({ length: 8 }, (_, i) => `b${i}: &b${i} [*${i === 0 ? 'a' : `b${i - 1}`}, *${i === 0 ? 'a' : `b${i - 1}`}]`).join('\n')}\n`;
  const cases: Array<[string, unknown, RegExp]> = [
    ['too long', `${MIN}#${'x'.repeat(300 * 1024)}`, /characters long; at most 262144 are accepted/],
    ['deep flow nesting', '['.repeat(50_000), /nests more than 100 levels deep/],
    ['deep block nesting', '- '.repeat(50_000), /nests more than 100 levels deep/],
    ['alias bomb', bomb, /expands aliases more than 50 times/],
    ['alias as a key', '&a a: 1\n*a : 2\n', /line 2, column 1: .*keys must be strings/],
    ['not text', 42, /must be text/],
    ['empty', '', /the spec must be a mapping|empty/],
    ['a tag', `!!binary x\n`, /must be a mapping|line/],
    ['__proto__ key', '{"__proto__": {"name": "a"}, "name": "a", "machines": "all", "window": "1hrs"}', /__proto__ is not a known key/],
  ];
  for (const [name, input, want] of cases) {
    const r = parseMaintenancePlanSpec(input as string);
    assert.equal(r.ok, false, name);
    if (!r.ok) assert.ok(r.errors.some((e) => want.test(e)), `${name}: ${r.errors.join(' / ').slice(0, 300)}`);
  }
});

// ---------------------------------------------------------------------------------------------
// Fuzz

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const SEED = Number(process.env['SPEC_FUZZ_SEED'] ?? 0x3a1e);
const KEYS = ['__proto__', 'constructor', 'name', 'machines', 'hostnames', 'attributes', 'hostname', 'ip', 'window', 'notice', 'on_down', 'command', 'hook',
  'timeout', 'budget', 'max_down', 'min_active_agents', 'count', 'group_by', 'zone', '', '0'];
const SCALARS: Json[] = [0, -0, -1, 1, 2.5, 1e308, 2 ** 53 + 1, '', ' ', 'all', 'a=10.0.0.1', '=10.0.0.1', 'a=', '10mins', '0secs', '1.5hrs', '9999999999999weeks',
  '5us', '{hostname}', '{nope}', '${X}', 'serial', 'canary', 'retry', 'operator', 'x', 'patch', '\u0000', '\ud800', 'a'.repeat(3000), true, false, null];

function randomValue(next: () => number, depth: number): Json {
  const r = next();
  if (depth > 5 || r < 0.5) return SCALARS[Math.floor(next() * SCALARS.length)] ?? null;
  if (r < 0.7) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const o: { [k: string]: Json } = {};
  for (let i = Math.floor(next() * 4); i > 0; i--) {
    Object.defineProperty(o, KEYS[Math.floor(next() * KEYS.length)] ?? 'k', { value: randomValue(next, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return o;
}

function graft(next: () => number, value: Json): Json {
  if (value === null || typeof value !== 'object' || next() < 0.25) return randomValue(next, 0);
  const keys = Object.keys(value);
  if (keys.length === 0) return randomValue(next, 0);
  const k = keys[Math.floor(next() * keys.length)] ?? '';
  const copy: Record<string, Json> | Json[] = Array.isArray(value) ? [...value] : { ...value };
  (copy as Record<string, Json>)[k] = graft(next, (value as Record<string, Json>)[k] ?? null);
  return copy as Json;
}

function mutateText(next: () => number, text: string): string {
  let s = text;
  for (let n = 1 + Math.floor(next() * 4); n > 0; n--) {
    const at = Math.floor(next() * (s.length + 1));
    const junk = ['\t', ' ', '\n', ':', '- ', '[', ']', '{', '}', '&a ', '*a', '!!', '"', "'", '#', '---\n', '? ', '|', '%', ',', '0'][Math.floor(next() * 21)] ?? '';
    s = next() < 0.5 ? s.slice(0, at) + junk + s.slice(at) : s.slice(0, at) + s.slice(at + 1 + Math.floor(next() * 8));
  }
  return s;
}

test(`fuzz: parseMaintenancePlanSpec never throws (seed ${SEED}; rerun with SPEC_FUZZ_SEED)`, () => {
  const next = mulberry32(SEED);
  const base = JSON.parse(JSON.stringify({
    name: 'k', machines: { hostnames: ['a', 'b'] }, group_by: 'rack', window: '1hrs', on_down: { hook: 'x', timeout: '1mins' },
    budget: { max_down: 2, min_active_agents: { zone: 'a', count: 1 } },
  })) as Json;
  let accepted = 0;
  for (let i = 0; i < 1500; i++) {
    const kind = i % 4;
    const text =
      kind === 0 ? mutateText(next, ISSUE_EXAMPLE) :
      kind === 1 ? JSON.stringify(graft(next, base)) :
      kind === 2 ? stringify(graft(next, base)) :
      JSON.stringify(randomValue(next, 0));
    let r;
    try {
      r = parseMaintenancePlanSpec(text, { hooks: HOOKS, mode: (['create', 'stored', 'legacy'] as const)[i % 3] ?? 'create' });
    } catch (e) {
      assert.fail(`case ${i} threw ${String(e)} on:\n${text.slice(0, 500)}`);
    }
    if (r.ok) {
      accepted++;
      assert.ok(Object.isFrozen(r.spec), `case ${i}`);
      assert.ok(r.spec.windowMs > 0 && r.spec.stepTimeoutMs > r.spec.settleMs, `case ${i}`);
    } else {
      assert.ok(r.errors.length >= 1 && r.errors.length <= MAX_ERRORS + 1, `case ${i}: ${r.errors.length} errors`);
      for (const e of r.errors) assert.ok(e.length > 0 && e.length < 600, `case ${i}: ${e.slice(0, 700)}`);
    }
  }
  assert.ok(accepted > 20, `some cases stay valid (${accepted})`);
});

// ---------------------------------------------------------------------------------------------
// Machines, phases, the plan

test('natural order: r2 before r10', () => {
  const sorted = ['r10', 'r2', 'r1', 'a', 'r02', 'r1b', 'b10', 'b9'].sort(naturalCompare);
  assert.deepEqual(sorted, ['a', 'b9', 'b10', 'r1', 'r1b', 'r02', 'r2', 'r10']);
});

const M = (hostname: string, ip: string, attributes: Record<string, string> = {}): ClusterMachine => ({ id: { hostname, ip }, attributes });
const CLUSTER: ClusterMachine[] = [
  M('node-10', '10.0.0.10', { rack: 'r10', zone: 'a' }),
  M('node-2', '10.0.0.2', { rack: 'r2', zone: 'a' }),
  M('node-1', '10.0.0.1', { rack: 'r2', zone: 'b' }),
  M('node-3', '10.0.0.3', { zone: 'a' }),
  M('twin', '10.0.1.1', { rack: 'r1' }),
  M('twin', '10.0.1.2', { rack: 'r1' }),
];

test('selectMachines: which machines, in which phases, in which order', () => {
  const names = (sel: ReturnType<typeof selectMachines>) => sel.phases.map((p) => [p.name, p.machines.map((m) => `${m.hostname}=${m.ip}`)]);
  const cases: Array<[string, string, unknown, string[]]> = [
    ['all, one phase, by hostname', 'machines: all', [['all', ['node-1=10.0.0.1', 'node-2=10.0.0.2', 'node-3=10.0.0.3', 'node-10=10.0.0.10', 'twin=10.0.1.1', 'twin=10.0.1.2']]], []],
    ['attributes, grouped by rack, (none) last', 'machines: {attributes: {zone: a}}\ngroup_by: rack',
      [['r2', ['node-2=10.0.0.2']], ['r10', ['node-10=10.0.0.10']], ['(none)', ['node-3=10.0.0.3']]], []],
    ['hostnames keep the written order; a twin hostname takes both', 'machines: {hostnames: [twin, NODE-2, ghost]}',
      [['all', ['twin=10.0.1.1', 'twin=10.0.1.2', 'node-2=10.0.0.2']]], ['ghost']],
    ['a list keeps unknown machines, in the (none) phase', 'machines: [node-10=10.0.0.10, spare=10.9.9.9]\ngroup_by: rack',
      [['r10', ['node-10=10.0.0.10']], ['(none)', ['spare=10.9.9.9']]], []],
    ['nothing matches', 'machines: {attributes: {zone: z}}', [], []],
  ];
  for (const [name, machines, want, unmatched] of cases) {
    const spec = parsed(`name: k\nwindow: 1hrs\n${machines}\n`);
    const sel = selectMachines(spec, CLUSTER);
    assert.deepEqual(names(sel), want, name);
    assert.deepEqual(sel.unmatched, unmatched, name);
  }
});

test('planFromSpec: a phase per group, a step per machine, the strategies of the spec', () => {
  const spec = parsed('name: kernel\nwindow: 1hrs\nmachines: all\ngroup_by: rack\nstrategy: parallel\nphase_strategy: serial-canary\n');
  const sel = selectMachines(spec, CLUSTER);
  const plan = planFromSpec(spec, sel);
  assert.equal(plan.name, 'kernel');
  assert.equal(plan.strategy.name, 'parallel');
  assert.deepEqual(plan.phases.map((p) => [p.name, p.strategy.name, p.steps.map((s) => s.name)]), [
    ['r1', 'serial-canary', ['twin (10.0.1.1)', 'twin (10.0.1.2)']],
    ['r2', 'serial-canary', ['node-1', 'node-2']],
    ['r10', 'serial-canary', ['node-10']],
    ['(none)', 'serial-canary', ['node-3']],
  ]);
  // The canary holds its first steps for the operator, as the engine's canary does for any plan.
  assert.equal(plan.phases[0]?.steps[0]?.status(), 'WAITING');
  // Step names are unique in the plan and map back to their machines.
  const steps = planSteps(sel);
  assert.equal(new Set(steps.map((s) => s.step)).size, steps.length);
  assert.deepEqual(steps.find((s) => s.step === 'node-10')?.machine, { hostname: 'node-10', ip: '10.0.0.10' });
  // Serial phases by default: one step offered at a time.
  const serial = planFromSpec(parsed('name: k\nwindow: 1hrs\nmachines: all\n'), selectMachines(parsed('name: k\nwindow: 1hrs\nmachines: all\n'), CLUSTER));
  assert.deepEqual(serial.candidates([]).map((s) => s.name), ['node-1']);
});

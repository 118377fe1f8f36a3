/**
 * The service spec (scheduler/spec.ts, spec-shape.ts, spec-changes.ts), table-driven: the forms the YAML may take and the defaults
 * they get, every error with the exact message an operator reads, what may change between two
 * configurations, which changes relaunch a pod, the stored JSON, and a seeded fuzz that may make
 * the reader refuse anything but never throw.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { mulberry32 } from '../helpers/random.js';
import { MAX_ALIASES, MAX_ERRORS, MAX_SPEC_CHARS, parseServiceSpec } from '../../scheduler/spec.js';
import { podNeedsRelaunch, taskNeedsRelaunch, validateUpdate } from '../../scheduler/spec-changes.js';
import { specEquals, specFromJson, specJson } from '../../scheduler/spec-shape.js';
import type { PodSpec, ServiceSpec, TaskSpec } from '../../scheduler/spec-types.js';

const HELLO_YML = readFileSync(new URL('../../examples/hello.yml', import.meta.url), 'utf8');

function parsed(text: string): ServiceSpec {
  const r = parseServiceSpec(text);
  if (!r.ok) assert.fail(`expected a spec, got errors:\n${r.errors.join('\n')}`);
  return r.spec;
}

function errorsOf(text: string): string[] {
  const r = parseServiceSpec(text);
  if (r.ok) assert.fail(`expected errors for:\n${text}`);
  return r.errors;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json | undefined };

/** A minimal valid spec as data; `edit` changes it (undefined drops a key) before it is written as JSON, which is YAML too. */
function minimal(edit: (s: { [k: string]: any }) => void = () => {}): string {
  const s: { [k: string]: any } = {
    name: 'svc',
    pods: { web: { count: 2, tasks: { server: { cmd: 'run', cpus: 0.5, memory: 64 } } } },
  };
  edit(s);
  return JSON.stringify(s);
}

const task = (over: Partial<TaskSpec> = {}): TaskSpec => ({
  name: 'server', goal: 'RUNNING', essential: true, cmd: 'run', cpus: 0.5, memoryMb: 64, env: {}, killGracePeriodS: 3,
  readinessCheck: undefined, healthCheck: undefined, ...over,
});
const pod = (over: Partial<PodSpec> = {}): PodSpec => ({
  type: 'web', count: 2, placement: { uniqueHostname: false, text: '' }, allowDecommission: false, tasks: [task()], ...over,
});
const service = (pods: PodSpec[], name = 'svc'): ServiceSpec => ({
  name, pods, plans: [{ name: 'deploy', strategy: 'serial', phases: pods.map((p) => ({ name: p.type, strategy: 'serial', pod: p.type, steps: undefined })) }],
});

// ---------------------------------------------------------------------------------------------
// Accepted forms and defaults

test('examples/hello.yml reads into the spec docs/plans.md walks through', () => {
  assert.deepEqual(parsed(HELLO_YML), {
    name: 'hello',
    pods: [{
      type: 'hello', count: 3, placement: { uniqueHostname: false, text: '' }, allowDecommission: false,
      tasks: [{
        name: 'server', goal: 'RUNNING', essential: true,
        cmd: 'echo "hello $HELLO_GREETING from $TASK_NAME"; sleep 1; touch ready; exec sleep 100000',
        cpus: 0.1, memoryMb: 32, env: { HELLO_GREETING: 'world' }, killGracePeriodS: 2,
        readinessCheck: { cmd: 'test -f ready', intervalS: 0.5, delayS: 0, timeoutS: 10 },
        healthCheck: undefined,
      }],
    }],
    plans: [{ name: 'deploy', strategy: 'serial', phases: [{ name: 'hello-deploy', strategy: 'serial-canary', pod: 'hello', steps: undefined }] }],
  });
});

test('defaults: every optional field filled in, and the default deploy plan', () => {
  assert.deepEqual(parsed(minimal()), service([pod()]));
  // The same spec as YAML, with `scheduler:` (ignored whatever it holds) and null optionals.
  const yaml = [
    'name: svc', 'scheduler: [anything, {goes: here}]',
    'pods:', '  web:', '    count: 2', '    placement:', '    tasks:', '      server:',
    '        cmd: run', '        cpus: 0.5', '        memory: 64', '        env:', '        readiness-check:', 'plans:',
  ].join('\n');
  assert.deepEqual(parsed(yaml), service([pod()]));
  // YAML's -0 is stored as 0 and must read back equal.
  assert.ok(Object.is(parsed(yaml.replace('count: 2', 'count: -0')).pods[0]?.count, 0));
  const checks = parsed(minimal((s) => {
    s.pods.web.tasks.server['readiness-check'] = { cmd: 'test -f ready' };
    s.pods.web.tasks.server['health-check'] = { cmd: 'curl -f localhost' };
  })).pods[0]?.tasks[0];
  assert.deepEqual(checks?.readinessCheck, { cmd: 'test -f ready', intervalS: 5, delayS: 0, timeoutS: 10 });
  assert.deepEqual(checks?.healthCheck, { cmd: 'curl -f localhost', intervalS: 5, delayS: 0, timeoutS: 10, gracePeriodS: 30, maxConsecutiveFailures: 3 });
});

test('every field given: mapped into the spec types', () => {
  const spec = parsed([
    'name: full-svc',
    'pods:',
    '  db:',
    '    count: 0',
    '    allow-decommission: true',
    '    placement: hostname:UNIQUE',
    '    tasks:',
    '      init: { goal: ONCE, essential: false, cmd: "setup", cpus: 1, memory: 128.5, kill-grace-period: 0 }',
    '      main:',
    '        goal: FINISH',
    '        cmd: |',
    '          line one',
    '          line two',
    '        cpus: 2',
    '        memory: 1024',
    '        health-check: { cmd: ok, interval: 1, delay: 2, timeout: 3, grace-period: 0, max-consecutive-failures: 1 }',
    '        readiness-check: { cmd: ready, interval: 0.25, delay: 1.5, timeout: 0.5 }',
  ].join('\n'));
  assert.deepEqual(spec.pods[0], {
    type: 'db', count: 0, placement: { uniqueHostname: true, text: 'hostname:UNIQUE' }, allowDecommission: true,
    tasks: [
      task({ name: 'init', goal: 'ONCE', essential: false, cmd: 'setup', cpus: 1, memoryMb: 128.5, killGracePeriodS: 0 }),
      task({
        name: 'main', goal: 'FINISH', cmd: 'line one\nline two\n', cpus: 2, memoryMb: 1024,
        healthCheck: { cmd: 'ok', intervalS: 1, delayS: 2, timeoutS: 3, gracePeriodS: 0, maxConsecutiveFailures: 1 },
        readinessCheck: { cmd: 'ready', intervalS: 0.25, delayS: 1.5, timeoutS: 0.5 },
      }),
    ],
  });
});

test('placement: the three spellings of hostname:UNIQUE, and three of "no rule"', () => {
  const cases: Array<[string, unknown, { uniqueHostname: boolean; text: string }]> = [
    ['Marathon text', 'hostname:UNIQUE', { uniqueHostname: true, text: 'hostname:UNIQUE' }],
    ['YAML list', [['hostname', 'UNIQUE']], { uniqueHostname: true, text: '[["hostname","UNIQUE"]]' }],
    ["the SDK's string", '[["hostname","UNIQUE"]]', { uniqueHostname: true, text: '[["hostname","UNIQUE"]]' }],
    ['string with spaces', ' [[ "hostname", "UNIQUE" ]] ', { uniqueHostname: true, text: '[[ "hostname", "UNIQUE" ]]' }],
    ['absent', undefined, { uniqueHostname: false, text: '' }],
    ["empty (an SDK template's unset variable)", '', { uniqueHostname: false, text: '' }],
    ['empty list', [], { uniqueHostname: false, text: '' }],
    ['empty list as a string', '[]', { uniqueHostname: false, text: '' }],
  ];
  for (const [name, placement, want] of cases) {
    assert.deepEqual(parsed(minimal((s) => { s.pods.web.placement = placement; })).pods[0]?.placement, want, name);
  }
});

test('env: names to strings, numbers and booleans as written, in YAML order', () => {
  const spec = parsed([
    'name: svc', 'pods:', '  web:', '    count: 1', '    tasks:', '      server:', '        cmd: run', '        cpus: 1', '        memory: 1',
    '        env:',
    '          VERSION: 1.10', '          MODE: 0755', '          BIG: 1e400', '          ON: true', '          YES_IS_A_STRING: yes',
    '          EMPTY: ""', '          _under: x', '          __proto__: plain', '          HEX: 0x1F',
  ].join('\n'));
  const env = spec.pods[0]?.tasks[0]?.env ?? {};
  assert.deepEqual(Object.entries(env), [
    ['VERSION', '1.10'], ['MODE', '0755'], ['BIG', '1e400'], ['ON', 'true'], ['YES_IS_A_STRING', 'yes'],
    ['EMPTY', ''], ['_under', 'x'], ['__proto__', 'plain'], ['HEX', '0x1F'],
  ]);
  assert.equal(Object.getPrototypeOf(env), Object.prototype, '__proto__ is an own key, not a prototype');
});

test('plans: in YAML order, strategies, custom steps keyed by decimal index; default deploy added first when missing', () => {
  const spec = parsed([
    'name: svc',
    'pods:',
    '  web: { count: 3, tasks: { first: { cmd: a, cpus: 1, memory: 1 }, second: { cmd: b, cpus: 1, memory: 1 } } }',
    '  db: { count: 1, tasks: { main: { cmd: c, cpus: 1, memory: 1 } } }',
    'plans:',
    '  backup:',
    '    strategy: parallel',
    '    phases:',
    '      dump: { pod: db, strategy: canary }',
    '      web-restart:',
    '        pod: web',
    '        strategy: parallel-canary',
    '        steps:',
    '          - default: [[first], [second]]',
    '          - 10: [[first, second]]',
    '          - 0: [[second], [first]]',
    '  update:',
    '    phases:',
    '      web: { pod: web, strategy: serial-canary }',
  ].join('\n'));
  assert.deepEqual(spec.plans, [
    { name: 'deploy', strategy: 'serial', phases: [
      { name: 'web', strategy: 'serial', pod: 'web', steps: undefined },
      { name: 'db', strategy: 'serial', pod: 'db', steps: undefined },
    ] },
    { name: 'backup', strategy: 'parallel', phases: [
      { name: 'dump', strategy: 'canary', pod: 'db', steps: undefined },
      { name: 'web-restart', strategy: 'parallel-canary', pod: 'web', steps: {
        byIndex: { 0: [['second'], ['first']], 10: [['first', 'second']] },
        default: [['first'], ['second']],
      } },
    ] },
    { name: 'update', strategy: 'serial', phases: [{ name: 'web', strategy: 'serial-canary', pod: 'web', steps: undefined }] },
  ]);
  assert.deepEqual(Object.keys(spec.plans[1]?.phases[1]?.steps?.byIndex ?? {}), ['0', '10']);
  // JSON writes index keys as strings; they mean the same.
  const fromJson = parsed(minimal((s) => {
    s.plans = { deploy: { phases: { p: { pod: 'web', steps: [{ '0': [['server']] }, { default: [['server']] }] } } } };
  }));
  assert.deepEqual(fromJson.plans, [{ name: 'deploy', strategy: 'serial', phases: [
    { name: 'p', strategy: 'serial', pod: 'web', steps: { byIndex: { 0: [['server']] }, default: [['server']] } },
  ] }]);
});

test('aliases: a few are fine (a shared env)', () => {
  const spec = parsed([
    'name: svc', 'pods:', '  web:', '    count: 1', '    tasks:',
    '      a: { cmd: a, cpus: 1, memory: 1, env: &common { LOG: debug } }',
    '      b: { cmd: b, cpus: 1, memory: 1, env: *common }',
  ].join('\n'));
  assert.deepEqual(spec.pods[0]?.tasks.map((t) => t.env), [{ LOG: 'debug' }, { LOG: 'debug' }]);
});

// ---------------------------------------------------------------------------------------------
// Errors, as the operator reads them

test('YAML-level refusals', () => {
  const bomb = ['a: &a [x, x, x, x, x, x, x, x, x]', 'b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]', 'c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]',
    'd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]', 'e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]', 'f: [*e, *e, *e, *e, *e, *e, *e, *e, *e]'].join('\n');
  const cases: Array<[string, string, string[]]> = [
    ['empty', '', ['the spec is empty: expected a mapping with name and pods']],
    ['only a comment', '# nothing\n', ['the spec is empty: expected a mapping with name and pods']],
    ['two documents', 'name: a\n---\nname: b\n', ['the spec must be one YAML document, got 2 (separated by ---)']],
    ['a list', '- name: a\n', ['the spec must be a mapping with name and pods, got a list']],
    ['a string', 'hello', ['the spec must be a mapping with name and pods, got "hello"']],
    ['null', '~', ['the spec must be a mapping with name and pods, got null']],
    ['duplicate key', 'name: a\nname: b\n', ['line 2, column 1: key "name" appears twice in one mapping']],
    ['duplicate key, once quoted', 'pods:\n  0: x\n  "0": y\n  0: z\n', ['line 3, column 3: key "0" appears twice in one mapping', 'line 4, column 3: key "0" appears twice in one mapping']],
    ['duplicate key in JSON', '{"name": "a", "pods": {"web": {"count": 1, "count": 2}}}', ['line 1, column 44: key "count" appears twice in one mapping']],
    ['tab indentation', 'pods:\n\tweb: 1\n', ['line 2, column 1: Tabs are not allowed as indentation']],
    ['unclosed flow', 'name: [a\n', ['line 2, column 1: Flow sequence in block collection must be sufficiently indented and end with a ]']],
    ['unknown tag', 'name: !secret a\n', ['line 1, column 7: Unresolved tag: !secret']],
    ['YAML 1.1', '%YAML 1.1\n---\nname: a\n', ['%YAML 1.1 is not accepted: the spec is read as YAML 1.2 (where yes and no are strings)']],
    ['a list as a key', '? [a]\n: b\n', ['line 1, column 3: With stringKeys, all keys must be strings']],
    ['alias without anchor', 'name: *nowhere\n', ['alias *nowhere names no anchor (&nowhere) before it']],
    ['alias bomb', bomb, [`the spec expands aliases more than ${MAX_ALIASES} times (a guard against alias bombs)`]],
    ['self-referencing alias', 'a: &a [*a]\n', ['the spec nests deeper than 32 levels']],
    ['too deep', `name: ${'['.repeat(40)}${']'.repeat(40)}\n`, ['the spec nests deeper than 32 levels']],
    ['too many values', `x: [${'1,'.repeat(100_001)}1]\n`, ['the spec has more than 100000 values (counting what aliases repeat)']],
    ['too deep for the parser', `x: ${'- '.repeat(50_000)}`, ["line 1 nests more than 100 levels deep (counting indentation, '- ' and brackets)"]],
    ['too deep across lines', `x:\n${'{\n'.repeat(101)}`, ["line 101 nests more than 100 levels deep (counting indentation, '- ' and brackets)"]],
    ['too long', `name: ${'a'.repeat(MAX_SPEC_CHARS)}`, [`the spec is ${MAX_SPEC_CHARS + 6} characters long; at most ${MAX_SPEC_CHARS} are accepted`]],
  ];
  for (const [name, text, want] of cases) assert.deepEqual(errorsOf(text), want, name);
});

test('service-level errors', () => {
  const cases: Array<[string, string, string[]]> = [
    ['nothing required', '{}', ['name is required', 'pods is required']],
    ['bad name', minimal((s) => { s.name = 'My_Service'; }), [`name must be lowercase letters, digits and '-' (not first or last), at most 63 characters, got "My_Service"`]],
    ['name ends in -', minimal((s) => { s.name = 'svc-'; }), [`name must be lowercase letters, digits and '-' (not first or last), at most 63 characters, got "svc-"`]],
    ['name too long', minimal((s) => { s.name = 'a'.repeat(64); }), [`name must be lowercase letters, digits and '-' (not first or last), at most 63 characters, got "${'a'.repeat(60)}…"`]],
    ['name a number', minimal((s) => { s.name = 5; }), [`name must be lowercase letters, digits and '-' (not first or last), at most 63 characters, got 5`]],
    ['unknown key with a guess', minimal((s) => { s.plan = {}; }), ['plan is not a known key; did you mean plans?']],
    ['unknown key', minimal((s) => { s.services = {}; }), ['services is not a known key (expected name, scheduler, pods, plans)']],
    ['SDK key', minimal((s) => { s['web-url'] = 'http://x'; }), ['web-url is not supported by Drydock']],
    ['pods not a mapping', minimal((s) => { s.pods = [{ web: {} }]; }), ['pods must be a mapping, got a list']],
    ['no pods', minimal((s) => { s.pods = {}; }), ['pods must have at least one pod type']],
    ['odd key quoted in the path', minimal((s) => { s['Hello World'] = 1; }), ['"Hello World" is not a known key (expected name, scheduler, pods, plans)']],
    ['__proto__ key', '{"name": "svc", "__proto__": {"pods": 1}}', ['__proto__ is not a known key (expected name, scheduler, pods, plans)', 'pods is required']],
  ];
  for (const [name, text, want] of cases) assert.deepEqual(errorsOf(text), want, name);
});

test('pod-level errors', () => {
  const POD_NAME = "is not a valid pod type name: lowercase letters and digits in parts joined by '-', each part starting with a letter, at most 63 characters";
  const rename = (to: string) => minimal((s) => { s.pods = { [to]: s.pods.web }; });
  const cases: Array<[string, string, string[]]> = [
    ['ends in -<digits>: hello-1-0 would be ambiguous', rename('hello-1'), [`pods.hello-1 ${POD_NAME}`]],
    ['a digit part inside', rename('a-0-b'), [`pods.a-0-b ${POD_NAME}`]],
    ['uppercase', rename('Web'), [`pods.Web ${POD_NAME}`]],
    ['starts with a digit', rename('2web'), [`pods.2web ${POD_NAME}`]],
    ['empty', rename(''), [`pods."" ${POD_NAME}`]],
    ['pod not a mapping', minimal((s) => { s.pods.web = 3; }), ['pods.web must be a mapping, got 3']],
    ['count missing', minimal((s) => { delete s.pods.web.count; }), ['pods.web.count is required']],
    ['count negative', minimal((s) => { s.pods.web.count = -1; }), ['pods.web.count must be an integer from 0 to 10000, got -1']],
    ['count fractional', minimal((s) => { s.pods.web.count = 1.5; }), ['pods.web.count must be an integer from 0 to 10000, got 1.5']],
    ['count huge', minimal((s) => { s.pods.web.count = 1e300; }), ['pods.web.count must be an integer from 0 to 10000, got 1e+300']],
    ['count a string', minimal((s) => { s.pods.web.count = '3'; }), ['pods.web.count must be an integer from 0 to 10000, got "3"']],
    ['allow-decommission a string', minimal((s) => { s.pods.web['allow-decommission'] = 'yes'; }), ['pods.web.allow-decommission must be true or false, got "yes"']],
    ['tasks missing', minimal((s) => { delete s.pods.web.tasks; }), ['pods.web.tasks is required']],
    ['tasks empty', minimal((s) => { s.pods.web.tasks = {}; }), ['pods.web.tasks must have at least one task']],
    ['tasks a list', minimal((s) => { s.pods.web.tasks = [s.pods.web.tasks.server]; }), ['pods.web.tasks must be a mapping, got a list']],
    ['typo', minimal((s) => { s.pods.web.cuont = 1; }), ['pods.web.cuont is not a known key; did you mean count?']],
    ['SDK pod keys', minimal((s) => { s.pods.web['resource-sets'] = {}; s.pods.web.uris = []; s.pods.web.rlimits = {}; }), [
      'pods.web.resource-sets is not supported by Drydock', 'pods.web.uris is not supported by Drydock', 'pods.web.rlimits is not supported by Drydock',
    ]],
    ['placement operator', minimal((s) => { s.pods.web.placement = 'hostname:GROUP_BY:2'; }), ['pods.web.placement: unsupported placement rule "hostname:GROUP_BY:2" (Drydock supports hostname:UNIQUE)']],
    ['placement list', minimal((s) => { s.pods.web.placement = [['zone', 'GROUP_BY']]; }), ['pods.web.placement: unsupported placement rule [["zone","GROUP_BY"]] (Drydock supports hostname:UNIQUE)']],
    ['placement two rules', minimal((s) => { s.pods.web.placement = '[["hostname","UNIQUE"],["zone","GROUP_BY"]]'; }), ['pods.web.placement: unsupported placement rule "[[\\"hostname\\",\\"UNIQUE\\"],[\\"zone\\",\\"GROUP_BY\\"]]" (Drydock supports hostname:UNIQUE)']],
    ['placement lowercase', minimal((s) => { s.pods.web.placement = 'hostname:unique'; }), ['pods.web.placement: unsupported placement rule "hostname:unique" (Drydock supports hostname:UNIQUE)']],
    ['placement bad JSON', minimal((s) => { s.pods.web.placement = '[["hostname",'; }), ['pods.web.placement: unsupported placement rule "[[\\"hostname\\"," (Drydock supports hostname:UNIQUE)']],
    ['placement a mapping', minimal((s) => { s.pods.web.placement = { hostname: 'UNIQUE' }; }), ['pods.web.placement: unsupported placement rule {"hostname":"UNIQUE"} (Drydock supports hostname:UNIQUE)']],
    ['placement a number', minimal((s) => { s.pods.web.placement = 1; }), ['pods.web.placement: unsupported placement rule 1 (Drydock supports hostname:UNIQUE)']],
  ];
  for (const [name, text, want] of cases) assert.deepEqual(errorsOf(text), want, name);
});

test('task-level errors', () => {
  const T = 'pods.web.tasks.server';
  const edit = (f: (t: { [k: string]: any }) => void) => minimal((s) => f(s.pods.web.tasks.server));
  const cases: Array<[string, string, string[]]> = [
    ['bad task name', minimal((s) => { s.pods.web.tasks = { 'node-1': s.pods.web.tasks.server }; }),
      ["pods.web.tasks.node-1 is not a valid task name: lowercase letters and digits in parts joined by '-', each part starting with a letter, at most 63 characters"]],
    ['required fields', minimal((s) => { s.pods.web.tasks.server = { goal: 'FINISH' }; }), [`${T}.cmd is required`, `${T}.cpus is required`, `${T}.memory is required`]],
    ['cpu typo', edit((t) => { t.cpu = t.cpus; delete t.cpus; }), [`${T}.cpu is not a known key; did you mean cpus?`, `${T}.cpus is required`]],
    ['mem typo', edit((t) => { t.mem = 1; }), [`${T}.mem is not a known key (expected goal, essential, cmd, cpus, memory, env, kill-grace-period, readiness-check, health-check)`]],
    ['SDK task keys', edit((t) => { t.ports = {}; t.volume = {}; t['resource-set'] = 'x'; t.configs = {}; t.secrets = {}; t.gpus = 1; }), [
      `${T}.ports is not supported by Drydock`, `${T}.volume is not supported by Drydock`, `${T}.resource-set is not supported by Drydock`,
      `${T}.configs is not supported by Drydock`, `${T}.secrets is not supported by Drydock`, `${T}.gpus is not supported by Drydock`,
    ]],
    ['goal', edit((t) => { t.goal = 'running'; }), [`${T}.goal must be one of RUNNING, FINISH, ONCE, got "running"`]],
    ['essential', edit((t) => { t.essential = 1; }), [`${T}.essential must be true or false, got 1`]],
    ['cmd empty', edit((t) => { t.cmd = '  '; }), [`${T}.cmd must be a non-empty string, got "  "`]],
    ['cmd a list', edit((t) => { t.cmd = ['sh', '-c', 'x']; }), [`${T}.cmd must be a non-empty string, got a list`]],
    ['cmd with NUL', edit((t) => { t.cmd = 'a\u0000b'; }), [`${T}.cmd must not contain a NUL character`]],
    ['cpus a string', edit((t) => { t.cpus = 'x'; }), [`${T}.cpus must be a positive number, got "x"`]],
    ['cpus zero', edit((t) => { t.cpus = 0; }), [`${T}.cpus must be a positive number, got 0`]],
    ['cpus null', edit((t) => { t.cpus = null; }), [`${T}.cpus is required`]],
    ['memory negative', edit((t) => { t.memory = -64; }), [`${T}.memory must be a positive number, got -64`]],
    ['kill-grace-period negative', edit((t) => { t['kill-grace-period'] = -1; }), [`${T}.kill-grace-period must be a number of seconds from 0 to 31536000, got -1`]],
    ['kill-grace-period huge', edit((t) => { t['kill-grace-period'] = 1e20; }), [`${T}.kill-grace-period must be a number of seconds from 0 to 31536000, got 100000000000000000000`]],
    ['env a list', edit((t) => { t.env = ['A=b']; }), [`${T}.env must be a mapping, got a list`]],
    ['env name', edit((t) => { t.env = { 'A-B': 'x', '1A': 'y' }; }), [
      `${T}.env.A-B is not a valid environment variable name: letters, digits and '_', not starting with a digit`,
      `${T}.env.1A is not a valid environment variable name: letters, digits and '_', not starting with a digit`,
    ]],
    ['env value a mapping', edit((t) => { t.env = { A: { b: 1 } }; }), [`${T}.env.A must be a string, number or boolean, got a mapping`]],
    ['env value null', edit((t) => { t.env = { A: null }; }), [`${T}.env.A must be a string, number or boolean, got null`]],
    ['env value with NUL', edit((t) => { t.env = { A: '\u0000' }; }), [`${T}.env.A must not contain a NUL character`]],
    ['readiness-check a string', edit((t) => { t['readiness-check'] = 'test -f ready'; }), [`${T}.readiness-check must be a mapping, got "test -f ready"`]],
    ['readiness-check fields', edit((t) => { t['readiness-check'] = { interval: 0, delay: -1, timeout: 'soon', 'grace-period': 1 }; }), [
      `${T}.readiness-check.grace-period is not a known key (expected cmd, interval, delay, timeout)`,
      `${T}.readiness-check.cmd is required`,
      `${T}.readiness-check.interval must be a positive number of seconds, at most 31536000, got 0`,
      `${T}.readiness-check.delay must be a number of seconds from 0 to 31536000, got -1`,
      `${T}.readiness-check.timeout must be a positive number of seconds, at most 31536000, got "soon"`,
    ]],
    ['health-check fields', edit((t) => { t['health-check'] = { cmd: 'ok', 'grace-period': -1, 'max-consecutive-failures': 0, intervl: 1 }; }), [
      `${T}.health-check.intervl is not a known key; did you mean interval?`,
      `${T}.health-check.grace-period must be a number of seconds from 0 to 31536000, got -1`,
      `${T}.health-check.max-consecutive-failures must be an integer from 1 to 1000000, got 0`,
    ]],
  ];
  for (const [name, text, want] of cases) assert.deepEqual(errorsOf(text), want, name);
  assert.deepEqual(errorsOf(minimal((s) => { s.pods.web.tasks.server = 'run'; })), [`${T} must be a mapping, got "run"`]);
});

test('plan-level errors', () => {
  const P = 'plans.deploy';
  const plan = (p: Json) => minimal((s) => { s.plans = { deploy: p }; });
  const steps = (st: Json) => plan({ phases: { p: { pod: 'web', steps: st } } });
  const cases: Array<[string, string, string[]]> = [
    ['plans a list', minimal((s) => { s.plans = [{ deploy: {} }]; }), ['plans must be a mapping, got a list']],
    ['plan name', minimal((s) => { s.plans = { Deploy: { phases: { p: { pod: 'web' } } } }; }), ["plans.Deploy is not a valid plan name: a lowercase letter, then lowercase letters, digits or '-', at most 63 characters"]],
    ['reserved plan name', minimal((s) => { s.plans = { recovery: { phases: { p: { pod: 'web' } } } }; }), ["plans.recovery is the name of a plan the scheduler builds itself; choose another name"]],
    ['plan not a mapping', plan('serial'), [`${P} must be a mapping, got "serial"`]],
    ['phases missing', plan({ strategy: 'serial' }), [`${P}.phases is required`]],
    ['phases empty', plan({ phases: {} }), [`${P}.phases must have at least one phase`]],
    ['phases a list', plan({ phases: [{ pod: 'web' }] }), [`${P}.phases must be a mapping, got a list`]],
    ['canary plan', plan({ strategy: 'serial-canary', phases: { p: { pod: 'web' } } }), [`${P}.strategy must be one of serial, parallel, got "serial-canary" (canary strategies go on phases)`]],
    ['plan typo', plan({ stratgy: 'serial', phases: { p: { pod: 'web' } } }), [`${P}.stratgy is not a known key; did you mean strategy?`]],
    ['phase name', plan({ phases: { '1st': { pod: 'web' } } }), [`${P}.phases.1st is not a valid phase name: a lowercase letter, then lowercase letters, digits or '-', at most 63 characters`]],
    ['phase strategy', plan({ phases: { p: { pod: 'web', strategy: 'dependency' } } }), [`${P}.phases.p.strategy must be one of serial, parallel, serial-canary, canary, parallel-canary, got "dependency"`]],
    ['phase pod missing', plan({ phases: { p: {} } }), [`${P}.phases.p.pod is required`]],
    ['phase pod unknown', plan({ phases: { p: { pod: 'db' } } }), [`${P}.phases.p.pod must be a pod type under pods (web), got "db"`]],
    ['phase unknown key', plan({ phases: { p: { pod: 'web', tasks: [] } } }), [`${P}.phases.p.tasks is not a known key (expected strategy, pod, steps)`]],
    ['steps a mapping', steps({ default: [['server']] }), [`${P}.phases.p.steps must be a non-empty list of mappings such as - default: [[first], [second]], got a mapping`]],
    ['steps empty', steps([]), [`${P}.phases.p.steps must be a non-empty list of mappings such as - default: [[first], [second]], got a list`]],
    ['step two keys', steps([{ default: [['server']], 0: [['server']] }]), [`${P}.phases.p.steps[0] must be a mapping with one key (default or an instance index), got 2 keys`]],
    ['step a list', steps([[['server']]]), [`${P}.phases.p.steps[0] must be a mapping with one key (default or an instance index), got a list`]],
    ['step key', steps([{ first: [['server']] }]), [`${P}.phases.p.steps[0] key must be default or an instance index from 0 to 9999, got "first"`]],
    ['step key negative', steps([{ '-1': [['server']] }]), [`${P}.phases.p.steps[0] key must be default or an instance index from 0 to 9999, got "-1"`]],
    ['step key too big', steps([{ 10000: [['server']] }]), [`${P}.phases.p.steps[0] key must be default or an instance index from 0 to 9999, got "10000"`]],
    ['step repeated', steps([{ 0: [['server']] }, { default: [['server']] }, { 0: [['server']] }]), [`${P}.phases.p.steps[2] repeats index 0`]],
    ['step groups flat', steps([{ default: ['server'] }]), [`${P}.phases.p.steps[0].default[0] must be a non-empty list of task names, got "server"`]],
    ['step groups empty', steps([{ default: [] }]), [`${P}.phases.p.steps[0].default must be a non-empty list of task lists such as [[first], [second]], got a list`]],
    ['step group empty', steps([{ default: [[]] }]), [`${P}.phases.p.steps[0].default[0] must be a non-empty list of task names, got a list`]],
    ['step unknown task', steps([{ 0: [['server', 'client']] }]), [`${P}.phases.p.steps[0].0[0][1] must be a task of pod web (server), got "client"`]],
    ['step task twice', steps([{ 0: [['server'], ['server']] }]), [`${P}.phases.p.steps[0].0[1][0] lists task server a second time`]],
  ];
  for (const [name, text, want] of cases) assert.deepEqual(errorsOf(text), want, name);
});

test('errors are all collected, up to a cap', () => {
  const many = minimal((s) => { for (let i = 0; i < 80; i++) s[`extra${i}`] = i; });
  const errors = errorsOf(many);
  assert.equal(errors.length, MAX_ERRORS + 1);
  assert.equal(errors[0], 'extra0 is not a known key (expected name, scheduler, pods, plans)');
  assert.equal(errors[MAX_ERRORS], '... and 30 more errors');
  // One bad field in each of two pods: both reported, and a phase naming a badly written pod is not blamed again.
  assert.deepEqual(errorsOf(minimal((s) => {
    s.pods.db = { count: 'x', tasks: { main: { cmd: 'c', cpus: -1, memory: 1 } } };
    s.pods.web.tasks.server.memory = 0;
    s.plans = { deploy: { phases: { d: { pod: 'db', steps: [{ default: [['main']] }] } } } };
  })), [
    'pods.web.tasks.server.memory must be a positive number, got 0',
    'pods.db.count must be an integer from 0 to 10000, got "x"',
    'pods.db.tasks.main.cpus must be a positive number, got -1',
  ]);
});

// ---------------------------------------------------------------------------------------------
// Updates and relaunches

test('validateUpdate: what a new configuration may not change', () => {
  const web = pod();
  const cases: Array<[string, ServiceSpec, ServiceSpec, string[]]> = [
    ['same', service([web]), service([web]), []],
    ['name', service([web]), service([web], 'other'), ['name cannot change (from "svc" to "other"): it identifies the service and its state']],
    ['count grows', service([web]), service([pod({ count: 5 })]), []],
    ['count shrinks', service([web]), service([pod({ count: 1 })]), ['pods.web.count cannot shrink from 2 to 1 unless pods.web.allow-decommission is true']],
    ['count shrinks, allowed by the new spec', service([web]), service([pod({ count: 0, allowDecommission: true })]), []],
    ['count shrinks, allowed only by the old spec', service([pod({ allowDecommission: true })]), service([pod({ count: 1 })]), ['pods.web.count cannot shrink from 2 to 1 unless pods.web.allow-decommission is true']],
    ['pod removed', service([web, pod({ type: 'db' })]), service([web]), ['pods.db cannot be removed: its 2 instances may only be decommissioned when the current configuration has allow-decommission: true']],
    ['pod removed, allowed by the old spec', service([web, pod({ type: 'db', allowDecommission: true })]), service([web]), []],
    ['pod removed with count 0', service([web, pod({ type: 'db', count: 0 })]), service([web]), []],
    ['pod added', service([web]), service([web, pod({ type: 'db' })]), []],
    ['goal changes', service([web]), service([pod({ tasks: [task({ goal: 'ONCE' })] })]), ['pods.web.tasks.server.goal cannot change from RUNNING to ONCE; give the task a new name instead']],
    ['task renamed with a new goal', service([web]), service([pod({ tasks: [task({ name: 'once', goal: 'ONCE' })] })]), []],
    ['everything that only relaunches', service([web]), service([pod({ placement: { uniqueHostname: true, text: 'hostname:UNIQUE' }, tasks: [task({ cmd: 'new', cpus: 2, env: { A: 'b' } })] })]), []],
    ['several at once', service([web, pod({ type: 'db' })]), service([pod({ count: 1 })], 'x'), [
      'name cannot change (from "svc" to "x"): it identifies the service and its state',
      'pods.web.count cannot shrink from 2 to 1 unless pods.web.allow-decommission is true',
      'pods.db cannot be removed: its 2 instances may only be decommissioned when the current configuration has allow-decommission: true',
    ]],
  ];
  for (const [name, previous, next, want] of cases) assert.deepEqual(validateUpdate(previous, next), want, name);
});

test('taskNeedsRelaunch / podNeedsRelaunch: what reaches the process', () => {
  const base = task({ env: { A: '1', B: '2' }, readinessCheck: { cmd: 'r', intervalS: 5, delayS: 0, timeoutS: 10 } });
  const taskCases: Array<[string, Partial<TaskSpec>, boolean]> = [
    ['nothing', {}, false],
    ['env order', { env: { B: '2', A: '1' } }, false],
    ['cmd', { cmd: 'other' }, true],
    ['cpus', { cpus: 0.6 }, true],
    ['memory', { memoryMb: 65 }, true],
    ['env value', { env: { A: '1', B: '3' } }, true],
    ['env added', { env: { A: '1', B: '2', C: '' } }, true],
    ['kill grace', { killGracePeriodS: 4 }, true],
    ['readiness removed', { readinessCheck: undefined }, true],
    ['readiness interval', { readinessCheck: { cmd: 'r', intervalS: 1, delayS: 0, timeoutS: 10 } }, true],
    ['health added', { healthCheck: { cmd: 'h', intervalS: 5, delayS: 0, timeoutS: 10, gracePeriodS: 30, maxConsecutiveFailures: 3 } }, true],
    ['goal', { goal: 'FINISH' }, true],
    ['essential', { essential: false }, true],
  ];
  for (const [name, over, want] of taskCases) assert.equal(taskNeedsRelaunch(base, { ...base, ...over }), want, name);

  const two = pod({ tasks: [task({ name: 'a' }), task({ name: 'b' })] });
  const podCases: Array<[string, PodSpec, boolean]> = [
    ['same', two, false],
    ['count, placement, allow-decommission', { ...two, count: 9, placement: { uniqueHostname: true, text: 'hostname:UNIQUE' }, allowDecommission: true }, false],
    ['task order', { ...two, tasks: [task({ name: 'b' }), task({ name: 'a' })] }, false],
    ['a task added', { ...two, tasks: [...two.tasks, task({ name: 'c' })] }, true],
    ['a task removed', { ...two, tasks: [task({ name: 'a' })] }, true],
    ['a task renamed', { ...two, tasks: [task({ name: 'a' }), task({ name: 'c' })] }, true],
    ['a task changed', { ...two, tasks: [task({ name: 'a' }), task({ name: 'b', cmd: 'x' })] }, true],
  ];
  for (const [name, next, want] of podCases) assert.equal(podNeedsRelaunch(two, next), want, name);
});

// ---------------------------------------------------------------------------------------------
// Stored JSON

test('specJson is canonical and round-trips through specFromJson', () => {
  const hello = parsed(HELLO_YML);
  const text = specJson(hello);
  assert.equal(text, specJson(parsed(HELLO_YML)));
  assert.deepEqual(specFromJson(text), { ok: true, spec: hello });
  // Key order follows spec-types.ts, not the order objects were built in.
  const reordered: ServiceSpec = JSON.parse(JSON.stringify({ plans: hello.plans, pods: hello.pods, name: hello.name }));
  assert.equal(specJson(reordered), text);
  assert.ok(specEquals(hello, reordered));
  assert.ok(!specEquals(hello, { ...hello, name: 'other' }));
  assert.ok(text.startsWith('{"name":"hello","pods":[{"type":"hello","count":3,'), text);
  assert.match(text, /"healthCheck":null/);

  const full = parsed([
    'name: svc', 'pods:', '  web:', '    count: 2', '    placement: hostname:UNIQUE', '    tasks:',
    '      a: { cmd: a, cpus: 1, memory: 1, env: { __proto__: x, Z: 1, A: 2 }, health-check: { cmd: h } }',
    '      b: { cmd: b, cpus: 1, memory: 1, goal: ONCE }',
    'plans:', '  deploy:', '    phases:', '      p:', '        pod: web', '        steps:', '          - 10: [[a]]', '          - 2: [[b], [a]]',
  ].join('\n'));
  const back = specFromJson(specJson(full));
  assert.deepEqual(back, { ok: true, spec: full });
  if (back.ok) assert.deepEqual(Object.keys(back.spec.pods[0]?.tasks[0]?.env ?? {}), ['__proto__', 'Z', 'A']);
});

test('specFromJson refuses a damaged row with the first bad field', () => {
  const good = JSON.parse(specJson(parsed(HELLO_YML)));
  const damage = (f: (s: any) => void): string => {
    const s = structuredClone(good);
    f(s);
    return JSON.stringify(s);
  };
  const cases: Array<[string, string, string]> = [
    ['not JSON', '{"name":', 'stored spec is not JSON: '],
    ['not an object', '[]', 'stored spec: spec must be an object, got a list'],
    ['name', damage((s) => { s.name = 'Bad Name'; }), 'stored spec: name must be a valid name, got "Bad Name"'],
    ['pods missing', damage((s) => { delete s.pods; }), 'stored spec: pods must be a list, got undefined'],
    ['no pods', damage((s) => { s.pods = []; }), 'stored spec: pods must be a non-empty list, got a list'],
    ['cpus', damage((s) => { s.pods[0].tasks[0].cpus = 'x'; }), 'stored spec: pods[0].tasks[0].cpus must be a positive number, got "x"'],
    ['goal', damage((s) => { s.pods[0].tasks[0].goal = 'SOMETIMES'; }), 'stored spec: pods[0].tasks[0].goal must be one of RUNNING, FINISH, ONCE, got "SOMETIMES"'],
    ['env value', damage((s) => { s.pods[0].tasks[0].env.X = 1; }), 'stored spec: pods[0].tasks[0].env.X must be a string, got 1'],
    ['check', damage((s) => { s.pods[0].tasks[0].readinessCheck.timeoutS = -1; }), 'stored spec: pods[0].tasks[0].readinessCheck.timeoutS must be a positive number, got -1'],
    ['placement', damage((s) => { delete s.pods[0].placement; }), 'stored spec: pods[0].placement must be an object, got undefined'],
    ['plan strategy', damage((s) => { s.plans[0].strategy = 'canary'; }), 'stored spec: plans[0].strategy must be one of serial, parallel, got "canary"'],
    ['phase pod', damage((s) => { s.plans[0].phases[0].pod = 'gone'; }), 'stored spec: plans[0].phases[0].pod must be a pod type of the spec, got "gone"'],
    ['step task', damage((s) => { s.plans[0].phases[0].steps = { byIndex: { 0: [['nope']] }, default: null }; }), 'stored spec: plans[0].phases[0].steps.byIndex.0[0][0] must be a task of pod hello, got "nope"'],
    ['step index', damage((s) => { s.plans[0].phases[0].steps = { byIndex: { x: [['server']] }, default: null }; }), 'stored spec: plans[0].phases[0].steps.byIndex must be keyed by instance indexes, got "x"'],
    ['pod twice', damage((s) => { s.pods.push(s.pods[0]); }), 'stored spec: pods has the pod type "hello" twice'],
    ['cmd missing', damage((s) => { delete s.pods[0].tasks[0].cmd; }), 'stored spec: pods[0].tasks[0].cmd must be a string, got undefined'],
  ];
  for (const [name, text, want] of cases) {
    const r = specFromJson(text);
    assert.equal(r.ok, false, name);
    if (!r.ok) assert.ok(r.error.startsWith(want), `${name}: ${r.error}`);
  }
});

// ---------------------------------------------------------------------------------------------
// Fuzz: refuse anything, never throw

const rng = mulberry32;

const SEED = Number(process.env['SPEC_FUZZ_SEED'] ?? 0x5bec);
const HOSTILE_KEYS = ['__proto__', 'constructor', 'prototype', 'toString', 'name', 'pods', 'plans', 'count', 'tasks', 'cmd', 'cpus', 'env', 'steps', 'default', '0', '', 'hello', 'server', 'deploy', 'phases', 'pod', 'placement', 'goal', '-1'];
const HOSTILE_SCALARS: Json[] = [
  0, -0, -1, 1.5, 1e308, -1e308, 5e-324, 2 ** 53 + 1, 10_000, 10_001, '', ' ', 'x', 'RUNNING', 'ONCE', 'serial-canary', 'hostname:UNIQUE',
  '[["hostname","UNIQUE"]]', '[[[[', '\u0000', '\ud800', 'a'.repeat(5000), true, false, null, '*alias', '&anchor', '!!binary', '%YAML 1.1', '---',
];

function randomValue(next: () => number, depth: number): Json {
  const r = next();
  if (depth > 6 || r < 0.45) return HOSTILE_SCALARS[Math.floor(next() * HOSTILE_SCALARS.length)] ?? null;
  if (r < 0.7) return Array.from({ length: Math.floor(next() * 4) }, () => randomValue(next, depth + 1));
  const o: { [k: string]: Json } = {};
  for (let i = Math.floor(next() * 4); i > 0; i--) {
    // defineProperty: a plain assignment of __proto__ would set the prototype instead of a key.
    Object.defineProperty(o, HOSTILE_KEYS[Math.floor(next() * HOSTILE_KEYS.length)] ?? 'k', { value: randomValue(next, depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return o;
}

/** Replaces one value somewhere in a valid spec with a random one. */
function graft(next: () => number, spec: Json): Json {
  if (spec === null || typeof spec !== 'object' || next() < 0.25) return randomValue(next, 0);
  const keys = Object.keys(spec);
  if (keys.length === 0) return randomValue(next, 0);
  const k = keys[Math.floor(next() * keys.length)] ?? '';
  const copy: any = Array.isArray(spec) ? [...spec] : { ...spec };
  copy[k] = graft(next, (spec as any)[k]);
  return copy;
}

function mutateText(next: () => number, text: string): string {
  let s = text;
  for (let n = 1 + Math.floor(next() * 4); n > 0; n--) {
    const at = Math.floor(next() * (s.length + 1));
    const op = next();
    const junk = ['\t', ' ', '\n', ':', '- ', '[', ']', '{', '}', '&a ', '*a', '!!', '"', "'", '#', '---\n', '? ', '|', '>', '\\', '%', '@', '`', ',', '0', 'e9'][Math.floor(next() * 26)] ?? '';
    if (op < 0.4) s = s.slice(0, at) + junk + s.slice(at);
    else if (op < 0.7) s = s.slice(0, at) + s.slice(at + 1 + Math.floor(next() * 8));
    else {
      const lines = s.split('\n');
      const i = Math.floor(next() * lines.length);
      const j = Math.floor(next() * lines.length);
      [lines[i], lines[j]] = [lines[j] ?? '', lines[i] ?? ''];
      s = lines.join('\n');
    }
  }
  return s;
}

test(`fuzz: parseServiceSpec and specFromJson never throw (seed ${SEED}; rerun with SPEC_FUZZ_SEED)`, () => {
  const next = rng(SEED);
  const base = JSON.parse(minimal((s) => {
    s.pods.web.placement = 'hostname:UNIQUE';
    s.pods.web.tasks.server['readiness-check'] = { cmd: 'r' };
    s.pods.web.tasks.server['health-check'] = { cmd: 'h' };
    s.pods.web.tasks.server.env = { A: 1 };
    s.plans = { deploy: { phases: { p: { pod: 'web', strategy: 'canary', steps: [{ default: [['server']] }] } } } };
  })) as Json;
  let accepted = 0;
  for (let i = 0; i < 1500; i++) {
    const kind = i % 5;
    const text =
      kind === 0 ? mutateText(next, HELLO_YML) :
      kind === 1 ? JSON.stringify(graft(next, base)) :
      kind === 2 ? stringify(graft(next, base)) :
      kind === 3 ? Array.from({ length: Math.floor(next() * 200) }, () => String.fromCharCode(Math.floor(next() * 128))).join('') :
      JSON.stringify(randomValue(next, 0));
    let r;
    try {
      r = parseServiceSpec(text);
    } catch (e) {
      assert.fail(`case ${i} threw ${String(e)} on:\n${text.slice(0, 500)}`);
    }
    if (r.ok) {
      accepted++;
      // Anything accepted stores and reads back as itself, and is a valid update of itself.
      assert.deepEqual(specFromJson(specJson(r.spec)), { ok: true, spec: r.spec }, `case ${i}`);
      assert.deepEqual(validateUpdate(r.spec, r.spec), [], `case ${i}`);
      for (const p of r.spec.pods) assert.equal(podNeedsRelaunch(p, p), false, `case ${i}`);
    } else {
      assert.ok(r.errors.length >= 1 && r.errors.length <= MAX_ERRORS + 1, `case ${i}: ${r.errors.length} errors`);
      for (const e of r.errors) assert.ok(typeof e === 'string' && e.length > 0 && e.length < 600, `case ${i}: ${e.slice(0, 700)}`);
    }
    // A damaged store row: cut or garbled JSON, or a valid one with a field replaced.
    const stored = r.ok ? specJson(r.spec) : specJson(parsed(HELLO_YML));
    const damaged = next() < 0.5 ? mutateText(next, stored) : JSON.stringify(graft(next, JSON.parse(stored) as Json));
    try {
      const back = specFromJson(damaged);
      if (!back.ok) assert.ok(back.error.length > 0 && back.error.length < 600, back.error);
    } catch (e) {
      assert.fail(`case ${i}: specFromJson threw ${String(e)} on:\n${damaged.slice(0, 500)}`);
    }
  }
  assert.ok(accepted > 20, `some cases stay valid (${accepted})`);
});

test('hostile inputs never throw', () => {
  const hostile: unknown[] = [
    undefined, null, 42, {}, '\u0000', '\ufeffname: a', '{'.repeat(50_000), '- '.repeat(50_000), `${'a:\n'.repeat(1)}${'  '.repeat(5000)}b: 1`,
    'a: &a [*a, *a]\nb: *a\n', '&a a: *a\n', `${'x: 1\n'.repeat(100_000)}`, '%TAG ! tag:example.com,2000:\n--- !foo\nname: a\n',
    'name: !!int x\n', 'name: !!float 1e999\n', 'pods: !!map []\n', '<<: {name: a}\n', '? a\n? b\n', '"\\u0000": 1\n', `name: "${'\\'.repeat(1001)}"`,
  ];
  for (const input of hostile) {
    const r = parseServiceSpec(input as string);
    assert.equal(r.ok, false, String(input).slice(0, 40));
    if (!r.ok) assert.ok(r.errors.length > 0);
  }
  for (const input of [undefined, null, '', 'null', '1', '"x"', '{"__proto__": {"name": "a"}}', '[', '{"name":"a","pods":[{"tasks":[{}]}],"plans":[]}']) {
    const r = specFromJson(input as string);
    assert.equal(r.ok, false, String(input));
  }
});

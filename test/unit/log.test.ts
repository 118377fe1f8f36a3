/**
 * The log line (shared/log.ts), table-driven: the JSON head (time, level, msg, daemon, component)
 * and its order, ids next under one spelling, child bindings, errors with their stack, bigints,
 * what JSON cannot hold; the text format (padding, quoting, nested values, stack frames, colour
 * only when asked); --log_format on the three daemons; and the daemons' log calls themselves
 * (constant messages, camelCase ids).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatText, LOG_FORMATS, Logger, useColor, type LogFields, type LoggerOptions } from '../../shared/log.js';
import { resolveMasterConfig } from '../../master/process/config.js';
import { resolveAgentFlags } from '../../agent/config.js';
import { resolveSchedulerConfig } from '../../scheduler/config.js';
import { ROOT } from '../helpers/daemons.js';

const T0 = Date.UTC(2026, 10, 23, 10, 0, 0, 123);
const TIME = '2026-11-23T10:00:00.123Z';

/** A logger that collects its lines, at a fixed time. */
function collect(o: LoggerOptions = {}): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  return { log: new Logger({ now: () => T0, ...o, sink: (l) => lines.push(l) }), lines };
}

test('JSON lines: the head in order, then ids in their order, then the rest', () => {
  const cases: Array<{ name: string; make: (l: Logger) => Logger; daemon?: string; fields?: LogFields | undefined; want: string }> = [
    {
      name: 'a daemon, no component: the component is the daemon',
      make: (l) => l,
      daemon: 'master',
      fields: { ip: '127.0.0.1', port: 5050 },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"master","component":"master","ip":"127.0.0.1","port":5050}`,
    },
    {
      name: 'a component child',
      make: (l) => l.child({ component: 'registration' }),
      daemon: 'master',
      fields: { kind: 'NEW', port: 5051, hostname: 'web-1', agentId: 'a1' },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"master","component":"registration","agentId":"a1","hostname":"web-1","kind":"NEW","port":5051}`,
    },
    {
      name: 'every id, given in reverse, comes out in LOG_ID_KEYS order',
      make: (l) => l.child({ component: 'supervisor' }),
      daemon: 'agent',
      fields: { z: 1, epoch: 3, plan: 'p', ip: '10.0.0.1', hostname: 'h', taskId: 't', frameworkId: 'f', agentId: 'a' },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"agent","component":"supervisor","agentId":"a","frameworkId":"f","taskId":"t","hostname":"h","ip":"10.0.0.1","plan":"p","epoch":3,"z":1}`,
    },
    {
      name: 'bound ids and fields: ids first, bound before the line\'s own, a field overrides a bound value',
      make: (l) => l.child({ component: 'session', taskId: 't0', agentId: 'a0', pool: 'x', tag: 'bound' }),
      daemon: 'agent',
      fields: { tag: 'mine', agentId: 'a1' },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"agent","component":"session","agentId":"a1","taskId":"t0","pool":"x","tag":"mine"}`,
    },
    {
      name: 'a grandchild keeps the daemon, replaces the component, keeps the bindings',
      make: (l) => l.child({ component: 'api', pool: 'x' }).child({ component: 'audit' }),
      daemon: 'scheduler',
      fields: undefined,
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"scheduler","component":"audit","pool":"x"}`,
    },
    {
      name: 'no daemon (a test logger): neither key unless a component is bound',
      make: (l) => l,
      fields: { a: 1 },
      want: `{"time":"${TIME}","level":"info","msg":"m","a":1}`,
    },
    {
      name: 'a field cannot overwrite the head: it is written as _<key>',
      make: (l) => l,
      daemon: 'master',
      fields: { msg: 'x', time: 0, level: 'error', daemon: 'agent', component: 'c' },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"master","component":"master","_msg":"x","_time":0,"_level":"error","_daemon":"agent","_component":"c"}`,
    },
    {
      name: 'bigints as strings (nested too), NaN as null, undefined and functions left out',
      make: (l) => l,
      daemon: 'master',
      fields: { n: 12345678901234567890n, deep: { n: 1n, list: [2n] }, nan: NaN, inf: Infinity, u: undefined, f: () => 1, agentId: undefined },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"master","component":"master","n":"12345678901234567890","deep":{"n":"1","list":["2"]},"nan":null,"inf":null}`,
    },
    {
      name: 'strings are escaped: a line is never split',
      make: (l) => l,
      daemon: 'master',
      fields: { s: 'a\nb "q"' },
      want: `{"time":"${TIME}","level":"info","msg":"m","daemon":"master","component":"master","s":"a\\nb \\"q\\""}`,
    },
  ];
  for (const c of cases) {
    const { log, lines } = collect(c.daemon === undefined ? {} : { daemon: c.daemon });
    c.make(log).info('m', c.fields);
    assert.equal(lines.length, 1, c.name);
    assert.equal(lines[0], c.want, c.name);
    assert.doesNotThrow(() => JSON.parse(lines[0] ?? ''), c.name);
  }
});

test('the old construction with bindings { daemon, component } still heads the line', () => {
  const { log, lines } = collect({ bindings: { daemon: 'agent', component: 'detector', spec: 'zk' } });
  log.warn('w');
  assert.deepEqual(Object.keys(JSON.parse(lines[0] ?? '{}') as object), ['time', 'level', 'msg', 'daemon', 'component', 'spec']);
});

test('levels: lower ones are dropped, children keep the level', () => {
  const { log, lines } = collect({ level: 'warn', daemon: 'master' });
  const child = log.child({ component: 'drain' });
  for (const l of [log, child]) {
    l.debug('d');
    l.info('i');
    l.warn('w');
    l.error('e');
  }
  assert.deepEqual(lines.map((l) => (JSON.parse(l) as { level: string; component: string }).level + '/' + (JSON.parse(l) as { component: string }).component), ['warn/master', 'error/master', 'warn/drain', 'error/drain']);
  assert.equal(child.level, 'warn');
});

test('setLevel: the logger, its parent and every child move together (SET_LOGGING_LEVEL), and back', () => {
  const { log, lines } = collect({ level: 'info', daemon: 'agent' });
  const child = log.child({ component: 'api' });
  const grandchild = child.child({ component: 'supervisor' });
  grandchild.setLevel('debug');
  for (const l of [log, child, grandchild]) l.debug('d');
  assert.equal(lines.length, 3);
  assert.equal(log.level, 'debug');
  log.setLevel('info');
  for (const l of [log, child, grandchild]) l.debug('d');
  assert.equal(lines.length, 3, 'debug lines are dropped again');
  assert.equal(grandchild.level, 'info');
});

test('errors: name, message, code and stack; anywhere in the fields; a cycle does not throw', () => {
  const { log, lines } = collect({ daemon: 'master' });
  const coded = Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
  const plain = new TypeError('bad');
  log.error('registry write failed', { op: 'ADD', error: coded });
  log.error('many', { errors: [plain], error: 'just a string' });
  const cyclic: Record<string, unknown> = {};
  cyclic['self'] = cyclic;
  log.error('cycle', { cyclic, after: 1 });
  const [a, b, c] = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
  const e = a?.['error'] as Record<string, unknown>;
  assert.deepEqual(Object.keys(e), ['name', 'message', 'code', 'stack']);
  assert.equal(e['name'], 'Error');
  assert.equal(e['code'], 'SQLITE_READONLY');
  assert.match(String(e['stack']), /^Error: attempt to write a readonly database\n\s+at /);
  const inner = (b?.['errors'] as Array<Record<string, unknown>>)[0];
  assert.equal(inner?.['name'], 'TypeError');
  assert.equal(inner?.['code'], undefined);
  assert.equal(b?.['error'], 'just a string');
  assert.match(String(c?.['cyclic']), /^\[unserializable: /);
  assert.equal(c?.['after'], 1);
});

test('text: level padded, daemon/component, quoting, nested JSON, one line', () => {
  const cases: Array<[string, LogFields, string]> = [
    ['the issue\'s example', { time: TIME, level: 'info', msg: 'agent registered', daemon: 'master', component: 'registration', agentId: 'a-1', hostname: 'web-1' },
      `${TIME} INFO  master/registration agent registered agentId=a-1 hostname=web-1`],
    ['component = daemon: named once', { time: TIME, level: 'warn', msg: 'etcd not reachable yet', daemon: 'master', component: 'master' }, `${TIME} WARN  master etcd not reachable yet`],
    ['error level is five wide', { time: TIME, level: 'error', msg: 'x', daemon: 'agent', component: 'session' }, `${TIME} ERROR agent/session x`],
    ['debug', { time: TIME, level: 'debug', msg: 'x', daemon: 'agent', component: 'agent' }, `${TIME} DEBUG agent x`],
    ['quoting: spaces, empty, quotes, =, newlines; bare otherwise',
      { time: TIME, level: 'info', msg: 'm', daemon: 'scheduler', component: 'service', reason: 'two words', empty: '', q: 'say "hi"', eq: 'a=b', nl: 'a\nb', url: 'http://h:1/p?x', n: 3, b: false, nil: null },
      `${TIME} INFO  scheduler/service m reason="two words" empty="" q="say \\"hi\\"" eq="a=b" nl="a\\nb" url=http://h:1/p?x n=3 b=false nil=null`],
    ['nested objects and arrays as compact JSON', { time: TIME, level: 'info', msg: 'm', daemon: 'master', component: 'master', tasks: ['t 1', 't2'], o: { a: { b: 1 } } },
      `${TIME} INFO  master m tasks=["t 1","t2"] o={"a":{"b":1}}`],
    ['no daemon: the component alone; no time: none', { level: 'info', msg: 'm', component: 'audit' }, 'INFO  audit m'],
    ['a message with a newline is quoted', { time: TIME, level: 'info', msg: 'a\nb', daemon: 'agent' }, `${TIME} INFO  agent "a\\nb"`],
  ];
  for (const [name, record, want] of cases) assert.equal(formatText(record, { color: false }), want, name);
  assert.equal(formatText({ time: TIME, level: 'info', msg: 'm', daemon: 'master' }, { color: false, time: false }), 'INFO  master m', 'time: false');
});

test('text: an error as Name [code]: message, its stack frames on indented lines after the record', () => {
  const { log, lines } = collect({ daemon: 'master', format: 'text' });
  const e = Object.assign(new Error('attempt to write a readonly database'), { code: 'SQLITE_READONLY' });
  log.child({ component: 'registry' }).error('registry write failed', { op: 'ADD_AGENT', agentId: 'a1', error: e });
  assert.equal(lines.length, 1, 'one record, one write');
  const [first, ...frames] = (lines[0] ?? '').split('\n');
  assert.equal(first, `${TIME} ERROR master/registry registry write failed agentId=a1 op=ADD_AGENT error="Error [SQLITE_READONLY]: attempt to write a readonly database"`);
  assert.ok(frames.length > 0, 'frames follow');
  for (const f of frames) assert.match(f, /^ {4}at \S/);
  assert.match(frames[0] ?? '', /log\.test\.ts/, 'the first frame is where the error was made');
  // A parsed JSON line's error (what `npm start` gets from its children) renders the same.
  const json = collect({ daemon: 'master' });
  json.log.error('registry write failed', { error: e });
  const again = formatText(JSON.parse(json.lines[0] ?? '{}') as LogFields, { color: false });
  assert.equal(again.split('\n').length, frames.length + 1);
  // An error without a stack: no extra lines; a plain object with more keys is not taken for one.
  assert.equal(formatText({ level: 'error', msg: 'm', error: { name: 'E', message: 'x' } }, { color: false }), 'ERROR m error="E: x"');
  assert.equal(formatText({ level: 'info', msg: 'm', thing: { name: 'n', message: 'x', other: 1 } }, { color: false }), 'INFO  m thing={"name":"n","message":"x","other":1}');
});

test('text: colour only when asked; NO_COLOR and a non-terminal turn it off', () => {
  const record = { time: TIME, level: 'warn', msg: 'm', daemon: 'agent', component: 'session', k: 'v' };
  const plain = formatText(record, { color: false });
  const coloured = formatText(record, { color: true });
  assert.ok(!plain.includes('\x1b['));
  assert.ok(coloured.includes('\x1b[33mWARN '), 'the level in yellow');
  assert.equal(coloured.replace(/\x1b\[[0-9;]*m/g, ''), plain, 'the same text under the colours');
  // A logger with its own sink never colours (no terminal to speak of); the text format is still used.
  const { log, lines } = collect({ daemon: 'agent', format: 'text' });
  log.warn('m', { k: 'v' });
  assert.equal(lines[0], `${TIME} WARN  agent m k=v`);
  const cases: Array<[boolean | undefined, Record<string, string | undefined>, boolean]> = [
    [true, {}, true],
    [true, { NO_COLOR: '1' }, false],
    [true, { NO_COLOR: '' }, true],
    [false, {}, false],
    [undefined, {}, false],
  ];
  for (const [tty, env, want] of cases) assert.equal(useColor(tty, env), want, `${String(tty)} ${JSON.stringify(env)}`);
});

test('--log_format on the three daemons: json by default, text, from the environment, xml refused naming the choices', () => {
  assert.deepEqual(LOG_FORMATS, ['json', 'text']);
  const master = (argv: string[], env: Record<string, string> = {}) => resolveMasterConfig(argv, env);
  const agent = (argv: string[], env: Record<string, string> = {}) => resolveAgentFlags(['--master=m:5050', ...argv], env);
  const scheduler = (argv: string[], env: Record<string, string> = {}) => resolveSchedulerConfig(['--spec=/x.yaml', ...argv], env);
  const m0 = master([]);
  assert.equal(m0.kind === 'ok' ? m0.config.logFormat : m0.kind, 'json');
  const m1 = master(['--log_format=text']);
  assert.equal(m1.kind === 'ok' ? m1.config.logFormat : m1.kind, 'text');
  assert.ok(m1.kind === 'ok' && m1.config.flags.some((f) => f.name === 'log_format' && f.value === 'text'), 'in GET_FLAGS');
  const m2 = master([], { DRYDOCK_LOG_FORMAT: 'text' });
  assert.equal(m2.kind === 'ok' ? m2.config.logFormat : m2.kind, 'text');
  const a0 = agent([]);
  assert.equal(a0.kind === 'ok' ? a0.values.log_format : a0.kind, 'json');
  const a1 = agent(['--log_format', 'text']);
  assert.equal(a1.kind === 'ok' ? a1.values.log_format : a1.kind, 'text');
  const s0 = scheduler([]);
  assert.equal(s0.kind === 'ok' ? s0.values.log_format : s0.kind, 'json');
  const s1 = scheduler([], { DRYDOCK_LOG_FORMAT: 'text' });
  assert.equal(s1.kind === 'ok' ? s1.values.log_format : s1.kind, 'text');
  for (const [name, r] of [
    ['master', master(['--log_format=xml'])],
    ['agent', agent(['--log_format=xml'])],
    ['scheduler', scheduler(['--log_format=xml'])],
    ['master from the environment', master([], { DRYDOCK_LOG_FORMAT: 'xml' })],
  ] as const) {
    assert.equal(r.kind, 'error', name);
    if (r.kind === 'error') assert.match(r.error, /Invalid value 'xml' for (--log_format|DRYDOCK_LOG_FORMAT): .*json, text/, name);
  }
});

/** Every log call `x.log.info('msg', { ... })` in the daemons' code: where, its message argument, its field keys. */
function logCalls(): Array<{ where: string; msg: string; keys: string[] }> {
  const files: string[] = [];
  const walk = (dir: string): void => {
    for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(dir, e.name));
      else if (e.name.endsWith('.ts')) files.push(join(dir, e.name));
    }
  };
  for (const d of ['master', 'agent', 'scheduler', 'shared', 'io']) walk(d);
  /** The top-level pieces of a call's arguments (or an object's properties), from just after the opening bracket. */
  const split = (s: string, i: number): string[] => {
    const parts: string[] = [];
    let depth = 1;
    let start = i;
    for (; i < s.length && depth > 0; i++) {
      const ch = s[i];
      if (ch === "'" || ch === '"' || ch === '`') {
        for (i++; i < s.length && s[i] !== ch; i++) if (s[i] === '\\') i++;
        continue;
      }
      if (ch === '(' || ch === '{' || ch === '[') depth++;
      else if (ch === ')' || ch === '}' || ch === ']') {
        if (--depth === 0) parts.push(s.slice(start, i));
      } else if (ch === ',' && depth === 1) {
        parts.push(s.slice(start, i));
        start = i + 1;
      }
    }
    return parts;
  };
  const out: Array<{ where: string; msg: string; keys: string[] }> = [];
  for (const f of files) {
    const s = readFileSync(join(ROOT, f), 'utf8');
    // The receiver's last name is exactly log, logger or audit (#log, this.#o.log, ports.log...).
    const re = /(?<![\w$])#?(?:log|logger|audit)\??\.(?:debug|info|warn|error)\(/g;
    for (let m = re.exec(s); m !== null; m = re.exec(s)) {
      const args = split(s, m.index + m[0].length);
      const fields = (args[1] ?? '').trim();
      const keys = fields.startsWith('{')
        ? split(fields, 1).map((p) => /^\s*(?:\/\/[^\n]*\n\s*)*['"]?([\w$]+)['"]?\s*(?::|$)/.exec(p)?.[1] ?? '').filter((k) => k !== '')
        : [];
      out.push({ where: `${f}:${s.slice(0, m.index).split('\n').length}`, msg: (args[0] ?? '').trim(), keys });
    }
  }
  return out;
}

test('the daemons log constant messages, and ids under one spelling (agentId, not agent_id)', () => {
  const calls = logCalls();
  assert.ok(calls.length > 100, `found the log calls (${calls.length})`);
  // A constant, or a choice between constants (`agent registered` / `agent reregistered`).
  const constant = /^(?:'[^'\\]*'|[^`]*?\?\s*'[^'\\]*'\s*:\s*'[^'\\]*')$/s;
  assert.deepEqual(calls.filter((c) => !constant.test(c.msg)).map((c) => `${c.where} ${c.msg}`), [], 'messages are constant strings: data goes in fields');
  const snake = /^(?:agent|framework|task|slave|executor|offer|plan|machine)_id$|ID$/;
  assert.deepEqual(calls.flatMap((c) => c.keys.filter((k) => snake.test(k)).map((k) => `${c.where} ${k}`)), [], 'ids are camelCase: agentId, frameworkId, taskId');
});

/**
 * The pure half of the fuzz test (test/integration/fuzz.test.ts): a seeded PRNG, a JSON model
 * that can carry literals JavaScript values cannot (2^64 as a number, 10,000-deep nesting) as
 * raw text, mutations of valid requests, and the tables of valid requests for every endpoint
 * and for the agent wire.
 *
 * No I/O and no clock: case `i` of seed `s` is a function of (s, i) and of the ids in the
 * context alone, and the ids are only ever leaf strings, so the shape of every case (which
 * call, which field, which mutation) replays exactly from the seed. That is what makes a
 * failing seed worth printing.
 */

import { CALL_TYPES } from '../../master/api/operator-call.js';
import { AGENT_CALL_TYPES } from '../../agent/api.js';
import { SCHEDULER_CALL_TYPES } from '../../shared/proto.js';
import { mulberry32 } from './random.js';

// ---- Seeded randomness ------------------------------------------------------------------------

export { mulberry32 };

export class Rng {
  readonly seed: number;
  readonly #next: () => number;

  constructor(seed: number) {
    this.seed = seed >>> 0;
    this.#next = mulberry32(this.seed);
  }

  float(): number {
    return this.#next();
  }

  /** An integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.#next() * n);
  }

  pick<T>(xs: readonly T[]): T {
    if (xs.length === 0) throw new Error('Rng.pick of an empty list');
    return xs[this.int(xs.length)] as T;
  }

  /** Picks by weight: `[[weight, value], ...]`. */
  weighted<T>(table: ReadonlyArray<readonly [number, T]>): T {
    const total = table.reduce((s, [w]) => s + w, 0);
    let r = this.float() * total;
    for (const [w, v] of table) {
      if (r < w) return v;
      r -= w;
    }
    return (table[table.length - 1] as readonly [number, T])[1];
  }

  chance(p: number): boolean {
    return this.#next() < p;
  }

  bytes(n: number): Uint8Array<ArrayBuffer> {
    const out = new Uint8Array(n);
    for (let i = 0; i < n; i++) out[i] = this.int(256);
    return out;
  }
}

/**
 * The run's seed: `DRYDOCK_FUZZ_SEED` when set (an integer in [0, 2^32)), else a fresh random
 * one. Throws on a malformed value rather than silently fuzzing a different seed.
 */
export function fuzzSeed(env: NodeJS.ProcessEnv): number {
  const raw = env['DRYDOCK_FUZZ_SEED'];
  if (raw === undefined || raw.trim() === '') return Math.floor(Math.random() * 2 ** 32);
  const n = Number(raw.trim());
  if (!Number.isInteger(n) || n < 0 || n >= 2 ** 32) throw new Error(`DRYDOCK_FUZZ_SEED must be an integer in [0, 2^32), got '${raw}'`);
  return n;
}

/**
 * The generator of case `index`: each case gets its own stream derived from (seed, index), so
 * a case does not shift when an earlier one draws more or fewer numbers, and one case can be
 * regenerated alone (DRYDOCK_FUZZ_ONLY).
 */
export function caseRng(seed: number, index: number): Rng {
  const mix = mulberry32((seed ^ Math.imul(index + 1, 0x9e3779b1)) >>> 0);
  mix();
  return new Rng(Math.floor(mix() * 2 ** 32));
}

// ---- JSON with raw literals ---------------------------------------------------------------------

/** A literal written verbatim: a number JavaScript cannot hold, or a value too deep to build. */
export class Raw {
  constructor(
    readonly text: string,
    readonly label: string,
  ) {}
}

export type Json = null | boolean | number | string | Raw | Json[] | JsonObject;
export interface JsonObject {
  [key: string]: Json;
}

/** Sets an own key, even `__proto__` (plain assignment would change the prototype instead). */
function setKey(o: JsonObject, key: string, value: Json): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function isObject(v: Json): v is JsonObject {
  return v !== null && typeof v === 'object' && !Array.isArray(v) && !(v instanceof Raw);
}

/** JSON text; Raw nodes are written as they are. */
export function serialize(v: Json): string {
  if (v instanceof Raw) return v.text;
  if (Array.isArray(v)) return `[${v.map(serialize).join(',')}]`;
  if (isObject(v)) return `{${Object.entries(v).map(([k, x]) => `${JSON.stringify(k)}:${serialize(x)}`).join(',')}}`;
  return JSON.stringify(v) ?? 'null';
}

function clone(v: Json): Json {
  if (v instanceof Raw || v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) return v.map(clone);
  const o: JsonObject = {};
  for (const [k, x] of Object.entries(v)) setKey(o, k, clone(x));
  return o;
}

type Path = ReadonlyArray<string | number>;

function pathText(p: Path): string {
  if (p.length === 0) return '<body>';
  return p.map((k, i) => (typeof k === 'number' ? `[${k}]` : i === 0 ? k : `.${k}`)).join('');
}

/** Every node's path, the root's ([]) first; Raw nodes are leaves. Object order is insertion order: deterministic. */
function paths(v: Json, at: Path = [], out: Path[] = []): Path[] {
  out.push(at);
  if (Array.isArray(v)) v.forEach((x, i) => paths(x, [...at, i], out));
  else if (isObject(v)) for (const [k, x] of Object.entries(v)) paths(x, [...at, k], out);
  return out;
}

function getAt(root: Json, p: Path): Json {
  let v: Json = root;
  for (const k of p) {
    if (Array.isArray(v) && typeof k === 'number') v = v[k] ?? null;
    else if (isObject(v) && typeof k === 'string') v = Object.getOwnPropertyDescriptor(v, k)?.value as Json;
    else return null;
  }
  return v;
}

/** The root with the node at `p` replaced (or deleted when `value` is undefined). Mutates in place; root-level returns the new root. */
function setAt(root: Json, p: Path, value: Json | undefined): Json {
  if (p.length === 0) return value ?? null;
  const parent = getAt(root, p.slice(0, -1));
  const k = p[p.length - 1] as string | number;
  if (Array.isArray(parent) && typeof k === 'number') {
    if (value === undefined) parent.splice(k, 1);
    else parent[k] = value;
  } else if (isObject(parent) && typeof k === 'string') {
    if (value === undefined) delete parent[k];
    else setKey(parent, k, value);
  }
  return root;
}

function describe(v: Json): string {
  if (v instanceof Raw) return v.label;
  if (typeof v === 'string') return v.length > 40 ? `${JSON.stringify(v.slice(0, 12))}... (${v.length} chars)` : JSON.stringify(v);
  const text = serialize(v);
  return text.length > 40 ? `${text.slice(0, 37)}...` : text;
}

// ---- Hostile values ----------------------------------------------------------------------------

const DEPTH = 10_000;
const BIG = 100_000;

/** One megabyte of text. */
export const LONG_STRING = 'x'.repeat(1 << 20);

const DEEP: readonly Raw[] = [
  new Raw('['.repeat(DEPTH) + ']'.repeat(DEPTH), `${DEPTH}-deep array`),
  new Raw('{"a":'.repeat(DEPTH) + 'null' + '}'.repeat(DEPTH), `${DEPTH}-deep object`),
  new Raw('[{"value":'.repeat(DEPTH) + '"x"' + '}]'.repeat(DEPTH), `${DEPTH}-deep array of {value}`),
];

const BIG_ARRAYS: readonly Raw[] = [
  new Raw(`[${new Array<string>(BIG).fill('0').join(',')}]`, `${BIG} zeros`),
  new Raw(`[${new Array<string>(BIG).fill('null').join(',')}]`, `${BIG} nulls`),
  new Raw(`[${new Array<string>(BIG).fill('"x"').join(',')}]`, `${BIG} strings`),
  new Raw(`[${new Array<string>(BIG).fill('{}').join(',')}]`, `${BIG} empty objects`),
];

/** Numbers past int64, uint64, double and safe-integer limits, as JSON numbers and as strings. */
const HUGE: readonly Json[] = [
  new Raw('18446744073709551616', '2^64'),
  new Raw('-9223372036854775809', '-(2^63)-1'),
  new Raw('9223372036854775807', '2^63-1'),
  new Raw('9223372036854775808', '2^63'),
  new Raw('1e308', '1e308'),
  new Raw('-1e308', '-1e308'),
  new Raw('1e400', '1e400 (overflows a double)'),
  new Raw('-0', '-0'),
  new Raw('1e-400', '1e-400'),
  new Raw('9007199254740993', '2^53+1'),
  new Raw('123456789012345678901234567890', '30-digit integer'),
  new Raw('18446744073709551616.5', '2^64 + .5'),
  new Raw('1.8e19', '1.8e19'),
  2 ** 64,
  -(2 ** 63),
  Number.MAX_VALUE,
  '18446744073709551616',
  '-9223372036854775809',
  '1e308',
  '1e400',
];

const WRONG_TYPES: readonly Json[] = ['fuzz', '', 0, -1, 1.5, true, false, [], {}, ['a', 1], { x: 1 }, 'null', '10', '-1'];

const DURATIONS: readonly string[] = [
  '1000000000000weeks', '99999999999999999999999999days', '10mins', '-5secs', '1.5hrs', '0ns', 'NaNsecs', 'Infinityweeks',
  '1e3secs', '10 mins', '10', '-10', '0.000000001ns', '18446744073709551616ns',
];

const ODD_STRINGS: readonly string[] = [
  '\u0000', '\ud800', '\udfff\ud800', '../../../../etc/passwd', '%s%s%n', '<script>alert(1)</script>', '\u{1d11e}\u{1d11e}',
  ' ', '\n', 'undefined', 'NaN', '0x10', '\u0663', 'a\u0000b', '"', '\\', '{"type":"GET_HEALTH"}',
];

/** Keys that are not in any Mesos message; some have special meanings in JavaScript. */
const UNKNOWN_KEYS: readonly string[] = ['fuzz_unknown', '__proto__', 'constructor', 'toString', 'hasOwnProperty', '', 'TYPE', 'value ', 'length'];

// ---- Mutations ---------------------------------------------------------------------------------

type Op =
  | 'null' | 'wrong-type' | 'huge-number' | 'deep' | 'long-string' | 'big-array' | 'duration' | 'odd-string'
  | 'camel-keys' | 'unknown-key' | 'delete' | 'wrap-array' | 'empty' | 'other-type';

const OPS: ReadonlyArray<readonly [number, Op]> = [
  [3, 'delete'], [2, 'null'], [4, 'wrong-type'], [4, 'huge-number'], [1, 'deep'], [0.6, 'long-string'], [0.6, 'big-array'],
  [1, 'duration'], [1, 'odd-string'], [1, 'camel-keys'], [2, 'unknown-key'], [1, 'wrap-array'], [1, 'empty'], [0.5, 'other-type'],
];

/** Ops that build megabytes: at most one per case, so a case stays well under the body limit. */
const HEAVY: ReadonlySet<Op> = new Set(['deep', 'long-string', 'big-array']);

const camel = (k: string): string => k.replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase());

/**
 * Applies one mutation at a random node. `types` are the call types of the endpoint, for the
 * op that swaps `type` for another call (the body then carries the wrong sub-message).
 */
function mutateOnce(rng: Rng, root: Json, types: readonly string[], allowHeavy: boolean): { root: Json; label: string; heavy: boolean } {
  const all = paths(root);
  const p = rng.pick(all);
  let op = rng.weighted(OPS);
  if ((!allowHeavy && HEAVY.has(op)) || (op === 'other-type' && types.length === 0)) op = 'wrong-type';
  const node = getAt(root, p);
  const at = pathText(p);
  const replace = (v: Json, how: string): { root: Json; label: string; heavy: boolean } => ({ root: setAt(root, p, v), label: `${at} := ${describe(v)}${how === '' ? '' : ` (${how})`}`, heavy: HEAVY.has(op) });
  switch (op) {
    case 'null':
      return replace(null, '');
    case 'wrong-type':
      return replace(clone(rng.pick(WRONG_TYPES)), 'wrong type');
    case 'huge-number':
      return replace(rng.pick(HUGE), 'huge number');
    case 'deep':
      return replace(rng.pick(DEEP), '');
    case 'long-string':
      return replace(LONG_STRING, '1 MB string');
    case 'big-array':
      return replace(rng.pick(BIG_ARRAYS), '');
    case 'duration':
      return replace(rng.pick(DURATIONS), 'duration string');
    case 'odd-string':
      return replace(rng.pick(ODD_STRINGS), 'odd string');
    case 'wrap-array':
      return replace([node], 'wrapped in an array');
    case 'empty':
      return replace(Array.isArray(node) ? [] : isObject(node) ? {} : '', 'emptied');
    case 'other-type': {
      const other = rng.pick(types);
      return { root: setAt(root, ['type'], other), label: `type := ${JSON.stringify(other)} (another call's type)`, heavy: false };
    }
    case 'delete':
      if (p.length === 0) return { root: {}, label: 'body := {} (everything deleted)', heavy: false };
      return { root: setAt(root, p, undefined), label: `delete ${at}`, heavy: false };
    case 'camel-keys': {
      if (!isObject(node)) return replace(clone(rng.pick(WRONG_TYPES)), 'wrong type');
      const snake = Object.keys(node).filter((k) => k.includes('_'));
      for (const k of snake) setKey(node, camel(k), clone(node[k] as Json));
      return { root, label: `camelCase copies of ${snake.length} keys in ${at}`, heavy: false };
    }
    case 'unknown-key': {
      if (!isObject(node)) return replace([node], 'wrapped in an array');
      const key = rng.pick(UNKNOWN_KEYS);
      const value = clone(rng.pick([...WRONG_TYPES, { polluted: true }]));
      setKey(node, key, value);
      return { root, label: `${at} += ${JSON.stringify(key)}: ${describe(value)} (unknown key)`, heavy: false };
    }
  }
}

/** One to three mutations of a valid request, never zero: an unmutated request is not a fuzz case. */
export function mutate(rng: Rng, valid: Json, types: readonly string[]): { body: Json; labels: string[] } {
  let root = clone(valid);
  const labels: string[] = [];
  const n = 1 + (rng.chance(0.3) ? 1 : 0) + (rng.chance(0.1) ? 1 : 0);
  let heavy = false;
  for (let i = 0; i < n; i++) {
    const m = mutateOnce(rng, root, types, !heavy);
    root = m.root;
    heavy ||= m.heavy;
    labels.push(m.label);
  }
  // Sometimes the whole body is wrapped: an array where an object is expected.
  if (rng.chance(0.03)) {
    root = [root];
    labels.push('body wrapped in an array');
  }
  return { body: root, labels };
}

const KEY_POOL: readonly string[] = ['type', 'value', 'agent_id', 'framework_id', 'task_id', 'windows', 'machine_ids', 'hostname', 'ip', 'nanoseconds', 'seconds', 'x', '__proto__'];
const CHARS = 'abcXYZ019 _-"\\/\u00e9\u4e2d\u{1f600}\u0000\n';

function randomString(rng: Rng): string {
  const chars = [...CHARS];
  let s = '';
  const n = rng.int(12);
  for (let i = 0; i < n; i++) s += rng.pick(chars);
  return s;
}

/** Pure random JSON, a few levels deep, drawing from the hostile pools too. */
export function randomJson(rng: Rng, depth = 0): Json {
  switch (rng.int(depth >= 3 ? 6 : 9)) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.int(2000) - 1000;
    case 3: return (rng.float() - 0.5) * 10 ** rng.int(30);
    case 4: return randomString(rng);
    case 5: return rng.pick([...HUGE, ...ODD_STRINGS, ...DURATIONS]);
    case 6: return Array.from({ length: rng.int(5) }, () => randomJson(rng, depth + 1));
    default: {
      const o: JsonObject = {};
      const n = rng.int(5);
      for (let i = 0; i < n; i++) setKey(o, rng.chance(0.7) ? rng.pick(KEY_POOL) : randomString(rng), randomJson(rng, depth + 1));
      return o;
    }
  }
}

// ---- The context: ids the valid requests name ---------------------------------------------------

/** Ids of live things, so that valid requests reach past "unknown id" into the deep code. Only ever leaf strings. */
export interface FuzzContext {
  /** A registered fake agent that drain, deactivate and mark-gone calls may hit (the harness replaces it when gone). */
  victimAgentId: string;
  /** The real agent: drained and deactivated, never marked gone (its templates carry no mark_gone). */
  realAgentId: string;
  /** The harness's own framework, subscribed, and its stream. */
  frameworkId: string;
  streamId: string;
  /** An outstanding offer of that framework on the victim, or a made-up id when there is none. */
  offerId: string;
  /** The id the wire fake agent registered as. */
  wireAgentId: string;
}

/** Where the wire fake agent says it is; fixed, so that its registrations replace each other instead of piling up. */
export const WIRE_SELF = { hostname: 'fuzz-wire', ip: '127.0.0.1', port: 45_001 } as const;

/** 16 bytes of base64: a TaskStatus uuid. */
export const UUID_B64 = 'AAECAwQFBgcICQoLDA0ODw==';

/** The maintenance state the harness restores after an accepted change: two DRAINING machines (not the agents'). */
export const MACHINE_1 = { hostname: 'fuzz-m1', ip: '10.0.0.1' } as const;
export const MACHINE_2 = { hostname: 'fuzz-m2' } as const;
export const CANONICAL_SCHEDULE: JsonObject = {
  windows: [
    { machine_ids: [{ ...MACHINE_1 }], unavailability: { start: { nanoseconds: new Raw('1893456000000000000', '') }, duration: { nanoseconds: 3_600_000_000_000 } } },
    { machine_ids: [{ ...MACHINE_2 }], unavailability: { start: { nanoseconds: 1_700_000_000_000_000_000 } } },
  ],
};

const id = (value: string): JsonObject => ({ value });
const scalar = (name: string, value: number): JsonObject => ({ name, type: 'SCALAR', scalar: { value } });

// ---- Valid requests, per endpoint --------------------------------------------------------------

/** Valid bodies of every master::Call type (Mesos 1.12 master.proto shapes). */
export function operatorTemplates(c: FuzzContext): Record<(typeof CALL_TYPES)[number], JsonObject[]> {
  const reservation = { name: 'cpus', type: 'SCALAR', scalar: { value: 1 }, reservations: [{ type: 'DYNAMIC', role: 'fuzz', principal: 'p' }] };
  const volume = { name: 'disk', type: 'SCALAR', scalar: { value: 64 }, reservations: [{ type: 'DYNAMIC', role: 'fuzz' }], disk: { persistence: { id: 'v1', principal: 'p' }, volume: { container_path: 'data', mode: 'RW' } } };
  return {
    UNKNOWN: [{ type: 'UNKNOWN' }],
    GET_HEALTH: [{ type: 'GET_HEALTH' }],
    GET_FLAGS: [{ type: 'GET_FLAGS' }],
    GET_VERSION: [{ type: 'GET_VERSION' }],
    GET_METRICS: [{ type: 'GET_METRICS', get_metrics: { timeout: { nanoseconds: 1_000_000_000 } } }],
    GET_LOGGING_LEVEL: [{ type: 'GET_LOGGING_LEVEL' }],
    SET_LOGGING_LEVEL: [{ type: 'SET_LOGGING_LEVEL', set_logging_level: { level: 1, duration: { nanoseconds: 1_000_000_000 } } }],
    LIST_FILES: [{ type: 'LIST_FILES', list_files: { path: '/master/log' } }],
    READ_FILE: [{ type: 'READ_FILE', read_file: { path: '/master/log', offset: 0, length: 100 } }],
    GET_STATE: [{ type: 'GET_STATE' }],
    GET_AGENTS: [{ type: 'GET_AGENTS' }],
    GET_FRAMEWORKS: [{ type: 'GET_FRAMEWORKS' }],
    GET_EXECUTORS: [{ type: 'GET_EXECUTORS' }],
    GET_OPERATIONS: [{ type: 'GET_OPERATIONS' }],
    GET_TASKS: [{ type: 'GET_TASKS' }],
    GET_ROLES: [{ type: 'GET_ROLES' }],
    GET_WEIGHTS: [{ type: 'GET_WEIGHTS' }],
    UPDATE_WEIGHTS: [{ type: 'UPDATE_WEIGHTS', update_weights: { weight_infos: [{ weight: 2.0, role: 'fuzz' }] } }],
    GET_MASTER: [{ type: 'GET_MASTER' }],
    SUBSCRIBE: [{ type: 'SUBSCRIBE' }],
    RESERVE_RESOURCES: [{ type: 'RESERVE_RESOURCES', reserve_resources: { agent_id: id(c.victimAgentId), source: [scalar('cpus', 1)], resources: [reservation] } }],
    UNRESERVE_RESOURCES: [{ type: 'UNRESERVE_RESOURCES', unreserve_resources: { agent_id: id(c.victimAgentId), resources: [reservation] } }],
    CREATE_VOLUMES: [{ type: 'CREATE_VOLUMES', create_volumes: { agent_id: id(c.victimAgentId), volumes: [volume] } }],
    DESTROY_VOLUMES: [{ type: 'DESTROY_VOLUMES', destroy_volumes: { agent_id: id(c.victimAgentId), volumes: [volume] } }],
    GROW_VOLUME: [{ type: 'GROW_VOLUME', grow_volume: { agent_id: id(c.victimAgentId), volume, addition: scalar('disk', 1) } }],
    SHRINK_VOLUME: [{ type: 'SHRINK_VOLUME', shrink_volume: { agent_id: id(c.victimAgentId), volume, subtract: { value: 1 } } }],
    GET_MAINTENANCE_STATUS: [{ type: 'GET_MAINTENANCE_STATUS' }],
    GET_MAINTENANCE_SCHEDULE: [{ type: 'GET_MAINTENANCE_SCHEDULE' }],
    UPDATE_MAINTENANCE_SCHEDULE: [{ type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: clone(CANONICAL_SCHEDULE) } }],
    START_MAINTENANCE: [{ type: 'START_MAINTENANCE', start_maintenance: { machines: [{ ...MACHINE_1 }] } }],
    STOP_MAINTENANCE: [{ type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [{ ...MACHINE_1 }] } }],
    DRAIN_AGENT: [
      { type: 'DRAIN_AGENT', drain_agent: { agent_id: id(c.victimAgentId), max_grace_period: { seconds: 10, nanos: 5 }, mark_gone: false } },
      { type: 'DRAIN_AGENT', drain_agent: { agent_id: id(c.victimAgentId), max_grace_period: '10mins', mark_gone: true } },
      // The real agent: no mark_gone key, so no mutation can turn it into a mark-gone (that would end the agent process).
      { type: 'DRAIN_AGENT', drain_agent: { agent_id: id(c.realAgentId), max_grace_period: { seconds: '1' } } },
    ],
    DEACTIVATE_AGENT: [
      { type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: id(c.victimAgentId) } },
      { type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: id(c.realAgentId) } },
    ],
    REACTIVATE_AGENT: [
      { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: id(c.victimAgentId) } },
      { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: id(c.realAgentId) } },
    ],
    GET_QUOTA: [{ type: 'GET_QUOTA' }],
    UPDATE_QUOTA: [{ type: 'UPDATE_QUOTA', update_quota: { force: false, quota_configs: [{ role: 'fuzz', guarantees: { cpus: { value: 1 } }, limits: { cpus: { value: 2 } } }] } }],
    SET_QUOTA: [{ type: 'SET_QUOTA', set_quota: { quota_request: { force: false, role: 'fuzz', guarantee: [scalar('cpus', 1)] } } }],
    REMOVE_QUOTA: [{ type: 'REMOVE_QUOTA', remove_quota: { role: 'fuzz' } }],
    // A framework nobody runs: an operator TEARDOWN must never take the harness's framework.
    TEARDOWN: [{ type: 'TEARDOWN', teardown: { framework_id: id('fuzz-no-such-framework') } }],
    MARK_AGENT_GONE: [{ type: 'MARK_AGENT_GONE', mark_agent_gone: { agent_id: id(c.victimAgentId) } }],
  };
}

/** Valid bodies of every scheduler::Call type; all but SUBSCRIBE act as the harness's framework. */
export function schedulerTemplates(c: FuzzContext): Record<(typeof SCHEDULER_CALL_TYPES)[number], JsonObject[]> {
  const fw = id(c.frameworkId);
  const task: JsonObject = {
    name: 'fuzz-task',
    task_id: id('fuzz-task'),
    agent_id: id(c.victimAgentId),
    resources: [scalar('cpus', 0.1), scalar('mem', 8), { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31000 }] } }],
    command: { value: 'true', shell: true, arguments: ['a'], environment: { variables: [{ name: 'A', value: 'b' }] } },
    kill_policy: { grace_period: { nanoseconds: 1_000_000_000 } },
    labels: { labels: [{ key: 'k', value: 'v' }] },
  };
  const info: JsonObject = {
    user: 'fuzz', name: 'fuzz-sub', failover_timeout: 0, checkpoint: false, roles: ['*'], hostname: 'fuzz',
    capabilities: [{ type: 'MULTI_ROLE' }, { type: 'PARTITION_AWARE' }], labels: { labels: [{ key: 'k', value: 'v' }] },
  };
  return {
    UNKNOWN: [{ type: 'UNKNOWN', framework_id: fw }],
    SUBSCRIBE: [
      { type: 'SUBSCRIBE', subscribe: { framework_info: info } },
      // An id the master never saw: accepted as that id (then torn down by the harness, so removed for good).
      { type: 'SUBSCRIBE', framework_id: id('fuzz-fw-sub'), subscribe: { framework_info: { ...info, id: id('fuzz-fw-sub'), failover_timeout: 5 } } },
    ],
    TEARDOWN: [{ type: 'TEARDOWN', framework_id: fw }],
    ACCEPT: [{ type: 'ACCEPT', framework_id: fw, accept: { offer_ids: [id(c.offerId)], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }], filters: { refuse_seconds: 1 } } }],
    DECLINE: [{ type: 'DECLINE', framework_id: fw, decline: { offer_ids: [id(c.offerId)], filters: { refuse_seconds: 0 } } }],
    ACCEPT_INVERSE_OFFERS: [{ type: 'ACCEPT_INVERSE_OFFERS', framework_id: fw, accept_inverse_offers: { inverse_offer_ids: [id('fuzz-inverse-offer')], filters: { refuse_seconds: 5 } } }],
    DECLINE_INVERSE_OFFERS: [{ type: 'DECLINE_INVERSE_OFFERS', framework_id: fw, decline_inverse_offers: { inverse_offer_ids: [id('fuzz-inverse-offer')], filters: { refuse_seconds: 0 } } }],
    REVIVE: [{ type: 'REVIVE', framework_id: fw, revive: { roles: ['*'] } }],
    KILL: [{ type: 'KILL', framework_id: fw, kill: { task_id: id('fuzz-task'), agent_id: id(c.victimAgentId), kill_policy: { grace_period: { nanoseconds: 1000 } } } }],
    SHUTDOWN: [{ type: 'SHUTDOWN', framework_id: fw, shutdown: { executor_id: id('e'), agent_id: id(c.victimAgentId) } }],
    ACKNOWLEDGE: [{ type: 'ACKNOWLEDGE', framework_id: fw, acknowledge: { agent_id: id(c.victimAgentId), task_id: id('fuzz-task'), uuid: UUID_B64 } }],
    ACKNOWLEDGE_OPERATION_STATUS: [{ type: 'ACKNOWLEDGE_OPERATION_STATUS', framework_id: fw, acknowledge_operation_status: { agent_id: id(c.victimAgentId), resource_provider_id: id('rp'), uuid: UUID_B64, operation_id: id('op') } }],
    RECONCILE: [
      { type: 'RECONCILE', framework_id: fw, reconcile: { tasks: [{ task_id: id('fuzz-task'), agent_id: id(c.victimAgentId) }] } },
      { type: 'RECONCILE', framework_id: fw, reconcile: {} },
    ],
    RECONCILE_OPERATIONS: [{ type: 'RECONCILE_OPERATIONS', framework_id: fw, reconcile_operations: { operations: [{ operation_id: id('op'), agent_id: id(c.victimAgentId) }] } }],
    MESSAGE: [{ type: 'MESSAGE', framework_id: fw, message: { agent_id: id(c.victimAgentId), executor_id: id('e'), data: 'aGVsbG8=' } }],
    REQUEST: [{ type: 'REQUEST', framework_id: fw, request: { requests: [{ agent_id: id(c.victimAgentId), resources: [scalar('cpus', 1)] }] } }],
    SUPPRESS: [{ type: 'SUPPRESS', framework_id: fw, suppress: { roles: ['*'] } }],
    UPDATE_FRAMEWORK: [{ type: 'UPDATE_FRAMEWORK', framework_id: fw, update_framework: { framework_info: { user: 'fuzz', name: 'fuzz-home', id: fw }, offer_constraints: {} } }],
  };
}

/** Every agent::Call type the agent API knows: agent/api.ts' own list. */
export { AGENT_CALL_TYPES };

function agentTemplate(type: (typeof AGENT_CALL_TYPES)[number]): JsonObject {
  const container = { container_id: { value: 'c1', parent: { value: 'c0' } } };
  const sub: Partial<Record<(typeof AGENT_CALL_TYPES)[number], JsonObject>> = {
    GET_METRICS: { timeout: { nanoseconds: 1_000_000_000 } },
    SET_LOGGING_LEVEL: { level: 1, duration: { nanoseconds: 1_000_000_000 } },
    LIST_FILES: { path: '/slave/log' },
    READ_FILE: { path: '/slave/log', offset: 0, length: 10 },
    GET_CONTAINERS: { show_nested: true, show_standalone: false },
    LAUNCH_NESTED_CONTAINER: { ...container, command: { value: 'true' } },
    WAIT_NESTED_CONTAINER: container,
    KILL_NESTED_CONTAINER: { ...container, signal: 15 },
    REMOVE_NESTED_CONTAINER: container,
    LAUNCH_NESTED_CONTAINER_SESSION: { ...container, command: { value: 'true' } },
    ATTACH_CONTAINER_INPUT: { type: 'CONTAINER_ID', container_id: { value: 'c1' } },
    ATTACH_CONTAINER_OUTPUT: container,
    LAUNCH_CONTAINER: { ...container, command: { value: 'true' }, resources: [scalar('cpus', 0.1)] },
    WAIT_CONTAINER: container,
    KILL_CONTAINER: { ...container, signal: 9 },
    REMOVE_CONTAINER: container,
    ADD_RESOURCE_PROVIDER_CONFIG: { info: { type: 'org.apache.mesos.rp.local.storage', name: 'fuzz' } },
    UPDATE_RESOURCE_PROVIDER_CONFIG: { info: { type: 'org.apache.mesos.rp.local.storage', name: 'fuzz' } },
    REMOVE_RESOURCE_PROVIDER_CONFIG: { type: 'org.apache.mesos.rp.local.storage', name: 'fuzz' },
    MARK_RESOURCE_PROVIDER_GONE: { resource_provider_id: { value: 'rp' } },
    PRUNE_IMAGES: { excluded_images: [{ type: 'DOCKER', docker: { name: 'x' } }] },
  };
  const body: JsonObject = { type };
  const s = sub[type];
  if (s !== undefined) setKey(body, type.toLowerCase(), clone(s));
  return body;
}

/** The agent wire's REGISTER (shared/protocol.ts), with one task and one framework so their checks run too. */
export function registerTemplate(c: FuzzContext): JsonObject {
  const status = { task_id: id('wire-task'), state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', agent_id: id(c.wireAgentId), timestamp: 1_700_000_000.25, uuid: UUID_B64, message: 'fuzz' };
  return {
    type: 'REGISTER',
    request_id: 7,
    agent_id: c.wireAgentId,
    agent: {
      ...WIRE_SELF,
      resources: [scalar('cpus', 1), scalar('mem', 256), { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } }, { name: 'zones', type: 'SET', set: { item: ['a'] } }],
      attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }, { name: 'weight', type: 'SCALAR', scalar: { value: 1 } }],
    },
    version: '0.1.0',
    capabilities: ['MULTI_ROLE', 'AGENT_DRAINING'],
    tasks: [
      {
        framework_id: c.frameworkId,
        task: { name: 'wire-task', task_id: id('wire-task'), agent_id: id(c.wireAgentId), resources: [scalar('cpus', 0.1)], command: { value: 'true' }, kill_policy: { grace_period: { nanoseconds: 1 } } },
        state: 'TASK_RUNNING',
        statuses: [status],
        status_update_state: 'TASK_RUNNING',
        status_update_uuid: UUID_B64,
      },
    ],
    frameworks: [{ user: 'fuzz', name: 'fuzz-home', id: id(c.frameworkId), checkpoint: true }],
  };
}

export function statusUpdateTemplate(c: FuzzContext): JsonObject {
  return {
    type: 'STATUS_UPDATE',
    framework_id: c.frameworkId,
    status: { task_id: id('wire-task'), state: 'TASK_FINISHED', source: 'SOURCE_EXECUTOR', agent_id: id(c.wireAgentId), timestamp: 1_700_000_000.5, uuid: UUID_B64, message: 'fuzz', reason: 'REASON_COMMAND_EXECUTOR_FAILED' },
  };
}

/**
 * The agent wire's REFUSED: the agent could not decode one of the master's messages. A digest
 * no message of the master has, so a valid one changes nothing but the logs and a counter.
 */
export function refusedTemplate(): JsonObject {
  return { type: 'REFUSED', refused: { type: 'DRAIN', id: 'wire-task', digest: 'f0f0f0f0f0f0f0f0', reason: 'fuzz' } };
}

/** The agent message types the wire cases swap between. */
const WIRE_TYPES = ['REGISTER', 'STATUS_UPDATE', 'REFUSED'];

// ---- Cases --------------------------------------------------------------------------------------

/** Which part of the system a case aims at; the harness decides from it what state a case may change. */
export type Area = 'operator' | 'scheduler' | 'maintenance' | 'misc' | 'agent' | 'wire' | 'random';

export interface HttpCase {
  kind: 'http';
  area: Area;
  daemon: 'master' | 'agent';
  method: string;
  path: string;
  headers: Record<string, string>;
  /** Bytes, so that fetch never adds a Content-Type of its own. */
  body: Uint8Array<ArrayBuffer> | undefined;
  label: string;
}

export type WireFrame = { text: string } | { binary: Uint8Array<ArrayBuffer> };

export interface WireCase {
  kind: 'wire';
  area: 'wire';
  /** Send the frames after a valid REGISTER (else on a fresh session). */
  registered: boolean;
  frames: WireFrame[];
  label: string;
}

export type FuzzCase = HttpCase | WireCase;

const CONTENT_TYPES: readonly string[] = [
  'application/json; charset=utf-8', 'APPLICATION/JSON', 'application/x-www-form-urlencoded', 'text/plain', 'application/x-protobuf',
  'application/recordio', 'multipart/form-data; boundary=x', '', ';', 'application/json, text/plain', 'application/jsonx', '*/*',
];
const ACCEPTS: readonly string[] = ['text/html', '*/*', 'application/*;q=0', 'application/json;q=0', 'application/x-protobuf', 'garbage;;q=x', '', 'application/json;q=0.5, text/plain'];
const METHODS: readonly string[] = ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS', 'POST'];

const bytes = (text: string): Uint8Array<ArrayBuffer> => new TextEncoder().encode(text);

/** Headers of a JSON POST; sometimes a wrong or odd Content-Type, Accept, or none at all. */
function jsonHeaders(rng: Rng, labels: string[]): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json' };
  if (rng.chance(0.06)) {
    const ct = rng.pick(CONTENT_TYPES);
    h['content-type'] = ct;
    labels.push(`Content-Type: ${JSON.stringify(ct)}`);
  } else if (rng.chance(0.02)) {
    delete h['content-type'];
    labels.push('no Content-Type');
  }
  if (rng.chance(0.04)) {
    const a = rng.pick(ACCEPTS);
    h['accept'] = a;
    labels.push(`Accept: ${JSON.stringify(a)}`);
  }
  return h;
}

function http(area: Area, daemon: 'master' | 'agent', method: string, path: string, headers: Record<string, string>, body: string | Uint8Array<ArrayBuffer> | undefined, labels: string[]): HttpCase {
  const b = typeof body === 'string' ? bytes(body) : body;
  return { kind: 'http', area, daemon, method, path, headers, body: method === 'GET' || method === 'HEAD' ? undefined : b, label: labels.join('; ') };
}

/**
 * Picks a call type, weighted by the size of its valid request: a call with a deep sub-message
 * (ACCEPT, DRAIN_AGENT, a schedule) has more to get wrong than GET_HEALTH, and every type still
 * comes up. Sizes are structural, so the pick does not depend on the ids.
 */
function pickType<T extends string>(rng: Rng, table: Record<T, JsonObject[]>, types: readonly T[]): T {
  return rng.weighted(types.map((t) => [1 + table[t].reduce((n, b) => n + paths(b).length, 0) / 6, t] as const));
}

function operatorCase(rng: Rng, c: FuzzContext): HttpCase {
  const table = operatorTemplates(c);
  const type = pickType(rng, table, CALL_TYPES);
  const templates = table[type];
  const t = rng.int(templates.length);
  const m = mutate(rng, templates[t] as JsonObject, CALL_TYPES);
  const labels = [`operator ${type}#${t}: ${m.labels.join('; ')}`];
  const path = rng.weighted([[8, '/api/v1'], [1, '/master/api/v1'], [1, '/mesos/api/v1']] as const);
  return http('operator', 'master', 'POST', path, jsonHeaders(rng, labels), serialize(m.body), labels);
}

function schedulerCase(rng: Rng, c: FuzzContext): HttpCase {
  const table = schedulerTemplates(c);
  const type = pickType(rng, table, SCHEDULER_CALL_TYPES);
  const templates = table[type];
  const t = rng.int(templates.length);
  const m = mutate(rng, templates[t] as JsonObject, SCHEDULER_CALL_TYPES);
  const labels = [`scheduler ${type}#${t}: ${m.labels.join('; ')}`];
  const headers = jsonHeaders(rng, labels);
  const stream = rng.weighted([[20, 'ours'], [1, 'none'], [1, 'bogus'], [1, 'empty']] as const);
  if (stream === 'ours') headers['mesos-stream-id'] = c.streamId;
  else if (stream === 'bogus') headers['mesos-stream-id'] = '00000000-0000-4000-8000-000000000000';
  else if (stream === 'empty') headers['mesos-stream-id'] = '';
  if (stream !== 'ours') labels.push(`Mesos-Stream-Id: ${stream}`);
  const path = rng.weighted([[8, '/api/v1/scheduler'], [1, '/master/api/v1/scheduler'], [1, '/mesos/api/v1/scheduler']] as const);
  return http('scheduler', 'master', 'POST', path, headers, serialize(m.body), labels);
}

function maintenanceCase(rng: Rng): HttpCase {
  const prefix = rng.chance(0.2) ? '/master' : '';
  const route = rng.pick(['schedule-get', 'schedule-post', 'status', 'down', 'up'] as const);
  // Mesos never looks at Content-Type here: any (or none) must do.
  const headers: Record<string, string> = rng.chance(0.7) ? { 'content-type': 'application/json' } : rng.chance(0.5) ? { 'content-type': rng.pick(CONTENT_TYPES) } : {};
  if (route === 'schedule-get' || route === 'status') {
    const path = `${prefix}/maintenance/${route === 'status' ? 'status' : 'schedule'}`;
    const jsonp = rng.chance(0.3) ? `?jsonp=${encodeURIComponent(rng.pick(['cb', '', 'a.b', '<x>', 'x'.repeat(2000), '\u00e9']))}` : '';
    const method = rng.chance(0.85) ? 'GET' : rng.pick(METHODS);
    return http('maintenance', 'master', method, path + jsonp, headers, method === 'GET' || method === 'HEAD' ? undefined : '{}', [`maintenance ${method} ${path}${jsonp.slice(0, 40)}`]);
  }
  const valid: Json = route === 'schedule-post' ? clone(CANONICAL_SCHEDULE) : [{ ...MACHINE_1 }];
  const m = mutate(rng, valid, []);
  const path = route === 'schedule-post' ? `${prefix}/maintenance/schedule` : `${prefix}/machine/${route}`;
  const method = rng.chance(0.92) ? 'POST' : rng.pick(METHODS);
  return http('maintenance', 'master', method, path, headers, serialize(m.body), [`maintenance ${method} ${path}: ${m.labels.join('; ')}`]);
}

/** /health, /version, unknown paths, and wrong methods on every POST endpoint. */
function miscCase(rng: Rng): HttpCase {
  const path = rng.pick([
    '/health', '/master/health', '/version', '/master/version', '/', '/nope', '/api/v2', '/api/v1/', '/api/v1/../health', '/%2e%2e/%2e%2e/etc/passwd',
    '/api/v1?x=1', '/api/v1/scheduler/extra', '/agent/session', '/maintenance/schedule/x', '/machine', '/machine/down/', '/state',
    `/${'a'.repeat(4000)}`, '/api/v1%00', '/health?jsonp=cb', '/api/v1/scheduler', '/machine/down', '/machine/up',
    // Drydock's own API (not its event stream: a GET of it stays open by design).
    '/drydock/v1/agents', '/drydock/v1/agents/x-S1', '/drydock/v1/agents/%2e%2e', '/drydock/v1/agents/a/b', '/drydock/v1/agents/%00', '/drydock/v2/agents',
  ]);
  const method = rng.pick(METHODS);
  const labels = [`misc ${method} ${path.length > 60 ? `${path.slice(0, 20)}... (${path.length} chars)` : path}`];
  return http('misc', 'master', method, path, jsonHeaders(rng, labels), '{"type":"GET_HEALTH"}', labels);
}

function agentCase(rng: Rng): HttpCase {
  if (rng.chance(0.1)) {
    const method = rng.pick(METHODS);
    const path = rng.pick(['/health', '/api/v1', '/slave(1)/api/v1', '/nope', '/api/v1/x', '/slave(1)/state']);
    const labels = [`agent ${method} ${path}`];
    return http('agent', 'agent', method, path, jsonHeaders(rng, labels), '{"type":"GET_HEALTH"}', labels);
  }
  const type = rng.pick(AGENT_CALL_TYPES);
  const m = mutate(rng, agentTemplate(type), AGENT_CALL_TYPES);
  const labels = [`agent ${type}: ${m.labels.join('; ')}`];
  return http('agent', 'agent', 'POST', rng.chance(0.85) ? '/api/v1' : '/slave(1)/api/v1', jsonHeaders(rng, labels), serialize(m.body), labels);
}

function wireFrame(rng: Rng, c: FuzzContext): { frame: WireFrame; label: string } {
  const kind = rng.weighted([[6, 'register'], [5, 'status'], [2, 'refused'], [1, 'text'], [1, 'binary'], [1, 'random'], [0.5, 'deep'], [0.3, 'empty']] as const);
  switch (kind) {
    case 'register': {
      const m = mutate(rng, registerTemplate(c), WIRE_TYPES);
      return { frame: { text: serialize(m.body) }, label: `REGISTER: ${m.labels.join('; ')}` };
    }
    case 'status': {
      const m = mutate(rng, statusUpdateTemplate(c), WIRE_TYPES);
      return { frame: { text: serialize(m.body) }, label: `STATUS_UPDATE: ${m.labels.join('; ')}` };
    }
    case 'refused': {
      const m = mutate(rng, refusedTemplate(), WIRE_TYPES);
      return { frame: { text: serialize(m.body) }, label: `REFUSED: ${m.labels.join('; ')}` };
    }
    case 'text': {
      const t = rng.pick(['hello', '{', '}', 'null', '[]', '"REGISTER"', '{"type":"REGISTER"', 'NaN', '\u0000', '{"type":"REGISTER"}}']);
      return { frame: { text: t }, label: `text ${JSON.stringify(t)}` };
    }
    case 'binary': {
      const b = rng.chance(0.5) ? rng.bytes(rng.int(200)) : bytes(serialize(registerTemplate(c)));
      return { frame: { binary: b }, label: `binary frame (${b.length} bytes)` };
    }
    case 'random': {
      const v = randomJson(rng);
      return { frame: { text: serialize(v) }, label: `random JSON ${describe(v)}` };
    }
    case 'deep': {
      const d = rng.pick(DEEP);
      return { frame: { text: d.text }, label: d.label };
    }
    case 'empty':
      return { frame: { text: '' }, label: 'empty frame' };
  }
}

function wireCase(rng: Rng, c: FuzzContext): WireCase {
  const registered = rng.chance(0.6);
  const n = rng.chance(0.2) ? 2 : 1;
  const frames: WireFrame[] = [];
  const labels: string[] = [];
  for (let i = 0; i < n; i++) {
    const f = wireFrame(rng, c);
    frames.push(f.frame);
    labels.push(f.label);
  }
  return { kind: 'wire', area: 'wire', registered, frames, label: `wire ${registered ? 'after' : 'before'} REGISTER: ${labels.join(' | ')}` };
}

/** Pure random JSON, or random bytes, at a random body-taking endpoint. */
function randomCase(rng: Rng): HttpCase {
  const target = rng.pick([
    ['master', '/api/v1'], ['master', '/api/v1/scheduler'], ['master', '/maintenance/schedule'], ['master', '/machine/down'], ['master', '/machine/up'], ['agent', '/api/v1'],
  ] as const);
  const useBytes = rng.chance(0.3);
  const body = useBytes ? rng.bytes(rng.int(300)) : bytes(serialize(randomJson(rng)));
  const labels = [`random ${useBytes ? `bytes (${body.length})` : 'JSON'} to ${target[0]} ${target[1]}`];
  return http('random', target[0], 'POST', target[1], jsonHeaders(rng, labels), body, labels);
}

/** Case `index` of a run with `seed`. */
export function generateCase(seed: number, index: number, c: FuzzContext): FuzzCase {
  const rng = caseRng(seed, index);
  const area = rng.weighted<Area>([[30, 'operator'], [24, 'scheduler'], [12, 'maintenance'], [5, 'misc'], [9, 'agent'], [12, 'wire'], [8, 'random']]);
  switch (area) {
    case 'operator': return operatorCase(rng, c);
    case 'scheduler': return schedulerCase(rng, c);
    case 'maintenance': return maintenanceCase(rng);
    case 'misc': return miscCase(rng);
    case 'agent': return agentCase(rng);
    case 'wire': return wireCase(rng, c);
    case 'random': return randomCase(rng);
  }
}

/** The first `n` characters of a body, for failure messages (bytes that are not text are shown as hex). */
export function preview(body: Uint8Array | string | undefined, n = 300): string {
  if (body === undefined) return '(no body)';
  const text = typeof body === 'string' ? body : new TextDecoder('utf-8', { fatal: false }).decode(body.subarray(0, n * 4));
  const total = body.length;
  const shown = [...text].slice(0, n).join('');
  const printable = /^[\x20-\x7e\u00a0-\uffff\n]*$/.test(shown) ? shown : `hex ${Buffer.from(typeof body === 'string' ? bytes(body) : body).subarray(0, n / 2).toString('hex')}`;
  return total > n ? `${printable}... (${total} ${typeof body === 'string' ? 'chars' : 'bytes'})` : printable;
}

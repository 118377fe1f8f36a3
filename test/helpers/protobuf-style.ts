/**
 * What a client generated from Mesos' .proto files (protobufjs, Java, Go JSON) sends instead of
 * a hand-written request: every optional field present as `null`, repeated fields as `[]`,
 * int64s (and other integers) as decimal strings, bools as "true"/"false", and keys Mesos
 * ignores (unknown fields, camelCase duplicates such as `agentId` next to `agent_id`).
 * Mesos' stout parser reads all of these as the clean request (reference/mesos-api.md §0.1),
 * so Drydock must too. Pure: plain data in, plain data out.
 */

/**
 * Field paths: dot-separated keys from the root, `[]` after a key (or alone, for a root array)
 * for every element: `accept.operations[].launch.task_infos[].executor`, `[].ip`.
 */
export interface PolluteSpec {
  /** Optional fields sent as `null` wherever the clean request leaves them out. */
  readonly nulls?: readonly string[];
  /** Repeated fields sent as `[]` wherever the clean request leaves them out. */
  readonly empties?: readonly string[];
  /** Numeric fields sent as decimal strings (ints exactly, bigints included). */
  readonly numbers?: readonly string[];
  /** Bool fields sent as "true" / "false". */
  readonly bools?: readonly string[];
}

/** A polluted request and every key it added that Mesos ignores (to look for in what is read back). */
export interface Polluted {
  readonly body: unknown;
  readonly keys: ReadonlySet<string>;
}

/** Keys no Mesos message has, added to every object: one snake_case (a plausible future field), one camelCase. */
export const UNKNOWN_KEYS = ['drydock_unknown_field', 'unknownExtension'] as const;

type Json = Record<string, unknown>;

const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `agent_id` -> `agentId` (what proto3 JSON writers and camelCase clients use). */
export function camelCase(snake: string): string {
  return snake.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** Splits a path into steps: a key, or '[]' for every element of the array reached so far. */
function steps(path: string): string[] {
  const out: string[] = [];
  for (const part of path.split('.')) {
    let key = part;
    let arrays = 0;
    while (key.endsWith('[]')) {
      key = key.slice(0, -2);
      arrays++;
    }
    if (key !== '') out.push(key);
    for (let i = 0; i < arrays; i++) out.push('[]');
  }
  return out;
}

/** Calls `fn(parent, key)` for every object the path's parent steps reach; returns how many. */
function forEachSlot(root: unknown, path: string, fn: (parent: Json, key: string) => void): number {
  const all = steps(path);
  const last = all.at(-1);
  if (last === undefined || last === '[]') throw new Error(`pollute: path '${path}' must end with a key`);
  let level: unknown[] = [root];
  for (const step of all.slice(0, -1)) {
    const next: unknown[] = [];
    for (const v of level) {
      if (step === '[]') {
        if (Array.isArray(v)) next.push(...(v as unknown[]));
      } else if (isObject(v) && v[step] !== undefined && v[step] !== null) next.push(v[step]);
    }
    level = next;
  }
  let n = 0;
  for (const v of level) {
    if (!isObject(v)) continue;
    fn(v, last);
    n++;
  }
  return n;
}

/** A value of the same shape with other content: what a wrong reader of the camelCase copy would get. */
function bogus(v: unknown): unknown {
  if (typeof v === 'string' || v === null || v === undefined) return 'BOGUS';
  if (typeof v === 'number' || typeof v === 'bigint') return 424242;
  if (typeof v === 'boolean') return !v;
  if (Array.isArray(v)) return v.length === 0 ? ['BOGUS'] : v.map(bogus);
  if (isObject(v)) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, bogus(x)]));
  return 'BOGUS';
}

/** Adds the camelCase copies and unknown keys at every object level (not inside what it adds). */
function addIgnoredKeys(v: unknown, keys: Set<string>): unknown {
  if (Array.isArray(v)) return v.map((x) => addIgnoredKeys(x, keys));
  if (!isObject(v)) return v;
  const out: Json = {};
  for (const [k, x] of Object.entries(v)) {
    const camel = camelCase(k);
    if (camel !== k) {
      // Before the real key: a reader that takes the first spelling it meets gets the bogus value.
      out[camel] = bogus(x);
      keys.add(camel);
    }
    out[k] = addIgnoredKeys(x, keys);
  }
  out[UNKNOWN_KEYS[0]] = { value: 'BOGUS', nested: [1, 'two', { deep: true }] };
  out[UNKNOWN_KEYS[1]] = [{ deep: 'BOGUS' }];
  for (const k of UNKNOWN_KEYS) keys.add(k);
  return out;
}

/**
 * The protobuf-style twin of a clean request. Throws when a path of the spec reaches nothing
 * (a typo would otherwise make a row test less than it says).
 */
export function pollute(clean: unknown, spec: PolluteSpec = {}): Polluted {
  const body: unknown = structuredClone(clean);
  const must = (n: number, kind: string, path: string): void => {
    if (n === 0) throw new Error(`pollute: ${kind} path '${path}' reaches nothing in ${JSON.stringify(clean, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v))}`);
  };
  for (const path of spec.numbers ?? []) {
    let hits = 0;
    must(forEachSlot(body, path, (parent, key) => {
      const v = parent[key];
      if (typeof v === 'number' || typeof v === 'bigint') {
        parent[key] = v.toString();
        hits++;
      }
    }), 'numbers', path);
    must(hits, 'numbers', path);
  }
  for (const path of spec.bools ?? []) {
    let hits = 0;
    forEachSlot(body, path, (parent, key) => {
      const v = parent[key];
      if (typeof v === 'boolean') {
        parent[key] = String(v);
        hits++;
      }
    });
    must(hits, 'bools', path);
  }
  // Absent only: a field the clean request sets keeps its value.
  for (const path of spec.nulls ?? []) {
    must(forEachSlot(body, path, (parent, key) => {
      if (parent[key] === undefined) parent[key] = null;
    }), 'nulls', path);
  }
  for (const path of spec.empties ?? []) {
    must(forEachSlot(body, path, (parent, key) => {
      if (parent[key] === undefined) parent[key] = [];
    }), 'empties', path);
  }
  const keys = new Set<string>();
  return { body: addIgnoredKeys(body, keys), keys };
}

/**
 * Where a value read back from Drydock shows the pollution: a JSON `null` anywhere (Mesos
 * writers never write one), or one of the ignored keys that was sent. Paths like
 * `get_frameworks.frameworks[0].framework_info.webui_url`.
 */
export function findPollution(value: unknown, keys: ReadonlySet<string>, path = '$'): string[] {
  if (value === null) return [`${path} is null`];
  const out: string[] = [];
  if (Array.isArray(value)) value.forEach((x, i) => out.push(...findPollution(x, keys, `${path}[${i}]`)));
  else if (isObject(value)) {
    for (const [k, x] of Object.entries(value)) {
      if (keys.has(k)) out.push(`${path}.${k} (an ignored key that was sent)`);
      out.push(...findPollution(x, keys, `${path}.${k}`));
    }
  }
  return out;
}

/**
 * Resources and attributes in Mesos' text syntax, and the arithmetic the allocator needs.
 *
 *   resources:  cpus:2;mem:1024;disk:4096;ports:[31000-32000];gpus(*):0;zones:{a,b}
 *   attributes: rack:a;zone:1;slots:[1-4]
 *
 * Everything here is pure.
 */

import type { Attribute, Range, Resource } from './mesos.js';

export type Parsed<T> = { ok: true; value: T } | { ok: false; error: string };

const NAME = /^[A-Za-z_][A-Za-z0-9_.\-/]*$/;

function parseRanges(text: string): Range[] | string {
  const inner = text.slice(1, -1).trim();
  if (inner === '') return [];
  const ranges: Range[] = [];
  for (const part of inner.split(',')) {
    const m = /^\s*([0-9]+)\s*-\s*([0-9]+)\s*$/.exec(part);
    if (m === null) return `'${part.trim()}' is not a range like 31000-32000`;
    const begin = Number(m[1]);
    const end = Number(m[2]);
    if (begin > end) return `range ${begin}-${end} ends before it begins`;
    ranges.push({ begin, end });
  }
  return coalesceRanges(ranges);
}

function parseSet(text: string): string[] {
  return text.slice(1, -1).split(',').map((s) => s.trim()).filter((s) => s !== '');
}

/** Parses `cpus:2;mem:1024;ports:[31000-32000]`. Names may carry a role: `cpus(*):2`. */
export function parseResources(text: string): Parsed<Resource[]> {
  const out: Resource[] = [];
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) return parseResourcesJson(trimmed);
  for (const raw of trimmed.split(';')) {
    const item = raw.trim();
    if (item === '') continue;
    const colon = item.indexOf(':');
    if (colon <= 0) return { ok: false, error: `Invalid resource '${item}': expected name:value` };
    let name = item.slice(0, colon).trim();
    const value = item.slice(colon + 1).trim();
    let role: string | undefined;
    const roleMatch = /^([^()]+)\(([^()]*)\)$/.exec(name);
    if (roleMatch !== null) {
      name = roleMatch[1] ?? name;
      role = roleMatch[2];
    }
    if (!NAME.test(name)) return { ok: false, error: `Invalid resource '${item}': bad name '${name}'` };
    let resource: Resource;
    if (value.startsWith('[') && value.endsWith(']')) {
      const ranges = parseRanges(value);
      if (typeof ranges === 'string') return { ok: false, error: `Invalid resource '${item}': ${ranges}` };
      resource = { name, type: 'RANGES', ranges: { range: ranges } };
    } else if (value.startsWith('{') && value.endsWith('}')) {
      resource = { name, type: 'SET', set: { item: parseSet(value) } };
    } else {
      const n = Number(value);
      if (value === '' || !Number.isFinite(n)) return { ok: false, error: `Invalid resource '${item}': '${value}' is not a number, [ranges] or {set}` };
      if (n < 0) return { ok: false, error: `Invalid resource '${item}': negative value` };
      resource = { name, type: 'SCALAR', scalar: { value: n } };
    }
    if (role !== undefined && role !== '*') resource.role = role;
    if (out.some((r) => r.name === name)) return { ok: false, error: `Invalid resources: '${name}' is given more than once` };
    out.push(resource);
  }
  return { ok: true, value: out };
}

function parseResourcesJson(text: string): Parsed<Resource[]> {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (e) {
    return { ok: false, error: `Invalid resources JSON: ${(e as Error).message}` };
  }
  if (!Array.isArray(data)) return { ok: false, error: 'Invalid resources JSON: expected an array of Resource objects' };
  const out: Resource[] = [];
  for (const r of data as unknown[]) {
    if (typeof r !== 'object' || r === null) return { ok: false, error: 'Invalid resources JSON: each entry must be an object' };
    const o = r as Record<string, unknown>;
    if (typeof o['name'] !== 'string' || !NAME.test(o['name'])) return { ok: false, error: 'Invalid resources JSON: each entry needs a name' };
    const type = o['type'];
    if (type === 'SCALAR' && typeof (o['scalar'] as { value?: unknown } | undefined)?.value === 'number') {
      out.push({ name: o['name'], type, scalar: { value: (o['scalar'] as { value: number }).value } });
    } else if (type === 'RANGES' && Array.isArray((o['ranges'] as { range?: unknown } | undefined)?.range)) {
      out.push({ name: o['name'], type, ranges: { range: coalesceRanges((o['ranges'] as { range: Range[] }).range) } });
    } else if (type === 'SET' && Array.isArray((o['set'] as { item?: unknown } | undefined)?.item)) {
      out.push({ name: o['name'], type, set: { item: [...(o['set'] as { item: string[] }).item] } });
    } else {
      return { ok: false, error: `Invalid resources JSON: '${o['name']}' needs type SCALAR, RANGES or SET with its value` };
    }
  }
  return { ok: true, value: out };
}

/** Parses `rack:a;zone:1;slots:[1-4]`: numbers become SCALAR, [..] RANGES, anything else TEXT. */
export function parseAttributes(text: string): Parsed<Attribute[]> {
  const out: Attribute[] = [];
  for (const raw of text.split(';')) {
    const item = raw.trim();
    if (item === '') continue;
    const colon = item.indexOf(':');
    if (colon <= 0) return { ok: false, error: `Invalid attribute '${item}': expected name:value` };
    const name = item.slice(0, colon).trim();
    const value = item.slice(colon + 1).trim();
    if (!NAME.test(name)) return { ok: false, error: `Invalid attribute '${item}': bad name '${name}'` };
    if (value === '') return { ok: false, error: `Invalid attribute '${item}': empty value` };
    if (value.startsWith('[') && value.endsWith(']')) {
      const ranges = parseRanges(value);
      if (typeof ranges === 'string') return { ok: false, error: `Invalid attribute '${item}': ${ranges}` };
      out.push({ name, type: 'RANGES', ranges: { range: ranges } });
    } else if (/^-?[0-9]+(\.[0-9]+)?$/.test(value)) {
      out.push({ name, type: 'SCALAR', scalar: { value: Number(value) } });
    } else {
      out.push({ name, type: 'TEXT', text: { value } });
    }
  }
  return { ok: true, value: out };
}

/** Writes resources back in text syntax, e.g. for logs and the CLI. */
export function formatResources(resources: readonly Resource[]): string {
  return resources
    .map((r) => {
      const name = r.role !== undefined && r.role !== '*' ? `${r.name}(${r.role})` : r.name;
      if (r.type === 'SCALAR') return `${name}:${round(r.scalar?.value ?? 0)}`;
      if (r.type === 'RANGES') return `${name}:[${(r.ranges?.range ?? []).map((x) => `${x.begin}-${x.end}`).join(',')}]`;
      return `${name}:{${(r.set?.item ?? []).join(',')}}`;
    })
    .join(';');
}

/** Scalars are kept to 3 decimals, as Mesos does, so repeated arithmetic does not drift. */
function round(v: number): number {
  return Math.round(v * 1000) / 1000;
}

/** Sorts and merges overlapping or adjacent ranges. */
export function coalesceRanges(ranges: readonly Range[]): Range[] {
  const sorted = [...ranges].sort((a, b) => a.begin - b.begin);
  const out: Range[] = [];
  for (const r of sorted) {
    const last = out[out.length - 1];
    if (last !== undefined && r.begin <= last.end + 1) last.end = Math.max(last.end, r.end);
    else out.push({ begin: r.begin, end: r.end });
  }
  return out;
}

function subtractRanges(a: readonly Range[], b: readonly Range[]): Range[] {
  let out = coalesceRanges(a);
  for (const cut of b) {
    const next: Range[] = [];
    for (const r of out) {
      if (cut.end < r.begin || cut.begin > r.end) next.push(r);
      else {
        if (r.begin < cut.begin) next.push({ begin: r.begin, end: cut.begin - 1 });
        if (r.end > cut.end) next.push({ begin: cut.end + 1, end: r.end });
      }
    }
    out = next;
  }
  return out;
}

function rangesContain(outer: readonly Range[], inner: readonly Range[]): boolean {
  return inner.every((i) => outer.some((o) => o.begin <= i.begin && i.end <= o.end));
}

function key(r: Resource): string {
  return `${r.name}\u0000${r.role ?? '*'}`;
}

/** a + b, merged by name and role. */
export function addResources(a: readonly Resource[], b: readonly Resource[]): Resource[] {
  const out = a.map(cloneResource);
  for (const r of b) {
    const same = out.find((x) => key(x) === key(r) && x.type === r.type);
    if (same === undefined) out.push(cloneResource(r));
    else if (same.type === 'SCALAR') same.scalar = { value: round((same.scalar?.value ?? 0) + (r.scalar?.value ?? 0)) };
    else if (same.type === 'RANGES') same.ranges = { range: coalesceRanges([...(same.ranges?.range ?? []), ...(r.ranges?.range ?? [])]) };
    else same.set = { item: [...new Set([...(same.set?.item ?? []), ...(r.set?.item ?? [])])] };
  }
  return out;
}

/** a - b. Resources that reach zero are dropped. Assumes b is contained in a. */
export function subtractResources(a: readonly Resource[], b: readonly Resource[]): Resource[] {
  const out: Resource[] = [];
  for (const r of a) {
    const cut = b.filter((x) => key(x) === key(r) && x.type === r.type);
    const next = cloneResource(r);
    for (const c of cut) {
      if (next.type === 'SCALAR') next.scalar = { value: round((next.scalar?.value ?? 0) - (c.scalar?.value ?? 0)) };
      else if (next.type === 'RANGES') next.ranges = { range: subtractRanges(next.ranges?.range ?? [], c.ranges?.range ?? []) };
      else next.set = { item: (next.set?.item ?? []).filter((i) => !(c.set?.item ?? []).includes(i)) };
    }
    if (!isEmptyResource(next)) out.push(next);
  }
  return out;
}

/** Does `outer` hold at least `inner`? */
export function containsResources(outer: readonly Resource[], inner: readonly Resource[]): boolean {
  for (const r of inner) {
    if (isEmptyResource(r)) continue;
    const same = outer.filter((x) => key(x) === key(r) && x.type === r.type);
    if (same.length === 0) return false;
    const total = same.reduce<Resource[]>((acc, x) => addResources(acc, [x]), [])[0];
    if (total === undefined) return false;
    if (r.type === 'SCALAR' && (total.scalar?.value ?? 0) + 1e-9 < (r.scalar?.value ?? 0)) return false;
    if (r.type === 'RANGES' && !rangesContain(total.ranges?.range ?? [], r.ranges?.range ?? [])) return false;
    if (r.type === 'SET' && !(r.set?.item ?? []).every((i) => (total.set?.item ?? []).includes(i))) return false;
  }
  return true;
}

export function isEmptyResource(r: Resource): boolean {
  if (r.type === 'SCALAR') return (r.scalar?.value ?? 0) <= 1e-9;
  if (r.type === 'RANGES') return (r.ranges?.range ?? []).length === 0;
  return (r.set?.item ?? []).length === 0;
}

function cloneResource(r: Resource): Resource {
  const c: Resource = { name: r.name, type: r.type };
  if (r.scalar !== undefined) c.scalar = { value: r.scalar.value };
  if (r.ranges !== undefined) c.ranges = { range: r.ranges.range.map((x) => ({ begin: x.begin, end: x.end })) };
  if (r.set !== undefined) c.set = { item: [...r.set.item] };
  if (r.role !== undefined) c.role = r.role;
  return c;
}

/** "Endpoint" format: unreserved resources carry `"role":"*"` (GET_AGENTS total/allocated/offered). */
export function toEndpointFormat(resources: readonly Resource[]): Resource[] {
  return resources.map((r) => ({ ...cloneResource(r), role: r.role ?? '*' }));
}

/** The scalar value of one resource, 0 when absent. */
export function scalarOf(resources: readonly Resource[], name: string): number {
  return round(resources.filter((r) => r.name === name && r.type === 'SCALAR').reduce((s, r) => s + (r.scalar?.value ?? 0), 0));
}

/**
 * The sum of many resource lists (every task of an agent, everything a framework holds): the
 * same as folding addResources over them, in one pass. The fold copies the running total and
 * builds two keys per comparison for every list added, which made the allocator's round cost
 * grow with the tasks in the cluster times that copying.
 */
export function sumResources(lists: Iterable<readonly Resource[]>): Resource[] {
  const byKey = new Map<string, Resource>();
  for (const list of lists) {
    for (const r of list) {
      const k = `${r.type}\u0000${key(r)}`;
      const same = byKey.get(k);
      if (same === undefined) byKey.set(k, cloneResource(r));
      else if (same.type === 'SCALAR') same.scalar = { value: round((same.scalar?.value ?? 0) + (r.scalar?.value ?? 0)) };
      else if (same.type === 'RANGES') same.ranges = { range: [...(same.ranges?.range ?? []), ...(r.ranges?.range ?? []).map((x) => ({ begin: x.begin, end: x.end }))] };
      else same.set = { item: [...new Set([...(same.set?.item ?? []), ...(r.set?.item ?? [])])] };
    }
  }
  const out = [...byKey.values()];
  // Ranges are merged once, at the end, rather than after every list.
  for (const r of out) if (r.type === 'RANGES') r.ranges = { range: coalesceRanges(r.ranges?.range ?? []) };
  return out;
}

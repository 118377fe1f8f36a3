/**
 * Runtime checks for JSON from the network, small enough to load in an agent that must stay
 * under 60 MB (a general validation library costs ~12 MB of RSS at import). A check returns
 * undefined when the value fits, or a message with the path of the first thing that does not.
 * Unknown object keys are allowed everywhere (messages are only ever extended).
 */

import { preview } from './proto.js';

export type Check = (value: unknown, path: string) => string | undefined;

function at(path: string): string {
  return path === '' ? '' : ` at ${path}`;
}

/** A bad value in a message: short, and never the whole input (it may be megabytes or 10,000 levels deep). */
function quoted(v: unknown): string {
  return typeof v === 'string' ? JSON.stringify(preview(v)) : v === undefined ? 'undefined' : preview(v);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return typeof value === 'object' ? 'an object' : typeof value;
}

export const str = (opts: { min?: number } = {}): Check => (v, p) => {
  if (typeof v !== 'string') return `expected a string${at(p)}, got ${describe(v)}`;
  if (opts.min !== undefined && v.length < opts.min) return `expected a non-empty string${at(p)}`;
  return undefined;
};

export const num = (opts: { int?: boolean; min?: number; max?: number; positive?: boolean } = {}): Check => (v, p) => {
  if (typeof v !== 'number' || !Number.isFinite(v)) return `expected a number${at(p)}, got ${describe(v)}`;
  if (opts.int === true && !Number.isInteger(v)) return `expected an integer${at(p)}`;
  if (opts.positive === true && v <= 0) return `expected a positive number${at(p)}`;
  if (opts.min !== undefined && v < opts.min) return `expected a number >= ${opts.min}${at(p)}`;
  if (opts.max !== undefined && v > opts.max) return `expected a number <= ${opts.max}${at(p)}`;
  return undefined;
};

export const bool = (): Check => (v, p) => (typeof v === 'boolean' ? undefined : `expected a boolean${at(p)}, got ${describe(v)}`);

export const literal = (want: string): Check => (v, p) => (v === want ? undefined : `expected '${want}'${at(p)}`);

export const oneOf = (values: readonly string[]): Check => {
  const set = new Set(values);
  return (v, p) => (typeof v === 'string' && set.has(v) ? undefined : `expected one of ${values.join(', ')}${at(p)}, got ${quoted(v)}`);
};

export const arr = (item: Check): Check => (v, p) => {
  if (!Array.isArray(v)) return `expected an array${at(p)}, got ${describe(v)}`;
  for (let i = 0; i < v.length; i++) {
    const e = item(v[i], `${p}.${i}`);
    if (e !== undefined) return e;
  }
  return undefined;
};

/** Marks an object field as optional: absent (undefined) is fine, null is not. */
export interface Optional {
  optional: Check;
}

export const opt = (check: Check): Optional => ({ optional: check });

export const obj = (fields: Record<string, Check | Optional>): Check => {
  const entries = Object.entries(fields);
  return (v, p) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return `expected an object${at(p)}, got ${describe(v)}`;
    const o = v as Record<string, unknown>;
    for (const [key, f] of entries) {
      const path = p === '' ? key : `${p}.${key}`;
      const value = o[key];
      if (typeof f === 'function') {
        if (value === undefined) return `missing field${at(path)}`;
        const e = f(value, path);
        if (e !== undefined) return e;
      } else if (value !== undefined) {
        const e = f.optional(value, path);
        if (e !== undefined) return e;
      }
    }
    return undefined;
  };
};

/** One of several object checks, chosen by the string in `field` (a discriminated union). */
export const tagged = (field: string, variants: Record<string, Check>): Check => (v, p) => {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return `expected an object${at(p)}, got ${describe(v)}`;
  const tag = (v as Record<string, unknown>)[field];
  const check = typeof tag === 'string' && Object.hasOwn(variants, tag) ? variants[tag] : undefined;
  if (check === undefined) return `unknown ${field} ${quoted(tag)}${at(p)}; expected one of ${Object.keys(variants).join(', ')}`;
  return check(v, p);
};

/**
 * Mesos times and durations (int64 nanoseconds) written for people, exactly. The values come
 * from shared/json.ts as bigints (or as numbers when they fit a double exactly), and every
 * step here is BigInt arithmetic: `Number(ns)` would round 1443830400000000001 to ...000000.
 */

import { parseDuration } from '../shared/duration.js';

const NS_PER_S = 1_000_000_000n;

/**
 * A JSON integer as a bigint: a bigint, a safe-integer number, or a numeric string (Mesos
 * accepts `"600"` for integer fields). Anything else is undefined.
 */
export function toBigInt(v: unknown): bigint | undefined {
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return BigInt(v);
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) return BigInt(v);
  return undefined;
}

/** The nanoseconds of a TimeInfo / DurationInfo (`{"nanoseconds": N}`), if well-formed. */
export function nanosOf(info: unknown): bigint | undefined {
  if (typeof info !== 'object' || info === null) return undefined;
  return toBigInt((info as { nanoseconds?: unknown }).nanoseconds);
}

/** Floor division, so times before 1970 get a fraction in [0, 1 s) like every other time. */
function floorDiv(a: bigint, b: bigint): bigint {
  const q = a / b;
  return a % b !== 0n && (a < 0n) !== (b < 0n) ? q - 1n : q;
}

/** Nanoseconds below one unit as a decimal fraction without trailing zeros (`.5`, `.000000001`), or ''. */
function fraction(rest: bigint, digits: number): string {
  if (rest === 0n) return '';
  return '.' + rest.toString().padStart(digits, '0').replace(/0+$/, '');
}

/**
 * An epoch time in nanoseconds as ISO 8601 UTC, with as many fractional digits as it needs:
 * `2015-10-03T00:00:00Z`, `2015-10-03T00:00:00.000000001Z`. Exact to the nanosecond.
 */
export function isoTime(ns: bigint): string {
  const seconds = floorDiv(ns, NS_PER_S);
  const rest = ns - seconds * NS_PER_S;
  // Whole seconds of an int64 nanosecond time (±292 years) are far inside Date's range.
  const base = new Date(Number(seconds) * 1000).toISOString().replace(/\.000Z$/, '');
  return `${base}${fraction(rest, 9)}Z`;
}

const SPAN_UNITS: ReadonlyArray<readonly [string, bigint]> = [
  ['d', 86_400n * NS_PER_S],
  ['h', 3_600n * NS_PER_S],
  ['m', 60n * NS_PER_S],
];

/**
 * A duration in nanoseconds, human-readable and exact: `1h`, `1h 30m`, `2d 4h 0.5s`, `45s`,
 * `250ms`, `1.5us`, `0s`. Days, hours and minutes are whole; the seconds carry the fraction.
 */
export function formatSpan(ns: bigint): string {
  if (ns === 0n) return '0s';
  if (ns < 0n) return `-${formatSpan(-ns)}`;
  if (ns < 1_000n) return `${ns}ns`;
  if (ns < 1_000_000n) return `${ns / 1_000n}${fraction(ns % 1_000n, 3)}us`;
  if (ns < NS_PER_S) return `${ns / 1_000_000n}${fraction(ns % 1_000_000n, 6)}ms`;
  const parts: string[] = [];
  let left = ns;
  for (const [name, size] of SPAN_UNITS) {
    if (left >= size) {
      parts.push(`${left / size}${name}`);
      left %= size;
    }
  }
  if (left > 0n) parts.push(`${left / NS_PER_S}${fraction(left % NS_PER_S, 9)}s`);
  return parts.join(' ');
}

/** A protobuf Duration (`{"seconds": S, "nanos": N}`, what DRAIN_AGENT's max_grace_period takes) from nanoseconds. */
export function protobufDuration(ns: bigint): { seconds: bigint | number; nanos: number } {
  const seconds = ns / NS_PER_S;
  // Small values stay plain numbers so the request reads like Mesos' own examples.
  return { seconds: seconds <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(seconds) : seconds, nanos: Number(ns % NS_PER_S) };
}

/**
 * `--timeout` of a command that waits (`--wait`), watches (`--watch`) or follows (`--follow`), in ms: undefined when
 * not given (wait as long as it takes); an error when given without the flag it bounds, or not a
 * positive duration. When it runs out the command exits 124 and the operation goes on.
 */
export function waitTimeoutMs(text: string | undefined, waits: boolean, flag: '--wait' | '--watch' | '--follow'): { ok: true; value: number | undefined } | { ok: false; error: string } {
  if (text === undefined) return { ok: true, value: undefined };
  if (!waits) return { ok: false, error: `--timeout is for ${flag}: without it nothing waits` };
  const d = parseDuration(text);
  if (!d.ok) return { ok: false, error: `--timeout: ${d.error}` };
  if (d.ns <= 0n) return { ok: false, error: `--timeout must be more than zero, got '${text}'` };
  return { ok: true, value: Math.max(1, Number(d.ns / 1_000_000n)) };
}

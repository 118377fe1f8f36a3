/**
 * Durations as Mesos writes them (`15secs`, `10mins`, `100ms`, `1.5hrs`) and as exact
 * nanoseconds. Mesos times and durations are int64 nanoseconds, beyond JavaScript's exact
 * integers, so they are bigints here and are never routed through a float.
 */

const UNITS: ReadonlyArray<readonly [string, bigint]> = [
  ['weeks', 604_800_000_000_000n],
  ['days', 86_400_000_000_000n],
  ['hrs', 3_600_000_000_000n],
  ['mins', 60_000_000_000n],
  ['secs', 1_000_000_000n],
  ['ms', 1_000_000n],
  ['us', 1_000n],
  ['ns', 1n],
];

/**
 * The other spellings accepted for Mesos' units: the short ones people type (`s`, `m`, `h`,
 * `d`, `w`: `3m` is three minutes, as in Go and kubectl; milliseconds are only `ms`) and the
 * words. Every one is listed in the error message (UNITS_TEXT), so the parser and what it says
 * it takes cannot drift apart.
 */
const ALIASES: Readonly<Record<string, string>> = {
  week: 'weeks', w: 'weeks',
  day: 'days', d: 'days',
  hr: 'hrs', h: 'hrs', hour: 'hrs', hours: 'hrs',
  min: 'mins', m: 'mins', minute: 'mins', minutes: 'mins',
  sec: 'secs', s: 'secs', second: 'secs', seconds: 'secs',
};

/**
 * The units a duration may have, as its error messages list them: Mesos' own, smallest first,
 * each with its other spellings in brackets (`ns, us, ms, secs (s, sec, second, seconds), ...`).
 */
export const UNITS_TEXT: string = [...UNITS].reverse().map(([name]) => {
  const others = Object.keys(ALIASES).filter((a) => ALIASES[a] === name).sort((a, b) => a.length - b.length || a.localeCompare(b));
  return others.length === 0 ? name : `${name} (${others.join(', ')})`;
}).join(', ');

/** Every spelling of a unit the parser takes: Mesos' and the aliases (the tests check the message against it). */
export const UNIT_SPELLINGS: readonly string[] = [...UNITS.map(([name]) => name), ...Object.keys(ALIASES)];

/** The largest int64: Mesos durations and times are int64 nanoseconds (about 292 years). */
export const MAX_INT64 = 2n ** 63n - 1n;

export type DurationParse = { ok: true; ns: bigint } | { ok: false; error: string };

const PATTERN = /^([0-9]+)(?:\.([0-9]+))?([a-z]+)$/;

/** Parses `10mins`, `30secs`, `1.5hrs`, `250ms`. A unit is required, as in Mesos. */
export function parseDuration(text: string): DurationParse {
  const m = PATTERN.exec(text.trim());
  if (m === null) return { ok: false, error: `Invalid duration '${text}': expected a number and a unit: ${UNITS_TEXT}` };
  const [, whole = '0', frac = '', rawUnit = ''] = m;
  const unitName = Object.hasOwn(ALIASES, rawUnit) ? (ALIASES[rawUnit] as string) : rawUnit;
  const unit = UNITS.find(([name]) => name === unitName);
  if (unit === undefined) return { ok: false, error: `Invalid duration '${text}': unknown unit '${rawUnit}'; the units are ${UNITS_TEXT}` };
  const scale = 10n ** BigInt(frac.length);
  // A 40-digit literal is already far past int64; refuse before BigInt does big arithmetic.
  if (whole.length + frac.length > 40) return { ok: false, error: `Invalid duration '${text.slice(0, 60)}': longer than int64 nanoseconds can hold (about 292 years)` };
  const ns = (BigInt(whole + frac) * unit[1]) / scale;
  if (ns > MAX_INT64) return { ok: false, error: `Invalid duration '${text.slice(0, 60)}': longer than int64 nanoseconds can hold (about 292 years)` };
  return { ok: true, ns };
}

/** Writes a duration the way Mesos prints flags: the largest unit, with a decimal part if needed. */
export function formatDuration(ns: bigint): string {
  if (ns === 0n) return '0ns';
  const sign = ns < 0n ? '-' : '';
  const abs = ns < 0n ? -ns : ns;
  for (const [name, size] of UNITS) {
    if (abs >= size) {
      const whole = abs / size;
      const rest = abs % size;
      if (rest === 0n) return `${sign}${whole}${name}`;
      const digits = String(size).length - 1;
      const frac = rest.toString().padStart(digits, '0').replace(/0+$/, '');
      return `${sign}${whole}.${frac}${name}`;
    }
  }
  return `${sign}${abs}ns`;
}

export function msToNs(ms: number): bigint {
  return BigInt(Math.round(ms * 1_000_000));
}

/** Now, in nanoseconds since the epoch, from a millisecond clock. */
export function nowNs(nowMs: number): bigint {
  return BigInt(Math.trunc(nowMs)) * 1_000_000n;
}

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

/** Mesos' spellings plus the common short ones (`s`, `m`, `h`, `d`) people type. */
const ALIASES: Record<string, string> = {
  week: 'weeks', w: 'weeks',
  day: 'days', d: 'days',
  hr: 'hrs', h: 'hrs', hour: 'hrs', hours: 'hrs',
  min: 'mins', m: 'mins', minute: 'mins', minutes: 'mins',
  sec: 'secs', s: 'secs', second: 'secs', seconds: 'secs',
};

/** The largest int64: Mesos durations and times are int64 nanoseconds (about 292 years). */
export const MAX_INT64 = 2n ** 63n - 1n;

export type DurationParse = { ok: true; ns: bigint } | { ok: false; error: string };

const PATTERN = /^([0-9]+)(?:\.([0-9]+))?([a-z]+)$/;

/** Parses `10mins`, `30secs`, `1.5hrs`, `250ms`. A unit is required, as in Mesos. */
export function parseDuration(text: string): DurationParse {
  const m = PATTERN.exec(text.trim());
  if (m === null) return { ok: false, error: `Invalid duration '${text}': expected a number and a unit (ns, us, ms, secs, mins, hrs, days, weeks)` };
  const [, whole = '0', frac = '', rawUnit = ''] = m;
  const unitName = ALIASES[rawUnit] ?? rawUnit;
  const unit = UNITS.find(([name]) => name === unitName);
  if (unit === undefined) return { ok: false, error: `Invalid duration '${text}': unknown unit '${rawUnit}'` };
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

/**
 * A drain's configuration, shared by master and agent: how DRAIN_AGENT's `max_grace_period`
 * is read, how it is written on the wire, and the kill-policy override it implies for a task
 * (Mesos `calculateKillPolicy` in `Slave::drain`). Pure.
 */

import { MAX_INT64, parseDuration } from './duration.js';
import { decodeMessage, DRAIN_CONFIG, preview } from './proto.js';
import type { KillPolicy } from './mesos.js';

/** Drain states with Mesos spellings (DrainState: UNKNOWN=0 is never stored). */
export type DrainState = 'DRAINING' | 'DRAINED';

/** A drain's config as the master keeps it: durations exact, in ns. */
export interface DrainConfig {
  /** Cap on each task's kill grace period; undefined: every task keeps its own policy. */
  maxGracePeriodNs: bigint | undefined;
  /** When drained, mark the agent gone instead of DRAINED. */
  markGone: boolean;
}

/**
 * The config on the agent wire and in the agent's checkpoint (Mesos DrainConfig JSON). The
 * grace is exact: written as bare digits, read back as a bigint (shared/proto.ts DRAIN_CONFIG).
 */
export interface DrainConfigWire {
  max_grace_period?: { nanoseconds: bigint };
  mark_gone: boolean;
}

export type GraceParse = { ok: true; ns: bigint | undefined } | { ok: false; error: string };

const NS_PER_SEC = 1_000_000_000n;
/** google.protobuf.Duration's range: ±315,576,000,000 s (10,000 years). */
const MAX_DURATION_SECONDS = 315_576_000_000n;

function intOf(v: unknown, field: string): { ok: true; n: bigint } | { ok: false; error: string } {
  // stout: integer fields take a JSON number or a numeric string.
  if (typeof v === 'bigint') return { ok: true, n: v };
  if (typeof v === 'number' && Number.isInteger(v)) return { ok: true, n: BigInt(v) };
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v.trim())) return { ok: true, n: BigInt(v.trim()) };
  return { ok: false, error: `Invalid value ${preview(v)} for field 'max_grace_period.${field}': expecting an integer` };
}

/**
 * DRAIN_AGENT's `max_grace_period`. Mesos takes only a google.protobuf.Duration
 * `{"seconds": S, "nanos": N}` (ns = S*1e9 + N, `{}` is set and means 0: kill at once). We also
 * accept what the maintenance docs write, a duration string (`"10mins"`, `"30secs"`, `"1hrs"`),
 * and a bare numeric string as seconds (`"600"`, as if it were `{"seconds": "600"}`).
 * `null` and absence mean unset. Negative durations are refused: a grace cannot be negative.
 */
export function parseMaxGracePeriod(v: unknown): GraceParse {
  if (v === undefined || v === null) return { ok: true, ns: undefined };
  let ns: bigint;
  if (typeof v === 'string') {
    const text = v.trim();
    if (/^[0-9]+$/.test(text)) ns = BigInt(text) * NS_PER_SEC;
    else {
      const d = parseDuration(text);
      if (!d.ok) return { ok: false, error: `Invalid 'max_grace_period': ${d.error}` };
      ns = d.ns;
    }
  } else if (typeof v === 'object' && !Array.isArray(v)) {
    const o = v as Record<string, unknown>;
    let seconds = 0n;
    let nanos = 0n;
    if (o['seconds'] !== undefined) {
      const s = intOf(o['seconds'], 'seconds');
      if (!s.ok) return s;
      seconds = s.n;
    }
    if (o['nanos'] !== undefined) {
      const n = intOf(o['nanos'], 'nanos');
      if (!n.ok) return n;
      nanos = n.n;
      if (nanos <= -NS_PER_SEC || nanos >= NS_PER_SEC) return { ok: false, error: `Invalid 'max_grace_period.nanos' ${nanos}: must be within (-1e9, 1e9)` };
    }
    if (seconds > MAX_DURATION_SECONDS || seconds < -MAX_DURATION_SECONDS) return { ok: false, error: `Invalid 'max_grace_period.seconds' ${seconds}: out of range` };
    ns = seconds * NS_PER_SEC + nanos;
  } else {
    const kind = Array.isArray(v) ? 'array' : typeof v === 'bigint' ? 'number' : typeof v;
    return { ok: false, error: `Not expecting a JSON ${kind} for field 'max_grace_period' (use {"seconds": 600} or "10mins")` };
  }
  if (ns < 0n) return { ok: false, error: `Invalid 'max_grace_period': a grace period cannot be negative` };
  if (ns > MAX_INT64) return { ok: false, error: `Invalid 'max_grace_period': longer than int64 nanoseconds can hold (about 292 years)` };
  return { ok: true, ns };
}

/** The config as the agent wire and checkpoint carry it: every digit of what DRAIN_AGENT accepted. */
export function drainConfigWire(c: DrainConfig): DrainConfigWire {
  const w: DrainConfigWire = { mark_gone: c.markGone };
  if (c.maxGracePeriodNs !== undefined) w.max_grace_period = { nanoseconds: c.maxGracePeriodNs };
  return w;
}

/**
 * Reads a DrainConfig from the wire or the agent's checkpoint: the range DRAIN_AGENT accepts,
 * 0 to int64's largest, exactly (an older checkpoint's JSON number included).
 */
export function readDrainConfigWire(v: unknown, path = 'config'): { ok: true; value: DrainConfigWire } | { ok: false; error: string } {
  const d = decodeMessage<DrainConfigWire>(DRAIN_CONFIG, v, path);
  if (!d.ok) return d;
  const ns = d.value.max_grace_period?.nanoseconds;
  if (ns !== undefined && ns < 0n) return { ok: false, error: `Field '${path}.max_grace_period.nanoseconds' is negative: a grace period cannot be` };
  return d;
}

/**
 * The effective grace of a task killed by a drain, in ns (Mesos §4.3):
 *  - max unset: the task's own grace (undefined: its own default applies);
 *  - the task has no grace of its own: max;
 *  - the task's grace is longer than max: max;
 *  - otherwise the task's own.
 */
export function drainGraceNs(taskGraceNs: number | undefined, maxGraceNs: number | undefined): number | undefined {
  if (maxGraceNs === undefined) return taskGraceNs;
  if (taskGraceNs === undefined) return maxGraceNs;
  return taskGraceNs > maxGraceNs ? maxGraceNs : taskGraceNs;
}

/**
 * The kill-policy override a drain sends with a task's kill: undefined when the task keeps
 * its own policy (no max, or its own grace is already within it). The cap is compared exactly;
 * an override beyond 2^53 ns (104 days) is written as 2^53-1 ns, which the kill's timer caps
 * further (agent/kill-policy.ts): a JavaScript timer holds at most 24.8 days.
 */
export function killPolicy(task: { kill_policy?: KillPolicy }, drain: DrainConfigWire): KillPolicy | undefined {
  const own = task.kill_policy?.grace_period?.nanoseconds;
  const max = drain.max_grace_period?.nanoseconds;
  if (max === undefined) return undefined;
  // As numbers: a task's own grace is within ±(2^53-1), where a double compares exactly against any cap.
  if (own !== undefined && own <= Number(max)) return undefined;
  return { grace_period: { nanoseconds: max > BigInt(Number.MAX_SAFE_INTEGER) ? Number.MAX_SAFE_INTEGER : Number(max) } };
}

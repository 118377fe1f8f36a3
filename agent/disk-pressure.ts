/**
 * Disk pressure, the decision: from the free space and free inodes of the filesystems the agent
 * writes to (its work dir with the checkpoint, and the sandboxes' directory when that is another
 * filesystem), and from writes that failed for want of space, whether the agent is short of disk
 * now, why, and in words that name the cause and the directory. Pure: the shell
 * (agent/disk-watch.ts) reads the filesystems and carries the answer out.
 *
 * Hysteresis: pressure begins when a figure drops below its threshold (or a write fails for want
 * of space or quota, or there is no space at all), and ends only once every figure is back above
 * CLEAR_FACTOR times its threshold, and, after a failed write, writes work again. A disk hovering
 * at the threshold does not flap.
 */

import type { DiskPressure, DiskPressureReason } from '../shared/protocol.js';
import { formatBytes, formatBytesFlag } from '../shared/bytes.js';

/** The thresholds (the agent's --disk_pressure_* flags); 0 turns one off. */
export interface DiskThresholds {
  /** --disk_pressure_free_bytes: pressure below this many free bytes. */
  readonly freeBytes: number;
  /** --disk_pressure_free_percent: pressure below this share of the filesystem free (0-100). */
  readonly freePercent: number;
  /** --disk_pressure_free_inodes_percent: pressure below this share of inodes free (0-100). */
  readonly freeInodesPercent: number;
}

/** Pressure ends only once every figure is above this many times its threshold. */
export const CLEAR_FACTOR = 1.25;

/** One filesystem's figures, as statfs gives them to an unprivileged writer. */
export interface DiskReading {
  /** The directory read (the work dir, or the sandboxes' directory). */
  readonly path: string;
  readonly freeBytes: number;
  readonly totalBytes: number;
  readonly freeInodes: number;
  /** 0 on filesystems without a fixed number of inodes (btrfs): inodes are then not judged. */
  readonly totalInodes: number;
}

/** A write that failed, as the shell heard of it. */
export interface WriteFailure {
  /** The directory it wrote in. */
  readonly path: string;
  /** errno code: ENOSPC, EDQUOT, ... */
  readonly code: string | undefined;
  readonly message: string;
}

/** Does this errno mean the filesystem (or the writer's quota) is out of room? */
export function isSpaceError(code: string | undefined): boolean {
  return code === 'ENOSPC' || code === 'EDQUOT';
}

/** The cause of a failed write in words: `no space left on device in /var/lib/drydock/agent/meta`. */
export function describeWriteFailure(f: WriteFailure): string {
  if (f.code === 'ENOSPC') return `no space left on device in ${f.path}`;
  if (f.code === 'EDQUOT') return `disk quota exceeded in ${f.path}`;
  return `cannot write in ${f.path}: ${f.message}`;
}

function percent(part: number, whole: number): number {
  return whole > 0 ? (part * 100) / whole : 100;
}

function pct(p: number): string {
  return `${p < 10 ? p.toFixed(1) : Math.round(p)}%`;
}

/**
 * Why a reading is short at `factor` times the thresholds (1 to begin, CLEAR_FACTOR to end),
 * with the words for it; undefined when it is not. A filesystem with no space at all is short
 * whatever the thresholds.
 */
export function shortOf(r: DiskReading, t: DiskThresholds, factor = 1): { reason: DiskPressureReason; message: string } | undefined {
  const of = `${formatBytes(r.freeBytes)} free of ${formatBytes(r.totalBytes)}`;
  if (r.totalBytes > 0 && r.freeBytes === 0) return { reason: 'NO_SPACE', message: `no space left on device in ${r.path} (${of})` };
  if (r.freeBytes < t.freeBytes * factor) {
    return { reason: 'LOW_SPACE', message: `low disk space in ${r.path}: ${of}, below --disk_pressure_free_bytes=${formatBytesFlag(t.freeBytes)}` };
  }
  const freePct = percent(r.freeBytes, r.totalBytes);
  if (r.totalBytes > 0 && freePct < t.freePercent * factor) {
    return { reason: 'LOW_SPACE', message: `low disk space in ${r.path}: ${of} (${pct(freePct)}), below --disk_pressure_free_percent=${t.freePercent}` };
  }
  if (r.totalInodes > 0) {
    const inodesPct = percent(r.freeInodes, r.totalInodes);
    if (r.freeInodes === 0) return { reason: 'LOW_INODES', message: `no inodes left on device in ${r.path} (0 of ${r.totalInodes} free)` };
    if (inodesPct < t.freeInodesPercent * factor) {
      return { reason: 'LOW_INODES', message: `low on inodes in ${r.path}: ${r.freeInodes} of ${r.totalInodes} free (${pct(inodesPct)}), below --disk_pressure_free_inodes_percent=${t.freeInodesPercent}` };
    }
  }
  return undefined;
}

/** What one decision reads. */
export interface PressureInput {
  readonly readings: readonly DiskReading[];
  readonly thresholds: DiskThresholds;
  /** A write that failed for want of space or quota since the last decision. */
  readonly writeFailure?: WriteFailure | undefined;
  /**
   * Writes work: the checkpoint has no failed commit waiting to be tried again, and a probe
   * write succeeded. Read only to end pressure that a failed write began.
   */
  readonly writesHealthy: boolean;
  readonly nowMs: number;
}

/** The reading of the filesystem a path is on: the longest watched directory it lies under, else the first. */
function readingOf(readings: readonly DiskReading[], path: string): DiskReading | undefined {
  let best: DiskReading | undefined;
  for (const r of readings) if ((path === r.path || path.startsWith(`${r.path}/`)) && (best === undefined || r.path.length > best.path.length)) best = r;
  return best ?? readings[0];
}

function pressure(since: number, reason: DiskPressureReason, message: string, path: string, r: DiskReading | undefined): DiskPressure {
  return {
    since_ms: since,
    reason,
    message,
    path,
    free_bytes: r?.freeBytes ?? 0,
    total_bytes: r?.totalBytes ?? 0,
    free_inodes: r?.freeInodes ?? 0,
    total_inodes: r?.totalInodes ?? 0,
  };
}

/**
 * The agent's disk pressure after this decision; `current` itself (the same object) when
 * nothing about it changed, so the shell tells the master only of changes:
 * - a failed write begins it at once (or turns it into WRITE_FAILED), keeping its start;
 * - a reading short of its thresholds begins it; while it lasts its reason stays, except that
 *   low space that runs out becomes NO_SPACE, and WRITE_FAILED gives way to the reading's
 *   reason once writes work again;
 * - it ends once no reading is short at CLEAR_FACTOR times the thresholds and, after a failed
 *   write, writes work again.
 */
export function nextDiskPressure(current: DiskPressure | undefined, input: PressureInput): DiskPressure | undefined {
  const { readings, thresholds, writeFailure, writesHealthy, nowMs } = input;
  const since = current?.since_ms ?? nowMs;
  if (writeFailure !== undefined) {
    const message = describeWriteFailure(writeFailure);
    if (current?.reason === 'WRITE_FAILED' && current.message === message) return current;
    return pressure(since, 'WRITE_FAILED', message, writeFailure.path, readingOf(readings, writeFailure.path));
  }
  let short: { reading: DiskReading; reason: DiskPressureReason; message: string } | undefined;
  for (const r of readings) {
    const s = shortOf(r, thresholds);
    if (s !== undefined) {
      short = { reading: r, ...s };
      break;
    }
  }
  if (current === undefined) return short === undefined ? undefined : pressure(nowMs, short.reason, short.message, short.reading.path, short.reading);
  if (current.reason === 'WRITE_FAILED') {
    if (!writesHealthy) return current;
    if (short !== undefined) return pressure(since, short.reason, short.message, short.reading.path, short.reading);
  }
  // Low space that runs out altogether says so (once: it never goes back while the pressure lasts).
  if (short?.reason === 'NO_SPACE' && current.reason !== 'NO_SPACE') return pressure(since, short.reason, short.message, short.reading.path, short.reading);
  if (short !== undefined) return current;
  if (readings.some((r) => shortOf(r, thresholds, CLEAR_FACTOR) !== undefined)) return current;
  return undefined;
}

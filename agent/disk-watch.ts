/**
 * The disk watch: the shell around agent/disk-pressure.ts. It reads the free space and free
 * inodes of the agent's filesystems (statfs of the work dir, and of the sandboxes' directory,
 * which may be a filesystem of its own) every --disk_watch_interval on the injected clock, at
 * each launch (a fresh reading, shared by the launches of one turn of the event loop), and hears
 * of writes that failed for want of space (the checkpoint, a sandbox, a launcher's exit file):
 * those begin pressure at once. While pressure that a failed write began lasts and the space
 * looks back, it asks the checkpoint to try its failed commit again and writes a probe file
 * (quota does not show in statfs); pressure ends only once both work. Every change goes to
 * `onChange` (the agent logs it and tells the master).
 */

import { closeSync, fsyncSync, openSync, statfsSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { DiskPressure } from '../shared/protocol.js';
import { CLEAR_FACTOR, nextDiskPressure, shortOf, type DiskReading, type DiskThresholds, type WriteFailure } from './disk-pressure.js';

/** The probe written after a failed write, to see that writes work again: a few blocks. */
const PROBE_BYTES = 64 * 1024;
/** Its name, in each watched directory; escaped ids never start with a dot, so it is no task's. */
export const PROBE_FILE = '.drydock-disk-probe';

/** A filesystem's figures, or undefined when the directory cannot be read (it does not exist yet). */
export type StatFs = (path: string) => Omit<DiskReading, 'path'> | undefined;

/** statfs(2) as an unprivileged writer sees it: bavail, not bfree (ext4 keeps blocks back for root). */
export function statFs(path: string): Omit<DiskReading, 'path'> | undefined {
  try {
    const s = statfsSync(path);
    return { freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize, freeInodes: s.ffree, totalInodes: s.files };
  } catch {
    return undefined;
  }
}

/** Writes, syncs and removes a probe file in `dir`; the error if that failed. */
export function probeWrite(dir: string): NodeJS.ErrnoException | undefined {
  const file = join(dir, PROBE_FILE);
  let fd: number | undefined;
  try {
    fd = openSync(file, 'w', 0o600);
    const block = Buffer.alloc(PROBE_BYTES);
    let done = 0;
    while (done < block.length) done += writeSync(fd, block, done, block.length - done);
    fsyncSync(fd);
    return undefined;
  } catch (e) {
    return e as NodeJS.ErrnoException;
  } finally {
    if (fd !== undefined) closeSync(fd);
    try {
      unlinkSync(file);
    } catch {
      // Never made.
    }
  }
}

export interface DiskWatchOptions {
  /** --work_dir: the checkpoint (meta/) is in it. */
  workDir: string;
  /** Where sandboxes are made (<work_dir>/sandboxes): read too, when it exists. */
  sandboxesDir: string;
  thresholds: DiskThresholds;
  intervalMs: number;
  clock: Clock;
  /** The checkpoint: does it write (no failed commit waiting), and try its failed commit again now. */
  checkpoint: { readonly healthy: boolean; flush(): boolean };
  /** The pressure changed (began, changed its reason, ended): `previous` is what it was. */
  onChange: (pressure: DiskPressure | undefined, previous: DiskPressure | undefined) => void;
  /** For tests: the filesystem figures and the probe write. */
  statfs?: StatFs;
  probe?: (dir: string) => NodeJS.ErrnoException | undefined;
}

export class DiskWatch {
  readonly #o: DiskWatchOptions;
  #pressure: DiskPressure | undefined;
  #readings: DiskReading[] = [];
  /** A reading taken in this turn of the event loop: the launches of one turn share it. */
  #fresh = false;
  #timer: TimerHandle | undefined;
  /** Trying writes after a failed one: a failure heard meanwhile is the answer, not news. */
  #probing = false;
  #closed = false;

  constructor(o: DiskWatchOptions) {
    this.#o = o;
  }

  /** The pressure now (as of the last reading), undefined when there is none. */
  get pressure(): DiskPressure | undefined {
    return this.#pressure;
  }

  /** The last figures of each filesystem read (the metrics show them). */
  get readings(): readonly DiskReading[] {
    return this.#readings;
  }

  /** Reads now, then every interval. */
  start(): void {
    this.#check();
    this.#arm();
  }

  close(): void {
    this.#closed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
  }

  /** The pressure as of a reading of this turn of the event loop (taken now if there is none): what a launch asks. */
  current(): DiskPressure | undefined {
    if (!this.#fresh) this.#check();
    return this.#pressure;
  }

  /**
   * A write failed. For want of space or quota (ENOSPC, EDQUOT), or any failure with `always`
   * (the checkpoint's: an agent that cannot record what it does gets no new work), pressure
   * begins at once, naming `dir`.
   */
  writeFailed(dir: string, e: NodeJS.ErrnoException, always = false): void {
    if ((!always && e.code !== 'ENOSPC' && e.code !== 'EDQUOT') || this.#probing) return;
    this.#check({ path: dir, code: e.code, message: e.message });
  }

  /** Reads now (writes may work again). */
  recheck(): void {
    this.#check();
  }

  #arm(): void {
    if (this.#closed) return;
    this.#timer = this.#o.clock.setTimer(this.#o.intervalMs, () => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.#check();
      this.#arm();
    });
  }

  #read(): DiskReading[] {
    const statfs = this.#o.statfs ?? statFs;
    const out: DiskReading[] = [];
    for (const path of [this.#o.workDir, this.#o.sandboxesDir]) {
      const r = statfs(path);
      if (r !== undefined) out.push({ path, ...r });
    }
    return out;
  }

  #check(writeFailure?: WriteFailure): void {
    if (this.#closed) return;
    this.#readings = this.#read();
    if (!this.#fresh) {
      this.#fresh = true;
      this.#o.clock.immediate(() => {
        this.#fresh = false;
      });
    }
    const before = this.#pressure;
    const next = nextDiskPressure(before, {
      readings: this.#readings,
      thresholds: this.#o.thresholds,
      writeFailure,
      writesHealthy: writeFailure === undefined && before?.reason === 'WRITE_FAILED' ? this.#writesWork() : this.#o.checkpoint.healthy,
      nowMs: this.#o.clock.now(),
    });
    if (next === before) return;
    this.#pressure = next;
    this.#o.onChange(next, before);
  }

  /**
   * After a failed write, once the space looks back: the checkpoint's failed commit is tried
   * now, and a probe file is written in each watched directory (a quota shows only there).
   */
  #writesWork(): boolean {
    if (this.#readings.some((r) => shortOf(r, this.#o.thresholds, CLEAR_FACTOR) !== undefined)) return false;
    this.#probing = true;
    try {
      if (!this.#o.checkpoint.healthy && !this.#o.checkpoint.flush()) return false;
      const probe = this.#o.probe ?? probeWrite;
      for (const r of this.#readings) if (probe(r.path) !== undefined) return false;
      return true;
    } finally {
      this.#probing = false;
    }
  }
}

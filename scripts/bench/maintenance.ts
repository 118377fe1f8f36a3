/**
 * maintenance: UPDATE_MAINTENANCE_SCHEDULE with 10,000 machines in 1,000 windows (10 each,
 * hostnames `m-<k>`, IPs in 10.0.0.0/8: data only, nothing is sent there), from the request
 * sent to its 200, which the master answers only after the schedule is durable in the
 * registry. The floor is the durable part alone: the same 10,000 rows written to a fresh
 * SQLite file in one transaction by better-sqlite3 (WAL, synchronous=FULL), as the registry
 * is configured. Then the reads at that size: GET_MAINTENANCE_SCHEDULE and
 * GET_MAINTENANCE_STATUS, time and bytes.
 *
 * Each repeat posts a schedule with different start times, so every machine really changes; two
 * untimed updates (and floor transactions) come first.
 */

import { join } from 'node:path';
import Database from 'better-sqlite3';
import { stringifyJson } from '../../shared/json.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { makeTempDir, removeTempDir, startMaster } from './daemon.js';

export interface MaintenanceOptions {
  /** Machines in the schedule. Default 10,000. */
  machines: number;
  /** Machines per window. Default 10. */
  perWindow: number;
  /** Updates (and floor writes), median reported. Default 5. */
  repeats: number;
  /** Flags of the master (e.g. --etcd=... for the registry in etcd); called once per master. */
  masterFlags?: () => readonly string[];
  /** Run the master with `--cpu-prof --cpu-prof-dir=DIR` (one .cpuprofile per master). Default: no profile. */
  cpuProfDir?: string;
  /**
   * Every update names other machines (two sets taking turns), so the registry replaces every
   * machine's record. Default: the same machines each time, every window moved by an hour.
   */
  replace?: boolean;
}

/** Issue 15: the update, durable, at most this many times the raw SQLite transaction of the same rows. */
const GOAL_RATIO = 2;
const HOUR_NS = 3_600_000_000_000n;
/**
 * Untimed updates (and floor transactions) first: on a fresh master the first updates run
 * before the code is optimized and were half again as slow as the rest, which set the median.
 */
const WARMUPS = 2;

/** The IP of machine k: 10.x.y.z, k in the low 24 bits. Pure. */
export function machineIp(k: number): string {
  return `10.${(k >>> 16) & 255}.${(k >>> 8) & 255}.${k & 255}`;
}

/**
 * A schedule of `machines` machines `m-1`..`m-N` (`m-(1+offset)`.. with an offset), `perWindow`
 * per window, window w starting at start + w hours. Pure.
 */
export function benchSchedule(machines: number, perWindow: number, startNs: bigint, offset = 0): { windows: Array<{ machine_ids: Array<{ hostname: string; ip: string }>; unavailability: { start: { nanoseconds: bigint }; duration: { nanoseconds: bigint } } }> } {
  const windows = [];
  for (let first = 1, w = 0; first <= machines; first += perWindow, w++) {
    const ids = [];
    for (let k = first; k < first + perWindow && k <= machines; k++) ids.push({ hostname: `m-${k + offset}`, ip: machineIp(k + offset) });
    windows.push({ machine_ids: ids, unavailability: { start: { nanoseconds: startNs + BigInt(w) * HOUR_NS }, duration: { nanoseconds: HOUR_NS } } });
  }
  return { windows };
}

/** Median of a non-empty list. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** POST /api/v1 with a pre-serialized body; ms from send to the whole answer read, and its bytes. */
async function timedCall(url: string, body: string): Promise<{ ms: number; status: number; bytes: number; text: string }> {
  const t0 = performance.now();
  const res = await fetch(`${url}/api/v1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body,
    signal: AbortSignal.timeout(60_000),
  });
  const buf = Buffer.from(await res.arrayBuffer());
  return { ms: performance.now() - t0, status: res.status, bytes: buf.length, text: buf.toString('utf8', 0, Math.min(buf.length, 300)) };
}

/**
 * The floor: one transaction replacing the same rows in a fresh SQLite file, WAL and
 * synchronous=FULL (the registry's settings), so the commit is an fsync like the master's.
 */
function sqliteFloor(schedule: ReturnType<typeof benchSchedule>, repeats: number): number[] {
  const dir = makeTempDir('drydock-bench-sqlite-');
  const db = new Database(join(dir, 'floor.db'));
  try {
    db.pragma('journal_mode = WAL');
    db.pragma('synchronous = FULL');
    db.exec('CREATE TABLE machine (hostname TEXT NOT NULL, ip TEXT NOT NULL, window INTEGER NOT NULL, start_ns INTEGER NOT NULL, duration_ns INTEGER NOT NULL, PRIMARY KEY (hostname, ip))');
    const del = db.prepare('DELETE FROM machine');
    const ins = db.prepare('INSERT INTO machine (hostname, ip, window, start_ns, duration_ns) VALUES (?, ?, ?, ?, ?)');
    const samples: number[] = [];
    for (let r = -WARMUPS; r < repeats; r++) {
      const shift = BigInt(r) * HOUR_NS;
      const t0 = performance.now();
      db.transaction(() => {
        del.run();
        schedule.windows.forEach((w, i) => {
          for (const m of w.machine_ids) ins.run(m.hostname, m.ip, i, w.unavailability.start.nanoseconds + shift, w.unavailability.duration.nanoseconds);
        });
      })();
      if (r >= 0) samples.push(performance.now() - t0);
    }
    return samples;
  } finally {
    db.close();
    removeTempDir(dir);
  }
}

export async function runMaintenance(opts: MaintenanceOptions): Promise<BenchResult> {
  const name = 'maintenance';
  const rows: ResultRow[] = [];
  const windows = Math.ceil(opts.machines / opts.perWindow);
  // A day from now, whole seconds plus 1 ns: the exact digits must survive the round trip.
  const baseNs = (BigInt(Date.now()) / 1000n + 86_400n) * 1_000_000_000n + 1n;
  const floor = sqliteFloor(benchSchedule(opts.machines, opts.perWindow, baseNs), opts.repeats);
  const master = await startMaster(opts.masterFlags?.() ?? [], opts.cpuProfDir === undefined ? {} : { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${opts.cpuProfDir}`] });
  const context: Record<string, unknown> = { machines: opts.machines, windows, repeats: opts.repeats };
  try {
    const samples: number[] = [];
    let bodyBytes = 0;
    for (let r = -WARMUPS; r < opts.repeats; r++) {
      const schedule = benchSchedule(opts.machines, opts.perWindow, baseNs + BigInt(r) * HOUR_NS, opts.replace === true && r % 2 !== 0 ? opts.machines : 0);
      const body = stringifyJson({ type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule } });
      bodyBytes = Buffer.byteLength(body);
      const res = await timedCall(master.url, body);
      if (res.status !== 200) throw new Error(`UPDATE_MAINTENANCE_SCHEDULE answered ${res.status}: ${res.text}`);
      if (r >= 0) samples.push(res.ms);
    }
    const med = median(samples);
    rows.push({
      benchmark: name,
      metric: `UPDATE_MAINTENANCE_SCHEDULE ${opts.machines.toLocaleString('en-US')} machines / ${windows.toLocaleString('en-US')} windows${opts.replace === true ? ', every machine replaced' : ''}, to 200 (median of ${opts.repeats})`,
      value: med,
      unit: 'ms',
      ...against('raw SQLite txn, same rows (WAL, FULL)', median(floor), med),
      goal: { text: `<= ${GOAL_RATIO}x`, pass: med <= GOAL_RATIO * median(floor) },
      note: `request ${(bodyBytes / 1024).toFixed(0)} kB; first ${samples[0]?.toFixed(0)} ms, max ${Math.max(...samples).toFixed(0)} ms`,
    });

    for (const type of ['GET_MAINTENANCE_SCHEDULE', 'GET_MAINTENANCE_STATUS'] as const) {
      const got: Array<{ ms: number; bytes: number }> = [];
      for (let r = 0; r < opts.repeats; r++) {
        const res = await timedCall(master.url, JSON.stringify({ type }));
        if (res.status !== 200) throw new Error(`${type} answered ${res.status}: ${res.text}`);
        got.push(res);
      }
      const last = got[got.length - 1]!;
      rows.push({
        benchmark: name,
        metric: `${type} at ${opts.machines.toLocaleString('en-US')} machines (median of ${opts.repeats})`,
        value: median(got.map((g) => g.ms)),
        unit: 'ms',
        note: `${(last.bytes / 1024).toFixed(0)} kB`,
      });
    }
    // The exact start of the last window posted must come back to the digit.
    const check = await fetch(`${master.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_MAINTENANCE_SCHEDULE"}' });
    const text = await check.text();
    const lastStart = (baseNs + BigInt(opts.repeats - 1) * HOUR_NS + BigInt(windows - 1) * HOUR_NS).toString();
    const exact = text.includes(`"nanoseconds":${lastStart}`);
    context['exactStartRoundTrip'] = exact;
    const readRow = rows.find((r) => r.metric.startsWith('GET_MAINTENANCE_SCHEDULE'));
    if (readRow !== undefined) readRow.note = `${readRow.note ?? ''}; int64 starts round-trip to the digit: ${exact ? 'yes' : 'NO'}`;
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message, context };
  } finally {
    await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
  }
}

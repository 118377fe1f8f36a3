/**
 * The disk watch (agent/disk-watch.ts) with fake filesystems, a fake checkpoint and a
 * ManualClock: it reads on its interval, once per turn for launches, begins pressure at once on
 * a failed write, tries the checkpoint and a probe write before it lets a write failure go, and
 * tells of changes only.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ManualClock } from '../../shared/clock.js';
import type { DiskPressure } from '../../shared/protocol.js';
import { DiskWatch, type StatFs } from '../../agent/disk-watch.js';

const MB = 2 ** 20;
const W = '/w';

/** A world: free MB per directory (a missing one cannot be read), a checkpoint that fails while told to, probes that fail while told to. */
function world(intervalMs = 1_000) {
  const clock = new ManualClock(1_000_000);
  const free = new Map<string, number>([[W, 500]]);
  let reads = 0;
  const statfs: StatFs = (path) => {
    if (path === W) reads++;
    const mb = free.get(path);
    return mb === undefined ? undefined : { freeBytes: mb * MB, totalBytes: 1024 * MB, freeInodes: 1000, totalInodes: 2000 };
  };
  const checkpoint = { failing: false, flushes: 0, get healthy() { return !this.failing; }, flush() { this.flushes++; return !this.failing; } };
  const probe = { failing: false, dirs: [] as string[] };
  const changes: Array<DiskPressure | undefined> = [];
  const watch = new DiskWatch({
    workDir: W,
    sandboxesDir: `${W}/sandboxes`,
    thresholds: { freeBytes: 100 * MB, freePercent: 0, freeInodesPercent: 0 },
    intervalMs,
    clock,
    checkpoint,
    statfs,
    probe: (dir) => {
      probe.dirs.push(dir);
      return probe.failing ? Object.assign(new Error('EDQUOT: disk quota exceeded'), { code: 'EDQUOT' }) : undefined;
    },
    onChange: (p) => changes.push(p),
  });
  return { clock, free, reads: () => reads, checkpoint, probe, changes, watch };
}

const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

test('the disk watch reads every interval, tells of a change once, and ends pressure above the clear level', () => {
  const w = world();
  w.watch.start();
  assert.equal(w.changes.length, 0, 'plenty of space: nothing to tell');
  assert.deepEqual(w.watch.readings.map((r) => r.path), [W], 'the sandboxes directory does not exist yet');
  w.free.set(`${W}/sandboxes`, 50);
  w.clock.advance(1_000);
  assert.equal(w.changes.length, 1);
  assert.equal(w.changes[0]?.reason, 'LOW_SPACE');
  assert.equal(w.changes[0]?.path, `${W}/sandboxes`);
  assert.equal(w.changes[0]?.since_ms, 1_001_000);
  w.clock.advance(3_000);
  assert.equal(w.changes.length, 1, 'lasting pressure is not news');
  w.free.set(`${W}/sandboxes`, 110);
  w.clock.advance(1_000);
  assert.equal(w.changes.length, 1, 'above the threshold, below the clear level: lasts');
  w.free.set(`${W}/sandboxes`, 200);
  w.clock.advance(1_000);
  assert.deepEqual(w.changes.at(-1), undefined);
  assert.equal(w.changes.length, 2);
  assert.equal(w.watch.pressure, undefined);
  w.watch.close();
  const reads = w.reads();
  w.clock.advance(10_000);
  assert.equal(w.reads(), reads, 'closed: no more reads');
});

test('launches read once per turn of the event loop, and a fresh turn reads again', async () => {
  const w = world(60_000);
  w.watch.start();
  await nextTurn();
  const base = w.reads();
  assert.equal(w.watch.current(), undefined);
  w.free.set(W, 0);
  assert.equal(w.watch.current(), undefined, 'the same turn: the same reading');
  assert.equal(w.reads(), base + 1);
  await nextTurn();
  assert.equal(w.watch.current()?.reason, 'NO_SPACE', 'a new turn reads again');
  assert.equal(w.changes.length, 1);
});

test('a failed write begins pressure at once; it ends only once the checkpoint commits and a probe write works, with space back', () => {
  const w = world();
  w.watch.start();
  w.watch.writeFailed(`${W}/meta`, Object.assign(new Error('EIO: i/o error'), { code: 'EIO' }));
  assert.equal(w.changes.length, 0, 'not a space error: not the watch\'s to judge');
  w.checkpoint.failing = true;
  w.watch.writeFailed(`${W}/meta`, Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' }));
  assert.equal(w.changes.length, 1);
  assert.equal(w.changes[0]?.reason, 'WRITE_FAILED');
  assert.equal(w.changes[0]?.message, `no space left on device in ${W}/meta`);
  // The checkpoint's own failures count whatever their errno (`always`).
  w.watch.writeFailed(`${W}/meta`, Object.assign(new Error('EIO: i/o error, write'), { code: 'EIO' }), true);
  assert.equal(w.changes.at(-1)?.message, `cannot write in ${W}/meta: EIO: i/o error, write`);
  const flushes = w.checkpoint.flushes;
  w.clock.advance(1_000);
  assert.equal(w.checkpoint.flushes, flushes + 1, 'space looks fine: the failed commit is tried now');
  assert.equal(w.watch.pressure?.reason, 'WRITE_FAILED', 'it still fails: pressure lasts');
  assert.deepEqual(w.probe.dirs, [], 'no probe while the checkpoint fails');
  w.checkpoint.failing = false;
  w.probe.failing = true;
  w.clock.advance(1_000);
  assert.deepEqual(w.probe.dirs, [W]);
  assert.equal(w.watch.pressure?.reason, 'WRITE_FAILED', 'a probe write fails (a quota): pressure lasts');
  w.probe.failing = false;
  w.clock.advance(1_000);
  assert.equal(w.watch.pressure, undefined);
  assert.equal(w.changes.at(-1), undefined);
});

test('after a failed write, no probe and no retry while the space itself is short', () => {
  const w = world();
  w.watch.start();
  w.checkpoint.failing = true;
  w.watch.writeFailed(W, Object.assign(new Error('ENOSPC'), { code: 'ENOSPC' }));
  w.free.set(W, 0);
  const flushes = w.checkpoint.flushes;
  w.clock.advance(5_000);
  assert.equal(w.checkpoint.flushes, flushes);
  assert.deepEqual(w.probe.dirs, []);
  assert.equal(w.watch.pressure?.reason, 'WRITE_FAILED');
});

/**
 * The agent's disk pressure decision (agent/disk-pressure.ts), pure: thresholds on free bytes,
 * free share and free inodes, a full filesystem whatever the thresholds, failed writes, the
 * hysteresis that keeps a disk at its threshold from flapping, and the words that name the cause;
 * and the byte sizes of the flags (shared/bytes.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { CLEAR_FACTOR, describeWriteFailure, isSpaceError, nextDiskPressure, shortOf, type DiskReading, type DiskThresholds, type PressureInput } from '../../agent/disk-pressure.js';
import { formatBytes, formatBytesFlag, parseBytes } from '../../shared/bytes.js';
import type { DiskPressure } from '../../shared/protocol.js';

const MB = 2 ** 20;
const T: DiskThresholds = { freeBytes: 100 * MB, freePercent: 5, freeInodesPercent: 5 };
const W = '/var/lib/drydock/agent';

/** A work dir filesystem of 1 GB (5% of it is below the 100 MB threshold) and 1M inodes with `freeMb` and `freeInodes` free. */
function reading(freeMb: number, freeInodes = 500_000, o: Partial<DiskReading> = {}): DiskReading {
  return { path: W, freeBytes: freeMb * MB, totalBytes: 1024 * MB, freeInodes, totalInodes: 1_000_000, ...o };
}

function input(readings: DiskReading[], o: Partial<PressureInput> = {}): PressureInput {
  return { readings, thresholds: T, writesHealthy: true, nowMs: 5_000, ...o };
}

test('shortOf: each threshold, a full filesystem whatever the thresholds, inodes only where the filesystem counts them', () => {
  const off: DiskThresholds = { freeBytes: 0, freePercent: 0, freeInodesPercent: 0 };
  const cases: Array<[string, DiskReading, DiskThresholds, string | undefined, RegExp | undefined]> = [
    ['plenty', reading(5_000), T, undefined, undefined],
    ['below the bytes threshold', reading(99), T, 'LOW_SPACE', /^low disk space in \/var\/lib\/drydock\/agent: 99\.0 MB free of 1\.0 GB, below --disk_pressure_free_bytes=100MB$/],
    ['below the percent threshold, above the bytes one', reading(400, 500_000, { totalBytes: 10_240 * MB }), T, 'LOW_SPACE', /400\.0 MB free of 10\.0 GB \(3\.9%\), below --disk_pressure_free_percent=5$/],
    ['full', reading(0), T, 'NO_SPACE', /^no space left on device in \/var\/lib\/drydock\/agent \(0 B free of 1\.0 GB\)$/],
    ['full with every threshold off', reading(0), off, 'NO_SPACE', /no space left on device/],
    ['low on inodes', reading(5_000, 40_000), T, 'LOW_INODES', /^low on inodes in \/var\/lib\/drydock\/agent: 40000 of 1000000 free \(4\.0%\), below --disk_pressure_free_inodes_percent=5$/],
    ['no inodes left', reading(5_000, 0), off, 'LOW_INODES', /^no inodes left on device in /],
    ['no inode count (btrfs): inodes not judged', reading(5_000, 0, { totalInodes: 0 }), T, undefined, undefined],
    ['a filesystem that reports no size: only the bytes threshold', { path: W, freeBytes: 0, totalBytes: 0, freeInodes: 0, totalInodes: 0 }, off, undefined, undefined],
    ['every threshold off, nearly full', reading(1), off, undefined, undefined],
  ];
  for (const [name, r, t, reason, message] of cases) {
    const s = shortOf(r, t);
    assert.equal(s?.reason, reason, name);
    if (message !== undefined) assert.match(s?.message ?? '', message, name);
  }
  // The clear level is CLEAR_FACTOR times each threshold.
  assert.equal(shortOf(reading(110), T), undefined);
  assert.equal(shortOf(reading(110), T, CLEAR_FACTOR)?.reason, 'LOW_SPACE');
  assert.equal(shortOf(reading(5_000, 60_000), T, CLEAR_FACTOR)?.reason, 'LOW_INODES');
});

test('nextDiskPressure: begins, lasts, escalates, clears with hysteresis; a failed write begins it at once and holds it until writes work', () => {
  const low: DiskPressure = { since_ms: 1_000, reason: 'LOW_SPACE', message: 'low disk space in /w: ...', path: W, free_bytes: 99 * MB, total_bytes: 1024 * MB, free_inodes: 500_000, total_inodes: 1_000_000 };
  const failed: DiskPressure = { ...low, reason: 'WRITE_FAILED', message: `no space left on device in ${W}/meta` };
  const enospc = { path: `${W}/meta`, code: 'ENOSPC', message: 'ENOSPC: no space left on device, write' };
  type Want = 'same' | undefined | Partial<DiskPressure>;
  const cases: Array<[string, DiskPressure | undefined, PressureInput, Want]> = [
    ['nothing, plenty of space', undefined, input([reading(5_000)]), undefined],
    ['begins below a threshold, at now', undefined, input([reading(50)]), { since_ms: 5_000, reason: 'LOW_SPACE', path: W, free_bytes: 50 * MB }],
    ['begins on the sandboxes filesystem', undefined, input([reading(5_000), reading(0, 10, { path: `${W}/sandboxes` })]), { reason: 'NO_SPACE', path: `${W}/sandboxes`, message: `no space left on device in ${W}/sandboxes (0 B free of 1.0 GB)` }],
    ['lasts: the same object (nothing to tell the master)', low, input([reading(60)]), 'same'],
    ['above the threshold, below the clear level: lasts (hysteresis)', low, input([reading(120)]), 'same'],
    ['above the clear level: ends', low, input([reading(126)]), undefined],
    ['low space runs out: NO_SPACE, since kept', low, input([reading(0)]), { since_ms: 1_000, reason: 'NO_SPACE' }],
    ['a failed write begins it at once, whatever the readings', undefined, input([reading(5_000)], { writeFailure: enospc }), { since_ms: 5_000, reason: 'WRITE_FAILED', message: `no space left on device in ${W}/meta`, path: `${W}/meta`, free_bytes: 5_000 * MB }],
    ['a failed write while low: WRITE_FAILED, since kept', low, input([reading(60)], { writeFailure: enospc }), { since_ms: 1_000, reason: 'WRITE_FAILED' }],
    ['the same failure again: the same object', failed, input([reading(60)], { writeFailure: enospc }), 'same'],
    ['after a failed write: space back, writes not yet working: lasts', failed, input([reading(5_000)], { writesHealthy: false }), 'same'],
    ['after a failed write: space back and writes work: ends', failed, input([reading(5_000)]), undefined],
    ['after a failed write: writes work, still short: the reading\'s reason', failed, input([reading(50)]), { since_ms: 1_000, reason: 'LOW_SPACE' }],
    ['after a failed write: writes work, between threshold and clear level: lasts', failed, input([reading(110)]), 'same'],
  ];
  for (const [name, current, i, want] of cases) {
    const got = nextDiskPressure(current, i);
    if (want === 'same') assert.equal(got, current, name);
    else if (want === undefined) assert.equal(got, undefined, name);
    else {
      assert.ok(got !== undefined && got !== current, name);
      for (const [k, v] of Object.entries(want)) assert.equal(got[k as keyof DiskPressure], v, `${name}: ${k}`);
    }
  }
});

test('a disk hovering at its threshold does not flap: one start, one end', () => {
  let p: DiskPressure | undefined;
  let changes = 0;
  const free = [200, 150, 99, 101, 99, 104, 110, 99, 120, 124, 126, 124, 101, 100, 126];
  for (const [i, mb] of free.entries()) {
    const next = nextDiskPressure(p, input([reading(mb)], { nowMs: i }));
    if (next !== p) changes++;
    p = next;
  }
  // Begins at 99 MB, ends at the first 126 MB; the dips back to 101-124 after it do not begin it again.
  assert.equal(changes, 2);
  assert.equal(p, undefined);
});

test('write failures: which errors are want of space, and their words', () => {
  assert.equal(isSpaceError('ENOSPC'), true);
  assert.equal(isSpaceError('EDQUOT'), true);
  assert.equal(isSpaceError('EIO'), false);
  assert.equal(isSpaceError(undefined), false);
  assert.equal(describeWriteFailure({ path: '/w/meta', code: 'ENOSPC', message: 'x' }), 'no space left on device in /w/meta');
  assert.equal(describeWriteFailure({ path: '/w/meta', code: 'EDQUOT', message: 'x' }), 'disk quota exceeded in /w/meta');
  assert.equal(describeWriteFailure({ path: '/w/meta', code: 'EIO', message: 'EIO: i/o error, write' }), 'cannot write in /w/meta: EIO: i/o error, write');
});

test('byte sizes: flags as Mesos writes them, sizes for people', () => {
  const ok: Array<[string, number]> = [['100MB', 100 * MB], ['1GB', 2 ** 30], ['512KB', 512 * 1024], ['0B', 0], ['1.5MB', 1.5 * MB], [' 2tb ', 2 * 2 ** 40]];
  for (const [text, want] of ok) assert.deepEqual(parseBytes(text), { ok: true, value: want }, text);
  for (const bad of ['100', 'MB', '-1MB', '1 PB', '', '1e3MB']) assert.equal(parseBytes(bad).ok, false, bad);
  assert.equal(formatBytesFlag(100 * MB), '100MB');
  assert.equal(formatBytesFlag(1536 * 1024), '1536KB');
  assert.equal(formatBytesFlag(0), '0B');
  assert.equal(formatBytesFlag(1000), '1000B');
  assert.equal(formatBytes(0), '0 B');
  assert.equal(formatBytes(812), '812 B');
  assert.equal(formatBytes(4 * MB - 100 * 1024), '3.9 MB');
});

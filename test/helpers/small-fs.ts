/**
 * A small filesystem a test mounts to run out of disk for real: a tmpfs of a few MB, as root.
 * It is unmounted (lazily, should a process still hold a file in it) and its mount point removed
 * when the test ends, on every path, after whatever the test started in it has stopped: the
 * test hands its daemons' cleanups to `cleanup` (a stack run latest first). Where it cannot be
 * mounted (not root, no mount) the test is skipped with the reason; under CI=true that is an
 * error.
 */

import { execFileSync, spawnSync } from 'node:child_process';
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestContext } from 'node:test';

type Cleanup = Pick<TestContext, 'after'>;

/** Why a tmpfs cannot be mounted here, or undefined; under CI=true a reason is an error. */
export function smallFsSkip(): string | undefined {
  let why: string | undefined;
  if (process.getuid?.() !== 0) why = 'not root: cannot mount a small filesystem';
  else {
    const probe = mkdtempSync(join(tmpdir(), 'drydock-smallfs-probe-'));
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', probe], { encoding: 'utf8' });
    if (r.status !== 0) why = `cannot mount a tmpfs (${(r.stderr || r.error?.message || `mount exited ${r.status}`).trim()})`;
    else spawnSync('umount', [probe]);
    rmSync(probe, { recursive: true, force: true });
  }
  if (why === undefined) return undefined;
  if (process.env['CI'] === 'true') throw new Error(`${why}: disk pressure tests must run under CI=true (.ci/run runs as root)`);
  return `${why}: disk pressure tests skipped`;
}

/** A mounted small filesystem, and what the test started in it, stopped before it is unmounted. */
export interface SmallFs {
  readonly dir: string;
  /** Pass to startAgent/startMaster as their `t`: their cleanups run (latest first) before the unmount. */
  readonly cleanup: Cleanup;
  /** Fills it to the last page: a filler file written until the filesystem says ENOSPC. */
  fill(): void;
  /** Frees `bytes` of the filler (all of it when not given). */
  free(bytes?: number): void;
}

/** Mounts a tmpfs of `size` (mount's syntax: `4m`) for the test. */
export function mountSmallFs(t: Cleanup, size = '4m'): SmallFs {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-smallfs-'));
  const stack: Array<() => unknown> = [];
  t.after(async () => {
    for (const fn of stack.reverse()) {
      try {
        await fn();
      } catch (e) {
        process.stderr.write(`small filesystem cleanup: ${(e as Error).message}\n`);
      }
    }
    // Lazily: a launcher still holding a file (a task that outlived its agent) does not keep it mounted.
    if (spawnSync('umount', [dir]).status !== 0) spawnSync('umount', ['-l', dir]);
    rmSync(dir, { recursive: true, force: true });
  });
  execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
  const filler = join(dir, 'filler');
  return {
    dir,
    cleanup: { after: (fn: () => unknown) => void stack.push(fn) } as Cleanup,
    fill: () => {
      const fd = openSync(filler, 'a');
      try {
        const page = Buffer.alloc(4096, 1);
        for (;;) writeSync(fd, page);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e;
      } finally {
        closeSync(fd);
      }
    },
    free: (bytes?: number) => {
      if (bytes === undefined) return rmSync(filler, { force: true });
      const fd = openSync(filler, 'r+');
      try {
        ftruncateSync(fd, Math.max(0, statSync(filler).size - bytes));
      } finally {
        closeSync(fd);
      }
    },
  };
}

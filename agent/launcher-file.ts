/**
 * Which launcher binary (drydock-launch, agent/launcher.c) the agent runs its tasks with:
 * `--launcher`, else the copy the single executable carries (`npm run package` builds
 * drydock-agent as one file, the launcher inside it as an asset), else the one beside the
 * module (dist/agent/drydock-launch, launcher.ts `launcherPath`).
 *
 * The carried copy is written into the work dir at start, under a path named by a hash of its
 * bytes, `<work_dir>/launcher/<sha256, 16 hex>/drydock-launch`: an upgraded agent whose launcher
 * differs writes a new file beside the old one and never over the file that the launchers of
 * running tasks were started from. The file itself keeps the name drydock-launch, by which a
 * restarted agent finds live launchers in /proc (launcher.ts `findLauncher`).
 */

import { createHash } from 'node:crypto';
import { chmodSync, closeSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import * as sea from 'node:sea';

/** The key of the launcher among the single executable's assets (scripts/package/sea.ts). */
export const LAUNCHER_ASSET = 'drydock-launch';

/** Where the launcher comes from, for the start log line. */
export type LauncherSource = 'flag' | 'carried' | 'module';

export type LauncherChoice = { ok: true; path: string | undefined; source: LauncherSource } | { ok: false; error: string };

/**
 * The launcher to run: `flag` (--launcher) as given, or the carried one written under
 * `workDir`, or undefined (the agent's default, beside the module) when the agent does not run
 * as a single executable.
 */
export function chooseLauncher(flag: string | undefined, workDir: string): LauncherChoice {
  if (flag !== undefined) return { ok: true, path: flag, source: 'flag' };
  if (!sea.isSea()) return { ok: true, path: undefined, source: 'module' };
  try {
    return { ok: true, path: writeCarriedLauncher(Buffer.from(sea.getAsset(LAUNCHER_ASSET)), workDir), source: 'carried' };
  } catch (e) {
    return { ok: false, error: `cannot write the launcher into ${join(workDir, 'launcher')}: ${(e as Error).message} (or give --launcher=FILE)` };
  }
}

/**
 * Writes `bytes` as `<workDir>/launcher/<hash>/drydock-launch`, mode 755, unless that file is
 * already there with these bytes; returns its path. Atomic: written under a temporary name,
 * fsynced, made executable, then renamed, so the path is either absent or whole (a crash
 * between leaves a temporary file, which the next start removes). Directories of other hashes
 * are removed: Linux keeps a running program's file until it exits, so the launchers of tasks
 * started by an older agent keep running from theirs.
 */
export function writeCarriedLauncher(bytes: Uint8Array, workDir: string): string {
  const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 16);
  const root = join(workDir, 'launcher');
  const dir = join(root, hash);
  const path = join(dir, 'drydock-launch');
  if (!alreadyThere(path, bytes)) {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    const tmp = join(dir, `.drydock-launch.${process.pid}.tmp`);
    const fd = openSync(tmp, 'w', 0o700);
    try {
      for (let off = 0; off < bytes.length; ) off += writeSync(fd, bytes, off);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    chmodSync(tmp, 0o755);
    renameSync(tmp, path);
    // The rename is durable once the directory is.
    const d = openSync(dir, 'r');
    try {
      fsyncSync(d);
    } finally {
      closeSync(d);
    }
  }
  for (const name of readdirSync(root)) if (name !== hash) rmSync(join(root, name), { recursive: true, force: true });
  for (const name of readdirSync(dir)) if (name !== 'drydock-launch') rmSync(join(dir, name), { force: true });
  return path;
}

/** Is `path` an executable file with exactly `bytes`? */
function alreadyThere(path: string, bytes: Uint8Array): boolean {
  try {
    const st = statSync(path);
    if (!st.isFile() || (st.mode & 0o777) !== 0o755 || st.size !== bytes.length) return false;
    return readFileSync(path).equals(bytes);
  } catch {
    return false;
  }
}

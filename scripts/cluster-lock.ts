/**
 * One local cluster per work dir and per master address: the lock `npm start` takes before it
 * writes or prints anything, so that a second start refuses without touching the running
 * cluster (its registry, hooks file, secrets and logs), and says which process holds it.
 *
 * The lock is a Unix socket in Linux's abstract namespace (a name, no file) that the cluster
 * process listens on. Binding a name is atomic, and the kernel frees it when the process ends,
 * however it ends: no stale lock after a SIGKILL, no pid that may have been reused since (the
 * weak points of a pid file). A second start that finds a name taken connects to it and is told
 * the holder's pid and work dir. `<work_dir>/cluster.pid` is for people and scripts
 * (`kill -USR2 $(cat .drydock/cluster.pid)`), not part of the lock.
 */

import { createHash } from 'node:crypto';
import { existsSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { join } from 'node:path';

/** The cluster that holds a lock, as it answers a second start. */
export interface ClusterHolder {
  readonly pid: number;
  readonly workDir: string;
}

/** What a lock guards: a work dir (by its real path) or a master's address. */
export type LockSubject = { readonly kind: 'dir'; readonly path: string } | { readonly kind: 'address'; readonly address: string };

/** The abstract socket name of a subject (at most 107 bytes: a work dir goes by its hash). Pure. */
export function lockName(s: LockSubject): string {
  if (s.kind === 'address') return `\0drydock-cluster/address/${s.address}`;
  return `\0drydock-cluster/dir/${createHash('sha256').update(s.path).digest('hex').slice(0, 32)}`;
}

/** The line a second start prints for a subject already held (by `holder`, when it said who it is). Pure. */
export function refusal(s: LockSubject, holder: ClusterHolder | undefined, workDir: string): string {
  const held = s.kind === 'dir' ? `runs in ${s.path}` : `serves ${s.address}`;
  if (holder === undefined) {
    return `cluster: a local cluster already ${held} (it did not say its pid; see ${join(workDir, 'cluster.pid')}). Nothing was started.`;
  }
  const other = s.kind === 'dir' ? 'start another one with --work_dir=DIR and other ports (--port, --agent_port)' : 'start this one with another --port';
  return (
    `cluster: a local cluster already ${held} (pid ${holder.pid}, work dir ${holder.workDir}). Nothing was started.\n` +
    `Stop it with Ctrl-C in its terminal or: kill ${holder.pid}; or ${other}.`
  );
}

/** A work dir's path as the lock knows it: its real path once it exists (a symlink is the same cluster). */
export function lockPath(workDir: string): string {
  try {
    return realpathSync(workDir);
  } catch {
    return workDir;
  }
}

/** The locks this process holds. */
export interface ClusterLock {
  /** Writes <work_dir>/cluster.pid (the work dir must exist). */
  writePidFile(): void;
  /** Removes cluster.pid if it is still this process's; the names go with the process. Synchronous: safe in an 'exit' handler. */
  release(): void;
}

/** Either every lock is taken, or the first subject already held and who holds it. */
export type LockResult = { readonly ok: true; readonly lock: ClusterLock } | { readonly ok: false; readonly subject: LockSubject; readonly holder: ClusterHolder | undefined };

/** Listens on a name; false when another process has it. */
function listen(server: Server, name: string): Promise<boolean> {
  return new Promise((resolve, reject) => {
    const onError = (e: NodeJS.ErrnoException): void => {
      server.off('listening', onListening);
      if (e.code === 'EADDRINUSE') resolve(false);
      else reject(e);
    };
    const onListening = (): void => {
      server.off('error', onError);
      resolve(true);
    };
    server.once('error', onError);
    server.once('listening', onListening);
    server.listen(name);
  });
}

/** Asks the holder of a name who it is; undefined when it does not answer within 2 s or makes no sense. */
function askHolder(name: string): Promise<ClusterHolder | undefined> {
  return new Promise((resolve) => {
    let text = '';
    const socket = connect(name);
    const done = (h: ClusterHolder | undefined): void => {
      clearTimeout(timer);
      socket.destroy();
      resolve(h);
    };
    const timer = setTimeout(() => done(undefined), 2_000);
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => {
      text += c;
      if (text.length > 4096) done(undefined);
    });
    socket.on('error', () => done(undefined));
    socket.on('end', () => {
      try {
        const j = JSON.parse(text) as { pid?: unknown; work_dir?: unknown };
        done(Number.isInteger(j.pid) && typeof j.work_dir === 'string' ? { pid: j.pid as number, workDir: j.work_dir } : undefined);
      } catch {
        done(undefined);
      }
    });
  });
}

/**
 * Takes the lock of every subject, in order (the work dir first); on the first one held, lets go
 * of those taken and says who holds it. The servers answer a connection with this process's pid
 * and work dir, and do not keep the process alive.
 */
export async function takeClusterLock(subjects: readonly LockSubject[], me: ClusterHolder): Promise<LockResult> {
  const servers: Server[] = [];
  const answer = `${JSON.stringify({ pid: me.pid, work_dir: me.workDir })}\n`;
  for (const subject of subjects) {
    const server = createServer((socket) => {
      socket.on('error', () => {});
      socket.end(answer);
    });
    const name = lockName(subject);
    if (!(await listen(server, name))) {
      for (const s of servers) s.close();
      return { ok: false, subject, holder: await askHolder(name) };
    }
    server.unref();
    servers.push(server);
  }
  const pidFile = join(me.workDir, 'cluster.pid');
  return {
    ok: true,
    lock: {
      writePidFile: () => writeFileSync(pidFile, `${me.pid}\n`),
      release: () => {
        try {
          if (existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() === String(me.pid)) rmSync(pidFile, { force: true });
        } catch {
          // Nothing to remove.
        }
        for (const s of servers) s.close();
      },
    },
  };
}

/**
 * A throwaway etcd (Debian's etcd-server) for tests: one member on free loopback ports, its
 * data in a temp dir (on /dev/shm when there is one), fast raft timings (1 s leases are
 * granted as 1 s), stopped by its PID and its dir removed when the test ends. Outside CI a
 * machine without etcd skips with the reason; under CI=true a missing etcd fails.
 */

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Etcd3 } from 'etcd3';
import { removeDir } from './daemons.js';
import { freePort } from './ports.js';

export const ETCD_BIN = '/usr/bin/etcd';

/** Why etcd tests cannot run here, or undefined when they can (under CI=true a missing etcd is an error, not a skip). */
export function etcdMissing(): string | undefined {
  if (existsSync(ETCD_BIN)) return undefined;
  if (process.env['CI'] === 'true') throw new Error(`${ETCD_BIN} is missing: .ci/run installs etcd-server`);
  return `${ETCD_BIN} is not installed (apt-get install etcd-server): etcd tests skipped`;
}

export interface EtcdHandle {
  /** `127.0.0.1:port`, the client endpoint. */
  endpoint: string;
  pid: number;
  /** A client of this etcd, closed by stop(). */
  client(): Etcd3;
  stop(): Promise<void>;
}

/** Starts one etcd member; `after` stops it and removes its data. */
export async function startEtcd(t: { after(fn: () => unknown): void }): Promise<EtcdHandle> {
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'drydock-etcd-'));
  const [client, peer] = [await freePort(), await freePort()];
  const child = spawn(
    ETCD_BIN,
    [
      '--name', 't', '--data-dir', dir,
      '--listen-client-urls', `http://127.0.0.1:${client}`, '--advertise-client-urls', `http://127.0.0.1:${client}`,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `t=http://127.0.0.1:${peer}`, '--initial-cluster-state', 'new',
      '--heartbeat-interval', '10', '--election-timeout', '100', '--logger', 'zap', '--log-level', 'error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const clients: Etcd3[] = [];
  const stop = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.close();
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    removeDir(dir);
  };
  t.after(stop);
  // Ready once it answers /health (bounded: 10 s, 200 tries).
  for (let i = 0; i < 200; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${client}/health`, { signal: AbortSignal.timeout(500) });
      if (r.ok && ((await r.json()) as { health?: string }).health === 'true') break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null) throw new Error(`etcd exited: ${stderr}`);
    if (i === 199) throw new Error(`etcd did not become healthy in 10 s: ${stderr}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  return {
    endpoint: `127.0.0.1:${client}`,
    pid: child.pid ?? -1,
    client() {
      const c = new Etcd3({ hosts: [`http://127.0.0.1:${client}`] });
      clients.push(c);
      return c;
    },
    stop,
  };
}

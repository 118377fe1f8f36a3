/**
 * `npm start` in a test: the local cluster (dist/scripts/cluster.js) as a child process, its
 * output collected, the daemons of its banner stopped by their PIDs when the test ends (and the
 * cluster itself, if it is still running).
 */

import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import type { TestContext } from 'node:test';
import { alive, eventually, ROOT } from './daemons.js';

/** Every DRYDOCK_ variable the CLI and the cluster read, unset: the test's own environment must not leak in. */
export const CLEAN_CLIENT_ENV: Readonly<Record<string, undefined>> = {
  DRYDOCK_CREDENTIALS: undefined,
  DRYDOCK_PRINCIPAL: undefined,
  DRYDOCK_SECRET_FILE: undefined,
  DRYDOCK_TLS_CA_FILE: undefined,
  DRYDOCK_TLS_CERT_FILE: undefined,
  DRYDOCK_TLS_KEY_FILE: undefined,
  DRYDOCK_ETCD_CA_FILE: undefined,
  DRYDOCK_ETCD_CERT_FILE: undefined,
  DRYDOCK_ETCD_KEY_FILE: undefined,
  DRYDOCK_ETCD_USER: undefined,
  DRYDOCK_ETCD_PASSWORD_FILE: undefined,
  DRYDOCK_SCHEDULER: undefined,
  DRYDOCK_MASTER: undefined,
};

export interface ClusterRun {
  readonly child: ChildProcess;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** The daemons' PIDs from the banner, once it is up. */
  readonly pids: number[];
  /** Resolves with its exit code. */
  readonly exited: Promise<number | null>;
}

/** Starts the cluster with `args` and waits (bounded) for its `Drydock is up.` banner. */
export async function startCluster(t: Pick<TestContext, 'after'>, args: readonly string[], bannerTimeoutMs = 60_000): Promise<ClusterRun> {
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'scripts', 'cluster.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...CLEAN_CLIENT_ENV } as NodeJS.ProcessEnv,
  });
  let out = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const pids: number[] = [];
  t.after(async () => {
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    if (child.exitCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
  });
  await eventually(() => (out.includes('Drydock is up.') ? true : undefined), bannerTimeoutMs, 100, `the cluster banner; output so far: ${out}`);
  for (const m of out.matchAll(/ pid (\d+) /g)) pids.push(Number(m[1]));
  return { child, output: () => out, pids, exited };
}

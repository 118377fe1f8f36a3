/**
 * A throwaway etcd (Debian's etcd-server) for tests and benchmarks: one member on free
 * loopback ports, its data in a temp dir (on /dev/shm when there is one), fast raft timings
 * (1 s leases are granted as 1 s); stop() ends it by its PID and removes its data. With `tls`
 * (certificates from certs.ts) its client URL is https, optionally requiring client
 * certificates; the peer URL stays plain (one member, loopback).
 */

import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientTransport, PLAIN_TRANSPORT } from '../../io/transport.js';
import { EVENT_DEADLINE_MS } from './deadline.js';

export const ETCD_BIN = '/usr/bin/etcd';

export interface EtcdProcess {
  /** `127.0.0.1:port`, the client endpoint. */
  endpoint: string;
  pid: number;
  /** Whether the client endpoint speaks TLS (https://). */
  tls: boolean;
  stop(): Promise<void>;
}

/** etcd's TLS: its server certificate, the CA that signed it (and client certificates), and whether a client certificate is required. */
export interface EtcdTls {
  certFile: string;
  keyFile: string;
  /** The CA of certFile: the health probe verifies etcd with it; with clientCertAuth, etcd's --trusted-ca-file. */
  caFile: string;
  /**
   * etcd --client-cert-auth --trusted-ca-file: refuse clients without a certificate from caFile
   * (default false). etcd 3.4 requires client certificates as soon as --trusted-ca-file is given,
   * so it is passed only here.
   */
  clientCertAuth?: boolean;
  /** The client certificate the health probe presents (needed with clientCertAuth). */
  clientCertFile?: string;
  clientKeyFile?: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const a = srv.address();
      srv.close(() => resolve(typeof a === 'object' && a !== null ? a.port : 0));
    });
  });
}

/** Starts one etcd member and resolves once it answers /health (bounded by the tests' one guard, EVENT_DEADLINE_MS). */
export async function startEtcdProcess(opts: { tls?: EtcdTls } = {}): Promise<EtcdProcess> {
  if (!existsSync(ETCD_BIN)) throw new Error(`${ETCD_BIN} is missing: apt-get install etcd-server`);
  const dir = mkdtempSync(join(existsSync('/dev/shm') ? '/dev/shm' : tmpdir(), 'drydock-etcd-'));
  const [client, peer] = [await freePort(), await freePort()];
  const tls = opts.tls;
  const scheme = tls === undefined ? 'http' : 'https';
  const tlsArgs =
    tls === undefined ? [] : ['--cert-file', tls.certFile, '--key-file', tls.keyFile, ...(tls.clientCertAuth === true ? ['--client-cert-auth', '--trusted-ca-file', tls.caFile] : [])];
  const probe =
    tls === undefined
      ? PLAIN_TRANSPORT
      : clientTransport({
          tls: {
            ca: readFileSync(tls.caFile, 'utf8'),
            cert: tls.clientCertFile === undefined ? undefined : readFileSync(tls.clientCertFile, 'utf8'),
            key: tls.clientKeyFile === undefined ? undefined : readFileSync(tls.clientKeyFile, 'utf8'),
          },
        });
  const child = spawn(
    ETCD_BIN,
    [
      '--name', 't', '--data-dir', dir,
      '--listen-client-urls', `${scheme}://127.0.0.1:${client}`, '--advertise-client-urls', `${scheme}://127.0.0.1:${client}`,
      ...tlsArgs,
      '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
      '--initial-cluster', `t=http://127.0.0.1:${peer}`, '--initial-cluster-state', 'new',
      '--heartbeat-interval', '10', '--election-timeout', '100', '--logger', 'zap', '--log-level', 'error',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'] },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (c: string) => (stderr = (stderr + c).slice(-4000)));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  const stop = async (): Promise<void> => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGCONT');
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 3000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Bounded in time and in count (a probe takes at least the 50 ms pause).
  const deadline = Date.now() + EVENT_DEADLINE_MS;
  for (let i = 0; ; i++) {
    try {
      const r = await probe.fetch(`${scheme}://127.0.0.1:${client}/health`, { signal: AbortSignal.timeout(2_000) });
      if (r.ok && ((await r.json()) as { health?: string }).health === 'true') break;
    } catch {
      // not listening yet
    }
    if (child.exitCode !== null || Date.now() > deadline || i > EVENT_DEADLINE_MS / 50) {
      await stop();
      throw new Error(`etcd did not become healthy within ${EVENT_DEADLINE_MS} ms: ${stderr}`);
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  return { endpoint: `127.0.0.1:${client}`, pid: child.pid ?? -1, tls: tls !== undefined, stop };
}

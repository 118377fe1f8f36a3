/**
 * etcd for tests: the harness's throwaway member (scripts/harness/etcd.ts), stopped when the
 * test ends, with clients closed first. Outside CI a machine without etcd skips with the
 * reason; under CI=true a missing etcd fails.
 */

import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { Etcd3, type IOptions } from 'etcd3';
import { ETCD_BIN, startEtcdProcess, type EtcdTls } from '../../scripts/harness/etcd.js';

export { ETCD_BIN };

/** Why etcd tests cannot run here, or undefined when they can (under CI=true a missing etcd is an error, not a skip). */
export function etcdMissing(): string | undefined {
  if (existsSync(ETCD_BIN)) return undefined;
  if (process.env['CI'] === 'true') throw new Error(`${ETCD_BIN} is missing: .ci/run installs etcd-server`);
  return `${ETCD_BIN} is not installed (apt-get install etcd-server): etcd tests skipped`;
}

export const ETCDCTL_BIN = '/usr/bin/etcdctl';

/** Why tests that also run etcdctl cannot run here (etcd's reason first), or undefined; under CI=true a missing etcdctl is an error. */
export function etcdctlMissing(): string | undefined {
  const etcd = etcdMissing();
  if (etcd !== undefined || existsSync(ETCDCTL_BIN)) return etcd;
  if (process.env['CI'] === 'true') throw new Error(`${ETCDCTL_BIN} is missing: .ci/run installs etcd-client`);
  return `${ETCDCTL_BIN} is not installed (apt-get install etcd-client): etcd user tests skipped`;
}

/** etcdctl (API v3) against the etcd at `endpoint` over TLS, verified with `caFile`: to add users and roles and enable auth. */
export function etcdctl(endpoint: string, caFile: string): (...args: string[]) => void {
  return (...args) => {
    execFileSync(ETCDCTL_BIN, [`--endpoints=https://${endpoint}`, `--cacert=${caFile}`, ...args], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000, env: { ...process.env, ETCDCTL_API: '3' } });
  };
}

/**
 * The users a secured cluster under `prefix` starts from: root (auth can then be enabled) and
 * `drydock` (password `dd-secret`, the masters' user) with readwrite on the prefix alone.
 */
export function addDrydockUsers(ctl: (...args: string[]) => void, prefix: string): void {
  ctl('user', 'add', 'root:root-secret');
  ctl('role', 'add', 'drydock');
  ctl('role', 'grant-permission', 'drydock', 'readwrite', `${prefix}/`, '--prefix=true');
  ctl('user', 'add', 'drydock:dd-secret');
  ctl('user', 'grant-role', 'drydock', 'drydock');
}

export interface EtcdHandle {
  /** `127.0.0.1:port`, the client endpoint. */
  endpoint: string;
  pid: number;
  /** A client of this etcd, closed by stop(). */
  client(): Etcd3;
  stop(): Promise<void>;
}

/** Starts one etcd member (over TLS with `tls`); `after` stops it and removes its data. */
export async function startEtcd(t: { after(fn: () => unknown): void }, opts: { tls?: EtcdTls } = {}): Promise<EtcdHandle> {
  const etcd = await startEtcdProcess(opts);
  const tls = opts.tls;
  // The clients handed out trust etcd's CA and present the client certificate when there is one.
  const options: IOptions =
    tls === undefined
      ? { hosts: [`http://${etcd.endpoint}`] }
      : {
          hosts: [`https://${etcd.endpoint}`],
          credentials: {
            rootCertificate: readFileSync(tls.caFile),
            ...(tls.clientCertFile === undefined || tls.clientKeyFile === undefined ? {} : { certChain: readFileSync(tls.clientCertFile), privateKey: readFileSync(tls.clientKeyFile) }),
          },
        };
  const clients: Etcd3[] = [];
  const stop = async (): Promise<void> => {
    for (const c of clients.splice(0)) c.close();
    await etcd.stop();
  };
  t.after(stop);
  return {
    endpoint: etcd.endpoint,
    pid: etcd.pid,
    client() {
      const c = new Etcd3(options);
      clients.push(c);
      return c;
    },
    stop,
  };
}

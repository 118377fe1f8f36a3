/**
 * Who this master is, as Mesos' MasterInfo says it (GET_MASTER, the scheduler API's
 * SUBSCRIBED, and later the leader's key in etcd). Pure apart from reading the machine's
 * interfaces for the advertised address.
 */

import { networkInterfaces } from 'node:os';
import { MESOS_API_VERSION } from '../../shared/version.js';

/** What MasterInfo is made of: the process's id and where it listens. */
export interface MasterIdentity {
  /** Mesos MasterInfo.id: a fresh UUID per master process. Agent, framework and offer ids derive from it. */
  id: string;
  hostname: string;
  /** The advertised IPv4 (advertisedIp of --ip). */
  ip: string;
  /** The port actually bound. */
  port: number;
}

/** IPv4 dotted quad as Mesos' deprecated MasterInfo.ip: the uint32 in network byte order, read on a little-endian host. */
export function ipToNetworkUint32(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) return 0;
  const [a = 0, b = 0, c = 0, d = 0] = parts;
  return (a | (b << 8) | (c << 16) | (d << 24)) >>> 0;
}

/** MasterInfo as GET_MASTER and the scheduler API's SUBSCRIBED write it. */
export function masterInfoJson(me: MasterIdentity): Record<string, unknown> {
  return {
    id: me.id,
    ip: ipToNetworkUint32(me.ip),
    port: me.port,
    pid: `master@${me.ip}:${me.port}`,
    hostname: me.hostname,
    version: MESOS_API_VERSION,
    address: { hostname: me.hostname, ip: me.ip, port: me.port },
    capabilities: [{ type: 'AGENT_UPDATE' }, { type: 'AGENT_DRAINING' }],
  };
}

/**
 * The `host:port` a master is reached at, from MasterInfo's address: its IP when it has one (no
 * DNS needed), else its hostname. The one spelling for every 307 Location, the `/redirect` of
 * the leader and of a standby alike (agents and the CLI read it, shared/detection.ts).
 */
export function addressOf(a: { readonly ip?: string | undefined; readonly hostname?: string | undefined; readonly port: number }): string {
  return `${a.ip ?? a.hostname ?? ''}:${a.port}`;
}

/** --ip unless it is the wildcard; then the first non-internal IPv4 address, else loopback. */
export function advertisedIp(ip: string): string {
  if (ip !== '0.0.0.0' && ip !== '') return ip;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

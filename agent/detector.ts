/**
 * Finds the leading master for the agent's session, each time it (re)connects: a fixed
 * `host:port` as is; a list by asking each master's `/redirect`; `etcd://` by reading the
 * election through etcd's JSON gateway (shared/detection.ts). A master that loses leadership
 * drops its sessions, so the next connect finds the new leader.
 */

import type { Logger } from '../shared/log.js';
import { leaderFromRange, leaderFromRedirect, leaderRangeRequest, type MasterSpec } from '../shared/detection.js';

/** Each probe waits at most this long. */
const PROBE_TIMEOUT_MS = 2_000;

export type Detector = () => Promise<string | undefined>;

export function detector(spec: MasterSpec, log: Logger): Detector {
  switch (spec.kind) {
    case 'fixed':
      return () => Promise.resolve(spec.address);
    case 'list':
      return async () => {
        for (const m of spec.addresses) {
          try {
            const r = await fetch(`http://${m}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
            const leader = r.status === 307 ? leaderFromRedirect(r.headers.get('location')) : undefined;
            if (leader !== undefined) return leader;
          } catch {
            // down or unreachable: ask the next one
          }
        }
        log.warn('no leading master found', { masters: spec.addresses });
        return undefined;
      };
    case 'etcd':
      return async () => {
        for (const e of spec.endpoints) {
          try {
            const r = await fetch(`http://${e}/v3/kv/range`, { method: 'POST', body: JSON.stringify(leaderRangeRequest(spec.prefix)), signal: AbortSignal.timeout(PROBE_TIMEOUT_MS) });
            if (!r.ok) continue;
            const leader = leaderFromRange(await r.json());
            if (leader !== undefined) return leader.address;
            log.warn('no leader elected', { etcd: e, prefix: spec.prefix });
            return undefined;
          } catch {
            // this etcd endpoint is down: try the next
          }
        }
        log.warn('no etcd endpoint answered', { endpoints: spec.endpoints });
        return undefined;
      };
  }
}

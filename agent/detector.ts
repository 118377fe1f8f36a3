/**
 * Finds the leading master for the agent's session, each time it (re)connects and when pings
 * pause (shared/detection.ts `findLeader`: a fixed host:port as is, a list through each
 * master's `/redirect`, etcd:// through the election). A master that loses leadership drops
 * its sessions, so the next connect finds the new leader.
 */

import type { Logger } from '../shared/log.js';
import { findLeader, type MasterSpec } from '../shared/detection.js';

export type Detector = () => Promise<string | undefined>;

export function detector(spec: MasterSpec, log: Logger): Detector {
  return async () => {
    const leader = await findLeader(spec, fetch);
    if (leader === undefined) log.warn('no leading master found', { spec: spec.kind });
    return leader;
  };
}

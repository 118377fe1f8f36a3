/**
 * Finds the leading master for the agent's session, each time it (re)connects and when pings
 * pause (shared/detection.ts `findLeader`: a fixed host:port as is, a list through each
 * master's `/redirect`, etcd:// through the election). A master that loses leadership drops
 * its sessions, so the next connect finds the new leader.
 */

import type { Logger } from '../shared/log.js';
import { findLeader, type MasterSpec } from '../shared/detection.js';
import { PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';

export type Detector = () => Promise<string | undefined>;

/** `transport`: the session's (with --tls_ca_file, masters are asked over https with its CA). */
export function detector(spec: MasterSpec, log: Logger, transport: ClientTransport = PLAIN_TRANSPORT): Detector {
  return async () => {
    const leader = await findLeader(spec, transport.fetch, undefined, transport.tls ? 'https' : 'http');
    if (leader === undefined) log.warn('no leading master found', { spec: spec.kind });
    return leader;
  };
}

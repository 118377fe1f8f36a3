/**
 * Finds the leading master for the agent's session, each time it (re)connects and when pings
 * pause (shared/detection.ts `findLeader`: a fixed host:port as is, a list through each
 * master's `/redirect`, etcd:// through the election). A master that loses leadership drops
 * its sessions, so the next connect finds the new leader.
 *
 * etcd is read with its own access (--etcd_ca_file, --etcd_cert_file, --etcd_user; the
 * master's TLS and credential are not etcd's), through one EtcdGateway so the user's token is
 * kept from one detection to the next.
 */

import type { Logger } from '../shared/log.js';
import { EtcdGateway, findLeader, plainEtcdAccess, type EtcdAccess, type MasterSpec } from '../shared/detection.js';
import { PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';

export type Detector = () => Promise<string | undefined>;

/** How long one probe of a master or an etcd endpoint may take. */
const PROBE_TIMEOUT_MS = 2_000;

/**
 * `transport`: the session's (with --tls_ca_file, masters are asked over https with its CA).
 * `etcd`: how etcd is read with --master=etcd://... (default: plain http, no user).
 */
export function detector(spec: MasterSpec, log: Logger, transport: ClientTransport = PLAIN_TRANSPORT, etcd?: EtcdAccess): Detector {
  const masterScheme = transport.tls ? 'https' : 'http';
  if (spec.kind === 'etcd') {
    const gateway = new EtcdGateway(etcd ?? plainEtcdAccess(PLAIN_TRANSPORT.fetch));
    return async () => {
      const read = await gateway.leader(spec.endpoints, spec.prefix, PROBE_TIMEOUT_MS);
      switch (read.kind) {
        case 'leader':
          return read.address;
        case 'none':
          log.warn('no leading master found', { spec: spec.kind });
          return undefined;
        case 'refused':
          // The etcd flags are wrong (or etcd's users changed): said at error, retried with the backoff.
          log.error('etcd refused the agent', { error: read.error, endpoints: spec.endpoints, scheme: gateway.scheme });
          return undefined;
        case 'unreachable':
          log.warn('no leading master found', { spec: spec.kind, error: read.error, scheme: gateway.scheme });
          return undefined;
      }
    };
  }
  return async () => {
    const leader = await findLeader(spec, transport.fetch, PROBE_TIMEOUT_MS, masterScheme);
    if (leader === undefined) log.warn('no leading master found', { spec: spec.kind });
    return leader;
  };
}

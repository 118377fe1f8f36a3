/**
 * Who is calling the master: the authenticator over the `--credentials` file (shared with the
 * service scheduler, so it lives in shared/authentication.ts) and the master's realms.
 *
 * Realms as Mesos names them: `mesos-master-readonly`, `mesos-master-readwrite` and
 * `mesos-master-scheduler` for HTTP, plus `drydock-agent` for the agents' WebSocket upgrade.
 */

import { basicChallenge } from '../../shared/authentication.js';

export { Authenticator, type Authentication } from '../../shared/authentication.js';

export type Realm = 'mesos-master-readonly' | 'mesos-master-readwrite' | 'mesos-master-scheduler' | 'drydock-agent';

/** The `WWW-Authenticate` challenge of a realm (Mesos' basic authenticator's). */
export function challenge(realm: Realm): string {
  return basicChallenge(realm);
}

/**
 * The one operator call the benchmarks make: GET_AGENTS on the master's v1 API, to check
 * that every agent a benchmark registered is really known to the master.
 */

import { PLAIN_TRANSPORT, type ClientTransport } from '../../io/transport.js';

/** The fields of a GET_AGENTS entry the benchmarks read. */
export interface ListedAgent {
  hostname: string;
}

/**
 * POST /api/v1 {"type":"GET_AGENTS"}; throws with the status and body start on anything but 200.
 * `transport`: the CA and Authorization header for a secured master (`url` is then https://).
 */
export async function callApiAgents(url: string, transport: ClientTransport = PLAIN_TRANSPORT): Promise<ListedAgent[]> {
  const res = await transport.fetch(`${url}/api/v1`, {
    method: 'POST',
    headers: { ...transport.headers, 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ type: 'GET_AGENTS' }),
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`GET_AGENTS: HTTP ${res.status} ${text.slice(0, 200)}`);
  const body = JSON.parse(text) as { get_agents?: { agents?: Array<{ agent_info?: { hostname?: unknown } }> } };
  return (body.get_agents?.agents ?? []).map((a) => ({ hostname: String(a.agent_info?.hostname ?? '') }));
}

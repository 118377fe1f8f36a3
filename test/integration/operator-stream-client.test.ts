/**
 * A real, independent client against the real master: npm `@dcos/mesos-client` (the DC/OS
 * UI's Mesos client; rxjs 6, CommonJS). It speaks HTTP through a global XMLHttpRequest and
 * reads SUBSCRIBE as RecordIO from the progressively growing `response` text.
 *
 * Node has no XMLHttpRequest. `w3c-xmlhttprequest` (published, node:http based) streams: it
 * fires `progress` per chunk with `responseText` growing. One spec gap is patched here: its
 * `response` getter is null until the body ends, where the XHR standard (and every browser)
 * returns the text received so far for a "" or "text" response type. The client reads
 * `response`, so without the patch it would see null on every progress event.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { eventually, EVENT_DEADLINE_MS, startMaster } from '../helpers/daemons.js';
import { FakeAgent } from '../helpers/fake-agent.js';

const require = createRequire(import.meta.url);

/** What these tests use of an rxjs 6 Observable. */
interface Observable<T> {
  subscribe(observer: { next?: (v: T) => void; error?: (e: unknown) => void; complete?: () => void }): { unsubscribe(): void };
}

/** @dcos/mesos-client 1.0.0's two functions. */
interface MesosClient {
  request(body: unknown, url?: string): Observable<string>;
  stream(body: unknown, url?: string): Observable<string>;
}

/** The part of the polyfill's class the patch touches. */
interface XhrLike {
  readonly readyState: number;
  readonly responseType: string;
  readonly responseText: string;
  readonly response: unknown;
}
type XhrClass = new () => XhrLike;

const { XMLHttpRequest: W3CXMLHttpRequest } = require('w3c-xmlhttprequest') as { XMLHttpRequest: XhrClass };
const mesos = require('@dcos/mesos-client') as MesosClient;

const LOADING = 3;

/** w3c-xmlhttprequest with the standard's `response` while LOADING (see the file comment). */
class ProgressiveXMLHttpRequest extends W3CXMLHttpRequest {
  override get response(): unknown {
    if (this.readyState === LOADING && (this.responseType === '' || this.responseType === 'text')) return this.responseText;
    return super.response;
  }
}

/** Installs the polyfill as the global for the duration of a test. */
function installXhr(t: { after: (fn: () => void) => void }): void {
  const g = globalThis as Record<string, unknown>;
  const before = g['XMLHttpRequest'];
  g['XMLHttpRequest'] = ProgressiveXMLHttpRequest;
  t.after(() => {
    if (before === undefined) delete g['XMLHttpRequest'];
    else g['XMLHttpRequest'] = before;
  });
}

function once<T>(obs: Observable<T>, timeoutMs = EVENT_DEADLINE_MS): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no value within ${timeoutMs} ms`)), timeoutMs);
    obs.subscribe({
      next: (v) => {
        clearTimeout(timer);
        resolve(v);
      },
      error: (e) => {
        clearTimeout(timer);
        reject(new Error(`observable failed: ${JSON.stringify(e)}`));
      },
    });
  });
}

type Rec = { type: string } & Record<string, unknown>;
interface AgentJson {
  agent_info: { id: { value: string }; hostname: string };
}

test('@dcos/mesos-client: request GET_AGENTS, and a live SUBSCRIBE stream with SUBSCRIBED, HEARTBEATs and AGENT_ADDED', async (t) => {
  installXhr(t);
  const m = await startMaster(t, { flags: ['--heartbeat_interval=200ms'] });
  const a = await FakeAgent.connect(m.url);
  t.after(() => a.close());
  const ra = await a.register();

  // request(): one POST, the raw JSON text back.
  const text = await once(mesos.request({ type: 'GET_AGENTS' }, `${m.url}/api/v1`));
  const agents = (JSON.parse(text) as { type: string; get_agents: { agents: AgentJson[] } });
  assert.equal(agents.type, 'GET_AGENTS');
  assert.deepEqual(agents.get_agents.agents.map((x) => x.agent_info.id.value), [ra.agent_id]);

  // stream(): records as they arrive, through the DC/OS path.
  const records: Rec[] = [];
  const errors: unknown[] = [];
  let completed = false;
  const sub = mesos.stream({ type: 'SUBSCRIBE' }, `${m.url}/mesos/api/v1`).subscribe({
    next: (r) => records.push(JSON.parse(r) as Rec),
    error: (e) => errors.push(e),
    complete: () => {
      completed = true;
    },
  });
  t.after(() => sub.unsubscribe());

  await eventually(() => (records.filter((r) => r.type === 'HEARTBEAT').length >= 3 ? true : undefined), undefined, 20, 'SUBSCRIBED and 3 heartbeats via the client');
  const first = records[0] as unknown as { type: string; subscribed: { get_state: { get_agents: { agents: AgentJson[] } }; heartbeat_interval_seconds: number } };
  assert.equal(first.type, 'SUBSCRIBED');
  assert.equal(first.subscribed.heartbeat_interval_seconds, 0.2);
  assert.deepEqual(first.subscribed.get_state.get_agents.agents.map((x) => x.agent_info.id.value), [ra.agent_id]);
  assert.equal(records[1]?.type, 'HEARTBEAT');

  // A new agent registers while the stream is open. Its hostname is not ASCII: the client
  // counts RecordIO lengths in UTF-8 bytes, so a framing that counted characters would break here.
  const b = await FakeAgent.connect(m.url, { self: { hostname: 'nœud-é€-😀' } });
  t.after(() => b.close());
  const rb = await b.register();
  const added = await eventually(
    () => records.find((r) => r.type === 'AGENT_ADDED') as unknown as { agent_added: { agent: AgentJson } } | undefined,
    undefined,
    20,
    'AGENT_ADDED via the client',
  );
  assert.equal(added.agent_added.agent.agent_info.id.value, rb.agent_id);
  assert.equal(added.agent_added.agent.agent_info.hostname, 'nœud-é€-😀');
  // Heartbeats keep flowing after the event (the parser did not lose its place).
  const n = records.length;
  await eventually(() => (records.slice(n).some((r) => r.type === 'HEARTBEAT') ? true : undefined), undefined, 20, 'a heartbeat after AGENT_ADDED');
  assert.deepEqual(errors, []);
  assert.equal(completed, false);

  // Unsubscribing aborts the request; the master forgets the stream.
  const from = m.daemon.records.length;
  sub.unsubscribe();
  await m.daemon.waitForMsg('operator stream closed', { reason: 'CLIENT_GONE', subscribers: 0 }, undefined, from);
});

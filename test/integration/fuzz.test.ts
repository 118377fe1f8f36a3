/**
 * Seeded fuzz over every endpoint and the agent wire: a real master, a real agent (127.0.0.2)
 * and fake agents on the agent session. Valid requests for every operator, scheduler, agent
 * and maintenance call, and REGISTER / STATUS_UPDATE / REFUSED frames, are mutated (test/helpers/fuzz.ts)
 * and sent; a few transport-level cases (oversized bodies, clients that hang up mid-body,
 * garbage requests, an oversized frame) run among them. For every case:
 *   - no answer is a 5xx (501 "Call type X is not supported" excepted: Mesos answers 501 for
 *     calls it does not implement), no session is closed 1011, no request goes unanswered;
 *   - both daemons are still running and log no error-level line (so whatever the master
 *     accepted and sent the real agent, a fuzzed drain's grace among it, the agent could read:
 *     a message it refuses is an error line, `master message refused`);
 *   - a rejected call (and any call that only reads) leaves the master's state as it was:
 *     maintenance schedule and status, agents (id, active, deactivated, drain_info) and
 *     frameworks (ids, connected) are snapshotted after every case and compared;
 *   - every 50 cases, and at the end, both daemons answer GET /health with 200.
 *
 * Which comparisons mean something: the valid requests name live things (a fake "victim" agent,
 * the real agent, the harness's own framework and its offers, two scheduled machines), so that
 * mutations reach the deep code, not just "unknown id". Every request is mutated at least once,
 * but some mutations change nothing that matters (an unknown key, camelCase copies), so a
 * mutated request may be accepted and legitimately change state. After an accepted (2xx) call
 * that may write, the harness puts things back (canonical schedule, machines up, victim
 * reactivated or replaced, framework re-subscribed, stray agents marked gone, a fuzz-subscribed
 * framework torn down on its own stream), waits for the state to settle and takes that as the
 * new baseline; only rejected calls and reads are held to "nothing changed". A wire case is
 * held to it only when its one frame was refused (several frames: an early valid one may
 * register something even though a later one closes the session).
 * The run stops at the first crash (every later case would fail for the same reason) and
 * otherwise collects every failing case; the message starts with the FIRST one.
 *
 * The seed is printed first. Replay a failing run with exactly the same cases:
 *   DRYDOCK_FUZZ_SEED=<seed> npm test
 * or, faster, this file alone:
 *   npm run build && DRYDOCK_FUZZ_SEED=<seed> node --import tsx --test test/integration/fuzz.test.ts
 * DRYDOCK_FUZZ_CASES=<n> sets how many cases run (default 3000); DRYDOCK_FUZZ_ONLY=<i> runs
 * case i of the seed alone (after the same setup: enough unless the failure needs the state
 * earlier cases left); DRYDOCK_FUZZ_AREAS=operator,scheduler runs
 * only the cases of those areas (operator, scheduler, maintenance, misc, agent, wire, random),
 * e.g. to look past a crash another area causes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { MAX_BODY_BYTES as AGENT_MAX_BODY_BYTES } from '../../agent/api.js';
import { MAX_API_BODY_BYTES } from '../../master/api/codecs.js';
import { parseJson, stringifyJson } from '../../shared/json.js';
import { MAX_FRAME_BYTES } from '../../shared/protocol.js';
import { RecordReader } from '../../shared/recordio.js';
import { alive, EVENT_DEADLINE_MS, startAgent, startMaster, type AgentHandle, type Daemon, type LogRecord, type MasterHandle } from '../helpers/daemons.js';
import { FakeAgent } from '../helpers/fake-agent.js';
import {
  CANONICAL_SCHEDULE,
  fuzzSeed,
  generateCase,
  preview,
  serialize,
  WIRE_SELF,
  type FuzzCase,
  type FuzzContext,
  type HttpCase,
  type WireCase,
} from '../helpers/fuzz.js';

const SEED = fuzzSeed(process.env);
const CASES = Number(process.env['DRYDOCK_FUZZ_CASES'] ?? 3000);
const ONLY = process.env['DRYDOCK_FUZZ_ONLY'];
/** Only cases of these areas run (the others are skipped, not regenerated: the same seed gives the same cases). */
const AREAS = process.env['DRYDOCK_FUZZ_AREAS']?.split(',').map((x) => x.trim()).filter((x) => x !== '');
const REPLAY = `DRYDOCK_FUZZ_SEED=${SEED} npm test`;
/** The case loop stops here even if cases remain (a slow machine runs a prefix of the same cases). */
const TIME_BUDGET_MS = 35_000;
/** Every request and every wait is bounded: by the tests' one guard (an answer returns when it comes). */
const REQUEST_TIMEOUT_MS = EVENT_DEADLINE_MS;
const HEALTH_EVERY = 50;
/** Past this many failures the server is broken enough; stop and report. */
const MAX_FAILURES = 300;
/** The request_id of the probe REGISTER (echoed in its REGISTERED); no mutation produces it. */
const PROBE_REQUEST_ID = 424_242;
/** Close codes a master may end a fuzzed session with: protocol error, frame too big, bad UTF-8, normal, going away, replaced, shutdown, id in use, not allowed (an id bound to a principal, or register_agents). */
const CLEAN_CLOSES = new Set([4400, 1009, 1007, 1000, 1001, 4409, 4401, 4403, 4405]);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

type FailureKind = 'crash' | 'status' | 'no-answer' | 'wire' | 'log' | 'state' | 'health' | 'transport' | 'heal';

interface Failure {
  index: number;
  kind: FailureKind;
  /** `POST /api/v1`, `wire`, ... */
  target: string;
  label: string;
  body: string;
  detail: string;
}

interface Outcome {
  status?: number;
  text: string;
  /** A 2xx (or a wire frame the master went on after): state may have changed legitimately. */
  accepted: boolean;
  /** The failure this answer is, if any. */
  failure?: { kind: FailureKind; detail: string };
}

/** The master's state, as compared before and after a case. */
interface Snapshot {
  text: string;
  parts: Record<string, string>;
  agents: Array<{ id: string; hostname: string; active: boolean; deactivated: boolean; drain: string | null }>;
  connectedFrameworks: string[];
  downMachines: unknown[];
  schedule: string;
  /** Size of the GET_AGENTS and GET_FRAMEWORKS answers. */
  bytes: number;
}

/** The harness's own framework: subscribed for the whole run, its offers tracked so that ACCEPT names a live one. */
class Home {
  id = '';
  streamId = '';
  ended = false;
  /** offer id -> agent id, in arrival order. */
  readonly offers = new Map<string, string>();
  readonly #abort = new AbortController();

  static async subscribe(url: string): Promise<Home> {
    const h = new Home();
    // Bounded until SUBSCRIBED only: the stream itself stays open for the whole run.
    const timer = setTimeout(() => h.#abort.abort(new Error('home SUBSCRIBE timed out')), REQUEST_TIMEOUT_MS);
    try {
      const res = await fetch(`${url}/api/v1/scheduler`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'fuzz', name: 'fuzz-home', checkpoint: true } } }),
        signal: h.#abort.signal,
      });
      if (res.status !== 200 || res.body === null) throw new Error(`home SUBSCRIBE answered ${res.status}: ${await res.text()}`);
      h.streamId = res.headers.get('mesos-stream-id') ?? '';
      const reader = res.body.getReader();
      const records = new RecordReader();
      let subscribed: (() => void) | undefined;
      const ready = new Promise<void>((resolve) => (subscribed = resolve));
      // The stream is read to its end for the whole run (an unread stream would back up the master's writes).
      void (async () => {
        try {
          for (;;) {
            const chunk = await reader.read();
            if (chunk.done) break;
            for (const r of records.push(Buffer.from(chunk.value))) h.#event(JSON.parse(r) as Record<string, unknown>, subscribed);
          }
        } catch {
          // aborted, or the master closed it
        }
        h.ended = true;
        subscribed?.();
      })();
      await ready;
      if (h.id === '') throw new Error('home SUBSCRIBE: the stream ended before SUBSCRIBED');
      return h;
    } finally {
      clearTimeout(timer);
    }
  }

  #event(e: Record<string, unknown>, subscribed: (() => void) | undefined): void {
    const type = e['type'];
    if (type === 'SUBSCRIBED') {
      this.id = ((e['subscribed'] as { framework_id: { value: string } }).framework_id).value;
      subscribed?.();
    } else if (type === 'OFFERS') {
      for (const o of ((e['offers'] as { offers?: Array<{ id: { value: string }; agent_id: { value: string } }> }).offers ?? [])) this.offers.set(o.id.value, o.agent_id.value);
    } else if (type === 'RESCIND') {
      this.offers.delete((e['rescind'] as { offer_id: { value: string } }).offer_id.value);
    } else if (type === 'ERROR') {
      this.ended = true;
    }
  }

  /** The newest outstanding offer on an agent. */
  offerOn(agentId: string): string | undefined {
    let found: string | undefined;
    for (const [id, a] of this.offers) if (a === agentId) found = id;
    return found;
  }

  close(): void {
    this.#abort.abort();
  }
}

/** A raw TCP exchange: write `payload`, optionally hang up at once, read what comes back (bounded). */
function rawHttp(host: string, port: number, payload: string, hangUp: boolean): Promise<{ statusLine: string; error: string | undefined }> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let data = '';
    let done = false;
    const finish = (error?: string): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ statusLine: data.split('\r\n')[0] ?? '', error });
    };
    const timer = setTimeout(() => finish('timed out'), REQUEST_TIMEOUT_MS);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (data += d));
    socket.on('end', () => finish());
    socket.on('close', () => finish());
    socket.on('error', (e) => finish(e.message));
    socket.on('connect', () => {
      socket.write(payload);
      // The client dies mid-body: the server must shrug, not log an internal error.
      if (hangUp) setTimeout(() => finish(), 20);
    });
  });
}

function fetchError(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  return `${(e as Error).name}: ${(e as Error).message}${cause === undefined ? '' : ` (${cause.code ?? ''} ${cause.message ?? ''})`}`;
}

/** A 5xx that is a server failure; 501 "Call type X is not supported" is Mesos' answer for unimplemented calls. */
function serverFailure(status: number, text: string): boolean {
  return status >= 500 && !(status === 501 && /^Call type \S+ is not supported$/.test(text));
}

/** Failures that are the same bug: ids, numbers and uuids taken out. */
function distinctKey(f: Failure): string {
  const detail = f.detail.replace(/[0-9a-f]{8}-[0-9a-f-]{27,}(-S\d+|-\d+|-O\d+)?/g, '<id>').replace(/[0-9]+/g, 'N').slice(0, 160);
  return `${f.kind} | ${f.target.replace(/^(agent )?(\w+) \/(master|mesos)\//, '$1$2 /')} | ${detail}`;
}

class Fuzz {
  readonly failures: Failure[] = [];
  readonly areas = new Map<string, number>();
  readonly statuses = new Map<string, number>();
  stopped: string | undefined;
  cases = 0;
  readonly #m: MasterHandle;
  readonly #a: AgentHandle;
  readonly #fakes: FakeAgent[] = [];
  #home: Home | undefined;
  #victim: FakeAgent | undefined;
  #victims = 0;
  /** The case running now, for failures of the harness's own requests. */
  #index = 0;
  #baseline: Snapshot | undefined;
  #canonicalSchedule = '';
  #logFrom = new Map<Daemon, number>();
  readonly ctx: FuzzContext = { victimAgentId: '', realAgentId: '', frameworkId: '', streamId: '', offerId: 'fuzz-no-offer', wireAgentId: 'fuzz-wire-unregistered' };

  constructor(m: MasterHandle, a: AgentHandle) {
    this.#m = m;
    this.#a = a;
    this.ctx.realAgentId = a.agentId ?? '';
    this.#logFrom.set(m.daemon, 0);
    this.#logFrom.set(a.daemon, 0);
  }

  async setUp(): Promise<void> {
    await this.#newVictim();
    await this.#newHome();
    // The wire agent registers once now, so that a wire case's own valid REGISTER re-registers a
    // known agent (and its close leaves it disconnected, as before) instead of adding one.
    await this.#registerWire(false);
    const r = await this.#post('master', '/maintenance/schedule', serialize(CANONICAL_SCHEDULE));
    assert.equal(r.status, 200, `seed ${SEED}: the canonical schedule was refused: ${r.text}`);
    this.#canonicalSchedule = (await this.snapshot()).schedule;
    this.#baseline = await this.#settle();
  }

  close(): void {
    this.#home?.close();
    for (const f of this.#fakes) f.close();
  }

  // ---- Requests the harness makes for itself ------------------------------------------------

  async #post(daemon: 'master' | 'agent', path: string, body: string, headers: Record<string, string> = { 'content-type': 'application/json' }): Promise<{ status: number; text: string }> {
    const url = (daemon === 'master' ? this.#m.url : this.#a.url) + path;
    const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return { status: res.status, text: await res.text() };
  }

  async #api(type: string, sub?: Record<string, unknown>): Promise<{ status: number; text: string }> {
    const body: Record<string, unknown> = { type };
    if (sub !== undefined) body[type.toLowerCase()] = sub;
    return this.#post('master', '/api/v1', stringifyJson(body));
  }

  /**
   * The four read calls, compared as text where their output is canonical (schedule, status)
   * and as the listed fields elsewhere. Plain JSON.parse: ids and flags need no exact int64s,
   * and the reviver of parseJson is slow on the megabytes an accepted fuzzed body can leave.
   */
  async snapshot(): Promise<Snapshot> {
    const types = ['GET_MAINTENANCE_SCHEDULE', 'GET_MAINTENANCE_STATUS', 'GET_AGENTS', 'GET_FRAMEWORKS'] as const;
    const answers = await Promise.all(types.map((type) => this.#api(type)));
    answers.forEach((r, i) => {
      if (r.status !== 200) throw new Error(`${types[i]} answered ${r.status}: ${r.text.slice(0, 300)}`);
    });
    const [sched, status, agents, frameworks] = answers.map((r) => r.text) as [string, string, string, string];
    type AgentJson = { agent_info: { id: { value: string }; hostname: string }; active: boolean; deactivated: boolean; drain_info?: unknown };
    type FrameworkJson = { framework_info: { id: { value: string } }; connected: boolean };
    const a = (JSON.parse(agents) as { get_agents: { agents: AgentJson[]; recovered_agents: Array<{ id?: { value: string } }> } }).get_agents;
    const f = (JSON.parse(frameworks) as { get_frameworks: { frameworks: FrameworkJson[]; completed_frameworks: FrameworkJson[] } }).get_frameworks;
    const agentList = a.agents
      .map((x) => ({ id: x.agent_info.id.value, hostname: x.agent_info.hostname.slice(0, 60), active: x.active, deactivated: x.deactivated, drain: x.drain_info === undefined ? null : JSON.stringify(x.drain_info) }))
      .sort((x, y) => (x.id < y.id ? -1 : 1));
    const recovered = a.recovered_agents.map((x) => x.id?.value).sort();
    const fws = f.frameworks.map((x) => ({ id: x.framework_info.id.value, connected: x.connected })).sort((x, y) => (x.id < y.id ? -1 : 1));
    const completed = f.completed_frameworks.map((x) => x.framework_info.id.value).sort();
    const statusJson = (JSON.parse(status) as { get_maintenance_status: { status: { down_machines?: unknown[] } } }).get_maintenance_status.status;
    const parts = {
      schedule: sched,
      status,
      agents: JSON.stringify({ agents: agentList, recovered }),
      frameworks: JSON.stringify({ frameworks: fws, completed }),
    };
    return {
      text: JSON.stringify(parts),
      parts,
      agents: agentList,
      connectedFrameworks: fws.filter((x) => x.connected).map((x) => x.id),
      downMachines: statusJson.down_machines ?? [],
      schedule: parts.schedule,
      bytes: agents.length + frameworks.length,
    };
  }

  /** Snapshots until two in a row agree (asynchronous effects of an accepted call have landed), bounded. */
  async #settle(): Promise<Snapshot> {
    let prev = await this.snapshot();
    for (let i = 0; i < 40; i++) {
      await sleep(25);
      const cur = await this.snapshot();
      if (cur.text === prev.text) return cur;
      prev = cur;
    }
    return prev;
  }

  // ---- The things the cases aim at, and putting them back ------------------------------------

  async #newVictim(): Promise<void> {
    const old = this.#victim;
    const oldId = this.ctx.victimAgentId;
    const fa = await FakeAgent.connect(this.#m.url, { self: { hostname: 'fuzz-victim', ip: '127.0.0.1', port: 46_000 + this.#victims++ } });
    this.#fakes.push(fa);
    const r = await fa.register({ timeoutMs: REQUEST_TIMEOUT_MS });
    this.#victim = fa;
    this.ctx.victimAgentId = r.agent_id;
    old?.close();
    // The old victim leaves GET_AGENTS (gone agents are not listed), so agents do not pile up.
    if (oldId !== '') {
      const g = await this.#api('MARK_AGENT_GONE', { agent_id: { value: oldId } });
      if (serverFailure(g.status, g.text)) this.#fail(this.#index, 'heal', 'POST /api/v1', 'harness: MARK_AGENT_GONE of a replaced victim', '', `${g.status} ${g.text}`);
    }
  }

  /** Registers the wire agent (as itself, or as a new agent) on a session that is then closed. */
  async #registerWire(reuseId: boolean): Promise<void> {
    const wire = await FakeAgent.connect(this.#m.url, { self: { ...WIRE_SELF } });
    try {
      this.ctx.wireAgentId = (await wire.register({ ...(reuseId ? { agentId: this.ctx.wireAgentId } : {}), timeoutMs: REQUEST_TIMEOUT_MS })).agent_id;
    } finally {
      wire.close();
      await wire.waitClosed(REQUEST_TIMEOUT_MS).catch(() => wire.terminate());
    }
  }

  async #newHome(): Promise<void> {
    this.#home?.close();
    this.#home = await Home.subscribe(this.#m.url);
    this.ctx.frameworkId = this.#home.id;
    this.ctx.streamId = this.#home.streamId;
  }

  /** REACTIVATE_AGENT until it takes (a drained agent) or it is clear it will not (still DRAINING), bounded. */
  async #reactivate(agentId: string): Promise<boolean> {
    for (let i = 0; i < 10; i++) {
      const r = await this.#api('REACTIVATE_AGENT', { agent_id: { value: agentId } });
      if (r.status === 200) return true;
      if (serverFailure(r.status, r.text)) this.#fail(this.#index, 'heal', 'POST /api/v1', 'harness: REACTIVATE_AGENT', '', `${r.status} ${r.text}`);
      await sleep(30);
    }
    return false;
  }

  async #healMaintenance(s: Snapshot): Promise<void> {
    if (s.downMachines.length > 0) {
      const up = await this.#post('master', '/machine/up', stringifyJson(s.downMachines));
      if (serverFailure(up.status, up.text)) this.#fail(this.#index, 'heal', 'POST /machine/up', 'harness: machines back up', preview(stringifyJson(s.downMachines)), `${up.status} ${up.text}`);
    }
    const r = await this.#post('master', '/maintenance/schedule', serialize(CANONICAL_SCHEDULE));
    if (serverFailure(r.status, r.text)) this.#fail(this.#index, 'heal', 'POST /maintenance/schedule', 'harness: canonical schedule', '', `${r.status} ${r.text}`);
  }

  /** Puts back what accepted calls changed, so that the next valid requests still reach deep code. */
  async #heal(s: Snapshot): Promise<void> {
    if (s.schedule !== this.#canonicalSchedule || s.downMachines.length > 0) await this.#healMaintenance(s);
    const v = s.agents.find((a) => a.id === this.ctx.victimAgentId);
    const victimOpen = this.#victim !== undefined && this.#victim.closed === undefined;
    if (v === undefined || !victimOpen) await this.#newVictim();
    else if ((v.deactivated || v.drain !== null) && !(await this.#reactivate(v.id))) await this.#newVictim();
    const real = s.agents.find((a) => a.id === this.ctx.realAgentId);
    if (real === undefined) this.#fail(this.#index, 'heal', 'GET_AGENTS', 'harness: the real agent', '', 'the real agent is no longer listed');
    else if ((real.deactivated || real.drain !== null) && !(await this.#reactivate(real.id))) {
      this.#fail(this.#index, 'heal', 'POST /api/v1', 'harness: REACTIVATE_AGENT of the real agent', '', `still ${real.drain ?? 'deactivated'}`);
    }
    if (this.#home === undefined || this.#home.ended || !s.connectedFrameworks.includes(this.#home.id)) await this.#newHome();
    // An accepted fuzzed REGISTER may have replaced the wire agent (same ip:port, no id): register
    // it afresh, so that the next wire case's own REGISTER re-registers a listed agent. Or a
    // REGISTER under another id on its session left it "connected" to a closed session (the
    // master only notices at the ping timeout): register it on a session of ours and close that,
    // so the next wire case starts from a disconnected wire agent, as its own close leaves it.
    // Or a fuzzed REGISTER renamed it: the next wire case's own REGISTER would rename it back.
    const wire = s.agents.find((x) => x.id === this.ctx.wireAgentId);
    if (wire === undefined) await this.#registerWire(false);
    else if (wire.active || wire.hostname !== WIRE_SELF.hostname.slice(0, 60)) await this.#registerWire(true);
    // Agents an accepted fuzzed REGISTER added (another port, say) are marked gone: gone agents
    // are not listed, so GET_AGENTS stays small and every snapshot cheap.
    const keep = new Set([this.ctx.realAgentId, this.ctx.victimAgentId, this.ctx.wireAgentId]);
    for (const x of s.agents) {
      if (keep.has(x.id)) continue;
      const g = await this.#api('MARK_AGENT_GONE', { agent_id: { value: x.id } });
      if (serverFailure(g.status, g.text)) this.#fail(this.#index, 'heal', 'POST /api/v1', `harness: MARK_AGENT_GONE of ${x.id} (${x.hostname})`, '', `${g.status} ${g.text}`);
    }
    // A framework subscribed with a megabyte FrameworkInfo stays among the last 50 completed
    // ones: 50 small frameworks push it out, or every later snapshot would carry it.
    if (s.bytes > 64 * 1024) {
      for (let i = 0; i < 50; i++) {
        const h = await Home.subscribe(this.#m.url).catch(() => undefined);
        if (h === undefined) break;
        await this.#post('master', '/api/v1/scheduler', JSON.stringify({ type: 'TEARDOWN', framework_id: { value: h.id } }), { 'content-type': 'application/json', 'mesos-stream-id': h.streamId });
        h.close();
      }
    }
  }

  async #resync(): Promise<void> {
    await this.#heal(await this.snapshot());
    this.#baseline = await this.#settle();
  }

  // ---- Running cases ------------------------------------------------------------------------------

  /** The ids of the moment, for the next case's valid requests. */
  refreshContext(): void {
    const home = this.#home;
    if (home === undefined) return;
    this.ctx.offerId = home.offerOn(this.ctx.victimAgentId) ?? 'fuzz-no-offer';
  }

  async #runHttp(c: HttpCase): Promise<Outcome> {
    const base = c.daemon === 'master' ? this.#m.url : this.#a.url;
    const abort = new AbortController();
    const signal = AbortSignal.any([abort.signal, AbortSignal.timeout(REQUEST_TIMEOUT_MS)]);
    let res: Response;
    try {
      res = await fetch(base + c.path, { method: c.method, headers: c.headers, body: c.body ?? null, signal, redirect: 'manual' });
    } catch (e) {
      return { text: '', accepted: false, failure: { kind: 'no-answer', detail: `no answer: ${fetchError(e)}` } };
    }
    try {
      // A 200 without Content-Length from a v1 endpoint is a stream (a SUBSCRIBE): read its first
      // bytes, then hang up. A large legacy JSON answer (/master/state) is chunked too: it is
      // read whole like any other.
      const stream = res.headers.get('content-length') === null && c.path.includes('/api/v1');
      if (res.status === 200 && stream && res.body !== null) {
        const text = await this.#readStream(res, abort);
        return { status: 200, text, accepted: true };
      }
      const text = await res.text();
      const outcome: Outcome = { status: res.status, text, accepted: res.status >= 200 && res.status < 300 };
      if (serverFailure(res.status, text)) outcome.failure = { kind: 'status', detail: `${res.status} ${text.slice(0, 300)}` };
      return outcome;
    } catch (e) {
      return { status: res.status, text: '', accepted: false, failure: { kind: 'no-answer', detail: `${res.status}, then the body failed: ${fetchError(e)}` } };
    } finally {
      abort.abort();
    }
  }

  /**
   * Reads the first record of a stream. A scheduler SUBSCRIBE that was accepted made a
   * framework: it is torn down on its own stream (synchronously, before the 202), so it
   * neither lingers nor disturbs later comparisons.
   */
  async #readStream(res: Response, abort: AbortController): Promise<string> {
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const records = new RecordReader();
    const deadline = Date.now() + REQUEST_TIMEOUT_MS;
    const streamId = res.headers.get('mesos-stream-id');
    while (Date.now() < deadline) {
      const chunk = await Promise.race([reader.read(), sleep(Math.max(1, deadline - Date.now())).then(() => undefined)]);
      if (chunk === undefined || chunk.done) break;
      for (const r of records.push(Buffer.from(chunk.value))) {
        if (streamId === null) return r.slice(0, 300);
        const e = parseJson(r) as { type?: string; subscribed?: { framework_id?: { value?: string } } };
        const fid = e.subscribed?.framework_id?.value;
        if (e.type === 'SUBSCRIBED' && typeof fid === 'string') {
          const td = await this.#post('master', '/api/v1/scheduler', JSON.stringify({ type: 'TEARDOWN', framework_id: { value: fid } }), { 'content-type': 'application/json', 'mesos-stream-id': streamId });
          if (td.status !== 202) this.#fail(this.#index, 'heal', 'POST /api/v1/scheduler', `harness: TEARDOWN of fuzz-subscribed ${fid}`, '', `${td.status} ${td.text}`);
        }
        return r.slice(0, 300);
      }
    }
    abort.abort();
    return '';
  }

  async #runWire(c: WireCase): Promise<Outcome> {
    let fa: FakeAgent;
    try {
      fa = await FakeAgent.connect(this.#m.url, { self: { ...WIRE_SELF } });
    } catch (e) {
      return { text: '', accepted: false, failure: { kind: 'no-answer', detail: `agent session refused: ${(e as Error).message}` } };
    }
    try {
      if (c.registered) {
        const known = this.ctx.wireAgentId === 'fuzz-wire-unregistered' ? {} : { agentId: this.ctx.wireAgentId };
        const r = await fa.register({ ...known, timeoutMs: REQUEST_TIMEOUT_MS });
        this.ctx.wireAgentId = r.agent_id;
      }
      for (const f of c.frames) {
        if ('text' in f) fa.sendRaw(f.text);
        else fa.ws.send(f.binary, { binary: true });
      }
      const probe = await this.#probe(fa);
      // With several frames, an early valid one (a REGISTER) is handled even when a later one
      // closes the session: its effects land after the close, so the state may change.
      const several = c.frames.length > 1;
      if (probe.kind === 'answered') {
        this.ctx.wireAgentId = probe.agentId;
        return { text: 'probe answered', accepted: true };
      }
      if (probe.kind === 'silent') return { text: '', accepted: several, failure: { kind: 'wire', detail: `the session went silent: no answer to a REGISTER and no close within ${REQUEST_TIMEOUT_MS} ms` } };
      const text = `closed ${probe.code} ${probe.reason}`;
      if (!CLEAN_CLOSES.has(probe.code)) return { text, accepted: several, failure: { kind: 'wire', detail: `session ${text}` } };
      return { text, accepted: several };
    } catch (e) {
      return { text: '', accepted: false, failure: { kind: 'wire', detail: `valid REGISTER before the fuzzed frames failed: ${(e as Error).message}` } };
    } finally {
      fa.close();
      await fa.waitClosed().catch(() => fa.terminate());
    }
  }

  /**
   * A valid REGISTER after the fuzzed frames: the master handles a session's frames in order,
   * so its REGISTERED means every frame before it was handled; a close means one was refused.
   */
  #probe(fa: FakeAgent): Promise<{ kind: 'answered'; agentId: string } | { kind: 'closed'; code: number; reason: string } | { kind: 'silent' }> {
    const msg: Record<string, unknown> = { type: 'REGISTER', request_id: PROBE_REQUEST_ID, agent: fa.self, version: '0.1.0', capabilities: ['MULTI_ROLE', 'AGENT_DRAINING'], tasks: [], frameworks: [] };
    if (this.ctx.wireAgentId !== 'fuzz-wire-unregistered') msg['agent_id'] = this.ctx.wireAgentId;
    return new Promise((resolve) => {
      type Result = Parameters<typeof resolve>[0];
      const done = (r: Result): void => {
        clearTimeout(timer);
        fa.ws.off('message', onMessage);
        fa.ws.off('close', onClose);
        resolve(r);
      };
      const onMessage = (data: Buffer): void => {
        try {
          const m = JSON.parse(data.toString('utf8')) as { type?: string; request_id?: number; agent_id?: string };
          if (m.type === 'REGISTERED' && m.request_id === PROBE_REQUEST_ID) done({ kind: 'answered', agentId: String(m.agent_id) });
        } catch {
          // not ours to judge here
        }
      };
      const onClose = (code: number, reason: Buffer): void => done({ kind: 'closed', code, reason: reason.toString('utf8') });
      const timer = setTimeout(() => done({ kind: 'silent' }), REQUEST_TIMEOUT_MS);
      fa.ws.on('message', onMessage);
      fa.ws.on('close', onClose);
      if (fa.closed !== undefined) done({ kind: 'closed', ...fa.closed });
      else fa.ws.send(JSON.stringify(msg), () => {});
    });
  }

  /** Could this case change state if accepted? Reads (GETs, GET_* calls, the agent API, /health) never may. */
  #mayChange(c: FuzzCase): boolean {
    if (c.kind === 'wire') return true;
    if (c.area === 'misc' || c.area === 'agent' || c.daemon === 'agent' || c.method !== 'POST') return false;
    if (c.area === 'operator') {
      const type = this.#typeOf(c);
      return type === undefined || !type.startsWith('GET_');
    }
    return true;
  }

  #typeOf(c: HttpCase): string | undefined {
    if (c.body === undefined || c.body.length > 8 * 1024 * 1024) return undefined;
    try {
      const v = JSON.parse(new TextDecoder().decode(c.body)) as { type?: unknown };
      return typeof v?.type === 'string' ? v.type : undefined;
    } catch {
      return undefined;
    }
  }

  #target(c: FuzzCase): string {
    return c.kind === 'wire' ? 'agent wire' : `${c.daemon === 'agent' ? 'agent ' : ''}${c.method} ${c.path.length > 60 ? `${c.path.slice(0, 30)}...` : c.path}`;
  }

  #fail(index: number, kind: FailureKind, target: string, label: string, body: string, detail: string): void {
    this.failures.push({ index, kind, target, label, body, detail });
    if (this.failures.length >= MAX_FAILURES) this.stopped ??= `${MAX_FAILURES} failures`;
  }

  /**
   * A daemon that is gone (its `exited` promise settled, or its pid not there). After a reset
   * or a dropped session the process may be dying still: `waitMs` gives its exit time to land.
   */
  async #dead(waitMs = 0): Promise<string | undefined> {
    const daemons = [['master', this.#m.daemon], ['agent', this.#a.daemon]] as const;
    if (waitMs > 0) await Promise.race([...daemons.map(([, d]) => d.exited), sleep(waitMs)]);
    for (const [name, d] of daemons) {
      if (!d.running || !alive(d.pid)) {
        await Promise.race([d.exited, sleep(1_000)]);
        return `${name} (pid ${d.pid}) is gone (${JSON.stringify(d.running ? 'no exit event yet' : await d.exited)}); stderr: ${d.stderr.slice(-1500)}`;
      }
    }
    return undefined;
  }

  /**
   * Waits (bounded) for an error-level line after a 5xx: log lines come through the daemon's
   * stdout pipe and may land after the answer, and would then be blamed on the next case.
   */
  async #awaitErrorLog(ms: number): Promise<void> {
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      for (const [d, from] of this.#logFrom) if (d.records.slice(from).some((r) => r['level'] === 'error')) return;
      await sleep(10);
    }
  }

  /** Error-level log lines since the last look (an internal error, a failed registry write, ...). */
  #newErrors(): string[] {
    const out: string[] = [];
    for (const [d, from] of this.#logFrom) {
      const fresh = d.records.slice(from);
      this.#logFrom.set(d, d.records.length);
      for (const r of fresh as LogRecord[]) {
        if (r['level'] !== 'error') continue;
        const { time: _time, ...rest } = r;
        out.push(`${d === this.#m.daemon ? 'master' : 'agent'} logged ${JSON.stringify(rest).slice(0, 400)}`);
      }
    }
    return out;
  }

  async #healthy(): Promise<string | undefined> {
    for (const [name, url] of [['master', this.#m.url], ['agent', this.#a.url]] as const) {
      try {
        const r = await fetch(`${url}/health`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        await r.arrayBuffer();
        if (r.status !== 200) return `${name} GET /health answered ${r.status}`;
      } catch (e) {
        return `${name} GET /health failed: ${fetchError(e)}`;
      }
    }
    return undefined;
  }

  /** After any case: crash, logs, and every HEALTH_EVERY cases /health. Returns false to stop the run. */
  async checkpoint(index: number, label: string, target: string, force = false, waitMs = 0): Promise<boolean> {
    const dead = await this.#dead(waitMs);
    if (dead !== undefined) {
      const last = this.failures[this.failures.length - 1];
      // The case's own failure (a reset, a dropped session) was the crash: report it as one.
      if (last !== undefined && last.index === index) {
        last.detail = `${dead}; the case itself got: ${last.detail}`;
        last.kind = 'crash';
      } else this.#fail(index, 'crash', target, label, '', dead);
      this.stopped = `a daemon died at case #${index}`;
      return false;
    }
    const last = this.failures[this.failures.length - 1];
    for (const e of this.#newErrors()) {
      // The log line of a 500 this case already failed on says the same thing: keep one failure.
      if (last !== undefined && last.index === index && last.kind !== 'log') last.detail += `; ${e}`;
      else this.#fail(index, 'log', target, label, '', e);
    }
    if (force || index % HEALTH_EVERY === 0) {
      const sick = await this.#healthy();
      if (sick !== undefined) {
        this.#fail(index, 'health', target, label, '', sick);
        this.stopped = `unhealthy after case #${index}`;
        return false;
      }
    }
    return this.stopped === undefined;
  }

  async run(index: number, c: FuzzCase): Promise<void> {
    this.#index = index;
    this.cases++;
    this.areas.set(c.area, (this.areas.get(c.area) ?? 0) + 1);
    const target = this.#target(c);
    const body = c.kind === 'wire' ? c.frames.map((f) => ('text' in f ? preview(f.text) : preview(f.binary))).join(' | ') : preview(c.body);
    const outcome = c.kind === 'http' ? await this.#runHttp(c) : await this.#runWire(c);
    const key = outcome.status === undefined ? `${c.kind === 'wire' ? 'wire ' : ''}${outcome.text.split(' ').slice(0, 2).join(' ') || 'none'}` : String(outcome.status);
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + 1);
    if (outcome.failure !== undefined) this.#fail(index, outcome.failure.kind, target, c.label, body, outcome.failure.detail);
    if (outcome.failure?.kind === 'status' || outcome.failure?.kind === 'no-answer') await this.#awaitErrorLog(300);
    // No answer, or a session dropped: the likeliest cause is a daemon going down.
    if (!(await this.checkpoint(index, c.label, target, false, outcome.failure === undefined || outcome.failure.kind === 'status' ? 0 : 300))) return;
    if (outcome.failure !== undefined) {
      // A 5xx may have half-changed state: start comparing afresh.
      await this.#resync();
      return;
    }
    if (outcome.accepted && this.#mayChange(c)) {
      await this.#afterAccepted(c);
      return;
    }
    // Rejected, or a read: the state must be as it was, once a session close has landed (bounded
    // by the one guard: a loaded machine may take more than a moment; a correct run returns at once).
    let s = await this.snapshot();
    for (const deadline = Date.now() + REQUEST_TIMEOUT_MS; s.text !== this.#baseline?.text && Date.now() < deadline; ) {
      await sleep(40);
      s = await this.snapshot();
    }
    if (s.text !== this.#baseline?.text) {
      this.#fail(index, 'state', target, c.label, body, `${outcome.status ?? outcome.text} but the state changed: ${this.#diff(this.#baseline, s)}`);
      await this.#resync();
    }
  }

  async #afterAccepted(c: FuzzCase): Promise<void> {
    const home = this.#home;
    if (c.kind === 'http' && c.area === 'scheduler' && home !== undefined) {
      const type = this.#typeOf(c);
      // The offer named may be gone now; wait for a fresh one rather than name a stale one.
      if (type === 'ACCEPT' || type === 'DECLINE') home.offers.delete(this.ctx.offerId);
      // Undo a SUPPRESS, so offers keep coming.
      await this.#post('master', '/api/v1/scheduler', JSON.stringify({ type: 'REVIVE', framework_id: { value: home.id } }), { 'content-type': 'application/json', 'mesos-stream-id': home.streamId }).catch(() => undefined);
    }
    // A wire frame's effects trail the master's answer (a REGISTER that reports frameworks has them
    // recovered, then expired, each through a commit): wait for them to land before comparing.
    const s = c.kind === 'wire' ? await this.#settle() : await this.snapshot();
    if (s.text === this.#baseline?.text && this.#home?.ended !== true) return;
    await this.#heal(s);
    this.#baseline = await this.#settle();
  }

  #diff(a: Snapshot | undefined, b: Snapshot): string {
    const out: string[] = [];
    for (const [k, v] of Object.entries(b.parts)) {
      const before = a?.parts[k];
      if (before === v) continue;
      // Show where they part, not just how they start: long lists differ far from their head.
      const b0 = before ?? '';
      let at = 0;
      while (at < b0.length && at < v.length && b0[at] === v[at]) at++;
      const from = Math.max(0, at - 120);
      out.push(`${k} (from char ${from}): before ${b0.slice(from, from + 300)} after ${v.slice(from, from + 300)}`);
    }
    return out.join('; ');
  }

  // ---- Transport-level cases ----------------------------------------------------------------------

  /** The fixed transport cases, each run once among the random ones. */
  transportCases(): Array<{ name: string; run: () => Promise<string | undefined> }> {
    const m = this.#m;
    const a = this.#a;
    const oversize = (daemon: 'master' | 'agent', path: string, limit: number) => async (): Promise<string | undefined> => {
      const pad = 'x'.repeat(2 * limit);
      const body = new TextEncoder().encode(`{"type":"GET_HEALTH","pad":"${pad}"}`);
      try {
        const res = await fetch(`${daemon === 'master' ? m.url : a.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const text = await res.text();
        return res.status === 413 ? undefined : `a ${body.length}-byte body answered ${res.status} (expected 413): ${text.slice(0, 200)}`;
      } catch (e) {
        return `a ${body.length}-byte body: the client could not read an answer (expected 413): ${fetchError(e)}`;
      }
    };
    const hangUp = (daemon: 'master' | 'agent', path: string) => async (): Promise<string | undefined> => {
      const port = daemon === 'master' ? m.port : a.port;
      const host = daemon === 'master' ? m.ip : a.ip;
      const head = `POST ${path} HTTP/1.1\r\nHost: ${host}:${port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{"type":"G`;
      await rawHttp(host, port, head, true);
      // Give the server the moment it needs to notice the hang-up (and log, if it is going to).
      await sleep(100);
      return undefined;
    };
    const raw = (payload: string, expect: RegExp) => async (): Promise<string | undefined> => {
      const r = await rawHttp(m.ip, m.port, payload, false);
      return expect.test(r.statusLine) ? undefined : `answered ${JSON.stringify(r.statusLine)}${r.error === undefined ? '' : ` (${r.error})`}, expected ${expect}`;
    };
    const everyType = async (): Promise<string | undefined> => {
      const problems: string[] = [];
      const types = ['text/plain', 'application/x-protobuf', 'multipart/form-data; boundary=x', 'application/json; charset=latin1', '', 'application/JSON', ';;', 'application/json, text/plain'];
      // Bodies that change nothing when they are read (the maintenance endpoints read any type): a read call, or a refused one.
      for (const [daemon, path, body] of [['master', '/api/v1', '{"type":"GET_HEALTH"}'], ['master', '/api/v1/scheduler', '{"type":"GET_HEALTH"}'], ['master', '/maintenance/schedule', '[]'], ['master', '/machine/down', '{}'], ['agent', '/api/v1', '{"type":"GET_HEALTH"}']] as const) {
        for (const ct of types) {
          const r = await this.#post(daemon, path, body, { 'content-type': ct });
          if (serverFailure(r.status, r.text)) problems.push(`${daemon} ${path} Content-Type ${JSON.stringify(ct)}: ${r.status} ${r.text.slice(0, 200)}`);
        }
        // No Content-Type at all (a byte body, so fetch adds none).
        const res = await fetch(`${daemon === 'master' ? m.url : a.url}${path}`, { method: 'POST', body: new TextEncoder().encode(body), signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        const text = await res.text();
        if (serverFailure(res.status, text)) problems.push(`${daemon} ${path} without Content-Type: ${res.status} ${text.slice(0, 200)}`);
      }
      return problems.length === 0 ? undefined : problems.join('; ');
    };
    const everyMethod = async (): Promise<string | undefined> => {
      const problems: string[] = [];
      for (const [daemon, path] of [['master', '/api/v1'], ['master', '/api/v1/scheduler'], ['master', '/machine/down'], ['master', '/machine/up'], ['master', '/maintenance/status'], ['agent', '/api/v1']] as const) {
        for (const method of ['GET', 'HEAD', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) {
          const res = await fetch(`${daemon === 'master' ? m.url : a.url}${path}`, { method, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
          const text = await res.text();
          if (serverFailure(res.status, text) || (path !== '/maintenance/status' && res.status < 400)) problems.push(`${daemon} ${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
        }
      }
      return problems.length === 0 ? undefined : problems.join('; ');
    };
    const oversizeFrame = async (): Promise<string | undefined> => {
      const fa = await FakeAgent.connect(m.url);
      try {
        fa.sendRaw('x'.repeat(MAX_FRAME_BYTES + 1));
        const c = await fa.waitClosed(REQUEST_TIMEOUT_MS).catch(() => undefined);
        return c !== undefined && c.code === 1009 ? undefined : `a ${MAX_FRAME_BYTES + 1}-byte frame: session ${c === undefined ? 'not closed' : `closed ${c.code} ${c.reason}`} (expected 1009)`;
      } finally {
        fa.terminate();
      }
    };
    return [
      { name: `POST /api/v1 with a ${2 * MAX_API_BODY_BYTES}-byte body`, run: oversize('master', '/api/v1', MAX_API_BODY_BYTES) },
      { name: `POST /api/v1/scheduler with a ${2 * MAX_API_BODY_BYTES}-byte body`, run: oversize('master', '/api/v1/scheduler', MAX_API_BODY_BYTES) },
      { name: `POST /maintenance/schedule with a ${2 * MAX_API_BODY_BYTES}-byte body`, run: oversize('master', '/maintenance/schedule', MAX_API_BODY_BYTES) },
      { name: `POST /machine/down with a ${2 * MAX_API_BODY_BYTES}-byte body`, run: oversize('master', '/machine/down', MAX_API_BODY_BYTES) },
      { name: `agent POST /api/v1 with a ${2 * AGENT_MAX_BODY_BYTES}-byte body`, run: oversize('agent', '/api/v1', AGENT_MAX_BODY_BYTES) },
      { name: 'POST /api/v1: client hangs up after 10 of 1000 body bytes', run: hangUp('master', '/api/v1') },
      { name: 'POST /api/v1/scheduler: client hangs up mid-body', run: hangUp('master', '/api/v1/scheduler') },
      { name: 'POST /maintenance/schedule: client hangs up mid-body', run: hangUp('master', '/maintenance/schedule') },
      { name: 'POST /machine/up: client hangs up mid-body', run: hangUp('master', '/machine/up') },
      { name: 'agent POST /api/v1: client hangs up mid-body', run: hangUp('agent', '/api/v1') },
      { name: 'a garbage request line', run: raw('GARBAGE\r\n\r\n', /^HTTP\/1\.[01] 4\d\d/) },
      { name: 'a 100 KB header', run: raw(`GET /health HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(100_000)}\r\n\r\n`, /^HTTP\/1\.[01] 4\d\d/) },
      { name: 'a broken chunked body', run: raw('POST /api/v1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nnope\r\n\r\n', /^HTTP\/1\.[01] 4\d\d/) },
      { name: 'Content-Length and chunked together', run: raw('POST /api/v1 HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', /^HTTP\/1\.[01] 4\d\d/) },
      { name: 'an upgrade on an unknown path', run: raw('GET /agent/nope HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n', /^HTTP\/1\.[01] 404/) },
      { name: 'every odd Content-Type on every POST endpoint', run: everyType },
      { name: 'every other method on every POST endpoint', run: everyMethod },
      { name: `an agent frame of ${MAX_FRAME_BYTES + 1} bytes`, run: oversizeFrame },
    ];
  }

  async runTransport(index: number, name: string, run: () => Promise<string | undefined>): Promise<void> {
    this.#index = index;
    this.cases++;
    this.areas.set('transport', (this.areas.get('transport') ?? 0) + 1);
    let problem: string | undefined;
    try {
      problem = await run();
    } catch (e) {
      problem = `threw ${(e as Error).message}`;
    }
    const label = `transport: ${name}`;
    if (problem !== undefined) this.#fail(index, 'transport', name, label, '', problem);
    // Log lines come through the daemon's stdout pipe: give a late one the time to arrive here, not at the next case.
    await sleep(100);
    if (!(await this.checkpoint(index, label, name, true))) return;
    const s = await this.snapshot();
    if (s.text !== this.#baseline?.text) {
      this.#fail(index, 'state', name, label, '', `the state changed: ${this.#diff(this.#baseline, s)}`);
      await this.#resync();
    }
  }

  /** An exception from the harness's own requests: a crash if a daemon is gone, else a failure that ends the run. */
  async harnessError(index: number, label: string, e: unknown): Promise<void> {
    if (await this.checkpoint(index, label, 'harness', false, 500)) {
      this.#fail(index, 'heal', 'harness', label, '', `the harness's own request failed: ${fetchError(e)}`);
      this.stopped = `the harness could not go on after case #${index}`;
    }
  }

  report(ms: number): string {
    const distinct = new Map<string, { first: Failure; count: number }>();
    for (const f of this.failures) {
      const k = distinctKey(f);
      const d = distinct.get(k);
      if (d === undefined) distinct.set(k, { first: f, count: 1 });
      else d.count++;
    }
    const lines = [
      `fuzz seed ${SEED} (replay: ${REPLAY}): ${this.cases} cases in ${(ms / 1000).toFixed(1)} s`,
      `  by area: ${[...this.areas].map(([k, v]) => `${k} ${v}`).join(', ')}`,
      `  answers: ${[...this.statuses].sort().map(([k, v]) => `${k}:${v}`).join(' ')}`,
    ];
    if (this.stopped !== undefined) lines.push(`  STOPPED EARLY: ${this.stopped}`);
    const crash = this.failures.find((f) => f.kind === 'crash');
    if (crash !== undefined) lines.push(`  CRASH at case #${crash.index} (seed ${SEED}): ${crash.label.slice(0, 300)}\n    ${crash.detail.slice(0, 600)}`);
    if (this.failures.length > 0) {
      const f = this.failures[0] as Failure;
      lines.push(
        `${this.failures.length} failing cases, ${distinct.size} distinct.`,
        `FIRST failing case #${f.index} (seed ${SEED}; alone, if it does not need the cases before it: DRYDOCK_FUZZ_SEED=${SEED} DRYDOCK_FUZZ_ONLY=${f.index}): [${f.kind}] ${f.target}`,
        `  case: ${f.label}`,
        `  body: ${f.body}`,
        `  got:  ${f.detail}`,
        'distinct failures (count, first case):',
      );
      for (const { first, count } of distinct.values()) lines.push(`  - x${count} #${first.index} [${first.kind}] ${first.target}: ${first.detail.slice(0, 300)}\n      case: ${first.label.slice(0, 300)}\n      body: ${first.body.slice(0, 300)}`);
    }
    return lines.join('\n');
  }
}

test('the fuzz generator replays a seed: same seed, same cases, whatever the ids', () => {
  // Ids of the same length, so that byte counts in labels agree; the ids themselves are masked.
  const ctx = (n: string): FuzzContext => ({ victimAgentId: `victim-${n}`, realAgentId: `real-${n}`, frameworkId: `fw-${n}`, streamId: `stream-${n}`, offerId: `offer-${n}`, wireAgentId: `wire-${n}` });
  const mask = (label: string): string => label.replace(/(victim|real|fw|stream|offer|wire)-[0-9]/g, '$1-N');
  const labels = (seed: number, c: FuzzContext): string[] => Array.from({ length: 300 }, (_, i) => mask(generateCase(seed, i, c).label));
  assert.deepEqual(labels(SEED, ctx('1')), labels(SEED, ctx('2')), `seed ${SEED}: the same seed generated different cases`);
  assert.notDeepEqual(labels(SEED, ctx('1')), labels((SEED + 1) >>> 0, ctx('1')), `seed ${SEED}: a different seed generated the same cases`);
  // Case i does not depend on the cases before it (DRYDOCK_FUZZ_ONLY regenerates it alone).
  assert.equal(mask(generateCase(SEED, 123, ctx('1')).label), labels(SEED, ctx('1'))[123], `seed ${SEED}: case 123 differs when generated alone`);
});

test(`seeded fuzz over every endpoint and the agent wire (${REPLAY})`, { timeout: 150_000 }, async (t) => {
  t.diagnostic(`DRYDOCK_FUZZ_SEED=${SEED} (replay: ${REPLAY})`);
  console.log(`# fuzz: DRYDOCK_FUZZ_SEED=${SEED} (replay: ${REPLAY})`);
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'fuzz-agent' });
  const fuzz = new Fuzz(m, a);
  t.after(() => fuzz.close());
  await fuzz.setUp().catch((e: unknown) => assert.fail(`seed ${SEED}: setting up the fuzz run failed: ${(e as Error).message}`));

  const started = Date.now();
  const transports = ONLY === undefined && AREAS === undefined ? fuzz.transportCases() : [];
  const indices = ONLY === undefined ? Array.from({ length: CASES }, (_, i) => i) : [Number(ONLY)];
  // Transport cases are spread evenly through the run, at fixed places for a given case count.
  const every = Math.max(1, Math.floor(indices.length / (transports.length + 1)));
  let nextTransport = 0;
  for (const [k, i] of indices.entries()) {
    if (Date.now() - started > TIME_BUDGET_MS) {
      t.diagnostic(`time budget spent after ${k} of ${indices.length} cases`);
      break;
    }
    const transport = k > 0 && k % every === 0 ? transports[nextTransport++] : undefined;
    if (transport !== undefined) {
      await fuzz.runTransport(i, transport.name, transport.run).catch((e: unknown) => fuzz.harnessError(i, `transport: ${transport.name}`, e));
      if (fuzz.stopped !== undefined) break;
    }
    fuzz.refreshContext();
    const c = generateCase(SEED, i, fuzz.ctx);
    if (AREAS !== undefined && !AREAS.includes(c.area)) continue;
    try {
      const t0 = Date.now();
      await fuzz.run(i, c);
      if (process.env['FUZZ_DEBUG_SLOW'] !== undefined && Date.now() - t0 > 150) console.log(`SLOW ${Date.now() - t0} ms #${i} ${c.label.slice(0, 200)}`);
    } catch (e) {
      // The harness's own requests failed (a snapshot, a heal): a dead daemon, most likely.
      await fuzz.harnessError(i, c.label, e);
    }
    if (fuzz.stopped !== undefined) break;
  }
  if (fuzz.stopped === undefined) await fuzz.checkpoint(indices.length, 'end of run', 'GET /health', true);

  const report = fuzz.report(Date.now() - started);
  t.diagnostic(report);
  for (const line of report.split('\n')) console.log(`# ${line}`);
  if (fuzz.failures.length > 0) assert.fail(report);
});

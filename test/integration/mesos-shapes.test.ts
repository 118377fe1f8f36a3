/**
 * Mesos-shaped answers are exactly Mesos-shaped: a real master and two real agents go through
 * a framework's life and the cluster's maintenance (a task running with a health check and
 * labels, a failed task, a framework update, a maintenance schedule with inverse offers
 * accepted and rescinded, a machine taken DOWN, a maintenance plan, a drain held in DRAINING
 * then DRAINED, a teardown and a refused re-subscription), and every answer of every master
 * and agent v1 call, every operator SUBSCRIBE event and every scheduler event is read strictly
 * as Mesos 1.x's v1 message (test/helpers/mesos-strict.ts over shared/mesos-proto): unknown
 * fields, unknown enum names, wrong JSON types, missing required fields, out-of-range
 * integers, and an envelope that is not Mesos' (`type` and that type's own field only).
 *
 * One row per call or event type, so later work adds rows. A row with known deviations is
 * marked todo (with the reason) while exactly those deviations show; anything else fails. A
 * row whose call answers 501 is skipped while it does. At the end, Google's json_format must
 * read every collected answer and event as the strict reader does.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { parseJson, stringifyJson } from '../../shared/json.js';
import { RecordReader } from '../../shared/recordio.js';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { eventually, EVENT_DEADLINE_MS, FIXTURES, startAgent, startMaster, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
import { EventStream } from '../helpers/event-stream.js';
import { googleProtobufMissing, googleRead } from '../helpers/google-protobuf.js';
import { readStrict } from '../helpers/mesos-strict.js';
import { labelledTask } from '../helpers/tasks.js';

// ---- The table ---------------------------------------------------------------------------------

/** Deviations a row is known to have today, and why they are still there. */
interface Known {
  readonly reason: string;
  readonly deviations: readonly RegExp[];
}

/** One call's answers or one event type's records, read as one Mesos message. */
interface Row {
  /** What is read: `master GET_AGENTS`, `operator event TASK_ADDED`, `scheduler event OFFERS`, `agent GET_CONTAINERS`. */
  readonly name: string;
  /** The Mesos message every sample must be. */
  readonly message: string;
  /** The call or event type (the envelope's `type`). */
  readonly type: string;
  readonly known?: Known;
}

/** Master calls and what they carry besides their type (a sub-message Mesos requires). */
const MASTER_CALLS: ReadonlyArray<readonly [string, Record<string, unknown>?]> = [
  ['GET_HEALTH'],
  ['GET_VERSION'],
  ['GET_FLAGS'],
  ['GET_METRICS', { get_metrics: {} }],
  ['GET_LOGGING_LEVEL'],
  ['GET_MASTER'],
  ['GET_AGENTS'],
  ['GET_FRAMEWORKS'],
  ['GET_EXECUTORS'],
  ['GET_OPERATIONS'],
  ['GET_TASKS'],
  ['GET_ROLES'],
  ['GET_WEIGHTS'],
  ['GET_QUOTA'],
  ['GET_STATE'],
  ['GET_MAINTENANCE_SCHEDULE'],
  ['GET_MAINTENANCE_STATUS'],
];

/** What an agent call may name: the sandbox of a task of the scenario's framework (its virtual path, as Mesos attaches it). */
interface AgentScene {
  readonly sandbox: string;
}

/** Agent calls and what they carry besides their type; the files calls read the sandbox of a task that ran. */
const AGENT_CALLS: ReadonlyArray<readonly [string, ((scene: AgentScene) => Record<string, unknown>)?]> = [
  ['GET_HEALTH'],
  ['GET_VERSION'],
  ['GET_FLAGS'],
  ['GET_METRICS'],
  ['GET_LOGGING_LEVEL'],
  ['GET_STATE'],
  ['GET_AGENT'],
  ['GET_CONTAINERS'],
  ['GET_FRAMEWORKS'],
  ['GET_EXECUTORS'],
  ['GET_OPERATIONS'],
  ['GET_TASKS'],
  ['GET_RESOURCE_PROVIDERS'],
  ['LIST_FILES', (scene) => ({ list_files: { path: scene.sandbox } })],
  ['READ_FILE', (scene) => ({ read_file: { path: `${scene.sandbox}/stdout`, offset: 0 } })],
];

const KNOWN_MASTER: Readonly<Record<string, Known>> = {};
const KNOWN_AGENT: Readonly<Record<string, Known>> = {};
const KNOWN_OPERATOR: Readonly<Record<string, Known>> = {};

/**
 * Mesos' operator events. Drydock's own (AGENT_UPDATED, MACHINE_UPDATED, MAINTENANCE_PLAN_*) are
 * on Drydock's own stream (test/integration/drydock-api.test.ts): one of them on this stream
 * would have no row here, and fail below.
 */
const OPERATOR_EVENTS = ['SUBSCRIBED', 'HEARTBEAT', 'TASK_ADDED', 'TASK_UPDATED', 'AGENT_ADDED', 'AGENT_REMOVED', 'FRAMEWORK_ADDED', 'FRAMEWORK_UPDATED', 'FRAMEWORK_REMOVED'];
const SCHEDULER_EVENTS = ['SUBSCRIBED', 'HEARTBEAT', 'OFFERS', 'INVERSE_OFFERS', 'RESCIND', 'RESCIND_INVERSE_OFFER', 'UPDATE', 'FAILURE', 'ERROR'];

const withKnown = (row: Omit<Row, 'known'>, known: Known | undefined): Row => (known === undefined ? row : { ...row, known });

const ROWS: readonly Row[] = [
  ...MASTER_CALLS.map(([type]) => withKnown({ name: `master ${type}`, message: 'mesos.v1.master.Response', type }, KNOWN_MASTER[type])),
  ...OPERATOR_EVENTS.map((type) => withKnown({ name: `operator event ${type}`, message: 'mesos.v1.master.Event', type }, KNOWN_OPERATOR[type])),
  ...SCHEDULER_EVENTS.map((type) => ({ name: `scheduler event ${type}`, message: 'mesos.v1.scheduler.Event', type })),
  ...AGENT_CALLS.map(([type]) => withKnown({ name: `agent ${type}`, message: 'mesos.v1.agent.Response', type }, KNOWN_AGENT[type])),
];

// ---- What the scenario collects ------------------------------------------------------------------

/** One answer or event: where in the scenario it was taken, its HTTP status (calls) and its JSON. */
interface Sample {
  readonly at: string;
  readonly status: number;
  readonly json: unknown;
  readonly text: string;
}

/** Samples by row name. */
class Collected {
  readonly #rows = new Map<string, Sample[]>();

  add(row: string, sample: Sample): void {
    let list = this.#rows.get(row);
    if (list === undefined) this.#rows.set(row, (list = []));
    list.push(sample);
  }

  of(row: string): readonly Sample[] {
    return this.#rows.get(row) ?? [];
  }

  rows(): string[] {
    return [...this.#rows.keys()];
  }
}

/** POSTs a v1 call; the answer with its JSON parsed keeping int64s exact. */
async function post(url: string, body: unknown): Promise<{ status: number; text: string; json: unknown }> {
  const res = await fetch(`${url}/api/v1`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: stringifyJson(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : parseJson(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** Every master call of the table, once, at a point of the scenario. */
async function snapshotMaster(m: MasterHandle, at: string, into: Collected): Promise<void> {
  for (const [type, extra] of MASTER_CALLS) {
    const r = await post(m.url, { type, ...extra });
    into.add(`master ${type}`, { at, ...r });
  }
}

/** Every agent call of the table, once. */
async function snapshotAgent(a: AgentHandle, at: string, into: Collected, scene: AgentScene): Promise<void> {
  for (const [type, extra] of AGENT_CALLS) {
    const r = await post(a.url, { type, ...extra?.(scene) });
    into.add(`agent ${type}`, { at, ...r });
  }
}

/**
 * A SUBSCRIBE whose stream the master ends by itself (a refused re-subscription): every record
 * until the end, bounded in time.
 */
async function recordsUntilEnd(masterUrl: string, body: unknown, timeoutMs: number): Promise<string[]> {
  const res = await fetch(`${masterUrl}/api/v1/scheduler`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: stringifyJson(body),
    signal: AbortSignal.timeout(timeoutMs),
  });
  assert.equal(res.status, 200, 'the refused SUBSCRIBE still opens a stream');
  const reader = new RecordReader();
  const out: string[] = [];
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) out.push(...reader.push(Buffer.from(chunk)));
  return out;
}

// ---- The scenario ---------------------------------------------------------------------------------

const A = { ip: '127.0.0.2', hostname: 'shapes-a' };
const B = { ip: '127.0.0.3', hostname: 'shapes-b' };

type Offer = { id: { value: string }; agent_id: { value: string } };
type InverseOffer = { id: { value: string }; agent_id?: { value: string } };
type Status = { task_id: { value: string }; agent_id?: unknown; state: string; uuid?: string; healthy?: boolean };
const offersOf = (e: SchedulerEvent): Offer[] => (e.type === 'OFFERS' ? (e['offers'] as { offers: Offer[] }).offers : []);
const inverseOffersOf = (e: SchedulerEvent): InverseOffer[] => (e.type === 'INVERSE_OFFERS' ? (e['inverse_offers'] as { inverse_offers: InverseOffer[] }).inverse_offers : []);
const statusOf = (e: SchedulerEvent): Status | undefined => (e.type === 'UPDATE' ? (e['update'] as { status: Status }).status : undefined);

const FRAMEWORK = {
  user: userInfo().username,
  name: 'shapes',
  hostname: 'shapes-scheduler',
  checkpoint: true,
  failover_timeout: 60,
  roles: ['shapes'],
  capabilities: [{ type: 'MULTI_ROLE' }, { type: 'PARTITION_AWARE' }, { type: 'TASK_KILLING_STATE' }],
  labels: { labels: [{ key: 'team', value: 'drydock' }] },
};

const task = labelledTask;

/** The cluster's life, collecting every answer and event into `into`. */
async function scenario(t: TestContext, into: Collected, opStreams: EventStream[], schedulers: SchedulerClient[], extraSchedulerRecords: string[]): Promise<void> {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await snapshotMaster(m, 'an empty master', into);
  const early = await EventStream.open(m);
  opStreams.push(early);
  t.after(() => early.close());
  // Drydock's own stream, where the plan's events are (its records are Drydock's, not read here).
  const drydockEvents = await EventStream.drydock(m);
  t.after(() => drydockEvents.close());

  const a = await startAgent(t, { master: m.address, ip: A.ip, hostname: A.hostname, flags: ['--attributes=rack:r1;zone:z1'], stopSignal: 'SIGUSR1' });
  const b = await startAgent(t, { master: m.address, ip: B.ip, hostname: B.hostname, flags: ['--attributes=rack:r2'], stopSignal: 'SIGUSR1' });
  const aId = a.agentId ?? assert.fail('agent A registered without an id');
  const bId = b.agentId ?? assert.fail('agent B registered without an id');

  // A framework: two tasks on A, one that stays (a health check, labels, a kill policy, and
  // it ignores SIGTERM so a drain holds it), one that fails at once.
  const s = await SchedulerClient.subscribe(m.address, FRAMEWORK);
  schedulers.push(s);
  t.after(() => s.close());
  const ack = async (e: SchedulerEvent): Promise<void> => {
    const st = statusOf(e);
    if (st?.uuid === undefined) return;
    const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
    assert.equal(r.status, 202, r.text);
  };
  const offerOf = async (agentId: string, what: string): Promise<Offer> => {
    const e = await s.next((x) => offersOf(x).some((o) => o.agent_id.value === agentId), undefined, what);
    return offersOf(e).find((o) => o.agent_id.value === agentId) as Offer;
  };
  const offerA = await offerOf(aId, 'an offer of agent A');
  const health = { type: 'COMMAND', command: { value: 'true' }, delay_seconds: 0, interval_seconds: 0.2, grace_period_seconds: 0 };
  const accepted = await s.call('ACCEPT', {
    offer_ids: [offerA.id],
    operations: [
      {
        type: 'LAUNCH',
        launch: {
          task_infos: [
            // A grace period under the harness's 10 s stop, so a failed run's SIGUSR1 still ends it.
            task('stays', aId, `exec ${join(FIXTURES, 'ignore-sigterm.sh')}`, { health_check: health, kill_policy: { grace_period: { nanoseconds: 3_000_000_000 } } }),
            task('fails', aId, 'exit 3'),
          ],
        },
      },
    ],
    filters: { refuse_seconds: 0 },
  });
  assert.equal(accepted.status, 202, accepted.text);
  for (const [id, until] of [['stays', (st: Status) => st.state === 'TASK_RUNNING' && st.healthy === true], ['fails', (st: Status) => st.state === 'TASK_FAILED']] as const) {
    for (;;) {
      const e = await s.next((x) => statusOf(x)?.task_id.value === id, undefined, `updates of ${id}`);
      await ack(e);
      if (until(statusOf(e) as Status)) break;
    }
  }
  const updated = await s.call('UPDATE_FRAMEWORK', { framework_info: { ...FRAMEWORK, id: { value: s.frameworkId }, labels: { labels: [{ key: 'team', value: 'drydock-2' }] } } });
  assert.equal(updated.status, 200, `UPDATE_FRAMEWORK: ${updated.text}`);
  // The framework keeps its offer of B (often in the same OFFERS event as A's): the schedule and B going DOWN rescind it.
  await eventually(() => (s.received.some((e) => offersOf(e).some((o) => o.agent_id.value === bId)) ? true : undefined), undefined, 50, 'an offer of agent B');
  await snapshotMaster(m, 'a task running, one failed', into);
  // The sandbox of the task that stays, as Mesos attaches an executor's latest run (a command task's executor id is its task id).
  const scene: AgentScene = { sandbox: `/frameworks/${s.frameworkId}/executors/stays/runs/latest` };
  await snapshotAgent(a, 'a task running, one failed', into, scene);

  // A maintenance plan that waits before its first machine (canary), completed by the
  // operator without doing its work, deleted.
  const plan = async (method: string, path: string, body?: string): Promise<void> => {
    const r = await fetch(`${m.url}/v1/maintenance/plans${path}`, { method, ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(10_000) });
    assert.equal(r.status, 200, `${method} /v1/maintenance/plans${path}: ${await r.text()}`);
  };
  await plan('POST', '', JSON.stringify({ name: 'shapes', machines: { hostnames: [B.hostname] }, window: '1hrs', phase_strategy: 'canary' }));
  await plan('POST', '/shapes/forceComplete', '');
  await drydockEvents.waitFor((x) => x.type === 'MAINTENANCE_PLAN_UPDATED', 0, undefined, 'MAINTENANCE_PLAN_UPDATED');
  await plan('DELETE', '/shapes');

  // A window over B (A is drained below, and Mesos drains no agent in a schedule): the
  // framework holds an offer of B, so it gets inverse offers and offers with unavailability;
  // posting the schedule again rescinds the outstanding ones and makes new ones; it accepts.
  const schedule = {
    type: 'UPDATE_MAINTENANCE_SCHEDULE',
    update_maintenance_schedule: {
      schedule: {
        windows: [
          {
            machine_ids: [{ hostname: B.hostname, ip: B.ip }],
            unavailability: { start: { nanoseconds: BigInt(Date.now()) * 1_000_000n }, duration: { nanoseconds: 3_600_000_000_000n } },
          },
        ],
      },
    },
  };
  const inverseOfferOf = async (agentId: string, what: string): Promise<InverseOffer> => {
    const e = await s.next((x) => inverseOffersOf(x).some((o) => o.agent_id?.value === agentId), undefined, what);
    return inverseOffersOf(e).find((o) => o.agent_id?.value === agentId) as InverseOffer;
  };
  let r = await post(m.url, schedule);
  assert.equal(r.status, 200, r.text);
  await inverseOfferOf(bId, 'an inverse offer of B');
  r = await post(m.url, schedule);
  assert.equal(r.status, 200, r.text);
  await s.next((x) => x.type === 'RESCIND_INVERSE_OFFER', undefined, 'RESCIND_INVERSE_OFFER');
  const io = await inverseOfferOf(bId, 'a new inverse offer of B');
  const answered = await s.call('ACCEPT_INVERSE_OFFERS', { inverse_offer_ids: [io.id], filters: { refuse_seconds: 60 } });
  assert.equal(answered.status, 202, answered.text);
  await eventually(async () => {
    const st = (await post(m.url, { type: 'GET_MAINTENANCE_STATUS' })).json as { get_maintenance_status: { status: { draining_machines?: Array<{ statuses?: unknown[] }> } } };
    return st.get_maintenance_status.status.draining_machines?.some((d) => (d.statuses ?? []).length > 0) === true ? true : undefined;
  }, undefined, 100, "the framework's answer in the maintenance status");

  // B goes DOWN: its agent is removed (FAILURE, AGENT_REMOVED) and its offer rescinded.
  r = await post(m.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [{ hostname: B.hostname, ip: B.ip }] } });
  assert.equal(r.status, 200, r.text);
  await s.next((x) => x.type === 'FAILURE', undefined, 'FAILURE for agent B');
  await snapshotMaster(m, 'a machine scheduled, one DOWN', into);

  // Drain A: the task ignores SIGTERM and is killed after max_grace_period; its TASK_KILLED is
  // not acknowledged yet, so A stays DRAINING while both daemons are read.
  r = await post(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: aId }, max_grace_period: { seconds: 1 } } });
  assert.equal(r.status, 200, r.text);
  let killed: SchedulerEvent;
  for (;;) {
    killed = await s.next((x) => statusOf(x)?.task_id.value === 'stays', undefined, 'the kill of the drained task');
    if (statusOf(killed)?.state === 'TASK_KILLED') break;
    await ack(killed);
  }
  await snapshotMaster(m, 'an agent DRAINING', into);
  await snapshotAgent(a, 'an agent DRAINING', into, scene);
  await ack(killed);
  await eventually(async () => {
    const ag = (await post(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; drain_info?: { state: string } }> } };
    return ag.get_agents.agents.find((x) => x.agent_info.id.value === aId)?.drain_info?.state === 'DRAINED' ? true : undefined;
  }, undefined, 100, 'agent A DRAINED');
  await snapshotAgent(a, 'an agent DRAINED', into, scene);

  // The framework is torn down; subscribing again as it is refused with an ERROR event.
  const down = await s.call('TEARDOWN');
  assert.equal(down.status, 202, down.text);
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([s.ended, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error('the framework stream did not end after TEARDOWN')), EVENT_DEADLINE_MS)))]).finally(() => clearTimeout(timer));
  extraSchedulerRecords.push(...(await recordsUntilEnd(m.url, { type: 'SUBSCRIBE', framework_id: { value: s.frameworkId }, subscribe: { framework_info: { ...FRAMEWORK, id: { value: s.frameworkId } } } }, EVENT_DEADLINE_MS)));
  await snapshotMaster(m, 'an agent DRAINED, the framework gone', into);

  // A late subscriber's snapshot holds everything that happened.
  const late = await EventStream.open(m);
  opStreams.push(late);
  t.after(() => late.close());
  await late.waitFor((x) => x.type === 'SUBSCRIBED', 0, undefined, 'SUBSCRIBED');
  // The early stream saw the framework go: wait for it so the last events are in.
  await early.waitFor((x) => x.type === 'FRAMEWORK_REMOVED', 0, undefined, 'FRAMEWORK_REMOVED');
}

// ---- Reading ---------------------------------------------------------------------------------------

/** The envelope of an answer or event: `type` is the row's, and the only other key is that type's own field (none for HEARTBEAT). */
function envelope(row: Row, json: unknown): string[] {
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return [];
  const o = json as Record<string, unknown>;
  const out: string[] = [];
  if (o['type'] !== row.type) out.push(`type: ${JSON.stringify(o['type'])} where ${row.type} was asked`);
  const payload = row.type === 'HEARTBEAT' ? undefined : row.type.toLowerCase();
  for (const key of Object.keys(o)) if (key !== 'type' && key !== payload) out.push(`${key}: a Mesos ${row.type} does not carry it`);
  return out;
}

test('every Mesos-named answer and event reads strictly as its Mesos 1.x v1 message', async (t) => {
  const collected = new Collected();
  const opStreams: EventStream[] = [];
  const schedulers: SchedulerClient[] = [];
  const refused: string[] = [];
  let stopped: unknown;
  try {
    await scenario(t, collected, opStreams, schedulers, refused);
  } catch (e) {
    stopped = e;
  }
  // Events go into their rows by type; one with no row fails below, so new events get rows.
  for (const [i, s] of opStreams.entries()) for (const rec of s.records) collected.add(`operator event ${rec.type}`, { at: `operator stream ${i + 1}`, status: 200, json: rec, text: '' });
  for (const e of schedulers.flatMap((s) => s.received)) collected.add(`scheduler event ${e.type}`, { at: 'the framework stream', status: 200, json: e, text: '' });
  for (const text of refused) {
    const e = parseJson(text) as { type: string };
    collected.add(`scheduler event ${e.type}`, { at: 'a refused re-subscription', status: 200, json: e, text });
  }
  const why = stopped === undefined ? '' : ` (the scenario stopped early: ${(stopped as Error).message})`;

  for (const row of ROWS) {
    await t.test(row.name, (st) => {
      const samples = collected.of(row.name);
      assert.ok(samples.length > 0, `the scenario produced no ${row.name}${why}`);
      if (samples.every((x) => x.status === 501)) {
        st.skip(`answers 501 (${samples[0]?.text.trim() ?? ''}): no answer to read yet`);
        return;
      }
      const deviations = new Set<string>();
      for (const x of samples) {
        if (x.status !== 200) {
          deviations.add(`answered ${x.status} ${x.text.trim()} (${x.at})`);
          continue;
        }
        for (const d of [...envelope(row, x.json), ...readStrict(row.message, x.json)]) deviations.add(d);
      }
      const all = [...deviations];
      const known = all.filter((d) => row.known?.deviations.some((re) => re.test(d)) === true);
      const unknown = all.filter((d) => !known.includes(d));
      assert.deepEqual(unknown, [], `${row.name} deviates from ${row.message} (samples taken at: ${[...new Set(samples.map((x) => x.at))].join('; ')})`);
      if (known.length > 0) {
        st.todo(row.known?.reason);
        assert.deepEqual(known, [], `known deviations of ${row.name}`);
      }
    });
  }

  await t.test('every event type seen has a row', () => {
    const rowNames = new Set(ROWS.map((r) => r.name));
    assert.deepEqual(collected.rows().filter((n) => !rowNames.has(n)), []);
  });

  const googleMissing = googleProtobufMissing();
  await t.test("Google's json_format reads every answer and event as the strict reader does", { skip: googleMissing ?? false }, async (st) => {
    const samples = ROWS.flatMap((row) => collected.of(row.name).filter((x) => x.status === 200).map((x) => ({ row, x, type: row.message, json: x.json })));
    const verdicts = await googleRead(st, samples);
    const disagreements = samples.flatMap((s, i) => {
      const ours = readStrict(s.type, s.json);
      const google = verdicts[i];
      return google !== undefined && google.ok !== (ours.length === 0) ? [`${s.row.name} at ${s.x.at}: the reader says ${JSON.stringify(ours)}, Google ${google.ok ? 'accepts' : `refuses: ${google.error ?? ''}`}`] : [];
    });
    assert.deepEqual(disagreements, []);
  });

  if (stopped !== undefined) throw stopped;
});

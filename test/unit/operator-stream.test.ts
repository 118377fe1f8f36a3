/**
 * The operator event stream's core: what each master event becomes on the wire (a table),
 * and the RecordIO framing of records with non-ASCII text, cross-checked with the reader the
 * DC/OS client uses (@dcos/recordio). Plus the shell's socket rules on a loopback server
 * with a manual clock: one heartbeat timer, the slow-reader bound, release on close.
 */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { ManualClock } from '../../shared/clock.js';
import { stringifyJson } from '../../shared/json.js';
import { Logger } from '../../shared/log.js';
import type { Task, TaskStatus } from '../../shared/mesos.js';
import { encodeRecord, RecordReader } from '../../shared/recordio.js';
import { MasterEvents, type MasterEvent } from '../../master/term/events.js';
import { eventRecord, HEARTBEAT_RECORD, OperatorStreams, subscribedRecord, type StreamView } from '../../master/api/operator-stream.js';
import { serveStreams, until } from '../helpers/stream-server.js';

const require = createRequire(import.meta.url);
/** @dcos/recordio: `read(text) -> [records, rest]`, lengths in UTF-8 bytes. */
const readRecordio = (require('@dcos/recordio') as { read: (input: string) => [string[], string] }).read;

const TASK: Task = {
  name: 't1',
  task_id: { value: 't1' },
  framework_id: { value: 'fw' },
  agent_id: { value: 'A' },
  state: 'TASK_STAGING',
  resources: [],
  statuses: [],
};
const AGENT = { agent_info: { id: { value: 'A' }, hostname: 'h' }, active: true, deactivated: false };
const FRAMEWORK = { framework_info: { id: { value: 'fw' }, name: 'marathon', user: 'root' }, active: true };
const RUNNING: TaskStatus = { task_id: { value: 't1' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1.5, uuid: 'dXVpZA==' };

/** A view that knows agent A, task fw/t1 on A, framework fw. */
const view: StreamView = {
  task: (a, f, t) => (a === 'A' && f === 'fw' && t === 't1' ? TASK : undefined),
  agent: (a) => (a === 'A' ? AGENT : undefined),
  framework: (f) => (f === 'fw' ? FRAMEWORK : undefined),
  frameworkInfo: (f) => (f === 'fw' ? FRAMEWORK.framework_info : undefined),
};

describe('eventRecord', () => {
  const cases: Array<[string, MasterEvent, unknown]> = [
    ['AGENT_ADDED renders the agent as GET_AGENTS', { type: 'AGENT_ADDED', agentId: 'A' }, { type: 'AGENT_ADDED', agent_added: { agent: AGENT } }],
    ['AGENT_ADDED for an agent already gone is skipped', { type: 'AGENT_ADDED', agentId: 'B' }, undefined],
    ['a reconnect is not AGENT_ADDED', { type: 'AGENT_RECONNECTED', agentId: 'A' }, undefined],
    ['a disconnect is not streamed', { type: 'AGENT_DISCONNECTED', agentId: 'A' }, undefined],
    // Drydock's own events are on Drydock's stream (drydock-stream.ts), never on Mesos'.
    ['AGENT_UPDATED is not a Mesos event', { type: 'AGENT_UPDATED', agentId: 'A', change: 'DRAINING' }, undefined],
    ['MACHINE_UPDATED is not a Mesos event', { type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: ['m1'], agentIds: [] }, undefined],
    ['MAINTENANCE_PLAN_ADDED is not a Mesos event', { type: 'MAINTENANCE_PLAN_ADDED', plan: 'kernel', status: 'PENDING', machines: 3 }, undefined],
    ['MAINTENANCE_PLAN_UPDATED is not a Mesos event', { type: 'MAINTENANCE_PLAN_UPDATED', plan: 'kernel', status: 'WAITING' }, undefined],
    ['MAINTENANCE_PLAN_REMOVED is not a Mesos event', { type: 'MAINTENANCE_PLAN_REMOVED', plan: 'kernel' }, undefined],
    ['a gone agent is not streamed (Mesos has no event for it)', { type: 'AGENT_GONE', agentId: 'A', tasks: [] }, undefined],
    ['internal events are not streamed', { type: 'TASK_ACKNOWLEDGED', agentId: 'A', frameworkId: 'fw', taskId: 't1' }, undefined],
    ['unreachable is not AGENT_REMOVED', { type: 'AGENT_UNREACHABLE', agentId: 'A' }, undefined],
    ['explicit removal is AGENT_REMOVED', { type: 'AGENT_REMOVED', agentId: 'A', reason: 'REPLACED' }, { type: 'AGENT_REMOVED', agent_removed: { agent_id: { value: 'A' } } }],
    ['TASK_ADDED renders the task', { type: 'TASK_ADDED', agentId: 'A', frameworkId: 'fw', taskId: 't1' }, { type: 'TASK_ADDED', task_added: { task: TASK } }],
    ['TASK_ADDED for an unknown task is skipped', { type: 'TASK_ADDED', agentId: 'A', frameworkId: 'fw', taskId: 'nope' }, undefined],
    [
      'TASK_UPDATED carries framework_id, the status stamped with its agent, and the state',
      { type: 'TASK_UPDATED', agentId: 'A', frameworkId: 'fw', taskId: 't1', status: RUNNING, state: 'TASK_RUNNING' },
      { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'fw' }, status: { ...RUNNING, agent_id: { value: 'A' } }, state: 'TASK_RUNNING' } },
    ],
    [
      'TASK_UPDATED keeps an agent_id the status already has',
      { type: 'TASK_UPDATED', agentId: 'A', frameworkId: 'fw', taskId: 't1', status: { ...RUNNING, agent_id: { value: 'X' } }, state: 'TASK_RUNNING' },
      { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'fw' }, status: { ...RUNNING, agent_id: { value: 'X' } }, state: 'TASK_RUNNING' } },
    ],
    ['FRAMEWORK_ADDED', { type: 'FRAMEWORK_ADDED', frameworkId: 'fw' }, { type: 'FRAMEWORK_ADDED', framework_added: { framework: FRAMEWORK } }],
    ['FRAMEWORK_UPDATED', { type: 'FRAMEWORK_UPDATED', frameworkId: 'fw' }, { type: 'FRAMEWORK_UPDATED', framework_updated: { framework: FRAMEWORK } }],
    ['FRAMEWORK_ADDED for an unknown framework is skipped', { type: 'FRAMEWORK_ADDED', frameworkId: 'zz' }, undefined],
    ['FRAMEWORK_REMOVED carries the FrameworkInfo', { type: 'FRAMEWORK_REMOVED', frameworkId: 'fw' }, { type: 'FRAMEWORK_REMOVED', framework_removed: { framework_info: FRAMEWORK.framework_info } }],
    ['FRAMEWORK_REMOVED of a forgotten framework still names it', { type: 'FRAMEWORK_REMOVED', frameworkId: 'zz' }, { type: 'FRAMEWORK_REMOVED', framework_removed: { framework_info: { user: '', name: '', id: { value: 'zz' } } } }],
  ];
  for (const [name, event, want] of cases) {
    test(name, () => assert.deepEqual(eventRecord(event, view), want));
  }

  test('SUBSCRIBED and HEARTBEAT', () => {
    assert.deepEqual(subscribedRecord({ get_tasks: {} }, 15_000), { type: 'SUBSCRIBED', subscribed: { get_state: { get_tasks: {} }, heartbeat_interval_seconds: 15 } });
    assert.equal(stringifyJson(subscribedRecord({}, 200)), '{"type":"SUBSCRIBED","subscribed":{"get_state":{},"heartbeat_interval_seconds":0.2}}');
    assert.equal(stringifyJson(HEARTBEAT_RECORD), '{"type":"HEARTBEAT"}');
  });

  test('int64 nanoseconds in a record stay exact', () => {
    const agent = { registered_time: { nanoseconds: 1443830400000000123n } };
    const text = stringifyJson(eventRecord({ type: 'AGENT_ADDED', agentId: 'A' }, { ...view, agent: () => agent }));
    assert.match(text, /"nanoseconds":1443830400000000123\}/);
  });
});

describe('RecordIO framing of stream records', () => {
  const texts = ['{"type":"HEARTBEAT"}', '{"hostname":"nœud-é"}', '{"h":"€ 😀 日本"}', ''];

  test('the length counts UTF-8 bytes, not characters', () => {
    const rec = encodeRecord('{"h":"€😀"}');
    // € is 3 bytes, 😀 4 (2 UTF-16 units): 8 ASCII + 7 = 15 bytes, 11 JS characters.
    assert.equal('{"h":"€😀"}'.length, 11);
    assert.equal(rec.toString('utf8'), '15\n{"h":"€😀"}');
  });

  test('our reader and @dcos/recordio read back what we frame, whole and split at every byte', () => {
    const wire = Buffer.concat(texts.map((t) => encodeRecord(t)));
    const [records, rest] = readRecordio(wire.toString('utf8'));
    // @dcos/recordio's pattern needs a non-empty body, so it stops at the empty record.
    assert.deepEqual(records, texts.slice(0, 3));
    assert.equal(rest, '0\n');
    for (let cut = 0; cut <= wire.length; cut++) {
      const reader = new RecordReader();
      const got = [...reader.push(wire.subarray(0, cut)), ...reader.push(wire.subarray(cut))];
      assert.deepEqual(got, texts, `split at ${cut}`);
    }
  });
});

describe('OperatorStreams (shell)', () => {
  /** A loopback server whose every request subscribes; returns it and a way to open streams. */
  async function setup(t: { after: (fn: () => void | Promise<void>) => void }, opts: { maxSubscribers?: number; maxBufferedBytes?: number } = {}) {
    const events = new MasterEvents();
    const clock = new ManualClock();
    const streams = new OperatorStreams({
      events,
      view,
      snapshot: () => ({ get_agents: { agents: [] } }),
      clock,
      logger: new Logger({ level: 'error' }),
      heartbeatIntervalMs: 15_000,
      maxSubscribers: opts.maxSubscribers ?? 1000,
      ...(opts.maxBufferedBytes === undefined ? {} : { maxBufferedBytes: opts.maxBufferedBytes }),
    });
    const open = await serveStreams(t, (res) => streams.subscribe(res), () => streams.close(), 'POST', (r) => r);
    return { events, clock, streams, open };
  }

  test('one heartbeat timer and one bus listener for all subscribers, both released by the last one out', async (t) => {
    const { events, clock, streams, open } = await setup(t);
    const before = events.listenerCount;
    const pendingBefore = clock.pending;
    const a = await open();
    const b = await open();
    await until(() => a.records.length === 2 && b.records.length === 2, 'SUBSCRIBED + HEARTBEAT each');
    assert.equal(streams.count, 2);
    assert.equal(events.listenerCount, before + 1);
    assert.equal(clock.pending, pendingBefore + 1);
    clock.advance(15_000);
    events.emit({ type: 'AGENT_REMOVED', agentId: 'A', reason: 'x' });
    events.emit({ type: 'AGENT_DISCONNECTED', agentId: 'A' });
    await until(() => a.records.length === 4 && b.records.length === 4, 'a heartbeat and one event each');
    assert.deepEqual(a.records.slice(2).map((r) => (JSON.parse(r) as { type: string }).type), ['HEARTBEAT', 'AGENT_REMOVED']);
    a.res.destroy();
    b.res.destroy();
    await until(() => streams.count === 0, 'both forgotten');
    assert.equal(events.listenerCount, before);
    assert.equal(clock.pending, pendingBefore);
  });

  test('a subscriber that stops reading is closed once its unsent data passes the bound', async (t) => {
    const { events, streams, open } = await setup(t, { maxBufferedBytes: 256 * 1024 });
    const slow = await open();
    await until(() => slow.records.length === 2, 'subscribed');
    slow.res.pause();
    const big = 'x'.repeat(64 * 1024);
    const emitBig = (): void => {
      events.emit({ type: 'FRAMEWORK_REMOVED', frameworkId: big });
    };
    // Socket buffers on both sides absorb a few MB before the server's writable backs up.
    for (let i = 0; i < 2000 && streams.count > 0; i++) emitBig();
    assert.equal(streams.count, 0, 'the slow subscriber was dropped');
    assert.equal(events.listenerCount, 0);
  });

  test('past maxSubscribers the oldest ends; close() ends the rest and refuses new ones with 503', async (t) => {
    const { streams, open } = await setup(t, { maxSubscribers: 1 });
    const a = await open();
    const aEnded = new Promise<void>((r) => a.res.on('end', r));
    const b = await open();
    await aEnded;
    assert.equal(streams.count, 1);
    const bEnded = new Promise<void>((r) => b.res.on('end', r));
    streams.close();
    await bEnded;
    assert.equal(streams.count, 0);
    const c = await open();
    assert.equal(c.res.statusCode, 503);
  });
});

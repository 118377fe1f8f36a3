/**
 * One event per HTTP chunk on every stream, read from the raw chunked encoding of a socket
 * (test/helpers/raw-stream.ts): a framework library that splits each chunk on its newline and
 * expects exactly one RecordIO record (npm mesos-framework) reads every stream Drydock writes.
 * The scheduler SUBSCRIBE once wrote SUBSCRIBED and the first HEARTBEAT in one chunk; each row
 * here reads its stream's first records and some events, and holds every chunk to one record.
 * A stream is one more row.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodeProtobuf, decodeProtobuf } from '../../shared/protobuf.js';
import { startAgent, startMaster, startScheduler, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { oneRecord, RawStream, type RawRequest } from '../helpers/raw-stream.js';

const MASTER_FLAGS = ['--allocation_interval=100ms', '--heartbeat_interval=300ms'];
const FRAMEWORK = { user: 'root', name: 'chunks' };

/** A record's type, read in the stream's encoding. */
type TypeOf = (record: Buffer) => string;
const jsonType: TypeOf = (r) => String((JSON.parse(r.toString('utf8')) as { type?: unknown }).type);
const protobufType = (message: string): TypeOf => (r) => {
  const read = decodeProtobuf(message, r);
  assert.ok(read.ok, read.ok ? '' : `a record is not a ${message}: ${read.error}`);
  return String(read.value['type']);
};

interface Row {
  readonly name: string;
  /** What is running before the stream opens, and the request that opens it. */
  readonly open: (t: TestContext) => Promise<{ request: RawRequest; master?: MasterHandle }>;
  /** Starts what makes events after the stream is open. */
  readonly provoke?: (t: TestContext, master: MasterHandle) => Promise<void>;
  readonly contentType: string;
  readonly typeOf: TypeOf;
  /** The types the first records must have, in order. */
  readonly first: readonly string[];
  /** A type that must come later (an event). */
  readonly later: string;
}

const schedulerSubscribe = (encoding: 'json' | 'protobuf') => async (t: TestContext) => {
  const master = await startMaster(t, { flags: MASTER_FLAGS });
  await startAgent(t, { master: master.address, resources: 'cpus:1;mem:128' });
  const call = { type: 'SUBSCRIBE', subscribe: { framework_info: FRAMEWORK } };
  const type = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
  return {
    master,
    request: { host: master.ip, port: master.port, method: 'POST', path: '/api/v1/scheduler', headers: { 'Content-Type': type, Accept: type }, body: encoding === 'json' ? JSON.stringify(call) : encodeProtobuf('mesos.v1.scheduler.Call', call) },
  };
};

const operatorSubscribe = (encoding: 'json' | 'protobuf') => async (t: TestContext) => {
  const master = await startMaster(t, { flags: MASTER_FLAGS });
  const type = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
  const call = { type: 'SUBSCRIBE' };
  return {
    master,
    request: { host: master.ip, port: master.port, method: 'POST', path: '/api/v1', headers: { 'Content-Type': type, Accept: type }, body: encoding === 'json' ? JSON.stringify(call) : encodeProtobuf('mesos.v1.master.Call', call) },
  };
};

const addAgent = async (t: TestContext, master: MasterHandle): Promise<void> => {
  await startAgent(t, { master: master.address, resources: 'cpus:1;mem:128' });
};

/** The plan stream's gate file, by its master (the row opens, then provokes). */
const gates = new Map<MasterHandle, string>();

const ROWS: readonly Row[] = [
  { name: 'scheduler SUBSCRIBE, JSON', open: schedulerSubscribe('json'), contentType: 'application/json', typeOf: jsonType, first: ['SUBSCRIBED', 'HEARTBEAT'], later: 'OFFERS' },
  { name: 'scheduler SUBSCRIBE, protobuf', open: schedulerSubscribe('protobuf'), contentType: 'application/x-protobuf', typeOf: protobufType('mesos.v1.scheduler.Event'), first: ['SUBSCRIBED', 'HEARTBEAT'], later: 'OFFERS' },
  { name: 'operator SUBSCRIBE, JSON', open: operatorSubscribe('json'), provoke: addAgent, contentType: 'application/json', typeOf: jsonType, first: ['SUBSCRIBED', 'HEARTBEAT'], later: 'AGENT_ADDED' },
  { name: 'operator SUBSCRIBE, protobuf', open: operatorSubscribe('protobuf'), provoke: addAgent, contentType: 'application/x-protobuf', typeOf: protobufType('mesos.v1.master.Event'), first: ['SUBSCRIBED', 'HEARTBEAT'], later: 'AGENT_ADDED' },
  {
    name: "drydock-scheduler's plan stream (/v1/plans/stream)",
    open: async (t) => {
      const master = await startMaster(t, { flags: MASTER_FLAGS });
      await startAgent(t, { master: master.address, resources: 'cpus:1;mem:256', stopSignal: 'SIGUSR1' });
      const dir = tempDir(t, 'drydock-chunks-');
      gates.set(master, join(dir, 'go'));
      const spec = join(dir, 'service.yml');
      // A deploy whose plan changes once the stream is open: its one task is ready when the gate file exists.
      writeFileSync(spec, `name: hello\npods:\n  hello:\n    count: 1\n    tasks:\n      server:\n        cmd: 'exec sleep 1000'\n        cpus: 0.1\n        memory: 16\n        readiness-check: { cmd: 'test -f ${join(dir, 'go')}', interval: 0.1, delay: 0, timeout: 5 }\nplans:\n  deploy:\n    strategy: serial\n    phases:\n      hello-deploy: { pod: hello, strategy: serial }\n`);
      const s = await startScheduler(t, { master: master.address, spec, flags: ['--offer_hold=200ms'] });
      return { master, request: { host: '127.0.0.1', port: s.port, method: 'GET', path: '/v1/plans/stream' } };
    },
    provoke: (_t, master) => {
      writeFileSync(gates.get(master) as string, '');
      return Promise.resolve();
    },
    contentType: 'application/recordio',
    typeOf: jsonType,
    first: ['PLANS'],
    later: 'PLANS',
  },
];

for (const row of ROWS) {
  test(`one record per HTTP chunk: ${row.name}`, async (t) => {
    const { request, master } = await row.open(t);
    const s = await RawStream.open(request);
    t.after(() => s.close());
    assert.equal(s.status, 200, s.chunks[0]?.toString('utf8'));
    assert.equal(s.header('transfer-encoding'), 'chunked');
    assert.equal(s.header('content-type'), row.contentType);
    const firsts = await s.waitChunks(row.first.length);
    if (row.provoke !== undefined && master !== undefined) await row.provoke(t, master);
    const records = (from: number): Buffer[] =>
      s.chunks.slice(from).map((c, i) => {
        const one = oneRecord(c);
        assert.ok(one.ok, `chunk ${from + i}: ${one.ok ? '' : one.why}`);
        return one.record;
      });
    assert.deepEqual(records(0).slice(0, firsts.length).map(row.typeOf), row.first);
    await s.waitFor((c) => {
      const one = oneRecord(c);
      return one.ok && row.typeOf(one.record) === row.later;
    }, row.first.length, 20_000, row.later);
    // Every chunk so far, the first ones and the events, holds exactly one record.
    records(0);
    assert.ok(s.chunks.length > row.first.length);
  });
}

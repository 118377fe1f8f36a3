/**
 * The master's etcd client options (master/etcd-calls.ts) against fake etcd members: gRPC
 * servers on loopback speaking etcd3's own protos, each told to answer, to hold every call
 * (a member cut off from its quorum), to fail with `etcdserver: no leader`, or to leave a
 * watch stream silent. Every call carries the require-leader metadata; a held read is retried
 * on another member after the read deadline and the held member is skipped afterwards; a
 * write past its deadline is not retried; a silent watch stream is re-created on another
 * member; a member that failed comes back through probes of its own, not through calls.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { Server, ServerCredentials, status as GrpcStatus, type ServerDuplexStream, type ServerUnaryCall, type sendUnaryData, type UntypedServiceImplementation } from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import { Etcd3, GRPCDeadlineExceededError } from 'etcd3';
import { etcdCallLimits, resilientEtcdOptions } from '../../master/process/etcd-calls.js';
import { systemClock } from '../../shared/clock.js';
import { Logger } from '../../shared/log.js';
import { eventually, EVENT_DEADLINE_MS, ROOT } from '../helpers/daemons.js';

// etcd3 tries the members of a call in a shuffled order; its test switch makes it the reverse of `hosts`.
(createRequire(import.meta.url)('etcd3/lib/connection-pool.js') as { ConnectionPool: { deterministicOrder: boolean } }).ConnectionPool.deterministicOrder = true;

const root = new protobuf.Root().loadSync(join(ROOT, 'node_modules', 'etcd3', 'proto', 'rpc.proto'), { keepCase: true });

type Mode = 'ok' | 'hold' | 'noleader' | 'silent-watch';

/** What a fake member was asked: each call's method and its `hasleader` metadata. */
interface Member {
  host: string;
  mode: Mode;
  calls: Array<{ method: string; hasleader: string | undefined }>;
  stop(): Promise<void>;
}

function methodDef(service: string, method: string, req: string, res: string, stream: boolean) {
  const Req = root.lookupType(`etcdserverpb.${req}`);
  const Res = root.lookupType(`etcdserverpb.${res}`);
  return {
    path: `/etcdserverpb.${service}/${method}`,
    requestStream: stream,
    responseStream: stream,
    requestSerialize: (o: object) => Buffer.from(Req.encode(Req.fromObject(o)).finish()),
    requestDeserialize: (b: Buffer) => Req.toObject(Req.decode(b), { longs: String, defaults: false }),
    responseSerialize: (o: object) => Buffer.from(Res.encode(Res.fromObject(o)).finish()),
    responseDeserialize: (b: Buffer) => Res.toObject(Res.decode(b), { longs: String }),
  };
}

const HEADER = { cluster_id: '1', member_id: '1', revision: '5', raft_term: '2' };

async function member(mode: Mode): Promise<Member> {
  const m: Member = { host: '', mode, calls: [], stop: async () => undefined };
  const server = new Server();
  const note = (method: string, md: { get(k: string): unknown[] }): void => {
    m.calls.push({ method, hasleader: md.get('hasleader').map(String)[0] });
  };
  const unary = (method: string, answer: () => object) => (call: ServerUnaryCall<unknown, unknown>, cb: sendUnaryData<unknown>) => {
    note(method, call.metadata);
    if (m.mode === 'hold') return; // a member without quorum holding the call
    if (m.mode === 'noleader') return cb({ code: GrpcStatus.UNAVAILABLE, details: 'etcdserver: no leader' });
    cb(null, answer());
  };
  const kv: UntypedServiceImplementation = {
    Range: unary('Range', () => ({ header: HEADER, kvs: [{ key: Buffer.from('k'), value: Buffer.from('v'), create_revision: '3', mod_revision: '3', version: '1' }], count: '1' })),
    Txn: unary('Txn', () => ({ header: HEADER, succeeded: true, responses: [] })),
  };
  let nextId = 0;
  const watch: UntypedServiceImplementation = {
    Watch: (call: ServerDuplexStream<{ create_request?: object; progress_request?: object }, object>) => {
      note('Watch', call.metadata);
      call.on('data', (req) => {
        if (req.create_request !== undefined) {
          m.calls.push({ method: 'Watch.create', hasleader: undefined });
          call.write({ header: HEADER, watch_id: String(nextId++), created: true });
        } else if (req.progress_request !== undefined) {
          m.calls.push({ method: 'Watch.progress', hasleader: undefined });
          if (m.mode !== 'silent-watch') call.write({ header: HEADER, watch_id: '-1' });
        }
      });
      call.on('error', () => undefined);
      call.on('end', () => call.end());
    },
  };
  server.addService(
    { Range: methodDef('KV', 'Range', 'RangeRequest', 'RangeResponse', false), Txn: methodDef('KV', 'Txn', 'TxnRequest', 'TxnResponse', false) },
    kv,
  );
  server.addService({ Watch: methodDef('Watch', 'Watch', 'WatchRequest', 'WatchResponse', true) }, watch);
  const port = await new Promise<number>((resolve, reject) => server.bindAsync('127.0.0.1:0', ServerCredentials.createInsecure(), (e, p) => (e === null ? resolve(p) : reject(e))));
  m.host = `127.0.0.1:${port}`;
  // At once: a held call or an open watch would keep a graceful shutdown waiting.
  m.stop = async () => server.forceShutdown();
  return m;
}

/** A client over `members`, tried last-given first; TTL 1 s: reads 500 ms, writes 1 s. */
function clientOf(t: { after(fn: () => unknown): void }, members: readonly Member[]): Etcd3 {
  const log = new Logger({ level: 'error', format: 'json', daemon: 'test' });
  const r = resilientEtcdOptions({ hosts: members.map((m) => `http://${m.host}`) }, etcdCallLimits(1_000), systemClock, log, 'probe');
  const client = new Etcd3(r.options);
  t.after(() => {
    r.stop();
    client.close();
  });
  return client;
}

test('a read held by a member is answered by another after the read deadline, with require-leader on both; the held member is skipped afterwards', async (t) => {
  const good = await member('ok');
  const held = await member('hold');
  t.after(() => Promise.all([good.stop(), held.stop()]));
  const client = clientOf(t, [good, held]);
  const t0 = performance.now();
  assert.equal(await client.get('k').string(), 'v');
  const took = performance.now() - t0;
  // At least the read deadline (the held member was tried first); no upper bound: a loaded machine
  // may take any time, and a read that waited for ever would fail at the test's own timeout.
  assert.ok(took >= 450, `the read took ${took} ms: the 500 ms deadline, then the other member`);
  assert.deepEqual(held.calls, [{ method: 'Range', hasleader: 'true' }]);
  assert.deepEqual(good.calls, [{ method: 'Range', hasleader: 'true' }]);
  assert.equal(await client.get('k').string(), 'v');
  assert.equal(held.calls.length, 1, 'the held member is skipped');
  assert.equal(good.calls.length, 2);
  // Probes (a read of their own, every read deadline) find out when it serves again; calls then go to it too.
  held.mode = 'ok';
  await eventually(() => (held.calls.length >= 2 ? true : undefined), undefined, 20, 'a probe of the held member');
  assert.deepEqual(held.calls[1], { method: 'Range', hasleader: 'true' });
  const before = held.calls.length;
  for (let i = 0; i < 20 && held.calls.length === before; i++) assert.equal(await client.get('k').string(), 'v');
  assert.ok(held.calls.length > before, 'the member that came back takes calls again');
});

test('a member without a leader fails the call at once and the next member answers', async (t) => {
  const good = await member('ok');
  const leaderless = await member('noleader');
  t.after(() => Promise.all([good.stop(), leaderless.stop()]));
  const client = clientOf(t, [good, leaderless]);
  assert.equal(await client.get('k').string(), 'v');
  // The member said "no leader" (UNAVAILABLE) and the next member was asked: one call each.
  assert.deepEqual(leaderless.calls, [{ method: 'Range', hasleader: 'true' }]);
  assert.deepEqual(good.calls, [{ method: 'Range', hasleader: 'true' }]);
});

test('a write past its deadline fails to its caller and is not sent to another member (it may have been applied)', async (t) => {
  const good = await member('ok');
  const held = await member('hold');
  t.after(() => Promise.all([good.stop(), held.stop()]));
  const client = clientOf(t, [good, held]);
  const t0 = performance.now();
  await assert.rejects(client.if('k', 'Create', '==', 0).then(client.put('k').value('w')).commit(), (e) => e instanceof GRPCDeadlineExceededError);
  const took = performance.now() - t0;
  assert.ok(took >= 950, `failed after ${took} ms: the 1 s write deadline`);
  assert.deepEqual(held.calls.map((c) => c.method), ['Txn']);
  assert.equal(good.calls.length, 0);
  // A transaction that only reads is repeated like a read.
  const other = await member('hold');
  t.after(() => other.stop());
  const reads = clientOf(t, [good, other]);
  const r = await reads.if('k', 'Create', '>', 0).then(reads.get('k')).commit();
  assert.equal(r.succeeded, true);
  assert.deepEqual(other.calls.map((c) => c.method), ['Txn']);
  assert.deepEqual(good.calls.map((c) => c.method), ['Txn']);
});

test('a watch stream whose member stops answering is noticed (no answer to a progress request) and re-created on another member', async (t) => {
  const good = await member('ok');
  const silent = await member('silent-watch');
  t.after(() => Promise.all([good.stop(), silent.stop()]));
  const client = clientOf(t, [good, silent]);
  const w = await client.watch().key('k').create();
  t.after(() => void w.cancel().catch(() => undefined));
  assert.deepEqual(silent.calls.map((c) => c.method), ['Watch', 'Watch.create']);
  assert.equal(silent.calls[0]?.hasleader, 'true');
  const t0 = performance.now();
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the watch was not re-created within ${EVENT_DEADLINE_MS} ms`)), EVENT_DEADLINE_MS);
    w.once('connected', () => {
      clearTimeout(timer);
      resolve();
    });
  });
  const took = performance.now() - t0;
  // Quiet for 500 ms, a progress request, 500 ms without an answer, then etcd3's reconnect.
  assert.ok(took >= 900, `re-created after ${took} ms`);
  assert.deepEqual(silent.calls.map((c) => c.method), ['Watch', 'Watch.create', 'Watch.progress']);
  assert.deepEqual(good.calls.map((c) => c.method), ['Watch', 'Watch.create']);
  assert.equal(good.calls[0]?.hasleader, 'true');
  // On a member that answers, progress requests keep the stream (their answers never reach etcd3 as a watcher it does not know).
  const events: unknown[] = [];
  w.on('data', (d) => events.push(d));
  await eventually(() => (good.calls.some((c) => c.method === 'Watch.progress') ? true : undefined), undefined, 20, 'a progress request on the member that answers');
  await eventually(() => (good.calls.filter((c) => c.method === 'Watch.progress').length >= 2 ? true : undefined), undefined, 20, 'a second progress request (the first was answered)');
  assert.deepEqual(good.calls.filter((c) => c.method === 'Watch' || c.method === 'Watch.create').length, 2, 'still the same stream');
});

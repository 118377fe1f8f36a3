/**
 * The pure parts of the master's etcd calls (master/etcd-calls.ts) and of its view of the
 * leader (master/leader-view.ts), table-driven, time from a ManualClock: the deadlines from
 * the TTL, which calls may be repeated, the progress answer handed to etcd3 as a no-op, which
 * members are skipped, and how long a read of the election is good for.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EtcdPermissionDeniedError, GRPCCancelledError, GRPCDeadlineExceededError, GRPCInternalError, GRPCUnavailableError } from 'etcd3';
import { classifyCall, etcdCallLimits, isProgressAnswer, MemberHealth, memberFailure, readOnlyTxn, retryable, StreamWatchers, type CallClass } from '../../master/process/etcd-calls.js';
import { LeaderView, masterAddress } from '../../master/process/leader-view.js';
import { ManualClock } from '../../shared/clock.js';

test('etcdCallLimits: reads a third of the TTL (0.5-5 s), writes the TTL (1-7 s), a failed member probed every read deadline', () => {
  const cases: Array<[number, { readMs: number; writeMs: number; probeEveryMs: number; retryForMs: number }]> = [
    [1_000, { readMs: 500, writeMs: 1_000, probeEveryMs: 500, retryForMs: 1_000 }],
    [2_000, { readMs: 667, writeMs: 2_000, probeEveryMs: 667, retryForMs: 2_000 }],
    [3_000, { readMs: 1_000, writeMs: 3_000, probeEveryMs: 1_000, retryForMs: 3_000 }],
    [5_000, { readMs: 1_667, writeMs: 5_000, probeEveryMs: 1_667, retryForMs: 5_000 }],
    [60_000, { readMs: 5_000, writeMs: 7_000, probeEveryMs: 5_000, retryForMs: 7_000 }],
  ];
  for (const [ttl, want] of cases) assert.deepEqual({ ...etcdCallLimits(ttl) }, want, `TTL ${ttl}`);
});

test('classifyCall: what may be repeated after a deadline, what may not, and streams', () => {
  const range = { request_range: { key: 'a' } };
  const put = { request_put: { key: 'a', value: 'b' } };
  const del = { request_delete_range: { key: 'a' } };
  const cases: Array<[string, { service: string; method: string; isStream: boolean; params?: unknown }, CallClass]> = [
    ['a range', { service: 'KV', method: 'range', isStream: false }, 'repeatable'],
    ['a put', { service: 'KV', method: 'put', isStream: false }, 'write'],
    ['a delete', { service: 'KV', method: 'deleteRange', isStream: false }, 'write'],
    ['a compaction', { service: 'KV', method: 'compact', isStream: false }, 'write'],
    ['a guarded read (the winner verifying its key)', { service: 'KV', method: 'txn', isStream: false, params: { compare: [{}], success: [range], failure: [] } }, 'repeatable'],
    ['create-if-absent, else read', { service: 'KV', method: 'txn', isStream: false, params: { compare: [{}], success: [put], failure: [range] } }, 'write'],
    ['a delete on failure', { service: 'KV', method: 'txn', isStream: false, params: { success: [range], failure: [del] } }, 'write'],
    ['a nested write', { service: 'KV', method: 'txn', isStream: false, params: { success: [{ request_txn: { success: [put] } }] } }, 'write'],
    ['a nested read', { service: 'KV', method: 'txn', isStream: false, params: { success: [{ request_txn: { success: [range] } }] } }, 'repeatable'],
    ['a lease grant (a second one expires unused)', { service: 'Lease', method: 'leaseGrant', isStream: false }, 'repeatable'],
    ['a lease revoke', { service: 'Lease', method: 'leaseRevoke', isStream: false }, 'repeatable'],
    ['authentication', { service: 'Auth', method: 'authenticate', isStream: false }, 'repeatable'],
    ['a user added', { service: 'Auth', method: 'userAdd', isStream: false }, 'write'],
    ['the watch stream', { service: 'Watch', method: 'watch', isStream: true }, 'stream'],
    ['the keepalive stream', { service: 'Lease', method: 'leaseKeepAlive', isStream: true }, 'stream'],
  ];
  for (const [name, call, want] of cases) assert.equal(classifyCall(call), want, name);
  assert.equal(readOnlyTxn(undefined), true);
});

test('isProgressAnswer: watch id -1, no creation, no cancellation, no events', () => {
  const cases: Array<[unknown, boolean]> = [
    [{ watch_id: '-1', created: false, canceled: false, events: [], header: { revision: '9' } }, true],
    [{ watch_id: '-1', header: { revision: '9' } }, true],
    [{ watch_id: '-1', created: true, canceled: true, events: [] }, false],
    [{ watch_id: '-1', canceled: true, events: [] }, false],
    [{ watch_id: '0', events: [] }, false],
    [{ watch_id: '-1', events: [{ type: 'PUT' }] }, false],
    [null, false],
    ['x', false],
  ];
  for (const [res, want] of cases) assert.equal(isProgressAnswer(res as never), want, JSON.stringify(res));
});

test('StreamWatchers: a progress answer reaches etcd3 as a no-op for a watcher it knows, at that watcher\'s own revision', () => {
  const w = new StreamWatchers();
  const progress = { watch_id: '-1', created: false, canceled: false, events: [], header: { revision: '50', member_id: '1' } };
  // No watcher yet: nothing to name (the monitor does not probe such a stream).
  assert.deepEqual(w.pass(progress), progress);
  assert.equal(w.pass({ watch_id: '0', created: true, events: [], header: { revision: '10' } }).watch_id, '0');
  assert.equal(w.pass({ watch_id: '1', created: true, events: [], header: { revision: '12' } }).watch_id, '1');
  assert.equal(w.size, 2);
  // An event moves watcher 0 to revision 20; the store is at 50 but watcher 0 has only seen 20.
  w.pass({ watch_id: '0', events: [{ type: 'PUT' }], header: { revision: '20' } });
  assert.deepEqual(w.pass(progress), { ...progress, watch_id: '0', header: { revision: '20', member_id: '1' } });
  // A creation that etcd cancels at once is no watcher; a cancelled one is gone.
  w.pass({ watch_id: '-1', created: true, canceled: true, events: [], header: { revision: '51' } });
  w.pass({ watch_id: '0', canceled: true, events: [], header: { revision: '52' } });
  assert.equal(w.size, 1);
  assert.deepEqual(w.pass(progress), { ...progress, watch_id: '1', header: { revision: '12', member_id: '1' } });
  // Other responses go on unchanged.
  const event = { watch_id: '1', events: [{ type: 'DELETE' }], header: { revision: '60' } };
  assert.equal(w.pass(event), event);
});

test('MemberHealth: a member that failed is skipped while another has not, until a probe (due every probeEveryMs) brings it back', () => {
  const clock = new ManualClock();
  const h = new MemberHealth(['a', 'b', 'c'], 1_000, clock);
  assert.equal(h.skip('a'), false);
  assert.deepEqual(h.due(), []);
  h.failed('a');
  assert.equal(h.skip('a'), true);
  assert.equal(h.skip('b'), false);
  assert.deepEqual(h.due(), [], 'not yet');
  clock.advance(1_000);
  assert.deepEqual(h.due(), ['a']);
  assert.deepEqual(h.due(), [], 'once per period');
  assert.equal(h.skip('a'), true, 'still skipped: the end of a period is a probe, not a real call');
  clock.advance(1_000);
  assert.deepEqual(h.due(), ['a']);
  h.failed('a'); // the probe failed: due a period from now
  clock.advance(999);
  assert.deepEqual(h.due(), []);
  h.failed('b');
  h.failed('c');
  assert.equal(h.allFailed(), true);
  assert.equal(h.skip('a'), false, 'every member failed: none is skipped, a call must go somewhere');
  h.succeeded('c');
  assert.equal(h.allFailed(), false);
  assert.equal(h.skip('a'), true);
  assert.equal(h.skip('c'), false);
  h.succeeded('a'); // a probe (or a call) answered
  assert.equal(h.skip('a'), false);
});

test('memberFailure: Unavailable (no leader, a read past its deadline, a silent stream) and deadlines move to another member; refusals do not', () => {
  assert.equal(memberFailure(new GRPCUnavailableError('etcdserver: no leader')), true);
  assert.equal(memberFailure(new GRPCDeadlineExceededError('Deadline exceeded')), true);
  assert.equal(memberFailure(new EtcdPermissionDeniedError('etcdserver: permission denied')), false);
  assert.equal(memberFailure(new GRPCInternalError('boom')), false);
  assert.equal(memberFailure(new GRPCCancelledError('Cancelled on client')), false, 'etcd3 cancels its own streams');
  assert.equal(memberFailure('text'), false);
});

test('retryable: what etcd3 retries, except a deadline (only a write still reports one: it may have been applied)', () => {
  assert.equal(retryable(new GRPCUnavailableError('etcdserver: no leader')), true);
  assert.equal(retryable(new GRPCUnavailableError('etcd /etcdserverpb.KV/Range got no answer within 1000 ms')), true);
  assert.equal(retryable(new GRPCInternalError('stream reset')), true);
  assert.equal(retryable(new GRPCDeadlineExceededError('Deadline exceeded')), false);
  assert.equal(retryable(new EtcdPermissionDeniedError('etcdserver: permission denied')), false);
});

test('LeaderView: the leader is redirected to only while the last read of the election began within the TTL', () => {
  const clock = new ManualClock();
  const view = new LeaderView(3_000, clock);
  assert.equal(view.leader(), undefined, 'nothing read yet');
  assert.equal(view.age(), undefined);
  view.read(clock.now(), '10.0.0.1:5050');
  assert.equal(view.leader(), '10.0.0.1:5050');
  clock.advance(3_000);
  assert.equal(view.leader(), '10.0.0.1:5050', 'a read that began a TTL ago still counts');
  clock.advance(1);
  assert.equal(view.leader(), undefined, 'etcd unread for longer than the TTL: no leader known');
  // A read that began earlier but answered later changes nothing: its answer is older.
  const early = clock.now();
  clock.advance(100);
  view.read(clock.now(), '10.0.0.2:5050');
  view.read(early, '10.0.0.1:5050');
  assert.equal(view.leader(), '10.0.0.2:5050');
  assert.equal(view.age(), 0);
  // A read that finds no other leader (none, or this master's own key) is an answer too.
  clock.advance(10);
  view.read(clock.now(), undefined);
  assert.equal(view.leader(), undefined);
  view.read(clock.now(), '10.0.0.3:5050');
  view.clear();
  assert.equal(view.leader(), undefined, 'cleared when this master leads');
});

test('masterAddress: ip before hostname, none without a port', () => {
  assert.equal(masterAddress({ address: { ip: '10.0.0.1', hostname: 'm1', port: 5050 } }), '10.0.0.1:5050');
  assert.equal(masterAddress({ address: { hostname: 'm1', port: 5050 } }), 'm1:5050');
  assert.equal(masterAddress({ address: { ip: '10.0.0.1' } }), undefined);
  assert.equal(masterAddress(undefined), undefined);
});

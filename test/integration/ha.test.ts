/**
 * Highly available masters through a real etcd: election, 307s from the standby, failover
 * after kill -9 (the registry in etcd goes on), handover on SIGTERM, and a paused leader
 * fenced out (its writes fail, it never acts as leader again without winning again).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { callApi, EVENT_DEADLINE_MS, eventually, startAgent, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { etcdMissing, startEtcd } from '../helpers/etcd.js';
import { SchedulerClient } from '../../scheduler/client.js';

const skip = etcdMissing();

async function leaderOf(masters: readonly MasterHandle[], after: ReadonlyMap<MasterHandle, number> = new Map()): Promise<MasterHandle> {
  return eventually(() => masters.find((m) => m.daemon.running && m.daemon.records.slice(after.get(m) ?? 0).some((r) => r.msg === 'term started')), undefined, 50, 'a leader');
}

const schedule = { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'h1', ip: '10.0.0.1' }], unavailability: { start: { nanoseconds: '1443830400000000001' } } }] } } };

test('two masters, one etcd: one leads, the standby answers 307; kill -9 of the leader hands the registry to the standby; SIGTERM hands over at once', { skip, timeout: 600_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/ha-test`, '--etcd_ttl=2secs', '--agent_ping_timeout=1secs'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  const first = await leaderOf([a, b]);
  const standby = first === a ? b : a;
  assert.equal((await callApi(first.url, schedule)).status, 200);

  // The standby sends clients to the leader.
  const moved = await fetch(`${standby.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(moved.status, 307);
  assert.equal(moved.headers.get('location'), `//${first.address}/api/v1`);
  assert.equal((await fetch(`${standby.url}/health`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) })).status, 200);
  // A framework subscribes through the standby: the 307 is followed to the leader.
  const fw = await SchedulerClient.subscribe(standby.address, { user: 'root', name: 'via-standby' });
  t.after(() => fw.close());
  assert.equal((await fw.call('REVIVE')).status, 202);
  assert.match((await callApi(first.url, { type: 'GET_FRAMEWORKS' })).text, /"name":"via-standby"/);
  // The leader lists the masters it knows.
  const gm = (await callApi(first.url, { type: 'GET_MASTER' })).json as { get_master: { master_info: { port: number }; standby_masters?: Array<{ port: number }> } };
  assert.equal(gm.get_master.master_info.port, first.port);
  assert.deepEqual(gm.get_master.standby_masters?.map((m) => m.port), [standby.port]);

  // kill -9: the standby wins once the lease expires, with the schedule from etcd.
  const seen = new Map([[standby, standby.daemon.records.length]]);
  first.daemon.signal('SIGKILL');
  await first.daemon.exited;
  const second = await leaderOf([standby], seen);
  const got = await eventually(async () => {
    const r = await callApi(second.url, { type: 'GET_MAINTENANCE_SCHEDULE' });
    return r.status === 200 ? r.text : undefined;
  }, undefined, 100, 'the new leader serving');
  assert.match(got, /"nanoseconds":1443830400000000001/);

  // A third master joins as standby with a lease far longer than any wait of this test (60 s),
  // and leads once the second is stopped.
  const knowsLeader = async (m: MasterHandle): Promise<void> => {
    await eventually(async () => ((await fetch(`${m.url}/redirect`, { redirect: 'manual', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) })).status === 307 ? true : undefined), undefined, 100, 'the new standby knows the leader');
  };
  const c = await startMaster(t, { flags: [...flags.filter((f) => !f.startsWith('--etcd_ttl=')), '--etcd_ttl=60secs'] });
  await knowsLeader(c);
  const seenC = new Map([[c, c.daemon.records.length]]);
  second.daemon.signal('SIGTERM');
  await leaderOf([c], seenC);
  // SIGTERM on that leader resigns: a fourth master takes over within the wait's guard (30 s),
  // which its 60 s lease could not have expired in.
  const d = await startMaster(t, { flags });
  await knowsLeader(d);
  const seenD = new Map([[d, d.daemon.records.length]]);
  const t0 = Date.now();
  c.daemon.signal('SIGTERM');
  await leaderOf([d], seenD);
  t.diagnostic(`handover after SIGTERM: ${Date.now() - t0} ms (the resigning leader's TTL: 60 s)`);
  assert.match((await callApi(d.url, { type: 'GET_MAINTENANCE_SCHEDULE' })).text, /1443830400000000001/);
});

test('a paused leader is fenced: after SIGCONT it is no longer leader and none of its writes land', { skip, timeout: 300_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/fence-test`, '--etcd_ttl=2secs'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  const first = await leaderOf([a, b]);
  const other = first === a ? b : a;
  const seen = new Map([[other, other.daemon.records.length]]);
  first.daemon.signal('SIGSTOP');
  t.after(() => first.daemon.signal('SIGCONT'));
  await leaderOf([other], seen);
  assert.equal((await callApi(other.url, schedule)).status, 200);
  const before = first.daemon.records.length;
  first.daemon.signal('SIGCONT');
  // It notices (its own deadline, its lease, or a fenced write) and stops acting as leader.
  await first.daemon.waitForMsg('leadership lost', {}, undefined, before);
  await eventually(async () => {
    const r = await fetch(`${first.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
    return r.status === 307 && r.headers.get('location') === `//${other.address}/api/v1` ? true : undefined;
  }, undefined, 100, 'the old leader redirecting to the new one');
  // Only the new leader's schedule is in etcd.
  assert.match((await callApi(other.url, { type: 'GET_MAINTENANCE_SCHEDULE' })).text, /"hostname":"h1"/);
});

test('agents follow the leader (etcd:// and a list of masters), keep their ids, and a drain and a window go on across a kill -9 failover', { skip, timeout: 540_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/agents-test`, '--etcd_ttl=2secs', '--agent_ping_timeout=500ms', '--max_agent_ping_timeouts=4'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  const first = await leaderOf([a, b]);
  const agentFlags = ['--registration_backoff_factor=50ms'];
  const viaEtcd = await startAgent(t, { master: `etcd://${etcd.endpoint}/agents-test`, ip: '127.0.0.2', hostname: 'via-etcd', flags: agentFlags });
  const viaList = await startAgent(t, { master: `${a.address},${b.address}`, ip: '127.0.0.3', hostname: 'via-list', flags: agentFlags });
  type Agents = { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; drain_info?: { state: string } }> } };
  const agentsOf = async (m: MasterHandle): Promise<Agents['get_agents']['agents']> => ((await callApi(m.url, { type: 'GET_AGENTS' })).json as Agents).get_agents.agents;
  await eventually(async () => ((await agentsOf(first)).length === 2 ? true : undefined), undefined, 100, 'both agents on the leader');

  // A drain (no tasks: DRAINED at once) and a maintenance window, on the first leader.
  assert.equal((await callApi(first.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: viaList.agentId } } })).status, 200);
  const window = { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'via-etcd', ip: '127.0.0.2' }], unavailability: { start: { nanoseconds: '1' } } }] } } };
  assert.equal((await callApi(first.url, window)).status, 200);

  const standby = first === a ? b : a;
  const seen = new Map([[standby, standby.daemon.records.length]]);
  first.daemon.signal('SIGKILL');
  await first.daemon.exited;
  const second = await leaderOf([standby], seen);
  // Both agents come back to the new leader with their ids; the drain is still DRAINED.
  const agents = await eventually(async () => {
    const list = await agentsOf(second);
    return list.length === 2 ? list : undefined;
  }, undefined, 200, 'both agents re-registered with the new leader');
  assert.deepEqual(agents.map((x) => x.agent_info.id.value).sort(), [viaEtcd.agentId, viaList.agentId].sort());
  assert.equal(agents.find((x) => x.agent_info.id.value === viaList.agentId)?.drain_info?.state, 'DRAINED');
  assert.match((await callApi(second.url, { type: 'GET_MAINTENANCE_STATUS' })).text, /"hostname":"via-etcd"/);
  // The window goes on: DOWN on the new leader shuts the agent down, and it is refused from then on.
  assert.equal((await callApi(second.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [{ hostname: 'via-etcd', ip: '127.0.0.2' }] } })).status, 200);
  const exit = await viaEtcd.daemon.exitWithin();
  assert.deepEqual(exit, { code: 0, signal: null });
});

test('loss of etcd: the leader steps down and every master answers 503; service resumes when etcd does', { skip, timeout: 240_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/quorum-test`, '--etcd_ttl=2secs'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  const first = await leaderOf([a, b]);
  assert.equal((await callApi(first.url, schedule)).status, 200);
  process.kill(etcd.pid, 'SIGSTOP');
  t.after(() => {
    try {
      process.kill(etcd.pid, 'SIGCONT');
    } catch {
      // gone already
    }
  });
  // The leader cannot renew its lease: it fences itself within the TTL and stops serving.
  await first.daemon.waitForMsg('leadership lost');
  for (const m of [a, b]) {
    const r = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(5000) });
    assert.ok(r.status === 503 || r.status === 307, `${m.address}: ${r.status}`);
  }
  const direct = await fetch(`${first.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(5000) });
  assert.deepEqual([direct.status, await direct.text()], [503, 'No leader elected']);
  // The standby cannot read etcd either: once its last read is older than the TTL it no longer
  // knows who leads, and says so instead of sending clients to the deposed leader.
  const standby = first === a ? b : a;
  const health = async (m: MasterHandle): Promise<{ status: number; text: string; location: string | null }> => {
    const r = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(5000) });
    return { status: r.status, text: await r.text(), location: r.headers.get('location') };
  };
  const stoppedAt = Date.now();
  await eventually(async () => {
    const r = await health(standby);
    return r.status === 503 && r.text === 'No leader elected' ? true : undefined;
  }, 10_000, 100, 'the standby answering 503 No leader elected');
  t.diagnostic(`standby 503 ${Date.now() - stoppedAt} ms after the leader fenced itself (TTL 2000 ms)`);
  process.kill(etcd.pid, 'SIGCONT');
  // etcd is back: a master wins again and serves what was written before.
  const served = await eventually(async () => {
    for (const m of [a, b]) {
      const r = await callApi(m.url, { type: 'GET_MAINTENANCE_SCHEDULE' }).catch(() => undefined);
      if (r?.status === 200) return r.text;
    }
    return undefined;
  }, undefined, 200, 'a master serving again');
  assert.match(served, /"hostname":"h1"/);
  // Once a master reads the election again, the one that does not lead redirects to the one that does.
  await eventually(async () => {
    const [ra, rb] = [await health(a), await health(b)];
    if (ra.status === 200 && rb.status === 307 && rb.location === `//${a.address}/api/v1`) return true;
    return rb.status === 200 && ra.status === 307 && ra.location === `//${b.address}/api/v1` ? true : undefined;
  }, 15_000, 100, 'one master serving, the other redirecting to it');
});

test('never two acting leaders: seeded kills, pauses and restarts while an operator writes schedules; every acknowledged write is there', { skip, timeout: 300_000 }, async (t) => {
  const seed = Number(process.env['DRYDOCK_CHAOS_SEED'] ?? Math.floor(Math.random() * 2 ** 31));
  t.diagnostic(`chaos: DRYDOCK_CHAOS_SEED=${seed}`);
  let state = seed >>> 0;
  const rand = (): number => {
    // mulberry32
    state = (state + 0x6d2b79f5) >>> 0;
    let x = state;
    x = Math.imul(x ^ (x >>> 15), x | 1);
    x ^= x + Math.imul(x ^ (x >>> 7), x | 61);
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/chaos`, '--etcd_ttl=1secs'];
  const masters: MasterHandle[] = [await startMaster(t, { flags }), await startMaster(t, { flags }), await startMaster(t, { flags })];
  const acting = async (): Promise<MasterHandle[]> => {
    const out: MasterHandle[] = [];
    await Promise.all(
      masters.map(async (m) => {
        if (!m.daemon.running) return;
        const r = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"type":"GET_HEALTH"}', redirect: 'manual', signal: AbortSignal.timeout(1000) }).catch(() => undefined);
        if (r?.status === 200) out.push(m);
      }),
    );
    return out;
  };

  // The operator: schedule k holds machines m-1..m-k; each write replaces the schedule.
  let attempted = 0;
  let acked = 0;
  let running = true;
  let twoLeaders: string | undefined;
  const operator = (async () => {
    for (let i = 0; i < 10_000 && running; i++) {
      const k = ++attempted;
      const m = masters[Math.floor(rand() * masters.length)] as MasterHandle;
      const windows = [{ machine_ids: Array.from({ length: k }, (_, j) => ({ hostname: `m-${j + 1}` })), unavailability: { start: { nanoseconds: String(k) } } }];
      const r = await callApi(m.url, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows } } }).catch(() => undefined);
      if (r?.status === 200) acked = k;
      const now = await acting();
      if (now.length > 1) twoLeaders ??= `write ${k}: ${now.map((x) => x.address).join(' and ')} both serve`;
      await new Promise((res) => setTimeout(res, 20));
    }
  })();

  const rounds = 20;
  for (let round = 0; round < rounds; round++) {
    const idx = Math.floor(rand() * masters.length);
    const victim = masters[idx] as MasterHandle;
    const action = ['kill', 'pause', 'term'][Math.floor(rand() * 3)] as 'kill' | 'pause' | 'term';
    if (action === 'pause') {
      victim.daemon.signal('SIGSTOP');
      await new Promise((res) => setTimeout(res, 1500 + rand() * 1000));
      victim.daemon.signal('SIGCONT');
    } else {
      victim.daemon.signal(action === 'kill' ? 'SIGKILL' : 'SIGTERM');
      await victim.daemon.exited;
      masters[idx] = await startMaster(t, { flags });
    }
    await eventually(async () => ((await acting()).length === 1 ? true : undefined), undefined, 100, `a single leader after round ${round} (${action})`);
  }
  running = false;
  await operator;
  assert.equal(twoLeaders, undefined, `seed ${seed}: ${twoLeaders}`);
  const [leader] = await eventually(async () => {
    const now = await acting();
    return now.length === 1 ? now : undefined;
  }, undefined, 100, 'a single leader at the end');
  const got = (await callApi((leader as MasterHandle).url, { type: 'GET_MAINTENANCE_SCHEDULE' })).json as { get_maintenance_schedule: { schedule: { windows?: Array<{ machine_ids: Array<{ hostname: string }> }> } } };
  const machines = got.get_maintenance_schedule.schedule.windows?.[0]?.machine_ids.map((x) => x.hostname) ?? [];
  t.diagnostic(`chaos: ${rounds} rounds, ${attempted} writes attempted, ${acked} acknowledged last, ${machines.length} machines in the final schedule`);
  // The final schedule is one write's whole state, at least the last acknowledged one.
  assert.ok(machines.length >= acked && machines.length <= attempted, `seed ${seed}: ${machines.length} machines, last acknowledged ${acked}, attempted ${attempted}`);
  assert.deepEqual(machines, Array.from({ length: machines.length }, (_, j) => `m-${j + 1}`), `seed ${seed}`);
});

test('--registry_import moves a single master\'s registry into etcd once', { skip, timeout: 300_000 }, async (t) => {
  const solo = await startMaster(t);
  assert.equal((await callApi(solo.url, schedule)).status, 200);
  await solo.daemon.stop();
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/import-test`, '--etcd_ttl=2secs', `--registry_import=${solo.workDir}/registry.db`];
  const m = await startMaster(t, { flags });
  await m.daemon.waitForMsg('registry imported', { machines: 1 });
  await leaderOf([m]);
  assert.match((await callApi(m.url, { type: 'GET_MAINTENANCE_SCHEDULE' })).text, /"hostname":"h1","ip":"10.0.0.1"/);
  // A second master with the same flag finds etcd no longer empty: nothing is imported twice.
  await m.daemon.stop();
  const again = await startMaster(t, { flags });
  await again.daemon.waitForMsg('registry import skipped: etcd already holds a registry for this prefix');
});

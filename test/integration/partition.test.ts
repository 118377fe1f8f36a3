/**
 * Network partitions, on real processes in network namespaces of the test's own
 * (test/helpers/netns.ts): three etcd members (fast raft timings), masters with a 2 s TTL,
 * an agent, and an observer node from which every request is made. Splits are nftables
 * rules in the bridge's namespace; heal removes them.
 *
 * 1. etcd split 2/1 with the leading master beside the minority member, which leads etcd:
 *    another master serves while the split lasts (GET_MASTER 200, a write), the cut-off one
 *    answers 503 (it cannot read etcd), never two serve at once, and the epoch the new
 *    leader serves with is the registry's; an agent and the CLI that read etcd:// with the
 *    minority member first find the new leader; after the heal, one leader.
 * 2. the leading master cut off from etcd alone: it fences itself, another takes over, and
 *    it answers 503 until it reads the election again, then 307.
 * 3. a standby cut off from etcd past the TTL: its key expires; healed, it campaigns again
 *    at once (not when the leader goes) and takes over when the leader dies.
 * 4. an agent cut off from the masters: past its ping timeouts it is unreachable and its
 *    task TASK_UNREACHABLE; healed, it re-registers and the task is running on both sides;
 *    cut off again while the leader dies, it is past the new leader's
 *    --agent_reregister_timeout, and healed it re-registers with the new leader, task and id
 *    kept.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { eventually, FIXTURES, EVENT_DEADLINE_MS } from '../helpers/daemons.js';
import { CLI_BIN, labApi, labHttp, partitionSkip, startLab, startLabAgent, startLabEtcd, startLabMaster, startLabScript, type LabDaemon, type LabNode, type NetLab } from '../helpers/netns.js';

const skip = partitionSkip();
const TTL_FLAG = '--etcd_ttl=2secs';
const TTL_MS = 2_000;

const schedule = { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'h1', ip: '10.0.0.1' }], unavailability: { start: { nanoseconds: '1443830400000000001' } } }] } } };

/** Each master's answer to GET_MASTER, asked at once from `obs`. */
async function statuses(lab: NetLab, obs: LabNode, masters: readonly LabDaemon[]): Promise<Array<{ m: LabDaemon; status: number; location: string | undefined; body: string }>> {
  return Promise.all(
    masters.map(async (m) => {
      const r = await labApi(lab, obs, m.url, { type: 'GET_MASTER' }, 1_500);
      return { m, status: r.status, location: r.headers['location'], body: r.body };
    }),
  );
}

/** The one master that serves, once exactly one answers 200 and every other 307 to it. */
async function oneLeader(lab: NetLab, obs: LabNode, masters: readonly LabDaemon[], timeoutMs: number, what: string): Promise<LabDaemon> {
  return eventually(async () => {
    const s = await statuses(lab, obs, masters);
    const serving = s.filter((x) => x.status === 200);
    if (serving.length !== 1) return undefined;
    const leader = serving[0]!.m;
    return s.every((x) => x.m === leader || (x.status === 307 && x.location === `//${leader.address}/api/v1`)) ? leader : undefined;
  }, timeoutMs, 100, what);
}

/**
 * Asks every master GET_MASTER in rounds until stopped: `serving` says who answered 200 in
 * each round. Two in one round would be two masters serving at once.
 */
function watchServing(lab: NetLab, obs: LabNode, masters: readonly LabDaemon[]): { rounds: Array<{ at: number; serving: LabDaemon[]; codes: number[] }>; stop(): Promise<void> } {
  const rounds: Array<{ at: number; serving: LabDaemon[]; codes: number[] }> = [];
  let stopped = false;
  const loop = (async () => {
    // Bounded: at most one round per 100 ms for at most 120 s.
    for (let i = 0; i < 1_200 && !stopped; i++) {
      const at = Date.now();
      const s = await statuses(lab, obs, masters);
      rounds.push({ at, serving: s.filter((x) => x.status === 200).map((x) => x.m), codes: s.map((x) => x.status) });
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - (Date.now() - at))));
    }
  })();
  return {
    rounds,
    stop: async () => {
      stopped = true;
      await loop;
    },
  };
}

/** The epoch a master serves with (its /metrics/snapshot), or undefined. */
async function servedEpoch(lab: NetLab, obs: LabNode, m: LabDaemon): Promise<number | undefined> {
  const r = await labHttp(lab, obs, `${m.url}/metrics/snapshot`);
  if (r.status !== 200) return undefined;
  return (JSON.parse(r.body) as Record<string, number>)['drydock/term_epoch'];
}

/** The registry's leader epoch: the create_revision of the oldest key under the election prefix, read from `members`. */
async function registryEpoch(etcd: { etcdctl(args: readonly string[], members?: readonly LabNode[]): Promise<string> }, prefix: string, members: readonly LabNode[]): Promise<number | undefined> {
  const out = await etcd.etcdctl(['get', `${prefix}/election/master/`, '--prefix', '--sort-by=CREATE', '--order=ASCEND', '--limit=1', '-w', 'json'], members);
  const kv = (JSON.parse(out) as { kvs?: Array<{ create_revision: number }> }).kvs?.[0];
  return kv?.create_revision;
}

test('etcd split 2/1, the leading master beside the minority member that leads etcd: another master serves while the split lasts, never two at once; one leader after the heal', { skip, timeout: 480_000 }, async (t) => {
  const lab = await startLab(t);
  const [e1, e2, e3, n1, n2, n3, a1, obs] = [await lab.addNode('e1'), await lab.addNode('e2'), await lab.addNode('e3'), await lab.addNode('m1'), await lab.addNode('m2'), await lab.addNode('m3'), await lab.addNode('a1'), await lab.addNode('obs')] as [LabNode, LabNode, LabNode, LabNode, LabNode, LabNode, LabNode, LabNode];
  const etcd = await startLabEtcd(lab, [e1, e2, e3], obs);
  // The minority member first: the agent's and the CLI's etcd:// readers ask it first.
  const spec = `etcd://${etcd.endpoints.join(',')}/split`;
  const flags = [`--etcd=${spec}`, TTL_FLAG, '--agent_ping_timeout=300ms', '--max_agent_ping_timeouts=3'];
  const masters = await Promise.all([n1, n2, n3].map((n) => startLabMaster(lab, n, flags)));
  const leader = await oneLeader(lab, obs, masters, EVENT_DEADLINE_MS, 'a first leader');
  const agent = await startLabAgent(lab, a1, spec);
  const agentId = String((await agent.daemon.waitForMsg('registered', {}, 15_000))['agentId']);
  // The minority member is etcd's leader, as in the incident: its quorum is lost at the split.
  await etcd.moveLeader(e1);
  const others = masters.filter((m) => m !== leader);

  const watch = watchServing(lab, obs, masters);
  t.after(() => watch.stop());
  const splitAt = Date.now();
  await lab.split([leader.node, e1], [e2, e3, a1, ...others.map((m) => m.node)]);

  const next = await eventually(async () => (await statuses(lab, obs, others)).find((x) => x.status === 200)?.m, EVENT_DEADLINE_MS, 100, 'another master serving during the split');
  t.diagnostic(`split -> another master serving: ${Date.now() - splitAt} ms (TTL ${TTL_MS} ms)`);
  assert.equal((await labApi(lab, obs, next.url, schedule, 5_000)).status, 200, 'a write succeeds during the split');
  // The cut-off master cannot read etcd: past the TTL it says it knows no leader (no 307 to a deposed one).
  await eventually(async () => {
    const r = await labApi(lab, obs, leader.url, { type: 'GET_MASTER' });
    return r.status === 503 && r.body === 'No leader elected' ? true : undefined;
  }, 10_000, 100, 'the cut-off master answering 503 No leader elected');
  // The other standby redirects to the new leader.
  const standby = others.find((m) => m !== next) as LabDaemon;
  await eventually(async () => ((await labApi(lab, obs, standby.url, { type: 'GET_MASTER' })).headers['location'] === `//${next.address}/api/v1` ? true : undefined), EVENT_DEADLINE_MS, 100, 'the standby redirecting to the new leader');
  // Fencing: the epoch the new leader serves with is the registry's (the oldest election key, read from the quorum).
  const epoch = await servedEpoch(lab, obs, next);
  assert.ok(epoch !== undefined && epoch > 0);
  assert.equal(await registryEpoch(etcd, '/split', [e2, e3]), epoch);
  // The minority member refuses reads at once with require-leader, as the agents' and the CLI's gateway reads send it.
  const gateway = await labHttp(lab, obs, `http://${e1.ip}:2379/v3/kv/range`, { body: JSON.stringify({ key: Buffer.from('/split/').toString('base64') }), headers: { 'content-type': 'application/json', 'grpc-metadata-hasleader': 'true' }, timeoutMs: 3_000 });
  assert.equal(gateway.status, 503);
  assert.match(gateway.body, /etcdserver: no leader/);
  // So the agent, on the majority side, finds the new leader through etcd and re-registers with it...
  await eventually(async () => {
    const r = await labApi(lab, obs, next.url, { type: 'GET_AGENTS' });
    const agents = r.status === 200 ? (JSON.parse(r.body) as { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; active: boolean }> } }).get_agents.agents : [];
    return agents.some((x) => x.agent_info.id.value === agentId && x.active) ? true : undefined;
  }, 15_000, 200, 'the agent active on the new leader');
  // ...and the CLI finds it too.
  const cli = await lab.exec(obs, process.execPath, [CLI_BIN, 'agent', 'list', `--master=${spec}`, '--json'], 15_000);
  assert.equal(cli.code, 0, cli.stderr);
  assert.match(cli.stdout, new RegExp(agentId));

  await lab.heal();
  const after = await oneLeader(lab, obs, masters, EVENT_DEADLINE_MS, 'one leader after the heal');
  assert.equal(after, next, 'the leader of the split keeps leading');
  assert.match((await labApi(lab, obs, after.url, { type: 'GET_MAINTENANCE_SCHEDULE' })).body, /1443830400000000001/);
  await watch.stop();

  const twice = watch.rounds.filter((r) => r.serving.length > 1);
  assert.deepEqual(twice.map((r) => ({ at: r.at - splitAt, codes: r.codes })), [], 'never two masters serving at once');
  // Once the new leader served, the cut-off one never served again.
  const firstNew = watch.rounds.findIndex((r) => r.serving.includes(next));
  assert.ok(firstNew >= 0);
  assert.ok(watch.rounds.slice(firstNew).every((r) => !r.serving.includes(leader)));
});

test('the leading master cut off from etcd alone: it fences itself, another takes over, and it answers 503 until it reads the election again', { skip, timeout: 480_000 }, async (t) => {
  const lab = await startLab(t);
  const [e1, e2, e3, n1, n2, obs] = [await lab.addNode('e1'), await lab.addNode('e2'), await lab.addNode('e3'), await lab.addNode('m1'), await lab.addNode('m2'), await lab.addNode('obs')] as [LabNode, LabNode, LabNode, LabNode, LabNode, LabNode];
  const etcd = await startLabEtcd(lab, [e1, e2, e3], obs);
  const flags = [`--etcd=etcd://${etcd.endpoints.join(',')}/cut`, TTL_FLAG];
  const masters = await Promise.all([n1, n2].map((n) => startLabMaster(lab, n, flags)));
  const leader = await oneLeader(lab, obs, masters, EVENT_DEADLINE_MS, 'a first leader');
  const other = masters.find((m) => m !== leader) as LabDaemon;
  const seen = leader.daemon.records.length;

  const watch = watchServing(lab, obs, masters);
  t.after(() => watch.stop());
  const cutAt = Date.now();
  await lab.split([leader.node], [e1, e2, e3]);
  await leader.daemon.waitForMsg('leadership lost', {}, EVENT_DEADLINE_MS, seen);
  await eventually(async () => ((await labApi(lab, obs, other.url, { type: 'GET_MASTER' })).status === 200 ? true : undefined), EVENT_DEADLINE_MS, 100, 'the other master serving');
  t.diagnostic(`leader cut off from etcd -> the other master serving: ${Date.now() - cutAt} ms`);
  // It still reaches the new leader, but cannot read etcd: 503, not a redirect on an answer older than the TTL.
  await eventually(async () => ((await labApi(lab, obs, leader.url, { type: 'GET_MASTER' })).status === 503 ? true : undefined), EVENT_DEADLINE_MS, 100, 'the cut-off master answering 503');

  await lab.heal();
  await eventually(async () => ((await labApi(lab, obs, leader.url, { type: 'GET_MASTER' })).headers['location'] === `//${other.address}/api/v1` ? true : undefined), EVENT_DEADLINE_MS, 100, 'the healed master redirecting to the new leader');
  await watch.stop();
  assert.deepEqual(watch.rounds.filter((r) => r.serving.length > 1).map((r) => r.codes), [], 'never two masters serving at once');
});

test('a standby cut off from etcd past the TTL loses its key; healed, it campaigns again at once and takes over when the leader dies', { skip, timeout: 480_000 }, async (t) => {
  const lab = await startLab(t);
  const [e1, e2, e3, n1, n2, obs] = [await lab.addNode('e1'), await lab.addNode('e2'), await lab.addNode('e3'), await lab.addNode('m1'), await lab.addNode('m2'), await lab.addNode('obs')] as [LabNode, LabNode, LabNode, LabNode, LabNode, LabNode];
  const etcd = await startLabEtcd(lab, [e1, e2, e3], obs);
  const flags = [`--etcd=etcd://${etcd.endpoints.join(',')}/standby`, TTL_FLAG];
  const masters = await Promise.all([n1, n2].map((n) => startLabMaster(lab, n, flags)));
  const leader = await oneLeader(lab, obs, masters, EVENT_DEADLINE_MS, 'a first leader');
  const standby = masters.find((m) => m !== leader) as LabDaemon;
  const standbys = async (): Promise<string[] | undefined> => {
    const r = await labApi(lab, obs, leader.url, { type: 'GET_MASTER' });
    if (r.status !== 200) return undefined;
    return ((JSON.parse(r.body) as { get_master: { standby_masters?: Array<{ address: { ip: string } }> } }).get_master.standby_masters ?? []).map((m) => m.address.ip);
  };
  assert.deepEqual(await eventually(async () => ((await standbys())?.length === 1 ? standbys() : undefined), EVENT_DEADLINE_MS, 100, 'the leader listing its standby'), [standby.node.ip]);

  await lab.split([standby.node], [e1, e2, e3]);
  // Its keepalives reach no member: its lease expires, and its key with it.
  await eventually(async () => ((await standbys())?.length === 0 ? true : undefined), EVENT_DEADLINE_MS, 100, 'the standby\'s key gone');
  const seen = standby.daemon.records.length;
  await lab.heal();
  // It sees its own key gone and campaigns again with a new lease, without waiting for the leader to go.
  await standby.daemon.waitForMsg('campaigning', {}, EVENT_DEADLINE_MS, seen);
  assert.deepEqual(await eventually(async () => ((await standbys())?.length === 1 ? standbys() : undefined), EVENT_DEADLINE_MS, 100, 'the standby back in the election'), [standby.node.ip]);
  leader.daemon.signal('SIGKILL');
  await leader.daemon.exited;
  await eventually(async () => ((await labApi(lab, obs, standby.url, { type: 'GET_MASTER' })).status === 200 ? true : undefined), EVENT_DEADLINE_MS, 100, 'the standby serving after the leader died');
});

test('an agent cut off from the masters past its ping timeouts, then past the new leader\'s reregistration timeout: healed, it re-registers with its task running', { skip, timeout: 480_000 }, async (t) => {
  const lab = await startLab(t);
  const [e1, n1, n2, a1, obs] = [await lab.addNode('e1'), await lab.addNode('m1'), await lab.addNode('m2'), await lab.addNode('a1'), await lab.addNode('obs')] as [LabNode, LabNode, LabNode, LabNode, LabNode];
  const etcd = await startLabEtcd(lab, [e1], obs);
  const spec = `etcd://${etcd.endpoints.join(',')}/agents`;
  const flags = [`--etcd=${spec}`, TTL_FLAG, '--agent_ping_timeout=300ms', '--max_agent_ping_timeouts=3', '--agent_reregister_timeout=2secs'];
  const masters = await Promise.all([n1, n2].map((n) => startLabMaster(lab, n, flags)));
  const leader = await oneLeader(lab, obs, masters, EVENT_DEADLINE_MS, 'a first leader');
  const agent = await startLabAgent(lab, a1, spec);
  const reg = await agent.daemon.waitForMsg('registered', {}, 15_000);
  const agentId = String(reg['agentId']);
  const fw = startLabScript(lab, obs, join(FIXTURES, 'partition-framework.ts'), [`--masters=${masters.map((m) => m.address).join(',')}`, '--agent_hostname=a1', '--task=sleeper']);
  await fw.waitForMsg('update', { state: 'TASK_RUNNING' }, 20_000);

  type Task = { task_id: { value: string }; state: string; agent_id: { value: string } };
  type Tasks = { get_tasks: { tasks?: Task[]; unreachable_tasks?: Task[]; launched_tasks?: Task[] } };
  const tasksOf = async (url: string): Promise<Tasks['get_tasks'] | undefined> => {
    const r = await labApi(lab, obs, url, { type: 'GET_TASKS' });
    return r.status === 200 ? (JSON.parse(r.body) as Tasks).get_tasks : undefined;
  };
  const runningOnBoth = async (master: LabDaemon): Promise<true | undefined> => {
    const m = await tasksOf(master.url);
    const a = await tasksOf(agent.url);
    const onMaster = m?.tasks?.find((x) => x.task_id.value === 'sleeper');
    const onAgent = a?.launched_tasks?.find((x) => x.task_id.value === 'sleeper');
    return onMaster?.state === 'TASK_RUNNING' && onMaster.agent_id.value === agentId && (m?.unreachable_tasks ?? []).length === 0 && onAgent?.state === 'TASK_RUNNING' ? true : undefined;
  };
  await eventually(() => runningOnBoth(leader), EVENT_DEADLINE_MS, 100, 'the task running on the master and the agent');

  // 1. Cut off past the ping timeouts: unreachable, the framework hears TASK_UNREACHABLE.
  const seen = leader.daemon.records.length;
  await lab.split([a1], [n1, n2]);
  await leader.daemon.waitForMsg('agent unreachable', { agentId, reason: 'PING_TIMEOUT' }, EVENT_DEADLINE_MS, seen);
  await fw.waitForMsg('update', { state: 'TASK_UNREACHABLE' }, 10_000);
  assert.deepEqual((await tasksOf(leader.url))?.unreachable_tasks?.map((x) => x.task_id.value), ['sleeper']);
  const registrations = agent.daemon.records.filter((r) => r.msg === 'registered').length;
  await lab.heal();
  await eventually(() => (agent.daemon.records.filter((r) => r.msg === 'registered').length > registrations ? true : undefined), EVENT_DEADLINE_MS, 100, 'the agent re-registering');
  await eventually(() => runningOnBoth(leader), EVENT_DEADLINE_MS, 100, 'the task running on both sides after the heal');

  // 2. Cut off again, and the leader dies: the new leader recovers the agent from the registry
  //    and, with no agent back within --agent_reregister_timeout, marks it unreachable.
  const standby = masters.find((m) => m !== leader) as LabDaemon;
  const seenStandby = standby.daemon.records.length;
  await lab.split([a1], [n1, n2]);
  leader.daemon.signal('SIGKILL');
  await leader.daemon.exited;
  await standby.daemon.waitForMsg('term started', {}, EVENT_DEADLINE_MS, seenStandby);
  await standby.daemon.waitForMsg('agent unreachable', { agentId, reason: 'REREGISTER_TIMEOUT' }, EVENT_DEADLINE_MS, seenStandby);
  const again = agent.daemon.records.filter((r) => r.msg === 'registered').length;
  await lab.heal();
  // It finds the new leader through etcd and re-registers with its id and its task.
  const back = await eventually(() => agent.daemon.records.filter((r) => r.msg === 'registered')[again], EVENT_DEADLINE_MS, 100, 'the agent re-registering with the new leader');
  assert.equal(back['agentId'], agentId);
  await eventually(() => runningOnBoth(standby), EVENT_DEADLINE_MS, 100, 'the task running on the new leader and the agent');
});

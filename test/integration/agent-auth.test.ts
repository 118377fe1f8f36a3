/**
 * Agents authenticate (issue 13), end to end with the built daemons: a master with
 * `--authenticate_agents --credentials=FILE`, real agents with `--credential=FILE`, agent doubles
 * that authenticate as other principals, and a framework that must never hear a forged update.
 *
 * What is refused, and how it looks:
 * - no credential or a wrong secret: 401 on the WebSocket upgrade, the agent says so and retries;
 * - an agent id bound to another principal (or claimed anonymously): closed 4405 NOT_ALLOWED;
 * - the register_agents ACL: closed 4405 NOT_ALLOWED;
 * - a second session for an id whose live session answers pings: closed 4403 ID_IN_USE;
 * - a status update about another agent's task: dropped, never forwarded;
 * and in each case nothing changes on the master.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { AGENT_BIN, callApi, Daemon, eventually, startAgent, startMaster, tempDir, type AgentHandle, type MasterHandle } from '../helpers/daemons.js';
import { FakeAgent, registerMessage } from '../helpers/fake-agent.js';
import { CLOSE_CODES, MACHINE_DOWN_REMOVAL } from '../../shared/protocol.js';
import { clientTransport } from '../../io/transport.js';
import type { TaskStatus } from '../../shared/mesos.js';

type Cleanup = { after(fn: () => unknown): void };

const SECRETS: Record<string, string> = { 'agent-r1': 's3cret-r1', 'agent-r2': 's3cret-r2' };

/** Writes a file with `mode` (chmod after writing: the umask does not get a say). */
function writeFile(dir: string, name: string, text: string, mode = 0o600): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  chmodSync(path, mode);
  return path;
}

/** The master's --credentials (Mesos' JSON), mode 0600. */
function credentialsFile(dir: string): string {
  return writeFile(dir, 'credentials.json', JSON.stringify({ credentials: Object.entries(SECRETS).map(([principal, secret]) => ({ principal, secret })) }));
}

/** One agent's --credential, in one of the formats it takes. */
function agentCredential(dir: string, principal: string, secret = SECRETS[principal] ?? 'nope', form: 'json' | 'line' = 'json'): string {
  const text = form === 'json' ? JSON.stringify({ principal, secret }) : `${principal} ${secret}\n`;
  return writeFile(dir, `${principal}-${randomBytes(3).toString('hex')}.cred`, text);
}

/** A double's transport: the Authorization header of `principal`. */
function as(principal: string, secret = SECRETS[principal] ?? 'nope') {
  return clientTransport({ credential: { kind: 'basic', principal, secret } });
}

async function authMaster(t: Cleanup, dir: string, flags: readonly string[] = [], workDir?: string): Promise<MasterHandle> {
  return startMaster(t, { flags: ['--authenticate_agents', `--credentials=${credentialsFile(dir)}`, '--allocation_interval=100ms', ...flags], ...(workDir === undefined ? {} : { workDir }) });
}

interface AgentJson {
  agent_info: { id: { value: string }; hostname: string; port: number };
  active: boolean;
}

async function agentsOf(m: MasterHandle): Promise<AgentJson[]> {
  const r = await callApi(m.url, { type: 'GET_AGENTS' });
  assert.equal(r.status, 200, r.text);
  return (r.json as { get_agents: { agents: AgentJson[] } }).get_agents.agents;
}

/** [id, active] of every registered agent, sorted: what must not change on a refusal. */
async function agentState(m: MasterHandle): Promise<Array<[string, boolean]>> {
  return (await agentsOf(m)).map((a): [string, boolean] => [a.agent_info.id.value, a.active]).sort((x, y) => x[0].localeCompare(y[0]));
}

type Status = { task_id: { value: string }; state: string; uuid?: string; reason?: string; agent_id?: { value: string } };
const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;
const isUpdate = (taskId: string, state: string) => (e: SchedulerEvent): boolean => e.type === 'UPDATE' && statusOf(e).task_id.value === taskId && statusOf(e).state === state;

async function ack(s: SchedulerClient, e: SchedulerEvent): Promise<void> {
  const st = statusOf(e);
  if (st.uuid === undefined) return;
  const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
  assert.equal(r.status, 202, r.text);
}

/** Launches `sleep 60` as `taskId` on the first offer and waits for TASK_RUNNING (acknowledged). */
async function launch(s: SchedulerClient, taskId: string): Promise<string> {
  type Offer = { id: { value: string }; agent_id: { value: string } };
  const offers = (await s.nextOfType('OFFERS'))['offers'] as { offers: Offer[] };
  const o = offers.offers[0]!;
  const r = await s.call('ACCEPT', {
    offer_ids: [o.id],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: taskId, task_id: { value: taskId }, agent_id: o.agent_id, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }], command: { value: 'sleep 60' } }] } }],
    filters: { refuse_seconds: 0 },
  });
  assert.equal(r.status, 202, r.text);
  await ack(s, await s.next(isUpdate(taskId, 'TASK_STARTING'), undefined, `${taskId} STARTING`));
  await ack(s, await s.next(isUpdate(taskId, 'TASK_RUNNING'), undefined, `${taskId} RUNNING`));
  return o.agent_id.value;
}

/** A real agent with --credential of `principal` (SIGUSR1 at the end: its tasks die with it). */
function credentialedAgent(t: Cleanup, m: MasterHandle, dir: string, principal: string, more: { flags?: string[]; workDir?: string; waitRegistered?: boolean } = {}): Promise<AgentHandle> {
  return startAgent(t, {
    master: m.address,
    stopSignal: 'SIGUSR1',
    flags: [`--credential=${agentCredential(dir, principal)}`, ...(more.flags ?? [])],
    ...(more.workDir === undefined ? {} : { workDir: more.workDir }),
    ...(more.waitRegistered === undefined ? {} : { waitRegistered: more.waitRegistered }),
  });
}


test('agents authenticate: --credential registers; no credential or a wrong secret gets 401, the agent says so and retries, the master is unchanged', async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const m = await authMaster(t, dir);
  // Both file forms an agent takes.
  const a = await startAgent(t, { master: m.address, flags: [`--credential=${agentCredential(dir, 'agent-r1', undefined, 'line')}`] });
  const b = await startAgent(t, { master: m.address, hostname: 'agent-b', flags: [`--credential=${agentCredential(dir, 'agent-r2')}`] });
  await m.daemon.waitForMsg('agent registered', { agentId: a.agentId, principal: 'agent-r1' });
  await m.daemon.waitForMsg('agent registered', { agentId: b.agentId, principal: 'agent-r2' });
  const before = await agentState(m);
  assert.deepEqual(before.map(([, active]) => active), [true, true]);

  const anonymous = await startAgent(t, { master: m.address, hostname: 'anonymous', waitRegistered: false });
  const wrong = await startAgent(t, { master: m.address, hostname: 'wrong', waitRegistered: false, flags: [`--credential=${agentCredential(dir, 'agent-r1', 'not-the-secret')}`] });
  const unknown = await startAgent(t, { master: m.address, hostname: 'unknown', waitRegistered: false, flags: [`--credential=${agentCredential(dir, 'nobody', 'whatever')}`] });
  for (const [agent, hint] of [[anonymous, /start the agent with --credential=FILE/], [wrong, /does not accept this credential/], [unknown, /does not accept this credential/]] as const) {
    const refused = await agent.daemon.waitForMsg('master refused our credentials (401)', { status: 401 });
    assert.match(String(refused['hint']), hint);
    // Retried with backoff, not crashed.
    await agent.daemon.waitForLog((r) => r.msg === 'master refused our credentials (401)' && agent.daemon.records.indexOf(r) > agent.daemon.records.indexOf(refused), undefined, 'a second refusal (a retry)');
    assert.ok(agent.daemon.running, 'the agent keeps running');
    assert.equal(agent.daemon.records.some((r) => r.msg === 'registered'), false);
  }
  // The secret is never logged by either side.
  for (const d of [m.daemon, wrong.daemon]) assert.equal(d.stdout.some((l) => l.includes('not-the-secret') || l.includes('s3cret')), false);
  await m.daemon.waitForMsg('authentication refused', { realm: 'drydock-agent' });

  // A double without credentials or with a wrong secret does not even get a session.
  await assert.rejects(FakeAgent.connect(m.url), /Unexpected server response: 401/);
  await assert.rejects(FakeAgent.connect(m.url, { transport: as('agent-r1', 'wrong') }), /Unexpected server response: 401/);
  assert.deepEqual(await agentState(m), before, 'nothing changed on the master');
});

test('impersonation: another principal claiming a live agent\'s id is refused (4405), so is its own principal while it answers pings (4403); the real agent stays, its task is not lost', { timeout: 480_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const m = await authMaster(t, dir);
  const real = await credentialedAgent(t, m, dir, 'agent-r1');
  const s = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'victim' });
  t.after(() => s.close());
  assert.equal(await launch(s, 'precious'), real.agentId);
  const before = await agentState(m);
  const id = real.agentId!;
  const at = { hostname: 'agent-test', ip: '127.0.0.1', port: real.port };

  // Another principal, the real agent's address, its id.
  const other = await FakeAgent.connect(m.url, { transport: as('agent-r2'), self: at });
  t.after(() => other.close());
  other.send(registerMessage(1, other.self, { agentId: id }));
  assert.deepEqual(await other.waitClosed(), { code: CLOSE_CODES.NOT_ALLOWED, reason: `agent ${id} is bound to another principal` });
  const log = await m.daemon.waitForMsg('agent refused', { reason: 'PRINCIPAL_MISMATCH', agentId: id });
  assert.equal(log['principal'], 'agent-r2');
  assert.equal(log['boundPrincipal'], 'agent-r1');
  await m.daemon.waitForLog((r) => r.msg === 'audit' && r['action'] === 'REGISTER_AGENT' && r['principal'] === 'agent-r2' && r['outcome'] === 'denied', undefined, 'the audit line');

  // The right principal from the right address, while the real session answers pings.
  const twin = await FakeAgent.connect(m.url, { transport: as('agent-r1'), self: at });
  t.after(() => twin.close());
  twin.send(registerMessage(1, twin.self, { agentId: id }));
  assert.deepEqual(await twin.waitClosed(), { code: CLOSE_CODES.ID_IN_USE, reason: `agent ${id} has a live session that answers pings` });
  await m.daemon.waitForMsg('agent session probed', { agentId: id, answered: true });
  await m.daemon.waitForMsg('agent refused', { reason: 'ID_IN_USE', agentId: id, principal: 'agent-r1' });

  // Nothing changed: the real agent is registered and connected, its task runs, the framework heard of no loss.
  assert.ok(!other.messages.some((x) => x.type === 'REGISTERED') && !twin.messages.some((x) => x.type === 'REGISTERED'));
  assert.deepEqual(await agentState(m), before);
  assert.equal(real.daemon.records.some((r) => r.msg === 'master connection closed'), false, 'the real session was never closed');
  // Whatever the master told the framework about the task came before its answer to a reconciliation asked for now.
  await s.call('RECONCILE', { tasks: [{ task_id: { value: 'precious' } }] });
  const reconciled = statusOf(await s.next((e) => isUpdate('precious', 'TASK_RUNNING')(e) && statusOf(e).reason === 'REASON_RECONCILIATION', undefined, 'the reconciliation answer'));
  assert.equal(reconciled.agent_id?.value, real.agentId);
  const lost = s.received.filter((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'precious' && statusOf(e).state !== 'TASK_STARTING' && statusOf(e).state !== 'TASK_RUNNING');
  assert.deepEqual(lost.map(statusOf), [], 'no TASK_LOST (or any other end) reached the framework');
});

test('cross-agent status updates: a session\'s word on another agent\'s task never reaches the framework; both agents stay registered', { timeout: 420_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const m = await authMaster(t, dir);
  const real = await credentialedAgent(t, m, dir, 'agent-r1');
  const s = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'victim' });
  t.after(() => s.close());
  await launch(s, 'precious');
  // A legitimately registered agent of another principal, speaking of the real agent's task.
  const forger = await FakeAgent.connect(m.url, { transport: as('agent-r2'), self: { hostname: 'forger' } });
  t.after(() => forger.close());
  const own = await forger.register();
  assert.notEqual(own.agent_id, real.agentId);
  const forged = (state: TaskStatus['state'], agentId: string | undefined): TaskStatus => ({
    task_id: { value: 'precious' },
    state,
    source: 'SOURCE_EXECUTOR',
    timestamp: Date.now() / 1000,
    uuid: randomBytes(16).toString('base64'),
    ...(agentId === undefined ? {} : { agent_id: { value: agentId } }),
  });
  const logged = m.daemon.records.length;
  // Naming the real agent, naming itself, naming nobody.
  forger.statusUpdate(s.frameworkId, forged('TASK_FINISHED', real.agentId));
  forger.statusUpdate(s.frameworkId, forged('TASK_LOST', own.agent_id));
  forger.statusUpdate(s.frameworkId, forged('TASK_FINISHED', undefined));
  await m.daemon.waitForMsg('agent report refused', { agentId: own.agent_id, taskId: 'precious', reason: 'FOREIGN_AGENT_ID' }, undefined, logged);
  await eventually(() => (m.daemon.records.slice(logged).filter((r) => r.msg === 'agent report refused' && r['reason'] === 'TASK_OF_ANOTHER_AGENT').length === 2 ? true : undefined), undefined, 20, 'two TASK_OF_ANOTHER_AGENT refusals');
  // Had a forged update been forwarded, it would be on the framework's stream before the answer to a reconciliation asked for now.
  await s.call('RECONCILE', { tasks: [{ task_id: { value: 'precious' } }] });
  await s.next((e) => isUpdate('precious', 'TASK_RUNNING')(e) && statusOf(e).reason === 'REASON_RECONCILIATION', undefined, 'the reconciliation answer');

  const heard = s.received.filter((e) => e.type === 'UPDATE' && statusOf(e).task_id.value === 'precious' && statusOf(e).reason !== 'REASON_RECONCILIATION').map((e) => statusOf(e).state);
  assert.deepEqual(heard, ['TASK_STARTING', 'TASK_RUNNING'], 'the framework never saw the forged TASK_FINISHED or TASK_LOST');
  assert.equal(forger.messages.some((x) => x.type === 'ACKNOWLEDGE'), false, 'forged updates are not acknowledged');
  const tasks = await callApi(m.url, { type: 'GET_TASKS' });
  const task = (tasks.json as { get_tasks: { tasks: Array<{ task_id: { value: string }; state: string; agent_id: { value: string } }> } }).get_tasks.tasks.find((x) => x.task_id.value === 'precious');
  assert.deepEqual([task?.state, task?.agent_id.value], ['TASK_RUNNING', real.agentId]);
  assert.deepEqual((await agentState(m)).map(([, active]) => active), [true, true], 'both agents stay registered');
  assert.equal(forger.closed, undefined, 'a confused agent is not cut off');

  // The real agent's own word still goes through: a kill ends the task, from its agent.
  const kill = await s.call('KILL', { task_id: { value: 'precious' }, agent_id: { value: real.agentId } });
  assert.equal(kill.status, 202, kill.text);
  const killed = await s.next(isUpdate('precious', 'TASK_KILLED'), undefined, 'precious TASK_KILLED');
  assert.equal(statusOf(killed).agent_id?.value, real.agentId);
});

test('register_agents: a principal limited to rack:r1 registers there and is refused (4405) for rack:r2, nothing written', async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  // Permissive, with agent-r1 limited to rack r1: its first entry allows r1, its second denies the rest.
  const acls = JSON.stringify({
    permissive: true,
    register_agents: [
      { principals: { values: ['agent-r1'] }, agents: { values: ['rack:r1'] } },
      { principals: { values: ['agent-r1'] }, agents: { type: 'NONE' } },
    ],
  });
  const m = await authMaster(t, dir, [`--acls=${acls}`]);
  const r1 = await credentialedAgent(t, m, dir, 'agent-r1', { flags: ['--attributes=rack:r1'] });
  const before = await agentState(m);
  assert.deepEqual(before, [[r1.agentId!, true]]);

  const r2 = await credentialedAgent(t, m, dir, 'agent-r1', { flags: ['--attributes=rack:r2'], waitRegistered: false });
  const refused = await r2.daemon.waitForMsg('master refused this agent', { code: CLOSE_CODES.NOT_ALLOWED });
  assert.match(String(refused['reason']), /^Forbidden: principal 'agent-r1' may not register_agents/);
  const log = await m.daemon.waitForMsg('agent refused', { reason: 'NOT_AUTHORIZED', principal: 'agent-r1' });
  assert.match(String(log['object']), /agent-test/);
  await m.daemon.waitForLog((r) => r.msg === 'audit' && r['action'] === 'REGISTER_AGENT register_agents' && r['outcome'] === 'denied', undefined, 'the audit line');
  // It keeps trying (the ACLs may change), and nothing is admitted.
  await r2.daemon.waitForLog((r) => r.msg === 'master refused this agent' && r2.daemon.records.indexOf(r) > r2.daemon.records.indexOf(refused), undefined, 'a retry');
  assert.deepEqual(await agentState(m), before);

  // Another principal is not limited by agent-r1's entries; a double of agent-r1 on r2 is refused too.
  await credentialedAgent(t, m, dir, 'agent-r2', { flags: ['--attributes=rack:r2'] });
  const double = await FakeAgent.connect(m.url, { transport: as('agent-r1'), self: { attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r2' } }] } });
  t.after(() => double.close());
  double.send(registerMessage(1, double.self));
  assert.equal((await double.waitClosed()).code, CLOSE_CODES.NOT_ALLOWED);
  assert.equal((await agentsOf(m)).length, 2);
});

test('the binding survives a master restart: after it, another principal claiming the id is refused; the agent itself comes back', { timeout: 300_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const masterDir = tempDir(t, 'drydock-master-');
  const agentDir = tempDir(t, 'drydock-agent-');
  const m1 = await authMaster(t, dir, [], masterDir);
  const a1 = await credentialedAgent(t, m1, dir, 'agent-r1', { workDir: agentDir });
  const id = a1.agentId!;
  await a1.daemon.stop();
  await m1.daemon.stop();

  const m2 = await authMaster(t, dir, [], masterDir);
  // Recovered, not back yet: no live session, so only the binding can refuse.
  const impostor = await FakeAgent.connect(m2.url, { transport: as('agent-r2'), self: { hostname: 'agent-test' } });
  t.after(() => impostor.close());
  impostor.send(registerMessage(1, impostor.self, { agentId: id }));
  assert.deepEqual(await impostor.waitClosed(), { code: CLOSE_CODES.NOT_ALLOWED, reason: `agent ${id} is bound to another principal` });
  await m2.daemon.waitForMsg('agent refused', { reason: 'PRINCIPAL_MISMATCH', agentId: id, principal: 'agent-r2', boundPrincipal: 'agent-r1' });
  const r = await callApi(m2.url, { type: 'GET_AGENTS' });
  const got = (r.json as { get_agents: { agents: unknown[]; recovered_agents: Array<{ id: { value: string } }> } }).get_agents;
  assert.deepEqual([got.agents.length, got.recovered_agents.map((x) => x.id.value)], [0, [id]], 'still recovered, not admitted');

  const a2 = await credentialedAgent(t, m2, dir, 'agent-r1', { workDir: agentDir });
  assert.equal(a2.agentId, id);
  assert.deepEqual(await agentState(m2), [[id, true]]);
});

test('a removed agent\'s id stays bound across a restart: its machine went DOWN (the agent removed), then another principal claiming the id is refused (4405) and its own is admitted', { timeout: 480_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const masterDir = tempDir(t, 'drydock-master-');
  const m1 = await authMaster(t, dir, [], masterDir);
  const machine = { hostname: 'doomed', ip: '127.0.0.1' };
  const a = await FakeAgent.connect(m1.url, { transport: as('agent-r1'), self: machine });
  t.after(() => a.close());
  const id = (await a.register()).agent_id;
  let r = await callApi(m1.url, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [machine], unavailability: { start: { nanoseconds: 0 } } }] } } });
  assert.equal(r.status, 200, r.text);
  r = await callApi(m1.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [machine] } });
  assert.equal(r.status, 200, r.text);
  await m1.daemon.waitForMsg('agent removed', { agentId: id, reason: MACHINE_DOWN_REMOVAL });
  assert.equal((await a.waitClosed()).code, CLOSE_CODES.SHUTDOWN);
  await m1.daemon.stop();

  const m2 = await authMaster(t, dir, [], masterDir);
  const agents = (await callApi(m2.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: unknown[]; recovered_agents: unknown[] } };
  assert.deepEqual([agents.get_agents.agents, agents.get_agents.recovered_agents], [[], []], 'the agent is no longer known');
  // Another principal, from a machine that is not DOWN: only the kept binding can refuse it, as it would a known agent's.
  const impostor = await FakeAgent.connect(m2.url, { transport: as('agent-r2'), self: { hostname: 'elsewhere' } });
  t.after(() => impostor.close());
  impostor.send(registerMessage(1, impostor.self, { agentId: id }));
  assert.deepEqual(await impostor.waitClosed(), { code: CLOSE_CODES.NOT_ALLOWED, reason: `agent ${id} is bound to another principal` });
  await m2.daemon.waitForMsg('agent refused', { reason: 'PRINCIPAL_MISMATCH', agentId: id, principal: 'agent-r2', boundPrincipal: 'agent-r1', removed: true });
  assert.equal(impostor.messages.some((x) => x.type === 'REGISTERED'), false);
  assert.deepEqual(await agentState(m2), []);

  // Its own principal: admitted as the id it claims, and still bound to it.
  const back = await FakeAgent.connect(m2.url, { transport: as('agent-r1'), self: { hostname: 'elsewhere' } });
  t.after(() => back.close());
  assert.equal((await back.register({ agentId: id })).agent_id, id);
  await m2.daemon.waitForMsg('agent reregistered', { agentId: id, kind: 'UNKNOWN_ID', principal: 'agent-r1' });
  assert.deepEqual(await agentState(m2), [[id, true]]);
});

test('an agent registered anonymously is bound on its first authenticated registration; then anonymous and other principals are refused, even without --authenticate_agents', { timeout: 360_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  // Credentials known, agents not required to authenticate (a cluster turning security on).
  const m = await startMaster(t, { flags: [`--credentials=${credentialsFile(dir)}`] });
  const agentDir = tempDir(t, 'drydock-agent-');
  const anon = await startAgent(t, { master: m.address, workDir: agentDir });
  const id = anon.agentId!;
  await m.daemon.waitForMsg('agent registered', { agentId: id, principal: null });
  await anon.daemon.stop();
  const bound = await credentialedAgent(t, m, dir, 'agent-r1', { workDir: agentDir });
  assert.equal(bound.agentId, id);
  await m.daemon.waitForMsg('agent bound to principal', { agentId: id, principal: 'agent-r1' });
  await bound.daemon.stop();
  await eventually(async () => ((await agentState(m))[0]?.[1] === false ? true : undefined), undefined, 20, 'agent disconnected');

  for (const [transport, reason] of [[undefined, `agent ${id} is bound to a principal; this session is anonymous`], [as('agent-r2'), `agent ${id} is bound to another principal`]] as const) {
    const claim = await FakeAgent.connect(m.url, { ...(transport === undefined ? {} : { transport }), self: { hostname: 'agent-test' } });
    t.after(() => claim.close());
    claim.send(registerMessage(1, claim.self, { agentId: id }));
    assert.deepEqual(await claim.waitClosed(), { code: CLOSE_CODES.NOT_ALLOWED, reason });
  }
  assert.deepEqual(await agentState(m), [[id, false]]);
});

test('a second session with the right principal: refused while the live one answers pings; a frozen agent (SIGSTOP) is replaced after the probe; a restarted agent comes back at once', { timeout: 300_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const m = await authMaster(t, dir);
  const agentDir = tempDir(t, 'drydock-agent-');
  const real = await credentialedAgent(t, m, dir, 'agent-r1', { workDir: agentDir });
  const id = real.agentId!;
  const at = { hostname: 'agent-test', ip: '127.0.0.1', port: real.port };

  // A restarted agent (kill -9: its socket closes) re-registers with its id at once.
  const killedAt = m.daemon.records.length;
  real.daemon.signal('SIGKILL');
  await real.daemon.exited;
  const again = await credentialedAgent(t, m, dir, 'agent-r1', { workDir: agentDir });
  assert.equal(again.agentId, id);
  // Back without waiting out pings (75 s) or a probe: the master saw the socket close.
  const sinceKill = m.daemon.records.slice(killedAt).filter((r) => r['agentId'] === id).map((r) => r.msg);
  assert.deepEqual(sinceKill.filter((x) => x === 'agent session probed' || x === 'agent unreachable'), [], JSON.stringify(sinceKill));

  // Frozen: its socket is open but nothing answers. After the probe, the newcomer takes the id.
  again.daemon.signal('SIGSTOP');
  t.after(() => again.daemon.signal('SIGCONT'));
  const newcomer = await FakeAgent.connect(m.url, { transport: as('agent-r1'), self: at });
  t.after(() => newcomer.close());
  const probeStart = Date.now();
  const probedFrom = m.daemon.records.length;
  const reg = await newcomer.register({ agentId: id });
  assert.equal(reg.agent_id, id);
  // Measured from before the claim: the probe's bound (~2 s) must have passed.
  const waited = Date.now() - probeStart;
  assert.ok(waited >= 1_500, `the probe waited its bound (~2 s): ${waited} ms`);
  // The unanswered probe gave the id away, not the ping timeouts (75 s): no unreachable line.
  await m.daemon.waitForMsg('agent session probed', { agentId: id, answered: false }, undefined, probedFrom);
  assert.equal(m.daemon.records.slice(probedFrom).some((r) => r.msg === 'agent unreachable' && r['agentId'] === id), false);

  // Thawed, the old agent finds itself replaced; while the newcomer answers pings it is refused...
  const thawed = again.daemon.records.length;
  again.daemon.signal('SIGCONT');
  await again.daemon.waitForMsg('master connection closed', { code: CLOSE_CODES.REPLACED }, undefined, thawed);
  await again.daemon.waitForMsg('master connection closed', { code: CLOSE_CODES.ID_IN_USE }, undefined, thawed);
  assert.equal(newcomer.closed, undefined);
  // ...and once the newcomer is gone, its retries get the id back.
  const gone = again.daemon.records.length;
  newcomer.terminate();
  await again.daemon.waitForMsg('registered', { agentId: id }, undefined, gone);
  assert.deepEqual(await agentState(m), [[id, true]]);
});

test('the agent refuses a --credential file others may read, and one that is no credential: exit 1, a clear message', async (t) => {
  const dir = tempDir(t, 'drydock-agent-auth-');
  const run = async (file: string): Promise<{ code: number | null; stderr: string; registered: boolean }> => {
    const d = new Daemon(AGENT_BIN, ['--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${tempDir(t, 'drydock-agent-')}`, `--credential=${file}`]);
    t.after(() => d.stop(2_000, 'SIGKILL'));
    const exit = (await d.exitWithin()) ?? { code: null };
    return { code: exit.code, stderr: d.stderr, registered: d.records.some((r) => r.msg === 'listening') };
  };
  const open = writeFile(dir, 'open.cred', JSON.stringify({ principal: 'agent-r1', secret: 's3cret-r1' }), 0o644);
  const r = await run(open);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `drydock-agent: --credential ${open} is readable by others (mode 0644); run chmod 600 on it\n`);
  assert.equal(r.registered, false, 'it stops before listening');

  const bad = writeFile(dir, 'bad.cred', '{"principal": "agent-r1"}');
  const b = await run(bad);
  assert.equal(b.code, 1);
  assert.equal(b.stderr, `drydock-agent: --credential ${bad}: 'secret' must be a non-empty string without spaces\n`);
  const missing = await run(join(dir, 'nope.cred'));
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /--credential .*nope\.cred cannot be read: no such file/);
});

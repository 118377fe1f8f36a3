/**
 * The agent's own API is authenticated and authorized, end to end with the built daemons: a
 * real master and two agents started with `--authenticate_http_readonly
 * --authenticate_http_readwrite --http_credentials=FILE --acls=FILE`, two frameworks (users
 * `web` and `batch`) with tasks on them, one agent running a task of each.
 *
 * - anonymous GET_TASKS, `/metrics` and `/metrics/snapshot`: 401 with Mesos' agent realms;
 *   a wrong secret: 401; `/health` stays open;
 * - `web-team` may view only user `web`'s tasks: GET_TASKS and GET_CONTAINERS on the shared
 *   agent show its framework's task and not the other's; `ops` sees both;
 * - a read-only principal's write call (SET_LOGGING_LEVEL): 403, audited, and nothing changed
 *   on the agent (logging level, tasks); GET_FLAGS needs view_flags;
 * - after an agent restart the same filter holds: the framework's user is in the checkpoint;
 * - a `--http_credentials` file others may read, or `--authenticate_http_*` without one: exit 1.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { clientTransport, PLAIN_TRANSPORT, type ClientTransport } from '../../io/transport.js';
import { AGENT_BIN, callApi, Daemon, eventually, fileWithMode, removeDir, startAgent, startMaster, tempDir, type AgentHandle } from '../helpers/daemons.js';
import { offersOf, ProtoScheduler, statusOf, type OfferView, type ProtoEvent } from '../helpers/proto-client.js';
import { smallTask } from '../helpers/tasks.js';

const SECRETS = { ops: 'ops-s3cret-7d1e', 'web-team': 'web-s3cret-20aa', viewer: 'viewer-s3cret-93b4' } as const;
type Principal = keyof typeof SECRETS;
const OPS_TOKEN = 'ops-token-5b0c9e1d2f3a4b6c';

const ANY = { type: 'ANY' };
const only = (...values: string[]): { values: string[] } => ({ values });
/** ops everything; viewer may look at everything and change nothing; web-team may look at user web's tasks only. */
const ACLS = {
  permissive: false,
  view_tasks: [
    { principals: only('ops', 'viewer'), users: ANY },
    { principals: only('web-team'), users: only('web') },
  ],
  view_agents: [{ principals: only('ops', 'viewer'), agents: ANY }],
  view_flags: [{ principals: only('ops', 'viewer'), flags: ANY }],
  get_endpoints: [{ principals: only('ops', 'viewer'), paths: ANY }],
  set_log_level: [{ principals: only('ops'), level: ANY }],
};

const as = (p: Principal): ClientTransport => clientTransport({ credential: { kind: 'basic', principal: p, secret: SECRETS[p] } });
const JSON_HEADERS = { 'content-type': 'application/json', accept: 'application/json' };

/** One call to an agent as `who` (a transport: credentials or none). */
async function agentCall(a: AgentHandle, who: ClientTransport, call: Record<string, unknown>): Promise<{ status: number; headers: Headers; text: string; json: unknown }> {
  return callApi(a.url, call, JSON_HEADERS, who);
}

async function get(a: AgentHandle, who: ClientTransport, path: string): Promise<{ status: number; challenge: string | null; text: string }> {
  const res = await who.fetch(`${a.url}${path}`, { headers: who.headers, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, challenge: res.headers.get('www-authenticate'), text: await res.text() };
}

type TaskJson = { task_id: { value: string }; framework_id: { value: string }; state: string };
type Lists = Record<'pending_tasks' | 'queued_tasks' | 'launched_tasks' | 'terminated_tasks' | 'completed_tasks', TaskJson[] | undefined>;

async function taskIds(a: AgentHandle, who: ClientTransport): Promise<string[]> {
  const r = await agentCall(a, who, { type: 'GET_TASKS' });
  assert.equal(r.status, 200, r.text);
  const l = (r.json as { get_tasks: Lists }).get_tasks;
  return [...(l.pending_tasks ?? []), ...(l.launched_tasks ?? []), ...(l.terminated_tasks ?? []), ...(l.completed_tasks ?? [])].map((t) => t.task_id.value).sort();
}

async function containerTasks(a: AgentHandle, who: ClientTransport): Promise<string[]> {
  const r = await agentCall(a, who, { type: 'GET_CONTAINERS' });
  assert.equal(r.status, 200, r.text);
  return ((r.json as { get_containers: { containers?: Array<{ executor_id: { value: string } }> } }).get_containers.containers ?? []).map((c) => c.executor_id.value).sort();
}

const task = (id: string, agentId: string): Record<string, unknown> => smallTask(id, agentId);

/** An offer of `agentId` this framework has received and not used yet (an OFFERS event may carry several agents' offers). */
async function offerFor(s: ProtoScheduler, agentId: string, used: Set<string>): Promise<OfferView> {
  const offer = await eventually(() => s.received.flatMap(offersOf).find((o) => o.agent_id.value === agentId && !used.has(o.id.value)), undefined, 50, `an offer of ${agentId}`);
  used.add(offer.id.value);
  return offer;
}

/** Launches `tasks` on the offer; `refuseSeconds` filters the agent's remaining resources for this framework. */
async function accept(s: ProtoScheduler, offer: OfferView, tasks: Array<Record<string, unknown>>, refuseSeconds: number): Promise<void> {
  const r = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: refuseSeconds } });
  assert.equal(r.status, 202, r.text);
}

/** Acknowledges each task's updates until it is RUNNING. */
async function running(s: ProtoScheduler, ids: readonly string[]): Promise<void> {
  for (const id of ids) {
    for (let i = 0; i < 5; i++) {
      const e = await s.next((x: ProtoEvent) => statusOf(x)?.task_id.value === id, undefined, `an update of ${id}`);
      const st = statusOf(e);
      if (st?.uuid !== undefined && st.uuid !== '') {
        const ack = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
        assert.equal(ack.status, 202, ack.text);
      }
      if (st?.state === 'TASK_RUNNING') break;
      assert.ok(st?.state === 'TASK_STARTING' || st?.state === 'TASK_STAGING', `${id}: ${st?.state} ${st?.message ?? ''}`);
    }
  }
}

test('the agent API: 401 without or with wrong credentials, view_tasks filters GET_TASKS and GET_CONTAINERS per framework user, a read-only principal\'s write is 403 and changes nothing', { timeout: 1500_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-api-auth-');
  const credentials = fileWithMode(join(dir, 'agent-api-credentials.json'), JSON.stringify({
    credentials: [
      { principal: 'ops', secret: SECRETS.ops, tokens: [OPS_TOKEN] },
      { principal: 'web-team', secret: SECRETS['web-team'] },
      { principal: 'viewer', secret: SECRETS.viewer },
    ],
  }), 0o600);
  const acls = fileWithMode(join(dir, 'acls.json'), JSON.stringify(ACLS), 0o644);
  const secured = ['--authenticate_http_readonly', '--authenticate_http_readwrite', `--http_credentials=${credentials}`, `--acls=${acls}`, '--status_update_retry_interval=500ms'];
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  // Agent B is restarted at the end on its work dir: this hook, registered first, runs first (stops every B, then removes the dir).
  const bDir = mkdtempSync(join(tmpdir(), 'drydock-agent-'));
  const bAgents: AgentHandle[] = [];
  t.after(async () => {
    for (const x of bAgents) await x.daemon.stop(10_000, 'SIGUSR1');
    removeDir(bDir);
  });
  const agentB = { master: m.address, ip: '127.0.0.3', hostname: 'agent-b', resources: 'cpus:2;mem:1024', flags: secured, stopSignal: 'SIGUSR1', workDir: bDir } as const;
  const [a, b] = await Promise.all([
    startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'agent-a', resources: 'cpus:2;mem:1024', flags: secured, stopSignal: 'SIGUSR1' }),
    startAgent(t, agentB),
  ]);
  bAgents.push(b);
  const aId = a.agentId as string;
  const bId = b.agentId as string;

  // batch's task on agent B; then both agents are filtered for batch for an hour, so web gets their offers.
  const batch = await ProtoScheduler.subscribe(m.url, { user: 'batch', name: 'batch-fw' });
  t.after(() => batch.close());
  const batchUsed = new Set<string>();
  await accept(batch, await offerFor(batch, bId, batchUsed), [task('batch-b', bId)], 3600);
  const declined = await batch.call('DECLINE', { offer_ids: [(await offerFor(batch, aId, batchUsed)).id], filters: { refuse_seconds: 3600 } });
  assert.equal(declined.status, 202, declined.text);
  await running(batch, ['batch-b']);
  const web = await ProtoScheduler.subscribe(m.url, { user: 'web', name: 'web-fw' });
  t.after(() => web.close());
  const webUsed = new Set<string>();
  await accept(web, await offerFor(web, aId, webUsed), [task('web-a', aId)], 0);
  await accept(web, await offerFor(web, bId, webUsed), [task('web-b', bId)], 0);
  await running(web, ['web-a', 'web-b']);

  // Anonymous: 401 with the realm's challenge, and no task named in the answer.
  const anonymous = await agentCall(b, PLAIN_TRANSPORT, { type: 'GET_TASKS' });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.text, '401 Unauthorized.');
  assert.equal(anonymous.headers.get('www-authenticate'), 'Basic realm="mesos-agent-readwrite"');
  for (const path of ['/metrics/snapshot', '/metrics']) {
    const r = await get(b, PLAIN_TRANSPORT, path);
    assert.equal(r.status, 401, path);
    assert.equal(r.challenge, 'Basic realm="mesos-agent-readonly"', path);
  }
  assert.equal((await get(b, PLAIN_TRANSPORT, '/health')).status, 200, '/health stays open (probes)');
  // A wrong secret, an unknown principal, a wrong token: 401 everywhere, as on the master.
  const wrong = clientTransport({ credential: { kind: 'basic', principal: 'ops', secret: 'guess' } });
  const stranger = clientTransport({ credential: { kind: 'basic', principal: 'mallory', secret: 'guess' } });
  const badToken = clientTransport({ credential: { kind: 'bearer', token: 'not-a-token-of-anyone-0000' } });
  for (const who of [wrong, stranger, badToken]) {
    const r = await agentCall(b, who, { type: 'GET_TASKS' });
    assert.equal(r.status, 401, r.text);
    assert.equal((await get(b, who, '/metrics/snapshot')).status, 401);
  }

  // web-team sees its framework's tasks, on both agents, and not batch's on the shared one.
  assert.deepEqual(await taskIds(b, as('web-team')), ['web-b']);
  assert.deepEqual(await taskIds(a, as('web-team')), ['web-a']);
  assert.deepEqual(await containerTasks(b, as('web-team')), ['web-b']);
  // ops sees both, with its secret or its token; so does the viewer.
  assert.deepEqual(await taskIds(b, as('ops')), ['batch-b', 'web-b']);
  assert.deepEqual(await taskIds(b, clientTransport({ credential: { kind: 'bearer', token: OPS_TOKEN } })), ['batch-b', 'web-b']);
  assert.deepEqual(await containerTasks(b, as('ops')), ['batch-b', 'web-b']);
  assert.deepEqual(await taskIds(b, as('viewer')), ['batch-b', 'web-b']);
  // The rest of what names this agent or its configuration follows the same ACLs.
  assert.equal((await agentCall(b, as('web-team'), { type: 'GET_AGENT' })).status, 403);
  assert.equal((await agentCall(b, as('viewer'), { type: 'GET_AGENT' })).status, 200);
  const webFlags = await agentCall(b, as('web-team'), { type: 'GET_FLAGS' });
  assert.equal(webFlags.status, 403);
  assert.equal(webFlags.text, "Forbidden: principal 'web-team' may not view_flags");
  const flags = await agentCall(b, as('ops'), { type: 'GET_FLAGS' });
  assert.equal(flags.status, 200, flags.text);
  assert.ok(flags.text.includes(credentials), 'GET_FLAGS names the credentials file');
  for (const secret of [...Object.values(SECRETS), OPS_TOKEN]) assert.ok(!flags.text.includes(secret), 'never a secret');
  const webSnapshot = await get(b, as('web-team'), '/metrics/snapshot');
  assert.equal(webSnapshot.status, 403);
  assert.equal(webSnapshot.text, "Forbidden: principal 'web-team' may not get_endpoints on '/metrics/snapshot'");
  assert.equal((await agentCall(b, as('web-team'), { type: 'GET_METRICS', get_metrics: {} })).status, 403, 'GET_METRICS: the same figures, the same ACL');
  const snapshot = await get(b, as('viewer'), '/metrics/snapshot');
  assert.equal(snapshot.status, 200, snapshot.text);
  assert.equal((JSON.parse(snapshot.text) as Record<string, number>)['slave/tasks_running'], 2);

  // Writes: anonymous 401, the read-only viewer 403 (audited), and nothing changes on the agent.
  const tasksBefore = await taskIds(b, as('ops'));
  const level = async (): Promise<unknown> => {
    const r = await agentCall(b, as('ops'), { type: 'GET_LOGGING_LEVEL' });
    assert.equal(r.status, 200, r.text);
    return r.json;
  };
  assert.deepEqual(await level(), { type: 'GET_LOGGING_LEVEL', get_logging_level: { level: 0 } });
  const setDebug = { type: 'SET_LOGGING_LEVEL', set_logging_level: { level: 1, duration: { nanoseconds: 600_000_000_000 } } };
  const anonWrite = await agentCall(b, PLAIN_TRANSPORT, setDebug);
  assert.equal(anonWrite.status, 401);
  assert.equal((await agentCall(b, wrong, setDebug)).status, 401);
  const mark = b.daemon.records.length;
  const refused = await agentCall(b, as('viewer'), setDebug);
  assert.equal(refused.status, 403);
  assert.equal(refused.text, "Forbidden: principal 'viewer' may not set_log_level");
  const audit = await b.daemon.waitForMsg('audit', { principal: 'viewer', outcome: 'denied' }, undefined, mark);
  assert.equal(audit['action'], 'SET_LOGGING_LEVEL set_log_level');
  assert.equal(audit['status'], 403);
  assert.equal((await agentCall(b, as('web-team'), setDebug)).status, 403);
  assert.deepEqual(await level(), { type: 'GET_LOGGING_LEVEL', get_logging_level: { level: 0 } }, 'the level is unchanged');
  assert.deepEqual(await taskIds(b, as('ops')), tasksBefore, 'the tasks are unchanged');
  assert.equal(b.daemon.records.some((r) => r.msg === 'logging level set' || r.level === 'debug'), false, 'no debug line was ever written');

  // ops may: debug lines appear (the agent logs at debug), then level 0 puts --log_level back.
  const allowed = await agentCall(b, as('ops'), setDebug);
  assert.equal(allowed.status, 200, allowed.text);
  assert.equal(allowed.text, '');
  assert.deepEqual(await level(), { type: 'GET_LOGGING_LEVEL', get_logging_level: { level: 1 } });
  await b.daemon.waitForMsg('audit', { principal: 'ops', action: 'SET_LOGGING_LEVEL set_log_level', outcome: 'allowed' }, undefined, mark);
  const back = await agentCall(b, as('ops'), { type: 'SET_LOGGING_LEVEL', set_logging_level: { level: 0, duration: { nanoseconds: 0 } } });
  assert.equal(back.status, 200, back.text);
  assert.deepEqual(await level(), { type: 'GET_LOGGING_LEVEL', get_logging_level: { level: 0 } });
  // The agent on the other machine never heard of any of it.
  assert.deepEqual(await taskIds(a, as('ops')), ['web-a']);

  // The framework's user comes from the checkpoint after a restart (SIGTERM: the tasks live on).
  await b.daemon.stop(10_000, 'SIGTERM');
  const again = await startAgent(t, agentB);
  bAgents.push(again);
  assert.equal(again.agentId, bId);
  assert.deepEqual(await taskIds(again, as('web-team')), ['web-b']);
  assert.deepEqual(await taskIds(again, as('ops')), ['batch-b', 'web-b']);
  assert.equal((await agentCall(again, PLAIN_TRANSPORT, { type: 'GET_TASKS' })).status, 401);
});

test('the agent refuses --http_credentials others may read, and --authenticate_http_* without it: exit 1 before listening, naming the flag', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-api-auth-');
  const run = async (flags: string[]): Promise<{ code: number | null; stderr: string; listened: boolean }> => {
    const d = new Daemon(AGENT_BIN, ['--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${tempDir(t, 'drydock-agent-')}`, ...flags]);
    t.after(() => d.stop(2_000, 'SIGKILL'));
    const exit = (await d.exitWithin()) ?? { code: null };
    return { code: exit.code, stderr: d.stderr, listened: d.records.some((r) => r.msg === 'listening') };
  };
  const open = fileWithMode(join(dir, 'open.json'), JSON.stringify({ credentials: [{ principal: 'ops', secret: SECRETS.ops }] }), 0o644);
  const r = await run(['--authenticate_http_readonly', `--http_credentials=${open}`]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr, `drydock-agent: --http_credentials ${open} is readable by others (mode 0644); run chmod 600 on it\n`);
  assert.equal(r.listened, false, 'it stops before listening');

  const missing = await run(['--authenticate_http_readwrite']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, 'drydock-agent: --authenticate_http_readwrite needs --http_credentials=FILE (the principals and secrets to check)\n');

  const badAcls = await run(['--acls={"view_tasks": [{"principals": {"values": ["ops"]}}]}']);
  assert.equal(badAcls.code, 1);
  assert.equal(badAcls.stderr, 'drydock-agent: --acls: view_tasks[0].users is missing\n');
});

/**
 * Frameworks bound to principals, and the framework and view ACLs, on a real master
 * (`--authenticate_frameworks --credentials=FILE --acls=...`) and agents, driven by the
 * generated Mesos client (test/helpers/proto-client.ts) sending HTTP Basic credentials:
 * - a framework id belongs to the principal that registered it: another principal's SUBSCRIBE
 *   with it is refused (403) and the real framework keeps its stream and its task; so are a
 *   stranger's TEARDOWN and KILL, and the operator TEARDOWN of a principal teardown_frameworks
 *   does not allow; anonymous SUBSCRIBE is 401 with a challenge; each refusal is audited;
 * - register_frameworks refuses a role, run_tasks a user (TASK_ERROR REASON_TASK_UNAUTHORIZED);
 * - GET_STATE / GET_TASKS / GET_FRAMEWORKS / GET_AGENTS, GET_FLAGS and the operator event
 *   stream show a principal only what the view ACLs let it see.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { authorizationHeader } from '../../shared/credentials.js';
import { RecordReader } from '../../shared/recordio.js';
import { callApi, eventually, startAgent, startMaster, tempDir, type LogRecord, type MasterHandle } from '../helpers/daemons.js';
import { offersOf, ProtoScheduler, statusOf, SubscribeFailed, type OfferView, type ProtoEvent } from '../helpers/proto-client.js';
import { smallTask } from '../helpers/tasks.js';

type Cleanup = Parameters<typeof startMaster>[0];

const PRINCIPALS = ['alice', 'bob', 'ops', 'webview'] as const;
type Principal = (typeof PRINCIPALS)[number];
const auth = (p: Principal): string => authorizationHeader({ kind: 'basic', principal: p, secret: `${p}-secret` });

const ANY = { type: 'ANY' };
const only = (...values: string[]): { values: string[] } => ({ values });
const ACLS = {
  permissive: false,
  register_agents: [{ principals: ANY, agents: ANY }],
  register_frameworks: [
    { principals: only('alice'), roles: only('*', 'web') },
    { principals: only('bob'), roles: only('*') },
  ],
  run_tasks: [
    { principals: only('alice'), users: only('web') },
    { principals: only('bob'), users: only('batch') },
  ],
  teardown_frameworks: [{ principals: only('ops'), framework_principals: ANY }],
  view_frameworks: [
    { principals: only('ops'), users: ANY },
    { principals: only('webview'), users: only('web') },
  ],
  view_tasks: [
    { principals: only('ops'), users: ANY },
    { principals: only('webview'), users: only('web') },
  ],
  view_agents: [
    { principals: only('ops'), agents: ANY },
    { principals: only('webview'), agents: only('rack:r1') },
  ],
  view_flags: [{ principals: only('ops'), flags: ANY }],
};

/** A master that requires framework credentials, with the ACLs above; the credentials file is 0600 (the master refuses others). */
async function secureMaster(t: Cleanup): Promise<MasterHandle> {
  const dir = tempDir(t, 'drydock-fwauth-');
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: PRINCIPALS.map((p) => ({ principal: p, secret: `${p}-secret` })) }), { mode: 0o600 });
  chmodSync(credentials, 0o600);
  return startMaster(t, { flags: ['--allocation_interval=200ms', '--authenticate_frameworks', `--credentials=${credentials}`, `--acls=${JSON.stringify(ACLS)}`] });
}

const AGENT_FLAGS = ['--status_update_retry_interval=500ms'];

async function subscribe(m: MasterHandle, who: Principal, info: Record<string, unknown>): Promise<ProtoScheduler> {
  return ProtoScheduler.subscribe(m.url, info, { authorization: auth(who) });
}

/** The SUBSCRIBE's refusal (status and text); fails the test if it was accepted. */
async function refusedSubscribe(m: MasterHandle, info: Record<string, unknown>, authorization: string | undefined): Promise<SubscribeFailed> {
  try {
    const s = await ProtoScheduler.subscribe(m.url, info, authorization === undefined ? {} : { authorization });
    s.close();
  } catch (e) {
    if (e instanceof SubscribeFailed) return e;
    throw e;
  }
  assert.fail(`SUBSCRIBE ${JSON.stringify(info)} was accepted`);
}

const task = (id: string, agentId: string, user?: string): Record<string, unknown> => smallTask(id, agentId, 'sleep 60', user === undefined ? {} : { command: { value: 'sleep 60', user } });

const updateFor = (taskId: string, state?: string) => (e: ProtoEvent): boolean => statusOf(e)?.task_id.value === taskId && (state === undefined || statusOf(e)?.state === state);

/** The first offer of `agentId` (any agent when undefined). */
async function offerOf(s: ProtoScheduler, agentId?: string): Promise<OfferView> {
  const e = await s.next((x) => offersOf(x).some((o) => agentId === undefined || o.agent_id.value === agentId), undefined, `an offer${agentId === undefined ? '' : ` of ${agentId}`}`);
  return offersOf(e).find((o) => agentId === undefined || o.agent_id.value === agentId) as OfferView;
}

/** Launches tasks on an offer and acknowledges updates until each launched one is RUNNING. */
async function launch(s: ProtoScheduler, offer: OfferView, tasks: Array<Record<string, unknown>>, running: string[]): Promise<void> {
  const r = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: 0 } });
  assert.equal(r.status, 202, r.text);
  for (const id of running) {
    for (let i = 0; i < 5; i++) {
      const e = await s.next(updateFor(id), undefined, `an update of ${id}`);
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

async function operator(m: MasterHandle, who: Principal | undefined, call: Record<string, unknown>): Promise<{ status: number; text: string; json: unknown }> {
  return callApi(m.url, call, { 'content-type': 'application/json', accept: 'application/json', ...(who === undefined ? {} : { authorization: auth(who) }) });
}

type FrameworkJson = { framework_info: { id: { value: string }; principal?: string; user: string }; active: boolean };
type TaskJson = { task_id: { value: string }; state: string };

async function frameworks(m: MasterHandle, who: Principal | undefined): Promise<FrameworkJson[]> {
  const r = await operator(m, who, { type: 'GET_FRAMEWORKS' });
  assert.equal(r.status, 200, r.text);
  return (r.json as { get_frameworks: { frameworks?: FrameworkJson[] } }).get_frameworks.frameworks ?? [];
}

async function tasks(m: MasterHandle, who: Principal | undefined): Promise<{ tasks: TaskJson[]; completed_tasks: TaskJson[] }> {
  const r = await operator(m, who, { type: 'GET_TASKS' });
  assert.equal(r.status, 200, r.text);
  const g = (r.json as { get_tasks: { tasks?: TaskJson[]; completed_tasks?: TaskJson[] } }).get_tasks;
  return { tasks: g.tasks ?? [], completed_tasks: g.completed_tasks ?? [] };
}

const audits = (m: MasterHandle, pred: (r: LogRecord) => boolean): LogRecord[] => m.daemon.records.filter((r) => r['msg'] === 'audit' && pred(r));
/** The audit lines matching, once at least `min` have been read from the master's stdout (the answer can arrive before its log line). */
const auditsAtLeast = (m: MasterHandle, pred: (r: LogRecord) => boolean, min = 1): Promise<LogRecord[]> =>
  eventually(() => {
    const found = audits(m, pred);
    return found.length >= min ? found : undefined;
  }, undefined, 20, 'audit lines');

test('a framework is bound to its principal: hijack, stranger calls and unauthorized teardowns are refused and change nothing', async (t) => {
  const m = await secureMaster(t);
  const a1 = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'a1', resources: 'cpus:2;mem:1024', flags: [...AGENT_FLAGS, '--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const alice = await subscribe(m, 'alice', { user: 'web', name: 'alice-fw', failover_timeout: 120 });
  t.after(() => alice.close());
  await launch(alice, await offerOf(alice, a1.agentId), [task('t1', a1.agentId as string)], ['t1']);
  const fid = alice.frameworkId;

  // The framework carries the principal it authenticated as (the client sent "principal": "").
  const [registered] = await frameworks(m, 'ops');
  assert.equal(registered?.framework_info.principal, 'alice');

  // Anonymous and wrong-secret SUBSCRIBEs: 401 with the scheduler realm's challenge.
  const anon = await refusedSubscribe(m, { user: 'web', name: 'anon' }, undefined);
  assert.equal(anon.status, 401, anon.text);
  assert.equal(anon.headers?.get('www-authenticate'), 'Basic realm="mesos-master-scheduler"');
  const wrong = await refusedSubscribe(m, { user: 'web', name: 'x' }, authorizationHeader({ kind: 'basic', principal: 'alice', secret: 'nope' }));
  assert.equal(wrong.status, 401, wrong.text);

  // Hijack: bob SUBSCRIBEs with alice's framework id, with and without naming her principal.
  const hijack = await refusedSubscribe(m, { user: 'web', name: 'alice-fw', id: { value: fid } }, auth('bob'));
  assert.equal(hijack.status, 403);
  assert.equal(hijack.text, `Framework '${fid}' belongs to principal 'alice', not to 'bob'`);
  const claim = await refusedSubscribe(m, { user: 'web', name: 'alice-fw', id: { value: fid }, principal: 'alice' }, auth('bob'));
  assert.equal(claim.status, 403);
  assert.equal(claim.text, "Framework principal 'alice' does not match authenticated principal 'bob'");

  // Calls for alice's framework from bob (with alice's own stream id) and from nobody.
  const bob = await subscribe(m, 'bob', { user: 'batch', name: 'bob-fw' });
  t.after(() => bob.close());
  const stranger = { frameworkId: fid, streamId: alice.streamId };
  for (const [type, body] of [['TEARDOWN', undefined], ['KILL', { task_id: { value: 't1' } }], ['REVIVE', undefined]] as const) {
    const r = await bob.call(type, body, stranger);
    assert.equal(r.status, 403, `${type}: ${r.text}`);
    assert.equal(r.text, `Framework '${fid}' belongs to principal 'alice', not to 'bob'`);
  }
  const nobody = await bob.call('TEARDOWN', undefined, { ...stranger, authorization: null });
  assert.equal(nobody.status, 401);

  // The operator TEARDOWN needs teardown_frameworks: only ops has it.
  for (const who of ['bob', 'alice', undefined] as const) {
    const r = await operator(m, who, { type: 'TEARDOWN', teardown: { framework_id: { value: fid } } });
    assert.equal(r.status, 403, `${who ?? 'anonymous'}: ${r.text}`);
    assert.match(r.text, /may not teardown_frameworks on 'alice'$/);
  }

  // Nothing changed: alice's stream is open and works, her framework is active, her task runs.
  assert.ok(!alice.received.some((e) => e.type === 'ERROR'), `alice got: ${alice.received.map((e) => e.type).join(',')}`);
  const revive = await alice.call('REVIVE');
  assert.equal(revive.status, 202, revive.text);
  const still = (await frameworks(m, 'ops')).find((f) => f.framework_info.id.value === fid);
  assert.equal(still?.active, true);
  assert.equal((await tasks(m, 'ops')).tasks.find((x) => x.task_id.value === 't1')?.state, 'TASK_RUNNING');

  // Every refusal, and every SUBSCRIBE, left an audit line.
  assert.ok((await auditsAtLeast(m, (r) => r['principal'] === 'bob' && r['action'] === 'SUBSCRIBE' && r['outcome'] === 'denied' && r['status'] === 403, 2)).length >= 2);
  assert.ok((await auditsAtLeast(m, (r) => r['principal'] === 'bob' && r['action'] === 'TEARDOWN' && r['outcome'] === 'denied' && r['object'] === `framework ${fid}`, 1)).length >= 1);
  assert.ok((await auditsAtLeast(m, (r) => r['principal'] === 'bob' && r['action'] === 'KILL' && r['outcome'] === 'denied', 1)).length >= 1);
  assert.equal((await auditsAtLeast(m, (r) => r['principal'] === 'alice' && r['action'] === 'SUBSCRIBE register_frameworks' && r['outcome'] === 'allowed' && r['detail'] === `framework ${fid}`)).length, 1);
  assert.ok((await auditsAtLeast(m, (r) => r['principal'] === null && r['outcome'] === 'unauthenticated' && r['status'] === 401, 2)).length >= 2);
  assert.equal((await auditsAtLeast(m, (r) => r['principal'] === 'bob' && r['action'] === 'TEARDOWN teardown_frameworks' && r['outcome'] === 'denied')).length, 1);

  // ops may: 200, the framework is gone, alice's stream ends and her task is killed.
  const unknown = await operator(m, 'ops', { type: 'TEARDOWN', teardown: { framework_id: { value: 'no-such-framework' } } });
  assert.deepEqual([unknown.status, unknown.text], [400, 'No framework found with specified ID']);
  const down = await operator(m, 'ops', { type: 'TEARDOWN', teardown: { framework_id: { value: fid } } });
  assert.equal(down.status, 200, down.text);
  assert.match(await alice.ended, /stream (ended|failed)/);
  assert.equal((await frameworks(m, 'ops')).some((f) => f.framework_info.id.value === fid), false);
  await eventually(async () => ((await tasks(m, 'ops')).completed_tasks.find((x) => x.task_id.value === 't1')?.state === 'TASK_KILLED' ? true : undefined), undefined, 100, 't1 killed');
  assert.equal((await auditsAtLeast(m, (r) => r['principal'] === 'ops' && r['action'] === 'TEARDOWN teardown_frameworks' && r['outcome'] === 'allowed')).length, 1);
  // Removed, it stays alice's: bob learns nothing of it.
  const late = await refusedSubscribe(m, { user: 'web', name: 'alice-fw', id: { value: fid } }, auth('bob'));
  assert.equal(late.status, 403, late.text);
  // bob's own framework was never touched.
  const bobRevive = await bob.call('REVIVE');
  assert.equal(bobRevive.status, 202, bobRevive.text);
});

test('register_frameworks refuses a role, run_tasks a user (TASK_ERROR REASON_TASK_UNAUTHORIZED), the allowed task runs', async (t) => {
  const m = await secureMaster(t);
  const a1 = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'a1', resources: 'cpus:2;mem:1024', flags: AGENT_FLAGS, stopSignal: 'SIGUSR1' });

  const db = await refusedSubscribe(m, { user: 'web', name: 'db-fw', role: 'db' }, auth('alice'));
  assert.equal(db.status, 403);
  assert.equal(db.text, "Forbidden: principal 'alice' may not register_frameworks on 'db'");
  assert.equal((await auditsAtLeast(m, (r) => r['principal'] === 'alice' && r['action'] === 'SUBSCRIBE register_frameworks' && r['object'] === "'db'" && r['outcome'] === 'denied')).length, 1);
  assert.equal((await frameworks(m, 'ops')).length, 0, 'nothing was registered');

  const alice = await subscribe(m, 'alice', { user: 'web', name: 'web-fw', role: 'web' });
  t.after(() => alice.close());
  const offer = await offerOf(alice, a1.agentId);
  // One ACCEPT: root is refused, the framework's own user (web) runs.
  await launch(alice, offer, [task('as-root', a1.agentId as string, 'root'), task('as-web', a1.agentId as string)], ['as-web']);
  const refused = statusOf(await alice.next(updateFor('as-root'), undefined, 'the refusal of as-root'));
  assert.equal(refused?.state, 'TASK_ERROR');
  assert.equal(refused?.reason, 'REASON_TASK_UNAUTHORIZED');
  assert.equal(refused?.source, 'SOURCE_MASTER');
  assert.equal(refused?.message, "Not authorized to launch as user 'root'");
  const known = await tasks(m, 'ops');
  assert.deepEqual(known.tasks.map((x) => x.task_id.value), ['as-web']);
  // Nothing reached the agent for the refused task.
  assert.equal(a1.daemon.records.some((r) => JSON.stringify(r).includes('as-root')), false);
});

/** An operator event stream opened with credentials (the helper's EventStream sends none). */
async function operatorStream(t: Cleanup, m: MasterHandle, who: Principal): Promise<{ records: Array<{ type: string } & Record<string, unknown>>; until: (pred: (r: { type: string } & Record<string, unknown>) => boolean, what: string) => Promise<void> }> {
  const abort = new AbortController();
  t.after(() => abort.abort());
  const res = await fetch(`${m.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: auth(who) }, body: JSON.stringify({ type: 'SUBSCRIBE' }), signal: abort.signal });
  assert.equal(res.status, 200);
  const records: Array<{ type: string } & Record<string, unknown>> = [];
  const reader = new RecordReader();
  void (async () => {
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) for (const r of reader.push(Buffer.from(chunk))) records.push(JSON.parse(r) as { type: string });
    } catch {
      // aborted at the end of the test
    }
  })();
  const until = (pred: (r: { type: string } & Record<string, unknown>) => boolean, what: string): Promise<void> =>
    eventually(() => (records.some(pred) ? true : undefined), undefined, 20, `${who}'s stream: ${what}`).then(() => undefined);
  return { records, until };
}

test('GET_STATE, GET_TASKS, GET_FRAMEWORKS, GET_AGENTS, GET_FLAGS and the event stream show only what the view ACLs allow', async (t) => {
  const m = await secureMaster(t);
  const [r1, r2] = await Promise.all([
    startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'r1', resources: 'cpus:2;mem:1024', flags: [...AGENT_FLAGS, '--attributes=rack:r1'], stopSignal: 'SIGUSR1' }),
    startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'r2', resources: 'cpus:2;mem:1024', flags: [...AGENT_FLAGS, '--attributes=rack:r2'], stopSignal: 'SIGUSR1' }),
  ]);
  const web = await operatorStream(t, m, 'webview');
  const ops = await operatorStream(t, m, 'ops');
  await web.until((r) => r.type === 'SUBSCRIBED', 'SUBSCRIBED');
  await ops.until((r) => r.type === 'SUBSCRIBED', 'SUBSCRIBED');
  const agentIdsOf = (state: unknown): string[] => ((state as { get_agents: { agents?: Array<{ agent_info: { id: { value: string } } }> } }).get_agents.agents ?? []).map((a) => a.agent_info.id.value).sort();
  const snapshot = (s: typeof web): unknown => (s.records[0]?.['subscribed'] as { get_state: unknown }).get_state;
  assert.deepEqual(agentIdsOf(snapshot(web)), [r1.agentId]);
  assert.deepEqual(agentIdsOf(snapshot(ops)), [r1.agentId, r2.agentId].sort());

  // bob's (user batch) framework and task first, then alice's (user web): webview may see only alice's.
  const bob = await subscribe(m, 'bob', { user: 'batch', name: 'batch-fw' });
  t.after(() => bob.close());
  await launch(bob, await offerOf(bob, r2.agentId), [task('batch-task', r2.agentId as string)], ['batch-task']);
  // bob holds r1's offer too: declined for long, so it goes to alice (used offers are ignored).
  const held = bob.received.flatMap((e) => offersOf(e).map((o) => o.id));
  const declined = await bob.call('DECLINE', { offer_ids: held, filters: { refuse_seconds: 3600 } });
  assert.equal(declined.status, 202, declined.text);
  const alice = await subscribe(m, 'alice', { user: 'web', name: 'web-fw' });
  t.after(() => alice.close());
  await launch(alice, await offerOf(alice, r1.agentId), [task('web-task', r1.agentId as string)], ['web-task']);

  const running = (id: string) => (r: { type: string } & Record<string, unknown>): boolean =>
    r.type === 'TASK_UPDATED' && (r['task_updated'] as { status: { task_id: { value: string } }; state: string }).status.task_id.value === id && (r['task_updated'] as { state: string }).state === 'TASK_RUNNING';
  await ops.until(running('batch-task'), 'batch-task RUNNING');
  await ops.until(running('web-task'), 'web-task RUNNING');
  // web-task's RUNNING came after everything of bob's on the same stream: whatever webview was sent of bob's is in by now.
  await web.until(running('web-task'), 'web-task RUNNING');
  const mentions = (s: typeof web, text: string): string[] => s.records.slice(1).filter((r) => JSON.stringify(r).includes(text)).map((r) => r.type);
  assert.deepEqual(mentions(web, 'batch'), [], 'webview got nothing of the batch framework or its task');
  assert.ok(mentions(web, 'web-task').includes('TASK_ADDED'));
  assert.ok(mentions(web, alice.frameworkId).includes('FRAMEWORK_ADDED'));
  assert.ok(mentions(ops, 'batch-task').includes('TASK_ADDED'));
  assert.ok(mentions(ops, bob.frameworkId).includes('FRAMEWORK_ADDED'));

  // The read calls, as webview, ops and an anonymous caller (permissive: false, so nothing).
  const ids = (xs: Array<{ task_id: { value: string } }>): string[] => xs.map((x) => x.task_id.value).sort();
  assert.deepEqual(ids((await tasks(m, 'webview')).tasks), ['web-task']);
  assert.deepEqual(ids((await tasks(m, 'ops')).tasks), ['batch-task', 'web-task']);
  assert.deepEqual(ids((await tasks(m, undefined)).tasks), []);
  assert.deepEqual((await frameworks(m, 'webview')).map((f) => f.framework_info.id.value), [alice.frameworkId]);
  assert.equal((await frameworks(m, 'ops')).length, 2);
  assert.deepEqual(await frameworks(m, undefined), []);
  const agents = async (who: Principal | undefined): Promise<string[]> => {
    const r = await operator(m, who, { type: 'GET_AGENTS' });
    assert.equal(r.status, 200, r.text);
    return agentIdsOf(r.json);
  };
  assert.deepEqual(await agents('webview'), [r1.agentId]);
  assert.deepEqual(await agents('ops'), [r1.agentId, r2.agentId].sort());
  assert.deepEqual(await agents(undefined), []);
  const state = (await operator(m, 'webview', { type: 'GET_STATE' })).json as { get_state: { get_tasks: { tasks?: Array<{ task_id: { value: string } }> }; get_frameworks: { frameworks?: FrameworkJson[] } } };
  assert.deepEqual(agentIdsOf(state.get_state), [r1.agentId]);
  assert.deepEqual(ids(state.get_state.get_tasks.tasks ?? []), ['web-task']);
  assert.deepEqual((state.get_state.get_frameworks.frameworks ?? []).map((f) => f.framework_info.id.value), [alice.frameworkId]);

  // GET_FLAGS: view_flags is all or nothing.
  const flags = await operator(m, 'webview', { type: 'GET_FLAGS' });
  assert.equal(flags.status, 403);
  assert.equal(flags.text, "Forbidden: principal 'webview' may not view_flags");
  assert.equal((await operator(m, 'ops', { type: 'GET_FLAGS' })).status, 200);
});

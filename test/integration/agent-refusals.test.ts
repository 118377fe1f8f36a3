/**
 * A master message the agent cannot decode: refused, not a reconnect loop. A real agent with
 * the fake master: it keeps its session, does nothing with the message, logs it once per
 * message, counts each, and names it to the master (REFUSED), or not, to a master that does
 * not list REFUSED. A real master with a fake agent: the refusal of a DRAIN is in the drain
 * record and the same DRAIN is not sent again at registrations, until the agent comes back
 * with another version or the drain changes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWireJson } from '../../shared/json.js';
import { messageDigest, type MasterMessage } from '../../shared/protocol.js';
import { callApi, eventually, startAgent, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { daemonSample, fetchSnapshot, scrapeMetrics } from '../helpers/exposition.js';
import { FakeAgent } from '../helpers/fake-agent.js';
import { agentWorkDir, shellTask, startFakeMaster } from '../helpers/fake-master.js';

const BAD_DRAIN = '{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":"forever"},"mark_gone":false}}';

test('the agent refuses a master message it cannot decode: session kept, nothing done, logged once, counted, named to the master', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t), stopSignal: 'SIGUSR1' });
  master.runTask(shellTask('keep', 'sleep 60'));
  await master.waitForUpdate('keep', 'TASK_RUNNING');
  const socket = master.socket;
  const from = agent.daemon.records.length;

  master.sendRaw('{"type":"RUN_TASK","framework_id":"fw-test"}');
  master.sendRaw(BAD_DRAIN);
  master.sendRaw(BAD_DRAIN);
  master.sendRaw('{"type":"REBOOT_NOW","epoch":"1"}');
  const refusals = await master.waitFor(() => (master.refusals.length >= 4 ? master.refusals : undefined), undefined, 'four REFUSED');
  assert.deepEqual(refusals.map((r) => r.type), ['RUN_TASK', 'DRAIN', 'DRAIN', '?']);
  assert.match(refusals[0]!.reason, /Missing required fields: framework, task/);
  assert.match(refusals[1]!.reason, /Failed to convert 'forever' to number for field 'nanoseconds'/);
  assert.match(refusals[3]!.reason, /unknown message type "REBOOT_NOW"/);
  // The digest is that of the message as the master wrote it: the master can tell which one it was.
  assert.equal(refusals[1]!.digest, messageDigest(parseWireJson(BAD_DRAIN) as object));
  assert.equal(refusals[2]!.digest, refusals[1]!.digest);

  // The same session still works: a launch after the refusals runs (a dropped session would have lost it).
  master.runTask(shellTask('after', 'sleep 60'));
  await master.waitForUpdate('after', 'TASK_RUNNING');
  assert.equal(master.socket, socket, 'the same socket');
  assert.equal(master.registrations.length, 1, 'never registered again');
  // Nothing was done: the running task was not killed, the agent is not draining.
  assert.deepEqual(master.states('keep'), ['TASK_STARTING', 'TASK_RUNNING']);
  const getAgent = (await callApi(agent.url, { type: 'GET_AGENT' })).json as { get_agent: Record<string, unknown> };
  assert.equal(getAgent.get_agent['drain_config'], undefined);

  // Logged once per message (the DRAIN sent twice is one line), at error, with what was refused.
  const lines = agent.daemon.records.slice(from).filter((r) => r['msg'] === 'master message refused');
  assert.deepEqual(lines.map((r) => [r['level'], r['type'], r['toldMaster']]), [['error', 'RUN_TASK', true], ['error', 'DRAIN', true], ['error', '?', true]]);
  assert.deepEqual(agent.daemon.records.slice(from).filter((r) => r['msg'] === 'invalid master message'), []);
  // Counted every time.
  const e = await scrapeMetrics(`${agent.url}/metrics`);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_master_messages_refused_total', { type: 'DRAIN' }), 2);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_master_messages_refused_total', { type: 'RUN_TASK' }), 1);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_master_messages_refused_total', { type: '?' }), 1);
  assert.equal(daemonSample(e, 'agent', 'drydock_agent_master_messages_refused_total', { type: 'KILL_TASK' }), 0);
  const snap = await fetchSnapshot(`${agent.url}/metrics/snapshot`);
  assert.equal(snap['drydock/master_messages_refused'], 4);
  assert.equal(snap['drydock/master_registrations'], 1);
});

test('a master that does not list REFUSED is not sent one (it would close the session on a type it does not know)', async (t) => {
  const master = await startFakeMaster(t, { autoAck: true, capabilities: null });
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t), stopSignal: 'SIGUSR1' });
  const from = agent.daemon.records.length;
  master.sendRaw(BAD_DRAIN);
  // A round trip after it: REFUSED would have come before this task's update on the ordered stream.
  master.runTask(shellTask('after', 'sleep 60'));
  await master.waitForUpdate('after', 'TASK_RUNNING');
  assert.deepEqual(master.refusals, []);
  assert.deepEqual(master.invalid, []);
  const line = await agent.daemon.waitForMsg('master message refused', { type: 'DRAIN' }, undefined, from);
  assert.equal(line['toldMaster'], false);
  assert.equal(master.registrations.length, 1);
});

/** Drydock's view of every agent (GET /drydock/v1/agents): the drain record is there. */
async function agents(m: MasterHandle): Promise<Array<{ agent_id: { value: string }; drain?: { refused?: { reason: string; time: { nanoseconds: number } } } }>> {
  const r = await fetch(`${m.url}/drydock/v1/agents`, { signal: AbortSignal.timeout(10_000) });
  return ((await r.json()) as { agents: [] }).agents;
}

test('the master: a refused DRAIN is in the drain record, counted, and not re-sent at registrations until the agent version or the drain changes', async (t) => {
  const m = await startMaster(t);
  const fa = await FakeAgent.connect(m.url);
  t.after(() => fa.close());
  const reg = await fa.register();
  assert.deepEqual(reg.capabilities, ['REFUSED', 'CONDITIONS'], 'the master says it takes REFUSED (and CONDITIONS)');
  const id = reg.agent_id;
  const drain = { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: id }, max_grace_period: '10mins' } };
  assert.equal((await callApi(m.url, drain)).status, 200);
  const isDrain = (x: MasterMessage): x is Extract<MasterMessage, { type: 'DRAIN' }> => x.type === 'DRAIN';
  await fa.waitFor(isDrain);
  // What a real agent would answer, had it not been able to read it: the digest of the frame as received.
  const frame = fa.frames.find((f) => f.includes('"type":"DRAIN"'));
  assert.ok(frame !== undefined);
  const from = m.daemon.records.length;
  fa.send({ type: 'REFUSED', refused: { type: 'DRAIN', digest: messageDigest(parseWireJson(frame) as object), reason: 'cannot read it' } });
  const refused = await eventually(async () => (await agents(m)).find((a) => a.agent_id.value === id)?.drain?.refused, undefined, 50, 'the refusal in the drain record');
  assert.equal(refused.reason, 'cannot read it');
  assert.ok(refused.time.nanoseconds > 0);
  await m.daemon.waitForMsg('agent refused a message', { agentId: id, type: 'DRAIN', reason: 'cannot read it' }, undefined, from);
  await m.daemon.waitForMsg('agent refused its drain', { agentId: id }, undefined, from);
  const e = await scrapeMetrics(`${m.url}/metrics`);
  assert.equal(daemonSample(e, 'master', 'drydock_master_agent_messages_refused_total', { type: 'DRAIN' }), 1);
  assert.equal((await fetchSnapshot(`${m.url}/metrics/snapshot`))['drydock/agent_messages_refused'], 1);
  assert.equal(fa.closed, undefined, 'the session stays');

  // The agent comes back (a new session, the same version): no DRAIN. A second REGISTER on the
  // session is answered after everything the first registration sent.
  fa.close();
  const again = await FakeAgent.connect(m.url, { self: fa.self });
  t.after(() => again.close());
  await again.register({ agentId: id });
  await again.register({ agentId: id });
  assert.deepEqual(again.messages.filter(isDrain), [], 'the refused DRAIN is not sent again');

  // Back with another version (upgraded): sent again, and the refusal is history.
  again.close();
  const upgraded = await FakeAgent.connect(m.url, { self: fa.self });
  t.after(() => upgraded.close());
  await upgraded.register({ agentId: id, version: '99.0.0' });
  await upgraded.waitFor(isDrain);
  assert.equal((await agents(m)).find((a) => a.agent_id.value === id)?.drain?.refused, undefined);

  // It refuses that one too; a new DRAIN_AGENT is a new message: sent at once.
  const second = upgraded.frames.filter((f) => f.includes('"type":"DRAIN"'))[0] as string;
  upgraded.send({ type: 'REFUSED', refused: { type: 'DRAIN', digest: messageDigest(parseWireJson(second) as object), reason: 'still cannot' } });
  await eventually(async () => ((await agents(m)).find((a) => a.agent_id.value === id)?.drain?.refused?.reason === 'still cannot' ? true : undefined), undefined, 50, 'refused again');
  assert.equal((await callApi(m.url, { ...drain, drain_agent: { ...drain.drain_agent, max_grace_period: '20mins' } })).status, 200);
  await eventually(() => (upgraded.messages.filter(isDrain).length === 2 ? true : undefined), undefined, 20, 'the new DRAIN');
  assert.equal(upgraded.messages.filter(isDrain)[1]?.config.max_grace_period?.nanoseconds, 1_200_000_000_000n);
  assert.equal((await agents(m)).find((a) => a.agent_id.value === id)?.drain?.refused, undefined);
});

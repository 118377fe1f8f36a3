/**
 * Maintenance primitives end to end: the source document's curl flows (raw fetch, a form
 * content type), exact int64 digits, 400 messages, offers with unavailability, inverse offers
 * and their answers, Machine DOWN (agent shut down, TASK_LOST, FAILURE, refused on restart and
 * after a master restart) and Machine UP.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, eventually, startAgent, startMaster, tempDir } from '../helpers/daemons.js';

const FORM = { 'content-type': 'application/x-www-form-urlencoded' };

async function post(url: string, path: string, body: string, headers: Record<string, string> = FORM): Promise<{ status: number; text: string }> {
  const res = await fetch(`${url}${path}`, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text() };
}
async function get(url: string, path: string): Promise<{ status: number; text: string; type: string | null }> {
  const res = await fetch(`${url}${path}`, { signal: AbortSignal.timeout(10_000) });
  return { status: res.status, text: await res.text(), type: res.headers.get('content-type') };
}

test('the source document curl flows: schedule POST/GET exact digits, status, validation 400s, v1 calls, methods, jsonp, restart', async (t) => {
  const workDir = tempDir(t, 'drydock-maint-master-');
  let m = await startMaster(t, { workDir });
  const schedule =
    '{"windows":[{"machine_ids":[{"hostname":"machine1","ip":"10.0.0.1"},{"hostname":"machine2","ip":"10.0.0.2"}],"unavailability":{"start":{"nanoseconds":1443830400000000001},"duration":{"nanoseconds":3600000000000}}},' +
    '{"machine_ids":[{"hostname":"machine3","ip":"10.0.0.3"}],"unavailability":{"start":{"nanoseconds":1443834000000000000},"duration":{"nanoseconds":3600000000000}}}]}';
  // Pretty-printed, with curl -H "Content-type: application/json" as in the document.
  let r = await post(m.url, '/maintenance/schedule', JSON.stringify(JSON.parse(schedule.replace(/(\d{16,})/g, '"$1"')), null, 2).replace(/"(\d{16,})"/g, '$1'), { 'content-type': 'application/json' });
  assert.equal(r.status, 200, r.text);
  assert.equal(r.text, '');
  const g = await get(m.url, '/maintenance/schedule');
  assert.equal(g.type, 'application/json');
  assert.equal(g.text, schedule);
  assert.equal((await get(m.url, '/master/maintenance/schedule')).text, schedule);
  assert.equal((await get(m.url, '/maintenance/schedule?jsonp=cb')).text, `cb(${schedule});`);
  assert.equal((await get(m.url, '/maintenance/status')).text, '{"draining_machines":[{"id":{"hostname":"machine1","ip":"10.0.0.1"}},{"id":{"hostname":"machine2","ip":"10.0.0.2"}},{"id":{"hostname":"machine3","ip":"10.0.0.3"}}]}');

  // Validation: 400, Mesos' message, nothing changes.
  const bad: Array<[string, string, string]> = [
    ['/maintenance/schedule', '[]', 'Unexpected JSON type parsed'],
    ['/maintenance/schedule', '{"windows":[{"machine_ids":[{"hostname":"x"}]}]}', 'Missing required fields: windows[0].unavailability'],
    ['/maintenance/schedule', '{"windows":[{"machine_ids":[],"unavailability":{"start":{"nanoseconds":0}}}]}', 'List of machines in the maintenance window is empty'],
    ['/maintenance/schedule', '{"windows":[{"machine_ids":[{"hostname":"x","ip":"1.2.3"}],"unavailability":{"start":{"nanoseconds":0}}}]}', 'Failed to parse IPv4: 1.2.3'],
    ['/machine/down', '{}', 'Unexpected JSON type parsed'],
    ['/machine/down', '[]', 'List of machines is empty'],
    ['/machine/down', '[{"hostname":"nope"}]', 'Machine \'{"hostname":"nope"}\' is not part of a maintenance schedule'],
    ['/machine/up', '[{"hostname":"MACHINE1","ip":"10.0.0.1"}]', 'Machine \'{"hostname":"MACHINE1","ip":"10.0.0.1"}\' is not in DOWN mode and cannot be brought up'],
    ['/machine/down', '[{"hostname":"machine3","ip":"10.0.0.3"},{"hostname":"machine3","ip":"10.0.0.3"}]', 'Machine \'{"hostname":"machine3","ip":"10.0.0.3"}\' appears more than once in the schedule'],
  ];
  for (const [path, body, message] of bad) {
    r = await post(m.url, path, body);
    assert.deepEqual(r, { status: 400, text: message }, `${path} ${body}`);
  }
  assert.equal((await get(m.url, '/maintenance/schedule')).text, schedule);

  // curl -X POST -d @machines.json (form content type): machine1 goes DOWN.
  r = await post(m.url, '/machine/down', '[{"hostname":"machine1","ip":"10.0.0.1"}]');
  assert.equal(r.status, 200, r.text);
  r = await post(m.url, '/maintenance/schedule', '{}');
  assert.deepEqual(r, { status: 400, text: 'Machine \'{"hostname":"machine1","ip":"10.0.0.1"}\' is deactivated and cannot be removed from the schedule' });

  // v1 calls.
  let v = await callApi(m.url, { type: 'GET_MAINTENANCE_STATUS' });
  assert.equal(v.status, 200);
  assert.match(v.text, /"down_machines":\[\{"hostname":"machine1","ip":"10.0.0.1"\}\]/);
  v = await callApi(m.url, { type: 'UPDATE_MAINTENANCE_SCHEDULE' });
  assert.deepEqual([v.status, v.text], [400, "Failed to validate master::Call: Expecting 'update_maintenance_schedule' to be present"]);
  v = await callApi(m.url, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'x' }] }] } } });
  assert.deepEqual([v.status, v.text], [400, 'Failed to convert JSON into Call protobuf: Missing required fields: update_maintenance_schedule.schedule.windows[0].unavailability']);
  v = await callApi(m.url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [] } });
  assert.deepEqual([v.status, v.text], [400, 'List of machines is empty']);
  v = await callApi(m.url, { type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [{ hostname: 'machine1', ip: '10.0.0.1' }] } });
  assert.deepEqual([v.status, v.text], [200, '']);
  v = await callApi(m.url, { type: 'GET_MAINTENANCE_SCHEDULE' });
  assert.equal(v.text, `{"type":"GET_MAINTENANCE_SCHEDULE","get_maintenance_schedule":{"schedule":${schedule.replace('{"hostname":"machine1","ip":"10.0.0.1"},', '')}}}`);
  v = await callApi(m.url, { type: 'START_MAINTENANCE', start_maintenance: { machines: [{ hostname: 'machine3', ip: '10.0.0.3' }] } });
  assert.deepEqual([v.status, v.text], [200, '']);

  // Methods.
  const put = await fetch(`${m.url}/maintenance/schedule`, { method: 'PUT', body: '{}' });
  assert.equal(put.status, 405);
  assert.equal(put.headers.get('allow'), 'GET, POST');
  assert.equal(await put.text(), "405 Method Not Allowed. Expecting one of { 'GET', 'POST' }, but received 'PUT'.");
  assert.equal((await get(m.url, '/machine/up')).status, 405);

  // A master restart changes nothing.
  const before = (await get(m.url, '/maintenance/schedule')).text;
  const status = (await get(m.url, '/maintenance/status')).text;
  await m.daemon.stop();
  m = await startMaster(t, { workDir });
  assert.equal((await get(m.url, '/maintenance/schedule')).text, before);
  assert.equal((await get(m.url, '/maintenance/status')).text, status);
  assert.match(status, /"down_machines":\[\{"hostname":"machine3","ip":"10.0.0.3"\}\]/);

  // {} clears everything but DOWN machines: bring machine3 up, then cancel.
  assert.equal((await post(m.url, '/machine/up', '[{"hostname":"machine3","ip":"10.0.0.3"}]')).status, 200);
  assert.equal((await post(m.url, '/maintenance/schedule', '{}')).status, 200);
  assert.equal((await get(m.url, '/maintenance/schedule')).text, '{}');
  assert.equal((await get(m.url, '/maintenance/status')).text, '{}');
  assert.equal((await callApi(m.url, { type: 'GET_MAINTENANCE_STATUS' })).text, '{"type":"GET_MAINTENANCE_STATUS","get_maintenance_status":{"status":{}}}');
});

type Offer = { id: { value: string }; agent_id: { value: string }; unavailability?: { start: { nanoseconds: bigint | number } } };
type InverseOffer = { id: { value: string }; agent_id: { value: string }; framework_id: { value: string }; unavailability: unknown; resources: unknown[] };
const offersOf = (e: SchedulerEvent): Offer[] => (e.type === 'OFFERS' ? ((e['offers'] as { offers?: Offer[] }).offers ?? []) : []);
// Mesos 1.x: inverse offers come in their own event; OFFERS carries only `offers`.
const inverseOf = (e: SchedulerEvent): InverseOffer[] => (e.type === 'INVERSE_OFFERS' ? (e['inverse_offers'] as { inverse_offers: InverseOffer[] }).inverse_offers : []);

test('draining: offers carry unavailability, inverse offers and answers; DOWN removes and refuses the agent; UP lets it back', async (t) => {
  const workDir = tempDir(t, 'drydock-maint-master-');
  let m = await startMaster(t, { workDir, flags: ['--allocation_interval=200ms'] });
  const agentDir = tempDir(t, 'drydock-maint-agent-');
  const agentOpts = { master: m.address, ip: '127.0.0.2', hostname: 'Node1', resources: 'cpus:2;mem:1024', workDir: agentDir };
  const a1 = await startAgent(t, agentOpts);
  const a2 = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'node2', resources: 'cpus:2;mem:1024' });
  // An unscheduled machine with an agent has an UP entry: "not in DRAINING mode".
  let r = await post(m.url, '/machine/down', '[{"hostname":"node1","ip":"127.0.0.2"}]');
  assert.deepEqual(r, { status: 400, text: 'Machine \'{"hostname":"node1","ip":"127.0.0.2"}\' is not in DRAINING mode and cannot be brought down' });

  const s = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'maint-fw', checkpoint: true });
  t.after(() => s.close());
  const first = await eventually(() => s.received.flatMap(offersOf).find((o) => o.agent_id.value === a1.agentId), undefined, 50, 'an offer for agent 1');
  assert.equal(first.unavailability, undefined);

  // Launch a task on agent 1 from that offer.
  const launch = await s.call('ACCEPT', {
    offer_ids: [first.id],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: 't1', task_id: { value: 't1' }, agent_id: { value: a1.agentId }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }], command: { value: 'sleep 60' } }] } }],
    filters: { refuse_seconds: 0 },
  });
  assert.equal(launch.status, 202, launch.text);
  // The agent sends the next update once the previous one is acknowledged: ack until RUNNING.
  for (let state = ''; state !== 'TASK_RUNNING'; ) {
    const u = await s.nextOfType('UPDATE');
    const st = (u['update'] as { status: { state: string; uuid?: string; agent_id: unknown; task_id: unknown } }).status;
    state = st.state;
    if (st.uuid !== undefined) assert.equal((await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid })).status, 202);
  }
  const heldOffer = await eventually(() => s.received.flatMap(offersOf).find((o) => o.agent_id.value === a1.agentId && o.id.value !== first.id.value), undefined, 50, 'a second offer for agent 1');

  // Schedule node1 (hostname in another case): the outstanding offer is rescinded and re-sent with unavailability.
  const seen = s.received.length;
  r = await post(m.url, '/maintenance/schedule', '{"windows":[{"machine_ids":[{"hostname":"NODE1","ip":"127.0.0.2"}],"unavailability":{"start":{"nanoseconds":1443830400000000001}}}]}');
  assert.equal(r.status, 200, r.text);
  await s.next((e) => e.type === 'RESCIND' && (e['rescind'] as { offer_id: { value: string } }).offer_id.value === heldOffer.id.value, undefined, 'RESCIND of the held offer');
  const reoffer = await eventually(() => s.received.slice(seen).flatMap(offersOf).find((o) => o.agent_id.value === a1.agentId), undefined, 50, 'a new offer for agent 1');
  assert.deepEqual(reoffer.unavailability, { start: { nanoseconds: 1443830400000000001n } }); // exact: the scheduler client keeps int64s
  // Drydock's own agent view carries the machine's mode and exact window; GET_AGENTS stays Mesos-shaped.
  const own = await (await fetch(`${m.url}/drydock/v1/agents/${a1.agentId}`)).text();
  assert.match(own, /"mode":"DRAINING","unavailability":\{"start":\{"nanoseconds":1443830400000000001\}\}/);
  assert.doesNotMatch((await callApi(m.url, { type: 'GET_AGENTS' })).text, /"maintenance"/);
  assert.ok(s.received.slice(seen).flatMap(offersOf).filter((o) => o.agent_id.value === a2.agentId).every((o) => o.unavailability === undefined));

  // An inverse offer for agent 1 (the framework has a task there).
  const inv = await eventually(() => s.received.flatMap(inverseOf).find((o) => o.agent_id.value === a1.agentId), undefined, 50, 'an inverse offer');
  assert.deepEqual(inv.resources, []);
  assert.equal(inv.framework_id.value, s.frameworkId);
  // The 1.x shapes: every OFFERS event carries exactly its `offers` array, never inverse offers.
  for (const e of s.received.filter((x) => x.type === 'OFFERS')) assert.deepEqual(Object.keys(e['offers'] as object), ['offers'], 'an OFFERS event with more than offers');
  r = await s.call('ACCEPT_INVERSE_OFFERS', { inverse_offer_ids: [inv.id, { value: 'unknown' }] });
  assert.equal(r.status, 202, r.text);
  const status = await eventually(async () => {
    const v = await callApi(m.url, { type: 'GET_MAINTENANCE_STATUS' });
    return v.text.includes('"status":"ACCEPT"') ? v.text : undefined;
  }, undefined, 50, 'ACCEPT in the maintenance status');
  assert.match(status, new RegExp(`"statuses":\\[\\{"status":"ACCEPT","framework_id":\\{"value":"${s.frameworkId}"\\},"timestamp":\\{"nanoseconds":\\d{19}\\}\\}\\]`));
  // Re-POSTing the same schedule re-applies the unavailability: answers cleared.
  r = await post(m.url, '/maintenance/schedule', '{"windows":[{"machine_ids":[{"hostname":"node1","ip":"127.0.0.2"}],"unavailability":{"start":{"nanoseconds":1443830400000000001}}}]}');
  assert.equal(r.status, 200);
  assert.doesNotMatch((await get(m.url, '/maintenance/status')).text, /statuses/);

  // Machine DOWN: the agent is shut down (exit 0, task killed), the task is lost, FAILURE, gone from GET_AGENTS.
  const downSeen = s.received.length;
  r = await post(m.url, '/machine/down', '[{"hostname":"node1","ip":"127.0.0.2"}]');
  assert.equal(r.status, 200, r.text);
  const exit = await a1.daemon.exitWithin();
  assert.deepEqual(exit, { code: 0, signal: null });
  const lost = await eventually(() => s.received.slice(downSeen).find((e) => e.type === 'UPDATE'), undefined, 50, 'TASK_LOST');
  const ls = (lost['update'] as { status: Record<string, unknown> }).status;
  assert.equal(ls['state'], 'TASK_LOST');
  assert.equal(ls['source'], 'SOURCE_MASTER');
  assert.equal(ls['reason'], 'REASON_AGENT_REMOVED');
  assert.equal(ls['message'], "Agent Node1 removed: Operator initiated 'Machine DOWN'");
  assert.ok(s.received.slice(downSeen).some((e) => e.type === 'FAILURE' && (e['failure'] as { agent_id: { value: string } }).agent_id.value === a1.agentId));
  const agents = (await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } } }> } };
  assert.deepEqual(agents.get_agents.agents.map((a) => a.agent_info.id.value), [a2.agentId]);

  // Restarting that agent: refused before registration, exit 0, the message on stderr.
  const again = await startAgent(t, { ...agentOpts, waitRegistered: false });
  const refused = await again.daemon.exitWithin();
  assert.deepEqual(refused, { code: 0, signal: null });
  assert.match(again.daemon.stderr, /Machine is `DOWN`/);

  // Master restart: still DOWN, still refused.
  await m.daemon.stop();
  m = await startMaster(t, { workDir, flags: ['--allocation_interval=200ms'] });
  assert.match((await get(m.url, '/maintenance/status')).text, /"down_machines":\[\{"hostname":"node1","ip":"127.0.0.2"\}\]/);
  const third = await startAgent(t, { ...agentOpts, master: m.address, waitRegistered: false });
  const refused2 = await third.daemon.exitWithin();
  assert.deepEqual(refused2, { code: 0, signal: null });
  assert.match(third.daemon.stderr, /Machine is `DOWN`/);

  // Machine UP: the agent may register again; the machine left the schedule.
  r = await post(m.url, '/machine/up', '[{"hostname":"node1","ip":"127.0.0.2"}]');
  assert.equal(r.status, 200, r.text);
  assert.equal((await get(m.url, '/maintenance/schedule')).text, '{}');
  const back = await startAgent(t, { ...agentOpts, master: m.address });
  assert.ok(back.agentId !== undefined);
});

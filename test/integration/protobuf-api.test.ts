/**
 * Protobuf as the second encoding, end to end against real daemons, with a client that knows
 * nothing of Drydock's codec (test/helpers/protobuf-client.ts: protobufjs over the schema, raw
 * HTTP): the master's operator API (reads give the same data as their JSON twins, writes do
 * the same, int64s to the digit, Duration in DRAIN_AGENT), the framing errors with Mesos'
 * words, the agent's API, the operator SUBSCRIBE stream, and a scheduler that speaks protobuf
 * only and takes a task to TASK_FINISHED.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseJson } from '../../shared/json.js';
import { encodeProtobuf } from '../../shared/protobuf.js';
import { eventually, startAgent, startMaster, tempDir } from '../helpers/daemons.js';
import { decode, encode, GoogleDecoder, jsonCall, post, PROTOBUF, protobufCall, ProtobufRecords, schemaView } from '../helpers/protobuf-client.js';
import { RawStream } from '../helpers/raw-stream.js';

const MASTER_CALL = 'mesos.v1.master.Call';
const MASTER_RESPONSE = 'mesos.v1.master.Response';
const AGENT_CALL = 'mesos.v1.agent.Call';
const AGENT_RESPONSE = 'mesos.v1.agent.Response';
/** A time past 2^53 nanoseconds that a double would round: it must come back to the digit. */
const EXACT_NS = '1443830400000000001';

/** Asks `call` in both encodings and holds the protobuf answer to the JSON one, read through the schema. */
async function sameAnswer(url: string, callType: string, responseType: string, call: Record<string, unknown>): Promise<Record<string, unknown>> {
  const [pb, js] = [await protobufCall(url, callType, call), await jsonCall(url, call)];
  const what = `${String(call['type'])} at ${url}`;
  assert.equal(pb.status, js.status, `${what}: ${pb.text} / ${js.text}`);
  if (js.status !== 200) {
    // Errors are the same text whatever the encoding.
    assert.equal(pb.text, js.text, what);
    assert.match(pb.contentType ?? '', /^text\/plain/, what);
    return {};
  }
  assert.equal(pb.contentType, PROTOBUF, what);
  const got = decode(responseType, pb.bytes);
  const { view } = schemaView(responseType, parseJson(js.text));
  assert.deepEqual(steady(got), steady(view), what);
  return got;
}

/** An answer with the values that move between two calls (GET_METRICS' uptime, free memory, ...) replaced by their types: the same names, each a number. */
function steady(answer: unknown): unknown {
  const metrics = (answer as { get_metrics?: { metrics?: Array<{ name: string; value?: unknown }> } }).get_metrics?.metrics;
  if (metrics === undefined) return answer;
  return { ...(answer as Record<string, unknown>), get_metrics: { metrics: metrics.map((x) => ({ name: x.name, value: typeof x.value })) } };
}

test('the operator and agent APIs in protobuf: the same data as JSON both ways, writes that do the same, Mesos\' framing errors', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'pb-agent', resources: 'cpus:1;mem:256;ports:[31000-31004]' });
  const api = `${m.url}/api/v1`;
  const agentId = a.agentId as string;

  // A write in protobuf, with an int64 past 2^53: 200 and an empty body, as in JSON.
  const schedule = { windows: [{ machine_ids: [{ hostname: 'pb-elsewhere', ip: '127.0.0.9' }], unavailability: { start: { nanoseconds: EXACT_NS }, duration: { nanoseconds: '3600000000000' } } }] };
  const update = await protobufCall(api, MASTER_CALL, { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule } });
  assert.equal(update.status, 200, update.text);
  assert.equal(update.bytes.length, 0);

  // Every read the master answers, in both encodings.
  for (const type of ['GET_HEALTH', 'GET_VERSION', 'GET_FLAGS', 'GET_MASTER', 'GET_STATE', 'GET_AGENTS', 'GET_FRAMEWORKS', 'GET_EXECUTORS', 'GET_TASKS', 'GET_MAINTENANCE_SCHEDULE', 'GET_MAINTENANCE_STATUS', 'GET_METRICS', 'GET_ROLES', 'GET_OPERATIONS']) {
    const call = type === 'GET_METRICS' ? { type, get_metrics: {} } : { type };
    await sameAnswer(api, MASTER_CALL, MASTER_RESPONSE, call);
  }
  // Google's own parser (protoc, C++) reads the answers too: the wire is protobuf's, not protobufjs' idea of it.
  const google = GoogleDecoder.create(tempDir(t, 'drydock-protoc-'));
  if (typeof google === 'string') t.diagnostic(google);
  else {
    for (const type of ['GET_STATE', 'GET_AGENTS', 'GET_MASTER', 'GET_MAINTENANCE_SCHEDULE']) {
      const text = google.decode(MASTER_RESPONSE, 'mesos/v1/master/master.proto', (await protobufCall(api, MASTER_CALL, { type })).bytes);
      assert.match(text, new RegExp(`^type: ${type}\\n${type.toLowerCase()} \\{`), text.slice(0, 200));
    }
    assert.match(google.decode(AGENT_RESPONSE, 'mesos/v1/agent/agent.proto', (await protobufCall(`${a.url}/api/v1`, AGENT_CALL, { type: 'GET_AGENT' })).bytes), /^type: GET_AGENT\n/);
  }
  const scheduled = decode(MASTER_RESPONSE, (await protobufCall(api, MASTER_CALL, { type: 'GET_MAINTENANCE_SCHEDULE' })).bytes);
  assert.equal((scheduled as { get_maintenance_schedule: { schedule: typeof schedule } }).get_maintenance_schedule.schedule.windows[0]?.unavailability.start.nanoseconds, EXACT_NS);

  // DRAIN_AGENT with its google.protobuf.Duration, then the drain as GET_AGENTS shows it in protobuf.
  const drain = await protobufCall(api, MASTER_CALL, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: agentId }, max_grace_period: { seconds: 5, nanos: 7 } } });
  assert.equal(drain.status, 200, drain.text);
  const drained = await eventually(async () => {
    const agents = decode(MASTER_RESPONSE, (await protobufCall(api, MASTER_CALL, { type: 'GET_AGENTS' })).bytes) as { get_agents: { agents: Array<{ drain_info?: { state: string; config: { max_grace_period: { nanoseconds: string } } }; deactivated?: boolean }> } };
    const agent = agents.get_agents.agents[0];
    return agent?.drain_info?.state === 'DRAINED' ? agent : undefined;
  }, 10_000, 100, 'the agent DRAINED');
  assert.equal(drained.drain_info?.config.max_grace_period.nanoseconds, '5000000007');
  assert.equal(drained.deactivated, true);
  await sameAnswer(api, MASTER_CALL, MASTER_RESPONSE, { type: 'GET_AGENTS' });
  const reactivate = await protobufCall(api, MASTER_CALL, { type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: { value: agentId } } });
  assert.equal(reactivate.status, 200, reactivate.text);

  // Framing: Mesos' statuses and words; errors are plain text whatever was asked.
  const cases: Array<[string, Buffer, Record<string, string>, number, string]> = [
    ['bytes that are not protobuf', Buffer.from([0x0f, 0x01]), { 'Content-Type': PROTOBUF }, 400, 'Failed to parse body into Call protobuf'],
    ['a required field missing (agent_id)', encodeProtobuf(MASTER_CALL, { type: 'DRAIN_AGENT', drain_agent: { mark_gone: true } }), { 'Content-Type': PROTOBUF }, 400, 'Failed to parse body into Call protobuf'],
    ['no sub-message', encode(MASTER_CALL, { type: 'DRAIN_AGENT' }), { 'Content-Type': PROTOBUF }, 400, "Failed to validate master::Call: Expecting 'drain_agent' to be present"],
    ['an empty body: no type', Buffer.alloc(0), { 'Content-Type': PROTOBUF }, 400, "Failed to validate master::Call: Expecting 'type' to be present"],
    ['an Accept that allows neither', encode(MASTER_CALL, { type: 'GET_HEALTH' }), { 'Content-Type': PROTOBUF, Accept: 'text/html' }, 406, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'"],
    ['UNKNOWN', encode(MASTER_CALL, { type: 'UNKNOWN' }), { 'Content-Type': PROTOBUF, Accept: PROTOBUF }, 501, 'Call type UNKNOWN is not supported'],
    ['an unknown agent', encode(MASTER_CALL, { type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: { value: 'nope' } } }), { 'Content-Type': PROTOBUF, Accept: PROTOBUF }, 400, ''],
  ];
  for (const [name, body, headers, status, text] of cases) {
    const r = await post(api, body, headers);
    assert.equal(r.status, status, `${name}: ${r.text}`);
    if (text !== '') assert.equal(r.text, text, name);
    assert.match(r.contentType ?? '', /^text\/plain/, name);
  }
  // Unknown fields are ignored, as Mesos ignores them: field 99 of every wire type.
  const withUnknown = Buffer.concat([encode(MASTER_CALL, { type: 'GET_HEALTH' }), Buffer.from([0x98, 0x06, 0x05])]);
  const health = await post(api, withUnknown, { 'Content-Type': PROTOBUF, Accept: PROTOBUF });
  assert.equal(health.status, 200, health.text);
  assert.deepEqual(decode(MASTER_RESPONSE, health.bytes), { type: 'GET_HEALTH', get_health: { healthy: true } });
  // Accept allowing both: JSON, as Mesos picks it first; a protobuf request answered in JSON by default.
  const both = await protobufCall(api, MASTER_CALL, { type: 'GET_HEALTH' }, `${PROTOBUF}, application/json`);
  assert.equal(both.contentType, 'application/json');
  assert.equal(both.text, '{"type":"GET_HEALTH","get_health":{"healthy":true}}');
  const jsonIn = await post(api, JSON.stringify({ type: 'GET_HEALTH' }), { 'Content-Type': 'application/json', Accept: PROTOBUF });
  assert.equal(jsonIn.contentType, PROTOBUF);
  assert.deepEqual(decode(MASTER_RESPONSE, jsonIn.bytes), { type: 'GET_HEALTH', get_health: { healthy: true } });

  // The agent's API: the same in both encodings, its own words for bytes that are not a call.
  const agentApi = `${a.url}/api/v1`;
  for (const type of ['GET_HEALTH', 'GET_VERSION', 'GET_FLAGS', 'GET_AGENT', 'GET_TASKS', 'GET_CONTAINERS', 'GET_OPERATIONS', 'GET_LOGGING_LEVEL', 'GET_STATE', 'GET_FRAMEWORKS', 'GET_EXECUTORS']) {
    await sameAnswer(agentApi, AGENT_CALL, AGENT_RESPONSE, { type });
  }
  const agentBad = await post(agentApi, Buffer.from([0x0f]), { 'Content-Type': PROTOBUF });
  assert.equal(agentBad.status, 400);
  assert.equal(agentBad.text, 'Failed to parse body into a protobuf object');
  const agentStreaming = await post(agentApi, encode(AGENT_CALL, { type: 'GET_HEALTH' }), { 'Content-Type': PROTOBUF, Accept: 'application/recordio' });
  assert.equal(agentStreaming.status, 406);
  assert.equal(agentStreaming.text, 'Streaming response is not supported for GET_HEALTH call');
});

const SCHEDULER_CALL = 'mesos.v1.scheduler.Call';
const SCHEDULER_EVENT = 'mesos.v1.scheduler.Event';

interface PbOffer { id: { value: string }; agent_id: { value: string } }
interface PbStatus { task_id: { value: string }; agent_id?: { value: string }; state: string; uuid?: string }

test('a scheduler that speaks protobuf only launches a task to TASK_FINISHED; the operator stream in protobuf sees it', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'pb-agent', resources: 'cpus:1;mem:256', stopSignal: 'SIGUSR1' });

  // The operator stream, in protobuf.
  const operator = await RawStream.open({ host: m.ip, port: m.port, method: 'POST', path: '/api/v1', headers: { 'Content-Type': PROTOBUF, Accept: PROTOBUF }, body: encode(MASTER_CALL, { type: 'SUBSCRIBE' }) });
  t.after(() => operator.close());
  assert.equal(operator.status, 200);
  assert.equal(operator.header('content-type'), PROTOBUF);
  const opEvents = new ProtobufRecords('mesos.v1.master.Event');
  const opRecords = async (pred: (e: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> => {
    let seen = 0;
    return eventually(() => {
      for (const c of operator.chunks.slice(seen)) opEvents.push(c);
      seen = operator.chunks.length;
      return opEvents.records.find(pred);
    }, 20_000, 50, what);
  };
  const subscribed = await opRecords((e) => e['type'] === 'SUBSCRIBED', 'operator SUBSCRIBED');
  assert.equal((subscribed['subscribed'] as { get_state: { get_agents: { agents: unknown[] } } }).get_state.get_agents.agents.length, 1);

  // The scheduler: SUBSCRIBE in protobuf, events in protobuf.
  const stream = await RawStream.open({
    host: m.ip,
    port: m.port,
    method: 'POST',
    path: '/api/v1/scheduler',
    headers: { 'Content-Type': PROTOBUF, Accept: PROTOBUF },
    body: encode(SCHEDULER_CALL, { type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'root', name: 'protobuf-only', checkpoint: false } } }),
  });
  t.after(() => stream.close());
  assert.equal(stream.status, 200);
  assert.equal(stream.header('content-type'), PROTOBUF);
  const streamId = stream.header('mesos-stream-id') as string;
  const events = new ProtobufRecords(SCHEDULER_EVENT);
  let seen = 0;
  const next = (pred: (e: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> =>
    eventually(() => {
      for (const c of stream.chunks.slice(seen)) events.push(c);
      seen = stream.chunks.length;
      return events.records.find(pred);
    }, 20_000, 50, what);
  const sub = await next((e) => e['type'] === 'SUBSCRIBED', 'SUBSCRIBED');
  const frameworkId = (sub['subscribed'] as { framework_id: { value: string } }).framework_id;
  const offers = await next((e) => e['type'] === 'OFFERS', 'OFFERS');
  const offer = (offers['offers'] as { offers: PbOffer[] }).offers[0] as PbOffer;
  const call = (body: Record<string, unknown>) => post(`${m.url}/api/v1/scheduler`, encode(SCHEDULER_CALL, { framework_id: frameworkId, ...body }), { 'Content-Type': PROTOBUF, 'Mesos-Stream-Id': streamId });

  const taskId = { value: 'pb-task' };
  const accepted = await call({
    type: 'ACCEPT',
    accept: {
      offer_ids: [offer.id],
      operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: 'pb', task_id: taskId, agent_id: offer.agent_id, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 32 } }], command: { value: 'echo launched over protobuf' } }] } }],
    },
  });
  assert.equal(accepted.status, 202, accepted.text);

  // Every update acknowledged, in protobuf (the uuid is bytes), until the task is finished.
  const acked = new Set<string>();
  const finished = await eventually(async () => {
    for (const c of stream.chunks.slice(seen)) events.push(c);
    seen = stream.chunks.length;
    for (const e of events.records) {
      if (e['type'] !== 'UPDATE') continue;
      const status = (e['update'] as { status: PbStatus }).status;
      if (status.uuid !== undefined && !acked.has(status.uuid)) {
        acked.add(status.uuid);
        const ack = await call({ type: 'ACKNOWLEDGE', acknowledge: { agent_id: status.agent_id, task_id: status.task_id, uuid: status.uuid } });
        assert.equal(ack.status, 202, ack.text);
      }
      if (status.state === 'TASK_FINISHED') return status;
    }
    return undefined;
  }, 30_000, 50, 'TASK_FINISHED');
  assert.equal(finished.task_id.value, 'pb-task');
  const states = events.records.filter((e) => e['type'] === 'UPDATE').map((e) => (e['update'] as { status: PbStatus }).status.state);
  assert.ok(states.includes('TASK_RUNNING'), states.join(','));

  // The operator stream saw the task added and finished, in protobuf.
  await opRecords((e) => e['type'] === 'TASK_ADDED' && (e['task_added'] as { task: { task_id: { value: string } } }).task.task_id.value === 'pb-task', 'TASK_ADDED');
  await opRecords((e) => e['type'] === 'TASK_UPDATED' && (e['task_updated'] as { state: string }).state === 'TASK_FINISHED', 'TASK_UPDATED TASK_FINISHED');

  // A scheduler call's Accept is not read (as Mesos): TEARDOWN with an Accept that allows nothing still goes through.
  const teardown = await post(`${m.url}/api/v1/scheduler`, encode(SCHEDULER_CALL, { framework_id: frameworkId, type: 'TEARDOWN' }), { 'Content-Type': PROTOBUF, Accept: 'text/html', 'Mesos-Stream-Id': streamId });
  assert.equal(teardown.status, 202, teardown.text);
  // SUBSCRIBE's is: neither encoding allowed, 406.
  const refused = await post(`${m.url}/api/v1/scheduler`, encode(SCHEDULER_CALL, { type: 'SUBSCRIBE', subscribe: { framework_info: { user: 'root', name: 'x' } } }), { 'Content-Type': PROTOBUF, Accept: 'text/html' });
  assert.equal(refused.status, 406);
  assert.equal(refused.text, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'");
  const badBody = await post(`${m.url}/api/v1/scheduler`, Buffer.from([0x0f]), { 'Content-Type': PROTOBUF });
  assert.equal(badBody.status, 400);
  assert.equal(badBody.text, 'Failed to parse body into Call protobuf');
});

/**
 * Mesos messages read from JSON as stout reads them (shared/proto.ts): a request from a client
 * generated from Mesos' .proto files (every unset field null, integers as strings, unknown and
 * camelCase keys) decodes to exactly what the clean request decodes to.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWireJson } from '../../shared/json.js';
import { decodeMessage, FRAMEWORK_INFO, SCHEDULER_CALL, TASK_INFO, AGENT_CALL, DRAIN_AGENT_CALL } from '../../shared/proto.js';

function decode(type: Parameters<typeof decodeMessage>[0], text: string, path = ''): ReturnType<typeof decodeMessage> {
  return decodeMessage(type, parseWireJson(text), path);
}

const cleanTask = {
  name: 't', task_id: { value: 't1' }, agent_id: { value: 'a1' },
  resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }, { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31001 }] } }],
  command: { value: 'sleep 30', shell: true },
  kill_policy: { grace_period: { nanoseconds: 2000000000 } },
};
const protobufTask = {
  name: 't', taskId: { value: 'bogus' }, task_id: { value: 't1' }, agent_id: { value: 'a1' },
  resources: [
    { name: 'cpus', type: 'SCALAR', scalar: { value: '0.1' }, ranges: null, set: null, role: null, reservations: [], providerId: null },
    { name: 'ports', type: 'RANGES', scalar: null, ranges: { range: [{ begin: '31000', end: '31001' }] }, set: null, role: null, reservations: [] },
  ],
  executor: null, container: null, health_check: null, check: null, data: null, labels: null, discovery: null, max_completion_time: null, limits: null,
  command: { value: 'sleep 30', shell: 'true', uris: [], environment: null, arguments: [], user: null },
  kill_policy: { grace_period: { nanoseconds: '2000000000' } },
  some_future_field: { x: 1 },
};

test('a protobuf-style TaskInfo decodes to the clean one (reservations and empty arrays aside)', () => {
  const clean = decode(TASK_INFO, JSON.stringify(cleanTask));
  const pb = decode(TASK_INFO, JSON.stringify(protobufTask));
  assert.ok(clean.ok && pb.ok);
  if (!clean.ok || !pb.ok) return;
  const v = pb.value as Record<string, unknown> & { resources: Array<Record<string, unknown>>; command: Record<string, unknown> };
  // Arrays the client sent empty stay (a repeated field is an array exactly when sent).
  assert.deepEqual(v.resources.map((r) => r['reservations']), [[], []]);
  for (const r of v.resources) delete r['reservations'];
  delete v.command['uris'];
  delete v.command['arguments'];
  assert.deepEqual(v, clean.value);
  assert.equal(JSON.stringify(v).includes('null'), false);
  assert.equal('taskId' in v || 'some_future_field' in v, false);
});

test('FrameworkInfo: nulls gone, bool and double strings read, unknown capability names dropped', () => {
  const r = decode(FRAMEWORK_INFO, '{"user":"u","name":"n","id":null,"failover_timeout":"3600","checkpoint":"true","role":null,"roles":["*"],"capabilities":[{"type":"PARTITION_AWARE"},{"type":"NOT_A_CAPABILITY"}],"labels":null,"webuiUrl":"x"}');
  assert.deepEqual(r, { ok: true, value: { user: 'u', name: 'n', failover_timeout: 3600, checkpoint: true, roles: ['*'], capabilities: [{ type: 'PARTITION_AWARE' }, {}] } });
});

test('conversion errors: stout wording where Mesos has one, the field named where Drydock adds a bound', () => {
  const cases: Array<[string, Parameters<typeof decodeMessage>[0], string, string, string]> = [
    ['checkpoint as a number', FRAMEWORK_INFO, '{"user":"u","name":"n","checkpoint":9223372036854775808}', '', "Not expecting a JSON number for field 'checkpoint'"],
    ['missing required', FRAMEWORK_INFO, '{"name":"n"}', 'subscribe.framework_info', 'Missing required fields: subscribe.framework_info.user'],
    ['task_infos false', SCHEDULER_CALL, '{"type":"ACCEPT","accept":{"operations":[{"type":"LAUNCH","launch":{"task_infos":false}}]}}', '', "Not expecting a JSON boolean for field 'task_infos'"],
    ['task_infos object', SCHEDULER_CALL, '{"type":"ACCEPT","accept":{"operations":[{"type":"LAUNCH","launch":{"task_infos":{}}}]}}', '', "Not expecting a JSON object for field 'task_infos'"],
    ['uint64 past 2^64', TASK_INFO, '{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"resources":[{"name":"p","type":"RANGES","ranges":{"range":[{"begin":18446744073709551616,"end":1}]}}]}', '', "Field 'resources[0].ranges.range[0].begin' is out of range for uint64"],
    ['int64 past int64 as a string', TASK_INFO, '{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"kill_policy":{"grace_period":{"nanoseconds":"-9223372036854775809"}}}', '', "Field 'kill_policy.grace_period.nanoseconds' is out of range for int64"],
    ['int64 1e308', TASK_INFO, '{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"kill_policy":{"grace_period":{"nanoseconds":1e308}}}', '', "Field 'kill_policy.grace_period.nanoseconds' is out of range for int64"],
    ['not an integer', TASK_INFO, '{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"kill_policy":{"grace_period":{"nanoseconds":1.5}}}', '', "Field 'kill_policy.grace_period.nanoseconds' must be an integer, got 1.5"],
    ['required enum unknown', TASK_INFO, '{"name":"t","task_id":{"value":"t"},"agent_id":{"value":"a"},"resources":[{"name":"c","type":"NOPE"}]}', '', "Failed to find enum for 'NOPE'"],
    ['agent id missing', DRAIN_AGENT_CALL, '{"max_grace_period":{"seconds":1}}', 'drain_agent', 'Missing required fields: drain_agent.agent_id'],
    ['agent id value a number', AGENT_CALL, '{"agent_id":{"value":5}}', 'deactivate_agent', "Not expecting a JSON number for field 'value'"],
    ['bytes not base64', SCHEDULER_CALL, '{"type":"ACKNOWLEDGE","acknowledge":{"agent_id":{"value":"a"},"task_id":{"value":"t"},"uuid":"not base64!"}}', '', "Field 'acknowledge.uuid' is not valid base64"],
    ['a string where a message goes', SCHEDULER_CALL, '{"type":"KILL","kill":"t1"}', '', "Not expecting a JSON string for field 'kill'"],
  ];
  for (const [name, type, text, path, want] of cases) assert.deepEqual(decode(type, text, path), { ok: false, error: want }, name);
});

test('a long or deep bad value is never repeated whole in the message', () => {
  const r = decode(SCHEDULER_CALL, JSON.stringify({ type: 'ACCEPT', accept: { operations: [{ type: 'LAUNCH', launch: { task_infos: [{ name: 'x'.repeat(100_000), task_id: 'y'.repeat(100_000) }] } }] } }));
  assert.ok(!r.ok && r.error.length < 200, r.ok ? 'decoded' : r.error);
});

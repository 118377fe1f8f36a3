import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decodeAgentMessage, decodeMasterMessage, encode, type AgentMessage } from '../../shared/protocol.js';

const register: AgentMessage = {
  type: 'REGISTER',
  request_id: 1,
  agent: { hostname: 'h', ip: '127.0.0.2', port: 5051, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }], attributes: [] },
  version: '0.1.0',
  capabilities: [],
  tasks: [],
  frameworks: [],
};

test('a valid REGISTER round-trips', () => {
  assert.deepEqual(decodeAgentMessage(encode(register)), { ok: true, message: register });
  assert.deepEqual(decodeAgentMessage(Buffer.from(encode(register))), { ok: true, message: register });
});

const BAD: Array<[string, unknown, boolean, RegExp]> = [
  ['not JSON', '{"type":', false, /frame is not JSON/],
  ['binary frame', Buffer.from('{}'), true, /binary frames/],
  ['unknown type', '{"type":"NOPE"}', false, /invalid message/],
  ['missing field', JSON.stringify({ ...register, agent: { ...register.agent, hostname: undefined } }), false, /at agent\.hostname/],
  ['bad port', JSON.stringify({ ...register, agent: { ...register.agent, port: 70000 } }), false, /at agent\.port/],
  ['status update without uuid', JSON.stringify({ type: 'STATUS_UPDATE', framework_id: 'f', status: { task_id: { value: 't' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1 } }), false, /uuid/],
  ['bad task state', JSON.stringify({ type: 'STATUS_UPDATE', framework_id: 'f', status: { task_id: { value: 't' }, state: 'TASK_BOGUS', source: 'SOURCE_EXECUTOR', timestamp: 1, uuid: 'u' } }), false, /state/],
];
for (const [name, frame, binary, want] of BAD) {
  test(`agent frame rejected: ${name}`, () => {
    const r = decodeAgentMessage(frame, binary);
    assert.equal(r.ok, false);
    if (!r.ok) assert.match(r.error, want);
  });
}

test('master frames decode and bad ones are rejected', () => {
  const ok = decodeMasterMessage('{"type":"KILL_TASK","framework_id":"f","task_id":"t","kill_policy":{"grace_period":{"nanoseconds":0}}}');
  assert.equal(ok.ok, true);
  const bad = decodeMasterMessage('{"type":"REGISTERED","request_id":1}');
  assert.equal(bad.ok, false);
  const drain = decodeMasterMessage('{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":1000000000},"mark_gone":false}}');
  assert.equal(drain.ok, true);
  const badDrain = decodeMasterMessage('{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":-1},"mark_gone":false}}');
  assert.equal(badDrain.ok, false);
});

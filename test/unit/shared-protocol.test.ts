import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringifyJson } from '../../shared/json.js';
import { caseRng, fuzzSeed, mutate, randomJson, serialize, type Json } from '../helpers/fuzz.js';
import { decodeAgentMessage, decodeMasterMessage, encode, MASTER_MESSAGE_TYPES, MASTER_MESSAGES, MAX_CONDITION_TEXT, messageDigest, type AgentMessage, type MasterMessage, type Refusal } from '../../shared/protocol.js';

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

test("the issue's drain decodes: 136 years of grace, exact, as a bigint", () => {
  const d = decodeMasterMessage('{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":4294967296000000000},"mark_gone":false},"epoch":"1"}');
  assert.ok(d.ok, d.ok ? '' : d.error);
  assert.deepEqual(d.message, { type: 'DRAIN', config: { max_grace_period: { nanoseconds: 4_294_967_296_000_000_000n }, mark_gone: false }, epoch: '1' });
  // And the master writes it so: bare digits, not a float's.
  assert.equal(encode({ type: 'DRAIN', config: { max_grace_period: { nanoseconds: 2n ** 63n - 1n }, mark_gone: true } }), '{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":9223372036854775807},"mark_gone":true}}');
});

// What a master frame the agent cannot act on does: garbled ones close the session, the rest are refused.
const GARBLED: Array<[string, unknown, boolean]> = [
  ['not JSON', '{"type":', false],
  ['binary', Buffer.from('{"type":"DRAIN"}'), true],
  ['a JSON array', '[{"type":"DRAIN"}]', false],
  ['a JSON string', '"DRAIN"', false],
  ['no type', '{"config":{}}', false],
  ['a type that is not a string', '{"type":7}', false],
  ['nested too deep', `{"type":"DRAIN","config":${'['.repeat(100)}${']'.repeat(100)}}`, false],
];
for (const [name, frame, binary] of GARBLED) {
  test(`master frame garbled (closes the session): ${name}`, () => {
    const d = decodeMasterMessage(frame, binary);
    assert.equal(d.ok, false);
    if (!d.ok) assert.equal(d.refusal, undefined, d.error);
  });
}

const REFUSED: Array<[string, string, Refusal['type'], RegExp, string | undefined]> = [
  ['an unknown type (a newer master)', '{"type":"REBOOT","epoch":"3"}', '?', /unknown message type "REBOOT"/, undefined],
  ['RUN_TASK without a task', '{"type":"RUN_TASK","framework_id":"f","framework":{"user":"u","name":"n"}}', 'RUN_TASK', /Missing required fields: task/, undefined],
  ['RUN_TASK with a kill policy beyond 2^53', '{"type":"RUN_TASK","framework_id":"f","framework":{"user":"u","name":"n"},"task":{"name":"t","task_id":{"value":"web-1"},"agent_id":{"value":"a"},"resources":[],"kill_policy":{"grace_period":{"nanoseconds":9007199254740993}}}}', 'RUN_TASK', /task\.kill_policy\.grace_period\.nanoseconds' is beyond 2\^53/, 'web-1'],
  ['RUN_TASK without resources', '{"type":"RUN_TASK","framework_id":"f","framework":{"user":"u","name":"n"},"task":{"name":"t","task_id":{"value":"web-1"},"agent_id":{"value":"a"}}}', 'RUN_TASK', /task\.resources/, 'web-1'],
  ['KILL_TASK with an empty task id', '{"type":"KILL_TASK","framework_id":"f","task_id":""}', 'KILL_TASK', /task_id' must not be empty/, undefined],
  ['KILL_TASK with a grace that is not a number', '{"type":"KILL_TASK","framework_id":"f","task_id":"t9","kill_policy":{"grace_period":{"nanoseconds":"soon"}}}', 'KILL_TASK', /Failed to convert 'soon'/, 't9'],
  ['DRAIN with a negative grace', '{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":-1},"mark_gone":false}}', 'DRAIN', /must not be negative/, undefined],
  ['DRAIN beyond int64', '{"type":"DRAIN","config":{"max_grace_period":{"nanoseconds":9223372036854775808},"mark_gone":false}}', 'DRAIN', /out of range for int64/, undefined],
  ['DRAIN without mark_gone', '{"type":"DRAIN","config":{}}', 'DRAIN', /Missing required fields: config\.mark_gone/, undefined],
  ['ACKNOWLEDGE without uuid', '{"type":"ACKNOWLEDGE","framework_id":"f","task_id":"t"}', 'ACKNOWLEDGE', /uuid/, 't'],
  ['REGISTERED with no ping interval', '{"type":"REGISTERED","request_id":1,"agent_id":"a","master_id":"m","ping_interval_ms":0,"max_ping_timeouts":5}', 'REGISTERED', /ping_interval_ms/, undefined],
  ['a bad epoch', '{"type":"SHUTDOWN","message":"bye","epoch":"x1"}', 'SHUTDOWN', /epoch/, undefined],
];
for (const [name, frame, type, reason, id] of REFUSED) {
  test(`master frame refused (the session stays): ${name}`, () => {
    const d = decodeMasterMessage(frame);
    assert.equal(d.ok, false);
    if (d.ok) return;
    assert.ok(d.refusal !== undefined, `a refusal, not garbled: ${d.error}`);
    assert.equal(d.refusal.type, type);
    assert.match(d.refusal.reason, reason);
    assert.equal(d.refusal.id, id);
    assert.match(d.refusal.digest, /^[0-9a-f]{16}$/);
    // What the agent tells the master is itself a valid agent message.
    assert.equal(decodeAgentMessage(encode({ type: 'REFUSED', refused: d.refusal })).ok, true);
  });
}

test('a refusal names the message by a digest the master computes from what it sent (its epoch left out)', () => {
  const sent: MasterMessage = { type: 'DRAIN', config: { max_grace_period: { nanoseconds: 5n }, mark_gone: false } };
  // The master stamps its epoch onto the encoded message (master/agent-sessions.ts); the agent parses that.
  const frame = encode(sent).slice(0, -1) + ',"epoch":"12"}';
  const garbledCopy = frame.replace('"nanoseconds":5', '"nanoseconds":"five"');
  const d = decodeMasterMessage(garbledCopy);
  assert.ok(!d.ok && d.refusal !== undefined);
  assert.notEqual(d.refusal.digest, messageDigest(sent), 'another message, another digest');
  const other: MasterMessage = { type: 'DRAIN', config: { max_grace_period: { nanoseconds: 'five' as unknown as bigint }, mark_gone: false } };
  assert.equal(d.refusal.digest, messageDigest(other));
  assert.equal(messageDigest({ ...other, epoch: '99' }), messageDigest(other), 'the epoch is not part of it');
  // Exact digits: two graces that a double cannot tell apart have different digests.
  assert.notEqual(
    messageDigest({ type: 'DRAIN', config: { max_grace_period: { nanoseconds: 2n ** 53n }, mark_gone: false } }),
    messageDigest({ type: 'DRAIN', config: { max_grace_period: { nanoseconds: 2n ** 53n + 1n }, mark_gone: false } }),
  );
});

test('REFUSED from an agent: validated as any agent message', () => {
  const ok = decodeAgentMessage('{"type":"REFUSED","refused":{"type":"DRAIN","digest":"0123456789abcdef","reason":"r"}}');
  assert.equal(ok.ok, true);
  for (const bad of [
    '{"type":"REFUSED"}',
    '{"type":"REFUSED","refused":{"type":"REBOOT","digest":"d","reason":"r"}}',
    '{"type":"REFUSED","refused":{"type":"DRAIN","reason":"r"}}',
    '{"type":"REFUSED","refused":{"type":"DRAIN","digest":"d","reason":5}}',
  ]) assert.equal(decodeAgentMessage(bad).ok, false, bad);
});

test('CONDITIONS and REGISTER conditions: validated, unknown fields dropped, texts bounded; an agent without conditions sends none', () => {
  const pressure = { since_ms: 1_700_000_000_000, reason: 'NO_SPACE', message: 'no space left on device in /w', path: '/w', free_bytes: 0, total_bytes: 4_194_304, free_inodes: 10, total_inodes: 100 };
  const ok = decodeAgentMessage(JSON.stringify({ type: 'CONDITIONS', conditions: { disk_pressure: { ...pressure, extra: 'dropped' }, other: 1 } }));
  assert.deepEqual(ok, { ok: true, message: { type: 'CONDITIONS', conditions: { disk_pressure: pressure } } });
  assert.deepEqual(decodeAgentMessage('{"type":"CONDITIONS","conditions":{}}'), { ok: true, message: { type: 'CONDITIONS', conditions: {} } });
  const long = decodeAgentMessage(JSON.stringify({ type: 'CONDITIONS', conditions: { disk_pressure: { ...pressure, message: 'x'.repeat(5000) } } }));
  assert.ok(long.ok && long.message.type === 'CONDITIONS' && long.message.conditions.disk_pressure?.message.length === MAX_CONDITION_TEXT);
  const reg = decodeAgentMessage(encode({ ...register, conditions: { disk_pressure: pressure } } as AgentMessage));
  assert.ok(reg.ok && reg.message.type === 'REGISTER');
  if (reg.ok && reg.message.type === 'REGISTER') assert.deepEqual(reg.message.conditions, { disk_pressure: pressure });
  // An agent that predates conditions: none, and the decoded REGISTER has no such key.
  const old = decodeAgentMessage(encode(register));
  assert.ok(old.ok && !('conditions' in old.message));
  for (const bad of [
    '{"type":"CONDITIONS"}',
    JSON.stringify({ type: 'CONDITIONS', conditions: { disk_pressure: { ...pressure, reason: 'FULL' } } }),
    JSON.stringify({ type: 'CONDITIONS', conditions: { disk_pressure: { ...pressure, free_bytes: -1 } } }),
    JSON.stringify({ type: 'CONDITIONS', conditions: { disk_pressure: { ...pressure, message: 5 } } }),
    JSON.stringify({ ...register, conditions: { disk_pressure: { since_ms: 1 } } }),
  ]) assert.equal(decodeAgentMessage(bad).ok, false, bad);
});

test('every master message type has a description, and MASTER_MESSAGE_TYPES lists them in order', () => {
  assert.deepEqual(Object.keys(MASTER_MESSAGES), [...MASTER_MESSAGE_TYPES]);
});

test('the agent decoder never throws: mutated master messages and random JSON are decoded, refused or garbled (seeded)', () => {
  const seed = fuzzSeed(process.env);
  const templates: MasterMessage[] = [
    { type: 'REGISTERED', request_id: 1, agent_id: 'a', master_id: 'm', ping_interval_ms: 1000, max_ping_timeouts: 3, capabilities: ['REFUSED'] },
    { type: 'SHUTDOWN', message: 'bye' },
    { type: 'RUN_TASK', framework_id: 'f', framework: { user: 'u', name: 'n', id: { value: 'f' } }, task: { name: 't', task_id: { value: 't' }, agent_id: { value: 'a' }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 1 } }], command: { value: 'true' }, kill_policy: { grace_period: { nanoseconds: 1 } } } },
    { type: 'KILL_TASK', framework_id: 'f', task_id: 't', kill_policy: { grace_period: { nanoseconds: 5 } } },
    { type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 't', uuid: 'u' },
    { type: 'DRAIN', config: { max_grace_period: { nanoseconds: 2n ** 62n }, mark_gone: false } },
  ];
  const counts = { ok: 0, refused: 0, garbled: 0 };
  for (let i = 0; i < 3000; i++) {
    const rng = caseRng(seed, i);
    const frame = rng.chance(0.8)
      ? serialize(mutate(rng, JSON.parse(stringifyJson(rng.pick(templates))) as Json, [...MASTER_MESSAGE_TYPES, 'REFUSED', 'REBOOT']).body)
      : serialize(randomJson(rng));
    let d: ReturnType<typeof decodeMasterMessage>;
    try {
      d = decodeMasterMessage(frame);
    } catch (e) {
      assert.fail(`seed ${seed} case ${i}: threw ${(e as Error).message} on ${frame.slice(0, 300)}`);
    }
    if (d.ok) counts.ok++;
    else if (d.refusal !== undefined) {
      counts.refused++;
      assert.ok(d.refusal.reason.length <= 500, 'a bounded reason');
      assert.equal(decodeAgentMessage(encode({ type: 'REFUSED', refused: d.refusal })).ok, true, `seed ${seed} case ${i}: the REFUSED it sends is valid`);
    } else counts.garbled++;
  }
  assert.ok(counts.ok > 0 && counts.refused > 0 && counts.garbled > 0, JSON.stringify(counts));
});

/**
 * The protobuf-style polluter (test/helpers/protobuf-style.ts) that the integration table
 * relies on: if it quietly polluted less than a row says, rows would pass for nothing.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { camelCase, findPollution, pollute, UNKNOWN_KEYS } from '../helpers/protobuf-style.js';

const CLEAN = {
  type: 'ACCEPT',
  accept: {
    offer_ids: [{ value: 'o1' }],
    operations: [{ type: 'LAUNCH', launch: { task_infos: [{ task_id: { value: 'a' }, kill_policy: { grace_period: { nanoseconds: 1443830400000000001n } } }, { task_id: { value: 'b' } }] } }],
    filters: { refuse_seconds: 5 },
  },
};
const TASKS = 'accept.operations[].launch.task_infos[]';

test('camelCase', () => {
  for (const [snake, camel] of [['agent_id', 'agentId'], ['webui_url', 'webuiUrl'], ['type', 'type'], ['max_grace_period', 'maxGracePeriod']]) assert.equal(camelCase(snake as string), camel);
});

test('nulls and empties only where absent; numbers and bools as strings, int64s exact', () => {
  const { body } = pollute(
    { ...CLEAN, accept: { ...CLEAN.accept, operations: [{ ...CLEAN.accept.operations[0], launch: { task_infos: [{ ...CLEAN.accept.operations[0]!.launch.task_infos[0], command: { shell: false } }] } }] } },
    { nulls: [`${TASKS}.kill_policy`, `${TASKS}.executor`, 'decline'], empties: [`${TASKS}.resources`], numbers: [`${TASKS}.kill_policy.grace_period.nanoseconds`, 'accept.filters.refuse_seconds'], bools: [`${TASKS}.command.shell`] },
  );
  const b = body as { decline: unknown; accept: { filters: { refuse_seconds: unknown }; operations: Array<{ launch: { task_infos: Array<Record<string, unknown>> } }> } };
  const task = b.accept.operations[0]!.launch.task_infos[0]!;
  assert.equal(b.decline, null);
  assert.equal(task['executor'], null);
  assert.deepEqual(task['resources'], []);
  assert.equal((task['kill_policy'] as { grace_period: { nanoseconds: unknown } }).grace_period.nanoseconds, '1443830400000000001');
  assert.equal(b.accept.filters.refuse_seconds, '5');
  assert.equal((task['command'] as { shell: unknown }).shell, 'false');
});

test('camelCase copies (bogus, before the real key) and unknown keys at every level, array elements included', () => {
  const { body, keys } = pollute(CLEAN);
  const b = body as Record<string, unknown> & { accept: Record<string, unknown> & { offer_ids: Array<Record<string, unknown>> } };
  assert.deepEqual(Object.keys(b.accept).slice(0, 2), ['offerIds', 'offer_ids']);
  assert.deepEqual(b.accept['offerIds'], [{ value: 'BOGUS' }]);
  assert.deepEqual(b.accept['refuseSeconds'], undefined);
  assert.deepEqual((b.accept['filters'] as Record<string, unknown>)['refuseSeconds'], 424242);
  for (const o of [b, b.accept, b.accept.offer_ids[0]!]) for (const k of UNKNOWN_KEYS) assert.ok(k in o, `${k} missing`);
  for (const k of ['offerIds', 'taskInfos', 'killPolicy', 'gracePeriod', 'refuseSeconds', 'taskId', ...UNKNOWN_KEYS]) assert.ok(keys.has(k), k);
  assert.ok(!keys.has('type'));
  // The clean request is untouched.
  assert.deepEqual(Object.keys(CLEAN.accept), ['offer_ids', 'operations', 'filters']);
});

test('a path that reaches nothing is an error, not a row that tests less', () => {
  assert.throws(() => pollute(CLEAN, { nulls: ['acept.filters'] }), /reaches nothing/);
  assert.throws(() => pollute(CLEAN, { numbers: ['accept.filters.refuse_secs'] }), /reaches nothing/);
  assert.throws(() => pollute([{ hostname: 'h' }], { bools: ['[].hostname'] }), /reaches nothing/);
  assert.deepEqual(pollute([{ hostname: 'h' }], { nulls: ['[].ip'] }).body, [{ hostname: 'h', ip: null, drydock_unknown_field: { value: 'BOGUS', nested: [1, 'two', { deep: true }] }, unknownExtension: [{ deep: 'BOGUS' }] }]);
});

test('findPollution: every null and every sent key, with its path', () => {
  const keys = new Set(['agentId', 'drydock_unknown_field']);
  assert.deepEqual(findPollution({ a: [{ b: null }, 1], agentId: 'x', c: { drydock_unknown_field: {} }, d: 'ok' }, keys), [
    '$.a[0].b is null',
    '$.agentId (an ignored key that was sent)',
    '$.c.drydock_unknown_field (an ignored key that was sent)',
  ]);
  assert.deepEqual(findPollution({ agent_id: { value: 'a' }, list: [] }, keys), []);
});

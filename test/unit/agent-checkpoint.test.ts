import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHECKPOINT_FORMAT, Checkpoint, safePathComponent, type TaskRecord } from '../../agent/checkpoint.js';

function dir(t: { after(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'drydock-cp-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const self = { hostname: 'h1', ip: '10.0.0.1' };

function record(taskId: string): TaskRecord {
  return {
    format: CHECKPOINT_FORMAT,
    framework_id: 'fw/1',
    framework: { user: 'u', name: 'n' },
    task: { name: taskId, task_id: { value: taskId }, agent_id: { value: 'a' }, resources: [] },
    container_id: 'c',
    sandbox: '/tmp/s',
    launcher: { pid: 123, start_time: '456' },
    task_pid: 124,
    state: 'TASK_RUNNING',
    statuses: [],
    pending: [{ task_id: { value: taskId }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1.5, uuid: 'u1' }],
  };
}

test('checkpoint round-trip: agent id and tasks come back as written', (t) => {
  const cp = new Checkpoint(dir(t));
  assert.deepEqual(cp.load(self), { kind: 'fresh' });
  cp.writeAgent({ ...self, agent_id: 'agent-7' });
  cp.writeTask(record('t1'));
  cp.writeTask(record('../t2'));
  const loaded = cp.load(self);
  assert.equal(loaded.kind, 'recovered');
  if (loaded.kind !== 'recovered') return;
  assert.equal(loaded.agentId, 'agent-7');
  assert.deepEqual(loaded.tasks.map((x) => x.task.task_id.value).sort(), ['../t2', 't1']);
  assert.deepEqual(loaded.tasks.find((x) => x.task.task_id.value === 't1'), record('t1'));
  cp.removeTask('fw/1', 't1');
  const after = cp.load(self);
  assert.equal(after.kind === 'recovered' ? after.tasks.length : -1, 1);
});

test('ids are made filesystem-safe and stay distinct', () => {
  assert.equal(safePathComponent('abc-_1'), 'abc-_1');
  assert.equal(safePathComponent('..'), '%2E%2E');
  assert.equal(safePathComponent('a/b'), 'a%2Fb');
  assert.notEqual(safePathComponent('a/b'), safePathComponent('a%2Fb'));
  assert.equal(safePathComponent(''), '%');
});

test('corrupt checkpoints are reported with the file and the problem', (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['truncated agent', 'agent.json', '{"format":1,"host', /not valid JSON/],
    ['empty agent', 'agent.json', '', /empty file/],
    ['unknown format', 'agent.json', '{"format":99,"hostname":"h1","ip":"10.0.0.1"}', /unknown format version 99/],
    ['no identity', 'agent.json', '{"format":1}', /hostname or ip is missing/],
    ['truncated task', 'tasks/fw/t/task.json', '{"format":1,', /not valid JSON/],
    ['task without id', 'tasks/fw/t/task.json', '{"format":1,"framework_id":"fw"}', /task_id is missing/],
  ];
  for (const [name, file, content, problem] of cases) {
    const d = dir(t);
    const path = join(d, 'meta', file);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
    const cp = new Checkpoint(d);
    const loaded = cp.load(self);
    assert.equal(loaded.kind, 'corrupt', name);
    if (loaded.kind !== 'corrupt') continue;
    assert.equal(loaded.file, path, name);
    assert.match(loaded.problem, problem, name);
    const aside = cp.quarantine(42);
    assert.equal(aside, join(d, 'meta.corrupt-42'));
    assert.deepEqual(readdirSync(d), ['meta.corrupt-42']);
    assert.deepEqual(cp.load(self), { kind: 'fresh' });
  }
});

test('a checkpoint for another hostname or ip is foreign', (t) => {
  for (const other of [{ hostname: 'h2', ip: '10.0.0.1' }, { hostname: 'h1', ip: '10.0.0.2' }]) {
    const cp = new Checkpoint(dir(t));
    cp.writeAgent({ ...other, agent_id: 'x' });
    assert.deepEqual(cp.load(self), { kind: 'foreign', found: other });
  }
});

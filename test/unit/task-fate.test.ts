/**
 * Task fate, the pure core (master/task-fate.ts): agent event x framework -> updates, kills,
 * acknowledgements, tombstones; and reconciliation answers. Tables of cases, no sockets.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import type { Task, TaskState } from '../../shared/mesos.js';
import { onDisconnected, onGone, onLaunchRefused, onRegistered, onRemoved, onUnreachable, reconcileAnswer, tombstoneKey, type FateFramework, type FrameworkLookup } from '../../master/cores/task-fate.js';

function task(id: string, state: TaskState, framework = 'cp', uuid?: string): Task {
  const t: Task = { name: id, task_id: { value: id }, framework_id: { value: framework }, agent_id: { value: 'A' }, state, resources: [], statuses: [] };
  if (uuid !== undefined) t.status_update_uuid = uuid;
  return t;
}

/** cp: checkpointing; plain: neither; pa: partition-aware; gone: removed. */
const FRAMEWORKS: Record<string, FateFramework> = {
  cp: { checkpoint: true, partitionAware: false, removed: false },
  plain: { checkpoint: false, partitionAware: false, removed: false },
  pa: { checkpoint: true, partitionAware: true, removed: false },
  gone: { checkpoint: false, partitionAware: false, removed: true },
};
const lookup: FrameworkLookup = (id) => FRAMEWORKS[id];

/** An update as `state/reason/completes`, for compact tables. */
const brief = (f: { updates: Array<{ taskId: string; state: string; reason: string; completes: boolean }> }): string[] => f.updates.map((u) => `${u.taskId} ${u.state} ${u.reason}${u.completes ? ' completes' : ''}`);

describe('an agent event x a framework -> what the master does', () => {
  const cases: Array<{ name: string; run: () => ReturnType<typeof onDisconnected>; updates: string[]; kills?: string[]; tombstones?: number; forget?: string[]; complete?: string[]; acks?: string[] }> = [
    {
      name: 'disconnected: only tasks of frameworks that do not checkpoint are lost, and tombstoned',
      run: () => onDisconnected('A', [task('a', 'TASK_RUNNING', 'cp'), task('b', 'TASK_RUNNING', 'plain'), task('c', 'TASK_FINISHED', 'plain'), task('d', 'TASK_RUNNING', 'unknown-fw')], lookup),
      updates: ['b TASK_LOST REASON_AGENT_DISCONNECTED completes', 'd TASK_LOST REASON_AGENT_DISCONNECTED completes'],
      tombstones: 2,
    },
    {
      name: 'unreachable: partition-aware hear TASK_UNREACHABLE, the others TASK_LOST; the tasks stay',
      run: () => onUnreachable('A', [task('a', 'TASK_RUNNING', 'pa'), task('b', 'TASK_RUNNING', 'plain'), task('c', 'TASK_KILLED', 'pa')], lookup),
      updates: ['a TASK_UNREACHABLE REASON_AGENT_REMOVED', 'b TASK_LOST REASON_AGENT_REMOVED'],
    },
    {
      name: 'removed (machine DOWN): every live task is lost, whatever the framework',
      run: () => onRemoved('A', [task('a', 'TASK_RUNNING', 'pa'), task('b', 'TASK_STAGING', 'cp'), task('c', 'TASK_FAILED', 'cp')], "Agent h removed: Operator initiated 'Machine DOWN'"),
      updates: ['a TASK_LOST REASON_AGENT_REMOVED completes', 'b TASK_LOST REASON_AGENT_REMOVED completes'],
    },
    {
      name: 'gone: partition-aware hear TASK_GONE_BY_OPERATOR, the others TASK_LOST; ended tasks are forgotten into completed',
      run: () => onGone('A', [task('a', 'TASK_RUNNING', 'pa'), task('b', 'TASK_RUNNING', 'plain'), task('c', 'TASK_FINISHED', 'plain', 'u')], lookup),
      updates: ['a TASK_GONE_BY_OPERATOR REASON_AGENT_REMOVED_BY_OPERATOR completes', 'b TASK_LOST REASON_AGENT_REMOVED completes'],
      complete: ['c'],
    },
    {
      name: 'a launch refused by the agent: the task, still STAGING there, ends TASK_ERROR with the reason, tombstoned; nothing else moves',
      run: () => onLaunchRefused('A', [task('t', 'TASK_STAGING', 'cp'), task('t', 'TASK_RUNNING', 'pa'), task('u', 'TASK_STAGING', 'cp')], 't', 'Missing required fields: task.resources'),
      updates: ['t TASK_ERROR REASON_TASK_INVALID completes'],
      tombstones: 1,
    },
    {
      name: 'a launch refused for a task that already moved on: nothing',
      run: () => onLaunchRefused('A', [task('t', 'TASK_RUNNING', 'cp'), task('t', 'TASK_FINISHED', 'plain')], 't', 'r'),
      updates: [],
    },
    {
      name: 'registered: known tasks it no longer has are lost (not STAGING, not ended); removed frameworks\' tasks are killed',
      run: () =>
        onRegistered(
          'A',
          [task('kept', 'TASK_RUNNING'), task('vanished', 'TASK_RUNNING'), task('staging', 'TASK_STAGING'), task('done', 'TASK_FINISHED')],
          [task('kept', 'TASK_RUNNING'), task('orphan', 'TASK_RUNNING', 'gone'), task('orphan-done', 'TASK_FINISHED', 'gone')],
          new Set(),
          lookup,
        ),
      updates: ['vanished TASK_LOST REASON_AGENT_RESTARTED completes'],
      kills: ['orphan'],
    },
    {
      name: 'registered: tombstoned tasks come back only to be killed, or their ended update acknowledged',
      run: () =>
        onRegistered(
          'A',
          [],
          [task('lost-but-running', 'TASK_RUNNING', 'plain'), task('lost-and-ended', 'TASK_KILLED', 'plain', 'uuid-1'), task('fine', 'TASK_RUNNING', 'cp')],
          new Set([tombstoneKey('A', 'plain', 'lost-but-running'), tombstoneKey('A', 'plain', 'lost-and-ended')]),
          lookup,
        ),
      updates: [],
      kills: ['lost-but-running'],
      forget: ['lost-but-running', 'lost-and-ended'],
      acks: ['lost-and-ended uuid-1'],
    },
  ];
  for (const c of cases) {
    test(c.name, () => {
      const f = c.run();
      assert.deepEqual(brief(f), c.updates);
      assert.deepEqual(f.kills.map((k) => k.taskId), c.kills ?? []);
      assert.equal(f.tombstones.length, c.tombstones ?? 0);
      assert.deepEqual(f.forget.map((k) => k.taskId), c.forget ?? []);
      assert.deepEqual(f.complete.map((k) => k.taskId), c.complete ?? []);
      assert.deepEqual(f.acks.map((a) => `${a.taskId} ${a.uuid}`), c.acks ?? []);
      for (const u of f.updates) assert.equal(u.agentId, 'A');
    });
  }
});

describe('reconciliation answers', () => {
  const running = task('t', 'TASK_RUNNING');
  const cases: Array<[string, Parameters<typeof reconcileAnswer>[2], boolean, string | undefined]> = [
    ['known task: its latest state', { kind: 'KNOWN', agentId: 'A', task: running, agentUnreachable: false }, false, 'TASK_RUNNING Reconciliation: Latest task state'],
    ['known task on an unreachable agent, partition-aware', { kind: 'KNOWN', agentId: 'A', task: running, agentUnreachable: true }, true, 'TASK_UNREACHABLE Reconciliation: Task is unreachable'],
    ['known task on an unreachable agent, not partition-aware', { kind: 'KNOWN', agentId: 'A', task: running, agentUnreachable: true }, false, 'TASK_LOST Reconciliation: Task is unreachable'],
    ['an ended task on an unreachable agent keeps its state', { kind: 'KNOWN', agentId: 'A', task: task('t', 'TASK_FINISHED'), agentUnreachable: true }, true, 'TASK_FINISHED Reconciliation: Latest task state'],
    ['unknown task, named agent recovered: no answer until it is back', { kind: 'UNKNOWN', agentId: 'A', agent: 'RECOVERED' }, true, undefined],
    ['unknown task, named agent unreachable', { kind: 'UNKNOWN', agentId: 'A', agent: 'UNREACHABLE' }, true, 'TASK_UNREACHABLE Reconciliation: Task is unreachable'],
    ['unknown task, partition-aware', { kind: 'UNKNOWN', agentId: undefined, agent: undefined }, true, 'TASK_UNKNOWN Reconciliation: Task is unknown'],
    ['unknown task, not partition-aware', { kind: 'UNKNOWN', agentId: 'A', agent: 'OTHER' }, false, 'TASK_LOST Reconciliation: Task is unknown'],
  ];
  for (const [name, finding, pa, want] of cases) {
    test(name, () => {
      const u = reconcileAnswer('f', 't', finding, pa);
      assert.equal(u === undefined ? undefined : `${u.state} ${u.message}`, want);
      if (u !== undefined) {
        assert.equal(u.reason, 'REASON_RECONCILIATION');
        assert.equal(u.completes, false, 'a reconciliation never ends a task');
      }
    });
  }
});

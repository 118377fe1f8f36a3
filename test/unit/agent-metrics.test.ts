/**
 * The agent's metrics cores (agent/metrics.ts): the summary of the agent's model (tasks by
 * state, running executors, resources in use, updates awaiting acknowledgement) and Mesos'
 * `slave/*` snapshot keys computed from it; the checkpoint's timing port. The scheduler's
 * summary (scheduler/metrics.ts): steps by plan and status, zero-filled.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { agentSnapshot, summarizeAgent, type AgentFacts, type AgentProcessFacts, type AgentSummary } from '../../agent/metrics.js';
import { Checkpoint } from '../../agent/checkpoint.js';
import type { SupervisedFacts } from '../../agent/supervisor.js';
import { summarizeScheduler } from '../../scheduler/metrics.js';
import type { Resource, TaskState } from '../../shared/mesos.js';

const scalar = (name: string, value: number): Resource => ({ name, type: 'SCALAR', scalar: { value } });
const AGENT_RESOURCES = [scalar('cpus', 4), scalar('mem', 2048), scalar('disk', 10_000)];

function task(state: TaskState, o: Partial<SupervisedFacts> = {}): SupervisedFacts {
  return { state, resources: [scalar('cpus', 0.1), scalar('mem', 32), scalar('disk', 10)], live: state !== 'TASK_FINISHED' && state !== 'TASK_FAILED' && state !== 'TASK_KILLED', pendingUpdates: 0, ...o };
}
const facts = (o: Partial<AgentFacts>): AgentFacts => ({ tasks: [], resources: AGENT_RESOURCES, registered: true, ...o });

const PROCESS: AgentProcessFacts = {
  uptimeSecs: 12.5,
  terminalTasks: {},
  statusUpdates: 0,
  launches: 0,
  launchFailures: 0,
  kills: 0,
  killEscalations: 0,
  registrations: 1,
  disconnections: 0,
  refusedMessages: 0,
  system: { cpus: 8, load: [0.5, 0.25, 0.125], memTotalBytes: 16e9, memFreeBytes: 8e9 },
};

test('summarizeAgent: a table of models', () => {
  type Case = { name: string; facts: AgentFacts; check: (s: AgentSummary) => void };
  const cases: Case[] = [
    {
      name: 'no tasks, not registered',
      facts: facts({ registered: false }),
      check: (s) => {
        assert.equal(s.registered, false);
        assert.equal(s.executorsRunning, 0);
        assert.equal(s.pendingUpdates, 0);
        assert.equal(s.tasks.TASK_RUNNING, 0);
        assert.deepEqual(s.resources.cpus, { total: 4, used: 0 });
        assert.deepEqual(s.resources.gpus, { total: 0, used: 0 });
      },
    },
    {
      name: 'tasks in several states: terminal ones hold no resources and have no process',
      facts: facts({
        tasks: [
          task('TASK_STAGING'),
          task('TASK_STARTING'),
          task('TASK_RUNNING'),
          task('TASK_RUNNING'),
          task('TASK_KILLING', { pendingUpdates: 1 }),
          task('TASK_FINISHED', { pendingUpdates: 2 }),
          task('TASK_KILLED', { pendingUpdates: 1 }),
        ],
      }),
      check: (s) => {
        assert.equal(s.tasks.TASK_STAGING, 1);
        assert.equal(s.tasks.TASK_STARTING, 1);
        assert.equal(s.tasks.TASK_RUNNING, 2);
        assert.equal(s.tasks.TASK_KILLING, 1);
        assert.equal(s.tasks.TASK_FINISHED, 1);
        assert.equal(s.tasks.TASK_KILLED, 1);
        assert.equal(s.tasks.TASK_LOST, 0);
        assert.equal(s.executorsRunning, 5);
        assert.equal(s.pendingUpdates, 4);
        // 5 live tasks × 0.1 cpus: rounded, not 0.5000000000000001.
        assert.deepEqual(s.resources.cpus, { total: 4, used: 0.5 });
        assert.deepEqual(s.resources.mem, { total: 2048, used: 160 });
        assert.deepEqual(s.resources.disk, { total: 10_000, used: 50 });
      },
    },
    {
      name: 'disk pressure and the watched filesystems; none known: no pressure, no figures',
      facts: facts({ disk: { pressure: true, readings: [{ dir: 'work_dir', freeBytes: 0, freeInodes: 12 }, { dir: 'sandboxes', freeBytes: 5, freeInodes: 7 }] } }),
      check: (s) => {
        assert.equal(s.diskPressure, true);
        assert.deepEqual(s.disks.map((d) => [d.dir, d.freeBytes, d.freeInodes]), [['work_dir', 0, 12], ['sandboxes', 5, 7]]);
        assert.equal(summarizeAgent(facts({})).diskPressure, false);
        assert.deepEqual(summarizeAgent(facts({})).disks, []);
        assert.equal(agentSnapshot(s, PROCESS)['drydock/disk_pressure'], 1);
        assert.equal(agentSnapshot(summarizeAgent(facts({})), PROCESS)['drydock/disk_pressure'], 0);
      },
    },
    {
      name: 'a task refused while draining: terminal, never had a process',
      facts: facts({ tasks: [task('TASK_LOST', { live: false, pendingUpdates: 1 })] }),
      check: (s) => {
        assert.equal(s.tasks.TASK_LOST, 1);
        assert.equal(s.executorsRunning, 0);
        assert.equal(s.resources.cpus.used, 0);
        assert.equal(s.pendingUpdates, 1);
      },
    },
  ];
  for (const c of cases) {
    try {
      c.check(summarizeAgent(c.facts));
    } catch (e) {
      (e as Error).message = `${c.name}: ${(e as Error).message}`;
      throw e;
    }
  }
});

/** Every key the brief and Mesos' docs/monitoring.md name for an agent. */
const MESOS_AGENT_KEYS = [
  'slave/uptime_secs', 'slave/registered',
  'slave/tasks_staging', 'slave/tasks_starting', 'slave/tasks_running', 'slave/tasks_killing',
  'slave/tasks_finished', 'slave/tasks_failed', 'slave/tasks_killed', 'slave/tasks_lost', 'slave/tasks_gone',
  'slave/executors_running',
  'slave/cpus_total', 'slave/cpus_used', 'slave/cpus_percent',
  'slave/mem_total', 'slave/mem_used', 'slave/mem_percent',
  'slave/disk_total', 'slave/disk_used', 'slave/disk_percent',
  'slave/valid_status_updates', 'slave/invalid_status_updates',
  'system/cpus_total', 'system/load_1min', 'system/load_5min', 'system/load_15min', 'system/mem_total_bytes', 'system/mem_free_bytes',
];

test('agentSnapshot: Mesos keys, numbers only', () => {
  const v = agentSnapshot(summarizeAgent(facts({})), PROCESS);
  for (const k of MESOS_AGENT_KEYS) assert.equal(typeof v[k], 'number', `${k} is missing or not a number`);
  for (const [k, x] of Object.entries(v)) assert.ok(Number.isFinite(x), `${k} = ${x}`);
});

test('agentSnapshot: a table of cases', () => {
  type Case = { name: string; facts: AgentFacts; process?: Partial<AgentProcessFacts>; want: Record<string, number> };
  const cases: Case[] = [
    {
      name: 'idle, registered',
      facts: facts({}),
      want: {
        'slave/registered': 1, 'slave/uptime_secs': 12.5, 'slave/tasks_running': 0, 'slave/executors_running': 0,
        'slave/cpus_total': 4, 'slave/cpus_used': 0, 'slave/cpus_percent': 0, 'slave/mem_total': 2048,
        'system/cpus_total': 8, 'system/load_1min': 0.5, 'system/load_5min': 0.25, 'system/load_15min': 0.125,
        'system/mem_total_bytes': 16e9, 'system/mem_free_bytes': 8e9, 'slave/invalid_status_updates': 0,
      },
    },
    {
      name: 'not registered',
      facts: facts({ registered: false }),
      want: { 'slave/registered': 0 },
    },
    {
      name: 'gauges from the model, counters from the process; percent is a fraction',
      facts: facts({ tasks: [task('TASK_RUNNING'), task('TASK_RUNNING'), task('TASK_KILLING'), task('TASK_STAGING')] }),
      process: {
        terminalTasks: { TASK_FINISHED: 3, TASK_FAILED: 1, TASK_KILLED: 2, TASK_LOST: 1, TASK_GONE: 1, TASK_GONE_BY_OPERATOR: 2, TASK_ERROR: 4 },
        statusUpdates: 17, launches: 9, launchFailures: 4, kills: 3, killEscalations: 1, refusedMessages: 2,
      },
      want: {
        'slave/tasks_running': 2, 'slave/tasks_killing': 1, 'slave/tasks_staging': 1, 'slave/tasks_starting': 0,
        'slave/tasks_finished': 3, 'slave/tasks_failed': 1, 'slave/tasks_killed': 2, 'slave/tasks_lost': 1,
        // Gone by the operator (a drain with mark_gone) is gone: Mesos' agent has no key of its own for it.
        'slave/tasks_gone': 3,
        'slave/executors_running': 4, 'slave/valid_status_updates': 17,
        'slave/cpus_used': 0.4, 'slave/cpus_percent': 0.1, 'slave/mem_used': 128, 'slave/mem_percent': 128 / 2048,
        'drydock/task_launches': 9, 'drydock/task_launch_failures': 4, 'drydock/task_kills': 3, 'drydock/task_kill_escalations': 1,
        'drydock/master_messages_refused': 2,
      },
    },
    {
      name: 'no resources offered: percentages are 0, not NaN',
      facts: facts({ resources: [] }),
      want: { 'slave/cpus_total': 0, 'slave/cpus_percent': 0, 'slave/mem_percent': 0, 'slave/disk_percent': 0 },
    },
    {
      name: 'updates awaiting acknowledgement',
      facts: facts({ tasks: [task('TASK_FINISHED', { pendingUpdates: 3 }), task('TASK_RUNNING', { pendingUpdates: 1 })] }),
      want: { 'drydock/status_updates_pending': 4, 'slave/tasks_running': 1, 'slave/executors_running': 1 },
    },
  ];
  for (const c of cases) {
    const v = agentSnapshot(summarizeAgent(c.facts), { ...PROCESS, ...c.process });
    for (const [k, want] of Object.entries(c.want)) assert.equal(v[k], want, `${c.name}: ${k}`);
  }
});

test('Checkpoint: every group commit is timed, and a failed one says so', () => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-cp-metrics-'));
  try {
    const seen: Array<{ ms: number; ok: boolean }> = [];
    let t = 100;
    const errors: string[] = [];
    // Commits only when told (flush), so the test sees each one.
    const cp = new Checkpoint(dir, { instruments: { now: () => (t += 2), onWrite: (ms, ok) => seen.push({ ms, ok }) }, onError: (e) => errors.push(e.message), schedule: () => {} });
    cp.writeAgent({ hostname: 'h', ip: '127.0.0.1' });
    cp.writeDrain({ config: { mark_gone: false }, received_ms: 1 });
    assert.equal(seen.length, 0, 'nothing is written before the commit');
    assert.equal(cp.flush(), true);
    assert.deepEqual(seen, [{ ms: 2, ok: true }], 'two changes, one commit');
    // The journal's name taken by a directory: the next rewrite (a compaction) cannot replace it.
    cp.writeDrain({ config: { mark_gone: false }, received_ms: 2 });
    assert.equal(cp.flush(), true);
    assert.equal(seen.length, 2);
    rmSync(join(dir, 'meta', 'journal'));
    mkdirSync(join(dir, 'meta', 'journal.tmp'));
    const fresh = new Checkpoint(dir, { instruments: { now: () => (t += 2), onWrite: (ms, ok) => seen.push({ ms, ok }) }, onError: (e) => errors.push(e.message), schedule: () => {} });
    fresh.writeAgent({ hostname: 'h', ip: '127.0.0.1' });
    let ran = false;
    fresh.afterCommit(() => (ran = true));
    assert.equal(fresh.flush(), false);
    assert.deepEqual(seen[2], { ms: 2, ok: false });
    assert.equal(ran, false, 'what waits for a failed commit does not run');
    assert.equal(errors.length, 1);
    rmSync(join(dir, 'meta', 'journal.tmp'), { recursive: true });
    assert.equal(fresh.flush(), true, 'the staged change is kept and committed on the next try');
    assert.equal(ran, true);
    fresh.close();
    cp.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('summarizeScheduler: steps by plan and status, zero-filled; tasks by state', () => {
  const s = summarizeScheduler({
    subscribed: true,
    plans: [
      { name: 'deploy', status: 'IN_PROGRESS', steps: ['COMPLETE', 'COMPLETE', 'STARTING', 'PENDING'] },
      { name: 'recovery', status: 'COMPLETE', steps: [] },
    ],
    tasks: ['TASK_RUNNING', 'TASK_RUNNING', 'TASK_STAGING', 'TASK_FINISHED'],
    instances: [{ pod: 'hello', count: 3 }],
  });
  const steps = (plan: string, status: string): number | undefined => s.planSteps.find((x) => x.plan === plan && x.status === status)?.steps;
  assert.equal(steps('deploy', 'COMPLETE'), 2);
  assert.equal(steps('deploy', 'STARTING'), 1);
  assert.equal(steps('deploy', 'PENDING'), 1);
  assert.equal(steps('deploy', 'ERROR'), 0);
  assert.equal(steps('recovery', 'COMPLETE'), 0);
  assert.equal(s.planSteps.filter((x) => x.plan === 'deploy').length, 9);
  assert.deepEqual(s.planStatus, [{ plan: 'deploy', status: 'IN_PROGRESS' }, { plan: 'recovery', status: 'COMPLETE' }]);
  assert.equal(s.tasks.TASK_RUNNING, 2);
  assert.equal(s.tasks.TASK_STAGING, 1);
  assert.equal(s.tasks.TASK_KILLED, 0);
  assert.deepEqual(s.instances, [{ pod: 'hello', count: 3 }]);
  assert.equal(s.subscribed, true);
});

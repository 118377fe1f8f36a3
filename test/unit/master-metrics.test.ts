/**
 * The master's metrics cores (master/metrics.ts): the summary of a model's plain facts
 * (agents by one state each, Mesos' agent counts, drains, machines DOWN past their window,
 * resources) and the Mesos snapshot keys computed from it; the commit path's instrument port.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentMetricState, NO_FACTS, snapshotOf, summarize, timerStatistics, type AgentFacts, type MasterSummary, type ModelFacts, type ProcessFacts } from '../../master/process/metrics.js';
import { Commits } from '../../master/term/commit.js';
import { Logger } from '../../shared/log.js';
import type { Registry } from '../../master/registry/registry.js';
import type { Resource, TaskState } from '../../shared/mesos.js';

const NOW = 1_700_000_000_000;
const scalar = (name: string, value: number): Resource => ({ name, type: 'SCALAR', scalar: { value } });

function agent(o: Partial<AgentFacts> = {}): AgentFacts {
  return { id: 'a0', hostname: 'h0', phase: 'REGISTERED', connected: true, deactivated: false, drain: undefined, resources: [scalar('cpus', 4), scalar('mem', 1024)], tasks: [], ...o };
}
const task = (state: TaskState, cpus = 1): { state: TaskState; resources: Resource[] } => ({ state, resources: [scalar('cpus', cpus), scalar('mem', 128)] });
const facts = (o: Partial<ModelFacts>): ModelFacts => ({ ...NO_FACTS, ...o });

test('agentMetricState: one state per agent, the one needing an operator first', () => {
  const cases: Array<[string, Partial<AgentFacts>, string]> = [
    ['connected, active', {}, 'active'],
    ['deactivated', { deactivated: true }, 'deactivated'],
    ['draining (deactivated by the drain)', { deactivated: true, drain: { state: 'DRAINING', startedMs: NOW } }, 'draining'],
    ['drained', { deactivated: true, drain: { state: 'DRAINED', startedMs: NOW } }, 'drained'],
    ['draining but disconnected', { connected: false, drain: { state: 'DRAINING', startedMs: NOW } }, 'disconnected'],
    ['recovered, not re-registered', { phase: 'RECOVERED', connected: false }, 'disconnected'],
    ['unreachable, even while draining', { phase: 'UNREACHABLE', connected: false, drain: { state: 'DRAINING', startedMs: NOW } }, 'unreachable'],
  ];
  for (const [name, o, want] of cases) assert.equal(agentMetricState(agent(o)), want, name);
});

test('summarize: a table of models', () => {
  type Case = { name: string; facts: ModelFacts; check: (s: MasterSummary) => void };
  const cases: Case[] = [
    {
      name: 'nothing (a standby)',
      facts: NO_FACTS,
      check: (s) => {
        assert.deepEqual(s.agents, { active: 0, deactivated: 0, draining: 0, drained: 0, disconnected: 0, unreachable: 0, gone: 0 });
        assert.deepEqual(s.machines, { UP: 0, DRAINING: 0, DOWN: 0 });
        assert.equal(s.oldestDrainAgeSecs, 0);
        assert.equal(s.resources.cpus.total, 0);
      },
    },
    {
      name: 'agents in every state; Mesos counts only registered ones as connected/disconnected/active/inactive',
      facts: facts({
        agents: [
          agent(),
          agent({ deactivated: true }),
          agent({ deactivated: true, drain: { state: 'DRAINING', startedMs: NOW - 90_000 } }),
          agent({ deactivated: true, drain: { state: 'DRAINING', startedMs: NOW - 30_000 } }),
          agent({ deactivated: true, drain: { state: 'DRAINED', startedMs: NOW - 600_000 } }),
          agent({ connected: false }),
          agent({ phase: 'RECOVERED', connected: false }),
          agent({ phase: 'UNREACHABLE', connected: false }),
        ],
        goneAgents: 2,
      }),
      check: (s) => {
        assert.deepEqual(s.agents, { active: 1, deactivated: 1, draining: 2, drained: 1, disconnected: 2, unreachable: 1, gone: 2 });
        assert.deepEqual(s.mesosAgents, { active: 1, inactive: 5, connected: 5, disconnected: 1, unreachable: 1 });
        assert.equal(s.drainsInProgress, 2);
        // The oldest DRAINING one; the DRAINED one is no longer in progress.
        assert.equal(s.oldestDrainAgeSecs, 90);
        // Resources of the 6 registered agents only.
        assert.equal(s.resources.cpus.total, 24);
        assert.equal(s.resources.mem.total, 6144);
      },
    },
    {
      name: 'tasks by state; used resources are live tasks on registered agents',
      facts: facts({
        agents: [
          agent({ tasks: [task('TASK_RUNNING', 0.1), task('TASK_RUNNING', 0.2), task('TASK_STAGING'), task('TASK_FINISHED', 2)] }),
          agent({ phase: 'UNREACHABLE', connected: false, tasks: [task('TASK_UNREACHABLE')] }),
        ],
      }),
      check: (s) => {
        assert.equal(s.tasks.TASK_RUNNING, 2);
        assert.equal(s.tasks.TASK_STAGING, 1);
        assert.equal(s.tasks.TASK_FINISHED, 1);
        assert.equal(s.tasks.TASK_UNREACHABLE, 1);
        assert.equal(s.tasks.TASK_KILLED, 0);
        // 0.1 + 0.2 + 1, rounded (no 1.3000000000000003); the finished task frees its 2.
        assert.equal(s.resources.cpus.used, 1.3);
        assert.equal(s.resources.cpus.total, 4);
        assert.equal(s.resources.mem.used, 384);
      },
    },
    {
      name: 'machines by mode; DOWN past the window end is overdue, largest first; no end, never overdue',
      facts: facts({
        machines: [
          { name: 'a', mode: 'UP', windowEndMs: undefined },
          { name: 'b', mode: 'DRAINING', windowEndMs: NOW - 1_000_000 },
          { name: 'c', mode: 'DOWN', windowEndMs: NOW + 60_000 },
          { name: 'd', mode: 'DOWN', windowEndMs: NOW - 120_000 },
          { name: 'e', mode: 'DOWN', windowEndMs: NOW - 3_600_000 },
          { name: 'f', mode: 'DOWN', windowEndMs: undefined },
        ],
      }),
      check: (s) => {
        assert.deepEqual(s.machines, { UP: 1, DRAINING: 1, DOWN: 4 });
        assert.deepEqual(s.downOverdue, [
          { machine: 'e', seconds: 3600 },
          { machine: 'd', seconds: 120 },
        ]);
      },
    },
    {
      name: 'disk pressure: counted apart from the states (an active agent under pressure is still active), longest first',
      facts: facts({
        agents: [
          agent({ id: 'a1', hostname: 'h1', diskPressureSinceMs: NOW - 5_000 }),
          agent({ id: 'a2', hostname: 'h2' }),
          agent({ id: 'a3', hostname: 'h3', deactivated: true, diskPressureSinceMs: NOW - 60_000 }),
          agent({ id: 'a4', hostname: 'h4', diskPressureSinceMs: NOW + 1_000 }),
        ],
      }),
      check: (s) => {
        assert.equal(s.agents.active, 3);
        assert.deepEqual(s.diskPressure, [
          { agentId: 'a3', hostname: 'h3', seconds: 60 },
          { agentId: 'a1', hostname: 'h1', seconds: 5 },
          { agentId: 'a4', hostname: 'h4', seconds: 0 },
        ]);
      },
    },
    {
      name: 'frameworks, offers, plan steps',
      facts: facts({
        frameworks: ['CONNECTED', 'CONNECTED', 'DISCONNECTED', 'RECOVERED'],
        offersOutstanding: 3,
        inverseOffersOutstanding: 2,
        planSteps: [
          { plan: 'p', status: 'COMPLETE', steps: 2 },
          { plan: 'p', status: 'PENDING', steps: 1 },
        ],
      }),
      check: (s) => {
        assert.deepEqual(s.frameworks, { connected: 2, disconnected: 1, recovered: 1 });
        assert.equal(s.offersOutstanding, 3);
        assert.equal(s.inverseOffersOutstanding, 2);
        assert.equal(s.planSteps.length, 2);
      },
    },
  ];
  for (const c of cases) {
    const s = summarize(c.facts, NOW);
    try {
      c.check(s);
    } catch (e) {
      (e as Error).message = `${c.name}: ${(e as Error).message}`;
      throw e;
    }
  }
});

const PROCESS: ProcessFacts = {
  uptimeSecs: 12.5,
  elected: true,
  epoch: 7,
  elections: 1,
  registrations: 3,
  reregistrations: 1,
  removals: 1,
  terminalTasks: { TASK_FINISHED: 4, TASK_KILLED: 2, TASK_GONE_BY_OPERATOR: 1 },
  inverseOffersAccepted: 5,
  inverseOffersDeclined: 1,
  agentRefusals: 2,
  lastStoreMs: 1.25,
  recentStoreMs: [4, 1, 2, 3, 1.25],
  fetchMs: 6.5,
  queuedWrites: 2,
  registryBytes: 40960,
  unreachable: { scheduled: 4, completed: 3, canceled: 1, recovery: 2 },
  sharedAnswers: 9,
  loopStallMs: 12,
  system: { cpus: 8, load: [0.5, 0.25, 0.125], memTotalBytes: 16e9, memFreeBytes: 4e9 },
};

/**
 * The keys mesos_exporter's master collector reads by name (mesos/mesos_exporter master.go) that
 * Drydock's snapshot lacked: revocable resources, agent shutdowns and unreachable transitions,
 * recovery removals, and the registrar's. Its message counters (`master/messages_*`,
 * `*_status_update*`), event queues and allocator internals have no Drydock counterpart and are
 * not written: the exporter only warns about those.
 */
const EXPORTER_KEYS = [
  ...['cpus', 'mem', 'disk', 'gpus'].flatMap((r) => ['total', 'used', 'percent'].map((x) => `master/${r}_revocable_${x}`)),
  'master/slave_shutdowns_scheduled', 'master/slave_shutdowns_completed', 'master/slave_shutdowns_canceled',
  'master/slave_unreachable_scheduled', 'master/slave_unreachable_completed', 'master/slave_unreachable_canceled',
  'master/recovery_slave_removals', 'registrar/queued_operations', 'registrar/registry_size_bytes', 'registrar/state_fetch_ms',
  ...['max', 'min', 'p50', 'p90', 'p95', 'p99', 'p999', 'p9999'].map((x) => `registrar/state_store_ms/${x}`),
  'registrar/log/ensemble_size',
];

/** The keys the task lists as "at least": a rename breaks this. */
const REQUIRED_KEYS = [
  'master/uptime_secs', 'master/elected', 'master/slaves_active', 'master/slaves_inactive', 'master/slaves_connected', 'master/slaves_disconnected',
  'master/slaves_unreachable', 'master/slave_registrations', 'master/slave_reregistrations', 'master/slave_removals', 'master/frameworks_active',
  'master/frameworks_inactive', 'master/frameworks_connected', 'master/frameworks_disconnected', 'master/outstanding_offers',
  ...['staging', 'starting', 'running', 'killing', 'finished', 'failed', 'killed', 'lost', 'error', 'dropped', 'unreachable', 'gone', 'gone_by_operator', 'unknown'].map((s) => `master/tasks_${s}`),
  ...['cpus', 'mem', 'disk', 'gpus'].flatMap((r) => ['total', 'used', 'percent'].map((x) => `master/${r}_${x}`)),
  'registrar/state_store_ms', 'registrar/log/recovered', 'system/cpus_total', 'system/load_1min', 'system/load_5min', 'system/load_15min',
  'system/mem_total_bytes', 'system/mem_free_bytes', 'drydock/drains_in_progress', 'drydock/inverse_offers_outstanding', 'drydock/machines_up',
  'drydock/machines_draining', 'drydock/machines_down', 'drydock/agents_disk_pressure',
  ...EXPORTER_KEYS,
];

test('snapshotOf: Mesos keys and meanings, a table of model and process', () => {
  const model = facts({
    agents: [
      agent({ tasks: [task('TASK_RUNNING'), task('TASK_KILLING')] }),
      agent({ deactivated: true, drain: { state: 'DRAINING', startedMs: NOW - 5_000 }, tasks: [task('TASK_RUNNING')], diskPressureSinceMs: NOW - 1_000 }),
      agent({ phase: 'UNREACHABLE', connected: false }),
    ],
    machines: [
      { name: 'a', mode: 'UP', windowEndMs: undefined },
      { name: 'b', mode: 'DOWN', windowEndMs: NOW - 10_000 },
    ],
    frameworks: ['CONNECTED', 'DISCONNECTED'],
    offersOutstanding: 1,
    inverseOffersOutstanding: 2,
  });
  const cases: Array<[string, ModelFacts, ProcessFacts, Record<string, number>]> = [
    [
      'a leader with agents, a drain, tasks',
      model,
      PROCESS,
      {
        'master/uptime_secs': 12.5,
        'master/elected': 1,
        'master/slaves_active': 1,
        'master/slaves_inactive': 1,
        'master/slaves_connected': 2,
        'master/slaves_disconnected': 0,
        'master/slaves_unreachable': 1,
        'master/slave_registrations': 3,
        'master/slave_reregistrations': 1,
        'master/slave_removals': 1,
        'master/frameworks_active': 1,
        'master/frameworks_inactive': 1,
        'master/frameworks_connected': 1,
        'master/frameworks_disconnected': 1,
        'master/outstanding_offers': 1,
        'master/tasks_running': 2,
        'master/tasks_killing': 1,
        'master/tasks_staging': 0,
        'master/tasks_finished': 4,
        'master/tasks_killed': 2,
        'master/tasks_gone_by_operator': 1,
        'master/tasks_lost': 0,
        'master/cpus_total': 8,
        'master/cpus_used': 3,
        'master/cpus_percent': 0.375,
        'master/mem_total': 2048,
        'master/mem_used': 384,
        'master/mem_percent': 0.1875,
        'master/gpus_total': 0,
        'master/gpus_percent': 0,
        'registrar/state_store_ms': 1.25,
        'registrar/log/recovered': 1,
        'system/cpus_total': 8,
        'system/load_5min': 0.25,
        'system/mem_free_bytes': 4e9,
        'drydock/drains_in_progress': 1,
        'drydock/drain_oldest_age_secs': 5,
        'drydock/inverse_offers_outstanding': 2,
        'drydock/inverse_offers_accepted': 5,
        'drydock/agent_messages_refused': 2,
        'drydock/machines_up': 1,
        'drydock/machines_down': 1,
        'drydock/machines_down_overdue': 1,
        'drydock/machine_down_overdue_max_secs': 10,
        'drydock/term_epoch': 7,
        // Real where Drydock has the fact: the unreachable transitions, the registry's writes, size and first read.
        'master/slave_unreachable_scheduled': 4,
        'master/slave_unreachable_completed': 3,
        'master/slave_unreachable_canceled': 1,
        'master/recovery_slave_removals': 2,
        'master/http_cache_hits': 9,
        'registrar/queued_operations': 2,
        'registrar/registry_size_bytes': 40960,
        'registrar/state_fetch_ms': 6.5,
        'registrar/state_store_ms/count': 5,
        'registrar/state_store_ms/min': 1,
        'registrar/state_store_ms/max': 4,
        'registrar/state_store_ms/p50': 2,
        'registrar/state_store_ms/p90': 3.6,
        'drydock/event_loop_stall_max_ms': 12,
        // Mesos' zero where the concept does not exist here.
        'master/cpus_revocable_total': 0,
        'master/mem_revocable_percent': 0,
        'master/slave_shutdowns_scheduled': 0,
        'registrar/log/ensemble_size': 0,
        'drydock/agents_disk_pressure': 1,
      },
    ],
    [
      'a standby: not elected, not recovered, no model figures, counters of its own',
      NO_FACTS,
      { ...PROCESS, elected: false, epoch: 0, elections: 0, registrations: 0, reregistrations: 0, removals: 0, terminalTasks: {}, lastStoreMs: 0, recentStoreMs: [3], fetchMs: 0, registryBytes: undefined },
      {
        'registrar/state_store_ms/p50': 0,
        'registrar/state_store_ms/count': 0,
        'registrar/registry_size_bytes': 0,
        'master/elected': 0,
        'registrar/log/recovered': 0,
        'master/slaves_active': 0,
        'master/tasks_running': 0,
        'master/tasks_finished': 0,
        'master/cpus_percent': 0,
        'drydock/term_epoch': 0,
        'master/uptime_secs': 12.5,
      },
    ],
  ];
  for (const [name, f, p, want] of cases) {
    const snap = snapshotOf(summarize(f, NOW), p);
    for (const key of REQUIRED_KEYS) assert.equal(typeof snap[key], 'number', `${name}: ${key} present`);
    for (const [key, value] of Object.entries(snap)) assert.ok(Number.isFinite(value), `${name}: ${key} finite`);
    for (const [key, value] of Object.entries(want)) assert.equal(snap[key], value, `${name}: ${key}`);
  }
});

test('Commits: the instrument port hears each write, successful or failed, and failures change nothing', async () => {
  const heard: Array<[number, boolean]> = [];
  let t = 0;
  const registry = {} as Registry;
  const log = new Logger({ sink: () => {} });
  const commits = new Commits(registry, log, () => {}, { now: () => t, onCommit: (ms, ok) => heard.push([ms, ok]) });
  let applied = 0;
  const ok = await commits.write('op', {}, async () => { t += 3; }, () => ++applied);
  assert.deepEqual(ok, { ok: true, value: 1 });
  const failed = await commits.write('op', {}, async () => { t += 5; throw new Error('disk full'); }, () => ++applied);
  assert.equal(failed.ok, false);
  assert.equal(applied, 1);
  assert.deepEqual(heard, [[3, true], [5, false]]);
});

test('timerStatistics: libprocess\' statistics of a series (linear interpolation), zeros under two values', () => {
  const cases: Array<[string, number[], Record<string, number>]> = [
    ['none', [], { 'k/count': 0, 'k/min': 0, 'k/max': 0, 'k/p50': 0, 'k/p9999': 0 }],
    ['one', [5], { 'k/count': 0, 'k/min': 0, 'k/p50': 0 }],
    ['two', [1, 3], { 'k/count': 2, 'k/min': 1, 'k/max': 3, 'k/p50': 2, 'k/p90': 2.8 }],
    ['unsorted', [10, 0, 5], { 'k/count': 3, 'k/min': 0, 'k/max': 10, 'k/p50': 5, 'k/p95': 9.5 }],
  ];
  for (const [name, values, want] of cases) {
    const got = timerStatistics('k', values);
    assert.deepEqual(Object.keys(got).sort(), ['k/count', 'k/max', 'k/min', 'k/p50', 'k/p90', 'k/p95', 'k/p99', 'k/p999', 'k/p9999'], name);
    for (const [key, value] of Object.entries(want)) assert.ok(Math.abs((got[key] as number) - value) < 1e-9, `${name}: ${key} = ${got[key]}, want ${value}`);
  }
});

test('Commits: writes waiting and changes applied, as the snapshot and the model\'s generation read them', async () => {
  const registry = {} as Registry;
  const commits = new Commits(registry, new Logger({ sink: () => {} }), () => {});
  let release: () => void = () => {};
  const held = commits.write('op', {}, () => new Promise<void>((resolve) => (release = resolve)), () => 'a');
  assert.deepEqual([commits.pending, commits.applied], [1, 0]);
  release();
  await held;
  assert.deepEqual([commits.pending, commits.applied], [0, 1]);
  await commits.write('op', {}, async () => { throw new Error('disk full'); }, () => 'b');
  assert.deepEqual([commits.pending, commits.applied], [0, 1], 'a failed write applies nothing');
});

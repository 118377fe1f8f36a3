/**
 * The legacy endpoints' models (master/api/legacy.ts), table-driven: resources as Mesos' objects,
 * the texts written directly (tasks, agents, resources) equal to their models, memos that follow
 * a task's and an agent's changes, and `/tasks`' query decoder.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { stringifyJson } from '../../shared/json.js';
import type { Resource, Task, TaskStatus } from '../../shared/mesos.js';
import type { AgentEntry } from '../../master/cores/agents.js';
import { legacyCaller, ResourceTotals, resourcesModel, resourcesText, slaveModel, slaveText, taskModel, taskText, tasksAnswer, tasksQuery, type SlaveContext } from '../../master/api/legacy.js';
import { Access, MasterSecurity } from '../../master/security/security.js';
import type { Queries } from '../../master/term/queries.js';

const scalar = (name: string, value: number, role?: string): Resource => ({ name, type: 'SCALAR', scalar: { value }, ...(role === undefined ? {} : { role }) });
const ranges = (name: string, ...r: Array<[number, number]>): Resource => ({ name, type: 'RANGES', ranges: { range: r.map(([begin, end]) => ({ begin, end })) } });
const set = (name: string, ...item: string[]): Resource => ({ name, type: 'SET', set: { item } });

test("resources as Mesos' model writes them, and the same as text", () => {
  const cases: Array<[string, Resource[], Record<string, number | string>]> = [
    ['nothing: the four always there', [], { cpus: 0, gpus: 0, mem: 0, disk: 0 }],
    ['scalars summed, doubles rounded', [scalar('cpus', 0.1), scalar('cpus', 0.2), scalar('mem', 16)], { cpus: 0.3, gpus: 0, mem: 16, disk: 0 }],
    ['every role together', [scalar('cpus', 1), scalar('cpus', 2, 'web')], { cpus: 3, gpus: 0, mem: 0, disk: 0 }],
    ['ranges merged and printed as Mesos', [ranges('ports', [31005, 31010], [31000, 31004]), ranges('ports', [32000, 32000])], { cpus: 0, gpus: 0, mem: 0, disk: 0, ports: '[31000-31010, 32000-32000]' }],
    ['another scalar after the four', [scalar('foo', 2.5), scalar('cpus', 1)], { cpus: 1, gpus: 0, mem: 0, disk: 0, foo: 2.5 }],
    ['sets as {a, b}', [set('zones', 'a', 'b'), set('zones', 'b', 'c')], { cpus: 0, gpus: 0, mem: 0, disk: 0, zones: '{a, b, c}' }],
  ];
  for (const [name, list, want] of cases) {
    assert.deepEqual(resourcesModel(list), want, name);
    assert.deepEqual(JSON.parse(resourcesText(list)), want, `${name} (text)`);
    assert.equal(resourcesText(list), JSON.stringify(resourcesModel(list)), `${name}: the same bytes`);
  }
  const used = new ResourceTotals().add([scalar('cpus', 1), ranges('ports', [1, 2])]);
  const more = used.plus([[scalar('cpus', 0.5), ranges('ports', [3, 3])]]);
  assert.deepEqual([used.model(), more.model()], [{ cpus: 1, gpus: 0, mem: 0, disk: 0, ports: '[1-2]' }, { cpus: 1.5, gpus: 0, mem: 0, disk: 0, ports: '[1-3]' }], 'plus leaves the totals as they were');
});

const status = (state: TaskStatus['state'], timestamp: number, extra: Partial<TaskStatus> = {}): TaskStatus => ({ task_id: { value: 't' }, state, source: 'SOURCE_EXECUTOR', timestamp, ...extra });

function task(extra: Partial<Task> = {}): Task {
  return {
    name: 'web-1',
    task_id: { value: 'web-1' },
    framework_id: { value: 'F1' },
    agent_id: { value: 'A1' },
    state: 'TASK_RUNNING',
    resources: [scalar('cpus', 0.1), scalar('mem', 32), ranges('ports', [31000, 31000])],
    statuses: [status('TASK_STARTING', 1000.5), status('TASK_RUNNING', 1001.25, { healthy: true })],
    ...extra,
  };
}

test('a task as text: the same as its model, for every optional part; the memo follows its changes', () => {
  const cases: Array<[string, Task, Task['state'] | undefined]> = [
    ['running, healthy', task(), undefined],
    ['with a user and labels', task({ user: 'alice', labels: { labels: [{ key: 'a', value: 'b' }, { key: 'c' }] } }), undefined],
    ['no statuses (staging)', task({ state: 'TASK_STAGING', statuses: [] }), undefined],
    ['shown unreachable', task(), 'TASK_UNREACHABLE'],
    ['a name to escape', task({ name: 'we"b\\1\u2028' }), undefined],
  ];
  for (const [name, t, state] of cases) {
    const model = taskModel(t, state);
    assert.deepEqual(JSON.parse(taskText(t, state)), model, name);
    assert.equal(taskText(t, state), JSON.stringify(model), `${name}: the same bytes`);
    assert.deepEqual(Object.keys(model).slice(0, 9), ['id', 'name', 'framework_id', 'executor_id', 'slave_id', 'state', 'resources', 'role', 'statuses'], name);
  }
  // The memo: a status replaced (same state), a status added, a new state: each shows.
  const t = task();
  const first = taskText(t);
  assert.equal(taskText(t), first);
  t.statuses.pop();
  t.statuses.push(status('TASK_RUNNING', 1002, { healthy: false }));
  assert.match(taskText(t), /"healthy":false/);
  t.state = 'TASK_FINISHED';
  t.statuses.push(status('TASK_FINISHED', 1003));
  assert.deepEqual(JSON.parse(taskText(t)), taskModel(t));
  assert.equal((JSON.parse(taskText(t, 'TASK_UNREACHABLE')) as { state: string }).state, 'TASK_UNREACHABLE', 'the state shown is part of the memo');
});

function agent(extra: Partial<AgentEntry> = {}): AgentEntry {
  const tasks = new Map<string, Task>([['F1\u0000web-1', task()], ['F1\u0000done', task({ task_id: { value: 'done' }, state: 'TASK_FINISHED' })]]);
  return {
    id: 'A1',
    info: { hostname: 'h1', ip: '10.0.0.1', port: 5051, resources: [scalar('cpus', 4), scalar('gpus', 1, 'ml'), scalar('mem', 4096), ranges('ports', [31000, 32000])], attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }, { name: 'slots', type: 'SCALAR', scalar: { value: 8 } }] },
    version: '0.1.0',
    capabilities: ['MULTI_ROLE', 'AGENT_DRAINING'],
    phase: 'REGISTERED',
    connected: true,
    sessionId: 1,
    registeredTimeNs: 1_700_000_000_123_456_789n,
    reregisteredTimeNs: undefined,
    unreachableTimeNs: undefined,
    tasks,
    deactivated: false,
    drain: undefined,
    principal: undefined,
    ...extra,
  } as AgentEntry;
}

test('an agent as text: the same as its model (drain, re-registration, reservations filtered by role, offers); the memo follows its changes', () => {
  const none: SlaveContext = { offeredByAgent: new Map(), mayRole: undefined };
  const offered: SlaveContext = { offeredByAgent: new Map([['A1', [[scalar('cpus', 1)], [scalar('mem', 128), ranges('ports', [31000, 31001])]]]]), mayRole: undefined };
  const noMl: SlaveContext = { offeredByAgent: new Map(), mayRole: (role) => role !== 'ml' };
  const drain = { state: 'DRAINING' as const, config: { maxGracePeriodNs: 9_007_199_254_740_993n, markGone: false }, startedNs: 1n, estimatedStartNs: 1_700_000_100_000_000_000n, drainedNs: undefined, sentMs: undefined };
  const cases: Array<[string, AgentEntry, SlaveContext]> = [
    ['registered, one task running, one finished', agent(), none],
    ['with offers', agent(), offered],
    ['reservations of a role the caller may not see', agent(), noMl],
    ['re-registered, deactivated, draining (an int64 beyond doubles)', agent({ reregisteredTimeNs: 1_700_000_050_000_000_000n, deactivated: true, drain }), none],
    ['disconnected, no tasks', agent({ connected: false, tasks: undefined }), none],
  ];
  for (const [name, e, ctx] of cases) {
    const text = slaveText(e, ctx);
    assert.equal(text, stringifyJson(slaveModel(e, ctx)), `${name}: the same bytes`);
    assert.deepEqual(Object.keys(JSON.parse(text) as object), Object.keys(slaveModel(e, ctx)), `${name}: Mesos' order`);
  }
  assert.match(slaveText(cases[3]?.[1] as AgentEntry, none), /"max_grace_period":\{"nanoseconds":9007199254740993\}/, 'int64 written exactly');
  const m = JSON.parse(slaveText(agent(), noMl)) as { reserved_resources: object; used_resources: { cpus: number } };
  assert.deepEqual(m.reserved_resources, {});
  assert.equal(m.used_resources.cpus, 0.1);
  // The memo follows the agent: a task ends, a new registration (new info).
  const e = agent();
  assert.equal((JSON.parse(slaveText(e, none)) as { used_resources: { cpus: number } }).used_resources.cpus, 0.1);
  (e.tasks?.get('F1\u0000web-1') as Task).state = 'TASK_KILLED';
  assert.equal((JSON.parse(slaveText(e, none)) as { used_resources: { cpus: number } }).used_resources.cpus, 0);
  e.info = { ...e.info, hostname: 'h1-renamed' };
  assert.equal((JSON.parse(slaveText(e, none)) as { hostname: string }).hostname, 'h1-renamed');
});

test("/tasks' query: Mesos' defaults, -1 for all, and a 400 that names what is wrong", () => {
  const read = (query: string) => tasksQuery({ method: 'GET', below: [], query, body: '' });
  const cases: Array<[string, Record<string, unknown> | RegExp]> = [
    ['', { limit: 100, offset: 0, order: 'desc', frameworkId: undefined, taskId: undefined }],
    ['?order=asc&limit=-1', { limit: Number.MAX_SAFE_INTEGER, offset: 0, order: 'asc' }],
    ['?limit=5&offset=10&order=desc&framework_id=F&task_id=t', { limit: 5, offset: 10, order: 'desc', frameworkId: 'F', taskId: 't' }],
    ['?order=des', { order: 'desc' }],
    ['?limit=-7', { limit: Number.MAX_SAFE_INTEGER }],
    ['?limit=abc', /^Invalid 'limit' query parameter "abc": expecting an integer/],
    ['?limit=', /^Invalid 'limit'/],
    ['?limit=99999999999999999999', /^Invalid 'limit'/],
    ['?offset=-1', /^Invalid 'offset' query parameter "-1": expecting an integer of 0 or more/],
    ['?offset=1e3', /^Invalid 'offset'/],
    ['?order=up', /^Invalid 'order' query parameter "up": expecting 'asc' or 'desc'/],
  ];
  for (const [query, want] of cases) {
    const r = read(query);
    if (want instanceof RegExp) {
      assert.equal(r.ok, false, query);
      if (!r.ok) assert.deepEqual([r.error.status, want.test(r.error.message)], [400, true], `${query}: ${r.error.message}`);
    } else {
      assert.equal(r.ok, true, query);
      if (r.ok) for (const [k, v] of Object.entries(want)) assert.equal((r.value as unknown as Record<string, unknown>)[k], v, `${query}: ${k}`);
    }
  }
});

test('a task list written in blocks: the same as its tasks one by one, and a changed task shows in the next answer', () => {
  const tasks = new Map<string, Task>();
  for (let i = 0; i < 600; i++) {
    const id = `t-${String(i).padStart(3, '0')}`;
    tasks.set(`F1\u0000${id}`, task({ name: id, task_id: { value: id }, statuses: [status('TASK_RUNNING', 1000 + i)] }));
  }
  const a = agent({ tasks });
  const framework = { id: 'F1', info: { user: 'u', name: 'f' }, phase: 'CONNECTED', streamId: undefined, registeredTimeNs: 1n, reregisteredTimeNs: undefined, unregisteredTimeNs: undefined, disconnectedAtMs: undefined, suppressed: false, filters: new Map() };
  let generation = 1;
  const q = {
    generation: () => String(generation),
    frameworks: () => [framework],
    completedFrameworks: () => [],
    agents: () => [a],
    completedTasks: () => [],
    frameworkRemoved: () => false,
    offers: () => [],
    agentObject: () => undefined,
  } as unknown as Queries;
  const caller = legacyCaller(new Access(MasterSecurity.open(), undefined), undefined);
  const read = (): Array<{ id: string; statuses: Array<{ timestamp: number }> }> => {
    const answer = tasksAnswer(q, caller, { limit: Number.MAX_SAFE_INTEGER, offset: 0, order: 'asc', frameworkId: undefined, taskId: undefined });
    assert.equal(answer.kind, 'pieces');
    const bytes = [...(answer as { pieces: () => Iterable<string | Buffer> }).pieces()].map((x) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : x));
    return (JSON.parse(Buffer.concat(bytes).toString('utf8')) as { tasks: Array<{ id: string; statuses: Array<{ timestamp: number }> }> }).tasks;
  };
  const first = read();
  assert.deepEqual(first, [...tasks.values()].map((t) => taskModel(t)), 'every task, in order, as its model');
  const changed = tasks.get('F1\u0000t-300') as Task;
  changed.statuses.push(status('TASK_RUNNING', 5000, { healthy: true }));
  generation++;
  const second = read();
  assert.equal(second[300]?.statuses.length, 2, 'the task in the middle block shows its new status');
  assert.deepEqual(second.filter((_, i) => i !== 300), first.filter((_, i) => i !== 300), 'the others as they were');
});

test("/tasks' order: ascending by first status (none first, ties in the model's order); descending is exactly its reverse", () => {
  // [id, first status time or none], in the model's order.
  const given: Array<[string, number | undefined]> = [['b', 2000], ['a', 1000], ['tie-1', 1500], ['none', undefined], ['tie-2', 1500]];
  const tasks = new Map<string, Task>();
  for (const [id, at] of given) tasks.set(`F1\u0000${id}`, task({ name: id, task_id: { value: id }, statuses: at === undefined ? [] : [status('TASK_RUNNING', at)] }));
  const framework = { id: 'F1', info: { user: 'u', name: 'f' }, phase: 'CONNECTED', streamId: undefined, registeredTimeNs: 1n, reregisteredTimeNs: undefined, unregisteredTimeNs: undefined, disconnectedAtMs: undefined, suppressed: false, filters: new Map() };
  const q = {
    generation: () => '1', frameworks: () => [framework], completedFrameworks: () => [], agents: () => [agent({ tasks })],
    completedTasks: () => [], frameworkRemoved: () => false, offers: () => [], agentObject: () => undefined,
  } as unknown as Queries;
  const caller = legacyCaller(new Access(MasterSecurity.open(), undefined), undefined);
  const ids = (order: 'asc' | 'desc', offset = 0, limit = 100): string[] => {
    const answer = tasksAnswer(q, caller, { limit, offset, order, frameworkId: undefined, taskId: undefined });
    const bytes = [...(answer as { pieces: () => Iterable<string | Buffer> }).pieces()].map((x) => (typeof x === 'string' ? Buffer.from(x, 'utf8') : x));
    return (JSON.parse(Buffer.concat(bytes).toString('utf8')) as { tasks: Array<{ id: string }> }).tasks.map((t) => t.id);
  };
  const cases: Array<[string, string[], string[]]> = [
    ['asc', ids('asc'), ['none', 'a', 'tie-1', 'tie-2', 'b']],
    ['desc', ids('desc'), ['b', 'tie-2', 'tie-1', 'a', 'none']],
    ['desc, a page', ids('desc', 1, 2), ['tie-2', 'tie-1']],
  ];
  for (const [what, got, want] of cases) assert.deepEqual(got, want, what);
});

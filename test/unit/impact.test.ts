/**
 * The impact preview's core (master/cores/impact.ts), table-driven: which tasks an action kills,
 * which service pods lose their last running instance, and whether the agents that remain can
 * hold what is displaced (best-fit decreasing over cpus, mem, disk and ports), with the
 * constraint that fails.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { impactOf, takesTasks, type ImpactAgent, type ImpactTask } from '../../master/cores/impact.js';
import { parseResources } from '../../shared/resources.js';
import type { Resource, TaskState } from '../../shared/mesos.js';
import { podOfTask } from '../../shared/pod-labels.js';

function res(text: string): Resource[] {
  const r = parseResources(text);
  if (!r.ok) throw new Error(r.error);
  return r.value;
}

/** A task: `name` on framework `fw`, using `resources`; a pod instance's task when `pod` is [type, index]. */
function task(name: string, resources: string, o: { fw?: string; state?: TaskState; pod?: [string, number] } = {}): ImpactTask {
  const labels = o.pod === undefined ? undefined : { labels: [{ key: 'pod_type', value: o.pod[0] }, { key: 'index', value: String(o.pod[1]) }, { key: 'task_type', value: 'server' }] };
  return { frameworkId: o.fw ?? 'F1', taskId: `${name}-id`, name, state: o.state ?? 'TASK_RUNNING', resources: res(resources), labels };
}

/** An agent with `total` resources and `tasks`; active unless told. */
function agent(id: string, total: string, tasks: ImpactTask[] = [], o: Partial<Pick<ImpactAgent, 'registered' | 'connected' | 'deactivated' | 'draining' | 'down'>> = {}): ImpactAgent {
  return { id, hostname: id.toLowerCase(), registered: true, connected: true, deactivated: false, draining: false, down: false, ...o, total: res(total), tasks };
}

const BIG = 'cpus:4;mem:4096;disk:10000;ports:[31000-31099]';

test('takesTasks: registered, connected, not deactivated, not draining, machine not DOWN', () => {
  const cases: Array<[Partial<ImpactAgent>, boolean]> = [
    [{}, true],
    [{ registered: false }, false],
    [{ connected: false }, false],
    [{ deactivated: true }, false],
    [{ draining: true }, false],
    [{ down: true }, false],
  ];
  for (const [o, want] of cases) assert.equal(takesTasks(agent('A', BIG, [], o)), want, JSON.stringify(o));
});

test('killed: the live tasks of the vacated agents only, by framework, hostname, name', () => {
  const agents = [
    agent('B', BIG, [task('web-2', 'cpus:1', { fw: 'F2' }), task('old', 'cpus:1', { state: 'TASK_FINISHED' }), task('api', 'cpus:1')]),
    agent('A', BIG, [task('web-1', 'cpus:1', { fw: 'F2' }), task('staging', 'cpus:1', { state: 'TASK_STAGING' })]),
    agent('C', BIG, [task('elsewhere', 'cpus:1')]),
  ];
  const got = impactOf(agents, new Set(['A', 'B'])).killed.map((k) => `${k.frameworkId} ${k.hostname} ${k.name} ${k.state}`);
  assert.deepEqual(got, ['F1 a staging TASK_STAGING', 'F1 b api TASK_RUNNING', 'F2 a web-1 TASK_RUNNING', 'F2 b web-2 TASK_RUNNING']);
});

/** [case, agents, vacated, pod losses as `fw type: instances`]. */
const PODS: Array<[string, ImpactAgent[], string[], string[]]> = [
  ['the last instance goes', [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG)], ['A'], ['F1 hello: hello-0']],
  ['another instance runs elsewhere', [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-1-server', 'cpus:1', { pod: ['hello', 1] })])], ['A'], []],
  ['both instances are vacated', [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-1-server', 'cpus:1', { pod: ['hello', 1] })])], ['A', 'B'], ['F1 hello: hello-0, hello-1']],
  [
    'the other instance is on an agent already draining: it does not count',
    [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-1-server', 'cpus:1', { pod: ['hello', 1] })], { draining: true })],
    ['A'],
    ['F1 hello: hello-0'],
  ],
  [
    'the other instance is on a disconnected agent: the master still counts it running',
    [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-1-server', 'cpus:1', { pod: ['hello', 1] })], { connected: false })],
    ['A'],
    [],
  ],
  [
    'only RUNNING instances count: a staging one elsewhere does not save it',
    [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-1-server', 'cpus:1', { pod: ['hello', 1], state: 'TASK_STAGING' })])],
    ['A'],
    ['F1 hello: hello-0'],
  ],
  ['the same pod type in another framework is another service', [agent('A', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0] })]), agent('B', BIG, [task('hello-0-server', 'cpus:1', { pod: ['hello', 0], fw: 'F2' })])], ['A'], ['F1 hello: hello-0']],
  ['a task that is no pod instance is never a pod', [agent('A', BIG, [task('sleep-1', 'cpus:1')]), agent('B', BIG)], ['A'], []],
];

for (const [name, agents, vacated, want] of PODS) {
  test(`pods: ${name}`, () => {
    const got = impactOf(agents, new Set(vacated)).pods.map((p) => `${p.frameworkId} ${p.podType}: ${p.instances.join(', ')}`);
    assert.deepEqual(got, want);
  });
}

test('podOfTask: the pod_type label, or the scheduler\'s naming with index and task_type; nothing else', () => {
  const L = (pairs: Record<string, string>) => ({ labels: Object.entries(pairs).map(([key, value]) => ({ key, value })) });
  assert.deepEqual(podOfTask('x', L({ pod_type: 'hello', index: '2' })), { type: 'hello', instance: 'hello-2' });
  assert.deepEqual(podOfTask('my-app-3-web', L({ index: '3', task_type: 'web' })), { type: 'my-app', instance: 'my-app-3' });
  assert.equal(podOfTask('my-app-3-web', L({ index: '4', task_type: 'web' })), undefined);
  assert.equal(podOfTask('-3-web', L({ index: '3', task_type: 'web' })), undefined);
  assert.equal(podOfTask('hello-0-server', L({ pod_type: 'hello' })), undefined);
  assert.equal(podOfTask('hello-0-server', L({ pod_type: 'hello', index: 'x' })), undefined);
  assert.equal(podOfTask('hello-0-server', undefined), undefined);
});

/** [case, agents, vacated, fits, failing, unplaced as `what: reason`]. */
const CAPACITY: Array<[string, ImpactAgent[], string[], boolean, string[], string[]]> = [
  ['nothing displaced fits trivially', [agent('A', BIG), agent('B', BIG)], ['A'], true, [], []],
  ['fits on the other agent', [agent('A', BIG, [task('t1', 'cpus:2;mem:512')]), agent('B', BIG)], ['A'], true, [], []],
  [
    'cpus short: needs 2, the rest has 1.5 free',
    [agent('A', BIG, [task('t1', 'cpus:2;mem:512')]), agent('B', 'cpus:4;mem:4096', [task('busy', 'cpus:2.5;mem:100')])],
    ['A'],
    false,
    ['cpus'],
    ['t1: cpus: needs 2, at most 1.5 free on one agent'],
  ],
  [
    'ports counted, not matched: 3 ports needed, 2 free',
    [agent('A', BIG, [task('t1', 'cpus:0.1;ports:[31000-31002]')]), agent('B', 'cpus:4;mem:4096;ports:[31000-31001]')],
    ['A'],
    false,
    ['ports'],
    ['t1: ports: needs 3, at most 2 free on one agent'],
  ],
  [
    'each resource fits somewhere, never together',
    [agent('A', BIG, [task('t1', 'cpus:2;mem:2048')]), agent('B', 'cpus:4;mem:1024'), agent('C', 'cpus:1;mem:4096')],
    ['A'],
    false,
    ['cpus', 'mem'],
    ['t1: no remaining agent has cpus 2, mem 2048 free at once'],
  ],
  [
    // First fit would put 3 on B (4), then 2 on C (3), and find no room for the last 2.
    'best fit keeps room: 3 goes where it leaves least, then both 2s fit',
    [agent('A', 'cpus:8', [task('t3', 'cpus:3'), task('t2a', 'cpus:2'), task('t2b', 'cpus:2')]), agent('B', 'cpus:4'), agent('C', 'cpus:3')],
    ['A'],
    true,
    [],
    [],
  ],
  [
    'a pod instance moves whole: two tasks of 1 cpu need one agent with 2',
    [agent('A', BIG, [task('hello-0-a', 'cpus:1', { pod: ['hello', 0] }), task('hello-0-b', 'cpus:1', { pod: ['hello', 0] })]), agent('B', 'cpus:1'), agent('C', 'cpus:1')],
    ['A'],
    false,
    ['cpus'],
    ['hello-0: cpus: needs 2, at most 1 free on one agent'],
  ],
  [
    'agents that take no tasks receive nothing: deactivated, draining, disconnected, DOWN, vacated',
    [
      agent('A', BIG, [task('t1', 'cpus:1')]),
      agent('B', BIG, [], { deactivated: true }),
      agent('C', BIG, [], { draining: true }),
      agent('D', BIG, [], { connected: false }),
      agent('E', BIG, [], { down: true }),
      agent('F', BIG),
    ],
    ['A', 'F'],
    false,
    ['cpus', 'agents'],
    ['t1: no agent remains that takes new tasks'],
  ],
  [
    'terminal tasks are neither displaced nor use room',
    [agent('A', 'cpus:1', [task('done', 'cpus:1', { state: 'TASK_FINISHED' })]), agent('B', 'cpus:1', [task('gone', 'cpus:1', { state: 'TASK_KILLED' })])],
    ['A'],
    true,
    [],
    [],
  ],
];

for (const [name, agents, vacated, fits, failing, unplaced] of CAPACITY) {
  test(`capacity: ${name}`, () => {
    const c = impactOf(agents, new Set(vacated)).capacity;
    assert.equal(c.fits, fits);
    assert.deepEqual(c.failing, failing);
    assert.deepEqual(c.unplaced.map((u) => `${u.what}: ${u.reason}`), unplaced);
  });
}

test('capacity: the totals per resource, in order cpus, mem, disk, ports', () => {
  const agents = [agent('A', BIG, [task('t1', 'cpus:0.5;mem:256;disk:100;ports:[31000-31001];gpus:1')]), agent('B', 'cpus:4;mem:4096;disk:1000;ports:[31000-31009]', [task('busy', 'cpus:1;ports:[31000-31000]')])];
  const c = impactOf(agents, new Set(['A'])).capacity;
  assert.deepEqual(c.resources, [
    { name: 'cpus', needed: 0.5, free: 3, enough: true },
    { name: 'mem', needed: 256, free: 4096, enough: true },
    { name: 'disk', needed: 100, free: 1000, enough: true },
    { name: 'ports', needed: 2, free: 9, enough: true },
    { name: 'gpus', needed: 1, free: 0, enough: false },
  ]);
  assert.deepEqual(c.failing, ['gpus']);
  assert.equal(c.agents, 1);
  assert.equal(c.unplaced[0]?.reason, 'gpus: needs 1, at most 0 free on one agent');
});

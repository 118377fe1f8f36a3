/**
 * The scheduler's pure pod decisions: where a pod goes (placement with hostname:UNIQUE, pods
 * kept together, agents excluded, maintenance windows last and the latest window first, a
 * relaunch in place preferred), names, and the TaskInfo a task is launched with.
 */
import { podOfTask, type LabelsJson } from '../../shared/pod-labels.js';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { choosePlacement, parseInstance, stepName, taskInfo, type HeldOffer, type PlacementNeed } from '../../scheduler/pods.js';
import type { PodSpec, TaskSpec } from '../../scheduler/spec-types.js';

function offer(hostname: string, cpus: number, memMb: number, unavailableFromNs?: bigint): HeldOffer {
  return { id: `o-${hostname}`, agentId: `id-${hostname}`, hostname, unavailableFromNs, resources: [], cpus, memMb, receivedAtMs: 0 };
}

const need = (o: Partial<PlacementNeed> = {}): PlacementNeed => ({ cpus: 0.5, memMb: 64, avoidHosts: new Set(), agentId: undefined, excludeAgents: new Set(), ...o });

test('placement: a table of who gets the pod', () => {
  const a = offer('a', 1, 128);
  const b = offer('b', 2, 128);
  const small = offer('small', 0.2, 128);
  const soon = offer('soon', 4, 4096, 1_000n);
  const later = offer('later', 4, 4096, 9_000n);
  const cases: Array<[string, PlacementNeed, HeldOffer[], string | RegExp]> = [
    ['most cpus left wins, so pods spread', need(), [a, b], 'b'],
    ['an offer too small is skipped', need(), [small, a], 'a'],
    ['cpus that only fit with float drift still fit', need({ cpus: 0.30000000000000004 }), [offer('x', 0.3, 64)], 'x'],
    ['hostname:UNIQUE skips hosts running another instance', need({ avoidHosts: new Set(['b']) }), [a, b], 'a'],
    ['a pod\'s tasks stay together on its agent', need({ agentId: 'id-a' }), [a, b], 'a'],
    ['excluded agents are never chosen', need({ excludeAgents: new Set(['id-b']) }), [a, b], 'a'],
    ['no maintenance beats more room', need(), [soon, a], 'a'],
    ['among windows, the one furthest away', need(), [soon, later], 'later'],
    ['a relaunch in place prefers its agent', need({ preferAgent: 'id-a' }), [a, b], 'a'],
    ['but not onto a machine going into maintenance', need({ preferAgent: 'id-soon' }), [soon, a], 'a'],
    ['nothing fits: says what was asked', need(), [small], /^no offer fits cpus 0.5, mem 64 MB$/],
    ['nothing fits: names the rules that ruled hosts out', need({ avoidHosts: new Set(['b', 'a']) }), [a, b], /hostname:UNIQUE rules out a, b/],
    ['waiting for its own agent says so', need({ agentId: 'id-z' }), [a], /from agent id-z, where the pod's other tasks run/],
  ];
  for (const [what, n, offers, expected] of cases) {
    const p = choosePlacement(n, offers);
    if (typeof expected === 'string') assert.equal(p.ok ? p.offer.hostname : `refused: ${p.reason}`, expected, what);
    else assert.match(p.ok ? `placed on ${p.offer.hostname}` : p.reason, expected, what);
  }
});

test('names: instances split back into pod type and index; steps are named as the SDK names them', () => {
  assert.deepEqual(parseInstance('hello-12', ['hello']), { podType: 'hello', index: 12 });
  assert.deepEqual(parseInstance('web-api-3', ['web-api', 'web']), { podType: 'web-api', index: 3 });
  assert.equal(parseInstance('hello-01', ['hello']), undefined);
  assert.equal(parseInstance('other-1', ['hello']), undefined);
  assert.equal(parseInstance('hello', ['hello']), undefined);
  assert.equal(stepName('hello', 0, ['first', 'second']), 'hello-0:[first, second]');
});

test('taskInfo: environment, kill grace, checks and labels', () => {
  const task: TaskSpec = {
    name: 'server', goal: 'RUNNING', essential: true, cmd: 'exec sleep 1', cpus: 0.25, memoryMb: 32, env: { A: '1', TASK_NAME: 'spoofed' },
    killGracePeriodS: 2.5, readinessCheck: { cmd: 'test -f ready', intervalS: 0.5, delayS: 0, timeoutS: 3 },
    healthCheck: { cmd: 'true', intervalS: 5, delayS: 1, timeoutS: 2, gracePeriodS: 30, maxConsecutiveFailures: 3 },
  };
  const pod: PodSpec = { type: 'hello', count: 2, placement: { uniqueHostname: false, text: '' }, allowDecommission: false, tasks: [task] };
  const o = { ...offer('a', 1, 128), resources: [{ name: 'cpus', type: 'SCALAR' as const, scalar: { value: 1 }, role: '*' }] };
  const info = taskInfo({ serviceName: 'hello', frameworkName: 'hello-fw', configId: 'cfg-1', pod, index: 1, parameters: { P: 'x' } }, task, o, 'hello-1-server__id') as unknown as Record<string, unknown>;
  assert.equal(info['name'], 'hello-1-server');
  assert.deepEqual(info['agent_id'], { value: 'id-a' });
  assert.deepEqual(info['resources'], [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.25 }, role: '*' }, { name: 'mem', type: 'SCALAR', scalar: { value: 32 } }]);
  const env = Object.fromEntries(((info['command'] as { environment: { variables: Array<{ name: string; value: string }> } }).environment.variables).map((v) => [v.name, v.value]));
  // The standard variables win over a spec that tries to set them.
  assert.deepEqual(env, { A: '1', TASK_NAME: 'hello-1-server', P: 'x', POD_INSTANCE_INDEX: '1', FRAMEWORK_NAME: 'hello-fw', SERVICE_NAME: 'hello' });
  assert.deepEqual(info['kill_policy'], { grace_period: { nanoseconds: 2_500_000_000 } });
  assert.deepEqual(info['check'], { type: 'COMMAND', command: { command: { shell: true, value: 'test -f ready' } }, delay_seconds: 0, interval_seconds: 0.5, timeout_seconds: 3 });
  assert.equal((info['health_check'] as { consecutive_failures: number }).consecutive_failures, 3);
  const labels = Object.fromEntries((info['labels'] as { labels: Array<{ key: string; value: string }> }).labels.map((l) => [l.key, l.value]));
  assert.equal(labels['target_configuration'], 'cfg-1');
  assert.equal(labels['index'], '1');
  // What the master's impact preview reads to say which pod a task is an instance of.
  assert.equal(labels['pod_type'], 'hello');
  assert.deepEqual(podOfTask(info['name'] as string, info['labels'] as LabelsJson), { type: 'hello', instance: 'hello-1' });
});

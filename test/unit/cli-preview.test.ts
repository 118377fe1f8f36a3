/**
 * The CLI's pure parts around acting safely: the impact preview read for a person
 * (cli/preview.ts), what machine down|up says of each machine and the refusal of machines that
 * name an agent by half (cli/maintenance.ts), the explanation of Mesos' "deactivated" refusal,
 * idempotent deactivate/reactivate (cli/drain.ts agentAlready), and --timeout's checks.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { impactLines, previewLines, previewPrinted, type PreviewJson } from '../../cli/preview.js';
import { downLeftOut, machineChangeLines, refuseMismatches, registeredAgents, scheduledMachines } from '../../cli/maintenance.js';
import { agentAlready, type AgentJson } from '../../cli/drain.js';
import { waitTimeoutMs } from '../../cli/nanotime.js';
import { previewFailure } from '../../cli/preview-command.js';
import { machineMismatches } from '../../shared/machine-match.js';

const IMPACT: PreviewJson['impact'] = {
  tasks: { count: 3, hidden: 1, frameworks: [{ framework_id: 'F1', name: 'svc', tasks: [{ name: 'hello-0-server', hostname: 'agent-1' }, { name: 'web-0-server', hostname: 'agent-1' }] }] },
  pods_losing_last_instance: [{ framework_id: 'F1', framework_name: 'svc', pod_type: 'hello', instances: ['hello-0'] }],
  hidden_pods: 0,
  capacity: {
    fits: false,
    agents: 2,
    resources: [{ name: 'cpus', needed: 1.7, free: 1.8, enough: true }],
    failing: ['cpus'],
    unplaced: [{ framework_id: 'F1', what: 'hello-0', reason: 'cpus: needs 1.5, at most 1 free on one agent' }],
    hidden_unplaced: 0,
  },
};

test('impactLines: tasks by framework, hidden ones counted, the pod left without an instance, the room and what fails', () => {
  assert.deepEqual(impactLines(IMPACT), [
    '  kills 3 tasks of 1 framework:',
    '    svc (F1): hello-0-server on agent-1, web-0-server on agent-1',
    '    and 1 task you may not view',
    '  leaves pod hello of svc without a running instance (stops hello-0)',
    '  room: NOT enough on the 2 other active agents: cpus (cpus 1.7 of 1.8 free)',
    '    hello-0: cpus: needs 1.5, at most 1 free on one agent',
  ]);
  assert.deepEqual(impactLines({ tasks: { count: 0, hidden: 0, frameworks: [] }, capacity: { fits: true, agents: 2, resources: [] } }), ['  kills no task']);
  // Text from the master cannot move the cursor.
  assert.deepEqual(impactLines({ tasks: { count: 1, frameworks: [{ framework_id: 'F', name: 'x\u001b[2Jy', tasks: [{ name: 'a\nb', hostname: 'h' }] }] } })[1], '    x?[2Jy (F): a b on h');
});

test('previewLines: warnings first, a refusal said as such, then what it would do; previewPrinted exits 1 only when refused', () => {
  const drain: PreviewJson = { action: 'drain_agent', agents: [{ agent_id: 'S1', hostname: 'agent-1', ip: '127.0.0.2' }], impact: IMPACT };
  assert.equal(previewLines(drain, 'draining agent-1 (S1)')[0], 'draining agent-1 (S1) would take out agent-1 (127.0.0.2):');
  assert.equal(previewLines(drain, 'x').at(-1), 'nothing was changed (--dry-run)');
  const refused = previewLines({ ...drain, refused: { status: 400, message: 'Agent S1 is part of a maintenance schedule' }, warnings: ['w'] }, 'draining agent-1 (S1)');
  assert.deepEqual(refused.slice(0, 3), ['warning: w', 'the master would refuse this (400): Agent S1 is part of a maintenance schedule', 'if it were accepted, draining agent-1 (S1) would take out agent-1 (127.0.0.2):']);
  const down: PreviewJson = { action: 'start_maintenance', machines: [{ hostname: 'agent-3', ip: '127.0.0.9', mode: 'DRAINING', agents: [] }, { hostname: 'agent-2', ip: '127.0.0.3', mode: 'DRAINING', agents: ['S2'] }], agents: [], impact: { tasks: { count: 0 } } };
  assert.deepEqual(previewLines(down, 'bringing them DOWN').slice(0, 3), [
    'agent-3 (127.0.0.9) (DRAINING): no agent matched: nothing would be shut down',
    'agent-2 (127.0.0.3) (DRAINING): 1 agent would be shut down',
    'bringing them DOWN would take out no agent:',
  ]);
  const plan: PreviewJson = {
    action: 'maintenance_plan',
    plan: { name: 'kernel', strategy: 'serial', phase_strategy: 'parallel', max_parallel: 2, max_down: null, hook: 'patch', phases: [{ name: 'r1', machines: [{ hostname: 'a' }, { hostname: 'b' }] }] },
    waves: [{ wave: 1, phases: ['r1'], machines: [{ hostname: 'a' }, { hostname: 'b' }], impact: { tasks: { count: 0 } } }],
  };
  assert.deepEqual(previewLines(plan, 'the plan'), [
    'plan kernel (serial, phases parallel, max_parallel 2, hook patch): 2 machines in 1 phase, 1 wave',
    'wave 1 (r1): a, b',
    '  kills no task',
    'nothing was changed (--dry-run)',
  ]);
  assert.equal(previewPrinted(200, JSON.stringify(drain), false, 'x')?.exitCode, 0);
  assert.equal(previewPrinted(200, JSON.stringify({ ...drain, refused: { status: 400, message: 'no' } }), false, 'x')?.exitCode, 1);
  assert.deepEqual(previewPrinted(200, JSON.stringify(drain), true, 'x')?.out.map((l) => JSON.parse(l) as unknown), [drain]);
  assert.equal(previewPrinted(404, '', false, 'x'), undefined);
  assert.match(previewFailure(404, '', undefined).err[0] ?? '', /has no impact preview .* older than this drydock/);
  assert.equal(previewFailure(403, 'Forbidden: x', 'ops').exitCode, 4);
});

test('machine down|up: what happened to each machine, from the agents registered before', () => {
  const agents = registeredAgents([
    { agent_info: { hostname: 'agent-2', id: { value: 'S1' } }, pid: 'slave(1)@127.0.0.3:5051' },
    { agent_info: { hostname: 'agent-3', id: { value: 'S2' } }, pid: 'slave(1)@127.0.0.4:5051' },
  ]);
  assert.deepEqual(machineChangeLines('down', [{ hostname: 'agent-2', ip: '127.0.0.3' }, { hostname: 'agent-3', ip: '127.0.0.9' }], agents), [
    'agent-2 (127.0.0.3) is DOWN: its agent agent-2 (S1) is shut down and may not register until it is brought up',
    'agent-3 (127.0.0.9) is DOWN: no agent matched: nothing was shut down',
  ]);
  assert.deepEqual(machineChangeLines('down', [{ hostname: 'x' }], undefined), ['x is DOWN: any agent on it is shut down and may not register until it is brought up']);
  assert.deepEqual(machineChangeLines('up', [{ hostname: 'x', ip: '1.2.3.4' }], agents), ['x (1.2.3.4) is UP and out of the schedule; agents on it may register again']);
  const refusal = refuseMismatches(machineMismatches([{ hostname: 'agent-3', ip: '127.0.0.9' }], agents));
  assert.deepEqual(refusal, [
    'machine agent-3=127.0.0.9 matches agent agent-3 (127.0.0.4) by hostname only: it will not affect that agent, whose machine is agent-3=127.0.0.4',
    'refused, nothing was sent: write each machine as HOST=IP of its agent (drydock agent list shows the addresses), or add --force to send it as written',
  ]);
  assert.deepEqual(scheduledMachines({ windows: [{ machine_ids: [{ hostname: 'a', ip: '1.1.1.1' }, { ip: '2.2.2.2' }, 'junk'] }, { nothing: true }] }), [{ hostname: 'a', ip: '1.1.1.1' }, { ip: '2.2.2.2' }]);
});

test('downLeftOut: Mesos\' "deactivated" refusal explained, with the command to run; other messages left alone', () => {
  assert.equal(
    downLeftOut(`Machine '{"hostname":"agent-2","ip":"127.0.0.3"}' is deactivated and cannot be removed from the schedule`),
    'agent-2 (127.0.0.3) is DOWN ("deactivated" in Mesos\' words): a schedule may leave it out only once it is UP. Bring it up first: drydock machine up agent-2=127.0.0.3 (that also takes it out of the schedule)',
  );
  assert.match(downLeftOut(`Machine '{"ip":"10.0.0.1"}' is deactivated and cannot be removed from the schedule`) ?? '', /drydock machine up =10\.0\.0\.1 /);
  assert.equal(downLeftOut('Machine \'{"hostname":"x"}\' is not part of a maintenance schedule'), undefined);
  assert.equal(downLeftOut("Machine '{not json}' is deactivated and cannot be removed from the schedule"), undefined);
});

test('agentAlready: deactivating and reactivating an agent already so change nothing, alike', () => {
  const agent = (o: Partial<AgentJson>): AgentJson => ({ agent_info: { hostname: 'a' }, active: true, ...o });
  const cases: Array<['deactivate' | 'reactivate', AgentJson | undefined, string | undefined]> = [
    ['deactivate', agent({}), undefined],
    ['deactivate', agent({ deactivated: true, active: false }), 'was already DEACTIVATED: nothing changed'],
    ['deactivate', agent({ deactivated: true, drain_info: { state: 'DRAINED' } }), 'was already DRAINED: nothing changed'],
    ['reactivate', agent({}), 'was already ACTIVE: nothing changed'],
    ['reactivate', agent({ deactivated: true }), undefined],
    ['reactivate', agent({ drain_info: { state: 'DRAINING' } }), undefined],
    // Not listed (unreachable, recovered): the master decides.
    ['reactivate', undefined, undefined],
  ];
  for (const [command, a, want] of cases) assert.equal(agentAlready(command, a), want, `${command} ${JSON.stringify(a)}`);
});

test('waitTimeoutMs: only with the flag it bounds, a positive duration, in ms', () => {
  assert.deepEqual(waitTimeoutMs(undefined, false, '--wait'), { ok: true, value: undefined });
  assert.deepEqual(waitTimeoutMs('3m', true, '--wait'), { ok: true, value: 180_000 });
  assert.deepEqual(waitTimeoutMs('1secs', false, '--watch'), { ok: false, error: '--timeout is for --watch: without it nothing waits' });
  assert.deepEqual(waitTimeoutMs('0secs', true, '--wait'), { ok: false, error: "--timeout must be more than zero, got '0secs'" });
  const bad = waitTimeoutMs('soon', true, '--wait');
  assert.ok(!bad.ok && bad.error.startsWith("--timeout: Invalid duration 'soon': expected a number and a unit: ns, us, ms, secs (s,"));
});

/**
 * `drydock status` and the agent commands' `--json` end to end: the built CLI against a real
 * master with two real agents on loopback. One agent is drained (idle: DRAINED at once), one
 * machine is in a maintenance plan held for the operator, so the screen has a drain, a machine
 * out of UP and a plan in progress. Colour follows FORCE_COLOR, NO_COLOR and --no-color.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, spawnCli } from '../helpers/cli.js';
import { CLEAN_CLIENT_ENV } from '../helpers/cluster.js';
import type { ClusterStatus } from '../../cli/status.js';
import type { AgentCallJson } from '../../cli/drain-command.js';

type Env = Readonly<Record<string, string | undefined>>;
const PLAIN: Env = { ...CLEAN_CLIENT_ENV, NO_COLOR: undefined, FORCE_COLOR: undefined, DRYDOCK_SCHEDULER: undefined };
const drydock = (t: { after(fn: () => unknown): void }, master: MasterHandle, args: readonly string[], env: Env = {}) =>
  cliFinished(spawnCli(t, [`--master=${master.address}`, ...args], { ...PLAIN, ...env }));

const SPEC = ['name: st', 'machines: { hostnames: [st-b] }', 'window: 1hrs', 'wait_for_frameworks: 1secs', 'settle: 1secs', 'up_when: operator', ''].join('\n');

test('drydock status: leader, agents by state, machines by mode, drains, plans; --json; colour only when asked', { timeout: 300_000 }, async (t) => {
  const master = await startMaster(t);
  await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'st-a' });
  await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'st-b', stopSignal: 'SIGUSR1' });
  await eventually(async () => {
    const r = await drydock(t, master, ['agent', 'list']);
    return /st-a/.test(r.stdout) && /st-b/.test(r.stdout) ? true : undefined;
  }, undefined, 100, 'both agents registered');

  // drain --json: one object, the agent as Drydock's own API shows it after the call.
  const drain = await drydock(t, master, ['agent', 'drain', 'st-a', '--json']);
  assert.equal(drain.code, 0, drain.stderr);
  const called = JSON.parse(drain.stdout) as AgentCallJson;
  assert.equal(called.call, 'DRAIN_AGENT');
  assert.equal(called.hostname, 'st-a');
  assert.match(called.agent?.drain?.state ?? '', /^DRAIN(ING|ED)$/);
  assert.equal(called.agent?.machine?.mode, 'UP');

  const file = join(tempDir(t), 'st.yaml');
  writeFileSync(file, SPEC);
  const created = await drydock(t, master, ['maintenance', 'plan', 'create', file]);
  assert.equal(created.code, 0, created.stderr);

  // --json: the documented object and nothing else on stdout.
  let last: ClusterStatus | undefined;
  const status = await eventually(async () => {
    const r = await drydock(t, master, ['status', '--json']);
    assert.equal(r.code, 0, r.stderr);
    const s = (last = JSON.parse(r.stdout) as ClusterStatus);
    return s.agents.drained === 1 && s.machines.UP + s.machines.DRAINING + s.machines.DOWN === 2 && s.machines.UP < 2 ? s : undefined;
  }, undefined, 200, 'the drain DRAINED and st-b out of UP').catch((e: Error) => {
    // What the last answer said: which of the two never came.
    throw new Error(`${e.message}; last status: agents ${JSON.stringify(last?.agents)}, machines ${JSON.stringify(last?.machines)}, plans ${JSON.stringify(last?.maintenance_plans)}`);
  });
  assert.equal(status.master?.leader, master.address);
  assert.deepEqual(status.master?.standbys, []);
  assert.deepEqual(status.drains.map((d) => [d.hostname, d.state, d.remaining_tasks]), [['st-a', 'DRAINED', 0]]);
  assert.equal(typeof status.drains[0]?.age_seconds, 'number');
  assert.deepEqual(status.maintenance_plans.in_progress.map((p) => [p.name, p.steps.total]), [['st', 1]]);
  assert.equal(status.scheduler_plans, undefined, 'no scheduler named: none asked');

  // The screen, plain on a pipe.
  const text = await drydock(t, master, ['status']);
  assert.equal(text.code, 0, text.stderr);
  assert.ok(text.stdout.startsWith(`master    ${master.address} (`), text.stdout);
  assert.match(text.stdout, /\nagents {4}\d active, \d deactivated, \d draining, 1 drained, /);
  assert.match(text.stdout, /\nmachines  \d UP, \d DRAINING, \d DOWN\n/);
  assert.match(text.stdout, /\ndrains\nAGENT +HOSTNAME +STATE +AGE +TASKS +WAITING FOR\n\S+-S\d+ +st-a +DRAINED /);
  assert.match(text.stdout, /\nmaintenance plans\nPLAN +STATUS +STEPS +WAITING\nst +\S+ +0\/1 COMPLETE/);
  assert.ok(!text.stdout.includes('\u001b'), 'no colour on a pipe');

  // Colour: FORCE_COLOR paints; NO_COLOR and --no-color win over it.
  assert.ok((await drydock(t, master, ['status'], { FORCE_COLOR: '1' })).stdout.includes('\u001b[32m'));
  assert.ok(!(await drydock(t, master, ['status'], { FORCE_COLOR: '1', NO_COLOR: '1' })).stdout.includes('\u001b'));
  assert.ok(!(await drydock(t, master, ['--no-color', 'status'], { FORCE_COLOR: '1' })).stdout.includes('\u001b'));

  // A scheduler that is not there: its part is `?` and named, the rest is shown, exit 0.
  const sched = await drydock(t, master, ['status', '--json', '--scheduler', '127.0.0.1:1']);
  assert.equal(sched.code, 0, sched.stderr);
  const withSched = JSON.parse(sched.stdout) as ClusterStatus;
  assert.equal(withSched.scheduler_plans?.scheduler, 'http://127.0.0.1:1');
  assert.match(withSched.errors.join('\n'), /scheduler plans at http:\/\/127\.0\.0\.1:1: cannot reach/);
  const bad = await drydock(t, master, ['status', '--scheduler', 'a b']);
  assert.equal(bad.code, 2, 'a bad --scheduler is a usage error');

  // reactivate --json: the agent is no longer draining.
  const re = await drydock(t, master, ['agent', 'reactivate', 'st-a', '--json']);
  assert.equal(re.code, 0, re.stderr);
  const back = JSON.parse(re.stdout) as AgentCallJson;
  assert.deepEqual([back.call, back.agent?.drain, back.agent?.state], ['REACTIVATE_AGENT', undefined, 'ACTIVE']);

  // drain --wait --json: one compact object a line, each change; the outcome on stderr.
  const waited = await drydock(t, master, ['agent', 'drain', 'st-a', '--wait', '--json']);
  assert.equal(waited.code, 0, waited.stderr);
  const lines = waited.stdout.trim().split('\n').map((l) => JSON.parse(l) as AgentCallJson);
  assert.ok(lines.length >= 1 && lines.every((l) => l.call === 'DRAIN_AGENT' && l.hostname === 'st-a'), waited.stdout);
  assert.equal(lines.at(-1)?.agent?.drain?.state, 'DRAINED');
  assert.match(waited.stderr, /st-a is DRAINED\n$/);

  // No master: the command's failure, exit 1, nothing on stdout.
  const none = await cliFinished(spawnCli(t, ['--master=127.0.0.1:1', 'status', '--json'], PLAIN));
  assert.deepEqual([none.code, none.stdout], [1, '']);
  assert.match(none.stderr, /^drydock: /);
});

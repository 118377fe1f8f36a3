import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentConfig, detectedResources, resolveAgentFlags, type MachineProbe } from '../../agent/config.js';

const probe: MachineProbe = {
  primaryIpv4: async () => '10.1.2.3',
  facts: async () => ({ cpus: 8, memBytes: 16 * 2 ** 30, diskBytes: 100 * 2 ** 30 }),
};

test('flag errors name the flag', () => {
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [[], {}, /--master/],
    [['--master=h:1', '--bogus'], {}, /Unknown flag '--bogus'/],
    [['--master=nohost'], {}, /--master: expected host:port/],
    [['--master=h:1', '--resources=cpus:x'], {}, /--resources/],
    [['--master=h:1', '--attributes=rack'], {}, /--attributes/],
    [['--master=h:1', '--port=70000'], {}, /--port/],
    [['--master=h:1', '--registration_backoff_factor=soon'], {}, /--registration_backoff_factor/],
    [['--master=h:1', '--log_level=loud'], {}, /--log_level/],
    [['--master=h:1', '--priority_boost=40'], {}, /--priority_boost/],
    [['--master=h:1', '--priority_boost=-1'], {}, /--priority_boost/],
    [['--master=h:1'], { DRYDOCK_PORT: 'x' }, /DRYDOCK_PORT/],
  ];
  for (const [argv, env, want] of cases) {
    const r = resolveAgentFlags(argv, env);
    assert.equal(r.kind, 'error', argv.join(' '));
    if (r.kind === 'error') assert.match(r.error, want);
  }
});

test('flags come from the environment, the command line wins', async () => {
  const r = resolveAgentFlags(['--port=6000', '--registration_backoff_factor=10ms'], { DRYDOCK_MASTER: 'm:5050', DRYDOCK_PORT: '7000', DRYDOCK_HOSTNAME: 'box' });
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  const c = await agentConfig(r.values, probe);
  assert.equal(c.master, 'm:5050');
  assert.equal(c.port, 6000);
  assert.equal(c.hostname, 'box');
  assert.equal(c.ip, '10.1.2.3');
  assert.equal(c.registrationBackoffFactorMs, 10);
  assert.equal(c.statusUpdateRetryIntervalMs, 10_000);
  assert.equal(c.priorityBoost, 5);
  assert.equal(c.workDir, '/var/lib/drydock/agent');
  assert.ok(Object.isFrozen(c));
});

test('resources: detection fills what --resources leaves out, minus the system reservation', async () => {
  assert.deepEqual(detectedResources({ cpus: 2, memBytes: 1024 * 2 ** 20, diskBytes: 4096 * 2 ** 20 }).map((r) => r.scalar?.value ?? r.ranges), [
    2, 512, 2048, { range: [{ begin: 31000, end: 32000 }] },
  ]);
  const r = resolveAgentFlags(['--master=m:1', '--resources=cpus:3;gpus:1', '--ip=127.0.0.1'], {});
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  const c = await agentConfig(r.values, probe);
  assert.deepEqual(
    c.resources.map((x) => [x.name, x.scalar?.value]),
    [['cpus', 3], ['gpus', 1], ['mem', 16 * 1024 - 1024], ['disk', 100 * 1024 - 5120], ['ports', undefined]],
  );
  assert.equal(c.ip, '127.0.0.1');
});

test('--help is not an error', () => {
  const r = resolveAgentFlags(['--help'], {});
  assert.equal(r.kind, 'help');
  if (r.kind === 'help') assert.match(r.text, /--work_dir/);
});

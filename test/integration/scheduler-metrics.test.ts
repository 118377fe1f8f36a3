/**
 * The service scheduler's `/metrics` end to end (issue 14): a real master and agent, a
 * drydock-scheduler deploying a small service. The exposition parses, the deploy plan's steps
 * reach COMPLETE in `drydock_scheduler_plan_steps`, tasks and offers are counted; with
 * `--authenticate_http_readonly` the route wants a credential like every other read.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { EVENT_DEADLINE_MS, eventually, startAgent, startMaster, startScheduler, tempDir } from '../helpers/daemons.js';
import { sampleValue, scrapeMetrics, type Exposition } from '../helpers/exposition.js';

const SPEC = `name: hello
pods:
  hello:
    count: 2
    tasks:
      server:
        cmd: 'touch ready; exec sleep 1000'
        cpus: 0.1
        memory: 16
        kill-grace-period: 1
        readiness-check: { cmd: 'test -f ready', interval: 0.1, delay: 0, timeout: 5 }
plans:
  deploy:
    strategy: serial
    phases:
      hello-deploy: { pod: hello, strategy: serial }
`;

test('scheduler /metrics: deploy steps reach COMPLETE, tasks and offers counted', { timeout: 180_000 }, async (t) => {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: master.address, resources: 'cpus:2;mem:1024', stopSignal: 'SIGUSR1' });
  const dir = tempDir(t, 'drydock-sched-metrics-');
  const spec = join(dir, 'hello.yml');
  writeFileSync(spec, SPEC);
  const s = await startScheduler(t, { master: master.address, spec, flags: ['--offer_hold=200ms'] });

  let last: Exposition | undefined;
  const done = await eventually(async () => {
    last = await scrapeMetrics(`${s.url}/metrics`);
    return sampleValue(last, 'drydock_scheduler_plan_steps', { plan: 'deploy', status: 'COMPLETE' }) === 2 ? last : undefined;
  }, undefined, 200, 'the deploy plan COMPLETE').catch((e: Error) => {
    throw new Error(`${e.message}; last plan_steps: ${JSON.stringify(last?.samples.filter((x) => x.name === 'drydock_scheduler_plan_steps' && x.value > 0))}`);
  });
  for (const x of done.samples.filter((x) => x.name.startsWith('drydock_scheduler_'))) assert.equal(x.labels['daemon'], 'scheduler', x.name);
  assert.equal(done.types.get('drydock_scheduler_plan_steps'), 'gauge');
  assert.equal(sampleValue(done, 'drydock_scheduler_plan_steps', { plan: 'deploy', status: 'PENDING' }), 0);
  assert.equal(sampleValue(done, 'drydock_scheduler_plan_status', { plan: 'deploy', status: 'COMPLETE' }), 1);
  assert.equal(sampleValue(done, 'drydock_scheduler_subscribed'), 1);
  assert.equal(sampleValue(done, 'drydock_scheduler_subscriptions_total'), 1);
  assert.equal(sampleValue(done, 'drydock_scheduler_reconnections_total'), 0);
  assert.equal(sampleValue(done, 'drydock_scheduler_tasks', { state: 'TASK_RUNNING' }), 2);
  assert.equal(sampleValue(done, 'drydock_scheduler_pod_instances', { pod: 'hello' }), 2);
  assert.ok(sampleValue(done, 'drydock_scheduler_offers_received_total')! >= 1);
  // Serial: one ACCEPT per step (two steps), each launching one task.
  assert.equal(sampleValue(done, 'drydock_scheduler_offers_accepted_total'), 2);
  assert.equal(sampleValue(done, 'drydock_scheduler_tasks_launched_total'), 2);
  assert.equal(sampleValue(done, 'drydock_scheduler_inverse_offers_total', { answer: 'accepted' }), 0);

  // Only GET.
  const post = await fetch(`${s.url}/metrics`, { method: 'POST', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(post.status, 405);
});

test('scheduler /metrics is a read: --authenticate_http_readonly wants a credential', { timeout: 60_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-sched-metrics-auth-');
  const spec = join(dir, 'hello.yml');
  writeFileSync(spec, SPEC);
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: [{ principal: 'ops', secret: 'ops-secret' }] }));
  chmodSync(credentials, 0o600);
  // No master at all: the API serves while the scheduler retries subscribing.
  const s = await startScheduler(t, { master: '127.0.0.1:1', spec, flags: [`--credentials=${credentials}`, '--authenticate_http_readonly'] });

  const anonymous = await fetch(`${s.url}/metrics`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(anonymous.status, 401);
  assert.match(anonymous.headers.get('www-authenticate') ?? '', /realm="drydock-scheduler"/);
  const wrong = await fetch(`${s.url}/metrics`, { headers: { authorization: `Basic ${Buffer.from('ops:nope').toString('base64')}` }, signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(wrong.status, 401);
  const e = await scrapeMetrics(`${s.url}/metrics`, { authorization: `Basic ${Buffer.from('ops:ops-secret').toString('base64')}` });
  assert.equal(sampleValue(e, 'drydock_scheduler_subscribed'), 0);
  assert.equal(sampleValue(e, 'drydock_scheduler_plan_steps', { plan: 'deploy', status: 'PENDING' }), 2);
});

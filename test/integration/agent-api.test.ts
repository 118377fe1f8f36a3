import { test } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { callApi, eventually, startAgent } from '../helpers/daemons.js';
import { agentWorkDir, shellTask, startFakeMaster } from '../helpers/fake-master.js';

type Lists = Record<'pending_tasks' | 'queued_tasks' | 'launched_tasks' | 'terminated_tasks' | 'completed_tasks', Array<{ task_id: { value: string }; state: string; framework_id: { value: string }; agent_id: { value: string } }>>;

async function taskLists(url: string): Promise<Lists> {
  const r = await callApi(url, { type: 'GET_TASKS' });
  assert.equal(r.status, 200);
  const body = r.json as { type: string; get_tasks: Lists };
  assert.equal(body.type, 'GET_TASKS');
  return body.get_tasks;
}

test('agent API: GET_TASKS moves a task launched → terminated → completed; GET_CONTAINERS; GET_AGENT', async (t) => {
  const master = await startFakeMaster(t);
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t), flags: ['--attributes=rack:a;zone:1'] });
  await master.waitForRegister();

  const empty = await taskLists(agent.url);
  assert.deepEqual(Object.keys(empty).sort(), ['completed_tasks', 'launched_tasks', 'pending_tasks', 'queued_tasks', 'terminated_tasks']);
  assert.ok(Object.values(empty).every((l) => l.length === 0));

  master.runTask(shellTask('api', 'sleep 60'));
  const starting = await master.waitForUpdate('api', 'TASK_STARTING');
  master.ack(starting);
  master.ack(await master.waitForUpdate('api', 'TASK_RUNNING'));
  const launched = await eventually(async () => {
    const l = await taskLists(agent.url);
    return l.launched_tasks[0]?.state === 'TASK_RUNNING' ? l : undefined;
  });
  assert.equal(launched.launched_tasks[0]?.framework_id.value, 'fw-test');
  assert.equal(launched.launched_tasks[0]?.agent_id.value, agent.agentId);

  const c = await callApi(agent.url, { type: 'GET_CONTAINERS' });
  assert.equal(c.status, 200);
  const containers = (c.json as { get_containers: { containers: Array<Record<string, unknown>> } }).get_containers.containers;
  assert.equal(containers.length, 1);
  const [container] = containers;
  assert.deepEqual(container?.['executor_id'], { value: 'api' });
  assert.equal(container?.['executor_name'], "Command Executor (Task: api) (Command: sh -c 'sleep 60')");
  assert.deepEqual(container?.['container_status'], { container_id: container?.['container_id'], executor_pid: (container?.['container_status'] as { executor_pid: number }).executor_pid });
  const stats = container?.['resource_statistics'] as Record<string, number>;
  assert.ok((stats['mem_rss_bytes'] ?? 0) > 0);
  assert.ok((stats['timestamp'] ?? 0) > 1e9);
  assert.equal(stats['cpus_limit'], 0.1, "the task's cpus");
  assert.equal(stats['cpu_usage_percent'], undefined, "Drydock's CPU percent is not a Mesos field: /drydock/v1/containers has it");
  const own = await fetch(`${agent.url}/drydock/v1/containers`);
  assert.equal(own.status, 200);
  const ownContainers = ((await own.json()) as { containers: Array<Record<string, unknown>> }).containers;
  assert.equal(ownContainers.length, 1);
  assert.equal(ownContainers[0]?.['task_id'], 'api');
  assert.equal(typeof ownContainers[0]?.['cpu_usage_percent'], 'number');
  assert.equal(ownContainers[0]?.['pid'], (container?.['container_status'] as { executor_pid: number }).executor_pid);

  master.killTask('api', 0);
  const killing = await master.waitForUpdate('api', 'TASK_KILLING');
  master.ack(killing);
  const killed = await master.waitForUpdate('api', 'TASK_KILLED');
  const terminated = await eventually(async () => {
    const l = await taskLists(agent.url);
    return l.terminated_tasks.length === 1 ? l : undefined;
  });
  assert.equal(terminated.launched_tasks.length, 0);
  master.ack(killed);
  const completed = await eventually(async () => {
    const l = await taskLists(agent.url);
    return l.completed_tasks.length === 1 ? l : undefined;
  });
  assert.equal(completed.terminated_tasks.length, 0);
  assert.equal(completed.completed_tasks[0]?.state, 'TASK_KILLED');

  const a = await callApi(agent.url, { type: 'GET_AGENT' });
  assert.deepEqual((a.json as { get_agent: { agent_info: Record<string, unknown> } }).get_agent.agent_info, {
    hostname: 'agent-test',
    port: agent.port,
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 4 } },
      { name: 'mem', type: 'SCALAR', scalar: { value: 4096 } },
      { name: 'disk', type: 'SCALAR', scalar: { value: 10000 } },
      { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } },
    ],
    attributes: [
      { name: 'rack', type: 'TEXT', text: { value: 'a' } },
      { name: 'zone', type: 'SCALAR', scalar: { value: 1 } },
    ],
    id: { value: agent.agentId },
  });
  const ops = await callApi(agent.url, { type: 'GET_OPERATIONS' });
  assert.equal(ops.text, '{"type":"GET_OPERATIONS","get_operations":{}}');
});

test('agent API framing errors', async (t) => {
  const master = await startFakeMaster(t);
  const agent = await startAgent(t, { master: master.address, workDir: agentWorkDir(t) });
  const health = await fetch(`${agent.url}/health`);
  assert.deepEqual(await health.json(), { healthy: true });

  const get = await fetch(`${agent.url}/api/v1`);
  assert.equal(get.status, 405);
  assert.equal(get.headers.get('allow'), 'POST');
  assert.equal(await get.text(), "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'.");

  const cases: Array<[unknown, Record<string, string>, number, string | RegExp]> = [
    [{ type: 'GET_HEALTH' }, { 'content-type': 'text/xml' }, 415, /Expecting 'Content-Type' of application\/json/],
    ['{nope', { 'content-type': 'application/json' }, 400, /^Failed to parse body into JSON: /],
    [{}, { 'content-type': 'application/json' }, 400, "Failed to validate agent::Call: Expecting 'type' to be present"],
    [{ type: 'NOT_A_CALL' }, { 'content-type': 'application/json' }, 400, "Failed to validate agent::Call: Expecting 'type' to be present"],
    [{ type: 'GET_HEALTH' }, { 'content-type': 'application/json', accept: 'text/html' }, 406, "Expecting 'Accept' to allow application/json or application/x-protobuf or application/recordio"],
    [{ type: 'GET_HEALTH' }, { 'content-type': 'application/json; charset=utf-8' }, 200, '{"type":"GET_HEALTH","get_health":{"healthy":true}}'],
    ['x'.repeat(2 * 1024 * 1024), { 'content-type': 'application/json' }, 413, /larger than/],
  ];
  for (const [body, headers, status, text] of cases) {
    const r = await callApi(agent.url, body, headers);
    assert.equal(r.status, status, `${JSON.stringify(headers)} ${String(body).slice(0, 40)} → ${r.status} ${r.text}`);
    if (typeof text === 'string') assert.equal(r.text, text);
    else assert.match(r.text, text);
  }
  // fetch always adds a Content-Type to a body, so the missing one is sent with node:http.
  const missing = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = request(`${agent.url}/api/v1`, { method: 'POST' }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c: string) => (text += c)).on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end('{"type":"GET_HEALTH"}');
  });
  assert.deepEqual(missing, { status: 400, text: "Expecting 'Content-Type' to be present" });
  // The daemon is still fine.
  assert.equal((await callApi(agent.url, { type: 'GET_HEALTH' })).status, 200);
});

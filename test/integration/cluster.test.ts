/**
 * `npm start`'s local cluster: it comes up with a master and agents on distinct loopback
 * addresses, answers the calls it prints, and Ctrl-C (SIGINT) stops every process it started.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, alive, callApi, EVENT_DEADLINE_MS, eventually, tempDir } from '../helpers/daemons.js';
import { freePort } from '../helpers/ports.js';

test('npm start: a local cluster that Ctrl-C stops completely', { timeout: 240_000 }, async (t) => {
  const workDir = tempDir(t, 'drydock-cluster-');
  const port = await freePort();
  const agentPort = await freePort('127.0.0.2');
  const child = spawn(process.execPath, [join(ROOT, 'dist', 'scripts', 'cluster.js'), '--agents=2', `--port=${port}`, `--agent_port=${agentPort}`, `--work_dir=${workDir}`, '--quiet'], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  child.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const pids: number[] = [];
  t.after(async () => {
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
    if (child.exitCode === null) child.kill('SIGKILL');
  });

  await eventually(() => (out.includes('Drydock is up.') ? true : undefined), 45_000, 100, `the cluster banner; output so far: ${out}`);
  for (const m of out.matchAll(/ pid (\d+) /g)) pids.push(Number(m[1]));
  assert.equal(pids.length, 3, `a master and two agents in the banner:\n${out}`);
  assert.ok(pids.every(alive));
  assert.match(out, new RegExp(`http://127\\.0\\.0\\.3:${agentPort}`));

  const agents = await callApi(`http://127.0.0.1:${port}`, { type: 'GET_AGENTS' });
  assert.equal(agents.status, 200);
  const list = (agents.json as { get_agents: { agents: Array<{ agent_info: { hostname: string }; active: boolean }> } }).get_agents.agents;
  assert.deepEqual(list.map((a) => a.agent_info.hostname).sort(), ['agent-1', 'agent-2']);
  assert.ok(list.every((a) => a.active));
  // The master has the README's hook: a plan naming it reads (and then selects no machine here, so nothing runs).
  const plan = await fetch(`http://127.0.0.1:${port}/v1/maintenance/plans`, {
    method: 'POST',
    body: JSON.stringify({ name: 'readme-hook', machines: { attributes: { zone: 'nowhere' } }, window: '1hrs', on_down: { hook: 'patch', timeout: '1mins' } }),
    signal: AbortSignal.timeout(EVENT_DEADLINE_MS),
  });
  assert.deepEqual([plan.status, await plan.text()], [400, 'Maintenance plan selects no usable machines: the selection matches no machine the master knows']);
  const agentHealth = await fetch(`http://127.0.0.2:${agentPort}/health`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(agentHealth.status, 200);

  // Machine DOWN shuts agent-1 down (exit 0): the rest of the cluster goes on. Once the machine
  // is up, SIGUSR2 starts the stopped agent again and it registers.
  const machine = JSON.stringify([{ hostname: 'agent-1', ip: '127.0.0.2' }]);
  const post = (path: string, body: string): Promise<Response> =>
    fetch(`http://127.0.0.1:${port}${path}`, { method: 'POST', body, signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  const schedule = { windows: [{ machine_ids: [{ hostname: 'agent-1', ip: '127.0.0.2' }], unavailability: { start: { nanoseconds: 1443830400000000000 } } }] };
  assert.equal((await post('/maintenance/schedule', JSON.stringify(schedule))).status, 200);
  assert.equal((await post('/machine/down', machine)).status, 200);
  await eventually(() => (out.includes('cluster: agent-1 exited (code 0)') ? true : undefined), undefined, 100, 'agent-1 to exit');
  assert.equal((await callApi(`http://127.0.0.1:${port}`, { type: 'GET_HEALTH' })).status, 200, 'the master is still up');
  assert.equal((await post('/machine/up', machine)).status, 200);
  child.kill('SIGUSR2');
  await eventually(async () => {
    const r = await callApi(`http://127.0.0.1:${port}`, { type: 'GET_AGENTS' });
    const hosts = (r.json as { get_agents: { agents: Array<{ agent_info: { hostname: string }; active: boolean }> } }).get_agents.agents.filter((a) => a.active).map((a) => a.agent_info.hostname);
    return hosts.includes('agent-1') ? true : undefined;
  }, undefined, 100, 'agent-1 to register again');
  const again = /started agent-1 again, pid (\d+)/.exec(out);
  assert.ok(again !== null, out);
  pids.push(Number(again[1]));
  const restarted = await callApi(`http://127.0.0.1:${port}`, { type: 'GET_AGENTS' });
  for (const a of (restarted.json as { get_agents: { agents: Array<{ pid: string }> } }).get_agents.agents) assert.ok(a.pid.startsWith('slave(1)@127.0.0.'));

  child.kill('SIGINT');
  const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('timeout'), 40_000))]);
  assert.equal(code, 0, out);
  assert.match(out, /cluster: stopped\./);
  for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} is gone`);
});

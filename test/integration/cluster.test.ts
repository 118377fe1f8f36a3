/**
 * `npm start`'s local cluster: it comes up with a master and agents on distinct loopback
 * addresses, answers the calls it prints, and Ctrl-C (SIGINT) stops every process it started.
 * Through npm itself, SIGINT and SIGTERM to npm's pid stop it the same way, and a killed npm
 * takes it along; a killed cluster takes its daemons, their tasks and its secrets along. A
 * second start on the same work dir or master port refuses and leaves the first alone, and a
 * DRAINED agent counts as registered when the cluster starts again.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, alive, callApi, EVENT_DEADLINE_MS, eventually, tempDir } from '../helpers/daemons.js';
import { CLEAN_CLIENT_ENV, startCluster } from '../helpers/cluster.js';
import { spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';

const CLUSTER_JS = join(ROOT, 'dist', 'scripts', 'cluster.js');

/** Running: there, and not a zombie waiting for whoever inherited it to reap it. */
function running(pid: number): boolean {
  try {
    return !/\) [ZX] /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** The parent pid of a process (Linux /proc). */
function ppidOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Waits (bounded) until none of `pids` runs. */
async function allGone(pids: readonly number[], timeoutMs: number, what: string): Promise<void> {
  const described = (pid: number): string => {
    try {
      return `${pid} (${readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim().slice(0, 120)}; ${readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.slice(0, 1)})`;
    } catch {
      return String(pid);
    }
  };
  try {
    await eventually(() => (pids.some(running) ? undefined : true), timeoutMs, 100, what);
  } catch (e) {
    // Which process stayed, and in what state, named when the wait runs out.
    throw new Error(`${(e as Error).message}: still running: ${pids.filter(running).map(described).join(', ')}`);
  }
}

/** Resolves with what `p` resolves to, or rejects after `ms`. */
async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms} ms`)), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

interface Child {
  readonly child: ChildProcess;
  stdout(): string;
  stderr(): string;
  output(): string;
  /** The exit code, or the signal that ended it. */
  readonly exited: Promise<number | NodeJS.Signals | null>;
}

/** Starts a program with the test's environment (no DRYDOCK_ variables), its output collected, SIGKILLed at the end if still running. */
function spawnLogged(t: { after(fn: () => unknown): void }, file: string, args: readonly string[]): Child {
  const child = spawn(file, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...CLEAN_CLIENT_ENV } as NodeJS.ProcessEnv });
  let out = '';
  let err = '';
  let all = '';
  child.stdout?.setEncoding('utf8').on('data', (c: string) => ((out += c), (all += c)));
  child.stderr?.setEncoding('utf8').on('data', (c: string) => ((err += c), (all += c)));
  const exited = new Promise<number | NodeJS.Signals | null>((r) => child.on('exit', (code, signal) => r(code ?? signal)));
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return { child, stdout: () => out, stderr: () => err, output: () => all, exited };
}

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
  // Its pid, for kill -USR2 and friends, in the banner and in <work_dir>/cluster.pid.
  assert.equal(readFileSync(join(workDir, 'cluster.pid'), 'utf8'), `${child.pid}\n`);
  assert.match(out, new RegExp(`This cluster is process ${child.pid} \\(also in ${workDir}/cluster\\.pid\\)`));
  assert.equal(pids.length, 3, `a master and two agents in the banner:\n${out}`);
  assert.ok(pids.every(alive));
  assert.match(out, new RegExp(`http://127\\.0\\.0\\.3:${agentPort}`));

  const agents = await callApi(`http://127.0.0.1:${port}`, { type: 'GET_AGENTS' });
  assert.equal(agents.status, 200);
  const list = (agents.json as { get_agents: { agents: Array<{ agent_info: { hostname: string }; active: boolean }> } }).get_agents.agents;
  assert.deepEqual(list.map((a) => a.agent_info.hostname).sort(), ['agent-1', 'agent-2']);
  assert.ok(list.every((a) => a.active));
  // The master has the hook of docs/maintenance.md's plan example: a plan naming it reads (and then selects no machine here, so nothing runs).
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
  assert.equal(existsSync(join(workDir, 'cluster.pid')), false, 'the pid file goes with the cluster');
});

interface AgentsJson {
  get_agents: { agents: Array<{ agent_info: { hostname: string; id: { value: string } }; active: boolean; deactivated: boolean; drain_info?: { state: string } }> };
}

test('npm start through npm: SIGINT and SIGTERM to npm stop it as Ctrl-C does, a SIGKILLed npm takes it along; a second start refuses and leaves it alone; a DRAINED agent counts as registered', { timeout: 300_000 }, async (t) => {
  const workDir = tempDir(t, 'drydock-npm-start-');
  const port = await freePort();
  const agentPort = await freePort('127.0.0.2');
  const master = `http://127.0.0.1:${port}`;
  const args = ['--agents=2', `--port=${port}`, `--agent_port=${agentPort}`, `--work_dir=${workDir}`, '--quiet'];
  const started = new Set<number>();
  t.after(() => {
    for (const pid of started) if (running(pid)) process.kill(pid, 'SIGKILL');
  });
  const agents = async (): Promise<AgentsJson['get_agents']['agents']> => ((await callApi(master, { type: 'GET_AGENTS' })).json as AgentsJson).get_agents.agents;

  /** `npm start -- ARGS` until its banner: npm, the cluster (npm's own child) and the daemons. */
  const npmStart = async (): Promise<{ npm: Child; pids: number[] }> => {
    const npm = spawnLogged(t, 'npm', ['start', '--', ...args]);
    await eventually(() => (/Drydock (is up|started)/.test(npm.output()) ? true : undefined), 60_000, 100, `the cluster banner; output so far: ${npm.output()}`);
    const cluster = Number(readFileSync(join(workDir, 'cluster.pid'), 'utf8'));
    const daemons = [...npm.output().matchAll(/ pid (\d+) /g)].map((m) => Number(m[1]));
    for (const pid of [cluster, ...daemons]) started.add(pid);
    assert.equal(daemons.length, 3, `a master and two agents in the banner:\n${npm.output()}`);
    // No shell between npm and the cluster: npm's forwarded signals reach the cluster itself.
    assert.equal(ppidOf(cluster), npm.child.pid);
    assert.match(npm.output(), new RegExp(`This cluster is process ${cluster} `));
    return { npm, pids: [cluster, ...daemons] };
  };
  const stopped = async (npm: Child, pids: number[], signal: NodeJS.Signals): Promise<void> => {
    npm.child.kill(signal);
    assert.equal(await within(npm.exited, 60_000, `npm to exit after ${signal}`), signal === 'SIGKILL' ? 'SIGKILL' : 0, npm.output());
    await allGone(pids, 60_000, `after ${signal} to npm`);
    // Its last lines may still be in the pipe (the cluster shares npm's).
    await eventually(() => (npm.output().includes('cluster: stopped.') ? true : undefined), EVENT_DEADLINE_MS, 50, `the cluster's last line; output: ${npm.output()}`);
    assert.equal(existsSync(join(workDir, 'cluster.pid')), false);
  };

  // 1. Up; agent-1 drained; a second start refuses; SIGINT to npm.
  const first = await npmStart();
  assert.match(first.npm.output(), /Drydock is up\./);
  const agent1 = (await agents()).find((a) => a.agent_info.hostname === 'agent-1');
  assert.ok(agent1 !== undefined);
  assert.equal((await callApi(master, { type: 'DRAIN_AGENT', drain_agent: { agent_id: agent1.agent_info.id } })).status, 200);
  await eventually(async () => ((await agents()).find((a) => a.agent_info.hostname === 'agent-1')?.drain_info?.state === 'DRAINED' ? true : undefined), EVENT_DEADLINE_MS, 100, 'agent-1 to be DRAINED');

  const [cluster] = first.pids;
  const log = join(workDir, 'master', 'daemon.log');
  const hooks = statSync(join(workDir, 'hooks.json')).mtimeMs;
  const again = spawnLogged(t, process.execPath, [CLUSTER_JS, ...args]);
  assert.equal(await within(again.exited, 30_000, 'the second start to exit'), 1, again.output());
  assert.equal(again.stdout(), '');
  assert.equal(
    again.stderr(),
    `cluster: a local cluster already runs in ${workDir} (pid ${cluster}, work dir ${workDir}). Nothing was started.\n` +
      `Stop it with Ctrl-C in its terminal or: kill ${cluster}; or start another one with --work_dir=DIR and other ports (--port, --agent_port).\n`,
  );
  // Another work dir on the same master port: refused too, and that dir is not even made.
  const otherDir = join(tempDir(t, 'drydock-npm-start-other-'), 'cluster');
  const elsewhere = spawnLogged(t, process.execPath, [CLUSTER_JS, '--agents=1', `--port=${port}`, `--agent_port=${agentPort}`, `--work_dir=${otherDir}`, '--quiet']);
  assert.equal(await within(elsewhere.exited, 30_000, 'the start on another dir to exit'), 1, elsewhere.output());
  assert.match(elsewhere.stderr(), new RegExp(`^cluster: a local cluster already serves 127\\.0\\.0\\.1:${port} \\(pid ${cluster}, work dir ${workDir}\\)\\. Nothing was started\\.\n`));
  assert.equal(existsSync(otherDir), false);
  // The first is untouched: still serving, its agents registered, no second master in its log, its files as they were.
  assert.equal((await callApi(master, { type: 'GET_HEALTH' })).status, 200);
  assert.deepEqual((await agents()).map((a) => [a.agent_info.hostname, a.active, a.deactivated]).sort(), [['agent-1', false, true], ['agent-2', true, false]]);
  assert.equal(readFileSync(log, 'utf8').split('\n').filter((l) => l.includes('"msg":"maintenance hooks loaded"')).length, 1);
  assert.equal(statSync(join(workDir, 'hooks.json')).mtimeMs, hooks);
  assert.equal(readFileSync(join(workDir, 'cluster.pid'), 'utf8'), `${cluster}\n`);
  assert.ok(first.pids.every(running));
  await stopped(first.npm, first.pids, 'SIGINT');

  // 2. Again on the same registry: the DRAINED agent-1 registers deactivated, and counts (no 30 s wait, no warning). SIGTERM to npm.
  const second = await npmStart();
  assert.match(second.npm.output(), /Drydock is up\./);
  assert.doesNotMatch(second.npm.output(), /did not register/);
  assert.deepEqual((await agents()).map((a) => [a.agent_info.hostname, a.deactivated]).sort(), [['agent-1', true], ['agent-2', false]]);
  await stopped(second.npm, second.pids, 'SIGTERM');

  // 3. npm killed outright (it forwards nothing): the cluster sees its parent gone and stops.
  const third = await npmStart();
  await stopped(third.npm, third.pids, 'SIGKILL');
  const gone = `cluster: npm (pid ${third.npm.child.pid}) is gone; stopping the cluster.`;
  await eventually(() => (third.npm.output().includes(gone) ? true : undefined), EVENT_DEADLINE_MS, 50, `"${gone}"; output: ${third.npm.output()}`);
});

test('SIGKILL of the cluster: its daemons stop, the agents kill their tasks, and the --secure secrets are removed', { timeout: 120_000 }, async (t) => {
  const workDir = tempDir(t, 'drydock-cluster-kill-');
  const port = await freePort();
  const agentPort = await freePort('127.0.0.2');
  const run = await startCluster(t, ['--secure', '--agents=1', `--port=${port}`, `--agent_port=${agentPort}`, `--work_dir=${workDir}`, '--quiet'], 60_000);
  const out = run.output();
  assert.equal(run.pids.length, 2, `a master and an agent in the banner:\n${out}`);
  const credentials = /export DRYDOCK_CREDENTIALS=(\S+)/.exec(out)?.[1];
  const ca = /export DRYDOCK_TLS_CA_FILE=(\S+)/.exec(out)?.[1];
  assert.ok(credentials !== undefined && ca !== undefined, out);
  const secureDir = join(workDir, 'secure');
  assert.ok(existsSync(join(secureDir, 'credentials.json')));

  // A task that would run for days, found by its unique command line.
  const seconds = String(700_000 + Math.floor(Math.random() * 99_999));
  const runCli = spawnCli(t, ['run', `--master=127.0.0.1:${port}`, '--name', 'long', '--command', `exec sleep ${seconds}`], { ...CLEAN_CLIENT_ENV, DRYDOCK_CREDENTIALS: credentials, DRYDOCK_TLS_CA_FILE: ca });
  await eventually(() => (runCli.stdout.includes('TASK_RUNNING') ? true : undefined), 30_000, 100, `the task to run; drydock run said: ${runCli.stdout}${runCli.stderr}`);
  const task = await eventually(() => {
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      try {
        if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') === `sleep\0${seconds}\0`) return Number(entry);
      } catch {
        // gone meanwhile
      }
    }
    return undefined;
  }, EVENT_DEADLINE_MS, 100, 'the task process');
  t.after(() => {
    if (running(task)) process.kill(task, 'SIGKILL');
  });

  run.child.kill('SIGKILL');
  await run.exited;
  await allGone([...run.pids, task], EVENT_DEADLINE_MS * 2, 'after SIGKILL of the cluster');
  await eventually(() => (existsSync(secureDir) ? undefined : true), EVENT_DEADLINE_MS, 50, 'the secure material to be removed');
  // The janitor removes its pid file last, a moment after the material.
  await eventually(() => (existsSync(join(workDir, 'secure.janitor.pid')) ? undefined : true), EVENT_DEADLINE_MS, 50, "the janitor's pid file to be removed");
});

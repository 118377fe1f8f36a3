/**
 * `drydock run` end to end: the built CLI as a child process against a real master and real
 * agents on loopback (two agents on 127.0.0.2 and 127.0.0.3 look like two machines).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { freePort } from '../helpers/ports.js';
import { alive, eventually, startAgent, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli, type CliProcess } from '../helpers/cli.js';

/** Starts `drydock run ARGS` against `master`. */
function cliRun(t: { after(fn: () => unknown): void }, master: MasterHandle, args: readonly string[]): CliProcess {
  return startCli(t, master, ['run', ...args]);
}

async function exitCode(run: CliProcess, timeoutMs = 30_000): Promise<number | null> {
  return (await cliFinished(run, timeoutMs)).code;
}

async function cluster(t: Parameters<typeof startMaster>[0]): Promise<MasterHandle> {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'agent-a' });
  await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'agent-b' });
  return master;
}

test('drydock run: exit 0 and exit 3 come back as the CLI exit status; updates are printed', { timeout: 240_000 }, async (t) => {
  const master = await cluster(t);
  const ok = cliRun(t, master, ['--name', 'hello', '--command', 'echo hello; sleep 0.3']);
  assert.equal(await exitCode(ok), 0, ok.stderr);
  assert.match(ok.stdout, /TASK_RUNNING\s+agent-[ab]/);
  assert.match(ok.stdout, /TASK_FINISHED\s+agent-[ab]\s+Command exited with status 0/);
  assert.match(ok.stderr, /launching task hello-[0-9a-f]+ on agent-[ab]/);

  const bad = cliRun(t, master, ['--name', 'bad', '--command', 'exit 3']);
  assert.equal(await exitCode(bad), 3, bad.stderr);
  assert.match(bad.stdout, /TASK_FAILED\s+agent-[ab]\s+Command exited with status 3/);

  const json = cliRun(t, master, ['--name', 'json', '--command', 'true', '--json']);
  assert.equal(await exitCode(json), 0, json.stderr);
  const events = json.stdout.trim().split('\n').map((l) => JSON.parse(l) as { type: string; update: { status: { state: string } } });
  assert.ok(events.every((e) => e.type === 'UPDATE'));
  assert.equal(events.at(-1)?.update.status.state, 'TASK_FINISHED');
});

test('drydock run --hostname picks that agent (case-insensitive)', { timeout: 180_000 }, async (t) => {
  const master = await cluster(t);
  for (const host of ['agent-b', 'AGENT-A']) {
    const run = cliRun(t, master, ['--name', 'where', '--command', 'true', '--hostname', host]);
    assert.equal(await exitCode(run), 0, run.stderr);
    const lines = run.stdout.trim().split('\n');
    assert.ok(lines.length >= 2, run.stdout);
    for (const line of lines) assert.match(line, new RegExp(`\\s${host.toLowerCase()}(\\s|$)`), line);
  }
});

test('drydock run: SIGINT kills the task (TASK_KILLED, exit 143) and the process is gone', { timeout: 240_000 }, async (t) => {
  const master = await cluster(t);
  const run = cliRun(t, master, ['--name', 'sleeper', '--command', 'exec sleep 60', '--grace_period', '5secs', '--hostname', 'agent-a']);
  await eventually(() => (/TASK_RUNNING/.test(run.stdout) ? true : undefined), undefined, 50, 'TASK_RUNNING printed');
  const taskId = /launching task (\S+)/.exec(run.stderr)?.[1];
  assert.ok(taskId !== undefined, run.stderr);
  const pid = await eventually(() => taskPidFromProc(taskId), undefined, 50, 'the task process');
  assert.ok(pid !== undefined && alive(pid), 'the task process runs');
  run.child.kill('SIGINT');
  assert.equal(await exitCode(run), 143, run.stderr);
  assert.match(run.stdout, /TASK_KILLED\s+agent-a\s+Command terminated with signal Terminated/);
  assert.match(run.stderr, /SIGINT: killing task/);
  await eventually(() => (alive(pid) ? undefined : true), undefined, 50, 'the task process to be gone');
});

test('drydock run: no matching offer within --offer_timeout is exit 125 (run\'s own failure) naming what was asked', { timeout: 180_000 }, async (t) => {
  const master = await cluster(t);
  const run = cliRun(t, master, ['--name', 'nowhere', '--command', 'true', '--hostname', 'nosuch', '--cpus', '0.5', '--offer_timeout', '1secs']);
  assert.equal(await exitCode(run), 125);
  assert.match(run.stderr, /no offer matching hostname nosuch, cpus 0.5, mem 32 MB within 1 s/);
  assert.equal(run.stdout, '');
});

test('drydock run: bad flags and an unreachable master are one-line errors with exit 125, never a status a task could have', { timeout: 60_000 }, async (t) => {
  // A port nobody listens on (port 1 would be refused by fetch itself as a "bad port").
  const fake = { address: `127.0.0.1:${await freePort()}` } as MasterHandle;
  const cases: Array<[string[], RegExp, boolean]> = [
    [['--name', 'x', '--command', 'true', '--cpus', 'many'], /--cpus must be a positive number, got 'many'/, true],
    [['--name', 'x', '--command', 'true', '--grace_period', '3'], /--grace_period: Invalid duration '3'/, true],
    [['--name', 'x', '--command', 'true', '--no-such-flag'], /unknown option '--no-such-flag'/, true],
    [['--command', 'true'], /required option '--name <name>' not specified/, true],
    [['--name', 'x', '--command', 'true'], /cannot reach the master at 127\.0\.0\.1:\d+ \(ECONNREFUSED\); set --master or DRYDOCK_MASTER/, false],
  ];
  for (const [args, message, usage] of cases) {
    const run = cliRun(t, fake, args);
    assert.equal(await exitCode(run), 125, args.join(' '));
    assert.match(run.stderr, message);
    // A usage error is its one line and the pointer to run's help; the others one line.
    const lines = run.stderr.trim().split('\n');
    assert.deepEqual(lines.slice(1), usage ? ["Run 'drydock run --help' for usage."] : [], run.stderr);
  }
});

/** The pid of the process whose environment has DRYDOCK_TASK_ID=taskId (the task's shell, exec'd into sleep). */
function taskPidFromProc(taskId: string): number | undefined {
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid)) continue;
    try {
      const env = readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
      const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
      if (comm === 'sleep' && env.includes(`DRYDOCK_TASK_ID=${taskId}`)) return pid;
    } catch {
      // gone, or not ours to read
    }
  }
  return undefined;
}

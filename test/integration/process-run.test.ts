/**
 * The runner of processes Node supervises itself (io/process-run.ts) on real processes, for what
 * its users other than the maintenance hooks (hook-process.test.ts) rely on: a daemon's stop
 * signal to the process alone (an agent's SIGUSR1 must not reach its launch server), `exited`
 * before `ended` while a child it left holds the output, the grace's SIGKILL to the group, a
 * check command's SIGKILL at once, its group killed when it exits, and a program that cannot
 * start. Bounds are generous: the machine may be loaded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { systemClock } from '../../shared/clock.js';
import { runProcess, type ProcessRunOptions } from '../../io/process-run.js';
import { alive, eventually, EVENT_DEADLINE_MS } from '../helpers/daemons.js';

/** Gone, or a zombie nobody has reaped yet. */
function gone(pid: number): boolean {
  if (!alive(pid)) return true;
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/** A run of `sh -c script`, its output collected. */
function sh(script: string, over: Partial<ProcessRunOptions> = {}): { run: ReturnType<typeof runProcess>; out: () => string } {
  let text = '';
  const run = runProcess({
    argv: ['/bin/sh', '-c', script],
    env: { PATH: '/usr/bin:/bin' },
    extendEnv: false,
    cwd: '/',
    output: (b) => (text += b.toString('utf8')),
    stop: { signal: 'SIGTERM', target: 'group', graceMs: 30_000 },
    clock: systemClock,
    ...over,
  });
  return { run, out: () => text };
}

test('a stop to the process alone: its children keep running, the output stays open, exited comes before ended, and the grace ends the group quietly', async (t) => {
  const kills: string[] = [];
  const { run, out } = sh('trap "echo stopping; exit 0" USR1; sleep 60 & echo $!; wait', {
    stop: { signal: 'SIGUSR1', target: 'process', graceMs: 5_000 },
    onKill: () => kills.push('kill'),
  });
  let child = 0;
  t.after(() => {
    if (child > 0 && alive(child)) process.kill(child, 'SIGKILL');
  });
  child = await eventually(() => Number(out().trim().split('\n')[0]) || undefined, EVENT_DEADLINE_MS, 20, 'the background sleep\'s pid');
  assert.equal(run.state, 'running');
  run.stop();
  const exit = await run.exited;
  assert.deepEqual(exit, { code: 0, signal: null });
  assert.equal(run.state, 'exited');
  assert.ok(!gone(child), 'SIGUSR1 went to the shell only, not to its sleep');
  const end = await run.ended;
  assert.equal(end.stoppedBy, 'stop');
  assert.equal(end.code, 0);
  assert.equal(run.state, 'ended');
  await eventually(() => (gone(child) ? true : undefined), EVENT_DEADLINE_MS, 20, 'the sleep killed with the group after the grace');
  assert.deepEqual(kills, [], 'the process itself stopped: no "did not stop" news');
  assert.match(out(), /stopping/);
});

test('a process that ignores its stop signal gets SIGKILL to its group after the grace, and onKill says so', async () => {
  const kills: string[] = [];
  const { run, out } = sh('trap "" TERM; echo ready; while :; do sleep 0.05; done', {
    stop: { signal: 'SIGTERM', target: 'process', graceMs: 300 },
    onKill: () => kills.push('kill'),
  });
  // Not before the trap is set: a shell still starting would die of the SIGTERM.
  await eventually(() => (out().includes('ready') ? true : undefined), EVENT_DEADLINE_MS, 20, 'the shell ignoring SIGTERM');
  run.stop();
  const end = await run.ended;
  assert.equal(end.signal, 'SIGKILL');
  assert.equal(end.stoppedBy, 'stop');
  assert.deepEqual(kills, ['kill']);
});

test('a check command: SIGKILL to the group at once, no output opened, and whatever it leaves behind is killed when it exits', async (t) => {
  const killed = runProcess({
    argv: ['/bin/sh', '-c', 'sleep 60'], env: { PATH: '/usr/bin:/bin' }, extendEnv: false, cwd: '/', output: 'ignore',
    stop: { signal: 'SIGKILL', target: 'group', graceMs: 0 }, killGroupOnExit: true, clock: systemClock,
  });
  killed.stop();
  const end = await killed.ended;
  // Ended by the SIGKILL (not the sleep's 60 s, which would end it with code 0).
  assert.deepEqual([end.code, end.signal, end.stoppedBy, end.error], [null, 'SIGKILL', 'stop', undefined]);

  // The shell exits at once and leaves a sleep in its group, which writes its pid to a file of the test's.
  const file = `/tmp/drydock-process-run-${process.pid}`;
  t.after(() => {
    try {
      const pid = Number(readFileSync(file, 'utf8'));
      if (pid > 0 && alive(pid)) process.kill(pid, 'SIGKILL');
    } catch {
      // never written
    }
  });
  const leaver = runProcess({
    argv: ['/bin/sh', '-c', `sleep 60 & echo $! > ${file}; exit 3`], env: { PATH: '/usr/bin:/bin' }, extendEnv: false, cwd: '/', output: 'ignore',
    stop: { signal: 'SIGKILL', target: 'group', graceMs: 0 }, killGroupOnExit: true, clock: systemClock,
  });
  const left = await leaver.ended;
  assert.deepEqual([left.code, left.stoppedBy], [3, undefined]);
  const sleeper = Number(readFileSync(file, 'utf8'));
  assert.ok(sleeper > 0);
  await eventually(() => (gone(sleeper) ? true : undefined), EVENT_DEADLINE_MS, 20, 'the sleep left behind killed with the group');
});

test('a program that cannot start: exited and ended both resolve, the end says why', async () => {
  const run = runProcess({
    argv: ['/nonexistent/program'], env: {}, extendEnv: false, cwd: '/', output: 'ignore',
    stop: { signal: 'SIGTERM', target: 'group', graceMs: 100 }, clock: systemClock,
  });
  assert.deepEqual(await run.exited, { code: null, signal: null });
  const end = await run.ended;
  assert.equal(end.code, null);
  assert.match(end.error ?? '', /ENOENT/);
  run.stop();
  assert.equal(run.state, 'ended');
});

/**
 * One run of a maintenance hook's process (io/hook-process.ts) on real processes: exactly the
 * environment given, `/` as working directory, stdin empty; the output's tail; a timeout that
 * stops the whole process group (a shell's background child included), escalating to SIGKILL for
 * a group that ignores SIGTERM; stop(); and a program that cannot start. Bounds are generous: the
 * machine may be loaded.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { systemClock } from '../../shared/clock.js';
import { startHookProcess, type HookProcessOptions } from '../../io/hook-process.js';
import { alive, eventually } from '../helpers/daemons.js';

/** Gone, or a zombie nobody has reaped yet (its parent died; whether PID 1 reaps is the machine's business). */
function gone(pid: number): boolean {
  if (!alive(pid)) return true;
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

/**
 * The system clock, with its timers held until `file` exists: a hook's timeout then counts from
 * when its shell has set itself up (made the file), however late a loaded machine runs it.
 */
function heldUntil(file: string): typeof systemClock {
  return {
    now: () => systemClock.now(),
    immediate: (fn) => systemClock.immediate(fn),
    monotonicMs: () => systemClock.monotonicMs(),
    setTimer(ms, fn) {
      let timer: ReturnType<typeof systemClock.setTimer> | undefined;
      const poll = setInterval(() => {
        if (!existsSync(file)) return;
        clearInterval(poll);
        timer = systemClock.setTimer(ms, fn);
      }, 5);
      return {
        cancel: () => {
          clearInterval(poll);
          timer?.cancel();
        },
      };
    },
  };
}

/** A temp dir for a test's marker files, removed when the test ends. */
function markers(t: { after(fn: () => void): void }): string {
  const dir = mkdtempSync(`${tmpdir()}/drydock-hook-`);
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const run = (argv: string[], over: Partial<HookProcessOptions> = {}) =>
  startHookProcess({ argv, env: { PATH: '/usr/bin:/bin', ONLY: 'this' }, uid: undefined, gid: undefined, timeoutMs: 30_000, killAfterMs: 300, outputBytes: 4096, clock: systemClock, ...over });

test('exactly the environment given, in /, with stdin empty; stdout and stderr interleaved', async () => {
  process.env['DRYDOCK_TEST_SECRET'] = 'must-not-pass';
  try {
    const r = run(['/bin/sh', '-c', 'env | sort | grep -v "^PWD=\\|^SHLVL=\\|^_="; pwd; cat; echo to-stderr >&2; exit 0']);
    assert.ok((r.pid ?? 0) > 0);
    const end = await r.ended;
    assert.deepEqual(end, { status: 'succeeded', code: 0, signal: null, output: 'ONLY=this\nPATH=/usr/bin:/bin\n/\nto-stderr\n' });
  } finally {
    delete process.env['DRYDOCK_TEST_SECRET'];
  }
});

test('a non-zero exit is a failure with its code; the output kept is the tail', async () => {
  const end = await run(['/bin/sh', '-c', 'i=0; while [ $i -lt 2000 ]; do echo "line $i"; i=$((i+1)); done; exit 7'], { outputBytes: 64 }).ended;
  assert.equal(end.status, 'failed');
  assert.equal(end.code, 7);
  assert.ok(Buffer.byteLength(end.output) <= 64, `${Buffer.byteLength(end.output)} bytes`);
  assert.ok(end.output.endsWith('line 1999\n'), end.output);
});

test('the timeout stops the whole group, a background child included', async (t) => {
  // The shell says its child's pid, then that it is set up: the timeout counts from then.
  const set = `${markers(t)}/set`;
  const r = run(['/bin/sh', '-c', `sleep 60 & echo $! ; : > ${set}; wait`], { timeoutMs: 300, clock: heldUntil(set) });
  const end = await r.ended;
  assert.equal(end.status, 'timed_out');
  assert.equal(end.signal, 'SIGTERM');
  const child = Number(end.output.trim());
  assert.ok(child > 0, end.output);
  // Gone within the guard (30 s): not the sleep's 60 s.
  await eventually(() => (gone(child) ? true : undefined), undefined, 50, 'the background sleep gone too');
});

test('a group that ignores SIGTERM gets SIGKILL after killAfterMs', async (t) => {
  // The timeout counts from when the shell has set its trap.
  const set = `${markers(t)}/set`;
  const end = await run(['/bin/sh', '-c', `trap "" TERM; echo ready; : > ${set}; sleep 60; echo survived`], { timeoutMs: 300, killAfterMs: 300, clock: heldUntil(set) }).ended;
  assert.deepEqual([end.status, end.signal, end.output], ['timed_out', 'SIGKILL', 'ready\n']);
});

test('stop() ends a run as stopped; a program that cannot start fails with the reason', async () => {
  const r = run(['/bin/sleep', '60']);
  r.stop();
  r.stop();
  const end = await r.ended;
  assert.deepEqual([end.status, end.signal], ['stopped', 'SIGTERM']);
  const missing = await run(['/nonexistent/hook']).ended;
  assert.equal(missing.status, 'failed');
  assert.deepEqual([missing.code, missing.signal], [null, null]);
  assert.match(missing.output, /ENOENT/);
});

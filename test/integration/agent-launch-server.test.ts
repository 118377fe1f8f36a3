import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, constants as fsConstants, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chmodSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { launcherPath } from '../../agent/launcher.js';
import { LaunchServer, encodeLaunchRequest } from '../../agent/launch-server.js';
import { EXIT_FILE_SIZE, findLauncher, procPids, procStartTime, procStat, readLauncherEnd, signalGroup, spawnLauncher, type LaunchSpec } from '../../agent/launcher.js';
import { Logger } from '../../shared/log.js';
import { alive, eventually, EVENT_DEADLINE_MS, tempDir } from '../helpers/daemons.js';

function spec(dir: string, name: string, command: string, env: Record<string, string> = {}): LaunchSpec {
  return {
    program: '/bin/sh',
    argv: ['sh', '-c', command],
    cwd: dir,
    env: { PATH: '/usr/bin:/bin', ...env },
    stdoutPath: join(dir, `${name}.out`),
    stderrPath: join(dir, `${name}.err`),
    statusFile: join(dir, `${name}.exit.json`),
  };
}

function server(t: { after(fn: () => void): void }, lines: string[] = []): LaunchServer {
  const s = new LaunchServer(new Logger({ sink: (l) => lines.push(l) }));
  t.after(() => s.close());
  return s;
}

test('encodeLaunchRequest: length, then NUL-terminated fields with counts', () => {
  const b = encodeLaunchRequest('7', { program: 'p', argv: ['a', ''], cwd: '/c', env: { K: 'v' }, stdoutPath: 'o', stderrPath: 'e', statusFile: 's' });
  assert.equal(b.readUInt32LE(0), b.length - 4);
  assert.deepEqual(b.subarray(4).toString('utf8').split('\0'), ['7', 's', '/c', 'o', 'e', 'p', '2', 'a', '', '1', 'K=v', '']);
});

test('the launch server starts a task in its sandbox with its environment, reports its pid and how it ended', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  assert.equal(s.start(), true);
  const r = await s.launch(spec(dir, 'a', 'echo "$GREETING" from "$(pwd)"; echo oops >&2; exit 3', { GREETING: 'hello world' }));
  assert.equal(r.ok, true);
  if (!r.ok) return;
  assert.ok(r.launcherPid > 0 && r.taskPid !== undefined && r.taskPid !== r.launcherPid);
  assert.equal(await r.ended, 'exited');
  const end = readLauncherEnd(join(dir, 'a.exit.json'));
  assert.deepEqual(end && { pid: end.pid, exit_code: 'exit_code' in end ? end.exit_code : undefined }, { pid: r.taskPid, exit_code: 3 });
  assert.equal(readFileSync(join(dir, 'a.out'), 'utf8'), `hello world from ${dir}\n`);
  assert.equal(readFileSync(join(dir, 'a.err'), 'utf8'), 'oops\n');
});

test('a launcher that cannot record how its task ended tells the agent on its channel instead: through the server, and forked by the agent', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  // Its status file in a directory that does not exist: nowhere to write the end.
  const unrecordable = (name: string, command: string): LaunchSpec => ({ ...spec(dir, name, command), statusFile: join(dir, 'gone', `${name}.exit.json`) });
  for (const [how, launch] of [['server', (x: LaunchSpec) => s.launch(x)], ['agent', (x: LaunchSpec) => spawnLauncher(x)]] as const) {
    const r = await launch(unrecordable(`u-${how}`, 'exit 7'));
    assert.equal(r.ok, true, how);
    if (!r.ok) continue;
    assert.equal(await r.ended, 'exited', how);
    const report = r.report();
    assert.deepEqual(report && { pid: report.pid, exit_code: 'exit_code' in report ? report.exit_code : undefined, errno: report.errno, error: report.error }, { pid: r.taskPid, exit_code: 7, errno: 2, error: 'No such file or directory' }, how);
    assert.ok((report?.ended_ms ?? 0) > 0);
    // One it could record says nothing more.
    const ok = await launch(spec(dir, `k-${how}`, 'kill -TERM $$'));
    assert.ok(ok.ok);
    if (!ok.ok) continue;
    await ok.ended;
    assert.equal(ok.report(), undefined, how);
    const end = readLauncherEnd(join(dir, `k-${how}.exit.json`));
    assert.equal(end !== undefined && 'signal' in end ? end.signal : undefined, 15, how);
  }
});

test('the launch server: many launches at once, each answered with its own pids', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => s.launch(spec(dir, `t${i}`, `exit ${i}`))));
  const pids = new Set<number>();
  for (const [i, r] of results.entries()) {
    assert.equal(r.ok, true, `launch ${i}`);
    if (!r.ok) continue;
    assert.equal(await r.ended, 'exited');
    const end = readLauncherEnd(join(dir, `t${i}.exit.json`));
    assert.equal(end !== undefined && 'exit_code' in end ? end.exit_code : -1, i, `task ${i} exit code`);
    assert.equal(end?.pid, r.taskPid);
    pids.add(r.launcherPid);
  }
  assert.equal(pids.size, 40);
});

test('the launch server: a sandbox it cannot enter fails the launch with the reason; a program it cannot run exits 127', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  const r = await s.launch({ ...spec(dir, 'x', 'true'), cwd: join(dir, 'missing') });
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.error, /cannot enter the sandbox '.*missing': No such file or directory/);
  const n = await s.launch({ ...spec(dir, 'n', ''), program: 'no-such-program-here', argv: ['no-such-program-here'] });
  assert.equal(n.ok, true);
  if (!n.ok) return;
  await n.ended;
  const end = readLauncherEnd(join(dir, 'n.exit.json'));
  assert.equal(end !== undefined && 'exit_code' in end ? end.exit_code : -1, 127);
  assert.match(readFileSync(join(dir, 'n.err'), 'utf8'), /cannot execute 'no-such-program-here'/);
});

test('the launch server gone: its launchers are handed back as lost and their tasks keep running; launches go on', async (t) => {
  const dir = tempDir(t);
  const lines: string[] = [];
  const s = server(t, lines);
  const r = await s.launch(spec(dir, 'long', 'sleep 30'));
  assert.equal(r.ok, true);
  if (!r.ok || r.taskPid === undefined) return;
  t.after(() => void signalGroup(r.taskPid!, 'SIGKILL'));
  process.kill(serverPid(lines), 'SIGKILL');
  assert.equal(await r.ended, 'lost');
  assert.equal(alive(r.taskPid), true, 'the task outlives the server');
  const again = await s.launch(spec(dir, 'after', 'exit 0'));
  assert.equal(again.ok, true, 'a new server is started for the next launch');
  if (again.ok) assert.equal(await again.ended, 'exited');
  signalGroup(r.taskPid, 'SIGKILL');
  await eventually(() => (existsSync(join(dir, 'long.exit.json')) ? true : undefined));
});

test('a launcher the server forked is found in /proc by its sandbox, and the server and the task are not', async (t) => {
  const root = tempDir(t);
  const a = join(root, 'a');
  const b = join(root, 'b');
  mkdirSync(a);
  mkdirSync(b);
  const s = server(t);
  const ra = await s.launch(spec(a, 'a', 'sleep 30'));
  const rb = await s.launch(spec(b, 'b', 'sleep 30'));
  assert.ok(ra.ok && rb.ok);
  if (!ra.ok || !rb.ok) return;
  t.after(() => {
    signalGroup(ra.taskPid ?? 0, 'SIGKILL');
    signalGroup(rb.taskPid ?? 0, 'SIGKILL');
  });
  assert.equal(findLauncher(join(a, 'a.exit.json'), a)?.pid, ra.launcherPid);
  assert.equal(findLauncher(join(b, 'b.exit.json'), b)?.pid, rb.launcherPid);
  // Nothing works in a third directory: neither the server nor a task is taken for its launcher.
  assert.equal(findLauncher(join(root, 'c.exit.json'), join(root, 'c')), undefined);
  assert.equal(findLauncher(join(root, 'c.exit.json'), root), undefined);
});

test('the launcher makes a blank exit file once the task is forked and writes the end over it in place', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  const long = spec(dir, 'long', 'sleep 30');
  const r = await s.launch(long);
  assert.ok(r.ok && r.taskPid !== undefined);
  if (!r.ok || r.taskPid === undefined) return;
  t.after(() => void signalGroup(r.taskPid!, 'SIGKILL'));
  // Blank while the task runs: no end yet.
  const blank = await eventually(() => (existsSync(long.statusFile) && statSync(long.statusFile).size === EXIT_FILE_SIZE ? true : undefined));
  assert.equal(blank, true);
  assert.equal(readLauncherEnd(long.statusFile), undefined);
  const inode = statSync(long.statusFile).ino;
  signalGroup(r.taskPid, 'SIGTERM');
  assert.equal(await r.ended, 'exited');
  const end = readLauncherEnd(long.statusFile);
  assert.equal(end !== undefined && 'signal' in end ? end.signal : -1, 15);
  assert.equal(statSync(long.statusFile).ino, inode, 'the same file, written in place');
  assert.equal(statSync(long.statusFile).size, EXIT_FILE_SIZE);
  // A file already there (not the launcher's blank one) is replaced whole, as before.
  const taken = spec(dir, 'taken', 'exit 5');
  writeFileSync(taken.statusFile, 'leftover');
  const f = await s.launch(taken);
  assert.ok(f.ok);
  if (!f.ok) return;
  assert.equal(await f.ended, 'exited');
  const end2 = readLauncherEnd(taken.statusFile);
  assert.equal(end2 !== undefined && 'exit_code' in end2 ? end2.exit_code : -1, 5);
  assert.equal(existsSync(`${taken.statusFile}.tmp`), false);
});

test('a SIGTERM sent while the task is still setting itself up is not lost: it ends the task', async (t) => {
  const dir = tempDir(t);
  const s = server(t);
  // The task opens its output files before it runs its program, and until then it has the
  // launcher's signal dispositions (SIGTERM ignored). A FIFO as its stdout holds it in that
  // open until this test opens the other end: the SIGTERM is sent in that window, every time.
  const slow = spec(dir, 'slow-open', 'sleep 30');
  execFileSync('mkfifo', [slow.stdoutPath]);
  const r = await s.launch(slow);
  assert.ok(r.ok && r.taskPid !== undefined);
  if (!r.ok || r.taskPid === undefined) return;
  const pid = r.taskPid;
  t.after(() => void signalGroup(pid, 'SIGKILL'));
  // kill(2) has made the SIGTERM pending (blocked, in the task) by the time it returns.
  signalGroup(pid, 'SIGTERM');
  // Lets the task's open of its stdout finish (a reader is there); the task then carries on.
  const reader = openSync(slow.stdoutPath, fsConstants.O_RDONLY | fsConstants.O_NONBLOCK);
  t.after(() => closeSync(reader));
  // Bounded: a lost SIGTERM leaves `sleep 30` running.
  const how = await Promise.race([r.ended, new Promise<'still running'>((res) => setTimeout(() => res('still running'), EVENT_DEADLINE_MS).unref())]);
  assert.equal(how, 'exited');
  const end = readLauncherEnd(slow.statusFile);
  assert.equal(end !== undefined && 'signal' in end ? end.signal : JSON.stringify(end), 15);
});

/** The pid the server logged when it started. */
function serverPid(lines: readonly string[]): number {
  return Number((JSON.parse(lines.find((l) => l.includes('launch server started'))!) as { pid: number }).pid);
}

/** Is `pid` a live process (a zombie waiting for whoever adopted it is not)? */
function running(pid: number): boolean {
  const state = procStat(pid)?.[0];
  return state !== undefined && state !== 'Z';
}

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  return procPids().filter((p) => procStat(p)?.[1] === String(pid));
}

/** A started server, its pid, and its spare launcher: its only child before any launch. */
async function serverWithSpare(t: { after(fn: () => void): void }, lines: string[] = []): Promise<{ s: LaunchServer; pid: number; spare: number }> {
  const s = server(t, lines);
  assert.equal(s.start(), true);
  const pid = serverPid(lines);
  const [spare] = await eventually(() => { const c = childrenOf(pid); return c.length === 1 ? c : undefined; }, undefined, 20, 'the spare launcher');
  assert.ok(spare !== undefined);
  return { s, pid, spare };
}

test('the launch server keeps a spare launcher: the next launch is handed to it, and a new one is forked after', async (t) => {
  const dir = tempDir(t);
  const { s, pid, spare } = await serverWithSpare(t);
  assert.equal(procStat(spare)?.[3], String(spare), 'the spare leads a session of its own');
  const r = await s.launch(spec(dir, 'a', 'sleep 30'));
  assert.ok(r.ok && r.taskPid !== undefined);
  if (!r.ok || r.taskPid === undefined) return;
  t.after(() => void signalGroup(r.taskPid!, 'SIGKILL'));
  assert.equal(r.launcherPid, spare, 'the launch went to the spare');
  // The launcher said its own start time: the one /proc gives.
  assert.equal(r.startTime, procStartTime(r.launcherPid));
  assert.equal(findLauncher(join(dir, 'a.exit.json'), dir)?.pid, spare);
  const next = await eventually(() => childrenOf(pid).find((c) => c !== spare), undefined, 20, 'the next spare');
  const r2 = await s.launch(spec(dir, 'b', 'exit 4'));
  assert.ok(r2.ok);
  if (!r2.ok) return;
  assert.equal(r2.launcherPid, next);
  assert.equal(await r2.ended, 'exited');
  assert.equal((readLauncherEnd(join(dir, 'b.exit.json')) as { exit_code?: number } | undefined)?.exit_code, 4);
});

test('a spare launcher goes when the server does, having started nothing; a killed spare leaves launches working', async (t) => {
  const dir = tempDir(t);
  const lines: string[] = [];
  const { s, pid, spare } = await serverWithSpare(t, lines);
  // Killed before it had a request: launches fork their launchers, and the agent hears of no launcher ending.
  process.kill(spare, 'SIGKILL');
  await eventually(() => (childrenOf(pid).length === 0 ? true : undefined), undefined, 20, 'the killed spare reaped');
  const rs = await Promise.all([s.launch(spec(dir, 'x', 'exit 0')), s.launch(spec(dir, 'y', 'exit 1'))]);
  for (const r of rs) {
    assert.ok(r.ok);
    if (r.ok) assert.equal(await r.ended, 'exited');
  }
  assert.deepEqual(lines.filter((l) => l.includes('unexpected')), []);
  // No spare is made again after one died without a request.
  assert.deepEqual(childrenOf(pid), []);

  // A second server: its spare ends when the server's stdin closes.
  const { s: s2, pid: pid2, spare: spare2 } = await serverWithSpare(t);
  s2.close();
  await eventually(() => (!running(pid2) && !running(spare2) ? true : undefined), undefined, 20, 'the server and its spare gone');
});

test('a launcher that ends before it reports the task fails its launch (it does not wait forever)', async (t) => {
  const dir = tempDir(t);
  // A stand-in server: takes the request, says a launcher was started, then that it ended.
  const fake = join(dir, 'fake-server');
  writeFileSync(fake, '#!/bin/sh\nhead -c 4 >/dev/null\necho "S 1 999999"\necho "E 999999 9"\nexec cat >/dev/null\n');
  chmodSync(fake, 0o755);
  const s = new LaunchServer(new Logger({ sink: () => {} }), fake);
  t.after(() => s.close());
  const r = await Promise.race([s.launch(spec(dir, 'a', 'true')), new Promise<'no answer'>((res) => setTimeout(() => res('no answer'), EVENT_DEADLINE_MS).unref())]);
  assert.notEqual(r, 'no answer');
  if (r === 'no answer') return;
  assert.equal(r.ok, false);
  if (!r.ok) assert.match(r.error, /the launcher ended before it reported the task \(wait status 9\)/);
});

test('the launcher reports its own start time with the task pid, as /proc has it (the agent need not read it)', async (t) => {
  const dir = tempDir(t);
  const child = spawn(launcherPath(), ['--serve'], { stdio: ['pipe', 'pipe', 'inherit'] });
  t.after(() => child.stdin.end());
  let out = '';
  child.stdout.setEncoding('utf8');
  const line = new Promise<string>((resolve) => child.stdout.on('data', (d: string) => {
    out += d;
    const p = out.split('\n').find((l) => l.startsWith('P ') || l.startsWith('F '));
    if (p !== undefined) resolve(p);
  }));
  // Two launches: the first goes to the spare, the second (sent with it) to a launcher forked for it.
  child.stdin.write(Buffer.concat([encodeLaunchRequest('1', spec(dir, 'a', 'sleep 30')), encodeLaunchRequest('2', spec(dir, 'b', 'sleep 30'))]));
  await line;
  const both = await eventually(() => { const ps = out.split('\n').filter((l) => l.startsWith('P ')); return ps.length === 2 ? ps : undefined; }, undefined, 20, 'two P lines');
  for (const p of both) {
    const m = /^P ([12]) ([0-9]+) ([0-9]+) ([0-9]+)$/.exec(p);
    assert.ok(m !== null, p);
    if (m === null) continue;
    t.after(() => void signalGroup(Number(m[3]), 'SIGKILL'));
    assert.equal(m[4], procStartTime(Number(m[2])), `launch ${m[1]}: its start time`);
  }
});

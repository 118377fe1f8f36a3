/**
 * Exit statuses scripts can trust, on the built CLI: every command of the tree (walked from
 * cli/program.ts, groups included) run with a bad flag exits 2 (drydock run: 125) with its one
 * line and the pointer to its own help, never the whole help; a top-level typo likewise; and the
 * waits that take --timeout (agent drain --wait, status --watch) exit 124 when it runs out,
 * leaving the operation going.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { program } from '../../cli/program.js';
import { commandPaths, commandSpec } from '../../cli/completion.js';
import { CLEAN_CLIENT_ENV } from '../helpers/cluster.js';
import { cliFinished, spawnCli, startCli } from '../helpers/cli.js';
import { callApi, EVENT_DEADLINE_MS, eventually, startAgent, startMaster } from '../helpers/daemons.js';

/** Runs the CLI to its end with no master configured (nothing here may reach one). */
async function drydock(t: Parameters<typeof spawnCli>[0], args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(spawnCli(t, args, { ...CLEAN_CLIENT_ENV, DRYDOCK_MASTER: '127.0.0.1:1' }), 30_000);
}

test('every command with a bad flag: exit 2 (drydock run: 125), the one line, and where its help is', { timeout: 180_000 }, async (t) => {
  const paths = commandPaths(commandSpec(program)).map((c) => c.path);
  assert.ok(paths.length >= 40, `walked ${paths.length} commands`);
  for (const path of ['', 'agent', 'agent drain', 'run', 'tasks', 'task logs', 'status', 'machine down', 'maintenance schedule', 'maintenance plan create', 'plan show', 'pod info', 'completion']) {
    assert.ok(paths.includes(path), `the walk reaches '${path}'`);
  }
  const cases: Array<[string[], number, string]> = paths.map((path) => {
    const words = path === '' ? [] : path.split(' ');
    return [[...words, '--no-such-flag'], words[0] === 'run' ? 125 : 2, `drydock${path === '' ? '' : ` ${path}`}`];
  });
  // A typo of a command is a usage error too, with commander's suggestion.
  cases.push([['statsu'], 2, 'drydock']);
  cases.push([['agent', 'drian', 'x'], 2, 'drydock agent']);
  // Four at a time: each is a node process.
  const results: Array<{ args: string[]; code: number | null; stderr: string; stdout: string; want: number; command: string }> = [];
  for (let i = 0; i < cases.length; i += 4) {
    results.push(...await Promise.all(cases.slice(i, i + 4).map(async ([args, want, command]) => ({ args, want, command, ...(await drydock(t, args)) }))));
  }
  for (const r of results) {
    const what = `drydock ${r.args.join(' ')}: ${r.stderr}`;
    assert.equal(r.code, r.want, what);
    assert.equal(r.stdout, '', what);
    const lines = r.stderr.trimEnd().split('\n');
    assert.match(lines[0] ?? '', /^drydock: (unknown option '--no-such-flag'|unknown command '(statsu|drian)'|required option '--name <name>' not specified)$/, what);
    assert.equal(lines.at(-1), `Run '${r.command} --help' for usage.`, what);
    // The one useful line (and commander's "Did you mean ...?"), never the whole help.
    assert.ok(lines.length <= 3 && !r.stderr.includes('Usage:'), what);
  }
  // Help and --version are no errors.
  for (const args of [['--help'], ['agent', 'drain', '--help'], ['--version'], ['help', 'agent']]) assert.equal((await drydock(t, args)).code, 0, args.join(' '));
});

test('durations: the message lists exactly the units the parser takes; 3m is minutes', { timeout: 60_000 }, async (t) => {
  const bad = await drydock(t, ['status', '--watch', '--interval', '3x']);
  assert.equal(bad.code, 2);
  assert.equal(bad.stderr, "drydock: --interval: Invalid duration '3x': unknown unit 'x'; the units are ns, us, ms, secs (s, sec, second, seconds), mins (m, min, minute, minutes), hrs (h, hr, hour, hours), days (d, day), weeks (w, week)\nRun 'drydock status --help' for usage.\n");
  // 3m is read as three minutes: past --interval's hour? No: it passes the check, and only the unreachable master (exit 1) stops the watch.
  const minutes = await drydock(t, ['status', '--watch', '--interval', '3m', '--timeout', '1s']);
  assert.notEqual(minutes.code, 2, minutes.stderr);
  const tooLong = await drydock(t, ['status', '--watch', '--interval', '2h']);
  assert.deepEqual([tooLong.code, tooLong.stderr], [2, "drydock: --interval '2h': between 100ms and 1hrs\nRun 'drydock status --help' for usage.\n"]);
});

test('--timeout: status --watch and agent drain --wait exit 124 when it runs out; the drain goes on', { timeout: 120_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'slow', stopSignal: 'SIGUSR1' });

  const watch = await cliFinished(startCli(t, m, ['status', '--watch', '--interval', '200ms', '--timeout', '1secs']), 30_000);
  assert.equal(watch.code, 124, watch.stderr);
  assert.equal(watch.stderr, 'drydock: stopped watching after 1secs (--timeout)\n');
  // On a pipe the screen is printed once while nothing but ages change.
  assert.equal(watch.stdout.split('\n').filter((l) => l.startsWith('agents ')).length, 1, watch.stdout);
  const json = await cliFinished(startCli(t, m, ['status', '--watch', '--json', '--interval', '200ms', '--timeout', '700ms']), 30_000);
  assert.equal(json.code, 124);
  assert.equal((JSON.parse(json.stdout.trim().split('\n')[0] ?? '') as { agents: { active: number } }).agents.active, 1);

  // A task that ignores SIGTERM and has 60 s of grace: the drain cannot finish within the second.
  const task = startCli(t, m, ['run', '--name', 'stubborn', '--command', "trap '' TERM; sleep 120", '--grace_period', '60secs', '--hostname', 'slow']);
  await eventually(() => (/TASK_RUNNING/.test(task.stdout) ? true : undefined), 20_000, 50, 'TASK_RUNNING printed');
  const wait = await cliFinished(startCli(t, m, ['agent', 'drain', 'slow', '--wait', '--timeout', '1secs']), EVENT_DEADLINE_MS);
  assert.equal(wait.code, 124, wait.stderr);
  assert.match(wait.stderr, /\ndrydock: gave up waiting after 1s \(--timeout\); the drain of slow goes on \(drydock agent list shows it\)\n$/);
  const agents = (await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ drain_info?: { state: string } }> } };
  assert.equal(agents.get_agents.agents[0]?.drain_info?.state, 'DRAINING', 'the drain goes on');
  // --timeout without --wait, and --dry-run with --wait, are usage errors: nothing is sent.
  const alone = await cliFinished(startCli(t, m, ['agent', 'drain', 'slow', '--timeout', '1secs']), 30_000);
  assert.deepEqual([alone.code, alone.stderr], [2, "drydock: --timeout is for --wait: without it nothing waits\nRun 'drydock agent drain --help' for usage.\n"]);
  const both = await cliFinished(startCli(t, m, ['agent', 'drain', 'slow', '--wait', '--dry-run']), 30_000);
  assert.equal(both.code, 2);
  task.child.kill('SIGKILL');
});

test('output into a closed pipe (`drydock status | head -1`): exit 0, nothing on stderr, no stack trace', { timeout: 120_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'piped' });
  const cases = [['status'], ['status', '--json'], ['agent', 'list'], ['tasks', '--all'], ['maintenance', 'status', '--json'], ['completion', 'bash'], ['--help']];
  for (const args of cases) {
    const run = spawnCli(t, [`--master=${m.address}`, ...args], CLEAN_CLIENT_ENV);
    // The reader is gone before the CLI writes anything: its first write meets EPIPE.
    run.child.stdout?.destroy();
    const done = await cliFinished(run, 30_000);
    assert.deepEqual([done.code, done.stderr], [0, ''], `drydock ${args.join(' ')}`);
  }
});

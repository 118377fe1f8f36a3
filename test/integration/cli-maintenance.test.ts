/**
 * The maintenance commands end to end: the built CLI as a child process against a real
 * master and real agents on loopback (agent-1 on 127.0.0.2, agent-2 on 127.0.0.3).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CLI_BIN, EVENT_DEADLINE_MS, eventually, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';

interface Ran {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `drydock --master=... ARGS` to its end (bounded), with `stdin` piped in when given. */
function drydock(master: MasterHandle, args: readonly string[], stdin?: string): Promise<Ran> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI_BIN, `--master=${master.address}`, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`drydock ${args.join(' ')} did not exit; stdout: ${stdout}; stderr: ${stderr}`));
    }, EVENT_DEADLINE_MS);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    child.stdin.end(stdin ?? '');
  });
}

/** 2026-11-22T10:00:00.000000001Z: past a double's exact integers, so it must survive as digits. */
const START = '1795341600000000001';
const SCHEDULE = `{"windows":[{"machine_ids":[{"hostname":"agent-2","ip":"127.0.0.3"},{"hostname":"spare"}],"unavailability":{"start":{"nanoseconds":${START}},"duration":{"nanoseconds":5400000000000}}}]}`;

test('drydock maintenance schedule FILE, then show it with exact times; status; machine down/up', { timeout: 240_000 }, async (t) => {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: master.address, ip: '127.0.0.2', hostname: 'agent-1' });
  const a2 = await startAgent(t, { master: master.address, ip: '127.0.0.3', hostname: 'agent-2' });
  const dir = tempDir(t);
  const file = join(dir, 'schedule.json');
  writeFileSync(file, SCHEDULE);

  assert.deepEqual(await drydock(master, ['maintenance', 'schedule']), { code: 0, stdout: 'no maintenance scheduled\n', stderr: '' });

  const set = await drydock(master, ['maintenance', 'schedule', file]);
  assert.equal(set.code, 0, set.stderr);
  assert.equal(set.stdout, [
    '+ agent-2 (127.0.0.3): window 1, 2026-11-22T10:00:00.000000001Z for 1h 30m',
    '+ spare: window 1, 2026-11-22T10:00:00.000000001Z for 1h 30m',
    'schedule replaced: 2 machines in 1 window (2 added, 0 removed, 0 changed, 0 unchanged)',
    '',
  ].join('\n'));

  const shown = await drydock(master, ['maintenance', 'schedule']);
  assert.equal(shown.code, 0, shown.stderr);
  assert.equal(shown.stdout, [
    `WINDOW  MACHINE              MODE      AGENT${' '.repeat(Math.max(0, String(a2.agentId).length - 5))}  START                           DURATION  END`,
    `1       agent-2 (127.0.0.3)  DRAINING  ${a2.agentId}  2026-11-22T10:00:00.000000001Z  1h 30m    2026-11-22T11:30:00.000000001Z`,
    `1       spare                DRAINING  -${' '.repeat(String(a2.agentId).length - 1)}  2026-11-22T10:00:00.000000001Z  1h 30m    2026-11-22T11:30:00.000000001Z`,
    '',
  ].join('\n'));

  // --json is the master's answer with the int64 digits as they are.
  const json = await drydock(master, ['maintenance', 'schedule', '--json']);
  assert.match(json.stdout, new RegExp(`"nanoseconds": ${START}\\n`));

  // The same schedule again (from stdin, as --json printed it): nothing changed.
  const again = await drydock(master, ['maintenance', 'schedule', '-'], json.stdout);
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout, 'schedule replaced: 2 machines in 1 window (0 added, 0 removed, 0 changed, 2 unchanged)\n');

  const status = await drydock(master, ['maintenance', 'status']);
  assert.match(status.stdout, /^MACHINE\s+MODE\s+FRAMEWORK\s+ANSWER\s+ANSWERED AT\nagent-2 \(127\.0\.0\.3\)\s+DRAINING\s+-\s+no answers yet\s+-\nspare\s+DRAINING/);
  const list = await drydock(master, ['agent', 'list']);
  assert.match(list.stdout, /\sagent-2\s+127\.0\.0\.3:\d+\s+ACTIVE\s+DRAINING\s/);
  assert.match(list.stdout, /\sagent-1\s+127\.0\.0\.2:\d+\s+ACTIVE\s+UP\s/);

  // A hostname alone is another MachineID, which names agent-2 only by half: refused, nothing sent (2).
  const wrong = await drydock(master, ['machine', 'down', 'agent-2']);
  assert.equal(wrong.code, 2);
  assert.equal(wrong.stderr, [
    'drydock: machine agent-2 matches agent agent-2 (127.0.0.3) by hostname only: it will not affect that agent, whose machine is agent-2=127.0.0.3',
    'drydock: refused, nothing was sent: write each machine as HOST=IP of its agent (drydock agent list shows the addresses), or add --force to send it as written',
    "Run 'drydock machine down --help' for usage.",
    '',
  ].join('\n'));
  // With --force it is sent: the master's warning, its 400 as it is, and a hint.
  const forced = await drydock(master, ['machine', 'down', 'agent-2', '--force']);
  assert.equal(forced.code, 1);
  assert.equal(forced.stderr, [
    'drydock: warning: machine agent-2 matches agent agent-2 (127.0.0.3) by hostname only: it will not affect that agent, whose machine is agent-2=127.0.0.3',
    'drydock: the schedule has agent-2=127.0.0.3: a machine matches only with the same hostname and IP fields',
    `drydock: master answered 400: Machine '{"hostname":"agent-2"}' is not part of a maintenance schedule`,
    '',
  ].join('\n'));

  const down = await drydock(master, ['machine', 'down', 'agent-2=127.0.0.3']);
  assert.equal(down.code, 0, down.stderr);
  assert.equal(down.stdout, `agent-2 (127.0.0.3) is DOWN: its agent agent-2 (${a2.agentId}) is shut down and may not register until it is brought up\n`);
  // The agent on it is shut down (exit 0) and removed.
  assert.deepEqual(await a2.daemon.exited, { code: 0, signal: null });
  await eventually(async () => (/\sagent-2\s/.test((await drydock(master, ['agent', 'list'])).stdout) ? undefined : true), undefined, 200, 'agent-2 to leave the list');
  const downStatus = await drydock(master, ['maintenance', 'status']);
  assert.match(downStatus.stdout, /\nagent-2 \(127\.0\.0\.3\)\s+DOWN\s+-\s+-\s+-\n/);
  assert.match((await drydock(master, ['maintenance', 'schedule'])).stdout, /\n1\s+agent-2 \(127\.0\.0\.3\)\s+DOWN\s+-\s+2026-11-22T10:00:00\.000000001Z/);

  // A DOWN machine cannot leave the schedule: the master's message, what it means, exit 1, nothing changed.
  const clear = await drydock(master, ['maintenance', 'schedule', '-'], '{}');
  assert.equal(clear.code, 1);
  assert.equal(clear.stderr, [
    `drydock: master answered 400: Machine '{"hostname":"agent-2","ip":"127.0.0.3"}' is deactivated and cannot be removed from the schedule`,
    'drydock: agent-2 (127.0.0.3) is DOWN ("deactivated" in Mesos\' words): a schedule may leave it out only once it is UP. Bring it up first: drydock machine up agent-2=127.0.0.3 (that also takes it out of the schedule)',
    '',
  ].join('\n'));

  const up = await drydock(master, ['machine', 'up', 'agent-2=127.0.0.3', '--json']);
  assert.equal(up.code, 0, up.stderr);
  const after = JSON.parse(up.stdout) as { get_maintenance_status: { status: { draining_machines?: unknown[]; down_machines?: unknown[] } } };
  assert.deepEqual(after.get_maintenance_status.status, { draining_machines: [{ id: { hostname: 'spare' } }] });
  const left = await drydock(master, ['maintenance', 'schedule']);
  assert.match(left.stdout, /\n1\s+spare\s+DRAINING\s+-\s+2026-11-22T10:00:00\.000000001Z\s+1h 30m\s+2026-11-22T11:30:00\.000000001Z\n$/);

  const cleared = await drydock(master, ['maintenance', 'schedule', '-'], '{}');
  assert.equal(cleared.code, 0, cleared.stderr);
  assert.equal(cleared.stdout, '- spare: removed from the schedule (UP)\nschedule cleared: 1 machine back UP\n');
});

test('drydock maintenance / machine: bad input is one line, exit 2 from the CLI (with the help pointer), 1 from the master', { timeout: 60_000 }, async (t) => {
  const master = await startMaster(t);
  const dir = tempDir(t);
  const cases: Array<[string[], string | undefined, number, RegExp]> = [
    [['maintenance', 'schedule', join(dir, 'nosuch.json')], undefined, 2, /^drydock: cannot read .*nosuch\.json: ENOENT\n/],
    [['maintenance', 'schedule', '-'], '{"windows":', 2, /^drydock: stdin is not JSON: /],
    [['maintenance', 'schedule', '-'], '[]', 2, /^drydock: stdin must hold a JSON object/],
    [['maintenance', 'schedule', '-'], '{"windows":[{"machine_ids":[{"hostname":"x","ip":"1.2.3"}],"unavailability":{"start":{"nanoseconds":1}}}]}', 1, /^drydock: master answered 400: Failed to parse IPv4: 1\.2\.3\n$/],
    [['maintenance', 'schedule', '-'], '{"windows":[{"machine_ids":[],"unavailability":{"start":{"nanoseconds":1}}}]}', 1, /^drydock: master answered 400: List of machines in the maintenance window is empty\n$/],
    [['machine', 'down', 'h='], undefined, 2, /^drydock: machine down: 'h=': nothing after '='/],
    [['machine', 'up', '=10.0.0.1'], undefined, 1, /^drydock: master answered 400: Machine '\{"ip":"10\.0\.0\.1"\}' is not part of a maintenance schedule\n$/],
  ];
  for (const [args, stdin, code, want] of cases) {
    const r = await drydock(master, args, stdin);
    assert.equal(r.code, code, args.join(' '));
    assert.match(r.stderr, want, args.join(' '));
    const lines = r.stderr.trim().split('\n');
    // A usage error is its one line and the pointer to the command's help.
    if (code === 2) assert.deepEqual(lines.slice(1), [`Run 'drydock ${args[0]} ${args[1]} --help' for usage.`], r.stderr);
    else assert.equal(lines.length, 1, r.stderr);
  }
  // Nothing changed.
  assert.equal((await drydock(master, ['maintenance', 'schedule'])).stdout, 'no maintenance scheduled\n');
});

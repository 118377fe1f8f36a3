/**
 * Maintenance hooks are a privilege of their own, end to end: a real master with credentials,
 * ACLs (`permissive: false`) and a hooks file, and a real agent on rack r1. `r1-team` may
 * create, view and update plans on rack r1 but has no run_maintenance_hooks; `ops` has it.
 * As r1-team: a plan with a shell command is a 400 and a plan naming a hook a 403, and neither
 * creates anything nor runs anything (no plan, no schedule, no marker). As ops: the hook runs,
 * with the minimal environment (none of the master's variables, no DRYDOCK_* credential), is
 * audited in ops' name; r1-team, who may view the plan, sees its status and exit code but not its
 * output, and may not restart the step that would run it again. Also: a plan an older master
 * stored with a shell command, recovered from the registry: its step goes to ERROR saying why,
 * and nothing runs; the hook as another user (`--hook_user=nobody`, when the test runs as root);
 * and the start refusals (a root master without --hook_user, a hooks file others may write, a
 * hooks file that does not read).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { authorizationHeader } from '../../shared/credentials.js';
import { HOOK_PATH } from '../../master/plans/hooks.js';
import { openSqliteRegistry } from '../../master/registry/sqlite.js';
import { alive, Daemon, eventually, fileWithMode, maintenanceHooks, MASTER_BIN, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, startCli } from '../helpers/cli.js';

const SECRETS = { ops: 'ops-secret-0123', 'r1-team': 'r1-secret-4567' } as const;
type Who = keyof typeof SECRETS;
const as = (who: Who): Record<string, string> => ({ authorization: authorizationHeader({ kind: 'basic', principal: who, secret: SECRETS[who] }) });

interface Answer { status: number; text: string; json: unknown }

async function send(m: MasterHandle, who: Who, method: string, path: string, body?: string): Promise<Answer> {
  const res = await fetch(`${m.url}${path}`, { method, headers: as(who), ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json };
}

/** r1-team: plans on rack r1 (create, view, update, delete) and nothing else; ops: everything, hooks included. */
function acls(): string {
  const ops = { principals: { values: ['ops'] }, machines: { type: 'ANY' } };
  const r1 = { principals: { values: ['r1-team'] }, machines: { values: ['rack:r1'] } };
  const j: Record<string, unknown> = { permissive: false };
  for (const a of ['create_maintenance_plans', 'view_maintenance_plans', 'update_maintenance_plans', 'delete_maintenance_plans']) j[a] = [ops, r1];
  for (const a of ['get_maintenance_schedules', 'get_maintenance_statuses']) j[a] = [ops];
  j['run_maintenance_hooks'] = [{ principals: { values: ['ops'] }, hooks: { type: 'ANY' } }];
  j['register_agents'] = [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }];
  return JSON.stringify(j);
}

/** Gone, or a zombie nobody has reaped yet (its parent died; whether PID 1 reaps is the machine's business). */
function gone(pid: number): boolean {
  if (!alive(pid)) return true;
  try {
    return /^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

interface StepJson { name: string; status: string; message: string; hook?: { name: string; attempt: number; status: string; code: number | null; signal: string | null; output: string } }
interface PlanJson { status: string; phases: Array<{ name: string; steps: StepJson[] }> }

/** The output the hook prints, which only principals allowed to run it may read. */
const HOOK_SECRET = 'hook-output-only-for-hook-runners';

test('a rack-scoped principal cannot run commands on the master: a command is a 400, a hook a 403, nothing created or run; a hook runs for ops with the minimal environment, audited; r1-team sees no output and cannot re-run it', { timeout: 300_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-hooks-it-');
  const out = join(dir, 'out');
  mkdirSync(out);
  const marker = join(out, 'marker');
  const envFile = join(out, 'env');
  const credentials = fileWithMode(join(dir, 'credentials.json'), JSON.stringify({ credentials: Object.entries(SECRETS).map(([principal, secret]) => ({ principal, secret })) }), 0o600);
  const aclsFile = fileWithMode(join(dir, 'acls.json'), acls(), 0o644);
  const argv = ['/bin/sh', '-c', `id -u > ${marker}; env > ${envFile}; echo "${HOOK_SECRET} on {hostname}"; exit 3`];
  const m = await startMaster(t, {
    flags: ['--authenticate_http_readwrite', '--authenticate_http_readonly', `--acls=${aclsFile}`, ...maintenanceHooks(t, { mark: { command: argv, timeout: '30secs', env: { HOOK_CHANNEL: 'stable' } } })],
    // The credentials come through the environment, as under systemd: a hook must not see them, nor anything else of the master's.
    env: { DRYDOCK_CREDENTIALS: credentials, DRYDOCK_TEST_SECRET: 'the-masters-own-secret' },
  });
  await startAgent(t, { master: m.address, hostname: 'host-a', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const unchanged = async (what: string): Promise<void> => {
    assert.deepEqual((await send(m, 'ops', 'GET', '/v1/maintenance/plans')).json, [], `${what}: no plan`);
    assert.equal((await send(m, 'ops', 'GET', '/maintenance/schedule')).text, '{}', `${what}: nothing scheduled`);
    assert.equal(existsSync(marker), false, `${what}: nothing ran`);
  };
  await unchanged('at first');
  const base = { machines: { hostnames: ['host-a'] }, window: '1hrs', notice: '0secs', wait_for_frameworks: '1secs', max_grace_period: '0secs', up_when: 'operator' };

  // The attack: a shell command in on_down. Refused before anything else, saying what to do instead.
  const command = await send(m, 'r1-team', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'r1-hook', ...base, on_down: { command: `id > ${marker}; exit 3`, timeout: '20secs' } }));
  assert.equal(command.status, 400, command.text);
  assert.equal(command.text, "Invalid maintenance plan spec:\non_down.command is not accepted: a plan names one of the master's hooks (on_down: { hook: NAME }); the master's hooks are configured with --maintenance_hooks");
  await unchanged('after the command');

  // Naming the master's hook: r1-team may maintain host-a, but running a command on the master is another right.
  const hooked = await send(m, 'r1-team', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'r1-hook', ...base, on_down: { hook: 'mark', timeout: '20secs' } }));
  assert.equal(hooked.status, 403, hooked.text);
  assert.equal(hooked.text, "Forbidden: principal 'r1-team' may not run_maintenance_hooks on 'mark'");
  const unknown = await send(m, 'r1-team', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'r1-hook', ...base, on_down: 'reboot' }));
  assert.equal(unknown.status, 400, unknown.text);
  assert.match(unknown.text, /on_down\.hook 'reboot' is not one of the master's hooks: this master's hooks are mark$/);
  const longer = await send(m, 'ops', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'r1-hook', ...base, on_down: { hook: 'mark', timeout: '1mins' } }));
  assert.equal(longer.status, 400, longer.text);
  assert.match(longer.text, /on_down\.timeout \(1mins\) is longer than hook mark's own timeout \(30secs\): a plan may ask for less, never more/);
  await unchanged('after the refusals');
  await m.daemon.waitForLog((r) => r.msg === 'audit' && r['principal'] === 'r1-team' && r['outcome'] === 'denied' && String(r['action']).includes('run_maintenance_hooks') && r['object'] === "'mark'", undefined, 'the 403 audited');

  // ops may: the hook runs once host-a is DOWN, fails (exit 3), and the step says so.
  const created = await send(m, 'ops', 'POST', '/v1/maintenance/plans', JSON.stringify({ name: 'r1-hook', ...base, on_down: { hook: 'mark', timeout: '20secs' } }));
  assert.equal(created.status, 200, created.text);
  const failed = await eventually(async () => {
    const p = await send(m, 'ops', 'GET', '/v1/maintenance/plans/r1-hook');
    const step = (p.json as PlanJson).phases[0]?.steps[0];
    return step?.status === 'ERROR' ? { p, step } : undefined;
  }, 60_000, 200, 'the hook step in ERROR');
  assert.equal(readFileSync(marker, 'utf8').trim(), String(process.getuid?.() ?? ''), 'the hook ran (as the master, --hook_user=root here)');
  assert.equal(failed.p.status, 417);
  assert.match(failed.step.message, new RegExp(`: on_down of host-a failed with exit status 3 \\(attempt 1\\); last output: ${HOOK_SECRET} on host-a$`));
  assert.deepEqual(failed.step.hook, { name: 'mark', attempt: 1, status: 'failed', code: 3, signal: null, output: `${HOOK_SECRET} on host-a\n` });

  // The minimal environment: PATH, LANG, HOME, the hook's own, Drydock's five; nothing of the master's.
  const env = new Map(readFileSync(envFile, 'utf8').trim().split('\n').map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)] as const));
  const shell = new Set(['PWD', 'SHLVL', '_', 'OLDPWD']); // what /bin/sh itself adds
  assert.deepEqual([...env.keys()].filter((k) => !shell.has(k)).sort(), ['DRYDOCK_AGENT_ID', 'DRYDOCK_HOSTNAME', 'DRYDOCK_IP', 'DRYDOCK_PLAN', 'DRYDOCK_STEP', 'HOME', 'HOOK_CHANNEL', 'LANG', 'PATH']);
  assert.equal(env.get('PATH'), HOOK_PATH);
  assert.equal(env.get('LANG'), 'C.UTF-8');
  assert.equal(env.get('PWD'), '/');
  assert.equal(env.get('HOOK_CHANNEL'), 'stable');
  assert.deepEqual([env.get('DRYDOCK_PLAN'), env.get('DRYDOCK_STEP'), env.get('DRYDOCK_HOSTNAME'), env.get('DRYDOCK_IP')], ['r1-hook', 'all/host-a', 'host-a', '127.0.0.1']);
  assert.equal(env.has('DRYDOCK_CREDENTIALS'), false, 'no credential variable');
  assert.equal(env.has('DRYDOCK_TEST_SECRET'), false, 'no variable of the master');
  assert.ok(![...env.values()].some((v) => v.includes('the-masters-own-secret') || v.includes(credentials)), 'no value of the master either');

  // Audited in ops' name, with the argv that ran; logged with its pid, and its end.
  const audit = await m.daemon.waitForLog((r) => r.msg === 'audit' && r['action'] === 'run_maintenance_hooks', undefined, 'the hook audit line');
  assert.deepEqual(
    { principal: audit['principal'], object: audit['object'], outcome: audit['outcome'], argv: audit['argv'], detail: audit['detail'] },
    { principal: 'ops', object: "'mark'", outcome: 'allowed', argv: ['/bin/sh', '-c', `id -u > ${marker}; env > ${envFile}; echo "${HOOK_SECRET} on host-a"; exit 3`], detail: 'plan r1-hook step all/host-a attempt 1' },
  );
  const started = await m.daemon.waitForLog((r) => r.msg === 'on_down started' && r['hook'] === 'mark', undefined, 'the start line');
  assert.ok(Number(started['pid']) > 0, JSON.stringify(started));
  await m.daemon.waitForLog((r) => r.msg === 'on_down ended' && r['code'] === 3 && r['status'] === 'failed', undefined, 'the end line');

  // r1-team may view the plan (its rack): the status and the exit code, never the output.
  const seen = await send(m, 'r1-team', 'GET', '/v1/maintenance/plans/r1-hook');
  assert.equal(seen.status, 417, seen.text);
  const step = (seen.json as PlanJson).phases[0]?.steps[0];
  assert.match(step?.message ?? '', /: on_down of host-a failed with exit status 3 \(attempt 1\); output hidden \(needs run_maintenance_hooks\)$/);
  assert.deepEqual(step?.hook, { name: 'mark', attempt: 1, status: 'failed', code: 3, signal: null, output: 'output hidden (needs run_maintenance_hooks)' });
  assert.ok(!seen.text.includes(HOOK_SECRET), 'the output is nowhere in what r1-team gets');

  // Restarting the step would run the hook again: r1-team may update plans on r1, but not that.
  const restart = await send(m, 'r1-team', 'POST', '/v1/maintenance/plans/r1-hook/restart?phase=all&step=host-a');
  assert.equal(restart.status, 403, restart.text);
  assert.equal(restart.text, "Forbidden: principal 'r1-team' may not run_maintenance_hooks on 'mark'");
  // The 403 was decided before anything ran; this look (an observation window: a correct master
  // passes however slow) gives a wrongly started hook the time to show.
  await sleep(500);
  const after = (await send(m, 'ops', 'GET', '/v1/maintenance/plans/r1-hook')).json as PlanJson;
  assert.deepEqual([after.phases[0]?.steps[0]?.status, after.phases[0]?.steps[0]?.hook?.attempt], ['ERROR', 1], 'nothing ran again');
  assert.equal(m.daemon.records.filter((r) => r.msg === 'on_down started').length, 1);
  // A verb that runs no hook stays the rack team's: stop (host-a stays DOWN, as stated).
  const stop = await send(m, 'r1-team', 'POST', '/v1/maintenance/plans/r1-hook/stop');
  assert.equal(stop.status, 200, stop.text);
});

test('a hook that succeeded keeps its output tail in the step: ops reads it (JSON and plan show), r1-team sees the status and exit code, not the output', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-hooks-ok-');
  const credentials = fileWithMode(join(dir, 'credentials.json'), JSON.stringify({ credentials: Object.entries(SECRETS).map(([principal, secret]) => ({ principal, secret })) }), 0o600);
  const aclsFile = fileWithMode(join(dir, 'acls.json'), acls(), 0o644);
  const argv = ['/bin/sh', '-c', `for i in 1 2 3 4 5 6 7; do echo "${HOOK_SECRET} line $i on {hostname}"; done`];
  const m = await startMaster(t, {
    flags: ['--authenticate_http_readwrite', '--authenticate_http_readonly', `--acls=${aclsFile}`, ...maintenanceHooks(t, { echo: { command: argv, timeout: '30secs' } })],
    env: { DRYDOCK_CREDENTIALS: credentials },
  });
  await startAgent(t, { master: m.address, hostname: 'host-a', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const spec = { name: 'echoes', machines: { hostnames: ['host-a'] }, window: '1hrs', notice: '0secs', wait_for_frameworks: '1secs', max_grace_period: '0secs', up_when: 'operator', on_down: 'echo' };
  const created = await send(m, 'ops', 'POST', '/v1/maintenance/plans', JSON.stringify(spec));
  assert.equal(created.status, 200, created.text);
  const output = [1, 2, 3, 4, 5, 6, 7].map((i) => `${HOOK_SECRET} line ${i} on host-a\n`).join('');
  const step = await eventually(async () => {
    const s = ((await send(m, 'ops', 'GET', '/v1/maintenance/plans/echoes')).json as PlanJson).phases[0]?.steps[0];
    return s?.hook?.status === 'succeeded' ? s : undefined;
  }, 60_000, 200, 'the hook succeeded');
  assert.deepEqual(step.hook, { name: 'echo', attempt: 1, status: 'succeeded', code: 0, signal: null, output });

  const seen = await send(m, 'r1-team', 'GET', '/v1/maintenance/plans/echoes');
  assert.deepEqual((seen.json as PlanJson).phases[0]?.steps[0]?.hook, { name: 'echo', attempt: 1, status: 'succeeded', code: 0, signal: null, output: 'output hidden (needs run_maintenance_hooks)' });
  assert.ok(!seen.text.includes(HOOK_SECRET), 'the output is nowhere in what r1-team gets');

  // The CLI: the tail under the step for ops, the hidden line for r1-team; --json has it all.
  const secretFile = (who: Who): string => fileWithMode(join(dir, `${who}.secret`), SECRETS[who], 0o600);
  const show = async (who: Who, json = false): Promise<{ code: number | null; stdout: string; stderr: string }> =>
    cliFinished(startCli(t, m, ['--principal', who, '--secret_file', secretFile(who), 'maintenance', 'plan', 'show', 'echoes', ...(json ? ['--json'] : [])]), 30_000);
  const ops = await show('ops');
  assert.equal(ops.code, 0, ops.stderr);
  assert.ok(ops.stdout.includes([
    '         on_down echo: succeeded, exit 0 (attempt 1)',
    '         | ... (2 lines before; --json has the last 4 KiB)',
    ...[3, 4, 5, 6, 7].map((i) => `         | ${HOOK_SECRET} line ${i} on host-a`),
  ].join('\n')), ops.stdout);
  const opsJson = await show('ops', true);
  assert.equal((JSON.parse(opsJson.stdout) as PlanJson).phases[0]?.steps[0]?.hook?.output, output);
  const r1 = await show('r1-team');
  assert.equal(r1.code, 0, r1.stderr);
  assert.match(r1.stdout, /\n {9}on_down echo: succeeded, exit 0 \(attempt 1\)\n {9}\| output hidden \(needs run_maintenance_hooks\)\n/);
  assert.ok(!r1.stdout.includes(HOOK_SECRET));
});

test('a plan an older master stored with a shell command is recovered, and its step goes to ERROR saying why: the command never runs', { timeout: 120_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-hooks-legacy-');
  const workDir = tempDir(t, 'drydock-master-legacy-');
  const marker = join(dir, 'marker');
  // The registry as an older master left it: the spec with its command, progress without namedHooks or createdBy.
  const registry = openSqliteRegistry(workDir);
  await registry.createMaintenancePlan({
    name: 'legacy',
    spec: JSON.stringify({ name: 'legacy', machines: { hostnames: ['host-c'] }, window: '1hrs', notice: '0secs', wait_for_frameworks: '1secs', max_grace_period: '0secs', up_when: 'operator', on_down: { command: `id > ${marker}; exit 3`, timeout: '20secs' } }),
    progress: JSON.stringify({ version: 1, selection: { phases: [{ name: 'all', machines: [{ hostname: 'host-c', ip: '127.0.0.1' }] }], unmatched: [] }, overrides: { interrupted: false, phases: {}, steps: {} }, steps: {} }),
    createdNs: BigInt(Date.now()) * 1_000_000n,
  });
  await registry.close();
  // A master with hooks: even a hook of the command's name would not be run for it.
  const m = await startMaster(t, { workDir, flags: maintenanceHooks(t, { id: { command: ['/bin/sh', '-c', `echo hook > ${marker}`] } }) });
  await m.daemon.waitForLog((r) => r.msg === 'maintenance plan from an older master has a shell command in on_down: it will not run' && r['plan'] === 'legacy', undefined, 'the warning');
  // host-c has no agent: the plan schedules it, takes it DOWN at once, and reaches on_down.
  const step = await eventually(async () => {
    const r = await fetch(`${m.url}/v1/maintenance/plans/legacy`, { signal: AbortSignal.timeout(10_000) });
    const s = ((await r.json()) as PlanJson).phases[0]?.steps[0];
    return s?.status === 'ERROR' ? s : undefined;
  }, 60_000, 200, 'the step in ERROR');
  assert.match(step.message, /: on_down of host-c was not run: this plan was stored by an older master with a shell command, and a master runs only its own hooks now \(on_down: \{ hook: NAME \}, configured with --maintenance_hooks\); force-complete the step, or stop and delete the plan and create it again naming a hook$/);
  assert.equal(step.hook, undefined, 'no hook record: nothing started');
  assert.equal(existsSync(marker), false, 'nothing ran');
  assert.equal(m.daemon.records.some((r) => r.msg === 'on_down started'), false);
  // Force-complete moves on (up_when: operator then waits for the operator, as the plan says).
  const forced = await fetch(`${m.url}/v1/maintenance/plans/legacy/forceComplete?phase=all&step=host-c`, { method: 'POST', signal: AbortSignal.timeout(10_000) });
  assert.equal(forced.status, 200, await forced.text());
  assert.equal(existsSync(marker), false);
});

test('a long hook does not hold the plans up: the step says it runs while it runs, and a stop ends it (its whole process group)', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-hooks-long-');
  const pidFile = join(dir, 'child');
  const m = await startMaster(t, { flags: maintenanceHooks(t, { long: { command: ['/bin/sh', '-c', `sleep 300 & echo $! > ${pidFile}; wait`], timeout: '10mins' } }) });
  const spec = { name: 'long', machines: [{ hostname: 'host-d', ip: '127.0.0.9' }], window: '1hrs', wait_for_frameworks: '1secs', up_when: 'operator', on_down: 'long' };
  const created = await fetch(`${m.url}/v1/maintenance/plans`, { method: 'POST', body: JSON.stringify(spec), signal: AbortSignal.timeout(10_000) });
  assert.equal(created.status, 200, await created.text());
  // The driver goes on while the hook runs: its next pass says so (it would not if the pass waited for the hook).
  await eventually(async () => {
    const r = await fetch(`${m.url}/v1/maintenance/plans/long`, { signal: AbortSignal.timeout(10_000) });
    const step = ((await r.json()) as PlanJson).phases[0]?.steps[0];
    return step?.message.includes('on_down running (attempt 1)') === true ? step : undefined;
  }, undefined, 200, 'the step saying its hook runs');
  const child = Number(readFileSync(pidFile, 'utf8').trim());
  const stop = await fetch(`${m.url}/v1/maintenance/plans/long/stop`, { method: 'POST', signal: AbortSignal.timeout(10_000) });
  assert.equal(stop.status, 200, await stop.text());
  const ended = await m.daemon.waitForLog((r) => r.msg === 'on_down ended' && r['hook'] === 'long', undefined, 'the hook ended by the stop');
  assert.deepEqual([ended['signal'], ended['status']], ['SIGTERM', 'failed']);
  await eventually(() => (gone(child) ? true : undefined), undefined, 50, 'the hook\'s background child gone too');
});

const ROOT = process.getuid?.() === 0;

test('--hook_user: a root master runs the hook as that user, with its groups only and its home', { skip: ROOT ? false : 'needs root to run a hook as another user (the test runs as uid ' + String(process.getuid?.()) + ')', timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-hooks-user-');
  // nobody must reach and write its output: the temp dir is root's 0700.
  chmodSync(dir, 0o755);
  const out = join(dir, 'out');
  mkdirSync(out);
  chmodSync(out, 0o777);
  const who = ['/bin/sh', '-c', `id -u > ${out}/uid; id -G > ${out}/groups; echo "$HOME" > ${out}/home; pwd > ${out}/pwd; echo done > ${out}/done`];
  const m = await startMaster(t, { flags: maintenanceHooks(t, { who: { command: who, timeout: '30secs' } }, 'nobody') });
  await m.daemon.waitForLog((r) => r.msg === 'maintenance hooks loaded' && r['user'] === 'nobody', undefined, 'hooks as nobody');
  await startAgent(t, { master: m.address, hostname: 'host-b', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' });
  const spec = { name: 'as-nobody', machines: { hostnames: ['host-b'] }, window: '1hrs', wait_for_frameworks: '1secs', up_when: 'operator', on_down: 'who' };
  const r = await fetch(`${m.url}/v1/maintenance/plans`, { method: 'POST', body: JSON.stringify(spec), signal: AbortSignal.timeout(10_000) });
  assert.equal(r.status, 200, await r.text());
  await eventually(() => (existsSync(join(out, 'done')) ? true : undefined), 60_000, 100, 'the hook ran');
  const read = (f: string): string => readFileSync(join(out, f), 'utf8').trim();
  assert.equal(read('uid'), '65534');
  assert.equal(read('groups'), '65534', 'no supplementary group of the master');
  assert.equal(read('home'), '/nonexistent');
  assert.equal(read('pwd'), '/');
});

test('the master refuses to start with hooks it cannot run safely: a root master without --hook_user, a hooks file others may write, one that does not read, a non-root --hook_user', async (t) => {
  const dir = tempDir(t, 'drydock-hooks-start-');
  const run = async (flags: string[]): Promise<{ code: number | null; stderr: string; listening: boolean }> => {
    const d = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${tempDir(t, 'drydock-master-')}`, ...flags]);
    t.after(() => d.stop(2_000, 'SIGKILL'));
    const exit = (await d.exitWithin()) ?? { code: null };
    return { code: exit.code, stderr: d.stderr, listening: d.records.some((r) => r.msg === 'listening') };
  };
  const good = fileWithMode(join(dir, 'hooks.yml'), 'hooks:\n  patch: { command: ["/bin/echo", "{hostname}"] }\n', 0o644);
  if (ROOT) {
    const noUser = await run([`--maintenance_hooks=${good}`]);
    assert.deepEqual([noUser.code, noUser.listening], [1, false]);
    assert.equal(noUser.stderr, 'drydock-master: --maintenance_hooks: the master runs as root, so --hook_user=NAME is required (the user hooks run as; --hook_user=root runs them as root)\n');
    const ghost = await run([`--maintenance_hooks=${good}`, '--hook_user=no-such-user-here']);
    assert.deepEqual([ghost.code, ghost.stderr], [1, 'drydock-master: --hook_user=no-such-user-here: no such user (looked up in /etc/passwd and with getent)\n']);
  } else {
    const other = await run([`--maintenance_hooks=${good}`, '--hook_user=root']);
    assert.equal(other.code, 1);
    assert.match(other.stderr, /--hook_user=root: a master that is not root runs hooks as its own user only/);
  }
  const user = ROOT ? ['--hook_user=root'] : [];
  const open = fileWithMode(join(dir, 'open.yml'), 'hooks:\n  patch: { command: ["/bin/echo", "{hostname}"] }\n', 0o666);
  const o = await run([`--maintenance_hooks=${open}`, ...user]);
  assert.deepEqual([o.code, o.listening], [1, false]);
  assert.equal(o.stderr, `drydock-master: --maintenance_hooks ${open} is writable by its group and others (mode 0666), who could then run any command as the hook user; run chmod go-w on it\n`);
  const bad = fileWithMode(join(dir, 'bad.yml'), 'hooks:\n  patch: { command: "echo {hostname}" }\n', 0o644);
  const b = await run([`--maintenance_hooks=${bad}`, ...user]);
  assert.equal(b.code, 1);
  assert.equal(b.stderr, `drydock-master: --maintenance_hooks ${bad}: hooks.patch.command must be a list of 1 to 256 strings (the program, then its arguments; no shell), got "echo {hostname}"\n`);
  const missing = await run([`--maintenance_hooks=${join(dir, 'nope.yml')}`, ...user]);
  assert.deepEqual([missing.code, missing.stderr], [1, `drydock-master: --maintenance_hooks ${join(dir, 'nope.yml')} cannot be read: no such file\n`]);
  // And the good file starts (the same flags otherwise).
  const m = await startMaster(t, { flags: [`--maintenance_hooks=${good}`, ...user] });
  await m.daemon.waitForLog((r) => r.msg === 'maintenance hooks loaded', undefined, 'loaded');
});

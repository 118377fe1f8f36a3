/**
 * The unit files verify cleanly. `systemd-analyze verify` reports unknown keys and bad values
 * only as warnings on stderr with exit 0, so any stderr output fails the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, writeFileSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, tempDir } from '../helpers/daemons.js';

function verify(path: string): { status: number | null; stderr: string } {
  const r = spawnSync('systemd-analyze', ['verify', path], { encoding: 'utf8', timeout: 20_000 });
  if (r.error !== undefined) throw r.error;
  return { status: r.status, stderr: `${r.stdout}${r.stderr}`.trim() };
}

for (const unit of ['drydock-master.service', 'drydock-agent.service', 'drydock-scheduler.service']) {
  test(`systemd-analyze verify ${unit} passes without a warning`, () => {
    const r = verify(join(ROOT, 'systemd', unit));
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
  });
}

test('the verify check catches a warning (a unit with an unknown key)', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'drydock-broken.service');
  copyFileSync(join(ROOT, 'systemd', 'drydock-agent.service'), path);
  writeFileSync(path, readFileSync(path, 'utf8').replace('KillMode=process', 'KillMode=process\nBogusKey=1'));
  const r = verify(path);
  assert.match(r.stderr, /BogusKey/);
});

test('the agent unit lets tasks outlive an agent restart and never loops on a refusal', () => {
  const text = readFileSync(join(ROOT, 'systemd', 'drydock-agent.service'), 'utf8');
  assert.match(text, /^KillMode=process$/m);
  assert.match(text, /^Restart=on-failure$/m);
  assert.match(text, /^RestartPreventExitStatus=.*\b78\b/m);
});

/** Each unit's secret flags: the flag's DRYDOCK_ variable and the credential id it must point at. */
const SECRETS: ReadonlyArray<readonly [unit: string, variable: string, id: string]> = [
  ['drydock-master.service', 'DRYDOCK_CREDENTIALS', 'credentials'],
  ['drydock-master.service', 'DRYDOCK_TLS_KEY_FILE', 'tls-key'],
  ['drydock-agent.service', 'DRYDOCK_CREDENTIAL', 'credential'],
  ['drydock-agent.service', 'DRYDOCK_TLS_KEY_FILE', 'tls-key'],
  ['drydock-scheduler.service', 'DRYDOCK_SECRET_FILE', 'secret'],
  ['drydock-scheduler.service', 'DRYDOCK_TLS_KEY_FILE', 'tls-key'],
];

test('the scheduler unit hands its API\'s --credentials over with LoadCredential= on the command line (DRYDOCK_CREDENTIALS is its own credential)', () => {
  const text = readFileSync(join(ROOT, 'systemd', 'drydock-scheduler.service'), 'utf8');
  assert.match(text, /^ExecStart=\S+ \S+scheduler\/main\.js --credentials=%d\/credentials$/m);
  assert.match(text, /^LoadCredential=credentials:\/etc\/drydock\/\S+$/m);
  assert.match(text, /^Environment=DRYDOCK_AUTHENTICATE_HTTP_READWRITE=true$/m);
  assert.match(text, /^Environment=DRYDOCK_AUTHENTICATE_HTTP_READONLY=true$/m);
  assert.doesNotMatch(text, /^Environment=DRYDOCK_CREDENTIALS=/m);
});

test('the units hand every secret over with LoadCredential= and point its flag at %d', () => {
  for (const [unit, variable, id] of SECRETS) {
    const text = readFileSync(join(ROOT, 'systemd', unit), 'utf8');
    assert.match(text, new RegExp(`^Environment=${variable}=%d/${id}$`, 'm'), `${unit}: ${variable} reads the credentials directory`);
    const load = new RegExp(`^LoadCredential=${id}:(/etc/drydock/\\S+)$`, 'm').exec(text);
    assert.ok(load !== null, `${unit}: LoadCredential=${id}:/etc/drydock/...`);
    // No secret is named by a plain path anywhere else in the unit.
    assert.equal(text.split('\n').filter((l) => l.startsWith(`Environment=${variable}=`)).length, 1, `${unit}: ${variable} set once`);
    assert.ok(!/^EnvironmentFile=.*(credential|secret|key)/im.test(text), `${unit}: no secret in an environment file`);
  }
});

test('every DRYDOCK_ variable the units and env examples set is a flag of its daemon', () => {
  const daemons = { master: 'master/main.js', agent: 'agent/main.js', scheduler: 'scheduler/main.js' } as const;
  for (const [name, bin] of Object.entries(daemons)) {
    const help = spawnSync(process.execPath, [join(ROOT, 'dist', bin), '--help'], { encoding: 'utf8', timeout: 20_000 }).stdout;
    assert.match(help, /--help/, `${name} --help`);
    const files = [`drydock-${name}.service`, `${name}.env.example`].map((f) => readFileSync(join(ROOT, 'systemd', f), 'utf8'));
    const vars = new Set<string>();
    for (const text of files) for (const m of text.matchAll(/^(?:#\s*)?(?:Environment=)?(DRYDOCK_[A-Z0-9_]+)=/gm)) vars.add(m[1] as string);
    assert.ok(vars.size > 2, `${name}: variables found`);
    for (const v of vars) {
      const flag = v.slice('DRYDOCK_'.length).toLowerCase();
      assert.ok(new RegExp(`--(\\[no-\\])?${flag}\\b`).test(help), `${name}: ${v} is no flag of drydock-${name} (--${flag})`);
    }
  }
});

/**
 * The unit files verify cleanly, both the ones in systemd/ and the packaged variants made from
 * them (scripts/package/units.ts; test/integration/package.test.ts verifies them installed too).
 * `systemd-analyze verify` reports unknown keys and bad values only as warnings on stderr with
 * exit 0, so any stderr output fails the test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { ROOT, tempDir } from '../helpers/daemons.js';
import { PACKAGED_DAEMONS, packagedEnv, packagedUnit, serviceExec } from '../../scripts/package/units.js';

/** The packaged units and env files, made from systemd/ as `npm run package` makes them, in a dir of their own. */
const PACKAGED = ((): string => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-units-'));
  process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
  for (const d of PACKAGED_DAEMONS) {
    writeFileSync(join(dir, d.unit), packagedUnit(readFileSync(join(ROOT, 'systemd', d.unit), 'utf8'), d));
    writeFileSync(join(dir, d.env.example), packagedEnv(readFileSync(join(ROOT, 'systemd', d.env.example), 'utf8'), d));
  }
  return dir;
})();

/** Where each variant's units and env files are. */
const VARIANTS = { source: join(ROOT, 'systemd'), packaged: PACKAGED } as const;

/**
 * A packaged unit to verify on a machine where the package is not installed: its ExecStart
 * program (/usr/bin/drydock-agent, /usr/lib/drydock/node) is not there, and verify checks that it
 * is executable. The copy runs a stand-in at the same path under a temp dir (a link to
 * /bin/true); every other directive is the packaged one.
 */
function verifiable(path: string, dir: string): string {
  const text = readFileSync(path, 'utf8');
  const program = serviceExec(text).argv[0] as string;
  const standIn = join(dir, 'root', program);
  mkdirSync(dirname(standIn), { recursive: true });
  rmSync(standIn, { force: true });
  symlinkSync('/bin/true', standIn);
  const out = join(dir, path.split('/').at(-1) as string);
  writeFileSync(out, text.replace(/^ExecStart=(\S+)/m, (_, p: string) => `ExecStart=${join(dir, 'root', p)}`));
  return out;
}

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
  test(`systemd-analyze verify of the packaged ${unit} passes without a warning`, (t) => {
    const r = verify(verifiable(join(PACKAGED, unit), tempDir(t)));
    assert.equal(r.stderr, '');
    assert.equal(r.status, 0);
  });
}

test('the packaged units differ from systemd/ only in the header and ExecStart, which runs the packaged program', () => {
  const body = (text: string): string[] => text.slice(text.indexOf('[Unit]')).split('\n').filter((l) => !l.startsWith('ExecStart='));
  for (const d of PACKAGED_DAEMONS) {
    const source = readFileSync(join(ROOT, 'systemd', d.unit), 'utf8');
    const packaged = readFileSync(join(PACKAGED, d.unit), 'utf8');
    assert.deepEqual(body(packaged), body(source), d.unit);
    const exec = serviceExec(packaged).argv;
    assert.deepEqual(exec.slice(0, d.exec.split(' ').length), d.exec.split(' '), d.unit);
    assert.deepEqual(exec.slice(d.exec.split(' ').length), serviceExec(source).argv.slice(2), `${d.unit}: the rest of the command line kept`);
    assert.doesNotMatch(packaged, /\/opt\/drydock|\/usr\/bin\/node/);
  }
  assert.deepEqual(serviceExec(readFileSync(join(PACKAGED, 'drydock-agent.service'), 'utf8')).argv, ['/usr/bin/drydock-agent']);
});

test('the packaged env files set nothing: every setting of the example is there, commented out', () => {
  for (const d of PACKAGED_DAEMONS) {
    const example = readFileSync(join(ROOT, 'systemd', d.env.example), 'utf8');
    const packaged = readFileSync(join(PACKAGED, d.env.example), 'utf8');
    assert.deepEqual(packaged.split('\n').filter((l) => /^[A-Z]/.test(l)), [], d.env.example);
    for (const l of example.split('\n').filter((x) => /^DRYDOCK_/.test(x))) assert.ok(packaged.includes(`# ${l}\n`), `${d.env.example}: ${l}`);
  }
});

test('the verify check catches a warning (a unit with an unknown key)', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'drydock-broken.service');
  copyFileSync(join(ROOT, 'systemd', 'drydock-agent.service'), path);
  writeFileSync(path, readFileSync(path, 'utf8').replace('KillMode=process', 'KillMode=process\nBogusKey=1'));
  const r = verify(path);
  assert.match(r.stderr, /BogusKey/);
});

test('the agent unit lets tasks outlive an agent restart and never loops on a refusal', () => {
  for (const dir of Object.values(VARIANTS)) {
    const text = readFileSync(join(dir, 'drydock-agent.service'), 'utf8');
    assert.match(text, /^KillMode=process$/m);
    assert.match(text, /^Restart=on-failure$/m);
    assert.match(text, /^RestartPreventExitStatus=.*\b78\b/m);
    assert.match(text, /^StateDirectory=drydock\/agent$/m);
  }
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
  for (const dir of Object.values(VARIANTS)) {
    const text = readFileSync(join(dir, 'drydock-scheduler.service'), 'utf8');
    assert.match(text, /^ExecStart=\S+ \S+scheduler\/main\.js --credentials=%d\/credentials$/m);
    assert.match(text, /^LoadCredential=credentials:\/etc\/drydock\/\S+$/m);
    assert.match(text, /^Environment=DRYDOCK_AUTHENTICATE_HTTP_READWRITE=true$/m);
    assert.match(text, /^Environment=DRYDOCK_AUTHENTICATE_HTTP_READONLY=true$/m);
    assert.doesNotMatch(text, /^Environment=DRYDOCK_CREDENTIALS=/m);
  }
});

test('the units hand every secret over with LoadCredential= and point its flag at %d', () => {
  for (const [unit, variable, id] of SECRETS) for (const dir of Object.values(VARIANTS)) {
    const text = readFileSync(join(dir, unit), 'utf8');
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
    const files = Object.values(VARIANTS).flatMap((dir) => [`drydock-${name}.service`, `${name}.env.example`].map((f) => readFileSync(join(dir, f), 'utf8')));
    const vars = new Set<string>();
    for (const text of files) for (const m of text.matchAll(/^(?:#\s*)?(?:Environment=)?(DRYDOCK_[A-Z0-9_]+)=/gm)) vars.add(m[1] as string);
    assert.ok(vars.size > 2, `${name}: variables found`);
    for (const v of vars) {
      const flag = v.slice('DRYDOCK_'.length).toLowerCase();
      assert.ok(new RegExp(`--(\\[no-\\])?${flag}\\b`).test(help), `${name}: ${v} is no flag of drydock-${name} (--${flag})`);
    }
  }
});

/**
 * The packaged units are made from systemd/ by a substitution that refuses a source it does not
 * understand, and a unit's ExecStart and environment are read as systemd reads them
 * (scripts/package/units.ts). The packages' version is package.json's, which the programs report.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from '../helpers/daemons.js';
import { PACKAGED_DAEMONS, packagedUnit, parseEnvironmentFile, serviceExec, serviceProcess, systemdWords } from '../../scripts/package/units.js';
import { DRYDOCK_VERSION } from '../../shared/version.js';

const AGENT = PACKAGED_DAEMONS.find((d) => d.unit === 'drydock-agent.service');
if (AGENT === undefined) throw new Error('no agent unit');

test('package.json and shared/version.ts name the same version (the packages use one, the programs report the other)', () => {
  assert.equal((JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version, DRYDOCK_VERSION);
});

test('the substitution refuses a source unit whose shape it does not know', () => {
  const ok = '# Drydock agent\n# install notes\n\n[Unit]\nDescription=x\n\n[Service]\nExecStart=/usr/bin/node /opt/drydock/dist/agent/main.js\n';
  assert.match(packagedUnit(ok, AGENT), /^ExecStart=\/usr\/bin\/drydock-agent$/m);
  assert.match(packagedUnit(ok, AGENT), /^# Installed by the drydock-agent package/m);
  for (const [why, text] of [
    ['no ExecStart on node', ok.replace('ExecStart=/usr/bin/node /opt/drydock/dist/agent/main.js', 'ExecStart=/usr/local/bin/drydock-agent')],
    ['two ExecStart lines', `${ok}ExecStart=/usr/bin/node /opt/drydock/dist/agent/main.js\n`],
    ['/opt/drydock left elsewhere', `${ok}Environment=X=/opt/drydock/x\n`],
    ['no header comment', ok.slice(ok.indexOf('[Unit]'))],
  ] as const) {
    assert.throws(() => packagedUnit(text, AGENT), Error, why);
  }
});

test('systemd words: quotes and escapes', () => {
  const cases: Array<[string, string[]]> = [
    ['/usr/bin/a --x=1 --y', ['/usr/bin/a', '--x=1', '--y']],
    ['"A=b c" D=e', ['A=b c', 'D=e']],
    ["'A=x y' \"B=\\\"q\\\"\"", ['A=x y', 'B="q"']],
    ['', []],
  ];
  for (const [input, words] of cases) assert.deepEqual(systemdWords(input), words, input);
});

test('environment files: comments, blanks, quotes', () => {
  assert.deepEqual(parseEnvironmentFile('# c\n; c\n\nA=1\n B = two \nC="x;y"\nD=\'z\'\nnot a line\n# E=commented\n'), [
    ['A', '1'],
    ['B', 'two'],
    ['C', 'x;y'],
    ['D', 'z'],
  ]);
});

test('a unit\'s process: Environment= in order, EnvironmentFile= over it, %d expanded, a missing required file refused', () => {
  const unit = [
    '[Unit]',
    'Description=x',
    '[Service]',
    'EnvironmentFile=-/etc/a.env',
    'ExecStart=/usr/bin/d --k=%d/key',
    'Environment=A=unit B=unit',
    'Environment=C=%d/c',
    'Environment="D=with space"',
    '[Install]',
    'Environment=IGNORED=1',
  ].join('\n');
  const files: Record<string, string> = { '/etc/a.env': 'B=file\n' };
  const p = serviceProcess(unit, { credentialsDirectory: '/run/credentials/d.service', readFile: (f) => files[f], base: { PATH: '/bin' } });
  assert.deepEqual(p.argv, ['/usr/bin/d', '--k=/run/credentials/d.service/key']);
  assert.deepEqual(p.env, { PATH: '/bin', CREDENTIALS_DIRECTORY: '/run/credentials/d.service', A: 'unit', B: 'file', C: '/run/credentials/d.service/c', D: 'with space' });
  assert.deepEqual(serviceExec(unit).environmentFiles, [{ path: '/etc/a.env', optional: true }]);
  // Optional and missing: skipped. Required and missing: systemd would not start it.
  assert.equal(serviceProcess(unit, { credentialsDirectory: '/c', readFile: () => undefined, base: {} }).env['B'], 'unit');
  assert.throws(() => serviceProcess(unit.replace('EnvironmentFile=-', 'EnvironmentFile='), { credentialsDirectory: '/c', readFile: () => undefined, base: {} }), /EnvironmentFile=\/etc\/a.env is missing/);
});

test('the shipped agent unit starts /usr/bin/drydock-agent with the work dir and secrets from the credentials directory', () => {
  const text = packagedUnit(readFileSync(join(ROOT, 'systemd', AGENT.unit), 'utf8'), AGENT);
  const p = serviceProcess(text, { credentialsDirectory: '/run/credentials/drydock-agent.service', readFile: () => 'DRYDOCK_MASTER=m:5050\n', base: {} });
  assert.deepEqual(p.argv, ['/usr/bin/drydock-agent']);
  assert.equal(p.env['DRYDOCK_MASTER'], 'm:5050');
  assert.equal(p.env['DRYDOCK_WORK_DIR'], '/var/lib/drydock/agent');
  assert.equal(p.env['DRYDOCK_CREDENTIAL'], '/run/credentials/drydock-agent.service/credential');
  assert.equal(p.env['DRYDOCK_TLS_KEY_FILE'], '/run/credentials/drydock-agent.service/tls-key');
});

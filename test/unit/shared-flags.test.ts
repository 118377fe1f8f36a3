import { test } from 'node:test';
import assert from 'node:assert/strict';
import { boolFlag, durationFlag, intFlag, optionalStringFlag, resolveFlags, stringFlag } from '../../shared/flags.js';

const spec = {
  master: optionalStringFlag('master address', 'host:port'),
  port: intFlag('port', 5051, 0, 65535),
  work_dir: stringFlag('work dir', '/var/lib/x'),
  agent_ping_timeout: durationFlag('ping timeout', 15_000),
  checkpoint: boolFlag('checkpoint', true),
};

function run(argv: string[], env: Record<string, string> = {}) {
  return resolveFlags('prog', 'summary', spec, argv, env);
}

test('defaults, then environment, then command line', () => {
  const r = run(['--port=6000', '--agent_ping_timeout', '2secs'], { DRYDOCK_PORT: '7000', DRYDOCK_WORK_DIR: '/tmp/w' });
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  assert.equal(r.values.port, 6000);
  assert.equal(r.values.work_dir, '/tmp/w');
  assert.equal(r.values.agent_ping_timeout, 2000);
  assert.equal(r.values.checkpoint, true);
  assert.equal(r.values.master, undefined);
  assert.equal(r.sources.port, 'flag');
  assert.equal(r.sources.work_dir, 'env');
  assert.ok(Object.isFrozen(r.values));
});

test('booleans: --name, --no-name, --name=false', () => {
  for (const [argv, want] of [[['--checkpoint'], true], [['--no-checkpoint'], false], [['--checkpoint=false'], false]] as const) {
    const r = run([...argv]);
    assert.equal(r.kind === 'ok' && r.values.checkpoint, want);
  }
});

const ERRORS: Array<[string[], Record<string, string>, RegExp]> = [
  [['--bogus=1'], {}, /Unknown flag '--bogus'/],
  [['--port=abc'], {}, /Invalid value 'abc' for --port: expected an integer/],
  [['--port=70000'], {}, /for --port: expected an integer in \[0, 65535\]/],
  [[], { DRYDOCK_PORT: 'x' }, /Invalid value 'x' for DRYDOCK_PORT/],
  [['--agent_ping_timeout=15'], {}, /for --agent_ping_timeout: Invalid duration/],
  [['--master'], {}, /Flag '--master' needs a value/],
  [['positional'], {}, /Unexpected argument 'positional'/],
];
for (const [argv, env, want] of ERRORS) {
  test(`error names the flag: ${JSON.stringify(argv)} ${JSON.stringify(env)}`, () => {
    const r = run(argv, env);
    assert.equal(r.kind, 'error');
    if (r.kind === 'error') assert.match(r.error, want);
  });
}

test('--help lists every flag with its environment name', () => {
  const r = run(['--help']);
  assert.equal(r.kind, 'help');
  if (r.kind !== 'help') return;
  for (const name of Object.keys(spec)) assert.match(r.text, new RegExp(`--(\\[no-\\])?${name}`));
  assert.match(r.text, /DRYDOCK_<FLAG>/);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { agentConfig, detectedResources, resolveAgentFlags, type MachineProbe } from '../../agent/config.js';
import { DEFAULT_TLS_CIPHERS } from '../../io/tls-server.js';

const probe: MachineProbe = {
  primaryIpv4: async () => '10.1.2.3',
  facts: async () => ({ cpus: 8, memBytes: 16 * 2 ** 30, diskBytes: 100 * 2 ** 30 }),
};

test('flag errors name the flag', () => {
  const cases: Array<[string[], Record<string, string>, RegExp]> = [
    [[], {}, /--master/],
    [['--master=h:1', '--bogus'], {}, /Unknown flag '--bogus'/],
    [['--master=nohost'], {}, /--master: expected host:port/],
    [['--master=h:1', '--resources=cpus:x'], {}, /--resources/],
    [['--master=h:1', '--attributes=rack'], {}, /--attributes/],
    [['--master=h:1', '--port=70000'], {}, /--port/],
    [['--master=h:1', '--registration_backoff_factor=soon'], {}, /--registration_backoff_factor/],
    [['--master=h:1', '--log_level=loud'], {}, /--log_level/],
    [['--master=h:1', '--priority_boost=40'], {}, /--priority_boost/],
    [['--master=h:1', '--priority_boost=-1'], {}, /--priority_boost/],
    [['--master=h:1'], { DRYDOCK_PORT: 'x' }, /DRYDOCK_PORT/],
  ];
  for (const [argv, env, want] of cases) {
    const r = resolveAgentFlags(argv, env);
    assert.equal(r.kind, 'error', argv.join(' '));
    if (r.kind === 'error') assert.match(r.error, want);
  }
});

test('flags come from the environment, the command line wins', async () => {
  const r = resolveAgentFlags(['--port=6000', '--registration_backoff_factor=10ms'], { DRYDOCK_MASTER: 'm:5050', DRYDOCK_PORT: '7000', DRYDOCK_HOSTNAME: 'box' });
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  const c = await agentConfig(r.values, probe);
  assert.equal(c.master, 'm:5050');
  assert.equal(c.port, 6000);
  assert.equal(c.hostname, 'box');
  assert.equal(c.ip, '10.1.2.3');
  assert.equal(c.registrationBackoffFactorMs, 10);
  assert.equal(c.statusUpdateRetryIntervalMs, 10_000);
  assert.equal(c.priorityBoost, 5);
  assert.equal(c.workDir, '/var/lib/drydock/agent');
  assert.ok(Object.isFrozen(c));
});

test('resources: detection fills what --resources leaves out, minus the system reservation', async () => {
  assert.deepEqual(detectedResources({ cpus: 2, memBytes: 1024 * 2 ** 20, diskBytes: 4096 * 2 ** 20 }).map((r) => r.scalar?.value ?? r.ranges), [
    2, 512, 2048, { range: [{ begin: 31000, end: 32000 }] },
  ]);
  const r = resolveAgentFlags(['--master=m:1', '--resources=cpus:3;gpus:1', '--ip=127.0.0.1'], {});
  assert.equal(r.kind, 'ok');
  if (r.kind !== 'ok') return;
  const c = await agentConfig(r.values, probe);
  assert.deepEqual(
    c.resources.map((x) => [x.name, x.scalar?.value]),
    [['cpus', 3], ['gpus', 1], ['mem', 16 * 1024 - 1024], ['disk', 100 * 1024 - 5120], ['ports', undefined]],
  );
  assert.equal(c.ip, '127.0.0.1');
});

test('--help is not an error', () => {
  const r = resolveAgentFlags(['--help'], {});
  assert.equal(r.kind, 'help');
  if (r.kind === 'help') assert.match(r.text, /--work_dir/);
});

test('security flags that need each other: mutual TLS on the API, etcd\'s TLS and user with --master=etcd://', async () => {
  const etcd = '--master=etcd://e1:2379,e2:2379/dd';
  const tls = ['--tls_cert_file=/c.pem', '--tls_key_file=/k.pem'];
  const refused: Array<[string[], Record<string, string>, string]> = [
    [['--master=m:5050', ...tls, '--tls_require_client_cert'], {}, '--tls_require_client_cert needs --tls_ca_file (the CA client certificates must chain to)'],
    [['--master=m:5050', '--tls_ca_file=/ca.pem', '--tls_require_client_cert'], {}, '--tls_require_client_cert needs --tls_cert_file and --tls_key_file'],
    [['--master=m:5050', '--tls_ca_file=/ca.pem'], { DRYDOCK_TLS_REQUIRE_CLIENT_CERT: 'true' }, '--tls_require_client_cert needs --tls_cert_file and --tls_key_file'],
    [[etcd, '--etcd_cert_file=/ec.pem'], {}, '--etcd_cert_file and --etcd_key_file go together'],
    [[etcd, '--etcd_key_file=/ek.pem'], {}, '--etcd_cert_file and --etcd_key_file go together'],
    [[etcd, '--etcd_user=dd'], {}, '--etcd_user and --etcd_password_file go together'],
    [[etcd], { DRYDOCK_ETCD_PASSWORD_FILE: '/pw' }, '--etcd_user and --etcd_password_file go together'],
    [['--master=m:5050', '--etcd_ca_file=/eca.pem'], {}, '--etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://...'],
    [['--master=m1:5050,m2:5050', '--etcd_user=dd', '--etcd_password_file=/pw'], {}, '--etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://...'],
  ];
  for (const [argv, env, error] of refused) assert.deepEqual(resolveAgentFlags(argv, env), { kind: 'error', error }, argv.join(' '));

  const mutual = resolveAgentFlags(['--master=m:5050', ...tls, '--tls_ca_file=/ca.pem', '--tls_require_client_cert'], {});
  assert.equal(mutual.kind, 'ok');
  if (mutual.kind !== 'ok') return;
  assert.deepEqual((await agentConfig(mutual.values, probe)).tls, { certFile: '/c.pem', keyFile: '/k.pem', caFile: '/ca.pem', requireClientCert: true, ciphers: DEFAULT_TLS_CIPHERS });
  const ciphers = resolveAgentFlags(['--master=m:5050', ...tls, '--tls_ciphers=ECDHE-ECDSA-AES128-SHA'], {});
  assert.ok(ciphers.kind === 'ok');
  assert.equal((await agentConfig(ciphers.values, probe)).tls.ciphers, 'ECDHE-ECDSA-AES128-SHA', '--tls_ciphers');
  assert.deepEqual(resolveAgentFlags(['--master=m:5050', '--tls_ciphers='], {}).kind, 'error', 'an empty list is refused');

  const secured = resolveAgentFlags([etcd, '--etcd_ca_file=/eca.pem', '--etcd_cert_file=/ec.pem', '--etcd_key_file=/ek.pem', '--etcd_user=dd'], { DRYDOCK_ETCD_PASSWORD_FILE: '/pw' });
  assert.equal(secured.kind, 'ok');
  if (secured.kind !== 'ok') return;
  const c = await agentConfig(secured.values, probe);
  assert.deepEqual(c.etcdAuth, { caFile: '/eca.pem', certFile: '/ec.pem', keyFile: '/ek.pem', user: 'dd', passwordFile: '/pw' });
  assert.ok(Object.isFrozen(c.etcdAuth));
  assert.deepEqual(c.tls, { certFile: undefined, keyFile: undefined, caFile: undefined, requireClientCert: false, ciphers: DEFAULT_TLS_CIPHERS });

  const help = resolveAgentFlags(['--help'], {});
  assert.ok(help.kind === 'help');
  for (const f of ['--[no-]tls_require_client_cert', '--tls_ciphers=LIST', '--etcd_ca_file=FILE', '--etcd_cert_file=FILE', '--etcd_key_file=FILE', '--etcd_user=USER', '--etcd_password_file=FILE']) assert.ok(help.text.includes(f), f);
});

test('the agent API\'s authentication flags: --authenticate_http_* need --http_credentials (exit 1 naming both), as the master\'s need --credentials', async () => {
  const refused: Array<[string[], Record<string, string>, string]> = [
    [['--master=m:5050', '--authenticate_http_readonly'], {}, '--authenticate_http_readonly needs --http_credentials=FILE (the principals and secrets to check)'],
    [['--master=m:5050', '--authenticate_http_readwrite'], {}, '--authenticate_http_readwrite needs --http_credentials=FILE (the principals and secrets to check)'],
    [['--master=m:5050', '--authenticate_http_readwrite', '--authenticate_http_readonly', '--acls={}'], {}, '--authenticate_http_readwrite needs --http_credentials=FILE (the principals and secrets to check)'],
    [['--master=m:5050'], { DRYDOCK_AUTHENTICATE_HTTP_READONLY: 'true' }, '--authenticate_http_readonly needs --http_credentials=FILE (the principals and secrets to check)'],
  ];
  for (const [argv, env, error] of refused) assert.deepEqual(resolveAgentFlags(argv, env), { kind: 'error', error }, argv.join(' '));
  assert.equal(resolveAgentFlags(['--master=m:5050', '--http_credentials='], {}).kind, 'error', 'an empty file name');

  // Credentials alone (checked where presented), ACLs alone (anonymous matches ANY): both fine, as on the master.
  for (const argv of [['--http_credentials=/c.json'], ['--acls=/acls.json']]) assert.equal(resolveAgentFlags(['--master=m:5050', ...argv], {}).kind, 'ok', argv.join(' '));

  const r = resolveAgentFlags(['--master=m:5050', '--authenticate_http_readonly', '--attributes=rack:r1;slots:[1-4]', '--resources=cpus:2;mem:512;disk:100;ports:[31000-31010]'], {
    DRYDOCK_AUTHENTICATE_HTTP_READWRITE: 'true',
    DRYDOCK_HTTP_CREDENTIALS: '/etc/drydock/agent-api.json',
    DRYDOCK_ACLS: 'file:///etc/drydock/acls.json',
  });
  assert.equal(r.kind, 'ok', r.kind === 'error' ? r.error : '');
  if (r.kind !== 'ok') return;
  const c = await agentConfig(r.values, probe);
  assert.deepEqual(c.security, { authenticateHttpReadonly: true, authenticateHttpReadwrite: true, httpCredentialsFile: '/etc/drydock/agent-api.json', acls: 'file:///etc/drydock/acls.json' });
  assert.ok(Object.isFrozen(c.security));
  // GET_FLAGS' list: every set flag in its text form, sorted by name.
  const flags = new Map(c.flags.map((f) => [f.name, f.value]));
  assert.deepEqual([...flags.keys()], [...flags.keys()].sort());
  assert.equal(flags.get('authenticate_http_readonly'), 'true');
  assert.equal(flags.get('http_credentials'), '/etc/drydock/agent-api.json');
  assert.equal(flags.get('attributes'), 'rack:r1;slots:[1-4]');
  assert.equal(flags.get('resources'), 'cpus:2;mem:512;disk:100;ports:[31000-31010]');
  assert.equal(flags.get('registration_backoff_factor'), '1secs');
  assert.equal(flags.has('credential'), false, 'unset optional flags are left out');

  const help = resolveAgentFlags(['--help'], {});
  assert.ok(help.kind === 'help');
  for (const f of ['--[no-]authenticate_http_readonly', '--[no-]authenticate_http_readwrite', '--http_credentials=FILE', '--acls=JSON|FILE']) assert.ok(help.text.includes(f), f);
});

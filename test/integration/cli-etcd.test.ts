/**
 * The CLI's `--master=etcd://...` against a secured etcd (issue 13): it reads the election with
 * etcd's own TLS and user (`--etcd_ca_file`, `--etcd_cert_file`/`--etcd_key_file`,
 * `--etcd_user`/`--etcd_password_file`, or their DRYDOCK_ETCD_* variables), finds the leader and
 * is answered; without them it finds no leader and says which flag to give (exit 1); a password
 * file others can read, a half pair, or an etcd flag with a master that is not etcd:// is a
 * usage error (exit 2) before anything is sent. The etcd and certificates are the TLS tests'
 * (scripts/harness/etcd.ts, certs.ts). Outside CI a machine without etcd skips.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { makeCertificates } from '../../scripts/harness/certs.js';
import { eventually, fileWithMode, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { addDrydockUsers, etcdctl, etcdctlMissing, etcdMissing, startEtcd } from '../helpers/etcd.js';
import { cliFinished, spawnCli } from '../helpers/cli.js';
import { CLEAN_CLIENT_ENV } from '../helpers/cluster.js';

const skipEtcd = etcdMissing();
const skipEtcdctl = etcdctlMissing();

/** The test's environment without any client setting of the developer's. */
const CLEAN: Readonly<Record<string, string | undefined>> = {
  ...CLEAN_CLIENT_ENV,
  DRYDOCK_ETCD_CA_FILE: undefined,
  DRYDOCK_ETCD_CERT_FILE: undefined,
  DRYDOCK_ETCD_KEY_FILE: undefined,
  DRYDOCK_ETCD_USER: undefined,
  DRYDOCK_ETCD_PASSWORD_FILE: undefined,
};

async function cli(t: TestContext, args: readonly string[], env: Readonly<Record<string, string | undefined>> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(spawnCli(t, args, { ...CLEAN, ...env }));
}

async function leading(m: MasterHandle): Promise<void> {
  await eventually(() => m.daemon.records.some((r) => r.msg === 'term started') || undefined, undefined, 50, 'the master leads');
}

/** The leader `drydock status --json` names: who the CLI found. */
function statusLeader(stdout: string): string | undefined {
  return (JSON.parse(stdout) as { master?: { leader?: string } | null }).master?.leader;
}

test('the CLI finds the leader through etcd over TLS as an etcd user: flags and DRYDOCK_ETCD_* work; without them, the wrong password, an open password file or an etcd flag without etcd:// are refused with a clear line', { skip: skipEtcdctl, timeout: 360_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-cli-etcd-');
  const c = makeCertificates(dir);
  const etcd = await startEtcd(t, { tls: { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile } });
  const prefix = '/cli-etcd';
  const ctl = etcdctl(etcd.endpoint, c.caFile);
  // root to enable auth; the master's user writes the prefix; the operators' may only read the election.
  addDrydockUsers(ctl, prefix);
  ctl('role', 'add', 'operator');
  ctl('role', 'grant-permission', 'operator', 'read', `${prefix}/election/`, '--prefix=true');
  ctl('user', 'add', 'ops:ops-etcd-secret');
  ctl('user', 'grant-role', 'ops', 'operator');
  ctl('auth', 'enable');
  const secret = (name: string, text: string, mode: number): string => fileWithMode(join(dir, name), text, mode);
  const masterPw = secret('master-pw', 'dd-secret\n', 0o600);
  const m = await startMaster(t, { flags: [`--etcd=etcd://${etcd.endpoint}${prefix}`, `--etcd_ca_file=${c.caFile}`, '--etcd_user=drydock', `--etcd_password_file=${masterPw}`, '--etcd_ttl=2secs'] });
  await leading(m);

  const master = `--master=etcd://${etcd.endpoint}${prefix}`;
  const pw = secret('ops-pw', 'ops-etcd-secret\n', 0o600);
  const etcdFlags = [`--etcd_ca_file=${c.caFile}`, '--etcd_user=ops', `--etcd_password_file=${pw}`];

  // With the flags: the leader is found and answers.
  const status = await cli(t, [master, ...etcdFlags, 'status', '--json']);
  assert.equal(status.code, 0, status.stderr);
  assert.equal(statusLeader(status.stdout), m.address);
  const agents = await cli(t, [master, ...etcdFlags, 'agent', 'list', '--json']);
  assert.equal(agents.code, 0, agents.stderr);
  assert.deepEqual((JSON.parse(agents.stdout) as { agents: unknown[] }).agents, []);
  // The same from the environment (DRYDOCK_MASTER too), through the maintenance plans' path.
  const fromEnv = {
    DRYDOCK_MASTER: `etcd://${etcd.endpoint}${prefix}`,
    DRYDOCK_ETCD_CA_FILE: c.caFile,
    DRYDOCK_ETCD_USER: 'ops',
    DRYDOCK_ETCD_PASSWORD_FILE: pw,
  };
  const plans = await cli(t, ['maintenance', 'plan', 'list', '--json'], fromEnv);
  assert.equal(plans.code, 0, plans.stderr);
  // drydock run subscribes at the leader found through etcd (no agent: no offer, exit 1 after it subscribed).
  const run = await cli(t, ['run', '--name', 'x', '--command', 'true', '--offer_timeout', '1secs'], fromEnv);
  assert.match(run.stderr, /^drydock run: subscribed as framework /m);

  const noLeader = (why: string): RegExp => new RegExp(`^drydock: no leading master found through etcd://127\\.0\\.0\\.1:\\d+/cli-etcd: ${why}\\n$`);
  // No etcd flag: etcd speaks TLS, and the line says which flag.
  const plain = await cli(t, [master, 'agent', 'list']);
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, noLeader('etcd 127\\.0\\.0\\.1:\\d+: fetch failed \\(UND_ERR_SOCKET\\): etcd closed the connection: does it speak TLS\\? give its CA with --etcd_ca_file \\(or DRYDOCK_ETCD_CA_FILE\\)'));
  // The CA but no user: etcd wants one.
  const anonymous = await cli(t, [master, `--etcd_ca_file=${c.caFile}`, 'agent', 'list']);
  assert.equal(anonymous.code, 1);
  assert.match(anonymous.stderr, noLeader('etcd requires authentication: give --etcd_user and --etcd_password_file'));
  // A wrong password: refused, naming the flags, never a password.
  const wrong = await cli(t, [master, `--etcd_ca_file=${c.caFile}`, '--etcd_user=ops', `--etcd_password_file=${secret('wrong-pw', 'not-it\n', 0o600)}`, 'maintenance', 'plan', 'list']);
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, noLeader("etcd refused user 'ops': .*authentication failed.*\\(check --etcd_user and --etcd_password_file\\)"));
  assert.doesNotMatch(wrong.stderr, /not-it|ops-etcd-secret/);

  // Usage errors: exit 2, before etcd or the master is asked.
  const openPw = secret('open-pw', 'ops-etcd-secret\n', 0o644);
  const usage: Array<[string[], Record<string, string>, string]> = [
    [[master, `--etcd_ca_file=${c.caFile}`, '--etcd_user=ops', `--etcd_password_file=${openPw}`, 'agent', 'list'], {}, `drydock: --etcd_password_file ${openPw} is readable by others (mode 0644); run chmod 600 on it\n`],
    [['maintenance', 'plan', 'list'], { ...fromEnv, DRYDOCK_ETCD_PASSWORD_FILE: openPw }, `drydock: --etcd_password_file ${openPw} is readable by others (mode 0644); run chmod 600 on it\n`],
    [[master, '--etcd_user=ops', 'agent', 'list'], {}, 'drydock: --etcd_user and --etcd_password_file go together\n'],
    [[master, `--etcd_cert_file=${c.clientCertFile}`, 'status'], {}, 'drydock: --etcd_cert_file and --etcd_key_file go together\n'],
    [[`--master=${m.address}`, ...etcdFlags, 'agent', 'list'], {}, 'drydock: --etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://... (or DRYDOCK_MASTER)\n'],
    [['run', '--master', m.address, '--name', 'x', '--command', 'true'], { DRYDOCK_ETCD_CA_FILE: c.caFile }, 'drydock: --etcd_ca_file, --etcd_cert_file and --etcd_user need --master=etcd://... (or DRYDOCK_MASTER)\n'],
  ];
  for (const [args, env, stderr] of usage) {
    const r = await cli(t, args, env);
    // drydock run's own failures are 125, usage included (its task's status is its own).
    assert.deepEqual([r.code, r.stderr], [args[0] === 'run' ? 125 : 2, stderr], args.join(' '));
  }
  assert.equal((await cli(t, [master, '--etcd_user=', `--etcd_password_file=${pw}`, 'agent', 'list'])).stderr, 'drydock: --etcd_user must not be empty\n');
});

test('the CLI presents --etcd_cert_file/--etcd_key_file to an etcd with --client-cert-auth; without them it says etcd closed the connection', { skip: skipEtcd, timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-cli-etcd-mtls-');
  const c = makeCertificates(dir);
  const etcd = await startEtcd(t, { tls: { certFile: c.certFile, keyFile: c.keyFile, caFile: c.caFile, clientCertAuth: true, clientCertFile: c.clientCertFile, clientKeyFile: c.clientKeyFile } });
  const prefix = '/cli-etcd-mtls';
  const m = await startMaster(t, { flags: [`--etcd=etcd://${etcd.endpoint}${prefix}`, `--etcd_ca_file=${c.caFile}`, `--etcd_cert_file=${c.clientCertFile}`, `--etcd_key_file=${c.clientKeyFile}`, '--etcd_ttl=2secs'] });
  await leading(m);
  const master = `--master=etcd://${etcd.endpoint}${prefix}`;

  const ok = await cli(t, [master, 'status', '--json'], { DRYDOCK_ETCD_CA_FILE: c.caFile, DRYDOCK_ETCD_CERT_FILE: c.clientCertFile, DRYDOCK_ETCD_KEY_FILE: c.clientKeyFile });
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(statusLeader(ok.stdout), m.address);

  const noCert = await cli(t, [master, `--etcd_ca_file=${c.caFile}`, 'agent', 'list']);
  assert.equal(noCert.code, 1);
  assert.match(noCert.stderr, /^drydock: no leading master found through etcd:\/\/127\.0\.0\.1:\d+\/cli-etcd-mtls: etcd 127\.0\.0\.1:\d+: fetch failed.*: etcd closed the TLS connection: does it want a client certificate \(--etcd_cert_file, --etcd_key_file\)\?\n$/);
  // The wrong CA for etcd: its certificate does not verify.
  const other = makeCertificates(dir, 'other');
  const wrongCa = await cli(t, [master, `--etcd_ca_file=${other.caFile}`, `--etcd_cert_file=${c.clientCertFile}`, `--etcd_key_file=${c.clientKeyFile}`, 'agent', 'list']);
  assert.equal(wrongCa.code, 1);
  assert.match(wrongCa.stderr, /: etcd's certificate does not verify: is --etcd_ca_file its CA\?\n$/);
});

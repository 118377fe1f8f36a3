/**
 * The service scheduler's own HTTP API behind credentials and TLS (issue 13 follow-up): a real
 * drydock-scheduler with `--credentials --authenticate_http_readwrite
 * --authenticate_http_readonly --tls_cert_file --tls_key_file`. Anonymous and wrong credentials
 * get 401 with the `drydock-scheduler` realm; the right ones (Basic or a token) over https with
 * the CA get the API; a plan verb refused changes nothing; every mutating call is audited; plain
 * HTTP to the port gets the 400; /v1/health stays open. The CLI (`drydock plan`, `drydock pod`)
 * sends the same credential and TLS options it sends the master, with its exit statuses. The
 * scheduler refuses to start with a credentials file others can read, or a half TLS pair. And
 * `npm start -- --secure --service=…` runs the scheduler so, and the banner's commands work.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Daemon, ROOT, SCHEDULER_BIN, alive, EVENT_DEADLINE_MS, eventually, startMaster, startScheduler, tempDir, type SchedulerHandle } from '../helpers/daemons.js';
import { CLEAN_CLIENT_ENV, startCluster } from '../helpers/cluster.js';
import { cliFinished, spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { makeCertificates, type Certificates } from '../../scripts/harness/certs.js';
import { clientTransport, type ClientTransport } from '../../io/transport.js';
import { PLAIN_HTTP_ON_TLS_PORT } from '../../io/tls-server.js';

const OPS_SECRET = 'ops-s3cret-77aa';
const OPS_TOKEN = 'ops-token-fedcba9876543210';

const CLEAN = CLEAN_CLIENT_ENV;

const SPEC = `name: hello
pods:
  hello:
    count: 1
    tasks:
      server:
        cmd: 'exec sleep 1000'
        cpus: 0.1
        memory: 16
plans:
  deploy:
    strategy: serial
    phases:
      hello-deploy: { pod: hello, strategy: serial }
`;

interface Files {
  dir: string;
  spec: string;
  credentials: string;
  opsSecret: string;
  certs: Certificates;
  other: Certificates;
}

function files(t: TestContext): Files {
  const dir = tempDir(t, 'drydock-scheduler-auth-');
  const secret = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, 0o600);
    return path;
  };
  const spec = join(dir, 'service.yml');
  writeFileSync(spec, SPEC);
  return {
    dir,
    spec,
    credentials: secret('credentials.json', JSON.stringify({ credentials: [{ principal: 'ops', secret: OPS_SECRET, tokens: [OPS_TOKEN] }] })),
    opsSecret: secret('ops.secret', `${OPS_SECRET}\n`),
    certs: makeCertificates(join(dir, 'tls')),
    other: makeCertificates(join(dir, 'other'), 'other'),
  };
}

const SECURE_FLAGS = (f: Files): string[] => [
  `--credentials=${f.credentials}`, '--authenticate_http_readwrite', '--authenticate_http_readonly',
  `--tls_cert_file=${f.certs.certFile}`, `--tls_key_file=${f.certs.keyFile}`,
];

/** A client trusting the CA, with a credential or none. */
function client(caFile: string, credential?: { principal: string; secret: string } | { token: string }): ClientTransport {
  const c = credential === undefined ? undefined : 'token' in credential ? { kind: 'bearer' as const, token: credential.token } : { kind: 'basic' as const, ...credential };
  return clientTransport({ credential: c, tls: { ca: readFileSync(caFile, 'utf8'), cert: undefined, key: undefined } });
}

interface Reply { status: number; text: string; json: unknown; headers: Headers }

async function call(transport: ClientTransport, url: string, method = 'GET'): Promise<Reply> {
  const res = await transport.fetch(url, { method, headers: transport.headers, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

/** `drydock ARGS` over a clean environment plus `env`. */
async function cli(t: TestContext, args: readonly string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(spawnCli(t, args, { ...CLEAN, ...env }));
}

/** The plan's status and its steps' statuses: what a refused verb must leave as it was. */
function planState(json: unknown): string {
  const p = json as { status: string; phases: Array<{ status: string; steps: Array<{ name: string; status: string }> }> };
  return JSON.stringify([p.status, p.phases.map((ph) => [ph.status, ph.steps.map((s) => [s.name, s.status])])]);
}

async function secureScheduler(t: TestContext, f: Files): Promise<{ s: SchedulerHandle; url: string }> {
  const m = await startMaster(t);
  const s = await startScheduler(t, { master: m.address, spec: f.spec, flags: [...SECURE_FLAGS(f), '--offer_hold=200ms'] });
  const listening = await s.daemon.waitForMsg('listening');
  assert.equal(listening['tls'], true);
  assert.equal(listening['authenticateHttpReadwrite'], true);
  assert.equal(listening['authenticateHttpReadonly'], true);
  assert.equal(listening['principals'], 1);
  // A TLS API does not make the master be asked over https (no --tls_ca_file): it subscribes.
  assert.equal(listening['masterTls'], false);
  await s.daemon.waitForMsg('subscribed');
  return { s, url: `https://127.0.0.1:${s.port}` };
}

test('the scheduler API with credentials and TLS: 401s with its realm, the credential over https, a refused verb changes nothing, audit lines, plain HTTP 400, health open', { timeout: 300_000 }, async (t) => {
  const f = files(t);
  const { s, url } = await secureScheduler(t, f);
  const anonymous = client(f.certs.caFile);
  const ops = client(f.certs.caFile, { principal: 'ops', secret: OPS_SECRET });

  // Anonymous and wrong credentials: 401, the realm in WWW-Authenticate; reads and pods alike.
  for (const [who, transport] of [['anonymous', anonymous], ['wrong secret', client(f.certs.caFile, { principal: 'ops', secret: 'not-it' })], ['unknown token', client(f.certs.caFile, { token: 'tok-0000000000000000' })]] as const) {
    for (const path of ['/v1/plans', '/v1/plans/deploy', '/v1/pod', '/v1/pod/status', '/v1/configurations']) {
      const r = await call(transport, `${url}${path}`);
      assert.equal(r.status, 401, `${who} GET ${path}: ${r.text}`);
      assert.equal(r.text, '401 Unauthorized.');
      assert.equal(r.headers.get('www-authenticate'), 'Basic realm="drydock-scheduler"');
    }
  }

  // The right credential, Basic or a bearer token, over https with the CA.
  const plans = await call(ops, `${url}/v1/plans`);
  assert.equal(plans.status, 200, plans.text);
  assert.ok(Array.isArray(plans.json) && plans.json.includes('deploy'), plans.text);
  assert.equal((await call(client(f.certs.caFile, { token: OPS_TOKEN }), `${url}/v1/pod`)).status, 200);
  assert.deepEqual((await call(ops, `${url}/v1/pod`)).json, ['hello-0']);

  // A plan verb and a pod verb, anonymous: 401, and the plan is as it was.
  const before = await call(ops, `${url}/v1/plans/deploy`);
  const auditsBefore = s.daemon.records.filter((r) => r.msg === 'audit').length;
  for (const path of ['/v1/plans/deploy/interrupt', '/v1/plans/deploy/force-complete?phase=hello-deploy&step=hello-0:[server]', '/v1/pod/hello-0/replace']) {
    const r = await call(anonymous, `${url}${path}`, 'POST');
    assert.equal(r.status, 401, `POST ${path}: ${r.text}`);
    assert.equal(r.headers.get('www-authenticate'), 'Basic realm="drydock-scheduler"');
  }
  const wrongVerb = await call(client(f.certs.caFile, { principal: 'ops', secret: 'not-it' }), `${url}/v1/plans/deploy/stop`, 'POST');
  assert.equal(wrongVerb.status, 401);
  const after = await call(ops, `${url}/v1/plans/deploy`);
  assert.equal(planState(after.json), planState(before.json), 'a refused verb changes nothing');
  assert.notEqual((after.json as { status: string }).status, 'WAITING');
  // Each refusal is audited, without a principal.
  const refused = await s.daemon.waitForMsg('audit', { action: 'POST /v1/pod/hello-0/replace' });
  assert.deepEqual({ principal: refused['principal'], outcome: refused['outcome'], status: refused['status'] }, { principal: null, outcome: 'unauthenticated', status: 401 });
  const forced = await s.daemon.waitForMsg('audit', { action: 'POST /v1/plans/deploy/force-complete' });
  assert.equal(forced['query'], 'phase=hello-deploy&step=hello-0:[server]');

  // The same verb with the credential goes through, and is audited with the principal.
  const interrupted = await call(ops, `${url}/v1/plans/deploy/interrupt`, 'POST');
  assert.equal(interrupted.status, 200, interrupted.text);
  assert.equal(((await call(ops, `${url}/v1/plans/deploy`)).json as { status: string }).status, 'WAITING');
  const allowed = await s.daemon.waitForMsg('audit', { action: 'POST /v1/plans/deploy/interrupt', principal: 'ops' });
  assert.deepEqual({ outcome: allowed['outcome'], status: allowed['status'], component: allowed['component'] }, { outcome: 'allowed', status: 200, component: 'audit' });
  // Reads are not audited: 4 refusals and one allowed call, nothing for the GETs. A last refused
  // call's audit line comes after any line the reads before it would have made.
  assert.equal((await call(anonymous, `${url}/v1/plans/deploy/start`, 'POST')).status, 401);
  await s.daemon.waitForMsg('audit', { action: 'POST /v1/plans/deploy/start' });
  assert.equal(s.daemon.records.filter((r) => r.msg === 'audit').length - auditsBefore, 6);
  // No secret in any log line.
  assert.ok(!s.daemon.stdout.some((l) => l.includes(OPS_SECRET) || l.includes('not-it')), 'no secret logged');

  // /v1/health is open (probes have no credential): its own codes, never 401.
  const health = await call(anonymous, `${url}/v1/health`);
  assert.notEqual(health.status, 401);
  assert.equal(typeof (health.json as { value?: unknown }).value, 'number', health.text);

  // Plain HTTP to the TLS port: the 400 that says to use https://, and the scheduler stays up.
  const plain = await fetch(`http://127.0.0.1:${s.port}/v1/plans`, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(plain.status, 400);
  assert.equal(await plain.text(), `${PLAIN_HTTP_ON_TLS_PORT}\n`);
  await s.daemon.waitForMsg('plain HTTP on the TLS port refused');
  // Another CA: the handshake fails, nothing is served.
  await assert.rejects(call(client(f.other.caFile, { principal: 'ops', secret: OPS_SECRET }), `${url}/v1/plans`));
  assert.equal((await call(ops, `${url}/v1/plans`)).status, 200, 'still serving');
});

test('the CLI sends the scheduler its credential and TLS options: plan and pod commands, 401 lines (exit 3), https from --tls_ca_file', { timeout: 480_000 }, async (t) => {
  const f = files(t);
  const { s } = await secureScheduler(t, f);
  const at = `--scheduler=${s.address}`;
  const ca = ['--tls_ca_file', f.certs.caFile];
  const asOps = [...ca, '--principal', 'ops', '--secret_file', f.opsSecret];

  // --principal/--secret_file and --tls_ca_file: https by itself (no scheme in --scheduler).
  const list = await cli(t, ['plan', 'list', at, ...asOps]);
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /^deploy$/m);
  const pods = await cli(t, ['pod', 'list', at, ...asOps]);
  assert.equal(pods.code, 0, pods.stderr);
  assert.equal(pods.stdout, 'hello-0\n');
  // The environment, as `npm start -- --secure` prints it; a token too; an https:// scheduler.
  for (const env of [{ DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}`, DRYDOCK_TLS_CA_FILE: f.certs.caFile }, { DRYDOCK_CREDENTIALS: `Bearer ${OPS_TOKEN}`, DRYDOCK_TLS_CA_FILE: f.certs.caFile, DRYDOCK_SCHEDULER: `https://${s.address}` }]) {
    const r = await cli(t, ['plan', 'show', 'deploy', ...(env.DRYDOCK_SCHEDULER === undefined ? [at] : [])], env);
    assert.equal(r.code, 0, `${JSON.stringify(Object.keys(env))}: ${r.stderr}`);
    assert.match(r.stdout, /^deploy \(serial\) /);
  }
  // A verb: done, and audited under ops.
  const interrupt = await cli(t, ['plan', 'interrupt', 'deploy', at, ...asOps]);
  assert.equal(interrupt.code, 0, interrupt.stderr);
  assert.match(interrupt.stdout, /Received cmd: interrupt/);
  await s.daemon.waitForMsg('audit', { action: 'POST /v1/plans/deploy/interrupt', principal: 'ops', outcome: 'allowed' });

  // No credential: the line that says how to give one, exit 3, nothing sent changes anything.
  for (const args of [['plan', 'list'], ['plan', 'continue', 'deploy'], ['pod', 'restart', 'hello-0'], ['plan', 'show', 'deploy', '--watch']]) {
    const r = await cli(t, [...args, at, ...ca]);
    assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, 'drydock: the scheduler wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS\n', args.join(' '));
    assert.equal(r.stdout, '');
  }
  const still = await cli(t, ['plan', 'show', 'deploy', at, ...asOps, '--json']);
  assert.equal((JSON.parse(still.stdout) as { status: string }).status, 'WAITING', 'the anonymous continue changed nothing');
  // A wrong secret: refused, said as such, exit 3.
  const wrong = await cli(t, ['pod', 'list', at, ...ca], { DRYDOCK_CREDENTIALS: 'ops:not-the-secret' });
  assert.equal(wrong.code, 3);
  assert.equal(wrong.stderr, "drydock: the scheduler refused the credential of principal 'ops' (from DRYDOCK_CREDENTIALS) (401): wrong principal or secret, or an unknown token\n");
  // Without the CA (an https:// scheduler) the certificate does not verify; without TLS material
  // the CLI asks over http://, and the port's 400 says what to do.
  const noCa = await cli(t, ['plan', 'list', `--scheduler=https://${s.address}`], { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` });
  assert.equal(noCa.code, 1);
  assert.match(noCa.stderr, /^drydock: cannot reach the scheduler at https:\/\/127\.0\.0\.1:\d+ \([A-Z_]+: its certificate does not verify: give its CA with --tls_ca_file \(or DRYDOCK_TLS_CA_FILE\)\); set --scheduler or DRYDOCK_SCHEDULER\n$/);
  const plain = await cli(t, ['plan', 'list', at], { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` });
  assert.equal(plain.code, 1);
  assert.equal(plain.stderr, `drydock: scheduler at http://${s.address} answered 400: ${PLAIN_HTTP_ON_TLS_PORT}\n`);
});

test('the scheduler refuses to start with a credentials file others can read, --authenticate_* without --credentials, or half a TLS pair (exit 1)', { timeout: 180_000 }, async (t) => {
  const f = files(t);
  const workDir = tempDir(t, 'drydock-scheduler-auth-work-');
  const start = async (flags: string[]): Promise<{ code: number | null; stderr: string }> => {
    const d = new Daemon(SCHEDULER_BIN, [`--spec=${f.spec}`, '--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${workDir}`, ...flags], { DRYDOCK_CREDENTIALS: '' });
    t.after(() => d.stop(1_000, 'SIGKILL'));
    const e = await d.exitWithin();
    if (e === undefined) throw new Error(`still running; stdout ${d.stdout.join('\n')}`);
    return { code: e.code, stderr: d.stderr };
  };
  chmodSync(f.credentials, 0o644);
  const open = await start([`--credentials=${f.credentials}`, '--authenticate_http_readwrite']);
  assert.deepEqual(open, { code: 1, stderr: `drydock-scheduler: --credentials ${f.credentials} is readable by others (mode 0644); run chmod 600 on it\n` });
  chmodSync(f.credentials, 0o600);
  assert.deepEqual(await start(['--authenticate_http_readonly']), { code: 1, stderr: 'drydock-scheduler: --authenticate_http_readonly needs --credentials=FILE (the principals and secrets to check)\n' });
  assert.deepEqual(await start([`--tls_cert_file=${f.certs.certFile}`]), { code: 1, stderr: 'drydock-scheduler: --tls_cert_file and --tls_key_file go together\n' });
  const mismatched = await start([`--tls_cert_file=${f.certs.certFile}`, `--tls_key_file=${f.other.keyFile}`]);
  assert.equal(mismatched.code, 1);
  assert.match(mismatched.stderr, /^drydock-scheduler: --tls_cert_file \S+ and --tls_key_file \S+ cannot serve TLS: /);
});

test('npm start -- --secure --service: the scheduler serves HTTPS and wants ops\' credential; the banner\'s commands work; all stopped', { timeout: 180_000 }, async (t) => {
  const workDir = tempDir(t, 'drydock-cluster-secure-service-');
  const [port, agentPort, schedulerPort] = [await freePort(), await freePort('127.0.0.2'), await freePort()];
  const run = await startCluster(t, ['--secure', '--agents=1', `--port=${port}`, `--agent_port=${agentPort}`, `--scheduler_port=${schedulerPort}`, `--service=${join(ROOT, 'examples', 'hello.yml')}`, `--work_dir=${workDir}`, '--quiet'], 90_000);
  const { child, pids, exited } = run;
  let out = run.output();
  assert.equal(pids.length, 3, `a master, an agent and a scheduler in the banner:\n${out}`);
  const at = `127.0.0.1:${schedulerPort}`;
  assert.match(out, new RegExp(`scheduler https://127\\.0\\.0\\.1:${schedulerPort} `));
  const credentials = /export DRYDOCK_CREDENTIALS=(\S+)/.exec(out)?.[1];
  const ca = /export DRYDOCK_TLS_CA_FILE=(\S+)/.exec(out)?.[1];
  assert.ok(credentials !== undefined && ca !== undefined, out);
  // `drydock` when it is on the PATH (npm link), else the checkout's path.
  assert.ok(out.includes(`  node dist/cli/main.js plan show deploy --scheduler ${at}\n`) || out.includes(`  drydock plan show deploy --scheduler ${at}\n`), out);
  assert.ok(out.includes(`curl -s --cacert ${ca} -u ${credentials} https://${at}/v1/plans\n`), out);

  // The banner's commands, with its exports: over https as ops.
  const exported = { DRYDOCK_CREDENTIALS: credentials, DRYDOCK_TLS_CA_FILE: ca };
  const show = await eventually(async () => {
    const r = await cli(t, ['plan', 'show', 'deploy', '--scheduler', at], exported);
    return r.code === 0 ? r : undefined;
  }, undefined, 500, 'plan show deploy as ops');
  assert.match(show.stdout, /^deploy \(serial\) /);
  const status = await cli(t, ['pod', 'status', '--scheduler', at], exported);
  assert.equal(status.code, 0, status.stderr);
  assert.match(status.stdout, /^POD\s+TASK/);
  // Anonymous, and the viewer (in the master's file, not the scheduler's): 401, exit 3.
  const anon = await cli(t, ['plan', 'list', '--scheduler', at], { DRYDOCK_TLS_CA_FILE: ca });
  assert.equal(anon.code, 3, anon.stderr);
  const viewerLine = /--principal viewer --secret_file (\S+)/.exec(out);
  assert.ok(viewerLine !== null, out);
  const viewer = await cli(t, ['pod', 'list', '--scheduler', at, '--tls_ca_file', ca, '--principal', 'viewer', '--secret_file', viewerLine[1] as string]);
  assert.equal(viewer.code, 3, viewer.stderr);
  assert.match(viewer.stderr, /^drydock: the scheduler refused the credential of principal 'viewer'/);
  // Health stays open, over https.
  const health = await client(ca).fetch(`https://${at}/v1/health`, { signal: AbortSignal.timeout(10_000) });
  assert.notEqual(health.status, 401);

  child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise<string>((r) => (timer = setTimeout(() => r('timeout'), 60_000)))]);
  clearTimeout(timer);
  out = run.output();
  assert.equal(code, 0, out);
  for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} is gone`);
  assert.equal(existsSync(join(workDir, 'secure')), false, 'the throwaway CA and secrets are removed');
});

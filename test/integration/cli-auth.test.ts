/**
 * The CLI against a master that wants credentials (issue 13, "Everywhere else"): without any it
 * says how to give them (exit 3); `--principal`/`--secret_file`, `DRYDOCK_CREDENTIALS` and a
 * bearer token work; an ACL refusal prints the master's message (exit 4) and changes nothing; a
 * secret file others can read is refused before anything is sent (exit 2). Over TLS with
 * `--tls_ca_file`, and refused without the CA. A standby's 307 keeps the credential. And
 * `npm start -- --secure` comes up, answers the CLI with the credentials it prints, over TLS,
 * and refuses an anonymous one; its agents' own API takes the same credentials.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { alive, callApi, startAgent, startMaster, tempDir } from '../helpers/daemons.js';
import type { ClientCredential } from '../../shared/credentials.js';
import { CLEAN_CLIENT_ENV, startCluster } from '../helpers/cluster.js';
import { cliFinished, spawnCli } from '../helpers/cli.js';
import { freePort } from '../helpers/ports.js';
import { makeCertificates } from '../../scripts/harness/certs.js';
import { sendFollowing } from '../../io/client-auth.js';
import { clientTransport } from '../../io/transport.js';

const OPS_SECRET = 'ops-s3cret-9f2c';
const VIEWER_SECRET = 'viewer-s3cret-41d0';
const OPS_TOKEN = 'ops-token-0123456789abcdef';

const CLEAN = CLEAN_CLIENT_ENV;

/** ops may do everything; viewer may only look; anybody may register agents (the test's agent is anonymous). */
const ACLS = {
  permissive: false,
  register_agents: [{ principals: { type: 'ANY' }, agents: { type: 'ANY' } }],
  register_frameworks: [{ principals: { values: ['ops'] }, roles: { type: 'ANY' } }],
  run_tasks: [{ principals: { values: ['ops'] }, users: { type: 'ANY' } }],
  teardown_frameworks: [{ principals: { values: ['ops'] }, framework_principals: { type: 'ANY' } }],
  view_agents: [{ principals: { values: ['ops', 'viewer'] }, agents: { type: 'ANY' } }],
  view_frameworks: [{ principals: { values: ['ops', 'viewer'] }, users: { type: 'ANY' } }],
  view_tasks: [{ principals: { values: ['ops', 'viewer'] }, users: { type: 'ANY' } }],
  get_maintenance_schedules: [{ principals: { values: ['ops', 'viewer'] }, machines: { type: 'ANY' } }],
  get_maintenance_statuses: [{ principals: { values: ['ops', 'viewer'] }, machines: { type: 'ANY' } }],
  update_maintenance_schedules: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
  start_maintenances: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
  stop_maintenances: [{ principals: { values: ['ops'] }, machines: { type: 'ANY' } }],
  drain_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
  deactivate_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }],
  view_maintenance_plans: [{ principals: { values: ['ops', 'viewer'] }, machines: { type: 'ANY' } }],
};

interface Files {
  dir: string;
  credentials: string;
  acls: string;
  opsSecret: string;
  viewerSecret: string;
}

function writeFiles(t: TestContext): Files {
  const dir = tempDir(t, 'drydock-cli-auth-');
  const secret = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, 0o600);
    return path;
  };
  return {
    dir,
    credentials: secret('credentials.json', JSON.stringify({ credentials: [{ principal: 'ops', secret: OPS_SECRET, tokens: [OPS_TOKEN] }, { principal: 'viewer', secret: VIEWER_SECRET }] })),
    acls: secret('acls.json', JSON.stringify(ACLS)),
    opsSecret: secret('ops.secret', `${OPS_SECRET}\n`),
    viewerSecret: secret('viewer.secret', `${VIEWER_SECRET}\n`),
  };
}

function securityFlags(f: Files): string[] {
  return ['--authenticate_http_readwrite', '--authenticate_http_readonly', '--authenticate_frameworks', `--credentials=${f.credentials}`, `--acls=${f.acls}`];
}

/** `drydock ARGS` with `env` over a clean environment; resolves with its exit status and output. */
async function cli(t: TestContext, args: readonly string[], env: Record<string, string | undefined> = {}): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return cliFinished(spawnCli(t, args, { ...CLEAN, ...env }));
}

const WANTS = 'drydock: the master wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS\n';

test('the CLI and a master that wants credentials: 401 line (3), flags, DRYDOCK_CREDENTIALS, bearer, 403 (4) changes nothing, 0644 refused (2)', { timeout: 540_000 }, async (t) => {
  const f = writeFiles(t);
  const m = await startMaster(t, { flags: [...securityFlags(f), '--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'agent-1' });
  const at = `--master=${m.address}`;

  // No credential: the line that says how to give one, exit 3; for the plan API's path too.
  for (const args of [['agent', 'list'], ['maintenance', 'plan', 'list'], ['tasks']]) {
    const r = await cli(t, [at, ...args]);
    assert.equal(r.code, 3, `${args.join(' ')}: ${r.stderr}`);
    assert.equal(r.stderr, WANTS, args.join(' '));
    assert.equal(r.stdout, '');
  }

  // --principal and --secret_file.
  const flags = await cli(t, [at, '--principal', 'ops', '--secret_file', f.opsSecret, 'agent', 'list']);
  assert.equal(flags.code, 0, flags.stderr);
  assert.match(flags.stdout, /agent-1\s+127\.0\.0\.2:\d+\s+ACTIVE/);
  // The environment: principal:secret, a bearer token, DRYDOCK_PRINCIPAL + DRYDOCK_SECRET_FILE.
  for (const env of [{ DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` }, { DRYDOCK_CREDENTIALS: `Bearer ${OPS_TOKEN}` }, { DRYDOCK_PRINCIPAL: 'viewer', DRYDOCK_SECRET_FILE: f.viewerSecret }]) {
    const r = await cli(t, [at, 'agent', 'list'], env);
    assert.equal(r.code, 0, `${Object.keys(env).join(',')}: ${r.stderr}`);
    assert.match(r.stdout, /agent-1/);
  }
  const plans = await cli(t, [at, 'maintenance', 'plan', 'list'], { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` });
  assert.equal(plans.code, 0, plans.stderr);

  // A wrong secret is refused: said as such, exit 3.
  const wrong = await cli(t, [at, 'agent', 'list'], { DRYDOCK_CREDENTIALS: 'ops:not-the-secret' });
  assert.equal(wrong.code, 3);
  assert.equal(wrong.stderr, "drydock: the master refused the credential of principal 'ops' (from DRYDOCK_CREDENTIALS) (401): wrong principal or secret, or an unknown token\n");

  // The viewer may look, not act: the master's 403 message names the action and the principal.
  const viewer = ['--principal', 'viewer', '--secret_file', f.viewerSecret];
  const down = await cli(t, [at, ...viewer, 'machine', 'down', 'agent-1=127.0.0.2']);
  assert.equal(down.code, 4, down.stderr);
  assert.equal(down.stderr, "drydock: master answered 403: Forbidden: principal 'viewer' may not start_maintenances on machine agent-1 (127.0.0.2)\n");
  // Nor preview it: the impact preview is authorized as the action.
  const dry = await cli(t, [at, ...viewer, 'machine', 'down', 'agent-1=127.0.0.2', '--dry-run']);
  assert.equal(dry.code, 4, dry.stderr);
  assert.equal(dry.stderr, "drydock: master answered 403: Forbidden: principal 'viewer' may not start_maintenances on machine agent-1 (127.0.0.2)\n");
  const drain = await cli(t, [at, ...viewer, 'agent', 'drain', 'agent-1', '--wait']);
  assert.equal(drain.code, 4, drain.stderr);
  assert.match(drain.stderr, /^drydock: master answered 403: Forbidden: principal 'viewer' may not drain_agents on agent \S+ on agent-1 \(127\.0\.0\.2\)\n$/);
  // Nothing changed: the agent is not draining and no machine is DOWN.
  const after = await cli(t, [at, ...viewer, 'agent', 'list']);
  assert.match(after.stdout, /agent-1\s+127\.0\.0\.2:\d+\s+ACTIVE\s+UP/);
  const status = await cli(t, [at, ...viewer, 'maintenance', 'status', '--json']);
  assert.equal(status.code, 0, status.stderr);
  assert.doesNotMatch(status.stdout, /agent-1/);

  // A secret file others can read is refused before anything is sent: exit 2, how to fix it.
  chmodSync(f.opsSecret, 0o644);
  const open = await cli(t, [at, '--principal', 'ops', '--secret_file', f.opsSecret, 'agent', 'list']);
  assert.equal(open.code, 2);
  assert.equal(open.stderr, `drydock: --secret_file ${f.opsSecret} is readable by others (mode 0644); run chmod 600 on it\n`);
  chmodSync(f.opsSecret, 0o600);
  const half = await cli(t, [at, '--principal', 'ops', 'agent', 'list']);
  assert.equal(half.code, 2);
  assert.match(half.stderr, /^drydock: --principal needs --secret_file FILE/);

  // drydock run subscribes as a framework with the credential (and its principal), or is told it needs one.
  // Its own failures are 125 (a task may exit 3 or 4 itself), with the same lines.
  const anonRun = await cli(t, [at, 'run', '--name', 'anon', '--command', 'true']);
  assert.equal(anonRun.code, 125, anonRun.stderr);
  assert.equal(anonRun.stderr, 'drydock run: the master wants credentials: --principal/--secret_file or DRYDOCK_CREDENTIALS\n');
  const run = await cli(t, [at, 'run', '--name', 'authed', '--command', 'true'], { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` });
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /TASK_FINISHED/);
  const viewerRun = await cli(t, [at, ...viewer, 'run', '--name', 'nope', '--command', 'true']);
  assert.equal(viewerRun.code, 125, viewerRun.stderr);
  assert.match(viewerRun.stderr, /^drydock run: master answered 403: .*viewer/);
});

test('the CLI over TLS: --tls_ca_file (or DRYDOCK_TLS_CA_FILE) verifies the master; without the CA, or over plain http, a clear refusal', { timeout: 300_000 }, async (t) => {
  const f = writeFiles(t);
  const certs = makeCertificates(join(f.dir, 'tls'));
  const other = makeCertificates(join(f.dir, 'other'), 'other');
  const m = await startMaster(t, { flags: securityFlags(f), tls: { certFile: certs.certFile, keyFile: certs.keyFile } });
  const creds = { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` };
  const at = `--master=${m.address}`;

  const ok = await cli(t, [at, '--tls_ca_file', certs.caFile, 'maintenance', 'schedule'], creds);
  assert.equal(ok.code, 0, ok.stderr);
  assert.equal(ok.stdout, 'no maintenance scheduled\n');
  const env = await cli(t, [`--master=https://${m.address}`, 'agent', 'list'], { ...creds, DRYDOCK_TLS_CA_FILE: certs.caFile });
  assert.equal(env.code, 0, env.stderr);
  const plans = await cli(t, [at, '--tls_ca_file', certs.caFile, 'maintenance', 'plan', 'list'], creds);
  assert.equal(plans.code, 0, plans.stderr);
  // TLS and no credential: still the 401 line.
  const anon = await cli(t, [at, '--tls_ca_file', certs.caFile, 'agent', 'list']);
  assert.equal(anon.code, 3);
  assert.equal(anon.stderr, WANTS);

  // No CA, or another CA: the certificate does not verify, and the line says what to give.
  for (const args of [[`--master=https://${m.address}`], [at, '--tls_ca_file', other.caFile]]) {
    const r = await cli(t, [...args, 'agent', 'list'], creds);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /^drydock: cannot talk to the master at https:\/\/127\.0\.0\.1:\d+ \([A-Z_]+\): its certificate does not verify: give its CA with --tls_ca_file \(or DRYDOCK_TLS_CA_FILE\)\n$/);
  }
  const plain = await cli(t, [at, 'agent', 'list'], creds);
  assert.equal(plain.code, 1);
  assert.match(plain.stderr, /TLS/);
  // The CA file must hold a certificate.
  const notPem = await cli(t, [at, '--tls_ca_file', f.acls, 'agent', 'list'], creds);
  assert.equal(notPem.code, 2);
  assert.equal(notPem.stderr, `drydock: --tls_ca_file ${f.acls} holds no PEM certificate\n`);
});

test('mutual TLS: the CLI presents --tls_cert_file/--tls_key_file to a master that requires a client certificate', { timeout: 240_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-cli-mtls-');
  const certs = makeCertificates(dir);
  const m = await startMaster(t, { tls: { certFile: certs.certFile, keyFile: certs.keyFile, caFile: certs.caFile, requireClientCert: true } });
  const at = [`--master=${m.address}`, '--tls_ca_file', certs.caFile];
  const withCert = await cli(t, [...at, '--tls_cert_file', certs.clientCertFile, '--tls_key_file', certs.clientKeyFile, 'maintenance', 'schedule']);
  assert.equal(withCert.code, 0, withCert.stderr);
  assert.equal(withCert.stdout, 'no maintenance scheduled\n');
  const envCert = await cli(t, [...at, 'maintenance', 'plan', 'list'], { DRYDOCK_TLS_CERT_FILE: certs.clientCertFile, DRYDOCK_TLS_KEY_FILE: certs.clientKeyFile });
  assert.equal(envCert.code, 0, envCert.stderr);
  const without = await cli(t, [...at, 'agent', 'list']);
  assert.equal(without.code, 1);
  assert.match(without.stderr, /^drydock: cannot talk to the master at https:\/\/127\.0\.0\.1:\d+ \(\S+\): it closed the TLS connection: does it want a client certificate \(--tls_cert_file, --tls_key_file\)\?\n$/);
  const half = await cli(t, [...at, '--tls_cert_file', certs.clientCertFile, 'agent', 'list']);
  assert.equal(half.code, 2);
  assert.equal(half.stderr, 'drydock: --tls_cert_file and --tls_key_file go together\n');
  chmodSync(certs.clientKeyFile, 0o644);
  const openKey = await cli(t, [...at, '--tls_cert_file', certs.clientCertFile, '--tls_key_file', certs.clientKeyFile, 'agent', 'list']);
  assert.equal(openKey.code, 2);
  assert.equal(openKey.stderr, `drydock: --tls_key_file ${certs.clientKeyFile} is readable by others (mode 0644); run chmod 600 on it\n`);
});

/** A server answering every request with `answer`; closed when the test ends. */
async function server(t: TestContext, answer: Parameters<typeof createServer>[1]): Promise<string> {
  const s: Server = createServer(answer);
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  t.after(() => new Promise<void>((r) => s.close(() => r())));
  return `127.0.0.1:${(s.address() as AddressInfo).port}`;
}

test('a standby\'s 307 to the leader keeps the credential (fetch alone would drop it across origins); CLI calls follow it', { timeout: 60_000 }, async (t) => {
  const seen: Array<string | undefined> = [];
  const leader = await server(t, (req, res) => {
    seen.push(req.headers.authorization);
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ type: 'GET_AGENTS', get_agents: { agents: [] }, echo: body.length }));
    });
  });
  const standby = await server(t, (req, res) => {
    req.resume();
    res.writeHead(307, { Location: `//${leader}${req.url ?? '/'}`, 'Content-Length': 0 });
    res.end();
  });
  const transport = clientTransport({ credential: { kind: 'basic', principal: 'ops', secret: OPS_SECRET } });
  const { response, url } = await sendFollowing(transport, `http://${standby}/api/v1`, { method: 'POST', body: '{"type":"GET_AGENTS"}', headers: { 'content-type': 'application/json' } });
  assert.equal(response.status, 200);
  assert.equal(url, `http://${leader}/api/v1`);
  assert.equal(((await response.json()) as { echo: number }).echo, '{"type":"GET_AGENTS"}'.length, 'the body is sent again');
  const basic = `Basic ${Buffer.from(`ops:${OPS_SECRET}`).toString('base64')}`;
  assert.deepEqual(seen, [basic]);
  // Fetch by itself drops it (why sendFollowing exists): the test can tell.
  await fetch(`http://${standby}/api/v1`, { method: 'POST', body: '{}', headers: transport.headers });
  assert.deepEqual(seen, [basic, undefined]);

  const r = await cli(t, [`--master=${standby}`, 'agent', 'list'], { DRYDOCK_CREDENTIALS: `ops:${OPS_SECRET}` });
  assert.equal(r.code, 0, r.stderr);
  // GET_AGENTS, then Drydock's view of the agents (GET /drydock/v1/agents): both reach the leader with the credential.
  assert.deepEqual(seen, [basic, undefined, basic, basic]);
});

test('npm start -- --secure: TLS, credentials and ACLs; the printed credentials work with the CLI, anonymous gets 401; all stopped', { timeout: 180_000 }, async (t) => {
  const workDir = tempDir(t, 'drydock-cluster-secure-');
  const port = await freePort();
  const agentPort = await freePort('127.0.0.2');
  const run = await startCluster(t, ['--secure', '--agents=1', `--port=${port}`, `--agent_port=${agentPort}`, `--work_dir=${workDir}`, '--quiet'], 60_000);
  const { child, pids, exited } = run;
  let out = run.output();
  assert.equal(pids.length, 2, `a master and an agent in the banner:\n${out}`);
  assert.match(out, new RegExp(`master   https://127\\.0\\.0\\.1:${port} `));
  const credentials = /export DRYDOCK_CREDENTIALS=(\S+)/.exec(out)?.[1];
  const ca = /export DRYDOCK_TLS_CA_FILE=(\S+)/.exec(out)?.[1];
  assert.ok(credentials !== undefined && ca !== undefined, out);
  assert.match(out, new RegExp(`curl -s --cacert \\S+ -u ops:\\S+ -X POST https://127\\.0\\.0\\.1:${port}/api/v1`));
  const secureDir = join(workDir, 'secure');
  assert.ok(existsSync(join(secureDir, 'credentials.json')));

  const at = `--master=127.0.0.1:${port}`;
  const list = await cli(t, [at, 'agent', 'list'], { DRYDOCK_CREDENTIALS: credentials, DRYDOCK_TLS_CA_FILE: ca });
  assert.equal(list.code, 0, list.stderr);
  assert.match(list.stdout, /agent-1\s+127\.0\.0\.2:\d+\s+ACTIVE/);
  const anon = await cli(t, [at, '--tls_ca_file', ca, 'agent', 'list']);
  assert.equal(anon.code, 3, anon.stderr);
  assert.equal(anon.stderr, WANTS);
  // The viewer's secret file, as the banner prints it: it may look, not drain.
  const viewerLine = /--principal viewer --secret_file (\S+)/.exec(out);
  assert.ok(viewerLine !== null, out);
  const viewer = ['--tls_ca_file', ca, '--principal', 'viewer', '--secret_file', viewerLine[1] as string];
  assert.equal((await cli(t, [at, ...viewer, 'agent', 'list'])).code, 0);
  const drain = await cli(t, [at, ...viewer, 'agent', 'drain', 'agent-1']);
  assert.equal(drain.code, 4, drain.stderr);
  // The agent's own API wants the same credentials (the CLI never asks agents; the banner's curl does).
  const agentCurl = new RegExp(`curl -s --cacert \\S+ -u ops:(\\S+) -X POST https://127\\.0\\.0\\.2:${agentPort}/api/v1`).exec(out);
  assert.ok(agentCurl !== null, out);
  const caPem = readFileSync(ca, 'utf8');
  const agentTasks = async (credential: ClientCredential | undefined): Promise<number> =>
    (await callApi(`https://127.0.0.2:${agentPort}`, { type: 'GET_TASKS' }, { 'content-type': 'application/json' }, clientTransport({ credential, tls: { ca: caPem, cert: undefined, key: undefined } }))).status;
  assert.equal(await agentTasks({ kind: 'basic', principal: 'ops', secret: agentCurl[1] as string }), 200);
  assert.equal(await agentTasks(undefined), 401);
  assert.equal(await agentTasks({ kind: 'basic', principal: 'ops', secret: 'wrong' }), 401);

  child.kill('SIGINT');
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([exited, new Promise<string>((r) => (timer = setTimeout(() => r('timeout'), 40_000)))]);
  clearTimeout(timer);
  out = run.output();
  assert.equal(code, 0, out);
  assert.match(out, /cluster: stopped\./);
  for (const pid of pids) assert.equal(alive(pid), false, `pid ${pid} is gone`);
  assert.equal(existsSync(secureDir), false, 'the throwaway CA and secrets are removed');
});


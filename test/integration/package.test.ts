/**
 * The Debian packages, tested as installed (scripts/package/): built once for the file (gzip -1
 * members: the same contents as `npm run package`'s xz ones, a minute faster), then
 *
 * - their contents and control data (dpkg-deb --info / --contents), and lintian when present;
 * - the agent package with no Node on the host: a chroot made of `dpkg-deb -x` of the package,
 *   the shared libraries `ldd` lists (and /bin/sh for the tasks' command lines), started with
 *   the installed unit's own ExecStart and environment (Environment=, EnvironmentFile=, %d),
 *   TLS and a credential as the unit hands them over, against a test master on loopback: it
 *   registers and runs a task, sent by the single-file CLI, to TASK_FINISHED (root: it mounts
 *   /proc in the chroot);
 * - as root under CI=true: `dpkg -i` on this machine, `systemd-analyze verify` of the installed
 *   units, nothing started or enabled, the installed master and CLI run on their own Node, an
 *   upgrade (the package installed again) with a task running under the installed agent, which
 *   survives it and the agent's restart, then `dpkg -r` (config and state stay) and `dpkg -P`
 *   (state stays); everything the test installed is removed on every exit path.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { alive, Daemon, eventually, startMaster, type MasterHandle } from '../helpers/daemons.js';
import { cliFinished, type CliProcess } from '../helpers/cli.js';
import { makeCertificates, type Certificates } from '../../scripts/harness/certs.js';
import { buildPackages, packageVersion, type PackageBuild } from '../../scripts/package/deb.js';
import { serviceProcess, SYSTEMD_PATH } from '../../scripts/package/units.js';

const IS_ROOT = process.getuid?.() === 0;
const CI = process.env['CI'] === 'true';
const VERSION = packageVersion();

/** Debian's tools the build needs (CI installs them: .ci/run). */
const TOOLS = ['dpkg-deb', 'dpkg-shlibdeps', 'strip', 'ldd'];
const missingTools = TOOLS.filter((t) => spawnSync('sh', ['-c', `command -v ${t}`]).status !== 0);
if (missingTools.length > 0 && CI) throw new Error(`the package test needs ${missingTools.join(', ')} (.ci/run installs them)`);
const SKIP_BUILD = missingTools.length > 0 ? `needs ${missingTools.join(', ')} (apt-get install dpkg-dev binutils)` : undefined;
const HAS_LINTIAN = spawnSync('sh', ['-c', 'command -v lintian']).status === 0;

/** One build for the whole file, in a temp dir removed when the process ends; lintian starts on it at once. */
let built: Promise<{ b: PackageBuild; dir: string; lintian: Promise<Record<string, string>> }> | undefined;
function packages(): Promise<{ b: PackageBuild; dir: string; lintian: Promise<Record<string, string>> }> {
  built ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), 'drydock-package-'));
    process.on('exit', () => rmSync(dir, { recursive: true, force: true }));
    const t0 = Date.now();
    const b = await buildPackages({ outDir: join(dir, 'deb'), seaDir: join(dir, 'sea'), compression: 'fast', cli: true });
    process.stdout.write(`# packages built in ${Date.now() - t0} ms (${JSON.stringify(b.timings)})\n`);
    const lintian = HAS_LINTIAN ? lint([b.agentDeb, b.masterDeb]) : Promise.resolve({});
    lintian.catch(() => {});
    return { b, dir, lintian };
  })();
  return built;
}

/** lintian on each package, side by side: its output lines, without its note about running as root. */
async function lint(debs: readonly string[]): Promise<Record<string, string>> {
  const { execFile } = await import('node:child_process');
  const one = (deb: string): Promise<[string, string]> =>
    new Promise((resolve) => {
      execFile('lintian', ['--fail-on', 'none', deb], { maxBuffer: 16 * 2 ** 20, timeout: 300_000 }, (e, stdout, stderr) => {
        const lines = `${stdout}${stderr}`.split('\n').filter((l) => l !== '' && !l.startsWith('running with root privileges'));
        resolve([deb, (e !== null && e.code !== 0 ? [`lintian failed: ${e.message}`] : []).concat(lines).join('\n')]);
      });
    });
  return Object.fromEntries(await Promise.all(debs.map(one)));
}

function dpkgDeb(...args: string[]): string {
  return execFileSync('dpkg-deb', args, { encoding: 'utf8', maxBuffer: 16 * 2 ** 20 });
}

test('the packages carry the programs, units, conffiles and docs, at package.json\'s version', { skip: SKIP_BUILD, timeout: 300_000 }, async () => {
  const { b } = await packages();
  assert.equal(b.agentDeb.endsWith(`drydock-agent_${VERSION}_amd64.deb`), true);
  assert.equal(b.masterDeb.endsWith(`drydock-master_${VERSION}_amd64.deb`), true);
  for (const [deb, pkg, conffiles] of [
    [b.agentDeb, 'drydock-agent', ['/etc/drydock/agent.env']],
    [b.masterDeb, 'drydock-master', ['/etc/drydock/master.env', '/etc/drydock/scheduler.env']],
  ] as const) {
    assert.equal(dpkgDeb('--field', deb, 'Package').trim(), pkg);
    assert.equal(dpkgDeb('--field', deb, 'Version').trim(), VERSION);
    assert.equal(dpkgDeb('--field', deb, 'Architecture').trim(), 'amd64');
    assert.match(dpkgDeb('--field', deb, 'Depends'), /^libc6 \(>= [\d.]+\), libgcc-s1 \(>= [\d.]+\), libstdc\+\+6 \(>= [\d.]+\)$/m);
    assert.doesNotMatch(dpkgDeb('--field', deb, 'Depends'), /nodejs/, 'no Node from Debian');
    assert.deepEqual(dpkgDeb('--info', deb, 'conffiles').trim().split('\n'), [...conffiles]);
    assert.match(dpkgDeb('--info', deb), /postinst[\s\S]*postrm[\s\S]*prerm/);
  }
  const agentFiles = contents(b.agentDeb);
  for (const f of ['/usr/bin/drydock-agent', '/lib/systemd/system/drydock-agent.service', '/etc/drydock/agent.env', '/usr/share/doc/drydock-agent/copyright', '/usr/share/doc/drydock-agent/changelog.gz', '/usr/share/man/man8/drydock-agent.8.gz']) {
    assert.ok(agentFiles.has(f), `drydock-agent carries ${f}`);
  }
  assert.equal(agentFiles.get('/usr/bin/drydock-agent'), '-rwxr-xr-x root/root');
  // The work dir is the postinst's to make (dpkg never removes it), and the agent needs no module tree.
  assert.deepEqual([...agentFiles.keys()].filter((f) => f.startsWith('/var/') || f.includes('node_modules') || f.endsWith('/node')), []);
  const masterFiles = contents(b.masterDeb);
  for (const f of ['/usr/bin/drydock', '/usr/lib/drydock/node', '/usr/lib/drydock/package.json', '/usr/lib/drydock/dist/master/main.js', '/usr/lib/drydock/dist/scheduler/main.js', '/usr/lib/drydock/dist/cli/main.js', '/usr/lib/drydock/console/index.html', '/usr/lib/drydock/node_modules/better-sqlite3/build/Release/better_sqlite3.node', '/lib/systemd/system/drydock-master.service', '/lib/systemd/system/drydock-scheduler.service']) {
    assert.ok(masterFiles.has(f), `drydock-master carries ${f}`);
  }
  assert.deepEqual([...masterFiles.keys()].filter((f) => f.includes('/dist/agent/') || f.includes('/node_modules/esbuild') || f.includes('/node_modules/typescript') || f.startsWith('/var/')), [], 'no agent, no dev tools, no state');
  // The executable runs by itself and reports the package's version.
  assert.equal(execFileSync(b.agentSea.path, ['--version'], { encoding: 'utf8', env: {} }).trim(), `drydock-agent ${VERSION}`);
  assert.equal(execFileSync(b.cliSea?.path ?? assert.fail('the single-file CLI was built'), ['--version'], { encoding: 'utf8', env: {} }).trim(), VERSION);
});

/** `dpkg-deb --contents` as path -> the line's mode/owner part. */
function contents(deb: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of dpkgDeb('--contents', deb).split('\n')) {
    const m = /^(\S+ \S+)\s+\d+ \S+ \S+ \.(\/.*?)\/?$/.exec(line);
    if (m !== null && m[2] !== '') out.set(m[2] as string, m[1] as string);
  }
  return out;
}

/** The test master: TLS, agents must authenticate; the agent's credential and the CA for the unit's files. */
interface Cluster {
  master: MasterHandle;
  certs: Certificates;
  credential: string;
}

async function secureMaster(t: TestContext, dir: string): Promise<Cluster> {
  const certs = makeCertificates(join(dir, 'certs'));
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: [{ principal: 'agent-packaged', secret: 'packaged-secret' }] }), { mode: 0o600 });
  const master = await startMaster(t, { tls: { certFile: certs.certFile, keyFile: certs.keyFile }, flags: ['--authenticate_agents', `--credentials=${credentials}`, '--allocation_interval=100ms'] });
  return { master, certs, credential: JSON.stringify({ principal: 'agent-packaged', secret: 'packaged-secret' }) };
}

/**
 * What an operator (and systemd) puts in place for the agent unit, under `root`: agent.env,
 * the CA and certificate the unit reads in place, and the LoadCredential= copies in
 * `credentialsDir` (0400, as systemd makes them). Returns the argv and environment the unit
 * would start the agent with.
 */
function agentHost(root: string, c: Cluster, credentialsDir: string, hostname: string): { argv: string[]; env: Record<string, string> } {
  const at = (p: string): string => join(root, p);
  mkdirSync(at('/etc/drydock/tls'), { recursive: true });
  writeFileSync(
    at('/etc/drydock/agent.env'),
    [`DRYDOCK_MASTER=${c.master.address}`, 'DRYDOCK_IP=127.0.0.1', 'DRYDOCK_PORT=0', `DRYDOCK_HOSTNAME=${hostname}`, "DRYDOCK_RESOURCES='cpus:1;mem:256;disk:100;ports:[31000-31010]'", 'DRYDOCK_REGISTRATION_BACKOFF_FACTOR=100ms', ''].join('\n'),
  );
  writeFileSync(at('/etc/drydock/tls/ca.pem'), readFileSync(c.certs.caFile));
  writeFileSync(at('/etc/drydock/tls/agent.pem'), readFileSync(c.certs.certFile));
  mkdirSync(at(credentialsDir), { recursive: true, mode: 0o700 });
  for (const [name, text] of [['credential', c.credential], ['tls-key', readFileSync(c.certs.keyFile, 'utf8')]] as const) {
    const p = at(join(credentialsDir, name));
    rmSync(p, { force: true });
    writeFileSync(p, text, { mode: 0o400 });
    chmodSync(p, 0o400);
  }
  const unit = readFileSync(at('/lib/systemd/system/drydock-agent.service'), 'utf8');
  return serviceProcess(unit, {
    credentialsDirectory: credentialsDir,
    readFile: (p) => (existsSync(at(p)) ? readFileSync(at(p), 'utf8') : undefined),
    base: { PATH: SYSTEMD_PATH, LANG: 'C.UTF-8', STATE_DIRECTORY: '/var/lib/drydock/agent' },
  });
}

/**
 * Runs a task through the test master with the single-file CLI (dist/sea/drydock of the build,
 * over TLS); resolves with the CLI's run.
 */
function runTask(t: TestContext, c: Cluster, cli: string, name: string, command: string, more: readonly string[] = []): CliProcess {
  const args = [`--master=${c.master.address}`, `--tls_ca_file=${c.certs.caFile}`, 'run', '--name', name, '--command', command, '--cpus', '0.1', '--mem', '16', '--offer_timeout', '30secs', ...more];
  const child = spawn(cli, args, { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: SYSTEMD_PATH } });
  const run: CliProcess = { child, stdout: '', stderr: '', exited: new Promise((resolve) => child.on('close', (code, signal) => resolve(code ?? (signal !== null ? -1 : null)))) };
  child.stdout?.setEncoding('utf8').on('data', (x: string) => (run.stdout += x));
  child.stderr?.setEncoding('utf8').on('data', (x: string) => (run.stderr += x));
  t.after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await run.exited;
    }
  });
  return run;
}

/** Absolute paths of the shared libraries `ldd` lists for `file`. */
function sharedLibraries(file: string): string[] {
  const out = execFileSync('ldd', [file], { encoding: 'utf8' });
  return [...out.matchAll(/(\/\S+) \(0x[0-9a-f]+\)/g)].map((m) => m[1] as string);
}

/** Is anything mounted at or below `dir`? */
function mountedBelow(dir: string): boolean {
  return readFileSync('/proc/mounts', 'utf8').split('\n').some((l) => (l.split(' ')[1] ?? '').startsWith(dir));
}

test('on a host without Node, the packaged agent starts as its unit says, registers and runs a task', { skip: SKIP_BUILD ?? (IS_ROOT ? undefined : 'needs root (it makes a chroot and mounts /proc in it)'), timeout: 300_000 }, async (t) => {
  const { b } = await packages();
  const dir = mkdtempSync(join(tmpdir(), 'drydock-chroot-'));
  const root = join(dir, 'root');
  let agent: Daemon | undefined;
  t.after(async () => {
    await agent?.stop(10_000, 'SIGUSR1');
    if (existsSync(join(root, 'proc', 'self'))) spawnSync('umount', ['-l', join(root, 'proc')]);
    // Never recurse into a mounted /proc.
    if (!mountedBelow(root)) rmSync(dir, { recursive: true, force: true });
    else process.stderr.write(`test cleanup: ${root} still has a mount; left in place\n`);
  });
  const c = await secureMaster(t, dir);

  // The host: the agent package, the libraries its executable links (nothing else of Node's),
  // /bin/sh and sleep for the tasks' command lines, device nodes, /proc.
  dpkgDeb('-x', b.agentDeb, root);
  const exe = join(root, 'usr/bin/drydock-agent');
  const programs = ['/bin/sh', '/bin/sleep'];
  for (const lib of new Set([...sharedLibraries(exe), ...programs.flatMap(sharedLibraries)])) {
    mkdirSync(dirname(join(root, lib)), { recursive: true });
    writeFileSync(join(root, lib), readFileSync(lib), { mode: 0o755 });
  }
  for (const p of programs) {
    mkdirSync(dirname(join(root, p)), { recursive: true });
    writeFileSync(join(root, p), readFileSync(p), { mode: 0o755 });
  }
  mkdirSync(join(root, 'dev'));
  for (const [name, minor] of [['null', 3], ['zero', 5], ['random', 8], ['urandom', 9]] as const) execFileSync('mknod', ['-m', '666', join(root, 'dev', name), 'c', '1', String(minor)]);
  mkdirSync(join(root, 'proc'));
  mkdirSync(join(root, 'tmp'), { mode: 0o1777 });
  execFileSync('mount', ['-t', 'proc', 'proc', join(root, 'proc')]);
  // systemd makes the unit's StateDirectory= (the postinst would too; dpkg-deb -x runs no script).
  mkdirSync(join(root, 'var/lib/drydock/agent'), { recursive: true });

  assert.equal(existsSync(join(root, 'usr/bin/node')), false);
  assert.equal(execFileSync('chroot', [root, '/bin/sh', '-c', 'command -v node || echo no node'], { encoding: 'utf8', env: { PATH: SYSTEMD_PATH } }).trim(), 'no node');
  assert.equal(execFileSync('chroot', [root, '/usr/bin/drydock-agent', '--version'], { encoding: 'utf8', env: { PATH: SYSTEMD_PATH } }).trim(), `drydock-agent ${VERSION}`);

  const unit = agentHost(root, c, '/run/credentials/drydock-agent.service', 'agent-chroot');
  assert.deepEqual(unit.argv, ['/usr/bin/drydock-agent'], 'ExecStart of the installed unit');
  assert.equal(unit.env['DRYDOCK_WORK_DIR'], '/var/lib/drydock/agent');
  assert.equal(unit.env['DRYDOCK_CREDENTIAL'], '/run/credentials/drydock-agent.service/credential');
  agent = new Daemon('/usr/sbin/chroot', [root, ...unit.argv], unit.env, { exec: true, inheritEnv: false, name: 'drydock-agent (chroot)' });
  const starting = await agent.waitForMsg('starting');
  assert.equal(starting['launcherSource'], 'carried');
  assert.match(String(starting['launcher']), /^\/var\/lib\/drydock\/agent\/launcher\/[0-9a-f]{16}\/drydock-launch$/);
  await agent.waitForMsg('registered');

  const cli = b.cliSea?.path ?? assert.fail('the single-file CLI was built');
  const run = runTask(t, c, cli, 'chroot-task', 'echo hello from a host without node; exit 0');
  const done = await cliFinished(run, 60_000);
  assert.equal(done.code, 0, `drydock run: ${done.stdout} ${done.stderr}`);
  assert.match(done.stdout + done.stderr, /TASK_FINISHED/);
  const sandboxes = join(root, 'var/lib/drydock/agent/sandboxes');
  const outputs = readdirSync(sandboxes, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('stdout'));
  assert.ok(outputs.some((f) => readFileSync(join(sandboxes, f), 'utf8').includes('hello from a host without node')), 'the task ran in the chroot');
});

/** Paths this test installs or creates on the machine; none may exist before it. */
const HOST_PATHS = ['/etc/drydock', '/var/lib/drydock', '/usr/lib/drydock', '/usr/bin/drydock-agent', '/usr/bin/drydock', '/lib/systemd/system/drydock-agent.service'];

function dpkg(...args: string[]): { status: number | null; out: string } {
  // --force-unsafe-io: no fsync per unpacked file (3,000 of them in drydock-master), which
  // changes nothing this test looks at and saves most of its time on a slow disk.
  const r = spawnSync('dpkg', ['--force-unsafe-io', ...args], { encoding: 'utf8', timeout: 300_000, env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' } });
  return { status: r.status, out: `${r.stdout}${r.stderr}` };
}

function dpkgStatus(pkg: string): string {
  const r = spawnSync('dpkg-query', ['-W', '-f=${db:Status-Abbrev}${Version}', pkg], { encoding: 'utf8' });
  return r.status === 0 && !r.stdout.startsWith('un') ? r.stdout.trim() : 'not installed';
}

/** Processes running one of `programs` (by /proc/PID/exe). */
function runningPrograms(programs: readonly string[]): number[] {
  const out: number[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (programs.includes(readlinkSync(`/proc/${pid}/exe`).replace(/ \(deleted\)$/, ''))) out.push(Number(pid));
    } catch {
      // gone, or not ours to read
    }
  }
  return out;
}

test('installed with dpkg: verified units, nothing started, an upgrade keeps the task running, remove and purge keep the state', { skip: SKIP_BUILD ?? (IS_ROOT && CI ? undefined : 'installs packages on this machine: runs as root with CI=true only'), timeout: 360_000 }, async (t) => {
  const { b } = await packages();
  const before = HOST_PATHS.filter((p) => existsSync(p));
  assert.deepEqual(before, [], 'this machine has no Drydock installed before the test (it would not touch one)');
  assert.equal(dpkgStatus('drydock-agent'), 'not installed');
  const dir = mkdtempSync(join(tmpdir(), 'drydock-install-'));
  const daemons: Daemon[] = [];
  const madeRunCredentials = !existsSync('/run/credentials');
  t.after(async () => {
    for (const d of daemons.reverse()) await d.stop(10_000, d.name.startsWith('drydock-agent') ? 'SIGUSR1' : 'SIGTERM');
    dpkg('--purge', 'drydock-agent', 'drydock-master');
    for (const p of [...HOST_PATHS, '/run/credentials/drydock-agent.service', ...(madeRunCredentials ? ['/run/credentials'] : [])]) rmSync(p, { recursive: true, force: true });
    rmSync(dir, { recursive: true, force: true });
  });

  const install = dpkg('--install', b.agentDeb, b.masterDeb);
  assert.equal(install.status, 0, install.out);
  assert.equal(dpkgStatus('drydock-agent'), `ii ${VERSION}`);
  assert.equal(dpkgStatus('drydock-master'), `ii ${VERSION}`);

  // The installed units verify (warnings count as failures: systemd-analyze reports them with rc 0).
  for (const unit of ['drydock-agent', 'drydock-master', 'drydock-scheduler']) {
    const r = spawnSync('systemd-analyze', ['verify', `/lib/systemd/system/${unit}.service`], { encoding: 'utf8', timeout: 30_000 });
    assert.equal(`${r.stdout}${r.stderr}`.trim(), '', `${unit}: no warning`);
    assert.equal(r.status, 0, unit);
  }
  // Nothing started, nothing enabled; the agent's work dir made.
  assert.deepEqual(runningPrograms(['/usr/bin/drydock-agent', '/usr/lib/drydock/node']), []);
  const wants = readdirSync('/etc/systemd/system').filter((d) => d.endsWith('.wants')).flatMap((d) => readdirSync(join('/etc/systemd/system', d)));
  assert.deepEqual(wants.filter((u) => u.startsWith('drydock-')), []);
  assert.ok(statSync('/var/lib/drydock/agent').isDirectory());

  // The master package's programs run on its own Node: the CLI, and the master with its SQLite addon.
  assert.equal(execFileSync('/usr/bin/drydock', ['--version'], { encoding: 'utf8', env: { PATH: SYSTEMD_PATH } }).trim(), VERSION);
  const masterUnit = serviceProcess(readFileSync('/lib/systemd/system/drydock-master.service', 'utf8'), { credentialsDirectory: join(dir, 'creds'), readFile: () => undefined, base: { PATH: SYSTEMD_PATH } });
  assert.deepEqual(masterUnit.argv, ['/usr/lib/drydock/node', '/usr/lib/drydock/dist/master/main.js']);
  const installedMaster = new Daemon(masterUnit.argv[0] as string, [...masterUnit.argv.slice(1), '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'master')}`], { PATH: SYSTEMD_PATH }, { exec: true, inheritEnv: false, name: 'installed drydock-master' });
  daemons.push(installedMaster);
  const listening = await installedMaster.waitForMsg('listening');
  assert.ok(existsSync(join(dir, 'master')), 'the registry opened');
  const consolePage = await fetch(`http://127.0.0.1:${Number(listening['port'])}/`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(consolePage.status, 200, 'the web console is served from /usr/lib/drydock/console');
  assert.match(await consolePage.text(), /<html/i);
  await installedMaster.stop();

  // The installed agent, started by hand as its unit would, with a task running.
  const c = await secureMaster(t, dir);
  const credentials = '/run/credentials/drydock-agent.service';
  const unit = agentHost('/', c, credentials, 'agent-installed');
  const startAgent = (): Daemon => {
    const d = new Daemon(unit.argv[0] as string, unit.argv.slice(1), unit.env, { exec: true, inheritEnv: false, name: 'drydock-agent (installed)' });
    daemons.push(d);
    return d;
  };
  const first = startAgent();
  await first.waitForMsg('registered');
  const run = runTask(t, c, b.cliSea?.path ?? assert.fail('the single-file CLI was built'), 'upgrade-task', 'sleep 600', ['--checkpoint']);
  const running = await first.waitForMsg('task running', {}, 60_000);
  const taskPid = Number(running['pid']);
  assert.ok(alive(taskPid));

  // The upgrade: the package installed again over the running agent (no systemd here, so the
  // postinst's try-restart is ours to do below). The task and the old agent run on.
  const again = dpkg('--install', b.agentDeb);
  assert.equal(again.status, 0, again.out);
  assert.ok(alive(taskPid), 'the task survived the package upgrade');
  assert.ok(first.running, 'the agent too, from its old file');
  // What try-restart does under systemd: SIGTERM (KillMode=process: the agent alone), start again.
  await first.stop(15_000, 'SIGTERM');
  assert.ok(alive(taskPid), 'the task survived the agent stop');
  const second = startAgent();
  const adopted = await second.waitForMsg('task re-adopted');
  assert.equal(adopted['pid'], taskPid);
  await second.waitForMsg('registered');
  assert.ok(alive(taskPid), 'the task survived the upgrade');
  await second.stop(15_000, 'SIGUSR1');
  await eventually(() => (alive(taskPid) ? undefined : true), undefined, 50, 'the task killed by SIGUSR1');
  run.child.kill('SIGKILL');

  // Remove: programs gone, configuration and state kept.
  const removed = dpkg('--remove', 'drydock-agent', 'drydock-master');
  assert.equal(removed.status, 0, removed.out);
  assert.equal(existsSync('/usr/bin/drydock-agent'), false);
  assert.equal(existsSync('/usr/lib/drydock'), false);
  assert.ok(existsSync('/etc/drydock/agent.env'), 'remove keeps the conffiles');
  assert.ok(existsSync('/etc/drydock/master.env'));
  assert.ok(statSync('/var/lib/drydock/agent').isDirectory(), 'remove keeps the state');
  assert.match(dpkgStatus('drydock-agent'), /^rc /);
  // Purge: dpkg takes the conffiles; the state stays.
  const purged = dpkg('--purge', 'drydock-agent', 'drydock-master');
  assert.equal(purged.status, 0, purged.out);
  assert.equal(existsSync('/etc/drydock/agent.env'), false);
  assert.equal(existsSync('/etc/drydock/scheduler.env'), false);
  assert.ok(existsSync('/var/lib/drydock/agent/meta'), 'purge keeps the agent\'s checkpoint');
  assert.equal(dpkgStatus('drydock-agent'), 'not installed');
});

// Last: lintian has been running since the build, beside the tests above.
test('lintian finds nothing the overrides do not explain', { skip: SKIP_BUILD ?? (HAS_LINTIAN ? undefined : 'lintian is not installed (apt-get install lintian)'), timeout: 600_000 }, async () => {
  const { lintian } = await packages();
  const out = await lintian;
  for (const [deb, text] of Object.entries(out)) assert.equal(text, '', `lintian ${deb}`);
});

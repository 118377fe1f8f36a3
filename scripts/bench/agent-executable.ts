/**
 * agent-executable: the single-file agent (dist/sea/drydock-agent, `npm run package`) against
 * today's agent (`node dist/agent/main.js`), started the same way:
 *
 * - its size, against the stripped node binary it is made from (what the bundle adds);
 * - idle RSS (VmRSS) after registration with no tasks, settled 2 s (goal: within 10% of today's);
 * - the time from starting the unit's ExecStart to REGISTERED (the agent's `registered` line).
 *   PID 1 is not systemd on these machines, so `systemctl start` cannot be timed: the unit's
 *   ExecStart is started with the unit's own environment instead (Environment=, agent.env,
 *   %d), its absolute /etc/drydock and /var/lib/drydock paths moved into a temp dir, against a
 *   master with TLS that requires the agent's credential, as the packaged unit expects. Machine
 *   detection (resources, systeminformation) is left on, as in the packaged agent.env.
 *
 * Runs alternate (executable, today's, executable, ...), each with a fresh work dir; medians.
 */

import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { makeCertificates } from '../harness/certs.js';
import { buildSea, strippedNode } from '../package/sea.js';
import { PACKAGED_DAEMONS, packagedUnit, serviceProcess, SYSTEMD_PATH } from '../package/units.js';
import { AGENT_BIN, Child, makeTempDir, removeTempDir, ROOT, startMaster } from './daemon.js';
import { rssBytes } from './procfs.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { quantile } from './stats.js';

export interface AgentExecutableOptions {
  /** Starts of each agent (alternating). Default 5. */
  repeats: number;
}

const MB = 1024 * 1024;
const SETTLE_MS = 2_000;

export async function runAgentExecutable(opts: AgentExecutableOptions): Promise<BenchResult> {
  const name = 'agent-executable';
  const rows: ResultRow[] = [];
  const dir = makeTempDir('drydock-bench-exe-');
  let sea = join(ROOT, 'dist', 'sea', 'drydock-agent');
  let built = 'dist/sea/drydock-agent';
  if (!existsSync(sea)) {
    sea = (await buildSea('agent', join(dir, 'sea'))).path;
    built = 'built now (no dist/sea/drydock-agent: npm run package)';
  }
  const node = join(dir, 'node-stripped');
  await strippedNode(node);
  rows.push({ benchmark: name, metric: 'agent executable size', value: statSync(sea).size / MB, unit: 'MB', ...against('the stripped node it is made from', statSync(node).size / MB, statSync(sea).size / MB), note: `${built}; today's agent is node (${(statSync(process.execPath).size / MB).toFixed(0)} MB here) plus dist/ and node_modules` });

  // A master as the packaged unit expects one: TLS, agents authenticate.
  const certs = makeCertificates(join(dir, 'certs'));
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: [{ principal: 'bench-agent', secret: 'bench-secret' }] }), { mode: 0o600 });
  const master = await startMaster([`--tls_cert_file=${certs.certFile}`, `--tls_key_file=${certs.keyFile}`, '--authenticate_agents', `--credentials=${credentials}`]);

  // The unit's files under `root` (see the header); %d is `creds`.
  const root = join(dir, 'root');
  const at = (p: string): string => join(root, p);
  mkdirSync(at('/etc/drydock/tls'), { recursive: true });
  writeFileSync(at('/etc/drydock/tls/ca.pem'), readFileSync(certs.caFile));
  writeFileSync(at('/etc/drydock/tls/agent.pem'), readFileSync(certs.certFile));
  const creds = join(dir, 'creds');
  mkdirSync(creds, { mode: 0o700 });
  writeFileSync(join(creds, 'credential'), JSON.stringify({ principal: 'bench-agent', secret: 'bench-secret' }), { mode: 0o400 });
  writeFileSync(join(creds, 'tls-key'), readFileSync(certs.keyFile), { mode: 0o400 });
  const d = PACKAGED_DAEMONS.find((x) => x.unit === 'drydock-agent.service');
  if (d === undefined) throw new Error('no packaged agent unit');
  const unitText = packagedUnit(readFileSync(join(ROOT, 'systemd', d.unit), 'utf8'), d);

  const startOne = async (kind: 'executable' | 'today', i: number): Promise<{ registeredMs: number; rss: number }> => {
    writeFileSync(at('/etc/drydock/agent.env'), `DRYDOCK_MASTER=${master.address}\nDRYDOCK_IP=127.0.0.1\nDRYDOCK_PORT=0\nDRYDOCK_HOSTNAME=bench-exe-${kind}-${i}\n`);
    const unit = serviceProcess(unitText, { credentialsDirectory: creds, readFile: (p) => (existsSync(at(p)) ? readFileSync(at(p), 'utf8') : undefined), base: { PATH: SYSTEMD_PATH, LANG: 'C.UTF-8' } });
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(unit.env)) env[k] = v.startsWith('/etc/drydock/') ? at(v) : v;
    env['DRYDOCK_WORK_DIR'] = makeTempDir(`drydock-bench-exe-${kind}-`);
    const t0 = performance.now();
    const agent = kind === 'executable' ? new Child('agent (executable)', sea, unit.argv.slice(1), { env, exec: true, inheritEnv: false }) : new Child('agent (today)', AGENT_BIN, unit.argv.slice(1), { env, inheritEnv: false });
    try {
      await agent.waitForMsg('registered', {}, 60_000);
      const registeredMs = performance.now() - t0;
      await new Promise((r) => setTimeout(r, SETTLE_MS));
      const rss = rssBytes(agent.pid) ?? Number.NaN;
      return { registeredMs, rss };
    } finally {
      await agent.stop(15_000, 'SIGUSR1');
      removeTempDir(env['DRYDOCK_WORK_DIR']);
    }
  };

  const samples = { executable: [] as Array<{ registeredMs: number; rss: number }>, today: [] as Array<{ registeredMs: number; rss: number }> };
  try {
    for (let i = 0; i < opts.repeats; i++) {
      samples.executable.push(await startOne('executable', i));
      samples.today.push(await startOne('today', i));
    }
  } finally {
    await master.daemon.stop();
    removeTempDir(master.workDir);
    removeTempDir(dir);
  }
  const med = (xs: readonly number[]): number => quantile(xs, 0.5);
  const rssSea = med(samples.executable.map((s) => s.rss)) / MB;
  const rssToday = med(samples.today.map((s) => s.rss)) / MB;
  rows.push({
    benchmark: name,
    metric: 'idle RSS, registered, no tasks (p50)',
    value: rssSea,
    unit: 'MB',
    ...against("today's agent (node dist/agent/main.js)", rssToday, rssSea),
    goal: { text: '<= 1.10x', pass: rssSea <= rssToday * 1.1 },
    note: `${opts.repeats} starts each; min-max ${fmtRange(samples.executable.map((s) => s.rss / MB))} vs ${fmtRange(samples.today.map((s) => s.rss / MB))} MB`,
  });
  const regSea = med(samples.executable.map((s) => s.registeredMs));
  const regToday = med(samples.today.map((s) => s.registeredMs));
  rows.push({
    benchmark: name,
    metric: 'ExecStart to REGISTERED (p50)',
    value: regSea,
    unit: 'ms',
    ...against("today's agent, same unit environment", regToday, regSea),
    note: `PID 1 is not systemd here: the unit's ExecStart is timed with its environment, not systemctl start; min-max ${fmtRange(samples.executable.map((s) => s.registeredMs))} vs ${fmtRange(samples.today.map((s) => s.registeredMs))} ms`,
  });
  return { benchmark: name, rows, context: { repeats: opts.repeats, executable: sea, node: process.version } };
}

function fmtRange(xs: readonly number[]): string {
  return `${Math.min(...xs).toFixed(1)}-${Math.max(...xs).toFixed(1)}`;
}

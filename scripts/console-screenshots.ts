/**
 * Screenshots of the web console for docs/observability.md: `npm run build && npx tsx scripts/console-screenshots.ts`.
 *
 * Starts a small local cluster (dist/scripts/cluster.js: a master, three agents and the example
 * service, on ports 25050/25051/28088 and a temporary work dir), gives it something to show (the
 * service deployed, one agent drained, a maintenance window scheduled, a maintenance plan held by
 * its canary), opens each page in Debian's headless Chromium (/usr/bin/chromium, driven by
 * playwright-core, which never downloads a browser) and writes docs/console/<page>.png. Stops
 * everything it started, by PID, and removes the work dir.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser } from 'playwright-core';

const here = dirname(fileURLToPath(import.meta.url));
// Run from source (scripts/) or built (dist/scripts/): the repo root is the first with a package.json.
const ROOT = here.includes(`${join('dist', 'scripts')}`) ? resolve(here, '..', '..') : resolve(here, '..');
const OUT = join(ROOT, 'docs', 'console');
const MASTER = 'http://127.0.0.1:25050';
const SCHEDULER = 'http://127.0.0.1:28088';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function api(body: unknown): Promise<{ status: number; json: unknown; text: string }> {
  const res = await fetch(`${MASTER}/api/v1`, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    json = text === '' ? undefined : JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, json, text };
}

async function post(url: string, body?: string): Promise<string> {
  const res = await fetch(url, { method: 'POST', ...(body === undefined ? {} : { body }), signal: AbortSignal.timeout(10_000) });
  return `${res.status} ${(await res.text()).trim()}`;
}

/** Waits (bounded) until `check` returns a value. */
async function until<T>(what: string, check: () => Promise<T | undefined>, timeoutMs = 60_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (let i = 0; i < 10_000 && Date.now() < deadline; i++) {
    const v = await check().catch(() => undefined);
    if (v !== undefined) return v;
    await sleep(250);
  }
  throw new Error(`timed out waiting for ${what}`);
}

interface Agent { agent_info: { id: { value: string }; hostname: string } }

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'drydock-screens-'));
  const cluster = spawn(process.execPath, [join(ROOT, 'dist', 'scripts', 'cluster.js'), `--work_dir=${work}`, '--port=25050', '--agent_port=25051', '--agents=3', `--service=${join(ROOT, 'examples', 'hello.yml')}`, '--scheduler_port=28088', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  cluster.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  cluster.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<void>((r) => cluster.on('exit', () => r()));
  let browser: Browser | undefined;
  try {
    await until('the cluster banner', async () => (out.includes('Drydock is up.') ? true : undefined));
    // The example's deploy waits twice for an operator (serial-canary): say continue until it runs.
    await until('the service deployed', async () => {
      await post(`${SCHEDULER}/v1/plans/deploy/continue`);
      const r = (await api({ type: 'GET_TASKS' })).json as { get_tasks: { tasks: Array<{ state: string }> } };
      return r.get_tasks.tasks.filter((t) => t.state === 'TASK_RUNNING').length >= 3 ? true : undefined;
    });
    const agents = ((await api({ type: 'GET_AGENTS' })).json as { get_agents: { agents: Agent[] } }).get_agents.agents;
    const id = (h: string): string => agents.find((a) => a.agent_info.hostname === h)?.agent_info.id.value ?? '';
    // agent-3 drained (its instance moves elsewhere), a window for agent-2 in 20 minutes, a plan held by its canary.
    console.log('drain agent-3:', (await api({ type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: id('agent-3') }, max_grace_period: '30secs' } })).status);
    const nowNs = BigInt(Date.now()) * 1_000_000n;
    const window = { machine_ids: [{ hostname: 'agent-2', ip: '127.0.0.3' }], unavailability: { start: { nanoseconds: String(nowNs + 20n * 60_000_000_000n) }, duration: { nanoseconds: String(2n * 3_600_000_000_000n) } } };
    console.log('schedule agent-2:', (await api({ type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [window] } } })).status);
    const plan = { name: 'kernel-upgrade', machines: { hostnames: ['agent-1', 'agent-3'] }, window: '1hrs', wait_for_frameworks: '30secs', phase_strategy: 'canary' };
    console.log('plan:', await post(`${MASTER}/v1/maintenance/plans`, JSON.stringify(plan)));
    await until('agent-3 DRAINED', async () => {
      const a = ((await api({ type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<Agent & { drain_info?: { state: string } }> } }).get_agents.agents;
      return a.find((x) => x.agent_info.hostname === 'agent-3')?.drain_info?.state === 'DRAINED' ? true : undefined;
    });

    mkdirSync(OUT, { recursive: true });
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: ARGS });
    const page = await browser.newPage({ viewport: { width: 1360, height: 760 }, deviceScaleFactor: 1 });
    for (const view of ['cluster', 'machines', 'agents', 'frameworks', 'plans']) {
      await page.goto(`${MASTER}/#/${view}`);
      await page.waitForSelector('#conn.c-live', { timeout: 20_000 });
      await sleep(1500); // the follow-up reads (schedule, plans, the service's stream)
      await page.screenshot({ path: join(OUT, `${view}.png`), fullPage: true });
      console.log(`wrote docs/console/${view}.png`);
    }
    // The confirmation every action goes through.
    await page.goto(`${MASTER}/#/agents`);
    await page.waitForSelector('tr[data-agent-id]');
    await page.locator('tr[data-agent-id]').first().getByRole('button', { name: 'Drain…' }).click();
    await page.fill('#confirm-input', '2mins');
    await sleep(300);
    await page.screenshot({ path: join(OUT, 'drain-dialog.png') });
    console.log('wrote docs/console/drain-dialog.png');
  } finally {
    await browser?.close().catch(() => {});
    // The cluster stops its daemons in order on SIGINT; anything left is killed by its banner PID.
    if (cluster.exitCode === null) cluster.kill('SIGINT');
    await Promise.race([exited, sleep(20_000)]);
    for (const m of out.matchAll(/ pid (\d+) /g)) {
      try {
        process.kill(Number(m[1]), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    if (cluster.exitCode === null) cluster.kill('SIGKILL');
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`console-screenshots: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});

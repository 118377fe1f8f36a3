/**
 * Screenshots of the web console for docs/observability.md: `npm run build && npx tsx scripts/console-screenshots.ts`.
 *
 * Starts a small local cluster (dist/scripts/cluster.js: a master, three agents and the example
 * service, on ports 25050/25051/28088 and a temporary work dir), gives it something to show (the
 * service deployed, agent-3 drained, a maintenance window scheduled for agent-2, a maintenance
 * plan held by its canary), and opens the console in Debian's headless Chromium (/usr/bin/chromium,
 * driven by playwright-core, which never downloads a browser) at 1280 px. In one document, as an
 * operator browses, it writes docs/console/<name>.png: cluster, agents, frameworks, plans, agent
 * (agent-1 and its tasks), task (one of them, its sandbox stdout read from the agent), the drain
 * and new-plan dialogs with their previews, machines (agent-2 DRAINING), down-dialog (agent-2's
 * Down…), then confirms it: machines-down (agent-2 DOWN, its agent kept as GONE).
 * It fails, writing no further image, when a hostname wraps, timeline labels print over each
 * other, or the page has a script error. Stops everything it started, by PID, and removes the
 * work dir.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserServer, type Page } from 'playwright-core';

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

/** Whether a process is still there (signal 0 checks without sending). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Fails when a hostname in `selector` takes more than one line at the page's width. */
async function oneLineHostnames(page: Page, selector: string): Promise<void> {
  for (const cell of await page.locator(selector).all()) {
    const box = await cell.boundingBox();
    if (box === null || box.height >= 24) throw new Error(`a hostname wraps (${box?.height ?? '?'} px high): ${(await cell.textContent()) ?? ''}`);
  }
}

/** Fails when two of the timeline's axis labels (or a label and *now*) print over each other. */
async function noOverprint(page: Page): Promise<void> {
  const labels = await page.evaluate(() => [...document.querySelectorAll('.tl-axis .tick, .tl-axis .now')].filter((e) => (e.textContent ?? '') !== '').map((e) => {
    const r = e.getBoundingClientRect();
    return { text: e.textContent, left: r.left, right: r.right };
  }));
  for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
    const [x, y] = [labels[i], labels[j]];
    if (x !== undefined && y !== undefined && !(x.right <= y.left || y.right <= x.left)) throw new Error(`timeline labels ${x.text ?? ''} and ${y.text ?? ''} overlap`);
  }
}

interface Agent { agent_info: { id: { value: string }; hostname: string } }

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'drydock-screens-'));
  const cluster = spawn(process.execPath, [join(ROOT, 'dist', 'scripts', 'cluster.js'), `--work_dir=${work}`, '--port=25050', '--agent_port=25051', '--agents=3', `--service=${join(ROOT, 'examples', 'hello.yml')}`, '--scheduler_port=28088', '--quiet'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  cluster.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  cluster.stderr.setEncoding('utf8').on('data', (c: string) => (out += c));
  const exited = new Promise<void>((r) => cluster.on('exit', () => r()));
  let server: BrowserServer | undefined;
  let browserPid: number | undefined;
  let browser: Browser | undefined;
  const errors: string[] = [];
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

    // The service moves its instances off agent-2 (in the schedule) and agent-3 (drained): wait
    // until all three run on agent-1, so every page shows the same settled cluster.
    await until('three instances running on agent-1', async () => {
      const r = (await api({ type: 'GET_TASKS' })).json as { get_tasks: { tasks: Array<{ state: string; agent_id: { value: string } }> } };
      const running = r.get_tasks.tasks.filter((t) => t.state === 'TASK_RUNNING');
      return running.length === 3 && running.every((t) => t.agent_id.value === id('agent-1')) ? true : undefined;
    });
    mkdirSync(OUT, { recursive: true });
    // A browser server of its own, so its PID is known and it can be stopped by it.
    server = await chromium.launchServer({ executablePath: '/usr/bin/chromium', args: ARGS, timeout: 30_000 });
    browserPid = server.process().pid;
    browser = await chromium.connect(server.wsEndpoint(), { timeout: 30_000 });
    const page = await browser.newPage({ viewport: { width: 1280, height: 860 }, deviceScaleFactor: 1 });
    page.setDefaultTimeout(30_000);
    page.on('pageerror', (e) => errors.push(e.message));
    const shot = async (name: string, fullPage = true): Promise<void> => {
      await page.screenshot({ path: join(OUT, `${name}.png`), fullPage });
      console.log(`wrote docs/console/${name}.png`);
    };
    // One document for every page (the hash changes), as an operator browses: what the page has
    // seen stays on it (the DOWN machine's agent, the events in an agent's history).
    const show = async (hash: string): Promise<void> => {
      await page.evaluate((h) => {
        location.hash = h;
      }, hash);
    };
    await page.goto(`${MASTER}/#/cluster`);
    await page.waitForSelector('#conn.c-live', { timeout: 20_000 });
    await page.waitForSelector('.stats');
    await sleep(1500); // the follow-up reads (schedule, plans, the service's stream)
    await shot('cluster');

    await show('#/agents');
    await page.waitForFunction(() => document.querySelectorAll('tr[data-agent-id]').length === 3);
    await oneLineHostnames(page, 'tr[data-agent-id] td:first-child .host');
    await shot('agents');

    await show('#/frameworks');
    await page.waitForSelector('tr[data-task-id] a[href^="#/task/"]');
    await shot('frameworks');

    await show('#/plans');
    await page.waitForSelector('[data-kind="service"][data-plan="deploy"]');
    await page.waitForSelector('[data-kind="maintenance"][data-plan="kernel-upgrade"] li.step');
    await sleep(500);
    await shot('plans');

    // An agent with a task: agent-1 (agent-2's window is scheduled, agent-3 is drained).
    const busy = id('agent-1');
    await show(`#/agent/${busy}`);
    await page.waitForSelector(`[data-page="agent"][data-agent-id="${busy}"] tr[data-task-id]`);
    await page.waitForSelector('[data-page="agent"] tr[data-resource="cpus"]');
    await sleep(500);
    await shot('agent');

    // One of its running tasks: statuses, and its sandbox's stdout read from the agent.
    await page.locator('[data-page="agent"] tr[data-task-id] a').first().click();
    await page.waitForSelector('[data-page="task"] tr[data-status="TASK_RUNNING"]');
    await page.waitForFunction(() => /hello world from/.test(document.querySelector('[data-file="stdout"]')?.textContent ?? ''), undefined, { timeout: 20_000 });
    await page.waitForSelector('[data-file="stderr"] pre.out');
    await shot('task');

    // The confirmation every action goes through, with the master's preview of what it would do.
    await show('#/agents');
    await page.waitForSelector(`tr[data-agent-id="${busy}"]`);
    await page.locator(`tr[data-agent-id="${busy}"]`).getByRole('button', { name: 'Drain…' }).click();
    await page.waitForSelector('#confirm-preview [data-preview="ok"] [data-preview="capacity"]');
    await page.fill('#confirm-input', '2mins');
    await sleep(300);
    await shot('drain-dialog', false);
    await page.click('#confirm-cancel');
    await page.waitForSelector('dialog#confirm:not([open])', { state: 'attached' });

    // A new plan's preview: its waves and what each takes out.
    await show('#/plans');
    await page.click('button[data-action="create-plan"]');
    await page.waitForSelector('dialog#confirm[open]');
    await page.fill('#confirm-textarea', 'name: os-patch\nmachines:\n  hostnames: [agent-1, agent-2]\nwindow: 1hrs\nphase_strategy: canary\n');
    await page.waitForSelector('#confirm-preview [data-preview="ok"] [data-wave]', { timeout: 20_000 });
    await sleep(300);
    await shot('plan-dialog', false);
    await page.click('#confirm-cancel');
    await page.waitForSelector('dialog#confirm:not([open])', { state: 'attached' });

    // The machines: agent-2 DRAINING in the schedule, on the timeline.
    await show('#/machines');
    await page.waitForSelector('.tl-row[data-machine="agent-2"]');
    await noOverprint(page);
    await sleep(500);
    await shot('machines');

    // agent-2 taken DOWN from its row: the dialog's preview, then the machine DOWN with its agent kept.
    await page.locator('tr[data-machine="agent-2"]').getByRole('button', { name: 'Down…' }).click();
    await page.waitForSelector('#confirm-preview [data-preview="ok"] [data-preview="capacity"]');
    await sleep(300);
    await shot('down-dialog', false);
    await page.click('#confirm-ok');
    await page.waitForSelector('.tl-row[data-machine="agent-2"] .badge.s-down', { timeout: 30_000 });
    await page.waitForSelector(`tr[data-machine="agent-2"] [data-gone-agent="${id('agent-2')}"]`, { timeout: 30_000 });
    await page.waitForSelector('#toast', { state: 'hidden', timeout: 15_000 }); // "down agent-2: done" goes after 4 s
    await noOverprint(page);
    await sleep(500);
    await shot('machines-down');
    if (errors.length > 0) throw new Error(`script errors on the page: ${errors.join('; ')}`);
  } finally {
    await browser?.close().catch(() => {});
    await server?.close().catch(() => {});
    if (browserPid !== undefined && alive(browserPid)) process.kill(browserPid, 'SIGKILL');
    // The cluster stops its daemons in order on SIGINT. If it has not exited within 20 s, what it
    // started is killed by the PIDs its banner printed (only then: once it has exited, its
    // daemons are gone and those numbers may belong to someone else), and it last.
    let gone = false;
    void exited.then(() => (gone = true));
    if (cluster.exitCode === null && cluster.signalCode === null) cluster.kill('SIGINT');
    await Promise.race([exited, sleep(20_000)]);
    if (!gone) {
      for (const m of out.matchAll(/ pid (\d+) /g)) {
        try {
          process.kill(Number(m[1]), 'SIGKILL');
        } catch {
          // already gone
        }
      }
      cluster.kill('SIGKILL');
      await Promise.race([exited, sleep(5_000)]);
    }
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((e: unknown) => {
  console.error(`console-screenshots: ${(e as Error).stack ?? String(e)}`);
  process.exit(1);
});

/**
 * The web console in a real browser: Debian's /usr/bin/chromium, headless, driven by
 * playwright-core (which never downloads a browser), against real daemons on loopback. The page
 * is loaded from the master, sees the agents, drains one from its button (confirming the dialog)
 * and watches the drain record turn DRAINED without a reload; a maintenance plan held by its
 * canary is continued from the page; a service scheduler's plans come from its own stream (CORS).
 * With credentials required, a 401 shows the page's sign-in form and a 403 shows the master's
 * message. With etcd, loading the console from a standby lands on the leader.
 *
 * The pages at 1280 px: each page's content, the actions its state allows (no Reactivate while
 * DRAINING, no Continue / Interrupt on a COMPLETE plan), the drain dialog's impact preview, an
 * agent page (resources and their use, tasks, history), a task page (statuses, the sandbox's
 * stdout read from the agent), figures that tick without events, timeline labels that do not
 * overprint. With CONSOLE_SHOTS=<dir>, each page is saved there as console-<page>.png.
 *
 * Skipped, saying why, when /usr/bin/chromium is missing, unless CI=true (then it must run).
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { chmodSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { alive, callApi, EVENT_DEADLINE_MS, eventually, startAgent, startMaster, startScheduler, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { etcdMissing, startEtcd } from '../helpers/etcd.js';

const CHROMIUM = '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) || process.env['CI'] === 'true' ? false : `${CHROMIUM} is missing (apt-get install chromium); under CI=true this test runs`;
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

/** A headless Chromium of its own (playwright gives it a fresh temporary profile), closed and its process gone when the test ends. */
async function browser(t: TestContext): Promise<Browser> {
  const server = await chromium.launchServer({ executablePath: CHROMIUM, args: ARGS, timeout: 30_000 });
  const pid = server.process().pid;
  const b = await chromium.connect(server.wsEndpoint(), { timeout: 30_000 });
  t.after(async () => {
    await b.close().catch(() => {});
    await server.close().catch(() => {});
    if (pid !== undefined && alive(pid)) process.kill(pid, 'SIGKILL');
  });
  return b;
}

/** Where CONSOLE_SHOTS asks for screenshots (not in the repository), as console-<name>.png. */
async function shot(p: Page, name: string): Promise<void> {
  const dir = process.env['CONSOLE_SHOTS'];
  if (dir === undefined || dir === '') return;
  mkdirSync(dir, { recursive: true });
  await p.screenshot({ path: join(dir, `console-${name}.png`), fullPage: true });
}

/** Shows a page of the console by its hash, in the same document (what it has seen is kept). */
async function show(p: Page, hash: string): Promise<void> {
  await p.evaluate((h) => {
    location.hash = h;
  }, hash);
}

/** A page whose script errors fail the test; 1280 px wide, the width the layouts must hold at. */
async function page(t: TestContext, b: Browser): Promise<Page> {
  const p = await b.newPage({ viewport: { width: 1280, height: 900 } });
  p.setDefaultTimeout(EVENT_DEADLINE_MS);
  const errors: string[] = [];
  p.on('pageerror', (e) => errors.push(e.message));
  t.after(() => assert.deepEqual(errors, [], 'no script error on the page'));
  return p;
}

interface AgentJson { agent_info: { id: { value: string }; hostname: string }; drain_info?: { state: string } }
const agentsOf = async (m: MasterHandle, headers?: Record<string, string>): Promise<AgentJson[]> =>
  ((await callApi(m.url, { type: 'GET_AGENTS' }, { 'content-type': 'application/json', ...headers })).json as { get_agents: { agents: AgentJson[] } }).get_agents.agents;

const SPEC = `name: hello
pods:
  hello:
    count: 2
    tasks:
      server:
        cmd: 'echo hello-from-the-sandbox; exec sleep 1000'
        cpus: 0.1
        memory: 16
        kill-grace-period: 1
plans:
  deploy:
    strategy: serial
    phases:
      hello-deploy: { pod: hello, strategy: parallel }
`;

test('the console against a real cluster: agents, a drain from the page to DRAINED live, a plan step continued, service plans', { skip, timeout: 300_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  await startAgent(t, { master: m.address, hostname: 'console-a', resources: 'cpus:2;mem:1024', stopSignal: 'SIGUSR1' });
  await startAgent(t, { master: m.address, hostname: 'console-b', resources: 'cpus:2;mem:1024', stopSignal: 'SIGUSR1' });
  const dir = tempDir(t, 'drydock-console-');
  writeFileSync(join(dir, 'hello.yml'), SPEC);
  const s = await startScheduler(t, { master: m.address, spec: join(dir, 'hello.yml') });
  // The task to watch: one running on an agent, from the service scheduler (a framework).
  const running = await eventually(async () => {
    const r = (await callApi(m.url, { type: 'GET_TASKS' })).json as { get_tasks: { tasks: Array<{ state: string; agent_id: { value: string } }> } };
    const tasks = r.get_tasks.tasks.filter((x) => x.state === 'TASK_RUNNING');
    return tasks.length === 2 ? tasks : undefined;
  }, undefined, 100, 'two running tasks');
  const target = running[0]?.agent_id.value ?? '';
  const agents = await agentsOf(m);
  const targetHost = agents.find((a) => a.agent_info.id.value === target)?.agent_info.hostname ?? '';
  const other = agents.find((a) => a.agent_info.id.value !== target);
  assert.ok(other !== undefined);

  const b = await browser(t);
  const p = await page(t, b);
  await p.goto(`${m.url}/#/agents`);
  await p.waitForSelector('#conn.c-live');
  await p.waitForFunction(() => document.querySelectorAll('tr[data-agent-id]').length === 2);
  const row = p.locator(`tr[data-agent-id="${target}"]`);
  assert.equal(await row.getAttribute('data-state'), 'ACTIVE');
  assert.equal((await row.locator('td.num').first().textContent())?.trim(), '1', 'its running task is counted');

  // Drain from the page; the states the row goes through are recorded, and the page is not reloaded.
  await p.evaluate((id) => {
    const w = window as unknown as { __states: string[]; __noReload: boolean };
    w.__noReload = true;
    w.__states = [];
    new MutationObserver(() => {
      const row = document.querySelector(`tr[data-agent-id="${id}"]`);
      const st = row?.getAttribute('data-state');
      if (st && w.__states.at(-1) !== st) w.__states.push(st);
      // A drain cannot be cancelled: a DRAINING row never offers Reactivate (nor another drain).
      if (st === 'DRAINING' && /Reactivate|Drain/.test([...(row?.querySelectorAll('button') ?? [])].map((x) => x.textContent).join(' '))) w.__states.push('OFFERED-WHILE-DRAINING');
    }).observe(document.getElementById('main') as HTMLElement, { childList: true, subtree: true });
  }, target);
  await shot(p, 'agents');
  await row.getByRole('button', { name: 'Drain…' }).click();
  await p.waitForSelector('dialog#confirm[open]');
  assert.match((await p.textContent('#confirm-text')) ?? '', new RegExp(targetHost));
  // The impact preview before confirming: the task killed, by framework, and room elsewhere.
  await p.waitForSelector('#confirm-preview [data-preview="ok"] [data-preview="capacity"]');
  const previewText = (await p.textContent('#confirm-preview')) ?? '';
  assert.match(previewText, /1 task killed/);
  assert.match(previewText, /hello/);
  assert.equal(await p.getAttribute('#confirm-preview [data-preview="capacity"]', 'data-fits'), 'true', previewText);
  assert.equal(await p.isVisible('#confirm-ok'), true);
  await shot(p, 'drain-dialog');
  await p.fill('#confirm-input', '3secs');
  await p.click('#confirm-ok');
  await p.waitForSelector(`tr[data-agent-id="${target}"][data-state="DRAINED"]`, { timeout: 30_000 });
  const after = await p.evaluate(() => {
    const w = window as unknown as { __states: string[]; __noReload?: boolean };
    return { states: w.__states, noReload: w.__noReload };
  });
  assert.equal(after.noReload, true, 'the page was not reloaded');
  assert.equal(after.states.at(-1), 'DRAINED');
  t.diagnostic(`drain states seen on the page: ${after.states.join(' -> ')}`);
  assert.match((await p.locator(`tr[data-agent-id="${target}"] td.drain-cell`).textContent()) ?? '', /DRAINED.*max grace 3s/);
  assert.equal((await agentsOf(m)).find((a) => a.agent_info.id.value === target)?.drain_info?.state, 'DRAINED', 'the master agrees');
  assert.ok(!after.states.includes('OFFERED-WHILE-DRAINING'), `no Reactivate or Drain on a DRAINING row: ${after.states.join(' -> ')}`);
  // DRAINED: Reactivate only; the other agent: Drain and Deactivate, no Reactivate.
  const buttons = async (id: string): Promise<string[]> => (await p.locator(`tr[data-agent-id="${id}"] td.actions button`).allTextContents()).sort();
  assert.deepEqual(await buttons(target), ['Reactivate']);
  assert.deepEqual(await buttons(other.agent_info.id.value), ['Deactivate', 'Drain…']);
  // The drain's "since" ticks with no event arriving: one redraw a second from the data's timestamps.
  const since = (await row.locator('td.drain-cell').textContent()) ?? '';
  await p.waitForFunction(([id, before]) => document.querySelector(`tr[data-agent-id="${id}"] td.drain-cell`)?.textContent !== before, [target, since] as const, { timeout: 5_000 });
  // No hostname wraps at 1280 px.
  for (const cell of await p.locator('tr[data-agent-id] td:first-child').all()) {
    const box = await cell.locator('.host').boundingBox();
    assert.ok(box !== null && box.height < 24, `one line for a hostname (${box?.height} px)`);
  }

  // The agent page: hostname, address, resources with their use, its task (gone after the drain), its history.
  await row.locator('a', { hasText: targetHost }).click();
  await p.waitForSelector(`[data-page="agent"][data-agent-id="${target}"]`);
  const agentPage = (await p.textContent('[data-page="agent"]')) ?? '';
  assert.match(agentPage, new RegExp(targetHost));
  assert.match(agentPage, /127\.0\.0\.1:\d+|127\.\d+\.\d+\.\d+:\d+/);
  assert.equal((await p.locator('[data-page="agent"] tr[data-resource="cpus"] td').allTextContents())[1], '2', 'total cpus');
  await p.waitForSelector('[data-page="agent"] tr[data-change="DRAINED"]');
  assert.deepEqual((await p.locator('[data-page="agent"] .title button').allTextContents()), ['Reactivate']);
  await shot(p, 'agent');
  // The other agent's page holds a running task (the service moved its instance): its use shows.
  await show(p, `#/agent/${other.agent_info.id.value}`);
  await p.waitForSelector(`[data-page="agent"][data-agent-id="${other.agent_info.id.value}"] tr[data-task-id]`);

  // A task page: its statuses and the tail of its sandbox's stdout, read from the agent.
  const taskLink = p.locator('[data-page="agent"] tr[data-task-id] a').first();
  await taskLink.click();
  await p.waitForSelector('[data-page="task"] tr[data-status="TASK_RUNNING"]');
  await p.waitForSelector('[data-page="task"] [data-agent-link]');
  await p.waitForFunction(() => /hello-from-the-sandbox/.test(document.querySelector('[data-file="stdout"]')?.textContent ?? ''), undefined, { timeout: 20_000 });
  await p.waitForSelector('[data-file="stderr"] pre.out');
  await shot(p, 'task');
  await show(p, '#/frameworks');
  await p.waitForSelector('tr[data-task-id] a[href^="#/task/"]');
  await shot(p, 'frameworks');
  await show(p, '#/cluster');
  await p.waitForSelector('.stats');
  await shot(p, 'cluster');

  // The service scheduler's plans, from its own stream (webui_url, CORS).
  await show(p, '#/plans');
  await p.waitForSelector(`[data-kind="service"][data-plan="deploy"]`);
  assert.match((await p.textContent(`[data-service] .service-head`)) ?? '', new RegExp(s.url.replace(/[.]/g, '\\.')));
  // The deploy plan is COMPLETE: neither Continue nor Interrupt is offered, on it or its phase.
  await p.waitForSelector(`[data-kind="service"][data-plan="deploy"] .plan-head .badge.s-complete`);
  assert.equal(await p.locator(`[data-kind="service"][data-plan="deploy"] button`).count(), 0);

  // A maintenance plan whose canary holds its step until an operator continues: continued from the page.
  const spec = JSON.stringify({ name: 'console-plan', machines: { hostnames: [targetHost] }, window: '1hrs', wait_for_frameworks: '1secs', settle: '1secs', phase_strategy: 'canary', up_when: 'operator' });
  const created = await fetch(`${m.url}/v1/maintenance/plans`, { method: 'POST', body: spec, signal: AbortSignal.timeout(10_000) });
  assert.equal(created.status, 200, await created.text());
  const step = p.locator(`[data-kind="maintenance"][data-plan="console-plan"] li.step`);
  await p.waitForSelector(`[data-kind="maintenance"][data-plan="console-plan"] li.step[data-status="WAITING"]`);
  await shot(p, 'plans');
  await p.locator(`[data-kind="maintenance"][data-plan="console-plan"] .plan-head button[data-verb="continue"]`).click();
  await p.waitForSelector('dialog#confirm[open]');
  await p.click('#confirm-ok');
  await p.waitForFunction(() => {
    const s = document.querySelector('[data-kind="maintenance"][data-plan="console-plan"] li.step')?.getAttribute('data-status');
    return s !== undefined && s !== null && s !== 'WAITING' && s !== 'PENDING';
  }, undefined, { timeout: 30_000 });
  t.diagnostic(`step after continue: ${await step.getAttribute('data-status')} ${(await step.textContent()) ?? ''}`);
  // Its machine goes DOWN and stays there until an operator continues (up_when: operator): the
  // Machines page shows its window on the timeline, live.
  await show(p, '#/machines');
  await p.waitForSelector(`.tl-row[data-machine="${targetHost}"] .badge.s-down`, { timeout: 30_000 });
  await p.waitForSelector(`tr[data-machine="${targetHost}"] button:has-text("Up")`);
  // The DOWN machine's agent left GET_AGENTS; the page keeps it as last seen, on its machine and on the agents page.
  await p.waitForSelector(`tr[data-machine="${targetHost}"] [data-gone-agent="${target}"]`, { timeout: 30_000 });
  assert.deepEqual(await p.locator(`tr[data-machine="${targetHost}"] button`).allTextContents(), ['Up'], 'a DOWN machine: Up only');
  // Timeline labels do not print over each other, nor over "now".
  const labels = await p.evaluate(() => [...document.querySelectorAll('.tl-axis .tick, .tl-axis .now')].filter((e) => (e.textContent ?? '') !== '').map((e) => {
    const r = e.getBoundingClientRect();
    return { text: e.textContent, left: r.left, right: r.right };
  }));
  for (let i = 0; i < labels.length; i++) for (let j = i + 1; j < labels.length; j++) {
    const [x, y] = [labels[i]!, labels[j]!];
    assert.ok(x.right <= y.left || y.right <= x.left, `labels ${x.text} and ${y.text} overlap`);
  }
  await shot(p, 'machines');
  await show(p, '#/agents');
  await p.waitForSelector(`tr[data-gone-agent="${target}"]`);
  await show(p, `#/agent/${target}`);
  await p.waitForSelector(`[data-page="agent"] .title .badge.s-gone`);
  await p.waitForSelector('[data-page="agent"] tr[data-change="MACHINE_DOWN"]');
});

test('with credentials required: a 401 shows the sign-in form; wrong secrets are refused; a 403 shows the master\'s message', { skip, timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-console-auth-');
  const secret = (name: string, text: string): string => {
    const path = join(dir, name);
    writeFileSync(path, text);
    chmodSync(path, 0o600);
    return path;
  };
  const credentials = secret('credentials', 'ops ops-s3cret\nviewer viewer-s3cret\n');
  const acls = secret('acls.json', JSON.stringify({ deactivate_agents: [{ principals: { values: ['ops'] }, agents: { type: 'ANY' } }, { principals: { type: 'ANY' }, agents: { type: 'NONE' } }] }));
  const m = await startMaster(t, { flags: ['--authenticate_http_readwrite', '--authenticate_http_readonly', `--credentials=${credentials}`, `--acls=${acls}`] });
  await startAgent(t, { master: m.address, hostname: 'console-auth', stopSignal: 'SIGUSR1' });
  assert.equal((await callApi(m.url, { type: 'GET_AGENTS' })).status, 401);

  const b = await browser(t);
  const p = await page(t, b);
  // The static files need no credentials; the first API call is refused, and the page asks.
  await p.goto(`${m.url}/#/agents`);
  await p.waitForSelector('#signin:not([hidden])');
  assert.match((await p.textContent('#signin-msg')) ?? '', /requires credentials/);
  await p.fill('#principal', 'ops');
  await p.fill('#secret', 'wrong');
  await p.click('#signin-form button[type=submit]');
  await p.waitForFunction(() => /refused/.test(document.getElementById('signin-msg')?.textContent ?? '') && !document.getElementById('signin')?.hidden);
  await p.fill('#secret', 'viewer-s3cret');
  await p.fill('#principal', 'viewer');
  await p.click('#signin-form button[type=submit]');
  await p.waitForSelector('#conn.c-live');
  await p.waitForSelector('tr[data-agent-id]');
  assert.equal(await p.isHidden('#signin'), true);
  assert.match((await p.textContent('#who')) ?? '', /viewer/);

  // viewer may look but not deactivate: the master's 403 message is shown.
  await p.getByRole('button', { name: 'Deactivate' }).click();
  await p.click('#confirm-ok');
  await p.waitForSelector('.toast.t-error:not([hidden])');
  assert.match((await p.textContent('#toast')) ?? '', /403/);
  assert.equal(await p.getAttribute('tr[data-agent-id]', 'data-state'), 'ACTIVE');

  // Signing out and in as ops: the same button works.
  await p.click('#who a');
  await p.waitForSelector('#signin:not([hidden])');
  await p.fill('#principal', 'ops');
  await p.fill('#secret', 'ops-s3cret');
  await p.click('#signin-form button[type=submit]');
  await p.waitForSelector('tr[data-agent-id]');
  await p.getByRole('button', { name: 'Deactivate' }).click();
  await p.click('#confirm-ok');
  await p.waitForSelector('tr[data-agent-id][data-state="DEACTIVATED"]');
});

const etcdSkip = skip || etcdMissing();

test('loaded from a standby, the console lands on the leader (307) and runs there', { skip: etcdSkip, timeout: 180_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/console-test`, '--etcd_ttl=2secs'];
  const a = await startMaster(t, { flags });
  const c = await startMaster(t, { flags });
  const leader = await eventually(async () => {
    for (const x of [a, c]) {
      const r = await fetch(`${x.url}/`, { redirect: 'manual', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }).catch(() => undefined);
      if (r?.status === 200) return x;
    }
    return undefined;
  }, undefined, 100, 'a leader serving the console');
  const standby = leader === a ? c : a;
  await eventually(async () => ((await fetch(`${standby.url}/`, { redirect: 'manual', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) })).status === 307 ? true : undefined), undefined, 100, 'the standby redirecting');
  const b = await browser(t);
  const p = await page(t, b);
  await p.goto(`${standby.url}/#/cluster`);
  await p.waitForSelector('#conn.c-live');
  assert.equal(new URL(p.url()).port, String(leader.port), `the page is on the leader: ${p.url()}`);
  assert.equal(new URL(p.url()).hash, '#/cluster');
  await p.waitForSelector('td .badge.s-standby');
});

/**
 * The log line from the real daemons: every JSON line of master, agent and scheduler starts
 * with time, level, msg, daemon, component (ids next); --log_format=text prints text lines, for
 * people; --log_format=xml is refused with the choices and exit 1, before anything starts.
 */
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AGENT_BIN, Daemon, eventually, MASTER_BIN, removeDir, SCHEDULER_BIN, startAgent, startMaster, startScheduler, tempDir, type LogRecord } from '../helpers/daemons.js';
import { LOG_ID_KEYS } from '../../shared/log.js';

const HEAD = ['time', 'level', 'msg', 'daemon', 'component'];

/** One pod, one task: enough for the scheduler to subscribe, launch, and log with ids. */
function specFile(dir: string): string {
  const path = join(dir, 'service.yml');
  writeFileSync(
    path,
    `name: logs
pods:
  web:
    count: 1
    tasks:
      server:
        cmd: 'exec sleep 1000'
        cpus: 0.1
        memory: 16
        kill-grace-period: 1
plans:
  deploy:
    strategy: serial
    phases:
      web-deploy: { pod: web, strategy: serial }
`,
  );
  return path;
}

/** Every record's first keys are the head, its daemon the one that wrote it, and its ids come right after the head, in order. */
function checkRecords(records: readonly LogRecord[], daemon: string): void {
  assert.ok(records.length > 0, `${daemon} wrote JSON lines`);
  for (const r of records) {
    const keys = Object.keys(r);
    assert.deepEqual(keys.slice(0, 5), HEAD, `${daemon}: ${JSON.stringify(r)}`);
    assert.equal(r['daemon'], daemon, JSON.stringify(r));
    assert.match(String(r['time']), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/, JSON.stringify(r));
    assert.ok(typeof r['component'] === 'string' && r['component'] !== '', JSON.stringify(r));
    const ids = keys.slice(5).filter((k) => (LOG_ID_KEYS as readonly string[]).includes(k));
    assert.deepEqual(keys.slice(5, 5 + ids.length), ids, `ids right after the head: ${JSON.stringify(r)}`);
    assert.deepEqual(ids, [...ids].sort((a, b) => LOG_ID_KEYS.indexOf(a as never) - LOG_ID_KEYS.indexOf(b as never)), `ids in order: ${JSON.stringify(r)}`);
  }
}

test('every JSON line of master, agent and scheduler starts with time, level, msg, daemon, component', async (t: TestContext) => {
  const master = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const agent = await startAgent(t, { master: master.address, hostname: 'logs-1', resources: 'cpus:1;mem:256', stopSignal: 'SIGUSR1' });
  const scheduler = await startScheduler(t, { master: master.address, spec: specFile(tempDir(t, 'drydock-logs-')) });
  // The task launched and running: lines from several components of each daemon, with ids.
  await scheduler.daemon.waitForMsg('subscribed');
  await agent.daemon.waitForLog((r) => typeof r['taskId'] === 'string', undefined, 'an agent line about the task');
  await master.daemon.waitForMsg('agent registered', { agentId: agent.agentId });
  checkRecords(master.daemon.records, 'master');
  checkRecords(agent.daemon.records, 'agent');
  checkRecords(scheduler.daemon.records, 'scheduler');
  // Components name the parts: more than the daemon alone, and the ones the lines above came from.
  const components = (d: Daemon): Set<unknown> => new Set(d.records.map((r) => r['component']));
  assert.ok(components(master.daemon).has('registration'), [...components(master.daemon)].join(','));
  assert.ok(components(agent.daemon).has('session'), [...components(agent.daemon)].join(','));
  assert.ok(components(scheduler.daemon).has('scheduler'), [...components(scheduler.daemon)].join(','));
});

/** The first stdout lines of a daemon, once one matches `until` (bounded). */
async function firstLines(d: Daemon, until: RegExp, timeoutMs?: number): Promise<string[]> {
  return eventually(() => (d.stdout.some((l) => until.test(l)) ? [...d.stdout] : d.running ? undefined : Promise.reject(new Error(`${d.name} exited: ${d.stderr}`))), timeoutMs, 50, `a line matching ${until}`);
}

/** `2026-11-23T10:00:00.123Z INFO  master/http listening ...` */
const TEXT_LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (DEBUG|INFO |WARN |ERROR) (master|agent|scheduler)(\/[\w-]+)? \S/;

test('--log_format=text: each daemon prints text lines, not JSON', async (t: TestContext) => {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-logs-text-'));
  const started: Array<{ d: Daemon; signal: NodeJS.Signals }> = [];
  // One hook: the daemons stopped by their PIDs (the agent with SIGUSR1, so its task dies with it), then the dir removed.
  t.after(async () => {
    for (const { d, signal } of started.reverse()) await d.stop(10_000, signal);
    removeDir(dir);
  });
  const master = new Daemon(MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'master')}`, '--log_format=text']);
  started.push({ d: master, signal: 'SIGTERM' });
  const masterLines = await firstLines(master, / master listening /);
  const listening = masterLines.find((l) => / master listening /.test(l)) ?? '';
  const port = /\bport=(\d+)\b/.exec(listening)?.[1];
  assert.ok(port !== undefined, listening);

  const agent = new Daemon(AGENT_BIN, [`--master=127.0.0.1:${port}`, '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'agent')}`, '--hostname=text-1', '--resources=cpus:1;mem:256', '--registration_backoff_factor=10ms', '--log_format=text']);
  started.push({ d: agent, signal: 'SIGUSR1' });
  const agentLines = await firstLines(agent, / agent\/session registered /);

  writeFileSync(join(dir, 'service.yml'), 'name: text\npods:\n  web:\n    count: 1\n    tasks:\n      server: { cmd: "exec sleep 1000", cpus: 0.1, memory: 16 }\n');
  const scheduler = new Daemon(SCHEDULER_BIN, [`--master=127.0.0.1:${port}`, `--spec=${join(dir, 'service.yml')}`, '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'scheduler')}`, '--log_format=text']);
  started.push({ d: scheduler, signal: 'SIGTERM' });
  const schedulerLines = await firstLines(scheduler, / scheduler subscribed /);

  for (const [name, lines, d] of [['master', masterLines, master], ['agent', agentLines, agent], ['scheduler', schedulerLines, scheduler]] as const) {
    const first = lines.slice(0, 5);
    assert.ok(first.length > 0, name);
    for (const l of first) {
      assert.match(l, TEXT_LINE, `${name}: ${l}`);
      assert.ok(!l.includes('\x1b['), `no colour on a pipe: ${l}`);
    }
    assert.equal(d.records.length, 0, `${name}: no JSON line at all`);
  }
  assert.match(agentLines.find((l) => / registered /.test(l)) ?? '', /agentId=\S+/);
});

test('--log_format=xml: refused with the choices, exit 1, nothing started', async (t: TestContext) => {
  const dir = tempDir(t, 'drydock-logs-xml-');
  const cases: Array<[string, string, string[]]> = [
    ['drydock-master', MASTER_BIN, ['--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'master')}`]],
    ['drydock-agent', AGENT_BIN, ['--master=127.0.0.1:1', '--ip=127.0.0.1', '--port=0', `--work_dir=${join(dir, 'agent')}`]],
    ['drydock-scheduler', SCHEDULER_BIN, ['--master=127.0.0.1:1', `--spec=${join(dir, 'none.yml')}`, '--port=0', `--work_dir=${join(dir, 'scheduler')}`]],
  ];
  for (const [program, bin, args] of cases) {
    const d = new Daemon(bin, [...args, '--log_format=xml']);
    t.after(() => d.stop());
    const exit = (await d.exitWithin()) ?? 'timeout';
    assert.deepEqual(exit, { code: 1, signal: null }, `${program}: ${d.stderr}`);
    assert.match(d.stderr, new RegExp(`^${program}: Invalid value 'xml' for --log_format: (expected|must be) one of json, text\\n$`), program);
    assert.deepEqual(d.stdout, [], `${program}: no log line`);
  }
});

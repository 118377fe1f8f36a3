/**
 * The master's `/metrics` (Prometheus text) and `/metrics/snapshot` (Mesos keys) against a real
 * master with two real agents and a framework: the figures move with a launch, an inverse
 * offer's answer, a drain and a machine going DOWN past its window; every metric the Grafana
 * dashboard and the alert rules (ops/) name is in the master's output; the read-only realm and
 * the `get_endpoints` ACL guard both routes.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { callApi, eventually, ROOT, startAgent, startMaster, tempDir, type MasterHandle } from '../helpers/daemons.js';
import { etcdMissing, startEtcd } from '../helpers/etcd.js';
import { daemonSample, fetchSnapshot, parseExposition, scrapeMetrics, type Exposition } from '../helpers/exposition.js';

async function scrape(m: MasterHandle, headers: Record<string, string> = {}): Promise<Exposition> {
  return scrapeMetrics(`${m.url}/metrics`, headers);
}

function snapshot(m: MasterHandle, path = '/metrics/snapshot'): Promise<Record<string, number>> {
  return fetchSnapshot(`${m.url}${path}`);
}

/** The value of one series (labels must all match; `daemon="master"` is on every series). */
function value(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return daemonSample(e, 'master', name, labels);
}

/** Polls the exposition until `pick` gives a value other than undefined (bounded). */
async function until<T>(m: MasterHandle, pick: (e: Exposition) => T | undefined, what: string): Promise<T> {
  return eventually(async () => pick(await scrape(m)), undefined, 100, what);
}

type Status = { task_id: { value: string }; state: string; uuid?: string; agent_id?: { value: string } };
const statusOf = (e: SchedulerEvent): Status => (e['update'] as { status: Status }).status;
type Offer = { id: { value: string }; agent_id: { value: string } };
const offersOf = (e: SchedulerEvent): Offer[] => (e.type === 'OFFERS' ? ((e['offers'] as { offers?: Offer[] }).offers ?? []) : []);
const inverseOf = (e: SchedulerEvent): Offer[] => (e.type === 'INVERSE_OFFERS' ? (e['inverse_offers'] as { inverse_offers: Offer[] }).inverse_offers : []);

async function ack(s: SchedulerClient, e: SchedulerEvent): Promise<void> {
  const st = statusOf(e);
  if (st.uuid === undefined) return;
  const r = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
  assert.equal(r.status, 202, r.text);
}

async function post(m: MasterHandle, path: string, body: string): Promise<{ status: number; text: string }> {
  const r = await fetch(`${m.url}${path}`, { method: 'POST', body, headers: { 'content-type': 'application/json' }, signal: AbortSignal.timeout(10_000) });
  return { status: r.status, text: await r.text() };
}

/** Every metric name a PromQL expression names (identifiers followed by `{`, `[`, `)` or a comparison, minus PromQL's own words). */
function metricNames(expr: string): string[] {
  const words = new Set(['sum', 'max', 'min', 'avg', 'by', 'without', 'rate', 'increase', 'irate', 'histogram_quantile', 'absent', 'or', 'and', 'unless', 'vector', 'le', 'instance', 'state', 'mode', 'machine', 'plan', 'status', 'daemon', 'count', 'on', 'ignoring', 'agent_id', 'hostname']);
  const out = new Set<string>();
  for (const m of expr.replace(/"[^"]*"/g, '""').replace(/\[[^\]]*\]/g, '').matchAll(/[a-zA-Z_:][a-zA-Z0-9_:]*/g)) {
    if (!words.has(m[0]) && !/^\d/.test(m[0])) out.add(m[0]);
  }
  return [...out];
}

/** The names in an exposition: TYPE lines (also metrics without samples yet) and sample names (histogram _bucket/_sum/_count). */
function exposedNames(e: Exposition): Set<string> {
  return new Set([...e.types.keys(), ...e.samples.map((s) => s.name)]);
}

test('master /metrics and /metrics/snapshot follow a launch, an inverse offer, a drain and a machine DOWN past its window; the ops files name real metrics', async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=200ms'] });
  const a1 = await startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'm1', resources: 'cpus:2;mem:1024', flags: ['--status_update_retry_interval=500ms'] });
  const a2 = await startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'm2', resources: 'cpus:2;mem:1024' });

  let e = await scrape(m);
  assert.equal(value(e, 'drydock_master_leader'), 1);
  assert.equal(value(e, 'drydock_master_elections_total'), 1);
  assert.equal(value(e, 'drydock_master_term_epoch'), 1);
  assert.equal(value(e, 'drydock_master_agents', { state: 'active' }), 2);
  assert.equal(value(e, 'drydock_master_agents', { state: 'draining' }), 0);
  assert.equal(value(e, 'drydock_master_machines', { mode: 'UP' }), 2);
  assert.ok((value(e, 'nodejs_eventloop_lag_seconds') ?? -1) >= 0, 'event loop lag from the default metrics');
  const writesAtStart = value(e, 'drydock_master_registry_write_duration_seconds_count') ?? 0;
  assert.ok(writesAtStart >= 2, `two admissions were written (${writesAtStart})`);

  // A framework launches a task on each machine and acknowledges every update.
  const s = await SchedulerClient.subscribe(m.address, { user: 'root', name: 'metrics-fw', checkpoint: true, failover_timeout: 60 });
  t.after(() => s.close());
  const used = new Set<string>();
  const launchOn = async (agentId: string, taskId: string): Promise<void> => {
    const offer = await eventually(() => s.received.flatMap(offersOf).find((o) => o.agent_id.value === agentId && !used.has(o.id.value)), undefined, 50, `an offer for ${agentId}`);
    used.add(offer.id.value);
    const task = { name: taskId, task_id: { value: taskId }, agent_id: { value: agentId }, resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } }], command: { value: 'sleep 60' } };
    const launch = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }], filters: { refuse_seconds: 0 } });
    assert.equal(launch.status, 202, launch.text);
    for (let state = ''; state !== 'TASK_RUNNING'; ) {
      const u = await s.next((x) => x.type === 'UPDATE' && statusOf(x).task_id.value === taskId, undefined, `an update of ${taskId}`);
      state = statusOf(u).state;
      await ack(s, u);
    }
  };
  await launchOn(a1.agentId!, 't1');
  await launchOn(a2.agentId!, 't2');
  e = await until(m, (x) => ((value(x, 'drydock_master_status_update_ack_duration_seconds_count') ?? 0) >= 2 ? x : undefined), 'acknowledgements timed');
  assert.equal(value(e, 'drydock_master_tasks', { state: 'TASK_RUNNING' }), 2);
  assert.equal(value(e, 'drydock_master_frameworks', { state: 'connected' }), 1);
  let snap = await snapshot(m);
  assert.equal(snap['master/elected'], 1);
  assert.equal(snap['registrar/log/recovered'], 1);
  assert.equal(snap['master/slaves_active'], 2);
  assert.equal(snap['master/slaves_connected'], 2);
  assert.equal(snap['master/slave_registrations'], 2);
  assert.equal(snap['master/tasks_running'], 2);
  assert.equal(snap['master/frameworks_connected'], 1);
  assert.equal(snap['master/cpus_total'], 4);
  assert.equal(snap['master/cpus_used'], 1);
  assert.equal(snap['master/cpus_percent'], 0.25);
  assert.equal(snap['master/mem_total'], 2048);
  assert.ok(snap['master/uptime_secs']! > 0);
  assert.ok(snap['registrar/state_store_ms']! > 0, 'the last registry write took some time');
  assert.ok(snap['system/cpus_total']! >= 1 && snap['system/mem_total_bytes']! > 0);
  // The libprocess-style alias answers the same keys.
  assert.deepEqual(Object.keys(await snapshot(m, '/master/metrics/snapshot')), Object.keys(snap));

  // DRAIN_AGENT m1: its task is killed; until the kill is acknowledged the drain is in progress.
  const writesBeforeDrain = value(e, 'drydock_master_registry_write_duration_seconds_count') ?? 0;
  let r: { status: number; text: string } = await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: a1.agentId } } });
  assert.equal(r.status, 200, r.text);
  const killed = await s.next((x) => x.type === 'UPDATE' && statusOf(x).task_id.value === 't1' && statusOf(x).state === 'TASK_KILLED', undefined, 'TASK_KILLED');
  e = await scrape(m);
  assert.equal(value(e, 'drydock_master_agents', { state: 'draining' }), 1);
  assert.equal(value(e, 'drydock_master_agents', { state: 'active' }), 1);
  assert.equal(value(e, 'drydock_master_drains_in_progress'), 1);
  assert.ok((value(e, 'drydock_master_drain_oldest_age_seconds') ?? 0) > 0);
  assert.ok((value(e, 'drydock_master_registry_write_duration_seconds_count') ?? 0) > writesBeforeDrain, 'the drain was written');
  snap = await snapshot(m);
  assert.equal(snap['drydock/drains_in_progress'], 1);
  assert.equal(snap['master/slaves_active'], 1);
  assert.equal(snap['master/slaves_inactive'], 1);
  await ack(s, killed);
  e = await until(m, (x) => (value(x, 'drydock_master_agents', { state: 'drained' }) === 1 ? x : undefined), 'm1 DRAINED');
  assert.equal(value(e, 'drydock_master_drains_in_progress'), 0);
  assert.equal(value(e, 'drydock_master_drain_oldest_age_seconds'), 0);
  assert.equal(value(e, 'drydock_master_task_terminal_total', { state: 'TASK_KILLED' }), 1);
  snap = await snapshot(m);
  assert.equal(snap['master/tasks_killed'], 1);
  assert.equal(snap['master/tasks_running'], 1);

  // m2 scheduled for a 2-second window from now: DRAINING, an inverse offer (t2 runs there), accepted.
  const startNs = BigInt(Date.now()) * 1_000_000n;
  r = await post(m, '/maintenance/schedule', `{"windows":[{"machine_ids":[{"hostname":"m2","ip":"127.0.0.3"}],"unavailability":{"start":{"nanoseconds":${startNs}},"duration":{"nanoseconds":2000000000}}}]}`);
  assert.equal(r.status, 200, r.text);
  const inv = await eventually(() => s.received.flatMap(inverseOf).find((o) => o.agent_id.value === a2.agentId), undefined, 50, 'an inverse offer for m2');
  e = await scrape(m);
  assert.equal(value(e, 'drydock_master_machines', { mode: 'DRAINING' }), 1);
  assert.equal(value(e, 'drydock_master_inverse_offers_outstanding'), 1);
  r = await s.call('ACCEPT_INVERSE_OFFERS', { inverse_offer_ids: [inv.id], filters: { refuse_seconds: 3600 } });
  assert.equal(r.status, 202, r.text);
  e = await until(m, (x) => (value(x, 'drydock_master_inverse_offers_accepted_total') === 1 ? x : undefined), 'the inverse offer accepted');
  assert.equal(value(e, 'drydock_master_inverse_offers_outstanding'), 0);
  assert.equal((await snapshot(m))['drydock/inverse_offers_accepted'], 1);

  // m2 DOWN once its window has ended: overdue from then on; its agent is removed, t2 lost.
  await new Promise((res) => setTimeout(res, Math.max(0, Number(startNs / 1_000_000n) + 2100 - Date.now())));
  r = await post(m, '/machine/down', '[{"hostname":"m2","ip":"127.0.0.3"}]');
  assert.equal(r.status, 200, r.text);
  e = await until(m, (x) => (value(x, 'drydock_master_machines', { mode: 'DOWN' }) === 1 && value(x, 'drydock_master_agent_removals_total') === 1 ? x : undefined), 'm2 DOWN and its agent removed');
  assert.ok((value(e, 'drydock_master_machine_down_overdue_seconds', { machine: 'm2 (127.0.0.3)' }) ?? 0) > 0, 'm2 is DOWN past its window');
  assert.equal(value(e, 'drydock_master_agents', { state: 'active' }), 0);
  assert.equal(value(e, 'drydock_master_agents', { state: 'drained' }), 1);
  snap = await snapshot(m);
  assert.equal(snap['drydock/machines_down'], 1);
  assert.equal(snap['drydock/machines_up'], 1);
  assert.equal(snap['master/slave_removals'], 1);
  assert.equal(snap['master/slaves_active'], 0);
  assert.equal(snap['master/tasks_lost'], 1);
  assert.equal(snap['master/tasks_running'], 0);
  assert.ok(snap['drydock/machine_down_overdue_max_secs']! > 0);

  // The ops files: every metric they name is in this master's output (a rename fails here).
  const exposed = exposedNames(e);
  const dashboard = JSON.parse(readFileSync(join(ROOT, 'ops', 'grafana', 'drydock-dashboard.json'), 'utf8')) as { panels: Array<{ title: string; targets: Array<{ expr: string }> }> };
  const rules = parseYaml(readFileSync(join(ROOT, 'ops', 'prometheus', 'drydock-alerts.yml'), 'utf8')) as { groups: Array<{ rules: Array<{ alert: string; expr: string; for?: string }> }> };
  const exprs: Array<[string, string]> = [
    ...dashboard.panels.flatMap((p) => p.targets.map((x): [string, string] => [`panel ${p.title}`, x.expr])),
    ...rules.groups.flatMap((g) => g.rules.map((x): [string, string] => [`alert ${x.alert}`, x.expr])),
  ];
  assert.ok(dashboard.panels.length >= 10 && exprs.length > dashboard.panels.length);
  const alerts = rules.groups.flatMap((g) => g.rules.map((x) => x.alert));
  for (const a of ['DrydockNoLeader', 'DrydockDrainStuck', 'DrydockMachineDownPastWindow', 'DrydockAgentUnreachable', 'DrydockRegistryWritesSlow', 'DrydockAgentDiskPressure']) assert.ok(alerts.includes(a), `alert ${a}`);
  let named = 0;
  for (const [where, expr] of exprs) {
    const names = metricNames(expr);
    assert.ok(names.length > 0, `${where} names a metric: ${expr}`);
    for (const n of names) {
      named++;
      assert.ok(exposed.has(n), `${where}: ${n} is not in the master's /metrics`);
    }
  }
  assert.ok(named >= exprs.length);
});

test('metrics routes: read-only realm (401 with the readonly challenge), the get_endpoints ACL (403), GET and HEAD only', async (t) => {
  const dir = tempDir(t, 'drydock-metrics-auth-');
  const credentials = join(dir, 'credentials.json');
  writeFileSync(credentials, JSON.stringify({ credentials: [{ principal: 'prom', secret: 'prom-secret' }, { principal: 'legacy', secret: 'legacy-secret' }] }), { mode: 0o600 });
  // prom may scrape both; legacy (a Mesos exporter) only the snapshot.
  const acls = JSON.stringify({
    permissive: false,
    get_endpoints: [
      { principals: { values: ['prom'] }, paths: { values: ['/metrics', '/metrics/snapshot'] } },
      { principals: { values: ['legacy'] }, paths: { values: ['/metrics/snapshot'] } },
    ],
  });
  const m = await startMaster(t, { flags: ['--authenticate_http_readonly', `--credentials=${credentials}`, `--acls=${acls}`] });
  const basic = (p: string, s: string): Record<string, string> => ({ authorization: `Basic ${Buffer.from(`${p}:${s}`).toString('base64')}` });
  const get = async (path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ status: number; text: string; challenge: string | null }> => {
    const r = await fetch(`${m.url}${path}`, { method, headers, signal: AbortSignal.timeout(10_000) });
    return { status: r.status, text: await r.text(), challenge: r.headers.get('www-authenticate') };
  };

  for (const path of ['/metrics', '/metrics/snapshot', '/master/metrics/snapshot']) {
    const anon = await get(path);
    assert.equal(anon.status, 401, path);
    assert.equal(anon.challenge, 'Basic realm="mesos-master-readonly"');
    assert.equal((await get(path, basic('prom', 'wrong'))).status, 401, `${path} with a wrong secret`);
    assert.equal((await get(path, basic('prom', 'prom-secret'))).status, 200, `${path} as prom`);
  }
  const refused = await get('/metrics', basic('legacy', 'legacy-secret'));
  assert.equal(refused.status, 403);
  assert.match(refused.text, /get_endpoints/);
  assert.equal((await get('/metrics/snapshot', basic('legacy', 'legacy-secret'))).status, 200);
  // The alias is authorized as the path it stands for.
  assert.equal((await get('/master/metrics/snapshot', basic('legacy', 'legacy-secret'))).status, 200);

  const text = (await get('/metrics', basic('prom', 'prom-secret'))).text;
  assert.ok(parseExposition(text).samples.length > 0);
  const head = await get('/metrics/snapshot', basic('prom', 'prom-secret'), 'HEAD');
  assert.deepEqual([head.status, head.text], [200, '']);
  for (const method of ['POST', 'PUT', 'DELETE']) {
    const r = await get('/metrics', basic('prom', 'prom-secret'), method);
    assert.equal(r.status, 405, method);
  }
  // /health stays open.
  assert.equal((await get('/health')).status, 200);
});

test('HA: every master answers /metrics for itself, not redirected; the standby reports leader 0, elected 0, no term', { skip: etcdMissing(), timeout: 120_000 }, async (t) => {
  const etcd = await startEtcd(t);
  const flags = [`--etcd=etcd://${etcd.endpoint}/metrics-test`, '--etcd_ttl=2secs'];
  const a = await startMaster(t, { flags });
  const b = await startMaster(t, { flags });
  const leader = await eventually(async () => {
    for (const m of [a, b]) if ((await snapshot(m))['master/elected'] === 1) return m;
    return undefined;
  }, undefined, 100, 'a leader');
  const standby = leader === a ? b : a;
  const s = await snapshot(standby);
  assert.equal(s['master/elected'], 0);
  assert.equal(s['registrar/log/recovered'], 0);
  assert.equal(s['drydock/term_epoch'], 0);
  assert.equal(s['master/slaves_active'], 0);
  const l = await snapshot(leader);
  assert.ok(l['drydock/term_epoch']! > 0);
  const [el, es] = [await scrape(leader), await scrape(standby)];
  assert.equal(value(el, 'drydock_master_leader'), 1);
  assert.equal(value(es, 'drydock_master_leader'), 0);
  assert.equal(value(es, 'drydock_master_elections_total'), 0);
  assert.equal(value(es, 'drydock_master_term_epoch'), 0);
  // What the DrydockNoLeader alert sums.
  assert.equal((value(el, 'drydock_master_leader') ?? 0) + (value(es, 'drydock_master_leader') ?? 0), 1);
});

/**
 * `npm run bench [-- NAME...] [--out=FILE] [...]`: runs the benchmarks (all, or those named)
 * one after another, prints a table per benchmark, and writes every result as JSON to
 * --out when given. A benchmark that fails is reported with what it measured before the
 * failure, and the others still run; exit status 1 then. Missed goals are reported, not
 * fatal: performance is measured here, not asserted.
 *
 *   --out=FILE            write results JSON (for docs/benchmarks.md)
 *   --launches=N          launch: measured launches (default 50)
 *   --kill-samples=N      kill: kills (default 10)
 *   --grace-ms=MS         kill: grace period (default 1000)
 *   --tasks=N             footprint: tasks in the loaded measurement (default 100)
 *   --window-ms=MS        footprint: CPU window (default 5000)
 *   --storm-counts=A,B    storm: sizes (default 1000,10000)
 *   --storm-processes=P   storm: sim-agent processes (default 2 from 5,000 agents, else 1)
 *   --storm-concurrency=C storm: handshakes in flight over all processes (default 256)
 *   --storm-repeats=R     storm: floor and master storms per size, median reported (default 3)
 *   --storm-cpu-prof=DIR  storm: run the masters with --cpu-prof into DIR
 *   --accepts=N           accept: measured ACCEPTs, and launches of its agent-only floor (default 50)
 *   --tp-tasks=N          throughput: tasks brought to TASK_RUNNING (default 1000)
 *   --tp-agents=N         throughput: real agents, on 127.0.0.2 and up (default 10)
 *   --tp-cpu-prof=DIR     throughput: run the master and agents with --cpu-prof into DIR/<master|agent>
 *   --mt-machines=N       maintenance: machines in the schedule, 10 per window (default 10000)
 *   --mt-repeats=N        maintenance: updates and floor writes, median reported (default 5)
 *   --mt-cpu-prof=DIR     maintenance: run the master with --cpu-prof into DIR
 *   --mo-agents=N         maintenance-offers: simulated agents under offer (default 1000)
 *   --drain-tasks=N       drain: tasks on the drained agent (default 100)
 *   --drain-graces=A,B    drain: max_grace_period values in ms (default 0,2000)
 *   --fo-agents=N         failover: simulated agents following the leader (default 1000)
 *   --fo-ttl=S            failover: --etcd_ttl in seconds (default 5)
 *   --sf-runs=N           split-failover: fresh labs, one 2/1 etcd split each (default 3; root and network namespaces)
 *   --sf-ttl=S            split-failover: --etcd_ttl in seconds (default 3)
 *   --er-machines=N       etcd-registry: machines in the schedule (default 10000)
 *   --er-agents=N         etcd-registry: agents in the storm (default 10000)
 *   --sd-pods=N           service-deploy: pods deployed by drydock-scheduler (default 100)
 *   --sd-agents=N         service-deploy: real agents, on 127.0.0.2 and up (default 10)
 *   --sd-strategies=A,B   service-deploy: deploy phase strategies, a fresh cluster each (default serial,parallel)
 *   --sv-pods=N           service-vacate: pods moved off the agent going into maintenance (default 20)
 *   --mp-agents=N         maintenance-plan: simulated agents, one machine each (default 1000)
 *   --mp-racks=N          maintenance-plan: racks, attribute rack:r1..rN (default 20)
 *   --mp-max-down=N       maintenance-plan: the plan's max_down and the floor's parallel machines (default 50)
 *   --mp-plans=N          maintenance-plan: plans at once for the CPU figure (default 10)
 *   --mp-restart-ms=MS    maintenance-plan: a shut-down sim agent's restart delay (default 100)
 *   --mp-cpu-prof=DIR     maintenance-plan: run the masters with --cpu-prof into DIR
 *   --sec-agents=N        security: sim agents in each storm (default 2000)
 *   --sec-repeats=N       security: rounds of storms (plain, secured, no TLS, echo floors), alternating; median (default 3)
 *   --sec-accepts=N       security: measured ACCEPTs per master, alternating one by one (default 150)
 *   --sec-acl-entries=N   security: ACL entries of the secured master (default 1000)
 *   --sec-cpu-prof=DIR    security: run the masters with --cpu-prof into DIR/<storm|accept>-<side>
 *   --exe-repeats=N       agent-executable: starts of the single executable and of today's agent, alternating (default 5)
 *   --st-agents=N         state: simulated agents (default 10000)
 *   --st-tasks=N          state: running tasks each agent reports (default 5: 50,000 tasks)
 *   --st-repeats=N        state: timed single requests and floor runs, median reported (default 5)
 *   --st-cpu-prof=DIR     state: run the master with --cpu-prof into DIR
 *   --sp-agents=N         state-protobuf: simulated agents (default 10000)
 *   --sp-tasks=N          state-protobuf: running tasks spread over them (default 50000)
 *   --sp-repeats=N        state-protobuf: alternating JSON / protobuf GET_STATE rounds, median (default 5)
 */

import { writeFileSync } from 'node:fs';
import { cpus, release } from 'node:os';
import { parseArgs } from 'node:util';
import { allGoalsMet, renderTable, type BenchResult } from './report.js';
import { runLaunch } from './launch.js';
import { runKill } from './kill.js';
import { runFootprint } from './footprint.js';
import { runStorm } from './storm.js';
import { runAccept } from './accept.js';
import { runThroughput } from './throughput.js';
import { runMaintenance } from './maintenance.js';
import { runMaintenanceOffers } from './maintenance-offers.js';
import { runDrain } from './drain.js';
import { runFailover } from './failover.js';
import { runSplitFailover } from './split-failover.js';
import { runEtcdRegistry } from './etcd-registry.js';
import { runServiceDeploy } from './service-deploy.js';
import { runServiceVacate } from './service-vacate.js';
import { runMaintenancePlan } from './maintenance-plan.js';
import { runSecurity } from './security.js';
import { runAgentExecutable } from './agent-executable.js';
import { runState } from './state.js';
import { runStateProtobuf } from './state-protobuf.js';

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: 'string' },
    launches: { type: 'string', default: '50' },
    'kill-samples': { type: 'string', default: '10' },
    'grace-ms': { type: 'string', default: '1000' },
    tasks: { type: 'string', default: '100' },
    'window-ms': { type: 'string', default: '5000' },
    'storm-counts': { type: 'string', default: '1000,10000' },
    'storm-processes': { type: 'string' },
    'storm-concurrency': { type: 'string', default: '256' },
    'storm-repeats': { type: 'string', default: '3' },
    'storm-cpu-prof': { type: 'string' },
    accepts: { type: 'string', default: '50' },
    'tp-tasks': { type: 'string', default: '1000' },
    'tp-agents': { type: 'string', default: '10' },
    'tp-cpu-prof': { type: 'string' },
    'mt-machines': { type: 'string', default: '10000' },
    'mt-repeats': { type: 'string', default: '5' },
    'mt-cpu-prof': { type: 'string' },
    'mo-agents': { type: 'string', default: '1000' },
    'drain-tasks': { type: 'string', default: '100' },
    'drain-graces': { type: 'string', default: '0,2000' },
    'fo-agents': { type: 'string', default: '1000' },
    'fo-ttl': { type: 'string', default: '5' },
    'sf-runs': { type: 'string', default: '3' },
    'sf-ttl': { type: 'string', default: '3' },
    'er-machines': { type: 'string', default: '10000' },
    'er-agents': { type: 'string', default: '10000' },
    'sd-pods': { type: 'string', default: '100' },
    'sd-agents': { type: 'string', default: '10' },
    'sd-strategies': { type: 'string', default: 'serial,parallel' },
    'sv-pods': { type: 'string', default: '20' },
    'mp-agents': { type: 'string', default: '1000' },
    'mp-racks': { type: 'string', default: '20' },
    'mp-max-down': { type: 'string', default: '50' },
    'mp-plans': { type: 'string', default: '10' },
    'mp-restart-ms': { type: 'string', default: '100' },
    'mp-cpu-prof': { type: 'string' },
    'sec-agents': { type: 'string', default: '2000' },
    'sec-repeats': { type: 'string', default: '3' },
    'sec-accepts': { type: 'string', default: '150' },
    'sec-acl-entries': { type: 'string', default: '1000' },
    'sec-cpu-prof': { type: 'string' },
    'exe-repeats': { type: 'string', default: '5' },
    'st-agents': { type: 'string', default: '10000' },
    'st-tasks': { type: 'string', default: '5' },
    'st-repeats': { type: 'string', default: '5' },
    'st-cpu-prof': { type: 'string' },
    'sp-agents': { type: 'string', default: '10000' },
    'sp-tasks': { type: 'string', default: '50000' },
    'sp-repeats': { type: 'string', default: '5' },
    help: { type: 'boolean', short: 'h' },
  },
});

/** A positive integer option, or exit naming the flag and the value it got. */
function int(flag: string, text: string | undefined): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0) {
    process.stderr.write(`bench: --${flag} must be a positive integer, got '${text ?? ''}'\n`);
    process.exit(2);
  }
  return n;
}

/** A deploy phase strategy the service-deploy benchmark runs, or exit naming the flag and the value it got. */
function strategy(flag: string, text: string): 'serial' | 'parallel' {
  if (text === 'serial' || text === 'parallel') return text;
  process.stderr.write(`bench: --${flag} takes serial and/or parallel, got '${text}'\n`);
  process.exit(2);
}

const BENCHMARKS: Record<string, () => Promise<BenchResult>> = {
  launch: () => runLaunch({ launches: int('launches', values.launches) }),
  kill: () => runKill({ samples: int('kill-samples', values['kill-samples']), graceMs: int('grace-ms', values['grace-ms']) }),
  footprint: () => runFootprint({ tasks: int('tasks', values.tasks), windowMs: int('window-ms', values['window-ms']) }),
  storm: () => runStorm({
    counts: (values['storm-counts'] ?? '').split(',').map((c) => int('storm-counts', c)),
    ...(values['storm-processes'] === undefined ? {} : { processes: int('storm-processes', values['storm-processes']) }),
    concurrency: int('storm-concurrency', values['storm-concurrency']),
    ipBase: '127.1.0.0',
    repeats: int('storm-repeats', values['storm-repeats']),
    ...(values['storm-cpu-prof'] === undefined ? {} : { cpuProfDir: values['storm-cpu-prof'] }),
  }),
  accept: () => runAccept({ samples: int('accepts', values.accepts) }),
  throughput: () =>
    runThroughput({
      tasks: int('tp-tasks', values['tp-tasks']),
      agents: int('tp-agents', values['tp-agents']),
      ...(values['tp-cpu-prof'] === undefined ? {} : { cpuProfDir: values['tp-cpu-prof'] }),
    }),
  maintenance: () =>
    runMaintenance({
      machines: int('mt-machines', values['mt-machines']),
      perWindow: 10,
      repeats: int('mt-repeats', values['mt-repeats']),
      ...(values['mt-cpu-prof'] === undefined ? {} : { cpuProfDir: values['mt-cpu-prof'] }),
    }),
  'maintenance-offers': () => runMaintenanceOffers({ agents: int('mo-agents', values['mo-agents']), ipBase: '127.2.0.0' }),
  drain: () => runDrain({
    tasks: int('drain-tasks', values['drain-tasks']),
    // 0 is a valid grace (kill at once), so these are checked as non-negative integers.
    gracesMs: (values['drain-graces'] ?? '').split(',').map((g) => (g.trim() === '0' ? 0 : int('drain-graces', g))),
  }),
  failover: () => runFailover({ agents: int('fo-agents', values['fo-agents']), ttlSeconds: int('fo-ttl', values['fo-ttl']) }),
  'split-failover': () => runSplitFailover({ runs: int('sf-runs', values['sf-runs']), ttlSeconds: int('sf-ttl', values['sf-ttl']) }),
  'etcd-registry': () => runEtcdRegistry({ machines: int('er-machines', values['er-machines']), repeats: int('mt-repeats', values['mt-repeats']), agents: int('er-agents', values['er-agents']) }),
  'service-deploy': () => runServiceDeploy({
    pods: int('sd-pods', values['sd-pods']),
    agents: int('sd-agents', values['sd-agents']),
    strategies: (values['sd-strategies'] ?? '').split(',').map((s) => strategy('sd-strategies', s.trim())),
  }),
  'service-vacate': () => runServiceVacate({ pods: int('sv-pods', values['sv-pods']) }),
  'maintenance-plan': () => runMaintenancePlan({
    agents: int('mp-agents', values['mp-agents']),
    racks: int('mp-racks', values['mp-racks']),
    maxDown: int('mp-max-down', values['mp-max-down']),
    plans: int('mp-plans', values['mp-plans']),
    restartMs: int('mp-restart-ms', values['mp-restart-ms']),
    ipBase: '127.5.0.0',
    ...(values['mp-cpu-prof'] === undefined ? {} : { cpuProfDir: values['mp-cpu-prof'] }),
  }),
  security: () => runSecurity({
    agents: int('sec-agents', values['sec-agents']),
    repeats: int('sec-repeats', values['sec-repeats']),
    accepts: int('sec-accepts', values['sec-accepts']),
    aclEntries: int('sec-acl-entries', values['sec-acl-entries']),
    ipBase: '127.6.0.0',
    ...(values['sec-cpu-prof'] === undefined ? {} : { cpuProfDir: values['sec-cpu-prof'] }),
  }),
  'agent-executable': () => runAgentExecutable({ repeats: int('exe-repeats', values['exe-repeats']) }),
  state: () => runState({
    agents: int('st-agents', values['st-agents']),
    tasksPerAgent: int('st-tasks', values['st-tasks']),
    repeats: int('st-repeats', values['st-repeats']),
    concurrent: 10,
    ipBase: '127.7.0.0',
    ...(values['st-cpu-prof'] === undefined ? {} : { cpuProfDir: values['st-cpu-prof'] }),
  }),
  'state-protobuf': () => runStateProtobuf({ agents: int('sp-agents', values['sp-agents']), tasks: int('sp-tasks', values['sp-tasks']), repeats: int('sp-repeats', values['sp-repeats']), ipBase: '127.7.0.0' }),
};

if (values.help === true) {
  process.stdout.write(`usage: npm run bench -- [${Object.keys(BENCHMARKS).join('|')} ...] [--out=FILE] (see scripts/bench/run.ts)\n`);
  process.exit(0);
}
const unknown = positionals.filter((p) => !(p in BENCHMARKS));
if (unknown.length > 0) {
  process.stderr.write(`bench: unknown benchmark(s) ${unknown.join(', ')}; known: ${Object.keys(BENCHMARKS).join(', ')}\n`);
  process.exit(2);
}
const names = positionals.length > 0 ? positionals : Object.keys(BENCHMARKS);

const results: BenchResult[] = [];
for (const name of names) {
  const t0 = performance.now();
  process.stderr.write(`bench: ${name}...\n`);
  let result: BenchResult;
  try {
    result = await BENCHMARKS[name]!();
  } catch (e) {
    result = { benchmark: name, rows: [], error: (e as Error).message };
  }
  result.context = { ...result.context, wallMs: Math.round(performance.now() - t0) };
  results.push(result);
  process.stdout.write(`\n${renderTable(result)}\n`);
}

const machine = { node: process.version, cpus: cpus().length, cpuModel: cpus()[0]?.model ?? '?', kernel: release(), date: new Date().toISOString() };
process.stdout.write(`\nmachine: ${machine.cpus} x ${machine.cpuModel}, Linux ${machine.kernel}, Node ${machine.node}\n`);
process.stdout.write(allGoalsMet(results) ? 'all goals met\n' : 'some goals missed or benchmarks failed (see FAIL above)\n');
if (values.out !== undefined) {
  writeFileSync(values.out, JSON.stringify({ machine, results }, null, 2) + '\n');
  process.stderr.write(`bench: results written to ${values.out}\n`);
}
process.exit(results.some((r) => r.error !== undefined) ? 1 : 0);

#!/usr/bin/env node
/**
 * drydock: the operator CLI. It talks to the master's HTTP API only.
 */

import { Command, Option } from 'commander';
import { ApiError, MasterClient, resolveMaster } from './client.js';
import { renderTable } from './table.js';
import { RUN_DEFAULTS, checkRunFlags, type RunFlags } from './run.js';
import { runCommand } from './run-command.js';
import { DRYDOCK_VERSION } from '../shared/version.js';
import { formatResources } from '../shared/resources.js';
import type { Resource } from '../shared/mesos.js';

interface AgentJson {
  agent_info: { hostname: string; port: number; id?: { value: string }; resources?: Resource[] };
  active: boolean;
  deactivated?: boolean;
  pid?: string;
  registered_time?: { nanoseconds: number };
  drain_info?: { state: string };
}

interface TaskJson {
  name: string;
  task_id: { value: string };
  framework_id: { value: string };
  agent_id: { value: string };
  state: string;
}

const program = new Command()
  .name('drydock')
  .description('Operate a Drydock cluster: agents, tasks, maintenance and draining.')
  .version(DRYDOCK_VERSION)
  .addOption(new Option('--master <host:port>', 'the master (default: $DRYDOCK_MASTER, else 127.0.0.1:5050)'))
  .showHelpAfterError();

function client(): MasterClient {
  return new MasterClient(resolveMaster(program.opts<{ master?: string }>().master));
}

/** The agent's address from its pid `slave(1)@ip:port`. */
function agentAddress(a: AgentJson): string {
  return a.pid?.split('@')[1] ?? `?:${a.agent_info.port}`;
}

function agentStatus(a: AgentJson): string {
  if (a.drain_info !== undefined) return a.drain_info.state;
  if (a.deactivated === true) return 'DEACTIVATED';
  return a.active ? 'ACTIVE' : 'DISCONNECTED';
}

const agent = program.command('agent').description('agents (machines running drydock-agent)');

agent
  .command('list')
  .description('list registered agents, and agents recovered after a master restart that have not re-registered')
  .option('--json', 'print the GET_AGENTS answer as JSON')
  .action(async (opts: { json?: boolean }) => {
    const r = await client().call<{ get_agents: { agents: AgentJson[]; recovered_agents: Array<{ hostname: string; port: number; id?: { value: string } }> } }>({ type: 'GET_AGENTS' });
    if (opts.json === true) {
      process.stdout.write(JSON.stringify(r.get_agents, null, 2) + '\n');
      return;
    }
    const agents = [...r.get_agents.agents].sort((a, b) => a.agent_info.hostname.localeCompare(b.agent_info.hostname));
    const rows = agents.map((a) => [
      a.agent_info.id?.value ?? '',
      a.agent_info.hostname,
      agentAddress(a),
      agentStatus(a),
      formatResources(a.agent_info.resources ?? []),
    ]);
    for (const a of r.get_agents.recovered_agents) rows.push([a.id?.value ?? '', a.hostname, `?:${a.port}`, 'RECOVERED', '']);
    process.stdout.write(renderTable(['ID', 'HOSTNAME', 'ADDRESS', 'STATUS', 'RESOURCES'], rows));
  });

program
  .command('tasks')
  .description('list tasks known to the master')
  .option('--all', 'include completed tasks')
  .option('--json', 'print the GET_TASKS answer as JSON')
  .action(async (opts: { all?: boolean; json?: boolean }) => {
    const r = await client().call<{ get_tasks: { tasks: TaskJson[]; unreachable_tasks: TaskJson[]; completed_tasks: TaskJson[] } }>({ type: 'GET_TASKS' });
    if (opts.json === true) {
      process.stdout.write(JSON.stringify(r.get_tasks, null, 2) + '\n');
      return;
    }
    const list = [...r.get_tasks.tasks, ...r.get_tasks.unreachable_tasks, ...(opts.all === true ? r.get_tasks.completed_tasks : [])];
    process.stdout.write(
      renderTable(['TASK', 'NAME', 'STATE', 'FRAMEWORK', 'AGENT'], list.map((t) => [t.task_id.value, t.name, t.state, t.framework_id.value, t.agent_id.value])),
    );
  });

program
  .command('run')
  .description('run one command as a task (like mesos-execute): print its status updates, exit with its exit status')
  .requiredOption('--name <name>', 'task name; the task id is NAME-<random>')
  .requiredOption('--command <cmd>', 'shell command to run (/bin/sh -c)')
  .option('--cpus <n>', 'cpus for the task', RUN_DEFAULTS.cpus)
  .option('--mem <mb>', 'memory for the task, in MB', RUN_DEFAULTS.mem)
  .option('--grace_period <duration>', 'kill grace period: SIGTERM, then SIGKILL after this', RUN_DEFAULTS.gracePeriod)
  .option('--hostname <host>', 'run only on the agent with this hostname (case-insensitive)')
  .option('--master <host:port>', 'the master (default: $DRYDOCK_MASTER, else 127.0.0.1:5050)')
  .option('--framework_name <name>', 'name of the framework drydock run subscribes as', RUN_DEFAULTS.frameworkName)
  .option('--checkpoint', 'subscribe as a checkpointing framework (the task survives agent restarts)')
  .option('--offer_timeout <duration>', 'give up when no matching offer arrives within this', RUN_DEFAULTS.offerTimeout)
  .option('--json', 'print each UPDATE event as received, one JSON object per line')
  .action(async (opts: RunFlags & { master?: string }) => {
    const req = checkRunFlags(opts);
    if (!req.ok) {
      process.stderr.write(`drydock run: ${req.error}\n`);
      process.exit(1);
    }
    const code = await runCommand(resolveMaster(opts.master ?? program.opts<{ master?: string }>().master), req.value);
    process.exit(code);
  });

try {
  await program.parseAsync(process.argv);
} catch (e) {
  if (e instanceof ApiError) {
    process.stderr.write(`drydock: ${e.status === 0 ? '' : `master answered ${e.status}: `}${e.message}\n`);
    process.exit(1);
  }
  throw e;
}

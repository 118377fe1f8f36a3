/**
 * The `drydock` command tree: every command, its flags and help, built when this module is
 * loaded and never parsed here (main.ts parses process.argv), so tests and `drydock completion`
 * can walk it. The CLI talks to the master's (and a service scheduler's) HTTP API only.
 */

import { Argument, Command, Option, type CommanderError } from 'commander';
import { ApiError, MasterClient, badMasterLine, formatJson, leaderOf, masterScheme, noLeaderLine, resolveMaster } from './client.js';
import { accessOptions, loadCliAccess, loadCliEtcdAccess, type AccessFlags } from './access.js';
import type { ClientAccess } from '../io/client-auth.js';
import { renderTable } from './table.js';
import { EXIT_RUN_FAILED, EXIT_TIMEOUT, exitCodeHelp, usageHint } from './exit-codes.js';
import { disableColour } from './terminal.js';
import { showClusterStatus, type StatusFlags } from './status-command.js';
import { bashScript, commandSpec, zshScript } from './completion.js';
import { changeMachines, replaceSchedule, showSchedule, showStatus, type MachineFlags } from './maintenance-command.js';
import { drainAgent, listAgents, showAgent, simpleAgentCommand } from './drain-command.js';
import type { DrainFlags, DrydockAgentJson } from './drain.js';
import { noOfferReasons } from './agent-view.js';
import { RUN_DEFAULTS, checkRunFlags, type RunFlags } from './run.js';
import { runCommand } from './run-command.js';
import { taskLogs, type LogsFlags } from './logs-command.js';
import {
  MASTER_PLANS,
  SCHEDULER_PLANS,
  createPlan,
  deletePlan,
  listPlans,
  planVerb,
  showPlan,
  type MasterFlags,
  type PlanApi,
  type PlanFlags,
  type SchedulerFlags,
  type ShowFlags,
} from './plan-command.js';
import type { VerbFlags } from './plan.js';
import { listPods, podAction, podInfo, podStatus } from './pod-command.js';
import { processShellWith, type Shell } from './plan-command.js';
import { EXIT_FAILED, EXIT_FORBIDDEN, EXIT_UNAUTHENTICATED, EXIT_USAGE, accessRefusal, type Target } from './service-api.js';
import { DRYDOCK_VERSION } from '../shared/version.js';
import { parseMasterSpec, type EtcdAccess } from '../shared/detection.js';

interface TaskJson {
  name: string;
  task_id: { value: string };
  framework_id: { value: string };
  agent_id: { value: string };
  state: string;
}

/** The whole program; main.ts parses it. */
export const program = new Command()
  .name('drydock')
  .description('Operate a Drydock cluster: agents, tasks, maintenance and draining; plans and pods of a service scheduler.')
  .version(DRYDOCK_VERSION)
  .addOption(new Option('--master <host:port>', 'the master: host:port (https://host:port for TLS), several as m1:5050,m2:5050, or etcd://h:2379/prefix (default: $DRYDOCK_MASTER, else 127.0.0.1:5050)'));
for (const o of accessOptions()) program.addOption(o);
program.option('--no-color', 'no colour, even on a terminal (as NO_COLOR=1)');
/** The command whose action runs (for the usage hint under a usage error it returns). */
let acting: Command | undefined;
// Before any command runs: --no-color turns colour off for every screen (terminal.ts).
program.hook('preAction', (_program, actionCommand) => {
  acting = actionCommand;
  if (program.opts<{ color?: boolean }>().color === false) disableColour();
});
program
  .addHelpText('after', `
Credentials and TLS (every command; flags win over the environment):
  --principal NAME --secret_file FILE   Basic credentials; FILE holds the secret (or 'principal secret',
                                        or {"token": ...}) and must not be readable by others (chmod 600)
  DRYDOCK_CREDENTIALS=principal:secret  the same in the environment, or DRYDOCK_CREDENTIALS='Bearer <token>'
  DRYDOCK_PRINCIPAL, DRYDOCK_SECRET_FILE, DRYDOCK_TLS_CA_FILE, DRYDOCK_TLS_CERT_FILE, DRYDOCK_TLS_KEY_FILE
  --tls_ca_file FILE                    verify the master's (and the scheduler's) certificate; both are then
                                        asked over https. plan and pod send the scheduler the same credential
  --etcd_ca_file, --etcd_cert_file, --etcd_key_file, --etcd_user, --etcd_password_file
                                        with --master=etcd://...: etcd's own TLS and user, to read the election
                                        (DRYDOCK_ETCD_CA_FILE, ..._CERT_FILE, ..._KEY_FILE, ..._USER, ..._PASSWORD_FILE)

Output: every command takes --json and then prints only JSON on stdout (the API's answer, or the
object its help names); messages and errors go to stderr. Colour only on a terminal, never
with NO_COLOR set or --no-color.

Exit status (every command; drydock run exits with its task's status once the task ran, 125 for its own failures):
${exitCodeHelp()}`);

/**
 * Sets the exit status for a command that finished; a non-zero one ends the process at once. A
 * usage error (the command printed its one line) gets the pointer to the command's help under it.
 */
function exit(code: number): void {
  if (code === EXIT_USAGE && acting !== undefined) process.stderr.write(`${usageHint(commandPath(acting))}\n`);
  if (code !== 0) process.exit(code);
  process.exitCode = 0;
}

/** A command as typed: `drydock agent drain`. */
export function commandPath(c: Command): string {
  const names: string[] = [];
  for (let x: Command | null = c; x !== null; x = x.parent) names.unshift(x.name());
  return names.join(' ');
}

/** The --timeout option of a command that waits or watches. */
function timeoutOption(what: string): Option {
  return new Option('--timeout <duration>', `with ${what}: stop after this long (e.g. 10mins) with exit ${EXIT_TIMEOUT}; the operation goes on (default: no limit)`);
}

let loaded: ClientAccess | undefined;

/** The credential the commands sent, in words (undefined: none, or not loaded yet), for the line a 401 prints. */
export function sentCredential(): string | undefined {
  return loaded?.credential;
}
/**
 * The credential and TLS material of the global flags and the environment, read once; a file
 * that cannot be used (mode 0644, missing, not a credential) ends the command with 2 before
 * anything is sent.
 */
function access(usageCode = EXIT_USAGE): ClientAccess {
  if (loaded !== undefined) return loaded;
  const r = loadCliAccess(program.opts<AccessFlags>(), process.env);
  if (!r.ok) {
    process.stderr.write(`drydock: ${r.error}\n`);
    process.exit(usageCode);
  }
  loaded = r.value;
  return loaded;
}

let loadedEtcd: { master: string; etcd: EtcdAccess | undefined } | undefined;

/**
 * etcd's TLS and user for the master a command asks (resolved: the flag, DRYDOCK_MASTER or the
 * default), read once: undefined for a master that is not etcd://. A flag without an etcd://
 * master, a missing partner flag, or a file that cannot be used (a key or password file others
 * may read) ends the command with 2 before anything is sent.
 */
function etcdAccess(master: string, usageCode = EXIT_USAGE): EtcdAccess | undefined {
  if (loadedEtcd?.master === master) return loadedEtcd.etcd;
  const r = loadCliEtcdAccess(program.opts<AccessFlags>(), process.env, master);
  if (!r.ok) {
    process.stderr.write(`drydock: ${r.error}\n`);
    process.exit(usageCode);
  }
  loadedEtcd = { master, etcd: r.value };
  return r.value;
}

function client(): MasterClient {
  const master = program.opts<{ master?: string }>().master;
  const a = access();
  const resolved = resolveMaster(master);
  return new MasterClient(resolved, { access: a, scheme: masterScheme(master, process.env, a.transport.tls), etcd: etcdAccess(resolved) });
}

/** The plan and pod commands' shell, with the same credential and TLS material (and etcd's, for maintenance plans). */
function shell(): Shell {
  const master = program.opts<{ master?: string }>().master;
  return processShellWith(access(), { master }, () => etcdAccess(resolveMaster(master)));
}

/** The --json help of the agent commands (drain-command.ts AgentCallJson). */
const AGENT_JSON = 'print {"call", "agent_id", "hostname", "agent"}: the call made and the agent as GET /drydock/v1/agents/<id> shows it after (state, machine, drain record; null once gone)';

program
  .command('status')
  .description('the cluster on one screen: the leading master and standbys, agents by state, machines by mode, drains with what each waits for, maintenance plans in progress, and a service scheduler\'s plans with --scheduler (or DRYDOCK_SCHEDULER)')
  .option('--scheduler <host:port>', 'also show this service scheduler\'s plans (default: $DRYDOCK_SCHEDULER, else none)')
  .option('--watch', 'redraw the screen every --interval until Ctrl-C (or --timeout); on a pipe, print it again each time it changes')
  .option('--interval <duration>', 'with --watch, time between redraws, 100ms to 1hrs (default: 2secs)')
  .addOption(timeoutOption('--watch'))
  .option('--json', 'print {"master", "agents", "machines", "drains", "maintenance_plans", "scheduler_plans", "errors"} (docs/operating.md: drydock status); with --watch, one compact line per change')
  .action(async (opts: StatusFlags) => exit(await showClusterStatus(client(), opts, shell())));

const agent = program.command('agent').description('agents (machines running drydock-agent): list, show, drain, deactivate, reactivate, mark gone');

agent
  .command('list')
  .description('list registered agents (STATUS: ACTIVE, DISCONNECTED, DEACTIVATED, DRAINING, DRAINED, with ", DISK PRESSURE" while the master offers none of its resources; MODE: the machine\'s maintenance mode), and agents recovered after a master restart that have not re-registered')
  .option('--json', 'print the GET_AGENTS answer as JSON')
  .action(async (opts: { json?: boolean }) => exit(await listAgents(client(), opts.json === true)));

agent
  .command('show')
  .description('one agent as the master sees it: address, state, machine and mode, conditions (DISK PRESSURE: why and since when; the master offers none of its resources while it lasts), drain')
  .argument('<agent>', 'agent id or hostname')
  .option('--json', 'print the agent as GET /drydock/v1/agents/<id> answers it')
  .action(async (arg: string, opts: { json?: boolean }) => exit(await showAgent(client(), arg, opts.json === true)));

agent
  .command('drain')
  .description('drain an agent (DRAIN_AGENT): no new tasks, its tasks killed (SIGTERM, grace, SIGKILL), DRAINED once every kill is acknowledged')
  .argument('<agent>', 'agent id or hostname')
  .option('--max_grace_period <duration>', 'cap each task\'s kill grace period (e.g. 30secs, 0secs); default: each task\'s own')
  .option('--mark_gone', 'once drained, mark the agent gone (it can never register again)')
  .option('--wait', 'wait and show progress until DRAINED (or gone, with --mark_gone): a live bar on a terminal, a line per change on a pipe; Ctrl-C stops waiting, not the drain')
  .addOption(timeoutOption('--wait'))
  .option('--dry-run', 'drain nothing: show what the drain would do (the tasks it kills by framework, the pods left without a running instance, whether the other agents have room), from the master\'s impact preview')
  .option('--json', AGENT_JSON + '; with --wait, one compact line each time the drain changes; with --dry-run, the preview (docs/api.md)')
  .action(async (id: string, opts: DrainFlags) => exit(await drainAgent(client(), id, opts)));

agent
  .command('deactivate')
  .description('deactivate an agent (DEACTIVATE_AGENT): no new offers; running tasks are untouched')
  .argument('<agent>', 'agent id or hostname')
  .option('--json', AGENT_JSON)
  .action(async (id: string, opts: { json?: boolean }) => exit(await simpleAgentCommand(client(), 'deactivate', id, opts.json === true)));

agent
  .command('reactivate')
  .description('reactivate a deactivated or DRAINED agent (REACTIVATE_AGENT): offers resume')
  .argument('<agent>', 'agent id or hostname')
  .option('--json', AGENT_JSON)
  .action(async (id: string, opts: { json?: boolean }) => exit(await simpleAgentCommand(client(), 'reactivate', id, opts.json === true)));

agent
  .command('gone')
  .description('mark an agent gone (MARK_AGENT_GONE): its tasks are gone and it can never register again')
  .argument('<agent>', 'agent id or hostname')
  .option('--json', AGENT_JSON)
  .action(async (id: string, opts: { json?: boolean }) => exit(await simpleAgentCommand(client(), 'gone', id, opts.json === true)));

const maintenance = program.command('maintenance').description('the maintenance schedule (Mesos maintenance primitives), machine status, and maintenance plans');

maintenance
  .command('schedule')
  .description('show the maintenance schedule; with FILE (or - for stdin), replace it with that Mesos Schedule JSON ({"windows":[...]}, {} to clear) and print what changed')
  .argument('[file]', 'Mesos Schedule JSON to install, or - for stdin')
  .option('--force', 'send machines that name a registered agent only by hostname or only by IP (they affect no agent); refused without it')
  .option('--json', 'print the GET_MAINTENANCE_SCHEDULE answer as JSON')
  .action(async (file: string | undefined, opts: MachineFlags) =>
    exit(file === undefined ? await showSchedule(client(), opts.json === true) : await replaceSchedule(client(), file, opts)));

maintenance
  .command('status')
  .description('machines DRAINING (with the frameworks\' answers to their inverse offers) and DOWN')
  .option('--json', 'print the GET_MAINTENANCE_STATUS answer as JSON')
  .action(async (opts: { json?: boolean }) => exit(await showStatus(client(), opts.json === true)));

const machine = program.command('machine').description('bring scheduled machines down and back up (MACHINE: HOST, HOST=IP or =IP)');

machine
  .command('down')
  .description('bring DRAINING machines DOWN (START_MAINTENANCE): their agents are shut down and kept out')
  .argument('<machine...>', 'HOST, HOST=IP or =IP, as in the schedule')
  .option('--force', 'send machines that name a registered agent only by hostname or only by IP (they affect no agent); refused without it')
  .option('--dry-run', 'change nothing: show what bringing them DOWN would do (their agents, the tasks killed by framework, the pods left without a running instance, whether the other agents have room), from the master\'s impact preview')
  .option('--json', 'print the maintenance status after the change as JSON; with --dry-run, the preview (docs/api.md)')
  .action(async (machines: string[], opts: MachineFlags) => exit(await changeMachines(client(), 'down', machines, opts)));

machine
  .command('up')
  .description('bring DOWN machines back UP (STOP_MAINTENANCE), removing them from the schedule')
  .argument('<machine...>', 'HOST, HOST=IP or =IP, as in the schedule')
  .option('--force', 'send machines that name a registered agent only by hostname or only by IP (they affect no agent); refused without it')
  .option('--json', 'print the maintenance status after the change as JSON')
  .action(async (machines: string[], opts: MachineFlags) => exit(await changeMachines(client(), 'up', machines, { ...opts, dryRun: false })));

program
  .command('tasks')
  .description('list tasks known to the master')
  .option('--all', 'include completed tasks')
  .option('--json', 'print the GET_TASKS answer as JSON')
  .action(async (opts: { all?: boolean; json?: boolean }) => {
    const r = await client().call<{ get_tasks: { tasks: TaskJson[]; unreachable_tasks: TaskJson[]; completed_tasks: TaskJson[] } }>({ type: 'GET_TASKS' });
    if (opts.json === true) {
      process.stdout.write(formatJson(r.get_tasks) + '\n');
      return;
    }
    const list = [...r.get_tasks.tasks, ...r.get_tasks.unreachable_tasks, ...(opts.all === true ? r.get_tasks.completed_tasks : [])];
    process.stdout.write(
      renderTable(['TASK', 'NAME', 'STATE', 'FRAMEWORK', 'AGENT'], list.map((t) => [t.task_id.value, t.name, t.state, t.framework_id.value, t.agent_id.value])),
    );
  });

const task = program.command('task').description('one task: its output (logs)');

task
  .command('logs')
  .description('print a task\'s stdout (or stderr) from its sandbox, through the agent\'s sandbox API (the agent checks access_sandboxes with the same credential); -f follows it until the task ends')
  .argument('<task>', 'task id, a unique prefix of one, or a task name')
  .option('--stderr', 'the task\'s stderr instead of its stdout')
  .option('-f, --follow', 'keep printing what the task writes until it has ended and everything is printed (exit 0); Ctrl-C stops following (130), the task goes on')
  .addOption(timeoutOption('--follow'))
  .option('--tail <lines>', 'begin with the last N lines (default: the whole file)')
  .option('--framework <id>', 'the task\'s framework, when its id or name is used by several')
  .option('--json', 'print each read as one JSON line: {"task_id", "framework_id", "agent_id", "file", "path", "offset", "data"} with data the bytes as base64')
  .addHelpText('after', `
Examples:
  drydock task logs hello-1a2b3c            the task's stdout so far
  drydock task logs hello --stderr --tail 20
  drydock task logs hello -f --timeout 10mins`)
  .action(async (taskArg: string, opts: LogsFlags) => {
    const master = program.opts<{ master?: string }>().master;
    const a = access();
    exit(await taskLogs(client(), taskArg, opts, a, masterScheme(master, process.env, a.transport.tls)));
  });

program
  .command('run')
  .description(`run one command as a task (like mesos-execute): print its status updates, exit with its exit status; drydock run's own failures (usage included) exit ${EXIT_RUN_FAILED}`)
  .requiredOption('--name <name>', 'task name; the task id is NAME-<random>')
  .requiredOption('--command <cmd>', 'shell command to run (/bin/sh -c)')
  .option('--cpus <n>', 'cpus for the task', RUN_DEFAULTS.cpus)
  .option('--mem <mb>', 'memory for the task, in MB', RUN_DEFAULTS.mem)
  .option('--grace_period <duration>', 'kill grace period: SIGTERM, then SIGKILL after this', RUN_DEFAULTS.gracePeriod)
  .option('--hostname <host>', 'run only on the agent with this hostname (case-insensitive)')
  .option('--master <host:port>', 'the master: host:port, several as m1:5050,m2:5050, or etcd://h:2379/prefix (default: $DRYDOCK_MASTER, else 127.0.0.1:5050)')
  .option('--framework_name <name>', 'name of the framework drydock run subscribes as', RUN_DEFAULTS.frameworkName)
  .option('--checkpoint', 'subscribe as a checkpointing framework (the task survives agent restarts)')
  .option('--offer_timeout <duration>', 'give up when no matching offer arrives within this', RUN_DEFAULTS.offerTimeout)
  .option('--json', 'print each UPDATE event as received, one JSON object per line')
  .action(async (opts: RunFlags & { master?: string }) => {
    // Every failure of drydock run itself is 125: 1 to 4 may be its task's own exit status.
    const req = checkRunFlags(opts);
    if (!req.ok) {
      process.stderr.write(`drydock run: ${req.error}\n${usageHint('drydock run')}\n`);
      process.exit(EXIT_RUN_FAILED);
    }
    const master = opts.master ?? program.opts<{ master?: string }>().master;
    const a = access(EXIT_RUN_FAILED);
    const scheme = masterScheme(master, process.env, a.transport.tls);
    const resolved = resolveMaster(master);
    const etcd = etcdAccess(resolved, EXIT_RUN_FAILED);
    // A list or etcd:// names no one master: SUBSCRIBE goes to the leader found through it.
    const spec = parseMasterSpec(resolved);
    if (!spec.ok) {
      process.stderr.write(`drydock run: ${badMasterLine(resolved, spec.error)}\n`);
      process.exit(EXIT_RUN_FAILED);
    }
    let at = resolved;
    if (spec.value.kind !== 'fixed') {
      const leader = await leaderOf(spec.value, a.transport, scheme, etcd);
      if (!leader.found) {
        process.stderr.write(`drydock run: ${noLeaderLine(resolved, leader.why)}\n`);
        process.exit(EXIT_RUN_FAILED);
      }
      at = leader.address;
    }
    // No offer: Drydock's view of the agents says whether disk pressure kept them from being offered.
    const explainNoOffer = async (hostname: string | undefined): Promise<string[]> => {
      const view = await new MasterClient(at, { access: a, scheme, timeoutMs: 5_000 }).getJson<{ agents?: DrydockAgentJson[] }>('/drydock/v1/agents');
      return noOfferReasons(view?.agents ?? [], hostname, Date.now());
    };
    const code = await runCommand(at, req.value, { access: a, scheme, explainNoOffer });
    process.exit(code);
  });

/**
 * The exit statuses of the commands that talk to a service scheduler (plan, pod) or to the
 * master's maintenance plans, for their help.
 */
function exitHelp(kind: Target['kind']): string {
  return `
Exit status:
  0    done; also when the ${kind} answers 208 (already reported or completed)
  1    the ${kind} refused (400, 404${kind === 'master' ? ', 409' : ''}), answered something else unexpected, or could not be reached
  2    usage: a bad flag or argument, or a credential, TLS or etcd file that cannot be used (nothing was sent)
  ${EXIT_UNAUTHENTICATED}    the ${kind} wants credentials (401), or refused the ones given${kind === 'master' ? `
  ${EXIT_FORBIDDEN}    the master's ACLs do not allow it (403)` : ''}
  ${EXIT_TIMEOUT}  --timeout ran out (plan show --watch); the plan goes on
  130  Ctrl-C (plan show --watch)`;
}

/**
 * A command of a plan or pod API: --json and the exit statuses. A scheduler's takes --scheduler
 * (the scheduler is not the master: --master does not apply); the master's use the program's
 * --master, found as the other master commands find it.
 */
function apiCommand(kind: Target['kind'], parent: Command, name: string, description: string): Command {
  const c = parent.command(name).description(description);
  if (kind === 'scheduler') c.option('--scheduler <host:port>', 'the service scheduler, host:port, asked over https with --tls_ca_file (http://host:port or https://host:port to choose) (default: $DRYDOCK_SCHEDULER, else 127.0.0.1:8088)');
  return c.option('--json', `print the ${kind}'s JSON answer as it is`).addHelpText('after', exitHelp(kind));
}

const serviceCommand = (parent: Command, name: string, description: string): Command => apiCommand('scheduler', parent, name, description);

/** A maintenance plan command's flags with the program's --master. */
function masterFlags<T extends PlanFlags>(opts: T): T {
  const master = program.opts<{ master?: string }>().master;
  return master === undefined ? opts : { ...opts, master };
}

/** The verbs that take --phase (and --step): command, alias, help. */
const TARGETED_VERBS: ReadonlyArray<readonly [string, string | undefined, string, 'phase' | 'phase and step']> = [
  ['continue', 'resume', 'continue a held plan or phase (a canary phase: its next step)', 'phase'],
  ['interrupt', 'pause', 'hold a plan or phase: what is launched finishes, nothing new starts', 'phase'],
  ['force-complete', undefined, 'mark a plan, phase or step COMPLETE without doing its work', 'phase and step'],
  ['restart', 'force-restart', 'restart a plan, phase or step: released and put back to PENDING (clearing back-off)', 'phase and step'],
];

/**
 * The plan commands both plan APIs share (list, show, stop, continue, interrupt, force-complete,
 * restart), under `parent`; `start` is the scheduler's only (a maintenance plan starts when
 * created).
 */
function planCommands(parent: Command, api: PlanApi, kind: Target['kind']): void {
  const flags = kind === 'master' ? masterFlags : <T extends PlanFlags>(opts: T): T => opts;
  const verb = (command: string) => async (name: string, opts: PlanFlags & VerbFlags) => exit(await planVerb(api, command, name, flags(opts), shell()));

  apiCommand(kind, parent, 'list', 'list the plans, one name a line')
    .action(async (opts: PlanFlags) => exit(await listPlans(api, flags(opts), shell())));

  apiCommand(kind, parent, 'show', 'show a plan as a tree: phases, steps, their statuses and what a step waits for, then the plan\'s errors; 417 (plan ERROR) is shown too')
    .argument('<plan>', 'plan name, e.g. deploy')
    .option('--watch', 'redraw until the plan is COMPLETE (exit 0); keeps watching through ERROR (a step may be restarted); gives up (exit 1) after 30s without an answer')
    .option('--interval <duration>', 'with --watch, time between polls, 100ms to 1hrs (default: 1secs)')
    .addOption(timeoutOption('--watch'))
    .action(async (name: string, opts: ShowFlags) => exit(await showPlan(api, name, flags(opts), shell())));

  if (kind === 'scheduler') {
    apiCommand(kind, parent, 'start', 'start a plan (a COMPLETE one runs again), with parameters that become its tasks\' environment')
      .argument('<plan>', 'plan name')
      .option('-p, --parameter <KEY=VALUE>', 'an environment variable for the plan\'s tasks; repeat for more (the last of a key wins)', (v: string, prev: string[] | undefined) => [...(prev ?? []), v])
      .action(verb('start'));
  }

  apiCommand(kind, parent, 'stop', 'stop a plan: hold it and put every step back to PENDING (continue, or start, begins again)')
    .argument('<plan>', 'plan name')
    .action(verb('stop'));

  for (const [name, alias, description, takes] of TARGETED_VERBS) {
    const c = apiCommand(kind, parent, name, description);
    if (alias !== undefined) c.alias(alias);
    c.argument('<plan>', 'plan name').option('--phase <phase>', 'the phase, by name or id');
    if (takes === 'phase and step') c.option('--step <step>', 'the step within --phase, by name or id');
    c.action(verb(name));
  }
}

const plan = program
  .command('plan')
  .description('plans of a service scheduler (deploy, recovery, ...): list, show, start, stop, continue, interrupt, force-complete, restart')
  .addHelpText('after', exitHelp('scheduler'));
planCommands(plan, SCHEDULER_PLANS, 'scheduler');

const maintenancePlan = maintenance
  .command('plan')
  .description('maintenance plans on the master: take machines through DRAINING, DOWN and UP, a step per machine (create, list, show, stop, continue, interrupt, force-complete, restart, delete)')
  .addHelpText('after', exitHelp('master'));

apiCommand('master', maintenancePlan, 'create', 'create a maintenance plan from a spec (YAML or JSON) and start it; the master checks the spec and lists every error')
  .argument('<file>', 'the spec, or - for stdin')
  .option('--dry-run', 'create nothing: show the plan\'s waves (machines out together, in order) and what each would do (tasks killed, pods left without a running instance, room on the other agents), from the master\'s impact preview')
  .action(async (file: string, opts: MasterFlags & { dryRun?: boolean }) => exit(await createPlan(file, masterFlags(opts), shell())));

planCommands(maintenancePlan, MASTER_PLANS, 'master');

apiCommand('master', maintenancePlan, 'delete', 'delete a maintenance plan that is COMPLETE or stopped (409 otherwise)')
  .argument('<plan>', 'plan name')
  .action(async (name: string, opts: MasterFlags) => exit(await deletePlan(name, masterFlags(opts), shell())));

const pod = program
  .command('pod')
  .description('pod instances of a service scheduler (hello-0, hello-1, ...): list, status, info, restart, replace')
  .addHelpText('after', exitHelp('scheduler'));

serviceCommand(pod, 'list', 'list the pod instances, one name a line')
  .action(async (opts: SchedulerFlags) => exit(await listPods(opts, shell())));

serviceCommand(pod, 'status', 'a table of the tasks of every pod instance, or of one: status (Mesos TaskState without TASK_), readiness, host')
  .argument('[pod]', 'pod instance, e.g. hello-0')
  .action(async (name: string | undefined, opts: SchedulerFlags) => exit(await podStatus(name, opts, shell())));

serviceCommand(pod, 'info', 'the Mesos TaskInfo and latest TaskStatus of each task of a pod instance, as JSON')
  .argument('<pod>', 'pod instance, e.g. hello-0')
  .action(async (name: string, opts: SchedulerFlags) => exit(await podInfo(name, opts, shell())));

serviceCommand(pod, 'restart', 'restart the tasks of a pod instance where they are (kill, relaunch on the same agent)')
  .argument('<pod>', 'pod instance, e.g. hello-0')
  .action(async (name: string, opts: SchedulerFlags) => exit(await podAction('restart', name, opts, shell())));

serviceCommand(pod, 'replace', 'replace the tasks of a pod instance: killed and launched anew, possibly on another agent')
  .argument('<pod>', 'pod instance, e.g. hello-0')
  .action(async (name: string, opts: SchedulerFlags) => exit(await podAction('replace', name, opts, shell())));

program
  .command('completion')
  .description('print a shell completion script, generated from these commands: source <(drydock completion bash), or save the zsh one as _drydock in $fpath')
  .addArgument(new Argument('<shell>', 'bash or zsh').choices(['bash', 'zsh']))
  .option('--json', 'print the command tree the scripts are made from (commands, aliases, options) as JSON')
  .action((shellName: 'bash' | 'zsh', opts: { json?: boolean }) => {
    const spec = commandSpec(program);
    process.stdout.write(opts.json === true ? formatJson(spec) + '\n' : shellName === 'bash' ? bashScript(spec) : zshScript(spec));
  });

/**
 * Usage errors are the same under every command: commander's own (an unknown option or command,
 * a missing argument, too many) print their one line and the pointer to the command's help, not
 * the whole help, and exit 2 like the commands' own checks; `drydock run` exits 125 (its task's
 * status is its own). Help and --version still exit 0. Set on every command of the finished tree.
 */
function usageErrors(c: Command, code: number): void {
  c.exitOverride((e: CommanderError) => process.exit(e.exitCode === 0 ? 0 : code))
    .showHelpAfterError(usageHint(commandPath(c)))
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'drydock: ')) });
  for (const sub of c.commands) usageErrors(sub, c === program && sub.name() === 'run' ? EXIT_RUN_FAILED : code);
}
usageErrors(program, EXIT_USAGE);

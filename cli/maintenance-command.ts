/**
 * The maintenance commands' shell: `drydock maintenance schedule [FILE|-]`,
 * `drydock maintenance status`, `drydock machine down|up MACHINE...`. Each is a few operator
 * API v1 calls; every decision (parsing, tables, what changed) is in maintenance.ts. A
 * master error (ApiError) is left to main.ts, which prints the master's message as it is.
 */

import { readFileSync } from 'node:fs';
import { ApiError, formatJson, type MasterClient } from './client.js';
import {
  SCHEDULE_HEADER,
  STATUS_HEADER,
  agentMachines,
  describeScheduleChange,
  downLeftOut,
  machineChangeLines,
  refuseMismatches,
  registeredAgents,
  scheduledMachines,
  machineStates,
  machineSuggestions,
  parseMachineArgs,
  readSchedule,
  scheduleRows,
  statusRows,
  type ClusterStatusJson,
  type ScheduleJson,
} from './maintenance.js';
import type { MachineId } from '../shared/machine.js';
import { machineMismatches, mismatchText, type MachineMismatch, type MatchAgent } from '../shared/machine-match.js';
import { renderTable } from './table.js';
import type { AgentJson } from './drain.js';
import { EXIT_FAILED, EXIT_OK, EXIT_USAGE } from './exit-codes.js';
import { oneLine } from './service-api.js';
import { previewAction } from './preview-command.js';

/** Where the commands write, and how they read stdin (`-`). */
export interface CommandIo {
  out(text: string): void;
  err(line: string): void;
  readStdin(): Promise<string>;
}

export const processIo: CommandIo = {
  out: (text) => void process.stdout.write(text),
  err: (line) => void process.stderr.write(`drydock: ${line}\n`),
  async readStdin() {
    const chunks: Buffer[] = [];
    for await (const c of process.stdin) chunks.push(c as Buffer);
    return Buffer.concat(chunks).toString('utf8');
  },
};

type ScheduleAnswer = { get_maintenance_schedule?: { schedule?: ScheduleJson } } | undefined;
type StatusAnswer = { get_maintenance_status?: { status?: ClusterStatusJson } } | undefined;
type AgentsAnswer = { get_agents?: { agents?: AgentJson[] } } | undefined;
type FrameworksAnswer = { get_frameworks?: { frameworks?: Array<{ framework_info?: { id?: { value?: string }; name?: string } }> } } | undefined;

/** A call whose answer only decorates the output: a failure leaves the decoration out. */
async function optional<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ApiError) return undefined;
    throw e;
  }
}

/** `drydock maintenance schedule`: the schedule as a table, with each machine's mode and agent. */
export async function showSchedule(client: MasterClient, json: boolean, io: CommandIo = processIo): Promise<number> {
  const [sched, status, agents] = await Promise.all([
    client.call<ScheduleAnswer>({ type: 'GET_MAINTENANCE_SCHEDULE' }),
    optional(client.call<StatusAnswer>({ type: 'GET_MAINTENANCE_STATUS' })),
    optional(client.call<AgentsAnswer>({ type: 'GET_AGENTS' })),
  ]);
  if (json) {
    io.out(formatJson(sched) + '\n');
    return 0;
  }
  const rows = scheduleRows(sched?.get_maintenance_schedule?.schedule, machineStates(status?.get_maintenance_status?.status), agentMachines(agents?.get_agents?.agents ?? []));
  if (rows.length === 0) io.out('no maintenance scheduled\n');
  else io.out(renderTable(SCHEDULE_HEADER, rows));
  return 0;
}

/**
 * `drydock maintenance schedule FILE|-`: replaces the schedule with the file's (UPDATE_MAINTENANCE_
 * SCHEDULE) and prints what changed, comparing the schedule before with the one the master
 * keeps after.
 */
export async function replaceSchedule(client: MasterClient, file: string, flags: MachineFlags, io: CommandIo = processIo): Promise<number> {
  const json = flags.json === true;
  const source = file === '-' ? 'stdin' : file;
  let text: string;
  try {
    text = file === '-' ? await io.readStdin() : readFileSync(file, 'utf8');
  } catch (e) {
    // Nothing was sent: the file named on the command line is the trouble.
    io.err(`cannot read ${source}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}`);
    return EXIT_USAGE;
  }
  const schedule = readSchedule(text, source);
  if (!schedule.ok) {
    io.err(schedule.error);
    return EXIT_USAGE;
  }
  const check = await checkMachines(client, scheduledMachines(schedule.value), flags.force === true, io);
  if (check === undefined) return EXIT_USAGE;
  const before = await client.call<ScheduleAnswer>({ type: 'GET_MAINTENANCE_SCHEDULE' });
  try {
    await client.call({ type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: schedule.value } });
  } catch (e) {
    printWarnings(client.lastWarnings, check.mismatches, io);
    if (!(e instanceof ApiError) || e.status !== 400) throw e;
    const down = downLeftOut(e.message);
    if (down === undefined) throw e;
    // Mesos' message says "deactivated"; the operator knows the machine as DOWN.
    io.err(`master answered 400: ${e.message}`);
    io.err(down);
    return EXIT_FAILED;
  }
  printWarnings(client.lastWarnings, check.mismatches, io);
  const after = await client.call<ScheduleAnswer>({ type: 'GET_MAINTENANCE_SCHEDULE' });
  if (json) io.out(formatJson(after) + '\n');
  else io.out(describeScheduleChange(before?.get_maintenance_schedule?.schedule, after?.get_maintenance_schedule?.schedule).join('\n') + '\n');
  return 0;
}

/** `drydock maintenance status`: draining machines with the frameworks' answers, then down machines. */
export async function showStatus(client: MasterClient, json: boolean, io: CommandIo = processIo): Promise<number> {
  const [status, frameworks] = await Promise.all([
    client.call<StatusAnswer>({ type: 'GET_MAINTENANCE_STATUS' }),
    optional(client.call<FrameworksAnswer>({ type: 'GET_FRAMEWORKS' })),
  ]);
  if (json) {
    io.out(formatJson(status) + '\n');
    return 0;
  }
  const names = new Map<string, string>();
  for (const f of frameworks?.get_frameworks?.frameworks ?? []) {
    const id = f.framework_info?.id?.value;
    if (id !== undefined && f.framework_info?.name !== undefined) names.set(id, f.framework_info.name);
  }
  const rows = statusRows(status?.get_maintenance_status?.status, names);
  if (rows.length === 0) io.out('no machine is DRAINING or DOWN\n');
  else io.out(renderTable(STATUS_HEADER, rows));
  return 0;
}

/** After `Machine '<json>' is not part of a maintenance schedule`: name the scheduled machines that were probably meant. */
async function hint(client: MasterClient, message: string, machines: readonly MachineId[], io: CommandIo): Promise<void> {
  if (!message.includes('is not part of a maintenance schedule')) return;
  const sched = await optional(client.call<ScheduleAnswer>({ type: 'GET_MAINTENANCE_SCHEDULE' }));
  const suggestions = [...new Set(machines.flatMap((m) => machineSuggestions(m, sched?.get_maintenance_schedule?.schedule)))];
  if (suggestions.length > 0) io.err(`the schedule has ${suggestions.join(', ')}: a machine matches only with the same hostname and IP fields`);
}

/** The flags of `drydock machine down|up` and `drydock maintenance schedule FILE`. */
export interface MachineFlags {
  json?: boolean;
  /** Send machines that name a registered agent only by hostname or only by IP all the same. */
  force?: boolean;
  /** `machine down` only: the master's impact preview instead of the change. */
  dryRun?: boolean;
}

/**
 * `drydock machine down|up MACHINE...`: START_MAINTENANCE / STOP_MAINTENANCE. Both answer an
 * empty 200, so `--json` prints the maintenance status after the change instead. Machines that
 * name an agent by half are refused without --force (checkMachines); each line says what
 * happened to the machine's agents, read before the call (DOWN shuts them down).
 */
export async function changeMachines(client: MasterClient, direction: 'down' | 'up', args: readonly string[], flags: MachineFlags, io: CommandIo = processIo): Promise<number> {
  const json = flags.json === true;
  const machines = parseMachineArgs(args);
  if (!machines.ok) {
    io.err(`machine ${direction}: ${machines.error}`);
    return EXIT_USAGE;
  }
  if (flags.dryRun === true) {
    return previewAction(client, { start_maintenance: { machines: machines.value } }, json, 'bringing them DOWN', { out: (l) => io.out(`${l}\n`), err: io.err });
  }
  const check = await checkMachines(client, machines.value, flags.force === true, io);
  if (check === undefined) return EXIT_USAGE;
  const type = direction === 'down' ? 'START_MAINTENANCE' : 'STOP_MAINTENANCE';
  try {
    await client.call({ type, [type.toLowerCase()]: { machines: machines.value } });
  } catch (e) {
    printWarnings(client.lastWarnings, check.mismatches, io);
    if (e instanceof ApiError && e.status === 400) await hint(client, e.message, machines.value, io);
    throw e;
  }
  printWarnings(client.lastWarnings, check.mismatches, io);
  if (json) {
    io.out(formatJson(await client.call<StatusAnswer>({ type: 'GET_MAINTENANCE_STATUS' })) + '\n');
    return EXIT_OK;
  }
  for (const line of machineChangeLines(direction, machines.value, check.agents)) io.out(`${line}\n`);
  return EXIT_OK;
}

/** What the machine commands read before sending: the registered agents (undefined: not readable), and the half matches. */
interface MachineCheck {
  readonly agents: readonly MatchAgent[] | undefined;
  readonly mismatches: readonly MachineMismatch[];
}

/**
 * Reads the agents and checks the machines against them (shared/machine-match.ts): a machine
 * that names an agent only by hostname or only by IP affects no agent, which is nearly always a
 * typo. Without --force that is refused here, nothing sent (undefined: exit 2); with it, sent.
 * When the agents cannot be read (no view_agents), the master's Warning still says it.
 */
async function checkMachines(client: MasterClient, machines: readonly MachineId[], force: boolean, io: CommandIo): Promise<MachineCheck | undefined> {
  const answer = await optional(client.call<AgentsAnswer>({ type: 'GET_AGENTS' }));
  const agents = answer === undefined ? undefined : registeredAgents(answer?.get_agents?.agents ?? []);
  const mismatches = agents === undefined ? [] : machineMismatches(machines, agents);
  if (mismatches.length > 0 && !force) {
    for (const line of refuseMismatches(mismatches)) io.err(line);
    return undefined;
  }
  return { agents, mismatches };
}

/** The master's Warning texts, and ours it did not send (an older master), as `warning:` lines. */
function printWarnings(fromMaster: readonly string[], ours: readonly MachineMismatch[], io: CommandIo): void {
  for (const w of new Set([...fromMaster, ...ours.map(mismatchText)])) io.err(`warning: ${oneLine(w)}`);
}

/**
 * The agent commands' shell: `drydock agent list`, `drain [--wait]`, `deactivate`,
 * `reactivate`, `gone`. It makes the operator API calls, reads Drydock's own view of the agents
 * (`GET /drydock/v1/agents[/<id>]`), polls, sleeps and handles Ctrl-C; every decision is in
 * drain.ts. A master error (ApiError) is left to main.ts.
 */

import { ApiError, formatJson, type MasterClient } from './client.js';
import { stringifyJson } from '../shared/json.js';
import {
  agentAlready,
  agentMode,
  agentStatus,
  describeDrain,
  drainCall,
  drainFrame,
  drainView,
  progressLines,
  resolveAgent,
  waitOutcome,
  type AgentJson,
  type DrainFlags,
  type DrydockAgentJson,
  type DrainView,
  type RecoveredAgentJson,
} from './drain.js';
import type { MachineMode } from '../shared/machine.js';
import { machineStates, type ClusterStatusJson } from './maintenance.js';
import { renderTable } from './table.js';
import { formatResources } from '../shared/resources.js';
import type { Resource } from '../shared/mesos.js';
import { EXIT_INTERRUPTED, LiveFrame, ansiPaint, plainPaint, screenIo, type ScreenIo, type TerminalIo } from './terminal.js';
import { EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE } from './exit-codes.js';
import { formatSpan, waitTimeoutMs } from './nanotime.js';
import { msToNs } from '../shared/duration.js';
import { previewAction } from './preview-command.js';
import { agentShowLines } from './agent-view.js';

/** How often `--wait` asks for the agent: fast enough to feel live, cheap for the master. */
export const WAIT_POLL_MS = 250;
/** Consecutive failed polls (about 10 s) after which `--wait` gives up; the drain goes on. */
const WAIT_MAX_FAILURES = 40;
export const processIo: ScreenIo = screenIo('drydock');

/** Whether a terminal can be redrawn (the process's can; a test's plain TerminalIo cannot). */
function isScreen(io: TerminalIo): io is ScreenIo {
  return 'tty' in io && 'write' in io;
}

/**
 * What the agent commands print with `--json`: the call made, the agent, and the agent as
 * Drydock's own API shows it afterwards (`GET /drydock/v1/agents/<id>`: its state, machine and
 * drain record; null once the master no longer has it: marked gone). One object, the same for
 * drain, deactivate, reactivate and gone; `drain --wait --json` prints it again, compact on one
 * line, each time the drain changes.
 */
export interface AgentCallJson {
  call: string;
  agent_id: { value: string };
  hostname: string;
  agent: DrydockAgentJson | null;
}

async function agentCallJson(client: MasterClient, call: string, agent: { id: string; hostname: string }): Promise<AgentCallJson> {
  return { call, agent_id: { value: agent.id }, hostname: agent.hostname, agent: (await drydockAgent(client, agent.id)) ?? null };
}

/** Drydock's view of one agent; undefined when the master does not have it (404). */
function drydockAgent(client: MasterClient, agentId: string): Promise<DrydockAgentJson | undefined> {
  return client.getJson<DrydockAgentJson>(`/drydock/v1/agents/${encodeURIComponent(agentId)}`);
}

interface AgentsAnswer {
  get_agents?: { agents?: AgentJson[]; recovered_agents?: RecoveredAgentJson[] };
}

async function getAgents(client: MasterClient): Promise<{ agents: AgentJson[]; recovered: RecoveredAgentJson[]; raw: AgentsAnswer }> {
  const r = await client.call<AgentsAnswer>({ type: 'GET_AGENTS' });
  return { agents: r?.get_agents?.agents ?? [], recovered: r?.get_agents?.recovered_agents ?? [], raw: r ?? {} };
}

/** The agent's address from its pid `slave(1)@ip:port`. */
function agentAddress(a: AgentJson): string {
  return a.pid?.split('@')[1] ?? `?:${a.agent_info.port ?? '?'}`;
}

/**
 * `drydock agent list`: registered agents with STATUS and MODE, then recovered ones. The list
 * and resources are GET_AGENTS'; STATUS and MODE are Drydock's view of each agent
 * (`GET /drydock/v1/agents`). `--json` prints GET_AGENTS' answer as it is.
 */
export async function listAgents(client: MasterClient, json: boolean, io: TerminalIo = processIo): Promise<number> {
  const { agents, recovered, raw } = await getAgents(client);
  if (json) {
    io.out(formatJson(raw.get_agents ?? raw));
    return 0;
  }
  const drydock = await client.getJson<{ agents?: DrydockAgentJson[] }>('/drydock/v1/agents');
  const views = new Map((drydock?.agents ?? []).map((d) => [d.agent_id?.value ?? '', d]));
  // A master without Drydock's view (404): the modes from GET_MAINTENANCE_STATUS (and shrug if
  // it has no maintenance support at all).
  const status = drydock !== undefined
    ? undefined
    : await client.call<{ get_maintenance_status?: { status?: ClusterStatusJson } }>({ type: 'GET_MAINTENANCE_STATUS' }).catch((e: unknown) => {
      if (e instanceof ApiError) return undefined;
      throw e;
    });
  const modes = new Map<string, MachineMode>();
  for (const [key, s] of machineStates(status?.get_maintenance_status?.status)) modes.set(key, s.mode);
  const sorted = [...agents].sort((a, b) => a.agent_info.hostname.localeCompare(b.agent_info.hostname));
  // Without Drydock's view of an agent (the master lacks it, or the agent came after it answered), GET_AGENTS' own fields.
  const viewOf = (a: AgentJson): DrydockAgentJson | undefined => (drydock === undefined ? undefined : views.get(a.agent_info.id?.value ?? ''));
  const rows = sorted.map((a) => [
    a.agent_info.id?.value ?? '',
    a.agent_info.hostname,
    agentAddress(a),
    agentStatus(a, viewOf(a)),
    viewOf(a) === undefined && drydock !== undefined ? '?' : agentMode(a, viewOf(a), modes),
    formatResources((a.agent_info.resources ?? []) as Resource[]),
  ]);
  for (const r of recovered) rows.push([r.id?.value ?? '', r.hostname, `?:${r.port ?? '?'}`, 'RECOVERED', '-', '']);
  io.out(renderTable(['ID', 'HOSTNAME', 'ADDRESS', 'STATUS', 'MODE', 'RESOURCES'], rows).trimEnd());
  return 0;
}

/**
 * `drydock agent show AGENT [--json]`: Drydock's view of one agent (`GET
 * /drydock/v1/agents/<id>`): where it is, its state, its machine and mode, its conditions (disk
 * pressure, with why and since when) and its drain. `--json` prints that view as it is.
 */
export async function showAgent(client: MasterClient, arg: string, json: boolean, io: TerminalIo = processIo): Promise<number> {
  const agent = await resolve(client, arg, io);
  if (agent === undefined) return EXIT_FAILED;
  const view = await drydockAgent(client, agent.id);
  if (view === undefined) {
    io.err(`the master no longer has agent ${agent.hostname} (${agent.id})`);
    return EXIT_FAILED;
  }
  if (json) io.out(formatJson(view));
  else for (const line of agentShowLines(view, io.nowMs())) io.out(line);
  return EXIT_OK;
}

/** Resolves AGENT (id or hostname) through GET_AGENTS; prints the error and returns undefined when it names none or several. */
async function resolve(client: MasterClient, arg: string, io: TerminalIo): Promise<{ id: string; hostname: string } | undefined> {
  const { agents, recovered } = await getAgents(client);
  return resolveIn(arg, agents, recovered, io);
}

/** resolve() over a GET_AGENTS answer already read. */
function resolveIn(arg: string, agents: readonly AgentJson[], recovered: readonly RecoveredAgentJson[], io: TerminalIo): { id: string; hostname: string } | undefined {
  const r = resolveAgent(arg, agents, recovered);
  if (!r.ok) {
    io.err(r.error);
    return undefined;
  }
  const hostname = agents.find((a) => a.agent_info.id?.value === r.value)?.agent_info.hostname
    ?? recovered.find((a) => a.id?.value === r.value)?.hostname
    ?? r.value;
  return { id: r.value, hostname };
}

/** `drydock agent drain AGENT [--max_grace_period D] [--mark_gone] [--wait [--timeout D]] [--dry-run]`. */
export async function drainAgent(client: MasterClient, arg: string, flags: DrainFlags, io: TerminalIo = processIo): Promise<number> {
  // Check the flags before asking the master anything: a bad one is a usage error, nothing sent.
  const probe = drainCall('-', flags);
  if (!probe.ok) {
    io.err(probe.error);
    return EXIT_USAGE;
  }
  const timeout = waitTimeoutMs(flags.timeout, flags.wait === true, '--wait');
  if (!timeout.ok) {
    io.err(timeout.error);
    return EXIT_USAGE;
  }
  if (flags.dryRun === true && flags.wait === true) {
    io.err('--dry-run changes nothing, so there is nothing to --wait for');
    return EXIT_USAGE;
  }
  const agent = await resolve(client, arg, io);
  if (agent === undefined) return EXIT_FAILED;
  const call = drainCall(agent.id, flags);
  if (!call.ok) return EXIT_USAGE;
  if (flags.dryRun === true) {
    return previewAction(client, { drain_agent: call.value['drain_agent'] }, flags.json === true, `draining ${agent.hostname} (${agent.id})`, io);
  }
  await client.call(call.value);
  io.err(describeDrain(agent.hostname, agent.id, flags));
  const json = flags.json === true;
  if (flags.wait !== true) {
    if (json) io.out(formatJson(await agentCallJson(client, 'DRAIN_AGENT', agent)));
    else io.out(`${agent.hostname} is DRAINING (drydock agent list shows when it is DRAINED)`);
    return 0;
  }
  return waitForDrain(client, agent, flags.mark_gone === true, json, io, timeout.value);
}

/**
 * Polls Drydock's view of the agent (`GET /drydock/v1/agents/<id>`: its drain record) every
 * WAIT_POLL_MS and shows the drain until it ends (see waitOutcome): on a
 * terminal a live frame redrawn in place (drainFrame), on a pipe one plain line per change
 * (progressLines), with --json one compact AgentCallJson line per change. The outcome line goes
 * to stdout on success (stderr with --json, which keeps stdout JSON), to stderr on failure.
 * Ctrl-C only stops the waiting: the drain is the master's and goes on. So does `--timeout`
 * (`timeoutMs`): once it has run out, even mid-request or mid-sleep, the wait ends with 124.
 */
async function waitForDrain(client: MasterClient, agent: { id: string; hostname: string }, markGone: boolean, json: boolean, io: TerminalIo, timeoutMs?: number): Promise<number> {
  const live = !json && isScreen(io) && io.tty ? { frame: new LiveFrame(io), paint: io.colour ? ansiPaint : plainPaint } : undefined;
  const startedMs = io.nowMs();
  let mostRemaining: number | undefined;
  let interrupted = false;
  const off = io.onSignal(() => {
    interrupted = true;
  });
  // Resolves once --timeout has run out (never without one); its timer is cleared when the wait ends.
  const done = new AbortController();
  const expired = timeoutMs === undefined ? new Promise<never>(() => undefined) : io.sleep(timeoutMs, done.signal).then(() => 'expired' as const);
  const timedOut = (): number => {
    io.err(`gave up waiting after ${formatSpan(msToNs(timeoutMs ?? 0))} (--timeout); the drain of ${agent.hostname} goes on (drydock agent list shows it)`);
    return EXIT_TIMEOUT;
  };
  try {
    let prev: DrainView | undefined;
    let failures = 0;
    for (;;) {
      if (interrupted) {
        io.err(`stopped waiting; the drain of ${agent.hostname} goes on (drydock agent list shows it)`);
        return EXIT_INTERRUPTED;
      }
      if (timeoutMs !== undefined && io.nowMs() - startedMs >= timeoutMs) return timedOut();
      let entry: DrydockAgentJson | undefined;
      try {
        const polled = await Promise.race([drydockAgent(client, agent.id), expired]);
        if (polled === 'expired') return timedOut();
        entry = polled;
        failures = 0;
      } catch (e) {
        if (!(e instanceof ApiError)) throw e;
        // No credential or no right does not come back by waiting: main.ts says so and exits.
        if (e.status === 401 || e.status === 403) throw e;
        if (++failures === 1) io.err(`polling the agent failed (${e.message}); retrying`);
        if (failures >= WAIT_MAX_FAILURES) {
          io.err(`gave up waiting after ${failures} failed polls; the drain goes on`);
          return EXIT_FAILED;
        }
        if ((await Promise.race([io.sleep(WAIT_POLL_MS), expired])) === 'expired') return timedOut();
        continue;
      }
      const view = drainView(entry, agent.hostname);
      const changes = progressLines(prev, view, io.nowMs());
      if (view.remaining !== undefined) mostRemaining = Math.max(mostRemaining ?? 0, view.remaining);
      if (live !== undefined) live.frame.draw(drainFrame(view, { startedMs, nowMs: io.nowMs(), mostRemaining, paint: live.paint }));
      else if (json) {
        if (changes.length > 0 || (prev?.present === true && !view.present)) io.out(stringifyJson({ call: 'DRAIN_AGENT', agent_id: { value: agent.id }, hostname: agent.hostname, agent: entry ?? null }));
      } else for (const line of changes) io.out(line);
      prev = view;
      const outcome = waitOutcome(view, markGone);
      if (outcome.done) {
        (outcome.exitCode === 0 && !json ? io.out : io.err)(outcome.line);
        return outcome.exitCode;
      }
      if ((await Promise.race([io.sleep(WAIT_POLL_MS), expired])) === 'expired') return timedOut();
    }
  } finally {
    done.abort();
    off();
  }
}

/** What each simple agent command calls and says. */
const SIMPLE = {
  deactivate: { type: 'DEACTIVATE_AGENT', done: 'is DEACTIVATED: no new offers; running tasks are untouched' },
  reactivate: { type: 'REACTIVATE_AGENT', done: 'is ACTIVE again: offers resume with the next allocation' },
  gone: { type: 'MARK_AGENT_GONE', done: 'is marked gone: its tasks are gone and it can never register again' },
} as const;

/** REACTIVATE_AGENT's refusal of an agent that is neither deactivated nor drained (Mesos' words). */
const NOT_DEACTIVATED = 'Agent is not deactivated';

/**
 * `drydock agent deactivate|reactivate|gone AGENT [--json]`; the call answers an empty 200, so
 * --json prints AgentCallJson. Deactivating and reactivating are idempotent alike (agentAlready):
 * an agent already so is left as it is, the command says so and exits 0, nothing is sent
 * (Mesos answers 200 to the one and 400 to the other).
 */
export async function simpleAgentCommand(client: MasterClient, command: keyof typeof SIMPLE, arg: string, json = false, io: TerminalIo = processIo): Promise<number> {
  const { agents, recovered } = await getAgents(client);
  const agent = resolveIn(arg, agents, recovered, io);
  if (agent === undefined) return EXIT_FAILED;
  const { type, done } = SIMPLE[command];
  const already = command === 'gone' ? undefined : agentAlready(command, agents.find((a) => a.agent_info.id?.value === agent.id));
  if (already === undefined) {
    try {
      await client.call({ type, [type.toLowerCase()]: { agent_id: { value: agent.id } } });
    } catch (e) {
      // Reactivated by someone else between our read and our call: it is what was asked.
      if (!(command === 'reactivate' && e instanceof ApiError && e.status === 400 && e.message === NOT_DEACTIVATED)) throw e;
    }
  }
  if (json) io.out(formatJson({ ...(await agentCallJson(client, type, agent)), changed: already === undefined }));
  else io.out(already === undefined ? `${agent.hostname} (${agent.id}) ${done}` : `${agent.hostname} (${agent.id}) ${already}`);
  return EXIT_OK;
}

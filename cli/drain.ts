/**
 * The agent commands' decisions, as pure functions: which agent an argument names, the
 * DRAIN_AGENT call, the STATUS and MODE columns of `drydock agent list`, and what
 * `drydock agent drain --wait` prints and when it stops. The shell is drain-command.ts.
 *
 * Two answers are read: Mesos' GET_AGENTS (the agents as Mesos writes them: ids, hostnames,
 * resources) and Drydock's own `GET /drydock/v1/agents[/<id>]` (what Drydock knows beyond
 * Mesos: the state word, the machine's mode, the drain record).
 */

import { parseDuration } from '../shared/duration.js';
import { machineKey, type MachineMode } from '../shared/machine.js';
import { agentIp, type Checked } from './maintenance.js';
import { conditionSuffix, type AgentConditionsJson } from './agent-view.js';
import { formatSpan, protobufDuration, toBigInt } from './nanotime.js';
import { progressBar, type Paint } from './terminal.js';

/** A GET_AGENTS entry; only the fields the CLI reads, all optional beyond the basics. */
export interface AgentJson {
  agent_info: { hostname: string; port?: number; id?: { value: string }; resources?: unknown[] };
  active: boolean;
  deactivated?: boolean;
  pid?: string;
  registered_time?: { nanoseconds?: unknown };
  drain_info?: { state?: string; config?: { max_grace_period?: { nanoseconds?: unknown }; mark_gone?: boolean } };
  estimated_drain_start_time?: { nanoseconds?: unknown };
}

/**
 * An agent as Drydock's own API writes it (`GET /drydock/v1/agents[/<id>]`, docs/api.md); only
 * what the CLI reads, every field optional (a field it does not know is ignored).
 */
export interface DrydockAgentJson {
  agent_id?: { value?: string };
  hostname?: string;
  ip?: string;
  port?: number;
  /** REGISTERED, RECOVERED, UNREACHABLE. */
  phase?: string;
  /** ACTIVE, DEACTIVATED, DRAINING, DRAINED, DISCONNECTED, RECOVERED, UNREACHABLE. */
  state?: string;
  /** The machine's maintenance mode and window; each only when the caller may see it. */
  machine?: { id?: { hostname?: string; ip?: string }; mode?: string; unavailability?: unknown };
  /** While the agent has a drain: what it is doing. */
  drain?: DrainRecordJson;
  /** What the master observes on the agent: `{}`, or `{"disk_pressure": {...}}` (agent-view.ts). */
  conditions?: AgentConditionsJson;
}

/** An agent known from the registry after a master restart, not re-registered yet. */
export interface RecoveredAgentJson {
  hostname: string;
  port?: number;
  id?: { value: string };
}

/**
 * Drydock's drain record (a Drydock agent's `drain`). Read leniently: remaining tasks may be a
 * count or a list, and each `waiting_for` entry a string or an object with a message.
 */
export interface DrainRecordJson {
  /** DRAINING or DRAINED. */
  state?: string;
  started_time?: { nanoseconds?: unknown };
  config?: unknown;
  remaining_tasks?: unknown;
  waiting_for?: unknown[];
  /** The agent could not decode its drain message: nothing was killed, and it is not re-sent at registrations. */
  refused?: { reason?: unknown; time?: { nanoseconds?: unknown } };
}

/** What the agent said when it refused its drain, or undefined. */
function refusedReason(d: DrydockAgentJson | undefined): string | undefined {
  const r = d?.drain?.refused;
  if (r === undefined) return undefined;
  return typeof r.reason === 'string' && r.reason !== '' ? r.reason : 'no reason given';
}

/** The line that says a drain was refused by its agent. */
export function refusedLine(reason: string): string {
  return `the agent refused the drain (nothing was killed; drain again, or upgrade the agent): ${reason}`;
}

/** A Mesos agent id: `<master id>-S<n>`. */
const AGENT_ID = /-S[0-9]+$/;

/** The agent an argument names: an agent id exactly, else a hostname (ignoring case). */
export function resolveAgent(arg: string, agents: readonly AgentJson[], recovered: readonly RecoveredAgentJson[] = []): Checked<string> {
  const wanted = arg.trim();
  if (wanted === '') return { ok: false, error: 'name an agent: its id or its hostname' };
  const all = [
    ...agents.map((a) => ({ id: a.agent_info.id?.value ?? '', hostname: a.agent_info.hostname, where: a.pid?.split('@')[1] ?? '' })),
    ...recovered.map((r) => ({ id: r.id?.value ?? '', hostname: r.hostname, where: 'recovered' })),
  ];
  if (all.some((a) => a.id === wanted)) return { ok: true, value: wanted };
  const byHost = all.filter((a) => a.hostname.toLowerCase() === wanted.toLowerCase());
  const [only] = byHost;
  if (byHost.length === 1 && only !== undefined) return { ok: true, value: only.id };
  if (byHost.length > 1) {
    const ids = byHost.map((a) => `  ${a.id}${a.where === '' ? '' : `  (${a.where})`}`).join('\n');
    return { ok: false, error: `hostname '${wanted}' matches ${byHost.length} agents; name one by id:\n${ids}` };
  }
  // Unreachable and gone agents are not in GET_AGENTS, yet DRAIN / DEACTIVATE / MARK_AGENT_GONE
  // still take their ids (reference §4.4): an id-shaped argument goes to the master, whose
  // answer (`Unknown agent`, 404) is then the operator's.
  if (AGENT_ID.test(wanted)) return { ok: true, value: wanted };
  return { ok: false, error: `no agent with id or hostname '${wanted}' (drydock agent list shows them)` };
}

/**
 * What `drydock agent deactivate|reactivate` would change nothing on, in words (`was already
 * DEACTIVATED: nothing changed`), or undefined when the call is needed. A draining or drained
 * agent counts as deactivated (it gets no offers); reactivating a DRAINING one is the master's to
 * refuse. An agent not in GET_AGENTS (unreachable, recovered) is left to the master.
 */
export function agentAlready(command: 'deactivate' | 'reactivate', a: AgentJson | undefined): string | undefined {
  if (a === undefined) return undefined;
  const drain = a.drain_info?.state;
  const inactive = a.deactivated === true || (drain !== undefined && drain !== '');
  if (command === 'deactivate' && inactive) return `was already ${drain === 'DRAINING' || drain === 'DRAINED' ? drain : 'DEACTIVATED'}: nothing changed`;
  if (command === 'reactivate' && !inactive) return 'was already ACTIVE: nothing changed';
  return undefined;
}

/** `drydock agent drain`'s flags as commander hands them over. */
export interface DrainFlags {
  max_grace_period?: string;
  mark_gone?: boolean;
  wait?: boolean;
  /** With --wait: give up waiting after this Mesos duration (exit 124); the drain goes on. */
  timeout?: string;
  /** Ask the master's impact preview instead of draining: nothing changes. */
  dryRun?: boolean;
  /** Print AgentCallJson (drain-command.ts) instead of text; with --wait, one compact line per change. */
  json?: boolean;
}

/**
 * The DRAIN_AGENT call. `max_grace_period` is a google.protobuf.Duration on the wire,
 * `{"seconds": S, "nanos": N}` (a string like "10mins" is a 400 in Mesos, reference §0.2);
 * the flag takes Mesos duration syntax and is converted exactly. Left out when not given,
 * so each task's own kill policy applies.
 */
export function drainCall(agentId: string, flags: DrainFlags): Checked<Record<string, unknown>> {
  const drain: Record<string, unknown> = { agent_id: { value: agentId } };
  if (flags.max_grace_period !== undefined) {
    const d = parseDuration(flags.max_grace_period);
    if (!d.ok) return { ok: false, error: `--max_grace_period: ${d.error}` };
    drain['max_grace_period'] = protobufDuration(d.ns);
  }
  if (flags.mark_gone === true) drain['mark_gone'] = true;
  return { ok: true, value: { type: 'DRAIN_AGENT', drain_agent: drain } };
}

/**
 * The STATUS column: Drydock's state word for the agent (DRAINING / DRAINED, DEACTIVATED,
 * ACTIVE, DISCONNECTED), marked `(REFUSED)` when the agent refused its drain; without Drydock's
 * view (a master that does not answer it), the same from GET_AGENTS: the drain state, else
 * DEACTIVATED, ACTIVE or DISCONNECTED (`active` is false for a deactivated agent whether or
 * not it is connected, so a draining agent's connection is not shown).
 */
export function agentStatus(a: AgentJson, d?: DrydockAgentJson): string {
  const state = nonEmpty(d?.state) ?? nonEmpty(a.drain_info?.state) ?? (a.deactivated === true ? 'DEACTIVATED' : a.active ? 'ACTIVE' : 'DISCONNECTED');
  // Disk pressure beside the state: the agent may be ACTIVE and still get no offers.
  return `${refusedReason(d) === undefined ? state : `${state} (REFUSED)`}${conditionSuffix(d)}`;
}

function nonEmpty(s: string | undefined): string | undefined {
  return s === undefined || s === '' ? undefined : s;
}

/**
 * The MODE column: the machine's mode as Drydock's view of the agent says it (`?` when the
 * caller may not see it); without that view, the one GET_MAINTENANCE_STATUS gives the agent's
 * machine (hostname + IP), else UP.
 */
export function agentMode(a: AgentJson, d: DrydockAgentJson | undefined, modes: ReadonlyMap<string, MachineMode>): string {
  if (d !== undefined) {
    const mode = d.machine?.mode;
    return typeof mode === 'string' && mode !== '' ? mode : '?';
  }
  const ip = agentIp(a.pid);
  if (ip === undefined) return 'UP';
  return modes.get(machineKey({ hostname: a.agent_info.hostname, ip })) ?? 'UP';
}

/** What `--wait` knows about the drain at one poll. */
export interface DrainView {
  /** Whether the master has the agent at all (registered, recovered or unreachable). */
  present: boolean;
  hostname: string;
  /** DRAINING / DRAINED, or undefined when the master has no drain for the agent. */
  state: string | undefined;
  /** Tasks the drain still waits for, when the master says. */
  remaining: number | undefined;
  /** Ids of those tasks, when listed. */
  remainingTasks: string[];
  /** What the drain waits for: one human message each, with a key that ignores ticking numbers. */
  waitingFor: WaitingEntry[];
  /** Why the agent refused the drain message, when it did (the drain record's `refused`). */
  refused: string | undefined;
}

/**
 * One `waiting_for` entry. The master's messages carry live figures ("1.2s of 2s grace"), so
 * an entry is "new" only when its key changes: its kind, task and framework, and its text
 * with the numbers blanked. A countdown ticking is not news; a task moving from "still
 * running after SIGTERM" to "not yet acknowledged" is.
 */
export interface WaitingEntry {
  key: string;
  text: string;
}

/** A `waiting_for` entry as one line and its change key. */
function waitingEntry(w: unknown): WaitingEntry {
  let text: string | undefined;
  let ids = '';
  if (typeof w === 'string') text = w;
  else if (typeof w === 'object' && w !== null) {
    const o = w as Record<string, unknown>;
    for (const k of ['message', 'reason', 'description', 'what']) {
      const v = o[k];
      if (text === undefined && typeof v === 'string' && v !== '') text = v;
    }
    ids = [o['kind'], taskIdText(o), typeof o['framework_id'] === 'string' ? o['framework_id'] : (o['framework_id'] as { value?: unknown } | undefined)?.value]
      .map((x) => (typeof x === 'string' ? x : '')).join('|');
  }
  text ??= JSON.stringify(w, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  return { key: `${ids}|${text.replace(/[0-9]+(\.[0-9]+)?/g, '#')}`, text };
}

function taskIdText(t: unknown): string | undefined {
  if (typeof t === 'string') return t;
  if (typeof t !== 'object' || t === null) return undefined;
  const o = t as { task_id?: { value?: unknown } | string; value?: unknown; id?: unknown };
  if (typeof o.task_id === 'string') return o.task_id;
  if (typeof o.task_id?.value === 'string') return o.task_id.value;
  if (typeof o.value === 'string') return o.value;
  if (typeof o.id === 'string') return o.id;
  return undefined;
}

/** The drain as Drydock's view of the agent shows it (`agent` undefined: the master does not have it). */
export function drainView(agent: DrydockAgentJson | undefined, hostname: string): DrainView {
  if (agent === undefined) return { present: false, hostname, state: undefined, remaining: undefined, remainingTasks: [], waitingFor: [], refused: undefined };
  const rec = agent.drain;
  const raw = rec?.remaining_tasks;
  let remaining: number | undefined;
  let remainingTasks: string[] = [];
  if (Array.isArray(raw)) {
    remaining = raw.length;
    remainingTasks = raw.map(taskIdText).filter((t): t is string => t !== undefined);
  } else {
    const n = toBigInt(raw) ?? toBigInt((raw as { count?: unknown } | undefined)?.count);
    if (n !== undefined) remaining = Number(n);
  }
  return {
    present: true,
    hostname: agent.hostname ?? hostname,
    state: rec?.state,
    remaining,
    remainingTasks,
    waitingFor: (rec?.waiting_for ?? []).map(waitingEntry),
    refused: refusedReason(agent),
  };
}

/** Where a wait stands after a poll. */
export type WaitOutcome =
  | { done: false }
  | { done: true; exitCode: number; line: string };

/**
 * When `--wait` stops: at DRAINED (0); with --mark_gone, when the master no longer has the
 * agent (0: it marks it gone instead of showing DRAINED); and, as failures (1), when the agent
 * vanished without --mark_gone or its drain was lifted (REACTIVATE_AGENT) under us.
 */
export function waitOutcome(v: DrainView, markGone: boolean): WaitOutcome {
  if (!v.present) {
    return markGone
      ? { done: true, exitCode: 0, line: `${v.hostname} drained and marked gone` }
      : { done: true, exitCode: 1, line: `${v.hostname} is no longer registered with the master (removed, or its machine brought DOWN); the drain did not finish` };
  }
  if (v.state === 'DRAINED') return { done: true, exitCode: 0, line: `${v.hostname} is DRAINED` };
  if (v.state === undefined) return { done: true, exitCode: 1, line: `${v.hostname} is no longer draining (reactivated?); the drain did not finish` };
  return { done: false };
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** `HH:MM:SS.mmm` (UTC), as `drydock run` prints its updates. */
export function clockTime(ms: number): string {
  return new Date(ms).toISOString().slice(11, 23);
}

/**
 * The lines one poll adds to `--wait`'s output: nothing when nothing changed; a state line
 * when the state or the remaining count changed (with the remaining task ids when listed);
 * a `waiting for:` line for each message that was not there before. Old messages that went
 * away are not repeated: the next state line says what is left.
 */
export function progressLines(prev: DrainView | undefined, next: DrainView, nowMs: number): string[] {
  if (!next.present) return [];
  const lines: string[] = [];
  const t = clockTime(nowMs);
  const stateChanged = prev === undefined || prev.state !== next.state || prev.remaining !== next.remaining || prev.remainingTasks.join() !== next.remainingTasks.join();
  if (stateChanged) {
    const parts = [t, (next.state ?? 'NOT DRAINING').padEnd(8), next.hostname];
    if (next.remaining !== undefined && next.state !== 'DRAINED') {
      const ids = next.remainingTasks.length > 0 && next.remainingTasks.length <= 5 ? `: ${next.remainingTasks.join(', ')}` : '';
      parts.push(`${plural(next.remaining, 'task')} left${ids}`);
    }
    lines.push(parts.join('  '));
  }
  if (next.refused !== undefined && next.refused !== prev?.refused) lines.push(`${t}    ${refusedLine(next.refused)}`);
  const before = new Set((prev?.waitingFor ?? []).map((w) => w.key));
  for (const w of next.waitingFor) if (!before.has(w.key)) lines.push(`${t}    waiting for: ${w.text}`);
  return lines;
}

/** One line saying what was asked of the master, for the operator's log. */
export function describeDrain(hostname: string, agentId: string, flags: DrainFlags): string {
  const grace = flags.max_grace_period === undefined ? 'each task\'s own grace period' : (() => {
    const d = parseDuration(flags.max_grace_period);
    return d.ok ? `max grace ${formatSpan(d.ns)}` : flags.max_grace_period;
  })();
  return `draining ${hostname} (${agentId}): ${grace}${flags.mark_gone === true ? ', then mark it gone' : ''}`;
}

/** What the live `--wait` frame needs besides the poll: when the wait began and the most tasks seen left. */
export interface DrainFrameOptions {
  readonly startedMs: number;
  readonly nowMs: number;
  /** The most tasks the drain was seen waiting for (the bar's total). */
  readonly mostRemaining: number | undefined;
  readonly paint: Paint;
}

/**
 * The live frame `drydock agent drain --wait` redraws on a terminal, one entry a line (no
 * trailing newline): the agent, its drain state, a bar of tasks ended out of the most seen
 * left, the time waited; then what the drain waits for, and how to stop waiting. Pure; the
 * terminal fits each line to its width (terminal.ts LiveFrame).
 */
export function drainFrame(v: DrainView, o: DrainFrameOptions): string[] {
  const state = v.state ?? 'NOT DRAINING';
  const colour = v.state === 'DRAINED' ? 'green' : v.state === 'DRAINING' ? 'yellow' : 'red';
  const waited = formatSpan(BigInt(Math.max(0, Math.round((o.nowMs - o.startedMs) / 1000))) * 1_000_000_000n);
  const total = Math.max(o.mostRemaining ?? 0, v.remaining ?? 0);
  // No bar without tasks to count (an idle agent, or a master that does not say).
  const bar = v.remaining === undefined || total === 0 ? '' : `${progressBar(total - v.remaining, total, 20)} tasks ended  `;
  const lines = [`${v.hostname}  ${o.paint(state, colour)}  ${bar}${waited}`];
  if (v.refused !== undefined) lines.push(`  ${o.paint(refusedLine(v.refused), 'red')}`);
  if (v.state !== 'DRAINED') {
    for (const w of v.waitingFor) lines.push(`  waiting for: ${w.text}`);
    lines.push('Ctrl-C stops waiting; the drain goes on');
  }
  return lines;
}

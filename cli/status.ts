/**
 * `drydock status`'s decisions, as pure functions: the cluster on one screen from the answers
 * the shell collected (GET_MASTER, GET_AGENTS, Drydock's own view of the agents
 * `/drydock/v1/agents`, GET_MAINTENANCE_STATUS and _SCHEDULE, the master's /metrics/snapshot,
 * the maintenance plans and, when asked, a service scheduler's plans). `clusterStatus` builds
 * the object `--json` prints; `renderStatus` draws it. The shell is status-command.ts.
 *
 * GET_AGENTS lists registered and recovered agents only (reference §GET_AGENTS): unreachable and
 * gone agents are absent, so their counts come from the metrics snapshot
 * (`master/slaves_unreachable`, `drydock/agents_gone`) and are null when it cannot be read.
 */

import { agentMachineId, machineKey, type MachineId, type MachineMode } from '../shared/machine.js';
import { agentIp, type ClusterStatusJson, type ScheduleJson } from './maintenance.js';
import { drainView, refusedLine, type AgentJson, type DrydockAgentJson, type RecoveredAgentJson } from './drain.js';
import { formatSpan, isoTime, nanosOf } from './nanotime.js';
import { diskPressureLine, diskPressureOf } from './agent-view.js';
import { stepNote, statusColour, type PlanView } from './plan.js';
import { oneLine } from './service-api.js';
import { renderTable } from './table.js';
import type { Colour, Paint } from './terminal.js';

/** GET_MASTER's `get_master`: only what the status reads. */
export interface MasterAnswerJson {
  master_info?: { id?: string; hostname?: string; port?: number; version?: string; address?: { hostname?: string; ip?: string; port?: number } };
  start_time?: number;
  elected_time?: number;
  standby_masters?: Array<MasterAnswerJson['master_info']>;
}

/** One plan as the shell got it: the plan, or why it could not be read. */
export type PlanAnswer = { readonly name: string; readonly plan: PlanView } | { readonly name: string; readonly error: string };

/** Plans from one API: the answers, or why the list could not be had. */
export type PlansAnswer = { readonly plans: readonly PlanAnswer[] } | { readonly error: string };

/** Everything the shell asked, as it came back; an optional part that failed is its error. */
export interface StatusInput {
  readonly nowMs: number;
  readonly master: MasterAnswerJson | { readonly error: string };
  readonly agents: readonly AgentJson[];
  readonly recovered: readonly RecoveredAgentJson[];
  /** Drydock's view of every agent (`GET /drydock/v1/agents`): machines' modes and drain records. */
  readonly drydockAgents: readonly DrydockAgentJson[] | { readonly error: string };
  readonly maintenance: ClusterStatusJson | { readonly error: string };
  readonly schedule: ScheduleJson | { readonly error: string };
  /** The master's /metrics/snapshot (flat name → number). */
  readonly snapshot: Readonly<Record<string, unknown>> | { readonly error: string };
  readonly maintenancePlans: PlansAnswer;
  /** Only when a scheduler was named (--scheduler or DRYDOCK_SCHEDULER). */
  readonly schedulerPlans?: { readonly base: string; readonly answer: PlansAnswer } | undefined;
}

/** The agent states, in the order an operator reads them (the same as the master's metrics). */
export const AGENT_STATES = ['active', 'deactivated', 'draining', 'drained', 'disconnected', 'unreachable', 'gone'] as const;
export type AgentState = (typeof AGENT_STATES)[number];

/** One drain on the screen. */
export interface DrainStatus {
  agent_id: string;
  hostname: string;
  state: string;
  /** Seconds since the drain started; null when the master did not say. */
  age_seconds: number | null;
  remaining_tasks: number | null;
  waiting_for: string[];
}

/** One agent under disk pressure on the screen. */
export interface DiskPressureStatus {
  agent_id: string;
  hostname: string;
  /** NO_SPACE, LOW_SPACE, LOW_INODES, WRITE_FAILED. */
  reason: string;
  /** The agent's sentence: the cause and the directory. */
  message: string;
  /** Since when (ISO 8601, the agent's clock); null when the master did not say. */
  since: string | null;
  /** `DISK PRESSURE (<reason>: <message>) since <time> (<age> ago)`. */
  line: string;
}

/** One plan on the screen. */
export interface PlanStatus {
  name: string;
  status: string;
  steps: { total: number; complete: number; by_status: Record<string, number> };
  /** The first step not COMPLETE that says why it waits (its note), if any. */
  waiting?: string;
  error?: string;
}

/** Plans of one API: those shown (not COMPLETE), how many COMPLETE ones are not, or the error. */
export interface PlansStatus {
  in_progress: PlanStatus[];
  complete: number;
  error?: string;
}

/**
 * `drydock status --json`: the documented object. Counts are numbers; a count drydock could not
 * learn is null; `errors` names each part that could not be asked (the rest is still shown).
 */
export interface ClusterStatus {
  master: { leader: string; id: string; hostname: string; version: string; elected_time: string | null; standbys: string[] } | null;
  agents: Record<AgentState, number | null>;
  machines: Record<MachineMode, number>;
  drains: DrainStatus[];
  /**
   * The agents under disk pressure (Drydock's view of the agents: the master offers none of their
   * resources while it lasts), longest first; `line` as `drydock agent show` says it.
   */
  disk_pressure: DiskPressureStatus[];
  maintenance_plans: PlansStatus;
  scheduler_plans?: PlansStatus & { scheduler: string };
  errors: string[];
}

/** Why a part of the screen could not be asked. */
type Failure = { readonly error: string };

/** Whether a part is its failure (an object with `error` and nothing else). */
function isError<T extends object>(v: T | Failure): v is Failure {
  return typeof (v as { error?: unknown }).error === 'string' && Object.keys(v).length === 1;
}

/** An agent's state for the counts: the first that applies of drained, draining, deactivated, active, else disconnected. */
export function agentState(a: AgentJson): Exclude<AgentState, 'unreachable' | 'gone'> {
  const drain = a.drain_info?.state;
  if (drain === 'DRAINED') return 'drained';
  if (drain === 'DRAINING') return 'draining';
  if (a.deactivated === true) return 'deactivated';
  return a.active ? 'active' : 'disconnected';
}

function address(info: MasterAnswerJson['master_info']): string {
  const host = info?.address?.ip ?? info?.address?.hostname ?? info?.hostname ?? '?';
  return `${host}:${info?.address?.port ?? info?.port ?? '?'}`;
}

/** A snapshot value as a count, or null. */
function count(snapshot: StatusInput['snapshot'], key: string): number | null {
  if (isError(snapshot)) return null;
  const v = (snapshot as Readonly<Record<string, unknown>>)[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'bigint' ? Number(v) : null;
}

/** A plan's step counts, and the first waiting note. */
export function planStatus(name: string, plan: PlanView): PlanStatus {
  const by: Record<string, number> = {};
  let total = 0;
  let waiting: string | undefined;
  for (const phase of plan.phases) {
    for (const step of phase.steps) {
      total++;
      by[step.status] = (by[step.status] ?? 0) + 1;
      if (waiting === undefined && step.status !== 'COMPLETE') {
        const note = stepNote(step);
        if (note !== undefined) waiting = `${step.name}: ${note}`;
      }
    }
  }
  return { name, status: plan.status, steps: { total, complete: by['COMPLETE'] ?? 0, by_status: by }, ...(waiting === undefined ? {} : { waiting }) };
}

function plansStatus(answer: PlansAnswer): PlansStatus {
  if ('error' in answer) return { in_progress: [], complete: 0, error: answer.error };
  const shown: PlanStatus[] = [];
  let complete = 0;
  for (const p of answer.plans) {
    if ('error' in p) shown.push({ name: p.name, status: '?', steps: { total: 0, complete: 0, by_status: {} }, error: p.error });
    else if (p.plan.status === 'COMPLETE') complete++;
    else shown.push(planStatus(p.name, p.plan));
  }
  return { in_progress: shown, complete };
}

/** The status object from the answers. Pure. */
export function clusterStatus(input: StatusInput): ClusterStatus {
  const errors: string[] = [];
  let master: ClusterStatus['master'] = null;
  if (isError(input.master)) errors.push(`GET_MASTER: ${input.master.error}`);
  else {
    const info = input.master.master_info;
    master = {
      leader: address(info),
      id: info?.id ?? '?',
      hostname: info?.hostname ?? '?',
      version: info?.version ?? '?',
      // GET_MASTER's times are doubles in seconds.
      elected_time: typeof input.master.elected_time === 'number' ? new Date(input.master.elected_time * 1000).toISOString() : null,
      standbys: (input.master.standby_masters ?? []).map(address),
    };
  }

  const agents: Record<AgentState, number | null> = { active: 0, deactivated: 0, draining: 0, drained: 0, disconnected: 0, unreachable: null, gone: null };
  for (const a of input.agents) {
    const s = agentState(a);
    agents[s] = (agents[s] ?? 0) + 1;
  }
  // Known from the registry after a master restart, not re-registered yet: not connected.
  agents.disconnected = (agents.disconnected ?? 0) + input.recovered.length;
  if (isError(input.snapshot)) errors.push(`/metrics/snapshot (unreachable and gone agents): ${input.snapshot.error}`);
  agents.unreachable = count(input.snapshot, 'master/slaves_unreachable');
  agents.gone = count(input.snapshot, 'drydock/agents_gone');

  // Machines: every machine an agent runs on or the schedule names, by its mode.
  const modes = new Map<string, MachineMode>();
  const see = (id: MachineId | undefined, mode: MachineMode): void => {
    const key = machineKey(id);
    if (mode !== 'UP' || !modes.has(key)) modes.set(key, mode);
  };
  const views = Array.isArray(input.drydockAgents) ? (input.drydockAgents as readonly DrydockAgentJson[]) : undefined;
  if (views === undefined) errors.push(`/drydock/v1/agents (machine modes, drain records): ${(input.drydockAgents as Failure).error}`);
  // Every agent's machine: in the mode Drydock's view gives it (else UP, learnt from GET_AGENTS).
  for (const d of views ?? []) {
    const mode = d.machine?.mode;
    const id = d.machine?.id ?? (d.hostname !== undefined && d.ip !== undefined ? agentMachineId(d.hostname, d.ip) : undefined);
    if (id !== undefined) see(id, mode === 'DRAINING' || mode === 'DOWN' ? mode : 'UP');
  }
  for (const a of input.agents) {
    const ip = agentIp(a.pid);
    if (ip !== undefined) see(agentMachineId(a.agent_info.hostname, ip), 'UP');
  }
  if (isError(input.schedule)) errors.push(`GET_MAINTENANCE_SCHEDULE: ${input.schedule.error}`);
  else for (const w of input.schedule.windows ?? []) for (const m of w.machine_ids ?? []) see(m, 'UP');
  if (isError(input.maintenance)) errors.push(`GET_MAINTENANCE_STATUS: ${input.maintenance.error}`);
  else {
    for (const d of input.maintenance.draining_machines ?? []) see(d.id, 'DRAINING');
    for (const m of input.maintenance.down_machines ?? []) see(m, 'DOWN');
  }
  const machines: Record<MachineMode, number> = { UP: 0, DRAINING: 0, DOWN: 0 };
  for (const mode of modes.values()) machines[mode]++;

  // Drains: every agent whose drain record Drydock's view shows (also one not re-registered, or
  // unreachable); without that view, GET_AGENTS' drain_info alone (no age, no reasons).
  const drained: Array<{ id: string; hostname: string; state: string; view: DrydockAgentJson | undefined }> = views !== undefined
    ? views.flatMap((d) => (d.drain === undefined ? [] : [{ id: d.agent_id?.value ?? '?', hostname: d.hostname ?? '?', state: d.drain.state ?? '', view: d }]))
    : input.agents.map((a) => ({ id: a.agent_info.id?.value ?? '?', hostname: a.agent_info.hostname, state: a.drain_info?.state ?? '', view: undefined }));
  const drains: DrainStatus[] = [];
  for (const { id, hostname, state, view } of drained) {
    if (state !== 'DRAINING' && state !== 'DRAINED') continue;
    const v = drainView(view, hostname);
    const started = nanosOf(view?.drain?.started_time);
    drains.push({
      agent_id: id,
      hostname,
      state,
      age_seconds: started === undefined ? null : Math.max(0, Math.floor((input.nowMs - Number(started / 1_000_000n)) / 1000)),
      remaining_tasks: v.remaining ?? null,
      // A refused drain first: nothing else it waits for will happen until someone acts.
      waiting_for: [...(v.refused === undefined ? [] : [refusedLine(v.refused)]), ...v.waitingFor.map((w) => w.text)].map(oneLine),
    });
  }
  // Longest-running first: the drain most likely stuck.
  drains.sort((x, y) => (y.age_seconds ?? -1) - (x.age_seconds ?? -1) || x.hostname.localeCompare(y.hostname));

  const disk_pressure: DiskPressureStatus[] = [];
  for (const d of views ?? []) {
    const p = diskPressureOf(d);
    if (p === undefined) continue;
    const since = nanosOf(p.since);
    disk_pressure.push({
      agent_id: d.agent_id?.value ?? '?',
      hostname: d.hostname ?? '?',
      reason: p.reason ?? '?',
      message: p.message ?? '',
      since: since === undefined ? null : isoTime(since),
      line: diskPressureLine(p, input.nowMs),
    });
  }
  disk_pressure.sort((x, y) => (x.since ?? '').localeCompare(y.since ?? '') || x.hostname.localeCompare(y.hostname));

  const maintenance_plans = plansStatus(input.maintenancePlans);
  if (maintenance_plans.error !== undefined) errors.push(`maintenance plans: ${maintenance_plans.error}`);
  const out: ClusterStatus = { master, agents, machines, drains, disk_pressure, maintenance_plans, errors };
  if (input.schedulerPlans !== undefined) {
    const s = plansStatus(input.schedulerPlans.answer);
    if (s.error !== undefined) errors.push(`scheduler plans at ${input.schedulerPlans.base}: ${s.error}`);
    out.scheduler_plans = { ...s, scheduler: input.schedulerPlans.base };
  }
  return out;
}

const AGENT_COLOUR: Readonly<Record<AgentState, Colour | undefined>> = {
  active: 'green',
  deactivated: 'yellow',
  draining: 'yellow',
  drained: 'green',
  disconnected: 'red',
  unreachable: 'red',
  gone: undefined,
};

const MODE_COLOUR: Readonly<Record<MachineMode, Colour>> = { UP: 'green', DRAINING: 'yellow', DOWN: 'red' };

/** `N word`, painted when N is not zero (a zero is not news). */
function figure(n: number | null, word: string, colour: Colour | undefined, paint: Paint): string {
  if (n === null) return `? ${word}`;
  const text = `${n} ${word}`;
  return n === 0 || colour === undefined ? text : paint(text, colour);
}

function paintStatus(status: string, paint: Paint): string {
  const c = statusColour(status);
  return c === undefined ? oneLine(status) : paint(oneLine(status), c);
}

/** `3/5 COMPLETE, 1 STARTING, 1 PENDING`. */
function stepsText(s: PlanStatus['steps']): string {
  const rest = Object.entries(s.by_status).filter(([k]) => k !== 'COMPLETE').sort(([a], [b]) => a.localeCompare(b)).map(([k, n]) => `${n} ${oneLine(k)}`);
  return [`${s.complete}/${s.total} COMPLETE`, ...rest].join(', ');
}

function planSection(title: string, p: PlansStatus, paint: Paint): string[] {
  const head = p.complete > 0 ? `${title} (${p.complete} COMPLETE not shown)` : title;
  if (p.error !== undefined) return [`${head}: ?`];
  if (p.in_progress.length === 0) return [`${head}: none in progress`];
  const rows = p.in_progress.map((x) => [oneLine(x.name), x.error !== undefined ? '?' : oneLine(x.status), x.error ?? stepsText(x.steps), x.waiting ?? '']);
  // The table pads plain text; the STATUS column is painted after, in place, so colours do not skew the widths.
  const table = renderTable(['PLAN', 'STATUS', 'STEPS', 'WAITING'], rows).trimEnd().split('\n');
  return [head, ...table.map((line, i) => (i === 0 ? line : paintFirst(line, rows[i - 1]?.[1] ?? '', (t) => paintStatus(t, paint))))];
}

/** Paints the first occurrence of a word after the first column of a table line. */
function paintFirst(line: string, word: string, painter: (text: string) => string): string {
  const at = line.indexOf(`  ${word}`);
  if (at === -1 || word === '') return line;
  return `${line.slice(0, at + 2)}${painter(word)}${line.slice(at + 2 + word.length)}`;
}

/** How long ago, for the drains table: `12s`, `3m 4s`. */
function age(seconds: number | null): string {
  return seconds === null ? '?' : formatSpan(BigInt(seconds) * 1_000_000_000n);
}

/**
 * The screen, one entry a line (no trailing newline):
 *
 *     master    127.0.0.1:5050 (master-1, 1.11.0) leading since 2026-11-23T09:00:00.000Z; standbys: none
 *     agents    3 active, 0 deactivated, 1 draining, 0 drained, 0 disconnected, 0 unreachable, 0 gone; 1 under DISK PRESSURE
 *               agent-2: DISK PRESSURE (NO_SPACE: no space left on device in …) since … (12s ago)
 *     machines  4 UP, 1 DRAINING, 0 DOWN
 *
 *     drains
 *     AGENT     HOSTNAME  STATE     AGE  TASKS  WAITING FOR
 *     …-S2      agent-3   DRAINING  12s  1      task web-8e58ed still running after SIGTERM (…)
 *
 *     maintenance plans (1 COMPLETE not shown)
 *     PLAN    STATUS    STEPS                              WAITING
 *     kernel  STARTING  1/3 COMPLETE, 1 PENDING, 1 STARTING  agent-3: waiting for …
 *
 * then the scheduler's plans when asked, and a `!` line for each part that could not be asked.
 * Texts from the network are made safe for a terminal (oneLine). Pure.
 */
export function renderStatus(s: ClusterStatus, paint: Paint): string[] {
  const lines: string[] = [];
  if (s.master === null) lines.push('master    ?');
  else {
    const since = s.master.elected_time === null ? '' : ` leading since ${s.master.elected_time}`;
    const standbys = s.master.standbys.length === 0 ? 'none' : s.master.standbys.map(oneLine).join(', ');
    lines.push(`master    ${paint(oneLine(s.master.leader), 'green')} (${oneLine(s.master.hostname)}, ${oneLine(s.master.version)})${since}; standbys: ${standbys}`);
  }
  const pressure = s.disk_pressure.length === 0 ? '' : `; ${paint(`${s.disk_pressure.length} under DISK PRESSURE`, 'red')}`;
  lines.push(`agents    ${AGENT_STATES.map((k) => figure(s.agents[k], k, AGENT_COLOUR[k], paint)).join(', ')}${pressure}`);
  for (const p of s.disk_pressure) lines.push(`          ${oneLine(p.hostname)}: ${p.line}`);
  lines.push(`machines  ${(['UP', 'DRAINING', 'DOWN'] as const).map((m) => figure(s.machines[m], m, m === 'UP' ? undefined : MODE_COLOUR[m], paint)).join(', ')}`);
  lines.push('');
  if (s.drains.length === 0) lines.push('drains: none');
  else {
    const rows = s.drains.map((d) => [d.agent_id, oneLine(d.hostname), d.state, age(d.age_seconds), d.remaining_tasks === null ? '?' : String(d.remaining_tasks), d.waiting_for[0] ?? (d.state === 'DRAINED' ? '-' : '')]);
    const table = renderTable(['AGENT', 'HOSTNAME', 'STATE', 'AGE', 'TASKS', 'WAITING FOR'], rows).trimEnd().split('\n');
    lines.push('drains', ...table.map((line, i) => (i === 0 ? line : paintFirst(line, rows[i - 1]?.[2] ?? '', (t) => paint(t, t === 'DRAINED' ? 'green' : 'yellow')))));
    // Further reasons of a drain, under it, so the table stays one row per drain.
    for (const d of s.drains) for (const w of d.waiting_for.slice(1)) lines.push(`  ${oneLine(d.hostname)}: also waiting for ${w}`);
  }
  lines.push('');
  lines.push(...planSection('maintenance plans', s.maintenance_plans, paint));
  if (s.scheduler_plans !== undefined) {
    lines.push('');
    lines.push(...planSection(`service plans at ${oneLine(s.scheduler_plans.scheduler)}`, s.scheduler_plans, paint));
  }
  if (s.errors.length > 0) {
    lines.push('');
    for (const e of s.errors) lines.push(`${paint('!', 'red')} could not ask ${oneLine(e)}`);
  }
  return lines;
}

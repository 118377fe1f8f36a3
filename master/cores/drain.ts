/**
 * Agent draining, the pure core: when a DRAINING agent becomes DRAINED (or gone), which
 * operator calls are refused and why, and the drain record that says what a drain is waiting
 * for. Functions of plain data (an agent's phase, its drain and its tasks as the master sees
 * them); the shell (services/drain.ts) feeds them and carries out what they decide.
 */

import { drainGraceNs, type DrainConfig, type DrainState } from '../../shared/drain.js';
import type { ErrorCode } from '../../shared/errors.js';
import { DEFAULT_GRACE_PERIOD_NS, isTerminal, type Task } from '../../shared/mesos.js';
import type { AgentDrain, AgentPhase } from './agents.js';

export type { AgentDrain };

/** The message of the ShutdownMessage a gone agent gets, now and at every later registration (Mesos). */
export const AGENT_GONE_MESSAGE = 'Agent has been marked gone';

/** What the drain decisions read about an agent. */
export interface DrainView {
  phase: AgentPhase;
  connected: boolean;
  drain: AgentDrain | undefined;
  /** The master's tasks of the agent: non-terminal ones, and terminal ones until their update is acknowledged. */
  tasks: readonly Task[];
  /** A MARK_AGENT_GONE (or a mark_gone drain) is being written. */
  markingGone: boolean;
}

/** What to do after a trigger (`Master::checkAndTransitionDrainingAgent`). */
export type DrainStep = 'NONE' | 'MARK_DRAINED' | 'MARK_GONE';

/** A task keeps the drain waiting while it runs, or while its terminal update is unacknowledged. */
export function holdsDrain(t: Task): boolean {
  return !isTerminal(t.state) || t.status_update_uuid !== undefined;
}

/**
 * DRAINING -> DRAINED exactly when the master's view of the registered agent has no
 * non-terminal task and no terminal update still unacknowledged (Drydock has no offer
 * operations, so none can be pending). With mark_gone the agent is marked gone instead.
 * A recovered or unreachable agent is never judged: the master does not know its tasks.
 */
export function nextDrainState(agent: DrainView): DrainStep {
  const d = agent.drain;
  if (d === undefined || d.state !== 'DRAINING' || agent.markingGone || agent.phase !== 'REGISTERED') return 'NONE';
  for (const t of agent.tasks) if (holdsDrain(t)) return 'NONE';
  return d.config.markGone ? 'MARK_GONE' : 'MARK_DRAINED';
}

/** One thing a drain waits for. */
export interface WaitingFor {
  kind: 'AGENT_DISCONNECTED' | 'AGENT_UNREACHABLE' | 'AGENT_RECOVERING' | 'MARKING_GONE' | 'TASK_LAUNCHING' | 'TASK_RUNNING' | 'UPDATE_UNACKNOWLEDGED';
  task_id?: string;
  framework_id?: string;
  message: string;
  /** TASK_RUNNING once told to stop: when SIGTERM went out as the master tells it, so a reader can count on from it. */
  sigterm_time?: { nanoseconds: bigint };
  /** TASK_RUNNING once told to stop: the task's effective grace period under this drain. */
  grace_period?: { nanoseconds: number };
}

function secs(ms: number): string {
  return `${Math.max(0, Math.floor(ms / 1000))} s`;
}

function graceText(ns: number): string {
  const s = ns / 1e9;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
}

/** When the task got SIGTERM as far as the master can tell: its TASK_KILLING, else when DRAIN went out. */
function sigtermMs(t: Task, sentMs: number): number {
  // The latest TASK_KILLING, walked backwards in place (GET_AGENTS renders this for every task).
  let at: number | undefined;
  for (let i = t.statuses.length - 1; i >= 0; i--) {
    const s = t.statuses[i];
    if (s?.state === 'TASK_KILLING') {
      at = s.timestamp * 1000;
      break;
    }
  }
  return at !== undefined && at >= sentMs ? at : sentMs;
}

/**
 * What a drain waits for, from the master's view: the agent coming back, each task still
 * running (with how long since SIGTERM against its effective grace), each terminal update
 * its framework has not acknowledged. Empty once DRAINED.
 */
export function waitingFor(agent: DrainView, nowMs: number): WaitingFor[] {
  const d = agent.drain;
  if (d === undefined || d.state === 'DRAINED') return [];
  const out: WaitingFor[] = [];
  if (agent.markingGone) out.push({ kind: 'MARKING_GONE', message: 'agent is being marked gone' });
  if (agent.phase === 'RECOVERED') {
    out.push({ kind: 'AGENT_RECOVERING', message: 'agent has not re-registered since the master restarted: drain will be applied when it re-registers' });
    return out;
  }
  if (agent.phase === 'UNREACHABLE') {
    out.push({ kind: 'AGENT_UNREACHABLE', message: 'agent unreachable: drain will be applied when it re-registers' });
    return out;
  }
  if (!agent.connected) out.push({ kind: 'AGENT_DISCONNECTED', message: 'agent disconnected: drain will be applied when it re-registers' });
  const maxNs = d.config.maxGracePeriodNs === undefined ? undefined : Number(d.config.maxGracePeriodNs);
  for (const t of agent.tasks) {
    const ids = { task_id: t.task_id.value, framework_id: t.framework_id.value };
    if (!isTerminal(t.state)) {
      if (t.state === 'TASK_STAGING') {
        out.push({ kind: 'TASK_LAUNCHING', ...ids, message: `task ${ids.task_id} is still being launched` });
        continue;
      }
      const graceNs = drainGraceNs(t.kill_policy?.grace_period?.nanoseconds ?? DEFAULT_GRACE_PERIOD_NS, maxNs) ?? DEFAULT_GRACE_PERIOD_NS;
      if (d.sentMs === undefined || !agent.connected) {
        out.push({ kind: 'TASK_RUNNING', ...ids, message: `task ${ids.task_id} still ${t.state === 'TASK_KILLING' ? 'being killed' : 'running'}; not yet told to stop` });
        continue;
      }
      const sigterm = sigtermMs(t, d.sentMs);
      const elapsed = nowMs - sigterm;
      const message =
        elapsed <= graceNs / 1e6
          ? `task ${ids.task_id} still running after SIGTERM (${secs(elapsed)} of ${graceText(graceNs)} grace)`
          : `task ${ids.task_id} still running ${secs(elapsed)} after SIGTERM; its ${graceText(graceNs)} grace is over (SIGKILL due)`;
      // The times behind the message: the console counts on from them every second.
      out.push({ kind: 'TASK_RUNNING', ...ids, message, sigterm_time: { nanoseconds: BigInt(Math.round(sigterm)) * 1_000_000n }, grace_period: { nanoseconds: graceNs } });
    } else if (t.status_update_uuid !== undefined) {
      const state = t.status_update_state ?? t.state;
      out.push({ kind: 'UPDATE_UNACKNOWLEDGED', ...ids, message: `update ${state} of task ${ids.task_id} not yet acknowledged by framework ${ids.framework_id}` });
    }
  }
  return out;
}

/** Tasks still on the agent as far as the drain is concerned. */
export function remainingTasks(tasks: readonly Task[]): number {
  let n = 0;
  for (const t of tasks) if (holdsDrain(t)) n++;
  return n;
}

/** DrainConfig as GET_AGENTS writes it: max_grace_period only when given, mark_gone always. */
export function drainConfigJson(c: DrainConfig): Record<string, unknown> {
  const j: Record<string, unknown> = {};
  if (c.maxGracePeriodNs !== undefined) j['max_grace_period'] = { nanoseconds: c.maxGracePeriodNs };
  j['mark_gone'] = c.markGone;
  return j;
}

/** Mesos `drain_info`. */
export function drainInfoJson(d: AgentDrain): Record<string, unknown> {
  return { state: d.state, config: drainConfigJson(d.config) };
}

/** Drydock's drain record (beyond Mesos; an agent's `drain` in GET /drydock/v1/agents): the drain nobody has to guess about. */
export function drainRecordJson(agent: DrainView & { drain: AgentDrain }, nowMs: number): Record<string, unknown> {
  const d = agent.drain;
  const j: Record<string, unknown> = {
    state: d.state,
    started_time: { nanoseconds: d.startedNs },
    config: drainConfigJson(d.config),
    remaining_tasks: d.state === 'DRAINED' ? 0 : remainingTasks(agent.tasks),
    waiting_for: waitingFor(agent, nowMs),
  };
  if (d.drainedNs !== undefined) j['drained_time'] = { nanoseconds: d.drainedNs };
  // The agent could not decode its DRAIN: nothing was killed because of it, and it is not sent
  // again until the drain changes (a new DRAIN_AGENT) or the agent comes back with another version.
  if (d.refused !== undefined) j['refused'] = { reason: d.refused.reason, time: { nanoseconds: d.refused.atNs } };
  return j;
}

/** Mesos' estimated_drain_start_time: now, truncated to whole seconds. */
export function truncateToSecondsNs(ns: bigint): bigint {
  return (ns / 1_000_000_000n) * 1_000_000_000n;
}

// ---- Call decisions ----------------------------------------------------------------------------

/** What the call checks read about the named agent. */
export interface CallTarget {
  /** undefined: the master does not know it (or it is gone, for DRAIN / DEACTIVATE). */
  phase: AgentPhase | undefined;
  gone: boolean;
  markingGone: boolean;
  capabilities: readonly string[];
  deactivated: boolean;
  drainState: DrainState | undefined;
  /** The machine (`host (ip)`) of a maintenance schedule this agent is part of, if any. */
  scheduledMachine: string | undefined;
}

export type CallRefusal = { code: ErrorCode; args: string[] };

/** DRAIN_AGENT's refusals, in Mesos' order; undefined: accepted. */
export function refuseDrain(agentId: string, t: CallTarget): CallRefusal | undefined {
  if (t.gone || t.phase === undefined) return { code: 'AGENT_UNKNOWN', args: [] };
  if (t.phase === 'REGISTERED') {
    if (t.scheduledMachine !== undefined) return { code: 'AGENT_IN_MAINTENANCE_SCHEDULE', args: [agentId, t.scheduledMachine] };
    if (!t.capabilities.includes('AGENT_DRAINING')) return { code: 'AGENT_NOT_CAPABLE_OF_DRAINING', args: [agentId] };
  }
  if (t.markingGone) return { code: 'AGENT_BEING_MARKED_GONE', args: [] };
  return undefined;
}

/** DEACTIVATE_AGENT's refusals. */
export function refuseDeactivate(t: CallTarget): CallRefusal | undefined {
  if (t.gone || t.phase === undefined) return { code: 'AGENT_UNKNOWN', args: [] };
  return undefined;
}

/** REACTIVATE_AGENT's refusals (409 for an unregistered agent comes after the state is cleared). */
export function refuseReactivate(t: CallTarget): CallRefusal | undefined {
  if (!t.deactivated) return { code: 'AGENT_NOT_DEACTIVATED', args: [] };
  if (t.drainState === 'DRAINING') return { code: 'AGENT_STILL_DRAINING', args: [] };
  return undefined;
}

/** MARK_AGENT_GONE: 'DONE' when already gone (idempotent 200), a refusal, or 'MARK'. */
export function planMarkGone(agentId: string, t: CallTarget): 'DONE' | 'MARK' | CallRefusal {
  if (t.gone) return 'DONE';
  if (t.markingGone) return { code: 'AGENT_ALREADY_TRANSITIONING', args: [agentId, 'gone'] };
  if (t.phase === undefined) return { code: 'AGENT_NOT_FOUND', args: [agentId] };
  return 'MARK';
}

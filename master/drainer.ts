/**
 * Agent draining and deactivation, the shell around drain.ts: DRAIN_AGENT, DEACTIVATE_AGENT,
 * REACTIVATE_AGENT and MARK_AGENT_GONE (reference §1, §4.1–4.5). Every change is durable in
 * the registry before it is applied in memory, before the agent is told, and before the
 * operator gets 200. The DRAINING -> DRAINED check runs on Mesos' triggers: the call itself,
 * every acknowledgement, every status update and every (re-)registration of the agent.
 */

import type { Clock } from '../shared/clock.js';
import { drainConfigWire, type DrainConfig } from '../shared/drain.js';
import { nowNs } from '../shared/duration.js';
import { fail, type DrydockError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import type { AgentEntry } from './agents.js';
import {
  nextDrainState,
  planMarkGone,
  refuseDeactivate,
  refuseDrain,
  refuseReactivate,
  truncateToSecondsNs,
  type CallRefusal,
  type CallTarget,
  type DrainView,
} from './drain.js';
import type { Master } from './master.js';
import type { Registry } from './registry/registry.js';

/** The message of the ShutdownMessage a gone agent gets, now and at every later registration (Mesos). */
export const AGENT_GONE_MESSAGE = 'Agent has been marked gone';

/** A call's outcome: undefined on success (200, empty body), else the error to answer. */
export type DrainCallResult = DrydockError | undefined;

export interface DrainerOptions {
  master: Master;
  registry: Registry;
  clock: Clock;
  log: Logger;
}

export class Drainer {
  readonly #master: Master;
  readonly #registry: Registry;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** Agents whose MarkAgentGone write is in flight (409 / 503 for calls meanwhile). */
  readonly #markingGone = new Set<string>();
  /** Agents whose MarkAgentDrained write is in flight: one at a time. */
  readonly #checking = new Set<string>();
  /**
   * The machine (`host (ip)`) of the maintenance schedule an agent is part of, or undefined.
   * DRAIN_AGENT refuses such agents (Mesos §4.8). The master wires it to its maintenance state.
   */
  scheduledMachine: (agentId: string) => string | undefined = () => undefined;

  constructor(o: DrainerOptions) {
    this.#master = o.master;
    this.#registry = o.registry;
    this.#clock = o.clock;
    this.#log = o.log;
  }

  /** Is a mark-gone of this agent in flight? */
  isMarkingGone(agentId: string): boolean {
    return this.#markingGone.has(agentId);
  }

  /** The view drain.ts decides from. */
  view(e: AgentEntry): DrainView {
    return { phase: e.phase, connected: e.connected, drain: e.drain, tasks: [...(e.tasks?.values() ?? [])], markingGone: this.#markingGone.has(e.id) };
  }

  #target(agentId: string): CallTarget {
    const e = this.#master.table.get(agentId);
    return {
      phase: e?.phase,
      gone: this.#master.table.isGone(agentId),
      markingGone: this.#markingGone.has(agentId),
      capabilities: e?.capabilities ?? [],
      deactivated: e?.deactivated ?? false,
      drainState: e?.drain?.state,
      scheduledMachine: e === undefined ? undefined : this.scheduledMachine(agentId),
    };
  }

  // ---- Calls ---------------------------------------------------------------------------------

  /** DRAIN_AGENT. */
  async drain(agentId: string, config: DrainConfig): Promise<DrainCallResult> {
    const refused = refuseDrain(agentId, this.#target(agentId));
    if (refused !== undefined) return refusal(refused);
    const startedNs = nowNs(this.#clock.now());
    try {
      await this.#registry.drainAgent(agentId, config, startedNs);
    } catch (e) {
      return this.#writeFailed(agentId, 'DRAIN_AGENT', e);
    }
    const e = this.#master.table.get(agentId);
    // Removed while the write committed: its row went with it.
    if (e === undefined) return undefined;
    const registered = e.phase === 'REGISTERED';
    e.deactivated = true;
    e.drain = {
      state: 'DRAINING',
      config,
      startedNs,
      estimatedStartNs: registered ? truncateToSecondsNs(startedNs) : undefined,
      drainedNs: undefined,
      sentMs: undefined,
    };
    this.#log.info('agent draining', { agentId, maxGracePeriodNs: config.maxGracePeriodNs, markGone: config.markGone, phase: e.phase, connected: e.connected });
    if (registered) {
      this.#master.schedulers.agentDeactivated(agentId);
      this.#sendDrain(e);
      await this.check(agentId);
    }
    return undefined;
  }

  /** DEACTIVATE_AGENT: idempotent; works on draining agents too. */
  async deactivate(agentId: string): Promise<DrainCallResult> {
    const refused = refuseDeactivate(this.#target(agentId));
    if (refused !== undefined) return refusal(refused);
    try {
      await this.#registry.deactivateAgent(agentId);
    } catch (e) {
      return this.#writeFailed(agentId, 'DEACTIVATE_AGENT', e);
    }
    const e = this.#master.table.get(agentId);
    if (e === undefined) return undefined;
    e.deactivated = true;
    this.#log.info('agent deactivated', { agentId });
    if (e.phase === 'REGISTERED') this.#master.schedulers.agentDeactivated(agentId);
    return undefined;
  }

  /** REACTIVATE_AGENT: clears deactivation and drain, durably then in memory. */
  async reactivate(agentId: string): Promise<DrainCallResult> {
    const refused = refuseReactivate(this.#target(agentId));
    if (refused !== undefined) return refusal(refused);
    try {
      await this.#registry.reactivateAgent(agentId);
    } catch (e) {
      return this.#writeFailed(agentId, 'REACTIVATE_AGENT', e);
    }
    const e = this.#master.table.get(agentId);
    if (e !== undefined) {
      e.deactivated = false;
      e.drain = undefined;
    }
    this.#log.info('agent reactivated', { agentId });
    // Mesos: the state is cleared, but an agent not registered now cannot be activated.
    if (e?.phase !== 'REGISTERED') return fail('AGENT_REMOVED_DURING_CALL');
    this.#master.schedulers.allocateSoon();
    return undefined;
  }

  /** MARK_AGENT_GONE: idempotent for an agent already gone. */
  async markGoneCall(agentId: string): Promise<DrainCallResult> {
    const plan = planMarkGone(agentId, this.#target(agentId));
    if (plan === 'DONE') return undefined;
    if (plan !== 'MARK') return refusal(plan);
    return this.#markGone(agentId);
  }

  // ---- Triggers --------------------------------------------------------------------------------

  /**
   * Re-runs the DRAINING -> DRAINED check (Mesos `checkAndTransitionDrainingAgent`). Persists
   * MarkAgentDrained before flipping the state in memory; with mark_gone, marks the agent gone.
   */
  async check(agentId: string): Promise<void> {
    const e = this.#master.table.get(agentId);
    if (e === undefined || this.#checking.has(agentId)) return;
    const step = nextDrainState(this.view(e));
    if (step === 'NONE') return;
    if (step === 'MARK_GONE') {
      await this.#markGone(agentId);
      return;
    }
    const drain = e.drain;
    if (drain === undefined) return;
    const timeNs = nowNs(this.#clock.now());
    this.#checking.add(agentId);
    try {
      await this.#registry.markAgentDrained(agentId, timeNs);
    } catch (err) {
      this.#log.error('registry write failed', { agentId, op: 'MARK_AGENT_DRAINED', error: err });
      return;
    } finally {
      this.#checking.delete(agentId);
    }
    // A re-drain or a reactivation while the write committed replaced or cleared this drain.
    if (e.drain !== drain || drain.state !== 'DRAINING') return;
    drain.state = 'DRAINED';
    drain.drainedNs = timeNs;
    this.#log.info('agent drained', { agentId, startedNs: drain.startedNs, drainedNs: timeNs });
  }

  /**
   * The agent (re-)registered: Mesos re-sends the drain whatever its state (the agent starts
   * its grace periods when it gets it) and re-checks. Deactivation holds through the entry.
   */
  agentRegistered(agentId: string): void {
    const e = this.#master.table.get(agentId);
    if (e === undefined) return;
    if (e.drain !== undefined) this.#sendDrain(e);
    void this.check(agentId);
  }

  // ---- Internals -------------------------------------------------------------------------------

  #sendDrain(e: AgentEntry): void {
    if (e.drain === undefined) return;
    if (this.#master.sendToAgent(e.id, { type: 'DRAIN', config: drainConfigWire(e.drain.config) })) e.drain.sentMs = this.#clock.now();
    else e.drain.sentMs = undefined;
  }

  /** Persists MarkAgentGone, then ends the agent's tasks for their frameworks, shuts it down and refuses it from now on. */
  async #markGone(agentId: string): Promise<DrainCallResult> {
    if (this.#markingGone.has(agentId)) return fail('AGENT_ALREADY_TRANSITIONING', agentId, 'gone');
    this.#markingGone.add(agentId);
    try {
      await this.#registry.markAgentGone(agentId, nowNs(this.#clock.now()));
    } catch (e) {
      return this.#writeFailed(agentId, 'MARK_AGENT_GONE', e);
    } finally {
      this.#markingGone.delete(agentId);
    }
    this.#master.agentGone(agentId, AGENT_GONE_MESSAGE);
    this.#log.info('agent marked gone', { agentId });
    return undefined;
  }

  #writeFailed(agentId: string, op: string, e: unknown): DrydockError {
    this.#log.error('registry write failed', { agentId, op, error: e });
    return fail('REGISTRY_WRITE_FAILED', e instanceof Error ? e.message : String(e));
  }
}

function refusal(r: CallRefusal): DrydockError {
  return (fail as (code: CallRefusal['code'], ...args: string[]) => DrydockError)(r.code, ...r.args);
}

/** A MachineID as Mesos prints it in the drain refusal: `host (ip)`, `host` or `(ip)`. */
export function machineText(id: { hostname?: string; ip?: string }): string {
  if (id.hostname !== undefined && id.ip !== undefined) return `${id.hostname} (${id.ip})`;
  if (id.hostname !== undefined) return id.hostname;
  return `(${id.ip ?? ''})`;
}

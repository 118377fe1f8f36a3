/**
 * Agent draining and deactivation, the shell around cores/drain.ts: DRAIN_AGENT, DEACTIVATE_AGENT,
 * REACTIVATE_AGENT and MARK_AGENT_GONE (reference §1, §4.1–4.5). Every change goes through
 * the commit path (term/commit.ts): durable in the registry before it is applied in memory, before
 * the agent is told, and before the operator gets 200; the calls share the serial queue with
 * maintenance commands. The DRAINING -> DRAINED check runs on Mesos' triggers, heard on the
 * bus: the call itself, every acknowledgement, every status update and every
 * (re-)registration of the agent. Changes are announced as AGENT_UPDATED.
 */

import type { Clock } from '../../shared/clock.js';
import { drainConfigWire, type DrainConfig } from '../../shared/drain.js';
import { nowNs } from '../../shared/duration.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { CLOSE_CODES, messageDigest, type MasterMessage, type Refusal } from '../../shared/protocol.js';
import type { AgentEntry } from '../cores/agents.js';
import {
  AGENT_GONE_MESSAGE,
  nextDrainState,
  planMarkGone,
  refuseDeactivate,
  refuseDrain,
  refuseReactivate,
  truncateToSecondsNs,
  type CallRefusal,
  type CallTarget,
  type DrainView,
} from '../cores/drain.js';
import type { MasterEvent } from '../term/events.js';
import { machineText } from '../../shared/machine.js';
import type { AgentLink, ServiceModel, ServicePorts } from '../term/ports.js';

/** A call's outcome: undefined on success (200, empty body), else the error to answer. */
export type DrainCallResult = DrydockError | undefined;

/** DRAIN_AGENT refuses an agent whose machine is in the schedule (Mesos §4.8), read from the model's machines. */
export interface DrainServiceOptions extends ServicePorts, ServiceModel {
  link: AgentLink;
}

export class DrainService {
  readonly #o: DrainServiceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** Agents whose MarkAgentGone write is in flight (409 / 503 for calls meanwhile). */
  readonly #markingGone = new Set<string>();
  /** Agents whose MarkAgentDrained write is in flight: one at a time. */
  readonly #checking = new Set<string>();
  constructor(o: DrainServiceOptions) {
    this.#o = o;
    this.#clock = o.clock;
    this.#log = o.log;
  }

  /** Listens for Mesos' DRAINED triggers: (re-)registrations, status updates, acknowledgements. */
  start(): () => void {
    return this.#o.bus.subscribe((e: MasterEvent) => {
      switch (e.type) {
        case 'AGENT_ADDED':
        case 'AGENT_RECONNECTED':
          return this.agentRegistered(e.agentId);
        case 'STATUS_UPDATE':
        case 'TASK_ACKNOWLEDGED':
          return void this.check(e.agentId);
        case 'AGENT_REFUSED_MESSAGE':
          return e.refused.type === 'DRAIN' ? this.#drainRefused(e.agentId, e.refused) : undefined;
        default:
          return undefined;
      }
    });
  }

  /** Is a mark-gone of this agent in flight? */
  isMarkingGone(agentId: string): boolean {
    return this.#markingGone.has(agentId);
  }

  /** The view the drain core (cores/drain.ts) decides from. */
  view(e: AgentEntry): DrainView {
    return { phase: e.phase, connected: e.connected, drain: e.drain, tasks: [...(e.tasks?.values() ?? [])], markingGone: this.#markingGone.has(e.id) };
  }

  #target(agentId: string): CallTarget {
    const e = this.#o.agents.get(agentId);
    const m = this.#o.maintenance.machineOfAgent(agentId);
    return {
      phase: e?.phase,
      gone: this.#o.agents.isGone(agentId),
      markingGone: this.#markingGone.has(agentId),
      capabilities: e?.capabilities ?? [],
      deactivated: e?.deactivated ?? false,
      drainState: e?.drain?.state,
      scheduledMachine: e === undefined || m?.unavailability === undefined ? undefined : machineText(m.id),
    };
  }

  // ---- Calls ---------------------------------------------------------------------------------

  /** DRAIN_AGENT, in the serial queue of drain and maintenance commands. */
  drain(agentId: string, config: DrainConfig): Promise<DrainCallResult> {
    return this.#drain(agentId, config, false);
  }

  /**
   * DRAIN_AGENT by the master itself (a maintenance plan): the same call, except that an agent of
   * a scheduled machine may be drained. Mesos refuses that to operators so that a drain and a
   * maintenance window do not fight; a plan drains exactly the machines it scheduled.
   */
  drainScheduled(items: readonly { agentId: string; config: DrainConfig }[]): Promise<DrainCallResult[]> {
    // One command for all: validated one by one, written together (one group commit), each
    // applied and announced as its write completes.
    return this.#o.commits.serial(() => Promise.all(items.map((i) => this.#drainNow(i.agentId, i.config, true))));
  }

  #drain(agentId: string, config: DrainConfig, scheduledOk: boolean): Promise<DrainCallResult> {
    return this.#o.commits.serial(() => this.#drainNow(agentId, config, scheduledOk));
  }

  /** The drain itself; only inside the serial queue. */
  async #drainNow(agentId: string, config: DrainConfig, scheduledOk: boolean): Promise<DrainCallResult> {
    const target = this.#target(agentId);
    const refused = refuseDrain(agentId, scheduledOk ? { ...target, scheduledMachine: undefined } : target);
    if (refused !== undefined) return refusal(refused);
    const startedNs = nowNs(this.#clock.now());
    const r = await this.#o.commits.write('DRAIN_AGENT', { agentId }, (reg) => reg.drainAgent(agentId, config, startedNs), () => {
      const e = this.#o.agents.get(agentId);
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
      return e;
    });
    if (!r.ok) return r.error;
    const e = r.value;
    if (e === undefined) return undefined;
    // The agent hears first: its tasks' SIGTERM must not wait for the listeners (an operator
    // stream renders the whole agent, every task's drain record included) or the log line.
    if (e.phase === 'REGISTERED') this.#sendDrain(e);
    this.#log.info('agent draining', { agentId, maxGracePeriodNs: config.maxGracePeriodNs, markGone: config.markGone, phase: e.phase, connected: e.connected });
    this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change: 'DRAINING' });
    if (e.phase === 'REGISTERED') await this.check(agentId);
    return undefined;
  }

  /** DEACTIVATE_AGENT: idempotent; works on draining agents too. */
  deactivate(agentId: string): Promise<DrainCallResult> {
    return this.#o.commits.serial(async () => {
      const refused = refuseDeactivate(this.#target(agentId));
      if (refused !== undefined) return refusal(refused);
      const r = await this.#o.commits.write('DEACTIVATE_AGENT', { agentId }, (reg) => reg.deactivateAgent(agentId), () => {
        const e = this.#o.agents.get(agentId);
        if (e !== undefined) e.deactivated = true;
        return e;
      });
      if (!r.ok) return r.error;
      if (r.value === undefined) return undefined;
      this.#log.info('agent deactivated', { agentId });
      this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change: 'DEACTIVATED' });
      return undefined;
    });
  }

  /** REACTIVATE_AGENT: clears deactivation and drain, durably then in memory. */
  reactivate(agentId: string): Promise<DrainCallResult> {
    return this.#o.commits.serial(async () => {
      const refused = refuseReactivate(this.#target(agentId));
      if (refused !== undefined) return refusal(refused);
      const r = await this.#o.commits.write('REACTIVATE_AGENT', { agentId }, (reg) => reg.reactivateAgent(agentId), () => {
        const e = this.#o.agents.get(agentId);
        if (e !== undefined) {
          e.deactivated = false;
          e.drain = undefined;
        }
        return e;
      });
      if (!r.ok) return r.error;
      this.#log.info('agent reactivated', { agentId });
      if (r.value !== undefined) this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change: 'REACTIVATED' });
      // Mesos: the state is cleared, but an agent not registered now cannot be activated.
      if (r.value?.phase !== 'REGISTERED') return fail('AGENT_REMOVED_DURING_CALL');
      return undefined;
    });
  }

  /** MARK_AGENT_GONE: idempotent for an agent already gone. */
  markGoneCall(agentId: string): Promise<DrainCallResult> {
    return this.#o.commits.serial(async () => {
      const plan = planMarkGone(agentId, this.#target(agentId));
      if (plan === 'DONE') return undefined;
      if (plan !== 'MARK') return refusal(plan);
      return this.#markGone(agentId);
    });
  }

  // ---- Triggers --------------------------------------------------------------------------------

  /**
   * Re-runs the DRAINING -> DRAINED check (Mesos `checkAndTransitionDrainingAgent`). Persists
   * MarkAgentDrained before flipping the state in memory; with mark_gone, marks the agent gone.
   */
  async check(agentId: string): Promise<void> {
    const e = this.#o.agents.get(agentId);
    // Every status update and acknowledgement of every agent comes here: only a draining agent is worth a view.
    if (e === undefined || e.drain?.state !== 'DRAINING' || this.#checking.has(agentId)) return;
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
    const r = await this.#o.commits.write('MARK_AGENT_DRAINED', { agentId }, (reg) => reg.markAgentDrained(agentId, timeNs), () => {
      // A re-drain or a reactivation while the write committed replaced or cleared this drain.
      if (e.drain !== drain || drain.state !== 'DRAINING') return false;
      drain.state = 'DRAINED';
      drain.drainedNs = timeNs;
      return true;
    });
    this.#checking.delete(agentId);
    if (!r.ok || !r.value) return;
    this.#log.info('agent drained', { agentId, startedNs: drain.startedNs, drainedNs: timeNs });
    this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change: 'DRAINED' });
  }

  /**
   * The agent (re-)registered: Mesos re-sends the drain whatever its state (the agent starts
   * its grace periods when it gets it) and re-checks. Deactivation holds through the entry.
   * Not a drain the agent refused, though, unless the agent changed version since: the same
   * message would be refused again at every registration.
   */
  agentRegistered(agentId: string): void {
    const e = this.#o.agents.get(agentId);
    if (e === undefined) return;
    const d = e.drain;
    if (d !== undefined) {
      const r = d.refused;
      if (r !== undefined && r.agentVersion === e.version && r.digest === messageDigest(drainMessage(d.config))) {
        this.#log.debug('drain not re-sent: the agent refused it', { agentId, reason: r.reason });
      } else {
        d.refused = undefined;
        this.#sendDrain(e);
      }
    }
    void this.check(agentId);
  }

  /**
   * The agent refused a DRAIN (it could not decode it, did nothing and kept its session). When
   * it is this drain's message, the drain record says so, and the tasks were not told to stop;
   * a refusal of an earlier drain's message (a new DRAIN_AGENT went out meanwhile) is only logged.
   */
  #drainRefused(agentId: string, refused: Refusal): void {
    const e = this.#o.agents.get(agentId);
    const d = e?.drain;
    if (e === undefined || d === undefined || refused.digest !== messageDigest(drainMessage(d.config))) {
      this.#log.info('agent refused an earlier drain message', { agentId, digest: refused.digest });
      return;
    }
    d.refused = { reason: refused.reason, atNs: nowNs(this.#clock.now()), digest: refused.digest, agentVersion: e.version };
    d.sentMs = undefined;
    this.#log.error('agent refused its drain', { agentId, reason: refused.reason, version: e.version });
    this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change: 'DRAIN_REFUSED' });
  }

  // ---- Internals -------------------------------------------------------------------------------

  #sendDrain(e: AgentEntry): void {
    if (e.drain === undefined) return;
    if (this.#o.link.send(e.id, drainMessage(e.drain.config), true)) e.drain.sentMs = this.#clock.now();
    else e.drain.sentMs = undefined;
  }

  /**
   * Persists MarkAgentGone, then the agent is told SHUTDOWN, leaves the table (its id refused
   * from now on) and AGENT_GONE carries its tasks to their frameworks. Mesos sends no
   * AGENT_REMOVED for this. The write keeps its machine's attributes when the machine is
   * scheduled, as a removal's does: a machine scheduled before its agent registered has none in
   * the registry, and after a restart nothing else would say them (ACLs name machines by them).
   */
  async #markGone(agentId: string): Promise<DrainCallResult> {
    if (this.#markingGone.has(agentId)) return fail('AGENT_ALREADY_TRANSITIONING', agentId, 'gone');
    this.#markingGone.add(agentId);
    const machine = this.#o.maintenance.scheduledMachineOfAgent(agentId);
    const r = await this.#o.commits.write('MARK_AGENT_GONE', { agentId }, (reg) => reg.markAgentGone(agentId, nowNs(this.#clock.now()), machine), () => {
      const tasks = [...(this.#o.agents.get(agentId)?.tasks?.values() ?? [])];
      this.#o.link.send(agentId, { type: 'SHUTDOWN', message: AGENT_GONE_MESSAGE });
      this.#o.link.close(agentId, CLOSE_CODES.SHUTDOWN, AGENT_GONE_MESSAGE);
      this.#o.maintenance.agentRemoved(agentId);
      this.#o.agents.markGone(agentId);
      return tasks;
    });
    this.#markingGone.delete(agentId);
    if (!r.ok) return r.error;
    this.#log.info('agent marked gone', { agentId });
    this.#o.bus.emit({ type: 'AGENT_GONE', agentId, tasks: r.value });
    return undefined;
  }
}

/** The DRAIN a drain's config is sent as (and whose digest a refusal is matched against). */
export function drainMessage(config: DrainConfig): MasterMessage {
  return { type: 'DRAIN', config: drainConfigWire(config) };
}

function refusal(r: CallRefusal): DrydockError {
  return (fail as (code: CallRefusal['code'], ...args: string[]) => DrydockError)(r.code, ...r.args);
}


/**
 * The master's side of the scheduler API: framework event streams, offers, launches, kills,
 * acknowledgements, reconciliation, failover and removal. The shell around the pure cores
 * (frameworks.ts, allocator.ts, offers.ts): it owns the streams and timers, makes the
 * registry writes, and sends agents their commands through the Master.
 */

import { fail as errorOf, type DrydockError } from '../shared/errors.js';
import type { Clock, TimerHandle } from '../shared/clock.js';
import { nowNs } from '../shared/duration.js';
import type { Logger } from '../shared/log.js';
import { hasCapability, isTerminal, taskKey, type FrameworkInfo, type KillPolicy, type Resource, type Task, type TaskInfo, type TaskState, type TaskStatus, type TaskStatusReason } from '../shared/mesos.js';
import { addResources, subtractResources } from '../shared/resources.js';
import { generateInverseOffers, generateOffers, inverseOfferKey, type AllocatorAgent, type AllocatorFramework, type MaintenanceAgent } from './allocator.js';
import { unavailabilityJson } from './maintenance.js';
import type { AgentEntry } from './agents.js';
import { FrameworkTable, type FrameworkEntry } from './frameworks.js';
import type { Master } from './master.js';
import { clampKillPolicy, offerJson, planAccept, type Offer } from './offers.js';
import type { DurableFramework, Registry } from './registry/registry.js';
import type { Filters, InverseOfferAnswer, SchedulerCall, SchedulerCallBody } from './scheduler-api.js';

/** Mesos' constant heartbeat interval for scheduler streams. */
export const HEARTBEAT_INTERVAL_SECONDS = 15;

/** Default refuse_seconds of DECLINE / ACCEPT filters (Mesos Filters.refuse_seconds). */
export const DEFAULT_REFUSE_SECONDS = 5;

/** One open SUBSCRIBE answer; scheduler-api.ts implements it over an HTTP response. */
export interface FrameworkStream {
  readonly id: string;
  send(event: unknown): void;
  /** Ends the response. */
  close(): void;
  /** Called once when the stream ends, either side. */
  onClose(fn: () => void): void;
}

/** A call's outcome: accepted (202, or 200 where Mesos answers 200), or refused with an error. */
export type CallResult = { ok: true; status?: 200 } | { ok: false; error: DrydockError };

interface OpenStream {
  frameworkId: string;
  stream: FrameworkStream;
  heartbeat: TimerHandle | undefined;
}

export class Schedulers {
  readonly frameworks = new FrameworkTable();
  readonly #master: Master;
  readonly #registry: Registry;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #allocationIntervalMs: number;
  readonly #streams = new Map<string, OpenStream>();
  readonly #offers = new Map<string, Offer>();
  /** Outstanding inverse offers (same id space as offers; resources always empty: the whole agent). */
  readonly #inverseOffers = new Map<string, Offer>();
  /** Inverse-offer refuse filters: framework id -> agent id -> until (ms). Separate from offer filters, as in Mesos. */
  readonly #inverseFilters = new Map<string, Map<string, number>>();
  readonly #deadlines = new Map<string, TimerHandle>();
  /** agent id -> kills to send when it re-registers (task STAGING on a disconnected agent). */
  readonly #pendingKills = new Map<string, Array<{ frameworkId: string; taskId: string; killPolicy: KillPolicy | undefined }>>();
  /** Tasks the master declared terminal itself (TASK_LOST on disconnect): their agent's later updates are acknowledged here, not forwarded. */
  readonly #tombstones = new Set<string>();
  #nextFramework = 0;
  #nextOffer = 0;
  #allocationTimer: TimerHandle | undefined;
  #allocationSoon = false;
  /** How long the last allocation took (ms): event-driven allocations are spaced by twice that. */
  #lastAllocationMs = 0;
  #lastAllocationAt = 0;
  #running = false;

  constructor(master: Master, registry: Registry, clock: Clock, log: Logger, allocationIntervalMs: number) {
    this.#master = master;
    this.#registry = registry;
    this.#clock = clock;
    this.#log = log;
    this.#allocationIntervalMs = allocationIntervalMs;
  }

  /** Loads the registry's frameworks as RECOVERED; their failover timeout counts from now (the master's start). */
  recover(frameworks: readonly DurableFramework[]): void {
    this.frameworks.recover(frameworks, this.#clock.now());
  }

  start(): void {
    this.#running = true;
    for (const f of this.frameworks.all()) this.#armDeadline(f);
    this.#scheduleAllocation();
  }

  stop(): void {
    this.#running = false;
    this.#allocationTimer?.cancel();
    for (const t of this.#deadlines.values()) t.cancel();
    for (const s of [...this.#streams.values()]) {
      s.heartbeat?.cancel();
      s.stream.close();
    }
  }

  // ---- Views (operator API) ------------------------------------------------------------------

  offersOfFramework(frameworkId: string): Offer[] {
    return [...this.#offers.values()].filter((o) => o.frameworkId === frameworkId);
  }

  offeredOnAgent(agentId: string): Resource[] {
    let sum: Resource[] = [];
    for (const o of this.#offers.values()) if (o.agentId === agentId) sum = addResources(sum, o.resources);
    return sum;
  }

  /** Non-terminal tasks' resources of a framework, over every agent. */
  allocatedToFramework(frameworkId: string): Resource[] {
    let sum: Resource[] = [];
    for (const e of this.#master.table.all()) for (const t of e.tasks?.values() ?? []) if (t.framework_id.value === frameworkId && !isTerminal(t.state)) sum = addResources(sum, t.resources);
    return sum;
  }

  offerJson(o: Offer): Record<string, unknown> {
    const a = this.#master.table.get(o.agentId);
    const fw = this.frameworks.get(o.frameworkId);
    const j = offerJson(o, { hostname: a?.info.hostname ?? '', ip: a?.info.ip ?? '', port: a?.info.port ?? 0, attributes: a?.info.attributes ?? [] }, fw !== undefined && hasCapability(fw.info, 'MULTI_ROLE'));
    // Mesos §4.6: every offer of an agent on a DRAINING machine carries the machine's unavailability.
    const u = this.#master.maintenance.unavailabilityOfAgent(o.agentId);
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    return j;
  }

  inverseOffersOfFramework(frameworkId: string): Offer[] {
    return [...this.#inverseOffers.values()].filter((o) => o.frameworkId === frameworkId);
  }

  /** An InverseOffer as Mesos writes it: `{id, url, framework_id, agent_id, unavailability, resources: []}`. */
  inverseOfferJson(o: Offer): Record<string, unknown> {
    const a = this.#master.table.get(o.agentId);
    const hostname = a?.info.hostname ?? '';
    const j: Record<string, unknown> = {
      id: { value: o.id },
      url: { scheme: 'http', address: { hostname, ip: a?.info.ip ?? '', port: a?.info.port ?? 0 }, path: '/slave(1)' },
      framework_id: { value: o.frameworkId },
      agent_id: { value: o.agentId },
    };
    const u = this.#master.maintenance.machineOfAgent(o.agentId)?.unavailability;
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    j['resources'] = [];
    return j;
  }

  // ---- SUBSCRIBE -----------------------------------------------------------------------------

  /** Subscribes (or fails over) a framework; `open` starts the 200 stream once the framework is durable. */
  async subscribe(info: FrameworkInfo, open: () => FrameworkStream): Promise<void> {
    const plan = this.frameworks.planSubscribe(info, nowNs(this.#clock.now()), () => `${this.#master.id}-${String(this.#nextFramework++).padStart(4, '0')}`);
    if (plan.kind === 'REMOVED') {
      const s = open();
      s.send({ type: 'ERROR', error: { message: 'Framework has been removed' } });
      s.close();
      return;
    }
    if (plan.durable !== undefined) await this.#registry.addFramework(plan.durable);
    if (!this.#running) return open().close();
    const stream = open();
    // Another SUBSCRIBE for the same id may have committed meanwhile: it is the older stream now.
    const previous = this.frameworks.get(plan.frameworkId)?.streamId;
    const entry = this.frameworks.applySubscribe(plan, info, stream.id, nowNs(this.#clock.now()));
    this.#deadlines.get(entry.id)?.cancel();
    this.#deadlines.delete(entry.id);
    if (previous !== undefined) {
      const old = this.#streams.get(previous);
      if (old !== undefined) {
        old.stream.send({ type: 'ERROR', error: { message: 'Framework failed over' } });
        this.#closeStream(previous);
      }
      // Offers made to the old stream are void: the new one gets fresh offers.
      this.#rescindOffers((o) => o.frameworkId === entry.id, false);
    }
    const open_: OpenStream = { frameworkId: entry.id, stream, heartbeat: undefined };
    this.#streams.set(stream.id, open_);
    stream.onClose(() => this.#streamClosed(stream.id));
    stream.send({
      type: 'SUBSCRIBED',
      subscribed: { framework_id: { value: entry.id }, heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS, master_info: this.#master.masterInfo() },
    });
    // Mesos' heartbeater sends one at once, then every interval.
    stream.send({ type: 'HEARTBEAT' });
    this.#heartbeat(open_);
    this.#log.info(plan.kind === 'NEW' ? 'framework subscribed' : 'framework resubscribed', { frameworkId: entry.id, name: entry.info.name, kind: plan.kind });
    this.#master.events.emit({ type: plan.kind === 'NEW' ? 'FRAMEWORK_ADDED' : 'FRAMEWORK_UPDATED', frameworkId: entry.id });
    this.allocateSoon();
  }

  #heartbeat(s: OpenStream): void {
    s.heartbeat = this.#clock.setTimer(HEARTBEAT_INTERVAL_SECONDS * 1000, () => {
      if (!this.#streams.has(s.stream.id)) return;
      s.stream.send({ type: 'HEARTBEAT' });
      this.#heartbeat(s);
    });
  }

  #closeStream(streamId: string): void {
    const s = this.#streams.get(streamId);
    if (s === undefined) return;
    this.#streams.delete(streamId);
    s.heartbeat?.cancel();
    s.stream.close();
  }

  #streamClosed(streamId: string): void {
    const s = this.#streams.get(streamId);
    if (s !== undefined) {
      this.#streams.delete(streamId);
      s.heartbeat?.cancel();
    }
    const fid = s?.frameworkId;
    if (fid === undefined || !this.#running) return;
    if (!this.frameworks.disconnect(fid, streamId, this.#clock.now(), nowNs(this.#clock.now()))) return;
    this.#log.info('framework disconnected', { frameworkId: fid });
    this.#rescindOffers((o) => o.frameworkId === fid, false);
    this.#master.events.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: fid });
    const entry = this.frameworks.get(fid);
    if (entry !== undefined) this.#armDeadline(entry);
    this.allocateSoon();
  }

  #armDeadline(entry: FrameworkEntry): void {
    const deadline = this.frameworks.deadlineMs(entry);
    if (deadline === undefined) return;
    this.#deadlines.get(entry.id)?.cancel();
    this.#deadlines.set(
      entry.id,
      this.#clock.setTimer(deadline - this.#clock.now(), () => {
        this.#deadlines.delete(entry.id);
        if (!this.#running) return;
        if (this.frameworks.expired(this.#clock.now()).includes(entry.id)) {
          this.#log.warn('framework failover timeout', { frameworkId: entry.id });
          this.#removeFramework(entry.id);
        }
      }),
    );
  }

  /** Removes a framework for good: kills its tasks, forgets its offers, writes it out of the registry. */
  #removeFramework(frameworkId: string): void {
    const entry = this.frameworks.get(frameworkId);
    if (entry === undefined) return;
    if (entry.streamId !== undefined) this.#closeStream(entry.streamId);
    this.#rescindOffers((o) => o.frameworkId === frameworkId, false);
    this.frameworks.remove(frameworkId, nowNs(this.#clock.now()));
    this.#deadlines.get(frameworkId)?.cancel();
    this.#deadlines.delete(frameworkId);
    for (const agent of this.#master.table.all()) {
      for (const t of [...(agent.tasks?.values() ?? [])]) {
        if (t.framework_id.value !== frameworkId) continue;
        // Nobody will acknowledge for a removed framework: the master does, so tasks reach completed.
        if (t.status_update_uuid !== undefined) this.#master.acknowledge(agent.id, frameworkId, t.task_id.value, t.status_update_uuid);
        if (!isTerminal(t.state)) this.#kill(agent, frameworkId, t.task_id.value, undefined);
      }
    }
    this.#registry.removeFramework(frameworkId).catch((e: unknown) => this.#log.error('registry write failed', { frameworkId, op: 'REMOVE_FRAMEWORK', error: e }));
    this.#log.info('framework removed', { frameworkId });
    this.#master.events.emit({ type: 'FRAMEWORK_REMOVED', frameworkId });
  }

  // ---- Other calls ---------------------------------------------------------------------------

  /** Checks the framework and stream of a non-SUBSCRIBE call, then runs it. */
  call(call: SchedulerCall, streamId: string | undefined): CallResult | Promise<CallResult> {
    const fid = call.frameworkId as string;
    const entry = this.frameworks.get(fid);
    if (entry === undefined) return fail('FRAMEWORK_NOT_FOUND', fid);
    if (entry.phase !== 'CONNECTED' || entry.streamId === undefined) return fail('FRAMEWORK_NOT_SUBSCRIBED');
    if (streamId === undefined || streamId === '') return fail('STREAM_ID_MISSING');
    if (streamId !== entry.streamId) {
      if (!this.#streams.has(streamId)) return fail('STREAM_NOT_FOUND', streamId);
      return fail('STREAM_ID_MISMATCH', streamId, fid);
    }
    const b = call.body;
    switch (call.type) {
      case 'ACCEPT':
        this.#accept(entry, b.accept ?? {});
        return { ok: true };
      case 'DECLINE': {
        const d = b.decline ?? {};
        const refuse = refuseMs(d.filters);
        for (const id of (d.offer_ids ?? []).map((o) => o.value)) {
          const o = this.#offers.get(id);
          if (o === undefined || o.frameworkId !== fid) continue;
          this.#offers.delete(id);
          this.frameworks.filter(fid, o.agentId, this.#clock.now() + refuse, this.#clock.now());
        }
        this.allocateSoon();
        return { ok: true };
      }
      case 'ACCEPT_INVERSE_OFFERS':
      case 'DECLINE_INVERSE_OFFERS': {
        const answer = call.type === 'ACCEPT_INVERSE_OFFERS' ? 'ACCEPT' : 'DECLINE';
        this.#answerInverseOffers(fid, answer, (answer === 'ACCEPT' ? b.accept_inverse_offers : b.decline_inverse_offers) ?? {});
        return { ok: true };
      }
      case 'REVIVE':
        this.frameworks.revive(fid);
        this.allocateSoon();
        return { ok: true };
      case 'SUPPRESS':
        // As Mesos: no new offers; those already out stay valid until used, declined or rescinded.
        this.frameworks.suppress(fid);
        return { ok: true };
      case 'KILL': {
        const k = b.kill as NonNullable<SchedulerCallBody['kill']>;
        this.#killCall(entry, k.task_id.value, k.agent_id?.value, k.kill_policy === undefined ? undefined : clampKillPolicy(k.kill_policy));
        return { ok: true };
      }
      case 'ACKNOWLEDGE': {
        const a = b.acknowledge as NonNullable<SchedulerCallBody['acknowledge']>;
        const r = this.#master.acknowledge(a.agent_id.value, fid, a.task_id.value, a.uuid);
        if (!r.ok) this.#log.debug('acknowledgement dropped', { frameworkId: fid, reason: r.reason });
        if (r.ok) this.allocateSoon();
        return { ok: true };
      }
      case 'RECONCILE':
        this.#reconcile(entry, b.reconcile ?? {});
        return { ok: true };
      case 'TEARDOWN':
        this.#removeFramework(fid);
        return { ok: true };
      case 'UPDATE_FRAMEWORK':
        return this.#updateFramework(entry, (b.update_framework as NonNullable<SchedulerCallBody['update_framework']>).framework_info);
      case 'SHUTDOWN': {
        // A command task's executor has the task's id (Mesos' command executor): shutting it down kills the task.
        const sd = b.shutdown as NonNullable<SchedulerCallBody['shutdown']>;
        this.#killCall(entry, sd.executor_id.value, sd.agent_id.value, undefined);
        return { ok: true };
      }
      case 'MESSAGE':
        // Command tasks have no executor that reads framework messages (Mesos' command executor drops them too).
        this.#log.debug('framework message dropped: command tasks have no executor', { frameworkId: fid, agentId: b.message?.agent_id.value });
        return { ok: true };
      case 'REQUEST':
      case 'ACKNOWLEDGE_OPERATION_STATUS':
      case 'RECONCILE_OPERATIONS':
        // Mesos' allocator ignores resource requests; Drydock has no offer operations that send operation feedback.
        return { ok: true };
      default:
        return fail('SCHEDULER_CALL_UNSUPPORTED', call.type);
    }
  }

  /**
   * UPDATE_FRAMEWORK (Mesos 1.9+): a new FrameworkInfo for a subscribed framework, without a
   * re-subscription. As Mesos, the id must stay and user, principal and checkpoint cannot
   * change. Durable first, then applied; answered 200.
   */
  async #updateFramework(entry: FrameworkEntry, info: FrameworkInfo): Promise<CallResult> {
    if (info.id?.value !== entry.id) return fail('SCHEDULER_CALL_INVALID', "'update_framework.framework_info.id' differs from 'framework_id'");
    for (const field of ['user', 'principal', 'checkpoint'] as const) {
      if (info[field] !== entry.info[field]) return fail('FRAMEWORK_UPDATE_UNSUPPORTED', field);
    }
    try {
      await this.#registry.addFramework({ id: entry.id, info, registeredTimeNs: entry.registeredTimeNs });
    } catch (e) {
      return fail('REGISTRY_WRITE_FAILED', e instanceof Error ? e.message : String(e));
    }
    entry.info = info;
    this.#log.info('framework updated', { frameworkId: entry.id });
    this.#master.events.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: entry.id });
    this.allocateSoon();
    return { ok: true, status: 200 };
  }

  /**
   * ACCEPT_INVERSE_OFFERS / DECLINE_INVERSE_OFFERS (Mesos allocator `updateInverseOffer`): the
   * answer is recorded on the agent's machine, the inverse offer is no longer outstanding, and
   * a refuse filter is installed (default 5 s; 0 = none, so the next allocation re-offers).
   * Unknown or stale ids are ignored, as in Mesos.
   */
  #answerInverseOffers(frameworkId: string, answer: 'ACCEPT' | 'DECLINE', body: InverseOfferAnswer): void {
    const ids = (body.inverse_offer_ids ?? []).map((o) => o.value);
    const refuse = refuseMs(body.filters);
    const now = this.#clock.now();
    for (const id of ids) {
      const o = this.#inverseOffers.get(id);
      if (o === undefined || o.frameworkId !== frameworkId) {
        this.#log.debug('inverse offer answer ignored', { frameworkId, inverseOfferId: id });
        continue;
      }
      this.#inverseOffers.delete(id);
      this.#master.maintenance.recordAnswer(o.agentId, { status: answer, frameworkId, timestampNs: nowNs(now) });
      if (refuse > 0) {
        let f = this.#inverseFilters.get(frameworkId);
        if (f === undefined) this.#inverseFilters.set(frameworkId, (f = new Map()));
        f.set(o.agentId, now + refuse);
      }
    }
    this.allocateSoon();
  }

  #accept(entry: FrameworkEntry, accept: NonNullable<SchedulerCallBody['accept']>): void {
    const offerIds = (accept.offer_ids ?? []).map((o) => o.value);
    const taskInfos: TaskInfo[] = [];
    const groupTaskIds: string[] = [];
    for (const op of accept.operations ?? []) {
      if (op.type === 'LAUNCH') taskInfos.push(...(op.launch?.task_infos ?? []));
      else if (op.type === 'LAUNCH_GROUP') groupTaskIds.push(...taskGroupIds(op.launch_group));
      else this.#log.warn('unsupported offer operation ignored', { frameworkId: entry.id, type: op.type });
    }
    // Task groups need the default executor; Drydock runs command tasks. Each task hears why, none waits forever.
    for (const taskId of groupTaskIds) this.#sendMasterUpdate(entry.id, undefined, taskId, 'TASK_ERROR', 'REASON_TASK_GROUP_INVALID', 'Drydock runs command tasks only: LAUNCH_GROUP is not supported', false);
    const live = new Set<string>();
    for (const a of this.#master.table.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) live.add(t.task_id.value);
    const plan = planAccept({ frameworkId: entry.id, offerIds, offers: this.#offers, taskInfos, liveTaskIds: live });
    if (plan.kind === 'INVALID_OFFERS') {
      for (const id of plan.validOfferIds) this.#offers.delete(id);
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
      // These tasks never reached the table: only the framework hears of them (never `apply`, a duplicate id must not end the live task).
      for (const taskId of plan.taskIds) this.#sendMasterUpdate(entry.id, undefined, taskId, state, 'REASON_INVALID_OFFERS', plan.message, false);
      this.allocateSoon();
      return;
    }
    for (const id of plan.offerIds) this.#offers.delete(id);
    for (const r of plan.rejected) this.#sendMasterUpdate(entry.id, plan.agentId, r.taskId, 'TASK_ERROR', 'REASON_TASK_INVALID', r.message, false);
    for (const task of plan.launches) {
      const r = this.#master.runTask(plan.agentId, entry.id, entry.info, task);
      if (!r.ok) {
        const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
        this.#sendMasterUpdate(entry.id, plan.agentId, task.task_id.value, state, 'REASON_AGENT_DISCONNECTED', 'Agent is not connected', false);
      }
    }
    const refuse = refuseMs(accept.filters);
    if (plan.unused.length > 0) this.frameworks.filter(entry.id, plan.agentId, this.#clock.now() + refuse, this.#clock.now());
    this.allocateSoon();
  }

  #findTask(frameworkId: string, taskId: string, agentHint: string | undefined): { agent: AgentEntry; task: Task } | undefined {
    const key = taskKey(frameworkId, taskId);
    if (agentHint !== undefined) {
      const a = this.#master.table.get(agentHint);
      const t = a?.tasks?.get(key);
      if (a !== undefined && t !== undefined) return { agent: a, task: t };
    }
    for (const a of this.#master.table.all()) {
      const t = a.tasks?.get(key);
      if (t !== undefined) return { agent: a, task: t };
    }
    return undefined;
  }

  #killCall(entry: FrameworkEntry, taskId: string, agentHint: string | undefined, killPolicy: KillPolicy | undefined): void {
    const found = this.#findTask(entry.id, taskId, agentHint);
    if (found === undefined) {
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_UNKNOWN' : 'TASK_LOST';
      this.#sendMasterUpdate(entry.id, agentHint, taskId, state, 'REASON_RECONCILIATION', 'Reconciliation: Task is unknown', false);
      return;
    }
    this.#kill(found.agent, entry.id, taskId, killPolicy);
  }

  /** Sends KILL_TASK, or keeps it for when the agent re-registers. */
  #kill(agent: AgentEntry, frameworkId: string, taskId: string, killPolicy: KillPolicy | undefined): void {
    const r = this.#master.killTask(agent.id, frameworkId, taskId, killPolicy);
    if (r.ok) return;
    const list = this.#pendingKills.get(agent.id) ?? [];
    list.push({ frameworkId, taskId, killPolicy });
    this.#pendingKills.set(agent.id, list);
  }

  #reconcile(entry: FrameworkEntry, reconcile: NonNullable<SchedulerCallBody['reconcile']>): void {
    const pa = hasCapability(entry.info, 'PARTITION_AWARE');
    const asked = reconcile.tasks ?? [];
    const latest = (agent: AgentEntry, t: Task): void => {
      const unreachable = agent.phase === 'UNREACHABLE' && !isTerminal(t.state);
      const state: TaskState = unreachable ? (pa ? 'TASK_UNREACHABLE' : 'TASK_LOST') : t.state;
      const message = unreachable ? 'Reconciliation: Task is unreachable' : 'Reconciliation: Latest task state';
      this.#sendMasterUpdate(entry.id, agent.id, t.task_id.value, state, 'REASON_RECONCILIATION', message, false);
    };
    if (asked.length === 0) {
      for (const a of this.#master.table.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) latest(a, t);
      return;
    }
    for (const q of asked) {
      const taskId = q.task_id.value;
      const agentId = q.agent_id?.value;
      const found = this.#findTask(entry.id, taskId, agentId);
      if (found !== undefined) {
        latest(found.agent, found.task);
        continue;
      }
      const agent = agentId === undefined ? undefined : this.#master.table.get(agentId);
      // A recovered agent may still report the task: Mesos answers nothing until it is back.
      if (agent?.phase === 'RECOVERED') continue;
      if (agent?.phase === 'UNREACHABLE') this.#sendMasterUpdate(entry.id, agentId, taskId, pa ? 'TASK_UNREACHABLE' : 'TASK_LOST', 'REASON_RECONCILIATION', 'Reconciliation: Task is unreachable', false);
      else this.#sendMasterUpdate(entry.id, agentId, taskId, pa ? 'TASK_UNKNOWN' : 'TASK_LOST', 'REASON_RECONCILIATION', 'Reconciliation: Task is unknown', false);
    }
  }

  // ---- Master-generated updates --------------------------------------------------------------

  /**
   * Sends an UPDATE the master made up (no uuid, nothing to acknowledge). When `apply` and the
   * state is terminal, the master's record of the task ends here too (it moves to completed).
   */
  #sendMasterUpdate(frameworkId: string, agentId: string | undefined, taskId: string, state: TaskState, reason: TaskStatusReason, message: string, apply = true, unreachableTimeNs?: bigint): TaskStatus {
    const status: TaskStatus = { task_id: { value: taskId }, state, source: 'SOURCE_MASTER', reason, message, timestamp: this.#clock.now() / 1000 };
    if (agentId !== undefined) status.agent_id = { value: agentId };
    // Partition-aware frameworks read when the agent became unreachable (TaskStatus.unreachable_time).
    if (unreachableTimeNs !== undefined) status.unreachable_time = { nanoseconds: unreachableTimeNs };
    if (apply && agentId !== undefined && isTerminal(state) && this.#master.table.completeTask(agentId, frameworkId, taskId, status)) {
      this.#master.events.emit({ type: 'TASK_UPDATED', agentId, frameworkId, taskId, status, state });
    }
    this.#sendEvent(frameworkId, { type: 'UPDATE', update: { status } });
    return status;
  }

  #sendEvent(frameworkId: string, event: unknown): void {
    const streamId = this.frameworks.get(frameworkId)?.streamId;
    if (streamId !== undefined) this.#streams.get(streamId)?.stream.send(event);
  }

  // ---- Hooks from the master -------------------------------------------------------------------

  /**
   * An agent's STATUS_UPDATE, before the table records it. Returns false when the master
   * consumes it itself (a task it already declared lost): acknowledged to the agent, not forwarded.
   */
  beforeStatusUpdate(agentId: string, frameworkId: string, status: TaskStatus): boolean {
    if (!this.#tombstones.has(`${agentId}\u0000${taskKey(frameworkId, status.task_id.value)}`)) return true;
    if (status.uuid !== undefined) this.#master.acknowledgeOnAgent(agentId, frameworkId, status.task_id.value, status.uuid);
    return false;
  }

  /** An agent's STATUS_UPDATE, recorded in the table: forward it (at least once), or acknowledge it for a removed framework. */
  statusUpdate(agentId: string, frameworkId: string, status: TaskStatus): void {
    const stamped: TaskStatus = status.agent_id === undefined ? { ...status, agent_id: { value: agentId } } : status;
    if (this.frameworks.isRemoved(frameworkId)) {
      if (status.uuid !== undefined) this.#master.acknowledge(agentId, frameworkId, status.task_id.value, status.uuid);
    } else {
      // Not subscribed: dropped; the agent resends until acknowledged.
      this.#sendEvent(frameworkId, { type: 'UPDATE', update: { status: stamped } });
    }
    if (isTerminal(status.state)) this.allocateSoon();
  }

  /** An agent registered or re-registered. `before` is its task map before the agent's report replaced it. */
  agentRegistered(agentId: string, before: ReadonlyMap<string, Task> | undefined, frameworks: readonly FrameworkInfo[]): void {
    for (const info of frameworks) {
      const added = this.frameworks.addRecovered(info, undefined, this.#master.startTimeMs);
      if (added !== undefined) {
        this.#log.info('framework recovered from an agent', { frameworkId: added.id, agentId });
        this.#registry.addFramework({ id: added.id, info: added.info, registeredTimeNs: undefined }).catch((e: unknown) => this.#log.error('registry write failed', { op: 'ADD_FRAMEWORK', error: e }));
        this.#armDeadline(added);
        this.#master.events.emit({ type: 'FRAMEWORK_ADDED', frameworkId: added.id });
      }
    }
    const agent = this.#master.table.get(agentId);
    if (agent === undefined) return;
    // Tasks the master had already declared lost come back only to be killed.
    for (const [key, t] of [...(agent.tasks ?? [])]) {
      const tomb = `${agentId}\u0000${key}`;
      if (!this.#tombstones.has(tomb)) continue;
      this.#master.table.forgetTask(agentId, t.framework_id.value, t.task_id.value);
      if (!isTerminal(t.state)) this.#master.killTask(agentId, t.framework_id.value, t.task_id.value);
      else if (t.status_update_uuid !== undefined) this.#master.acknowledgeOnAgent(agentId, t.framework_id.value, t.task_id.value, t.status_update_uuid);
    }
    // Known tasks the agent no longer has (it restarted and lost them) are lost.
    for (const [key, t] of before ?? []) {
      if (agent.tasks?.has(key) === true || isTerminal(t.state) || t.state === 'TASK_STAGING') continue;
      if (this.#tombstones.has(`${agentId}\u0000${key}`)) continue;
      const status: TaskStatus = { task_id: t.task_id, state: 'TASK_LOST', source: 'SOURCE_MASTER', reason: 'REASON_AGENT_RESTARTED', message: 'Agent restarted without this task', agent_id: { value: agentId }, timestamp: this.#clock.now() / 1000 };
      this.#master.table.completeDetached(t, status);
      this.#master.events.emit({ type: 'TASK_UPDATED', agentId, frameworkId: t.framework_id.value, taskId: t.task_id.value, status, state: 'TASK_LOST' });
      this.#sendEvent(t.framework_id.value, { type: 'UPDATE', update: { status } });
    }
    // Tasks of removed frameworks are killed; kills that waited for the agent go out now.
    for (const t of [...(agent.tasks?.values() ?? [])]) {
      if (this.frameworks.isRemoved(t.framework_id.value) && !isTerminal(t.state)) this.#master.killTask(agentId, t.framework_id.value, t.task_id.value);
    }
    for (const k of this.#pendingKills.get(agentId) ?? []) this.#master.killTask(agentId, k.frameworkId, k.taskId, k.killPolicy);
    this.#pendingKills.delete(agentId);
    this.allocateSoon();
  }

  /** The agent's session dropped: its offers are rescinded; tasks of frameworks that do not checkpoint are lost (Mesos §4.4). */
  agentDisconnected(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    const agent = this.#master.table.get(agentId);
    for (const t of [...(agent?.tasks?.values() ?? [])]) {
      const fid = t.framework_id.value;
      const fw = this.frameworks.get(fid);
      if (fw?.info.checkpoint === true || isTerminal(t.state)) continue;
      this.#tombstones.add(`${agentId}\u0000${taskKey(fid, t.task_id.value)}`);
      this.#sendMasterUpdate(fid, agentId, t.task_id.value, 'TASK_LOST', 'REASON_AGENT_DISCONNECTED', 'Agent disconnected');
    }
  }

  /** The agent became unreachable: offers rescinded, tasks TASK_UNREACHABLE (partition-aware) or TASK_LOST. */
  agentUnreachable(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    const agent = this.#master.table.get(agentId);
    for (const t of agent?.tasks?.values() ?? []) {
      if (isTerminal(t.state)) continue;
      const fw = this.frameworks.get(t.framework_id.value);
      const pa = fw !== undefined && hasCapability(fw.info, 'PARTITION_AWARE');
      // The task stays known (GET_TASKS unreachable_tasks) and comes back with the agent.
      const state: TaskState = pa ? 'TASK_UNREACHABLE' : 'TASK_LOST';
      const status = this.#sendMasterUpdate(t.framework_id.value, agentId, t.task_id.value, state, 'REASON_AGENT_REMOVED', 'Agent is unreachable', false, agent?.unreachableTimeNs);
      // Operator subscribers hear it too, as from Mesos' `__removeSlave`.
      this.#master.events.emit({ type: 'TASK_UPDATED', agentId, frameworkId: t.framework_id.value, taskId: t.task_id.value, status, state });
    }
  }

  /** The agent was removed: offers rescinded, every subscribed framework hears FAILURE. */
  agentRemoved(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    for (const s of this.#streams.values()) s.stream.send({ type: 'FAILURE', failure: { agent_id: { value: agentId } } });
  }

  /** DEACTIVATE_AGENT / DRAIN_AGENT: every outstanding offer and inverse offer of the agent is rescinded; its tasks are untouched. */
  agentDeactivated(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
  }

  /**
   * The agent was marked gone (Mesos MARK_AGENT_GONE): offers rescinded; each task still known
   * ends here: TASK_GONE_BY_OPERATOR (REASON_AGENT_REMOVED_BY_OPERATOR) for partition-aware
   * frameworks, TASK_LOST (REASON_AGENT_REMOVED) for the others. Terminal tasks whose update
   * was never acknowledged move to completed: the agent will not resend it.
   */
  agentGone(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    const agent = this.#master.table.get(agentId);
    for (const t of [...(agent?.tasks?.values() ?? [])]) {
      const fid = t.framework_id.value;
      if (isTerminal(t.state)) {
        this.#master.table.completeTask(agentId, fid, t.task_id.value, t.statuses.at(-1) ?? { task_id: t.task_id, state: t.state, source: 'SOURCE_MASTER', timestamp: this.#clock.now() / 1000 });
        continue;
      }
      const fw = this.frameworks.get(fid);
      const pa = fw !== undefined && hasCapability(fw.info, 'PARTITION_AWARE');
      this.#sendMasterUpdate(fid, agentId, t.task_id.value, pa ? 'TASK_GONE_BY_OPERATOR' : 'TASK_LOST', pa ? 'REASON_AGENT_REMOVED_BY_OPERATOR' : 'REASON_AGENT_REMOVED', 'Agent has been marked gone');
    }
    this.allocateSoon();
  }

  #rescindOffers(pred: (o: Offer) => boolean, tell: boolean): void {
    for (const o of [...this.#offers.values()]) {
      if (!pred(o)) continue;
      this.#offers.delete(o.id);
      if (tell) this.#sendEvent(o.frameworkId, { type: 'RESCIND', rescind: { offer_id: { value: o.id } } });
    }
    // Inverse offers go wherever the offers of the same framework and agent go.
    for (const o of [...this.#inverseOffers.values()]) {
      if (!pred(o)) continue;
      this.#inverseOffers.delete(o.id);
      if (tell) this.#sendEvent(o.frameworkId, { type: 'RESCIND_INVERSE_OFFER', rescind_inverse_offer: { inverse_offer_id: { value: o.id } } });
    }
  }

  /**
   * The unavailability of these agents' machines was (re)applied or cleared (schedule POST,
   * /machine/up): outstanding offers and inverse offers are rescinded and inverse-offer filters
   * dropped (Mesos `updateUnavailability`), then new offers carry the new unavailability.
   */
  maintenanceChanged(agentIds: readonly string[]): void {
    if (agentIds.length === 0) return;
    const agents = new Set(agentIds);
    this.#rescindOffers((o) => agents.has(o.agentId), true);
    for (const f of this.#inverseFilters.values()) for (const a of agents) f.delete(a);
    this.allocateSoon();
  }

  /** The agent is being removed (machine DOWN): each live task is TASK_LOST from the master, REASON_AGENT_REMOVED, with `message`. */
  agentTasksLost(agentId: string, message: string): void {
    const agent = this.#master.table.get(agentId);
    for (const t of [...(agent?.tasks?.values() ?? [])]) {
      if (isTerminal(t.state)) continue;
      this.#sendMasterUpdate(t.framework_id.value, agentId, t.task_id.value, 'TASK_LOST', 'REASON_AGENT_REMOVED', message);
    }
  }

  // ---- Allocation ------------------------------------------------------------------------------

  /** Runs an allocation soon (batched: many events in one turn make one allocation). */
  allocateSoon(): void {
    if (this.#allocationSoon || !this.#running) return;
    this.#allocationSoon = true;
    // Events come in bursts (10,000 agents registering after a master restart): batch them,
    // and keep allocation to about a third of the CPU by waiting twice as long as the last
    // allocation took, counted from its start.
    const wait = Math.max(0, this.#lastAllocationAt + 3 * this.#lastAllocationMs - performance.now());
    const run = (): void => {
      this.#allocationSoon = false;
      this.#allocate();
    };
    if (wait < 1) setImmediate(run);
    else setTimeout(run, wait).unref();
  }

  #scheduleAllocation(): void {
    this.#allocationTimer = this.#clock.setTimer(this.#allocationIntervalMs, () => {
      if (!this.#running) return;
      this.#allocate();
      this.#scheduleAllocation();
    });
  }

  #allocate(): void {
    if (!this.#running || this.#master.state !== 'SERVING') return;
    const now = this.#clock.now();
    this.frameworks.pruneFilters(now);
    // Nobody to offer to (no framework subscribed): skip the per-agent resource arithmetic.
    if (![...this.frameworks.all()].some((f) => f.phase === 'CONNECTED')) return;
    const started = performance.now();
    try {
      this.#allocateNow(now);
    } finally {
      this.#lastAllocationAt = started;
      this.#lastAllocationMs = performance.now() - started;
    }
  }

  #allocateNow(now: number): void {
    const offered = new Map<string, Resource[]>();
    const held = new Map<string, Resource[]>();
    for (const o of this.#offers.values()) {
      offered.set(o.agentId, addResources(offered.get(o.agentId) ?? [], o.resources));
      held.set(o.frameworkId, addResources(held.get(o.frameworkId) ?? [], o.resources));
    }
    const agents: AllocatorAgent[] = [];
    for (const a of this.#master.table.all()) {
      if (a.phase !== 'REGISTERED') continue;
      const active = a.connected && !a.deactivated;
      let used: Resource[] = [];
      for (const t of a.tasks?.values() ?? []) {
        if (isTerminal(t.state)) continue;
        used = addResources(used, t.resources);
        held.set(t.framework_id.value, addResources(held.get(t.framework_id.value) ?? [], t.resources));
      }
      // A deactivated (or draining) agent gets no offers until REACTIVATE_AGENT (Mesos §4.5);
      // what it has free is only worked out for agents that can be offered.
      const available = active ? subtractResources(subtractResources(a.info.resources, used), offered.get(a.id) ?? []) : [];
      agents.push({ id: a.id, active, total: a.info.resources, available });
    }
    const frameworks: AllocatorFramework[] = [];
    const filters = new Map<string, Map<string, number>>();
    for (const f of this.frameworks.all()) {
      frameworks.push({ id: f.id, active: f.phase === 'CONNECTED', suppressed: f.suppressed, allocated: held.get(f.id) ?? [] });
      filters.set(f.id, f.filters);
    }
    const planned = generateOffers({ agents, frameworks, filters, nowMs: now });
    const byFramework = new Map<string, Offer[]>();
    for (const p of planned) {
      const offer: Offer = { id: `${this.#master.id}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: p.resources };
      this.#offers.set(offer.id, offer);
      byFramework.set(p.frameworkId, [...(byFramework.get(p.frameworkId) ?? []), offer]);
    }
    for (const [fid, offers] of byFramework) this.#sendEvent(fid, { type: 'OFFERS', offers: { offers: offers.map((o) => this.offerJson(o)) } });
    this.#allocateInverse(agents, frameworks, now);
  }

  /**
   * Inverse offers for agents on DRAINING machines, in their own INVERSE_OFFERS event (Mesos
   * 1.x scheduler.proto; OFFERS carries only offers since 1.0).
   */
  #allocateInverse(agents: readonly AllocatorAgent[], frameworks: readonly AllocatorFramework[], now: number): void {
    const draining = [...this.#master.maintenance.drainingAgents()];
    if (draining.length === 0) return;
    const active = new Map(agents.map((a) => [a.id, a.active]));
    const holders = new Map<string, Set<string>>();
    for (const d of draining) holders.set(d.agentId, new Set());
    for (const o of this.#offers.values()) holders.get(o.agentId)?.add(o.frameworkId);
    for (const d of draining) {
      const set = holders.get(d.agentId) as Set<string>;
      for (const t of this.#master.table.get(d.agentId)?.tasks?.values() ?? []) if (!isTerminal(t.state)) set.add(t.framework_id.value);
    }
    const outstanding = new Set<string>();
    for (const o of this.#inverseOffers.values()) outstanding.add(inverseOfferKey(o.frameworkId, o.agentId));
    for (const f of this.#inverseFilters.values()) for (const [aid, until] of f) if (until <= now) f.delete(aid);
    const input: MaintenanceAgent[] = draining.map((d) => ({ id: d.agentId, active: active.get(d.agentId) === true, frameworks: holders.get(d.agentId) as Set<string> }));
    const planned = generateInverseOffers({
      agents: input,
      activeFrameworks: new Set(frameworks.filter((f) => f.active).map((f) => f.id)),
      outstanding,
      filters: this.#inverseFilters,
      nowMs: now,
    });
    const byFramework = new Map<string, Offer[]>();
    for (const p of planned) {
      const io: Offer = { id: `${this.#master.id}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: [] };
      this.#inverseOffers.set(io.id, io);
      let list = byFramework.get(p.frameworkId);
      if (list === undefined) byFramework.set(p.frameworkId, (list = []));
      list.push(io);
    }
    for (const [fid, list] of byFramework) this.#sendEvent(fid, { type: 'INVERSE_OFFERS', inverse_offers: { inverse_offers: list.map((o) => this.inverseOfferJson(o)) } });
  }
}

/** A refused call as a value: the error registry's code and message. */
function fail<C extends Parameters<typeof errorOf>[0]>(code: C, ...args: Parameters<typeof errorOf<C>> extends [C, ...infer R] ? R : never): CallResult {
  return { ok: false, error: (errorOf as (c: C, ...a: unknown[]) => DrydockError)(code, ...args) };
}

/** The task ids of a LAUNCH_GROUP operation's `task_group.tasks` (kept as sent: Drydock does not run groups). */
function taskGroupIds(launchGroup: unknown): string[] {
  const tasks = (launchGroup as { task_group?: { tasks?: unknown } } | undefined)?.task_group?.tasks;
  if (!Array.isArray(tasks)) return [];
  return tasks.map((t) => (t as { task_id?: { value?: unknown } } | null)?.task_id?.value).filter((id): id is string => typeof id === 'string' && id !== '');
}

/** Filters.refuse_seconds in ms: default 5 s; negative falls back to the default; capped at 365 days (Mesos). */
export function refuseMs(filters: Filters | undefined): number {
  const v = filters?.refuse_seconds;
  const s = v === undefined ? DEFAULT_REFUSE_SECONDS : v < 0 ? DEFAULT_REFUSE_SECONDS : Math.min(v, 365 * 86_400);
  return s * 1000;
}

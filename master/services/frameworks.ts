/**
 * The frameworks-and-offers service: the master's side of the scheduler API (framework event
 * streams, offers and inverse offers, launches, kills, acknowledgements, reconciliation,
 * failover and removal). The shell around the pure cores (frameworks.ts, allocator.ts,
 * offers.ts, task-fate.ts): it owns the streams and timers, writes the registry first
 * (commit.ts), talks to agents through the AgentLink, and hears of agents and machines on
 * the bus.
 */

import { fail as errorOf, type DrydockError } from '../../shared/errors.js';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { nowNs } from '../../shared/duration.js';
import type { Logger } from '../../shared/log.js';
import { hasCapability, isTerminal, taskKey, type FrameworkInfo, type KillPolicy, type Resource, type Task, type TaskInfo, type TaskState, type TaskStatus, type TaskStatusReason } from '../../shared/mesos.js';
import { addResources, subtractResources, sumResources } from '../../shared/resources.js';
import { generateInverseOffers, generateOffers, inverseOfferKey, type AllocatorAgent, type AllocatorFramework, type MaintenanceAgent } from '../cores/allocator.js';
import { unavailabilityJson } from '../cores/maintenance.js';
import type { AgentEntry } from '../cores/agents.js';
import { callRefusal, frameworkRoles, FrameworkTable, subscribeAs, withOwnPrincipal, type FrameworkCaller, type FrameworkEntry } from '../cores/frameworks.js';
import type { AgentTable } from '../cores/agents.js';
import type { MasterEvent, MasterEvents } from '../term/events.js';
import type { MaintenanceState } from '../cores/maintenance.js';
import type { AgentLink, ServiceModel, ServicePorts } from '../term/ports.js';
import type { CallResult, FrameworkStream } from '../term/commands.js';
import { onDisconnected, onGone, onLaunchRefused, onRegistered, onRemoved, onUnreachable, reconcileAnswer, type Fate, type FateFramework, type MasterUpdate, type ReconcileFinding } from '../cores/task-fate.js';
import { clampKillPolicy, offerJson, planAccept, type Offer } from '../cores/offers.js';
import type { DurableFramework } from '../registry/registry.js';
import type { MasterMessage } from '../../shared/protocol.js';
import type { Filters, InverseOfferAnswer, SchedulerCall, SchedulerCallBody } from '../cores/scheduler-calls.js';
import { Access, MasterSecurity } from '../security/security.js';
import { taskUser, type Approve } from '../../shared/visibility.js';

/** Mesos' constant heartbeat interval for scheduler streams. */
export const HEARTBEAT_INTERVAL_SECONDS = 15;

/** Default refuse_seconds of DECLINE / ACCEPT filters (Mesos Filters.refuse_seconds). */
export const DEFAULT_REFUSE_SECONDS = 5;

/** The caller of a call made without one (unit tests, internal callers): anonymous, on an open master. */
function openAccess(): Access {
  return new Access(MasterSecurity.open(), undefined);
}

/** The caller as frameworks.ts's binding sees it: bound only where the master checks credentials. */
function callerOf(access: Access): FrameworkCaller {
  return { principal: access.principal, authenticates: access.security.authenticator !== undefined };
}

/**
 * register_frameworks for every role the framework subscribes with; the first refused role is
 * the 403. The audit line names all of them.
 */
function mayRegister(access: Access, roles: readonly string[]): DrydockError | undefined {
  for (const role of roles) {
    const refused = access.check('register_frameworks', role);
    if (refused !== undefined) return refused;
  }
  access.note('register_frameworks', roles.map((r) => `'${r}'`).join(', '));
  return undefined;
}

interface OpenStream {
  frameworkId: string;
  stream: FrameworkStream;
  heartbeat: TimerHandle | undefined;
}

/**
 * What the metrics hear from this service (master/metrics.ts implements it): acknowledgement
 * latency and inverse-offer answers. A port, so the service knows nothing of Prometheus.
 */
export interface FrameworkInstruments {
  /** A monotonic clock in milliseconds (the process's Clock.monotonicMs). */
  now(): number;
  /** A scheduler acknowledged an update `ms` after the master first forwarded it. */
  onAcknowledged(ms: number): void;
  /** A framework accepted or declined an outstanding inverse offer. */
  onInverseOfferAnswer(answer: 'ACCEPT' | 'DECLINE'): void;
}

/** Updates whose first forwarding time is kept for the acknowledgement latency; beyond it the oldest are forgotten. */
const MAX_TIMED_UPDATES = 10_000;

export interface FrameworksServiceOptions extends ServicePorts, ServiceModel {
  /** This master's id: framework and offer ids are derived from it. */
  masterId: string;
  /** MasterInfo as SUBSCRIBED writes it. */
  masterInfo: () => Record<string, unknown>;
  /** When this term started (ms): recovered frameworks' failover timeouts count from here. */
  startTimeMs: number;
  allocationIntervalMs: number;
  link: AgentLink;
  instruments?: FrameworkInstruments | undefined;
}

export class FrameworksService {
  readonly frameworks = new FrameworkTable();
  readonly #o: FrameworksServiceOptions;
  readonly #agents: AgentTable;
  readonly #maintenance: MaintenanceState;
  readonly #bus: MasterEvents;
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
  /** framework id -> the SUBSCRIBE for it in progress: one at a time per id, so the binding checked before the write still holds when it is applied. */
  readonly #subscribing = new Map<string, Promise<unknown>>();
  /** update uuid -> when it was first forwarded (instruments' clock), until acknowledged: retries keep the first time. */
  readonly #forwardedAt = new Map<string, number>();
  #nextFramework = 0;
  #nextOffer = 0;
  #allocationTimer: TimerHandle | undefined;
  #allocationSoon = false;
  /** How long the last allocation took (ms): event-driven allocations are spaced by twice that. */
  #lastAllocationMs = 0;
  #lastAllocationAt = 0;
  #running = false;

  constructor(o: FrameworksServiceOptions) {
    this.#o = o;
    this.#agents = o.agents;
    this.#maintenance = o.maintenance;
    this.#bus = o.bus;
    this.#clock = o.clock;
    this.#log = o.log;
    this.#allocationIntervalMs = o.allocationIntervalMs;
  }

  /** Loads the registry's frameworks as RECOVERED; their failover timeout counts from now (the master's start). */
  recover(frameworks: readonly DurableFramework[]): void {
    this.frameworks.recover(frameworks, this.#clock.now());
  }

  /** Arms failover deadlines and the allocation cycle; listens for agents, machines and updates on the bus. */
  start(): () => void {
    this.#running = true;
    for (const f of this.frameworks.all()) this.#armDeadline(f);
    this.#scheduleAllocation();
    return this.#bus.subscribe((e) => this.#onEvent(e));
  }

  #onEvent(e: MasterEvent): void {
    switch (e.type) {
      case 'AGENT_ADDED':
      case 'AGENT_RECONNECTED':
        return this.#agentRegistered(e.agentId, e.tasksBefore ?? [], e.frameworks ?? []);
      case 'AGENT_DISCONNECTED':
        return this.#agentDisconnected(e.agentId);
      case 'AGENT_UNREACHABLE':
        return this.#agentUnreachable(e.agentId);
      case 'AGENT_REMOVED':
        return this.#agentRemoved(e.agentId, e.tasks ?? [], e.lostMessage);
      case 'AGENT_GONE':
        return this.#agentGone(e.agentId, e.tasks);
      case 'AGENT_UPDATED':
        // DEACTIVATE_AGENT / DRAIN_AGENT: every outstanding offer and inverse offer of the agent is rescinded (Mesos §4.5); its tasks are untouched.
        if (e.change === 'DRAINING' || e.change === 'DEACTIVATED') {
          if (this.#agents.get(e.agentId)?.phase === 'REGISTERED') this.#rescindOffers((o) => o.agentId === e.agentId, true);
        } else if (e.change === 'REACTIVATED') this.allocateSoon();
        return undefined;
      case 'MACHINE_UPDATED':
        return e.change === 'DOWN' ? undefined : this.#maintenanceChanged(e.agentIds);
      case 'STATUS_UPDATE':
        return this.#statusUpdate(e.agentId, e.frameworkId, e.status);
      case 'AGENT_REFUSED_MESSAGE':
        // A launch the agent could not read: the task will never run; its framework hears TASK_ERROR.
        if (e.refused.type === 'RUN_TASK' && e.refused.id !== undefined) {
          const tasks = [...(this.#agents.get(e.agentId)?.tasks?.values() ?? [])];
          this.#carryOut(e.agentId, onLaunchRefused(e.agentId, tasks, e.refused.id, e.refused.reason));
          this.allocateSoon();
        }
        return undefined;
      default:
        return undefined;
    }
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
    for (const e of this.#agents.all()) for (const t of e.tasks?.values() ?? []) if (t.framework_id.value === frameworkId && !isTerminal(t.state)) sum = addResources(sum, t.resources);
    return sum;
  }

  offerJson(o: Offer): Record<string, unknown> {
    const a = this.#agents.get(o.agentId);
    const fw = this.frameworks.get(o.frameworkId);
    const j = offerJson(o, { hostname: a?.info.hostname ?? '', ip: a?.info.ip ?? '', port: a?.info.port ?? 0, attributes: a?.info.attributes ?? [] }, fw !== undefined && hasCapability(fw.info, 'MULTI_ROLE'));
    // Mesos §4.6: every offer of an agent on a DRAINING machine carries the machine's unavailability.
    const u = this.#maintenance.unavailabilityOfAgent(o.agentId);
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    return j;
  }

  /** Offers sent and not yet accepted, declined or rescinded. */
  get outstandingOffers(): number {
    return this.#offers.size;
  }

  /** Inverse offers sent and not yet answered or rescinded. */
  get outstandingInverseOffers(): number {
    return this.#inverseOffers.size;
  }

  inverseOffersOfFramework(frameworkId: string): Offer[] {
    return [...this.#inverseOffers.values()].filter((o) => o.frameworkId === frameworkId);
  }

  /** An InverseOffer as Mesos writes it: `{id, url, framework_id, agent_id, unavailability, resources: []}`. */
  inverseOfferJson(o: Offer): Record<string, unknown> {
    const a = this.#agents.get(o.agentId);
    const hostname = a?.info.hostname ?? '';
    const j: Record<string, unknown> = {
      id: { value: o.id },
      url: { scheme: 'http', address: { hostname, ip: a?.info.ip ?? '', port: a?.info.port ?? 0 }, path: '/slave(1)' },
      framework_id: { value: o.frameworkId },
      agent_id: { value: o.agentId },
    };
    const u = this.#maintenance.machineOfAgent(o.agentId)?.unavailability;
    if (u !== undefined) j['unavailability'] = unavailabilityJson(u);
    j['resources'] = [];
    return j;
  }

  // ---- SUBSCRIBE -----------------------------------------------------------------------------

  /**
   * Subscribes (or fails over) a framework; `open` starts the 200 stream once the framework is
   * durable. A failed write opens nothing: the error is the answer. `access` is the caller: a
   * framework id bound to another principal is refused (403) before anything changes, so the
   * real framework's stream stays open; then register_frameworks for its roles.
   */
  subscribe(info: FrameworkInfo, open: () => FrameworkStream, access: Access = openAccess()): Promise<CallResult> {
    const claimed = info.id?.value;
    if (claimed === undefined) return this.#subscribe(info, open, access);
    const run = (this.#subscribing.get(claimed) ?? Promise.resolve()).then(() => this.#subscribe(info, open, access));
    const tail = run.catch(() => undefined);
    this.#subscribing.set(claimed, tail);
    void tail.then(() => {
      if (this.#subscribing.get(claimed) === tail) this.#subscribing.delete(claimed);
    });
    return run;
  }

  async #subscribe(requested: FrameworkInfo, open: () => FrameworkStream, access: Access): Promise<CallResult> {
    const claimed = requested.id?.value;
    // A removed framework stays bound while the master remembers it: a stranger learns nothing of it.
    const known = claimed === undefined ? undefined : (this.frameworks.get(claimed) ?? this.frameworks.completed.find((f) => f.id === claimed));
    const bound = subscribeAs(requested, callerOf(access), known?.info);
    if (!bound.ok) return bound;
    const info = bound.info;
    const refused = mayRegister(access, frameworkRoles(info));
    if (refused !== undefined) return { ok: false, error: refused };
    const plan = this.frameworks.planSubscribe(info, nowNs(this.#clock.now()), () => `${this.#o.masterId}-${String(this.#nextFramework++).padStart(4, '0')}`);
    if (plan.kind === 'REMOVED') {
      const s = open();
      s.send({ type: 'ERROR', error: { message: 'Framework has been removed' } });
      s.close();
      return { ok: true };
    }
    const durable = plan.durable;
    if (durable !== undefined) {
      const w = await this.#o.commits.write('ADD_FRAMEWORK', { frameworkId: plan.frameworkId }, (reg) => reg.addFramework(durable), () => undefined);
      if (!w.ok) return w;
    }
    if (!this.#running) {
      open().close();
      return { ok: true };
    }
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
      subscribed: { framework_id: { value: entry.id }, heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS, master_info: this.#o.masterInfo() },
    });
    // Mesos' heartbeater sends one at once, then every interval.
    stream.send({ type: 'HEARTBEAT' });
    this.#heartbeat(open_);
    this.#log.info(plan.kind === 'NEW' ? 'framework subscribed' : 'framework resubscribed', { frameworkId: entry.id, name: entry.info.name, kind: plan.kind });
    this.#bus.emit({ type: plan.kind === 'NEW' ? 'FRAMEWORK_ADDED' : 'FRAMEWORK_UPDATED', frameworkId: entry.id });
    this.allocateSoon();
    return { ok: true };
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
    this.#bus.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: fid });
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
          void this.#removeFramework(entry.id);
        }
      }),
    );
  }

  /** Removes a framework for good, written first: kills its tasks, forgets its offers. */
  async #removeFramework(frameworkId: string): Promise<CallResult> {
    if (this.frameworks.get(frameworkId) === undefined) return { ok: true };
    const r = await this.#o.commits.write('REMOVE_FRAMEWORK', { frameworkId }, (reg) => reg.removeFramework(frameworkId), () => this.#applyRemoval(frameworkId));
    if (!r.ok) return r;
    if (!r.value) return { ok: true };
    this.#log.info('framework removed', { frameworkId });
    this.#bus.emit({ type: 'FRAMEWORK_REMOVED', frameworkId });
    return { ok: true };
  }

  #applyRemoval(frameworkId: string): boolean {
    const entry = this.frameworks.get(frameworkId);
    if (entry === undefined) return false;
    if (entry.streamId !== undefined) this.#closeStream(entry.streamId);
    this.#rescindOffers((o) => o.frameworkId === frameworkId, false);
    this.frameworks.remove(frameworkId, nowNs(this.#clock.now()));
    this.#deadlines.get(frameworkId)?.cancel();
    this.#deadlines.delete(frameworkId);
    for (const agent of this.#agents.all()) {
      for (const t of [...(agent.tasks?.values() ?? [])]) {
        if (t.framework_id.value !== frameworkId) continue;
        // Nobody will acknowledge for a removed framework: the master does, so tasks reach completed
        // (every update still unacknowledged, oldest first: with pipelined updates there may be several).
        for (const u of [...this.#agents.unacknowledged(t)]) this.acknowledge(agent.id, frameworkId, t.task_id.value, u);
        if (t.status_update_uuid !== undefined) this.acknowledge(agent.id, frameworkId, t.task_id.value, t.status_update_uuid);
        if (!isTerminal(t.state)) this.#kill(agent, frameworkId, t.task_id.value, undefined);
      }
    }
    return true;
  }

  // ---- Other calls ---------------------------------------------------------------------------

  /**
   * Checks the framework and stream of a non-SUBSCRIBE call, then runs it. A framework bound to
   * another principal than the caller's is refused first (403), before its stream is looked at.
   */
  call(call: SchedulerCall, streamId: string | undefined, access: Access = openAccess()): CallResult | Promise<CallResult> {
    const fid = call.frameworkId as string;
    const entry = this.frameworks.get(fid);
    if (entry === undefined) return fail('FRAMEWORK_NOT_FOUND', fid);
    const stranger = callRefusal(fid, entry.info, callerOf(access));
    if (stranger !== undefined) return { ok: false, error: stranger };
    if (entry.phase !== 'CONNECTED' || entry.streamId === undefined) return fail('FRAMEWORK_NOT_SUBSCRIBED');
    if (streamId === undefined || streamId === '') return fail('STREAM_ID_MISSING');
    if (streamId !== entry.streamId) {
      if (!this.#streams.has(streamId)) return fail('STREAM_NOT_FOUND', streamId);
      return fail('STREAM_ID_MISMATCH', streamId, fid);
    }
    const b = call.body;
    switch (call.type) {
      case 'ACCEPT':
        // run_tasks decides on each task's user; without ACLs nothing is asked.
        this.#accept(entry, b.accept ?? {}, access.filters ? access.approver('run_tasks') : undefined);
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
        const r = this.acknowledge(a.agent_id.value, fid, a.task_id.value, a.uuid);
        if (!r.ok) this.#log.debug('acknowledgement dropped', { frameworkId: fid, reason: r.reason });
        // No allocation: an acknowledgement frees nothing (a task's resources came back with its
        // terminal update, which allocates), and an allocation round per acknowledgement was
        // the master's largest own cost when many tasks start at once (profiled: 1,000 tasks).
        return { ok: true };
      }
      case 'RECONCILE':
        this.#reconcile(entry, b.reconcile ?? {});
        return { ok: true };
      case 'TEARDOWN':
        return this.#removeFramework(fid);
      case 'UPDATE_FRAMEWORK':
        return this.#updateFramework(entry, (b.update_framework as NonNullable<SchedulerCallBody['update_framework']>).framework_info, access);
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

  /** The operator's TEARDOWN (authorized by the caller): removes the framework as its own TEARDOWN does. */
  teardown(frameworkId: string): Promise<CallResult> {
    return this.#removeFramework(frameworkId);
  }

  /**
   * UPDATE_FRAMEWORK (Mesos 1.9+): a new FrameworkInfo for a subscribed framework, without a
   * re-subscription. As Mesos, the id must stay and user, principal and checkpoint cannot
   * change. Durable first, then applied; answered 200.
   */
  async #updateFramework(entry: FrameworkEntry, requested: FrameworkInfo, access: Access): Promise<CallResult> {
    if (requested.id?.value !== entry.id) return fail('SCHEDULER_CALL_INVALID', "'update_framework.framework_info.id' differs from 'framework_id'");
    // An unset principal is the framework's own (as SUBSCRIBE fills it); only a named one is a change.
    const info = withOwnPrincipal(requested, entry.info);
    for (const field of ['user', 'principal', 'checkpoint'] as const) {
      if (info[field] !== entry.info[field]) return fail('FRAMEWORK_UPDATE_UNSUPPORTED', field);
    }
    // New roles need register_frameworks as a SUBSCRIBE does.
    const refused = mayRegister(access, frameworkRoles(info));
    if (refused !== undefined) return { ok: false, error: refused };
    const w = await this.#o.commits.write('ADD_FRAMEWORK', { frameworkId: entry.id }, (reg) => reg.addFramework({ id: entry.id, info, registeredTimeNs: entry.registeredTimeNs }), () => {
      entry.info = info;
    });
    if (!w.ok) return w;
    this.#log.info('framework updated', { frameworkId: entry.id });
    this.#bus.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: entry.id });
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
      this.#o.instruments?.onInverseOfferAnswer(answer);
      this.#maintenance.recordAnswer(o.agentId, { status: answer, frameworkId, timestampNs: nowNs(now) });
      if (refuse > 0) {
        let f = this.#inverseFilters.get(frameworkId);
        if (f === undefined) this.#inverseFilters.set(frameworkId, (f = new Map()));
        f.set(o.agentId, now + refuse);
      }
    }
    this.allocateSoon();
  }

  /**
   * ACCEPT. With ACLs, `mayRun` (run_tasks) decides on each task's user (its command's, else the
   * framework's): a refused task is left out of the launch and hears TASK_ERROR
   * REASON_TASK_UNAUTHORIZED, after the offers are found valid (Mesos' order: invalid offers
   * lose every task of the call).
   */
  #accept(entry: FrameworkEntry, accept: NonNullable<SchedulerCallBody['accept']>, mayRun: Approve | undefined): void {
    const offerIds = (accept.offer_ids ?? []).map((o) => o.value);
    const taskInfos: TaskInfo[] = [];
    const unauthorized: Array<{ taskId: string; user: string | undefined }> = [];
    const groupTasks: Array<{ taskId: string; user: string | undefined }> = [];
    for (const op of accept.operations ?? []) {
      if (op.type === 'LAUNCH') {
        for (const t of op.launch?.task_infos ?? []) {
          const user = taskUser(t, entry.info.user);
          if (mayRun === undefined || mayRun(user)) taskInfos.push(t);
          else unauthorized.push({ taskId: rawTaskId(t), user });
        }
      } else if (op.type === 'LAUNCH_GROUP') groupTasks.push(...taskGroupTasks(op.launch_group, entry.info.user));
      else this.#log.warn('unsupported offer operation ignored', { frameworkId: entry.id, type: op.type });
    }
    // Task groups need the default executor; Drydock runs command tasks. Each task hears why, none waits forever
    // (an unauthorized one hears that first, as Mesos authorizes before it validates).
    for (const g of groupTasks) {
      if (mayRun !== undefined && !mayRun(g.user)) this.#sendMasterUpdate(entry.id, undefined, g.taskId, 'TASK_ERROR', 'REASON_TASK_UNAUTHORIZED', notAuthorizedMessage(g.user));
      else this.#sendMasterUpdate(entry.id, undefined, g.taskId, 'TASK_ERROR', 'REASON_TASK_GROUP_INVALID', 'Drydock runs command tasks only: LAUNCH_GROUP is not supported');
    }
    const live = new Set<string>();
    for (const a of this.#agents.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) live.add(t.task_id.value);
    const plan = planAccept({ frameworkId: entry.id, offerIds, offers: this.#offers, taskInfos, liveTaskIds: live });
    if (plan.kind === 'INVALID_OFFERS') {
      for (const id of plan.validOfferIds) this.#offers.delete(id);
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
      // These tasks never reached the table: only the framework hears of them (never `apply`, a duplicate id must not end the live task).
      for (const taskId of [...plan.taskIds, ...unauthorized.map((u) => u.taskId)]) this.#sendMasterUpdate(entry.id, undefined, taskId, state, 'REASON_INVALID_OFFERS', plan.message);
      this.allocateSoon();
      return;
    }
    for (const u of unauthorized) {
      this.#log.info('task launch not authorized', { frameworkId: entry.id, taskId: u.taskId, user: u.user ?? null });
      this.#sendMasterUpdate(entry.id, plan.agentId, u.taskId, 'TASK_ERROR', 'REASON_TASK_UNAUTHORIZED', notAuthorizedMessage(u.user));
    }
    for (const id of plan.offerIds) this.#offers.delete(id);
    for (const r of plan.rejected) this.#sendMasterUpdate(entry.id, plan.agentId, r.taskId, 'TASK_ERROR', 'REASON_TASK_INVALID', r.message);
    for (const task of plan.launches) {
      if (!this.#runTask(plan.agentId, entry.id, entry.info, task)) {
        const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
        this.#sendMasterUpdate(entry.id, plan.agentId, task.task_id.value, state, 'REASON_AGENT_DISCONNECTED', 'Agent is not connected');
      }
    }
    const refuse = refuseMs(accept.filters);
    if (plan.unused.length > 0) this.frameworks.filter(entry.id, plan.agentId, this.#clock.now() + refuse, this.#clock.now());
    this.allocateSoon();
  }

  #findTask(frameworkId: string, taskId: string, agentHint: string | undefined): { agent: AgentEntry; task: Task } | undefined {
    const key = taskKey(frameworkId, taskId);
    if (agentHint !== undefined) {
      const a = this.#agents.get(agentHint);
      const t = a?.tasks?.get(key);
      if (a !== undefined && t !== undefined) return { agent: a, task: t };
    }
    for (const a of this.#agents.all()) {
      const t = a.tasks?.get(key);
      if (t !== undefined) return { agent: a, task: t };
    }
    return undefined;
  }

  #killCall(entry: FrameworkEntry, taskId: string, agentHint: string | undefined, killPolicy: KillPolicy | undefined): void {
    const found = this.#findTask(entry.id, taskId, agentHint);
    if (found === undefined) {
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_UNKNOWN' : 'TASK_LOST';
      this.#sendMasterUpdate(entry.id, agentHint, taskId, state, 'REASON_RECONCILIATION', 'Reconciliation: Task is unknown');
      return;
    }
    this.#kill(found.agent, entry.id, taskId, killPolicy, true);
  }

  /** Sends KILL_TASK (`urgent`: see #killTask), or keeps it for when the agent re-registers. */
  #kill(agent: AgentEntry, frameworkId: string, taskId: string, killPolicy: KillPolicy | undefined, urgent = false): void {
    if (this.#killTask(agent.id, frameworkId, taskId, killPolicy, urgent)) return;
    const list = this.#pendingKills.get(agent.id) ?? [];
    list.push({ frameworkId, taskId, killPolicy });
    this.#pendingKills.set(agent.id, list);
  }

  /** RECONCILE (Mesos `Master::reconcile`): the answers are task-fate.ts `reconcileAnswer`. */
  #reconcile(entry: FrameworkEntry, reconcile: NonNullable<SchedulerCallBody['reconcile']>): void {
    const pa = hasCapability(entry.info, 'PARTITION_AWARE');
    const send = (u: MasterUpdate | undefined): void => {
      if (u !== undefined) this.#sendUpdate(u);
    };
    const known = (agent: AgentEntry, task: Task): ReconcileFinding => ({ kind: 'KNOWN', agentId: agent.id, task, agentUnreachable: agent.phase === 'UNREACHABLE' });
    const asked = reconcile.tasks ?? [];
    if (asked.length === 0) {
      // Implicit: every task the master knows for the framework.
      for (const a of this.#agents.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) send(reconcileAnswer(entry.id, t.task_id.value, known(a, t), pa));
      return;
    }
    for (const q of asked) {
      const taskId = q.task_id.value;
      const agentId = q.agent_id?.value;
      const found = this.#findTask(entry.id, taskId, agentId);
      const phase = agentId === undefined ? undefined : this.#agents.get(agentId)?.phase;
      const finding: ReconcileFinding =
        found !== undefined ? known(found.agent, found.task) : { kind: 'UNKNOWN', agentId, agent: phase === undefined ? undefined : phase === 'REGISTERED' ? 'OTHER' : phase };
      send(reconcileAnswer(entry.id, taskId, finding, pa));
    }
  }

  // ---- Master-generated updates --------------------------------------------------------------

  /** Sends an UPDATE the master made up (no uuid, nothing to acknowledge). */
  #sendMasterUpdate(frameworkId: string, agentId: string | undefined, taskId: string, state: TaskState, reason: TaskStatusReason, message: string, unreachableTimeNs?: bigint): TaskStatus {
    const status: TaskStatus = { task_id: { value: taskId }, state, source: 'SOURCE_MASTER', reason, message, timestamp: this.#clock.now() / 1000 };
    if (agentId !== undefined) status.agent_id = { value: agentId };
    // Partition-aware frameworks read when the agent became unreachable (TaskStatus.unreachable_time).
    if (unreachableTimeNs !== undefined) status.unreachable_time = { nanoseconds: unreachableTimeNs };
    this.#sendEvent(frameworkId, { type: 'UPDATE', update: { status } });
    return status;
  }

  /**
   * Sends a task-fate update. One that completes ends the task on its agent's record, or, for a
   * task that left with its agent (`detached`), in completed all the same; either way operators
   * hear TASK_UPDATED. `announce` tells operators of an update that does not complete
   * (unreachability), with when the agent became unreachable.
   */
  #sendUpdate(u: MasterUpdate, detached?: readonly Task[], unreachableTimeNs?: bigint): TaskStatus {
    const status = this.#sendMasterUpdate(u.frameworkId, u.agentId, u.taskId, u.state, u.reason, u.message, unreachableTimeNs);
    if (u.agentId === undefined) return status;
    const agentId = u.agentId;
    let ended = false;
    if (u.completes) {
      if (this.#agents.completeTask(agentId, u.frameworkId, u.taskId, status)) ended = true;
      else {
        const t = detached?.find((x) => x.framework_id.value === u.frameworkId && x.task_id.value === u.taskId);
        if (t !== undefined) {
          this.#agents.completeDetached(t, status);
          ended = true;
        }
      }
    }
    if (ended || unreachableTimeNs !== undefined) this.#bus.emit({ type: 'TASK_UPDATED', agentId, frameworkId: u.frameworkId, taskId: u.taskId, status, state: u.state });
    return status;
  }

  #sendEvent(frameworkId: string, event: unknown): void {
    const streamId = this.frameworks.get(frameworkId)?.streamId;
    if (streamId !== undefined) this.#streams.get(streamId)?.stream.send(event);
  }

  // ---- Agents, heard on the bus ------------------------------------------------------------------

  /** What task-fate.ts reads about a framework. */
  #fateOf = (frameworkId: string): FateFramework | undefined => {
    const f = this.frameworks.get(frameworkId);
    if (f === undefined) return this.frameworks.isRemoved(frameworkId) ? { checkpoint: false, partitionAware: false, removed: true } : undefined;
    return { checkpoint: f.info.checkpoint === true, partitionAware: hasCapability(f.info, 'PARTITION_AWARE'), removed: false };
  };

  /**
   * Carries out a task-fate decision for `agentId`. A completing update of a task still on the
   * agent ends it there; of a task the agent no longer has (removed with it), it ends detached
   * (`detached`, the tasks as they were).
   */
  #carryOut(agentId: string, fate: Fate, detached?: readonly Task[]): void {
    for (const k of fate.tombstones) this.#agents.tombstones.add(k);
    for (const f of fate.forget) this.#agents.forgetTask(agentId, f.frameworkId, f.taskId);
    for (const c of fate.complete) {
      // With its last status, on the agent's record or, gone with the agent, detached.
      const t = this.#agents.get(agentId)?.tasks?.get(taskKey(c.frameworkId, c.taskId)) ?? detached?.find((x) => x.framework_id.value === c.frameworkId && x.task_id.value === c.taskId);
      if (t === undefined) continue;
      const last = t.statuses.at(-1) ?? { task_id: t.task_id, state: t.state, source: 'SOURCE_MASTER' as const, timestamp: this.#clock.now() / 1000 };
      if (!this.#agents.completeTask(agentId, c.frameworkId, c.taskId, last)) this.#agents.completeDetached(t, last);
    }
    for (const k of fate.kills) this.#killTask(agentId, k.frameworkId, k.taskId);
    for (const a of fate.acks) this.#ackOnAgent(agentId, a.frameworkId, a.taskId, a.uuid);
    for (const u of fate.updates) this.#sendUpdate(u, detached);
  }

  /** An agent registered or re-registered; `before` is what the master knew of its tasks before its report. */
  #agentRegistered(agentId: string, before: readonly Task[], frameworks: readonly FrameworkInfo[]): void {
    for (const info of frameworks) void this.#learnFramework(agentId, info);
    const agent = this.#agents.get(agentId);
    if (agent === undefined) return;
    const reported = [...(agent.tasks?.values() ?? [])];
    const fate = onRegistered(agentId, before, reported, this.#agents.tombstones, this.#fateOf);
    // Lost tasks are no longer in the agent's map: they end detached.
    this.#carryOut(agentId, fate, before);
    // Kills that waited for the agent go out now.
    for (const k of this.#pendingKills.get(agentId) ?? []) this.#killTask(agentId, k.frameworkId, k.taskId, k.killPolicy);
    this.#pendingKills.delete(agentId);
    this.allocateSoon();
  }

  /** A framework the master did not know, reported by an agent (after a master restart): written first, then known as RECOVERED. */
  async #learnFramework(agentId: string, info: FrameworkInfo): Promise<void> {
    const id = info.id?.value;
    if (id === undefined || this.frameworks.get(id) !== undefined || this.frameworks.isRemoved(id)) return;
    const r = await this.#o.commits.write('ADD_FRAMEWORK', { frameworkId: id, agentId }, (reg) => reg.addFramework({ id, info, registeredTimeNs: undefined }), () =>
      this.frameworks.addRecovered(info, undefined, this.#o.startTimeMs),
    );
    if (!r.ok || r.value === undefined) return;
    this.#log.info('framework recovered from an agent', { frameworkId: id, agentId });
    this.#armDeadline(r.value);
    this.#bus.emit({ type: 'FRAMEWORK_ADDED', frameworkId: id });
  }

  /** The agent's session dropped: its offers are rescinded; tasks of frameworks that do not checkpoint are lost (Mesos §4.4). */
  #agentDisconnected(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    this.#carryOut(agentId, onDisconnected(agentId, [...(this.#agents.get(agentId)?.tasks?.values() ?? [])], this.#fateOf));
  }

  /** The agent became unreachable: offers rescinded, tasks TASK_UNREACHABLE (partition-aware) or TASK_LOST, told to operators too. */
  #agentUnreachable(agentId: string): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    const agent = this.#agents.get(agentId);
    // Operators hear of it too (as from Mesos' `__removeSlave`), with the agent's unreachable_time.
    for (const u of onUnreachable(agentId, [...(agent?.tasks?.values() ?? [])], this.#fateOf).updates) this.#sendUpdate(u, undefined, agent?.unreachableTimeNs ?? nowNs(this.#clock.now()));
  }

  /** The agent was removed (machine DOWN, replaced): offers rescinded; with `lostMessage` its tasks are lost; every subscribed framework hears FAILURE. */
  #agentRemoved(agentId: string, tasks: readonly Task[], lostMessage: string | undefined): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    if (lostMessage !== undefined) this.#carryOut(agentId, onRemoved(agentId, tasks, lostMessage), tasks);
    for (const s of this.#streams.values()) s.stream.send({ type: 'FAILURE', failure: { agent_id: { value: agentId } } });
  }

  /** The agent was marked gone: offers rescinded, each of its tasks ends for its framework. */
  #agentGone(agentId: string, tasks: readonly Task[]): void {
    this.#rescindOffers((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    this.#carryOut(agentId, onGone(agentId, tasks, this.#fateOf), tasks);
    this.allocateSoon();
  }

  /**
   * The unavailability of these agents' machines was (re)applied or cleared (schedule POST,
   * /machine/up): outstanding offers and inverse offers are rescinded and inverse-offer filters
   * dropped (Mesos `updateUnavailability`), then new offers carry the new unavailability.
   */
  #maintenanceChanged(agentIds: readonly string[]): void {
    if (agentIds.length === 0) return;
    const agents = new Set(agentIds);
    this.#rescindOffers((o) => agents.has(o.agentId), true);
    for (const f of this.#inverseFilters.values()) for (const a of agents) f.delete(a);
    this.allocateSoon();
  }

  /** An agent's STATUS_UPDATE, recorded: forward it (at least once), or acknowledge it for a removed framework. */
  #statusUpdate(agentId: string, frameworkId: string, status: TaskStatus): void {
    const stamped: TaskStatus = status.agent_id === undefined ? { ...status, agent_id: { value: agentId } } : status;
    if (this.frameworks.isRemoved(frameworkId)) {
      if (status.uuid !== undefined) this.acknowledge(agentId, frameworkId, status.task_id.value, status.uuid);
    } else {
      // Not subscribed: dropped; the agent resends until acknowledged.
      this.#sendEvent(frameworkId, { type: 'UPDATE', update: { status: stamped } });
      this.#timeForwarded(status.uuid);
    }
    if (isTerminal(status.state)) this.allocateSoon();
  }

  // ---- Commands to agents ------------------------------------------------------------------------

  /** Records the task as TASK_STAGING on the agent and sends it RUN_TASK; false when the agent has no open session. */
  #runTask(agentId: string, frameworkId: string, framework: FrameworkInfo, task: TaskInfo): boolean {
    const agent = this.#agents.get(agentId);
    if (agent === undefined || !agent.connected) return false;
    this.#agents.addTask(agentId, frameworkId, task);
    this.#bus.emit({ type: 'TASK_ADDED', agentId, frameworkId, taskId: task.task_id.value });
    return this.#o.link.send(agentId, { type: 'RUN_TASK', framework_id: frameworkId, framework, task });
  }

  /**
   * Sends KILL_TASK; `killPolicy` overrides the task's own. False when the agent has no open
   * session. `urgent` for a scheduler's KILL (written at once); the kills of a re-registration
   * leave together at the end of the turn.
   */
  #killTask(agentId: string, frameworkId: string, taskId: string, killPolicy?: KillPolicy, urgent = false): boolean {
    const msg: MasterMessage = { type: 'KILL_TASK', framework_id: frameworkId, task_id: taskId };
    if (killPolicy !== undefined) msg.kill_policy = killPolicy;
    return this.#o.link.send(agentId, msg, urgent);
  }

  /**
   * A scheduler acknowledged the update `uuid`: forwards ACKNOWLEDGE to the agent, and moves
   * the task to completed if that update was terminal. Like Mesos, an acknowledgement for a
   * disconnected agent is dropped (the agent resends the update and it is acknowledged again).
   */
  acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string): { ok: true } | { ok: false; reason: string } {
    const agent = this.#agents.get(agentId);
    if (agent === undefined) return { ok: false, reason: 'UNKNOWN_AGENT' };
    if (!agent.connected) return { ok: false, reason: 'AGENT_NOT_CONNECTED' };
    const superseded: string[] = [];
    const outcome = this.#agents.acknowledge(agentId, frameworkId, taskId, uuid, superseded);
    if (outcome === 'UNKNOWN_TASK' || outcome === 'UUID_MISMATCH' || outcome === 'UNKNOWN_AGENT') return { ok: false, reason: outcome };
    this.#o.link.send(agentId, { type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
    this.#timeAcknowledged(uuid);
    // Earlier updates of a task whose end was just acknowledged: the agent hears they are done too (agents.ts).
    for (const u of superseded) {
      this.#ackOnAgent(agentId, frameworkId, taskId, u);
      this.#forwardedAt.delete(u);
    }
    // Mesos re-checks a draining agent on every acknowledgement: this may be the last one.
    this.#bus.emit({ type: 'TASK_ACKNOWLEDGED', agentId, frameworkId, taskId });
    return { ok: true };
  }

  /** Notes when an update was first forwarded (retries keep the first time: the latency is the framework's whole wait). */
  #timeForwarded(uuid: string | undefined): void {
    const i = this.#o.instruments;
    if (i === undefined || uuid === undefined || this.#forwardedAt.has(uuid)) return;
    // Updates of frameworks that never acknowledge must not grow without bound: forget the oldest.
    if (this.#forwardedAt.size >= MAX_TIMED_UPDATES) {
      const oldest = this.#forwardedAt.keys().next();
      if (oldest.done !== true) this.#forwardedAt.delete(oldest.value);
    }
    this.#forwardedAt.set(uuid, i.now());
  }

  #timeAcknowledged(uuid: string): void {
    const i = this.#o.instruments;
    const at = this.#forwardedAt.get(uuid);
    if (i === undefined || at === undefined) return;
    this.#forwardedAt.delete(uuid);
    i.onAcknowledged(i.now() - at);
  }

  /** Tells the agent to forget an update the master consumed itself (the scheduler never sees it). */
  #ackOnAgent(agentId: string, frameworkId: string, taskId: string, uuid: string): void {
    this.#o.link.send(agentId, { type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
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

  // ---- Allocation ------------------------------------------------------------------------------

  /** Runs an allocation soon (batched: many events in one turn make one allocation). */
  allocateSoon(): void {
    if (this.#allocationSoon || !this.#running) return;
    this.#allocationSoon = true;
    // Events come in bursts (10,000 agents registering after a master restart): batch them,
    // and keep allocation to about a third of the CPU by waiting twice as long as the last
    // allocation took, counted from its start.
    const wait = Math.max(0, this.#lastAllocationAt + 3 * this.#lastAllocationMs - this.#clock.monotonicMs());
    const run = (): void => {
      this.#allocationSoon = false;
      this.#allocate();
    };
    if (wait < 1) this.#clock.immediate(run);
    else this.#clock.setTimer(wait, run);
  }

  #scheduleAllocation(): void {
    this.#allocationTimer = this.#clock.setTimer(this.#allocationIntervalMs, () => {
      if (!this.#running) return;
      this.#allocate();
      this.#scheduleAllocation();
    });
  }

  #allocate(): void {
    if (!this.#running) return;
    const now = this.#clock.now();
    this.frameworks.pruneFilters(now);
    // Nobody to offer to (no framework subscribed): skip the per-agent resource arithmetic.
    if (![...this.frameworks.all()].some((f) => f.phase === 'CONNECTED')) return;
    const started = this.#clock.monotonicMs();
    try {
      this.#allocateNow(now);
    } finally {
      this.#lastAllocationAt = started;
      this.#lastAllocationMs = this.#clock.monotonicMs() - started;
    }
  }

  #allocateNow(now: number): void {
    // The resource lists are gathered first and summed once each (sumResources): adding them
    // one at a time copied the running total per task, the round's main cost with many tasks.
    const offered = new Map<string, Resource[][]>();
    const held = new Map<string, Resource[][]>();
    const push = (m: Map<string, Resource[][]>, k: string, r: Resource[]): void => {
      const lists = m.get(k);
      if (lists === undefined) m.set(k, [r]);
      else lists.push(r);
    };
    for (const o of this.#offers.values()) {
      push(offered, o.agentId, o.resources);
      push(held, o.frameworkId, o.resources);
    }
    const agents: AllocatorAgent[] = [];
    for (const a of this.#agents.all()) {
      if (a.phase !== 'REGISTERED') continue;
      const active = a.connected && !a.deactivated;
      const used: Resource[][] = [];
      for (const t of a.tasks?.values() ?? []) {
        if (isTerminal(t.state)) continue;
        used.push(t.resources);
        push(held, t.framework_id.value, t.resources);
      }
      // A deactivated (or draining) agent gets no offers until REACTIVATE_AGENT (Mesos §4.5);
      // what it has free is only worked out for agents that can be offered.
      const available = active ? subtractResources(subtractResources(a.info.resources, sumResources(used)), sumResources(offered.get(a.id) ?? [])) : [];
      agents.push({ id: a.id, active, total: a.info.resources, available });
    }
    const frameworks: AllocatorFramework[] = [];
    const filters = new Map<string, Map<string, number>>();
    for (const f of this.frameworks.all()) {
      frameworks.push({ id: f.id, active: f.phase === 'CONNECTED', suppressed: f.suppressed, allocated: sumResources(held.get(f.id) ?? []) });
      filters.set(f.id, f.filters);
    }
    const planned = generateOffers({ agents, frameworks, filters, nowMs: now });
    const byFramework = new Map<string, Offer[]>();
    for (const p of planned) {
      const offer: Offer = { id: `${this.#o.masterId}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: p.resources };
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
    const draining = [...this.#maintenance.drainingAgents()];
    if (draining.length === 0) return;
    const active = new Map(agents.map((a) => [a.id, a.active]));
    const holders = new Map<string, Set<string>>();
    for (const d of draining) holders.set(d.agentId, new Set());
    for (const o of this.#offers.values()) holders.get(o.agentId)?.add(o.frameworkId);
    for (const d of draining) {
      const set = holders.get(d.agentId) as Set<string>;
      for (const t of this.#agents.get(d.agentId)?.tasks?.values() ?? []) if (!isTerminal(t.state)) set.add(t.framework_id.value);
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
      const io: Offer = { id: `${this.#o.masterId}-O${this.#nextOffer++}`, frameworkId: p.frameworkId, agentId: p.agentId, resources: [] };
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

/**
 * The tasks of a LAUNCH_GROUP operation's `task_group.tasks` (kept as sent: Drydock does not run
 * groups): each id, and the user run_tasks decides on (its command's, else the framework's).
 */
function taskGroupTasks(launchGroup: unknown, frameworkUser: string): Array<{ taskId: string; user: string | undefined }> {
  const tasks = (launchGroup as { task_group?: { tasks?: unknown } } | undefined)?.task_group?.tasks;
  if (!Array.isArray(tasks)) return [];
  const out: Array<{ taskId: string; user: string | undefined }> = [];
  for (const t of tasks) {
    const id = rawTaskId(t);
    if (id === '') continue;
    const command = (t as { command?: unknown } | null)?.command;
    const user = typeof command === 'object' && command !== null ? (command as { user?: unknown }).user : undefined;
    out.push({ taskId: id, user: taskUser({ command: { user: typeof user === 'string' ? user : undefined } }, frameworkUser) });
  }
  return out;
}

/** A task info's id as sent ('' when missing): the id its TASK_ERROR names. */
function rawTaskId(t: unknown): string {
  const v = (t as { task_id?: { value?: unknown } } | null)?.task_id?.value;
  return typeof v === 'string' ? v : '';
}

/** The message of a task run_tasks refused (Mesos' wording). */
function notAuthorizedMessage(user: string | undefined): string {
  return `Not authorized to launch as user '${user ?? ''}'`;
}

/** Filters.refuse_seconds in ms: default 5 s; negative falls back to the default; capped at 365 days (Mesos). */
export function refuseMs(filters: Filters | undefined): number {
  const v = filters?.refuse_seconds;
  const s = v === undefined ? DEFAULT_REFUSE_SECONDS : v < 0 ? DEFAULT_REFUSE_SECONDS : Math.min(v, 365 * 86_400);
  return s * 1000;
}

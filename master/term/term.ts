/**
 * A leadership term: everything that exists only while this master leads. `Term.start`
 * builds it from the registry (the model, the services, their timers, the agent sessions and
 * the operator streams); `dispose()` drops all of it. The process (process/main.ts) keeps only HTTP
 * listening, config and leadership, and starts a term when elected.
 *
 * Inside, the services never call each other: agents (registration), maintenance, drain, and
 * frameworks-and-offers share the model (agent table, frameworks, machines) and talk through
 * the ports (agent link, registry via the commit path, the bus, the clock). Outside, the edges
 * and the process hold the term's ports (queries, commands, the bus, the agent upgrades, the
 * operator streams and Drydock's event streams: `ServingTerm`), never the term itself.
 */

import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import { agentMachineId } from '../../shared/machine.js';
import { attributeValues } from '../../shared/acls.js';
import { AgentSessions } from '../api/agent-sessions.js';
import { createOperatorStreams, type OperatorStreams } from '../api/operator-stream.js';
import { createDrydockStreams, type DrydockStreams } from '../api/drydock-stream.js';
import { AgentTable, conditionsJson } from '../cores/agents.js';
import { MaintenanceState } from '../cores/maintenance.js';
import { MaintenancePlans } from '../plans/driver.js';
import type { MaintenanceHooks } from '../plans/hooks.js';
import type { Registry, RegistryState } from '../registry/registry.js';
import { agentEntryObject, machineObject } from '../security/acl-objects.js';
import { MasterSecurity } from '../security/security.js';
import { AgentsService } from '../services/agents.js';
import { DrainService } from '../services/drain.js';
import { FrameworksService } from '../services/frameworks.js';
import { MaintenanceService } from '../services/maintenance.js';
import type { Commands } from './commands.js';
import { Commits, type CommitInstruments } from './commit.js';
import { MasterEvents } from './events.js';
import type { AgentInstruments, FrameworkInstruments, MasterSelf, ServingTerm, TermConfig } from './ports.js';
import type { Queries } from './queries.js';

export interface TermOptions {
  config: TermConfig;
  /** The process's authentication, ACLs and audit log (open when not given: tests). */
  security?: MasterSecurity;
  /** The master's maintenance hooks, loaded at start (none when not given). */
  hooks?: MaintenanceHooks;
  registry: Registry;
  /** This master's id and MasterInfo (process/master-info.ts). */
  master: MasterSelf;
  /** The term's epoch (solo: 1; etcd: the election key's create_revision). */
  epoch: bigint;
  /** When the process started (ms): GET_MASTER's start_time. */
  processStartMs: number;
  clock: Clock;
  logger: Logger;
  /** The other masters this one knows (HA: the other candidates' MasterInfo), for GET_MASTER. */
  otherMasters?: () => ReadonlyArray<Record<string, unknown>>;
  /** Called once if the term ends by itself: the registry said this master may no longer write. */
  onEnded: (reason: string) => void;
  /** The process's metrics (process/metrics.ts), fed where registry writes and acknowledgements happen. */
  instruments?: { commits?: CommitInstruments; frameworks?: FrameworkInstruments; agents?: AgentInstruments } | undefined;
}

/** The services of a term (what term.test.ts and the ports reach): one per core, and the plans' driver. */
export interface TermServices {
  /** Registration and liveness of agents; the term's AgentLink. */
  readonly agents: AgentsService;
  /** Frameworks and offers (the master's side of the Mesos scheduler API). */
  readonly frameworks: FrameworksService;
  readonly drain: DrainService;
  readonly maintenance: MaintenanceService;
  readonly plans: MaintenancePlans;
}

/** A term's lifecycle: it serves from the moment it is built until it is disposed of. */
export type TermState = 'SERVING' | 'ENDED';

export class Term implements ServingTerm {
  readonly security: MasterSecurity;
  readonly epoch: bigint;
  /** When this term began (ms): GET_MASTER's elected_time. */
  readonly electedMs: number;
  /** The one event bus. */
  readonly bus: MasterEvents;
  /** The model: agents (with their tasks, drains, tombstones), machines and schedule. Frameworks live in `services.frameworks.frameworks`. */
  readonly agents: AgentTable;
  readonly maintenance = new MaintenanceState();
  readonly commits: Commits;
  /**
   * The services, each the shell of the core of the same name (cores/<noun>.ts ->
   * services/<noun>.ts), and the maintenance plans' driver (plans/driver.ts): recovered from the
   * registry, driven while the term serves.
   */
  readonly services: TermServices;
  /** Maintenance plans (issue 12): the same object as `services.plans`. */
  readonly maintenancePlans: MaintenancePlans;
  /** What the edges read (api/): plain data and JSON views of the model. */
  readonly queries: Queries;
  /** What the edges may ask to change: the services' commands. */
  readonly commands: Commands;
  readonly sessions: AgentSessions;
  readonly streams: OperatorStreams;
  /** Drydock's own event streams (`GET /drydock/v1/events`). */
  readonly drydockEvents: DrydockStreams;
  readonly #o: TermOptions;
  readonly #log: Logger;
  readonly #listeners: Array<() => void> = [];
  #state: TermState = 'SERVING';
  /** Events announced on the bus so far (a part of the model's generation). */
  #events = 0;

  /** Recovers the model from the registry, then starts every service. */
  static async start(o: TermOptions): Promise<Term> {
    const timing = o.instruments?.commits;
    const started = timing?.now();
    const state = await o.registry.recover();
    if (timing !== undefined && started !== undefined) timing.onRecovered?.(timing.now() - started);
    return new Term(o, state);
  }

  private constructor(o: TermOptions, state: RegistryState) {
    this.#o = o;
    this.security = o.security ?? MasterSecurity.open();
    this.epoch = o.epoch;
    this.electedMs = o.clock.now();
    this.#log = o.logger;
    const log = o.logger;
    this.bus = new MasterEvents((error, event) => log.error('event listener failed', { event: event.type, error }));
    this.agents = new AgentTable({
      pingTimeoutMs: o.config.agentPingTimeoutMs,
      maxPingTimeouts: o.config.maxAgentPingTimeouts,
      reregisterTimeoutMs: o.config.agentReregisterTimeoutMs,
    });
    this.commits = new Commits(o.registry, log.child({ component: 'registry' }), (e) => this.#fenced(e), o.instruments?.commits);

    // The model, from the registry.
    this.agents.recover(state.agents, o.clock.now());
    this.agents.recoverGone((state.goneAgents ?? []).map((g) => g.id));
    this.agents.recoverRemovedBindings(state.removedBindings ?? []);
    this.maintenance.recover(state.maintenance);
    for (const a of state.agents) {
      this.maintenance.agentAdded(a.id, agentMachineId(a.info.hostname, a.info.ip));
      this.maintenance.noteAttributes(agentMachineId(a.info.hostname, a.info.ip), attributeValues(a.info.attributes));
    }

    const ports = { bus: this.bus, commits: this.commits, clock: o.clock };
    const agentsService = new AgentsService({
      ...ports,
      masterId: o.master.id,
      pingIntervalMs: o.config.agentPingTimeoutMs,
      maxPingTimeouts: o.config.maxAgentPingTimeouts,
      security: this.security,
      agents: this.agents,
      maintenance: this.maintenance,
      log: log.child({ component: 'registration' }),
      instruments: o.instruments?.agents,
    });
    const frameworks = new FrameworksService({
      ...ports,
      masterId: o.master.id,
      masterInfo: () => o.master.info,
      startTimeMs: this.electedMs,
      allocationIntervalMs: o.config.allocationIntervalMs,
      agents: this.agents,
      maintenance: this.maintenance,
      link: agentsService,
      // The log component keeps its name: operators' queries and dashboards read it.
      log: log.child({ component: 'schedulers' }),
      instruments: o.instruments?.frameworks,
    });
    frameworks.recover(state.frameworks);
    const drain = new DrainService({ ...ports, agents: this.agents, maintenance: this.maintenance, link: agentsService, log: log.child({ component: 'drain' }) });
    const maintenanceService = new MaintenanceService({ maintenance: this.maintenance, commits: this.commits, bus: this.bus, log: log.child({ component: 'maintenance' }) });

    // Listener order is the order services act on one event: offers and task fates first, then
    // drains (which re-check what the frameworks service just changed), then registration.
    // The plans' driver acts through the other services' internal paths, given as functions.
    this.maintenancePlans = new MaintenancePlans({
      ...ports,
      agents: this.agents,
      maintenance: this.maintenance,
      log: log.child({ component: 'maintenance-plans' }),
      ...(o.hooks === undefined ? {} : { hooks: o.hooks }),
      audit: (entry) => this.security.audit(entry),
      actions: {
        scheduleMachines: (items) => maintenanceService.scheduleMachines(items),
        unscheduleMachines: (ids) => maintenanceService.unscheduleMachines(ids),
        drain: (items) => drain.drainScheduled(items),
        reactivate: (agentId) => drain.reactivate(agentId),
        down: (ids) => maintenanceService.startMaintenance(ids),
        up: (ids) => maintenanceService.stopMaintenance(ids),
        frameworkName: (id) => frameworks.frameworks.get(id)?.info.name ?? '',
      },
    });
    this.maintenancePlans.recover(state);
    this.services = { agents: agentsService, frameworks, drain, maintenance: maintenanceService, plans: this.maintenancePlans };

    this.#listeners.push(
      this.bus.subscribe(() => {
        this.#events++;
      }),
    );
    this.#listeners.push(frameworks.start(), drain.start(), agentsService.start());
    this.sessions = new AgentSessions(agentsService, () => this.#state === 'SERVING', o.epoch, log.child({ component: 'agent-sessions' }));
    this.queries = termQueries(this, o);
    this.commands = termCommands(this.services);
    this.streams = createOperatorStreams({
      events: this.bus,
      queries: this.queries,
      clock: o.clock,
      logger: log.child({ component: 'operator-stream' }),
      heartbeatIntervalMs: o.config.heartbeatIntervalMs,
      maxSubscribers: o.config.maxOperatorEventStreamSubscribers,
    });
    this.drydockEvents = createDrydockStreams({
      events: this.bus,
      queries: this.queries,
      clock: o.clock,
      logger: log.child({ component: 'drydock-stream' }),
      heartbeatIntervalMs: o.config.heartbeatIntervalMs,
      maxSubscribers: o.config.maxOperatorEventStreamSubscribers,
    });
    // Last: plans act on the model the services above keep, and hear events after them.
    this.#listeners.push(this.maintenancePlans.start());
    // ACLs name machines by their agents' attributes (rack:r1); a machine keeps the last ones
    // seen, so its rack team can still bring it UP once its agent is gone (DOWN).
    this.#listeners.push(
      this.bus.subscribe((e) => {
        if (e.type !== 'AGENT_ADDED' && e.type !== 'AGENT_RECONNECTED') return;
        const a = this.agents.get(e.agentId);
        if (a !== undefined) this.maintenance.noteAttributes(agentMachineId(a.info.hostname, a.info.ip), attributeValues(a.info.attributes));
      }),
    );
    const counts = this.agents.counts();
    log.info('term started', { epoch: this.epoch, agents: counts.recovered, unreachable: counts.unreachable, frameworks: state.frameworks.length });
  }

  get state(): TermState {
    return this.#state;
  }

  /** The model's generation (Queries.generation): events announced, changes applied, offers made or gone. */
  get generation(): string {
    return `${this.#events}.${this.commits.applied}.${this.services.frameworks.offerStamp}`;
  }

  /** How many agent sessions are open (a graceful stop waits for their close handshakes). */
  get openSessions(): number {
    return this.services.agents.openSessions;
  }

  /**
   * Drops the term: streams end, sessions close with GOING_AWAY, timers stop, listeners leave
   * the bus. Idempotent. The registry is the process's and stays open.
   */
  dispose(reason = 'master shutting down'): void {
    if (this.#state === 'ENDED') return;
    this.#state = 'ENDED';
    this.streams.close();
    this.drydockEvents.close();
    this.sessions.close();
    this.maintenancePlans.dispose();
    this.services.frameworks.stop();
    this.services.agents.dispose(reason);
    for (const off of this.#listeners.splice(0)) off();
    this.#log.info('term ended', { epoch: this.epoch, reason });
  }

  /** A write was fenced: this master may no longer write, so it no longer acts. */
  #fenced(e: Error): void {
    if (this.#state === 'ENDED') return;
    this.#log.error('term fenced', { epoch: this.epoch, error: e });
    this.dispose('this master may no longer write the registry');
    this.#o.onEnded(e.message);
  }
}

/** The queries port over a term's model and services. */
function termQueries(term: Term, o: TermOptions): Queries {
  const { agents, maintenance } = term;
  const { frameworks, drain, plans } = term.services;
  const table = frameworks.frameworks;
  return {
    nowMs: () => o.clock.now(),
    generation: () => term.generation,
    pendingWrites: () => term.commits.pending,
    master: () => ({ info: o.master.info, startMs: o.processStartMs, electedMs: term.electedMs, others: o.otherMasters?.() ?? [] }),
    flags: () => o.config.flags,
    agent: (id) => agents.get(id),
    agents: () => agents.all(),
    completedTasks: () => agents.completedTasks,
    goneAgents: () => agents.goneCount,
    offeredOnAgent: (id) => frameworks.offeredOnAgent(id),
    drainView: (e) => drain.view(e),
    agentMachine: (id) => maintenance.machineOfAgent(id),
    agentPeer: (id) => term.services.agents.peerOf(id),
    agentObject: (id) => agentEntryObject(agents.get(id)),
    agentConditions: (id) => {
      const entry = agents.get(id);
      return entry === undefined ? undefined : conditionsJson(entry);
    },
    framework: (id) => table.get(id),
    frameworkEver: (id) => table.get(id) ?? table.completed.find((f) => f.id === id),
    frameworks: () => table.all(),
    completedFrameworks: () => table.completed,
    frameworkRemoved: (id) => table.isRemoved(id),
    frameworkOfStream: (streamId) => [...table.all()].find((f) => f.streamId === streamId)?.id,
    offers: (id) => frameworks.offersOfFramework(id),
    inverseOffers: (id) => frameworks.inverseOffersOfFramework(id),
    offerJson: (offer) => frameworks.offerJson(offer),
    inverseOfferJson: (offer) => frameworks.inverseOfferJson(offer),
    allocatedTo: (id) => frameworks.allocatedToFramework(id),
    outstanding: () => ({ offers: frameworks.outstandingOffers, inverseOffers: frameworks.outstandingInverseOffers }),
    maintenanceSchedule: (visible) => maintenance.scheduleJson(visible),
    maintenanceStatus: (visible) => maintenance.statusJson(visible),
    machines: () => maintenance.all(),
    machineByKey: (key) => maintenance.machineByKey(key),
    machineObject: (id) => machineObject(id, maintenance, agents),
    changedMachines: (next) => maintenance.changedMachines(next),
    planNames: () => plans.names(),
    planMachines: (name) => plans.machinesOf(name),
    planStepCounts: () => plans.stepCounts(),
    planHookNeededFor: (name, verb, phase, step) => plans.hookNeededFor(name, verb, phase, step),
    planAnswer: (method, segments, query, reveal) => plans.answer(method, segments, query, reveal),
    planPreview: (text) => plans.preview(text),
  };
}

/** The commands port over a term's services. */
function termCommands(services: TermServices): Commands {
  const { frameworks, drain, maintenance, plans } = services;
  return {
    drainAgent: (id, config) => drain.drain(id, config),
    deactivateAgent: (id) => drain.deactivate(id),
    reactivateAgent: (id) => drain.reactivate(id),
    markAgentGone: (id) => drain.markGoneCall(id),
    updateSchedule: (schedule) => maintenance.updateSchedule(schedule),
    startMaintenance: (ids) => maintenance.startMaintenance(ids),
    stopMaintenance: (ids) => maintenance.stopMaintenance(ids),
    teardownFramework: async (id) => {
      const removed = await frameworks.teardown(id);
      return removed.ok ? undefined : removed.error;
    },
    subscribeFramework: (info, open, access) => frameworks.subscribe(info, open, access),
    frameworkCall: (call, streamId, access) => frameworks.call(call, streamId, access),
    createPlan: (text, authorize, createdBy) => plans.create(text, authorize, createdBy),
    deletePlan: (name) => plans.delete(name),
    planVerb: (segments, query, body, authorize) => plans.verb(segments, query, body, authorize),
  };
}

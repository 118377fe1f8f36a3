/**
 * The frameworks-and-offers service: the master's side of the Mesos scheduler API (framework
 * event streams, offers and inverse offers, launches, kills, acknowledgements, reconciliation,
 * failover and removal). Not to be confused with the service scheduler (scheduler/,
 * drydock-scheduler), which is one framework among others talking to this service.
 *
 * The shell around the pure cores (cores/frameworks.ts, cores/allocator.ts, cores/offers.ts,
 * cores/task-fate.ts), in four parts that share the framework table and the model:
 *  - frameworks-streams.ts: SUBSCRIBE, the open streams and their heartbeats, failover
 *    timeouts, removal;
 *  - frameworks-calls.ts: every other scheduler call, dispatched by type;
 *  - frameworks-tasks.ts: task traffic with agents, updates and acknowledgements, what agents'
 *    events mean for their tasks;
 *  - frameworks-allocation.ts: offers and inverse offers, and when allocation runs (through
 *    the term's clock).
 * This class wires them, owns the lifecycle, hears agents and machines on the bus and hands
 * each event to its part. It writes the registry first (the commit path), talks to agents
 * through the AgentLink, and imports no other service.
 */

import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import type { FrameworkInfo, Resource } from '../../shared/mesos.js';
import { isTerminal } from '../../shared/mesos.js';
import { addResources } from '../../shared/resources.js';
import type { AgentTable } from '../cores/agents.js';
import { FrameworkTable } from '../cores/frameworks.js';
import type { Offer } from '../cores/offers.js';
import type { SchedulerCall } from '../cores/scheduler-calls.js';
import type { DurableFramework } from '../registry/registry.js';
import { Access, MasterSecurity } from '../security/security.js';
import type { CallResult, FrameworkStream } from '../term/commands.js';
import type { MasterEvent, MasterEvents } from '../term/events.js';
import type { AgentLink, FrameworkInstruments, ServiceModel, ServicePorts } from '../term/ports.js';
import { Allocation } from './frameworks-allocation.js';
import { FrameworkCalls } from './frameworks-calls.js';
import { FrameworkStreams } from './frameworks-streams.js';
import { TaskTraffic } from './frameworks-tasks.js';

/** The caller of a call made without one (unit tests, internal callers): anonymous, on an open master. */
function openAccess(): Access {
  return new Access(MasterSecurity.open(), undefined);
}

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
  readonly #agents: AgentTable;
  readonly #bus: MasterEvents;
  readonly #clock: Clock;
  readonly #offers: Allocation;
  readonly #streams: FrameworkStreams;
  readonly #tasks: TaskTraffic;
  readonly #calls: FrameworkCalls;
  #running = false;

  constructor(o: FrameworksServiceOptions) {
    this.#agents = o.agents;
    this.#bus = o.bus;
    this.#clock = o.clock;
    const log: Logger = o.log;
    const running = (): boolean => this.#running;
    const frameworks = this.frameworks;
    // The parts reach each other late (each is built before the next): through these closures.
    const streams = { send: (id: string, e: unknown) => this.#streams.send(id, e), broadcast: (e: unknown) => this.#streams.broadcast(e), armDeadline: (f: Parameters<FrameworkStreams['armDeadline']>[0]) => this.#streams.armDeadline(f) };
    const offers = { rescind: (pred: (o: Offer) => boolean, tell: boolean) => this.#offers.rescind(pred, tell), allocateSoon: () => this.#offers.allocateSoon() };
    this.#offers = new Allocation({ masterId: o.masterId, agents: o.agents, maintenance: o.maintenance, frameworks, clock: o.clock, allocationIntervalMs: o.allocationIntervalMs, instruments: o.instruments, log, running, send: streams.send });
    this.#tasks = new TaskTraffic({ agents: o.agents, frameworks, link: o.link, commits: o.commits, bus: o.bus, clock: o.clock, log, startTimeMs: o.startTimeMs, instruments: o.instruments, streams, offers });
    this.#streams = new FrameworkStreams({ masterId: o.masterId, masterInfo: o.masterInfo, frameworks, commits: o.commits, bus: o.bus, clock: o.clock, log, running, offers, tasks: this.#tasks });
    this.#calls = new FrameworkCalls({ agents: o.agents, frameworks, commits: o.commits, bus: o.bus, clock: o.clock, log, streams: this.#streams, offers: this.#offers, tasks: this.#tasks });
  }

  /** Loads the registry's frameworks as RECOVERED; their failover timeout counts from now (the master's start). */
  recover(frameworks: readonly DurableFramework[]): void {
    this.frameworks.recover(frameworks, this.#clock.now());
  }

  /** Arms failover deadlines and the allocation cycle; listens for agents, machines and updates on the bus. */
  start(): () => void {
    this.#running = true;
    this.#streams.start();
    this.#offers.start();
    return this.#bus.subscribe((e) => this.#onEvent(e));
  }

  #onEvent(e: MasterEvent): void {
    switch (e.type) {
      case 'AGENT_ADDED':
      case 'AGENT_RECONNECTED':
        return this.#tasks.agentRegistered(e.agentId, e.tasksBefore ?? [], e.frameworks ?? []);
      case 'AGENT_DISCONNECTED':
        return this.#tasks.agentDisconnected(e.agentId);
      case 'AGENT_UNREACHABLE':
        return this.#tasks.agentUnreachable(e.agentId);
      case 'AGENT_REMOVED':
        return this.#tasks.agentRemoved(e.agentId, e.tasks ?? [], e.lostMessage);
      case 'AGENT_GONE':
        return this.#tasks.agentGone(e.agentId, e.tasks);
      case 'AGENT_UPDATED':
        // DEACTIVATE_AGENT / DRAIN_AGENT: every outstanding offer and inverse offer of the agent is rescinded (Mesos §4.5); its tasks are untouched.
        // Disk pressure the same way for offers (not inverse offers: maintenance goes on); the agent stays registered and its tasks run.
        if (e.change === 'DRAINING' || e.change === 'DEACTIVATED') {
          if (this.#agents.get(e.agentId)?.phase === 'REGISTERED') this.#offers.rescind((o) => o.agentId === e.agentId, true);
        } else if (e.change === 'DISK_PRESSURE') {
          this.#offers.rescindOffers((o) => o.agentId === e.agentId);
        } else if (e.change === 'REACTIVATED' || e.change === 'DISK_PRESSURE_CLEARED') this.allocateSoon();
        return undefined;
      case 'MACHINE_UPDATED':
        return e.change === 'DOWN' ? undefined : this.#offers.maintenanceChanged(e.agentIds);
      case 'STATUS_UPDATE':
        return this.#tasks.statusUpdate(e.agentId, e.frameworkId, e.status);
      case 'AGENT_REFUSED_MESSAGE': {
        // A launch the agent could not read: the task will never run; its framework hears TASK_ERROR.
        const refused = e.refused;
        if (refused.type === 'RUN_TASK' && refused.id !== undefined) this.#tasks.launchRefused(e.agentId, { ...refused, id: refused.id });
        return undefined;
      }
      default:
        return undefined;
    }
  }

  stop(): void {
    this.#running = false;
    this.#offers.stop();
    this.#streams.stop();
  }

  // ---- Views (the queries port) ----------------------------------------------------------------

  offersOfFramework(frameworkId: string): Offer[] {
    return this.#offers.offersOfFramework(frameworkId);
  }

  offeredOnAgent(agentId: string): Resource[] {
    return this.#offers.offeredOnAgent(agentId);
  }

  /** Non-terminal tasks' resources of a framework, over every agent. */
  allocatedToFramework(frameworkId: string): Resource[] {
    let sum: Resource[] = [];
    for (const e of this.#agents.all()) for (const t of e.tasks?.values() ?? []) if (t.framework_id.value === frameworkId && !isTerminal(t.state)) sum = addResources(sum, t.resources);
    return sum;
  }

  offerJson(o: Offer): Record<string, unknown> {
    return this.#offers.offerJson(o);
  }

  /** Changes whenever the outstanding offers or inverse offers change (a part of the model's generation). */
  get offerStamp(): string {
    return this.#offers.offerStamp;
  }

  /** Offers sent and not yet accepted, declined or rescinded. */
  get outstandingOffers(): number {
    return this.#offers.outstandingOffers;
  }

  /** Inverse offers sent and not yet answered or rescinded. */
  get outstandingInverseOffers(): number {
    return this.#offers.outstandingInverseOffers;
  }

  inverseOffersOfFramework(frameworkId: string): Offer[] {
    return this.#offers.inverseOffersOfFramework(frameworkId);
  }

  /** An InverseOffer as Mesos writes it. */
  inverseOfferJson(o: Offer): Record<string, unknown> {
    return this.#offers.inverseOfferJson(o);
  }

  // ---- Calls (the commands port) ---------------------------------------------------------------

  /** SUBSCRIBE (frameworks-streams.ts): `open` starts the 200 stream once the framework is durable. */
  subscribe(info: FrameworkInfo, open: () => FrameworkStream, access: Access = openAccess()): Promise<CallResult> {
    return this.#streams.subscribe(info, open, access);
  }

  /** Any other scheduler call (frameworks-calls.ts). */
  call(call: SchedulerCall, streamId: string | undefined, access: Access = openAccess()): CallResult | Promise<CallResult> {
    return this.#calls.call(call, streamId, access);
  }

  /** The operator's TEARDOWN (authorized by the caller): removes the framework as its own TEARDOWN does. */
  teardown(frameworkId: string): Promise<CallResult> {
    return this.#streams.remove(frameworkId);
  }

  /** A scheduler's acknowledgement of an update (frameworks-tasks.ts). */
  acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string): { ok: true } | { ok: false; reason: string } {
    return this.#tasks.acknowledge(agentId, frameworkId, taskId, uuid);
  }

  /** Runs an allocation soon (batched: many events in one turn make one allocation). */
  allocateSoon(): void {
    this.#offers.allocateSoon();
  }
}

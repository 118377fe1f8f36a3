/**
 * A leadership term: everything that exists only while this master leads. `Term.start`
 * builds it from the registry (the model, the services, their timers, the agent sessions and
 * the operator streams); `dispose()` drops all of it. The process (main.ts) keeps only HTTP
 * listening, config and leadership, and starts a term when elected.
 *
 * Inside, the services never call each other: registration, maintenance, drain, and
 * frameworks-and-offers share the model (agent table, frameworks, machines) and talk through
 * the ports (agent link, registry via the commit path, the bus, the clock).
 */

import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import { agentMachineId } from '../../shared/machine.js';
import { AgentSessions } from '../api/agent-sessions.js';
import { AgentTable } from '../cores/agents.js';
import { Commits, type CommitInstruments } from './commit.js';
import type { MasterConfig } from '../process/config.js';
import { DrainService } from '../services/drain.js';
import { MasterEvents } from './events.js';
import { MaintenanceState } from '../cores/maintenance.js';
import { MaintenanceService } from '../services/maintenance.js';
import { MaintenancePlans } from '../plans/driver.js';
import type { MaintenanceHooks } from '../plans/hooks.js';
import { masterInfoJson, type MasterIdentity } from '../process/master-info.js';
import { createOperatorStreams, type OperatorStreams } from '../api/operator-stream.js';
import { AgentsService } from '../services/agents.js';
import type { Registry, RegistryState } from '../registry/registry.js';
import { FrameworksService, type FrameworkInstruments } from '../services/frameworks.js';
import { MasterSecurity } from '../security/security.js';
import { attributeValues } from '../../shared/acls.js';

export interface TermOptions {
  config: MasterConfig;
  /** The process's authentication, ACLs and audit log (open when not given: tests). */
  security?: MasterSecurity;
  /** The master's maintenance hooks, loaded at start (none when not given). */
  hooks?: MaintenanceHooks;
  registry: Registry;
  identity: MasterIdentity;
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
  /** The process's metrics (master/metrics.ts), fed where registry writes and acknowledgements happen. */
  instruments?: { commits?: CommitInstruments; frameworks?: FrameworkInstruments } | undefined;
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

export class Term {
  readonly config: MasterConfig;
  readonly security: MasterSecurity;
  readonly identity: MasterIdentity;
  readonly epoch: bigint;
  readonly processStartMs: number;
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
  readonly sessions: AgentSessions;
  readonly streams: OperatorStreams;
  readonly #o: TermOptions;
  readonly #log: Logger;
  readonly #listeners: Array<() => void> = [];
  #state: TermState = 'SERVING';

  /** Recovers the model from the registry, then starts every service. */
  static async start(o: TermOptions): Promise<Term> {
    const state = await o.registry.recover();
    return new Term(o, state);
  }

  private constructor(o: TermOptions, state: RegistryState) {
    this.#o = o;
    this.config = o.config;
    this.security = o.security ?? MasterSecurity.open();
    this.identity = o.identity;
    this.epoch = o.epoch;
    this.processStartMs = o.processStartMs;
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
      masterId: o.identity.id,
      pingIntervalMs: o.config.agentPingTimeoutMs,
      maxPingTimeouts: o.config.maxAgentPingTimeouts,
      security: this.security,
      agents: this.agents,
      maintenance: this.maintenance,
      log: log.child({ component: 'registration' }),
    });
    const frameworks = new FrameworksService({
      ...ports,
      masterId: o.identity.id,
      masterInfo: () => masterInfoJson(o.identity),
      startTimeMs: this.electedMs,
      allocationIntervalMs: o.config.allocationIntervalMs,
      agents: this.agents,
      maintenance: this.maintenance,
      link: agentsService,
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

    this.#listeners.push(frameworks.start(), drain.start(), agentsService.start());
    this.sessions = new AgentSessions(agentsService, () => this.#state === 'SERVING', o.epoch, log.child({ component: 'agent-sessions' }));
    this.streams = createOperatorStreams(this, o.clock, log.child({ component: 'operator-stream' }));
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

  /** MasterInfo of this master. */
  masterInfo(): Record<string, unknown> {
    return masterInfoJson(this.identity);
  }

  /** The other masters this one knows (HA standbys); none for a single master. */
  otherMasters(): ReadonlyArray<Record<string, unknown>> {
    return this.#o.otherMasters?.() ?? [];
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

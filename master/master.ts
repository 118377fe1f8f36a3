/**
 * The master: ties the agent table (pure decisions), the registry (durable writes) and the
 * agent connections (the ws shell) together. Every durable change is committed before the
 * agent or operator hears about it. This is also where the scheduler API (next issue) will
 * launch, kill and acknowledge: runTask, killTask, acknowledge.
 */

import { type DrydockError } from '../shared/errors.js';
import { randomUUID } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import type { Clock, TimerHandle } from '../shared/clock.js';
import { nowNs } from '../shared/duration.js';
import type { Logger } from '../shared/log.js';
import type { FrameworkInfo, KillPolicy, TaskInfo } from '../shared/mesos.js';
import { assertNever, CLOSE_CODES, type AgentMessage, type MasterMessage } from '../shared/protocol.js';
import { AgentTable, type ForeignTaskReason, type RegistrationRequest, type UnreachableReason } from './agents.js';
import type { MasterConfig } from './config.js';
import type { Registry } from './registry/registry.js';
import { MasterEvents } from './events.js';
import { agentMachineId, machineKey, type MachineId } from '../shared/machine.js';
import { MaintenanceState, validateSchedule, validateTransition, type Schedule } from './maintenance.js';
import { masterInfoJson } from './operator-api.js';
import { Schedulers } from './schedulers.js';
import { AGENT_GONE_MESSAGE, Drainer, machineText } from './drainer.js';

/** One agent session as the master sees it; agent-sessions.ts implements it over ws. */
export interface AgentConnection {
  /** Unique per master process. */
  readonly id: number;
  /** Sends if the socket is open; drops otherwise (the agent re-registers and resends). */
  send(msg: MasterMessage): void;
  /** Graceful close with a code and a reason (at most 123 bytes; the shell truncates). */
  close(code: number, reason: string): void;
  /** Drops the socket without a close handshake (the peer is not answering anyway). */
  terminate(): void;
  ping(): void;
}

/** What an agent registering from a DOWN machine is told, backticks included (Mesos §4.7). */
export const MACHINE_DOWN_MESSAGE = 'Machine is `DOWN`';
/** The ShutdownMessage (and the removal reason) of `/machine/down` (Mesos §2). */
export const MACHINE_DOWN_REMOVAL = "Operator initiated 'Machine DOWN'";

/** The master's lifecycle. */
export type MasterState = 'RECOVERING' | 'SERVING' | 'STOPPING' | 'STOPPED';

/** Outcome of runTask / killTask / acknowledge: expected failures are values. */
export type AgentCommandResult = { ok: true } | { ok: false; reason: 'UNKNOWN_AGENT' | 'AGENT_NOT_CONNECTED' | 'UNKNOWN_TASK' | 'UUID_MISMATCH' };

export interface MasterOptions {
  config: MasterConfig;
  registry: Registry;
  clock: Clock;
  logger: Logger;
}

export class Master {
  readonly config: MasterConfig;
  /** Mesos MasterInfo.id: a fresh UUID per master process. Agent ids are derived from it. */
  readonly id: string = randomUUID();
  readonly table: AgentTable;
  /** Everything that happens, for the scheduler API and the operator event stream. */
  readonly events: MasterEvents;
  /** The scheduler API: frameworks, their streams, offers and tasks' updates. */
  readonly schedulers: Schedulers;
  /** Maintenance schedule, machine modes, agents by machine, inverse-offer answers (pure core). */
  readonly maintenance = new MaintenanceState();
  /** Agent draining, deactivation and marking gone (drain.ts, drainer.ts). */
  readonly drainer: Drainer;
  readonly startTimeMs: number;
  /** Status updates and registered tasks refused because they spoke for another agent (for metrics). */
  refusedReports = 0;
  #state: MasterState = 'RECOVERING';
  readonly #registry: Registry;
  readonly #clock: Clock;
  readonly #log: Logger;
  /** Every open session, registered or not. */
  readonly #connections = new Map<number, AgentConnection>();
  /** Session id -> the agent it registered as. */
  readonly #sessionAgent = new Map<number, string>();
  #nextAgent = 0;
  #ticker: TimerHandle | undefined;
  #recoveredTimer: TimerHandle | undefined;
  #port: number;
  /** Maintenance operations run one at a time: each validates against the state the previous one left (Mesos' registrar queue). */
  #maintenanceQueue: Promise<unknown> = Promise.resolve();

  constructor(opts: MasterOptions) {
    this.config = opts.config;
    this.#registry = opts.registry;
    this.#clock = opts.clock;
    this.#log = opts.logger;
    this.startTimeMs = opts.clock.now();
    this.events = new MasterEvents((error, event) => this.#log.error('event listener failed', { event: event.type, error }));
    this.#port = opts.config.port;
    this.table = new AgentTable({
      pingTimeoutMs: opts.config.agentPingTimeoutMs,
      maxPingTimeouts: opts.config.maxAgentPingTimeouts,
      reregisterTimeoutMs: opts.config.agentReregisterTimeoutMs,
    });
    this.schedulers = new Schedulers(this, opts.registry, opts.clock, opts.logger.child({ component: 'schedulers' }), opts.config.allocationIntervalMs);
    this.drainer = new Drainer({ master: this, registry: opts.registry, clock: opts.clock, log: opts.logger.child({ component: 'drain' }) });
    // DRAIN_AGENT refuses an agent whose machine is in the maintenance schedule (Mesos §4.8).
    this.drainer.scheduledMachine = (agentId) => {
      const m = this.maintenance.machineOfAgent(agentId);
      return m?.unavailability === undefined ? undefined : machineText(m.id);
    };
  }

  get state(): MasterState {
    return this.#state;
  }

  /** The port actually bound (differs from --port when it was 0). */
  get port(): number {
    return this.#port;
  }

  /** The IPv4 address the master advertises: --ip, or this machine's first external one when binding 0.0.0.0. */
  get advertisedIp(): string {
    return advertisedIp(this.config.ip);
  }

  /** Loads the registry into the agent table. */
  async recover(): Promise<void> {
    const state = await this.#registry.recover();
    this.table.recover(state.agents, this.#clock.now());
    this.table.recoverGone((state.goneAgents ?? []).map((g) => g.id));
    this.schedulers.recover(state.frameworks);
    this.maintenance.recover(state.maintenance);
    for (const a of state.agents) this.maintenance.agentAdded(a.id, agentMachineId(a.info.hostname, a.info.ip));
    const counts = this.table.counts();
    this.#log.info('recovered', { agents: counts.recovered, unreachable: counts.unreachable });
  }

  /** Starts liveness checks and the re-registration deadline; call once listening on `port`. */
  start(port: number): void {
    this.#port = port;
    this.#state = 'SERVING';
    this.#scheduleTick();
    this.schedulers.start();
    const deadline = this.table.recoveredDeadlineMs;
    if (deadline !== undefined) {
      this.#recoveredTimer = this.#clock.setTimer(deadline - this.#clock.now(), () => this.#expireRecovered());
    }
  }

  /** Closes every session with GOING_AWAY and closes the registry after flushing it. */
  async stop(): Promise<void> {
    if (this.#state === 'STOPPING' || this.#state === 'STOPPED') return;
    this.#state = 'STOPPING';
    this.#ticker?.cancel();
    this.#recoveredTimer?.cancel();
    this.schedulers.stop();
    for (const conn of this.#connections.values()) conn.close(CLOSE_CODES.GOING_AWAY, 'master shutting down');
    await this.#registry.close();
    this.#state = 'STOPPED';
  }

  /** How many sessions are open. */
  get openSessions(): number {
    return this.#connections.size;
  }

  // ---- Session events (from agent-sessions.ts) -------------------------------------------

  connected(conn: AgentConnection): void {
    this.#connections.set(conn.id, conn);
  }

  disconnected(conn: AgentConnection): void {
    this.#connections.delete(conn.id);
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId === undefined) return;
    this.#sessionAgent.delete(conn.id);
    if (this.table.disconnect(agentId, conn.id, this.#clock.now())) {
      this.#log.info('agent disconnected', { agentId });
      this.events.emit({ type: 'AGENT_DISCONNECTED', agentId });
      this.schedulers.agentDisconnected(agentId);
    }
  }

  pong(conn: AgentConnection): void {
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId !== undefined) this.table.pong(agentId);
  }

  /** One decoded message. The shell runs these one at a time per session. */
  async handle(conn: AgentConnection, msg: AgentMessage): Promise<void> {
    switch (msg.type) {
      case 'REGISTER':
        return this.#register(conn, msg);
      case 'STATUS_UPDATE': {
        const agentId = this.#sessionAgent.get(conn.id);
        if (agentId === undefined) {
          this.#log.warn('status update from unregistered session', { sessionId: conn.id, taskId: msg.status.task_id.value });
          return;
        }
        const foreign = this.table.foreignTask(agentId, msg.framework_id, msg.status.task_id.value, msg.status.agent_id?.value);
        if (foreign !== undefined) {
          this.#refuseForeign(conn, agentId, msg.framework_id, msg.status.task_id.value, msg.status.agent_id?.value, foreign);
          return;
        }
        if (!this.schedulers.beforeStatusUpdate(agentId, msg.framework_id, msg.status)) return;
        const previous = this.table.taskState(agentId, msg.framework_id, msg.status.task_id.value);
        this.table.updateStatus(agentId, msg.framework_id, msg.status);
        if (previous !== msg.status.state) {
          this.events.emit({ type: 'TASK_UPDATED', agentId, frameworkId: msg.framework_id, taskId: msg.status.task_id.value, status: msg.status, state: msg.status.state });
        }
        // Forwarded even when retried (same uuid): at-least-once, schedulers dedupe by uuid.
        this.schedulers.statusUpdate(agentId, msg.framework_id, msg.status);
        void this.drainer.check(agentId);
        this.#log.debug('status update', { agentId, frameworkId: msg.framework_id, taskId: msg.status.task_id.value, state: msg.status.state, uuid: msg.status.uuid });
        return;
      }
      default:
        return assertNever(msg);
    }
  }

  // ---- Commands the scheduler API will call -----------------------------------------------

  /** Records the task as TASK_STAGING on the agent and sends it RUN_TASK. */
  runTask(agentId: string, frameworkId: string, framework: FrameworkInfo, task: TaskInfo): AgentCommandResult {
    const target = this.#connectionOf(agentId);
    if (!target.ok) return target;
    this.table.addTask(agentId, frameworkId, task);
    this.events.emit({ type: 'TASK_ADDED', agentId, frameworkId, taskId: task.task_id.value });
    target.conn.send({ type: 'RUN_TASK', framework_id: frameworkId, framework, task });
    return { ok: true };
  }

  /** Sends KILL_TASK; `killPolicy` overrides the task's own (drain's max_grace_period). */
  killTask(agentId: string, frameworkId: string, taskId: string, killPolicy?: KillPolicy): AgentCommandResult {
    const target = this.#connectionOf(agentId);
    if (!target.ok) return target;
    const msg: MasterMessage = { type: 'KILL_TASK', framework_id: frameworkId, task_id: taskId };
    if (killPolicy !== undefined) msg.kill_policy = killPolicy;
    target.conn.send(msg);
    return { ok: true };
  }

  /**
   * A scheduler acknowledged the update `uuid`: forwards ACKNOWLEDGE to the agent, and moves
   * the task to completed if that update was terminal. Like Mesos, an acknowledgement for a
   * disconnected agent is dropped (the agent resends the update and it is acknowledged again).
   */
  acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string): AgentCommandResult {
    const target = this.#connectionOf(agentId);
    if (!target.ok) return target;
    const outcome = this.table.acknowledge(agentId, frameworkId, taskId, uuid);
    if (outcome === 'UNKNOWN_TASK' || outcome === 'UUID_MISMATCH') return { ok: false, reason: outcome };
    if (outcome === 'UNKNOWN_AGENT') return { ok: false, reason: 'UNKNOWN_AGENT' };
    target.conn.send({ type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
    // Mesos re-checks a draining agent on every acknowledgement: this may be the last one.
    void this.drainer.check(agentId);
    return { ok: true };
  }

  /** Tells the agent to forget an update the master consumed itself (the scheduler never sees it). */
  acknowledgeOnAgent(agentId: string, frameworkId: string, taskId: string, uuid: string): void {
    const target = this.#connectionOf(agentId);
    if (target.ok) target.conn.send({ type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
  }

  /** Sends a message to the agent's open session; false when it has none (the message is lost, as in Mesos). */
  sendToAgent(agentId: string, msg: MasterMessage): boolean {
    const target = this.#connectionOf(agentId);
    if (!target.ok) return false;
    target.conn.send(msg);
    return true;
  }

  /**
   * The agent was marked gone (durably, by the drainer): its tasks end for their frameworks,
   * it is told SHUTDOWN `message` and leaves the table; its id is refused from now on. Mesos
   * sends no AGENT_REMOVED event for this.
   */
  agentGone(agentId: string, message: string): void {
    this.schedulers.agentGone(agentId);
    const sessionId = this.table.get(agentId)?.sessionId;
    if (sessionId !== undefined) {
      this.#connections.get(sessionId)?.send({ type: 'SHUTDOWN', message });
      this.#closeSession(sessionId, CLOSE_CODES.SHUTDOWN, message);
    }
    this.maintenance.agentRemoved(agentId);
    this.table.markGone(agentId);
  }

  /** MasterInfo as GET_MASTER and SUBSCRIBED write it. */
  masterInfo(): Record<string, unknown> {
    return masterInfoJson(this);
  }

  // ---- Maintenance (Mesos Master::Http update/start/stopMaintenance, reference §2) ---------

  /**
   * UPDATE_MAINTENANCE_SCHEDULE / `POST /maintenance/schedule`: validate (all or nothing),
   * commit the new schedule and modes, then apply; offers and inverse offers of agents on every
   * touched machine are rescinded so that new ones carry (or stop carrying) unavailability.
   * Resolves with the validation error, or undefined once durable and applied.
   */
  updateMaintenanceSchedule(schedule: Schedule): Promise<DrydockError | undefined> {
    return this.#serializeMaintenance(async () => {
      const bad = validateSchedule(schedule, this.maintenance.machines);
      if (bad !== undefined) return bad;
      await this.#registry.updateSchedule(this.maintenance.durableSchedule(schedule));
      const change = this.maintenance.applySchedule(schedule);
      this.#log.info('maintenance schedule updated', { windows: schedule.windows.length, machines: change.machineKeys.length, agents: change.agentIds.length });
      this.schedulers.maintenanceChanged(change.agentIds);
      return undefined;
    });
  }

  /**
   * START_MAINTENANCE / `POST /machine/down`: DRAINING machines go DOWN (durably), and every
   * registered agent on them, connected or not, is told SHUTDOWN and removed. Like Mesos, the
   * answer does not wait for the removals' registry writes.
   */
  startMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    return this.#serializeMaintenance(async () => {
      const bad = validateTransition('DOWN', ids, this.maintenance.machines);
      if (bad !== undefined) return bad;
      await this.#registry.startMaintenance(ids.map(machineKey));
      const change = this.maintenance.applyDown(ids);
      this.#log.info('machines down', { machines: change.machineKeys.length, agents: change.agentIds.length });
      for (const agentId of change.agentIds) {
        if (this.table.get(agentId)?.phase === 'REGISTERED') this.#removeAgent(agentId, MACHINE_DOWN_REMOVAL);
      }
      return undefined;
    });
  }

  /** STOP_MAINTENANCE / `POST /machine/up`: DOWN machines become UP and leave the schedule; their agents may register again. */
  stopMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    return this.#serializeMaintenance(async () => {
      const bad = validateTransition('UP', ids, this.maintenance.machines);
      if (bad !== undefined) return bad;
      await this.#registry.stopMaintenance(ids.map(machineKey));
      const change = this.maintenance.applyUp(ids);
      this.#log.info('machines up', { machines: change.machineKeys.length });
      this.schedulers.maintenanceChanged(change.agentIds);
      return undefined;
    });
  }

  #serializeMaintenance<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#maintenanceQueue.then(fn, fn);
    this.#maintenanceQueue = run.catch(() => undefined);
    return run;
  }

  /**
   * Mesos `removeSlave`: SHUTDOWN to the agent, its tasks TASK_LOST (REASON_AGENT_REMOVED,
   * `Agent <hostname> removed: <reason>`), FAILURE to every framework, AGENT_REMOVED to
   * operator subscribers, its offers rescinded, and the agent (with its drain and deactivation
   * state) forgotten by the registry. Listeners of AGENT_REMOVED drop their own per-agent state.
   */
  #removeAgent(agentId: string, reason: string): void {
    const entry = this.table.get(agentId);
    if (entry === undefined) return;
    const sessionId = entry.sessionId;
    const conn = sessionId === undefined ? undefined : this.#connections.get(sessionId);
    conn?.send({ type: 'SHUTDOWN', message: reason });
    this.schedulers.agentTasksLost(agentId, `Agent ${entry.info.hostname} removed: ${reason}`);
    this.table.remove(agentId);
    this.maintenance.agentRemoved(agentId);
    if (sessionId !== undefined) {
      this.#sessionAgent.delete(sessionId);
      conn?.close(CLOSE_CODES.SHUTDOWN, reason);
    }
    this.#registry.removeAgent(agentId).catch((e: unknown) => this.#log.error('registry write failed', { agentId, op: 'REMOVE_AGENT', error: e }));
    this.#log.info('agent removed', { agentId, reason });
    this.events.emit({ type: 'AGENT_REMOVED', agentId, reason });
    this.schedulers.agentRemoved(agentId);
  }

  // ---- Internals --------------------------------------------------------------------------

  #connectionOf(agentId: string): { ok: true; conn: AgentConnection } | { ok: false; reason: 'UNKNOWN_AGENT' | 'AGENT_NOT_CONNECTED' } {
    const entry = this.table.get(agentId);
    if (entry === undefined) return { ok: false, reason: 'UNKNOWN_AGENT' };
    const conn = entry.sessionId === undefined ? undefined : this.#connections.get(entry.sessionId);
    if (conn === undefined || !entry.connected) return { ok: false, reason: 'AGENT_NOT_CONNECTED' };
    return { ok: true, conn };
  }

  async #register(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>): Promise<void> {
    if (this.#state !== 'SERVING') return;
    // Mesos `_registerSlave` / `_reregisterSlave`: an agent from a DOWN machine is shut down, nothing admitted.
    if (this.#refuseIfDown(conn, msg)) return;
    // A gone agent is refused forever, nothing admitted (Mesos: ShutdownMessage `Agent has been marked gone`).
    if (msg.agent_id !== undefined && this.table.isGone(msg.agent_id)) {
      this.#log.warn('agent refused', { reason: AGENT_GONE_MESSAGE, agentId: msg.agent_id, hostname: msg.agent.hostname, ip: msg.agent.ip });
      conn.send({ type: 'SHUTDOWN', message: AGENT_GONE_MESSAGE });
      conn.close(CLOSE_CODES.SHUTDOWN, AGENT_GONE_MESSAGE);
      return;
    }
    // A REGISTER repeated on a registered session without an id means the same agent.
    const claimed = msg.agent_id ?? this.#sessionAgent.get(conn.id);
    const req: RegistrationRequest = { agentId: claimed, info: msg.agent, version: msg.version, capabilities: msg.capabilities };
    const plan = this.table.planRegistration(req, nowNs(this.#clock.now()), () => `${this.id}-S${this.#nextAgent++}`);

    const writes: Array<Promise<void>> = [];
    if (plan.replaces !== undefined) writes.push(this.#registry.removeAgent(plan.replaces));
    if (plan.write === 'ADMIT') writes.push(this.#registry.admitAgent(plan.durable));
    else if (plan.write === 'READMIT') writes.push(this.#registry.markAgentReachable(plan.durable));
    try {
      await Promise.all(writes);
    } catch (e) {
      this.#log.error('registry write failed', { agentId: plan.agentId, op: plan.write, error: e });
      // 1011: internal error; the agent backs off and retries.
      conn.close(1011, 'master could not record the registration');
      return;
    }
    if (this.#state !== 'SERVING') return;
    // The machine went DOWN while the admission was committing: undo it and refuse.
    if (this.#refuseIfDown(conn, msg)) {
      if (plan.write === 'ADMIT' && plan.kind !== 'REREGISTERED' && plan.kind !== 'RECOVERED') {
        this.#registry.removeAgent(plan.agentId).catch((e: unknown) => this.#log.error('registry write failed', { agentId: plan.agentId, op: 'REMOVE_AGENT', error: e }));
      }
      return;
    }

    // A registration speaks only for its own agent: tasks that name another agent, or that the
    // master knows on another agent, are left out.
    const tasks = msg.tasks.filter((r) => {
      const foreign = this.table.foreignTask(plan.agentId, r.framework_id, r.task.task_id.value, r.task.agent_id.value);
      if (foreign === 'TOO_MANY_TASKS' || foreign === undefined) return true;
      this.#refuseForeign(conn, plan.agentId, r.framework_id, r.task.task_id.value, r.task.agent_id.value, foreign);
      return false;
    });
    const replacedSession = plan.replaces === undefined ? undefined : this.table.get(plan.replaces)?.sessionId;
    const now = this.#clock.now();
    const tasksBefore = this.table.get(plan.agentId)?.tasks;
    const before = tasksBefore === undefined ? undefined : new Map(tasksBefore);
    const { previousSessionId } = this.table.applyRegistration(plan, req, tasks, conn.id, nowNs(now));
    if (plan.replaces !== undefined) this.maintenance.agentRemoved(plan.replaces);
    this.maintenance.agentAdded(plan.agentId, agentMachineId(msg.agent.hostname, msg.agent.ip));
    if (plan.replaces !== undefined) {
      this.#log.info('agent removed', { agentId: plan.replaces, reason: 'REPLACED', by: plan.agentId });
      this.events.emit({ type: 'AGENT_REMOVED', agentId: plan.replaces, reason: 'REPLACED' });
      if (replacedSession !== undefined) this.#closeSession(replacedSession, CLOSE_CODES.REPLACED, `agent ${plan.agentId} registered at this address`);
    }
    if (previousSessionId !== undefined) this.#closeSession(previousSessionId, CLOSE_CODES.REPLACED, 'a newer session for this agent replaced this one');
    this.#sessionAgent.set(conn.id, plan.agentId);

    if (!this.#connections.has(conn.id)) {
      // The socket closed while the write was committing: the agent is admitted but disconnected.
      this.#sessionAgent.delete(conn.id);
      this.table.disconnect(plan.agentId, conn.id, now);
    } else {
      conn.send({
        type: 'REGISTERED',
        request_id: msg.request_id,
        agent_id: plan.agentId,
        master_id: this.id,
        ping_interval_ms: this.config.agentPingTimeoutMs,
        max_ping_timeouts: this.config.maxAgentPingTimeouts,
      });
    }
    const fields = { agentId: plan.agentId, kind: plan.kind, hostname: msg.agent.hostname, ip: msg.agent.ip, port: msg.agent.port, tasks: msg.tasks.length };
    if (plan.kind === 'NEW') this.#log.info('agent registered', fields);
    else this.#log.info('agent reregistered', fields);
    // As Mesos: AGENT_ADDED for the add path (new, after a master restart, back from
    // unreachable, an id the master never saw); a known agent reconnecting is not "added".
    if (plan.kind === 'REREGISTERED') this.events.emit({ type: 'AGENT_RECONNECTED', agentId: plan.agentId });
    else this.events.emit({ type: 'AGENT_ADDED', agentId: plan.agentId });
    if (plan.replaces !== undefined) this.schedulers.agentRemoved(plan.replaces);
    this.schedulers.agentRegistered(plan.agentId, before, msg.frameworks);
    this.drainer.agentRegistered(plan.agentId);
  }

  /**
   * A session spoke of a task that is not its agent's: the message is dropped (not recorded,
   * not forwarded, not acknowledged), logged and counted. The session stays: a confused agent
   * is not cut off from its own tasks.
   */
  #refuseForeign(conn: AgentConnection, agentId: string, frameworkId: string, taskId: string, claimedAgentId: string | undefined, reason: ForeignTaskReason): void {
    this.refusedReports++;
    this.#log.warn('agent report refused', { sessionId: conn.id, agentId, claimedAgentId, frameworkId, taskId, reason });
  }

  /** Sends SHUTDOWN `Machine is \`DOWN\`` and closes the session when the agent's machine is DOWN. */
  #refuseIfDown(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>): boolean {
    if (!this.maintenance.isDown(agentMachineId(msg.agent.hostname, msg.agent.ip))) return false;
    this.#log.warn('agent refused', { reason: MACHINE_DOWN_MESSAGE, agentId: msg.agent_id, hostname: msg.agent.hostname, ip: msg.agent.ip });
    conn.send({ type: 'SHUTDOWN', message: MACHINE_DOWN_MESSAGE });
    conn.close(CLOSE_CODES.SHUTDOWN, MACHINE_DOWN_MESSAGE);
    return true;
  }

  #closeSession(sessionId: number, code: number, reason: string): void {
    this.#sessionAgent.delete(sessionId);
    this.#connections.get(sessionId)?.close(code, reason);
  }

  #scheduleTick(): void {
    // One timer for all sessions, re-armed each round: per-agent timers would be 10,000 timers.
    this.#ticker = this.#clock.setTimer(this.config.agentPingTimeoutMs, () => {
      if (this.#state !== 'SERVING') return;
      this.#tick();
      this.#scheduleTick();
    });
  }

  #tick(): void {
    const decision = this.table.tick(this.#clock.now());
    for (const agentId of decision.ping) {
      const sessionId = this.table.get(agentId)?.sessionId;
      if (sessionId !== undefined) this.#connections.get(sessionId)?.ping();
    }
    for (const u of decision.unreachable) this.#markUnreachable(u.agentId, u.reason);
  }

  #expireRecovered(): void {
    if (this.#state !== 'SERVING') return;
    for (const agentId of this.table.expireRecovered(this.#clock.now())) this.#markUnreachable(agentId, 'REREGISTER_TIMEOUT');
  }

  #markUnreachable(agentId: string, reason: UnreachableReason): void {
    const timeNs = nowNs(this.#clock.now());
    const r = this.table.markUnreachable(agentId, timeNs);
    if (r === undefined) return;
    if (r.sessionId !== undefined) {
      this.#sessionAgent.delete(r.sessionId);
      // It stopped answering pings: no close handshake to wait for.
      this.#connections.get(r.sessionId)?.terminate();
    }
    this.#log.warn('agent unreachable', { agentId, reason });
    this.events.emit({ type: 'AGENT_UNREACHABLE', agentId });
    this.schedulers.agentUnreachable(agentId);
    this.#registry.markAgentUnreachable(agentId, timeNs).catch((e: unknown) => {
      this.#log.error('registry write failed', { agentId, op: 'MARK_UNREACHABLE', error: e });
    });
  }
}

/** --ip unless it is the wildcard; then the first non-internal IPv4 address, else loopback. */
export function advertisedIp(ip: string): string {
  if (ip !== '0.0.0.0' && ip !== '') return ip;
  for (const addrs of Object.values(networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}

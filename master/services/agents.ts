/**
 * The agents service (registration): agent sessions, (re-)registration, liveness, unreachability,
 * removal, and what a registered session may say (its own agent's status updates and
 * conditions). The agent
 * table (cores/agents.ts) decides; this shell makes the registry write first (term/commit.ts), applies,
 * and announces on the bus. It is also the term's AgentLink: other services send to agents
 * by id through it.
 */

import type { TimerHandle } from '../../shared/clock.js';
import { nowNs } from '../../shared/duration.js';
import { agentMachineId } from '../../shared/machine.js';
import { assertNever, CLOSE_CODES, MASTER_CAPABILITIES, MAX_REFUSAL_REASON, type AgentMessage, type MasterMessage, type Refusal } from '../../shared/protocol.js';
import { principalRefusal, takeoverDecision, type AgentEntry, type ConditionChange, type ForeignTaskReason, type ProbeResult, type RegistrationRequest } from '../cores/agents.js';
import type { UnreachableReason } from '../cores/liveness.js';
import type { Task } from '../../shared/mesos.js';
import { agentObject } from '../security/acl-objects.js';
import { AGENT_GONE_MESSAGE } from '../cores/drain.js';
import type { MasterSecurity } from '../security/security.js';
import { describeObject } from '../../shared/acls.js';
import { fail } from '../../shared/errors.js';
import type { AgentConnection, AgentInstruments, AgentLink, AgentSessionEvents, ServiceModel, ServicePorts } from '../term/ports.js';
import type { AgentRemoval } from '../registry/registry.js';
import { tombstoneKey } from '../cores/task-fate.js';
import { MACHINE_DOWN_MESSAGE, MACHINE_DOWN_REMOVAL } from '../../shared/protocol.js';

export { MACHINE_DOWN_MESSAGE, MACHINE_DOWN_REMOVAL };

export interface AgentsServiceOptions extends ServicePorts, ServiceModel {
  /** This master's id: new agent ids are derived from it. */
  masterId: string;
  /** The master pings this often; agents give up after `maxPingTimeouts` silent intervals. */
  pingIntervalMs: number;
  maxPingTimeouts: number;
  /** `--authenticate_agents` (a second live session is refused even from the agent's own address) and the `register_agents` ACL. */
  security: MasterSecurity;
  /** How long a live session has to answer the ping that decides a takeover (ms). Default: the ping interval, at most TAKEOVER_PROBE_MS. */
  takeoverProbeMs?: number;
  /** What the metrics hear of agents marked unreachable (none in unit tests). */
  instruments?: AgentInstruments | undefined;
}

/**
 * The longest wait for a live session's pong when another session claims its id. A live agent
 * answers in a round trip; a dead socket never does, and a restarted agent waits this long.
 */
export const TAKEOVER_PROBE_MS = 2_000;

/** Why an agent was refused, as the `agent refused` log line's `reason` says it. */
export type AgentRefusal = 'NOT_AUTHORIZED' | 'PRINCIPAL_MISMATCH' | 'ID_IN_USE';

/** Probes in a row for one registration, at most: the live session changing under each would otherwise go on. */
const MAX_TAKEOVER_PROBES = 3;

const NO_TASKS: readonly Task[] = Object.freeze([]);

/** The tasks an agent's entry holds, as a list (a shared empty one when it has none: most registrations). */
function tasksOf(entry: AgentEntry | undefined): readonly Task[] {
  return entry?.tasks === undefined || entry.tasks.size === 0 ? NO_TASKS : [...entry.tasks.values()];
}

export class AgentsService implements AgentLink, AgentSessionEvents {
  readonly #o: AgentsServiceOptions;
  /** Every open session, registered or not. */
  readonly #connections = new Map<number, AgentConnection>();
  /** Session id -> the agent it registered as. */
  readonly #sessionAgent = new Map<number, string>();
  /** Agents whose unreachability is being written (one write per agent at a time). */
  readonly #markingUnreachable = new Set<string>();
  /** Agent id -> the registration for it under way (they run one at a time per id). */
  readonly #registering = new Map<string, Promise<void>>();
  /** Session id -> what waits for its next pong (takeover probes). */
  readonly #probes = new Map<number, Array<(answered: boolean) => void>>();
  #nextAgent = 0;
  #ticker: TimerHandle | undefined;
  #recoveredTimer: TimerHandle | undefined;
  #running = false;
  /** Status updates and registered tasks refused because they spoke for another agent (for metrics). */
  refusedReports = 0;

  constructor(o: AgentsServiceOptions) {
    this.#o = o;
  }

  /** Starts liveness rounds and the deadline of recovered agents; listens for machines going DOWN. */
  start(): () => void {
    this.#running = true;
    this.#scheduleTick();
    const deadline = this.#o.agents.recoveredDeadlineMs;
    if (deadline !== undefined) this.#recoveredTimer = this.#o.clock.setTimer(deadline - this.#o.clock.now(), () => this.#expireRecovered());
    return this.#o.bus.subscribe((e) => {
      // START_MAINTENANCE: every registered agent on the machines is shut down and removed (Mesos §2).
      if (e.type === 'MACHINE_UPDATED' && e.change === 'DOWN') {
        for (const agentId of e.agentIds) if (this.#o.agents.get(agentId)?.phase === 'REGISTERED') void this.#removeAgent(agentId, MACHINE_DOWN_REMOVAL);
      }
    });
  }

  /** Stops timers and closes every session with GOING_AWAY. */
  dispose(reason: string): void {
    this.#running = false;
    for (const sessionId of [...this.#probes.keys()]) this.#settleProbes(sessionId, false);
    this.#ticker?.cancel();
    this.#recoveredTimer?.cancel();
    for (const conn of this.#connections.values()) conn.close(CLOSE_CODES.GOING_AWAY, reason);
  }

  /** How many sessions are open. */
  get openSessions(): number {
    return this.#connections.size;
  }

  // ---- AgentLink -----------------------------------------------------------------------------

  send(agentId: string, msg: MasterMessage, urgent?: boolean): boolean {
    const conn = this.#connectionOf(agentId);
    if (conn === undefined) return false;
    conn.send(msg, urgent);
    return true;
  }

  /** The address the agent's open session comes from (Drydock's agent view); undefined without one. */
  peerOf(agentId: string): string | undefined {
    return this.#connectionOf(agentId)?.remote;
  }

  close(agentId: string, code: number, reason: string): void {
    for (const [sessionId, id] of this.#sessionAgent) if (id === agentId) this.#closeSession(sessionId, code, reason);
  }

  // ---- Session events (from api/agent-sessions.ts) ----------------------------------------

  connected(conn: AgentConnection): void {
    this.#connections.set(conn.id, conn);
  }

  disconnected(conn: AgentConnection): void {
    this.#connections.delete(conn.id);
    // A closed session has failed its probe: the id it held is free.
    this.#settleProbes(conn.id, false);
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId === undefined) return;
    this.#sessionAgent.delete(conn.id);
    if (this.#running && this.#o.agents.disconnect(agentId, conn.id, this.#o.clock.now())) {
      this.#o.log.info('agent disconnected', { agentId });
      this.#o.bus.emit({ type: 'AGENT_DISCONNECTED', agentId });
    }
  }

  pong(conn: AgentConnection): void {
    this.#settleProbes(conn.id, true);
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId !== undefined) this.#o.agents.pong(agentId);
  }

  /** One decoded message. The shell runs these one at a time per session. */
  async handle(conn: AgentConnection, msg: AgentMessage): Promise<void> {
    if (!this.#running) return;
    switch (msg.type) {
      case 'REGISTER':
        return this.#register(conn, msg);
      case 'STATUS_UPDATE':
        return this.#statusUpdate(conn, msg);
      case 'REFUSED':
        return this.#refused(conn, msg);
      case 'CONDITIONS':
        return this.#conditions(conn, msg);
      default:
        return assertNever(msg);
    }
  }

  // ---- Conditions ------------------------------------------------------------------------

  /**
   * The agent's conditions changed (disk pressure began or ended). Not durable: the agent says
   * them again at every registration. A change is logged and announced (AGENT_UPDATED): the
   * frameworks service stops or resumes offers of the agent.
   */
  #conditions(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'CONDITIONS' }>): void {
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId === undefined) {
      this.#o.log.warn('conditions from unregistered session', { sessionId: conn.id });
      return;
    }
    this.#announceConditions(agentId, this.#o.agents.updateConditions(agentId, conn.id, msg.conditions, this.#o.clock.now()));
  }

  #announceConditions(agentId: string, change: ConditionChange): void {
    if (change === undefined) return;
    const p = this.#o.agents.get(agentId)?.diskPressure?.report;
    if (change === 'DISK_PRESSURE' && p !== undefined) {
      this.#o.log.warn('agent under disk pressure: not offered', { agentId, reason: p.reason, message: p.message, path: p.path, freeBytes: p.free_bytes, totalBytes: p.total_bytes, freeInodes: p.free_inodes, totalInodes: p.total_inodes, sinceMs: p.since_ms });
    } else {
      this.#o.log.info('agent disk pressure cleared: offered again', { agentId });
    }
    this.#o.bus.emit({ type: 'AGENT_UPDATED', agentId, change });
  }

  // ---- Status updates --------------------------------------------------------------------

  #statusUpdate(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'STATUS_UPDATE' }>): void {
    const agents = this.#o.agents;
    const taskId = msg.status.task_id.value;
    const agentId = this.#sessionAgent.get(conn.id);
    if (agentId === undefined) {
      this.#o.log.warn('status update from unregistered session', { sessionId: conn.id, taskId });
      return;
    }
    const foreign = agents.foreignTask(agentId, msg.framework_id, taskId, msg.status.agent_id?.value);
    if (foreign !== undefined) return this.#refuseForeign(conn, agentId, msg.framework_id, taskId, msg.status.agent_id?.value, foreign);
    // A task the master already declared ended: its agent's word is acknowledged, not forwarded.
    if (agents.tombstones.has(tombstoneKey(agentId, msg.framework_id, taskId))) {
      if (msg.status.uuid !== undefined) conn.send({ type: 'ACKNOWLEDGE', framework_id: msg.framework_id, task_id: taskId, uuid: msg.status.uuid });
      return;
    }
    const previous = agents.taskState(agentId, msg.framework_id, taskId);
    const recorded = agents.updateStatus(agentId, msg.framework_id, msg.status);
    // As Mesos: operators hear of every state change and of every (health) check update, never of a retry.
    const checkUpdate = msg.status.reason === 'REASON_TASK_CHECK_STATUS_UPDATED' || msg.status.reason === 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED';
    if (previous !== msg.status.state || (checkUpdate && recorded === 'RECORDED')) {
      this.#o.bus.emit({ type: 'TASK_UPDATED', agentId, frameworkId: msg.framework_id, taskId, status: msg.status, state: msg.status.state });
    }
    this.#o.log.debug('status update', { agentId, frameworkId: msg.framework_id, taskId, state: msg.status.state, uuid: msg.status.uuid });
    this.#o.bus.emit({ type: 'STATUS_UPDATE', agentId, frameworkId: msg.framework_id, status: msg.status });
  }

  /**
   * A session spoke of a task that is not its agent's: the message is dropped (not recorded,
   * not forwarded, not acknowledged), logged and counted. The session stays: a confused agent
   * is not cut off from its own tasks.
   */
  #refuseForeign(conn: AgentConnection, agentId: string, frameworkId: string, taskId: string, claimedAgentId: string | undefined, reason: ForeignTaskReason): void {
    this.refusedReports++;
    this.#o.log.warn('agent report refused', { sessionId: conn.id, agentId, claimedAgentId, frameworkId, taskId, reason });
  }

  /**
   * The agent refused one of our messages (it could not decode it) and kept its session: logged,
   * and announced for the counters and for the service whose message it was (a drain's record
   * says so). Nothing else changes: the agent did nothing with the message.
   */
  #refused(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REFUSED' }>): void {
    const agentId = this.#sessionAgent.get(conn.id);
    const r = msg.refused;
    // An agent's text, kept in memory and logged: bounded as a real agent bounds it.
    const refused: Refusal = { type: r.type, digest: r.digest.slice(0, 64), reason: r.reason.length > MAX_REFUSAL_REASON ? `${r.reason.slice(0, MAX_REFUSAL_REASON - 3)}...` : r.reason };
    if (r.id !== undefined) refused.id = r.id.slice(0, 200);
    if (agentId === undefined) {
      this.#o.log.warn('refusal from unregistered session', { sessionId: conn.id, type: refused.type, reason: refused.reason });
      return;
    }
    this.#o.log.warn('agent refused a message', { agentId, type: refused.type, id: refused.id, digest: refused.digest, reason: refused.reason });
    this.#o.bus.emit({ type: 'AGENT_REFUSED_MESSAGE', agentId, refused });
  }

  // ---- Registration ----------------------------------------------------------------------

  /**
   * One registration per agent id at a time: the checks (binding, live session) and the write
   * that follows them must not interleave with another session's for the same id, or two
   * principals claiming an unbound id together could both pass and the second overwrite the
   * first's binding. Different ids do not wait for each other.
   */
  async #register(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>): Promise<void> {
    // A REGISTER repeated on a registered session without an id means the same agent.
    const claimed = msg.agent_id ?? this.#sessionAgent.get(conn.id);
    if (claimed === undefined) return this.#registerAs(conn, msg, undefined);
    const run = (this.#registering.get(claimed) ?? Promise.resolve()).then(() => this.#registerAs(conn, msg, claimed));
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.#registering.set(claimed, settled);
    try {
      await run;
    } finally {
      if (this.#registering.get(claimed) === settled) this.#registering.delete(claimed);
    }
  }

  async #registerAs(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>, claimed: string | undefined): Promise<void> {
    const { agents, maintenance, commits, clock, log } = this.#o;
    // Mesos `_registerSlave` / `_reregisterSlave`: an agent from a DOWN machine is shut down, nothing admitted.
    if (this.#refuseIfDown(conn, msg)) return;
    // A gone agent is refused forever, nothing admitted (Mesos: ShutdownMessage `Agent has been marked gone`).
    if (msg.agent_id !== undefined && agents.isGone(msg.agent_id)) {
      log.warn('agent refused', { reason: AGENT_GONE_MESSAGE, agentId: msg.agent_id, hostname: msg.agent.hostname, ip: msg.agent.ip });
      conn.send({ type: 'SHUTDOWN', message: AGENT_GONE_MESSAGE });
      conn.close(CLOSE_CODES.SHUTDOWN, AGENT_GONE_MESSAGE);
      return;
    }
    if (this.#refuseIfNotAuthorized(conn, msg, claimed)) return;
    if (await this.#refuseIfHeld(conn, msg, claimed)) return;
    // The session closed (or the term ended) while a probe ran: nothing to admit.
    if (!this.#running || !this.#connections.has(conn.id)) return;
    const req: RegistrationRequest = { agentId: claimed, info: msg.agent, version: msg.version, capabilities: msg.capabilities, principal: conn.principal };
    const plan = agents.planRegistration(req, nowNs(clock.now()), () => `${this.#o.masterId}-S${this.#nextAgent++}`);
    const replacing = plan.replaces === undefined ? undefined : this.#removal(plan.replaces);

    const committed = await commits.write(
      plan.write === 'NONE' ? 'REGISTER' : plan.write,
      { agentId: plan.agentId },
      (r) => {
        // Most registrations are one write: its promise as it is, no list and no Promise.all.
        const removal = plan.replaces === undefined ? undefined : r.removeAgent(plan.replaces, replacing);
        const record = plan.write === 'ADMIT' ? r.admitAgent(plan.durable) : plan.write === 'READMIT' ? r.markAgentReachable(plan.durable) : undefined;
        if (removal === undefined) return record ?? Promise.resolve();
        return record === undefined ? removal : Promise.all([removal, record]).then(() => undefined);
      },
      () => undefined,
    );
    if (!committed.ok) {
      // 1011: internal error; the agent backs off and retries.
      conn.close(1011, 'master could not record the registration');
      return;
    }
    if (!this.#running) return;
    // The machine went DOWN while the admission was committing: undo it (durably) and refuse.
    if (this.#refuseIfDown(conn, msg)) {
      if (plan.write === 'ADMIT' && plan.kind !== 'REREGISTERED' && plan.kind !== 'RECOVERED') {
        await commits.write('REMOVE_AGENT', { agentId: plan.agentId }, (r) => r.removeAgent(plan.agentId), () => undefined);
      }
      return;
    }

    // A registration speaks only for its own agent: tasks that name another agent, or that the
    // master knows on another agent, are left out.
    const tasks = msg.tasks.length === 0 ? msg.tasks : msg.tasks.filter((t) => {
      const foreign = agents.foreignTask(plan.agentId, t.framework_id, t.task.task_id.value, t.task.agent_id.value);
      if (foreign === 'TOO_MANY_TASKS' || foreign === undefined) return true;
      this.#refuseForeign(conn, plan.agentId, t.framework_id, t.task.task_id.value, t.task.agent_id.value, foreign);
      return false;
    });
    const replaced = plan.replaces === undefined ? undefined : agents.get(plan.replaces);
    const replacedSession = replaced?.sessionId;
    const replacedTasks = tasksOf(replaced);
    const now = clock.now();
    const tasksBefore = tasksOf(agents.get(plan.agentId));
    const { previousSessionId, conditionChange } = agents.applyRegistration(plan, req, tasks, conn.id, nowNs(now), msg.conditions);
    if (plan.replaces !== undefined) maintenance.agentRemoved(plan.replaces);
    maintenance.agentAdded(plan.agentId, agentMachineId(msg.agent.hostname, msg.agent.ip));
    if (replacedSession !== undefined) this.#closeSession(replacedSession, CLOSE_CODES.REPLACED, `agent ${plan.agentId} registered at this address`);
    if (previousSessionId !== undefined) this.#closeSession(previousSessionId, CLOSE_CODES.REPLACED, 'a newer session for this agent replaced this one');
    this.#sessionAgent.set(conn.id, plan.agentId);

    if (!this.#connections.has(conn.id)) {
      // The socket closed while the write was committing: the agent is admitted but disconnected.
      this.#sessionAgent.delete(conn.id);
      agents.disconnect(plan.agentId, conn.id, now);
    } else {
      conn.send({
        type: 'REGISTERED',
        request_id: msg.request_id,
        agent_id: plan.agentId,
        master_id: this.#o.masterId,
        ping_interval_ms: this.#o.pingIntervalMs,
        max_ping_timeouts: this.#o.maxPingTimeouts,
        capabilities: [...MASTER_CAPABILITIES],
      });
    }
    const fields = { agentId: plan.agentId, kind: plan.kind, hostname: msg.agent.hostname, ip: msg.agent.ip, port: msg.agent.port, tasks: msg.tasks.length, principal: plan.durable.principal ?? null };
    log.info(plan.kind === 'NEW' ? 'agent registered' : 'agent reregistered', fields);
    // An agent admitted anonymously (before --authenticate_agents) is bound on its first authenticated registration.
    if (plan.binds) log.info('agent bound to principal', { agentId: plan.agentId, principal: plan.durable.principal });
    if (plan.replaces !== undefined) {
      log.info('agent removed', { agentId: plan.replaces, reason: 'REPLACED', by: plan.agentId });
      this.#o.bus.emit({ type: 'AGENT_REMOVED', agentId: plan.replaces, reason: 'REPLACED', tasks: replacedTasks });
    }
    // As Mesos: AGENT_ADDED for the add path (new, after a master restart, back from
    // unreachable, an id the master never saw); a known agent reconnecting is not "added".
    const type = plan.kind === 'REREGISTERED' ? 'AGENT_RECONNECTED' : 'AGENT_ADDED';
    this.#o.bus.emit({ type, agentId: plan.agentId, tasksBefore, frameworks: msg.frameworks });
    // After the agent is known: its offers stop (or resume) from what this registration says.
    this.#announceConditions(plan.agentId, conditionChange);
  }

  /**
   * The `register_agents` ACL, on the agent as it asks to register (its claimed id, hostname, ip
   * and attributes): refused, the session is closed NOT_ALLOWED and nothing is written.
   */
  #refuseIfNotAuthorized(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>, claimed: string | undefined): boolean {
    const security = this.#o.security;
    const object = agentObject(claimed, msg.agent);
    if (security.authorizer.allows('register_agents', conn.principal, object)) return false;
    // The 403 text of the HTTP API (it names the action and principal), as the close reason.
    const reason = fail('FORBIDDEN', 'register_agents', conn.principal, describeObject(object)).message;
    this.#refuse(conn, msg, claimed, 'NOT_AUTHORIZED', CLOSE_CODES.NOT_ALLOWED, reason, { object: describeObject(object) });
    return true;
  }

  /**
   * An agent id is not taken over (issue 13):
   * - an id bound to a principal is refused to any other, and to anonymous sessions
   *   (principalRefusal): closed NOT_ALLOWED;
   * - an id whose session is live is refused while that session answers pings
   *   (takeoverDecision): from another address, or with --authenticate_agents from anywhere;
   *   closed ID_IN_USE. Whether it answers is asked, not guessed: the live session is pinged
   *   and has `takeoverProbeMs` to pong. A dead socket the master has not seen close (a
   *   restarted or rebooted agent) stays silent, and the newcomer replaces it.
   * Nothing changes on a refusal. After each probe everything is decided again from the
   * table as it is then (the live session may have closed, or the id been bound, meanwhile).
   */
  async #refuseIfHeld(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>, claimed: string | undefined): Promise<boolean> {
    if (claimed === undefined) return false;
    const origin = { sessionId: conn.id, ip: msg.agent.ip, port: msg.agent.port, remote: conn.remote };
    const authenticateAgents = this.#o.security.config.authenticateAgents;
    let probe: ProbeResult | undefined;
    for (let probes = 0; ; probes++) {
      const live = this.#o.agents.get(claimed);
      // A removed agent's id stays bound: refused as the known agent's would be.
      const boundTo = this.#o.agents.boundPrincipal(claimed);
      const bound = principalRefusal(claimed, boundTo, conn.principal);
      if (bound !== undefined) {
        this.#refuse(conn, msg, claimed, 'PRINCIPAL_MISMATCH', CLOSE_CODES.NOT_ALLOWED, bound, { boundPrincipal: boundTo ?? null, removed: live === undefined });
        return true;
      }
      const liveRemote = live?.sessionId === undefined ? undefined : this.#connections.get(live.sessionId)?.remote;
      const decision = takeoverDecision(claimed, live, liveRemote, origin, { authenticateAgents, probe });
      if (decision.kind === 'ALLOW') return false;
      const held = { liveIp: live?.info.ip, livePort: live?.info.port, liveRemote, liveSessionId: live?.sessionId };
      if (decision.kind === 'REFUSE') {
        this.#refuse(conn, msg, claimed, 'ID_IN_USE', CLOSE_CODES.ID_IN_USE, decision.reason, held);
        return true;
      }
      if (probes >= MAX_TAKEOVER_PROBES) {
        this.#refuse(conn, msg, claimed, 'ID_IN_USE', CLOSE_CODES.ID_IN_USE, `agent ${claimed} changed sessions while this one registered; try again`, held);
        return true;
      }
      probe = { sessionId: decision.sessionId, answered: await this.#probe(decision.sessionId) };
      if (!this.#running || !this.#connections.has(conn.id)) return true;
      this.#o.log.info('agent session probed', { agentId: claimed, liveSessionId: decision.sessionId, answered: probe.answered, sessionId: conn.id, remote: conn.remote });
    }
  }

  /** One refused registration: an `agent refused` line, an audit line, and the session closed with `code`. Nothing else changes. */
  #refuse(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>, claimed: string | undefined, why: AgentRefusal, code: number, reason: string, extra: Record<string, unknown>): void {
    const principal = conn.principal ?? null;
    this.#o.log.warn('agent refused', { reason: why, message: reason, agentId: claimed, principal, hostname: msg.agent.hostname, ip: msg.agent.ip, port: msg.agent.port, remote: conn.remote, ...extra });
    const action = why === 'NOT_AUTHORIZED' ? 'REGISTER_AGENT register_agents' : 'REGISTER_AGENT';
    this.#o.security.audit({ principal: conn.principal, action, object: describeObject(agentObject(claimed, msg.agent)), outcome: 'denied', detail: reason });
    conn.close(code, reason);
  }

  /**
   * Pings a live session and resolves true when it pongs within the probe's bound, false when
   * it stays silent or closes. Any pong counts, an earlier ping's included: the socket is alive.
   */
  #probe(sessionId: number): Promise<boolean> {
    const conn = this.#connections.get(sessionId);
    if (conn === undefined) return Promise.resolve(false);
    const boundMs = this.#o.takeoverProbeMs ?? Math.min(this.#o.pingIntervalMs, TAKEOVER_PROBE_MS);
    return new Promise<boolean>((resolve) => {
      let done = false;
      const settle = (answered: boolean): void => {
        if (done) return;
        done = true;
        timer.cancel();
        const left = (this.#probes.get(sessionId) ?? []).filter((w) => w !== settle);
        if (left.length === 0) this.#probes.delete(sessionId);
        else this.#probes.set(sessionId, left);
        resolve(answered);
      };
      const timer = this.#o.clock.setTimer(boundMs, () => settle(false));
      const waiting = this.#probes.get(sessionId);
      if (waiting === undefined) this.#probes.set(sessionId, [settle]);
      else waiting.push(settle);
      conn.ping();
    });
  }

  #settleProbes(sessionId: number, answered: boolean): void {
    const waiting = this.#probes.get(sessionId);
    if (waiting === undefined) return;
    this.#probes.delete(sessionId);
    for (const w of waiting) w(answered);
  }

  /** Sends SHUTDOWN `Machine is \`DOWN\`` and closes the session when the agent's machine is DOWN. */
  #refuseIfDown(conn: AgentConnection, msg: Extract<AgentMessage, { type: 'REGISTER' }>): boolean {
    if (!this.#o.maintenance.isDown(agentMachineId(msg.agent.hostname, msg.agent.ip))) return false;
    this.#o.log.warn('agent refused', { reason: MACHINE_DOWN_MESSAGE, agentId: msg.agent_id, hostname: msg.agent.hostname, ip: msg.agent.ip });
    conn.send({ type: 'SHUTDOWN', message: MACHINE_DOWN_MESSAGE });
    conn.close(CLOSE_CODES.SHUTDOWN, MACHINE_DOWN_MESSAGE);
    return true;
  }

  // ---- Removal and unreachability ---------------------------------------------------------

  /**
   * Mesos `removeSlave`, written first: the agent (with its drain and deactivation state) leaves
   * the registry, then it is told SHUTDOWN and forgotten; AGENT_REMOVED carries its tasks, lost
   * with `Agent <hostname> removed: <reason>`.
   */
  async #removeAgent(agentId: string, reason: string): Promise<void> {
    const removal = this.#removal(agentId);
    const committed = await this.#o.commits.write('REMOVE_AGENT', { agentId }, (r) => r.removeAgent(agentId, removal), () => {
      const entry = this.#o.agents.get(agentId);
      if (entry === undefined) return undefined;
      const tasks = [...(entry.tasks?.values() ?? [])];
      const sessionId = entry.sessionId;
      if (sessionId !== undefined) this.#connections.get(sessionId)?.send({ type: 'SHUTDOWN', message: reason });
      this.#o.agents.remove(agentId);
      this.#o.maintenance.agentRemoved(agentId);
      if (sessionId !== undefined) this.#closeSession(sessionId, CLOSE_CODES.SHUTDOWN, reason);
      return { tasks, hostname: entry.info.hostname };
    });
    if (!committed.ok || committed.value === undefined) return;
    this.#o.log.info('agent removed', { agentId, reason });
    this.#o.bus.emit({ type: 'AGENT_REMOVED', agentId, reason, tasks: committed.value.tasks, lostMessage: `Agent ${committed.value.hostname} removed: ${reason}` });
  }

  /**
   * What the registry keeps of an agent it forgets, in the same write: the principal its id is
   * bound to (the table keeps it too, on remove), and its machine's attributes when the machine
   * is scheduled (the registry writes them only if its schedule lacks them: a machine scheduled
   * before its agent registered has none there, and after a restart nothing else would say them).
   */
  #removal(agentId: string): AgentRemoval {
    const principal = this.#o.agents.get(agentId)?.principal;
    const machine = this.#o.maintenance.scheduledMachineOfAgent(agentId);
    return { timeNs: nowNs(this.#o.clock.now()), ...(principal === undefined ? {} : { principal }), ...(machine === undefined ? {} : { machine }) };
  }

  #connectionOf(agentId: string): AgentConnection | undefined {
    const entry = this.#o.agents.get(agentId);
    if (entry === undefined || !entry.connected || entry.sessionId === undefined) return undefined;
    return this.#connections.get(entry.sessionId);
  }

  #closeSession(sessionId: number, code: number, reason: string): void {
    this.#sessionAgent.delete(sessionId);
    this.#connections.get(sessionId)?.close(code, reason);
  }

  /**
   * One timer for all sessions (per-agent timers would be 10,000 timers), a wheel: a round of
   * pings is spread over the agent table's slots, one slot every ping interval / slots, so
   * 50,000 pings do not leave in one turn of the event loop. Each slot is due a slot after the
   * previous one was due, not after it ran, so late timers do not stretch the rounds; when the
   * clock is off by more than a slot (a wall clock set back or forward, a long stall), the
   * schedule starts again from now instead of waiting out or catching up the difference.
   */
  #scheduleTick(): void {
    const clock = this.#o.clock;
    const slots = this.#o.agents.pingSlots;
    const slotMs = this.#o.pingIntervalMs / slots;
    let slot = 0;
    let dueMs = clock.now() + slotMs;
    const arm = (): void => {
      this.#ticker = clock.setTimer(Math.min(slotMs, Math.max(0, dueMs - clock.now())), () => {
        if (!this.#running) return;
        this.#tick(slot);
        slot = (slot + 1) % slots;
        const now = clock.now();
        dueMs = Math.abs(now - dueMs) > slotMs ? now + slotMs : dueMs + slotMs;
        arm();
      });
    };
    arm();
  }

  #tick(slot: number): void {
    const decision = this.#o.agents.tickSlot(this.#o.clock.now(), slot);
    for (const agentId of decision.ping) this.#connectionOf(agentId)?.ping();
    for (const u of decision.unreachable) void this.#markUnreachable(u.agentId, u.reason);
  }

  #expireRecovered(): void {
    if (!this.#running) return;
    for (const agentId of this.#o.agents.expireRecovered(this.#o.clock.now())) void this.#markUnreachable(agentId, 'REREGISTER_TIMEOUT');
  }

  /**
   * Written first. If the agent came back while the write committed (a new session, a
   * re-registration), the write is undone: it stays as it is now, reachable.
   */
  async #markUnreachable(agentId: string, reason: UnreachableReason): Promise<void> {
    const entry = this.#o.agents.get(agentId);
    if (entry === undefined || entry.phase === 'UNREACHABLE' || this.#markingUnreachable.has(agentId)) return;
    const seen = { phase: entry.phase, sessionId: entry.sessionId, reregisteredTimeNs: entry.reregisteredTimeNs };
    const timeNs = nowNs(this.#o.clock.now());
    this.#markingUnreachable.add(agentId);
    this.#o.instruments?.onUnreachable('scheduled', reason);
    const committed = await this.#o.commits.write('MARK_UNREACHABLE', { agentId }, (r) => r.markAgentUnreachable(agentId, timeNs), () => {
      const now = this.#o.agents.get(agentId);
      if (now === undefined) return 'GONE';
      if (now.phase !== seen.phase || now.sessionId !== seen.sessionId || now.reregisteredTimeNs !== seen.reregisteredTimeNs) return 'CAME_BACK';
      const r = this.#o.agents.markUnreachable(agentId, timeNs);
      if (r?.sessionId !== undefined) {
        this.#sessionAgent.delete(r.sessionId);
        // It stopped answering pings: no close handshake to wait for.
        this.#connections.get(r.sessionId)?.terminate();
      }
      return 'MARKED';
    });
    this.#markingUnreachable.delete(agentId);
    this.#o.instruments?.onUnreachable(committed.ok && committed.value === 'MARKED' ? 'completed' : 'canceled', reason);
    if (!committed.ok) return;
    if (committed.value === 'CAME_BACK') {
      const back = this.#o.agents.get(agentId);
      if (back !== undefined) {
        const durable = { id: back.id, info: back.info, version: back.version, capabilities: back.capabilities, registeredTimeNs: back.registeredTimeNs, ...(back.principal === undefined ? {} : { principal: back.principal }) };
        await this.#o.commits.write('MARK_REACHABLE', { agentId }, (r) => r.markAgentReachable(durable), () => undefined);
      }
      return;
    }
    if (committed.value !== 'MARKED') return;
    this.#o.log.warn('agent unreachable', { agentId, reason });
    this.#o.bus.emit({ type: 'AGENT_UNREACHABLE', agentId });
  }
}

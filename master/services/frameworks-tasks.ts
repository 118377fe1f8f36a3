/**
 * The frameworks service's task traffic (a part of services/frameworks.ts): tasks between
 * frameworks and agents. Launches (RUN_TASK) and kills (KILL_TASK, kept for an agent that is
 * away), status updates forwarded to frameworks and their acknowledgements carried back to
 * agents (timed for the metrics), the updates the master makes up itself, reconciliation, and
 * what agents' events (registered, disconnected, unreachable, removed, gone, a refused launch)
 * mean for their tasks. What a task's fate is, is the task-fate core's (cores/task-fate.ts).
 */

import type { Clock } from '../../shared/clock.js';
import { nowNs } from '../../shared/duration.js';
import type { Logger } from '../../shared/log.js';
import { hasCapability, isTerminal, taskKey, type FrameworkInfo, type KillPolicy, type Task, type TaskInfo, type TaskState, type TaskStatus, type TaskStatusReason } from '../../shared/mesos.js';
import type { MasterMessage, Refusal } from '../../shared/protocol.js';
import type { AgentEntry, AgentTable } from '../cores/agents.js';
import type { FrameworkEntry, FrameworkTable } from '../cores/frameworks.js';
import type { Offer } from '../cores/offers.js';
import type { SchedulerCallBody } from '../cores/scheduler-calls.js';
import { onDisconnected, onGone, onLaunchRefused, onRegistered, onRemoved, onUnreachable, reconcileAnswer, type Fate, type FateFramework, type MasterUpdate, type ReconcileFinding } from '../cores/task-fate.js';
import type { Commits } from '../term/commit.js';
import type { MasterEvents } from '../term/events.js';
import type { AgentLink, FrameworkInstruments } from '../term/ports.js';

/** Updates whose first forwarding time is kept for the acknowledgement latency; beyond it the oldest are forgotten. */
const MAX_TIMED_UPDATES = 10_000;

/** What the task traffic part needs of the service and the term. */
export interface TasksNeeds {
  readonly agents: AgentTable;
  readonly frameworks: FrameworkTable;
  readonly link: AgentLink;
  readonly commits: Commits;
  readonly bus: MasterEvents;
  readonly clock: Clock;
  readonly log: Logger;
  /** When this term started (ms): a framework learnt from an agent counts its failover timeout from here. */
  readonly startTimeMs: number;
  readonly instruments: FrameworkInstruments | undefined;
  /** The streams part: send to a framework, send to all, arm a failover timeout. */
  readonly streams: { send(frameworkId: string, event: unknown): void; broadcast(event: unknown): void; armDeadline(entry: FrameworkEntry): void };
  /** The offers part: rescind an agent's offers, allocate soon. */
  readonly offers: { rescind(pred: (o: Offer) => boolean, tell: boolean): void; allocateSoon(): void };
}

export class TaskTraffic {
  readonly #n: TasksNeeds;
  /** agent id -> kills to send when it re-registers (task STAGING on a disconnected agent). */
  readonly #pendingKills = new Map<string, Array<{ frameworkId: string; taskId: string; killPolicy: KillPolicy | undefined }>>();
  /** update uuid -> when it was first forwarded (instruments' clock), until acknowledged: retries keep the first time. */
  readonly #forwardedAt = new Map<string, number>();

  constructor(needs: TasksNeeds) {
    this.#n = needs;
  }

  // ---- Launches and kills --------------------------------------------------------------------

  /** Records the task as TASK_STAGING on the agent and sends it RUN_TASK; false when the agent has no open session. */
  runTask(agentId: string, frameworkId: string, framework: FrameworkInfo, task: TaskInfo): boolean {
    const agents = this.#n.agents;
    const agent = agents.get(agentId);
    if (agent === undefined || !agent.connected) return false;
    agents.addTask(agentId, frameworkId, task);
    this.#n.bus.emit({ type: 'TASK_ADDED', agentId, frameworkId, taskId: task.task_id.value });
    return this.#n.link.send(agentId, { type: 'RUN_TASK', framework_id: frameworkId, framework, task });
  }

  /** The agent and task a framework's task id names, looked for on `agentHint` first. */
  findTask(frameworkId: string, taskId: string, agentHint: string | undefined): { agent: AgentEntry; task: Task } | undefined {
    const agents = this.#n.agents;
    const key = taskKey(frameworkId, taskId);
    if (agentHint !== undefined) {
      const a = agents.get(agentHint);
      const t = a?.tasks?.get(key);
      if (a !== undefined && t !== undefined) return { agent: a, task: t };
    }
    for (const a of agents.all()) {
      const t = a.tasks?.get(key);
      if (t !== undefined) return { agent: a, task: t };
    }
    return undefined;
  }

  /** A framework's KILL (or SHUTDOWN of a command task's executor): a task the master does not know is answered as reconciliation does. */
  killCall(entry: FrameworkEntry, taskId: string, agentHint: string | undefined, killPolicy: KillPolicy | undefined): void {
    const found = this.findTask(entry.id, taskId, agentHint);
    if (found === undefined) {
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_UNKNOWN' : 'TASK_LOST';
      this.sendMasterUpdate(entry.id, agentHint, taskId, state, 'REASON_RECONCILIATION', 'Reconciliation: Task is unknown');
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

  /**
   * Sends KILL_TASK; `killPolicy` overrides the task's own. False when the agent has no open
   * session. `urgent` for a scheduler's KILL (written at once); the kills of a re-registration
   * leave together at the end of the turn.
   */
  #killTask(agentId: string, frameworkId: string, taskId: string, killPolicy?: KillPolicy, urgent = false): boolean {
    const msg: MasterMessage = { type: 'KILL_TASK', framework_id: frameworkId, task_id: taskId };
    if (killPolicy !== undefined) msg.kill_policy = killPolicy;
    return this.#n.link.send(agentId, msg, urgent);
  }

  /**
   * A framework removed for good: nobody will acknowledge for it, so the master does (every
   * update still unacknowledged, oldest first: with pipelined updates there may be several), so
   * its tasks reach completed; those still running are killed.
   */
  endTasksOf(frameworkId: string): void {
    for (const agent of this.#n.agents.all()) {
      for (const t of [...(agent.tasks?.values() ?? [])]) {
        if (t.framework_id.value !== frameworkId) continue;
        for (const u of [...this.#n.agents.unacknowledged(t)]) this.acknowledge(agent.id, frameworkId, t.task_id.value, u);
        if (t.status_update_uuid !== undefined) this.acknowledge(agent.id, frameworkId, t.task_id.value, t.status_update_uuid);
        if (!isTerminal(t.state)) this.#kill(agent, frameworkId, t.task_id.value, undefined);
      }
    }
  }

  // ---- Acknowledgements ----------------------------------------------------------------------

  /**
   * A scheduler acknowledged the update `uuid`: forwards ACKNOWLEDGE to the agent, and moves
   * the task to completed if that update was terminal. Like Mesos, an acknowledgement for a
   * disconnected agent is dropped (the agent resends the update and it is acknowledged again).
   */
  acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string): { ok: true } | { ok: false; reason: string } {
    const agents = this.#n.agents;
    const agent = agents.get(agentId);
    if (agent === undefined) return { ok: false, reason: 'UNKNOWN_AGENT' };
    if (!agent.connected) return { ok: false, reason: 'AGENT_NOT_CONNECTED' };
    const superseded: string[] = [];
    const outcome = agents.acknowledge(agentId, frameworkId, taskId, uuid, superseded);
    if (outcome === 'UNKNOWN_TASK' || outcome === 'UUID_MISMATCH' || outcome === 'UNKNOWN_AGENT') return { ok: false, reason: outcome };
    this.#n.link.send(agentId, { type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
    this.#timeAcknowledged(uuid);
    // Earlier updates of a task whose end was just acknowledged: the agent hears they are done too (cores/agents.ts).
    for (const u of superseded) {
      this.#ackOnAgent(agentId, frameworkId, taskId, u);
      this.#forwardedAt.delete(u);
    }
    // Mesos re-checks a draining agent on every acknowledgement: this may be the last one.
    this.#n.bus.emit({ type: 'TASK_ACKNOWLEDGED', agentId, frameworkId, taskId });
    return { ok: true };
  }

  /** Notes when an update was first forwarded (retries keep the first time: the latency is the framework's whole wait). */
  #timeForwarded(uuid: string | undefined): void {
    const i = this.#n.instruments;
    if (i === undefined || uuid === undefined || this.#forwardedAt.has(uuid)) return;
    // Updates of frameworks that never acknowledge must not grow without bound: forget the oldest.
    if (this.#forwardedAt.size >= MAX_TIMED_UPDATES) {
      const oldest = this.#forwardedAt.keys().next();
      if (oldest.done !== true) this.#forwardedAt.delete(oldest.value);
    }
    this.#forwardedAt.set(uuid, i.now());
  }

  #timeAcknowledged(uuid: string): void {
    const i = this.#n.instruments;
    const at = this.#forwardedAt.get(uuid);
    if (i === undefined || at === undefined) return;
    this.#forwardedAt.delete(uuid);
    i.onAcknowledged(i.now() - at);
  }

  /** Tells the agent to forget an update the master consumed itself (the scheduler never sees it). */
  #ackOnAgent(agentId: string, frameworkId: string, taskId: string, uuid: string): void {
    this.#n.link.send(agentId, { type: 'ACKNOWLEDGE', framework_id: frameworkId, task_id: taskId, uuid });
  }

  // ---- Reconciliation ------------------------------------------------------------------------

  /** RECONCILE (Mesos `Master::reconcile`): the answers are the task-fate core's `reconcileAnswer`. */
  reconcile(entry: FrameworkEntry, reconcile: NonNullable<SchedulerCallBody['reconcile']>): void {
    const agents = this.#n.agents;
    const pa = hasCapability(entry.info, 'PARTITION_AWARE');
    const send = (u: MasterUpdate | undefined): void => {
      if (u !== undefined) this.#sendUpdate(u);
    };
    const known = (agent: AgentEntry, task: Task): ReconcileFinding => ({ kind: 'KNOWN', agentId: agent.id, task, agentUnreachable: agent.phase === 'UNREACHABLE' });
    const asked = reconcile.tasks ?? [];
    if (asked.length === 0) {
      // Implicit: every task the master knows for the framework.
      for (const a of agents.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) send(reconcileAnswer(entry.id, t.task_id.value, known(a, t), pa));
      return;
    }
    for (const q of asked) {
      const taskId = q.task_id.value;
      const agentId = q.agent_id?.value;
      const found = this.findTask(entry.id, taskId, agentId);
      const phase = agentId === undefined ? undefined : agents.get(agentId)?.phase;
      const finding: ReconcileFinding =
        found !== undefined ? known(found.agent, found.task) : { kind: 'UNKNOWN', agentId, agent: phase === undefined ? undefined : phase === 'REGISTERED' ? 'OTHER' : phase };
      send(reconcileAnswer(entry.id, taskId, finding, pa));
    }
  }

  // ---- Master-generated updates --------------------------------------------------------------

  /** Sends an UPDATE the master made up (no uuid, nothing to acknowledge). */
  sendMasterUpdate(frameworkId: string, agentId: string | undefined, taskId: string, state: TaskState, reason: TaskStatusReason, message: string, unreachableTimeNs?: bigint): TaskStatus {
    const status: TaskStatus = { task_id: { value: taskId }, state, source: 'SOURCE_MASTER', reason, message, timestamp: this.#n.clock.now() / 1000 };
    if (agentId !== undefined) status.agent_id = { value: agentId };
    // Partition-aware frameworks read when the agent became unreachable (TaskStatus.unreachable_time).
    if (unreachableTimeNs !== undefined) status.unreachable_time = { nanoseconds: unreachableTimeNs };
    this.#n.streams.send(frameworkId, { type: 'UPDATE', update: { status } });
    return status;
  }

  /**
   * Sends a task-fate update. One that completes ends the task on its agent's record, or, for a
   * task that left with its agent (`detached`), in completed all the same; either way operators
   * hear TASK_UPDATED. `announce` tells operators of an update that does not complete
   * (unreachability), with when the agent became unreachable.
   */
  #sendUpdate(u: MasterUpdate, detached?: readonly Task[], unreachableTimeNs?: bigint): TaskStatus {
    const agents = this.#n.agents;
    const status = this.sendMasterUpdate(u.frameworkId, u.agentId, u.taskId, u.state, u.reason, u.message, unreachableTimeNs);
    if (u.agentId === undefined) return status;
    const agentId = u.agentId;
    let ended = false;
    if (u.completes) {
      if (agents.completeTask(agentId, u.frameworkId, u.taskId, status)) ended = true;
      else {
        const t = detached?.find((x) => x.framework_id.value === u.frameworkId && x.task_id.value === u.taskId);
        if (t !== undefined) {
          agents.completeDetached(t, status);
          ended = true;
        }
      }
    }
    if (ended || unreachableTimeNs !== undefined) this.#n.bus.emit({ type: 'TASK_UPDATED', agentId, frameworkId: u.frameworkId, taskId: u.taskId, status, state: u.state });
    return status;
  }

  // ---- Agents, heard on the bus --------------------------------------------------------------

  /** What the task-fate core reads about a framework. */
  #fateOf = (frameworkId: string): FateFramework | undefined => {
    const frameworks = this.#n.frameworks;
    const f = frameworks.get(frameworkId);
    if (f === undefined) return frameworks.isRemoved(frameworkId) ? { checkpoint: false, partitionAware: false, removed: true } : undefined;
    return { checkpoint: f.info.checkpoint === true, partitionAware: hasCapability(f.info, 'PARTITION_AWARE'), removed: false };
  };

  /**
   * Carries out a task-fate decision for `agentId`. A completing update of a task still on the
   * agent ends it there; of a task the agent no longer has (removed with it), it ends detached
   * (`detached`, the tasks as they were).
   */
  #carryOut(agentId: string, fate: Fate, detached?: readonly Task[]): void {
    const agents = this.#n.agents;
    for (const k of fate.tombstones) agents.tombstones.add(k);
    for (const f of fate.forget) agents.forgetTask(agentId, f.frameworkId, f.taskId);
    for (const c of fate.complete) {
      // With its last status, on the agent's record or, gone with the agent, detached.
      const t = agents.get(agentId)?.tasks?.get(taskKey(c.frameworkId, c.taskId)) ?? detached?.find((x) => x.framework_id.value === c.frameworkId && x.task_id.value === c.taskId);
      if (t === undefined) continue;
      const last = t.statuses.at(-1) ?? { task_id: t.task_id, state: t.state, source: 'SOURCE_MASTER' as const, timestamp: this.#n.clock.now() / 1000 };
      if (!agents.completeTask(agentId, c.frameworkId, c.taskId, last)) agents.completeDetached(t, last);
    }
    for (const k of fate.kills) this.#killTask(agentId, k.frameworkId, k.taskId);
    for (const a of fate.acks) this.#ackOnAgent(agentId, a.frameworkId, a.taskId, a.uuid);
    for (const u of fate.updates) this.#sendUpdate(u, detached);
  }

  /** An agent registered or re-registered; `before` is what the master knew of its tasks before its report. */
  agentRegistered(agentId: string, before: readonly Task[], frameworks: readonly FrameworkInfo[]): void {
    for (const info of frameworks) void this.#learnFramework(agentId, info);
    const agents = this.#n.agents;
    const agent = agents.get(agentId);
    if (agent === undefined) return;
    const reported = [...(agent.tasks?.values() ?? [])];
    const fate = onRegistered(agentId, before, reported, agents.tombstones, this.#fateOf);
    // Lost tasks are no longer in the agent's map: they end detached.
    this.#carryOut(agentId, fate, before);
    // Kills that waited for the agent go out now.
    for (const k of this.#pendingKills.get(agentId) ?? []) this.#killTask(agentId, k.frameworkId, k.taskId, k.killPolicy);
    this.#pendingKills.delete(agentId);
    this.#n.offers.allocateSoon();
  }

  /** A framework the master did not know, reported by an agent (after a master restart): written first, then known as RECOVERED. */
  async #learnFramework(agentId: string, info: FrameworkInfo): Promise<void> {
    const frameworks = this.#n.frameworks;
    const id = info.id?.value;
    if (id === undefined || frameworks.get(id) !== undefined || frameworks.isRemoved(id)) return;
    const r = await this.#n.commits.write('ADD_FRAMEWORK', { frameworkId: id, agentId }, (reg) => reg.addFramework({ id, info, registeredTimeNs: undefined }), () =>
      frameworks.addRecovered(info, undefined, this.#n.startTimeMs),
    );
    if (!r.ok || r.value === undefined) return;
    this.#n.log.info('framework recovered from an agent', { frameworkId: id, agentId });
    this.#n.streams.armDeadline(r.value);
    this.#n.bus.emit({ type: 'FRAMEWORK_ADDED', frameworkId: id });
  }

  /** The agent's session dropped: its offers are rescinded; tasks of frameworks that do not checkpoint are lost (Mesos §4.4). */
  agentDisconnected(agentId: string): void {
    this.#n.offers.rescind((o) => o.agentId === agentId, true);
    this.#carryOut(agentId, onDisconnected(agentId, [...(this.#n.agents.get(agentId)?.tasks?.values() ?? [])], this.#fateOf));
  }

  /** The agent became unreachable: offers rescinded, tasks TASK_UNREACHABLE (partition-aware) or TASK_LOST, told to operators too. */
  agentUnreachable(agentId: string): void {
    this.#n.offers.rescind((o) => o.agentId === agentId, true);
    const agent = this.#n.agents.get(agentId);
    // Operators hear of it too (as from Mesos' `__removeSlave`), with the agent's unreachable_time.
    for (const u of onUnreachable(agentId, [...(agent?.tasks?.values() ?? [])], this.#fateOf).updates) this.#sendUpdate(u, undefined, agent?.unreachableTimeNs ?? nowNs(this.#n.clock.now()));
  }

  /** The agent was removed (machine DOWN, replaced): offers rescinded; with `lostMessage` its tasks are lost; every subscribed framework hears FAILURE. */
  agentRemoved(agentId: string, tasks: readonly Task[], lostMessage: string | undefined): void {
    this.#n.offers.rescind((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    if (lostMessage !== undefined) this.#carryOut(agentId, onRemoved(agentId, tasks, lostMessage), tasks);
    this.#n.streams.broadcast({ type: 'FAILURE', failure: { agent_id: { value: agentId } } });
  }

  /** The agent was marked gone: offers rescinded, each of its tasks ends for its framework. */
  agentGone(agentId: string, tasks: readonly Task[]): void {
    this.#n.offers.rescind((o) => o.agentId === agentId, true);
    this.#pendingKills.delete(agentId);
    this.#carryOut(agentId, onGone(agentId, tasks, this.#fateOf), tasks);
    this.#n.offers.allocateSoon();
  }

  /** A launch the agent could not read (its REFUSED of a RUN_TASK): the task will never run; its framework hears TASK_ERROR. */
  launchRefused(agentId: string, refused: Refusal & { id: string }): void {
    const tasks = [...(this.#n.agents.get(agentId)?.tasks?.values() ?? [])];
    this.#carryOut(agentId, onLaunchRefused(agentId, tasks, refused.id, refused.reason));
    this.#n.offers.allocateSoon();
  }

  /** An agent's STATUS_UPDATE, recorded: forward it (at least once), or acknowledge it for a removed framework. */
  statusUpdate(agentId: string, frameworkId: string, status: TaskStatus): void {
    const stamped: TaskStatus = status.agent_id === undefined ? { ...status, agent_id: { value: agentId } } : status;
    if (this.#n.frameworks.isRemoved(frameworkId)) {
      if (status.uuid !== undefined) this.acknowledge(agentId, frameworkId, status.task_id.value, status.uuid);
    } else {
      // Not subscribed: dropped; the agent resends until acknowledged.
      this.#n.streams.send(frameworkId, { type: 'UPDATE', update: { status: stamped } });
      this.#timeForwarded(status.uuid);
    }
    if (isTerminal(status.state)) this.#n.offers.allocateSoon();
  }
}

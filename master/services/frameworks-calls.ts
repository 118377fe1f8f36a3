/**
 * The frameworks service's call dispatch (a part of services/frameworks.ts): every scheduler
 * call but SUBSCRIBE, on a framework's open stream. The framework and the stream are checked
 * first (a framework bound to another principal is refused before its stream is looked at), then
 * the call is carried out by the part it is about: offers (ACCEPT, DECLINE, the inverse-offer
 * answers, REVIVE, SUPPRESS), tasks (KILL, SHUTDOWN, ACKNOWLEDGE, RECONCILE), the framework
 * itself (TEARDOWN, UPDATE_FRAMEWORK). The calls are decoded and validated by
 * cores/scheduler-calls.ts; an ACCEPT is planned by the offers core (cores/offers.ts).
 */

import type { Clock } from '../../shared/clock.js';
import { fail as errorOf, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { hasCapability, type FrameworkInfo, type KillPolicy, type TaskInfo, type TaskState, type TaskStatus, type TaskStatusReason } from '../../shared/mesos.js';
import { taskUser, type Approve } from '../../shared/visibility.js';
import type { AgentTable } from '../cores/agents.js';
import { callRefusal, frameworkRoles, withOwnPrincipal, type FrameworkEntry, type FrameworkTable } from '../cores/frameworks.js';
import { clampKillPolicy, planAccept, type Offer } from '../cores/offers.js';
import type { InverseOfferAnswer, SchedulerCall, SchedulerCallBody } from '../cores/scheduler-calls.js';
import type { Access } from '../security/security.js';
import type { CallResult } from '../term/commands.js';
import type { Commits } from '../term/commit.js';
import type { MasterEvents } from '../term/events.js';
import { refuseMs } from './frameworks-allocation.js';
import { callerOf, mayRegister } from './frameworks-streams.js';

/** What the call dispatch needs of the service's other parts and the term. */
export interface CallsNeeds {
  readonly agents: AgentTable;
  readonly frameworks: FrameworkTable;
  readonly commits: Commits;
  readonly bus: MasterEvents;
  readonly clock: Clock;
  readonly log: Logger;
  readonly streams: { isOpen(streamId: string): boolean; remove(frameworkId: string): Promise<CallResult> };
  readonly offers: {
    readonly offers: Map<string, Offer>;
    decline(frameworkId: string, offerIds: readonly string[], refuse: number): void;
    answerInverseOffers(frameworkId: string, answer: 'ACCEPT' | 'DECLINE', body: InverseOfferAnswer): void;
    allocateSoon(): void;
  };
  readonly tasks: {
    runTask(agentId: string, frameworkId: string, framework: FrameworkInfo, task: TaskInfo): boolean;
    killCall(entry: FrameworkEntry, taskId: string, agentHint: string | undefined, killPolicy: KillPolicy | undefined): void;
    acknowledge(agentId: string, frameworkId: string, taskId: string, uuid: string): { ok: true } | { ok: false; reason: string };
    reconcile(entry: FrameworkEntry, reconcile: NonNullable<SchedulerCallBody['reconcile']>): void;
    sendMasterUpdate(frameworkId: string, agentId: string | undefined, taskId: string, state: TaskState, reason: TaskStatusReason, message: string): TaskStatus;
  };
}

export class FrameworkCalls {
  readonly #n: CallsNeeds;

  constructor(needs: CallsNeeds) {
    this.#n = needs;
  }

  /**
   * Checks the framework and stream of a non-SUBSCRIBE call, then runs it. A framework bound to
   * another principal than the caller's is refused first (403), before its stream is looked at.
   */
  call(call: SchedulerCall, streamId: string | undefined, access: Access): CallResult | Promise<CallResult> {
    const { frameworks, offers, tasks } = this.#n;
    const fid = call.frameworkId as string;
    const entry = frameworks.get(fid);
    if (entry === undefined) return fail('FRAMEWORK_NOT_FOUND', fid);
    const stranger = callRefusal(fid, entry.info, callerOf(access));
    if (stranger !== undefined) return { ok: false, error: stranger };
    if (entry.phase !== 'CONNECTED' || entry.streamId === undefined) return fail('FRAMEWORK_NOT_SUBSCRIBED');
    if (streamId === undefined || streamId === '') return fail('STREAM_ID_MISSING');
    if (streamId !== entry.streamId) {
      if (!this.#n.streams.isOpen(streamId)) return fail('STREAM_NOT_FOUND', streamId);
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
        offers.decline(fid, (d.offer_ids ?? []).map((o) => o.value), refuseMs(d.filters));
        return { ok: true };
      }
      case 'ACCEPT_INVERSE_OFFERS':
      case 'DECLINE_INVERSE_OFFERS': {
        const answer = call.type === 'ACCEPT_INVERSE_OFFERS' ? 'ACCEPT' : 'DECLINE';
        offers.answerInverseOffers(fid, answer, (answer === 'ACCEPT' ? b.accept_inverse_offers : b.decline_inverse_offers) ?? {});
        return { ok: true };
      }
      case 'REVIVE':
        frameworks.revive(fid);
        offers.allocateSoon();
        return { ok: true };
      case 'SUPPRESS':
        // As Mesos: no new offers; those already out stay valid until used, declined or rescinded.
        frameworks.suppress(fid);
        return { ok: true };
      case 'KILL': {
        const k = b.kill as NonNullable<SchedulerCallBody['kill']>;
        tasks.killCall(entry, k.task_id.value, k.agent_id?.value, k.kill_policy === undefined ? undefined : clampKillPolicy(k.kill_policy));
        return { ok: true };
      }
      case 'ACKNOWLEDGE': {
        const a = b.acknowledge as NonNullable<SchedulerCallBody['acknowledge']>;
        const r = tasks.acknowledge(a.agent_id.value, fid, a.task_id.value, a.uuid);
        if (!r.ok) this.#n.log.debug('acknowledgement dropped', { frameworkId: fid, reason: r.reason });
        // No allocation: an acknowledgement frees nothing (a task's resources came back with its
        // terminal update, which allocates), and an allocation round per acknowledgement was
        // the master's largest own cost when many tasks start at once (profiled: 1,000 tasks).
        return { ok: true };
      }
      case 'RECONCILE':
        tasks.reconcile(entry, b.reconcile ?? {});
        return { ok: true };
      case 'TEARDOWN':
        return this.#n.streams.remove(fid);
      case 'UPDATE_FRAMEWORK':
        return this.#updateFramework(entry, (b.update_framework as NonNullable<SchedulerCallBody['update_framework']>).framework_info, access);
      case 'SHUTDOWN': {
        // A command task's executor has the task's id (Mesos' command executor): shutting it down kills the task.
        const sd = b.shutdown as NonNullable<SchedulerCallBody['shutdown']>;
        tasks.killCall(entry, sd.executor_id.value, sd.agent_id.value, undefined);
        return { ok: true };
      }
      case 'MESSAGE':
        // Command tasks have no executor that reads framework messages (Mesos' command executor drops them too).
        this.#n.log.debug('framework message dropped: command tasks have no executor', { frameworkId: fid, agentId: b.message?.agent_id.value });
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
    const w = await this.#n.commits.write('ADD_FRAMEWORK', { frameworkId: entry.id }, (reg) => reg.addFramework({ id: entry.id, info, registeredTimeNs: entry.registeredTimeNs }), () => {
      entry.info = info;
    });
    if (!w.ok) return w;
    this.#n.log.info('framework updated', { frameworkId: entry.id });
    this.#n.bus.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: entry.id });
    this.#n.offers.allocateSoon();
    return { ok: true, status: 200 };
  }

  /**
   * ACCEPT. With ACLs, `mayRun` (run_tasks) decides on each task's user (its command's, else the
   * framework's): a refused task is left out of the launch and hears TASK_ERROR
   * REASON_TASK_UNAUTHORIZED, after the offers are found valid (Mesos' order: invalid offers
   * lose every task of the call).
   */
  #accept(entry: FrameworkEntry, accept: NonNullable<SchedulerCallBody['accept']>, mayRun: Approve | undefined): void {
    const { offers, tasks } = this.#n;
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
      else this.#n.log.warn('unsupported offer operation ignored', { frameworkId: entry.id, type: op.type });
    }
    // Task groups need the default executor; Drydock runs command tasks. Each task hears why, none waits forever
    // (an unauthorized one hears that first, as Mesos authorizes before it validates).
    for (const g of groupTasks) {
      if (mayRun !== undefined && !mayRun(g.user)) tasks.sendMasterUpdate(entry.id, undefined, g.taskId, 'TASK_ERROR', 'REASON_TASK_UNAUTHORIZED', notAuthorizedMessage(g.user));
      else tasks.sendMasterUpdate(entry.id, undefined, g.taskId, 'TASK_ERROR', 'REASON_TASK_GROUP_INVALID', 'Drydock runs command tasks only: LAUNCH_GROUP is not supported');
    }
    const live = new Set<string>();
    for (const a of this.#n.agents.all()) for (const t of a.tasks?.values() ?? []) if (t.framework_id.value === entry.id) live.add(t.task_id.value);
    const plan = planAccept({ frameworkId: entry.id, offerIds, offers: offers.offers, taskInfos, liveTaskIds: live });
    if (plan.kind === 'INVALID_OFFERS') {
      for (const id of plan.validOfferIds) offers.offers.delete(id);
      const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
      // These tasks never reached the table: only the framework hears of them (never `apply`, a duplicate id must not end the live task).
      for (const taskId of [...plan.taskIds, ...unauthorized.map((u) => u.taskId)]) tasks.sendMasterUpdate(entry.id, undefined, taskId, state, 'REASON_INVALID_OFFERS', plan.message);
      offers.allocateSoon();
      return;
    }
    for (const u of unauthorized) {
      this.#n.log.info('task launch not authorized', { frameworkId: entry.id, taskId: u.taskId, user: u.user ?? null });
      tasks.sendMasterUpdate(entry.id, plan.agentId, u.taskId, 'TASK_ERROR', 'REASON_TASK_UNAUTHORIZED', notAuthorizedMessage(u.user));
    }
    for (const id of plan.offerIds) offers.offers.delete(id);
    for (const r of plan.rejected) tasks.sendMasterUpdate(entry.id, plan.agentId, r.taskId, 'TASK_ERROR', 'REASON_TASK_INVALID', r.message);
    for (const task of plan.launches) {
      if (!tasks.runTask(plan.agentId, entry.id, entry.info, task)) {
        const state: TaskState = hasCapability(entry.info, 'PARTITION_AWARE') ? 'TASK_DROPPED' : 'TASK_LOST';
        tasks.sendMasterUpdate(entry.id, plan.agentId, task.task_id.value, state, 'REASON_AGENT_DISCONNECTED', 'Agent is not connected');
      }
    }
    const refuse = refuseMs(accept.filters);
    const clock = this.#n.clock;
    if (plan.unused.length > 0) this.#n.frameworks.filter(entry.id, plan.agentId, clock.now() + refuse, clock.now());
    offers.allocateSoon();
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

/**
 * The service: one spec kept running through plans. It owns the plans (deploy or update,
 * recovery, decommission, maintenance, custom), the offers it holds, and the answer to each
 * inverse offer; it learns from scheduler events and acts through a narrow Mesos port, so the
 * same code runs against a Drydock or a Mesos master. Every decision is written to the state
 * store before the call that carries it out.
 *
 * One cycle (after any event, coalesced): expire back-offs, notice failed pods (recovery) and
 * pods on machines going into maintenance, ask the coordinator which steps run, advance each
 * (kill, place, launch), send the launches, answer inverse offers, give back offers it will not
 * use.
 */
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import type { TaskInfo, TaskState, TaskStatus } from '../shared/mesos.js';
import { isTerminal } from '../shared/mesos.js';
import { scalarOf } from '../shared/resources.js';
import { coordinate, byPriority } from '../shared/plans/coordinator.js';
import { newPhase, newPlan, Plan, Phase, Step } from '../shared/plans/plan.js';
import { applyOverrides, applyReruns, overridesOf, type PlanOverrides } from '../shared/plans/overrides.js';
import { conflicts, type StrategyName } from '../shared/plans/strategy.js';
import { atGoal, choosePlacement, demand, instanceName, isLive, newTaskId, parseInstance, readinessOf, stepName, taskInfo, taskName, type HeldOffer } from './pods.js';
import type { PodSpec, ServiceSpec, TaskSpec } from './spec-types.js';
import { taskNeedsRelaunch } from './spec-changes.js';
import type { StateStore, TaskRecord } from './state.js';

/** What the service asks of the master (the scheduler API v1 calls it uses). */
export interface MesosPort {
  launch(offerId: string, tasks: readonly TaskInfo[]): Promise<void>;
  decline(offerIds: readonly string[], refuseSeconds: number): Promise<void>;
  kill(taskId: string, agentId: string): Promise<void>;
  acknowledge(agentId: string, taskId: string, uuid: string): Promise<void>;
  reconcile(tasks: ReadonlyArray<{ taskId: string; agentId: string }>): Promise<void>;
  revive(): Promise<void>;
  acceptInverseOffers(ids: readonly string[]): Promise<void>;
  declineInverseOffers(ids: readonly string[], refuseSeconds: number): Promise<void>;
}

export interface ServiceOptions {
  readonly store: StateStore;
  readonly clock: Clock;
  readonly log: Logger;
  readonly frameworkName: string;
  /** First back-off of a failing pod (doubles per failure). */
  readonly backoffInitialMs: number;
  readonly backoffMaxMs: number;
  /** How long an unused offer is held before it is declined (so offers of several agents can be compared). */
  readonly offerHoldMs: number;
  /** A stored configuration by id (undefined when unknown or unreadable). */
  configOf(id: string): ServiceSpec | undefined;
  /** Where offers and subscriptions are counted (scheduler/metrics.ts); none: not counted. */
  readonly instruments?: ServiceInstruments | undefined;
}

/** What the service reports as it happens, for the scheduler's counters. */
export interface ServiceInstruments {
  /** A SUBSCRIBED stream was handed to the service (the first one, or a re-subscription). */
  onSubscribed(): void;
  /** Offers arrived. */
  onOffers(count: number): void;
  /** One offer was used: an ACCEPT launching `tasks` tasks went out. */
  onOfferAccepted(tasks: number): void;
  /** Held offers were given back with DECLINE. */
  onOffersDeclined(count: number): void;
  /** Inverse offers answered (ACCEPT_INVERSE_OFFERS or DECLINE_INVERSE_OFFERS). */
  onInverseOffers(answer: 'accepted' | 'declined', count: number): void;
}

type WorkKind = 'deploy' | 'custom' | 'recover' | 'decommission' | 'move';

/** What a step does to which pod instance, and what it has launched so far. */
interface Work {
  readonly kind: WorkKind;
  readonly pod: PodSpec;
  readonly index: number;
  /** Task keys (`server`) the step launches, kills or moves. */
  readonly tasks: readonly string[];
  /** recover: relaunch elsewhere on the target configuration (replace, lost agent) rather than in place. */
  readonly permanent: boolean;
  /** move: the agent being vacated. */
  readonly fromAgent: string | undefined;
  /** Task ids of the current attempt. */
  launched: string[];
  /** Tasks this step asked to be killed (so a kill is sent once). */
  readonly killed: Set<string>;
  /** Since when no offer fitted (cleared by a launch). */
  unplacedSinceMs?: number | undefined;
  /** A restart's new run has begun (what it had launched is forgotten); false again once it launches. */
  rerunning?: boolean | undefined;
}

const RECOVERY_STATES: ReadonlySet<TaskState> = new Set(['TASK_UNREACHABLE']);
/** Ended, or out of reach: either way a goal-RUNNING task has to be launched again. */
const ended = (t: TaskRecord): boolean => !isLive(t) || RECOVERY_STATES.has(t.status?.state as TaskState);
/** These mean the machine went away or was taken: relaunch elsewhere. */
const PERMANENT_STATES: ReadonlySet<TaskState> = new Set(['TASK_GONE', 'TASK_GONE_BY_OPERATOR', 'TASK_LOST', 'TASK_UNREACHABLE', 'TASK_DROPPED']);

/** How long a pod on a machine going into maintenance finds no room before the inverse offer is declined. */
const DECLINE_AFTER_MS = 3_000;

export class Service {
  readonly #o: ServiceOptions;
  #spec: ServiceSpec;
  #configId: string;
  /** Errors of a spec that could not become the target: shown on the deploy plan (ERROR, 417). */
  #specErrors: string[] = [];
  #deploy!: Plan;
  readonly #recoveryPhases: Phase[] = [];
  readonly #recovery: Plan;
  #decommission: Plan | undefined;
  readonly #maintenancePhases: Phase[] = [];
  readonly #maintenance: Plan;
  #custom: Plan[] = [];
  readonly #work = new Map<Step, Work>();
  /** Task records by task id. */
  readonly #tasks = new Map<string, TaskRecord>();
  readonly #offers = new Map<string, HeldOffer>();
  /** Outstanding inverse offers by agent. */
  readonly #inverse = new Map<string, { ids: Set<string>; hostname: string; declined: Set<string> }>();
  /** Agents known to be draining (a task ended with REASON_AGENT_DRAINING) until they offer again. */
  readonly #draining = new Set<string>();
  /** Failures in a row per pod instance, for back-off. */
  readonly #failures = new Map<string, number>();
  #subscribed = false;
  #mesos: MesosPort | undefined;
  #cycleQueued = false;
  #timer: TimerHandle | undefined;
  #lastRevive = 0;
  #closed = false;
  /** Task ids whose latest status is in memory but not yet written (see #flush). */
  readonly #unwritten = new Set<string>();
  readonly #unacknowledged: Array<{ agentId: string; taskId: string; uuid: string }> = [];
  /** A restart was carried out this cycle: the overrides are stored again at its end. */
  #overridesChanged = false;
  /** Called after each cycle (watchPlans). */
  readonly #watchers = new Set<() => void>();

  /** `errors`: why the spec given at start did not become the target (shown on the deploy plan). */
  constructor(options: ServiceOptions, spec: ServiceSpec, configId: string, errors: readonly string[] = []) {
    this.#o = options;
    this.#spec = spec;
    this.#configId = configId;
    this.#specErrors = [...errors];
    for (const t of options.store.tasks()) this.#tasks.set(t.taskId, t);
    // The plans hold these arrays: phases added to them appear in the plans.
    this.#recovery = newPlan('recovery', 'parallel', this.#recoveryPhases);
    this.#maintenance = newPlan('maintenance', 'parallel', this.#maintenancePhases);
    // Read before #build, which stores every plan's overrides as they are now (the recovery plan: none).
    const recovery = options.store.overrides('recovery')?.value as PlanOverrides | undefined;
    this.#build();
    this.#restoreRecoveryReruns(recovery);
  }

  get spec(): ServiceSpec { return this.#spec; }
  get configId(): string { return this.#configId; }
  get subscribed(): boolean { return this.#subscribed; }

  /** Every plan, in the coordinator's priority order. */
  plans(): Plan[] {
    return byPriority([this.#deploy, this.#recovery, ...(this.#decommission ? [this.#decommission] : []), this.#maintenance, ...this.#custom]);
  }

  /** Task records, current and retiring. */
  tasks(): TaskRecord[] { return [...this.#tasks.values()]; }

  /** A new target (a changed spec): plans are rebuilt; a rollout in progress converges on it. */
  retarget(spec: ServiceSpec, configId: string, errors: readonly string[]): void {
    this.#specErrors = [...errors];
    if (configId !== this.#configId) {
      this.#spec = spec;
      this.#configId = configId;
      this.#relabel();
    }
    this.#build();
    this.kick();
  }

  /** Stored tasks whose pod did not change in a way that reaches the process now count as on the target (plans.md §7.2). */
  #relabel(): void {
    const changed: TaskRecord[] = [];
    for (const t of this.#tasks.values()) {
      if (t.configId === this.#configId) continue;
      const pod = this.#spec.pods.find((p) => p.type === t.podType);
      if (pod === undefined) continue;
      const previous = this.#o.configOf(t.configId)?.pods.find((p) => p.type === t.podType)?.tasks.find((x) => x.name === t.task);
      const next = pod.tasks.find((x) => x.name === t.task);
      if (previous === undefined || next === undefined || taskNeedsRelaunch(previous, next)) continue;
      changed.push({ ...t, configId: this.#configId });
    }
    if (changed.length === 0) return;
    this.#o.store.putTasks(changed);
    for (const t of changed) this.#tasks.set(t.taskId, t);
  }


  // ---------------------------------------------------------------- plans from state

  #taskSpec(pod: PodSpec, task: string): TaskSpec | undefined { return pod.tasks.find((t) => t.name === task); }

  /**
   * The latest launched task of that name: by default the one in service (not retiring); with
   * `retiring`, whatever ran last, which says where an instance ran before its relaunch.
   */
  #current(podType: string, index: number, task: string, retiring = false): TaskRecord | undefined {
    const name = taskName(podType, index, task);
    let best: TaskRecord | undefined;
    for (const t of this.#tasks.values()) if (t.name === name && (retiring || !t.retiring) && (best === undefined || t.launchedAtMs >= best.launchedAtMs)) best = t;
    return best;
  }

  /** A launch step's status from what its tasks are doing, for a plan built from stored state. */
  #derive(kind: WorkKind, pod: PodSpec, index: number, tasks: readonly string[]): { status: 'PENDING' | 'STARTING' | 'STARTED' | 'COMPLETE'; launched: string[] } {
    const recs = tasks.map((t) => this.#current(pod.type, index, t));
    const done = tasks.every((t, i) => {
      const r = recs[i];
      const spec = this.#taskSpec(pod, t);
      if (r === undefined || spec === undefined) return false;
      if (r.permanentlyFailed && kind === 'deploy') return true; // recovery's business (plans.md §8)
      if (spec.goal === 'ONCE' && r.status?.state === 'TASK_FINISHED') return true;
      return r.configId === this.#configId && atGoal(r, spec);
    });
    if (done) return { status: 'COMPLETE', launched: [] };
    const inFlight = recs.filter((r): r is TaskRecord => r !== undefined && r.configId === this.#configId && isLive(r));
    if (kind === 'deploy' && inFlight.length === tasks.length) {
      return { status: inFlight.some((r) => r.status?.state === 'TASK_RUNNING') ? 'STARTED' : 'STARTING', launched: inFlight.map((r) => r.taskId) };
    }
    return { status: 'PENDING', launched: [] };
  }

  #launchStep(kind: WorkKind, pod: PodSpec, index: number, tasks: readonly string[]): Step {
    const d = kind === 'custom' ? { status: 'PENDING' as const, launched: [] } : this.#derive(kind, pod, index, tasks);
    const step = new Step({ name: stepName(pod.type, index, tasks), asset: { pod: instanceName(pod.type, index), tasks }, status: d.status });
    this.#work.set(step, { kind, pod, index, tasks, permanent: false, fromAgent: undefined, launched: d.launched, killed: new Set() });
    return step;
  }

  /** Steps of one phase: per instance, the phase's task groups (or all the pod's tasks). */
  #phaseSteps(kind: WorkKind, pod: PodSpec, groupsFor: (index: number) => ReadonlyArray<readonly string[]>): { steps: Step[]; after: Map<string, string[]> } {
    const steps: Step[] = [];
    const after = new Map<string, string[]>();
    for (let index = 0; index < pod.count; index++) {
      let previous: string | undefined;
      for (const group of groupsFor(index)) {
        const step = this.#launchStep(kind, pod, index, group);
        steps.push(step);
        // Custom steps of one instance run in order; instances run side by side (plans.md §7.1).
        after.set(step.name, previous === undefined ? [] : [previous]);
        previous = step.name;
      }
    }
    return { steps, after };
  }

  #buildPlan(name: string, kind: WorkKind, errors: readonly string[]): Plan {
    const planSpec = this.#spec.plans.find((p) => p.name === name);
    const phases: Phase[] = [];
    if (planSpec === undefined) {
      for (const pod of this.#spec.pods) phases.push(newPhase(pod.type, 'serial', this.#phaseSteps(kind, pod, () => [pod.tasks.map((t) => t.name)]).steps));
      return newPlan(name, 'serial', phases, { errors });
    }
    for (const ph of planSpec.phases) {
      const pod = this.#spec.pods.find((p) => p.type === ph.pod);
      if (pod === undefined) continue; // the spec checker guarantees it exists
      const groups = (index: number): ReadonlyArray<readonly string[]> =>
        ph.steps === undefined ? [pod.tasks.map((t) => t.name)] : ph.steps.byIndex[String(index)] ?? ph.steps.default ?? [pod.tasks.map((t) => t.name)];
      const { steps, after } = this.#phaseSteps(kind, pod, groups);
      let strategy: StrategyName = ph.strategy;
      // Custom steps in a parallel phase: chained within an instance, instances in parallel.
      if (ph.steps !== undefined && strategy === 'parallel') strategy = 'dependency';
      if (ph.steps !== undefined && strategy === 'parallel-canary') strategy = 'dependency-canary';
      phases.push(newPhase(ph.name, strategy, steps, { after }));
    }
    return newPlan(name, planSpec.strategy, phases, { errors });
  }

  /** (Re)builds deploy, decommission and custom plans from the spec and the stored tasks, then lays the operator's overrides back. */
  #build(): void {
    for (const [step, w] of this.#work) if (w.kind === 'deploy' || w.kind === 'custom' || w.kind === 'decommission') this.#work.delete(step);
    const useUpdate = this.#o.store.deployedOnce() && this.#spec.plans.some((p) => p.name === 'update');
    // The update plan, once the service has deployed, is served as `deploy` (what operators watch).
    const deploy = this.#buildPlan(useUpdate ? 'update' : 'deploy', 'deploy', this.#specErrors);
    this.#deploy = useUpdate ? newPlan('deploy', deploy.strategy.name, deploy.phases, { errors: this.#specErrors }) : deploy;
    this.#custom = this.#spec.plans.filter((p) => p.name !== 'deploy' && p.name !== 'update').map((p) => {
      const plan = this.#buildPlan(p.name, 'custom', []);
      plan.interrupt(); // custom plans wait for `start` (plans.md §5)
      return plan;
    });
    this.#decommission = this.#buildDecommission();
    for (const plan of [this.#deploy, ...this.#custom]) {
      const stored = this.#o.store.overrides(plan.name);
      if (stored === undefined) continue;
      const o = stored.value as PlanOverrides;
      // A new target is a new rollout: only "the operator paused this plan" carries over to it,
      // and the restarts the operator asked for that have not been carried out yet.
      if (stored.configId === this.#configId) applyOverrides(plan, o);
      else {
        if (o.interrupted) plan.interrupt();
        applyReruns(plan, o);
      }
    }
    this.saveOverrides();
  }

  /**
   * Recovery phases live in memory only (a restarted scheduler finds failed pods again), but a
   * restart of a recovery step not yet carried out is the operator's and must outlive the
   * scheduler: each comes back as a recovery step that relaunches its tasks in place. Unless the
   * deploy plan relaunches that instance anyway (its tasks were killed and retired before the
   * stop, so deploy finds none in service): two steps relaunching one pod would fight over it.
   */
  #restoreRecoveryReruns(stored: PlanOverrides | undefined): void {
    let restored = false;
    for (const [key, o] of Object.entries(stored?.steps ?? {})) {
      if (o.rerun !== true) continue;
      // Recovery phases are named as their one step: `hello-0:[server]/hello-0:[server]`.
      const name = key.slice(0, Math.floor((key.length - 1) / 2));
      const m = /^(.+):\[(.*)\]$/.exec(name);
      if (m === null || `${name}/${name}` !== key) continue;
      const instance = parseInstance(m[1] as string, this.#spec.pods.map((p) => p.type));
      const pod = this.#spec.pods.find((p) => p.type === instance?.podType);
      const tasks = (m[2] as string).split(', ');
      if (instance === undefined || pod === undefined || instance.index >= pod.count || !tasks.every((t) => pod.tasks.some((x) => x.name === t))) continue;
      const asset = { pod: instanceName(pod.type, instance.index), tasks };
      if (this.#deploy.steps().some((x) => x.status() !== 'COMPLETE' && x.asset !== undefined && conflicts(x.asset, asset))) continue;
      const from = tasks.map((t) => this.#current(pod.type, instance.index, t, true)).find((r) => r !== undefined)?.agentId;
      this.#addRecoveryStep(pod, instance.index, tasks, false, from).restart();
      restored = true;
    }
    if (restored) this.saveOverrides();
  }

  #buildDecommission(): Plan | undefined {
    const phases: Phase[] = [];
    const instances = new Map<string, { podType: string; index: number }>();
    for (const t of this.#tasks.values()) {
      const pod = this.#spec.pods.find((p) => p.type === t.podType);
      if (pod !== undefined && t.index < pod.count) continue;
      instances.set(instanceName(t.podType, t.index), { podType: t.podType, index: t.index });
    }
    // Highest index first, as the SDK: the instances that remain stay a dense 0..count-1.
    const order = [...instances.values()].sort((a, b) => a.podType.localeCompare(b.podType) || b.index - a.index);
    for (const { podType, index } of order) {
      const pod: PodSpec = this.#spec.pods.find((p) => p.type === podType) ?? { type: podType, count: 0, placement: { uniqueHostname: false, text: '' }, allowDecommission: true, tasks: [] };
      const taskKeys = [...new Set([...this.#tasks.values()].filter((t) => t.podType === podType && t.index === index).map((t) => t.task))];
      const step = new Step({ name: `kill-${instanceName(podType, index)}`, asset: { pod: instanceName(podType, index), tasks: taskKeys } });
      this.#work.set(step, { kind: 'decommission', pod, index, tasks: taskKeys, permanent: false, fromAgent: undefined, launched: [], killed: new Set() });
      phases.push(newPhase(instanceName(podType, index), 'serial', [step]));
    }
    return phases.length === 0 ? undefined : newPlan('decommission', 'serial', phases);
  }

  /**
   * Stores every plan's overrides (plan-level holds, canary progress, forced steps, restarts not
   * yet carried out), keyed to the target; the recovery plan's for its restarts only.
   */
  saveOverrides(): void {
    for (const plan of [this.#deploy, ...this.#custom, this.#recovery]) this.#o.store.setOverrides(plan.name, this.#configId, overridesOf(plan));
  }

  // ---------------------------------------------------------------- events

  /** SUBSCRIBED: from now on calls go through `mesos`; every live task is reconciled. */
  onSubscribed(mesos: MesosPort): void {
    this.#mesos = mesos;
    this.#subscribed = true;
    this.#o.instruments?.onSubscribed();
    const live = [...this.#tasks.values()].filter(isLive).map((t) => ({ taskId: t.taskId, agentId: t.agentId }));
    // Offers held from an earlier stream are gone with it.
    this.#offers.clear();
    this.#inverse.clear();
    // Explicit for what we know (the master answers even for tasks it lost), then implicit: the
    // master reports every task it has for us, so one we have no record of (launched just before
    // a crash, its record lost) is found and killed.
    void mesos.reconcile(live).then(() => mesos.reconcile([])).catch((e: unknown) => this.#o.log.warn('reconcile failed', { error: e }));
    this.kick();
  }

  onDisconnected(): void {
    this.#subscribed = false;
    this.#mesos = undefined;
    this.#offers.clear();
    this.#inverse.clear();
  }

  onOffers(offers: ReadonlyArray<Record<string, unknown>>): void {
    const now = this.#o.clock.now();
    this.#o.instruments?.onOffers(offers.length);
    for (const o of offers) {
      const id = (o['id'] as { value: string }).value;
      const agentId = (o['agent_id'] as { value: string }).value;
      const resources = (o['resources'] as HeldOffer['resources'] | undefined) ?? [];
      const start = (o['unavailability'] as { start?: { nanoseconds?: unknown } } | undefined)?.start?.nanoseconds;
      this.#draining.delete(agentId); // a draining agent is not offered: an offer says it is back
      this.#offers.set(id, {
        id, agentId, hostname: String(o['hostname'] ?? ''), resources,
        unavailableFromNs: start === undefined ? undefined : BigInt(start as string | number | bigint),
        cpus: scalarOf(resources, 'cpus'), memMb: scalarOf(resources, 'mem'), receivedAtMs: now,
      });
    }
    this.kick();
  }

  onRescind(offerId: string): void { this.#offers.delete(offerId); }

  onInverseOffers(offers: ReadonlyArray<Record<string, unknown>>): void {
    for (const o of offers) {
      const id = (o['id'] as { value: string }).value;
      const agentId = (o['agent_id'] as { value: string }).value;
      const url = o['url'] as { address?: { hostname?: string } } | undefined;
      let entry = this.#inverse.get(agentId);
      if (entry === undefined) this.#inverse.set(agentId, (entry = { ids: new Set(), hostname: url?.address?.hostname ?? agentId, declined: new Set() }));
      entry.ids.add(id);
      this.#o.log.info('inverse offer', { inverseOfferId: id, agentId, hostname: entry.hostname });
    }
    this.kick();
  }

  onRescindInverse(id: string): void {
    for (const [agent, e] of this.#inverse) {
      e.ids.delete(id);
      e.declined.delete(id);
      if (e.ids.size === 0) this.#inverse.delete(agent);
    }
  }

  /** UPDATE: stored first, acknowledged after, then the steps that own the task move on. */
  onUpdate(status: TaskStatus): void {
    const rec = this.#tasks.get(status.task_id.value);
    if (rec !== undefined) {
      const ready = readinessOf(status);
      const next: TaskRecord = {
        ...rec,
        status,
        ready: ready ?? (status.state === 'TASK_RUNNING' ? rec.ready : false),
        agentId: status.agent_id?.value ?? rec.agentId,
        permanentlyFailed: rec.permanentlyFailed || status.state === 'TASK_GONE_BY_OPERATOR',
      };
      this.#tasks.set(next.taskId, next);
      this.#unwritten.add(next.taskId);
      if (status.reason === 'REASON_AGENT_DRAINING' && isTerminal(status.state)) this.#draining.add(next.agentId);
    } else if (!isTerminal(status.state) && status.agent_id !== undefined && this.#mesos !== undefined) {
      // A task this scheduler does not know (its record was erased): nobody should run it.
      void this.#mesos.kill(status.task_id.value, status.agent_id.value).catch(() => {});
    }
    if (status.uuid !== undefined && status.agent_id !== undefined) this.#unacknowledged.push({ agentId: status.agent_id.value, taskId: status.task_id.value, uuid: status.uuid });
    this.kick();
  }

  /**
   * Writes the statuses received since the last flush in one transaction, then acknowledges them:
   * an update is acknowledged only once it is on disk, and a burst of updates (a parallel
   * deploy) costs one fsync instead of one each.
   */
  #flush(): void {
    if (this.#unwritten.size > 0) {
      const records = [...this.#unwritten].map((id) => this.#tasks.get(id)).filter((t): t is TaskRecord => t !== undefined);
      this.#unwritten.clear();
      this.#o.store.putTasks(records);
    }
    const acks = this.#unacknowledged.splice(0);
    const mesos = this.#mesos;
    if (mesos === undefined) return;
    for (const a of acks) void mesos.acknowledge(a.agentId, a.taskId, a.uuid).catch((e: unknown) => this.#o.log.warn('acknowledge failed', { taskId: a.taskId, error: e }));
  }

  // ---------------------------------------------------------------- pod verbs

  /** Instance names: the spec's, and any instance still running beyond its count. */
  instances(): string[] {
    const names = new Set<string>();
    for (const pod of this.#spec.pods) for (let i = 0; i < pod.count; i++) names.add(instanceName(pod.type, i));
    for (const t of this.#tasks.values()) names.add(instanceName(t.podType, t.index));
    return [...names];
  }

  /** The current tasks of an instance (its retiring ones too while they run). */
  instanceTasks(name: string): TaskRecord[] {
    return [...this.#tasks.values()].filter((t) => instanceName(t.podType, t.index) === name && (!t.retiring || isLive(t)));
  }

  /**
   * `pod restart`: kill the instance's tasks; recovery relaunches them in place. `pod replace`:
   * the same, but marked permanently failed, so recovery relaunches them on another agent.
   */
  restartPod(name: string, replace: boolean): TaskRecord[] | undefined {
    const tasks = this.instanceTasks(name).filter((t) => !t.retiring);
    if (tasks.length === 0) return undefined;
    this.#failures.delete(name);
    if (replace) {
      const marked = tasks.map((t) => ({ ...t, permanentlyFailed: true }));
      this.#o.store.putTasks(marked);
      for (const t of marked) this.#tasks.set(t.taskId, t);
    }
    for (const t of tasks) if (isLive(t)) this.#kill(t);
    this.kick();
    return tasks;
  }

  #kill(t: TaskRecord): void {
    this.#o.log.info('killing task', { taskId: t.taskId, agentId: t.agentId });
    void this.#mesos?.kill(t.taskId, t.agentId).catch((e: unknown) => this.#o.log.warn('kill failed', { taskId: t.taskId, error: e }));
  }

  // ---------------------------------------------------------------- the cycle

  /** Runs a cycle soon (coalescing bursts of events into one). */
  kick(): void {
    if (this.#cycleQueued || this.#closed) return;
    this.#cycleQueued = true;
    setImmediate(() => {
      this.#cycleQueued = false;
      try {
        this.#flush();
        this.#cycle();
      } catch (e) {
        this.#o.log.error('cycle failed', { error: e });
      }
      // Every change to a plan (an event, an operator's verb, a timer) ends in a cycle.
      for (const w of [...this.#watchers]) {
        try {
          w();
        } catch (e) {
          this.#o.log.error('plan watcher failed', { error: e });
        }
      }
    });
  }

  /** Calls `fn` after every cycle, when the plans may have changed (the API's plan stream); returns the unsubscribe. */
  watchPlans(fn: () => void): () => void {
    this.#watchers.add(fn);
    return () => this.#watchers.delete(fn);
  }

  close(): void {
    if (!this.#closed) this.#flush();
    this.#closed = true;
    this.#timer?.cancel();
  }

  #cycle(): void {
    if (this.#closed) return;
    const now = this.#o.clock.now();
    for (const plan of this.plans()) plan.expireDelays(now);
    for (const [step, work] of this.#work) this.#evaluate(step, work);
    const busy = this.#busyInstances();
    this.#noticeFailures(busy);
    this.#noticeMaintenance(busy);
    if (this.#deploy.status() === 'COMPLETE' && !this.#o.store.deployedOnce()) this.#o.store.setDeployedOnce();

    const launches = new Map<string, TaskInfo[]>();
    let wantOffers = false;
    if (this.#mesos !== undefined) {
      for (const { plan, step } of coordinate(this.plans())) {
        const work = this.#work.get(step);
        if (work === undefined) continue;
        const s = step.storedStatus();
        if (s !== 'PENDING' && s !== 'PREPARED') continue;
        if (!this.#advance(plan, step, work, launches)) wantOffers = true;
      }
    }
    if (this.#overridesChanged) {
      this.#overridesChanged = false;
      this.saveOverrides();
    }
    this.#send(launches, wantOffers, now);
    this.#answerInverseOffers();
    this.#armTimer(now);
  }

  /** Wakes the next cycle when a back-off ends or a held offer is due back. */
  #armTimer(now: number): void {
    this.#timer?.cancel();
    let next = now + 5_000;
    for (const plan of this.plans()) {
      for (const s of plan.steps()) {
        const until = s.delayedUntil();
        if (until !== undefined) next = Math.min(next, until);
      }
    }
    for (const o of this.#offers.values()) next = Math.min(next, o.receivedAtMs + this.#o.offerHoldMs);
    this.#timer = this.#o.clock.setTimer(Math.max(10, next - now), () => this.kick());
  }

  /** Sends this cycle's launches (one ACCEPT per offer) and gives back offers held long enough. */
  #send(launches: Map<string, TaskInfo[]>, wantOffers: boolean, now: number): void {
    const mesos = this.#mesos;
    if (mesos === undefined) return;
    for (const [offerId, infos] of launches) {
      this.#offers.delete(offerId);
      this.#o.instruments?.onOfferAccepted(infos.length);
      mesos.launch(offerId, infos).catch((e: unknown) => {
        // The master refused the ACCEPT: the tasks never started. Record that, so the steps retry.
        this.#o.log.warn('launch refused', { offerId, error: e });
        const failed: TaskRecord[] = [];
        for (const info of infos) {
          const rec = this.#tasks.get(info.task_id.value);
          if (rec === undefined || rec.status !== undefined) continue;
          failed.push({ ...rec, status: { task_id: info.task_id, state: 'TASK_ERROR', source: 'SOURCE_MASTER', message: `launch refused: ${(e as Error).message}`, timestamp: this.#o.clock.now() / 1000 } });
        }
        this.#o.store.putTasks(failed);
        for (const r of failed) this.#tasks.set(r.taskId, r);
        this.kick();
      });
    }
    const due = [...this.#offers.values()].filter((o) => now - o.receivedAtMs >= this.#o.offerHoldMs).map((o) => o.id);
    if (due.length > 0) {
      for (const id of due) this.#offers.delete(id);
      this.#o.instruments?.onOffersDeclined(due.length);
      // Short refusals while work waits for room, so the next round of offers comes soon.
      // Short refusals while any plan has work left (the next step will want offers soon, from
      // every agent, so placement can spread); long ones when the service is at rest.
      void mesos.decline(due, wantOffers || this.#workLeft() ? 1 : 5).catch(() => {});
    }
    // A step found no room in what is held: ask for everything again (clears our refusals).
    if (wantOffers && now - this.#lastRevive >= 1_000) {
      this.#lastRevive = now;
      void mesos.revive().catch(() => {});
    }
  }

  /** Whether a plan that is not held has steps left to do. */
  #workLeft(): boolean {
    return this.plans().some((p) => !p.isInterrupted() && p.status() !== 'COMPLETE');
  }

  /** Inverse offers: ACCEPT when the agent holds none of this service's tasks; DECLINE when a pod there cannot be moved. */
  #answerInverseOffers(): void {
    const mesos = this.#mesos;
    if (mesos === undefined) return;
    for (const [agentId, entry] of this.#inverse) {
      const mine = [...this.#tasks.values()].some((t) => t.agentId === agentId && isLive(t));
      if (!mine) {
        const ids = [...entry.ids];
        this.#inverse.delete(agentId);
        this.#o.log.info('inverse offer accepted', { agentId, hostname: entry.hostname });
        this.#o.instruments?.onInverseOffers('accepted', ids.length);
        void mesos.acceptInverseOffers(ids).catch(() => {});
        continue;
      }
      // Stuck: a pod there found no room for a while (not just "no offers held yet").
      const now = this.#o.clock.now();
      const stuck = this.#movesOf(agentId).some(({ step, work }) => step.storedStatus() === 'PENDING' && work.unplacedSinceMs !== undefined && now - work.unplacedSinceMs >= DECLINE_AFTER_MS);
      const undeclined = [...entry.ids].filter((id) => !entry.declined.has(id));
      if (stuck && undeclined.length > 0) {
        for (const id of undeclined) entry.declined.add(id);
        this.#o.log.info('inverse offer declined', { agentId, hostname: entry.hostname });
        this.#o.instruments?.onInverseOffers('declined', undeclined.length);
        void mesos.declineInverseOffers(undeclined, 5).catch(() => {});
      }
    }
  }

  #movesOf(agentId: string): Array<{ step: Step; work: Work }> {
    return [...this.#work].filter(([, w]) => w.kind === 'move' && w.fromAgent === agentId).map(([step, work]) => ({ step, work }));
  }

  /**
   * Instances (`hello-0`) some step not yet complete works on: recovery and maintenance leave
   * them alone. A step that is held (its plan not started or paused, or a canary waiting) and has
   * launched nothing does not own its pod. Computed once per cycle, and updated as steps are added.
   */
  #busyInstances(): Set<string> {
    const planOf = new Map<Step, Plan>();
    for (const plan of this.plans()) for (const s of plan.steps()) planOf.set(s, plan);
    const busy = new Set<string>();
    for (const [step, w] of this.#work) {
      if (step.status() === 'COMPLETE') continue;
      if (w.launched.length === 0 && (step.status() === 'WAITING' || planOf.get(step)?.isInterrupted() === true)) continue;
      busy.add(instanceName(w.pod.type, w.index));
    }
    return busy;
  }

  /** Goal-RUNNING tasks that ended on their own become recovery phases (one per instance). */
  #noticeFailures(busy: Set<string>): void {
    for (const pod of this.#spec.pods) {
      for (let index = 0; index < pod.count; index++) {
        const failed: TaskRecord[] = [];
        for (const task of pod.tasks) {
          if (task.goal !== 'RUNNING') continue;
          const cur = this.#current(pod.type, index, task.name);
          if (cur !== undefined && ended(cur)) failed.push(cur);
        }
        if (failed.length === 0 || busy.has(instanceName(pod.type, index))) continue;
        // Ended on a machine going into maintenance: the maintenance plan moves it.
        if (failed.some((t) => this.#draining.has(t.agentId) || this.#inverse.has(t.agentId) || t.status?.reason === 'REASON_AGENT_DRAINING')) {
          this.#addMove(failed[0]?.agentId ?? '', pod, index, failed.map((t) => t.task));
          busy.add(instanceName(pod.type, index));
          continue;
        }
        const essential = failed.some((t) => this.#taskSpec(pod, t.task)?.essential !== false);
        const tasks = essential ? pod.tasks.filter((t) => t.goal === 'RUNNING').map((t) => t.name) : failed.map((t) => t.task);
        const permanent = failed.some((t) => t.permanentlyFailed || PERMANENT_STATES.has(t.status?.state as TaskState));
        const withAsset = this.#addRecoveryStep(pod, index, tasks, permanent, failed[0]?.agentId);
        busy.add(instanceName(pod.type, index));
        // A task that outlived the longest back-off was stable: its failure starts the count afresh.
        const stable = failed.every((t) => this.#o.clock.now() - t.launchedAtMs > this.#o.backoffMaxMs);
        const failures = (stable ? 0 : this.#failures.get(instanceName(pod.type, index)) ?? 0) + 1;
        this.#failures.set(instanceName(pod.type, index), failures);
        if (failures > 1) {
          const delay = Math.min(this.#o.backoffMaxMs, this.#o.backoffInitialMs * 2 ** (failures - 2));
          withAsset.delay(this.#o.clock.now() + delay);
          withAsset.note = `back-off ${Math.round(delay / 100) / 10} s after ${failures - 1} failed relaunch${failures > 2 ? 'es' : ''}`;
        }
        this.#o.log.info('pod needs recovery', { pod: instanceName(pod.type, index), tasks, permanent, failures });
      }
    }
  }

  /** A recovery phase of one step for these tasks of an instance, replacing an older phase of the same name. */
  #addRecoveryStep(pod: PodSpec, index: number, tasks: readonly string[], permanent: boolean, fromAgent: string | undefined): Step {
    const name = stepName(pod.type, index, tasks);
    const step = new Step({ name, asset: { pod: instanceName(pod.type, index), tasks } });
    this.#work.set(step, { kind: 'recover', pod, index, tasks, permanent, fromAgent, launched: [], killed: new Set() });
    const previous = this.#recoveryPhases.findIndex((p) => p.name === name);
    if (previous !== -1) {
      const old = this.#recoveryPhases[previous];
      for (const s of old?.steps ?? []) this.#work.delete(s);
      this.#recoveryPhases.splice(previous, 1);
    }
    this.#recoveryPhases.push(newPhase(name, 'parallel', [step]));
    return step;
  }

  /** A machine is going into maintenance: each instance with live tasks there gets a move step. */
  #noticeMaintenance(busy: Set<string>): void {
    for (const agentId of this.#inverse.keys()) {
      const byInstance = new Map<string, TaskRecord[]>();
      for (const t of this.#tasks.values()) {
        if (t.agentId !== agentId || !isLive(t) || t.retiring) continue;
        const key = instanceName(t.podType, t.index);
        byInstance.set(key, [...(byInstance.get(key) ?? []), t]);
      }
      for (const recs of byInstance.values()) {
        const first = recs[0] as TaskRecord;
        const pod = this.#spec.pods.find((p) => p.type === first.podType);
        if (pod === undefined || first.index >= pod.count) continue; // being decommissioned
        if (busy.has(instanceName(pod.type, first.index))) continue;
        this.#addMove(agentId, pod, first.index, recs.map((t) => t.task));
        busy.add(instanceName(pod.type, first.index));
      }
    }
  }

  #addMove(agentId: string, pod: PodSpec, index: number, tasks: readonly string[]): void {
    const host = this.#inverse.get(agentId)?.hostname ?? [...this.#tasks.values()].find((t) => t.agentId === agentId)?.hostname ?? agentId;
    // The pod's other goal-RUNNING tasks move with it (a pod lives on one agent).
    const all = pod.tasks.filter((t) => t.goal === 'RUNNING' || tasks.includes(t.name)).map((t) => t.name);
    const step = new Step({ name: stepName(pod.type, index, all), asset: { pod: instanceName(pod.type, index), tasks: all } });
    this.#work.set(step, { kind: 'move', pod, index, tasks: all, permanent: true, fromAgent: agentId, launched: [], killed: new Set() });
    let phase = this.#maintenancePhases.find((p) => p.name === host && p.status() !== 'COMPLETE');
    if (phase === undefined) {
      // The phase holds this array: steps added later for the same machine join it. A machine
      // back for another window gets a new phase with a distinct name, so names stay addressable.
      const earlier = this.#maintenancePhases.filter((p) => p.name === host || p.name.startsWith(`${host} (`)).length;
      phase = newPhase(earlier === 0 ? host : `${host} (${earlier + 1})`, 'parallel', []);
      this.#maintenancePhases.push(phase);
    }
    (phase.children as Step[]).push(step);
    this.#o.log.info('moving pod off a machine going into maintenance', { pod: instanceName(pod.type, index), agentId, hostname: host });
  }

  /**
   * A restarted step runs again (plans.md §3.6): what it launched before no longer counts, or it
   * would find itself COMPLETE again in the very tasks it is to replace. Its next advance stops
   * them (each with its kill policy) and launches anew; the restart stays pending, and stored,
   * until that launch. A decommission step simply kills again; a move step whose instance no
   * longer runs on the machine it vacated has nothing to redo.
   */
  #beginRerun(step: Step, work: Work): void {
    work.rerunning = true;
    work.launched = [];
    work.killed.clear();
    work.unplacedSinceMs = undefined;
    step.note = 'restarted: its tasks are stopped and launched again';
    if (work.kind === 'decommission') return this.#rerunBegun(step, work);
    if (work.kind === 'move') {
      const there = [...this.#tasks.values()].some((t) => t.agentId === work.fromAgent && t.podType === work.pod.type && t.index === work.index && isLive(t) && !t.retiring);
      if (there) return;
      this.#rerunBegun(step, work);
      step.setStatus('COMPLETE');
      step.note = `restarted: nothing of ${instanceName(work.pod.type, work.index)} runs on the machine any more, so there is nothing to move`;
    }
  }

  /**
   * The restart is carried out (launched anew, or nothing to redo): no longer owed. Stored at the
   * end of the cycle, once for all such steps and after the new tasks' records.
   */
  #rerunBegun(step: Step, work: Work): void {
    step.rerunBegun();
    work.rerunning = false;
    this.#overridesChanged = true;
  }

  /** A step's status from its tasks (launched, running, ready, ended). */
  #evaluate(step: Step, work: Work): void {
    if (step.rerunPending() && work.rerunning !== true) this.#beginRerun(step, work);
    const status = step.storedStatus();
    if (status === 'COMPLETE' || status === 'ERROR' || status === 'DELAYED') return;
    if (work.kind === 'decommission') {
      const recs = [...this.#tasks.values()].filter((t) => t.podType === work.pod.type && t.index === work.index);
      if (work.killed.size === 0) return;
      if (recs.every((t) => !isLive(t))) {
        this.#o.store.deleteTasks(recs.map((t) => t.taskId));
        for (const t of recs) this.#tasks.delete(t.taskId);
        this.#o.store.pruneConfigs();
        step.setStatus('COMPLETE');
        step.note = 'tasks killed and forgotten';
      }
      return;
    }
    if (work.launched.length === 0) return;
    const recs = work.launched.map((id) => this.#tasks.get(id));
    const specs = work.launched.map((_, i) => this.#taskSpec(work.pod, recs[i]?.task ?? ''));
    const failed = recs.findIndex((r, i) => r === undefined || (ended(r) && !(specs[i] !== undefined && atGoal(r, specs[i] as TaskSpec))));
    if (failed !== -1) {
      const r = recs[failed];
      const what = r === undefined ? 'a launched task was forgotten' : `${r.name} ended ${r.status?.state ?? ''}${r.status?.message ? ` (${r.status.message})` : ''}`;
      work.launched = [];
      const key = instanceName(work.pod.type, work.index);
      const failures = (this.#failures.get(key) ?? 0) + 1;
      this.#failures.set(key, failures);
      const delay = Math.min(this.#o.backoffMaxMs, this.#o.backoffInitialMs * 2 ** (failures - 1));
      step.delay(this.#o.clock.now() + delay);
      step.note = `${what}; retrying in ${Math.round(delay / 100) / 10} s`;
      this.#o.log.warn('step failed, backing off', { step: step.name, reason: what, delayMs: delay });
      return;
    }
    const all = recs.every((r, i) => r !== undefined && specs[i] !== undefined && atGoal(r, specs[i] as TaskSpec));
    if (!all) {
      const running = recs.some((r) => r?.status?.state === 'TASK_RUNNING');
      step.setStatus(running ? 'STARTED' : 'STARTING');
      step.note = running ? 'waiting for readiness checks' : 'launched';
      return;
    }
    if (work.kind === 'move') {
      // The replacement is ready: now the old tasks go. The step completes once they have ended.
      const old = [...this.#tasks.values()].filter((t) => t.agentId === work.fromAgent && t.podType === work.pod.type && t.index === work.index && !work.launched.includes(t.taskId));
      for (const t of old) if (isLive(t) && !work.killed.has(t.taskId)) { work.killed.add(t.taskId); this.#kill(t); }
      if (old.some(isLive)) {
        step.setStatus('STARTED');
        step.note = `replacement ready; stopping the old tasks on ${old[0]?.hostname ?? work.fromAgent}`;
        return;
      }
    }
    step.setStatus('COMPLETE');
    step.note = '';
    // What this step replaced has ended: forget it (tasks of these names it did not launch, and
    // anything of the instance retired on the way).
    this.#forget([...this.#tasks.values()].filter((t) =>
      t.podType === work.pod.type && t.index === work.index && !isLive(t) && !work.launched.includes(t.taskId) && (t.retiring || work.tasks.includes(t.task))));
  }

  #forget(recs: readonly TaskRecord[]): void {
    if (recs.length === 0) return;
    this.#o.store.deleteTasks(recs.map((t) => t.taskId));
    for (const t of recs) this.#tasks.delete(t.taskId);
    this.#o.store.pruneConfigs();
  }

  /**
   * One step forward for a PENDING/PREPARED step: stop what must stop first, then find an offer
   * and plan the launch. Returns false when it waits for an offer.
   */
  #advance(plan: Plan, step: Step, work: Work, launches: Map<string, TaskInfo[]>): boolean {
    if (work.kind === 'decommission') {
      const live = [...this.#tasks.values()].filter((t) => t.podType === work.pod.type && t.index === work.index && isLive(t));
      const marked = live.filter((t) => !t.retiring).map((t) => ({ ...t, retiring: true }));
      this.#o.store.putTasks(marked);
      for (const t of marked) this.#tasks.set(t.taskId, t);
      for (const t of live) if (!work.killed.has(t.taskId)) { work.killed.add(t.taskId); this.#kill(t); }
      if (work.killed.size === 0) work.killed.add('(none)');
      step.setStatus('STARTED');
      step.note = live.length > 0 ? `killing ${live.map((t) => t.name).join(', ')}` : 'nothing running';
      this.#evaluate(step, work);
      return true;
    }
    // What runs now of these tasks (an older configuration, a previous run, a restarted step) stops
    // first, with its kill policy. Retiring ones too: after a scheduler restart the kill that
    // retired them may never have been sent, and a relaunch beside them would run a task twice.
    if (work.kind !== 'move') {
      const stale = [...this.#tasks.values()].filter((t) =>
        t.podType === work.pod.type && t.index === work.index && work.tasks.includes(t.task) && isLive(t) && !work.launched.includes(t.taskId));
      const marked = stale.filter((t) => !t.retiring).map((t) => ({ ...t, retiring: true }));
      if (marked.length > 0) {
        this.#o.store.putTasks(marked);
        for (const t of marked) this.#tasks.set(t.taskId, t);
      }
      for (const t of stale) if (!work.killed.has(t.taskId)) { work.killed.add(t.taskId); this.#kill(t); }
      if (stale.length > 0) {
        step.setStatus('PREPARED');
        step.note = `stopping ${stale.map((t) => t.name).join(', ')} before relaunching`;
        return true;
      }
    }
    const specs = work.tasks.map((t) => this.#taskSpec(work.pod, t)).filter((t): t is TaskSpec => t !== undefined);
    const { cpus, memMb } = demand(specs);
    const siblings = [...this.#tasks.values()].filter((t) => t.podType === work.pod.type && t.index === work.index && isLive(t) && !t.retiring && !work.tasks.includes(t.task));
    const avoidHosts = new Set<string>();
    if (work.pod.placement.uniqueHostname) {
      for (const t of this.#tasks.values()) if (t.podType === work.pod.type && t.index !== work.index && isLive(t)) avoidHosts.add(t.hostname);
    }
    const exclude = new Set<string>([...this.#draining, ...(work.kind === 'move' ? this.#inverse.keys() : [])]);
    if (work.fromAgent !== undefined && (work.kind === 'move' || work.permanent)) exclude.add(work.fromAgent);
    let agentId = siblings[0]?.agentId;
    if (work.kind === 'recover' && !work.permanent && agentId === undefined) agentId = work.fromAgent; // in place (plans.md §8: TRANSIENT)
    const before = work.tasks.map((t) => this.#current(work.pod.type, work.index, t, true)).find((r) => r !== undefined);
    const preferAgent = work.kind === 'move' || work.permanent ? undefined : before?.agentId;
    const placement = choosePlacement({ cpus, memMb, avoidHosts, agentId, excludeAgents: exclude, preferAgent }, [...this.#offers.values()]);
    if (!placement.ok) {
      work.unplacedSinceMs ??= this.#o.clock.now();
      step.note = work.kind === 'move' ? `cannot move: ${placement.reason}` : placement.reason;
      return false;
    }
    work.unplacedSinceMs = undefined;
    const offer = placement.offer;
    offer.cpus -= cpus;
    offer.memMb -= memMb;
    const configId = work.kind === 'recover' && !work.permanent ? (this.#current(work.pod.type, work.index, work.tasks[0] ?? '')?.configId ?? this.#configId) : this.#configId;
    const records: TaskRecord[] = [];
    const infos: TaskInfo[] = [];
    const now = this.#o.clock.now();
    for (const t of specs) {
      const name = taskName(work.pod.type, work.index, t.name);
      const id = newTaskId(name);
      const info = taskInfo({ serviceName: this.#spec.name, frameworkName: this.#o.frameworkName, configId, pod: work.pod, index: work.index, parameters: step.parameters }, t, offer, id);
      infos.push(info);
      records.push({ taskId: id, name, podType: work.pod.type, index: work.index, task: t.name, configId, agentId: offer.agentId, hostname: offer.hostname, info, status: undefined, ready: false, permanentlyFailed: false, retiring: false, launchedAtMs: now });
    }
    // The tasks being replaced (moved, recovered, relaunched) are retiring from now on.
    const replaced = [...this.#tasks.values()].filter((t) => t.podType === work.pod.type && t.index === work.index && work.tasks.includes(t.task) && !t.retiring);
    const retired = replaced.map((t) => ({ ...t, retiring: true }));
    this.#o.store.putTasks([...retired, ...records]); // written before the ACCEPT that launches them
    for (const t of [...retired, ...records]) this.#tasks.set(t.taskId, t);
    launches.set(offer.id, [...(launches.get(offer.id) ?? []), ...infos]);
    work.launched = records.map((r) => r.taskId);
    // The new run is launched (and written): a restart is carried out from here on.
    if (step.rerunPending()) this.#rerunBegun(step, work);
    step.setStatus('STARTING');
    step.note = `launching on ${offer.hostname}`;
    this.#o.log.info('launching', { plan: plan.name, step: step.name, hostname: offer.hostname, tasks: records.map((r) => r.taskId) });
    return true;
  }
}

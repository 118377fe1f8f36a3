/**
 * The maintenance-plan service (issue 12): the driver of maintenance plans inside a term. It holds
 * the plans (spec, machine selection, the plan engine's `Plan`, one `StepState` per machine, the
 * operator's overrides), recovers them from the registry when the term starts, and drives them:
 * on a timer at the earliest `nextWakeMs` and on every bus event about agents and machines, each
 * started step is advanced (step.ts), and each PENDING step the plan's strategy
 * offers is started once `budgetAllows` says so. Progress is written through the commit path
 * *before* the step's actions are carried out, so a master that dies in between re-issues them.
 * Each change is then announced on the bus (MAINTENANCE_PLAN_ADDED / _UPDATED / _REMOVED, events
 * of Drydock's own stream, GET /drydock/v1/events): a step's stage, status or waiting-for text, once
 * per change, never per pass.
 *
 * Choices:
 *  - A POSTed plan starts at once: an operator who creates a plan means it to run (canary phases
 *    still hold for `continue`). `interrupt` right after creation holds it before any window
 *    reaches a framework only if it lands first, so a spec that must wait uses a canary strategy.
 *  - `continue` also releases steps AWAITING_OPERATOR (up_when: operator) in its scope: the
 *    engine's verb has no step parameter, and the operator who sees such a step says continue.
 *  - A hook's process lives in this process only; a hook recorded `running` at recovery (or whose
 *    process is not ours) is reported `interrupted` to the step machine.
 *  - Hooks are the master's own (hooks.ts): a plan names one, and whoever names it must
 *    be allowed run_maintenance_hooks (the HTTP shell checks at creation and on the verbs that could
 *    run it again: `hookNeededFor`). The plan keeps its creator; each run writes an audit line
 *    naming the creator, the hook and the argv. A hook's output reaches only principals allowed to
 *    run it: the plan's notes and events carry the hidden form, and `answer` / the event's
 *    `revealed` text put the output back for those who may see it.
 *  - A plan stored by an older master (its progress has no `namedHooks`) had a shell command in
 *    on_down: it is read in the old syntax and its step goes to ERROR instead of running it.
 * Actions go through the other services' internal paths given as ports (schedule merge, drain
 * of a scheduled machine, machine down/up, reactivate); this module imports no service class.
 *
 * The plans room holds the rest: the spec (spec.ts), the step machine (step.ts), the budget
 * (budget.ts), the hooks file (hooks.ts), a held plan and its progress codec (progress.ts), the
 * operator's verbs (verbs.ts) and the hook runner (hook-runner.ts).
 */

import type { DrainConfig } from '../../shared/drain.js';
import type { DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { agentMachineId, machineKey, type MachineId } from '../../shared/machine.js';
import { isTerminal } from '../../shared/mesos.js';
import type { PlansAnswer } from '../../shared/plans/api.js';
import { coordinate } from '../../shared/plans/coordinator.js';
import type { Status } from '../../shared/plans/status.js';
import type { TimerHandle } from '../../shared/clock.js';
import type { Unavailability } from '../cores/maintenance.js';
import type { DurableMaintenancePlan, RegistryState } from '../registry/registry.js';
import type { MasterEvent } from '../term/events.js';
import type { ServiceModel, ServicePorts } from '../term/ports.js';
import type { HookReveal, PlanPreview } from '../term/queries.js';
import { PlanBudget, type BudgetAgent } from './budget.js';
import { HookRunner, type HookAudit } from './hook-runner.js';
import { NO_MAINTENANCE_HOOKS, type MaintenanceHooks } from './hooks.js';
import { attributesOf, changeKey, progressText, readPlan, showStep, stepChange, type HeldPlan, type HeldStep, type HookRecord, type StepActions, type StepRecord } from './progress.js';
import type { ClusterMachine } from './spec.js';
import { advanceStep, stepStatusOf, type MachineObservation, type StepAction, type StepAdvance } from './step.js';
import { PlanVerbs } from './verbs.js';
import { planWaves } from './waves.js';

/** While a step waits for inverse offer answers (no bus event carries them), look again this often. */
const ANSWER_POLL_MS = 1000;

/** What the driver needs of the other services: their internal paths, as functions (wired in term.ts). */
export interface PlanActionPorts {
  /** Each machine gets its window, in one schedule write. */
  scheduleMachines(items: readonly { id: MachineId; unavailability: Unavailability }[]): Promise<DrydockError | undefined>;
  unscheduleMachines(ids: readonly MachineId[]): Promise<DrydockError | undefined>;
  /** DRAIN_AGENT allowed on a scheduled machine, for each agent (one command, one answer per agent). */
  drain(items: readonly { agentId: string; config: DrainConfig }[]): Promise<(DrydockError | undefined)[]>;
  reactivate(agentId: string): Promise<DrydockError | undefined>;
  down(ids: readonly MachineId[]): Promise<DrydockError | undefined>;
  up(ids: readonly MachineId[]): Promise<DrydockError | undefined>;
  /** A framework's name, '' when unknown. */
  frameworkName(frameworkId: string): string;
}

export interface MaintenancePlansOptions extends ServicePorts, ServiceModel {
  actions: PlanActionPorts;
  /** The master's hooks and the user they run as (default: none, so no plan can name one). */
  hooks?: MaintenanceHooks;
  /** Writes the audit line of a hook that starts. */
  audit?: (entry: HookAudit) => void;
}

/** One step's decision in a pass: the record it was made from and the advance; `written` once durable. */
interface Decision {
  readonly held: HeldPlan;
  readonly key: string;
  readonly s: HeldStep;
  readonly from: StepRecord;
  readonly adv: StepAdvance;
  readonly moved: boolean;
  written: boolean;
}

export class MaintenancePlans {
  readonly #o: MaintenancePlansOptions;
  readonly #log: Logger;
  readonly #plans = new Map<string, HeldPlan>();
  readonly #hookConfig: MaintenanceHooks;
  readonly #runner: HookRunner;
  readonly #verbs: PlanVerbs;
  /**
   * What Drydock's event stream was last told of each plan: its status, and per step (by
   * `phase/step`) its stage, status and steady waiting-for text. The loop passes often (every
   * second while frameworks are asked); an event goes out only when one of these changed.
   */
  readonly #announced = new Map<string, { status: Status; steps: Map<string, string> }>();
  /** Step events waiting for #flushAnnounced, by plan and step key. */
  readonly #toAnnounce = new Map<HeldPlan, Map<string, HeldStep>>();
  /** The record each finished step (COMPLETE, ERROR) was last shown with: passes skip it until it changes. */
  readonly #shown = new WeakMap<HeldStep, StepRecord>();
  #timer: TimerHandle | undefined;
  #timerAt: number | undefined;
  #running = false;
  #again = false;
  #disposed = false;

  constructor(o: MaintenancePlansOptions) {
    this.#o = o;
    this.#log = o.log;
    this.#hookConfig = o.hooks ?? NO_MAINTENANCE_HOOKS;
    this.#runner = new HookRunner({
      hooks: this.#hookConfig,
      clock: o.clock,
      log: o.log,
      audit: o.audit,
      record: (held, s, hook) => this.#updateRecord(held, s, hook),
      disposed: () => this.#disposed,
      kick: () => this.kick(),
    });
    this.#verbs = new PlanVerbs({
      plans: this.#plans,
      commits: o.commits,
      bus: o.bus,
      clock: o.clock,
      log: o.log,
      catalog: this.#hookConfig.catalog,
      clusterMachines: () => this.#clusterMachines(),
      hookRunning: (held, key, state) => this.#runner.running(held.name, key, state),
      seed: (held) => this.#seed(held),
      announcePlan: (held) => this.#announcePlan(held),
      carryOut: (steps) => this.#carryOut(steps),
      kick: () => this.kick(),
    });
  }

  // ---- Lifecycle ---------------------------------------------------------------------------

  /** Rebuilds every plan from the registry's rows. A row that no longer parses is logged and left alone. */
  recover(state: RegistryState): void {
    for (const row of state.maintenancePlans ?? []) {
      try {
        const held = this.#rebuild(row);
        if (held === undefined) continue;
        // A hook recorded running has no process in this master: the step machine hears `interrupted`.
        for (const s of held.steps.values()) if (s.record.hook?.status === 'running') s.record.hook = { ...s.record.hook, status: 'interrupted' };
        this.#plans.set(held.name, held);
        // A new term's subscribers start from its state: only later changes are events.
        this.#seed(held);
      } catch (e) {
        this.#log.error('maintenance plan not recovered', { plan: row.name, error: e });
      }
    }
    if (this.#plans.size > 0) this.#log.info('maintenance plans recovered', { plans: this.#plans.size });
  }

  /** Listens for events about agents and machines, and drives once. Returns the unsubscribe. */
  start(): () => void {
    const off = this.#o.bus.subscribe((e: MasterEvent) => {
      switch (e.type) {
        case 'AGENT_ADDED':
        case 'AGENT_RECONNECTED':
        case 'AGENT_DISCONNECTED':
        case 'AGENT_UNREACHABLE':
        case 'AGENT_REMOVED':
        case 'AGENT_GONE':
        case 'AGENT_UPDATED':
        case 'MACHINE_UPDATED':
          this.kick();
          return;
        default:
          return;
      }
    });
    this.kick();
    return off;
  }

  /** Stops timers and hook processes (a hook of a term that ended is reported interrupted by the next term). */
  dispose(): void {
    this.#disposed = true;
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#runner.stopAll();
  }

  // ---- The operator's side (verbs.ts), for the term's ports ------------------------------------

  names(): string[] {
    return this.#verbs.names();
  }

  /** Steps by plan and status, for the metrics (`drydock_master_maintenance_plan_steps`). */
  stepCounts(): Array<{ plan: string; status: Status; steps: number }> {
    return this.#verbs.stepCounts();
  }

  /** The machines a plan works on (undefined: no such plan): what its ACL checks name. */
  machinesOf(name: string): MachineId[] | undefined {
    return this.#verbs.machinesOf(name);
  }

  /** `POST /v1/maintenance/plans` (verbs.ts create). */
  create(
    text: string,
    authorize?: (machines: readonly MachineId[], hook: string | undefined) => DrydockError | undefined,
    createdBy: string | null = null,
  ): Promise<{ ok: true; message: string } | { ok: false; error: DrydockError }> {
    return this.#verbs.create(text, authorize, createdBy);
  }

  /** A new plan's spec in waves, as creation would read it; nothing is created (the impact preview). */
  preview(text: string): PlanPreview {
    const read = this.#verbs.read(text);
    if (!read.ok) return read;
    const { spec, selection } = read;
    return {
      ok: true,
      name: spec.name,
      strategy: spec.strategy,
      phaseStrategy: spec.phaseStrategy,
      maxParallel: spec.maxParallel,
      maxDown: spec.budget.maxDown,
      hook: spec.onDown?.kind === 'hook' ? spec.onDown.hook : undefined,
      phases: selection.phases,
      waves: planWaves(spec, selection),
    };
  }

  /** `DELETE /v1/maintenance/plans/<name>`: only a COMPLETE or stopped plan. */
  delete(name: string): Promise<DrydockError | undefined> {
    return this.#verbs.delete(name, (n) => this.#announced.delete(n));
  }

  /** A read under `/v1/maintenance/plans/<name>` (verbs.ts answer). */
  answer(method: string, segments: readonly string[], query: URLSearchParams, reveal: HookReveal = () => false): PlansAnswer {
    return this.#verbs.answer(method, segments, query, reveal);
  }

  /** A verb on a plan (verbs.ts verb). */
  verb(segments: readonly string[], query: URLSearchParams, body: string, authorize?: (name: string) => DrydockError | undefined): Promise<PlansAnswer> {
    return this.#verbs.verb(segments, query, body, authorize);
  }

  /** The hook a verb on a plan could run (verbs.ts hookNeededFor). */
  hookNeededFor(name: string, verb: string, phaseRef: string | undefined, stepRef: string | undefined): string | undefined {
    return this.#verbs.hookNeededFor(name, verb, phaseRef, stepRef);
  }

  // ---- The loop ------------------------------------------------------------------------------

  /** Drive soon (coalesced: one pass at a time, another right after if kicked meanwhile). */
  kick(): void {
    if (this.#disposed) return;
    if (this.#running) {
      this.#again = true;
      return;
    }
    this.#running = true;
    void this.#drive().finally(() => {
      this.#running = false;
      if (this.#again && !this.#disposed) {
        this.#again = false;
        this.kick();
      }
    });
  }

  async #drive(): Promise<void> {
    let wake: number | undefined;
    try {
      for (let pass = 0; pass < 20; pass++) {
        const r = await this.#pass();
        wake = r.wake;
        if (!r.changed || this.#disposed) break;
      }
    } catch (e) {
      this.#log.error('maintenance plan pass failed', { error: e });
      wake = this.#o.clock.now() + 5000;
    }
    this.#arm(wake);
  }

  #arm(at: number | undefined): void {
    if (this.#disposed || at === undefined) return;
    if (this.#timer !== undefined && this.#timerAt !== undefined && this.#timerAt <= at) return;
    this.#timer?.cancel();
    this.#timerAt = at;
    this.#timer = this.#o.clock.setTimer(Math.max(0, at - this.#o.clock.now()), () => {
      this.#timer = undefined;
      this.#timerAt = undefined;
      this.kick();
    });
  }

  /**
   * One pass over every plan: advance started steps, start offered ones the budget allows. The
   * decisions of the whole pass are made first, inside the serial queue, and written together
   * (one progress write per plan that moved, all in one group commit); only then are the actions
   * of every step that moved carried out, batched by kind (one schedule write for all the
   * windows, one drain command for all the agents, ...). A pass that moves 50 steps costs a
   * handful of commits, not 100.
   */
  async #pass(): Promise<{ changed: boolean; wake: number | undefined }> {
    let wake: number | undefined;
    const soon = (at: number | undefined): void => {
      if (at !== undefined) wake = wake === undefined ? at : Math.min(wake, at);
    };
    const decided = await this.#o.commits.serial(async () => {
      const plans = [...this.#plans.values()].filter((p) => !p.deleted);
      if (this.#disposed || plans.length === 0) return [];
      const offered = new Set(coordinate(plans.map((p) => p.plan)).map((c) => c.step));
      const now = this.#o.clock.now();
      const moves: Decision[] = [];
      // Every plan's budget first, so that each sees the machines all the others have out.
      const busy = new Map<string, string>();
      let agents: BudgetAgent[] | undefined;
      const budgets = new Map<HeldPlan, PlanBudget>();
      for (const held of plans) {
        const steps = [...held.steps.values()].map((x) => ({ phase: x.phase, name: x.record.state.name, machine: x.record.state.machine, stage: x.record.state.stage }));
        if (held.spec.budget.minActiveAgents !== undefined) agents ??= this.#budgetAgents();
        budgets.set(held, new PlanBudget({ plan: held.name, busy, steps, agents: agents ?? [], budget: held.spec.budget, maxParallel: held.spec.maxParallel }));
      }
      for (const held of plans) {
        const budget = budgets.get(held);
        if (budget === undefined) continue;
        for (const [key, s] of held.steps) {
          const state = s.record.state;
          if (state.stage === 'COMPLETE' || state.stage === 'ERROR') {
            // Shown once per record: a finished step changes only through an operator's verb (a new record).
            if (this.#shown.get(s) === s.record && s.step.storedStatus() === stepStatusOf(state)) continue;
            showStep(s.step, state, '');
            this.#announceStep(held, key, s);
            this.#shown.set(s, s.record);
            continue;
          }
          if (state.stage === 'PENDING') {
            if (!offered.has(s.step) || s.step.isInterrupted()) continue;
            const candidate = { phase: s.phase, name: state.name, machine: state.machine };
            const verdict = budget.allows(candidate);
            if (!verdict.ok) {
              s.step.note = verdict.reason;
              this.#announceStep(held, key, s);
              continue;
            }
            budget.take(candidate);
          }
          const adv = advanceStep(state, this.#observe(held, key, s.record), held.spec, now);
          soon(adv.nextWakeMs);
          if (adv.state.stage === 'WAITING_FRAMEWORKS') soon(now + ANSWER_POLL_MS);
          moves.push({ held, key, s, from: s.record, adv, moved: JSON.stringify(adv.state) !== JSON.stringify(state), written: false });
        }
      }
      // Durable first: each plan's new states are written before any action is carried out.
      const byPlan = new Map<HeldPlan, Decision[]>();
      for (const m of moves) {
        if (!m.moved) continue;
        const list = byPlan.get(m.held);
        if (list === undefined) byPlan.set(m.held, [m]);
        else list.push(m);
      }
      await Promise.all([...byPlan].map(async ([held, list]) => {
        const next = new Map<HeldStep, StepRecord>(list.map((m) => [m.s, { ...m.from, state: m.adv.state }]));
        const w = await this.#o.commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name, steps: list.length }, (reg) => reg.updateMaintenancePlanProgress(held.name, progressText(held, next)), () => {
          for (const m of list) {
            m.s.record = next.get(m.s) ?? m.s.record;
            m.written = true;
          }
        });
        if (!w.ok) soon(now + 5000);
      }));
      return moves;
    });
    let changed = false;
    const actions: StepActions[] = [];
    for (const m of decided) {
      if (m.written) {
        changed = true;
        if (m.adv.entered.length > 0) this.#log.info('maintenance step moved', { plan: m.held.name, step: m.key, stages: m.adv.entered });
        if (m.adv.actions.length > 0) actions.push({ held: m.held, actions: m.adv.actions });
      }
      if (m.held.deleted) continue;
      showStep(m.s.step, m.s.record.state, m.adv.waitingFor);
      this.#announceStep(m.held, m.key, m.s);
    }
    this.#flushAnnounced();
    await this.#carryOut(actions);
    return { changed, wake: this.#disposed ? undefined : wake };
  }

  // ---- Drydock's event stream ----------------------------------------------------------------

  /** Takes a plan's present state as already told (no events for it). */
  #seed(held: HeldPlan): void {
    const steps = new Map<string, string>();
    for (const [key, s] of held.steps) steps.set(key, changeKey(s));
    this.#announced.set(held.name, { status: held.plan.status(), steps });
  }

  /**
   * MAINTENANCE_PLAN_UPDATED for a step whose stage, status or steady waiting-for text changed
   * since the last one: queued here, sent by #flushAnnounced with the plan's status (computed
   * once per plan and flush: it reads every step, so once per step would be quadratic).
   */
  #announceStep(held: HeldPlan, key: string, s: HeldStep): void {
    const last = this.#announced.get(held.name);
    if (last === undefined || held.deleted) return;
    const k = changeKey(s);
    if (last.steps.get(key) === k) return;
    last.steps.set(key, k);
    let queued = this.#toAnnounce.get(held);
    if (queued === undefined) this.#toAnnounce.set(held, (queued = new Map()));
    queued.set(key, s);
  }

  /**
   * Sends the queued step events, each with its plan's status now, then MAINTENANCE_PLAN_UPDATED
   * without a step for each plan whose status alone changed (interrupt, a phase's canary).
   */
  #flushAnnounced(): void {
    const queued = [...this.#toAnnounce];
    this.#toAnnounce.clear();
    for (const [held, steps] of queued) {
      const last = this.#announced.get(held.name);
      if (last === undefined || held.deleted) continue;
      last.status = held.plan.status();
      for (const s of steps.values()) this.#o.bus.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: held.name, status: last.status, step: stepChange(held, s) });
    }
    for (const held of this.#plans.values()) {
      const last = this.#announced.get(held.name);
      if (last === undefined || held.deleted) continue;
      const status = held.plan.status();
      if (status === last.status) continue;
      last.status = status;
      this.#o.bus.emit({ type: 'MAINTENANCE_PLAN_UPDATED', plan: held.name, status });
    }
  }

  /** After an operator's verb: every step it changed, then the plan. */
  #announcePlan(held: HeldPlan): void {
    for (const [key, s] of held.steps) this.#announceStep(held, key, s);
    this.#flushAnnounced();
  }

  // ---- Observations --------------------------------------------------------------------------

  #observe(held: HeldPlan, key: string, record: StepRecord): MachineObservation {
    const { maintenance, agents } = this.#o;
    const id = record.state.machine;
    const m = maintenance.get(id);
    const agentObs: MachineObservation['agents'][number][] = [];
    const frameworkIds = new Set<string>();
    for (const agentId of maintenance.agentsOn(machineKey(id))) {
      const e = agents.get(agentId);
      if (e === undefined) continue;
      agentObs.push({ id: agentId, connected: e.phase === 'REGISTERED' && e.connected, active: !e.deactivated, drainState: e.drain?.state, drainRefused: e.drain?.refused !== undefined });
      for (const t of e.tasks?.values() ?? []) if (!isTerminal(t.state)) frameworkIds.add(t.framework_id.value);
    }
    const frameworks = [...frameworkIds].map((fid) => ({ id: fid, name: this.#o.actions.frameworkName(fid), answer: m?.statuses.get(fid)?.status }));
    const unavailability = m?.unavailability === undefined ? undefined : { startNs: m.unavailability.startNs, durationNs: m.unavailability.durationNs };
    return { mode: m?.mode, unavailability, agents: agentObs, frameworks, hook: this.#runner.report(held.name, key, record.hook), continues: record.continues };
  }

  #clusterMachines(): ClusterMachine[] {
    const out: ClusterMachine[] = [];
    for (const e of this.#o.agents.all()) {
      if (this.#o.agents.isGone(e.id)) continue;
      out.push({ id: agentMachineId(e.info.hostname, e.info.ip), attributes: attributesOf(e.info.attributes) });
    }
    // Scheduled machines without an agent are known too (no attributes). An UP machine no agent
    // runs on is not: the master keeps one for a machine a schedule once named (even with the
    // wrong IP) or whose agent is gone, and `machines: all` must not take it through maintenance.
    for (const m of this.#o.maintenance.machines.values()) if (m.mode !== 'UP') out.push({ id: m.id, attributes: {} });
    return out;
  }

  #budgetAgents(): BudgetAgent[] {
    return [...this.#o.agents.all()].map((e) => ({
      id: e.id,
      machine: agentMachineId(e.info.hostname, e.info.ip),
      attributes: attributesOf(e.info.attributes),
      active: e.phase === 'REGISTERED' && e.connected && !e.deactivated,
    }));
  }

  // ---- Actions -------------------------------------------------------------------------------

  /**
   * Carries out the actions of several steps: each step's in its order, the steps side by side.
   * Round k takes the k-th action of every step and does each kind of action once for all of
   * them (one schedule command for every window, one drain command for every agent, one DOWN for
   * every machine, ...). A batch the master refuses (one machine of it moved on meanwhile) is
   * tried again one by one, so one refusal never holds back the others.
   * Every action is safe to repeat: the step machine issues it again after REISSUE_AFTER_MS.
   */
  async #carryOut(steps: readonly StepActions[]): Promise<void> {
    const rounds = Math.max(0, ...steps.map((s) => s.actions.length));
    for (let k = 0; k < rounds && !this.#disposed; k++) {
      const round = steps.flatMap((s) => (s.actions[k] === undefined ? [] : [{ held: s.held, a: s.actions[k] as StepAction }]));
      const of = <T extends StepAction['type']>(type: T): { held: HeldPlan; a: Extract<StepAction, { type: T }> }[] =>
        round.filter((x): x is { held: HeldPlan; a: Extract<StepAction, { type: T }> } => x.a.type === type);
      await this.#batch(of('schedule'), (xs) => this.#o.actions.scheduleMachines(xs.map((x) => ({ id: x.a.machine, unavailability: { startNs: x.a.startNs, durationNs: x.a.durationNs } }))));
      await this.#batch(of('unschedule'), (xs) => this.#o.actions.unscheduleMachines(xs.map((x) => x.a.machine)));
      const drains = of('drain');
      if (drains.length > 0) {
        const items = drains.flatMap((x) => x.a.agentIds.map((agentId) => ({ x, agentId, config: { maxGracePeriodNs: x.a.maxGracePeriodNs, markGone: false } })));
        const results = await this.#o.actions.drain(items.map((i) => ({ agentId: i.agentId, config: i.config })));
        results.forEach((e, i) => this.#refused(items[i]?.x.held, 'drain', e));
      }
      for (const x of of('reactivate')) for (const id of x.a.agentIds) this.#refused(x.held, 'reactivate', await this.#o.actions.reactivate(id));
      // Already DOWN counts as done; already out of DOWN too.
      const mode = (m: MachineId): string | undefined => this.#o.maintenance.get(m)?.mode;
      await this.#batch(of('down'), (xs) => this.#o.actions.down(xs.map((x) => x.a.machine)), (x, e) => (e.code === 'MACHINE_NOT_DRAINING' && mode(x.a.machine) === 'DOWN' ? undefined : e));
      await this.#batch(of('up'), (xs) => this.#o.actions.up(xs.map((x) => x.a.machine)), (x, e) => (e.code === 'MACHINE_NOT_DOWN' && mode(x.a.machine) !== 'DOWN' ? undefined : e));
      await Promise.all(
        of('run_hook').map(async (x) => {
          const key = this.#stepKeyOf(x.held, x.a.machine);
          if (key !== undefined) await this.#runner.run(x.held, key, x.a);
        }),
      );
      for (const x of of('cancel_hook')) {
        const key = this.#stepKeyOf(x.held, x.a.machine);
        if (key !== undefined) this.#runner.cancel(x.held.name, key, x.a.attempt);
      }
    }
  }

  /** One call for the whole batch; if it is refused, one call per item, each error judged by `excuse`. */
  async #batch<X extends { held: HeldPlan; a: StepAction }>(
    xs: readonly X[],
    call: (xs: readonly X[]) => Promise<DrydockError | undefined>,
    excuse: (x: X, e: DrydockError) => DrydockError | undefined = (_x, e) => e,
  ): Promise<void> {
    if (xs.length === 0) return;
    const e = await call(xs);
    if (e === undefined) return;
    if (xs.length === 1) {
      const x = xs[0] as X;
      this.#refused(x.held, x.a.type, excuse(x, e));
      return;
    }
    for (const x of xs) {
      const one = await call([x]);
      this.#refused(x.held, x.a.type, one === undefined ? undefined : excuse(x, one));
    }
  }

  #refused(held: HeldPlan | undefined, action: string, error: DrydockError | undefined): void {
    if (error !== undefined) this.#log.warn('maintenance plan action refused', { plan: held?.name, action, error: error.message });
  }

  #stepKeyOf(held: HeldPlan, machine: MachineId): string | undefined {
    const k = machineKey(machine);
    for (const [key, s] of held.steps) if (machineKey(s.record.state.machine) === k) return key;
    return undefined;
  }

  /** Keeps a step's hook record durably (the hook runner's port): in the serial queue, only for the attempt the step runs. */
  async #updateRecord(held: HeldPlan, s: { record: StepRecord }, hook: HookRecord): Promise<boolean> {
    return this.#o.commits.serial(async () => {
      if (held.deleted) return false;
      // An outcome of an attempt the step no longer runs (stopped, restarted) is not kept.
      if (hook.status !== 'running' && (s.record.hook?.attempt !== hook.attempt || s.record.hook.status !== 'running')) return false;
      const before = s.record;
      s.record = { ...s.record, hook };
      const r = await this.#o.commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name }, (reg) => reg.updateMaintenancePlanProgress(held.name, progressText(held)), () => undefined);
      if (!r.ok) s.record = before;
      return r.ok;
    });
  }

  #rebuild(row: DurableMaintenancePlan): HeldPlan | undefined {
    return readPlan(row, this.#hookConfig.catalog, this.#log);
  }
}

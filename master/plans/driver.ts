/**
 * The maintenance-plan service (issue 12): the driver of maintenance plans inside a term. It holds
 * the plans (spec, machine selection, the plan engine's `Plan`, one `StepState` per machine, the
 * operator's overrides), recovers them from the registry when the term starts, and drives them:
 * on a timer at the earliest `nextWakeMs` and on every bus event about agents and machines, each
 * started step is advanced (maintenance-plan-step.ts), and each PENDING step the plan's strategy
 * offers is started once `budgetAllows` says so. Progress is written through the commit path
 * *before* the step's actions are carried out, so a master that dies in between re-issues them.
 * Each change is then announced on the bus (MAINTENANCE_PLAN_ADDED / _UPDATED / _REMOVED, the
 * operator stream's Drydock extension events): a step's stage, status or waiting-for text, once
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
 *  - Hooks are the master's own (maintenance-hooks.ts): a plan names one, and whoever names it must
 *    be allowed run_maintenance_hooks (the HTTP shell checks at creation and on the verbs that could
 *    run it again: `hookNeededFor`). The plan keeps its creator; each run writes an audit line
 *    naming the creator, the hook and the argv. A hook's output reaches only principals allowed to
 *    run it: the plan's notes and events carry the hidden form, and `answer` / the event's
 *    `revealed` text put the output back for those who may see it.
 *  - A plan stored by an older master (its progress has no `namedHooks`) had a shell command in
 *    on_down: it is read in the old syntax and its step goes to ERROR instead of running it.
 * Actions go through the other services' internal paths given as ports (schedule merge, drain
 * of a scheduled machine, machine down/up, reactivate); this module imports no service class.
 */
import { type DrainConfig } from '../../shared/drain.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { agentMachineId, machineKey, type MachineId } from '../../shared/machine.js';
import type { Attribute } from '../../shared/mesos.js';
import { isTerminal } from '../../shared/mesos.js';
import { plansApi, type PlansAnswer } from '../../shared/plans/api.js';
import { applyOverrides, overridesOf, type PlanOverrides } from '../../shared/plans/overrides.js';
import type { Plan, Step } from '../../shared/plans/plan.js';
import { coordinate } from '../../shared/plans/coordinator.js';
import type { TimerHandle } from '../../shared/clock.js';
import { startHookProcess, type HookProcess } from '../../io/hook-process.js';
import { PlanBudget, type BudgetAgent } from './budget.js';
import { hookEnvironment, NO_MAINTENANCE_HOOKS, OUTPUT_HIDDEN, type MaintenanceHooks } from './hooks.js';
import { parseMaintenancePlanSpec, planFromSpec, planSteps, selectMachines, type ClusterMachine, type MachineSelection, type MaintenancePlanSpec } from './spec.js';
import {
  advanceStep, errorText, forceCompleteStep, isOut, lastRefusal, newStepState, refuseRestart, restartStep, restartVerdict, steadyText, stepStatusOf, stopStep, storedStepState, verbMayRunHook,
  type HookReport, type MachineObservation, type StepAction, type StepAdvance, type StepState,
} from './step.js';
import type { Status } from '../../shared/plans/status.js';
import type { MaintenanceStepChange, MasterEvent } from '../term/events.js';
import type { Unavailability } from '../cores/maintenance.js';
import type { ServiceModel, ServicePorts } from '../term/ports.js';
import type { HookReveal } from '../term/queries.js';
import type { DurableMaintenancePlan, RegistryState } from '../registry/registry.js';

/** A hook's output kept per attempt: the last 4 KiB. */
export const HOOK_OUTPUT_BYTES = 4096;
/** While a step waits for inverse offer answers (no bus event carries them), look again this often. */
const ANSWER_POLL_MS = 1000;
/** After SIGTERM to a hook that must stop, SIGKILL after this long. */
export const HOOK_KILL_AFTER_MS = 5000;

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

/** The audit line of a hook that starts (security.ts `audit`). */
export interface HookAudit {
  readonly principal: string | undefined;
  readonly action: 'run_maintenance_hooks';
  readonly object: string;
  readonly outcome: 'allowed';
  readonly detail: string;
  readonly argv: readonly string[];
}

export interface MaintenancePlansOptions extends ServicePorts, ServiceModel {
  actions: PlanActionPorts;
  /** The master's hooks and the user they run as (default: none, so no plan can name one). */
  hooks?: MaintenanceHooks;
  /** Writes the audit line of a hook that starts. */
  audit?: (entry: HookAudit) => void;
}


/** The durable record of one on_down attempt. */
interface HookRecord {
  attempt: number;
  status: 'running' | 'succeeded' | 'failed' | 'timed_out' | 'interrupted';
  code: number | null;
  signal: string | null;
  /** The last HOOK_OUTPUT_BYTES of stdout and stderr together. */
  output: string;
}

/** Per step, what is kept besides its StepState. */
interface StepRecord {
  state: StepState;
  /** How many times the operator continued this step (AWAITING_OPERATOR). */
  continues: number;
  hook: HookRecord | null;
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

/** The actions of one step, in order. */
interface StepActions {
  readonly held: HeldPlan;
  readonly actions: readonly StepAction[];
}

/** The progress JSON a plan's registry row keeps. Fields are only ever added: older rows must read. */
interface Progress {
  version: 1;
  selection: MachineSelection;
  overrides: PlanOverrides;
  /** By `phase/step`. */
  steps: Record<string, StepRecord>;
  /** The principal that created the plan (null: anonymous). Absent in rows of older masters. */
  createdBy?: string | null;
  /** The spec's on_down names a master's hook (this master's kind); absent: an older master's shell command. */
  namedHooks?: true;
}

/** One step of a held plan: its phase, the engine's step, and its record. */
interface HeldStep {
  readonly phase: string;
  readonly step: Step;
  record: StepRecord;
}

interface HeldPlan {
  readonly name: string;
  readonly specText: string;
  readonly spec: MaintenancePlanSpec;
  readonly selection: MachineSelection;
  readonly plan: Plan;
  readonly createdNs: bigint;
  /** The principal that created it (null: anonymous, or an older master's plan). */
  readonly createdBy: string | null;
  /** Whether its spec names hooks (false: an older master's plan, read in the old syntax). */
  readonly namedHooks: boolean;
  /** By `phase/step`, with the phase and engine step. */
  readonly steps: Map<string, HeldStep>;
  deleted: boolean;
}

/** The answer the HTTP shell sends: JSON, or text with a status. */
export type PlansHttpAnswer = PlansAnswer;

const keyOf = (phase: string, step: string): string => `${phase}/${step}`;

/** An attribute's value as Mesos prints it in text (`rack:r1`, `n:2`, `ports:[1-2]`, `s:{a,b}`). */
export function attributeText(a: Attribute): string {
  if (a.text !== undefined) return a.text.value;
  if (a.scalar !== undefined) return String(a.scalar.value);
  if (a.ranges !== undefined) return `[${a.ranges.range.map((r) => `${r.begin}-${r.end}`).join(',')}]`;
  if (a.set !== undefined) return `{${a.set.item.join(',')}}`;
  return '';
}

export class MaintenancePlans {
  readonly #o: MaintenancePlansOptions;
  readonly #log: Logger;
  readonly #plans = new Map<string, HeldPlan>();
  /** Hook processes of this process, by `plan\0phase/step\0attempt`. */
  readonly #hooks = new Map<string, HookProcess>();
  readonly #hookConfig: MaintenanceHooks;
  /**
   * What the operator event stream was last told of each plan: its status, and per step (by
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
    for (const run of this.#hooks.values()) run.stop();
    this.#hooks.clear();
  }

  // ---- HTTP ----------------------------------------------------------------------------------

  names(): string[] {
    return [...this.#plans.values()].filter((p) => !p.deleted).map((p) => p.name);
  }

  /** Steps by plan and status, for the metrics (`drydock_master_maintenance_plan_steps`). */
  stepCounts(): Array<{ plan: string; status: Status; steps: number }> {
    const out: Array<{ plan: string; status: Status; steps: number }> = [];
    for (const held of this.#plans.values()) {
      if (held.deleted) continue;
      const by = new Map<Status, number>();
      for (const s of held.steps.values()) by.set(s.step.status(), (by.get(s.step.status()) ?? 0) + 1);
      for (const [status, steps] of by) out.push({ plan: held.name, status, steps });
    }
    return out;
  }

  /** The machines a plan works on (undefined: no such plan): what its ACL checks name. */
  machinesOf(name: string): MachineId[] | undefined {
    const held = this.#plans.get(name);
    if (held === undefined || held.deleted) return undefined;
    return held.selection.phases.flatMap((p) => p.machines);
  }

  /**
   * `POST /v1/maintenance/plans`: parse (against the master's hooks), select, refuse an empty
   * selection, ask `authorize` about the selected machines (create_maintenance_plans) and the hook
   * the plan names (run_maintenance_hooks), write with its creator, then run.
   */
  async create(
    text: string,
    authorize?: (machines: readonly MachineId[], hook: string | undefined) => DrydockError | undefined,
    createdBy: string | null = null,
  ): Promise<{ ok: true; message: string } | { ok: false; error: DrydockError }> {
    const parsed = parseMaintenancePlanSpec(text, { hooks: this.#hookConfig.catalog, mode: 'create' });
    if (!parsed.ok) return { ok: false, error: fail('MAINTENANCE_PLAN_SPEC_INVALID', parsed.errors.join('\n')) };
    const spec = parsed.spec;
    const selection = selectMachines(spec, this.#clusterMachines());
    if (selection.unmatched.length > 0) return { ok: false, error: fail('MAINTENANCE_PLAN_SELECTION_INVALID', `no known machine has hostname ${selection.unmatched.join(', ')}`) };
    const count = selection.phases.reduce((n, p) => n + p.machines.length, 0);
    if (count === 0) return { ok: false, error: fail('MAINTENANCE_PLAN_SELECTION_INVALID', 'the selection matches no machine the master knows') };
    const refused = authorize?.(selection.phases.flatMap((p) => p.machines), spec.onDown?.kind === 'hook' ? spec.onDown.hook : undefined);
    if (refused !== undefined) return { ok: false, error: refused };
    const { commits } = this.#o;
    const result = await commits.serial(async () => {
      if (this.#plans.has(spec.name)) return { ok: false as const, error: fail('MAINTENANCE_PLAN_EXISTS', spec.name) };
      const createdNs = BigInt(this.#o.clock.now()) * 1_000_000n;
      const held = this.#build(spec.name, text, spec, selection, createdNs, undefined, createdBy, true);
      const row: DurableMaintenancePlan = { name: spec.name, spec: text, progress: this.#progressText(held), createdNs };
      const w = await commits.write('CREATE_MAINTENANCE_PLAN', { plan: spec.name }, (r) => r.createMaintenancePlan(row), () => {
        this.#plans.set(spec.name, held);
        this.#seed(held);
        this.#o.bus.emit({ type: 'MAINTENANCE_PLAN_ADDED', plan: spec.name, status: held.plan.status(), machines: count });
      });
      return w.ok ? { ok: true as const } : { ok: false as const, error: w.error };
    });
    if (!result.ok) return result;
    this.#log.info('maintenance plan created', { plan: spec.name, machines: count, phases: selection.phases.length, createdBy, ...(spec.onDown?.kind === 'hook' ? { hook: spec.onDown.hook } : {}) });
    this.kick();
    return { ok: true, message: `created maintenance plan ${spec.name}: ${count} machines in ${selection.phases.length} phases` };
  }

  /** `DELETE /v1/maintenance/plans/<name>`: only a COMPLETE or stopped plan. */
  async delete(name: string): Promise<DrydockError | undefined> {
    const { commits } = this.#o;
    return commits.serial(async () => {
      const held = this.#plans.get(name);
      if (held === undefined || held.deleted) return fail('PLAN_NOT_FOUND', name);
      const status = held.plan.status();
      const stopped = held.plan.isInterrupted() && [...held.steps.values()].every((s) => !isOut(s.record.state.stage));
      if (status !== 'COMPLETE' && !stopped) return fail('MAINTENANCE_PLAN_NOT_FINISHED', name, status);
      const w = await commits.write('DELETE_MAINTENANCE_PLAN', { plan: name }, (r) => r.deleteMaintenancePlan(name), () => {
        held.deleted = true;
        this.#plans.delete(name);
        this.#announced.delete(name);
        this.#o.bus.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: name });
      });
      if (!w.ok) return w.error;
      this.#log.info('maintenance plan deleted', { plan: name });
      return undefined;
    });
  }

  /**
   * A read of `/v1/maintenance/plans/<name>[/...]` through the shared `/v1/plans` handler (any
   * method but POST: GET, HEAD, and the others it refuses). `segments` are the decoded segments
   * below `/v1/maintenance/plans` (shared/paths.ts); `reveal` says whether the reader may see a
   * failed hook's output.
   */
  answer(method: string, segments: readonly string[], query: URLSearchParams, reveal: HookReveal = () => false): PlansAnswer {
    const plans = [...this.#plans.values()].filter((p) => !p.deleted);
    const answer = plansApi(plans.map((p) => p.plan), { method, segments, query, body: '' });
    const held = segments.length === 1 ? plans.find((p) => p.name === segments[0]) : undefined;
    if (held === undefined || !('json' in answer)) return answer;
    return { status: answer.status, json: this.#withHooks(held, answer.json, reveal(hookNameOf(held))) };
  }

  /**
   * A verb (`POST /v1/maintenance/plans/<name>/<verb>`) through the shared `/v1/plans` handler; a
   * verb that succeeds is applied to the step states and persisted before the answer.
   * `authorize` is asked about the plan again inside the serial queue, where the verb runs: a
   * plan created under that name after the edge's check is still checked.
   */
  async verb(segments: readonly string[], query: URLSearchParams, body: string, authorize?: (name: string) => DrydockError | undefined): Promise<PlansAnswer> {
    const method = 'POST';
    const { commits } = this.#o;
    const out = await commits.serial(async () => {
      const live = [...this.#plans.values()].filter((p) => !p.deleted);
      const [name, verb] = segments;
      const refused = name === undefined ? undefined : authorize?.(name);
      if (refused !== undefined) return { answer: { status: refused.status, text: refused.message } as PlansAnswer, actions: [] as StepActions[], held: undefined };
      const held = segments.length === 2 ? live.find((p) => p.name === name) : undefined;
      // A restart runs a step's actions again only where that is safe (restartVerdict); the
      // steps it refuses keep their state, and their message and the answer say why.
      const refusedSteps = new Map<HeldStep, string>();
      const restartVeto = held === undefined || verb !== 'restart' ? undefined : (step: Step): string | undefined => {
        const s = [...held.steps].find(([, x]) => x.step === step);
        if (s === undefined) return undefined;
        const v = restartVerdict(s[1].record.state, { hookRunning: this.#hookRunning(held, s[0], s[1].record.state) });
        if (v.kind !== 'refused') return undefined;
        refusedSteps.set(s[1], v.reason);
        return v.reason;
      };
      let answer = plansApi(live.map((p) => p.plan), { method, segments, query, body }, { restartVeto });
      if (held === undefined) return { answer, actions: [] as StepActions[], held };
      const phaseRef = query.get('phase') || undefined;
      const stepRef = query.get('step') || undefined;
      let actions: StepActions[] = [];
      if (verb === 'continue' && (answer.status === 200 || answer.status === 208)) {
        const bumped = this.#continueAwaiting(held, phaseRef);
        if (bumped > 0 && answer.status === 208) answer = { status: 200, json: { message: 'Received cmd: continue' } };
      }
      for (const [s, reason] of refusedSteps) {
        s.record = { ...s.record, state: refuseRestart(s.record.state, reason) };
        this.#showStep(s.step, s.record.state, s.step.note);
      }
      if (answer.status === 200) actions = this.#applyVerb(held, verb ?? '', phaseRef, stepRef);
      else if (refusedSteps.size === 0) return { answer, actions, held: undefined };
      const w = await commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name }, (r) => r.updateMaintenancePlanProgress(held.name, this.#progressText(held)), () => undefined);
      if (!w.ok) return { answer: { status: w.error.status, text: w.error.message } as PlansAnswer, actions: [], held: undefined };
      this.#announcePlan(held);
      return { answer, actions, held };
    });
    if (out.held !== undefined) {
      await this.#carryOut(out.actions);
      this.kick();
    }
    return out.answer;
  }

  /**
   * The hook a verb on a plan could run, so its caller must be allowed run_maintenance_hooks on it:
   * `start`, `continue` and `restart` on a plan whose on_down names a hook, when a step in the
   * verb's scope would still (or again) run it (maintenance-plan-step.ts verbMayRunHook).
   * undefined: no such plan, no hook, or nothing to run. An older master's command never runs, so
   * it needs no check.
   */
  hookNeededFor(name: string, verb: string, phaseRef: string | undefined, stepRef: string | undefined): string | undefined {
    const held = this.#plans.get(name);
    if (held === undefined || held.deleted || held.spec.onDown?.kind !== 'hook') return undefined;
    if (verb !== 'start' && verb !== 'continue' && verb !== 'restart') return undefined;
    const phase = verb === 'start' || phaseRef === undefined ? undefined : held.plan.child(phaseRef);
    const step = verb === 'restart' && phase !== undefined && stepRef !== undefined ? phase.child(stepRef) : undefined;
    for (const s of held.steps.values()) {
      if (phase !== undefined && s.phase !== phase.name) continue;
      if (step !== undefined && s.step !== step) continue;
      if (verbMayRunHook(verb, s.record.state)) return held.spec.onDown.hook;
    }
    return undefined;
  }

  /**
   * A plan's JSON with each step's hook record (`hook: {name, attempt, status, code, signal,
   * output}`) and, where the reader may run the hook (`reveal`), the output of a failed hook in the
   * step's message in place of OUTPUT_HIDDEN.
   */
  #withHooks(held: HeldPlan, json: unknown, reveal: boolean): unknown {
    const info = json as { phases?: Array<{ name: string; steps: Array<{ name: string; message: string } & Record<string, unknown>> }> };
    if (!Array.isArray(info.phases)) return json;
    const name = hookNameOf(held) ?? null;
    const phases = info.phases.map((p) => ({
      ...p,
      steps: p.steps.map((st) => {
        const s = held.steps.get(keyOf(p.name, st.name));
        if (s === undefined) return st;
        const out: typeof st = { ...st };
        const state = s.record.state;
        if (reveal && state.stage === 'ERROR' && state.hookOutput !== null) {
          const hidden = errorText(state, false);
          if (out.message.endsWith(hidden)) out.message = `${out.message.slice(0, out.message.length - hidden.length)}${errorText(state, true)}`;
        }
        const h = s.record.hook;
        if (h !== null) out['hook'] = { name, attempt: h.attempt, status: h.status, code: h.code, signal: h.signal, output: reveal || h.output === '' ? h.output : OUTPUT_HIDDEN };
        return out;
      }),
    }));
    return { ...info, phases };
  }

  /** Steps AWAITING_OPERATOR in scope get one more continue; how many. */
  #continueAwaiting(held: HeldPlan, phaseRef: string | undefined): number {
    let n = 0;
    for (const s of held.steps.values()) {
      if (phaseRef !== undefined && s.phase !== phaseRef) continue;
      if (s.record.state.stage !== 'AWAITING_OPERATOR') continue;
      s.record = { ...s.record, continues: s.record.continues + 1 };
      n++;
    }
    return n;
  }

  /** Lays a verb the engine accepted onto the step states; returns the undo actions to carry out. */
  #applyVerb(held: HeldPlan, verb: string, phaseRef: string | undefined, stepRef: string | undefined): StepActions[] {
    const now = this.#o.clock.now();
    const actions: StepActions[] = [];
    const inScope = (phase: string, step: Step): boolean => {
      if (phaseRef === undefined) return true;
      const ph = held.plan.child(phaseRef);
      if (ph === undefined || ph.name !== phase) return false;
      if (stepRef === undefined) return true;
      return ph.child(stepRef) === step;
    };
    for (const s of held.steps.values()) {
      const state = s.record.state;
      switch (verb) {
        case 'stop': {
          const r = stopStep(state);
          if (r.actions.length > 0) actions.push({ held, actions: r.actions });
          s.record = { ...s.record, state: r.state };
          break;
        }
        case 'forceComplete': {
          if (!inScope(s.phase, s.step) || state.stage === 'COMPLETE') break;
          const r = forceCompleteStep(state, now);
          if (r.actions.length > 0) actions.push({ held, actions: r.actions });
          s.record = { ...s.record, state: r.state };
          break;
        }
        case 'restart':
        case 'start': {
          // The engine put the step back to PENDING (restart, or start of a COMPLETE plan); a step
          // the restart's veto refused was left as it was.
          if (verb === 'restart' && !inScope(s.phase, s.step)) break;
          if (s.step.storedStatus() !== 'PENDING' || state.stage === 'PENDING') break;
          s.record = { ...s.record, state: restartStep(state, now) };
          break;
        }
        default:
          break;
      }
      // The step machine's state carries out a restart here and now: the engine's "rerun owed"
      // mark is for drivers that relaunch later, and must not be stored with the overrides.
      if (s.step.rerunPending()) s.step.rerunBegun();
      // A run that starts over counts its on_down attempts from 1 again: forget the old run's record.
      if (s.record.state.hookAttempt === 0 && s.record.hook !== null) s.record = { ...s.record, hook: null };
      this.#showStep(s.step, s.record.state, s.step.note);
    }
    return actions;
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
            this.#showStep(s.step, state, '');
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
        const w = await this.#o.commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name, steps: list.length }, (reg) => reg.updateMaintenancePlanProgress(held.name, this.#progressText(held, next)), () => {
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
      this.#showStep(m.s.step, m.s.record.state, m.adv.waitingFor);
      this.#announceStep(m.held, m.key, m.s);
    }
    this.#flushAnnounced();
    await this.#carryOut(actions);
    return { changed, wake: this.#disposed ? undefined : wake };
  }

  /** The engine's view of a step: its status from the state, its note the one line an operator reads. */
  #showStep(step: Step, state: StepState, waitingFor: string): void {
    step.setStatus(stepStatusOf(state));
    // An ERROR shows its hidden form here (notes reach every reader of the plan; `answer` reveals),
    // and a restart refused since (a waiting-for text shows it already).
    const refusal = state.stage === 'ERROR' ? lastRefusal(state) : undefined;
    const error = `${errorText(state, false)}${refusal === undefined ? '' : ` (${refusal})`}`;
    step.note = state.stage === 'ERROR' ? error : state.left !== null && state.stage === 'PENDING' ? `left ${state.left.text}` : waitingFor;
  }

  /** Whether a process of one of the step's on_down attempts is still ours to wait for (running, or being stopped). */
  #hookRunning(held: HeldPlan, key: string, state: StepState): boolean {
    for (let attempt = 1; attempt <= state.hookAttempt; attempt++) if (this.#hooks.has(hookKey(held.name, key, attempt))) return true;
    return false;
  }

  // ---- The operator event stream -------------------------------------------------------------

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
    return { mode: m?.mode, unavailability, agents: agentObs, frameworks, hook: this.#hookReport(held, key, record.hook), continues: record.continues };
  }

  #hookReport(held: HeldPlan, key: string, hook: HookRecord | null): HookReport | undefined {
    if (hook === null) return undefined;
    switch (hook.status) {
      case 'running':
        // Recorded running but not ours: a process of an earlier term.
        return this.#hooks.has(hookKey(held.name, key, hook.attempt)) ? { attempt: hook.attempt, status: 'running' } : { attempt: hook.attempt, status: 'interrupted' };
      case 'succeeded': return { attempt: hook.attempt, status: 'succeeded', code: hook.code ?? 0, output: hook.output };
      case 'failed': return { attempt: hook.attempt, status: 'failed', code: hook.code, signal: hook.signal ?? undefined, output: hook.output };
      case 'timed_out': return { attempt: hook.attempt, status: 'timed_out', output: hook.output };
      case 'interrupted': return { attempt: hook.attempt, status: 'interrupted' };
    }
  }

  #clusterMachines(): ClusterMachine[] {
    const out: ClusterMachine[] = [];
    for (const e of this.#o.agents.all()) {
      if (this.#o.agents.isGone(e.id)) continue;
      out.push({ id: agentMachineId(e.info.hostname, e.info.ip), attributes: attributesOf(e.info.attributes) });
    }
    // Scheduled machines without an agent are known too (no attributes).
    for (const m of this.#o.maintenance.machines.values()) out.push({ id: m.id, attributes: {} });
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
      await Promise.all(of('run_hook').map((x) => this.#runHook(x.held, x.a)));
      for (const x of of('cancel_hook')) {
        const key = this.#stepKeyOf(x.held, x.a.machine);
        const run = key === undefined ? undefined : this.#hooks.get(hookKey(x.held.name, key, x.a.attempt));
        run?.stop();
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

  /**
   * Starts an on_down attempt at most once: recorded `running` durably before the process starts.
   * The hook runs as the hook user with the minimal environment (maintenance-hooks.ts), and its
   * start is audited in the name of the plan's creator.
   */
  async #runHook(held: HeldPlan, a: Extract<StepAction, { type: 'run_hook' }>): Promise<void> {
    const key = this.#stepKeyOf(held, a.machine);
    if (key === undefined) return;
    const s = held.steps.get(key);
    if (s === undefined || (s.record.hook !== null && s.record.hook.attempt >= a.attempt)) return;
    const ok = await this.#updateRecord(held, s, { attempt: a.attempt, status: 'running', code: null, signal: null, output: '' });
    if (!ok || this.#disposed) return;
    const user = this.#hookConfig.user;
    const env = hookEnvironment({ home: user.home, hookEnv: a.hookEnv, plan: held.name, step: key, values: a.values });
    this.#o.audit?.({
      principal: held.createdBy ?? undefined,
      action: 'run_maintenance_hooks',
      object: `'${a.hook}'`,
      outcome: 'allowed',
      detail: `plan ${held.name} step ${key} attempt ${a.attempt}`,
      argv: a.argv,
    });
    const run = startHookProcess({ argv: a.argv, env, uid: user.uid, gid: user.gid, timeoutMs: a.timeoutMs, killAfterMs: HOOK_KILL_AFTER_MS, outputBytes: HOOK_OUTPUT_BYTES, clock: this.#o.clock });
    const hk = hookKey(held.name, key, a.attempt);
    this.#hooks.set(hk, run);
    this.#log.info('on_down started', { plan: held.name, step: key, attempt: a.attempt, hook: a.hook, pid: run.pid ?? null, user: user.name });
    // Not awaited: the driver's pass (and an operator's verb) must not wait for the hook to end.
    void run.ended.then(async (end) => {
      if (this.#hooks.get(hk) !== run) return;
      this.#hooks.delete(hk);
      if (this.#disposed) return;
      // A stop (cancel_hook) is a failure by a signal to the step machine, as before.
      const status: HookRecord['status'] = end.status === 'stopped' ? 'failed' : end.status;
      this.#log.info('on_down ended', { plan: held.name, step: key, attempt: a.attempt, hook: a.hook, pid: run.pid ?? null, code: end.code, signal: end.signal, status });
      await this.#updateRecord(held, s, { attempt: a.attempt, status, code: end.code, signal: end.signal, output: end.output });
      this.kick();
    });
  }

  async #updateRecord(held: HeldPlan, s: { record: StepRecord }, hook: HookRecord): Promise<boolean> {
    return this.#o.commits.serial(async () => {
      if (held.deleted) return false;
      // An outcome of an attempt the step no longer runs (stopped, restarted) is not kept.
      if (hook.status !== 'running' && (s.record.hook?.attempt !== hook.attempt || s.record.hook.status !== 'running')) return false;
      const before = s.record;
      s.record = { ...s.record, hook };
      const r = await this.#o.commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name }, (reg) => reg.updateMaintenancePlanProgress(held.name, this.#progressText(held)), () => undefined);
      if (!r.ok) s.record = before;
      return r.ok;
    });
  }

  // ---- Building and storing ------------------------------------------------------------------

  #build(
    name: string,
    specText: string,
    spec: MaintenancePlanSpec,
    selection: MachineSelection,
    createdNs: bigint,
    progress: Progress | undefined,
    createdBy: string | null,
    namedHooks: boolean,
  ): HeldPlan {
    const plan = planFromSpec(spec, selection);
    const machines = planSteps(selection);
    const steps = new Map<string, { phase: string; step: Step; record: StepRecord }>();
    let i = 0;
    for (const phase of plan.phases) {
      for (const step of phase.steps) {
        const m = machines[i++];
        if (m === undefined) continue;
        const key = keyOf(phase.name, step.name);
        const stored = progress?.steps[key];
        const record: StepRecord = stored === undefined ? { state: newStepState(m.machine, m.step), continues: 0, hook: null } : { ...stored, state: storedStepState(stored.state, m.machine, m.step) };
        steps.set(key, { phase: phase.name, step, record });
      }
    }
    if (progress !== undefined) applyOverrides(plan, progress.overrides);
    for (const s of steps.values()) this.#showStep(s.step, s.record.state, '');
    return { name, specText, spec, selection, plan, createdNs, createdBy, namedHooks, steps, deleted: false };
  }

  #rebuild(row: DurableMaintenancePlan): HeldPlan | undefined {
    const progress = JSON.parse(row.progress) as Progress;
    const namedHooks = progress.namedHooks === true;
    const parsed = parseMaintenancePlanSpec(row.spec, { hooks: this.#hookConfig.catalog, mode: namedHooks ? 'stored' : 'legacy' });
    if (!parsed.ok) {
      this.#log.error('maintenance plan spec no longer parses', { plan: row.name, errors: parsed.errors.slice(0, 5) });
      return undefined;
    }
    if (parsed.spec.onDown?.kind === 'command') this.#log.warn('maintenance plan from an older master has a shell command in on_down: it will not run', { plan: row.name });
    if (parsed.spec.onDown?.kind === 'hook' && parsed.spec.onDown.definition === undefined) this.#log.warn('maintenance plan names a hook this master does not have', { plan: row.name, hook: parsed.spec.onDown.hook });
    return this.#build(row.name, row.spec, parsed.spec, progress.selection, row.createdNs, progress, progress.createdBy ?? null, namedHooks);
  }

  /** The plan's progress JSON; `next` replaces the records of some steps (the ones a pass is about to write). */
  #progressText(held: HeldPlan, next?: ReadonlyMap<HeldStep, StepRecord>): string {
    const steps: Record<string, StepRecord> = {};
    for (const [key, s] of held.steps) steps[key] = next?.get(s) ?? s.record;
    const progress: Progress = { version: 1, selection: held.selection, overrides: overridesOf(held.plan), steps, createdBy: held.createdBy, ...(held.namedHooks ? { namedHooks: true as const } : {}) };
    return JSON.stringify(progress);
  }
}

/** What makes a step's event: stage, stored status, and the waiting-for text with its countdowns masked. */
function changeKey(s: HeldStep): string {
  return `${s.record.state.stage}\u0000${s.step.storedStatus()}\u0000${steadyText(s.step.note)}`;
}

function stepChange(held: HeldPlan, s: HeldStep): MaintenanceStepChange {
  const state = s.record.state;
  const change: MaintenanceStepChange = { phase: s.phase, name: state.name, machine: state.machine, stage: state.stage, status: s.step.storedStatus(), waitingFor: s.step.note };
  // The note hides a failed hook's output; the stream shows it to subscribers who may run the hook.
  if (state.stage === 'ERROR' && state.hookOutput !== null && s.step.note === errorText(state, false)) return { ...change, revealed: { hook: hookNameOf(held), waitingFor: errorText(state, true) } };
  return change;
}

/** The hook a plan names (undefined: none, or an older master's command): what reveal is asked about. */
function hookNameOf(held: HeldPlan): string | undefined {
  return held.spec.onDown?.kind === 'hook' ? held.spec.onDown.hook : undefined;
}

function safeDecode(part: string): string | undefined {
  try {
    return decodeURIComponent(part);
  } catch {
    return undefined;
  }
}

function hookKey(plan: string, step: string, attempt: number): string {
  return `${plan}\u0000${step}\u0000${attempt}`;
}

function attributesOf(attributes: readonly Attribute[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of attributes) if (!Object.hasOwn(out, a.name)) out[a.name] = attributeText(a);
  return out;
}

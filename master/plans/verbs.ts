/**
 * The operator's side of the maintenance plans: create a plan from a spec, delete a finished
 * one, read plans, phases and steps, and the verbs of `/v1/plans` (start, stop, continue,
 * interrupt, restart, forceComplete) laid onto the steps' states, durable before the answer.
 * The HTTP edge (api/plans.ts, rows of api/calls.ts) authorizes and reaches these through the
 * term's queries and commands ports; the driver (driver.ts) holds the plans and carries out what
 * a verb leaves to do.
 */

import { fail, type DrydockError } from '../../shared/errors.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import type { MachineId } from '../../shared/machine.js';
import { plansApi, type PlansAnswer } from '../../shared/plans/api.js';
import type { Step } from '../../shared/plans/plan.js';
import type { Status } from '../../shared/plans/status.js';
import type { DurableMaintenancePlan } from '../registry/registry.js';
import type { Commits } from '../term/commit.js';
import type { MasterEvents } from '../term/events.js';
import type { HookReveal } from '../term/queries.js';
import { OUTPUT_HIDDEN, type HookCatalog } from './hooks.js';
import { buildPlan, hookNameOf, keyOf, progressText, showStep, type HeldPlan, type HeldStep, type StepActions } from './progress.js';
import { parseMaintenancePlanSpec, selectMachines, type ClusterMachine, type MachineSelection, type MaintenancePlanSpec } from './spec.js';
import { errorText, forceCompleteStep, isOut, refuseRestart, restartStep, restartVerdict, stopStep, verbMayRunHook, type StepState } from './step.js';

/** What the verbs need of the driver and the term. */
export interface VerbsNeeds {
  /** The plans the driver holds, by name. */
  readonly plans: Map<string, HeldPlan>;
  readonly commits: Commits;
  readonly bus: MasterEvents;
  readonly clock: Clock;
  readonly log: Logger;
  /** The master's hooks a spec may name. */
  readonly catalog: HookCatalog;
  /** The machines a spec's selection is made from. */
  clusterMachines(): ClusterMachine[];
  /** Whether a process of one of the step's on_down attempts is still running. */
  hookRunning(held: HeldPlan, key: string, state: StepState): boolean;
  /** A new plan's present state is taken as already told to Drydock's event stream. */
  seed(held: HeldPlan): void;
  /** After a verb: every step it changed, then the plan, on Drydock's event stream. */
  announcePlan(held: HeldPlan): void;
  /** Carries out the actions a verb left (stop's undo, a forced completion's). */
  carryOut(steps: readonly StepActions[]): Promise<void>;
  /** Drives the plans again. */
  kick(): void;
}

export class PlanVerbs {
  readonly #n: VerbsNeeds;

  constructor(needs: VerbsNeeds) {
    this.#n = needs;
  }

  #live(): HeldPlan[] {
    return [...this.#n.plans.values()].filter((p) => !p.deleted);
  }

  names(): string[] {
    return this.#live().map((p) => p.name);
  }

  /** Steps by plan and status, for the metrics (`drydock_master_maintenance_plan_steps`). */
  stepCounts(): Array<{ plan: string; status: Status; steps: number }> {
    const out: Array<{ plan: string; status: Status; steps: number }> = [];
    for (const held of this.#live()) {
      const by = new Map<Status, number>();
      for (const s of held.steps.values()) by.set(s.step.status(), (by.get(s.step.status()) ?? 0) + 1);
      for (const [status, steps] of by) out.push({ plan: held.name, status, steps });
    }
    return out;
  }

  /** The machines a plan works on (undefined: no such plan): what its ACL checks name. */
  machinesOf(name: string): MachineId[] | undefined {
    const held = this.#n.plans.get(name);
    if (held === undefined || held.deleted) return undefined;
    return held.selection.phases.flatMap((p) => p.machines);
  }

  /**
   * A new plan's spec read as creation reads it (parsed against the master's hooks, its machines
   * selected), or the 400 creation would answer: also what the impact preview shows of a plan.
   */
  read(text: string): { ok: true; spec: MaintenancePlanSpec; selection: MachineSelection } | { ok: false; error: DrydockError } {
    const parsed = parseMaintenancePlanSpec(text, { hooks: this.#n.catalog, mode: 'create' });
    if (!parsed.ok) return { ok: false, error: fail('MAINTENANCE_PLAN_SPEC_INVALID', parsed.errors.join('\n')) };
    const spec = parsed.spec;
    const selection = selectMachines(spec, this.#n.clusterMachines());
    if (selection.unmatched.length > 0) return { ok: false, error: fail('MAINTENANCE_PLAN_SELECTION_INVALID', `no known machine has hostname ${selection.unmatched.join(', ')}`) };
    if (selection.phases.every((p) => p.machines.length === 0)) return { ok: false, error: fail('MAINTENANCE_PLAN_SELECTION_INVALID', 'the selection matches no machine the master knows') };
    return { ok: true, spec, selection };
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
    const read = this.read(text);
    if (!read.ok) return read;
    const { spec, selection } = read;
    const count = selection.phases.reduce((n, p) => n + p.machines.length, 0);
    const refused = authorize?.(selection.phases.flatMap((p) => p.machines), spec.onDown?.kind === 'hook' ? spec.onDown.hook : undefined);
    if (refused !== undefined) return { ok: false, error: refused };
    const { commits, plans } = this.#n;
    const result = await commits.serial(async () => {
      if (plans.has(spec.name)) return { ok: false as const, error: fail('MAINTENANCE_PLAN_EXISTS', spec.name) };
      const createdNs = BigInt(this.#n.clock.now()) * 1_000_000n;
      const held = buildPlan(spec.name, text, spec, selection, createdNs, undefined, createdBy, true);
      const row: DurableMaintenancePlan = { name: spec.name, spec: text, progress: progressText(held), createdNs };
      const w = await commits.write('CREATE_MAINTENANCE_PLAN', { plan: spec.name }, (r) => r.createMaintenancePlan(row), () => {
        plans.set(spec.name, held);
        this.#n.seed(held);
        this.#n.bus.emit({ type: 'MAINTENANCE_PLAN_ADDED', plan: spec.name, status: held.plan.status(), machines: count });
      });
      return w.ok ? { ok: true as const } : { ok: false as const, error: w.error };
    });
    if (!result.ok) return result;
    this.#n.log.info('maintenance plan created', { plan: spec.name, machines: count, phases: selection.phases.length, createdBy, ...(spec.onDown?.kind === 'hook' ? { hook: spec.onDown.hook } : {}) });
    this.#n.kick();
    return { ok: true, message: `created maintenance plan ${spec.name}: ${count} machine${count === 1 ? '' : 's'} in ${selection.phases.length} phase${selection.phases.length === 1 ? '' : 's'}` };
  }

  /** `DELETE /v1/maintenance/plans/<name>`: only a COMPLETE or stopped plan. */
  async delete(name: string, forget: (name: string) => void): Promise<DrydockError | undefined> {
    const { commits, plans } = this.#n;
    return commits.serial(async () => {
      const held = plans.get(name);
      if (held === undefined || held.deleted) return fail('PLAN_NOT_FOUND', name);
      const status = held.plan.status();
      const stopped = held.plan.isInterrupted() && [...held.steps.values()].every((s) => !isOut(s.record.state.stage));
      if (status !== 'COMPLETE' && !stopped) return fail('MAINTENANCE_PLAN_NOT_FINISHED', name, status);
      const w = await commits.write('DELETE_MAINTENANCE_PLAN', { plan: name }, (r) => r.deleteMaintenancePlan(name), () => {
        held.deleted = true;
        plans.delete(name);
        forget(name);
        this.#n.bus.emit({ type: 'MAINTENANCE_PLAN_REMOVED', plan: name });
      });
      if (!w.ok) return w.error;
      this.#n.log.info('maintenance plan deleted', { plan: name });
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
    const plans = this.#live();
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
    const { commits } = this.#n;
    const out = await commits.serial(async () => {
      const live = this.#live();
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
        const v = restartVerdict(s[1].record.state, { hookRunning: this.#n.hookRunning(held, s[0], s[1].record.state) });
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
        showStep(s.step, s.record.state, s.step.note);
      }
      if (answer.status === 200) actions = this.#applyVerb(held, verb ?? '', phaseRef, stepRef);
      else if (refusedSteps.size === 0) return { answer, actions, held: undefined };
      const w = await commits.write('UPDATE_MAINTENANCE_PLAN', { plan: held.name }, (r) => r.updateMaintenancePlanProgress(held.name, progressText(held)), () => undefined);
      if (!w.ok) return { answer: { status: w.error.status, text: w.error.message } as PlansAnswer, actions: [], held: undefined };
      this.#n.announcePlan(held);
      return { answer, actions, held };
    });
    if (out.held !== undefined) {
      await this.#n.carryOut(out.actions);
      this.#n.kick();
    }
    return out.answer;
  }

  /**
   * The hook a verb on a plan could run, so its caller must be allowed run_maintenance_hooks on it:
   * `start`, `continue` and `restart` on a plan whose on_down names a hook, when a step in the
   * verb's scope would still (or again) run it (step.ts verbMayRunHook).
   * undefined: no such plan, no hook, or nothing to run. An older master's command never runs, so
   * it needs no check.
   */
  hookNeededFor(name: string, verb: string, phaseRef: string | undefined, stepRef: string | undefined): string | undefined {
    const held = this.#n.plans.get(name);
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
    const now = this.#n.clock.now();
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
      showStep(s.step, s.record.state, s.step.note);
    }
    return actions;
  }
}

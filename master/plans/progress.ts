/**
 * A maintenance plan as the master holds it, and its progress codec: what a plan's registry row
 * keeps (the selection, the operator's overrides, each step's state and hook record, the
 * creator), how a held plan is built from a spec and a row's progress, and how its progress is
 * written again. Also how a step's state shows on the plan engine's step (status and note) and on
 * Drydock's event stream. Pure: no timers, no registry, no processes.
 */

import type { Logger } from '../../shared/log.js';
import type { Attribute } from '../../shared/mesos.js';
import { applyOverrides, overridesOf, type PlanOverrides } from '../../shared/plans/overrides.js';
import type { Plan, Step } from '../../shared/plans/plan.js';
import type { DurableMaintenancePlan } from '../registry/registry.js';
import type { MaintenanceStepChange } from '../term/events.js';
import type { HookCatalog } from './hooks.js';
import { parseMaintenancePlanSpec, planFromSpec, planSteps, type MachineSelection, type MaintenancePlanSpec } from './spec.js';
import { errorText, lastRefusal, newStepState, steadyText, stepStatusOf, storedStepState, type StepAction, type StepState } from './step.js';

/** The durable record of one on_down attempt. */
export interface HookRecord {
  attempt: number;
  status: 'running' | 'succeeded' | 'failed' | 'timed_out' | 'interrupted';
  code: number | null;
  signal: string | null;
  /** The last HOOK_OUTPUT_BYTES (hook-runner.ts) of stdout and stderr together. */
  output: string;
}

/** Per step, what is kept besides its StepState. */
export interface StepRecord {
  state: StepState;
  /** How many times the operator continued this step (AWAITING_OPERATOR). */
  continues: number;
  hook: HookRecord | null;
}

/** The progress JSON a plan's registry row keeps. Fields are only ever added: older rows must read. */
export interface Progress {
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
export interface HeldStep {
  readonly phase: string;
  readonly step: Step;
  record: StepRecord;
}

/** A plan the master holds: its spec, selection, engine plan and steps. */
export interface HeldPlan {
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

/** The actions of one step, in order. */
export interface StepActions {
  readonly held: HeldPlan;
  readonly actions: readonly StepAction[];
}

/** A step's key in a plan: `phase/step`. */
export const keyOf = (phase: string, step: string): string => `${phase}/${step}`;

/** The key of one on_down attempt of one step of one plan (the hook runner's processes are kept by it). */
export function hookKey(plan: string, step: string, attempt: number): string {
  return `${plan}\u0000${step}\u0000${attempt}`;
}

/** The engine's view of a step: its status from the state, its note the one line an operator reads. */
export function showStep(step: Step, state: StepState, waitingFor: string): void {
  step.setStatus(stepStatusOf(state));
  // An ERROR shows its hidden form here (notes reach every reader of the plan; the plans' `answer` reveals),
  // and a restart refused since (a waiting-for text shows it already).
  const refusal = state.stage === 'ERROR' ? lastRefusal(state) : undefined;
  const error = `${errorText(state, false)}${refusal === undefined ? '' : ` (${refusal})`}`;
  step.note = state.stage === 'ERROR' ? error : state.left !== null && state.stage === 'PENDING' ? `left ${state.left.text}` : waitingFor;
}

/** A held plan from a spec, its selection and (for a stored plan) its progress. */
export function buildPlan(
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
  const steps = new Map<string, HeldStep>();
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
  for (const s of steps.values()) showStep(s.step, s.record.state, '');
  return { name, specText, spec, selection, plan, createdNs, createdBy, namedHooks, steps, deleted: false };
}

/** A held plan from its registry row, its spec read against the master's hooks; undefined when the spec no longer parses (logged). */
export function readPlan(row: DurableMaintenancePlan, hooks: HookCatalog, log: Logger): HeldPlan | undefined {
  const progress = JSON.parse(row.progress) as Progress;
  const namedHooks = progress.namedHooks === true;
  const parsed = parseMaintenancePlanSpec(row.spec, { hooks, mode: namedHooks ? 'stored' : 'legacy' });
  if (!parsed.ok) {
    log.error('maintenance plan spec no longer parses', { plan: row.name, errors: parsed.errors.slice(0, 5) });
    return undefined;
  }
  if (parsed.spec.onDown?.kind === 'command') log.warn('maintenance plan from an older master has a shell command in on_down: it will not run', { plan: row.name });
  if (parsed.spec.onDown?.kind === 'hook' && parsed.spec.onDown.definition === undefined) log.warn('maintenance plan names a hook this master does not have', { plan: row.name, hook: parsed.spec.onDown.hook });
  return buildPlan(row.name, row.spec, parsed.spec, progress.selection, row.createdNs, progress, progress.createdBy ?? null, namedHooks);
}

/** The plan's progress JSON; `next` replaces the records of some steps (the ones a pass is about to write). */
export function progressText(held: HeldPlan, next?: ReadonlyMap<HeldStep, StepRecord>): string {
  const steps: Record<string, StepRecord> = {};
  for (const [key, s] of held.steps) steps[key] = next?.get(s) ?? s.record;
  const progress: Progress = { version: 1, selection: held.selection, overrides: overridesOf(held.plan), steps, createdBy: held.createdBy, ...(held.namedHooks ? { namedHooks: true as const } : {}) };
  return JSON.stringify(progress);
}

/** What makes a step's event: stage, stored status, and the waiting-for text with its countdowns masked. */
export function changeKey(s: HeldStep): string {
  return `${s.record.state.stage}\u0000${s.step.storedStatus()}\u0000${steadyText(s.step.note)}`;
}

/** A step as MAINTENANCE_PLAN_UPDATED carries it. */
export function stepChange(held: HeldPlan, s: HeldStep): MaintenanceStepChange {
  const state = s.record.state;
  const change: MaintenanceStepChange = { phase: s.phase, name: state.name, machine: state.machine, stage: state.stage, status: s.step.storedStatus(), waitingFor: s.step.note };
  // The note hides a failed hook's output; the stream shows it to subscribers who may run the hook.
  if (state.stage === 'ERROR' && state.hookOutput !== null && s.step.note === errorText(state, false)) return { ...change, revealed: { hook: hookNameOf(held), waitingFor: errorText(state, true) } };
  return change;
}

/** The hook a plan names (undefined: none, or an older master's command): what reveal is asked about. */
export function hookNameOf(held: HeldPlan): string | undefined {
  return held.spec.onDown?.kind === 'hook' ? held.spec.onDown.hook : undefined;
}

/** An attribute's value as Mesos prints it in text (`rack:r1`, `n:2`, `ports:[1-2]`, `s:{a,b}`). */
export function attributeText(a: Attribute): string {
  if (a.text !== undefined) return a.text.value;
  if (a.scalar !== undefined) return String(a.scalar.value);
  if (a.ranges !== undefined) return `[${a.ranges.range.map((r) => `${r.begin}-${r.end}`).join(',')}]`;
  if (a.set !== undefined) return `{${a.set.item.join(',')}}`;
  return '';
}

/** An agent's attributes by name, as text (the first of a name wins). */
export function attributesOf(attributes: readonly Attribute[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const a of attributes) if (!Object.hasOwn(out, a.name)) out[a.name] = attributeText(a);
  return out;
}

/**
 * The disruption budget of a maintenance plan (issue 12), as one pure decision: may this step
 * start now? The driver asks it for each step the plan's strategy offers, before the first
 * `advanceStep` on it, and shows a refusal's reason on the waiting step. It is asked again on every
 * wake-up, so a step starts as soon as the budget allows it.
 *
 * The rules, checked in this order (the first refusal is the reason shown):
 *  1. two plans never touch the same machine: a machine another plan is working on waits;
 *  2. `budget.max_down`: at most that many machines of this plan out at once;
 *  3. `max_parallel`: at most that many steps of one phase out at once (the plan engine's
 *     strategies have no cap, so it lives here);
 *  4. `budget.min_active_agents`: never start a step that would leave fewer active agents in the
 *     group than `count`.
 * "Out" is a step past PENDING and not COMPLETE (isOut); an ERROR step is out, since its machine
 * may be drained or DOWN, so a failure holds its share of the budget until the operator acts.
 */
import { machineKey, type MachineId } from '../../shared/machine.js';
import { attributesMatch, type BudgetSpec } from './spec.js';
import { isOut, type StepStage } from './step.js';

/** A step of the plan, as the budget sees it. */
export interface BudgetStep {
  /** The plan phase it belongs to. */
  readonly phase: string;
  /** The step's name (how reasons name the machine). */
  readonly name: string;
  readonly machine: MachineId;
  readonly stage: StepStage;
}

/** An agent of the cluster: its machine, attributes (Mesos text values) and whether it is active now. */
export interface BudgetAgent {
  readonly id: string;
  readonly machine: MachineId;
  readonly attributes: Readonly<Record<string, string>>;
  /** Registered, connected and not deactivated: it gets offers. */
  readonly active: boolean;
}

export interface BudgetInput {
  /** The step that would start. */
  readonly candidate: { readonly phase: string; readonly name: string; readonly machine: MachineId };
  /** Every step of this plan with its stage (the candidate may be among them). */
  readonly steps: readonly BudgetStep[];
  /** Machines other plans are working on now (their out steps), by plan name. */
  readonly otherPlans: readonly { readonly plan: string; readonly machines: readonly MachineId[] }[];
  /** Every agent the master knows. */
  readonly agents: readonly BudgetAgent[];
  readonly budget: BudgetSpec;
  /** The spec's max_parallel; undefined: no cap. */
  readonly maxParallel: number | undefined;
}

export type BudgetVerdict = { readonly ok: true } | { readonly ok: false; readonly reason: string };

function names(list: readonly string[]): string {
  return list.length <= 5 ? list.join(', ') : `${list.slice(0, 5).join(', ')} and ${list.length - 5} more`;
}

function groupText(attributes: Readonly<Record<string, string>>): string {
  const pairs = Object.entries(attributes).map(([k, v]) => `${k}=${v}`);
  return pairs.length === 0 ? 'in the cluster' : `with ${pairs.join(', ')}`;
}

/**
 * The budget of one plan for one pass of the driver: built once from the plan's steps, the
 * machines other plans are working on and the agents, then asked for each offered step in turn.
 * A step that starts is `take`n, so the next candidate of the same pass sees it out. Asking is
 * cheap (a map lookup and a count for the common refusal), so a plan of thousands of steps can
 * ask for each of them on every pass.
 *
 * `busy` (machine key -> plan name) is shared by the plans of a pass: a step one plan starts is
 * at once a machine the others may not touch. The constructor adds this plan's out steps to it.
 */
export class PlanBudget {
  readonly #plan: string;
  readonly #budget: BudgetSpec;
  readonly #maxParallel: number | undefined;
  readonly #busy: Map<string, string>;
  /** This plan's out steps, by machine key. */
  readonly #out = new Map<string, { readonly phase: string; readonly name: string }>();
  /** The agents of the min_active_agents group with their machine keys; undefined without that rule. */
  readonly #group: readonly { readonly active: boolean; readonly key: string }[] | undefined;
  /** The max_down refusal while #out is unchanged (the same for every candidate not out). */
  #maxDownReason: string | undefined;

  constructor(input: Omit<BudgetInput, 'candidate' | 'otherPlans'> & { readonly plan: string; readonly busy: Map<string, string> }) {
    this.#plan = input.plan;
    this.#budget = input.budget;
    this.#maxParallel = input.maxParallel;
    this.#busy = input.busy;
    for (const s of input.steps) {
      if (!isOut(s.stage)) continue;
      const key = machineKey(s.machine);
      this.#out.set(key, { phase: s.phase, name: s.name });
      if (!this.#busy.has(key)) this.#busy.set(key, input.plan);
    }
    const min = input.budget.minActiveAgents;
    this.#group = min === undefined ? undefined : input.agents.filter((a) => attributesMatch(a.attributes, min.attributes)).map((a) => ({ active: a.active, key: machineKey(a.machine) }));
  }

  /** Whether the candidate step may start now, and if not, why (the text shown on the waiting step). */
  allows(candidate: BudgetInput['candidate']): BudgetVerdict {
    const budget = this.#budget;
    const key = machineKey(candidate.machine);

    const other = this.#busy.get(key);
    if (other !== undefined && other !== this.#plan) {
      return { ok: false, reason: `budget: ${candidate.name} is in plan ${other} (two plans never work on the same machine)` };
    }

    // The candidate itself never counts against its own start.
    const self = this.#out.has(key);
    const outCount = this.#out.size - (self ? 1 : 0);
    if (budget.maxDown !== undefined && outCount >= budget.maxDown) {
      if (self) return { ok: false, reason: this.#maxDownText(key) };
      return { ok: false, reason: (this.#maxDownReason ??= this.#maxDownText(undefined)) };
    }

    if (this.#maxParallel !== undefined) {
      const running = [...this.#out].filter(([k, s]) => k !== key && s.phase === candidate.phase).map(([, s]) => s.name);
      if (running.length >= this.#maxParallel) {
        return { ok: false, reason: `budget: ${running.length} of max_parallel ${this.#maxParallel} steps of phase ${candidate.phase} running (${names(running)})` };
      }
    }

    const min = budget.minActiveAgents;
    if (min !== undefined && this.#group !== undefined) {
      // A machine with no active agent in the group takes nothing from it: the rule protects the
      // group's capacity, and holding an unrelated machine back would not restore any.
      if (this.#group.some((a) => a.active && a.key === key)) {
        // Agents on machines already out (in any plan) are counted as gone even while still active:
        // a step that has scheduled but not yet drained will take them away shortly.
        let left = 0;
        for (const a of this.#group) if (a.active && a.key !== key && !this.#busy.has(a.key)) left++;
        if (left < min.count) {
          return { ok: false, reason: `budget: starting ${candidate.name} would leave ${left} active agents ${groupText(min.attributes)}, fewer than min_active_agents ${min.count}` };
        }
      }
    }
    return { ok: true };
  }

  /** The candidate started: it is out from now on, for this plan and the others of the pass. */
  take(candidate: BudgetInput['candidate']): void {
    const key = machineKey(candidate.machine);
    this.#out.set(key, { phase: candidate.phase, name: candidate.name });
    if (!this.#busy.has(key)) this.#busy.set(key, this.#plan);
    this.#maxDownReason = undefined;
  }

  #maxDownText(exclude: string | undefined): string {
    const out = [...this.#out].filter(([k]) => k !== exclude).map(([, s]) => s.name);
    return `budget: ${out.length} of max_down ${this.#budget.maxDown} machines out (${names(out)})`;
  }
}

/** Whether the candidate step may start now, and if not, why: the one-question form of PlanBudget. */
export function budgetAllows(input: BudgetInput): BudgetVerdict {
  const busy = new Map<string, string>();
  for (const other of input.otherPlans) for (const m of other.machines) if (!busy.has(machineKey(m))) busy.set(machineKey(m), other.plan);
  // This plan's own name must differ from every other plan's; the pure form has none, so use one no plan can have.
  return new PlanBudget({ ...input, plan: '\u0000this plan', busy }).allows(input.candidate);
}

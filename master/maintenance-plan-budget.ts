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
import { machineKey, type MachineId } from '../shared/machine.js';
import { attributesMatch, type BudgetSpec } from './maintenance-plan-spec.js';
import { isOut, type StepStage } from './maintenance-plan-step.js';

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

/** Whether the candidate step may start now, and if not, why (the text shown on the waiting step). */
export function budgetAllows(input: BudgetInput): BudgetVerdict {
  const { candidate, budget } = input;
  const key = machineKey(candidate.machine);

  for (const other of input.otherPlans) {
    if (other.machines.some((m) => machineKey(m) === key)) {
      return { ok: false, reason: `budget: ${candidate.name} is in plan ${other.plan} (two plans never work on the same machine)` };
    }
  }

  // The candidate itself never counts against its own start.
  const out = input.steps.filter((s) => isOut(s.stage) && machineKey(s.machine) !== key);
  if (budget.maxDown !== undefined && out.length >= budget.maxDown) {
    return { ok: false, reason: `budget: ${out.length} of max_down ${budget.maxDown} machines out (${names(out.map((s) => s.name))})` };
  }

  if (input.maxParallel !== undefined) {
    const running = out.filter((s) => s.phase === candidate.phase);
    if (running.length >= input.maxParallel) {
      return { ok: false, reason: `budget: ${running.length} of max_parallel ${input.maxParallel} steps of phase ${candidate.phase} running (${names(running.map((s) => s.name))})` };
    }
  }

  const min = budget.minActiveAgents;
  if (min !== undefined) {
    const group = input.agents.filter((a) => attributesMatch(a.attributes, min.attributes));
    const mine = group.filter((a) => a.active && machineKey(a.machine) === key);
    // A machine with no active agent in the group takes nothing from it: the rule protects the
    // group's capacity, and holding an unrelated machine back would not restore any.
    if (mine.length > 0) {
      // Agents on machines already out (in any plan) are counted as gone even while still active:
      // a step that has scheduled but not yet drained will take them away shortly.
      const away = new Set([...out.map((s) => machineKey(s.machine)), ...input.otherPlans.flatMap((p) => p.machines.map(machineKey)), key]);
      const left = group.filter((a) => a.active && !away.has(machineKey(a.machine))).length;
      if (left < min.count) {
        return { ok: false, reason: `budget: starting ${candidate.name} would leave ${left} active agents ${groupText(min.attributes)}, fewer than min_active_agents ${min.count}` };
      }
    }
  }
  return { ok: true };
}

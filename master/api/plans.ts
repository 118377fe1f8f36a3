/**
 * `/v1/maintenance/plans` on the master (issue 12), the handlers of the table's plan rows
 * (calls.ts): `GET` the names, `POST` a spec (YAML or JSON text) to create and start a plan;
 * under `/v1/maintenance/plans/<name>` the verbs, codes and JSON of `/v1/plans`
 * (shared/plans/api.ts), plus `DELETE` of a COMPLETE or stopped plan.
 *
 * A plan is authorized by its machines: every one must be allowed (view, create, update for the
 * verbs, delete), so a rack team's rights end at its rack. A plan that names one of the master's
 * hooks also needs run_maintenance_hooks on it, from whoever creates it and from whoever starts,
 * continues or restarts steps that would run it; and only those allowed to run it see its
 * output in the plan's JSON.
 *
 * There are two shapes and no third: no plan name is the list (its GET filtered plan by plan,
 * its POST checked on the spec's machines); a plan name is always checked before anything is
 * done with it. The check takes a name, never an optional one, so no spelling of a path can
 * reach a plan without it.
 */

import type { AclAction } from '../../shared/acls.js';
import type { DrydockError } from '../../shared/errors.js';
import type { MachineId } from '../../shared/machine.js';
import type { PlansAnswer } from '../../shared/plans/api.js';
import type { Access } from '../security/security.js';
import type { AuthorizePlan, Commands } from '../term/commands.js';
import type { Queries } from '../term/queries.js';
import { ok, refusal, value, type Answer, type CallContext, type Decoded, type HttpRequest } from './row.js';

/** A plan route's target: the method, its name, the segments below the plans' prefix (`[name, verb]`), and the query as sent. */
export interface PlanTarget {
  readonly method: string;
  readonly name: string;
  readonly below: readonly string[];
  readonly query: string;
}

/** A plan route's decoder: the path and query name the plan (and the verb). */
export function planTarget(r: HttpRequest): Decoded<PlanTarget> {
  return ok({ method: r.method, name: r.below[0] as string, below: r.below, query: r.query });
}

/**
 * `action` on every machine of the plan `name`; undefined when allowed, or without ACLs, or for
 * an unknown plan (left to the handler's own 404). Notes the plan for the audit line.
 */
export function planCheck(access: Access, q: Queries, action: AclAction, name: string): DrydockError | undefined {
  if (!access.filters) return undefined;
  const machines = q.planMachines(name);
  if (machines === undefined) return undefined;
  const refused = access.checkAll(action, machines.map((id: MachineId) => q.machineObject(id)));
  access.note(action, `maintenance plan ${name}`);
  return refused;
}

/** The same check, asked again by a verb inside the serial queue where it runs (a plan created under that name meanwhile is still checked). */
export function planCheckLater(access: Access, q: Queries, action: AclAction): (name: string) => DrydockError | undefined {
  return (name) => planCheck(access, q, action, name);
}

/** A verb that would run the plan's hook (again) needs the right to run it, whoever created the plan. */
export function hookNeededCheck(access: Access, q: Queries, t: PlanTarget): DrydockError | undefined {
  const rest = t.below.slice(1);
  if (t.method !== 'POST' || rest.length !== 1) return undefined;
  const params = new URLSearchParams(t.query);
  const hook = q.planHookNeededFor(t.name, rest[0] ?? '', params.get('phase') || undefined, params.get('step') || undefined);
  if (hook === undefined) return undefined;
  const denied = access.check('run_maintenance_hooks', hook);
  if (denied !== undefined) return denied;
  access.note('update_maintenance_plans', `maintenance plan ${t.name}, hook '${hook}'`);
  return undefined;
}

/** GET of the list: the plans this caller may view. */
export function planNamesView(q: Queries, access: Access): string[] {
  return q.planNames().filter((n) => planCheck(access, q, 'view_maintenance_plans', n) === undefined);
}

/**
 * What plan creation asks once the spec's machines are selected: create_maintenance_plans on
 * every one, and run_maintenance_hooks on the hook it names (maintaining machines never implies
 * running a command on the master: a right of its own).
 */
export function authorizePlanCreation(access: Access, q: Queries): AuthorizePlan {
  return (machines, hook) => {
    const refused = access.checkAll('create_maintenance_plans', machines.map((id) => q.machineObject(id)));
    if (refused !== undefined) return refused;
    if (hook !== undefined) {
      const denied = access.check('run_maintenance_hooks', hook);
      if (denied !== undefined) return denied;
    }
    access.note('create_maintenance_plans', `${machines.length} machines${hook === undefined ? '' : `, hook '${hook}'`}`);
    return undefined;
  };
}

/** POST of the list: creates and starts the plan its body specifies. */
export async function createPlan(specText: string, { commands, access, later }: CallContext<AuthorizePlan>): Promise<Answer> {
  const created = await commands.createPlan(specText, later, access.principal ?? null);
  return created.ok ? value({ message: created.message }) : refusal(created.error);
}

/** DELETE of a plan. */
export async function deletePlan(commands: Commands, name: string): Promise<Answer> {
  const refused = await commands.deletePlan(name);
  return refused === undefined ? value({ message: `deleted maintenance plan ${name}` }) : refusal(refused);
}

/** GET or HEAD under a plan: the plans API's answer, with a failed hook's output for those who may run the hook. */
export function planRead(q: Queries, access: Access, method: string, t: PlanTarget): Answer {
  return plansAnswer(q.planAnswer(method, t.below, new URLSearchParams(t.query), (hook) => access.allows('run_maintenance_hooks', hook)));
}

/** Any other method under a plan: a POST is a verb (its body read after the checks); the plans API answers the rest. */
export async function planVerb(t: PlanTarget, ctx: CallContext<(name: string) => DrydockError | undefined>): Promise<Answer> {
  const params = new URLSearchParams(t.query);
  if (ctx.method !== 'POST') return plansAnswer(ctx.queries.planAnswer(ctx.method, t.below, params, (hook) => ctx.access.allows('run_maintenance_hooks', hook)));
  return plansAnswer(await ctx.commands.planVerb(t.below, params, ctx.body, ctx.later));
}

/** The plans API's answer as the table's: JSON with its status, or text with its status (and Allow). */
function plansAnswer(answer: PlansAnswer): Answer {
  if ('json' in answer) return value(answer.json, answer.status);
  return { kind: 'text', status: answer.status, text: answer.text, ...(answer.allow === undefined ? {} : { headers: { Allow: answer.allow } }) };
}

/**
 * `/v1/maintenance/plans` on the master (issue 12): `GET` the names, `POST` a spec (YAML or JSON
 * text) to create and start a plan; under `/v1/maintenance/plans/<name>` the verbs, codes and JSON
 * of `/v1/plans` (shared/plans/api.ts), plus `DELETE` of a COMPLETE or stopped plan. The router
 * (http.ts) sends these here only while a term runs; otherwise it answers 307/503 like the rest.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { readBodyOrAnswer, sendError, sendJson, sendText } from '../../shared/http.js';
import { stringifyJson } from '../../shared/json.js';
import { MAX_API_BODY_BYTES } from './operator.js';
import type { Access } from '../security/security.js';
import type { DrydockError } from '../../shared/errors.js';
import type { AclAction } from '../../shared/acls.js';
import type { EdgePorts } from '../term/ports.js';
import { segmentsBelow, type RequestTarget } from '../../shared/paths.js';

const PREFIX: readonly string[] = ['v1', 'maintenance', 'plans'];

/**
 * The segments below `/v1/maintenance/plans` of a canonical target (shared/paths.ts): `[]` is
 * the list, `[name]` a plan, `[name, verb]` a verb; undefined when the target is not one of these
 * routes. The router hands them over, decoded once: nothing here reads `req.url`.
 */
export function maintenancePlansRoute(target: RequestTarget): readonly string[] | undefined {
  return segmentsBelow(target, PREFIX);
}

/**
 * Handles one request; `term` the current term's ports, `below` the route's segments
 * (maintenancePlansRoute), `query` the target's query as sent. A plan is authorized by its machines: every one must be allowed (view, create,
 * update for the verbs, delete), so a rack team's rights end at its rack. A plan that names one
 * of the master's hooks also needs run_maintenance_hooks on it, from whoever creates it and from
 * whoever starts, continues or restarts steps that would run it; and only those allowed to run it
 * see its output in the plan's JSON.
 *
 * There are two shapes and no third: no plan name is the list (its GET filtered plan by plan,
 * its POST checked on the spec's machines); a plan name is always checked before anything is
 * done with it. The check takes a name, never an optional one, so no spelling of a path can
 * reach a plan without it.
 */
export async function handleMaintenancePlansRequest(term: EdgePorts, below: readonly string[], query: string, req: IncomingMessage, res: ServerResponse, access: Access): Promise<void> {
  const { queries, commands } = term;
  const objectOf = queries.machineObject.bind(queries);
  const method = req.method ?? 'GET';
  const planCheck = (action: AclAction, name: string): DrydockError | undefined => {
    if (!access.filters) return undefined;
    const machines = queries.planMachines(name);
    // An unknown plan is left to the handler's own 404.
    if (machines === undefined) return undefined;
    const refused = access.checkAll(action, machines.map(objectOf));
    access.note(action, `maintenance plan ${name}`);
    return refused;
  };
  const [name, ...rest] = below;
  if (name === undefined) {
    if (method === 'GET' || method === 'HEAD') {
      req.resume();
      return sendJson(res, queries.planNames().filter((n) => planCheck('view_maintenance_plans', n) === undefined));
    }
    if (method !== 'POST') {
      req.resume();
      return sendText(res, 405, `405 Method Not Allowed. Expecting one of { 'GET', 'POST' }, but received '${method}'.`, { Allow: 'GET, POST' });
    }
    const text = await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES);
    if (text === undefined) return;
    const created = await commands.createPlan(
      text,
      (machines, hook) => {
        const refused = access.checkAll('create_maintenance_plans', machines.map(objectOf));
        if (refused !== undefined) return refused;
        // Maintaining machines never implies running a command on the master: a right of its own.
        if (hook !== undefined) {
          const denied = access.check('run_maintenance_hooks', hook);
          if (denied !== undefined) return denied;
        }
        access.note('create_maintenance_plans', `${machines.length} machines${hook === undefined ? '' : `, hook '${hook}'`}`);
        return undefined;
      },
      access.principal ?? null,
    );
    if (!created.ok) return sendError(res, created.error);
    return sendJson(res, { message: created.message });
  }
  if (method === 'DELETE' && rest.length === 0) {
    req.resume();
    const forbidden = planCheck('delete_maintenance_plans', name);
    if (forbidden !== undefined) return sendError(res, forbidden);
    const refused = await commands.deletePlan(name);
    if (refused !== undefined) return sendError(res, refused);
    return sendJson(res, { message: `deleted maintenance plan ${name}` });
  }
  const action: AclAction = method === 'GET' || method === 'HEAD' ? 'view_maintenance_plans' : 'update_maintenance_plans';
  const forbidden = planCheck(action, name);
  if (forbidden !== undefined) {
    req.resume();
    return sendError(res, forbidden);
  }
  // A verb that would run the plan's hook (again) needs the right to run it, whoever created the plan.
  const params = new URLSearchParams(query);
  if (method === 'POST' && rest.length === 1) {
    const hook = queries.planHookNeededFor(name, rest[0] ?? '', params.get('phase') || undefined, params.get('step') || undefined);
    const denied = hook === undefined ? undefined : access.check('run_maintenance_hooks', hook);
    if (denied !== undefined) {
      req.resume();
      return sendError(res, denied);
    }
    if (hook !== undefined) access.note('update_maintenance_plans', `maintenance plan ${name}, hook '${hook}'`);
  }
  const body = method === 'POST' ? await readBodyOrAnswer(req, res, MAX_API_BODY_BYTES) : '';
  if (body === undefined) return;
  if (method !== 'POST') req.resume();
  // A verb waits for its body and the serial queue: the plan is checked again where it runs.
  const answer =
    method === 'POST'
      ? await commands.planVerb(below, params, body, (n) => planCheck(action, n))
      : queries.planAnswer(method, below, params, (hook) => access.allows('run_maintenance_hooks', hook));
  if ('json' in answer) {
    const text = stringifyJson(answer.json);
    res.writeHead(answer.status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
    res.end(text);
    return;
  }
  sendText(res, answer.status, answer.text, answer.allow === undefined ? {} : { Allow: answer.allow });
}

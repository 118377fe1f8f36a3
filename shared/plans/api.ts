/**
 * `/v1/plans` as one pure function: a request in, an answer out, for any daemon that runs plans
 * (plans.md §6.1: paths, verbs, query parameters, status codes, text and JSON bodies). The shell
 * reads the body with its bounded reader and writes the answer; this decides everything else.
 */
import { parseWireJson } from '../json.js';
import { fail, type DrydockError } from '../errors.js';
import { continuePlan, forceComplete, interruptPlan, planHttpStatus, planInfo, restartElement, startPlan, stopPlan, type Outcome, type RestartVeto } from './commands.js';
import { byPriority } from './coordinator.js';
import type { Plan } from './plan.js';

export interface PlansRequest {
  readonly method: string;
  /**
   * The decoded segments below `/v1/plans` (or `/v1/maintenance/plans`), as the daemon's one
   * reading of the target gave them (shared/paths.ts): `[]` for the list, `[plan]` or
   * `[plan, verb]`. Never parsed again here.
   */
  readonly segments: readonly string[];
  readonly query: URLSearchParams;
  /** The request body as text ('' when none). */
  readonly body: string;
}

export type PlansAnswer =
  | { readonly status: number; readonly json: unknown; readonly allow?: undefined }
  | { readonly status: number; readonly text: string; readonly allow?: string };

const VERBS = ['start', 'stop', 'continue', 'interrupt', 'forceComplete', 'restart'] as const;
type Verb = (typeof VERBS)[number];

const refuse = (e: DrydockError): PlansAnswer => ({ status: e.status, text: e.message });

function answer(outcome: Outcome): PlansAnswer {
  switch (outcome.kind) {
    case 'done': return { status: 200, json: { message: outcome.message } };
    case 'already': return refuse(fail('PLAN_ALREADY_REPORTED'));
    case 'refused': return refuse(outcome.error);
  }
}

function notAllowed(allow: 'GET' | 'POST', method: string): PlansAnswer {
  return { status: 405, text: `405 Method Not Allowed. Expecting one of { '${allow}' }, but received '${method}'.`, allow };
}

/** An optional query parameter; an empty value counts as absent, as the SDK's JAX-RS did. */
function param(query: URLSearchParams, name: string): string | undefined {
  const v = query.get(name);
  return v === null || v === '' ? undefined : v;
}

/** The parameters of `start`: a JSON object of strings, or nothing. */
function startParameters(body: string): Record<string, unknown> | DrydockError {
  if (body.trim() === '') return {};
  let value: unknown;
  try {
    value = parseWireJson(body);
  } catch (e) {
    return fail('PLAN_BAD_PARAMETERS', (e as Error).message);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return fail('PLAN_BAD_PARAMETERS', 'the body must be a JSON object of names to values');
  return value as Record<string, unknown>;
}

/** What a driver adds to the engine's verbs. */
export interface PlansOptions {
  /** Steps a `restart` may not rerun, and why (commands.ts `restartElement`). */
  readonly restartVeto?: RestartVeto | undefined;
}

/** Answers one request under `/v1/plans` against the plans a daemon runs. */
export function plansApi(plans: readonly Plan[], req: PlansRequest, options: PlansOptions = {}): PlansAnswer {
  const parts = req.segments;
  if (parts.length === 0) {
    if (req.method !== 'GET') return notAllowed('GET', req.method);
    return { status: 200, json: byPriority(plans).map((p) => p.name) };
  }
  if (parts.length > 2) return refuse(fail('NOT_FOUND'));
  const [name, verb] = parts as [string, string | undefined];
  const plan = plans.find((p) => p.name === name);
  if (verb === undefined) {
    if (req.method !== 'GET') return notAllowed('GET', req.method);
    if (plan === undefined) return refuse(fail('PLAN_NOT_FOUND', name));
    const info = planInfo(plan);
    return { status: planHttpStatus(info.status), json: info };
  }
  if (!(VERBS as readonly string[]).includes(verb)) return refuse(fail('NOT_FOUND'));
  if (req.method !== 'POST') return notAllowed('POST', req.method);
  if (plan === undefined) return refuse(fail('PLAN_NOT_FOUND', name));
  const phase = param(req.query, 'phase');
  const step = param(req.query, 'step');
  switch (verb as Verb) {
    case 'start': {
      const parameters = startParameters(req.body);
      return parameters instanceof Error ? refuse(parameters) : answer(startPlan(plan, parameters));
    }
    case 'stop': return answer(stopPlan(plan));
    case 'continue': return answer(continuePlan(plan, phase));
    case 'interrupt': return answer(interruptPlan(plan, phase));
    case 'forceComplete': return answer(forceComplete(plan, phase, step));
    case 'restart': return answer(restartElement(plan, phase, step, options.restartVeto));
  }
}

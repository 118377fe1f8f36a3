/**
 * `drydock status`'s shell: asks the leading master (and a service scheduler when one is named)
 * everything the screen needs, in parallel, and prints what status.ts makes of it. Only
 * GET_AGENTS is required (its failure is the command's, exit 1, 3 or 4 through main.ts); any
 * other part that cannot be asked is shown as `?` and named under the screen.
 */

import { ApiError, formatJson, type MasterClient } from './client.js';
import type { AgentJson, DrydockAgentJson, RecoveredAgentJson } from './drain.js';
import type { ClusterStatusJson, ScheduleJson } from './maintenance.js';
import { decodePlan } from './plan.js';
import { schedulerTarget, type SchedulerFlags, type Shell } from './plan-command.js';
import { answerJson, decodeNames, type Answer } from './service-api.js';
import { clusterStatus, renderStatus, type MasterAnswerJson, type PlanAnswer, type PlansAnswer, type StatusInput } from './status.js';
import { ansiPaint, fitLine, plainPaint } from './terminal.js';

/** `drydock status`'s flags: --json, and --scheduler for a service scheduler's plans. */
export interface StatusFlags extends SchedulerFlags {}

/** The most plans of one API asked for one by one (a screen shows far fewer). */
const MAX_PLANS = 50;

/** A part of the screen that may fail: its error's text instead of a throw (401/403 included: the part is shown as `?`). */
async function part<T>(p: Promise<T>): Promise<T | { error: string }> {
  try {
    return await p;
  } catch (e) {
    if (e instanceof ApiError) return { error: e.status === 0 ? e.message : `${e.status}: ${e.message.split('\n')[0] ?? ''}` };
    throw e;
  }
}

/** A GET's body as JSON when it is 2xx (or 417, a plan in ERROR), else the error. */
function jsonOf(answer: { status: number; body: string }, okStatuses: readonly number[] = [200]): unknown {
  if (!okStatuses.includes(answer.status)) throw new ApiError(answer.status, answer.body.trim() || String(answer.status));
  const v = answerJson(answer.body);
  if (!v.ok) throw new ApiError(answer.status, `a body drydock cannot read: ${v.error}`);
  return v.value;
}

/** Plans of one API through `get` (the master's GET, or the scheduler's): the list, then each plan. */
async function plans(get: (path: string) => Promise<{ status: number; body: string }>, root: string): Promise<PlansAnswer> {
  try {
    const names = decodeNames(jsonOf(await get(root)));
    if (!names.ok) return { error: names.error };
    const answers = await Promise.all(names.value.slice(0, MAX_PLANS).map(async (name): Promise<PlanAnswer> => {
      try {
        const plan = decodePlan(jsonOf(await get(`${root}/${encodeURIComponent(name)}`), [200, 202, 417]));
        return plan.ok ? { name, plan: plan.value } : { name, error: plan.error };
      } catch (e) {
        if (e instanceof ApiError) return { name, error: `${e.status}: ${e.message}` };
        throw e;
      }
    }));
    return { plans: answers };
  } catch (e) {
    if (e instanceof ApiError) return { error: e.status === 0 ? e.message : `${e.status}: ${e.message.split('\n')[0] ?? ''}` };
    throw e;
  }
}

/** A scheduler's answer as the `get` plans() takes; unreachable is an ApiError 0. */
function fromAnswer(a: Answer, base: string): { status: number; body: string } {
  if (a.kind === 'unreachable') throw new ApiError(0, `cannot reach the scheduler at ${base} (${a.reason})`);
  return { status: a.status, body: a.body };
}

/**
 * `drydock status [--scheduler URL] [--json]`. The scheduler's plans are asked when --scheduler
 * or DRYDOCK_SCHEDULER names one (the plan commands' way to it); a bad one is exit 2.
 */
export async function showClusterStatus(client: MasterClient, flags: StatusFlags, shell: Shell): Promise<number> {
  const { io } = shell;
  const named = flags.scheduler !== undefined || (shell.env['DRYDOCK_SCHEDULER'] ?? '') !== '';
  const at = named ? schedulerTarget(flags, shell) : undefined;
  if (named && at === undefined) return 2;

  type AgentsAnswer = { get_agents?: { agents?: AgentJson[]; recovered_agents?: RecoveredAgentJson[] } } | undefined;
  // GET_AGENTS first and alone: it finds the leader once, and its failure (401, 403, no master) is the command's.
  const agentsAnswer = await client.call<AgentsAnswer>({ type: 'GET_AGENTS' });
  const [master, drydockAgents, maintenance, schedule, snapshot, maintenancePlans, schedulerPlans] = await Promise.all([
    part(client.call<{ get_master?: MasterAnswerJson } | undefined>({ type: 'GET_MASTER' }).then((r) => r?.get_master ?? {})),
    part(client.getJson<{ agents?: DrydockAgentJson[] }>('/drydock/v1/agents').then((r) => {
      if (r === undefined) throw new ApiError(404, 'this master has no /drydock/v1/agents');
      return r.agents ?? [];
    })),
    part(client.call<{ get_maintenance_status?: { status?: ClusterStatusJson } } | undefined>({ type: 'GET_MAINTENANCE_STATUS' }).then((r) => r?.get_maintenance_status?.status ?? {})),
    part(client.call<{ get_maintenance_schedule?: { schedule?: ScheduleJson } } | undefined>({ type: 'GET_MAINTENANCE_SCHEDULE' }).then((r) => r?.get_maintenance_schedule?.schedule ?? {})),
    part(client.get('/metrics/snapshot').then((a) => jsonOf(a) as Record<string, unknown>)),
    plans((path) => client.get(path), '/v1/maintenance/plans'),
    at === undefined ? Promise.resolve(undefined) : plans(async (path) => fromAnswer(await shell.send(at, { method: 'GET', path }), at.base), '/v1/plans'),
  ]);
  const input: StatusInput = {
    nowMs: io.nowMs(),
    master,
    agents: agentsAnswer?.get_agents?.agents ?? [],
    recovered: agentsAnswer?.get_agents?.recovered_agents ?? [],
    drydockAgents,
    maintenance,
    schedule,
    snapshot,
    maintenancePlans,
    schedulerPlans: at === undefined || schedulerPlans === undefined ? undefined : { base: at.base, answer: schedulerPlans },
  };
  const status = clusterStatus(input);
  if (flags.json === true) {
    io.out(formatJson(status));
    return 0;
  }
  const paint = io.colour ? ansiPaint : plainPaint;
  const columns = io.tty ? io.size()?.columns : undefined;
  for (const line of renderStatus(status, paint)) io.out(columns === undefined ? line : fitLine(line, columns));
  return 0;
}

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
import { clusterStatus, renderStatus, type ClusterStatus, type MasterAnswerJson, type PlanAnswer, type PlansAnswer, type StatusInput } from './status.js';
import { EXIT_INTERRUPTED, LiveFrame, ansiPaint, fitLine, plainPaint } from './terminal.js';
import { EXIT_FAILED, EXIT_OK, EXIT_TIMEOUT, EXIT_USAGE } from './exit-codes.js';
import { WATCH_GIVE_UP_MS, watchIntervalMs } from './plan.js';
import { waitTimeoutMs } from './nanotime.js';
import { formatDuration, msToNs } from '../shared/duration.js';
import { stringifyJson } from '../shared/json.js';
import type { Target } from './service-api.js';

/** `drydock status`'s flags: --json, --scheduler for a service scheduler's plans, and --watch. */
export interface StatusFlags extends SchedulerFlags {
  /** Redraw every --interval until Ctrl-C or --timeout. */
  watch?: boolean;
  /** Mesos duration between redraws with --watch (default 2secs). */
  interval?: string;
  /** With --watch: stop after this Mesos duration (exit 124). */
  timeout?: string;
}

/** How often `status --watch` asks, unless --interval says. */
const WATCH_INTERVAL_MS = 2_000;

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
 * `drydock status [--scheduler URL] [--json] [--watch [--interval D] [--timeout D]]`. The
 * scheduler's plans are asked when --scheduler or DRYDOCK_SCHEDULER names one (the plan
 * commands' way to it); a bad one is exit 2.
 */
export async function showClusterStatus(client: MasterClient, flags: StatusFlags, shell: Shell): Promise<number> {
  const { io } = shell;
  if (flags.watch !== true && flags.interval !== undefined) return usage(io, '--interval is for --watch');
  const interval = flags.interval === undefined ? { ok: true as const, value: WATCH_INTERVAL_MS } : watchIntervalMs(flags.interval);
  if (!interval.ok) return usage(io, interval.error);
  const timeout = waitTimeoutMs(flags.timeout, flags.watch === true, '--watch');
  if (!timeout.ok) return usage(io, timeout.error);
  const named = flags.scheduler !== undefined || (shell.env['DRYDOCK_SCHEDULER'] ?? '') !== '';
  const at = named ? schedulerTarget(flags, shell) : undefined;
  if (named && at === undefined) return EXIT_USAGE;
  if (flags.watch === true) return watchStatus(client, at, flags.json === true, interval.value, timeout.value, shell);
  const status = await clusterStatusOnce(client, at, shell);
  if (flags.json === true) {
    io.out(formatJson(status));
    return EXIT_OK;
  }
  for (const line of statusLines(status, io)) io.out(line);
  return EXIT_OK;
}

function usage(io: { err(line: string): void }, line: string): number {
  io.err(line);
  return EXIT_USAGE;
}

/** The screen's lines: coloured on a colour terminal, each fitted to a terminal's width. */
function statusLines(status: ClusterStatus, io: Shell['io']): string[] {
  const paint = io.colour ? ansiPaint : plainPaint;
  const columns = io.tty ? io.size()?.columns : undefined;
  return renderStatus(status, paint).map((line) => (columns === undefined ? line : fitLine(line, columns)));
}

/** What a change is, for a pipe: the status without the ages that tick every second. */
function changeKey(status: ClusterStatus): string {
  return stringifyJson({ ...status, drains: status.drains.map((d) => ({ ...d, age_seconds: null })) });
}

/**
 * `status --watch`: asks every interval and shows the screen: redrawn in place on a terminal
 * (with a footer), printed again on a pipe when something other than an age changed, one compact
 * JSON line per change with --json. A master that stops answering is said once and asked again,
 * until WATCH_GIVE_UP_MS without an answer (exit 1); 401 and 403 end it at once (main.ts). Ctrl-C
 * ends it with 130, --timeout with 124; the cluster is only read.
 */
async function watchStatus(client: MasterClient, at: Target | undefined, json: boolean, intervalMs: number, timeoutMs: number | undefined, shell: Shell): Promise<number> {
  const { io } = shell;
  let stop: () => void = () => undefined;
  const stopped = new Promise<'stopped'>((resolve) => (stop = () => resolve('stopped')));
  const off = io.onSignal(() => stop());
  const done = new AbortController();
  const expired = timeoutMs === undefined ? new Promise<never>(() => undefined) : io.sleep(timeoutMs, done.signal).then(() => 'expired' as const);
  const frame = io.tty && !json ? new LiveFrame(io) : undefined;
  let shown: string | undefined;
  let failingSince: number | undefined;
  const every = formatDuration(msToNs(intervalMs));
  try {
    for (;;) {
      const got = await Promise.race([clusterStatusOnce(client, at, shell).then((s) => ({ s }), (e: unknown) => ({ e })), stopped, expired]);
      if (got === 'stopped') break;
      if (got === 'expired') {
        io.err(`stopped watching after ${formatDuration(msToNs(timeoutMs ?? 0))} (--timeout)`);
        return EXIT_TIMEOUT;
      }
      if ('e' in got) {
        const e = got.e;
        if (!(e instanceof ApiError) || e.status === 401 || e.status === 403) throw e;
        if (failingSince === undefined) {
          failingSince = io.nowMs();
          io.err(`${e.status === 0 ? e.message : `master answered ${e.status}: ${e.message}`}; asking again every ${every}`);
        } else if (io.nowMs() - failingSince > WATCH_GIVE_UP_MS) {
          io.err(`gave up watching after ${Math.round((io.nowMs() - failingSince) / 1000)}s without an answer`);
          return EXIT_FAILED;
        }
      } else {
        failingSince = undefined;
        const status = got.s;
        if (frame !== undefined) frame.draw([...statusLines(status, io), '', `watching every ${every}; Ctrl-C stops watching`]);
        else {
          const key = changeKey(status);
          if (key !== shown) {
            shown = key;
            if (json) io.out(stringifyJson(status));
            else {
              for (const line of statusLines(status, io)) io.out(line);
              io.out('');
            }
          }
        }
      }
      const slept = await Promise.race([io.sleep(intervalMs, done.signal), stopped, expired]);
      if (slept === 'stopped') break;
      if (slept === 'expired') {
        io.err(`stopped watching after ${formatDuration(msToNs(timeoutMs ?? 0))} (--timeout)`);
        return EXIT_TIMEOUT;
      }
    }
    io.err('stopped watching');
    return EXIT_INTERRUPTED;
  } finally {
    done.abort();
    off();
  }
}

/** One look at the cluster: every answer the screen needs, asked in parallel, as status.ts reads it. */
async function clusterStatusOnce(client: MasterClient, at: Target | undefined, shell: Shell): Promise<ClusterStatus> {
  const { io } = shell;

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
  return clusterStatus(input);
}

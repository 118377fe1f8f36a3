/**
 * The impact preview in the CLI (`drydock agent drain --dry-run`, `drydock machine down
 * --dry-run`, `drydock maintenance plan create --dry-run`): the request for the master's
 * `POST /drydock/v1/preview` and what its answer reads as, for a person. Pure; the shells send
 * and print (drain-command.ts, maintenance-command.ts, plan-command.ts).
 */

import type { MachineId } from '../shared/machine.js';
import { machineLabel } from './maintenance.js';
import { answerJson, oneLine, type Printed } from './service-api.js';
import { EXIT_FAILED, EXIT_OK } from './exit-codes.js';
import { formatJson } from './client.js';

/** Where the preview is asked. */
export const PREVIEW_PATH = '/drydock/v1/preview';

/** The preview answer (docs/api.md); read leniently: every field optional. */
export interface PreviewJson {
  action?: string;
  refused?: { status?: number; message?: string };
  warnings?: string[];
  agents?: Array<{ agent_id?: string; hostname?: string; ip?: string }>;
  machines?: Array<MachineId & { mode?: string | null; agents?: string[] }>;
  impact?: ImpactJson;
  plan?: { name?: string; strategy?: string; phase_strategy?: string; max_parallel?: number | null; max_down?: number | null; hook?: string | null; phases?: Array<{ name?: string; machines?: MachineId[] }> };
  waves?: Array<{ wave?: number; phases?: string[]; machines?: MachineId[]; agents?: PreviewJson['agents']; impact?: ImpactJson }>;
}

export interface ImpactJson {
  tasks?: { count?: number; hidden?: number; frameworks?: Array<{ framework_id?: string; name?: string; tasks?: Array<{ task_id?: string; name?: string; state?: string; agent_id?: string; hostname?: string }> }> };
  pods_losing_last_instance?: Array<{ framework_id?: string; framework_name?: string; pod_type?: string; instances?: string[] }>;
  hidden_pods?: number;
  capacity?: {
    fits?: boolean;
    agents?: number;
    resources?: Array<{ name?: string; needed?: number; free?: number; enough?: boolean }>;
    failing?: string[];
    unplaced?: Array<{ framework_id?: string; what?: string; reason?: string }>;
    hidden_unplaced?: number;
  };
}

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;
/** Text from the master, safe on a terminal. */
const safe = (v: unknown): string => oneLine(typeof v === 'string' ? v : String(v ?? '?'));

/** The most tasks listed per framework; the rest are counted. */
const MAX_TASKS_SHOWN = 10;

/** What one impact means, indented under its heading. */
export function impactLines(impact: ImpactJson | undefined, indent = '  '): string[] {
  const lines: string[] = [];
  const tasks = impact?.tasks;
  const count = tasks?.count ?? 0;
  const frameworks = tasks?.frameworks ?? [];
  if (count === 0) lines.push(`${indent}kills no task`);
  else lines.push(`${indent}kills ${plural(count, 'task')}${frameworks.length > 0 ? ` of ${plural(frameworks.length, 'framework')}` : ''}:`);
  for (const f of frameworks) {
    const list = f.tasks ?? [];
    const shown = list.slice(0, MAX_TASKS_SHOWN).map((t) => `${safe(t.name)} on ${safe(t.hostname)}`);
    if (list.length > shown.length) shown.push(`${list.length - shown.length} more`);
    lines.push(`${indent}  ${safe(f.name === '' ? '(unnamed)' : f.name)} (${safe(f.framework_id)}): ${shown.join(', ')}`);
  }
  if ((tasks?.hidden ?? 0) > 0) lines.push(`${indent}  and ${plural(tasks?.hidden ?? 0, 'task')} you may not view`);
  for (const p of impact?.pods_losing_last_instance ?? []) {
    lines.push(`${indent}leaves pod ${safe(p.pod_type)} of ${safe(p.framework_name === '' ? p.framework_id : p.framework_name)} without a running instance (stops ${(p.instances ?? []).map(safe).join(', ')})`);
  }
  if ((impact?.hidden_pods ?? 0) > 0) lines.push(`${indent}leaves ${plural(impact?.hidden_pods ?? 0, 'more pod')} you may not view without a running instance`);
  const c = impact?.capacity;
  if (c !== undefined && count > 0) {
    const others = plural(c.agents ?? 0, 'other active agent');
    const totals = (c.resources ?? []).map((r) => `${safe(r.name)} ${r.needed ?? '?'} of ${r.free ?? '?'} free`).join(', ');
    if (c.fits === true) lines.push(`${indent}room: the ${others} can hold what is displaced (${totals})`);
    else {
      lines.push(`${indent}room: NOT enough on the ${others}: ${(c.failing ?? []).map(safe).join(', ')} (${totals})`);
      for (const u of c.unplaced ?? []) lines.push(`${indent}  ${safe(u.what)}: ${safe(u.reason)}`);
      if ((c.hidden_unplaced ?? 0) > 0) lines.push(`${indent}  and ${plural(c.hidden_unplaced ?? 0, 'more')} you may not view`);
    }
  }
  return lines;
}

/** The agents an action takes out, as a phrase: `agent-3 (127.0.0.4)`. */
function agentsText(agents: PreviewJson['agents']): string {
  const list = agents ?? [];
  if (list.length === 0) return 'no agent';
  return list.map((a) => `${safe(a.hostname)} (${safe(a.ip)})`).join(', ');
}

/** The preview as lines for a person; the last says nothing was changed. */
export function previewLines(p: PreviewJson, whatIs: string): string[] {
  const lines: string[] = [];
  // What a refused action would do is still worth reading (the operator may fix what is refused), said as such.
  const what = p.refused === undefined ? whatIs : `if it were accepted, ${whatIs}`;
  for (const w of p.warnings ?? []) lines.push(`warning: ${safe(w)}`);
  if (p.refused !== undefined) lines.push(`the master would refuse this (${p.refused.status ?? '?'}): ${safe(p.refused.message)}`);
  switch (p.action) {
    case 'drain_agent':
      lines.push(`${what} would take out ${agentsText(p.agents)}:`, ...impactLines(p.impact));
      break;
    case 'start_maintenance':
      for (const m of p.machines ?? []) {
        const agents = m.agents ?? [];
        lines.push(`${machineLabel(m)} (${m.mode ?? 'not scheduled'}): ${agents.length === 0 ? 'no agent matched: nothing would be shut down' : `${plural(agents.length, 'agent')} would be shut down`}`);
      }
      lines.push(`${what} would take out ${agentsText(p.agents)}:`, ...impactLines(p.impact));
      break;
    case 'maintenance_plan': {
      const plan = p.plan;
      if (plan !== undefined) {
        const machines = (plan.phases ?? []).reduce((n, ph) => n + (ph.machines?.length ?? 0), 0);
        const waves = p.waves ?? [];
        const limits = [plan.max_parallel == null ? '' : `max_parallel ${plan.max_parallel}`, plan.max_down == null ? '' : `max_down ${plan.max_down}`].filter((x) => x !== '').join(', ');
        lines.push(`plan ${safe(plan.name)} (${safe(plan.strategy)}, phases ${safe(plan.phase_strategy)}${limits === '' ? '' : `, ${limits}`}${plan.hook == null ? '' : `, hook ${safe(plan.hook)}`}): ${plural(machines, 'machine')} in ${plural(plan.phases?.length ?? 0, 'phase')}, ${plural(waves.length, 'wave')}`);
        for (const w of waves) {
          lines.push(`wave ${w.wave ?? '?'} (${(w.phases ?? []).map(safe).join(', ')}): ${(w.machines ?? []).map((m) => machineLabel(m)).join(', ')}`);
          lines.push(...impactLines(w.impact, '  '));
        }
      }
      break;
    }
    default:
      lines.push(`${what}: an answer drydock does not know (${safe(p.action)})`);
  }
  lines.push('nothing was changed (--dry-run)');
  return lines;
}

/**
 * The preview's answer as printed: the JSON as it is with --json, else the lines; exit 1 when the
 * master would refuse the action (as the action would exit), 0 otherwise (whether it fits or not).
 */
export function previewPrinted(status: number, body: string, json: boolean, what: string): Printed | undefined {
  if (status !== 200) return undefined;
  const v = answerJson(body);
  if (!v.ok || typeof v.value !== 'object' || v.value === null) return { exitCode: EXIT_FAILED, out: [], err: [`the master answered the preview with a body drydock cannot read: ${v.ok ? 'not an object' : v.error}`] };
  const p = v.value as PreviewJson;
  const exitCode = p.refused === undefined ? EXIT_OK : EXIT_FAILED;
  if (json) return { exitCode, out: [formatJson(p)], err: [] };
  return { exitCode, out: previewLines(p, what), err: [] };
}

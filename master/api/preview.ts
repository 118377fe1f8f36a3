/**
 * The impact preview, `POST /drydock/v1/preview` (docs/api.md): what a drain, a DOWN or a
 * maintenance plan would do, answered before anything is done and changing nothing. The body
 * names one action as its call would (`{"drain_agent": {...}}`, `{"start_maintenance":
 * {"machines": [...]}}`, `{"maintenance_plan": "<spec text>"}` or the spec as JSON); the answer
 * says whether the master would refuse it, the tasks it would kill by framework, the service pods
 * that would lose their last running instance, and whether the agents that remain could hold
 * what is displaced (cores/impact.ts); for a plan, the same for each of its waves.
 *
 * It is read-only (the read-only realm) and authorized as the action itself (the same ACL actions
 * on the same objects, a plan's machines and hook once its spec is read), so nobody learns from it
 * more than the action would let them do; what it lists of tasks, frameworks and agents is
 * filtered by the caller's view ACLs as GET_STATE is, the rest counted as hidden.
 */

import { describeObject } from '../../shared/acls.js';
import type { DrainConfig } from '../../shared/drain.js';
import { fail, type DrydockError } from '../../shared/errors.js';
import { parseWireJson, stringifyJson } from '../../shared/json.js';
import { agentMachineId, machineIdJson, machineKey, machineText, type MachineId } from '../../shared/machine.js';
import { taskKey } from '../../shared/mesos.js';
import { frameworkUser, taskUser, viewRights, type ViewRights } from '../../shared/visibility.js';
import type { AgentEntry } from '../cores/agents.js';
import { refuseDrain, type CallRefusal } from '../cores/drain.js';
import { impactOf, type Impact, type ImpactAgent } from '../cores/impact.js';
import { validateTransition, type MachineModes } from '../cores/maintenance.js';
import { agentEntryObject } from '../security/acl-objects.js';
import type { Access } from '../security/security.js';
import type { AuthorizePlan } from '../term/commands.js';
import type { Queries } from '../term/queries.js';
import { machinesFromCall, machineWarnings } from './maintenance.js';
import { drainCall } from './operator.js';
import { refusal, value, type AclContext, type Answer, type Decoded, type HttpRequest } from './row.js';

/** The action a preview is asked about, decoded as its own call decodes it. */
export type PreviewInput =
  | { readonly kind: 'drain_agent'; readonly agentId: string; readonly config: Decoded<DrainConfig> }
  | { readonly kind: 'start_maintenance'; readonly machines: MachineId[] }
  | { readonly kind: 'maintenance_plan'; readonly spec: string };

const ACTIONS = ['drain_agent', 'start_maintenance', 'maintenance_plan'] as const;

function invalid(detail: string): Decoded<never> {
  return { ok: false, error: fail('PREVIEW_INVALID', detail) };
}

/** The body: a JSON object with exactly one of the actions. */
export function previewFromBody(r: HttpRequest): Decoded<PreviewInput> {
  let json: unknown;
  try {
    json = parseWireJson(r.body);
  } catch (e) {
    return invalid((e as Error).message);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) return invalid(`expected a JSON object with one of ${ACTIONS.join(', ')}`);
  const body = json as Record<string, unknown>;
  const named = Object.keys(body);
  const unknown = named.filter((k) => !(ACTIONS as readonly string[]).includes(k));
  if (unknown.length > 0) return invalid(`unknown field '${unknown[0]}'; expected one of ${ACTIONS.join(', ')}`);
  if (named.length !== 1) return invalid(`name exactly one action of ${ACTIONS.join(', ')}`);
  const kind = named[0] as (typeof ACTIONS)[number];
  switch (kind) {
    case 'drain_agent': {
      const d = drainCall({ type: 'DRAIN_AGENT', body });
      return d.ok ? { ok: true, value: { kind, agentId: d.value.agentId, config: d.value.config } } : d;
    }
    case 'start_maintenance': {
      if (typeof body['start_maintenance'] !== 'object' || body['start_maintenance'] === null || Array.isArray(body['start_maintenance'])) return invalid('start_maintenance must be an object {"machines": [...]}');
      const m = machinesFromCall({ type: 'START_MAINTENANCE', body }, 'start_maintenance');
      return m.ok ? { ok: true, value: { kind, machines: m.value } } : m;
    }
    case 'maintenance_plan': {
      const spec = body['maintenance_plan'];
      // The spec's text (YAML or JSON) as `POST /v1/maintenance/plans` takes it, or the spec as a JSON object.
      if (typeof spec === 'string') return { ok: true, value: { kind, spec } };
      if (typeof spec === 'object' && spec !== null && !Array.isArray(spec)) return { ok: true, value: { kind, spec: stringifyJson(spec) } };
      return invalid('maintenance_plan must be the spec: its YAML or JSON text, or a JSON object');
    }
  }
}

/**
 * The action's own ACL, before anything is read: drain_agents on the agent (and mark_agents_gone
 * with mark_gone), start_maintenances on every machine. A plan's are decided once its spec has
 * selected its machines (previewPlanLater).
 */
export function previewCheck(input: PreviewInput, { access, queries }: AclContext): DrydockError | undefined {
  switch (input.kind) {
    case 'drain_agent': {
      const object = queries.agentObject(input.agentId) ?? { agentId: input.agentId };
      const refused = access.check('drain_agents', object);
      if (refused !== undefined || !input.config.ok || !input.config.value.markGone) return refused;
      const gone = access.check('mark_agents_gone', object);
      if (gone === undefined) access.note('drain_agents', `preview, ${describeObject(object)}`);
      return gone;
    }
    case 'start_maintenance':
      return access.checkAll('start_maintenances', input.machines.map((id) => queries.machineObject(id)));
    case 'maintenance_plan':
      return undefined;
  }
}

// ---- The answer -------------------------------------------------------------------------------------

/** What the caller may see of tasks, frameworks and agents (all of it without ACLs). */
class Seen {
  readonly #rights: ViewRights | undefined;
  readonly #q: Queries;

  constructor(q: Queries, access: Access) {
    this.#q = q;
    this.#rights = viewRights(access);
  }

  framework(id: string): boolean {
    return this.#rights === undefined || this.#rights.frameworks(frameworkUser(this.#q.frameworkEver(id)?.info));
  }

  task(agentId: string, frameworkId: string, taskId: string): boolean {
    if (this.#rights === undefined) return true;
    const t = this.#q.agent(agentId)?.tasks?.get(taskKey(frameworkId, taskId));
    const user = taskUser(t ?? {}, frameworkUser(this.#q.frameworkEver(frameworkId)?.info));
    return this.#rights.tasks(user);
  }

  agent(e: AgentEntry): boolean {
    return this.#rights === undefined || this.#rights.agents(agentEntryObject(e));
  }
}

/** Every agent the master knows, as the impact core reads it. */
function impactAgents(q: Queries): ImpactAgent[] {
  const out: ImpactAgent[] = [];
  for (const e of q.agents()) {
    out.push({
      id: e.id,
      hostname: e.info.hostname,
      registered: e.phase === 'REGISTERED',
      connected: e.connected,
      deactivated: e.deactivated,
      draining: e.drain !== undefined,
      down: q.agentMachine(e.id)?.mode === 'DOWN',
      total: e.info.resources,
      tasks: [...(e.tasks?.values() ?? [])].map((t) => ({ frameworkId: t.framework_id.value, taskId: t.task_id.value, name: t.name, state: t.state, resources: t.resources, labels: t.labels })),
    });
  }
  return out;
}

/** The agents on these machines (by the agent's hostname and IP), whatever their phase. */
function agentsOnMachines(q: Queries, machines: readonly MachineId[]): AgentEntry[] {
  const keys = new Set(machines.map(machineKey));
  return [...q.agents()].filter((e) => keys.has(machineKey(agentMachineId(e.info.hostname, e.info.ip))));
}

/** Agents as the answer names them: those the caller may view. */
function agentsJson(entries: readonly AgentEntry[], seen: Seen): Array<Record<string, unknown>> {
  return entries.filter((e) => seen.agent(e)).map((e) => ({ agent_id: e.id, hostname: e.info.hostname, ip: e.info.ip }));
}

/** An impact as JSON, with what the caller may not view counted instead of listed. */
function impactJson(impact: Impact, q: Queries, seen: Seen): Record<string, unknown> {
  const frameworks = new Map<string, Array<Record<string, unknown>>>();
  let hidden = 0;
  for (const k of impact.killed) {
    if (!seen.task(k.agentId, k.frameworkId, k.taskId)) {
      hidden++;
      continue;
    }
    let list = frameworks.get(k.frameworkId);
    if (list === undefined) frameworks.set(k.frameworkId, (list = []));
    list.push({ task_id: k.taskId, name: k.name, state: k.state, agent_id: k.agentId, hostname: k.hostname });
  }
  const name = (id: string): string => (seen.framework(id) ? q.frameworkEver(id)?.info.name ?? '' : '');
  const pods = impact.pods.filter((p) => seen.framework(p.frameworkId));
  const unplaced = impact.capacity.unplaced.filter((u) => seen.framework(u.frameworkId));
  return {
    tasks: {
      count: impact.killed.length,
      hidden,
      frameworks: [...frameworks].map(([id, tasks]) => ({ framework_id: id, name: name(id), tasks })),
    },
    pods_losing_last_instance: pods.map((p) => ({ framework_id: p.frameworkId, framework_name: name(p.frameworkId), pod_type: p.podType, instances: p.instances })),
    hidden_pods: impact.pods.length - pods.length,
    capacity: {
      fits: impact.capacity.fits,
      agents: impact.capacity.agents,
      resources: impact.capacity.resources.map((r) => ({ name: r.name, needed: r.needed, free: r.free, enough: r.enough })),
      failing: impact.capacity.failing,
      unplaced: unplaced.map((u) => ({ framework_id: u.frameworkId, what: u.what, task_ids: u.taskIds, needs: u.needs, constraints: u.constraints, reason: u.reason })),
      hidden_unplaced: impact.capacity.unplaced.length - unplaced.length,
    },
  };
}

/** The refusal the action itself would get, as the answer carries it. */
function refusedJson(e: DrydockError | undefined): Record<string, unknown> {
  return e === undefined ? {} : { refused: { status: e.status, message: e.message } };
}

/** Each known machine's mode, as validation reads them. */
function machineModes(q: Queries): MachineModes {
  const modes = new Map<string, { id: MachineId; mode: 'UP' | 'DRAINING' | 'DOWN' }>();
  for (const m of q.machines()) modes.set(m.key, { id: m.id, mode: m.mode });
  return modes;
}

/** DRAIN_AGENT's refusal, decided as the drain service decides it (short of a MARK_AGENT_GONE in flight). */
function drainRefusal(q: Queries, agentId: string, config: Decoded<DrainConfig>): DrydockError | undefined {
  if (!config.ok) return config.error;
  const e = q.agent(agentId);
  const mode = e === undefined ? 'UP' : (q.agentMachine(agentId)?.mode ?? 'UP');
  const refused = refuseDrain(agentId, {
    phase: e?.phase,
    gone: false,
    markingGone: false,
    capabilities: e?.capabilities ?? [],
    deactivated: e?.deactivated ?? false,
    drainState: e?.drain?.state,
    scheduledMachine: e === undefined || mode === 'UP' ? undefined : machineText(agentMachineId(e.info.hostname, e.info.ip)),
  });
  return refused === undefined ? undefined : (fail as (code: CallRefusal['code'], ...args: string[]) => DrydockError)(refused.code, ...refused.args);
}

/** The preview's handler: nothing is written, nothing is sent to an agent. */
export function preview(input: PreviewInput, q: Queries, access: Access, authorizePlan: AuthorizePlan): Answer {
  const seen = new Seen(q, access);
  const agents = impactAgents(q);
  switch (input.kind) {
    case 'drain_agent': {
      const e = q.agent(input.agentId);
      const vacated = e === undefined ? [] : [e];
      return value({
        action: 'drain_agent',
        ...refusedJson(drainRefusal(q, input.agentId, input.config)),
        agents: agentsJson(vacated, seen),
        impact: impactJson(impactOf(agents, new Set(vacated.map((a) => a.id))), q, seen),
      });
    }
    case 'start_maintenance': {
      const on = agentsOnMachines(q, input.machines);
      const modes = machineModes(q);
      return value({
        action: 'start_maintenance',
        ...refusedJson(validateTransition('DOWN', input.machines, modes)),
        warnings: machineWarnings(q, access, input.machines),
        machines: input.machines.map((id) => ({
          ...machineIdJson(id),
          mode: modes.get(machineKey(id))?.mode ?? null,
          agents: on.filter((e) => machineKey(agentMachineId(e.info.hostname, e.info.ip)) === machineKey(id) && seen.agent(e)).map((e) => e.id),
        })),
        agents: agentsJson(on, seen),
        impact: impactJson(impactOf(agents, new Set(on.map((a) => a.id))), q, seen),
      });
    }
    case 'maintenance_plan': {
      const plan = q.planPreview(input.spec);
      if (!plan.ok) return value({ action: 'maintenance_plan', ...refusedJson(plan.error), waves: [] });
      // Authorized as creating the plan would be: every machine it selects, and its hook.
      const denied = authorizePlan(plan.phases.flatMap((p) => p.machines), plan.hook);
      if (denied !== undefined) return refusal(denied);
      return value({
        action: 'maintenance_plan',
        // A spec may select a scheduled machine no agent runs on by its hostname (agent-3=127.0.0.9 for agent-3).
        warnings: machineWarnings(q, access, plan.phases.flatMap((p) => p.machines)),
        plan: {
          name: plan.name,
          strategy: plan.strategy,
          phase_strategy: plan.phaseStrategy,
          max_parallel: plan.maxParallel ?? null,
          max_down: plan.maxDown ?? null,
          hook: plan.hook ?? null,
          phases: plan.phases.map((p) => ({ name: p.name, machines: p.machines.map(machineIdJson) })),
        },
        waves: plan.waves.map((w, i) => {
          const on = agentsOnMachines(q, w.machines);
          return {
            wave: i + 1,
            phases: w.phases,
            machines: w.machines.map(machineIdJson),
            agents: agentsJson(on, seen),
            impact: impactJson(impactOf(agents, new Set(on.map((a) => a.id))), q, seen),
          };
        }),
      });
    }
  }
}

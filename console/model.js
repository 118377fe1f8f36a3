// The console's model and how the master's events change it. Pure: plain data in, plain data
// out, no DOM and no fetch, so Node tests can drive it with tables of events. Two streams feed
// it: Mesos' operator stream (`applyEvent`: agents, frameworks and tasks as Mesos writes them)
// and Drydock's own (`applyDrydockEvent`, GET /drydock/v1/events: each agent's state, machine
// and drain record, machines' modes, maintenance plans). Each mutates the model it is given (one
// per page) and returns the follow-up reads the page should make: things an event says changed
// but does not carry (a schedule's windows, a plan's phases).

/** Task states after which a task never runs again (Mesos' terminal states). */
const TERMINAL = new Set(['TASK_FINISHED', 'TASK_FAILED', 'TASK_KILLED', 'TASK_ERROR', 'TASK_LOST', 'TASK_DROPPED', 'TASK_GONE', 'TASK_GONE_BY_OPERATOR']);

/** Completed tasks kept for display; older ones are forgotten (the master keeps its own bounded list). */
export const MAX_COMPLETED_TASKS = 200;

export function isTerminal(state) {
  return TERMINAL.has(state);
}

export function emptyModel() {
  return {
    /** agent id -> the agent as GET_AGENTS writes it (Mesos' facts: resources, pid). */
    agents: new Map(),
    /** agent id -> the agent as GET /drydock/v1/agents writes it (Drydock's facts: state, machine, drain record). */
    drydockAgents: new Map(),
    /** Agents the master knows from its registry that have not re-registered (AgentInfo). */
    recoveredAgents: [],
    /** framework id -> { framework (GET_FRAMEWORKS shape), removed }. */
    frameworks: new Map(),
    /** `frameworkId/taskId` -> task (GET_TASKS shape). */
    tasks: new Map(),
    /** GET_MAINTENANCE_STATUS `status`: draining_machines, down_machines. */
    status: {},
    /** GET_MAINTENANCE_SCHEDULE `schedule`: windows. */
    schedule: {},
    /** plan name -> { name, status, machines, detail (the /v1/maintenance/plans/<name> JSON) }. */
    plans: new Map(),
    /** GET_MASTER `get_master`. */
    master: undefined,
    heartbeatIntervalSeconds: 15,
    lastRecordMs: 0,
    subscribed: false,
    /** Drydock's stream has sent its SNAPSHOT since it last (re)connected. */
    drydockSubscribed: false,
  };
}

export function taskKey(frameworkId, taskId) {
  return `${frameworkId}/${taskId}`;
}

const idOf = (o) => o?.value ?? '';

/** Replaces agents, frameworks and tasks with a GET_STATE snapshot (SUBSCRIBED, or a resubscribe). */
export function applySnapshot(model, state) {
  model.agents = new Map();
  for (const a of state?.get_agents?.agents ?? []) model.agents.set(idOf(a.agent_info?.id), a);
  model.recoveredAgents = state?.get_agents?.recovered_agents ?? [];
  model.frameworks = new Map();
  for (const f of state?.get_frameworks?.frameworks ?? []) model.frameworks.set(idOf(f.framework_info?.id), { framework: f, removed: false });
  for (const f of state?.get_frameworks?.completed_frameworks ?? []) model.frameworks.set(idOf(f.framework_info?.id), { framework: f, removed: true });
  model.tasks = new Map();
  const t = state?.get_tasks ?? {};
  for (const task of [...(t.completed_tasks ?? []).slice(-MAX_COMPLETED_TASKS), ...(t.tasks ?? []), ...(t.unreachable_tasks ?? [])]) {
    model.tasks.set(taskKey(idOf(task.framework_id), idOf(task.task_id)), task);
  }
  return model;
}

/** Forgets the oldest terminal tasks beyond the cap (Map order is insertion order). */
function trimCompleted(model) {
  let terminal = 0;
  for (const t of model.tasks.values()) if (isTerminal(t.state)) terminal++;
  if (terminal <= MAX_COMPLETED_TASKS) return;
  for (const [k, t] of model.tasks) {
    if (terminal <= MAX_COMPLETED_TASKS) break;
    if (isTerminal(t.state)) {
      model.tasks.delete(k);
      terminal--;
    }
  }
}

/**
 * Applies one record of Mesos' operator event stream. Returns the reads it calls for:
 * `{ kind: 'INITIAL' }` (after SUBSCRIBED: master, schedule, status, plans).
 */
export function applyEvent(model, event, nowMs = 0) {
  model.lastRecordMs = nowMs;
  switch (event?.type) {
    case 'SUBSCRIBED':
      applySnapshot(model, event.subscribed?.get_state);
      model.heartbeatIntervalSeconds = Number(event.subscribed?.heartbeat_interval_seconds ?? 15) || 15;
      model.subscribed = true;
      return [{ kind: 'INITIAL' }];
    case 'HEARTBEAT':
      return [];
    case 'AGENT_ADDED': {
      const agent = event.agent_added?.agent;
      if (agent === undefined) return [];
      const id = idOf(agent.agent_info?.id);
      model.agents.set(id, agent);
      model.recoveredAgents = model.recoveredAgents.filter((r) => idOf(r.id) !== id);
      return [];
    }
    case 'AGENT_REMOVED':
      model.agents.delete(idOf(event.agent_removed?.agent_id));
      return [];
    case 'FRAMEWORK_ADDED':
    case 'FRAMEWORK_UPDATED': {
      const f = event.type === 'FRAMEWORK_ADDED' ? event.framework_added?.framework : event.framework_updated?.framework;
      if (f === undefined) return [];
      model.frameworks.set(idOf(f.framework_info?.id), { framework: f, removed: false });
      return [];
    }
    case 'FRAMEWORK_REMOVED': {
      const info = event.framework_removed?.framework_info;
      const id = idOf(info?.id);
      const known = model.frameworks.get(id);
      const framework = { ...(known?.framework ?? { framework_info: info }), active: false, connected: false };
      model.frameworks.set(id, { framework, removed: true });
      return [];
    }
    case 'TASK_ADDED': {
      const task = event.task_added?.task;
      if (task === undefined) return [];
      model.tasks.set(taskKey(idOf(task.framework_id), idOf(task.task_id)), task);
      return [];
    }
    case 'TASK_UPDATED': {
      const u = event.task_updated;
      if (u === undefined) return [];
      const key = taskKey(idOf(u.framework_id), idOf(u.status?.task_id));
      const known = model.tasks.get(key);
      const task = known === undefined
        ? { task_id: u.status?.task_id, framework_id: u.framework_id, agent_id: u.status?.agent_id, name: idOf(u.status?.task_id), state: u.state, statuses: [u.status] }
        : { ...known, state: u.state, statuses: [...(known.statuses ?? []), u.status].slice(-5) };
      // An update moves the task to the end: the newest changes are listed last.
      model.tasks.delete(key);
      model.tasks.set(key, task);
      if (isTerminal(u.state)) trimCompleted(model);
      return [];
    }
    default:
      // Events of later versions, or anything new: ignored, never fatal.
      return [];
  }
}

/**
 * Applies one record of Drydock's event stream (GET /drydock/v1/events). Returns the reads it
 * calls for: `{ kind: 'MAINTENANCE' }` (after SNAPSHOT: schedule, status, plans: what was missed
 * while the stream was down), `{ kind: 'SCHEDULE' }` (windows may have changed),
 * `{ kind: 'PLAN', name }` (phases' status).
 */
export function applyDrydockEvent(model, event, nowMs = 0) {
  model.lastRecordMs = nowMs;
  switch (event?.type) {
    case 'SNAPSHOT':
      model.drydockAgents = new Map();
      for (const a of event.snapshot?.agents ?? []) model.drydockAgents.set(idOf(a.agent_id), a);
      model.heartbeatIntervalSeconds = Number(event.snapshot?.heartbeat_interval_seconds ?? 15) || 15;
      model.drydockSubscribed = true;
      return [{ kind: 'MAINTENANCE' }];
    case 'HEARTBEAT':
      return [];
    case 'AGENT_UPDATED': {
      const agent = event.agent_updated?.agent;
      if (agent !== undefined) model.drydockAgents.set(idOf(agent.agent_id), agent);
      return [];
    }
    case 'AGENT_LEFT':
      model.drydockAgents.delete(idOf(event.agent_left?.agent_id));
      return [];
    case 'MACHINE_UPDATED':
      model.status = event.machine_updated?.status ?? {};
      return [{ kind: 'SCHEDULE' }];
    case 'MAINTENANCE_PLAN_ADDED': {
      const a = event.maintenance_plan_added ?? {};
      model.plans.set(a.name, { name: a.name, status: a.status, machines: a.machines, detail: undefined });
      return [{ kind: 'PLAN', name: a.name }];
    }
    case 'MAINTENANCE_PLAN_UPDATED': {
      const u = event.maintenance_plan_updated ?? {};
      const plan = model.plans.get(u.name) ?? { name: u.name, status: u.status, machines: undefined, detail: undefined };
      plan.status = u.status;
      if (plan.detail !== undefined) plan.detail.status = u.status;
      if (u.step !== undefined && plan.detail !== undefined) {
        const step = plan.detail.phases?.find((p) => p.name === u.step.phase)?.steps?.find((s) => s.name === u.step.name);
        if (step !== undefined) {
          step.status = u.step.status;
          step.stage = u.step.stage;
          step.waiting_for = u.step.waiting_for;
        }
      }
      model.plans.set(u.name, plan);
      return [{ kind: 'PLAN', name: u.name }];
    }
    case 'MAINTENANCE_PLAN_REMOVED':
      model.plans.delete(event.maintenance_plan_removed?.name);
      return [];
    default:
      // Events of later versions, or anything new: ignored, never fatal.
      return [];
  }
}

/** A plan's detail as fetched (GET /v1/maintenance/plans/<name>); `undefined` when it is gone. */
export function setPlanDetail(model, name, detail) {
  if (detail === undefined) {
    model.plans.delete(name);
    return;
  }
  const plan = model.plans.get(name) ?? { name, status: detail.status, machines: undefined, detail: undefined };
  plan.detail = detail;
  plan.status = detail.status;
  model.plans.set(name, plan);
}

// ---- Derived views (pure) ----------------------------------------------------------------

/** The agent's ip, from its pid (`slave(1)@10.0.0.5:5051`): AgentInfo carries no ip. */
export function agentIp(agent) {
  const m = /@([^:]+):\d+$/.exec(agent?.pid ?? '');
  return m === null ? undefined : m[1];
}

/** Drydock's view of an agent (GET /drydock/v1/agents), when the page has it. */
export function drydockAgent(model, agent) {
  return model.drydockAgents.get(idOf(agent?.agent_info?.id));
}

/**
 * One word for an agent: Drydock's (`view.state`, kept live by its stream); without it, from
 * GET_AGENTS' fields: DRAINING / DRAINED first, then DEACTIVATED, ACTIVE, DISCONNECTED.
 */
export function agentState(agent, view) {
  if (typeof view?.state === 'string' && view.state !== '') return view.state;
  const drain = agent?.drain_info?.state;
  if (drain === 'DRAINING' || drain === 'DRAINED') return drain;
  if (agent?.deactivated) return 'DEACTIVATED';
  return agent?.active ? 'ACTIVE' : 'DISCONNECTED';
}

/** An agent's drain: Drydock's drain record (state, config, started, what it waits for), else GET_AGENTS' drain_info; undefined without one. */
export function agentDrain(agent, view) {
  return view === undefined ? agent?.drain_info : view.drain;
}

/** Whether an operator (or a drain) deactivated the agent: Drydock's view, else GET_AGENTS'. */
export function agentDeactivated(agent, view) {
  return view === undefined ? agent?.deactivated === true : view.deactivated === true;
}

export const AGENT_STATES = ['ACTIVE', 'DRAINING', 'DRAINED', 'DEACTIVATED', 'DISCONNECTED', 'RECOVERED', 'UNREACHABLE'];
export const MACHINE_MODES = ['UP', 'DRAINING', 'DOWN'];

export function agentCounts(model) {
  const c = Object.fromEntries(AGENT_STATES.map((s) => [s, 0]));
  for (const a of model.agents.values()) {
    const s = agentState(a, drydockAgent(model, a));
    c[s] = (c[s] ?? 0) + 1;
  }
  c.RECOVERED = model.recoveredAgents.length;
  // Unreachable agents are not in GET_STATE: Drydock's view counts them.
  c.UNREACHABLE = [...model.drydockAgents.values()].filter((d) => d.phase === 'UNREACHABLE').length;
  return c;
}

export function taskCounts(model) {
  const c = {};
  for (const t of model.tasks.values()) c[t.state] = (c[t.state] ?? 0) + 1;
  return c;
}

/** Does a MachineID name this agent's machine? (Mesos: hostname and ip, where given.) */
function machineMatches(id, hostname, ip) {
  if (id.hostname === undefined && id.ip === undefined) return false;
  if (id.hostname !== undefined && id.hostname.toLowerCase() !== (hostname ?? '').toLowerCase()) return false;
  if (id.ip !== undefined && id.ip !== ip) return false;
  return true;
}

const keyOfMachine = (id) => `${(id.hostname ?? '').toLowerCase()}|${id.ip ?? ''}`;
const ns = (d) => (d === undefined ? undefined : Number(d.nanoseconds ?? 0));

/**
 * Every machine the page knows: those of the schedule (with their window), those the status
 * lists as DRAINING or DOWN, and one per agent not covered by those (UP). Each with its mode,
 * window (ms), and agents. Sorted by hostname.
 */
export function machines(model) {
  const rows = new Map();
  const row = (id) => {
    const k = keyOfMachine(id);
    let r = rows.get(k);
    if (r === undefined) {
      r = { id: { ...(id.hostname === undefined ? {} : { hostname: id.hostname }), ...(id.ip === undefined ? {} : { ip: id.ip }) }, mode: 'UP', window: undefined, agents: [] };
      rows.set(k, r);
    }
    return r;
  };
  for (const w of model.schedule?.windows ?? []) {
    const start = ns(w.unavailability?.start);
    const duration = ns(w.unavailability?.duration);
    const window = { startMs: (start ?? 0) / 1e6, endMs: duration === undefined ? undefined : ((start ?? 0) + duration) / 1e6 };
    for (const id of w.machine_ids ?? []) row(id).window = window;
  }
  for (const d of model.status?.draining_machines ?? []) row(d.id ?? {}).mode = 'DRAINING';
  for (const id of model.status?.down_machines ?? []) row(id).mode = 'DOWN';
  for (const a of model.agents.values()) {
    const hostname = a.agent_info?.hostname;
    const ip = agentIp(a);
    let found = false;
    for (const r of rows.values()) {
      if (machineMatches(r.id, hostname, ip)) {
        r.agents.push(a);
        found = true;
      }
    }
    if (!found) row({ hostname, ip }).agents.push(a);
  }
  return [...rows.values()].sort((x, y) => (x.id.hostname ?? x.id.ip ?? '').localeCompare(y.id.hostname ?? y.id.ip ?? ''));
}

export function machineCounts(model) {
  const c = { UP: 0, DRAINING: 0, DOWN: 0 };
  for (const m of machines(model)) c[m.mode]++;
  return c;
}

/** The mode of an agent's machine, as the live status says (kept current by MACHINE_UPDATED). */
export function agentMode(model, agent) {
  const hostname = agent.agent_info?.hostname;
  const ip = agentIp(agent);
  if ((model.status?.down_machines ?? []).some((id) => machineMatches(id, hostname, ip))) return 'DOWN';
  if ((model.status?.draining_machines ?? []).some((d) => machineMatches(d.id ?? {}, hostname, ip))) return 'DRAINING';
  return 'UP';
}

/** A framework's service scheduler URL (FrameworkInfo.webui_url), when it has one. */
export function serviceUrl(entry) {
  const u = entry?.framework?.framework_info?.webui_url;
  return typeof u === 'string' && /^https?:\/\//.test(u) ? u.replace(/\/+$/, '') : undefined;
}

/** `{ cpus, mem, disk }` of a resource list (endpoint format). */
export function scalars(resources) {
  const out = {};
  for (const r of resources ?? []) if (r.type === 'SCALAR') out[r.name] = (out[r.name] ?? 0) + Number(r.scalar?.value ?? 0);
  return out;
}

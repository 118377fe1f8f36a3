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

/** Statuses kept per task (its history on the task page). */
export const MAX_STATUSES = 30;

/** Events kept per agent (its history on the agent page). */
export const MAX_HISTORY = 50;

/** Remembers an agent the master no longer has, as last seen (its Mesos and Drydock facts). */
function remember(model, id, agent, view, reason, atMs) {
  const prev = model.lastSeen.get(id);
  model.lastSeen.set(id, { agent: agent ?? prev?.agent, view: view ?? prev?.view, reason, atMs });
}

/** One line of an agent's history. */
function note(model, id, atMs, change, text) {
  if (id === '') return;
  const h = model.history.get(id) ?? [];
  h.push({ atMs, change, text });
  model.history.set(id, h.slice(-MAX_HISTORY));
}

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
    /**
     * agent id -> { agent, view, reason, atMs }: agents the master no longer has (a DOWN
     * machine's agents leave GET_AGENTS), as this page last saw them, so they stay visible.
     */
    lastSeen: new Map(),
    /** agent id -> [{ atMs, change, text }]: what the events told of it since the page opened (newest last). */
    history: new Map(),
  };
}

export function taskKey(frameworkId, taskId) {
  return `${frameworkId}/${taskId}`;
}

const idOf = (o) => o?.value ?? '';

/** Replaces agents, frameworks and tasks with a GET_STATE snapshot (SUBSCRIBED, or a resubscribe). */
export function applySnapshot(model, state, nowMs = 0) {
  const before = model.agents;
  model.agents = new Map();
  for (const a of state?.get_agents?.agents ?? []) model.agents.set(idOf(a.agent_info?.id), a);
  for (const [id, a] of before) if (!model.agents.has(id)) remember(model, id, a, undefined, 'no longer registered', nowMs);
  for (const id of model.agents.keys()) model.lastSeen.delete(id);
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
      applySnapshot(model, event.subscribed?.get_state, nowMs);
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
      model.lastSeen.delete(id);
      model.recoveredAgents = model.recoveredAgents.filter((r) => idOf(r.id) !== id);
      note(model, id, nowMs, 'ADDED', 'registered');
      return [];
    }
    case 'AGENT_REMOVED': {
      const id = idOf(event.agent_removed?.agent_id);
      const known = model.agents.get(id);
      if (known !== undefined) remember(model, id, known, model.drydockAgents.get(id), 'removed', nowMs);
      model.agents.delete(id);
      note(model, id, nowMs, 'REMOVED', 'removed from the master');
      return [];
    }
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
        : { ...known, state: u.state, statuses: [...(known.statuses ?? []), u.status].slice(-MAX_STATUSES) };
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
      if (agent !== undefined) {
        model.drydockAgents.set(idOf(agent.agent_id), agent);
        note(model, idOf(agent.agent_id), nowMs, event.agent_updated.change ?? 'UPDATED', changeText(event.agent_updated.change, agent));
      }
      return [];
    }
    case 'AGENT_LEFT': {
      const l = event.agent_left ?? {};
      const id = idOf(l.agent_id);
      const view = model.drydockAgents.get(id);
      if (view !== undefined || model.agents.has(id)) remember(model, id, model.agents.get(id), view, `${l.reason ?? 'LEFT'}${l.message ? `: ${l.message}` : ''}`, nowMs);
      model.drydockAgents.delete(id);
      note(model, id, nowMs, l.reason ?? 'LEFT', l.message ?? 'the master no longer has this agent');
      return [];
    }
    case 'MACHINE_UPDATED': {
      const u = event.machine_updated ?? {};
      model.status = u.status ?? {};
      // Each agent on a machine that changed: a line of its history.
      for (const id of u.machine_ids ?? []) {
        for (const [aid, v] of model.drydockAgents) if (machineMatches(id, v.hostname, v.ip)) note(model, aid, nowMs, `MACHINE_${u.change ?? 'UPDATED'}`, `machine ${[id.hostname, id.ip].filter(Boolean).join(' / ')}: ${u.change ?? 'updated'}`);
        for (const [aid, g] of model.lastSeen) if (machineMatches(id, g.view?.hostname ?? g.agent?.agent_info?.hostname, g.view?.ip ?? agentIp(g.agent))) note(model, aid, nowMs, `MACHINE_${u.change ?? 'UPDATED'}`, `machine ${[id.hostname, id.ip].filter(Boolean).join(' / ')}: ${u.change ?? 'updated'}`);
      }
      return [{ kind: 'SCHEDULE' }];
    }
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

/** What an AGENT_UPDATED change says, in words. */
function changeText(change, agent) {
  switch (change) {
    case 'DRAINING': return `drain started${agent?.drain?.config?.max_grace_period ? ` (max grace ${Number(agent.drain.config.max_grace_period.nanoseconds) / 1e9} s)` : ''}`;
    case 'DRAINED': return 'drained: no task left';
    case 'DRAIN_REFUSED': return `the agent refused the drain: ${agent?.drain?.refused?.reason ?? ''}`;
    case 'DISK_PRESSURE': return `disk pressure: ${agent?.conditions?.disk_pressure?.reason ?? ''} ${agent?.conditions?.disk_pressure?.message ?? ''}`.trim();
    case 'DISK_PRESSURE_CLEARED': return 'disk pressure cleared';
    default: return String(change ?? 'updated').toLowerCase().replace(/_/g, ' ');
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
 * window (ms), agents, and `gone`: agents the master no longer has (a DOWN machine's leave
 * GET_AGENTS), as this page last saw them. Sorted by hostname.
 */
export function machines(model) {
  const rows = new Map();
  const row = (id) => {
    const k = keyOfMachine(id);
    let r = rows.get(k);
    if (r === undefined) {
      r = { id: { ...(id.hostname === undefined ? {} : { hostname: id.hostname }), ...(id.ip === undefined ? {} : { ip: id.ip }) }, mode: 'UP', window: undefined, agents: [], gone: [] };
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
  // Agents the master no longer has (a DOWN machine's), as last seen, on their machine's row.
  for (const [id, g] of model.lastSeen) {
    const hostname = g.view?.hostname ?? g.agent?.agent_info?.hostname;
    const ip = g.view?.ip ?? agentIp(g.agent);
    for (const r of rows.values()) if (machineMatches(r.id, hostname, ip)) r.gone.push({ id, hostname, ip, ...g });
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

/** Seconds as the master writes them in waiting-for texts (`12 s`, `2.5 s`). */
const secsText = (ms) => `${Math.max(0, Math.floor(ms / 1000))} s`;
const graceText = (ns) => {
  const s = ns / 1e9;
  return `${Number.isInteger(s) ? s : s.toFixed(1)} s`;
};

/**
 * A drain's waiting-for line as of `nowMs`: a task told to stop is counted on from its
 * `sigterm_time` against its `grace_period` (the master's wording), so the text ticks with the
 * page instead of freezing at the moment the record was sent. Anything else: the master's text.
 */
export function liveWaitText(w, nowMs) {
  const at = w?.sigterm_time?.nanoseconds;
  const grace = w?.grace_period?.nanoseconds;
  if (w?.kind !== 'TASK_RUNNING' || at === undefined || grace === undefined) return w?.message ?? '';
  const elapsed = nowMs - Number(at) / 1e6;
  const g = Number(grace);
  return elapsed <= g / 1e6
    ? `task ${w.task_id} still running after SIGTERM (${secsText(elapsed)} of ${graceText(g)} grace)`
    : `task ${w.task_id} still running ${secsText(elapsed)} after SIGTERM; its ${graceText(g)} grace is over (SIGKILL due)`;
}

/** An agent's disk pressure (`conditions.disk_pressure` of GET /drydock/v1/agents), or undefined. */
export function diskPressure(view) {
  return view?.conditions?.disk_pressure;
}

/** The live tasks of an agent (not terminal), newest last. */
export function agentTasks(model, agentId) {
  return [...model.tasks.values()].filter((t) => idOf(t.agent_id) === agentId);
}

/** What an agent's live tasks use: `{ cpus, mem, disk, ... }` summed from their resources. */
export function agentUsage(model, agentId) {
  const out = {};
  for (const t of agentTasks(model, agentId)) {
    if (isTerminal(t.state)) continue;
    for (const [k, v] of Object.entries(scalars(t.resources))) out[k] = (out[k] ?? 0) + v;
  }
  return out;
}

/** Ranges (ports) of a resource list, as text: `31000-32000`. */
export function ranges(resources, name) {
  return (resources ?? []).filter((r) => r.name === name && r.type === 'RANGES').flatMap((r) => (r.ranges?.range ?? []).map((x) => (x.begin === x.end ? String(x.begin) : `${x.begin}-${x.end}`))).join(', ');
}

/** An agent's attributes as `name: value` texts (text, scalar, ranges, set). */
export function attributes(agentInfo) {
  return (agentInfo?.attributes ?? []).map((a) => {
    const v = a.text?.value ?? a.scalar?.value ?? (a.ranges ? (a.ranges.range ?? []).map((x) => `${x.begin}-${x.end}`).join(',') : a.set ? (a.set.item ?? []).join(',') : '');
    return `${a.name}: ${v}`;
  });
}

/** A task by framework and task id, or undefined. */
export function findTask(model, frameworkId, taskId) {
  return model.tasks.get(taskKey(frameworkId, taskId));
}

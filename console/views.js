// The pages, one function each: (model, ui) -> a DOM subtree. Re-rendered whole on every change
// (coalesced to one per animation frame), which keeps each page a plain function of the model.

import { h, badge, table, empty } from './dom.js';
import { agentCounts, agentDeactivated, agentDrain, agentIp, agentMode, agentState, AGENT_STATES, drydockAgent, isTerminal, machineCounts, machines, MACHINE_MODES, scalars, serviceUrl, taskCounts } from './model.js';

// ---- formatting ---------------------------------------------------------------------------

const pad = (n) => String(n).padStart(2, '0');

export function fmtTime(ms) {
  if (ms === undefined || !Number.isFinite(ms) || ms <= 0) return '—';
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

export function fmtDuration(ms) {
  if (ms === undefined || !Number.isFinite(ms)) return '—';
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${s % 60 ? ` ${s % 60}s` : ''}`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${Math.floor((s % 3600) / 60) ? ` ${Math.floor((s % 3600) / 60)}m` : ''}`;
  return `${Math.floor(s / 86400)}d ${Math.floor((s % 86400) / 3600)}h`;
}

const nsToMs = (t) => (t === undefined ? undefined : Number(t.nanoseconds ?? 0) / 1e6);
const ago = (ms, now) => (ms === undefined ? '—' : `${fmtDuration(now - ms)} ago`);
const shortId = (id) => (id.length > 14 ? `…${id.slice(-12)}` : id);
const machineName = (id) => id.hostname ?? id.ip ?? '?';
const num = (n) => (Number.isInteger(n) ? String(n) : n.toFixed(1));
/** A maintenance plan's machines: from its ADDED event, else one per step of its tree. */
const planMachines = (p) => p.machines ?? p.detail?.phases?.reduce((n, ph) => n + (ph.steps?.length ?? 0), 0);

function section(title, right, ...body) {
  return h('section', { class: 'card' }, h('header', {}, h('h2', {}, title), right ? h('div', { class: 'tools' }, right) : null), ...body);
}

function button(label, onclick, kind = '', attrs = {}) {
  return h('button', { class: `btn ${kind}`, type: 'button', onclick, ...attrs }, label);
}

// ---- Cluster ------------------------------------------------------------------------------

function counts(title, entries, total) {
  return h('div', { class: 'stat' },
    h('div', { class: 'stat-head' }, h('span', {}, title), h('strong', {}, String(total))),
    h('ul', { class: 'stat-list' }, entries.map(([label, n]) => h('li', { class: n === 0 ? 'zero' : '' }, badge(label), h('span', { class: 'n' }, String(n))))));
}

export function clusterView(model, ui) {
  const m = model.master;
  const masters = [];
  if (m !== undefined) {
    const info = m.master_info ?? {};
    masters.push({ role: 'LEADER', info, elected: Number(m.elected_time ?? 0) * 1000, started: Number(m.start_time ?? 0) * 1000 });
    for (const s of m.standby_masters ?? []) masters.push({ role: 'STANDBY', info: s, elected: undefined, started: undefined });
  }
  const agents = agentCounts(model);
  const modes = machineCounts(model);
  const fws = [...model.frameworks.values()];
  const tasks = taskCounts(model);
  const taskEntries = Object.entries(tasks).sort((a, b) => (isTerminal(a[0]) === isTerminal(b[0]) ? a[0].localeCompare(b[0]) : isTerminal(a[0]) ? 1 : -1));
  return h('div', { class: 'page' },
    h('div', { class: 'stats' },
      counts('Agents', AGENT_STATES.map((s) => [s, agents[s]]), model.agents.size + model.recoveredAgents.length + agents.UNREACHABLE),
      counts('Machines', MACHINE_MODES.map((s) => [s, modes[s]]), modes.UP + modes.DRAINING + modes.DOWN),
      counts('Frameworks', [['ACTIVE', fws.filter((f) => !f.removed && f.framework.active).length], ['INACTIVE', fws.filter((f) => !f.removed && !f.framework.active).length], ['COMPLETED', fws.filter((f) => f.removed).length]], fws.length),
      counts('Tasks', taskEntries.length === 0 ? [['TASK_RUNNING', 0]] : taskEntries, model.tasks.size)),
    section('Masters', null, masters.length === 0 ? empty('No master information yet.') : table(['Role', 'Hostname', 'Address', 'Id', 'Version', 'Elected', 'Started'],
      masters.map((x) => h('tr', {},
        h('td', {}, badge(x.role)),
        h('td', {}, x.info.hostname ?? x.info.address?.hostname ?? '—'),
        h('td', { class: 'mono' }, x.info.address ? `${x.info.address.ip}:${x.info.address.port}` : x.info.pid ?? '—'),
        h('td', { class: 'mono dim' }, x.info.id ?? '—'),
        h('td', {}, x.info.version ?? '—'),
        h('td', {}, x.elected ? ago(x.elected, ui.now) : '—'),
        h('td', {}, x.started ? fmtTime(x.started) : '—'))))),
    drainsInProgress(model, ui));
}

/**
 * What a drain waits for, as the drain record says it: a drain its agent refused first (the
 * agent could not decode its drain message and killed nothing), then `waiting_for`.
 */
function drainWaits(rec) {
  const refused = rec?.refused ? [{ kind: 'REFUSED', message: `the agent refused the drain (nothing was killed; drain again, or upgrade the agent): ${rec.refused.reason ?? ''}` }] : [];
  return [...refused, ...(rec?.waiting_for ?? [])];
}

/** Drains in progress, from Drydock's view of every agent (also one that is away: its drain waits for it). */
function drainsInProgress(model, ui) {
  const draining = [...model.drydockAgents.values()].filter((d) => d.drain?.state === 'DRAINING');
  const plans = [...model.plans.values()].filter((p) => p.status !== 'COMPLETE');
  return h('div', { class: 'two' },
    section('Drains in progress', null, draining.length === 0 ? empty('No agent is draining.') : table(['Agent', 'Since', 'Remaining tasks', 'Waiting for'], draining.map((d) => h('tr', {},
      h('td', {}, d.hostname),
      h('td', {}, ago(nsToMs(d.drain.started_time), ui.now)),
      h('td', { class: 'num' }, String(d.drain.remaining_tasks ?? '—')),
      h('td', { class: 'wrap' }, drainWaits(d.drain).map((w) => w.message).join('; ') || '—'))))),
    section('Maintenance plans in progress', null, plans.length === 0 ? empty('No maintenance plan is in progress.') : table(['Plan', 'Status', 'Machines'], plans.map((p) => h('tr', {},
      h('td', {}, h('a', { href: '#/plans' }, p.name)), h('td', {}, badge(p.status)), h('td', { class: 'num' }, String(planMachines(p) ?? '—')))))));
}

// ---- Machines -----------------------------------------------------------------------------

function timeline(rows, now) {
  const windows = rows.filter((r) => r.window !== undefined);
  if (windows.length === 0) return empty('No maintenance is scheduled.');
  let lo = now;
  let hi = now + 3600_000;
  for (const r of windows) {
    lo = Math.min(lo, r.window.startMs);
    hi = Math.max(hi, r.window.endMs ?? r.window.startMs + 3600_000, now);
  }
  const span = hi - lo;
  lo -= span * 0.04;
  hi += span * 0.04;
  const pct = (t) => `${(((t - lo) / (hi - lo)) * 100).toFixed(3)}%`;
  const ticks = [];
  const step = [60_000, 300_000, 900_000, 3600_000, 6 * 3600_000, 86400_000, 7 * 86400_000].find((s) => (hi - lo) / s <= 12) ?? 30 * 86400_000;
  for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) {
    const d = new Date(t);
    const label = step >= 86400_000 ? `${d.getMonth() + 1}/${d.getDate()}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    ticks.push(h('span', { class: 'tick', style: { left: pct(t) } }, label));
  }
  return h('div', { class: 'timeline' },
    h('div', { class: 'tl-row tl-axis' }, h('div', { class: 'tl-label' }, ''), h('div', { class: 'tl-track' }, ticks, h('span', { class: 'now', style: { left: pct(now) } }, 'now'))),
    windows.map((r) => {
      const end = r.window.endMs ?? hi;
      const title = `${machineName(r.id)}: ${r.mode}, ${fmtTime(r.window.startMs)} → ${r.window.endMs === undefined ? 'open-ended' : fmtTime(r.window.endMs)}`;
      return h('div', { class: 'tl-row', 'data-machine': machineName(r.id) },
        h('div', { class: 'tl-label' }, h('span', { class: 'host' }, machineName(r.id)), badge(r.mode)),
        h('div', { class: 'tl-track' },
          h('div', { class: `bar m-${r.mode.toLowerCase()}${r.window.endMs === undefined ? ' open' : ''}`, title, style: { left: pct(r.window.startMs), width: `calc(${pct(end)} - ${pct(r.window.startMs)})` } },
            r.window.endMs === undefined ? '' : fmtDuration(r.window.endMs - r.window.startMs)),
          h('span', { class: 'nowline', style: { left: pct(now) } })));
    }));
}

export function machinesView(model, ui) {
  const rows = machines(model);
  return h('div', { class: 'page' },
    section('Maintenance schedule', h('span', { class: 'legend' }, badge('UP'), badge('DRAINING'), badge('DOWN')), timeline(rows, ui.now)),
    section('Machines', null, rows.length === 0 ? empty('No machines known.') : table(['Machine', 'IP', 'Mode', 'Window start', 'Window end', 'Agents', ''], rows.map((r) => h('tr', { 'data-machine': machineName(r.id) },
      h('td', {}, r.id.hostname ?? '—'),
      h('td', { class: 'mono' }, r.id.ip ?? '—'),
      h('td', {}, badge(r.mode)),
      h('td', {}, r.window ? fmtTime(r.window.startMs) : '—'),
      h('td', {}, r.window ? (r.window.endMs === undefined ? 'open-ended' : fmtTime(r.window.endMs)) : '—'),
      h('td', {}, r.agents.length === 0 ? '—' : r.agents.map((a) => h('span', { class: 'chip' }, a.agent_info?.hostname ?? '?', ' ', badge(agentState(a, drydockAgent(model, a)))))),
      h('td', { class: 'actions' },
        r.mode === 'DOWN' ? button('Up', () => ui.actions.machineUp(r.id)) : null,
        r.mode === 'DRAINING' ? button('Down', () => ui.actions.machineDown(r.id), 'danger') : null))))));
}

// ---- Agents -------------------------------------------------------------------------------

export function agentsView(model, ui) {
  const agents = [...model.agents.values()].sort((a, b) => (a.agent_info?.hostname ?? '').localeCompare(b.agent_info?.hostname ?? ''));
  const running = new Map();
  for (const t of model.tasks.values()) if (!isTerminal(t.state)) running.set(t.agent_id?.value, (running.get(t.agent_id?.value) ?? 0) + 1);
  return h('div', { class: 'page' },
    section(`Agents (${agents.length})`, null, agents.length === 0 ? empty('No agents registered.') : table(['Agent', 'State', 'Machine', 'Tasks', 'CPUs', 'Mem', 'Drain', 'Waiting for', ''], agents.map((a) => {
      const id = a.agent_info?.id?.value ?? '';
      // Mesos' facts (resources, address) from GET_AGENTS; Drydock's (state, drain record) from its own view.
      const view = drydockAgent(model, a);
      const state = agentState(a, view);
      const total = scalars(a.total_resources);
      const used = scalars(a.allocated_resources);
      const drain = agentDrain(a, view);
      const rec = view?.drain;
      const grace = drain?.config?.max_grace_period;
      const drainCell = drain === undefined ? h('span', { class: 'dim' }, '—') : h('div', { class: 'drain' },
        badge(drain.state),
        h('div', { class: 'dim small' },
          rec?.started_time ? `since ${ago(nsToMs(rec.started_time), ui.now)}` : '',
          grace ? ` · max grace ${fmtDuration(nsToMs(grace))}` : '',
          rec?.drained_time ? ` · drained ${ago(nsToMs(rec.drained_time), ui.now)}` : '',
          rec && rec.state !== 'DRAINED' ? ` · ${rec.remaining_tasks} task${rec.remaining_tasks === 1 ? '' : 's'} left` : ''));
      const waiting = drainWaits(rec);
      return h('tr', { 'data-agent-id': id, 'data-state': state },
        h('td', {}, h('div', { class: 'host' }, a.agent_info?.hostname ?? '?'), h('div', { class: 'mono dim small', title: id }, `${shortId(id)} · ${agentIp(a) ?? '?'}:${a.agent_info?.port ?? ''}`)),
        h('td', { class: 'state' }, badge(state)),
        h('td', {}, badge(agentMode(model, a))),
        h('td', { class: 'num' }, String(running.get(id) ?? 0)),
        h('td', { class: 'num' }, `${num(used.cpus ?? 0)} / ${num(total.cpus ?? 0)}`),
        h('td', { class: 'num' }, `${num(used.mem ?? 0)} / ${num(total.mem ?? 0)}`),
        h('td', { class: 'drain-cell' }, drainCell),
        h('td', { class: 'wrap waiting' }, waiting.length === 0 ? h('span', { class: 'dim' }, drain?.state === 'DRAINED' ? 'nothing: drained' : '—') : h('ul', { class: 'waits' }, waiting.map((w) => h('li', {}, h('span', { class: 'kind' }, w.kind), ' ', w.message)))),
        h('td', { class: 'actions' },
          drain === undefined ? button('Drain…', () => ui.actions.drain(a), 'danger') : null,
          agentDeactivated(a, view) ? button('Reactivate', () => ui.actions.reactivate(a)) : button('Deactivate', () => ui.actions.deactivate(a))));
    }))),
    model.recoveredAgents.length === 0 ? null : section('Recovered, not yet re-registered', null, table(['Hostname', 'Id'], model.recoveredAgents.map((r) => h('tr', {}, h('td', {}, r.hostname), h('td', { class: 'mono' }, r.id?.value))))));
}

// ---- Frameworks and tasks ---------------------------------------------------------------------

export function frameworksView(model, ui) {
  const fws = [...model.frameworks.entries()].sort((a, b) => Number(a[1].removed) - Number(b[1].removed) || (a[1].framework.framework_info?.name ?? '').localeCompare(b[1].framework.framework_info?.name ?? ''));
  const names = new Map(fws.map(([id, f]) => [id, f.framework.framework_info?.name ?? id]));
  const hosts = new Map([...model.agents.entries()].map(([id, a]) => [id, a.agent_info?.hostname ?? id]));
  const byFw = new Map();
  for (const t of model.tasks.values()) if (!isTerminal(t.state)) byFw.set(t.framework_id?.value, (byFw.get(t.framework_id?.value) ?? 0) + 1);
  const tasks = [...model.tasks.values()].sort((a, b) => Number(isTerminal(a.state)) - Number(isTerminal(b.state)) || (a.task_id?.value ?? '').localeCompare(b.task_id?.value ?? ''));
  return h('div', { class: 'page' },
    section(`Frameworks (${fws.length})`, null, fws.length === 0 ? empty('No frameworks.') : table(['Name', 'Id', 'User', 'Principal', 'Roles', 'State', 'Tasks', 'Registered', 'Web UI'], fws.map(([id, f]) => {
      const info = f.framework.framework_info ?? {};
      const state = f.removed ? 'COMPLETED' : f.framework.active ? 'ACTIVE' : 'INACTIVE';
      const url = serviceUrl(f);
      return h('tr', { 'data-framework-id': id },
        h('td', { class: 'host' }, info.name ?? '—'),
        h('td', { class: 'mono dim', title: id }, shortId(id)),
        h('td', {}, info.user ?? '—'),
        h('td', {}, info.principal ?? '—'),
        h('td', {}, (info.roles ?? (info.role ? [info.role] : ['*'])).join(', ')),
        h('td', {}, badge(state)),
        h('td', { class: 'num' }, String(byFw.get(id) ?? 0)),
        h('td', {}, ago(nsToMs(f.framework.registered_time), ui.now)),
        h('td', {}, url ? h('a', { href: '#/plans', title: url }, 'plans') : '—'));
    }))),
    section(`Tasks (${tasks.length})`, null, tasks.length === 0 ? empty('No tasks.') : table(['Task', 'Name', 'Framework', 'Agent', 'State', 'Updated'], tasks.map((t) => {
      const last = (t.statuses ?? []).at(-1);
      return h('tr', { 'data-task-id': t.task_id?.value, class: isTerminal(t.state) ? 'done' : '' },
        h('td', { class: 'mono' }, t.task_id?.value),
        h('td', {}, t.name ?? '—'),
        h('td', {}, names.get(t.framework_id?.value) ?? shortId(t.framework_id?.value ?? '')),
        h('td', {}, hosts.get(t.agent_id?.value) ?? shortId(t.agent_id?.value ?? '—')),
        h('td', {}, badge(t.state, last?.message)),
        h('td', {}, last?.timestamp ? ago(Number(last.timestamp) * 1000, ui.now) : '—'));
    }))));
}

// ---- Plans --------------------------------------------------------------------------------

function planTree(kind, owner, name, detail, status, ui, extra) {
  const verbs = (phase) => h('span', { class: 'actions' },
    button('Continue', () => ui.actions.planVerb(kind, owner, name, 'continue', phase), 'small', { 'data-verb': 'continue' }),
    button('Interrupt', () => ui.actions.planVerb(kind, owner, name, 'interrupt', phase), 'small', { 'data-verb': 'interrupt' }));
  return h('div', { class: 'plan', 'data-plan': name, 'data-kind': kind },
    h('div', { class: 'plan-head' }, h('span', { class: 'caret' }, '▾'), h('strong', {}, name), badge(status), extra ?? null, h('span', { class: 'dim small' }, detail?.strategy ? `strategy ${detail.strategy}` : ''), h('span', { class: 'grow' }), verbs(undefined)),
    detail === undefined ? h('div', { class: 'dim small indent' }, 'loading…') : h('ul', { class: 'phases' }, (detail.phases ?? []).map((ph) => h('li', { class: 'phase', 'data-phase': ph.name },
      h('div', { class: 'phase-head' }, h('span', { class: 'caret' }, '▾'), h('span', {}, ph.name), badge(ph.status), h('span', { class: 'dim small' }, ph.strategy ?? ''), h('span', { class: 'grow' }), verbs(ph.name)),
      h('ul', { class: 'steps' }, (ph.steps ?? []).map((s) => h('li', { class: 'step', 'data-step': `${ph.name}/${s.name}`, 'data-status': s.status },
        badge(s.status), h('span', { class: 'step-name' }, s.name), s.stage ? h('span', { class: 'dim small' }, s.stage) : null,
        h('span', { class: 'msg' }, s.waiting_for || (s.message ?? '').replace(/^step \S+ \[[^\]]*\] with status: \S+:? ?/, '')))))))),
    (detail?.errors ?? []).length > 0 ? h('div', { class: 'errors' }, detail.errors.join('; ')) : null);
}

export function plansView(model, ui) {
  const plans = [...model.plans.values()].sort((a, b) => a.name.localeCompare(b.name));
  const services = [...ui.services.values()];
  return h('div', { class: 'page' },
    section(`Maintenance plans (${plans.length})`, null, plans.length === 0 ? empty('No maintenance plans. Create one with: drydock maintenance plan create FILE') : plans.map((p) => planTree('maintenance', undefined, p.name, p.detail, p.status, ui, planMachines(p) === undefined ? null : h('span', { class: 'dim small' }, `${planMachines(p)} machines`)))),
    section('Service schedulers', null, services.length === 0 ? empty('No framework advertises a service scheduler (FrameworkInfo.webui_url).') : services.map((s) => h('div', { class: 'service', 'data-service': s.frameworkId },
      h('div', { class: 'service-head' }, h('strong', {}, s.name), h('span', { class: 'mono dim small' }, s.url), s.live ? badge('LIVE') : badge('OFFLINE', s.error)),
      s.error ? h('div', { class: 'errors' }, s.error) : null,
      (s.plans ?? []).map((p) => planTree('service', s.frameworkId, p.name, p, p.status, ui))))));
}

export const VIEWS = {
  cluster: { title: 'Cluster', render: clusterView },
  machines: { title: 'Machines', render: machinesView },
  agents: { title: 'Agents', render: agentsView },
  frameworks: { title: 'Frameworks & tasks', render: frameworksView },
  plans: { title: 'Plans', render: plansView },
};

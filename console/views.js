// The pages, one function each: (model, ui) -> a DOM subtree. Re-rendered whole on every change
// (coalesced to one per animation frame), which keeps each page a plain function of the model.

import { h, badge, table, empty } from './dom.js';
import { agentActions, machineActions, planActions, why } from './actions.js';
import { agentCounts, agentDrain, agentIp, agentMode, agentState, AGENT_STATES, agentTasks, agentUsage, attributes, diskPressure, drydockAgent, findTask, isTerminal, liveWaitText, machineCounts, machines, MACHINE_MODES, ranges, scalars, serviceUrl, taskCounts } from './model.js';

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

/** A button for an action the master would accept (`allowed` true); none for one it would refuse. */
function actionButton(allowed, label, onclick, kind = '', attrs = {}) {
  return allowed === true ? button(label, onclick, kind, attrs) : null;
}

const agentHref = (id) => `#/agent/${encodeURIComponent(id)}`;
const taskHref = (fw, id) => `#/task/${encodeURIComponent(fw)}/${encodeURIComponent(id)}`;

/** The DISK PRESSURE badge of an agent under it (its reason and detail as the tooltip), else null. */
function pressureBadge(view, now) {
  const p = diskPressure(view);
  if (p === undefined) return null;
  return h('span', { class: 'badge s-pressure', 'data-condition': 'disk_pressure', title: `${p.reason ?? ''}: ${p.message ?? ''} (since ${ago(nsToMs(p.since), now)})` }, 'DISK PRESSURE');
}

/** The buttons an agent's state allows (actions.js decides, as the master would). */
function agentButtons(a, view, ui) {
  const can = agentActions(a, view);
  return [
    actionButton(can.drain, 'Drain…', () => ui.actions.drain(a), 'danger'),
    actionButton(can.deactivate, 'Deactivate', () => ui.actions.deactivate(a)),
    actionButton(can.reactivate, 'Reactivate', () => ui.actions.reactivate(a)),
  ];
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
    section('Drains in progress', null, draining.length === 0 ? empty('No agent is draining.') : table(['Agent', 'Since', 'Tasks left', 'Waiting for'], draining.map((d) => h('tr', { 'data-drain': d.agent_id?.value },
      h('td', { class: 'host nowrap' }, h('a', { href: agentHref(d.agent_id?.value ?? '') }, d.hostname)),
      h('td', { class: 'nowrap' }, ago(nsToMs(d.drain.started_time), ui.now)),
      h('td', { class: 'num' }, String(d.drain.remaining_tasks ?? '—')),
      h('td', { class: 'wrap waiting' }, drainWaits(d.drain).map((w) => liveWaitText(w, ui.now)).join('; ') || '—'))), { class: 'grid drains' })),
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
  // A tick's label needs about 5% of the track at 1280 px: one too close to `now` (or to the
  // track's ends) keeps its mark and drops its label, so no label prints over another.
  const room = (hi - lo) * 0.05;
  for (let t = Math.ceil(lo / step) * step; t <= hi; t += step) {
    const d = new Date(t);
    const label = step >= 86400_000 ? `${d.getMonth() + 1}/${d.getDate()}` : `${pad(d.getHours())}:${pad(d.getMinutes())}`;
    const crowded = Math.abs(t - now) < room || t - lo < room / 2 || hi - t < room / 2;
    ticks.push(h('span', { class: `tick${crowded ? ' bare' : ''}`, style: { left: pct(t) } }, crowded ? '' : label));
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
      h('td', {}, r.agents.length + r.gone.length === 0 ? (r.mode === 'DOWN' ? h('span', { class: 'dim' }, 'its agents are shut down (none seen by this page)') : '—') : [
        r.agents.map((a) => h('span', { class: 'chip' }, h('a', { href: agentHref(a.agent_info?.id?.value ?? '') }, a.agent_info?.hostname ?? '?'), ' ', badge(agentState(a, drydockAgent(model, a))), pressureBadge(drydockAgent(model, a), ui.now))),
        r.gone.map((g) => h('span', { class: 'chip gone', 'data-gone-agent': g.id, title: `${g.reason} ${ago(g.atMs, ui.now)}` }, h('a', { href: agentHref(g.id) }, g.hostname ?? '?'), ' ', badge('GONE'), h('span', { class: 'dim small' }, ` last seen ${g.view?.state ?? (g.agent ? agentState(g.agent, undefined) : '?')}, ${ago(g.atMs, ui.now)}`))),
      ]),
      h('td', { class: 'actions' },
        actionButton(machineActions(r.mode).up, 'Up', () => ui.actions.machineUp(r.id)),
        actionButton(machineActions(r.mode).down, 'Down…', () => ui.actions.machineDown(r.id), 'danger')))))));
}

// ---- Agents -------------------------------------------------------------------------------

export function agentsView(model, ui) {
  const agents = [...model.agents.values()].sort((a, b) => (a.agent_info?.hostname ?? '').localeCompare(b.agent_info?.hostname ?? ''));
  const running = new Map();
  for (const t of model.tasks.values()) if (!isTerminal(t.state)) running.set(t.agent_id?.value, (running.get(t.agent_id?.value) ?? 0) + 1);
  // Agents the master has that GET_AGENTS does not list (unreachable), and those it no longer has (a DOWN machine's).
  const away = [...model.drydockAgents.values()].filter((d) => !model.agents.has(d.agent_id?.value ?? ''));
  const gone = [...model.lastSeen.entries()];
  return h('div', { class: 'page' },
    section(`Agents (${agents.length})`, null, agents.length === 0 ? empty('No agents registered.') : table(['Agent', 'State', 'Machine', 'Tasks', 'CPUs', 'Mem', 'Drain', 'Waiting for', ''], agents.map((a) => {
      const id = a.agent_info?.id?.value ?? '';
      // Mesos' facts (resources, address) from GET_AGENTS; Drydock's (state, drain record, conditions) from its own view.
      const view = drydockAgent(model, a);
      const state = agentState(a, view);
      const total = scalars(a.total_resources);
      const used = scalars(a.allocated_resources);
      const drain = agentDrain(a, view);
      const rec = view?.drain;
      const waiting = drainWaits(rec);
      return h('tr', { 'data-agent-id': id, 'data-state': state },
        h('td', { class: 'nowrap' }, h('div', { class: 'host' }, h('a', { href: agentHref(id) }, a.agent_info?.hostname ?? '?')), h('div', { class: 'mono dim small', title: id }, `${shortId(id)} · ${agentIp(a) ?? '?'}:${a.agent_info?.port ?? ''}`)),
        h('td', { class: 'state' }, badge(state), pressureBadge(view, ui.now)),
        h('td', {}, badge(agentMode(model, a))),
        h('td', { class: 'num' }, String(running.get(id) ?? 0)),
        h('td', { class: 'num' }, `${num(used.cpus ?? 0)} / ${num(total.cpus ?? 0)}`),
        h('td', { class: 'num' }, `${num(used.mem ?? 0)} / ${num(total.mem ?? 0)}`),
        h('td', { class: 'drain-cell' }, drainCell(drain, rec, ui.now)),
        h('td', { class: 'wrap waiting' }, waitList(waiting, drain, ui.now)),
        h('td', { class: 'actions' }, agentButtons(a, view, ui)));
    }))),
    away.length === 0 ? null : section('Known to the master, not registered now', null, table(['Agent', 'Phase', 'State', 'Drain', ''], away.map((d) => h('tr', { 'data-agent-id': d.agent_id?.value, 'data-state': d.state },
      h('td', { class: 'host nowrap' }, h('a', { href: agentHref(d.agent_id?.value ?? '') }, d.hostname)),
      h('td', {}, badge(d.phase)), h('td', {}, badge(d.state), pressureBadge(d, ui.now)),
      h('td', { class: 'drain-cell' }, drainCell(d.drain, d.drain, ui.now)),
      h('td', { class: 'actions' }, agentButtons(undefined, d, ui)))))),
    gone.length === 0 ? null : section('Gone: no longer registered (as this page last saw them)', null, table(['Agent', 'Address', 'Why', 'When', 'Last state'], gone.map(([id, g]) => h('tr', { 'data-gone-agent': id },
      h('td', { class: 'host nowrap' }, h('a', { href: agentHref(id) }, g.view?.hostname ?? g.agent?.agent_info?.hostname ?? id)),
      h('td', { class: 'mono' }, `${g.view?.ip ?? agentIp(g.agent) ?? '?'}:${g.view?.port ?? g.agent?.agent_info?.port ?? ''}`),
      h('td', {}, g.reason), h('td', { class: 'nowrap' }, ago(g.atMs, ui.now)),
      h('td', {}, badge(g.view?.state ?? (g.agent ? agentState(g.agent, undefined) : 'UNKNOWN'))))))),
    model.recoveredAgents.length === 0 ? null : section('Recovered, not yet re-registered', null, table(['Hostname', 'Id'], model.recoveredAgents.map((r) => h('tr', {}, h('td', {}, r.hostname), h('td', { class: 'mono' }, r.id?.value))))));
}

/** A drain in a cell: its state, since when (ticking), max grace, when drained, tasks left. */
function drainCell(drain, rec, now) {
  if (drain === undefined) return h('span', { class: 'dim' }, '—');
  const grace = drain.config?.max_grace_period;
  return h('div', { class: 'drain' },
    badge(drain.state),
    h('div', { class: 'dim small' },
      rec?.started_time ? `since ${ago(nsToMs(rec.started_time), now)}` : '',
      grace ? ` · max grace ${fmtDuration(nsToMs(grace))}` : '',
      rec?.drained_time ? ` · drained ${ago(nsToMs(rec.drained_time), now)}` : '',
      rec && rec.state !== 'DRAINED' ? ` · ${rec.remaining_tasks} task${rec.remaining_tasks === 1 ? '' : 's'} left` : ''));
}

/** What a drain waits for, each line counted on to `now` (liveWaitText). */
function waitList(waiting, drain, now) {
  if (waiting.length === 0) return h('span', { class: 'dim' }, drain?.state === 'DRAINED' ? 'nothing: drained' : '—');
  return h('ul', { class: 'waits' }, waiting.map((w) => h('li', {}, h('span', { class: 'kind' }, w.kind), ' ', liveWaitText(w, now))));
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
        h('td', { class: 'mono' }, h('a', { href: taskHref(t.framework_id?.value ?? '', t.task_id?.value ?? '') }, t.task_id?.value)),
        h('td', {}, t.name ?? '—'),
        h('td', {}, names.get(t.framework_id?.value) ?? shortId(t.framework_id?.value ?? '')),
        h('td', { class: 'nowrap' }, h('a', { href: agentHref(t.agent_id?.value ?? '') }, hosts.get(t.agent_id?.value) ?? shortId(t.agent_id?.value ?? '—'))),
        h('td', {}, badge(t.state, last?.message)),
        h('td', {}, last?.timestamp ? ago(Number(last.timestamp) * 1000, ui.now) : '—'));
    }))));
}

// ---- Plans --------------------------------------------------------------------------------

function planTree(kind, owner, name, detail, status, ui, extra) {
  // Only the verbs the plan's state lets through (actions.js: as the master's verbs decide).
  const verbs = (phase) => {
    const can = planActions(kind, detail, status, phase);
    return h('span', { class: 'actions' },
      actionButton(can.continue, 'Continue', () => ui.actions.planVerb(kind, owner, name, 'continue', phase), 'small', { 'data-verb': 'continue' }),
      actionButton(can.interrupt, 'Interrupt', () => ui.actions.planVerb(kind, owner, name, 'interrupt', phase), 'small', { 'data-verb': 'interrupt' }));
  };
  return h('div', { class: 'plan', 'data-plan': name, 'data-kind': kind },
    h('div', { class: 'plan-head' }, h('span', { class: 'caret' }, '▾'), h('strong', {}, name), badge(status), extra ?? null, h('span', { class: 'dim small' }, detail?.strategy ? `strategy ${detail.strategy}` : ''), h('span', { class: 'grow' }), verbs(undefined)),
    detail === undefined ? h('div', { class: 'dim small indent' }, 'loading…') : h('ul', { class: 'phases' }, (detail.phases ?? []).map((ph) => h('li', { class: 'phase', 'data-phase': ph.name },
      h('div', { class: 'phase-head' }, h('span', { class: 'caret' }, '▾'), h('span', {}, ph.name), badge(ph.status), h('span', { class: 'dim small' }, ph.strategy ?? ''), h('span', { class: 'grow' }), verbs(ph.name)),
      h('ul', { class: 'steps' }, (ph.steps ?? []).map((s) => h('li', { class: 'step', 'data-step': `${ph.name}/${s.name}`, 'data-status': s.status },
        badge(s.status), h('span', { class: 'step-name' }, s.name), s.stage ? h('span', { class: 'dim small' }, s.stage) : null,
        h('span', { class: 'msg' }, s.waiting_for || (s.message ?? '').replace(/^step \S+ \[[^\]]*\] with status: \S+:? ?/, '')),
        hookOutput(s.hook))))))),
    (detail?.errors ?? []).length > 0 ? h('div', { class: 'errors' }, detail.errors.join('; ')) : null);
}

/** A maintenance step's hook run (`step.hook`: attempt, status, code, output tail), when it has one. */
function hookOutput(hook) {
  if (hook === undefined || hook === null) return null;
  const head = `hook ${hook.name ?? ''} attempt ${hook.attempt ?? '?'}: ${hook.status ?? '?'}${hook.code === null || hook.code === undefined ? '' : ` (exit ${hook.code})`}`;
  return h('details', { class: 'hook', 'data-hook-status': hook.status },
    h('summary', { class: 'dim small' }, head),
    h('pre', { class: 'out' }, typeof hook.output === 'string' && hook.output !== '' ? hook.output : '(no output)'));
}

export function plansView(model, ui) {
  const plans = [...model.plans.values()].sort((a, b) => a.name.localeCompare(b.name));
  const services = [...ui.services.values()];
  return h('div', { class: 'page' },
    section(`Maintenance plans (${plans.length})`, button('New plan…', () => ui.actions.createPlan(), 'small', { 'data-action': 'create-plan' }), plans.length === 0 ? empty('No maintenance plans. Create one with: drydock maintenance plan create FILE') : plans.map((p) => planTree('maintenance', undefined, p.name, p.detail, p.status, ui, planMachines(p) === undefined ? null : h('span', { class: 'dim small' }, `${planMachines(p)} machines`)))),
    section('Service schedulers', null, services.length === 0 ? empty('No framework advertises a service scheduler (FrameworkInfo.webui_url).') : services.map((s) => h('div', { class: 'service', 'data-service': s.frameworkId },
      h('div', { class: 'service-head' }, h('strong', {}, s.name), h('span', { class: 'mono dim small' }, s.url), s.live ? badge('LIVE') : badge('OFFLINE', s.error)),
      s.error ? h('div', { class: 'errors' }, s.error) : null,
      (s.plans ?? []).map((p) => planTree('service', s.frameworkId, p.name, p, p.status, ui))))));
}


// ---- Agent ---------------------------------------------------------------------------------

/** Key/value rows. */
function facts(rows) {
  return h('table', { class: 'facts' }, h('tbody', {}, rows.filter((r) => r !== null).map(([k, v]) => h('tr', {}, h('th', {}, k), h('td', {}, v ?? '—')))));
}

const bytes = (n) => (n === undefined || n === null ? '—' : n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(1)} GB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MB` : `${(n / 1024).toFixed(0)} KB`);

/** One agent: `#/agent/<id>`, from GET_AGENTS, Drydock's view, the tasks and what the events told. */
export function agentView(model, ui) {
  const id = ui.params[0] ?? '';
  const a = model.agents.get(id);
  const gone = model.lastSeen.get(id);
  const view = model.drydockAgents.get(id) ?? gone?.view;
  const agent = a ?? gone?.agent;
  if (agent === undefined && view === undefined) return h('div', { class: 'page' }, section('Agent', null, empty(`No agent ${id} is known to this page (an agent of a machine that went DOWN before the page opened is not).`)));
  const info = agent?.agent_info ?? {};
  const hostname = info.hostname ?? view?.hostname ?? '?';
  const state = gone !== undefined && a === undefined && model.drydockAgents.get(id) === undefined ? 'GONE' : agentState(agent, view);
  const total = agent?.total_resources ?? info.resources ?? [];
  const totals = scalars(total);
  const usage = agentUsage(model, id);
  const allocated = scalars(agent?.allocated_resources);
  const names = [...new Set([...Object.keys(totals), ...Object.keys(usage)])].sort((x, y) => ['cpus', 'mem', 'disk', 'gpus'].indexOf(x) - ['cpus', 'mem', 'disk', 'gpus'].indexOf(y));
  const m = view?.machine;
  const u = m?.unavailability;
  const winStart = nsToMs(u?.start);
  const winEnd = u?.duration === undefined || winStart === undefined ? undefined : winStart + nsToMs(u.duration);
  const p = diskPressure(view);
  const rec = view?.drain ?? agent?.drain_info;
  const tasks = agentTasks(model, id).sort((x, y) => Number(isTerminal(x.state)) - Number(isTerminal(y.state)));
  const fwName = (fid) => model.frameworks.get(fid)?.framework?.framework_info?.name ?? shortId(fid ?? '');
  // History: the times the data carries, then what the events said while this page was open.
  const hist = [];
  if (agent?.registered_time) hist.push({ atMs: nsToMs(agent.registered_time), change: 'REGISTERED', text: 'registered with the master' });
  if (agent?.reregistered_time) hist.push({ atMs: nsToMs(agent.reregistered_time), change: 'REREGISTERED', text: 're-registered' });
  if (view?.drain?.started_time) hist.push({ atMs: nsToMs(view.drain.started_time), change: 'DRAINING', text: 'drain started' });
  if (view?.drain?.refused?.time) hist.push({ atMs: nsToMs(view.drain.refused.time), change: 'DRAIN_REFUSED', text: view.drain.refused.reason ?? '' });
  if (view?.drain?.drained_time) hist.push({ atMs: nsToMs(view.drain.drained_time), change: 'DRAINED', text: 'drained' });
  if (p?.since) hist.push({ atMs: nsToMs(p.since), change: 'DISK_PRESSURE', text: `${p.reason}: ${p.message ?? ''}` });
  const seen = model.history.get(id) ?? [];
  const merged = [...hist, ...seen.filter((e) => !hist.some((x) => x.change === e.change && Math.abs(x.atMs - e.atMs) < 5000))].sort((x, y) => x.atMs - y.atMs);
  return h('div', { class: 'page', 'data-page': 'agent', 'data-agent-id': id },
    h('div', { class: 'title' }, h('h1', {}, hostname), badge(state), pressureBadge(view, ui.now), h('span', { class: 'grow' }), a === undefined && view === undefined ? null : h('span', { class: 'actions' }, agentButtons(a, view, ui))),
    h('div', { class: 'two' },
      section('Agent', null, facts([
        ['Id', h('span', { class: 'mono' }, id)],
        ['Address', h('span', { class: 'mono' }, `${view?.ip ?? agentIp(agent) ?? '?'}:${view?.port ?? info.port ?? ''}`)],
        ['State', h('span', { class: 'agent-state' }, badge(state), view?.phase ? h('span', { class: 'dim small' }, ` phase ${view.phase}`) : null, view ? h('span', { class: 'dim small' }, ` · ${view.connected ? 'connected' : 'not connected'} · ${view.active ? 'offered' : 'not offered'}${view.deactivated ? ' · deactivated' : ''}`) : null)],
        gone ? ['Gone', `${gone.reason}, ${ago(gone.atMs, ui.now)} (as last seen)`] : null,
        ['Machine', m ? h('span', {}, `${[m.id?.hostname, m.id?.ip].filter(Boolean).join(' / ')} `, m.mode ? badge(m.mode) : null) : '—'],
        ['Window', winStart === undefined ? '—' : `${fmtTime(winStart)} → ${winEnd === undefined ? 'open-ended' : fmtTime(winEnd)}`],
        ['Version', agent?.version],
        ['Registered', agent?.registered_time ? `${fmtTime(nsToMs(agent.registered_time))} (${ago(nsToMs(agent.registered_time), ui.now)})` : '—'],
        ['Attributes', attributes(info).length === 0 ? '—' : h('span', { class: 'attrs' }, attributes(info).map((x) => h('span', { class: 'chip mono' }, x)))],
        ['Capabilities', (agent?.capabilities ?? []).map((c) => c.type).join(', ') || '—'],
      ])),
      section('Resources', null, table(['Resource', 'Total', 'Used by its tasks', 'Allocated', 'Free'], [
        ...names.map((n) => h('tr', { 'data-resource': n },
          h('td', {}, n), h('td', { class: 'num' }, num(totals[n] ?? 0)), h('td', { class: 'num' }, num(usage[n] ?? 0)),
          h('td', { class: 'num' }, num(allocated[n] ?? 0)), h('td', { class: 'num' }, num((totals[n] ?? 0) - (usage[n] ?? 0))))),
        ranges(total, 'ports') ? h('tr', { 'data-resource': 'ports' }, h('td', {}, 'ports'), h('td', { class: 'mono', colspan: '4' }, ranges(total, 'ports'))) : null,
      ]))),
    p === undefined ? null : section('Disk pressure', badge('DISK PRESSURE'), facts([
      ['Reason', h('strong', {}, p.reason)], ['Detail', p.message], ['Path', h('span', { class: 'mono' }, p.path ?? '—')],
      ['Free', `${bytes(p.free_bytes)} of ${bytes(p.total_bytes)}${p.total_inodes ? ` · ${p.free_inodes} of ${p.total_inodes} inodes` : ''}`],
      ['Since', `${fmtTime(nsToMs(p.since))} (${ago(nsToMs(p.since), ui.now)}): its resources are not offered until it clears`],
    ])),
    section('Drain', null, rec === undefined ? empty('No drain.') : h('div', { class: 'drain-detail' },
      drainCell(rec, view?.drain, ui.now), waitList(drainWaits(view?.drain), rec, ui.now))),
    section(`Tasks (${tasks.length})`, null, tasks.length === 0 ? empty('No tasks on this agent.') : table(['Task', 'Name', 'Framework', 'State', 'CPUs', 'Mem', 'Updated'], tasks.map((t) => {
      const r = scalars(t.resources);
      const last = (t.statuses ?? []).at(-1);
      return h('tr', { 'data-task-id': t.task_id?.value, class: isTerminal(t.state) ? 'done' : '' },
        h('td', { class: 'mono' }, h('a', { href: taskHref(t.framework_id?.value ?? '', t.task_id?.value ?? '') }, t.task_id?.value)),
        h('td', {}, t.name ?? '—'), h('td', {}, fwName(t.framework_id?.value)), h('td', {}, badge(t.state, last?.message)),
        h('td', { class: 'num' }, num(r.cpus ?? 0)), h('td', { class: 'num' }, num(r.mem ?? 0)),
        h('td', { class: 'nowrap' }, last?.timestamp ? ago(Number(last.timestamp) * 1000, ui.now) : '—'));
    }))),
    section('History', h('span', { class: 'dim small' }, 'from the master\'s records, and the events since this page opened'), merged.length === 0 ? empty('Nothing recorded.') : table(['When', 'Change', 'Detail'], merged.slice().reverse().map((e) => h('tr', { 'data-change': e.change },
      h('td', { class: 'nowrap' }, `${fmtTime(e.atMs)} (${ago(e.atMs, ui.now)})`), h('td', {}, badge(e.change)), h('td', { class: 'wrap' }, e.text))))));
}

// ---- Task ----------------------------------------------------------------------------------

/** One task: `#/task/<framework id>/<task id>`: its statuses, its agent, its sandbox's stdout and stderr tails. */
export function taskView(model, ui) {
  const [fw = '', tid = ''] = ui.params;
  const t = findTask(model, fw, tid);
  if (t === undefined) return h('div', { class: 'page' }, section('Task', null, empty(`No task ${tid} of framework ${fw} is known to the master now (completed tasks are kept up to a limit).`)));
  const agentId = t.agent_id?.value ?? '';
  const a = model.agents.get(agentId) ?? model.lastSeen.get(agentId)?.agent;
  const view = model.drydockAgents.get(agentId);
  const r = scalars(t.resources);
  const grace = t.kill_policy?.grace_period;
  const statuses = (t.statuses ?? []).slice().reverse();
  const box = ui.sandbox(t);
  return h('div', { class: 'page', 'data-page': 'task', 'data-task-id': tid },
    h('div', { class: 'title' }, h('h1', { class: 'mono' }, tid), badge(t.state)),
    // One above the other: the status history's messages need the page's width at 1280 px.
    h('div', { class: 'stack' },
      section('Task', null, facts([
        ['Name', t.name], ['Framework', `${model.frameworks.get(fw)?.framework?.framework_info?.name ?? ''} (${shortId(fw)})`],
        ['Agent', agentId === '' ? '—' : h('a', { href: agentHref(agentId), 'data-agent-link': agentId }, a?.agent_info?.hostname ?? view?.hostname ?? shortId(agentId))],
        ['Resources', `cpus ${num(r.cpus ?? 0)} · mem ${num(r.mem ?? 0)} MB${r.disk ? ` · disk ${num(r.disk)} MB` : ''}${ranges(t.resources, 'ports') ? ` · ports ${ranges(t.resources, 'ports')}` : ''}`],
        ['Kill grace', grace ? fmtDuration(nsToMs(grace)) : 'default'],
        ['User', t.user],
      ])),
      section('Status history', null, statuses.length === 0 ? empty('No status yet.') : table(['When', 'State', 'Source · reason', 'Message'], statuses.map((st) => h('tr', { 'data-status': st.state },
        h('td', { class: 'nowrap' }, st.timestamp ? `${fmtTime(Number(st.timestamp) * 1000)} (${ago(Number(st.timestamp) * 1000, ui.now)})` : '—'),
        h('td', {}, badge(st.state)), h('td', { class: 'small' }, [st.source, st.reason].filter(Boolean).join(' · ') || '—'), h('td', { class: 'wrap' }, st.message ?? '')))))),
    ['stdout', 'stderr'].map((f) => section(`Sandbox ${f}`, h('span', { class: 'dim small' }, box.where ?? ''), h('div', { class: 'sandbox', 'data-file': f },
      box[f]?.error ? h('div', { class: 'errors' }, box[f].error, h('div', { class: 'dim' }, 'From a terminal: ', h('code', {}, `drydock task logs ${tid}${f === 'stderr' ? ' --stderr' : ''}`))) :
      box[f]?.data === undefined ? h('div', { class: 'dim small' }, 'reading…') :
      h('pre', { class: 'out' }, box[f].truncated ? `… (last ${bytes(box[f].data.length)} of ${bytes(box[f].size)})\n` : '', box[f].data === '' ? '(empty)' : box[f].data)))));
}

// ---- Preview (POST /drydock/v1/preview) ------------------------------------------------------

/** The impact an action would have: tasks by framework, pods losing their last instance, room. */
function impactBlock(impact) {
  if (impact === undefined) return null;
  const c = impact.capacity ?? {};
  return h('div', { class: 'impact' },
    h('div', {}, h('strong', {}, `${impact.tasks?.count ?? 0} task${impact.tasks?.count === 1 ? '' : 's'} killed`), impact.tasks?.hidden ? h('span', { class: 'dim' }, ` (${impact.tasks.hidden} you may not view)`) : null),
    h('ul', { class: 'plain' }, (impact.tasks?.frameworks ?? []).map((f) => h('li', {}, h('strong', {}, f.name || f.framework_id), ': ', f.tasks.map((x) => `${x.task_id} on ${x.hostname}`).join(', ')))),
    (impact.pods_losing_last_instance ?? []).length === 0 ? null : h('div', { class: 'warn', 'data-preview': 'last-instance' }, 'Losing their last running instance: ', impact.pods_losing_last_instance.map((p) => `${p.framework_name}/${p.pod_type} (${p.instances.join(', ')})`).join('; ')),
    h('div', { class: c.fits ? 'ok' : 'warn', 'data-preview': 'capacity', 'data-fits': String(c.fits === true) },
      c.fits ? `The other ${c.agents} active agent${c.agents === 1 ? ' has' : 's have'} room for what is displaced` : `Not enough room on the other ${c.agents ?? 0} active agents: ${(c.failing ?? []).join(', ')} fails`,
      (c.resources ?? []).length === 0 ? null : h('div', { class: 'dim small' }, c.resources.map((x) => `${x.name} needed ${num(x.needed)}, free ${num(x.free)}`).join(' · ')),
      (c.unplaced ?? []).map((x) => h('div', { class: 'small' }, `${x.what}: ${x.reason}`))));
}

/** A preview answer as the dialogs show it; `refused` first (then the action cannot be confirmed). */
export function previewBlock(p) {
  if (p === undefined) return h('div', { class: 'dim small' }, 'asking the master what this would do…');
  if (p.error !== undefined) return h('div', { class: 'errors', 'data-preview': 'error' }, `No preview: ${p.error}`);
  return h('div', { class: 'preview', 'data-preview': p.refused ? 'refused' : 'ok' },
    p.refused ? h('div', { class: 'errors', 'data-preview': 'refused' }, `The master would refuse this (${p.refused.status}): ${p.refused.message}`) : null,
    (p.warnings ?? []).map((w) => h('div', { class: 'warn' }, w)),
    (p.machines ?? []).length === 0 ? null : h('div', { class: 'small' }, p.machines.map((m) => `${m.hostname ?? ''}${m.ip ? `=${m.ip}` : ''}: ${m.mode ?? 'unknown'}, ${m.agents.length} agent${m.agents.length === 1 ? '' : 's'}`).join(' · ')),
    impactBlock(p.impact),
    p.plan === undefined ? null : h('div', { class: 'small' }, `Plan ${p.plan.name}: ${p.plan.strategy}, phases ${p.plan.phase_strategy}${p.plan.max_parallel ? `, max_parallel ${p.plan.max_parallel}` : ''}${p.plan.max_down ? `, max_down ${p.plan.max_down}` : ''}${p.plan.hook ? `, hook ${p.plan.hook}` : ''}`),
    (p.waves ?? []).length === 0 ? null : h('ol', { class: 'waves' }, p.waves.map((w) => h('li', { 'data-wave': String(w.wave) },
      h('strong', {}, w.machines.map((m) => m.hostname ?? m.ip).join(', ')), h('span', { class: 'dim small' }, ` (${w.phases.join(', ')})`), impactBlock(w.impact)))));
}

export const VIEWS = {
  cluster: { title: 'Cluster', render: clusterView },
  machines: { title: 'Machines', render: machinesView },
  agents: { title: 'Agents', render: agentsView },
  frameworks: { title: 'Frameworks & tasks', render: frameworksView },
  plans: { title: 'Plans', render: plansView },
  agent: { title: 'Agent', render: agentView, nav: 'agents' },
  task: { title: 'Task', render: taskView, nav: 'frameworks' },
};

// The console's shell: routing, the master's two event streams (Mesos' operator stream for
// agents, frameworks and tasks; Drydock's own, GET /drydock/v1/events, for each agent's state and
// drain record, machines' modes and maintenance plans), the follow-up reads events call for,
// service schedulers' plan streams, sign-in, and the actions behind their confirmation.
// No polling: everything after the first reads arrives on streams, and a stream that ends is
// opened again with backoff (a standby's 307 sends the page to `/`, i.e. to the leader).

import * as api from './api.js';
import { h } from './dom.js';
import { applyDrydockEvent, applyEvent, emptyModel, serviceUrl, setPlanDetail } from './model.js';
import { RecordIODecoder } from './recordio.js';
import { previewBlock, VIEWS } from './views.js';

const model = emptyModel();
/** frameworkId -> a service scheduler's plans: { frameworkId, name, url, plans, live, error, abort }. */
const services = new Map();
/** Each master stream's part of the connection line; the page is live when both are. */
const conns = { operator: { state: 'connecting', detail: '' }, drydock: { state: 'connecting', detail: '' } };
const $ = (id) => document.getElementById(id);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---- rendering --------------------------------------------------------------------------

let queued = false;
function render() {
  if (queued) return;
  queued = true;
  requestAnimationFrame(draw);
}

/** The page and its parameters: `#/agent/<id>` is ['agent', [id]]. */
function currentRoute() {
  const [r = '', ...rest] = location.hash.replace(/^#\/?/, '').split('/');
  ui.params = rest.map((x) => {
    try {
      return decodeURIComponent(x);
    } catch {
      return x;
    }
  });
  return Object.hasOwn(VIEWS, r) ? r : 'cluster';
}

const ui = { now: Date.now(), services, actions: {}, params: [], sandbox: (t) => sandboxOf(t) };

function draw() {
  queued = false;
  ui.now = Date.now();
  const route = currentRoute();
  const nav = VIEWS[route].nav ?? route;
  for (const a of document.querySelectorAll('nav a')) a.classList.toggle('active', a.dataset.route === nav);
  document.title = `${VIEWS[route].title} · Drydock`;
  const conn = Object.values(conns).find((c) => c.state !== 'live') ?? { state: 'live', detail: '' };
  $('conn').className = `conn c-${conn.state}`;
  $('conn-text').textContent = conn.state === 'live' ? 'live' : conn.detail ? `${conn.state}: ${conn.detail}` : conn.state;
  const leader = model.master?.master_info;
  $('leader').textContent = leader ? `leader ${leader.hostname ?? ''} (${leader.address?.ip ?? ''}:${leader.address?.port ?? leader.port ?? ''})` : '';
  const who = api.credentials();
  $('who').replaceChildren(who ? h('span', {}, who.principal, ' · ', h('a', { href: '#', onclick: (e) => { e.preventDefault(); api.signOut(); location.reload(); } }, 'sign out')) : '');
  const main = $('main');
  const scroll = window.scrollY;
  main.replaceChildren(VIEWS[route].render(model, ui));
  window.scrollTo(0, scroll);
}

let toastTimer;
function toast(text, kind = 'info') {
  const t = $('toast');
  t.textContent = text;
  t.className = `toast t-${kind}`;
  t.hidden = false;
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => (t.hidden = true), kind === 'error' ? 10_000 : 4_000);
}

// ---- sign-in ----------------------------------------------------------------------------

let signInWait;
/** Shows the sign-in form; resolves once the operator has submitted it. */
function needSignIn(message) {
  $('signin-msg').textContent = message;
  $('signin').hidden = false;
  const p = $('principal');
  p.value = api.credentials()?.principal ?? p.value;
  p.focus();
  signInWait ??= new Promise((resolve) => {
    $('signin-form').onsubmit = (e) => {
      e.preventDefault();
      api.signIn($('principal').value.trim(), $('secret').value);
      $('secret').value = '';
      $('signin').hidden = true;
      signInWait = undefined;
      resolve();
    };
  });
  return signInWait;
}

/** Where a refusal goes: 401 to the sign-in form, a standby's 307 to the leader, the rest to a toast. */
function failed(e, what) {
  if (e instanceof api.LeaderMoved) return goToLeader();
  if (e instanceof api.ApiError && e.status === 401) return void needSignIn(api.credentials() ? 'Those credentials were refused. Sign in again.' : 'This master requires credentials.');
  toast(`${what}: ${e instanceof api.ApiError ? `${e.status} ${e.message}` : e.message}`, 'error');
}

function goToLeader() {
  // `/` on a standby answers 307 to the leader's console; the hash keeps the page.
  location.replace(`/${location.hash}`);
}

// ---- reads an event calls for ------------------------------------------------------------

let scheduleReading = false;
let scheduleAgain = false;
async function readSchedule() {
  if (scheduleReading) {
    scheduleAgain = true;
    return;
  }
  scheduleReading = true;
  try {
    do {
      scheduleAgain = false;
      const [schedule, status] = await Promise.all([api.call({ type: 'GET_MAINTENANCE_SCHEDULE' }), api.call({ type: 'GET_MAINTENANCE_STATUS' })]);
      model.schedule = schedule?.get_maintenance_schedule?.schedule ?? {};
      model.status = status?.get_maintenance_status?.status ?? {};
      render();
    } while (scheduleAgain);
  } catch (e) {
    failed(e, 'maintenance schedule');
  } finally {
    scheduleReading = false;
  }
}

const planTimers = new Map();
/** A plan's phases and steps, read once events about it have settled for 200 ms. */
function readPlan(name) {
  clearTimeout(planTimers.get(name));
  planTimers.set(name, setTimeout(async () => {
    planTimers.delete(name);
    try {
      const detail = await api.getJson(`/v1/maintenance/plans/${encodeURIComponent(name)}`);
      setPlanDetail(model, name, detail);
    } catch (e) {
      if (e instanceof api.ApiError && e.status === 404) setPlanDetail(model, name, undefined);
      else failed(e, `maintenance plan ${name}`);
    }
    render();
  }, 200));
}

async function readInitial() {
  try {
    const master = await api.call({ type: 'GET_MASTER' });
    model.master = master?.get_master;
    render();
  } catch (e) {
    failed(e, 'master');
  }
  await readMaintenance();
}

/** The schedule, the status and every maintenance plan: what Drydock's stream announces changes of. */
async function readMaintenance() {
  void readSchedule();
  try {
    const names = await api.getJson('/v1/maintenance/plans');
    for (const name of [...model.plans.keys()]) if (!names.includes(name)) model.plans.delete(name);
    for (const name of names) {
      if (!model.plans.has(name)) model.plans.set(name, { name, status: 'PENDING', machines: undefined, detail: undefined });
      readPlan(name);
    }
  } catch (e) {
    failed(e, 'maintenance plans');
  }
}

function runEffects(effects) {
  for (const e of effects) {
    if (e.kind === 'INITIAL') void readInitial();
    else if (e.kind === 'MAINTENANCE') void readMaintenance();
    else if (e.kind === 'SCHEDULE') void readSchedule();
    else if (e.kind === 'PLAN') readPlan(e.name);
  }
}

// ---- the master's event streams ----------------------------------------------------------------

/** Mesos' operator stream: agents, frameworks and tasks (SUBSCRIBED with the state, then events). */
const OPERATOR_STREAM = {
  conn: conns.operator,
  open: (signal) => api.request('/api/v1', { method: 'POST', body: JSON.stringify({ type: 'SUBSCRIBE' }), headers: { 'Content-Type': 'application/json', Accept: 'application/json' }, signal }),
  first: 'SUBSCRIBED',
  onRecord(event) {
    const effects = applyEvent(model, event, Date.now());
    if (event.type.startsWith('FRAMEWORK_') || event.type === 'SUBSCRIBED') syncServices();
    return effects;
  },
  onDown() {
    model.subscribed = false;
  },
};

/** Drydock's own stream: each agent's state, machine and drain record, machines' modes, plans. */
const DRYDOCK_STREAM = {
  conn: conns.drydock,
  open: (signal) => api.request('/drydock/v1/events', { headers: { Accept: 'application/recordio' }, signal }),
  first: 'SNAPSHOT',
  onRecord: (event) => applyDrydockEvent(model, event, Date.now()),
  onDown() {
    model.drydockSubscribed = false;
  },
};

/**
 * Keeps one of the master's streams open: each record to the stream's `onRecord` (whose follow-up
 * reads are run), opened again with backoff when it ends. A 401 asks for sign-in (the page's one
 * form, shared by both streams), a 403 shows the master's message, a standby's 307 sends the
 * page to the leader, and a leader gone for good sends it to a standby it named.
 */
async function streamLoop(stream) {
  const conn = stream.conn;
  let backoffMs = 500;
  let unreachable = 0;
  for (;;) {
    const abort = new AbortController();
    let watchdog;
    // No record for three heartbeats: the connection is dead even if no error says so.
    const arm = () => {
      clearTimeout(watchdog);
      watchdog = setTimeout(() => abort.abort(new Error('no heartbeat')), model.heartbeatIntervalSeconds * 3000 + 5000);
    };
    try {
      const res = await stream.open(abort.signal);
      arm();
      unreachable = 0;
      await api.readRecords(res, new RecordIODecoder(), (event) => {
        arm();
        const effects = stream.onRecord(event);
        if (event.type === stream.first) {
          backoffMs = 500;
          conn.state = 'live';
          conn.detail = '';
        }
        runEffects(effects);
        if (event.type !== 'HEARTBEAT') render();
      });
      conn.detail = 'the stream ended';
    } catch (e) {
      if (e instanceof api.LeaderMoved) return goToLeader();
      if (e instanceof api.ApiError && e.status === 401) {
        conn.state = 'signed out';
        conn.detail = '';
        render();
        await needSignIn(api.credentials() ? 'Those credentials were refused. Sign in again.' : 'This master requires credentials.');
        backoffMs = 500;
        continue;
      }
      if (e instanceof api.ApiError && e.status === 403) {
        conn.state = 'forbidden';
        conn.detail = e.message;
        render();
        await needSignIn(`Forbidden: ${e.message}`);
        continue;
      }
      if (!(e instanceof api.ApiError)) unreachable++;
      conn.detail = e instanceof api.ApiError ? `${e.status} ${e.message}` : abort.signal.aborted ? 'no heartbeat' : 'master unreachable';
    } finally {
      clearTimeout(watchdog);
    }
    stream.onDown();
    conn.state = 'reconnecting';
    render();
    // The leader itself is gone: a standby it named redirects to whoever leads now.
    const standby = model.master?.standby_masters?.[0]?.address;
    if (unreachable >= 5 && standby !== undefined) {
      location.replace(`//${standby.ip}:${standby.port}/${location.hash}`);
      return;
    }
    await sleep(backoffMs);
    backoffMs = Math.min(backoffMs * 2, 15_000);
  }
}

// ---- service schedulers' plans ---------------------------------------------------------------

/** One stream per framework that names a service scheduler (webui_url) and is not removed. */
function syncServices() {
  const want = new Map();
  for (const [id, f] of model.frameworks) {
    const url = serviceUrl(f);
    if (url !== undefined && !f.removed) want.set(id, { url, name: f.framework.framework_info?.name ?? id });
  }
  for (const [id, s] of services) {
    if (want.get(id)?.url !== s.url) {
      s.abort.abort();
      services.delete(id);
    }
  }
  for (const [id, w] of want) {
    if (services.has(id)) continue;
    const s = { frameworkId: id, name: w.name, url: w.url, plans: [], live: false, error: undefined, abort: new AbortController() };
    services.set(id, s);
    void serviceLoop(s);
  }
}

async function serviceLoop(s) {
  let backoffMs = 1000;
  while (!s.abort.signal.aborted) {
    try {
      const res = await api.request(`${s.url}/v1/plans/stream`, { external: true, signal: s.abort.signal, headers: { Accept: 'application/recordio' } });
      s.live = true;
      s.error = undefined;
      render();
      await api.readRecords(res, new RecordIODecoder(), (rec) => {
        backoffMs = 1000;
        if (rec.type === 'PLANS') {
          s.plans = rec.plans ?? [];
          render();
        }
      });
      s.error = 'the plan stream ended';
    } catch (e) {
      if (s.abort.signal.aborted) return;
      s.error = e instanceof api.ApiError && e.status === 401 ? `${s.url} refused the credentials (401): sign in with a principal of the scheduler's --credentials` : `cannot reach ${s.url}: ${e.message}`;
    }
    s.live = false;
    render();
    await sleep(backoffMs);
    backoffMs = Math.min(backoffMs * 2, 30_000);
  }
}

// ---- actions ------------------------------------------------------------------------------

/**
 * The confirmation dialog; resolves with the input's value (or true), or undefined when cancelled.
 * `preview(text)`: POST /drydock/v1/preview's answer for the action (with `textarea`, for its
 * text, asked again as it changes): shown before the operator confirms; when the master would
 * refuse the action, its reason is shown and there is no confirm button.
 */
function confirmDialog({ title, text, input, textarea, confirm, danger, preview }) {
  const dlg = $('confirm');
  $('confirm-title').textContent = title;
  $('confirm-text').textContent = text;
  const field = $('confirm-input-row');
  field.hidden = input === undefined;
  if (input !== undefined) {
    $('confirm-input-label').textContent = input.label;
    $('confirm-input').value = input.value ?? '';
    $('confirm-input').placeholder = input.placeholder ?? '';
  }
  const area = $('confirm-textarea');
  $('confirm-textarea-row').hidden = textarea === undefined;
  if (textarea !== undefined) area.value = textarea.value ?? '';
  const ok = $('confirm-ok');
  ok.textContent = confirm;
  ok.className = `btn ${danger ? 'danger' : 'primary'}`;
  const box = $('confirm-preview');
  box.hidden = preview === undefined;
  let asked = 0;
  const ask = async () => {
    if (preview === undefined) return;
    const n = ++asked;
    ok.hidden = true;
    box.replaceChildren(previewBlock(undefined));
    let answer;
    try {
      answer = await preview(textarea === undefined ? undefined : area.value);
    } catch (e) {
      answer = { error: e instanceof api.ApiError ? `${e.status} ${e.message}` : e.message };
    }
    if (n !== asked) return;
    box.replaceChildren(previewBlock(answer));
    // Refused: no confirm. A preview that could not be had (its own 403, say) leaves the choice to the operator.
    ok.hidden = answer?.refused !== undefined;
  };
  let debounce;
  area.oninput = () => {
    clearTimeout(debounce);
    ok.hidden = true;
    debounce = setTimeout(() => void ask(), 500);
  };
  ok.hidden = false;
  return new Promise((resolve) => {
    const done = (v) => {
      asked++;
      dlg.close();
      resolve(v);
    };
    ok.onclick = () => done(textarea !== undefined ? area.value : input === undefined ? true : $('confirm-input').value.trim());
    $('confirm-cancel').onclick = () => done(undefined);
    dlg.oncancel = () => {
      asked++;
      resolve(undefined);
    };
    dlg.showModal();
    void ask();
  });
}

/** The impact preview of one action (POST /drydock/v1/preview): nothing changes. */
function preview(body) {
  return api.postJson('/drydock/v1/preview', { body: JSON.stringify(body), headers: { 'Content-Type': 'application/json', Accept: 'application/json' } });
}

async function act(what, run) {
  try {
    await run();
    toast(`${what}: done`);
  } catch (e) {
    failed(e, what);
  }
}

const agentName = (a) => `${a.agent_info?.hostname ?? '?'} (${a.agent_info?.id?.value ?? '?'})`;
const agentId = (a) => ({ value: a.agent_info?.id?.value });
const machineText = (id) => [id.hostname, id.ip].filter(Boolean).join(' / ');

ui.actions = {
  async drain(a) {
    const grace = await confirmDialog({
      title: 'Drain agent',
      text: `Drain ${agentName(a)}: it gets no new tasks, and every task on it is killed (SIGTERM, then SIGKILL after its grace period). The drain record says what it waits for until the agent is DRAINED.`,
      input: { label: 'Max grace period', placeholder: 'e.g. 30secs (empty: each task\'s own)' },
      confirm: 'Drain',
      danger: true,
      preview: () => preview({ drain_agent: { agent_id: agentId(a) } }),
    });
    if (grace === undefined) return;
    await act(`drain ${a.agent_info?.hostname}`, () => api.call({ type: 'DRAIN_AGENT', drain_agent: { agent_id: agentId(a), ...(grace === '' ? {} : { max_grace_period: grace }) } }));
  },
  async deactivate(a) {
    if (!(await confirmDialog({ title: 'Deactivate agent', text: `Deactivate ${agentName(a)}: no new offers for it; its tasks keep running.`, confirm: 'Deactivate', danger: true }))) return;
    await act(`deactivate ${a.agent_info?.hostname}`, () => api.call({ type: 'DEACTIVATE_AGENT', deactivate_agent: { agent_id: agentId(a) } }));
  },
  async reactivate(a) {
    if (!(await confirmDialog({ title: 'Reactivate agent', text: `Reactivate ${agentName(a)}: its resources are offered again (this also clears a DRAINED agent's drain record).`, confirm: 'Reactivate' }))) return;
    await act(`reactivate ${a.agent_info?.hostname}`, () => api.call({ type: 'REACTIVATE_AGENT', reactivate_agent: { agent_id: agentId(a) } }));
  },
  async machineDown(id) {
    if (!(await confirmDialog({ title: 'Machine down', text: `Take ${machineText(id)} DOWN (START_MAINTENANCE): its agents are shut down and their tasks are lost.`, confirm: 'Down', danger: true, preview: () => preview({ start_maintenance: { machines: [id] } }) }))) return;
    await act(`down ${machineText(id)}`, () => api.call({ type: 'START_MAINTENANCE', start_maintenance: { machines: [id] } }));
  },
  async machineUp(id) {
    if (!(await confirmDialog({ title: 'Machine up', text: `Bring ${machineText(id)} UP (STOP_MAINTENANCE): its agents may register again, and it leaves the schedule.`, confirm: 'Up' }))) return;
    await act(`up ${machineText(id)}`, () => api.call({ type: 'STOP_MAINTENANCE', stop_maintenance: { machines: [id] } }));
  },
  async createPlan() {
    const spec = await confirmDialog({
      title: 'New maintenance plan',
      text: 'The plan\'s spec, YAML or JSON (docs/maintenance.md). The preview shows its waves and what each takes out before it is created.',
      textarea: { value: 'name: \nmachines:\n  hostnames: []\nwindow: 1hrs\nphase_strategy: canary\n' },
      confirm: 'Create',
      preview: (text) => preview({ maintenance_plan: text }),
    });
    if (spec === undefined) return;
    await act('create maintenance plan', () => api.postJson('/v1/maintenance/plans', { body: spec }));
  },
  async planVerb(kind, owner, name, verb, phase) {
    const target = phase === undefined ? `plan ${name}` : `phase ${phase} of plan ${name}`;
    const text = verb === 'continue' ? `Continue ${target}: held and interrupted steps go on.` : `Interrupt ${target}: no new step starts; steps under way finish.`;
    if (!(await confirmDialog({ title: `${verb === 'continue' ? 'Continue' : 'Interrupt'} ${kind} plan`, text, confirm: verb === 'continue' ? 'Continue' : 'Interrupt', danger: verb === 'interrupt' }))) return;
    const q = phase === undefined ? '' : `?phase=${encodeURIComponent(phase)}`;
    if (kind === 'maintenance') {
      await act(`${verb} ${target}`, () => api.postJson(`/v1/maintenance/plans/${encodeURIComponent(name)}/${verb}${q}`));
    } else {
      const s = services.get(owner);
      if (s === undefined) return;
      await act(`${verb} ${target}`, () => api.postJson(`${s.url}/v1/plans/${encodeURIComponent(name)}/${verb}${q}`, { external: true }));
    }
  },
};

// ---- sandbox output (the task page) ---------------------------------------------------------

/** Bytes of each file's tail the task page shows. */
const TAIL_BYTES = 16 * 1024;
/** `frameworkId/taskId` -> { where, stdout, stderr }: what the task page shows of the sandbox. */
const sandboxes = new Map();
let reader;
let readerReady;
const pendingReads = new Map();
let readSeq = 0;

/**
 * The sandbox reader frame (console/sandbox.html): agents' `/files/read` are read there, as
 * JSONP from the agent's own address, as Mesos' web UI reads them; the agent's script runs in
 * that frame's opaque origin, never in this page, and no credentials are sent to agents.
 */
function sandboxReader() {
  if (reader !== undefined) return readerReady;
  reader = document.createElement('iframe');
  reader.hidden = true;
  reader.setAttribute('sandbox', 'allow-scripts');
  reader.src = '/console/sandbox.html';
  readerReady = new Promise((resolve) => {
    window.addEventListener('message', (e) => {
      if (e.source !== reader.contentWindow || e.data === null || typeof e.data !== 'object') return;
      if (e.data.ready === true) return resolve();
      const p = pendingReads.get(e.data.id);
      if (p === undefined) return;
      pendingReads.delete(e.data.id);
      p(e.data);
    });
  });
  document.body.append(reader);
  return readerReady;
}

async function readAgentFile(base, path, offset, length) {
  await sandboxReader();
  const id = ++readSeq;
  const q = new URLSearchParams({ path, offset: String(offset), ...(length === undefined ? {} : { length: String(length) }) });
  return new Promise((resolve) => {
    pendingReads.set(id, resolve);
    reader.contentWindow.postMessage({ id, url: `${base}/files/read?${q}`, origin: location.origin }, '*');
  });
}

/** The task page's sandbox state for a task, read once per visit (its agent's address from the master). */
function sandboxOf(t) {
  const fw = t.framework_id?.value ?? '';
  const tid = t.task_id?.value ?? '';
  const key = `${fw}/${tid}`;
  let box = sandboxes.get(key);
  if (box !== undefined) return box;
  const aid = t.agent_id?.value ?? '';
  const v = model.drydockAgents.get(aid);
  const a = model.agents.get(aid);
  const pid = /@([^:]+):(\d+)$/.exec(a?.pid ?? '');
  const host = v?.ip ?? pid?.[1];
  const port = v?.port ?? pid?.[2];
  box = { where: host === undefined ? 'agent address unknown' : `${location.protocol}//${host}:${port} /files/read` };
  sandboxes.set(key, box);
  if (host === undefined) {
    box.stdout = box.stderr = { error: 'The master does not say where this task\'s agent is (it is gone).' };
    return box;
  }
  const base = `${location.protocol}//${host}:${port}`;
  for (const f of ['stdout', 'stderr']) {
    void (async () => {
      const path = `/frameworks/${fw}/executors/${tid}/runs/latest/${f}`;
      const size = await readAgentFile(base, path, -1);
      const sz = Number(size.offset);
      const tail = size.error === undefined ? await readAgentFile(base, path, Math.max(0, sz - TAIL_BYTES), TAIL_BYTES) : size;
      box[f] = tail.error !== undefined
        ? { error: `The agent at ${host}:${port} did not give this browser the sandbox file (${tail.error}): it requires authentication, refuses access_sandboxes to anonymous readers, no longer has the sandbox, or cannot be reached from here. The console sends no credentials to agents.` }
        : { data: tail.data, size: sz, truncated: sz > TAIL_BYTES };
      render();
    })();
  }
  return box;
}

// Leaving a task page forgets what it read: coming back reads the tails again.
window.addEventListener('hashchange', () => {
  if (!location.hash.startsWith('#/task/')) sandboxes.clear();
});

// ---- start ------------------------------------------------------------------------------

window.addEventListener('hashchange', render);
// Every "ago", "since" and grace figure is computed from the data's timestamps at draw time:
// one redraw a second keeps them ticking (a redraw, not a fetch).
setInterval(render, 1_000);
render();
void streamLoop(OPERATOR_STREAM);
void streamLoop(DRYDOCK_STREAM);

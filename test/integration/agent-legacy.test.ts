/**
 * The agent's Mesos legacy endpoints and its sandboxes, as Mesos' web UI and tools read them,
 * against a real master and two real agents with a framework's tasks:
 *
 * - `/slave(1)/state` (and `/state`): every field the web UI's agent, framework, executor and
 *   browse pages read, with its JSON type; the `pid` the master reports for the agent names the
 *   process (`slave(1)`) and port the UI calls; each executor's `directory` is its task's
 *   sandbox on disk; live and completed executors and frameworks; a drain's config and start;
 * - `/monitor/statistics`, `/flags`, `/slave(1)/health`, `/metrics/snapshot`: shapes; JSONP on
 *   every JSON GET (`text/javascript`, the same JSON inside), a callback that is no JavaScript
 *   name refused with 400; another method than GET: 405;
 * - the files API over a sandbox by its `directory` and by `/frameworks/<f>/executors/<e>/runs/latest`:
 *   browse, read (offset -1 answers the size, length -1 to the end, bounded at 64 KiB, an
 *   offset past the end), download (the bytes on disk), debug; v1 LIST_FILES and READ_FILE;
 * - traversal, all refused with a 4xx and nothing read: `..` (plain and `%2e%2e`), an absolute
 *   path elsewhere, the work dir above the sandboxes, a symlink in a sandbox to /etc/passwd and
 *   one to another task's sandbox, a FIFO (never opened for reading), a path of another agent's
 *   sandbox.
 * The ACLs (access_sandboxes, view_tasks, the filtered /state) are in the second test.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { userInfo } from 'node:os';
import { parseJson, stringifyJson } from '../../shared/json.js';
import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import { clientTransport, PLAIN_TRANSPORT, type ClientTransport } from '../../io/transport.js';
import { callApi, eventually, fileWithMode, startAgent, startMaster, tempDir, type AgentHandle, EVENT_DEADLINE_MS } from '../helpers/daemons.js';
import { labelledTask } from '../helpers/tasks.js';

type Json = Record<string, unknown>;
type Status = { task_id: { value: string }; agent_id?: unknown; state: string; uuid?: string; message?: string };
type Offer = { id: { value: string }; agent_id: { value: string } };

const statusOf = (e: SchedulerEvent): Status | undefined => (e.type === 'UPDATE' ? (e['update'] as { status: Status }).status : undefined);
const offersOf = (e: SchedulerEvent): Offer[] => (e.type === 'OFFERS' ? (e['offers'] as { offers: Offer[] }).offers : []);

/** An HTTP GET as `who`, its text and what it parses to (JSON, or the JSON inside a JSONP callback). */
async function get(url: string, who: ClientTransport = PLAIN_TRANSPORT, method = 'GET'): Promise<{ status: number; type: string | null; text: string; json: unknown; headers: Headers }> {
  const res = await who.fetch(url, { method, headers: who.headers, signal: AbortSignal.timeout(10_000) });
  const text = await res.text();
  let json: unknown;
  try {
    const inner = /^[A-Za-z_$][\w$.]*\(([\s\S]*)\);$/.exec(text)?.[1] ?? text;
    json = inner === '' ? undefined : parseJson(inner);
  } catch {
    json = undefined;
  }
  return { status: res.status, type: res.headers.get('content-type'), text, json, headers: res.headers };
}

function task(id: string, agentId: string, cmd: string): Json {
  return labelledTask(id, agentId, cmd) as Json;
}

/** Launches `tasks` on an offer of `agentId` not used yet; the rest of that offer is refused for an hour. */
async function launch(s: SchedulerClient, agentId: string, used: Set<string>, tasks: Json[]): Promise<void> {
  const offer = await eventually(() => s.received.flatMap(offersOf).find((o) => o.agent_id.value === agentId && !used.has(o.id.value)), EVENT_DEADLINE_MS, 50, `an offer of ${agentId}`);
  used.add(offer.id.value);
  const r = await s.call('ACCEPT', { offer_ids: [offer.id], operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: 3600 } });
  assert.equal(r.status, 202, r.text);
}

/** Acknowledges a task's updates until one in `until` (acknowledged too unless `keep`); returns it. */
async function follow(s: SchedulerClient, id: string, until: readonly string[], keep = false): Promise<Status> {
  for (let i = 0; i < 8; i++) {
    const st = statusOf(await s.next((x) => statusOf(x)?.task_id.value === id, 15_000, `an update of ${id}`)) as Status;
    const last = until.includes(st.state);
    if (st.uuid !== undefined && !(last && keep)) {
      const ack = await s.call('ACKNOWLEDGE', { agent_id: st.agent_id, task_id: st.task_id, uuid: st.uuid });
      assert.equal(ack.status, 202, ack.text);
    }
    if (last) return st;
  }
  assert.fail(`${id} never reached ${until.join(' or ')}`);
}

/** Asserts a JSON value's field types: `{field: 'string' | 'number' | 'boolean' | 'object' | 'array'}`, each present. */
function hasFields(what: string, o: unknown, fields: Readonly<Record<string, 'string' | 'number' | 'boolean' | 'object' | 'array'>>): void {
  assert.ok(typeof o === 'object' && o !== null && !Array.isArray(o), `${what} is an object`);
  for (const [k, type] of Object.entries(fields)) {
    const v: unknown = (o as Json)[k];
    const actual: string = Array.isArray(v) ? 'array' : v === null ? 'null' : typeof v === 'bigint' ? 'number' : typeof v;
    assert.equal(actual, type, `${what}.${k}: ${JSON.stringify(v)}`);
  }
}

const RESOURCES = { cpus: 'number', gpus: 'number', mem: 'number', disk: 'number' } as const;

test("the agent's legacy endpoints and sandboxes, as Mesos' web UI reads them; traversal refused", { timeout: 180_000 }, async (t) => {
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const [a, b] = await Promise.all([
    startAgent(t, { master: m.address, ip: '127.0.0.2', hostname: 'legacy-a', resources: 'cpus:2;mem:1024;disk:100', flags: ['--attributes=rack:r1'], stopSignal: 'SIGUSR1' }),
    startAgent(t, { master: m.address, ip: '127.0.0.3', hostname: 'legacy-b', resources: 'cpus:2;mem:1024;disk:100', stopSignal: 'SIGUSR1' }),
  ]);
  const aId = a.agentId as string;
  const bId = b.agentId as string;
  const s = await SchedulerClient.subscribe(m.address, { user: userInfo().username, name: 'legacy', checkpoint: true, failover_timeout: 60 });
  t.after(() => s.close());
  const fw = s.frameworkId;
  const used = new Set<string>();
  // `runs` leaves a sandbox full of traps and stays; `done` ends; `b-task` runs on the other agent.
  const traps = [
    "printf 'line1\\nline2\\n'",
    "printf 'err\\n' >&2",
    'seq 1 20000 > big',
    'ln -s /etc/passwd leak',
    'ln -s stdout out-link',
    'ln -s ../done other',
    'mkfifo pipe',
    'mkdir sub',
    'echo inner > sub/inner',
    'exec sleep 120',
  ].join('; ');
  await launch(s, aId, used, [task('runs', aId, traps), task('done', aId, 'echo done-out')]);
  await follow(s, 'runs', ['TASK_RUNNING']);
  await follow(s, 'done', ['TASK_FINISHED']);
  await launch(s, bId, used, [task('b-task', bId, 'echo secret-of-b > mine; exec sleep 120')]);
  await follow(s, 'b-task', ['TASK_RUNNING']);

  // ---- /state ----
  const latest = (id: string): string => `/frameworks/${fw}/executors/${id}/runs/latest`;
  // The sandbox is ready once its last trap is there (the command runs on after TASK_RUNNING).
  await eventually(async () => ((await get(`${a.url}/files/browse?path=${latest('runs')}/sub`)).text.includes('inner') ? true : undefined), EVENT_DEADLINE_MS, 50, "runs' sandbox");
  const state = await get(`${a.url}/slave(1)/state`);
  assert.equal(state.status, 200, state.text);
  assert.equal(state.type, 'application/json');
  const st = state.json as Json;
  hasFields('state', st, {
    version: 'string', build_date: 'string', build_user: 'string', start_time: 'number', id: 'string', pid: 'string', hostname: 'string', capabilities: 'array',
    resources: 'object', reserved_resources: 'object', unreserved_resources: 'object', reserved_resources_full: 'object', unreserved_resources_full: 'array',
    reserved_resources_allocated: 'object', unreserved_resources_allocated: 'object', resource_providers: 'array', attributes: 'object', flags: 'object',
    frameworks: 'array', completed_frameworks: 'array',
  });
  hasFields('state.resources', st['resources'], RESOURCES);
  assert.deepEqual(st['attributes'], { rack: 'r1' });
  assert.equal(st['id'], aId);
  assert.equal(st['hostname'], 'legacy-a');
  assert.equal((st['flags'] as Json)['work_dir'], a.workDir);
  const bare = (await get(`${a.url}/state`)).json as Json;
  assert.deepEqual(Object.keys(bare), Object.keys(st), '/state is /slave(1)/state');
  assert.deepEqual([bare['id'], bare['pid'], bare['frameworks']], [st['id'], st['pid'], st['frameworks']]);
  // The web UI calls //<hostname>:<port from the pid>/<process id from the pid>/state: the master's pid for this agent says slave(1) and this port.
  const agents = (await callApi(m.url, { type: 'GET_AGENTS' })).json as { get_agents: { agents: Array<{ agent_info: { id: { value: string } }; pid: string }> } };
  const pid = agents.get_agents.agents.find((x) => x.agent_info.id.value === aId)?.pid ?? '';
  assert.equal(pid, st['pid']);
  assert.equal(pid.slice(0, pid.indexOf('@')), 'slave(1)');
  assert.equal(Number(pid.slice(pid.lastIndexOf(':') + 1)), a.port);

  const frameworks = st['frameworks'] as Json[];
  assert.equal(frameworks.length, 1);
  const f = frameworks[0] as Json;
  hasFields('framework', f, { id: 'string', name: 'string', user: 'string', failover_timeout: 'number', checkpoint: 'boolean', hostname: 'string', role: 'string', executors: 'array', completed_executors: 'array' });
  assert.equal(f['id'], fw);
  const executors = f['executors'] as Json[];
  const runs = executors.find((e) => e['id'] === 'runs') as Json;
  hasFields('executor', runs, { id: 'string', name: 'string', source: 'string', container: 'string', directory: 'string', resources: 'object', role: 'string', labels: 'array', tasks: 'array', queued_tasks: 'array', completed_tasks: 'array' });
  hasFields('executor.resources', runs['resources'], RESOURCES);
  assert.equal((runs['resources'] as Json)['cpus'], 0.1, 'a live executor holds its task\'s resources');
  assert.match(runs['name'] as string, /^Command Executor \(Task: runs\) \(Command: sh -c '/);
  const dirRuns = runs['directory'] as string;
  assert.ok(dirRuns.startsWith(join(a.workDir, 'sandboxes')), dirRuns);
  assert.equal(readFileSync(join(dirRuns, 'stdout'), 'utf8'), 'line1\nline2\n', "the directory is the task's sandbox on disk");
  const runsTask = (runs['tasks'] as Json[])[0] as Json;
  hasFields('task', runsTask, { id: 'string', name: 'string', framework_id: 'string', executor_id: 'string', slave_id: 'string', state: 'string', resources: 'object', role: 'string', statuses: 'array', labels: 'array' });
  assert.equal(runsTask['state'], 'TASK_RUNNING');
  assert.equal(runsTask['slave_id'], aId);
  hasFields('task.statuses[0]', (runsTask['statuses'] as Json[])[0], { state: 'string', timestamp: 'number' });
  // `done` ended and was acknowledged: a completed executor, its task among its completed tasks.
  const done = (f['completed_executors'] as Json[]).find((e) => e['id'] === 'done') as Json;
  assert.deepEqual(done['tasks'], []);
  assert.equal(((done['completed_tasks'] as Json[])[0] as Json)['state'], 'TASK_FINISHED');
  const dirDone = done['directory'] as string;
  const dirB = (((((await get(`${b.url}/state`)).json as Json)['frameworks'] as Json[])[0] as Json)['executors'] as Json[])[0]?.['directory'] as string;
  assert.ok(dirB.includes('b-task'), dirB);

  // ---- /monitor/statistics, /flags, health, snapshot ----
  const stats = await get(`${a.url}/slave(1)/monitor/statistics`);
  assert.equal(stats.status, 200, stats.text);
  const entry = (stats.json as Json[]).find((e) => e['executor_id'] === 'runs') as Json;
  hasFields('statistics entry', entry, { executor_id: 'string', executor_name: 'string', framework_id: 'string', source: 'string', statistics: 'object' });
  hasFields('statistics', entry['statistics'], { timestamp: 'number', cpus_user_time_secs: 'number', cpus_system_time_secs: 'number', cpus_limit: 'number', mem_rss_bytes: 'number', mem_limit_bytes: 'number' });
  assert.equal((entry['statistics'] as Json)['mem_limit_bytes'], 16 * 1024 * 1024);
  assert.equal((stats.json as Json[]).some((e) => e['executor_id'] === 'done'), false, 'only running executors are measured');
  const flags = await get(`${a.url}/slave(1)/flags`);
  assert.equal((flags.json as { flags: Json }).flags['hostname'], 'legacy-a');
  const health = await get(`${a.url}/slave(1)/health`);
  assert.deepEqual([health.status, health.text], [200, '']);

  // ---- JSONP on every JSON GET; a callback that is no JavaScript name is a 400 ----
  const jsonGets = ['/slave(1)/state', '/state', '/slave(1)/flags', '/flags', '/slave(1)/monitor/statistics', '/monitor/statistics', '/metrics/snapshot',
    `/files/browse?path=${latest('runs')}`, `/files/read?path=${latest('runs')}/stdout&offset=0`, '/files/debug'];
  for (const path of jsonGets) {
    const sep = path.includes('?') ? '&' : '?';
    const plain = await get(`${a.url}${path}`);
    const wrapped = await get(`${a.url}${path}${sep}jsonp=angular.callbacks._0`);
    assert.equal(wrapped.status, 200, `${path}: ${wrapped.text.slice(0, 200)}`);
    assert.equal(wrapped.type, 'text/javascript', path);
    assert.ok(wrapped.text.startsWith('angular.callbacks._0(') && wrapped.text.endsWith(');'), path);
    if (!path.includes('statistics') && !path.includes('state') && !path.includes('snapshot')) assert.deepEqual(wrapped.json, plain.json, path);
    else assert.ok(wrapped.json !== undefined, path);
    for (const bad of ['alert(1)//', 'a;b', 'x y', '1abc', 'a..b', 'a'.repeat(200)]) {
      const refused = await get(`${a.url}${path}${sep}jsonp=${encodeURIComponent(bad)}`);
      assert.equal(refused.status, 400, `${path} jsonp=${bad}`);
      assert.match(refused.text, /^Invalid 'jsonp' callback/);
      assert.ok(!refused.text.includes('line1'), 'nothing read');
    }
  }
  const head = await get(`${a.url}/slave(1)/state`, PLAIN_TRANSPORT, 'HEAD');
  assert.deepEqual([head.status, head.text, head.type], [200, '', 'application/json'], 'HEAD: the headers alone');
  const post = await get(`${a.url}/slave(1)/state`, PLAIN_TRANSPORT, 'POST');
  assert.equal(post.status, 405);
  assert.equal(post.headers.get('allow'), 'GET');

  // ---- The files API ----
  const browse = await get(`${a.url}/files/browse?path=${encodeURIComponent(dirRuns)}`);
  assert.equal(browse.status, 200, browse.text);
  const listing = browse.json as Json[];
  assert.deepEqual(listing.map((x) => x['path']), ['big', 'leak', 'other', 'out-link', 'pipe', 'stderr', 'stdout', 'sub'].map((n) => `${dirRuns}/${n}`), 'sorted by name, joined to the path asked');
  const byName = (n: string): Json => listing.find((x) => x['path'] === `${dirRuns}/${n}`) as Json;
  hasFields('file', byName('stdout'), { path: 'string', nlink: 'number', size: 'number', mtime: 'number', mode: 'string', uid: 'string', gid: 'string' });
  assert.equal(byName('stdout')['size'], 12);
  assert.equal(byName('stdout')['mode'], '-rw-r--r--');
  assert.match(byName('sub')['mode'] as string, /^d/);
  assert.match(byName('pipe')['mode'] as string, /^p/);
  assert.match(byName('leak')['mode'] as string, /^l/, 'a symlink out of the sandbox is listed as the link itself');
  assert.match(byName('out-link')['mode'] as string, /^-/, 'a symlink inside the sandbox is listed as its target');
  assert.equal(byName('out-link')['size'], 12);
  assert.equal(byName('stdout')['uid'], userInfo().username);
  const viaLatest = await get(`${a.url}/files/browse?path=${latest('runs')}/`);
  assert.deepEqual((viaLatest.json as Json[]).map((x) => x['path']), listing.map((x) => (x['path'] as string).replace(dirRuns, latest('runs'))));

  const read = async (path: string, query = ''): Promise<{ status: number; text: string; json: { data: string; offset: number } }> => {
    const r = await get(`${a.url}/files/read?path=${encodeURIComponent(path)}${query}`);
    return { status: r.status, text: r.text, json: r.json as { data: string; offset: number } };
  };
  assert.deepEqual((await read(`${dirRuns}/stdout`, '&offset=-1&length=-1')).json, { data: '', offset: 12 }, 'offset -1: the size');
  assert.deepEqual((await read(`${dirRuns}/stdout`)).json, { data: '', offset: 12 }, 'no offset: as -1');
  assert.deepEqual((await read(`${dirRuns}/stdout`, '&offset=0&length=-1')).json, { data: 'line1\nline2\n', offset: 0 });
  assert.deepEqual((await read(`${latest('runs')}/stdout`, '&offset=6&length=3')).json, { data: 'lin', offset: 6 });
  assert.deepEqual((await read(`${dirRuns}/stdout`, '&offset=100')).json, { data: '', offset: 100 }, 'past the end: nothing');
  assert.deepEqual((await read(`${dirRuns}/stdout`, '&offset=0&length=0')).json, { data: '', offset: 0 });
  assert.deepEqual((await read(`${dirRuns}/out-link`, '&offset=0')).json, { data: 'line1\nline2\n', offset: 0 }, 'a symlink inside the sandbox is followed');
  const bigOnDisk = readFileSync(join(dirRuns, 'big'));
  const big = await read(`${dirRuns}/big`, '&offset=0');
  assert.equal(big.json.data.length, 65536, 'a read is bounded at 64 KiB');
  assert.equal(big.json.data, bigOnDisk.subarray(0, 65536).toString('utf8'));
  assert.equal((await read(`${dirRuns}/big`, '&offset=-1')).json.offset, bigOnDisk.length);
  assert.equal((await read(`${dirRuns}/big`, `&offset=${bigOnDisk.length - 6}`)).json.data, '20000\n');
  for (const [query, status, text] of [
    ['&offset=abc', 400, "Failed to parse offset: Failed to convert 'abc' to number.\n"],
    ['&offset=-2', 400, 'Negative offset provided: -2.\n'],
    ['&offset=0&length=-5', 400, 'Negative length provided: -5.\n'],
    ['&offset=0&length=1.5', 400, "Failed to parse length: Failed to convert '1.5' to number.\n"],
  ] as const) {
    const r = await read(`${dirRuns}/stdout`, query);
    assert.deepEqual([r.status, r.text], [status, text], query);
  }
  assert.deepEqual([(await get(`${a.url}/files/read`)).status, (await get(`${a.url}/files/read`)).text], [400, "Expecting 'path=value' in query.\n"]);
  const dirRead = await read(dirRuns, '&offset=0');
  assert.deepEqual([dirRead.status, dirRead.text], [400, 'Cannot read a directory.\n']);

  const download = await fetch(`${a.url}/files/download?path=${encodeURIComponent(`${latest('runs')}/big`)}`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(download.status, 200);
  assert.equal(download.headers.get('content-type'), 'application/octet-stream');
  assert.equal(download.headers.get('content-disposition'), 'attachment; filename=big');
  assert.ok(Buffer.from(await download.arrayBuffer()).equals(bigOnDisk), 'the bytes on disk, all of them');
  const headDownload = await get(`${a.url}/files/download?path=${encodeURIComponent(`${latest('runs')}/big`)}`, PLAIN_TRANSPORT, 'HEAD');
  assert.deepEqual([headDownload.status, headDownload.text, headDownload.headers.get('content-length')], [200, '', String(bigOnDisk.length)]);
  const dirDownload = await get(`${a.url}/files/download?path=${encodeURIComponent(dirRuns)}`);
  assert.deepEqual([dirDownload.status, dirDownload.text], [400, 'Cannot download a directory.\n']);
  const debug = (await get(`${a.url}/files/debug`)).json as Json;
  assert.equal(debug[latest('runs')], dirRuns);
  assert.equal(debug[dirRuns], dirRuns);
  assert.equal(debug[latest('done')], dirDone, "a completed executor's sandbox stays readable");
  assert.equal((await read(`${latest('done')}/stdout`, '&offset=0')).json.data, 'done-out\n');
  assert.equal(Object.values(debug).some((d) => d === dirB), false, "another agent's sandbox is not this agent's");

  // v1 LIST_FILES and READ_FILE over the same sandbox.
  const listed = await callApi(a.url, { type: 'LIST_FILES', list_files: { path: latest('runs') } });
  assert.equal(listed.status, 200, listed.text);
  const infos = (parseJson(listed.text) as { list_files: { file_infos: Json[] } }).list_files.file_infos;
  assert.deepEqual(infos.map((x) => x['path']), (viaLatest.json as Json[]).map((x) => x['path']));
  const info = infos.find((x) => x['path'] === `${latest('runs')}/stdout`) as Json;
  assert.equal(info['mode'], 0o100644);
  assert.equal(typeof (info['mtime'] as { nanoseconds: unknown }).nanoseconds, 'bigint', 'mtime in nanoseconds, exactly');
  const v1read = await callApi(a.url, { type: 'READ_FILE', read_file: { path: `${dirRuns}/stdout`, offset: 6, length: 5 } });
  assert.equal(v1read.status, 200, v1read.text);
  const rf = (v1read.json as { read_file: { size: number; data: string } }).read_file;
  assert.equal(rf.size, 12);
  assert.equal(Buffer.from(rf.data, 'base64').toString(), 'line2');
  assert.match((await callApi(a.url, { type: 'READ_FILE' })).text, /Expecting 'read_file' to be present/);
  assert.match((await callApi(a.url, { type: 'LIST_FILES', list_files: {} })).text, /list_files\.path/);

  // ---- Traversal: a 4xx, and nothing of what lies outside in the answer ----
  const outside = ['root:', 'secret-of-b', 'done-out'];
  const refusals: Array<[string, string, number]> = [
    ['read', `${dirRuns}/../done/stdout`, 400],
    ['read', `${latest('runs')}/../../../../../etc/passwd`, 400],
    ['read', '/etc/passwd', 404],
    ['browse', '/', 404],
    ['browse', '/etc', 404],
    ['browse', join(a.workDir, 'sandboxes'), 404],
    ['browse', a.workDir, 404],
    ['read', join(a.workDir, 'meta', 'journal'), 404],
    ['read', `${dirRuns}/leak`, 400],
    ['download', `${dirRuns}/leak`, 400],
    ['browse', `${dirRuns}/leak`, 400],
    ['read', `${dirRuns}/other/stdout`, 400],
    ['browse', `${dirRuns}/other`, 400],
    ['read', `${dirRuns}/pipe`, 400],
    ['download', `${dirRuns}/pipe`, 400],
    ['read', `${dirB}/mine`, 404],
    ['read', `/frameworks/${fw}/executors/b-task/runs/latest/mine`, 404],
    ['read', 'stdout', 400],
    ['read', `${dirRuns}/stdout\u0000`, 400],
    ['read', `${dirRuns}/nope`, 404],
  ];
  for (const [verb, path, status] of refusals) {
    const r = await get(`${a.url}/files/${verb}?path=${encodeURIComponent(path)}&offset=0`);
    assert.equal(r.status, status, `${verb} ${JSON.stringify(path)}: ${r.text}`);
    for (const o of outside) assert.ok(!r.text.includes(o), `${verb} ${path} read nothing outside`);
  }
  // %2e%2e as the client spells it in the query: the same '..' once decoded.
  const encoded = await get(`${a.url}/files/read?path=${latest('runs')}/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/passwd&offset=0`);
  assert.equal(encoded.status, 400, encoded.text);
  assert.match(encoded.text, /'\.\.'/);
  for (const call of [
    { type: 'READ_FILE', read_file: { path: `${dirRuns}/leak`, offset: 0 } },
    { type: 'READ_FILE', read_file: { path: `${dirRuns}/../done/stdout`, offset: 0 } },
    { type: 'LIST_FILES', list_files: { path: `${dirRuns}/..` } },
    { type: 'LIST_FILES', list_files: { path: '/etc' } },
  ]) {
    const r = await callApi(a.url, call);
    assert.ok(r.status === 400 || r.status === 404, `${stringifyJson(call)}: ${r.status} ${r.text}`);
    for (const o of outside) assert.ok(!r.text.includes(o));
  }
  // The other agent serves its own sandbox.
  const mine = await get(`${b.url}/files/read?path=${encodeURIComponent(`${dirB}/mine`)}&offset=0`);
  assert.deepEqual(mine.json, { data: 'secret-of-b\n', offset: 0 });
  // The agent is fine after all of it (a FIFO did not hang it).
  assert.equal((await get(`${a.url}/slave(1)/health`)).status, 200);

  // ---- A drain: its config and start in /state ----
  const drained = await callApi(m.url, { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: bId }, max_grace_period: { seconds: 1 } } });
  assert.equal(drained.status, 200, drained.text);
  const killed = await follow(s, 'b-task', ['TASK_KILLED'], true);
  assert.equal(killed.state, 'TASK_KILLED');
  const bState = (await get(`${b.url}/state`)).json as Json;
  assert.deepEqual(bState['drain_config'], { max_grace_period: { nanoseconds: 1_000_000_000 }, mark_gone: false });
  assert.equal(typeof bState['estimated_drain_start_time_seconds'], 'number');
  assert.ok(Math.abs((bState['estimated_drain_start_time_seconds'] as number) - Date.now() / 1000) < 120);
  const bExec = ((((bState['frameworks'] as Json[])[0] as Json)['executors'] as Json[])[0]) as Json;
  assert.deepEqual(bExec['tasks'], [], 'the killed task awaits its acknowledgement among the completed tasks');
  assert.equal(((bExec['completed_tasks'] as Json[])[0] as Json)['state'], 'TASK_KILLED');
  assert.deepEqual((bExec['resources'] as Json)['cpus'], 0);
});

const SECRETS = { ops: 'ops-s3cret-1', 'web-team': 'web-s3cret-2', peeker: 'peek-s3cret-3', auditor: 'audit-s3cret-4' } as const;
type Principal = keyof typeof SECRETS;
const as = (p: Principal): ClientTransport => clientTransport({ credential: { kind: 'basic', principal: p, secret: SECRETS[p] } });
const ANY = { type: 'ANY' };
const only = (...values: string[]): { values: string[] } => ({ values });

/**
 * ops everything; web-team views and reads user web's; peeker may view every task but read no
 * sandbox; auditor may read every sandbox but view no task (so reads none).
 */
const ACLS = {
  permissive: false,
  view_frameworks: [{ principals: only('ops', 'peeker'), users: ANY }, { principals: only('web-team'), users: only('web') }],
  view_executors: [{ principals: only('ops', 'peeker'), users: ANY }, { principals: only('web-team'), users: only('web') }],
  view_tasks: [{ principals: only('ops', 'peeker'), users: ANY }, { principals: only('web-team'), users: only('web') }],
  access_sandboxes: [{ principals: only('ops', 'auditor'), users: ANY }, { principals: only('web-team'), users: only('web') }],
  view_flags: [{ principals: only('ops'), flags: ANY }],
  get_endpoints: [{ principals: only('ops', 'web-team'), paths: ANY }],
};

test('sandboxes are guarded by access_sandboxes and view_tasks on the task\'s user; /state, /files/debug and the statistics are filtered; anonymous callers get 401', { timeout: 180_000 }, async (t) => {
  const dir = tempDir(t, 'drydock-agent-legacy-acl-');
  const credentials = fileWithMode(join(dir, 'credentials.json'), JSON.stringify({ credentials: Object.entries(SECRETS).map(([principal, secret]) => ({ principal, secret })) }), 0o600);
  const acls = fileWithMode(join(dir, 'acls.json'), JSON.stringify(ACLS), 0o644);
  const m = await startMaster(t, { flags: ['--allocation_interval=100ms'] });
  const a: AgentHandle = await startAgent(t, {
    master: m.address,
    ip: '127.0.0.2',
    hostname: 'acl-a',
    resources: 'cpus:2;mem:1024;disk:100',
    flags: ['--authenticate_http_readonly', '--authenticate_http_readwrite', `--http_credentials=${credentials}`, `--acls=${acls}`],
    stopSignal: 'SIGUSR1',
  });
  const aId = a.agentId as string;
  const web = await SchedulerClient.subscribe(m.address, { user: 'web', name: 'web-fw' });
  t.after(() => web.close());
  await launch(web, aId, new Set(), [task('web-1', aId, 'echo web-out; exec sleep 120')]);
  await follow(web, 'web-1', ['TASK_RUNNING']);
  const batch = await SchedulerClient.subscribe(m.address, { user: 'batch', name: 'batch-fw' });
  t.after(() => batch.close());
  await launch(batch, aId, new Set(), [task('batch-1', aId, 'echo batch-out; exec sleep 120')]);
  await follow(batch, 'batch-1', ['TASK_RUNNING']);
  const webOut = `/frameworks/${web.frameworkId}/executors/web-1/runs/latest/stdout`;
  const batchOut = `/frameworks/${batch.frameworkId}/executors/batch-1/runs/latest/stdout`;
  const read = (who: ClientTransport, path: string): ReturnType<typeof get> => get(`${a.url}/files/read?path=${encodeURIComponent(path)}&offset=0`, who);
  await eventually(async () => ((await read(as('ops'), batchOut)).text.includes('batch-out') ? true : undefined), EVENT_DEADLINE_MS, 50, "batch's stdout");
  await eventually(async () => ((await read(as('ops'), webOut)).text.includes('web-out') ? true : undefined), EVENT_DEADLINE_MS, 50, "web's stdout");

  // Anonymous: 401 in the read-only realm, for the files and /state alike.
  for (const path of [`/files/read?path=${webOut}&offset=0`, '/slave(1)/state', '/files/debug', '/monitor/statistics', '/flags']) {
    const r = await get(`${a.url}${path}`);
    assert.equal(r.status, 401, path);
    assert.equal(r.headers.get('www-authenticate'), 'Basic realm="mesos-agent-readonly"', path);
  }
  assert.equal((await get(`${a.url}/slave(1)/health`)).status, 200, 'the health probe stays open');

  // web-team reads web's sandbox and not batch's: 403 naming the action and the user, nothing read.
  assert.deepEqual((await read(as('web-team'), webOut)).json, { data: 'web-out\n', offset: 0 });
  const refused = await read(as('web-team'), batchOut);
  assert.equal(refused.status, 403);
  assert.equal(refused.text, "Forbidden: principal 'web-team' may not access_sandboxes on 'batch'");
  for (const call of [{ type: 'READ_FILE', read_file: { path: batchOut, offset: 0 } }, { type: 'LIST_FILES', list_files: { path: batchOut.replace('/stdout', '') } }]) {
    const r = await callApi(a.url, call, { 'content-type': 'application/json' }, as('web-team'));
    assert.equal(r.status, 403, r.text);
    assert.ok(!r.text.includes('batch-out'));
  }
  const download = await get(`${a.url}/files/download?path=${encodeURIComponent(batchOut)}`, as('web-team'));
  assert.equal(download.status, 403);
  // peeker views every task but may read no sandbox; auditor may read sandboxes but views no task.
  assert.equal((await read(as('peeker'), webOut)).text, "Forbidden: principal 'peeker' may not access_sandboxes on 'web'");
  assert.equal((await read(as('auditor'), webOut)).text, "Forbidden: principal 'auditor' may not view_tasks on 'web'");
  // ops reads both.
  assert.deepEqual((await read(as('ops'), batchOut)).json, { data: 'batch-out\n', offset: 0 });

  // /state as web-team: its framework only, no flags; as ops: both, with flags.
  const webState = (await get(`${a.url}/slave(1)/state`, as('web-team'))).json as Json;
  assert.deepEqual((webState['frameworks'] as Json[]).map((f) => f['name']), ['web-fw']);
  assert.equal(webState['flags'], undefined, 'no view_flags: no flags');
  const opsState = (await get(`${a.url}/slave(1)/state`, as('ops'))).json as Json;
  assert.deepEqual((opsState['frameworks'] as Json[]).map((f) => f['name']).sort(), ['batch-fw', 'web-fw']);
  assert.equal(typeof opsState['flags'], 'object');
  // /files/debug as web-team: web's sandboxes only; the statistics: web's executor only.
  const debug = (await get(`${a.url}/files/debug`, as('web-team'))).json as Json;
  assert.ok(Object.keys(debug).length === 2 && Object.keys(debug).every((k) => !k.includes(batch.frameworkId) && !String(debug[k]).includes(batch.frameworkId)), stringifyJson(debug));
  const stats = (await get(`${a.url}/monitor/statistics`, as('web-team'))).json as Json[];
  assert.deepEqual(stats.map((e) => e['executor_id']), ['web-1']);
  assert.equal((await get(`${a.url}/monitor/statistics`, as('peeker'))).status, 403, 'get_endpoints on /monitor/statistics, as Mesos');
  // GET_EXECUTORS and GET_FRAMEWORKS follow the same rules.
  const ex = (await callApi(a.url, { type: 'GET_EXECUTORS' }, { 'content-type': 'application/json' }, as('web-team'))).json as { get_executors: { executors: Array<{ executor_info: { executor_id: { value: string } } }> } };
  assert.deepEqual(ex.get_executors.executors.map((e) => e.executor_info.executor_id.value), ['web-1']);
  const fws = (await callApi(a.url, { type: 'GET_FRAMEWORKS' }, { 'content-type': 'application/json' }, as('web-team'))).json as { get_frameworks: { frameworks: Array<{ framework_info: { name: string } }> } };
  assert.deepEqual(fws.get_frameworks.frameworks.map((f) => f.framework_info.name), ['web-fw']);
});

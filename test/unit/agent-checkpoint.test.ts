import { test } from 'node:test';
import assert from 'node:assert/strict';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CHECKPOINT_FORMAT, COMPACT_MIN_BYTES, Checkpoint, safePathComponent, type TaskRecord } from '../../agent/checkpoint.js';
import { encodeEntry, Journal, parseJournal } from '../../agent/journal.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';

function dir(t: { after(fn: () => void): void }): string {
  const d = mkdtempSync(join(tmpdir(), 'drydock-cp-'));
  t.after(() => rmSync(d, { recursive: true, force: true }));
  return d;
}

const self = { hostname: 'h1', ip: '10.0.0.1' };

function record(taskId: string): TaskRecord {
  return {
    format: CHECKPOINT_FORMAT,
    framework_id: 'fw/1',
    framework: { user: 'u', name: 'n' },
    task: { name: taskId, task_id: { value: taskId }, agent_id: { value: 'a' }, resources: [] },
    container_id: 'c',
    sandbox: '/tmp/s',
    launcher: { pid: 123, start_time: '456' },
    task_pid: 124,
    state: 'TASK_RUNNING',
    statuses: [],
    pending: [{ task_id: { value: taskId }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: 1.5, uuid: 'u1' }],
  };
}

test('checkpoint round-trip: agent id and tasks come back as written', (t) => {
  const cp = new Checkpoint(dir(t));
  assert.deepEqual(cp.load(self), { kind: 'fresh' });
  cp.writeAgent({ ...self, agent_id: 'agent-7' });
  cp.writeTask(record('t1'));
  cp.writeTask(record('../t2'));
  const loaded = cp.load(self);
  assert.equal(loaded.kind, 'recovered');
  if (loaded.kind !== 'recovered') return;
  assert.equal(loaded.agentId, 'agent-7');
  assert.deepEqual(loaded.tasks.map((x) => x.task.task_id.value).sort(), ['../t2', 't1']);
  assert.deepEqual(loaded.tasks.find((x) => x.task.task_id.value === 't1'), record('t1'));
  cp.removeTask(record('t1'));
  const after = cp.load(self);
  assert.equal(after.kind === 'recovered' ? after.tasks.length : -1, 1);
});

test('ids are made filesystem-safe and stay distinct', () => {
  assert.equal(safePathComponent('abc-_1'), 'abc-_1');
  assert.equal(safePathComponent('..'), '%2E%2E');
  assert.equal(safePathComponent('a/b'), 'a%2Fb');
  assert.notEqual(safePathComponent('a/b'), safePathComponent('a%2Fb'));
  assert.equal(safePathComponent(''), '%');
});

test('corrupt checkpoints of an agent before the journal are reported with the file and the problem', (t) => {
  const cases: Array<[string, string, string, RegExp]> = [
    ['truncated agent', 'agent.json', '{"format":1,"host', /not valid JSON/],
    ['empty agent', 'agent.json', '', /empty file/],
    ['unknown format', 'agent.json', '{"format":99,"hostname":"h1","ip":"10.0.0.1"}', /unknown format version 99/],
    ['no identity', 'agent.json', '{"format":1}', /hostname or ip is missing/],
    ['truncated task', 'tasks/fw/t/task.json', '{"format":1,', /not valid JSON/],
    ['task without id', 'tasks/fw/t/task.json', '{"format":1,"framework_id":"fw"}', /task_id is missing/],
  ];
  for (const [name, file, content, problem] of cases) {
    const d = dir(t);
    const path = join(d, 'meta', file);
    mkdirSync(join(path, '..'), { recursive: true });
    writeFileSync(path, content);
    const cp = new Checkpoint(d);
    const loaded = cp.load(self);
    assert.equal(loaded.kind, 'corrupt', name);
    if (loaded.kind !== 'corrupt') continue;
    assert.equal(loaded.file, path, name);
    assert.match(loaded.problem, problem, name);
    const aside = cp.quarantine(42);
    assert.equal(aside, join(d, 'meta.corrupt-42'));
    assert.deepEqual(readdirSync(d), ['meta.corrupt-42']);
    assert.deepEqual(cp.load(self), { kind: 'fresh' });
  }
});

test('a checkpoint for another hostname or ip is foreign', (t) => {
  for (const other of [{ hostname: 'h2', ip: '10.0.0.1' }, { hostname: 'h1', ip: '10.0.0.2' }]) {
    const cp = new Checkpoint(dir(t));
    cp.writeAgent({ ...other, agent_id: 'x' });
    assert.deepEqual(cp.load(self), { kind: 'foreign', found: other });
  }
});

/** A checkpoint that commits only when told (flush), so a test sees every commit. */
function manual(d: string, onWrite?: () => void): Checkpoint {
  return new Checkpoint(d, { schedule: () => {}, ...(onWrite === undefined ? {} : { instruments: { now: () => 0, onWrite } }) });
}

test('group commit: changes of one round are one write, and what waits for them runs after it, in order', (t) => {
  const d = dir(t);
  let commits = 0;
  const cp = manual(d, () => commits++);
  cp.writeAgent({ ...self, agent_id: 'a' });
  assert.equal(cp.flush(), true);
  assert.equal(commits, 1);
  const ran: string[] = [];
  const seqs: number[] = [];
  for (let i = 0; i < 100; i++) {
    seqs.push(cp.writeTask(record(`t${i}`)));
    cp.after(seqs[i]!, () => ran.push(`t${i}`));
  }
  cp.afterCommit(() => ran.push('all'));
  assert.deepEqual(ran, [], 'nothing runs before the changes are durable');
  const before = readFileSync(join(d, 'meta', 'journal'), 'utf8');
  assert.equal(before.includes('"t0"'), false, 'nothing is written before the commit');
  assert.equal(cp.flush(), true);
  assert.equal(commits, 2, 'one commit for a hundred changes');
  assert.deepEqual(ran, [...Array.from({ length: 100 }, (_, i) => `t${i}`), 'all']);
  let late = false;
  cp.after(seqs[5]!, () => (late = true));
  assert.equal(late, true, 'a change already durable: at once');
  cp.close();
  const loaded = new Checkpoint(d).load(self);
  assert.equal(loaded.kind === 'recovered' ? loaded.tasks.length : -1, 100);
});

test('a commit is scheduled after the round of events that staged it', async (t) => {
  const d = dir(t);
  const cp = new Checkpoint(d);
  cp.writeAgent({ ...self });
  let durable = false;
  cp.afterCommit(() => (durable = true));
  assert.equal(durable, false);
  await new Promise((r) => setImmediate(r));
  assert.equal(durable, true);
  cp.close();
});

const nextRound = (): Promise<void> => new Promise((r) => setImmediate(r));

/**
 * Counts commits, with deferral on (`deferMs`), scheduled as the agent's are. Closed after the
 * test whatever happened, so a long delay's timer never outlives a failed assertion.
 */
function deferring(t: { after(fn: () => void): void }, d: string, deferMs: number): { cp: Checkpoint; commits: () => number; text: () => string } {
  let commits = 0;
  const cp = new Checkpoint(d, { deferMs, instruments: { now: () => 0, onWrite: () => commits++ } });
  t.after(() => cp.close());
  const file = join(d, 'meta', 'journal');
  return { cp, commits: () => commits, text: () => (existsSync(file) ? readFileSync(file, 'utf8') : '') };
}

test('deferred commit: a change nothing waits for is committed when the delay is up', async (t) => {
  const { cp, commits, text } = deferring(t, dir(t), 40);
  cp.writeAgent({ ...self, agent_id: 'a' });
  assert.equal(cp.flush(), true);
  const base = commits();
  const seq = cp.writeTask(record('acked'));
  await nextRound();
  assert.equal(commits(), base, 'not after this round: nothing waits for it');
  assert.equal(cp.durable(seq), false);
  assert.equal(text().includes('"acked"'), false);
  const deadline = Date.now() + EVENT_DEADLINE_MS;
  while (!cp.durable(seq) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 5));
  assert.equal(cp.durable(seq), true, 'committed once the delay was up');
  assert.equal(commits(), base + 1);
  assert.ok(text().includes('"acked"'));
  cp.close();
});

test('deferred commit: it joins the next change something waits for, in one commit, in order', async (t) => {
  // A delay no test outlasts: every commit here is one something asked for.
  const { cp, commits, text } = deferring(t, dir(t), 60_000);
  cp.writeAgent({ ...self, agent_id: 'a' });
  cp.flush();
  const base = commits();
  const quiet = cp.writeTask(record('quiet'));
  await nextRound();
  const later = cp.writeTask(record('later'));
  await nextRound();
  assert.equal(commits(), base, 'two deferred rounds, no commit');
  const ran: string[] = [];
  const waited = cp.writeTask(record('waited'));
  cp.after(waited, () => ran.push('waited'));
  await nextRound();
  assert.deepEqual(ran, ['waited']);
  assert.equal(commits(), base + 1, 'one commit for the deferred changes and the awaited one');
  assert.equal(cp.durable(quiet) && cp.durable(later), true);
  const body = text();
  assert.ok(body.indexOf('"quiet"') < body.indexOf('"later"') && body.indexOf('"later"') < body.indexOf('"waited"'), 'in the order they were made');

  // Waiting later for a change already deferred commits it after that round.
  const deferred = cp.writeTask(record('deferred'));
  await nextRound();
  assert.equal(cp.durable(deferred), false);
  cp.after(deferred, () => ran.push('deferred'));
  await nextRound();
  assert.deepEqual(ran, ['waited', 'deferred']);
  assert.equal(commits(), base + 2);
  cp.close();
});

test('deferred commit: closing commits what was deferred', async (t) => {
  const d = dir(t);
  const { cp } = deferring(t, d, 60_000);
  cp.writeAgent({ ...self, agent_id: 'a' });
  cp.flush();
  cp.writeTask(record('at-close'));
  await nextRound();
  cp.close();
  const loaded = new Checkpoint(d).load(self);
  assert.deepEqual(loaded.kind === 'recovered' ? loaded.tasks.map((x) => x.task.task_id.value) : [], ['at-close']);
});

test('journal: a torn last line is dropped and cut; a bad line before good ones is corruption', (t) => {
  const d = dir(t);
  const cp = manual(d);
  cp.writeAgent({ ...self, agent_id: 'a' });
  cp.writeTask(record('t1'));
  cp.close();
  const file = join(d, 'meta', 'journal');
  const good = readFileSync(file, 'utf8');
  // A power cut in the middle of the next commit.
  appendFileSync(file, encodeEntry(JSON.stringify({ k: 'task', v: record('t2') })).slice(0, 40));
  const cp2 = manual(d);
  const loaded = cp2.load(self);
  assert.equal(loaded.kind, 'recovered');
  assert.deepEqual(loaded.kind === 'recovered' ? loaded.tasks.map((x) => x.task.task_id.value) : [], ['t1']);
  cp2.writeTask(record('t3'));
  cp2.flush();
  const after = readFileSync(file, 'utf8');
  assert.ok(after.startsWith(good), 'the committed lines are kept');
  assert.equal(parseJournal(after).ok && !(parseJournal(after) as { tornTail: boolean }).tornTail, true, 'the torn tail is gone');
  cp2.close();

  // Every kind of damage in the middle of the file: the file and the line are named.
  const lines = after.split('\n');
  const cases: Array<[string, string, RegExp]> = [
    ['flipped byte', lines[1]!.replace('"agent"', '"agenT"'), /line 2: checksum mismatch/],
    ['no checksum', lines[1]!.slice(9), /line 2: no checksum/],
  ];
  for (const [name, bad, problem] of cases) {
    const d2 = dir(t);
    mkdirSync(join(d2, 'meta'));
    writeFileSync(join(d2, 'meta', 'journal'), [lines[0], bad, ...lines.slice(2)].join('\n'));
    const r = new Checkpoint(d2).load(self);
    assert.equal(r.kind, 'corrupt', name);
    if (r.kind !== 'corrupt') continue;
    assert.equal(r.file, join(d2, 'meta', 'journal'));
    assert.match(r.problem, problem, name);
  }
});

test('journal: entries that parse but say nothing sensible are corruption', (t) => {
  const cases: Array<[string, object[], RegExp]> = [
    ['unknown journal format', [{ k: 'header', format: 9 }], /unknown journal format 9/],
    ['no header', [{ k: 'agent', v: self }], /unknown journal format/],
    ['unknown entry', [{ k: 'header', format: 1 }, { k: 'teleport' }], /line 2: unknown entry "teleport"/],
    ['task without id', [{ k: 'header', format: 1 }, { k: 'task', v: { format: 1, framework_id: 'fw' } }], /line 2: task.task_id is missing/],
    ['agent without ip', [{ k: 'header', format: 1 }, { k: 'agent', v: { hostname: 'h1' } }], /line 2: agent entry without hostname or ip/],
  ];
  for (const [name, entries, problem] of cases) {
    const d = dir(t);
    mkdirSync(join(d, 'meta'));
    writeFileSync(join(d, 'meta', 'journal'), entries.map((e) => encodeEntry(JSON.stringify(e))).join(''));
    const r = new Checkpoint(d).load(self);
    assert.equal(r.kind, 'corrupt', name);
    if (r.kind === 'corrupt') assert.match(r.problem, problem, name);
  }
});

test('the journal is compacted once it is mostly superseded records, and reads back the same', (t) => {
  const d = dir(t);
  const cp = manual(d);
  cp.writeAgent({ ...self, agent_id: 'a' });
  const rec = record('busy');
  const size = (): number => statSync(join(d, 'meta', 'journal')).size;
  let largest = 0;
  for (let i = 0; i < 2_000; i++) {
    rec.statuses = [{ task_id: { value: 'busy' }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: i, uuid: `u${i}` }];
    cp.writeTask(rec);
    cp.writeTask(record(`done-${i}`));
    cp.removeTask(record(`done-${i}`));
    cp.flush();
    largest = Math.max(largest, size());
  }
  assert.ok(largest > COMPACT_MIN_BYTES / 2, 'enough was written to need compacting');
  assert.ok(largest <= COMPACT_MIN_BYTES + 4096, `the journal stayed under the compaction size (largest ${largest} bytes)`);
  cp.close();
  const loaded = new Checkpoint(d).load(self);
  assert.equal(loaded.kind, 'recovered');
  if (loaded.kind !== 'recovered') return;
  assert.equal(loaded.agentId, 'a');
  assert.deepEqual(loaded.tasks.map((x) => x.task.task_id.value), ['busy']);
  assert.equal(loaded.tasks[0]!.statuses[0]!.timestamp, 1_999);
});

test('a checkpoint of an agent before the journal is read, and moved into the journal by the first commit', (t) => {
  const d = dir(t);
  const meta = join(d, 'meta');
  const taskFile = join(meta, 'tasks', safePathComponent('fw/1'), 't1', 'task.json');
  mkdirSync(join(taskFile, '..'), { recursive: true });
  writeFileSync(join(meta, 'agent.json'), JSON.stringify({ format: 1, ...self, agent_id: 'old-agent' }));
  writeFileSync(taskFile, JSON.stringify(record('t1')));
  writeFileSync(join(meta, 'drain.json'), JSON.stringify({ format: 1, config: { mark_gone: true }, received_ms: 5 }));
  const cp = manual(d);
  const loaded = cp.load(self);
  assert.deepEqual(loaded, { kind: 'recovered', agentId: 'old-agent', tasks: [record('t1')] });
  assert.deepEqual(cp.readDrain(), { format: 1, config: { mark_gone: true }, received_ms: 5 });
  cp.writeAgent({ ...self, agent_id: 'old-agent' });
  assert.equal(cp.flush(), true);
  assert.equal(existsSync(join(meta, 'agent.json')), false);
  assert.equal(existsSync(join(meta, 'drain.json')), false);
  assert.equal(existsSync(taskFile), false);
  cp.close();
  const again = manual(d);
  assert.deepEqual(again.load(self), loaded, 'the same state, now from the journal');
  assert.deepEqual(again.readDrain(), { format: 1, config: { mark_gone: true }, received_ms: 5 });
  again.close();
});

test('drain and forget entries replay', (t) => {
  const d = dir(t);
  const cp = manual(d);
  cp.writeAgent({ ...self });
  cp.writeDrain({ config: { mark_gone: false }, received_ms: 1 });
  cp.writeTask(record('t1'));
  cp.writeTask(record('t2'));
  cp.removeTask(record('t1'));
  cp.close();
  const a = manual(d);
  const l = a.load(self);
  assert.deepEqual(l.kind === 'recovered' ? l.tasks.map((x) => x.task.task_id.value) : [], ['t2']);
  assert.equal(a.readDrain()?.received_ms, 1);
  a.removeDrain();
  a.close();
  const b = manual(d);
  b.load(self);
  assert.equal(b.readDrain(), undefined);
  b.close();
});

test('int64s in the checkpoint keep every digit: a drain of 136 years, a task field beyond 2^53; an older agent\'s JSON number reads as exact', (t) => {
  const d = dir(t);
  const cp = manual(d);
  cp.writeAgent({ ...self });
  cp.writeDrain({ config: { max_grace_period: { nanoseconds: 4_294_967_296_000_000_000n }, mark_gone: false }, received_ms: 1 });
  const rec = record('t1');
  (rec.task as unknown as Record<string, unknown>)['discovery'] = { version: 2n ** 63n - 1n };
  cp.writeTask(rec);
  cp.close();
  const text = readFileSync(join(d, 'meta', 'journal'), 'utf8');
  assert.match(text, /"nanoseconds":4294967296000000000/);
  assert.match(text, /"version":9223372036854775807/);
  const a = manual(d);
  const l = a.load(self);
  assert.equal(l.kind, 'recovered');
  assert.deepEqual(a.readDrain()?.config, { max_grace_period: { nanoseconds: 4_294_967_296_000_000_000n }, mark_gone: false });
  const task = l.kind === 'recovered' ? (l.tasks[0]?.task as unknown as { discovery: { version: unknown } }) : undefined;
  assert.equal(task?.discovery.version, 2n ** 63n - 1n);
  a.close();

  // A drain an older agent wrote (a JSON number) reads as a bigint; one that cannot be read is dropped (the master re-sends it).
  const old = dir(t);
  mkdirSync(join(old, 'meta'), { recursive: true });
  writeFileSync(join(old, 'meta', 'drain.json'), JSON.stringify({ format: 1, config: { max_grace_period: { nanoseconds: 60_000_000_000 }, mark_gone: false }, received_ms: 5 }));
  const o = manual(old);
  o.load(self);
  assert.deepEqual(o.readDrain()?.config, { max_grace_period: { nanoseconds: 60_000_000_000n }, mark_gone: false });
  o.close();
  const bad = dir(t);
  mkdirSync(join(bad, 'meta'), { recursive: true });
  writeFileSync(join(bad, 'meta', 'drain.json'), JSON.stringify({ format: 1, config: { max_grace_period: { nanoseconds: -5 }, mark_gone: false }, received_ms: 5 }));
  const b = manual(bad);
  b.load(self);
  assert.equal(b.readDrain(), undefined);
  b.close();
});

test('a failed commit commits nothing, is tried again by one timer with doubling delays (new entries join it), and recovers once writes work', async (t) => {
  const d = dir(t);
  const path = join(d, 'gone', 'journal');
  const errors: Array<{ failures: number; at: number; code: string | undefined }> = [];
  const recovered: number[] = [];
  const j = new Journal(path, 0, {
    retryMs: 20,
    maxRetryMs: 80,
    onError: (e, failures) => errors.push({ failures, at: performance.now(), code: (e as NodeJS.ErrnoException).code }),
    onRecovered: (failures) => recovered.push(failures),
  });
  t.after(() => j.close());
  j.append('{"k":1}');
  let durable = false;
  j.afterCommit(() => (durable = true));
  const waitFor = async (what: string, ok: () => boolean): Promise<void> => {
    const deadline = Date.now() + 5_000;
    while (!ok()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((r) => setTimeout(r, 2));
    }
  };
  await waitFor('four failures', () => errors.length >= 4);
  // One timer: the failures come one at a time, each later than the last by the doubling delay (capped).
  assert.deepEqual(errors.slice(0, 4).map((e) => e.failures), [1, 2, 3, 4]);
  assert.equal(errors[0]?.code, 'ENOENT');
  // 20 + 40 + 80 ms between the four (a timer armed late in a long turn of the event loop may fire
  // a little early by the clock: some slack); without the doubling it would be 60.
  const span = errors[3]!.at - errors[0]!.at;
  assert.ok(span >= 110, `four failures over ${span} ms: the delays double`);
  assert.equal(durable, false, 'nothing waiting for a failed commit runs');
  assert.equal(j.failures, errors.length);
  // An entry staged now joins the retry: no commit of its own after this round.
  const before = errors.length;
  j.append('{"k":2}');
  await new Promise((r) => setImmediate(r));
  assert.equal(errors.length, before, 'no commit of its own while a retry is pending');
  // Writes work again: the retry (or commit() at once) commits both, in order.
  mkdirSync(join(d, 'gone'));
  assert.equal(j.commit(), true);
  assert.equal(durable, true);
  assert.equal(j.failures, 0);
  assert.equal(recovered.length, 1);
  assert.ok(recovered[0]! >= 4);
  assert.deepEqual(parseJournal(readFileSync(path, 'utf8')), { ok: true, entries: [{ k: 1 }, { k: 2 }], validBytes: statSync(path).size, tornTail: false });
});

/**
 * The agent's checkpoint under `<work_dir>/meta/`: what must survive `kill -9` of the agent.
 *
 *   meta/journal                         every change, one checksummed JSON line each
 *                                        (agent/journal.ts): the agent's identity and id, each
 *                                        task's TaskRecord (TaskInfo, FrameworkInfo, launcher pid
 *                                        and start time, task pid, kill in progress, statuses,
 *                                        the updates not yet acknowledged), the drain, and the
 *                                        tasks forgotten once their terminal update was acknowledged
 *   meta/exits/<fw>.<task>.json          written by drydock-launch when the task ends (ids
 *                                        escaped, so '.' separates them); removed with the task
 *
 * Every change is written BEFORE the agent acts on it: an update is on disk before it is sent,
 * a kill before its signal, a task before its launcher starts. Changes decided in one round of
 * events are committed together (one write, one fdatasync), and the actions wait for that
 * commit (`afterCommit`). Reading replays the journal; once it is mostly superseded records it
 * is compacted (rewritten with the live state only, atomically).
 *
 * Records are JSON with exact int64s (shared/json.ts): a drain's max_grace_period, or an
 * integer beyond 2^53 in a task's passthrough field, is written as bare digits and read back
 * as a bigint.
 *
 * Agents before the journal kept one file per record (meta/agent.json, meta/drain.json,
 * meta/tasks/<fw>/<task>/task.json, each replaced atomically); those are still read, and moved
 * into the journal by the first commit.
 */

import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rm, rmSync, unlink } from 'node:fs';
import { join } from 'node:path';
import { Journal, readJournal, type JournalInstruments } from './journal.js';
import type { FrameworkInfo, TaskInfo, TaskState, TaskStatus } from '../shared/mesos.js';
import { readDrainConfigWire, type DrainConfigWire } from '../shared/drain.js';
import { parseJson, stringifyJson } from '../shared/json.js';

/** Bumped when the layout changes; a checkpoint with another number is treated as corrupt. */
export const CHECKPOINT_FORMAT = 1;

/** Who wrote the checkpoint: a restart with another --hostname or --ip must not adopt it. */
export interface AgentIdentity {
  hostname: string;
  ip: string;
}

/** meta/agent.json. */
export interface AgentRecord extends AgentIdentity {
  format: typeof CHECKPOINT_FORMAT;
  agent_id?: string;
}

/** A kill in progress: when it started, and when SIGTERM and SIGKILL went out. Times are epoch ms. */
export interface KillRecord {
  requested_ms: number;
  grace_ms: number;
  /** When SIGKILL is due. */
  deadline_ms: number;
  sigterm_ms?: number;
  sigkill_ms?: number;
  /** Set when the task's health check asked for the kill: so many failures in a row (the terminal update says so). */
  health_check_failures?: number;
}

/** meta/tasks/<fw>/<task>/task.json. */
export interface TaskRecord {
  format: typeof CHECKPOINT_FORMAT;
  framework_id: string;
  framework: FrameworkInfo;
  task: TaskInfo;
  container_id: string;
  sandbox: string;
  launcher?: { pid: number; start_time: string };
  task_pid?: number;
  state: TaskState;
  /** Every status generated for the task, oldest first. */
  statuses: TaskStatus[];
  /** Updates not yet acknowledged, oldest (the ones in flight) first. */
  pending: TaskStatus[];
  /**
   * The task's TASK_RUNNING, generated with its TASK_STARTING and committed with the task before
   * the launcher starts: once the task has a pid it is queued and sent without waiting for a
   * commit of its own, and an agent restarted before that finds it here and sends the same
   * update (same uuid). Absent once queued, and in the records of agents before it.
   */
  running?: TaskStatus;
  kill?: KillRecord;
  /**
   * Where drydock-launch writes how the task ended, relative to meta/ (`exits/<fw>.<task>.json`).
   * Absent in the records of agents before the journal: meta/tasks/<fw>/<task>/exit.json.
   */
  exit_file?: string;
}

/** meta/drain.json: the drain this agent is carrying out (Mesos `drain.config`), written before it acts. */
export interface DrainRecord {
  format: typeof CHECKPOINT_FORMAT;
  config: DrainConfigWire;
  /** When the agent got the DRAIN (epoch ms): its estimated_drain_start_time. */
  received_ms: number;
}

export type CheckpointLoad =
  | { kind: 'fresh' }
  | { kind: 'recovered'; agentId: string | undefined; tasks: TaskRecord[] }
  | { kind: 'corrupt'; file: string; problem: string }
  | { kind: 'foreign'; found: AgentIdentity };

/**
 * Ids become path components: anything outside [A-Za-z0-9_-] is %-escaped, '.' included, so
 * no id can climb out with '..' or clash with another after escaping.
 */
export function safePathComponent(id: string): string {
  const escaped = id.replace(/[^A-Za-z0-9_-]/g, (c) =>
    [...Buffer.from(c, 'utf8')].map((b) => `%${b.toString(16).toUpperCase().padStart(2, '0')}`).join(''),
  );
  return escaped === '' ? '%' : escaped;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

type FileRead<T> = { ok: true; value: T } | { ok: false; problem: string };

function readJson(file: string): FileRead<Record<string, unknown>> {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, problem: `cannot read: ${(e as Error).message}` };
  }
  let data: unknown;
  try {
    data = parseJson(text);
  } catch (e) {
    return { ok: false, problem: `not valid JSON (${text.length === 0 ? 'empty file' : (e as Error).message})` };
  }
  if (!isObject(data)) return { ok: false, problem: 'not a JSON object' };
  if (data['format'] !== CHECKPOINT_FORMAT) return { ok: false, problem: `unknown format version ${stringifyJson(data['format'])} (this agent knows ${CHECKPOINT_FORMAT})` };
  return { ok: true, value: data };
}

function checkTask(o: Record<string, unknown>): string | undefined {
  if (typeof o['framework_id'] !== 'string' || o['framework_id'] === '') return 'framework_id is missing';
  if (!isObject(o['task']) || !isObject(o['task']['task_id']) || typeof o['task']['task_id']['value'] !== 'string') return 'task.task_id is missing';
  if (!isObject(o['framework'])) return 'framework is missing';
  if (typeof o['state'] !== 'string') return 'state is missing';
  if (!Array.isArray(o['statuses']) || !Array.isArray(o['pending'])) return 'statuses or pending is missing';
  if (o['running'] !== undefined && (!isObject(o['running']) || o['running']['state'] !== 'TASK_RUNNING' || typeof o['running']['uuid'] !== 'string')) return 'running is not a TASK_RUNNING update';
  if (typeof o['sandbox'] !== 'string' || typeof o['container_id'] !== 'string') return 'sandbox or container_id is missing';
  return undefined;
}


/** The journal's first line: the layout of the entries after it. */
export const JOURNAL_FORMAT = 1;

/** Below this size the journal is never compacted. */
export const COMPACT_MIN_BYTES = 1 << 20;
/** Compacted once it is this many times the size of the live state. */
export const COMPACT_RATIO = 4;

/** Where the checkpoint reports how long its group commits take (agent/metrics.ts). */
export type CheckpointInstruments = JournalInstruments;

export interface CheckpointOptions {
  instruments?: CheckpointInstruments | undefined;
  /** A commit failed, the `failures`-th in a row; it is tried again with backoff (the actions waiting for it wait longer). */
  onError?: (e: Error, failures: number) => void;
  /** A commit succeeded after `failures` that failed in a row. */
  onRecovered?: (failures: number) => void;
  /** First delay before a failed commit is tried again (Journal `retryMs`). Default 1 s. */
  retryMs?: number;
  /** For tests: how a commit is scheduled (default setImmediate). */
  schedule?: (fn: () => void) => void;
  /** How long a commit nothing waits for may wait for the next one (Journal `deferMs`). Default 0. */
  deferMs?: number;
}

type Entry =
  | { k: 'header'; format: number }
  | { k: 'agent'; v: Omit<AgentRecord, 'format'> }
  | { k: 'task'; v: TaskRecord }
  | { k: 'forget'; framework_id: string; task_id: string }
  | { k: 'drain'; v: Omit<DrainRecord, 'format'> }
  | { k: 'undrain' };

/** What replaying the checkpoint yields. */
interface State {
  agent: Omit<AgentRecord, 'format'> | undefined;
  drain: DrainRecord | undefined;
  /** Task records by framework and task id (as their JSON, ready for a compaction). */
  tasks: Map<string, string>;
}

function recordKey(frameworkId: string, taskId: string): string {
  return `${frameworkId}\u0000${taskId}`;
}

/** Applies one journal entry to the state; a problem names what is wrong with it. */
function applyEntry(state: State, e: unknown): string | undefined {
  if (!isObject(e)) return 'not a JSON object';
  switch (e['k']) {
    case 'agent': {
      const v = e['v'];
      if (!isObject(v) || typeof v['hostname'] !== 'string' || typeof v['ip'] !== 'string') return 'agent entry without hostname or ip';
      if (v['agent_id'] !== undefined && (typeof v['agent_id'] !== 'string' || v['agent_id'] === '')) return 'agent_id is not a string';
      state.agent = v as Omit<AgentRecord, 'format'>;
      return undefined;
    }
    case 'task': {
      const v = e['v'];
      if (!isObject(v)) return 'task entry without a record';
      if (v['format'] !== CHECKPOINT_FORMAT) return `task record of unknown format ${stringifyJson(v['format'])}`;
      const problem = checkTask(v);
      if (problem !== undefined) return problem;
      const r = v as unknown as TaskRecord;
      state.tasks.set(recordKey(r.framework_id, r.task.task_id.value), stringifyJson(r));
      return undefined;
    }
    case 'forget':
      if (typeof e['framework_id'] !== 'string' || typeof e['task_id'] !== 'string') return 'forget entry without framework_id or task_id';
      state.tasks.delete(recordKey(e['framework_id'], e['task_id']));
      return undefined;
    case 'drain': {
      const v = e['v'];
      // Read as the wire reads it (the grace exact, an older agent's JSON number included). One
      // that does not read is dropped, as a drain file that did not parse: the master re-sends
      // the drain at re-registration.
      const config = isObject(v) ? readDrainConfigWire(v['config']) : undefined;
      state.drain = isObject(v) && config?.ok === true ? ({ format: CHECKPOINT_FORMAT, ...v, config: config.value } as DrainRecord) : undefined;
      return undefined;
    }
    case 'undrain':
      state.drain = undefined;
      return undefined;
    default:
      return `unknown entry ${stringifyJson(e['k'])}`;
  }
}

/** The checkpoint of one agent work_dir. */
export class Checkpoint {
  readonly workDir: string;
  readonly metaDir: string;
  readonly #o: CheckpointOptions;
  #state: State = { agent: undefined, drain: undefined, tasks: new Map() };
  /** Bytes of JSON in the live state: the size a compaction would bring the journal down to. */
  #liveBytes = 0;
  #journal: Journal | undefined;
  /** Per-record files of an older agent, read at load and removed once the journal holds their content. */
  #legacy: string[] = [];
  #exitsReady = false;

  constructor(workDir: string, options: CheckpointOptions = {}) {
    this.workDir = workDir;
    this.metaDir = join(workDir, 'meta');
    this.#o = options;
  }

  get journalFile(): string {
    return join(this.metaDir, 'journal');
  }

  /** The exit file of a new task, relative to meta/ (TaskRecord.exit_file): one flat directory, no directory per task to make and remove. */
  exitFileName(frameworkId: string, taskId: string): string {
    return join('exits', `${safePathComponent(frameworkId)}.${safePathComponent(taskId)}.json`);
  }

  /** Where drydock-launch records how the task ended: the record's exit file, or where agents before the journal put it. */
  exitFile(record: TaskRecord): string {
    if (record.exit_file !== undefined) return join(this.metaDir, record.exit_file);
    return join(this.#legacyTaskDir(record.framework_id, record.task.task_id.value), 'exit.json');
  }

  #legacyTaskDir(frameworkId: string, taskId: string): string {
    return join(this.metaDir, 'tasks', safePathComponent(frameworkId), safePathComponent(taskId));
  }

  sandboxDir(frameworkId: string, taskId: string): string {
    return join(this.workDir, 'sandboxes', safePathComponent(frameworkId), safePathComponent(taskId));
  }

  /**
   * Reads everything back. A checkpoint written for another hostname or IP is 'foreign' (the
   * operator must decide); one that does not parse is 'corrupt' (the agent starts afresh).
   */
  load(self: AgentIdentity): CheckpointLoad {
    this.#journal?.close();
    this.#journal = undefined;
    this.#setState({ agent: undefined, drain: undefined, tasks: new Map() });
    this.#legacy = [];
    this.#exitsReady = false;
    if (!existsSync(this.metaDir)) return { kind: 'fresh' };
    const state: State = { agent: undefined, drain: undefined, tasks: new Map() };
    const legacy = this.#readLegacy(state);
    if (legacy !== undefined) return legacy;
    const read = readJournal(this.journalFile);
    if (!read.ok) return { kind: 'corrupt', file: this.journalFile, problem: read.problem };
    const [header, ...entries] = read.entries;
    if (header !== undefined && (!isObject(header) || header['k'] !== 'header' || header['format'] !== JOURNAL_FORMAT)) {
      return { kind: 'corrupt', file: this.journalFile, problem: `unknown journal format ${stringifyJson(isObject(header) ? header['format'] : header)} (this agent knows ${JOURNAL_FORMAT})` };
    }
    for (const [i, e] of entries.entries()) {
      const problem = applyEntry(state, e);
      if (problem !== undefined) return { kind: 'corrupt', file: this.journalFile, problem: `line ${i + 2}: ${problem}` };
    }
    if (state.agent !== undefined && (state.agent.hostname !== self.hostname || state.agent.ip !== self.ip)) {
      return { kind: 'foreign', found: { hostname: state.agent.hostname, ip: state.agent.ip } };
    }
    this.#setState(state);
    this.#journal = this.#openJournal(read.validBytes);
    const tasks = [...state.tasks.values()].map((json) => parseJson(json) as TaskRecord);
    return { kind: 'recovered', agentId: state.agent?.agent_id, tasks };
  }

  /**
   * The per-record files of an agent before the journal (format 1: meta/agent.json,
   * meta/drain.json, meta/tasks/<fw>/<task>/task.json), read into `state`; a problem with one
   * is returned as the load's result.
   */
  #readLegacy(state: State): CheckpointLoad | undefined {
    const agentFile = join(this.metaDir, 'agent.json');
    if (existsSync(agentFile)) {
      const a = readJson(agentFile);
      if (!a.ok) return { kind: 'corrupt', file: agentFile, problem: a.problem };
      const { hostname, ip } = a.value;
      if (typeof hostname !== 'string' || typeof ip !== 'string') return { kind: 'corrupt', file: agentFile, problem: 'hostname or ip is missing' };
      const id = a.value['agent_id'];
      if (id !== undefined && (typeof id !== 'string' || id === '')) return { kind: 'corrupt', file: agentFile, problem: 'agent_id is not a string' };
      state.agent = { hostname, ip, ...(id !== undefined ? { agent_id: id } : {}) };
      this.#legacy.push(agentFile);
    }
    const root = join(this.metaDir, 'tasks');
    if (existsSync(root)) {
      for (const fw of readdirSync(root)) {
        for (const task of readdirSync(join(root, fw))) {
          const file = join(root, fw, task, 'task.json');
          if (!existsSync(file)) continue; // created but never written: the launch had not begun.
          const r = readJson(file);
          if (!r.ok) return { kind: 'corrupt', file, problem: r.problem };
          const problem = checkTask(r.value);
          if (problem !== undefined) return { kind: 'corrupt', file, problem };
          const rec = r.value as unknown as TaskRecord;
          state.tasks.set(recordKey(rec.framework_id, rec.task.task_id.value), stringifyJson(rec));
          this.#legacy.push(file);
        }
      }
    }
    const drainFile = join(this.metaDir, 'drain.json');
    if (existsSync(drainFile)) {
      const r = readJson(drainFile);
      applyEntry(state, { k: 'drain', v: r.ok ? r.value : undefined });
      this.#legacy.push(drainFile);
    }
    return undefined;
  }

  /** Moves meta/ aside (meta.corrupt-<ms>) so the agent can start clean; returns the new path. */
  quarantine(nowMs: number): string {
    this.#journal?.close();
    this.#journal = undefined;
    this.#setState({ agent: undefined, drain: undefined, tasks: new Map() });
    this.#legacy = [];
    this.#exitsReady = false;
    const aside = join(this.workDir, `meta.corrupt-${nowMs}`);
    renameSync(this.metaDir, aside);
    return aside;
  }

  // ---- Changes: staged, committed together after this round of events -------------------

  writeAgent(record: Omit<AgentRecord, 'format'>): number {
    this.#state.agent = record;
    return this.#append({ k: 'agent', v: record });
  }

  writeTask(record: TaskRecord): number {
    const json = stringifyJson(record);
    this.#setTask(recordKey(record.framework_id, record.task.task_id.value), json);
    return this.#journalNow().append(`{"k":"task","v":${json}}`);
  }

  /** The checkpointed drain, if any (read by load). */
  readDrain(): DrainRecord | undefined {
    return this.#state.drain;
  }

  writeDrain(record: Omit<DrainRecord, 'format'>): number {
    this.#state.drain = { format: CHECKPOINT_FORMAT, ...record };
    return this.#append({ k: 'drain', v: record });
  }

  /** The drain is over (no tasks, nothing unacknowledged). */
  removeDrain(): number {
    this.#state.drain = undefined;
    return this.#append({ k: 'undrain' });
  }

  /** The directory drydock-launch writes exit files in; made before the first launcher starts. */
  prepareExits(): void {
    if (this.#exitsReady) return;
    mkdirSync(join(this.metaDir, 'exits'), { recursive: true });
    this.#exitsReady = true;
  }

  /**
   * Forgets a completed task (its terminal update was acknowledged). The sandbox stays for the
   * operator. Its exit file is removed in the background (a terminal task never needs it again,
   * and an unlink costs the event loop a journal transaction of the filesystem); one left by a
   * crash is swept at the next start.
   */
  removeTask(record: TaskRecord): number {
    const fw = record.framework_id;
    const id = record.task.task_id.value;
    this.#setTask(recordKey(fw, id), undefined);
    const seq = this.#append({ k: 'forget', framework_id: fw, task_id: id });
    // unlink, not rm: rm checks its target with an lstat on the event loop first.
    if (record.exit_file !== undefined) unlink(join(this.metaDir, record.exit_file), () => {});
    else rm(this.#legacyTaskDir(fw, id), { recursive: true, force: true }, () => {});
    return seq;
  }

  /**
   * Removes, in the background, exit files and older agents' task directories that belong to no
   * task the checkpoint holds (left by a crash between forgetting a task and removing them).
   */
  sweep(): void {
    const live = new Set<string>();
    for (const json of this.#state.tasks.values()) {
      const r = JSON.parse(json) as TaskRecord;
      live.add(r.exit_file ?? this.#legacyTaskDir(r.framework_id, r.task.task_id.value));
    }
    const exits = join(this.metaDir, 'exits');
    for (const name of existsSync(exits) ? readdirSync(exits) : []) {
      if (!live.has(join('exits', name))) rm(join(exits, name), { force: true }, () => {});
    }
    const root = join(this.metaDir, 'tasks');
    for (const fw of existsSync(root) ? readdirSync(root) : []) {
      for (const task of readdirSync(join(root, fw))) {
        const dir = join(root, fw, task);
        if (!live.has(dir)) rm(dir, { recursive: true, force: true }, () => {});
      }
    }
  }

  /** Runs `fn` once every change made so far is durable (now, if all are). */
  afterCommit(fn: () => void): void {
    if (this.#journal === undefined) return fn();
    this.#journal.afterCommit(fn);
  }

  /** Is the change numbered `seq` (returned by a write) durable? */
  durable(seq: number): boolean {
    return this.#journal?.durable(seq) ?? true;
  }

  /** Runs `fn` once the change numbered `seq` (returned by a write) is durable. */
  after(seq: number, fn: () => void): void {
    if (this.#journal === undefined) return fn();
    this.#journal.after(seq, fn);
  }

  /** Commits every staged change now (before the agent reports its state to a master, say). False if the write failed. */
  flush(): boolean {
    return this.#journal?.commit() ?? true;
  }

  /** Does the checkpoint write? False while a failed commit waits to be tried again. */
  get healthy(): boolean {
    return (this.#journal?.failures ?? 0) === 0;
  }

  /** Commits what is staged and closes the journal (the agent is stopping). */
  close(): void {
    this.#journal?.close();
    this.#journal = undefined;
  }

  #append(entry: Entry): number {
    return this.#journalNow().append(stringifyJson(entry));
  }

  #setState(state: State): void {
    this.#state = state;
    this.#liveBytes = 0;
    for (const json of state.tasks.values()) this.#liveBytes += json.length;
  }

  #setTask(key: string, json: string | undefined): void {
    const old = this.#state.tasks.get(key);
    if (old !== undefined) this.#liveBytes -= old.length;
    if (json === undefined) this.#state.tasks.delete(key);
    else {
      this.#state.tasks.set(key, json);
      this.#liveBytes += json.length;
    }
  }

  #journalNow(): Journal {
    if (this.#journal !== undefined) return this.#journal;
    mkdirSync(this.metaDir, { recursive: true });
    const read = readJournal(this.journalFile);
    this.#journal = this.#openJournal(read.ok ? read.validBytes : 0);
    return this.#journal;
  }

  #openJournal(validBytes: number): Journal {
    return new Journal(this.journalFile, validBytes, {
      instruments: this.#o.instruments,
      ...(this.#o.onError === undefined ? {} : { onError: this.#o.onError }),
      ...(this.#o.onRecovered === undefined ? {} : { onRecovered: this.#o.onRecovered }),
      ...(this.#o.retryMs === undefined ? {} : { retryMs: this.#o.retryMs }),
      ...(this.#o.schedule === undefined ? {} : { schedule: this.#o.schedule }),
      ...(this.#o.deferMs === undefined ? {} : { deferMs: this.#o.deferMs }),
      compact: () => this.#compaction(),
      onRewritten: () => {
        for (const file of this.#legacy) rmSync(file, { force: true });
        this.#legacy = [];
      },
    });
  }

  /**
   * When a commit should write the whole live state afresh instead of appending: the journal is
   * new (it gets its header), mostly superseded records, or an older agent's files are still to
   * be moved in.
   */
  #compaction(): string[] | undefined {
    const size = this.#journal?.size ?? 0;
    const due = size === 0 || this.#legacy.length > 0 || (size > COMPACT_MIN_BYTES && size > COMPACT_RATIO * this.#liveBytes);
    return due ? this.#liveLines() : undefined;
  }

  /** The whole live state as journal entries, header first. */
  #liveLines(): string[] {
    const s = this.#state;
    const lines = [JSON.stringify({ k: 'header', format: JOURNAL_FORMAT })];
    if (s.agent !== undefined) lines.push(JSON.stringify({ k: 'agent', v: s.agent }));
    if (s.drain !== undefined) {
      const { format: _format, ...v } = s.drain;
      lines.push(stringifyJson({ k: 'drain', v }));
    }
    for (const json of s.tasks.values()) lines.push(`{"k":"task","v":${json}}`);
    return lines;
  }
}

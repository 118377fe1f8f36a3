/**
 * The agent's checkpoint under `<work_dir>/meta/`: what must survive `kill -9` of the agent.
 *
 *   meta/agent.json                      {format, hostname, ip, agent_id?}
 *   meta/tasks/<fw>/<task>/task.json     TaskRecord: TaskInfo, FrameworkInfo, launcher pid and
 *                                        start time, task pid, kill in progress, statuses, and
 *                                        the updates not yet acknowledged
 *   meta/tasks/<fw>/<task>/exit.json     written by drydock-launch when the task ends
 *
 * Every file is replaced atomically (tmp, fsync, rename) and written BEFORE the agent acts on
 * it: an update is on disk before it is sent, an agent id before `registered` is logged.
 */

import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { FrameworkInfo, TaskInfo, TaskState, TaskStatus } from '../shared/mesos.js';
import type { DrainConfigWire } from '../shared/drain.js';

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
  /** Updates not yet acknowledged, oldest (the one in flight) first. */
  pending: TaskStatus[];
  kill?: KillRecord;
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

/** Writes a file so that a crash leaves either the old or the new content, never a torn one. */
export function writeFileAtomic(path: string, content: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o644);
  try {
    writeSync(fd, content);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
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
    data = JSON.parse(text);
  } catch (e) {
    return { ok: false, problem: `not valid JSON (${text.length === 0 ? 'empty file' : (e as Error).message})` };
  }
  if (!isObject(data)) return { ok: false, problem: 'not a JSON object' };
  if (data['format'] !== CHECKPOINT_FORMAT) return { ok: false, problem: `unknown format version ${JSON.stringify(data['format'])} (this agent knows ${CHECKPOINT_FORMAT})` };
  return { ok: true, value: data };
}

function checkTask(o: Record<string, unknown>): string | undefined {
  if (typeof o['framework_id'] !== 'string' || o['framework_id'] === '') return 'framework_id is missing';
  if (!isObject(o['task']) || !isObject(o['task']['task_id']) || typeof o['task']['task_id']['value'] !== 'string') return 'task.task_id is missing';
  if (!isObject(o['framework'])) return 'framework is missing';
  if (typeof o['state'] !== 'string') return 'state is missing';
  if (!Array.isArray(o['statuses']) || !Array.isArray(o['pending'])) return 'statuses or pending is missing';
  if (typeof o['sandbox'] !== 'string' || typeof o['container_id'] !== 'string') return 'sandbox or container_id is missing';
  return undefined;
}

/**
 * Where the checkpoint reports how long its durable writes take (agent/metrics.ts). `now` is a
 * monotonic clock in ms (a wall-clock step must not show up as a slow disk).
 */
export interface CheckpointInstruments {
  now(): number;
  /** One atomic write (write, fsync, rename) took `ms`; `ok` false when it threw. */
  onWrite(ms: number, ok: boolean): void;
}

/** The checkpoint of one agent work_dir. */
export class Checkpoint {
  readonly workDir: string;
  readonly metaDir: string;
  readonly #instruments: CheckpointInstruments | undefined;

  constructor(workDir: string, instruments?: CheckpointInstruments) {
    this.workDir = workDir;
    this.metaDir = join(workDir, 'meta');
    this.#instruments = instruments;
  }

  /** writeFileAtomic, timed: every durable write the agent waits for goes through here. */
  #write(path: string, content: string): void {
    const i = this.#instruments;
    if (i === undefined) return writeFileAtomic(path, content);
    const start = i.now();
    let ok = false;
    try {
      writeFileAtomic(path, content);
      ok = true;
    } finally {
      i.onWrite(i.now() - start, ok);
    }
  }

  get agentFile(): string {
    return join(this.metaDir, 'agent.json');
  }

  taskDir(frameworkId: string, taskId: string): string {
    return join(this.metaDir, 'tasks', safePathComponent(frameworkId), safePathComponent(taskId));
  }

  /** Where drydock-launch records how the task ended. */
  exitFile(frameworkId: string, taskId: string): string {
    return join(this.taskDir(frameworkId, taskId), 'exit.json');
  }

  sandboxDir(frameworkId: string, taskId: string): string {
    return join(this.workDir, 'sandboxes', safePathComponent(frameworkId), safePathComponent(taskId));
  }

  /**
   * Reads everything back. A checkpoint written for another hostname or IP is 'foreign' (the
   * operator must decide); one that does not parse is 'corrupt' (the agent starts afresh).
   */
  load(self: AgentIdentity): CheckpointLoad {
    if (!existsSync(this.metaDir)) return { kind: 'fresh' };
    let agentId: string | undefined;
    if (existsSync(this.agentFile)) {
      const a = readJson(this.agentFile);
      if (!a.ok) return { kind: 'corrupt', file: this.agentFile, problem: a.problem };
      const { hostname, ip } = a.value;
      if (typeof hostname !== 'string' || typeof ip !== 'string') return { kind: 'corrupt', file: this.agentFile, problem: 'hostname or ip is missing' };
      if (hostname !== self.hostname || ip !== self.ip) return { kind: 'foreign', found: { hostname, ip } };
      const id = a.value['agent_id'];
      if (id !== undefined && (typeof id !== 'string' || id === '')) return { kind: 'corrupt', file: this.agentFile, problem: 'agent_id is not a string' };
      agentId = id;
    }
    const tasks: TaskRecord[] = [];
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
          tasks.push(r.value as unknown as TaskRecord);
        }
      }
    }
    return { kind: 'recovered', agentId, tasks };
  }

  /** Moves meta/ aside (meta.corrupt-<ms>) so the agent can start clean; returns the new path. */
  quarantine(nowMs: number): string {
    const aside = join(this.workDir, `meta.corrupt-${nowMs}`);
    renameSync(this.metaDir, aside);
    return aside;
  }

  writeAgent(record: Omit<AgentRecord, 'format'>): void {
    mkdirSync(this.metaDir, { recursive: true });
    this.#write(this.agentFile, JSON.stringify({ format: CHECKPOINT_FORMAT, ...record }));
  }

  writeTask(record: TaskRecord): void {
    const dir = this.taskDir(record.framework_id, record.task.task_id.value);
    mkdirSync(dir, { recursive: true });
    this.#write(join(dir, 'task.json'), JSON.stringify(record));
  }

  get drainFile(): string {
    return join(this.metaDir, 'drain.json');
  }

  /** The checkpointed drain, if any. One that does not parse is dropped (the master re-sends the drain at re-registration). */
  readDrain(): DrainRecord | undefined {
    if (!existsSync(this.drainFile)) return undefined;
    const r = readJson(this.drainFile);
    if (!r.ok || !isObject(r.value['config']) || typeof r.value['config']['mark_gone'] !== 'boolean') return undefined;
    return r.value as unknown as DrainRecord;
  }

  writeDrain(record: Omit<DrainRecord, 'format'>): void {
    mkdirSync(this.metaDir, { recursive: true });
    this.#write(this.drainFile, JSON.stringify({ format: CHECKPOINT_FORMAT, ...record }));
  }

  /** The drain is over (no tasks, nothing unacknowledged). */
  removeDrain(): void {
    rmSync(this.drainFile, { force: true });
  }

  /** Forgets a completed task (its terminal update was acknowledged). The sandbox stays for the operator. */
  removeTask(frameworkId: string, taskId: string): void {
    rmSync(this.taskDir(frameworkId, taskId), { recursive: true, force: true });
  }
}

/**
 * `drydock task logs`, the pure part: which task an argument names among the master's tasks,
 * where the last N lines of a file begin when it is read backwards a chunk at a time, the
 * sandbox path the agent serves a task's file under, and the lines its refusals print. The shell
 * (logs-command.ts) asks the master and the agent and writes the bytes.
 */

import { isTerminal, type TaskState } from '../shared/mesos.js';
import type { Checked } from './maintenance.js';

/** A task as GET_TASKS writes it (the fields `task logs` reads). */
export interface LogsTaskJson {
  name?: string;
  task_id?: { value?: string };
  framework_id?: { value?: string };
  agent_id?: { value?: string };
  state?: string;
}

/** GET_TASKS' lists. */
export interface LogsTasksAnswer {
  tasks?: LogsTaskJson[];
  unreachable_tasks?: LogsTaskJson[];
  completed_tasks?: LogsTaskJson[];
  orphan_tasks?: LogsTaskJson[];
}

/** The task whose sandbox is read. */
export interface TaskRef {
  readonly taskId: string;
  readonly frameworkId: string;
  readonly agentId: string;
  readonly name: string;
  readonly state: string;
}

/** Whether a task has ended (a Mesos terminal state): nothing more will be written to its sandbox. */
export function taskEnded(state: string): boolean {
  return isTerminal(state as TaskState);
}

function refOf(t: LogsTaskJson): TaskRef | undefined {
  const taskId = t.task_id?.value;
  const frameworkId = t.framework_id?.value;
  const agentId = t.agent_id?.value;
  if (taskId === undefined || frameworkId === undefined || agentId === undefined) return undefined;
  return { taskId, frameworkId, agentId, name: t.name ?? '', state: t.state ?? '' };
}

/** The master's tasks, live ones first (a task id listed twice is the live one). */
export function taskRefs(answer: LogsTasksAnswer): TaskRef[] {
  const all = [...(answer.tasks ?? []), ...(answer.unreachable_tasks ?? []), ...(answer.orphan_tasks ?? []), ...(answer.completed_tasks ?? [])];
  const seen = new Set<string>();
  const refs: TaskRef[] = [];
  for (const t of all) {
    const r = refOf(t);
    if (r === undefined) continue;
    const key = `${r.frameworkId}\u0000${r.taskId}`;
    if (seen.has(key)) continue;
    seen.add(key);
    refs.push(r);
  }
  return refs;
}

/**
 * The task `arg` names: a task id exactly, else the one task of that name (the live one when a
 * name was reused and one of its runs is live), else the one task whose id starts with it; within
 * `framework` when given. Several matches are an error that lists them. Pure.
 */
export function findTask(arg: string, refs: readonly TaskRef[], framework?: string): Checked<TaskRef> {
  const wanted = arg.trim();
  if (wanted === '') return { ok: false, error: 'name a task: its id, a unique prefix of it, or its name' };
  const pool = framework === undefined ? refs : refs.filter((r) => r.frameworkId === framework);
  const within = framework === undefined ? '' : ` of framework ${framework}`;
  const pick = (matches: readonly TaskRef[], how: string): Checked<TaskRef> | undefined => {
    const [only] = matches;
    if (matches.length === 1 && only !== undefined) return { ok: true, value: only };
    if (matches.length === 0) return undefined;
    const live = matches.filter((m) => !taskEnded(m.state));
    const [onlyLive] = live;
    // A name reused by finished runs and one live run: the live one is what is meant.
    if (how === 'name' && live.length === 1 && onlyLive !== undefined) return { ok: true, value: onlyLive };
    const list = matches.slice(0, 20).map((m) => `  ${m.taskId}  ${m.state}  framework ${m.frameworkId}`).join('\n');
    const more = matches.length > 20 ? `\n  ... and ${matches.length - 20} more` : '';
    const hint = how === 'id' ? ' (give --framework)' : ' (give its task id)';
    return { ok: false, error: `'${wanted}' names ${matches.length} tasks by ${how}${within}${hint}:\n${list}${more}` };
  };
  // A name before a prefix: `drydock run --name hello` makes ids hello-<random>, which its name prefixes.
  return pick(pool.filter((r) => r.taskId === wanted), 'id')
    ?? pick(pool.filter((r) => r.name === wanted), 'name')
    ?? pick(pool.filter((r) => r.taskId.startsWith(wanted)), 'id prefix')
    ?? { ok: false, error: `no task '${wanted}'${within} is known to the master (drydock tasks --all lists them)` };
}

/** Which sandbox file: the task's stdout or its stderr. */
export type LogStream = 'stdout' | 'stderr';

/**
 * The path the agent serves a task's file under, as Mesos attaches an executor's latest run
 * (Drydock runs each task as its own executor, whose id is the task's id).
 */
export function sandboxFilePath(task: Pick<TaskRef, 'frameworkId' | 'taskId'>, stream: LogStream): string {
  return `/frameworks/${task.frameworkId}/executors/${task.taskId}/runs/latest/${stream}`;
}

/** `--tail N`: a count of lines, 0 and up; undefined when not given (the whole file). */
export function parseTailLines(text: string | undefined): Checked<number | undefined> {
  if (text === undefined) return { ok: true, value: undefined };
  if (!/^[0-9]{1,9}$/.test(text.trim())) return { ok: false, error: `--tail: a number of lines (0 or more), got '${text}'` };
  return { ok: true, value: Number(text.trim()) };
}

/**
 * Where the last `lines` lines of a file of `size` bytes begin, found reading it backwards a
 * chunk at a time (`feed` each chunk, the one ending at the file's end first, with the offset it
 * starts at). A final newline ends the last line and begins no new one: the last line of
 * "a\nb\n" is "b\n", of "a\nb" is "b". Bytes, not characters: a newline byte never occurs
 * inside a UTF-8 sequence, so lines are found in any encoding that keeps '\n' a byte of its own.
 */
export class TailScan {
  readonly #size: number;
  #wanted: number;
  #start: number | undefined;

  constructor(size: number, lines: number) {
    this.#size = size;
    this.#wanted = lines;
    if (lines <= 0) this.#start = size;
    else if (size === 0) this.#start = 0;
  }

  /** The offset the tail starts at, once found (0 when the whole file is fewer lines). */
  get start(): number | undefined {
    return this.#start;
  }

  /**
   * One chunk, read from `at` (each chunk just before the previous one). Returns the start once
   * found; undefined while more of the file before `at` must be read. At offset 0 the file's
   * beginning is the start.
   */
  feed(chunk: Uint8Array, at: number): number | undefined {
    if (this.#start !== undefined) return this.#start;
    for (let i = chunk.length - 1; i >= 0; i--) {
      const offset = at + i;
      if (chunk[i] !== 0x0a) continue;
      // The newline that ends the file ends its last line: it starts none.
      if (offset === this.#size - 1) continue;
      if (--this.#wanted === 0) {
        this.#start = offset + 1;
        return this.#start;
      }
    }
    if (at <= 0) this.#start = 0;
    return this.#start;
  }
}

/** The line for an agent that refused the read (403): the agent's own words and the ACL to look at. */
export function forbiddenLine(agent: string, body: string): string {
  const said = body.trim() === '' ? 'Forbidden' : body.trim();
  return `the agent ${agent} refused to serve the sandbox: ${said} (the agent's ACLs: access_sandboxes and view_tasks on the task's user)`;
}

/** The line for an agent that wants credentials (401) or refused the ones given. */
export function unauthenticatedLine(agent: string, credential: string | undefined): string {
  return credential === undefined
    ? `the agent ${agent} wants credentials (401): give --principal and --secret_file (or DRYDOCK_CREDENTIALS); the agent checks them itself`
    : `the agent ${agent} refused the credentials (401): ${credential}`;
}

/** The line for a task whose agent the master no longer has. */
export function agentGoneLine(task: TaskRef): string {
  return `task ${task.taskId} ran on agent ${task.agentId}, which the master no longer has (removed or marked gone): its sandbox cannot be read through Drydock`;
}

/** The line for an agent that is not connected (unreachable, or not back since a master restart). */
export function agentDownLine(task: TaskRef, hostname: string, state: string): string {
  return `task ${task.taskId} is on ${hostname} (${task.agentId}), which is ${state}: its sandbox can be read once the agent is back`;
}

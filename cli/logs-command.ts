/**
 * `drydock task logs TASK [--stderr] [-f [--timeout D]] [--tail N] [--framework ID] [--json]`:
 * a task's stdout (or stderr) through its agent's sandbox API. The master says which agent runs
 * the task (GET_TASKS) and where that agent listens (Drydock's view of the agent); the agent
 * serves the file (READ_FILE: the bytes as base64 with the file's size, so what is written is
 * exactly what the task wrote, whatever its encoding; Mesos' /files/read answers text, which
 * cannot carry bytes that are not UTF-8). The agent authenticates and authorizes the read
 * itself (access_sandboxes and view_tasks on the task's user), with the CLI's credential and TLS
 * material. Decisions are in logs.ts.
 */

import { ApiError, type MasterClient } from './client.js';
import type { ClientAccess } from '../io/client-auth.js';
import { parseJson, stringifyJson } from '../shared/json.js';
import { msToNs } from '../shared/duration.js';
import type { DrydockAgentJson } from './drain.js';
import { EXIT_FAILED, EXIT_FORBIDDEN, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, EXIT_UNAUTHENTICATED, EXIT_USAGE } from './exit-codes.js';
import { formatSpan, waitTimeoutMs } from './nanotime.js';
import { terminalIo, type TerminalIo } from './terminal.js';
import {
  TailScan,
  agentGoneLine,
  findTask,
  forbiddenLine,
  parseTailLines,
  sandboxFilePath,
  taskEnded,
  taskRefs,
  unauthenticatedLine,
  type LogStream,
  type LogsTasksAnswer,
  type TaskRef,
} from './logs.js';

/** The flags of `drydock task logs`. */
export interface LogsFlags {
  stderr?: boolean;
  follow?: boolean;
  tail?: string;
  framework?: string;
  timeout?: string;
  json?: boolean;
}

/** The most the agent serves in one read (Mesos' cap, agent/files.ts MAX_READ_BYTES). */
export const READ_CHUNK = 64 * 1024;
/** How often `-f` asks the agent for more when the last read found nothing: lively, cheap for the agent. */
export const FOLLOW_POLL_MS = 500;
/** How often `-f` asks the master whether the task has ended, at most. */
const STATE_POLL_MS = 1_000;
/** Consecutive failed reads (about 10 s) after which `-f` gives up. */
const FOLLOW_MAX_FAILURES = 20;
/** How long one read of the agent may take. */
const AGENT_TIMEOUT_MS = 15_000;

/** Where the bytes go: stdout, with its back-pressure respected (a test's sink collects them). */
export interface ByteSink {
  write(bytes: Uint8Array): Promise<void>;
}

/** The process's stdout as a ByteSink: waits for 'drain' when the pipe is full. */
export const stdoutSink: ByteSink = {
  write: (bytes) =>
    new Promise((resolve) => {
      if (process.stdout.write(bytes)) resolve();
      else process.stdout.once('drain', () => resolve());
    }),
};

/** One read of an agent's sandbox file. */
export type AgentRead =
  | { kind: 'data'; size: number; data: Buffer }
  | { kind: 'refused'; status: number; body: string }
  | { kind: 'unreachable'; why: string };

/** Reads sandbox files of one agent. */
export interface AgentReader {
  /** Where the agent is, for messages (`agent-1 at 127.0.0.2:5051`). */
  readonly where: string;
  read(path: string, offset: number, length: number): Promise<AgentRead>;
}

/** READ_FILE on the agent's v1 API at `base`, with the CLI's credential and TLS options. */
export function agentReader(base: string, where: string, access: ClientAccess): AgentReader {
  return {
    where,
    async read(path, offset, length) {
      let res: Response;
      try {
        res = await access.transport.fetch(`${base}/api/v1`, {
          method: 'POST',
          headers: { ...access.transport.headers, 'content-type': 'application/json', accept: 'application/json' },
          body: stringifyJson({ type: 'READ_FILE', read_file: { path, offset, length } }),
          signal: AbortSignal.timeout(AGENT_TIMEOUT_MS),
        });
      } catch (e) {
        const err = e as { name?: string; message?: string; cause?: { code?: string; message?: string } };
        if (err.name === 'TimeoutError' || err.name === 'AbortError') return { kind: 'unreachable', why: 'it did not answer in time' };
        return { kind: 'unreachable', why: err.cause?.code ?? err.cause?.message ?? err.message ?? String(e) };
      }
      const text = await res.text();
      if (res.status !== 200) return { kind: 'refused', status: res.status, body: text };
      try {
        const j = parseJson(text) as { read_file?: { size?: unknown; data?: unknown } };
        const size = Number(j.read_file?.size ?? 0);
        const data = j.read_file?.data;
        return { kind: 'data', size, data: Buffer.from(typeof data === 'string' ? data : '', 'base64') };
      } catch (e) {
        return { kind: 'refused', status: res.status, body: `an answer drydock cannot read: ${(e as Error).message}` };
      }
    },
  };
}

/** What `task logs` needs of the world; the process's by default, a test's fakes otherwise. */
export interface LogsWorld {
  /** The agent reader for the task's agent (its address from Drydock's view of the agent). */
  reader(agent: DrydockAgentJson): AgentReader;
  sink: ByteSink;
  io: TerminalIo;
}

/** The line and status for an agent's refusal. */
function refusal(r: Extract<AgentRead, { kind: 'refused' }>, task: TaskRef, reader: AgentReader, credential: string | undefined): { line: string; code: number } {
  const body = r.body.trim();
  if (r.status === 401) return { line: unauthenticatedLine(reader.where, credential), code: EXIT_UNAUTHENTICATED };
  if (r.status === 403) return { line: forbiddenLine(reader.where, body), code: EXIT_FORBIDDEN };
  if (r.status === 404) {
    return {
      line: `the agent ${reader.where} does not serve the sandbox of task ${task.taskId} (${body || 'not found'}): it keeps its last 1,000 ended tasks in memory, and a restart forgets those`,
      code: EXIT_FAILED,
    };
  }
  return { line: `the agent ${reader.where} answered ${r.status}: ${body}`, code: EXIT_FAILED };
}

/**
 * `drydock task logs`: finds the task through the master, then prints its file from the start
 * (or from its last --tail lines) and, with -f, what the task writes after, until the task has
 * ended and everything is printed (exit 0), Ctrl-C (130) or --timeout (124).
 */
export async function taskLogs(client: MasterClient, arg: string, flags: LogsFlags, access: ClientAccess, scheme: 'http' | 'https', world?: Partial<LogsWorld>): Promise<number> {
  const io = world?.io ?? terminalIo('drydock');
  const sink = world?.sink ?? stdoutSink;
  const follow = flags.follow === true;
  const tail = parseTailLines(flags.tail);
  if (!tail.ok) {
    io.err(tail.error);
    return EXIT_USAGE;
  }
  const timeout = waitTimeoutMs(flags.timeout, follow, '--follow');
  if (!timeout.ok) {
    io.err(timeout.error);
    return EXIT_USAGE;
  }
  const stream: LogStream = flags.stderr === true ? 'stderr' : 'stdout';

  const tasks = await client.call<{ get_tasks?: LogsTasksAnswer }>({ type: 'GET_TASKS' });
  const found = findTask(arg, taskRefs(tasks?.get_tasks ?? {}), flags.framework);
  if (!found.ok) {
    io.err(found.error);
    return EXIT_FAILED;
  }
  let task = found.value;
  const agent = await client.getJson<DrydockAgentJson>(`/drydock/v1/agents/${encodeURIComponent(task.agentId)}`);
  if (agent === undefined) {
    io.err(agentGoneLine(task));
    return EXIT_FAILED;
  }
  if (agent.ip === undefined || agent.port === undefined) {
    io.err(`the master does not say where agent ${task.agentId} listens`);
    return EXIT_FAILED;
  }
  const reader = world?.reader?.(agent) ?? agentReader(`${scheme}://${agent.ip}:${agent.port}`, `${agent.hostname ?? task.agentId} at ${agent.ip}:${agent.port}`, access);
  const path = sandboxFilePath(task, stream);
  const json = flags.json === true;
  const emit = async (offset: number, data: Buffer): Promise<void> => {
    if (data.length === 0) return;
    if (json) await sink.write(Buffer.from(stringifyJson({ task_id: { value: task.taskId }, framework_id: { value: task.frameworkId }, agent_id: { value: task.agentId }, file: stream, path, offset, data: data.toString('base64') }) + '\n'));
    else await sink.write(data);
  };
  const unreachable = (why: string): number => {
    const state = agent.state !== undefined && agent.state !== 'ACTIVE' ? ` (the master sees it ${agent.state})` : '';
    io.err(`cannot read task ${task.taskId}'s ${stream} from the agent ${reader.where}${state}: ${why}`);
    return EXIT_FAILED;
  };

  // Ctrl-C and --timeout end the reading; the task goes on.
  const stop = new AbortController();
  let why: 'interrupted' | 'expired' | undefined;
  const off = io.onSignal(() => {
    why ??= 'interrupted';
    stop.abort();
  });
  const startedMs = io.nowMs();
  if (timeout.value !== undefined) {
    const ms = timeout.value;
    void io.sleep(ms, stop.signal).then(() => {
      if (io.nowMs() - startedMs >= ms) {
        why ??= 'expired';
        stop.abort();
      }
    });
  }
  const stopped = (): number | undefined => {
    if (why === 'interrupted') {
      io.err(`stopped following task ${task.taskId}; the task goes on`);
      return EXIT_INTERRUPTED;
    }
    if (why === 'expired') {
      io.err(`stopped following after ${formatSpan(msToNs(timeout.value ?? 0))} (--timeout); the task goes on`);
      return EXIT_TIMEOUT;
    }
    return undefined;
  };

  try {
    // Where to begin: the file's start, or its last --tail lines (read backwards, a chunk at a time).
    let offset = 0;
    if (tail.value !== undefined) {
      const head = await reader.read(path, 0, 0);
      if (head.kind === 'unreachable') return unreachable(head.why);
      if (head.kind === 'refused' && !(head.status === 404 && follow && !taskEnded(task.state))) {
        const r = refusal(head, task, reader, client.credential);
        io.err(r.line);
        return r.code;
      }
      if (head.kind === 'data') {
        const scan = new TailScan(head.size, tail.value);
        for (let end = head.size; scan.start === undefined && end > 0;) {
          const at = Math.max(0, end - READ_CHUNK);
          const chunk = await reader.read(path, at, end - at);
          if (chunk.kind === 'unreachable') return unreachable(chunk.why);
          if (chunk.kind === 'refused') {
            const r = refusal(chunk, task, reader, client.credential);
            io.err(r.line);
            return r.code;
          }
          scan.feed(chunk.data, at);
          end = at;
        }
        offset = scan.start ?? 0;
      }
    }

    let failures = 0;
    let lastStateMs = io.nowMs();
    // Set once the master says the task ended: one more read empties the file, then it is done.
    let ended = taskEnded(task.state);
    let finalRead = false;
    for (;;) {
      const s = stopped();
      if (s !== undefined) return s;
      const r = await reader.read(path, offset, READ_CHUNK);
      if (r.kind === 'data') {
        failures = 0;
        await emit(offset, r.data);
        offset += r.data.length;
        // A full chunk: more may be there now; read on without waiting.
        if (r.data.length > 0 && offset < r.size) continue;
        if (!follow) return EXIT_OK;
        if (finalRead) return EXIT_OK;
      } else if (r.kind === 'refused') {
        // The sandbox appears when the task starts: a follower of a task not started yet waits for it.
        const notYet = r.status === 404 && follow && !ended;
        if (!notYet) {
          const x = refusal(r, task, reader, client.credential);
          io.err(x.line);
          return x.code;
        }
      } else {
        if (!follow) return unreachable(r.why);
        if (++failures === 1) io.err(`reading from the agent ${reader.where} failed (${r.why}); retrying`);
        if (failures >= FOLLOW_MAX_FAILURES) return unreachable(`${failures} reads in a row failed (${r.why})`);
      }
      if (ended) {
        // Everything the task wrote is in the file once it ended: read once more, then stop.
        finalRead = true;
        continue;
      }
      if (io.nowMs() - lastStateMs >= STATE_POLL_MS) {
        lastStateMs = io.nowMs();
        const now = await taskNow(client, task);
        if (now === undefined) ended = true;
        else {
          task = now;
          ended = taskEnded(now.state);
        }
        if (ended) continue;
      }
      await io.sleep(FOLLOW_POLL_MS, stop.signal);
    }
  } finally {
    stop.abort();
    off();
  }
}

/** The task as the master has it now; undefined when the master no longer lists it (it ended long ago). */
async function taskNow(client: MasterClient, task: TaskRef): Promise<TaskRef | undefined> {
  try {
    const tasks = await client.call<{ get_tasks?: LogsTasksAnswer }>({ type: 'GET_TASKS' });
    return taskRefs(tasks?.get_tasks ?? {}).find((r) => r.taskId === task.taskId && r.frameworkId === task.frameworkId);
  } catch (e) {
    // A master that does not answer for a moment does not end the following: ask again later.
    if (e instanceof ApiError && e.status !== 401 && e.status !== 403) return task;
    throw e;
  }
}


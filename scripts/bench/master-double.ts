/**
 * A stand-in master for the agent benchmarks: a bare WebSocket server at AGENT_SESSION_PATH
 * that accepts one real agent's REGISTER, sends RUN_TASK / KILL_TASK on request, and
 * acknowledges every STATUS_UPDATE at once (so the agent's retry timers never fire and
 * "update received" is the only thing measured). It pings like the real master, so the
 * agent keeps its session.
 *
 * Playing the master ourselves keeps the master's allocator and scheduler API out of the
 * agent's figures: the clock starts when RUN_TASK leaves this socket.
 */

import { once } from 'node:events';
import { WebSocketServer, type WebSocket } from 'ws';
import { AGENT_SESSION_PATH, assertNever, decodeAgentMessage, encode, type MasterMessage } from '../../shared/protocol.js';
import type { KillPolicy, TaskInfo, TaskState, TaskStatus } from '../../shared/mesos.js';

/** Framework every benchmark task belongs to. */
export const BENCH_FRAMEWORK_ID = 'drydock-bench-framework';

/** A status update as received, with the local receive time (performance.now()). */
export interface ReceivedUpdate {
  status: TaskStatus;
  receivedAt: number;
}

/** The stand-in master. */
export class MasterDouble {
  readonly #wss: WebSocketServer;
  #session: WebSocket | undefined;
  #agentId = 'bench-agent-1';
  #registered: Promise<string>;
  #onRegistered!: (agentId: string) => void;
  readonly #updates = new Map<string, ReceivedUpdate[]>();
  #waiters: Array<{ taskId: string; states: ReadonlySet<TaskState>; resolve: (u: ReceivedUpdate) => void }> = [];
  #pinger: NodeJS.Timeout | undefined;
  /** Protocol errors seen (decode failures); a benchmark reports them. */
  readonly problems: string[] = [];

  private constructor(wss: WebSocketServer) {
    this.#wss = wss;
    this.#registered = new Promise((resolve) => { this.#onRegistered = resolve; });
    wss.on('connection', (ws) => this.#accept(ws));
  }

  /** Listens on 127.0.0.1:0. */
  static async start(): Promise<MasterDouble> {
    const wss = new WebSocketServer({ host: '127.0.0.1', port: 0, path: AGENT_SESSION_PATH, perMessageDeflate: false });
    await once(wss, 'listening');
    return new MasterDouble(wss);
  }

  /** `127.0.0.1:port`, the agent's --master value. */
  get address(): string {
    const a = this.#wss.address();
    if (a === null || typeof a === 'string') throw new Error('master double is not listening on TCP');
    return `127.0.0.1:${a.port}`;
  }

  /** Resolves with the agent id once the agent registered. */
  registered(timeoutMs: number): Promise<string> {
    return withTimeout(this.#registered, timeoutMs, 'agent REGISTER');
  }

  get agentId(): string {
    return this.#agentId;
  }

  #accept(ws: WebSocket): void {
    // A re-registering agent replaces the previous session, as on the real master.
    this.#session?.terminate();
    this.#session = ws;
    ws.on('message', (data, isBinary) => {
      const d = decodeAgentMessage(data, isBinary);
      if (!d.ok) {
        this.problems.push(d.error);
        return;
      }
      const m = d.message;
      switch (m.type) {
        case 'REGISTER': {
          if (m.agent_id !== undefined) this.#agentId = m.agent_id;
          this.#send({ type: 'REGISTERED', request_id: m.request_id, agent_id: this.#agentId, master_id: 'bench-master', ping_interval_ms: 5_000, max_ping_timeouts: 5 });
          this.#onRegistered(this.#agentId);
          break;
        }
        case 'STATUS_UPDATE': {
          const u: ReceivedUpdate = { status: m.status, receivedAt: performance.now() };
          const taskId = m.status.task_id.value;
          const list = this.#updates.get(taskId) ?? [];
          list.push(u);
          this.#updates.set(taskId, list);
          this.#send({ type: 'ACKNOWLEDGE', framework_id: m.framework_id, task_id: taskId, uuid: m.status.uuid ?? '' });
          this.#waiters = this.#waiters.filter((w) => {
            if (w.taskId !== taskId || !w.states.has(m.status.state)) return true;
            w.resolve(u);
            return false;
          });
          break;
        }
        default:
          assertNever(m);
      }
    });
    this.#pinger ??= setInterval(() => this.#session?.ping(), 5_000);
  }

  #send(m: MasterMessage): void {
    if (this.#session === undefined) throw new Error('no agent session');
    this.#session.send(encode(m));
  }

  /** A TaskInfo for this agent with tiny resources (the benchmarks measure launching, not fitting). */
  task(taskId: string, command: NonNullable<TaskInfo['command']>, killPolicy?: KillPolicy): TaskInfo {
    return {
      name: taskId,
      task_id: { value: taskId },
      agent_id: { value: this.#agentId },
      resources: [
        { name: 'cpus', type: 'SCALAR', scalar: { value: 0.01 } },
        { name: 'mem', type: 'SCALAR', scalar: { value: 1 } },
      ],
      command,
      ...(killPolicy === undefined ? {} : { kill_policy: killPolicy }),
    };
  }

  /** Sends RUN_TASK; returns performance.now() right after the frame was handed to the socket. */
  runTask(task: TaskInfo): number {
    this.#send({ type: 'RUN_TASK', framework_id: BENCH_FRAMEWORK_ID, framework: { user: 'root', name: 'drydock-bench', id: { value: BENCH_FRAMEWORK_ID } }, task });
    return performance.now();
  }

  /** Sends KILL_TASK (optionally overriding the kill policy); returns the send time. */
  killTask(taskId: string, killPolicy?: KillPolicy): number {
    this.#send({ type: 'KILL_TASK', framework_id: BENCH_FRAMEWORK_ID, task_id: taskId, ...(killPolicy === undefined ? {} : { kill_policy: killPolicy }) });
    return performance.now();
  }

  /** Resolves with the first update of taskId in one of `states` (already received or future). */
  waitForState(taskId: string, states: readonly TaskState[], timeoutMs: number): Promise<ReceivedUpdate> {
    const set = new Set(states);
    const seen = this.#updates.get(taskId)?.find((u) => set.has(u.status.state));
    if (seen !== undefined) return Promise.resolve(seen);
    const p = new Promise<ReceivedUpdate>((resolve) => this.#waiters.push({ taskId, states: set, resolve }));
    return withTimeout(p, timeoutMs, `${states.join('/')} for task ${taskId} (got: ${this.statesOf(taskId).join(', ') || 'nothing'})`);
  }

  /** States received for a task, oldest first. */
  statesOf(taskId: string): TaskState[] {
    return (this.#updates.get(taskId) ?? []).map((u) => u.status.state);
  }

  async close(): Promise<void> {
    if (this.#pinger !== undefined) clearInterval(this.#pinger);
    for (const c of this.#wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.#wss.close(() => resolve()));
  }
}

/** Rejects with "no <what> within N ms" when p has not settled in time. */
export function withTimeout<T>(p: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${timeoutMs} ms`)), timeoutMs);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

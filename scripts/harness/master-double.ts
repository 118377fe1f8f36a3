/**
 * The one master double, for agent tests (test/helpers/fake-master.ts) and the agent
 * benchmarks (launch, kill, footprint): a real WebSocket server on 127.0.0.1:0 at
 * AGENT_SESSION_PATH speaking the protocol in the master's place. It answers REGISTER with
 * REGISTERED (keeping a requested agent id, else assigning one), pings like the master,
 * records everything the agent sends with its arrival time, optionally acknowledges every
 * update at once (so the agent's retry timers never fire and "update received" is all a
 * benchmark measures), and lets its user send RUN_TASK, KILL_TASK, ACKNOWLEDGE or anything.
 */

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import type { FrameworkInfo, KillPolicy, TaskInfo, TaskState, TaskStatus } from '../../shared/mesos.js';
import { stringifyJson } from '../../shared/json.js';
import { EVENT_DEADLINE_MS } from './deadline.js';
import { AGENT_SESSION_PATH, decodeAgentMessage, encode, MASTER_CAPABILITIES, type AgentConditions, type AgentMessage, type MasterMessage, type Refusal } from '../../shared/protocol.js';

export type RegisterMessage = Extract<AgentMessage, { type: 'REGISTER' }>;
export type StatusUpdateMessage = Extract<AgentMessage, { type: 'STATUS_UPDATE' }>;

export interface MasterDoubleOptions {
  pingIntervalMs?: number;
  maxPingTimeouts?: number;
  /** Acknowledge every status update as it arrives (default false). */
  autoAck?: boolean;
  /** Answer REGISTER with SHUTDOWN and this message instead. */
  refuse?: string;
  /** The framework of runTask() when none is given (default FRAMEWORK). */
  framework?: FrameworkInfo;
  /** A leadership epoch to put in REGISTERED, as an HA master does. */
  epoch?: string;
  /** REGISTERED's capabilities (default: the real master's, MASTER_CAPABILITIES); null: none at all, as a master that predates them. */
  capabilities?: readonly string[] | null;
}

/** A status update as received, with its arrival time (performance.now()). */
export type ReceivedUpdate = StatusUpdateMessage & { receivedAt: number };

export const FRAMEWORK_ID = 'fw-test';
export const FRAMEWORK: FrameworkInfo = { user: 'root', name: 'test-framework', id: { value: FRAMEWORK_ID }, checkpoint: true, capabilities: [{ type: 'TASK_KILLING_STATE' }] };

export class MasterDouble {
  readonly server: Server;
  readonly wss: WebSocketServer;
  readonly registrations: RegisterMessage[] = [];
  readonly updates: ReceivedUpdate[] = [];
  /** The master messages the agent refused (its REFUSED messages), in order. */
  readonly refusals: Refusal[] = [];
  /** The agent's conditions as it reported them (REGISTER's, then each CONDITIONS), in order. */
  readonly conditions: AgentConditions[] = [];
  /** Called as each status update arrives, before anything else is done with it (a test checks what the agent had on disk then). */
  onUpdate: ((update: StatusUpdateMessage) => void) | undefined;
  /** Decode errors of frames the agent sent (should stay empty). */
  readonly invalid: string[] = [];
  /** The id the agent got in its last REGISTERED. */
  agentId: string | undefined;
  readonly framework: FrameworkInfo;
  readonly epoch: string | undefined;
  readonly capabilities: readonly string[] | null;
  socket: WebSocket | undefined;
  autoAck: boolean;
  refuse: string | undefined;
  pingIntervalMs: number;
  maxPingTimeouts: number;
  #nextId = 1;
  #nextBarrier = 1;
  #waiters: Array<() => void> = [];
  #pinger: NodeJS.Timeout | undefined;

  /** Listens on 127.0.0.1:0; `close()` stops it. */
  static async start(opts: MasterDoubleOptions = {}): Promise<MasterDouble> {
    const server = createServer((_req, res) => {
      res.writeHead(404).end();
    });
    const wss = new WebSocketServer({ server, path: AGENT_SESSION_PATH, perMessageDeflate: false });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    return new MasterDouble(server, wss, opts);
  }

  private constructor(server: Server, wss: WebSocketServer, opts: MasterDoubleOptions) {
    this.server = server;
    this.wss = wss;
    this.framework = opts.framework ?? FRAMEWORK;
    this.epoch = opts.epoch;
    this.capabilities = opts.capabilities === undefined ? MASTER_CAPABILITIES : opts.capabilities;
    this.autoAck = opts.autoAck ?? false;
    this.refuse = opts.refuse;
    this.pingIntervalMs = opts.pingIntervalMs ?? 1000;
    this.maxPingTimeouts = opts.maxPingTimeouts ?? 5;
    wss.on('connection', (ws) => this.#accept(ws));
    this.#pinger = setInterval(() => {
      for (const c of wss.clients) c.ping();
    }, this.pingIntervalMs);
    this.#pinger.unref();
  }

  get port(): number {
    return (this.server.address() as AddressInfo).port;
  }

  /** The agent's --master value. */
  get address(): string {
    return `127.0.0.1:${this.port}`;
  }

  #accept(ws: WebSocket): void {
    this.socket = ws;
    ws.on('message', (data, isBinary) => {
      const d = decodeAgentMessage(data, isBinary);
      if (!d.ok) {
        this.invalid.push(d.error);
        return;
      }
      const msg = d.message;
      if (msg.type === 'REGISTER') {
        this.registrations.push(msg);
        if (msg.conditions !== undefined) this.conditions.push(msg.conditions);
        if (this.refuse !== undefined) {
          ws.send(encode({ type: 'SHUTDOWN', message: this.refuse }));
        } else {
          this.agentId = msg.agent_id ?? `fake-agent-${this.#nextId++}`;
          ws.send(
            encode({
              type: 'REGISTERED',
              request_id: msg.request_id,
              agent_id: this.agentId,
              master_id: 'fake-master',
              ping_interval_ms: this.pingIntervalMs,
              max_ping_timeouts: this.maxPingTimeouts,
              ...(this.capabilities === null ? {} : { capabilities: [...this.capabilities] }),
              ...(this.epoch === undefined ? {} : { epoch: this.epoch }),
            }),
          );
        }
      } else if (msg.type === 'REFUSED') {
        this.refusals.push(msg.refused);
      } else if (msg.type === 'CONDITIONS') {
        this.conditions.push(msg.conditions);
      } else {
        this.onUpdate?.(msg);
        this.updates.push({ ...msg, receivedAt: performance.now() });
        if (this.autoAck) this.ack(msg);
      }
      const waiters = this.#waiters;
      this.#waiters = [];
      for (const w of waiters) w();
    });
  }

  /** Sends a message to the connected agent. */
  send(msg: MasterMessage | Record<string, unknown>): void {
    if (this.socket === undefined) throw new Error('no agent connected');
    // As the master writes it: bigints (a drain's exact grace) as bare digits.
    this.socket.send(stringifyJson(msg));
  }

  /** Sends a raw text frame. */
  sendRaw(text: string): void {
    if (this.socket === undefined) throw new Error('no agent connected');
    this.socket.send(text);
  }

  /** Sends RUN_TASK; returns performance.now() right after the frame was handed to the socket. */
  runTask(task: TaskInfo, framework: FrameworkInfo = this.framework): number {
    this.send({ type: 'RUN_TASK', framework_id: framework.id?.value ?? FRAMEWORK_ID, framework, task });
    return performance.now();
  }

  /** Sends KILL_TASK, with a grace period (ms) or a whole kill policy overriding the task's; returns the send time. */
  killTask(taskId: string, grace?: number | KillPolicy, frameworkId = this.framework.id?.value ?? FRAMEWORK_ID): number {
    const killPolicy: KillPolicy | undefined = typeof grace === 'number' ? { grace_period: { nanoseconds: grace * 1e6 } } : grace;
    this.send({ type: 'KILL_TASK', framework_id: frameworkId, task_id: taskId, ...(killPolicy !== undefined ? { kill_policy: killPolicy } : {}) });
    return performance.now();
  }

  /** A TaskInfo for the registered agent with tiny resources. */
  task(taskId: string, command: NonNullable<TaskInfo['command']>, killPolicy?: KillPolicy): TaskInfo {
    return {
      name: taskId,
      task_id: { value: taskId },
      agent_id: { value: this.agentId ?? 'unregistered' },
      resources: [
        { name: 'cpus', type: 'SCALAR', scalar: { value: 0.01 } },
        { name: 'mem', type: 'SCALAR', scalar: { value: 1 } },
      ],
      command,
      ...(killPolicy === undefined ? {} : { kill_policy: killPolicy }),
    };
  }

  ack(update: StatusUpdateMessage): void {
    this.send({ type: 'ACKNOWLEDGE', framework_id: update.framework_id, task_id: update.status.task_id.value, uuid: update.status.uuid ?? '' });
  }

  /** Waits until `pick` finds something in what the agent sent so far. */
  async waitFor<T>(pick: () => T | undefined, timeoutMs = EVENT_DEADLINE_MS, what = 'agent message'): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const found = pick();
      if (found !== undefined) return found;
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`fake master: timed out after ${timeoutMs} ms waiting for ${what}; updates: ${this.updates.map((u) => `${u.status.task_id.value}:${u.status.state}`).join(', ')}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 200));
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /**
   * Resolves once the agent has read every frame sent to it before this call: a ping with a
   * fresh payload, which the agent's WebSocket answers with a pong after handling the frames
   * before it (frames are read in order). What the agent sent while handling them (at once,
   * not after a timer) arrived before the pong. A negative check ("that message changed
   * nothing") waits for this instead of sleeping a guessed time.
   */
  barrier(timeoutMs = EVENT_DEADLINE_MS): Promise<void> {
    const ws = this.socket;
    if (ws === undefined) return Promise.reject(new Error('no agent connected'));
    const payload = `barrier-${this.#nextBarrier++}`;
    return new Promise((resolve, reject) => {
      const done = (e?: Error): void => {
        clearTimeout(timer);
        ws.off('pong', onPong);
        ws.off('close', onClose);
        if (e === undefined) resolve();
        else reject(e);
      };
      const onPong = (data: Buffer): void => {
        if (data.toString() === payload) done();
      };
      const onClose = (): void => done(new Error('fake master: the agent disconnected before answering the barrier ping'));
      const timer = setTimeout(() => done(new Error(`fake master: no pong for the barrier ping within ${timeoutMs} ms`)), timeoutMs);
      ws.on('pong', onPong);
      ws.on('close', onClose);
      ws.ping(payload);
    });
  }

  /** The nth (0-based) REGISTER, once it arrives. */
  waitForRegister(n = 0, timeoutMs = EVENT_DEADLINE_MS): Promise<RegisterMessage> {
    return this.waitFor(() => this.registrations[n], timeoutMs, `REGISTER #${n}`);
  }

  /** The first update for `taskId` in `state` (after index `after` of updates). */
  waitForUpdate(taskId: string, state: TaskState, timeoutMs = EVENT_DEADLINE_MS, after = 0): Promise<ReceivedUpdate> {
    return this.waitForState(taskId, [state], timeoutMs, after);
  }

  /** The first update for `taskId` in any of `states` (after index `after` of updates). */
  waitForState(taskId: string, states: readonly TaskState[], timeoutMs = EVENT_DEADLINE_MS, after = 0): Promise<ReceivedUpdate> {
    const set = new Set(states);
    return this.waitFor(
      () => this.updates.slice(after).find((u) => u.status.task_id.value === taskId && set.has(u.status.state)),
      timeoutMs,
      `${states.join('/')} for ${taskId}`,
    );
  }

  /** Resolves with the agent id once an agent registered. */
  async registered(timeoutMs = EVENT_DEADLINE_MS): Promise<string> {
    await this.waitForRegister(0, timeoutMs);
    return this.waitFor(() => this.agentId, timeoutMs, 'REGISTERED sent');
  }

  /** States of the distinct updates (by uuid) received for a task, in order. */
  states(taskId: string): TaskState[] {
    const seen = new Set<string>();
    const out: TaskState[] = [];
    for (const u of this.updates) {
      if (u.status.task_id.value !== taskId || seen.has(u.status.uuid ?? '')) continue;
      seen.add(u.status.uuid ?? '');
      out.push(u.status.state);
    }
    return out;
  }

  /** States of every update received for a task, oldest first (retries included). */
  statesOf(taskId: string): TaskState[] {
    return this.updates.filter((u) => u.status.task_id.value === taskId).map((u) => u.status.state);
  }

  statuses(taskId: string): TaskStatus[] {
    return this.updates.filter((u) => u.status.task_id.value === taskId).map((u) => u.status);
  }

  /** Drops the agent's connection (a master crash, as the agent sees it). */
  dropAgent(): void {
    this.socket?.terminate();
    this.socket = undefined;
  }

  /**
   * Stops listening and drops every connection, including a reconnecting agent's handshake in
   * progress (which would otherwise keep the HTTP server, and the test, waiting forever).
   */
  async close(): Promise<void> {
    clearInterval(this.#pinger);
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
    const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
    this.server.closeAllConnections();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (timer = setTimeout(resolve, 2000)))]);
    clearTimeout(timer);
  }
}

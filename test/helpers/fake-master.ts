/**
 * A fake master for agent tests: a real WebSocket server on 127.0.0.1:0 at AGENT_SESSION_PATH
 * speaking the protocol. It answers REGISTER with REGISTERED (keeping a requested agent id,
 * else assigning one), records everything the agent sends, and lets a test send RUN_TASK,
 * KILL_TASK, ACKNOWLEDGE or anything else. Closed when the test ends.
 */

import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { TestContext } from 'node:test';
import { WebSocketServer, type WebSocket } from 'ws';
import type { FrameworkInfo, TaskInfo, TaskState, TaskStatus } from '../../shared/mesos.js';
import { AGENT_SESSION_PATH, decodeAgentMessage, encode, type AgentMessage, type MasterMessage } from '../../shared/protocol.js';

export type RegisterMessage = Extract<AgentMessage, { type: 'REGISTER' }>;
export type StatusUpdateMessage = Extract<AgentMessage, { type: 'STATUS_UPDATE' }>;

export interface FakeMasterOptions {
  pingIntervalMs?: number;
  maxPingTimeouts?: number;
  /** Acknowledge every status update as it arrives (default false). */
  autoAck?: boolean;
  /** Answer REGISTER with SHUTDOWN and this message instead. */
  refuse?: string;
}

export const FRAMEWORK_ID = 'fw-test';
export const FRAMEWORK: FrameworkInfo = { user: 'root', name: 'test-framework', id: { value: FRAMEWORK_ID }, checkpoint: true, capabilities: [{ type: 'TASK_KILLING_STATE' }] };

export class FakeMaster {
  readonly server: Server;
  readonly wss: WebSocketServer;
  readonly registrations: RegisterMessage[] = [];
  readonly updates: StatusUpdateMessage[] = [];
  /** Decode errors of frames the agent sent (should stay empty). */
  readonly invalid: string[] = [];
  socket: WebSocket | undefined;
  autoAck: boolean;
  refuse: string | undefined;
  pingIntervalMs: number;
  maxPingTimeouts: number;
  #nextId = 1;
  #waiters: Array<() => void> = [];
  #pinger: NodeJS.Timeout | undefined;

  constructor(server: Server, wss: WebSocketServer, opts: FakeMasterOptions) {
    this.server = server;
    this.wss = wss;
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
        if (this.refuse !== undefined) {
          ws.send(encode({ type: 'SHUTDOWN', message: this.refuse }));
        } else {
          ws.send(
            encode({
              type: 'REGISTERED',
              request_id: msg.request_id,
              agent_id: msg.agent_id ?? `fake-agent-${this.#nextId++}`,
              master_id: 'fake-master',
              ping_interval_ms: this.pingIntervalMs,
              max_ping_timeouts: this.maxPingTimeouts,
            }),
          );
        }
      } else {
        this.updates.push(msg);
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
    this.socket.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  /** Sends a raw text frame. */
  sendRaw(text: string): void {
    if (this.socket === undefined) throw new Error('no agent connected');
    this.socket.send(text);
  }

  runTask(task: TaskInfo, framework: FrameworkInfo = FRAMEWORK): void {
    this.send({ type: 'RUN_TASK', framework_id: framework.id?.value ?? FRAMEWORK_ID, framework, task });
  }

  killTask(taskId: string, gracePeriodMs?: number, frameworkId = FRAMEWORK_ID): void {
    this.send({
      type: 'KILL_TASK',
      framework_id: frameworkId,
      task_id: taskId,
      ...(gracePeriodMs !== undefined ? { kill_policy: { grace_period: { nanoseconds: gracePeriodMs * 1e6 } } } : {}),
    });
  }

  ack(update: StatusUpdateMessage): void {
    this.send({ type: 'ACKNOWLEDGE', framework_id: update.framework_id, task_id: update.status.task_id.value, uuid: update.status.uuid ?? '' });
  }

  /** Waits until `pick` finds something in what the agent sent so far. */
  async waitFor<T>(pick: () => T | undefined, timeoutMs = 10_000, what = 'agent message'): Promise<T> {
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

  /** The nth (0-based) REGISTER, once it arrives. */
  waitForRegister(n = 0, timeoutMs = 10_000): Promise<RegisterMessage> {
    return this.waitFor(() => this.registrations[n], timeoutMs, `REGISTER #${n}`);
  }

  /** The first update for `taskId` in `state` (after index `after` of updates). */
  waitForUpdate(taskId: string, state: TaskState, timeoutMs = 10_000, after = 0): Promise<StatusUpdateMessage> {
    return this.waitFor(
      () => this.updates.slice(after).find((u) => u.status.task_id.value === taskId && u.status.state === state),
      timeoutMs,
      `${state} for ${taskId}`,
    );
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

/** Starts a fake master on loopback; closed when the test ends. */
export async function startFakeMaster(t: Pick<TestContext, 'after'>, opts: FakeMasterOptions = {}): Promise<FakeMaster> {
  const server = createServer((_req, res) => {
    res.writeHead(404).end();
  });
  const wss = new WebSocketServer({ server, path: AGENT_SESSION_PATH });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const master = new FakeMaster(server, wss, opts);
  t.after(() => master.close());
  return master;
}

/** A TaskInfo running `command` with /bin/sh, with an optional grace period. */
export function shellTask(id: string, command: string, gracePeriodMs?: number): TaskInfo {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: 'ignored' },
    resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }],
    command: { value: command },
    ...(gracePeriodMs !== undefined ? { kill_policy: { grace_period: { nanoseconds: gracePeriodMs * 1e6 } } } : {}),
  };
}

/**
 * A work_dir for an agent whose tasks are killed (SIGKILL to each task's process group, found
 * in the checkpoint) and whose files are removed when the test ends, whatever the agent did.
 */
export function agentWorkDir(t: Pick<TestContext, 'after'>): string {
  const dir = mkdtempSync(join(tmpdir(), 'drydock-agent-'));
  // Hooks run in registration order and this one comes before startAgent's: so the agents
  // using this dir are stopped here first, or they would keep writing into it.
  t.after(async () => {
    for (const pid of agentPids(dir)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (let i = 0; i < 100 && agentPids(dir).length > 0; i++) await new Promise((r) => setTimeout(r, 20));
    for (const pid of taskPids(dir)) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    try {
      rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
    } catch {
      // a leftover temp dir must not fail the test or skip the hooks after this one
    }
  });
  return dir;
}

/** Agent daemons (by their command line) whose --work_dir is `dir`. */
function agentPids(dir: string): number[] {
  const out: number[] = [];
  for (const name of readdirSync('/proc')) {
    const pid = Number(name);
    if (!Number.isInteger(pid) || pid === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
      if (cmd.includes(`--work_dir=${dir}`) && !readFileSync(`/proc/${pid}/stat`, 'utf8').includes(') Z')) out.push(pid);
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

/** Task pids recorded in an agent's checkpoint (including checkpoints moved aside). */
export function taskPids(workDir: string): number[] {
  const pids: number[] = [];
  let metas: string[];
  try {
    metas = readdirSync(workDir).filter((d) => d.startsWith('meta'));
  } catch {
    return pids;
  }
  for (const meta of metas) {
    const root = join(workDir, meta, 'tasks');
    if (!existsSync(root)) continue;
    for (const fw of readdirSync(root)) {
      for (const task of readdirSync(join(root, fw))) {
        try {
          const rec = JSON.parse(readFileSync(join(root, fw, task, 'task.json'), 'utf8')) as { task_pid?: number };
          if (typeof rec.task_pid === 'number') pids.push(rec.task_pid);
        } catch {
          // not a task record
        }
      }
    }
  }
  return pids;
}

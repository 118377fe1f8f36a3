/**
 * The one agent double, for master tests (test/helpers/fake-agent.ts) and the simulated
 * agents of the benchmarks (scripts/sim-agents.ts): the agent side of the protocol with no
 * tasks behind it. `AgentDouble` is one session a test drives: it registers, sends status
 * updates and raw frames, records what the master sends (messages, pings, the close), and can
 * stop answering pings or drop the socket. `registerMessage` and `taskAnswers` are the
 * protocol both use: what a task-less agent registers with, and what it answers RUN_TASK,
 * KILL_TASK and DRAIN with.
 */

import { randomBytes } from 'node:crypto';
import { WebSocket } from 'ws';
import type { FrameworkInfo, TaskStatus } from '../../shared/mesos.js';
import { DRYDOCK_VERSION } from '../../shared/version.js';
import type { ClientTransport } from '../../io/transport.js';
import { EVENT_DEADLINE_MS } from './deadline.js';
import {
  AGENT_SESSION_PATH,
  decodeMasterMessage,
  encode,
  type AgentMessage,
  type AgentSelf,
  type AgentTaskReport,
  type MasterMessage,
} from '../../shared/protocol.js';

export interface AgentDoubleOptions {
  /** Answer the master's pings (default true). */
  autoPong?: boolean;
  /** Connect from this local address (a loopback address other than 127.0.0.1, as another machine). */
  localAddress?: string;
  /** TLS material (CA, client certificate) and headers for the upgrade, as a real agent's (io/transport.ts). Default: none. */
  transport?: ClientTransport;
}

export interface RegisterOptions {
  agentId?: string;
  agent?: Partial<AgentSelf>;
  tasks?: AgentTaskReport[];
  /** The frameworks of those tasks, as a real agent reports them (the master learns a framework it does not know). */
  frameworks?: FrameworkInfo[];
  version?: string;
  capabilities?: string[];
  timeoutMs?: number;
}

type Registered = Extract<MasterMessage, { type: 'REGISTERED' }>;

let nextPort = 20000;

/**
 * The REGISTER of a task-less agent (a re-registration when `agentId` is given). Capabilities
 * default to what a real agent announces (shared with agent/agent.ts' list in spirit: no
 * TASK_KILLING_STATE, which is a framework capability).
 */
export function registerMessage(requestId: number, self: AgentSelf, opts: Omit<RegisterOptions, 'agent' | 'timeoutMs'> = {}): Extract<AgentMessage, { type: 'REGISTER' }> {
  const msg: Extract<AgentMessage, { type: 'REGISTER' }> = {
    type: 'REGISTER',
    request_id: requestId,
    agent: self,
    version: opts.version ?? DRYDOCK_VERSION,
    capabilities: opts.capabilities ?? ['MULTI_ROLE', 'AGENT_DRAINING'],
    tasks: opts.tasks ?? [],
    frameworks: opts.frameworks ?? [],
  };
  if (opts.agentId !== undefined) msg.agent_id = opts.agentId;
  return msg;
}

/**
 * What a task-less agent answers a master message with: RUN_TASK gets TASK_RUNNING (or
 * TASK_DROPPED when it runs no tasks), KILL_TASK and DRAIN get TASK_KILLED for each task
 * (a simulated task dies at once, whatever the grace). `running` is the agent's task id ->
 * framework id, kept up to date here.
 */
export function taskAnswers(msg: MasterMessage, agentId: string, running: Map<string, string>, runTasks = true): Array<Extract<AgentMessage, { type: 'STATUS_UPDATE' }>> {
  const update = (frameworkId: string, taskId: string, state: TaskStatus['state'], extra: Partial<TaskStatus> = {}): Extract<AgentMessage, { type: 'STATUS_UPDATE' }> => ({
    type: 'STATUS_UPDATE',
    framework_id: frameworkId,
    status: { task_id: { value: taskId }, state, source: 'SOURCE_EXECUTOR', agent_id: { value: agentId }, timestamp: Date.now() / 1000, uuid: randomBytes(16).toString('base64'), ...extra },
  });
  switch (msg.type) {
    case 'RUN_TASK':
      if (!runTasks) return [update(msg.framework_id, msg.task.task_id.value, 'TASK_DROPPED', { source: 'SOURCE_AGENT', message: 'sim agent does not run tasks' })];
      running.set(msg.task.task_id.value, msg.framework_id);
      return [update(msg.framework_id, msg.task.task_id.value, 'TASK_RUNNING')];
    case 'KILL_TASK':
      running.delete(msg.task_id);
      return [update(msg.framework_id, msg.task_id, 'TASK_KILLED')];
    case 'DRAIN': {
      const out = [...running].map(([taskId, frameworkId]) => update(frameworkId, taskId, 'TASK_KILLED', { reason: 'REASON_AGENT_DRAINING' }));
      running.clear();
      return out;
    }
    default:
      return [];
  }
}

/** A default AgentSelf with a distinct port per fake agent (the master replaces agents by ip:port). */
export function agentSelf(over: Partial<AgentSelf> = {}): AgentSelf {
  return {
    hostname: 'fake-agent',
    ip: '127.0.0.1',
    port: nextPort++,
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 2 } },
      { name: 'mem', type: 'SCALAR', scalar: { value: 1024 } },
      { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } },
    ],
    attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }],
    ...over,
  };
}

export class AgentDouble {
  readonly ws: WebSocket;
  readonly messages: MasterMessage[] = [];
  /** Every text frame the master sent, as it came (a refusal names a message by the digest of this). */
  readonly frames: string[] = [];
  pings = 0;
  /** Set when the socket closed: the code and reason the master sent. */
  closed: { code: number; reason: string } | undefined;
  readonly self: AgentSelf;
  #requestId = 0;
  #waiters: Array<() => void> = [];
  readonly #closedPromise: Promise<{ code: number; reason: string }>;

  private constructor(ws: WebSocket, self: AgentSelf) {
    this.ws = ws;
    this.self = self;
    ws.on('message', (data, isBinary) => {
      if (!isBinary) this.frames.push(data.toString());
      const d = decodeMasterMessage(data, isBinary);
      if (d.ok) this.messages.push(d.message);
      this.#notify();
    });
    ws.on('ping', () => {
      this.pings++;
      this.#notify();
    });
    ws.on('error', () => {});
    this.#closedPromise = new Promise((resolve) => {
      ws.on('close', (code, reason) => {
        this.closed = { code, reason: reason.toString('utf8') };
        this.#notify();
        resolve(this.closed);
      });
    });
  }

  /** Opens a session to the master at `url` (http://ip:port, or https://ip:port: wss://). */
  static connect(url: string, opts: AgentDoubleOptions & { self?: Partial<AgentSelf> } = {}): Promise<AgentDouble> {
    const wsUrl = url.replace(/^http/, 'ws') + AGENT_SESSION_PATH;
    const ws = new WebSocket(wsUrl, { ...(opts.transport?.ws ?? {}), autoPong: opts.autoPong ?? true, ...(opts.localAddress === undefined ? {} : { localAddress: opts.localAddress }) });
    const agent = new AgentDouble(ws, agentSelf(opts.self));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`fake agent: connect timed out after ${EVENT_DEADLINE_MS} ms`)), EVENT_DEADLINE_MS);
      ws.once('open', () => {
        clearTimeout(timer);
        resolve(agent);
      });
      ws.once('error', (e) => {
        clearTimeout(timer);
        reject(e);
      });
    });
  }

  send(msg: AgentMessage): void {
    this.ws.send(encode(msg));
  }

  /** Sends a raw text frame (to test the decoder's refusal). */
  sendRaw(text: string): void {
    this.ws.send(text);
  }

  /** Sends REGISTER and waits for the matching REGISTERED. */
  async register(opts: RegisterOptions = {}): Promise<Registered> {
    const requestId = ++this.#requestId;
    this.send(registerMessage(requestId, { ...this.self, ...opts.agent }, opts));
    const found = await this.waitFor((m): m is Registered => m.type === 'REGISTERED' && m.request_id === requestId, opts.timeoutMs ?? EVENT_DEADLINE_MS);
    return found;
  }

  statusUpdate(frameworkId: string, status: TaskStatus): void {
    this.send({ type: 'STATUS_UPDATE', framework_id: frameworkId, status });
  }

  /** Resolves with the first message (past or future) matching `pred`. */
  waitFor<T extends MasterMessage>(pred: (m: MasterMessage) => m is T, timeoutMs = EVENT_DEADLINE_MS): Promise<T> {
    return this.#until(() => this.messages.find(pred) as T | undefined, timeoutMs, 'master message');
  }

  /** Resolves once `n` pings have arrived. */
  waitForPings(n: number, timeoutMs = EVENT_DEADLINE_MS): Promise<number> {
    return this.#until(() => (this.pings >= n ? this.pings : undefined), timeoutMs, `${n} pings`);
  }

  /** Resolves with the close code and reason. */
  waitClosed(timeoutMs = EVENT_DEADLINE_MS): Promise<{ code: number; reason: string }> {
    return Promise.race([
      this.#closedPromise,
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error('fake agent: close timed out')), timeoutMs).unref()),
    ]);
  }

  /** Closes the socket like a crashing agent: no close handshake. */
  terminate(): void {
    this.ws.terminate();
  }

  close(): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.close(1000);
  }

  #until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const now = check();
    if (now !== undefined) return Promise.resolve(now);
    return new Promise((resolve, reject) => {
      const waiter = (): void => {
        const v = check();
        if (v === undefined) return;
        clearTimeout(timer);
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        resolve(v);
      };
      const timer = setTimeout(() => {
        this.#waiters = this.#waiters.filter((w) => w !== waiter);
        reject(new Error(`fake agent: timed out after ${timeoutMs} ms waiting for ${what}; closed=${JSON.stringify(this.closed)}`));
      }, timeoutMs);
      this.#waiters.push(waiter);
    });
  }

  #notify(): void {
    for (const w of [...this.#waiters]) w();
  }
}

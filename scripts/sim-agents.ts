/**
 * Simulated agents: many agent sessions in one process, speaking the real agent <-> master
 * protocol (shared/protocol.ts) to a real master, with no tasks behind them.
 *
 *   node dist/scripts/sim-agents.js --master=127.0.0.1:5050 --count=N [--first=1]
 *        [--ip-base=127.1.0.0] [--concurrency=128] [--run-tasks] [--wait-go]
 *        [--racks=N] [--draining] [--restart-after-shutdown=100ms]
 *        [--tls-ca-file=CA.pem] [--credential=FILE]
 *
 * Sim agent k is `sim-<k>`. With --ip-base each one binds its own loopback source address
 * (base + k): every source address has its own ephemeral port range, so 10,000 sessions
 * plus the TIME_WAIT sockets of the previous run never exhaust the ~28,000 ports one
 * address gets. Pings are answered by `ws` itself. With --run-tasks a RUN_TASK is answered
 * with a TASK_RUNNING update (no process) and a KILL_TASK with TASK_KILLED, so throughput
 * benchmarks can drive the master's task path.
 *
 * --tasks=N (the /master/state benchmark) makes each agent register as `bench-state-S<k>` (an id the master did not give it, as
 * after a failover) with N tasks running (`bench-state-<k>-<i>`, 0.1 cpus and
 * 32 MB each, labelled), of the framework `bench-state` (STATE_FRAMEWORK, reported with them), as
 * agents re-registering after a master failover do: the master knows 10,000 agents' 50,000 tasks
 * in the time a registration storm takes (the state benchmark), with no scheduler launching them.
 * Unlike --tasks-per-agent's (below), these tasks carry ports, labels and health, and their
 * framework never subscribes, so nothing changes while the benchmark reads.
 *
 * --racks=N gives agent k the attribute `rack:r<1 + (k-1) mod N>` (maintenance plans group by
 * it); --draining advertises AGENT_DRAINING so DRAIN_AGENT (and a plan's drain) accepts the
 * agent; --restart-after-shutdown makes an agent the master shut down (its machine went DOWN)
 * behave like a real one under a supervisor that restarts it: after that delay it registers
 * again with its agent id (the checkpoint's), and while the master refuses it (`Machine is
 * DOWN`) it tries again after the same delay, until it is back.
 *
 * --warmup=N first registers N throw-away sessions with an in-process server (JIT warm-up).
 *
 * --tasks-per-agent=N makes each sim agent register as `sim-agent-<k>` (an id the master
 * admits as after a failover) already running N tasks of the framework `sim-framework`, each
 * TASK_RUNNING with one status: a master holding many tasks at once, without launching them
 * one by one (the state benchmarks: 50,000 tasks).
 *
 * --tls-ca-file and --credential make the sims reach a secured master as a real agent with
 * `--tls_ca_file` and `--credential` does: over wss:// verified with that CA, with the
 * credential's `Authorization` header on every upgrade (the security benchmark). Without them
 * (the default) the sims speak plain ws:// anonymously.
 *
 * One JSON line per milestone on stdout: `ready` (with --wait-go, before waiting for a
 * `go` line on stdin), `connecting`, `progress` (every 10 %), `registered` or
 * `registration_incomplete`, `lost` (sessions the master closed later), `closed`.
 * `at` fields are epoch milliseconds so a driver can line up several processes.
 * SIGTERM / SIGINT close every session and exit 0.
 */

import { createInterface } from 'node:readline';
import { createSecureContext, type SecureContext } from 'node:tls';
import { pathToFileURL } from 'node:url';
import WebSocket from 'ws';
import { AGENT_SESSION_PATH, CLOSE_CODES, assertNever, decodeMasterMessage, encode, type AgentMessage, type AgentTaskReport } from '../shared/protocol.js';
import type { FrameworkInfo, TaskStatus } from '../shared/mesos.js';
import { registerMessage, taskAnswers } from './harness/agent-double.js';
import { findLeader, parseMasterSpec } from '../shared/detection.js';
import { startEchoServer } from './bench/echo-server.js';
import { boolFlag, durationFlag, flagsOrExit, intFlag, optionalStringFlag, stringFlag } from '../shared/flags.js';
import { parseClientCredential } from '../shared/credentials.js';
import { readSecretFile } from '../io/secrets.js';
import { clientTransport, loadClientTls, PLAIN_TRANSPORT, type ClientTransport } from '../io/transport.js';

/** What to start. */
export interface SimAgentsOptions {
  /** The master's `host:port`, as the agent's --master flag. */
  master: string;
  /** How many sim agents. */
  count: number;
  /** Number of the first agent (hostname `sim-<first>`), so several processes do not collide. Default 1. */
  first?: number;
  /** Bind agent k to source address ipBase + k. Default: no bind (the kernel picks 127.0.0.1). */
  ipBase?: string;
  /** Handshakes in flight at once; beyond the master's listen backlog, SYNs are dropped and retried after 1 s. Default 128. */
  concurrency?: number;
  /** Answer RUN_TASK with TASK_RUNNING and KILL_TASK with TASK_KILLED. Default true. */
  runTasks?: boolean;
  /** Give up on one attempt (connect + REGISTERED) after this long. Default 20 s. */
  attemptTimeoutMs?: number;
  /** Attempts per agent before it counts as failed. Default 3. */
  attempts?: number;
  /**
   * Follow the leader: `master` may be a list of masters (or etcd://), and a session the master
   * closes re-registers with the current leader, keeping its agent id (HA failover). Default false.
   */
  follow?: boolean;
  /** Give agent k the attribute `rack:r<1 + (k-1) mod racks>`. Default: no rack attribute. */
  racks?: number;
  /** Running tasks each agent reports when it registers (of STATE_FRAMEWORK, never subscribed: the state benchmark). Default 0. */
  stateTasksPerAgent?: number;
  /** Register already running this many tasks of `sim-framework` (as `sim-agent-<k>`). Default 0. */
  tasksPerAgent?: number;
  /** Advertise the AGENT_DRAINING capability. Default false (the capability list is empty). */
  draining?: boolean;
  /**
   * After a SHUTDOWN of a registered session, wait this long (ms), then register again with the
   * same agent id, again every this long while refused, as a supervised agent restarted after its
   * machine came back UP. Default: off (a shut-down agent stays away).
   */
  restartAfterShutdownMs?: number;
  /** Called after each REGISTERED, with the number registered so far. */
  onProgress?: (registered: number) => void;
  /**
   * How sessions reach the master: with TLS material wss:// verified with its CA, and its
   * `Authorization` header on every upgrade (io/transport.ts). Default: plain ws://, anonymous.
   */
  transport?: ClientTransport;
}

/** How a registration run ended. */
export interface RegistrationSummary {
  count: number;
  registered: number;
  failed: number;
  /** From the start of connecting until the last agent registered or gave up. */
  elapsedMs: number;
  /** Epoch ms of the start of connecting and of the end, for cross-process timing. */
  startedAt: number;
  endedAt: number;
  /** Up to 5 distinct failure reasons. */
  errors: string[];
}

/** Counters of a running set of sim agents. */
export interface SimAgentCounters {
  registered: number;
  failed: number;
  /** Sessions the master closed after REGISTERED. */
  lost: number;
  /** Of those, re-registered with the leader (with follow). */
  rejoined: number;
  tasksRunning: number;
  /** SHUTDOWNs of registered sessions (their machine went DOWN, or the agent was removed). */
  shutdowns: number;
  /** With restartAfterShutdownMs: agents back registered after a SHUTDOWN. */
  restarted: number;
  updatesSent: number;
  acksReceived: number;
}

/** A running set of sim agents. */
export interface SimAgents {
  /** Settles when every agent registered or gave up; never rejects. */
  readonly registered: Promise<RegistrationSummary>;
  readonly counters: Readonly<SimAgentCounters>;
  /** Closes every session with a close handshake (bounded: stragglers are terminated after 5 s). */
  close(): Promise<void>;
  /** Drops every socket at once. */
  terminate(): void;
}

/** IPv4 dotted quad -> 32-bit unsigned integer. */
export function ipv4ToInt(ip: string): number {
  const parts = ip.split('.').map((p) => Number(p));
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) throw new Error(`not an IPv4 address: '${ip}'`);
  return (((parts[0]! << 24) >>> 0) + (parts[1]! << 16) + (parts[2]! << 8) + parts[3]!) >>> 0;
}

/** 32-bit unsigned integer -> IPv4 dotted quad. */
export function intToIpv4(n: number): string {
  return [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join('.');
}

/**
 * Source address of sim agent k: ipBase + k. It must stay inside 127.0.0.0/8, the only range
 * the loopback interface answers for without configuration, and must not be its broadcast.
 */
export function simAgentAddress(ipBase: string, k: number): string {
  const n = ipv4ToInt(ipBase) + k;
  if (n >>> 24 !== 127 || n >= 0x7fffffff) throw new Error(`sim agent ${k}: ${ipBase} + ${k} leaves 127.0.0.0/8`);
  return intToIpv4(n);
}

/** A transport's ws options with its TLS material compiled once into a shared SecureContext. */
function withSharedContext(o: ClientTransport['ws']): { secureContext: SecureContext; headers?: Record<string, string> } {
  const secureContext = createSecureContext({ ...(o.ca === undefined ? {} : { ca: o.ca }), ...(o.cert === undefined ? {} : { cert: o.cert }), ...(o.key === undefined ? {} : { key: o.key }) });
  return { secureContext, ...(o.headers === undefined ? {} : { headers: o.headers }) };
}

/**
 * The framework whose tasks `--tasks` reports: it does not subscribe, so the master keeps it as
 * recovered (it has a week to come back) and makes it no offers; nothing changes while a
 * benchmark reads the master's state.
 */
export const STATE_FRAMEWORK: FrameworkInfo = {
  id: { value: 'bench-state' },
  user: 'nobody',
  name: 'bench-state',
  hostname: 'bench-state-scheduler',
  failover_timeout: 604_800,
  checkpoint: true,
  roles: ['bench'],
  capabilities: [{ type: 'MULTI_ROLE' }, { type: 'PARTITION_AWARE' }],
  labels: { labels: [{ key: 'purpose', value: 'state benchmark' }] },
};

/** The id sim agent k registers with when it reports tasks. */
export function simAgentId(k: number): string {
  return `bench-state-S${k}`;
}

/** The tasks sim agent k (registering as `agentId`) reports with `--tasks=n`: running, one status each. Pure. */
export function simTasks(k: number, agentId: string, n: number, nowSecs: number): AgentTaskReport[] {
  const out: AgentTaskReport[] = [];
  for (let i = 0; i < n; i++) {
    const id = `bench-state-${k}-${i}`;
    out.push({
      framework_id: 'bench-state',
      task: {
        name: id,
        task_id: { value: id },
        agent_id: { value: agentId },
        resources: [
          { name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } },
          { name: 'mem', type: 'SCALAR', scalar: { value: 32 } },
          { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000 + i, end: 31000 + i }] } },
        ],
        command: { value: 'sleep 3600' },
        labels: { labels: [{ key: 'app', value: `app-${i}` }] },
      },
      state: 'TASK_RUNNING',
      statuses: [{ task_id: { value: id }, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', timestamp: nowSecs - k / 1000 - i / 10, healthy: true }],
    });
  }
  return out;
}

/** 16 random bytes, base64: the uuid format of a Mesos status update. */
/** The framework of the tasks a sim agent registers with (--tasks-per-agent): its failover timeout gives the benchmark an hour to subscribe it. */
const SIM_FRAMEWORK = { user: 'root', name: 'sim-framework', id: { value: 'sim-framework' }, checkpoint: true, failover_timeout: 3600 };

/** Starts `count` sim agents against `master`; they stay connected until close(). */
export function startSimAgents(options: SimAgentsOptions): SimAgents {
  const first = options.first ?? 1;
  const concurrency = Math.max(1, Math.min(options.concurrency ?? 128, options.count));
  const attempts = options.attempts ?? 3;
  const attemptTimeoutMs = options.attemptTimeoutMs ?? 20_000;
  const runTasks = options.runTasks ?? true;
  const transport = options.transport ?? PLAIN_TRANSPORT;
  // One TLS context for every session: given only `ca`, tls.connect builds a context (parsing
  // the CA into a fresh store) per connection, which measured a quarter of this process's CPU
  // in a 2,000-agent storm. A real agent builds it once on its own machine; the sims stand in
  // for 2,000 machines on the master's two cores, so they must not pay it 2,000 times there.
  const wsOptions = transport.tls ? withSharedContext(transport.ws) : transport.ws;
  const spec = parseMasterSpec(options.master);
  if (!spec.ok) throw new Error(`--master: ${spec.error}`);
  const leaderUrl = async (): Promise<string | undefined> => {
    const leader = await findLeader(spec.value, transport.fetch, 2_000, transport.tls ? 'https' : 'http');
    return leader === undefined ? undefined : `${transport.tls ? 'wss' : 'ws'}://${leader}${AGENT_SESSION_PATH}`;
  };
  const counters: SimAgentCounters = { registered: 0, failed: 0, lost: 0, rejoined: 0, tasksRunning: 0, shutdowns: 0, restarted: 0, updatesSent: 0, acksReceived: 0 };
  const sockets = new Set<WebSocket>();
  const errors = new Set<string>();
  let closing = false;
  const startedAt = Date.now();

  /** The tasks sim agent k reports at registration (--tasks-per-agent): running, each with its one status. */
  function reportedTasks(k: number, agentId: string): AgentTaskReport[] {
    const n = options.tasksPerAgent ?? 0;
    const reports: AgentTaskReport[] = [];
    for (let j = 0; j < n; j++) {
      const taskId = { value: `sim-${k}-task-${j}` };
      const status: TaskStatus = { task_id: taskId, state: 'TASK_RUNNING', source: 'SOURCE_EXECUTOR', agent_id: { value: agentId }, timestamp: startedAt / 1000, uuid: Buffer.from(`${k}:${j}`.padEnd(16, '.').slice(0, 16)).toString('base64') };
      reports.push({
        framework_id: SIM_FRAMEWORK.id.value,
        task: {
          name: `sim-${k}-task-${j}`,
          task_id: taskId,
          agent_id: { value: agentId },
          resources: [{ name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } }, { name: 'mem', type: 'SCALAR', scalar: { value: 1 } }],
          command: { shell: true, value: 'sleep 600' },
        },
        state: 'TASK_RUNNING',
        statuses: [status],
      });
    }
    return reports;
  }
  const t0 = performance.now();

  /** One agent's session after REGISTERED: answer the master until it or we close. */
  function serve(ws: WebSocket, agentId: string, k: number): void {
    // The simulated tasks this agent runs (task id -> framework id), so a DRAIN can end them.
    const running = new Map<string, string>();
    for (const t of reportedTasks(k, agentId)) running.set(t.task.task_id.value, t.framework_id);
    counters.tasksRunning += running.size;
    let shutdown = false;
    ws.on('message', (data, isBinary) => {
      const d = decodeMasterMessage(data, isBinary);
      if (!d.ok) {
        // As a real agent: a message that does not validate is refused and the session kept; a garbled frame closes it.
        if (d.refusal !== undefined) errors.add(`refused ${d.refusal.type}: ${d.refusal.reason}`);
        else ws.close(CLOSE_CODES.PROTOCOL_ERROR, d.error.slice(0, 120));
        return;
      }
      const msg = d.message;
      switch (msg.type) {
        case 'REGISTERED':
          break; // a duplicate answer to our one REGISTER; nothing to do
        case 'SHUTDOWN':
          shutdown = true;
          counters.shutdowns++;
          ws.close(CLOSE_CODES.GOING_AWAY, 'shutdown');
          break;
        case 'RUN_TASK':
        case 'KILL_TASK':
        case 'DRAIN': {
          // The agent double's answers (scripts/harness/agent-double.ts), counted.
          const before = running.size;
          for (const u of taskAnswers(msg, agentId, running, runTasks)) sendStatus(ws, u);
          counters.tasksRunning = Math.max(0, counters.tasksRunning + running.size - before);
          break;
        }
        case 'ACKNOWLEDGE':
          // Sim agents do not resend updates, so an acknowledgement only needs counting.
          counters.acksReceived++;
          break;
        default:
          assertNever(msg);
      }
    });
    ws.on('close', () => {
      sockets.delete(ws);
      if (closing) return;
      // A supervised agent the master shut down: its tasks are gone; it comes back after a restart.
      if (shutdown && options.restartAfterShutdownMs !== undefined) {
        void restartAgent(k, agentId, options.restartAfterShutdownMs);
        return;
      }
      counters.lost++;
      // Following the leader: back with the same id, wherever the leader is now.
      if (options.follow === true) void runAgent(k, agentId);
    });
  }

  function sendStatus(ws: WebSocket, update: AgentMessage): void {
    ws.send(encode(update));
    counters.updatesSent++;
  }

  /** One attempt: connect, REGISTER, wait for REGISTERED. Resolves with the agent id or an error text. */
  async function attempt(k: number, agentId?: string): Promise<{ ok: true; ws: WebSocket; agentId: string } | { ok: false; error: string }> {
    const url = await leaderUrl();
    if (url === undefined) return { ok: false, error: 'no leading master found' };
    return new Promise((resolve) => {
      const ip = options.ipBase === undefined ? '127.0.0.1' : simAgentAddress(options.ipBase, k);
      const ws = new WebSocket(url, {
        ...wsOptions,
        perMessageDeflate: false,
        handshakeTimeout: attemptTimeoutMs,
        ...(options.ipBase === undefined ? {} : { localAddress: ip }),
      });
      let settled = false;
      const finish = (r: { ok: true; ws: WebSocket; agentId: string } | { ok: false; error: string }): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        ws.removeAllListeners('message');
        if (!r.ok) ws.terminate();
        resolve(r);
      };
      const timer = setTimeout(() => finish({ ok: false, error: `no REGISTERED within ${attemptTimeoutMs} ms` }), attemptTimeoutMs);
      ws.on('error', (e) => finish({ ok: false, error: e.message }));
      ws.on('close', (code, reason) => finish({ ok: false, error: `closed before REGISTERED (${code} ${reason.toString()})` }));
      ws.on('open', () => {
        const self = {
          hostname: `sim-${k}`,
          ip,
          port: 5051,
          resources: [
            { name: 'cpus', type: 'SCALAR' as const, scalar: { value: 4 } },
            { name: 'mem', type: 'SCALAR' as const, scalar: { value: 4096 } },
            { name: 'disk', type: 'SCALAR' as const, scalar: { value: 10000 } },
            { name: 'ports', type: 'RANGES' as const, ranges: { range: [{ begin: 31000, end: 32000 }] } },
          ],
          attributes: [
            { name: 'sim', type: 'TEXT' as const, text: { value: 'true' } },
            ...(options.racks === undefined ? [] : [{ name: 'rack', type: 'TEXT' as const, text: { value: `r${1 + ((k - 1) % options.racks)}` } }]),
          ],
        };
        const capabilities = options.draining === true ? ['AGENT_DRAINING'] : [];
        // With tasks, the agent comes back with an id of its own (as after a master failover): its tasks name it.
        const stateTasks = options.stateTasksPerAgent ?? 0;
        const id = agentId ?? (stateTasks > 0 ? simAgentId(k) : (options.tasksPerAgent ?? 0) > 0 ? `sim-agent-${k}` : undefined);
        const tasks = id === undefined ? [] : stateTasks > 0 ? simTasks(k, id, stateTasks, Date.now() / 1000) : reportedTasks(k, id);
        const register = registerMessage(1, self, { capabilities, tasks, ...(id === undefined ? {} : { agentId: id }) });
        if (tasks.length > 0) register.frameworks = [stateTasks > 0 ? STATE_FRAMEWORK : SIM_FRAMEWORK];
        ws.send(encode(register));
      });
      ws.on('message', (data, isBinary) => {
        const d = decodeMasterMessage(data, isBinary);
        if (!d.ok) return finish({ ok: false, error: `bad frame before REGISTERED: ${d.error}` });
        if (d.message.type === 'REGISTERED') return finish({ ok: true, ws, agentId: d.message.agent_id });
        if (d.message.type === 'SHUTDOWN') return finish({ ok: false, error: `SHUTDOWN: ${d.message.message}` });
        // Anything else before REGISTERED is out of order; ignore it as an agent would.
      });
    });
  }

  /**
   * A restarted agent: after `delayMs`, register with the checkpointed id; refused (machine still
   * DOWN) or failed, try again after `delayMs` (a supervisor's restart delay), until back or closing.
   */
  async function restartAgent(k: number, agentId: string, delayMs: number): Promise<void> {
    while (!closing) {
      await new Promise((res) => setTimeout(res, delayMs));
      if (closing) return;
      const r = await attempt(k, agentId);
      if (!r.ok) continue;
      r.ws.removeAllListeners('close');
      r.ws.removeAllListeners('error');
      r.ws.on('error', () => {});
      if (closing) {
        r.ws.terminate();
        return;
      }
      sockets.add(r.ws);
      serve(r.ws, r.agentId, k);
      counters.restarted++;
      return;
    }
  }

  async function runAgent(k: number, agentId?: string): Promise<void> {
    // A rejoin (following the leader through a failover) keeps trying for about a minute: the
    // old leader's lease must expire before anyone leads.
    const tries = agentId === undefined ? attempts : 120;
    for (let i = 0; i < tries && !closing; i++) {
      const r = await attempt(k, agentId);
      if (r.ok) {
        r.ws.removeAllListeners('close');
        r.ws.removeAllListeners('error');
        r.ws.on('error', () => {}); // a reset after REGISTERED shows up as 'close'
        if (closing) {
          r.ws.terminate();
          return;
        }
        sockets.add(r.ws);
        serve(r.ws, r.agentId, k);
        if (agentId !== undefined) {
          counters.rejoined++;
          return;
        }
        counters.registered++;
        options.onProgress?.(counters.registered);
        return;
      }
      if (errors.size < 5) errors.add(r.error);
      // Back off like the real agent (uniform in [0, 100 ms * 2^i]) so retries do not arrive in a wave.
      await new Promise((res) => setTimeout(res, Math.random() * Math.min(1_000, 100 * 2 ** i)));
    }
    counters.failed++;
  }

  const registered = (async (): Promise<RegistrationSummary> => {
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < options.count && !closing) {
        const k = first + next++;
        await runAgent(k);
      }
    };
    await Promise.all(Array.from({ length: concurrency }, worker));
    return {
      count: options.count,
      registered: counters.registered,
      failed: options.count - counters.registered,
      elapsedMs: performance.now() - t0,
      startedAt,
      endedAt: Date.now(),
      errors: [...errors],
    };
  })();

  return {
    registered,
    counters,
    async close(): Promise<void> {
      closing = true;
      const open = [...sockets];
      await Promise.race([
        Promise.all(open.map((ws) => new Promise<void>((res) => {
          if (ws.readyState === WebSocket.CLOSED) return res();
          ws.once('close', () => res());
          ws.close(CLOSE_CODES.GOING_AWAY, 'sim agents stopping');
        }))),
        new Promise((res) => setTimeout(res, 5_000).unref()),
      ]);
      for (const ws of sockets) ws.terminate();
      sockets.clear();
    },
    terminate(): void {
      closing = true;
      for (const ws of sockets) ws.terminate();
      sockets.clear();
    },
  };
}

const FLAGS = {
  master: stringFlag('The master, host:port (with --follow also a list of masters, or etcd://).', '127.0.0.1:5050', 'host:port'),
  follow: boolFlag('Follow the leader: a session the master closes re-registers with the current leader, keeping its id. Default false.', false),
  count: intFlag('How many sim agents to start. Default 100.', 100, 1, 20_000),
  first: intFlag('Number of the first sim agent (hostname sim-<first>).', 1, 0, 10_000_000),
  'ip-base': optionalStringFlag('Bind sim agent k to source address ip-base + k (inside 127.0.0.0/8). Default: no bind.', 'IP'),
  concurrency: intFlag('Handshakes in flight at once. Default 128.', 128, 1, 20_000),
  'run-tasks': boolFlag('Answer RUN_TASK with TASK_RUNNING (no process) and KILL_TASK with TASK_KILLED. Default true.', true),
  'wait-go': boolFlag('Print {"msg":"ready"} and wait for a line "go" on stdin before connecting. Default false.', false),
  'attempt-timeout': durationFlag('Give up one attempt (connect + REGISTERED) after this long. Default 20secs.', 20_000),
  attempts: intFlag('Attempts per agent before it counts as failed. Default 3.', 3, 1, 100),
  racks: intFlag('Give agent k the attribute rack:r<1 + (k-1) mod racks>; 0: no rack attribute. Default 0.', 0, 0, 10_000),
  tasks: intFlag('Running tasks each agent reports when it registers (framework bench-state, recovered by the master). Default 0.', 0, 0, 1_000),
  draining: boolFlag('Advertise the AGENT_DRAINING capability (DRAIN_AGENT and maintenance plans need it). Default false.', false),
  'restart-after-shutdown': durationFlag('After the master shuts a registered agent down (machine DOWN), register it again with its id after this long, and again every this long while refused, as a restarted agent. 0: stay away. Default 0.', 0),
  'tls-ca-file': optionalStringFlag('PEM CA the master\'s certificate must chain to: connect with wss:// (as the agent\'s --tls_ca_file). Default: none, plain ws://.', 'FILE'),
  credential: optionalStringFlag('Credential file every session authenticates with, as the agent\'s --credential ({"principal":...,"secret":...}, "principal secret", or {"token":...}); must not be readable by others. Default: none, anonymous.', 'FILE'),
  'tasks-per-agent': intFlag('Register each sim agent (as sim-agent-<k>) already running this many tasks of the framework sim-framework. Default 0.', 0, 0, 1_000),
  warmup: intFlag('Before connecting (and before `ready`), register this many throw-away sessions with an in-process server, so the clock does not time the JIT compiling the client path. Default 0.', 0, 0, 5_000),
} as const;

/** Registers `count` throw-away sessions with an in-process floor server, then drops them. */
async function warmUp(count: number): Promise<void> {
  const server = await startEchoServer();
  const sims = startSimAgents({ master: `127.0.0.1:${server.port}`, count, concurrency: 64, runTasks: false });
  await sims.registered;
  await sims.close();
  server.close();
}

function line(msg: string, fields: Record<string, unknown> = {}): void {
  process.stdout.write(JSON.stringify({ msg, ...fields }) + '\n');
}

/** The transport of --tls-ca-file and --credential (read once, before any clock), or exit 2 naming the flag. */
function transportOrExit(caFile: string | undefined, credentialFile: string | undefined): ClientTransport {
  const die = (error: string): never => {
    process.stderr.write(`sim-agents: ${error}\n`);
    process.exit(2);
  };
  const tls = loadClientTls({ caFile });
  // loadClientTls names the agent's flag; this script spells its flags with dashes.
  if (!tls.ok) return die(tls.error.replace('--tls_ca_file', '--tls-ca-file'));
  if (credentialFile === undefined) return tls.tls === undefined ? PLAIN_TRANSPORT : clientTransport({ tls: tls.tls });
  const read = readSecretFile(credentialFile, '--credential');
  if (!read.ok) return die(read.error);
  const credential = parseClientCredential(read.text);
  if (!credential.ok) return die(`--credential ${credentialFile}: ${credential.error}`);
  return clientTransport({ credential: credential.value, tls: tls.tls });
}

async function main(): Promise<void> {
  const f = flagsOrExit('sim-agents', 'Simulated Drydock agents speaking the real protocol to a master.', FLAGS, process.argv.slice(2));
  const transport = transportOrExit(f['tls-ca-file'], f.credential);
  if (f.warmup > 0) await warmUp(f.warmup);
  if (f['wait-go']) {
    line('ready', { count: f.count, first: f.first, pid: process.pid });
    const rl = createInterface({ input: process.stdin });
    await new Promise<void>((resolve) => {
      rl.on('line', (l) => { if (l.trim() === 'go') resolve(); });
      rl.on('close', () => resolve()); // a driver that died must not leave us waiting forever
    });
    rl.close();
  }
  const step = Math.max(1, Math.ceil(f.count / 10));
  let nextReport = step;
  const sims = startSimAgents({
    master: f.master,
    follow: f.follow,
    count: f.count,
    first: f.first,
    concurrency: f.concurrency,
    runTasks: f['run-tasks'],
    attemptTimeoutMs: f['attempt-timeout'],
    attempts: f.attempts,
    draining: f.draining,
    transport,
    ...(f.racks > 0 ? { racks: f.racks } : {}),
    ...(f.tasks > 0 ? { stateTasksPerAgent: f.tasks } : {}),
    ...(f['tasks-per-agent'] > 0 ? { tasksPerAgent: f['tasks-per-agent'] } : {}),
    ...(f['restart-after-shutdown'] > 0 ? { restartAfterShutdownMs: f['restart-after-shutdown'] } : {}),
    ...(f['ip-base'] === undefined ? {} : { ipBase: f['ip-base'] }),
    onProgress: (n) => {
      if (n >= nextReport && n < f.count) {
        line('progress', { registered: n, count: f.count, at: Date.now() });
        nextReport += step;
      }
    },
  });
  line('connecting', { count: f.count, first: f.first, master: f.master, at: Date.now() });
  let stopping = false;
  const stop = (): void => {
    if (stopping) return;
    stopping = true;
    void sims.close().then(() => {
      line('closed', { lost: sims.counters.lost, shutdowns: sims.counters.shutdowns, restarted: sims.counters.restarted, tasksRunning: sims.counters.tasksRunning, updatesSent: sims.counters.updatesSent, acksReceived: sims.counters.acksReceived });
      process.exit(0);
    });
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  const s = await sims.registered;
  if (stopping) return;
  line(s.failed === 0 ? 'registered' : 'registration_incomplete', { ...s, elapsedMs: Math.round(s.elapsedMs) });
  // Report later losses once a second at most, so a master restart is visible without a flood.
  let lastLost = 0;
  setInterval(() => {
    if (sims.counters.lost !== lastLost) {
      lastLost = sims.counters.lost;
      line('lost', { lost: lastLost, at: Date.now() });
    }
  }, 1_000);
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  void main();
}

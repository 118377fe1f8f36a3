/**
 * The agent: checkpoint recovery, the supervisor, reliable status updates, the master session,
 * the disk watch and the agent API, wired together. Lifecycle: created → recovering → running →
 * stopping → stopped. close() leaves tasks running (an upgrade under systemd KillMode=process);
 * shutdown() kills them first.
 *
 * Disk pressure (agent/disk-watch.ts) is a condition of the agent: it is logged once per
 * change, reported to the master (REGISTER's conditions, then CONDITIONS to a master that takes
 * them), which stops offering the agent while it lasts; launches meanwhile are refused. A
 * checkpoint that cannot commit is disk pressure too: its commit is tried again with backoff,
 * the updates that wait for it wait on (an update is never sent before the commit it depends
 * on: the condition is what the master hears meanwhile), and the failure is logged when it
 * begins and when it ends. GET_HEALTH stays what Mesos' is, the process's health: an agent
 * short of disk still supervises, kills and reports its tasks.
 */

import { parseMasterSpec, type EtcdAccess } from '../shared/detection.js';
import { detector } from './detector.js';
import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import type { TaskStatus } from '../shared/mesos.js';
import { DRYDOCK_VERSION } from '../shared/version.js';
import { AgentApi } from './api.js';
import { buildFacts, type AgentPort } from './calls.js';
import { SandboxFiles } from './files.js';
import type { AgentSelf } from './state.js';
import { Checkpoint, type DrainRecord } from './checkpoint.js';
import type { DrainConfigWire } from '../shared/drain.js';
import type { AgentConfig } from './config.js';
import { MACHINE_DOWN_MESSAGE, MACHINE_DOWN_REMOVAL, type AgentConditions, type DiskPressure } from '../shared/protocol.js';
import { DiskWatch } from './disk-watch.js';
import { describeWriteFailure } from './disk-pressure.js';
import { join } from 'node:path';
import { Session, type TaskMessage } from './session.js';
import { StatusUpdateStreams } from './status-updates.js';
import { Supervisor } from './supervisor.js';
import { gracePeriodMs } from './kill-policy.js';
import { LaunchServer } from './launch-server.js';
import { Signaller } from './signaller.js';
import { TASK_NICE } from './launcher.js';
import { setPriority } from 'node:os';
import { groupUsage } from './usage.js';
import { AgentMetrics } from './metrics.js';
import type { ClientTransport } from '../io/transport.js';
import type { ServerTls } from '../io/tls-server.js';
import type { AgentSecurity } from './security.js';
import type { TimerHandle } from '../shared/clock.js';
import { statSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** The process exit code for a checkpoint that belongs to another identity (sysexits EX_CONFIG). */
export const EX_CONFIG = 78;

/** Capabilities announced at registration. */
export const AGENT_CAPABILITIES = ['MULTI_ROLE', 'AGENT_DRAINING'];

/** Longest wait for tasks to die on shutdown beyond their grace periods. */
const SHUTDOWN_SLACK_MS = 5_000;

/**
 * How long a checkpoint commit nothing waits for (acknowledgements, a launcher's pid once
 * TASK_RUNNING is out) may wait to share the next launch's or kill's fdatasync. Launches one
 * after another came 0.5-1 ms apart, each behind two such commits.
 */
const DEFERRED_COMMIT_MS = 3;

export type AgentLifecycle = 'created' | 'recovering' | 'running' | 'stopping' | 'stopped';

export type StartResult = { ok: true; port: number } | { ok: false; exitCode: number; message: string };

export interface AgentDeps {
  clock: Clock;
  log: Logger;
  random?: () => number;
  /** Called once the agent has stopped because the master said so (exit 0). */
  onShutdown?: () => void;
  /** How the session and leader detection reach the master (TLS, headers). Default: plain. */
  transport?: ClientTransport;
  /** --tls_cert_file: the agent API serves HTTPS. */
  serverTls?: ServerTls | undefined;
  /** How etcd is read with --master=etcd://... (its TLS and user). Default: plain http. */
  etcd?: EtcdAccess | undefined;
  /** When the process started (ms since the epoch), for slave/uptime_secs. Default: when the agent was made. */
  processStartMs?: number;
  /** Who may call the agent API (--authenticate_http_*, --http_credentials, --acls). Default: open. */
  security?: AgentSecurity | undefined;
  /** The launcher binary (agent/launcher-file.ts). Default: launcherPath(), beside the module. */
  launcher?: string | undefined;
}

/** When dist was built: the mtime of this compiled file (/state's build_date and build_time). */
const BUILT_MS = ((): number | undefined => {
  try {
    return statSync(fileURLToPath(import.meta.url)).mtimeMs;
  } catch {
    return undefined;
  }
})();

export class Agent {
  readonly config: AgentConfig;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #checkpoint: Checkpoint;
  readonly #streams: StatusUpdateStreams;
  readonly #supervisor: Supervisor;
  readonly #launchServer: LaunchServer;
  readonly #signaller: Signaller;
  readonly #session: Session;
  readonly #api: AgentApi;
  readonly #metrics: AgentMetrics;
  readonly #processStartMs: number;
  readonly #disk: DiskWatch;
  readonly #onShutdown: (() => void) | undefined;
  /** The conditions as the master last heard them (JSON), so that only changes are sent. */
  #conditionsSent: string | undefined;
  /** Since when the checkpoint's commits have been failing (ms), while they do. */
  #checkpointFailingSinceMs: number | undefined;
  #lifecycle: AgentLifecycle = 'created';
  #agentId: string | undefined;
  #port = 0;
  /** The drain being carried out (checkpointed in meta/drain.json), until no task is left. */
  #drain: DrainRecord | undefined;
  /** Since when the master has been refusing this agent because its machine is DOWN. */
  #downSinceMs: number | undefined;
  /** SET_LOGGING_LEVEL's level in force (0: --log_level) and the timer that ends it. */
  #loggingLevel: { level: number; revert: TimerHandle | undefined } = { level: 0, revert: undefined };

  constructor(config: AgentConfig, deps: AgentDeps) {
    this.config = config;
    this.#clock = deps.clock;
    this.#log = deps.log;
    this.#onShutdown = deps.onShutdown;
    this.#processStartMs = deps.processStartMs ?? deps.clock.now();
    // Reads the model on scrape; the closures run only once everything below exists.
    this.#metrics = new AgentMetrics({
      clock: deps.clock,
      processStartMs: this.#processStartMs,
      facts: () => ({
        tasks: this.#supervisor.facts(),
        resources: config.resources,
        registered: this.#session.state === 'registered',
        disk: { pressure: this.#disk.pressure !== undefined, readings: this.#disk.readings.map((r) => ({ ...r, dir: r.path === config.workDir ? 'work_dir' : 'sandboxes' })) },
      }),
    });
    const instruments = this.#metrics.instruments;
    this.#checkpoint = new Checkpoint(config.workDir, {
      instruments: instruments.checkpoint,
      onError: (e, failures) => this.#checkpointFailed(e as NodeJS.ErrnoException, failures),
      onRecovered: (failures) => this.#checkpointRecovered(failures),
      deferMs: DEFERRED_COMMIT_MS,
    });
    this.#disk = new DiskWatch({
      workDir: config.workDir,
      sandboxesDir: join(config.workDir, 'sandboxes'),
      thresholds: config.diskPressure,
      intervalMs: config.diskWatchIntervalMs,
      clock: deps.clock,
      checkpoint: this.#checkpoint,
      onChange: (pressure, previous) => this.#diskPressureChanged(pressure, previous),
    });
    this.#streams = new StatusUpdateStreams({
      clock: deps.clock,
      initialRetryMs: config.statusUpdateRetryIntervalMs,
      send: (frameworkId, status) => this.#sendUpdate(frameworkId, status),
    });
    this.#launchServer = new LaunchServer(deps.log.child({ component: 'launcher' }), deps.launcher);
    this.#signaller = new Signaller(deps.log.child({ component: 'signaller' }), deps.launcher);
    this.#supervisor = new Supervisor({
      checkpoint: this.#checkpoint,
      streams: this.#streams,
      clock: deps.clock,
      log: deps.log.child({ component: 'supervisor' }),
      agentId: () => this.#agentId,
      sendOnce: (frameworkId, status) => void this.#sendUpdate(frameworkId, status),
      draining: () => this.#drain?.config,
      instruments: instruments.supervisor,
      launch: (spec) => this.#launchServer.launch(spec),
      signal: (pgid, signal) => this.#signaller.signal(pgid, signal),
      diskPressure: () => this.#disk.current(),
      writeFailed: (dir, e) => this.#disk.writeFailed(dir, e),
    });
    // Several masters (a list, or etcd://): find the leader at every connect.
    const spec = parseMasterSpec(config.master);
    const detect = spec.ok && spec.value.kind !== 'fixed' ? detector(spec.value, deps.log.child({ component: 'detector' }), deps.transport, deps.etcd) : undefined;
    this.#session = new Session({
      master: config.master,
      ...(detect === undefined ? {} : { detect }),
      ...(deps.transport === undefined ? {} : { transport: deps.transport }),
      backoffFactorMs: config.registrationBackoffFactorMs,
      registrationTimeoutMs: config.registrationTimeoutMs,
      clock: deps.clock,
      log: deps.log.child({ component: 'session' }),
      ...(deps.random !== undefined ? { random: deps.random } : {}),
      owner: {
        registration: () => {
          // A master hears only of what is durable: changes still being committed go first.
          this.#checkpoint.flush();
          const conditions = this.#conditions();
          this.#conditionsSent = JSON.stringify(conditions);
          return {
          ...(this.#agentId !== undefined ? { agent_id: this.#agentId } : {}),
          agent: {
            hostname: config.hostname,
            ip: config.ip,
            port: this.#port,
            resources: [...config.resources],
            attributes: [...config.attributes],
          },
          version: DRYDOCK_VERSION,
          capabilities: AGENT_CAPABILITIES,
          tasks: this.#supervisor.reports(),
          frameworks: this.#supervisor.frameworks(),
          conditions,
          };
        },
        registered: (agentId) => {
          if (this.#downSinceMs !== undefined) {
            this.#log.info('machine is UP again: registered', { downForMs: this.#clock.now() - this.#downSinceMs });
            this.#downSinceMs = undefined;
          }
          const reregistered = this.#agentId !== undefined;
          if (agentId !== this.#agentId) {
            this.#checkpoint.writeAgent({ hostname: config.hostname, ip: config.ip, agent_id: agentId });
            this.#checkpoint.flush();
          }
          this.#agentId = agentId;
          instruments.session.onRegistered(reregistered);
          this.#streams.resendAll();
          // A change since the REGISTER went out.
          this.#sendConditions();
        },
        message: (msg) => this.#onMessage(msg),
        shutdown: (message, wasRegistered) => void this.#masterShutdown(message, wasRegistered),
        disconnected: () => {
          instruments.session.onDisconnected();
          this.#streams.pause();
        },
        refused: (refusal) => instruments.session.onRefused(refusal.type),
      },
    });
    this.#api = new AgentApi({
      log: deps.log.child({ component: 'api' }),
      ready: () => this.#lifecycle === 'running' || this.#lifecycle === 'stopping',
      port: this.#port_(),
      tls: deps.serverTls,
      security: deps.security,
    });
  }

  get lifecycle(): AgentLifecycle {
    return this.#lifecycle;
  }

  get agentId(): string | undefined {
    return this.#agentId;
  }

  /**
   * Reads the checkpoint, binds the API (logging `listening`), re-adopts tasks and starts the
   * session. A foreign checkpoint stops here with EX_CONFIG; a corrupt one is moved aside.
   */
  async start(): Promise<StartResult> {
    const cfg = this.config;
    const loaded = this.#checkpoint.load({ hostname: cfg.hostname, ip: cfg.ip });
    if (loaded.kind === 'foreign') {
      return {
        ok: false,
        exitCode: EX_CONFIG,
        message:
          `the checkpoint in ${this.#checkpoint.metaDir} belongs to an agent with hostname '${loaded.found.hostname}' and ip '${loaded.found.ip}', ` +
          `not '${cfg.hostname}' and '${cfg.ip}': remove ${this.#checkpoint.metaDir} to start as a new agent, or pass --hostname=${loaded.found.hostname} --ip=${loaded.found.ip}`,
      };
    }
    let records = loaded.kind === 'recovered' ? loaded.tasks : [];
    if (loaded.kind === 'corrupt') {
      const aside = this.#checkpoint.quarantine(this.#clock.now());
      this.#log.error('corrupt checkpoint, starting as a new agent', { file: loaded.file, problem: loaded.problem, movedTo: aside });
      records = [];
    }
    this.#agentId = loaded.kind === 'recovered' ? loaded.agentId : undefined;
    this.#lifecycle = 'recovering';
    try {
      this.#port = await this.#api.listen(cfg.ip, cfg.port);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
      const why = code === 'EADDRINUSE' ? 'the address is already in use (another agent?)' : code === 'EADDRNOTAVAIL' ? 'no interface has that address (check --ip)' : code;
      return { ok: false, exitCode: 1, message: `cannot listen on ${cfg.ip}:${cfg.port}: ${why}` };
    }
    this.#log.info('listening', { ip: cfg.ip, port: this.#port, tls: cfg.tls.certFile !== undefined });
    // The identity is written once the agent can serve (a start that fails on a bad --ip must
    // not claim the work dir), and before the first registration, so that a later start with
    // other flags is caught.
    this.#checkpoint.writeAgent({ hostname: cfg.hostname, ip: cfg.ip, ...(this.#agentId !== undefined ? { agent_id: this.#agentId } : {}) });
    this.#checkpoint.flush();

    this.#drain = this.#checkpoint.readDrain();
    // Read before recovery: a task whose end was not recorded is reported with the disk's state.
    this.#disk.start();
    this.#supervisor.recover(records);
    this.#checkpoint.sweep();
    this.#log.info('recovered', { agentId: this.#agentId, tasks: records.length, draining: this.#drain !== undefined });
    if (this.#drain !== undefined) {
      // Mesos: the checkpointed drain is replayed; recovered tasks are killed again.
      this.#supervisor.drain(this.#drain.config);
      this.#leaveDrainIfDone();
    }
    this.#launchServer.start();
    // Real-time signals are part of running above the tasks: --priority_boost=0 turns both off.
    if (this.config.priorityBoost > 0) this.#signaller.start();
    this.#raisePriority();
    this.#lifecycle = 'running';
    this.#session.start();
    return { ok: true, port: this.#port };
  }

  /**
   * The agent's own thread runs --priority_boost nice levels above its tasks (TASK_NICE). At
   * equal priority, every signal that wakes a task hands that task the CPU, and the rest of a
   * drain's signals wait behind it (measured: 100 SIGTERMs in some 60 ms instead of 1 ms, on a
   * machine whose cores were busy).
   */
  #raisePriority(): void {
    const boost = this.config.priorityBoost;
    if (boost === 0) return;
    const nice = Math.max(-20, TASK_NICE - boost);
    try {
      setPriority(nice);
      this.#log.info('running above the tasks', { nice, taskNice: TASK_NICE });
    } catch (e) {
      this.#log.warn('cannot run above the tasks (needs CAP_SYS_NICE); busy tasks may delay kills and updates', { nice, taskNice: TASK_NICE, error: e as Error });
    }
  }

  /** Graceful stop: API and session close, tasks keep running for the next agent to adopt. */
  async close(): Promise<void> {
    if (this.#lifecycle === 'stopped') return;
    this.#lifecycle = 'stopping';
    this.#loggingLevel.revert?.cancel();
    this.#session.close();
    this.#disk.close();
    this.#supervisor.close();
    this.#launchServer.close();
    // The checkpoint's last commit first: the kills it makes durable send their signals, which
    // the signaller then carries out before it reads the end of its stdin.
    this.#checkpoint.close();
    this.#signaller.close();
    this.#streams.pause();
    await this.#api.close();
    this.#lifecycle = 'stopped';
  }

  /** Stops every task (kill policy and all), lets the terminal updates go out, then closes. */
  async shutdown(): Promise<void> {
    if (this.#lifecycle === 'stopping' || this.#lifecycle === 'stopped') return;
    this.#lifecycle = 'stopping';
    this.#log.info('shutting down: killing all tasks', { tasks: this.#supervisor.live });
    await this.#supervisor.killAll(this.#maxGraceMs() + SHUTDOWN_SLACK_MS);
    // Give the master a moment to acknowledge the terminal updates; they are checkpointed anyway.
    const deadline = this.#clock.now() + 2_000;
    while (this.#session.state === 'registered' && this.#supervisor.unacknowledged > 0 && this.#clock.now() < deadline) {
      await new Promise<void>((r) => this.#clock.setTimer(50, r));
    }
    await this.close();
  }

  #maxGraceMs(): number {
    let max = 3_000;
    for (const { task: t } of this.#supervisor.taskLists().launched_tasks) {
      // Capped as the kill's own timer is (agent/kill-policy.ts): the shutdown's wait is a timer too.
      if (t.kill_policy?.grace_period?.nanoseconds !== undefined) max = Math.max(max, gracePeriodMs(t.kill_policy, undefined));
    }
    return max;
  }

  async #masterShutdown(message: string, wasRegistered: boolean): Promise<void> {
    const down = message === MACHINE_DOWN_MESSAGE || message === MACHINE_DOWN_REMOVAL;
    if (down && this.config.downRetryIntervalMs > 0 && this.#lifecycle === 'running') {
      await this.#waitWhileDown(message, wasRegistered);
      return;
    }
    this.#log.warn('shutdown by master', { message, registered: wasRegistered });
    if (!wasRegistered) process.stderr.write(`drydock-agent: the master refused this agent: ${message}\n`);
    try {
      await this.shutdown();
    } finally {
      this.#onShutdown?.();
    }
  }

  /**
   * The machine is DOWN: the master removed this agent (or refused its registration). The tasks
   * are killed as on any shutdown (a DOWN machine runs nothing), but the agent stays: it registers
   * again every --down_retry_interval, and is taken back once an operator or a maintenance plan
   * brings the machine UP. So a machine that is not rebooted, or whose agent started before the
   * plan said UP, comes back without anyone restarting the agent by hand.
   */
  async #waitWhileDown(message: string, wasRegistered: boolean): Promise<void> {
    const first = this.#downSinceMs === undefined;
    this.#downSinceMs ??= this.#clock.now();
    if (first) {
      this.#log.warn('machine is DOWN: killing tasks, registering again until it is UP', { message, registered: wasRegistered, tasks: this.#supervisor.live, retryMs: this.config.downRetryIntervalMs });
    } else {
      this.#log.debug('machine still DOWN', { downForMs: this.#clock.now() - this.#downSinceMs });
    }
    if (this.#supervisor.live > 0) await this.#supervisor.killAll(this.#maxGraceMs() + SHUTDOWN_SLACK_MS);
    if (this.#lifecycle === 'running') this.#session.resume(this.config.downRetryIntervalMs);
  }

  #sendUpdate(frameworkId: string, status: TaskStatus): boolean {
    return this.#session.send({ type: 'STATUS_UPDATE', framework_id: frameworkId, status });
  }

  // ---- Disk pressure ------------------------------------------------------------------------

  /** The agent's conditions as the master hears them. */
  #conditions(): AgentConditions {
    const p = this.#disk.pressure;
    return p === undefined ? {} : { disk_pressure: p };
  }

  /** Tells a registered master that takes CONDITIONS of a change it has not heard. */
  #sendConditions(): void {
    if (this.#session.state !== 'registered' || !this.#session.masterTakes('CONDITIONS')) return;
    const conditions = this.#conditions();
    const text = JSON.stringify(conditions);
    if (text === this.#conditionsSent) return;
    if (this.#session.send({ type: 'CONDITIONS', conditions })) this.#conditionsSent = text;
  }

  #diskPressureChanged(pressure: DiskPressure | undefined, previous: DiskPressure | undefined): void {
    if (pressure !== undefined) {
      const fields = { reason: pressure.reason, message: pressure.message, path: pressure.path, freeBytes: pressure.free_bytes, totalBytes: pressure.total_bytes, freeInodes: pressure.free_inodes, totalInodes: pressure.total_inodes };
      if (previous === undefined) this.#log.warn('disk pressure: launches are refused and the master stops offering this agent until it clears', fields);
      else this.#log.warn('disk pressure changed', { ...fields, was: previous.reason });
    } else if (previous !== undefined) {
      this.#log.info('disk pressure cleared: launches are accepted and the master offers this agent again', { reason: previous.reason, lastedMs: this.#clock.now() - previous.since_ms });
    }
    this.#sendConditions();
  }

  /**
   * A checkpoint commit failed: logged when the failures begin (later ones at debug level), its
   * cause made disk pressure (any failed checkpoint write is), and launches waiting for their
   * first commit refused. The journal tries again with backoff.
   */
  #checkpointFailed(e: NodeJS.ErrnoException, failures: number): void {
    const dir = this.#checkpoint.metaDir;
    if (failures === 1) {
      this.#checkpointFailingSinceMs = this.#clock.now();
      this.#log.error('checkpoint write failed: retrying with backoff; updates, kills and launches that wait for it wait on', { dir, error: e });
    } else {
      this.#log.debug('checkpoint write failed again', { dir, failures, code: e.code });
    }
    this.#disk.writeFailed(dir, e, true);
    this.#supervisor.commitFailed(describeWriteFailure({ path: dir, code: e.code, message: e.message }));
  }

  #checkpointRecovered(failures: number): void {
    const since = this.#checkpointFailingSinceMs;
    this.#checkpointFailingSinceMs = undefined;
    this.#log.info('checkpoint writes work again', { dir: this.#checkpoint.metaDir, failures, failedForMs: since === undefined ? undefined : this.#clock.now() - since });
    this.#disk.recheck();
  }

  #onMessage(msg: TaskMessage): void {
    switch (msg.type) {
      case 'RUN_TASK':
        if (this.#lifecycle !== 'running') {
          this.#log.warn('ignoring RUN_TASK while stopping', { taskId: msg.task.task_id.value });
          return;
        }
        this.#supervisor.launch(msg.framework_id, msg.framework, msg.task);
        return;
      case 'KILL_TASK':
        this.#supervisor.kill(msg.framework_id, msg.task_id, msg.kill_policy);
        return;
      case 'ACKNOWLEDGE':
        this.#supervisor.acknowledge(msg.framework_id, msg.task_id, msg.uuid);
        this.#leaveDrainIfDone();
        return;
      case 'DRAIN':
        this.#startDrain(msg.config);
        return;
    }
  }

  /**
   * Mesos `Slave::drain`: with nothing to drain it is a no-op (already drained); otherwise the
   * config is checkpointed first, then every task is killed with the override. A second DRAIN
   * replaces the config and may shorten kills in progress.
   */
  #startDrain(config: DrainConfigWire): void {
    if (this.#supervisor.known === 0) {
      this.#log.info('drain: nothing to drain', { maxGracePeriodNs: config.max_grace_period?.nanoseconds, markGone: config.mark_gone });
      if (this.#drain !== undefined) this.#leaveDrainIfDone();
      return;
    }
    const record = { config, received_ms: this.#clock.now() };
    this.#checkpoint.writeDrain(record);
    this.#drain = { format: 1, ...record };
    this.#log.info('draining', { maxGracePeriodNs: config.max_grace_period?.nanoseconds, markGone: config.mark_gone, tasks: this.#supervisor.known });
    this.#supervisor.drain(config);
  }

  /** The agent leaves draining by itself once it has no tasks and no unacknowledged updates. */
  #leaveDrainIfDone(): void {
    if (this.#drain === undefined || this.#supervisor.known > 0) return;
    this.#checkpoint.removeDrain();
    this.#drain = undefined;
    this.#log.info('drain finished');
  }

  /**
   * What the agent's HTTP edge reads and may do (agent/calls.ts): its facts, its tasks as
   * executors, their usage and sandboxes, the metrics, and the logging level. The ACLs and view
   * rules are the table's; nothing here decides who may see what.
   */
  #port_(): AgentPort {
    const config = this.config;
    const files = new SandboxFiles({ now: () => this.#clock.now() });
    const build = buildFacts(BUILT_MS);
    return {
      config,
      self: (): AgentSelf => ({
        agentId: this.#agentId,
        hostname: config.hostname,
        ip: config.ip,
        port: this.#port,
        resources: config.resources,
        attributes: config.attributes,
        capabilities: AGENT_CAPABILITIES,
        startSecs: this.#processStartMs / 1000,
        drain: this.#drain === undefined ? undefined : { config: this.#drain.config, receivedMs: this.#drain.received_ms },
        masterHost: this.#session.state === 'registered' ? hostOf(this.#session.master) : undefined,
        flags: config.flags,
        build,
      }),
      taskLists: () => this.#supervisor.taskLists(),
      executors: () => this.#supervisor.executors(),
      running: () => this.#supervisor.running(),
      usage: (pids) => groupUsage(pids, this.#clock.now()),
      metrics: this.#metrics,
      loggingLevel: () => this.#loggingLevel.level,
      setLoggingLevel: (level, durationNs, principal) => this.#setLoggingLevel(level, durationNs, principal),
      files,
    };
  }

  /**
   * SET_LOGGING_LEVEL, after Mesos' agent: `level` is glog's verbosity, which Drydock maps onto
   * its levels: 0 is --log_level, 1 and up write debug lines. It holds for `duration`, then the
   * agent goes back to --log_level; a later call replaces an earlier one. Decoded and authorized
   * by the table (agent/calls.ts) before it gets here.
   */
  #setLoggingLevel(level: number, durationNs: number, principal: string | undefined): void {
    this.#loggingLevel.revert?.cancel();
    const revert = (): void => {
      this.#loggingLevel = { level: 0, revert: undefined };
      this.#log.setLevel(this.config.logLevel);
    };
    this.#log.setLevel(level > 0 ? 'debug' : this.config.logLevel);
    this.#loggingLevel = { level, revert: level > 0 ? this.#clock.setTimer(Math.ceil(durationNs / 1e6), revert) : undefined };
    this.#log.info('logging level set', { level, logLevel: this.#log.level, durationMs: Math.ceil(durationNs / 1e6), principal: principal ?? null });
  }
}

/** The host of a `host:port` (a bracketed IPv6 host without its brackets). */
function hostOf(address: string): string {
  const colon = address.lastIndexOf(':');
  const host = colon === -1 ? address : address.slice(0, colon);
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

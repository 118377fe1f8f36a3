/**
 * The agent's session with the master: one WebSocket, REGISTER / REGISTERED, liveness by the
 * master's pings, and reconnection with randomised exponential backoff. The session decides
 * nothing about tasks; it hands decoded messages to its owner.
 *
 * Lifecycle: idle → waiting (backoff) → connecting → registering → registered, back to waiting
 * when the socket drops, and closed after close() or a SHUTDOWN from the master. After a SHUTDOWN
 * because the machine is DOWN, the owner may resume(): waiting again, to register once it is UP.
 *
 * A garbled frame drops the session (PROTOCOL_ERROR); a message that parses but does not
 * validate is refused and the session stays (shared/protocol.ts says why, #refuse what follows).
 */

import { createRequire } from 'node:module';
import type { RawData, WebSocket } from 'ws';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import { AGENT_SESSION_PATH, CLOSE_CODES, closeReason, MAX_FRAME_BYTES, assertNever, decodeMasterMessage, encode, type AgentMessage, type MasterMessage, type Refusal } from '../shared/protocol.js';
import { registrationDelayMs } from './backoff.js';
import type { ClientTransport } from '../io/transport.js';

/**
 * ws, loaded with require() rather than imported: imported from ES modules, each of its
 * CommonJS files is first scanned for its exports by Node's cjs-module-lexer, which runs hot
 * enough to be optimized, and the agent stayed about 4 MB larger (footprint benchmark: idle RSS
 * 58.4 MB against 61.5-64.1 MB).
 */
const { WebSocket: WebSocketClient } = createRequire(import.meta.url)('ws') as typeof import('ws');

export type SessionState = 'idle' | 'waiting' | 'connecting' | 'registering' | 'registered' | 'closed';

type RegisterMessage = Extract<AgentMessage, { type: 'REGISTER' }>;

/** Messages about tasks, delivered only while registered. */
export type TaskMessage = Extract<MasterMessage, { type: 'RUN_TASK' | 'KILL_TASK' | 'ACKNOWLEDGE' | 'DRAIN' }>;

/** What the session needs from its owner. */
export interface SessionOwner {
  /** The REGISTER to send now (the session adds type and request_id). */
  registration(): Omit<RegisterMessage, 'type' | 'request_id'>;
  /** The master accepted us (the session can already send). Must persist the id before returning: `registered` is logged after. */
  registered(agentId: string): void;
  /** A task message from the master. */
  message(msg: TaskMessage): void;
  /** The master told us to go away. The session is already closed and will not reconnect. */
  shutdown(message: string, wasRegistered: boolean): void;
  /** The registered session dropped; a new one is being set up. */
  disconnected(): void;
  /** A master message was refused (it did not decode); the session goes on. For the counters. */
  refused?(refusal: Refusal): void;
}

/** How many refused messages' digests are remembered, so that each is logged once however often it comes back. */
const REFUSALS_REMEMBERED = 256;

export interface SessionOptions {
  /** --master as given (host:port, a list, etcd://), for the logs. */
  master: string;
  /** Finds the leading master's host:port at each connect (agent/detector.ts); undefined: none known yet. */
  detect?: () => Promise<string | undefined>;
  backoffFactorMs: number;
  registrationTimeoutMs: number;
  clock: Clock;
  log: Logger;
  owner: SessionOwner;
  random?: () => number;
  /** How the socket reaches the master: with TLS (--tls_ca_file) wss:// and its CA and client certificate, and the transport's headers. Default: plain ws://. */
  transport?: ClientTransport;
}

export class Session {
  readonly #o: SessionOptions;
  readonly #random: () => number;
  #state: SessionState = 'idle';
  /** close() or terminate() was called: never connect again (resume() included). */
  #stopped = false;
  #ws: WebSocket | undefined;
  #attempt = 0;
  #requestId = 0;
  #timer: TimerHandle | undefined;
  #watchdog: TimerHandle | undefined;
  /** With several masters: when pings pause for 1.5 intervals, look for a new leader. */
  #suspect: TimerHandle | undefined;
  #livenessMs = 0;
  #pingIntervalMs = 0;
  /** Did the REGISTER in flight carry a checkpointed id (a re-registration, in Mesos' terms)? */
  #reregistering = false;
  /** The master of the current connection, host:port. */
  #address: string;
  /**
   * The highest leadership epoch any master has shown this agent: a master with a lower one
   * was deposed and does not know it yet; its commands are refused (reference/etcd.md §2.2
   * rule 5).
   */
  #highestEpoch = 0n;
  /** The agent messages beyond REGISTER and STATUS_UPDATE the master of this session understands (REGISTERED's capabilities). */
  #masterCapabilities: readonly string[] = [];
  /** Digests of the refused messages already logged at error level, oldest first (bounded). */
  readonly #refusalsLogged = new Set<string>();

  constructor(options: SessionOptions) {
    this.#o = options;
    this.#random = options.random ?? Math.random;
    this.#address = options.master;
  }

  get state(): SessionState {
    return this.#state;
  }

  /** The master this session talks to (or last tried), `host:port`: the leader once detection found it. */
  get master(): string {
    return this.#address;
  }

  get url(): string {
    return `${this.#o.transport?.tls === true ? 'wss' : 'ws'}://${this.#address}${AGENT_SESSION_PATH}`;
  }

  /** Starts connecting (after the first backoff delay, as Mesos does). */
  start(): void {
    if (this.#state !== 'idle') return;
    this.#scheduleConnect();
  }

  /** Does the master of this session understand this agent message (REFUSED, CONDITIONS)? A master that predates it closes a session on it. */
  masterTakes(type: string): boolean {
    return this.#masterCapabilities.includes(type);
  }

  /** Sends a message if registered; false otherwise (the caller keeps it and retries later). */
  send(msg: AgentMessage): boolean {
    const ws = this.#ws;
    if (this.#state !== 'registered' || ws === undefined || ws.readyState !== WebSocketClient.OPEN) return false;
    ws.send(encode(msg));
    return true;
  }

  /**
   * After a SHUTDOWN the master will take back (the machine is DOWN): connect and register again
   * after `delayMs`, with a fresh backoff. A no-op unless the session was closed by a SHUTDOWN.
   */
  resume(delayMs: number): void {
    if (this.#state !== 'closed' || this.#stopped) return;
    this.#state = 'waiting';
    this.#attempt = 0;
    this.#timer = this.#o.clock.setTimer(delayMs, () => this.#connect());
  }

  /** Graceful stop: closes the socket with GOING_AWAY and never reconnects. */
  close(): void {
    this.#stopped = true;
    if (this.#state === 'closed') {
      this.#clearTimers();
      return;
    }
    this.#state = 'closed';
    this.#clearTimers();
    const ws = this.#ws;
    this.#ws = undefined;
    if (ws !== undefined) this.#retire(ws, CLOSE_CODES.GOING_AWAY, 'agent stopping');
  }

  /** Forced stop: drops the socket without a close handshake. */
  terminate(): void {
    this.#stopped = true;
    this.#state = 'closed';
    this.#clearTimers();
    this.#ws?.terminate();
    this.#ws = undefined;
  }

  #clearTimers(): void {
    this.#timer?.cancel();
    this.#timer = undefined;
    this.#watchdog?.cancel();
    this.#watchdog = undefined;
    this.#suspect?.cancel();
    this.#suspect = undefined;
  }

  #scheduleConnect(): void {
    this.#state = 'waiting';
    const delay = registrationDelayMs(this.#attempt, this.#o.backoffFactorMs, this.#random);
    this.#attempt++;
    this.#o.log.debug('connecting after backoff', { delayMs: delay, attempt: this.#attempt });
    this.#timer = this.#o.clock.setTimer(delay, () => this.#connect());
  }

  #connect(): void {
    if (this.#state !== 'waiting') return;
    this.#state = 'connecting';
    if (this.#o.detect === undefined) return this.#open();
    void this.#o.detect().then(
      (address) => {
        if (this.#state !== 'connecting') return;
        if (address === undefined) return this.#scheduleConnect();
        if (address !== this.#address) this.#o.log.info('leading master', { master: address, via: this.#o.master });
        this.#address = address;
        this.#open();
      },
      () => {
        if (this.#state === 'connecting') this.#scheduleConnect();
      },
    );
  }

  #open(): void {
    const ws = new WebSocketClient(this.url, { ...(this.#o.transport?.ws ?? {}), maxPayload: MAX_FRAME_BYTES, handshakeTimeout: this.#o.registrationTimeoutMs });
    this.#ws = ws;
    ws.on('open', () => {
      if (this.#ws !== ws) return;
      this.#state = 'registering';
      const requestId = ++this.#requestId;
      const body = this.#o.owner.registration();
      this.#reregistering = body.agent_id !== undefined;
      ws.send(encode({ type: 'REGISTER', request_id: requestId, ...body }));
      this.#o.log.info('registering', { master: this.#address, requestId, agentId: body.agent_id, tasks: body.tasks.length });
      this.#timer = this.#o.clock.setTimer(this.#o.registrationTimeoutMs, () => {
        if (this.#ws === ws && this.#state === 'registering') this.#drop(ws, 'no REGISTERED in time', 1000);
      });
    });
    ws.on('message', (data: RawData, isBinary: boolean) => {
      if (this.#ws !== ws) return;
      this.#armWatchdog();
      const d = decodeMasterMessage(data, isBinary);
      if (!d.ok) {
        if (d.refusal !== undefined) return this.#refuse(ws, d.refusal);
        // Garbled: whatever sent it does not speak the protocol.
        this.#o.log.error('invalid master message', { error: d.error });
        this.#drop(ws, d.error, CLOSE_CODES.PROTOCOL_ERROR);
        return;
      }
      try {
        this.#dispatch(ws, d.message);
      } catch (e) {
        // A handler bug must not take the daemon down; the master will resend what matters.
        this.#o.log.error('master message handling failed', { type: d.message.type, error: e as Error });
      }
    });
    ws.on('ping', () => {
      if (this.#ws === ws) this.#armWatchdog();
    });
    ws.on('error', (e) => {
      if (this.#ws !== ws) return;
      // A 401 on the upgrade: said plainly, then retried with backoff like any failed connect
      // (the operator may fix the credential or the master's --credentials meanwhile).
      const refused = credentialRefusal(e.message, this.#o.transport?.headers['authorization'] !== undefined);
      if (refused !== undefined) this.#o.log.error('master refused our credentials (401)', { master: this.#address, status: 401, hint: refused });
      else this.#o.log.warn('master connection error', { master: this.#address, error: e.message, ...transportHint(e.message, this.#o.transport?.tls === true) });
    });
    ws.on('close', (code, reason) => {
      if (this.#ws !== ws) return;
      if (code === CLOSE_CODES.NOT_ALLOWED) {
        this.#o.log.error('master refused this agent', { master: this.#address, code, reason: reason.toString(), hint: 'the agent id is bound to another principal, or the register_agents ACL refuses this principal: check --credential and the master\'s --acls' });
      } else {
        this.#o.log.warn('master connection closed', { code, reason: reason.toString() });
      }
      this.#drop(ws, undefined, undefined);
    });
  }

  #dispatch(ws: WebSocket, msg: MasterMessage): void {
    // A deposed master that has not noticed yet cannot command this agent.
    if (msg.epoch !== undefined) {
      const epoch = BigInt(msg.epoch);
      if (epoch < this.#highestEpoch) {
        this.#o.log.warn('message from a deposed master refused', { type: msg.type, epoch: msg.epoch, highestEpoch: this.#highestEpoch });
        if (msg.type === 'REGISTERED') this.#drop(ws, 'deposed master', 1000);
        return;
      }
      if (msg.type === 'REGISTERED') this.#highestEpoch = epoch;
    }
    switch (msg.type) {
      case 'REGISTERED': {
        if (this.#state !== 'registering' || msg.request_id !== this.#requestId) {
          this.#o.log.warn('ignoring stale REGISTERED', { requestId: msg.request_id, expected: this.#requestId });
          return;
        }
        this.#timer?.cancel();
        this.#timer = undefined;
        this.#state = 'registered';
        this.#attempt = 0;
        this.#livenessMs = msg.ping_interval_ms * msg.max_ping_timeouts;
        this.#pingIntervalMs = msg.ping_interval_ms;
        this.#masterCapabilities = msg.capabilities ?? [];
        // The owner persists the id before `registered` is logged: a crash right after the log
        // line must still come back with this id. A failed write drops the session.
        try {
          this.#o.owner.registered(msg.agent_id);
        } catch (e) {
          this.#o.log.error('cannot checkpoint the agent id', { error: e as Error });
          this.#drop(ws, 'checkpoint failed', 1011);
          return;
        }
        this.#armWatchdog();
        this.#o.log.info('registered', { agentId: msg.agent_id, masterId: msg.master_id, reregistered: this.#reregistering });
        return;
      }
      case 'SHUTDOWN': {
        const wasRegistered = this.#state === 'registered';
        this.#state = 'closed';
        this.#clearTimers();
        this.#ws = undefined;
        this.#retire(ws, 1000, 'shutdown');
        this.#o.owner.shutdown(msg.message, wasRegistered);
        return;
      }
      case 'RUN_TASK':
      case 'KILL_TASK':
      case 'ACKNOWLEDGE':
      case 'DRAIN':
        if (this.#state !== 'registered') {
          this.#o.log.warn('ignoring task message before registration', { type: msg.type });
          return;
        }
        this.#o.owner.message(msg);
        return;
      default:
        assertNever(msg);
    }
  }

  /**
   * A master message that parsed but cannot be acted on (a known type whose body does not
   * validate, or a type this agent does not know): nothing is done with it and the session
   * stays, since dropping it would only bring the same message back at the next registration.
   * Logged at error once per message (a master re-sending it is not news), counted every time,
   * and named to the master (REFUSED) so that it can report it and stop re-sending it; a master
   * that does not list REFUSED would close the session on it, so it is not told.
   */
  #refuse(ws: WebSocket, refusal: Refusal): void {
    this.#o.owner.refused?.(refusal);
    const first = !this.#refusalsLogged.has(refusal.digest);
    if (first) {
      if (this.#refusalsLogged.size >= REFUSALS_REMEMBERED) this.#refusalsLogged.delete(this.#refusalsLogged.values().next().value as string);
      this.#refusalsLogged.add(refusal.digest);
    }
    const told = this.#state === 'registered' && this.masterTakes('REFUSED');
    const fields = { type: refusal.type, id: refusal.id, digest: refusal.digest, reason: refusal.reason, master: this.#address, toldMaster: told };
    if (first) this.#o.log.error('master message refused', fields);
    else this.#o.log.debug('master message refused again', fields);
    if (told && ws.readyState === WebSocketClient.OPEN) ws.send(encode({ type: 'REFUSED', refused: refusal }));
  }

  #armWatchdog(): void {
    if (this.#livenessMs <= 0 || this.#state !== 'registered') return;
    this.#watchdog?.cancel();
    this.#suspect?.cancel();
    const detect = this.#o.detect;
    if (detect !== undefined) {
      // A paused or partitioned master keeps its socket open: once its pings stop, ask who leads
      // now, and move to a new leader without waiting out every missed ping.
      const suspected = this.#ws;
      this.#suspect = this.#o.clock.setTimer(this.#pingIntervalMs * 1.5, () => {
        void detect().then((address) => {
          if (address === undefined || address === this.#address || suspected === undefined || this.#ws !== suspected) return;
          this.#o.log.warn('another master leads now, reconnecting', { from: this.#address, to: address });
          this.#drop(suspected, 'another master leads', 1000);
        });
      });
    }
    const ws = this.#ws;
    this.#watchdog = this.#o.clock.setTimer(this.#livenessMs, () => {
      if (ws !== undefined && this.#ws === ws) {
        this.#o.log.warn('master silent, reconnecting', { silentMs: this.#livenessMs });
        this.#drop(ws, 'ping timeout', 1000);
      }
    });
  }

  /** Leaves this socket (closing it with `code` if given) and schedules the next attempt. */
  #drop(ws: WebSocket, reason: string | undefined, code: number | undefined): void {
    if (this.#ws !== ws) return;
    const wasRegistered = this.#state === 'registered';
    this.#ws = undefined;
    this.#clearTimers();
    if (code !== undefined) this.#retire(ws, code, reason ?? '');
    if (this.#state === 'closed') return;
    if (wasRegistered) this.#o.owner.disconnected();
    this.#scheduleConnect();
  }

  /** Closes a socket we no longer use; a peer that never answers the close gets terminated. */
  #retire(ws: WebSocket, code: number, reason: string): void {
    try {
      if (ws.readyState === WebSocketClient.CONNECTING) ws.terminate();
      else ws.close(code, closeReason(reason));
    } catch {
      ws.terminate();
    }
    this.#o.clock.setTimer(2000, () => ws.terminate());
  }
}

/**
 * What to tell the operator when the master answered the upgrade 401 (ws reports it as
 * `Unexpected server response: 401`), or undefined for any other error. Pure.
 */
export function credentialRefusal(error: string, presented: boolean): string | undefined {
  if (!/Unexpected server response: 401\b/.test(error)) return undefined;
  return presented
    ? 'the master does not accept this credential: check that --credential names a principal and secret in the master\'s --credentials'
    : 'the master requires agents to authenticate (--authenticate_agents): start the agent with --credential=FILE';
}

/**
 * A hint for the two transport mismatches whose errors do not say what is wrong: a TLS master
 * answers plain ws:// with a 400, and a plain master does not speak TLS. Pure.
 */
export function transportHint(error: string, tls: boolean): { hint: string } | Record<string, never> {
  if (!tls && /Unexpected server response: 400/.test(error)) return { hint: 'the master may serve TLS: give --tls_ca_file to connect with wss://' };
  if (tls && /wrong version number|packet length too long|ECONNRESET/i.test(error)) return { hint: 'the master may not serve TLS: drop --tls_ca_file, or give the master --tls_cert_file and --tls_key_file' };
  return {};
}

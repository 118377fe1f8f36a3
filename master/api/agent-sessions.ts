/**
 * The agent session shell: a `ws` server on the HTTP server's upgrade at AGENT_SESSION_PATH.
 * Each socket becomes an AgentConnection; frames are decoded by shared/protocol.ts and handed
 * to the master one at a time per session. A frame that does not decode closes that session
 * with PROTOCOL_ERROR and the reason; the master and other sessions go on.
 */

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { createRequire } from 'node:module';
import type { RawData, WebSocket, WebSocketServer } from 'ws';
import type { Logger } from '../../shared/log.js';
import { AGENT_SESSION_PATH, CLOSE_CODES, closeReason, decodeAgentMessage, encode, MAX_FRAME_BYTES, type MasterMessage } from '../../shared/protocol.js';
import type { AgentConnection, AgentSessionEvents } from '../term/ports.js';

/** ws, loaded with require() rather than imported (see agent/session.ts: Node's CommonJS export scan of its files). */
const wsLib = createRequire(import.meta.url)('ws') as typeof import('ws');

/** Session ids are unique per process, across terms (a late close of an old term's session must not match a new one). */
let seq = 0;

export class AgentSessions {
  readonly #registration: AgentSessionEvents;
  readonly #serving: () => boolean;
  /** The term's epoch, stamped on every message: agents refuse a master deposed since. */
  readonly #epoch: Epoch;
  readonly #log: Logger;
  readonly #wss: WebSocketServer;

  /** `serving` is false once the term has ended: upgrades are refused from then on. */
  constructor(registration: AgentSessionEvents, serving: () => boolean, epoch: bigint, logger: Logger) {
    this.#registration = registration;
    this.#serving = serving;
    this.#epoch = { value: epoch.toString(), field: `,"epoch":"${epoch.toString()}"}` };
    this.#log = logger;
    // noServer: the HTTP server routes upgrades; clientTracking off: the master tracks sessions.
    this.#wss = new wsLib.WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, clientTracking: false, perMessageDeflate: false });
  }

  /** Is this an upgrade for us? (process/router.ts answers 404 to the others.) */
  static handles(pathname: string): boolean {
    return pathname === AGENT_SESSION_PATH;
  }

  /**
   * Completes the WebSocket handshake and attaches the session. `principal`: who the upgrade
   * authenticated as (undefined: anonymous), bound to the session.
   */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, principal?: string): void {
    if (!this.#serving()) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#attach(ws, socket, principal));
  }

  /** `socket`: the upgraded connection the WebSocket writes to (corked to batch sends, see Session). */
  #attach(ws: WebSocket, socket: Duplex, principal: string | undefined): void {
    const conn = new Session(++seq, ws, socket, principal, this.#epoch);
    const log = this.#log;
    this.#registration.connected(conn);
    // The peer address costs a syscall: read only when the line is written.
    if (log.level === 'debug') log.debug('agent session opened', { sessionId: conn.id, remote: conn.remote });

    let broken = false;
    /** A bug in handling one frame closes this session (1011) and is logged; the master and other sessions go on. */
    const guarded = (where: string, fn: () => void): void => {
      try {
        fn();
      } catch (e) {
        log.error('internal error', { where, sessionId: conn.id, remote: conn.remote, error: e });
        broken = true;
        conn.close(1011, 'internal error');
      }
    };
    // Messages of one session are handled in order: a STATUS_UPDATE never overtakes its REGISTER.
    let chain: Promise<void> = Promise.resolve();
    ws.on('message', (data: RawData, isBinary: boolean) =>
      guarded('agent frame', () => {
        if (broken) return;
        const decoded = decodeAgentMessage(data, isBinary);
        if (!decoded.ok) {
          broken = true;
          log.warn('agent session protocol error', { sessionId: conn.id, remote: conn.remote, error: decoded.error });
          ws.close(CLOSE_CODES.PROTOCOL_ERROR, closeReason(decoded.error));
          return;
        }
        const msg = decoded.message;
        chain = chain
          .then(() => this.#registration.handle(conn, msg))
          .catch((e: unknown) => {
            log.error('internal error', { where: 'agent message', sessionId: conn.id, type: msg.type, error: e });
            broken = true;
            conn.close(1011, 'internal error');
          });
      }),
    );
    ws.on('pong', () => guarded('agent pong', () => this.#registration.pong(conn)));
    ws.on('close', (code: number) =>
      guarded('agent session close', () => {
        if (log.level === 'debug') log.debug('agent session closed', { sessionId: conn.id, code });
        this.#registration.disconnected(conn);
      }),
    );
    // ws closes the socket itself after an error (e.g. 1009 for a frame over maxPayload).
    ws.on('error', (e: Error) => log.warn('agent session error', { sessionId: conn.id, remote: conn.remote, error: e }));
  }

  /** Stops accepting sessions (registration closes the open ones when the term is disposed of). */
  close(): void {
    this.#wss.close();
  }
}

/** The term's epoch (decimal), and the JSON that ends a message stamped with it: `,"epoch":"7"}`. */
interface Epoch {
  readonly value: string;
  readonly field: string;
}

/**
 * Sockets corked in this turn of the event loop, uncorked together once the loop has handled
 * the turn's input (one setImmediate for all of them, not one per socket: a commit that
 * answers 200 registrations at once corks 200 sockets).
 */
const corked: Session[] = [];

function uncorkAll(): void {
  // Taken whole first: an uncork may write synchronously, and nothing it does may add to this turn's list.
  const all = corked.splice(0);
  for (const s of all) s.uncork();
}

/**
 * One agent session over ws: the AgentConnection the agents service (registration) holds. A class, not
 * an object of closures: 10,000 sessions keep 10,000 small objects, not 60,000 closures.
 */
export class Session implements AgentConnection {
  readonly id: number;
  readonly principal: string | undefined;
  readonly #ws: WebSocket;
  readonly #socket: Duplex;
  readonly #epoch: Epoch;
  #remote: string | undefined;
  #corked = false;

  constructor(id: number, ws: WebSocket, socket: Duplex, principal: string | undefined, epoch: Epoch) {
    this.id = id;
    this.principal = principal;
    this.#ws = ws;
    this.#socket = socket;
    this.#epoch = epoch;
  }

  /**
   * The peer address, read from the socket the first time it is asked for (a getpeername(2)
   * per session otherwise, most never needed: it matters when another session claims this
   * one's agent id, and in log lines). A socket already gone reads as '' (Node keeps no
   * address once its handle is closed); the takeover decision then probes the session, which
   * cannot answer, and the id is free, as it should be.
   */
  get remote(): string {
    if (this.#remote === undefined) {
      const address = (this.#socket as Duplex & { remoteAddress?: string }).remoteAddress;
      if (address === undefined) return '';
      this.#remote = address;
    }
    return this.#remote;
  }

  /**
   * Messages sent to one agent in one turn of the event loop (an ACCEPT's RUN_TASKs, the
   * acknowledgements of a burst of updates) leave in one write: the socket is corked at the
   * first and uncorked once the loop has handled this turn's input (setImmediate). ws writes
   * each frame as its own syscall otherwise; its own cork per frame nests inside this one.
   * Order is kept, ws's close frame and end() flush what is corked, nothing waits past the turn.
   * An urgent message leaves at once, with whatever this turn corked before it: the turn's
   * remaining work (a drain's operator event renders every task of the agent) can take
   * milliseconds. Measured on a drain of 100 tasks: the DRAIN left 4 ms after its commit, behind
   * the event stream and the HTTP answer.
   */
  send(msg: MasterMessage, urgent = false): void {
    if (this.#ws.readyState !== wsLib.WebSocket.OPEN) return;
    if (!this.#corked) {
      this.#corked = true;
      this.#socket.cork();
      if (corked.length === 0) setImmediate(uncorkAll);
      corked.push(this);
    }
    // The epoch is stamped by appending its field to the encoded message (no copy of the
    // message to add one key); a message that already carries one is stamped by a copy.
    this.#ws.send(msg.epoch === undefined ? encode(msg).slice(0, -1) + this.#epoch.field : encode({ ...msg, epoch: this.#epoch.value }));
    // Still listed in `corked`: uncorkAll's later uncork of an uncorked socket does nothing.
    if (urgent) this.uncork();
  }

  /** Ends this turn's cork (uncorkAll). */
  uncork(): void {
    this.#corked = false;
    this.#socket.uncork();
  }

  close(code: number, reason: string): void {
    const ws = this.#ws;
    if (ws.readyState === wsLib.WebSocket.OPEN || ws.readyState === wsLib.WebSocket.CONNECTING) ws.close(code, closeReason(reason));
  }

  terminate(): void {
    this.#ws.terminate();
  }

  ping(): void {
    if (this.#ws.readyState === wsLib.WebSocket.OPEN) this.#ws.ping();
  }
}

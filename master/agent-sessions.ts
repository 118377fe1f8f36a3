/**
 * The agent session shell: a `ws` server on the HTTP server's upgrade at AGENT_SESSION_PATH.
 * Each socket becomes an AgentConnection; frames are decoded by shared/protocol.ts and handed
 * to the master one at a time per session. A frame that does not decode closes that session
 * with PROTOCOL_ERROR and the reason; the master and other sessions go on.
 */

import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket, type RawData } from 'ws';
import type { Logger } from '../shared/log.js';
import { AGENT_SESSION_PATH, CLOSE_CODES, closeReason, decodeAgentMessage, encode, MAX_FRAME_BYTES } from '../shared/protocol.js';
import type { AgentConnection } from './ports.js';
import type { Registration } from './registration.js';

/** Session ids are unique per process, across terms (a late close of an old term's session must not match a new one). */
let seq = 0;

export class AgentSessions {
  readonly #registration: Registration;
  readonly #serving: () => boolean;
  /** The term's epoch, stamped on every message: agents refuse a master deposed since. */
  readonly #epoch: string;
  readonly #log: Logger;
  readonly #wss: WebSocketServer;

  /** `serving` is false once the term has ended: upgrades are refused from then on. */
  constructor(registration: Registration, serving: () => boolean, epoch: bigint, logger: Logger) {
    this.#registration = registration;
    this.#serving = serving;
    this.#epoch = epoch.toString();
    this.#log = logger;
    // noServer: the HTTP server routes upgrades; clientTracking off: the master tracks sessions.
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES, clientTracking: false, perMessageDeflate: false });
  }

  /** Is this an upgrade for us? (http.ts answers 404 to the others.) */
  static handles(pathname: string): boolean {
    return pathname === AGENT_SESSION_PATH;
  }

  /** Completes the WebSocket handshake and attaches the session. */
  /** `principal`: who the upgrade authenticated as (undefined: anonymous), bound to the session. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, principal?: string): void {
    if (!this.#serving()) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => this.#attach(ws, socket, req.socket.remoteAddress ?? '', principal));
  }

  /** `socket`: the upgraded connection the WebSocket writes to (corked to batch sends, below). */
  #attach(ws: WebSocket, socket: Duplex, remote: string, principal: string | undefined): void {
    const id = ++seq;
    const log = this.#log;
    // Messages sent to one agent in one turn of the event loop (an ACCEPT's RUN_TASKs, the
    // acknowledgements of a burst of updates) leave in one write: the socket is corked at the
    // first and uncorked once the loop has handled this turn's input (setImmediate). ws writes
    // each frame as its own syscall otherwise; its own cork per frame nests inside this one.
    // Order is kept, ws's close frame and end() flush what is corked, nothing waits past the turn.
    let corked = false;
    const uncork = (): void => {
      corked = false;
      socket.uncork();
    };
    const conn: AgentConnection = {
      id,
      remote,
      principal,
      send: (msg) => {
        if (ws.readyState !== WebSocket.OPEN) return;
        if (!corked) {
          corked = true;
          socket.cork();
          setImmediate(uncork);
        }
        ws.send(encode({ ...msg, epoch: this.#epoch }));
      },
      close(code, reason) {
        if (ws.readyState === WebSocket.OPEN || ws.readyState === WebSocket.CONNECTING) ws.close(code, closeReason(reason));
      },
      terminate() {
        ws.terminate();
      },
      ping() {
        if (ws.readyState === WebSocket.OPEN) ws.ping();
      },
    };
    this.#registration.connected(conn);
    log.debug('agent session opened', { sessionId: id, remote });

    let broken = false;
    /** A bug in handling one frame closes this session (1011) and is logged; the master and other sessions go on. */
    const guarded = (where: string, fn: () => void): void => {
      try {
        fn();
      } catch (e) {
        log.error('internal error', { where, sessionId: id, remote, error: e });
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
          log.warn('agent session protocol error', { sessionId: id, remote, error: decoded.error });
          ws.close(CLOSE_CODES.PROTOCOL_ERROR, closeReason(decoded.error));
          return;
        }
        const msg = decoded.message;
        chain = chain
          .then(() => this.#registration.handle(conn, msg))
          .catch((e: unknown) => {
            log.error('internal error', { where: 'agent message', sessionId: id, type: msg.type, error: e });
            broken = true;
            conn.close(1011, 'internal error');
          });
      }),
    );
    ws.on('pong', () => guarded('agent pong', () => this.#registration.pong(conn)));
    ws.on('close', (code: number) =>
      guarded('agent session close', () => {
        log.debug('agent session closed', { sessionId: id, code });
        this.#registration.disconnected(conn);
      }),
    );
    // ws closes the socket itself after an error (e.g. 1009 for a frame over maxPayload).
    ws.on('error', (e: Error) => log.warn('agent session error', { sessionId: id, remote, error: e }));
  }

  /** Stops accepting sessions (registration closes the open ones when the term is disposed of). */
  close(): void {
    this.#wss.close();
  }
}

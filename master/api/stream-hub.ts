/**
 * The subscribers of one of the master's event streams: what Mesos' operator stream
 * (operator-stream.ts) and Drydock's own (drydock-stream.ts) do alike with their sockets. One
 * `StreamHub` per stream keeps the subscribers (ids, the cap that closes the oldest), takes the
 * bus listener with the first subscriber and the heartbeat timer with it, releases both with the
 * last, writes each record as one chunk and closes a reader that leaves more than
 * `maxBufferedBytes` unsent, and counts the subscribers whose view is filtered, remembering the
 * agents' ACL objects while there are any (an agent that left is decided as it was last seen).
 *
 * What differs stays with each stream: its records and how they are framed (`F`, written in a
 * subscriber's encoding by `bytes`), its gates, its rights (`R`), its snapshot, and what it
 * keeps of a subscriber besides (`X`: the operator stream's codec).
 */

import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';
import type { MachineObject } from '../../shared/acls.js';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import type { Access } from '../security/security.js';
import type { MasterEvent, MasterEvents } from '../term/events.js';
import type { Queries } from '../term/queries.js';

/** Unsent bytes one subscriber may leave in its socket buffer before it is closed (a reader that stopped reading must not grow the master's memory). */
export const DEFAULT_MAX_BUFFERED_BYTES = 16 * 1024 * 1024;

/** Why a subscriber's stream ended, in the stream's `... closed` log line. */
export type StreamCloseReason = 'CLIENT_GONE' | 'TOO_MANY_SUBSCRIBERS' | 'TOO_SLOW' | 'MASTER_STOPPING';

/** One open stream. */
export interface HubSubscriber<R, X> {
  readonly id: number;
  readonly res: ServerResponse;
  /** What it may see; undefined: everything (no ACLs). */
  readonly rights: R | undefined;
  /** What its stream keeps of it besides (the operator stream: its encoding). */
  readonly extra: X;
}

/** Agents as ACL objects: what the hub remembers while some subscriber's view is filtered. */
export interface AgentObjects {
  /** An agent as an ACL object; undefined once the master no longer has it. */
  agent(agentId: string): MachineObject | undefined;
  /** Every agent the master has, as ACL objects. */
  agents(): Iterable<[string, MachineObject]>;
}

/** What each stream is given: the bus, the clock, a logger and the master's stream flags. */
export interface StreamSettings {
  events: MasterEvents;
  clock: Clock;
  logger: Logger;
  /** --heartbeat_interval, in ms. */
  heartbeatIntervalMs: number;
  /** --max_operator_event_stream_subscribers (each stream counts its own). */
  maxSubscribers: number;
  /** Default DEFAULT_MAX_BUFFERED_BYTES. */
  maxBufferedBytes?: number | undefined;
}

/** What a term gives each of its streams: its queries port, and the settings but for the buffer bound (always the default). */
export interface TermStreamsOptions extends Omit<StreamSettings, 'maxBufferedBytes'> {
  queries: Queries;
}

/** How one stream uses its hub: what differs between the streams. */
export interface StreamHubOptions<R, F, X> {
  /** Which stream: its log lines say `<name> opened`, `<name> closed`, `<name> subscriber too slow` (each a constant message). */
  name: 'operator stream' | 'drydock event stream';
  /** Each event of the bus, heard while there are subscribers. */
  onEvent: (event: MasterEvent) => void;
  /** A subscriber's rights from its access; undefined: it sees everything. */
  rights: (access: Access | undefined) => R | undefined;
  /** A framed record in a subscriber's encoding; undefined: that encoding cannot carry it, and it is not sent. */
  bytes: (frame: F, sub: HubSubscriber<R, X>) => Buffer | undefined;
  /** The heartbeat, framed once. */
  heartbeat: F;
  /** The agents' ACL objects; without them (no ACLs), nothing is remembered. */
  objects: AgentObjects | undefined;
  /** What the stream remembers besides agents goes when nobody filters any more. */
  forget?: () => void;
}

/** How one subscriber's stream opens: its headers, what its stream keeps of it, and its first record. */
export interface StreamOpening<R, F, X> {
  headers: OutgoingHttpHeaders;
  extra: X;
  /** The first record, as the subscriber's rights allow (taken once it is counted and the bus is heard). */
  snapshot: (rights: R | undefined) => F;
}

/** The open streams of one event stream of one term. */
export class StreamHub<R, F, X> {
  #state: 'OPEN' | 'CLOSED' = 'OPEN';
  /** Insertion order is age: the first entry is the oldest stream. */
  readonly #subscribers = new Map<number, HubSubscriber<R, X>>();
  readonly #settings: StreamSettings;
  readonly #opts: StreamHubOptions<R, F, X>;
  readonly #maxBufferedBytes: number;
  #nextId = 1;
  #unsubscribe: (() => void) | undefined;
  #heartbeat: TimerHandle | undefined;
  /** Subscribers whose events are filtered; while there are none, no gate is worked out. */
  #filtered = 0;
  /** Agents' ACL objects as last seen, so an agent's leaving (sent once it is gone) is decided like its arrival. */
  readonly #agentObjects = new Map<string, MachineObject>();

  constructor(settings: StreamSettings, opts: StreamHubOptions<R, F, X>) {
    this.#settings = settings;
    this.#opts = opts;
    this.#maxBufferedBytes = settings.maxBufferedBytes ?? DEFAULT_MAX_BUFFERED_BYTES;
  }

  /** Open streams. */
  get count(): number {
    return this.#subscribers.size;
  }

  get state(): 'OPEN' | 'CLOSED' {
    return this.#state;
  }

  /** Whether some subscriber's view is filtered (only then is an event's gate worked out). */
  get filtering(): boolean {
    return this.#filtered > 0;
  }

  /** The open streams, oldest first; a copy, as a write may drop one. */
  subscribers(): Array<HubSubscriber<R, X>> {
    return [...this.#subscribers.values()];
  }

  /** Answers a subscriber: 200 and a body that stays open, its snapshot and a heartbeat first; 503 after close(). */
  subscribe(res: ServerResponse, access: Access | undefined, opening: StreamOpening<R, F, X>): void {
    if (this.#state !== 'OPEN') {
      const text = 'Master is shutting down';
      res.writeHead(503, { 'Content-Type': 'text/plain; charset=utf-8', 'Content-Length': Buffer.byteLength(text) });
      res.end(text);
      return;
    }
    const rights = this.#opts.rights(access);
    const sub: HubSubscriber<R, X> = { id: this.#nextId++, res, rights, extra: opening.extra };
    // No Content-Length: Node frames the body with Transfer-Encoding: chunked, and each
    // res.write() goes out as one chunk of its own: one record per chunk (writes of one turn
    // still leave in one syscall: Node corks the socket until the next tick). Never res.cork():
    // that would merge the writes into one chunk.
    res.writeHead(200, opening.headers);
    res.socket?.setNoDelay(true);
    res.on('close', () => this.#drop(sub, 'CLIENT_GONE'));
    res.on('error', () => this.#drop(sub, 'CLIENT_GONE'));

    this.#subscribers.set(sub.id, sub);
    if (rights !== undefined && this.#filtered++ === 0 && this.#opts.objects !== undefined) {
      // Filtering starts: remember every agent now, so one that leaves is decided as it was.
      for (const [id, o] of this.#opts.objects.agents()) this.#agentObjects.set(id, o);
    }
    if (this.#unsubscribe === undefined) this.#unsubscribe = this.#settings.events.subscribe((e) => this.#opts.onEvent(e));
    if (this.#heartbeat === undefined) this.#scheduleHeartbeat();

    this.write(sub, opening.snapshot(rights));
    this.write(sub, this.#opts.heartbeat);
    this.#settings.logger.info(this.#opts.name === 'operator stream' ? 'operator stream opened' : 'drydock event stream opened', { subscriberId: sub.id, principal: access?.principal ?? null, filtered: rights !== undefined, subscribers: this.#subscribers.size, eventListeners: this.#settings.events.listenerCount });

    // As Mesos: past the cap, the oldest streams make room for the new one.
    for (const oldest of this.#subscribers.values()) {
      if (this.#subscribers.size <= this.#settings.maxSubscribers) break;
      this.#end(oldest, 'TOO_MANY_SUBSCRIBERS');
    }
  }

  /** Graceful stop: ends every stream with the chunked terminator and refuses new ones. */
  close(): void {
    if (this.#state === 'CLOSED') return;
    this.#state = 'CLOSED';
    for (const sub of [...this.#subscribers.values()]) this.#end(sub, 'MASTER_STOPPING');
    this.#release();
  }

  /** One record to every open stream. */
  broadcast(frame: F): void {
    for (const sub of [...this.#subscribers.values()]) this.write(sub, frame);
  }

  /** One record, one res.write(), hence one HTTP chunk; a subscriber that leaves too much unsent is closed. */
  write(sub: HubSubscriber<R, X>, frame: F): void {
    if (!this.#subscribers.has(sub.id) || sub.res.destroyed || sub.res.writableEnded) return;
    const bytes = this.#opts.bytes(frame, sub);
    if (bytes === undefined) return;
    sub.res.write(bytes);
    if (sub.res.writableLength > this.#maxBufferedBytes) {
      // Its unsent data would grow without bound; it can subscribe again for a fresh snapshot.
      this.#settings.logger.warn(this.#opts.name === 'operator stream' ? 'operator stream subscriber too slow' : 'drydock event stream subscriber too slow', { subscriberId: sub.id, bufferedBytes: sub.res.writableLength });
      this.#drop(sub, 'TOO_SLOW');
      sub.res.destroy();
    }
  }

  /** An agent's ACL object: live while the master has it (and remembered), else as last seen. */
  agentObject(agentId: string): MachineObject | undefined {
    const live = this.#opts.objects?.agent(agentId);
    if (live !== undefined) {
      this.#agentObjects.set(agentId, live);
      return live;
    }
    return this.#agentObjects.get(agentId);
  }

  /** Forgets an agent that left, once every subscriber has been decided on. */
  forgetAgent(agentId: string): void {
    this.#agentObjects.delete(agentId);
  }

  #scheduleHeartbeat(): void {
    this.#heartbeat = this.#settings.clock.setTimer(this.#settings.heartbeatIntervalMs, () => {
      this.#heartbeat = undefined;
      if (this.#subscribers.size === 0) return;
      this.broadcast(this.#opts.heartbeat);
      if (this.#subscribers.size > 0) this.#scheduleHeartbeat();
    });
  }

  /** Ends a stream cleanly (the client sees the end of the body, not an error). */
  #end(sub: HubSubscriber<R, X>, reason: StreamCloseReason): void {
    this.#drop(sub, reason);
    if (!sub.res.writableEnded) sub.res.end();
  }

  /** Forgets a subscriber; the last one out releases the bus listener and the timer. */
  #drop(sub: HubSubscriber<R, X>, reason: StreamCloseReason): void {
    if (!this.#subscribers.delete(sub.id)) return;
    if (sub.rights !== undefined) this.#filtered--;
    if (this.#filtered === 0) {
      // Nobody filters now: the remembered objects would go stale unheard.
      this.#agentObjects.clear();
      this.#opts.forget?.();
    }
    if (this.#subscribers.size === 0) this.#release();
    this.#settings.logger.info(this.#opts.name === 'operator stream' ? 'operator stream closed' : 'drydock event stream closed', { subscriberId: sub.id, reason, subscribers: this.#subscribers.size, eventListeners: this.#settings.events.listenerCount });
  }

  #release(): void {
    this.#unsubscribe?.();
    this.#unsubscribe = undefined;
    this.#heartbeat?.cancel();
    this.#heartbeat = undefined;
  }
}

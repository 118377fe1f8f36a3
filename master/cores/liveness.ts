/**
 * The liveness wheel: which agents are connected and due a ping, and which have failed their
 * pings or stayed away too long. A pure core (no sockets, no timers): the agents service
 * (services/agents.ts) visits one slot of the wheel every ping timeout / slots, sends the pings it
 * is told to, and makes the agents it is told are unreachable so, durably. The agent table
 * (agents.ts) keeps its entries on the wheel as they connect, disconnect and leave.
 *
 * A ping unanswered by the next round is a miss; `maxPingTimeouts` misses in a row make the agent
 * unreachable. A disconnected agent gets as long (ping timeout x max timeouts) to come back.
 */

/** The timeouts liveness decides with, in milliseconds. */
export interface LivenessLimits {
  pingTimeoutMs: number;
  maxPingTimeouts: number;
  reregisterTimeoutMs: number;
}

/** Why an agent became unreachable. */
export type UnreachableReason = 'PING_TIMEOUT' | 'DISCONNECTED_TIMEOUT' | 'REREGISTER_TIMEOUT';

/** What one liveness tick decided. */
export interface TickDecision {
  /** Connected agents to ping now. */
  ping: string[];
  /** Agents to mark unreachable now. */
  unreachable: Array<{ agentId: string; reason: UnreachableReason }>;
}

/** What liveness keeps on an agent's entry (cores/agents.ts AgentEntry). */
export interface LiveEntry {
  readonly id: string;
  /** When the session closed (ms), while REGISTERED and disconnected. */
  disconnectedAtMs: number | undefined;
  /** A ping went out and no pong came back yet. */
  awaitingPong: boolean;
  /** Pings in a row without a pong. */
  missedPings: number;
  /** The slot of the liveness wheel it is visited in, while connected. */
  pingSlot: number | undefined;
}

/**
 * A liveness round is spread over slots of at least this long (ms): each connected agent is in
 * one slot, and each slot is visited (its agents pinged) once per round, a slot's length after
 * the previous one. 50,000 pings in one turn of the event loop would block it for seconds.
 */
export const PING_SLOT_MS = 250;
/** At most this many slots per round (a 15 s ping timeout: 60 slots of 250 ms). */
export const MAX_PING_SLOTS = 64;

/** Slots of a liveness round of `pingTimeoutMs` (1 for rounds shorter than two slots). Pure. */
export function pingSlots(pingTimeoutMs: number): number {
  return Math.max(1, Math.min(MAX_PING_SLOTS, Math.floor(pingTimeoutMs / PING_SLOT_MS)));
}

/** The connected and disconnected agents, and the wheel of slots the connected ones are pinged in. */
export class LivenessWheel {
  readonly #limits: LivenessLimits;
  readonly #entry: (agentId: string) => LiveEntry | undefined;
  /** Connected agents (REGISTERED with an open session). */
  readonly #connected = new Set<string>();
  /** REGISTERED agents whose session closed: they have until their deadline to come back. */
  readonly #disconnected = new Set<string>();
  /**
   * Connected agents by slot (pingSlots; an entry's `pingSlot`). An agent joins the slot visited
   * last, so it is first visited a whole round after it connected.
   */
  readonly #wheel: Array<Set<string>>;
  #lastSlot: number;

  /** `entry` finds an agent's entry by id (the table's). */
  constructor(limits: LivenessLimits, entry: (agentId: string) => LiveEntry | undefined) {
    this.#limits = limits;
    this.#entry = entry;
    this.#wheel = Array.from({ length: pingSlots(limits.pingTimeoutMs) }, () => new Set<string>());
    this.#lastSlot = this.#wheel.length - 1;
  }

  /** Slots of the wheel: the shell visits one (tickSlot) every ping timeout / slots. */
  get slots(): number {
    return this.#wheel.length;
  }

  /** How many agents are connected, and how many are registered but disconnected. */
  get sizes(): { connected: number; disconnected: number } {
    return { connected: this.#connected.size, disconnected: this.#disconnected.size };
  }

  /** The agent's session is open (it registered): it joins the wheel with a clean record. */
  connect(entry: LiveEntry): void {
    this.#disconnected.delete(entry.id);
    this.#connected.add(entry.id);
    this.#join(entry);
    entry.disconnectedAtMs = undefined;
    entry.awaitingPong = false;
    entry.missedPings = 0;
  }

  /** The agent's session closed at `nowMs`: it leaves the wheel, its reconnection deadline runs. */
  disconnect(entry: LiveEntry, nowMs: number): void {
    entry.disconnectedAtMs = nowMs;
    entry.awaitingPong = false;
    this.#connected.delete(entry.id);
    this.#leave(entry);
    this.#disconnected.add(entry.id);
  }

  /** The agent became unreachable: off the wheel, its record cleared. */
  unreachable(entry: LiveEntry): void {
    this.forget(entry);
    entry.disconnectedAtMs = undefined;
    entry.awaitingPong = false;
    entry.missedPings = 0;
  }

  /** The agent left the table (removed, gone): off the wheel and out of every set. */
  forget(entry: LiveEntry): void {
    this.#connected.delete(entry.id);
    this.#leave(entry);
    this.#disconnected.delete(entry.id);
  }

  /** A pong came back: the agent is alive. */
  pong(entry: LiveEntry): void {
    entry.awaitingPong = false;
    entry.missedPings = 0;
  }

  /** One whole liveness round at once (every slot of the wheel). */
  tick(nowMs: number): TickDecision {
    const decision: TickDecision = { ping: [], unreachable: [] };
    for (const id of this.#connected) this.#visit(id, decision);
    this.#expireDisconnected(nowMs, decision);
    return decision;
  }

  /**
   * One slot's share of a liveness round: the shell visits slot 0, 1, ... every ping timeout /
   * slots, so each connected agent is visited once a round, as by tick(), and the pings of a
   * round go out in `slots` turns instead of one. Agents that connect from now on join this
   * slot. Disconnected agents are checked at every slot (the few there are, usually).
   */
  tickSlot(nowMs: number, slot: number): TickDecision {
    const decision: TickDecision = { ping: [], unreachable: [] };
    const agents = this.#wheel[slot];
    if (agents === undefined) throw new Error(`tickSlot: no slot ${slot} of ${this.#wheel.length}`);
    this.#lastSlot = slot;
    for (const id of agents) this.#visit(id, decision);
    this.#expireDisconnected(nowMs, decision);
    return decision;
  }

  /** One connected agent's turn in a round: a miss if the last ping is unanswered, then the next ping or unreachable. */
  #visit(id: string, decision: TickDecision): void {
    const entry = this.#entry(id);
    if (entry === undefined) return;
    if (entry.awaitingPong) entry.missedPings++;
    if (entry.missedPings >= this.#limits.maxPingTimeouts) {
      decision.unreachable.push({ agentId: id, reason: 'PING_TIMEOUT' });
      return;
    }
    entry.awaitingPong = true;
    decision.ping.push(id);
  }

  #expireDisconnected(nowMs: number, decision: TickDecision): void {
    const allowedMs = this.#limits.pingTimeoutMs * this.#limits.maxPingTimeouts;
    for (const id of this.#disconnected) {
      const entry = this.#entry(id);
      if (entry?.disconnectedAtMs !== undefined && nowMs - entry.disconnectedAtMs >= allowedMs) {
        decision.unreachable.push({ agentId: id, reason: 'DISCONNECTED_TIMEOUT' });
      }
    }
  }

  #join(entry: LiveEntry): void {
    const slot = this.#lastSlot;
    if (entry.pingSlot === slot) return;
    if (entry.pingSlot !== undefined) this.#wheel[entry.pingSlot]?.delete(entry.id);
    this.#wheel[slot]?.add(entry.id);
    entry.pingSlot = slot;
  }

  #leave(entry: LiveEntry): void {
    if (entry.pingSlot === undefined) return;
    this.#wheel[entry.pingSlot]?.delete(entry.id);
    entry.pingSlot = undefined;
  }
}

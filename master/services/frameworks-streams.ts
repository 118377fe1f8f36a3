/**
 * The frameworks service's streams (a part of services/frameworks.ts): a framework's SUBSCRIBE
 * (bound to its principal, durable before its stream opens, one at a time per framework id),
 * the open event streams and their heartbeats, a failover (the older stream gets ERROR and
 * closes), a stream that ends (the framework is disconnected and its failover timeout armed on
 * the term's clock), and a framework's removal for good. Which framework a SUBSCRIBE means, and
 * whether its caller may, is the frameworks core's (cores/frameworks.ts).
 */

import type { Clock, TimerHandle } from '../../shared/clock.js';
import { nowNs } from '../../shared/duration.js';
import type { DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import type { FrameworkInfo } from '../../shared/mesos.js';
import { frameworkRoles, subscribeAs, type FrameworkCaller, type FrameworkEntry, type FrameworkTable } from '../cores/frameworks.js';
import type { Offer } from '../cores/offers.js';
import type { Access } from '../security/security.js';
import type { CallResult, FrameworkStream } from '../term/commands.js';
import type { Commits } from '../term/commit.js';
import type { MasterEvents } from '../term/events.js';

/** Mesos' constant heartbeat interval for scheduler streams. */
export const HEARTBEAT_INTERVAL_SECONDS = 15;

/** The caller as the frameworks core's binding sees it: bound only where the master checks credentials. */
export function callerOf(access: Access): FrameworkCaller {
  return { principal: access.principal, authenticates: access.security.authenticator !== undefined };
}

/**
 * register_frameworks for every role the framework subscribes with; the first refused role is
 * the 403. The audit line names all of them.
 */
export function mayRegister(access: Access, roles: readonly string[]): DrydockError | undefined {
  for (const role of roles) {
    const refused = access.check('register_frameworks', role);
    if (refused !== undefined) return refused;
  }
  access.note('register_frameworks', roles.map((r) => `'${r}'`).join(', '));
  return undefined;
}

/** What the streams part needs of the service and the term. */
export interface StreamsNeeds {
  /** Framework ids are derived from it. */
  readonly masterId: string;
  /** MasterInfo as SUBSCRIBED writes it. */
  masterInfo(): Record<string, unknown>;
  readonly frameworks: FrameworkTable;
  readonly commits: Commits;
  readonly bus: MasterEvents;
  readonly clock: Clock;
  readonly log: Logger;
  /** Whether the service runs (between start and stop). */
  running(): boolean;
  /** The offers part: rescind a framework's offers, allocate soon. */
  readonly offers: { rescind(pred: (o: Offer) => boolean, tell: boolean): void; allocateSoon(): void };
  /** The tasks part: a removed framework's tasks are acknowledged and killed. */
  readonly tasks: { endTasksOf(frameworkId: string): void };
}

interface OpenStream {
  frameworkId: string;
  stream: FrameworkStream;
  heartbeat: TimerHandle | undefined;
}

export class FrameworkStreams {
  readonly #n: StreamsNeeds;
  readonly #streams = new Map<string, OpenStream>();
  /** framework id -> its failover timeout, while it is disconnected. */
  readonly #deadlines = new Map<string, TimerHandle>();
  /** framework id -> the SUBSCRIBE for it in progress: one at a time per id, so the binding checked before the write still holds when it is applied. */
  readonly #subscribing = new Map<string, Promise<unknown>>();
  #nextFramework = 0;

  constructor(needs: StreamsNeeds) {
    this.#n = needs;
  }

  /** Arms the failover deadline of every framework the term recovered (none is connected yet). */
  start(): void {
    for (const f of this.#n.frameworks.all()) this.armDeadline(f);
  }

  /** Cancels the deadlines and closes every stream. */
  stop(): void {
    for (const t of this.#deadlines.values()) t.cancel();
    for (const s of [...this.#streams.values()]) {
      s.heartbeat?.cancel();
      s.stream.close();
    }
  }

  /** Whether a stream with this id is open (a call naming another framework's stream is told apart). */
  isOpen(streamId: string): boolean {
    return this.#streams.has(streamId);
  }

  /** Sends an event on the framework's stream, if it has one open. */
  send(frameworkId: string, event: unknown): void {
    const streamId = this.#n.frameworks.get(frameworkId)?.streamId;
    if (streamId !== undefined) this.#streams.get(streamId)?.stream.send(event);
  }

  /** Sends an event on every open stream (an agent's FAILURE). */
  broadcast(event: unknown): void {
    for (const s of this.#streams.values()) s.stream.send(event);
  }

  // ---- SUBSCRIBE -----------------------------------------------------------------------------

  /**
   * Subscribes (or fails over) a framework; `open` starts the 200 stream once the framework is
   * durable. A failed write opens nothing: the error is the answer. `access` is the caller: a
   * framework id bound to another principal is refused (403) before anything changes, so the
   * real framework's stream stays open; then register_frameworks for its roles.
   */
  subscribe(info: FrameworkInfo, open: () => FrameworkStream, access: Access): Promise<CallResult> {
    const claimed = info.id?.value;
    if (claimed === undefined) return this.#subscribe(info, open, access);
    const run = (this.#subscribing.get(claimed) ?? Promise.resolve()).then(() => this.#subscribe(info, open, access));
    const tail = run.catch(() => undefined);
    this.#subscribing.set(claimed, tail);
    void tail.then(() => {
      if (this.#subscribing.get(claimed) === tail) this.#subscribing.delete(claimed);
    });
    return run;
  }

  async #subscribe(requested: FrameworkInfo, open: () => FrameworkStream, access: Access): Promise<CallResult> {
    const { frameworks, clock } = this.#n;
    const claimed = requested.id?.value;
    // A removed framework stays bound while the master remembers it: a stranger learns nothing of it.
    const known = claimed === undefined ? undefined : (frameworks.get(claimed) ?? frameworks.completed.find((f) => f.id === claimed));
    const bound = subscribeAs(requested, callerOf(access), known?.info);
    if (!bound.ok) return bound;
    const info = bound.info;
    const refused = mayRegister(access, frameworkRoles(info));
    if (refused !== undefined) return { ok: false, error: refused };
    const plan = frameworks.planSubscribe(info, nowNs(clock.now()), () => `${this.#n.masterId}-${String(this.#nextFramework++).padStart(4, '0')}`);
    if (plan.kind === 'REMOVED') {
      const s = open();
      s.send({ type: 'ERROR', error: { message: 'Framework has been removed' } });
      s.close();
      return { ok: true };
    }
    const durable = plan.durable;
    if (durable !== undefined) {
      const w = await this.#n.commits.write('ADD_FRAMEWORK', { frameworkId: plan.frameworkId }, (reg) => reg.addFramework(durable), () => undefined);
      if (!w.ok) return w;
    }
    if (!this.#n.running()) {
      open().close();
      return { ok: true };
    }
    const stream = open();
    // Another SUBSCRIBE for the same id may have committed meanwhile: it is the older stream now.
    const previous = frameworks.get(plan.frameworkId)?.streamId;
    const entry = frameworks.applySubscribe(plan, info, stream.id, nowNs(clock.now()));
    this.#deadlines.get(entry.id)?.cancel();
    this.#deadlines.delete(entry.id);
    if (previous !== undefined) {
      const old = this.#streams.get(previous);
      if (old !== undefined) {
        old.stream.send({ type: 'ERROR', error: { message: 'Framework failed over' } });
        this.#closeStream(previous);
      }
      // Offers made to the old stream are void: the new one gets fresh offers.
      this.#n.offers.rescind((o) => o.frameworkId === entry.id, false);
    }
    const open_: OpenStream = { frameworkId: entry.id, stream, heartbeat: undefined };
    this.#streams.set(stream.id, open_);
    stream.onClose(() => this.#streamClosed(stream.id));
    stream.send({
      type: 'SUBSCRIBED',
      subscribed: { framework_id: { value: entry.id }, heartbeat_interval_seconds: HEARTBEAT_INTERVAL_SECONDS, master_info: this.#n.masterInfo() },
    });
    // Mesos' heartbeater sends one at once, then every interval.
    stream.send({ type: 'HEARTBEAT' });
    this.#heartbeat(open_);
    this.#n.log.info(plan.kind === 'NEW' ? 'framework subscribed' : 'framework resubscribed', { frameworkId: entry.id, name: entry.info.name, kind: plan.kind });
    this.#n.bus.emit({ type: plan.kind === 'NEW' ? 'FRAMEWORK_ADDED' : 'FRAMEWORK_UPDATED', frameworkId: entry.id });
    this.#n.offers.allocateSoon();
    return { ok: true };
  }

  #heartbeat(s: OpenStream): void {
    s.heartbeat = this.#n.clock.setTimer(HEARTBEAT_INTERVAL_SECONDS * 1000, () => {
      if (!this.#streams.has(s.stream.id)) return;
      s.stream.send({ type: 'HEARTBEAT' });
      this.#heartbeat(s);
    });
  }

  #closeStream(streamId: string): void {
    const s = this.#streams.get(streamId);
    if (s === undefined) return;
    this.#streams.delete(streamId);
    s.heartbeat?.cancel();
    s.stream.close();
  }

  #streamClosed(streamId: string): void {
    const s = this.#streams.get(streamId);
    if (s !== undefined) {
      this.#streams.delete(streamId);
      s.heartbeat?.cancel();
    }
    const fid = s?.frameworkId;
    if (fid === undefined || !this.#n.running()) return;
    const { frameworks, clock } = this.#n;
    if (!frameworks.disconnect(fid, streamId, clock.now(), nowNs(clock.now()))) return;
    this.#n.log.info('framework disconnected', { frameworkId: fid });
    this.#n.offers.rescind((o) => o.frameworkId === fid, false);
    this.#n.bus.emit({ type: 'FRAMEWORK_UPDATED', frameworkId: fid });
    const entry = frameworks.get(fid);
    if (entry !== undefined) this.armDeadline(entry);
    this.#n.offers.allocateSoon();
  }

  // ---- Failover and removal ------------------------------------------------------------------

  /** Arms the failover timeout of a framework that is not connected: once past, it is removed. */
  armDeadline(entry: FrameworkEntry): void {
    const { frameworks, clock } = this.#n;
    const deadline = frameworks.deadlineMs(entry);
    if (deadline === undefined) return;
    this.#deadlines.get(entry.id)?.cancel();
    this.#deadlines.set(
      entry.id,
      clock.setTimer(deadline - clock.now(), () => {
        this.#deadlines.delete(entry.id);
        if (!this.#n.running()) return;
        if (frameworks.expired(clock.now()).includes(entry.id)) {
          this.#n.log.warn('framework failover timeout', { frameworkId: entry.id });
          void this.remove(entry.id);
        }
      }),
    );
  }

  /** Removes a framework for good, written first: kills its tasks, forgets its offers. */
  async remove(frameworkId: string): Promise<CallResult> {
    if (this.#n.frameworks.get(frameworkId) === undefined) return { ok: true };
    const r = await this.#n.commits.write('REMOVE_FRAMEWORK', { frameworkId }, (reg) => reg.removeFramework(frameworkId), () => this.#applyRemoval(frameworkId));
    if (!r.ok) return r;
    if (!r.value) return { ok: true };
    this.#n.log.info('framework removed', { frameworkId });
    this.#n.bus.emit({ type: 'FRAMEWORK_REMOVED', frameworkId });
    return { ok: true };
  }

  #applyRemoval(frameworkId: string): boolean {
    const { frameworks, clock } = this.#n;
    const entry = frameworks.get(frameworkId);
    if (entry === undefined) return false;
    if (entry.streamId !== undefined) this.#closeStream(entry.streamId);
    this.#n.offers.rescind((o) => o.frameworkId === frameworkId, false);
    frameworks.remove(frameworkId, nowNs(clock.now()));
    this.#deadlines.get(frameworkId)?.cancel();
    this.#deadlines.delete(frameworkId);
    this.#n.tasks.endTasksOf(frameworkId);
    return true;
  }
}

/**
 * The scheduler the master benchmarks play: a framework on the real master's scheduler API
 * (scheduler/client.ts) that keeps the outstanding offers, launches `sleep` tasks on
 * them, acknowledges every update at once and notes when each task reached TASK_RUNNING
 * (performance.now(), in this process, as the scheduler sees it).
 */

import { SchedulerClient, type SchedulerEvent } from '../../scheduler/client.js';
import type { Resource, TaskInfo } from '../../shared/mesos.js';
import type { ClientTransport } from '../../io/transport.js';

/** An outstanding offer, as OFFERS carries it. */
export interface BenchOffer {
  id: { value: string };
  agent_id: { value: string };
  hostname: string;
  resources: Resource[];
}

/** What one benchmark task asks for. */
export const TASK_CPUS = 0.1;
export const TASK_MEM_MB = 1;
export const TASK_COMMAND = 'sleep 600';

/** The scalar total of `name` in an offer. */
export function offered(o: BenchOffer, name: string): number {
  let sum = 0;
  for (const r of o.resources) if (r.name === name && r.type === 'SCALAR') sum += r.scalar?.value ?? 0;
  return sum;
}

/**
 * How many benchmark tasks fit an offer. Pure. The small epsilon absorbs float sums (the
 * master subtracts 0.1 a hundred times), so a task that fits on paper is not lost to 1e-15.
 */
export function tasksFitting(cpus: number, memMb: number): number {
  return Math.max(0, Math.min(Math.floor(cpus / TASK_CPUS + 1e-6), Math.floor(memMb / TASK_MEM_MB + 1e-6)));
}

/** A TaskInfo for a benchmark task on `offer`, with resources shaped like the offer's. */
export function benchTask(taskId: string, offer: BenchOffer): TaskInfo {
  const shaped = (name: string, value: number): Resource => {
    const src = offer.resources.find((r) => r.name === name && r.type === 'SCALAR');
    const { scalar: _s, ...shape } = src ?? { name, type: 'SCALAR' as const };
    return { ...shape, name, type: 'SCALAR', scalar: { value } } as Resource;
  };
  return {
    name: taskId,
    task_id: { value: taskId },
    agent_id: offer.agent_id,
    resources: [shaped('cpus', TASK_CPUS), shaped('mem', TASK_MEM_MB)],
    command: { shell: true, value: TASK_COMMAND },
  };
}

export class BenchFramework {
  readonly client: SchedulerClient;
  /** Outstanding offers by id (RESCIND and our own ACCEPT/DECLINE remove them). */
  readonly offers = new Map<string, BenchOffer>();
  /** When each task's TASK_RUNNING arrived. */
  readonly runningAt = new Map<string, number>();
  /** Tasks that ended before (or instead of) running, with state and message. */
  readonly failed = new Map<string, string>();
  /** ACKNOWLEDGE calls that did not get 202. */
  ackErrors = 0;
  #waiters: Array<() => void> = [];

  private constructor(client: SchedulerClient) {
    this.client = client;
    client.onEvent = (e) => this.#event(e);
    for (const e of client.received.slice(1)) this.#event(e);
  }

  /** `transport`: TLS and the Authorization header of a secured master (the security benchmark); default plain, anonymous. */
  static async subscribe(master: string, name: string, transport?: ClientTransport): Promise<BenchFramework> {
    const client = await SchedulerClient.subscribe(master, { user: 'root', name, failover_timeout: 0, checkpoint: true }, { timeoutMs: 20_000, ...(transport === undefined ? {} : { transport }) });
    return new BenchFramework(client);
  }

  #event(e: SchedulerEvent): void {
    if (e.type === 'OFFERS') {
      for (const o of ((e['offers'] as { offers?: BenchOffer[] } | undefined)?.offers ?? [])) this.offers.set(o.id.value, o);
    } else if (e.type === 'RESCIND') {
      this.offers.delete(String((e['rescind'] as { offer_id?: { value?: string } } | undefined)?.offer_id?.value));
    } else if (e.type === 'UPDATE') {
      const s = (e['update'] as { status: { task_id: { value: string }; state: string; message?: string; agent_id?: { value: string }; uuid?: string } }).status;
      const taskId = s.task_id.value;
      if (s.state === 'TASK_RUNNING' && !this.runningAt.has(taskId)) this.runningAt.set(taskId, performance.now());
      else if (s.state !== 'TASK_STAGING' && s.state !== 'TASK_STARTING' && s.state !== 'TASK_RUNNING' && !this.runningAt.has(taskId)) {
        this.failed.set(taskId, `${s.state} ${s.message ?? ''}`.trim());
      }
      if (s.uuid !== undefined && s.agent_id !== undefined) {
        this.client
          .call('ACKNOWLEDGE', { agent_id: s.agent_id, task_id: s.task_id, uuid: s.uuid })
          .then((r) => { if (r.status !== 202) this.ackErrors++; }, () => { this.ackErrors++; });
      }
    } else return;
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const w of waiters) w();
  }

  /** Waits (bounded) until `check` returns something other than undefined, re-checking after each event. */
  async until<T>(check: () => T | undefined, timeoutMs: number, what: string): Promise<T> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const v = check();
      if (v !== undefined) return v;
      const left = deadline - performance.now();
      if (left <= 0) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
      if (this.client.closed) throw new Error(`the scheduler stream ended while waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.min(left, 250));
        this.#waiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
  }

  /** Takes an outstanding offer (removing it), the first that `fits`. */
  takeOffer(fits: (o: BenchOffer) => boolean = () => true): BenchOffer | undefined {
    for (const o of this.offers.values()) {
      if (fits(o)) {
        this.offers.delete(o.id.value);
        return o;
      }
    }
    return undefined;
  }

  /** ACCEPT `offer` with one LAUNCH of `tasks`; unused resources come back at once (refuse 0 s). */
  async launch(offer: BenchOffer, tasks: TaskInfo[]): Promise<void> {
    const r = await this.client.call('ACCEPT', {
      offer_ids: [offer.id],
      operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }],
      filters: { refuse_seconds: 0 },
    });
    if (r.status !== 202) throw new Error(`ACCEPT answered ${r.status}: ${r.text.trim()}`);
  }

  /** TEARDOWN (the master kills every task of the framework), then close the stream. */
  async teardown(): Promise<void> {
    try {
      await this.client.call('TEARDOWN');
    } finally {
      this.client.close();
    }
  }
}

/**
 * "No offers for X" without sleeping a guessed time. A witness agent (a FakeAgent registered
 * with the master, closed when the test ends) is offered to the framework; `round(s)` declines
 * the witness's offers with refuse_seconds 0 and waits for the next one. That offer comes from
 * an allocation round that ran after the decline, and every round offers the framework every
 * agent it may (the allocator looks at all agents each time): so an agent absent from every
 * OFFERS event since a point before `round` is one the master would not offer. The wait is
 * for that positive event, bounded by the one guard (EVENT_DEADLINE_MS).
 */

import type { TestContext } from 'node:test';
import type { SchedulerClient, SchedulerEvent } from '../../scheduler/client.js';
import { AgentDouble } from '../../scripts/harness/agent-double.js';
import { eventually, type MasterHandle } from './daemons.js';

type OfferJson = { id: { value: string }; agent_id: { value: string } };

const offersIn = (e: SchedulerEvent): OfferJson[] => (e.type === 'OFFERS' ? ((e['offers'] as { offers?: OfferJson[] }).offers ?? []) : []);

export class AllocationWitness {
  readonly agentId: string;
  readonly #agent: AgentDouble;
  /** Witness offers already declined (or used up): never waited for again. */
  readonly #spent = new Set<string>();

  private constructor(agent: AgentDouble, agentId: string) {
    this.#agent = agent;
    this.agentId = agentId;
  }

  /** Registers the witness (hostname `allocation-witness`, small resources) with `master`. */
  static async start(t: Pick<TestContext, 'after'>, master: MasterHandle): Promise<AllocationWitness> {
    const agent = await AgentDouble.connect(master.url, {
      self: {
        hostname: 'allocation-witness',
        resources: [
          { name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } },
          { name: 'mem', type: 'SCALAR', scalar: { value: 16 } },
        ],
        attributes: [],
      },
    });
    t.after(() => agent.terminate());
    const registered = await agent.register();
    return new AllocationWitness(agent, registered.agent_id);
  }

  /** Whether an OFFERS event carries an offer of the witness (to leave out of a test's own checks). */
  isWitness(o: OfferJson): boolean {
    return o.agent_id.value === this.agentId;
  }

  /**
   * Resolves once an allocation round that began after this call has offered the witness to
   * `s`: everything `s` received since a mark taken before this call covers that round.
   */
  async round(s: SchedulerClient): Promise<void> {
    const fresh = (): string[] => s.received.flatMap(offersIn).filter((o) => this.isWitness(o) && !this.#spent.has(o.id.value)).map((o) => o.id.value);
    // The witness must be out on offer to be declined: the first time, its first offer.
    const held = await eventually(() => (fresh().length > 0 ? fresh() : undefined), undefined, 20, 'an offer of the allocation witness');
    for (const id of held) this.#spent.add(id);
    const r = await s.call('DECLINE', { offer_ids: held.map((value) => ({ value })), filters: { refuse_seconds: 0 } });
    if (r.status !== 202) throw new Error(`DECLINE of the witness's offers answered ${r.status}: ${r.text}`);
    // The master handled the decline before answering: the next witness offer is a later round's.
    await eventually(() => (fresh().length > 0 ? true : undefined), undefined, 20, 'the allocation witness offered again');
  }
}

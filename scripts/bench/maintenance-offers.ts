/**
 * maintenance-offers: what a schedule update costs the frameworks' view. 1,000 simulated
 * agents (scripts/sim-agents.ts in a child process: hostnames `sim-<k>`, each on its own
 * loopback address ipBase + k) are registered, and a framework (the benchmark scheduler)
 * holds one offer for each. Then UPDATE_MAINTENANCE_SCHEDULE puts those 1,000 machines
 * (hostname + IP exactly as the sims report them; 100 windows of 10) into maintenance. The
 * figure is the time from sending the update until every one of those offers has been
 * rescinded and a new offer with `unavailability` has arrived for the agent (Mesos §2: offers
 * of touched agents are rescinded, new ones carry the unavailability).
 *
 * Floor: the same master sending 1,000 offers to the same framework with no maintenance in
 * between: every offer declined (refuse 1 h), then REVIVE, until an offer for every agent is
 * back. Both go through the allocator and the event stream; the difference is what
 * maintenance adds (matching machines, rescinding, the durable schedule write).
 */

import { stringifyJson } from '../../shared/json.js';
import { simAgentAddress } from '../sim-agents.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { Child, SIM_AGENTS_BIN, removeTempDir, startMaster } from './daemon.js';
import { BenchFramework } from './framework.js';
import type { SchedulerEvent } from '../../scheduler/client.js';

export interface MaintenanceOffersOptions {
  /** Simulated agents. Default 1,000. */
  agents: number;
  /** Source addresses of the sims are ipBase + k. */
  ipBase: string;
}

const HOUR_NS = 3_600_000_000_000n;
const PER_WINDOW = 10;

interface OfferJson {
  id: { value: string };
  agent_id: { value: string };
  hostname: string;
  unavailability?: unknown;
}

/** The schedule covering sim-1..sim-N as they register (hostname, ipBase + k). Pure. */
export function simSchedule(agents: number, ipBase: string, startNs: bigint): Record<string, unknown> {
  const windows = [];
  for (let first = 1, w = 0; first <= agents; first += PER_WINDOW, w++) {
    const ids = [];
    for (let k = first; k < first + PER_WINDOW && k <= agents; k++) ids.push({ hostname: `sim-${k}`, ip: simAgentAddress(ipBase, k) });
    windows.push({ machine_ids: ids, unavailability: { start: { nanoseconds: startNs + BigInt(w) * HOUR_NS }, duration: { nanoseconds: HOUR_NS } } });
  }
  return { windows };
}

/** Calls `on` for every scheduler event after the framework's own bookkeeping. */
function tap(fw: BenchFramework, on: (e: SchedulerEvent, at: number) => void): () => void {
  const own = fw.client.onEvent;
  fw.client.onEvent = (e) => {
    own?.(e);
    on(e, performance.now());
  };
  return () => {
    fw.client.onEvent = own;
  };
}

/** The agents that currently have an outstanding offer for the framework. */
function offeredAgents(fw: BenchFramework): Set<string> {
  return new Set([...fw.offers.values()].map((o) => o.agent_id.value));
}

export async function runMaintenanceOffers(opts: MaintenanceOffersOptions): Promise<BenchResult> {
  const name = 'maintenance-offers';
  const rows: ResultRow[] = [];
  const context: Record<string, unknown> = { agents: opts.agents };
  const master = await startMaster();
  const sims = new Child('sim-agents', SIM_AGENTS_BIN, [`--master=${master.address}`, `--count=${opts.agents}`, `--ip-base=${opts.ipBase}`, '--concurrency=128']);
  let fw: BenchFramework | undefined;
  try {
    const reg = await sims.waitFor((r) => r.msg === 'registered' || r.msg === 'registration_incomplete', 120_000, 'registered line');
    if (Number(reg['registered']) !== opts.agents) throw new Error(`only ${String(reg['registered'])} of ${opts.agents} sim agents registered`);
    fw = await BenchFramework.subscribe(master.address, 'bench-maintenance-offers');
    const f = fw;
    await f.until(() => (offeredAgents(f).size >= opts.agents ? true : undefined), 60_000, `offers for all ${opts.agents} agents`);

    // Floor: decline everything for an hour, then REVIVE, until every agent is offered again.
    const declined = [...f.offers.values()].map((o) => o.id);
    f.offers.clear();
    const dec = await f.client.call('DECLINE', { offer_ids: declined, filters: { refuse_seconds: 3600 } });
    if (dec.status !== 202) throw new Error(`DECLINE answered ${dec.status}: ${dec.text}`);
    await new Promise((r) => setTimeout(r, 1_500)); // a full allocation round: nothing may come back
    if (f.offers.size > 0) throw new Error(`${f.offers.size} offers came back despite the 1 h filter`);
    const r0 = performance.now();
    const rev = await f.client.call('REVIVE');
    if (rev.status !== 202) throw new Error(`REVIVE answered ${rev.status}: ${rev.text}`);
    await f.until(() => (offeredAgents(f).size >= opts.agents ? true : undefined), 60_000, 'offers after REVIVE');
    const floorMs = performance.now() - r0;

    // The figure: the schedule update until each agent's offer was rescinded and re-sent with unavailability.
    const offerAgent = new Map<string, string>([...f.offers.values()].map((o) => [o.id.value, o.agent_id.value]));
    const rescinded = new Set<string>();
    const resent = new Set<string>();
    let posted = false;
    const untap = tap(f, (e) => {
      if (!posted) return;
      if (e.type === 'RESCIND') {
        const agent = offerAgent.get(String((e['rescind'] as { offer_id?: { value?: string } } | undefined)?.offer_id?.value));
        if (agent !== undefined) rescinded.add(agent);
      } else if (e.type === 'OFFERS') {
        for (const o of ((e['offers'] as { offers?: OfferJson[] } | undefined)?.offers ?? [])) {
          if (o.unavailability !== undefined && rescinded.has(o.agent_id.value)) resent.add(o.agent_id.value);
        }
      }
    });
    const startNs = (BigInt(Date.now()) / 1000n + 86_400n) * 1_000_000_000n;
    const body = stringifyJson({ type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: simSchedule(opts.agents, opts.ipBase, startNs) } });
    const t0 = performance.now();
    posted = true;
    const res = await fetch(`${master.url}/api/v1`, { method: 'POST', headers: { 'content-type': 'application/json' }, body, signal: AbortSignal.timeout(60_000) });
    const answerMs = performance.now() - t0;
    if (res.status !== 200) throw new Error(`UPDATE_MAINTENANCE_SCHEDULE answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
    try {
      await f.until(() => (resent.size >= opts.agents ? true : undefined), 60_000, `re-sent offers with unavailability (${resent.size} of ${opts.agents}, ${rescinded.size} rescinded)`);
    } finally {
      untap();
    }
    const allMs = performance.now() - t0;
    rows.push({
      benchmark: name,
      metric: `schedule ${opts.agents.toLocaleString('en-US')} agents' machines -> every offer rescinded and re-sent with unavailability`,
      value: allMs,
      unit: 'ms',
      ...against(`${opts.agents.toLocaleString('en-US')} offers after REVIVE`, floorMs, allMs),
      note: `the update's own 200 (durable) after ${answerMs.toFixed(0)} ms; the rest is rescinds and re-offers through the allocator`,
    });
    context['inverseOffersSeen'] = f.client.received.filter((e) => e.type === 'INVERSE_OFFERS').length;
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message, context };
  } finally {
    if (fw !== undefined) await fw.teardown().catch(() => undefined);
    await sims.stop(10_000);
    await master.daemon.stop(10_000);
    removeTempDir(master.workDir);
  }
}

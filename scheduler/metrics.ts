/**
 * The service scheduler's figures (issue 14): `GET /metrics` in Prometheus text on its API port.
 *
 * As on the master and the agent: what the service holds now (plan and step statuses, tasks by
 * state, pod instances, subscribed or not) is computed on scrape, by reading the service into
 * plain data (`factsOf`) and counting it with `summarizeScheduler` (pure); what happened
 * (offers received, accepted and declined, inverse offers answered, subscriptions) is counted
 * where it happens, through the service's instrument port (`ServiceInstruments`).
 *
 * Cardinality: plan steps are counted by plan and status only (not phase or step), so a service
 * of any size has at most (plans × 9) step series.
 *
 * prom-client lives here only; the service knows the port, not the library.
 */

import type { ServerResponse } from 'node:http';
import { Counter, type Registry } from 'prom-client';
import { TASK_STATES, type TaskState } from '../shared/mesos.js';
import { STATUSES, type Status } from '../shared/plans/status.js';
import { createMetricsRegistry, ScrapedGauges } from '../io/metrics.js';
import { parseInstance } from './pods.js';
import type { Service, ServiceInstruments } from './service.js';

// ---- The pure core -------------------------------------------------------------------------

/** The service's state, as plain data. */
export interface SchedulerFacts {
  readonly subscribed: boolean;
  /** Every plan with its status and its steps' statuses (as `plan show` displays them). */
  readonly plans: ReadonlyArray<{ readonly name: string; readonly status: Status; readonly steps: readonly Status[] }>;
  /** Every task record's last state (TASK_STAGING until the first update). */
  readonly tasks: readonly TaskState[];
  /** Pod instances (`hello-0`) by pod type: the spec's, and any still running beyond its count. */
  readonly instances: ReadonlyArray<{ readonly pod: string; readonly count: number }>;
}

export interface SchedulerSummary {
  subscribed: boolean;
  /** Steps by plan and status, every status present (zeros included) for every plan. */
  planSteps: Array<{ plan: string; status: Status; steps: number }>;
  /** Each plan's status: one entry per plan. */
  planStatus: Array<{ plan: string; status: Status }>;
  tasks: Record<TaskState, number>;
  instances: Array<{ pod: string; count: number }>;
}

/** Counts the facts. Pure. */
export function summarizeScheduler(f: SchedulerFacts): SchedulerSummary {
  const planSteps: SchedulerSummary['planSteps'] = [];
  for (const p of f.plans) {
    const by = new Map<Status, number>(STATUSES.map((s) => [s, 0]));
    for (const s of p.steps) by.set(s, (by.get(s) ?? 0) + 1);
    for (const status of STATUSES) planSteps.push({ plan: p.name, status, steps: by.get(status) ?? 0 });
  }
  const tasks = {} as Record<TaskState, number>;
  for (const s of TASK_STATES) tasks[s] = 0;
  for (const s of f.tasks) tasks[s]++;
  return {
    subscribed: f.subscribed,
    planSteps,
    planStatus: f.plans.map((p) => ({ plan: p.name, status: p.status })),
    tasks,
    instances: f.instances.map((i) => ({ ...i })),
  };
}

/** Reads the service into plain data. */
export function factsOf(service: Service): SchedulerFacts {
  const types = service.spec.pods.map((p) => p.type);
  const byPod = new Map<string, number>(types.map((t) => [t, 0]));
  for (const name of service.instances()) {
    const pod = parseInstance(name, types)?.podType ?? name.replace(/-\d+$/, '');
    byPod.set(pod, (byPod.get(pod) ?? 0) + 1);
  }
  return {
    subscribed: service.subscribed,
    plans: service.plans().map((p) => ({ name: p.name, status: p.status(), steps: p.steps().map((s) => s.status()) })),
    tasks: service.tasks().map((t) => (t.status?.state ?? 'TASK_STAGING') as TaskState),
    instances: [...byPod].map(([pod, count]) => ({ pod, count })),
  };
}

// ---- The shell -----------------------------------------------------------------------------

/** The scheduler process's metrics. */
export class SchedulerMetrics {
  readonly registry: Registry;
  /** What the service is given. */
  readonly instruments: ServiceInstruments;
  readonly #gauges: ScrapedGauges<SchedulerSummary>;
  readonly #facts: () => SchedulerFacts;

  /** `facts` reads the service (it may be made after the metrics: it is called only on scrape). */
  constructor(facts: () => SchedulerFacts) {
    this.#facts = facts;
    const registry = createMetricsRegistry('scheduler');
    this.registry = registry;
    const registers = [registry];
    const p = 'drydock_scheduler_';
    // Gauges, computed on scrape from one summary of the model.
    const gauges = new ScrapedGauges(registry, p, () => summarizeScheduler(this.#facts()));
    this.#gauges = gauges;
    const gauge = gauges.gauge.bind(gauges);
    gauge('plan_steps', 'Plan steps by plan and status (as `drydock plan show` displays them).', ['plan', 'status'], (g, s) => {
      for (const x of s.planSteps) g.set({ plan: x.plan, status: x.status }, x.steps);
    });
    gauge('plan_status', "1 for each plan's current status (one series per plan at 1).", ['plan', 'status'], (g, s) => {
      for (const x of s.planStatus) g.set({ plan: x.plan, status: x.status }, 1);
    });
    gauge('tasks', "The service's tasks by last known state (TASK_STAGING until the first update), retiring ones included until forgotten.", ['state'], (g, s) => {
      for (const st of TASK_STATES) g.set({ state: st }, s.tasks[st]);
    });
    gauge('pod_instances', 'Pod instances by pod type: the spec\'s count, plus instances still running beyond it (being decommissioned).', ['pod'], (g, s) => {
      for (const x of s.instances) g.set({ pod: x.pod }, x.count);
    });
    gauge('subscribed', '1 while the scheduler is subscribed to a master, else 0.', [], (g, s) => g.set(s.subscribed ? 1 : 0));

    const offers = new Counter({ name: `${p}offers_received_total`, help: 'Offers received from the master.', registers });
    const accepted = new Counter({ name: `${p}offers_accepted_total`, help: 'Offers used: one ACCEPT launching tasks each.', registers });
    const launched = new Counter({ name: `${p}tasks_launched_total`, help: 'Tasks sent to the master in ACCEPTs.', registers });
    const declined = new Counter({ name: `${p}offers_declined_total`, help: 'Offers held and given back with DECLINE.', registers });
    const inverse = new Counter({ name: `${p}inverse_offers_total`, help: 'Inverse offers answered, by answer: accepted (nothing of the service left on the machine), declined (a pod there found no room elsewhere).', labelNames: ['answer'], registers });
    inverse.inc({ answer: 'accepted' }, 0);
    inverse.inc({ answer: 'declined' }, 0);
    const subscriptions = new Counter({ name: `${p}subscriptions_total`, help: 'Subscriptions to a master (SUBSCRIBED), the first included.', registers });
    const reconnections = new Counter({ name: `${p}reconnections_total`, help: 'Re-subscriptions after a stream ended (subscriptions after the first).', registers });

    let subscribedOnce = false;
    this.instruments = {
      onSubscribed: () => {
        subscriptions.inc();
        if (subscribedOnce) reconnections.inc();
        subscribedOnce = true;
      },
      onOffers: (n) => offers.inc(n),
      onOfferAccepted: (tasks) => {
        accepted.inc();
        launched.inc(tasks);
      },
      onOffersDeclined: (n) => declined.inc(n),
      onInverseOffers: (answer, n) => inverse.inc({ answer }, n),
    };
  }

  /** `GET /metrics`: one scrape, every gauge reading the same summary. */
  sendPrometheus(res: ServerResponse): Promise<void> {
    return this.#gauges.send(res);
  }
}

/**
 * What every daemon's `/metrics` and `/metrics/snapshot` share (issue 14): one prom-client
 * registry per process (never the library's global one, so tests can build several), the
 * process and event-loop figures prom-client collects by itself, and the two answers.
 *
 * Each daemon keeps its own figures next to the state they describe and registers them here:
 * gauges computed on scrape (`collect`) for counts the model already knows (agents by state,
 * tasks by state), counters and histograms fed where the event happens (a registry write, an
 * acknowledgement, a kill that escalated).
 */

import type { ServerResponse } from 'node:http';
import { cpus, freemem, loadavg, totalmem } from 'node:os';
import { collectDefaultMetrics, Gauge, Registry } from 'prom-client';

/** The daemons that serve metrics; the `daemon` label on every series. */
export type MetricsDaemon = 'master' | 'agent' | 'scheduler';

/**
 * A registry with the process figures (CPU, RSS, open fds, GC, event-loop lag as
 * `nodejs_eventloop_lag_seconds` and its percentiles), every series labelled with the daemon.
 */
export function createMetricsRegistry(daemon: MetricsDaemon): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ daemon });
  // The event-loop delay histogram samples every 100 ms. prom-client's default of 10 ms wakes an
  // idle daemon 100 times a second: 1 % of a core for every agent of a fleet (the footprint
  // benchmark: 1.0 % idle at 10 ms, 0-0.2 % at 100 ms). A loop blocked for longer still delays
  // the next sample by as much, so the lag the alerts watch for is still seen.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 100 });
  return registry;
}

/** `GET /metrics`: the Prometheus text exposition format. */
export async function sendPrometheus(res: ServerResponse, registry: Registry): Promise<void> {
  const text = await registry.metrics();
  res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/** The snapshot's values as Mesos' flat JSON object: keys sorted as Mesos prints them, every value a finite number. */
export function snapshotJson(values: Readonly<Record<string, number>>): Record<string, number> {
  const sorted: Record<string, number> = {};
  for (const key of Object.keys(values).sort()) {
    const v = values[key] as number;
    sorted[key] = Number.isFinite(v) ? v : 0;
  }
  return sorted;
}

/**
 * `GET /metrics/snapshot`: Mesos' flat JSON object of `"component/name": number`, keys sorted
 * as Mesos prints them, every value a JSON number (Mesos writes doubles: `1.0` is read as 1).
 */
export function sendSnapshot(res: ServerResponse, values: Readonly<Record<string, number>>): void {
  const text = JSON.stringify(snapshotJson(values));
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * Gauges read from one summary of the model per scrape: `send` takes the summary once, and every
 * gauge's `collect` reads that same one, so the figures of one scrape agree with each other (and
 * the model is walked once, not once per gauge).
 */
export class ScrapedGauges<S> {
  readonly #registry: Registry;
  readonly #prefix: string;
  readonly #summarize: () => S;
  /** The summary of the scrape in progress. */
  #held: S | undefined;

  constructor(registry: Registry, prefix: string, summarize: () => S) {
    this.#registry = registry;
    this.#prefix = prefix;
    this.#summarize = summarize;
  }

  /** A gauge `prefix + name` whose series `fill` sets from the scrape's summary. */
  gauge<L extends string>(name: string, help: string, labelNames: readonly L[], fill: (g: Gauge<L>, s: S) => void): void {
    const g: Gauge<L> = new Gauge<L>({
      name: this.#prefix + name,
      help,
      labelNames,
      registers: [this.#registry],
      collect: () => {
        g.reset();
        fill(g, this.#held ?? this.#summarize());
      },
    });
  }

  /** `GET /metrics`: one scrape over one summary. */
  async send(res: ServerResponse): Promise<void> {
    this.#held = this.#summarize();
    try {
      await sendPrometheus(res, this.#registry);
    } finally {
      this.#held = undefined;
    }
  }
}

/** The scalar resources both snapshots report (`master/cpus_total`, `slave/mem_used`, …). */
export const RESOURCE_NAMES = ['cpus', 'mem', 'disk', 'gpus'] as const;
export type ResourceName = (typeof RESOURCE_NAMES)[number];

/** A scalar resource's total and the part live tasks hold. */
export interface ResourceUse {
  total: number;
  used: number;
}

/** Mesos' `<component>/<resource>_total`, `_used` and `_percent` (a fraction, as Mesos writes it). */
export function resourceKeys(component: 'master' | 'slave', resources: Readonly<Record<ResourceName, ResourceUse>>): Record<string, number> {
  const v: Record<string, number> = {};
  for (const name of RESOURCE_NAMES) {
    const r = resources[name];
    v[`${component}/${name}_total`] = r.total;
    v[`${component}/${name}_used`] = r.used;
    v[`${component}/${name}_percent`] = r.total > 0 ? r.used / r.total : 0;
  }
  return v;
}

/** The host, as Mesos' `system/*` keys describe it. */
export interface SystemFacts {
  readonly cpus: number;
  readonly load: readonly [number, number, number];
  readonly memTotalBytes: number;
  readonly memFreeBytes: number;
}

/** Reads the host now. */
export function systemFacts(): SystemFacts {
  const load = loadavg();
  return { cpus: cpus().length, load: [load[0] ?? 0, load[1] ?? 0, load[2] ?? 0], memTotalBytes: totalmem(), memFreeBytes: freemem() };
}

/** Mesos' `system/*` snapshot keys. */
export function systemKeys(s: SystemFacts): Record<string, number> {
  return {
    'system/cpus_total': s.cpus,
    'system/load_1min': s.load[0],
    'system/load_5min': s.load[1],
    'system/load_15min': s.load[2],
    'system/mem_total_bytes': s.memTotalBytes,
    'system/mem_free_bytes': s.memFreeBytes,
  };
}

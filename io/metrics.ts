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
import { collectDefaultMetrics, Registry } from 'prom-client';

/** The daemons that serve metrics; the `daemon` label on every series. */
export type MetricsDaemon = 'master' | 'agent' | 'scheduler';

/**
 * A registry with the process figures (CPU, RSS, open fds, GC, event-loop lag as
 * `nodejs_eventloop_lag_seconds` and its percentiles), every series labelled with the daemon.
 */
export function createMetricsRegistry(daemon: MetricsDaemon): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ daemon });
  // The event-loop delay histogram's resolution: 10 ms is prom-client's default and enough to alert on.
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 10 });
  return registry;
}

/** `GET /metrics`: the Prometheus text exposition format. */
export async function sendPrometheus(res: ServerResponse, registry: Registry): Promise<void> {
  const text = await registry.metrics();
  res.writeHead(200, { 'Content-Type': registry.contentType, 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * `GET /metrics/snapshot`: Mesos' flat JSON object of `"component/name": number`, keys sorted
 * as Mesos prints them, every value a JSON number (Mesos writes doubles: `1.0` is read as 1).
 */
export function sendSnapshot(res: ServerResponse, values: Readonly<Record<string, number>>): void {
  const sorted: Record<string, number> = {};
  for (const key of Object.keys(values).sort()) {
    const v = values[key] as number;
    sorted[key] = Number.isFinite(v) ? v : 0;
  }
  const text = JSON.stringify(sorted);
  res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text) });
  res.end(text);
}

/**
 * The Prometheus text exposition format, parsed strictly enough that a malformed line fails the
 * test: every sample line is `name{labels} value`, every label well quoted, every value a number
 * as Prometheus reads it (Go's float syntax: NaN in any case, ±Inf).
 */
import assert from 'node:assert/strict';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';

export type Sample = { name: string; labels: Record<string, string>; value: number };
export type Exposition = { samples: Sample[]; types: Map<string, string> };

export function parseExposition(text: string): Exposition {
  const samples: Sample[] = [];
  const types = new Map<string, string>();
  for (const [i, line] of text.split('\n').entries()) {
    if (line === '' || line.startsWith('# HELP ')) continue;
    const type = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram|summary|untyped)$/.exec(line);
    if (type !== null) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    assert.ok(m !== null, `line ${i + 1} is not a sample: ${line}`);
    const labels: Record<string, string> = {};
    const body = m[2] ?? '';
    const re = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)",?/g;
    let consumed = 0;
    for (let l = re.exec(body); l !== null; l = re.exec(body)) {
      labels[l[1]!] = l[2]!;
      consumed += l[0].length;
    }
    assert.equal(consumed, body.length, `line ${i + 1} has malformed labels: ${line}`);
    const raw = m[3]!;
    const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : /^nan$/i.test(raw) ? NaN : Number(raw);
    assert.ok(!Number.isNaN(value) || /^nan$/i.test(raw), `line ${i + 1} has no number: ${line}`);
    samples.push({ name: m[1]!, labels, value });
  }
  return { samples, types };
}

/** The value of the one series whose labels include `labels`; undefined when there is none. */
export function sampleValue(e: Exposition, name: string, labels: Record<string, string> = {}): number | undefined {
  return e.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v))?.value;
}

/** GET `url` (a /metrics endpoint): 200 in the text format, parsed. */
export async function scrapeMetrics(url: string, headers: Record<string, string> = {}): Promise<Exposition> {
  const r = await fetch(url, { headers, signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(r.status, 200, `${url} answered ${r.status}: ${await r.clone().text()}`);
  assert.match(r.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseExposition(await r.text());
}

/** GET a `/metrics/snapshot` URL: 200, JSON, every value a number. */
export async function fetchSnapshot(url: string): Promise<Record<string, number>> {
  const r = await fetch(url, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get('content-type'), 'application/json');
  const j = (await r.json()) as Record<string, unknown>;
  for (const [k, v] of Object.entries(j)) assert.equal(typeof v, 'number', `${k} is a number`);
  return j as Record<string, number>;
}

/** `sampleValue`, checking that the series carries `daemon="<daemon>"` as every daemon's series do. */
export function daemonSample(e: Exposition, daemon: string, name: string, labels: Record<string, string> = {}): number | undefined {
  const s = e.samples.find((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v));
  if (s !== undefined) assert.equal(s.labels['daemon'], daemon, `${name} has daemon="${daemon}"`);
  return s?.value;
}

/**
 * state-protobuf: GET_STATE in protobuf against GET_STATE in JSON, on the large cluster of
 * state-cluster.ts (10,000 simulated agents, 50,000 running tasks by default, 5 on each). The figure is
 * the time from the request's first byte to the answer's last byte (a fresh connection each,
 * the client counting bytes only), the median of alternating rounds (the order swaps every
 * round, so neither encoding always runs on a warmer master); the floor is the same answer in
 * JSON. Goal: protobuf at most 1x JSON. Also shown: the master's CPU time per answer (from
 * /proc, robust against the load of other processes on the machine) and the answers' sizes.
 *
 * Both answers are built from the same value (the GET_STATE row of the table); they differ
 * only in the codec at the edge (shared/codec.ts): JSON.stringify and its UTF-8 bytes, or the
 * compiled protobuf walk (shared/protobuf.ts) straight into one Buffer.
 */

import { parseJson, stringifyJson } from '../../shared/json.js';
import { decodeProtobuf, encodeProtobuf } from '../../shared/protobuf.js';
import { procStat } from './procfs.js';
import { against, type BenchResult, type ResultRow } from './report.js';
import { startStateCluster, timedRequest, type StateCluster, type Timed } from './state-cluster.js';
import { quantile } from './stats.js';

export interface StateProtobufOptions {
  agents: number;
  tasks: number;
  /** Alternating rounds (one JSON and one protobuf answer each) after one warm-up round. */
  repeats: number;
  ipBase: string;
}

const JSON_HEADERS = { 'Content-Type': 'application/json', Accept: 'application/json' };
const PROTOBUF_HEADERS = { 'Content-Type': 'application/x-protobuf', Accept: 'application/x-protobuf' };

interface Sample extends Timed {
  /** The master's CPU seconds (user + system) spent while this answer was asked and read. */
  masterCpuMs: number;
}

async function getState(c: StateCluster, encoding: 'json' | 'protobuf'): Promise<Sample> {
  const pid = c.master.daemon.pid;
  const before = procStat(pid)?.cpuSeconds ?? Number.NaN;
  const body = encoding === 'json' ? JSON.stringify({ type: 'GET_STATE' }) : encodeProtobuf('mesos.v1.master.Call', { type: 'GET_STATE' });
  const t = await timedRequest(c.master.url, { method: 'POST', path: '/api/v1', headers: encoding === 'json' ? JSON_HEADERS : PROTOBUF_HEADERS, body });
  const after = procStat(pid)?.cpuSeconds ?? Number.NaN;
  if (t.status !== 200) throw new Error(`GET_STATE (${encoding}) answered ${t.status}`);
  const want = encoding === 'json' ? 'application/json' : 'application/x-protobuf';
  if (t.contentType !== want) throw new Error(`GET_STATE (${encoding}) answered ${t.contentType ?? 'no Content-Type'}`);
  return { ...t, masterCpuMs: (after - before) * 1000 };
}

/**
 * Both answers read whole once: they must hold the same number of agents and tasks (the
 * benchmark reads what it thinks it reads). Returns the JSON answer's value, for the codecs'
 * own figure.
 */
async function checkAnswers(c: StateCluster, agents: number, tasks: number): Promise<unknown> {
  const read = async (headers: Record<string, string>, body: Buffer | string): Promise<Buffer> => {
    const res = await fetch(`${c.master.url}/api/v1`, { method: 'POST', headers, body: typeof body === 'string' ? body : new Uint8Array(body), signal: AbortSignal.timeout(120_000) });
    return Buffer.from(await res.arrayBuffer());
  };
  type State = { get_state: { get_agents: { agents: unknown[] }; get_tasks: { tasks: unknown[] } } };
  const json = parseJson((await read(JSON_HEADERS, JSON.stringify({ type: 'GET_STATE' }))).toString('utf8')) as State;
  const pb = decodeProtobuf('mesos.v1.master.Response', await read(PROTOBUF_HEADERS, encodeProtobuf('mesos.v1.master.Call', { type: 'GET_STATE' })), { maxDepth: 64, maxStringLength: 1 << 20, maxArrayLength: 1_000_000 });
  if (!pb.ok) throw new Error(`the protobuf GET_STATE does not parse: ${pb.error}`);
  const p = pb.value as unknown as State;
  const counts = (s: State): string => `${s.get_state.get_agents.agents.length} agents, ${s.get_state.get_tasks.tasks.length} tasks`;
  if (counts(json) !== `${agents} agents, ${tasks} tasks` || counts(p) !== counts(json)) throw new Error(`GET_STATE holds JSON ${counts(json)}, protobuf ${counts(p)}; expected ${agents} agents, ${tasks} tasks`);
  return json;
}

/** The codecs alone on one answer's value, in this process, alternating: ms of the JSON codec (text and its UTF-8 bytes), ms of protobuf's. */
function codecsAlone(value: unknown, repeats: number): { json: number[]; protobuf: number[] } {
  const json: number[] = [];
  const protobuf: number[] = [];
  const timeJson = (): void => {
    const t0 = performance.now();
    Buffer.from(stringifyJson(value), 'utf8');
    json.push(performance.now() - t0);
  };
  const timeProtobuf = (): void => {
    const t0 = performance.now();
    encodeProtobuf('mesos.v1.master.Response', value);
    protobuf.push(performance.now() - t0);
  };
  timeJson();
  timeProtobuf();
  json.length = 0;
  protobuf.length = 0;
  for (let r = 0; r < repeats; r++) {
    if (r % 2 === 0) {
      timeJson();
      timeProtobuf();
    } else {
      timeProtobuf();
      timeJson();
    }
  }
  return { json, protobuf };
}

const median = (xs: readonly number[]): number => quantile(xs, 0.5);

export async function runStateProtobuf(opts: StateProtobufOptions): Promise<BenchResult> {
  const name = 'state-protobuf';
  const rows: ResultRow[] = [];
  const context: Record<string, unknown> = { agents: opts.agents, tasks: opts.tasks, repeats: opts.repeats };
  let c: StateCluster | undefined;
  try {
    c = await startStateCluster({ agents: opts.agents, tasks: opts.tasks, ipBase: opts.ipBase });
    context['setupMs'] = { register: Math.round(c.setupMs.register), subscribe: Math.round(c.setupMs.subscribe) };
    const value = await checkAnswers(c, opts.agents, opts.tasks);
    // Warm-up: the first answer of each encoding compiles the code paths it takes.
    await getState(c, 'json');
    await getState(c, 'protobuf');
    const json: Sample[] = [];
    const pb: Sample[] = [];
    for (let r = 0; r < opts.repeats; r++) {
      if (r % 2 === 0) {
        json.push(await getState(c, 'json'));
        pb.push(await getState(c, 'protobuf'));
      } else {
        pb.push(await getState(c, 'protobuf'));
        json.push(await getState(c, 'json'));
      }
    }
    const size = `${opts.agents.toLocaleString('en-US')} agents, ${opts.tasks.toLocaleString('en-US')} tasks`;
    const jsonMs = median(json.map((s) => s.ms));
    const pbMs = median(pb.map((s) => s.ms));
    const ratio = pbMs / jsonMs;
    rows.push({
      benchmark: name,
      metric: `GET_STATE in protobuf, ${size}: time to the last byte (median of ${opts.repeats})`,
      value: pbMs,
      unit: 'ms',
      ...against('the same GET_STATE in JSON', jsonMs, pbMs),
      goal: { text: '<= 1x JSON', pass: ratio <= 1 },
      note: `all samples: protobuf ${pb.map((s) => s.ms.toFixed(0)).join(', ')} ms; JSON ${json.map((s) => s.ms.toFixed(0)).join(', ')} ms`,
    });
    const jsonCpu = median(json.map((s) => s.masterCpuMs));
    const pbCpu = median(pb.map((s) => s.masterCpuMs));
    rows.push({ benchmark: name, metric: "GET_STATE in protobuf: the master's CPU per answer (median)", value: pbCpu, unit: 'ms', ...against('in JSON', jsonCpu, pbCpu), note: 'utime + stime of the master process while the answer was asked and read' });
    const alone = codecsAlone(value, opts.repeats);
    const jsonAlone = median(alone.json);
    const pbAlone = median(alone.protobuf);
    rows.push({
      benchmark: name,
      metric: 'the protobuf codec alone on that GET_STATE value (median)',
      value: pbAlone,
      unit: 'ms',
      ...against('the JSON codec alone (JSON.stringify and its UTF-8 bytes)', jsonAlone, pbAlone),
      note: `in the benchmark's process; the rest of an answer's time is building the value, which both share; samples: protobuf ${alone.protobuf.map((x) => x.toFixed(0)).join(', ')} ms; JSON ${alone.json.map((x) => x.toFixed(0)).join(', ')} ms`,
    });
    const mb = (b: number): number => b / 1e6;
    rows.push({ benchmark: name, metric: 'GET_STATE in protobuf: answer size', value: mb(pb[0]?.bytes ?? Number.NaN), unit: 'MB', ...against('in JSON', mb(json[0]?.bytes ?? Number.NaN), mb(pb[0]?.bytes ?? Number.NaN)) });
    return { benchmark: name, rows, context };
  } catch (e) {
    return { benchmark: name, rows, error: (e as Error).message, context };
  } finally {
    await c?.stop();
  }
}

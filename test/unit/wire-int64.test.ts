/**
 * Whatever the master accepts, the agent wire carries. Every integer field of every master
 * message, found by walking MASTER_MESSAGES' descriptions (a new field is in the table the
 * moment it is described), at the extremes of int64, goes through what the master does with
 * it: the call or message that brings the value in, decoded and validated as the master does
 * (a scheduler's ACCEPT or KILL, an operator's DRAIN_AGENT, an agent's REGISTER, a flag), the
 * master message built from it, encoded by the master's session shell. Then the agent decodes
 * the frame. Accepted by the master: the agent reads the same value, to the digit (compared as
 * bigints). Refused by the master: the agent refuses that value too (one reader, one range),
 * and keeps its session (a refusal, not a garbled frame).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';
import { Session } from '../../master/api/agent-sessions.js';
import { resolveMasterConfig } from '../../master/process/config.js';
import { drainMessage } from '../../master/services/drain.js';
import { clampKillPolicy, normalizeResources, planAccept, type Offer } from '../../master/cores/offers.js';
import { parseDrainConfig } from '../../master/api/operator.js';
import { parseApiCall } from '../../master/api/operator-call.js';
import { parseSchedulerCall } from '../../master/cores/scheduler-calls.js';
import { stringifyJson } from '../../shared/json.js';
import type { FrameworkInfo, TaskInfo } from '../../shared/mesos.js';
import { DRAIN_AGENT_CALL, decodeMessage, INTEGER_TYPES, type FieldType, type MessageType } from '../../shared/proto.js';
import { decodeAgentMessage, decodeMasterMessage, MASTER_MESSAGE_TYPES, MASTER_MESSAGES, type MasterMessage, type MasterMessageType } from '../../shared/protocol.js';

// ---- The fields, from the descriptions -----------------------------------------------------

/** A path into a message: field names, and '[]' for an element of a repeated field. */
type Path = readonly string[];

interface IntegerField {
  message: MasterMessageType;
  path: Path;
  type: FieldType;
  /** The name of the message description the field belongs to (`Value.Range`, `DurationInfo`, ...). */
  owner: string;
}

/** Every integer field of every master message, through every sub-message (a depth bound stops a recursive description). */
function integerFields(): IntegerField[] {
  const out: IntegerField[] = [];
  const walk = (message: MasterMessageType, t: MessageType, path: Path, depth: number): void => {
    assert.ok(depth < 16, `descriptions nest deeper than 16 at ${path.join('.')}`);
    for (const [name, field] of Object.entries(t.fields())) {
      const p = field.label === 'repeated' ? [...path, name, '[]'] : [...path, name];
      if (typeof field.type === 'object' && field.type.kind === 'message') walk(message, field.type, p, depth + 1);
      else if (INTEGER_TYPES.has(field.type)) out.push({ message, path: p, type: field.type, owner: t.name });
    }
  };
  for (const type of MASTER_MESSAGE_TYPES) walk(type, MASTER_MESSAGES[type], [], 0);
  return out;
}

const text = (p: Path): string => p.join('.').replace(/\.\[\]/g, '[]');

// ---- Setting and reading a value at a path -------------------------------------------------

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** The element of an array a path goes through: the first that has the next key, else a new one. */
function elementFor(arr: unknown[], next: string | undefined): Record<string, unknown> {
  const found = arr.find((e) => isObject(e) && (next === undefined || next in e));
  if (isObject(found)) return found;
  const fresh: Record<string, unknown> = {};
  arr.push(fresh);
  return fresh;
}

/**
 * Sets `value` at `path` in a JSON object (made up as needed, required siblings taken from
 * `example`). A Value.Range is set whole (begin = end = value): a range that ends before it
 * begins is another kind of wrong input.
 */
function setAt(root: Record<string, unknown>, path: Path, value: unknown, owner: string): void {
  // A repeated integer (a health check's statuses): a list of that one value.
  if (path[path.length - 1] === '[]') return setAt(root, path.slice(0, -1), [value], owner);
  let o: Record<string, unknown> = root;
  for (let i = 0; i < path.length - 1; i++) {
    const key = path[i] as string;
    if (key === '[]') continue;
    if (path[i + 1] === '[]') {
      if (!Array.isArray(o[key])) o[key] = [];
      o = elementFor(o[key] as unknown[], path[i + 2]);
    } else {
      if (!isObject(o[key])) o[key] = {};
      o = o[key] as Record<string, unknown>;
    }
  }
  const last = path[path.length - 1] as string;
  if (owner === 'Value.Range') {
    o['begin'] = value;
    o['end'] = value;
  } else o[last] = value;
  fillRequired(root);
}

/** Reads the value at `path`, through the same array elements setAt chose. */
function getAt(root: unknown, path: Path): unknown {
  if (path[path.length - 1] === '[]') {
    const list = getAt(root, path.slice(0, -1));
    return Array.isArray(list) ? list[0] : undefined;
  }
  let o: unknown = root;
  for (let i = 0; i < path.length; i++) {
    const key = path[i] as string;
    if (key === '[]') continue;
    if (!isObject(o)) return undefined;
    o = o[key];
    if (path[i + 1] === '[]') {
      if (!Array.isArray(o)) return undefined;
      const next = path[i + 2];
      o = o.find((e) => isObject(e) && (next === undefined || next in e));
    }
  }
  return o;
}

/** Fields a made-up sub-message needs to be one (a health check's HTTP port, a range's end). */
function fillRequired(root: Record<string, unknown>): void {
  const hc = root['health_check'];
  if (isObject(hc) && isObject(hc['http']) && hc['http']['port'] === undefined) hc['http']['port'] = 8080;
  if (isObject(hc) && isObject(hc['tcp']) && hc['tcp']['port'] === undefined) hc['tcp']['port'] = 8080;
  const check = root['check'];
  if (isObject(check) && isObject(check['http']) && check['http']['port'] === undefined) check['http']['port'] = 8080;
  if (isObject(check) && isObject(check['tcp']) && check['tcp']['port'] === undefined) check['tcp']['port'] = 8080;
}

// ---- What the master does with each message's values ----------------------------------------

type MasterSide = { accepted: MasterMessage } | { refused: string };

const FRAMEWORK_ID = 'fw-1';
const AGENT_ID = 'master-1-S0';
const FRAMEWORK: FrameworkInfo = { user: 'root', name: 'wire', id: { value: FRAMEWORK_ID } };

/** A task as a scheduler sends it, with a port range (uint64s) and a kill policy (an int64). */
function baseTask(): Record<string, unknown> {
  return {
    name: 't',
    task_id: { value: 't1' },
    agent_id: { value: AGENT_ID },
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 1 } },
      { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31000 }] } },
    ],
    command: { value: 'true' },
    kill_policy: { grace_period: { nanoseconds: 1_000_000_000 } },
  };
}

/**
 * RUN_TASK's task, as a scheduler's ACCEPT brings it: decoded (parseSchedulerCall), then checked
 * against an offer of the agent (planAccept, the offer holding exactly the task's resources),
 * and sent as the frameworks service sends it.
 */
function runTask(field: IntegerField, value: bigint): MasterSide {
  assert.equal(field.path[0], 'task', `RUN_TASK's ${text(field.path)}: only the task's fields come from a scheduler; add a way in for this one`);
  const task = baseTask();
  setAt(task, field.path.slice(1), value, field.owner);
  const call = parseSchedulerCall(stringifyJson({ framework_id: { value: FRAMEWORK_ID }, type: 'ACCEPT', accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }] } }));
  if (!call.ok) return { refused: call.error.message };
  const infos = call.call.body.accept?.operations?.[0]?.launch?.task_infos ?? [];
  const decoded = infos[0] as TaskInfo;
  const offer: Offer = { id: 'o1', frameworkId: FRAMEWORK_ID, agentId: AGENT_ID, resources: normalizeResources(decoded.resources) };
  const plan = planAccept({ frameworkId: FRAMEWORK_ID, offerIds: ['o1'], offers: new Map([['o1', offer]]), taskInfos: infos, liveTaskIds: new Set() });
  if (plan.kind !== 'LAUNCH') return { refused: plan.message };
  const launched = plan.launches[0];
  if (launched === undefined) return { refused: plan.rejected[0]?.message ?? 'no launch' };
  return { accepted: { type: 'RUN_TASK', framework_id: FRAMEWORK_ID, framework: FRAMEWORK, task: launched } };
}

/** KILL_TASK's kill policy, as a scheduler's KILL brings it (decoded, then clamped as the frameworks service does). */
function killTask(field: IntegerField, value: bigint): MasterSide {
  assert.equal(field.path[0], 'kill_policy', `KILL_TASK's ${text(field.path)}: add a way in for this one`);
  const kill: Record<string, unknown> = { task_id: { value: 't1' }, agent_id: { value: AGENT_ID }, kill_policy: {} };
  setAt(kill, field.path, value, field.owner);
  const call = parseSchedulerCall(stringifyJson({ framework_id: { value: FRAMEWORK_ID }, type: 'KILL', kill }));
  if (!call.ok) return { refused: call.error.message };
  const k = call.call.body.kill;
  assert.ok(k !== undefined);
  const msg: MasterMessage = { type: 'KILL_TASK', framework_id: FRAMEWORK_ID, task_id: k.task_id.value };
  if (k.kill_policy !== undefined) msg.kill_policy = clampKillPolicy(k.kill_policy);
  return { accepted: msg };
}

/**
 * DRAIN's grace, as DRAIN_AGENT brings it: a google.protobuf.Duration (seconds and nanos of
 * the same sign), decoded (parseApiCall, DRAIN_AGENT_CALL, parseDrainConfig), sent as the
 * drain service sends it.
 */
function drain(field: IntegerField, value: bigint): MasterSide {
  assert.equal(text(field.path), 'config.max_grace_period.nanoseconds', `DRAIN's ${text(field.path)}: add a way in for this one`);
  const seconds = value / 1_000_000_000n;
  const nanos = value % 1_000_000_000n;
  const call = parseApiCall(stringifyJson({ type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: AGENT_ID }, max_grace_period: { seconds, nanos } } }), undefined);
  if (!call.ok) return { refused: call.error.message };
  const sub = decodeMessage<Record<string, unknown>>(DRAIN_AGENT_CALL, call.call.body['drain_agent'], 'drain_agent');
  if (!sub.ok) return { refused: sub.error };
  const config = parseDrainConfig(sub.value);
  if (!config.ok) return { refused: config.error.message };
  return { accepted: drainMessage(config.config) };
}

/** REGISTERED: its request_id echoes the agent's REGISTER (as the master decodes it), its max_ping_timeouts is a flag. */
function registered(field: IntegerField, value: bigint): MasterSide {
  const base = { type: 'REGISTERED' as const, request_id: 1, agent_id: AGENT_ID, master_id: 'master-1', ping_interval_ms: 15_000, max_ping_timeouts: 5, capabilities: ['REFUSED'] };
  switch (text(field.path)) {
    case 'request_id': {
      const reg = decodeAgentMessage(stringifyJson({ type: 'REGISTER', request_id: value, agent: { hostname: 'h', ip: '127.0.0.2', port: 5051, resources: [], attributes: [] }, version: '1', capabilities: [], tasks: [], frameworks: [] }));
      if (!reg.ok) return { refused: reg.error };
      assert.equal(reg.message.type, 'REGISTER');
      return { accepted: { ...base, request_id: (reg.message as { request_id: number }).request_id } };
    }
    case 'max_ping_timeouts': {
      const r = resolveMasterConfig([`--max_agent_ping_timeouts=${value}`, '--work_dir=/nonexistent'], {});
      if (r.kind !== 'ok') return { refused: r.kind === 'error' ? r.error : r.kind };
      return { accepted: { ...base, max_ping_timeouts: r.config.maxAgentPingTimeouts } };
    }
    default:
      assert.fail(`REGISTERED's ${text(field.path)}: add a way in for this one`);
  }
}

/** How each message type's values come into the master; a type without one fails the test. */
const MASTER_SIDES: Partial<Record<MasterMessageType, (field: IntegerField, value: bigint) => MasterSide>> = {
  RUN_TASK: runTask,
  KILL_TASK: killTask,
  DRAIN: drain,
  REGISTERED: registered,
};

/** The frame the master's session shell writes for `msg` (master/agent-sessions.ts Session, epoch stamped). */
function masterFrame(msg: MasterMessage): string {
  const frames: string[] = [];
  const socket = { cork: () => {}, uncork: () => {} } as unknown as Duplex;
  const ws = { readyState: 1, send: (data: string) => frames.push(data) } as unknown as WebSocket;
  new Session(1, ws, socket, undefined, { value: '7', field: ',"epoch":"7"}' }).send(msg, true);
  assert.equal(frames.length, 1);
  return frames[0] as string;
}

// ---- The table -------------------------------------------------------------------------------

const INT64_MAX = 2n ** 63n - 1n;
const VALUES: readonly bigint[] = [0n, 1n, 2n ** 31n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n + 1n, INT64_MAX, -1n, -(2n ** 53n) + 1n, -(2n ** 63n), 2n ** 63n, 2n ** 64n];

const asBig = (v: unknown): bigint | undefined => (typeof v === 'bigint' ? v : typeof v === 'number' && Number.isInteger(v) ? BigInt(v) : undefined);

interface Row {
  field: string;
  value: bigint;
  /** What the master put on the wire; undefined when it refused the value. */
  sent: bigint | undefined;
  /** The agent's decoder takes the value (in the master's message, or put into it when the master refused it). */
  agentTakes: boolean;
}

/**
 * Fields whose value comes from the master's own flags, not from a request: the flag's bounds
 * are narrower than the field's type, so the agent takes more than the master ever sends.
 */
const FROM_FLAGS = new Set(['REGISTERED.max_ping_timeouts']);

function runTable(): Row[] {
  const rows: Row[] = [];
  for (const field of integerFields()) {
    const side = MASTER_SIDES[field.message];
    assert.ok(side !== undefined, `${field.message}.${text(field.path)} is an integer field of a master message with no way in described here: add one to MASTER_SIDES`);
    // The message at value 0 (or 1, for a count): what a refused value is put into, to ask the agent about it directly.
    const zero = side(field, 0n);
    const template = 'accepted' in zero ? zero : side(field, 1n);
    assert.ok('accepted' in template, `${field.message}.${text(field.path)} = 0 and 1 are refused by the master: ${'refused' in template ? template.refused : ''}`);
    for (const value of VALUES) {
      const name = `${field.message}.${text(field.path)} = ${value}`;
      const m = side(field, value);
      if ('accepted' in m) {
        const sent = asBig(getAt(m.accepted, field.path));
        assert.ok(sent !== undefined, `${name}: the master's message has no integer there`);
        const d = decodeMasterMessage(masterFrame(m.accepted));
        assert.ok(d.ok, `${name}: the master sent it, the agent refused it: ${d.ok ? '' : d.error}`);
        const got = getAt(d.message, field.path);
        assert.equal(asBig(got), sent, `${name}: the agent read ${String(got)}, the master sent ${sent}`);
        if (field.type === 'int64-exact') assert.equal(typeof got, 'bigint', `${name}: an exact field is a bigint on the agent`);
        rows.push({ field: `${field.message}.${text(field.path)}`, value, sent, agentTakes: true });
      } else {
        // The same value on the wire, in the message the master sends at 0: does the agent's reader take it?
        const wire = structuredClone(template.accepted) as unknown as Record<string, unknown>;
        setAt(wire, field.path, value, field.owner);
        const d = decodeMasterMessage(stringifyJson(wire));
        if (!d.ok) assert.equal(d.refusal?.type, field.message, `${name}: refused, not garbled: ${d.error}`);
        rows.push({ field: `${field.message}.${text(field.path)}`, value, sent: undefined, agentTakes: d.ok });
      }
    }
  }
  return rows;
}

test('every integer field of every master message is found in the descriptions', () => {
  const fields = integerFields().map((f) => `${f.message}.${text(f.path)}:${String(f.type)}`);
  assert.deepEqual(Object.keys(MASTER_MESSAGES), [...MASTER_MESSAGE_TYPES], 'MASTER_MESSAGE_TYPES lists every description');
  // The ones this issue was about, and a few others: the walk reaches into TaskInfo and DrainConfig.
  for (const want of [
    'DRAIN.config.max_grace_period.nanoseconds:int64-exact',
    'RUN_TASK.task.kill_policy.grace_period.nanoseconds:int64',
    'RUN_TASK.task.max_completion_time.nanoseconds:int64',
    'RUN_TASK.task.resources[].ranges.range[].begin:uint64',
    'RUN_TASK.task.health_check.consecutive_failures:uint32',
    'KILL_TASK.kill_policy.grace_period.nanoseconds:int64',
    'REGISTERED.request_id:int64',
  ]) {
    assert.ok(fields.includes(want), `${want} in ${fields.join(', ')}`);
  }
});

test('whatever the master accepts into a master message, the agent reads to the digit; what it refuses, the agent refuses', () => {
  const rows = runTable();
  // One reader, one range: a value the master refuses from a request, the agent refuses on the wire.
  for (const r of rows) {
    if (r.sent === undefined && r.agentTakes && !FROM_FLAGS.has(r.field)) assert.fail(`${r.field} = ${r.value}: the master refuses it, the agent would take it`);
  }
  const accepted = (field: string): bigint[] => rows.filter((r) => r.field === field && r.sent !== undefined).map((r) => r.value);
  const sent = (field: string, value: bigint): bigint | undefined => rows.find((r) => r.field === field && r.value === value)?.sent;

  // DRAIN_AGENT takes any non-negative int64 of nanoseconds (the 136 years among them): all of it reaches the agent.
  assert.deepEqual(accepted('DRAIN.config.max_grace_period.nanoseconds'), [0n, 1n, 2n ** 31n - 1n, 2n ** 32n, 2n ** 53n - 1n, 2n ** 53n + 1n, INT64_MAX]);
  // A scheduler's int64 durations: within ±(2^53-1), both sides (a 400 beyond, from the master; a refusal, from the agent).
  const within53 = [0n, 1n, 2n ** 31n - 1n, 2n ** 32n, 2n ** 53n - 1n, -1n, -(2n ** 53n) + 1n];
  assert.deepEqual(accepted('RUN_TASK.task.kill_policy.grace_period.nanoseconds'), within53);
  assert.deepEqual(accepted('RUN_TASK.task.max_completion_time.nanoseconds'), within53);
  assert.deepEqual(accepted('KILL_TASK.kill_policy.grace_period.nanoseconds'), within53);
  // A negative grace is "at once" (Mesos): the master sends 0, the agent reads 0.
  assert.equal(sent('RUN_TASK.task.kill_policy.grace_period.nanoseconds', -1n), 0n);
  assert.equal(sent('KILL_TASK.kill_policy.grace_period.nanoseconds', -(2n ** 53n) + 1n), 0n);
  // Ports: uint64 within 2^53.
  assert.deepEqual(accepted('RUN_TASK.task.resources[].ranges.range[].begin'), [0n, 1n, 2n ** 31n - 1n, 2n ** 32n, 2n ** 53n - 1n]);
  // The agent's own request id, echoed: as the master read it from REGISTER.
  assert.deepEqual(accepted('REGISTERED.request_id'), within53);
  // A flag's bounds (1 to 1,000,000), within what the agent reads (a uint32).
  assert.deepEqual(accepted('REGISTERED.max_ping_timeouts'), [1n]);
  assert.equal(rows.find((r) => r.field === 'REGISTERED.max_ping_timeouts' && r.value === 2n ** 31n - 1n)?.agentTakes, true);
  assert.ok(rows.length >= 12 * VALUES.length, `${rows.length} rows`);
});

test('an int64 in a field the master passes through (a TaskInfo json field) reaches the agent to the digit', () => {
  const task = baseTask();
  task['discovery'] = { visibility: 'FRAMEWORK', version: INT64_MAX, ports: { ports: [{ number: 2n ** 53n + 1n, protocol: 'tcp' }] } };
  const field: IntegerField = { message: 'RUN_TASK', path: ['task', 'kill_policy', 'grace_period', 'nanoseconds'], type: 'int64', owner: 'DurationInfo' };
  // The task as above, through the same ACCEPT path, with its passthrough field.
  const m = ((): MasterSide => {
    const call = parseSchedulerCall(stringifyJson({ framework_id: { value: FRAMEWORK_ID }, type: 'ACCEPT', accept: { offer_ids: [{ value: 'o1' }], operations: [{ type: 'LAUNCH', launch: { task_infos: [task] } }] } }));
    assert.ok(call.ok);
    const infos = call.call.body.accept?.operations?.[0]?.launch?.task_infos ?? [];
    const offer: Offer = { id: 'o1', frameworkId: FRAMEWORK_ID, agentId: AGENT_ID, resources: normalizeResources((infos[0] as TaskInfo).resources) };
    const plan = planAccept({ frameworkId: FRAMEWORK_ID, offerIds: ['o1'], offers: new Map([['o1', offer]]), taskInfos: infos, liveTaskIds: new Set() });
    assert.equal(plan.kind, 'LAUNCH');
    return { accepted: { type: 'RUN_TASK', framework_id: FRAMEWORK_ID, framework: FRAMEWORK, task: (plan as { launches: TaskInfo[] }).launches[0] as TaskInfo } };
  })();
  assert.ok('accepted' in m);
  const frame = masterFrame(m.accepted);
  assert.match(frame, /"version":9223372036854775807/);
  const d = decodeMasterMessage(frame);
  assert.ok(d.ok, d.ok ? '' : d.error);
  assert.equal(d.message.type, 'RUN_TASK');
  const discovery = (d.message as unknown as { task: Record<string, unknown> }).task['discovery'] as { version: unknown; ports: { ports: Array<{ number: unknown }> } };
  assert.equal(discovery.version, INT64_MAX);
  assert.equal(discovery.ports.ports[0]?.number, 2n ** 53n + 1n);
  assert.equal(asBig(getAt(d.message, field.path)), 1_000_000_000n);
});

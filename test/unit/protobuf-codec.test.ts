/**
 * Protobuf as a second encoding, pure: the walk between the JSON model and the wire
 * (shared/protobuf.ts) against protobufjs' own reflection of the same schema, the codecs at
 * the edge (shared/codec.ts: the same call whichever reads it, Mesos' messages for bytes that
 * are not a call), Accept as libprocess reads it, and the agent's framing (agent/api-framing.ts).
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import { agentCall, agentFraming, type FramingHeaders } from '../../agent/api-framing.js';
import { AGENT_API, JSON_CODEC, MASTER_API, protobufCodec, SCHEDULER_API } from '../../shared/codec.js';
import { acceptsMediaType, answerEncoding } from '../../shared/http.js';
import { callMessage, SCHEDULER_CALL, type CallSpec } from '../../shared/proto.js';
import { decodeProtobuf, encodeProtobuf, messageType, ProtobufEncodeError } from '../../shared/protobuf.js';
import { stringifyJson } from '../../shared/json.js';
import { RecordReader } from '../../shared/recordio.js';

const UUID = Buffer.from('00112233445566778899aabbccddeeff', 'hex').toString('base64');

/** JSON-model values as the decoders and writers hold them, each with its message. */
const SAMPLES: Array<[string, string, Record<string, unknown>]> = [
  ['master GET_HEALTH', 'mesos.v1.master.Call', { type: 'GET_HEALTH' }],
  ['DRAIN_AGENT with a google.protobuf.Duration', 'mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 'a-1' }, max_grace_period: { seconds: 600, nanos: 5 }, mark_gone: true } }],
  [
    'a schedule whose int64 is past 2^53 (a bigint, to the digit)',
    'mesos.v1.master.Call',
    { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'h1', ip: '10.0.0.1' }, { hostname: 'h2' }], unavailability: { start: { nanoseconds: 1443830400000000001n }, duration: { nanoseconds: 3600000000000 } } }] } } },
  ],
  ['a negative int64', 'mesos.v1.master.Call', { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [{ hostname: 'h' }], unavailability: { start: { nanoseconds: -5 } } }] } } }],
  [
    'ACCEPT with a launch: resources (scalar, ranges), bytes, labels, a map, enums',
    'mesos.v1.scheduler.Call',
    {
      framework_id: { value: 'fw' },
      type: 'ACCEPT',
      accept: {
        offer_ids: [{ value: 'o1' }, { value: 'o2' }],
        operations: [
          {
            type: 'LAUNCH',
            launch: {
              task_infos: [
                {
                  name: 'web',
                  task_id: { value: 't1' },
                  agent_id: { value: 'a1' },
                  resources: [
                    { name: 'cpus', type: 'SCALAR', scalar: { value: 0.5 } },
                    { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 31005 }] } },
                  ],
                  command: { value: 'echo hi', shell: true, arguments: ['a', 'b'] },
                  data: Buffer.from('payload é').toString('base64'),
                  labels: { labels: [{ key: 'k', value: 'v' }] },
                  limits: { cpus: { value: 2 }, mem: { value: 64.5 } },
                },
              ],
            },
          },
        ],
        filters: { refuse_seconds: 5 },
      },
    },
  ],
  ['ACKNOWLEDGE with a bytes uuid', 'mesos.v1.scheduler.Call', { framework_id: { value: 'fw' }, type: 'ACKNOWLEDGE', acknowledge: { agent_id: { value: 'a' }, task_id: { value: 't' }, uuid: UUID } }],
  [
    'a scheduler UPDATE event: doubles, enums, bytes',
    'mesos.v1.scheduler.Event',
    { type: 'UPDATE', update: { status: { task_id: { value: 't' }, state: 'TASK_FINISHED', source: 'SOURCE_EXECUTOR', reason: 'REASON_COMMAND_EXECUTOR_FAILED', timestamp: 1700000000.25, uuid: UUID, healthy: false } } },
  ],
  ['an empty string and zeroes are set values', 'mesos.v1.master.Response', { type: 'GET_VERSION', get_version: { version_info: { version: '', build_time: 0 } } }],
];

/** protobufjs' view of bytes: only what was set, int64s as strings, enums and bytes as strings. */
function viaProtobufjs(typeName: string, bytes: Uint8Array): unknown {
  const t = messageType(typeName);
  return t.toObject(t.decode(bytes), { longs: String, enums: String, bytes: String, arrays: false });
}

/** The JSON model with every integer as a string where protobufjs writes int64s so: compare by printing both through JSON with int64s normalised. */
function normalise(v: unknown): unknown {
  return JSON.parse(stringifyJson(v), (_k, x: unknown) => (typeof x === 'string' && /^-?[0-9]+$/.test(x) ? Number(x) : x));
}

describe('the JSON model <-> protobuf, against protobufjs', () => {
  for (const [name, typeName, value] of SAMPLES) {
    test(`${name}: round trip, and protobufjs reads what we write and we read what it writes`, () => {
      const bytes = encodeProtobuf(typeName, value);
      const back = decodeProtobuf(typeName, bytes);
      assert.ok(back.ok, back.ok ? '' : back.error);
      assert.deepEqual(back.value, value);
      // protobufjs reads the same message (int64s compared as numbers: our samples past 2^53 as strings).
      assert.deepEqual(normalise(viaProtobufjs(typeName, bytes)), normalise(value));
      // And our reader takes protobufjs' writing (its own field order, its own encoders).
      const t = messageType(typeName);
      const theirs = t.encode(t.fromObject(JSON.parse(stringifyJson(value), (_k, x: unknown) => x))).finish();
      const ours = decodeProtobuf(typeName, theirs);
      assert.ok(ours.ok, ours.ok ? '' : ours.error);
      assert.deepEqual(normalise(ours.value), normalise(value));
    });
  }

  test('keys the message does not have, and undefined values, are not written', () => {
    const bytes = encodeProtobuf('mesos.v1.master.Response', { type: 'GET_HEALTH', get_health: { healthy: true, drydock_extra: 1 }, maintenance: { mode: 'UP' }, get_version: undefined });
    const back = decodeProtobuf('mesos.v1.master.Response', bytes);
    assert.deepEqual(back, { ok: true, value: { type: 'GET_HEALTH', get_health: { healthy: true } } });
  });

  test('an enum name the schema does not know is left unset, as stout drops it', () => {
    const back = decodeProtobuf('mesos.v1.master.Call', encodeProtobuf('mesos.v1.master.Call', { type: 'NO_SUCH_CALL' }));
    assert.deepEqual(back, { ok: true, value: {} });
  });

  test('a value of the wrong JSON type is a bug of the writer, named by its field', () => {
    assert.throws(() => encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 7 } } }), (e: unknown) => e instanceof ProtobufEncodeError && /drain_agent\.agent_id\.value/.test(e.message));
    assert.throws(() => encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: 'x' }), ProtobufEncodeError);
    assert.throws(() => encodeProtobuf('mesos.v1.master.Call', { type: 'UPDATE_MAINTENANCE_SCHEDULE', update_maintenance_schedule: { schedule: { windows: [{ machine_ids: [], unavailability: { start: { nanoseconds: 1.5 } } }] } } }), /expected an integer/);
  });
});

describe('reading as protobuf does', () => {
  const call = messageType('mesos.v1.master.Call');

  test('unknown field numbers of every wire type are skipped', () => {
    const w = protobuf.Writer.create();
    w.uint32((99 << 3) | 0).uint64(5);
    w.uint32((98 << 3) | 1).double(1.5);
    w.uint32((97 << 3) | 2).string('ignored');
    w.uint32((96 << 3) | 5).float(2);
    w.uint32((1 << 3) | 0).int32(call.lookupEnum('Type').values['GET_STATE'] as number);
    assert.deepEqual(decodeProtobuf('mesos.v1.master.Call', w.finish()), { ok: true, value: { type: 'GET_STATE' } });
  });

  test('an enum number the schema does not know is left unset', () => {
    const w = protobuf.Writer.create();
    w.uint32((1 << 3) | 0).int32(9999);
    assert.deepEqual(decodeProtobuf('mesos.v1.master.Call', w.finish()), { ok: true, value: {} });
  });

  test('a scalar seen twice keeps the last; a message seen twice merges', () => {
    const w = protobuf.Writer.create();
    const dt = call.lookupEnum('Type').values['DRAIN_AGENT'] as number;
    const gh = call.lookupEnum('Type').values['GET_HEALTH'] as number;
    w.uint32(8).int32(gh).uint32(8).int32(dt);
    const drainField = call.fields['drain_agent'] as protobuf.Field;
    w.uint32((drainField.id << 3) | 2).fork().uint32((1 << 3) | 2).fork().uint32(10).string('a').ldelim().ldelim();
    w.uint32((drainField.id << 3) | 2).fork().uint32((3 << 3) | 0).bool(true).ldelim();
    assert.deepEqual(decodeProtobuf('mesos.v1.master.Call', w.finish()), { ok: true, value: { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 'a' }, mark_gone: true } } });
  });

  test('repeated scalars are read packed as well as not', () => {
    const t = messageType('mesos.v1.HealthCheck.HTTPCheckInfo');
    const statuses = (t.fields['statuses'] as protobuf.Field).id;
    const port = (t.fields['port'] as protobuf.Field).id;
    const w = protobuf.Writer.create();
    w.uint32((port << 3) | 0).uint32(80);
    w.uint32((statuses << 3) | 2).fork().uint32(200).uint32(204).ldelim();
    w.uint32((statuses << 3) | 0).uint32(301);
    assert.deepEqual(decodeProtobuf('mesos.v1.HealthCheck.HTTPCheckInfo', w.finish()), { ok: true, value: { port: 80, statuses: [200, 204, 301] } });
  });

  test('what does not parse: garbage, truncation, a missing required field, too deep, too long', () => {
    const drain = encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 'abc' } } });
    const cases: Array<[string, Uint8Array, RegExp]> = [
      ['garbage', Buffer.from('not protobuf at all'), /./],
      ['truncated', drain.subarray(0, drain.length - 1), /./],
      ['a wire type 7', Buffer.from([0x0f]), /wire type/],
      ['field number 0', Buffer.from([0x00, 0x01]), /field number 0/],
      ['missing required', encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: { mark_gone: true } }), /missing required field drain_agent\.agent_id/],
    ];
    for (const [name, bytes, why] of cases) {
      const r = decodeProtobuf('mesos.v1.master.Call', bytes);
      assert.equal(r.ok, false, name);
      if (!r.ok) assert.match(r.error, why, name);
    }
    const limits = { maxDepth: 2, maxStringLength: 4, maxArrayLength: 1 };
    assert.match((decodeProtobuf('mesos.v1.master.Call', drain, limits) as { error: string }).error, /deeper than 2/);
    assert.match((decodeProtobuf('mesos.v1.master.Call', encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 'abcde' } } }), { ...limits, maxDepth: 10 }) as { error: string }).error, /longer than 4/);
    const two = encodeProtobuf('mesos.v1.master.Call', { type: 'START_MAINTENANCE', start_maintenance: { machines: [{ hostname: 'a' }, { hostname: 'b' }] } });
    assert.match((decodeProtobuf('mesos.v1.master.Call', two, { ...limits, maxDepth: 10 }) as { error: string }).error, /more than 1 elements/);
  });
});

describe('Accept, as libprocess reads it', () => {
  const cases: Array<[string | undefined, string, boolean]> = [
    [undefined, 'application/json', true],
    ['', 'application/json', true],
    ['application/json', 'application/json', true],
    ['APPLICATION/JSON', 'application/json', true],
    ['application/x-protobuf', 'application/json', false],
    ['application/x-protobuf', 'application/x-protobuf', true],
    ['application/*', 'application/x-protobuf', true],
    ['*/*', 'application/x-protobuf', true],
    ['text/html', 'application/json', false],
    // The most specific range decides: q=0 on the type itself refuses, whatever */* says.
    ['application/json;q=0, */*', 'application/json', false],
    ['application/json;q=0, */*', 'application/x-protobuf', true],
    ['application/json; q=0.5', 'application/json', true],
    ['application/*;q=0', 'application/json', false],
    ['text/html, */*;q=0.1', 'application/json', true],
    ['application/json;q=x', 'application/json', false],
  ];
  for (const [accept, type, want] of cases) {
    test(`${accept ?? '(none)'} allows ${type}: ${want}`, () => assert.equal(acceptsMediaType(accept, type), want));
  }

  test('the answer is JSON when JSON is allowed, else protobuf, else 406', () => {
    assert.equal(answerEncoding(undefined), 'json');
    assert.equal(answerEncoding('application/x-protobuf, application/json'), 'json');
    assert.equal(answerEncoding('application/x-protobuf'), 'protobuf');
    assert.equal(answerEncoding('application/json;q=0, application/x-protobuf'), 'protobuf');
    const refused = answerEncoding('text/html');
    assert.ok(typeof refused !== 'string');
    assert.equal(refused.status, 406);
    assert.equal(refused.message, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'");
  });
});

describe('the codecs: one call whichever reads it', () => {
  const spec: CallSpec<string> = { message: callMessage('master.Call', ['GET_HEALTH', 'DRAIN_AGENT'], ['drain_agent']), requiredSub: { DRAIN_AGENT: 'drain_agent' }, invalid: 'CALL_INVALID' };
  const schedulerSpec: CallSpec<string> = { message: SCHEDULER_CALL, requiredSub: { ACKNOWLEDGE: 'acknowledge' }, invalid: 'SCHEDULER_CALL_INVALID' };

  test('a protobuf body decodes to what its JSON twin decodes to', () => {
    for (const [, typeName, value] of SAMPLES.filter(([, t]) => t.endsWith('.Call'))) {
      const api = typeName.includes('scheduler') ? SCHEDULER_API : MASTER_API;
      const s = typeName.includes('scheduler') ? schedulerSpec : spec;
      const viaJson = JSON_CODEC.decodeCall(stringifyJson(value), s);
      const viaProtobuf = protobufCodec(api).decodeCall(encodeProtobuf(typeName, value), s);
      assert.deepEqual(viaProtobuf, viaJson);
    }
  });

  test('the errors are the same after the encoding is read; bytes that are not a Call get Mesos\' words', () => {
    const codec = protobufCodec(MASTER_API);
    assert.equal(codec.decodeCall(Buffer.from('zzz'), spec).ok, false);
    const bad = codec.decodeCall(Buffer.from([0x0f]), spec);
    assert.ok(!bad.ok && bad.error.status === 400 && bad.error.message === 'Failed to parse body into Call protobuf');
    const agentBad = protobufCodec(AGENT_API).decodeCall(Buffer.from([0x0f]), spec);
    assert.ok(!agentBad.ok && agentBad.error.message === 'Failed to parse body into a protobuf object');
    const noType = codec.decodeCall(Buffer.alloc(0), spec);
    assert.ok(!noType.ok && noType.error.message === "Failed to validate master::Call: Expecting 'type' to be present");
    const noSub = codec.decodeCall(encodeProtobuf('mesos.v1.master.Call', { type: 'DRAIN_AGENT' }), spec);
    assert.ok(!noSub.ok && noSub.error.message === "Failed to validate master::Call: Expecting 'drain_agent' to be present");
  });

  test('records: RecordIO of the event message; an event type the API does not know is not written in protobuf', () => {
    const codec = protobufCodec(MASTER_API);
    const framed = codec.record({ type: 'HEARTBEAT' });
    assert.ok(framed !== undefined);
    const [record] = new RecordReader().pushBytes(framed);
    assert.ok(record !== undefined);
    assert.deepEqual(decodeProtobuf('mesos.v1.master.Event', record), { ok: true, value: { type: 'HEARTBEAT' } });
    assert.equal(codec.record({ type: 'AGENT_UPDATED', agent_updated: {} }), undefined);
    assert.equal(JSON_CODEC.record({ type: 'AGENT_UPDATED' })?.toString(), '24\n{"type":"AGENT_UPDATED"}');
  });
});

describe('the agent API framing (Mesos\' agent order and words)', () => {
  const h = (over: Partial<FramingHeaders>): FramingHeaders => ({ method: 'POST', contentType: 'application/json', messageContentType: undefined, accept: undefined, messageAccept: undefined, ...over });
  const cases: Array<[string, Partial<FramingHeaders>, number | string]> = [
    ['JSON both ways', {}, 'json>json'],
    ['protobuf both ways', { contentType: 'application/x-protobuf', accept: 'application/x-protobuf' }, 'protobuf>protobuf'],
    ['protobuf in, JSON out when both are allowed', { contentType: 'application/x-protobuf', accept: 'application/x-protobuf, application/json' }, 'protobuf>json'],
    ['GET', { method: 'GET' }, 405],
    ['no Content-Type', { contentType: undefined }, 400],
    ['text/xml', { contentType: 'text/xml' }, "415 Expecting 'Content-Type' of application/json or application/x-protobuf or application/recordio"],
    ['Message-Content-Type on a plain request', { messageContentType: 'application/json' }, "415 Expecting 'Message-Content-Type' to be not set for non-streaming requests"],
    ['RecordIO without Message-Content-Type', { contentType: 'application/recordio' }, "400 Expecting 'Message-Content-Type' to be set for streaming requests"],
    ['RecordIO of text', { contentType: 'application/recordio', messageContentType: 'text/plain' }, "415 Expecting 'Message-Content-Type' of application/json or application/x-protobuf"],
    ['RecordIO of protobuf', { contentType: 'application/recordio', messageContentType: 'application/x-protobuf' }, 'stream:protobuf>json'],
    ['Accept text/html', { accept: 'text/html' }, '406 Expecting \'Accept\' to allow application/json or application/x-protobuf or application/recordio'],
    ['Message-Accept on a plain answer', { messageAccept: 'application/json' }, "406 Expecting 'Message-Accept' to be not set for non-streaming responses"],
    ['a RecordIO answer of protobuf', { accept: 'application/recordio', messageAccept: 'application/x-protobuf' }, 'json>stream:protobuf'],
    ['a RecordIO answer of text', { accept: 'application/recordio', messageAccept: 'text/html' }, "406 Expecting 'Message-Accept' to allow application/json or application/x-protobuf"],
  ];
  for (const [name, over, want] of cases) {
    test(name, () => {
      const f = agentFraming(h(over));
      if ('code' in f) {
        if (typeof want === 'number') assert.equal(f.status, want);
        else assert.equal(`${f.status} ${f.message}`, want);
        return;
      }
      const side = (streaming: boolean, enc: string): string => `${streaming ? 'stream:' : ''}${enc}`;
      assert.equal(`${side(f.streamingRequest, f.request.encoding)}>${side(f.streamingAnswer, f.answer.encoding)}`, want);
    });
  }

  const spec: CallSpec<string> = { message: callMessage('agent.Call', ['GET_HEALTH', 'ATTACH_CONTAINER_INPUT', 'ATTACH_CONTAINER_OUTPUT'], []), requiredSub: {}, invalid: 'AGENT_CALL_INVALID' };
  const framing = (over: Partial<FramingHeaders>) => {
    const f = agentFraming(h(over));
    assert.ok(!('code' in f));
    return f;
  };

  test('a streaming request: its first record is the call; streaming where the call has none is refused', () => {
    const pb = encodeProtobuf('mesos.v1.agent.Call', { type: 'GET_HEALTH' });
    const body = Buffer.concat([Buffer.from(`${pb.length}\n`), pb, Buffer.from('5\nrest!')]);
    const streamed = agentCall(framing({ contentType: 'application/recordio', messageContentType: 'application/x-protobuf' }), body, spec);
    assert.ok(!streamed.ok);
    assert.equal(streamed.error.message, "Streaming 'Content-Type' application/recordio is not supported for GET_HEALTH call");
    const attach = encodeProtobuf('mesos.v1.agent.Call', { type: 'ATTACH_CONTAINER_INPUT' });
    const ok = agentCall(framing({ contentType: 'application/recordio', messageContentType: 'application/x-protobuf' }), Buffer.concat([Buffer.from(`${attach.length}\n`), attach]), spec);
    assert.ok(ok.ok && ok.type === 'ATTACH_CONTAINER_INPUT');
    const empty = agentCall(framing({ contentType: 'application/recordio', messageContentType: 'application/json' }), Buffer.from('12\n{"ty'), spec);
    assert.ok(!empty.ok && empty.error.message === 'Received EOF while reading request body');
    const plainAttach = agentCall(framing({}), Buffer.from('{"type":"ATTACH_CONTAINER_INPUT"}'), spec);
    assert.ok(!plainAttach.ok && plainAttach.error.message === "Expecting 'Content-Type' to be application/recordio for ATTACH_CONTAINER_INPUT call");
    const streamedAnswer = agentCall(framing({ accept: 'application/recordio' }), Buffer.from('{"type":"GET_HEALTH"}'), spec);
    assert.ok(!streamedAnswer.ok && streamedAnswer.error.status === 406 && streamedAnswer.error.message === 'Streaming response is not supported for GET_HEALTH call');
    const output = agentCall(framing({ accept: 'application/recordio' }), Buffer.from('{"type":"ATTACH_CONTAINER_OUTPUT"}'), spec);
    assert.ok(output.ok);
  });
});

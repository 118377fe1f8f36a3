/**
 * Operator API framing and call parsing, pure: the checks of reference §0.3 in their order,
 * with the exact status codes and messages. Also the master config's flag handling.
 */
import { test, describe } from 'node:test';
import assert from 'node:assert/strict';
import { parseApiCall } from '../../master/api/operator-call.js';
import { ipToNetworkUint32 } from '../../master/process/master-info.js';
import { acceptsJson, checkApiHeaders } from '../../shared/http.js';
import { resolveMasterConfig } from '../../master/process/config.js';
import { closeReason } from '../../shared/protocol.js';

describe('checkApiHeaders', () => {
  const cases: Array<[string, string | undefined, number | undefined, string?]> = [
    ['POST', 'application/json', undefined],
    ['POST', 'application/json; charset=utf-8', undefined],
    ['POST', 'Application/JSON', undefined],
    ['POST', 'application/x-www-form-urlencoded', undefined],
    ['GET', 'application/json', 405, "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'GET'."],
    ['PUT', undefined, 405, "405 Method Not Allowed. Expecting one of { 'POST' }, but received 'PUT'."],
    ['POST', undefined, 400, "Expecting 'Content-Type' to be present"],
    ['POST', '', 400, "Expecting 'Content-Type' to be present"],
    ['POST', 'text/plain', 415, "Expecting 'Content-Type' of application/json or application/x-protobuf"],
    ['POST', 'application/x-protobuf', undefined],
  ];
  for (const [method, ct, status, message] of cases) {
    test(`${method} ${ct ?? '(no content type)'} -> ${status ?? 'ok'}`, () => {
      const e = checkApiHeaders(method, ct);
      assert.equal(e?.status, status);
      assert.equal(e?.message, message);
    });
  }
});

describe('parseApiCall', () => {
  const cases: Array<[string, string | undefined, number | string, string?]> = [
    ['{"type":"GET_HEALTH"}', undefined, 'GET_HEALTH'],
    ['{"type":"GET_AGENTS","whatever":{"x":1},"max_grace_period":{"seconds":5}}', undefined, 'GET_AGENTS'],
    ['{"type":"GET_HEALTH"}', 'application/json', 'GET_HEALTH'],
    ['{"type":"GET_HEALTH"}', 'text/html, */*;q=0.1', 'GET_HEALTH'],
    ['{"type":', undefined, 400, 'Failed to parse body into JSON: '],
    ['', undefined, 400, 'Failed to parse body into JSON: '],
    ['[1,2]', undefined, 400, 'Failed to convert JSON into Call protobuf: Expecting a JSON object'],
    ['"GET_HEALTH"', undefined, 400, 'Failed to convert JSON into Call protobuf: Expecting a JSON object'],
    ['{"type":7}', undefined, 400, "Failed to convert JSON into Call protobuf: Not expecting a JSON number for field 'type'"],
    ['{"type":{"a":1}}', undefined, 400, "Failed to convert JSON into Call protobuf: Not expecting a JSON object for field 'type'"],
    ['{}', undefined, 400, "Failed to validate master::Call: Expecting 'type' to be present"],
    ['{"type":null}', undefined, 400, "Failed to validate master::Call: Expecting 'type' to be present"],
    ['{"type":"NO_SUCH_CALL"}', undefined, 400, "Failed to validate master::Call: Expecting 'type' to be present"],
    ['{"type":"DRAIN_AGENT"}', undefined, 400, "Failed to validate master::Call: Expecting 'drain_agent' to be present"],
    ['{"type":"DRAIN_AGENT","drain_agent":"x"}', undefined, 400, "Failed to convert JSON into Call protobuf: Not expecting a JSON string for field 'drain_agent'"],
    ['{"type":"GET_HEALTH"}', 'text/html', 406, "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'"],
    ['{"type":"GET_HEALTH"}', 'application/json;q=0', 406],
    // Validation (400) comes before Accept (406), which comes before UNKNOWN (501).
    ['{}', 'text/html', 400],
    ['{"type":"UNKNOWN"}', 'text/html', 406],
    ['{"type":"UNKNOWN"}', undefined, 501, 'Call type UNKNOWN is not supported'],
  ];
  for (const [body, accept, want, message] of cases) {
    test(`${body} (accept ${accept ?? 'none'}) -> ${want}`, () => {
      const r = parseApiCall(body, accept);
      if (typeof want === 'string') {
        assert.ok(r.ok, r.ok ? '' : r.error.message);
        assert.equal(r.call.type, want);
        return;
      }
      assert.ok(!r.ok, 'expected an error');
      assert.equal(r.error.status, want);
      if (message !== undefined) assert.ok(r.error.message.startsWith(message), r.error.message);
    });
  }

  test('int64 values in the body are kept exactly; keys that are not master::Call fields are dropped', () => {
    const r = parseApiCall('{"type":"UPDATE_MAINTENANCE_SCHEDULE","update_maintenance_schedule":{"schedule":{"windows":[{"unavailability":{"start":{"nanoseconds":1443830400000000001}}}]}},"x":{"nanoseconds":1}}', undefined);
    assert.ok(r.ok);
    assert.deepEqual(r.call.body['update_maintenance_schedule'], { schedule: { windows: [{ unavailability: { start: { nanoseconds: 1443830400000000001n } } }] } });
    assert.equal(r.call.body['x'], undefined);
  });
});

test('acceptsJson', () => {
  assert.equal(acceptsJson(undefined), true);
  assert.equal(acceptsJson('*/*'), true);
  assert.equal(acceptsJson('application/*'), true);
  assert.equal(acceptsJson('application/x-protobuf'), false);
});

test('MasterInfo.ip is the uint32 in network byte order', () => {
  assert.equal(ipToNetworkUint32('127.0.0.1'), 16777343);
  assert.equal(ipToNetworkUint32('10.0.0.1'), 16777226);
  assert.equal(ipToNetworkUint32('not-an-ip'), 0);
});

test('close reasons are cut to 123 bytes without splitting a character', () => {
  assert.equal(closeReason('short'), 'short');
  assert.equal(Buffer.byteLength(closeReason('x'.repeat(500))), 123);
  const cut = closeReason('é'.repeat(100));
  assert.ok(Buffer.byteLength(cut) <= 123);
  assert.ok(!cut.includes('\uFFFD'));
});

describe('master config', () => {
  test('defaults follow Mesos', () => {
    const r = resolveMasterConfig([], {});
    assert.equal(r.kind, 'ok');
    if (r.kind !== 'ok') return;
    assert.equal(r.config.ip, '0.0.0.0');
    assert.equal(r.config.port, 5050);
    assert.equal(r.config.workDir, '/var/lib/drydock/master');
    assert.equal(r.config.agentPingTimeoutMs, 15_000);
    assert.equal(r.config.maxAgentPingTimeouts, 5);
    assert.equal(r.config.agentReregisterTimeoutMs, 600_000);
    assert.deepEqual(r.config.flags.find((f) => f.name === 'agent_ping_timeout'), { name: 'agent_ping_timeout', value: '15secs' });
    assert.deepEqual(r.config.flags.find((f) => f.name === 'agent_reregister_timeout'), { name: 'agent_reregister_timeout', value: '10mins' });
  });

  test('flags beat the environment, which beats defaults', () => {
    const r = resolveMasterConfig(['--port=6060'], { DRYDOCK_PORT: '7070', DRYDOCK_AGENT_PING_TIMEOUT: '200ms' });
    assert.ok(r.kind === 'ok');
    assert.equal(r.config.port, 6060);
    assert.equal(r.config.agentPingTimeoutMs, 200);
  });

  const bad: Array<[string[], Record<string, string>, RegExp]> = [
    [['--nope=1'], {}, /--nope/],
    [['--port=http'], {}, /--port/],
    [['--port=70000'], {}, /--port/],
    [['--agent_ping_timeout=15'], {}, /--agent_ping_timeout/],
    [['--agent_ping_timeout=0secs'], {}, /--agent_ping_timeout.*greater than zero/],
    [['--log_level=loud'], {}, /--log_level/],
    [[], { DRYDOCK_MAX_AGENT_PING_TIMEOUTS: 'many' }, /DRYDOCK_MAX_AGENT_PING_TIMEOUTS/],
  ];
  for (const [argv, env, pattern] of bad) {
    test(`rejects ${argv.join(' ') || JSON.stringify(env)}`, () => {
      const r = resolveMasterConfig(argv, env);
      assert.equal(r.kind, 'error');
      if (r.kind === 'error') assert.match(r.error, pattern);
    });
  }
});

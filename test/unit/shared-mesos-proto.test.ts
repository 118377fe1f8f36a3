/**
 * Drydock's description of Mesos 1.x's v1 messages (shared/mesos-proto) loads into one Root
 * with every type resolved, covers what the APIs carry, and states the facts Drydock's
 * answers depend on. (Its equality with Mesos' own files, fact by fact, is checked by
 * scripts/mesos-proto-check.ts against a Mesos checkout.)
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import protobuf from 'protobufjs';
import type { NamespaceBase, Type } from 'protobufjs';
import { MESOS_API_MESSAGES, MESOS_PROTO_FILES, mesosSchema } from '../../shared/mesos-proto/schema.js';

/** Every message and enum under `mesos.`, by full name. */
function mesosTypes(): Map<string, Type | protobuf.Enum> {
  const out = new Map<string, Type | protobuf.Enum>();
  const walk = (ns: NamespaceBase): void => {
    for (const n of ns.nestedArray) {
      if ((n instanceof protobuf.Type || n instanceof protobuf.Enum) && n.fullName.startsWith('.mesos.')) out.set(n.fullName.slice(1), n);
      if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) walk(n);
    }
  };
  walk(mesosSchema());
  return out;
}

test('the schema parses once, resolves every type, and is cached', () => {
  const root = mesosSchema();
  assert.equal(mesosSchema(), root);
  for (const name of MESOS_API_MESSAGES) assert.ok(root.lookupType(name), name);
  const unresolved: string[] = [];
  for (const t of mesosTypes().values()) {
    if (!(t instanceof protobuf.Type)) continue;
    for (const f of t.fieldsArray) {
      const scalar = ['double', 'float', 'int32', 'uint32', 'sint32', 'fixed32', 'sfixed32', 'int64', 'uint64', 'sint64', 'fixed64', 'sfixed64', 'bool', 'string', 'bytes'].includes(f.type);
      if (!scalar && f.resolvedType === null) unresolved.push(`${t.fullName}.${f.name}: ${f.type}`);
    }
  }
  assert.deepEqual(unresolved, []);
});

test("the description covers Mesos' seven packages whole: 328 messages, 48 enums, 1144 fields, 412 enum values", () => {
  // The figures of Mesos 1.x's files (every message of the packages, not only the reachable
  // ones); a change to the description that drops or adds anything shows here.
  const types = [...mesosTypes().values()];
  const messages = types.filter((t): t is Type => t instanceof protobuf.Type);
  const enums = types.filter((t): t is protobuf.Enum => t instanceof protobuf.Enum);
  assert.equal(messages.length, 328);
  assert.equal(enums.length, 48);
  assert.equal(messages.reduce((n, t) => n + t.fieldsArray.length, 0), 1144);
  assert.equal(enums.reduce((n, e) => n + Object.keys(e.values).length, 0), 412);
  assert.deepEqual(
    MESOS_PROTO_FILES.map((f) => [f.name, /^package ([\w.]+);$/m.exec(f.text)?.[1]]),
    [
      ['mesos/v1/mesos.proto', 'mesos.v1'],
      ['mesos/v1/allocator/allocator.proto', 'mesos.v1.allocator'],
      ['mesos/v1/maintenance/maintenance.proto', 'mesos.v1.maintenance'],
      ['mesos/v1/quota/quota.proto', 'mesos.v1.quota'],
      ['mesos/v1/scheduler/scheduler.proto', 'mesos.v1.scheduler'],
      ['mesos/v1/master/master.proto', 'mesos.v1.master'],
      ['mesos/v1/agent/agent.proto', 'mesos.v1.agent'],
    ],
  );
});

test('every message reachable from the API messages is in the schema', () => {
  const seen = new Set<string>();
  const queue: Type[] = MESOS_API_MESSAGES.map((n) => mesosSchema().lookupType(n));
  for (let t = queue.pop(); t !== undefined; t = queue.pop()) {
    if (seen.has(t.fullName)) continue;
    seen.add(t.fullName);
    for (const f of t.fieldsArray) if (f.resolvedType instanceof protobuf.Type) queue.push(f.resolvedType);
  }
  // Reachable: all but a handful (executor-side and flag-side messages no API message carries).
  assert.ok(seen.size > 300, `${seen.size} messages reachable`);
  assert.ok(seen.has('.mesos.v1.master.Response.GetAgents.Agent'));
  assert.ok(seen.has('.mesos.v1.CSIPluginInfo'));
  assert.ok(seen.has('.mesos.v1.scheduler.OfferConstraints'));
});

test("the facts Drydock's answers depend on", () => {
  const root = mesosSchema();
  const field = (type: string, name: string): protobuf.Field => root.lookupType(type).fields[name] ?? assert.fail(`${type}.${name} is missing`);
  // Not fields of Mesos' messages: Drydock must not write them under these names.
  assert.equal(root.lookupType('mesos.v1.AgentInfo').fields['checkpoint'], undefined);
  assert.equal(root.lookupType('mesos.v1.master.Response.GetAgents.Agent').fields['maintenance'], undefined);
  assert.equal(root.lookupType('mesos.v1.ResourceStatistics').fields['cpu_usage_percent'], undefined);
  // Declared defaults, which Mesos' JSON writer outputs when the field is unset.
  assert.equal(field('mesos.v1.CommandInfo', 'shell').options?.['default'], true);
  assert.equal(field('mesos.v1.AgentInfo', 'port').options?.['default'], 5051);
  assert.equal(field('mesos.v1.MasterInfo', 'port').options?.['default'], 5050);
  assert.equal(field('mesos.v1.MasterInfo', 'port').required, true);
  assert.equal(field('mesos.v1.Filters', 'refuse_seconds').options?.['default'], 5);
  assert.equal(field('mesos.v1.FrameworkInfo', 'failover_timeout').options?.['default'], 0);
  // Deprecated with a default: Mesos' writer leaves it out.
  assert.deepEqual(field('mesos.v1.FrameworkInfo', 'role').options, { default: '*', deprecated: true });
  // Numbers and types a codec relies on.
  assert.deepEqual([field('mesos.v1.TimeInfo', 'nanoseconds').type, field('mesos.v1.TimeInfo', 'nanoseconds').id], ['int64', 1]);
  assert.equal(field('mesos.v1.master.Call.DrainAgent', 'max_grace_period').resolvedType?.fullName, '.google.protobuf.Duration');
  assert.equal(field('mesos.v1.DrainConfig', 'max_grace_period').resolvedType?.fullName, '.mesos.v1.DurationInfo');
  assert.equal(root.lookupEnum('mesos.v1.master.Event.Type').values['AGENT_UPDATED'], undefined, 'no such operator event in Mesos');
  assert.equal(root.lookupEnum('mesos.v1.master.Call.Type').values['DRAIN_AGENT'], 37);
  // A relative name that must not resolve to the nearer scope's namesake.
  assert.equal(field('mesos.v1.scheduler.Call.Request', 'requests').resolvedType?.fullName, '.mesos.v1.Request');
});

test('the proto text carries no comments (none of Mesos\' prose)', () => {
  for (const f of MESOS_PROTO_FILES) assert.doesNotMatch(f.text, /\/\/|\/\*/, f.name);
});

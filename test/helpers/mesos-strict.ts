/**
 * A strict reader of Mesos' JSON, for tests: reads a value as one of Mesos 1.x's v1 messages
 * (shared/mesos-proto) the way a strict client does (Google's `json_format.Parse` with unknown
 * fields rejected, Java's JsonFormat, protobufjs with a check of every key), and lists every
 * deviation with its path (`get_agents.agents[0].agent_info.checkpoint`).
 *
 * It reads JSON as Mesos writes it (stout's writer): snake_case field names, int64s as JSON
 * numbers, enums by name, bytes as base64, repeated fields as arrays, maps and messages as
 * objects, and only set fields (never `null`). Beyond that it accepts what Google's reader
 * accepts and a Mesos-shaped answer may still carry: integers as bigints (parseJson keeps
 * int64s past 2^53 exact) or numeric strings, doubles as numeric strings or `"NaN"`,
 * `"Infinity"`, `"-Infinity"`.
 *
 * Where it is stricter than Google's reader, on purpose (the cross-check test holds these):
 * camelCase field names (Google accepts `agentInfo`; Mesos never writes it), `null` (Google
 * reads it as unset; Mesos never writes it), enums as numbers, and bytes that are not padded
 * standard base64 (Google's decoder drops stray characters), and an empty array for a message
 * (Google's Python reader walks it as an object's keys). And where it differs: a
 * `google.protobuf.Duration` (only DRAIN_AGENT's max_grace_period, a request) is read as the
 * message Mesos reads and writes (`{"seconds": 600}`), where Google wants `"600s"`.
 */

import protobuf from 'protobufjs';
import type { Enum, Field, FieldBase, MapField, Type } from 'protobufjs';
import { mesosSchema } from '../../shared/mesos-proto/schema.js';

/** Inclusive bounds of each integer type. */
const INTEGER_RANGES: Readonly<Record<string, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  sint32: [-(2n ** 31n), 2n ** 31n - 1n],
  sfixed32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  fixed32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  sint64: [-(2n ** 63n), 2n ** 63n - 1n],
  sfixed64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
  fixed64: [0n, 2n ** 64n - 1n],
};

/** Base64 as Mesos writes it (stout's encoder): the standard alphabet, padded. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const INTEGER_STRING = /^-?[0-9]+$/;
const NUMBER_STRING = /^-?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** A value as a deviation names it: short, never the whole thing. */
function shown(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'bigint') return v.toString();
  const s = JSON.stringify(v);
  return s.length > 40 ? `${s.slice(0, 37)}...` : s;
}

const nameOf = (t: Type | Enum): string => t.fullName.replace(/^\./, '');
const child = (path: string, key: string): string => (path === '' ? key : `${path}.${key}`);
const at = (path: string): string => (path === '' ? '(top level)' : path);

/**
 * Reads `json` (a parsed JSON value: objects, arrays, strings, numbers, bigints, booleans)
 * as the Mesos v1 message `typeName` (`mesos.v1.master.Response`) and returns the deviations,
 * each `<path>: <what>`, or none when a strict client reads it cleanly. Throws when
 * `typeName` is not a message of the schema (a bug in the test).
 */
export function readStrict(typeName: string, json: unknown): string[] {
  const type = mesosSchema().lookupType(typeName);
  const out: string[] = [];
  readMessage(type, json, '', out);
  return out;
}

function readMessage(type: Type, value: unknown, path: string, out: string[]): void {
  if (!isObject(value)) {
    out.push(`${at(path)}: wrong JSON type: expected an object (${nameOf(type)}), got ${shown(value)}`);
    return;
  }
  for (const [key, v] of Object.entries(value)) {
    const field: Field | undefined = type.fields[key];
    const here = child(path, key);
    if (field === undefined) {
      out.push(`${here}: unknown field of ${nameOf(type)}`);
      continue;
    }
    if (v === null) {
      out.push(`${here}: wrong JSON type: null (Mesos writes set fields only)`);
      continue;
    }
    if (field instanceof protobuf.MapField) readMap(field, v, here, out);
    else if (field.repeated) {
      if (!Array.isArray(v)) {
        out.push(`${here}: wrong JSON type: expected an array, got ${shown(v)}`);
        continue;
      }
      v.forEach((x, i) => readValue(field, x, `${here}[${i}]`, out));
    } else readValue(field, v, here, out);
  }
  for (const oneof of type.oneofsArray) {
    const set = oneof.oneof.filter((name) => value[name] !== undefined);
    if (set.length > 1) out.push(`${at(path)}: more than one field of oneof '${oneof.name}' of ${nameOf(type)}: ${set.join(', ')}`);
  }
  for (const field of type.fieldsArray) {
    if (field.required && value[field.name] === undefined) out.push(`${child(path, field.name)}: missing required field of ${nameOf(type)}`);
  }
}

function readMap(field: MapField, value: unknown, path: string, out: string[]): void {
  if (!isObject(value)) {
    out.push(`${path}: wrong JSON type: expected an object (a map), got ${shown(value)}`);
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    const here = `${path}[${JSON.stringify(k)}]`;
    const range = INTEGER_RANGES[field.keyType];
    if (field.keyType === 'bool' && k !== 'true' && k !== 'false') out.push(`${here}: wrong JSON type: a bool map key must be "true" or "false"`);
    else if (range !== undefined) readInteger(field.keyType, range, k, here, out);
    if (v === null) out.push(`${here}: wrong JSON type: null (Mesos writes set fields only)`);
    else readValue(field, v, here, out);
  }
}

/** One value of `field` (one element when it is repeated). */
function readValue(field: FieldBase, v: unknown, path: string, out: string[]): void {
  const resolved = field.resolvedType;
  if (resolved instanceof protobuf.Type) return readMessage(resolved, v, path, out);
  if (resolved instanceof protobuf.Enum) {
    if (typeof v !== 'string') out.push(`${path}: wrong JSON type: expected the name of a ${nameOf(resolved)} value, got ${shown(v)}`);
    else if (resolved.values[v] === undefined) out.push(`${path}: unknown enum name ${shown(v)} of ${nameOf(resolved)}`);
    return;
  }
  const range = INTEGER_RANGES[field.type];
  if (range !== undefined) return readInteger(field.type, range, v, path, out);
  switch (field.type) {
    case 'string':
      if (typeof v !== 'string') out.push(`${path}: wrong JSON type: expected a string, got ${shown(v)}`);
      return;
    case 'bytes':
      if (typeof v !== 'string') out.push(`${path}: wrong JSON type: expected base64 bytes (a string), got ${shown(v)}`);
      else if (!BASE64.test(v)) out.push(`${path}: wrong JSON type: ${shown(v)} is not padded base64`);
      return;
    case 'bool':
      if (typeof v !== 'boolean') out.push(`${path}: wrong JSON type: expected true or false, got ${shown(v)}`);
      return;
    case 'double':
    case 'float': {
      const ok =
        (typeof v === 'number' && Number.isFinite(v)) ||
        typeof v === 'bigint' ||
        (typeof v === 'string' && (NUMBER_STRING.test(v) || v === 'NaN' || v === 'Infinity' || v === '-Infinity'));
      if (!ok) out.push(`${path}: wrong JSON type: expected a number, got ${shown(v)}`);
      return;
    }
    default:
      throw new Error(`the strict reader does not know the proto type ${field.type} (${path})`);
  }
}

function readInteger(type: string, [min, max]: readonly [bigint, bigint], v: unknown, path: string, out: string[]): void {
  let n: bigint;
  if (typeof v === 'bigint') n = v;
  else if (typeof v === 'number' && Number.isInteger(v)) n = BigInt(v);
  else if (typeof v === 'string' && INTEGER_STRING.test(v)) n = BigInt(v);
  else {
    out.push(`${path}: wrong JSON type: expected an integer (${type}), got ${shown(v)}`);
    return;
  }
  if (n < min || n > max) out.push(`${path}: out-of-range integer ${n} for ${type}`);
}

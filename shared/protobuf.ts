/**
 * Protobuf, the second encoding of Mesos' v1 APIs, over Drydock's description of Mesos' v1
 * messages (./mesos-proto, one protobufjs Root). It translates between the binary wire and the
 * JSON model every other part of Drydock already speaks, so protobuf is a codec at the edge
 * and not a second API:
 * - a request body decodes to the object a JSON body parses to (stout's JSON model: snake_case
 *   keys, int64s as numbers, or bigints beyond 2^53, enums by name, `bytes` as base64 strings,
 *   maps as objects, `google.protobuf.Duration` as `{seconds, nanos}`), so the same decoders
 *   read it with the same checks and messages;
 * - an answer or event encodes from the object the JSON codec writes.
 *
 * Reading follows protobuf's own rules, as Mesos' `ParseFromString` does: unknown fields (and
 * an enum number the schema does not know) are skipped, a field seen twice keeps its last value
 * (messages merge), repeated scalars are read packed or not, and a message that lacks a
 * required field does not parse. Input is bounded like network JSON (shared/json.ts
 * WIRE_LIMITS): nesting depth, string length, array length.
 *
 * Writing is a per-type compiled walk over the value's own keys with protobufjs' Writer: keys
 * the message does not have are not written (a protobuf reader could not carry them), unset
 * (`undefined`) values neither. A value of the wrong JSON type for its field is a bug of the
 * writer's caller and throws, naming the field.
 *
 * protobufjs rather than @bufbuild/protobuf: both read a schema at run time, but protobufjs
 * parses Drydock's own proto2 text (no codegen step, nothing generated to keep in step), it
 * is already the schema's library (the strict tests read answers with it), and its Writer and
 * Reader are the fast primitives this walk needs. Pure.
 */

import protobuf from 'protobufjs';
import type { Enum, MapField, Reader, Type } from 'protobufjs';
import { WIRE_LIMITS, type JsonLimits } from './json.js';
import { mesosSchema } from './mesos-proto/schema.js';

/** The media type of protobuf bodies, as Mesos names it. */
export const APPLICATION_PROTOBUF = 'application/x-protobuf';

type Json = Record<string, unknown>;

/** The scalar types, by the wire type they travel in. */
const VARINT = new Set(['int32', 'int64', 'uint32', 'uint64', 'sint32', 'sint64', 'bool']);
const FIXED64 = new Set(['fixed64', 'sfixed64', 'double']);
const FIXED32 = new Set(['fixed32', 'sfixed32', 'float']);
const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);

const WIRE_VARINT = 0;
const WIRE_FIXED64 = 1;
const WIRE_LEN = 2;
const WIRE_FIXED32 = 5;

/** How a field's values are read and written: a scalar type name, an enum, or a message. */
type Kind = { k: 'scalar'; type: string } | { k: 'enum'; byName: Readonly<Record<string, number>>; byNumber: ReadonlyMap<number, string> } | { k: 'message'; type: Type };

interface CompiledField {
  readonly name: string;
  readonly id: number;
  readonly repeated: boolean;
  readonly packed: boolean;
  readonly required: boolean;
  readonly value: Kind;
  /** The wire type of one value (the tag of a packed field is WIRE_LEN). */
  readonly wire: number;
  /** `id << 3 | wire` of one value. */
  readonly tag: number;
  /** A map's key type; undefined for other fields. */
  readonly mapKey: string | undefined;
  /** A message field's compiled type, once first written. */
  sub?: CompiledType;
}

interface CompiledType {
  readonly name: string;
  /** By JSON name; a null-prototype record, so no key of a value can reach Object's. */
  readonly byName: Readonly<Record<string, CompiledField | undefined>>;
  readonly byId: ReadonlyMap<number, CompiledField>;
  readonly required: readonly CompiledField[];
}

const COMPILED = new WeakMap<Type, CompiledType>();

function wireOf(kind: Kind): number {
  if (kind.k !== 'scalar') return kind.k === 'enum' ? WIRE_VARINT : WIRE_LEN;
  if (VARINT.has(kind.type)) return WIRE_VARINT;
  if (FIXED64.has(kind.type)) return WIRE_FIXED64;
  if (FIXED32.has(kind.type)) return WIRE_FIXED32;
  return WIRE_LEN; // string, bytes
}

function kindOf(type: string, resolved: Type | Enum | null): Kind {
  if (resolved === null) return { k: 'scalar', type };
  if (resolved instanceof protobuf.Enum) {
    const byName: Record<string, number> = Object.create(null) as Record<string, number>;
    const byNumber = new Map<number, string>();
    for (const [name, n] of Object.entries(resolved.values)) {
      byName[name] = n;
      // Aliases: the first name of a number is the one written.
      if (!byNumber.has(n)) byNumber.set(n, name);
    }
    return { k: 'enum', byName, byNumber };
  }
  return { k: 'message', type: resolved as Type };
}

function compile(type: Type): CompiledType {
  const known = COMPILED.get(type);
  if (known !== undefined) return known;
  const byName: Record<string, CompiledField | undefined> = Object.create(null) as Record<string, CompiledField | undefined>;
  const byId = new Map<number, CompiledField>();
  const required: CompiledField[] = [];
  for (const f of type.fieldsArray) {
    f.resolve();
    const map = (f as unknown as { map?: boolean }).map === true;
    const value = kindOf(f.type, f.resolvedType);
    const wire = map ? WIRE_LEN : wireOf(value);
    const packedOk = !map && f.repeated && wire !== WIRE_LEN;
    const c: CompiledField = {
      name: f.name,
      id: f.id,
      repeated: f.repeated || map,
      packed: packedOk && f.packed,
      required: f.required,
      value,
      wire,
      tag: ((f.id << 3) | (packedOk && f.packed ? WIRE_LEN : wire)) >>> 0,
      mapKey: map ? (f as unknown as MapField).keyType : undefined,
    };
    byName[f.name] = c;
    byId.set(f.id, c);
    if (f.required) required.push(c);
  }
  const compiled: CompiledType = { name: type.fullName.replace(/^\./, ''), byName, byId, required };
  COMPILED.set(type, compiled);
  return compiled;
}

const TYPES = new Map<string, Type>();

/** A message type of the schema by its full name (`mesos.v1.master.Response`). Throws if there is none (a bug). */
export function messageType(name: string): Type {
  let t = TYPES.get(name);
  if (t === undefined) {
    t = mesosSchema().lookupType(name);
    TYPES.set(name, t);
  }
  return t;
}

// ---- Writing -----------------------------------------------------------------------------------

/**
 * A value that cannot be written as its field's type: a bug in whoever built the value. Its
 * path is built as it unwinds (nothing is spent on paths while all is well).
 */
export class ProtobufEncodeError extends Error {
  #steps: string[];
  readonly #problem: string;

  constructor(key: string, problem: string) {
    super(`${key}: ${problem}`);
    this.name = 'ProtobufEncodeError';
    this.#steps = [key];
    this.#problem = problem;
  }

  /** The error seen from the enclosing message's field `key` (or, last, the message's name). */
  within(key: string): this {
    this.#steps.unshift(key);
    this.message = `${this.#steps.join('.')}: ${this.#problem}`;
    return this;
  }
}

const TWO_32 = 4294967296;

/** Node's Buffer writes UTF-8 in place (not in its published types). */
interface Utf8Writer {
  utf8Write(s: string, offset: number, length?: number): number;
}

/**
 * The bytes being written: one growing Buffer, written in one pass. A message's length is
 * written before it and known only after it, so one byte is kept for it and the message
 * moved up (copyWithin) in the rare case its length needs more: most messages are under 128
 * bytes, and memmove is far cheaper than measuring every message first. No object is made
 * per field, which is what makes this faster than protobufjs' Writer (an operation object per
 * value) on a GET_STATE of 50,000 tasks.
 */
class Out {
  buf: Buffer;
  pos = 0;

  constructor(size = 16 * 1024) {
    this.buf = Buffer.allocUnsafe(size);
  }

  ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.pos + n) size *= 2;
    const grown = Buffer.allocUnsafe(size);
    this.buf.copy(grown, 0, 0, this.pos);
    this.buf = grown;
  }

  /** A varint of a non-negative integer up to 2^53. */
  varint(v: number): void {
    this.ensure(10);
    const buf = this.buf;
    let pos = this.pos;
    if (v < 0x80) {
      buf[pos++] = v;
    } else if (v < TWO_32) {
      let u = v >>> 0;
      while (u > 0x7f) {
        buf[pos++] = (u & 0x7f) | 0x80;
        u >>>= 7;
      }
      buf[pos++] = u;
    } else {
      while (v > 0x7f) {
        buf[pos++] = (v % 128) | 0x80;
        v = Math.floor(v / 128);
      }
      buf[pos++] = v;
    }
    this.pos = pos;
  }

  /** A varint of any 64-bit value, as its unsigned two's complement. */
  varint64(b: bigint): void {
    let u = BigInt.asUintN(64, b);
    this.ensure(10);
    while (u > 0x7fn) {
      this.buf[this.pos++] = Number(u & 0x7fn) | 0x80;
      u >>= 7n;
    }
    this.buf[this.pos++] = Number(u);
  }

  fixed32(v: number): void {
    this.ensure(4);
    this.buf.writeUInt32LE(v >>> 0, this.pos);
    this.pos += 4;
  }

  fixed64(b: bigint): void {
    this.ensure(8);
    this.buf.writeBigUInt64LE(BigInt.asUintN(64, b), this.pos);
    this.pos += 8;
  }

  double(v: number): void {
    this.ensure(8);
    this.buf.writeDoubleLE(v, this.pos);
    this.pos += 8;
  }

  float(v: number): void {
    this.ensure(4);
    this.buf.writeFloatLE(v, this.pos);
    this.pos += 4;
  }

  /** Keeps a byte for a length; returns where. */
  fork(): number {
    this.ensure(1);
    return this.pos++;
  }

  /** Writes the length of what was written since `at` (a fork) before it. */
  ldelim(at: number): void {
    const len = this.pos - at - 1;
    if (len < 0x80) {
      this.buf[at] = len;
      return;
    }
    const n = varintSize(len);
    this.ensure(n - 1);
    this.buf.copyWithin(at + n, at + 1, this.pos);
    this.pos += n - 1;
    const end = this.pos;
    this.pos = at;
    this.varint(len);
    this.pos = end;
  }

  string(s: string): void {
    // Up to 42 characters, the UTF-8 length is under 128: one byte for it, known after.
    if (s.length < 43) {
      this.ensure(1 + s.length * 3);
      const at = this.pos++;
      const n = (this.buf as unknown as Utf8Writer).utf8Write(s, this.pos);
      this.buf[at] = n;
      this.pos += n;
      return;
    }
    const n = Buffer.byteLength(s, 'utf8');
    this.varint(n);
    this.ensure(n);
    this.pos += (this.buf as unknown as Utf8Writer).utf8Write(s, this.pos, n);
  }

  /** Bytes given as base64 (the JSON model's). */
  base64(s: string): void {
    const n = Buffer.byteLength(s, 'base64');
    this.varint(n);
    this.ensure(n);
    this.pos += this.buf.write(s, this.pos, n, 'base64');
  }

  finish(): Buffer {
    return this.buf.subarray(0, this.pos);
  }
}

function varintSize(v: number): number {
  let n = 1;
  while (v >= 0x80) {
    v = Math.floor(v / 128);
    n++;
  }
  return n;
}

/**
 * The protobuf bytes of `value`, a JSON-model object, as message `typeName`
 * (`mesos.v1.master.Response`). Keys the message does not have are left out.
 */
export function encodeProtobuf(typeName: string, value: unknown): Buffer {
  const out = new Out();
  try {
    writeMessage(out, compile(messageType(typeName)), value);
  } catch (e) {
    if (e instanceof ProtobufEncodeError) throw e.within(typeName);
    throw e;
  }
  return out.finish();
}

function writeMessage(w: Out, t: CompiledType, value: unknown): void {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new ProtobufEncodeError('(value)', `expected an object for ${t.name}`);
  const o = value as Json;
  for (const key in o) {
    const f = t.byName[key];
    if (f === undefined) continue;
    const v = o[key];
    if (v === undefined || v === null) continue;
    if (f.mapKey !== undefined) writeMap(w, f, v);
    else if (f.repeated) {
      if (!Array.isArray(v)) throw new ProtobufEncodeError(key, 'expected an array');
      if (f.packed) {
        if (v.length === 0) continue;
        w.varint(f.tag);
        const at = w.fork();
        for (let i = 0; i < v.length; i++) writeValue(w, f.value, v[i], key);
        w.ldelim(at);
      } else for (let i = 0; i < v.length; i++) writeField(w, f, v[i], key);
    } else writeField(w, f, v, key);
  }
}

function writeField(w: Out, f: CompiledField, v: unknown, key: string): void {
  if (f.value.k === 'message') {
    w.varint(f.tag);
    const at = w.fork();
    try {
      writeMessage(w, (f.sub ??= compile(f.value.type)), v);
    } catch (e) {
      if (e instanceof ProtobufEncodeError) e.within(key);
      throw e;
    }
    w.ldelim(at);
    return;
  }
  if (f.value.k === 'enum') {
    const n = enumNumber(f.value.byName, v, key);
    if (n === undefined) return;
    w.varint(f.tag);
    writeInt32(w, n);
    return;
  }
  w.varint(f.tag);
  writeScalar(w, f.value.type, v, key);
}

/** One value of a packed field (its tag is written once, before them all). */
function writeValue(w: Out, kind: Kind, v: unknown, key: string): void {
  if (kind.k === 'enum') writeInt32(w, enumNumber(kind.byName, v, key) ?? 0);
  else if (kind.k === 'scalar') writeScalar(w, kind.type, v, key);
}

/** An enum's number from its name; undefined for a name the schema does not know (not written, as stout drops it). */
function enumNumber(byName: Readonly<Record<string, number>>, v: unknown, key: string): number | undefined {
  if (typeof v === 'string') return byName[v];
  if (typeof v === 'number' && Number.isInteger(v)) return v;
  throw new ProtobufEncodeError(key, `expected an enum name, got ${typeof v}`);
}

function writeMap(w: Out, f: CompiledField, v: unknown): void {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) throw new ProtobufEncodeError(f.name, 'expected an object (a map)');
  const keyType = f.mapKey as string;
  const keyTag = ((1 << 3) | wireOf({ k: 'scalar', type: keyType })) >>> 0;
  const valueTag = ((2 << 3) | wireOf(f.value)) >>> 0;
  for (const [k, x] of Object.entries(v as Json)) {
    if (x === undefined || x === null) continue;
    w.varint(f.tag);
    const entry = w.fork();
    w.varint(keyTag);
    writeScalar(w, keyType, keyType === 'string' ? k : keyType === 'bool' ? k === 'true' : k, f.name);
    w.varint(valueTag);
    if (f.value.k === 'message') {
      const at = w.fork();
      try {
        writeMessage(w, (f.sub ??= compile(f.value.type)), x);
      } catch (e) {
        if (e instanceof ProtobufEncodeError) e.within(k).within(f.name);
        throw e;
      }
      w.ldelim(at);
    } else writeValue(w, f.value, x, f.name);
    w.ldelim(entry);
  }
}

/** An int32 (or enum): negative values go out sign-extended to ten bytes, as protobuf writes them. */
function writeInt32(w: Out, n: number): void {
  if (n >= 0) w.varint(n);
  else w.varint64(BigInt(n | 0));
}

/** An integer of the JSON model: a safe number, or a bigint beyond it (or an integer string). */
function integer(v: unknown, key: string): number | bigint {
  if (typeof v === 'number') {
    if (!Number.isInteger(v)) throw new ProtobufEncodeError(key, `expected an integer, got ${v}`);
    return Number.isSafeInteger(v) ? v : BigInt(v);
  }
  if (typeof v === 'bigint') return v;
  if (typeof v === 'string' && /^-?[0-9]+$/.test(v)) {
    const n = Number(v);
    return Number.isSafeInteger(n) ? n : BigInt(v);
  }
  throw new ProtobufEncodeError(key, `expected an integer, got ${typeof v}`);
}

function num(v: unknown, key: string): number {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  if (typeof v === 'string' && v.trim() !== '' && !Number.isNaN(Number(v))) return Number(v);
  if (v === 'NaN') return Number.NaN;
  throw new ProtobufEncodeError(key, `expected a number, got ${typeof v}`);
}

function writeScalar(w: Out, type: string, v: unknown, key: string): void {
  switch (type) {
    case 'string':
      if (typeof v !== 'string') throw new ProtobufEncodeError(key, `expected a string, got ${typeof v}`);
      w.string(v);
      return;
    case 'bytes':
      // The JSON model's bytes are base64 (stout's).
      if (typeof v !== 'string') throw new ProtobufEncodeError(key, `expected base64 bytes, got ${typeof v}`);
      w.base64(v);
      return;
    case 'bool':
      if (typeof v !== 'boolean') throw new ProtobufEncodeError(key, `expected a bool, got ${typeof v}`);
      w.varint(v ? 1 : 0);
      return;
    case 'double':
      w.double(num(v, key));
      return;
    case 'float':
      w.float(num(v, key));
      return;
    case 'int32':
      writeInt32(w, integer32(v, key));
      return;
    case 'uint32':
      w.varint(integer32(v, key) >>> 0);
      return;
    case 'sint32': {
      const n = integer32(v, key);
      w.varint(((n << 1) ^ (n >> 31)) >>> 0);
      return;
    }
    case 'fixed32':
    case 'sfixed32':
      w.fixed32(integer32(v, key));
      return;
    case 'int64':
    case 'uint64': {
      const n = integer(v, key);
      if (typeof n === 'number' && n >= 0) w.varint(n);
      else w.varint64(BigInt(n));
      return;
    }
    case 'sint64': {
      const n = BigInt(integer(v, key));
      w.varint64((n << 1n) ^ (n >> 63n));
      return;
    }
    case 'fixed64':
    case 'sfixed64':
      w.fixed64(BigInt(integer(v, key)));
      return;
    default:
      throw new ProtobufEncodeError(key, `unknown scalar type ${type}`);
  }
}

function integer32(v: unknown, key: string): number {
  const n = integer(v, key);
  return typeof n === 'number' ? n : Number(BigInt.asIntN(32, n));
}

// ---- Reading -----------------------------------------------------------------------------------

/** What a body that is not a message of the type says (the caller words it as Mesos does). */
class ParseFailure extends Error {}

export type ProtobufRead = { ok: true; value: Json } | { ok: false; error: string };

/**
 * Reads `bytes` as message `typeName` into the JSON model (see the module's comment). Fails
 * on bytes that are not protobuf, on a missing required field, and past `limits`; the reason
 * is for logs and tests: Mesos answers every such body with one fixed message.
 */
export function decodeProtobuf(typeName: string, bytes: Uint8Array, limits: JsonLimits = WIRE_LIMITS): ProtobufRead {
  try {
    const r = protobuf.Reader.create(bytes);
    const value = readMessage(r, compile(messageType(typeName)), r.len, 1, limits, '');
    return { ok: true, value };
  } catch (e) {
    // protobufjs' Reader throws RangeError (truncated) and Error (a bad wire type or varint); a
    // TypeError or ReferenceError would be a bug here, not the client's bytes.
    if (e instanceof Error && !(e instanceof TypeError) && !(e instanceof ReferenceError)) return { ok: false, error: e.message };
    throw e;
  }
}

function readMessage(r: Reader, t: CompiledType, end: number, depth: number, limits: JsonLimits, path: string, into?: Json): Json {
  if (depth > limits.maxDepth) throw new ParseFailure(`message nests deeper than ${limits.maxDepth} levels`);
  const out: Json = into ?? {};
  while (r.pos < end) {
    const tag = r.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    if (id === 0) throw new ParseFailure('field number 0');
    const f = t.byId.get(id);
    if (f === undefined || !wireFits(f, wire)) {
      r.skipType(wire);
      continue;
    }
    const at = path === '' ? f.name : `${path}.${f.name}`;
    if (f.mapKey !== undefined) {
      readMapEntry(r, f, out, depth, limits, at);
      continue;
    }
    if (f.repeated) {
      let list = out[f.name] as unknown[] | undefined;
      if (list === undefined) out[f.name] = list = [];
      if (wire === WIRE_LEN && f.wire !== WIRE_LEN) {
        // Packed, whatever the schema says: protobuf readers take both forms.
        const stop = r.uint32() + r.pos;
        if (stop > end) throw new ParseFailure(`${at}: length past the end`);
        while (r.pos < stop) {
          const v = readValue(r, f, depth, limits, at);
          if (v !== undefined) push(list, v, limits, at);
        }
        if (r.pos !== stop) throw new ParseFailure(`${at}: packed values overrun`);
      } else {
        const v = readValue(r, f, depth, limits, at);
        if (v !== undefined) push(list, v, limits, at);
      }
      continue;
    }
    if (f.value.k === 'message') {
      // A message field seen twice merges, as protobuf does.
      const prior = out[f.name];
      const len = r.uint32();
      const stop = r.pos + len;
      if (stop > end) throw new ParseFailure(`${at}: length past the end`);
      out[f.name] = readMessage(r, compile(f.value.type), stop, depth + 1, limits, at, typeof prior === 'object' && prior !== null ? (prior as Json) : undefined);
      continue;
    }
    const v = readValue(r, f, depth, limits, at);
    if (v !== undefined) out[f.name] = v;
  }
  if (r.pos !== end) throw new ParseFailure(`${path || t.name}: field overruns its message`);
  for (const f of t.required) {
    if (out[f.name] === undefined) throw new ParseFailure(`missing required field ${path === '' ? f.name : `${path}.${f.name}`}`);
  }
  return out;
}

function push(list: unknown[], v: unknown, limits: JsonLimits, at: string): void {
  if (list.length >= limits.maxArrayLength) throw new ParseFailure(`${at} has more than ${limits.maxArrayLength} elements`);
  list.push(v);
}

/** Whether a value on the wire can be this field's (a mismatch is an unknown field, skipped). */
function wireFits(f: CompiledField, wire: number): boolean {
  if (wire === f.wire) return true;
  // A repeated scalar may come packed.
  return f.repeated && f.mapKey === undefined && wire === WIRE_LEN && f.wire !== WIRE_LEN;
}

/** One value of a non-map field; undefined: an enum number the schema does not know (dropped). */
function readValue(r: Reader, f: CompiledField, depth: number, limits: JsonLimits, at: string): unknown {
  const kind = f.value;
  if (kind.k === 'message') {
    const len = r.uint32();
    const stop = r.pos + len;
    if (stop > r.len) throw new ParseFailure(`${at}: length past the end`);
    return readMessage(r, compile(kind.type), stop, depth + 1, limits, at);
  }
  if (kind.k === 'enum') return kind.byNumber.get(r.int32());
  return readScalar(r, kind.type, limits, at);
}

function readScalar(r: Reader, type: string, limits: JsonLimits, at: string): unknown {
  switch (type) {
    case 'string': {
      const s = r.string();
      if (s.length > limits.maxStringLength) throw new ParseFailure(`string at '${at}' is longer than ${limits.maxStringLength} characters`);
      return s;
    }
    case 'bytes': {
      const b = r.bytes();
      const s = Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64');
      if (s.length > limits.maxStringLength) throw new ParseFailure(`bytes at '${at}' are longer than ${limits.maxStringLength} characters in base64`);
      return s;
    }
    case 'bool':
      return r.bool();
    case 'double':
      return r.double();
    case 'float':
      return r.float();
    case 'int32':
      return r.int32();
    case 'uint32':
      return r.uint32();
    case 'sint32':
      return r.sint32();
    case 'fixed32':
      return r.fixed32();
    case 'sfixed32':
      return r.sfixed32();
    default:
      if (INT64.has(type)) return jsonInteger(readInt64(r, type));
      throw new ParseFailure(`${at}: unknown scalar type ${type}`);
  }
}

/**
 * A 64-bit integer to the digit, read here rather than through protobufjs' Long (which it
 * loads only where `require` works): a varint of up to ten bytes, or eight fixed bytes.
 */
function readInt64(r: Reader, type: string): bigint {
  if (type === 'fixed64' || type === 'sfixed64') {
    if (r.pos + 8 > r.len) throw new RangeError('index out of range');
    const buf = r.buf;
    let u = 0n;
    for (let i = 7; i >= 0; i--) u = (u << 8n) | BigInt(buf[r.pos + i] as number);
    r.pos += 8;
    return type === 'sfixed64' ? BigInt.asIntN(64, u) : u;
  }
  let u = 0n;
  let shift = 0n;
  for (;;) {
    if (r.pos >= r.len) throw new RangeError('index out of range');
    const b = r.buf[r.pos++] as number;
    u |= BigInt(b & 0x7f) << shift;
    if (b < 0x80) break;
    shift += 7n;
    if (shift > 63n) throw new ParseFailure('varint longer than ten bytes');
  }
  u = BigInt.asUintN(64, u);
  if (type === 'uint64') return u;
  if (type === 'sint64') return (u >> 1n) ^ -(u & 1n);
  return BigInt.asIntN(64, u);
}

/** An integer as the JSON model holds it: a number when exact, a bigint beyond 2^53 (as parseWireJson reads it). */
function jsonInteger(n: bigint): number | bigint {
  return n >= -BigInt(Number.MAX_SAFE_INTEGER) && n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n;
}

function readMapEntry(r: Reader, f: CompiledField, out: Json, depth: number, limits: JsonLimits, at: string): void {
  const len = r.uint32();
  const stop = r.pos + len;
  if (stop > r.len) throw new ParseFailure(`${at}: length past the end`);
  const keyType = f.mapKey as string;
  const keyWire = wireOf({ k: 'scalar', type: keyType });
  const valueWire = wireOf(f.value);
  let key: unknown;
  let value: unknown;
  while (r.pos < stop) {
    const tag = r.uint32();
    const id = tag >>> 3;
    const wire = tag & 7;
    if (id === 1 && wire === keyWire) key = readScalar(r, keyType, limits, at);
    else if (id === 2 && wire === valueWire) {
      if (f.value.k === 'message') {
        const l = r.uint32();
        const s = r.pos + l;
        if (s > stop) throw new ParseFailure(`${at}: length past the end`);
        value = readMessage(r, compile(f.value.type), s, depth + 1, limits, at);
      } else if (f.value.k === 'enum') value = f.value.byNumber.get(r.int32());
      else value = readScalar(r, f.value.type, limits, at);
    } else r.skipType(wire);
  }
  if (r.pos !== stop) throw new ParseFailure(`${at}: map entry overruns`);
  const map = (out[f.name] ??= {}) as Json;
  // As parseWireJson: `__proto__` would set the object's prototype, and no Mesos map uses it.
  if (key === '__proto__') return;
  const k = key === undefined ? (keyType === 'string' ? '' : keyType === 'bool' ? 'false' : '0') : String(key);
  // A missing value is the type's default; for a message, an empty one.
  map[k] = value ?? (f.value.k === 'message' ? {} : f.value.k === 'enum' ? f.value.byNumber.get(0) : scalarDefault(f.value.type));
}

function scalarDefault(type: string): unknown {
  if (type === 'string' || type === 'bytes') return '';
  if (type === 'bool') return false;
  return 0;
}

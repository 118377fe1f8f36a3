/**
 * A protobuf client of Mesos' v1 APIs as a third party writes one: protobufjs over the schema
 * (Drydock's description of Mesos' v1 messages), raw HTTP, `Type.encode(Type.fromObject(...))`
 * to send and `Type.decode` then `toObject` to read, never Drydock's own codec
 * (shared/protobuf.ts), so what it reads is what any protobuf client reads.
 *
 * And the comparison of a protobuf answer with its JSON twin: `schemaView` reads the JSON
 * answer as protobufjs shows a decoded message (only the message's fields, int64s as decimal
 * strings, empty repeated fields absent: protobuf cannot carry an empty list), listing the keys
 * that are not fields of the message (a protobuf answer cannot carry those either).
 */

import { execFileSync } from 'node:child_process';
import protobuf from 'protobufjs';
import type { Enum, Field, IConversionOptions, MapField, Type } from 'protobufjs';
import { mesosSchema } from '../../shared/mesos-proto/schema.js';
import { RecordReader } from '../../shared/recordio.js';
import { writeMesosProtoFiles } from '../../scripts/mesos-proto-files.js';

export const PROTOBUF = 'application/x-protobuf';

/** How messages are shown: set fields only, int64s as decimal strings, enums by name, bytes as base64. */
const VIEW: IConversionOptions = { longs: String, enums: String, bytes: String };

export function type(name: string): Type {
  return mesosSchema().lookupType(name);
}

/** A message's bytes, as protobufjs writes them from a plain object. */
export function encode(typeName: string, value: Record<string, unknown>): Buffer {
  const t = type(typeName);
  const problem = t.verify(t.fromObject(value));
  if (problem !== null) throw new Error(`${typeName}: ${problem}`);
  return Buffer.from(t.encode(t.fromObject(value)).finish());
}

/** Bytes read as a message and shown plainly (VIEW). */
export function decode(typeName: string, bytes: Uint8Array): Record<string, unknown> {
  const t = type(typeName);
  return t.toObject(t.decode(bytes), VIEW);
}

/** An answer: status, Content-Type, body bytes. */
export interface RawAnswer {
  status: number;
  contentType: string | null;
  bytes: Buffer;
  text: string;
}

/** POSTs a body with headers; bounded in time. */
export async function post(url: string, body: Buffer | string, headers: Record<string, string>): Promise<RawAnswer> {
  const res = await fetch(url, { method: 'POST', headers, body: typeof body === 'string' ? body : new Uint8Array(body), signal: AbortSignal.timeout(10_000) });
  const bytes = Buffer.from(await res.arrayBuffer());
  return { status: res.status, contentType: res.headers.get('content-type'), bytes, text: bytes.toString('utf8') };
}

/** A call in protobuf, its answer asked in protobuf (or as `accept` says). */
export function protobufCall(url: string, callType: string, call: Record<string, unknown>, accept = PROTOBUF, extra: Record<string, string> = {}): Promise<RawAnswer> {
  return post(url, encode(callType, call), { 'Content-Type': PROTOBUF, Accept: accept, ...extra });
}

/** The same call in JSON. */
export function jsonCall(url: string, call: Record<string, unknown>, extra: Record<string, string> = {}): Promise<RawAnswer> {
  return post(url, JSON.stringify(call), { 'Content-Type': 'application/json', Accept: 'application/json', ...extra });
}

const INT64 = new Set(['int64', 'uint64', 'sint64', 'fixed64', 'sfixed64']);
const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * A JSON answer as protobufjs shows the same message decoded (VIEW), and the paths of its keys
 * that the message does not have.
 */
export function schemaView(typeName: string, json: unknown): { view: unknown; extra: string[] } {
  const extra: string[] = [];
  const view = walk(type(typeName), json, '', extra);
  return { view, extra };
}

function walk(t: Type, v: unknown, path: string, extra: string[]): unknown {
  if (!isObject(v)) throw new Error(`${path}: not an object for ${t.name}`);
  const out: Record<string, unknown> = {};
  for (const [k, x] of Object.entries(v)) {
    const f: Field | undefined = t.fields[k];
    const at = path === '' ? k : `${path}.${k}`;
    if (f === undefined) {
      extra.push(at);
      continue;
    }
    f.resolve();
    if ((f as unknown as { map?: boolean }).map === true) {
      if (!isObject(x)) throw new Error(`${at}: a map must be an object`);
      out[k] = Object.fromEntries(Object.entries(x).map(([mk, mv]) => [mk, scalarOrMessage(f as unknown as MapField, mv, `${at}.${mk}`, extra)]));
      continue;
    }
    if (f.repeated) {
      if (!Array.isArray(x)) throw new Error(`${at}: expected an array`);
      if (x.length === 0) continue;
      out[k] = x.map((e, i) => scalarOrMessage(f, e, `${at}[${i}]`, extra));
      continue;
    }
    out[k] = scalarOrMessage(f, x, at, extra);
  }
  return out;
}

function scalarOrMessage(f: Field | MapField, x: unknown, at: string, extra: string[]): unknown {
  const resolved = f.resolvedType;
  if (resolved instanceof protobuf.Type) return walk(resolved, x, at, extra);
  if (resolved !== null) {
    // An enum: its name, as protobufjs shows it (a number would be a bug of the writer).
    if (typeof x !== 'string' || (resolved as Enum).values[x] === undefined) throw new Error(`${at}: ${String(x)} is not a name of ${resolved.name}`);
    return x;
  }
  if (INT64.has(f.type)) return typeof x === 'bigint' || typeof x === 'number' || typeof x === 'string' ? BigInt(x).toString() : x;
  return x;
}

/** RecordIO records of a protobuf stream, read from its chunks as they come. */
export class ProtobufRecords {
  readonly #reader = new RecordReader();
  readonly records: Array<Record<string, unknown>> = [];
  constructor(readonly eventType: string) {}

  push(chunk: Buffer): void {
    for (const r of this.#reader.pushBytes(chunk)) this.records.push(decode(this.eventType, r));
  }
}

/**
 * Google's own protobuf parser (`protoc --decode`, C++) over the description written out as
 * .proto files: the reader a Java, Go or C++ client has. Undefined when protoc is missing
 * outside CI (the caller skips with that reason); under CI=true its absence throws (.ci/run
 * installs protobuf-compiler).
 */
export class GoogleDecoder {
  private constructor(readonly dir: string) {}

  static create(dir: string): GoogleDecoder | string {
    try {
      execFileSync('protoc', ['--version'], { stdio: 'ignore', timeout: 10_000 });
    } catch {
      if (process.env['CI'] === 'true') throw new Error('protoc is missing: .ci/run installs protobuf-compiler');
      return 'protoc is missing (apt-get install protobuf-compiler): the check with Google\'s parser is skipped';
    }
    writeMesosProtoFiles(dir);
    return new GoogleDecoder(dir);
  }

  /** protoc's text format of `bytes` read as `typeName` from `file`; throws with protoc's words when it does not parse. */
  decode(typeName: string, file: string, bytes: Buffer): string {
    return execFileSync('protoc', [`-I${this.dir}`, `--decode=${typeName}`, file], { input: bytes, timeout: 60_000, maxBuffer: 256 << 20 }).toString('utf8');
  }
}

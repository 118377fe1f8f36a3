/**
 * Google's own reader of protobuf JSON (python3-protobuf's json_format) over Drydock's
 * description of Mesos' v1 messages, to hold the strict reader (mesos-strict.ts) to what a
 * strict third-party client does. protoc generates the Python modules from the description
 * (shared/mesos-proto) into a temp dir, and one Python process reads every sample
 * (test/fixtures/json-format-read.py). Debian's protobuf-compiler and python3-protobuf
 * provide both; outside CI a machine without them skips with the reason, under CI=true
 * (where .ci/run installs them) their absence fails.
 */

import { execFile, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import type { TestContext } from 'node:test';
import { stringifyJson } from '../../shared/json.js';
import { MESOS_PROTO_FILES } from '../../shared/mesos-proto/schema.js';
import { EVENT_DEADLINE_MS, FIXTURES, tempDir } from './daemons.js';

const run = promisify(execFile);

/** Google's verdict on one sample. */
export interface GoogleVerdict {
  readonly ok: boolean;
  readonly error?: string;
}

/** One sample: a parsed JSON value (bigints kept) read as the message `type`. */
export interface GoogleSample {
  readonly type: string;
  readonly json: unknown;
}

/** Succeeds (true) when the command runs and exits 0. */
function runs(cmd: string, args: readonly string[]): boolean {
  try {
    execFileSync(cmd, args, { stdio: 'ignore', timeout: EVENT_DEADLINE_MS });
    return true;
  } catch {
    return false;
  }
}

let python: string | undefined;

/**
 * Why Google's reader cannot run here, or undefined when it can. Debian's python3-protobuf
 * serves Debian's /usr/bin/python3, which may not be the first python3 on the PATH (pyenv),
 * so that one is tried first. Under CI=true a missing tool throws.
 */
export function googleProtobufMissing(): string | undefined {
  const missing: string[] = [];
  if (!runs('protoc', ['--version'])) missing.push('protoc (apt-get install protobuf-compiler)');
  python = ['/usr/bin/python3', 'python3'].find((p) => runs(p, ['-c', 'import google.protobuf.json_format']));
  if (python === undefined) missing.push('python3 with google.protobuf (apt-get install python3-protobuf)');
  if (missing.length === 0) return undefined;
  if (process.env['CI'] === 'true') throw new Error(`missing ${missing.join(' and ')}: .ci/run installs them`);
  return `missing ${missing.join(' and ')}: the cross-check with Google's json_format is skipped`;
}

/**
 * Google's verdict on each sample, in order: protoc once, then one Python process for all.
 * Call googleProtobufMissing() first.
 */
export async function googleRead(t: Pick<TestContext, 'after'>, samples: readonly GoogleSample[]): Promise<GoogleVerdict[]> {
  if (python === undefined) throw new Error('googleRead: call googleProtobufMissing() first (and skip when it gives a reason)');
  const dir = tempDir(t, 'drydock-json-format-');
  const protoDir = join(dir, 'proto');
  const wktDir = join(dir, 'wkt');
  const pyDir = join(dir, 'py');
  const write = (path: string, text: string): void => {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  };
  for (const f of MESOS_PROTO_FILES) write(join(protoDir, f.name), f.text);
  // Debian's protoc ships without the well-known .proto files (libprotobuf-dev has them); the
  // master's file imports Duration, so protoc gets its interface here. At run time the
  // generated module imports python3-protobuf's own duration_pb2.
  write(join(wktDir, 'google', 'protobuf', 'duration.proto'), 'syntax = "proto3";\npackage google.protobuf;\nmessage Duration {\n  int64 seconds = 1;\n  int32 nanos = 2;\n}\n');
  mkdirSync(pyDir);
  await run('protoc', [`-I${protoDir}`, `-I${wktDir}`, `--python_out=${pyDir}`, ...MESOS_PROTO_FILES.map((f) => f.name)], { cwd: protoDir, timeout: 60_000 });
  const modules = Object.fromEntries(
    MESOS_PROTO_FILES.map((f) => [/^package ([\w.]+);$/m.exec(f.text)?.[1] ?? f.name, f.name.replace(/\.proto$/, '_pb2').replaceAll('/', '.')]),
  );
  const samplesFile = join(dir, 'samples.jsonl');
  writeFileSync(samplesFile, samples.map((s) => JSON.stringify({ type: s.type, text: stringifyJson(s.json) })).join('\n') + '\n');
  const { stdout } = await run(python, [join(FIXTURES, 'json-format-read.py'), pyDir, JSON.stringify(modules), samplesFile], { timeout: 60_000, maxBuffer: 64 << 20 });
  const verdicts = JSON.parse(stdout) as GoogleVerdict[];
  if (verdicts.length !== samples.length) throw new Error(`json_format read ${verdicts.length} samples of ${samples.length}`);
  return verdicts;
}

/**
 * Writes Drydock's description of Mesos' v1 messages (shared/mesos-proto) as .proto files
 * under a directory, at the paths they import each other by (`mesos/v1/master/master.proto`
 * ...), for tools that read .proto files: `protoc --encode` / `--decode` to speak protobuf to
 * Drydock by hand (docs/api.md), or a client generator. The master's file imports
 * google/protobuf/duration.proto, Google's well-known type: written too, from protobufjs' own
 * description of it, for a protoc installed without Google's include files.
 *
 *   node --import tsx scripts/mesos-proto-files.ts /tmp/mesos-proto
 */

import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import protobuf from 'protobufjs';
import { MESOS_PROTO_FILES } from '../shared/mesos-proto/schema.js';

/** google.protobuf.Duration as protoc reads it, from the fields protobufjs knows it by. */
function durationProto(): string {
  const json = protobuf.common.get('google/protobuf/duration.proto') as { nested: { google: { nested: { protobuf: { nested: { Duration: { fields: Record<string, { type: string; id: number }> } } } } } } };
  const fields = Object.entries(json.nested.google.nested.protobuf.nested.Duration.fields).map(([name, f]) => `  ${f.type} ${name} = ${f.id};\n`);
  return `syntax = "proto3";\n\npackage google.protobuf;\n\nmessage Duration {\n${fields.join('')}}\n`;
}

/** Writes every file under `dir`; returns their paths. */
export function writeMesosProtoFiles(dir: string): string[] {
  const paths: string[] = [];
  for (const file of [{ name: 'google/protobuf/duration.proto', text: durationProto() }, ...MESOS_PROTO_FILES]) {
    const path = join(dir, file.name);
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, file.text);
    paths.push(path);
  }
  return paths;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2];
  if (dir === undefined || dir === '') {
    process.stderr.write('usage: node --import tsx scripts/mesos-proto-files.ts DIR\n');
    process.exit(2);
  }
  for (const path of writeMesosProtoFiles(dir)) process.stdout.write(`${path}\n`);
}

/**
 * Compares Drydock's description of Mesos' v1 messages (shared/mesos-proto) with Mesos' own
 * .proto files, fact by fact: the same messages and enums, and for each field its name,
 * number, label, resolved type, declared default, deprecation and oneof; for each enum its
 * values in order. Mesos' files are read at run time from a checkout and nothing of them is
 * kept. Prints every difference; exits 1 when there is one.
 *
 *   git clone --depth 1 https://github.com/apache/mesos /tmp/mesos
 *   node --import tsx scripts/mesos-proto-check.ts /tmp/mesos/include
 */

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import protobuf from 'protobufjs';
import type { NamespaceBase, Root } from 'protobufjs';
import { mesosSchema } from '../shared/mesos-proto/schema.js';

/** The files whose imports bring in every package the description covers. */
const ENTRY_FILES = ['mesos/v1/master/master.proto', 'mesos/v1/agent/agent.proto', 'mesos/v1/scheduler/scheduler.proto'];

/** Every message and enum under `mesos.v1`, each as the list of its facts. */
function protoFacts(root: Root): Map<string, string[]> {
  const facts = new Map<string, string[]>();
  const walk = (ns: NamespaceBase): void => {
    for (const n of ns.nestedArray) {
      if (n instanceof protobuf.Type && n.fullName.startsWith('.mesos.v1.')) {
        const fields = [...n.fieldsArray].sort((a, b) => a.id - b.id);
        facts.set(
          n.fullName,
          fields.map((f) =>
            [
              f.name,
              f.id,
              f instanceof protobuf.MapField ? `map<${f.keyType}>` : f.required ? 'required' : f.repeated ? 'repeated' : 'optional',
              f.resolvedType?.fullName ?? f.type,
              f.options !== undefined && 'default' in f.options ? `default=${JSON.stringify(f.options['default'])}` : '',
              f.options?.['deprecated'] === true ? 'deprecated' : '',
              f.partOf === null ? '' : `oneof ${f.partOf.name}`,
            ]
              .filter((x) => x !== '')
              .join(' '),
          ),
        );
      } else if (n instanceof protobuf.Enum && n.fullName.startsWith('.mesos.v1.')) {
        facts.set(
          n.fullName,
          Object.entries(n.values).map(([k, v]) => `${k}=${v}${n.valuesOptions?.[k]?.['deprecated'] === true ? ' deprecated' : ''}`),
        );
      }
      if (n instanceof protobuf.Namespace || n instanceof protobuf.Type) walk(n);
    }
  };
  walk(root);
  return facts;
}

/** The differences between Mesos' facts and the description's. */
function factDifferences(mesos: ReadonlyMap<string, string[]>, ours: ReadonlyMap<string, string[]>): string[] {
  const out: string[] = [];
  for (const [name, facts] of mesos) {
    const mine = ours.get(name);
    if (mine === undefined) out.push(`missing from the description: ${name}`);
    else if (JSON.stringify(facts) !== JSON.stringify(mine)) out.push(`${name} differs:\n  Mesos: ${facts.join('; ')}\n  ours:  ${mine.join('; ')}`);
  }
  for (const name of ours.keys()) if (!mesos.has(name)) out.push(`not in Mesos' files: ${name}`);
  return out;
}

function main(includeDir: string): number {
  if (!existsSync(join(includeDir, 'mesos', 'v1', 'mesos.proto'))) {
    console.error(`${includeDir} has no mesos/v1/mesos.proto (give the include/ folder of a Mesos checkout)`);
    return 2;
  }
  const mesos = new protobuf.Root();
  // Imports are relative to the include folder; Google's well-known types come with protobufjs.
  mesos.resolvePath = (_origin, target) => (target.startsWith('google/') || target.startsWith('/') ? target : join(includeDir, target));
  mesos.loadSync(ENTRY_FILES.map((f) => join(includeDir, f)), { keepCase: true });
  mesos.resolveAll();
  const theirs = protoFacts(mesos);
  const diffs = factDifferences(theirs, protoFacts(mesosSchema()));
  for (const d of diffs) console.log(d);
  console.log(`${theirs.size} messages and enums in Mesos' files; ${diffs.length} difference(s)`);
  return diffs.length === 0 ? 0 : 1;
}

const dir = process.argv[2];
if (dir === undefined) {
  console.error('usage: mesos-proto-check.ts <the include/ folder of a Mesos checkout>');
  process.exit(2);
}
process.exit(main(dir));

/**
 * Mesos 1.x's v1 messages as one protobufjs Root: the schema against which a Mesos-named
 * answer is read strictly (test/helpers/mesos-strict.ts) and from which the protobuf codec at
 * the HTTP edge encodes and decodes.
 *
 * The description is Drydock's own, one module per Mesos package (./mesos.ts, ./master.ts,
 * ...), written in this project: it states the interface's facts and nothing else, because
 * those decide what a client generated from Mesos' files writes and what it accepts:
 * - package, message, field and enum value names, field numbers, labels (required, optional,
 *   repeated, map), types, oneofs;
 * - declared defaults: Mesos' JSON writer outputs an unset optional field that declares one
 *   (so `"shell": true`, `"failover_timeout": 0`, `"port": 5051` appear unasked), except where
 *   the field is deprecated (FrameworkInfo.role), so deprecations are kept too;
 * - the order of enum values (proto2 takes the first as an enum field's default).
 * Every message of the seven packages is there, each with all of its Mesos 1.x fields: that
 * covers every message reachable from master Call, Response and Event, agent Call and Response,
 * and scheduler Call and Event. A partial message would make a strict reader wrong, so there
 * is none. Fields are listed by number; Mesos' comments and prose are not carried.
 *
 * The text is in TypeScript modules rather than .proto files so that the schema needs no file
 * reads and bundles into one executable. Pure: parsing happens once, on first use.
 */

import protobuf from 'protobufjs';
import type { Root } from 'protobufjs';
import { AGENT_PROTO, AGENT_PROTO_FILE } from './agent.js';
import { ALLOCATOR_PROTO, ALLOCATOR_PROTO_FILE } from './allocator.js';
import { MAINTENANCE_PROTO, MAINTENANCE_PROTO_FILE } from './maintenance.js';
import { MASTER_PROTO, MASTER_PROTO_FILE } from './master.js';
import { MESOS_PROTO, MESOS_PROTO_FILE } from './mesos.js';
import { QUOTA_PROTO, QUOTA_PROTO_FILE } from './quota.js';
import { SCHEDULER_PROTO, SCHEDULER_PROTO_FILE } from './scheduler.js';

/** One file of the description: the name other files import it by, and its proto2 text. */
export interface ProtoFile {
  readonly name: string;
  readonly text: string;
}

/**
 * Every file of the description, each after the files it imports. The master's file also
 * imports `google/protobuf/duration.proto` (DRAIN_AGENT's max_grace_period), Google's
 * well-known type, which is not part of this description.
 */
export const MESOS_PROTO_FILES: readonly ProtoFile[] = [
  { name: MESOS_PROTO_FILE, text: MESOS_PROTO },
  { name: ALLOCATOR_PROTO_FILE, text: ALLOCATOR_PROTO },
  { name: MAINTENANCE_PROTO_FILE, text: MAINTENANCE_PROTO },
  { name: QUOTA_PROTO_FILE, text: QUOTA_PROTO },
  { name: SCHEDULER_PROTO_FILE, text: SCHEDULER_PROTO },
  { name: MASTER_PROTO_FILE, text: MASTER_PROTO },
  { name: AGENT_PROTO_FILE, text: AGENT_PROTO },
];

/** The messages at the edges of Mesos' v1 HTTP APIs: what a request body, an answer or an event is. */
export const MESOS_API_MESSAGES = [
  'mesos.v1.master.Call',
  'mesos.v1.master.Response',
  'mesos.v1.master.Event',
  'mesos.v1.agent.Call',
  'mesos.v1.agent.Response',
  'mesos.v1.scheduler.Call',
  'mesos.v1.scheduler.Event',
] as const;

let schema: Root | undefined;

/**
 * The description parsed into one Root, every type resolved (it throws if one does not:
 * a bug in the description, caught by its unit test). Field names are kept as written
 * (`keepCase`): Mesos' JSON is snake_case. Parsed on the first call and cached; callers must
 * not add to or change the Root they get.
 */
export function mesosSchema(): Root {
  if (schema !== undefined) return schema;
  const root = new protobuf.Root();
  // protobufjs carries Google's well-known types itself, as protoc does.
  const duration = protobuf.common.get('google/protobuf/duration.proto');
  if (duration?.nested === undefined) throw new Error('protobufjs lacks google/protobuf/duration.proto');
  root.addJSON(duration.nested);
  for (const file of MESOS_PROTO_FILES) protobuf.parse(file.text, root, { keepCase: true });
  root.resolveAll();
  schema = root;
  return root;
}

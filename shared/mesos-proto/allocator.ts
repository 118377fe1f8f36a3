/**
 * Mesos 1.x's v1 messages, package `mesos.v1.allocator`: a framework's
 * answer to an inverse offer, as the maintenance status reports it.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const ALLOCATOR_PROTO_FILE = 'mesos/v1/allocator/allocator.proto';

/** The proto2 text. */
export const ALLOCATOR_PROTO = `syntax = "proto2";

package mesos.v1.allocator;

import "mesos/v1/mesos.proto";

message InverseOfferStatus {
  enum Status {
    UNKNOWN = 1;
    ACCEPT = 2;
    DECLINE = 3;
  }
  required Status status = 1;
  required FrameworkID framework_id = 2;
  required TimeInfo timestamp = 3;
}
`;

/**
 * Mesos 1.x's v1 messages, package `mesos.v1.maintenance`: maintenance
 * schedules (windows of machines) and the cluster's machines by mode.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const MAINTENANCE_PROTO_FILE = 'mesos/v1/maintenance/maintenance.proto';

/** The proto2 text. */
export const MAINTENANCE_PROTO = `syntax = "proto2";

package mesos.v1.maintenance;

import "mesos/v1/mesos.proto";
import "mesos/v1/allocator/allocator.proto";

message Window {
  repeated MachineID machine_ids = 1;
  required Unavailability unavailability = 2;
}

message Schedule {
  repeated Window windows = 1;
}

message ClusterStatus {
  message DrainingMachine {
    required MachineID id = 1;
    repeated allocator.InverseOfferStatus statuses = 2;
  }
  repeated DrainingMachine draining_machines = 1;
  repeated MachineID down_machines = 2;
}
`;

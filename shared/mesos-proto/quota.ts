/**
 * Mesos 1.x's v1 messages, package `mesos.v1.quota`: quota requests,
 * configurations and status.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const QUOTA_PROTO_FILE = 'mesos/v1/quota/quota.proto';

/** The proto2 text. */
export const QUOTA_PROTO = `syntax = "proto2";

package mesos.v1.quota;

import "mesos/v1/mesos.proto";

message QuotaInfo {
  optional string role = 1;
  optional string principal = 2;
  repeated Resource guarantee = 3;
}

message QuotaRequest {
  optional bool force = 1;
  optional string role = 2;
  repeated Resource guarantee = 3;
}

message QuotaConfig {
  required string role = 1;
  map<string, Value.Scalar> guarantees = 2;
  map<string, Value.Scalar> limits = 3;
}

message QuotaStatus {
  repeated QuotaInfo infos = 1 [deprecated = true];
  repeated QuotaConfig configs = 2;
}
`;

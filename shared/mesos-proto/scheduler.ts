/**
 * Mesos 1.x's v1 messages, package `mesos.v1.scheduler`: the scheduler
 * API (`POST /api/v1/scheduler`): Call, Event, Response and offer constraints.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const SCHEDULER_PROTO_FILE = 'mesos/v1/scheduler/scheduler.proto';

/** The proto2 text. */
export const SCHEDULER_PROTO = `syntax = "proto2";

package mesos.v1.scheduler;

import "mesos/v1/mesos.proto";

message Event {
  enum Type {
    UNKNOWN = 0;
    SUBSCRIBED = 1;
    OFFERS = 2;
    INVERSE_OFFERS = 9;
    RESCIND = 3;
    RESCIND_INVERSE_OFFER = 10;
    UPDATE = 4;
    UPDATE_OPERATION_STATUS = 11;
    MESSAGE = 5;
    FAILURE = 6;
    ERROR = 7;
    HEARTBEAT = 8;
  }
  message Subscribed {
    required FrameworkID framework_id = 1;
    optional double heartbeat_interval_seconds = 2;
    optional MasterInfo master_info = 3;
  }
  message Offers {
    repeated Offer offers = 1;
  }
  message InverseOffers {
    repeated InverseOffer inverse_offers = 1;
  }
  message Rescind {
    required OfferID offer_id = 1;
  }
  message RescindInverseOffer {
    required OfferID inverse_offer_id = 1;
  }
  message Update {
    required TaskStatus status = 1;
  }
  message UpdateOperationStatus {
    required OperationStatus status = 1;
  }
  message Message {
    required AgentID agent_id = 1;
    required ExecutorID executor_id = 2;
    required bytes data = 3;
  }
  message Failure {
    optional AgentID agent_id = 1;
    optional ExecutorID executor_id = 2;
    optional int32 status = 3;
  }
  message Error {
    required string message = 1;
  }
  optional Type type = 1;
  optional Subscribed subscribed = 2;
  optional Offers offers = 3;
  optional Rescind rescind = 4;
  optional Update update = 5;
  optional Message message = 6;
  optional Failure failure = 7;
  optional Error error = 8;
  optional InverseOffers inverse_offers = 9;
  optional RescindInverseOffer rescind_inverse_offer = 10;
  optional UpdateOperationStatus update_operation_status = 11;
}

message Response {
  enum Type {
    UNKNOWN = 0;
    RECONCILE_OPERATIONS = 1 [deprecated = true];
  }
  message ReconcileOperations {
    repeated OperationStatus operation_statuses = 1 [deprecated = true];
  }
  optional Type type = 1;
  optional ReconcileOperations reconcile_operations = 2 [deprecated = true];
}

message AttributeConstraint {
  message Selector {
    enum PseudoattributeType {
      UNKNOWN = 0;
      HOSTNAME = 1;
      REGION = 2;
      ZONE = 3;
    }
    oneof selector {
      PseudoattributeType pseudoattribute_type = 1;
      string attribute_name = 2;
    }
  }
  message Predicate {
    message Exists {}
    message NotExists {}
    message TextEquals {
      required string value = 1;
    }
    message TextNotEquals {
      required string value = 1;
    }
    message TextMatches {
      required string regex = 1;
    }
    message TextNotMatches {
      required string regex = 1;
    }
    oneof predicate {
      Exists exists = 1;
      NotExists not_exists = 2;
      TextEquals text_equals = 3;
      TextNotEquals text_not_equals = 4;
      TextMatches text_matches = 5;
      TextNotMatches text_not_matches = 6;
    }
  }
  required Selector selector = 1;
  required Predicate predicate = 2;
}

message OfferConstraints {
  message RoleConstraints {
    message Group {
      repeated AttributeConstraint attribute_constraints = 1;
    }
    repeated Group groups = 1;
  }
  map<string, RoleConstraints> role_constraints = 1;
}

message Call {
  enum Type {
    UNKNOWN = 0;
    SUBSCRIBE = 1;
    TEARDOWN = 2;
    ACCEPT = 3;
    DECLINE = 4;
    ACCEPT_INVERSE_OFFERS = 13;
    DECLINE_INVERSE_OFFERS = 14;
    REVIVE = 5;
    KILL = 6;
    SHUTDOWN = 7;
    ACKNOWLEDGE = 8;
    ACKNOWLEDGE_OPERATION_STATUS = 15;
    RECONCILE = 9;
    RECONCILE_OPERATIONS = 16;
    MESSAGE = 10;
    REQUEST = 11;
    SUPPRESS = 12;
    UPDATE_FRAMEWORK = 17;
  }
  message Subscribe {
    required FrameworkInfo framework_info = 1;
    repeated string suppressed_roles = 2;
    optional OfferConstraints offer_constraints = 3;
  }
  message Accept {
    repeated OfferID offer_ids = 1;
    repeated Offer.Operation operations = 2;
    optional Filters filters = 3;
  }
  message Decline {
    repeated OfferID offer_ids = 1;
    optional Filters filters = 2;
  }
  message AcceptInverseOffers {
    repeated OfferID inverse_offer_ids = 1;
    optional Filters filters = 2;
  }
  message DeclineInverseOffers {
    repeated OfferID inverse_offer_ids = 1;
    optional Filters filters = 2;
  }
  message Revive {
    repeated string roles = 1;
  }
  message Kill {
    required TaskID task_id = 1;
    optional AgentID agent_id = 2;
    optional KillPolicy kill_policy = 3;
  }
  message Shutdown {
    required ExecutorID executor_id = 1;
    required AgentID agent_id = 2;
  }
  message Acknowledge {
    required AgentID agent_id = 1;
    required TaskID task_id = 2;
    required bytes uuid = 3;
  }
  message AcknowledgeOperationStatus {
    optional AgentID agent_id = 1;
    optional ResourceProviderID resource_provider_id = 2;
    required bytes uuid = 3;
    required OperationID operation_id = 4;
  }
  message Reconcile {
    message Task {
      required TaskID task_id = 1;
      optional AgentID agent_id = 2;
    }
    repeated Task tasks = 1;
  }
  message ReconcileOperations {
    message Operation {
      required OperationID operation_id = 1;
      optional AgentID agent_id = 2;
      optional ResourceProviderID resource_provider_id = 3;
    }
    repeated Operation operations = 1;
  }
  message Message {
    required AgentID agent_id = 1;
    required ExecutorID executor_id = 2;
    required bytes data = 3;
  }
  message Request {
    repeated mesos.v1.Request requests = 1;
  }
  message Suppress {
    repeated string roles = 1;
  }
  message UpdateFramework {
    required FrameworkInfo framework_info = 1;
    repeated string suppressed_roles = 2;
    optional OfferConstraints offer_constraints = 3;
  }
  optional FrameworkID framework_id = 1;
  optional Type type = 2;
  optional Subscribe subscribe = 3;
  optional Accept accept = 4;
  optional Decline decline = 5;
  optional Kill kill = 6;
  optional Shutdown shutdown = 7;
  optional Acknowledge acknowledge = 8;
  optional Reconcile reconcile = 9;
  optional Message message = 10;
  optional Request request = 11;
  optional AcceptInverseOffers accept_inverse_offers = 13;
  optional DeclineInverseOffers decline_inverse_offers = 14;
  optional Revive revive = 15;
  optional Suppress suppress = 16;
  optional AcknowledgeOperationStatus acknowledge_operation_status = 17;
  optional ReconcileOperations reconcile_operations = 18;
  optional UpdateFramework update_framework = 19;
}

message APIResult {
  required uint32 status_code = 1;
  optional Response response = 2;
  optional string error = 3;
}
`;

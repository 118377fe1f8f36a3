/**
 * Mesos 1.x's v1 messages, package `mesos.v1.master`: the master's
 * operator API (`POST /api/v1` on a master): Call, Response, Event.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const MASTER_PROTO_FILE = 'mesos/v1/master/master.proto';

/** The proto2 text. */
export const MASTER_PROTO = `syntax = "proto2";

package mesos.v1.master;

import "google/protobuf/duration.proto";
import "mesos/v1/mesos.proto";
import "mesos/v1/maintenance/maintenance.proto";
import "mesos/v1/quota/quota.proto";
import "mesos/v1/scheduler/scheduler.proto";

message Call {
  enum Type {
    UNKNOWN = 0;
    GET_HEALTH = 1;
    GET_FLAGS = 2;
    GET_VERSION = 3;
    GET_METRICS = 4;
    GET_LOGGING_LEVEL = 5;
    SET_LOGGING_LEVEL = 6;
    LIST_FILES = 7;
    READ_FILE = 8;
    GET_STATE = 9;
    GET_AGENTS = 10;
    GET_FRAMEWORKS = 11;
    GET_EXECUTORS = 12;
    GET_OPERATIONS = 33;
    GET_TASKS = 13;
    GET_ROLES = 14;
    GET_WEIGHTS = 15;
    UPDATE_WEIGHTS = 16;
    GET_MASTER = 17;
    SUBSCRIBE = 18;
    RESERVE_RESOURCES = 19;
    UNRESERVE_RESOURCES = 20;
    CREATE_VOLUMES = 21;
    DESTROY_VOLUMES = 22;
    GROW_VOLUME = 34;
    SHRINK_VOLUME = 35;
    GET_MAINTENANCE_STATUS = 23;
    GET_MAINTENANCE_SCHEDULE = 24;
    UPDATE_MAINTENANCE_SCHEDULE = 25;
    START_MAINTENANCE = 26;
    STOP_MAINTENANCE = 27;
    DRAIN_AGENT = 37;
    DEACTIVATE_AGENT = 38;
    REACTIVATE_AGENT = 39;
    GET_QUOTA = 28;
    UPDATE_QUOTA = 36;
    SET_QUOTA = 29 [deprecated = true];
    REMOVE_QUOTA = 30 [deprecated = true];
    TEARDOWN = 31;
    MARK_AGENT_GONE = 32;
  }
  message GetMetrics {
    optional DurationInfo timeout = 1;
  }
  message SetLoggingLevel {
    required uint32 level = 1;
    required DurationInfo duration = 2;
  }
  message ListFiles {
    required string path = 1;
  }
  message ReadFile {
    required string path = 1;
    required uint64 offset = 2;
    optional uint64 length = 3;
  }
  message UpdateWeights {
    repeated WeightInfo weight_infos = 1;
  }
  message ReserveResources {
    required AgentID agent_id = 1;
    repeated Resource resources = 2;
    repeated Resource source = 3;
  }
  message UnreserveResources {
    required AgentID agent_id = 1;
    repeated Resource resources = 2;
  }
  message CreateVolumes {
    required AgentID agent_id = 1;
    repeated Resource volumes = 2;
  }
  message DestroyVolumes {
    required AgentID agent_id = 1;
    repeated Resource volumes = 2;
  }
  message GrowVolume {
    optional AgentID agent_id = 1;
    required Resource volume = 2;
    required Resource addition = 3;
  }
  message ShrinkVolume {
    optional AgentID agent_id = 1;
    required Resource volume = 2;
    required Value.Scalar subtract = 3;
  }
  message UpdateMaintenanceSchedule {
    required maintenance.Schedule schedule = 1;
  }
  message StartMaintenance {
    repeated MachineID machines = 1;
  }
  message StopMaintenance {
    repeated MachineID machines = 1;
  }
  message DrainAgent {
    required AgentID agent_id = 1;
    optional google.protobuf.Duration max_grace_period = 2;
    optional bool mark_gone = 3 [default = false];
  }
  message DeactivateAgent {
    required AgentID agent_id = 1;
  }
  message ReactivateAgent {
    required AgentID agent_id = 1;
  }
  message UpdateQuota {
    optional bool force = 1;
    repeated quota.QuotaConfig quota_configs = 2;
  }
  message SetQuota {
    required quota.QuotaRequest quota_request = 1;
  }
  message RemoveQuota {
    required string role = 1;
  }
  message Teardown {
    required FrameworkID framework_id = 1;
  }
  message MarkAgentGone {
    required AgentID agent_id = 1;
  }
  optional Type type = 1;
  optional GetMetrics get_metrics = 2;
  optional SetLoggingLevel set_logging_level = 3;
  optional ListFiles list_files = 4;
  optional ReadFile read_file = 5;
  optional UpdateWeights update_weights = 6;
  optional ReserveResources reserve_resources = 7;
  optional UnreserveResources unreserve_resources = 8;
  optional CreateVolumes create_volumes = 9;
  optional DestroyVolumes destroy_volumes = 10;
  optional UpdateMaintenanceSchedule update_maintenance_schedule = 11;
  optional StartMaintenance start_maintenance = 12;
  optional StopMaintenance stop_maintenance = 13;
  optional SetQuota set_quota = 14 [deprecated = true];
  optional RemoveQuota remove_quota = 15 [deprecated = true];
  optional Teardown teardown = 16;
  optional MarkAgentGone mark_agent_gone = 17;
  optional GrowVolume grow_volume = 18;
  optional ShrinkVolume shrink_volume = 19;
  optional UpdateQuota update_quota = 20;
  optional DrainAgent drain_agent = 21;
  optional DeactivateAgent deactivate_agent = 22;
  optional ReactivateAgent reactivate_agent = 23;
}

message Response {
  enum Type {
    UNKNOWN = 0;
    GET_HEALTH = 1;
    GET_FLAGS = 2;
    GET_VERSION = 3;
    GET_METRICS = 4;
    GET_LOGGING_LEVEL = 5;
    LIST_FILES = 6;
    READ_FILE = 7;
    GET_STATE = 8;
    GET_AGENTS = 9;
    GET_FRAMEWORKS = 10;
    GET_EXECUTORS = 11;
    GET_OPERATIONS = 19;
    GET_TASKS = 12;
    GET_ROLES = 13;
    GET_WEIGHTS = 14;
    GET_MASTER = 15;
    GET_MAINTENANCE_STATUS = 16;
    GET_MAINTENANCE_SCHEDULE = 17;
    GET_QUOTA = 18;
  }
  message GetHealth {
    required bool healthy = 1;
  }
  message GetFlags {
    repeated Flag flags = 1;
  }
  message GetVersion {
    required VersionInfo version_info = 1;
  }
  message GetMetrics {
    repeated Metric metrics = 1;
  }
  message GetLoggingLevel {
    required uint32 level = 1;
  }
  message ListFiles {
    repeated FileInfo file_infos = 1;
  }
  message ReadFile {
    required uint64 size = 1;
    required bytes data = 2;
  }
  message GetState {
    optional GetTasks get_tasks = 1;
    optional GetExecutors get_executors = 2;
    optional GetFrameworks get_frameworks = 3;
    optional GetAgents get_agents = 4;
  }
  message GetAgents {
    message Agent {
      message ResourceProvider {
        required ResourceProviderInfo resource_provider_info = 1;
        repeated Resource total_resources = 2;
      }
      required AgentInfo agent_info = 1;
      required bool active = 2;
      required string version = 3;
      optional string pid = 4;
      optional TimeInfo registered_time = 5;
      optional TimeInfo reregistered_time = 6;
      repeated Resource total_resources = 7;
      repeated Resource allocated_resources = 8;
      repeated Resource offered_resources = 9;
      repeated AgentInfo.Capability capabilities = 10;
      repeated ResourceProvider resource_providers = 11;
      optional bool deactivated = 12;
      optional DrainInfo drain_info = 13;
      optional TimeInfo estimated_drain_start_time = 14;
    }
    repeated Agent agents = 1;
    repeated AgentInfo recovered_agents = 2;
  }
  message GetFrameworks {
    message Framework {
      required FrameworkInfo framework_info = 1;
      required bool active = 2;
      required bool connected = 3;
      optional TimeInfo registered_time = 4;
      optional TimeInfo reregistered_time = 5;
      optional TimeInfo unregistered_time = 6;
      repeated Offer offers = 7;
      repeated InverseOffer inverse_offers = 8;
      repeated Resource allocated_resources = 9;
      repeated Resource offered_resources = 10;
      required bool recovered = 11;
      optional scheduler.OfferConstraints offer_constraints = 12;
    }
    repeated Framework frameworks = 1;
    repeated Framework completed_frameworks = 2;
    repeated FrameworkInfo recovered_frameworks = 3 [deprecated = true];
  }
  message GetExecutors {
    message Executor {
      required ExecutorInfo executor_info = 1;
      required AgentID agent_id = 2;
    }
    repeated Executor executors = 1;
    repeated Executor orphan_executors = 2 [deprecated = true];
  }
  message GetOperations {
    repeated Operation operations = 1;
  }
  message GetTasks {
    repeated Task pending_tasks = 1 [deprecated = true];
    repeated Task tasks = 2;
    repeated Task completed_tasks = 3;
    repeated Task orphan_tasks = 4 [deprecated = true];
    repeated Task unreachable_tasks = 5;
  }
  message GetRoles {
    repeated Role roles = 1;
  }
  message GetWeights {
    repeated WeightInfo weight_infos = 1;
  }
  message GetMaster {
    optional MasterInfo master_info = 1;
    optional double start_time = 2;
    optional double elected_time = 3;
  }
  message GetMaintenanceStatus {
    required maintenance.ClusterStatus status = 1;
  }
  message GetMaintenanceSchedule {
    required maintenance.Schedule schedule = 1;
  }
  message GetQuota {
    required quota.QuotaStatus status = 1;
  }
  optional Type type = 1;
  optional GetHealth get_health = 2;
  optional GetFlags get_flags = 3;
  optional GetVersion get_version = 4;
  optional GetMetrics get_metrics = 5;
  optional GetLoggingLevel get_logging_level = 6;
  optional ListFiles list_files = 7;
  optional ReadFile read_file = 8;
  optional GetState get_state = 9;
  optional GetAgents get_agents = 10;
  optional GetFrameworks get_frameworks = 11;
  optional GetExecutors get_executors = 12;
  optional GetTasks get_tasks = 13;
  optional GetRoles get_roles = 14;
  optional GetWeights get_weights = 15;
  optional GetMaster get_master = 16;
  optional GetMaintenanceStatus get_maintenance_status = 17;
  optional GetMaintenanceSchedule get_maintenance_schedule = 18;
  optional GetQuota get_quota = 19;
  optional GetOperations get_operations = 20;
}

message Event {
  enum Type {
    UNKNOWN = 0;
    SUBSCRIBED = 1;
    TASK_ADDED = 2;
    TASK_UPDATED = 3;
    AGENT_ADDED = 4;
    AGENT_REMOVED = 5;
    FRAMEWORK_ADDED = 6;
    FRAMEWORK_UPDATED = 7;
    FRAMEWORK_REMOVED = 8;
    HEARTBEAT = 9;
  }
  message Subscribed {
    optional Response.GetState get_state = 1;
    optional double heartbeat_interval_seconds = 2;
  }
  message TaskAdded {
    required Task task = 1;
  }
  message TaskUpdated {
    required FrameworkID framework_id = 1;
    required TaskStatus status = 2;
    required TaskState state = 3;
  }
  message FrameworkAdded {
    required Response.GetFrameworks.Framework framework = 1;
  }
  message FrameworkUpdated {
    required Response.GetFrameworks.Framework framework = 1;
  }
  message FrameworkRemoved {
    required FrameworkInfo framework_info = 1;
  }
  message AgentAdded {
    required Response.GetAgents.Agent agent = 1;
  }
  message AgentRemoved {
    required AgentID agent_id = 1;
  }
  optional Type type = 1;
  optional Subscribed subscribed = 2;
  optional TaskAdded task_added = 3;
  optional TaskUpdated task_updated = 4;
  optional AgentAdded agent_added = 5;
  optional AgentRemoved agent_removed = 6;
  optional FrameworkAdded framework_added = 7;
  optional FrameworkUpdated framework_updated = 8;
  optional FrameworkRemoved framework_removed = 9;
}
`;

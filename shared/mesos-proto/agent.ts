/**
 * Mesos 1.x's v1 messages, package `mesos.v1.agent`: the agent's operator
 * API (`POST /api/v1` on an agent): Call, Response, ProcessIO.
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const AGENT_PROTO_FILE = 'mesos/v1/agent/agent.proto';

/** The proto2 text. */
export const AGENT_PROTO = `syntax = "proto2";

package mesos.v1.agent;

import "mesos/v1/mesos.proto";

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
    GET_CONTAINERS = 10;
    GET_FRAMEWORKS = 11;
    GET_EXECUTORS = 12;
    GET_OPERATIONS = 31;
    GET_TASKS = 13;
    GET_AGENT = 20;
    GET_RESOURCE_PROVIDERS = 26;
    LAUNCH_NESTED_CONTAINER = 14 [deprecated = true];
    WAIT_NESTED_CONTAINER = 15 [deprecated = true];
    KILL_NESTED_CONTAINER = 16 [deprecated = true];
    REMOVE_NESTED_CONTAINER = 21 [deprecated = true];
    LAUNCH_NESTED_CONTAINER_SESSION = 17;
    ATTACH_CONTAINER_INPUT = 18;
    ATTACH_CONTAINER_OUTPUT = 19;
    LAUNCH_CONTAINER = 22;
    WAIT_CONTAINER = 23;
    KILL_CONTAINER = 24;
    REMOVE_CONTAINER = 25;
    ADD_RESOURCE_PROVIDER_CONFIG = 27;
    UPDATE_RESOURCE_PROVIDER_CONFIG = 28;
    REMOVE_RESOURCE_PROVIDER_CONFIG = 29;
    MARK_RESOURCE_PROVIDER_GONE = 32;
    PRUNE_IMAGES = 30;
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
  message GetContainers {
    optional bool show_nested = 1;
    optional bool show_standalone = 2;
  }
  message LaunchNestedContainer {
    required ContainerID container_id = 1;
    optional CommandInfo command = 2;
    optional ContainerInfo container = 3;
  }
  message WaitNestedContainer {
    required ContainerID container_id = 1;
  }
  message KillNestedContainer {
    required ContainerID container_id = 1;
    optional int32 signal = 2;
  }
  message RemoveNestedContainer {
    required ContainerID container_id = 1;
  }
  message LaunchNestedContainerSession {
    required ContainerID container_id = 1;
    optional CommandInfo command = 2;
    optional ContainerInfo container = 3;
  }
  message AttachContainerInput {
    enum Type {
      UNKNOWN = 0;
      CONTAINER_ID = 1;
      PROCESS_IO = 2;
    }
    optional Type type = 1;
    optional ContainerID container_id = 2;
    optional ProcessIO process_io = 3;
  }
  message AttachContainerOutput {
    required ContainerID container_id = 1;
  }
  message LaunchContainer {
    required ContainerID container_id = 1;
    optional CommandInfo command = 2;
    repeated Resource resources = 3;
    optional ContainerInfo container = 4;
    map<string, Value.Scalar> limits = 5;
  }
  message WaitContainer {
    required ContainerID container_id = 1;
  }
  message KillContainer {
    required ContainerID container_id = 1;
    optional int32 signal = 2;
  }
  message RemoveContainer {
    required ContainerID container_id = 1;
  }
  message AddResourceProviderConfig {
    required ResourceProviderInfo info = 1;
  }
  message UpdateResourceProviderConfig {
    required ResourceProviderInfo info = 1;
  }
  message RemoveResourceProviderConfig {
    required string type = 1;
    required string name = 2;
  }
  message MarkResourceProviderGone {
    required ResourceProviderID resource_provider_id = 1;
  }
  message PruneImages {
    repeated Image excluded_images = 1;
  }
  optional Type type = 1;
  optional GetMetrics get_metrics = 2;
  optional SetLoggingLevel set_logging_level = 3;
  optional ListFiles list_files = 4;
  optional ReadFile read_file = 5;
  optional LaunchNestedContainer launch_nested_container = 6 [deprecated = true];
  optional WaitNestedContainer wait_nested_container = 7 [deprecated = true];
  optional KillNestedContainer kill_nested_container = 8 [deprecated = true];
  optional LaunchNestedContainerSession launch_nested_container_session = 9;
  optional AttachContainerInput attach_container_input = 10;
  optional AttachContainerOutput attach_container_output = 11;
  optional RemoveNestedContainer remove_nested_container = 12 [deprecated = true];
  optional LaunchContainer launch_container = 13;
  optional WaitContainer wait_container = 14;
  optional KillContainer kill_container = 15;
  optional RemoveContainer remove_container = 16;
  optional AddResourceProviderConfig add_resource_provider_config = 17;
  optional UpdateResourceProviderConfig update_resource_provider_config = 18;
  optional RemoveResourceProviderConfig remove_resource_provider_config = 19;
  optional GetContainers get_containers = 20;
  optional PruneImages prune_images = 21;
  optional MarkResourceProviderGone mark_resource_provider_gone = 22;
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
    GET_CONTAINERS = 9;
    GET_FRAMEWORKS = 10;
    GET_EXECUTORS = 11;
    GET_OPERATIONS = 17;
    GET_TASKS = 12;
    GET_AGENT = 14;
    GET_RESOURCE_PROVIDERS = 16;
    WAIT_NESTED_CONTAINER = 13 [deprecated = true];
    WAIT_CONTAINER = 15;
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
  }
  message GetContainers {
    message Container {
      optional FrameworkID framework_id = 1;
      optional ExecutorID executor_id = 2;
      optional string executor_name = 3;
      required ContainerID container_id = 4;
      optional ContainerStatus container_status = 5;
      optional ResourceStatistics resource_statistics = 6;
    }
    repeated Container containers = 1;
  }
  message GetFrameworks {
    message Framework {
      required FrameworkInfo framework_info = 1;
    }
    repeated Framework frameworks = 1;
    repeated Framework completed_frameworks = 2;
  }
  message GetExecutors {
    message Executor {
      required ExecutorInfo executor_info = 1;
    }
    repeated Executor executors = 1;
    repeated Executor completed_executors = 2;
  }
  message GetOperations {
    repeated Operation operations = 1;
  }
  message GetTasks {
    repeated Task pending_tasks = 1;
    repeated Task queued_tasks = 2;
    repeated Task launched_tasks = 3;
    repeated Task terminated_tasks = 4;
    repeated Task completed_tasks = 5;
  }
  message GetAgent {
    optional AgentInfo agent_info = 1;
    optional DrainConfig drain_config = 2;
    optional TimeInfo estimated_drain_start_time = 3;
  }
  message GetResourceProviders {
    message ResourceProvider {
      required ResourceProviderInfo resource_provider_info = 1;
      repeated Resource total_resources = 2;
    }
    repeated ResourceProvider resource_providers = 1;
  }
  message WaitNestedContainer {
    optional int32 exit_status = 1;
    optional TaskState state = 2;
    optional TaskStatus.Reason reason = 3;
    optional TaskResourceLimitation limitation = 4;
    optional string message = 5;
  }
  message WaitContainer {
    optional int32 exit_status = 1;
    optional TaskState state = 2;
    optional TaskStatus.Reason reason = 3;
    optional TaskResourceLimitation limitation = 4;
    optional string message = 5;
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
  optional GetContainers get_containers = 10;
  optional GetFrameworks get_frameworks = 11;
  optional GetExecutors get_executors = 12;
  optional GetTasks get_tasks = 13;
  optional WaitNestedContainer wait_nested_container = 14;
  optional GetAgent get_agent = 15;
  optional WaitContainer wait_container = 16;
  optional GetResourceProviders get_resource_providers = 17;
  optional GetOperations get_operations = 18;
}

message ProcessIO {
  enum Type {
    UNKNOWN = 0;
    DATA = 1;
    CONTROL = 2;
  }
  message Data {
    enum Type {
      UNKNOWN = 0;
      STDIN = 1;
      STDOUT = 2;
      STDERR = 3;
    }
    optional Type type = 1;
    optional bytes data = 2;
  }
  message Control {
    enum Type {
      UNKNOWN = 0;
      TTY_INFO = 1;
      HEARTBEAT = 2;
    }
    message Heartbeat {
      optional DurationInfo interval = 1;
    }
    optional Type type = 1;
    optional TTYInfo tty_info = 2;
    optional Heartbeat heartbeat = 3;
  }
  optional Type type = 1;
  optional Data data = 2;
  optional Control control = 3;
}
`;

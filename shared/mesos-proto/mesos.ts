/**
 * Mesos 1.x's v1 messages, package `mesos.v1`: the messages the other
 * packages share (ids, resources, frameworks, agents, tasks and their statuses, executors,
 * containers, offers and operations, maintenance windows, checks, labels, ...).
 *
 * Written in this project as Drydock's description of that interface (see ./schema.ts): the
 * facts a client depends on, complete for every message, and none of Mesos' own text.
 */

/** The file name other descriptions import this one by. */
export const MESOS_PROTO_FILE = 'mesos/v1/mesos.proto';

/** The proto2 text. */
export const MESOS_PROTO = `syntax = "proto2";

package mesos.v1;

enum Status {
  DRIVER_NOT_STARTED = 1;
  DRIVER_RUNNING = 2;
  DRIVER_ABORTED = 3;
  DRIVER_STOPPED = 4;
}

message FrameworkID {
  required string value = 1;
}

message OfferID {
  required string value = 1;
}

message AgentID {
  required string value = 1;
}

message TaskID {
  required string value = 1;
}

message ExecutorID {
  required string value = 1;
}

message ContainerID {
  required string value = 1;
  optional ContainerID parent = 2;
}

message ResourceProviderID {
  required string value = 1;
}

message OperationID {
  required string value = 1;
}

message TimeInfo {
  required int64 nanoseconds = 1;
}

message DurationInfo {
  required int64 nanoseconds = 1;
}

message Address {
  optional string hostname = 1;
  optional string ip = 2;
  required int32 port = 3;
}

message URL {
  required string scheme = 1;
  required Address address = 2;
  optional string path = 3;
  repeated Parameter query = 4;
  optional string fragment = 5;
}

message Unavailability {
  required TimeInfo start = 1;
  optional DurationInfo duration = 2;
}

message MachineID {
  optional string hostname = 1;
  optional string ip = 2;
}

message MachineInfo {
  enum Mode {
    UP = 1;
    DRAINING = 2;
    DOWN = 3;
  }
  required MachineID id = 1;
  optional Mode mode = 2;
  optional Unavailability unavailability = 3;
}

message FrameworkInfo {
  message Capability {
    enum Type {
      UNKNOWN = 0;
      REVOCABLE_RESOURCES = 1;
      TASK_KILLING_STATE = 2;
      GPU_RESOURCES = 3;
      SHARED_RESOURCES = 4;
      PARTITION_AWARE = 5;
      MULTI_ROLE = 6;
      RESERVATION_REFINEMENT = 7;
      REGION_AWARE = 8;
    }
    optional Type type = 1;
  }
  required string user = 1;
  required string name = 2;
  optional FrameworkID id = 3;
  optional double failover_timeout = 4 [default = 0.0];
  optional bool checkpoint = 5 [default = false];
  optional string role = 6 [default = "*", deprecated = true];
  optional string hostname = 7;
  optional string principal = 8;
  optional string webui_url = 9;
  repeated Capability capabilities = 10;
  optional Labels labels = 11;
  repeated string roles = 12;
  map<string, OfferFilters> offer_filters = 13;
}

message CheckInfo {
  enum Type {
    UNKNOWN = 0;
    COMMAND = 1;
    HTTP = 2;
    TCP = 3;
  }
  message Command {
    required CommandInfo command = 1;
  }
  message Http {
    required uint32 port = 1;
    optional string path = 2;
  }
  message Tcp {
    required uint32 port = 1;
  }
  optional Type type = 1;
  optional Command command = 2;
  optional Http http = 3;
  optional double delay_seconds = 4 [default = 15.0];
  optional double interval_seconds = 5 [default = 10.0];
  optional double timeout_seconds = 6 [default = 20.0];
  optional Tcp tcp = 7;
}

message HealthCheck {
  enum Type {
    UNKNOWN = 0;
    COMMAND = 1;
    HTTP = 2;
    TCP = 3;
  }
  message HTTPCheckInfo {
    required uint32 port = 1;
    optional string path = 2;
    optional string scheme = 3;
    repeated uint32 statuses = 4;
    optional NetworkInfo.Protocol protocol = 5 [default = IPv4];
  }
  message TCPCheckInfo {
    required uint32 port = 1;
    optional NetworkInfo.Protocol protocol = 2 [default = IPv4];
  }
  optional HTTPCheckInfo http = 1;
  optional double delay_seconds = 2 [default = 15.0];
  optional double interval_seconds = 3 [default = 10.0];
  optional double timeout_seconds = 4 [default = 20.0];
  optional uint32 consecutive_failures = 5 [default = 3];
  optional double grace_period_seconds = 6 [default = 10.0];
  optional CommandInfo command = 7;
  optional Type type = 8;
  optional TCPCheckInfo tcp = 9;
}

message KillPolicy {
  optional DurationInfo grace_period = 1;
}

message CommandInfo {
  message URI {
    required string value = 1;
    optional bool executable = 2;
    optional bool extract = 3 [default = true];
    optional bool cache = 4;
    optional string output_file = 5;
  }
  repeated URI uris = 1;
  optional Environment environment = 2;
  optional string value = 3;
  optional string user = 5;
  optional bool shell = 6 [default = true];
  repeated string arguments = 7;
}

message ExecutorInfo {
  enum Type {
    UNKNOWN = 0;
    DEFAULT = 1;
    CUSTOM = 2;
  }
  required ExecutorID executor_id = 1;
  optional bytes data = 4;
  repeated Resource resources = 5;
  optional CommandInfo command = 7;
  optional FrameworkID framework_id = 8;
  optional string name = 9;
  optional string source = 10 [deprecated = true];
  optional ContainerInfo container = 11;
  optional DiscoveryInfo discovery = 12;
  optional DurationInfo shutdown_grace_period = 13;
  optional Labels labels = 14;
  optional Type type = 15;
}

message DomainInfo {
  message FaultDomain {
    message RegionInfo {
      required string name = 1;
    }
    message ZoneInfo {
      required string name = 1;
    }
    required RegionInfo region = 1;
    required ZoneInfo zone = 2;
  }
  optional FaultDomain fault_domain = 1;
}

message MasterInfo {
  message Capability {
    enum Type {
      UNKNOWN = 0;
      AGENT_UPDATE = 1;
      AGENT_DRAINING = 2;
      QUOTA_V2 = 3;
    }
    optional Type type = 1;
  }
  required string id = 1;
  required uint32 ip = 2;
  required uint32 port = 3 [default = 5050];
  optional string pid = 4;
  optional string hostname = 5;
  optional string version = 6;
  optional Address address = 7;
  optional DomainInfo domain = 8;
  repeated Capability capabilities = 9;
}

message AgentInfo {
  message Capability {
    enum Type {
      UNKNOWN = 0;
      MULTI_ROLE = 1;
      HIERARCHICAL_ROLE = 2;
      RESERVATION_REFINEMENT = 3;
      RESOURCE_PROVIDER = 4;
      RESIZE_VOLUME = 5;
      AGENT_OPERATION_FEEDBACK = 6;
      AGENT_DRAINING = 7;
      TASK_RESOURCE_LIMITS = 8;
    }
    optional Type type = 1;
  }
  required string hostname = 1;
  repeated Resource resources = 3;
  repeated Attribute attributes = 5;
  optional AgentID id = 6;
  optional int32 port = 8 [default = 5051];
  optional DomainInfo domain = 10;
}

message CSIPluginContainerInfo {
  enum Service {
    UNKNOWN = 0;
    CONTROLLER_SERVICE = 1;
    NODE_SERVICE = 2;
  }
  repeated Service services = 1;
  optional CommandInfo command = 2;
  repeated Resource resources = 3;
  optional ContainerInfo container = 4;
}

message CSIPluginEndpoint {
  required CSIPluginContainerInfo.Service csi_service = 1;
  required string endpoint = 2;
}

message CSIPluginInfo {
  required string type = 1;
  optional string name = 2 [default = "default"];
  repeated CSIPluginContainerInfo containers = 3;
  repeated CSIPluginEndpoint endpoints = 4;
  optional string target_path_root = 5;
  optional bool target_path_exists = 6;
}

message ResourceProviderInfo {
  message Storage {
    required CSIPluginInfo plugin = 1;
    optional double reconciliation_interval_seconds = 2;
  }
  optional ResourceProviderID id = 1;
  repeated Attribute attributes = 2;
  required string type = 3;
  required string name = 4;
  repeated Resource.ReservationInfo default_reservations = 5;
  optional Storage storage = 6;
}

message Value {
  enum Type {
    SCALAR = 0;
    RANGES = 1;
    SET = 2;
    TEXT = 3;
  }
  message Scalar {
    required double value = 1;
  }
  message Range {
    required uint64 begin = 1;
    required uint64 end = 2;
  }
  message Ranges {
    repeated Range range = 1;
  }
  message Set {
    repeated string item = 1;
  }
  message Text {
    required string value = 1;
  }
  required Type type = 1;
  optional Scalar scalar = 2;
  optional Ranges ranges = 3;
  optional Set set = 4;
  optional Text text = 5;
}

message Attribute {
  required string name = 1;
  required Value.Type type = 2;
  optional Value.Scalar scalar = 3;
  optional Value.Ranges ranges = 4;
  optional Value.Text text = 5;
  optional Value.Set set = 6;
}

message Resource {
  message AllocationInfo {
    optional string role = 1;
  }
  message ReservationInfo {
    enum Type {
      UNKNOWN = 0;
      STATIC = 1;
      DYNAMIC = 2;
    }
    optional string principal = 1;
    optional Labels labels = 2;
    optional string role = 3;
    optional Type type = 4;
  }
  message DiskInfo {
    message Persistence {
      required string id = 1;
      optional string principal = 2;
    }
    message Source {
      enum Type {
        UNKNOWN = 0;
        PATH = 1;
        MOUNT = 2;
        BLOCK = 3;
        RAW = 4;
      }
      message Path {
        optional string root = 1;
      }
      message Mount {
        optional string root = 1;
      }
      required Type type = 1;
      optional Path path = 2;
      optional Mount mount = 3;
      optional string id = 4;
      optional Labels metadata = 5;
      optional string profile = 6;
      optional string vendor = 7;
    }
    optional Persistence persistence = 1;
    optional Volume volume = 2;
    optional Source source = 3;
  }
  message RevocableInfo {}
  message SharedInfo {}
  required string name = 1;
  required Value.Type type = 2;
  optional Value.Scalar scalar = 3;
  optional Value.Ranges ranges = 4;
  optional Value.Set set = 5;
  optional string role = 6 [default = "*", deprecated = true];
  optional DiskInfo disk = 7;
  optional ReservationInfo reservation = 8;
  optional RevocableInfo revocable = 9;
  optional SharedInfo shared = 10;
  optional AllocationInfo allocation_info = 11;
  optional ResourceProviderID provider_id = 12;
  repeated ReservationInfo reservations = 13;
}

message TrafficControlStatistics {
  required string id = 1;
  optional uint64 backlog = 2;
  optional uint64 bytes = 3;
  optional uint64 drops = 4;
  optional uint64 overlimits = 5;
  optional uint64 packets = 6;
  optional uint64 qlen = 7;
  optional uint64 ratebps = 8;
  optional uint64 ratepps = 9;
  optional uint64 requeues = 10;
}

message IpStatistics {
  optional int64 Forwarding = 1;
  optional int64 DefaultTTL = 2;
  optional int64 InReceives = 3;
  optional int64 InHdrErrors = 4;
  optional int64 InAddrErrors = 5;
  optional int64 ForwDatagrams = 6;
  optional int64 InUnknownProtos = 7;
  optional int64 InDiscards = 8;
  optional int64 InDelivers = 9;
  optional int64 OutRequests = 10;
  optional int64 OutDiscards = 11;
  optional int64 OutNoRoutes = 12;
  optional int64 ReasmTimeout = 13;
  optional int64 ReasmReqds = 14;
  optional int64 ReasmOKs = 15;
  optional int64 ReasmFails = 16;
  optional int64 FragOKs = 17;
  optional int64 FragFails = 18;
  optional int64 FragCreates = 19;
}

message IcmpStatistics {
  optional int64 InMsgs = 1;
  optional int64 InErrors = 2;
  optional int64 InCsumErrors = 3;
  optional int64 InDestUnreachs = 4;
  optional int64 InTimeExcds = 5;
  optional int64 InParmProbs = 6;
  optional int64 InSrcQuenchs = 7;
  optional int64 InRedirects = 8;
  optional int64 InEchos = 9;
  optional int64 InEchoReps = 10;
  optional int64 InTimestamps = 11;
  optional int64 InTimestampReps = 12;
  optional int64 InAddrMasks = 13;
  optional int64 InAddrMaskReps = 14;
  optional int64 OutMsgs = 15;
  optional int64 OutErrors = 16;
  optional int64 OutDestUnreachs = 17;
  optional int64 OutTimeExcds = 18;
  optional int64 OutParmProbs = 19;
  optional int64 OutSrcQuenchs = 20;
  optional int64 OutRedirects = 21;
  optional int64 OutEchos = 22;
  optional int64 OutEchoReps = 23;
  optional int64 OutTimestamps = 24;
  optional int64 OutTimestampReps = 25;
  optional int64 OutAddrMasks = 26;
  optional int64 OutAddrMaskReps = 27;
}

message TcpStatistics {
  optional int64 RtoAlgorithm = 1;
  optional int64 RtoMin = 2;
  optional int64 RtoMax = 3;
  optional int64 MaxConn = 4;
  optional int64 ActiveOpens = 5;
  optional int64 PassiveOpens = 6;
  optional int64 AttemptFails = 7;
  optional int64 EstabResets = 8;
  optional int64 CurrEstab = 9;
  optional int64 InSegs = 10;
  optional int64 OutSegs = 11;
  optional int64 RetransSegs = 12;
  optional int64 InErrs = 13;
  optional int64 OutRsts = 14;
  optional int64 InCsumErrors = 15;
}

message UdpStatistics {
  optional int64 InDatagrams = 1;
  optional int64 NoPorts = 2;
  optional int64 InErrors = 3;
  optional int64 OutDatagrams = 4;
  optional int64 RcvbufErrors = 5;
  optional int64 SndbufErrors = 6;
  optional int64 InCsumErrors = 7;
  optional int64 IgnoredMulti = 8;
}

message SNMPStatistics {
  optional IpStatistics ip_stats = 1;
  optional IcmpStatistics icmp_stats = 2;
  optional TcpStatistics tcp_stats = 3;
  optional UdpStatistics udp_stats = 4;
}

message DiskStatistics {
  optional Resource.DiskInfo.Source source = 1;
  optional Resource.DiskInfo.Persistence persistence = 2;
  optional uint64 limit_bytes = 3;
  optional uint64 used_bytes = 4;
}

message ResourceStatistics {
  message RatePercentiles {
    optional uint64 min = 1;
    optional uint64 max = 2;
    optional uint64 p50 = 3;
    optional uint64 p90 = 4;
    optional uint64 p95 = 5;
    optional uint64 p99 = 6;
    optional uint64 p999 = 7;
    optional uint64 p9999 = 8;
    optional uint64 samples = 9;
  }
  message RateStatistics {
    optional RatePercentiles rx_rate = 1;
    optional RatePercentiles rx_packet_rate = 2;
    optional RatePercentiles rx_drop_rate = 3;
    optional RatePercentiles rx_error_rate = 4;
    optional RatePercentiles tx_rate = 5;
    optional RatePercentiles tx_packet_rate = 6;
    optional RatePercentiles tx_drop_rate = 7;
    optional RatePercentiles tx_error_rate = 8;
    optional double sampling_window_secs = 9;
    optional double sampling_interval_secs = 10;
  }
  required double timestamp = 1;
  optional double cpus_user_time_secs = 2;
  optional double cpus_system_time_secs = 3;
  optional double cpus_limit = 4;
  optional uint64 mem_rss_bytes = 5;
  optional uint64 mem_limit_bytes = 6;
  optional uint32 cpus_nr_periods = 7;
  optional uint32 cpus_nr_throttled = 8;
  optional double cpus_throttled_time_secs = 9;
  optional uint64 mem_file_bytes = 10;
  optional uint64 mem_anon_bytes = 11;
  optional uint64 mem_mapped_file_bytes = 12;
  optional PerfStatistics perf = 13;
  optional uint64 net_rx_packets = 14;
  optional uint64 net_rx_bytes = 15;
  optional uint64 net_rx_errors = 16;
  optional uint64 net_rx_dropped = 17;
  optional uint64 net_tx_packets = 18;
  optional uint64 net_tx_bytes = 19;
  optional uint64 net_tx_errors = 20;
  optional uint64 net_tx_dropped = 21;
  optional double net_tcp_rtt_microsecs_p50 = 22;
  optional double net_tcp_rtt_microsecs_p90 = 23;
  optional double net_tcp_rtt_microsecs_p95 = 24;
  optional double net_tcp_rtt_microsecs_p99 = 25;
  optional uint64 disk_limit_bytes = 26;
  optional uint64 disk_used_bytes = 27;
  optional double net_tcp_active_connections = 28;
  optional double net_tcp_time_wait_connections = 29;
  optional uint32 processes = 30;
  optional uint32 threads = 31;
  optional uint64 mem_low_pressure_counter = 32;
  optional uint64 mem_medium_pressure_counter = 33;
  optional uint64 mem_critical_pressure_counter = 34;
  repeated TrafficControlStatistics net_traffic_control_statistics = 35;
  optional uint64 mem_total_bytes = 36;
  optional uint64 mem_total_memsw_bytes = 37;
  optional uint64 mem_soft_limit_bytes = 38;
  optional uint64 mem_cache_bytes = 39;
  optional uint64 mem_swap_bytes = 40;
  optional uint64 mem_unevictable_bytes = 41;
  optional SNMPStatistics net_snmp_statistics = 42;
  repeated DiskStatistics disk_statistics = 43;
  optional CgroupInfo.Blkio.Statistics blkio_statistics = 44;
  optional double cpus_soft_limit = 45;
  optional uint64 net_tx_rate_limit = 46;
  optional uint64 net_tx_burst_rate_limit = 47;
  optional uint64 net_tx_burst_size = 48;
  optional uint64 net_rx_rate_limit = 49;
  optional uint64 net_rx_burst_rate_limit = 50;
  optional uint64 net_rx_burst_size = 51;
  optional uint64 mem_kmem_usage_bytes = 52;
  optional uint64 mem_kmem_tcp_usage_bytes = 53;
  optional RateStatistics net_rate_statistics = 54;
  optional Value.Range net_ephemeral_ports = 55;
}

message ResourceUsage {
  message Executor {
    message Task {
      required string name = 1;
      required TaskID id = 2;
      repeated Resource resources = 3;
      optional Labels labels = 4;
    }
    required ExecutorInfo executor_info = 1;
    repeated Resource allocated = 2;
    optional ResourceStatistics statistics = 3;
    required ContainerID container_id = 4;
    repeated Task tasks = 5;
  }
  repeated Executor executors = 1;
  repeated Resource total = 2;
}

message PerfStatistics {
  required double timestamp = 1;
  required double duration = 2;
  optional uint64 cycles = 3;
  optional uint64 stalled_cycles_frontend = 4;
  optional uint64 stalled_cycles_backend = 5;
  optional uint64 instructions = 6;
  optional uint64 cache_references = 7;
  optional uint64 cache_misses = 8;
  optional uint64 branches = 9;
  optional uint64 branch_misses = 10;
  optional uint64 bus_cycles = 11;
  optional uint64 ref_cycles = 12;
  optional double cpu_clock = 13;
  optional double task_clock = 14;
  optional uint64 page_faults = 15;
  optional uint64 minor_faults = 16;
  optional uint64 major_faults = 17;
  optional uint64 context_switches = 18;
  optional uint64 cpu_migrations = 19;
  optional uint64 alignment_faults = 20;
  optional uint64 emulation_faults = 21;
  optional uint64 l1_dcache_loads = 22;
  optional uint64 l1_dcache_load_misses = 23;
  optional uint64 l1_dcache_stores = 24;
  optional uint64 l1_dcache_store_misses = 25;
  optional uint64 l1_dcache_prefetches = 26;
  optional uint64 l1_dcache_prefetch_misses = 27;
  optional uint64 l1_icache_loads = 28;
  optional uint64 l1_icache_load_misses = 29;
  optional uint64 l1_icache_prefetches = 30;
  optional uint64 l1_icache_prefetch_misses = 31;
  optional uint64 llc_loads = 32;
  optional uint64 llc_load_misses = 33;
  optional uint64 llc_stores = 34;
  optional uint64 llc_store_misses = 35;
  optional uint64 llc_prefetches = 36;
  optional uint64 llc_prefetch_misses = 37;
  optional uint64 dtlb_loads = 38;
  optional uint64 dtlb_load_misses = 39;
  optional uint64 dtlb_stores = 40;
  optional uint64 dtlb_store_misses = 41;
  optional uint64 dtlb_prefetches = 42;
  optional uint64 dtlb_prefetch_misses = 43;
  optional uint64 itlb_loads = 44;
  optional uint64 itlb_load_misses = 45;
  optional uint64 branch_loads = 46;
  optional uint64 branch_load_misses = 47;
  optional uint64 node_loads = 48;
  optional uint64 node_load_misses = 49;
  optional uint64 node_stores = 50;
  optional uint64 node_store_misses = 51;
  optional uint64 node_prefetches = 52;
  optional uint64 node_prefetch_misses = 53;
}

message OfferFilters {
  message ResourceQuantities {
    map<string, Value.Scalar> quantities = 1;
  }
  message MinAllocatableResources {
    repeated ResourceQuantities quantities = 1;
  }
  optional MinAllocatableResources min_allocatable_resources = 1;
}

message Request {
  optional AgentID agent_id = 1;
  repeated Resource resources = 2;
}

message Offer {
  message Operation {
    enum Type {
      UNKNOWN = 0;
      LAUNCH = 1;
      LAUNCH_GROUP = 6;
      RESERVE = 2;
      UNRESERVE = 3;
      CREATE = 4;
      DESTROY = 5;
      GROW_VOLUME = 11;
      SHRINK_VOLUME = 12;
      CREATE_DISK = 13;
      DESTROY_DISK = 14;
    }
    message Launch {
      repeated TaskInfo task_infos = 1;
    }
    message LaunchGroup {
      required ExecutorInfo executor = 1;
      required TaskGroupInfo task_group = 2;
    }
    message Reserve {
      repeated Resource resources = 1;
      repeated Resource source = 2;
    }
    message Unreserve {
      repeated Resource resources = 1;
    }
    message Create {
      repeated Resource volumes = 1;
    }
    message Destroy {
      repeated Resource volumes = 1;
    }
    message GrowVolume {
      required Resource volume = 1;
      required Resource addition = 2;
    }
    message ShrinkVolume {
      required Resource volume = 1;
      required Value.Scalar subtract = 2;
    }
    message CreateDisk {
      required Resource source = 1;
      required Resource.DiskInfo.Source.Type target_type = 2;
      optional string target_profile = 3;
    }
    message DestroyDisk {
      required Resource source = 1;
    }
    optional Type type = 1;
    optional Launch launch = 2;
    optional Reserve reserve = 3;
    optional Unreserve unreserve = 4;
    optional Create create = 5;
    optional Destroy destroy = 6;
    optional LaunchGroup launch_group = 7;
    optional OperationID id = 12;
    optional GrowVolume grow_volume = 13;
    optional ShrinkVolume shrink_volume = 14;
    optional CreateDisk create_disk = 15;
    optional DestroyDisk destroy_disk = 16;
  }
  required OfferID id = 1;
  required FrameworkID framework_id = 2;
  required AgentID agent_id = 3;
  required string hostname = 4;
  repeated Resource resources = 5;
  repeated ExecutorID executor_ids = 6;
  repeated Attribute attributes = 7;
  optional URL url = 8;
  optional Unavailability unavailability = 9;
  optional Resource.AllocationInfo allocation_info = 10;
  optional DomainInfo domain = 11;
}

message InverseOffer {
  required OfferID id = 1;
  optional URL url = 2;
  required FrameworkID framework_id = 3;
  optional AgentID agent_id = 4;
  required Unavailability unavailability = 5;
  repeated Resource resources = 6;
}

message TaskInfo {
  required string name = 1;
  required TaskID task_id = 2;
  required AgentID agent_id = 3;
  repeated Resource resources = 4;
  optional ExecutorInfo executor = 5;
  optional bytes data = 6;
  optional CommandInfo command = 7;
  optional HealthCheck health_check = 8;
  optional ContainerInfo container = 9;
  optional Labels labels = 10;
  optional DiscoveryInfo discovery = 11;
  optional KillPolicy kill_policy = 12;
  optional CheckInfo check = 13;
  optional DurationInfo max_completion_time = 14;
  map<string, Value.Scalar> limits = 15;
}

message TaskGroupInfo {
  repeated TaskInfo tasks = 1;
}

message Task {
  required string name = 1;
  required TaskID task_id = 2;
  required FrameworkID framework_id = 3;
  optional ExecutorID executor_id = 4;
  required AgentID agent_id = 5;
  required TaskState state = 6;
  repeated Resource resources = 7;
  repeated TaskStatus statuses = 8;
  optional TaskState status_update_state = 9;
  optional bytes status_update_uuid = 10;
  optional Labels labels = 11;
  optional DiscoveryInfo discovery = 12;
  optional ContainerInfo container = 13;
  optional string user = 14;
  optional HealthCheck health_check = 15;
  optional KillPolicy kill_policy = 16;
  map<string, Value.Scalar> limits = 17;
}

enum TaskState {
  TASK_STAGING = 6;
  TASK_STARTING = 0;
  TASK_RUNNING = 1;
  TASK_KILLING = 8;
  TASK_FINISHED = 2;
  TASK_FAILED = 3;
  TASK_KILLED = 4;
  TASK_ERROR = 7;
  TASK_LOST = 5;
  TASK_DROPPED = 9;
  TASK_UNREACHABLE = 10;
  TASK_GONE = 11;
  TASK_GONE_BY_OPERATOR = 12;
  TASK_UNKNOWN = 13;
}

message TaskResourceLimitation {
  repeated Resource resources = 1;
}

message UUID {
  required bytes value = 1;
}

message Operation {
  optional FrameworkID framework_id = 1;
  optional AgentID agent_id = 2;
  required Offer.Operation info = 3;
  required OperationStatus latest_status = 4;
  repeated OperationStatus statuses = 5;
  required UUID uuid = 6;
}

enum OperationState {
  OPERATION_UNSUPPORTED = 0;
  OPERATION_PENDING = 1;
  OPERATION_FINISHED = 2;
  OPERATION_FAILED = 3;
  OPERATION_ERROR = 4;
  OPERATION_DROPPED = 5;
  OPERATION_UNREACHABLE = 6;
  OPERATION_GONE_BY_OPERATOR = 7;
  OPERATION_RECOVERING = 8;
  OPERATION_UNKNOWN = 9;
}

message OperationStatus {
  optional OperationID operation_id = 1;
  required OperationState state = 2;
  optional string message = 3;
  repeated Resource converted_resources = 4;
  optional UUID uuid = 5;
  optional AgentID agent_id = 6;
  optional ResourceProviderID resource_provider_id = 7;
}

message CheckStatusInfo {
  message Command {
    optional int32 exit_code = 1;
  }
  message Http {
    optional uint32 status_code = 1;
  }
  message Tcp {
    optional bool succeeded = 1;
  }
  optional CheckInfo.Type type = 1;
  optional Command command = 2;
  optional Http http = 3;
  optional Tcp tcp = 4;
}

message TaskStatus {
  enum Source {
    SOURCE_MASTER = 0;
    SOURCE_AGENT = 1;
    SOURCE_EXECUTOR = 2;
  }
  enum Reason {
    REASON_COMMAND_EXECUTOR_FAILED = 0;
    REASON_CONTAINER_LAUNCH_FAILED = 21;
    REASON_CONTAINER_LIMITATION = 19;
    REASON_CONTAINER_LIMITATION_DISK = 20;
    REASON_CONTAINER_LIMITATION_MEMORY = 8;
    REASON_CONTAINER_PREEMPTED = 17;
    REASON_CONTAINER_UPDATE_FAILED = 22;
    REASON_MAX_COMPLETION_TIME_REACHED = 33;
    REASON_EXECUTOR_REGISTRATION_TIMEOUT = 23;
    REASON_EXECUTOR_REREGISTRATION_TIMEOUT = 24;
    REASON_EXECUTOR_TERMINATED = 1;
    REASON_EXECUTOR_UNREGISTERED = 2;
    REASON_FRAMEWORK_REMOVED = 3;
    REASON_GC_ERROR = 4;
    REASON_INVALID_FRAMEWORKID = 5;
    REASON_INVALID_OFFERS = 6;
    REASON_IO_SWITCHBOARD_EXITED = 27;
    REASON_MASTER_DISCONNECTED = 7;
    REASON_RECONCILIATION = 9;
    REASON_RESOURCES_UNKNOWN = 18;
    REASON_AGENT_DISCONNECTED = 10;
    REASON_AGENT_DRAINING = 34;
    REASON_AGENT_REMOVED = 11;
    REASON_AGENT_REMOVED_BY_OPERATOR = 31;
    REASON_AGENT_REREGISTERED = 32;
    REASON_AGENT_RESTARTED = 12;
    REASON_AGENT_UNKNOWN = 13;
    REASON_TASK_KILLED_DURING_LAUNCH = 30;
    REASON_TASK_CHECK_STATUS_UPDATED = 28;
    REASON_TASK_HEALTH_CHECK_STATUS_UPDATED = 29;
    REASON_TASK_GROUP_INVALID = 25;
    REASON_TASK_GROUP_UNAUTHORIZED = 26;
    REASON_TASK_INVALID = 14;
    REASON_TASK_UNAUTHORIZED = 15;
    REASON_TASK_UNKNOWN = 16;
  }
  required TaskID task_id = 1;
  required TaskState state = 2;
  optional bytes data = 3;
  optional string message = 4;
  optional AgentID agent_id = 5;
  optional double timestamp = 6;
  optional ExecutorID executor_id = 7;
  optional bool healthy = 8;
  optional Source source = 9;
  optional Reason reason = 10;
  optional bytes uuid = 11;
  optional Labels labels = 12;
  optional ContainerStatus container_status = 13;
  optional TimeInfo unreachable_time = 14;
  optional CheckStatusInfo check_status = 15;
  optional TaskResourceLimitation limitation = 16;
}

message Filters {
  optional double refuse_seconds = 1 [default = 5.0];
}

message Environment {
  message Variable {
    enum Type {
      UNKNOWN = 0;
      VALUE = 1;
      SECRET = 2;
    }
    required string name = 1;
    optional string value = 2;
    optional Type type = 3 [default = VALUE];
    optional Secret secret = 4;
  }
  repeated Variable variables = 1;
}

message Parameter {
  required string key = 1;
  required string value = 2;
}

message Parameters {
  repeated Parameter parameter = 1;
}

message Credential {
  required string principal = 1;
  optional string secret = 2;
}

message Credentials {
  repeated Credential credentials = 1;
}

message Secret {
  enum Type {
    UNKNOWN = 0;
    REFERENCE = 1;
    VALUE = 2;
  }
  message Reference {
    required string name = 1;
    optional string key = 2;
  }
  message Value {
    required bytes data = 1;
  }
  optional Type type = 1;
  optional Reference reference = 2;
  optional Value value = 3;
}

message RateLimit {
  optional double qps = 1;
  required string principal = 2;
  optional uint64 capacity = 3;
}

message RateLimits {
  repeated RateLimit limits = 1;
  optional double aggregate_default_qps = 2;
  optional uint64 aggregate_default_capacity = 3;
}

message Image {
  enum Type {
    APPC = 1;
    DOCKER = 2;
  }
  message Appc {
    required string name = 1;
    optional string id = 2;
    optional Labels labels = 3;
  }
  message Docker {
    required string name = 1;
    optional Credential credential = 2 [deprecated = true];
    optional Secret config = 3;
  }
  required Type type = 1;
  optional Appc appc = 2;
  optional Docker docker = 3;
  optional bool cached = 4 [default = true];
}

message MountPropagation {
  enum Mode {
    UNKNOWN = 0;
    HOST_TO_CONTAINER = 1;
    BIDIRECTIONAL = 2;
  }
  optional Mode mode = 1;
}

message Volume {
  enum Mode {
    RW = 1;
    RO = 2;
  }
  message Source {
    enum Type {
      UNKNOWN = 0;
      DOCKER_VOLUME = 1;
      HOST_PATH = 4;
      SANDBOX_PATH = 2;
      SECRET = 3;
      CSI_VOLUME = 5;
    }
    message DockerVolume {
      optional string driver = 1;
      required string name = 2;
      optional Parameters driver_options = 3;
    }
    message HostPath {
      required string path = 1;
      optional MountPropagation mount_propagation = 2;
    }
    message SandboxPath {
      enum Type {
        UNKNOWN = 0;
        SELF = 1;
        PARENT = 2;
      }
      optional Type type = 1;
      required string path = 2;
    }
    message CSIVolume {
      message VolumeCapability {
        message BlockVolume {}
        message MountVolume {
          optional string fs_type = 1;
          repeated string mount_flags = 2;
        }
        message AccessMode {
          enum Mode {
            UNKNOWN = 0;
            SINGLE_NODE_WRITER = 1;
            SINGLE_NODE_READER_ONLY = 2;
            MULTI_NODE_READER_ONLY = 3;
            MULTI_NODE_SINGLE_WRITER = 4;
            MULTI_NODE_MULTI_WRITER = 5;
          }
          required Mode mode = 1;
        }
        oneof access_type {
          BlockVolume block = 1;
          MountVolume mount = 2;
        }
        required AccessMode access_mode = 3;
      }
      message StaticProvisioning {
        required string volume_id = 1;
        required VolumeCapability volume_capability = 2;
        map<string, Secret> node_stage_secrets = 3;
        map<string, Secret> node_publish_secrets = 4;
        map<string, string> volume_context = 5;
      }
      required string plugin_name = 1;
      optional StaticProvisioning static_provisioning = 2;
    }
    optional Type type = 1;
    optional DockerVolume docker_volume = 2;
    optional SandboxPath sandbox_path = 3;
    optional Secret secret = 4;
    optional HostPath host_path = 5;
    optional CSIVolume csi_volume = 6;
  }
  required string container_path = 1;
  optional string host_path = 2;
  required Mode mode = 3;
  optional Image image = 4;
  optional Source source = 5;
}

message NetworkInfo {
  enum Protocol {
    IPv4 = 1;
    IPv6 = 2;
  }
  message IPAddress {
    optional Protocol protocol = 1 [default = IPv4];
    optional string ip_address = 2;
  }
  message PortMapping {
    required uint32 host_port = 1;
    required uint32 container_port = 2;
    optional string protocol = 3;
  }
  repeated string groups = 3;
  optional Labels labels = 4;
  repeated IPAddress ip_addresses = 5;
  optional string name = 6;
  repeated PortMapping port_mappings = 7;
}

message CapabilityInfo {
  enum Capability {
    UNKNOWN = 0;
    CHOWN = 1000;
    DAC_OVERRIDE = 1001;
    DAC_READ_SEARCH = 1002;
    FOWNER = 1003;
    FSETID = 1004;
    KILL = 1005;
    SETGID = 1006;
    SETUID = 1007;
    SETPCAP = 1008;
    LINUX_IMMUTABLE = 1009;
    NET_BIND_SERVICE = 1010;
    NET_BROADCAST = 1011;
    NET_ADMIN = 1012;
    NET_RAW = 1013;
    IPC_LOCK = 1014;
    IPC_OWNER = 1015;
    SYS_MODULE = 1016;
    SYS_RAWIO = 1017;
    SYS_CHROOT = 1018;
    SYS_PTRACE = 1019;
    SYS_PACCT = 1020;
    SYS_ADMIN = 1021;
    SYS_BOOT = 1022;
    SYS_NICE = 1023;
    SYS_RESOURCE = 1024;
    SYS_TIME = 1025;
    SYS_TTY_CONFIG = 1026;
    MKNOD = 1027;
    LEASE = 1028;
    AUDIT_WRITE = 1029;
    AUDIT_CONTROL = 1030;
    SETFCAP = 1031;
    MAC_OVERRIDE = 1032;
    MAC_ADMIN = 1033;
    SYSLOG = 1034;
    WAKE_ALARM = 1035;
    BLOCK_SUSPEND = 1036;
    AUDIT_READ = 1037;
    PERFMON = 1038;
    BPF = 1039;
    CHECKPOINT_RESTORE = 1040;
  }
  repeated Capability capabilities = 1;
}

message SeccompInfo {
  optional string profile_name = 1;
  optional bool unconfined = 2;
}

message LinuxInfo {
  enum IpcMode {
    UNKNOWN = 0;
    PRIVATE = 1;
    SHARE_PARENT = 2;
  }
  optional CapabilityInfo capability_info = 1 [deprecated = true];
  optional CapabilityInfo bounding_capabilities = 2;
  optional CapabilityInfo effective_capabilities = 3;
  optional bool share_pid_namespace = 4;
  optional SeccompInfo seccomp = 5;
  optional IpcMode ipc_mode = 6;
  optional uint32 shm_size = 7;
  optional bool share_cgroups = 8 [default = true];
}

message RLimitInfo {
  message RLimit {
    enum Type {
      UNKNOWN = 0;
      RLMT_AS = 1;
      RLMT_CORE = 2;
      RLMT_CPU = 3;
      RLMT_DATA = 4;
      RLMT_FSIZE = 5;
      RLMT_LOCKS = 6;
      RLMT_MEMLOCK = 7;
      RLMT_MSGQUEUE = 8;
      RLMT_NICE = 9;
      RLMT_NOFILE = 10;
      RLMT_NPROC = 11;
      RLMT_RSS = 12;
      RLMT_RTPRIO = 13;
      RLMT_RTTIME = 14;
      RLMT_SIGPENDING = 15;
      RLMT_STACK = 16;
    }
    optional Type type = 1;
    optional uint64 hard = 2;
    optional uint64 soft = 3;
  }
  repeated RLimit rlimits = 1;
}

message TTYInfo {
  message WindowSize {
    required uint32 rows = 1;
    required uint32 columns = 2;
  }
  optional WindowSize window_size = 1;
}

message ContainerInfo {
  enum Type {
    DOCKER = 1;
    MESOS = 2;
  }
  message DockerInfo {
    enum Network {
      HOST = 1;
      BRIDGE = 2;
      NONE = 3;
      USER = 4;
    }
    message PortMapping {
      required uint32 host_port = 1;
      required uint32 container_port = 2;
      optional string protocol = 3;
    }
    required string image = 1;
    optional Network network = 2 [default = HOST];
    repeated PortMapping port_mappings = 3;
    optional bool privileged = 4 [default = false];
    repeated Parameter parameters = 5;
    optional bool force_pull_image = 6;
    optional string volume_driver = 7 [deprecated = true];
  }
  message MesosInfo {
    optional Image image = 1;
  }
  required Type type = 1;
  repeated Volume volumes = 2;
  optional DockerInfo docker = 3;
  optional string hostname = 4;
  optional MesosInfo mesos = 5;
  repeated NetworkInfo network_infos = 7;
  optional LinuxInfo linux_info = 8;
  optional RLimitInfo rlimit_info = 9;
  optional TTYInfo tty_info = 10;
}

message ContainerStatus {
  repeated NetworkInfo network_infos = 1;
  optional CgroupInfo cgroup_info = 2;
  optional uint32 executor_pid = 3;
  optional ContainerID container_id = 4;
}

message CgroupInfo {
  message Blkio {
    enum Operation {
      UNKNOWN = 0;
      TOTAL = 1;
      READ = 2;
      WRITE = 3;
      SYNC = 4;
      ASYNC = 5;
      DISCARD = 6;
    }
    message Value {
      optional Operation op = 1;
      optional uint64 value = 2;
    }
    message CFQ {
      message Statistics {
        optional Device.Number device = 1;
        optional uint64 sectors = 2;
        optional uint64 time = 3;
        repeated Value io_serviced = 4;
        repeated Value io_service_bytes = 5;
        repeated Value io_service_time = 6;
        repeated Value io_wait_time = 7;
        repeated Value io_merged = 8;
        repeated Value io_queued = 9;
      }
    }
    message Throttling {
      message Statistics {
        optional Device.Number device = 1;
        repeated Value io_serviced = 2;
        repeated Value io_service_bytes = 3;
      }
    }
    message Statistics {
      repeated CFQ.Statistics cfq = 1;
      repeated CFQ.Statistics cfq_recursive = 2;
      repeated Throttling.Statistics throttling = 3;
    }
  }
  message NetCls {
    optional uint32 classid = 1;
  }
  optional NetCls net_cls = 1;
}

message Labels {
  repeated Label labels = 1;
}

message Label {
  required string key = 1;
  optional string value = 2;
}

message Port {
  required uint32 number = 1;
  optional string name = 2;
  optional string protocol = 3;
  optional DiscoveryInfo.Visibility visibility = 4;
  optional Labels labels = 5;
}

message Ports {
  repeated Port ports = 1;
}

message DiscoveryInfo {
  enum Visibility {
    FRAMEWORK = 0;
    CLUSTER = 1;
    EXTERNAL = 2;
  }
  required Visibility visibility = 1;
  optional string name = 2;
  optional string environment = 3;
  optional string location = 4;
  optional string version = 5;
  optional Ports ports = 6;
  optional Labels labels = 7;
}

message WeightInfo {
  required double weight = 1;
  optional string role = 2;
}

message VersionInfo {
  required string version = 1;
  optional string build_date = 2;
  optional double build_time = 3;
  optional string build_user = 4;
  optional string git_sha = 5;
  optional string git_branch = 6;
  optional string git_tag = 7;
}

message Flag {
  required string name = 1;
  optional string value = 2;
}

message Role {
  required string name = 1;
  required double weight = 2;
  repeated FrameworkID frameworks = 3;
  repeated Resource resources = 4;
}

message Metric {
  required string name = 1;
  optional double value = 2;
}

message FileInfo {
  required string path = 1;
  optional int32 nlink = 2;
  optional uint64 size = 3;
  optional TimeInfo mtime = 4;
  optional uint32 mode = 5;
  optional string uid = 6;
  optional string gid = 7;
}

message Device {
  message Number {
    required uint64 major_number = 1;
    required uint64 minor_number = 2;
  }
  optional string path = 1;
  optional Number number = 2;
}

message DeviceAccess {
  message Access {
    optional bool read = 1;
    optional bool write = 2;
    optional bool mknod = 3;
  }
  required Device device = 1;
  required Access access = 2;
}

message DeviceWhitelist {
  repeated DeviceAccess allowed_devices = 1;
}

enum DrainState {
  UNKNOWN = 0;
  DRAINING = 1;
  DRAINED = 2;
}

message DrainConfig {
  optional DurationInfo max_grace_period = 1;
  optional bool mark_gone = 2 [default = false];
}

message DrainInfo {
  required DrainState state = 1;
  required DrainConfig config = 2;
}
`;

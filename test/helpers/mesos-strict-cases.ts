/**
 * Samples of Mesos' JSON with what the strict reader (mesos-strict.ts) must say of each: the
 * table of its unit test (test/unit/mesos-strict.test.ts) and the samples on which the
 * cross-check test (test/integration/mesos-strict-google.test.ts) holds that Google's
 * json_format reads them the same way: clean where the reader is clean, refused where it
 * refuses, except the rows marked `google`, where the reader is stricter (or differs) on
 * purpose and Google's verdict is the opposite.
 */

/** One sample. */
export interface StrictCase {
  readonly name: string;
  /** The message, fully qualified (`mesos.v1.master.Response`). */
  readonly type: string;
  /** A parsed JSON value (bigints where an int64 is past 2^53). */
  readonly json: unknown;
  /** The reader's deviations, exactly; [] for a clean read. */
  readonly expect: readonly string[];
  /** Set where Google's reader disagrees with the reader on purpose: why. */
  readonly google?: string;
}

const NS_2015 = 1443830400000000000n;

const agentInfo = {
  hostname: 'agent-1.example',
  port: 5051,
  id: { value: 'a1b2c3d4-0000-4000-8000-000000000001-S0' },
  resources: [
    { name: 'cpus', type: 'SCALAR', scalar: { value: 2 } },
    { name: 'ports', type: 'RANGES', ranges: { range: [{ begin: 31000, end: 32000 }] } },
  ],
  attributes: [{ name: 'rack', type: 'TEXT', text: { value: 'r1' } }],
};

/** A GET_AGENTS answer with `agent` as its one agent. */
const getAgents = (agent: Record<string, unknown>): unknown => ({ type: 'GET_AGENTS', get_agents: { agents: [agent] } });

const agentEntry = {
  agent_info: agentInfo,
  active: true,
  deactivated: true,
  version: '1.11.0',
  pid: 'slave(1)@127.0.0.2:5051',
  registered_time: { nanoseconds: NS_2015 },
  total_resources: agentInfo.resources,
  capabilities: [{ type: 'MULTI_ROLE' }, { type: 'AGENT_DRAINING' }],
  drain_info: { state: 'DRAINING', config: { max_grace_period: { nanoseconds: 10_000_000_000 }, mark_gone: false } },
};

/** `o` without `key`. */
function without(o: Record<string, unknown>, key: string): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([k]) => k !== key));
}

const taskStatus = {
  task_id: { value: 'web-1' },
  state: 'TASK_RUNNING',
  source: 'SOURCE_EXECUTOR',
  agent_id: { value: 'a1b2c3d4-0000-4000-8000-000000000001-S0' },
  timestamp: 1443830400.123,
  uuid: 'q83vEjRWeJCrze8SNFZ4kA==',
};

export const STRICT_CASES: readonly StrictCase[] = [
  // ---- Clean reads ------------------------------------------------------------------------
  { name: 'GET_HEALTH', type: 'mesos.v1.master.Response', json: { type: 'GET_HEALTH', get_health: { healthy: true } }, expect: [] },
  {
    name: 'GET_AGENTS with an agent: int64 past 2^53 as a bigint, ranges, attributes, drain info',
    type: 'mesos.v1.master.Response',
    json: getAgents(agentEntry),
    expect: [],
  },
  {
    name: 'GET_MAINTENANCE_SCHEDULE: int64s as numeric strings',
    type: 'mesos.v1.master.Response',
    json: {
      type: 'GET_MAINTENANCE_SCHEDULE',
      get_maintenance_schedule: {
        schedule: {
          windows: [{ machine_ids: [{ hostname: 'agent-1.example', ip: '127.0.0.2' }], unavailability: { start: { nanoseconds: '1443830400000000000' }, duration: { nanoseconds: '3600000000000' } } }],
        },
      },
    },
    expect: [],
  },
  {
    name: 'GET_MAINTENANCE_STATUS: an inverse offer status (mesos.v1.allocator)',
    type: 'mesos.v1.master.Response',
    json: {
      type: 'GET_MAINTENANCE_STATUS',
      get_maintenance_status: {
        status: {
          draining_machines: [{ id: { hostname: 'agent-1.example' }, statuses: [{ status: 'ACCEPT', framework_id: { value: 'fw-1' }, timestamp: { nanoseconds: NS_2015 } }] }],
          down_machines: [{ ip: '127.0.0.3' }],
        },
      },
    },
    expect: [],
  },
  {
    name: 'operator event TASK_UPDATED: bytes as base64, a double timestamp',
    type: 'mesos.v1.master.Event',
    json: { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'fw-1' }, status: taskStatus, state: 'TASK_RUNNING' } },
    expect: [],
  },
  {
    name: 'scheduler SUBSCRIBED: master_info with its required fields, a double',
    type: 'mesos.v1.scheduler.Event',
    json: {
      type: 'SUBSCRIBED',
      subscribed: { framework_id: { value: 'fw-1' }, heartbeat_interval_seconds: 15, master_info: { id: 'm1', ip: 16777343, port: 5050, hostname: 'localhost', version: '1.11.0' } },
    },
    expect: [],
  },
  {
    name: 'agent GET_CONTAINERS: resource statistics',
    type: 'mesos.v1.agent.Response',
    json: {
      type: 'GET_CONTAINERS',
      get_containers: {
        containers: [
          {
            framework_id: { value: 'fw-1' },
            executor_id: { value: 'web-1' },
            executor_name: 'Command Executor',
            container_id: { value: 'c-1' },
            resource_statistics: { timestamp: 1443830400.5, cpus_user_time_secs: 0.25, cpus_limit: 0.1, mem_rss_bytes: 1048576 },
          },
        ],
      },
    },
    expect: [],
  },
  {
    name: 'FrameworkInfo: a map, integers at their bounds, doubles as strings',
    type: 'mesos.v1.scheduler.Call',
    json: {
      type: 'SUBSCRIBE',
      subscribe: {
        framework_info: {
          user: 'root',
          name: 'fw',
          failover_timeout: '1e3',
          roles: ['web'],
          capabilities: [{ type: 'MULTI_ROLE' }],
          offer_filters: { web: { min_allocatable_resources: { quantities: [{ quantities: { cpus: { value: 'NaN' } } }] } } },
        },
      },
    },
    expect: [],
  },
  {
    name: 'integers at the edges of their ranges',
    type: 'mesos.v1.master.Response',
    json: {
      type: 'GET_AGENTS',
      get_agents: {
        agents: [{ ...agentEntry, agent_info: { ...agentInfo, port: -2147483648 }, registered_time: { nanoseconds: 9223372036854775807n } }],
        recovered_agents: [{ ...agentInfo, port: 2147483647 }],
      },
    },
    expect: [],
  },
  {
    name: 'one member of a oneof',
    type: 'mesos.v1.scheduler.Call',
    json: {
      type: 'SUBSCRIBE',
      subscribe: {
        framework_info: { user: 'root', name: 'fw' },
        offer_constraints: { role_constraints: { web: { groups: [{ attribute_constraints: [{ selector: { attribute_name: 'rack' }, predicate: { exists: {} } }] }] } } },
      },
    },
    expect: [],
  },

  // ---- Deviations both readers refuse -------------------------------------------------------
  {
    name: 'an unknown field, with its path',
    type: 'mesos.v1.master.Response',
    json: getAgents({ ...agentEntry, agent_info: { ...agentInfo, checkpoint: true } }),
    expect: ['get_agents.agents[0].agent_info.checkpoint: unknown field of mesos.v1.AgentInfo'],
  },
  {
    name: 'an unknown field holding an object',
    type: 'mesos.v1.master.Response',
    json: getAgents({ ...agentEntry, maintenance: { mode: 'DRAINING' } }),
    expect: ['get_agents.agents[0].maintenance: unknown field of mesos.v1.master.Response.GetAgents.Agent'],
  },
  {
    name: 'an unknown field in resource statistics',
    type: 'mesos.v1.ResourceStatistics',
    json: { timestamp: 1.5, cpu_usage_percent: 12.5 },
    expect: ['cpu_usage_percent: unknown field of mesos.v1.ResourceStatistics'],
  },
  {
    name: 'an unknown enum name',
    type: 'mesos.v1.master.Event',
    json: { type: 'TASK_UPDATED', task_updated: { framework_id: { value: 'fw-1' }, status: { ...taskStatus, state: 'TASK_EXPLODED' }, state: 'TASK_RUNNING' } },
    expect: ["task_updated.status.state: unknown enum name \"TASK_EXPLODED\" of mesos.v1.TaskState"],
  },
  {
    name: 'an unknown call type',
    type: 'mesos.v1.master.Response',
    json: { type: 'GET_DRAINS' },
    expect: ['type: unknown enum name "GET_DRAINS" of mesos.v1.master.Response.Type'],
  },
  {
    name: 'missing required fields, nested',
    type: 'mesos.v1.master.Response',
    json: getAgents({ agent_info: { id: {}, port: 5051 } }),
    expect: [
      'get_agents.agents[0].agent_info.id.value: missing required field of mesos.v1.AgentID',
      'get_agents.agents[0].agent_info.hostname: missing required field of mesos.v1.AgentInfo',
      'get_agents.agents[0].active: missing required field of mesos.v1.master.Response.GetAgents.Agent',
      'get_agents.agents[0].version: missing required field of mesos.v1.master.Response.GetAgents.Agent',
    ],
  },
  {
    name: 'a string where Mesos writes a number, a number where it writes a string',
    type: 'mesos.v1.AgentInfo',
    json: { hostname: 5051, port: 'fifty' },
    expect: ['hostname: wrong JSON type: expected a string, got 5051', 'port: wrong JSON type: expected an integer (int32), got "fifty"'],
  },
  {
    name: 'a boolean written as a string',
    type: 'mesos.v1.master.Response',
    json: { type: 'GET_HEALTH', get_health: { healthy: 'true' } },
    expect: ['get_health.healthy: wrong JSON type: expected true or false, got "true"'],
  },
  {
    name: 'integers out of range',
    type: 'mesos.v1.MasterInfo',
    json: { id: 'm1', ip: -1, port: 4294967296, pid: 'master@127.0.0.1:5050' },
    expect: ['ip: out-of-range integer -1 for uint32', 'port: out-of-range integer 4294967296 for uint32'],
  },
  {
    name: 'int64s out of range, as a string and as a bigint',
    type: 'mesos.v1.maintenance.Window',
    json: { machine_ids: [], unavailability: { start: { nanoseconds: '9223372036854775808' }, duration: { nanoseconds: -9223372036854775809n } } },
    expect: ['unavailability.start.nanoseconds: out-of-range integer 9223372036854775808 for int64', 'unavailability.duration.nanoseconds: out-of-range integer -9223372036854775809 for int64'],
  },
  {
    name: 'a fraction for an integer',
    type: 'mesos.v1.Value.Range',
    json: { begin: 1.5, end: 2 },
    expect: ['begin: wrong JSON type: expected an integer (uint64), got 1.5'],
  },
  {
    name: 'an object for a repeated field, an array for a message, a string for a double',
    type: 'mesos.v1.Resource',
    json: { name: 'cpus', type: 'SCALAR', scalar: [], reservations: {}, ranges: { range: 'none' }, disk: { persistence: { id: 'v' } }, shared: { x: 1 }, allocation_info: 'web' },
    expect: [
      'scalar: wrong JSON type: expected an object (mesos.v1.Value.Scalar), got an array',
      'reservations: wrong JSON type: expected an array, got an object',
      'ranges.range: wrong JSON type: expected an array, got "none"',
      'shared.x: unknown field of mesos.v1.Resource.SharedInfo',
      'allocation_info: wrong JSON type: expected an object (mesos.v1.Resource.AllocationInfo), got "web"',
    ],
  },
  {
    name: 'a word for a double',
    type: 'mesos.v1.Value.Scalar',
    json: { value: 'two' },
    expect: ['value: wrong JSON type: expected a number, got "two"'],
  },
  {
    name: 'a map written as an array',
    type: 'mesos.v1.FrameworkInfo',
    json: { user: 'root', name: 'fw', offer_filters: [] },
    expect: ['offer_filters: wrong JSON type: expected an object (a map), got an array'],
  },
  {
    name: 'two members of a oneof',
    type: 'mesos.v1.scheduler.AttributeConstraint.Predicate',
    json: { exists: {}, not_exists: {} },
    expect: ["(top level): more than one field of oneof 'predicate' of mesos.v1.scheduler.AttributeConstraint.Predicate: exists, not_exists"],
  },
  {
    name: 'not an object at the top',
    type: 'mesos.v1.master.Response',
    json: 'GET_HEALTH',
    expect: ['(top level): wrong JSON type: expected an object (mesos.v1.master.Response), got "GET_HEALTH"'],
  },
  {
    name: 'bytes that no base64 decoder takes (one character past a group)',
    type: 'mesos.v1.UUID',
    json: { value: 'q83vE' },
    expect: ['value: wrong JSON type: "q83vE" is not padded base64'],
  },

  // ---- Where the reader is stricter than Google's, on purpose --------------------------------
  {
    name: 'a camelCase field name',
    type: 'mesos.v1.master.Response',
    json: getAgents({ ...without(agentEntry, 'agent_info'), agentInfo }),
    expect: ['get_agents.agents[0].agentInfo: unknown field of mesos.v1.master.Response.GetAgents.Agent', 'get_agents.agents[0].agent_info: missing required field of mesos.v1.master.Response.GetAgents.Agent'],
    google: 'Google accepts the lowerCamelCase spelling of a field name; Mesos never writes it',
  },
  {
    name: 'null for an optional field',
    type: 'mesos.v1.AgentInfo',
    json: { hostname: 'h', domain: null },
    expect: ['domain: wrong JSON type: null (Mesos writes set fields only)'],
    google: 'Google reads null as an unset field; Mesos never writes null',
  },
  {
    name: 'an enum written as its number',
    type: 'mesos.v1.TaskStatus',
    json: { task_id: { value: 't' }, state: 1 },
    expect: ['state: wrong JSON type: expected the name of a mesos.v1.TaskState value, got 1'],
    google: 'Google accepts an enum value by number; Mesos writes names',
  },
  {
    name: 'bytes in unpadded base64',
    type: 'mesos.v1.UUID',
    json: { value: 'q83vEjRWeJCrze8SNFZ4kA' },
    expect: ['value: wrong JSON type: "q83vEjRWeJCrze8SNFZ4kA" is not padded base64'],
    google: "Google's decoder pads and drops stray characters; Mesos writes padded standard base64",
  },
  {
    name: 'an empty array for a message',
    type: 'mesos.v1.master.Response',
    json: [],
    expect: ['(top level): wrong JSON type: expected an object (mesos.v1.master.Response), got an array'],
    google: "Google's Python reader walks an array as if it were an object's keys, so an empty one reads as an empty message",
  },
  {
    name: 'a google.protobuf.Duration as Mesos reads and writes it',
    type: 'mesos.v1.master.Call',
    json: { type: 'DRAIN_AGENT', drain_agent: { agent_id: { value: 'a1' }, max_grace_period: { seconds: 600 } } },
    expect: [],
    google: 'Google reads a Duration only as a string ("600s"); Mesos (stout) reads and writes it as a message',
  },
];

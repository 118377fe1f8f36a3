/**
 * Every error a user can see, in one registry: its HTTP status and its exact message.
 * For Mesos-compatible endpoints the message is Mesos' own (reference/mesos-api.md), so
 * tests assert on the code and the text users get.
 */

export const ERRORS = {
  // Framing of POST /api/v1 (reference §0.3), in the order the checks run.
  NOT_RECOVERED: { status: 503, message: () => 'Master has not finished recovery' },
  /** No term runs on this master and it knows of no leader (reference §7.2). */
  NO_LEADER: { status: 503, message: () => 'No leader elected' },
  AGENT_NOT_RECOVERED: { status: 503, message: () => 'Agent has not finished recovery' },
  METHOD_NOT_ALLOWED: {
    status: 405,
    message: (method: string) => `405 Method Not Allowed. Expecting one of { 'POST' }, but received '${method}'.`,
  },
  CONTENT_TYPE_MISSING: { status: 400, message: () => "Expecting 'Content-Type' to be present" },
  CONTENT_TYPE_UNSUPPORTED: { status: 415, message: () => "Expecting 'Content-Type' of application/json or application/x-protobuf" },
  /** A protobuf body that is not a Call message (master and scheduler APIs). */
  BODY_NOT_PROTOBUF_CALL: { status: 400, message: () => 'Failed to parse body into Call protobuf' },
  /** The agent API's words for the same (Mesos' `deserialize`). */
  AGENT_BODY_NOT_PROTOBUF: { status: 400, message: () => 'Failed to parse body into a protobuf object' },
  // The agent API's framing (reference §3): it also takes RecordIO for its streaming calls.
  AGENT_CONTENT_TYPE_UNSUPPORTED: { status: 415, message: () => "Expecting 'Content-Type' of application/json or application/x-protobuf or application/recordio" },
  MESSAGE_CONTENT_TYPE_MISSING: { status: 400, message: () => "Expecting 'Message-Content-Type' to be set for streaming requests" },
  MESSAGE_CONTENT_TYPE_UNSUPPORTED: { status: 415, message: () => "Expecting 'Message-Content-Type' of application/json or application/x-protobuf" },
  MESSAGE_CONTENT_TYPE_UNEXPECTED: { status: 415, message: () => "Expecting 'Message-Content-Type' to be not set for non-streaming requests" },
  AGENT_NOT_ACCEPTABLE: { status: 406, message: () => "Expecting 'Accept' to allow application/json or application/x-protobuf or application/recordio" },
  MESSAGE_NOT_ACCEPTABLE: { status: 406, message: () => "Expecting 'Message-Accept' to allow application/json or application/x-protobuf" },
  MESSAGE_ACCEPT_UNEXPECTED: { status: 406, message: () => "Expecting 'Message-Accept' to be not set for non-streaming responses" },
  /** A streaming request (RecordIO) for a call that takes none. */
  STREAMING_REQUEST_UNSUPPORTED: { status: 415, message: (type: string) => `Streaming 'Content-Type' application/recordio is not supported for ${type} call` },
  /** ATTACH_CONTAINER_INPUT sent as a plain request. */
  STREAMING_REQUEST_EXPECTED: { status: 415, message: (type: string) => `Expecting 'Content-Type' to be application/recordio for ${type} call` },
  /** A streaming answer (Accept: application/recordio) asked of a call that has none. */
  STREAMING_RESPONSE_UNSUPPORTED: { status: 406, message: (type: string) => `Streaming response is not supported for ${type} call` },
  /** A RecordIO request body that ends before its first record. */
  STREAM_BODY_EMPTY: { status: 400, message: () => 'Received EOF while reading request body' },
  BODY_NOT_JSON: { status: 400, message: (detail: string) => `Failed to parse body into JSON: ${detail}` },
  BODY_NOT_CALL: { status: 400, message: (detail: string) => `Failed to convert JSON into Call protobuf: ${detail}` },
  CALL_INVALID: { status: 400, message: (detail: string) => `Failed to validate master::Call: ${detail}` },
  AGENT_CALL_INVALID: { status: 400, message: (detail: string) => `Failed to validate agent::Call: ${detail}` },
  NOT_ACCEPTABLE: { status: 406, message: () => "Expecting 'Accept' to allow 'application/x-protobuf' or 'application/json'" },
  NOT_IMPLEMENTED: { status: 501, message: (type: string) => `Call type ${type} is not supported` },
  BODY_TOO_LARGE: { status: 413, message: (limit: number) => `Request body is larger than ${limit} bytes` },
  NOT_FOUND: { status: 404, message: () => '404 Not Found.' },
  /** A request target no route may see (shared/paths.ts): malformed escapes, encoded separators, `..` above the root. */
  PATH_INVALID: { status: 400, message: (detail: string) => `Bad request target: ${detail}` },
  // DRAIN_AGENT / DEACTIVATE_AGENT / REACTIVATE_AGENT / MARK_AGENT_GONE (reference §1), Mesos' messages.
  /** Not recovered, registered or unreachable (gone agents included). */
  AGENT_UNKNOWN: { status: 400, message: () => 'Unknown agent' },
  /** DRAIN_AGENT of an agent whose machine is in the maintenance schedule; the machine is printed `host (ip)`, `host` or `(ip)`. */
  AGENT_IN_MAINTENANCE_SCHEDULE: { status: 400, message: (agentId: string, machine: string) => `Agent ${agentId} is part of a maintenance schedule under Machine ${machine}` },
  AGENT_NOT_CAPABLE_OF_DRAINING: { status: 400, message: (agentId: string) => `Agent ${agentId} is not capable of draining` },
  AGENT_BEING_MARKED_GONE: { status: 409, message: () => 'Agent is currently being marked gone' },
  AGENT_NOT_DEACTIVATED: { status: 400, message: () => 'Agent is not deactivated' },
  AGENT_STILL_DRAINING: { status: 400, message: () => 'Agent is still in the DRAINING state' },
  /** REACTIVATE_AGENT of an agent not registered now (e.g. unreachable): the state is cleared all the same. */
  AGENT_REMOVED_DURING_CALL: { status: 409, message: () => 'Agent removed while processing the call' },
  AGENT_ALREADY_TRANSITIONING: { status: 503, message: (agentId: string, to: string) => `Agent '${agentId}' is already being transitioned to ${to}` },
  AGENT_NOT_FOUND: { status: 404, message: (agentId: string) => `Agent '${agentId}' not found` },
  /** A drain_agent field that does not convert (Drydock's wording for what stout refuses, plus duration strings). */
  DRAIN_CALL_INVALID: { status: 400, message: (detail: string) => `Failed to convert JSON into Call protobuf: ${detail}` },
  /** The registry write behind a state-changing call failed: nothing changed. */
  REGISTRY_WRITE_FAILED: { status: 503, message: (detail: string) => `Failed to update the registry: ${detail}` },

  // Security (issue 13).
  /** Credentials required and missing, or presented and wrong: Mesos' bare body, with WWW-Authenticate. */
  UNAUTHORIZED: { status: 401, message: () => '401 Unauthorized.' },
  /** An ACL refuses: names the action, the principal and what it was about. */
  FORBIDDEN: {
    status: 403,
    message: (action: string, principal: string | undefined, object: string) =>
      `Forbidden: ${principal === undefined ? 'an anonymous caller' : `principal '${principal}'`} may not ${action}${object === '' ? '' : ` on ${object}`}`,
  },
  /** A framework id is bound to the principal that registered it. */
  FRAMEWORK_PRINCIPAL_MISMATCH: {
    status: 403,
    message: (frameworkId: string, owner: string, principal: string | undefined) =>
      `Framework '${frameworkId}' belongs to principal '${owner}', not to ${principal === undefined ? 'an anonymous caller' : `'${principal}'`}`,
  },
  /** SUBSCRIBE whose FrameworkInfo.principal is not the authenticated principal (Mesos' check). */
  FRAMEWORK_PRINCIPAL_NOT_AUTHENTICATED: {
    status: 403,
    message: (claimed: string, principal: string | undefined) =>
      principal === undefined
        ? `Framework principal '${claimed}' is not authenticated: send that principal's credentials`
        : `Framework principal '${claimed}' does not match authenticated principal '${principal}'`,
  },
  // ---- The master's own machinery: registry, scheduler API, maintenance, internal faults.
  /** The registry was written by a newer master; opening it could corrupt what that master knows. */
  REGISTRY_SCHEMA_TOO_NEW: {
    status: 500,
    message: (found: number, known: number) =>
      `Registry schema version ${found} is newer than this master knows (${known}); run a newer drydock-master or restore an older registry`,
  },
  /** The registry is closed (the master is stopping); writes are refused, not lost silently. */
  REGISTRY_CLOSED: { status: 503, message: () => 'Registry is closed' },
  // Scheduler API v1 (`POST /api/v1/scheduler`): Mesos' messages from `Master::Http::scheduler`.
  /** The call fails `validation::scheduler::call::validate`. */
  SCHEDULER_CALL_INVALID: { status: 400, message: (detail: string) => `Failed to validate scheduler::Call: ${detail}` },
  /** A non-SUBSCRIBE call names a framework the master does not know. */
  FRAMEWORK_NOT_FOUND: { status: 404, message: (id: string) => `Framework '${id}' not found` },
  /** Operator TEARDOWN of a framework the master does not have (Mesos' message). */
  FRAMEWORK_UNKNOWN: { status: 400, message: () => 'No framework found with specified ID' },
  /** The framework is known (disconnected, recovered) but has no open stream. */
  FRAMEWORK_NOT_SUBSCRIBED: { status: 403, message: () => 'Framework is not subscribed' },
  STREAM_ID_MISSING: { status: 400, message: () => "All non-subscribe calls should include the 'Mesos-Stream-Id' header" },
  STREAM_ID_MISMATCH: {
    status: 400,
    message: (streamId: string, frameworkId: string) =>
      `The stream ID '${streamId}' included in this request didn't match the stream ID currently associated with framework ID ${frameworkId}`,
  },
  /** The Mesos-Stream-Id belongs to no open stream at all (Drydock's choice: 404, the stream is not there). */
  STREAM_NOT_FOUND: { status: 404, message: (streamId: string) => `Stream ID '${streamId}' is not an open scheduler stream` },
  /** UPDATE_FRAMEWORK that changes a field Mesos does not let change (`validateUpdate`). */
  FRAMEWORK_UPDATE_UNSUPPORTED: { status: 400, message: (field: string) => `Updating 'FrameworkInfo.${field}' is unsupported` },
  /** A scheduler call type Drydock does not implement (`UNKNOWN`). */
  SCHEDULER_CALL_UNSUPPORTED: { status: 501, message: (type: string) => `Call type ${type} is not supported` },
  // Maintenance (reference/mesos-api.md §2): Mesos' messages word for word, all 400 with a plain-text body.
  /** A body of a legacy maintenance endpoint, or a v1 call's maintenance part, that does not parse or convert (stout / picojson message, as is). */
  MAINTENANCE_BODY_INVALID: { status: 400, message: (detail: string) => detail },
  /** libprocess MethodNotAllowed for a maintenance route (the Allow header lists the same methods). */
  MAINTENANCE_METHOD_NOT_ALLOWED: {
    status: 405,
    message: (allowed: readonly string[], method: string) => `405 Method Not Allowed. Expecting one of { ${allowed.map((m) => `'${m}'`).join(', ')} }, but received '${method}'.`,
  },
  MAINTENANCE_WINDOW_EMPTY: { status: 400, message: () => 'List of machines in the maintenance window is empty' },
  UNAVAILABILITY_DURATION_NEGATIVE: { status: 400, message: () => "Unavailability 'duration' is negative" },
  MACHINE_ID_EMPTY: { status: 400, message: () => "Both 'hostname' and 'ip' for a machine are empty" },
  MACHINE_IP_INVALID: { status: 400, message: (ip: string) => `Failed to parse IPv4: ${ip}` },
  /** Also for /machine/down and /machine/up lists: Mesos reuses the wording. */
  MACHINE_DUPLICATE: { status: 400, message: (json: string) => `Machine '${json}' appears more than once in the schedule` },
  MACHINE_DOWN_NOT_IN_SCHEDULE: { status: 400, message: (json: string) => `Machine '${json}' is deactivated and cannot be removed from the schedule` },
  MACHINE_LIST_EMPTY: { status: 400, message: () => 'List of machines is empty' },
  MACHINE_NOT_SCHEDULED: { status: 400, message: (json: string) => `Machine '${json}' is not part of a maintenance schedule` },
  MACHINE_NOT_DRAINING: { status: 400, message: (json: string) => `Machine '${json}' is not in DRAINING mode and cannot be brought down` },
  MACHINE_NOT_DOWN: { status: 400, message: (json: string) => `Machine '${json}' is not in DOWN mode and cannot be brought up` },
  // The master's legacy read endpoints Mesos' tools use (/master/state, /tasks, /files/*); JSONP_CALLBACK_INVALID and FILES_PATH_MISSING are the agent's, below.
  /** A query parameter of a legacy endpoint that does not read (`/tasks?limit=abc`): what was expected. */
  QUERY_PARAMETER_INVALID: { status: 400, message: (name: string, value: string, expected: string) => `Invalid '${name}' query parameter ${JSON.stringify(value.slice(0, 64))}: expecting ${expected}` },
  /** `/files/*` of the master: nothing is attached (the master logs to its journal, not to a file Mesos' /master/log would name). */
  MASTER_FILE_NOT_FOUND: { status: 404, message: (path: string) => `No file or directory at '${path}': the master serves no files (it logs to stdout, read by journald)` },
  /** A bug: something threw where nothing should. The log line has the details. */
  INTERNAL: { status: 500, message: (detail: string) => `Internal error: ${detail}` },
  // /v1/plans (reference plans.md §6.1): the SDK's texts, answered as text/plain.
  PLAN_NOT_FOUND: { status: 404, message: (plan: string) => `Plan ${plan} not found` },
  PHASE_NOT_FOUND: { status: 404, message: (phase: string) => `Phase ${phase} not found` },
  STEP_NOT_FOUND: { status: 404, message: (step: string) => `Step ${step} not found` },
  PLAN_MISSING_PHASE: { status: 400, message: () => 'Missing phase' },
  PLAN_BAD_PARAMETERS: { status: 400, message: (detail: string) => `Couldn't parse parameters: ${detail}` },
  /** Not a failure: the command would change nothing (HTTP 208 Already Reported). */
  PLAN_ALREADY_REPORTED: { status: 208, message: () => 'Command has already been reported or completed' },
  /** A restart its driver may not carry out on any step it names (why, per step); nothing changed. */
  PLAN_RESTART_REFUSED: { status: 409, message: (reasons: string) => `Restart refused: ${reasons}` },
  // The agent's legacy endpoints and sandboxes (Mesos' /files/*, LIST_FILES, READ_FILE).
  /** `?jsonp=` that is not a JavaScript name (shared/jsonp.ts); quoted shortened, as JSON. */
  JSONP_CALLBACK_INVALID: {
    status: 400,
    message: (cb: string) => `Invalid 'jsonp' callback ${JSON.stringify(cb.length > 80 ? `${cb.slice(0, 80)}...` : cb)}: expected a JavaScript name or dotted path such as angular.callbacks._0 (at most 128 characters)`,
  },
  /** A legacy GET endpoint asked with another method (libprocess' MethodNotAllowed, with an Allow header). */
  GET_ONLY: { status: 405, message: (method: string) => `405 Method Not Allowed. Expecting one of { 'GET' }, but received '${method}'.` },
  /** /files/* without `path` (Mesos' words, newline included). */
  FILES_PATH_MISSING: { status: 400, message: () => "Expecting 'path=value' in query.\n" },
  /** `offset` or `length` that is not a whole number (Mesos' words). */
  FILES_NUMBER_INVALID: { status: 400, message: (what: 'offset' | 'length', text: string) => `Failed to parse ${what}: Failed to convert '${text.length > 40 ? `${text.slice(0, 40)}...` : text}' to number.\n` },
  /** `offset` or `length` below -1 (Mesos' words). */
  FILES_NUMBER_NEGATIVE: { status: 400, message: (what: 'offset' | 'length', n: string) => `Negative ${what} provided: ${n}.\n` },
  /** A virtual path that is not absolute, climbs (`..`) or holds a control character: refused before anything is looked up. */
  FILES_PATH_INVALID: { status: 400, message: (detail: string) => `Invalid path: ${detail}.\n` },
  /** A path that resolves (through a symlink) outside the sandbox it names: nothing is read. */
  FILES_INACCESSIBLE: { status: 400, message: (path: string) => `'${path}' is inaccessible.\n` },
  /** Mesos' refusals to read or download a directory. */
  FILES_IS_DIRECTORY: { status: 400, message: (verb: 'read' | 'download') => `Cannot ${verb} a directory.\n` },
  /** A FIFO, socket or device in a sandbox: never opened for reading (a FIFO would block). */
  FILES_NOT_REGULAR: { status: 400, message: (path: string) => `'${path}' is not a regular file.\n` },
  /** No sandbox the agent knows has that path, or nothing is at that path inside one. */
  FILE_NOT_FOUND: { status: 404, message: (path: string) => `No such file or directory: '${path}'.\n` },
  // Maintenance plans (issue 12).
  /** A maintenance plan of that name is already kept (the registry refuses it too, writing nothing). */
  MAINTENANCE_PLAN_EXISTS: { status: 409, message: (name: string) => `Maintenance plan '${name}' already exists` },
  /** The POSTed spec does not parse or check: every problem, one per line (nothing was written). */
  MAINTENANCE_PLAN_SPEC_INVALID: { status: 400, message: (errors: string) => `Invalid maintenance plan spec:\n${errors}` },
  /** The spec selects no machine the master knows, or names hostnames no machine has (nothing was written). */
  MAINTENANCE_PLAN_SELECTION_INVALID: { status: 400, message: (detail: string) => `Maintenance plan selects no usable machines: ${detail}` },
  /** DELETE of a plan that is still working on machines. */
  MAINTENANCE_PLAN_NOT_FINISHED: {
    status: 409,
    message: (name: string, status: string) => `Maintenance plan '${name}' is ${status}: only a COMPLETE or stopped plan can be deleted (stop it first)`,
  },
  // The impact preview (POST /drydock/v1/preview, docs/api.md).
  /** A preview request that names no action, several, or one that does not decode. */
  PREVIEW_INVALID: { status: 400, message: (detail: string) => `Invalid preview request: ${detail}` },
} as const;

export type ErrorCode = keyof typeof ERRORS;

/** An expected failure with a code from the registry; shells turn it into an HTTP answer. */
export class DrydockError extends Error {
  readonly code: ErrorCode;
  readonly status: number;

  constructor(code: ErrorCode, message: string) {
    super(message);
    this.name = 'DrydockError';
    this.code = code;
    this.status = ERRORS[code].status;
  }
}

/** Builds the error for a code, with the registry's message. */
export function fail<C extends ErrorCode>(code: C, ...args: Parameters<(typeof ERRORS)[C]['message']>): DrydockError {
  const make = ERRORS[code].message as (...a: unknown[]) => string;
  return new DrydockError(code, make(...args));
}

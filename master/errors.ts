/**
 * Master-only errors, next to shared/errors.ts's registry (which holds the Mesos HTTP messages).
 * These are the failures of the master's own machinery: the registry and internal faults.
 */

export const MASTER_ERRORS = {
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
  /** A scheduler call type Drydock does not implement (operations, inverse offers before maintenance, ...). */
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
  /** A bug: something threw where nothing should. The log line has the details. */
  INTERNAL: { status: 500, message: (detail: string) => `Internal error: ${detail}` },
} as const;

export type MasterErrorCode = keyof typeof MASTER_ERRORS;

/** An error with a code from MASTER_ERRORS. */
export class MasterError extends Error {
  readonly code: MasterErrorCode;
  readonly status: number;

  constructor(code: MasterErrorCode, message: string) {
    super(message);
    this.name = 'MasterError';
    this.code = code;
    this.status = MASTER_ERRORS[code].status;
  }
}

/** Builds a MasterError with the registry's message. */
export function masterFail<C extends MasterErrorCode>(code: C, ...args: Parameters<(typeof MASTER_ERRORS)[C]['message']>): MasterError {
  const make = MASTER_ERRORS[code].message as (...a: unknown[]) => string;
  return new MasterError(code, make(...args));
}

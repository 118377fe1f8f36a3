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

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

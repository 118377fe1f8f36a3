/**
 * Backoff arithmetic for the agent: registration retries and status-update resends.
 * Pure functions of plain numbers; the session and the update streams own the timers.
 */

/** Mesos' REGISTER_RETRY_INTERVAL_MAX: no registration wait is longer than a minute. */
export const MAX_REGISTRATION_BACKOFF_MS = 60_000;

/** Mesos' STATUS_UPDATE_RETRY_INTERVAL_MAX: a resend interval stops doubling at ten minutes. */
export const MAX_STATUS_UPDATE_RETRY_MS = 600_000;

/**
 * How long to wait before registration attempt `attempt` (0 for the first): uniform in
 * [0, factor·2^attempt], the ceiling capped at one minute. Randomised so that a fleet of agents
 * that lost the same master does not reconnect in one burst (Mesos does the same).
 */
export function registrationDelayMs(attempt: number, factorMs: number, random: () => number = Math.random): number {
  const exp = Math.min(Math.max(0, attempt), 30);
  const ceiling = Math.min(factorMs * 2 ** exp, MAX_REGISTRATION_BACKOFF_MS);
  return Math.floor(Math.min(Math.max(random(), 0), 1) * ceiling);
}

/** The interval before resend `attempt` (0 for the first resend) of an unacknowledged update: doubling, capped. */
export function statusRetryDelayMs(attempt: number, initialMs: number, maxMs: number = MAX_STATUS_UPDATE_RETRY_MS): number {
  const exp = Math.min(Math.max(0, attempt), 30);
  return Math.min(initialMs * 2 ** exp, maxMs);
}

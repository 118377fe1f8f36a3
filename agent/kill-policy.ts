/**
 * Kill-policy arithmetic: how long a task gets between SIGTERM and SIGKILL. Pure.
 *
 * Precedence follows Mesos: a KILL_TASK's own kill_policy overrides the task's (a drain's cap
 * arrives as such an override, shared/drain.ts `killPolicy`); with neither, the command
 * executor's default of 3 s applies.
 */

import { DEFAULT_GRACE_PERIOD_NS, type KillPolicy } from '../shared/mesos.js';

/** Grace period in milliseconds, rounded up so a task never gets less than it asked for. */
export function gracePeriodMs(taskPolicy: KillPolicy | undefined, override: KillPolicy | undefined): number {
  const ns = override?.grace_period?.nanoseconds ?? taskPolicy?.grace_period?.nanoseconds ?? DEFAULT_GRACE_PERIOD_NS;
  return Math.ceil(Math.max(0, ns) / 1e6);
}

/**
 * When SIGKILL is due. A second kill may shorten the wait but never extends one in progress:
 * a task already told to stop does not get more time because someone asked again.
 */
export function killDeadlineMs(currentDeadlineMs: number | undefined, nowMs: number, graceMs: number): number {
  const proposed = nowMs + graceMs;
  return currentDeadlineMs === undefined ? proposed : Math.min(currentDeadlineMs, proposed);
}

/**
 * Kill-policy arithmetic: how long a task gets between SIGTERM and SIGKILL. Pure.
 *
 * Precedence follows Mesos: a KILL_TASK's own kill_policy overrides the task's (a drain's cap
 * arrives as such an override, shared/drain.ts `killPolicy`); with neither, the command
 * executor's default of 3 s applies.
 */

import { MAX_TIMER_MS } from '../shared/clock.js';
import { DEFAULT_GRACE_PERIOD_NS, type KillPolicy } from '../shared/mesos.js';

/**
 * The longest grace a kill waits before SIGKILL: 2^31-1 ms, 24.8 days. This is where a grace
 * becomes a timer, and Node fires a setTimeout longer than that at once; a task's kill policy
 * may ask for up to 2^53 ns (104 days), a drain's cap for any int64 (292 years).
 */
export const MAX_GRACE_MS = MAX_TIMER_MS;

/**
 * Grace period in milliseconds, rounded up so a task never gets less than it asked for, at
 * most MAX_GRACE_MS; a negative one is 0 (Mesos: the timer fires at once).
 */
export function gracePeriodMs(taskPolicy: KillPolicy | undefined, override: KillPolicy | undefined): number {
  const ns = override?.grace_period?.nanoseconds ?? taskPolicy?.grace_period?.nanoseconds ?? DEFAULT_GRACE_PERIOD_NS;
  return Math.min(MAX_GRACE_MS, Math.ceil(Math.max(0, ns) / 1e6));
}

/**
 * When SIGKILL is due. A second kill may shorten the wait but never extends one in progress:
 * a task already told to stop does not get more time because someone asked again.
 */
export function killDeadlineMs(currentDeadlineMs: number | undefined, nowMs: number, graceMs: number): number {
  const proposed = nowMs + graceMs;
  return currentDeadlineMs === undefined ? proposed : Math.min(currentDeadlineMs, proposed);
}

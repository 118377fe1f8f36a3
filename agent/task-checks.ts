/**
 * A task's check and health check as the supervisor runs them: agent/checks.ts's TaskChecking,
 * probing in the task's sandbox with the task's environment (agent/probes.ts), a changed result
 * turned into a TASK_RUNNING update, and a health check that keeps failing into a kill. Results
 * are acted on only while the task runs and is not being killed.
 */

import type { Clock } from '../shared/clock.js';
import type { Logger } from '../shared/log.js';
import type { TaskStatusReason } from '../shared/mesos.js';
import type { TaskRecord } from './checkpoint.js';
import { TaskChecking, type Probe, type ProbeRun, type TaskChecks } from './checks.js';
import type { ProbeContext } from './probes.js';

/** What checking needs of a task. */
export interface CheckedTask {
  readonly phase: 'staging' | 'running' | 'ended';
  readonly record: TaskRecord;
}

/** What checking needs of the agent: time, probes, and the supervisor's hands. */
export interface TaskCheckHands<T extends CheckedTask> {
  clock: Clock;
  log: Logger;
  /** Runs one probe (agent/probes.ts runProbe, or a test's). */
  runProbe: (probe: Probe, ctx: ProbeContext) => ProbeRun;
  /** The task's environment, for its check commands (computed at the first probe, when the agent id is surely known). */
  env: (t: T) => Record<string, string>;
  /** Queues a TASK_RUNNING update with this reason (it carries the latest results). */
  update: (t: T, reason: TaskStatusReason) => void;
  /** Kills the task: its health check failed `failures` times in a row. */
  kill: (t: T, failures: number) => void;
}

/** The TaskChecking of a task with a check or a health check; undefined for one with neither. Not started. */
export function taskChecking<T extends CheckedTask>(t: T, checks: TaskChecks, hands: TaskCheckHands<T>): TaskChecking | undefined {
  if (checks.check === undefined && checks.health === undefined) return undefined;
  const r = t.record;
  const log = { taskId: r.task.task_id.value, frameworkId: r.framework_id };
  let ctx: ProbeContext | undefined;
  const acting = (): boolean => t.phase === 'running' && r.kill === undefined;
  return new TaskChecking(checks, {
    clock: hands.clock,
    run: (p) => hands.runProbe(p, (ctx ??= { cwd: r.sandbox, env: hands.env(t) })),
    checkChanged: (status) => {
      if (!acting()) return;
      hands.log.info('check status changed', { ...log, checkStatus: status });
      hands.update(t, 'REASON_TASK_CHECK_STATUS_UPDATED');
    },
    healthChanged: (healthy) => {
      if (!acting()) return;
      hands.log.info('health changed', { ...log, healthy });
      hands.update(t, 'REASON_TASK_HEALTH_CHECK_STATUS_UPDATED');
    },
    unhealthy: (failures) => {
      if (!acting()) return;
      hands.log.warn('health check failed, killing task', { ...log, failures });
      hands.kill(t, failures);
    },
    onError: (e) => hands.log.error('check result not handled', { ...log, error: (e as Error).message }),
  });
}

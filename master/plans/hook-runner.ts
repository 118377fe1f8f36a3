/**
 * The maintenance plans' hook runner: starts a step's on_down hook at most once per attempt
 * (recorded `running` durably before the process starts), as the hook user with the minimal
 * environment (hooks.ts), audited in the name of the plan's creator; records how it ended; stops
 * it on cancel_hook. The process itself (timeout, SIGTERM then SIGKILL, kept output) is
 * io/hook-process.ts's, on execa: master/ spawns nothing itself. A hook's process lives in this
 * process only: a hook recorded `running` that is not ours is reported `interrupted`.
 */

import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/log.js';
import { startHookProcess, type HookProcess } from '../../io/hook-process.js';
import { hookEnvironment, type MaintenanceHooks } from './hooks.js';
import { hookKey, type HeldPlan, type HookRecord, type StepRecord } from './progress.js';
import type { HookReport, StepAction, StepState } from './step.js';

/** A hook's output kept per attempt: the last 4 KiB. */
export const HOOK_OUTPUT_BYTES = 4096;
/** After SIGTERM to a hook that must stop, SIGKILL after this long. */
export const HOOK_KILL_AFTER_MS = 5000;

/** The audit line of a hook that starts (security.ts `audit`). */
export interface HookAudit {
  readonly principal: string | undefined;
  readonly action: 'run_maintenance_hooks';
  readonly object: string;
  readonly outcome: 'allowed';
  readonly detail: string;
  readonly argv: readonly string[];
}

/** What the runner needs of the driver. */
export interface HookRunnerNeeds {
  /** The master's hooks and the user they run as. */
  readonly hooks: MaintenanceHooks;
  readonly clock: Clock;
  readonly log: Logger;
  /** Writes the audit line of a hook that starts. */
  readonly audit: ((entry: HookAudit) => void) | undefined;
  /** Keeps a step's hook record durably (in the serial queue); false when it was not kept. */
  record(held: HeldPlan, s: { record: StepRecord }, hook: HookRecord): Promise<boolean>;
  /** Whether the driver was disposed of (its term ended). */
  disposed(): boolean;
  /** Drives the plans again (a hook ended). */
  kick(): void;
}

export class HookRunner {
  readonly #n: HookRunnerNeeds;
  /** Hook processes of this process, by `plan\0phase/step\0attempt`. */
  readonly #hooks = new Map<string, HookProcess>();

  constructor(needs: HookRunnerNeeds) {
    this.#n = needs;
  }

  /**
   * Starts an on_down attempt at most once: recorded `running` durably before the process starts.
   * The hook runs as the hook user with the minimal environment (hooks.ts), and its start is
   * audited in the name of the plan's creator.
   */
  async run(held: HeldPlan, key: string, a: Extract<StepAction, { type: 'run_hook' }>): Promise<void> {
    const s = held.steps.get(key);
    if (s === undefined || (s.record.hook !== null && s.record.hook.attempt >= a.attempt)) return;
    const ok = await this.#n.record(held, s, { attempt: a.attempt, status: 'running', code: null, signal: null, output: '' });
    if (!ok || this.#n.disposed()) return;
    const user = this.#n.hooks.user;
    const env = hookEnvironment({ home: user.home, hookEnv: a.hookEnv, plan: held.name, step: key, values: a.values });
    this.#n.audit?.({
      principal: held.createdBy ?? undefined,
      action: 'run_maintenance_hooks',
      object: `'${a.hook}'`,
      outcome: 'allowed',
      detail: `plan ${held.name} step ${key} attempt ${a.attempt}`,
      argv: a.argv,
    });
    const run = startHookProcess({ argv: a.argv, env, uid: user.uid, gid: user.gid, timeoutMs: a.timeoutMs, killAfterMs: HOOK_KILL_AFTER_MS, outputBytes: HOOK_OUTPUT_BYTES, clock: this.#n.clock });
    const hk = hookKey(held.name, key, a.attempt);
    this.#hooks.set(hk, run);
    const log = this.#n.log;
    log.info('on_down started', { plan: held.name, step: key, attempt: a.attempt, hook: a.hook, pid: run.pid ?? null, user: user.name });
    // Not awaited: the driver's pass (and an operator's verb) must not wait for the hook to end.
    void run.ended.then(async (end) => {
      if (this.#hooks.get(hk) !== run) return;
      this.#hooks.delete(hk);
      if (this.#n.disposed()) return;
      // A stop (cancel_hook) is a failure by a signal to the step machine, as before.
      const status: HookRecord['status'] = end.status === 'stopped' ? 'failed' : end.status;
      log.info('on_down ended', { plan: held.name, step: key, attempt: a.attempt, hook: a.hook, pid: run.pid ?? null, code: end.code, signal: end.signal, status });
      await this.#n.record(held, s, { attempt: a.attempt, status, code: end.code, signal: end.signal, output: end.output });
      this.#n.kick();
    });
  }

  /** cancel_hook: stops the attempt's process, if it is ours and still running. */
  cancel(plan: string, key: string, attempt: number): void {
    this.#hooks.get(hookKey(plan, key, attempt))?.stop();
  }

  /** Whether a process of one of the step's on_down attempts is still ours to wait for (running, or being stopped). */
  running(plan: string, key: string, state: StepState): boolean {
    for (let attempt = 1; attempt <= state.hookAttempt; attempt++) if (this.#hooks.has(hookKey(plan, key, attempt))) return true;
    return false;
  }

  /** What the step machine hears of a step's hook record. */
  report(plan: string, key: string, hook: HookRecord | null): HookReport | undefined {
    if (hook === null) return undefined;
    switch (hook.status) {
      case 'running':
        // Recorded running but not ours: a process of an earlier term.
        return this.#hooks.has(hookKey(plan, key, hook.attempt)) ? { attempt: hook.attempt, status: 'running' } : { attempt: hook.attempt, status: 'interrupted' };
      case 'succeeded': return { attempt: hook.attempt, status: 'succeeded', code: hook.code ?? 0, output: hook.output };
      case 'failed': return { attempt: hook.attempt, status: 'failed', code: hook.code, signal: hook.signal ?? undefined, output: hook.output };
      case 'timed_out': return { attempt: hook.attempt, status: 'timed_out', output: hook.output };
      case 'interrupted': return { attempt: hook.attempt, status: 'interrupted' };
    }
  }

  /** Stops every process (a hook of a term that ended is reported interrupted by the next term). */
  stopAll(): void {
    for (const run of this.#hooks.values()) run.stop();
    this.#hooks.clear();
  }
}

/**
 * A service as the scheduler keeps it: the checked form of the YAML spec (plans.md §7.1, the
 * subset Drydock runs). Units are in the field names; every default is filled in, so the rest of
 * the scheduler never asks "was this given?". Stored as JSON under a configuration id.
 */
import type { StrategyName } from '../shared/plans/strategy.js';

export type Goal = 'RUNNING' | 'FINISH' | 'ONCE';

/** A readiness check: the task counts as ready once `cmd` exits 0 (run by the agent, as Mesos' `TaskInfo.check`). */
export interface ReadinessCheckSpec {
  readonly cmd: string;
  readonly intervalS: number;
  readonly delayS: number;
  readonly timeoutS: number;
}

/** A health check: after `maxConsecutiveFailures` failures past the grace period the agent kills the task. */
export interface HealthCheckSpec {
  readonly cmd: string;
  readonly intervalS: number;
  readonly delayS: number;
  readonly timeoutS: number;
  readonly gracePeriodS: number;
  readonly maxConsecutiveFailures: number;
}

export interface TaskSpec {
  /** The key under `tasks:`; the instance's task is `<pod>-<index>-<name>`. */
  readonly name: string;
  readonly goal: Goal;
  readonly essential: boolean;
  readonly cmd: string;
  readonly cpus: number;
  readonly memoryMb: number;
  /** Values as strings, in the YAML's key order. */
  readonly env: Readonly<Record<string, string>>;
  readonly killGracePeriodS: number;
  readonly readinessCheck: ReadinessCheckSpec | undefined;
  readonly healthCheck: HealthCheckSpec | undefined;
}

/** Placement rules, Marathon style; Drydock runs `hostname:UNIQUE` (at most one instance of the pod type per host). */
export interface PlacementSpec {
  readonly uniqueHostname: boolean;
  /** The rule as written, for display. */
  readonly text: string;
}

export interface PodSpec {
  /** The key under `pods:` (the pod type); instances are `<type>-<index>`. */
  readonly type: string;
  readonly count: number;
  readonly placement: PlacementSpec;
  readonly allowDecommission: boolean;
  /** In the YAML's order. */
  readonly tasks: readonly TaskSpec[];
}

/**
 * Custom steps of a phase: for each pod index (or `default`), the task groups launched one step
 * each, in order (`- default: [[first], [second]]`).
 */
export interface StepsSpec {
  readonly byIndex: Readonly<Record<string, readonly (readonly string[])[]>>;
  readonly default: readonly (readonly string[])[] | undefined;
}

export interface PhaseSpec {
  readonly name: string;
  readonly strategy: StrategyName;
  /** The pod type whose instances the phase's steps work on. */
  readonly pod: string;
  /** Undefined: one step per instance launching all the pod's tasks. */
  readonly steps: StepsSpec | undefined;
}

export interface PlanSpec {
  readonly name: string;
  /** `serial` or `parallel`. */
  readonly strategy: StrategyName;
  readonly phases: readonly PhaseSpec[];
}

export interface ServiceSpec {
  readonly name: string;
  /** In the YAML's order. */
  readonly pods: readonly PodSpec[];
  /** As written under `plans:` (`deploy`, `update`, custom plans), in the YAML's order. */
  readonly plans: readonly PlanSpec[];
}

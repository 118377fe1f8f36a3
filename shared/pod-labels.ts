/**
 * How a task says which service pod it is an instance of: the labels drydock-scheduler puts on
 * every task it launches (scheduler/pods.ts taskInfo), read back by the master's impact preview
 * (master/cores/impact.ts) to tell which service would lose its last running instance. Pure.
 *
 * The rule: a task belongs to pod type T, instance `T-<index>`, when it carries `pod_type: T`
 * and `index: <n>`. A task launched before `pod_type` was set is still read when its name is
 * `<T>-<index>-<task_type>` with `index` and `task_type` labels (the scheduler's naming). Any
 * other task (another framework's, `drydock run`'s) is no pod instance: the preview lists it
 * among the tasks killed, never among the pods.
 */

/** The pod type of the task (`hello`). */
export const POD_TYPE_LABEL = 'pod_type';
/** The instance's index within its pod type (`0` for `hello-0`). */
export const POD_INDEX_LABEL = 'index';
/** The task's name within its pod (`server`). */
export const TASK_TYPE_LABEL = 'task_type';

/** A Mesos Labels message. */
export interface LabelsJson {
  readonly labels?: ReadonlyArray<{ readonly key: string; readonly value?: string | undefined }>;
}

/** The pod type and instance a task belongs to. */
export interface PodOf {
  /** `hello` */
  readonly type: string;
  /** `hello-0` */
  readonly instance: string;
}

function label(labels: LabelsJson | undefined, key: string): string | undefined {
  const v = labels?.labels?.find((l) => l.key === key)?.value;
  return v === undefined || v === '' ? undefined : v;
}

/** The pod a task is an instance of, by the rule above; undefined for a task that is none. */
export function podOfTask(name: string, labels: LabelsJson | undefined): PodOf | undefined {
  const index = label(labels, POD_INDEX_LABEL);
  if (index === undefined || !/^(0|[1-9][0-9]{0,8})$/.test(index)) return undefined;
  let type = label(labels, POD_TYPE_LABEL);
  if (type === undefined) {
    const task = label(labels, TASK_TYPE_LABEL);
    const suffix = `-${index}-${task ?? ''}`;
    if (task === undefined || !name.endsWith(suffix) || name.length === suffix.length) return undefined;
    type = name.slice(0, -suffix.length);
  }
  return { type, instance: `${type}-${index}` };
}

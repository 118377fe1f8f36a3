/**
 * Reads an agent's checkpoint from outside the agent, as the recovery tests need it: the task
 * records its journal (meta/journal) holds now, replayed. Read-only; a torn tail is ignored as
 * the agent ignores it.
 */

import { join } from 'node:path';
import { readJournal } from '../../agent/journal.js';
import type { TaskRecord } from '../../agent/checkpoint.js';

/** The live task records of the checkpoint in `metaDir` (a work_dir's `meta`, or a `meta.corrupt-*` beside it). */
export function checkpointTasks(metaDir: string): TaskRecord[] {
  const read = readJournal(join(metaDir, 'journal'));
  if (!read.ok) return [];
  const tasks = new Map<string, TaskRecord>();
  for (const e of read.entries as Array<{ k?: string; v?: TaskRecord; framework_id?: string; task_id?: string }>) {
    if (e.k === 'task' && e.v !== undefined) tasks.set(`${e.v.framework_id}\u0000${e.v.task.task_id.value}`, e.v);
    if (e.k === 'forget') tasks.delete(`${e.framework_id}\u0000${e.task_id}`);
  }
  return [...tasks.values()];
}

/** One task's record in the checkpoint of `workDir`, if it is there. */
export function checkpointTask(workDir: string, frameworkId: string, taskId: string): TaskRecord | undefined {
  return checkpointTasks(join(workDir, 'meta')).find((r) => r.framework_id === frameworkId && r.task.task_id.value === taskId);
}

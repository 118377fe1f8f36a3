/**
 * The small command task the integration tests launch through their schedulers: 0.1 cpus and
 * 16 MB, named by its id. `extra` adds or replaces fields of the TaskInfo.
 */
export function smallTask(id: string, agentId: string, cmd = 'sleep 60', extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    name: id,
    task_id: { value: id },
    agent_id: { value: agentId },
    resources: [
      { name: 'cpus', type: 'SCALAR', scalar: { value: 0.1 } },
      { name: 'mem', type: 'SCALAR', scalar: { value: 16 } },
    ],
    command: { value: cmd },
    ...extra,
  };
}

/** smallTask labelled `purpose=<id>` (what the legacy and strict-shape tests look tasks up by). */
export function labelledTask(id: string, agentId: string, cmd: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return smallTask(id, agentId, cmd, { labels: { labels: [{ key: 'purpose', value: id }] }, ...extra });
}

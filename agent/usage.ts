/**
 * Resource usage of running tasks for GET_CONTAINERS, `/monitor/statistics` and Drydock's own
 * `/drydock/v1/containers`: each task is a process group, so its usage is the sum over every
 * process whose pgid is the task's pid (found by one scan of /proc per request), CPU percent and
 * RSS from pidusage, CPU times from /proc/<pid>/stat. The CPU percent is Drydock's own fact (not
 * a field of Mesos' ResourceStatistics): it is kept apart, for Drydock's endpoint.
 */

import { procPids, procStat } from './launcher.js';

/** Mesos' ResourceStatistics, the fields Drydock measures (the limits are added from the task's resources). */
export interface ResourceStatistics {
  timestamp: number;
  cpus_user_time_secs?: number;
  cpus_system_time_secs?: number;
  cpus_limit?: number;
  mem_rss_bytes: number;
  mem_limit_bytes?: number;
}

/** One task's usage: Mesos' statistics, and the CPU percent pidusage measured (Drydock's). */
export interface GroupUsage {
  readonly statistics: ResourceStatistics;
  /** Percent of one CPU since the previous sample of the process (pidusage), summed over the group. */
  readonly cpuPercent: number;
}

/** USER_HZ: /proc reports CPU times in these ticks; 100 on every Linux this runs on. */
const TICKS_PER_SECOND = 100;

/** pid → pgid → members, from one pass over /proc. */
function processGroups(): Map<number, Array<{ pid: number; utime: number; stime: number }>> {
  const groups = new Map<number, Array<{ pid: number; utime: number; stime: number }>>();
  for (const pid of procPids()) {
    const f = procStat(pid);
    if (f === undefined) continue;
    const pgid = Number(f[2]);
    const member = { pid, utime: Number(f[11] ?? 0), stime: Number(f[12] ?? 0) };
    const list = groups.get(pgid);
    if (list === undefined) groups.set(pgid, [member]);
    else list.push(member);
  }
  return groups;
}

/** Usage of each process group in `pgids` (task pids); a group that is gone is left out. */
export async function groupUsage(pgids: readonly number[], nowMs: number): Promise<Map<number, GroupUsage>> {
  const out = new Map<number, GroupUsage>();
  if (pgids.length === 0) return out;
  // Loaded on first use: an agent nobody asks for usage should not carry it.
  const pidusage = (await import('pidusage')).default;
  const groups = processGroups();
  await Promise.all(
    pgids.map(async (pgid) => {
      const members = groups.get(pgid);
      if (members === undefined || members.length === 0) return;
      const stats = await Promise.allSettled(members.map((m) => pidusage(m.pid)));
      let rss = 0;
      let cpu = 0;
      for (const s of stats) {
        if (s.status === 'fulfilled') {
          rss += s.value.memory;
          cpu += s.value.cpu;
        }
      }
      out.set(pgid, {
        statistics: {
          timestamp: nowMs / 1000,
          cpus_user_time_secs: members.reduce((a, m) => a + m.utime, 0) / TICKS_PER_SECOND,
          cpus_system_time_secs: members.reduce((a, m) => a + m.stime, 0) / TICKS_PER_SECOND,
          mem_rss_bytes: rss,
        },
        cpuPercent: cpu,
      });
    }),
  );
  return out;
}

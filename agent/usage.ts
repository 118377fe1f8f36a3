/**
 * Resource usage of running tasks for GET_CONTAINERS: each task is a process group, so its
 * usage is the sum over every process whose pgid is the task's pid (found by one scan of
 * /proc per request), CPU percent and RSS from pidusage, CPU times from /proc/<pid>/stat.
 */

import { procPids, procStat } from './launcher.js';

/** Mesos' ResourceStatistics, the fields Drydock fills. */
export interface ResourceStatistics {
  timestamp: number;
  cpus_user_time_secs?: number;
  cpus_system_time_secs?: number;
  mem_rss_bytes: number;
  cpu_usage_percent?: number;
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
export async function groupUsage(pgids: readonly number[], nowMs: number): Promise<Map<number, ResourceStatistics>> {
  const out = new Map<number, ResourceStatistics>();
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
        timestamp: nowMs / 1000,
        cpus_user_time_secs: members.reduce((a, m) => a + m.utime, 0) / TICKS_PER_SECOND,
        cpus_system_time_secs: members.reduce((a, m) => a + m.stime, 0) / TICKS_PER_SECOND,
        mem_rss_bytes: rss,
        cpu_usage_percent: cpu,
      });
    }),
  );
  return out;
}

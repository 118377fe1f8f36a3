/**
 * Process readings from /proc (Linux only): resident memory, CPU time, and the processes a
 * daemon left behind. Read directly rather than through pidusage so a reading is one file
 * read, with no child process and no sampling state of its own.
 */

import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

/** Clock ticks per second for utime/stime in /proc/<pid>/stat; 100 on every Linux build Node runs on. */
const CLOCK_TICKS_PER_SECOND = 100;

/** VmRSS of a process in bytes, or undefined when it is gone. */
export function rssBytes(pid: number): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? undefined : Number(m[1]) * 1024;
  } catch {
    return undefined;
  }
}

/** Fields of /proc/<pid>/stat we use. */
export interface ProcStat {
  pid: number;
  comm: string;
  ppid: number;
  pgid: number;
  /** utime + stime, in seconds. */
  cpuSeconds: number;
}

/**
 * Parses a /proc/<pid>/stat line. `comm` is in parentheses and may itself contain spaces
 * and parentheses, so fields are counted from the last ')'.
 */
export function parseProcStat(text: string): ProcStat | undefined {
  const open = text.indexOf('(');
  const close = text.lastIndexOf(')');
  if (open < 0 || close < open) return undefined;
  const rest = text.slice(close + 2).split(' ');
  // rest[0] is field 3 (state); utime and stime are fields 14 and 15.
  const ppid = Number(rest[1]);
  const pgid = Number(rest[2]);
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  if (![ppid, pgid, utime, stime].every(Number.isFinite)) return undefined;
  return { pid: Number(text.slice(0, open).trim()), comm: text.slice(open + 1, close), ppid, pgid, cpuSeconds: (utime + stime) / CLOCK_TICKS_PER_SECOND };
}

/** The whole machine's CPU time, summed over its CPUs, in seconds (the first line of /proc/stat). */
export interface MachineCpu {
  /** user + nice + system + irq + softirq: something ran (guest time is inside user). */
  busy: number;
  /** idle + iowait: nothing could run. */
  idle: number;
  /** Taken by the hypervisor for other guests: neither ours nor idle. */
  steal: number;
}

/** Parses the aggregate `cpu` line of /proc/stat (clock ticks). Pure. */
export function parseMachineCpu(text: string): MachineCpu | undefined {
  const line = text.split('\n', 1)[0] ?? '';
  const f = line.trim().split(/\s+/);
  if (f[0] !== 'cpu' || f.length < 9) return undefined;
  const [user, nice, system, idle, iowait, irq, softirq, steal] = f.slice(1, 9).map(Number) as [number, number, number, number, number, number, number, number];
  if (![user, nice, system, idle, iowait, irq, softirq, steal].every(Number.isFinite)) return undefined;
  const s = (ticks: number): number => ticks / CLOCK_TICKS_PER_SECOND;
  return { busy: s(user + nice + system + irq + softirq), idle: s(idle + iowait), steal: s(steal) };
}

/** The machine's CPU time so far, or undefined where /proc/stat cannot be read. */
export function machineCpu(): MachineCpu | undefined {
  try {
    return parseMachineCpu(readFileSync('/proc/stat', 'utf8'));
  } catch {
    return undefined;
  }
}

/** /proc/<pid>/stat, or undefined when the process is gone. */
export function procStat(pid: number): ProcStat | undefined {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** NUL-separated argv of a process ('' when gone or a kernel thread). */
export function cmdline(pid: number): string[] {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').filter((s) => s !== '');
  } catch {
    return [];
  }
}

/** Every live process's stat (processes that vanish mid-scan are skipped). */
export function allProcesses(): ProcStat[] {
  const out: ProcStat[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const s = procStat(Number(name));
    if (s !== undefined) out.push(s);
  }
  return out;
}

/** CPU use of one process over a window: percent of one core, from utime+stime deltas. */
export async function cpuPercentOver(pid: number, windowMs: number): Promise<number | undefined> {
  const a = procStat(pid);
  const t0 = performance.now();
  await new Promise((r) => setTimeout(r, windowMs));
  const b = procStat(pid);
  const dt = (performance.now() - t0) / 1000;
  if (a === undefined || b === undefined) return undefined;
  return ((b.cpuSeconds - a.cpuSeconds) / dt) * 100;
}

/** A process's working directory; undefined when it is gone or not ours to read. */
function cwdOf(pid: number): string | undefined {
  try {
    return readlinkSync(`/proc/${pid}/cwd`);
  } catch {
    return undefined;
  }
}

/**
 * Launcher processes (`drydock-launch`) of the agent working in `workDir`, with the task
 * processes they forked.
 */
export function launchersUnder(workDir: string): Array<{ launcher: ProcStat; tasks: ProcStat[] }> {
  const procs = allProcesses();
  // A launcher the agent started names its exit file (under workDir) on its command line; one the
  // launch server forked has the server's command line, and works in its task's sandbox (under workDir).
  const launchers = procs.filter((p) => p.comm.startsWith('drydock-launch') && (cmdline(p.pid).some((a) => a.includes(workDir)) || cwdOf(p.pid)?.startsWith(`${workDir}/`) === true));
  return launchers.map((launcher) => ({ launcher, tasks: procs.filter((p) => p.ppid === launcher.pid) }));
}

/**
 * Safety net after a benchmark: SIGKILL every task group and launcher left under workDir, so
 * a daemon that did not clean up cannot leave `sleep`s behind. Returns how many it killed.
 */
export function reapLeftovers(workDir: string): number {
  let killed = 0;
  for (const { launcher, tasks } of launchersUnder(workDir)) {
    for (const t of tasks) {
      // Only a task that leads its own group is killed by group: a task left in the agent's
      // (or our own) group must not take the benchmark down with it.
      try { process.kill(t.pgid === t.pid ? -t.pid : t.pid, 'SIGKILL'); killed++; } catch { /* already gone */ }
    }
    try { process.kill(launcher.pid, 'SIGKILL'); killed++; } catch { /* already gone */ }
  }
  return killed;
}

/**
 * Proportional set size in bytes (from /proc/<pid>/smaps_rollup): RSS with each shared page
 * divided among the processes that map it. For many copies of one small program (the
 * launchers) it is the honest sum; RSS counts libc's pages once per process.
 */
export function pssBytes(pid: number): number | undefined {
  return smapsBytes(pid, 'Pss');
}

/**
 * Anonymous memory in bytes (/proc/<pid>/smaps_rollup): the heap and everything else the
 * process alone wrote, without the pages of files it maps (the node binary's code, shared with
 * every other node process and given back by the kernel when memory is short).
 */
export function anonymousBytes(pid: number): number | undefined {
  return smapsBytes(pid, 'Anonymous');
}

function smapsBytes(pid: number, field: string): number | undefined {
  try {
    const m = new RegExp(`^${field}:\\s+(\\d+)\\s+kB$`, 'm').exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
    return m === null ? undefined : Number(m[1]) * 1024;
  } catch {
    return undefined;
  }
}

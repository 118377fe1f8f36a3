/**
 * What the CLI says of an agent from Drydock's own view of it (`GET /drydock/v1/agents`): its
 * conditions (disk pressure: the master offers none of its resources while it lasts), the lines
 * of `drydock agent show`, and why `drydock run` may have had no offer. Pure.
 */

import { isoTime, formatSpan, nanosOf } from './nanotime.js';
import { oneLine } from './service-api.js';
import { formatBytes } from '../shared/bytes.js';

/**
 * An agent's disk pressure as the master writes it under `conditions.disk_pressure`: since when
 * (the agent's clock, `{"nanoseconds": N}`), why (NO_SPACE, LOW_SPACE, LOW_INODES,
 * WRITE_FAILED), a sentence naming the cause and the directory, and the filesystem's figures.
 */
export interface DiskPressureJson {
  since?: { nanoseconds?: unknown };
  reason?: string;
  message?: string;
  path?: string;
  free_bytes?: number;
  total_bytes?: number;
  free_inodes?: number;
  total_inodes?: number;
}

/** An agent's `conditions`: `{}`, or `{"disk_pressure": {...}}`. Objects only grow. */
export interface AgentConditionsJson {
  disk_pressure?: DiskPressureJson;
}

/**
 * What this module reads of an agent in Drydock's view (drain.ts DrydockAgentJson is one; kept
 * apart so that drain.ts may use this module without a cycle).
 */
export interface AgentViewJson {
  agent_id?: { value?: string };
  hostname?: string;
  ip?: string;
  port?: number;
  state?: string;
  machine?: { id?: { hostname?: string; ip?: string }; mode?: string };
  drain?: { state?: string; started_time?: { nanoseconds?: unknown }; remaining_tasks?: unknown };
  conditions?: AgentConditionsJson;
}

/** The agent's disk pressure, when it has one. */
export function diskPressureOf(d: AgentViewJson | undefined): DiskPressureJson | undefined {
  const p = d?.conditions?.disk_pressure;
  return typeof p === 'object' && p !== null ? p : undefined;
}

/** What the STATUS column adds for the agent's conditions: `, DISK PRESSURE`, or nothing. */
export function conditionSuffix(d: AgentViewJson | undefined): string {
  return diskPressureOf(d) === undefined ? '' : ', DISK PRESSURE';
}

/**
 * `DISK PRESSURE (NO_SPACE: no space left on device in /var/lib/drydock/agent (0 B of 4 MB
 * free)) since 2026-11-27T10:00:00Z (3m 4s ago)`: the reason, the agent's sentence, since when.
 */
export function diskPressureLine(p: DiskPressureJson, nowMs: number): string {
  const reason = oneLine(p.reason ?? 'UNKNOWN');
  const detail = p.message !== undefined && p.message !== '' ? oneLine(p.message) : p.path !== undefined ? `in ${oneLine(p.path)}` : '';
  const sinceNs = nanosOf(p.since);
  const since = sinceNs === undefined ? '' : ` since ${isoTime(sinceNs - (sinceNs % 1_000_000_000n))} (${formatSpan(agoNs(sinceNs, nowMs))} ago)`;
  return `DISK PRESSURE (${reason}${detail === '' ? '' : `: ${detail}`})${since}`;
}

/** Whole seconds from `sinceNs` to `nowMs`, never negative (the agent's clock may be ahead). */
function agoNs(sinceNs: bigint, nowMs: number): bigint {
  const ns = BigInt(Math.trunc(nowMs)) * 1_000_000n - sinceNs;
  return ns <= 0n ? 0n : ns - (ns % 1_000_000_000n);
}

/**
 * `drydock agent show`: the agent in lines, label and value.
 *
 *     agent      agent-1 (6ed9...-S0) at 127.0.0.2:5051
 *     state      ACTIVE, DISK PRESSURE (no offers of its resources)
 *     machine    agent-1 (127.0.0.2), UP
 *     condition  DISK PRESSURE (NO_SPACE: ...) since ... (12s ago)
 *                free 0 B of 4 MB, 12 of 1024 inodes, in /var/lib/drydock/agent
 *     drain      DRAINING since ..., 2 tasks remaining
 */
export function agentShowLines(d: AgentViewJson, nowMs: number): string[] {
  const id = d.agent_id?.value ?? '?';
  const host = oneLine(d.hostname ?? '?');
  const lines = [`agent      ${host} (${oneLine(id)}) at ${oneLine(d.ip ?? '?')}:${d.port ?? '?'}`];
  const p = diskPressureOf(d);
  lines.push(`state      ${oneLine(d.state ?? '?')}${p === undefined ? '' : ', DISK PRESSURE (no offers of its resources while it lasts)'}`);
  const mid = d.machine?.id;
  const machine = mid === undefined ? '?' : `${oneLine(mid.hostname ?? '')}${mid.ip === undefined ? '' : ` (${oneLine(mid.ip)})`}`;
  lines.push(`machine    ${machine}${d.machine?.mode === undefined ? '' : `, ${oneLine(d.machine.mode)}`}`);
  if (p === undefined) lines.push('condition  none');
  else {
    lines.push(`condition  ${diskPressureLine(p, nowMs)}`);
    const figures: string[] = [];
    if (typeof p.free_bytes === 'number' && typeof p.total_bytes === 'number') figures.push(`${formatBytes(p.free_bytes)} of ${formatBytes(p.total_bytes)} free`);
    if (typeof p.free_inodes === 'number' && typeof p.total_inodes === 'number' && p.total_inodes > 0) figures.push(`${p.free_inodes} of ${p.total_inodes} inodes free`);
    if (figures.length > 0) lines.push(`           ${figures.join(', ')}${p.path === undefined ? '' : ` in ${oneLine(p.path)}`}`);
  }
  if (d.drain !== undefined) {
    const started = nanosOf(d.drain.started_time);
    const remaining = d.drain.remaining_tasks;
    const count = typeof remaining === 'number' ? remaining : Array.isArray(remaining) ? remaining.length : undefined;
    lines.push(`drain      ${oneLine(d.drain.state ?? '?')}${started === undefined ? '' : ` since ${isoTime(started - (started % 1_000_000_000n))}`}${count === undefined ? '' : `, ${count} task${count === 1 ? '' : 's'} remaining`}`);
  }
  return lines;
}

/**
 * Why `drydock run` may have had no offer, from Drydock's view of the agents: each agent under
 * disk pressure whose resources it could have had (the one `--hostname` names, else every one),
 * in a line. Empty when none is.
 */
export function noOfferReasons(agents: readonly AgentViewJson[], hostname: string | undefined, nowMs: number): string[] {
  const wanted = hostname?.toLowerCase();
  const lines: string[] = [];
  for (const a of agents) {
    if (wanted !== undefined && a.hostname?.toLowerCase() !== wanted) continue;
    const p = diskPressureOf(a);
    if (p === undefined) continue;
    lines.push(`${oneLine(a.hostname ?? a.agent_id?.value ?? '?')} is under ${diskPressureLine(p, nowMs)}: the master offers none of its resources while it lasts`);
  }
  return lines;
}

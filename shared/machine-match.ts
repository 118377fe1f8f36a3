/**
 * Which registered agent a machine of a maintenance request names, and when it names one only
 * by half. Mesos matches a MachineID to an agent only when both fields are the agent's (its
 * hostname, case-insensitively, and its IP; reference/mesos-api.md §5), and accepts machines no
 * agent runs on, so `agent-2=127.0.0.9` for an agent registered at 127.0.0.3 is a valid machine
 * that affects nothing. The API keeps accepting it; the master says so in a Warning header and
 * the CLI refuses it without --force (docs/maintenance.md). One decision for both. Pure.
 */

import { machineKey, type MachineId } from './machine.js';

/** A registered agent as the decision needs it: its id and the machine it runs on. */
export interface MatchAgent {
  readonly id: string;
  readonly hostname: string;
  readonly ip: string;
}

/** A machine of the request that shares its hostname or its IP with an agent, but not both. */
export interface MachineMismatch {
  readonly machine: MachineId;
  readonly agent: MatchAgent;
  /** What they share. */
  readonly by: 'hostname' | 'ip';
}

/** A MachineID as the CLI takes it: `host=ip`, `host` or `=ip`. */
export function machineArg(id: MachineId): string {
  const host = id.hostname ?? '';
  if (id.ip === undefined) return host;
  return `${host}=${id.ip}`;
}

/**
 * The machines of `machines` that match no agent exactly but share a hostname (compared
 * case-insensitively, as Mesos compares them) or an IP with one: one entry per (machine, agent),
 * in the order of `machines`, then of `agents`. A machine listed twice is reported once. A
 * machine an agent matches exactly is not reported even if another agent shares half of it: it
 * does affect an agent. Indexed once, so 10,000 machines against 10,000 agents is linear.
 */
export function machineMismatches(machines: readonly MachineId[], agents: readonly MatchAgent[]): MachineMismatch[] {
  if (machines.length === 0 || agents.length === 0) return [];
  const exact = new Set<string>();
  const byHost = new Map<string, MatchAgent[]>();
  const byIp = new Map<string, MatchAgent[]>();
  for (const a of agents) {
    exact.add(machineKey({ hostname: a.hostname, ip: a.ip }));
    push(byHost, a.hostname.toLowerCase(), a);
    push(byIp, a.ip, a);
  }
  const out: MachineMismatch[] = [];
  const seen = new Set<string>();
  for (const m of machines) {
    const key = machineKey(m);
    if (seen.has(key) || exact.has(key)) continue;
    seen.add(key);
    const host = m.hostname === undefined || m.hostname === '' ? [] : byHost.get(m.hostname.toLowerCase()) ?? [];
    const ip = m.ip === undefined || m.ip === '' ? [] : byIp.get(m.ip) ?? [];
    for (const agent of host) out.push({ machine: m, agent, by: 'hostname' });
    for (const agent of ip) if (!host.includes(agent)) out.push({ machine: m, agent, by: 'ip' });
  }
  return out;
}

function push<K, V>(map: Map<K, V[]>, key: K, v: V): void {
  const list = map.get(key);
  if (list === undefined) map.set(key, [v]);
  else list.push(v);
}

/**
 * What a mismatch means, in one line: `machine agent-2=127.0.0.9 matches agent agent-2
 * (127.0.0.3) by hostname only: it will not affect that agent, whose machine is
 * agent-2=127.0.0.3`. The same text in the master's Warning header and the CLI's refusal.
 */
export function mismatchText(m: MachineMismatch): string {
  const a = m.agent;
  return `machine ${machineArg(m.machine)} matches agent ${a.hostname} (${a.ip}) by ${m.by === 'ip' ? 'IP' : 'hostname'} only: it will not affect that agent, whose machine is ${a.hostname}=${a.ip}`;
}

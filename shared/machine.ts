/**
 * Machines as Mesos names them (MachineID, reference/mesos-api.md §5): what the master, the
 * CLI and the agent agree on when they say "the same machine". Pure.
 */

/** Mesos MachineID. Presence matters: an unset field and `""` are different machines. */
export interface MachineId {
  hostname?: string;
  ip?: string;
}

/** A machine's mode (Mesos MachineInfo.Mode). */
export type MachineMode = 'UP' | 'DRAINING' | 'DOWN';

/**
 * The key of a machine: Mesos `operator==` on MachineID (§5) — same presence of each field,
 * hostname compared case-insensitively, ip exactly.
 */
export function machineKey(id: MachineId | undefined): string {
  const h = id?.hostname === undefined ? '-' : `h${id.hostname.toLowerCase()}`;
  const i = id?.ip === undefined ? '-' : `i${id.ip}`;
  return `${h}\u0000${i}`;
}

/** The MachineID of an agent: both fields always set (Mesos `{SlaveInfo.hostname, libprocess ip}`). */
export function agentMachineId(hostname: string, ip: string): MachineId {
  return { hostname, ip };
}

/** MachineID as JSON, fields in proto order (hostname, ip), unset ones left out. */
export function machineIdJson(id: MachineId): Record<string, string> {
  const j: Record<string, string> = {};
  if (id.hostname !== undefined) j['hostname'] = id.hostname;
  if (id.ip !== undefined) j['ip'] = id.ip;
  return j;
}

/** The compact JSON Mesos prints in its messages: `{"hostname":"h","ip":"10.0.0.1"}`. */
export function machineIdText(id: MachineId): string {
  return JSON.stringify(machineIdJson(id));
}

/** A MachineID as Mesos prints it in the drain refusal: `host (ip)`, `host` or `(ip)`. */
export function machineText(id: MachineId): string {
  if (id.hostname !== undefined && id.ip !== undefined) return `${id.hostname} (${id.ip})`;
  if (id.hostname !== undefined) return id.hostname;
  return `(${id.ip ?? ''})`;
}

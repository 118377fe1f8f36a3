/**
 * The maintenance service: UPDATE_MAINTENANCE_SCHEDULE (`POST /maintenance/schedule`),
 * START_MAINTENANCE (`/machine/down`) and STOP_MAINTENANCE (`/machine/up`), Mesos
 * `Master::Http::*Maintenance*` (reference/mesos-api.md §2). Each command runs in the term's
 * serial queue: validated against the state the previous one left (maintenance.ts, all or
 * nothing), written, applied, then announced as MACHINE_UPDATED. The frameworks service
 * rescinds and re-offers on it; registration removes the agents of machines gone DOWN (like
 * Mesos, the answer does not wait for those removals).
 */

import type { DrydockError } from '../shared/errors.js';
import type { Logger } from '../shared/log.js';
import { machineKey, type MachineId } from '../shared/machine.js';
import type { Commits } from './commit.js';
import type { MasterEvents } from './events.js';
import { validateSchedule, validateTransition, type MaintenanceState, type Schedule } from './maintenance.js';

export interface MaintainerOptions {
  maintenance: MaintenanceState;
  commits: Commits;
  bus: MasterEvents;
  log: Logger;
}

export class Maintainer {
  readonly #o: MaintainerOptions;

  constructor(o: MaintainerOptions) {
    this.#o = o;
  }

  /** Resolves with the validation or write error, or undefined once durable and applied. */
  updateSchedule(schedule: Schedule): Promise<DrydockError | undefined> {
    const { maintenance, commits, bus, log } = this.#o;
    return commits.serial(async () => {
      const bad = validateSchedule(schedule, maintenance.machines);
      if (bad !== undefined) return bad;
      const r = await commits.write('UPDATE_SCHEDULE', {}, (reg) => reg.updateSchedule(maintenance.durableSchedule(schedule)), () => maintenance.applySchedule(schedule));
      if (!r.ok) return r.error;
      log.info('maintenance schedule updated', { windows: schedule.windows.length, machines: r.value.machineKeys.length, agents: r.value.agentIds.length });
      bus.emit({ type: 'MACHINE_UPDATED', change: 'SCHEDULED', machineKeys: r.value.machineKeys, agentIds: r.value.agentIds });
      return undefined;
    });
  }

  /** DRAINING machines go DOWN; their agents are then removed by registration. */
  startMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    const { maintenance, commits, bus, log } = this.#o;
    return commits.serial(async () => {
      const bad = validateTransition('DOWN', ids, maintenance.machines);
      if (bad !== undefined) return bad;
      const r = await commits.write('START_MAINTENANCE', {}, (reg) => reg.startMaintenance(ids.map(machineKey)), () => maintenance.applyDown(ids));
      if (!r.ok) return r.error;
      log.info('machines down', { machines: r.value.machineKeys.length, agents: r.value.agentIds.length });
      bus.emit({ type: 'MACHINE_UPDATED', change: 'DOWN', machineKeys: r.value.machineKeys, agentIds: r.value.agentIds });
      return undefined;
    });
  }

  /** DOWN machines become UP and leave the schedule; their agents may register again. */
  stopMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    const { maintenance, commits, bus, log } = this.#o;
    return commits.serial(async () => {
      const bad = validateTransition('UP', ids, maintenance.machines);
      if (bad !== undefined) return bad;
      const r = await commits.write('STOP_MAINTENANCE', {}, (reg) => reg.stopMaintenance(ids.map(machineKey)), () => maintenance.applyUp(ids));
      if (!r.ok) return r.error;
      log.info('machines up', { machines: r.value.machineKeys.length });
      bus.emit({ type: 'MACHINE_UPDATED', change: 'UP', machineKeys: r.value.machineKeys, agentIds: r.value.agentIds });
      return undefined;
    });
  }
}

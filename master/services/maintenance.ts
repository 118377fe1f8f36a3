/**
 * The maintenance service: UPDATE_MAINTENANCE_SCHEDULE (`POST /maintenance/schedule`),
 * START_MAINTENANCE (`/machine/down`) and STOP_MAINTENANCE (`/machine/up`), Mesos
 * `Master::Http::*Maintenance*` (reference/mesos-api.md §2). Each command runs in the term's
 * serial queue: validated against the state the previous one left (cores/maintenance.ts, all or
 * nothing), written, applied, then announced as MACHINE_UPDATED. The frameworks service
 * rescinds and re-offers on it; registration removes the agents of machines gone DOWN (like
 * Mesos, the answer does not wait for those removals).
 */

import type { DrydockError } from '../../shared/errors.js';
import type { Logger } from '../../shared/log.js';
import { machineKey, type MachineId } from '../../shared/machine.js';
import type { Commits } from '../term/commit.js';
import type { MachineChange, MasterEvents } from '../term/events.js';
import { keyed, validateSchedule, validateTransition, type KeyedSchedule, type MaintenanceChange, type MaintenanceState, type Schedule, type Unavailability } from '../cores/maintenance.js';
import type { Registry } from '../registry/registry.js';

export interface MaintenanceServiceOptions {
  maintenance: MaintenanceState;
  commits: Commits;
  bus: MasterEvents;
  log: Logger;
}

export class MaintenanceService {
  readonly #o: MaintenanceServiceOptions;

  constructor(o: MaintenanceServiceOptions) {
    this.#o = o;
  }

  /** Resolves with the validation or write error, or undefined once durable and applied. */
  updateSchedule(schedule: Schedule | KeyedSchedule): Promise<DrydockError | undefined> {
    // The new schedule replaces the current one whole: no copy of the current one is needed.
    return this.#scheduleCommand(() => schedule, false);
  }

  /**
   * The maintenance plans' internal path: each machine gets its unavailability, merged into the
   * schedule as it is when the command runs (in the serial queue, so an operator's schedule POST
   * queued before it is kept). Each machine leaves any other window; machines with the same
   * unavailability share one window; windows left empty are dropped. One schedule write for all.
   */
  scheduleMachines(items: readonly { id: MachineId; unavailability: Unavailability }[]): Promise<DrydockError | undefined> {
    return this.#scheduleCommand((current) => {
      const windows = new Map<string, Schedule['windows'][number]>();
      for (const { id, unavailability } of items) {
        const k = `${unavailability.startNs}/${unavailability.durationNs ?? ''}`;
        let w = windows.get(k);
        if (w === undefined) windows.set(k, (w = { machineIds: [], unavailability: { ...unavailability } }));
        w.machineIds.push({ ...id });
      }
      const rest = withoutMachines(current, items.map((i) => i.id));
      return { windows: [...rest.windows, ...windows.values()] };
    });
  }

  /** The maintenance plans' internal path: the machines leave the schedule (refused by validation once one is DOWN, as Mesos does). */
  unscheduleMachines(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    return this.#scheduleCommand((current) => withoutMachines(current, ids));
  }

  /** `build` makes the schedule to write from the current one (copied for it only when `fromCurrent`). */
  #scheduleCommand(build: (current: Schedule) => Schedule | KeyedSchedule, fromCurrent = true): Promise<DrydockError | undefined> {
    const m = this.#o.maintenance;
    // Built and keyed once, when the command runs: validation, the write and the apply share the keys.
    let schedule: KeyedSchedule | undefined;
    const get = (): KeyedSchedule => (schedule ??= keyed(build(fromCurrent ? m.currentSchedule() : { windows: [] })));
    return this.#command('SCHEDULED', () => validateSchedule(get(), m.machines), (reg) => reg.updateSchedule(m.durableSchedule(get())), () => m.applySchedule(get()));
  }

  /** DRAINING machines go DOWN; their agents are then removed by registration. */
  startMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    const m = this.#o.maintenance;
    const keys = ids.map(machineKey);
    // Their agents are removed next: the attributes ACLs know these machines by are kept with them (read when the write runs).
    return this.#command('DOWN', () => validateTransition('DOWN', ids, m.machines), (reg) => reg.startMaintenance(keys, m.attributesByKey(keys)), () => m.applyDown(ids));
  }

  /** DOWN machines become UP and leave the schedule; their agents may register again. */
  stopMaintenance(ids: readonly MachineId[]): Promise<DrydockError | undefined> {
    const m = this.#o.maintenance;
    return this.#command('UP', () => validateTransition('UP', ids, m.machines), (reg) => reg.stopMaintenance(ids.map(machineKey)), () => m.applyUp(ids));
  }

  /** One command in the serial queue: validate, write, apply, announce MACHINE_UPDATED. */
  #command(change: MachineChange, validate: () => DrydockError | undefined, write: (r: Registry) => Promise<void>, apply: () => MaintenanceChange): Promise<DrydockError | undefined> {
    const { commits, bus, log } = this.#o;
    return commits.serial(async () => {
      const bad = validate();
      if (bad !== undefined) return bad;
      const r = await commits.write(`MAINTENANCE_${change}`, {}, write, apply);
      if (!r.ok) return r.error;
      log.info('machines updated', { change, machines: r.value.machineKeys.length, agents: r.value.agentIds.length });
      bus.emit({ type: 'MACHINE_UPDATED', change, machineKeys: r.value.machineKeys, agentIds: r.value.agentIds });
      return undefined;
    });
  }
}

/** The schedule without these machines; windows left empty are dropped (Mesos refuses empty windows). */
function withoutMachines(schedule: Schedule, ids: readonly MachineId[]): Schedule {
  const keys = new Set(ids.map(machineKey));
  return {
    windows: schedule.windows
      .map((w) => ({ machineIds: w.machineIds.filter((x) => !keys.has(machineKey(x))), unavailability: w.unavailability }))
      .filter((w) => w.machineIds.length > 0),
  };
}

/**
 * `drydock pod`'s shell: list, status [<pod>], info <pod>, restart <pod>, replace <pod> against
 * a service scheduler's `/v1/pod`. One request each; every decision is in pod.ts. Each function
 * returns the exit status (0, 1, or 2 for a usage error).
 */

import {
  POD_LIST_REQUEST,
  podActionOutcome,
  podActionRequest,
  podInfoOutcome,
  podInfoRequest,
  podListOutcome,
  podStatusOutcome,
  podStatusRequest,
  type PodAction,
} from './pod.js';
import { print, processShell, schedulerTarget, type SchedulerFlags, type Shell } from './plan-command.js';
import { EXIT_USAGE } from './service-api.js';

/** `drydock pod list`. */
export async function listPods(flags: SchedulerFlags, shell: Shell = processShell): Promise<number> {
  const at = schedulerTarget(flags, shell);
  if (at === undefined) return EXIT_USAGE;
  return print(shell.io, podListOutcome(at, await shell.send(at, POD_LIST_REQUEST), flags.json === true));
}

/** `drydock pod status [<pod>]`: every instance of the service, or one. */
export async function podStatus(pod: string | undefined, flags: SchedulerFlags, shell: Shell = processShell): Promise<number> {
  const at = schedulerTarget(flags, shell);
  if (at === undefined) return EXIT_USAGE;
  const req = podStatusRequest(pod);
  if (!req.ok) {
    shell.io.err(req.error);
    return EXIT_USAGE;
  }
  return print(shell.io, podStatusOutcome(at, req.value, pod !== undefined, await shell.send(at, req.value), flags.json === true));
}

/** `drydock pod info <pod>`: JSON either way (see podInfoOutcome). */
export async function podInfo(pod: string, flags: SchedulerFlags, shell: Shell = processShell): Promise<number> {
  const at = schedulerTarget(flags, shell);
  if (at === undefined) return EXIT_USAGE;
  const req = podInfoRequest(pod);
  if (!req.ok) {
    shell.io.err(req.error);
    return EXIT_USAGE;
  }
  return print(shell.io, podInfoOutcome(at, req.value, await shell.send(at, req.value)));
}

/** `drydock pod restart|replace <pod>`. */
export async function podAction(action: PodAction, pod: string, flags: SchedulerFlags, shell: Shell = processShell): Promise<number> {
  const at = schedulerTarget(flags, shell);
  if (at === undefined) return EXIT_USAGE;
  const req = podActionRequest(action, pod);
  if (!req.ok) {
    shell.io.err(req.error);
    return EXIT_USAGE;
  }
  return print(shell.io, podActionOutcome(at, action, req.value, await shell.send(at, req.value), flags.json === true));
}

// Which actions the console offers, decided as the master decides them (master/cores/drain.ts
// refuseDrain / refuseReactivate, master/cores/maintenance.ts validateTransition,
// shared/plans/commands.ts continuePlan / interruptPlan, master/plans/verbs.ts continue's
// AWAITING_OPERATOR steps), so a button is never one the master would then refuse. Pure: plain
// data in, `{ verb: reason-or-true }` out; a refused verb keeps its reason, shown as a tooltip.

/** `{ drain, deactivate, reactivate }` of an agent: true, or why the master would refuse it. */
export function agentActions(agent, view) {
  const phase = view?.phase ?? (agent === undefined ? undefined : 'REGISTERED');
  const drainState = view?.drain?.state ?? agent?.drain_info?.state;
  const deactivated = view === undefined ? agent?.deactivated === true : view.deactivated === true;
  const capable = (agent?.capabilities ?? []).some((c) => c?.type === 'AGENT_DRAINING');
  const out = {};
  // DRAIN_AGENT: an unknown agent, one of a machine in the schedule (Mesos' rule: a drain and a
  // window must not fight), one without the AGENT_DRAINING capability are refused. A drain
  // already there cannot be cancelled nor usefully repeated: it is not offered again.
  if (phase === undefined || view?.gone) out.drain = 'the master does not know this agent';
  else if (drainState !== undefined) out.drain = `already ${drainState}: a drain cannot be cancelled`;
  else if (phase === 'REGISTERED' && view?.machine?.unavailability !== undefined) out.drain = 'its machine is in the maintenance schedule (the schedule drains it)';
  else if (phase === 'REGISTERED' && agent !== undefined && !capable) out.drain = 'the agent is not capable of draining';
  else out.drain = true;
  // DEACTIVATE_AGENT: any known agent; deactivating a deactivated one changes nothing.
  if (phase === undefined || view?.gone) out.deactivate = 'the master does not know this agent';
  else if (deactivated) out.deactivate = 'already deactivated';
  else out.deactivate = true;
  // REACTIVATE_AGENT: only a deactivated agent, and never while its drain is DRAINING (Mesos:
  // a drain cannot be cancelled); DRAINED or DEACTIVATED may be reactivated.
  if (!deactivated) out.reactivate = 'the agent is not deactivated';
  else if (drainState === 'DRAINING') out.reactivate = 'the agent is DRAINING: a drain cannot be cancelled; reactivate once it is DRAINED';
  else out.reactivate = true;
  return out;
}

/** `{ down, up }` of a machine by its mode: DOWN only from DRAINING (in the schedule), UP only from DOWN. */
export function machineActions(mode) {
  return {
    down: mode === 'DRAINING' ? true : mode === 'DOWN' ? 'already DOWN' : 'only a machine in the schedule (DRAINING) can be taken DOWN',
    up: mode === 'DOWN' ? true : 'only a DOWN machine can be brought UP',
  };
}

const RUNNING = new Set(['PREPARED', 'STARTING', 'STARTED', 'IN_PROGRESS']);

/**
 * `{ continue, interrupt }` of a plan (`phase` undefined) or of one of its phases, from the plan's
 * JSON (`detail`: phases and steps with their status; a maintenance step's `stage` as Drydock's
 * stream tells it). `kind` 'maintenance' adds the master's rule that continue also releases a
 * step AWAITING_OPERATOR. An interrupted plan or phase reads WAITING (unless ERROR or COMPLETE).
 */
export function planActions(kind, detail, status, phase) {
  const phases = detail?.phases ?? [];
  const scope = phase === undefined ? phases : phases.filter((p) => p.name === phase);
  const awaiting = kind === 'maintenance' && scope.some((p) => (p.steps ?? []).some((s) => s.stage === 'AWAITING_OPERATOR'));
  const own = phase === undefined ? status : scope[0]?.status;
  const out = {};
  if (own === undefined) return { continue: 'unknown plan', interrupt: 'unknown plan' };
  if (own === 'COMPLETE') {
    out.continue = 'the plan is COMPLETE';
    out.interrupt = 'the plan is COMPLETE';
    if (phase !== undefined) out.continue = out.interrupt = 'the phase is COMPLETE';
    return out;
  }
  if (awaiting) out.continue = true;
  else if (phase !== undefined) out.continue = RUNNING.has(own) ? 'the phase is running' : true;
  else out.continue = own === 'WAITING' || phases.some((p) => p.status === 'WAITING') ? true : 'nothing is held: the plan is not interrupted and no canary waits';
  out.interrupt = own === 'WAITING' ? 'already held (WAITING)' : true;
  return out;
}

/** The title of a refused action's button (its reason), or undefined when it is allowed. */
export function why(v) {
  return v === true ? undefined : v;
}

/**
 * The console's action rules (console/actions.js): each button is offered exactly when the
 * master would accept its call, by a table of agent, machine and plan states against the
 * master's refusal rules (master/cores/drain.ts, master/cores/maintenance.ts,
 * shared/plans/commands.ts, master/plans/verbs.ts).
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
// @ts-expect-error: the console is plain JavaScript without declarations
import { agentActions, machineActions, planActions } from '../../console/actions.js';

type Verdicts = Record<string, true | string>;
const allowed = (v: Verdicts): string[] => Object.entries(v).filter(([, x]) => x === true).map(([k]) => k).sort();

const CAPABLE = { capabilities: [{ type: 'AGENT_DRAINING' }] };

test('agent actions: as the master refuses DRAIN_AGENT, DEACTIVATE_AGENT and REACTIVATE_AGENT', () => {
  const cases: Array<[string, unknown, unknown, string[]]> = [
    ['active', CAPABLE, { phase: 'REGISTERED', state: 'ACTIVE', deactivated: false }, ['deactivate', 'drain']],
    ['deactivated', CAPABLE, { phase: 'REGISTERED', state: 'DEACTIVATED', deactivated: true }, ['drain', 'reactivate']],
    ['DRAINING: no reactivate (a drain cannot be cancelled), no second drain', CAPABLE, { phase: 'REGISTERED', state: 'DRAINING', deactivated: true, drain: { state: 'DRAINING' } }, []],
    ['DRAINED: reactivate', CAPABLE, { phase: 'REGISTERED', state: 'DRAINED', deactivated: true, drain: { state: 'DRAINED' } }, ['reactivate']],
    ['machine in the schedule: no drain', CAPABLE, { phase: 'REGISTERED', state: 'ACTIVE', deactivated: false, machine: { mode: 'DRAINING', unavailability: { start: { nanoseconds: 1 } } } }, ['deactivate']],
    ['not capable of draining', { capabilities: [] }, { phase: 'REGISTERED', state: 'ACTIVE', deactivated: false }, ['deactivate']],
    ['unreachable, scheduled: a drain is accepted (applied when it returns)', undefined, { phase: 'UNREACHABLE', state: 'UNREACHABLE', deactivated: false, machine: { unavailability: {} } }, ['deactivate', 'drain']],
    ['gone: nothing', CAPABLE, { phase: 'REGISTERED', gone: true, deactivated: false }, []],
    ['GET_AGENTS alone, DRAINING', { ...CAPABLE, deactivated: true, drain_info: { state: 'DRAINING' } }, undefined, []],
    ['GET_AGENTS alone, active', { ...CAPABLE, deactivated: false }, undefined, ['deactivate', 'drain']],
    ['unknown', undefined, undefined, []],
  ];
  for (const [name, agent, view, want] of cases) assert.deepEqual(allowed(agentActions(agent, view)), want, name);
  assert.match(agentActions(CAPABLE, { phase: 'REGISTERED', deactivated: true, drain: { state: 'DRAINING' } }).reactivate, /cannot be cancelled/);
});

test('machine actions: DOWN only from DRAINING, UP only from DOWN', () => {
  const cases: Array<[string, string[]]> = [['UP', []], ['DRAINING', ['down']], ['DOWN', ['up']]];
  for (const [mode, want] of cases) assert.deepEqual(allowed(machineActions(mode)), want, mode);
});

test('plan actions: no continue or interrupt on COMPLETE; continue only where something is held', () => {
  const plan = (status: string, phases: Array<[string, string, string?]>): unknown => ({ status, phases: phases.map(([name, st, stage]) => ({ name, status: st, steps: [{ name: 's', status: st, ...(stage ? { stage } : {}) }] })) });
  const cases: Array<[string, 'maintenance' | 'service', unknown, string, string | undefined, string[]]> = [
    ['COMPLETE plan', 'maintenance', plan('COMPLETE', [['p', 'COMPLETE']]), 'COMPLETE', undefined, []],
    ['COMPLETE phase of a running plan', 'maintenance', plan('IN_PROGRESS', [['p', 'COMPLETE'], ['q', 'IN_PROGRESS']]), 'IN_PROGRESS', 'p', []],
    ['running plan: interrupt only', 'service', plan('IN_PROGRESS', [['p', 'IN_PROGRESS']]), 'IN_PROGRESS', undefined, ['interrupt']],
    ['interrupted plan (WAITING): continue only', 'service', plan('WAITING', [['p', 'PENDING']]), 'WAITING', undefined, ['continue']],
    ['canary phase waiting: continue the plan', 'maintenance', plan('IN_PROGRESS', [['p', 'WAITING']]), 'IN_PROGRESS', undefined, ['continue', 'interrupt']],
    ['waiting phase: continue it', 'maintenance', plan('IN_PROGRESS', [['p', 'WAITING']]), 'IN_PROGRESS', 'p', ['continue']],
    ['running phase: interrupt it', 'maintenance', plan('IN_PROGRESS', [['p', 'STARTING']]), 'IN_PROGRESS', 'p', ['interrupt']],
    ['step AWAITING_OPERATOR: continue (maintenance)', 'maintenance', plan('IN_PROGRESS', [['p', 'STARTING', 'AWAITING_OPERATOR']]), 'IN_PROGRESS', undefined, ['continue', 'interrupt']],
    ['same stage in a phase', 'maintenance', plan('IN_PROGRESS', [['p', 'STARTING', 'AWAITING_OPERATOR']]), 'IN_PROGRESS', 'p', ['continue', 'interrupt']],
    ['pending phase: continue releases it', 'service', plan('PENDING', [['p', 'PENDING']]), 'PENDING', 'p', ['continue', 'interrupt']],
  ];
  for (const [name, kind, detail, status, phase, want] of cases) assert.deepEqual(allowed(planActions(kind, detail, status, phase)), want, name);
});

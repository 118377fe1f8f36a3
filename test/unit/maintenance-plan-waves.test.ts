/**
 * A maintenance plan's waves (master/plans/waves.ts): which machines may be out together, in
 * order, for each plan and phase strategy, max_parallel and the budget's max_down. The impact
 * preview shows each wave with what it would do.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planWaves, type WaveSpec } from '../../master/plans/waves.js';
import type { MachineSelection } from '../../master/plans/spec.js';

/** Phases r1 (a1..a4) and r2 (b1, b2). */
const SELECTION: MachineSelection = {
  phases: [
    { name: 'r1', machines: ['a1', 'a2', 'a3', 'a4'].map((hostname) => ({ hostname })) },
    { name: 'r2', machines: ['b1', 'b2'].map((hostname) => ({ hostname })) },
  ],
  unmatched: [],
};

function spec(o: Partial<{ strategy: WaveSpec['strategy']; phaseStrategy: WaveSpec['phaseStrategy']; maxParallel: number; maxDown: number }>): WaveSpec {
  return { strategy: o.strategy ?? 'serial', phaseStrategy: o.phaseStrategy ?? 'serial', maxParallel: o.maxParallel, budget: { maxDown: o.maxDown, minActiveAgents: undefined } };
}

/** [case, spec, waves as `phases: machines`]. */
const CASES: Array<[string, WaveSpec, string[]]> = [
  ['serial plan, serial phases: one machine at a time', spec({}), ['r1: a1', 'r1: a2', 'r1: a3', 'r1: a4', 'r2: b1', 'r2: b2']],
  ['parallel phases: a whole phase at once', spec({ phaseStrategy: 'parallel' }), ['r1: a1 a2 a3 a4', 'r2: b1 b2']],
  ['parallel phases, max_parallel 3', spec({ phaseStrategy: 'parallel', maxParallel: 3 }), ['r1: a1 a2 a3', 'r1: a4', 'r2: b1 b2']],
  ['parallel phases, max_down 2 wins over max_parallel 3', spec({ phaseStrategy: 'parallel', maxParallel: 3, maxDown: 2 }), ['r1: a1 a2', 'r1: a3 a4', 'r2: b1 b2']],
  ['canary: the canary steps one by one, then serial', spec({ phaseStrategy: 'canary' }), ['r1: a1', 'r1: a2', 'r1: a3', 'r1: a4', 'r2: b1', 'r2: b2']],
  ['parallel-canary: two canaries, then the rest together', spec({ phaseStrategy: 'parallel-canary' }), ['r1: a1', 'r1: a2', 'r1: a3 a4', 'r2: b1', 'r2: b2']],
  ['parallel plan: the phases side by side', spec({ strategy: 'parallel' }), ['r1 r2: a1 b1', 'r1 r2: a2 b2', 'r1: a3', 'r1: a4']],
  ['parallel plan, parallel phases, max_down 3', spec({ strategy: 'parallel', phaseStrategy: 'parallel', maxDown: 3 }), ['r1: a1 a2 a3', 'r2: b1 b2', 'r1: a4']],
];

for (const [name, s, want] of CASES) {
  test(`planWaves: ${name}`, () => {
    const got = planWaves(s, SELECTION).map((w) => `${w.phases.join(' ')}: ${w.machines.map((m) => m.hostname).join(' ')}`);
    assert.deepEqual(got, want);
  });
}

test('planWaves: no machines, no waves', () => {
  assert.deepEqual(planWaves(spec({ strategy: 'parallel' }), { phases: [], unmatched: [] }), []);
});

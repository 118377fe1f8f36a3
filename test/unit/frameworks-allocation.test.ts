/**
 * When the frameworks service allocates, on the injected clock (services/frameworks-allocation.ts):
 * events of one turn make one allocation (Clock.immediate), and the next one waits twice as long
 * as the last allocation took (Clock.setTimer), measured on the clock's monotonic time. A clock
 * that records what it is asked, and whose monotonic time moves 5 ms per reading.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { silentLogger } from '../../shared/log.js';
import { AgentTable } from '../../master/cores/agents.js';
import { MaintenanceState } from '../../master/cores/maintenance.js';
import type { Registry } from '../../master/registry/registry.js';
import { FrameworksService } from '../../master/services/frameworks.js';
import { Commits } from '../../master/term/commit.js';
import { MasterEvents } from '../../master/term/events.js';

class RecordingClock implements Clock {
  readonly immediates: Array<() => void> = [];
  readonly timers: Array<{ ms: number; fn: () => void }> = [];
  mono = 1000;
  now(): number {
    return 1_700_000_000_000;
  }
  setTimer(ms: number, fn: () => void): TimerHandle {
    this.timers.push({ ms, fn });
    return { cancel: () => {} };
  }
  immediate(fn: () => void): TimerHandle {
    this.immediates.push(fn);
    return { cancel: () => {} };
  }
  monotonicMs(): number {
    return (this.mono += 5);
  }
}

test('allocation runs through the clock: batched on one immediate, then spaced by twice its last duration', async () => {
  const clock = new RecordingClock();
  const registry = { addFramework: async () => {} } as unknown as Registry;
  const s = new FrameworksService({
    masterId: 'M',
    masterInfo: () => ({ id: 'M' }),
    startTimeMs: clock.now(),
    allocationIntervalMs: 60_000,
    agents: new AgentTable({ pingTimeoutMs: 1000, maxPingTimeouts: 3, reregisterTimeoutMs: 10_000 }),
    maintenance: new MaintenanceState(),
    link: { send: () => false, close: () => {} },
    commits: new Commits(registry, silentLogger, () => {}),
    bus: new MasterEvents(),
    clock,
    log: silentLogger,
  });
  s.start();
  assert.deepEqual(clock.timers.map((t) => t.ms), [60_000], 'the allocation cycle');
  const subscribed = await s.subscribe({ user: 'u', name: 'f' }, () => ({ id: 'stream', send: () => {}, close: () => {}, onClose: () => {} }));
  assert.deepEqual(subscribed, { ok: true });
  // The subscription asked for an allocation: one immediate, however many ask in the turn.
  s.allocateSoon();
  s.allocateSoon();
  assert.equal(clock.immediates.length, 1);
  clock.immediates.shift()?.();
  // It took 5 ms (two readings); the next waits out three times that from its start, less the 5 ms since.
  s.allocateSoon();
  assert.equal(clock.immediates.length, 0, 'no immediate: too soon after the last allocation');
  assert.deepEqual(clock.timers.map((t) => t.ms), [60_000, 15_000, 5], 'the cycle, the stream\'s heartbeat, the spaced allocation');
  s.stop();
});

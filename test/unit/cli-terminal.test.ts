/**
 * The CLI's terminal: a sleep on a signal leaves no listener behind when it ends by its timer, so
 * a watch that sleeps many times on one signal (--timeout's) neither leaks nor warns.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { terminalIo } from '../../cli/terminal.js';

test('sleep: a timer-ended sleep removes its abort listener; an abort ends the sleep at once', async () => {
  const io = terminalIo('drydock');
  const done = new AbortController();
  for (let i = 0; i < 20; i++) await io.sleep(1, done.signal);
  assert.equal(getEventListeners(done.signal, 'abort').length, 0);
  const pending = io.sleep(3_600_000, done.signal);
  assert.equal(getEventListeners(done.signal, 'abort').length, 1);
  done.abort();
  await pending;
  assert.equal(getEventListeners(done.signal, 'abort').length, 0);
});

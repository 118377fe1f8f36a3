import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineBuffer } from '../../shared/lines.js';

test('LineBuffer: the lines each chunk completes; an unfinished line waits, reset drops it', () => {
  const b = new LineBuffer();
  const cases: Array<[string, string[]]> = [
    ['R fi', []],
    ['fo\nD', ['R fifo']],
    ['\n\nX bad\nD\n', ['D', '', 'X bad', 'D']],
    ['', []],
    ['partial', []],
  ];
  for (const [chunk, lines] of cases) assert.deepEqual(b.push(chunk), lines, JSON.stringify(chunk));
  b.reset();
  assert.deepEqual(b.push('next\n'), ['next']);
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { encodeRecord, RecordReader } from '../../shared/recordio.js';

test('the length counts UTF-8 bytes, not characters', () => {
  assert.equal(encodeRecord('{"m":"é"}').toString('utf8'), '10\n{"m":"é"}');
});

test('records split across chunks at every byte come out whole', () => {
  const records = ['{"type":"SUBSCRIBED"}', '{"type":"HEARTBEAT"}', '{"s":"日本語"}'];
  const wire = Buffer.concat(records.map(encodeRecord));
  for (let step = 1; step <= 7; step++) {
    const reader = new RecordReader();
    const got: string[] = [];
    for (let i = 0; i < wire.length; i += step) got.push(...reader.push(wire.subarray(i, i + step)));
    assert.deepEqual(got, records);
  }
});

test('a malformed prefix is an error', () => {
  assert.throws(() => new RecordReader().push('abc\n{}'), /bad length prefix/);
  assert.throws(() => new RecordReader(10).push('11\n'), /over the limit/);
});

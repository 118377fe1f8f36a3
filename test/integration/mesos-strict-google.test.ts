/**
 * The strict reader (test/helpers/mesos-strict.ts) against Google's: on every sample of its
 * table, python3-protobuf's json_format (unknown fields refused, required fields checked),
 * over Python modules protoc generates from Drydock's description of Mesos' v1 messages,
 * accepts what the reader accepts and refuses what it refuses. Where the reader differs on
 * purpose (the rows marked `google`), Google's verdict must really be the opposite, so the
 * list of differences in the reader's doc comment stays true.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { googleProtobufMissing, googleRead } from '../helpers/google-protobuf.js';
import { readStrict } from '../helpers/mesos-strict.js';
import { STRICT_CASES } from '../helpers/mesos-strict-cases.js';

const skip = googleProtobufMissing() ?? false;

test("Google's json_format reads every sample as the strict reader does", { skip }, async (t) => {
  const verdicts = await googleRead(t, STRICT_CASES);
  const disagreements: string[] = [];
  STRICT_CASES.forEach((c, i) => {
    const ours = readStrict(c.type, c.json);
    const google = verdicts[i] as { ok: boolean; error?: string };
    const oursOk = ours.length === 0;
    const expected = c.google === undefined ? oursOk : !oursOk;
    if (google.ok !== expected) {
      disagreements.push(
        `${c.name}: the reader ${oursOk ? 'accepts' : `refuses (${ours.join('; ')})`}, Google ${google.ok ? 'accepts' : `refuses (${google.error ?? ''})`}` +
          (c.google === undefined ? '' : `; they were to differ: ${c.google}`),
      );
    }
  });
  assert.deepEqual(disagreements, []);
  // The table has clean reads, refusals and deliberate differences: each kind is exercised.
  assert.ok(verdicts.filter((v) => v.ok).length >= 5 && verdicts.filter((v) => !v.ok).length >= 10);
});

/**
 * Large JSON answers written in slices (master/api/json-stream.ts), through a real HTTP server on
 * 127.0.0.1:0: the production yields to the event loop between slices, requests with the same
 * share key get one production and the same bytes, other keys (or none) their own, JSONP wraps
 * the pieces, HEAD produces nothing, and a production that throws ends its responses.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, request, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';
import { arrayPieces, sharedAnswers, SLICE_MS, writeJsonPieces } from '../../master/api/json-stream.js';

/** Pieces of `{"items":[...]}` that each cost about `costMs` of CPU, so a production spans many slices. */
function* slowPieces(count: number, costMs: number, seen: { produced: number; threw?: number }): Generator<string> {
  yield '{"items":';
  yield* arrayPieces(Array.from({ length: count }, (_, i) => i), (i) => {
    const end = performance.now() + costMs;
    while (performance.now() < end);
    seen.produced++;
    if (seen.threw === i) throw new Error(`piece ${i} broke`);
    return JSON.stringify({ i, text: 'x'.repeat(40) });
  });
  yield '}';
}

/** A server that holds requests until `n` are in, then answers them all from `answer`, in one turn. */
async function holdingServer(t: { after: (fn: () => unknown) => void }, n: number, answer: (res: ServerResponse, i: number) => Promise<void>): Promise<{ base: string; done: Promise<unknown[]> }> {
  const held: ServerResponse[] = [];
  let release: (v: Promise<unknown[]>) => void = () => {};
  const done = new Promise<unknown[]>((resolve) => (release = (v) => void v.then(resolve, resolve)));
  const server = createServer((_req, res) => {
    held.push(res);
    if (held.length === n) release(Promise.allSettled(held.map((r, i) => answer(r, i))));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.after(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return { base: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, done };
}

test('one production for requests with the same key: the same bytes, pieces made once; the production yields between slices', async (t) => {
  const seen = { produced: 0 };
  let calls = 0;
  const before = sharedAnswers();
  let midway: boolean | undefined;
  const { base, done } = await holdingServer(t, 10, (res, i) => {
    const p = writeJsonPieces(
      res,
      200,
      () => {
        calls++;
        return slowPieces(2_000, 0.05, seen);
      },
      undefined,
      'the-key',
    );
    // Right after the first request started the production: the event loop gets a turn before its end.
    if (i === 0) setImmediate(() => (midway = seen.produced < 2_000));
    return p;
  });
  const bodies = await Promise.all(Array.from({ length: 10 }, () => fetch(base, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }).then((r) => r.text())));
  await done;
  assert.equal(calls, 1, 'the pieces are made once');
  assert.equal(sharedAnswers() - before, 9, 'nine requests joined the first');
  assert.equal(new Set(bodies).size, 1, 'every request got the same bytes');
  assert.equal((JSON.parse(bodies[0] as string) as { items: unknown[] }).items.length, 2_000);
  assert.equal(midway, true, `the production left the event loop a turn before its end (slices of ${SLICE_MS} ms)`);
});

test('other keys, or none, get productions of their own; JSONP wraps the pieces; HEAD makes none', async (t) => {
  let calls = 0;
  const keys = ['a', 'b', undefined, undefined];
  const { base, done } = await holdingServer(t, 4, (res, i) =>
    writeJsonPieces(
      res,
      200,
      () => {
        calls++;
        return slowPieces(200, 0.05, { produced: 0 });
      },
      i === 0 ? 'cb.x' : undefined,
      keys[i],
    ),
  );
  const answers = await Promise.all(Array.from({ length: 4 }, () => fetch(base, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }).then(async (r) => ({ type: r.headers.get('content-type'), text: await r.text() }))));
  await done;
  assert.equal(calls, 4);
  const wrapped = answers.find((a) => a.type === 'text/javascript');
  assert.ok(wrapped !== undefined && wrapped.text.startsWith('cb.x(') && wrapped.text.endsWith(');'));
  assert.equal((JSON.parse(wrapped.text.slice(5, -2)) as { items: unknown[] }).items.length, 200);
  assert.equal(answers.filter((a) => a.type === 'application/json').length, 3);

  let headCalls = 0;
  const head = await holdingServer(t, 1, (res) =>
    writeJsonPieces(
      res,
      200,
      () => {
        headCalls++;
        return ['{}'];
      },
      undefined,
      undefined,
    ),
  );
  const r = await fetch(head.base, { method: 'HEAD', signal: AbortSignal.timeout(EVENT_DEADLINE_MS) });
  await head.done;
  assert.deepEqual([r.status, r.headers.get('content-type'), headCalls], [200, 'application/json', 0]);
});

test('pieces given as bytes (UTF-8) are sent as they are, between the text around them, JSONP-wrapped too (line separators escaped)', async (t) => {
  const pieces = (): Array<string | Buffer> => ['{"a":', Buffer.from('"h\u00e9\u00e9"', 'utf8'), ',"b":[', Buffer.from('1,2,"x\u2028y"', 'utf8'), ',"\u20ac\u2029"', ']}'];
  const { base, done } = await holdingServer(t, 2, (res, i) => writeJsonPieces(res, 200, pieces, i === 0 ? 'cb' : undefined, undefined));
  const texts = await Promise.all(Array.from({ length: 2 }, () => fetch(base, { signal: AbortSignal.timeout(EVENT_DEADLINE_MS) }).then((r) => r.text())));
  await done;
  const want = { a: 'h\u00e9\u00e9', b: [1, 2, 'x\u2028y', '\u20ac\u2029'] };
  for (const text of texts) assert.deepEqual(JSON.parse(text.startsWith('cb(') ? text.slice(3, -2) : text), want, text);
  // In a script, U+2028 and U+2029 are written escaped (as the agent's jsonpBody writes them); plain JSON keeps them.
  const script = texts.find((x) => x.startsWith('cb(')) ?? '';
  assert.deepEqual([/[\u2028\u2029]/.test(script), script.includes('\\u2028') && script.includes('\\u2029')], [false, true], script);
  assert.ok(/\u2028/.test(texts.find((x) => !x.startsWith('cb(')) ?? ''));
});

test('a production that throws ends every response sharing it (headers were sent), and the writer rejects', async (t) => {
  const results: Array<'ok' | string> = [];
  const { base, done } = await holdingServer(t, 2, (res) =>
    writeJsonPieces(res, 200, () => slowPieces(1_000, 0.05, { produced: 0, threw: 600 }), undefined, 'broken').then(
      () => void results.push('ok'),
      (e: unknown) => void results.push((e as Error).message),
    ),
  );
  const outcomes = await Promise.all(
    Array.from(
      { length: 2 },
      () =>
        new Promise<string>((resolve) => {
          const req = request(base, (res) => {
            res.on('data', () => {});
            res.on('end', () => resolve('complete'));
            res.on('error', () => resolve('cut'));
            res.on('aborted', () => resolve('cut'));
          });
          req.on('error', () => resolve('cut'));
          req.setTimeout(EVENT_DEADLINE_MS, () => req.destroy());
          req.end();
        }),
    ),
  );
  await done;
  assert.deepEqual(outcomes, ['cut', 'cut']);
  assert.deepEqual(results, ['piece 600 broke', 'piece 600 broke']);
});

/**
 * A stream class of the master (operator SUBSCRIBE, Drydock's events) behind a bare HTTP server,
 * for unit tests: each request subscribes as the principal its `x-principal` header names, and
 * `open` reads a stream's RecordIO records as they come.
 */
import { createServer, request, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import assert from 'node:assert/strict';
import { RecordReader } from '../../shared/recordio.js';
import { EVENT_DEADLINE_MS } from '../../scripts/harness/deadline.js';

/** An open stream: its answer, and its records so far (growing as they come; none unless 200). */
export interface OpenStream<T> {
  res: IncomingMessage;
  records: T[];
}

/**
 * Serves `subscribe` on a loopback port until the test ends (then `close` and the server go);
 * returns how to open a stream with `method`, as a principal or anonymously, its records read by `read`.
 */
export async function serveStreams<T>(
  t: { after(fn: () => unknown): void },
  subscribe: (res: ServerResponse, principal: string | undefined) => void,
  close: () => void,
  method: 'GET' | 'POST',
  read: (record: string) => T,
): Promise<(principal?: string) => Promise<OpenStream<T>>> {
  const server = createServer((req, res) => {
    req.resume();
    const p = req.headers['x-principal'];
    subscribe(res, typeof p === 'string' ? p : undefined);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(async () => {
    close();
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });
  const port = (server.address() as AddressInfo).port;
  return (principal) =>
    new Promise((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port, method, headers: principal === undefined ? {} : { 'x-principal': principal } }, (res) => {
        const reader = new RecordReader();
        const records: T[] = [];
        res.on('data', (c: Buffer) => {
          if (res.statusCode === 200) records.push(...reader.push(c).map(read));
        });
        res.on('error', () => {});
        resolve({ res, records });
      });
      req.on('error', reject);
      req.end();
    });
}

/** Waits until `check` holds, polling every 10 ms, bounded by the tests' one guard. */
export async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < EVENT_DEADLINE_MS / 10 && !check(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(check(), what);
}

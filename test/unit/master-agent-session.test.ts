/**
 * The master's agent session (master/agent-sessions.ts Session): messages of one turn leave in
 * one write at the end of the turn; an urgent one (DRAIN, a scheduler's KILL) leaves at once,
 * with what the turn corked before it. A fake ws over a real Writable, no sockets.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable, type Duplex } from 'node:stream';
import { setImmediate as turn } from 'node:timers/promises';
import type { WebSocket } from 'ws';
import { Session } from '../../master/api/agent-sessions.js';

/** A socket that records each write it makes (a writev of corked frames is one). */
class RecordingSocket extends Writable {
  readonly writes: string[][] = [];
  override _writev(chunks: Array<{ chunk: Buffer }>, cb: () => void): void {
    this.writes.push(chunks.map((c) => c.chunk.toString()));
    cb();
  }
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.writes.push([chunk.toString()]);
    cb();
  }
}

function session(): { s: Session; socket: RecordingSocket } {
  const socket = new RecordingSocket();
  // What Session uses of ws: readyState, and send() writing the frame to the socket.
  const ws = { readyState: 1, send: (data: string) => socket.write(data) } as unknown as WebSocket;
  return { s: new Session(1, ws, socket as unknown as Duplex, undefined, { value: '7', field: ',"epoch":"7"}' }), socket };
}

test('Session: the messages of one turn leave together at its end', async () => {
  const { s, socket } = session();
  s.send({ type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 'a', uuid: 'u1' });
  s.send({ type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 'b', uuid: 'u2' });
  assert.equal(socket.writes.length, 0);
  await turn();
  assert.equal(socket.writes.length, 1);
  assert.equal(socket.writes[0]?.length, 2);
  assert.match(socket.writes[0]?.[1] ?? '', /"task_id":"b".*"epoch":"7"\}$/);
});

test('Session: an urgent message leaves at once, after what this turn sent before it, and the turn goes on', async () => {
  const { s, socket } = session();
  s.send({ type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 'a', uuid: 'u1' });
  s.send({ type: 'DRAIN', config: { mark_gone: false } }, true);
  // Written now, in order, in one write: nothing waits for the end of the turn.
  assert.equal(socket.writes.length, 1);
  assert.deepEqual(socket.writes[0]?.map((w) => (JSON.parse(w) as { type: string }).type), ['ACKNOWLEDGE', 'DRAIN']);
  // Later messages of the same turn are batched again.
  s.send({ type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 'c', uuid: 'u3' });
  s.send({ type: 'ACKNOWLEDGE', framework_id: 'f', task_id: 'd', uuid: 'u4' });
  assert.equal(socket.writes.length, 1);
  await turn();
  assert.equal(socket.writes.length, 2);
  assert.equal(socket.writes[1]?.length, 2);
  // A socket left uncorked: a write in a later turn goes at once (no cork left over).
  await turn();
  socket.write('x');
  assert.equal(socket.writes.length, 3);
});

/**
 * The storm benchmark's floor: a bare WebSocket server (node:http + ws, as the master is
 * built) that answers each client's first message with one fixed REGISTERED frame and
 * does nothing else. Sim agents cannot tell it from a master, so "N clients connected and
 * got one answer" through it is the least a registration storm can cost on this machine.
 *
 *   node dist/scripts/bench/echo-server.js     prints {"msg":"listening","port":N}
 */

import { createServer } from 'node:http';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { AGENT_SESSION_PATH, encode } from '../../shared/protocol.js';

/** Starts the floor server on 127.0.0.1:0; resolves with its port. */
export async function startEchoServer(): Promise<{ port: number; close(): void }> {
  const server = createServer((_req, res) => res.writeHead(404).end());
  const wss = new WebSocketServer({ server, path: AGENT_SESSION_PATH });
  // One frame for everyone: the floor must not pay for anything a master would not.
  const answer = encode({ type: 'REGISTERED', request_id: 1, agent_id: 'echo', master_id: 'echo', ping_interval_ms: 15_000, max_ping_timeouts: 5 });
  wss.on('connection', (ws) => {
    ws.once('message', () => ws.send(answer));
    ws.on('error', () => {});
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const addr = server.address();
  if (addr === null || typeof addr === 'string') throw new Error('echo server has no TCP address');
  return {
    port: addr.port,
    close: () => {
      for (const c of wss.clients) c.terminate();
      server.close();
    },
  };
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const s = await startEchoServer();
  process.stdout.write(JSON.stringify({ msg: 'listening', port: s.port }) + '\n');
  process.on('SIGTERM', () => { s.close(); process.exit(0); });
}

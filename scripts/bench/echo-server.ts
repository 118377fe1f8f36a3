/**
 * The storm benchmark's floor: a bare WebSocket server (node:http + ws, as the master is
 * built) that answers each client's first message with one fixed REGISTERED frame and
 * does nothing else. Sim agents cannot tell it from a master, so "N clients connected and
 * got one answer" through it is the least a registration storm can cost on this machine.
 *
 *   node dist/scripts/bench/echo-server.js [CERT.pem KEY.pem]    prints {"msg":"listening","port":N}
 *
 * With a certificate and key it serves wss:// through the daemons' own TLS port
 * (io/tls-server.ts): the security benchmark's floor for what TLS alone costs a storm.
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import { AGENT_SESSION_PATH, encode } from '../../shared/protocol.js';
import { createHttpListener, loadServerTls, type ServerTls } from '../../io/tls-server.js';

/** Starts the floor server on 127.0.0.1:0 (with `tls`, on a TLS port as the master's); resolves with its port. */
export async function startEchoServer(tls?: ServerTls): Promise<{ port: number; close(): void }> {
  const notFound = (_req: IncomingMessage, res: ServerResponse): void => void res.writeHead(404).end();
  let server: NetServer;
  let wss: WebSocketServer;
  if (tls === undefined) {
    const plain = createServer(notFound);
    wss = new WebSocketServer({ server: plain, path: AGENT_SESSION_PATH });
    server = plain;
  } else {
    // The TLS port is the daemons' own listener; ws takes its upgrades as the master's router hands them over.
    const ws = new WebSocketServer({ noServer: true });
    const upgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
      if (new URL(req.url ?? '/', 'https://x').pathname !== AGENT_SESSION_PATH) return void socket.destroy();
      ws.handleUpgrade(req, socket, head, (client) => ws.emit('connection', client, req));
    };
    wss = ws;
    server = createHttpListener({ request: notFound, upgrade }, { tls });
  }
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
  const [certFile, keyFile] = process.argv.slice(2);
  let tls: ServerTls | undefined;
  if (certFile !== undefined) {
    const loaded = loadServerTls({ certFile, keyFile: keyFile ?? '' });
    if (!loaded.ok) {
      process.stderr.write(`echo-server: ${loaded.error}\n`);
      process.exit(2);
    }
    tls = loaded.tls;
  }
  const s = await startEchoServer(tls);
  process.stdout.write(JSON.stringify({ msg: 'listening', port: s.port }) + '\n');
  process.on('SIGTERM', () => { s.close(); process.exit(0); });
}

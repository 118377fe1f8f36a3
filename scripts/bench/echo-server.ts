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
 *
 * With `--etcd=HOST:PORT` it answers each first message only once that message is written to
 * etcd: the etcd-registry benchmark's floor for what a durable admission through etcd costs at
 * least with this client (echoEtcdWriter).
 */

import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Duplex } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { WebSocketServer } from 'ws';
import type { Etcd3 } from 'etcd3';
import { MAX_OPS } from '../../master/registry/etcd.js';
import { GROUP_COMMIT_WINDOW_MS } from '../../master/registry/registry.js';
import { AGENT_SESSION_PATH, encode } from '../../shared/protocol.js';
import { createHttpListener, loadServerTls, type ServerTls } from '../../io/tls-server.js';

/** Writes `value` under a new key; resolves once etcd has committed it. */
export type DurableWrite = (value: Buffer) => Promise<void>;

/**
 * The least an admission through etcd can cost with this client: each first message put under
 * its own key, grouped as the registry groups its writes (the puts of one event-loop turn and
 * those queued while a transaction is under way or the group-commit window runs, at most
 * MAX_OPS a transaction, one transaction at a time), each transaction guarded by a
 * compare on a fence key as the registry guards its writes with the election key.
 * What it leaves out is what a master adds: the agent's record, the delete of a stale
 * unreachable mark, and everything around the write.
 */
export async function echoEtcdWriter(client: Etcd3, prefix: string): Promise<DurableWrite> {
  const fenceKey = `${prefix}/fence`;
  const put = await client.put(fenceKey).value('floor').exec();
  const fenceRevision = Number(put.header.revision);
  let seq = 0;
  let queue: Array<{ key: string; value: Buffer; done: (e?: unknown) => void }> = [];
  let busy = false;
  let lastStart = Number.NEGATIVE_INFINITY;
  const drain = async (): Promise<void> => {
    busy = true;
    // The turn's writes gather first, as the registry's do.
    await new Promise((r) => setImmediate(r));
    while (queue.length > 0) {
      const wait = lastStart + GROUP_COMMIT_WINDOW_MS - performance.now();
      if (wait > 0) await new Promise((r) => setTimeout(r, wait));
      lastStart = performance.now();
      const batch = queue.slice(0, MAX_OPS);
      queue = queue.slice(batch.length);
      try {
        const r = await client.if(fenceKey, 'Create', '==', fenceRevision).then(...batch.map((w) => client.put(w.key).value(w.value))).commit();
        const e = r.succeeded ? undefined : new Error('floor fence key replaced');
        for (const w of batch) w.done(e);
      } catch (e) {
        for (const w of batch) w.done(e);
      }
    }
    busy = false;
  };
  return (value) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ key: `${prefix}/agents/${++seq}`, value, done: (e) => (e === undefined ? resolve() : reject(e)) });
      if (!busy) void drain();
    });
}

/**
 * Starts the floor server on 127.0.0.1:0 (with `tls`, on a TLS port as the master's; with
 * `durable`, answering each first message once it is written); resolves with its port.
 */
export async function startEchoServer(tls?: ServerTls, durable?: DurableWrite): Promise<{ port: number; close(): void }> {
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
    if (durable === undefined) ws.once('message', () => ws.send(answer));
    else {
      ws.once('message', (data: Buffer) =>
        durable(data).then(
          () => ws.send(answer),
          (e: unknown) => ws.close(1011, String(e).slice(0, 100)),
        ),
      );
    }
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
  const args = process.argv.slice(2);
  const etcdFlag = args.find((a) => a.startsWith('--etcd='));
  const [certFile, keyFile] = args.filter((a) => !a.startsWith('--'));
  let tls: ServerTls | undefined;
  if (certFile !== undefined) {
    const loaded = loadServerTls({ certFile, keyFile: keyFile ?? '' });
    if (!loaded.ok) {
      process.stderr.write(`echo-server: ${loaded.error}\n`);
      process.exit(2);
    }
    tls = loaded.tls;
  }
  let durable: DurableWrite | undefined;
  if (etcdFlag !== undefined) {
    const { Etcd3: EtcdClient } = await import('etcd3');
    durable = await echoEtcdWriter(new EtcdClient({ hosts: `http://${etcdFlag.slice('--etcd='.length)}` }), `echo-floor-${process.pid}`);
  }
  const s = await startEchoServer(tls, durable);
  process.stdout.write(JSON.stringify({ msg: 'listening', port: s.port }) + '\n');
  process.on('SIGTERM', () => { s.close(); process.exit(0); });
}

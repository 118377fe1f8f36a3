#!/usr/bin/env node
/**
 * drydock-master: flags -> config -> registry (open, migrate) -> recover -> listen.
 * The `listening` line is logged only once the master serves; SIGTERM / SIGINT close it
 * gracefully (sessions get GOING_AWAY, the registry is flushed) and exit 0.
 */

import { systemClock } from '../shared/clock.js';
import { Logger } from '../shared/log.js';
import { AgentSessions } from './agent-sessions.js';
import { MASTER_PROGRAM, resolveMasterConfig } from './config.js';
import { createMasterServer } from './http.js';
import { Master } from './master.js';
import { createOperatorStreams } from './operator-stream.js';
import { openSqliteRegistry } from './registry/sqlite.js';

/** How long a graceful stop waits for sessions to finish their close handshake. */
const CLOSE_GRACE_MS = 1_000;

async function main(): Promise<void> {
  const resolved = resolveMasterConfig(process.argv.slice(2), process.env);
  if (resolved.kind === 'help') {
    process.stdout.write(resolved.text);
    process.exit(0);
  }
  if (resolved.kind === 'error') {
    process.stderr.write(`${MASTER_PROGRAM}: ${resolved.error}\n`);
    process.exit(1);
  }
  const config = resolved.config;
  const logger = new Logger({ level: config.logLevel, bindings: { component: 'master' } });

  let registry;
  try {
    registry = openSqliteRegistry(config.workDir);
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    logger.error('registry open failed', { workDir: config.workDir, error: message });
    process.stderr.write(`${MASTER_PROGRAM}: cannot open the registry in ${config.workDir}: ${message}\n`);
    process.exit(1);
  }

  const master = new Master({ config, registry, clock: systemClock, logger });
  await master.recover();
  const sessions = new AgentSessions(master, logger.child({ component: 'agent-sessions' }));
  const streams = createOperatorStreams(master, systemClock, logger.child({ component: 'operator-stream' }));
  const server = createMasterServer(master, sessions, streams, logger.child({ component: 'http' }));

  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      // A deep backlog: thousands of agents reconnect at once after a master restart.
      server.listen({ host: config.ip, port: config.port, backlog: 4096 }, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code ?? (e as Error).message;
    const why = code === 'EADDRINUSE' ? 'the address is already in use (another master?)' : code === 'EADDRNOTAVAIL' ? 'no interface has that address' : code;
    logger.error('listen failed', { ip: config.ip, port: config.port, error: code });
    process.stderr.write(`${MASTER_PROGRAM}: cannot listen on ${config.ip}:${config.port}: ${why}\n`);
    await master.stop().catch(() => {});
    process.exit(1);
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  master.start(port);
  logger.info('listening', { ip: config.ip, port, masterId: master.id, hostname: config.hostname, workDir: config.workDir });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    sessions.close();
    streams.close();
    server.close();
    void master
      .stop()
      .catch((e: unknown) => logger.error('registry close failed', { error: e }))
      .then(async () => {
        const deadline = Date.now() + CLOSE_GRACE_MS;
        while (master.openSessions > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
        server.closeAllConnections();
        logger.info('stopped');
        process.exit(0);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

process.on('unhandledRejection', (reason) => {
  // Never expected; log it as one JSON line and keep serving rather than die mid-registration.
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'unhandled rejection', component: 'master', error: String(reason) }) + '\n');
});

main().catch((e: unknown) => {
  process.stderr.write(`${MASTER_PROGRAM}: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});

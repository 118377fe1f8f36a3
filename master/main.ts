#!/usr/bin/env node
/**
 * drydock-master, the process: flags -> config -> registry (open, migrate) -> listen ->
 * leadership -> a term. The process keeps only HTTP listening, config and leadership; when it
 * leads, a term (term.ts) is built from the registry, and while none runs every API answers
 * 503 (the router). The `listening` line is logged once the first term serves. SIGTERM /
 * SIGINT resign, drop the term (sessions get GOING_AWAY), flush the registry and exit 0.
 */

import { randomUUID } from 'node:crypto';
import { systemClock } from '../shared/clock.js';
import { fail } from '../shared/errors.js';
import { Logger } from '../shared/log.js';
import { MASTER_PROGRAM, resolveMasterConfig } from './config.js';
import { createMasterServer } from './http.js';
import { SoloLeadership } from './leadership.js';
import { advertisedIp, type MasterIdentity } from './master-info.js';
import { openSqliteRegistry } from './registry/sqlite.js';
import { Term } from './term.js';

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

  const processStartMs = systemClock.now();
  let term: Term | undefined;
  let everLed = false;
  const server = createMasterServer(
    {
      current: () => term,
      unavailable: () => (everLed ? fail('NO_LEADER') : fail('NOT_RECOVERED')),
    },
    logger.child({ component: 'http' }),
  );

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
    await registry.close().catch(() => {});
    process.exit(1);
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const identity: MasterIdentity = { id: randomUUID(), hostname: config.hostname, ip: advertisedIp(config.ip), port };

  // Solo leadership: this master leads from now on. (With etcd it campaigns, and may lose.)
  const leadership = new SoloLeadership();
  const { epoch } = await leadership.campaign();
  const started = await Term.start({
    config,
    registry,
    identity,
    epoch,
    processStartMs,
    clock: systemClock,
    logger,
    onEnded: (reason) => {
      term = undefined;
      logger.error('no longer leading', { reason });
    },
  });
  term = started;
  everLed = true;
  leadership.onLost((reason) => {
    term?.dispose(reason);
    term = undefined;
  });
  logger.info('listening', { ip: config.ip, port, masterId: identity.id, hostname: config.hostname, workDir: config.workDir });

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    const last = term;
    term = undefined;
    last?.dispose();
    server.close();
    void leadership
      .resign()
      .then(() => registry.close())
      .catch((e: unknown) => logger.error('registry close failed', { error: e }))
      .then(async () => {
        const deadline = Date.now() + CLOSE_GRACE_MS;
        while ((last?.openSessions ?? 0) > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
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
  const error = reason instanceof Error ? { name: reason.name, message: reason.message, stack: reason.stack } : String(reason);
  process.stdout.write(JSON.stringify({ time: new Date().toISOString(), level: 'error', msg: 'unhandled rejection', component: 'master', error }) + '\n');
});

main().catch((e: unknown) => {
  process.stderr.write(`${MASTER_PROGRAM}: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});

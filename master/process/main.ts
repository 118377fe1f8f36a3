/**
 * drydock-master, the process: flags -> config -> registry (open, migrate) -> listen ->
 * leadership -> a term. The process keeps only HTTP listening, config and leadership; when it
 * leads, a term (term/term.ts) is built from the registry, and while none runs every API answers
 * 503 (the router). The `listening` line is logged once the first term serves. SIGTERM /
 * SIGINT resign, drop the term (sessions get GOING_AWAY), flush the registry and exit 0.
 */

import { randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { dirname, resolve as resolvePath } from 'node:path';
import type { Etcd3 } from 'etcd3';
import { systemClock } from '../../shared/clock.js';
import { fail } from '../../shared/errors.js';
import { Logger } from '../../shared/log.js';
import { MASTER_PROGRAM, resolveMasterConfig } from './config.js';
import { createMasterServer } from './router.js';
import { loadSecurity } from '../security/security.js';
import { loadMaintenanceHooks } from '../plans/hooks.js';
import { readSecretFile } from '../../io/secrets.js';
import { loadServerTls, type ServerTls } from '../../io/tls-server.js';
import { EtcdLeadership, SoloLeadership, type Leadership, type Win } from './leadership.js';
import { ElectionFollower, LeaderView } from './leader-view.js';
import { addressOf, advertisedIp, masterInfoJson, type MasterIdentity } from './master-info.js';
import { EtcdRegistry } from '../registry/etcd.js';
import { importRegistry, isEmptyRegistry } from '../registry/import.js';
import type { Registry } from '../registry/registry.js';
import { openSqliteRegistry } from '../registry/sqlite.js';
import { Term } from '../term/term.js';
import { MasterMetrics } from './metrics.js';

/** How long a graceful stop waits for sessions to finish their close handshake. */
const CLOSE_GRACE_MS = 1_000;

/** Waits `ms` on the process's clock. */
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => systemClock.setTimer(ms, resolve));
}

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
  const logger = new Logger({ level: config.logLevel, format: config.logFormat, daemon: 'master' });
  // Credentials and ACLs are read once, before anything listens: a bad file stops the start.
  const secured = loadSecurity(config.security, logger);
  if (!secured.ok) {
    logger.error('security configuration refused', { error: secured.error });
    process.stderr.write(`${MASTER_PROGRAM}: ${secured.error}\n`);
    process.exit(1);
  }
  const security = secured.security;
  // The hooks file and the hook user, once: a file others may write, or a root master without
  // --hook_user, stops the start (either would hand out commands on this machine).
  const hooked = loadMaintenanceHooks(config.maintenanceHooksFile, config.hookUser);
  if (!hooked.ok) {
    logger.error('maintenance hooks refused', { error: hooked.error });
    process.stderr.write(`${MASTER_PROGRAM}: ${hooked.error}\n`);
    process.exit(1);
  }
  const hooks = hooked.hooks;
  if (hooks.file !== undefined) logger.info('maintenance hooks loaded', { file: hooks.file, hooks: [...hooks.catalog.keys()], user: hooks.user.name });
  else if (config.hookUser !== undefined) logger.warn('--hook_user is set without --maintenance_hooks: no hook can run', { hookUser: config.hookUser });
  // TLS files too: a key readable by others, or one that does not match its certificate, stops the start.
  let tls: ServerTls | undefined;
  if (config.tls !== undefined) {
    const loaded = loadServerTls(config.tls);
    if (!loaded.ok) {
      logger.error('TLS configuration refused', { error: loaded.error });
      process.stderr.write(`${MASTER_PROGRAM}: ${loaded.error}\n`);
      process.exit(1);
    }
    tls = loaded.tls;
  }

  // One master: its SQLite file, leading from the start. HA: etcd for both (a registry per
  // term, guarded by that term's election key). One etcd client, with its TLS and user, serves
  // leadership, the registry and the standby's election watch.
  let sqlite: Registry | undefined;
  let etcd: Etcd3 | undefined;
  let stopEtcdCalls: (() => void) | undefined;
  if (config.etcd !== undefined) {
    // The etcd client (gRPC, protobufs: some 150 ms and 25 MB to load) only for a master that uses it.
    const [{ Etcd3: EtcdClient }, { etcdClientOptions, probeEtcd }, { etcdCallLimits, resilientEtcdOptions }] = await Promise.all([
      import('etcd3'),
      import('./etcd-client.js'),
      import('./etcd-calls.js'),
    ]);
    const options = etcdClientOptions(config.etcd.endpoints, config.etcdAuth, readSecretFile);
    if (!options.ok) {
      logger.error('etcd configuration refused', { error: options.error });
      process.stderr.write(`${MASTER_PROGRAM}: ${options.error}\n`);
      process.exit(1);
    }
    // Deadlines, require-leader and another member for the next attempt (etcd-calls.ts), all from --etcd_ttl.
    const resilient = resilientEtcdOptions(options.options, etcdCallLimits(config.etcdTtlMs), systemClock, logger.child({ component: 'etcd' }), `${config.etcd.prefix}/election/`);
    stopEtcdCalls = resilient.stop;
    etcd = new EtcdClient(resilient.options);
    // A wrong user or password would otherwise leave the master waiting on etcd, silently.
    const probe = await probeEtcd(etcd, config.etcd.prefix, config.etcdAuth, 10_000);
    if (probe.kind === 'refused') {
      logger.error('etcd refused the master', { error: probe.error });
      process.stderr.write(`${MASTER_PROGRAM}: ${probe.error}\n`);
      etcd.close();
      process.exit(1);
    }
    if (probe.kind === 'unreachable') logger.warn('etcd not reachable yet', { endpoints: config.etcd.endpoints, error: probe.error });
  }
  if (etcd === undefined) {
    try {
      sqlite = openSqliteRegistry(config.workDir);
    } catch (e) {
      const message = e instanceof Error ? e.message : String(e);
      logger.error('registry open failed', { workDir: config.workDir, error: message });
      process.stderr.write(`${MASTER_PROGRAM}: cannot open the registry in ${config.workDir}: ${message}\n`);
      process.exit(1);
    }
  }

  const processStartMs = systemClock.now();
  let term: Term | undefined;
  let everLed = false;
  /** Who leads when another master does (HA), for 307s: only while this master's last read of the election is within the TTL. */
  const leaderView = new LeaderView(config.etcdTtlMs, systemClock);
  let follower: ElectionFollower | undefined;
  /** This master's own `host:port` as its MasterInfo advertises it, once it listens (`/redirect` while it leads). */
  let selfAddress: string | undefined;
  // The process's figures, across its terms: a standby answers /metrics too (leader 0).
  const metrics = new MasterMetrics({ current: () => term, processStartMs, clock: systemClock, registryBytes: () => sqlite?.sizeBytes?.() });
  const server = createMasterServer(
    {
      current: () => term,
      leader: () => leaderView.leader(),
      self: () => selfAddress,
      unavailable: () => (everLed || etcd !== undefined ? fail('NO_LEADER') : fail('NOT_RECOVERED')),
      metrics,
      flags: () => config.flags,
    },
    logger.child({ component: 'http' }),
    security,
    tls,
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
    await sqlite?.close().catch(() => {});
    etcd?.close();
    process.exit(1);
  }
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : config.port;
  const identity: MasterIdentity = { id: randomUUID(), hostname: config.hostname, ip: advertisedIp(config.ip), port };
  selfAddress = addressOf(identity);
  const listening = { ip: config.ip, port, masterId: identity.id, hostname: config.hostname, workDir: config.workDir, tls: tls !== undefined };

  const leadership: Leadership =
    etcd === undefined || config.etcd === undefined
      ? new SoloLeadership()
      : new EtcdLeadership({ client: etcd, prefix: config.etcd.prefix, info: masterInfoJson(identity), ttlSeconds: config.etcdTtlMs / 1000, clock: systemClock, log: logger.child({ component: 'leadership' }) });
  let stopping = false;
  let lost: (reason: string) => void = () => {};
  leadership.onLost((reason) => lost(reason));

  // A standby serves 307s to the leader: it follows the election (re-read on every change, and
  // every third of a TTL so that the router knows how fresh its answer is).
  if (etcd !== undefined && config.etcd !== undefined) {
    follower = new ElectionFollower({ client: etcd, prefix: config.etcd.prefix, selfId: identity.id, view: leaderView, refreshMs: config.etcdTtlMs / 3, clock: systemClock, log: logger.child({ component: 'election' }) });
    await follower.start();
    // Listening already: a standby answers (307 or 503) while it campaigns.
    logger.info('listening', listening);
  }

  let imported = false;
  /** One term after another: campaign, serve until lost, drop everything, campaign again. */
  const lead = async (): Promise<void> => {
    while (!stopping) {
      let win: Win;
      try {
        win = await leadership.campaign();
      } catch (e) {
        logger.warn('campaign failed', { error: e });
        await sleep(1000);
        continue;
      }
      if (stopping) return;
      const registry = sqlite ?? new EtcdRegistry(etcd as Etcd3, (config.etcd as { prefix: string }).prefix, { key: win.key as string, epoch: win.epoch });
      if (config.registryImport !== undefined && sqlite === undefined && !imported) {
        imported = true;
        await importOnce(config.registryImport, registry, logger);
      }
      const ended = new Promise<string>((resolve) => (lost = resolve));
      let started: Term;
      try {
        started = await Term.start({ config, security, hooks, registry, master: { id: identity.id, info: masterInfoJson(identity) }, epoch: win.epoch, processStartMs, clock: systemClock, logger, otherMasters: () => follower?.others ?? [], onEnded: (reason) => lost(reason), instruments: metrics.instruments });
      } catch (e) {
        logger.error('term failed to start', { error: e });
        await leadership.resign();
        await sleep(1000);
        continue;
      }
      term = started;
      metrics.termStarted(started);
      leaderView.clear();
      if (!everLed && etcd === undefined) logger.info('listening', listening);
      everLed = true;
      const reason = await ended;
      term = undefined;
      started.dispose(reason);
      if (sqlite === undefined) await registry.close().catch(() => undefined);
      if (stopping) return;
      logger.warn('no longer leading', { reason, epoch: win.epoch });
      // Solo cannot win again (its file may no longer be written): it stays up, answering 503.
      if (etcd === undefined) return;
      await leadership.resign();
    }
  };
  void lead();

  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    logger.info('shutting down', { signal });
    const last = term;
    term = undefined;
    last?.dispose();
    lost('master shutting down');
    server.close();
    // A leader resigns first: a standby takes over at once instead of after the TTL.
    void leadership
      .resign()
      .then(() => sqlite?.close())
      .catch((e: unknown) => logger.error('registry close failed', { error: e }))
      .then(async () => {
        const deadline = systemClock.now() + CLOSE_GRACE_MS;
        while ((last?.openSessions ?? 0) > 0 && systemClock.now() < deadline) await sleep(20);
        server.closeAllConnections();
        follower?.stop();
        stopEtcdCalls?.();
        etcd?.close();
        logger.info('stopped');
        process.exit(0);
      });
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

/**
 * --registry_import: the first time this master leads, moves a single master's SQLite registry
 * into etcd, unless etcd already holds one for the prefix (never overwrite a live cluster).
 */
async function importOnce(file: string, to: Registry, logger: Logger): Promise<void> {
  try {
    if (!existsSync(file)) {
      logger.error('registry import failed: no such file', { file });
      return;
    }
    if (!isEmptyRegistry(await to.recover())) {
      logger.warn('registry import skipped: etcd already holds a registry for this prefix', { file });
      return;
    }
    const from = openSqliteRegistry(dirname(resolvePath(file)));
    const summary = await importRegistry(await from.recover(), to);
    await from.close();
    logger.info('registry imported', { file, ...summary });
  } catch (e) {
    logger.error('registry import failed', { file, error: e });
  }
}

process.on('unhandledRejection', (reason) => {
  // Never expected; log it as one JSON line and keep serving rather than die mid-registration.
  const error = reason instanceof Error ? { name: reason.name, message: reason.message, stack: reason.stack } : String(reason);
  process.stdout.write(JSON.stringify({ time: new Date(systemClock.now()).toISOString(), level: 'error', msg: 'unhandled rejection', component: 'master', error }) + '\n');
});

main().catch((e: unknown) => {
  process.stderr.write(`${MASTER_PROGRAM}: ${e instanceof Error ? e.stack ?? e.message : String(e)}\n`);
  process.exit(1);
});

#!/usr/bin/env node
/**
 * drydock-scheduler: an SDK-style service scheduler. Flags -> the spec file -> the target
 * configuration (stored in the work dir) -> the service and its plans -> the HTTP API -> a
 * framework subscribed to the master, re-subscribing with its framework id whenever the stream
 * ends.
 *
 * Signals: SIGHUP re-reads the spec file (a config change: a new target and a new deploy plan);
 * SIGTERM/SIGINT close the stream and exit 0, leaving the tasks running (the framework fails
 * over: a restarted scheduler takes them back). Exit codes: 0 normal, 1 bad flags, an unusable
 * credential, credentials or TLS file, an unusable spec with no stored target, or a framework the
 * master has removed.
 */
import { readFileSync } from 'node:fs';
import { hostname, userInfo } from 'node:os';
import { systemClock } from '../shared/clock.js';
import { CREDENTIALS_ENV, loadClientAccess, type Given } from '../io/client-auth.js';
import { loadServerTls, type ServerTls } from '../io/tls-server.js';
import { Logger, type LogFormat, type LogLevel } from '../shared/log.js';
import type { TaskStatus } from '../shared/mesos.js';
import { apiServer } from './api.js';
import { loadApiAuth } from './api-auth.js';
import { SchedulerClient, SubscribeError, type SchedulerEvent } from './client.js';
import { chooseTarget } from './configs.js';
import { PROGRAM, resolveSchedulerConfig } from './config.js';
import { Service, type MesosPort } from './service.js';
import { factsOf, SchedulerMetrics } from './metrics.js';
import { StateStore } from './state.js';
import { advertisedApiUrl } from './plan-stream.js';

/** A flag's value with where it came from, for the credential's messages. */
function givenFlag(value: string | undefined, name: string, source: 'default' | 'env' | 'flag'): Given | undefined {
  if (value === undefined) return undefined;
  return source === 'flag' ? { value, origin: `--${name}`, fromFlag: true } : { value, origin: `DRYDOCK_${name.toUpperCase()}`, fromFlag: false };
}

function readSpec(path: string): string | Error {
  try {
    return readFileSync(path, 'utf8');
  } catch (e) {
    return new Error(`cannot read the spec file ${path}: ${(e as Error).message}`);
  }
}

async function main(): Promise<void> {
  const resolved = resolveSchedulerConfig(process.argv.slice(2), process.env);
  if (resolved.kind === 'help') {
    process.stdout.write(resolved.text);
    process.exit(0);
  }
  if (resolved.kind === 'error') {
    process.stderr.write(`${PROGRAM}: ${resolved.error}\n`);
    process.exit(1);
  }
  const flags = resolved.values;
  const sources = resolved.sources;
  // The credential and TLS files are read once, before anything starts: a file others can read,
  // or one that holds no credential, is a configuration error (exit 1, no restart loop).
  const access = loadClientAccess(
    {
      principal: givenFlag(flags.principal, 'principal', sources.principal),
      secretFile: givenFlag(flags.secret_file, 'secret_file', sources.secret_file),
      inline: process.env[CREDENTIALS_ENV],
    },
    // As on the agent, only --tls_ca_file turns the master connection into https (with the
    // certificate as the client one): a scheduler may serve its API over TLS and still reach a
    // plain master.
    flags.tls_ca_file === undefined ? {} : { caFile: flags.tls_ca_file, certFile: flags.tls_cert_file, keyFile: flags.tls_key_file },
  );
  if (!access.ok) {
    process.stderr.write(`${PROGRAM}: ${access.error}\n`);
    process.exit(1);
  }
  const { transport, principal } = access.value;
  const log = new Logger({ level: flags.log_level as LogLevel, format: flags.log_format as LogFormat, daemon: 'scheduler' });
  // The API's own security: --credentials, and the certificate it serves. Read before anything
  // listens, so an unsafe file mode or a key that does not match its certificate is exit 1.
  const auth = loadApiAuth(resolved.apiSecurity, log);
  if (!auth.ok) {
    process.stderr.write(`${PROGRAM}: ${auth.error}\n`);
    process.exit(1);
  }
  let apiTls: ServerTls | undefined;
  if (resolved.apiTls !== undefined) {
    const loaded = loadServerTls(resolved.apiTls);
    if (!loaded.ok) {
      process.stderr.write(`${PROGRAM}: ${loaded.error}\n`);
      process.exit(1);
    }
    apiTls = loaded.tls;
  }
  const store = StateStore.open(flags.work_dir);
  const clock = systemClock;

  const text = readSpec(flags.spec);
  const first = chooseTarget(store, text instanceof Error ? { ok: false, errors: [text.message] } : text, clock.now());
  if (first.kind === 'fatal') {
    process.stderr.write(`${PROGRAM}: ${first.errors.join('\n')}\n`);
    process.exit(1);
  }
  for (const e of first.errors) log.warn('spec refused, keeping the previous target', { error: e });
  const frameworkName = flags.framework_name ?? first.spec.name;
  // The metrics read the service on scrape only: it exists by then.
  const metrics = new SchedulerMetrics(() => factsOf(service));
  const service = new Service(
    {
      store, clock, log: log.child({ component: 'service' }), frameworkName,
      backoffInitialMs: flags.backoff_initial, backoffMaxMs: flags.backoff_max, offerHoldMs: flags.offer_hold,
      configOf: (id) => first.configOf(id),
      instruments: metrics.instruments,
    },
    first.spec,
    first.configId,
    first.errors,
  );

  const server = apiServer({ service, log: log.child({ component: 'api' }), configIds: () => store.configIds(), config: (id) => store.config(id), auth: auth.auth, tls: apiTls, metrics });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(flags.port, flags.ip, () => resolve());
  });
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : flags.port;
  log.info('listening', {
    ip: flags.ip, port, workDir: flags.work_dir, service: first.spec.name, configId: first.configId,
    // The API (server side): HTTPS or not, what it requires, how many principals may call it.
    tls: apiTls !== undefined, requireClientCert: apiTls?.requireClientCert ?? false,
    authenticateHttpReadwrite: resolved.apiSecurity.authenticateHttpReadwrite, authenticateHttpReadonly: resolved.apiSecurity.authenticateHttpReadonly,
    principals: auth.auth.authenticator?.size ?? 0,
    // Towards the master (client side).
    principal: principal ?? null, masterTls: transport.tls, authenticated: access.value.credential !== undefined,
  });

  process.on('SIGHUP', () => {
    const t = readSpec(flags.spec);
    const next = chooseTarget(store, t instanceof Error ? { ok: false, errors: [t.message] } : t, clock.now());
    if (next.kind === 'fatal') {
      log.warn('spec reload failed', { errors: next.errors });
      return;
    }
    log.info('spec reloaded', { configId: next.configId, changed: next.configId !== service.configId, errors: next.errors });
    service.retarget(next.spec, next.configId, next.errors);
  });

  let stopping = false;
  let client: SchedulerClient | undefined;
  const stop = (): void => {
    stopping = true;
    client?.close();
    service.close();
    server.close();
    store.close();
    process.stdout.write('', () => process.exit(0));
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('unhandledRejection', (e) => log.error('unhandled rejection', { error: e as Error }));

  const masters = flags.master.split(',').map((m) => m.trim()).filter((m) => m !== '');
  const frameworkInfo = {
    user: userInfo().username,
    name: frameworkName,
    failover_timeout: flags.failover_timeout / 1000,
    checkpoint: true,
    labels: { labels: [{ key: 'service', value: first.spec.name }] },
    // The master's web console finds this scheduler's plans here (GET /v1/plans/stream).
    webui_url: advertisedApiUrl(flags.ip, port, apiTls !== undefined, hostname()),
    // The master binds the framework id to this principal; Mesos checks it is the authenticated one.
    ...(principal === undefined ? {} : { principal }),
  };
  let attempt = 0;
  for (let i = 0; !stopping; i = (i + 1) % masters.length) {
    const master = masters[i] as string;
    const frameworkId = store.frameworkId();
    try {
      client = await SchedulerClient.subscribe(master, frameworkInfo, frameworkId === undefined ? { timeoutMs: 15_000, transport } : { frameworkId, timeoutMs: 15_000, transport });
    } catch (e) {
      const message = (e as Error).message;
      if (e instanceof SubscribeError && /has been removed|torn down/i.test(message)) {
        log.error('the master removed this framework; its tasks are gone. Start with a fresh --work_dir to deploy again', { frameworkId, message });
        process.stdout.write('', () => process.exit(1));
        return;
      }
      attempt++;
      const delay = Math.min(30_000, 500 * 2 ** Math.min(attempt, 6));
      // A refused credential or framework is the operator's to fix (the master's credentials or
      // ACLs, or ours): said as an error, and retried, so fixing the master is enough.
      if (e instanceof SubscribeError && e.status === 401) log.error('the master refused our credential; check --principal/--secret_file (or DRYDOCK_CREDENTIALS) against its --credentials', { master, principal: principal ?? null, authenticated: access.value.credential !== undefined, retryMs: delay });
      else if (e instanceof SubscribeError && e.status === 403) log.error('the master refused the framework', { master, principal: principal ?? null, message, retryMs: delay });
      else log.warn('subscribe failed', { master, message, retryMs: delay });
      await new Promise((r) => setTimeout(r, delay));
      continue;
    }
    attempt = 0;
    const c = client;
    if (c.frameworkId !== frameworkId) store.setFrameworkId(c.frameworkId); // written before anything is launched under it
    log.info('subscribed', { master, frameworkId: c.frameworkId });
    service.onSubscribed(mesosPort(c));
    const handle = (e: SchedulerEvent): void => {
      try {
        dispatch(service, e, log);
      } catch (err) {
        log.error('event failed', { type: e.type, error: err });
      }
    };
    for (const e of c.received.slice(1)) handle(e);
    c.onEvent = handle;
    const reason = await c.ended;
    service.onDisconnected();
    if (stopping) return;
    log.warn('stream ended; re-subscribing', { master, reason });
    await new Promise((r) => setTimeout(r, 500));
    i = (i + masters.length - 1) % masters.length; // the same master first
  }
}

/** Scheduler events into the service. */
function dispatch(service: Service, e: SchedulerEvent, log: Logger): void {
  switch (e.type) {
    case 'OFFERS': {
      const o = e['offers'] as { offers?: Array<Record<string, unknown>>; inverse_offers?: Array<Record<string, unknown>> } | undefined;
      if (o?.offers !== undefined) service.onOffers(o.offers);
      if (o?.inverse_offers !== undefined) service.onInverseOffers(o.inverse_offers);
      return;
    }
    case 'INVERSE_OFFERS':
      service.onInverseOffers((e['inverse_offers'] as { inverse_offers?: Array<Record<string, unknown>> } | undefined)?.inverse_offers ?? []);
      return;
    case 'RESCIND':
      service.onRescind(String((e['rescind'] as { offer_id?: { value?: string } } | undefined)?.offer_id?.value));
      return;
    case 'RESCIND_INVERSE_OFFER':
      service.onRescindInverse(String((e['rescind_inverse_offer'] as { inverse_offer_id?: { value?: string } } | undefined)?.inverse_offer_id?.value));
      return;
    case 'UPDATE':
      service.onUpdate((e['update'] as { status: TaskStatus }).status);
      return;
    case 'ERROR':
      log.error('master sent ERROR', { message: (e['error'] as { message?: string } | undefined)?.message });
      return;
    default:
      return; // HEARTBEAT, MESSAGE, FAILURE, UPDATE_OPERATION_STATUS: nothing to do
  }
}

/** The Mesos port over one subscribed stream. A call the master refuses rejects with its answer. */
function mesosPort(c: SchedulerClient): MesosPort {
  const call = async (type: string, body: Record<string, unknown>): Promise<void> => {
    const r = await c.call(type, body);
    if (r.status !== 202 && r.status !== 200) throw new Error(`${type} answered ${r.status}: ${r.text.trim()}`);
  };
  const ids = (xs: readonly string[]): Array<{ value: string }> => xs.map((value) => ({ value }));
  return {
    launch: (offerId, tasks) => call('ACCEPT', { offer_ids: ids([offerId]), operations: [{ type: 'LAUNCH', launch: { task_infos: tasks } }], filters: { refuse_seconds: 0 } }),
    decline: (offerIds, refuseSeconds) => call('DECLINE', { offer_ids: ids(offerIds), filters: { refuse_seconds: refuseSeconds } }),
    kill: (taskId, agentId) => call('KILL', { task_id: { value: taskId }, agent_id: { value: agentId } }),
    acknowledge: (agentId, taskId, uuid) => call('ACKNOWLEDGE', { agent_id: { value: agentId }, task_id: { value: taskId }, uuid }),
    reconcile: (tasks) => call('RECONCILE', { tasks: tasks.map((t) => ({ task_id: { value: t.taskId }, agent_id: { value: t.agentId } })) }),
    revive: () => call('REVIVE', {}),
    acceptInverseOffers: (xs) => call('ACCEPT_INVERSE_OFFERS', { inverse_offer_ids: ids(xs) }),
    declineInverseOffers: (xs, refuseSeconds) => call('DECLINE_INVERSE_OFFERS', { inverse_offer_ids: ids(xs), filters: { refuse_seconds: refuseSeconds } }),
  };
}

main().catch((e: unknown) => {
  process.stderr.write(`${PROGRAM}: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});

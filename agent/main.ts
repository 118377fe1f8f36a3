#!/usr/bin/env node
/**
 * drydock-agent: flags → config → start.
 *
 * Signals: SIGTERM/SIGINT close gracefully and leave tasks running (systemd KillMode=process
 * upgrades rely on it); SIGUSR1 kills every task with its kill policy, waits, then exits 0.
 * Exit codes: 0 normal, 1 bad flags or a failed start, 78 (EX_CONFIG) a checkpoint that
 * belongs to another hostname/ip.
 */

import { systemClock } from '../shared/clock.js';
import { Logger } from '../shared/log.js';
import { Agent } from './agent.js';
import { AGENT_PROGRAM, agentConfig, loadAgentCredential, resolveAgentFlags } from './config.js';
import { machineProbe } from './machine.js';
import { loadAgentTls } from './tls.js';
import { loadAgentSecurity } from './security.js';
import { clientTransport } from '../io/transport.js';
import { loadEtcdAccess } from '../io/etcd-access.js';
import { chooseLauncher } from './launcher-file.js';
import { DRYDOCK_VERSION } from '../shared/version.js';

async function main(): Promise<void> {
  const argv = process.argv.slice(2);
  // Before the flags: --version needs no --master (an installer checks the file it put down).
  if (argv.includes('--version')) {
    process.stdout.write(`${AGENT_PROGRAM} ${DRYDOCK_VERSION}\n`);
    return;
  }
  const flags = resolveAgentFlags(argv, process.env);
  if (flags.kind === 'help') {
    process.stdout.write(`${flags.text}  --version\n      Print the version and exit.\n`);
    return;
  }
  if (flags.kind === 'error') {
    process.stderr.write(`${AGENT_PROGRAM}: ${flags.error}\n`);
    process.exitCode = 1;
    return;
  }
  const config = await agentConfig(flags.values, machineProbe);
  const log = new Logger({ level: config.logLevel, format: config.logFormat, daemon: 'agent' });
  // TLS files are read once, before anything listens: an unsafe key mode stops the start.
  const tls = loadAgentTls(config.tls);
  if (!tls.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${tls.error}\n`);
    log.error('TLS configuration refused', { error: tls.error });
    process.exitCode = 1;
    return;
  }
  // The credential too: a file others may read stops the start (exit 1), as a key would.
  const credential = loadAgentCredential(config.credentialFile);
  if (!credential.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${credential.error}\n`);
    log.error('credential refused', { error: credential.error });
    process.exitCode = 1;
    return;
  }
  const transport = clientTransport({ credential: credential.credential, tls: tls.tls.client });
  // etcd's files too (--master=etcd://...): a key or password file others may read stops the start.
  const etcd = loadEtcdAccess(config.etcdAuth);
  if (!etcd.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${etcd.error}\n`);
    log.error('etcd configuration refused', { error: etcd.error });
    process.exitCode = 1;
    return;
  }

  // The API's own credentials and ACLs: a --http_credentials file others may read, or ACLs that
  // do not parse, stop the start before anything listens.
  const secured = loadAgentSecurity(config.security, log);
  if (!secured.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${secured.error}\n`);
    log.error('agent API security refused', { error: secured.error });
    process.exitCode = 1;
    return;
  }

  // The single executable writes the launcher it carries into the work dir (launcher-file.ts).
  const launcher = chooseLauncher(config.launcherFile, config.workDir);
  if (!launcher.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${launcher.error}\n`);
    log.error('launcher refused', { error: launcher.error });
    process.exitCode = 1;
    return;
  }

  let exiting = false;
  const exit = (code: number): void => {
    if (exiting) return;
    exiting = true;
    // stdout is a pipe under systemd and tests: let queued log lines drain first.
    process.stdout.write('', () => process.exit(code));
  };

  const agent = new Agent(config, { clock: systemClock, log, onShutdown: () => exit(0), transport, serverTls: tls.tls.server, etcd: etcd.access, security: secured.security, launcher: launcher.path });

  process.on('unhandledRejection', (e) => log.error('unhandled rejection', { error: e as Error }));
  process.on('SIGTERM', () => void agent.close().then(() => exit(0), () => exit(0)));
  process.on('SIGINT', () => void agent.close().then(() => exit(0), () => exit(0)));
  process.on('SIGUSR1', () => void agent.shutdown().then(() => exit(0), () => exit(0)));
  process.on('SIGHUP', () => log.info('SIGHUP ignored'));

  // Who the agent authenticates as, never the secret.
  const c = credential.credential;
  const authenticatesAs = c === undefined ? 'nobody (anonymous)' : c.kind === 'basic' ? `principal '${c.principal}'` : 'a bearer token';
  const api = config.security;
  log.info('starting', {
    master: config.master,
    hostname: config.hostname,
    ip: config.ip,
    workDir: config.workDir,
    authenticatesAs,
    apiAuthentication: { readonly: api.authenticateHttpReadonly, readwrite: api.authenticateHttpReadwrite, acls: api.acls !== undefined },
    version: DRYDOCK_VERSION,
    launcher: launcher.path ?? 'beside the module',
    launcherSource: launcher.source,
  });
  const started = await agent.start();
  if (!started.ok) {
    process.stderr.write(`${AGENT_PROGRAM}: ${started.message}\n`);
    log.error('cannot start', { message: started.message });
    exit(started.exitCode);
  }
}

main().catch((e: unknown) => {
  process.stderr.write(`${AGENT_PROGRAM}: ${(e as Error).stack ?? String(e)}\n`);
  process.exit(1);
});

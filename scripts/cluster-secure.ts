/**
 * `npm start -- --secure`: the throwaway security material of the local cluster, all under
 * `<work_dir>/secure` (0700) and removed when the cluster stops: a CA and a certificate for the
 * master and the agents (scripts/harness/certs.ts), random secrets, the credentials and ACLs
 * (the master's, and each agent's own API's: the same files), and one credential file per client. Every file holding a secret is 0600, as the
 * daemons and the CLI refuse anything readable by others.
 *
 * The principals:
 * - `ops`: the operator, may do everything (also as a bearer token, for automation), and is the
 *   only one who may run maintenance hooks (run_maintenance_hooks is denied unless granted);
 * - `viewer`: may only look (the view and get actions);
 * - `agent-N`: one per agent, may register only the agent whose hostname is agent-N (a Drydock
 *   machine object: a leaked agent secret cannot take over another machine);
 * - `scheduler`: the service scheduler (with --service), may register frameworks and run tasks,
 *   and tear down only its own.
 * `aclsFor` is pure, so the ACLs are checked by a table test.
 *
 * The service scheduler's own API has no ACLs (whoever is in its --credentials may do
 * everything), so it gets a file of its own naming only `ops`: the viewer and the agents'
 * principals are refused there (401), not let loose on its plans and pods.
 */

import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ACL_OBJECT_FIELDS, type AclAction } from '../shared/acls.js';
import { makeCertificates, type Certificates } from './harness/certs.js';

/** What the read-only principal may do: every view and get action. */
export const VIEW_ACTIONS: readonly AclAction[] = (Object.keys(ACL_OBJECT_FIELDS) as AclAction[]).filter((a) => a.startsWith('view_') || a.startsWith('get_'));

/** A principal and its secret. */
export interface Principal {
  readonly principal: string;
  readonly secret: string;
}

export interface SecureCluster {
  readonly dir: string;
  readonly certs: Certificates;
  readonly ops: Principal & { readonly token: string; readonly secretFile: string };
  readonly viewer: Principal & { readonly secretFile: string };
  /** Per agent name (agent-1 ...): its --credential file. */
  readonly agentCredentialFiles: ReadonlyMap<string, string>;
  readonly scheduler: Principal & { readonly secretFile: string };
  /** The master's --credentials and --acls files. */
  readonly credentialsFile: string;
  readonly aclsFile: string;
  /** The service scheduler's --credentials (its API's callers: ops alone, secret and token). */
  readonly schedulerApiCredentialsFile: string;
}

const ANY = { type: 'ANY' } as const;
const values = (...v: string[]): { values: string[] } => ({ values: v });

/**
 * The cluster's ACLs (Mesos' format, `permissive: false`): ops everything, the viewer every view,
 * each agent principal its own hostname, the scheduler its frameworks and tasks. Pure.
 */
export function aclsFor(agentNames: readonly string[], viewActions: readonly AclAction[] = VIEW_ACTIONS): Record<string, unknown> {
  const acls: Record<string, unknown> = { permissive: false };
  const field = (a: AclAction): string => ACL_OBJECT_FIELDS[a];
  for (const action of Object.keys(ACL_OBJECT_FIELDS) as AclAction[]) {
    const entries: Array<Record<string, unknown>> = [];
    if (action === 'register_agents') {
      // First match wins: agent-N names agent-N's machine; nobody else registers agents.
      for (const name of agentNames) entries.push({ principals: values(name), [field(action)]: values(`hostname:${name}`) });
    } else {
      entries.push({ principals: values('ops'), [field(action)]: ANY });
      if (viewActions.includes(action)) entries.push({ principals: values('viewer', 'scheduler'), [field(action)]: ANY });
      if (action === 'register_frameworks' || action === 'run_tasks') entries.push({ principals: values('scheduler'), [field(action)]: ANY });
      if (action === 'teardown_frameworks') entries.push({ principals: values('scheduler'), [field(action)]: values('scheduler') });
    }
    acls[action] = entries;
  }
  return acls;
}

function secret(): string {
  return randomBytes(18).toString('base64url');
}

function writeSecret(path: string, text: string): string {
  writeFileSync(path, text, { mode: 0o600 });
  // The mode of writeFileSync is masked by the umask and ignored for an existing file: set it.
  chmodSync(path, 0o600);
  return path;
}

/** Makes the material in `<workDir>/secure`, replacing what a previous run left. */
export function makeSecureCluster(workDir: string, agentNames: readonly string[], agentIps: readonly string[]): SecureCluster {
  const dir = join(workDir, 'secure');
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  // One server certificate for the master and every agent: its names are loopback, this host
  // and the agents' addresses (they serve their API over HTTPS on 127.0.0.2...).
  const certs = makeCertificates(join(dir, 'tls'), 'drydock', agentIps);
  const ops = { principal: 'ops', secret: secret(), token: `ops-${randomBytes(24).toString('base64url')}` };
  const viewer = { principal: 'viewer', secret: secret() };
  const scheduler = { principal: 'scheduler', secret: secret() };
  const agents = agentNames.map((name) => ({ principal: name, secret: secret() }));
  const credentialsFile = writeSecret(
    join(dir, 'credentials.json'),
    `${JSON.stringify({ credentials: [{ ...ops, token: undefined, tokens: [ops.token] }, viewer, scheduler, ...agents] }, null, 2)}\n`,
  );
  const aclsFile = writeSecret(join(dir, 'acls.json'), `${JSON.stringify(aclsFor(agentNames), null, 2)}\n`);
  const schedulerApiCredentialsFile = writeSecret(
    join(dir, 'scheduler-api-credentials.json'),
    `${JSON.stringify({ credentials: [{ principal: ops.principal, secret: ops.secret, tokens: [ops.token] }] }, null, 2)}\n`,
  );
  const agentCredentialFiles = new Map<string, string>();
  for (const a of agents) agentCredentialFiles.set(a.principal, writeSecret(join(dir, `${a.principal}.credential`), `${JSON.stringify(a)}\n`));
  return {
    dir,
    certs,
    ops: { ...ops, secretFile: writeSecret(join(dir, 'ops.secret'), `${ops.secret}\n`) },
    viewer: { ...viewer, secretFile: writeSecret(join(dir, 'viewer.secret'), `${viewer.secret}\n`) },
    agentCredentialFiles,
    scheduler: { ...scheduler, secretFile: writeSecret(join(dir, 'scheduler.secret'), `${scheduler.secret}\n`) },
    credentialsFile,
    aclsFile,
    schedulerApiCredentialsFile,
  };
}

/** The janitor's name in its argv ($0 of its shell), by which a later start recognizes it. */
const JANITOR = 'drydock-secure-janitor';

/** A janitor under way: `disarm()` ends it without removing anything (the stop removed the material itself). */
export interface Janitor {
  readonly pid: number | undefined;
  disarm(): void;
}

/**
 * Removes the secure material when this process dies, whatever kills it: a SIGKILL cannot be
 * caught, so the cluster's own cleanup never runs, and the CA key and secrets would stay on disk
 * (the daemons die with the cluster: drydock-launch --pdeathsig). A small shell, detached (a
 * terminal's Ctrl-C does not reach it), reads its stdin, a pipe whose other end only this
 * process holds: at end of file (this process is gone) it removes `dir`; a line (`disarm`) ends
 * it with nothing removed. Its pid is in <work_dir>/secure.janitor.pid until it ends, so that
 * the next start waits for it (awaitJanitor) before it makes new material in the same place.
 */
export function removeAtDeath(workDir: string, dir: string): Janitor {
  const pidFile = join(workDir, 'secure.janitor.pid');
  const child = spawn('/bin/sh', ['-c', 'if read -r _; then :; else rm -rf -- "$1"; fi; rm -f -- "$2"', JANITOR, dir, pidFile], {
    detached: true,
    stdio: ['pipe', 'ignore', 'ignore'],
  });
  child.on('error', () => {});
  child.stdin?.on('error', () => {});
  // Neither the shell nor its pipe keeps this process alive.
  child.unref();
  (child.stdin as unknown as { unref?: () => void } | null)?.unref?.();
  if (child.pid !== undefined) writeFileSync(pidFile, `${child.pid}\n`);
  return {
    pid: child.pid,
    disarm: () => {
      try {
        child.stdin?.end('keep\n');
      } catch {
        // Gone already: it removed a dir that was removed.
      }
    },
  };
}

/** Is `pid` a janitor of `workDir` (its argv names it), alive? Linux /proc. */
function isJanitor(pid: number, workDir: string): boolean {
  try {
    const argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');
    const state = /\) (\S)/.exec(readFileSync(`/proc/${pid}/stat`, 'utf8'))?.[1];
    return argv.includes(JANITOR) && argv.includes(join(workDir, 'secure.janitor.pid')) && state !== 'Z';
  } catch {
    return false;
  }
}

/**
 * Waits (at most `timeoutMs`) for the janitor a previous cluster on `workDir` left, if one is
 * still at work: it removes <work_dir>/secure, which this start is about to make again.
 */
export async function awaitJanitor(workDir: string, timeoutMs = 5_000): Promise<void> {
  const pidFile = join(workDir, 'secure.janitor.pid');
  if (!existsSync(pidFile)) return;
  const pid = Number(readFileSync(pidFile, 'utf8').trim());
  const deadline = Date.now() + timeoutMs;
  while (Number.isInteger(pid) && pid > 1 && isJanitor(pid, workDir) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 20));
  }
  rmSync(pidFile, { force: true });
}

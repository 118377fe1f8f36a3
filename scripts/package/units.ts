/**
 * The packaged units and environment files, made from the ones in systemd/ (the only copies
 * kept by hand), and the little of systemd's unit semantics the package tests and benchmark need
 * to start a daemon as its unit would: ExecStart, Environment=, EnvironmentFile=, %d. Pure.
 */

/** How a packaged unit runs its daemon. */
export interface PackagedDaemon {
  /** The unit file's name in systemd/ and in /lib/systemd/system/. */
  unit: string;
  /** The Debian package that ships it. */
  pkg: 'drydock-agent' | 'drydock-master';
  /** The ExecStart program and its first arguments, replacing `/usr/bin/node /opt/drydock/dist/<x>/main.js`. */
  exec: string;
  /** Its environment file in systemd/ and in /etc/drydock/. */
  env: { example: string; installed: string };
  /** One line said in the packaged unit's header after "Installed by the <pkg> package". */
  note: string;
}

/** Where the master package puts its Node runtime and the compiled daemons. */
export const MASTER_PREFIX = '/usr/lib/drydock';

/** The three units, as packaged. */
export const PACKAGED_DAEMONS: readonly PackagedDaemon[] = [
  {
    unit: 'drydock-agent.service',
    pkg: 'drydock-agent',
    exec: '/usr/bin/drydock-agent',
    env: { example: 'agent.env.example', installed: '/etc/drydock/agent.env' },
    note: '/usr/bin/drydock-agent is the agent as one executable, its launcher inside',
  },
  {
    unit: 'drydock-master.service',
    pkg: 'drydock-master',
    exec: `${MASTER_PREFIX}/node ${MASTER_PREFIX}/dist/master/main.js`,
    env: { example: 'master.env.example', installed: '/etc/drydock/master.env' },
    note: `its own Node runtime in ${MASTER_PREFIX}/node, as Debian 12's nodejs is 18`,
  },
  {
    unit: 'drydock-scheduler.service',
    pkg: 'drydock-master',
    exec: `${MASTER_PREFIX}/node ${MASTER_PREFIX}/dist/scheduler/main.js`,
    env: { example: 'scheduler.env.example', installed: '/etc/drydock/scheduler.env' },
    note: 'one unit per service: copy it to /etc/systemd/system/drydock-scheduler@.service to run several',
  },
];

/** The source ExecStart: node on the checkout's dist/. */
const SOURCE_EXEC = /^ExecStart=\/usr\/bin\/node \/opt\/drydock\/dist\/[a-z]+\/main\.js(?= |$)/m;

/**
 * The packaged variant of a unit in systemd/: ExecStart runs the packaged program (the rest of
 * its command line kept), and the header's install steps for a checkout become one line about
 * the package. Every directive else is the source's. Throws when the source no longer has the
 * shape this substitution expects, so a changed unit is noticed at build time.
 */
export function packagedUnit(source: string, d: PackagedDaemon): string {
  const lines = source.split('\n');
  const unitAt = lines.indexOf('[Unit]');
  if (unitAt < 1 || !(lines[0] ?? '').startsWith('# ')) throw new Error(`${d.unit}: expected a '# ...' first line and a [Unit] section`);
  if ((source.match(new RegExp(SOURCE_EXEC.source, 'gm')) ?? []).length !== 1) {
    throw new Error(`${d.unit}: expected exactly one 'ExecStart=/usr/bin/node /opt/drydock/dist/<daemon>/main.js' line`);
  }
  const header = [lines[0] as string, `# Installed by the ${d.pkg} package: ${d.note}.`, `# Flags go in ${d.env.installed} (a conffile; every line commented out as shipped).`, '', ''];
  const body = lines.slice(unitAt).join('\n').replace(SOURCE_EXEC, `ExecStart=${d.exec}`);
  const out = header.join('\n') + body;
  for (const left of ['/opt/drydock', '/usr/bin/node']) if (out.includes(left)) throw new Error(`${d.unit}: '${left}' is left in the packaged unit`);
  return out;
}

/**
 * The packaged environment file: the example with every setting commented out, so that
 * installing sets nothing host-specific (the examples name example hosts, racks and files) and
 * a daemon without its required flags refuses to start (exit 1, which the units do not restart).
 */
export function packagedEnv(example: string, d: PackagedDaemon): string {
  const body = example
    .split('\n')
    .map((l) => (/^DRYDOCK_[A-Z0-9_]+=/.test(l) ? `# ${l}` : l))
    .join('\n');
  return `# Installed by the ${d.pkg} package with every setting commented out: uncomment and edit.\n${body}`;
}

/** The [Service] settings that say how a unit starts its program. */
export interface ServiceExec {
  /** ExecStart split into words (prefixes such as '-' or '@' refused: the units use none). */
  argv: string[];
  /** Environment= assignments, in order. */
  environment: Array<[string, string]>;
  /** EnvironmentFile= paths; optional ones had a leading '-'. */
  environmentFiles: Array<{ path: string; optional: boolean }>;
}

/** Splits a systemd command line or Environment= value into words ("..." and '...' quoting). */
export function systemdWords(text: string): string[] {
  const out: string[] = [];
  const re = /"((?:[^"\\]|\\.)*)"|'([^']*)'|(\S+)/g;
  for (const m of text.matchAll(re)) out.push(m[1] !== undefined ? m[1].replace(/\\(.)/g, '$1') : (m[2] ?? m[3] ?? ''));
  return out;
}

/** Reads ExecStart, Environment= and EnvironmentFile= from a unit's [Service] section. */
export function serviceExec(unitText: string): ServiceExec {
  let section = '';
  let argv: string[] | undefined;
  const environment: Array<[string, string]> = [];
  const environmentFiles: Array<{ path: string; optional: boolean }> = [];
  for (const raw of unitText.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    if (line.startsWith('[')) {
      section = line;
      continue;
    }
    if (section !== '[Service]') continue;
    const eq = line.indexOf('=');
    const key = line.slice(0, eq);
    const value = line.slice(eq + 1);
    if (key === 'ExecStart') {
      if (/^[-@:+!]/.test(value)) throw new Error(`ExecStart prefixes are not handled: ${value}`);
      argv = systemdWords(value);
    } else if (key === 'Environment') {
      for (const word of systemdWords(value)) {
        const at = word.indexOf('=');
        if (at > 0) environment.push([word.slice(0, at), word.slice(at + 1)]);
      }
    } else if (key === 'EnvironmentFile') {
      environmentFiles.push(value.startsWith('-') ? { path: value.slice(1), optional: true } : { path: value, optional: false });
    }
  }
  if (argv === undefined || argv.length === 0) throw new Error('the unit has no ExecStart');
  return { argv, environment, environmentFiles };
}

/** KEY=value lines of an environment file (comments, blank lines and quotes as systemd reads them). */
export function parseEnvironmentFile(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (line === '' || line.startsWith('#') || line.startsWith(';')) continue;
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(.*)$/.exec(line);
    if (m === null) continue;
    let value = m[2] as string;
    if (value.length >= 2 && ((value.startsWith('"') && value.endsWith('"')) || (value.startsWith("'") && value.endsWith("'")))) value = value.slice(1, -1);
    out.push([m[1] as string, value]);
  }
  return out;
}

/** What systemd would give the service, for `serviceProcess`. */
export interface ServiceContext {
  /** %d and $CREDENTIALS_DIRECTORY: where systemd puts the LoadCredential= copies. */
  credentialsDirectory: string;
  /** Reads an EnvironmentFile= path (the caller maps it into a root); undefined when missing. */
  readFile(path: string): string | undefined;
  /** Variables systemd sets itself (PATH, STATE_DIRECTORY, ...). */
  base: Record<string, string>;
}

/**
 * The argv and environment systemd would start the unit's ExecStart with: its base variables,
 * then Environment= in order, then the EnvironmentFile= files (which override Environment=, as
 * systemd.exec says), with %d expanded. A missing file without '-' throws, as systemd refuses to
 * start then.
 */
export function serviceProcess(unitText: string, ctx: ServiceContext): { argv: string[]; env: Record<string, string> } {
  const s = serviceExec(unitText);
  const expand = (v: string): string => v.replaceAll('%d', ctx.credentialsDirectory).replaceAll('%%', '%');
  const env: Record<string, string> = { ...ctx.base, CREDENTIALS_DIRECTORY: ctx.credentialsDirectory };
  for (const [k, v] of s.environment) env[k] = expand(v);
  for (const f of s.environmentFiles) {
    const text = ctx.readFile(f.path);
    if (text === undefined) {
      if (f.optional) continue;
      throw new Error(`EnvironmentFile=${f.path} is missing`);
    }
    for (const [k, v] of parseEnvironmentFile(text)) env[k] = v;
  }
  return { argv: s.argv.map(expand), env };
}

/** systemd's PATH for system services (systemd 252). */
export const SYSTEMD_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

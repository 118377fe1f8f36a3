/**
 * The Debian packages, built with Debian's own tools (`dpkg-deb --build --root-owner-group`,
 * `dpkg-shlibdeps` for the library dependencies; no debhelper, no source package):
 *
 * - drydock-agent: /usr/bin/drydock-agent (the single executable, scripts/package/sea.ts), its
 *   unit, /etc/drydock/agent.env (a conffile), the work dir /var/lib/drydock/agent (made by the
 *   postinst, so dpkg never removes it), docs, copyright, a manual page.
 * - drydock-master: the compiled master, scheduler and CLI (dist/), the web console, the
 *   production node_modules with better-sqlite3's built addon, and its own Node runtime in
 *   /usr/lib/drydock/node (Debian 12's nodejs is 18; the master needs 20 and native addons, so
 *   it cannot be one file); /usr/bin/drydock, the two units, their env files as conffiles.
 *
 * Version: package.json's. The units and env files are made from systemd/ (units.ts).
 */

import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmodSync, cpSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { gzipSync } from 'node:zlib';
import { ROOT } from '../harness/daemon.js';
import { DRYDOCK_VERSION } from '../../shared/version.js';
import { buildSea, run, strippedNode, type SeaBuild } from './sea.js';
import { MASTER_PREFIX, PACKAGED_DAEMONS, packagedEnv, packagedUnit, type PackagedDaemon } from './units.js';

/** How the .deb members are compressed: xz for a release; gzip -1 where build time matters (the package test). */
export type Compression = 'xz' | 'fast';

export interface BuildOptions {
  /** Where the .debs go (dist/deb/ by default); staging goes below it. */
  outDir: string;
  /** Where the single executables go. Default dist/sea/. */
  seaDir?: string;
  compression: Compression;
  /** Also build the single-file CLI (dist/sea/drydock), which no package carries. Default true. */
  cli?: boolean;
  /** Progress lines. */
  log?: (line: string) => void;
}

export interface PackageBuild {
  version: string;
  agentDeb: string;
  masterDeb: string;
  agentSea: SeaBuild;
  cliSea: SeaBuild | undefined;
  /** The Depends of each package, from dpkg-shlibdeps. */
  depends: { agent: string; master: string };
  /** Wall time of each step, ms. */
  timings: Record<string, number>;
}

/** Architecture of the packages: that of the node binary they carry (this machine's). */
export const DEB_ARCH = 'amd64';

const HOMEPAGE = 'https://github.com/drydock/drydock';

/**
 * The Maintainer field, from Debian's usual variables (DEBFULLNAME, DEBEMAIL) when set, so that
 * a fleet's own builds name their builder.
 */
export function maintainer(env: NodeJS.ProcessEnv = process.env): string {
  return `${env['DEBFULLNAME'] ?? 'Drydock maintainers'} <${env['DEBEMAIL'] ?? 'drydock@users.noreply.github.com'}>`;
}

/** package.json's version, which must be the one the programs report (shared/version.ts). */
export function packageVersion(): string {
  const v = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  if (v !== DRYDOCK_VERSION) throw new Error(`package.json says ${v} but shared/version.ts says ${DRYDOCK_VERSION}: make them equal`);
  return v;
}

/** The packaging sources in this folder (maintainer scripts, lintian overrides). */
const DEBIAN_DIR = join(ROOT, 'scripts', 'package', 'debian');

/** Builds both packages (and the single executables they come from). */
export async function buildPackages(o: BuildOptions): Promise<PackageBuild> {
  const log = o.log ?? (() => {});
  const version = packageVersion();
  const timings: Record<string, number> = {};
  const timed = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
    const t0 = Date.now();
    const r = await f();
    timings[name] = Date.now() - t0;
    log(`${name}: ${timings[name]} ms`);
    return r;
  };
  mkdirSync(o.outDir, { recursive: true });
  const seaDir = o.seaDir ?? join(ROOT, 'dist', 'sea');
  const stage = join(o.outDir, 'stage');
  rmSync(stage, { recursive: true, force: true });
  const epoch = await sourceDateEpoch();

  // Side by side: the single executables, the master's runtime tree, the library dependencies.
  const [agentSea, cliSea, , depends] = await Promise.all([
    timed('agent executable', () => buildSea('agent', seaDir)),
    o.cli === false ? Promise.resolve(undefined) : timed('cli executable', () => buildSea('cli', seaDir)),
    timed('master runtime', () => stageMasterRuntime(join(stage, 'drydock-master'))),
    timed('dpkg-shlibdeps', async () => {
      // The agent's executable is node; the master's runtime is node and better-sqlite3's addon.
      const addon = join(ROOT, 'node_modules', 'better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
      const [agent, master] = await Promise.all([shlibDepends(join(o.outDir, 'shlibdeps-agent'), [process.execPath]), shlibDepends(join(o.outDir, 'shlibdeps-master'), [process.execPath, addon])]);
      return { agent, master };
    }),
  ]);

  const agentRoot = join(stage, 'drydock-agent');
  const masterRoot = join(stage, 'drydock-master');
  stageAgent(agentRoot, agentSea, version, epoch);
  stageMaster(masterRoot, version, epoch);
  const agentDeb = join(o.outDir, `drydock-agent_${version}_${DEB_ARCH}.deb`);
  const masterDeb = join(o.outDir, `drydock-master_${version}_${DEB_ARCH}.deb`);
  await Promise.all([
    timed('drydock-agent.deb', () => dpkgDeb(agentRoot, agentDeb, control('drydock-agent', version, depends.agent, agentRoot), o.compression, epoch)),
    timed('drydock-master.deb', () => dpkgDeb(masterRoot, masterDeb, control('drydock-master', version, depends.master, masterRoot), o.compression, epoch)),
  ]);
  return { version, agentDeb, masterDeb, agentSea, cliSea, depends, timings };
}

/** The last commit's time (reproducible dates in the changelog and the archives), else now. */
async function sourceDateEpoch(): Promise<number> {
  const given = Number(process.env['SOURCE_DATE_EPOCH']);
  if (Number.isInteger(given) && given > 0) return given;
  try {
    return Number((await run('git', ['-C', ROOT, 'log', '-1', '--format=%ct'])).trim());
  } catch {
    return Math.floor(Date.now() / 1000);
  }
}

/**
 * The Depends for the libraries `binaries` link against, from dpkg-shlibdeps (which wants a
 * debian/control to sit beside; a throwaway one does).
 */
async function shlibDepends(dir: string, binaries: readonly string[]): Promise<string> {
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(join(dir, 'debian'), { recursive: true });
  writeFileSync(join(dir, 'debian', 'control'), `Source: drydock\n\nPackage: drydock\nArchitecture: ${DEB_ARCH}\n`);
  // The addon's V8 symbols come from node itself, not a library: those warnings are expected.
  const out = await run('dpkg-shlibdeps', ['-O', '--warnings=0', ...binaries.map((b) => `-e${b}`)], { cwd: dir });
  const m = /^shlibs:Depends=(.*)$/m.exec(out);
  if (m === null) throw new Error(`dpkg-shlibdeps printed no shlibs:Depends: ${out}`);
  rmSync(dir, { recursive: true, force: true });
  return (m[1] as string).trim();
}

/** Writes `text` to `path` (parents made) with `mode`. */
function put(path: string, text: string | Buffer, mode = 0o644): void {
  mkdirSync(join(path, '..'), { recursive: true });
  writeFileSync(path, text);
  chmodSync(path, mode);
}

/** gzip -9n, as Debian compresses changelogs and manual pages (no name, no time in the header). */
function gz(text: string): Buffer {
  return gzipSync(Buffer.from(text), { level: 9 });
}

/** RFC 2822 date of a Unix time, for the changelog. */
function rfc2822(epoch: number): string {
  return new Date(epoch * 1000).toUTCString().replace(/^(\w+), (\d+) (\w+) (\d+) ([\d:]+) GMT$/, '$1, $2 $3 $4 $5 +0000');
}

/** The native package's changelog (Debian format): one entry for this version. */
function changelog(pkg: string, version: string, epoch: number): string {
  return `drydock (${version}) unstable; urgency=medium\n\n  * ${pkg} ${version}, built from Drydock's repository by npm run package.\n    What changed is in the repository's history:\n    ${HOMEPAGE}\n\n -- ${maintainer()}  ${rfc2822(epoch)}\n`;
}

/** A manual page made from a program's --help text (shown as written). */
export function manPage(name: string, section: number, summary: string, help: string, version: string, seeAlso: string): string {
  const esc = (l: string): string => {
    const e = l.replace(/\\/g, '\\e');
    return /^[.']/.test(e) ? `\\&${e}` : e;
  };
  return [
    `.TH ${name.toUpperCase()} ${section} "" "drydock ${version}" "Drydock"`,
    '.SH NAME',
    `${name} \\- ${esc(summary)}`,
    '.SH DESCRIPTION',
    'The text of',
    `.B ${name} --help:`,
    '.PP',
    '.nf',
    ...help.trimEnd().split('\n').map(esc),
    '.fi',
    '.SH SEE ALSO',
    esc(seeAlso),
    '',
  ].join('\n');
}

/** `--help` of a built program (dist/), for its manual page. */
function helpOf(bin: string, args: readonly string[] = ['--help']): string {
  const r = spawnText(process.execPath, [join(ROOT, 'dist', bin), ...args]);
  if (!r.includes('--help')) throw new Error(`${bin} --help printed no help`);
  return r;
}

function spawnText(file: string, args: readonly string[]): string {
  return spawnSync(file, args, { encoding: 'utf8', timeout: 30_000 }).stdout ?? '';
}

/** The license texts of the npm packages in `dirs` (package directories), for a copyright file. */
function licenseTexts(dirs: readonly string[]): string {
  const out: string[] = [];
  for (const dir of dirs) {
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    const file = readdirSync(dir).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f));
    out.push(`--- ${pkg.name} ${pkg.version} (${pkg.license ?? 'see its package'}) ---`, file === undefined ? '(the package ships no license file)' : readFileSync(join(dir, file), 'utf8').trimEnd(), '');
  }
  return out.join('\n');
}

/** Node's own license (its bundled libraries' licenses included), as the build machine's nodejs package installed it. */
function nodeLicense(): string {
  const local = '/usr/share/doc/nodejs/LICENSE';
  return existsSync(local) ? readFileSync(local, 'utf8').trimEnd() : `See https://github.com/nodejs/node/blob/${process.version}/LICENSE`;
}

/** A copyright file (free-form): Drydock's license, then what the package carries from others. */
function copyright(what: string, packages: ReadonlyArray<{ name: string; version: string; license: string }>, dirs: readonly string[]): string {
  return [
    'Drydock',
    `Source: ${HOMEPAGE}`,
    '',
    'Copyright: the Drydock authors',
    'License: Apache-2.0',
    ' On Debian systems the full text of the Apache License, Version 2.0 is in',
    ' /usr/share/common-licenses/Apache-2.0.',
    '',
    `${what} Node.js ${process.version} (MIT License; its text, with the licenses of the`,
    'libraries Node bundles, is below) and these npm packages, each under its own license (texts',
    'below):',
    ...packages.map((p) => `  ${p.name} ${p.version} (${p.license})`),
    '',
    `=== Node.js ${process.version} ===`,
    nodeLicense(),
    '',
    '=== npm packages ===',
    licenseTexts(dirs),
  ].join('\n');
}

/** Docs every package carries: copyright, changelog, the install guide, lintian's overrides. */
function stageDocs(root: string, pkg: string, version: string, epoch: number, copyrightText: string, examples: readonly PackagedDaemon[]): void {
  const doc = join(root, 'usr', 'share', 'doc', pkg);
  put(join(doc, 'copyright'), copyrightText);
  put(join(doc, 'changelog.gz'), gz(changelog(pkg, version, epoch)));
  put(join(doc, 'install.md'), readFileSync(join(ROOT, 'docs', 'install.md')));
  for (const d of examples) put(join(doc, 'examples', d.env.example), readFileSync(join(ROOT, 'systemd', d.env.example)));
  put(join(root, 'usr', 'share', 'lintian', 'overrides', pkg), readFileSync(join(DEBIAN_DIR, `${pkg}.lintian-overrides`)));
}

/** The units and their env files (conffiles) of `daemons`; returns the conffiles' paths. */
function stageUnits(root: string, daemons: readonly PackagedDaemon[]): string[] {
  const conffiles: string[] = [];
  for (const d of daemons) {
    put(join(root, 'lib', 'systemd', 'system', d.unit), packagedUnit(readFileSync(join(ROOT, 'systemd', d.unit), 'utf8'), d));
    put(join(root, d.env.installed), packagedEnv(readFileSync(join(ROOT, 'systemd', d.env.example), 'utf8'), d));
    conffiles.push(d.env.installed);
  }
  return conffiles;
}

/** The maintainer scripts, from the templates in debian/, for these units. */
function stageScripts(root: string, pkg: string, daemons: readonly PackagedDaemon[], stateDirs: string): void {
  const units = daemons.map((d) => d.unit).join(' ');
  for (const name of ['postinst', 'prerm', 'postrm']) {
    const text = readFileSync(join(DEBIAN_DIR, name), 'utf8').replaceAll('@PKG@', pkg).replaceAll('@UNITS@', units).replaceAll('@STATE_DIRS@', stateDirs);
    put(join(root, 'DEBIAN', name), text, 0o755);
  }
}

function stageAgent(root: string, sea: SeaBuild, version: string, epoch: number): void {
  const daemons = PACKAGED_DAEMONS.filter((d) => d.pkg === 'drydock-agent');
  cpSync(sea.path, join(root, 'usr', 'bin', 'drydock-agent'));
  chmodSync(join(root, 'usr', 'bin', 'drydock-agent'), 0o755);
  const conffiles = stageUnits(root, daemons);
  put(join(root, 'DEBIAN', 'conffiles'), conffiles.map((c) => `${c}\n`).join(''));
  stageScripts(
    root,
    'drydock-agent',
    daemons,
    [
      "    # The agent's work dir (the unit's StateDirectory=, which systemd makes too), made here",
      '    # and not shipped: dpkg never owns it, so neither remove nor purge takes it away.',
      '    [ -d /var/lib/drydock/agent ] || install -d -m 0755 /var/lib/drydock/agent',
    ].join('\n'),
  );
  const agentDirs = sea.packages.map((p) => packageDir(p.name));
  stageDocs(root, 'drydock-agent', version, epoch, copyright('/usr/bin/drydock-agent is a Node.js single executable application: it carries', sea.packages, agentDirs), daemons);
  const summary = 'Drydock agent: runs tasks for a Drydock master, keeps them across restarts';
  put(join(root, 'usr', 'share', 'man', 'man8', 'drydock-agent.8.gz'), gz(manPage('drydock-agent', 8, summary, helpOf('agent/main.js'), version, '/usr/share/doc/drydock-agent/install.md')));
  normalizeModes(root);
}

/** Where an npm package sits in this checkout's node_modules. */
function packageDir(name: string): string {
  return join(ROOT, 'node_modules', ...name.split('/'));
}

/**
 * The master's runtime under /usr/lib/drydock: a stripped copy of this machine's node, the
 * compiled code it runs, the console, and the production node_modules installed from the
 * lockfile (`npm ci --omit=dev`) with better-sqlite3's addon copied from this checkout's build
 * (the same version: the lockfile's) instead of compiled again (a minute, and a compiler).
 */
async function stageMasterRuntime(root: string): Promise<void> {
  const lib = join(root, ...MASTER_PREFIX.split('/').filter((s) => s !== ''));
  mkdirSync(lib, { recursive: true });
  const node = strippedNode(join(lib, 'node'));
  for (const dir of ['master', 'scheduler', 'cli', 'shared', 'io']) cpSync(join(ROOT, 'dist', dir), join(lib, 'dist', dir), { recursive: true });
  // No executable bits (npm link leaves main.js executable): node runs these, not their shebang.
  pruneModules(join(lib, 'dist'));
  cpSync(join(ROOT, 'console'), join(lib, 'console'), { recursive: true });
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as Record<string, unknown>;
  // ESM (dist/*.js are modules) and the dependencies; no scripts, no dev tools, no bin links.
  const runtimePkg = { name: pkg['name'], version: pkg['version'], private: true, type: pkg['type'], license: pkg['license'], dependencies: pkg['dependencies'] };
  put(join(lib, 'package.json'), JSON.stringify(runtimePkg, null, 2) + '\n');
  cpSync(join(ROOT, 'package-lock.json'), join(lib, 'package-lock.json'));
  await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund', '--no-bin-links', '--prefer-offline', '--loglevel=error'], { cwd: lib, env: { ...process.env, npm_config_engine_strict: 'true' } });
  rmSync(join(lib, 'package-lock.json'));
  rmSync(join(lib, 'node_modules', '.package-lock.json'), { force: true });
  const addon = join('better-sqlite3', 'build', 'Release', 'better_sqlite3.node');
  const own = JSON.parse(readFileSync(join(packageDir('better-sqlite3'), 'package.json'), 'utf8')) as { version: string };
  const staged = JSON.parse(readFileSync(join(lib, 'node_modules', 'better-sqlite3', 'package.json'), 'utf8')) as { version: string };
  if (own.version !== staged.version) throw new Error(`better-sqlite3: this checkout has ${own.version} built, the lockfile installs ${staged.version}: run npm ci`);
  // The addon alone: its C sources and build intermediates are no use at run time. Stripped, as
  // Debian ships binaries (its dynamic symbols, which node resolves, stay).
  for (const d of ['deps', 'src', 'build']) rmSync(join(lib, 'node_modules', 'better-sqlite3', d), { recursive: true, force: true });
  mkdirSync(join(lib, 'node_modules', addon, '..'), { recursive: true });
  await run('strip', ['--strip-unneeded', '--remove-section=.comment', '-o', join(lib, 'node_modules', addon), join(ROOT, 'node_modules', addon)]);
  pruneModules(join(lib, 'node_modules'));
  await node;
}

function stageMaster(root: string, version: string, epoch: number): void {
  const daemons = PACKAGED_DAEMONS.filter((d) => d.pkg === 'drydock-master');
  const lib = join(root, ...MASTER_PREFIX.split('/').filter((s) => s !== ''));
  put(
    join(root, 'usr', 'bin', 'drydock'),
    `#!/bin/sh\n# drydock, the operator CLI, on the drydock-master package's own Node runtime (Debian 12's nodejs\n# is 18). The same CLI as one file, with no Node needed: dist/sea/drydock of npm run package.\nexec ${MASTER_PREFIX}/node ${MASTER_PREFIX}/dist/cli/main.js "$@"\n`,
    0o755,
  );
  const conffiles = stageUnits(root, daemons);
  put(join(root, 'DEBIAN', 'conffiles'), conffiles.map((c) => `${c}\n`).join(''));
  stageScripts(root, 'drydock-master', daemons, "    # The master's and scheduler's state dirs are systemd's to make (DynamicUser= keeps them in /var/lib/private).");
  const modules = npmPackages(join(lib, 'node_modules'));
  const packages = modules.map((dir) => {
    const p = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
    return { name: p.name, version: p.version, license: p.license ?? 'see its package' };
  });
  stageDocs(root, 'drydock-master', version, epoch, copyright(`${MASTER_PREFIX} carries`, packages, modules), daemons);
  const see = '/usr/share/doc/drydock-master/install.md';
  put(join(root, 'usr', 'share', 'man', 'man1', 'drydock.1.gz'), gz(manPage('drydock', 1, 'the Drydock operator CLI', helpOf('cli/main.js'), version, see)));
  normalizeModes(root);
}

/** Files of the packages' own development (ignore lists, linter and CI configs): no use installed. */
const DEV_FILES = /^\.(npmignore|eslintrc(\..*)?|eslintignore|editorconfig|travis\.yml|jshintrc|prettierrc(\..*)?|nycrc(\..*)?|gitattributes)$/;

/**
 * Drops DEV_FILES, and the executable bits: nothing under node_modules or dist/ is run as a
 * program (the master's node loads it; there are no bin links), and a script with
 * `#!/usr/bin/env node` run by itself would find Debian's own Node.
 */
function pruneModules(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isSymbolicLink()) continue;
    if (st.isDirectory()) pruneModules(path);
    else if (DEV_FILES.test(name)) rmSync(path);
    else chmodSync(path, st.mode & 0o666 & ~0o022);
  }
}

/** Every package directory under a node_modules (scoped and nested ones included). */
function npmPackages(nodeModules: string): string[] {
  const out: string[] = [];
  if (!existsSync(nodeModules)) return out;
  for (const name of readdirSync(nodeModules).sort()) {
    if (name.startsWith('.')) continue;
    const dir = join(nodeModules, name);
    if (name.startsWith('@')) {
      for (const sub of readdirSync(dir).sort()) out.push(join(dir, sub), ...npmPackages(join(dir, sub, 'node_modules')));
    } else {
      out.push(dir, ...npmPackages(join(dir, 'node_modules')));
    }
  }
  return out.filter((d) => existsSync(join(d, 'package.json')));
}

/** 0755 for directories and executables, 0644 for the rest: npm leaves modes as each tarball had them. */
function normalizeModes(dir: string): void {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isSymbolicLink()) continue;
    if (st.isDirectory()) {
      chmodSync(path, 0o755);
      normalizeModes(path);
    } else {
      chmodSync(path, (st.mode & 0o111) !== 0 ? 0o755 : 0o644);
    }
  }
}

/** Regular files under `root` outside DEBIAN/, as paths relative to it. */
function files(root: string, dir = root): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const path = join(dir, name);
    const st = lstatSync(path);
    if (st.isDirectory()) {
      if (dir === root && name === 'DEBIAN') continue;
      out.push(...files(root, path));
    } else if (st.isFile()) out.push(relative(root, path));
  }
  return out;
}

const DESCRIPTIONS: Record<'drydock-agent' | 'drydock-master', string> = {
  'drydock-agent': [
    'Drydock agent: runs tasks for a Drydock master',
    ' Drydock takes machines out of service without surprising the work that runs',
    ' on them. The agent runs on every machine: it runs tasks as ordinary process',
    ' groups, kills them the careful way (SIGTERM, a grace period, then SIGKILL),',
    ' keeps them across its own restarts and upgrades, and keeps one session with',
    ' the master.',
    ' .',
    ' The agent is one executable (Node.js single executable application): it needs',
    ' no Node.js, compiler or node_modules on the host. Installing starts nothing:',
    ' set DRYDOCK_MASTER in /etc/drydock/agent.env and the credential, then enable',
    ' drydock-agent.service.',
  ].join('\n'),
  'drydock-master': [
    'Drydock master, service scheduler and CLI',
    ' Drydock takes machines out of service without surprising the work that runs',
    ' on them. The master knows every machine, enforces Mesos-style maintenance',
    ' (schedules, draining, Up/Draining/Down), speaks the Mesos operator and',
    ' scheduler APIs, and keeps its registry in SQLite or etcd.',
    ' .',
    ' This package carries the master, the service scheduler (drydock-scheduler)',
    ' and the operator CLI (drydock), with their own Node.js runtime in',
    ' /usr/lib/drydock, as Debian 12 ships Node.js 18. Installing starts nothing.',
  ].join('\n'),
};

/** DEBIAN/control. */
function control(pkg: 'drydock-agent' | 'drydock-master', version: string, depends: string, root: string): string {
  // dpkg's Installed-Size: KiB, each file rounded up.
  const kib = files(root).reduce((n, f) => n + Math.ceil(statSync(join(root, f)).size / 1024), 0);
  return [
    `Package: ${pkg}`,
    'Source: drydock',
    `Version: ${version}`,
    `Architecture: ${DEB_ARCH}`,
    `Maintainer: ${maintainer()}`,
    `Installed-Size: ${kib}`,
    `Depends: ${depends}`,
    'Section: admin',
    'Priority: optional',
    `Homepage: ${HOMEPAGE}`,
    `Description: ${DESCRIPTIONS[pkg]}`,
    '',
  ].join('\n');
}

/** Writes DEBIAN/control and md5sums (conffiles left out, as dpkg checks those itself), then builds the .deb. */
async function dpkgDeb(root: string, out: string, controlText: string, compression: Compression, epoch: number): Promise<void> {
  put(join(root, 'DEBIAN', 'control'), controlText);
  const conffiles = new Set(readFileSync(join(root, 'DEBIAN', 'conffiles'), 'utf8').split('\n').filter((l) => l !== '').map((l) => l.slice(1)));
  const sums = files(root)
    .filter((f) => !conffiles.has(f))
    .map((f) => `${createHash('md5').update(readFileSync(join(root, f))).digest('hex')}  ${f}\n`)
    .join('');
  put(join(root, 'DEBIAN', 'md5sums'), sums);
  normalizeModes(join(root, 'DEBIAN'));
  for (const s of ['postinst', 'prerm', 'postrm']) chmodSync(join(root, 'DEBIAN', s), 0o755);
  const z = compression === 'xz' ? ['-Zxz'] : ['-Zgzip', '-z1'];
  rmSync(out, { force: true });
  await run('dpkg-deb', ['--root-owner-group', ...z, '--build', root, out], { env: { ...process.env, SOURCE_DATE_EPOCH: String(epoch) } });
}

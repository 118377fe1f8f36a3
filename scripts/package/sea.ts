/**
 * Single executables: `drydock-agent` and `drydock` as one file each, which run on a host with
 * no Node, no compiler and no node_modules (Node's single executable applications).
 *
 * Why these tools: Node's own SEA support (`node --experimental-sea-config`, `node:sea` since
 * 20.12) runs the very Node the tests run, so the executable behaves as `node dist/agent/main.js`
 * does; it takes one CommonJS script, which esbuild makes from the TypeScript sources in a
 * fraction of a second (it is already in the tree through tsx, and bundles TypeScript without a
 * separate compile); postject is the injector Node's documentation names for putting the blob
 * into a copy of the node binary (pkg and nexe build their own patched Node and are unmaintained
 * or slow; Bun/Deno runtimes would not be the Node the daemon is tested on).
 *
 * Steps, per program: esbuild bundle (ESM sources -> one CJS file) -> SEA blob (with the
 * launcher as an asset, for the agent) -> a stripped copy of this machine's node -> postject.
 */

import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { chmodSync, existsSync, renameSync, mkdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import { dirname, join, relative, sep } from 'node:path';
import { build, type Metafile, type Plugin } from 'esbuild';
import { ROOT } from '../harness/daemon.js';

/** The programs built as single executables: entry point, output name, assets. */
export const SEA_PROGRAMS = {
  agent: { entry: 'agent/main.ts', name: 'drydock-agent', assets: { 'drydock-launch': 'dist/agent/drydock-launch' } },
  cli: { entry: 'cli/main.ts', name: 'drydock', assets: {} },
} as const satisfies Record<string, { entry: string; name: string; assets: Record<string, string> }>;

export type SeaProgram = keyof typeof SEA_PROGRAMS;

/** Node's SEA sentinel: the fuse string postject flips in the copied binary. */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2';

/** Runs a program, output kept for the error message: builds run side by side (buildPackages). */
export async function run(file: string, args: readonly string[], o: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<string> {
  try {
    const r = await promisify(execFile)(file, [...args], { ...o, maxBuffer: 64 * 2 ** 20, encoding: 'utf8' });
    return r.stdout;
  } catch (e) {
    const x = e as Error & { stderr?: string; stdout?: string };
    throw new Error(`${file} ${args.join(' ')} failed: ${x.message}\n${x.stderr ?? ''}${x.stdout ?? ''}`.trim());
  }
}

/** Packages that must never end up in a single executable (native addons: they cannot load from inside one). */
const REFUSED = ['better-sqlite3'];

/** What a build made. */
export interface SeaBuild {
  program: SeaProgram;
  /** The executable. */
  path: string;
  /** Its size in bytes. */
  bytes: number;
  /** The npm packages bundled into it, with version and license (for the package's copyright file). */
  packages: Array<{ name: string; version: string; license: string }>;
  /** The version of the Node runtime it carries. */
  node: string;
}

/**
 * `import.meta.url` inside the CJS bundle: esbuild leaves `import.meta` empty there. The file of
 * a single executable is the executable itself.
 */
const IMPORT_META_SHIM = `import { pathToFileURL } from 'node:url';
export const drydock_import_meta_url = pathToFileURL(process.execPath).href;
`;

/**
 * `createRequire(import.meta.url)('ws')` in our sources (agent/session.ts loads ws that way, to
 * keep Node's CommonJS export scanner off it) would look for node_modules beside the executable
 * at run time. For our own modules, `node:module` becomes a shim whose createRequire hands out
 * the packages such calls name, bundled as plain require() calls, which esbuild follows.
 */
function createRequirePlugin(): Plugin {
  const CALL = /createRequire\(import\.meta\.url\)\(\s*['"]([^'"]+)['"]\s*\)/g;
  return {
    name: 'drydock-create-require',
    setup(b) {
      b.onResolve({ filter: /^(node:)?module$/ }, (args) => {
        if (!args.importer.startsWith(ROOT + sep) || args.importer.includes(`${sep}node_modules${sep}`)) return undefined;
        return { path: args.importer, namespace: 'drydock-create-require' };
      });
      b.onLoad({ filter: /.*/, namespace: 'drydock-create-require' }, (args) => {
        const names = [...new Set([...readFileSync(args.path, 'utf8').matchAll(CALL)].map((m) => m[1] as string))];
        const table = names.map((n) => `  ${JSON.stringify(n)}: () => require(${JSON.stringify(n)}),`).join('\n');
        return {
          contents: `const bundled = {\n${table}\n};\nexport function createRequire() {\n  return (id) => {\n    const load = bundled[id];\n    if (load === undefined) throw new Error('not bundled into this executable: ' + id);\n    return load();\n  };\n}\n`,
          resolveDir: ROOT,
          loader: 'js',
        };
      });
    },
  };
}

/**
 * Optional packages our dependencies try to require() and do without (ws: bufferutil and
 * utf-8-validate, native speed-ups; systeminformation: the macOS temperature sensors). They are not installed, so outside a single executable
 * the require throws and the package falls back; inside one, Node would also print a warning
 * about require() on every start. Here they are modules that throw, as when not installed.
 */
const ABSENT = ['bufferutil', 'utf-8-validate', 'osx-temperature-sensor', 'macos-temperature-sensor'];

function absentPlugin(): Plugin {
  return {
    name: 'drydock-absent',
    setup(b) {
      b.onResolve({ filter: new RegExp(`^(${ABSENT.join('|')})$`) }, (args) => ({ path: args.path, namespace: 'drydock-absent' }));
      b.onLoad({ filter: /.*/, namespace: 'drydock-absent' }, (args) => ({
        contents: `const e = new Error(${JSON.stringify(`Cannot find module '${args.path}' (not bundled into this executable)`)}); e.code = 'MODULE_NOT_FOUND'; throw e;\n`,
        loader: 'js',
      }));
    },
  };
}

/**
 * The modules a bundle still loads at run time that are not Node built-ins: inside a single
 * executable they cannot load (its require() knows built-ins only), so the build fails on any.
 */
export function runtimeRequires(metafile: Metafile): string[] {
  const out = new Set<string>();
  for (const o of Object.values(metafile.outputs)) {
    for (const i of o.imports) if (i.external && !isBuiltin(i.path)) out.add(i.path);
  }
  return [...out].sort();
}

/** Fails the build on a package that cannot work inside a single executable. */
function refusePlugin(): Plugin {
  return {
    name: 'drydock-refuse',
    setup(b) {
      const filter = new RegExp(`^(${REFUSED.join('|')})(/|$)`);
      b.onResolve({ filter }, (args) => ({ errors: [{ text: `${args.path} (a native addon) must not be bundled into a single executable; imported by ${relative(ROOT, args.importer)}` }] }));
    },
  };
}

/** Bundles `program` into one CommonJS file; returns its path and the bundle's inputs. */
export async function bundle(program: SeaProgram, outDir: string): Promise<{ path: string; metafile: Metafile }> {
  const p = SEA_PROGRAMS[program];
  const shim = join(outDir, 'import-meta-url.mjs');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(shim, IMPORT_META_SHIM);
  const path = join(outDir, `${p.name}.cjs`);
  const r = await build({
    entryPoints: [join(ROOT, p.entry)],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'cjs',
    outfile: path,
    inject: [shim],
    define: { 'import.meta.url': 'drydock_import_meta_url' },
    plugins: [createRequirePlugin(), absentPlugin(), refusePlugin()],
    // Licences of bundled packages stay in the file (and the package's copyright names them).
    legalComments: 'eof',
    metafile: true,
    logLevel: 'warning',
    absWorkingDir: ROOT,
  });
  const left = runtimeRequires(r.metafile);
  if (left.length > 0) throw new Error(`${p.entry}: the bundle would load ${left.join(', ')} from disk at run time; bundle them or add them to ABSENT in scripts/package/sea.ts`);
  return { path, metafile: r.metafile };
}

/** The npm packages a bundle's inputs come from. */
export function bundledPackages(metafile: Metafile): Array<{ name: string; version: string; license: string }> {
  const dirs = new Set<string>();
  for (const input of Object.keys(metafile.inputs)) {
    const m = /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(input);
    if (m !== null) dirs.add(m[1] as string);
  }
  return [...dirs]
    .map((d) => {
      const pkg = JSON.parse(readFileSync(join(ROOT, d, 'package.json'), 'utf8')) as { name: string; version: string; license?: string };
      return { name: pkg.name, version: pkg.version, license: pkg.license ?? 'see its package' };
    })
    .sort((a, b) => a.name.localeCompare(b.name));
}

/**
 * Copies this machine's node (the one running this script, the one the tests ran) without its
 * symbols: 99 MB -> 86 MB here, and Debian packages ship stripped binaries. Strip before the
 * injection: stripping an executable with a blob in it would drop the blob.
 */
export async function strippedNode(to: string): Promise<void> {
  mkdirSync(dirname(to), { recursive: true });
  rmSync(to, { force: true });
  await run('strip', ['--strip-unneeded', '--remove-section=.comment', '-o', to, process.execPath]);
  chmodSync(to, 0o755);
}

/** Builds one single executable into `outDir` (dist/sea/ by default). */
export async function buildSea(program: SeaProgram, outDir = join(ROOT, 'dist', 'sea')): Promise<SeaBuild> {
  const p = SEA_PROGRAMS[program];
  const work = join(outDir, 'build', program);
  rmSync(work, { recursive: true, force: true });
  const { path: script, metafile } = await bundle(program, work);
  const assets: Record<string, string> = {};
  for (const [key, file] of Object.entries(p.assets)) {
    const abs = join(ROOT, file);
    if (!existsSync(abs)) throw new Error(`${file} is missing: run npm run build first`);
    assets[key] = abs;
  }
  const blob = join(work, `${p.name}.blob`);
  const config = join(work, 'sea-config.json');
  // useCodeCache stays off: V8's code cache is tied to the exact V8 build and flags, and made no
  // measurable difference to the agent's start (it is mostly waiting on the network).
  writeFileSync(config, JSON.stringify({ main: script, output: blob, disableExperimentalSEAWarning: true, assets }, null, 2));
  await run(process.execPath, ['--experimental-sea-config', config]);
  const exe = join(outDir, p.name);
  const tmp = `${exe}.tmp`;
  await strippedNode(tmp);
  const postject = join(ROOT, 'node_modules', 'postject', 'dist', 'cli.js');
  await run(process.execPath, [postject, tmp, 'NODE_SEA_BLOB', blob, '--sentinel-fuse', SEA_FUSE]);
  // A rename: a drydock-agent already running from this path keeps its own file.
  renameSync(tmp, exe);
  return { program, path: exe, bytes: statSync(exe).size, packages: bundledPackages(metafile), node: process.version };
}

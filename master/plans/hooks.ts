/**
 * The master's maintenance hooks: the commands an operator lets maintenance plans run once a
 * machine is DOWN (`--maintenance_hooks=FILE`). Running a command on the master is a privilege of
 * its own, never implied by the right to maintain machines, so:
 *  - the commands come only from this file, written by whoever runs the master, as argv arrays
 *    (no shell; an operator who wants one writes `["/bin/sh", "-c", "..."]`, their decision);
 *  - a plan names a hook (`on_down: { hook: patch }`), and may fill nothing into it but the
 *    machine's `{hostname}`, `{ip}` and `{agent_id}` (values checked: see `fillHookArgv`);
 *  - naming one is the ACL action `run_maintenance_hooks` (authorization.ts), denied unless granted;
 *  - a hook runs with a minimal environment (`hookEnvironment`), as `--hook_user`, and its output is
 *    shown only to principals allowed to run it (`OUTPUT_HIDDEN` for the others).
 *
 * The top of this module is pure (the file's reading, placeholders, environment, the user
 * decision, a file's mode); `loadMaintenanceHooks` at the bottom is the shell that reads the file
 * and /etc/passwd once at start.
 */
import { statSync, readFileSync } from 'node:fs';
import { parseDuration } from '../../shared/duration.js';
import { checkKeys, childPath, describe, ErrorList, field, readYaml, type YamlValue } from '../../shared/yaml-tree.js';
import { lookupUser, type PasswdEntry } from '../../io/passwd.js';

// ---------------------------------------------------------------------------------------------
// The hooks

/** One hook of the master's file, checked and frozen. */
export interface MaintenanceHook {
  /** Its name, what a plan's `on_down.hook` says: `[a-z][a-z0-9_-]*`, at most 63 characters. */
  readonly name: string;
  /** The program (an absolute path) and its arguments; `{hostname}`, `{ip}`, `{agent_id}` are filled per machine. */
  readonly argv: readonly string[];
  /** The longest it may run (ms; default 15 minutes); a plan may ask for less, never more. */
  readonly timeoutMs: number;
  /** Variables added to the minimal environment. */
  readonly env: Readonly<Record<string, string>>;
}

/** The master's hooks by name (empty: none configured). */
export type HookCatalog = ReadonlyMap<string, MaintenanceHook>;

/** No hooks: what a master without --maintenance_hooks has. */
export const NO_HOOKS: HookCatalog = new Map();

/** A hook's name: it appears in plan specs, ACL values and audit lines. */
export const HOOK_NAME = /^[a-z][a-z0-9_-]{0,62}$/;
/** A hook's timeout when its file gives none. */
export const DEFAULT_HOOK_TIMEOUT_MS = 15 * 60_000;
/** Most hooks in one file, argv elements of one hook, and characters of one argument or env value. */
export const MAX_HOOKS = 256;
export const MAX_ARGV = 256;
export const MAX_ARG_CHARS = 4096;
/** Largest hooks file read (a larger one is a wrong path, not a list of hooks). */
export const MAX_HOOKS_FILE_BYTES = 1024 * 1024;

/** What a hook's arguments may say, filled per machine. */
export const HOOK_PLACEHOLDERS = ['hostname', 'ip', 'agent_id'] as const;
export type HookPlaceholder = (typeof HOOK_PLACEHOLDERS)[number];

/**
 * `{name}` not preceded by `$`: in `["/bin/sh", "-c", "echo ${HOME} {hostname}"]` the first is the
 * shell's, and `awk '{print $1}'` holds no name, so arguments keep their own braces.
 */
const PLACEHOLDER = /(?<!\$)\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/** The placeholder names an argument uses, in order, repeats included. */
export function hookPlaceholders(text: string): string[] {
  return [...text.matchAll(PLACEHOLDER)].map((m) => m[1] ?? '');
}

/** The variables Drydock sets for every hook; a hooks file may not set them. */
export const DRYDOCK_HOOK_VARIABLES = ['DRYDOCK_PLAN', 'DRYDOCK_STEP', 'DRYDOCK_HOSTNAME', 'DRYDOCK_IP', 'DRYDOCK_AGENT_ID'] as const;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

export type HooksParse = { ok: true; hooks: HookCatalog } | { ok: false; errors: string[] };

/**
 * Reads a hooks file (YAML 1.2 or JSON): `hooks:` mapping names to `{command: [argv...],
 * timeout?, env?}`. Unknown keys, a relative program, an unknown placeholder, a placeholder in
 * the program itself, and a variable Drydock sets are refused; every error names its path. Never throws.
 */
export function parseHooksFile(text: string): HooksParse {
  const read = readYaml(text, 'the hooks file');
  if (!read.ok) return read;
  const errors = new ErrorList();
  const root = read.value;
  if (root.kind !== 'map') return { ok: false, errors: [`the hooks file must be a mapping with hooks: {NAME: {command: [...]}}, got ${describe(root)}`] };
  checkKeys(root, '', ['hooks'], errors);
  const list = field(root, 'hooks');
  if (list === undefined) errors.add('hooks is required (hooks: {NAME: {command: ["/usr/local/sbin/x", "{hostname}"]}})');
  const hooks = new Map<string, MaintenanceHook>();
  if (list !== undefined && list.kind !== 'map') errors.add(`hooks must be a mapping of names to hooks, got ${describe(list)}`);
  else if (list !== undefined) {
    if (list.entries.length > MAX_HOOKS) errors.add(`hooks has ${list.entries.length} hooks; at most ${MAX_HOOKS} are accepted`);
    for (const { key, value } of list.entries.slice(0, MAX_HOOKS)) {
      const path = childPath('hooks', key);
      if (!HOOK_NAME.test(key)) {
        errors.add(`${path}: a hook's name is a lowercase letter, then lowercase letters, digits, '-' or '_', at most 63 characters`);
        continue;
      }
      const hook = readHook(key, value, path, errors);
      if (hook !== undefined) hooks.set(key, Object.freeze(hook));
    }
  }
  if (errors.any()) return { ok: false, errors: errors.list() };
  return { ok: true, hooks };
}

function readHook(name: string, v: YamlValue, path: string, errors: ErrorList): MaintenanceHook | undefined {
  if (v.kind !== 'map') {
    errors.add(`${path} must be a mapping with command (and timeout, env), got ${describe(v)}`);
    return undefined;
  }
  checkKeys(v, path, ['command', 'timeout', 'env'], errors);
  const c = field(v, 'command');
  const argv = c === undefined ? undefined : readArgv(c, childPath(path, 'command'), errors);
  if (c === undefined) errors.add(`${childPath(path, 'command')} is required: the program and its arguments, e.g. ["/usr/local/sbin/patch-host", "{hostname}"]`);
  const t = field(v, 'timeout');
  const timeoutMs = t === undefined ? DEFAULT_HOOK_TIMEOUT_MS : readTimeout(t, childPath(path, 'timeout'), errors);
  const e = field(v, 'env');
  const env = e === undefined ? {} : readEnv(e, childPath(path, 'env'), errors);
  if (argv === undefined || timeoutMs === undefined || env === undefined) return undefined;
  return { name, argv: Object.freeze(argv), timeoutMs, env: Object.freeze(env) };
}

/** A scalar as the text it stands for: `22` is "22" (an argument is text, whatever YAML reads it as). */
function scalarText(v: YamlValue): string | undefined {
  if (v.kind !== 'scalar' || v.value === null) return undefined;
  return typeof v.value === 'string' ? v.value : v.text;
}

function readArgv(v: YamlValue, path: string, errors: ErrorList): string[] | undefined {
  if (v.kind !== 'seq' || v.items.length === 0 || v.items.length > MAX_ARGV) {
    errors.add(`${path} must be a list of 1 to ${MAX_ARGV} strings (the program, then its arguments; no shell), got ${v.kind === 'seq' ? `${v.items.length} items` : describe(v)}`);
    return undefined;
  }
  const out: string[] = [];
  let ok = true;
  v.items.forEach((item, i) => {
    const p = `${path}[${i}]`;
    const s = scalarText(item);
    if (s === undefined) {
      errors.add(`${p} must be a string, got ${describe(item)}`);
      ok = false;
      return;
    }
    if (s.length > MAX_ARG_CHARS || s.includes('\u0000')) {
      errors.add(`${p} must be at most ${MAX_ARG_CHARS} characters without NUL`);
      ok = false;
      return;
    }
    const used = hookPlaceholders(s);
    const unknown = used.filter((n) => !(HOOK_PLACEHOLDERS as readonly string[]).includes(n));
    if (unknown.length > 0) {
      errors.add(`${p} uses ${[...new Set(unknown)].map((n) => `{${n.slice(0, 40)}}`).join(', ')}: the placeholders are ${HOOK_PLACEHOLDERS.map((n) => `{${n}}`).join(', ')}`);
      ok = false;
      return;
    }
    if (i === 0 && (!s.startsWith('/') || used.length > 0)) {
      // No PATH lookup and nothing from a machine in the program's name: the file says exactly what runs.
      errors.add(`${p} must be the program's absolute path (e.g. /usr/local/sbin/patch-host), without placeholders, got ${describe(item)}`);
      ok = false;
      return;
    }
    out.push(s);
  });
  return ok ? out : undefined;
}

function readTimeout(v: YamlValue, path: string, errors: ErrorList): number | undefined {
  const s = v.kind === 'scalar' && typeof v.value === 'string' ? v.value : undefined;
  const d = s === undefined ? undefined : parseDuration(s.slice(0, 80));
  if (d === undefined || !d.ok || d.ns <= 0n || d.ns % 1_000_000n !== 0n) {
    errors.add(`${path} must be a duration longer than 0 in whole milliseconds, such as 10mins or 30secs, got ${describe(v)}${d !== undefined && !d.ok ? ` (${d.error})` : ''}`);
    return undefined;
  }
  return Number(d.ns / 1_000_000n);
}

function readEnv(v: YamlValue, path: string, errors: ErrorList): Record<string, string> | undefined {
  if (v.kind !== 'map') {
    errors.add(`${path} must be a mapping of variable names to values, got ${describe(v)}`);
    return undefined;
  }
  const pairs: Array<[string, string]> = [];
  let ok = true;
  for (const { key, value } of v.entries) {
    const p = childPath(path, key);
    const text = scalarText(value);
    if (!ENV_NAME.test(key) || key.length > 128) {
      errors.add(`${p} is not a variable name (letters, digits and '_', not starting with a digit)`);
      ok = false;
    } else if ((DRYDOCK_HOOK_VARIABLES as readonly string[]).includes(key)) {
      errors.add(`${p}: Drydock sets ${key} for every hook (the plan, step and machine); choose another name`);
      ok = false;
    } else if (text === undefined || text.length > MAX_ARG_CHARS || text.includes('\u0000')) {
      errors.add(`${p} must be text of at most ${MAX_ARG_CHARS} characters without NUL, got ${describe(value)}`);
      ok = false;
    } else pairs.push([key, text]);
  }
  // fromEntries makes own properties: a variable named __proto__ stays a variable.
  return ok ? Object.fromEntries(pairs) : undefined;
}

/** The hooks' names for a message: "patch, reboot", or a sentence when there are none. */
export function hookNamesText(hooks: HookCatalog): string {
  return hooks.size === 0 ? 'this master has no hooks (none are configured: --maintenance_hooks)' : `this master's hooks are ${[...hooks.keys()].sort().join(', ')}`;
}

// ---------------------------------------------------------------------------------------------
// Filling a hook for one machine

/**
 * What may be put into an argument. Hostnames come from agents, which an attacker may run: an
 * `sh -c` hook would read `;` or `$(...)`, and a leading `-` is an option to most programs, so
 * a value outside this set (or starting with `-`) is refused and the step says so.
 */
const SAFE_VALUE = /^[A-Za-z0-9._:,-]*$/;

export type FilledArgv = { ok: true; argv: string[] } | { ok: false; error: string };

/**
 * The hook's argv with its placeholders filled: `{hostname}` and `{ip}` of the machine (empty when
 * it has none), `{agent_id}` the ids of its agents joined by `,` (empty: none). Only the values an
 * argument uses are checked: a hook that reads DRYDOCK_HOSTNAME instead may run on any machine.
 */
export function fillHookArgv(argv: readonly string[], values: Readonly<Record<HookPlaceholder, string>>): FilledArgv {
  const used = new Set(argv.flatMap((a) => hookPlaceholders(a)));
  for (const name of HOOK_PLACEHOLDERS) {
    if (!used.has(name)) continue;
    const value = values[name];
    if (!SAFE_VALUE.test(value)) return { ok: false, error: `its ${name} ${JSON.stringify(value.slice(0, 60))} holds characters that are not safe in a hook's argument` };
    if (value.startsWith('-')) return { ok: false, error: `its ${name} ${JSON.stringify(value.slice(0, 60))} starts with '-', which the hook's program would read as an option` };
  }
  return { ok: true, argv: argv.map((a) => a.replace(PLACEHOLDER, (whole, name: string) => ((HOOK_PLACEHOLDERS as readonly string[]).includes(name) ? values[name as HookPlaceholder] : whole))) };
}

/** The PATH every hook gets: the system's directories, nothing of the master's. */
export const HOOK_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * A hook's whole environment: PATH, LANG and HOME, then the hook's own variables from the file,
 * then Drydock's (which the file cannot set). Nothing of the master's environment: its
 * credentials and secrets (DRYDOCK_CREDENTIALS, DRYDOCK_ETCD_PASSWORD_FILE, ...) stay in the master.
 */
export function hookEnvironment(o: {
  home: string;
  hookEnv: Readonly<Record<string, string>>;
  plan: string;
  step: string;
  values: Readonly<Record<HookPlaceholder, string>>;
}): Record<string, string> {
  return {
    PATH: HOOK_PATH,
    LANG: 'C.UTF-8',
    HOME: o.home,
    ...o.hookEnv,
    DRYDOCK_PLAN: o.plan,
    DRYDOCK_STEP: o.step,
    DRYDOCK_HOSTNAME: o.values.hostname,
    DRYDOCK_IP: o.values.ip,
    DRYDOCK_AGENT_ID: o.values.agent_id,
  };
}

// ---------------------------------------------------------------------------------------------
// Who sees a hook's output

/** What replaces a hook's output for a principal not allowed run_maintenance_hooks on the hook. */
export const OUTPUT_HIDDEN = 'output hidden (needs run_maintenance_hooks)';

// ---------------------------------------------------------------------------------------------
// The file and the user, decided at start

/** What a stat of the hooks file says. */
export interface FileFacts {
  readonly isFile: boolean;
  readonly mode: number;
  readonly uid: number;
  readonly size: number;
}

/**
 * Why the hooks file must not be used, or undefined. Whoever may write it runs commands as the
 * hook user (root, often): so not writable by its group or others, and owned by root or by the
 * master's own user. Readable by all is fine: it holds no secret (secrets belong in the hook's
 * own configuration, which the hook user reads).
 */
export function hooksFileProblem(f: FileFacts, masterUid: number): string | undefined {
  if (!f.isFile) return 'is not a regular file';
  if (f.size > MAX_HOOKS_FILE_BYTES) return `is ${f.size} bytes, more than ${MAX_HOOKS_FILE_BYTES}: is it the right file?`;
  if ((f.mode & 0o022) !== 0) {
    const who = [(f.mode & 0o020) !== 0 ? 'its group' : '', (f.mode & 0o002) !== 0 ? 'others' : ''].filter((s) => s !== '').join(' and ');
    return `is writable by ${who} (mode ${(f.mode & 0o777).toString(8).padStart(4, '0')}), who could then run any command as the hook user; run chmod go-w on it`;
  }
  if (f.uid !== 0 && f.uid !== masterUid) return `is owned by uid ${f.uid}, neither root nor the master's user (uid ${masterUid}), who could then run any command as the hook user; run chown root on it`;
  return undefined;
}

/** The user hooks run as: its ids when they must be set (the master is root), its home. */
export interface HookUser {
  readonly name: string;
  /** Set only when the master changes user for the hook (it runs as root); undefined: the master's own. */
  readonly uid: number | undefined;
  readonly gid: number | undefined;
  readonly home: string;
}

/**
 * Decides the hook user from `--hook_user` and the master's uid. A root master must be told
 * (`--hook_user=root` is an explicit, allowed choice); a master that is not root can run hooks
 * only as itself. `find` looks a user up by name or uid. Pure.
 */
export function decideHookUser(hookUser: string | undefined, masterUid: number, find: (nameOrUid: string | number) => PasswdEntry | undefined): { ok: true; user: HookUser } | { ok: false; error: string } {
  const self = find(masterUid);
  if (hookUser === undefined) {
    if (masterUid === 0) return { ok: false, error: '--maintenance_hooks: the master runs as root, so --hook_user=NAME is required (the user hooks run as; --hook_user=root runs them as root)' };
    return { ok: true, user: { name: self?.name ?? String(masterUid), uid: undefined, gid: undefined, home: self?.home || '/' } };
  }
  const entry = find(hookUser);
  if (entry === undefined) return { ok: false, error: `--hook_user=${hookUser}: no such user (looked up in /etc/passwd and with getent)` };
  if (masterUid !== 0) {
    if (entry.uid !== masterUid) return { ok: false, error: `--hook_user=${hookUser}: a master that is not root runs hooks as its own user only (it runs as uid ${masterUid}${self === undefined ? '' : `, ${self.name}`})` };
    return { ok: true, user: { name: entry.name, uid: undefined, gid: undefined, home: entry.home || '/' } };
  }
  return { ok: true, user: { name: entry.name, uid: entry.uid, gid: entry.gid, home: entry.home || '/' } };
}

/** The master's hooks and the user they run as, loaded once at start. */
export interface MaintenanceHooks {
  readonly catalog: HookCatalog;
  readonly user: HookUser;
  /** The file they came from, for log lines. */
  readonly file: string | undefined;
}

/** A master without --maintenance_hooks: no hook can be named. */
export const NO_MAINTENANCE_HOOKS: MaintenanceHooks = Object.freeze({ catalog: NO_HOOKS, user: { name: '', uid: undefined, gid: undefined, home: '/' }, file: undefined });

/**
 * Reads `--maintenance_hooks` and decides `--hook_user`, once at start. Every error names the flag
 * and the file; the master exits 1 with it.
 */
export function loadMaintenanceHooks(file: string | undefined, hookUser: string | undefined): { ok: true; hooks: MaintenanceHooks } | { ok: false; error: string } {
  if (file === undefined) return { ok: true, hooks: NO_MAINTENANCE_HOOKS };
  const masterUid = process.getuid?.() ?? 0;
  let facts: FileFacts;
  try {
    const st = statSync(file);
    facts = { isFile: st.isFile(), mode: st.mode, uid: st.uid, size: st.size };
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    return { ok: false, error: `--maintenance_hooks ${file} cannot be read: ${code === 'ENOENT' ? 'no such file' : (code ?? String(e))}` };
  }
  const problem = hooksFileProblem(facts, masterUid);
  if (problem !== undefined) return { ok: false, error: `--maintenance_hooks ${file} ${problem}` };
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    return { ok: false, error: `--maintenance_hooks ${file} cannot be read: ${(e as NodeJS.ErrnoException).code ?? String(e)}` };
  }
  const parsed = parseHooksFile(text);
  if (!parsed.ok) return { ok: false, error: `--maintenance_hooks ${file}: ${parsed.errors.join('; ')}` };
  const user = decideHookUser(hookUser, masterUid, lookupUser);
  if (!user.ok) return user;
  return { ok: true, hooks: Object.freeze({ catalog: parsed.hooks, user: user.user, file }) };
}

/**
 * Flags with Mesos names, resolved in stages into one frozen object:
 * defaults, then the environment (`DRYDOCK_<FLAG>`), then the command line, then parsing
 * that names the flag and the value it got. `--name=value` and `--name value` both work;
 * booleans also take `--name` and `--no-name`.
 */

import { formatDuration, msToNs, parseDuration } from './duration.js';
import { formatBytesFlag, parseBytes } from './bytes.js';

export type FlagParse<T> = { ok: true; value: T } | { ok: false; error: string };

export interface Flag<T> {
  /** One line for --help, with unit and default. */
  help: string;
  /** Placeholder shown in --help, e.g. `host:port`. */
  placeholder?: string;
  /** The value when neither environment nor command line sets it. */
  default: T;
  parse(text: string): FlagParse<T>;
  /** The value as GET_FLAGS writes it (Mesos' text form); default String(value). */
  format?(value: T): string;
  boolean?: boolean;
}

export type FlagSpec = Record<string, Flag<unknown>>;
export type FlagValues<S extends FlagSpec> = { readonly [K in keyof S]: S[K] extends Flag<infer T> ? T : never };

export type FlagResult<S extends FlagSpec> =
  | { kind: 'ok'; values: FlagValues<S>; sources: Readonly<Record<keyof S, 'default' | 'env' | 'flag'>> }
  | { kind: 'help'; text: string }
  | { kind: 'error'; error: string };

export function stringFlag(help: string, def: string, placeholder = 'VALUE'): Flag<string> {
  return { help, default: def, placeholder, parse: (t) => ({ ok: true, value: t }) };
}

export function optionalStringFlag(help: string, placeholder = 'VALUE'): Flag<string | undefined> {
  return {
    help,
    default: undefined,
    placeholder,
    parse: (t) => (t === '' ? { ok: false, error: 'must not be empty' } : { ok: true, value: t }),
  };
}

export function intFlag(help: string, def: number, min = 0, max = Number.MAX_SAFE_INTEGER): Flag<number> {
  return {
    help,
    default: def,
    placeholder: 'N',
    parse: (t) => {
      if (!/^-?[0-9]+$/.test(t.trim())) return { ok: false, error: 'expected an integer' };
      const n = Number(t);
      if (n < min || n > max) return { ok: false, error: `expected an integer in [${min}, ${max}]` };
      return { ok: true, value: n };
    },
  };
}

/** A duration flag (`15secs`, `10mins`, `100ms`), held in milliseconds. */
export function durationFlag(help: string, defMs: number): Flag<number> {
  return {
    help,
    default: defMs,
    placeholder: 'DURATION',
    parse: (t) => {
      const d = parseDuration(t);
      if (!d.ok) return { ok: false, error: d.error };
      return { ok: true, value: Number(d.ns) / 1e6 };
    },
    format: (ms) => formatDuration(msToNs(ms)),
  };
}

/** A size flag as Mesos writes one (`100MB`, `2GB`, `0B`), held in bytes. */
export function bytesFlag(help: string, defBytes: number): Flag<number> {
  return {
    help,
    default: defBytes,
    placeholder: 'BYTES',
    parse: (t) => parseBytes(t),
    format: (b) => formatBytesFlag(b),
  };
}

/** A share in percent, 0 to 100, decimals allowed (`5`, `2.5`). */
export function percentFlag(help: string, def: number): Flag<number> {
  return {
    help,
    default: def,
    placeholder: 'PERCENT',
    parse: (t) => {
      if (!/^[0-9]+(\.[0-9]+)?$/.test(t.trim())) return { ok: false, error: 'expected a percentage from 0 to 100' };
      const v = Number(t);
      return v > 100 ? { ok: false, error: 'expected a percentage from 0 to 100' } : { ok: true, value: v };
    },
  };
}

export function boolFlag(help: string, def: boolean): Flag<boolean> {
  return {
    help,
    default: def,
    boolean: true,
    parse: (t) => {
      const v = t.trim().toLowerCase();
      if (v === 'true' || v === '1' || v === 'yes') return { ok: true, value: true };
      if (v === 'false' || v === '0' || v === 'no') return { ok: true, value: false };
      return { ok: false, error: 'expected true or false' };
    },
  };
}

/** Wraps a flag's parser with a further check on the parsed value. */
export function refine<T>(flag: Flag<T>, check: (v: T) => string | undefined): Flag<T> {
  return {
    ...flag,
    parse: (t) => {
      const r = flag.parse(t);
      if (!r.ok) return r;
      const problem = check(r.value);
      return problem === undefined ? r : { ok: false, error: problem };
    },
  };
}

/**
 * Every flag of a spec with its resolved value in its text form, sorted by name (GET_FLAGS):
 * derived from the spec, so a new flag shows up by itself and nothing else does. Unset
 * optional flags are left out.
 */
export function flagList<S extends FlagSpec>(spec: S, values: FlagValues<S>): Array<{ name: string; value: string }> {
  const out: Array<{ name: string; value: string }> = [];
  for (const name of Object.keys(spec).sort()) {
    const flag = spec[name] as Flag<unknown>;
    const value = (values as Record<string, unknown>)[name];
    if (value === undefined) continue;
    out.push({ name, value: flag.format === undefined ? String(value) : flag.format(value) });
  }
  return out;
}

export function envName(flag: string): string {
  return `DRYDOCK_${flag.toUpperCase()}`;
}

export function resolveFlags<S extends FlagSpec>(
  program: string,
  summary: string,
  spec: S,
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
): FlagResult<S> {
  const raw = new Map<string, { text: string; source: 'env' | 'flag'; origin: string }>();

  for (const name of Object.keys(spec)) {
    const value = env[envName(name)];
    if (value !== undefined) raw.set(name, { text: value, source: 'env', origin: envName(name) });
  }

  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') return { kind: 'help', text: helpText(program, summary, spec) };
    if (!arg.startsWith('--')) return { kind: 'error', error: `Unexpected argument '${arg}': flags look like --name=value` };
    const body = arg.slice(2);
    const eq = body.indexOf('=');
    let name = eq === -1 ? body : body.slice(0, eq);
    let text: string | undefined = eq === -1 ? undefined : body.slice(eq + 1);
    let flag = spec[name];
    if (flag === undefined && name.startsWith('no-') && text === undefined && spec[name.slice(3)]?.boolean === true) {
      name = name.slice(3);
      flag = spec[name];
      text = 'false';
    }
    if (flag === undefined) return { kind: 'error', error: `Unknown flag '--${name}' (see --help)` };
    if (text === undefined) {
      if (flag.boolean === true) text = 'true';
      else {
        const next = argv[i + 1];
        if (next === undefined || next.startsWith('--')) return { kind: 'error', error: `Flag '--${name}' needs a value` };
        text = next;
        i++;
      }
    }
    raw.set(name, { text, source: 'flag', origin: `--${name}` });
  }

  const values: Record<string, unknown> = {};
  const sources: Record<string, 'default' | 'env' | 'flag'> = {};
  for (const [name, flag] of Object.entries(spec)) {
    const given = raw.get(name);
    if (given === undefined) {
      values[name] = flag.default;
      sources[name] = 'default';
      continue;
    }
    const parsed = flag.parse(given.text);
    if (!parsed.ok) return { kind: 'error', error: `Invalid value '${given.text}' for ${given.origin}: ${parsed.error}` };
    values[name] = parsed.value;
    sources[name] = given.source;
  }
  return {
    kind: 'ok',
    values: Object.freeze(values) as FlagValues<S>,
    sources: Object.freeze(sources) as Record<keyof S, 'default' | 'env' | 'flag'>,
  };
}

export function helpText(program: string, summary: string, spec: FlagSpec): string {
  const lines = [`Usage: ${program} [--flag=value ...]`, '', summary, '', 'Flags (each also from the environment as DRYDOCK_<FLAG>):'];
  for (const [name, flag] of Object.entries(spec)) {
    const left = flag.boolean === true ? `  --[no-]${name}` : `  --${name}=${flag.placeholder ?? 'VALUE'}`;
    lines.push(left);
    lines.push(`      ${flag.help}`);
  }
  lines.push('  --help', '      Print this help and exit.');
  return lines.join('\n') + '\n';
}

/**
 * Runs a daemon's flag stage: prints help and exits 0, or prints the error and exits 1.
 * Only `main` modules call this.
 */
export function flagsOrExit<S extends FlagSpec>(program: string, summary: string, spec: S, argv: readonly string[]): FlagValues<S> {
  const r = resolveFlags(program, summary, spec, argv, process.env);
  if (r.kind === 'help') {
    process.stdout.write(r.text);
    process.exit(0);
  }
  if (r.kind === 'error') {
    process.stderr.write(`${program}: ${r.error}\n`);
    process.exit(1);
  }
  return r.values;
}

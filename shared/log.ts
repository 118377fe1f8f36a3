/**
 * Structured logging: one record per event, constant messages, data in fields.
 *
 * Every line of every daemon has the same head, in this order: `time` (ISO 8601, UTC, ms),
 * `level`, `msg`, `daemon` (master, agent, scheduler), `component` (the part of the daemon:
 * registration, drain, http, session, supervisor...; the daemon's name when none). Then the ids
 * (LOG_ID_KEYS, always under these names and in this order), then the rest of the fields. An
 * error keeps its name, message, code and stack.
 *
 * Two formats: `json` (the default: one object per line, for journald, jq and the tests) and
 * `text` (for people at a terminal: `2026-11-23T10:00:00.123Z INFO  master/registration agent
 * registered agentId=... hostname=web-1`, the stack on indented lines after it). journald (and
 * `npm start`) read stdout line by line, so a record is one write and a JSON line is never split.
 *
 * The logger is on hot paths (an agent registration storm logs a line per agent): a JSON line is
 * built as one string from pre-rendered parts (the head, the bindings), with no merged object
 * per line.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** `json`: one object per line (journald, jq); `text`: for people at a terminal. */
export type LogFormat = 'json' | 'text';

export const LOG_FORMATS: readonly LogFormat[] = ['json', 'text'];

export type LogFields = Record<string, unknown>;

/** Where records go (one call per record, without the newline); a test can collect them instead of printing. */
export type LogSink = (line: string) => void;

/**
 * The ids that follow an object across components and daemons, in the order they come in a
 * line, right after `component`. One spelling each (camelCase, as the rest of the fields): a
 * machine is its `hostname` and `ip`, Mesos' MachineID fields; a master's leadership term is its
 * `epoch`; a maintenance plan its name under `plan`.
 */
export const LOG_ID_KEYS = ['agentId', 'frameworkId', 'taskId', 'hostname', 'ip', 'plan', 'epoch'] as const;

/** The head of every line, in order; a field cannot overwrite one (it is written as `_<key>`). */
export const LOG_HEAD_KEYS = ['time', 'level', 'msg', 'daemon', 'component'] as const;

/** Per key: its id slot (>= 0), or -1 for a head key. One lookup per field. */
const KEY_KIND: Record<string, number> = Object.assign(
  Object.create(null) as Record<string, number>,
  Object.fromEntries(LOG_ID_KEYS.map((k, i) => [k, i])),
  Object.fromEntries(LOG_HEAD_KEYS.map((k) => [k, -1])),
);
const QUOTED_ID_KEYS = LOG_ID_KEYS.map((k) => `,"${k}":`);

export interface LoggerOptions {
  /** Lowest level written; default info. */
  level?: LogLevel;
  /** `master`, `agent`, `scheduler`: every daemon's main sets it. A logger without one (tests) leaves the key out. */
  daemon?: string | undefined;
  /** The part of the daemon; default the daemon's name. */
  component?: string | undefined;
  /** Fields on every line (`daemon` and `component` here count as the options of those names). */
  bindings?: LogFields;
  /** Default json. */
  format?: LogFormat;
  /** Default: stdout, a line per record. */
  sink?: LogSink;
  /** Text format only: ANSI colours. Default: with the stdout sink, when stdout is a terminal and NO_COLOR is unset (useColor); never with a given sink. */
  color?: boolean;
  /** The clock (ms since the epoch); default Date.now. */
  now?: () => number;
}

/** What a logger and its children share: the level too, so setLevel reaches every child. */
interface Shared {
  level: number;
  levelName: LogLevel;
  readonly format: LogFormat;
  readonly sink: LogSink;
  readonly color: boolean;
  readonly now: () => number;
}

let stdoutGuarded = false;
/** Lines logged in this turn of the event loop, not written yet. */
let stdoutPending = '';
const flushStdout = (): void => {
  if (stdoutPending === '') return;
  const text = stdoutPending;
  stdoutPending = '';
  process.stdout.write(text);
};
/**
 * The lines of one event-loop turn leave in one write (on setImmediate), not one write each:
 * stdout to a pipe or file is a synchronous write(2) per call, and a registration storm logs a
 * line per agent (10,000 writes measured 0.6 s of the master's event loop). Lines stay whole and
 * in order; `exit` writes what is left (stdout writes are synchronous then), so a daemon that
 * logs and exits loses nothing. Only a SIGKILL can lose the current turn's lines.
 */
const stdoutSink: LogSink = (line) => {
  if (!stdoutGuarded) {
    // A reader gone (`| head`, a journald restart) makes the write fail with EPIPE, emitted as
    // an 'error' event that would end the process: losing log lines must not stop a daemon.
    stdoutGuarded = true;
    process.stdout.on('error', () => {});
    process.on('exit', flushStdout);
  }
  if (stdoutPending === '') setImmediate(flushStdout);
  stdoutPending += line + '\n';
};

export class Logger {
  readonly #shared: Shared;
  readonly #daemon: string | undefined;
  readonly #component: string | undefined;
  /** Bindings other than daemon and component, for child(). */
  readonly #bindings: LogFields;
  /** `,"daemon":"master","component":"drain"`. */
  readonly #head: string;
  /** Bound ids by slot, or undefined when none is bound. */
  readonly #boundIds: unknown[] | undefined;
  /** Bound fields that are not ids, their keys, and their JSON (`,"k":v...`). */
  readonly #restKeys: readonly string[];
  readonly #restJson: string;

  /** `inherit` is for child(): the parent's shared state (level, sink, format), not a copy of it. */
  constructor(options: LoggerOptions = {}, inherit?: Shared) {
    const level = options.level ?? 'info';
    this.#shared = inherit ?? {
      level: RANK[level],
      levelName: level,
      format: options.format ?? 'json',
      sink: options.sink ?? stdoutSink,
      color: options.color ?? (options.sink === undefined && useColor(process.stdout.isTTY, process.env)),
      now: options.now ?? Date.now,
    };
    const { daemon, component, ...rest } = options.bindings ?? {};
    this.#daemon = options.daemon ?? (typeof daemon === 'string' ? daemon : undefined);
    this.#component = options.component ?? (typeof component === 'string' ? component : undefined);
    this.#bindings = rest;
    ({ head: this.#head, boundIds: this.#boundIds, restKeys: this.#restKeys, restJson: this.#restJson } = prerender(this.#daemon, this.#component, rest));
  }

  /** The level this logger writes from. */
  get level(): LogLevel {
    return this.#shared.levelName;
  }

  /**
   * Changes the level of this logger, of the logger it was made from and of every child of
   * either (they share it): the agent API's SET_LOGGING_LEVEL turns debug lines on for a while.
   */
  setLevel(level: LogLevel): void {
    this.#shared.level = RANK[level];
    this.#shared.levelName = level;
  }

  /**
   * A logger for one component (`{ component: 'drain' }`) or one object: its fields are on every
   * line. Made once per component, not per line.
   */
  child(bindings: LogFields): Logger {
    const { daemon, component, ...rest } = bindings;
    return new Logger(
      {
        daemon: typeof daemon === 'string' ? daemon : this.#daemon,
        component: typeof component === 'string' ? component : this.#component,
        bindings: { ...this.#bindings, ...rest },
      },
      this.#shared,
    );
  }

  debug(msg: string, fields?: LogFields): void { if (RANK.debug >= this.#shared.level) this.#write('debug', msg, fields); }
  info(msg: string, fields?: LogFields): void { if (RANK.info >= this.#shared.level) this.#write('info', msg, fields); }
  warn(msg: string, fields?: LogFields): void { if (RANK.warn >= this.#shared.level) this.#write('warn', msg, fields); }
  error(msg: string, fields?: LogFields): void { if (RANK.error >= this.#shared.level) this.#write('error', msg, fields); }

  #write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    const shared = this.#shared;
    const line = this.#json(level, msg, fields);
    // Text is rendered from the JSON line: one ordering of the keys, one handling of errors
    // and bigints, and the text path is for people, not for storms.
    shared.sink(shared.format === 'json' ? line : formatText(JSON.parse(line) as LogFields, { color: shared.color }));
  }

  #json(level: LogLevel, msg: string, fields: LogFields | undefined): string {
    let s = '{"time":"' + new Date(this.#shared.now()).toISOString() + '","level":"' + level + '","msg":' + JSON.stringify(msg) + this.#head;
    const bound = this.#boundIds;
    if (fields === undefined) {
      if (bound !== undefined) s += idsJson(bound, undefined);
      return s + this.#restJson + '}';
    }
    s += idsJson(bound, fields);
    // Bound fields, unless a field of the same name overrides one (rare: then each is checked).
    const restKeys = this.#restKeys;
    if (restKeys.length === 0) {
      // nothing bound
    } else if (!restKeys.some((k) => Object.hasOwn(fields, k))) {
      s += this.#restJson;
    } else {
      for (const k of restKeys) if (!Object.hasOwn(fields, k)) s += pairJson(KEY_KIND[k] === -1 ? '_' + k : k, this.#bindings[k]);
    }
    for (const k in fields) {
      const kind = KEY_KIND[k];
      if (kind === undefined) s += pairJson(k, fields[k]);
      else if (kind === -1) s += pairJson('_' + k, fields[k]);
    }
    return s + '}';
  }
}

function prerender(
  daemon: string | undefined,
  component: string | undefined,
  bindings: LogFields,
): { head: string; boundIds: unknown[] | undefined; restKeys: string[]; restJson: string } {
  let head = '';
  if (daemon !== undefined) head += ',"daemon":' + JSON.stringify(daemon);
  const comp = component ?? daemon;
  if (comp !== undefined) head += ',"component":' + JSON.stringify(comp);
  let boundIds: unknown[] | undefined;
  const restKeys: string[] = [];
  let restJson = '';
  for (const k of Object.keys(bindings)) {
    const v = bindings[k];
    if (v === undefined) continue;
    const kind = KEY_KIND[k];
    if (kind !== undefined && kind >= 0) {
      boundIds ??= new Array<unknown>(LOG_ID_KEYS.length).fill(undefined);
      boundIds[kind] = v;
      continue;
    }
    const key = kind === -1 ? '_' + k : k;
    restKeys.push(k);
    restJson += pairJson(key, v);
  }
  return { head, boundIds, restKeys, restJson };
}

/** The ids in their order: a field's value over a bound one. */
function idsJson(bound: unknown[] | undefined, fields: LogFields | undefined): string {
  let s = '';
  for (let i = 0; i < LOG_ID_KEYS.length; i++) {
    let v = fields === undefined ? undefined : fields[LOG_ID_KEYS[i] as string];
    if (v === undefined && bound !== undefined) v = bound[i];
    if (v === undefined) continue;
    const j = valueJson(v);
    if (j !== undefined) s += (QUOTED_ID_KEYS[i] as string) + j;
  }
  return s;
}

/** `,"key":value`, or '' for what JSON leaves out (undefined, functions). */
function pairJson(key: string, value: unknown): string {
  const j = valueJson(value);
  if (j === undefined) return '';
  let q = QUOTED_KEYS.get(key);
  if (q === undefined) {
    q = ',' + JSON.stringify(key) + ':';
    // Keys come from the code, so they are few; the bound keeps a stray dynamic one from growing it.
    if (QUOTED_KEYS.size < 4096) QUOTED_KEYS.set(key, q);
  }
  return q + j;
}

/** `,"key":` by key. */
const QUOTED_KEYS = new Map<string, string>();

function valueJson(v: unknown): string | undefined {
  switch (typeof v) {
    case 'string':
      return JSON.stringify(v);
    case 'number':
      return Number.isFinite(v) ? String(v) : 'null';
    case 'boolean':
      return v ? 'true' : 'false';
    case 'bigint':
      return '"' + v.toString() + '"';
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      if (v === null) return 'null';
      try {
        return JSON.stringify(v, replacer);
      } catch (e) {
        // A cycle, or a toJSON that throws: the line is still written, and says so.
        return JSON.stringify(`[unserializable: ${(e as Error).message}]`);
      }
  }
}

/**
 * Errors and bigints are not JSON by themselves. An error keeps its stack (an `internal
 * error` line must say where), and its code when it has one (SQLITE_READONLY, ECONNRESET).
 */
function replacer(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Error) {
    const e: Record<string, unknown> = { name: value.name, message: value.message };
    const code = (value as { code?: unknown }).code;
    if (typeof code === 'string' || typeof code === 'number') e['code'] = code;
    if (value.stack !== undefined) e['stack'] = value.stack;
    return e;
  }
  return value;
}

/**
 * Colours for people: only on a terminal, and never when NO_COLOR is set to anything
 * (https://no-color.org).
 */
export function useColor(isTTY: boolean | undefined, env: Readonly<Record<string, string | undefined>>): boolean {
  return isTTY === true && (env['NO_COLOR'] === undefined || env['NO_COLOR'] === '');
}

const LEVEL_COLOR: Record<string, string> = { debug: '\x1b[90m', info: '\x1b[32m', warn: '\x1b[33m', error: '\x1b[1;31m' };
const RESET = '\x1b[0m';
const DIM = '\x1b[2m';
const CYAN = '\x1b[36m';

/** A value written bare in text: no space, quote, `=`, backslash or control character, and not empty. */
const BARE = /^[^\s"=\\\x00-\x1f\x7f]+$/;

/**
 * One parsed JSON record as text: `time LEVEL daemon/component msg key=value ...`, the level
 * padded to five, strings with spaces (or quotes, `=`, control characters) quoted, objects as
 * compact JSON, and each error's stack frames on indented lines after it. Used by the text
 * format and by `npm start` for its children's JSON lines; `time: false` leaves the time out.
 * Pure.
 */
export function formatText(record: LogFields, o: { color: boolean; time?: boolean }): string {
  const c = o.color;
  const level = typeof record['level'] === 'string' ? record['level'] : 'info';
  const daemon = typeof record['daemon'] === 'string' ? record['daemon'] : undefined;
  const component = typeof record['component'] === 'string' ? record['component'] : undefined;
  const where = daemon === undefined ? component : component === undefined || component === daemon ? daemon : `${daemon}/${component}`;
  const msg = String(record['msg'] ?? '');
  let s = '';
  if (o.time !== false && record['time'] !== undefined) s += String(record['time']) + ' ';
  const lv = level.toUpperCase().padEnd(5);
  s += c ? (LEVEL_COLOR[level] ?? '') + lv + RESET : lv;
  if (where !== undefined) s += ' ' + (c ? CYAN + where + RESET : where);
  s += ' ' + (/[\x00-\x1f\x7f]/.test(msg) ? JSON.stringify(msg) : msg);
  let frames = '';
  for (const k of Object.keys(record)) {
    if (k === 'time' || k === 'level' || k === 'msg' || k === 'daemon' || k === 'component') continue;
    const v = record[k];
    if (v === undefined) continue;
    const err = errorShape(v);
    let text: string;
    if (err !== undefined) {
      text = quoted(err.code === undefined ? `${err.name}: ${err.message}` : `${err.name} [${String(err.code)}]: ${err.message}`);
      frames += stackFrames(err.stack);
    } else if (typeof v === 'string') text = quoted(v);
    else if (typeof v === 'object' && v !== null) text = valueJson(v) ?? 'null';
    else text = String(v);
    s += ' ' + (c ? DIM + k + '=' + RESET : k + '=') + text;
  }
  return s + frames;
}

function quoted(s: string): string {
  return BARE.test(s) ? s : JSON.stringify(s);
}

/** An Error, or what the replacer made of one (a parsed JSON line): name, message, code?, stack?. */
function errorShape(v: unknown): { name: string; message: string; code?: unknown; stack?: string } | undefined {
  if (v instanceof Error) {
    const code = (v as { code?: unknown }).code;
    return { name: v.name, message: v.message, ...(code === undefined ? {} : { code }), ...(v.stack === undefined ? {} : { stack: v.stack }) };
  }
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return undefined;
  const o = v as Record<string, unknown>;
  if (typeof o['name'] !== 'string' || typeof o['message'] !== 'string') return undefined;
  if (!Object.keys(o).every((k) => k === 'name' || k === 'message' || k === 'code' || k === 'stack')) return undefined;
  return o as { name: string; message: string; code?: unknown; stack?: string };
}

/** The frames of a stack (its `at ...` lines; the first lines repeat the message), each on a new line indented by four. */
function stackFrames(stack: unknown): string {
  if (typeof stack !== 'string') return '';
  let out = '';
  let inFrames = false;
  for (const line of stack.split('\n')) {
    const t = line.trim();
    if (!inFrames && !t.startsWith('at ')) continue;
    inFrames = true;
    if (t !== '') out += '\n    ' + t;
  }
  return out;
}

/** A logger that drops everything, for unit tests of shells. */
export const silentLogger = new Logger({ sink: () => {} });

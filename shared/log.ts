/**
 * Structured logging: one JSON object per line, constant messages, data in fields.
 * journald (and `npm start`) read stdout line by line, so a line is never split.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

const RANK: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

export type LogFields = Record<string, unknown>;

/** Where lines go; a test can collect them instead of printing. */
export type LogSink = (line: string) => void;

export class Logger {
  readonly #level: number;
  readonly #bindings: LogFields;
  readonly #sink: LogSink;

  constructor(options: { level?: LogLevel; bindings?: LogFields; sink?: LogSink } = {}) {
    this.#level = RANK[options.level ?? 'info'];
    this.#bindings = options.bindings ?? {};
    this.#sink = options.sink ?? ((line) => process.stdout.write(line + '\n'));
  }

  /** A logger for one component: its fields are added to every line. */
  child(bindings: LogFields): Logger {
    const level = (Object.keys(RANK) as LogLevel[]).find((l) => RANK[l] === this.#level) ?? 'info';
    return new Logger({ level, bindings: { ...this.#bindings, ...bindings }, sink: this.#sink });
  }

  debug(msg: string, fields?: LogFields): void { this.#write('debug', msg, fields); }
  info(msg: string, fields?: LogFields): void { this.#write('info', msg, fields); }
  warn(msg: string, fields?: LogFields): void { this.#write('warn', msg, fields); }
  error(msg: string, fields?: LogFields): void { this.#write('error', msg, fields); }

  #write(level: LogLevel, msg: string, fields: LogFields | undefined): void {
    if (RANK[level] < this.#level) return;
    const record: LogFields = { time: new Date().toISOString(), level, msg, ...this.#bindings, ...fields };
    this.#sink(JSON.stringify(record, replacer));
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
    if (typeof code === 'string') e['code'] = code;
    if (value.stack !== undefined) e['stack'] = value.stack;
    return e;
  }
  return value;
}

/** A logger that drops everything, for unit tests of shells. */
export const silentLogger = new Logger({ sink: () => {} });

/**
 * Where long-running CLI commands (`drydock run`, `drydock agent drain --wait`) meet the
 * terminal: lines out, prefixed errors, the clock, sleeping, and Ctrl-C. Commands take it as a
 * parameter so their shells can be driven without a real process.
 */

/** Exit status after Ctrl-C (128 + SIGINT, as shells report it); the table is exit-codes.ts. */
export { EXIT_INTERRUPTED } from './exit-codes.js';

export interface TerminalIo {
  /** One line on stdout. */
  out(line: string): void;
  /** One line on stderr, behind the command's prefix. */
  err(line: string): void;
  nowMs(): number;
  /**
   * Resolves after `ms`, or at once when `signal` aborts (its timer is then cleared: a long
   * --timeout must not keep the process alive after the command is done).
   */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Calls `handler` on SIGINT and SIGTERM; returns the function that stops listening. */
  onSignal(handler: (sig: NodeJS.Signals) => void): () => void;
}

/** The real process's terminal; errors go out as `<prefix>: <line>`. */
export function terminalIo(prefix: string): TerminalIo {
  return {
    out: (line) => void process.stdout.write(line + '\n'),
    err: (line) => void process.stderr.write(`${prefix}: ${line}\n`),
    nowMs: () => Date.now(),
    sleep: (ms, signal) =>
      new Promise((r) => {
        if (signal?.aborted === true) return r();
        // The listener goes with the sleep: a watch sleeps many times on one signal.
        const onAbort = (): void => {
          clearTimeout(timer);
          r();
        };
        const timer = setTimeout(() => {
          signal?.removeEventListener('abort', onAbort);
          r();
        }, ms);
        signal?.addEventListener('abort', onAbort, { once: true });
      }),
    onSignal(handler) {
      process.on('SIGINT', handler);
      process.on('SIGTERM', handler);
      return () => {
        process.off('SIGINT', handler);
        process.off('SIGTERM', handler);
      };
    },
  };
}

/** The colours the CLI paints statuses with. */
export type Colour = 'green' | 'red' | 'yellow' | 'cyan';

/** Paints text in a colour, or leaves it as it is. */
export type Paint = (text: string, colour: Colour) => string;

/** For pipes, files and NO_COLOR: text unchanged. */
export const plainPaint: Paint = (text) => text;

const SGR: Record<Colour, number> = { green: 32, red: 31, yellow: 33, cyan: 36 };

/** ANSI foreground colours, reset to the default foreground (39) so bold or background set by others survives. */
export const ansiPaint: Paint = (text, colour) => `\u001b[${SGR[colour]}m${text}\u001b[39m`;

/**
 * Whether to colour a stream: NO_COLOR (https://no-color.org) turns colour off, FORCE_COLOR on
 * (FORCE_COLOR=0 off), TERM=dumb off; otherwise only a terminal that says it has colours.
 */
export function wantsColour(stream: { isTTY?: boolean; hasColors?: () => boolean }, env: Readonly<Record<string, string | undefined>>): boolean {
  if ((env['NO_COLOR'] ?? '') !== '') return false;
  const force = env['FORCE_COLOR'];
  if (force !== undefined) return force !== '0' && force !== 'false';
  if (env['TERM'] === 'dumb') return false;
  return stream.isTTY === true && (stream.hasColors?.() ?? false);
}

/** Drops ANSI colour sequences, to measure what the terminal shows. */
export function visibleText(text: string): string {
  return text.replace(/\u001b\[[0-9;]*m/g, '');
}

/**
 * How many terminal rows `text` (lines ending in '\n') takes at `columns` wide: a line longer
 * than the width wraps. Characters are counted as one column each (the CLI writes ASCII and
 * box-drawing characters; a wide CJK name in a step would be under-counted by its extra width).
 */
export function screenRows(text: string, columns: number): number {
  if (text === '') return 0;
  const width = Math.max(1, columns);
  const lines = (text.endsWith('\n') ? text.slice(0, -1) : text).split('\n');
  return lines.reduce((n, line) => n + Math.max(1, Math.ceil([...visibleText(line)].length / width)), 0);
}

/**
 * What erases a frame of `rows` rows that was just written (the cursor at the start of the row
 * after it): cursor up to its first row, clear to the end of the screen. A frame taller than the
 * screen has scrolled out of reach, so the whole screen is cleared instead.
 */
export function eraseFrame(rows: number, screenHeight: number | undefined): string {
  if (rows <= 0) return '';
  if (screenHeight !== undefined && rows >= screenHeight) return '\u001b[H\u001b[2J';
  return `\u001b[${rows}F\u001b[J`;
}

/** A terminal that can be redrawn: what `--watch` needs beyond lines. */
export interface ScreenIo extends TerminalIo {
  /** Whether stdout is a terminal: redraw in place there; on a pipe, append. */
  readonly tty: boolean;
  /** Whether to colour stdout (see wantsColour). */
  readonly colour: boolean;
  /** The terminal's size, when stdout is one. */
  size(): { columns: number; rows: number } | undefined;
  /** Raw text on stdout, no newline added (frames and escape sequences). */
  write(text: string): void;
}

let colourDisabled = false;

/** `--no-color`: no colour on the process's screens from now on, whatever the terminal says. */
export function disableColour(): void {
  colourDisabled = true;
}

/** The real process's stdout as a screen. */
export function screenIo(prefix: string): ScreenIo {
  const out = process.stdout;
  return {
    ...terminalIo(prefix),
    tty: out.isTTY === true,
    // Asked at each use: --no-color is parsed after this screen is made.
    get colour() {
      return !colourDisabled && wantsColour(out, process.env);
    },
    // A terminal that does not know its size (a pty nobody sized) reports 0: treat it as unknown.
    size: () => (out.isTTY === true && out.columns > 0 && out.rows > 0 ? { columns: out.columns, rows: out.rows } : undefined),
    write: (text) => void out.write(text),
  };
}

/**
 * A progress bar `[████░░░░] 2/4` for `done` of `total`, `width` cells between the brackets
 * (at least 1). A total of 0 is an empty bar, not a division by zero; `done` is clamped to
 * [0, total]. Pure.
 */
export function progressBar(done: number, total: number, width: number): string {
  const cells = Math.max(1, Math.floor(width));
  const all = Math.max(0, Math.floor(total));
  const part = Math.min(all, Math.max(0, Math.floor(done)));
  const filled = all === 0 ? 0 : Math.round((part / all) * cells);
  return `[${'█'.repeat(filled)}${'░'.repeat(cells - filled)}] ${part}/${all}`;
}

/**
 * A line cut to `columns` visible characters, with `…` as the last one when cut, so a live
 * frame never wraps (a wrapped row would throw off the count of rows to erase). ANSI colour
 * sequences are kept and do not count; a cut line ends with a colour reset. Pure.
 */
export function fitLine(line: string, columns: number): string {
  const width = Math.max(1, Math.floor(columns));
  if ([...visibleText(line)].length <= width) return line;
  let out = '';
  let shown = 0;
  const parts = line.split(/(\u001b\[[0-9;]*m)/);
  for (const part of parts) {
    if (part.startsWith('\u001b[')) {
      out += part;
      continue;
    }
    for (const ch of part) {
      if (shown === width - 1) return `${out}…${line.includes('\u001b[') ? '\u001b[0m' : ''}`;
      out += ch;
      shown++;
    }
  }
  return out;
}

/**
 * A region of the terminal redrawn in place: each `draw` erases the previous frame and writes
 * the new one, each line fitted to the width. On a pipe (or with --json) nothing is erased
 * and the caller writes plain lines instead; this is the terminal half only.
 */
export class LiveFrame {
  #rows = 0;
  #last: string | undefined;

  constructor(private readonly io: Pick<ScreenIo, 'size' | 'write'>) {}

  /** Replaces what this frame showed with `lines` (unchanged frames are not rewritten). */
  draw(lines: readonly string[]): void {
    const size = this.io.size();
    const columns = size?.columns ?? 80;
    const text = lines.map((l) => `${fitLine(l, columns)}\n`).join('');
    if (text === this.#last) return;
    this.io.write(eraseFrame(this.#rows, size?.rows) + text);
    this.#rows = screenRows(text, columns);
    this.#last = text;
  }
}

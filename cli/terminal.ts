/**
 * Where long-running CLI commands (`drydock run`, `drydock agent drain --wait`) meet the
 * terminal: lines out, prefixed errors, the clock, sleeping, and Ctrl-C. Commands take it as a
 * parameter so their shells can be driven without a real process.
 */

/** Exit status after Ctrl-C (128 + SIGINT, as shells report it). */
export const EXIT_INTERRUPTED = 130;

export interface TerminalIo {
  /** One line on stdout. */
  out(line: string): void;
  /** One line on stderr, behind the command's prefix. */
  err(line: string): void;
  nowMs(): number;
  sleep(ms: number): Promise<void>;
  /** Calls `handler` on SIGINT and SIGTERM; returns the function that stops listening. */
  onSignal(handler: (sig: NodeJS.Signals) => void): () => void;
}

/** The real process's terminal; errors go out as `<prefix>: <line>`. */
export function terminalIo(prefix: string): TerminalIo {
  return {
    out: (line) => void process.stdout.write(line + '\n'),
    err: (line) => void process.stderr.write(`${prefix}: ${line}\n`),
    nowMs: () => Date.now(),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
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

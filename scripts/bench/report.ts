/**
 * Benchmark results: one row per figure, rendered as a text table per benchmark and as
 * JSON for docs/benchmarks.md. Pure: rows in, strings out.
 */

/** A goal a figure is held to, and whether it was met. */
export interface Goal {
  /** As a reader would write it: `< 10 s`, `< 60 MB`. */
  text: string;
  pass: boolean;
}

/** One measured figure, with what it is compared with. */
export interface ResultRow {
  benchmark: string;
  /** What was measured, e.g. `launch p50`. */
  metric: string;
  value: number;
  unit: string;
  /** The floor: the same thing done with nothing in between (a bare spawn, a raw echo). */
  floor?: { label: string; value: number };
  /** value / floor.value, when both are known. */
  ratio?: number;
  goal?: Goal;
  /** Anything a reader needs to interpret the figure. */
  note?: string;
}

/** What one benchmark returns: its rows, and the error that stopped it, if any. */
export interface BenchResult {
  benchmark: string;
  rows: ResultRow[];
  /** Set when the benchmark failed part-way; rows hold what was measured before. */
  error?: string;
  /** Free-form context: sample counts, flags, machine facts. */
  context?: Record<string, unknown>;
}

/** A number with a sensible number of digits for its size. */
export function formatNumber(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const a = Math.abs(v);
  if (a >= 100) return v.toFixed(0);
  if (a >= 10) return v.toFixed(1);
  return v.toFixed(2);
}

function cellsOf(row: ResultRow): string[] {
  const figure = `${row.metric} = ${formatNumber(row.value)} ${row.unit}`.trimEnd();
  const floor = row.floor === undefined ? '-' : `${row.floor.label} = ${formatNumber(row.floor.value)} ${row.unit}`.trimEnd();
  const ratio = row.ratio === undefined ? '-' : `${formatNumber(row.ratio)}x`;
  const goal = row.goal === undefined ? '-' : row.goal.text;
  const noteParts = [row.goal === undefined ? '' : row.goal.pass ? 'PASS' : 'FAIL', row.note ?? ''].filter((s) => s !== '');
  return [row.benchmark, figure, floor, ratio, goal, noteParts.length === 0 ? '-' : noteParts.join(': ')];
}

/** A fixed-width text table of one benchmark's rows, with its error (if any) underneath. */
export function renderTable(result: BenchResult): string {
  const header = ['benchmark', 'figure', 'floor', 'ratio', 'goal', 'note'];
  const rows = [header, ...result.rows.map(cellsOf)];
  const widths = header.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  const fmt = (r: string[]): string => r.map((c, i) => c.padEnd(widths[i] ?? 0)).join(' | ').trimEnd();
  const lines = [fmt(header), widths.map((w) => '-'.repeat(w)).join('-|-'), ...rows.slice(1).map(fmt)];
  if (result.rows.length === 0) lines.push(`${result.benchmark}: no figures`);
  if (result.error !== undefined) lines.push(`${result.benchmark} FAILED: ${result.error}`);
  return lines.join('\n');
}

/** Every row's goal met and no benchmark failed. */
export function allGoalsMet(results: readonly BenchResult[]): boolean {
  return results.every((r) => r.error === undefined && r.rows.every((row) => row.goal === undefined || row.goal.pass));
}

/** The floor and ratio fields of a row comparing `value` with a floor (no ratio when the floor is 0). */
export function against(label: string, floorValue: number, value: number): Pick<ResultRow, 'floor' | 'ratio'> {
  const r = Number.isFinite(value) && Number.isFinite(floorValue) && floorValue !== 0 ? value / floorValue : undefined;
  return { floor: { label, value: floorValue }, ...(r === undefined ? {} : { ratio: r }) };
}

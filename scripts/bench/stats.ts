/**
 * Sample statistics for benchmark figures. Pure: plain numbers in, plain numbers out.
 */

/** Summary of a set of samples (milliseconds, bytes, whatever the caller measured). */
export interface Summary {
  n: number;
  min: number;
  p50: number;
  p99: number;
  max: number;
  mean: number;
}

/**
 * The q-quantile (0 <= q <= 1) by the nearest-rank method: always one of the samples, so a
 * p99 of 50 samples is the largest but one, never an interpolation nobody measured.
 */
export function quantile(samples: readonly number[], q: number): number {
  if (samples.length === 0) return Number.NaN;
  const sorted = [...samples].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(q * sorted.length)));
  return sorted[rank - 1]!;
}

/** n, min, p50, p99, max and mean of the samples; NaN everywhere when there are none. */
export function summarize(samples: readonly number[]): Summary {
  if (samples.length === 0) return { n: 0, min: Number.NaN, p50: Number.NaN, p99: Number.NaN, max: Number.NaN, mean: Number.NaN };
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (const s of samples) {
    if (s < min) min = s;
    if (s > max) max = s;
    sum += s;
  }
  return { n: samples.length, min, p50: quantile(samples, 0.5), p99: quantile(samples, 0.99), max, mean: sum / samples.length };
}

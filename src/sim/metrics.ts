/**
 * Small statistics over simulation outputs.
 *
 * @module
 * @internal
 */
import type { Percentiles } from './result.js';

/** @internal p50 / p90 / p99 (nearest rank) and mean of `values`; zeros when empty. O(n log n). */
export function percentiles(values: ArrayLike<number>): Percentiles {
  const n = values.length;
  if (n === 0) return { p50: 0, p90: 0, p99: 0, mean: 0 };
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (let i = 0; i < n; i++) sum += sorted[i]!;
  const rank = (p: number): number => sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))]!;
  return { p50: rank(0.5), p90: rank(0.9), p99: rank(0.99), mean: sum / n };
}

/** @internal max / mean and standard deviation / mean of `values` (0 and 0 when the mean is 0). */
export function spread(values: readonly number[]): { maxOverMean: number; cv: number } {
  const n = values.length;
  if (n === 0) return { maxOverMean: 0, cv: 0 };
  let sum = 0;
  let max = Number.NEGATIVE_INFINITY;
  for (const v of values) {
    sum += v;
    if (v > max) max = v;
  }
  const mean = sum / n;
  if (mean === 0) return { maxOverMean: 0, cv: 0 };
  let squares = 0;
  for (const v of values) squares += (v - mean) ** 2;
  return { maxOverMean: max / mean, cv: Math.sqrt(squares / n) / mean };
}

/**
 * Shrinks a long time series for drawing while keeping its peaks.
 *
 * @module
 * @internal
 */

/** @internal A series as parallel arrays: `x` in sample indices, `y` the values (`NaN` = gap). */
export interface SeriesPoints {
  readonly x: readonly number[];
  readonly y: readonly number[];
}

/**
 * @internal At most `maxPoints` points of `values`: unchanged when short enough, otherwise one
 * point per bucket of consecutive samples at the bucket's centre, holding the bucket's largest
 * finite value (so a brief spike is never averaged away). Non-finite samples become `NaN`, and a
 * bucket without a finite sample is `NaN`. Cost: O(values.length).
 */
export function downsampleMax(values: readonly number[], maxPoints: number): SeriesPoints {
  const n = values.length;
  const limit = Math.max(1, Math.floor(maxPoints));
  const x: number[] = [];
  const y: number[] = [];
  if (n <= limit) {
    for (let i = 0; i < n; i++) {
      const v = values[i]!;
      x.push(i);
      y.push(Number.isFinite(v) ? v : Number.NaN);
    }
    return { x, y };
  }
  const size = n / limit;
  for (let b = 0; b < limit; b++) {
    const from = Math.floor(b * size);
    const to = b === limit - 1 ? n : Math.floor((b + 1) * size);
    let peak = Number.NEGATIVE_INFINITY;
    for (let i = from; i < to; i++) {
      const v = values[i]!;
      if (Number.isFinite(v) && v > peak) peak = v;
    }
    x.push((from + to - 1) / 2);
    y.push(peak === Number.NEGATIVE_INFINITY ? Number.NaN : peak);
  }
  return { x, y };
}

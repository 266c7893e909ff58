import { describe, expect, it } from 'vitest';
import { downsampleMax } from '../../../src/sim/report/downsample.js';

describe('downsampleMax', () => {
  it('keeps a short series as it is, non-finite values as gaps', () => {
    const { x, y } = downsampleMax([1, Number.NaN, 3, Number.POSITIVE_INFINITY], 10);

    expect(x).toEqual([0, 1, 2, 3]);
    expect(y).toEqual([1, Number.NaN, 3, Number.NaN]);
  });

  it('cuts a long series to the limit, keeping the peak of each bucket', () => {
    const values = Array.from({ length: 10_000 }, (_, i) => (i === 5003 ? 99 : i % 7));
    const { x, y } = downsampleMax(values, 300);

    expect(x).toHaveLength(300);
    expect(Math.max(...y)).toBe(99);
    expect(y.every((v) => v === 99 || v === 6)).toBe(true);
    expect(x[0]).toBeGreaterThanOrEqual(0);
    expect(x[x.length - 1]).toBeLessThanOrEqual(9999);
  });

  it('returns nothing for an empty series', () => {
    expect(downsampleMax([], 300)).toEqual({ x: [], y: [] });
  });
});

import { describe, expect, it } from 'vitest';
import { linearScale, logScale, niceStep, shouldUseLog } from '../../../src/sim/report/scale.js';

const label = (v: number): string => String(v);

describe('report scales', () => {
  it('picks round steps of 1, 2 or 5 × 10ⁿ', () => {
    expect(niceStep(1, 5)).toBe(0.2);
    expect(niceStep(2379, 4)).toBe(1000);
    expect(niceStep(73, 5)).toBe(20);
    expect(niceStep(0, 5)).toBe(1);
  });

  it('rounds a linear axis up to a whole step and maps it onto the pixels', () => {
    const scale = linearScale(2379, 100, 400, label, 4);

    expect(scale.domain).toEqual([0, 3000]);
    expect(scale.ticks.map((t) => t.value)).toEqual([0, 1000, 2000, 3000]);
    expect(scale.map(1500)).toBe(250);
    expect(scale.map(-5)).toBe(100);
    expect(scale.map(10_000)).toBe(400);
  });

  it('falls back to 0 … 1 for a zero or non-finite maximum', () => {
    expect(linearScale(0, 0, 10, label).domain).toEqual([0, 1]);
    expect(linearScale(Number.NaN, 0, 10, label).domain).toEqual([0, 1]);
  });

  it('spans whole decades on a log axis, labelling each', () => {
    const scale = logScale(30, 30_600, 0, 500, label);

    expect(scale.domain).toEqual([10, 100_000]);
    expect(scale.ticks.filter((t) => t.label !== undefined).map((t) => t.value)).toEqual([
      10, 100, 1000, 10_000, 100_000,
    ]);
    expect(scale.map(1000)).toBeCloseTo(250);
    expect(scale.map(0)).toBe(0);
  });

  it('labels 2 and 5 too on a log axis of at most two decades', () => {
    const scale = logScale(3, 90, 0, 100, label);
    expect(scale.ticks.filter((t) => t.label !== undefined).map((t) => t.value)).toEqual([
      1, 2, 5, 10, 20, 50, 100,
    ]);
  });

  it('asks for a log axis only when positive values span more than 50×', () => {
    expect(shouldUseLog([30, 9000])).toBe(true);
    expect(shouldUseLog([100, 5000])).toBe(false);
    expect(shouldUseLog([0, 100, 4000])).toBe(false);
    expect(shouldUseLog([Number.NaN, 1, 1000])).toBe(true);
    expect(shouldUseLog([5])).toBe(false);
  });
});

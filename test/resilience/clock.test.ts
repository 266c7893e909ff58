import { describe, expect, it } from 'vitest';
import { monotonicClock } from '../../src/index.js';

describe('monotonicClock', () => {
  it('returns finite milliseconds that never go backwards', () => {
    let previous = monotonicClock();
    for (let i = 0; i < 1000; i++) {
      const next = monotonicClock();
      expect(Number.isFinite(next)).toBe(true);
      expect(next).toBeGreaterThanOrEqual(previous);
      previous = next;
    }
  });
});

/**
 * `LoadPolls`: poll times on the grid `k × interval`, and the skip over an idle stretch to the
 * last poll before the next arrival.
 */
import { describe, expect, it } from 'vitest';
import { LoadPolls } from '../../src/sim/load-polls.js';

describe('LoadPolls', () => {
  it('while requests are in flight, polls every interval from 0', () => {
    const polls = new LoadPolls(10_000);
    expect([polls.advance(0), polls.advance(0), polls.advance(0)]).toEqual([
      10_000, 20_000, 30_000,
    ]);
  });

  it('over an idle stretch, jumps to the last poll strictly before the next arrival', () => {
    const polls = new LoadPolls(10_000);
    expect(polls.advance(3_600_005)).toBe(3_600_000);
    // After it, the grid goes on: the next poll follows the arrival.
    expect(polls.advance(0)).toBe(3_610_000);
  });

  it('a poll due at the very time of the arrival is not skipped: it follows the arrival', () => {
    const polls = new LoadPolls(10_000);
    expect(polls.advance(3_600_000)).toBe(3_590_000);
    expect(polls.advance(0)).toBe(3_600_000);
  });

  it('an arrival before the next poll changes nothing', () => {
    const polls = new LoadPolls(10_000);
    expect(polls.advance(15_000)).toBe(10_000);
    expect(polls.advance(19_999)).toBe(20_000);
  });

  it('keeps exact multiples for a fractional interval, and stops when nothing will arrive', () => {
    const polls = new LoadPolls(0.1);
    expect(polls.advance(1e6)).toBe(9_999_999 * 0.1);
    expect(polls.advance(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
  });
});

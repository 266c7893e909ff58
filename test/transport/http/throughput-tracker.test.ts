import { describe, expect, it } from 'vitest';
import {
  MIN_RATE_INTERVAL_MS,
  ThroughputTracker,
} from '../../../src/transport/http/throughput-tracker.js';

describe('ThroughputTracker', () => {
  it('has no rate on the first reading, then tokens per second since the last one', () => {
    const tracker = new ThroughputTracker(8);

    expect(tracker.observe('w', 100, 0)).toBeNaN();
    expect(tracker.observe('w', 600, 2_000)).toBe(250);
    expect(tracker.observe('w', 600, 4_000)).toBe(0);
  });

  it('keeps the baseline and repeats the last rate for readings closer than the minimum interval', () => {
    const tracker = new ThroughputTracker(8);
    tracker.observe('w', 0, 0);
    tracker.observe('w', 1_000, 1_000); // 1,000 tok/s

    expect(tracker.observe('w', 1_900, 1_000 + MIN_RATE_INTERVAL_MS / 2)).toBe(1_000);
    // The baseline is still the reading at 1,000 ms.
    expect(tracker.observe('w', 1_500, 1_000 + MIN_RATE_INTERVAL_MS)).toBe(500);
  });

  it('starts over when the counter goes down (engine restart) or the clock goes back', () => {
    const tracker = new ThroughputTracker(8);
    tracker.observe('w', 5_000, 0);

    expect(tracker.observe('w', 10, 2_000)).toBeNaN();
    expect(tracker.observe('w', 2_010, 4_000)).toBe(1_000);
    expect(tracker.observe('w', 3_000, 1_000)).toBeNaN();
  });

  it('remembers at most maxEntries keys, forgetting the least recently observed', () => {
    const tracker = new ThroughputTracker(2);
    tracker.observe('a', 0, 0);
    tracker.observe('b', 0, 0);
    tracker.observe('a', 0, 10); // a is now the most recent
    tracker.observe('c', 0, 0); // evicts b

    expect(tracker.size).toBe(2);
    expect(tracker.observe('a', 2_000, 2_000)).toBe(1_000);
    expect(tracker.observe('b', 2_000, 2_000)).toBeNaN();
  });

  it('stays bounded under churn of many keys', () => {
    const tracker = new ThroughputTracker(100);

    for (let i = 0; i < 10_000; i++) tracker.observe(`http://w${i}:8000`, i, i);

    expect(tracker.size).toBe(100);
  });

  it('tracks nothing with maxEntries 0', () => {
    const tracker = new ThroughputTracker(0);
    tracker.observe('w', 0, 0);

    expect(tracker.observe('w', 1_000, 5_000)).toBeNaN();
    expect(tracker.size).toBe(0);
  });
});

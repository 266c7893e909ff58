/**
 * `RunTally`: the counters of one run and the `PolicyRun` assembled from them.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { percentiles } from '../../src/sim/metrics.js';
import { quantileSteps, RunTally } from '../../src/sim/run-tally.js';
import { runs } from '../helpers/fc-settings.js';

const end = {
  policy: 'p',
  cachedTokens: 30,
  promptTokens: 120,
  precision: 0.5,
  timeline: { intervalMs: 10, inFlight: [[1], [0]], waiting: [[0], [0]], running: [[1], [0]] },
  eventsProcessed: 9,
  timestampOffsetMs: 4,
};

describe('RunTally', () => {
  it('assembles the result from sends, completions and what the run reports at the end', () => {
    const tally = new RunTally(3, 2);
    expect(tally.started).toBe(false);
    tally.onSend(100, 0.002, 0, 300);
    expect(tally.started).toBe(true);
    tally.onSend(150, 0.004, 1, 100);
    tally.onSend(200, 0.003, undefined, 50);
    expect(tally.sent).toBe(3);
    tally.onComplete(1_100, 100, 300, 50);
    tally.onComplete(2_100, 150, 250, 150);
    const run = tally.result(end);
    expect(run).toMatchObject({
      policy: 'p',
      requests: 3,
      completed: 2,
      hitRate: 0.25,
      makespanMs: 2_000,
      precision: 0.5,
      timeline: end.timeline,
      eventsProcessed: 9,
      timestampOffsetMs: 4,
      throughput: { requestsPerSecond: 1, outputTokensPerSecond: 100 },
      load: { perWorker: [1, 1], maxOverMean: 1, cv: 0 },
      work: { perWorker: [300, 100], maxOverMean: 1.5, cv: 0.5 },
    });
    expect(run.ttftMs.p50).toBe(100);
    expect(run.ttftMs.p99).toBe(200);
    expect(run.ttftMs.mean).toBe(150);
    expect(run.routingMicrosPerRequest).toBeCloseTo(3, 9);
  });

  it('reports zeros, not NaN, for a run that sent nothing', () => {
    const run = new RunTally(0, 1).result({ ...end, cachedTokens: 0, promptTokens: 0 });
    expect(run.makespanMs).toBe(0);
    expect(run.hitRate).toBe(0);
    expect(run.routingMicrosPerRequest).toBe(0);
    expect(run.throughput).toEqual({
      requestsPerSecond: 0,
      outputTokensPerSecond: 0,
      steadyRequestsPerSecond: 0,
    });
    expect(run.ttftMs).toEqual({ p50: 0, p90: 0, p99: 0, mean: 0 });
  });
});

describe('quantileSteps', () => {
  it('gives 101 ascending nearest-rank percentiles from the smallest to the largest value', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 1e6, noNaN: true }), { minLength: 1, maxLength: 500 }),
        (values) => {
          const q = quantileSteps(values, 100);
          expect(q).toHaveLength(101);
          for (let i = 1; i < q.length; i++) expect(q[i]!).toBeGreaterThanOrEqual(q[i - 1]!);
          expect(q[0]).toBe(Math.min(...values));
          expect(q[100]).toBe(Math.max(...values));
          const p = percentiles(values);
          expect([q[50], q[90], q[99]]).toEqual([p.p50, p.p90, p.p99]);
        },
      ),
      runs(200, 1_000),
    );
  });

  it('is empty without values, and the run carries it', () => {
    expect(quantileSteps([], 100)).toEqual([]);
    const tally = new RunTally(2, 1);
    tally.onSend(0, 0, 0, 10);
    tally.onComplete(10, 0, 4, 1);
    expect(tally.result(end).ttftQuantilesMs).toEqual(new Array(101).fill(4));
  });

  it('steady throughput: completions over the middle half of the arrivals, without the ramp or the drain', () => {
    // 100 arrivals, one per 100 ms (0 … 9.9 s); the middle half runs from 2.5 s to 7.5 s.
    const tally = new RunTally(100, 1);
    for (let i = 0; i < 100; i++) tally.onArrival(i * 100);
    // A slow start (one completion in the first 2.5 s), 20 per second in the window, and a
    // long drain after the last arrival: the steady rate sees only the window.
    tally.onComplete(2_000, 0, 10, 1);
    for (let i = 0; i < 100; i++) tally.onComplete(2_500 + i * 50, 0, 10, 1);
    for (let i = 0; i < 40; i++) tally.onComplete(20_000 + i, 0, 10, 1);
    const run = tally.result(end);
    expect(run.throughput.steadyRequestsPerSecond).toBeCloseTo(20, 9);
    // Over the makespan the drain weighs in: far below.
    expect(run.throughput.requestsPerSecond).toBeLessThan(8);
  });
});

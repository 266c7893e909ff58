/**
 * `RunTally`: the counters of one run and the `PolicyRun` assembled from them.
 */
import { describe, expect, it } from 'vitest';
import { RunTally } from '../../src/sim/run-tally.js';

const end = {
  policy: 'p',
  cachedTokens: 30,
  promptTokens: 120,
  precision: 0.5,
  timeline: { intervalMs: 10, inFlight: [[1], [0]] },
  eventsProcessed: 9,
  timestampOffsetMs: 4,
};

describe('RunTally', () => {
  it('assembles the result from sends, completions and what the run reports at the end', () => {
    const tally = new RunTally(3, 2);
    expect(tally.started).toBe(false);
    tally.onSend(100, 0.002, 0);
    expect(tally.started).toBe(true);
    tally.onSend(150, 0.004, 1);
    tally.onSend(200, 0.003, undefined);
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
    expect(run.throughput).toEqual({ requestsPerSecond: 0, outputTokensPerSecond: 0 });
    expect(run.ttftMs).toEqual({ p50: 0, p90: 0, p99: 0, mean: 0 });
  });
});

/**
 * Idle simulated time costs nothing: trace timestamps are rebased to 0, and load polls and
 * timeline samples skip the stretches in which no request is in flight — without changing what
 * the policies see or what is reported.
 */
import { describe, expect, it } from 'vitest';
import {
  comparePolicies,
  formatComparison,
  type PolicyRun,
  parseMooncakeTrace,
  simulate,
  type Workload,
} from '../../src/sim/index.js';

const HOUR = 3_600_000;
const EPOCH = 1_700_000_000_000;

/** Three bursts of four requests, `gap` ms apart, the first at `start`. */
function bursts(start: number, gap: number): Workload {
  const lines: string[] = [];
  for (let burst = 0; burst < 3; burst++) {
    for (let i = 0; i < 4; i++) {
      lines.push(
        JSON.stringify({
          timestamp: start + burst * gap + i * 700,
          input_length: 1024,
          output_length: 8,
          hash_ids: [burst, 100 + burst * 10 + i],
        }),
      );
    }
  }
  return parseMooncakeTrace(lines.join('\n'));
}

/** What a run reports about routing and latency, without wall-clock time and the offset. */
const figures = ({ routingMicrosPerRequest: _, timestampOffsetMs: __, ...rest }: PolicyRun) => rest;

/** What routing decided, whatever the span of simulated time. */
const routing = (run: PolicyRun) => ({
  hitRate: run.hitRate,
  ttftMs: run.ttftMs,
  load: run.load,
  precision: run.precision,
  completed: run.completed,
});

describe('idle simulated time', () => {
  it('a trace at epoch-ms timestamps with hour-long gaps runs in a bounded number of events, ' +
    'with the figures of the same trace rebased to 0', async () => {
    for (const policy of ['least_load', 'cache_aware', 'power_of_two'] as const) {
      const epoch = await simulate({
        workload: bursts(EPOCH, HOUR),
        policy,
        arrivals: { kind: 'trace' },
      });
      const zero = await simulate({
        workload: bursts(0, HOUR),
        policy,
        arrivals: { kind: 'trace' },
      });
      expect(epoch.timestampOffsetMs).toBe(EPOCH);
      expect(zero.timestampOffsetMs).toBe(0);
      expect(figures(epoch)).toEqual(figures(zero));
      // 12 requests, their engine steps, and a few polls and samples per burst. Visiting every
      // poll of the two idle hours alone would take 720 events.
      expect(epoch.eventsProcessed).toBeLessThan(300);
    }
  }, 10_000);

  it('bursts 1 h or 10 h apart route identically, and the longer gaps cost no more events', async () => {
    for (const policy of ['least_load', 'cache_aware'] as const) {
      const short = await simulate({
        workload: bursts(0, HOUR),
        policy,
        arrivals: { kind: 'trace' },
      });
      const long = await simulate({
        workload: bursts(0, 10 * HOUR),
        policy,
        arrivals: { kind: 'trace' },
      });
      expect(routing(long)).toEqual(routing(short));
      expect(long.makespanMs).toBeCloseTo(short.makespanMs + 18 * HOUR, 6);
      expect(long.eventsProcessed).toBeLessThanOrEqual(short.eventsProcessed);
    }
  });

  it('the timeline of an idle stretch holds zeros on the same uniform grid', async () => {
    const run = await simulate({
      workload: bursts(0, HOUR),
      policy: 'round_robin',
      arrivals: { kind: 'trace' },
    });
    const { intervalMs, inFlight } = run.timeline;
    const samples = inFlight[0]!.length;
    // Samples cover the run from the first arrival to the last completion, one interval apart.
    expect(Math.abs(samples * intervalMs - run.makespanMs)).toBeLessThanOrEqual(2 * intervalMs);
    // Mid-gap, nothing is in flight anywhere.
    const middle = Math.floor((1.5 * HOUR) / intervalMs);
    expect(inFlight.map((series) => series[middle])).toEqual(inFlight.map(() => 0));
  });

  it('comparePolicies and the table state the offset that rebasing removed', async () => {
    const c = await comparePolicies({ workload: bursts(EPOCH, HOUR), policies: ['round_robin'] });
    expect(c.timestampOffsetMs).toBe(EPOCH);
    expect(c.arrivals).toBe(
      'trace timestamps, rebased: 1,700,000,000,000 ms subtracted (first arrival at 0)',
    );
    expect(formatComparison(c)).toContain(
      'arrivals  trace timestamps, rebased: 1,700,000,000,000 ms subtracted (first arrival at 0)',
    );
    const plain = await comparePolicies({ workload: bursts(0, HOUR), policies: ['round_robin'] });
    expect(plain.timestampOffsetMs).toBe(0);
    expect(plain.arrivals).toBe('trace timestamps');
  });
});

/**
 * `Timeline`: samples per worker at a doubling interval, and the bulk zeros of an idle stretch,
 * which must equal taking each of those samples one by one.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { simulate } from '../../src/sim/simulation.js';
import { MAX_SAMPLES, Timeline } from '../../src/sim/timeline.js';
import { multiTurnChat } from '../../src/sim/workloads/index.js';
import { runs } from '../helpers/fc-settings.js';

/** A timeline with `busy` samples taken (values vary by worker and sample), and its next due time. */
function started(workers: number, intervalMs: number, busy: number): [Timeline, number] {
  const timeline = new Timeline(workers, intervalMs);
  let next = timeline.record(0, (w) => w + 1);
  for (let i = 1; i < busy; i++) next = timeline.record(next, (w) => (w * 7 + i) % 5);
  return [timeline, next];
}

describe('Timeline', () => {
  it('halves the series and doubles the interval when they reach MAX_SAMPLES', () => {
    const [timeline] = started(2, 250, MAX_SAMPLES);
    expect(timeline.intervalMs).toBe(500);
    expect(timeline.series[0]).toHaveLength(MAX_SAMPLES / 2);
  });

  it('skipIdle records exactly the zeros that sampling every due time would have', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 4 }),
        fc.integer({ min: 1, max: 1_000 }),
        fc.integer({ min: 1, max: 2_500 }),
        fc.double({ min: 0, max: 1e8, noNaN: true }),
        (workers, intervalMs, busy, gap) => {
          const [skipping, due] = started(workers, intervalMs, busy);
          const [visiting] = started(workers, intervalMs, busy);
          const until = due + gap;
          let next = due;
          while (next < until) next = visiting.record(next, () => 0);
          expect(skipping.skipIdle(until)).toBe(next);
          expect(skipping.intervalMs).toBe(visiting.intervalMs);
          expect(skipping.series).toEqual(visiting.series);
        },
      ),
      runs(200, 1_000),
    );
  });

  it('a sample due exactly at the end of the idle stretch is left to be taken', () => {
    const [timeline, due] = started(1, 100, 3);
    expect(timeline.skipIdle(due + 300)).toBe(due + 300);
    expect(timeline.series[0]).toEqual([1, 1, 2, 0, 0, 0]);
  });

  it('an idle stretch without end takes no sample', () => {
    const [timeline] = started(2, 100, 3);
    expect(timeline.skipIdle(Number.POSITIVE_INFINITY)).toBe(Number.POSITIVE_INFINITY);
    expect(timeline.series[0]).toHaveLength(3);
  });

  it('keeps one series per worker and channel, each halved on its own (larger kept)', () => {
    const timeline = new Timeline(2, 10, 3);
    let next = 0;
    for (let i = 0; i < MAX_SAMPLES; i++)
      next = timeline.record(next, (w, c) => (i % 2) * (c + 1) + w);
    expect(timeline.series).toBe(timeline.channel(0));
    expect(timeline.channel(2)[0]).toHaveLength(MAX_SAMPLES / 2);
    expect(timeline.channel(2)[1]!.every((v) => v === 4)).toBe(true);
    expect(timeline.channel(1)[0]!.every((v) => v === 2)).toBe(true);
    expect(() => timeline.channel(3)).toThrow(TypeError);
  });

  it('a run samples waiting and running, which add up to in flight', async () => {
    const run = await simulate({
      workload: multiTurnChat({ users: 16, rounds: 3 }),
      policy: 'round_robin',
      fleet: { workers: 3, maxRunning: 4 },
      arrivals: { kind: 'poisson', ratePerSecond: 200 },
    });
    const { inFlight, waiting, running } = run.timeline;
    expect(inFlight[0]!.length).toBeLessThan(MAX_SAMPLES);
    let queued = 0;
    inFlight.forEach((series, w) => {
      series.forEach((v, i) => {
        expect(waiting[w]![i]! + running[w]![i]!).toBe(v);
        expect(running[w]![i]!).toBeLessThanOrEqual(4);
        queued += waiting[w]![i]!;
      });
    });
    expect(queued).toBeGreaterThan(0);
  });
});

/**
 * `ArrivalSchedule`: the arrivals known before a run, in time order, with trace timestamps
 * rebased so the first is at 0.
 */
import { describe, expect, it } from 'vitest';
import { ArrivalSchedule } from '../../src/sim/arrival-schedule.js';
import type { SimRequest } from '../../src/sim/workload.js';

function requests(timestamps: readonly (number | undefined)[]): SimRequest[] {
  return timestamps.map((timestamp, id) => ({
    id,
    promptLength: 1,
    outputLength: 1,
    tokens: () => new Uint32Array(1),
    ...(timestamp === undefined ? {} : { timestamp }),
  }));
}

function drain(schedule: ArrivalSchedule): [number, number][] {
  const out: [number, number][] = [];
  while (schedule.nextTime !== Number.POSITIVE_INFINITY) {
    const time = schedule.nextTime;
    out.push([schedule.take(), time]);
  }
  return out;
}

describe('ArrivalSchedule', () => {
  it('rebases a trace to its earliest timestamp, then applies the speedup', () => {
    const schedule = ArrivalSchedule.of(
      { kind: 'trace', speedup: 2 },
      requests([1_700_000_000_400, 1_700_000_000_000, 1_700_000_001_000]),
      1,
    );
    expect(schedule.offsetMs).toBe(1_700_000_000_000);
    expect(drain(schedule)).toEqual([
      [1, 0],
      [0, 200],
      [2, 500],
    ]);
  });

  it('orders equal times by request id', () => {
    const schedule = ArrivalSchedule.of({ kind: 'trace' }, requests([50, 10, 50, 10]), 1);
    expect(drain(schedule).map(([id]) => id)).toEqual([1, 3, 0, 2]);
  });

  it('a trace request without a timestamp arrives at 0, and then nothing is subtracted', () => {
    const schedule = ArrivalSchedule.of({ kind: 'trace' }, requests([5_000, undefined]), 1);
    expect(schedule.offsetMs).toBe(0);
    expect(drain(schedule)).toEqual([
      [1, 0],
      [0, 5_000],
    ]);
  });

  it('schedules the first `concurrency` requests of a closed loop at 0, and nothing to rebase', () => {
    const schedule = ArrivalSchedule.of(
      { kind: 'closed_loop', concurrency: 2 },
      requests([9, 9, 9]),
      1,
    );
    expect(schedule.size).toBe(2);
    expect(schedule.offsetMs).toBe(0);
    expect(drain(schedule)).toEqual([
      [0, 0],
      [1, 0],
    ]);
  });

  it('a Poisson schedule starts at 0 and never goes back in time', () => {
    const times = drain(
      ArrivalSchedule.of({ kind: 'poisson', ratePerSecond: 50 }, requests(Array(100)), 7),
    ).map(([, t]) => t);
    expect(times[0]).toBe(0);
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeGreaterThanOrEqual(times[i - 1]!);
  });
});

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const down = { status: 'not_ready', open: false, removed: false, load: 0 } as const;

describe('round_robin', () => {
  it('visits the workers in list order, one request each', async () => {
    const { workers } = await buildFleet([ready, ready, ready]);
    const policy = createPolicy('round_robin');

    const picks = Array.from({ length: 7 }, () => workers.indexOf(policy.select(workers)!));

    expect(picks).toEqual([0, 1, 2, 0, 1, 2, 0]);
  });

  it('skips an unavailable worker and keeps the rotation for the others', async () => {
    const { workers } = await buildFleet([ready, down, ready, ready]);
    const policy = createPolicy('round_robin');

    const picks = Array.from({ length: 6 }, () => workers.indexOf(policy.select(workers)!));

    expect(picks).toEqual([0, 2, 3, 0, 2, 3]);
  });

  it('two instances keep separate counters', async () => {
    const { workers } = await buildFleet([ready, ready]);
    const a = createPolicy('round_robin');
    const b = createPolicy('round_robin');

    expect([a.select(workers), a.select(workers), b.select(workers)]).toEqual([
      workers[0],
      workers[1],
      workers[0],
    ]);
  });

  it('reset restarts the rotation at the first worker', async () => {
    const { workers } = await buildFleet([ready, ready, ready]);
    const policy = createPolicy('round_robin');
    policy.select(workers);
    policy.reset();

    expect(policy.select(workers)).toBe(workers[0]);
  });

  it('covers a stable set exactly evenly: every window of n requests picks each worker once', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 5 }),
        async (n, rounds) => {
          const { workers } = await buildFleet(Array.from({ length: n }, () => ready));
          const policy = createPolicy('round_robin');
          const picks = Array.from({ length: n * rounds }, () =>
            workers.indexOf(policy.select(workers)!),
          );
          for (let start = 0; start + n <= picks.length; start++) {
            expect(new Set(picks.slice(start, start + n)).size).toBe(n);
          }
          expect(workers.map((w) => w.processed)).toEqual(workers.map(() => rounds));
        },
      ),
      runs(50, 200),
    );
  });
});

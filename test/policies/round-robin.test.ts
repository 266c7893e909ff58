import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { runs } from '../helpers/fc-settings.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const down = { status: 'not_ready', open: false, removed: false, load: 0 } as const;

describe('round_robin', () => {
  it('visits the workers in list order, one request each, from where it starts', async () => {
    const { workers } = await buildFleet([ready, ready, ready]);
    const policy = createPolicy('round_robin');

    const picks = Array.from({ length: 7 }, () => workers.indexOf(policy.select(workers)!));

    expect(picks).toEqual(picks.map((_, i) => (picks[0]! + i) % 3));
  });

  it('skips an unavailable worker and keeps the rotation for the others', async () => {
    const { workers } = await buildFleet([ready, down, ready, ready]);
    const policy = createPolicy('round_robin');

    const picks = Array.from({ length: 6 }, () => workers.indexOf(policy.select(workers)!));

    const cycle = [0, 2, 3];
    const first = cycle.indexOf(picks[0]!);
    expect(first).toBeGreaterThanOrEqual(0);
    expect(picks).toEqual(picks.map((_, i) => cycle[(first + i) % 3]));
  });

  it('two instances keep separate counters', async () => {
    const { workers } = await buildFleet([ready, ready]);
    const a = createPolicy('round_robin', { seed: 7 });
    const b = createPolicy('round_robin', { seed: 7 });

    const first = a.select(workers);
    expect(a.select(workers)).not.toBe(first);
    expect(b.select(workers)).toBe(first);
  });

  it('instances over one list do not all start at the same worker', async () => {
    const { workers } = await buildFleet(Array.from({ length: 8 }, () => ready));

    const unseeded = Array.from({ length: 16 }, () => createPolicy('round_robin').select(workers));
    const seeded = Array.from({ length: 16 }, (_, k) =>
      createPolicy('round_robin', { seed: 1_000_003 + k }).select(workers),
    );

    expect(new Set(unseeded).size).toBeGreaterThan(1);
    expect(new Set(seeded).size).toBeGreaterThan(1);
  });

  it('a seeded instance is reproducible: the same seed, the same picks', async () => {
    const { workers } = await buildFleet(Array.from({ length: 8 }, () => ready));
    const picks = (seed: number) => {
      const policy = createPolicy('round_robin', { seed });
      return Array.from({ length: 12 }, () => workers.indexOf(policy.select(workers)!));
    };

    for (const seed of [0, 1, 2, 42, 0xffff_ffff]) expect(picks(seed)).toEqual(picks(seed));
  });

  it('draws its start from the given random source', async () => {
    const { workers } = await buildFleet(Array.from({ length: 4 }, () => ready));
    const starts = [0, 0.3, 0.55, 0.8].map((x) =>
      workers.indexOf(createPolicy('round_robin', { random: () => x }).select(workers)!),
    );

    expect(new Set(starts).size).toBeGreaterThan(1);
  });

  it('reset restarts the rotation where the instance started', async () => {
    const { workers } = await buildFleet([ready, ready, ready]);
    const policy = createPolicy('round_robin');
    const first = policy.select(workers);
    policy.select(workers);
    policy.reset();

    expect(policy.select(workers)).toBe(first);
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

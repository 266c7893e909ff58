import { describe, expect, it } from 'vitest';
import { createPolicy } from '../../src/index.js';
import { buildFleet } from '../support/policy-contract.js';

const ready = { status: 'ready', open: false, removed: false, load: 0 } as const;
const down = { status: 'not_ready', open: false, removed: false, load: 0 } as const;

describe('random', () => {
  it('spreads requests uniformly over the available workers (chi-square, seeded)', async () => {
    const { workers } = await buildFleet([ready, down, ready, ready, ready, down, ready, ready]);
    const policy = createPolicy('random', { seed: 42 });
    const counts = new Map<number, number>();
    const requests = 60_000;

    for (let r = 0; r < requests; r++) {
      const index = workers.indexOf(policy.select(workers)!);
      counts.set(index, (counts.get(index) ?? 0) + 1);
    }

    expect([...counts.keys()].sort()).toEqual([0, 2, 3, 4, 6, 7]);
    const expected = requests / 6;
    const chi2 = [...counts.values()].reduce((sum, c) => sum + (c - expected) ** 2 / expected, 0);
    expect(chi2).toBeLessThan(20.5); // 5 degrees of freedom, p ≈ 0.001
  });

  it('the same seed gives the same sequence', async () => {
    const { workers } = await buildFleet([ready, ready, ready, ready, ready]);
    const a = createPolicy('random', { seed: 9 });
    const b = createPolicy('random', { seed: 9 });

    const seqA = Array.from({ length: 50 }, () => workers.indexOf(a.select(workers)!));
    const seqB = Array.from({ length: 50 }, () => workers.indexOf(b.select(workers)!));

    expect(seqA).toEqual(seqB);
    expect(new Set(seqA).size).toBe(5);
  });

  it('finds the only available worker in a large, mostly unavailable fleet', async () => {
    const shapes = Array.from({ length: 64 }, (_, i) => (i === 37 ? ready : down));
    const { workers } = await buildFleet(shapes);
    const policy = createPolicy('random', { seed: 1 });

    for (let r = 0; r < 20; r++) expect(policy.select(workers)).toBe(workers[37]);
  });
});

describe('random sources that misbehave', () => {
  it('a random function returning NaN, negatives or values ≥ 1 still yields an available worker', async () => {
    const { workers } = await buildFleet([ready, ready, ready]);
    for (const value of [Number.NaN, -5, 1, 7, Number.POSITIVE_INFINITY]) {
      const policy = createPolicy('random', { random: () => value });
      expect(workers).toContain(policy.select(workers));
    }
  });
});
